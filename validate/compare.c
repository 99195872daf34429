/*
 * compare.c - predicted against measured: the error table of `hetsim
 * validate`.
 *
 * Rows: the iteration (report's iteration_time_s against the median measured
 * iteration), each stage's forward and backward item per microbatch
 * (report's stages[].fwd_s/bwd_s, replica 0), each op kind (sums of per-kernel
 * predictions and medians), and each task kind of the measured timeline
 * (compute items, optimizer; communication is listed measured-only because
 * the report gives no per-transfer prediction). error = (predicted -
 * measured) / measured: positive means the simulator is pessimistic.
 * O(kernels + tasks + stages).
 */
#include "hs_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs_comparison_init(hs_comparison_t *c) { memset(c, 0, sizeof *c); }

void hs_comparison_destroy(hs_comparison_t *c)
{
  if (!c)
    return;
  free(c->rows);
  memset(c, 0, sizeof *c);
}

void hs_report_view_init(hs_report_view_t *r) { memset(r, 0, sizeof *r); }

void hs_report_view_destroy(hs_report_view_t *r)
{
  if (!r)
    return;
  free(r->stages);
  memset(r, 0, sizeof *r);
}

static hs_status_t add_row(hs_comparison_t *c, size_t *cap, const char *what, double pred,
                           double meas, int32_t count)
{
  if (hs_reserve((void **)&c->rows, cap, (size_t)c->n + 1, sizeof *c->rows) != HS_OK)
    return HS_ENOMEM;
  hs_cmp_row_t *r = &c->rows[c->n++];
  memset(r, 0, sizeof *r);
  hs_strlcpy(r->what, what, sizeof r->what);
  r->predicted_s = pred;
  r->measured_s = meas;
  r->error = (meas > 0 && pred > 0) ? (pred - meas) / meas : NAN;
  r->count = count;
  return HS_OK;
}

static bool kind_is_gemm(hs_op_kind_t k)
{
  return k == HS_OP_GEMM || k == HS_OP_ATTENTION || k == HS_OP_MOE_EXPERT || k == HS_OP_MOE_ROUTER;
}

hs_status_t hs_compare(const hs_report_view_t *rep, const hs_measured_t *meas, hs_comparison_t *out,
                       hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t cap = 0;
  double *errs = NULL;
  hs_comparison_init(out);
  char what[48];
  /* iteration */
  /* one stage replayed alone has no iteration to compare with the plan's */
  bool isolated = strncmp(meas->mode, "stage", 5) == 0;
  double pred_it = rep && !isolated ? rep->iteration_time_s : 0.0;
  HS_CHECK(add_row(out, &cap, "iteration", pred_it, meas->iteration_time_s, meas->n_iterations));
  out->iteration_error = out->rows[0].error;
  /* stages */
  for (int32_t i = 0; i < meas->n_stages; i++) {
    const hs_meas_stage_t *ms = &meas->stages[i];
    double pf = ms->predicted_fwd_s, pb = ms->predicted_bwd_s;
    if (rep)
      for (int32_t k = 0; k < rep->n_stages; k++)
        if (rep->stages[k].pipeline == ms->pipeline && rep->stages[k].stage == ms->stage) {
          pf = rep->stages[k].fwd_s;
          pb = rep->stages[k].bwd_s;
        }
    snprintf(what, sizeof what, "stage %d.%d fwd / mb", ms->pipeline, ms->stage);
    HS_CHECK(add_row(out, &cap, what, pf, ms->fwd_s, 1));
    snprintf(what, sizeof what, "stage %d.%d bwd / mb", ms->pipeline, ms->stage);
    HS_CHECK(add_row(out, &cap, what, pb, ms->bwd_s, 1));
  }
  /* op kinds */
  errs = hs_calloc((size_t)meas->n_kernels + 1, sizeof *errs);
  if (!errs)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int k = 0; k < HS_OP__COUNT; k++) {
    double p = 0, m = 0;
    int32_t n = 0;
    for (int32_t i = 0; i < meas->n_kernels; i++)
      if ((int)meas->kernels[i].op_kind == k) {
        p += meas->kernels[i].predicted_s;
        m += meas->kernels[i].measured_s;
        n++;
      }
    if (n == 0)
      continue;
    snprintf(what, sizeof what, "kernels %s", hs_op_kind_name((hs_op_kind_t)k));
    HS_CHECK(add_row(out, &cap, what, p, m, n));
  }
  size_t ng = 0, na = 0;
  for (int32_t i = 0; i < meas->n_kernels; i++) {
    const hs_meas_kernel_t *k = &meas->kernels[i];
    if (!(k->measured_s > 0))
      continue;
    if (kind_is_gemm(k->op_kind))
      errs[ng++] = fabs(k->predicted_s - k->measured_s) / k->measured_s;
  }
  out->gemm_median_abs_error = ng ? hs_median(errs, ng) : NAN;
  for (int32_t i = 0; i < meas->n_kernels; i++) {
    const hs_meas_kernel_t *k = &meas->kernels[i];
    if (k->measured_s > 0)
      errs[na++] = fabs(k->predicted_s - k->measured_s) / k->measured_s;
  }
  out->kernel_median_abs_error = na ? hs_median(errs, na) : NAN;
  /* task kinds of the measured timeline */
  static const char *const names[] = {"fwd", "bwd", "optimizer", "allreduce", "alltoall",
                                      "act", "grad", "grad-allreduce"};
  for (size_t q = 0; q < HS_ARRAY_LEN(names); q++) {
    double p = 0, m = 0;
    int32_t n = 0;
    for (int32_t i = 0; i < meas->n_tasks; i++)
      if (strcmp(meas->tasks[i].name, names[q]) == 0) {
        p += meas->tasks[i].predicted_s;
        m += meas->tasks[i].t1_s - meas->tasks[i].t0_s;
        n++;
      }
    if (n == 0)
      continue;
    snprintf(what, sizeof what, "tasks %s", names[q]);
    HS_CHECK(add_row(out, &cap, what, p, m, n));
  }
cleanup:
  free(errs);
  if (st != HS_OK) {
    hs_comparison_destroy(out);
    if (err && err->status == HS_OK)
      hs_error_set(err, st, "compare: %s", hs_status_message(st));
  }
  return st;
}

void hs_comparison_print(const hs_comparison_t *c, FILE *out)
{
  fprintf(out, "%-28s %6s %14s %14s %9s\n", "what", "count", "predicted s", "measured s", "error");
  for (int32_t i = 0; i < c->n; i++) {
    const hs_cmp_row_t *r = &c->rows[i];
    char pred[32], err[32];
    if (r->predicted_s > 0)
      snprintf(pred, sizeof pred, "%.6g", r->predicted_s);
    else
      hs_strlcpy(pred, "-", sizeof pred);
    if (isnan(r->error))
      hs_strlcpy(err, "-", sizeof err);
    else
      snprintf(err, sizeof err, "%+.1f%%", 100.0 * r->error);
    fprintf(out, "%-28s %6d %14s %14.6g %9s\n", r->what, r->count, pred, r->measured_s, err);
  }
  if (!isnan(c->gemm_median_abs_error))
    fprintf(out, "median |error| per GEMM kernel: %.1f%%\n", 100.0 * c->gemm_median_abs_error);
  if (!isnan(c->kernel_median_abs_error))
    fprintf(out, "median |error| per kernel:      %.1f%%\n", 100.0 * c->kernel_median_abs_error);
}
