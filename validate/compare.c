/*
 * compare.c - predicted against measured: the error table of `hetsim
 * validate`.
 *
 * Rows: the iteration (report's iteration_time_s against the median measured
 * iteration), each stage's forward and backward item per microbatch
 * (report's stages[].fwd_s/bwd_s, replica 0), each op kind (sums of per-kernel
 * predictions and medians), and each task kind of the measured timeline
 * (compute items, optimizer, and communication: the uncontended estimates
 * the task graph gives each transfer, which replay records). With a step breakdown (torch-profiler
 * import) and a report, rows for compute, exposed communication and idle time
 * of rank 0's stage. error = (predicted - measured) / measured: positive
 * means the simulator is pessimistic.
 *
 * Spread: the iteration row's measured value is the median of every measured
 * iteration of every run given, with the quartiles beside it (GSL's quantile
 * of sorted data: linear interpolation between order statistics); several
 * runs also give the spread of their medians. The verdict is "ok" when the
 * iteration error is within the tolerance or the prediction lies inside the
 * measured interquartile range, "off" otherwise, "none" without a prediction.
 * O(runs x (kernels + tasks + stages + iterations log iterations)).
 */
#include "validate_internal.h"

#include <gsl/gsl_statistics_double.h>
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

static int cmp_dbl(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

hs_status_t hs_spread_of(const double *v, size_t n, hs_spread_t *out)
{
  memset(out, 0, sizeof *out);
  if (n == 0)
    return HS_OK;
  double *c = hs_calloc(n, sizeof *c);
  if (!c)
    return HS_ENOMEM;
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, cmp_dbl);
  out->n = (int32_t)n;
  out->median = gsl_stats_median_from_sorted_data(c, 1, n);
  out->q1 = gsl_stats_quantile_from_sorted_data(c, 1, n, 0.25);
  out->q3 = gsl_stats_quantile_from_sorted_data(c, 1, n, 0.75);
  out->min = c[0];
  out->max = c[n - 1];
  free(c);
  return HS_OK;
}

const char *hs_verdict_name(hs_verdict_t v)
{
  return v == HS_VERDICT_OK ? "ok" : v == HS_VERDICT_OFF ? "off" : "none";
}

double hs__median_inplace(double *v, size_t n)
{
  if (n == 0)
    return 0.0;
  qsort(v, n, sizeof *v, cmp_dbl);
  return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* (pred - meas) / meas, or NaN (printed "-", written null) when either is
 * not a positive number or the quotient is not finite: a tiny measured value
 * must not turn into "+inf%". */
static double rel_error(double pred, double meas)
{
  if (!(meas > 0) || !(pred > 0) || !isfinite(pred) || !isnormal(meas))
    return NAN;
  double e = (pred - meas) / meas;
  return isfinite(e) ? e : NAN;
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
  r->error = rel_error(pred, meas);
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
  return hs_compare_runs(rep, &meas, 1, 0.0, out, err);
}

/* How much slower the machine ran in the replays than at calibration:
 * each iteration is scaled by calibration probe / the probe around it
 * (runs without per-iteration probes by their median probe), and the
 * adjusted error is against the median of the scaled iterations; pool
 * holds every run's iterations (scratch). Runs without probes leave
 * out->speed_ratio unset. */
static void speed_adjust(const hs_measured_t *const *runs, int32_t n_runs, double pred_it,
                         double med_it, double *pool, hs_comparison_t *out)
{
  if (pred_it > 0) {
    size_t na = 0;
    for (int32_t r = 0; r < n_runs; r++) {
      const hs_measured_t *m = runs[r];
      double cal = m->speed_probe_calibration_s;
      if (!(m->speed_probe_s > 0 && cal > 0))
        continue;
      if (m->speed_probe_iter_s && m->n_iterations > 0)
        for (int32_t i = 0; i < m->n_iterations; i++)
          pool[na++] = m->iteration_s[i] * cal / m->speed_probe_iter_s[i];
      else if (m->n_iterations > 0)
        for (int32_t i = 0; i < m->n_iterations; i++)
          pool[na++] = m->iteration_s[i] * cal / m->speed_probe_s;
      else
        pool[na++] = m->iteration_time_s * cal / m->speed_probe_s;
    }
    if (na > 0) {
      double adj = hs__median_inplace(pool, na);
      double ratio = med_it / adj, e = rel_error(pred_it, adj);
      if (isfinite(ratio) && !isnan(e)) { /* else left out, as without a probe */
        out->speed_ratio = ratio;
        out->iteration_error_speed_adjusted = e;
      }
    }
  }
}

/* The iteration row: reads every run's iterations (pooled; a run without
 * them counts its median once); guarantees out->iterations,
 * out->run_medians, the "iteration" row against the plan's prediction
 * (none for one stage replayed alone), the error band over the
 * quartiles, the speed-probe adjusted error and the verdict. */
static hs_status_t compare_iteration(const hs_report_view_t *rep, const hs_measured_t *const *runs,
                                     int32_t n_runs, hs_comparison_t *out, size_t *cap,
                                     hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *pool = NULL, *meds = NULL;
  const hs_measured_t *meas = runs[0];
  /* iteration: every run's iterations pooled */
  size_t n_pool = 0;
  for (int32_t r = 0; r < n_runs; r++)
    n_pool += runs[r]->n_iterations > 0 ? (size_t)runs[r]->n_iterations : 1;
  pool = hs_calloc(n_pool + 1, sizeof *pool);
  meds = hs_calloc((size_t)n_runs + 1, sizeof *meds);
  if (!pool || !meds)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  n_pool = 0;
  for (int32_t r = 0; r < n_runs; r++) {
    const hs_measured_t *m = runs[r];
    if (m->n_iterations > 0) {
      memcpy(pool + n_pool, m->iteration_s, (size_t)m->n_iterations * sizeof *pool);
      meds[r] = hs__median_inplace(pool + n_pool, (size_t)m->n_iterations);
      n_pool += (size_t)m->n_iterations;
    } else {
      pool[n_pool++] = m->iteration_time_s;
      meds[r] = m->iteration_time_s;
    }
  }
  if (hs_spread_of(pool, n_pool, &out->iterations) != HS_OK ||
      hs_spread_of(meds, (size_t)n_runs, &out->run_medians) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* one stage replayed alone has no iteration to compare with the plan's */
  bool isolated = strncmp(meas->mode, "stage", 5) == 0;
  double pred_it = rep && !isolated ? rep->iteration_time_s : 0.0;
  /* a single run without iterations_s keeps its own median */
  double med_it = n_runs == 1 && meas->n_iterations == 0 ? meas->iteration_time_s
                                                         : out->iterations.median;
  HS_CHECK(add_row(out, cap, "iteration", pred_it, med_it, (int32_t)n_pool));
  out->rows[0].q1_s = out->iterations.n > 1 ? out->iterations.q1 : 0.0;
  out->rows[0].q3_s = out->iterations.n > 1 ? out->iterations.q3 : 0.0;
  out->iteration_error = out->rows[0].error;
  out->error_lo = out->error_hi = out->iteration_error;
  if (pred_it > 0 && out->iterations.n > 1 && out->iterations.q1 > 0) {
    double lo = rel_error(pred_it, out->iterations.q3), hi = rel_error(pred_it, out->iterations.q1);
    if (!isnan(lo) && !isnan(hi)) {
      out->error_lo = lo;
      out->error_hi = hi;
    }
  }
  speed_adjust(runs, n_runs, pred_it, med_it, pool, out);
  if (isnan(out->iteration_error))
    out->verdict = HS_VERDICT_NONE;
  else if (fabs(out->iteration_error) <= out->tolerance ||
           (out->iterations.n > 1 && pred_it >= out->iterations.q1 && pred_it <= out->iterations.q3))
    out->verdict = HS_VERDICT_OK;
  else
    out->verdict = HS_VERDICT_OFF;
cleanup:
  free(pool);
  free(meds);
  return st;
}

/* Per measured stage a forward and a backward row per microbatch, against
 * the report's stage times (else the replay's own predictions). */
static hs_status_t compare_stages(const hs_report_view_t *rep, const hs_measured_t *meas,
                                  hs_comparison_t *out, size_t *cap)
{
  hs_status_t st = HS_OK;
  char what[48];
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
    HS_CHECK(add_row(out, cap, what, pf, ms->fwd_s, 1));
    snprintf(what, sizeof what, "stage %d.%d bwd / mb", ms->pipeline, ms->stage);
    HS_CHECK(add_row(out, cap, what, pb, ms->bwd_s, 1));
  }
cleanup:
  return st;
}

/* A row per op kind of the measured kernels, and the median |error| of the
 * GEMM kernels and of every kernel. */
static hs_status_t compare_kernels(const hs_measured_t *meas, hs_comparison_t *out, size_t *cap,
                                   hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *errs = NULL;
  char what[48];
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
    HS_CHECK(add_row(out, cap, what, p, m, n));
  }
  size_t ng = 0, na = 0;
  for (int32_t i = 0; i < meas->n_kernels; i++) {
    const hs_meas_kernel_t *k = &meas->kernels[i];
    if (!(k->measured_s > 0))
      continue;
    double e = fabs(k->predicted_s - k->measured_s) / k->measured_s;
    if (kind_is_gemm(k->op_kind) && isfinite(e))
      errs[ng++] = e;
  }
  out->gemm_median_abs_error = ng ? hs__median_inplace(errs, ng) : NAN;
  for (int32_t i = 0; i < meas->n_kernels; i++) {
    const hs_meas_kernel_t *k = &meas->kernels[i];
    double e = k->measured_s > 0 ? fabs(k->predicted_s - k->measured_s) / k->measured_s : NAN;
    if (isfinite(e))
      errs[na++] = e;
  }
  out->kernel_median_abs_error = na ? hs__median_inplace(errs, na) : NAN;
cleanup:
  free(errs);
  return st;
}

/* A row per task kind of the measured timeline, then one rank's step
 * breakdown when the record has one. */
static hs_status_t compare_tasks(const hs_report_view_t *rep, const hs_measured_t *meas,
                                 hs_comparison_t *out, size_t *cap)
{
  hs_status_t st = HS_OK;
  char what[48];
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
    HS_CHECK(add_row(out, cap, what, p, m, n));
  }
  /* one rank's step breakdown */
  if (meas->has_breakdown) {
    bool pr = rep && rep->compute_s >= 0;
    HS_CHECK(add_row(out, cap, "step compute", pr ? rep->compute_s : 0.0, meas->compute_s, 1));
    HS_CHECK(add_row(out, cap, "step exposed comm", pr ? rep->comm_exposed_s : 0.0,
                     meas->comm_exposed_s, 1));
    HS_CHECK(add_row(out, cap, "step idle", pr ? rep->idle_s : 0.0, meas->idle_s, 1));
  }
cleanup:
  return st;
}

hs_status_t hs_compare_runs(const hs_report_view_t *rep, const hs_measured_t *const *runs,
                            int32_t n_runs, double tolerance, hs_comparison_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t cap = 0;
  hs_comparison_init(out);
  if (n_runs < 1)
    return hs_error_set(err, HS_EINVAL, "compare: no measured run");
  out->tolerance = tolerance > 0 ? tolerance : 0.1;
  out->n_runs = n_runs;
  HS_CHECK(compare_iteration(rep, runs, n_runs, out, &cap, err));
  HS_CHECK(compare_stages(rep, runs[0], out, &cap));
  HS_CHECK(compare_kernels(runs[0], out, &cap, err));
  HS_CHECK(compare_tasks(rep, runs[0], out, &cap));
cleanup:
  if (st != HS_OK) {
    hs_comparison_destroy(out);
    if (err && err->status == HS_OK)
      hs_error_set(err, st, "compare: %s", hs_status_message(st));
  }
  return st;
}

void hs_comparison_print_verdict(const hs_comparison_t *c, FILE *out)
{
  if (c->verdict == HS_VERDICT_NONE) {
    fprintf(out, "verdict: none (no prediction of the iteration; %d iteration%s, %d run%s)\n",
            c->iterations.n, c->iterations.n == 1 ? "" : "s", c->n_runs, c->n_runs == 1 ? "" : "s");
    return;
  }
  fprintf(out, "verdict: %s iteration error %+.1f%% (IQR %+.1f%%..%+.1f%%, %d iteration%s, %d run%s, "
          "tolerance %.0f%%)\n", hs_verdict_name(c->verdict), 100 * c->iteration_error,
          100 * c->error_lo, 100 * c->error_hi, c->iterations.n, c->iterations.n == 1 ? "" : "s",
          c->n_runs, c->n_runs == 1 ? "" : "s", 100 * c->tolerance);
}

void hs_comparison_print(const hs_comparison_t *c, FILE *out)
{
  if (c->iterations.n > 1)
    fprintf(out, "measured        %d iteration%s over %d run%s: median %.6g s, IQR %.6g..%.6g s "
            "(%.1f%% of the median), min %.6g, max %.6g\n", c->iterations.n,
            c->iterations.n == 1 ? "" : "s", c->n_runs, c->n_runs == 1 ? "" : "s",
            c->iterations.median, c->iterations.q1, c->iterations.q3,
            c->iterations.median > 0 ? 100 * (c->iterations.q3 - c->iterations.q1) / c->iterations.median : 0.0,
            c->iterations.min, c->iterations.max);
  if (c->n_runs > 1)
    fprintf(out, "run medians     %d runs: median %.6g s, IQR %.6g..%.6g s, min %.6g, max %.6g\n",
            c->n_runs, c->run_medians.median, c->run_medians.q1, c->run_medians.q3,
            c->run_medians.min, c->run_medians.max);
  fprintf(out, "%-28s %6s %14s %14s %23s %9s\n", "what", "count", "predicted s", "measured s",
          "measured IQR s", "error");
  for (int32_t i = 0; i < c->n; i++) {
    const hs_cmp_row_t *r = &c->rows[i];
    char pred[32], err[32], iqr[48] = "-";
    if (r->q3_s > 0)
      snprintf(iqr, sizeof iqr, "%.6g..%.6g", r->q1_s, r->q3_s);
    if (r->predicted_s > 0)
      snprintf(pred, sizeof pred, "%.6g", r->predicted_s);
    else
      hs_strlcpy(pred, "-", sizeof pred);
    if (isnan(r->error))
      hs_strlcpy(err, "-", sizeof err);
    else
      snprintf(err, sizeof err, "%+.1f%%", 100.0 * r->error);
    fprintf(out, "%-28s %6d %14s %14.6g %23s %9s\n", r->what, r->count, pred, r->measured_s, iqr,
            err);
  }
  if (!isnan(c->gemm_median_abs_error))
    fprintf(out, "median |error| per GEMM kernel: %.1f%%\n", 100.0 * c->gemm_median_abs_error);
  if (!isnan(c->kernel_median_abs_error))
    fprintf(out, "median |error| per kernel:      %.1f%%\n", 100.0 * c->kernel_median_abs_error);
  if (c->speed_ratio > 0)
    fprintf(out, "machine speed: the probe (%s) took %.2fx its calibration time during the replay; "
            "iteration error with the prediction scaled by it: %+.1f%%\n", HS_PROBE_KERNEL,
            c->speed_ratio, 100.0 * c->iteration_error_speed_adjusted);
  hs_comparison_print_verdict(c, out);
}

hs_status_t hs_report_view_from_report(const hs_report_t *rep, hs_report_view_t *out)
{
  hs_report_view_init(out);
  out->iteration_time_s = rep->iteration_time_s;
  out->compute_s = out->comm_exposed_s = out->idle_s = -1.0;
  out->stages = hs_calloc((size_t)rep->n_stages + 1, sizeof *out->stages);
  if (!out->stages)
    return HS_ENOMEM;
  for (int32_t i = 0; i < rep->n_stages; i++) {
    const hs_stage_report_t *s = &rep->stages[i];
    hs_meas_stage_t *v = &out->stages[out->n_stages++];
    v->pipeline = s->pipeline;
    v->stage = s->stage;
    v->fwd_s = s->fwd_s;
    v->bwd_s = s->bwd_s;
    if (s->pipeline == 0 && s->stage == 0) {
      out->compute_s = s->compute_s;
      out->comm_exposed_s = s->comm_exposed_s;
      out->idle_s = s->idle_s;
    }
  }
  return HS_OK;
}
