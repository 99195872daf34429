/*
 * test_sim_spmd.c - HAP-style SPMD stages in the simulator against closed
 * forms. Two ideal GPUs (1 TFLOP/s, 1000 GB/s memory) on one node joined at
 * B = 100 GB/s without latency; a chain of two GEMMs of 1e9 FLOPs per
 * sample forward (1 ms), 2e9 backward; one stage of two single-device
 * replicas with shares 1/2 and a microbatch of 4 samples, so each device
 * computes 2 samples: 4 ms forward and 8 ms backward per iteration.
 *
 * Ring collectives over n = 2 ranks of a tensor of S bytes cost S/(2B)
 * (all-gather, reduce-scatter) and S/B (all-reduce) (test_coll_formulas).
 */
#include "hs_sim.h"
#include "sim_fixture.h"

#include <math.h>

#define X_BYTES 50e6 /* activation per sample */
#define B_BPS 100e9

static void two_replica_plan(hs_plan_t *p, int n_shards)
{
  hs_plan_init(p);
  hs_strlcpy(p->schedule, "gpipe", sizeof p->schedule);
  p->precision = HS_DTYPE_BF16;
  p->chunks = 1;
  p->bucket_bytes = 100e6;
  CHECK(hs_plan_alloc_pipelines(p, 1) == HS_OK);
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  pl->microbatch_size = 4;
  pl->n_microbatches = 1;
  CHECK(hs_plan_alloc_stages(pl, 1) == HS_OK);
  hs_plan_stage_t *st = &pl->stages[0];
  st->op_first = 0;
  st->op_last = 2;
  CHECK(hs_plan_alloc_replicas(st, 2) == HS_OK);
  for (int32_t d = 0; d < 2; d++) {
    CHECK(hs_plan_replica_set_devices(&st->replicas[d], &d, 1) == HS_OK);
    st->replicas[d].share = 0.5;
  }
  if (n_shards > 0) {
    p->shards = calloc((size_t)n_shards, sizeof *p->shards);
    p->n_shards = n_shards;
  }
}

static double run(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p, hs_report_t *r)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_simulate(m, c, p, NULL, r, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  return st == HS_OK ? r->iteration_time_s : NAN;
}

/* op 1 column-split (out), its input all-gathered: forward all-gather of
 * the 4-sample input, backward all-reduce of the input gradient (partial
 * sums) and the reduce-scatter that undoes the gather. */
static void test_spmd_collectives_closed_form(void)
{
  hs_model_t m;
  fx_chain_model(&m, 1, 2, 1e9, 0.0, X_BYTES, 0.0);
  for (size_t i = 0; i < m.n_ops; i++)
    m.ops[i].shardable = HS_SHARD_BATCH | HS_SHARD_OUT | HS_SHARD_IN;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 2, B_BPS / 1e9, 0, 10, 0, &err) == HS_OK);
  hs_plan_t p;
  two_replica_plan(&p, 1);
  p.shards[0] = (hs_plan_shard_t){.op = 1, .dim = HS_SHARD_OUT, .collective = HS_COLL_ALLGATHER};
  hs_report_t r;
  double t = run(&m, &c, &p, &r);
  double S = 4 * X_BYTES;
  double want = 4e-3 + 8e-3 + S / (2 * B_BPS) + S / B_BPS + S / (2 * B_BPS);
  CHECK_MSG(fabs(t - want) < 2e-6, "spmd iteration %.9f s, closed form %.9f s", t, want);
  hs_report_destroy(&r);
  /* the same plan without sharding: data parallel, no collectives (no params) */
  hs_plan_t q;
  two_replica_plan(&q, 0);
  double t0 = run(&m, &c, &q, &r);
  CHECK_MSG(fabs(t0 - 12e-3) < 2e-6, "dp iteration %.9f s, want 0.012", t0);
  hs_report_destroy(&r);
  hs_plan_destroy(&p);
  hs_plan_destroy(&q);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* Sharded parameters are each device's own slice: no gradient all-reduce,
 * half the optimizer work and half the weight state per device. */
static void test_spmd_sharded_params(void)
{
  const double P = 2e8; /* params per op */
  hs_model_t m;
  fx_chain_model(&m, 1, 2, 1e9, P, 1.0, 0.0);
  for (size_t i = 0; i < m.n_ops; i++)
    m.ops[i].shardable = HS_SHARD_BATCH | HS_SHARD_OUT | HS_SHARD_IN;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 2, B_BPS / 1e9, 0, 10, 0, &err) == HS_OK);
  hs_plan_t dp, sp;
  two_replica_plan(&dp, 0);
  two_replica_plan(&sp, 2);
  for (int k = 0; k < 2; k++)
    sp.shards[k] = (hs_plan_shard_t){.op = k, .dim = HS_SHARD_IN, .collective = HS_COLL__COUNT};
  hs_report_t rd, rs;
  double td = run(&m, &c, &dp, &rd), ts = run(&m, &c, &sp, &rs);
  /* SPMD: compute + the optimizer over P/2 per op x 2 ops at 32 B/param
   * through 1000 GB/s, nothing else (row split: no backward exchange) */
  double want = 12e-3 + 2 * (P / 2) * 32 / 1e12;
  CHECK_MSG(fabs(ts - want) < 2e-6, "sharded params: %.9f s, closed form %.9f s", ts, want);
  /* data parallel pays a gradient all-reduce of 2 P bf16 grads (some hidden
   * behind backward) and the full optimizer */
  CHECK_MSG(td > ts + 2 * (P / 2) * 32 / 1e12, "dp %.6f s vs spmd %.6f s", td, ts);
  /* weight state per device: 16 B/param, half the params on each device */
  double md[2], ms[2];
  CHECK(hs_memory_per_device(&m, &c, &dp, md, &err) == HS_OK);
  CHECK(hs_memory_per_device(&m, &c, &sp, ms, &err) == HS_OK);
  for (int d = 0; d < 2; d++)
    CHECK_MSG(fabs((md[d] - ms[d]) - 16.0 * P) < 1.0, "device %d: dp %.0f B, spmd %.0f B", d, md[d],
              ms[d]);
  hs_report_destroy(&rd);
  hs_report_destroy(&rs);
  hs_plan_destroy(&dp);
  hs_plan_destroy(&sp);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_spmd_collectives_closed_form);
  HS_RUN(test_spmd_sharded_params);
  HS_TEST_END();
}
