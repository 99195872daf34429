/*
 * autohet_practice.c - what autohet does with its simulated finalists: the
 * variants of the best plan (ZeRO stage, sequence parallelism, async
 * sends, recomputation) and the practice transforms of the finalists and
 * kept sources (context and expert parallelism, interleaving), estimated,
 * then the best few simulated.
 *
 * Invariants: a variant or transform replaces the pool's best only when it
 * fits and simulates faster; the estimator's practice is the planner's base
 * practice on return.
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The context- and expert-parallel degrees the transforms try (megatron's
 * rules, search/megatron.c practices()): C = 1, then with practice search
 * and the options' C at 1, powers of two dividing the sequence from
 * X_CP_MIN_SEQ tokens with at least X_CP_MIN_TOKENS per rank; E = 1, then
 * for an MoE model every divisor >= 2 of the experts (up to 8 values).
 * O(ops). */
void hs__autohet_practice_degrees(autohet_t *a)
{
  a->cps[0] = a->eps[0] = 1;
  a->n_cp = a->n_ep = 1;
  if (!a->o.search_practice)
    return;
  int64_t seq = a->m->seq_len;
  if (a->o.practice.context_parallel <= 1 && seq >= X_CP_MIN_SEQ)
    for (int32_t C = 2; C <= X_MAX_CP && a->n_cp < 8 && seq / C >= X_CP_MIN_TOKENS; C *= 2)
      if (seq % C == 0)
        a->cps[a->n_cp++] = C;
  int32_t experts = 0;
  for (size_t i = 0; i < a->m->n_ops; i++)
    if (a->m->ops[i].kind == HS_OP_MOE_EXPERT)
      experts = HS_MAX(experts, a->m->ops[i].experts);
  if (a->o.practice.expert_parallel <= 1)
    for (int32_t E = 2; E <= experts && a->n_ep < 8; E++)
      if (experts % E == 0)
        a->eps[a->n_ep++] = E;
}

/* Whether every pipeline of p is one hetero-1f1b stage, without chunks
 * or an explicit order, all with one warm-up, 0 or the rule's (0 for one
 * stage): its order is 1f1b's (FBFB..., sim/sched.c), it has no pipeline
 * sends, so async sends change nothing, and ZeRO-3's gather groups (which
 * compare warm-ups across pipelines, sim/lower_grad.c) form alike.
 * O(pipelines). */
static bool one_stage_hetero(const hs_plan_t *p)
{
  if (strcmp(p->schedule, "hetero-1f1b") != 0 || p->chunks > 1 || p->n_pipelines < 1)
    return false;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    if (pl->n_stages != 1 || pl->stages[0].order || pl->stages[0].warmup > 0 ||
        pl->stages[0].warmup != p->pipelines[0].stages[0].warmup)
      return false;
  }
  return true;
}

/* Whether a twin of v simulated before shows v cannot beat the pool's
 * best. v itself in a->oom_sims runs out of memory again. A twin is v
 * with the simulator's timeline unchanged: ZeRO-1 for ZeRO-2 without
 * FSDP's SHARD_GRAD_OP (the timeline tells them apart only under it:
 * sim/lower.c's zero3; the optimizer's 1/n from stage 1, the gathers from
 * stage 3; ZeRO-2 shards gradient memory alone), blocking 1f1b for
 * one-stage hetero-1f1b pipelines (one_stage_hetero), either or both, and
 * no recomputation for a selective one that recomputes nothing
 * (hs__plan_canon_timeline). A twin in a->sims or a->oom_sims (an
 * out-of-memory run still simulates the whole timeline) at a time >= the
 * best: v simulates to that time or runs out of memory, and either way
 * cannot beat it. The variants try ZeRO-1 before ZeRO-2, blocking before
 * async and the plan itself before its recomputation, so twins come
 * first. HS_ENOMEM only. O(plan size x memo entries). */
static hs_status_t twin_no_better(autohet_t *a, const hs_plan_t *v, bool *no_better)
{
  double t = INFINITY;
  *no_better = hs__sim_memo_get(&a->oom_sims, v, &t);
  bool z2 = v->practice.zero_stage == 2 && !v->practice.fsdp_shard_grad_op;
  bool one = one_stage_hetero(v);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  for (int32_t mask = 0; mask < 4 && !*no_better; mask++) {
    if (((mask & 1) && !z2) || ((mask & 2) && !one))
      continue;
    hs_plan_t twin;
    if (hs_plan_copy(v, &twin, &e2) != HS_OK)
      return HS_ENOMEM;
    if (mask & 1)
      twin.practice.zero_stage = 1;
    if (mask & 2) {
      hs_strlcpy(twin.schedule, "1f1b", sizeof twin.schedule);
      twin.async_send = false;
      for (int32_t i = 0; i < twin.n_pipelines; i++)
        twin.pipelines[i].stages[0].warmup = -1;
    }
    hs__plan_canon_timeline(a->m, &twin);
    *no_better = !hs__plan_same(&twin, v) &&
                 (hs__sim_memo_get(&a->sims, &twin, &t) ||
                  hs__sim_memo_get(&a->oom_sims, &twin, &t)) &&
                 t >= a->pool.best_sim_s;
    hs_plan_destroy(&twin);
  }
  return HS_OK;
}

/* Variant k of the best simulated plan (pool.best): ZeRO stage, sequence
 * parallelism and schedule set absolutely from k, so that after all
 * n_var of them the plan is the best of that grid for its layout; then
 * (k = n_var, n_var + 1, with practice search) every stage's recomputation
 * selective, then none (the MILP's classes are none and full).
 * Simulates it (unless its estimate is past VAR_EST_SLACK x the best's,
 * a->sims knows its time, or it cannot be faster: twin_no_better) and
 * keeps it when it fits and is faster.
 * O(one simulation). */
hs_status_t hs__autohet_variant_step(autohet_t *a, int32_t k, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_cand_pool_t *p = &a->pool;
  hs_plan_t v;
  hs_plan_init(&v);
  hs_report_t rep;
  hs_report_init(&rep);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  const hs_plan_t *cur = &p->plans[p->best];
  if (k >= a->n_var) {
    hs_recompute_t rc = k == a->n_var ? HS_RECOMPUTE_SELECTIVE : HS_RECOMPUTE_NONE;
    bool same = true;
    for (int32_t i = 0; i < cur->n_pipelines; i++)
      for (int32_t s = 0; s < cur->pipelines[i].n_stages; s++)
        same = same && cur->pipelines[i].stages[s].recompute == rc;
    if (same)
      goto cleanup;
    HS_CHECK(hs_plan_copy(cur, &v, err));
    for (int32_t i = 0; i < v.n_pipelines; i++)
      for (int32_t s = 0; s < v.pipelines[i].n_stages; s++)
        v.pipelines[i].stages[s].recompute = rc;
    goto simulate;
  }
  bool async = k % 2 == 1;
  int32_t rest = k / 2;
  int32_t nsp = a->o.search_practice && !a->o.practice.sequence_parallel ? 2 : 1;
  hs_practice_t pr = cur->practice;
  if (a->o.search_practice) {
    pr.sequence_parallel = a->o.practice.sequence_parallel || rest % nsp == 1;
    pr.zero_stage = a->o.practice.zero_stage + rest / nsp;
  }
  if (pr.expert_parallel > 1 && pr.zero_stage >= 3)
    goto cleanup; /* not modelled with expert parallelism (hs_plan_validate) */
  if (async && cur->chunks > 1)
    goto cleanup; /* an interleaved plan (hs__autohet_transform_step) keeps its schedule */
  HS_CHECK(hs_plan_copy(cur, &v, err));
  hs_plan_set_practice(&v, &pr);
  hs_strlcpy(v.schedule, async ? "hetero-1f1b" : cur->chunks > 1 ? cur->schedule : "1f1b",
             sizeof v.schedule);
  v.async_send = async;
  for (int32_t i = 0; i < v.n_pipelines; i++)
    for (int32_t s = 0; s < v.pipelines[i].n_stages; s++)
      v.pipelines[i].stages[s].warmup = -1;
  if (async && hs__autohet_set_warmups(a, &v) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating warm-ups"));
  if (hs_practice_equal(&v.practice, &cur->practice) && v.async_send == cur->async_send &&
      strcmp(v.schedule, cur->schedule) == 0)
    goto cleanup; /* the plan itself (or SP dropped: no TP) */
simulate:;
  /* only a variant the estimate puts within VAR_EST_SLACK of the best */
  hs_estimate_t ev, ec;
  HS_CHECK(hs_estimate_plan(a->est, &v, true, &ev, err));
  HS_CHECK(hs_estimate_plan(a->est, cur, false, &ec, err));
  hs_estimator_set_practice(a->est, &a->base_pr);
  if (ev.oom || !(ev.iteration_s < ec.iteration_s * VAR_EST_SLACK)) {
    a->var_pruned++;
    goto cleanup;
  }
  if (!hs__sim_fits(p->deadline_s, p->sim_scale * hs__sim_cost_s(&v))) {
    a->deadline_hit = a->budget_hit = true; /* predicted to end past the deadline */
    goto cleanup;
  }
  a->var_sims++; /* a memo answer counts as the simulation it stands for */
  double iter_s = INFINITY;
  bool no_better = false;
  if (twin_no_better(a, &v, &no_better) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory copying a variant"));
  if (!no_better && !hs__sim_memo_get(&a->sims, &v, &iter_s)) {
    /* stopped at the best's time: a stopped variant is kept out of the
     * exact memos (its time is only a bound), so it is simulated again
     * should a later pool's best be slower */
    st = hs__simulate_below(a->m, a->c, &v, p->best_sim_s, &rep, &e2);
    if (st == HS_ENOMEM)
      HS_FAIL(hs_error_set(err, st, "%s", e2.msg));
    if (st != HS_OK)
      HS_FAIL(hs_error_set(err, HS_EINTERNAL,
                           "autohet emitted a plan variant the simulator rejects: %.200s", e2.msg));
    if (!rep.oom && !rep.stopped)
      iter_s = rep.iteration_time_s;
    if ((!rep.stopped || rep.oom) &&
        hs__sim_memo_put(rep.oom ? &a->oom_sims : &a->sims, &v, rep.iteration_time_s) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory storing a variant"));
  }
  if (iter_s < p->best_sim_s) {
    hs_plan_t tmp = p->plans[p->best];
    p->plans[p->best] = v;
    v = tmp;
    p->best_sim_s = iter_s;
    a->var_better++;
  }
cleanup:
  hs_report_destroy(&rep);
  hs_plan_destroy(&v);
  return st;
}

/* ---- practice transforms: context / expert parallelism, interleaving ------ */

/* Block index whose first op is `op` (0 for op 0 and the embedding, L for
 * the op after the blocks), -1 when op is no block boundary. O(log L). */
static int32_t block_at(const autohet_t *a, int32_t op)
{
  if (op <= a->block_first[0])
    return 0;
  if (op >= a->block_first[a->L])
    return a->L;
  int32_t lo = 0, hi = a->L;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (a->block_first[mid] < op)
      lo = mid + 1;
    else
      hi = mid;
  }
  return a->block_first[lo] == op ? lo : -1;
}

/* Every pipeline of p has pipeline 0's stages (op ranges, one replica of
 * the same TP degree, recomputation), microbatch size and count, 1f1b or
 * hetero-1f1b without explicit orders (a transform runs plain 1f1b or
 * interleaved-1f1b; the variants put async sends back): the symmetric
 * plans the transforms below apply to. O(stages). */
static bool pipelines_alike(const hs_plan_t *p)
{
  if (p->n_pipelines < 1 || p->chunks > 1 || p->n_shards > 0 ||
      (strcmp(p->schedule, "1f1b") != 0 && strcmp(p->schedule, "hetero-1f1b") != 0) ||
      p->practice.context_parallel > 1 || p->practice.expert_parallel > 1)
    return false;
  const hs_plan_pipeline_t *p0 = &p->pipelines[0];
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    if (pl->n_stages != p0->n_stages || pl->microbatch_size != p0->microbatch_size ||
        pl->n_microbatches != p0->n_microbatches)
      return false;
    for (int32_t s = 0; s < pl->n_stages; s++) {
      const hs_plan_stage_t *x = &p0->stages[s], *y = &pl->stages[s];
      if (y->n_replicas != 1 || x->op_first != y->op_first || x->op_last != y->op_last ||
          x->recompute != y->recompute || x->replicas[0].n_devices != y->replicas[0].n_devices ||
          y->order)
        return false;
    }
  }
  return true;
}

/* The plan src (pipelines_alike) under practice transform x: groups of
 * x.C consecutive pipelines merged into one whose every stage has the C
 * TP groups as a context-parallel group (each replica 1/C of every
 * microbatch's sequence; x.cp_mbs: the C pipelines' microbatches side by
 * side, microbatch size x C, else one after the other, count x C) or, with
 * x.cp_split, each TP group of t devices split into a CP group of C TP
 * groups of t / C (TP traded for CP, pipelines unchanged), experts
 * split over x.E consecutive merged pipelines, and each stage's blocks cut
 * into x.v interleaved chunks (interleaved-1f1b; chunk j of every stage
 * holds the j-th v-th of its blocks). *ok false (nothing built) when x
 * does not apply: C or E does not divide the pipelines, a stage's blocks
 * are not a multiple of v, the microbatches not a multiple of the stages
 * (Megatron's rule for interleaving). O(devices + stages v). */
typedef struct xform {
  int32_t C, E, v;
  bool cp_mbs;
  bool cp_split;         /* the CP group from each TP group's t devices as C of t / C */
} xform_t;

static hs_status_t transform(const autohet_t *a, const hs_plan_t *src, xform_t x, hs_plan_t *out,
                             bool *ok)
{
  hs_status_t st = HS_OK;
  *ok = false;
  hs_plan_init(out);
  const hs_plan_pipeline_t *p0 = &src->pipelines[0];
  int32_t G = src->n_pipelines, S = p0->n_stages, C = x.C, v = x.v;
  int32_t M = x.cp_split ? 1 : C; /* pipelines merged into one */
  if (G % M || (G / M) % x.E || (x.E > 1 && hs_plan_zero_stage(src) >= 3))
    return HS_OK;
  for (int32_t s = 0; x.cp_split && s < S; s++) {
    int32_t t = p0->stages[s].replicas[0].n_devices;
    if (t % C || !hs_model_tp_ok(a->m, t / C))
      return HS_OK;
  }
  int32_t mbs = p0->microbatch_size * (x.cp_mbs && !x.cp_split ? C : 1);
  int64_t nmb = (int64_t)p0->n_microbatches * (x.cp_mbs || x.cp_split ? 1 : C);
  if (mbs > a->maxmb * C || nmb > INT32_MAX)
    return HS_OK;
  int32_t nb[64];
  if (v > 1 && (S < 2 || S > 64 || nmb % S))
    return HS_OK;
  for (int32_t s = 0; v > 1 && s < S; s++) {
    int32_t b0 = block_at(a, p0->stages[s].op_first), b1 = block_at(a, p0->stages[s].op_last);
    if (b0 < 0 || b1 < 0 || (b1 - b0) % v || b1 - b0 < v)
      return HS_OK;
    nb[s] = (b1 - b0) / v;
  }
  hs_strlcpy(out->strategy, src->strategy, sizeof out->strategy);
  hs_strlcpy(out->schedule, v > 1 ? "interleaved-1f1b" : "1f1b", sizeof out->schedule);
  out->chunks = v;
  out->precision = src->precision;
  out->optimizer_sharding = src->optimizer_sharding;
  out->bucket_bytes = src->bucket_bytes;
  HS_CHECK(hs_plan_alloc_pipelines(out, G / M));
  for (int32_t g = 0; g < G / M; g++) {
    hs_plan_pipeline_t *pl = &out->pipelines[g];
    pl->microbatch_size = mbs;
    pl->n_microbatches = (int32_t)nmb;
    HS_CHECK(hs_plan_alloc_stages(pl, S * v));
    int32_t blk = 0;
    for (int32_t k = 0; k < S * v; k++) {
      int32_t s = k % S; /* rank of virtual stage k */
      const hs_plan_stage_t *from = &p0->stages[s];
      hs_plan_stage_t *stg = &pl->stages[k];
      if (v > 1) {
        stg->op_first = k == 0 ? 0 : a->block_first[blk];
        blk += nb[s];
        stg->op_last = k == S * v - 1 ? (int32_t)a->m->n_ops : a->block_first[blk];
      } else {
        stg->op_first = from->op_first;
        stg->op_last = from->op_last;
      }
      stg->recompute = from->recompute;
      HS_CHECK(hs_plan_alloc_replicas(stg, C));
      for (int32_t q = 0; q < C; q++) {
        const hs_plan_replica_t *r =
            &src->pipelines[x.cp_split ? g : g * C + q].stages[s].replicas[0];
        int32_t n = x.cp_split ? r->n_devices / C : r->n_devices;
        HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[q],
                                             r->devices + (x.cp_split ? q * n : 0), n));
        stg->replicas[q].share = 1.0 / C;
      }
    }
  }
  hs_practice_t pr = src->practice;
  pr.sequence_parallel = a->base_pr.sequence_parallel || src->practice.sequence_parallel;
  pr.context_parallel = C;
  pr.expert_parallel = x.E;
  hs_plan_set_practice(out, &pr);
  *ok = true;
cleanup:
  if (st != HS_OK)
    hs_plan_destroy(out);
  return st;
}

/* Offers every practice transform of every simulated pool plan and every
 * kept source (keep_source) that is symmetric (pipelines_alike) to a->xpool, ranked by the estimator (memory
 * included; a transform that does not fit is dropped). The transforms: C
 * in a->cps, the three CP layouts, E in a->eps, v from 1 up to the largest
 * chunk count a stage's blocks allow (at most HS_AUTOHET_MAX_V); not the
 * identity. O(pool x |C| x 2 x |E| x |v| x one estimate). */
#define HS_AUTOHET_MAX_V 8
static hs_status_t offer_transforms(autohet_t *a, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_t t;
  hs_plan_init(&t);
  int32_t n_pool = HS_MIN(a->pool.n, a->pool.next_sim);
  for (int32_t k = 0; k < n_pool + a->n_xsrc; k++) {
    const hs_plan_t *src = k < n_pool ? &a->pool.plans[k] : &a->xsrc[k - n_pool];
    if (k < n_pool)
      HS_CHECK(hs__autohet_offer_cut_shifts(a, src, err));
    if (!pipelines_alike(src))
      continue;
    for (int32_t ci = 0; ci < a->n_cp; ci++)
      for (int32_t lay = 0; lay < (a->cps[ci] > 1 ? 3 : 1); lay++)
        for (int32_t ei = 0; ei < a->n_ep; ei++)
          for (int32_t v = 1; v <= (a->o.search_practice ? HS_AUTOHET_MAX_V : 1); v++) {
            xform_t x = {a->cps[ci], a->eps[ei], v, lay == 1, lay == 2};
            if (x.C == 1 && x.E == 1 && x.v == 1)
              continue;
            if (hs__autohet_out_of_time(a))
              goto cleanup;
            bool ok = false;
            HS_CHECK(transform(a, src, x, &t, &ok));
            if (!ok)
              continue;
            hs_error_t e2;
            hs_error_init(&e2);
            e2.warn_fp = NULL;
            hs_estimate_t e = {0};
            if (hs_plan_validate(&t, a->m, a->c, NULL, &e2) == HS_OK)
              HS_CHECK(hs_estimate_plan(a->est, &t, true, &e, err));
            else
              e.oom = true; /* not a plan the simulator takes: dropped */
            a->x_estimated++;
            if (!e.oom && isfinite(e.iteration_s))
              hs__cpool_offer(&a->xpool, &t, e.iteration_s);
            hs_plan_destroy(&t);
            hs_plan_init(&t);
          }
  }
cleanup:
  hs_estimator_set_practice(a->est, &a->base_pr);
  hs_plan_destroy(&t);
  if (st == HS_ENOMEM)
    hs_error_set(err, st, "autohet: out of memory");
  return st;
}

/* One step of the transform phase: offer the transforms (first call),
 * then simulate xpool's entries one per step; at the end the fastest
 * transformed plan replaces the pool's best when it is faster. */
hs_status_t hs__autohet_transform_step(autohet_t *a, hs_error_t *err)
{
  if (!a->x_built) {
    a->x_built = true;
    return a->pool.best >= 0 ? offer_transforms(a, err) : HS_OK;
  }
  bool done = false;
  hs_status_t st = hs__cpool_sim_step(&a->xpool, a->m, a->c, &done, err);
  if (st != HS_OK || !done)
    return st;
  a->x_done = true;
  hs_cand_pool_t *p = &a->pool, *q = &a->xpool;
  if (q->best >= 0 && p->best >= 0 && q->best_sim_s < p->best_sim_s) {
    hs_plan_t tmp = p->plans[p->best];
    p->plans[p->best] = q->plans[q->best];
    q->plans[q->best] = tmp;
    double e = p->est_s[p->best];
    p->est_s[p->best] = q->est_s[q->best];
    q->est_s[q->best] = e;
    p->best_sim_s = q->best_sim_s;
    a->x_better = true;
  }
  return HS_OK;
}

