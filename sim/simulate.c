/*
 * simulate.c - runs the lowered plan on the event engine and the flow
 * network, and fills the report.
 *
 * Each executor is a small state machine over its schedule order: for the
 * current item it waits for the item's inputs (pipeline pieces from the
 * neighbour stage) and, with blocking sends, for its previous sends; then it
 * walks the item's template: compute segments are engine events, blocking
 * TP collectives go through the network. After an item it posts its sends.
 * Gradient buckets run on the comm stream as the final backward of their ops
 * completes (the last microbatch's backward is cut at bucket boundaries, so
 * a bucket starts while the rest of that backward runs: PyTorch DDP /
 * Megatron overlap_grad_reduce); the optimizer step runs after the last
 * bucket. The iteration
 * ends when every executor has stepped its optimizer.
 *
 * Nothing here allocates per event: executors, sends and collectives are
 * preallocated from the lowering's sizes.
 */
#include "contention.h"
#include "lower.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
  X_READY,      /* can take the next step */
  X_COMPUTE,    /* compute segment running */
  X_COLL,       /* blocking TP collective running */
  X_WAIT_INPUT, /* waiting for pipeline pieces */
  X_WAIT_SEND,  /* blocking sends outstanding */
  X_OPTIMIZER,  /* optimizer step running */
  X_DONE
} xstate_t;

typedef struct send {
  hs_flow_t flow;
  hs_event_t ev;        /* latency wait */
  struct sim *sim;
  int32_t piece;
  int32_t mb;
  int32_t phase;        /* phase at the receiver */
  bool sync;
  hs_time_t t_post;     /* when the sender posted it */
  struct send *next_free;
} send_t;

typedef struct send_slab {
  struct send_slab *next;
  size_t n;
  send_t sends[];
} send_slab_t;

typedef struct xrun {
  hs_event_t ev;
  hs_coll_t coll;
  uint32_t tp_memo_hint[2]; /* per op parity: its last TP collective's memo_choice (a TP group
                               alternates reduce-scatter and all-gather under SP, else runs
                               all-reduces; a stale hint costs one comparison) */
  struct sim *sim;
  int32_t id;
  xstate_t state;
  int32_t pc, seg;
  int32_t *need;        /* [ (mb * v + chunk) * 2 + phase ] pieces still to arrive */
  int32_t sends_pending;
  int32_t *bwd_done;    /* per chunk: backward items finished */
  int32_t *final_low;   /* per chunk: lowest op whose final backward is done (INT32_MAX none) */
  int32_t bucket_head;
  bool head_counted;
  bool compute_done;
  int32_t buckets_done;
  int8_t ov_phase;      /* tp_comm_overlap: 0 none, 1 compute before the overlapped GEMM,
                           2 GEMM and collective running together */
  int8_t ov_pending;    /* phase 2: of the GEMM and the collective, how many still run */
  bool side_pending;    /* the segment's side collective (hs_seg_t.side_bytes) still runs */
  bool side_wait;       /* compute done, waiting for it */
  hs_time_t t_state;    /* when the current wait/compute began */
  hs_time_t busy_ns, comm_ns, idle_ns, send_wait_ns;
  hs_time_t t_compute_done, t_end;
  /* time breakdown (breakdown.c's partition of the iteration) */
  hs_time_t wait_in_ns;   /* waiting for pipeline input */
  hs_time_t pp_wait_ns;   /* ... of it while the awaited piece was on the wire */
  hs_time_t dp_wait_ns;   /* compute done, waiting for gradient buckets */
  hs_time_t opt_ns;       /* optimizer step */
  hs_time_t recomp_ns;    /* recomputed forwards */
  hs_time_t *rc_item_ns;  /* per chunk: recompute compute of one backward item */
  hs_time_t t_post_in;    /* post time of the last piece that arrived */
  /* the current item, for traces and recompute accounting */
  hs_time_t t_item, item_cum_ns, item_rc_ns, rc_end;
  hs_contention_t cont;   /* compute slowed by collectives beside it (contention.h) */
  /* under a stop time (hs_sim_opts_t.stop_at_s): [pc] = the least time
   * from the start of item pc to the iteration's end (its items'
   * full-speed compute, the pipeline's drain after its last backward:
   * stop_bounds), NULL without one */
  const hs_time_t *rem_ns;
} xrun_t;

typedef struct brun {
  int32_t arrived;
  int32_t colls_live;
  hs_coll_t *colls;     /* tp collectives */
  hs_time_t t_start;
  struct sim *sim;
  int32_t id;
} brun_t;

/* A group's rendezvous (lower.h, hs_group_t): a collective starts when the
 * last member arrives, as one collective per TP rank. Blocking ones hold
 * their members until done; side ones run beside the members' compute.
 * Members run the same templates in the same order, so the k-th arrival
 * of every member is the same collective, and one is in flight at a time. */
typedef struct grun {
  int32_t arrived;
  int32_t live;          /* TP-rank collectives still running */
  bool side;             /* the collective in flight is a side collective */
  hs_coll_op_t op;
  double bytes;
  hs_coll_t *colls;      /* tp */
  struct sim *sim;
  int32_t id;
} grun_t;

typedef struct bcoll_ctx {
  brun_t *b;
} bcoll_ctx_t;

typedef struct sim {
  const hs_model_t *model;
  const hs_cluster_t *cluster;
  const hs_plan_t *plan;
  hs_lowered_t low;
  hs_engine_t eng;
  hs_topology_t *topo;
  hs_net_t *net;
  xrun_t *x;
  brun_t *b;
  grun_t *g;
  /* the send pool, grown in slabs as sends are posted (a pipeline has a
   * few in flight per executor; the bound below is every piece of every
   * microbatch at once, 1 GB at 100,352 GPUs if allocated up front) */
  struct send_slab *slabs;
  send_t *free_sends;
  size_t sends_made, sends_max; /* sends in slabs; the most the plan can have posted */
  hs_status_t failure;
  hs_error_t *err;
  hs_trace_t *trace;
  uint64_t n_flows;
  bool contention;       /* some executor's GPU has overlap_slowdown > 0 and the plan
                            has overlap_contention on */
  /* hs_sim_opts_t.stop_at_s as the last instant to run to (HS_TIME_MAX:
   * none); stopped once an executor is known to end after it */
  hs_time_t stop_until;
  hs_time_t *rem_all;    /* the executors' rem_ns arrays, one allocation */
  bool stopped;
} sim_t;

static void x_advance(sim_t *s, xrun_t *xr);
static void fail(sim_t *s, hs_status_t st, const char *what);

/* ---- overlap contention (contention.h) ----------------------------------------- */

/* A collective involving xr's devices, beside its compute stream, starts or
 * ends: a running compute segment changes speed and its end moves. */
static void x_comm(sim_t *s, xrun_t *xr, bool start)
{
  if (!s->contention)
    return;
  hs_time_t left = hs__contention(&xr->cont, start ? HS_CONT_COMM_START : HS_CONT_COMM_END,
                                  s->eng.now, 0);
  if (left < 0 || xr->state != X_COMPUTE || !hs_event_pending(&xr->ev))
    return;
  hs_engine_cancel(&s->eng, &xr->ev);
  if (hs_engine_after(&s->eng, &xr->ev, left, 0) != HS_OK)
    fail(s, HS_ENOMEM, "rescheduling compute");
}

/* Schedules xr's compute segment of d full-speed ns (stretched while a
 * collective runs beside it). */
static void x_compute(sim_t *s, xrun_t *xr, hs_time_t d)
{
  if (s->contention)
    d = hs__contention(&xr->cont, HS_CONT_COMPUTE_START, s->eng.now, d);
  if (hs_engine_after(&s->eng, &xr->ev, d, 0) != HS_OK)
    fail(s, HS_ENOMEM, "scheduling compute");
}

static void fail(sim_t *s, hs_status_t st, const char *what)
{
  if (s->failure == HS_OK) {
    s->failure = st;
    hs_error_set(s->err, st, "simulation: %s: %s", what, hs_status_message(st));
  }
  s->eng.stop = true;
}

/* a + b for non-negative times, saturating at HS_TIME_MAX as the clock
 * does (an absurd model's items can each be near it) */
static inline hs_time_t time_add_sat(hs_time_t a, hs_time_t b)
{
  return b > HS_TIME_MAX - a ? HS_TIME_MAX : a + b;
}

static inline int32_t need_idx(const hs_exec_t *ex, int32_t mb, int32_t chunk, int32_t phase)
{
  return ((mb * ex->v + chunk) << 1) + phase;
}

/* ---- sends ------------------------------------------------------------------- */

static void send_arrived(sim_t *s, send_t *sd)
{
  const hs_piece_t *pc = &s->low.pieces[sd->piece];
  xrun_t *dst = &s->x[pc->dst];
  const hs_exec_t *dx = &s->low.execs[pc->dst];
  dst->need[need_idx(dx, sd->mb, pc->dst_chunk, sd->phase)]--;
  xrun_t *src = &s->x[pc->src];
  dst->t_post_in = sd->t_post;
  if (s->trace)
    hs_trace_send(s->trace, s->low.execs[pc->src].devices[0], s->low.execs[pc->dst].devices[0],
                  sd->phase == HS_PHASE_FWD, sd->mb, sd->t_post, s->eng.now, pc->total_bytes);
  if (s->trace)
    for (int32_t k = 0; k < pc->n_hops; k++)
      hs_trace_link_span(s->trace, pc->hops[k].link, sd->phase == HS_PHASE_FWD, sd->flow.t_start,
                         s->eng.now, pc->bytes * pc->hops[k].weight);
  bool was_sync = sd->sync;
  sd->next_free = s->free_sends;
  s->free_sends = sd;
  if (was_sync) {
    src->sends_pending--;
    if (src->state == X_WAIT_SEND && src->sends_pending == 0)
      x_advance(s, src);
  }
  if (dst->state == X_WAIT_INPUT)
    x_advance(s, dst);
}

static void send_flow_done(hs_net_t *net, hs_flow_t *f)
{
  send_t *sd = HS_CONTAINER_OF(f, send_t, flow);
  send_arrived(sd->sim, sd);
}

static void send_latency_done(hs_engine_t *eng, hs_event_t *ev)
{
  send_t *sd = HS_CONTAINER_OF(ev, send_t, ev);
  sim_t *s = sd->sim;
  const hs_piece_t *pc = &s->low.pieces[sd->piece];
  if (pc->bytes <= 0.0 || pc->n_hops == 0) {
    sd->flow.t_start = eng->now;
    send_arrived(s, sd);
    return;
  }
  memset(&sd->flow, 0, sizeof sd->flow);
  sd->flow.bytes = pc->bytes;
  sd->flow.hops = pc->hops;
  sd->flow.n_hops = pc->n_hops;
  sd->flow.done = send_flow_done;
  sd->flow.ctx = sd;
  s->n_flows++;
  hs_status_t st = hs_net_flow_start(s->net, &sd->flow);
  if (st != HS_OK)
    fail(s, st, "starting a pipeline transfer");
}

/* A free send, from a new slab when none is left (twice the sends made so
 * far, at least 256, never past sends_max); NULL after fail() (out of
 * memory, or more sends posted than the plan has pieces: a bug). O(1)
 * amortized. */
static send_t *send_get(sim_t *s)
{
  if (!s->free_sends) {
    size_t n = HS_MIN(HS_MAX(s->sends_made, (size_t)256), s->sends_max - s->sends_made);
    if (n == 0) {
      fail(s, HS_EINTERNAL, "send pool exhausted");
      return NULL;
    }
    send_slab_t *sl = hs_calloc(1, sizeof *sl + n * sizeof(send_t));
    if (!sl) {
      fail(s, HS_ENOMEM, "allocating sends");
      return NULL;
    }
    sl->n = n;
    sl->next = s->slabs;
    s->slabs = sl;
    s->sends_made += n;
    for (size_t k = n; k-- > 0;) { /* the slab's first send pops first */
      sl->sends[k].next_free = s->free_sends;
      s->free_sends = &sl->sends[k];
    }
  }
  send_t *sd = s->free_sends;
  s->free_sends = sd->next_free;
  return sd;
}

static void post_sends(sim_t *s, xrun_t *xr, const hs_exec_t *ex, const hs_sched_item_t *it)
{
  int32_t key = it->chunk * 2 + it->phase;
  int32_t first = ex->out_first[key], n = ex->out_count[key];
  bool sync = !s->plan->async_send;
  for (int32_t k = 0; k < n; k++) {
    send_t *sd = send_get(s);
    if (!sd)
      return;
    sd->piece = s->low.out_list[first + k];
    sd->mb = it->mb;
    sd->phase = it->phase;
    sd->sync = sync;
    sd->sim = s;
    sd->t_post = s->eng.now;
    if (sync)
      xr->sends_pending++;
    hs_event_init(&sd->ev, send_latency_done);
    if (hs_engine_after(&s->eng, &sd->ev, s->low.pieces[sd->piece].latency_ns, 1) != HS_OK)
      fail(s, HS_ENOMEM, "scheduling a send");
  }
}

/* ---- gradient buckets and optimizer --------------------------------------------- */

static void x_try_finish(sim_t *s, xrun_t *xr);

static bool bucket_ready_for(sim_t *s, xrun_t *xr, const hs_bucket_t *bk)
{
  if (xr->compute_done)
    return true;
  if (!s->plan->practice.dp_overlap)
    return false; /* Megatron-LM 2021 local DDP: after the flush */
  const hs_exec_t *ex = &s->low.execs[xr->id];
  const hs_plan_pipeline_t *pl = &s->plan->pipelines[ex->pipeline];
  int32_t ranks = pl->n_stages / ex->v;
  for (int32_t ch = 0; ch < ex->v; ch++) {
    const hs_plan_stage_t *stg = &pl->stages[ch * ranks + ex->rank];
    if (bk->op_first >= stg->op_first && bk->op_first < stg->op_last)
      return xr->final_low[ch] <= bk->op_first;
  }
  return false;
}

static void bucket_coll_done(hs_coll_t *c);

static void bucket_launch(sim_t *s, int32_t b)
{
  const hs_bucket_t *bk = &s->low.buckets[b];
  brun_t *br = &s->b[b];
  br->t_start = s->eng.now;
  br->colls_live = bk->tp;
  for (int32_t k = 0; k < bk->n_holders; k++)
    x_comm(s, &s->x[bk->holders[k]], true);
  for (int32_t j = 0; j < bk->tp; j++) {
    hs_coll_t *c = &br->colls[j];
    memset(c, 0, sizeof *c);
    c->op = bk->op;
    c->devices = &bk->devices[j * bk->n_holders];
    c->n = bk->n_holders;
    c->bytes = bk->bytes;
    c->done = bucket_coll_done;
    c->ctx = br;
    s->n_flows++;
    hs_status_t st = hs_coll_start(s->net, c, s->err);
    if (st != HS_OK) {
      fail(s, st, "starting a gradient all-reduce");
      return;
    }
  }
}

static void x_bucket_step(sim_t *s, xrun_t *xr)
{
  const hs_exec_t *ex = &s->low.execs[xr->id];
  if (xr->bucket_head >= ex->n_buckets || xr->head_counted)
    return;
  int32_t b = ex->buckets[xr->bucket_head];
  const hs_bucket_t *bk = &s->low.buckets[b];
  if (!bucket_ready_for(s, xr, bk))
    return;
  xr->head_counted = true;
  if (++s->b[b].arrived == bk->n_holders)
    bucket_launch(s, b);
}

static void bucket_coll_done(hs_coll_t *c)
{
  brun_t *br = c->ctx;
  sim_t *s = br->sim;
  if (--br->colls_live > 0)
    return;
  const hs_bucket_t *bk = &s->low.buckets[br->id];
  for (int32_t k = 0; k < bk->n_holders; k++)
    x_comm(s, &s->x[bk->holders[k]], false);
  if (s->trace)
    for (int32_t k = 0; k < bk->n_holders; k++)
      hs_trace_dp(s->trace, &s->low.execs[bk->holders[k]], br->t_start, s->eng.now, bk->bytes);
  for (int32_t k = 0; k < bk->n_holders; k++) {
    xrun_t *xr = &s->x[bk->holders[k]];
    xr->bucket_head++;
    xr->head_counted = false;
    xr->buckets_done++;
    x_bucket_step(s, xr);
    x_try_finish(s, xr);
  }
}

static void x_event(hs_engine_t *eng, hs_event_t *ev);

static void x_try_finish(sim_t *s, xrun_t *xr)
{
  const hs_exec_t *ex = &s->low.execs[xr->id];
  if (!xr->compute_done || xr->state != X_READY || xr->buckets_done < ex->n_buckets)
    return;
  xr->state = X_OPTIMIZER;
  xr->t_state = s->eng.now;
  xr->dp_wait_ns = s->eng.now - xr->t_compute_done;
  if (hs_engine_after(&s->eng, &xr->ev, hs_time_from_s(ex->optimizer_ns_d), 0) != HS_OK)
    fail(s, HS_ENOMEM, "scheduling the optimizer");
}

/* ---- executor state machine ---------------------------------------------------- */

static void x_coll_done(hs_coll_t *c)
{
  xrun_t *xr = HS_CONTAINER_OF(c, xrun_t, coll);
  sim_t *s = xr->sim;
  if (xr->ov_phase == 2)
    x_comm(s, xr, false); /* the GEMM beside it, if still running, speeds up */
  if (xr->ov_phase == 2 && --xr->ov_pending > 0) {
    if (s->trace)
      hs_trace_tp(s->trace, &s->low.execs[xr->id], hs_coll_op_name(c->op), c->t_start, s->eng.now,
                  c->bytes);
    return; /* the GEMM it overlaps is still running */
  }
  xr->ov_phase = 0;
  xr->comm_ns += s->eng.now - xr->t_state;
  if (s->trace)
    hs_trace_tp(s->trace, &s->low.execs[xr->id], hs_coll_op_name(c->op), xr->t_state, s->eng.now,
                c->bytes);
  xr->state = X_READY;
  xr->seg++;
  x_advance(s, xr);
}

static void x_after_compute(sim_t *s, xrun_t *xr);

static void group_coll_done(hs_coll_t *c)
{
  grun_t *gr = c->ctx;
  sim_t *s = gr->sim;
  if (--gr->live > 0)
    return;
  const hs_group_t *g = &s->low.groups[gr->id];
  gr->arrived = 0;
  /* a released member may join the next collective, which rewrites gr */
  hs_coll_op_t op = gr->op;
  double bytes = gr->bytes;
  hs_time_t t0 = c->t_start;
  if (gr->side) {
    for (int32_t k = 0; k < g->n; k++)
      x_comm(s, &s->x[g->execs[k]], false);
    /* release in member order (deterministic); a released member may join
     * the group's next collective at once, which starts only when every
     * member has arrived again, after this loop */
    for (int32_t k = 0; k < g->n; k++) {
      xrun_t *xr = &s->x[g->execs[k]];
      if (s->trace)
        hs_trace_tp(s->trace, &s->low.execs[xr->id], hs_coll_op_name(op), t0, s->eng.now, bytes);
      xr->side_pending = false;
      if (xr->side_wait) {
        xr->side_wait = false;
        xr->comm_ns += s->eng.now - xr->t_state;
        xr->state = X_COMPUTE;
        x_after_compute(s, xr);
      }
    }
    return;
  }
  for (int32_t k = 0; k < g->n; k++) {
    xrun_t *xr = &s->x[g->execs[k]];
    xr->comm_ns += s->eng.now - xr->t_state;
    if (s->trace)
      hs_trace_tp(s->trace, &s->low.execs[xr->id], hs_coll_op_name(op), xr->t_state, s->eng.now, bytes);
  }
  /* release in member order (deterministic); a member cannot reach the
   * next group collective before an engine event, so gr is free again */
  for (int32_t k = 0; k < g->n; k++) {
    xrun_t *xr = &s->x[g->execs[k]];
    xr->state = X_READY;
    xr->seg++;
    x_advance(s, xr);
  }
}

/* A member arrives at a collective of group gid; the last one starts it. */
static void group_join(sim_t *s, int32_t gid, hs_coll_op_t op, double bytes, bool side)
{
  grun_t *gr = &s->g[gid];
  const hs_group_t *g = &s->low.groups[gid];
  if (gr->arrived == 0) {
    gr->op = op;
    gr->bytes = bytes;
    gr->side = side;
  }
  if (++gr->arrived < g->n)
    return;
  gr->live = g->tp;
  if (gr->side)
    for (int32_t k = 0; k < g->n; k++)
      x_comm(s, &s->x[g->execs[k]], true);
  for (int32_t j = 0; j < g->tp; j++) {
    hs_coll_t *c = &gr->colls[j];
    memset(c, 0, sizeof *c);
    c->op = gr->op;
    c->devices = &g->devices[j * g->n];
    c->n = g->n;
    c->bytes = gr->bytes;
    c->shares = g->tp == 1 ? g->shares : NULL;
    c->done = group_coll_done;
    c->ctx = gr;
    s->n_flows++;
    hs_status_t st = hs_coll_start(s->net, c, s->err);
    if (st != HS_OK) {
      fail(s, st, "starting a group collective");
      return;
    }
  }
}

/* Member xr arrives at the blocking group collective of segment sg. */
static void group_arrive(sim_t *s, xrun_t *xr, const hs_exec_t *ex, const hs_seg_t *sg)
{
  (void)ex;
  xr->state = X_COLL;
  xr->t_state = s->eng.now;
  group_join(s, sg->group, sg->coll_op, sg->coll_bytes, false);
}

/* The template of item `it`: the last microbatch's backward of a chunk is
 * the bucket-cut variant, so gradient buckets start during it. */
static inline const hs_tmpl_t *item_tmpl(const hs_exec_t *ex, const xrun_t *xr,
                                         const hs_sched_item_t *it)
{
  if (it->phase == HS_PHASE_BWD && xr->bwd_done[it->chunk] == ex->m - 1)
    return &ex->tmpl_final[it->chunk];
  return &ex->tmpl[it->chunk * 2 + it->phase];
}

/* A segment of the last backward ended: the buckets whose ops are all done
 * may start (the head of the executor's bucket list first). */
static void seg_finished(sim_t *s, xrun_t *xr, const hs_exec_t *ex, const hs_sched_item_t *it,
                         const hs_seg_t *sg)
{
  if (it->phase == HS_PHASE_BWD && xr->bwd_done[it->chunk] == ex->m - 1 &&
      sg->grad_lo < xr->final_low[it->chunk]) {
    xr->final_low[it->chunk] = sg->grad_lo;
    x_bucket_step(s, xr);
  }
}

static void start_tp_coll(sim_t *s, xrun_t *xr, const hs_exec_t *ex, const hs_seg_t *sg)
{
  hs_coll_t *c = &xr->coll;
  memset(c, 0, sizeof *c);
  c->op = sg->coll_op;
  c->devices = ex->devices;
  c->n = ex->tp;
  c->bytes = sg->coll_bytes;
  c->done = x_coll_done;
  c->ctx = xr;
  /* this executor's last collective of the op: most often the same key */
  c->memo_hint = xr->tp_memo_hint[c->op & 1];
  c->memo_hint_devices = ex->devices; /* the lowering's, unchanged while it runs */
  s->n_flows++;
  hs_status_t st = hs_coll_start(s->net, c, s->err);
  if (st != HS_OK)
    fail(s, st, "starting a TP collective");
  else
    xr->tp_memo_hint[c->op & 1] = c->memo_choice <= UINT32_MAX ? (uint32_t)c->memo_choice : 0;
}

static void x_event(hs_engine_t *eng, hs_event_t *ev)
{
  xrun_t *xr = HS_CONTAINER_OF(ev, xrun_t, ev);
  sim_t *s = xr->sim;
  const hs_exec_t *ex = &s->low.execs[xr->id];
  if (xr->state == X_OPTIMIZER) {
    xr->busy_ns += eng->now - xr->t_state;
    xr->opt_ns += eng->now - xr->t_state;
    if (s->trace)
      hs_trace_optimizer(s->trace, ex, xr->t_state, eng->now);
    xr->state = X_DONE;
    xr->t_end = eng->now;
    return;
  }
  /* a compute segment ended */
  if (s->contention)
    hs__contention(&xr->cont, HS_CONT_COMPUTE_END, eng->now, 0);
  xr->busy_ns += eng->now - xr->t_state;
  /* the backward's leading compute is its recomputed forward */
  hs_time_t dur = eng->now - xr->t_state;
  hs_time_t rc = HS_MIN(HS_MAX(xr->item_rc_ns - xr->item_cum_ns, 0), dur);
  xr->item_cum_ns += dur;
  xr->recomp_ns += rc;
  if (rc > 0)
    xr->rc_end = xr->t_state + rc;
  if (s->trace) {
    if (rc > 0)
      hs_trace_segment(s->trace, ex, true, xr->t_state, xr->t_state + rc);
    if (dur > rc)
      hs_trace_segment(s->trace, ex, false, xr->t_state + rc, eng->now);
  }
  if (xr->side_pending) {
    /* the segment's side collective (ZeRO-3 prefetch, ring attention's KV
     * exchange) has not finished: wait for it */
    xr->side_wait = true;
    xr->state = X_COLL;
    xr->t_state = eng->now;
    return;
  }
  x_after_compute(s, xr);
}

/* The compute of the current segment (and its side collective) is done. */
static void x_after_compute(sim_t *s, xrun_t *xr)
{
  hs_engine_t *eng = &s->eng;
  const hs_exec_t *ex = &s->low.execs[xr->id];
  const hs_sched_item_t *it = &ex->order[xr->pc];
  const hs_tmpl_t *tm = item_tmpl(ex, xr, it);
  const hs_seg_t *sg = &tm->segs[xr->seg];
  if (xr->ov_phase == 1) {
    /* tp_comm_overlap: the GEMM next to the collective and the collective
     * run together; the segment ends when both have */
    xr->ov_phase = 2;
    xr->ov_pending = 2;
    xr->state = X_COMPUTE;
    xr->t_state = eng->now;
    x_comm(s, xr, true); /* the collective runs beside the GEMM from its start */
    x_compute(s, xr, sg->ov_ns);
    start_tp_coll(s, xr, ex, sg);
    return;
  }
  seg_finished(s, xr, ex, it, sg);
  if (xr->ov_phase == 2) {
    if (--xr->ov_pending > 0) {
      xr->state = X_COLL; /* waiting for the collective's exposed tail */
      xr->t_state = eng->now;
      return;
    }
    xr->ov_phase = 0;
    xr->state = X_READY;
    xr->seg++;
    x_advance(s, xr);
    return;
  }
  if (sg->coll_bytes > 0.0 && sg->group >= 0) {
    group_arrive(s, xr, ex, sg);
    return;
  }
  if (sg->coll_bytes > 0.0 && ex->tp > 1) {
    xr->state = X_COLL;
    xr->t_state = eng->now;
    start_tp_coll(s, xr, ex, sg);
    return;
  }
  xr->state = X_READY;
  xr->seg++;
  x_advance(s, xr);
}

static void x_advance(sim_t *s, xrun_t *xr)
{
  const hs_exec_t *ex = &s->low.execs[xr->id];
  for (;;) {
    if (xr->state == X_WAIT_INPUT || xr->state == X_WAIT_SEND) {
      hs_time_t waited = s->eng.now - xr->t_state;
      if (xr->state == X_WAIT_SEND)
        xr->send_wait_ns += waited;
      if (xr->state == X_WAIT_INPUT) {
        xr->wait_in_ns += waited;
        xr->pp_wait_ns += s->eng.now - HS_MAX(xr->t_state, HS_MIN(xr->t_post_in, s->eng.now));
      }
      xr->state = X_READY;
    }
    if (xr->state != X_READY)
      return;
    if (xr->pc >= ex->n_items) {
      if (xr->sends_pending > 0) {
        xr->state = X_WAIT_SEND;
        xr->t_state = s->eng.now;
        return;
      }
      if (!xr->compute_done) {
        xr->compute_done = true;
        xr->t_compute_done = s->eng.now;
        x_bucket_step(s, xr);
      }
      x_try_finish(s, xr);
      return;
    }
    const hs_sched_item_t *it = &ex->order[xr->pc];
    const hs_tmpl_t *tm = item_tmpl(ex, xr, it);
    if (xr->seg >= tm->n) {
      /* item complete */
      if (s->trace)
        hs_trace_item(s->trace, ex, it->phase, it->mb, it->chunk, xr->t_item, s->eng.now, xr->rc_end);
      if (it->phase == HS_PHASE_BWD)
        xr->bwd_done[it->chunk]++;
      post_sends(s, xr, ex, it);
      xr->pc++;
      xr->seg = 0;
      x_bucket_step(s, xr);
      continue;
    }
    if (xr->seg == 0) {
      if (xr->sends_pending > 0) {
        xr->state = X_WAIT_SEND;
        xr->t_state = s->eng.now;
        return;
      }
      if (xr->need[need_idx(ex, it->mb, it->chunk, it->phase)] > 0) {
        xr->state = X_WAIT_INPUT;
        xr->t_state = s->eng.now;
        return;
      }
    }
    if (xr->seg == 0 && xr->rem_ns && time_add_sat(s->eng.now, xr->rem_ns[xr->pc]) > s->stop_until) {
      /* this executor ends past the stop time whatever the rest does */
      s->stopped = true;
      s->eng.stop = true;
      return;
    }
    if (xr->seg == 0) {
      xr->t_item = s->eng.now;
      xr->item_cum_ns = 0;
      xr->rc_end = 0;
      xr->item_rc_ns = it->phase == HS_PHASE_BWD ? xr->rc_item_ns[it->chunk] : 0;
    }
    const hs_seg_t *sg = &tm->segs[xr->seg];
    hs_time_t d = sg->compute_ns;
    if (sg->ov_ns > 0 && sg->coll_bytes > 0.0 && sg->group < 0 && ex->tp > 1) {
      xr->ov_phase = 1; /* first the compute before the overlapped GEMM */
      d -= sg->ov_ns;
    }
    if (sg->side_bytes > 0.0 && sg->side_group >= 0) {
      xr->side_pending = true;
      group_join(s, sg->side_group, sg->side_op, sg->side_bytes, true);
    }
    xr->state = X_COMPUTE;
    xr->t_state = s->eng.now;
    x_compute(s, xr, d);
    return;
  }
}

/* ---- setup and report ------------------------------------------------------------ */

/* Compute time of the forward that one backward item of chunk ch recomputes
 * (lower.c prepends it to the backward template): the whole forward template
 * under full recomputation, the attention cores under selective. */
static hs_time_t recompute_item_ns(const sim_t *s, const hs_exec_t *ex, int32_t ch)
{
  const hs_plan_pipeline_t *pl = &s->plan->pipelines[ex->pipeline];
  int32_t ranks = pl->n_stages / ex->v;
  const hs_plan_stage_t *stg = &pl->stages[ch * ranks + ex->rank];
  hs_time_t ns = 0;
  if (stg->recompute == HS_RECOMPUTE_FULL) {
    ns = ex->tmpl[ch * 2 + HS_PHASE_FWD].compute_ns;
  } else if (stg->recompute == HS_RECOMPUTE_SELECTIVE) {
    double sec = 0.0;
    for (int32_t i = stg->op_first; i < stg->op_last; i++)
      if (s->model->ops[i].kind == HS_OP_ATTENTION)
        sec += hs_compute_op_s(ex->gpu, s->plan->precision, &s->model->ops[i], ex->samples, ex->tp,
                               HS_PHASE_FWD);
    ns = hs_time_from_s(sec);
  }
  return HS_MIN(ns, ex->tmpl[ch * 2 + HS_PHASE_BWD].compute_ns);
}

static void sim_destroy(sim_t *s)
{
  /* On an error path events are still queued. The network goes first (it
   * cancels its events through the engine, including those of collectives in
   * s->b), then the engine (it marks the remaining queued events, which live
   * in s->x and the send slabs), then the memory that holds events. */
  hs_net_free(s->net);
  s->net = NULL;
  hs_engine_destroy(&s->eng);
  free(s->rem_all);
  if (s->x)
    for (int32_t e = 0; e < s->low.n_execs; e++) {
      free(s->x[e].need);
      free(s->x[e].bwd_done);
      free(s->x[e].final_low);
      free(s->x[e].rc_item_ns);
    }
  free(s->x);
  if (s->b)
    for (int32_t b = 0; b < s->low.n_buckets; b++)
      free(s->b[b].colls);
  free(s->b);
  if (s->g)
    for (int32_t g = 0; g < s->low.n_groups; g++)
      free(s->g[g].colls);
  free(s->g);
  while (s->slabs) {
    send_slab_t *next = s->slabs->next;
    free(s->slabs);
    s->slabs = next;
  }
  hs_topology_free(s->topo);
  hs__lowered_destroy(&s->low);
  hs_trace_free(s->trace);
}

void hs_sim_opts_init(hs_sim_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->trace_links = true;
}

void hs_report_init(hs_report_t *r) { memset(r, 0, sizeof *r); }

void hs_report_destroy(hs_report_t *r)
{
  if (!r)
    return;
  free(r->oom_devices);
  free(r->stages);
  free(r->links);
  free(r->device_peak_memory_bytes);
  memset(r, 0, sizeof *r);
}

static int cmp_link_report(const void *a, const void *b)
{
  const hs_link_report_t *x = a, *y = b;
  if (x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  return x->link - y->link;
}

/* Blocking collectives of one template, uncontended (TP group or SPMD group);
 * NaN when an estimate runs out of memory. */
static double seg_colls_s(const sim_t *s, const hs_exec_t *ex, const hs_tmpl_t *t)
{
  double sum = 0.0;
  for (int32_t k = 0; k < t->n; k++) {
    const hs_seg_t *sg = &t->segs[k];
    if (!(sg->coll_bytes > 0))
      continue;
    hs_coll_t cc = {.op = sg->coll_op, .devices = ex->devices, .n = ex->tp, .bytes = sg->coll_bytes};
    if (sg->group >= 0) {
      const hs_group_t *g = &s->low.groups[sg->group];
      cc.devices = g->devices;
      cc.n = g->n;
      cc.shares = g->shares;
    } else if (ex->tp <= 1) {
      continue;
    }
    /* tp_comm_overlap: only what the overlapped GEMM does not hide (a NaN
     * estimate stays NaN: fmax would turn it into 0) */
    double est = hs_coll_estimate_s(s->topo, &cc);
    sum += sg->ov_ns > 0 && !isnan(est) ? fmax(0.0, est - hs_time_to_s(sg->ov_ns)) : est;
  }
  return sum;
}

/* Report step: hardware FLOPs of one iteration: the model's forward and
 * backward plus FlashAttention's recomputed scores and the recomputed
 * forwards where the plan recomputes. Reads plan and model only. */
static double report_hw_flops(const sim_t *s, const hs_model_flops_t *fl)
{
  const hs_plan_t *plan = s->plan;
  double hw_flops = fl->fwd_bwd;
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    double samples = (double)pl->microbatch_size * pl->n_microbatches;
    for (int32_t k = 0; k < pl->n_stages; k++) {
      const hs_plan_stage_t *stg = &pl->stages[k];
      int32_t tp = stg->replicas[0].n_devices;
      for (int32_t op = stg->op_first; op < stg->op_last; op++) {
        hs_op_t tmp;
        const hs_op_t *o0 = &s->model->ops[op];
        const hs_op_t *o = hs_practice_op(&plan->practice, o0, tp, &tmp);
        if (o0->kind == HS_OP_ATTENTION) /* FlashAttention's recomputed scores */
          hw_flops += (o->bwd_flops - o0->bwd_flops) * samples;
        if (stg->recompute == HS_RECOMPUTE_FULL && o0->layer >= 0)
          hw_flops += o0->fwd_flops * samples;
        else if (stg->recompute == HS_RECOMPUTE_SELECTIVE && hs_practice_recomputes_selective(o))
          hw_flops += o0->fwd_flops * samples;
      }
    }
  }
  return hw_flops;
}

/* Report step: throughput, FLOP rates, MFU and cost over the devices the
 * plan uses (used[d] != 0), for an iteration of T seconds. Reads the
 * report's global batch and device count. Sets the rate and cost fields
 * and counts unpriced devices. */
static void report_rates(const sim_t *s, hs_report_t *r, const uint8_t *used, double T)
{
  const hs_cluster_t *c = s->cluster;
  hs_model_flops_t fl;
  hs_model_flops(s->model, (double)r->global_batch, &fl);
  double hw_flops = report_hw_flops(s, &fl);
  double peak = 0.0, usd_h = 0.0;
  for (size_t d = 0; d < c->n_devices; d++) {
    if (!used[d])
      continue;
    const hs_gpu_t *g = hs_cluster_gpu(c, (int32_t)d);
    peak += hs_gpu_peak_flops(g, s->plan->precision);
    bool spot = c->nodes[c->devices[d].node].spot;
    usd_h += (spot && g->price_spot_usd_h > 0) ? g->price_spot_usd_h : g->price_ondemand_usd_h;
    if (!(g->price_ondemand_usd_h > 0) && !(spot && g->price_spot_usd_h > 0))
      r->n_unpriced_devices++;
  }
  int32_t ng = r->n_devices > 0 ? r->n_devices : 1;
  r->tflops_per_gpu = T > 0 ? fl.fwd_bwd / T / ng / 1e12 : 0.0;
  r->hw_tflops_per_gpu = T > 0 ? hw_flops / T / ng / 1e12 : 0.0;
  r->mfu = (T > 0 && peak > 0) ? fl.fwd_bwd / T / peak : 0.0;
  r->usd_per_hour = usd_h;
  r->cost_usd_per_iteration = usd_h * T / 3600.0;
  r->cost_usd_per_million_tokens =
      r->tokens_per_iteration > 0 ? r->cost_usd_per_iteration / (double)r->tokens_per_iteration * 1e6 : 0.0;
}

/* Executor e's idle time up to t_flush (stored in its idle_ns), as a
 * fraction of t_flush. */
static double exec_idle_fraction(sim_t *s, int32_t e, hs_time_t t_flush)
{
  const xrun_t *xr = &s->x[e];
  hs_time_t idle = t_flush - xr->busy_ns - xr->comm_ns;
  /* the optimizer step is counted in busy but happens after the flush */
  idle += hs_time_from_s(s->low.execs[e].optimizer_ns_d);
  if (idle < 0)
    idle = 0;
  s->x[e].idle_ns = idle;
  return t_flush > 0 ? (double)idle / (double)t_flush : 0.0;
}

/* Report step: bubble, the idle time of each executor up to the pipeline
 * flush t_flush. Sets every executor's idle_ns (the stage rows read it)
 * and r->bubble_fraction, summed pipeline by pipeline (not in executor
 * order, which is rank-major: lower_place.c), the order the fraction's
 * last bits have always had. */
static void report_bubble(sim_t *s, hs_report_t *r, hs_time_t t_flush)
{
  double bub = 0.0;
  const hs_plan_t *plan = s->plan;
  int32_t v = plan->chunks > 0 ? plan->chunks : 1; /* as the lowering's */
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    for (int32_t k = 0; k < pl->n_stages / v; k++)
      for (int32_t q = 0; q < pl->stages[k].n_replicas; q++)
        bub += exec_idle_fraction(s, hs__exec_of(&s->low, i, k, q), t_flush);
  }
  r->bubble_fraction = s->low.n_execs > 0 ? bub / s->low.n_execs : 0.0;
}

/* Report step: peak memory per device (mem, bytes) and the used devices
 * past their capacity. Sets the memory and OOM fields; HS_ENOMEM else. */
static hs_status_t report_memory(const sim_t *s, hs_report_t *r, const uint8_t *used,
                                 const double *mem)
{
  const hs_cluster_t *c = s->cluster;
  r->device_peak_memory_bytes = hs_calloc(c->n_devices, sizeof(double));
  if (!r->device_peak_memory_bytes)
    return HS_ENOMEM;
  r->n_device_mem = (int32_t)c->n_devices;
  int32_t n_oom = 0;
  for (size_t d = 0; d < c->n_devices; d++) {
    r->device_peak_memory_bytes[d] = mem[d];
    r->max_peak_memory_bytes = fmax(r->max_peak_memory_bytes, mem[d]);
    if (used[d] && mem[d] > hs_cluster_gpu(c, (int32_t)d)->mem_bytes)
      n_oom++;
  }
  if (n_oom > 0) {
    r->oom = true;
    r->oom_devices = hs_calloc((size_t)n_oom, sizeof(int32_t));
    if (!r->oom_devices)
      return HS_ENOMEM;
    for (size_t d = 0; d < c->n_devices; d++)
      if (used[d] && mem[d] > hs_cluster_gpu(c, (int32_t)d)->mem_bytes)
        r->oom_devices[r->n_oom_devices++] = (int32_t)d;
  }
  return HS_OK;
}

/* Report step, part of one stage row: its peak memory (the highest of its
 * devices in mem, with that device's parts) and the layers it holds
 * (embedding before first_block, head after the blocks). */
static void stage_memory_and_layers(const sim_t *s, hs_stage_report_t *sr,
                                    const hs_plan_stage_t *stg, const hs_exec_t *ex,
                                    const double *mem, const hs_mem_parts_t *parts,
                                    int32_t first_block)
{
  double pm = 0.0;
  int32_t pd = ex->devices[0];
  for (int32_t q = 0; q < stg->n_replicas; q++)
    for (int32_t d = 0; d < stg->replicas[q].n_devices; d++)
      if (mem[stg->replicas[q].devices[d]] > pm) {
        pm = mem[stg->replicas[q].devices[d]];
        pd = stg->replicas[q].devices[d];
      }
  sr->peak_memory_bytes = pm;
  sr->mem = parts[pd];
  sr->layer_first = sr->layer_last = -1;
  for (int32_t op = stg->op_first; op < stg->op_last; op++) {
    int32_t l = s->model->ops[op].layer;
    if (l < 0) { /* outside the blocks: before the first one or after */
      if (op < first_block)
        sr->has_embedding = true;
      else
        sr->has_head = true;
      continue;
    }
    if (sr->layer_first < 0)
      sr->layer_first = l;
    sr->layer_last = l;
  }
}

/* Report step: the row of stage k of pipeline i (its replica 0's
 * executor): shape, per-microbatch times with uncontended TP collectives,
 * the executor's time split over [0, t_end], memory and layers.
 * HS_ENOMEM when a collective estimate fails (its only failure). */
static hs_status_t stage_report(const sim_t *s, hs_stage_report_t *sr, int32_t i, int32_t k,
                                const double *mem, const hs_mem_parts_t *parts,
                                int32_t first_block, hs_time_t t_end)
{
  const hs_plan_pipeline_t *pl = &s->plan->pipelines[i];
  const hs_plan_stage_t *stg = &pl->stages[k];
  int32_t ranks = pl->n_stages / s->plan->chunks;
  int32_t e = hs__exec_of(&s->low, i, k, 0);
  const hs_exec_t *ex = &s->low.execs[e];
  const xrun_t *xr = &s->x[e];
  int32_t ch = k / ranks;
  sr->pipeline = i;
  sr->stage = k;
  sr->op_first = stg->op_first;
  sr->op_last = stg->op_last;
  sr->n_replicas = stg->n_replicas;
  sr->tp = ex->tp;
  sr->first_device = ex->devices[0];
  int32_t nd = 0;
  for (int32_t q = 0; q < stg->n_replicas; q++)
    nd += stg->replicas[q].n_devices;
  sr->n_devices = nd;
  hs_strlcpy(sr->gpu, ex->gpu->name, sizeof sr->gpu);
  const hs_tmpl_t *tf = &ex->tmpl[ch * 2 + HS_PHASE_FWD], *tb = &ex->tmpl[ch * 2 + HS_PHASE_BWD];
  /* per-microbatch time including blocking TP collectives, uncontended */
  double coll_f = seg_colls_s(s, ex, tf), coll_b = seg_colls_s(s, ex, tb);
  if (!isfinite(coll_f) || !isfinite(coll_b))
    return HS_ENOMEM; /* the estimate's only failure here: out of memory */
  sr->fwd_s = hs_time_to_s(tf->compute_ns) + coll_f;
  sr->bwd_s = hs_time_to_s(tb->compute_ns) + coll_b;
  sr->compute_s = hs_time_to_s(xr->busy_ns);
  sr->comm_exposed_s = hs_time_to_s(xr->comm_ns + xr->send_wait_ns);
  sr->idle_s = hs_time_to_s(xr->idle_ns);
  sr->mem_capacity_bytes = ex->gpu->mem_bytes;
  stage_memory_and_layers(s, sr, stg, ex, mem, parts, first_block);
  sr->params = ex->params_per_device;
  /* the executor's states partition [0, t_end]; after it, it waits */
  hs_time_t bubble = xr->wait_in_ns - xr->pp_wait_ns + (t_end - xr->t_end);
  sr->time_compute_s = hs_time_to_s(xr->busy_ns - xr->opt_ns - xr->recomp_ns);
  sr->time_recompute_s = hs_time_to_s(xr->recomp_ns);
  sr->time_tp_comm_s = hs_time_to_s(xr->comm_ns);
  sr->time_pp_comm_s = hs_time_to_s(xr->send_wait_ns + xr->pp_wait_ns);
  sr->time_dp_comm_s = hs_time_to_s(xr->dp_wait_ns);
  sr->time_bubble_s = hs_time_to_s(bubble);
  sr->time_optimizer_s = hs_time_to_s(xr->opt_ns);
  return HS_OK;
}

/* Report step: one row per stage of every pipeline, in plan order. Needs
 * report_bubble's idle times. HS_ENOMEM on allocation or estimate failure. */
static hs_status_t report_stages(const sim_t *s, hs_report_t *r, const double *mem,
                                 const hs_mem_parts_t *parts, hs_time_t t_end)
{
  const hs_plan_t *plan = s->plan;
  int32_t first_block = (int32_t)s->model->n_ops;
  for (int32_t op = 0; op < (int32_t)s->model->n_ops; op++)
    if (s->model->ops[op].layer >= 0) {
      first_block = op;
      break;
    }
  int32_t ns = 0;
  for (int32_t i = 0; i < plan->n_pipelines; i++)
    ns += plan->pipelines[i].n_stages;
  r->stages = hs_calloc((size_t)ns, sizeof *r->stages);
  if (!r->stages)
    return HS_ENOMEM;
  for (int32_t i = 0; i < plan->n_pipelines; i++)
    for (int32_t k = 0; k < plan->pipelines[i].n_stages; k++) {
      hs_status_t st = stage_report(s, &r->stages[r->n_stages++], i, k, mem, parts, first_block,
                                    t_end);
      if (st != HS_OK)
        return st;
    }
  return HS_OK;
}

/* Report step: the links that carried bytes, with their utilisation over
 * an iteration of T seconds, sorted by cmp_link_report. */
static hs_status_t report_links(const sim_t *s, hs_report_t *r, double T)
{
  size_t nl = hs_topology_n_links(s->topo);
  const hs_link_t *links = hs_topology_links(s->topo);
  const hs_link_stats_t *ls = hs_net_link_stats(s->net);
  int32_t busy = 0;
  for (size_t l = 0; l < nl; l++)
    if (ls[l].bytes > 0)
      busy++;
  r->links = hs_calloc((size_t)busy + 1, sizeof *r->links);
  if (!r->links)
    return HS_ENOMEM;
  for (size_t l = 0; l < nl; l++) {
    if (ls[l].bytes <= 0)
      continue;
    hs_link_report_t *lr = &r->links[r->n_links++];
    lr->link = (int32_t)l;
    hs_strlcpy(lr->label, links[l].label, sizeof lr->label);
    lr->bytes = ls[l].bytes;
    lr->cross_site = links[l].kind == HS_LINK_XSITE;
    double cap = links[l].GBps * HS_GB * T;
    lr->utilisation = (cap > 0 && isfinite(cap)) ? lr->bytes / cap : 0.0;
  }
  qsort(r->links, (size_t)r->n_links, sizeof *r->links, cmp_link_report);
  return HS_OK;
}

/* Report step: which speeds are datasheet defaults: the used GPUs'
 * calibration (with FlashAttention's and overlap contention's), the
 * uncalibrated GPUs, and the links' profiles. */
static void report_profiles(const sim_t *s, hs_report_t *r)
{
  const hs_plan_t *plan = s->plan;
  size_t ul = 0, pl = 0;
  for (size_t g = 0; g < s->cluster->gpus.n; g++) {
    const hs_gpu_t *gpu = &s->cluster->gpus.gpus[g];
    if (!hs_cluster_gpu_used(s->cluster, (int32_t)g))
      continue;
    /* with FlashAttention, whether its kernel rate is measured (attn_*
     * fields) or the GEMM curve stands in for it (sim/compute.c) */
    const char *attn = plan->practice.kernels.attention != HS_ATTENTION_FLASH ? ""
                       : hs_gpu_attn_calibrated(gpu) ? ", flash attention calibrated"
                                                     : ", flash attention uncalibrated (GEMM rate)";
    /* no published overlap_slowdown: its overlap is simulated as ideal */
    const char *ovl = plan->practice.overlap_contention && !(gpu->overlap_slowdown > 0.0)
                          ? ", overlap contention uncalibrated"
                          : "";
    if (pl + strlen(gpu->name) + strlen(attn) + strlen(ovl) + 16 < sizeof r->device_profiles)
      pl += (size_t)snprintf(r->device_profiles + pl, sizeof r->device_profiles - pl, "%s%s %s%s%s",
                             pl ? "; " : "", gpu->name, gpu->calibrated ? "calibrated" : "uncalibrated",
                             attn, ovl);
    if (!gpu->calibrated && ul + strlen(gpu->name) + 2 < sizeof r->uncalibrated_gpus)
      ul += (size_t)snprintf(r->uncalibrated_gpus + ul, sizeof r->uncalibrated_gpus - ul, "%s%s",
                             ul ? "," : "", gpu->name);
  }
  hs_cluster_describe_links(s->cluster, r->link_profiles, sizeof r->link_profiles, r->uncalibrated_links,
                            sizeof r->uncalibrated_links);
}

/* The report of a finished run: the iteration's time and throughput, then
 * the named steps above in order (rates and cost, bubble, memory, stage
 * rows, links, events, plan summary, profiles). mem: peak bytes per
 * device, parts: their breakdown. HS_ENOMEM leaves r for hs_report_destroy. */
/* The last instant the engine runs to under stop_at_s (opts): the largest
 * time whose every later one reads as at least stop_at_s in seconds, so an
 * executor still busy after it ends at or past stop_at_s. HS_TIME_MAX when
 * there is no stop (stop_at_s not > 0, or a trace, which needs the whole
 * run). O(1). */
static hs_time_t stop_until(const hs_sim_opts_t *opts)
{
  double s = opts->stop_at_s;
  if (opts->trace_path || !(s > 0.0) || !(s < 1e9))
    return HS_TIME_MAX;
  hs_time_t n = (hs_time_t)ceil(s * 1e9); /* the first time at or past s */
  while (hs_time_to_s(n) < s)
    n++;
  while (n > 0 && hs_time_to_s(n - 1) >= s)
    n--;
  return n > 0 ? n - 1 : 0;
}

/* The full-speed compute of executor xr's item it (the last backward of a
 * chunk reads the bucket-cut template, as item_tmpl: the caller resets
 * xr->bwd_done before a pass and after it), less 1 ns per segment
 * (contention.h rounds a stretched segment's end once, to within half a ns
 * of its work). O(1). */
static hs_time_t item_work_ns(const hs_exec_t *ex, xrun_t *xr, const hs_sched_item_t *it)
{
  const hs_tmpl_t *tm = item_tmpl(ex, xr, it);
  if (it->phase == HS_PHASE_BWD)
    xr->bwd_done[it->chunk]++;
  return HS_MAX(tm->compute_ns - tm->n, 0);
}

/* hs_report_t.max_device_work_s: the largest sum over an executor's items
 * of item_work_ns. Which backward is a chunk's last does not depend on
 * the order, so the sum is the same in every order of the same items.
 * O(items). */
static hs_time_t max_work_ns(sim_t *s)
{
  hs_time_t best = 0;
  for (int32_t e = 0; e < s->low.n_execs; e++) {
    const hs_exec_t *ex = &s->low.execs[e];
    xrun_t *xr = &s->x[e];
    hs_time_t w = 0;
    for (int32_t ch = 0; ch < ex->v; ch++)
      xr->bwd_done[ch] = 0;
    for (int32_t i = 0; i < ex->n_items; i++)
      w = time_add_sat(w, item_work_ns(ex, xr, &ex->order[i]));
    for (int32_t ch = 0; ch < ex->v; ch++)
      xr->bwd_done[ch] = 0;
    best = HS_MAX(best, w);
  }
  return best;
}

/* The drain a pipeline's backward chain adds after an executor's last
 * backward, into tail[e] (0 where none is proven): with one chunk per
 * stage, a backward at rank r > 0 sends its gradient to rank r - 1, whose
 * backward of that microbatch waits for it (in_count) and sends on, down
 * to rank 0. So after executor e's last backward ends, the iteration runs
 * at least the sum over the ranks below e's of their smallest backward
 * item (work[], each item's full-speed compute as rem_ns counts it).
 * A pipeline whose executors do not all send and receive their backward
 * pieces that way gets no tail. O(executors + items). */
static hs_status_t drain_tails(sim_t *s, const hs_time_t *const *work, hs_time_t *tail)
{
  const hs_lowered_t *lw = &s->low;
  size_t n_ranks = 0;
  for (int32_t i = 0; i < s->plan->n_pipelines; i++)
    n_ranks += (size_t)s->plan->pipelines[i].n_stages;
  hs_time_t *least = hs_calloc(n_ranks + 1, sizeof *least); /* per (pipeline, rank) */
  size_t *first = hs_calloc((size_t)s->plan->n_pipelines + 1, sizeof *first);
  bool *chained = hs_calloc((size_t)s->plan->n_pipelines + 1, sizeof *chained);
  if (!least || !first || !chained) {
    free(least), free(first), free(chained);
    return HS_ENOMEM;
  }
  for (int32_t i = 0; i < s->plan->n_pipelines; i++) {
    first[i + 1] = first[i] + (size_t)s->plan->pipelines[i].n_stages;
    chained[i] = true;
  }
  for (size_t k = 0; k < n_ranks; k++)
    least[k] = HS_TIME_MAX;
  for (int32_t e = 0; e < lw->n_execs; e++) {
    const hs_exec_t *ex = &lw->execs[e];
    int32_t S = s->plan->pipelines[ex->pipeline].n_stages;
    bool sends = ex->rank == 0 || ex->out_count[HS_PHASE_BWD] > 0;
    bool waits = ex->rank == S - 1 || ex->in_count[HS_PHASE_BWD] > 0;
    if (ex->v != 1 || !sends || !waits)
      chained[ex->pipeline] = false;
    hs_time_t *l = &least[first[ex->pipeline] + (size_t)ex->rank];
    for (int32_t k = 0; k < ex->n_items; k++)
      if (ex->order[k].phase == HS_PHASE_BWD)
        *l = HS_MIN(*l, work[e][k]);
  }
  for (int32_t e = 0; e < lw->n_execs; e++) {
    const hs_exec_t *ex = &lw->execs[e];
    tail[e] = 0;
    for (int32_t r = 0; chained[ex->pipeline] && r < ex->rank; r++) {
      hs_time_t l = least[first[ex->pipeline] + (size_t)r];
      tail[e] = time_add_sat(tail[e], l == HS_TIME_MAX ? 0 : l); /* a rank without items: none */
    }
  }
  free(least), free(first), free(chained);
  return HS_OK;
}

/* Under a stop time: each executor's rem_ns, the least time from the start
 * of item pc to the end of the iteration. Its own part: the suffix sums
 * over its items of their templates' full-speed compute (the last
 * backward of a chunk reads the bucket-cut template, as item_tmpl), less
 * 1 ns per segment (contention.h rounds a stretched segment's end once, to
 * within half a ns of its work). A segment never runs faster than its
 * full-speed work, so an executor starting item pc at t ends at or after
 * t + that sum. Up to its last backward item L, the pipeline's drain
 * after L (drain_tails) may add more: the items from pc through L, then
 * the tail. HS_ENOMEM. O(items). */
static hs_status_t stop_bounds(sim_t *s)
{
  size_t total = 0;
  int32_t n = s->low.n_execs;
  for (int32_t e = 0; e < n; e++)
    total += (size_t)s->low.execs[e].n_items + 1;
  s->rem_all = hs_calloc(total, sizeof *s->rem_all);
  hs_time_t **work = hs_calloc((size_t)n + 1, sizeof *work);
  hs_time_t *tail = hs_calloc((size_t)n + 1, sizeof *tail);
  if (!s->rem_all || !work || !tail) {
    free(work), free(tail);
    return HS_ENOMEM;
  }
  hs_time_t *rem = s->rem_all;
  for (int32_t e = 0; e < n; e++) { /* each item's own figure first */
    const hs_exec_t *ex = &s->low.execs[e];
    xrun_t *xr = &s->x[e];
    for (int32_t ch = 0; ch < ex->v; ch++)
      xr->bwd_done[ch] = 0;
    for (int32_t i = 0; i < ex->n_items; i++)
      rem[i] = item_work_ns(ex, xr, &ex->order[i]);
    for (int32_t ch = 0; ch < ex->v; ch++)
      xr->bwd_done[ch] = 0;
    rem[ex->n_items] = 0;
    work[e] = rem;
    rem += ex->n_items + 1;
  }
  hs_status_t st = drain_tails(s, (const hs_time_t *const *)work, tail);
  for (int32_t e = 0; st == HS_OK && e < n; e++) {
    const hs_exec_t *ex = &s->low.execs[e];
    hs_time_t *r = work[e];
    int32_t last_bwd = -1;
    for (int32_t i = 0; i < ex->n_items; i++)
      if (ex->order[i].phase == HS_PHASE_BWD)
        last_bwd = i;
    for (int32_t i = ex->n_items - 1; i >= 0; i--)
      r[i] = time_add_sat(r[i], r[i + 1]);
    /* from pc <= L: max(rest of the items, items through L + tail) */
    hs_time_t after_last = last_bwd >= 0 ? r[last_bwd + 1] : 0;
    hs_time_t extra = tail[e] > after_last ? tail[e] - after_last : 0;
    for (int32_t i = 0; i <= last_bwd; i++)
      r[i] = time_add_sat(r[i], extra);
    s->x[e].rem_ns = r;
  }
  free(work);
  free(tail);
  return st;
}

/* A mask of the cluster's devices, 1 where some executor runs; NULL when
 * out of memory. The caller frees it. O(devices + executors x tp). */
static uint8_t *used_devices(const sim_t *s)
{
  uint8_t *used = hs_calloc(s->cluster->n_devices, 1);
  if (used)
    for (int32_t e = 0; e < s->low.n_execs; e++)
      for (int32_t d = 0; d < s->low.execs[e].tp; d++)
        used[s->low.execs[e].devices[d]] = 1;
  return used;
}

/* The report of a run stopped at stop_at_s: that time as a lower bound of
 * the iteration, the batch, and memory (computed before the run, so exact).
 * HS_ENOMEM leaves r for hs_report_destroy. */
static hs_status_t fill_stopped_report(sim_t *s, hs_report_t *r, const double *mem, double stop_at_s)
{
  r->stopped = true;
  r->iteration_time_s = stop_at_s;
  r->global_batch = hs_plan_global_batch(s->plan);
  r->tokens_per_iteration = r->global_batch * s->model->seq_len;
  r->n_devices = hs_plan_n_devices(s->plan);
  uint8_t *used = used_devices(s);
  if (!used)
    return HS_ENOMEM;
  hs_status_t st = report_memory(s, r, used, mem);
  free(used);
  r->events = s->eng.n_fired;
  r->flows = s->n_flows;
  return st;
}

static hs_status_t fill_report(sim_t *s, hs_report_t *r, const double *mem,
                               const hs_mem_parts_t *parts)
{
  hs_status_t st = HS_OK;
  const hs_plan_t *plan = s->plan;
  hs_time_t t_end = 0, t_flush = 0;
  for (int32_t e = 0; e < s->low.n_execs; e++) {
    t_end = HS_MAX(t_end, s->x[e].t_end);
    t_flush = HS_MAX(t_flush, s->x[e].t_compute_done);
  }
  double T = hs_time_to_s(t_end);
  r->iteration_time_s = T;
  r->global_batch = hs_plan_global_batch(plan);
  r->tokens_per_iteration = r->global_batch * s->model->seq_len;
  r->samples_per_s = T > 0 ? (double)r->global_batch / T : 0.0;
  r->tokens_per_s = T > 0 ? (double)r->tokens_per_iteration / T : 0.0;
  r->n_devices = hs_plan_n_devices(plan);
  uint8_t *used = used_devices(s);
  if (!used)
    return HS_ENOMEM;
  report_rates(s, r, used, T);
  report_bubble(s, r, t_flush);
  st = report_memory(s, r, used, mem);
  free(used);
  if (st != HS_OK)
    return st;
  if ((st = report_stages(s, r, mem, parts, t_end)) != HS_OK)
    return st;
  if ((st = report_links(s, r, T)) != HS_OK)
    return st;
  r->events = s->eng.n_fired;
  r->flows = s->n_flows;
  hs_plan_describe(plan, s->model, r->plan_summary, sizeof r->plan_summary);
  report_profiles(s, r);
  return HS_OK;
}

/* Runs the set-up simulation: every executor started, the engine run to
 * `until` (HS_TIME_MAX: to the end). *stopped when the run is known to end
 * past `until` (an executor's compute bound passed it, or an executor is
 * still busy with only later events left); otherwise the run is complete
 * (what is left after `until` runs too) and every executor done, else
 * HS_EINTERNAL (stalled). Failures of the executors or the network as
 * hs_simulate reports them. O(events). */
static hs_status_t run_engine(sim_t *s, hs_time_t until, bool *stopped, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  for (int32_t e = 0; e < s->low.n_execs; e++)
    x_advance(s, &s->x[e]);
  if (!s->stopped)
    st = hs_engine_run(&s->eng, until);
  if (s->failure != HS_OK)
    return s->failure;
  if (st != HS_OK) /* failed inside the network's own events (flows, collectives) */
    return hs_error_set(err, st, "simulation: network: %s", hs_status_message(st));
  if (s->stopped || (until != HS_TIME_MAX && hs_engine_pending_count(&s->eng) > 0)) {
    /* an executor's compute alone ends past `until`, or events after it
     * are left while an executor is still busy: either ends past it */
    bool busy = s->stopped;
    for (int32_t e = 0; e < s->low.n_execs && !busy; e++)
      busy = s->x[e].state != X_DONE;
    if (busy) {
      *stopped = true;
      return HS_OK;
    }
    /* every executor done: what is left (none expected) runs as before */
    st = hs_engine_run(&s->eng, HS_TIME_MAX);
    if (s->failure != HS_OK)
      return s->failure;
    if (st != HS_OK)
      return hs_error_set(err, st, "simulation: network: %s", hs_status_message(st));
  }
  for (int32_t e = 0; e < s->low.n_execs; e++)
    if (s->x[e].state != X_DONE)
      return hs_error_set(err, HS_EINTERNAL,
                          "simulation stalled: executor %d (pipeline %d rank %d) stopped at item "
                          "%d of %d in state %d",
                          e, s->low.execs[e].pipeline, s->low.execs[e].rank, s->x[e].pc,
                          s->low.execs[e].n_items, (int)s->x[e].state);
  return HS_OK;
}

hs_status_t hs_simulate(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                        const hs_sim_opts_t *opts, hs_report_t *report, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  sim_t s = {0};
  double *mem = NULL;
  hs_mem_parts_t *parts = NULL;
  hs_sim_opts_t defaults;
  if (!opts) {
    hs_sim_opts_init(&defaults);
    opts = &defaults;
  }
  hs_report_init(report);
  s.model = m;
  s.cluster = c;
  s.plan = plan;
  s.err = err;
  HS_CHECK(hs_plan_validate(plan, m, c, NULL, err));
  mem = hs_calloc(c->n_devices, sizeof(double));
  if (!mem)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  parts = hs_calloc(c->n_devices, sizeof *parts);
  if (!parts)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  HS_CHECK(hs_memory_breakdown(m, c, plan, mem, parts, err));
  HS_CHECK(hs_topology_new(c, &s.topo, err));
  HS_CHECK(hs__lower(m, c, s.topo, plan, &s.low, err));
  if (hs_engine_init(&s.eng, NULL) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory creating the event queue"));
  s.eng.user = &s;
  if (hs_net_new(&s.eng, s.topo, &s.net) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory creating the network"));
  if (opts->trace_path) {
    HS_CHECK(hs_trace_new(m, c, plan, &s.low, opts, &s.trace, err));
    hs_net_set_observer(s.net, hs_trace_flow_done, s.trace);
  }
  s.x = hs_calloc((size_t)s.low.n_execs, sizeof *s.x);
  s.b = hs_calloc((size_t)s.low.n_buckets + 1, sizeof *s.b);
  s.g = hs_calloc((size_t)s.low.n_groups + 1, sizeof *s.g);
  if (!s.x || !s.b || !s.g)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* send pool: at most one outstanding send per piece per microbatch */
  size_t n_sends = 0;
  for (int32_t e = 0; e < s.low.n_execs; e++) {
    const hs_exec_t *ex = &s.low.execs[e];
    for (int32_t k = 0; k < 2 * ex->v; k++)
      n_sends += (size_t)ex->out_count[k] * (size_t)ex->m;
  }
  s.sends_max = n_sends;
  for (int32_t e = 0; e < s.low.n_execs; e++) {
    const hs_exec_t *ex = &s.low.execs[e];
    xrun_t *xr = &s.x[e];
    xr->sim = &s;
    xr->id = e;
    hs_event_init(&xr->ev, x_event);
    if (plan->practice.overlap_contention && ex->gpu && ex->gpu->overlap_slowdown > 0.0) {
      xr->cont.k = ex->gpu->overlap_slowdown;
      s.contention = true;
    }
    size_t nn = (size_t)ex->m * (size_t)ex->v * 2;
    xr->need = hs_calloc(nn, sizeof(int32_t));
    xr->bwd_done = hs_calloc((size_t)ex->v, sizeof(int32_t));
    xr->final_low = hs_calloc((size_t)ex->v, sizeof(int32_t));
    xr->rc_item_ns = hs_calloc((size_t)ex->v, sizeof(hs_time_t));
    if (!xr->need || !xr->bwd_done || !xr->final_low || !xr->rc_item_ns)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    for (int32_t mb = 0; mb < ex->m; mb++)
      for (int32_t ch = 0; ch < ex->v; ch++)
        for (int32_t ph = 0; ph < 2; ph++)
          xr->need[need_idx(ex, mb, ch, ph)] = ex->in_count[ch * 2 + ph];
    for (int32_t ch = 0; ch < ex->v; ch++) {
      xr->final_low[ch] = INT32_MAX;
      xr->rc_item_ns[ch] = recompute_item_ns(&s, ex, ch);
    }
  }
  for (int32_t g = 0; g < s.low.n_groups; g++) {
    s.g[g].sim = &s;
    s.g[g].id = g;
    s.g[g].colls = hs_calloc((size_t)s.low.groups[g].tp, sizeof(hs_coll_t));
    if (!s.g[g].colls)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
  for (int32_t b = 0; b < s.low.n_buckets; b++) {
    s.b[b].sim = &s;
    s.b[b].id = b;
    s.b[b].colls = hs_calloc((size_t)s.low.buckets[b].tp, sizeof(hs_coll_t));
    if (!s.b[b].colls)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
  if (hs_engine_reserve(&s.eng, (size_t)s.low.n_execs * 4 + 1024) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory reserving the event queue"));
  hs_time_t until = s.stop_until = stop_until(opts);
  if (until != HS_TIME_MAX && stop_bounds(&s) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  double work_s = hs_time_to_s(max_work_ns(&s));
  bool stopped = false;
  HS_CHECK(run_engine(&s, until, &stopped, err));
  if (stopped) {
    if (fill_stopped_report(&s, report, mem, opts->stop_at_s) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory filling the report"));
    report->max_device_work_s = work_s;
    goto cleanup;
  }
  /* The clock saturates at HS_TIME_MAX (~292 years) rather than overflow, so
   * a saturated duration would yield nonsense figures (MFU above 1): an
   * iteration past 100 years is refused (docs/robustness.md, limits). */
  if (s.eng.now >= (hs_time_t)(100.0 * 365.25 * 86400.0) * HS_NS_PER_S)
    HS_FAIL(hs_error_set(err, HS_ELIMIT,
                         "simulated iteration exceeds 100 years (%.3g s): the model's sizes or "
                         "the cluster's bandwidths are outside the supported range",
                         hs_time_to_s(s.eng.now)));
  if (fill_report(&s, report, mem, parts) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory filling the report"));
  report->max_device_work_s = work_s;
  if (s.trace)
    HS_CHECK(hs_trace_write(s.trace, s.topo, hs_net_link_stats(s.net), opts->trace_path, err));
cleanup:
  free(mem);
  free(parts);
  sim_destroy(&s);
  if (st != HS_OK)
    hs_report_destroy(report);
  return st;
}
