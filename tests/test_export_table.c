/*
 * test_export_table.c - the CSV reader (quotes, embedded commas, quotes and
 * newlines, CRLF, no final newline), its errors on broken input (file, line,
 * never a crash), the JSON form (numbers typed, empty = null) and the tidy
 * form (one line per non-empty numeric result cell, counted independently).
 */
#include "hs_export.h"
#include "hs_json.h"
#include "hs_test.h"

#include <cjson/cJSON.h>

static void test_parse(void)
{
  hs_table_t t;
  hs_error_t err;
  hs_table_init(&t);
  hs_error_init(&err);
  const char *csv = "a,b,c\r\n1,\"x, y\",\"say \"\"hi\"\"\"\r\n2,\"two\nlines\",\n3,z,4.5";
  CHECK_EQ_INT(hs_table_parse(csv, "t.csv", &t, &err), HS_OK);
  CHECK_EQ_INT(t.n_cols, 3);
  CHECK_EQ_INT(t.n_rows, 3);
  CHECK(!strcmp(hs_table_cell(&t, 0, 1), "x, y"));
  CHECK(!strcmp(hs_table_cell(&t, 0, 2), "say \"hi\""));
  CHECK(!strcmp(hs_table_cell(&t, 1, 1), "two\nlines"));
  CHECK(!strcmp(hs_table_cell(&t, 1, 2), ""));
  CHECK(!strcmp(hs_table_cell(&t, 2, 2), "4.5"));
  CHECK_EQ_INT(hs_table_col(&t, "c"), 2);
  CHECK_EQ_INT(hs_table_col(&t, "d"), -1);
  /* writing a field back and reading it gives the same string */
  FILE *f = tmpfile();
  fputs("v\n", f);
  hs_csv_field(f, hs_table_cell(&t, 0, 2));
  fputc('\n', f);
  rewind(f);
  char buf[256] = {0};
  fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  hs_table_t t2;
  hs_table_init(&t2);
  CHECK_EQ_INT(hs_table_parse(buf, "w.csv", &t2, &err), HS_OK);
  CHECK(t2.n_rows == 1 && !strcmp(hs_table_cell(&t2, 0, 0), "say \"hi\""));
  hs_table_destroy(&t2);
  hs_table_destroy(&t);
  hs_table_destroy(NULL);
}

static void bad(const char *csv, const char *needle)
{
  hs_table_t t;
  hs_error_t err;
  hs_table_init(&t);
  hs_error_init(&err);
  CHECK_MSG(hs_table_parse(csv, "bad.csv", &t, &err) != HS_OK, "accepted \"%s\"", csv);
  CHECK_CONTAINS(err.msg, "bad.csv");
  CHECK_CONTAINS(err.msg, needle);
  CHECK(t.n_rows == 0 && t.cells == NULL && t.cols == NULL);
}

static void test_broken(void)
{
  bad("", "empty");
  bad("a,b\n1,2,3\n", "line 2: 3 fields, the header has 2");
  bad("a,b\n1\n", "line 2: 1 fields");
  bad("a,b\n\"open,2\n", "unterminated");
  bad("a,b\n\"x\"y,2\n", "after a quoted field");
  bad("a,b\n1,x\"y\n", "quote inside");
  bad("a,,c\n", "empty name");
  bad("a,a\n", "twice");
}

static void test_json_and_tidy(void)
{
  hs_table_t t;
  hs_error_t err;
  hs_table_init(&t);
  hs_error_init(&err);
  const char *csv = "point,cluster,strategy,n_gpus,tokens_per_s,usd_per_hour,plan,error\n"
                    "0,c1,megatron,8,100.5,20,dp8,\n"
                    "1,c1,whale,8,,20,,failed: x\n"
                    "2,c2,megatron,16,300,40,dp16,\n";
  CHECK_EQ_INT(hs_table_parse(csv, "r.csv", &t, &err), HS_OK);
  cJSON *j = hs_table_to_json(&t);
  CHECK(cJSON_IsArray(j) && cJSON_GetArraySize(j) == 3);
  cJSON *r0 = cJSON_GetArrayItem(j, 0), *r1 = cJSON_GetArrayItem(j, 1);
  CHECK(cJSON_IsNumber(cJSON_GetObjectItem(r0, "tokens_per_s")) &&
        cJSON_GetObjectItem(r0, "tokens_per_s")->valuedouble == 100.5);
  CHECK(cJSON_IsString(cJSON_GetObjectItem(r0, "strategy")));
  CHECK(cJSON_IsNull(cJSON_GetObjectItem(r1, "tokens_per_s")));
  CHECK(cJSON_IsString(cJSON_GetObjectItem(r1, "error")));
  hs_json_free(j);
  /* tidy: id columns = non-numeric + point + n_gpus; metrics = tokens_per_s,
   * usd_per_hour; one line per non-empty metric cell: 2 + 1 + 2 = 5 */
  FILE *f = tmpfile();
  CHECK_EQ_INT(hs_table_write_tidy(&t, f, &err), HS_OK);
  rewind(f);
  char buf[4096] = {0};
  fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  hs_table_t td;
  hs_table_init(&td);
  CHECK_EQ_INT(hs_table_parse(buf, "tidy.csv", &td, &err), HS_OK);
  CHECK_EQ_INT(td.n_rows, 5);
  CHECK(hs_table_col(&td, "metric") >= 0 && hs_table_col(&td, "value") >= 0);
  CHECK(hs_table_col(&td, "point") >= 0 && hs_table_col(&td, "n_gpus") >= 0 && hs_table_col(&td, "plan") >= 0);
  CHECK_EQ_INT(hs_table_col(&td, "tokens_per_s"), -1);
  /* values survive: sum of tokens_per_s lines */
  double sum = 0, v;
  int mc = hs_table_col(&td, "metric"), vc = hs_table_col(&td, "value");
  for (size_t r = 0; r < td.n_rows; r++)
    if (!strcmp(hs_table_cell(&td, r, (size_t)mc), "tokens_per_s") && hs_cell_number(hs_table_cell(&td, r, (size_t)vc), &v))
      sum += v;
  CHECK_REL(sum, 400.5, 1e-12);
  hs_table_destroy(&td);
  hs_table_destroy(&t);
}

static void test_cell_number(void)
{
  double v;
  CHECK(hs_cell_number("1e+11", &v) && v == 1e11);
  CHECK(!hs_cell_number("", &v));
  CHECK(!hs_cell_number("12abc", &v));
  CHECK(!hs_cell_number("nan", &v));
  CHECK(!hs_cell_number("1e999", &v));
}

int main(void)
{
  HS_RUN(test_parse);
  HS_RUN(test_broken);
  HS_RUN(test_json_and_tidy);
  HS_RUN(test_cell_number);
  HS_TEST_END();
}
