/*
 * sweep_output.c - the sweep's output file: scanning an existing one for
 * --resume and sorting a file written in completion order.
 *
 * Records are split on newlines outside double quotes (RFC 4180), so a field
 * holding a newline never splits a row. A record is complete when its
 * newline is present: a run killed in the middle of a write leaves at most
 * one incomplete record, at the end, which is dropped.
 */
#include "hs_export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec {
  const char *p;
  size_t len;      /* including the newline */
  uint64_t point;
  long line;
} rec_t;

/* Splits text into complete records; *tail_incomplete when text ends inside
 * one. Caller frees *out. */
static hs_status_t split(const char *text, rec_t **out, size_t *n, bool *tail_incomplete)
{
  size_t cap = 0;
  bool q = false;
  long line = 1;
  const char *start = text;
  *out = NULL;
  *n = 0;
  for (const char *p = text; *p; p++) {
    if (*p == '"')
      q = !q;
    else if (*p == '\n' && !q) {
      if (hs_reserve((void **)out, &cap, *n + 1, sizeof **out) != HS_OK)
        return HS_ENOMEM;
      (*out)[(*n)++] = (rec_t){start, (size_t)(p + 1 - start), 0, line};
      start = p + 1;
    }
    if (*p == '\n')
      line++;
  }
  *tail_incomplete = *start != '\0';
  return HS_OK;
}

static bool rec_point(const rec_t *r, uint64_t *point)
{
  char *end = NULL;
  errno = 0;
  if (r->p[0] < '0' || r->p[0] > '9')
    return false;
  unsigned long long v = strtoull(r->p, &end, 10);
  if (errno || end == r->p || *end != ',')
    return false;
  *point = v;
  return true;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_rec(const void *a, const void *b)
{
  const rec_t *x = a, *y = b;
  if (x->point != y->point)
    return x->point < y->point ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

static bool has_job(const hs_sweep_spec_t *s, uint64_t job)
{
  return bsearch(&job, s->jobs, s->n_jobs, sizeof *s->jobs, cmp_u64) != NULL;
}

hs_status_t hs_sweep_resume_scan(const hs_sweep_spec_t *s, const char *text, const char *file,
                                 char **kept, uint64_t **done, size_t *n_done, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  rec_t *recs = NULL;
  size_t n = 0;
  bool tail = false;
  uint64_t *pts = NULL;
  size_t n_pts = 0;
  char *buf = NULL;
  *kept = NULL;
  *done = NULL;
  *n_done = 0;
  if (split(text, &recs, &n, &tail) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  const char *hdr = hs_sweep_csv_header();
  if (n == 0 || recs[0].len != strlen(hdr) || memcmp(recs[0].p, hdr, recs[0].len) != 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: line 1: not a hetsim sweep output with this version's columns (header "
                         "differs); write to another file or drop --resume", file));
  pts = hs_calloc(n + 1, sizeof *pts);
  if (!pts)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  char inputs[2048];
  uint64_t n_points = s->n_grid * s->n_prices;
  for (size_t i = 1; i < n; i++) {
    rec_t *r = &recs[i];
    if (!rec_point(r, &r->point) || r->point >= n_points)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: line %ld: the first field is not a point of this sweep "
                                           "(0 to %llu)", file, r->line,
                           (unsigned long long)(n_points ? n_points - 1 : 0)));
    hs_sweep_row_inputs(s, r->point, inputs, sizeof inputs);
    size_t il = strlen(inputs);
    if (!has_job(s, r->point / s->n_prices) || r->len < il || memcmp(r->p, inputs, il) != 0)
      HS_FAIL(hs_error_set(err, HS_EINVAL,
                           "%s: line %ld: row for point %llu does not match this spec (expected it to "
                           "start \"%.200s\"); was it written by another spec?",
                           file, r->line, (unsigned long long)r->point, inputs));
    pts[n_pts++] = r->point;
  }
  qsort(pts, n_pts, sizeof *pts, cmp_u64);
  /* distinct points per job; a job is done when all its rows are present */
  uint64_t *jobs = hs_calloc(n_pts + 1, sizeof *jobs);
  if (!jobs)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  size_t nj = 0;
  for (size_t i = 0; i < n_pts;) {
    uint64_t job = pts[i] / s->n_prices;
    size_t distinct = 0;
    uint64_t last = UINT64_MAX;
    while (i < n_pts && pts[i] / s->n_prices == job) {
      if (pts[i] != last)
        distinct++;
      last = pts[i++];
    }
    if (distinct == s->n_prices)
      jobs[nj++] = job;
  }
  *done = jobs;
  *n_done = nj;
  /* keep the header and the first copy of each row of a done job */
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += recs[i].len;
  buf = malloc(total + 1);
  if (!buf)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  size_t len = 0;
  memcpy(buf, recs[0].p, recs[0].len);
  len = recs[0].len;
  free(pts);
  pts = hs_calloc(n + 1, sizeof *pts); /* points already kept */
  n_pts = 0;
  if (!pts)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  for (size_t i = 1; i < n; i++) {
    const rec_t *r = &recs[i];
    uint64_t job = r->point / s->n_prices;
    if (!bsearch(&job, jobs, nj, sizeof *jobs, cmp_u64))
      continue;
    bool dup = false;
    for (size_t k = 0; k < n_pts && !dup; k++) /* rows of one job are few: linear is fine */
      dup = pts[k] == r->point;
    if (dup)
      continue;
    pts[n_pts++] = r->point;
    memcpy(buf + len, r->p, r->len);
    len += r->len;
  }
  buf[len] = '\0';
  *kept = buf;
  buf = NULL;
cleanup:
  free(buf);
  free(pts);
  free(recs);
  if (st != HS_OK) {
    free(*done);
    *done = NULL;
    *n_done = 0;
  }
  return st;
}

hs_status_t hs_sweep_todo(const hs_sweep_spec_t *s, const uint64_t *done, size_t n_done,
                          uint64_t **todo, size_t *n_todo, hs_error_t *err)
{
  uint64_t *t = hs_calloc(s->n_jobs + 1, sizeof *t);
  size_t n = 0, k = 0;
  if (!t)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (size_t i = 0; i < s->n_jobs; i++) {
    while (k < n_done && done[k] < s->jobs[i])
      k++;
    if (k < n_done && done[k] == s->jobs[i])
      continue;
    t[n++] = s->jobs[i];
  }
  *todo = t;
  *n_todo = n;
  return HS_OK;
}

hs_status_t hs_sweep_sort_output(const char *text, const char *file, char **out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  rec_t *recs = NULL;
  size_t n = 0;
  bool tail = false;
  char *buf = NULL;
  *out = NULL;
  if (split(text, &recs, &n, &tail) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  if (tail)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: the last row has no newline (incomplete write)", file));
  if (n == 0)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: empty output, no header", file));
  for (size_t i = 1; i < n; i++)
    if (!rec_point(&recs[i], &recs[i].point))
      HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: line %ld: no point number in the first field", file,
                           recs[i].line));
  qsort(recs + 1, n - 1, sizeof *recs, cmp_rec);
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += recs[i].len;
  buf = malloc(total + 1);
  if (!buf)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    memcpy(buf + len, recs[i].p, recs[i].len);
    len += recs[i].len;
  }
  buf[len] = '\0';
  *out = buf;
  buf = NULL;
cleanup:
  free(buf);
  free(recs);
  return st;
}
