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
 * O(points). The least-squares fits themselves are in fit_ls.c, below this
 * file and calibrate_attn.c.
 */
#include "validate_internal.h"

#include <math.h>
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

/* Scratch of one fit: per point x (size), t (seconds), rel (relative
 * errors), z (the shape fit's second regressor); ms->n + 1 each. */
typedef struct scratch {
  double *x, *t, *rel, *z;
} scratch_t;

/* The memory line: reads the HS_MB_MEM points (mem_eff_source's as a "max"
 * fit of the rate); guarantees out->launch_us, mem_eff (clamped to 1 with a
 * warning), n_mem and the quality, or nothing when a GEMM-only file leaves
 * the memory terms out. HS_EINVAL for points that cannot be of this GPU. */
static hs_status_t fit_mem(const hs_measurements_t *ms, const scratch_t *sc, hs_fit_t *out,
                           hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *x = sc->x, *t = sc->t, *rel = sc->rel;
  hs_line_fit_t mem;
  memset(&mem, 0, sizeof mem);
  int32_t n = collect_src(ms, HS_MB_MEM, -1, -ms->mem_eff_source, x, t);
  /* published GEMM figures without any memory figure: the memory terms stay
   * undetermined when the catalog takes neither of them */
  bool skip_mem = n == 0 && ms->applies && !(ms->applies & (HS_FIT_MEM_EFF | HS_FIT_LAUNCH_US));
  if (skip_mem) {
    /* nothing: mem_eff and launch_us stay 0 and out of out->fitted */
  } else if (ms->mem_fit_max) {
    HS_CHECK(hs__fit_max(x, t, n, rel, "calibrate: mem", &mem, err));
    out->fitted |= HS_FIT_MEM_EFF;
  } else {
    HS_CHECK(hs__fit_line(x, t, n, "calibrate: mem", &mem, err));
    out->fitted |= HS_FIT_MEM_EFF | HS_FIT_LAUNCH_US;
  }
  if (!skip_mem && ms->mem_eff_source) {
    /* launch from the line above; the rate from the named source's points */
    hs_line_fit_t rate;
    int32_t nr = collect_src(ms, HS_MB_MEM, -1, ms->mem_eff_source, x, t);
    HS_CHECK(hs__fit_max(x, t, nr, rel, "calibrate: mem (mem_eff_source)", &rate, err));
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

cleanup:
  return st;
}

/* The GEMM curve: reads the GEMM points at dt (else the first dtype with
 * enough), fitted as a line, a "max" or a "shape" plane; guarantees
 * out->dtype, gemm_eff_max, gemm_half_flops, gemm_out_k (shape), n_gemm,
 * the quality and *peak_out, the fitted dtype's peak FLOP/s. Needs
 * out->launch_us (fit_mem). HS_EINVAL for points that cannot be fitted. */
static hs_status_t fit_gemm(const hs_measurements_t *ms, hs_dtype_t dt, const scratch_t *sc,
                            hs_fit_t *out, double *peak_out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *x = sc->x, *t = sc->t, *rel = sc->rel, *z = sc->z;
  hs_line_fit_t gemm;
  int32_t need = ms->gemm_fit_max ? 1 : ms->gemm_fit_shape ? 3 : 2;
  int32_t n = collect(ms, HS_MB_GEMM, (int)dt, x, t);
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
    HS_CHECK(hs__fit_max(x, t, n, rel, "calibrate: gemm", &gemm, err));
    out->fitted |= HS_FIT_GEMM_EFF_MAX;
  } else if (ms->gemm_fit_shape) {
    int32_t nz = 0;
    for (int32_t i = 0; i < ms->n; i++) {
      const hs_mb_point_t *p = &ms->p[i];
      if (p->kind == HS_MB_GEMM && p->dtype == out->dtype &&
          (!ms->gemm_sustained_source || p->source != ms->gemm_sustained_source))
        z[nz++] = p->k > 0 ? p->flops / (double)p->k : 0.0; /* 2 x output elements */
    }
    HS_CHECK(hs__fit_plane(x, z, t, n, "calibrate: gemm", &gemm, &out_c, err));
    out->fitted |= HS_FIT_GEMM_EFF_MAX | HS_FIT_GEMM_HALF_FLOPS | HS_FIT_GEMM_OUT_K;
  } else {
    HS_CHECK(hs__fit_line(x, t, n, "calibrate: gemm", &gemm, err));
    out->fitted |= HS_FIT_GEMM_EFF_MAX | HS_FIT_GEMM_HALF_FLOPS;
  }
  out->n_gemm = n;
  double peak = *peak_out = ms->peak_flops[out->dtype];
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
cleanup:
  return st;
}

/* The ceiling: the best sustained rate at the fitted dtype over its peak
 * (gemm_sustained_eff, at most gemm_eff_max); nothing without sustained
 * points at that dtype. */
static hs_status_t fit_sustained(const hs_measurements_t *ms, const scratch_t *sc, double peak,
                                 hs_fit_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *x = sc->x, *t = sc->t, *rel = sc->rel;
  /* the ceiling: the best sustained rate at the fitted dtype over its peak
   * (sustained points of another dtype, e.g. bf16 ones in an fp8 fit, leave
   * this fit without one; the file loader checks the source has a point) */
  int32_t ns = ms->gemm_sustained_source
                   ? collect_src(ms, HS_MB_GEMM, (int)out->dtype, ms->gemm_sustained_source, x, t)
                   : 0;
  if (ns > 0) {
    hs_line_fit_t sus;
    HS_CHECK(hs__fit_max(x, t, ns, rel, "calibrate: gemm (gemm_sustained_source)", &sus, err));
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

cleanup:
  return st;
}

/* The alpha-beta line of the p2p points (2 or more), else nothing. */
static hs_status_t fit_p2p(const hs_measurements_t *ms, const scratch_t *sc, hs_fit_t *out,
                           hs_error_t *err)
{
  hs_status_t st = HS_OK;
  double *x = sc->x, *t = sc->t;
  int32_t n = collect(ms, HS_MB_P2P, -1, x, t);
  if (n >= 2) {
    hs_line_fit_t l;
    HS_CHECK(hs__fit_line(x, t, n, "calibrate: p2p", &l, err));
    out->n_p2p = n;
    out->p2p_latency_us = fmax(l.a, 0.0) * 1e6;
    out->p2p_GBps = l.b > 0 ? 1.0 / l.b / HS_GB : 0.0;
    out->p2p_r2 = l.r2;
    out->p2p_median_rel_err = l.med_rel;
  }
cleanup:
  return st;
}

hs_status_t hs_calibrate_fit(const hs_measurements_t *ms, hs_dtype_t dt, hs_fit_t *out,
                             hs_error_t *err)
{
  hs_status_t st = HS_OK;
  scratch_t sc = {0};
  double peak = 0.0;
  memset(out, 0, sizeof *out);
  out->dtype = dt;
  sc.x = hs_calloc((size_t)ms->n + 1, sizeof *sc.x);
  sc.t = hs_calloc((size_t)ms->n + 1, sizeof *sc.t);
  sc.rel = hs_calloc((size_t)ms->n + 1, sizeof *sc.rel);
  sc.z = hs_calloc((size_t)ms->n + 1, sizeof *sc.z);
  if (!sc.x || !sc.t || !sc.rel || !sc.z)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  if (!(ms->mem_bw_GBps > 0))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "calibrate: mem_bw_GBps of %s must be positive, got %g",
                         ms->gpu, ms->mem_bw_GBps));
  HS_CHECK(fit_mem(ms, &sc, out, err));
  HS_CHECK(fit_gemm(ms, dt, &sc, out, &peak, err));
  HS_CHECK(fit_sustained(ms, &sc, peak, out, err));
  HS_CHECK(fit_p2p(ms, &sc, out, err));
  HS_CHECK(hs__calibrate_attn(ms, out, err));
cleanup:
  free(sc.x);
  free(sc.t);
  free(sc.rel);
  free(sc.z);
  return st;
}
