/*
 * test_compute_attn.c - the calibrated fused-attention rate (issue #13;
 * sim/compute.c, validate/calibrate_attn.c) against closed forms written
 * out here:
 * - a GPU with the attn_* fields times the FlashAttention op as one kernel
 *   per direction, launch + (f / 2) / (bf16 peak eff_max s / (s + half_seq));
 * - a GPU without them times every op exactly as before (the GEMM model,
 *   written out), and the unfused attention core is untouched by the fields;
 * - the fit recovers chosen parameters from exact points (causal points
 *   preferred, non-causal when a direction has no causal ones) and refuses
 *   too few points;
 * - bad input (one attn field without the others, negative or out-of-range
 *   values in a catalog or profile, an "attn" point without its rate, an
 *   unknown direction) is an error naming the file, the field and the value.
 * The H100 catalog entry against the transcribed FlashAttention-2 points is
 * checked in test_calibration_catalog.c.
 */
#include "hs_clusters.h"
#include "hs_models.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "hs_validate.h"
#include "compute_fixture.h"
#include "sim_fixture.h"

#include <cjson/cJSON.h>
#include <math.h>

#define PEAK 300e12 /* truth_gpu_base's bf16 peak */

static void truth_gpu(hs_gpu_t *g, bool attn)
{
  truth_gpu_base(g, "ATTN-GPU");
  if (attn) {
    g->attn_fwd_eff_max = 0.4;
    g->attn_fwd_half_seq = 300;
    g->attn_bwd_eff_max = 0.35;
    g->attn_bwd_half_seq = 250;
  }
}

static const hs_op_t *flash(const hs_op_t *op, int32_t tp, hs_op_t *tmp)
{
  hs_practice_t pr;
  hs_practice_init(&pr);
  pr.kernels.attention = HS_ATTENTION_FLASH;
  return hs_practice_op(&pr, op, tp, tmp);
}

static void test_fused_closed_form(void)
{
  hs_gpu_t g;
  truth_gpu(&g, true);
  double s = 2048, a = 32, hd = 128, smp = 3, t = 4;
  hs_op_t op = fx_attention_op(s, a, hd, HS_DTYPE_BF16), tmp;
  const hs_op_t *fl = flash(&op, (int32_t)t, &tmp);
  CHECK(hs_compute_attn_fused(&g, fl));
  CHECK(!hs_compute_attn_fused(&g, &op)); /* the unfused core keeps its kernels */
  /* forward 4 s^2 hd per head (no causal discount in the op), a / t heads
   * per device; FlashAttention's backward 2.5x; the kernel computes half */
  double f_fwd = 4.0 * s * s * hd * (a / t) * smp, f_bwd = 2.5 * f_fwd;
  double r_fwd = PEAK * 0.4 * s / (s + 300), r_bwd = PEAK * 0.35 * s / (s + 250);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, fl, smp, (int32_t)t, HS_PHASE_FWD),
            5e-6 + 0.5 * f_fwd / r_fwd, 1e-12);
  CHECK_REL(hs_compute_op_s(&g, HS_DTYPE_BF16, fl, smp, (int32_t)t, HS_PHASE_BWD),
            5e-6 + 0.5 * f_bwd / r_bwd, 1e-12);
  /* fp8 training keeps attention in bf16: the same time */
  CHECK(hs_compute_op_s(&g, HS_DTYPE_FP8, fl, smp, (int32_t)t, HS_PHASE_FWD) ==
        hs_compute_op_s(&g, HS_DTYPE_BF16, fl, smp, (int32_t)t, HS_PHASE_FWD));
  /* short sequences run further below the asymptote: 512 vs 8192 */
  hs_op_t o1 = fx_attention_op(512, a, hd, HS_DTYPE_BF16);
  hs_op_t o2 = fx_attention_op(8192, a, hd, HS_DTYPE_BF16), t1, t2;
  const hs_op_t *f1 = flash(&o1, 1, &t1), *f2 = flash(&o2, 1, &t2);
  double rate1 = 0.5 * f1->fwd_flops / (hs_compute_op_s(&g, HS_DTYPE_BF16, f1, 1, 1, HS_PHASE_FWD) - 5e-6);
  double rate2 = 0.5 * f2->fwd_flops / (hs_compute_op_s(&g, HS_DTYPE_BF16, f2, 1, 1, HS_PHASE_FWD) - 5e-6);
  CHECK_REL(rate1, PEAK * 0.4 * 512 / 812, 1e-9);
  CHECK_REL(rate2, PEAK * 0.4 * 8192 / 8492, 1e-9);
}

/* launch + max(flop term at the GEMM curve, byte term): the model before
 * the attn_* fields, written out (gemm_out_k 0) */
static double old_kernel(double f, double b)
{
  double tf = f > 0 ? (f + 1e10) / (PEAK * 0.8) : 0.0;
  return 5e-6 + fmax(tf, b / (2000e9 * 0.75));
}

static void test_uncalibrated_unchanged(void)
{
  hs_gpu_t off, on;
  truth_gpu(&off, false);
  truth_gpu(&on, true);
  double smp = 2, t = 2;
  hs_op_t op = fx_attention_op(2048, 16, 128, HS_DTYPE_BF16), tmp;
  const hs_op_t *fl = flash(&op, (int32_t)t, &tmp);
  CHECK(!hs_compute_attn_fused(&off, fl));
  double f = fl->fwd_flops * smp / t, b = fl->fwd_mem_bytes * smp / t;
  CHECK_REL(hs_compute_op_s(&off, HS_DTYPE_BF16, fl, smp, (int32_t)t, HS_PHASE_FWD), old_kernel(f, b), 1e-12);
  f = fl->bwd_flops * smp / t;
  b = fl->bwd_mem_bytes * smp / t;
  CHECK_REL(hs_compute_op_s(&off, HS_DTYPE_BF16, fl, smp, (int32_t)t, HS_PHASE_BWD),
            2.0 * old_kernel(f / 2, b / 2), 1e-12);
  /* the unfused core and every other op: the fields change nothing */
  for (int ph = 0; ph < 2; ph++) {
    hs_phase_t p = ph ? HS_PHASE_BWD : HS_PHASE_FWD;
    CHECK(hs_compute_op_s(&on, HS_DTYPE_BF16, &op, smp, (int32_t)t, p) ==
          hs_compute_op_s(&off, HS_DTYPE_BF16, &op, smp, (int32_t)t, p));
  }
  /* a catalog GPU without the fields (A100) says uncalibrated */
  hs_gpu_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_init(&cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  const hs_gpu_t *a100 = hs_gpu_catalog_find(&cat, "A100-SXM4-80GB");
  const hs_gpu_t *h100 = hs_gpu_catalog_find(&cat, "H100-SXM5-80GB");
  CHECK(a100 && !hs_gpu_attn_calibrated(a100));
  CHECK(h100 && hs_gpu_attn_calibrated(h100));
  hs_gpu_catalog_destroy(&cat);
}

static void add_attn(hs_measurements_t *ms, bool bwd, bool causal, double seq, double tflops)
{
  hs_mb_point_t p;
  memset(&p, 0, sizeof p);
  p.kind = HS_MB_ATTN;
  p.bwd = bwd;
  p.causal = causal;
  p.m = (int64_t)seq;
  p.k = 128;
  p.tflops = tflops;
  CHECK(hs_measurements_add(ms, &p) == HS_OK);
}

/* One GEMM point and "max" so that the GEMM/memory part of the fit is
 * determined; the attention points are what is tested. */
static void base_ms(hs_measurements_t *ms)
{
  hs_measurements_init(ms);
  hs_strlcpy(ms->gpu, "ATTN-GPU", sizeof ms->gpu);
  ms->peak_flops[HS_DTYPE_BF16] = PEAK;
  ms->mem_bw_GBps = 2000;
  ms->gemm_fit_max = true;
  ms->applies = HS_FIT_GEMM_EFF_MAX;
  hs_mb_point_t p;
  memset(&p, 0, sizeof p);
  p.kind = HS_MB_GEMM;
  p.dtype = HS_DTYPE_BF16;
  p.m = p.n = p.k = 4096;
  p.flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  p.s = p.flops / (0.7 * PEAK);
  CHECK(hs_measurements_add(ms, &p) == HS_OK);
}

static void test_fit_recovers(void)
{
  hs_measurements_t ms;
  base_ms(&ms);
  static const double seqs[] = {512, 1024, 2048, 4096, 8192, 16384};
  for (size_t i = 0; i < HS_ARRAY_LEN(seqs); i++) {
    double s = seqs[i];
    add_attn(&ms, false, true, s, PEAK / 1e12 * 0.45 * s / (s + 400));  /* causal fwd: fitted */
    add_attn(&ms, false, false, s, PEAK / 1e12 * 0.6);                 /* non-causal fwd: not */
    add_attn(&ms, true, false, s, PEAK / 1e12 * 0.38 * s / (s + 200));  /* bwd: non-causal only */
  }
  hs_fit_t f;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_OK, "%s", err.msg);
  CHECK(f.fitted & HS_FIT_ATTN);
  CHECK_REL(f.attn_fwd_eff_max, 0.45, 1e-9);
  CHECK_REL(f.attn_fwd_half_seq, 400, 1e-7);
  CHECK_REL(f.attn_bwd_eff_max, 0.38, 1e-9);
  CHECK_REL(f.attn_bwd_half_seq, 200, 1e-7);
  CHECK(f.attn_fwd_causal && !f.attn_bwd_causal);
  CHECK(f.n_attn_fwd == 6 && f.n_attn_bwd == 6);
  CHECK(f.attn_max_rel_err < 1e-9);
  /* the profile carries the four fields; reading it back gives them */
  cJSON *prof = hs_profile_to_json(&ms, &f);
  CHECK(prof != NULL);
  const cJSON *pg = prof ? cJSON_GetArrayItem(cJSON_GetObjectItem(prof, "gpus"), 0) : NULL;
  CHECK(pg != NULL);
  if (pg) {
    CHECK_REL(cJSON_GetObjectItem(pg, "attn_fwd_eff_max")->valuedouble, 0.45, 1e-9);
    CHECK_REL(cJSON_GetObjectItem(pg, "attn_bwd_half_seq")->valuedouble, 200, 1e-7);
  }
  hs_measurements_destroy(&ms);
  cJSON_Delete(prof);

  /* no attention points: nothing fitted, nothing in the profile */
  base_ms(&ms);
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_OK);
  CHECK(!(f.fitted & HS_FIT_ATTN) && f.attn_fwd_eff_max == 0);
  /* one length only (and no non-causal points to fall back on) cannot be fitted */
  add_attn(&ms, false, true, 2048, 250);
  add_attn(&ms, true, true, 2048, 250);
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "calibrate: attn fwd: need at least 2 points of different sizes");
  hs_measurements_destroy(&ms);
  /* a rate above the peak is not of this GPU */
  base_ms(&ms);
  add_attn(&ms, false, true, 1024, 400);
  add_attn(&ms, false, true, 4096, 500);
  add_attn(&ms, true, true, 1024, 100);
  add_attn(&ms, true, true, 4096, 120);
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "calibrate: attn fwd: fitted efficiency");
  CHECK_CONTAINS(err.msg, "the points are not of this GPU");
  hs_measurements_destroy(&ms);
}

#define MS_HEAD "{\"gpu\": \"X\", \"peak_tflops\": {\"bf16\": 300}, \"mem_bw_GBps\": 2000, \"points\": ["

static void test_bad_input(void)
{
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"attn_fwd_eff_max\": 0.3}]",
                 "g.json: [0].attn_fwd_eff_max: given (0.3) without attn_fwd_half_seq");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"attn_fwd_eff_max\": 0.3, \"attn_fwd_half_seq\": 300, "
                 "\"attn_bwd_eff_max\": 0.3}]",
                 "g.json: [0].attn_fwd_eff_max: given (0.3) without attn_bwd_half_seq");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"attn_fwd_eff_max\": 0.3, \"attn_fwd_half_seq\": -5, "
                 "\"attn_bwd_eff_max\": 0.3, \"attn_bwd_half_seq\": 100}]",
                 "g.json: [0].attn_fwd_half_seq: must be a non-negative number, got -5");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"attn_fwd_eff_max\": 1.5, \"attn_fwd_half_seq\": 5, "
                 "\"attn_bwd_eff_max\": 0.3, \"attn_bwd_half_seq\": 100}]",
                 "g.json: [0].attn_fwd_eff_max: must be at most 1, got 1.5");
  expect_bad_gpu("[{\"name\": \"A100-SXM4-80GB\", \"attn_fwd_eff_max\": 0.3, \"attn_fwd_half_seq\": 5, "
                 "\"attn_bwd_eff_max\": -0.3, \"attn_bwd_half_seq\": 100}]",
                 "g.json: [0].attn_bwd_eff_max: must be between 0.001 and 1, got -0.2");
  expect_bad_measurements(MS_HEAD "{\"kind\": \"attn\", \"dir\": \"fwd\", \"causal\": true, \"seq\": 512, "
                          "\"head_dim\": 128}]}", "m.json: points[0].tflops");
  expect_bad_measurements(MS_HEAD "{\"kind\": \"attn\", \"dir\": \"fwd\", \"causal\": true, \"seq\": 512, "
                          "\"head_dim\": 128, \"tflops\": -3}]}", "m.json: points[0].tflops: must be a positive number, got -3");
  expect_bad_measurements(MS_HEAD "{\"kind\": \"attn\", \"dir\": \"up\", \"causal\": true, \"seq\": 512, "
                          "\"head_dim\": 128, \"tflops\": 3}]}", "m.json: points[0].dir: must be fwd or bwd, got \"up\"");
  expect_bad_measurements(MS_HEAD "{\"kind\": \"attn\", \"dir\": \"fwd\", \"seq\": 512, "
                          "\"head_dim\": 128, \"tflops\": 3}]}", "m.json: points[0].causal");
  expect_bad_measurements(MS_HEAD "{\"kind\": \"attn\", \"dir\": \"fwd\", \"causal\": false, \"seq\": 0, "
                          "\"head_dim\": 128, \"tflops\": 3}]}", "m.json: points[0].seq");
}

/* A profile (hetsim calibrate -o, --profile) carries the four fields too:
 * applied, they time flash attention on the cluster's GPU; one alone is an
 * error naming the file, the field and the value. */
static void test_profile(void)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("dgx-a100-1node", &c, &err) == HS_OK);
  const hs_gpu_t *g = hs_gpu_catalog_find(&c.gpus, "A100-SXM4-80GB");
  CHECK(g && !hs_gpu_attn_calibrated(g));
  CHECK_MSG(hs_profile_parse("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"attn_fwd_eff_max\": 0.5, "
                             "\"attn_fwd_half_seq\": 100, \"attn_bwd_eff_max\": 0.4, \"attn_bwd_half_seq\": 50}]}",
                             "p.json", &c, &err) == HS_OK, "%s", err.msg);
  CHECK(g && hs_gpu_attn_calibrated(g) && g->attn_fwd_eff_max == 0.5 && g->attn_bwd_half_seq == 50);
  hs_status_t st = hs_profile_parse("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"attn_bwd_half_seq\": 7}]}",
                                    "p.json", &c, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "p.json: gpus[0].attn_bwd_half_seq: given (7) without attn_fwd_eff_max");
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_fused_closed_form);
  HS_RUN(test_uncalibrated_unchanged);
  HS_RUN(test_fit_recovers);
  HS_RUN(test_bad_input);
  HS_RUN(test_profile);
  HS_TEST_END();
}
