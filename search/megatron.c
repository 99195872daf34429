/*
 * megatron.c - `megatron`: what a Megatron-LM user does on any cluster. Grid
 * search over TP x PP x DP (TP a power of two inside a node), microbatch size
 * and recomputation (none, full), with hs_plan_grid's even layer split and
 * equal batch shares over the cluster's devices in order, ignoring device
 * differences. Candidates are scored with the estimator (memory included);
 * the best few are simulated and the fastest that fits is returned.
 *
 * Search space: tp in {1,2,..,max_tp}, pp dividing devices/tp with pp <=
 * blocks, dp = devices/(tp pp), microbatch b in {1,2,4,..,max_microbatch_size}
 * with dp b dividing the global batch, recompute in {none, full}. At most
 * log2(max_tp) x d(devices) x log2(max_mb) x 2 candidates (d = number of
 * divisors), each O(devices + ops) to build and estimate, plus
 * hs__sim_budget simulations.
 */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CANDS_PER_STEP 8

typedef struct cand {
  int32_t tp, pp, dp, mbs;
  hs_recompute_t rc;
} cand_t;

typedef struct megatron {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_plan_opts_t o;
  hs_dtype_t dt;
  int64_t gb;
  hs_estimator_t *est;
  cand_t *cands;
  int32_t n_cands, next;
  hs_cand_pool_t pool;
  uint64_t scored;
  char why[256];
} megatron_t;

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
  hs_estimator_set_practice(s->est, &o->practice);
  if (hs__cpool_init(&s->pool, hs__sim_budget(c)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t n = (int32_t)c->n_devices;
  int64_t layers = hs_model_layers(m);
  if (layers < 1)
    layers = 1;
  int32_t max_tp = hs__max_tp(c);
  size_t cap = 0;
  for (int32_t tp = 1; tp <= max_tp; tp *= 2) {
    if (n % tp || !hs_model_tp_ok(m, tp))
      continue;
    for (int32_t pp = 1; pp <= n / tp && pp <= layers; pp++) {
      if ((n / tp) % pp)
        continue;
      int32_t dp = n / tp / pp;
      for (int32_t b = 1; b <= HS_MAX(o->max_microbatch_size, 1); b *= 2) {
        if (s->gb % ((int64_t)dp * b))
          continue;
        for (int rc = 0; rc < (o->allow_recompute ? 2 : 1); rc++) {
          if (hs_reserve((void **)&s->cands, &cap, (size_t)s->n_cands + 1, sizeof *s->cands) != HS_OK)
            HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
          s->cands[s->n_cands++] =
              (cand_t){tp, pp, dp, b, rc ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE};
        }
      }
    }
  }
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
  return st;
}

static hs_status_t megatron_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  megatron_t *s = state;
  hs_status_t st = HS_OK;
  *done = false;
  if (s->next < s->n_cands) {
    for (int32_t k = 0; k < CANDS_PER_STEP && s->next < s->n_cands; k++, s->next++) {
      const cand_t *cd = &s->cands[s->next];
      hs_grid_opts_t g;
      hs_grid_opts_init(&g);
      g.tp = cd->tp;
      g.pp = cd->pp;
      g.dp = cd->dp;
      g.microbatch_size = cd->mbs;
      g.global_batch = s->gb;
      g.recompute = cd->rc;
      HS_CHECK(hs__offer_grid(s->est, s->m, s->c, &g, "megatron", s->dt,
                              "out of memory: the best grid does not fit", &s->pool, &s->scored,
                              s->why, sizeof s->why, err));
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
  return st;
}

static void megatron_free(void *state)
{
  megatron_t *s = state;
  hs_estimator_free(s->est);
  hs__cpool_destroy(&s->pool);
  free(s->cands);
}

const hs_planner_type_t hs_planner_megatron = {
    .name = "megatron",
    .description = "Megatron-LM grid: TP x PP x DP, even layer split, equal shares (device-agnostic)",
    .state_size = sizeof(megatron_t),
    .init = megatron_init,
    .step = megatron_step,
    .result = megatron_result,
    .free = megatron_free,
};
