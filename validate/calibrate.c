/*
 * calibrate.c - fits the simulator's device profile to microbenchmark points.
 *
 * The compute model (sim/compute.c) is
 *     memory-bound: t = launch + B / (bw * mem_eff)
 *     GEMM:         t = launch + F / (peak * eff_max * F / (F + half))
 *                     = launch + half / (peak * eff_max) + F / (peak * eff_max)
 * so both are straight lines in the work. Each is one weighted linear least
 * squares fit (gsl_multifit_wlinear, weights 1/t^2 so that every point counts
 * by its relative error, as the validation reports errors): the memory line
 * gives launch (intercept) and mem_eff (slope); the GEMM line gives eff_max
 * (slope) and half (intercept minus launch, over the slope). Links follow
 * alpha-beta, t = alpha + B / beta, fitted the same way on the p2p points.
 *
 * A file may say its points are best-achievable rates instead of a sweep
 * ("gemm_fit": "max", "mem_fit": "max"; hs_measurements_t): then the
 * efficiency is the largest rate over the points divided by the peak (the
 * model's asymptote is the maximum achievable rate, e.g. a published
 * maximum-achievable-matmul figure), and the size terms it cannot tell
 * (gemm_half_flops; launch_us when the memory fit is "max") are left out of
 * hs_fit_t.fitted. A GEMM line fitted beside a "max" memory fit has no
 * launch to subtract, so its intercept goes to gemm_half_flops entirely.
 *
 * "mem_eff_source" splits the memory points: the line through the points
 * of the other sources gives launch_us (its slope is not used), the
 * points of that source give mem_eff as a "max" fit.
 *
 * "gemm_sustained_source" splits the GEMM points the same way: the points
 * of that source are sustained rates (held at the power limit) and stay
 * out of the GEMM fit; their best rate over the peak is gemm_sustained_eff,
 * the ceiling sim/compute.c puts on the fitted curve.
 *
 * "gemm_fit": "shape" (points of several shapes, BMMs with "flops" =
 * 2 b m n k) adds the per-output-element term of sim/compute.c: one
 * weighted least squares in two regressors, t = a + b F + c F / k (F / k =
 * 2 output elements), so gemm_eff_max = 1 / (b peak), gemm_out_k = c / b and
 * gemm_half_flops = (a - launch) / b.
 *
 * Parameters are clamped to what the profile loader accepts (0 < eff <= 1,
 * launch >= 0, half >= 0); a clamp is reported in the fit (clamped) and as a
 * warning, because it means the catalog peak is wrong for this device.
 * O(points).
 */
#include "validate_internal.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void hs_measurements_init(hs_measurements_t *m) { memset(m, 0, sizeof *m); }

void hs_measurements_destroy(hs_measurements_t *m)
{
  if (!m)
    return;
  free(m->p);
  memset(m, 0, sizeof *m);
}

hs_status_t hs_measurements_add(hs_measurements_t *m, const hs_mb_point_t *p)
{
  /* capacity is the next power of two of n: grow when n is 0 or a power of two */
  size_t n = (size_t)m->n;
  if ((n & (n - 1)) == 0) {
    hs_mb_point_t *np = hs_reallocarray(m->p, n ? 2 * n : 1, sizeof *np);
    if (!np)
      return HS_ENOMEM;
    m->p = np;
  }
  m->p[m->n++] = *p;
  return HS_OK;
}

void hs_measurements_set_gpu(hs_measurements_t *m, const hs_gpu_t *g)
{
  hs_strlcpy(m->gpu, g->name, sizeof m->gpu);
  for (int d = 0; d < HS_DTYPE__COUNT; d++)
    m->peak_flops[d] = hs_gpu_peak_flops(g, (hs_dtype_t)d);
  m->mem_bw_GBps = g->mem_bw_GBps;
}

const char *hs_mb_kind_name(hs_mb_kind_t k)
{
  static const char *const names[] = {"gemm", "mem", "p2p", "h2d", "allreduce", "attn"};
  return (unsigned)k < HS_ARRAY_LEN(names) ? names[k] : "?";
}

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* R^2, median and largest relative error of the line out->a + out->b x
 * against the n points (rel: n scratch doubles). */
static void line_quality(const double *x, const double *t, int32_t n, double *rel,
                         hs_line_fit_t *out)
{
  double mean = 0.0, ss_tot = 0.0, ss_res = 0.0;
  out->max_rel = 0.0;
  for (int32_t i = 0; i < n; i++)
    mean += t[i] / n;
  for (int32_t i = 0; i < n; i++) {
    double f = out->a + out->b * x[i];
    ss_res += (t[i] - f) * (t[i] - f);
    ss_tot += (t[i] - mean) * (t[i] - mean);
    rel[i] = fabs(f - t[i]) / t[i];
    out->max_rel = fmax(out->max_rel, rel[i]);
  }
  out->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  qsort(rel, (size_t)n, sizeof *rel, cmp_double);
  out->med_rel = (n % 2) ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2]);
}

/* "max" fit: the line through the origin at the best rate x/t over the
 * points (t = x / best), rel: n scratch doubles. */
static hs_status_t fit_max(const double *x, const double *t, int32_t n, double *rel,
                           const char *what, hs_line_fit_t *out, hs_error_t *err)
{
  memset(out, 0, sizeof *out);
  if (n < 1)
    return hs_error_set(err, HS_EINVAL, "%s: \"max\" needs at least 1 point, got 0", what);
  double best = 0.0;
  for (int32_t i = 0; i < n; i++) {
    if (!(t[i] > 0) || !isfinite(t[i]) || !(x[i] > 0) || !isfinite(x[i]))
      return hs_error_set(err, HS_EINVAL, "%s point %d: time %g s and size %g must be "
                          "positive and finite", what, i, t[i], x[i]);
    best = fmax(best, x[i] / t[i]);
  }
  out->a = 0.0;
  out->b = 1.0 / best;
  out->n = n;
  line_quality(x, t, n, rel, out);
  return HS_OK;
}

/* GSL's error handler is one process global that aborts by default; it is
 * switched off once for the process (pthread_once), not written on every
 * fit from whichever thread fits. */
static pthread_once_t gsl_once = PTHREAD_ONCE_INIT;
static void gsl_quiet(void) { gsl_set_error_handler_off(); }

/* Weighted least squares t = coef[0] + sum_{j >= 1} coef[j] cols[j][i]
 * over n points, weights 1 / t^2 (relative errors count); k <= 3 terms
 * (cols[0] is the constant and unused). The one GSL fit behind the line and
 * the plane. */
static hs_status_t wls_fit(const double *const *cols, int k, const double *t, int32_t n,
                           const char *what, double *coef, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  pthread_once(&gsl_once, gsl_quiet);
  gsl_matrix *X = gsl_matrix_alloc((size_t)n, (size_t)k);
  gsl_matrix *cov = gsl_matrix_alloc((size_t)k, (size_t)k);
  gsl_vector *y = gsl_vector_alloc((size_t)n);
  gsl_vector *w = gsl_vector_alloc((size_t)n);
  gsl_vector *c = gsl_vector_alloc((size_t)k);
  gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)n, (size_t)k);
  if (!X || !cov || !y || !w || !c || !ws)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < n; i++) {
    gsl_matrix_set(X, (size_t)i, 0, 1.0);
    for (int j = 1; j < k; j++)
      gsl_matrix_set(X, (size_t)i, (size_t)j, cols[j][i]);
    gsl_vector_set(y, (size_t)i, t[i]);
    gsl_vector_set(w, (size_t)i, 1.0 / (t[i] * t[i]));
  }
  double chisq = 0.0;
  if (gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws) != GSL_SUCCESS)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "%s: least squares failed", what));
  for (int j = 0; j < k; j++)
    coef[j] = gsl_vector_get(c, (size_t)j);
cleanup:
  gsl_matrix_free(X);
  gsl_matrix_free(cov);
  gsl_vector_free(y);
  gsl_vector_free(w);
  gsl_vector_free(c);
  if (ws)
    gsl_multifit_linear_free(ws);
  return st;
}

hs_status_t hs__fit_line(const double *x, const double *t, int32_t n, const char *what,
                         hs_line_fit_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *rel = NULL;
  memset(out, 0, sizeof *out);
  bool varied = false;
  for (int32_t i = 0; i < n; i++) {
    if (!(t[i] > 0) || !isfinite(t[i]) || !(x[i] >= 0) || !isfinite(x[i]))
      return hs_error_set(err, HS_EINVAL, "%s point %d: time %g s and size %g must be "
                          "positive and finite", what, i, t[i], x[i]);
    varied |= x[i] != x[0];
  }
  if (n < 2 || !varied)
    return hs_error_set(err, HS_EINVAL,
                        "%s: need at least 2 points of different sizes, got %d", what, n);
  const double *cols[2] = {NULL, x};
  double coef[2];
  HS_CHECK(wls_fit(cols, 2, t, n, what, coef, err));
  rel = hs_calloc((size_t)n, sizeof *rel);
  if (!rel)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  out->a = coef[0];
  out->b = coef[1];
  out->n = n;
  line_quality(x, t, n, rel, out);
cleanup:
  free(rel);
  return st;
}

/* Weighted least squares t = a + b x + c z (weights 1 / t^2); out->a, out->b
 * as in hs__fit_line, *c_out the third coefficient. */
static hs_status_t fit_plane(const double *x, const double *z, const double *t, int32_t n,
                             const char *what, hs_line_fit_t *out, double *c_out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(out, 0, sizeof *out);
  *c_out = 0.0;
  if (n < 3)
    return hs_error_set(err, HS_EINVAL, "%s: \"shape\" needs at least 3 points, got %d", what, n);
  for (int32_t i = 0; i < n; i++)
    if (!(t[i] > 0) || !isfinite(t[i]) || !(x[i] > 0) || !isfinite(x[i]) || !(z[i] > 0) ||
        !isfinite(z[i]))
      return hs_error_set(err, HS_EINVAL, "%s point %d: time %g s, FLOPs %g and output %g must be "
                          "positive and finite", what, i, t[i], x[i], z[i]);
  const double *cols[3] = {NULL, x, z};
  double coef[3];
  HS_CHECK(wls_fit(cols, 3, t, n, what, coef, err));
  out->a = coef[0];
  out->b = coef[1];
  *c_out = coef[2];
  out->n = n;
  {
    /* quality of the plane: fold the z term into t for line_quality */
    double *tz = hs_calloc((size_t)n, sizeof *tz);
    if (!tz)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    double mean = 0.0, ss_tot = 0.0, ss_res = 0.0;
    out->max_rel = 0.0;
    for (int32_t i = 0; i < n; i++)
      mean += t[i] / n;
    for (int32_t i = 0; i < n; i++) {
      double f = out->a + out->b * x[i] + *c_out * z[i];
      ss_res += (t[i] - f) * (t[i] - f);
      ss_tot += (t[i] - mean) * (t[i] - mean);
      tz[i] = fabs(f - t[i]) / t[i];
      out->max_rel = fmax(out->max_rel, tz[i]);
    }
    out->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    qsort(tz, (size_t)n, sizeof *tz, cmp_double);
    out->med_rel = (n % 2) ? tz[n / 2] : 0.5 * (tz[n / 2 - 1] + tz[n / 2]);
    free(tz);
  }
cleanup:
  return st;
}

/* Collects (x, t) of points of `kind` (and dtype dt for GEMMs when dt >= 0;
 * src > 0: of source src only, src < 0: of any source but -src). */
static int32_t collect_src(const hs_measurements_t *ms, hs_mb_kind_t kind, int dt, int32_t src,
                           double *x, double *t)
{
  int32_t n = 0;
  for (int32_t i = 0; i < ms->n; i++) {
    const hs_mb_point_t *p = &ms->p[i];
    if (p->kind != kind || (dt >= 0 && (int)p->dtype != dt))
      continue;
    if ((src > 0 && p->source != src) || (src < 0 && p->source == -src))
      continue;
    x[n] = kind == HS_MB_GEMM ? p->flops : p->bytes;
    t[n] = p->s;
    n++;
  }
  return n;
}

/* The GEMM points of the fit: every source but gemm_sustained_source. */
static int32_t collect(const hs_measurements_t *ms, hs_mb_kind_t kind, int dt, double *x, double *t)
{
  return collect_src(ms, kind, dt, kind == HS_MB_GEMM ? -ms->gemm_sustained_source : 0, x, t);
}

hs_status_t hs_calibrate_fit(const hs_measurements_t *ms, hs_dtype_t dt, hs_fit_t *out,
                             hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *x = NULL, *t = NULL, *rel = NULL, *z = NULL;
  memset(out, 0, sizeof *out);
  out->dtype = dt;
  x = hs_calloc((size_t)ms->n + 1, sizeof *x);
  t = hs_calloc((size_t)ms->n + 1, sizeof *t);
  rel = hs_calloc((size_t)ms->n + 1, sizeof *rel);
  z = hs_calloc((size_t)ms->n + 1, sizeof *z);
  if (!x || !t || !rel || !z)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  if (!(ms->mem_bw_GBps > 0))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: mem_bw_GBps of %s must be positive, got %g",
                         ms->gpu, ms->mem_bw_GBps));
  hs_line_fit_t mem, gemm;
  memset(&mem, 0, sizeof mem);
  int32_t n = collect_src(ms, HS_MB_MEM, -1, -ms->mem_eff_source, x, t);
  /* published GEMM figures without any memory figure: the memory terms stay
   * undetermined when the catalog takes neither of them */
  bool skip_mem = n == 0 && ms->applies && !(ms->applies & (HS_FIT_MEM_EFF | HS_FIT_LAUNCH_US));
  if (skip_mem) {
    /* nothing: mem_eff and launch_us stay 0 and out of out->fitted */
  } else if (ms->mem_fit_max) {
    HS_CHECK(fit_max(x, t, n, rel, "calibrate: mem", &mem, err));
    out->fitted |= HS_FIT_MEM_EFF;
  } else {
    HS_CHECK(hs__fit_line(x, t, n, "calibrate: mem", &mem, err));
    out->fitted |= HS_FIT_MEM_EFF | HS_FIT_LAUNCH_US;
  }
  if (!skip_mem && ms->mem_eff_source) {
    /* launch from the line above; the rate from the named source's points */
    hs_line_fit_t rate;
    int32_t nr = collect_src(ms, HS_MB_MEM, -1, ms->mem_eff_source, x, t);
    HS_CHECK(fit_max(x, t, nr, rel, "calibrate: mem (mem_eff_source)", &rate, err));
    mem.b = rate.b;
    n += nr;
  }
  if (!skip_mem) {
    out->n_mem = n;
    out->launch_us = mem.a * 1e6;
    if (out->launch_us < 0) {
      hs_error_warn(err, "calibrate: memory intercept %.3g us is negative; launch set to 0", out->launch_us);
      out->launch_us = 0;
      out->clamped = true;
    }
    if (!(mem.b > 0))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: mem: time does not grow with bytes "
                           "(slope %g s/B); the points cannot be fitted", mem.b));
    out->mem_eff = 1.0 / (mem.b * ms->mem_bw_GBps * HS_GB);
    if (out->mem_eff > 1.0) {
      hs_error_warn(err, "calibrate: measured bandwidth %.3g GB/s exceeds %s's mem_bw_GBps %.3g; "
                    "mem_eff clamped to 1", 1.0 / mem.b / HS_GB, ms->gpu, ms->mem_bw_GBps);
      out->mem_eff = 1.0;
      out->clamped = true;
    }
    if (out->mem_eff < HS_EFF_MIN)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: measured bandwidth %.3g GB/s is below %g of "
                           "%s's mem_bw_GBps %.3g: the measurements are not of this GPU",
                           1.0 / mem.b / HS_GB, HS_EFF_MIN, ms->gpu, ms->mem_bw_GBps));
    out->mem_r2 = mem.r2;
    out->mem_median_rel_err = mem.med_rel;
    out->mem_max_rel_err = mem.max_rel;
  }

  int32_t need = ms->gemm_fit_max ? 1 : ms->gemm_fit_shape ? 3 : 2;
  n = collect(ms, HS_MB_GEMM, (int)dt, x, t);
  if (n < need) {
    /* no GEMM at the requested dtype: use the dtype that has points */
    for (int d = 0; d < HS_DTYPE__COUNT && n < need; d++)
      if ((n = collect(ms, HS_MB_GEMM, d, x, t)) >= need)
        out->dtype = (hs_dtype_t)d;
    if (n < need && ms->gemm_fit_shape) /* report the requested dtype's count */
      n = collect(ms, HS_MB_GEMM, (int)dt, x, t);
  }
  double out_c = 0.0;
  if (ms->gemm_fit_max) {
    HS_CHECK(fit_max(x, t, n, rel, "calibrate: gemm", &gemm, err));
    out->fitted |= HS_FIT_GEMM_EFF_MAX;
  } else if (ms->gemm_fit_shape) {
    int32_t nz = 0;
    for (int32_t i = 0; i < ms->n; i++) {
      const hs_mb_point_t *p = &ms->p[i];
      if (p->kind == HS_MB_GEMM && p->dtype == out->dtype &&
          (!ms->gemm_sustained_source || p->source != ms->gemm_sustained_source))
        z[nz++] = p->k > 0 ? p->flops / (double)p->k : 0.0; /* 2 x output elements */
    }
    HS_CHECK(fit_plane(x, z, t, n, "calibrate: gemm", &gemm, &out_c, err));
    out->fitted |= HS_FIT_GEMM_EFF_MAX | HS_FIT_GEMM_HALF_FLOPS | HS_FIT_GEMM_OUT_K;
  } else {
    HS_CHECK(hs__fit_line(x, t, n, "calibrate: gemm", &gemm, err));
    out->fitted |= HS_FIT_GEMM_EFF_MAX | HS_FIT_GEMM_HALF_FLOPS;
  }
  out->n_gemm = n;
  double peak = ms->peak_flops[out->dtype];
  if (!(peak > 0))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: %s has no peak FLOP/s for %s",
                         ms->gpu, hs_dtype_name(out->dtype)));
  if (!(gemm.b > 0))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: gemm: time does not grow with FLOPs "
                         "(slope %g s/FLOP); the points cannot be fitted", gemm.b));
  out->gemm_eff_max = 1.0 / (gemm.b * peak);
  if (out->gemm_eff_max > 1.0) {
    hs_error_warn(err, "calibrate: measured %.3g FLOP/s exceeds %s's %s peak %.3g; "
                  "gemm_eff_max clamped to 1", 1.0 / gemm.b, ms->gpu,
                  hs_dtype_name(out->dtype), peak);
    out->gemm_eff_max = 1.0;
    out->clamped = true;
  }
  if (out->gemm_eff_max < HS_EFF_MIN)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: measured %.3g FLOP/s is below %g of %s's %s "
                         "peak %.3g: the measurements are not of this GPU", 1.0 / gemm.b,
                         HS_EFF_MIN, ms->gpu, hs_dtype_name(out->dtype), peak));
  out->gemm_half_flops = ms->gemm_fit_max ? 0.0 : (gemm.a - out->launch_us * 1e-6) / gemm.b;
  if (ms->gemm_fit_shape) {
    out->gemm_out_k = out_c / gemm.b;
    if (!(out->gemm_out_k <= 1e6)) /* also NaN: what the catalog and profiles accept */
      HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: gemm: per-output cost %g reduction steps "
                           "is above 1e6; the points cannot be fitted", out->gemm_out_k));
    if (out->gemm_out_k < 0) {
      hs_error_warn(err, "calibrate: gemm: negative per-output cost %.3g; gemm_out_k set to 0",
                    out->gemm_out_k);
      out->gemm_out_k = 0;
      out->clamped = true;
    }
  }
  if (out->gemm_half_flops < 0) {
    out->gemm_half_flops = 0;
    out->clamped = true;
  }
  out->gemm_r2 = gemm.r2;
  out->gemm_median_rel_err = gemm.med_rel;
  out->gemm_max_rel_err = gemm.max_rel;
  /* the ceiling: the best sustained rate at the fitted dtype over its peak
   * (sustained points of another dtype, e.g. bf16 ones in an fp8 fit, leave
   * this fit without one; the file loader checks the source has a point) */
  int32_t ns = ms->gemm_sustained_source
                   ? collect_src(ms, HS_MB_GEMM, (int)out->dtype, ms->gemm_sustained_source, x, t)
                   : 0;
  if (ns > 0) {
    hs_line_fit_t sus;
    HS_CHECK(fit_max(x, t, ns, rel, "calibrate: gemm (gemm_sustained_source)", &sus, err));
    out->gemm_sustained_eff = 1.0 / (sus.b * peak);
    if (out->gemm_sustained_eff > out->gemm_eff_max) {
      hs_error_warn(err, "calibrate: sustained GEMM rate %.3g FLOP/s is above the fitted curve's asymptote "
                    "%.3g: gemm_sustained_eff clamped to gemm_eff_max", 1.0 / sus.b, out->gemm_eff_max * peak);
      out->gemm_sustained_eff = out->gemm_eff_max;
      out->clamped = true;
    }
    out->n_gemm_sustained = ns;
    out->fitted |= HS_FIT_GEMM_SUSTAINED;
  }

  n = collect(ms, HS_MB_P2P, -1, x, t);
  if (n >= 2) {
    hs_line_fit_t l;
    HS_CHECK(hs__fit_line(x, t, n, "calibrate: p2p", &l, err));
    out->n_p2p = n;
    out->p2p_latency_us = fmax(l.a, 0.0) * 1e6;
    out->p2p_GBps = l.b > 0 ? 1.0 / l.b / HS_GB : 0.0;
    out->p2p_r2 = l.r2;
    out->p2p_median_rel_err = l.med_rel;
  }
  HS_CHECK(hs__calibrate_attn(ms, out, err));
cleanup:
  free(x);
  free(t);
  free(rel);
  free(z);
  return st;
}
