/*
 * deepspeed.c - `deepspeed`: DeepSpeed-style ZeRO data parallelism (Rajbhandari
 * et al., SC'20), the baseline HAP and most heterogeneous-training papers
 * compare against. Every device runs the whole model on an equal share of
 * the batch (no tensor or pipeline parallelism, DeepSpeed's default engine
 * without its pipeline module); the training state is sharded over all
 * devices by ZeRO stage 1 (optimizer state), 2 (+ gradients, reduce-scatter)
 * or 3 (+ parameters, all-gathered before use and prefetched), which is what
 * lets a model that does not fit as a DDP replica train at all. Activation
 * checkpointing (DeepSpeed's, i.e. full recomputation of each block) is
 * optional; equal shares mean the slowest GPU sets the pace.
 *
 * Search space (exact; docs/planners.md): ZeRO stage z in {1, 2, 3} (with
 * search_practice false: the options' stage, at least 1), microbatch size b
 * in {1,2,4,..,max_microbatch_size} with devices x b dividing the global
 * batch (gradient accumulation over the rest), recompute in {none, full}.
 * For an MoE model also expert parallelism E (DeepSpeed-MoE's ep_size):
 * every divisor >= 2 of the experts that divides the devices, with ZeRO
 * 1-2 (ZeRO-3 with EP is not modelled).
 * At most 3 x log2(max_mb) x 2 x (1 + |E|) candidates, each O(devices + ops)
 * to build and estimate, plus hs__sim_budget simulations.
 *
 * Invariants: the options' kernel set, precision and TP overlap are kept;
 * the ZeRO stage and (MoE) the expert-parallel degree are searched.
 */
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct deepspeed {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_plan_opts_t o;
  hs_dtype_t dt;
  int64_t gb;
  hs_estimator_t *est;
  hs_cand_pool_t pool;
  int32_t z_first, z_last; /* ZeRO stages searched */
  int32_t eps[8], n_ep;     /* expert-parallel degrees searched (eps[0] the options') */
  bool enumerated;
  uint64_t scored;
  char why[256];
} deepspeed_t;

static hs_status_t ds_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_plan_opts_t *o, hs_error_t *err)
{
  deepspeed_t *s = state;
  memset(s, 0, sizeof *s);
  s->m = m;
  s->c = c;
  s->o = *o;
  s->dt = hs__precision(o, c);
  s->gb = hs__global_batch(o, c);
  s->z_first = HS_MAX(o->practice.zero_stage, 1);
  s->z_last = o->search_practice ? 3 : s->z_first;
  if (o->search_practice)
    s->z_first = 1;
  /* DeepSpeed-MoE: experts split over groups of E data-parallel ranks,
   * E dividing the experts and the devices (the pipelines of this space) */
  s->eps[0] = HS_MAX(o->practice.expert_parallel, 1);
  s->n_ep = 1;
  int32_t experts = 0;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].kind == HS_OP_MOE_EXPERT)
      experts = HS_MAX(experts, m->ops[i].experts);
  if (o->search_practice && s->eps[0] == 1)
    for (int32_t E = 2; E <= experts && s->n_ep < 8; E++)
      if (experts % E == 0 && c->n_devices % (size_t)E == 0)
        s->eps[s->n_ep++] = E;
  if (s->gb % (int64_t)c->n_devices)
    return hs_error_set(err, HS_EINFEASIBLE,
                        "deepspeed: global batch %lld is not a multiple of the %zu devices",
                        (long long)s->gb, c->n_devices);
  hs_status_t st = hs_estimator_new(m, c, s->dt, &s->est, err);
  if (st != HS_OK)
    return st;
  hs_estimator_set_deadline(s->est, o->deadline_s);
  if (hs__cpool_init(&s->pool, hs__sim_budget(c)) != HS_OK) {
    hs_estimator_free(s->est);
    s->est = NULL;
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  s->pool.deadline_s = o->deadline_s;
  s->pool.beat_s = o->beat_s; /* it returns the pool's best: no use simulating past beat_s */
  return HS_OK;
}

static hs_status_t ds_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  deepspeed_t *s = state;
  *done = false;
  if (!s->enumerated) {
    s->enumerated = true;
    for (int32_t k = 0; k < s->n_ep; k++)
      for (int32_t z = s->z_first; z <= s->z_last; z++) {
        hs_practice_t pr = s->o.practice;
        pr.zero_stage = z;
        pr.sequence_parallel = false; /* no TP group to split */
        pr.tp_comm_overlap = false;
        pr.expert_parallel = s->eps[k];
        if (s->eps[k] > 1 && z >= 3)
          continue; /* expert parallelism with ZeRO-3: not modelled (plan validation) */
        hs_estimator_set_practice(s->est, &pr);
        hs_status_t st = hs__offer_dp_grids(s->est, s->m, s->c, s->gb, HS_MAX(s->o.max_microbatch_size, 1),
                                            s->o.allow_recompute, "deepspeed", s->dt,
                                            "the model does not fit even with ZeRO-3", &s->pool,
                                            &s->scored, s->why, sizeof s->why, err);
        if (st != HS_OK)
          return st;
      }
    *progress = 0.5;
    return HS_OK;
  }
  hs_status_t st = hs__cpool_sim_step(&s->pool, s->m, s->c, done, err);
  *progress = 0.5 + 0.5 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
  return st;
}

static hs_status_t ds_result(void *state, hs_plan_t *out, hs_search_stats_t *stats, hs_error_t *err)
{
  deepspeed_t *s = state;
  if (s->pool.n == 0 && s->why[0])
    snprintf(s->pool.why, sizeof s->pool.why, "%s", s->why);
  stats->candidates = s->scored;
  if (s->n_ep > 1)
    snprintf(stats->note, sizeof stats->note, "ZeRO stages %d-%d, expert parallel 1-%d, %d simulated",
             s->z_first, s->z_last, s->eps[s->n_ep - 1], s->pool.next_sim);
  else
    snprintf(stats->note, sizeof stats->note, "ZeRO stages %d-%d, %d simulated", s->z_first,
             s->z_last, s->pool.next_sim);
  hs__cpool_note(&s->pool, stats->note, sizeof stats->note);
  stats->pruned_below_s = hs__cpool_pruned_below(&s->pool);
  return hs__cpool_result(&s->pool, out, &stats->predicted_s, "deepspeed", err);
}

static void ds_free(void *state)
{
  deepspeed_t *s = state;
  hs_estimator_free(s->est);
  hs__cpool_destroy(&s->pool);
}

const hs_planner_type_t hs_planner_deepspeed = {
    .name = "deepspeed",
    .description = "DeepSpeed ZeRO data parallelism: stage 1-3, equal batch shares, optional "
                   "activation checkpointing",
    .state_size = sizeof(deepspeed_t),
    .init = ds_init,
    .step = ds_step,
    .result = ds_result,
    .free = ds_free,
};
