/*
 * test_sim_tied.c - tied word embeddings across pipeline stages.
 *
 * When the LM head and the word embedding it is tied to sit on different
 * pipeline stages, Megatron-LM keeps a copy of the embedding on the head's
 * stage and all-reduces the two gradients after backward. The independent
 * truths here:
 *
 *  - memory: the head's stage then holds exactly what an untied model's
 *    head stage holds (its own v x h weights), and on one stage the tied
 *    model holds exactly v x h x 16 bytes less than the untied one;
 *  - time: the sync is an all-reduce of v x h x 2 bytes between the two
 *    stages: over a 1 GB/s NIC on each of two single-GPU nodes, a ring over
 *    n = 2 costs S / B (test_coll_formulas), so the tied model's iteration
 *    is longer by that, within the optimizer step's few milliseconds; with
 *    two replicas per stage the pairs run in parallel on disjoint NICs, so
 *    the cost is the same, not twice;
 *  - the planners' estimator agrees with the simulator's memory rule and
 *    charges the same sync.
 */
#include "estimate.h"
#include "hs_sim.h"
#include "sim_fixture.h"

#include <math.h>

#define VOCAB 50000
#define HIDDEN 1024
#define NIC_GBPS 1.0

static void build(hs_model_t *m, bool tied)
{
  hs_transformer_cfg_t cfg;
  hs_transformer_cfg_init(&cfg);
  snprintf(cfg.name, sizeof cfg.name, "%s", tied ? "tied" : "untied");
  cfg.arch = HS_ARCH_DECODER;
  cfg.layers = 4;
  cfg.hidden = HIDDEN;
  cfg.heads = 16;
  cfg.kv_heads = 16;
  cfg.ffn = 4 * HIDDEN;
  cfg.vocab = VOCAB;
  cfg.seq_len = 128;
  cfg.max_positions = 128;
  cfg.tied_embeddings = tied;
  cfg.lm_head = true;
  cfg.dtype = HS_DTYPE_BF16;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_model_from_transformer(&cfg, m, &err) == HS_OK, "%s", err.msg);
}

/* Simulates a tp1 grid over `nodes` single-GPU nodes with 1 GB/s NICs. */
static void run(bool tied, int nodes, int pp, int dp, hs_report_t *rep)
{
  hs_model_t m;
  build(&m, tied);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(fx_cluster(&c, nodes, 1, 100, 0, NIC_GBPS, 0, &err) == HS_OK, "%s", err.msg);
  hs_grid_opts_t o;
  hs_grid_opts_init(&o);
  o.tp = 1;
  o.pp = pp;
  o.dp = dp;
  o.microbatch_size = 1;
  o.global_batch = 4 * dp;
  hs_plan_t p;
  hs_plan_init(&p);
  CHECK_MSG(hs_plan_grid(&m, &c, &o, &p, &err) == HS_OK, "%s", err.msg);
  hs_report_init(rep);
  CHECK_MSG(hs_simulate(&m, &c, &p, NULL, rep, &err) == HS_OK, "%s", err.msg);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* The tied model's head stage holds what the untied model's does; its
 * embedding stage is unchanged. */
static void test_memory_split(void)
{
  hs_report_t t, u;
  run(true, 2, 2, 1, &t);
  run(false, 2, 2, 1, &u);
  CHECK_EQ_INT(t.n_device_mem, 2);
  CHECK_REL(t.device_peak_memory_bytes[0], u.device_peak_memory_bytes[0], 1e-12);
  CHECK_REL(t.device_peak_memory_bytes[1], u.device_peak_memory_bytes[1], 1e-12);
  hs_report_destroy(&t);
  hs_report_destroy(&u);
}

/* On one stage nothing is copied: tied saves v x h x 16 bytes of state. */
static void test_memory_one_stage(void)
{
  hs_report_t t, u;
  run(true, 1, 1, 1, &t);
  run(false, 1, 1, 1, &u);
  CHECK_REL(u.device_peak_memory_bytes[0] - t.device_peak_memory_bytes[0],
            (double)VOCAB * HIDDEN * 16.0, 1e-9);
  hs_report_destroy(&t);
  hs_report_destroy(&u);
}

/* The sync costs S / B with S = v x h x 2 bytes, once per iteration, and
 * pairs of replicas sync in parallel. */
static void test_sync_time(void)
{
  double want = (double)VOCAB * HIDDEN * 2.0 / (NIC_GBPS * 1e9); /* 0.1024 s */
  for (int dp = 1; dp <= 2; dp++) {
    hs_report_t t, u;
    run(true, 2 * dp, 2, dp, &t);
    run(false, 2 * dp, 2, dp, &u);
    double delta = t.iteration_time_s - u.iteration_time_s;
    fprintf(stderr, "  dp %d: tied %.4f s, untied %.4f s, sync %.4f s (S/B %.4f s)\n", dp,
            t.iteration_time_s, u.iteration_time_s, delta, want);
    CHECK_MSG(fabs(delta - want) < 0.03 * want, "dp %d: sync took %.4f s, want %.4f s", dp, delta,
              want);
    hs_report_destroy(&t);
    hs_report_destroy(&u);
  }
}

/* The estimator's stage parameters include the copy exactly when the stage
 * has the head and not the embedding. */
static void test_estimator(void)
{
  hs_model_t t, u;
  build(&t, true);
  build(&u, false);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(fx_cluster(&c, 1, 1, 100, 0, NIC_GBPS, 0, &err) == HS_OK, "%s", err.msg);
  hs_estimator_t *et = NULL, *eu = NULL;
  CHECK(hs_estimator_new(&t, &c, HS_DTYPE_BF16, &et, &err) == HS_OK);
  CHECK(hs_estimator_new(&u, &c, HS_DTYPE_BF16, &eu, &err) == HS_OK);
  int32_t dev = 0, n = (int32_t)t.n_ops, half = n / 2;
  hs_stage_cost_t st, su;
  /* second half: the head without the embedding */
  CHECK(hs_estimate_stage(et, half, n, &dev, 1, 1.0, HS_RECOMPUTE_NONE, &st) == HS_OK);
  CHECK(hs_estimate_stage(eu, half, n, &dev, 1, 1.0, HS_RECOMPUTE_NONE, &su) == HS_OK);
  CHECK_REL(st.params_per_device, su.params_per_device, 1e-12);
  /* first half: the embedding, the same in both */
  CHECK(hs_estimate_stage(et, 0, half, &dev, 1, 1.0, HS_RECOMPUTE_NONE, &st) == HS_OK);
  CHECK(hs_estimate_stage(eu, 0, half, &dev, 1, 1.0, HS_RECOMPUTE_NONE, &su) == HS_OK);
  CHECK_REL(st.params_per_device, su.params_per_device, 1e-12);
  /* everything: tied holds v x h fewer */
  CHECK(hs_estimate_stage(et, 0, n, &dev, 1, 1.0, HS_RECOMPUTE_NONE, &st) == HS_OK);
  CHECK(hs_estimate_stage(eu, 0, n, &dev, 1, 1.0, HS_RECOMPUTE_NONE, &su) == HS_OK);
  CHECK_REL(su.params_per_device - st.params_per_device, (double)VOCAB * HIDDEN, 1e-12);
  hs_estimator_free(et);
  hs_estimator_free(eu);
  hs_cluster_destroy(&c);
  hs_model_destroy(&t);
  hs_model_destroy(&u);
}

/* The planners' estimator charges the same sync: a tied pp2 plan over the
 * two 1 GB/s nodes is estimated S/B longer than the untied one (within the
 * estimator's all-reduce model, 10%). */
static void test_estimator_sync(void)
{
  double want = (double)VOCAB * HIDDEN * 2.0 / (NIC_GBPS * 1e9);
  double iter[2];
  for (int tied = 0; tied < 2; tied++) {
    hs_model_t m;
    build(&m, tied);
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK_MSG(fx_cluster(&c, 2, 1, 100, 0, NIC_GBPS, 0, &err) == HS_OK, "%s", err.msg);
    hs_grid_opts_t o;
    hs_grid_opts_init(&o);
    o.pp = 2;
    o.microbatch_size = 1;
    o.global_batch = 4;
    hs_plan_t p;
    hs_plan_init(&p);
    CHECK_MSG(hs_plan_grid(&m, &c, &o, &p, &err) == HS_OK, "%s", err.msg);
    hs_estimator_t *e = NULL;
    CHECK(hs_estimator_new(&m, &c, HS_DTYPE_BF16, &e, &err) == HS_OK);
    hs_estimate_t est;
    CHECK_MSG(e && hs_estimate_plan(e, &p, false, &est, &err) == HS_OK, "%s", err.msg);
    iter[tied] = est.iteration_s;
    hs_estimator_free(e);
    hs_plan_destroy(&p);
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
  fprintf(stderr, "  estimate: tied %.4f s, untied %.4f s, sync %.4f s (S/B %.4f s)\n", iter[1],
          iter[0], iter[1] - iter[0], want);
  CHECK_MSG(fabs(iter[1] - iter[0] - want) < 0.1 * want, "estimated sync %.4f s, want %.4f s",
            iter[1] - iter[0], want);
}

int main(void)
{
  HS_RUN(test_memory_split);
  HS_RUN(test_memory_one_stage);
  HS_RUN(test_sync_time);
  HS_RUN(test_estimator);
  HS_RUN(test_estimator_sync);
  HS_TEST_END();
}
