/*
 * test_sweep_run.c - running a sweep: rows equal across worker counts, row
 * values against a direct planner run and closed-form cost arithmetic,
 * failing inputs become error rows, and the output file logic (--resume scan
 * of a truncated file, sorting a file written in completion order).
 */
#include "hs_export.h"
#include "hs_test.h"

#include <signal.h>

static const char *spec_text =
    "{\"name\": \"run\",\n"
    " \"clusters\": [\"dgx-a100-1node\", {\"A100-SXM4-40GB\": 8, \"V100-SXM2-16GB\": 8}],\n"
    " \"models\": [\"gpt3-1.3b\", \"no-such-model\"],\n"
    " \"global_batch\": 64,\n"
    " \"strategies\": [\"megatron\", \"whale\", \"data-parallel\"],\n"
    " \"price_models\": [\"on-demand\", \"spot\"],\n"
    " \"train_tokens\": 1e9}\n";

typedef struct collect {
  const hs_sweep_spec_t *s;
  char **rows; /* by job */
  int calls;
} collect_t;

static int on_rows(void *ctx, uint64_t job, const char *rows)
{
  collect_t *c = ctx;
  c->calls++;
  if (job < c->s->n_grid && !c->rows[job])
    c->rows[job] = strdup(rows);
  return 0;
}

static char *run(const hs_sweep_spec_t *s, int threads)
{
  collect_t c = {s, calloc(s->n_grid, sizeof(char *)), 0};
  hs_error_t err;
  hs_error_init(&err);
  CHECK_EQ_INT(hs_sweep_run(s, s->jobs, s->n_jobs, threads, HS_SWEEP_NO_TIMINGS, on_rows, &c, &err), HS_OK);
  CHECK_EQ_INT(c.calls, s->n_jobs);
  size_t len = strlen(hs_sweep_csv_header()) + 1;
  for (size_t j = 0; j < s->n_grid; j++)
    len += c.rows[j] ? strlen(c.rows[j]) : 0;
  char *all = malloc(len);
  strcpy(all, hs_sweep_csv_header());
  for (size_t j = 0; j < s->n_grid; j++) {
    CHECK(c.rows[j] != NULL);
    if (c.rows[j])
      strcat(all, c.rows[j]);
    free(c.rows[j]);
  }
  free(c.rows);
  return all;
}

static double num(const hs_table_t *t, size_t r, const char *col)
{
  int c = hs_table_col(t, col);
  double v = NAN;
  if (c < 0 || !hs_cell_number(hs_table_cell(t, r, (size_t)c), &v))
    return NAN;
  return v;
}

static const char *str(const hs_table_t *t, size_t r, const char *col)
{
  int c = hs_table_col(t, col);
  return c < 0 ? "" : hs_table_cell(t, r, (size_t)c);
}

static char *out_serial, *out_threads;

static void test_workers_same_rows(void)
{
  hs_sweep_spec_t s;
  hs_error_t err;
  hs_sweep_spec_init(&s);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_sweep_spec_parse(spec_text, "run.json", &s, &err), HS_OK);
  CHECK_EQ_INT(s.n_jobs, 2 * 2 * 3);
  out_serial = run(&s, 1);
  out_threads = run(&s, 3);
  CHECK(strcmp(out_serial, out_threads) == 0);
  hs_sweep_spec_destroy(&s);
}

/* Row values: the planner's own numbers, and the cost columns from the
 * closed forms usd/iter = usd/h * iter_s / 3600, $/Mtok = usd/iter / tokens
 * * 1e6, time = N / (tokens/s) / 3600, cost = time * usd/h. */
static void test_row_values(void)
{
  hs_table_t t;
  hs_error_t err;
  hs_table_init(&t);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_table_parse(out_serial, "out.csv", &t, &err), HS_OK);
  CHECK_EQ_INT(t.n_rows, 2 * 2 * 3 * 2);
  /* direct run of row 0's point: dgx-a100-1node, gpt3-1.3b, 64, megatron */
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t plan;
  hs_report_t rep;
  hs_search_stats_t stats;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&plan);
  hs_report_init(&rep);
  CHECK_EQ_INT(hs_model_load("gpt3-1.3b", 0, &m, &err), HS_OK);
  CHECK_EQ_INT(hs_cluster_load("dgx-a100-1node", &c, &err), HS_OK);
  hs_plan_opts_t po;
  hs_plan_opts_init(&po);
  po.global_batch = 64;
  po.time_limit_s = 60;
  CHECK_EQ_INT(hs_planner_run(hs_planner_find("megatron"), &m, &c, &po, NULL, &plan, &stats, &rep, &err), HS_OK);
  CHECK_REL(num(&t, 0, "iteration_s"), rep.iteration_time_s, 1e-5);
  CHECK_REL(num(&t, 0, "tokens_per_s"), rep.tokens_per_s, 1e-5);
  CHECK_REL(num(&t, 0, "global_batch"), 64, 0);
  char summary[256];
  hs_plan_describe(&plan, &m, summary, sizeof summary);
  CHECK(strcmp(str(&t, 0, "plan"), summary) == 0);
  /* the cluster's rent from the catalog: 8 GPUs of one type */
  const hs_gpu_t *g = hs_cluster_gpu(&c, 0);
  CHECK_REL(num(&t, 0, "usd_per_hour"), 8 * g->price_ondemand_usd_h, 1e-5);
  double spot = g->price_spot_usd_h > 0 ? g->price_spot_usd_h : g->price_ondemand_usd_h;
  CHECK_REL(num(&t, 1, "usd_per_hour"), 8 * spot, 1e-5);
  CHECK(strcmp(str(&t, 1, "price_model"), "spot") == 0);
  for (size_t r = 0; r < t.n_rows; r++) {
    if (strcmp(str(&t, r, "status"), "ok") != 0)
      continue;
    double it = num(&t, r, "iteration_s"), tps = num(&t, r, "tokens_per_s"), uh = num(&t, r, "usd_per_hour");
    double tokens = num(&t, r, "global_batch") * (double)m.seq_len;
    CHECK_REL(tps, tokens / it, 2e-5);
    CHECK_REL(num(&t, r, "usd_per_iteration"), uh * it / 3600.0, 2e-5);
    CHECK_REL(num(&t, r, "usd_per_million_tokens"), uh * it / 3600.0 / tokens * 1e6, 2e-5);
    CHECK_REL(num(&t, r, "time_to_train_h"), 1e9 / tps / 3600.0, 2e-5);
    CHECK_REL(num(&t, r, "cost_to_train_usd"), 1e9 / tps / 3600.0 * uh, 2e-5);
    CHECK(num(&t, r, "mfu") > 0 && num(&t, r, "mfu") < 1);
    CHECK(num(&t, r, "peak_memory_fraction") > 0 && num(&t, r, "peak_memory_fraction") <= 1);
  }
  /* a model that does not exist: error rows naming it, on every strategy */
  int errors = 0;
  for (size_t r = 0; r < t.n_rows; r++)
    if (!strcmp(str(&t, r, "model"), "no-such-model")) {
      errors++;
      CHECK(!strcmp(str(&t, r, "status"), "error"));
      CHECK_CONTAINS(str(&t, r, "error"), "no-such-model");
    }
  CHECK_EQ_INT(errors, 2 * 3 * 2);
  /* the composition row: 16 GPUs of two types */
  CHECK_EQ_INT((int)num(&t, 12, "n_gpus"), 16);
  CHECK(strcmp(str(&t, 12, "gpu_types"), "A100-SXM4-40GB:8 V100-SXM2-16GB:8") == 0);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  hs_table_destroy(&t);
}

static void test_resume_and_sort(void)
{
  hs_sweep_spec_t s;
  hs_error_t err;
  hs_sweep_spec_init(&s);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_sweep_spec_parse(spec_text, "run.json", &s, &err), HS_OK);
  /* cut in the middle of the 8th row: jobs 0..2 complete (rows 0-5), job 3
   * has one complete row of two, so 3 jobs are done */
  const char *p = out_serial;
  for (int nl = 0; nl < 1 + 7; p++)
    nl += *p == '\n';
  size_t cut = (size_t)(p - out_serial) + 10;
  char *trunc = strndup(out_serial, cut);
  char *kept = NULL;
  uint64_t *done = NULL, *todo = NULL;
  size_t n_done = 0, n_todo = 0;
  CHECK_EQ_INT(hs_sweep_resume_scan(&s, trunc, "out.csv", &kept, &done, &n_done, &err), HS_OK);
  CHECK_EQ_INT(n_done, 3);
  const char *q = out_serial;
  for (int nl = 0; nl < 1 + 6; q++)
    nl += *q == '\n';
  CHECK(kept && strlen(kept) == (size_t)(q - out_serial) && strncmp(kept, out_serial, strlen(kept)) == 0);
  CHECK_EQ_INT(hs_sweep_todo(&s, done, n_done, &todo, &n_todo, &err), HS_OK);
  CHECK_EQ_INT(n_todo, s.n_jobs - 3);
  CHECK_EQ_INT(todo[0], 3);
  free(kept);
  free(done);
  free(todo);
  free(trunc);
  /* a row from another spec is refused, naming the line */
  char *other = strdup(out_serial);
  char *at = strstr(other, "gpt3-1.3b");
  memcpy(at, "gpt3-2.7b", 9);
  hs_error_init(&err);
  CHECK(hs_sweep_resume_scan(&s, other, "out.csv", &kept, &done, &n_done, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "out.csv: line 2");
  free(other);
  /* a header from something else */
  hs_error_init(&err);
  CHECK(hs_sweep_resume_scan(&s, "a,b\n1,2\n", "x.csv", &kept, &done, &n_done, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "x.csv: line 1");
  /* sorting reverses a reversed file */
  size_t n = 0;
  const char *lines[128];
  size_t lens[128];
  for (const char *r = out_serial; *r && n < 128;) {
    const char *e = strchr(r, '\n');
    lines[n] = r;
    lens[n++] = (size_t)(e - r + 1);
    r = e + 1;
  }
  char *rev = calloc(strlen(out_serial) + 1, 1);
  strncat(rev, lines[0], lens[0]);
  for (size_t i = n - 1; i >= 1; i--)
    strncat(rev, lines[i], lens[i]);
  char *sorted = NULL;
  CHECK_EQ_INT(hs_sweep_sort_output(rev, "rev.csv", &sorted, &err), HS_OK);
  CHECK(sorted && strcmp(sorted, out_serial) == 0);
  free(sorted);
  free(rev);
  hs_sweep_spec_destroy(&s);
}

/* Worker processes: every item once, results in the parent; a worker that
 * dies costs its item only (reported through `lost`), or stops the run when
 * no `lost` is given. */
typedef struct mapctx {
  int seen[64];
  int lost[64];
  char why[128];
} mapctx_t;

static hs_status_t square(void *ctx, size_t i, void **out, size_t *len, hs_error_t *err)
{
  (void)ctx;
  (void)err;
  if (i == 5)
    raise(SIGKILL); /* a crash in the middle of a job */
  long *v = malloc(sizeof *v);
  *v = (long)(i * i);
  *out = v;
  *len = sizeof *v;
  return HS_OK;
}

static int sink_sq(void *ctx, size_t i, const void *data, size_t len)
{
  mapctx_t *m = ctx;
  if (len == sizeof(long) && *(const long *)data == (long)(i * i))
    m->seen[i]++;
  return 0;
}

static int lost_sq(void *ctx, size_t i, const char *why)
{
  mapctx_t *m = ctx;
  m->lost[i]++;
  snprintf(m->why, sizeof m->why, "%s", why);
  return 0;
}

static void test_worker_crash(void)
{
  mapctx_t m;
  memset(&m, 0, sizeof m);
  hs_error_t err;
  hs_error_init(&err);
  CHECK_EQ_INT(hs_map_processes(40, 3, square, sink_sq, lost_sq, &m, &err), HS_OK);
  for (int i = 0; i < 40; i++) {
    CHECK_EQ_INT(m.seen[i], i == 5 ? 0 : 1);
    CHECK_EQ_INT(m.lost[i], i == 5 ? 1 : 0);
  }
  CHECK_CONTAINS(m.why, "signal 9");
  memset(&m, 0, sizeof m);
  hs_error_init(&err);
  CHECK(hs_map_processes(40, 2, square, sink_sq, NULL, &m, &err) == HS_EINTERNAL);
  CHECK_CONTAINS(err.msg, "item 5");
}

int main(void)
{
  HS_RUN(test_workers_same_rows);
  HS_RUN(test_row_values);
  HS_RUN(test_resume_and_sort);
  HS_RUN(test_worker_crash);
  free(out_serial);
  free(out_threads);
  HS_TEST_END();
}
