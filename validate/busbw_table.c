/*
 * busbw_table.c - published collective bus-bandwidth tables (a size and a
 * busbw per row, no times: what benchmark reports print instead of whole
 * nccl-tests output) and the fit of NCCL's NVLS all-reduce on them
 * (docs/network.md "NVLS inside a node"). Format, one item per line:
 *
 *   # comment (source, date, what the page says)
 *   collective all_reduce      nccl-tests' name (hs_nt_coll_parse)
 *   algorithm nvls             what NCCL ran: nvls, ring, tree or default
 *   ranks 8                    GPUs of the run
 *   gpu H100-SXM5-80GB         GPU catalog name
 *   1024 0.07 1K               size_bytes busbw_GBps [label as published]
 *
 * Invariants after a successful parse: the four keys given once each, before
 * the rows; at least two rows; sizes positive, integral and strictly
 * increasing; busbw positive and finite. Errors name the file, the line and
 * the value (HS_EINVAL). The NVLS fit: rows of at least min_bytes, times
 * t = S f / busbw (f = nccl-tests' busbw factor), GSL weighted least squares
 * t = a + S b (hs__fit_line, as every calibration fit), then the model of
 * sim/coll_nvls.c, T = L + (n + 1) S / (n B), gives L = a, B = (n + 1) / (n b).
 * O(file size).
 */
#include "validate_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 4096

void hs_busbw_table_init(hs_busbw_table_t *t) { memset(t, 0, sizeof *t); }

void hs_busbw_table_destroy(hs_busbw_table_t *t)
{
  if (!t)
    return;
  free(t->size_bytes);
  free(t->busbw_GBps);
  memset(t, 0, sizeof *t);
}

static bool parse_double(const char *s, double *out)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v))
    return false;
  *out = v;
  return true;
}

/* Splits line into up to 3 whitespace-separated words; returns the count
 * (4 = more than 3). */
static int words(char *line, char *w[3])
{
  int n = 0;
  for (char *p = strtok(line, " \t\r"); p; p = strtok(NULL, " \t\r")) {
    if (n == 3)
      return 4;
    w[n++] = p;
  }
  return n;
}

static hs_status_t parse_key(hs_busbw_table_t *t, char *w[3], int nw, const char *file, int line,
                             unsigned *seen, hs_error_t *err)
{
  static const char *const keys[] = {"collective", "algorithm", "ranks", "gpu"};
  int k = 0;
  while (k < 4 && strcmp(w[0], keys[k]) != 0)
    k++;
  if (k == 4)
    return hs_error_set(err, HS_EINVAL, "%s:%d: \"%s\": expected collective, algorithm, ranks, gpu "
                        "or a row \"size_bytes busbw_GBps [label]\"", file, line, w[0]);
  if (nw != 2)
    return hs_error_set(err, HS_EINVAL, "%s:%d: %s: needs exactly one value", file, line, keys[k]);
  if (*seen & (1u << k))
    return hs_error_set(err, HS_EINVAL, "%s:%d: %s given twice", file, line, keys[k]);
  if (t->n > 0)
    return hs_error_set(err, HS_EINVAL, "%s:%d: %s after the rows: the keys come first", file, line,
                        keys[k]);
  *seen |= 1u << k;
  switch (k) {
  case 0:
    if (hs_nt_coll_parse(w[1], &t->coll) != HS_OK)
      return hs_error_set(err, HS_EINVAL, "%s:%d: collective \"%s\": not one of all_reduce, "
                          "all_gather, reduce_scatter, alltoall, sendrecv", file, line, w[1]);
    return HS_OK;
  case 1:
    if (strcmp(w[1], "nvls") && strcmp(w[1], "ring") && strcmp(w[1], "tree") && strcmp(w[1], "default"))
      return hs_error_set(err, HS_EINVAL, "%s:%d: algorithm \"%s\": not one of nvls, ring, tree, "
                          "default", file, line, w[1]);
    hs_strlcpy(t->algorithm, w[1], sizeof t->algorithm);
    return HS_OK;
  case 2: {
    double v = 0;
    if (!parse_double(w[1], &v) || v != floor(v) || v < 2 || v > 1e6)
      return hs_error_set(err, HS_EINVAL, "%s:%d: ranks \"%s\": need an integer in [2, 1000000]", file,
                          line, w[1]);
    t->nranks = (int32_t)v;
    return HS_OK;
  }
  default:
    if (!hs_strlcpy(t->gpu, w[1], sizeof t->gpu))
      return hs_error_set(err, HS_EINVAL, "%s:%d: gpu \"%s\": longer than %zu bytes", file, line, w[1],
                          sizeof t->gpu - 1);
    return HS_OK;
  }
}

static hs_status_t parse_row(hs_busbw_table_t *t, char *w[3], const char *file, int line, size_t *cap,
                             hs_error_t *err)
{
  double s = 0, bw = 0;
  if (!parse_double(w[0], &s) || !(s > 0) || s != floor(s) || s > 1e15)
    return hs_error_set(err, HS_EINVAL, "%s:%d: size_bytes \"%s\": need a positive integer", file, line,
                        w[0]);
  if (!parse_double(w[1], &bw) || !(bw > 0) || bw > 1e6)
    return hs_error_set(err, HS_EINVAL, "%s:%d: busbw_GBps \"%s\": need a positive number (GB/s)", file,
                        line, w[1]);
  if (t->n > 0 && !(s > t->size_bytes[t->n - 1]))
    return hs_error_set(err, HS_EINVAL, "%s:%d: size_bytes %s: sizes must increase (previous row %.17g)",
                        file, line, w[0], t->size_bytes[t->n - 1]);
  if (t->n == MAX_ROWS)
    return hs_error_set(err, HS_ELIMIT, "%s:%d: more than %d rows", file, line, MAX_ROWS);
  if (hs_reserve((void **)&t->size_bytes, &cap[0], (size_t)t->n + 1, sizeof *t->size_bytes) != HS_OK ||
      hs_reserve((void **)&t->busbw_GBps, &cap[1], (size_t)t->n + 1, sizeof *t->busbw_GBps) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "%s: out of memory", file);
  t->size_bytes[t->n] = s;
  t->busbw_GBps[t->n] = bw;
  t->n++;
  return HS_OK;
}

hs_status_t hs_busbw_table_parse(const char *text, const char *file, hs_busbw_table_t *t,
                                 hs_error_t *err)
{
  hs_status_t st = HS_OK;
  char buf[1024];
  size_t cap[2] = {0, 0};
  unsigned seen = 0;
  int line = 0;
  hs_busbw_table_init(t);
  hs_strlcpy(t->file, file ? file : "?", sizeof t->file);
  file = t->file;
  for (const char *p = text; p && *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    line++;
    if (len >= sizeof buf)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: line longer than %zu bytes", file, line,
                           sizeof buf - 1));
    memcpy(buf, p, len);
    buf[len] = '\0';
    p = e ? e + 1 : p + len;
    char *s = buf;
    while (*s == ' ' || *s == '\t')
      s++;
    if (!*s || *s == '#' || *s == '\r')
      continue;
    char *w[3] = {NULL, NULL, NULL};
    int nw = words(s, w);
    if (nw < 1)
      continue;
    if (isdigit((unsigned char)w[0][0])) {
      if (nw < 2 || nw > 3)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: a row is \"size_bytes busbw_GBps [label]\", got "
                             "%d words", file, line, nw));
      HS_CHECK(parse_row(t, w, file, line, cap, err));
    } else {
      HS_CHECK(parse_key(t, w, nw > 3 ? 3 : nw, file, line, &seen, err));
    }
  }
  if (seen != 15u)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: missing %s (every table states collective, algorithm, "
                         "ranks and gpu)", file,
                         !(seen & 1u) ? "collective" : !(seen & 2u) ? "algorithm"
                                                     : !(seen & 4u) ? "ranks" : "gpu"));
  if (t->n < 2)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %d rows, need at least 2", file, t->n));
cleanup:
  if (st != HS_OK)
    hs_busbw_table_destroy(t);
  return st;
}

hs_status_t hs_busbw_table_load(const char *path, hs_busbw_table_t *t, hs_error_t *err)
{
  char *text = NULL;
  hs_busbw_table_init(t);
  hs_status_t st = hs_file_read(path, (size_t)1 << 20, &text, NULL, err);
  if (st == HS_OK)
    st = hs_busbw_table_parse(text, hs_basename(path), t, err);
  free(text);
  return st;
}

double hs_busbw_table_time_s(const hs_busbw_table_t *t, int32_t i)
{
  return t->size_bytes[i] * hs_nt_busbw_factor(t->coll, t->nranks) / (t->busbw_GBps[i] * HS_GB);
}

hs_status_t hs_nvls_fit(const hs_busbw_table_t *t, double min_bytes, hs_nvls_fit_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(out, 0, sizeof *out);
  if (t->coll != HS_NT_ALL_REDUCE || strcmp(t->algorithm, "nvls") != 0)
    return hs_error_set(err, HS_EINVAL, "%s: an NVLS fit needs an all_reduce table of algorithm nvls, "
                        "got %s / %s", t->file, hs_nt_coll_name(t->coll), t->algorithm);
  double *x = hs_calloc((size_t)t->n, sizeof *x), *y = hs_calloc((size_t)t->n, sizeof *y);
  if (!x || !y)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", t->file));
  int32_t m = 0;
  for (int32_t i = 0; i < t->n; i++)
    if (t->size_bytes[i] >= min_bytes) {
      x[m] = t->size_bytes[i];
      y[m++] = hs_busbw_table_time_s(t, i);
    }
  hs_line_fit_t f;
  HS_CHECK(hs__fit_line(x, y, m, t->file, &f, err));
  double n = t->nranks;
  if (!(f.b > 0) || !(f.a > 0))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: the fitted line t = %.4g s + S x %.4g s/B (rows of at least "
                         "%.17g B) has no positive latency and bandwidth", t->file, f.a, f.b, min_bytes));
  out->GBps = (n + 1) / (n * f.b) / HS_GB;
  out->latency_us = f.a * 1e6;
  out->n_rows = m;
  out->med_rel = f.med_rel;
  out->max_rel = f.max_rel;
cleanup:
  free(x);
  free(y);
  return st;
}

hs_status_t hs_link_refit_nvls(const hs_interconnect_t *l, const char *calib_dir, hs_busbw_table_t *t,
                               hs_nvls_fit_t *out, hs_error_t *err)
{
  char path[2048 + 132];
  hs_busbw_table_init(t);
  memset(out, 0, sizeof *out);
  if (!l->nvls_fit_file[0])
    return hs_error_set(err, HS_EINVAL, "links.json: interconnect \"%s\" has no nvls_fit", l->name);
  if (calib_dir)
    snprintf(path, sizeof path, "%s/%s", calib_dir, l->nvls_fit_file);
  else
    snprintf(path, sizeof path, "%s/clusters/calibration/%s", hs_data_dir(), l->nvls_fit_file);
  hs_status_t st = hs_busbw_table_load(path, t, err);
  if (st == HS_OK)
    st = hs_nvls_fit(t, l->nvls_fit_min_bytes, out, err);
  return st;
}
