/*
 * test_error_bands.c - the error bands (hs_bands.h) against a naive
 * recomputation from the residuals stored in validate/error-bands.json:
 * for every class present, the band is the smallest stored |error| that
 * at least 90% of the class's rows do not exceed, taken at the finest
 * level with at least HS_BAND_MIN_ROWS rows. A margin inside the band is
 * flagged as not reliable, one outside is not. Also a synthetic set whose
 * bands are known by hand (fallback to coarser classes).
 */
#include "hs_bands.h"
#include "hs_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Naive: count-based percentile over the rows matching (NULL = any). */
static int naive(const hs_bands_t *b, const char *gpu, const char *fw, const char *scale, double *out)
{
  int n = 0;
  for (int32_t i = 0; i < b->n_rows; i++)
    n += (!gpu || !strcmp(b->rows[i].gpu_class, gpu)) && (!fw || !strcmp(b->rows[i].framework, fw)) &&
         (!scale || !strcmp(hs_band_scale(b->rows[i].n_gpus), scale));
  double best = INFINITY;
  for (int32_t i = 0; i < b->n_rows; i++) {
    double v = fabs(b->rows[i].rel_err);
    int le = 0;
    for (int32_t k = 0; k < b->n_rows; k++) {
      const hs_band_row_t *r = &b->rows[k];
      if ((!gpu || !strcmp(r->gpu_class, gpu)) && (!fw || !strcmp(r->framework, fw)) &&
          (!scale || !strcmp(hs_band_scale(r->n_gpus), scale)))
        le += fabs(r->rel_err) <= v;
    }
    const hs_band_row_t *r = &b->rows[i];
    bool in = (!gpu || !strcmp(r->gpu_class, gpu)) && (!fw || !strcmp(r->framework, fw)) &&
              (!scale || !strcmp(hs_band_scale(r->n_gpus), scale));
    if (in && le * 10 >= n * 9 && v < best)
      best = v;
  }
  *out = best;
  return n;
}

static double naive_band(const hs_bands_t *b, const char *gpu, const char *fw, int32_t n_gpus)
{
  double x;
  if (naive(b, gpu, fw, hs_band_scale(n_gpus), &x) >= HS_BAND_MIN_ROWS)
    return x;
  if (naive(b, gpu, fw, NULL, &x) >= HS_BAND_MIN_ROWS)
    return x;
  if (naive(b, gpu, NULL, NULL, &x) >= HS_BAND_MIN_ROWS)
    return x;
  naive(b, NULL, NULL, NULL, &x);
  return x;
}

static void test_stored_file(void)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/validate/error-bands.json", getenv("HETSIM_DATA"));
  hs_bands_t b;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_bands_load(path, &b, &err) == HS_OK, "%s", err.msg);
  CHECK(b.n_rows >= 50); /* the published suite's simulated rows */
  int flagged = 0, clear = 0;
  for (int32_t i = 0; i < b.n_rows; i++) {
    const hs_band_row_t *r = &b.rows[i];
    hs_band_t band;
    hs_bands_lookup(&b, r->gpu_class, r->framework, r->n_gpus, &band);
    double want = naive_band(&b, r->gpu_class, r->framework, r->n_gpus);
    CHECK_MSG(band.rel == want, "%s/%s/%d: %g vs naive %g", r->gpu_class, r->framework, r->n_gpus,
              band.rel, want);
    /* a 1.00 s winner: the next option inside the band is flagged, outside not */
    if (band.rel > 0.0) {
      flagged += !hs_band_reliable(1.0, 1.0 + 0.5 * band.rel, band.rel);
      clear += hs_band_reliable(1.0, 1.0 + 2.0 * band.rel, band.rel);
    }
  }
  CHECK_EQ_INT(flagged, clear);
  CHECK(flagged > 0);
  hs_bands_destroy(&b);
}

static void test_by_hand(void)
{
  /* class A: 6 rows |err| 1..6% at 8 GPUs (band 6%: ceil(0.9*6) = 6th);
   * class B: 3 rows at 16 GPUs (too few: all 9 rows, 9th of 9 -> 30%) */
  static const struct {
    const char *gpu;
    int32_t n;
    double e;
  } rows[] = {{"A", 8, 0.01}, {"A", 8, -0.02}, {"A", 8, 0.03}, {"A", 8, -0.04}, {"A", 8, 0.05},
              {"A", 8, 0.06}, {"B", 16, 0.10}, {"B", 16, -0.20}, {"B", 16, 0.30}};
  hs_bands_t b;
  hs_bands_init(&b);
  b.rows = calloc(HS_ARRAY_LEN(rows), sizeof *b.rows);
  b.cap = (int32_t)HS_ARRAY_LEN(rows);
  for (size_t i = 0; i < HS_ARRAY_LEN(rows); i++) {
    hs_band_row_t *r = &b.rows[b.n_rows++];
    hs_strlcpy(r->gpu_class, rows[i].gpu, sizeof r->gpu_class);
    hs_strlcpy(r->framework, "none", sizeof r->framework);
    r->n_gpus = rows[i].n;
    r->rel_err = rows[i].e;
  }
  hs_band_t band;
  hs_bands_lookup(&b, "A", "none", 8, &band);
  CHECK_REL(band.rel, 0.06, 1e-12);
  CHECK_EQ_INT(band.n_rows, 6);
  hs_bands_lookup(&b, "A", "megatron-lm-2021", 8, &band); /* no such framework: A alone */
  CHECK_REL(band.rel, 0.06, 1e-12);
  hs_bands_lookup(&b, "B", "none", 16, &band);
  CHECK_REL(band.rel, 0.30, 1e-12);
  CHECK_EQ_INT(band.n_rows, 9);
  CHECK(!hs_band_reliable(1.0, 1.05, 0.06)); /* 5% lead inside a 6% band */
  CHECK(hs_band_reliable(1.0, 1.07, 0.06));
  CHECK(!hs_band_reliable(1.0, 1.5, NAN));  /* unknown band: never called reliable */
  hs_bands_destroy(&b);
}

int main(void)
{
  HS_RUN(test_by_hand);
  HS_RUN(test_stored_file);
  HS_TEST_END();
}
