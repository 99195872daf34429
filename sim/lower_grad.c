/*
 * lower_grad.c - the lowering passes over parameters and their gradients
 * (see lower_int.h for the pass order): which executors hold each op, the
 * context-, expert-parallel and ZeRO-3 gather groups, the data-parallel
 * gradient buckets (ZeRO's reduce-scatter or folded gathers), the tied-
 * weight sync pairs, each executor's bucket list and its optimizer step.
 *
 * Gradient buckets: the op sequence is cut wherever the set of TP groups
 * holding an op changes (layer-wise sync across asymmetric pipelines), then
 * into buckets of at most plan->bucket_bytes; TP rank j of every holder
 * all-reduces its shard. Buckets are issued in descending op order by every
 * holder, which keeps the collective order consistent (no deadlock).
 *
 * Invariants: holder lists are sorted by executor id; bucket ids follow
 * creation order (descending ops, tied pairs last); group ids continue
 * after the SPMD groups of placement.
 */
#include "lower_int.h"

#include <stdlib.h>
#include <string.h>

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

/* The stage chunk ch of executor x. */
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
 * gradient accumulation pass reads. Needs the holders pass. */
double hs__lower_chunk_params(const lower_ctx_t *cx, const hs_plan_stage_t *stg,
                              const hs_exec_t *ex)
{
  const hs_model_t *m = cx->m;
  double p = 0.0;
  for (int32_t op = stg->op_first; op < stg->op_last; op++) {
    p += op_params_held(m, stg, ex, cx->spmd, cx->EP, op);
    if (cx->holders[op].tied_copy)
      p += m->ops[op].tied_params / ((m->ops[op].tp_split == HS_TP_REPLICATE) ? 1.0 : ex->tp);
  }
  return p;
}

/* Holders: which executors hold each op, and the parameters each holds.
 * Reads: placed executors, cx->spmd, cx->EP. Guarantees: cx->holders[op]
 * sorted with tied_copy marked; every executor's params_per_device
 * (tied copies included, as memory.c counts them) and, under fp8, its
 * fp8_weight_cast_s. O(executors x ops held). */
hs_status_t hs__lower_holders(lower_ctx_t *cx)
{
  const hs_model_t *m = cx->m;
  const hs_plan_t *plan = cx->plan;
  hs_lowered_t *out = cx->out;
  holder_list_t *holders = cx->holders = hs_calloc(m->n_ops, sizeof *holders);
  if (!holders)
    return HS_ENOMEM;
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    for (int32_t ch = 0; ch < cx->v; ch++) {
      const hs_plan_stage_t *stg = exec_stage(plan, ex, ch);
      for (int32_t op = stg->op_first; op < stg->op_last; op++) {
        if (holders_add(&holders[op], x) != HS_OK) /* x increases: sorted */
          return HS_ENOMEM;
        ex->params_per_device += op_params_held(m, stg, ex, cx->spmd, cx->EP, op);
        if (plan->precision == HS_DTYPE_FP8) {
          /* fp8 weight casts, once per step, of the weights the GEMM uses
           * (a tied view casts the shared weight) */
          const hs_op_t *o = &m->ops[op];
          double div = (o->tp_split == HS_TP_REPLICATE) ? 1.0 : ex->tp;
          double held = op_params_held(m, stg, ex, cx->spmd, cx->EP, op) + o->tied_params / div;
          double experts = o->kind == HS_OP_MOE_EXPERT ? o->experts / div / cx->EP : 0.0;
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
  return HS_OK;
}

/* Expert- and context-parallel exchanges: their groups.
 * Reads: placed executors, cx->CP, cx->EP. Guarantees: cx->members
 * allocated (n_execs + 1); with CP > 1 every C consecutive replicas of a
 * stage rank form a group (cp_group set); with EP > 1 the same (rank,
 * replica) of E consecutive pipelines (validated to be alike) form one
 * (ep_group set). Group ids in that order. O(executors). */
hs_status_t hs__lower_cp_ep_groups(lower_ctx_t *cx)
{
  const hs_plan_t *plan = cx->plan;
  hs_lowered_t *out = cx->out;
  int32_t CP = cx->CP, EP = cx->EP, v = cx->v;
  int32_t *members = cx->members = hs_calloc((size_t)out->n_execs + 1, sizeof *members);
  if (!members)
    return HS_ENOMEM;
  for (int32_t i = 0; CP > 1 && i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t r = 0; r < pl->n_stages / v; r++)
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q += CP) {
        for (int32_t k = 0; k < CP; k++)
          members[k] = hs__exec_of(out, i, r, q + k);
        int32_t gid = add_group(out, members, CP);
        if (gid < 0)
          return HS_ENOMEM;
        for (int32_t k = 0; k < CP; k++)
          out->execs[members[k]].cp_group = gid;
      }
  }
  for (int32_t i = 0; EP > 1 && i < plan->n_pipelines; i += EP) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t r = 0; r < pl->n_stages / v; r++)
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q++) {
        for (int32_t k = 0; k < EP; k++)
          members[k] = hs__exec_of(out, i + k, r, q);
        int32_t gid = add_group(out, members, EP);
        if (gid < 0)
          return HS_ENOMEM;
        for (int32_t k = 0; k < EP; k++)
          out->execs[members[k]].ep_group = gid;
      }
  }
  return HS_OK;
}

/* Whether the holders h of executor ex's chunk ch (stage chunk stg) can
 * gather together: every op of the chunk has the same holders and each
 * holds the same op range with the same schedule (the same position in a
 * pipeline of the same length and warm-up: the same gathers in turn). */
static bool zero_group_aligned(const lower_ctx_t *cx, const hs_exec_t *ex, int32_t ch,
                               const hs_plan_stage_t *stg, const holder_list_t *h)
{
  const hs_plan_t *plan = cx->plan;
  bool ok = true;
  for (int32_t op = stg->op_first + 1; ok && op < stg->op_last; op++)
    ok = cx->holders[op].n == h->n &&
         memcmp(cx->holders[op].ids, h->ids, sizeof(int32_t) * (size_t)h->n) == 0;
  for (int32_t k = 0; ok && k < h->n; k++) {
    const hs_exec_t *y = &cx->out->execs[h->ids[k]];
    const hs_plan_stage_t *sy = ch < y->v ? exec_stage(plan, y, ch) : NULL;
    const hs_plan_pipeline_t *px = &plan->pipelines[ex->pipeline];
    const hs_plan_pipeline_t *py = &plan->pipelines[y->pipeline];
    ok = sy && sy->op_first == stg->op_first && sy->op_last == stg->op_last &&
         y->m == ex->m && y->tp == ex->tp && y->rank == ex->rank &&
         px->n_stages == py->n_stages &&
         px->stages[ex->rank].warmup == py->stages[y->rank].warmup &&
         hs__order_same(px->stages[ex->rank].order, py->stages[y->rank].order);
  }
  return ok;
}

/* ZeRO-3 gather groups: the holders of each executor's chunk, when
 * zero_group_aligned holds for every chunk; otherwise the gathers stay
 * folded into the gradient buckets.
 * Reads: holders, cx->zero3. Guarantees: cx->zero3 stays true only when
 * every chunk aligned, and then zgroup[ch] names the chunk's gather group
 * (-1 for a single holder); otherwise every zgroup is -1. */
hs_status_t hs__lower_zero_groups(lower_ctx_t *cx)
{
  hs_status_t st = HS_OK;
  hs_lowered_t *out = cx->out;
  int32_t v = cx->v, n_zids = 0;
  int32_t *zids = hs_calloc((size_t)out->n_execs * (size_t)v + 1, sizeof *zids);
  if (!zids)
    HS_FAIL(HS_ENOMEM);
  for (int32_t x = 0; cx->zero3 && x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    for (int32_t ch = 0; cx->zero3 && ch < v; ch++) {
      const hs_plan_stage_t *stg = exec_stage(cx->plan, ex, ch);
      const holder_list_t *h = &cx->holders[stg->op_first];
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
        if (!(cx->zero3 = zero_group_aligned(cx, ex, ch, stg, h)))
          break;
        if ((gid = add_group(out, h->ids, h->n)) < 0)
          HS_FAIL(HS_ENOMEM);
        zids[n_zids++] = gid;
      }
      ex->zgroup[ch] = gid;
    }
  }
  if (!cx->zero3)
    for (int32_t x = 0; x < out->n_execs; x++)
      for (int32_t ch = 0; ch < v; ch++)
        out->execs[x].zgroup[ch] = -1;
cleanup:
  free(zids);
  return st;
}

/* Expert parallelism's buckets for expert op b_lo held by h: rank k of
 * each expert group holds experts k E/e ...; their gradients are reduced
 * over the holders with the same rank (the expert data-parallel group),
 * 1/E each; a rank with fewer than 2 holders has none. */
static hs_status_t expert_buckets(lower_ctx_t *cx, const holder_list_t *h, int32_t b_lo,
                                  int32_t tp, hs_coll_op_t bop)
{
  hs_lowered_t *out = cx->out;
  const hs_model_t *m = cx->m;
  int32_t EP = cx->EP;
  int32_t *members = cx->members;
  double div = (m->ops[b_lo].tp_split == HS_TP_REPLICATE) ? 1.0 : tp;
  double bytes_e = m->ops[b_lo].params / div / EP * cx->grad_bytes;
  for (int32_t k = 0; k < EP && bytes_e > 0.0; k++) {
    int32_t n = 0;
    for (int32_t j = 0; j < h->n; j++)
      if (out->execs[h->ids[j]].pipeline % EP == k)
        members[n++] = h->ids[j];
    if (n < 2)
      continue;
    hs_bucket_t *bk = NULL;
    hs_status_t st = add_bucket(out, &cx->buckets_cap, b_lo, b_lo + 1, bytes_e, tp, n, &bk);
    if (st != HS_OK)
      return st;
    bk->op = bop;
    memcpy(bk->holders, members, sizeof(int32_t) * (size_t)n);
    for (int32_t j = 0; j < tp; j++)
      for (int32_t q = 0; q < n; q++)
        bk->devices[j * n + q] = out->execs[members[q]].devices[j];
  }
  return HS_OK;
}

/* Cuts ops [lo, op], all held by the same executors h (at least 2), into
 * buckets from the top (backward order): at most plan->bucket_bytes each,
 * expert weights (with EP > 1) in buckets of their own, sharded SPMD
 * parameters left out (each device owns its slice, no sync). */
static hs_status_t segment_buckets(lower_ctx_t *cx, int32_t lo, int32_t op)
{
  const hs_model_t *m = cx->m;
  const hs_plan_t *plan = cx->plan;
  hs_lowered_t *out = cx->out;
  const holder_list_t *holders = cx->holders, *h = &holders[op];
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
  double zb = hs_plan_zero_stage(plan) >= 3 && !cx->zero3
                  ? 0.5 + hs_precision_state_bytes(plan->precision).weight / cx->grad_bytes
                  : 1.0;
  hs_coll_op_t bop = cx->zero3 ? HS_COLL_REDUCE_SCATTER : HS_COLL_ALLREDUCE;
  int32_t hi = op;
  while (hi >= lo) {
    double bytes = 0.0;
    int32_t b_lo = hi;
    bool expert = false;
    for (;;) {
      double div = (m->ops[b_lo].tp_split == HS_TP_REPLICATE) ? 1.0 : tp;
      if (cx->EP > 1 && m->ops[b_lo].kind == HS_OP_MOE_EXPERT) {
        /* expert weights: a bucket of their own (below) */
        if (bytes > 0.0) {
          b_lo++;
        } else {
          expert = true;
        }
        break;
      }
      if (!(spmd_group && cx->spmd[b_lo].sharded_params))
        bytes += m->ops[b_lo].params / div * cx->grad_bytes;
      if (holders[b_lo].tied_copy) /* the copy's gradient, synced like the rest */
        bytes += m->ops[b_lo].tied_params / div * cx->grad_bytes;
      if (b_lo == lo || bytes >= plan->bucket_bytes)
        break;
      b_lo--;
    }
    hs_status_t st = HS_OK;
    if (expert) {
      st = expert_buckets(cx, h, b_lo, tp, bop);
    } else if (bytes > 0.0) {
      hs_bucket_t *bk = NULL;
      st = add_bucket(out, &cx->buckets_cap, b_lo, hi + 1, bytes * zb, tp, h->n, &bk);
      if (st == HS_OK) {
        bk->op = bop;
        memcpy(bk->holders, h->ids, sizeof(int32_t) * (size_t)h->n);
        for (int32_t j = 0; j < tp; j++)
          for (int32_t k = 0; k < h->n; k++)
            bk->devices[j * h->n + k] = out->execs[h->ids[k]].devices[j];
      }
    }
    if (st != HS_OK)
      return st;
    hi = b_lo - 1;
  }
  return HS_OK;
}

/* Gradient buckets and ZeRO: the data-parallel buckets, from the last op
 * down, over each run of ops with the same holders.
 * Reads: holders, cx->zero3 (final), cx->spmd. Guarantees: out->buckets
 * in descending op order; all-reduce, or reduce-scatter with ZeRO-3's
 * gathers lowered; with the gathers not lowered (ZeRO-3) their bytes fold
 * into the bucket. Sets cx->grad_bytes. O(ops x holders). */
hs_status_t hs__lower_grad_buckets(lower_ctx_t *cx)
{
  const hs_model_t *m = cx->m;
  const holder_list_t *holders = cx->holders;
  /* bytes per gradient element the DP collectives move: the precision's,
   * or 4 with an fp32 reduce (grad_reduce_dtype, docs/plan.md) */
  cx->grad_bytes = hs_practice_grad_bytes(&cx->plan->practice, cx->plan->precision);
  for (int32_t op = (int32_t)m->n_ops - 1; op >= 0;) {
    /* segment [lo, op] with the same holders */
    int32_t lo = op;
    while (lo > 0 && holders[lo - 1].n == holders[op].n &&
           memcmp(holders[lo - 1].ids, holders[op].ids, sizeof(int32_t) * (size_t)holders[op].n) == 0)
      lo--;
    if (holders[op].n > 1) {
      hs_status_t st = segment_buckets(cx, lo, op);
      if (st != HS_OK)
        return st;
    }
    op = lo - 1;
  }
  return HS_OK;
}

/* Tied-weight sync: after the data-parallel buckets, each holder of a copy
 * all-reduces its gradient with one holder of the original (Megatron-LM's
 * embedding group of the first and last stage), pairs in parallel; k-th
 * copy with the k-th original, cycling through the shorter list. Issued
 * last by every executor, so the order stays consistent. Pairs whose TP
 * degrees differ exchange the whole gradient between their first devices.
 * Reads: holders (tied_copy), cx->grad_bytes. Guarantees: one 2-holder
 * bucket per pair, appended after the data-parallel buckets. */
hs_status_t hs__lower_tied_sync(lower_ctx_t *cx)
{
  const hs_model_t *m = cx->m;
  const hs_plan_t *plan = cx->plan;
  hs_lowered_t *out = cx->out;
  const holder_list_t *holders = cx->holders;
  /* DeepSpeed's pipeline engine all-reduces the tied weight's own gradient
   * (deepspeed/runtime/pipe/module.py allreduce_tied_weight_gradients:
   * dist.all_reduce(weight.grad)), in the model's dtype, not the fp32
   * buffer its data-parallel reduction may use (fp32_allreduce) */
  double tied_grad_bytes = plan->practice.framework.id == HS_FW_DEEPSPEED_2022
                               ? hs_precision_grad_bytes(plan->precision)
                               : cx->grad_bytes;
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
      hs_status_t st = add_bucket(out, &cx->buckets_cap, m->ops[op].tied_op,
                                  m->ops[op].tied_op + 1,
                                  m->ops[op].tied_params / div * tied_grad_bytes, tp, 2, &bk);
      if (st != HS_OK)
        return st;
      bk->holders[0] = ha->ids[k % ha->n];
      bk->holders[1] = hb->ids[k % hb->n];
      for (int32_t j = 0; j < tp; j++) {
        bk->devices[j * 2] = xa->devices[j];
        bk->devices[j * 2 + 1] = xb->devices[j];
      }
    }
  }
  return HS_OK;
}

/* Per-executor bucket lists. Reads: out->buckets. Guarantees: each
 * executor's buckets[] in creation order = descending ops, tied copies
 * last. O(executors + bucket holders). */
hs_status_t hs__lower_bucket_lists(lower_ctx_t *cx)
{
  hs_lowered_t *out = cx->out;
  int32_t *count = hs_calloc((size_t)out->n_execs, sizeof(int32_t));
  if (!count)
    return HS_ENOMEM;
  for (int32_t b = 0; b < out->n_buckets; b++)
    for (int32_t k = 0; k < out->buckets[b].n_holders; k++)
      count[out->buckets[b].holders[k]]++;
  for (int32_t x = 0; x < out->n_execs; x++) {
    out->execs[x].buckets = hs_calloc((size_t)count[x] + 1, sizeof(int32_t));
    if (!out->execs[x].buckets) {
      free(count);
      return HS_ENOMEM;
    }
  }
  free(count);
  for (int32_t b = 0; b < out->n_buckets; b++)
    for (int32_t k = 0; k < out->buckets[b].n_holders; k++) {
      hs_exec_t *ex = &out->execs[out->buckets[b].holders[k]];
      ex->buckets[ex->n_buckets++] = b;
    }
  return HS_OK;
}

/* Optimizer step: memory-bound over the parameters this device updates.
 * Reads: params_per_device, fp8_weight_cast_s, holders. Guarantees: every
 * executor's optimizer_ns_d (seconds, fp8 weight casts included). */
void hs__lower_optimizer(lower_ctx_t *cx)
{
  const hs_plan_t *plan = cx->plan;
  hs_lowered_t *out = cx->out;
  for (int32_t x = 0; x < out->n_execs; x++) {
    hs_exec_t *ex = &out->execs[x];
    double params = ex->params_per_device;
    if (hs_plan_zero_stage(plan) >= 1) {
      /* ZeRO-1: each holder updates 1/n of every op it holds; approximate by
       * the holder count of its first op. */
      const hs_plan_pipeline_t *pl = &plan->pipelines[ex->pipeline];
      int32_t first = pl->stages[ex->rank].op_first;
      params /= HS_MAX(cx->holders[first].n, 1);
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
}
