/*
 * megatron.c - `megatron`: what a Megatron-LM (Megatron-Core) user does on
 * any cluster, with every knob the framework offers. Grid search over TP x
 * PP x DP (TP a power of two inside a node that splits the heads), microbatch
 * size, recomputation (none, selective, full), interleaving (virtual
 * pipeline stages, --num-layers-per-virtual-pipeline-stage), uneven first
 * and last stages (--decoder-first/last-pipeline-num-layers), the
 * distributed optimizer (ZeRO-1, --use-distributed-optimizer) and sequence
 * parallelism (--sequence-parallel), ignoring device differences: equal
 * shares over the devices in cluster order. Candidates are scored with the
 * estimator (memory included); the best few are simulated and the fastest
 * that fits is returned.
 *
 * Search space (exact: every point is estimated; docs/planners.md):
 *  - tp in {1,2,..,max_tp} with hs_model_tp_ok, pp dividing devices/tp with
 *    pp <= blocks, dp = devices/(tp pp), microbatch b in {1,2,3,..,
 *    max_microbatch_size} with dp b dividing the global batch;
 *  - recompute in {none, selective, full} (none only without allow_recompute);
 *  - layout: the even split (hs_plan_grid); interleaved with v >= 2 chunks
 *    when pp > 1, blocks % (pp v) == 0 and the microbatch count is a
 *    multiple of pp (Megatron's rules); uneven: first and last stage with
 *    df, dl in [0, HS_MEGATRON_MAX_UNEVEN] blocks fewer than the m middle
 *    stages' (f + l + (pp-2) m = blocks), pp >= 2, not interleaved;
 *  - with search_practice: sequence parallelism off/on (tp > 1) and ZeRO
 *    stage o.zero or max(o.zero, 1); context parallelism C (powers of two
 *    dividing the sequence, from HS_MEGATRON_CP_MIN_SEQ tokens; dp =
 *    devices / (tp pp C)) and, for MoE, expert parallelism E (divisors of
 *    the experts dividing dp, not with ZeRO-3); without it (the classic
 *    grid of Megatron-LM 2021): the options' practice, recompute
 *    none/full, even split, no interleaving.
 * Candidates: |tp| x |pp| x |b| x 3 x (1 + |v| + |uneven|) x 4 x |C| x |E|, each
 * O(devices + ops) to build and estimate; a candidate whose time estimate
 * cannot enter the pool of the best few is not sized for memory (exact: the
 * pool ranks by that estimate). Plus hs__sim_budget simulations.
 */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CANDS_PER_STEP 16
#define HS_MEGATRON_MAX_UNEVEN 4 /* blocks fewer on the first / last stage */
/* Context parallelism is searched from this sequence length on: Megatron-
 * Core's parallelism guide recommends CP for "long sequences (8K+ tokens)"
 * (docs.nvidia.com/megatron-core/developer-guide, Parallelism Strategies
 * Guide, read 2026-11-24); below it the space is as before. */
#define HS_MEGATRON_CP_MIN_SEQ 8192
#define HS_MEGATRON_MAX_CP 32     /* --context-parallel-size: powers of two up to this */
/* ... each rank keeping at least this many tokens of the sequence (ours, a
 * search-space bound: 8K sequences get C = 2, 32K up to 8, 128K up to 32;
 * every extra C multiplies the candidates) */
#define HS_MEGATRON_CP_MIN_TOKENS 4096
#define HS_MEGATRON_MAX_PR 64     /* practice variants: 4 (SP, ZeRO) x 4 (CP) x 4 (EP) */

typedef struct cand {
  int32_t tp, pp, dp, mbs;
  hs_recompute_t rc;
  int32_t v;          /* chunks per rank, 1 = not interleaved */
  int32_t first, last;/* blocks on the first / last stage; 0 = even split */
  int32_t practice;   /* index into megatron_t.pr */
} cand_t;

typedef struct megatron {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_plan_opts_t o;
  hs_dtype_t dt;
  int64_t gb;
  hs_estimator_t *est;
  hs_practice_t pr[HS_MEGATRON_MAX_PR];
  int32_t n_pr;
  cand_t *cands;
  int32_t n_cands, next;
  int32_t *layer_first; /* first op of each block, n_layers + 1 entries (last = op after) */
  int32_t n_layers;
  hs_cand_pool_t pool;
  uint64_t scored;
  char why[256];
} megatron_t;

static hs_status_t push(megatron_t *s, size_t *cap, cand_t cd)
{
  if (s->n_cands >= HS_SEARCH_MAX_CANDIDATES)
    return HS_ELIMIT;
  if (hs_reserve((void **)&s->cands, cap, (size_t)s->n_cands + 1, sizeof *s->cands) != HS_OK)
    return HS_ENOMEM;
  s->cands[s->n_cands++] = cd;
  return HS_OK;
}

/* push with the error: HS_ELIMIT naming the limit, or out of memory. */
static hs_status_t push_or_fail(megatron_t *s, size_t *cap, cand_t cd, hs_error_t *err)
{
  hs_status_t st = push(s, cap, cd);
  if (st == HS_ELIMIT)
    return hs_error_set(err, st,
                        "megatron: more than %lld grid candidates (HS_SEARCH_MAX_CANDIDATES) on %zu "
                        "GPUs with --max-microbatch-size %d: use a smaller --max-microbatch-size",
                        (long long)HS_SEARCH_MAX_CANDIDATES, s->c->n_devices,
                        s->o.max_microbatch_size);
  if (st != HS_OK)
    return hs_error_set(err, st, "out of memory");
  return HS_OK;
}

/* Block structure: first op of each block; n_layers 0 when the model has
 * no blocks (only even splits then). O(ops). */
static hs_status_t find_layers(megatron_t *s)
{
  const hs_model_t *m = s->m;
  int32_t max_layer = -1;
  for (size_t i = 0; i < m->n_ops; i++)
    max_layer = HS_MAX(max_layer, m->ops[i].layer);
  s->n_layers = max_layer + 1;
  if (s->n_layers <= 0)
    return HS_OK;
  s->layer_first = hs_calloc((size_t)s->n_layers + 1, sizeof *s->layer_first);
  if (!s->layer_first)
    return HS_ENOMEM;
  for (int32_t k = 0; k <= s->n_layers; k++)
    s->layer_first[k] = -1;
  for (size_t i = m->n_ops; i-- > 0;)
    if (m->ops[i].layer >= 0)
      s->layer_first[m->ops[i].layer] = (int32_t)i;
  /* ops after the last block (final norm, head, loss) stay with it */
  s->layer_first[s->n_layers] = (int32_t)m->n_ops;
  for (int32_t k = 0; k < s->n_layers; k++)
    if (s->layer_first[k] < 0) { /* blocks not numbered 0..L-1: no uneven splits */
      free(s->layer_first);
      s->layer_first = NULL;
      s->n_layers = 0;
      return HS_OK;
    }
  return HS_OK;
}

/* The model's MoE expert count (0 for a dense model). O(ops). */
static int32_t model_experts(const hs_model_t *m)
{
  int32_t x = 0;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].kind == HS_OP_MOE_EXPERT)
      x = HS_MAX(x, m->ops[i].experts);
  return x > 1 ? x : 0;
}

/* The practice variants searched: the options', then with sequence
 * parallelism and/or the distributed optimizer when the options leave them
 * off; each also with context parallelism C (powers of two dividing the
 * sequence, from HS_MEGATRON_CP_MIN_SEQ tokens on, at least
 * HS_MEGATRON_CP_MIN_TOKENS per rank) and, for an MoE model,
 * expert parallelism E (every divisor >= 2 of the experts, up to 8 values)
 * when the options leave them at 1. The first n_base variants (C = E = 1)
 * are the space as it was before CP and EP were searched, in the same order. */
static void practices(megatron_t *s)
{
  hs_practice_t base = s->o.practice;
  s->pr[0] = base;
  s->n_pr = 1;
  if (!s->o.search_practice)
    return;
  for (int sp = 0; sp < 2; sp++)
    for (int z = 0; z < 2; z++) {
      if ((sp && base.sequence_parallel) || (z && base.zero_stage >= 1) || (!sp && !z))
        continue;
      hs_practice_t p = base;
      p.sequence_parallel = base.sequence_parallel || sp;
      p.zero_stage = z ? HS_MAX(base.zero_stage, 1) : base.zero_stage;
      s->pr[s->n_pr++] = p;
    }
  int32_t cps[8] = {1}, eps[8] = {1}, n_cp = 1, n_ep = 1;
  int64_t seq = s->m->seq_len;
  if (base.context_parallel <= 1 && seq >= HS_MEGATRON_CP_MIN_SEQ)
    for (int32_t C = 2; C <= HS_MEGATRON_MAX_CP && n_cp < 8 && seq / C >= HS_MEGATRON_CP_MIN_TOKENS; C *= 2)
      if (seq % C == 0)
        cps[n_cp++] = C;
  int32_t experts = model_experts(s->m);
  if (base.expert_parallel <= 1)
    for (int32_t E = 2; E <= experts && n_ep < 8; E++)
      if (experts % E == 0)
        eps[n_ep++] = E;
  int32_t n_base = s->n_pr;
  for (int32_t a = 0; a < n_cp; a++)
    for (int32_t b = 0; b < n_ep; b++) {
      if (a == 0 && b == 0)
        continue;
      for (int32_t k = 0; k < n_base && s->n_pr < HS_MEGATRON_MAX_PR; k++) {
        hs_practice_t p = s->pr[k];
        p.context_parallel = cps[a];
        p.expert_parallel = eps[b];
        s->pr[s->n_pr++] = p;
      }
    }
}

static hs_status_t megatron_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                                 const hs_plan_opts_t *o, hs_error_t *err)
{
  megatron_t *s = state;
  hs_status_t st = HS_OK;
  memset(s, 0, sizeof *s);
  s->m = m;
  s->c = c;
  s->o = *o;
  s->dt = hs__precision(o, c);
  s->gb = hs__global_batch(o, c);
  HS_CHECK(hs_estimator_new(m, c, s->dt, &s->est, err));
  hs_estimator_set_deadline(s->est, o->deadline_s);
  hs_estimator_set_practice(s->est, &o->practice);
  if (hs__cpool_init(&s->pool, hs__sim_budget(c)) != HS_OK || find_layers(s) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  s->pool.deadline_s = o->deadline_s;
  s->pool.beat_s = o->beat_s; /* it returns the pool's best: no use simulating past beat_s */
  practices(s);
  int32_t n = (int32_t)c->n_devices;
  int64_t layers = hs_model_layers(m);
  if (layers < 1)
    layers = 1;
  int32_t L = s->n_layers;
  int32_t max_tp = hs__max_tp(c);
  static const hs_recompute_t rcs[] = {HS_RECOMPUTE_NONE, HS_RECOMPUTE_SELECTIVE,
                                       HS_RECOMPUTE_FULL};
  size_t cap = 0;
  /* practice outermost: the estimator's cache is emptied when it changes */
  for (int32_t k = 0; k < s->n_pr; k++)
    for (int32_t tp = 1; tp <= max_tp; tp *= 2) {
      if (n % tp || !hs_model_tp_ok(m, tp))
        continue;
      if (tp == 1 && s->pr[k].sequence_parallel && !o->practice.sequence_parallel)
        continue; /* nothing to split: the same plan as without */
      int32_t C = HS_MAX(s->pr[k].context_parallel, 1), E = HS_MAX(s->pr[k].expert_parallel, 1);
      for (int32_t pp = 1; pp <= n / tp && pp <= layers; pp++) {
        if ((n / tp) % pp || (n / tp / pp) % C)
          continue;
        if (hs__past(o->deadline_s))
          goto enumerated; /* the grid so far is searched */
        /* dp pipelines of C context-parallel replicas per stage; experts
         * split over groups of E pipelines (not with ZeRO-3) */
        int32_t dp = n / tp / pp / C;
        if (dp % E || (E > 1 && s->pr[k].zero_stage >= 3))
          continue;
        for (int32_t b = 1; b <= HS_MAX(o->max_microbatch_size, 1); b++) {
          if (s->gb % ((int64_t)dp * b))
            continue;
          int64_t n_mb = s->gb / ((int64_t)dp * b);
          for (int r = 0; r < (o->allow_recompute ? 3 : 1); r++) {
            if (rcs[r] == HS_RECOMPUTE_SELECTIVE && !o->search_practice)
              continue;
            cand_t cd = {tp, pp, dp, b, rcs[r], 1, 0, 0, k};
            HS_CHECK(push_or_fail(s, &cap, cd, err));
            if (pp < 2 || L < 2 || !o->search_practice)
              continue;
            /* interleaved: v chunks per rank */
            if (n_mb % pp == 0)
              for (int32_t v = 2; (int64_t)pp * v <= L; v++) {
                if (L % (pp * v))
                  continue;
                cand_t ci = cd;
                ci.v = v;
                HS_CHECK(push_or_fail(s, &cap, ci, err));
              }
            /* uneven first / last stages */
            for (int32_t df = 0; df <= HS_MEGATRON_MAX_UNEVEN; df++)
              for (int32_t dl = 0; dl <= HS_MEGATRON_MAX_UNEVEN; dl++) {
                if ((df == 0 && dl == 0) || (pp == 2 && df && dl) || (L + df + dl) % pp)
                  continue;
                int32_t mid = (L + df + dl) / pp, f = mid - df, l = mid - dl;
                if (f < 1 || l < 1)
                  continue;
                cand_t cu = cd;
                cu.first = f;
                cu.last = l;
                HS_CHECK(push_or_fail(s, &cap, cu, err));
              }
          }
        }
      }
    }
enumerated:
  if (s->n_cands == 0 && hs__past(o->deadline_s))
    HS_FAIL(hs_error_set(err, HS_ELIMIT,
                         "megatron: time limit: no grid point enumerated before it; raise "
                         "--time-limit"));
  if (s->n_cands == 0)
    HS_FAIL(hs_error_set(err, HS_EINFEASIBLE,
                         "megatron: no tp x pp x dp grid of %d devices divides the global batch %lld",
                         n, (long long)s->gb));
  return HS_OK;
cleanup:
  hs_estimator_free(s->est);
  s->est = NULL;
  hs__cpool_destroy(&s->pool);
  free(s->cands);
  s->cands = NULL;
  free(s->layer_first);
  s->layer_first = NULL;
  return st;
}

/* Moves the stage boundaries of every pipeline of a grid plan to f blocks
 * on the first stage, l on the last and the rest evenly in between (the
 * embedding stays with the first stage, the head with the last). */
static void uneven(const megatron_t *s, hs_plan_t *p, int32_t f, int32_t l)
{
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t S = pl->n_stages;
    int32_t mid = S > 2 ? (s->n_layers - f - l) / (S - 2) : 0;
    for (int32_t k = 0; k + 1 < S; k++) {
      int32_t end = f + k * mid; /* blocks before stage k + 1 */
      pl->stages[k].op_last = s->layer_first[end];
      pl->stages[k + 1].op_first = s->layer_first[end];
    }
  }
}

/* Builds, estimates and offers one candidate. Skipped (reason in why[]):
 * a grid that cannot be built, one that does not fit. */
static hs_status_t offer(megatron_t *s, const cand_t *cd, hs_error_t *err)
{
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = cd->tp;
  g.pp = cd->pp;
  g.dp = cd->dp;
  g.microbatch_size = cd->mbs;
  g.global_batch = s->gb;
  g.recompute = cd->rc;
  g.practice.context_parallel = HS_MAX(s->pr[cd->practice].context_parallel, 1);
  if (cd->v > 1) {
    g.schedule = "interleaved-1f1b";
    g.chunks = cd->v;
  }
  hs_plan_t plan;
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t gs = hs_plan_grid(s->m, s->c, &g, &plan, &e2);
  if (gs == HS_ENOMEM) /* not a grid that cannot be built: the search would answer otherwise */
    return hs_error_set(err, gs, "%s", e2.msg);
  if (gs != HS_OK) {
    snprintf(s->why, sizeof s->why, "%.200s", e2.msg);
    return HS_OK;
  }
  if (cd->first > 0)
    uneven(s, &plan, cd->first, cd->last);
  hs_strlcpy(plan.strategy, "megatron", sizeof plan.strategy);
  plan.precision = s->dt;
  hs_plan_set_practice(&plan, &s->pr[cd->practice]);
  hs_estimate_t es;
  /* a candidate that cannot enter the pool is answered by a bound and
   * needs no memory check */
  bool full = s->pool.n == s->pool.cap;
  hs_estimator_set_cutoff(s->est, full ? s->pool.est_s[s->pool.n - 1] : INFINITY);
  hs_status_t st = hs_estimate_plan(s->est, &plan, false, &es, err);
  hs_estimator_set_cutoff(s->est, INFINITY);
  s->scored++;
  if (st == HS_OK && !es.bounded && !(full && es.iteration_s >= s->pool.est_s[s->pool.n - 1]))
    st = hs_estimate_memory(s->est, &plan, &es, err);
  else if (st == HS_OK) {
    hs_plan_destroy(&plan);
    return HS_OK;
  }
  if (st != HS_OK) {
    hs_plan_destroy(&plan);
    return st;
  }
  if (es.oom) {
    char b1[32], b2[32];
    snprintf(s->why, sizeof s->why, "out of memory: the best grid does not fit: %s needed, %s on device %d",
             hs_fmt_bytes(es.max_memory_bytes, b1, sizeof b1),
             hs_fmt_bytes(hs_cluster_gpu(s->c, es.oom_device)->mem_bytes, b2, sizeof b2), es.oom_device);
    hs_plan_destroy(&plan);
    return HS_OK;
  }
  hs__cpool_offer(&s->pool, &plan, es.iteration_s);
  return HS_OK;
}

static hs_status_t megatron_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  megatron_t *s = state;
  hs_status_t st = HS_OK;
  *done = false;
  if (s->next < s->n_cands) {
    for (int32_t k = 0; k < CANDS_PER_STEP && s->next < s->n_cands; k++, s->next++) {
      if (hs__past(s->o.deadline_s)) {
        s->next = s->n_cands; /* the candidates estimated so far go to the simulations */
        break;
      }
      HS_CHECK(offer(s, &s->cands[s->next], err));
    }
    *progress = 0.8 * s->next / s->n_cands;
    return HS_OK;
  }
  HS_CHECK(hs__cpool_sim_step(&s->pool, s->m, s->c, done, err));
  *progress = 0.8 + 0.2 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
cleanup:
  return st;
}

static hs_status_t megatron_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                                   hs_error_t *err)
{
  megatron_t *s = state;
  if (s->pool.n == 0 && s->why[0])
    snprintf(s->pool.why, sizeof s->pool.why, "%s", s->why);
  hs_status_t st = hs__cpool_result(&s->pool, out, &stats->predicted_s, "megatron", err);
  stats->candidates = s->scored;
  snprintf(stats->note, sizeof stats->note, "%d grid points, %d simulated", s->n_cands,
           s->pool.next_sim);
  hs__cpool_note(&s->pool, stats->note, sizeof stats->note);
  stats->pruned_below_s = hs__cpool_pruned_below(&s->pool);
  return st;
}

static void megatron_free(void *state)
{
  megatron_t *s = state;
  hs_estimator_free(s->est);
  hs__cpool_destroy(&s->pool);
  free(s->cands);
  free(s->layer_first);
}

const hs_planner_type_t hs_planner_megatron = {
    .name = "megatron",
    .description = "Megatron-LM: TP x PP x DP grid, interleaving, uneven first/last stages, "
                   "selective/full recompute, distributed optimizer, sequence parallelism "
                   "(device-agnostic)",
    .state_size = sizeof(megatron_t),
    .init = megatron_init,
    .step = megatron_step,
    .result = megatron_result,
    .free = megatron_free,
};
