/*
 * hapt_vpp.c - interleaved variants of hapt's finalists (hapt_vpp.h says
 * what and why).
 *
 * Representation: a variant is built from its source plan alone (no
 * state of hapt's DP): the source's pipelines, ranks and replicas, the
 * block counts per rank (block_first), v. The pool owns the variants; the
 * sources are only read.
 */
#include "hapt_vpp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 64 /* ranks of a source re-cut (hapt's DP makes at most 16) */

/* The model's blocks (v->L, v->block_first): contiguous runs of ops of one
 * layer, in order; L stays 0 (no pass) otherwise. O(ops). */
static hs_status_t find_blocks(hs_hapt_vpp_t *v, hs_error_t *err)
{
  const hs_model_t *m = v->m;
  int64_t L64 = hs_model_layers(m);
  if (L64 < 2 || L64 > 100000)
    return HS_OK;
  int32_t L = (int32_t)L64;
  v->block_first = hs_calloc((size_t)L + 1, sizeof *v->block_first);
  if (!v->block_first)
    return hs_error_set(err, HS_ENOMEM, "hapt: out of memory");
  int32_t next = 0, last_op = -1;
  for (size_t i = 0; i < m->n_ops; i++) {
    int32_t l = m->ops[i].layer;
    if (l < 0)
      continue;
    if (l == next && (last_op < 0 || (size_t)last_op == i - 1)) {
      v->block_first[next++] = (int32_t)i; /* block l starts right after block l - 1 */
    } else if (l != next - 1 || (size_t)last_op != i - 1) {
      free(v->block_first); /* out of order or not contiguous: no pass */
      v->block_first = NULL;
      return HS_OK;
    }
    last_op = (int32_t)i;
  }
  if (next != L) {
    free(v->block_first);
    v->block_first = NULL;
    return HS_OK;
  }
  v->block_first[L] = last_op + 1;
  v->L = L;
  return HS_OK;
}

hs_status_t hs__hapt_vpp_init(hs_hapt_vpp_t *v, const hs_model_t *m, const hs_cluster_t *c,
                              const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(v, 0, sizeof *v);
  v->m = m;
  v->c = c;
  v->precision = hs__precision(o, c);
  HS_CHECK(find_blocks(v, err));
  if (hs__cpool_init(&v->pool, hs__sim_budget(c)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "hapt: out of memory"));
  v->pool.deadline_s = o->deadline_s;
  return HS_OK;
cleanup:
  hs__hapt_vpp_destroy(v);
  return st;
}

void hs__hapt_vpp_destroy(hs_hapt_vpp_t *v)
{
  if (!v)
    return;
  free(v->block_first);
  hs_estimator_free(v->est);
  hs__cpool_destroy(&v->pool);
  memset(v, 0, sizeof *v);
}

/* The boundary nearest to op (ties to the lower one) among the block
 * boundaries that are multiples of vc, as a block index in [0, L]; op sits
 * at its fractional block position (a cut after a block's attention half
 * is inside the block). Op 0 (the embedding's start) is boundary 0 and
 * n_ops boundary L. O(log L). */
static int32_t nearest_boundary(const hs_hapt_vpp_t *v, int32_t op, int32_t vc)
{
  if (op <= v->block_first[0])
    return 0;
  if (op >= v->block_first[v->L])
    return v->L;
  int32_t lo = 0, hi = v->L; /* first boundary >= op */
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (v->block_first[mid] < op)
      lo = mid + 1;
    else
      hi = mid;
  }
  /* op lies in block lo - 1, at (lo - 1) + frac blocks; positions are in
   * 1/len of a block (integers: no division rounds), and the nearest
   * multiples of vc are vc * down blocks and the next one */
  int32_t blk = lo - 1;
  int64_t len = v->block_first[lo] - v->block_first[blk]; /* > 0 */
  int64_t pos = (int64_t)blk * len + (op - v->block_first[blk]); /* x len */
  int64_t down = (int64_t)blk / vc;
  int64_t below = down * vc * len, above = (down + 1) * vc * len;
  int64_t b = pos - below <= above - pos ? down * vc : (down + 1) * vc;
  return (int32_t)HS_MIN(b, (int64_t)v->L);
}

/* Whether src is a plan this pass re-cuts: 1f1b or hetero-1f1b with one
 * chunk, no shards or device ratios, and every pipeline of S >= 2 stages
 * (S of pipeline 0) with microbatches a multiple of S. O(pipelines). */
static bool source_ok(const hs_plan_t *src)
{
  if (src->n_pipelines < 1 || src->chunks > 1 || src->n_shards > 0 || src->device_ratios ||
      (strcmp(src->schedule, "1f1b") != 0 && strcmp(src->schedule, "hetero-1f1b") != 0))
    return false;
  int32_t S = src->pipelines[0].n_stages;
  for (int32_t i = 0; i < src->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &src->pipelines[i];
    if (pl->n_stages != S || S < 2 || pl->n_microbatches % S != 0)
      return false;
  }
  return true;
}

/* Blocks per rank of pipeline pl under layout `even` (hapt_vpp.h) into
 * nb[0..S-1], each a multiple of vc and at least vc; false when the layout
 * does not apply. O(S log L). */
static bool rank_blocks(const hs_hapt_vpp_t *v, const hs_plan_pipeline_t *pl, bool even, int32_t vc,
                        int32_t *nb)
{
  int32_t S = pl->n_stages;
  if (even) {
    if (v->L % (S * vc) != 0)
      return false;
    for (int32_t s = 0; s < S; s++)
      nb[s] = v->L / S;
    return true;
  }
  int32_t b0 = 0;
  for (int32_t s = 0; s < S; s++) {
    int32_t b1 = s == S - 1 ? v->L : nearest_boundary(v, pl->stages[s + 1].op_first, vc);
    nb[s] = b1 - b0;
    if (nb[s] < vc || nb[s] % vc != 0)
      return false;
    b0 = b1;
  }
  return true;
}

hs_status_t hs__hapt_vpp_interleave(const hs_hapt_vpp_t *v, const hs_plan_t *src, int32_t vc,
                                    bool even, bool async, hs_plan_t *out, bool *ok,
                                    hs_error_t *err)
{
  hs_status_t st = HS_OK;
  *ok = false;
  hs_plan_init(out);
  if (v->L < 2 || vc < 2 || !source_ok(src))
    return HS_OK;
  int32_t S = src->pipelines[0].n_stages;
  int32_t nb[MAX_RANKS], own[MAX_RANKS];
  if (S > MAX_RANKS)
    return HS_OK;
  for (int32_t i = 0; i < src->n_pipelines; i++) {
    if (!rank_blocks(v, &src->pipelines[i], even, vc, nb))
      return HS_OK;
    /* "even" the same as "own": offered once, as "own" */
    if (even && rank_blocks(v, &src->pipelines[i], false, vc, own) &&
        memcmp(nb, own, sizeof(int32_t) * (size_t)S) == 0)
      return HS_OK;
  }
  hs_plan_t top = *src; /* the plan's fields without its pipelines */
  top.pipelines = NULL;
  top.n_pipelines = 0;
  HS_CHECK(hs_plan_copy(&top, out, err));
  hs_strlcpy(out->schedule, "interleaved-1f1b", sizeof out->schedule);
  out->chunks = vc;
  out->async_send = async;
  if (hs_plan_alloc_pipelines(out, src->n_pipelines) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "hapt: out of memory"));
  for (int32_t i = 0; i < src->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &src->pipelines[i];
    hs_plan_pipeline_t *q = &out->pipelines[i];
    rank_blocks(v, pl, even, vc, nb);
    q->microbatch_size = pl->microbatch_size;
    q->n_microbatches = pl->n_microbatches;
    if (hs_plan_alloc_stages(q, S * vc) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "hapt: out of memory"));
    int32_t blk = 0;
    for (int32_t k = 0; k < S * vc; k++) {
      const hs_plan_stage_t *from = &pl->stages[k % S];
      hs_plan_stage_t *y = &q->stages[k];
      y->op_first = k == 0 ? 0 : v->block_first[blk];
      blk += nb[k % S] / vc;
      y->op_last = k == S * vc - 1 ? (int32_t)v->m->n_ops : v->block_first[blk];
      y->recompute = from->recompute;
      y->warmup = -1;
      if (hs_plan_alloc_replicas(y, from->n_replicas) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "hapt: out of memory"));
      for (int32_t r = 0; r < from->n_replicas; r++) {
        if (hs_plan_replica_set_devices(&y->replicas[r], from->replicas[r].devices,
                                        from->replicas[r].n_devices) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "hapt: out of memory"));
        y->replicas[r].share = from->replicas[r].share;
      }
    }
  }
  *ok = true;
cleanup:
  if (st != HS_OK || !*ok) {
    hs_plan_destroy(out);
    hs_plan_init(out);
  }
  return st;
}

/* Offers every variant of src (hapt_vpp.h) that validates, fits by the
 * estimate and is estimated faster than src itself to v->pool: where the
 * closed form sees no gain from the smaller bubble (a slow cut crossed v
 * times as often), the simulator did not either (bench_search, 16 and 64
 * GPUs: variants estimated 1.5-2x their sources simulated 1.6-2.4x
 * slower). O(HS_HAPT_VPP_MAX_V x 4 estimates). */
static hs_status_t offer_variants(hs_hapt_vpp_t *v, const hs_plan_t *src, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_t t;
  hs_plan_init(&t);
  hs_estimate_t es = {0};
  if (!v->est) {
    HS_CHECK(hs_estimator_new(v->m, v->c, v->precision, &v->est, err));
    hs_estimator_set_deadline(v->est, v->pool.deadline_s);
  }
  HS_CHECK(hs_estimate_plan(v->est, src, false, &es, err));
  if (!isfinite(es.iteration_s))
    goto cleanup;
  for (int32_t vc = 2; vc <= HS_HAPT_VPP_MAX_V; vc++)
    for (int32_t lay = 0; lay < 4; lay++) {
      bool ok = false;
      HS_CHECK(hs__hapt_vpp_interleave(v, src, vc, lay / 2 == 1, lay % 2 == 1, &t, &ok, err));
      if (!ok)
        continue;
      hs_error_t e2;
      hs_error_init(&e2);
      e2.warn_fp = NULL;
      if (hs_plan_validate(&t, v->m, v->c, NULL, &e2) != HS_OK) {
        hs_plan_destroy(&t); /* not a plan the simulator takes */
        hs_plan_init(&t);
        continue;
      }
      hs_estimate_t e = {0};
      HS_CHECK(hs_estimate_plan(v->est, &t, true, &e, err));
      v->estimated++;
      if (!e.oom && isfinite(e.iteration_s) && e.iteration_s < es.iteration_s)
        hs__cpool_offer(&v->pool, &t, e.iteration_s);
      hs_plan_destroy(&t);
      hs_plan_init(&t);
    }
cleanup:
  hs_plan_destroy(&t);
  return st;
}

hs_status_t hs__hapt_vpp_step(hs_hapt_vpp_t *v, const hs_plan_t *const *src, int32_t n_src,
                              bool *done, hs_error_t *err)
{
  *done = false;
  if (!v->offered) {
    v->offered = true;
    for (int32_t i = 0; v->L > 0 && i < n_src; i++) {
      if (!source_ok(src[i]))
        continue; /* no variant: not estimated either */
      hs_status_t st = offer_variants(v, src[i], err);
      if (st != HS_OK)
        return st;
    }
    *done = v->pool.n == 0;
    return HS_OK;
  }
  return hs__cpool_sim_step(&v->pool, v->m, v->c, done, err);
}
