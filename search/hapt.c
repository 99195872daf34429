/*
 * hapt.c - `hapt`: heterogeneity-aware inter-operator planning after HAPT /
 * HARP (arXiv 2509.24859): fine-grained stage cuts, stage meshes confined to
 * homogeneous subclusters (TP never crosses GPU types or sites), link-aware
 * cut costs, and the hetero-1F1B schedule (async sends, deeper warm-up in
 * front of slow links). Search space and scoring: hapt_space.h.
 *
 * Algorithm: Alpa's stage-time-cap dynamic programming with HAPT's
 * per-subcluster device counters. For a cap t_max,
 *   F(s, k, u, a) = min over (z, k', b) of
 *       t + f + 2 c(a -> b, k') + F(s - 1, k', u - z e_a, b)
 * subject to t <= t_max, c <= t_max and the stage fitting in memory with s
 * microbatches in flight (plus the hetero-1f1b extra); s = stages of the
 * suffix starting at cut k, u = devices (units) per subcluster at most used,
 * a = subcluster of the suffix's first stage. The total of a cap is
 * F + (B - 1) x (actual max stage time). Caps are swept downwards: after a
 * solution with actual max M, the next cap is the largest candidate stage or
 * cut time below min(M (1 - HS_HAPT_CAP_STEP), best / (B - 1)); with a zero
 * step this visits every Pareto point (sum, max) and so finds the exact
 * optimum of the objective (the proof is in docs/planners.md); the step
 * trades that for far fewer caps on op-level cuts. It stops when a cap is
 * infeasible, when the sum reaches the best score, or after
 * HS_HAPT_MAX_SWEEPS caps. Every cap's solution near the best is offered to
 * the candidate pool (ranked by the whole-plan estimate, the best few
 * simulated); the microbatch sizes where memory bound the ZeRO-1 DP are
 * swept again under ZeRO-2 + SP (the memory-saving pass, at most
 * HS_HAPT_SAVE_SWEEPS caps each); for sequences of HS_HAPT_CP_MIN_SEQ
 * tokens and more, every size again per context-parallel degree C (the
 * table then lets C replicas share one sample, each 1/C of its sequence;
 * the ring exchanges are charged by the whole-plan estimate and the
 * simulator, not by the DP); then a simulator-driven local search
 * over every cut candidate and per-stage recomputation climbs from the
 * best simulated plan; then the simulated plans' interleaved variants
 * (virtual pipeline stages, hapt_vpp.h), the fastest kept only when it
 * simulates faster. When the DP's cut list is coarsened, a fine pass
 * runs the same DP (hapt_dp.h) over every op-level candidate for every
 * microbatch size; its best plan by estimate is simulated last, and when
 * it beats every coarse finalist a second climb and order adaptation
 * start from it; the fine plans are kept only when faster than
 * everything else.
 *
 * Complexity per cap: O(S x K^2 x U x A^2 x Z x opts) with S stages, K cut
 * candidates (at most HS_HAPT_DP_CUTS), U = prod_a (levels_a + 1), A
 * subclusters, Z mesh sizes; times the sweeps and the microbatch sizes
 * (every divisor of the batch). The knobs in hapt_space.h bound
 * every factor; the local search adds at most 2048 / devices simulations.
 */
#include "hapt_dp.h"
#include "hapt_space.h"
#include "hapt_vpp.h"
#include "hetero_order.h"
#include "hetero_warmup.h"
#include "sim_memo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HS_HAPT_MAX_SWEEPS 64
#define HS_HAPT_DP_CUTS 36     /* cut candidates in the DP (every candidate in the local search) */
#define HS_HAPT_OFFER_SLACK 1.05 /* sweep solutions offered to the pool: DP score within 5% of the best */
#define HS_HAPT_CAP_STEP 0.005 /* caps descend at least 0.5% at a time */
#define HS_HAPT_MB_SLACK 1.5 /* first cap of a microbatch size, x the best score / (B - 1) */
#define HS_HAPT_MAX_STATES 3000000
#define HS_HAPT_MAX_VARIANTS 8 /* ZeRO 0-3 x sequence parallelism off/on */
#define HS_HAPT_SAVE_SWEEPS 8  /* caps per microbatch size in the memory-saving pass */
/* context-parallel passes (Megatron's rule, search/megatron.c): sequences
 * of at least HS_HAPT_CP_MIN_SEQ tokens, C a power of two dividing the
 * sequence with at least HS_HAPT_CP_MIN_TOKENS per rank */
#define HS_HAPT_CP_MIN_SEQ 8192
#define HS_HAPT_CP_MIN_TOKENS 4096
#define HS_HAPT_MAX_CP_PASSES 3
/* fine pass: when the DP's cut list is coarsened (more than HS_HAPT_DP_CUTS
 * candidates), the DP again over every op-level cut candidate for every
 * microbatch size, at most HS_HAPT_FINE_SWEEPS caps each; its solutions
 * are offered beside the coarse ones */
#define HS_HAPT_FINE_SWEEPS 16
#define HS_HAPT_FINE_FINALISTS 1 /* fine-pass plans simulated (best by the whole-plan estimate) */
#define HS_HAPT_PASS_FINE (2 + HS_HAPT_MAX_CP_PASSES)
#define INF 1e300

typedef struct hapt {
  hs_hspace_t h;               /* the table the DP runs on (the fine one in the fine pass) */
  hs_hapt_dp_t dp;             /* the DP over h (hapt_dp.h) */
  int32_t S;                   /* most stages of either DP (solution buffers hold S + 1) */
  /* fine pass: the table over every cut candidate and its DP, swapped with
   * h and dp when the pass starts (then these hold the coarse ones) */
  hs_hspace_t hf;
  hs_hapt_dp_t dpf;
  bool fine_on, fine_done;
  double mb_best0[HS_HAPT_MAX_MB]; /* per size: best DP score of the first pass */
  double mb_max0[HS_HAPT_MAX_MB];  /* ... and the largest stage or cut time of that layout */
  hs_practice_t pr0;               /* the first pass's practice */
  int32_t fine_sizes;
  uint64_t fine_runs;
  /* the fine pass's solutions go to fpool, not to the pool: its finalist
   * is simulated after the climb and the order adaptation of the coarse
   * passes' plans (phase 3) and kept only when faster than their result,
   * so the fine pass never changes which plans the others simulate */
  hs_cand_pool_t fpool;
  hs_cand_pool_t *offer_pool;      /* &pool, or &fpool in the fine pass */
  bool fine_kept;
  int32_t mi;                 /* current microbatch size index */
  int32_t sweep;
  double tmax;
  hs_hsol_t best_mb;          /* best solution for the current mi */
  double best_all;            /* best DP score over the finished microbatch sizes */
  int32_t phase;              /* 0 DP, 1 simulate, 2 climb, 4 interleave, 3 fine finalist, 5 its climb */
  hs_cand_pool_t pool;
  /* phase 2: simulator-driven local search from the best simulated plan */
  hs_plan_t ls_best, ls_round;   /* incumbent; best neighbour of this round */
  double ls_best_s, ls_round_s;
  int32_t ls_next, ls_rounds;    /* next neighbour of this round; rounds done */
  bool ls_have;
  uint64_t ls_sims, ls_moves;
  hs_sim_memo_t ls_memo;         /* plans the climb (or the pool) judged: not simulated again */
  double ls_best_est;            /* whole-plan estimate of the incumbent, 0: not yet */
  uint64_t ls_screened;          /* neighbours ruled out by their estimate (not simulated) */
  /* phase 5: when the fine pass's finalist simulates faster than every
   * coarse finalist, a second climb from it (the ls_* fields again, the
   * first climb's outcome kept in c1_*); its plan (fine_ls, when it moved)
   * is kept only when faster than everything else */
  bool ls_from_fine;             /* the climb starts from fpool's best, not pool's */
  hs_plan_t c1_best, c1_tuned;
  double c1_best_s, c1_tuned_s;
  bool c1_have, c1_tuned_have, c1_warm_have, c1_order_have;
  uint64_t c1_sims, c1_moves;
  int32_t c1_tune_sims, c1_order_sims;
  hs_plan_t fine_ls;             /* the second climb's plan, its order adapted */
  double fine_ls_s;
  bool fine_ls_have;
  uint64_t fine_ls_sims, fine_ls_moves;
  int32_t fine_tune_sims;        /* order adaptation's simulations after the second climb */
  uint64_t dp_runs;
  /* training-practice variants offered beside each DP solution (ZeRO stage,
   * sequence parallelism), each with its own estimator so that the DP's
   * table (h.est) keeps its practice and cache */
  hs_practice_t var[HS_HAPT_MAX_VARIANTS];
  hs_estimator_t *var_est[HS_HAPT_MAX_VARIANTS];
  int32_t n_var;
  bool search_practice, sp_allowed;
  int32_t zero_min;             /* the options' ZeRO stage: variants stay at or above it */
  uint64_t var_offers;
  /* memory-saving pass (docs/planners.md): the DP again under ZeRO-2 (with
   * sequence parallelism where allowed) for the microbatch sizes where the
   * ZeRO-1 DP's first cap found no layout or memory forced a stage of the
   * best layout to a slower option; at most HS_HAPT_SAVE_SWEEPS caps each.
   * ZeRO-2, not 3: the table does not count ZeRO-3's gathered weights, so
   * its layouts are not more likely to fit (ZeRO-3 stays a variant) */
  hs_practice_t save_pr;
  bool save_on;                 /* search_practice and save_pr differs from the DP's */
  int32_t pass;                 /* 0: the DP's practice; 1: save_pr; 2 + i: cp_pr[i] */
  /* context-parallel passes: the DP again with context parallelism C
   * (ZeRO-1, SP where allowed) over every microbatch size: its table lets
   * a stage hold up to C replicas per sample (groups of C, each replica
   * 1/C of the sequence), which the C = 1 table refuses */
  hs_practice_t cp_pr[HS_HAPT_MAX_CP_PASSES];
  int32_t n_cp;
  /* expert parallelism (MoE models): every offered layout that splits into
   * whole-sample pipelines is also offered as such with E = ep[i] (ep_split) */
  int32_t ep[8];
  int32_t n_ep;
  uint64_t cp_runs;
  bool rerun[HS_HAPT_MAX_MB];
  bool first_run;               /* the current size's first (uncapped) DP run is next */
  bool uncapped;                /* ... and its cap is infinite */
  uint64_t save_runs;
  /* phase 3: hetero-1f1b order adaptation (warm-up depths) of the final plan */
  hs_plan_t tuned;
  double tuned_s;
  bool tuned_have;
  int32_t tune_sims;
  int32_t order_sims;   /* explicit-order climb (hetero_order.h) */
  bool order_have;      /* it beat the warm-up depths */
  bool warm_have;       /* the warm-up climb beat the local search's plan */
  bool tune_skipped;    /* budget under HS_HAPT_TUNE_MIN_SIMS: no order adaptation */
  bool polished;        /* the pool's entries were polished (polish_pool) */
  uint64_t polish_moves;
  double beat_s;        /* hs_plan_opts_t.beat_s (0: none) */
  int32_t order_pruned; /* order adaptations left out under beat_s (order_bound) */
  /* phase 4: interleaved variants of the simulated plans (hapt_vpp.h),
   * kept only when faster than the plan otherwise returned */
  hs_hapt_vpp_t vpp;
  bool vpp_kept;
  char why[256];
} hapt_t;

/* The fine pass's table (every cut candidate) and DP, when the DP's own
 * table is coarsened and the fine one fits HS_HAPT_MAX_TABLE_BYTES; else
 * fine_on stays false. Needs h, dp and pr0 set. O(hs__hspace_init). */
static hs_status_t fine_init(hapt_t *s, const hs_model_t *m, const hs_cluster_t *c,
                             const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  if (!s->h.coarse_cuts)
    return HS_OK;
  HS_CHECK(hs__hspace_init(&s->hf, m, c, o, 0, err));
  if (s->hf.coarse_cuts || s->hf.n_mbs != s->h.n_mbs || s->hf.n_sc != s->h.n_sc) {
    hs__hspace_destroy(&s->hf); /* the full table is too big: no fine pass */
    memset(&s->hf, 0, sizeof s->hf);
    return HS_OK;
  }
  s->hf.cp = s->h.cp;
  hs_estimator_set_practice(s->hf.est, &s->pr0);
  HS_CHECK(hs__hapt_dp_init(&s->dpf, &s->hf, 16, HS_HAPT_MAX_STATES, err));
  if (hs__hspace_pick_memo(&s->hf, s->dpf.S) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  s->S = HS_MAX(s->S, s->dpf.S);
  s->fine_on = true;
cleanup:
  return st;
}

static void hapt_free(void *state);

static hs_status_t hapt_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                             const hs_plan_opts_t *o, hs_error_t *err)
{
  hapt_t *s = state;
  hs_status_t st = HS_OK;
  memset(s, 0, sizeof *s);
  HS_CHECK(hs__hspace_init(&s->h, m, c, o, HS_HAPT_DP_CUTS, err));
  hs_hspace_t *h = &s->h;
  h->cp = HS_MAX(o->practice.context_parallel, 1);
  s->search_practice = o->search_practice;
  s->beat_s = o->beat_s > 0.0 ? o->beat_s : 0.0;
  s->zero_min = o->practice.zero_stage;
  s->sp_allowed = !o->practice.sequence_parallel;
  if (o->search_practice) {
    /* The DP runs with the distributed optimizer (ZeRO-1) on, as a
     * Megatron user would switch it on (--use-distributed-optimizer): its
     * memory rule then counts 1/r of the optimizer state on a stage of r
     * replicas. The other ZeRO stages and sequence parallelism are tried
     * on every offered solution (offer_sol) and in the local search. */
    hs_practice_t pr = o->practice;
    pr.zero_stage = HS_MAX(pr.zero_stage, 1);
    hs_estimator_set_practice(h->est, &pr);
    s->save_pr = pr;
    s->save_pr.zero_stage = 2;
    s->save_pr.sequence_parallel = pr.sequence_parallel || s->sp_allowed;
    s->save_on = !hs_practice_equal(&s->save_pr, &pr);
    int32_t experts = 0;
    for (size_t i = 0; i < m->n_ops; i++)
      if (m->ops[i].kind == HS_OP_MOE_EXPERT)
        experts = HS_MAX(experts, m->ops[i].experts);
    if (o->practice.expert_parallel <= 1)
      for (int32_t E = 2; E <= experts && s->n_ep < 8; E++)
        if (experts % E == 0)
          s->ep[s->n_ep++] = E;
    int64_t seq = m->seq_len;
    if (o->practice.context_parallel <= 1 && seq >= HS_HAPT_CP_MIN_SEQ)
      for (int32_t C = 2; s->n_cp < HS_HAPT_MAX_CP_PASSES && seq % C == 0 &&
                          seq / C >= HS_HAPT_CP_MIN_TOKENS;
           C *= 2) {
        hs_practice_t v = pr;
        v.sequence_parallel = pr.sequence_parallel || s->sp_allowed;
        v.context_parallel = C;
        s->cp_pr[s->n_cp++] = v;
      }
    for (int32_t z = o->practice.zero_stage; z <= 3; z++)
      for (int sp = 0; sp < (s->sp_allowed ? 2 : 1); sp++) {
        hs_practice_t v = o->practice;
        v.zero_stage = z;
        v.sequence_parallel = o->practice.sequence_parallel || sp;
        /* the DP's own practice is the base offer of the first pass, a
         * variant of the memory-saving pass's solutions (offer_sol skips
         * the variant equal to a plan's own practice) */
        s->var[s->n_var] = v;
        HS_CHECK(hs_estimator_new(m, c, h->dt, &s->var_est[s->n_var], err));
        hs_estimator_set_deadline(s->var_est[s->n_var], o->deadline_s);
        hs_estimator_set_practice(s->var_est[s->n_var], &v);
        s->n_var++;
      }
  }
  HS_CHECK(hs__hapt_dp_init(&s->dp, h, 16, HS_HAPT_MAX_STATES, err));
  s->S = s->dp.S;
  s->pr0 = *hs_estimator_practice(h->est);
  HS_CHECK(fine_init(s, m, c, o, err));
  s->best_mb.st = hs_calloc((size_t)s->S + 1, sizeof(hs_hstage_t));
  if (!s->best_mb.st)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* the DP picks with up to S microbatches in flight, every cap of a table alike */
  if (hs__hspace_pick_memo(h, s->S) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* an MoE model's pool is three times the size: the estimate of the
   * expert-parallel splits is optimistic, and with the usual few they
   * crowded the simulated candidates (test_search_homogeneous, 4 nodes:
   * 0.0203 -> 0.0331 s) */
  if (hs__cpool_init(&s->pool, hs__sim_budget(c) * (s->n_ep > 0 ? 3 : 1)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  s->pool.deadline_s = o->deadline_s;
  s->pool.one_zero = true;
  s->offer_pool = &s->pool;
  if (s->fine_on && hs__cpool_init(&s->fpool, HS_HAPT_FINE_FINALISTS) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  s->fpool.deadline_s = o->deadline_s;
  s->mi = -1;
  s->best_all = INF;
  hs_plan_init(&s->ls_best);
  hs_plan_init(&s->ls_round);
  hs_plan_init(&s->tuned);
  hs_plan_init(&s->c1_best);
  hs_plan_init(&s->c1_tuned);
  hs_plan_init(&s->fine_ls);
  HS_CHECK(hs__hapt_vpp_init(&s->vpp, m, c, o, err));
  return HS_OK;
cleanup:
  /* s was zeroed first: hapt_free releases whatever was built so far
   * (the pools included, which a late failure used to leak) */
  hapt_free(s);
  memset(s, 0, sizeof *s);
  return st;
}

/* The layout of p (one pipeline whose stages hold d devices each, no
 * context parallelism) as r = d / tp pipelines of one TP group of tp per
 * stage (each stage's devices in order, tp at a time), each taking 1/r of
 * every microbatch (whole samples), with expert parallelism E over groups
 * of E consecutive pipelines, the simulator's expert groups (docs/plan.md):
 * hapt's one pipeline cannot hold them, and the TP degree is chosen again
 * because expert parallelism frees the memory that made the DP pick
 * another. *ok false (out untouched) when p is not such a layout.
 * O(stages x d). */
static hs_status_t ep_split(const hapt_t *s, const hs_plan_t *p, int32_t tp, int32_t E,
                            hs_plan_t *out, bool *ok, hs_error_t *err)
{
  *ok = false;
  const hs_plan_pipeline_t *pl = &p->pipelines[0];
  int32_t S = pl->n_stages, d = 0, gpn = 0;
  if (p->n_pipelines != 1 || HS_MAX(p->practice.context_parallel, 1) > 1 ||
      hs_plan_zero_stage(p) >= 3 || !hs_model_tp_ok(s->h.m, tp))
    return HS_OK;
  for (int32_t i = 0; i < S; i++) {
    const hs_plan_stage_t *x = &pl->stages[i];
    int32_t di = x->n_replicas * (x->n_replicas > 0 ? x->replicas[0].n_devices : 0);
    if ((i > 0 && di != d) || x->order)
      return HS_OK;
    d = di;
    for (int32_t q = 0; q < x->n_replicas; q++)
      if (x->replicas[q].n_devices != x->replicas[0].n_devices)
        return HS_OK;
    gpn = s->h.c->nodes[s->h.c->devices[x->replicas[0].devices[0]].node].n_devices;
  }
  int32_t r = tp > 0 && d % tp == 0 ? d / tp : 0;
  if (r < E || r % E != 0 || pl->microbatch_size % r != 0 || tp > gpn)
    return HS_OK;
  hs_plan_t top = *p; /* the plan's fields without its pipelines */
  top.pipelines = NULL;
  top.n_pipelines = 0;
  hs_status_t st = hs_plan_copy(&top, out, err);
  if (st != HS_OK)
    return st;
  out->practice.expert_parallel = E;
  if (hs_plan_alloc_pipelines(out, r) != HS_OK)
    goto nomem;
  for (int32_t q = 0; q < r; q++) {
    hs_plan_pipeline_t *o = &out->pipelines[q];
    o->microbatch_size = pl->microbatch_size / r;
    o->n_microbatches = pl->n_microbatches;
    if (hs_plan_alloc_stages(o, S) != HS_OK)
      goto nomem;
    for (int32_t i = 0; i < S; i++) {
      const hs_plan_stage_t *x = &pl->stages[i];
      hs_plan_stage_t *y = &o->stages[i];
      y->op_first = x->op_first;
      y->op_last = x->op_last;
      y->recompute = x->recompute;
      y->warmup = x->warmup;
      int32_t devs[64];
      for (int32_t t = 0; t < tp && tp <= 64; t++) {
        int32_t g = q * tp + t, w = x->replicas[0].n_devices;
        devs[t] = x->replicas[g / w].devices[g % w];
        if (s->h.c->devices[devs[t]].node != s->h.c->devices[devs[0]].node) {
          hs_plan_destroy(out); /* a TP group across nodes: not this layout */
          hs_plan_init(out);
          return HS_OK;
        }
      }
      if (tp > 64 || hs_plan_alloc_replicas(y, 1) != HS_OK ||
          hs_plan_replica_set_devices(&y->replicas[0], devs, tp) != HS_OK)
        goto nomem;
      y->replicas[0].share = 1.0;
    }
  }
  *ok = true;
  return HS_OK;
nomem:
  hs_plan_destroy(out);
  hs_plan_init(out);
  return hs_error_set(err, HS_ENOMEM, "out of memory");
}

/* Offers the expert-parallel splits of plan (ep_split, every E of the
 * model's in ep[] x TP 1, 2, 4, 8) to the pool, each estimated and offered
 * when it fits. O(ep x 4) plan estimates. */
static hs_status_t offer_ep(hapt_t *s, const hs_plan_t *plan, hs_error_t *err)
{
  for (int32_t i = 0; i < s->n_ep * 4; i++) {
    hs_plan_t vp;
    bool ok = false;
    hs_status_t st = ep_split(s, plan, 1 << (i % 4), s->ep[i / 4], &vp, &ok, err);
    if (st != HS_OK)
      return st;
    if (!ok)
      continue;
    hs_estimate_t ev;
    st = hs_estimate_plan(s->var_est[0], &vp, true, &ev, err);
    s->var_offers++;
    if (st == HS_OK && !ev.oom && isfinite(ev.iteration_s))
      hs__cpool_offer(s->offer_pool, &vp, ev.iteration_s);
    else
      hs_plan_destroy(&vp);
    if (st != HS_OK)
      return st;
  }
  return HS_OK;
}

/* Offers the plan of a DP solution to the pool, ranked by the whole-plan
 * estimate, which overlaps the stages' gradient syncs where the DP
 * objective adds them. Every cap's solution (each a Pareto point of (sum,
 * max)) is offered, not only the best by the DP objective: with op-level
 * cuts the two orders disagree often enough to matter (docs/planners.md). */
static hs_status_t offer_sol(hapt_t *s, const hs_hsol_t *sol, hs_error_t *err)
{
  if (sol->n == 0)
    return HS_OK;
  hs_plan_t plan;
  hs_status_t st = hs__hspace_plan(&s->h, sol, "hapt", &plan, err);
  if (st != HS_OK)
    return st;
  /* whole samples per rank first (the pool would round it after the
   * estimate): the DP's shares leave 1.5 samples on a replica that then
   * runs 2, and a layout estimated at 15.3 s simulated at 20.2 s (Llama-3
   * 8B, 96 GPUs, docs/planners.md) */
  if ((st = hs__round_for_offer(&plan, err)) != HS_OK) {
    hs_plan_destroy(&plan);
    if (st != HS_ENOMEM)
      hs_error_clear(err);
    return st == HS_ENOMEM ? st : HS_OK;
  }
  /* rank the per-microbatch-size optima by the whole-plan estimate, which
   * overlaps the stages' gradient syncs where the DP objective adds them */
  hs_estimate_t es;
  st = hs_estimate_plan(s->h.est, &plan, true, &es, err);
  if (st != HS_OK) {
    hs_plan_destroy(&plan);
    return st;
  }
  /* the practice variants of the same layout (ZeRO stage, sequence
   * parallelism where a stage has TP > 1): each estimated with its own
   * estimator, offered when it fits */
  for (int32_t i = 0; i < s->n_var && st == HS_OK; i++) {
    hs_plan_t vp;
    st = hs_plan_copy(&plan, &vp, err);
    if (st != HS_OK)
      break;
    hs_practice_t v = s->var[i];
    v.context_parallel = plan.practice.context_parallel; /* the layout's groups */
    hs_plan_set_practice(&vp, &v);
    if (!hs_practice_equal(&vp.practice, &v) || hs_practice_equal(&vp.practice, &plan.practice)) {
      /* no TP group: the same plan as the variant without SP; or the
       * plan's own practice: the base offer below */
      hs_plan_destroy(&vp);
      continue;
    }
    hs_estimate_t ev;
    st = hs_estimate_plan(s->var_est[i], &vp, true, &ev, err);
    s->var_offers++;
    if (st == HS_OK)
      st = offer_ep(s, &vp, err);
    if (st == HS_OK && !ev.oom)
      hs__cpool_offer(s->offer_pool, &vp, ev.iteration_s);
    else
      hs_plan_destroy(&vp);
  }
  if (st == HS_OK)
    st = offer_ep(s, &plan, err);
  if (es.oom || st != HS_OK)
    hs_plan_destroy(&plan);
  else
    hs__cpool_offer(s->offer_pool, &plan, es.iteration_s);
  return st;
}

/* ---- local search --------------------------------------------------------
 *
 * The DP ranks layouts by its closed-form objective; the simulator, which
 * decides, disagrees by several percent on some clusters (docs/planners.md).
 * So after the candidates are simulated, hapt climbs from the best one with
 * the simulator as the judge: a neighbour moves one stage boundary to the
 * previous or next cut candidate, moves the microbatch size to the next
 * larger or smaller divisor of the batch,
 * changes one stage's recomputation (none, selective, full), or (with
 * practice search) the ZeRO stage or sequence parallelism. Each round simulates every neighbour and moves
 * to the best one when it is faster; it stops when none is, after
 * HS_HAPT_LS_ROUNDS rounds, or when its simulation budget (fewer on big
 * clusters) is spent. One simulation per step; deterministic. */

#define HS_HAPT_LS_ROUNDS 12
/* a neighbour whose whole-plan estimate is more than this fraction above
 * the incumbent's is not simulated (counted as a simulation that lost, so
 * the climb's budget and rounds are those without the screen) */
#define HS_HAPT_LS_SCREEN 0.08
#define HS_HAPT_LS_SIM_DEVICES 2048 /* simulations: 2048 / devices, clamped to [4, 64] */
#define HS_HAPT_TUNE_MIN_SIMS 16    /* order adaptation only with at least this budget */

static int32_t ls_neighbours(const hapt_t *s, const hs_plan_t *p)
{
  int32_t S = p->pipelines[0].n_stages;
  return 2 * (S - 1) + 2 * S + (s->search_practice ? 4 : 0) + 2;
}

/* Neighbour j of p into *out (a copy); false when it does not exist. */
static bool ls_make(hapt_t *s, const hs_plan_t *p, int32_t j, hs_plan_t *out, hs_error_t *err,
                    hs_status_t *st)
{
  const hs_hspace_t *h = &s->h;
  const hs_plan_pipeline_t *pl = &p->pipelines[0];
  int32_t S = pl->n_stages;
  *st = HS_OK;
  int32_t bi = -1, dir = 0, si = -1, rc = 0;
  if (j < 2 * (S - 1)) {
    bi = j / 2;
    dir = j % 2 ? 1 : -1;
    /* the neighbouring cut candidate of stage bi's last op */
    int32_t cur = pl->stages[bi].op_last, k = 0, K = h->n_all_cuts;
    while (k < K && h->all_cuts[k] < cur)
      k++;
    int32_t nk = dir < 0 ? k - 1 : (k < K && h->all_cuts[k] == cur ? k + 1 : k);
    if (nk <= 0 || nk >= K - 1)
      return false;
    int32_t op = h->all_cuts[nk];
    if (op <= pl->stages[bi].op_first || op >= pl->stages[bi + 1].op_last)
      return false;
    dir = op;
  } else if (j < 2 * (S - 1) + 2) {
    /* microbatch size: the next larger or smaller divisor of the
     * pipeline's samples (the same global batch), at least one sample per
     * replica: the DP ranks sizes by its closed form and the pool
     * simulates only the best few */
    const hs_plan_pipeline_t *q0 = &p->pipelines[0];
    int64_t mb = q0->microbatch_size, samples = mb * q0->n_microbatches;
    int32_t maxr = 1, C = HS_MAX(p->practice.context_parallel, 1);
    for (int32_t i = 0; i < S; i++)
      maxr = HS_MAX(maxr, q0->stages[i].n_replicas / C); /* samples: one per CP group */
    bool up = j == 2 * (S - 1);
    int64_t b = mb;
    do
      b += up ? 1 : -1;
    while (b >= maxr && b <= samples && samples % b != 0);
    if (b < maxr || b > samples || b > INT32_MAX)
      return false;
    *st = hs_plan_copy(p, out, err);
    if (*st != HS_OK)
      return false;
    out->pipelines[0].microbatch_size = (int32_t)b;
    out->pipelines[0].n_microbatches = (int32_t)(samples / b);
    return true;
  } else if (j >= 2 * (S - 1) + 2 + 2 * S) {
    /* practice: one of the three other ZeRO stages, or sequence
     * parallelism toggled (where the options leave it to the search) */
    int32_t pj = j - (2 * (S - 1) + 2 + 2 * S);
    hs_practice_t pr = p->practice;
    if (pj < 3) {
      int32_t cur = pr.zero_stage, z = pj < cur ? pj : pj + 1;
      if (z < s->zero_min || z > 3)
        return false;
      pr.zero_stage = z;
    } else {
      if (!s->sp_allowed)
        return false;
      pr.sequence_parallel = !pr.sequence_parallel;
    }
    *st = hs_plan_copy(p, out, err);
    if (*st != HS_OK)
      return false;
    hs_plan_set_practice(out, &pr);
    if (hs_practice_equal(&out->practice, &p->practice)) {
      hs_plan_destroy(out); /* SP on a plan without TP: no change */
      hs_plan_init(out);
      return false;
    }
    return true;
  } else {
    si = (j - 2 * (S - 1) - 2) / 2;
    int32_t cur = (int32_t)pl->stages[si].recompute;
    rc = (cur + 1 + (j % 2)) % 3; /* the two other settings */
    if (!h->allow_rc && rc != HS_RECOMPUTE_NONE)
      return false;
  }
  *st = hs_plan_copy(p, out, err);
  if (*st != HS_OK)
    return false;
  hs_plan_pipeline_t *q = &out->pipelines[0];
  if (bi >= 0) {
    q->stages[bi].op_last = dir;
    q->stages[bi + 1].op_first = dir;
  } else {
    q->stages[si].recompute = (hs_recompute_t)rc;
  }
  return true;
}

/* The whole-plan estimate of p (iteration seconds; INF when the estimator
 * finds no time, or with_memory and a device runs out), with the practice
 * variant's estimator that matches p's practice (its cache kept), else the
 * DP's. O(one estimate). */
static hs_status_t ls_estimate(hapt_t *s, const hs_plan_t *p, bool with_memory, double *est_s,
                               hs_error_t *err)
{
  hs_estimator_t *e = s->h.est;
  for (int32_t i = 0; i < s->n_var; i++) {
    hs_practice_t v = s->var[i];
    v.context_parallel = p->practice.context_parallel;
    if (hs_practice_equal(&v, &p->practice))
      e = s->var_est[i];
  }
  hs_estimate_t ev;
  hs_status_t st = hs_estimate_plan(e, p, with_memory, &ev, err);
  *est_s = st == HS_OK && !ev.oom && isfinite(ev.iteration_s) && ev.iteration_s > 0.0
               ? ev.iteration_s : INF;
  return st;
}

/* ---- polish: the pool's entries, by the estimate ------------------------
 *
 * The DP places cuts by its closed form (sum of stage times plus (B - 1)
 * times the cap) under the default warm-ups; the whole-plan estimate runs
 * the schedule itself (the warm-up's bubbles, the sends' queues:
 * search/estimate.h) and can put a boundary a block or half a block away,
 * or find a deeper warm-up that hides a slow cut. Before the pool is
 * simulated, each entry descends by that estimate over its cut moves
 * (ls_make's first 2 (S - 1) neighbours: every op-level cut candidate,
 * not only the DP's) and, under hetero-1f1b, every stage's warm-up one
 * deeper or shallower (hs__hetero_warmup_move), memory checked, taking the
 * best move while it lowers the estimate, at most HS_HAPT_POLISH_ROUNDS
 * moves; then the pool is sorted again and entries that became the same
 * plan are dropped. The climb and the order adaptation then start from
 * there with the simulator. Measured (2026-12-04, fifth session, against
 * the same binary without it): bench_search's 16 GPUs, the DP's tp2 pp2
 * dp4 layout emb+0-23|24-31 (estimated 2.6417 s) moves to emb+0-23|23-31
 * (2.6041 s; simulated 2.5704 s) before the pool simulates it; cuts
 * alone, without the warm-ups, left the 33-option what-if 10 rows slower
 * (a cut descent under the default warm-ups ends where the warm-up
 * adaptation finds less), with them 1 (docs/planners.md). */

#define HS_HAPT_POLISH_ROUNDS 8

/* Descends *p (estimate *est_s) over its cut moves and, under
 * hetero-1f1b, its warm-up moves; see above. HS_ENOMEM only (an estimator
 * failure leaves the move out). O(rounds x S estimates). */
static hs_status_t polish_one(hapt_t *s, hs_plan_t *p, double *est_s, hs_error_t *err)
{
  if (p->n_pipelines != 1)
    return HS_OK;
  for (int32_t round = 0; round < HS_HAPT_POLISH_ROUNDS; round++) {
    int32_t S = p->pipelines[0].n_stages;
    hs_plan_t best;
    hs_plan_init(&best);
    double best_s = *est_s;
    hs_status_t st = HS_OK;
    bool warm = strcmp(p->schedule, "hetero-1f1b") == 0 && p->chunks <= 1;
    for (int32_t j = 0; j < 2 * (S - 1) + (warm ? 2 * S : 0) && st == HS_OK; j++) {
      hs_plan_t cand;
      hs_plan_init(&cand);
      if (j < 2 * (S - 1) && !ls_make(s, p, j, &cand, err, &st))
        continue;
      if (j >= 2 * (S - 1)) {
        /* a stage's warm-up one deeper or shallower (hetero_warmup.h) */
        if ((st = hs_plan_copy(p, &cand, err)) != HS_OK)
          break;
        hs__hetero_warmup_explicit(&cand.pipelines[0]);
        int32_t k = j - 2 * (S - 1);
        if (!hs__hetero_warmup_move(&cand, k / 2, k % 2 ? 1 : -1)) {
          hs_plan_destroy(&cand);
          continue;
        }
      }
      double e = INF;
      st = ls_estimate(s, &cand, true, &e, err);
      if (st != HS_ENOMEM) {
        hs_error_clear(err);
        st = HS_OK;
      }
      if (st == HS_OK && e < best_s * (1.0 - 1e-9)) {
        hs_plan_destroy(&best);
        best = cand;
        best_s = e;
      } else {
        hs_plan_destroy(&cand);
      }
    }
    if (st != HS_OK || best.n_pipelines == 0) {
      hs_plan_destroy(&best);
      return st;
    }
    hs_plan_destroy(p);
    *p = best;
    *est_s = best_s;
    s->polish_moves++;
  }
  return HS_OK;
}

/* Polishes every entry of the pool (nothing simulated yet), then sorts it
 * by estimate again (stable) and drops entries the same as an earlier one.
 * HS_ENOMEM only. O(entries x rounds x S estimates). */
static hs_status_t polish_pool(hapt_t *s, hs_error_t *err)
{
  hs_cand_pool_t *pool = &s->pool;
  for (int32_t k = 0; k < pool->n; k++) {
    hs_status_t st = polish_one(s, &pool->plans[k], &pool->est_s[k], err);
    if (st != HS_OK)
      return st;
  }
  for (int32_t k = 1; k < pool->n; k++) {
    hs_plan_t pk = pool->plans[k];
    double ek = pool->est_s[k];
    int32_t j = k;
    for (; j > 0 && pool->est_s[j - 1] > ek; j--) {
      pool->plans[j] = pool->plans[j - 1];
      pool->est_s[j] = pool->est_s[j - 1];
    }
    pool->plans[j] = pk;
    pool->est_s[j] = ek;
  }
  int32_t n = 0;
  for (int32_t k = 0; k < pool->n; k++) {
    bool dup = false;
    for (int32_t j = 0; j < n && !dup; j++)
      dup = hs__plan_same(&pool->plans[j], &pool->plans[k]);
    if (dup) {
      hs_plan_destroy(&pool->plans[k]);
      continue;
    }
    pool->plans[n] = pool->plans[k];
    pool->est_s[n++] = pool->est_s[k];
  }
  for (int32_t k = n; k < pool->n; k++)
    hs_plan_init(&pool->plans[k]);
  pool->n = n;
  return HS_OK;
}

/* Whether neighbour cand is ruled out by the closed form: its estimate is
 * more than HS_HAPT_LS_SCREEN above the incumbent's (both by the same
 * estimator family; memory is left to the simulator). With the screen
 * off (2026-12-04), of 1,816 neighbours simulated on the 33-option
 * what-if, the hapt scenarios, bench_search (16, 64 GPUs) and six catalog
 * cases, the 152 that simulated faster than their incumbent were
 * estimated at most 3.0% above it (docs/planners.md). O(one estimate, two
 * after a move). */
static hs_status_t ls_screen(hapt_t *s, const hs_plan_t *cand, bool *out, hs_error_t *err)
{
  *out = false;
  hs_status_t st = HS_OK;
  if (!(s->ls_best_est > 0.0))
    st = ls_estimate(s, &s->ls_best, false, &s->ls_best_est, err);
  double e = INF;
  if (st == HS_OK)
    st = ls_estimate(s, cand, false, &e, err);
  if (st == HS_ENOMEM)
    return st;
  /* another estimator failure: the neighbour is simulated */
  *out = s->ls_best_est < INF && e < INF && e > (1.0 + HS_HAPT_LS_SCREEN) * s->ls_best_est;
  return HS_OK;
}

/* Simulates neighbour *cand (counted), stores its time in the climb's
 * memo, and makes it the round's best when it fits and beats both the
 * round's best and the incumbent (*cand is then moved out, left empty).
 * The simulation stops at the time it must beat: both only fall, so a
 * stopped neighbour, stored as lost, loses every later comparison too.
 * HS_ENOMEM. O(one simulation). */
static hs_status_t ls_judge(hapt_t *s, hs_plan_t *cand, hs_error_t *err)
{
  hs_report_t rep;
  hs_report_init(&rep);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t st =
      hs__simulate_below(s->h.m, s->h.c, cand, HS_MIN(s->ls_round_s, s->ls_best_s), &rep, &e2);
  s->ls_sims++;
  if (st == HS_ENOMEM) {
    hs_report_destroy(&rep);
    return hs_error_set(err, st, "%s", e2.msg);
  }
  /* stored as the test below reads it, so a memo answer decides alike */
  st = hs__sim_memo_put(&s->ls_memo, cand, rep.oom || rep.stopped ? INF : rep.iteration_time_s);
  if (st != HS_OK) {
    hs_report_destroy(&rep);
    return hs_error_set(err, st, "out of memory");
  }
  /* a neighbour the simulator rejects is skipped */
  if (!rep.oom && !rep.stopped && rep.iteration_time_s < s->ls_round_s &&
      rep.iteration_time_s < s->ls_best_s) {
    hs_plan_destroy(&s->ls_round);
    s->ls_round = *cand;
    hs_plan_init(cand);
    s->ls_round_s = rep.iteration_time_s;
  }
  hs_report_destroy(&rep);
  return HS_OK;
}

/* One local-search simulation; *done when the climb is over. */
static hs_status_t ls_step(hapt_t *s, bool *done, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  *done = false;
  if (!s->ls_have) {
    /* start from the pool's best simulated plan (the fine pool's in the
     * second climb, which starts only when that one is faster) */
    const hs_cand_pool_t *from = s->ls_from_fine ? &s->fpool : &s->pool;
    if (from->best < 0 || from->plans[from->best].n_pipelines != 1) {
      *done = true;
      return HS_OK;
    }
    if ((st = hs_plan_copy(&from->plans[from->best], &s->ls_best, err)) != HS_OK)
      return st;
    s->ls_best_s = from->best_sim_s;
    /* the pools' simulated plans (the best among them) cannot beat the
     * incumbent, whose time only falls from the best: a neighbour equal
     * to one is judged without simulating it (sim_memo.h) */
    for (int32_t k = 0; k < s->pool.next_sim; k++)
      if (hs__sim_memo_put(&s->ls_memo, &s->pool.plans[k], INF) != HS_OK)
        return hs_error_set(err, HS_ENOMEM, "out of memory");
    for (int32_t k = 0; s->ls_from_fine && k < s->fpool.next_sim; k++)
      if (hs__sim_memo_put(&s->ls_memo, &s->fpool.plans[k], INF) != HS_OK)
        return hs_error_set(err, HS_ENOMEM, "out of memory");
    s->ls_round_s = INF;
    s->ls_have = true;
    return HS_OK;
  }
  int32_t n = ls_neighbours(s, &s->ls_best);
  /* simulations cost more on big clusters: the budget shrinks with them */
  int64_t budget = HS_MAX(4, HS_MIN(64, HS_HAPT_LS_SIM_DEVICES / (int64_t)s->h.c->n_devices));
  if ((int64_t)s->ls_sims >= budget && s->ls_next < n)
    s->ls_next = n; /* finish the round with what it found */
  if (s->ls_next >= n) {
    /* end of a round: move when the best neighbour is faster */
    s->ls_rounds++;
    bool moved = s->ls_round_s < s->ls_best_s;
    if (moved) {
      hs_plan_destroy(&s->ls_best);
      s->ls_best = s->ls_round;
      hs_plan_init(&s->ls_round);
      s->ls_best_s = s->ls_round_s;
      s->ls_best_est = 0.0; /* estimated again by the next screen */
      s->ls_moves++;
    }
    s->ls_round_s = INF;
    hs_plan_destroy(&s->ls_round);
    hs_plan_init(&s->ls_round);
    s->ls_next = 0;
    *done = !moved || s->ls_rounds >= HS_HAPT_LS_ROUNDS || (int64_t)s->ls_sims >= budget;
    return HS_OK;
  }
  hs_plan_t cand;
  hs_plan_init(&cand);
  if (!ls_make(s, &s->ls_best, s->ls_next++, &cand, err, &st))
    return st;
  /* whole samples per rank, as the registry will round the plan returned:
   * a new microbatch size leaves the replicas' shares fractional (1.5
   * samples), which the simulator would judge at 1.5 and the rounded plan
   * run at 2 (llama3-8b on 16 H100, batch 384: zero2 dp16 at 100.6 GB of
   * 85.9 GB, returned as if it fitted) */
  hs_error_t er;
  hs_error_init(&er);
  er.warn_fp = NULL;
  if ((st = hs_plan_round_shares(&cand, NULL, &er)) != HS_OK) {
    hs_plan_destroy(&cand);
    return st == HS_ENOMEM ? hs_error_set(err, st, "out of memory") : HS_OK;
  }
  double known_s;
  if (hs__sim_memo_get(&s->ls_memo, &cand, &known_s)) {
    /* judged before: counted as a simulation, so the budget and the climb
     * are those without the memo; a known time never beats the incumbent
     * it lost to, and the pool's plans are stored as INF */
    s->ls_sims++;
    if (known_s < s->ls_round_s && known_s < s->ls_best_s) {
      hs_plan_destroy(&s->ls_round);
      s->ls_round = cand;
      s->ls_round_s = known_s;
    } else {
      hs_plan_destroy(&cand);
    }
    return HS_OK;
  }
  bool screened = false;
  st = ls_screen(s, &cand, &screened, err);
  if (st != HS_OK) {
    hs_plan_destroy(&cand);
    return st;
  }
  if (screened) {
    /* counted as a simulation that lost, so the budget and the rounds are
     * those without the screen */
    s->ls_sims++;
    s->ls_screened++;
    hs_plan_destroy(&cand);
    return HS_OK;
  }
  if (!hs__sim_fits(s->pool.deadline_s, 2.0 * s->pool.sim_scale * hs__sim_cost_s(&cand))) {
    /* no time for this neighbour and the final simulation: the climb ends */
    s->pool.cut = true;
    s->ls_next = n;
    s->ls_sims = (uint64_t)HS_MAX(budget, 0);
    hs_plan_destroy(&cand);
    return HS_OK;
  }
  bool same = false;
  if (hs__plan_same_timeline(s->h.m, &cand, &s->ls_best, &same) != HS_OK) {
    hs_plan_destroy(&cand);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  if (same) {
    /* the incumbent's timeline (a selective recomputation that recomputes
     * nothing, sim_memo.h): at most its time, so it cannot beat it;
     * counted and stored as a simulation that lost */
    s->ls_sims++;
    st = hs__sim_memo_put(&s->ls_memo, &cand, INF);
    hs_plan_destroy(&cand);
    return st == HS_OK ? HS_OK : hs_error_set(err, st, "out of memory");
  }
  st = ls_judge(s, &cand, err);
  hs_plan_destroy(&cand);
  return st;
}

/* One step of the interleaving pass (hapt_vpp.h) over the plans hapt
 * simulated: the pool's finalists and the climb's plan when it moved.
 * O(hs__hapt_vpp_step). */
static hs_status_t vpp_step(hapt_t *s, bool *done, hs_error_t *err)
{
  const hs_plan_t *src[64];
  int32_t n = 0;
  for (int32_t k = 0; k < s->pool.next_sim && n < 63; k++)
    src[n++] = &s->pool.plans[k];
  if (s->ls_have && s->ls_moves > 0)
    src[n++] = &s->ls_best;
  return hs__hapt_vpp_step(&s->vpp, src, n, done, err);
}

/* Starts the fine pass: swaps the fine table and DP in, under the first
 * pass's practice, for every microbatch size (each size's sweep then stops
 * where the first pass's would: the offer slack and the size's best bound
 * it, so a size no fine layout can bring within HS_HAPT_OFFER_SLACK of the
 * best costs one or two DP runs); false when the first pass found no
 * layout at all. O(microbatch sizes). */
static bool fine_start(hapt_t *s)
{
  double best = INF;
  for (int32_t i = 0; i < s->h.n_mbs; i++)
    best = fmin(best, s->mb_best0[i]);
  if (!(best < INF))
    return false; /* the first pass found no layout */
  s->fine_sizes = s->h.n_mbs;
  hs_hspace_t th = s->h;
  s->h = s->hf;
  s->hf = th;
  hs_hapt_dp_t td = s->dp;
  s->dp = s->dpf;
  s->dpf = td;
  s->fine_done = true;
  s->offer_pool = &s->fpool;
  s->pass = HS_HAPT_PASS_FINE;
  s->mi = -1;
  return true;
}

/* After a pass over the microbatch sizes: starts the next one (the
 * memory-saving pass when a size needs it, then each context-parallel
 * pass) and returns true, or false when none is left. O(microbatch sizes). */
static bool next_pass(hapt_t *s)
{
  hs_hspace_t *h = &s->h;
  if (s->pass == 0 && s->save_on) {
    /* the memory-saving pass: the sizes without any ZeRO-1 layout, and
     * those whose best layout has a stage that memory forced to a slower
     * option (recomputation, another TP degree) */
    bool any = false;
    for (int32_t i = 0; i < h->n_mbs; i++)
      any = any || s->rerun[i];
    if (any) {
      s->pass = 1;
      s->mi = -1;
      hs_estimator_set_practice(h->est, &s->save_pr);
      return true;
    }
  }
  int32_t next = HS_MAX(s->pass + 1, 2);
  if (s->pass == HS_HAPT_PASS_FINE)
    return false;
  if (next - 2 >= s->n_cp)
    return s->fine_on && fine_start(s);
  s->pass = next;
  s->mi = -1;
  h->cp = s->cp_pr[next - 2].context_parallel;
  hs_estimator_set_practice(h->est, &s->cp_pr[next - 2]);
  return true;
}

/* Whether order adaptation of p cannot give a plan faster than s->beat_s:
 * it reorders the same items on every device (warm-up depths, explicit
 * orders), so each device still computes all of them, at full speed at
 * best, and the iteration lasts at least the busiest device's full-speed
 * compute (hs_report_t.max_device_work_s, read from a simulation stopped
 * at once). False without a beat_s. HS_ENOMEM only. O(lowering p). */
static hs_status_t order_bound(hapt_t *s, const hs_plan_t *p, bool *out, hs_error_t *err)
{
  *out = false;
  if (!(s->beat_s > 0.0))
    return HS_OK;
  hs_report_t rep;
  hs_report_init(&rep);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t st = hs__simulate_below(s->h.m, s->h.c, p, 1e-9, &rep, &e2);
  if (st == HS_ENOMEM)
    st = hs_error_set(err, st, "%s", e2.msg);
  else if (st == HS_OK)
    *out = rep.max_device_work_s >= s->beat_s;
  hs_report_destroy(&rep);
  return st == HS_ENOMEM ? st : HS_OK;
}

/* Order adaptation of the climb's final plan (hetero_warmup.h, then
 * hetero_order.h), into tuned when it is faster; left out when it cannot
 * beat s->beat_s (order_bound). O(budget simulations). */
static hs_status_t adapt_order(hapt_t *s, hs_error_t *err)
{
  hs_hspace_t *h = &s->h;
  hs_status_t st = HS_OK;
  /* Order adaptation: the climb's plan with its per-stage warm-up depths
   * (the order of forwards and backwards on each stage) tuned by the
   * simulator, within the same simulation budget as the climb. */
  if (s->ls_best.n_pipelines != 1 || s->ls_best.pipelines[0].n_stages < 2)
    return HS_OK;
  int32_t budget = (int32_t)HS_MAX(4, HS_MIN(64, HS_HAPT_LS_SIM_DEVICES / (int64_t)h->c->n_devices));
  /* past 128 GPUs (a budget under HS_HAPT_TUNE_MIN_SIMS simulations, each
   * of them dear) the adaptation is left out: a round of the warm-up climb
   * costs two simulations per stage, and on bench_search's 256 GPUs it was
   * a quarter of hapt's search time (docs/planners.md) */
  if (budget < HS_HAPT_TUNE_MIN_SIMS) {
    s->tune_skipped = true;
    return HS_OK;
  }
  bool hopeless = false;
  HS_CHECK(order_bound(s, &s->ls_best, &hopeless, err));
  if (hopeless) {
    s->order_pruned++;
    return HS_OK;
  }
  if (s->pool.deadline_s > 0.0) {
    /* as many simulations as end before the deadline, the final one kept aside */
    double one_s = s->pool.sim_scale * hs__sim_cost_s(&s->ls_best);
    double fit = (s->pool.deadline_s - hs__now_s()) / fmax(one_s, 1e-9) - 1.0;
    if (fit < budget + budget / 4 + 2) {
      s->pool.cut = true;
      if (fit < 8)
        return HS_OK; /* no room for a tuning round */
      budget = (int32_t)HS_MAX(4, (fit - 2) * 0.8);
    }
  }
  HS_CHECK(hs_plan_copy(&s->ls_best, &s->tuned, err));
  /* explicit warm-ups keep the timeline (hetero_warmup.h), so ls_best_s
   * stands for the tuned plan and the tuner does not simulate it again */
  hs__hetero_warmup_explicit(&s->tuned.pipelines[0]);
  double t;
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  st = hs__hetero_warmup_tune(h->m, h->c, &s->tuned, s->ls_best_s, budget, &t, &s->tune_sims,
                              &e2);
  if (st == HS_ENOMEM)
    return hs_error_set(err, st, "%s", e2.msg);
  st = HS_OK;
  s->tuned_have = isfinite(t) && t < s->ls_best_s;
  s->tuned_s = t;
  s->warm_have = s->tuned_have;
  /* then explicit per-stage orders (adjacent forward/backward swaps) from
   * the best warm-up depths, within a quarter of that budget (on the
   * scenarios it finds nothing, and the full budget doubled hapt's time) */
  if (!s->tuned_have) {
    hs_plan_destroy(&s->tuned);
    HS_CHECK(hs_plan_copy(&s->ls_best, &s->tuned, err));
    s->tuned_s = s->ls_best_s;
  }
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  st = hs__hetero_order_tune(h->m, h->c, &s->tuned, s->tuned_s, HS_MAX(4, budget / 4), &t,
                             &s->order_sims, &e2);
  if (st == HS_ENOMEM)
    return hs_error_set(err, st, "%s", e2.msg);
  st = HS_OK;
  if (isfinite(t) && t < s->tuned_s) {
    s->order_have = true;
    s->tuned_have = true;
    s->tuned_s = t;
  }
cleanup:
  return st;
}

/* After the fine pass's finalist was simulated: when it beat every coarse
 * finalist (so the first climb did not start from it) and is one
 * pipeline, sets up a second climb from it (ls_step with ls_from_fine,
 * the same budget, a fresh memo) and returns true; the first climb's
 * outcome moves to c1_*. Climbing from the fine layout instead of the
 * coarse one gave a slower plan in one case of five (README what-if "+8
 * H100", docs/planners.md), so both climbs run and the faster is kept.
 * O(1) plus freeing the memo. */
static bool fine_climb_start(hapt_t *s)
{
  if (!s->fine_on || s->fpool.best < 0 ||
      (s->pool.best >= 0 && !(s->fpool.best_sim_s < s->pool.best_sim_s)) ||
      s->fpool.plans[s->fpool.best].n_pipelines != 1 || s->pool.cut)
    return false;
  s->c1_best = s->ls_best;
  hs_plan_init(&s->ls_best);
  s->c1_best_s = s->ls_best_s;
  s->c1_have = s->ls_have;
  s->c1_sims = s->ls_sims;
  s->c1_moves = s->ls_moves;
  s->c1_tuned = s->tuned;
  hs_plan_init(&s->tuned);
  s->c1_tuned_s = s->tuned_s;
  s->c1_tuned_have = s->tuned_have;
  s->c1_warm_have = s->warm_have;
  s->c1_order_have = s->order_have;
  s->c1_tune_sims = s->tune_sims;
  s->c1_order_sims = s->order_sims;
  s->tuned_have = s->warm_have = s->order_have = false;
  s->tune_sims = s->order_sims = 0;
  hs_plan_destroy(&s->ls_round);
  hs_plan_init(&s->ls_round);
  hs__sim_memo_destroy(&s->ls_memo);
  s->ls_have = false;
  s->ls_sims = s->ls_moves = 0;
  s->ls_next = s->ls_rounds = 0;
  s->ls_best_est = 0.0;
  s->ls_from_fine = true;
  return true;
}

/* After the second climb and its order adaptation: its plan goes to
 * fine_ls (when the climb moved or the order adaptation found a faster
 * order), the first climb's outcome back to ls_* and tuned. O(1). */
static void fine_climb_end(hapt_t *s)
{
  s->fine_ls_sims = s->ls_sims;
  s->fine_ls_moves = s->ls_moves;
  s->fine_tune_sims = s->tune_sims + s->order_sims;
  hs_plan_destroy(&s->fine_ls);
  if (s->tuned_have) {
    s->fine_ls_have = true;
    s->fine_ls_s = s->tuned_s;
    s->fine_ls = s->tuned;
    hs_plan_destroy(&s->ls_best);
  } else {
    s->fine_ls_have = s->ls_have && s->ls_moves > 0;
    s->fine_ls_s = s->ls_best_s;
    s->fine_ls = s->ls_best;
    hs_plan_destroy(&s->tuned);
  }
  s->ls_best = s->c1_best;
  hs_plan_init(&s->c1_best);
  s->tuned = s->c1_tuned;
  hs_plan_init(&s->c1_tuned);
  s->tuned_s = s->c1_tuned_s;
  s->tuned_have = s->c1_tuned_have;
  s->warm_have = s->c1_warm_have;
  s->order_have = s->c1_order_have;
  s->tune_sims = s->c1_tune_sims;
  s->order_sims = s->c1_order_sims;
  s->ls_best_s = s->c1_best_s;
  s->ls_have = s->c1_have;
  s->ls_sims = s->c1_sims;
  s->ls_moves = s->c1_moves;
  s->ls_from_fine = false;
}

/* The largest max stage a smaller cap's solution can have and still be
 * offered to the pool, after sol (the solution at the current cap): a
 * smaller cap's sum is at least sol's (fewer candidates), so its score
 * sum + (B - 1) max is within HS_HAPT_OFFER_SLACK of the best so far only
 * when max <= (slack x best - sol's sum) / (B - 1). Caps above that give
 * only solutions that are not offered: the sweep jumps past them. With a
 * zero cap step every Pareto point that could be offered is still visited;
 * with HS_HAPT_CAP_STEP the caps after the jump may differ from those the
 * plain descent visits (docs/planners.md, "Cap jump"). INF (no jump) with
 * one microbatch (the score is the sum), before any best, and for MoE
 * models (every solution is offered). O(1). */
static double offer_cap(const hapt_t *s, const hs_hsol_t *sol)
{
  int32_t B = hs__hspace_B(&s->h);
  if (B < 2 || s->n_ep > 0 || !(s->best_all < INF))
    return INF;
  return (HS_HAPT_OFFER_SLACK * s->best_all - sol->sum_s) / (B - 1);
}

/* The DP phase's move to the next microbatch size, once the current
 * size's sweep is over (or before the first): records the finished size's
 * first-pass figures (best score, its largest stage, whether memory forced
 * a slower option), skips the sizes the pass does not run, and makes the
 * next size's table and first cap (*ready); past the last size, the next
 * pass or (none left) phase 1, whose first step comes next (*ready false).
 * HS_ENOMEM only. */
static hs_status_t next_size(hapt_t *s, bool *ready, hs_error_t *err)
{
  hs_hspace_t *h = &s->h;
  /* next microbatch size (every solution is already in the pool) */
  if (s->pass == 0 && s->mi >= 0)
    s->mb_best0[s->mi] = s->best_mb.n > 0 ? s->best_mb.score_s : INF;
  if (s->pass == 0 && s->mi >= 0)
    s->mb_max0[s->mi] = s->best_mb.n > 0 ? s->best_mb.max_s : INF;
  if (s->pass == 0 && s->mi >= 0 && s->best_mb.n > 0)
    for (int32_t i = 0; i < s->best_mb.n; i++)
      if (s->best_mb.st[i].opt > 0)
        s->rerun[s->mi] = true; /* memory forced a slower option on a stage */
  s->mi++;
  while (s->mi < h->n_mbs && s->pass == 1 && !s->rerun[s->mi])
    s->mi++;
  *ready = false;
  if (s->mi >= h->n_mbs) {
    if (!next_pass(s))
      s->phase = 1;
    return HS_OK;
  }
  /* The first cap of a microbatch size: a plan whose max stage is x
   * scores more than (B - 1) x, so stages slower than HS_HAPT_MB_SLACK
   * x the best score so far / (B - 1) cannot give a competitive
   * candidate (docs/planners.md: this size is then left out). */
  s->tmax = s->best_all < INF
                ? HS_HAPT_MB_SLACK * s->best_all / HS_MAX(hs__hspace_B_of(h, s->mi) - 1, 1)
                : INF;
  /* the fine pass starts at the largest stage of the size's best
   * first-pass layout: that layout's cuts are fine candidates too, so
   * the first fine cap holds it or better by the DP's measure */
  if (s->pass == HS_HAPT_PASS_FINE && s->mb_max0[s->mi] < INF)
    s->tmax = s->mb_max0[s->mi];
  /* the size's caps only descend from there: the table leaves out the
   * spans no cap can take */
  if (hs__hspace_table(h, s->mi, s->tmax) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  s->sweep = 0;
  s->best_mb.n = 0;
  s->best_mb.score_s = INF;
  s->first_run = true;
  s->uncapped = !(s->tmax < INF);
  *ready = true;
  return HS_OK;
}

/* One cap of the current size's sweep: the DP under s->tmax, its solution
 * offered to the pool when within HS_HAPT_OFFER_SLACK of the best so far,
 * the size's and the search's bests updated, and the next cap (0: the
 * sweep is over). HS_ENOMEM only. */
static hs_status_t sweep_step(hapt_t *s, double *progress, hs_error_t *err)
{
  hs_hspace_t *h = &s->h;
  hs__hapt_dp_run(&s->dp, h, s->tmax);
  s->dp_runs++;
  s->save_runs += s->pass == 1;
  s->cp_runs += s->pass >= 2 && s->pass < HS_HAPT_PASS_FINE;
  s->fine_runs += s->pass == HS_HAPT_PASS_FINE;
  s->sweep++;
  hs_hsol_t sol = {.st = hs_calloc((size_t)s->S + 1, sizeof(hs_hstage_t))};
  if (!sol.st)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  bool found = hs__hapt_dp_extract(&s->dp, h, &sol);
  /* only plausible candidates: within HS_HAPT_OFFER_SLACK of the best DP
   * score so far (whole-plan estimates of big plans are not free) */
  /* (every solution of an MoE model: expert parallelism, which the DP's
   * closed form does not see, may turn a slow layout into the best) */
  if (found && (s->n_ep > 0 || sol.score_s <= HS_HAPT_OFFER_SLACK * fmin(s->best_all, sol.score_s))) {
    hs_status_t st = offer_sol(s, &sol, err);
    if (st != HS_OK) {
      free(sol.st);
      return st;
    }
  }
  /* a size whose layouts memory forced to a slower option is swept
   * again under ZeRO-2 + SP: its best layout's, or any layout the sweep
   * visited (offer_cap leaves out caps, and with them maybe the best) */
  for (int32_t i = 0; s->pass == 0 && found && i < sol.n; i++)
    s->rerun[s->mi] = s->rerun[s->mi] || sol.st[i].opt > 0;
  if (s->first_run && s->pass == 0 && !found)
    s->rerun[s->mi] = true; /* no layout (within the size's first cap) under the DP's practice */
  s->first_run = false;
  if (!found) {
    s->tmax = 0.0; /* infeasible: smaller caps are too */
  } else {
    if (sol.score_s < s->best_mb.score_s) {
      memcpy(s->best_mb.st, sol.st, sizeof(hs_hstage_t) * (size_t)sol.n);
      s->best_mb.n = sol.n;
      s->best_mb.sum_s = sol.sum_s;
      s->best_mb.max_s = sol.max_s;
      s->best_mb.score_s = sol.score_s;
      s->best_all = fmin(s->best_all, sol.score_s);
    }
    /* Smaller caps only raise the sum, and a plan whose max stage is
     * x scores more than (B - 1) x: below both bounds nothing can beat
     * the best of this microbatch size. */
    double bound = fmin(sol.max_s * (1.0 - HS_HAPT_CAP_STEP),
                        s->best_mb.score_s / HS_MAX(hs__hspace_B(h) - 1, 1));
    bound = fmin(bound, offer_cap(s, &sol));
    double nc =
        sol.sum_s >= s->best_mb.score_s ? 0.0 : hs__hapt_dp_next_cap_in(&s->dp, h, bound);
    s->tmax = nc > 0.0 ? nc : 0.0;
  }
  free(sol.st);
  int32_t passes = 1 + s->save_on + s->n_cp + s->fine_on;
  int32_t pass_i = s->pass == HS_HAPT_PASS_FINE ? passes - 1 : s->pass;
  *progress = fmin(0.9, 0.9 * (s->mi + (double)s->sweep / HS_HAPT_MAX_SWEEPS) / h->n_mbs /
                               passes +
                           0.9 * pass_i / passes);
  return HS_OK;
}

static hs_status_t hapt_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  hapt_t *s = state;
  hs_hspace_t *h = &s->h;
  *done = false;
  if (s->phase == 0) {
    if (s->mi < 0 || s->tmax <= 0.0 ||
        s->sweep >= (s->pass == 1                   ? HS_HAPT_SAVE_SWEEPS
                     : s->pass == HS_HAPT_PASS_FINE ? HS_HAPT_FINE_SWEEPS
                                                    : HS_HAPT_MAX_SWEEPS)) {
      bool ready = false;
      hs_status_t st = next_size(s, &ready, err);
      if (st != HS_OK || !ready)
        return st;
    }
    return sweep_step(s, progress, err);
  }
  if (s->phase == 1) {
    if (!s->polished) {
      s->polished = true;
      return polish_pool(s, err);
    }
    bool sim_done = false;
    hs_status_t st = hs__cpool_sim_step(&s->pool, h->m, h->c, &sim_done, err);
    *progress = 0.9 + 0.05 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
    if (sim_done)
      s->phase = 2;
    return st;
  }
  if (s->phase == 2) {
    *progress = 0.95;
    hs_status_t st = ls_step(s, done, err);
    if (st == HS_OK && *done && s->ls_have)
      st = adapt_order(s, err);
    if (st != HS_OK || !*done)
      return st;
    s->phase = 4; /* then the interleaved variants */
    *done = false;
    return HS_OK;
  }
  if (s->phase == 4) {
    *progress = 0.97;
    hs_status_t st = vpp_step(s, done, err);
    if (st != HS_OK || !*done || s->fpool.n == 0)
      return st;
    s->phase = 3; /* then the fine pass's finalist */
    *done = false;
    return HS_OK;
  }
  if (s->phase == 3) {
    bool sim_done = false;
    hs_status_t st = hs__cpool_sim_step(&s->fpool, h->m, h->c, &sim_done, err);
    *progress = 0.98;
    if (st != HS_OK || !sim_done)
      return st;
    if (!fine_climb_start(s)) {
      *done = true;
      return HS_OK;
    }
    s->phase = 5;
    return HS_OK;
  }
  *progress = 0.99; /* phase 5: the second climb, then its order adaptation */
  hs_status_t st = ls_step(s, done, err);
  if (st == HS_OK && *done && s->ls_have)
    st = adapt_order(s, err);
  if (st == HS_OK && *done)
    fine_climb_end(s);
  return st;
}

static hs_status_t hapt_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                               hs_error_t *err)
{
  hapt_t *s = state;
  /* the coarse table and DP (swapped into hf and dpf by the fine pass) */
  const hs_hspace_t *hc = s->fine_done ? &s->hf : &s->h;
  uint64_t transitions = s->dp.transitions + s->dpf.transitions;
  stats->candidates = s->h.evaluated + s->hf.evaluated + transitions;
  stats->nodes_expanded = transitions;
  /* not a proof: the caps step by HS_HAPT_CAP_STEP, later microbatch sizes
   * start at a slack cap, and the DP may see fewer cuts than all_cuts */
  stats->optimal = false;
  snprintf(stats->note, sizeof stats->note,
           "%d cut candidates%s, %d subclusters, %d microbatch sizes%s, %llu DP runs (%llu under "
           "ZeRO-2), %d simulated; local search: %llu simulations, %llu moves%s",
           hc->n_cuts - 1, hc->coarse_cuts ? " (coarsened)" : "", hc->n_sc, hc->n_mbs,
           hc->n_mbs < hc->n_mbs_valid ? " (thinned)" : "",
           (unsigned long long)s->dp_runs, (unsigned long long)s->save_runs, s->pool.next_sim,
           (unsigned long long)s->ls_sims,
           (unsigned long long)s->ls_moves,
           s->search_practice ? "; ZeRO 0-3 and sequence parallelism searched" : "");
  if (s->n_cp > 0) {
    size_t l = strlen(stats->note);
    snprintf(stats->note + l, sizeof stats->note - l,
             "; context parallelism up to %d searched (%llu DP runs)",
             (int)s->cp_pr[s->n_cp - 1].context_parallel, (unsigned long long)s->cp_runs);
  }
  if (s->fine_done) {
    size_t l = strlen(stats->note);
    snprintf(stats->note + l, sizeof stats->note - l,
             "; fine pass: %d cut candidates, %d microbatch sizes, %llu DP runs, %d simulated",
             s->h.n_cuts - 1, s->fine_sizes, (unsigned long long)s->fine_runs, s->fpool.next_sim);
  }
  if (s->pool.n == 0)
    snprintf(s->pool.why, sizeof s->pool.why,
             "no stage layout fits in memory (largest mesh, full recomputation)");
  hs_status_t st = hs__cpool_result(&s->pool, out, &stats->predicted_s, "hapt", err);
  if (st == HS_OK && s->ls_have && s->ls_moves > 0) {
    /* the climb's plan: its simulated time is the prediction */
    hs_plan_destroy(out);
    hs_plan_init(out);
    st = hs_plan_copy(&s->ls_best, out, err);
    stats->predicted_s = s->ls_best_s;
  }
  if (st == HS_OK && s->tuned_have) {
    hs_plan_destroy(out);
    hs_plan_init(out);
    st = hs_plan_copy(&s->tuned, out, err);
    stats->predicted_s = s->tuned_s;
  }
  /* the fastest interleaved variant, when faster than all of that */
  if ((st == HS_OK || st == HS_EINFEASIBLE) && s->vpp.pool.best >= 0 &&
      (st != HS_OK || s->vpp.pool.best_sim_s < stats->predicted_s)) {
    hs_plan_destroy(out);
    hs_plan_init(out);
    hs_error_clear(err);
    st = hs_plan_copy(&s->vpp.pool.plans[s->vpp.pool.best], out, err);
    stats->predicted_s = s->vpp.pool.best_sim_s;
    s->vpp_kept = true;
  }
  /* the fine pass's simulated finalist, when faster than all of that */
  if ((st == HS_OK || st == HS_EINFEASIBLE) && s->fine_on && s->fpool.n > 0 && s->fpool.best >= 0 &&
      (st != HS_OK || s->fpool.best_sim_s < stats->predicted_s)) {
    hs_plan_destroy(out);
    hs_plan_init(out);
    hs_error_clear(err);
    st = hs_plan_copy(&s->fpool.plans[s->fpool.best], out, err);
    stats->predicted_s = s->fpool.best_sim_s;
    s->fine_kept = true;
  }
  /* the second climb's plan, when faster than all of that */
  if ((st == HS_OK || st == HS_EINFEASIBLE) && s->fine_ls_have &&
      (st != HS_OK || s->fine_ls_s < stats->predicted_s)) {
    hs_plan_destroy(out);
    hs_plan_init(out);
    hs_error_clear(err);
    st = hs_plan_copy(&s->fine_ls, out, err);
    stats->predicted_s = s->fine_ls_s;
    s->fine_kept = true;
  }
  if (s->fine_done && (s->fine_ls_sims > 0 || s->fine_kept)) {
    size_t l = strlen(stats->note);
    if (s->fine_ls_sims > 0)
      snprintf(stats->note + l, sizeof stats->note - l,
               ", its climb: %llu simulations, %llu moves, %d order simulations",
               (unsigned long long)s->fine_ls_sims, (unsigned long long)s->fine_ls_moves,
               s->fine_tune_sims);
    l = strlen(stats->note);
    if (s->fine_kept)
      snprintf(stats->note + l, sizeof stats->note - l, " (its plan kept)");
  }
  size_t len = strlen(stats->note);
  if (s->tune_sims > 0)
    snprintf(stats->note + len, sizeof stats->note - len,
             "; warm-up order: %d simulations%s; explicit order: %d simulations%s", s->tune_sims,
             s->warm_have ? ", adapted" : "", s->order_sims,
             s->order_have ? ", adapted" : "");
  else if (s->tune_skipped)
    snprintf(stats->note + len, sizeof stats->note - len,
             "; order adaptation skipped (over 128 GPUs)");
  if (s->order_pruned > 0) {
    /* the memo reads it (search_memo.h): the plan is the full search's
     * whenever it is faster than beat_s */
    stats->pruned_below_s = s->beat_s;
    len = strlen(stats->note);
    snprintf(stats->note + len, sizeof stats->note - len,
             "; order adaptation left out%s (the busiest device's compute alone is over the "
             "best plan so far)", s->order_pruned > 1 ? " twice" : "");
  }
  if (s->vpp.estimated > 0) {
    len = strlen(stats->note);
    snprintf(stats->note + len, sizeof stats->note - len,
             "; interleaving: %llu variants estimated, %d simulated%s",
             (unsigned long long)s->vpp.estimated, s->vpp.pool.next_sim,
             s->vpp_kept ? ", kept" : "");
  }
  if (s->ls_screened > 0) {
    len = strlen(stats->note);
    snprintf(stats->note + len, sizeof stats->note - len,
             "; %llu local-search neighbours ruled out by the estimate",
             (unsigned long long)s->ls_screened);
  }
  if (s->polish_moves > 0) {
    len = strlen(stats->note);
    snprintf(stats->note + len, sizeof stats->note - len,
             "; finalists polished by the estimate: %llu moves",
             (unsigned long long)s->polish_moves);
  }
  hs__cpool_note(&s->pool, stats->note, sizeof stats->note);
  return st;
}

static void hapt_free(void *state)
{
  hapt_t *s = state;
  hs__hspace_destroy(&s->h);
  hs__hapt_dp_destroy(&s->dp);
  hs__hapt_dp_destroy(&s->dpf);
  hs__hspace_destroy(&s->hf);
  free(s->best_mb.st);
  hs__cpool_destroy(&s->pool);
  hs__cpool_destroy(&s->fpool);
  for (int32_t i = 0; i < HS_HAPT_MAX_VARIANTS; i++)
    hs_estimator_free(s->var_est[i]);
  hs_plan_destroy(&s->ls_best);
  hs_plan_destroy(&s->ls_round);
  hs_plan_destroy(&s->tuned);
  hs__sim_memo_destroy(&s->ls_memo);
  hs_plan_destroy(&s->c1_best);
  hs_plan_destroy(&s->c1_tuned);
  hs_plan_destroy(&s->fine_ls);
  hs__hapt_vpp_destroy(&s->vpp);
}

const hs_planner_type_t hs_planner_hapt = {
    .name = "hapt",
    .description = "HAPT: op-level stage cuts over homogeneous subclusters, link-aware DP, hetero-1F1B",
    .state_size = sizeof(hapt_t),
    .init = hapt_init,
    .step = hapt_step,
    .result = hapt_result,
    .free = hapt_free,
};
