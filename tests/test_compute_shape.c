/*
 * test_compute_shape.c - the kernel-shape compute model (sim/compute.c,
 * gemm_out_k; issue #13) against closed forms written out here:
 * - gemm_out_k 0 gives the FLOP-only model bit for bit (ops and kernels);
 * - a weight GEMM is forward m x n, backward input gradient m x k plus
 *   weight gradient k x n, each (f + half + 2 out_k out) / (peak eff_max),
 *   with the TP split dividing n (column) or k (row);
 * - the unfused attention core is the sum of its serial kernels (QK^T,
 *   softmax, dropout, AV; six in backward), flash attention stays one kernel;
 * - "shape" calibration recovers chosen parameters from exact points (GSL
 *   fit), and bad input (gemm_out_k in a catalog or profile, "applies"
 *   naming gemm_out_k without a shape fit, too few points) is an error
 *   naming the file, the field and the value.
 */
#include "hs_clusters.h"
#include "hs_models.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "hs_validate.h"
#include "compute_fixture.h"
#include "sim_fixture.h"

#include <math.h>

static void truth_gpu(hs_gpu_t *g, double out_k)
{
  truth_gpu_base(g, "SHAPE-GPU");
  g->gemm_out_k = out_k;
}

/* launch + max(flop term, byte term), written out */
static double closed_kernel(const hs_gpu_t *g, double f, double out, double b)
{
  double peak = 300e12, bw = 2000e9 * 0.75;
  double tf = f > 0 ? (f + 1e10 + 2.0 * g->gemm_out_k * out) / (peak * 0.8) : 0.0;
  return 5e-6 + fmax(tf, b / bw);
}

static double closed_mem(double b) { return 5e-6 + b / (2000e9 * 0.75); }

static hs_op_t weight_gemm(double m, double n, double k, hs_tp_split_t split)
{
  hs_op_t op;
  memset(&op, 0, sizeof op);
  op.kind = HS_OP_GEMM;
  op.gemm_m = m;
  op.gemm_n = n;
  op.gemm_k = k;
  op.gemm_batch = 1;
  op.fwd_flops = 2.0 * m * n * k;
  op.bwd_flops = 2.0 * op.fwd_flops;
  op.fwd_mem_bytes = (m * k + k * n + m * n) * 2.0;
  op.bwd_mem_bytes = 2.0 * op.fwd_mem_bytes;
  op.tp_split = split;
  return op;
}

static void test_off_is_flop_only(void)
{
  hs_gpu_t g;
  truth_gpu(&g, 0.0);
  hs_op_t op = weight_gemm(2048, 4096, 1024, HS_TP_COLUMN);
  double f = op.fwd_flops * 3 / 2, b = op.fwd_mem_bytes * 3 / 2;
  /* FLOP-only: one forward kernel; backward two halves */
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, &op, 3, 2, HS_PHASE_FWD), closed_kernel(&g, f, 0, b), 1e-12);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, &op, 3, 2, HS_PHASE_BWD),
            2 * closed_kernel(&g, f, 0, b), 1e-12);
  CHECK(hs_compute_gemm_s(&g, HS_DTYPE_BF16, 1e12, 5e6, 1e6) ==
        hs_compute_kernel_s(&g, HS_DTYPE_BF16, true, 1e12, 1e6));
}

static void test_weight_gemm_kernels(void)
{
  hs_gpu_t g;
  truth_gpu(&g, 200.0);
  double m = 2048, n = 12288, k = 4096, s = 4, t = 4;
  /* column parallel: n / t */
  hs_op_t op = weight_gemm(m, n, k, HS_TP_COLUMN);
  double f = 2 * m * n * k * s / t, b = op.fwd_mem_bytes * s / t;
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, &op, s, (int32_t)t, HS_PHASE_FWD),
            closed_kernel(&g, f, m * s * n / t, b), 1e-12);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, &op, s, (int32_t)t, HS_PHASE_BWD),
            closed_kernel(&g, f, m * s * k, b) + closed_kernel(&g, f, k * n / t, b), 1e-12);
  /* row parallel: k / t; the output keeps its size */
  op = weight_gemm(m, k, n, HS_TP_ROW);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, &op, s, (int32_t)t, HS_PHASE_FWD),
            closed_kernel(&g, f, m * s * k, b), 1e-12);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, &op, s, (int32_t)t, HS_PHASE_BWD),
            closed_kernel(&g, f, m * s * n / t, b) + closed_kernel(&g, f, n / t * k, b), 1e-12);
  /* the shape term only slows: a reduction of 256 is 256/(256+200) of the rate */
  hs_gpu_t off;
  truth_gpu(&off, 0.0);
  hs_op_t thin = weight_gemm(8192, 8192, 256, HS_TP_REPLICATE);
  CHECK(hs_compute_op_s(&g, HS_DTYPE_BF16, &thin, 1, 1, HS_PHASE_FWD) >
        hs_compute_op_s(&off, HS_DTYPE_BF16, &thin, 1, 1, HS_PHASE_FWD));
}

static void test_unfused_attention_serial(void)
{
  hs_gpu_t g;
  truth_gpu(&g, 200.0);
  double s = 2048, a = 32, hd = 128, smp = 2, t = 4;
  hs_op_t op = fx_attention_op(s, a, hd, HS_DTYPE_FP16);
  CHECK(op.kind == HS_OP_ATTENTION && op.saved_bytes > op.saved_bytes_selective);
  double P = a / t * s * s * smp, c = a / t * s * hd * smp, f = 2 * P * hd, d = 2;
  double fwd = closed_kernel(&g, f, P, P * d + 2 * c * d) + closed_mem(2 * P * d) +
               closed_mem(2 * P * d + P) + closed_kernel(&g, f, c, P * d + 2 * c * d);
  double bwd = closed_kernel(&g, f, P, P * d + 2 * c * d) + 3 * closed_kernel(&g, f, c, P * d + 2 * c * d) +
               closed_mem(2 * P * d + P) + closed_mem(3 * P * d);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_FP16, &op, smp, (int32_t)t, HS_PHASE_FWD), fwd, 1e-12);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_FP16, &op, smp, (int32_t)t, HS_PHASE_BWD), bwd, 1e-12);
  /* serial kernels take at least the old overlapped estimate */
  hs_gpu_t off;
  truth_gpu(&off, 0.0);
  CHECK(hs_compute_op_s(&g, HS_DTYPE_FP16, &op, smp, (int32_t)t, HS_PHASE_FWD) >=
        hs_compute_op_s(&off, HS_DTYPE_FP16, &op, smp, (int32_t)t, HS_PHASE_FWD));
  /* flash attention: one kernel, FLOP-only, as without the shape term */
  hs_practice_t pr;
  hs_practice_init(&pr);
  pr.kernels.attention = HS_ATTENTION_FLASH;
  hs_op_t tmp;
  const hs_op_t *fl = hs_practice_op(&pr, &op, (int32_t)t, &tmp);
  CHECK(hs_compute_op_s(&g, HS_DTYPE_FP16, fl, smp, (int32_t)t, HS_PHASE_FWD) ==
        hs_compute_op_s(&off, HS_DTYPE_FP16, fl, smp, (int32_t)t, HS_PHASE_FWD));
}

static void test_shape_fit_recovers(void)
{
  hs_gpu_t g;
  truth_gpu(&g, 150.0);
  g.launch_us = 0; /* the fit has no memory points: the intercept is half */
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_measurements_set_gpu(&ms, &g);
  ms.gemm_fit_shape = true;
  ms.applies = HS_FIT_GEMM_EFF_MAX | HS_FIT_GEMM_HALF_FLOPS | HS_FIT_GEMM_OUT_K;
  static const double shapes[][4] = {{1, 8192, 12288, 4096}, {64, 2048, 2048, 128}, {64, 2048, 128, 2048},
                                     {1, 1024, 1024, 1024}, {1, 8192, 4096, 16384}, {16, 512, 512, 64}};
  for (size_t i = 0; i < HS_ARRAY_LEN(shapes); i++) {
    hs_mb_point_t p;
    memset(&p, 0, sizeof p);
    p.kind = HS_MB_GEMM;
    p.dtype = HS_DTYPE_BF16;
    p.m = (int64_t)shapes[i][1];
    p.n = (int64_t)shapes[i][2];
    p.k = (int64_t)shapes[i][3];
    p.flops = 2 * shapes[i][0] * shapes[i][1] * shapes[i][2] * shapes[i][3];
    p.s = (p.flops + 1e10 + 2 * 150.0 * shapes[i][0] * shapes[i][1] * shapes[i][2]) / (300e12 * 0.8);
    CHECK(hs_measurements_add(&ms, &p) == HS_OK);
  }
  hs_fit_t f;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_OK, "%s", err.msg);
  CHECK_REL(f.gemm_eff_max, 0.8, 1e-6);
  CHECK_REL(f.gemm_half_flops, 1e10, 1e-4);
  CHECK_REL(f.gemm_out_k, 150.0, 1e-6);
  CHECK(f.fitted & HS_FIT_GEMM_OUT_K);
  CHECK(f.gemm_max_rel_err < 1e-6);
  /* two points cannot determine three terms */
  ms.n = 2;
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "\"shape\" needs at least 3 points, got 2");
  hs_measurements_destroy(&ms);
}

#define MS_HEAD "{\"gpu\": \"X\", \"peak_tflops\": {\"bf16\": 300}, \"mem_bw_GBps\": 2000, "
#define MS_PT "{\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 64, \"n\": 64, \"k\": 64, \"s\": 1e-5}"

static void test_bad_input(void)
{
  /* the catalog field: file, field and value; exit code 2 */
  static const struct {
    const char *json, *msg;
  } gpu_cases[] = {
      {"[{\"name\": \"A100-SXM4-80GB\", \"gemm_out_k\": -3}]", "g.json: [0].gemm_out_k: must be a non-negative number, got -3"},
      {"[{\"name\": \"A100-SXM4-80GB\", \"gemm_out_k\": \"big\"}]", "g.json: [0].gemm_out_k: must be a non-negative number, got \"big\""},
      {"[{\"name\": \"A100-SXM4-80GB\", \"gemm_out_k\": 1e9}]", "g.json: [0].gemm_out_k: must be at most 1e+06, got 1000000000"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(gpu_cases); i++)
    expect_bad_gpu(gpu_cases[i].json, gpu_cases[i].msg);
  /* the measurements file */
  expect_bad_measurements(MS_HEAD "\"applies\": [\"gemm_eff_max\", \"gemm_out_k\"], \"points\": [" MS_PT "]}",
                          "m.json: applies: gemm_out_k needs \"gemm_fit\": \"shape\"");
  expect_bad_measurements(MS_HEAD "\"gemm_fit\": \"shapes\", \"points\": [" MS_PT "]}",
                          "m.json: gemm_fit: must be \"line\", \"shape\" or \"max\", got \"shapes\"");
  expect_bad_measurements(MS_HEAD "\"mem_fit\": \"shape\", \"points\": [" MS_PT "]}",
                          "m.json: mem_fit: must be \"line\" or \"max\", got \"shape\"");
}

int main(void)
{
  HS_RUN(test_off_is_flop_only);
  HS_RUN(test_weight_gemm_kernels);
  HS_RUN(test_unfused_attention_serial);
  HS_RUN(test_shape_fit_recovers);
  HS_RUN(test_bad_input);
  HS_TEST_END();
}
