/*
 * replay_cpu.c - the CPU replay backend: one POSIX thread per device of the
 * plan runs its executor's schedule order for real.
 *
 * Per item a thread waits for the item's pipeline pieces (a counter per
 * (microbatch, chunk, phase) under the executor's mutex), runs the item's
 * work list - GEMMs of the ops' shapes through CBLAS, memory-bound loops
 * moving the ops' bytes, TP collectives as reduce-scatter + all-gather
 * between the group's buffers behind a barrier - and then sends its pieces:
 * TP rank 0 of the sender copies the piece's bytes into the receiver's inbox
 * and bumps the receiver's counter. After the last item every holder of a
 * gradient bucket joins the bucket's all-reduce (in the lowering's bucket
 * order), then the optimizer step moves its bytes.
 *
 * Approximations (docs/validation.md): a CPU has no copy engine, so sends are
 * done by the sending thread (blocking) even when the plan sends
 * asynchronously, and gradient all-reduces run after the backward pass
 * instead of overlapping it. GEMMs run in fp32 whatever the plan precision.
 *
 * Invariants: a thread only reads its own buffers, except collectives, which
 * read peers' buffers strictly between two barriers of the group; inbox
 * copies happen under the receiver's mutex. Timing: CLOCK_MONOTONIC around
 * every kernel entry and item; iteration = from the start barrier to the end
 * barrier. The median iteration's timeline is kept.
 */
#include "replay_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct group {
  pthread_barrier_t bar;
  int32_t n;
  float **bufs;            /* each member's collective buffer */
  double *vt;              /* cpu clock: each member's timeline at entry */
  bool live;
} group_t;

typedef struct xstate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int32_t *need;           /* [(mb * v + chunk) * 2 + phase] */
  double *ready_vt;        /* cpu clock: latest arrival on the timeline, same index */
  float *inbox;
  size_t inbox_n;
  bool active;
  group_t tp;              /* the TP group */
} xstate_t;

typedef struct run run_t;

typedef struct worker {
  run_t *run;
  pthread_t th;
  int32_t exec, tp_rank, device;
  float *a, *b, *c;        /* GEMM operands */
  size_t gemm_n;
  float *src, *dst;        /* memory-bound */
  size_t stream_n;
  float *coll;             /* collectives / gradients */
  size_t coll_n;
  hs_kernel_sample_t *ks;
  size_t n_ks, cap_ks;
  hs_item_sample_t *is;
  size_t n_is, cap_is;
  hs_meas_task_t *tasks;   /* all iterations, tagged through t0 order */
  int32_t *task_iter;
  size_t n_tasks, cap_tasks, cap_task_iter;
  hs_status_t st;
  int32_t iter;
  bool record;             /* this iteration is timed (past the warm-up) */
  double item_t0;          /* timeline at the current item's start */
  double vt;               /* cpu clock: this device's timeline (s from iteration start) */
  double mark_wall, mark_cpu;
  double *end_vt;          /* cpu clock: per iteration, when this device finished */
  float *probe_buf;        /* the speed probe's operands (3 x HS_PROBE_FLOATS) */
  double *probe_s;         /* its samples: before the first iteration and after each */
  int32_t n_probe;
} worker_t;

struct run {
  const hs_taskgraph_t *tg;
  const hs_replay_opts_t *o;
  xstate_t *xs;
  group_t *bgroups;        /* per bucket: every thread of every holder */
  worker_t *w;
  int32_t n_w;
  pthread_barrier_t all;
  bool all_live;           /* `all` was initialised */
  double *t_start, *t_end; /* per iteration (timed and warm-up) */
  int32_t n_iter_total;
  bool cpu_clock;
  /* start gate: no worker touches a barrier before every thread exists */
  pthread_mutex_t gate_mu;
  pthread_cond_t gate_cv;
  int gate;                /* 0 closed, 1 run, -1 give up */
};

/* ---- clocks -------------------------------------------------------------------
 * wall: CLOCK_MONOTONIC from the iteration's start barrier.
 * cpu: each device keeps a virtual timeline advanced by the thread CPU time of
 * its work; waits advance it to the arrival time of what it waits for. On a
 * machine shared with other jobs this measures the work, not the scheduler. */

static double timeline(const worker_t *w)
{
  return w->run->cpu_clock ? w->vt : hs__clock_s() - w->run->t_start[w->iter];
}

static double span_begin(worker_t *w)
{
  w->mark_wall = hs__clock_s();
  w->mark_cpu = hs__thread_cpu_s();
  return timeline(w);
}

/* Duration since span_begin; advances the virtual timeline in cpu mode. */
static double span_end(worker_t *w)
{
  if (w->run->cpu_clock) {
    double d = hs__thread_cpu_s() - w->mark_cpu;
    w->vt += d;
    return d;
  }
  return hs__clock_s() - w->mark_wall;
}

/* ---- recording ------------------------------------------------------------ */

static void add_task(worker_t *w, const char *name, int32_t stage, int32_t mb,
                     int32_t chunk, double t0, double t1, double predicted, double bytes)
{
  if (w->st != HS_OK)
    return;
  if (hs_reserve((void **)&w->tasks, &w->cap_tasks, w->n_tasks + 1, sizeof *w->tasks) != HS_OK ||
      hs_reserve((void **)&w->task_iter, &w->cap_task_iter, w->n_tasks + 1, sizeof(int32_t)) != HS_OK) {
    w->st = HS_ENOMEM;
    return;
  }
  hs_meas_task_t *t = &w->tasks[w->n_tasks];
  *t = hs__replay_task(name, w->exec, w->device, stage, mb, chunk, predicted, bytes);
  t->t0_s = t0;
  t->t1_s = t1;
  w->task_iter[w->n_tasks++] = w->iter;
}

/* ---- collectives ------------------------------------------------------------ */

/* All-reduce of `bytes` over group g, member `me`: reduce-scatter then
 * all-gather over the members' buffers (fp32 elements). */
static void sync_timelines(group_t *g, int32_t me, worker_t *w)
{
  g->vt[me] = w->vt;
  pthread_barrier_wait(&g->bar);
  for (int32_t q = 0; q < g->n; q++)
    w->vt = fmax(w->vt, g->vt[q]);
}

static void allreduce(group_t *g, int32_t me, double bytes, worker_t *w)
{
  size_t n = (size_t)(bytes / 4.0);
  float *mine = g->bufs[me];
  sync_timelines(g, me, w);
  span_begin(w);
  size_t per = n / (size_t)g->n, lo = per * (size_t)me, hi = (me == g->n - 1) ? n : lo + per;
  for (int32_t q = 0; q < g->n; q++)
    if (q != me)
      for (size_t i = lo; i < hi; i++)
        mine[i] += g->bufs[q][i];
  pthread_barrier_wait(&g->bar);
  for (int32_t q = 0; q < g->n; q++)
    if (q != me) {
      size_t qlo = per * (size_t)q, qhi = (q == g->n - 1) ? n : qlo + per;
      memcpy(mine + qlo, g->bufs[q] + qlo, (qhi - qlo) * sizeof(float));
    }
  span_end(w);
  pthread_barrier_wait(&g->bar);
}

/* All-to-all of `bytes` per member: member me gathers slice me of each peer. */
static void alltoall(group_t *g, int32_t me, double bytes, worker_t *w)
{
  size_t n = (size_t)(bytes / 4.0), per = n / (size_t)g->n;
  float *mine = g->bufs[me];
  sync_timelines(g, me, w);
  span_begin(w);
  /* gather into the upper half so that no peer reads what is being written */
  for (int32_t q = 0; q < g->n; q++)
    if (q != me)
      memcpy(mine + n + per * (size_t)q, g->bufs[q] + per * (size_t)me, per * sizeof(float));
  span_end(w);
  pthread_barrier_wait(&g->bar);
}

/* ---- one iteration: the steps hs__replay_walk calls ------------------------- */

/* Runs entry i of the item's work list: a kernel (timed; its sample kept on
 * TP rank 0 of a timed iteration) or a TP collective with the group (a
 * task record). HS_ENOMEM when a sample cannot be kept. */
static hs_status_t cpu_entry(void *be, const hs_sched_item_t *it, int32_t i, const hs_tg_entry_t *e)
{
  worker_t *w = be;
  const hs_tg_exec_t *x = &w->run->tg->execs[w->exec];
  xstate_t *xs = &w->run->xs[w->exec];
  if (e->kind == HS_TG_KERNEL) {
    span_begin(w);
    if (e->is_gemm && e->reps > 0) {
      for (int32_t kk = 0; kk < e->n_kernels; kk++)
        for (int64_t rp = 0; rp < e->reps; rp++) {
          if (kk == 0)
            hs__cpu_gemm(e->m, e->n, e->k, w->a, w->b, w->c);
          else /* weight gradient: (k x m)(m x n) */
            hs__cpu_gemm(e->k, e->n, e->m, w->a, w->b, w->c);
        }
    } else if (e->bytes > 0) {
      hs__cpu_stream(w->dst, w->src, (size_t)(e->bytes / 8.0));
    }
    double s = span_end(w);
    if (w->record && w->tp_rank == 0) {
      if (hs_reserve((void **)&w->ks, &w->cap_ks, w->n_ks + 1, sizeof *w->ks) != HS_OK)
        return w->st = HS_ENOMEM;
      w->ks[w->n_ks++] = (hs_kernel_sample_t){.exec = w->exec, .chunk = it->chunk, .entry = i,
                                               .phase = (int16_t)it->phase, .s = s};
    }
  } else if (x->tp > 1) {
    double t0 = timeline(w);
    if (e->coll_op == HS_COLL_ALLTOALL)
      alltoall(&xs->tp, w->tp_rank, e->coll_bytes, w);
    else
      allreduce(&xs->tp, w->tp_rank, e->coll_bytes, w);
    add_task(w, e->coll_op == HS_COLL_ALLTOALL ? "alltoall" : "allreduce",
             hs_tg_stage(x, it->chunk), it->mb, it->chunk, t0, timeline(w), e->coll_predicted_s,
             e->coll_bytes);
  }
  return HS_OK;
}

/* Waits until every piece item it needs has arrived; in cpu-clock mode the
 * timeline moves to the latest arrival. Always HS_OK. */
static hs_status_t cpu_recv(void *be, const hs_sched_item_t *it)
{
  worker_t *w = be;
  const hs_tg_exec_t *x = &w->run->tg->execs[w->exec];
  xstate_t *xs = &w->run->xs[w->exec];
  int32_t idx = ((it->mb * x->v + it->chunk) << 1) + it->phase;
  pthread_mutex_lock(&xs->mu);
  while (xs->need[idx] > 0)
    pthread_cond_wait(&xs->cv, &xs->mu);
  double ready = xs->ready_vt[idx];
  pthread_mutex_unlock(&xs->mu);
  if (w->run->cpu_clock)
    w->vt = fmax(w->vt, ready);
  return HS_OK;
}

/* TP rank 0 copies each of the item's pieces into its receiver's inbox and
 * counts it arrived (an "act" or "grad" task). Always HS_OK. */
static hs_status_t cpu_send(void *be, const hs_sched_item_t *it)
{
  worker_t *w = be;
  run_t *r = w->run;
  const hs_taskgraph_t *tg = r->tg;
  const hs_tg_exec_t *x = &tg->execs[w->exec];
  int32_t key = it->chunk * 2 + it->phase;
  for (int32_t k = 0; k < x->out_count[key] && w->tp_rank == 0; k++) {
    const hs_tg_piece_t *pc = &tg->pieces[tg->out_list[x->out_first[key] + k]];
    xstate_t *dst = &r->xs[pc->dst];
    if (!dst->active)
      continue;
    const hs_tg_exec_t *dx = &tg->execs[pc->dst];
    int32_t idx = ((it->mb * dx->v + pc->dst_chunk) << 1) + pc->phase;
    pthread_mutex_lock(&dst->mu);
    double t0 = span_begin(w);
    size_t n = HS_MIN((size_t)(pc->total_bytes / 4.0), dst->inbox_n);
    memcpy(dst->inbox, w->dst, n * sizeof(float));
    span_end(w);
    double t1 = timeline(w);
    dst->ready_vt[idx] = fmax(dst->ready_vt[idx], t1);
    dst->need[idx]--;
    pthread_cond_broadcast(&dst->cv);
    pthread_mutex_unlock(&dst->mu);
    add_task(w, pc->phase == HS_PHASE_FWD ? "act" : "grad", pc->src_stage, it->mb, it->chunk, t0, t1,
             pc->predicted_s, pc->total_bytes);
  }
  return HS_OK;
}

/* Notes where the item starts on the timeline. Always HS_OK. */
static hs_status_t cpu_item_begin(void *be, const hs_sched_item_t *it)
{
  worker_t *w = be;
  w->item_t0 = timeline(w);
  return HS_OK;
}

/* Records the item: its sample (TP rank 0, timed iterations) and its
 * "fwd"/"bwd" task. Returns the worker's status, so that a failure inside
 * the item stops the walk before its sends. */
static hs_status_t cpu_item_end(void *be, const hs_sched_item_t *it)
{
  worker_t *w = be;
  const hs_tg_exec_t *x = &w->run->tg->execs[w->exec];
  double t0 = w->item_t0, t1 = timeline(w);
  if (w->st != HS_OK)
    return w->st;
  if (w->record && w->tp_rank == 0) {
    if (hs_reserve((void **)&w->is, &w->cap_is, w->n_is + 1, sizeof *w->is) != HS_OK)
      return w->st = HS_ENOMEM;
    w->is[w->n_is++] = (hs_item_sample_t){.exec = w->exec, .chunk = it->chunk,
                                           .phase = it->phase, .s = t1 - t0};
  }
  add_task(w, it->phase == HS_PHASE_FWD ? "fwd" : "bwd", hs_tg_stage(x, it->chunk), it->mb,
           it->chunk, t0, t1, x->work[it->chunk * 2 + it->phase].predicted_compute_s, 0.0);
  return HS_OK;
}

/* After the last item: the gradient buckets in the lowering's order (TP
 * rank j with rank j of the peers; not in stage mode), then the optimizer
 * step; notes when this device finished. Always HS_OK. */
static hs_status_t cpu_finish(void *be)
{
  worker_t *w = be;
  run_t *r = w->run;
  const hs_taskgraph_t *tg = r->tg;
  const hs_tg_exec_t *x = &tg->execs[w->exec];
  for (int32_t k = 0; k < x->n_buckets && r->o->only_stage < 0; k++) {
    int32_t b = x->buckets[k];
    const hs_tg_bucket_t *bk = &tg->buckets[b];
    if (w->tp_rank >= bk->tp)
      continue; /* a tied pair of unequal TP degrees: first devices only */
    int32_t me = 0;
    for (int32_t h = 0; h < bk->n_holders; h++)
      if (bk->holders[h] == w->exec)
        me = h * bk->tp + w->tp_rank;
    double t0 = timeline(w);
    /* the group holds every TP rank; each rank reduces bytes/tp of its own
     * shard plus the others', which moves what TP rank j's ring would */
    allreduce(&r->bgroups[b], me, bk->bytes, w);
    add_task(w, "grad-allreduce", hs_tg_stage(x, 0), -1, -1, t0, timeline(w), bk->predicted_s,
             bk->bytes);
  }
  double t0 = span_begin(w);
  if (x->optimizer_bytes > 0)
    hs__cpu_stream(w->dst, w->src, (size_t)(x->optimizer_bytes / 8.0));
  span_end(w);
  add_task(w, "optimizer", hs_tg_stage(x, 0), -1, -1, t0, timeline(w), x->optimizer_predicted_s,
           x->optimizer_bytes);
  w->end_vt[w->iter] = w->vt;
  return HS_OK;
}

static const hs_replay_backend_t cpu_backend = {
    .name = "cpu",
    .recv = cpu_recv,
    .item_begin = cpu_item_begin,
    .entry = cpu_entry,
    .item_end = cpu_item_end,
    .send = cpu_send,
    .finish = cpu_finish,
};

/* One iteration of this worker's executor; a failure stays in w->st. */
static void iteration(worker_t *w, bool record)
{
  w->vt = 0.0;
  w->record = record;
  (void)hs__replay_walk(&cpu_backend, w, &w->run->tg->execs[w->exec]);
}

static void reset_need(run_t *r)
{
  const hs_taskgraph_t *tg = r->tg;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    if (!r->xs[e].active)
      continue;
    memset(r->xs[e].need, 0, sizeof(int32_t) * (size_t)x->m * (size_t)x->v * 2);
    memset(r->xs[e].ready_vt, 0, sizeof(double) * (size_t)x->m * (size_t)x->v * 2);
  }
  for (int32_t p = 0; p < tg->n_pieces; p++) {
    const hs_tg_piece_t *pc = &tg->pieces[p];
    if (!r->xs[pc->src].active || !r->xs[pc->dst].active)
      continue;
    const hs_tg_exec_t *dx = &tg->execs[pc->dst];
    for (int32_t mb = 0; mb < dx->m; mb++)
      r->xs[pc->dst].need[((mb * dx->v + pc->dst_chunk) << 1) + pc->phase]++;
  }
}

static void *worker_main(void *arg)
{
  worker_t *w = arg;
  run_t *r = w->run;
  pthread_mutex_lock(&r->gate_mu);
  while (r->gate == 0)
    pthread_cond_wait(&r->gate_cv, &r->gate_mu);
  int go = r->gate;
  pthread_mutex_unlock(&r->gate_mu);
  if (go < 0)
    return NULL;
  double (*clock)(void) = r->cpu_clock ? hs__thread_cpu_s : hs__clock_s;
  float *pa = w->probe_buf, *pb = pa + HS_PROBE_FLOATS, *pc = pb + HS_PROBE_FLOATS;
  /* The speed probe: once before the first iteration and once after each,
   * every thread at once, never inside a timed span. With the CPU clock it
   * runs right after the thread's own work, before the end barrier, where
   * the core has just done the work it stands for (taken after sleeping in
   * that barrier, 8 idle rounds leaned +7.9% in the median; here, 16 idle
   * rounds had medians +3.9% and -0.4%, docs/validation.md). The wall
   * clock times up to the end barrier, so there it runs after it. */
  w->probe_s[w->n_probe++] = hs__cpu_probe_s(pa, pb, pc, clock);
  for (int32_t it = 0; it < r->n_iter_total; it++) {
    /* worker 0 resets the counters between the end and start barriers */
    if (w == &r->w[0])
      reset_need(r);
    pthread_barrier_wait(&r->all);
    if (w == &r->w[0])
      r->t_start[it] = hs__clock_s();
    pthread_barrier_wait(&r->all);
    w->iter = it;
    iteration(w, it >= r->o->warmup);
    if (r->cpu_clock)
      w->probe_s[w->n_probe++] = hs__cpu_probe_s(pa, pb, pc, clock);
    pthread_barrier_wait(&r->all);
    if (w == &r->w[0])
      r->t_end[it] = hs__clock_s();
    if (!r->cpu_clock)
      w->probe_s[w->n_probe++] = hs__cpu_probe_s(pa, pb, pc, clock);
  }
  return NULL;
}

/* ---- setup -------------------------------------------------------------------- */

static float *fbuf(size_t n)
{
  return hs_calloc(n ? n : 1, sizeof(float));
}

static hs_status_t group_init(group_t *g, int32_t n)
{
  g->n = n;
  g->bufs = hs_calloc((size_t)n, sizeof *g->bufs);
  g->vt = hs_calloc((size_t)n, sizeof *g->vt);
  if (!g->bufs || !g->vt)
    return HS_ENOMEM;
  if (pthread_barrier_init(&g->bar, NULL, (unsigned)n) != 0)
    return HS_EINTERNAL;
  g->live = true;
  return HS_OK;
}

static void group_destroy(group_t *g)
{
  if (g->live)
    pthread_barrier_destroy(&g->bar);
  free(g->bufs);
  free(g->vt);
}

/* Reads tg and r->o; allocates the per-executor and per-bucket arrays, marks
 * which executors run and counts their threads into r->n_w (one per TP
 * rank), then allocates r->w. Errors: a --stage that selects nothing, more
 * than 1024 threads, out of memory. */
static hs_status_t run_plan(run_t *r, hs_error_t *err)
{
  const hs_taskgraph_t *tg = r->tg;
  r->xs = hs_calloc((size_t)tg->n_execs + 1, sizeof *r->xs);
  r->bgroups = hs_calloc((size_t)tg->n_buckets + 1, sizeof *r->bgroups);
  r->t_start = hs_calloc((size_t)r->n_iter_total, sizeof(double));
  r->t_end = hs_calloc((size_t)r->n_iter_total, sizeof(double));
  if (!r->xs || !r->bgroups || !r->t_start || !r->t_end)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  bool any = false;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    bool act = hs__replay_active(r->o, x);
    r->xs[e].active = act;
    any |= act;
    if (act)
      r->n_w += x->tp;
  }
  if (!any)
    return hs__replay_no_stage(r->o, err);
  if (r->n_w > 1024)
    return hs_error_set(err, HS_ELIMIT, "replay: the CPU backend runs one thread per device; "
                                        "%d devices is too many (max 1024)", r->n_w);
  r->w = hs_calloc((size_t)r->n_w, sizeof *r->w);
  if (!r->w)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  return HS_OK;
}

/* Reads executor e's work lists, buckets and pieces; guarantees buffer
 * sizes (floats, each >= 1) that hold its largest GEMM operand, memory-bound
 * kernel, outgoing piece and optimizer step (*stream_n) and its largest TP
 * collective or bucket (*coll_n). HS_ELIMIT naming the op or executor when
 * one exceeds HS_CPU_MAX_ELEMS. */
static hs_status_t exec_sizes(const hs_taskgraph_t *tg, const hs_model_t *m, int32_t e,
                              size_t *gemm_n_out, size_t *stream_n_out, size_t *coll_n_out,
                              hs_error_t *err)
{
  const hs_tg_exec_t *x = &tg->execs[e];
  size_t gemm_n = 1, stream_n = (size_t)(x->optimizer_bytes / 8.0) + 1, coll_n = 1;
  double out_bytes = 0.0;
  for (int32_t k = 0; k < 2 * x->v; k++)
    for (int32_t i = 0; i < x->work[k].n; i++) {
      const hs_tg_entry_t *en = &x->work[k].e[i];
      if (en->kind == HS_TG_KERNEL && en->is_gemm) {
        int64_t big = HS_MAX(en->m * en->k, HS_MAX(en->k * en->n, en->m * en->n));
        if (big > HS_CPU_MAX_ELEMS)
          return hs_error_set(err, HS_ELIMIT,
                              "replay: op %d (%s) needs a %lld-element GEMM operand; the CPU "
                              "backend is for small models (max %lld)",
                              en->op, m->ops[en->op].name, (long long)big,
                              (long long)HS_CPU_MAX_ELEMS);
        gemm_n = HS_MAX(gemm_n, (size_t)big);
      } else if (en->kind == HS_TG_KERNEL) {
        stream_n = HS_MAX(stream_n, (size_t)(en->bytes / 8.0) + 1);
      } else {
        coll_n = HS_MAX(coll_n, 2 * (size_t)(en->coll_bytes / 4.0) + 1);
      }
    }
  for (int32_t k = 0; k < x->n_buckets; k++)
    coll_n = HS_MAX(coll_n, (size_t)(tg->buckets[x->buckets[k]].bytes / 4.0) + 1);
  for (int32_t p = 0; p < tg->n_pieces; p++)
    if (tg->pieces[p].src == e)
      out_bytes = fmax(out_bytes, tg->pieces[p].total_bytes);
  stream_n = HS_MAX(stream_n, (size_t)(out_bytes / 4.0) + 1);
  if ((double)stream_n > (double)HS_CPU_MAX_ELEMS || (double)coll_n > (double)HS_CPU_MAX_ELEMS)
    return hs_error_set(err, HS_ELIMIT,
                        "replay: executor %d moves more than %lld floats in one kernel; the "
                        "CPU backend is for small models",
                        e, (long long)HS_CPU_MAX_ELEMS);
  *gemm_n_out = gemm_n;
  *stream_n_out = stream_n;
  *coll_n_out = coll_n;
  return HS_OK;
}

/* Reads active executor e; guarantees its mutex, condition, arrival
 * counters, inbox (its largest incoming piece) and TP group. HS_ENOMEM or
 * HS_EINTERNAL on failure (run_destroy frees what was made). */
static hs_status_t exec_init(run_t *r, int32_t e, hs_error_t *err)
{
  const hs_taskgraph_t *tg = r->tg;
  const hs_tg_exec_t *x = &tg->execs[e];
  xstate_t *xs = &r->xs[e];
  pthread_mutex_init(&xs->mu, NULL);
  pthread_cond_init(&xs->cv, NULL);
  xs->need = hs_calloc((size_t)x->m * (size_t)x->v * 2 + 1, sizeof(int32_t));
  xs->ready_vt = hs_calloc((size_t)x->m * (size_t)x->v * 2 + 1, sizeof(double));
  double in_bytes = 0.0;
  for (int32_t p = 0; p < tg->n_pieces; p++)
    if (tg->pieces[p].dst == e)
      in_bytes = fmax(in_bytes, tg->pieces[p].total_bytes);
  xs->inbox_n = (size_t)(in_bytes / 4.0) + 1;
  xs->inbox = fbuf(xs->inbox_n);
  if (!xs->need || !xs->ready_vt || !xs->inbox)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  return group_init(&xs->tp, x->tp);
}

/* Guarantees worker w's GEMM, stream, collective, timeline and probe
 * buffers of the given sizes, filled where the kernels read them. HS_ENOMEM
 * on failure. */
static hs_status_t worker_init(worker_t *w, int32_t n_iter_total, size_t gemm_n, size_t stream_n,
                               size_t coll_n, hs_error_t *err)
{
  w->gemm_n = gemm_n;
  w->stream_n = stream_n;
  w->coll_n = coll_n;
  w->a = fbuf(gemm_n);
  w->b = fbuf(gemm_n);
  w->c = fbuf(gemm_n);
  w->src = fbuf(stream_n);
  w->dst = fbuf(stream_n);
  w->coll = fbuf(coll_n);
  w->end_vt = hs_calloc((size_t)n_iter_total, sizeof(double));
  w->probe_buf = fbuf(3 * HS_PROBE_FLOATS);
  w->probe_s = hs_calloc((size_t)n_iter_total + 1, sizeof(double));
  if (!w->probe_buf || !w->probe_s)
    return hs_error_set(err, HS_ENOMEM, "out of memory for replay buffers");
  hs__cpu_fill(w->probe_buf, 2 * HS_PROBE_FLOATS);
  if (!w->end_vt || !w->a || !w->b || !w->c || !w->src || !w->dst || !w->coll)
    return hs_error_set(err, HS_ENOMEM, "out of memory for replay buffers");
  hs__cpu_fill(w->a, gemm_n);
  hs__cpu_fill(w->b, gemm_n);
  hs__cpu_fill(w->src, stream_n);
  hs__cpu_fill(w->coll, coll_n);
  return HS_OK;
}

/* Reads the active executors in order; guarantees their state and one
 * worker per TP rank (r->w in executor order, TP rank order), each TP
 * group's buffers pointing at its workers', and per bucket (plan mode) a
 * group of every thread of every holder. */
static hs_status_t run_setup(run_t *r, const hs_model_t *m, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = r->tg;
  int32_t wi = 0;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    if (!r->xs[e].active)
      continue;
    HS_CHECK(exec_init(r, e, err));
    size_t gemm_n = 1, stream_n = 1, coll_n = 1;
    HS_CHECK(exec_sizes(tg, m, e, &gemm_n, &stream_n, &coll_n, err));
    for (int32_t j = 0; j < x->tp; j++, wi++) {
      worker_t *w = &r->w[wi];
      w->run = r;
      w->exec = e;
      w->tp_rank = j;
      w->device = x->devices[j];
      HS_CHECK(worker_init(w, r->n_iter_total, gemm_n, stream_n, coll_n, err));
      r->xs[e].tp.bufs[j] = w->coll;
    }
  }
  if (r->o->only_stage < 0)
    for (int32_t b = 0; b < tg->n_buckets; b++) {
      const hs_tg_bucket_t *bk = &tg->buckets[b];
      int32_t tp = bk->tp;
      HS_CHECK(group_init(&r->bgroups[b], bk->n_holders * tp));
      for (int32_t k = 0; k < r->n_w; k++)
        for (int32_t h = 0; h < bk->n_holders; h++)
          if (r->w[k].exec == bk->holders[h] && r->w[k].tp_rank < tp)
            r->bgroups[b].bufs[h * tp + r->w[k].tp_rank] = r->w[k].coll;
    }
cleanup:
  return st;
}

/* Starts one thread per worker behind the start gate and joins them all.
 * Guarantees every thread ran every iteration, or none ran any (a partial
 * set could never pass its barriers: the started ones leave). Errors: a
 * barrier or thread that cannot be made, a worker's own failure. */
static hs_status_t run_threads(run_t *r, hs_error_t *err)
{
  int32_t started = 0;
  if (pthread_barrier_init(&r->all, NULL, (unsigned)r->n_w) != 0)
    return hs_error_set(err, HS_EINTERNAL, "replay: cannot create a barrier");
  r->all_live = true;
  pthread_mutex_init(&r->gate_mu, NULL);
  pthread_cond_init(&r->gate_cv, NULL);
  for (started = 0; started < r->n_w; started++)
    if (pthread_create(&r->w[started].th, NULL, worker_main, &r->w[started]) != 0)
      break;
  pthread_mutex_lock(&r->gate_mu);
  r->gate = started == r->n_w ? 1 : -1;
  pthread_cond_broadcast(&r->gate_cv);
  pthread_mutex_unlock(&r->gate_mu);
  for (int32_t k = 0; k < started; k++)
    pthread_join(r->w[k].th, NULL);
  pthread_mutex_destroy(&r->gate_mu);
  pthread_cond_destroy(&r->gate_cv);
  if (started < r->n_w)
    return hs_error_set(err, HS_ENOMEM, "replay: could only start %d of %d threads", started,
                        r->n_w);
  for (int32_t k = 0; k < r->n_w; k++)
    if (r->w[k].st != HS_OK)
      return hs_error_set(err, r->w[k].st, "replay: %s", hs_status_message(r->w[k].st));
  return HS_OK;
}

/* ---- results ------------------------------------------------------------------ */

/* Reads the finished run; guarantees out's per-iteration times (wall: start
 * to end barrier; cpu clock: the latest device timeline), their median,
 * and the median iteration's task records; *ks, *is every worker's samples
 * in worker order (the caller frees them). HS_ENOMEM on failure. */
static hs_status_t collect_samples(const run_t *r, hs_measured_t *out, hs_kernel_sample_t **ks_out,
                                   size_t *n_ks_out, hs_item_sample_t **is_out, size_t *n_is_out,
                                   hs_error_t *err)
{
  const hs_replay_opts_t *o = r->o;
  out->n_iterations = o->iterations;
  out->iteration_s = hs_calloc((size_t)o->iterations, sizeof(double));
  if (!out->iteration_s)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (int32_t i = 0; i < o->iterations; i++) {
    int32_t it = o->warmup + i;
    out->iteration_s[i] = r->t_end[it] - r->t_start[it];
    if (r->cpu_clock) {
      out->iteration_s[i] = 0.0;
      for (int32_t k = 0; k < r->n_w; k++)
        out->iteration_s[i] = fmax(out->iteration_s[i], r->w[k].end_vt[it]);
    }
  }
  int32_t med_it = o->warmup + hs__replay_median(out);
  size_t n_ks = 0, n_is = 0, n_t = 0;
  for (int32_t k = 0; k < r->n_w; k++) {
    n_ks += r->w[k].n_ks;
    n_is += r->w[k].n_is;
    for (size_t t = 0; t < r->w[k].n_tasks; t++)
      n_t += r->w[k].task_iter[t] == med_it;
  }
  hs_kernel_sample_t *ks = *ks_out = hs_calloc(n_ks + 1, sizeof *ks);
  hs_item_sample_t *is = *is_out = hs_calloc(n_is + 1, sizeof *is);
  out->tasks = hs_calloc(n_t + 1, sizeof *out->tasks);
  if (!ks || !is || !out->tasks)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  n_ks = n_is = 0;
  for (int32_t k = 0; k < r->n_w; k++) {
    if (r->w[k].n_ks)
      memcpy(ks + n_ks, r->w[k].ks, r->w[k].n_ks * sizeof *ks);
    n_ks += r->w[k].n_ks;
    if (r->w[k].n_is)
      memcpy(is + n_is, r->w[k].is, r->w[k].n_is * sizeof *is);
    n_is += r->w[k].n_is;
    for (size_t t = 0; t < r->w[k].n_tasks; t++)
      if (r->w[k].task_iter[t] == med_it)
        out->tasks[out->n_tasks++] = r->w[k].tasks[t];
  }
  *n_ks_out = n_ks;
  *n_is_out = n_is;
  return HS_OK;
}

/* The speed probe into out: the median over every thread's samples, and per
 * timed iteration the mean over threads of the samples around it. */
static hs_status_t collect_probe(const run_t *r, hs_measured_t *out, hs_error_t *err)
{
  const hs_replay_opts_t *o = r->o;
  double *all = hs_calloc((size_t)r->n_w * ((size_t)r->n_iter_total + 1), sizeof(double));
  out->speed_probe_iter_s = hs_calloc((size_t)o->iterations, sizeof(double));
  if (!all || !out->speed_probe_iter_s) {
    free(all);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  size_t na = 0;
  for (int32_t k = 0; k < r->n_w; k++)
    for (int32_t q = 0; q < r->w[k].n_probe; q++)
      all[na++] = r->w[k].probe_s[q];
  out->speed_probe_s = hs_median(all, na);
  free(all);
  for (int32_t i = 0; i < o->iterations; i++) {
    int32_t it = o->warmup + i;
    double sum = 0.0;
    for (int32_t k = 0; k < r->n_w; k++)
      sum += 0.5 * (r->w[k].probe_s[it] + r->w[k].probe_s[it + 1]);
    out->speed_probe_iter_s[i] = sum / r->n_w;
  }
  return HS_OK;
}

/* Frees everything run_plan, run_setup and run_threads made; accepts a
 * partly built run. */
static void run_destroy(run_t *r)
{
  const hs_taskgraph_t *tg = r->tg;
  if (r->all_live)
    pthread_barrier_destroy(&r->all);
  for (int32_t k = 0; r->w && k < r->n_w; k++) {
    worker_t *w = &r->w[k];
    free(w->a);
    free(w->b);
    free(w->c);
    free(w->src);
    free(w->dst);
    free(w->coll);
    free(w->ks);
    free(w->is);
    free(w->tasks);
    free(w->task_iter);
    free(w->end_vt);
    free(w->probe_buf);
    free(w->probe_s);
  }
  free(r->w);
  for (int32_t e = 0; r->xs && e < tg->n_execs; e++) {
    xstate_t *xs = &r->xs[e];
    if (!xs->active)
      continue;
    pthread_mutex_destroy(&xs->mu);
    pthread_cond_destroy(&xs->cv);
    free(xs->need);
    free(xs->ready_vt);
    free(xs->inbox);
    group_destroy(&xs->tp);
  }
  free(r->xs);
  for (int32_t b = 0; r->bgroups && b < tg->n_buckets; b++)
    group_destroy(&r->bgroups[b]);
  free(r->bgroups);
  free(r->t_start);
  free(r->t_end);
}

hs_status_t hs_replay_cpu(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                          hs_measured_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  run_t r = {0};
  hs_kernel_sample_t *ks = NULL;
  hs_item_sample_t *is = NULL;
  size_t n_ks = 0, n_is = 0;
  hs_replay_opts_t defaults;
  hs_measured_init(out);
  st = hs__replay_opts(o, &defaults, &o, err);
  if (st != HS_OK)
    return st;
  hs__cpu_blas_init();
  r.tg = tg;
  r.o = o;
  r.cpu_clock = o->clock == HS_CLOCK_CPU;
  r.n_iter_total = o->warmup + o->iterations;
  HS_CHECK(run_plan(&r, err));
  HS_CHECK(run_setup(&r, m, err));
  HS_CHECK(run_threads(&r, err));
  HS_CHECK(collect_samples(&r, out, &ks, &n_ks, &is, &n_is, err));
  HS_CHECK(collect_probe(&r, out, err));
  HS_CHECK(hs__replay_label(tg, o, cpu_backend.name, ks, n_ks, is, n_is, out, err));
  snprintf(out->device, sizeof out->device, "cpu: %d threads (one per device), %s clock", r.n_w,
           r.cpu_clock ? "thread-cpu" : "wall");
cleanup:
  run_destroy(&r);
  free(ks);
  free(is);
  if (st != HS_OK)
    hs_measured_destroy(out);
  return st;
}
