/*
 * calibrate_attn.c - fits the fused-attention rate model to published
 * FlashAttention kernel benchmarks ("attn" points of a calibration file).
 *
 * Model (sim/compute.c): a fused attention kernel over sequence length s
 * runs at
 *     rate(s) = peak * eff_max * s / (s + half_seq)
 * of the GPU's bf16 peak, forward and backward apart. It is a straight line
 * in 1 / s once inverted,
 *     peak / rate = 1 / eff_max + (half_seq / eff_max) / s,
 * so each direction is one weighted linear least squares (hs__fit_line,
 * GSL, weights 1 / y^2: relative errors of the rate count): eff_max = 1 / a,
 * half_seq = b / a. Causal training is what the simulator times, so each
 * direction is fitted on its causal points when it has two or more of
 * distinct lengths, else on its non-causal points (the fit records which).
 * Head dim is not a variable of the model: points of every head dim in the
 * file enter the fit (a file transcribes one head dim).
 *
 * Invariants: eff_max in [HS_EFF_MIN, 1] (a larger value means the catalog
 * peak is wrong: HS_EINVAL), half_seq in [0, 1e7] (below 0 clamped and
 * reported, above refused), as the catalog and profile loaders accept.
 * O(points).
 */
#include "validate_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Collects 1/s and peak/rate of the points of one direction and mask. */
static int32_t collect_attn(const hs_measurements_t *ms, bool bwd, bool causal, double peak,
                            double *x, double *y)
{
  int32_t n = 0;
  for (int32_t i = 0; i < ms->n; i++) {
    const hs_mb_point_t *p = &ms->p[i];
    if (p->kind != HS_MB_ATTN || p->bwd != bwd || p->causal != causal)
      continue;
    x[n] = 1.0 / (double)p->m;
    y[n] = peak / (1e12 * p->tflops);
    n++;
  }
  return n;
}

static bool varied(const double *x, int32_t n)
{
  for (int32_t i = 1; i < n; i++)
    if (x[i] != x[0])
      return true;
  return false;
}

/* One direction: eff_max, half_seq and whether causal points were used. */
static hs_status_t fit_dir(const hs_measurements_t *ms, bool bwd, double peak, double *x, double *y,
                           double *rel, double *eff_max, double *half_seq, bool *causal,
                           int32_t *n_out, hs_error_t *err)
{
  const char *what = bwd ? "calibrate: attn bwd" : "calibrate: attn fwd";
  int32_t n = collect_attn(ms, bwd, true, peak, x, y);
  *causal = n >= 2 && varied(x, n);
  if (!*causal)
    n = collect_attn(ms, bwd, false, peak, x, y);
  hs_line_fit_t l;
  hs_status_t st = hs__fit_line(x, y, n, what, &l, err);
  if (st != HS_OK)
    return st;
  if (!(l.a > 0) || !isfinite(l.a))
    return hs_error_set(err, HS_EINVAL, "%s: the rate does not level off with sequence length "
                        "(intercept %g); the points cannot be fitted", what, l.a);
  *eff_max = 1.0 / l.a;
  if (*eff_max > 1.0 || *eff_max < HS_EFF_MIN)
    return hs_error_set(err, HS_EINVAL, "%s: fitted efficiency %g of %s's bf16 peak %.4g is outside "
                        "[%g, 1]: the points are not of this GPU", what, *eff_max, ms->gpu, peak,
                        HS_EFF_MIN);
  *half_seq = l.b / l.a;
  if (!(*half_seq <= 1e7)) /* also NaN: what the catalog and profiles accept */
    return hs_error_set(err, HS_EINVAL, "%s: half-rate sequence length %g is above 1e7; the points "
                        "cannot be fitted", what, *half_seq);
  if (*half_seq < 0) {
    hs_error_warn(err, "%s: negative half-rate length %.3g; set to 0", what, *half_seq);
    *half_seq = 0;
  }
  /* relative error of the rate at every fitted point */
  for (int32_t i = 0; i < n; i++) {
    double s = 1.0 / x[i];
    double rate_fit = peak * *eff_max * s / (s + *half_seq);
    rel[i] = fabs(rate_fit - peak / y[i]) / (peak / y[i]);
  }
  *n_out = n;
  return HS_OK;
}

hs_status_t hs__calibrate_attn(const hs_measurements_t *ms, hs_fit_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t n_attn = 0;
  for (int32_t i = 0; i < ms->n; i++)
    n_attn += ms->p[i].kind == HS_MB_ATTN;
  if (n_attn == 0)
    return HS_OK;
  double peak = ms->peak_flops[HS_DTYPE_BF16];
  if (!(peak > 0))
    return hs_error_set(err, HS_EINVAL, "calibrate: attn: %s has no bf16 peak", ms->gpu);
  double *x = hs_calloc((size_t)n_attn, sizeof *x);
  double *y = hs_calloc((size_t)n_attn, sizeof *y);
  double *rel = hs_calloc(2 * (size_t)n_attn, sizeof *rel);
  if (!x || !y || !rel)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  HS_CHECK(fit_dir(ms, false, peak, x, y, rel, &out->attn_fwd_eff_max, &out->attn_fwd_half_seq,
                   &out->attn_fwd_causal, &out->n_attn_fwd, err));
  HS_CHECK(fit_dir(ms, true, peak, x, y, rel + out->n_attn_fwd, &out->attn_bwd_eff_max,
                   &out->attn_bwd_half_seq, &out->attn_bwd_causal, &out->n_attn_bwd, err));
  size_t nr = (size_t)(out->n_attn_fwd + out->n_attn_bwd);
  out->attn_max_rel_err = 0.0;
  for (size_t i = 0; i < nr; i++)
    out->attn_max_rel_err = fmax(out->attn_max_rel_err, rel[i]);
  out->attn_median_rel_err = hs__median_inplace(rel, nr);
  out->fitted |= HS_FIT_ATTN;
cleanup:
  free(x);
  free(y);
  free(rel);
  return st;
}
