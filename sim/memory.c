/*
 * memory.c - peak memory per device under a plan.
 *
 * Per device of a TP group:
 *   training state  = params_held x (2 weights + 2 grads + 12 optimizer), the
 *                     12 bytes of fp32 master weights and Adam moments divided
 *                     by the op's DP group size N under ZeRO-1 (optimizer_sharding
 *                     or zero_stage 1), also the gradients under ZeRO-2 and the
 *                     weights under ZeRO-3, which adds the gathered weights of
 *                     two blocks (in use and prefetched); the gradients take
 *                     4 bytes when they are kept in fp32 (grad_reduce_dtype
 *                     fp32, grad_accum add_fp32: hs_practice_grad_bytes);
 *                     a stage holding the LM head but not the word embedding
 *                     it is tied to holds a copy of it (Megatron-LM); expert
 *                     parallelism E holds 1/E of the MoE experts, their ZeRO
 *                     group being the holders of the same experts (N / E);
 *                     context parallelism C is C replicas of 1/C of each
 *                     microbatch, so its activations are 1/C;
 *   activations     = max over the schedule's prefix of sum over chunks of
 *                     (microbatches in flight in that chunk) x (bytes saved per
 *                     microbatch of that chunk), plus, with full recomputation,
 *                     the full activations of one block being recomputed.
 * Saved bytes per microbatch follow Korthikanti et al.: every op's saved bytes
 * x samples, the TP-sharded part divided by the TP degree; selective drops
 * the attention scores; full keeps only each block's input.
 * No allocator fragmentation or framework workspace is added: the numbers are
 * what the formulas say, so a hand count reproduces them.
 */
#include "hs_sim.h"

#include <stdlib.h>
#include <string.h>

static double op_saved(const hs_op_t *op, hs_recompute_t rc, int32_t tp)
{
  double b = rc == HS_RECOMPUTE_SELECTIVE ? op->saved_bytes_selective : op->saved_bytes;
  return (op->saved_tp_sharded && tp > 1) ? b / tp : b;
}

/* Bytes saved per sample for a stage under its recomputation mode, and the
 * transient bytes of the largest block recomputed at once (full only). */
static void stage_act(const hs_model_t *m, const hs_practice_t *pr, const hs_plan_stage_t *stg,
                      int32_t tp, double *saved, double *transient)
{
  hs_op_t tmp;
  *saved = 0.0;
  *transient = 0.0;
  if (stg->recompute != HS_RECOMPUTE_FULL) {
    for (int32_t i = stg->op_first; i < stg->op_last; i++)
      *saved += op_saved(hs_practice_op(pr, &m->ops[i], tp, &tmp), stg->recompute, tp);
    return;
  }
  /* sequence parallelism keeps each block's input sharded */
  double in_div = pr->sequence_parallel && tp > 1 ? (double)tp : 1.0;
  /* full: keep the input of every block (the output of the op before it) and
   * every op outside blocks; recompute one block at a time */
  double block = 0.0;
  for (int32_t i = stg->op_first; i < stg->op_last; i++) {
    const hs_op_t *op = hs_practice_op(pr, &m->ops[i], tp, &tmp);
    if (op->layer < 0) {
      *saved += op_saved(op, HS_RECOMPUTE_NONE, tp);
      continue;
    }
    bool starts = i == stg->op_first || m->ops[i - 1].layer != op->layer;
    if (starts) {
      *transient = block > *transient ? block : *transient;
      block = 0.0;
      if (i > 0)
        *saved += m->ops[i - 1].out_bytes / in_div;
    }
    block += op_saved(op, HS_RECOMPUTE_NONE, tp);
  }
  *transient = block > *transient ? block : *transient;
}

/* Does executor (pipeline pl, rank r) hold op? */
static bool rank_holds(const hs_plan_pipeline_t *pl, int32_t v, int32_t r, int32_t op)
{
  int32_t ranks = pl->n_stages / v;
  for (int32_t ch = 0; ch < v; ch++) {
    const hs_plan_stage_t *stg = &pl->stages[ch * ranks + r];
    if (op >= stg->op_first && op < stg->op_last)
      return true;
  }
  return false;
}

/* The rule of lower.c's tied_copy, on the plan: op shares weights with
 * another op and no executor holds both, so every holder of op keeps a
 * copy of the shared weights. */
static bool tied_copy(const hs_model_t *m, const hs_plan_t *plan, int32_t v, int32_t op)
{
  const hs_op_t *o = &m->ops[op];
  if (!(o->tied_params > 0.0) || o->tied_op < 0 || o->tied_op >= (int32_t)m->n_ops || o->tied_op == op)
    return false;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t r = 0; r < pl->n_stages / v; r++)
      if (rank_holds(pl, v, r, op) && rank_holds(pl, v, r, o->tied_op))
        return false;
  }
  return true;
}

hs_status_t hs_memory_per_device(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                                 double *out, hs_error_t *err)
{
  return hs_memory_breakdown(m, c, plan, out, NULL, err);
}

/* The peak of the saved activations along one rank's schedule order
 * (n items): each forward of chunk ch adds per_chunk[ch] bytes, each
 * backward frees them. inflight: scratch of v counters (zeroed here). */
static double peak_activation(const hs_sched_item_t *order, int32_t n, const double *per_chunk,
                              int32_t *inflight, int32_t v)
{
  memset(inflight, 0, sizeof(int32_t) * (size_t)v);
  double peak_act = 0.0, cur = 0.0;
  for (int32_t k = 0; k < n; k++) {
    int32_t ch = order[k].chunk;
    if (order[k].phase == HS_PHASE_FWD) {
      cur += per_chunk[ch];
      inflight[ch]++;
      if (cur > peak_act)
        peak_act = cur;
    } else {
      cur -= per_chunk[ch];
      inflight[ch]--;
    }
  }
  return peak_act;
}

/* What every replica's memory reads besides its own stage: the plan, the
 * per-op tables (holders: TP groups holding the op, for ZeRO; tied: it
 * keeps its own copy of tied weights; split: HAP SPMD splits its
 * parameters, NULL without shards) and scratch for one pipeline's order. */
typedef struct mem_ctx {
  const hs_model_t *m;
  const hs_plan_t *plan;
  const hs_schedule_t *sc;
  int32_t v, ep, zs;
  const int32_t *holders;
  const uint8_t *tied, *split;
  double *per_chunk;       /* v */
  int32_t *inflight;       /* v */
  hs_sched_item_t *order;  /* 2 x microbatches x v of the pipeline at hand */
} mem_ctx_t;

/* One replica's peak: its total and the parts that add up to it. */
typedef struct rep_mem {
  double total;
  hs_mem_parts_t parts;
} rep_mem_t;

/* Is rank r of pipeline pl an SPMD stage (as lowered): single-device
 * replicas, no interleaving, a plan with split parameters? */
static bool rank_spmd(const mem_ctx_t *x, const hs_plan_pipeline_t *pl, int32_t r)
{
  bool spmd = x->split && x->v == 1 && pl->stages[r].n_replicas > 1;
  for (int32_t q = 0; spmd && q < pl->stages[r].n_replicas; q++)
    spmd = pl->stages[r].replicas[q].n_devices == 1;
  return spmd;
}

/* Do replica qa of pipeline a and replica qb of pipeline b, both at rank
 * r, read the same inputs in replica_memory (so hold the same bytes, bit
 * for bit)? Their stages' op ranges, recomputation, TP degree, share,
 * microbatches and schedule order, and the SPMD flag, are equal. O(v). */
static bool same_replica_inputs(const mem_ctx_t *x, const hs_plan_pipeline_t *a, int32_t qa,
                                const hs_plan_pipeline_t *b, int32_t qb, int32_t r)
{
  if (a->n_stages != b->n_stages || a->microbatch_size != b->microbatch_size ||
      a->n_microbatches != b->n_microbatches || qb >= b->stages[r].n_replicas)
    return false;
  const hs_plan_stage_t *sa = &a->stages[r], *sb = &b->stages[r];
  if (sa->warmup != sb->warmup || (sa->order == NULL) != (sb->order == NULL) ||
      (sa->order && sa->order != sb->order && strcmp(sa->order, sb->order) != 0))
    return false;
  if (rank_spmd(x, a, r) != rank_spmd(x, b, r))
    return false;
  int32_t ranks = a->n_stages / x->v;
  for (int32_t ch = 0; ch < x->v; ch++) {
    const hs_plan_stage_t *ca = &a->stages[ch * ranks + r], *cb = &b->stages[ch * ranks + r];
    if (ca->op_first != cb->op_first || ca->op_last != cb->op_last || ca->recompute != cb->recompute ||
        ca->replicas[qa].n_devices != cb->replicas[qb].n_devices ||
        ca->replicas[qa].share != cb->replicas[qb].share)
      return false;
  }
  return true;
}

/* Training state of one replica's ops of chunk stage stg (TP degree tp):
 * added to *state (every byte), *state_w (weights), *state_opt (optimizer);
 * under ZeRO-3 the running block's parameters in *layer_p (carried over
 * from the chunk before, as a block may continue there) and the largest
 * block's in *max_layer_p. */
static void chunk_state(const mem_ctx_t *x, const hs_plan_stage_t *stg, int32_t q, int32_t tp,
                        bool spmd, double *state, double *state_w, double *state_opt,
                        double *layer_p, double *max_layer_p)
{
  const hs_model_t *m = x->m;
  const hs_plan_t *plan = x->plan;
  for (int32_t op = stg->op_first; op < stg->op_last; op++) {
    const hs_op_t *o = &m->ops[op];
    double p = (o->tp_split == HS_TP_REPLICATE || tp <= 1) ? o->params : o->params / tp;
    hs_state_bytes_t sb = hs_precision_state_bytes(plan->precision);
    /* an fp32 gradient buffer (grad_reduce_dtype fp32, add_fp32): 4 bytes */
    double opt = sb.optimizer, weight = sb.weight;
    double grad = hs_practice_grad_bytes(&plan->practice, plan->precision);
    /* expert parallelism: 1/E of the experts, shared with the holders of
     * the same experts (the expert data-parallel group) */
    int32_t dpn = x->holders[op];
    if (x->ep > 1 && o->kind == HS_OP_MOE_EXPERT) {
      p /= x->ep;
      dpn /= x->ep;
    }
    if (spmd && x->split[op]) {
      p = o->params * stg->replicas[q].share; /* its slice, no replicas to share with */
    } else if (x->zs >= 1 && dpn > 1) {
      /* ZeRO (Rajbhandari et al. 2020), per parameter, N = DP group:
       * 1: 2 + 2 + 12/N, 2: 2 + (2 + 12)/N, 3: (2 + 2 + 12)/N */
      opt /= dpn;
      if (x->zs >= 2)
        grad /= dpn;
      if (x->zs >= 3)
        weight /= dpn;
    }
    if (x->tied[op]) /* its own copy of the tied weights */
      p += (o->tp_split == HS_TP_REPLICATE || tp <= 1) ? o->tied_params : o->tied_params / tp;
    *state += p * (weight + grad + opt);
    *state_w += p * weight;
    *state_opt += p * opt;
    if (x->zs >= 3 && x->holders[op] > 1) {
      if (op > stg->op_first && m->ops[op - 1].layer != o->layer)
        *layer_p = 0.0;
      *layer_p += p;
      *max_layer_p = *layer_p > *max_layer_p ? *layer_p : *max_layer_p;
    }
  }
}

/* The peak memory of replica q at rank r of pipeline pl (x->order holds
 * room for its schedule): state, peak saved activations along the rank's
 * order, and the workspace (a recomputed block, ZeRO-3's gathered ones).
 * O(ops of the rank x ops' practice + microbatches x v). */
static rep_mem_t replica_memory(mem_ctx_t *x, const hs_plan_pipeline_t *pl, int32_t r, int32_t q,
                                bool spmd)
{
  int32_t v = x->v, ranks = pl->n_stages / v;
  int32_t tp = pl->stages[r].replicas[q].n_devices;
  double state = 0.0, state_w = 0.0, state_opt = 0.0;
  double transient = 0.0;
  double layer_p = 0.0, max_layer_p = 0.0; /* ZeRO-3: running and largest block's parameters */
  for (int32_t ch = 0; ch < v; ch++) {
    const hs_plan_stage_t *stg = &pl->stages[ch * ranks + r];
    double samples = stg->replicas[q].share * pl->microbatch_size;
    chunk_state(x, stg, q, tp, spmd, &state, &state_w, &state_opt, &layer_p, &max_layer_p);
    double saved, tr;
    stage_act(x->m, &x->plan->practice, stg, tp, &saved, &tr);
    x->per_chunk[ch] = saved * samples;
    transient = tr * samples > transient ? tr * samples : transient;
  }
  hs_sched_params_t sp = {.p = ranks, .v = v, .m = pl->n_microbatches, .rank = r,
                          .warmup = pl->stages[r].warmup, .order = pl->stages[r].order};
  x->sc->order(&sp, x->order);
  double peak_act =
      peak_activation(x->order, 2 * pl->n_microbatches * v, x->per_chunk, x->inflight, v);
  /* ZeRO-3 / FSDP: the block in use and the prefetched next one are
   * gathered in full (2-byte weights) */
  double gathered = 2.0 * hs_precision_state_bytes(x->plan->precision).weight * max_layer_p;
  /* ZeRO-3's gathered blocks count as workspace */
  return (rep_mem_t){state + peak_act + transient + gathered,
                     {state_w, state - state_w - state_opt, state_opt, peak_act, transient + gathered}};
}

/* The per-op tables of x (holders, tied, split), allocated and filled.
 * HS_ENOMEM leaves what was allocated in x for the caller to free. */
static hs_status_t mem_tables(mem_ctx_t *x, int32_t **holders, uint8_t **tied, uint8_t **split)
{
  const hs_model_t *m = x->m;
  const hs_plan_t *plan = x->plan;
  *holders = hs_calloc(m->n_ops, sizeof **holders);
  *tied = hs_calloc(m->n_ops, 1);
  if (!*holders || !*tied)
    return HS_ENOMEM;
  if (plan->n_shards > 0) {
    *split = hs_calloc(m->n_ops, 1);
    if (!*split)
      return HS_ENOMEM;
    for (int32_t k = 0; k < plan->n_shards; k++)
      if (plan->shards[k].op >= 0 && (size_t)plan->shards[k].op < m->n_ops)
        (*split)[plan->shards[k].op] = (plan->shards[k].dim & HS_SHARD_BATCH) == 0;
  }
  for (int32_t i = 0; i < plan->n_pipelines; i++)
    for (int32_t s = 0; s < plan->pipelines[i].n_stages; s++) {
      const hs_plan_stage_t *stg = &plan->pipelines[i].stages[s];
      for (int32_t op = stg->op_first; op < stg->op_last && (size_t)op < m->n_ops; op++)
        (*holders)[op] += stg->n_replicas;
    }
  /* once per op, not per replica: tied_copy walks every pipeline, so asking
   * it per replica grew as the square of the pipelines (issue 35) */
  for (int32_t op = 0; op < (int32_t)m->n_ops; op++)
    (*tied)[op] = tied_copy(m, plan, x->v, op);
  x->holders = *holders;
  x->tied = *tied;
  x->split = *split;
  return HS_OK;
}

/* Writes rm to every device of replica rp (out, and parts when asked). */
static void put_replica(const hs_cluster_t *c, const hs_plan_replica_t *rp, const rep_mem_t *rm,
                        double *out, hs_mem_parts_t *parts)
{
  for (int32_t d = 0; d < rp->n_devices; d++)
    if (rp->devices[d] >= 0 && (size_t)rp->devices[d] < c->n_devices) {
      out[rp->devices[d]] = rm->total;
      if (parts)
        parts[rp->devices[d]] = rm->parts;
    }
}

/* Replicas whose inputs equal those of the replica before them in their
 * stage, or of the same replica in the pipeline before, take its result
 * (same_replica_inputs: the same arithmetic, so the same bits): data
 * parallelism, as replicas or as pipelines, is then computed once per
 * rank instead of once per replica. */
hs_status_t hs_memory_breakdown(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                                double *out, hs_mem_parts_t *parts, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t *holders = NULL, *off = NULL;
  uint8_t *tied = NULL, *split = NULL;
  rep_mem_t *cur = NULL, *prev = NULL; /* per (rank, replica) of this and the last pipeline */
  memset(out, 0, sizeof(double) * c->n_devices);
  if (parts)
    memset(parts, 0, sizeof *parts * c->n_devices);
  mem_ctx_t x = {.m = m, .plan = plan, .v = plan->chunks > 0 ? plan->chunks : 1,
                 .ep = plan->practice.expert_parallel > 1 ? plan->practice.expert_parallel : 1,
                 .zs = hs_plan_zero_stage(plan), .sc = hs_schedule_find(plan->schedule)};
  if (!x.sc)
    return hs_error_set(err, HS_EINVAL, "schedule: unknown schedule \"%s\"", plan->schedule);
  int32_t max_reps = 0, max_stages = 0;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    int32_t n = 0;
    for (int32_t s = 0; s < plan->pipelines[i].n_stages; s++)
      n += plan->pipelines[i].stages[s].n_replicas;
    max_reps = HS_MAX(max_reps, n);
    max_stages = HS_MAX(max_stages, plan->pipelines[i].n_stages);
  }
  x.per_chunk = hs_calloc((size_t)x.v * 2, sizeof *x.per_chunk);
  x.inflight = hs_calloc((size_t)x.v, sizeof *x.inflight);
  cur = hs_calloc((size_t)max_reps + 1, sizeof *cur);
  prev = hs_calloc((size_t)max_reps + 1, sizeof *prev);
  off = hs_calloc((size_t)max_stages * 2 + 2, sizeof *off); /* this and the last pipeline's */
  if (!x.per_chunk || !x.inflight || !cur || !prev || !off ||
      mem_tables(&x, &holders, &tied, &split) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t *cur_off = off, *prev_off = off + max_stages + 1;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    const hs_plan_pipeline_t *last = i > 0 ? &plan->pipelines[i - 1] : NULL;
    int32_t ranks = pl->n_stages / x.v;
    free(x.order);
    x.order = hs_calloc((size_t)2 * pl->n_microbatches * x.v, sizeof *x.order);
    if (!x.order)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    cur_off[0] = 0;
    for (int32_t r = 0; r < ranks; r++) {
      bool spmd = rank_spmd(&x, pl, r);
      cur_off[r + 1] = cur_off[r] + pl->stages[r].n_replicas;
      for (int32_t q = 0; q < pl->stages[r].n_replicas; q++) {
        rep_mem_t *rm = &cur[cur_off[r] + q];
        if (q > 0 && same_replica_inputs(&x, pl, q, pl, q - 1, r))
          *rm = rm[-1];
        else if (last && same_replica_inputs(&x, pl, q, last, q, r))
          *rm = prev[prev_off[r] + q];
        else
          *rm = replica_memory(&x, pl, r, q, spmd);
        put_replica(c, &pl->stages[r].replicas[q], rm, out, parts);
      }
    }
    rep_mem_t *t = cur;
    cur = prev, prev = t;
    int32_t *to = cur_off;
    cur_off = prev_off, prev_off = to;
  }
cleanup:
  free(holders);
  free(tied);
  free(split);
  free(x.per_chunk);
  free(x.inflight);
  free(x.order);
  free(cur);
  free(prev);
  free(off);
  return st;
}
