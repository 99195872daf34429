/*
 * hap_spmd.c - hap's SPMD programs for transformer blocks (docs/hap.md,
 * "Operator sharding of transformer blocks"): the operator shardings HAP's
 * synthesis produces on an attention or MLP block, expressed with what the
 * simulator runs, each with HAP's per-type load ratios.
 *
 * HAP's rules on the block's matmuls give these programs (hap.c's op-level
 * A* costs them one op at a time; here each is a whole-block pattern, which
 * the plan format and the simulator express as a stage's TP group):
 *  - column then row split of QKV/out and fc1/fc2 with one all-reduce per
 *    block and pass (the Megatron pattern: TP t over t GPUs of one node);
 *  - the same with the activations between blocks sharded by sequence
 *    (reduce-scatter + all-gather instead of the all-reduce: SP);
 *  - the batch split (data parallelism), with the gradient exchange as a
 *    padded reduce-scatter/all-gather (ZeRO 1-3, HAP's SFB-free sharded
 *    optimizer state) or an all-reduce (ZeRO 0);
 *  - the sequence split of attention (context parallelism: ring exchange of
 *    K and V) for sequences of at least HS_HAP_CP_MIN_SEQ tokens;
 *  - the expert split of MoE layers (expert parallelism: all-to-all).
 * Plus recomputation (none, selective, full) and the microbatch count,
 * which HAP leaves to its memory fallback (hap.c's fit_memory).
 *
 * Ratios. For one of these programs every sharded op's cost depends on the
 * ratios only through compute (its collectives are all-reduces, ring
 * exchanges and all-to-alls over groups of one type), so HAP's LP
 *     min sum_t max_c a_t r_c / F_c   s.t. sum_c n_c r_c = 1
 * has the closed-form optimum r_c proportional to F_c: every data-parallel
 * rank gets a share of each microbatch proportional to its speed, rounded
 * to whole samples (largest remainder, at least one) as a framework runs
 * it. HAP profiles F per device; here the profile is the estimator's time
 * of the whole model on the rank's TP group (memory-bound ops and TP
 * exchanges included), not its peak FLOP/s.
 *
 * Scoring as megatron's grid: every candidate is estimated with memory into
 * one pool per TP degree (the estimator ranks uneven splits across GPU
 * types less well than even grids, so each degree sends its best few to
 * the simulator); the caller simulates them.
 * Candidates: |practice| (<= 4 SP x ZeRO, x |C| x |E|) x |tp| x |b| x 3,
 * each O(devices + ops) to build and estimate.
 */
#include "hap_spmd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* As megatron's (search/megatron.c; Megatron-Core's guide: CP from 8K
 * tokens), so that on a homogeneous cluster the two spaces agree at pp 1. */
#define HS_HAP_CP_MIN_SEQ 8192
#define HS_HAP_CP_MIN_TOKENS 4096
#define HS_HAP_MAX_CP 32
#define HS_HAP_MAX_PR 128 /* 8 (SP x ZeRO) x 4 (C) x 4 (E) */

static int32_t model_experts(const hs_model_t *m)
{
  int32_t x = 0;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].kind == HS_OP_MOE_EXPERT)
      x = HS_MAX(x, m->ops[i].experts);
  return x > 1 ? x : 0;
}

/* The practice variants (as megatron's `practices`): the options', with SP
 * and/or sharded optimizer state (ZeRO-1, -2, -3: HAP's sharded gradient
 * exchange), each with context parallelism C and expert parallelism E.
 * Returns the count. O(1). */
static int32_t spmd_practices(const hs_model_t *m, const hs_practice_t *base,
                              hs_practice_t *pr, int32_t cap)
{
  int32_t n = 0;
  for (int sp = 0; sp < 2; sp++)
    for (int32_t z = base->zero_stage; z <= 3; z++) {
      if (sp && base->sequence_parallel)
        continue;
      if (n >= cap)
        break;
      hs_practice_t p = *base;
      p.sequence_parallel = base->sequence_parallel || sp;
      p.zero_stage = z;
      pr[n++] = p;
    }
  int32_t cps[8] = {1}, eps[8] = {1}, n_cp = 1, n_ep = 1;
  int64_t seq = m->seq_len;
  if (base->context_parallel <= 1 && seq >= HS_HAP_CP_MIN_SEQ)
    for (int32_t C = 2; C <= HS_HAP_MAX_CP && n_cp < 4 && seq / C >= HS_HAP_CP_MIN_TOKENS; C *= 2)
      if (seq % C == 0)
        cps[n_cp++] = C;
  int32_t experts = model_experts(m);
  if (base->expert_parallel <= 1)
    for (int32_t E = 2; E <= experts && n_ep < 4; E++)
      if (experts % E == 0)
        eps[n_ep++] = E;
  int32_t n_base = n;
  for (int32_t a = 0; a < n_cp; a++)
    for (int32_t b = 0; b < n_ep; b++) {
      if (a == 0 && b == 0)
        continue;
      for (int32_t k = 0; k < n_base && n < cap; k++) {
        if (eps[b] > 1 && pr[k].zero_stage >= 3)
          continue; /* as megatron: EP not with ZeRO-3 */
        hs_practice_t p = pr[k];
        p.context_parallel = cps[a];
        p.expert_parallel = eps[b];
        pr[n++] = p;
      }
    }
  return n;
}

/* HAP's ratios on a grid plan of dp pipelines (pp 1): pipeline i gets
 * round(total w_i / sum w) samples per microbatch (largest remainder, lowest
 * index on ties), w_i its measured throughput: HAP profiles each device's
 * speed, hetsim's profile is the estimator, so w_i = samples per second of
 * the whole model on its slowest TP group (hs_estimate_stage at total / dp
 * samples, recomputation rc) x its CP groups. With even=true or equal
 * weights total / dp each. False when a pipeline would get no sample, or
 * the split is even and dp does not divide total. Errors: estimator
 * failures. O(devices) (the estimator caches per GPU type). */
static hs_status_t weight_pipelines(hs_estimator_t *est, const hs_model_t *m, hs_plan_t *p,
                                    int64_t total, hs_recompute_t rc, bool even, bool *ok)
{
  int32_t dp = p->n_pipelines;
  double w[1024], sum = 0.0, lo = INFINITY, hi = 0.0;
  *ok = false;
  if (dp > (int32_t)HS_ARRAY_LEN(w) || total < dp)
    return HS_OK;
  double per = (double)total / dp;
  for (int32_t i = 0; i < dp && !even; i++) {
    const hs_plan_stage_t *s = &p->pipelines[i].stages[0];
    double rate = INFINITY;
    for (int32_t q = 0; q < s->n_replicas; q++) {
      hs_stage_cost_t sc;
      hs_status_t st = hs_estimate_stage(est, 0, (int32_t)m->n_ops, s->replicas[q].devices,
                                         s->replicas[q].n_devices, per, rc, &sc);
      if (st != HS_OK)
        return st;
      rate = HS_MIN(rate, per / HS_MAX(sc.fwd_s + sc.bwd_s, 1e-30));
    }
    w[i] = rate * s->n_replicas;
    sum += w[i];
    lo = HS_MIN(lo, w[i]);
    hi = HS_MAX(hi, w[i]);
  }
  if (even || !(hi > lo * (1.0 + 1e-9))) {
    if (total % dp)
      return HS_OK; /* equal speeds: an uneven split only waits on the largest */
    for (int32_t i = 0; i < dp; i++)
      p->pipelines[i].microbatch_size = (int32_t)(total / dp);
    *ok = true;
    return HS_OK;
  }
  int64_t given = 0;
  int32_t mbs[1024];
  double rem[1024];
  for (int32_t i = 0; i < dp; i++) {
    double x = (double)total * w[i] / sum;
    mbs[i] = (int32_t)floor(x);
    rem[i] = x - mbs[i];
    given += mbs[i];
  }
  while (given < total) {
    int32_t best = 0;
    for (int32_t i = 1; i < dp; i++)
      if (rem[i] > rem[best])
        best = i;
    mbs[best]++;
    rem[best] = -1.0;
    given++;
  }
  for (int32_t i = 0; i < dp; i++)
    if (mbs[i] < 1)
      return HS_OK;
  for (int32_t i = 0; i < dp; i++)
    p->pipelines[i].microbatch_size = mbs[i];
  *ok = true;
  return HS_OK;
}

/* Builds one candidate (tp, C from pr, dp pipelines, `total` samples per
 * microbatch over all of them, gb / total microbatches, recompute rc),
 * weights it and offers it to the pool with its memory-checked estimate. Skipped (reason in why[]): a grid that cannot
 * be built or does not fit. O(devices + ops). */
static hs_status_t offer_one(hs_estimator_t *est, const hs_model_t *m, const hs_cluster_t *c,
                             hs_dtype_t dt, int64_t gb, int32_t tp, int32_t dp, int64_t total,
                             hs_recompute_t rc, const hs_practice_t *pr, hs_cand_pool_t *pool,
                             uint64_t *scored, bool *fits, char *why, size_t why_n,
                             hs_error_t *err)
{
  *fits = false;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.pp = 1;
  g.dp = dp;
  g.microbatch_size = 1;
  g.global_batch = (int64_t)dp * (gb / total); /* gb / total microbatches */
  g.recompute = rc;
  g.practice.context_parallel = HS_MAX(pr->context_parallel, 1);
  hs_plan_t plan;
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t gs = hs_plan_grid(m, c, &g, &plan, &e2);
  if (gs == HS_ENOMEM)
    return hs_error_set(err, gs, "%s", e2.msg);
  if (gs != HS_OK) {
    snprintf(why, why_n, "%.200s", e2.msg);
    return HS_OK;
  }
  hs_strlcpy(plan.strategy, "hap", sizeof plan.strategy);
  plan.precision = dt;
  hs_plan_set_practice(&plan, pr);
  /* uneven samples across expert-parallel groups are not modelled: even there */
  bool ok = false;
  hs_estimator_set_practice(est, pr);
  hs_estimator_set_precision(est, dt);
  hs_status_t ws = weight_pipelines(est, m, &plan, total, rc, HS_MAX(pr->expert_parallel, 1) > 1, &ok);
  if (ws != HS_OK || !ok) {
    hs_plan_destroy(&plan);
    return ws;
  }
  hs_estimate_t es;
  hs_status_t st = hs_estimate_plan(est, &plan, false, &es, err);
  (*scored)++;
  if (st == HS_OK && pool->n == pool->cap && es.iteration_s >= pool->est_s[pool->n - 1]) {
    /* cannot enter the pool: no memory check needed, and more
     * recomputation cannot make it faster either */
    *fits = true;
    hs_plan_destroy(&plan);
    return HS_OK;
  }
  if (st == HS_OK)
    st = hs_estimate_plan(est, &plan, true, &es, err);
  if (st != HS_OK) {
    hs_plan_destroy(&plan);
    return st;
  }
  if (es.oom) {
    char b1[32], b2[32];
    snprintf(why, why_n, "out of memory: %s needed, %s on device %d",
             hs_fmt_bytes(es.max_memory_bytes, b1, sizeof b1),
             hs_fmt_bytes(hs_cluster_gpu(c, es.oom_device)->mem_bytes, b2, sizeof b2),
             es.oom_device);
    hs_plan_destroy(&plan);
    return HS_OK;
  }
  *fits = true;
  hs__cpool_offer(pool, &plan, es.iteration_s);
  return HS_OK;
}

/* Enumerates hap's block-level SPMD programs (file comment) over all of
 * c's devices and offers each to pools[log2 tp] (the last pool for larger
 * TP degrees). Practice variants only with
 * o->search_practice (else the options' practice, TP and recompute only).
 * *scored counts estimates. Errors: out of memory, estimator failures.
 * O(candidates x (devices + ops)). */
hs_status_t hs__hap_spmd_offer(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_opts_t *o,
                               hs_dtype_t dt, int64_t gb, hs_cand_pool_t *pools, int32_t n_pools,
                               uint64_t *scored, char *why, size_t why_n, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_estimator_t *est = NULL;
  hs_practice_t pr[HS_HAP_MAX_PR];
  int32_t n_pr = 1;
  pr[0] = o->practice;
  if (o->search_practice)
    n_pr = spmd_practices(m, &o->practice, pr, HS_HAP_MAX_PR);
  HS_CHECK(hs_estimator_new(m, c, dt, &est, err));
  hs_estimator_set_deadline(est, o->deadline_s);
  hs_estimator_set_practice(est, &o->practice);
  int32_t n = (int32_t)c->n_devices, max_tp = hs__max_tp(c);
  static const hs_recompute_t rcs[] = {HS_RECOMPUTE_NONE, HS_RECOMPUTE_SELECTIVE,
                                       HS_RECOMPUTE_FULL};
  for (int32_t k = 0; k < n_pr; k++)
    for (int32_t tp = 1; tp <= max_tp; tp *= 2) {
      if (n % tp || !hs_model_tp_ok(m, tp))
        continue;
      if (tp == 1 && pr[k].sequence_parallel && !o->practice.sequence_parallel)
        continue; /* nothing to split by sequence between TP ranks */
      int32_t C = HS_MAX(pr[k].context_parallel, 1), E = HS_MAX(pr[k].expert_parallel, 1);
      if ((n / tp) % C)
        continue;
      int32_t dp = n / tp / C;
      if (dp % E)
        continue;
      /* samples per microbatch over all ranks: dp to dp x max microbatch
       * size, dividing the batch (HAP's ratios need not split it evenly) */
      int64_t t_max = (int64_t)dp * HS_MAX(o->max_microbatch_size, 1);
      for (int64_t b = dp; b <= t_max; b++) {
        if (gb % b || gb / b > HS_SEARCH_MAX_MICROBATCHES)
          continue;
        /* none, then selective, then full recomputation, each only when the
         * lighter one does not fit: a plan that fits is not made faster by
         * recomputing more (the estimator charges selective recomputation
         * nothing under flash attention, so both would fill the pool twice) */
        for (int r = 0; r < (o->allow_recompute ? 3 : 1); r++) {
          if (hs__past(o->deadline_s) || hs_estimator_out_of_time(est))
            goto cleanup; /* what was offered so far is searched */
          if (rcs[r] == HS_RECOMPUTE_SELECTIVE && !o->search_practice)
            continue;
          int32_t lg = 0;
          while ((1 << (lg + 1)) <= tp && lg + 1 < n_pools)
            lg++;
          bool fits = false;
          HS_CHECK(offer_one(est, m, c, dt, gb, tp, dp, b, rcs[r], &pr[k], &pools[lg], scored,
                             &fits, why, why_n, err));
          if (fits)
            break;
        }
      }
    }
cleanup:
  hs_estimator_free(est);
  return st;
}
