/*
 * test_compute_fp8.c - the fp8 GEMM curve (issue #13; gemm_eff_max_fp8 and
 * gemm_half_flops_fp8 in clusters/gpus.json, sim/compute.c):
 * - the shipped H100-SXM5-80GB and H200-SXM-141GB entries against the
 *   published fp8 cuBLASLt sweeps they were fitted on, typed in below from
 *   the Azure AI-benchmarking-guide results (Azure_Results/ND_H100_v5 and
 *   ND_H200_v5_results.md, GEMM CuBLASLt tables): every fitted shape's
 *   predicted TFLOP/s within 17% of the published figure, the median
 *   within 5%, the asymptote within 5% of the best published rate. The
 *   table's 802816 x 192 x 768 row is outside the model (a 192-wide output
 *   fills a fraction of the tiles) and is only printed;
 * - closed forms written out here: an fp8 GEMM on a GPU with the curve
 *   takes launch + (f + half_fp8) / (fp8 peak eff_max_fp8); bf16 (and fp8
 *   on a GPU without the curve, or without an fp8 peak) keeps the
 *   gemm_eff_max / gemm_half_flops curve, bit for bit;
 * - bad input (one field without the other, out of range) is an error
 *   naming the file, the field and the value, exit code 2.
 */
#include "hs_clusters.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "compute_fixture.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  double m, n, k, tflops;
} pub_gemm_t;

/* Azure ND H100 v5 (samuel-bohman/AI-benchmarking-guide@a6533f14, 2024),
 * FP8, 10,000 warmup iterations */
static const pub_gemm_t h100_fp8[] = {
    {1024, 1024, 1024, 274.1},    {2048, 2048, 2048, 1011.3},    {4096, 4096, 4096, 1216.9},
    {8192, 8192, 8192, 1290.1},   {16384, 16384, 16384, 1377.3}, {32768, 32768, 32768, 1382.2},
    {1024, 2145, 1024, 410.7},    {6144, 12288, 12288, 1351.4},  {802816, 192, 768, 663.8}};
/* Azure ND H200 v5 (@5e2c4e55, 2024), the same sweep */
static const pub_gemm_t h200_fp8[] = {
    {1024, 1024, 1024, 290.8},    {2048, 2048, 2048, 1013.4},    {4096, 4096, 4096, 1249.1},
    {8192, 8192, 8192, 1300.6},   {16384, 16384, 16384, 1366.3}, {32768, 32768, 32768, 1349.5},
    {1024, 2145, 1024, 407.9},    {6144, 12288, 12288, 1318.0},  {802816, 192, 768, 717.5}};

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void check_sweep(const hs_gpu_t *g, const pub_gemm_t *pts, int n)
{
  CHECK(g->gemm_eff_max_fp8 > 0 && g->peak_flops[HS_DTYPE_FP8] > 0);
  double rel[16], best = 0, sum = 0, sum_old = 0;
  int nf = 0;
  for (int i = 0; i < n; i++) {
    double f = 2.0 * pts[i].m * pts[i].n * pts[i].k;
    double pred = f / hs_compute_gemm_s(g, HS_DTYPE_FP8, f, 0.0, 0.0) / 1e12;
    double err = (pred - pts[i].tflops) / pts[i].tflops;
    /* what fp8 GEMMs were before: the bf16 curve on the fp8 peak */
    hs_gpu_t before = *g;
    before.gemm_eff_max_fp8 = before.gemm_half_flops_fp8 = 0;
    double old = f / hs_compute_gemm_s(&before, HS_DTYPE_FP8, f, 0.0, 0.0) / 1e12;
    bool skinny = pts[i].n < 256;
    fprintf(stderr, "  %s fp8 %.0fx%.0fx%.0f: published %.1f, predicted %.1f TFLOP/s (%+.1f%%; "
            "bf16 curve %+.1f%%)%s\n", g->name, pts[i].m, pts[i].n, pts[i].k, pts[i].tflops, pred,
            100 * err, 100 * (old - pts[i].tflops) / pts[i].tflops, skinny ? " [not fitted]" : "");
    if (skinny)
      continue;
    CHECK_MSG(fabs(err) <= 0.17, "%s %.0fx%.0fx%.0f: %.1f%% off", g->name, pts[i].m, pts[i].n,
              pts[i].k, 100 * err);
    rel[nf++] = fabs(err);
    sum += fabs(err);
    sum_old += fabs(old - pts[i].tflops) / pts[i].tflops;
    best = fmax(best, pts[i].tflops);
  }
  qsort(rel, (size_t)nf, sizeof *rel, cmp_dbl);
  double med = 0.5 * (rel[nf / 2 - 1] + rel[nf / 2]);
  CHECK_MSG(nf == 8 && med <= 0.05, "%s: median %.1f%%", g->name, 100 * med);
  double asym = g->peak_flops[HS_DTYPE_FP8] * g->gemm_eff_max_fp8 / 1e12;
  CHECK_MSG(fabs(asym - best) / best <= 0.05, "%s: asymptote %.1f vs best %.1f", g->name, asym, best);
  fprintf(stderr, "  %s: MAPE %.1f%% (bf16 curve %.1f%%), median %.1f%%, worst %.1f%%, asymptote "
          "%.1f TFLOP/s (best published %.1f)\n", g->name, 100 * sum / nf, 100 * sum_old / nf,
          100 * med, 100 * rel[nf - 1], asym, best);
}

static void test_published_sweeps(void)
{
  hs_gpu_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_init(&cat);
  CHECK_MSG(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK, "%s", err.msg);
  const hs_gpu_t *h100 = hs_gpu_catalog_find(&cat, "H100-SXM5-80GB");
  const hs_gpu_t *h200 = hs_gpu_catalog_find(&cat, "H200-SXM-141GB");
  CHECK(h100 && h200);
  if (h100)
    check_sweep(h100, h100_fp8, (int)HS_ARRAY_LEN(h100_fp8));
  if (h200)
    check_sweep(h200, h200_fp8, (int)HS_ARRAY_LEN(h200_fp8));
  hs_gpu_catalog_destroy(&cat);
}

static void test_closed_forms(void)
{
  hs_gpu_t g;
  truth_gpu_base(&g, "FP8-GPU");
  g.peak_flops[HS_DTYPE_FP8] = 600e12;
  double f = 3e11, launch = 5e-6;
  /* without the curve: fp8 on the bf16 curve at the fp8 peak (as before) */
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP8, f, 0, 0), launch + (f + 1e10) / (600e12 * 0.8), 1e-14);
  g.gemm_eff_max_fp8 = 0.6;
  g.gemm_half_flops_fp8 = 4e10;
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP8, f, 0, 0), launch + (f + 4e10) / (600e12 * 0.6), 1e-14);
  /* bf16 and fp16 do not see it */
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_BF16, f, 0, 0), launch + (f + 1e10) / (300e12 * 0.8), 1e-14);
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP16, f, 0, 0), launch + (f + 1e10) / (300e12 * 0.8), 1e-14);
  /* the memory term still bounds it: 1e10 B at 2000 GB/s x 0.75 */
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP8, f, 0, 1e10), launch + 1e10 / (2000e9 * 0.75), 1e-14);
  /* a non-GEMM kernel runs at the fp32 peak, untouched */
  CHECK_REL(hs_compute_kernel_s(&g, HS_DTYPE_FP8, false, 2e9, 0), launch + 2e9 / 20e12, 1e-14);
  /* no fp8 peak: fp8 falls back to the bf16 peak and keeps the bf16 curve */
  g.peak_flops[HS_DTYPE_FP8] = 0;
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP8, f, 0, 0), launch + (f + 1e10) / (300e12 * 0.8), 1e-14);
}

static void test_bad_input(void)
{
  expect_bad_gpu("[{\"name\": \"H100-SXM5-80GB\", \"gemm_eff_max_fp8\": 0.6}]",
                 "g.json: [0].gemm_eff_max_fp8: given (0.6) without gemm_half_flops_fp8");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"gemm_half_flops_fp8\": 3e9}]",
                 "g.json: [0].gemm_half_flops_fp8: given (3e+09) without gemm_eff_max_fp8");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max_fp8\": 1.5, \"gemm_half_flops_fp8\": 3e9}]",
                 "g.json: [0].gemm_eff_max_fp8: must be at most 1, got 1.5");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max_fp8\": 0, \"gemm_half_flops_fp8\": 3e9}]",
                 "g.json: [0].gemm_eff_max_fp8: must be between 0.001 and 1, got 0");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max_fp8\": 0.5, \"gemm_half_flops_fp8\": -1}]",
                 "g.json: [0].gemm_half_flops_fp8: must be a non-negative number, got -1");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max_fp8\": \"x\", \"gemm_half_flops_fp8\": 1}]",
                 "g.json: [0].gemm_eff_max_fp8");
}

int main(void)
{
  HS_RUN(test_published_sweeps);
  HS_RUN(test_closed_forms);
  HS_RUN(test_bad_input);
  HS_TEST_END();
}
