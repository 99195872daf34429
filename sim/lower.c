/*
 * lower.c - lowers a validated plan to executors, segment templates, p2p
 * pieces and gradient buckets (see lower.h): the driver hs__lower, which
 * runs the lowering passes in order over one lower_ctx_t (lower_int.h),
 * and the stage template builder the templates pass uses. The placement
 * passes live in lower_place.c, the parameter and gradient passes in
 * lower_grad.c.
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
 * Invariant: lowering is a pure function of (model, cluster, topology,
 * plan): same input, same executors, templates, pieces and buckets, bit
 * for bit; the pass order fixes every id (lower_int.h).
 */
#include "lower_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


void hs__lowered_destroy(hs_lowered_t *l)
{
  if (!l)
    return;
  for (int32_t e = 0; e < l->n_execs; e++) {
    hs_exec_t *x = &l->execs[e];
    if (x->tmpl)
      for (int32_t k = 0; k < 2 * x->v; k++)
        if (!x->tmpl[k].shared)
          free(x->tmpl[k].segs);
    free(x->tmpl);
    if (x->tmpl_final)
      for (int32_t k = 0; k < x->v; k++)
        if (!x->tmpl_final[k].shared)
          free(x->tmpl_final[k].segs);
    free(x->tmpl_final);
    if (!x->order_shared)
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


/* ---- lowering passes ----------------------------------------------------------- */

/* Templates of executor ex's chunk ch: forward and backward per
 * microbatch, and the last microbatch's backward cut where each of its
 * buckets becomes ready (cutmark: scratch of n_ops + 1 zeros, left zero). */
static hs_status_t chunk_templates(lower_ctx_t *cx, hs_exec_t *ex, int32_t ch, uint8_t *cutmark)
{
  hs_status_t st = HS_OK;
  const hs_model_t *m = cx->m;
  const hs_plan_t *plan = cx->plan;
  const hs_lowered_t *out = cx->out;
  const hs_plan_pipeline_t *pl = &plan->pipelines[ex->pipeline];
  int32_t ranks = pl->n_stages / cx->v;
  const hs_plan_stage_t *st0 = &pl->stages[ex->rank];
  spmd_ctx_t sx = {.ops = cx->spmd, .group = ex->group, .n = st0->n_replicas,
                   .mb_samples = (double)pl->microbatch_size};
  const hs_plan_stage_t *stg = &pl->stages[ch * ranks + ex->rank];
  double share = stg->replicas[ex->replica].share * pl->microbatch_size;
  gctx_t gx = {.cp_group = ex->cp_group, .cp = cx->CP, .ep_group = ex->ep_group, .ep = cx->EP,
               .zgroup = ex->zgroup[ch],
               .weight_bytes = hs_practice_gather_bytes(&plan->practice, plan->precision),
               .bwd_gathers = hs_plan_zero_stage(plan) >= 3,
               .mb_samples = share * cx->CP};
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
    double cp = hs__lower_chunk_params(cx, stg, ex);
    HS_CHECK(hs__grad_accum_append(&ex->tmpl[ch * 2 + HS_PHASE_BWD], ex->gpu,
                                   plan->practice.grad_accum, plan->precision, ex->m, cp,
                                   stg->op_first, stg->op_last - 1));
    HS_CHECK(hs__grad_accum_append(&ex->tmpl_final[ch], ex->gpu, plan->practice.grad_accum,
                                   plan->precision, ex->m, cp, stg->op_first, stg->op_last - 1));
  }
cleanup:
  for (int32_t op = stg->op_first; op < stg->op_last; op++)
    cutmark[op] = 0;
  return st;
}

/* Stage templates, with the tensor-parallel and SPMD segments, the ring
 * attention, MoE and ZeRO-3 gather exchanges of each executor's groups.
 * Reads: executors with their groups and bucket lists, cx->spmd, holders.
 * Guarantees: every executor's tmpl[chunk * 2 + phase] and tmpl_final[chunk]
 * (the last microbatch's backward, cut where each of the executor's buckets
 * becomes ready: the simulator starts a bucket's all-reduce there,
 * overlapping the rest of the backward, as PyTorch DDP's and Megatron's
 * overlap_grad_reduce do; the same work as tmpl), gradient accumulation
 * appended unless fused. O(executors x chunks x ops). */
static hs_status_t pass_stage_templates(lower_ctx_t *cx)
{
  hs_status_t st = HS_OK;
  hs_lowered_t *out = cx->out;
  uint8_t *cutmark = hs_calloc(cx->m->n_ops + 1, 1);
  if (!cutmark)
    HS_FAIL(HS_ENOMEM);
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    ex->tmpl_final = hs_calloc((size_t)cx->v, sizeof *ex->tmpl_final);
    if (!ex->tmpl_final)
      HS_FAIL(HS_ENOMEM);
    for (int32_t ch = 0; ch < cx->v; ch++)
      HS_CHECK(chunk_templates(cx, ex, ch, cutmark));
  }
cleanup:
  free(cutmark);
  return st;
}

/* Fills the context's plan-wide settings; nothing allocated. */
static void lower_ctx_init(lower_ctx_t *cx, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_topology_t *topo, const hs_plan_t *plan, hs_lowered_t *out)
{
  memset(cx, 0, sizeof *cx);
  cx->m = m;
  cx->c = c;
  cx->topo = topo;
  cx->plan = plan;
  cx->out = out;
  cx->v = plan->chunks > 0 ? plan->chunks : 1;
  cx->CP = plan->practice.context_parallel > 1 ? plan->practice.context_parallel : 1;
  cx->EP = plan->practice.expert_parallel > 1 ? plan->practice.expert_parallel : 1;
  /* per-block gathers: ZeRO-3, and ZeRO-2 run as FSDP SHARD_GRAD_OP
   * (forward gathers only, gradients reduce-scattered) */
  cx->zero3 = (hs_plan_zero_stage(plan) >= 3 ||
               (hs_plan_zero_stage(plan) == 2 && plan->practice.fsdp_shard_grad_op)) &&
              plan->n_shards == 0;
}

/* Frees what the context owns (not ctx->out). */
static void lower_ctx_free(lower_ctx_t *cx)
{
  free(cx->spmd);
  if (cx->holders)
    for (size_t op = 0; op < cx->m->n_ops; op++)
      free(cx->holders[op].ids);
  free(cx->holders);
  free(cx->members);
}

hs_status_t hs__lower(const hs_model_t *m, const hs_cluster_t *c, const hs_topology_t *topo,
                      const hs_plan_t *plan, hs_lowered_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  lower_ctx_t cx;
  memset(out, 0, sizeof *out);
  lower_ctx_init(&cx, m, c, topo, plan, out);
  HS_CHECK(hs__lower_spmd_ops(&cx));        /* SPMD segments' exchanges (HAP) */
  HS_CHECK(hs__lower_place_executors(&cx)); /* placement, SPMD groups, orders */
  HS_CHECK(hs__lower_pipeline_pieces(&cx)); /* pipeline pieces and their paths */
  HS_CHECK(hs__lower_group_pieces(&cx));    /* pieces per (sender, chunk, phase) */
  HS_CHECK(hs__lower_holders(&cx));         /* op holders, parameters per device */
  HS_CHECK(hs__lower_cp_ep_groups(&cx));    /* context- and expert-parallel groups */
  HS_CHECK(hs__lower_zero_groups(&cx));     /* ZeRO-3 gather groups (or folded) */
  HS_CHECK(hs__lower_grad_buckets(&cx));    /* data-parallel gradient buckets */
  HS_CHECK(hs__lower_tied_sync(&cx));       /* tied-weight sync pairs */
  HS_CHECK(hs__lower_bucket_lists(&cx));    /* each executor's buckets in order */
  HS_CHECK(pass_stage_templates(&cx));      /* TP/SPMD/CP/EP/ZeRO segments */
  hs__lower_optimizer(&cx);                 /* optimizer step time */
  HS_CHECK(hs__lower_share(&cx));           /* equal orders and templates: one copy */
cleanup:
  lower_ctx_free(&cx);
  if (st != HS_OK) {
    hs__lowered_destroy(out);
    if (err && err->status == HS_OK)
      hs_error_set(err, st, "lowering plan: %s", hs_status_message(st));
  }
  return st;
}
