/*
 * table.c - result tables: an RFC 4180 CSV reader (the sweep's output and any
 * CSV with a header line) and the tidy (long) CSV writer.
 *
 * Representation: header names and cells as separately malloc'd strings in
 * row-major order. The reader is one pass over the text with a field buffer;
 * it accepts \n and \r\n line ends, a missing final newline, and quoted
 * fields holding commas, quotes ("") and newlines. Every row must have as many
 * fields as the header.
 */
#include "hs_export.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_MAX_COLS 4096
#define TABLE_MAX_CELLS (64u * 1024u * 1024u)

void hs_table_init(hs_table_t *t) { memset(t, 0, sizeof *t); }

void hs_table_destroy(hs_table_t *t)
{
  if (!t)
    return;
  for (size_t i = 0; i < t->n_cols; i++)
    free(t->cols[i]);
  for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
    free(t->cells[i]);
  free(t->cols);
  free(t->cells);
  memset(t, 0, sizeof *t);
}

int hs_table_col(const hs_table_t *t, const char *name)
{
  for (size_t i = 0; i < t->n_cols; i++)
    if (strcmp(t->cols[i], name) == 0)
      return (int)i;
  return -1;
}

bool hs_cell_number(const char *s, double *out)
{
  if (!s || !*s)
    return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !isfinite(v))
    return false;
  *out = v;
  return true;
}

void hs_csv_field(FILE *f, const char *s)
{
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

hs_status_t hs_table_parse(const char *text, const char *file, hs_table_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  char *fld = NULL;
  size_t flen = 0, fcap = 0;
  char **row = NULL;   /* fields of the current record */
  size_t nrow = 0, rowcap = 0, cellcap = 0;
  long line = 1, rec_line = 1;
  if (!file)
    file = "table";
  hs_table_destroy(out);
  const char *p = text;
  if (!*p)
    return hs_error_set(err, HS_EPARSE, "%s: empty file (a CSV needs a header line)", file);
  for (;;) {
    /* read one field */
    bool quoted = false;
    flen = 0;
    if (*p == '"') {
      quoted = true;
      p++;
      for (;;) {
        if (!*p)
          HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line %ld: unterminated quoted field", file, rec_line));
        if (*p == '"') {
          if (p[1] == '"') {
            p += 2;
            if (hs_reserve((void **)&fld, &fcap, flen + 2, 1) != HS_OK)
              HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
            fld[flen++] = '"';
            continue;
          }
          p++;
          break;
        }
        if (*p == '\n')
          line++;
        if (hs_reserve((void **)&fld, &fcap, flen + 2, 1) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
        fld[flen++] = *p++;
      }
      if (*p && *p != ',' && *p != '\n' && !(*p == '\r' && p[1] == '\n'))
        HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line %ld: unexpected '%c' after a quoted field",
                             file, line, *p));
    } else {
      while (*p && *p != ',' && *p != '\n' && !(*p == '\r' && p[1] == '\n')) {
        if (*p == '"')
          HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line %ld: quote inside an unquoted field", file, line));
        if (hs_reserve((void **)&fld, &fcap, flen + 2, 1) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
        fld[flen++] = *p++;
      }
    }
    (void)quoted;
    if (hs_reserve((void **)&fld, &fcap, flen + 1, 1) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
    fld[flen] = '\0';
    if (nrow >= TABLE_MAX_COLS)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: line %ld: more than %d fields", file, rec_line, TABLE_MAX_COLS));
    if (hs_reserve((void **)&row, &rowcap, nrow + 1, sizeof *row) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
    row[nrow] = strdup(fld);
    if (!row[nrow])
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
    nrow++;
    if (*p == ',') {
      p++;
      continue;
    }
    /* end of record */
    bool at_end = !*p;
    if (*p == '\r')
      p++;
    if (*p == '\n')
      p++;
    if (!out->cols) {
      for (size_t i = 0; i < nrow; i++) {
        if (!row[i][0])
          HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line 1: column %zu has an empty name", file, i + 1));
        for (size_t j = 0; j < i; j++)
          if (strcmp(row[i], row[j]) == 0)
            HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line 1: column \"%.60s\" appears twice", file, row[i]));
      }
      out->cols = row;
      out->n_cols = nrow;
      row = NULL;
      rowcap = 0;
    } else if (!(nrow == 1 && !row[0][0] && at_end)) { /* not the empty tail */
      if (nrow != out->n_cols)
        HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line %ld: %zu fields, the header has %zu", file,
                             rec_line, nrow, out->n_cols));
      if ((out->n_rows + 1) * out->n_cols > TABLE_MAX_CELLS)
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: more than %u cells", file, TABLE_MAX_CELLS));
      if (hs_reserve((void **)&out->cells, &cellcap, (out->n_rows + 1) * out->n_cols,
                     sizeof *out->cells) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
      memcpy(out->cells + out->n_rows * out->n_cols, row, nrow * sizeof *row);
      out->n_rows++;
    } else {
      free(row[0]);
    }
    nrow = 0;
    line++;
    rec_line = line;
    if (!*p)
      break;
  }
cleanup:
  for (size_t i = 0; i < nrow; i++)
    free(row[i]);
  free(row);
  free(fld);
  if (st != HS_OK)
    hs_table_destroy(out);
  return st;
}

hs_status_t hs_table_load(const char *path, hs_table_t *out, hs_error_t *err)
{
  char *text = NULL;
  size_t len = 0;
  hs_status_t st = hs_file_read(path, 1024u * 1024u * 1024u, &text, &len, err);
  if (st == HS_OK && strlen(text) != len)
    st = hs_error_set(err, HS_EPARSE, "%s: contains a NUL byte: not a CSV file", hs_basename(path));
  if (st == HS_OK)
    st = hs_table_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

/* Numeric input columns that identify a row in the tidy form (docs/export.md). */
static const char *const id_numeric[] = {"point", "nic_GBps", "intersite_GBps",
                                         "intersite_latency_us", "global_batch_spec", "n_gpus", NULL};

static bool is_id_numeric(const char *c)
{
  for (int i = 0; id_numeric[i]; i++)
    if (strcmp(id_numeric[i], c) == 0)
      return true;
  return false;
}

hs_status_t hs_table_write_tidy(const hs_table_t *t, FILE *f, hs_error_t *err)
{
  /* a column is numeric when every non-empty cell parses and one exists */
  bool *num = hs_calloc(t->n_cols + 1, sizeof *num);
  if (!num)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (size_t c = 0; c < t->n_cols; c++) {
    bool any = false, all = true;
    for (size_t r = 0; r < t->n_rows && all; r++) {
      double v;
      const char *s = hs_table_cell(t, r, c);
      if (!*s)
        continue;
      if (hs_cell_number(s, &v))
        any = true;
      else
        all = false;
    }
    num[c] = any && all;
  }
  bool first = true;
  for (size_t c = 0; c < t->n_cols; c++)
    if (!num[c] || is_id_numeric(t->cols[c])) {
      fputs(first ? "" : ",", f);
      hs_csv_field(f, t->cols[c]);
      first = false;
    }
  fputs(first ? "metric,value\n" : ",metric,value\n", f);
  for (size_t r = 0; r < t->n_rows; r++)
    for (size_t m = 0; m < t->n_cols; m++) {
      if (!num[m] || is_id_numeric(t->cols[m]) || !*hs_table_cell(t, r, m))
        continue;
      first = true;
      for (size_t c = 0; c < t->n_cols; c++)
        if (!num[c] || is_id_numeric(t->cols[c])) {
          fputs(first ? "" : ",", f);
          hs_csv_field(f, hs_table_cell(t, r, c));
          first = false;
        }
      fputs(first ? "" : ",", f);
      hs_csv_field(f, t->cols[m]);
      fputc(',', f);
      fputs(hs_table_cell(t, r, m), f);
      fputc('\n', f);
    }
  free(num);
  if (ferror(f))
    return hs_error_set(err, HS_EIO, "write error");
  return HS_OK;
}
