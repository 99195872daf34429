/*
 * lower_place.c - the lowering passes that place work (see lower_int.h for
 * the pass order): HAP's per-op SPMD exchanges resolved, one executor per
 * (pipeline, rank, replica) with its schedule order, the pipeline pieces
 * between adjacent stages with their network paths, and the pieces grouped
 * per sender.
 *
 * Invariants: executor ids run pipeline by pipeline, rank by rank, replica
 * by replica; piece ids in (pipeline, stage pair, replica pair, direction)
 * order; out_list keeps each sender's pieces in piece order. Every pass is
 * O(its output) plus O(path length) per piece sub-flow.
 */
#include "lower_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Adds the links of path a->b (weight 1 each) to hops, merging repeats. */
static hs_status_t add_path(const hs_topology_t *topo, int32_t a, int32_t b, hs_flow_hop_t **hops,
                            int32_t *n, size_t *cap, hs_time_t *lat)
{
  hs_path_t p;
  if (hs_topology_path(topo, a, b, &p) != HS_OK)
    return HS_EINTERNAL;
  hs_time_t l = (hs_time_t)llround(p.latency_ns);
  if (l > *lat)
    *lat = l;
  for (int32_t k = 0; k < p.n; k++) {
    int32_t j = 0;
    while (j < *n && (*hops)[j].link != p.links[k])
      j++;
    if (j < *n) {
      (*hops)[j].weight++;
      continue;
    }
    if (hs_reserve((void **)hops, cap, (size_t)*n + 1, sizeof **hops) != HS_OK)
      return HS_ENOMEM;
    (*hops)[*n].link = p.links[k];
    (*hops)[*n].weight = 1;
    (*n)++;
  }
  return HS_OK;
}


/* SPMD exchanges of HAP plans (plan.sharding).
 * Reads: plan->shards, the model's ops. Guarantees: cx->spmd is NULL
 * without shards, else one spmd_op_t per op (HS_COLL__COUNT = no exchange)
 * with each shard rule's exchanges and parameter split. O(ops + shards). */
hs_status_t hs__lower_spmd_ops(lower_ctx_t *cx)
{
  const hs_model_t *m = cx->m;
  const hs_plan_t *plan = cx->plan;
  if (plan->n_shards <= 0)
    return HS_OK;
  spmd_op_t *spmd = cx->spmd = hs_calloc(m->n_ops, sizeof *spmd);
  if (!spmd)
    return HS_ENOMEM;
  for (size_t k = 0; k < m->n_ops; k++)
    spmd[k].before = spmd[k].after = HS_COLL__COUNT;
  for (int32_t k = 0; k < plan->n_shards; k++) {
    const hs_plan_shard_t *sh = &plan->shards[k];
    spmd_op_t *so = &spmd[sh->op];
    const hs_op_t *op = &m->ops[sh->op];
    if (sh->collective != HS_COLL_P2P && sh->collective < HS_COLL__COUNT)
      so->before = sh->collective;
    /* the rule's own exchanges (HAP's instruction set): experts dispatch
     * before and combine after (all-to-all); a column-split GEMM's input
     * gradient is a partial sum (all-reduce in backward, see spmd_dual's
     * caller); batch rules sync their replicated weight gradients in the
     * ordinary gradient buckets */
    if (sh->dim == HS_SHARD_EXPERTS) {
      so->before = HS_COLL_ALLTOALL;
      so->after = HS_COLL_ALLTOALL;
    }
    so->col_split = sh->dim == HS_SHARD_OUT && op->kind == HS_OP_GEMM;
    so->sharded_params = (sh->dim & HS_SHARD_BATCH) == 0 && op->params > 0;
  }
  return HS_OK;
}

/* Sizes the executor table and the (pipeline, stage, replica) index.
 * Reads: plan pipelines, cx->v. Guarantees: out->stage_exec and
 * out->max_replicas allocated (one more stage_exec slot, NULL-terminated),
 * out->execs zeroed with n_execs set. */
static hs_status_t alloc_executors(lower_ctx_t *cx)
{
  const hs_plan_t *plan = cx->plan;
  hs_lowered_t *out = cx->out;
  int32_t n_execs = 0;
  out->stage_exec = hs_calloc((size_t)plan->n_pipelines + 1, sizeof *out->stage_exec);
  out->max_replicas = hs_calloc((size_t)plan->n_pipelines, sizeof *out->max_replicas);
  if (!out->stage_exec || !out->max_replicas)
    return HS_ENOMEM;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    int32_t mr = 0;
    for (int32_t s = 0; s < pl->n_stages; s++)
      mr = HS_MAX(mr, pl->stages[s].n_replicas);
    out->max_replicas[i] = mr;
    out->stage_exec[i] = hs_calloc((size_t)pl->n_stages * (size_t)mr, sizeof(int32_t));
    if (!out->stage_exec[i])
      return HS_ENOMEM;
    int32_t ranks = pl->n_stages / cx->v;
    for (int32_t r = 0; r < ranks; r++)
      n_execs += pl->stages[r].n_replicas;
  }
  out->execs = hs_calloc((size_t)n_execs, sizeof *out->execs);
  if (!out->execs)
    return HS_ENOMEM;
  out->n_execs = n_execs;
  return HS_OK;
}

/* The SPMD group of stage rank st0 whose replicas become executors
 * e0 .. e0 + n_replicas - 1: HAP's stage of single-device replicas.
 * Guarantees: *gid is the new group's id, or -1 when the stage is no SPMD
 * stage (no sharding, interleaving, one replica or a multi-device one). */
static hs_status_t spmd_group(lower_ctx_t *cx, const hs_plan_stage_t *st0, int32_t e0,
                              int32_t *gid)
{
  hs_lowered_t *out = cx->out;
  *gid = -1;
  bool spmd_stage = cx->spmd && cx->v == 1 && st0->n_replicas > 1;
  for (int32_t q = 0; spmd_stage && q < st0->n_replicas; q++)
    spmd_stage = st0->replicas[q].n_devices == 1;
  if (!spmd_stage)
    return HS_OK;
  hs_group_t *ng = hs_reallocarray(out->groups, (size_t)out->n_groups + 1, sizeof *ng);
  if (!ng)
    return HS_ENOMEM;
  out->groups = ng;
  *gid = out->n_groups++;
  hs_group_t *gr = &out->groups[*gid];
  memset(gr, 0, sizeof *gr);
  gr->n = st0->n_replicas;
  gr->tp = 1;
  gr->execs = hs_calloc((size_t)gr->n, sizeof *gr->execs);
  gr->devices = hs_calloc((size_t)gr->n, sizeof *gr->devices);
  gr->shares = hs_calloc((size_t)gr->n, sizeof *gr->shares);
  if (!gr->execs || !gr->devices || !gr->shares)
    return HS_ENOMEM;
  for (int32_t q = 0; q < gr->n; q++) {
    gr->execs[q] = e0 + q;
    gr->devices[q] = st0->replicas[q].devices[0];
    gr->shares[q] = st0->replicas[q].share;
  }
  return HS_OK;
}

/* Fills executor e: replica q of rank r of pipeline i in group gid, with
 * its per-(chunk, phase) arrays allocated and its schedule order made. */
static hs_status_t init_executor(lower_ctx_t *cx, int32_t e, int32_t i, int32_t r, int32_t q,
                                 int32_t gid)
{
  hs_lowered_t *out = cx->out;
  const hs_plan_pipeline_t *pl = &cx->plan->pipelines[i];
  int32_t v = cx->v, ranks = pl->n_stages / v;
  hs_exec_t *x = &out->execs[e];
  const hs_plan_replica_t *rp = &pl->stages[r].replicas[q];
  x->group = gid;
  x->cp_group = x->ep_group = -1;
  x->pipeline = i;
  x->rank = r;
  x->replica = q;
  x->v = v;
  x->devices = rp->devices;
  x->tp = rp->n_devices;
  x->gpu = hs_cluster_gpu(cx->c, rp->devices[0]);
  x->samples = rp->share * pl->microbatch_size;
  x->m = pl->n_microbatches;
  for (int32_t ch = 0; ch < v; ch++)
    out->stage_exec[i][(ch * ranks + r) * out->max_replicas[i] + q] = e;
  x->tmpl = hs_calloc((size_t)2 * v, sizeof *x->tmpl);
  x->out_first = hs_calloc((size_t)2 * v, sizeof(int32_t));
  x->out_count = hs_calloc((size_t)2 * v, sizeof(int32_t));
  x->in_count = hs_calloc((size_t)2 * v, sizeof(int32_t));
  x->n_items = 2 * x->m * v;
  x->order = hs_calloc((size_t)x->n_items, sizeof *x->order);
  x->zgroup = hs_calloc((size_t)v, sizeof *x->zgroup);
  if (!x->tmpl || !x->out_first || !x->out_count || !x->in_count || !x->order || !x->zgroup)
    return HS_ENOMEM;
  for (int32_t ch = 0; ch < v; ch++)
    x->zgroup[ch] = -1;
  hs_sched_params_t sp = {.p = ranks, .v = v, .m = x->m, .rank = r,
                          .warmup = pl->stages[r].warmup, .order = pl->stages[r].order};
  hs_schedule_find(cx->plan->schedule)->order(&sp, x->order);
  return HS_OK;
}

/* Placement of executors: one per (pipeline, rank, replica), rank = the
 * stage index within a chunk, SPMD groups made as their stages are met.
 * Numbered rank-major: every pipeline's rank 0, then every pipeline's rank
 * 1, ..., each stage's replicas consecutive. Data-parallel pipelines run in
 * lockstep, so the events of one instant are one rank of every pipeline:
 * numbered this way their executors' state (xrun_t, hs_exec_t and the
 * arrays allocated in this order) sits side by side instead of a pipeline's
 * length apart, which at 100,352 GPUs (TP 8, PP 16, DP 784) put every
 * event's executor on another page (bench_sim 53-57 -> 44-45 s there).
 * Reads: plan, cluster, cx->spmd. Guarantees: out->execs whole (devices,
 * GPU, samples, microbatches, schedule order; cp/ep/zero groups -1),
 * stage_exec maps every (pipeline, stage, replica), SPMD groups 0.. in
 * executor order. O(executors x microbatches x chunks + ranks x
 * pipelines). */
hs_status_t hs__lower_place_executors(lower_ctx_t *cx)
{
  hs_status_t st = alloc_executors(cx);
  if (st != HS_OK)
    return st;
  const hs_plan_t *plan = cx->plan;
  int32_t max_ranks = 0;
  for (int32_t i = 0; i < plan->n_pipelines; i++)
    max_ranks = HS_MAX(max_ranks, plan->pipelines[i].n_stages / cx->v);
  int32_t e = 0;
  for (int32_t r = 0; r < max_ranks; r++) {
    for (int32_t i = 0; i < plan->n_pipelines; i++) {
      const hs_plan_pipeline_t *pl = &plan->pipelines[i];
      if (r >= pl->n_stages / cx->v)
        continue;
      int32_t gid = -1;
      if ((st = spmd_group(cx, &pl->stages[r], e, &gid)) != HS_OK)
        return st;
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q++, e++)
        if ((st = init_executor(cx, e, i, r, q, gid)) != HS_OK)
          return st;
    }
  }
  return HS_OK;
}

/* Appends to out the pieces between replica qa of stage a = stages[k] and
 * replica qb of stage b = stages[k + 1] of pipeline i when their sample
 * intervals [a0, a1) and [b0, b1) overlap: activation forward, gradient
 * backward, each with its coupled path over min(tp_a, tp_b) sub-flows. */
static hs_status_t add_piece_pair(lower_ctx_t *cx, size_t *pieces_cap, int32_t i, int32_t k,
                                  int32_t qa, int32_t qb, double ov)
{
  hs_lowered_t *out = cx->out;
  const hs_plan_pipeline_t *pl = &cx->plan->pipelines[i];
  int32_t ranks = pl->n_stages / cx->v;
  const hs_plan_stage_t *a = &pl->stages[k], *b = &pl->stages[k + 1];
  double act = cx->m->ops[a->op_last - 1].out_bytes * pl->microbatch_size;
  for (int32_t dir = 0; dir < 2; dir++) {
    /* dir 0: forward activation a -> b; dir 1: gradient b -> a */
    const hs_plan_replica_t *src = dir ? &b->replicas[qb] : &a->replicas[qa];
    const hs_plan_replica_t *dst = dir ? &a->replicas[qa] : &b->replicas[qb];
    if (hs_reserve((void **)&out->pieces, pieces_cap, (size_t)out->n_pieces + 1,
                   sizeof *out->pieces) != HS_OK)
      return HS_ENOMEM;
    hs_piece_t *pc = &out->pieces[out->n_pieces++];
    memset(pc, 0, sizeof *pc);
    int32_t sk = dir ? k + 1 : k, dk = dir ? k : k + 1;
    pc->src = hs__exec_of(out, i, sk, dir ? qb : qa);
    pc->dst = hs__exec_of(out, i, dk, dir ? qa : qb);
    pc->dst_chunk = dk / ranks;
    pc->src_stage = sk;
    pc->phase = dir ? HS_PHASE_BWD : HS_PHASE_FWD;
    int32_t nsub = HS_MIN(src->n_devices, dst->n_devices);
    pc->total_bytes = act * ov;
    pc->bytes = pc->total_bytes / nsub;
    size_t hcap = 0;
    hs_time_t lat = 0;
    for (int32_t j = 0; j < nsub; j++) {
      hs_status_t st = add_path(cx->topo, src->devices[j], dst->devices[j], &pc->hops,
                                &pc->n_hops, &hcap, &lat);
      if (st != HS_OK)
        return st;
    }
    pc->latency_ns = lat;
    /* receiver waits for this piece before (dst chunk, phase) */
    out->execs[pc->dst].in_count[pc->dst_chunk * 2 + (dir ? HS_PHASE_BWD : HS_PHASE_FWD)]++;
  }
  return HS_OK;
}

/* Paths: pipeline pieces between adjacent stages, both directions.
 * Reads: placed executors, topology. Guarantees: out->pieces with hops and
 * latency, each receiver's in_count per (chunk, phase). O(stage pairs x
 * replica pairs x path length). */
hs_status_t hs__lower_pipeline_pieces(lower_ctx_t *cx)
{
  const hs_plan_t *plan = cx->plan;
  size_t pieces_cap = 0;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t k = 0; k + 1 < pl->n_stages; k++) {
      const hs_plan_stage_t *a = &pl->stages[k], *b = &pl->stages[k + 1];
      double ca = 0.0;
      for (int32_t qa = 0; qa < a->n_replicas; qa++) {
        double a0 = ca, a1 = ca + a->replicas[qa].share;
        ca = a1;
        double cb = 0.0;
        for (int32_t qb = 0; qb < b->n_replicas; qb++) {
          double b0 = cb, b1 = cb + b->replicas[qb].share;
          cb = b1;
          double ov = fmin(a1, b1) - fmax(a0, b0);
          if (ov <= 1e-12)
            continue;
          hs_status_t st = add_piece_pair(cx, &pieces_cap, i, k, qa, qb, ov);
          if (st != HS_OK)
            return st;
        }
      }
    }
  }
  return HS_OK;
}

/* Groups pieces by (sender, chunk, phase) into out_list.
 * Reads: out->pieces, placed executors. Guarantees: every executor's
 * out_first / out_count per (chunk, phase) index its pieces in out_list,
 * in piece order. O(executors x chunks + pieces). */
hs_status_t hs__lower_group_pieces(lower_ctx_t *cx)
{
  hs_status_t st = HS_OK;
  hs_lowered_t *out = cx->out;
  int32_t v = cx->v;
  int32_t *src_first = NULL, *by_src = NULL;
  out->out_list = hs_calloc((size_t)out->n_pieces + 1, sizeof(int32_t));
  if (!out->out_list)
    HS_FAIL(HS_ENOMEM);
  /* pieces by sender first (a stable counting sort: by_src[src_first[x] ..
   * src_first[x + 1]) in piece order), so the grouping below scans each
   * sender's own pieces, not all of them: O(pieces) where it was O(execs x
   * pieces), the square of the GPUs (issue 35) */
  src_first = hs_calloc((size_t)out->n_execs + 1, sizeof *src_first);
  by_src = hs_calloc((size_t)out->n_pieces + 1, sizeof *by_src);
  if (!src_first || !by_src)
    HS_FAIL(HS_ENOMEM);
  for (int32_t p = 0; p < out->n_pieces; p++)
    src_first[out->pieces[p].src + 1]++;
  for (int32_t x = 0; x < out->n_execs; x++)
    src_first[x + 1] += src_first[x];
  for (int32_t p = 0; p < out->n_pieces; p++) /* stable: each run in piece order */
    by_src[src_first[out->pieces[p].src]++] = p;
  for (int32_t x = out->n_execs; x > 0; x--) /* the fill moved each start to its run's end */
    src_first[x] = src_first[x - 1];
  src_first[0] = 0;
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    const hs_plan_pipeline_t *pl = &cx->plan->pipelines[ex->pipeline];
    int32_t ranks = pl->n_stages / v;
    for (int32_t ch = 0; ch < v; ch++)
      for (int32_t ph = 0; ph < 2; ph++) {
        ex->out_first[ch * 2 + ph] = out->n_out_list;
        int32_t stage = ch * ranks + ex->rank;
        for (int32_t k = src_first[x]; k < src_first[x + 1]; k++) {
          const hs_piece_t *pc = &out->pieces[by_src[k]];
          if (pc->src_stage == stage && pc->phase == ph)
            out->out_list[out->n_out_list++] = by_src[k];
        }
        ex->out_count[ch * 2 + ph] = out->n_out_list - ex->out_first[ch * 2 + ph];
      }
  }
cleanup:
  free(src_first);
  free(by_src);
  return st;
}
