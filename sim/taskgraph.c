/*
 * taskgraph.c - the public task graph (hs_taskgraph.h): the simulator's
 * lowering plus, per template, the kernels and collectives it stands for.
 *
 * The expansion walks the ops with the rules of lower.c's build_template
 * (forward ascending; backward: recomputed forward first, then ops
 * descending; MoE all-to-alls around expert ops; Megatron all-reduces after
 * row-parallel forward and column-parallel backward ops) and is then checked
 * against the template: equal collective bytes and equal compute time up to
 * the nanosecond rounding of each segment. A mismatch is an internal error,
 * never a silent divergence between what is simulated and what is replayed.
 */
#include "hs_taskgraph.h"
#include "lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct wbuild {
  hs_tg_entry_t *e;
  size_t n, cap;
} wbuild_t;

static bool kind_is_gemm(hs_op_kind_t k)
{
  return k == HS_OP_GEMM || k == HS_OP_ATTENTION || k == HS_OP_MOE_EXPERT || k == HS_OP_MOE_ROUTER;
}

static hs_status_t push(wbuild_t *b, hs_tg_entry_t **out)
{
  if (hs_reserve((void **)&b->e, &b->cap, b->n + 1, sizeof *b->e) != HS_OK)
    return HS_ENOMEM;
  *out = &b->e[b->n++];
  memset(*out, 0, sizeof **out);
  return HS_OK;
}

static hs_status_t add_coll(wbuild_t *b, hs_coll_op_t op, double bytes)
{
  hs_tg_entry_t *e = NULL;
  if (push(b, &e) != HS_OK)
    return HS_ENOMEM;
  e->kind = HS_TG_COLL;
  e->op = -1;
  e->coll_op = op;
  e->coll_bytes = bytes;
  return HS_OK;
}

/* A kernel entry for op `idx` on one device of a TP group of `tp`. */
static hs_status_t add_kernel(wbuild_t *b, const hs_model_t *m, int32_t idx, const hs_gpu_t *g,
                              hs_dtype_t dt, double samples, int32_t tp, hs_phase_t ph,
                              bool recompute)
{
  /* the default practice (the only one replayed) as lowering sees it: the
   * model's op, but the loss with the unfused cross entropy's passes */
  hs_practice_t def;
  hs_practice_init(&def);
  hs_op_t tmp;
  const hs_op_t *op = hs_practice_op(&def, &m->ops[idx], tp, &tmp);
  hs_tg_entry_t *e = NULL;
  if (push(b, &e) != HS_OK)
    return HS_ENOMEM;
  double div = (op->tp_split == HS_TP_REPLICATE || tp <= 1) ? 1.0 : (double)tp;
  e->kind = HS_TG_KERNEL;
  e->op = idx;
  e->op_kind = op->kind;
  e->phase = (int16_t)ph;
  e->recompute = recompute;
  e->is_gemm = kind_is_gemm(op->kind);
  e->flops = (ph == HS_PHASE_FWD ? op->fwd_flops : op->bwd_flops) * samples / div;
  e->bytes = (ph == HS_PHASE_FWD ? op->fwd_mem_bytes : op->bwd_mem_bytes) * samples / div;
  e->predicted_s = hs_compute_op_s(g, dt, op, samples, tp, ph);
  e->n_kernels = (e->is_gemm && ph == HS_PHASE_BWD) ? 2 : 1;
  if (e->is_gemm && op->gemm_m > 0 && op->gemm_n > 0 && op->gemm_k > 0 && e->flops > 0) {
    /* batched products (attention heads, experts) keep their per-sample m
     * and repeat over the samples; plain GEMMs stack the samples into m */
    double mm = op->gemm_batch > 1 ? op->gemm_m : op->gemm_m * samples;
    double nn = op->gemm_n, kk = op->gemm_k;
    if (tp > 1 && (op->tp_split == HS_TP_COLUMN || op->tp_split == HS_TP_VOCAB))
      nn /= tp;
    else if (tp > 1 && op->tp_split == HS_TP_ROW)
      kk /= tp;
    e->m = HS_MAX((int64_t)llround(mm), 1);
    e->n = HS_MAX((int64_t)llround(nn), 1);
    e->k = HS_MAX((int64_t)llround(kk), 1);
    double per = 2.0 * (double)e->m * (double)e->n * (double)e->k;
    e->reps = HS_MAX((int64_t)llround(e->flops / e->n_kernels / per), 1);
  }
  return HS_OK;
}

static double moe_a2a_bytes(const hs_op_t *op, double samples)
{
  return op->out_bytes * (op->topk > 0 ? op->topk : 1) * samples;
}

static hs_status_t forward_walk(wbuild_t *b, const hs_model_t *m, const hs_gpu_t *g, hs_dtype_t dt,
                                int32_t first, int32_t last, double samples, int32_t tp,
                                bool recompute)
{
  for (int32_t i = first; i < last; i++) {
    const hs_op_t *op = &m->ops[i];
    bool moe = op->kind == HS_OP_MOE_EXPERT && tp > 1;
    if (moe && add_coll(b, HS_COLL_ALLTOALL, moe_a2a_bytes(op, samples)) != HS_OK)
      return HS_ENOMEM;
    if (add_kernel(b, m, i, g, dt, samples, tp, HS_PHASE_FWD, recompute) != HS_OK)
      return HS_ENOMEM;
    if (moe && add_coll(b, HS_COLL_ALLTOALL, moe_a2a_bytes(op, samples)) != HS_OK)
      return HS_ENOMEM;
    if (tp > 1 && op->tp_allreduce_fwd &&
        add_coll(b, HS_COLL_ALLREDUCE, op->out_bytes * samples) != HS_OK)
      return HS_ENOMEM;
  }
  return HS_OK;
}

static hs_status_t expand(const hs_model_t *m, const hs_plan_stage_t *stg, const hs_gpu_t *g,
                          hs_dtype_t dt, double samples, int32_t tp, hs_phase_t ph, hs_tg_work_t *out)
{
  wbuild_t b = {0};
  hs_status_t st = HS_OK;
  if (ph == HS_PHASE_FWD) {
    HS_CHECK(forward_walk(&b, m, g, dt, stg->op_first, stg->op_last, samples, tp, false));
  } else {
    if (stg->recompute == HS_RECOMPUTE_FULL) {
      HS_CHECK(forward_walk(&b, m, g, dt, stg->op_first, stg->op_last, samples, tp, true));
    } else if (stg->recompute == HS_RECOMPUTE_SELECTIVE) {
      for (int32_t i = stg->op_first; i < stg->op_last; i++)
        if (m->ops[i].kind == HS_OP_ATTENTION)
          HS_CHECK(add_kernel(&b, m, i, g, dt, samples, tp, HS_PHASE_FWD, true));
    }
    for (int32_t i = stg->op_last - 1; i >= stg->op_first; i--) {
      const hs_op_t *op = &m->ops[i];
      bool moe = op->kind == HS_OP_MOE_EXPERT && tp > 1;
      if (moe)
        HS_CHECK(add_coll(&b, HS_COLL_ALLTOALL, moe_a2a_bytes(op, samples)));
      HS_CHECK(add_kernel(&b, m, i, g, dt, samples, tp, HS_PHASE_BWD, false));
      if (moe)
        HS_CHECK(add_coll(&b, HS_COLL_ALLTOALL, moe_a2a_bytes(op, samples)));
      if (tp > 1 && op->tp_allreduce_bwd && i > 0)
        HS_CHECK(add_coll(&b, HS_COLL_ALLREDUCE, m->ops[i - 1].out_bytes * samples));
    }
  }
  out->e = b.e;
  out->n = (int32_t)b.n;
  for (int32_t k = 0; k < out->n; k++) {
    if (out->e[k].kind == HS_TG_KERNEL)
      out->predicted_compute_s += out->e[k].predicted_s;
    else
      out->coll_bytes += out->e[k].coll_bytes;
  }
  return HS_OK;
cleanup:
  free(b.e);
  return st;
}

/* The expansion must reproduce the template it mirrors. */
static bool matches(const hs_tg_work_t *w, const hs_tmpl_t *t)
{
  double t_s = hs_time_to_s(t->compute_ns);
  double tol = 1e-9 * (t->n + 1) + 1e-9 * t_s;
  if (fabs(w->predicted_compute_s - t_s) > tol)
    return false;
  return fabs(w->coll_bytes - t->coll_bytes) <= 1e-9 * (1.0 + t->coll_bytes);
}

void hs_taskgraph_free(hs_taskgraph_t *tg)
{
  if (!tg)
    return;
  for (int32_t e = 0; tg->execs && e < tg->n_execs; e++) {
    hs_tg_exec_t *x = &tg->execs[e];
    if (x->work)
      for (int32_t k = 0; k < 2 * x->v; k++)
        free(x->work[k].e);
    free(x->work);
    free(x->devices);
    free(x->order);
    free(x->out_first);
    free(x->out_count);
    free(x->in_count);
    free(x->buckets);
  }
  free(tg->execs);
  free(tg->pieces);
  free(tg->out_list);
  for (int32_t b = 0; tg->buckets && b < tg->n_buckets; b++)
    free(tg->buckets[b].holders);
  free(tg->buckets);
  free(tg->gpus.gpus);
  free(tg);
}

static void *dup_array(const void *src, size_t n, size_t size)
{
  void *p = hs_calloc(n ? n : 1, size);
  if (p && n)
    memcpy(p, src, n * size);
  return p;
}

/* The simulator's uncontended estimate of a collective (0 for groups of one
 * rank or nothing to move). */
static double estimate(const hs_topology_t *topo, hs_coll_op_t op, const int32_t *devices,
                       int32_t n, double bytes)
{
  if (n < 2 || !(bytes > 0))
    return 0.0;
  hs_coll_t c;
  hs_coll_init(&c);
  c.op = op;
  c.devices = devices;
  c.n = n;
  c.bytes = bytes;
  double s = hs_coll_estimate_s(topo, &c);
  return s > 0 ? s : 0.0;
}

/* Predictions of the communication the replay times: p2p pieces, gradient
 * buckets and blocking TP collectives, each alone on the network (what
 * validate compares the measured tasks with). O(pieces + buckets x holders
 * + collective entries) estimates. */
static hs_status_t predict_comm(hs_taskgraph_t *tg, const hs_topology_t *topo, hs_error_t *err)
{
  for (int32_t p = 0; p < tg->n_pieces; p++) {
    hs_tg_piece_t *pc = &tg->pieces[p];
    int32_t d[2] = {tg->execs[pc->src].devices[0], tg->execs[pc->dst].devices[0]};
    pc->predicted_s = d[0] == d[1] ? 0.0 : estimate(topo, HS_COLL_P2P, d, 2, pc->total_bytes);
  }
  for (int32_t b = 0; b < tg->n_buckets; b++) {
    hs_tg_bucket_t *bk = &tg->buckets[b];
    int32_t *d = hs_calloc((size_t)bk->n_holders + 1, sizeof *d);
    if (!d)
      return hs_error_set(err, HS_ENOMEM, "out of memory");
    for (int32_t h = 0; h < bk->n_holders; h++)
      d[h] = tg->execs[bk->holders[h]].devices[0];
    bk->predicted_s = estimate(topo, HS_COLL_ALLREDUCE, d, bk->n_holders, bk->bytes);
    free(d);
  }
  for (int32_t e = 0; e < tg->n_execs; e++) {
    hs_tg_exec_t *x = &tg->execs[e];
    for (int32_t w = 0; w < 2 * x->v; w++)
      for (int32_t k = 0; k < x->work[w].n; k++) {
        hs_tg_entry_t *en = &x->work[w].e[k];
        if (en->kind == HS_TG_COLL)
          en->coll_predicted_s = estimate(topo, en->coll_op, x->devices, x->tp, en->coll_bytes);
      }
  }
  return HS_OK;
}

hs_status_t hs_taskgraph_new(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                             hs_taskgraph_t **out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_topology_t *topo = NULL;
  hs_lowered_t low = {0};
  hs_taskgraph_t *tg = NULL;
  *out = NULL;
  HS_CHECK(hs_plan_validate(plan, m, c, NULL, err));
  if (!hs_practice_is_default(&plan->practice))
    return hs_error_set(err, HS_EINVAL,
                        "plan: attention/kernels/sequence_parallel/zero_stage/tp_comm_overlap/"
                        "dp_overlap/context_parallel/expert_parallel/grad_accum: the replay harness "
                        "runs the "
                        "default practice only (the default kernel set, " HS_KERNELS_DEFAULT ", no sequence, context or "
                        "expert parallelism, overlapped DP sync); replay the plan without these "
                        "options");
  HS_CHECK(hs_topology_new(c, &topo, err));
  HS_CHECK(hs__lower(m, c, topo, plan, &low, err));
  if (low.n_groups > 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "plan: sharding: SPMD-sharded stages (HAP plans with sharding[]) cannot "
                         "be replayed yet; replay the plan without its sharding list"));
  tg = hs_calloc(1, sizeof *tg);
  if (!tg)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  tg->precision = plan->precision;
  tg->async_send = plan->async_send;
  for (int32_t i = 0; i < plan->n_pipelines; i++)
    tg->n_stages_total += plan->pipelines[i].n_stages;
  tg->gpus.gpus = dup_array(c->gpus.gpus, c->gpus.n, sizeof *c->gpus.gpus);
  tg->gpus.n = c->gpus.n;
  tg->execs = hs_calloc((size_t)low.n_execs + 1, sizeof *tg->execs);
  tg->pieces = hs_calloc((size_t)low.n_pieces + 1, sizeof *tg->pieces);
  tg->out_list = dup_array(low.out_list, (size_t)low.n_out_list, sizeof(int32_t));
  tg->buckets = hs_calloc((size_t)low.n_buckets + 1, sizeof *tg->buckets);
  if (!tg->gpus.gpus || !tg->execs || !tg->pieces || !tg->out_list || !tg->buckets)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  tg->n_execs = low.n_execs;
  for (int32_t e = 0; e < low.n_execs; e++) {
    const hs_exec_t *lx = &low.execs[e];
    hs_tg_exec_t *x = &tg->execs[e];
    const hs_plan_pipeline_t *pl = &plan->pipelines[lx->pipeline];
    x->pipeline = lx->pipeline;
    x->rank = lx->rank;
    x->replica = lx->replica;
    x->v = lx->v;
    x->ranks = pl->n_stages / lx->v;
    x->tp = lx->tp;
    x->samples = lx->samples;
    x->m = lx->m;
    x->n_items = lx->n_items;
    x->n_buckets = lx->n_buckets;
    x->gpu = &tg->gpus.gpus[c->devices[lx->devices[0]].gpu];
    x->devices = dup_array(lx->devices, (size_t)lx->tp, sizeof(int32_t));
    x->order = dup_array(lx->order, (size_t)lx->n_items, sizeof *lx->order);
    x->out_first = dup_array(lx->out_first, (size_t)2 * lx->v, sizeof(int32_t));
    x->out_count = dup_array(lx->out_count, (size_t)2 * lx->v, sizeof(int32_t));
    x->in_count = dup_array(lx->in_count, (size_t)2 * lx->v, sizeof(int32_t));
    x->buckets = dup_array(lx->buckets, (size_t)lx->n_buckets, sizeof(int32_t));
    x->work = hs_calloc((size_t)2 * lx->v, sizeof *x->work);
    if (!x->devices || !x->order || !x->out_first || !x->out_count || !x->in_count ||
        !x->buckets || !x->work)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    for (int32_t ch = 0; ch < x->v; ch++) {
      const hs_plan_stage_t *stg = &pl->stages[ch * x->ranks + x->rank];
      double samples = stg->replicas[x->replica].share * pl->microbatch_size;
      for (int32_t ph = 0; ph < 2; ph++) {
        if (expand(m, stg, x->gpu, plan->precision, samples, x->tp, (hs_phase_t)ph,
                   &x->work[ch * 2 + ph]) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
        if (!matches(&x->work[ch * 2 + ph], &lx->tmpl[ch * 2 + ph]))
          HS_FAIL(hs_error_set(err, HS_EINTERNAL,
                               "task graph: pipelines[%d].stages[%d] %s: kernel list does not "
                               "match the simulator's template (%.9g s vs %.9g s)",
                               x->pipeline, ch * x->ranks + x->rank, ph ? "bwd" : "fwd",
                               x->work[ch * 2 + ph].predicted_compute_s,
                               hs_time_to_s(lx->tmpl[ch * 2 + ph].compute_ns)));
      }
    }
    x->optimizer_predicted_s = lx->optimizer_ns_d;
    /* lower.c times the optimizer as one memory-bound kernel of params x 32
     * bytes (fewer with ZeRO-1); invert that model for the bytes to move. */
    double t_move = x->optimizer_predicted_s - lx->fp8_weight_cast_s - x->gpu->launch_us * 1e-6;
    double bw = x->gpu->mem_bw_GBps * HS_GB * (x->gpu->mem_eff > 0 ? x->gpu->mem_eff : 1.0);
    x->optimizer_bytes = t_move > 0 ? t_move * bw : 0.0;
  }
  tg->n_pieces = low.n_pieces;
  for (int32_t p = 0; p < low.n_pieces; p++) {
    const hs_piece_t *lp = &low.pieces[p];
    tg->pieces[p] = (hs_tg_piece_t){.src = lp->src, .dst = lp->dst, .dst_chunk = lp->dst_chunk,
                                    .src_stage = lp->src_stage, .phase = lp->phase,
                                    .total_bytes = lp->total_bytes};
  }
  tg->n_buckets = low.n_buckets;
  for (int32_t b = 0; b < low.n_buckets; b++) {
    const hs_bucket_t *lb = &low.buckets[b];
    hs_tg_bucket_t *tb = &tg->buckets[b];
    tb->op_first = lb->op_first;
    tb->op_last = lb->op_last;
    tb->bytes = lb->bytes;
    tb->n_holders = lb->n_holders;
    tb->tp = lb->tp;
    tb->holders = dup_array(lb->holders, (size_t)lb->n_holders, sizeof(int32_t));
    if (!tb->holders)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
  HS_CHECK(predict_comm(tg, topo, err));
  *out = tg;
  tg = NULL;
cleanup:
  hs_taskgraph_free(tg);
  hs__lowered_destroy(&low);
  hs_topology_free(topo);
  return st;
}
