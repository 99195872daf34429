/*
 * sim_memo.c - the memo of simulated plans (sim_memo.h states what it is
 * for and its invariants).
 */
#include "sim_memo.h"

#include <stdlib.h>
#include <string.h>

void hs__sim_memo_init(hs_sim_memo_t *m) { memset(m, 0, sizeof *m); }

void hs__sim_memo_destroy(hs_sim_memo_t *m)
{
  if (!m)
    return;
  for (int32_t i = 0; i < m->n; i++)
    hs_plan_destroy(&m->plans[i]);
  free(m->plans);
  free(m->iter_s);
  memset(m, 0, sizeof *m);
}

/* Two stages with equal ops, recomputation, warm-up, order and replicas
 * (devices in order, shares bit for bit). O(stage size). */
static bool stage_same(const hs_plan_stage_t *x, const hs_plan_stage_t *y)
{
  if (x->op_first != y->op_first || x->op_last != y->op_last || x->recompute != y->recompute ||
      x->warmup != y->warmup || x->n_replicas != y->n_replicas)
    return false;
  if ((x->order == NULL) != (y->order == NULL) || (x->order && strcmp(x->order, y->order) != 0))
    return false;
  for (int32_t q = 0; q < x->n_replicas; q++) {
    const hs_plan_replica_t *a = &x->replicas[q], *b = &y->replicas[q];
    if (a->n_devices != b->n_devices || memcmp(&a->share, &b->share, sizeof a->share) != 0 ||
        (a->n_devices > 0 &&
         memcmp(a->devices, b->devices, sizeof *a->devices * (size_t)a->n_devices) != 0))
      return false;
  }
  return true;
}

/* hs__plan_same, or (any_zero) the same but for the ZeRO stage when both
 * shard (1-3): the practice's zero_stage and the optimizer_sharding it
 * sets. */
static bool plan_same(const hs_plan_t *a, const hs_plan_t *b, bool any_zero)
{
  /* ZeRO stages 1-3 compared as one: the stage and the sharding it sets */
  bool siblings = any_zero && a->practice.zero_stage >= 1 && b->practice.zero_stage >= 1;
  hs_practice_t pb = b->practice;
  if (siblings)
    pb.zero_stage = a->practice.zero_stage;
  if (strcmp(a->strategy, b->strategy) != 0 || strcmp(a->schedule, b->schedule) != 0 ||
      a->chunks != b->chunks || a->async_send != b->async_send || a->precision != b->precision ||
      (!siblings && a->optimizer_sharding != b->optimizer_sharding) ||
      memcmp(&a->bucket_bytes, &b->bucket_bytes, sizeof a->bucket_bytes) != 0 ||
      memcmp(&a->practice, &pb, sizeof a->practice) != 0 ||
      a->n_pipelines != b->n_pipelines || a->n_shards != b->n_shards ||
      a->n_device_ratios != b->n_device_ratios)
    return false;
  if (a->n_shards > 0 &&
      memcmp(a->shards, b->shards, sizeof *a->shards * (size_t)a->n_shards) != 0)
    return false;
  if (a->n_device_ratios > 0 &&
      memcmp(a->device_ratios, b->device_ratios,
             sizeof *a->device_ratios * (size_t)a->n_device_ratios) != 0)
    return false;
  for (int32_t i = 0; i < a->n_pipelines; i++) {
    const hs_plan_pipeline_t *x = &a->pipelines[i], *y = &b->pipelines[i];
    if (x->microbatch_size != y->microbatch_size || x->n_microbatches != y->n_microbatches ||
        x->n_stages != y->n_stages)
      return false;
    for (int32_t j = 0; j < x->n_stages; j++)
      if (!stage_same(&x->stages[j], &y->stages[j]))
        return false;
  }
  return true;
}

bool hs__plan_same(const hs_plan_t *a, const hs_plan_t *b) { return plan_same(a, b, false); }

bool hs__plan_same_but_zero(const hs_plan_t *a, const hs_plan_t *b) { return plan_same(a, b, true); }

/* Whether selective recomputation of stg recomputes some op under pr and
 * one of its replicas' TP degrees (sim/lower.c's rule). O(ops x replicas). */
static bool selective_recomputes(const hs_model_t *m, const hs_practice_t *pr,
                                 const hs_plan_stage_t *stg)
{
  for (int32_t q = 0; q < stg->n_replicas; q++)
    for (int32_t i = stg->op_first; i < stg->op_last; i++) {
      hs_op_t tmp;
      if (hs_practice_recomputes_selective(
              hs_practice_op(pr, &m->ops[i], stg->replicas[q].n_devices, &tmp)))
        return true;
    }
  return false;
}

void hs__plan_canon_timeline(const hs_model_t *m, hs_plan_t *p)
{
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++) {
      hs_plan_stage_t *stg = &p->pipelines[i].stages[s];
      if (stg->recompute == HS_RECOMPUTE_SELECTIVE && !selective_recomputes(m, &p->practice, stg))
        stg->recompute = HS_RECOMPUTE_NONE;
    }
}

hs_status_t hs__plan_same_timeline(const hs_model_t *m, const hs_plan_t *a, const hs_plan_t *b,
                                   bool *same)
{
  hs_status_t st = HS_OK;
  hs_plan_t ca, cb;
  hs_plan_init(&ca);
  hs_plan_init(&cb);
  hs_error_t e;
  hs_error_init(&e);
  e.warn_fp = NULL;
  *same = false;
  HS_CHECK(hs_plan_copy(a, &ca, &e));
  HS_CHECK(hs_plan_copy(b, &cb, &e));
  hs__plan_canon_timeline(m, &ca);
  hs__plan_canon_timeline(m, &cb);
  *same = hs__plan_same(&ca, &cb);
cleanup:
  hs_plan_destroy(&ca);
  hs_plan_destroy(&cb);
  return st == HS_OK ? HS_OK : HS_ENOMEM;
}

bool hs__sim_memo_get(hs_sim_memo_t *m, const hs_plan_t *p, double *iter_s)
{
  for (int32_t i = 0; i < m->n; i++)
    if (hs__plan_same(&m->plans[i], p)) {
      *iter_s = m->iter_s[i];
      m->hits++;
      return true;
    }
  return false;
}

hs_status_t hs__sim_memo_put(hs_sim_memo_t *m, const hs_plan_t *p, double iter_s)
{
  if (m->n == m->cap) {
    int32_t cap = m->cap ? 2 * m->cap : 16;
    hs_plan_t *plans = realloc(m->plans, sizeof *plans * (size_t)cap);
    if (!plans)
      return HS_ENOMEM;
    m->plans = plans;
    double *t = realloc(m->iter_s, sizeof *t * (size_t)cap);
    if (!t)
      return HS_ENOMEM;
    m->iter_s = t;
    m->cap = cap;
  }
  hs_error_t e;
  hs_error_init(&e);
  e.warn_fp = NULL;
  if (hs_plan_copy(p, &m->plans[m->n], &e) != HS_OK)
    return HS_ENOMEM;
  m->iter_s[m->n++] = iter_s;
  return HS_OK;
}
