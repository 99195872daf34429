/*
 * test_sim_parallel.c - ZeRO-3 per-block parameter gathers, context
 * parallelism (ring attention) and expert parallelism (MoE all-to-all)
 * against closed forms:
 *
 *  - ZeRO-3 / FSDP on n-way data parallelism over one node, a chain of L
 *    one-op blocks (forward c, backward b = 2c per block, gather g = ring
 *    all-gather of one block's 2-byte weights, (n-1)(a + 2P/(nB))): the
 *    first block's gather is exposed, each later one is prefetched beside
 *    the block before it, in forward and again in backward, so
 *        fwd = g + (L-1) max(c, g) + c,  bwd = g + (L-1) max(b, g) + b,
 *    then one reduce-scatter of all gradients (n-1)(a + 2LP/(nB)) and the
 *    optimizer step over LP/n parameters (32 B each at the memory
 *    bandwidth); both regimes (gather hidden, gather bound); with
 *    fsdp_param_dtype fp32 the gathers move 4P instead of 2P bytes; with
 *    fsdp_backward_prefetch post every backward gather is exposed,
 *    bwd = L (g + b); ZeRO-2 with fsdp_shard_grad_op (FSDP SHARD_GRAD_OP):
 *    the forward's gathers only, bwd = L b, the same reduce-scatter;
 *  - context parallelism C: activation memory exactly 1/C of C = 1's; the
 *    KV bytes each attention exchanges = 2 s (kv_heads / t) head_dim x 2 B x
 *    the group's samples, twice that in backward, one exchange per
 *    attention in each direction; the ring's all-gather over C ranks costs
 *    C-1 steps of one block, (C-1)(a + S/(C B));
 *  - expert parallelism E: all-to-all bytes per rank = s h topk 2 B x
 *    samples / t, (E-1)/E of them off-rank: a + (E-1)/E x bytes / B on one
 *    node,
 *    groups of E pipelines, expert weights 1/E of the device's weights,
 *    expert gradients reduced over dp/E holders with 1/E of the bytes;
 *  - bad input: CP not dividing the sequence or the stage's replicas, EP
 *    not dividing the experts or the pipelines, EP on a dense model, EP
 *    with ZeRO-3, plan JSON values out of range.
 */
#include "lower.h"
#include "sim_fixture.h"

static hs_transformer_cfg_t tcfg(int64_t l, int64_t h, int64_t a, int64_t kv, int64_t s,
                                 int64_t experts, int64_t topk)
{
  hs_transformer_cfg_t c;
  hs_transformer_cfg_init(&c);
  snprintf(c.name, sizeof c.name, "par-test");
  c.layers = l;
  c.hidden = h;
  c.heads = a;
  c.kv_heads = kv;
  c.ffn = 4 * h;
  c.vocab = 32000;
  c.seq_len = s;
  c.max_positions = s;
  c.experts = experts;
  c.topk = topk;
  c.act = experts > 1 ? HS_ACT_SWIGLU : HS_ACT_GELU;
  c.norm = HS_NORM_RMSNORM;
  c.dtype = HS_DTYPE_BF16;
  return c;
}

/* ---- ZeRO-3 gathers ------------------------------------------------------- */

/* wb: bytes per gathered parameter (fsdp_param_dtype: 2 = default bf16,
 * 4 = fp32); post: FSDP BACKWARD_POST, every backward gather exposed */
static void zero_case(int stage, int L, int n, double P, bool gather_bound, double wb, bool post)
{
  double B = 100.0, lat_us = 2.0;
  hs_model_t m;
  fx_chain_model(&m, L, 1, 1e9, P, 0.0, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, n, B, lat_us, 10, 0, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = n;
  g.global_batch = n;
  g.practice.zero_stage = stage;
  g.practice.fsdp_shard_grad_op = stage == 2;
  if (wb == 4.0) {
    g.practice.fsdp_param_dtype_set = true;
    g.practice.fsdp_param_dtype = HS_DTYPE_FP32;
  }
  g.practice.fsdp_backward_post = post;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  CHECK(plan.practice.fsdp_backward_post == post);
  plan.bucket_bytes = 1e15; /* one reduce-scatter after the backward */
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double a = lat_us * 1e-6, Bb = B * 1e9;
  double gth = (n - 1) * (a + wb * P / (n * Bb));
  double cf = 1e-3, cb = 2e-3; /* 1 and 2 GFLOP per block on 1 TFLOP/s */
  CHECK(gather_bound ? gth > cb : gth < cf);
  double fwd = gth + (L - 1) * fmax(cf, gth) + cf;
  double bwd = post ? L * (gth + cb) : gth + (L - 1) * fmax(cb, gth) + cb;
  if (stage == 2) /* SHARD_GRAD_OP: the forward's gathered weights kept */
    bwd = L * cb;
  /* gradients reduced in the precision's 2 B whatever the gather dtype */
  double rs = (n - 1) * (a + 2.0 * L * P / (n * Bb));
  double opt = L * P / n * 32.0 / 1000e9;
  CHECK_REL(rep.iteration_time_s, fwd + bwd + rs + opt, 1e-6);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void zero3_case(int L, int n, double P, bool gather_bound)
{
  zero_case(3, L, n, P, gather_bound, 2.0, false);
}

/* Overlap contention (sim/contention.h): compute beside a collective runs
 * at 1/(1+k) of its speed, so a block of c beside the next block's gather g
 * (both starting together) takes max(g, c + k min(c, g/(1+k))); the first
 * gather and the reduce-scatter run beside no compute. With contention off,
 * or k = 0, the result is bit-identical to the ideal-overlap one. */
static double zero3_contended_s(int L, int n, double P, double k, bool on)
{
  double B = 100.0, lat_us = 2.0;
  hs_model_t m;
  fx_chain_model(&m, L, 1, 1e9, P, 0.0, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, n, B, lat_us, 10, 0, &err) == HS_OK);
  c.gpus.gpus[c.devices[0].gpu].overlap_slowdown = k;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = n;
  g.global_batch = n;
  g.practice.zero_stage = 3;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  CHECK(plan.practice.overlap_contention); /* on by default */
  plan.practice.overlap_contention = on;
  plan.bucket_bytes = 1e15;
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double a = lat_us * 1e-6, Bb = B * 1e9;
  double gth = (n - 1) * (a + 2.0 * P / (n * Bb));
  double cf = 1e-3, cb = 2e-3;
  double ke = on ? k : 0.0;
  double sf = fmax(gth, cf + ke * fmin(cf, gth / (1 + ke)));
  double sb = fmax(gth, cb + ke * fmin(cb, gth / (1 + ke)));
  double fwd = gth + (L - 1) * sf + cf, bwd = gth + (L - 1) * sb + cb;
  double rs = (n - 1) * (a + 2.0 * L * P / (n * Bb));
  double opt = L * P / n * 32.0 / 1000e9;
  CHECK_REL(rep.iteration_time_s, fwd + bwd + rs + opt, 1e-6);
  double t = rep.iteration_time_s;
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return t;
}

static void test_zero3_contention(void)
{
  /* gather 0.306 ms beside 1 and 2 ms blocks: each block + k g/(1+k) */
  double t = zero3_contended_s(6, 4, 20e6, 0.25, true);
  double ideal = zero3_contended_s(6, 4, 20e6, 0.25, false);
  CHECK(t > ideal);
  /* off and k = 0 are the ideal-overlap simulator, bit for bit */
  CHECK(ideal == zero3_contended_s(6, 4, 20e6, 0.0, true));
  CHECK(ideal == zero3_contended_s(6, 4, 20e6, 0.0, false));
  /* gather 1.101 ms: forward blocks (1 ms) between c and c(1+k): c + k g/(1+k) */
  zero3_contended_s(6, 4, 73e6, 0.25, true);
  /* gather 3.006 ms outlasts every slowed block: the contention is hidden */
  CHECK(zero3_contended_s(6, 4, 200e6, 0.25, true) == zero3_contended_s(6, 4, 200e6, 0.25, false));
  zero3_contended_s(3, 8, 50e6, 0.9, true);
}

static void test_zero3_gathers(void)
{
  /* fp32 gathers: twice the bytes; BACKWARD_POST: no backward overlap */
  zero_case(3, 6, 4, 10e6, false, 4.0, false);
  zero_case(3, 6, 4, 20e6, false, 2.0, true);
  zero_case(3, 6, 4, 20e6, false, 4.0, true);
  zero_case(3, 6, 4, 200e6, true, 4.0, true);
  /* ZeRO-2 as FSDP SHARD_GRAD_OP: forward gathers only */
  zero_case(2, 6, 4, 20e6, false, 2.0, false);
  zero_case(2, 6, 4, 200e6, true, 4.0, false);
  zero3_case(6, 4, 20e6, false);  /* gather 0.6 ms beside 1 ms blocks: hidden */
  zero3_case(6, 4, 200e6, true);  /* gather 6 ms: every block waits for it */
  zero3_case(3, 8, 50e6, false);
}

/* ---- context parallelism ---------------------------------------------------- */

/* Grid plan tp x cp on one node of tp*cp*dp IdealGPUs. */
static void cp_plan(const hs_model_t *m, hs_cluster_t *c, int tp, int cp, int dp, hs_plan_t *plan)
{
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(c, 1, tp * cp * dp, 100, 2, 10, 0, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.dp = dp;
  g.microbatch_size = 2;
  g.global_batch = 2 * dp;
  g.practice.kernels.attention = HS_ATTENTION_FLASH;
  g.practice.context_parallel = cp;
  CHECK_MSG(hs_plan_grid(m, c, &g, plan, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(hs_plan_validate(plan, m, c, NULL, &err) == HS_OK, "%s", err.msg);
}

static void test_cp_memory(void)
{
  hs_transformer_cfg_t cfg = tcfg(2, 512, 8, 8, 1024, 0, 0);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
  for (int C = 2; C <= 4; C *= 2) {
    hs_cluster_t c1, cc;
    hs_plan_t p1, pc;
    cp_plan(&m, &c1, 2, 1, 1, &p1);
    cp_plan(&m, &cc, 2, C, 1, &pc);
    hs_mem_parts_t *a1 = calloc(c1.n_devices, sizeof *a1), *ac = calloc(cc.n_devices, sizeof *ac);
    double *t1 = calloc(c1.n_devices, sizeof *t1), *tc = calloc(cc.n_devices, sizeof *tc);
    CHECK(hs_memory_breakdown(&m, &c1, &p1, t1, a1, &err) == HS_OK);
    CHECK(hs_memory_breakdown(&m, &cc, &pc, tc, ac, &err) == HS_OK);
    for (size_t d = 0; d < cc.n_devices; d++) {
      CHECK_REL(ac[d].activations_bytes * C, a1[0].activations_bytes, 1e-12);
      CHECK_REL(ac[d].weights_bytes, a1[0].weights_bytes, 1e-12); /* weights replicated */
    }
    free(a1);
    free(ac);
    free(t1);
    free(tc);
    hs_plan_destroy(&p1);
    hs_plan_destroy(&pc);
    hs_cluster_destroy(&c1);
    hs_cluster_destroy(&cc);
  }
  hs_model_destroy(&m);
}

static void test_cp_ring_bytes(void)
{
  /* GQA: 16 heads, 4 KV heads, head_dim 64; tp 2 keeps 2 KV heads per rank */
  int64_t l = 2, h = 1024, a = 16, kv = 4, s = 2048;
  int tp = 2, C = 4, mbs = 2;
  hs_transformer_cfg_t cfg = tcfg(l, h, a, kv, s, 0, 0);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
  hs_cluster_t c;
  hs_plan_t plan;
  cp_plan(&m, &c, tp, C, 1, &plan);
  hs_topology_t *topo = NULL;
  CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
  hs_lowered_t low;
  CHECK_MSG(hs__lower(&m, &c, topo, &plan, &low, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(low.n_execs, C);
  double kv_bytes = 2.0 * s * (double)(kv / tp) * (double)(h / a) * 2.0 * mbs;
  for (int32_t x = 0; x < low.n_execs; x++) {
    const hs_exec_t *ex = &low.execs[x];
    CHECK(ex->cp_group >= 0);
    CHECK_EQ_INT(low.groups[ex->cp_group].n, C);
    CHECK_EQ_INT(low.groups[ex->cp_group].tp, tp);
    CHECK_REL(ex->samples * C, (double)mbs, 1e-12);
    for (int ph = 0; ph < 2; ph++) {
      const hs_tmpl_t *t = &ex->tmpl[ph];
      int sides = 0;
      for (int32_t k = 0; k < t->n; k++)
        if (t->segs[k].side_bytes > 0) {
          sides++;
          CHECK(t->segs[k].side_group == ex->cp_group && t->segs[k].side_op == HS_COLL_ALLGATHER);
          CHECK_REL(t->segs[k].side_bytes, (ph ? 2.0 : 1.0) * kv_bytes, 1e-12);
        }
      CHECK_EQ_INT(sides, l); /* one exchange per attention */
    }
  }
  /* the ring: C-1 steps of one block each over the intra-node links */
  const hs_group_t *gr = &low.groups[low.execs[0].cp_group];
  hs_coll_t cc = {.op = HS_COLL_ALLGATHER, .devices = gr->devices, .n = gr->n, .bytes = kv_bytes};
  CHECK_REL(hs_coll_estimate_s(topo, &cc), (C - 1) * (2e-6 + kv_bytes / C / 100e9), 1e-9);
  hs__lowered_destroy(&low);
  hs_topology_free(topo);
  /* and it simulates, every device busy */
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  CHECK(rep.iteration_time_s > 0 && rep.n_devices == tp * C);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* ---- expert parallelism ----------------------------------------------------- */

static void test_ep(void)
{
  int64_t l = 2, h = 512, a = 8, s = 256, experts = 8, topk = 2;
  int tp = 2, dp = 4, E = 2, mbs = 2;
  hs_transformer_cfg_t cfg = tcfg(l, h, a, a, s, experts, topk);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, tp * dp, 100, 2, 10, 0, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.dp = dp;
  g.microbatch_size = mbs;
  g.global_batch = mbs * dp;
  g.practice.expert_parallel = E;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(hs_plan_validate(&plan, &m, &c, NULL, &err) == HS_OK, "%s", err.msg);
  hs_topology_t *topo = NULL;
  CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
  hs_lowered_t low;
  CHECK_MSG(hs__lower(&m, &c, topo, &plan, &low, &err) == HS_OK, "%s", err.msg);
  double a2a = (double)s * h * topk * 2.0 * mbs / tp;
  double expert_params = 0.0, other_params = 0.0;
  for (size_t i = 0; i < m.n_ops; i++) {
    double div = m.ops[i].tp_split == HS_TP_REPLICATE ? 1.0 : tp;
    if (m.ops[i].kind == HS_OP_MOE_EXPERT)
      expert_params += m.ops[i].params / div;
    else
      other_params += m.ops[i].params / div;
  }
  for (int32_t x = 0; x < low.n_execs; x++) {
    const hs_exec_t *ex = &low.execs[x];
    const hs_group_t *gr = &low.groups[ex->ep_group];
    CHECK_EQ_INT(gr->n, E);
    for (int32_t k = 0; k < E; k++) /* E consecutive pipelines */
      CHECK_EQ_INT(low.execs[gr->execs[k]].pipeline, ex->pipeline - ex->pipeline % E + k);
    for (int ph = 0; ph < 2; ph++) {
      const hs_tmpl_t *t = &ex->tmpl[ph];
      int n = 0;
      for (int32_t k = 0; k < t->n; k++)
        if (t->segs[k].group == ex->ep_group) {
          n++;
          CHECK(t->segs[k].coll_op == HS_COLL_ALLTOALL);
          CHECK_REL(t->segs[k].coll_bytes, a2a, 1e-12);
        }
      CHECK_EQ_INT(n, 2 * l); /* dispatch and combine per MoE block */
    }
    CHECK_REL(ex->params_per_device, other_params + expert_params / E, 1e-12);
  }
  /* expert gradients: reduced over the dp/E holders of the same experts */
  int expert_buckets = 0;
  for (int32_t b = 0; b < low.n_buckets; b++) {
    const hs_bucket_t *bk = &low.buckets[b];
    if (m.ops[bk->op_first].kind != HS_OP_MOE_EXPERT)
      continue;
    expert_buckets++;
    CHECK_EQ_INT(bk->n_holders, dp / E);
    CHECK_REL(bk->bytes, m.ops[bk->op_first].params / tp / E * 2.0, 1e-12);
    for (int32_t k = 0; k < bk->n_holders; k++)
      CHECK_EQ_INT(low.execs[bk->holders[k]].pipeline % E, low.execs[bk->holders[0]].pipeline % E);
  }
  CHECK_EQ_INT(expert_buckets, (int)l * E);
  /* on the wire: every rank sends (E-1)/E of its buffer, all pairs at once
   * over its own link to the node switch */
  const hs_group_t *eg = &low.groups[low.execs[0].ep_group];
  hs_coll_t cc = {.op = HS_COLL_ALLTOALL, .devices = eg->devices, .n = eg->n, .bytes = a2a};
  CHECK_REL(hs_coll_estimate_s(topo, &cc), 2e-6 + a2a * (E - 1) / E / 100e9, 1e-9);
  hs__lowered_destroy(&low);
  hs_topology_free(topo);
  /* memory: the expert weights are 1/E */
  hs_mem_parts_t *parts = calloc(c.n_devices, sizeof *parts);
  double *tot = calloc(c.n_devices, sizeof *tot);
  CHECK(hs_memory_breakdown(&m, &c, &plan, tot, parts, &err) == HS_OK);
  CHECK_REL(parts[0].weights_bytes, (other_params + expert_params / E) * 2.0, 1e-9);
  free(parts);
  free(tot);
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  CHECK(rep.iteration_time_s > 0);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* ---- bad input ------------------------------------------------------------- */

static void expect_refused(const hs_model_t *m, int tp, int dp, int cp, int ep, int zero, const char *needle)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 16, 100, 2, 10, 0, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.dp = dp;
  g.global_batch = dp;
  g.practice.context_parallel = cp;
  g.practice.expert_parallel = ep;
  g.practice.zero_stage = zero;
  hs_plan_t plan;
  hs_status_t st = hs_plan_grid(m, &c, &g, &plan, &err);
  if (st == HS_OK)
    st = hs_plan_validate(&plan, m, &c, NULL, &err);
  CHECK_MSG(st != HS_OK, "accepted: %s", needle);
  CHECK_CONTAINS(err.msg, needle);
  if (st == HS_OK || plan.pipelines)
    hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
}

static void test_bad_input(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_transformer_cfg_t dense = tcfg(2, 512, 8, 8, 1000, 0, 0);
  hs_transformer_cfg_t moe = tcfg(2, 512, 8, 8, 256, 6, 2);
  hs_model_t md, mm;
  CHECK(hs_model_from_transformer(&dense, &md, &err) == HS_OK);
  CHECK(hs_model_from_transformer(&moe, &mm, &err) == HS_OK);
  expect_refused(&md, 1, 1, 3, 1, 0, "context_parallel (--context-parallel): 3 does not divide the sequence length 1000");
  expect_refused(&md, 1, 2, 1, 2, 0, "expert_parallel (--expert-parallel): 2, but model par-test has no MoE experts");
  expect_refused(&mm, 1, 4, 1, 4, 0, "expert_parallel (--expert-parallel): 4 does not divide the model's 6 experts");
  expect_refused(&mm, 1, 3, 1, 2, 0, "expert_parallel (--expert-parallel): 2 does not divide the 3 pipelines");
  expect_refused(&mm, 1, 4, 1, 2, 3, "with zero_stage 3: not modelled");
  expect_refused(&md, 2, 2, 8, 1, 0, "tp x pp x dp x cp = 2 x 1 x 2 x 8 = 32 devices, but cluster fixture has 16");
  /* a plan file whose stage has 3 replicas under context_parallel 2 */
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, 16, 100, 2, 10, 0, &err) == HS_OK);
  char json[2048];
  snprintf(json, sizeof json,
           "{\"context_parallel\": 2, \"pipelines\": [{\"microbatch_size\": 3, \"microbatches\": 1,"
           " \"stages\": [{\"ops\": [0, %zu], \"replicas\": [{\"devices\": [0]}, {\"devices\": [1]},"
           " {\"devices\": [2]}]}]}]}",
           md.n_ops);
  hs_plan_t p;
  CHECK_MSG(hs_plan_parse(json, "cp.json", &p, &err) == HS_OK, "%s", err.msg);
  CHECK(hs_plan_validate(&p, &md, &c, "cp.json", &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "cp.json: pipelines[0].stages[0].replicas: 3 replicas do not form groups of context_parallel = 2");
  hs_plan_destroy(&p);
  snprintf(json, sizeof json, "{\"expert_parallel\": 0, \"pipelines\": []}");
  hs_error_init(&err);
  CHECK(hs_plan_parse(json, "ep.json", &p, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "expert_parallel");
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&md);
  hs_model_destroy(&mm);
}

int main(void)
{
  HS_RUN(test_zero3_gathers);
  HS_RUN(test_zero3_contention);
  HS_RUN(test_cp_memory);
  HS_RUN(test_cp_ring_bytes);
  HS_RUN(test_ep);
  HS_RUN(test_bad_input);
  HS_TEST_END();
}
