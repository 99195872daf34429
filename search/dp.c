/*
 * dp.c - `data-parallel`: every device holds a full replica and takes an
 * equal share of the batch (PyTorch DDP with an even split). On a cluster of
 * mixed GPU types this is one pipeline of one stage per device, all with the
 * same microbatch size and count (equal batch shares mean equal microbatch
 * counts), so the slowest GPU sets the pace.
 *
 * Search space: microbatch size b in {1,2,4,..,max_microbatch_size} with
 * devices x b dividing the global batch (gradient accumulation over the
 * rest), recompute in {none, full}. O(log2(max_mb) x 2) candidates, each
 * O(devices + ops) to build and estimate, plus hs__sim_budget simulations.
 */
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct dpp {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_dtype_t dt;
  int64_t gb;
  int32_t max_mb;
  bool allow_rc;
  hs_estimator_t *est;
  hs_cand_pool_t pool;
  bool enumerated;
  uint64_t scored;
  char why[256];
} dpp_t;

static hs_status_t dp_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_plan_opts_t *o, hs_error_t *err)
{
  dpp_t *s = state;
  memset(s, 0, sizeof *s);
  s->m = m;
  s->c = c;
  s->dt = hs__precision(o, c);
  s->gb = hs__global_batch(o, c);
  s->max_mb = HS_MAX(o->max_microbatch_size, 1);
  s->allow_rc = o->allow_recompute;
  if (s->gb % (int64_t)c->n_devices)
    return hs_error_set(err, HS_EINFEASIBLE,
                        "data-parallel: global batch %lld is not a multiple of the %zu devices",
                        (long long)s->gb, c->n_devices);
  hs_status_t st = hs_estimator_new(m, c, s->dt, &s->est, err);
  if (st != HS_OK)
    return st;
  hs_estimator_set_deadline(s->est, o->deadline_s);
  hs_estimator_set_practice(s->est, &o->practice);
  if (hs__cpool_init(&s->pool, hs__sim_budget(c)) != HS_OK) {
    hs_estimator_free(s->est);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  s->pool.deadline_s = o->deadline_s;
  return HS_OK;
}

static hs_status_t dp_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  dpp_t *s = state;
  *done = false;
  if (!s->enumerated) {
    s->enumerated = true;
    hs_status_t st = hs__offer_dp_grids(s->est, s->m, s->c, s->gb, s->max_mb, s->allow_rc,
                                        "data-parallel", s->dt, "the model does not fit as a full replica",
                                        &s->pool, &s->scored, s->why, sizeof s->why, err);
    if (st != HS_OK)
      return st;
    *progress = 0.5;
    return HS_OK;
  }
  hs_status_t st = hs__cpool_sim_step(&s->pool, s->m, s->c, done, err);
  *progress = 0.5 + 0.5 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
  return st;
}

static hs_status_t dp_result(void *state, hs_plan_t *out, hs_search_stats_t *stats, hs_error_t *err)
{
  dpp_t *s = state;
  if (s->pool.n == 0 && s->why[0])
    snprintf(s->pool.why, sizeof s->pool.why, "%s", s->why);
  stats->candidates = s->scored;
  snprintf(stats->note, sizeof stats->note, "%d simulated", s->pool.next_sim);
  hs__cpool_note(&s->pool, stats->note, sizeof stats->note);
  return hs__cpool_result(&s->pool, out, &stats->predicted_s, "data-parallel", err);
}

static void dp_free(void *state)
{
  dpp_t *s = state;
  hs_estimator_free(s->est);
  hs__cpool_destroy(&s->pool);
}

const hs_planner_type_t hs_planner_data_parallel = {
    .name = "data-parallel",
    .description = "every device a full replica, equal batch shares (DDP)",
    .state_size = sizeof(dpp_t),
    .init = dp_init,
    .step = dp_step,
    .result = dp_result,
    .free = dp_free,
};
