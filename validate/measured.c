/*
 * measured.c - the measured-run record shared by both replay backends:
 * lifetime, medians, and the aggregation of raw per-occurrence samples into
 * per-kernel and per-stage medians.
 *
 * Backends record one sample per kernel occurrence and per compute item; the
 * aggregation sorts them by key (exec, chunk, phase, entry) and takes the
 * median of each run, so noisy machines report typical, not mean, times.
 * O(samples log samples).
 */
#include "hs_validate.h"

#include <stdlib.h>
#include <string.h>

void hs_measured_init(hs_measured_t *m) { memset(m, 0, sizeof *m); }

void hs_measured_destroy(hs_measured_t *m)
{
  if (!m)
    return;
  free(m->iteration_s);
  free(m->speed_probe_iter_s);
  free(m->stages);
  free(m->kernels);
  free(m->tasks);
  memset(m, 0, sizeof *m);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double hs_median(const double *v, size_t n)
{
  if (n == 0)
    return 0.0;
  double *c = hs_calloc(n, sizeof *c);
  if (!c)
    return v[n / 2];
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, cmp_double);
  double r = (n % 2) ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
  free(c);
  return r;
}

static int cmp_ks(const void *a, const void *b)
{
  const hs_kernel_sample_t *x = a, *y = b;
  if (x->exec != y->exec)
    return x->exec < y->exec ? -1 : 1;
  if (x->chunk != y->chunk)
    return x->chunk < y->chunk ? -1 : 1;
  if (x->phase != y->phase)
    return x->phase < y->phase ? -1 : 1;
  if (x->entry != y->entry)
    return x->entry < y->entry ? -1 : 1;
  return cmp_double(&x->s, &y->s);
}

hs_status_t hs__measured_aggregate(const hs_taskgraph_t *tg, const hs_kernel_sample_t *ks,
                                   size_t n_ks, const hs_item_sample_t *is, size_t n_is,
                                   hs_measured_t *out)
{
  hs_status_t st = HS_OK;
  hs_kernel_sample_t *sorted = NULL;
  double *buf = NULL;
  if (n_ks) {
    sorted = hs_calloc(n_ks, sizeof *sorted);
    if (!sorted)
      HS_FAIL(HS_ENOMEM);
    memcpy(sorted, ks, n_ks * sizeof *sorted);
    qsort(sorted, n_ks, sizeof *sorted, cmp_ks);
  }
  free(out->kernels);
  out->kernels = hs_calloc(n_ks + 1, sizeof *out->kernels);
  buf = hs_calloc(n_ks + n_is + 1, sizeof *buf);
  if (!out->kernels || !buf)
    HS_FAIL(HS_ENOMEM);
  out->n_kernels = 0;
  for (size_t i = 0; i < n_ks;) {
    size_t j = i;
    while (j < n_ks && sorted[j].exec == sorted[i].exec && sorted[j].chunk == sorted[i].chunk &&
           sorted[j].phase == sorted[i].phase && sorted[j].entry == sorted[i].entry)
      j++;
    const hs_tg_exec_t *x = &tg->execs[sorted[i].exec];
    const hs_tg_entry_t *e = &x->work[sorted[i].chunk * 2 + sorted[i].phase].e[sorted[i].entry];
    hs_meas_kernel_t *k = &out->kernels[out->n_kernels++];
    k->exec = sorted[i].exec;
    k->stage = hs_tg_stage(x, sorted[i].chunk);
    k->op = e->op;
    k->phase = e->phase;
    k->recompute = e->recompute;
    k->op_kind = e->op_kind;
    k->flops = e->flops;
    k->bytes = e->bytes;
    k->predicted_s = e->predicted_s;
    /* sorted by s inside the run: the median is the middle */
    k->measured_s = ((j - i) % 2) ? sorted[i + (j - i) / 2].s
                                  : 0.5 * (sorted[i + (j - i) / 2 - 1].s + sorted[i + (j - i) / 2].s);
    i = j;
  }
  /* stages: replica 0 of each (pipeline, stage) */
  free(out->stages);
  out->stages = hs_calloc((size_t)tg->n_stages_total + 1, sizeof *out->stages);
  if (!out->stages)
    HS_FAIL(HS_ENOMEM);
  out->n_stages = 0;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    if (x->replica != 0)
      continue;
    bool ran = false; /* executors left out (one stage in isolation) have no samples */
    for (size_t i = 0; i < n_is && !ran; i++)
      ran = is[i].exec == e;
    if (!ran)
      continue;
    for (int32_t ch = 0; ch < x->v; ch++) {
      hs_meas_stage_t *sr = &out->stages[out->n_stages++];
      sr->pipeline = x->pipeline;
      sr->stage = hs_tg_stage(x, ch);
      sr->predicted_fwd_s = x->work[ch * 2].predicted_compute_s;
      sr->predicted_bwd_s = x->work[ch * 2 + 1].predicted_compute_s;
      for (int32_t ph = 0; ph < 2; ph++) {
        size_t n = 0;
        for (size_t i = 0; i < n_is; i++)
          if (is[i].exec == e && is[i].chunk == ch && is[i].phase == ph)
            buf[n++] = is[i].s;
        double med = hs_median(buf, n);
        if (ph == 0)
          sr->fwd_s = med;
        else
          sr->bwd_s = med;
      }
    }
  }
cleanup:
  free(sorted);
  free(buf);
  return st;
}
