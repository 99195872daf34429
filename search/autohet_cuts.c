/*
 * autohet_cuts.c - half-block stage boundaries for autohet's finalists.
 * The MILP gives every stage a whole number of transformer blocks; with
 * few blocks per stage that granularity costs more than the cost model's
 * error (issue 34 item 1: under megatron-core-2024 kernels oracle case 5,
 * 4 blocks on an A100 and a V100 TP group, the best block split simulates
 * 6.7% behind the exhaustive oracle's 1.5 | 2.5 blocks). The transform
 * phase therefore also offers, for every symmetric finalist, each stage
 * boundary moved to the attention/MLP cut of the block before or after it
 * (hapt's intra-block cut candidate: the op after the first forward TP
 * all-reduce of the block), estimated like the practice transforms.
 *
 * Entry point: hs__autohet_offer_cut_shifts. Invariant: a shifted plan
 * keeps the source's schedule, practice and devices; only op ranges (and
 * hetero-1f1b warm-ups, recomputed by the same rule) change.
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The attention/MLP cut of block l (hapt_space.c make_cuts' rule): the op
 * after the block's first op with a forward TP all-reduce; -1 when the
 * block has none or it is the block's last op. O(ops of the block). */
static int32_t mid_cut(const autohet_t *a, int32_t l)
{
  if (l < 0 || l >= a->L)
    return -1;
  for (int32_t i = a->block_first[l]; i + 1 < a->block_first[l + 1]; i++)
    if (a->m->ops[i].tp_allreduce_fwd)
      return i + 1;
  return -1;
}

/* Block whose first op is op, else -1 (0 for the embedding's stage start,
 * which never moves). O(L). */
static int32_t block_starting_at(const autohet_t *a, int32_t op)
{
  for (int32_t l = 1; l < a->L; l++)
    if (a->block_first[l] == op)
      return l;
  return -1;
}

/* Every pipeline of p has pipeline 0's stage op ranges and stage count. */
static bool same_cuts(const hs_plan_t *p)
{
  if (p->n_pipelines < 1 || p->chunks > 1 || p->n_shards > 0)
    return false;
  const hs_plan_pipeline_t *p0 = &p->pipelines[0];
  for (int32_t i = 1; i < p->n_pipelines; i++) {
    if (p->pipelines[i].n_stages != p0->n_stages)
      return false;
    for (int32_t s = 0; s < p0->n_stages; s++)
      if (p->pipelines[i].stages[s].op_first != p0->stages[s].op_first ||
          p->pipelines[i].stages[s].op_last != p0->stages[s].op_last)
        return false;
  }
  return true;
}

/* src with boundary s (between stages s - 1 and s, in every pipeline)
 * moved to op `to`, estimated and offered to a->xpool when it fits. */
static hs_status_t offer_one(autohet_t *a, const hs_plan_t *src, int32_t s, int32_t to,
                             hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_t t;
  hs_plan_init(&t);
  HS_CHECK(hs_plan_copy(src, &t, err));
  for (int32_t i = 0; i < t.n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &t.pipelines[i];
    pl->stages[s - 1].op_last = pl->stages[s].op_first = to;
    for (int32_t k = 0; k < pl->n_stages; k++) {
      pl->stages[k].warmup = -1;
      free(pl->stages[k].order);
      pl->stages[k].order = NULL;
    }
  }
  if (t.async_send && hs__autohet_set_warmups(a, &t) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating warm-ups"));
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_estimate_t e = {0};
  if (hs_plan_validate(&t, a->m, a->c, NULL, &e2) == HS_OK)
    HS_CHECK(hs_estimate_plan(a->est, &t, true, &e, err));
  else
    e.oom = true; /* not a plan the simulator takes: dropped */
  a->x_estimated++;
  a->x_cut_shifts++;
  if (!e.oom && isfinite(e.iteration_s))
    hs__cpool_offer(&a->xpool, &t, e.iteration_s); /* takes t or destroys it */
  else
    hs_plan_destroy(&t);
  return HS_OK;
cleanup:
  hs_plan_destroy(&t);
  return st;
}

hs_status_t hs__autohet_offer_cut_shifts(autohet_t *a, const hs_plan_t *src, hs_error_t *err)
{
  if (!a->o.search_practice || !same_cuts(src))
    return HS_OK;
  const hs_plan_pipeline_t *p0 = &src->pipelines[0];
  for (int32_t s = 1; s < p0->n_stages; s++) {
    int32_t l = block_starting_at(a, p0->stages[s].op_first);
    if (l < 0)
      continue;
    int32_t to[2] = {mid_cut(a, l - 1), mid_cut(a, l)};
    for (int32_t k = 0; k < 2; k++) {
      if (to[k] <= p0->stages[s - 1].op_first || to[k] >= p0->stages[s].op_last)
        continue;
      if (hs__autohet_out_of_time(a))
        return HS_OK;
      hs_status_t st = offer_one(a, src, s, to[k], err);
      if (st != HS_OK)
        return st;
    }
  }
  hs_estimator_set_practice(a->est, &a->base_pr);
  return HS_OK;
}
