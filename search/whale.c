/*
 * whale.c - `whale`: hardware-aware data parallelism after Whale (ATC'22):
 * batch shares proportional to device speed, memory permitting.
 *
 * Pure DP first: one pipeline (one stage) per TP group, TP groups of tp
 * consecutive GPUs inside a node (tp a power of two, the same everywhere),
 * microbatch counts proportional to the group's achieved FLOP/s (peak x
 * gemm_eff_max x tp) by largest remainder, every group at least one. When no
 * pure-DP configuration fits in memory, pipeline parallelism as `megatron`
 * does it (even layer split over pp stages) but with every TP group a
 * replica of one stage, groups spread over stages greedily to balance stage
 * speed, and each stage's replicas sharing every microbatch in proportion to
 * their speed.
 *
 * Search space: tp in {1,2,..,max_tp} x b in {1,..,max_microbatch_size} x
 * recompute {none, full} (x pp in {2..blocks} in the PP fallback). Each
 * candidate O(devices + ops); hs__sim_budget simulations at the end.
 */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct whale {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_dtype_t dt;
  int64_t gb;
  int32_t max_mb;
  bool allow_rc;
  hs_estimator_t *est;
  hs_cand_pool_t pool;
  int32_t phase;          /* 0 pure DP, 1 PP fallback, 2 simulate */
  int32_t pp_next;        /* PP fallback: next pp */
  int32_t first_fit_pp;   /* PP: smallest pp with a plan that fits */
  bool pure_dp_fits;
  uint64_t scored;
  char why[256];
  int32_t *groups;        /* first device of each TP group (scratch) */
  double *w;              /* scratch weights */
  int64_t *cnt;
  int32_t *stage_of;
} whale_t;

/* TP groups of size tp (first devices into s->groups); -1 when some node
 * cannot be split into groups of tp. */
static int32_t make_groups(whale_t *s, int32_t tp)
{
  int32_t ng = 0;
  for (size_t n = 0; n < s->c->n_nodes; n++) {
    const hs_node_t *nd = &s->c->nodes[n];
    if (nd->n_devices % tp)
      return -1;
    for (int32_t d = 0; d < nd->n_devices; d += tp)
      s->groups[ng++] = nd->first_device + d;
  }
  return ng;
}

/* Splits `total` into ng integer parts >= lo proportional to w (largest
 * remainder); false when total < ng x lo. */
static bool apportion(const double *w, int32_t ng, int64_t total, int64_t lo, int64_t *out)
{
  if (total < (int64_t)ng * lo)
    return false;
  double sw = 0.0;
  for (int32_t g = 0; g < ng; g++)
    sw += w[g];
  int64_t rest = total - (int64_t)ng * lo, used = 0;
  for (int32_t g = 0; g < ng; g++) {
    out[g] = lo + (int64_t)floor(rest * w[g] / sw);
    used += out[g];
  }
  while (used < total) {
    int32_t best = 0;
    double bd = -1e300;
    for (int32_t g = 0; g < ng; g++) {
      double d = lo + rest * w[g] / sw - out[g];
      if (d > bd) {
        bd = d;
        best = g;
      }
    }
    out[best]++;
    used++;
  }
  return true;
}

/* Scores a built plan and keeps it in the pool (or records why it does not
 * fit). Out of memory ends the search (HS_ENOMEM): not another answer. */
static hs_status_t offer(whale_t *s, hs_plan_t *plan, hs_error_t *err)
{
  hs_estimate_t es;
  /* estimated as the pool keeps it: whole samples per rank */
  hs_status_t st = hs__round_for_offer(plan, err);
  if (st == HS_OK)
    st = hs_estimate_plan(s->est, plan, true, &es, err);
  if (st != HS_OK) {
    hs_plan_destroy(plan);
    if (st == HS_ENOMEM)
      return st;
    hs_error_clear(err);
    return HS_OK;
  }
  s->scored++;
  if (es.oom) {
    char b1[32], b2[32];
    snprintf(s->why, sizeof s->why, "out of memory: %s needed on device %d (%s)",
             hs_fmt_bytes(es.max_memory_bytes, b1, sizeof b1), es.oom_device,
             hs_fmt_bytes(hs_cluster_gpu(s->c, es.oom_device)->mem_bytes, b2, sizeof b2));
    hs_plan_destroy(plan);
    return HS_OK;
  }
  hs__cpool_offer(&s->pool, plan, es.iteration_s);
  return HS_OK;
}

/* A candidate that cannot be built is skipped; out of memory is not. */
static hs_status_t build_status(hs_status_t st, hs_error_t *err)
{
  if (st == HS_ENOMEM)
    return hs_error_set(err, st, "out of memory building a whale candidate");
  return st;
}

static hs_status_t build_dp(whale_t *s, int32_t tp, int32_t ng, int32_t b, hs_recompute_t rc,
                            hs_plan_t *plan)
{
  hs_status_t st = HS_OK;
  hs_plan_init(plan);
  for (int32_t g = 0; g < ng; g++)
    s->w[g] = hs__gpu_speed(hs_cluster_gpu(s->c, s->groups[g]), s->dt) * tp;
  if (!apportion(s->w, ng, s->gb / b, 1, s->cnt))
    return HS_EINFEASIBLE;
  hs_strlcpy(plan->strategy, "whale", sizeof plan->strategy);
  plan->precision = s->dt;
  plan->practice = *hs_estimator_practice(s->est);
  HS_CHECK(hs_plan_alloc_pipelines(plan, ng));
  int32_t devs[64];
  for (int32_t g = 0; g < ng; g++) {
    hs_plan_pipeline_t *pl = &plan->pipelines[g];
    pl->microbatch_size = b;
    pl->n_microbatches = (int32_t)s->cnt[g];
    HS_CHECK(hs_plan_alloc_stages(pl, 1));
    pl->stages[0].op_first = 0;
    pl->stages[0].op_last = (int32_t)s->m->n_ops;
    pl->stages[0].recompute = rc;
    HS_CHECK(hs_plan_alloc_replicas(&pl->stages[0], 1));
    for (int32_t t = 0; t < tp; t++)
      devs[t] = s->groups[g] + t;
    HS_CHECK(hs_plan_replica_set_devices(&pl->stages[0].replicas[0], devs, tp));
  }
  return HS_OK;
cleanup:
  hs_plan_destroy(plan);
  hs_plan_init(plan);
  return st;
}

static hs_status_t build_pp(whale_t *s, int32_t tp, int32_t ng, int32_t pp, int32_t b,
                            hs_recompute_t rc, hs_plan_t *plan)
{
  hs_status_t st = HS_OK;
  hs_plan_t bounds;
  hs_plan_init(plan);
  hs_plan_init(&bounds);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = pp;
  g.global_batch = 1;
  hs_error_t e2;
  hs_error_init(&e2);
  st = hs_plan_grid(s->m, s->c, &g, &bounds, &e2);
  if (st != HS_OK)
    return st == HS_ENOMEM ? st : HS_EINFEASIBLE;
  /* greedy: fastest groups first, each to the slowest stage with room */
  int32_t per = (ng + pp - 1) / pp;
  double stage_w[1024];
  int32_t stage_n[1024];
  if (pp > 1024)
    HS_FAIL(HS_EINFEASIBLE);
  memset(stage_w, 0, sizeof(double) * (size_t)pp);
  memset(stage_n, 0, sizeof(int32_t) * (size_t)pp);
  for (int32_t k = 0; k < ng; k++)
    s->w[k] = hs__gpu_speed(hs_cluster_gpu(s->c, s->groups[k]), s->dt) * tp;
  for (int32_t done = 0; done < ng; done++) {
    int32_t best = -1;
    for (int32_t k = 0; k < ng; k++)
      if (s->stage_of[k] < 0 && (best < 0 || s->w[k] > s->w[best]))
        best = k;
    int32_t sg = -1;
    for (int32_t q = 0; q < pp; q++)
      if (stage_n[q] < per && (sg < 0 || stage_w[q] < stage_w[sg]))
        sg = q;
    s->stage_of[best] = sg;
    stage_w[sg] += s->w[best];
    stage_n[sg]++;
  }
  int64_t mbs = (int64_t)b * per;
  if (s->gb % mbs)
    HS_FAIL(HS_EINFEASIBLE);
  hs_strlcpy(plan->strategy, "whale", sizeof plan->strategy);
  plan->precision = s->dt;
  plan->practice = *hs_estimator_practice(s->est);
  HS_CHECK(hs_plan_alloc_pipelines(plan, 1));
  hs_plan_pipeline_t *pl = &plan->pipelines[0];
  pl->microbatch_size = (int32_t)mbs;
  pl->n_microbatches = (int32_t)(s->gb / mbs);
  HS_CHECK(hs_plan_alloc_stages(pl, pp));
  int32_t devs[64];
  for (int32_t q = 0; q < pp; q++) {
    hs_plan_stage_t *stg = &pl->stages[q];
    stg->op_first = bounds.pipelines[0].stages[q].op_first;
    stg->op_last = bounds.pipelines[0].stages[q].op_last;
    stg->recompute = rc;
    if (stage_n[q] == 0)
      HS_FAIL(HS_EINFEASIBLE);
    HS_CHECK(hs_plan_alloc_replicas(stg, stage_n[q]));
    int32_t r = 0;
    double acc = 0.0;
    for (int32_t k = 0; k < ng; k++) {
      if (s->stage_of[k] != q)
        continue;
      for (int32_t t = 0; t < tp; t++)
        devs[t] = s->groups[k] + t;
      HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[r], devs, tp));
      stg->replicas[r].share = r + 1 == stage_n[q] ? 1.0 - acc : s->w[k] / stage_w[q];
      acc += stg->replicas[r].share;
      r++;
    }
  }
  /* whole samples per replica (mbs >= replicas per stage, so it cannot fail) */
  st = hs_plan_round_shares(plan, "whale", &e2);
  if (st != HS_OK && st != HS_ENOMEM)
    st = HS_EINFEASIBLE;
cleanup:
  hs_plan_destroy(&bounds);
  if (st != HS_OK) {
    hs_plan_destroy(plan);
    hs_plan_init(plan);
  }
  return st;
}

static hs_status_t whale_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                              const hs_plan_opts_t *o, hs_error_t *err)
{
  whale_t *s = state;
  hs_status_t st = HS_OK;
  memset(s, 0, sizeof *s);
  s->m = m;
  s->c = c;
  s->dt = hs__precision(o, c);
  s->gb = hs__global_batch(o, c);
  s->max_mb = HS_MAX(o->max_microbatch_size, 1);
  s->allow_rc = o->allow_recompute;
  s->pp_next = 2;
  size_t n = c->n_devices;
  s->groups = hs_calloc(n, sizeof *s->groups);
  s->w = hs_calloc(n, sizeof *s->w);
  s->cnt = hs_calloc(n, sizeof *s->cnt);
  s->stage_of = hs_calloc(n, sizeof *s->stage_of);
  if (!s->groups || !s->w || !s->cnt || !s->stage_of)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  HS_CHECK(hs_estimator_new(m, c, s->dt, &s->est, err));
  hs_estimator_set_deadline(s->est, o->deadline_s);
  hs_estimator_set_practice(s->est, &o->practice);
  if (hs__cpool_init(&s->pool, hs__sim_budget(c)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  s->pool.deadline_s = o->deadline_s;
  s->pool.beat_s = o->beat_s; /* it returns the pool's best: no use simulating past beat_s */
  return HS_OK;
cleanup:
  hs_estimator_free(s->est);
  free(s->groups);
  free(s->w);
  free(s->cnt);
  free(s->stage_of);
  memset(s, 0, sizeof *s);
  return st;
}

static hs_status_t whale_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  whale_t *s = state;
  *done = false;
  int32_t max_tp = hs__max_tp(s->c);
  int64_t layers = HS_MAX(hs_model_layers(s->m), 1);
  if (s->phase == 0) {
    for (int32_t tp = 1; tp <= max_tp; tp *= 2) {
      if (!hs_model_tp_ok(s->m, tp))
        continue;
      int32_t ng = make_groups(s, tp);
      if (ng <= 0)
        continue;
      for (int32_t b = 1; b <= s->max_mb; b *= 2) {
        if (s->gb % b)
          continue;
        for (int rc = 0; rc < (s->allow_rc ? 2 : 1); rc++) {
          hs_plan_t plan;
          hs_status_t st =
              build_status(build_dp(s, tp, ng, b, rc ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE, &plan), err);
          if (st == HS_ENOMEM)
            return st;
          if (st == HS_OK && (st = offer(s, &plan, err)) != HS_OK)
            return st;
        }
      }
    }
    s->pure_dp_fits = s->pool.n > 0;
    s->phase = 1;
    *progress = 0.3;
    return HS_OK;
  }
  if (s->phase == 1) {
    int32_t pp = s->pp_next;
    /* PP candidates: every pp on small clusters, powers of two on big ones */
    s->pp_next = s->c->n_devices <= 64 ? pp + 1 : pp * 2;
    if (pp > layers || pp > (int32_t)s->c->n_devices) {
      s->phase = 2;
      return HS_OK;
    }
    for (int32_t tp = 1; tp <= max_tp; tp *= 2) {
      if (!hs_model_tp_ok(s->m, tp))
        continue;
      int32_t ng = make_groups(s, tp);
      if (ng < pp)
        continue;
      for (int32_t b = 1; b <= s->max_mb; b *= 2)
        for (int rc = 0; rc < (s->allow_rc ? 2 : 1); rc++) {
          for (int32_t k = 0; k < ng; k++)
            s->stage_of[k] = -1;
          hs_plan_t plan;
          hs_status_t st = build_status(
              build_pp(s, tp, ng, pp, b, rc ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE, &plan), err);
          if (st == HS_ENOMEM)
            return st;
          if (st == HS_OK && (st = offer(s, &plan, err)) != HS_OK)
            return st;
        }
    }
    /* the first pp that fits is the Whale choice; a few more deepen the pool */
    if (s->pool.n > 0 && s->first_fit_pp == 0)
      s->first_fit_pp = pp;
    /* deeper pipelines only add bubbles once some pp fits: stop a few later */
    if (s->first_fit_pp > 0 && pp >= 4 * s->first_fit_pp)
      s->phase = 2;
    *progress = 0.3 + 0.5 * pp / (double)layers;
    return HS_OK;
  }
  hs_status_t st = hs__cpool_sim_step(&s->pool, s->m, s->c, done, err);
  *progress = 0.8 + 0.2 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
  return st;
}

static hs_status_t whale_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                                hs_error_t *err)
{
  whale_t *s = state;
  if (s->pool.n == 0 && s->why[0])
    snprintf(s->pool.why, sizeof s->pool.why, "%s", s->why);
  stats->candidates = s->scored;
  snprintf(stats->note, sizeof stats->note, "%s, %d simulated",
           s->pure_dp_fits ? "pure DP fits" : "pure DP does not fit: pipeline", s->pool.next_sim);
  hs__cpool_note(&s->pool, stats->note, sizeof stats->note);
  stats->pruned_below_s = hs__cpool_pruned_below(&s->pool);
  return hs__cpool_result(&s->pool, out, &stats->predicted_s, "whale", err);
}

static void whale_free(void *state)
{
  whale_t *s = state;
  hs_estimator_free(s->est);
  hs__cpool_destroy(&s->pool);
  free(s->groups);
  free(s->w);
  free(s->cnt);
  free(s->stage_of);
}

const hs_planner_type_t hs_planner_whale = {
    .name = "whale",
    .description = "hardware-aware DP (Whale): batch shares proportional to device speed",
    .state_size = sizeof(whale_t),
    .init = whale_init,
    .step = whale_step,
    .result = whale_result,
    .free = whale_free,
};
