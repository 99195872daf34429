/*
 * test_sim_overlap.c - data-parallel gradient sync overlapped with the
 * backward pass at bucket granularity (PyTorch DDP, Megatron
 * overlap_grad_reduce), against the closed form.
 *
 * Pure data parallelism over n GPUs of one node (ring all-reduce of S bytes:
 * AR = 2(n-1)(a + S/(nB))), a chain of L one-op layers, one bucket per
 * layer. Bucket k (k = 0 is the top layer) is ready k+1 layer-backwards into
 * the last microbatch's backward, which starts at t0; buckets run one after
 * another on the comm stream, so the sync ends at
 *     max_k (t0 + (k+1) t_bl + (L-k) AR)
 * = t0 + max(bwd, first bucket's start + L x AR) when AR >= t_bl (the issue's
 * closed form), = t0 + bwd + AR when the backward is slower; the optimizer
 * step (32 B per parameter at the memory bandwidth) follows.
 *
 * With practice.dp_overlap off (Megatron-LM 2021 --DDP-impl local: the
 * gradients are all-reduced after the pipeline flush) the buckets run one
 * after another once the whole backward is done: t0 + bwd + L x AR.
 *
 * Overlap contention (sim/contention.h, the GPU's overlap_slowdown k):
 * compute beside a running bucket goes at 1/(1+k) of its speed. When the
 * backward is the slower (AR < t_bl), each of the L-1 layers whose backward
 * runs beside the previous bucket takes t_bl + k AR/(1+k), so the sync ends
 * at t0 + bwd + (L-1) k AR/(1+k) + AR; when AR >= t_bl (1+k) the comm
 * stream never waits and the closed form above is unchanged; without
 * overlap no compute runs beside a bucket.
 */
#include "sim_fixture.h"

static double closed_form(double t0, int L, double tbl, double ar)
{
  double end = 0.0;
  for (int k = 0; k < L; k++)
    end = fmax(end, t0 + (k + 1) * tbl + (L - k) * ar);
  return end;
}

static double ov_k = 0.0; /* the ideal GPU's overlap_slowdown */

/* dp x tp grid on one node of dp*tp ideal GPUs, m microbatches of 1 sample. */
static void run_case_ov(int L, int dp, int tp, int m_mb, double params, bool expect_comm_bound,
                       bool overlap)
{
  double B = 100.0, lat_us = 2.0; /* GB/s and us between GPUs of the node */
  hs_model_t m;
  fx_chain_model(&m, L, 1, 1e9, params, 0.0, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, dp * tp, B, lat_us, 10, 0, &err) == HS_OK);
  c.gpus.gpus[c.devices[0].gpu].overlap_slowdown = ov_k;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = dp;
  g.tp = tp;
  g.global_batch = dp * m_mb;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  double S = params / tp * 2.0;     /* bf16 gradient of one layer per TP rank */
  plan.bucket_bytes = S;            /* one bucket per layer */
  plan.practice.dp_overlap = overlap;
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double a = lat_us * 1e-6;
  double ar = 2.0 * (dp - 1) * (a + S / (dp * B * 1e9));
  double tfl = 1e-3 / tp, tbl = 2e-3 / tp; /* per layer: 1 and 2 GFLOP on 1 TFLOP/s, / tp */
  double f = L * tfl, b = L * tbl;
  double t0 = m_mb * f + (m_mb - 1) * b; /* 1F1B on one rank: F B F B ... */
  double sync_end = overlap ? closed_form(t0, L, tbl, ar) : t0 + b + L * ar;
  if (!overlap) {
    /* nothing to check about the overlap regime */
  } else if (expect_comm_bound) {
    CHECK(ar >= tbl * (1 + ov_k));
    CHECK_REL(sync_end, t0 + fmax(b, tbl + L * ar), 1e-12);
  } else {
    CHECK(ar < tbl);
    CHECK_REL(sync_end, t0 + b + ar, 1e-12);
    sync_end += (L - 1) * ov_k * ar / (1 + ov_k);
  }
  double opt = L * params / tp * 32.0 / 1000e9;
  CHECK_REL(rep.iteration_time_s, sync_end + opt, 1e-6);
  /* overlapped: strictly better than the serialized sync */
  if (overlap)
    CHECK(rep.iteration_time_s < t0 + b + L * ar + opt - 0.5 * tbl);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void run_case(int L, int dp, int tp, int m_mb, double params, bool expect_comm_bound)
{
  run_case_ov(L, dp, tp, m_mb, params, expect_comm_bound, true);
}

/* --dp-overlap off: every bucket after the flush, in series */
static void test_no_overlap(void)
{
  run_case_ov(8, 4, 1, 1, 100e6, true, false);
  run_case_ov(8, 4, 1, 3, 20e6, false, false);
  run_case_ov(6, 2, 2, 2, 100e6, true, false);
}

static void test_pure_dp_comm_bound(void)
{
  run_case(8, 4, 1, 1, 100e6, true);  /* AR 3 ms per 2 ms layer backward */
  run_case(8, 4, 1, 3, 100e6, true);  /* three microbatches: only the last overlaps */
  run_case(32, 2, 1, 1, 150e6, true); /* the 32 layers, one bucket each */
}

static void test_pure_dp_compute_bound(void)
{
  run_case(8, 4, 1, 2, 20e6, false); /* AR 0.6 ms per 2 ms layer: only the last is exposed */
}

static void test_tp_dp(void)
{
  run_case(6, 2, 2, 2, 100e6, true); /* TP ranks all-reduce their shards in parallel */
}

/* One bucket (bucket_bytes larger than the model) cannot start before the
 * whole backward: the serialized form stays exact. */
static void test_single_bucket_unchanged(void)
{
  hs_model_t m;
  fx_chain_model(&m, 4, 1, 1e9, 50e6, 0.0, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 4, 100, 2, 10, 0, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = 4;
  g.global_batch = 4;
  hs_plan_t plan;
  CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
  plan.bucket_bytes = 1e15;
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double S = 4 * 50e6 * 2.0;
  double ar = 2.0 * 3 * (2e-6 + S / (4 * 100e9));
  CHECK_REL(rep.iteration_time_s, 4e-3 + 8e-3 + ar + 4 * 50e6 * 32.0 / 1000e9, 1e-6);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* Compute slowed beside the buckets (k = 0.25, then k = 0.6): both
 * regimes, TP x DP, and the serialized sync (no compute beside it). */
static void test_contention(void)
{
  for (int i = 0; i < 2; i++) {
    ov_k = i == 0 ? 0.25 : 0.6;
    run_case(8, 4, 1, 2, 20e6, false);  /* AR 0.6 ms beside 2 ms layers: each + k AR/(1+k) */
    run_case(8, 4, 1, 1, 200e6, true);  /* AR 6 ms: hidden (> 2 ms x 1.6) */
    run_case(6, 2, 2, 2, 20e6, false);  /* TP 2: AR 0.2 ms beside 1 ms layers */
    run_case_ov(8, 4, 1, 3, 20e6, false, false);
  }
  ov_k = 0.0;
}

int main(void)
{
  HS_RUN(test_pure_dp_comm_bound);
  HS_RUN(test_pure_dp_compute_bound);
  HS_RUN(test_tp_dp);
  HS_RUN(test_single_bucket_unchanged);
  HS_RUN(test_no_overlap);
  HS_RUN(test_contention);
  HS_TEST_END();
}
