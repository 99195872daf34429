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
#include "validate_internal.h"

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
  memset(t, 0, sizeof *t);
  hs_strlcpy(t->name, name, sizeof t->name);
  t->exec = w->exec;
  t->device = w->device;
  t->stage = stage;
  t->mb = mb;
  t->chunk = chunk;
  t->t0_s = t0;
  t->t1_s = t1;
  t->predicted_s = predicted;
  t->bytes = bytes;
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

/* ---- one work list ---------------------------------------------------------- */

static void run_work(worker_t *w, const hs_tg_exec_t *x, int32_t chunk, int32_t phase, bool record,
                     int32_t mb)
{
  run_t *r = w->run;
  const hs_tg_work_t *wk = &x->work[chunk * 2 + phase];
  xstate_t *xs = &r->xs[w->exec];
  for (int32_t i = 0; i < wk->n; i++) {
    const hs_tg_entry_t *e = &wk->e[i];
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
      if (record && w->tp_rank == 0) {
        if (hs_reserve((void **)&w->ks, &w->cap_ks, w->n_ks + 1, sizeof *w->ks) != HS_OK) {
          w->st = HS_ENOMEM;
          return;
        }
        w->ks[w->n_ks++] = (hs_kernel_sample_t){.exec = w->exec, .chunk = chunk, .entry = i,
                                                 .phase = (int16_t)phase, .s = s};
      }
    } else if (x->tp > 1) {
      double t0 = timeline(w);
      if (e->coll_op == HS_COLL_ALLTOALL)
        alltoall(&xs->tp, w->tp_rank, e->coll_bytes, w);
      else
        allreduce(&xs->tp, w->tp_rank, e->coll_bytes, w);
      add_task(w, e->coll_op == HS_COLL_ALLTOALL ? "alltoall" : "allreduce", hs_tg_stage(x, chunk),
               mb, chunk, t0, timeline(w), e->coll_predicted_s, e->coll_bytes);
    }
  }
}

static void wait_inputs(worker_t *w, xstate_t *xs, int32_t idx)
{
  pthread_mutex_lock(&xs->mu);
  while (xs->need[idx] > 0)
    pthread_cond_wait(&xs->cv, &xs->mu);
  double ready = xs->ready_vt[idx];
  pthread_mutex_unlock(&xs->mu);
  if (w->run->cpu_clock)
    w->vt = fmax(w->vt, ready);
}

static void send_pieces(worker_t *w, const hs_tg_exec_t *x, const hs_sched_item_t *it)
{
  run_t *r = w->run;
  const hs_taskgraph_t *tg = r->tg;
  int32_t key = it->chunk * 2 + it->phase;
  for (int32_t k = 0; k < x->out_count[key]; k++) {
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
}

static void iteration(worker_t *w, bool record)
{
  run_t *r = w->run;
  const hs_taskgraph_t *tg = r->tg;
  const hs_tg_exec_t *x = &tg->execs[w->exec];
  xstate_t *xs = &r->xs[w->exec];
  w->vt = 0.0;
  for (int32_t p = 0; p < x->n_items; p++) {
    const hs_sched_item_t *it = &x->order[p];
    wait_inputs(w, xs, ((it->mb * x->v + it->chunk) << 1) + it->phase);
    double t0 = timeline(w);
    run_work(w, x, it->chunk, it->phase, record, it->mb);
    double t1 = timeline(w);
    if (w->st != HS_OK)
      return;
    if (record && w->tp_rank == 0) {
      if (hs_reserve((void **)&w->is, &w->cap_is, w->n_is + 1, sizeof *w->is) != HS_OK) {
        w->st = HS_ENOMEM;
        return;
      }
      w->is[w->n_is++] = (hs_item_sample_t){.exec = w->exec, .chunk = it->chunk,
                                             .phase = it->phase, .s = t1 - t0};
    }
    add_task(w, it->phase == HS_PHASE_FWD ? "fwd" : "bwd", hs_tg_stage(x, it->chunk), it->mb,
             it->chunk, t0, t1, x->work[it->chunk * 2 + it->phase].predicted_compute_s, 0.0);
    if (w->tp_rank == 0)
      send_pieces(w, x, it);
  }
  /* gradient buckets in the lowering's order, TP rank j with rank j of peers */
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

void hs_replay_opts_init(hs_replay_opts_t *o)
{
  o->iterations = 5;
  o->warmup = 1;
  o->only_stage = -1;
  o->clock = HS_CLOCK_CPU;
}

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

hs_status_t hs_replay_cpu(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                          hs_measured_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  run_t r = {0};
  bool all_live = false;
  int32_t started = 0;
  hs_kernel_sample_t *ks = NULL;
  hs_item_sample_t *is = NULL;
  hs_measured_init(out);
  hs_replay_opts_t defaults;
  if (!o) {
    hs_replay_opts_init(&defaults);
    o = &defaults;
  }
  if (o->iterations < 1 || o->warmup < 0)
    return hs_error_set(err, HS_EINVAL, "replay: iterations must be >= 1 and warm-up >= 0");
  hs__cpu_blas_init();
  r.tg = tg;
  r.o = o;
  r.cpu_clock = o->clock == HS_CLOCK_CPU;
  r.n_iter_total = o->warmup + o->iterations;
  r.xs = hs_calloc((size_t)tg->n_execs + 1, sizeof *r.xs);
  r.bgroups = hs_calloc((size_t)tg->n_buckets + 1, sizeof *r.bgroups);
  r.t_start = hs_calloc((size_t)r.n_iter_total, sizeof(double));
  r.t_end = hs_calloc((size_t)r.n_iter_total, sizeof(double));
  if (!r.xs || !r.bgroups || !r.t_start || !r.t_end)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* which executors run */
  bool any = false;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    bool act = o->only_stage < 0 || (x->pipeline == 0 && x->v == 1 && x->rank == o->only_stage);
    r.xs[e].active = act;
    any |= act;
    if (act)
      r.n_w += x->tp;
  }
  if (!any)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "replay: --stage %d: pipeline 0 has no such stage (interleaved plans "
                         "cannot be replayed stage by stage)",
                         o->only_stage));
  if (r.n_w > 1024)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "replay: the CPU backend runs one thread per device; "
                                         "%d devices is too many (max 1024)", r.n_w));
  r.w = hs_calloc((size_t)r.n_w, sizeof *r.w);
  if (!r.w)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* per-executor state and per-worker buffers */
  int32_t wi = 0;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    xstate_t *xs = &r.xs[e];
    if (!xs->active)
      continue;
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
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    HS_CHECK(group_init(&xs->tp, x->tp));
    size_t gemm_n = 1, stream_n = (size_t)(x->optimizer_bytes / 8.0) + 1, coll_n = 1;
    double out_bytes = 0.0;
    for (int32_t k = 0; k < 2 * x->v; k++)
      for (int32_t i = 0; i < x->work[k].n; i++) {
        const hs_tg_entry_t *en = &x->work[k].e[i];
        if (en->kind == HS_TG_KERNEL && en->is_gemm) {
          int64_t big = HS_MAX(en->m * en->k, HS_MAX(en->k * en->n, en->m * en->n));
          if (big > HS_CPU_MAX_ELEMS)
            HS_FAIL(hs_error_set(err, HS_ELIMIT,
                                 "replay: op %d (%s) needs a %lld-element GEMM operand; the CPU "
                                 "backend is for small models (max %lld)",
                                 en->op, m->ops[en->op].name, (long long)big,
                                 (long long)HS_CPU_MAX_ELEMS));
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
      HS_FAIL(hs_error_set(err, HS_ELIMIT,
                           "replay: executor %d moves more than %lld floats in one kernel; the "
                           "CPU backend is for small models",
                           e, (long long)HS_CPU_MAX_ELEMS));
    for (int32_t j = 0; j < x->tp; j++, wi++) {
      worker_t *w = &r.w[wi];
      w->run = &r;
      w->exec = e;
      w->tp_rank = j;
      w->device = x->devices[j];
      w->gemm_n = gemm_n;
      w->stream_n = stream_n;
      w->coll_n = coll_n;
      w->a = fbuf(gemm_n);
      w->b = fbuf(gemm_n);
      w->c = fbuf(gemm_n);
      w->src = fbuf(stream_n);
      w->dst = fbuf(stream_n);
      w->coll = fbuf(coll_n);
      w->end_vt = hs_calloc((size_t)r.n_iter_total, sizeof(double));
      w->probe_buf = fbuf(3 * HS_PROBE_FLOATS);
      w->probe_s = hs_calloc((size_t)r.n_iter_total + 1, sizeof(double));
      if (!w->probe_buf || !w->probe_s)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for replay buffers"));
      hs__cpu_fill(w->probe_buf, 2 * HS_PROBE_FLOATS);
      if (!w->end_vt || !w->a || !w->b || !w->c || !w->src || !w->dst || !w->coll)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for replay buffers"));
      hs__cpu_fill(w->a, gemm_n);
      hs__cpu_fill(w->b, gemm_n);
      hs__cpu_fill(w->src, stream_n);
      hs__cpu_fill(w->coll, coll_n);
      xs->tp.bufs[j] = w->coll;
    }
  }
  /* bucket groups: every thread of every active holder */
  if (o->only_stage < 0)
    for (int32_t b = 0; b < tg->n_buckets; b++) {
      const hs_tg_bucket_t *bk = &tg->buckets[b];
      int32_t tp = bk->tp;
      HS_CHECK(group_init(&r.bgroups[b], bk->n_holders * tp));
      for (int32_t k = 0; k < r.n_w; k++)
        for (int32_t h = 0; h < bk->n_holders; h++)
          if (r.w[k].exec == bk->holders[h] && r.w[k].tp_rank < tp)
            r.bgroups[b].bufs[h * tp + r.w[k].tp_rank] = r.w[k].coll;
    }
  if (pthread_barrier_init(&r.all, NULL, (unsigned)r.n_w) != 0)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "replay: cannot create a barrier"));
  all_live = true;
  pthread_mutex_init(&r.gate_mu, NULL);
  pthread_cond_init(&r.gate_cv, NULL);
  for (started = 0; started < r.n_w; started++)
    if (pthread_create(&r.w[started].th, NULL, worker_main, &r.w[started]) != 0)
      break;
  /* a partial set could never pass its barriers: the started ones leave */
  pthread_mutex_lock(&r.gate_mu);
  r.gate = started == r.n_w ? 1 : -1;
  pthread_cond_broadcast(&r.gate_cv);
  pthread_mutex_unlock(&r.gate_mu);
  for (int32_t k = 0; k < started; k++)
    pthread_join(r.w[k].th, NULL);
  pthread_mutex_destroy(&r.gate_mu);
  pthread_cond_destroy(&r.gate_cv);
  if (started < r.n_w)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "replay: could only start %d of %d threads", started, r.n_w));
  for (int32_t k = 0; k < r.n_w; k++)
    if (r.w[k].st != HS_OK)
      HS_FAIL(hs_error_set(err, r.w[k].st, "replay: %s", hs_status_message(r.w[k].st)));

  /* results */
  out->n_iterations = o->iterations;
  out->iteration_s = hs_calloc((size_t)o->iterations, sizeof(double));
  if (!out->iteration_s)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < o->iterations; i++) {
    int32_t it = o->warmup + i;
    out->iteration_s[i] = r.t_end[it] - r.t_start[it];
    if (r.cpu_clock) {
      out->iteration_s[i] = 0.0;
      for (int32_t k = 0; k < r.n_w; k++)
        out->iteration_s[i] = fmax(out->iteration_s[i], r.w[k].end_vt[it]);
    }
  }
  out->iteration_time_s = hs_median(out->iteration_s, (size_t)o->iterations);
  int32_t med_it = o->warmup;
  for (int32_t i = 0; i < o->iterations; i++)
    if (fabs(out->iteration_s[i] - out->iteration_time_s) <
        fabs(out->iteration_s[med_it - o->warmup] - out->iteration_time_s))
      med_it = o->warmup + i;
  size_t n_ks = 0, n_is = 0, n_t = 0;
  for (int32_t k = 0; k < r.n_w; k++) {
    n_ks += r.w[k].n_ks;
    n_is += r.w[k].n_is;
    for (size_t t = 0; t < r.w[k].n_tasks; t++)
      n_t += r.w[k].task_iter[t] == med_it;
  }
  ks = hs_calloc(n_ks + 1, sizeof *ks);
  is = hs_calloc(n_is + 1, sizeof *is);
  out->tasks = hs_calloc(n_t + 1, sizeof *out->tasks);
  if (!ks || !is || !out->tasks)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  n_ks = n_is = 0;
  for (int32_t k = 0; k < r.n_w; k++) {
    if (r.w[k].n_ks)
      memcpy(ks + n_ks, r.w[k].ks, r.w[k].n_ks * sizeof *ks);
    n_ks += r.w[k].n_ks;
    if (r.w[k].n_is)
      memcpy(is + n_is, r.w[k].is, r.w[k].n_is * sizeof *is);
    n_is += r.w[k].n_is;
    for (size_t t = 0; t < r.w[k].n_tasks; t++)
      if (r.w[k].task_iter[t] == med_it)
        out->tasks[out->n_tasks++] = r.w[k].tasks[t];
  }
  /* the speed probe: the median over every thread's samples, and per timed
   * iteration the mean of the samples around it */
  {
    double *all = hs_calloc((size_t)r.n_w * ((size_t)r.n_iter_total + 1), sizeof(double));
    out->speed_probe_iter_s = hs_calloc((size_t)o->iterations, sizeof(double));
    if (!all || !out->speed_probe_iter_s) {
      free(all);
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    }
    size_t na = 0;
    for (int32_t k = 0; k < r.n_w; k++)
      for (int32_t q = 0; q < r.w[k].n_probe; q++)
        all[na++] = r.w[k].probe_s[q];
    out->speed_probe_s = hs_median(all, na);
    free(all);
    for (int32_t i = 0; i < o->iterations; i++) {
      int32_t it = o->warmup + i;
      double sum = 0.0;
      for (int32_t k = 0; k < r.n_w; k++)
        sum += 0.5 * (r.w[k].probe_s[it] + r.w[k].probe_s[it + 1]);
      out->speed_probe_iter_s[i] = sum / r.n_w;
    }
  }
  if (hs__measured_aggregate(tg, ks, n_ks, is, n_is, out) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  hs_strlcpy(out->backend, "cpu", sizeof out->backend);
  snprintf(out->device, sizeof out->device, "cpu: %d threads (one per device), %s clock", r.n_w,
           r.cpu_clock ? "thread-cpu" : "wall");
  if (o->only_stage >= 0)
    snprintf(out->mode, sizeof out->mode, "stage %d", o->only_stage);
  else
    hs_strlcpy(out->mode, "plan", sizeof out->mode);
cleanup:
  if (all_live)
    pthread_barrier_destroy(&r.all);
  free(ks);
  free(is);
  for (int32_t k = 0; r.w && k < r.n_w; k++) {
    worker_t *w = &r.w[k];
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
  free(r.w);
  for (int32_t e = 0; r.xs && e < tg->n_execs; e++) {
    xstate_t *xs = &r.xs[e];
    if (!xs->active)
      continue;
    pthread_mutex_destroy(&xs->mu);
    pthread_cond_destroy(&xs->cv);
    free(xs->need);
    free(xs->ready_vt);
    free(xs->inbox);
    group_destroy(&xs->tp);
  }
  free(r.xs);
  for (int32_t b = 0; r.bgroups && b < tg->n_buckets; b++)
    group_destroy(&r.bgroups[b]);
  free(r.bgroups);
  free(r.t_start);
  free(r.t_end);
  if (st != HS_OK)
    hs_measured_destroy(out);
  return st;
}
