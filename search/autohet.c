/*
 * autohet.c - AutoHet-style asymmetric 3D parallelism as a MILP (GLPK via
 * lp.c). docs/autohet.md has the formulation, its sources and deviations.
 *
 * Search space. A TP pattern (a degree in 1, 2, 4, 8 per GPU type, at most
 * the type's smallest node, dividing the heads: hs_model_tp_ok) cuts every
 * node into TP groups of its type's degree (one node, one GPU type; leftover
 * GPUs of a node stay idle); split patterns give one type's nodes two or
 * three degrees, mixed ones split every node of a type into two halves of
 * different degree (MIX_BASE). The groups are partitioned into G pipelines (DP
 * replicas); a pipeline's stages are its groups in device order (site, node,
 * rank), sorted by GPU type in a permutation of the types, site-major (sites
 * in device order or reversed) with a type permutation inside each site, or
 * by group memory, largest first (order_key); every group is one stage. TP is symmetric across data-parallel chains: the runs of equal
 * degree along every pipeline are the same sequence and hold the same blocks
 * (integer boundaries X_j shared by all pipelines), so an op has one TP
 * degree wherever it is held. For each (pattern, microbatch size b,
 * recomputation, partition, order) a MILP chooses the integer number of transformer blocks per
 * stage (>= 1; embedding with the first stage, head and loss with the last)
 * and the integer number of microbatches per pipeline (sum = B / b),
 * minimising the iteration time
 *     T >= sum_s t_s + 2 sum_cuts c + (m_g - 1) tmax_g + (y_g + o_g) L_g0
 * per pipeline g (1F1B fill/drain plus steady state, the exposed gradient
 * sync and optimizer step of the first stage, which finishes last), with
 * t_s = f_s L_s + pre/post ops, tmax_g >= t_s + c_in + c_out (blocking
 * sends; a stage order with a cross-site cut is listed again under
 * hetero-1f1b's async sends: tmax_g >= t_s and tmax_g >= c, the warm-up's
 * extra microbatches in the memory row), and per-stage memory (16 B/param state + activations of the
 * S_g - s microbatches 1F1B keeps in flight) under the GPU's capacity. The
 * product (m_g - 1) tmax_g is linearised exactly by a binary expansion of
 * m_g - 1 = sum_k 2^k z_gk with w_gk >= tmax_g - U_g (1 - z_gk), w_gk >= 0.
 *
 * Partitions: every set partition when there are at most EXHAUSTIVE_GROUPS
 * TP groups (Bell numbers: 203 for 6), otherwise three heuristics per G
 * (LPT on compute, contiguous in device order, strided across device order).
 * Every configuration first gets a greedy integer point under the same cost
 * model (an incumbent and a pool candidate); configurations are solved best
 * greedy point first, the rest by a perfect-balance lower bound
 * M L / sum_s (1 / f_s) (round-robin over (pattern, b, recompute) classes);
 * each MILP gets the constraint T <= 1.1 x best so far, so a configuration
 * that cannot come close is refuted at the root. The best few plans by MILP
 * objective are simulated at the end (hs__pool_*) and the best simulated one
 * is returned.
 *
 * State: the configuration list, the best objective, the candidate pool.
 * Each step solves one MILP, then simulates one pool entry. Per MILP:
 * O(groups + G log2 M) variables and rows; exponential worst case inside
 * GLPK, bounded by a work limit (and a time limit when the caller sets one).
 *
 * Files (autohet_internal.h lists them): this one holds the type object
 * and the driver; the search space, stage orders, cost model, greedy
 * points, MILP and practice transforms each have their own.
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double hs__autohet_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The driver's deadline (opts.deadline_s, --time-limit less the final
 * simulation's reserve) has passed: enumeration stops where it is and the
 * search goes on with the configurations listed so far (none: the driver
 * reports the time limit). Checked once per configuration pushed, per
 * microbatch size and class, and per greedy point, so init stops within
 * one partition's cost of the deadline (at 16,384 GPUs it ran past 60 s
 * on a 10 s limit before). */
bool hs__autohet_out_of_time(autohet_t *a)
{
  if (!hs__past(a->o.deadline_s))
    return false;
  a->budget_hit = a->deadline_hit = true;
  return true;
}


/* ---- type object --------------------------------------------------------------- */

static void autohet_free(void *state)
{
  autohet_t *a = state;
  if (!a)
    return;
  hs_estimator_free(a->est);
  free(a->block_first);
  for (int i = 0; i < MAX_PATTERNS; i++) {
    free(a->groups[i]);
    free(a->pat_node_t[i]);
  }
  free(a->kind_of_node);
  free(a->configs);
  free(a->assign);
  free(a->keys);
  free(a->base);
  free(a->sort_tmp);
  free(a->ord_tmp);
  free(a->p2p.e);
  free(a->ar.e);
  free(a->ar.devs);
  hs__cpool_destroy(&a->pool);
  hs__cpool_destroy(&a->xpool);
  hs__sim_memo_destroy(&a->sims);
  hs__sim_memo_destroy(&a->oom_sims);
  for (int32_t i = 0; i < a->n_xsrc; i++)
    hs_plan_destroy(&a->xsrc[i]);
  memset(a, 0, sizeof *a);
}

/* Blocks of the model (a->L, a->block_first): contiguous runs of ops of
 * one layer, in order; block_first[L] is the first op after the blocks. A
 * model without blocks or with a block out of order is HS_EINFEASIBLE.
 * O(ops). */
static hs_status_t find_blocks(autohet_t *a, hs_error_t *err)
{
  const hs_model_t *m = a->m;
  int64_t L64 = hs_model_layers(m);
  if (L64 < 1 || L64 > 100000)
    return hs_error_set(err, HS_EINFEASIBLE, "autohet: model \"%s\" has no transformer blocks",
                        m->name);
  a->L = (int32_t)L64;
  a->block_first = hs_calloc((size_t)a->L + 1, sizeof *a->block_first);
  if (!a->block_first)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  /* blocks must be contiguous and in order: block_first[l] = first op of l */
  for (int32_t l = 0; l <= a->L; l++)
    a->block_first[l] = -1;
  int32_t last_block_op = -1;
  for (size_t i = 0; i < m->n_ops; i++) {
    int32_t l = m->ops[i].layer;
    if (l < 0)
      continue;
    if (l >= a->L || (i > 0 && m->ops[i - 1].layer != l && a->block_first[l] >= 0))
      return hs_error_set(err, HS_EINFEASIBLE, "autohet: ops[%zu]: block %d is not contiguous", i,
                          l);
    if (a->block_first[l] < 0) {
      if (l > 0 && a->block_first[l - 1] < 0)
        return hs_error_set(err, HS_EINFEASIBLE, "autohet: ops[%zu]: block %d before block %d", i,
                            l, l - 1);
      a->block_first[l] = (int32_t)i;
    }
    last_block_op = (int32_t)i;
  }
  a->block_first[a->L] = last_block_op + 1;
  for (int32_t l = 0; l < a->L; l++)
    if (a->block_first[l] < 0)
      return hs_error_set(err, HS_EINFEASIBLE, "autohet: block %d has no ops", l);
  return HS_OK;
}

/* Budgets (work, one MILP's work, time), the estimator, the training
 * practice (base_pr, ZeRO classes, variant count), the candidate pools and
 * the CP/EP degrees, from the options. Reads a->m, a->c, a->o. */
static hs_status_t set_budgets(autohet_t *a, const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_cluster_t *c = a->c;
  a->B = hs__global_batch(o, c);
  a->maxmb = o->max_microbatch_size > 0 ? o->max_microbatch_size : 8;
  /* Default budget: 1e7 work units x (3 + 0.015 per GPU), at most 40x
   * (bench_search: 3.5 s at 64 GPUs, 16 s at 1024; the final simulations
   * come on top), or the caller's work_limit. Work is counted in GLPK's
   * progress, so the plan does not depend on how busy the machine is; a time
   * limit from the caller (sweep and whatif pass 60 s) only caps it. The
   * driver gives each device subset its share of the default (work_share,
   * by device count), so the total over the subsets stays bounded. */
  double share = o->work_share > 0 && o->work_share < 1 ? o->work_share : 1.0;
  a->budget_work = o->work_limit > 0 ? o->work_limit
                                     : 1e7 * fmin(40.0, 3.0 + 0.015 * (double)c->n_devices) * share;
  /* a MILP's own limit follows the undivided budget, so a subset's MILPs
   * are solved as deep as the whole cluster's (only fewer of them) */
  a->milp_work = fmax(2e6, (o->work_limit > 0 ? a->budget_work : a->budget_work / share) / 20.0);
  if (o->time_limit_s > 0)
    a->budget_s = o->time_limit_s;
  HS_CHECK(hs_estimator_new(a->m, c, a->o.precision, &a->est, err));
  hs_estimator_set_deadline(a->est, o->deadline_s);
  /* training practice (ours: AutoHet's record says nothing of it). With
   * practice search, stage costs and memory assume sequence parallelism
   * on TP groups (plans without TP drop it: hs_plan_set_practice), and the
   * configurations come in ZeRO-2 and ZeRO-3 classes (memory and optimizer
   * step sharded over the G pipelines); the best simulated plan is then
   * tried under every ZeRO stage from the options' up, with and without
   * SP, with blocking 1F1B and with hetero-1f1b's async sends */
  a->base_pr = o->practice;
  a->zs[a->n_zs++] = o->practice.zero_stage;
  if (o->search_practice) {
    a->base_pr.sequence_parallel = true;
    a->zs[0] = HS_MAX(o->practice.zero_stage, 2);
    if (a->zs[0] < 3)
      a->zs[a->n_zs++] = 3;
  }
  a->n_var = 2 * (4 - o->practice.zero_stage) *
             (o->search_practice && !o->practice.sequence_parallel ? 2 : 1);
  if (!o->search_practice)
    a->n_var = 2; /* the schedule only */
  hs_estimator_set_practice(a->est, &a->base_pr);
  /* the best few plans by the cost model are simulated; on small clusters
   * (simulations are cheap) more of them, since the model's ranking is
   * only as good as its blocking-1F1B approximation (docs/autohet.md) */
  int32_t pool_n = c->n_devices <= SMALL_POOL_DEVICES ? SMALL_POOL
                   : c->n_devices <= MID_POOL_DEVICES ? MID_POOL
                                                      : HS_MAX(2, hs__sim_budget(c));
  if (hs__cpool_init(&a->pool, pool_n) != HS_OK ||
      hs__cpool_init(&a->xpool, HS_MIN(pool_n, X_POOL)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  a->pool.deadline_s = o->deadline_s; /* finalists predicted past it are left out */
  a->xpool.deadline_s = o->deadline_s;
  hs__sim_memo_init(&a->sims);
  hs__sim_memo_init(&a->oom_sims);
  a->pool.memo = a->xpool.memo = &a->sims;
  hs__autohet_practice_degrees(a);
cleanup:
  return st;
}

/* Initialises the planner state: blocks, budgets and practice, the GPU
 * types and TP degrees, the base TP patterns, the stage orders, every
 * base pattern's configurations, then the split patterns around the best
 * of them; finally the configurations in solve order (cmp_config). On
 * failure the state is freed and err names the cause. */
static hs_status_t autohet_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                                const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  autohet_t *a = state;
  autohet_tp_t tp = {0};
  memset(a, 0, sizeof *a);
  a->t_start = hs__autohet_now_s();
  a->m = m;
  a->c = c;
  a->o = *o;
  a->o.precision = hs__precision(o, c);
  a->all_proven = true;
  if (!m || !c || m->n_ops == 0 || c->n_devices == 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "autohet: empty model or cluster"));
  HS_CHECK(find_blocks(a, err));
  HS_CHECK(set_budgets(a, o, err));
  HS_CHECK(hs__autohet_kinds(a, &tp, err));
  HS_CHECK(hs__autohet_base_patterns(a, &tp, err));
  hs__autohet_stage_orders(a);
  int32_t n_base = a->n_pats;
  for (int32_t ti = 0; ti < n_base && !hs__autohet_out_of_time(a); ti++)
    HS_CHECK(hs__autohet_pattern_configs(a, ti, err));
  if (a->n_kinds <= MAX_KINDS)
    HS_CHECK(hs__autohet_split_patterns(a, &tp, n_base, err));
  free(tp.node_t);
  tp.node_t = NULL;
  if (a->n_configs == 0)
    HS_FAIL(hs_error_set(err, HS_EINFEASIBLE,
                         "autohet: no configuration (global batch %lld, %zu devices)",
                         (long long)a->B, c->n_devices));
  qsort(a->configs, a->n_configs, sizeof *a->configs, hs__autohet_cmp_config);
  return HS_OK;
cleanup:
  free(tp.node_t);
  if (st != HS_OK && err && !err->msg[0])
    hs_error_set(err, st, "autohet: %s", hs_status_message(st));
  autohet_free(a);
  return st;
}

static hs_status_t autohet_step_one(autohet_t *a, bool *done, double *progress, hs_error_t *err);

/* One step; a failure always carries a message (lp.c and the plan
 * allocators return HS_ENOMEM without one). */
static hs_status_t autohet_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  hs_status_t st = autohet_step_one(state, done, progress, err);
  if (st != HS_OK && err && !err->msg[0])
    hs_error_set(err, st, "autohet: %s", hs_status_message(st));
  return st;
}

static hs_status_t autohet_step_one(autohet_t *a, bool *done, double *progress, hs_error_t *err)
{
  *done = false;
  *progress = -1.0;
  if (!a->sim_phase) {
    /* MILP phase; 85% of the budget, the rest for simulating the pool */
    a->deadline_hit |= hs__past(a->o.deadline_s);
    bool spent = (a->budget_s > 0 && hs__autohet_now_s() - a->t_start > 0.85 * a->budget_s) ||
                 a->deadline_hit ||
                 (a->budget_work > 0 && a->work > MILP_SHARE * a->budget_work);
    if (a->next < a->n_configs && spent) {
      a->budget_hit = true;
      a->next = a->n_configs;
    }
    if (a->next >= a->n_configs) {
      a->sim_phase = true;
      return HS_OK;
    }
    const config_t *cf = &a->configs[a->next++];
    *progress = 0.9 * (double)a->next / (double)a->n_configs;
    /* a configuration whose lower bound cannot reach the pool is skipped */
    if (a->have_best && cf->lb_s >= a->best_T * CUTOFF)
      return HS_OK;
    return hs__autohet_solve_config(a, cf, err);
  }
  if (!a->var_phase) {
    bool sim_done = false;
    hs_status_t st = hs__cpool_sim_step(&a->pool, a->m, a->c, &sim_done, err);
    if (st != HS_OK) {
      *done = true;
      return st;
    }
    a->var_phase = sim_done;
    *progress = 0.95;
    return HS_OK;
  }
  /* variants of the best plan, then the transforms of the finalists; when
   * a transform wins, the variants again on it (so the plan is never
   * worse than the variants of the untransformed best) */
  if (a->pool.best >= 0 && a->var_next < a->n_var + (a->o.search_practice ? 2 : 0)) {
    *progress = 0.97;
    hs_status_t st = hs__autohet_variant_step(a, a->var_next++, err);
    *done = st != HS_OK;
    return st;
  }
  if (!a->x_done) {
    *progress = 0.96;
    hs_status_t st = hs__autohet_transform_step(a, err);
    if (st == HS_OK && a->x_done && a->x_better)
      a->var_next = 0;
    *done = st != HS_OK;
    return st;
  }
  *done = true;
  *progress = 1.0;
  return HS_OK;
}

static hs_status_t autohet_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                                  hs_error_t *err)
{
  autohet_t *a = state;
  memset(stats, 0, sizeof *stats);
  stats->search_s = hs__autohet_now_s() - a->t_start;
  stats->candidates = a->milps;
  stats->nodes_expanded = 0;
  if (!a->have_best && !a->have_rounded)
    return hs_error_set(err, HS_EINFEASIBLE,
                        "autohet: no feasible plan (%llu MILPs; memory or batch %lld too small?)",
                        (unsigned long long)a->milps, (long long)a->B);
  hs_status_t st = hs__cpool_result(&a->pool, out, &stats->predicted_s, "autohet", err);
  if (st != HS_OK)
    return st;
  bool exhaustive = true;
  for (int ti = 0; ti < a->n_pats; ti++)
    exhaustive &= a->n_groups[ti] <= EXHAUSTIVE_GROUPS;
  stats->optimal = a->all_proven && !a->budget_hit && exhaustive;
  snprintf(stats->note, sizeof stats->note,
           "best MILP %.6g s; %llu greedy points, %llu MILPs (%llu refuted by the incumbent, %lld simplex iterations), %zu configurations%s%s%s",
           a->best_T, (unsigned long long)a->greedy, (unsigned long long)a->milps, (unsigned long long)a->refuted, (long long)a->iterations, a->n_configs,
           a->budget_hit ? (a->deadline_hit || (a->budget_s > 0 && a->work <= MILP_SHARE * a->budget_work)
                                ? "; stopped at the time limit" : "; stopped at the work budget") : "",
           a->all_proven ? "" : "; some MILP not proven optimal",
           exhaustive ? "" : "; heuristic device grouping");
  if (!a->all_proven && a->worst_gap > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n, " (gap <= %.1f%%)", 100 * a->worst_gap);
  }
  if (a->var_sims > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu practice/schedule variants of the best plan simulated, %llu better",
             (unsigned long long)a->var_sims, (unsigned long long)a->var_better);
    if (a->var_pruned > 0) {
      n = strlen(stats->note);
      snprintf(stats->note + n, sizeof stats->note - n, " (%llu left out by their estimate)",
               (unsigned long long)a->var_pruned);
    }
  }
  if (a->x_estimated > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu context/expert-parallel or interleaved transforms estimated, %d simulated%s",
             (unsigned long long)a->x_estimated, (int)a->xpool.next_sim,
             a->x_better ? ", one better" : "");
  }
  if (a->x_cut_shifts > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu of those transforms move a stage boundary half a block",
             (unsigned long long)a->x_cut_shifts);
  }
  if (a->rounded > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu MILPs stopped without an integer solution, their LP relaxation rounded",
             (unsigned long long)a->rounded);
  }
  hs__cpool_note(&a->pool, stats->note, sizeof stats->note);
  return HS_OK;
}

const hs_planner_type_t hs_planner_autohet = {
    .name = "autohet",
    .description = "AutoHet: asymmetric 3D parallelism (device grouping, per-pipeline stages and "
                   "microbatches) as a MILP solved with GLPK",
    .state_size = sizeof(autohet_t),
    .init = autohet_init,
    .step = autohet_step,
    .result = autohet_result,
    .free = autohet_free,
};
