/*
 * lower.c - lowers a validated plan to executors, segment templates, p2p
 * pieces and gradient buckets (see lower.h).
 *
 * Templates follow Megatron-LM: per transformer block 2 forward all-reduces
 * (after the row-parallel out projection and fc2) and 2 backward all-reduces
 * (input gradients of the column-parallel qkv and fc1); MoE expert ops are
 * wrapped in all-to-alls over the TP (expert-parallel) group. Recomputation
 * prepends the recomputed forward to the backward template (full: the whole
 * stage forward with its all-reduces; selective: the attention cores).
 *
 * Pipeline transfers use Megatron's scatter/gather: min(tp_a, tp_b) ranks each
 * send 1/min of the activation, as one coupled flow. Between stages whose
 * replicas split each microbatch differently, replica a sends the samples it
 * shares with replica b (overlap of their cumulative share intervals).
 *
 * Gradient buckets: the op sequence is cut wherever the set of TP groups
 * holding an op changes (layer-wise sync across asymmetric pipelines), then
 * into buckets of at most plan->bucket_bytes; TP rank j of every holder
 * all-reduces its shard. Buckets are issued in descending op order by every
 * holder, which keeps the collective order consistent (no deadlock).
 */
#include "lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OPT_BYTES_PER_PARAM 32.0 /* Adam step: read w, g, m, v (fp32) and write w, m, v, w16 */

void hs__lowered_destroy(hs_lowered_t *l)
{
  if (!l)
    return;
  for (int32_t e = 0; e < l->n_execs; e++) {
    hs_exec_t *x = &l->execs[e];
    if (x->tmpl)
      for (int32_t k = 0; k < 2 * x->v; k++)
        free(x->tmpl[k].segs);
    free(x->tmpl);
    if (x->tmpl_final)
      for (int32_t k = 0; k < x->v; k++)
        free(x->tmpl_final[k].segs);
    free(x->tmpl_final);
    free(x->order);
    free(x->out_first);
    free(x->out_count);
    free(x->in_count);
    free(x->buckets);
    free(x->zgroup);
  }
  free(l->execs);
  for (int32_t p = 0; p < l->n_pieces; p++)
    free(l->pieces[p].hops);
  free(l->pieces);
  free(l->out_list);
  for (int32_t b = 0; b < l->n_buckets; b++) {
    free(l->buckets[b].holders);
    free(l->buckets[b].devices);
  }
  free(l->buckets);
  for (int32_t g = 0; g < l->n_groups; g++) {
    free(l->groups[g].execs);
    free(l->groups[g].devices);
    free(l->groups[g].shares);
  }
  free(l->groups);
  if (l->stage_exec) {
    /* one array per pipeline */
    for (int32_t i = 0; l->max_replicas && l->stage_exec[i]; i++)
      free(l->stage_exec[i]);
  }
  free(l->stage_exec);
  free(l->max_replicas);
  memset(l, 0, sizeof *l);
}

/* ---- templates ------------------------------------------------------------- */

typedef struct tbuild {
  hs_seg_t *segs;
  size_t n, cap;
  double acc_s, acc_flops;
  int32_t lo, hi;
  int32_t glo;             /* lowest op with its backward in the open segment */
  double last_s;           /* seconds of the last op added (the GEMM a TP collective overlaps) */
  const hs_practice_t *pr; /* kernel set and sequence parallelism of the plan */
  int32_t next_group;      /* group of the next cut's collective (-1: TP group) */
  double side_bytes;       /* side collective of the next segment (0: none) */
  hs_coll_op_t side_op;
  int32_t side_group;
  hs_host_cursor_t host;   /* the framework's host queue of this phase (sim/host.c) */
} tbuild_t;

/* The executor's groups for one template: ring attention over its
 * context-parallel group, MoE all-to-alls over its expert-parallel group,
 * ZeRO-3 parameter gathers over its DP peers. -1 / 0 = none. */
typedef struct gctx {
  int32_t cp_group, cp;
  int32_t ep_group, ep;
  int32_t zgroup;
  double weight_bytes;     /* bytes per gathered parameter */
  bool bwd_gathers;        /* ZeRO-3: gathered again for backward (not SHARD_GRAD_OP) */
  double mb_samples;       /* the CP group's samples per microbatch (the executor's x cp) */
} gctx_t;

/* HAP's per-op SPMD exchanges (plan.sharding), resolved for lowering: the
 * collective converting op k's input before it runs, the one exchanging its
 * output after it (partial sums: all-reduce or reduce-scatter), and whether
 * its parameters are split over the group (feature/head/expert/vocab rules)
 * rather than replicated (batch rules). */
typedef struct spmd_op {
  hs_coll_op_t before, after;
  bool col_split;          /* column-split GEMM: input gradient all-reduced in backward */
  bool sharded_params;
} spmd_op_t;

/* Stage-wide context of a template: NULL spmd or group < 0 = none. */
typedef struct spmd_ctx {
  const spmd_op_t *ops;
  int32_t group;
  int32_t n;               /* group members */
  double mb_samples;       /* the whole microbatch: SPMD tensors are split, not the batch */
} spmd_ctx_t;

static hs_status_t tb_cut(tbuild_t *b, double coll_bytes, hs_coll_op_t op)
{
  if (b->acc_s == 0.0 && coll_bytes == 0.0 && b->n > 0 && !(b->side_bytes > 0.0))
    return HS_OK;
  if (hs_reserve((void **)&b->segs, &b->cap, b->n + 1, sizeof *b->segs) != HS_OK)
    return HS_ENOMEM;
  hs_seg_t *s = &b->segs[b->n++];
  if (coll_bytes > 0.0 && b->pr)
    hs_host_collective(&b->host, &b->pr->framework);
  s->compute_ns = hs_time_from_s(b->acc_s);
  s->compute_flops = b->acc_flops;
  s->coll_bytes = coll_bytes;
  s->coll_op = op;
  s->group = coll_bytes > 0.0 ? b->next_group : -1;
  b->next_group = -1;
  s->op_lo = b->lo;
  s->op_hi = b->hi;
  s->grad_lo = b->glo;
  s->ov_ns = 0;
  s->side_bytes = b->side_bytes;
  s->side_op = b->side_op;
  s->side_group = b->side_bytes > 0.0 ? b->side_group : -1;
  b->side_bytes = 0.0;
  if (coll_bytes > 0.0 && s->group < 0 && op != HS_COLL_ALLTOALL && b->pr &&
      b->pr->tp_comm_overlap && b->last_s > 0.0)
    s->ov_ns = HS_MIN(hs_time_from_s(b->last_s), s->compute_ns);
  b->last_s = 0.0;
  b->acc_s = 0.0;
  b->acc_flops = 0.0;
  b->lo = INT32_MAX;
  b->hi = -1;
  b->glo = INT32_MAX;
  return HS_OK;
}

/* Adds `frac` of op idx's compute (ring attention splits the attention
 * core around its KV exchange; 1 otherwise). */
static void tb_add_frac(tbuild_t *b, const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op,
                        int32_t idx, double samples, int32_t tp, hs_phase_t ph, double frac)
{
  hs_op_t tmp;
  op = hs_practice_op(b->pr, op, tp, &tmp);
  b->last_s = frac * hs_compute_op_s(g, dt, op, samples, tp, ph);
  /* the GPU time the op occupies, waits for the host's issues included */
  b->acc_s += hs_host_op_s(&b->host, b->pr, op, ph, b->last_s);
  double div = (op->tp_split == HS_TP_REPLICATE || tp <= 1) ? 1.0 : tp;
  b->acc_flops += frac * (ph == HS_PHASE_FWD ? op->fwd_flops : op->bwd_flops) * samples / div;
  b->lo = HS_MIN(b->lo, idx);
  b->hi = HS_MAX(b->hi, idx);
  if (ph == HS_PHASE_BWD)
    b->glo = HS_MIN(b->glo, idx);
}

static void tb_add(tbuild_t *b, const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, int32_t idx,
                   double samples, int32_t tp, hs_phase_t ph)
{
  tb_add_frac(b, g, dt, op, idx, samples, tp, ph, 1.0);
}

/* Ends the open segment (if it has compute or a pending side collective). */
static hs_status_t tb_flush(tbuild_t *b)
{
  if (b->acc_s > 0.0 || b->side_bytes > 0.0)
    return tb_cut(b, 0.0, HS_COLL_ALLREDUCE);
  return HS_OK;
}

/* A blocking collective over group `group` after the compute so far. */
static hs_status_t tb_group_coll(tbuild_t *b, int32_t group, double bytes, hs_coll_op_t op)
{
  if (!(bytes > 0.0))
    return HS_OK;
  b->next_group = group;
  return tb_cut(b, bytes, op);
}

/* The next segment starts a side collective (see hs_seg_t). */
static hs_status_t tb_side(tbuild_t *b, int32_t group, double bytes, hs_coll_op_t op)
{
  if (tb_flush(b) != HS_OK)
    return HS_ENOMEM;
  if (bytes > 0.0) {
    b->side_bytes = bytes;
    b->side_op = op;
    b->side_group = group;
  }
  return HS_OK;
}

/* ZeRO-3 gather unit: the maximal run of ops of one transformer block (or
 * of the ops outside blocks) around op i within [first, last). */
static void unit_of(const hs_model_t *m, int32_t i, int32_t first, int32_t last, int32_t *lo,
                    int32_t *hi)
{
  int32_t a = i, z = i + 1;
  while (a > first && m->ops[a - 1].layer == m->ops[i].layer)
    a--;
  while (z < last && m->ops[z].layer == m->ops[i].layer)
    z++;
  *lo = a;
  *hi = z;
}

/* Bytes one TP rank gathers for ops [lo, hi): its shard of their weights. */
static double unit_bytes(const hs_model_t *m, int32_t lo, int32_t hi, int32_t tp, double wbytes)
{
  double p = 0.0;
  for (int32_t i = lo; i < hi; i++)
    p += (m->ops[i].tp_split == HS_TP_REPLICATE || tp <= 1) ? m->ops[i].params
                                                           : m->ops[i].params / tp;
  return p * wbytes;
}

/* A stage-wide collective after the compute accumulated so far. */
static hs_status_t tb_cut_group(tbuild_t *b, const spmd_ctx_t *sx, double bytes, hs_coll_op_t op)
{
  if (!(bytes > 0.0) || op == HS_COLL__COUNT)
    return HS_OK;
  b->next_group = sx->group;
  return tb_cut(b, bytes, op);
}

/* Gradient-side dual of an exchange: what was gathered is reduce-scattered
 * and vice versa; an all-to-all is undone by one; an all-reduce of partial
 * sums needs nothing in backward (the output gradient is replicated). */
static hs_coll_op_t spmd_dual(hs_coll_op_t op)
{
  switch (op) {
  case HS_COLL_ALLGATHER:
  case HS_COLL_PADDED_ALLGATHER:
  case HS_COLL_GROUPED_BROADCAST:
  case HS_COLL_BROADCAST: return HS_COLL_REDUCE_SCATTER;
  case HS_COLL_REDUCE_SCATTER: return HS_COLL_ALLGATHER;
  case HS_COLL_ALLTOALL: return HS_COLL_ALLTOALL;
  default: return HS_COLL__COUNT;
  }
}

static bool spmd_on(const spmd_ctx_t *sx)
{
  return sx && sx->ops && sx->group >= 0;
}

/* bytes of the tensor entering op i for the whole microbatch */
static double spmd_in_bytes(const hs_model_t *m, int32_t i, const spmd_ctx_t *sx)
{
  return i > 0 ? m->ops[i - 1].out_bytes * sx->mb_samples : 0.0;
}

static double moe_a2a_bytes(const hs_op_t *op, double samples);

/* bytes of op's output exchange for the whole microbatch: an expert
 * all-to-all sends each rank's 1/n of the routed tokens (topk copies) */
static double spmd_out_bytes(const hs_op_t *op, const spmd_op_t *so, const spmd_ctx_t *sx)
{
  if (so->after == HS_COLL_ALLTOALL)
    return op->out_bytes * (op->topk > 0 ? op->topk : 1) * sx->mb_samples / sx->n;
  return op->out_bytes * sx->mb_samples;
}

static double moe_a2a_bytes(const hs_op_t *op, double samples)
{
  return op->out_bytes * (op->topk > 0 ? op->topk : 1) * samples;
}

/* Forward ops [first, last) into b. */
static hs_status_t forward_segments(tbuild_t *b, const hs_model_t *m, const hs_gpu_t *g,
                                    hs_dtype_t dt, int32_t first, int32_t last, double samples,
                                    int32_t tp, const spmd_ctx_t *sx, const gctx_t *gx)
{
  for (int32_t i = first; i < last; i++) {
    const hs_op_t *op = &m->ops[i];
    if (gx && gx->zgroup >= 0 && (i == first || m->ops[i - 1].layer != op->layer)) {
      /* ZeRO-3 / FSDP: the first unit's weights are gathered before it
       * runs; each later unit's while the one before it computes (FSDP
       * forward prefetch, DeepSpeed's prefetch bucket) */
      int32_t lo, hi;
      unit_of(m, i, first, last, &lo, &hi);
      if (i != first && tb_flush(b) != HS_OK) /* the unit before ends with its prefetch */
        return HS_ENOMEM;
      if (i == first &&
          tb_group_coll(b, gx->zgroup, unit_bytes(m, lo, hi, tp, gx->weight_bytes),
                        HS_COLL_ALLGATHER) != HS_OK)
        return HS_ENOMEM;
      if (hi < last) {
        int32_t lo2, hi2;
        unit_of(m, hi, first, last, &lo2, &hi2);
        if (tb_side(b, gx->zgroup, unit_bytes(m, lo2, hi2, tp, gx->weight_bytes),
                    HS_COLL_ALLGATHER) != HS_OK)
          return HS_ENOMEM;
      }
    }
    if (spmd_on(sx)) {
      const spmd_op_t *so = &sx->ops[i];
      double in = spmd_in_bytes(m, i, sx);
      if (so->before == HS_COLL_ALLTOALL)
        in = op->kind == HS_OP_MOE_EXPERT ? spmd_out_bytes(op, so, sx) : in / sx->n;
      if (tb_cut_group(b, sx, in, so->before) != HS_OK)
        return HS_ENOMEM;
      tb_add(b, g, dt, op, i, samples, tp, HS_PHASE_FWD);
      if (tb_cut_group(b, sx, spmd_out_bytes(op, so, sx), so->after) != HS_OK)
        return HS_ENOMEM;
      continue;
    }
    if (gx && gx->cp > 1 && op->kind == HS_OP_ATTENTION) {
      /* ring attention: the KV blocks of the other C-1 ranks arrive while
       * the attention runs on the blocks already there, so (C-1)/C of it
       * overlaps the exchange and the last block's 1/C follows it */
      double c = (double)gx->cp;
      if (tb_side(b, gx->cp_group, hs_model_kv_sample_bytes(m, op, tp) * gx->mb_samples,
                  HS_COLL_ALLGATHER) != HS_OK)
        return HS_ENOMEM;
      tb_add_frac(b, g, dt, op, i, samples, tp, HS_PHASE_FWD, (c - 1.0) / c);
      if (tb_flush(b) != HS_OK)
        return HS_ENOMEM;
      tb_add_frac(b, g, dt, op, i, samples, tp, HS_PHASE_FWD, 1.0 / c);
      continue;
    }
    bool ep = gx && gx->ep > 1 && op->kind == HS_OP_MOE_EXPERT;
    if (ep) {
      /* expert parallelism: dispatch to and combine from the experts of
       * the other E-1 ranks; each TP rank carries 1/tp of the tokens */
      double a2a = moe_a2a_bytes(op, samples) / (tp > 1 ? tp : 1);
      if (tb_group_coll(b, gx->ep_group, a2a, HS_COLL_ALLTOALL) != HS_OK)
        return HS_ENOMEM;
      tb_add(b, g, dt, op, i, samples, tp, HS_PHASE_FWD);
      if (tb_group_coll(b, gx->ep_group, a2a, HS_COLL_ALLTOALL) != HS_OK)
        return HS_ENOMEM;
      continue;
    }
    bool moe = op->kind == HS_OP_MOE_EXPERT && tp > 1;
    bool sp = tp > 1 && b->pr->sequence_parallel;
    if (moe && tb_cut(b, moe_a2a_bytes(op, samples), HS_COLL_ALLTOALL) != HS_OK)
      return HS_ENOMEM;
    /* sequence parallelism: a column-parallel GEMM all-gathers its input
     * from the sequence-parallel region (Megatron's g) */
    bool ov = b->pr->tp_comm_overlap;
    if (sp && !ov && op->tp_allreduce_bwd && i > 0 &&
        tb_cut(b, m->ops[i - 1].out_bytes * samples, HS_COLL_ALLGATHER) != HS_OK)
      return HS_ENOMEM;
    tb_add(b, g, dt, op, i, samples, tp, HS_PHASE_FWD);
    /* overlapped: the gather is pipelined with the GEMM that consumes it
     * (userbuffers ring exchange), so it closes that GEMM's segment */
    if (sp && ov && op->tp_allreduce_bwd && i > 0 &&
        tb_cut(b, m->ops[i - 1].out_bytes * samples, HS_COLL_ALLGATHER) != HS_OK)
      return HS_ENOMEM;
    if (moe && tb_cut(b, moe_a2a_bytes(op, samples), HS_COLL_ALLTOALL) != HS_OK)
      return HS_ENOMEM;
    if (tp > 1 && op->tp_allreduce_fwd &&
        tb_cut(b, op->out_bytes * samples, sp ? HS_COLL_REDUCE_SCATTER : HS_COLL_ALLREDUCE) != HS_OK)
      return HS_ENOMEM;
  }
  return HS_OK;
}

/* cut_after (backward only, may be NULL): ops after whose backward the
 * segment ends even without a collective (a gradient bucket is ready). */
static hs_status_t build_template(const hs_model_t *m, const hs_plan_stage_t *stg,
                                  const hs_gpu_t *g, hs_dtype_t dt, double samples, int32_t tp,
                                  hs_phase_t ph, const spmd_ctx_t *sx, const uint8_t *cut_after,
                                  const hs_practice_t *pr, const gctx_t *gx, hs_tmpl_t *out)
{
  tbuild_t b = {0};
  b.pr = pr;
  hs_host_begin(&b.host, &pr->framework);
  b.side_group = -1;
  b.lo = INT32_MAX;
  b.hi = -1;
  b.glo = INT32_MAX;
  b.next_group = -1;
  hs_status_t st = HS_OK;
  /* the recomputed forward runs on the weights its block's backward
   * gathers (FSDP checkpointed blocks): no gathers of its own */
  gctx_t gx_rc = {-1, 1, -1, 1, -1, 0.0, false, 0.0};
  if (gx) {
    gx_rc = *gx;
    gx_rc.zgroup = -1;
  }
  if (ph == HS_PHASE_FWD) {
    HS_CHECK(forward_segments(&b, m, g, dt, stg->op_first, stg->op_last, samples, tp, sx, gx));
  } else {
    if (stg->recompute == HS_RECOMPUTE_FULL) {
      HS_CHECK(forward_segments(&b, m, g, dt, stg->op_first, stg->op_last, samples, tp, sx,
                                &gx_rc));
    } else if (stg->recompute == HS_RECOMPUTE_SELECTIVE) {
      for (int32_t i = stg->op_first; i < stg->op_last; i++) {
        hs_op_t tmp;
        if (hs_practice_recomputes_selective(hs_practice_op(pr, &m->ops[i], tp, &tmp)))
          tb_add(&b, g, dt, &m->ops[i], i, samples, tp, HS_PHASE_FWD);
      }
    }
    for (int32_t i = stg->op_last - 1; i >= stg->op_first; i--) {
      const hs_op_t *op = &m->ops[i];
      if (gx && gx->zgroup >= 0 && gx->bwd_gathers &&
          (i == stg->op_last - 1 || m->ops[i + 1].layer != op->layer)) {
        /* ZeRO-3 / FSDP backward: the weights are gathered again, the
         * last unit's before the backward, each earlier one's while the
         * unit after it runs (FSDP BACKWARD_PRE prefetch); BACKWARD_POST
         * issues it only once the unit after it has its gradients, so
         * every unit's gather runs before it, not overlapped */
        int32_t lo, hi;
        bool post = pr->fsdp_backward_post;
        unit_of(m, i, stg->op_first, stg->op_last, &lo, &hi);
        if (i != stg->op_last - 1 && tb_flush(&b) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        if ((post || i == stg->op_last - 1) &&
            tb_group_coll(&b, gx->zgroup, unit_bytes(m, lo, hi, tp, gx->weight_bytes),
                          HS_COLL_ALLGATHER) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        if (!post && lo > stg->op_first) {
          int32_t lo2, hi2;
          unit_of(m, lo - 1, stg->op_first, stg->op_last, &lo2, &hi2);
          if (tb_side(&b, gx->zgroup, unit_bytes(m, lo2, hi2, tp, gx->weight_bytes),
                      HS_COLL_ALLGATHER) != HS_OK)
            HS_FAIL(HS_ENOMEM);
        }
      }
      if (gx && gx->cp > 1 && op->kind == HS_OP_ATTENTION) {
        /* ring attention backward: K, V and their gradients travel the
         * ring (twice the forward's bytes) while the blocks' backward runs */
        double c = (double)gx->cp;
        if (tb_side(&b, gx->cp_group, 2.0 * hs_model_kv_sample_bytes(m, op, tp) * gx->mb_samples,
                    HS_COLL_ALLGATHER) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        tb_add_frac(&b, g, dt, op, i, samples, tp, HS_PHASE_BWD, (c - 1.0) / c);
        if (tb_flush(&b) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        tb_add_frac(&b, g, dt, op, i, samples, tp, HS_PHASE_BWD, 1.0 / c);
        if (cut_after && cut_after[i] && i > stg->op_first && tb_cut(&b, 0.0, HS_COLL_ALLREDUCE) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        continue;
      }
      if (gx && gx->ep > 1 && op->kind == HS_OP_MOE_EXPERT) {
        double a2a = moe_a2a_bytes(op, samples) / (tp > 1 ? tp : 1);
        if (tb_group_coll(&b, gx->ep_group, a2a, HS_COLL_ALLTOALL) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        tb_add(&b, g, dt, op, i, samples, tp, HS_PHASE_BWD);
        if (tb_group_coll(&b, gx->ep_group, a2a, HS_COLL_ALLTOALL) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        if (cut_after && cut_after[i] && i > stg->op_first && tb_cut(&b, 0.0, HS_COLL_ALLREDUCE) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        continue;
      }
      if (spmd_on(sx)) {
        /* mirror of the forward: the output gradient's exchange, the
         * backward compute, then the input gradient's exchange */
        const spmd_op_t *so = &sx->ops[i];
        if (tb_cut_group(&b, sx, spmd_out_bytes(op, so, sx), spmd_dual(so->after)) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        tb_add(&b, g, dt, op, i, samples, tp, HS_PHASE_BWD);
        double in = spmd_in_bytes(m, i, sx);
        if (so->col_split && tb_cut_group(&b, sx, in, HS_COLL_ALLREDUCE) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        hs_coll_op_t d = spmd_dual(so->before);
        if (d == HS_COLL_ALLTOALL)
          in = op->kind == HS_OP_MOE_EXPERT ? spmd_out_bytes(op, so, sx) : in / sx->n;
        if (tb_cut_group(&b, sx, in, d) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        if (cut_after && cut_after[i] && i > stg->op_first && tb_cut(&b, 0.0, HS_COLL_ALLREDUCE) != HS_OK)
          HS_FAIL(HS_ENOMEM);
        continue;
      }
      bool moe = op->kind == HS_OP_MOE_EXPERT && tp > 1;
      bool sp = tp > 1 && pr->sequence_parallel;
      if (moe && tb_cut(&b, moe_a2a_bytes(op, samples), HS_COLL_ALLTOALL) != HS_OK)
        HS_FAIL(HS_ENOMEM);
      /* sequence parallelism: a row-parallel GEMM's output gradient is
       * all-gathered (the backward of its reduce-scatter) */
      bool ov = pr->tp_comm_overlap;
      if (sp && !ov && op->tp_allreduce_fwd &&
          tb_cut(&b, op->out_bytes * samples, HS_COLL_ALLGATHER) != HS_OK)
        HS_FAIL(HS_ENOMEM);
      tb_add(&b, g, dt, op, i, samples, tp, HS_PHASE_BWD);
      if (sp && ov && op->tp_allreduce_fwd &&
          tb_cut(&b, op->out_bytes * samples, HS_COLL_ALLGATHER) != HS_OK)
        HS_FAIL(HS_ENOMEM);
      if (moe && tb_cut(&b, moe_a2a_bytes(op, samples), HS_COLL_ALLTOALL) != HS_OK)
        HS_FAIL(HS_ENOMEM);
      if (tp > 1 && op->tp_allreduce_bwd && i > 0 &&
          tb_cut(&b, m->ops[i - 1].out_bytes * samples,
                 sp ? HS_COLL_REDUCE_SCATTER : HS_COLL_ALLREDUCE) != HS_OK)
        HS_FAIL(HS_ENOMEM);
      if (cut_after && cut_after[i] && i > stg->op_first && tb_cut(&b, 0.0, HS_COLL_ALLREDUCE) != HS_OK)
        HS_FAIL(HS_ENOMEM);
    }
  }
  if (b.acc_s > 0.0 || b.n == 0 || b.side_bytes > 0.0)
    if (tb_cut(&b, 0.0, HS_COLL_ALLREDUCE) != HS_OK)
      HS_FAIL(HS_ENOMEM);
  out->segs = b.segs;
  out->n = (int32_t)b.n;
  out->compute_ns = 0;
  out->coll_bytes = 0;
  for (int32_t k = 0; k < out->n; k++) {
    out->compute_ns += out->segs[k].compute_ns;
    out->coll_bytes += out->segs[k].coll_bytes;
  }
  return HS_OK;
cleanup:
  free(b.segs);
  return st;
}

/* ---- coupled hops ------------------------------------------------------------- */

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

/* ---- lowering ---------------------------------------------------------------- */

static int32_t exec_of(const hs_lowered_t *l, int32_t pipeline, int32_t stage, int32_t replica)
{
  return l->stage_exec[pipeline][stage * l->max_replicas[pipeline] + replica];
}

typedef struct holder_list {
  int32_t *ids; /* executors holding the op, ascending */
  int32_t n, cap;
  bool tied_copy; /* set by mark_tied_copies once the lists are whole */
} holder_list_t;

/* Appends executor x (ids are appended in increasing order, so the list
 * stays sorted); capacity doubles, so n appends cost O(n). */
static hs_status_t holders_add(holder_list_t *h, int32_t x)
{
  if (h->n == h->cap) {
    int32_t cap = h->cap ? 2 * h->cap : 4;
    int32_t *ni = hs_reallocarray(h->ids, (size_t)cap, sizeof(int32_t));
    if (!ni)
      return HS_ENOMEM;
    h->ids = ni;
    h->cap = cap;
  }
  h->ids[h->n++] = x;
  return HS_OK;
}

/* Whether two sorted holder lists share an executor: one merge pass. */
static bool holders_meet(const holder_list_t *a, const holder_list_t *b)
{
  int32_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    if (a->ids[i] == b->ids[j])
      return true;
    if (a->ids[i] < b->ids[j])
      i++;
    else
      j++;
  }
  return false;
}

/* Marks every op that shares weights with another op (the LM head's tied
 * word embedding) and whose holders hold none of that op: every holder
 * keeps a copy (Megatron-LM's layout when pipeline stages split them).
 * O(holders) per tied op; until 2026-12-02 each query rescanned the lists,
 * O(holders^2) per query, and the queries ran per executor, so an
 * interleaved plan with dp 32,768 took minutes (issue 35). */
static void mark_tied_copies(const hs_model_t *m, holder_list_t *holders)
{
  for (int32_t op = 0; op < (int32_t)m->n_ops; op++) {
    const hs_op_t *o = &m->ops[op];
    holders[op].tied_copy = o->tied_params > 0.0 && o->tied_op >= 0 &&
                            o->tied_op < (int32_t)m->n_ops && o->tied_op != op &&
                            holders[op].n > 0 && !holders_meet(&holders[op], &holders[o->tied_op]);
  }
}


static hs_status_t add_bucket(hs_lowered_t *out, size_t *cap, int32_t op_first, int32_t op_last,
                              double bytes, int32_t tp, int32_t n_holders, hs_bucket_t **bk)
{
  if (hs_reserve((void **)&out->buckets, cap, (size_t)out->n_buckets + 1, sizeof *out->buckets) !=
      HS_OK)
    return HS_ENOMEM;
  hs_bucket_t *b = &out->buckets[out->n_buckets++];
  memset(b, 0, sizeof *b);
  b->op_first = op_first;
  b->op_last = op_last;
  b->bytes = bytes;
  b->op = HS_COLL_ALLREDUCE;
  b->tp = tp;
  b->n_holders = n_holders;
  b->holders = hs_calloc((size_t)n_holders, sizeof(int32_t));
  b->devices = hs_calloc((size_t)n_holders * (size_t)tp, sizeof(int32_t));
  *bk = b;
  return b->holders && b->devices ? HS_OK : HS_ENOMEM;
}

/* A new group of n executors (their TP groups of equal degree); returns its id or -1. */
static int32_t add_group(hs_lowered_t *out, const int32_t *execs, int32_t n)
{
  hs_group_t *ng = hs_reallocarray(out->groups, (size_t)out->n_groups + 1, sizeof *ng);
  if (!ng)
    return -1;
  out->groups = ng;
  hs_group_t *gr = &out->groups[out->n_groups];
  memset(gr, 0, sizeof *gr);
  int32_t tp = out->execs[execs[0]].tp;
  gr->execs = hs_calloc((size_t)n, sizeof *gr->execs);
  gr->devices = hs_calloc((size_t)n * (size_t)tp, sizeof *gr->devices);
  if (!gr->execs || !gr->devices) {
    free(gr->execs);
    free(gr->devices);
    return -1;
  }
  gr->n = n;
  gr->tp = tp;
  for (int32_t k = 0; k < n; k++) {
    gr->execs[k] = execs[k];
    for (int32_t j = 0; j < tp; j++)
      gr->devices[j * n + k] = out->execs[execs[k]].devices[j];
  }
  return out->n_groups++;
}

/* The op range of executor x's chunk ch. */
static const hs_plan_stage_t *exec_stage(const hs_plan_t *plan, const hs_exec_t *x, int32_t ch)
{
  const hs_plan_pipeline_t *pl = &plan->pipelines[x->pipeline];
  return &pl->stages[ch * (pl->n_stages / x->v) + x->rank];
}

/* Parameters of op (in stage chunk stg) that executor ex holds: its TP
 * split, its SPMD slice, or its 1/E of the experts; tied copies apart. */
static double op_params_held(const hs_model_t *m, const hs_plan_stage_t *stg, const hs_exec_t *ex,
                             const spmd_op_t *spmd, int32_t EP, int32_t op)
{
  double div = (m->ops[op].tp_split == HS_TP_REPLICATE) ? 1.0 : ex->tp;
  if (ex->group >= 0 && spmd[op].sharded_params)
    return m->ops[op].params * stg->replicas[ex->replica].share;
  if (EP > 1 && m->ops[op].kind == HS_OP_MOE_EXPERT)
    return m->ops[op].params / div / EP;
  return m->ops[op].params / div;
}

/* Parameters executor ex holds of stage chunk stg, counted as
 * params_per_device counts them (op_params_held plus tied copies): what its
 * gradient accumulation pass reads. */
static double chunk_params(const hs_model_t *m, const hs_plan_stage_t *stg, const hs_exec_t *ex,
                           const spmd_op_t *spmd, const holder_list_t *holders, int32_t EP)
{
  double p = 0.0;
  for (int32_t op = stg->op_first; op < stg->op_last; op++) {
    p += op_params_held(m, stg, ex, spmd, EP, op);
    if (holders[op].tied_copy)
      p += m->ops[op].tied_params / ((m->ops[op].tp_split == HS_TP_REPLICATE) ? 1.0 : ex->tp);
  }
  return p;
}

hs_status_t hs__lower(const hs_model_t *m, const hs_cluster_t *c, const hs_topology_t *topo,
                      const hs_plan_t *plan, hs_lowered_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(out, 0, sizeof *out);
  const hs_schedule_t *sc = hs_schedule_find(plan->schedule);
  int32_t v = plan->chunks > 0 ? plan->chunks : 1;
  size_t pieces_cap = 0, out_cap = 0, buckets_cap = 0;
  holder_list_t *holders = NULL;
  int32_t *src_first = NULL, *by_src = NULL; /* pieces by sender (out_list grouping) */
  int32_t *tmp = NULL;
  uint8_t *cutmark = NULL;
  spmd_op_t *spmd = NULL;
  int32_t *members = NULL, *zids = NULL, n_zids = 0;
  int32_t CP = plan->practice.context_parallel > 1 ? plan->practice.context_parallel : 1;
  int32_t EP = plan->practice.expert_parallel > 1 ? plan->practice.expert_parallel : 1;
  /* per-block gathers: ZeRO-3, and ZeRO-2 run as FSDP SHARD_GRAD_OP
   * (forward gathers only, gradients reduce-scattered) */
  bool zero3 = (hs_plan_zero_stage(plan) >= 3 ||
                (hs_plan_zero_stage(plan) == 2 && plan->practice.fsdp_shard_grad_op)) &&
               plan->n_shards == 0;

  /* SPMD exchanges of HAP plans (plan.sharding) */
  if (plan->n_shards > 0) {
    spmd = hs_calloc(m->n_ops, sizeof *spmd);
    if (!spmd)
      HS_FAIL(HS_ENOMEM);
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
  }

  /* Executors: one per (pipeline, rank, replica). */
  int32_t n_execs = 0;
  out->stage_exec = hs_calloc((size_t)plan->n_pipelines + 1, sizeof *out->stage_exec);
  out->max_replicas = hs_calloc((size_t)plan->n_pipelines, sizeof *out->max_replicas);
  if (!out->stage_exec || !out->max_replicas)
    HS_FAIL(HS_ENOMEM);
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    int32_t mr = 0;
    for (int32_t s = 0; s < pl->n_stages; s++)
      mr = HS_MAX(mr, pl->stages[s].n_replicas);
    out->max_replicas[i] = mr;
    out->stage_exec[i] = hs_calloc((size_t)pl->n_stages * (size_t)mr, sizeof(int32_t));
    if (!out->stage_exec[i])
      HS_FAIL(HS_ENOMEM);
    int32_t ranks = pl->n_stages / v;
    for (int32_t r = 0; r < ranks; r++)
      n_execs += pl->stages[r].n_replicas;
  }
  out->execs = hs_calloc((size_t)n_execs, sizeof *out->execs);
  if (!out->execs)
    HS_FAIL(HS_ENOMEM);
  out->n_execs = n_execs;
  int32_t e = 0;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    int32_t ranks = pl->n_stages / v;
    for (int32_t r = 0; r < ranks; r++) {
      /* an SPMD group: HAP's stage of single-device replicas */
      const hs_plan_stage_t *st0 = &pl->stages[r];
      bool spmd_stage = spmd && v == 1 && st0->n_replicas > 1;
      for (int32_t q = 0; spmd_stage && q < st0->n_replicas; q++)
        spmd_stage = st0->replicas[q].n_devices == 1;
      int32_t gid = -1;
      if (spmd_stage) {
        hs_group_t *ng = hs_reallocarray(out->groups, (size_t)out->n_groups + 1, sizeof *ng);
        if (!ng)
          HS_FAIL(HS_ENOMEM);
        out->groups = ng;
        gid = out->n_groups++;
        hs_group_t *gr = &out->groups[gid];
        memset(gr, 0, sizeof *gr);
        gr->n = st0->n_replicas;
        gr->tp = 1;
        gr->execs = hs_calloc((size_t)gr->n, sizeof *gr->execs);
        gr->devices = hs_calloc((size_t)gr->n, sizeof *gr->devices);
        gr->shares = hs_calloc((size_t)gr->n, sizeof *gr->shares);
        if (!gr->execs || !gr->devices || !gr->shares)
          HS_FAIL(HS_ENOMEM);
        for (int32_t q = 0; q < gr->n; q++) {
          gr->execs[q] = e + q;
          gr->devices[q] = st0->replicas[q].devices[0];
          gr->shares[q] = st0->replicas[q].share;
        }
      }
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q++, e++) {
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
        x->gpu = hs_cluster_gpu(c, rp->devices[0]);
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
          HS_FAIL(HS_ENOMEM);
        for (int32_t ch = 0; ch < v; ch++)
          x->zgroup[ch] = -1;
        hs_sched_params_t sp = {.p = ranks, .v = v, .m = x->m, .rank = r,
                                .warmup = pl->stages[r].warmup, .order = pl->stages[r].order};
        sc->order(&sp, x->order);
      }
    }
  }

  /* Pipeline pieces between adjacent stages, both directions. */
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    int32_t ranks = pl->n_stages / v;
    for (int32_t k = 0; k + 1 < pl->n_stages; k++) {
      const hs_plan_stage_t *a = &pl->stages[k], *b = &pl->stages[k + 1];
      double act = m->ops[a->op_last - 1].out_bytes * pl->microbatch_size;
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
          for (int32_t dir = 0; dir < 2; dir++) {
            /* dir 0: forward activation a -> b; dir 1: gradient b -> a */
            const hs_plan_replica_t *src = dir ? &b->replicas[qb] : &a->replicas[qa];
            const hs_plan_replica_t *dst = dir ? &a->replicas[qa] : &b->replicas[qb];
            if (hs_reserve((void **)&out->pieces, &pieces_cap, (size_t)out->n_pieces + 1,
                           sizeof *out->pieces) != HS_OK)
              HS_FAIL(HS_ENOMEM);
            hs_piece_t *pc = &out->pieces[out->n_pieces++];
            memset(pc, 0, sizeof *pc);
            int32_t sk = dir ? k + 1 : k, dk = dir ? k : k + 1;
            pc->src = exec_of(out, i, sk, dir ? qb : qa);
            pc->dst = exec_of(out, i, dk, dir ? qa : qb);
            pc->dst_chunk = dk / ranks;
            pc->src_stage = sk;
            pc->phase = dir ? HS_PHASE_BWD : HS_PHASE_FWD;
            int32_t nsub = HS_MIN(src->n_devices, dst->n_devices);
            pc->total_bytes = act * ov;
            pc->bytes = pc->total_bytes / nsub;
            size_t hcap = 0;
            hs_time_t lat = 0;
            for (int32_t j = 0; j < nsub; j++)
              HS_CHECK(add_path(topo, src->devices[j], dst->devices[j], &pc->hops, &pc->n_hops,
                                &hcap, &lat));
            pc->latency_ns = lat;
            /* receiver waits for this piece before (dst chunk, phase) */
            out->execs[pc->dst].in_count[pc->dst_chunk * 2 + (dir ? HS_PHASE_BWD : HS_PHASE_FWD)]++;
          }
        }
      }
    }
  }
  /* Group pieces by (sender, chunk, phase) into out_list. */
  out->out_list = hs_calloc((size_t)out->n_pieces + 1, sizeof(int32_t));
  if (!out->out_list)
    HS_FAIL(HS_ENOMEM);
  (void)out_cap;
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
    const hs_plan_pipeline_t *pl = &plan->pipelines[ex->pipeline];
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

  /* Gradient buckets. holders[op] = executors holding op (sorted ids). */
  holders = hs_calloc(m->n_ops, sizeof *holders);
  if (!holders)
    HS_FAIL(HS_ENOMEM);
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    const hs_plan_pipeline_t *pl = &plan->pipelines[ex->pipeline];
    int32_t ranks = pl->n_stages / v;
    for (int32_t ch = 0; ch < v; ch++) {
      const hs_plan_stage_t *stg = &pl->stages[ch * ranks + ex->rank];
      for (int32_t op = stg->op_first; op < stg->op_last; op++) {
        if (holders_add(&holders[op], x) != HS_OK) /* x increases: sorted */
          HS_FAIL(HS_ENOMEM);
        ex->params_per_device += op_params_held(m, stg, ex, spmd, EP, op);
        if (plan->precision == HS_DTYPE_FP8) {
          /* fp8 weight casts, once per step, of the weights the GEMM uses
           * (a tied view casts the shared weight) */
          const hs_op_t *o = &m->ops[op];
          double div = (o->tp_split == HS_TP_REPLICATE) ? 1.0 : ex->tp;
          double held = op_params_held(m, stg, ex, spmd, EP, op) + o->tied_params / div;
          double experts = o->kind == HS_OP_MOE_EXPERT ? o->experts / div / EP : 0.0;
          ex->fp8_weight_cast_s +=
              hs_compute_fp8_weight_cast_s(ex->gpu, plan->precision, o, held, experts);
        }
      }
    }
  }
  mark_tied_copies(m, holders);
  /* tied-weight copies count in the holders' parameters (memory.c agrees) */
  for (int32_t op = 0; op < (int32_t)m->n_ops; op++) {
    if (!holders[op].tied_copy)
      continue;
    for (int32_t k = 0; k < holders[op].n; k++) {
      hs_exec_t *ex = &out->execs[holders[op].ids[k]];
      double div = (m->ops[op].tp_split == HS_TP_REPLICATE) ? 1.0 : ex->tp;
      ex->params_per_device += m->ops[op].tied_params / div;
    }
  }
  /* Context-parallel groups: C consecutive replicas of each stage rank. */
  members = hs_calloc((size_t)out->n_execs + 1, sizeof *members);
  zids = hs_calloc((size_t)out->n_execs * (size_t)v + 1, sizeof *zids);
  if (!members || !zids)
    HS_FAIL(HS_ENOMEM);
  for (int32_t i = 0; CP > 1 && i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t r = 0; r < pl->n_stages / v; r++)
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q += CP) {
        for (int32_t k = 0; k < CP; k++)
          members[k] = exec_of(out, i, r, q + k);
        int32_t gid = add_group(out, members, CP);
        if (gid < 0)
          HS_FAIL(HS_ENOMEM);
        for (int32_t k = 0; k < CP; k++)
          out->execs[members[k]].cp_group = gid;
      }
  }
  /* Expert-parallel groups: the same (rank, replica) of E consecutive
   * pipelines (validated to be alike). */
  for (int32_t i = 0; EP > 1 && i < plan->n_pipelines; i += EP) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t r = 0; r < pl->n_stages / v; r++)
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q++) {
        for (int32_t k = 0; k < EP; k++)
          members[k] = exec_of(out, i + k, r, q);
        int32_t gid = add_group(out, members, EP);
        if (gid < 0)
          HS_FAIL(HS_ENOMEM);
        for (int32_t k = 0; k < EP; k++)
          out->execs[members[k]].ep_group = gid;
      }
  }
  /* ZeRO-3 gather groups: the holders of each executor's chunk, when every
   * op of the chunk has the same holders and each holds the same op range
   * with the same schedule length (so all meet the same gathers in the same
   * order); otherwise the gathers stay folded into the gradient buckets. */
  for (int32_t x = 0; zero3 && x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    for (int32_t ch = 0; zero3 && ch < v; ch++) {
      const hs_plan_stage_t *stg = exec_stage(plan, ex, ch);
      const holder_list_t *h = &holders[stg->op_first];
      if (h->n <= 1)
        continue;
      /* a gather group of these holders exists: its checks were done */
      int32_t gid = -1;
      for (int32_t k = 0; k < n_zids && gid < 0; k++) {
        const hs_group_t *gr = &out->groups[zids[k]];
        if (gr->n == h->n && memcmp(gr->execs, h->ids, sizeof(int32_t) * (size_t)h->n) == 0)
          gid = zids[k];
      }
      if (gid < 0) {
        for (int32_t op = stg->op_first + 1; zero3 && op < stg->op_last; op++)
          zero3 = holders[op].n == h->n &&
                  memcmp(holders[op].ids, h->ids, sizeof(int32_t) * (size_t)h->n) == 0;
        for (int32_t k = 0; zero3 && k < h->n; k++) {
          const hs_exec_t *y = &out->execs[h->ids[k]];
          const hs_plan_stage_t *sy = ch < y->v ? exec_stage(plan, y, ch) : NULL;
          /* the same position in a pipeline of the same length and
           * warm-up: the same schedule order, so the same gathers in turn */
          const hs_plan_pipeline_t *px = &plan->pipelines[ex->pipeline];
          const hs_plan_pipeline_t *py = &plan->pipelines[y->pipeline];
          zero3 = sy && sy->op_first == stg->op_first && sy->op_last == stg->op_last &&
                  y->m == ex->m && y->tp == ex->tp && y->rank == ex->rank &&
                  px->n_stages == py->n_stages &&
                  px->stages[ex->rank].warmup == py->stages[y->rank].warmup &&
                  hs__order_same(px->stages[ex->rank].order, py->stages[y->rank].order);
        }
        if (!zero3)
          break;
        if ((gid = add_group(out, h->ids, h->n)) < 0)
          HS_FAIL(HS_ENOMEM);
        zids[n_zids++] = gid;
      }
      ex->zgroup[ch] = gid;
    }
  }
  if (!zero3)
    for (int32_t x = 0; x < out->n_execs; x++)
      for (int32_t ch = 0; ch < v; ch++)
        out->execs[x].zgroup[ch] = -1;

  /* bytes per gradient element the DP collectives move: the precision's,
   * or 4 with an fp32 reduce (grad_reduce_dtype, docs/plan.md) */
  double grad_bytes = hs_practice_grad_bytes(&plan->practice, plan->precision);
  for (int32_t op = (int32_t)m->n_ops - 1; op >= 0;) {
    /* segment [lo, op] with the same holders */
    int32_t lo = op;
    while (lo > 0 && holders[lo - 1].n == holders[op].n &&
           memcmp(holders[lo - 1].ids, holders[op].ids, sizeof(int32_t) * (size_t)holders[op].n) == 0)
      lo--;
    const holder_list_t *h = &holders[op];
    if (h->n > 1) {
      int32_t tp = out->execs[h->ids[0]].tp;
      bool spmd_group = out->execs[h->ids[0]].group >= 0;
      /* ZeRO-3: the gradients are reduce-scattered; with the gathers
       * lowered into the templates (above) that is all the bucket does,
       * otherwise the parameter all-gathers of a forward and a backward
       * pass travel with it (the ZeRO paper's 3 x params per step against
       * 2 x for an all-reduce), charged on the gradient stream
       * (docs/simulator.md: what is approximated). As an all-reduce of
       * X = RS(G) + 2 AG(W) over 2: X = G (1/2 + w/g), G the gradient
       * bytes, w / g the weight / gradient bytes per parameter (1.5 when
       * they are equal; the gathers keep the weights' bytes under an fp32
       * gradient reduce) */
      double zb = hs_plan_zero_stage(plan) >= 3 && !zero3
                      ? 0.5 + hs_precision_state_bytes(plan->precision).weight / grad_bytes
                      : 1.0;
      hs_coll_op_t bop = zero3 ? HS_COLL_REDUCE_SCATTER : HS_COLL_ALLREDUCE;
      /* cut [lo, op] into buckets from the top (backward order) */
      int32_t hi = op;
      while (hi >= lo) {
        double bytes = 0.0;
        int32_t b_lo = hi;
        bool expert = false;
        for (;;) {
          double div = (m->ops[b_lo].tp_split == HS_TP_REPLICATE) ? 1.0 : tp;
          if (EP > 1 && m->ops[b_lo].kind == HS_OP_MOE_EXPERT) {
            /* expert weights: a bucket of their own (below) */
            if (bytes > 0.0) {
              b_lo++;
            } else {
              expert = true;
            }
            break;
          }
          /* sharded SPMD parameters: each device owns its slice, no sync */
          if (!(spmd_group && spmd[b_lo].sharded_params))
            bytes += m->ops[b_lo].params / div * grad_bytes;
          if (holders[b_lo].tied_copy) /* the copy's gradient, synced like the rest */
            bytes += m->ops[b_lo].tied_params / div * grad_bytes;
          if (b_lo == lo || bytes >= plan->bucket_bytes)
            break;
          b_lo--;
        }
        if (expert) {
          /* expert parallelism: rank k of each expert group holds experts
           * k E/e ...; their gradients are reduced over the holders with
           * the same rank (the expert data-parallel group), 1/E each */
          double div = (m->ops[b_lo].tp_split == HS_TP_REPLICATE) ? 1.0 : tp;
          double bytes_e = m->ops[b_lo].params / div / EP * grad_bytes;
          for (int32_t k = 0; k < EP && bytes_e > 0.0; k++) {
            int32_t n = 0;
            for (int32_t j = 0; j < h->n; j++)
              if (out->execs[h->ids[j]].pipeline % EP == k)
                members[n++] = h->ids[j];
            if (n < 2)
              continue;
            hs_bucket_t *bk = NULL;
            HS_CHECK(add_bucket(out, &buckets_cap, b_lo, b_lo + 1, bytes_e, tp, n, &bk));
            bk->op = bop;
            memcpy(bk->holders, members, sizeof(int32_t) * (size_t)n);
            for (int32_t j = 0; j < tp; j++)
              for (int32_t q = 0; q < n; q++)
                bk->devices[j * n + q] = out->execs[members[q]].devices[j];
          }
        } else if (bytes > 0.0) {
          hs_bucket_t *bk = NULL;
          HS_CHECK(add_bucket(out, &buckets_cap, b_lo, hi + 1, bytes * zb, tp, h->n, &bk));
          bk->op = bop;
          memcpy(bk->holders, h->ids, sizeof(int32_t) * (size_t)h->n);
          for (int32_t j = 0; j < tp; j++)
            for (int32_t k = 0; k < h->n; k++)
              bk->devices[j * h->n + k] = out->execs[h->ids[k]].devices[j];
        }
        hi = b_lo - 1;
      }
    }
    op = lo - 1;
  }
  /* Tied weights: after the data-parallel buckets, each holder of a copy
   * all-reduces its gradient with one holder of the original (Megatron-LM's
   * embedding group of the first and last stage), pairs in parallel; k-th
   * copy with the k-th original, cycling through the shorter list. Issued
   * last by every executor, so the order stays consistent. Pairs whose TP
   * degrees differ exchange the whole gradient between their first
   * devices. */
  /* DeepSpeed's pipeline engine all-reduces the tied weight's own gradient
   * (deepspeed/runtime/pipe/module.py allreduce_tied_weight_gradients:
   * dist.all_reduce(weight.grad)), in the model's dtype, not the fp32
   * buffer its data-parallel reduction may use (fp32_allreduce) */
  double tied_grad_bytes = plan->practice.framework.id == HS_FW_DEEPSPEED_2022
                               ? hs_precision_grad_bytes(plan->precision)
                               : grad_bytes;
  for (int32_t op = 0; op < (int32_t)m->n_ops; op++) {
    if (!holders[op].tied_copy)
      continue;
    const holder_list_t *ha = &holders[op], *hb = &holders[m->ops[op].tied_op];
    if (hb->n == 0)
      continue;
    int32_t pairs = HS_MAX(ha->n, hb->n);
    for (int32_t k = 0; k < pairs; k++) {
      const hs_exec_t *xa = &out->execs[ha->ids[k % ha->n]];
      const hs_exec_t *xb = &out->execs[hb->ids[k % hb->n]];
      int32_t tp = xa->tp == xb->tp ? xa->tp : 1;
      double div = (m->ops[op].tp_split == HS_TP_REPLICATE) ? 1.0 : tp;
      hs_bucket_t *bk = NULL;
      HS_CHECK(add_bucket(out, &buckets_cap, m->ops[op].tied_op, m->ops[op].tied_op + 1,
                          m->ops[op].tied_params / div * tied_grad_bytes, tp, 2, &bk));
      bk->holders[0] = ha->ids[k % ha->n];
      bk->holders[1] = hb->ids[k % hb->n];
      for (int32_t j = 0; j < tp; j++) {
        bk->devices[j * 2] = xa->devices[j];
        bk->devices[j * 2 + 1] = xb->devices[j];
      }
    }
  }
  /* Per-executor bucket lists, in creation order = descending ops (tied
   * copies last). */
  tmp = hs_calloc((size_t)out->n_execs, sizeof(int32_t));
  if (!tmp)
    HS_FAIL(HS_ENOMEM);
  for (int32_t b = 0; b < out->n_buckets; b++)
    for (int32_t k = 0; k < out->buckets[b].n_holders; k++)
      tmp[out->buckets[b].holders[k]]++;
  for (int32_t x = 0; x < out->n_execs; x++) {
    out->execs[x].buckets = hs_calloc((size_t)tmp[x] + 1, sizeof(int32_t));
    if (!out->execs[x].buckets)
      HS_FAIL(HS_ENOMEM);
  }
  for (int32_t b = 0; b < out->n_buckets; b++)
    for (int32_t k = 0; k < out->buckets[b].n_holders; k++) {
      hs_exec_t *ex = &out->execs[out->buckets[b].holders[k]];
      ex->buckets[ex->n_buckets++] = b;
    }
  /* The last microbatch's backward, cut where each of the executor's
   * buckets becomes ready (its lowest op's backward is done): the simulator
   * starts a bucket's all-reduce there, overlapping the rest of the backward
   * (PyTorch DDP's and Megatron's overlap_grad_reduce). Same work as tmpl. */
  cutmark = hs_calloc(m->n_ops + 1, 1);
  if (!cutmark)
    HS_FAIL(HS_ENOMEM);
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    const hs_plan_pipeline_t *pl = &plan->pipelines[ex->pipeline];
    int32_t ranks = pl->n_stages / v;
    const hs_plan_stage_t *st0 = &pl->stages[ex->rank];
    spmd_ctx_t sx = {.ops = spmd, .group = ex->group, .n = st0->n_replicas,
                     .mb_samples = (double)pl->microbatch_size};
    ex->tmpl_final = hs_calloc((size_t)v, sizeof *ex->tmpl_final);
    if (!ex->tmpl_final)
      HS_FAIL(HS_ENOMEM);
    for (int32_t ch = 0; ch < v; ch++) {
      const hs_plan_stage_t *stg = &pl->stages[ch * ranks + ex->rank];
      double share = stg->replicas[ex->replica].share * pl->microbatch_size;
      gctx_t gx = {.cp_group = ex->cp_group, .cp = CP, .ep_group = ex->ep_group, .ep = EP,
                   .zgroup = ex->zgroup[ch],
                   .weight_bytes = hs_practice_gather_bytes(&plan->practice, plan->precision),
                   .bwd_gathers = hs_plan_zero_stage(plan) >= 3,
                   .mb_samples = share * CP};
      /* the framework's per-microbatch host time once per microbatch on a
       * rank: in its first chunk (sim/host.c) */
      hs_practice_t pr_ch = plan->practice;
      if (ch > 0)
        pr_ch.framework.microbatch_us = 0.0;
      /* chunks of an interleaved rank share replica structure (validated) */
      for (int32_t ph = 0; ph < 2; ph++)
        HS_CHECK(build_template(m, stg, ex->gpu, plan->precision, share, ex->tp, (hs_phase_t)ph,
                                &sx, NULL, &pr_ch, &gx, &ex->tmpl[ch * 2 + ph]));
      for (int32_t k = 0; plan->practice.dp_overlap && k < ex->n_buckets; k++) {
        int32_t f = out->buckets[ex->buckets[k]].op_first;
        if (f >= stg->op_first && f < stg->op_last)
          cutmark[f] = 1;
      }
      HS_CHECK(build_template(m, stg, ex->gpu, plan->precision, share, ex->tp, HS_PHASE_BWD, &sx,
                              cutmark, &pr_ch, &gx, &ex->tmpl_final[ch]));
      if (plan->practice.grad_accum != HS_GRAD_ACCUM_FUSED) {
        double cp = chunk_params(m, stg, ex, spmd, holders, EP);
        HS_CHECK(hs__grad_accum_append(&ex->tmpl[ch * 2 + HS_PHASE_BWD], ex->gpu,
                                       plan->practice.grad_accum, plan->precision, ex->m, cp,
                                       stg->op_first, stg->op_last - 1));
        HS_CHECK(hs__grad_accum_append(&ex->tmpl_final[ch], ex->gpu, plan->practice.grad_accum,
                                       plan->precision, ex->m, cp, stg->op_first,
                                       stg->op_last - 1));
      }
      for (int32_t op = stg->op_first; op < stg->op_last; op++)
        cutmark[op] = 0;
    }
  }
  /* Optimizer step: memory-bound over the parameters this device updates. */
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    double params = ex->params_per_device;
    if (hs_plan_zero_stage(plan) >= 1) {
      /* ZeRO-1: each holder updates 1/n of every op it holds; approximate by
       * the holder count of its first op. */
      const hs_plan_pipeline_t *pl = &plan->pipelines[ex->pipeline];
      int32_t first = pl->stages[ex->rank].op_first;
      params /= HS_MAX(holders[first].n, 1);
    }
    double bytes =
        params * (OPT_BYTES_PER_PARAM + hs_host_optimizer_extra_bytes(&plan->practice.framework,
                                                                      plan->precision));
    ex->optimizer_ns_d = bytes > 0 ? hs_compute_kernel_s(ex->gpu, HS_DTYPE_FP32, false, 0.0, bytes) : 0.0;
    /* fp8: TE's weight casts, once per step, timed with the optimizer (the
     * same device, serial with it: the next step's first microbatch) */
    if (ex->fp8_weight_cast_s > 0)
      ex->optimizer_ns_d += ex->fp8_weight_cast_s;
  }

cleanup:
  free(spmd);
  if (holders)
    for (size_t op = 0; op < m->n_ops; op++)
      free(holders[op].ids);
  free(holders);
  free(src_first);
  free(by_src);
  free(tmp);
  free(cutmark);
  free(members);
  free(zids);
  if (st != HS_OK) {
    hs__lowered_destroy(out);
    if (err && err->status == HS_OK)
      hs_error_set(err, st, "lowering plan: %s", hs_status_message(st));
  }
  return st;
}
