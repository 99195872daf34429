/*
 * registry.c - the planner table, option defaults and the standard driver
 * (hs_search.h). The driver owns budgets and progress: planners only step.
 */
#include "search_internal.h"
#include "search_memo.h"
#include "hs_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const hs_planner_type_t hs_planner_data_parallel, hs_planner_megatron, hs_planner_whale,
    hs_planner_hapt, hs_planner_exhaustive;
extern const hs_planner_type_t hs_planner_autohet, hs_planner_hap, hs_planner_deepspeed;

const hs_planner_type_t *const hs_planners[] = {
    &hs_planner_data_parallel,
    &hs_planner_megatron,
    &hs_planner_deepspeed,
    &hs_planner_whale,
    &hs_planner_hapt,
    &hs_planner_autohet,
    &hs_planner_hap,
    &hs_planner_exhaustive,
    NULL,
};

const hs_planner_type_t *hs_planner_find(const char *name)
{
  if (!name)
    return NULL;
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++)
    if (strcmp((*t)->name, name) == 0)
      return *t;
  return NULL;
}

void hs_plan_opts_init(hs_plan_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->global_batch = 0;
  o->max_microbatch_size = 8;
  o->time_limit_s = 0.0;
  o->mip_gap = 0.01;
  o->precision = HS_DTYPE_BF16;
  o->allow_recompute = true;
  hs_practice_init(&o->practice);
  o->max_devices = 8;
  o->device_subsets = true;
  o->memory_headroom = HS_MEMORY_HEADROOM_DEFAULT;
  o->search_practice = true;
  o->seed = 1;
  o->verbose = false;
}

/* ---- memory headroom ---------------------------------------------------------
 *
 * The one memory-fit rule of every strategy: planners plan on a view of the
 * cluster whose GPUs have capacity x (1 - memory_headroom) bytes (a shallow
 * copy sharing everything but the GPU table), so every estimate and every
 * simulation a planner runs is held to the usable memory, and the driver
 * checks the plan it returns against the same figure. */

/* Fills *view with c's arrays and a copy of its GPU table at reduced
 * capacity; *owned is that table (the caller frees it). O(GPU types). */
static hs_status_t headroom_view(const hs_cluster_t *c, double headroom, hs_cluster_t *view,
                                 hs_gpu_t **owned)
{
  *view = *c;
  *owned = hs_calloc(c->gpus.n ? c->gpus.n : 1, sizeof **owned);
  if (!*owned)
    return HS_ENOMEM;
  if (c->gpus.n)
    memcpy(*owned, c->gpus.gpus, c->gpus.n * sizeof **owned);
  for (size_t g = 0; g < c->gpus.n; g++)
    (*owned)[g].mem_bytes *= 1.0 - headroom;
  view->gpus.gpus = *owned;
  return HS_OK;
}

/* HS_OK when every used device's simulated peak is within capacity x (1 -
 * headroom); else HS_EINFEASIBLE naming the first device over it. O(devices). */
static hs_status_t check_headroom(const hs_report_t *r, const hs_cluster_t *c, double headroom,
                                  const char *name, hs_error_t *err)
{
  for (int32_t d = 0; d < r->n_device_mem && (size_t)d < c->n_devices; d++) {
    const hs_gpu_t *g = hs_cluster_gpu(c, d);
    double usable = g->mem_bytes * (1.0 - headroom);
    if (r->device_peak_memory_bytes[d] > usable) {
      char b1[32], b2[32];
      return hs_error_set(err, HS_EINFEASIBLE,
                          "%s: the plan needs %s on device %d (%s), above the %s usable with a "
                          "memory headroom of %g",
                          name, hs_fmt_bytes(r->device_peak_memory_bytes[d], b1, sizeof b1), d,
                          g->name, hs_fmt_bytes(usable, b2, sizeof b2), headroom);
    }
  }
  return HS_OK;
}

/* Options every strategy shares, checked once: headroom in [0, 1), and fp8
 * only where every GPU of `c` has FP8 GEMMs (a plan has one precision; the
 * device subsets find the part of a mixed cluster that has them). */
static hs_status_t check_common(const hs_planner_type_t *t, const hs_cluster_t *c,
                                const hs_plan_opts_t *o, hs_error_t *err)
{
  if (!(o->memory_headroom >= 0.0 && o->memory_headroom < 1.0))
    return hs_error_set(err, HS_EINVAL, "memory headroom (--memory-headroom): must be in [0, 1), got %g",
                        o->memory_headroom);
  if (o->precision == HS_DTYPE_FP8)
    for (size_t d = 0; d < c->n_devices; d++) {
      const hs_gpu_t *g = hs_cluster_gpu(c, (int32_t)d);
      if (!(g->peak_flops[HS_DTYPE_FP8] > 0.0))
        return hs_error_set(err, HS_EINFEASIBLE,
                            "%s: precision fp8 needs FP8 GEMMs, but %s (device %zu) has none",
                            t->name, g->name, d);
    }
  return HS_OK;
}

/* ---- time limit ---------------------------------------------------------------
 *
 * --time-limit bounds the whole run, not only the planner's steps: the
 * driver turns it into one end time (end_s) for every device subset, and
 * planners get opts.deadline_s = end_s less a reserve for the simulation of
 * the plan returned (a plan on every GPU: hs__sim_cost_s's cost per device
 * place, at most half the limit). Planners check the deadline in every loop
 * that can run long (enumeration, estimates) and leave out a finalist's
 * simulation predicted to end after it; the driver checks it between steps
 * and subsets, and refuses (HS_ELIMIT) to start a simulation of the plan
 * found that is predicted to end more than 10% past end_s. */

/* The end time of a run started at t0 (0 = none): the caller's deadline or
 * t0 + time_limit_s, whichever is sooner. */
static double run_end(const hs_plan_opts_t *o, double t0)
{
  double end = o->time_limit_s > 0.0 ? t0 + o->time_limit_s : 0.0;
  if (o->deadline_s > 0.0 && (end == 0.0 || o->deadline_s < end))
    end = o->deadline_s;
  return end;
}

/* The planners' deadline for a run ending at end_s that started at t0. */
static double planner_deadline(const hs_cluster_t *c, double t0, double end_s)
{
  if (end_s <= 0.0)
    return 0.0;
  hs_plan_t one; /* one stage, one microbatch, every GPU */
  hs_plan_pipeline_t pl;
  hs_plan_stage_t st;
  hs_plan_replica_t r;
  memset(&one, 0, sizeof one);
  memset(&pl, 0, sizeof pl);
  memset(&st, 0, sizeof st);
  memset(&r, 0, sizeof r);
  r.n_devices = (int32_t)c->n_devices;
  st.n_replicas = 1;
  st.replicas = &r;
  pl.n_stages = 1;
  pl.n_microbatches = 1;
  pl.stages = &st;
  one.n_pipelines = 1;
  one.pipelines = &pl;
  double reserve = fmin(hs__sim_cost_s(&one), 0.5 * (end_s - t0));
  return end_s - fmax(reserve, 0.0);
}

/* "time limit (--time-limit 10 s)", or the caller's deadline, into buf. */
static const char *limit_text(const hs_plan_opts_t *o, char *buf, size_t n)
{
  if (o->time_limit_s > 0.0)
    snprintf(buf, n, "time limit (--time-limit %g s)", o->time_limit_s);
  else
    snprintf(buf, n, "time limit (the caller's deadline)");
  return buf;
}

/* Rewrites err's "no feasible plan" (a search the deadline cut short) as
 * the time limit's HS_ELIMIT, keeping the planner's words. */
static hs_status_t time_limit_error(const hs_planner_type_t *t, const hs_plan_opts_t *o, double t0,
                                    hs_error_t *err)
{
  char why[256], lim[64];
  snprintf(why, sizeof why, "%.200s", err->msg); /* err->msg is rewritten below */
  hs_error_clear(err);
  return hs_error_set(err, HS_ELIMIT, "%s: %s: no plan found in %.3g s (%s); raise --time-limit",
                      t->name, limit_text(o, lim, sizeof lim), hs__now_s() - t0, why);
}

/* HS_ELIMIT when a simulation of `p` predicted at cost_s would end more
 * than 10% of the limit past end_s. */
static hs_status_t check_final_time(const hs_plan_t *p, const hs_plan_opts_t *o, double t0,
                                    double end_s, const char *name, hs_error_t *err)
{
  if (end_s <= 0.0)
    return HS_OK;
  double cost_s = hs__sim_cost_s(p), now = hs__now_s();
  if (now + cost_s <= end_s + 0.1 * (end_s - t0))
    return HS_OK;
  char lim[64];
  return hs_error_set(err, HS_ELIMIT,
                      "%s: %s: %.3g s spent; simulating the plan found (%d GPUs) is predicted to "
                      "take %.3g s more, past the limit; raise --time-limit",
                      name, limit_text(o, lim, sizeof lim), now - t0, hs_plan_n_devices(p), cost_s);
}

/* The options to run with (o, or the defaults filled into *defaults when o
 * is NULL), with plan, stats and report reset to empty: every early return
 * of a run leaves them so. */
static const hs_plan_opts_t *reset_outputs(const hs_plan_opts_t *o, hs_plan_opts_t *defaults,
                                           hs_plan_t *plan, hs_search_stats_t *stats,
                                           hs_report_t *report)
{
  if (!o) {
    hs_plan_opts_init(defaults);
    o = defaults;
  }
  hs_plan_init(plan);
  memset(stats, 0, sizeof *stats);
  if (report)
    hs_report_init(report);
  return o;
}

/* One search on the whole of `c`: init, step until done or the time
 * limit, result, validation, and (report != NULL) simulation. end_s: the
 * run's end time (0 = from o). */
static hs_status_t run_whole(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                             const hs_plan_opts_t *o, FILE *progress, hs_plan_t *plan,
                             hs_search_stats_t *stats, hs_report_t *report, hs_error_t *err, double end_s)
{
  hs_status_t st = HS_OK;
  hs_plan_opts_t defaults;
  o = reset_outputs(o, &defaults, plan, stats, report);
  if (!t || !m || !c)
    return hs_error_set(err, HS_EINVAL, "hs_planner_run: planner, model and cluster are required");
  if (m->n_ops == 0 || c->n_devices == 0)
    return hs_error_set(err, HS_EINVAL, "%s: empty model or cluster", t->name);
  if ((st = check_common(t, c, o, err)) != HS_OK)
    return st;
  if ((st = hs__check_batch(hs__global_batch(o, c), (int64_t)c->n_devices,
                            o->max_microbatch_size, t->name, err)) != HS_OK)
    return st;
  hs_cluster_t view;
  hs_gpu_t *view_gpus = NULL;
  if (headroom_view(c, o->memory_headroom, &view, &view_gpus) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  void *state = hs_calloc(1, t->state_size ? t->state_size : 1);
  if (!state) {
    free(view_gpus);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  bool inited = false;
  double t0 = hs__now_s();
  if (end_s <= 0.0)
    end_s = run_end(o, t0);
  hs_plan_opts_t po = *o;
  po.deadline_s = planner_deadline(c, t0, end_s);
  o = &po;
  /* a terminal gets a redrawn line, a log plain lines with ETA (hs_progress.h) */
  char what[64];
  snprintf(what, sizeof what, "%s search", t->name);
  hs_progress_t prog;
  hs_progress_init(&prog, progress, what, "", 0);
  st = t->init(state, m, &view, o, err);
  if (st == HS_EINFEASIBLE && hs__past(po.deadline_s))
    HS_FAIL(time_limit_error(t, o, t0, err));
  HS_CHECK(st);
  inited = true;
  bool done = false;
  while (!done) {
    double frac = -1.0;
    HS_CHECK(t->step(state, &done, &frac, err));
    double now = hs__now_s();
    hs_progress_set_fraction(&prog, done ? 1.0 : frac);
    if (po.deadline_s > 0.0 && now > po.deadline_s)
      break; /* the planner returns the best found so far */
  }
  double search_s = hs__now_s() - t0;
  st = t->result(state, plan, stats, err);
  if (st == HS_EINFEASIBLE && end_s > 0.0 && (!done || hs__past(po.deadline_s)))
    HS_FAIL(time_limit_error(t, o, t0, err));
  HS_CHECK(st);
  /* the options as asked, less sequence parallelism on a plan without TP;
   * what a strategy searched on top of them (sequence parallelism, ZeRO
   * stage, context and expert parallelism: the plan's layout depends on
   * the last two) stays */
  hs_practice_t pr = o->practice;
  pr.sequence_parallel = pr.sequence_parallel || plan->practice.sequence_parallel;
  pr.zero_stage = HS_MAX(pr.zero_stage, plan->practice.zero_stage);
  if (plan->practice.context_parallel > 1)
    pr.context_parallel = plan->practice.context_parallel;
  if (plan->practice.expert_parallel > 1)
    pr.expert_parallel = plan->practice.expert_parallel;
  hs_plan_set_practice(plan, &pr);
  stats->search_s = search_s;
  if (stats->candidates == 0)
    stats->candidates = 1;
  if (end_s > 0.0 && (!done || hs__past(po.deadline_s)) && !strstr(stats->note, "time limit")) {
    size_t l = strlen(stats->note);
    snprintf(stats->note + l, sizeof stats->note - l, "%sstopped at the %.3g s time limit",
             l ? "; " : "", o->time_limit_s > 0.0 ? o->time_limit_s : end_s - t0);
  }
  if (plan->strategy[0] == '\0' || strcmp(plan->strategy, "manual") == 0)
    hs_strlcpy(plan->strategy, t->name, sizeof plan->strategy);
  /* whole samples per rank: uneven shares become uneven integer sizes */
  HS_CHECK(hs_plan_round_shares(plan, t->name, err));
  HS_CHECK(hs_plan_validate(plan, m, c, t->name, err));
  if (report) {
    HS_CHECK(check_final_time(plan, o, t0, end_s, t->name, err));
    HS_CHECK(hs_simulate(m, c, plan, NULL, report, err));
    if (!report->oom)
      HS_CHECK(check_headroom(report, c, o->memory_headroom, t->name, err));
  }
cleanup:
  hs_progress_finish(&prog, false);
  if (inited)
    t->free(state);
  free(state);
  free(view_gpus);
  if (st != HS_OK) {
    hs_plan_destroy(plan);
    hs_plan_init(plan);
    if (report) {
      hs_report_destroy(report);
      hs_report_init(report);
    }
  }
  return st;
}

/* stats->own_sim_s of a device subset's plan: the plan simulated on the
 * sub-cluster c it was searched on (INFINITY when it runs out of memory or
 * the simulator rejects it). HS_ENOMEM and HS_EINTERNAL only. */
static hs_status_t simulate_own(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                                hs_search_stats_t *stats, hs_error_t *err)
{
  hs_report_t rep;
  hs_error_t lerr;
  hs_report_init(&rep);
  hs_error_init(&lerr);
  lerr.warn_fp = NULL;
  hs_status_t st = hs_simulate(m, c, plan, NULL, &rep, &lerr);
  stats->own_sim_s = st == HS_OK && !rep.oom ? rep.iteration_time_s : INFINITY;
  hs_report_destroy(&rep);
  if (st == HS_ENOMEM || st == HS_EINTERNAL)
    return hs_error_set(err, st, "%s", lerr.msg);
  return HS_OK;
}

/* run_whole without a report, through the search memo (search_memo.h)
 * when one is active and the run prints nothing (progress NULL): a search
 * asked before gives its stored plan, statistics or error, one not asked
 * before is run and stored. own_deadline_s >= 0 (a device subset's
 * search): a plan stored is first simulated on c (stats->own_sim_s,
 * simulate_own) when that simulation fits the deadline (0: none), so a
 * later hit knows its time without simulating. Outputs as run_whole's. */
static hs_status_t run_whole_memo(const hs_planner_type_t *t, const hs_model_t *m,
                                  const hs_cluster_t *c, const hs_plan_opts_t *o, FILE *progress,
                                  double own_deadline_s, hs_plan_t *plan, hs_search_stats_t *stats,
                                  hs_error_t *err, double end_s)
{
  if (progress || !hs__search_memo_active())
    return run_whole(t, m, c, o, progress, plan, stats, NULL, err, end_s);
  hs_search_key_t key;
  hs_status_t st = HS_OK;
  hs__search_memo_key(&key, t, m, c, o);
  if (!hs__search_memo_get(&key, c->name, plan, stats, &st, err)) {
    st = run_whole(t, m, c, o, progress, plan, stats, NULL, err, end_s);
    if (st == HS_OK && own_deadline_s >= 0.0 && hs__sim_fits(own_deadline_s, 3.0 * hs__sim_cost_s(plan)))
      st = simulate_own(m, c, plan, stats, err);
    hs__search_memo_put(&key, c->name, st, plan, stats, err);
  }
  hs__search_memo_key_free(&key);
  return st;
}

/* ---- device subsets ---------------------------------------------------------
 *
 * A user can always leave devices idle: train on one site, one GPU type, or
 * any set of whole node groups. So the driver plans every strategy on the
 * whole cluster and on sub-clusters of whole node groups, simulates each
 * plan on the whole cluster and keeps the fastest. A node group is one `nodes`
 * entry of the cluster file (hs_node_t.group). With up to HS_SUBSET_MAX_GROUPS
 * groups every non-empty set is tried (2^G - 1 searches), so adding a group
 * to a cluster never makes a strategy's best plan slower (the old cluster is
 * one of the new one's subsets); with more groups, each site and each GPU
 * type alone. The global batch is fixed before, so every subset trains the
 * same batch. */

#define HS_SUBSET_MAX_GROUPS 6

/* group_of[node]: the node's group renumbered 0.. in order of first
 * appearance (sub-clusters keep their parent's group ids); returns the
 * number of groups. O(nodes x groups). */
static int32_t node_groups(const hs_cluster_t *c, int32_t *group_of)
{
  int32_t n_groups = 0;
  for (size_t n = 0; n < c->n_nodes; n++) {
    group_of[n] = -1;
    for (size_t p = 0; p < n && group_of[n] < 0; p++)
      if (c->nodes[p].group == c->nodes[n].group)
        group_of[n] = group_of[p];
    if (group_of[n] < 0)
      group_of[n] = n_groups++;
  }
  return n_groups;
}

/* The node masks to try, full cluster first: every subset of groups, or
 * (many groups) each site and each GPU type alone. */
static size_t subset_masks(const hs_cluster_t *c, const int32_t *group_of, int32_t n_groups,
                           uint64_t *masks, size_t cap)
{
  size_t n = 0;
  uint64_t full = n_groups >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n_groups) - 1;
  masks[n++] = full;
  if (n_groups <= HS_SUBSET_MAX_GROUPS) {
    for (uint64_t m = full - 1; m > 0 && n < cap; m--)
      masks[n++] = m;
    return n;
  }
  /* by site, then by GPU type (groups beyond 64 are never left out alone) */
  for (int pass = 0; pass < 2; pass++) {
    int32_t keys = pass == 0 ? (int32_t)c->n_sites : (int32_t)c->gpus.n;
    for (int32_t k = 0; k < keys && n < cap; k++) {
      uint64_t m = 0;
      for (size_t node = 0; node < c->n_nodes; node++) {
        int32_t key = pass == 0 ? c->nodes[node].site : c->nodes[node].gpu;
        if (key == k && group_of[node] < 64)
          m |= UINT64_C(1) << group_of[node];
      }
      bool seen = m == 0;
      for (size_t j = 0; j < n && !seen; j++)
        seen = masks[j] == m;
      if (!seen)
        masks[n++] = m;
    }
  }
  return n;
}

/* Renames the plan's devices through dev_map (sub-cluster -> cluster). */
static void plan_remap(hs_plan_t *p, const int32_t *dev_map)
{
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++) {
      hs_plan_stage_t *st = &p->pipelines[i].stages[s];
      for (int32_t r = 0; r < st->n_replicas; r++)
        for (int32_t d = 0; d < st->replicas[r].n_devices; d++)
          st->replicas[r].devices[d] = dev_map[st->replicas[r].devices[d]];
    }
}

/* Checks the options hs_planner_run rejects before any search: the memory
 * headroom in [0, 1), and fp8 only when some GPU of the cluster has an fp8
 * peak. Reads o and c (may be NULL); HS_EINVAL naming the option. */
static hs_status_t check_run_opts(const hs_plan_opts_t *o, const hs_cluster_t *c, hs_error_t *err)
{
  if (!(o->memory_headroom >= 0.0 && o->memory_headroom < 1.0))
    return hs_error_set(err, HS_EINVAL, "memory headroom (--memory-headroom): must be in [0, 1), got %g",
                        o->memory_headroom);
  if (c && o->precision == HS_DTYPE_FP8) { /* bad input when no GPU could run it */
    bool any = false;
    for (size_t d = 0; d < c->n_devices && !any; d++)
      any = hs_cluster_gpu(c, (int32_t)d)->peak_flops[HS_DTYPE_FP8] > 0.0;
    if (!any)
      return hs_error_set(err, HS_EINVAL,
                          "precision (--precision): fp8 needs FP8 GEMMs, but no GPU of cluster %s has "
                          "an fp8 peak in the catalog",
                          c->name);
  }
  return HS_OK;
}

/* One device-subset search: its inputs, the scratch reused across subsets,
 * and the best plan so far (best_rep, with the plan in the caller's plan). */
typedef struct subset_run {
  const hs_planner_type_t *t;
  const hs_model_t *m;
  const hs_cluster_t *c;
  const hs_plan_opts_t *o;
  hs_plan_opts_t so;         /* o with the whole cluster's batch and each subset's work share */
  FILE *progress;
  double t0, end_s, sub_deadline;
  int32_t *group_of, *dev_map;
  bool *alive;
  hs_plan_t cand;
  hs_report_t crep, best_rep;
  hs_cluster_t sub;
  hs_search_stats_t cst;
  hs_error_t first_err;      /* the whole cluster's error, reported when no subset has a plan */
  bool have, cut;            /* a plan found; subsets left out for time */
  int32_t pruned;            /* subsets left out by the lower bound (subset_bound.c) */
  double search_s;
  uint64_t candidates;
} subset_run_t;

/* Shares of a default work budget (autohet's MILPs) over the node masks, by
 * their device counts, the whole cluster at least half of it, so the total
 * stays the whole cluster's: share[k] for mask k. Reads c, group_of. */
static void subset_work_shares(const hs_cluster_t *c, const int32_t *group_of, const uint64_t *masks,
                               size_t n_masks, double work_share, double *share)
{
  double subset_devices[64], all_devices = 0.0;
  for (size_t k = 0; k < n_masks; k++) {
    subset_devices[k] = 0.0;
    for (size_t n = 0; n < c->n_nodes; n++)
      if (group_of[n] < 64 ? (masks[k] >> group_of[n]) & 1 : k == 0)
        subset_devices[k] += c->nodes[n].n_devices;
    if (k > 0)
      all_devices += subset_devices[k];
  }
  double whole_share = n_masks > 1 ? HS_MAX(0.5, subset_devices[0] / (subset_devices[0] + all_devices)) : 1.0;
  for (size_t k = 0; k < n_masks; k++)
    share[k] = (work_share > 0 ? work_share : 1.0) *
               (k == 0 ? whole_share : (1.0 - whole_share) * subset_devices[k] / all_devices);
}

/* Keeps sr->cand (simulated in sr->crep) as the best plan when it is the
 * first or feasible and faster than the best so far; ties keep the earlier
 * (larger) subset. The loser's plan and report are emptied. */
static void keep_if_better(subset_run_t *sr, size_t k, hs_plan_t *plan, hs_search_stats_t *stats)
{
  bool better = !sr->crep.oom &&
                (!sr->have || sr->best_rep.oom || sr->crep.iteration_time_s < sr->best_rep.iteration_time_s);
  if (!sr->have || better) {
    hs_plan_destroy(plan);
    *plan = sr->cand;
    hs_plan_init(&sr->cand);
    hs_report_destroy(&sr->best_rep);
    sr->best_rep = sr->crep;
    hs_report_init(&sr->crep);
    *stats = sr->cst;
    if (k > 0) {
      size_t l = strlen(stats->note);
      snprintf(stats->note + l, sizeof stats->note - l, "%sbest on a subset: %d of %zu GPUs",
               l ? "; " : "", hs_plan_n_devices(plan), sr->c->n_devices);
    }
    sr->have = true;
  } else {
    hs_plan_destroy(&sr->cand);
    hs_plan_init(&sr->cand);
    hs_report_destroy(&sr->crep);
    hs_report_init(&sr->crep);
  }
}

/* Plans, validates and simulates on the nodes of mask k (k == 0: the whole
 * cluster), with the plan's devices renamed back to the cluster's, and keeps
 * the plan when it is the best so far. A subset whose simulation would not
 * end in time is skipped (sr->cut). Returns only fatal errors (out of
 * memory, internal, the whole cluster's final simulation past the time
 * limit); a subset without a plan is skipped, the whole cluster's error
 * kept in sr->first_err. */
static hs_status_t try_subset(subset_run_t *sr, size_t k, uint64_t mask, double work_share,
                              hs_plan_t *plan, hs_search_stats_t *stats, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_cluster_t *c = sr->c;
  for (size_t n = 0; n < c->n_nodes; n++)
    sr->alive[n] = sr->group_of[n] < 64 ? (mask >> sr->group_of[n]) & 1 : k == 0;
  /* a subset whose every plan is slower than the best so far: not searched */
  if (k > 0 && sr->have && !sr->best_rep.oom &&
      hs__subset_time_lb_s(sr->m, c, sr->alive, sr->so.global_batch, sr->so.precision) >=
          sr->best_rep.iteration_time_s) {
    sr->pruned++;
    return HS_OK;
  }
  hs_error_t lerr;
  hs_error_init(&lerr);
  lerr.warn_fp = NULL;
  hs_status_t ls = k == 0 ? HS_OK : hs_search_subcluster(c, sr->alive, &sr->sub, sr->dev_map, &lerr);
  sr->so.work_share = work_share;
  /* a subset's plan is kept only when faster than the best so far: its
   * search may leave out what cannot give one (hs_plan_opts_t.beat_s) */
  sr->so.beat_s = k > 0 && sr->have && !sr->best_rep.oom ? sr->best_rep.iteration_time_s : 0.0;
  if (ls == HS_OK)
    ls = run_whole_memo(sr->t, sr->m, k == 0 ? c : &sr->sub, &sr->so, k == 0 ? sr->progress : NULL,
                        k > 0 ? sr->sub_deadline : -1.0, &sr->cand, &sr->cst, &lerr, sr->end_s);
  /* what a search scored counts also when it found no plan (a pool that
   * beat_s left without one scored what the full search scores) */
  if (ls == HS_OK || ls == HS_EINFEASIBLE) {
    sr->search_s += sr->cst.search_s;
    sr->candidates += sr->cst.candidates;
  }
  if (ls == HS_OK) {
    /* A plan on whole node groups simulates on the whole cluster as on its
     * sub-cluster (the other nodes idle; routes and collectives see only
     * the devices they join; test_search_subset_sim checks it), so one that
     * was no faster there is no faster here and would not be kept. */
    if (k > 0 && sr->so.beat_s > 0.0 && sr->cst.own_sim_s >= sr->so.beat_s) {
      hs_plan_destroy(&sr->cand);
      hs_plan_init(&sr->cand);
      return HS_OK;
    }
    if (k > 0)
      plan_remap(&sr->cand, sr->dev_map);
    ls = hs_plan_validate(&sr->cand, sr->m, c, sr->t->name, &lerr);
    /* a subset's plan simulated only when the plan's own simulation and
     * the final one still end in time (the whole cluster's always is) */
    if (ls == HS_OK && k > 0 && !hs__sim_fits(sr->sub_deadline, 2.0 * hs__sim_cost_s(&sr->cand))) {
      sr->cut = true;
      hs_plan_destroy(&sr->cand);
      hs_plan_init(&sr->cand);
      return HS_OK;
    }
    if (ls == HS_OK && k == 0 &&
        (ls = check_final_time(&sr->cand, sr->o, sr->t0, sr->end_s, sr->t->name, &lerr)) != HS_OK)
      HS_FAIL(hs_error_set(err, ls, "%s", lerr.msg));
    if (ls == HS_OK)
      ls = hs_simulate(sr->m, c, &sr->cand, NULL, &sr->crep, &lerr);
    if (ls == HS_OK && !sr->crep.oom)
      ls = check_headroom(&sr->crep, c, sr->o->memory_headroom, sr->t->name, &lerr);
    if (ls != HS_OK)
      hs_report_destroy(&sr->crep), hs_report_init(&sr->crep);
  }
  if (ls == HS_ENOMEM || ls == HS_EINTERNAL)
    HS_FAIL(hs_error_set(err, ls, "%s", lerr.msg));
  if (ls != HS_OK) {
    if (k == 0)
      sr->first_err = lerr;
    hs_plan_destroy(&sr->cand);
    hs_plan_init(&sr->cand);
    return HS_OK;
  }
  keep_if_better(sr, k, plan, stats);
cleanup:
  return st;
}

/* The device-subset search of hs_planner_run: the whole cluster and its
 * subsets of node groups (subset_masks), the fastest feasible plan kept,
 * its search time and candidates summed over every subset. One group: the
 * whole cluster only (run_whole). Outputs as hs_planner_run's. */
static hs_status_t run_subsets(const hs_planner_type_t *t, const hs_model_t *m,
                               const hs_cluster_t *c, const hs_plan_opts_t *o, FILE *progress,
                               hs_plan_t *plan, hs_search_stats_t *stats, hs_report_t *report,
                               hs_error_t *err)
{
  double t0 = hs__now_s(), end_s = run_end(o, t0);
  hs_status_t st = HS_OK;
  subset_run_t sr = {.t = t, .m = m, .c = c, .o = o, .progress = progress, .t0 = t0, .end_s = end_s};
  sr.sub_deadline = planner_deadline(c, t0, end_s);
  sr.group_of = hs_calloc(c->n_nodes, sizeof *sr.group_of);
  sr.dev_map = hs_calloc(c->n_devices, sizeof *sr.dev_map);
  sr.alive = hs_calloc(c->n_nodes, sizeof *sr.alive);
  uint64_t masks[64];
  double shares[64];
  hs_plan_init(plan);
  hs_plan_init(&sr.cand);
  hs_report_init(&sr.crep);
  hs_report_init(&sr.best_rep);
  hs_cluster_init(&sr.sub);
  hs_error_init(&sr.first_err);
  sr.first_err.warn_fp = NULL;
  memset(stats, 0, sizeof *stats);
  if (report)
    hs_report_init(report);
  if (!sr.group_of || !sr.dev_map || !sr.alive)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t n_groups = node_groups(c, sr.group_of);
  if (n_groups <= 1) {
    free(sr.group_of), free(sr.dev_map), free(sr.alive);
    return run_whole(t, m, c, o, progress, plan, stats, report, err, end_s);
  }
  /* every subset trains the batch the whole cluster would */
  sr.so = *o;
  sr.so.global_batch = hs__global_batch(o, c);
  size_t n_masks = subset_masks(c, sr.group_of, n_groups, masks, HS_ARRAY_LEN(masks));
  subset_work_shares(c, sr.group_of, masks, n_masks, o->work_share, shares);
  for (size_t k = 0; k < n_masks; k++) {
    if (k > 0 && hs__past(sr.sub_deadline)) {
      sr.cut = true; /* the subsets left are not searched */
      break;
    }
    HS_CHECK(try_subset(&sr, k, masks[k], shares[k], plan, stats, err));
  }
  if (!sr.have) {
    /* the whole cluster's error, with its status when the time limit cut it short */
    st = hs_error_set(err, sr.first_err.status == HS_ELIMIT ? HS_ELIMIT : HS_EINFEASIBLE, "%s",
                      sr.first_err.msg[0] ? sr.first_err.msg : "no plan on any set of node groups");
    goto cleanup;
  }
  stats->search_s = sr.search_s;
  stats->candidates = sr.candidates;
  if (n_masks > 1)
    stats->optimal = stats->optimal && n_groups <= HS_SUBSET_MAX_GROUPS && !sr.cut;
  if (sr.cut && !strstr(stats->note, "time limit")) {
    size_t l = strlen(stats->note);
    snprintf(stats->note + l, sizeof stats->note - l,
             "%sstopped at the %.3g s time limit (device subsets left out)", l ? "; " : "",
             o->time_limit_s > 0.0 ? o->time_limit_s : end_s - t0);
  }
  if (report) {
    *report = sr.best_rep;
    hs_report_init(&sr.best_rep);
  }
cleanup:
  hs_report_destroy(&sr.best_rep);
  hs_report_destroy(&sr.crep);
  hs_plan_destroy(&sr.cand);
  hs_cluster_destroy(&sr.sub);
  free(sr.group_of);
  free(sr.dev_map);
  free(sr.alive);
  if (st != HS_OK) {
    hs_plan_destroy(plan);
    hs_plan_init(plan);
  }
  return st;
}

hs_status_t hs_planner_run(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_plan_opts_t *o, FILE *progress, hs_plan_t *plan,
                           hs_search_stats_t *stats, hs_report_t *report, hs_error_t *err)
{
  hs_plan_opts_t defaults;
  /* the outputs are empty on every early return */
  o = reset_outputs(o, &defaults, plan, stats, report);
  hs_status_t st = check_run_opts(o, c, err);
  if (st != HS_OK)
    return st;
  if (!t || !m || !c || c->n_nodes == 0 || !o->device_subsets)
    return run_whole(t, m, c, o, progress, plan, stats, report, err, 0.0);
  if (hs__check_batch(hs__global_batch(o, c), (int64_t)c->n_devices, o->max_microbatch_size,
                      t->name, err) != HS_OK)
    return HS_ELIMIT;
  return run_subsets(t, m, c, o, progress, plan, stats, report, err);
}
