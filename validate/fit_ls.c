/*
 * fit_ls.c - the weighted least-squares fits under calibration: a line
 * t = a + b x (hs__fit_line), a line through the origin at the best rate
 * (hs__fit_max) and a plane t = a + b x + c z (hs__fit_plane), all with
 * weights 1/t^2 so that every point counts by its relative error.
 *
 * Below calibrate.c and calibrate_attn.c, which both fit through it; it uses
 * neither (validate_internal.h declares what it exports). GSL's abort-on-error
 * handler is switched off once per process before the first fit.
 * Deterministic; O(n log n) per fit (the median of the relative errors).
 */
#include "validate_internal.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* "max" fit (declared in validate_internal.h): the line through the origin at the best rate x/t over the
 * points (t = x / best), rel: n scratch doubles. */
hs_status_t hs__fit_max(const double *x, const double *t, int32_t n, double *rel,
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
hs_status_t hs__fit_plane(const double *x, const double *z, const double *t, int32_t n,
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
