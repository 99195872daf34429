/*
 * import_torch_profiler.c - from a PyTorch profiler trace (read by
 * import_torch_profiler_json.c) to calibration points and a measured run.
 *
 * Steps: the "ProfilerStep#N" annotations, in time order; on a GPU trace the
 * step's window is its GPU annotation when there is one (the kernels run
 * behind the CPU). Per step, on the step's window:
 *   compute       union of the compute intervals (GPU: non-NCCL kernels,
 *                 memcpy and memset; CPU trace: the CPU ops of the step's
 *                 thread that are not communication)
 *   comm          union of the communication intervals (NCCL kernels; on a
 *                 CPU trace, c10d/nccl/gloo ops)
 *   exposed comm  |comm \ compute| = |comm U compute| - |compute|
 *   idle          step - |comm U compute|
 * The run's values are medians over the steps; iterations_s lists every
 * step's duration.
 *
 * Points (one per op occurrence inside a step):
 *   gemm  aten::mm A[m,k] B[k,n]; aten::addmm (C, A[m,k], B[k,n]); aten::bmm
 *         and aten::baddbmm with batch b (m is b*m: flops 2 b m n k)
 *   mem   elementwise and normalisation ops of mem_ops[]; bytes = the tensor
 *         inputs read plus the largest written (fill_/zero_: written only;
 *         copy_: source read, destination written), as the CPU
 *         microbenchmarks count traffic
 *   allreduce / p2p  NCCL kernels (AllReduce / SendRecv) with the size of
 *         the c10d op that launched them (same External id)
 * A point's time is the sum of its kernels' durations (same External id) on
 * a GPU trace, the op's own duration on a CPU trace. Ops nested in another
 * op of the same kind of point on the same thread are skipped so that
 * nothing counts twice. A step of duration 0 is refused (it would be a 0 s
 * iteration). O(events log events) for traces whose steps do not overlap.
 */
#include "validate_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const mem_ops[] = {
    "aten::add",          "aten::add_",         "aten::mul",          "aten::mul_",
    "aten::sub",          "aten::div",          "aten::gelu",         "aten::gelu_backward",
    "aten::relu",         "aten::threshold_backward", "aten::silu",   "aten::silu_backward",
    "aten::native_layer_norm", "aten::native_layer_norm_backward",     "aten::_log_softmax",
    "aten::_log_softmax_backward_data", "aten::_softmax", "aten::_softmax_backward_data",
    "aten::copy_",        "aten::fill_",        "aten::zero_",        "aten::native_dropout",
    NULL};

static bool is_mem_op(const char *n)
{
  for (int i = 0; mem_ops[i]; i++)
    if (strcmp(n, mem_ops[i]) == 0)
      return true;
  return false;
}

static bool is_gemm_op(const char *n)
{
  return strcmp(n, "aten::mm") == 0 || strcmp(n, "aten::addmm") == 0 ||
         strcmp(n, "aten::bmm") == 0 || strcmp(n, "aten::baddbmm") == 0;
}

static bool is_nccl_kernel(const hs_tp_event_t *e)
{
  return e->kind == HS_TPE_KERNEL && (strstr(e->name, "nccl") || strstr(e->name, "NCCL"));
}

static bool is_comm_op(const hs_tp_event_t *e)
{
  return e->kind == HS_TPE_CPU_OP && (strncmp(e->name, "nccl:", 5) == 0 ||
                                      strncmp(e->name, "c10d::", 6) == 0 ||
                                      strstr(e->name, "gloo") != NULL ||
                                      strcmp(e->name, "record_param_comms") == 0);
}

typedef struct ival {
  double a, b;
} ival_t;

static int cmp_ival(const void *x, const void *y)
{
  const ival_t *p = x, *q = y;
  return (p->a > q->a) - (p->a < q->a);
}

/* Length of the union of v[0..n) clipped to [lo, hi]; sorts v. */
static double union_len(ival_t *v, size_t n, double lo, double hi)
{
  qsort(v, n, sizeof *v, cmp_ival);
  double total = 0, ca = 0, cb = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    double a = fmax(v[i].a, lo), b = fmin(v[i].b, hi);
    if (b <= a)
      continue;
    if (a > cb) {
      if (cb > ca)
        total += cb - ca;
      ca = a;
      cb = b;
    } else if (b > cb) {
      cb = b;
    }
  }
  if (cb > ca)
    total += cb - ca;
  return total;
}

static int cmp_step(const void *x, const void *y)
{
  const hs_tp_event_t *const *p = x, *const *q = y;
  return ((*p)->ts_us > (*q)->ts_us) - ((*p)->ts_us < (*q)->ts_us);
}

/* Sort key of the nesting test: (tid, ts, longer first, index). */
typedef struct okey {
  int64_t tid;
  double ts, dur;
  int32_t idx;
} okey_t;

static int cmp_okey(const void *x, const void *y)
{
  const okey_t *p = x, *q = y;
  if (p->tid != q->tid)
    return p->tid < q->tid ? -1 : 1;
  if (p->ts != q->ts)
    return p->ts < q->ts ? -1 : 1;
  if (p->dur != q->dur)
    return p->dur > q->dur ? -1 : 1;
  return (p->idx > q->idx) - (p->idx < q->idx);
}

/* Seconds of the kernels launched by op `e` (same External id); a CPU trace
 * times the op itself. kt: kernel events sorted by ext_id. */
static double op_seconds(const hs_tp_event_t *e, bool gpu, const hs_tp_event_t *const *kt,
                         int32_t nk)
{
  if (!gpu)
    return e->dur_us * 1e-6;
  if (e->ext_id < 0)
    return 0.0;
  int32_t lo = 0, hi = nk;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (kt[mid]->ext_id < e->ext_id)
      lo = mid + 1;
    else
      hi = mid;
  }
  double s = 0;
  for (int32_t i = lo; i < nk && kt[i]->ext_id == e->ext_id; i++)
    s += kt[i]->dur_us * 1e-6;
  return s;
}

static int cmp_ext(const void *x, const void *y)
{
  const hs_tp_event_t *const *p = x, *const *q = y;
  if ((*p)->ext_id != (*q)->ext_id)
    return (*p)->ext_id < (*q)->ext_id ? -1 : 1;
  return ((*p)->ts_us > (*q)->ts_us) - ((*p)->ts_us < (*q)->ts_us);
}

static hs_dtype_t dtype_of(const char *t)
{
  if (strcmp(t, "c10::Half") == 0 || strcmp(t, "Half") == 0)
    return HS_DTYPE_FP16;
  if (strcmp(t, "c10::BFloat16") == 0 || strcmp(t, "BFloat16") == 0)
    return HS_DTYPE_BF16;
  if (strncmp(t, "c10::Float8", 11) == 0)
    return HS_DTYPE_FP8;
  return HS_DTYPE_FP32;
}

/* GEMM shape of op e: false when the dims are not those of a GEMM. */
static bool gemm_shape(const hs_tp_event_t *e, int64_t *m, int64_t *n, int64_t *k, double *flops)
{
  int a = strcmp(e->name, "aten::addmm") == 0 || strcmp(e->name, "aten::baddbmm") == 0 ? 1 : 0;
  bool batched = strstr(e->name, "bmm") != NULL;
  if (e->n_inputs < a + 2)
    return false;
  const int64_t *A = e->dims[a], *B = e->dims[a + 1];
  int ra = e->rank[a], rb = e->rank[a + 1];
  if (!batched && ra == 2 && rb == 2 && A[1] == B[0]) {
    *m = A[0];
    *k = A[1];
    *n = B[1];
  } else if (batched && ra == 3 && rb == 3 && A[0] == B[0] && A[2] == B[1]) {
    *m = A[0] * A[1];
    *k = A[2];
    *n = B[2];
  } else {
    return false;
  }
  if (*m <= 0 || *n <= 0 || *k <= 0)
    return false;
  *flops = 2.0 * (double)*m * (double)*n * (double)*k;
  return true;
}

static double mem_bytes(const hs_tp_event_t *e)
{
  double sum = 0, big = 0;
  for (int i = 0; i < e->n_inputs; i++) {
    double b = e->numel[i] * e->elsize[i];
    sum += b;
    big = fmax(big, b);
  }
  if (strcmp(e->name, "aten::fill_") == 0 || strcmp(e->name, "aten::zero_") == 0)
    return e->n_inputs ? e->numel[0] * e->elsize[0] : 0.0;
  if (strcmp(e->name, "aten::copy_") == 0)
    return sum;
  return sum + big;
}

/* Merges v[0..n) (sorted by start) into disjoint half-open windows, in
 * place; returns their count. */
static size_t merge_windows(ival_t *v, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(v[i].b > v[i].a))
      continue;
    if (k && v[i].a <= v[k - 1].b)
      v[k - 1].b = fmax(v[k - 1].b, v[i].b);
    else
      v[k++] = v[i];
  }
  return k;
}

/* True when x lies in one of the disjoint sorted windows w[0..n). O(log n). */
static bool in_windows(const ival_t *w, size_t n, double x)
{
  size_t lo = 0, hi = n; /* first window starting after x */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (w[mid].a <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && x < w[lo - 1].b;
}

/* c10d ops with a message size, by (External id, file order): the first in
 * the file with the kernel's id gives the size, as a linear scan would. */
static int cmp_ext_idx(const void *x, const void *y)
{
  const hs_tp_event_t *const *p = x, *const *q = y;
  if ((*p)->ext_id != (*q)->ext_id)
    return (*p)->ext_id < (*q)->ext_id ? -1 : 1;
  return (*p > *q) - (*p < *q);
}

static const hs_tp_event_t *comm_op_of(const hs_tp_event_t *const *ops, int32_t n, int64_t ext)
{
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (ops[mid]->ext_id < ext)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && ops[lo]->ext_id == ext ? ops[lo] : NULL;
}

/* Window order for the per-step pass: by start, then index. */
typedef struct win {
  double a, b;
  int32_t step;
} win_t;

static int cmp_win(const void *x, const void *y)
{
  const win_t *p = x, *q = y;
  if (p->a != q->a)
    return p->a < q->a ? -1 : 1;
  return (p->step > q->step) - (p->step < q->step);
}

/* The import's scratch: the trace's events sorted and classified, the step
 * windows, and per step the events overlapping it; every array t->n + 1 or
 * n_steps (+ 1) long, freed by scratch_free. */
typedef struct tp_scratch {
  const hs_tp_event_t **steps, **gsteps, **kt, **cops;
  int32_t n_steps, n_gsteps, nk, n_cops;
  okey_t *order;
  uint8_t *skip;
  ival_t *comp, *comm, *both, *sw;
  size_t n_sw;
  double *c_s, *x_s, *i_s, *wmax;
  win_t *win;
  int32_t *bucket, *member, *fill;
  bool gpu;                /* a GPU trace: it has kernels */
} tp_scratch_t;

static void scratch_free(tp_scratch_t *sc)
{
  free(sc->steps);
  free(sc->gsteps);
  free(sc->kt);
  free(sc->order);
  free(sc->skip);
  free(sc->comp);
  free(sc->comm);
  free(sc->both);
  free(sc->c_s);
  free(sc->x_s);
  free(sc->i_s);
  free(sc->sw);
  free(sc->cops);
  free(sc->win);
  free(sc->wmax);
  free(sc->bucket);
  free(sc->member);
  free(sc->fill);
}

/* Reads t's events; guarantees the scratch arrays, the CPU and GPU step
 * annotations sorted by time (each CPU step taking time), the kernels by
 * External id, and sc->gpu. HS_EINVAL naming the trace when it has no step
 * or a step of 0 us. */
static hs_status_t sort_events(const hs_torch_trace_t *t, tp_scratch_t *sc, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t n = (size_t)t->n + 1;
  sc->steps = hs_calloc(n, sizeof *sc->steps);
  sc->gsteps = hs_calloc(n, sizeof *sc->gsteps);
  sc->kt = hs_calloc(n, sizeof *sc->kt);
  sc->order = hs_calloc(n, sizeof *sc->order);
  sc->skip = hs_calloc(n, 1);
  sc->comp = hs_calloc(n, sizeof *sc->comp);
  sc->comm = hs_calloc(n, sizeof *sc->comm);
  sc->both = hs_calloc(n, sizeof *sc->both);
  sc->sw = hs_calloc(n, sizeof *sc->sw);
  sc->cops = hs_calloc(n, sizeof *sc->cops);
  if (!sc->steps || !sc->gsteps || !sc->kt || !sc->order || !sc->skip || !sc->comp || !sc->comm ||
      !sc->both || !sc->sw || !sc->cops)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < t->n; i++) {
    const hs_tp_event_t *e = &t->ev[i];
    if (e->kind == HS_TPE_STEP)
      sc->steps[sc->n_steps++] = e;
    else if (e->kind == HS_TPE_GPU_STEP)
      sc->gsteps[sc->n_gsteps++] = e;
    else if (e->kind == HS_TPE_KERNEL)
      sc->kt[sc->nk++] = e;
  }
  if (sc->n_steps == 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: no ProfilerStep#N annotation: record with "
                         "torch.profiler.profile(schedule=...) and call prof.step() once per "
                         "training step", t->file));
  qsort(sc->steps, (size_t)sc->n_steps, sizeof *sc->steps, cmp_step);
  qsort(sc->gsteps, (size_t)sc->n_gsteps, sizeof *sc->gsteps, cmp_step);
  qsort(sc->kt, (size_t)sc->nk, sizeof *sc->kt, cmp_ext);
  /* a step of duration 0 would be an iteration of 0 s, which measured.json
   * refuses: refuse it here, naming it */
  for (int32_t s = 0; s < sc->n_steps; s++)
    if (!(sc->steps[s]->dur_us * 1e-6 > 0) || !isnormal(sc->steps[s]->dur_us * 1e-6))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s (ts %.3f us): duration %g us: a step must take "
                           "time", t->file, sc->steps[s]->name, sc->steps[s]->ts_us, sc->steps[s]->dur_us));
  sc->gpu = sc->nk > 0;
cleanup:
  return st;
}

/* Guarantees sc->sw, the merged union of the CPU and GPU step windows;
 * sc->cops, the c10d ops that can size an NCCL kernel, by External id; and
 * sc->skip, the ops nested in another op of the same point class on the
 * same thread. */
static void mark_events(const hs_torch_trace_t *t, tp_scratch_t *sc)
{
  /* the union of the step windows (CPU and GPU), for "is this op in a step" */
  sc->n_sw = 0;
  for (int32_t s = 0; s < sc->n_steps; s++)
    sc->sw[sc->n_sw++] = (ival_t){sc->steps[s]->ts_us, sc->steps[s]->ts_us + sc->steps[s]->dur_us};
  for (int32_t s = 0; s < sc->n_gsteps; s++)
    sc->sw[sc->n_sw++] = (ival_t){sc->gsteps[s]->ts_us, sc->gsteps[s]->ts_us + sc->gsteps[s]->dur_us};
  qsort(sc->sw, sc->n_sw, sizeof *sc->sw, cmp_ival);
  sc->n_sw = merge_windows(sc->sw, sc->n_sw);
  /* the c10d ops that can size an NCCL kernel, by External id */
  sc->n_cops = 0;
  for (int32_t i = 0; i < t->n; i++)
    if (t->ev[i].kind == HS_TPE_CPU_OP && t->ev[i].ext_id >= 0 && t->ev[i].comm_nelems > 0 &&
        t->ev[i].comm_elsize > 0)
      sc->cops[sc->n_cops++] = &t->ev[i];
  qsort(sc->cops, (size_t)sc->n_cops, sizeof *sc->cops, cmp_ext_idx);
  /* nesting: an op inside another op of the same point class, same thread */
  for (int32_t i = 0; i < t->n; i++)
    sc->order[i] = (okey_t){t->ev[i].tid, t->ev[i].ts_us, t->ev[i].dur_us, i};
  qsort(sc->order, (size_t)t->n, sizeof *sc->order, cmp_okey);
  for (int cls = 0; cls < 2; cls++) {
    int64_t tid = INT64_MIN;
    double open_end = -INFINITY;
    for (int32_t q = 0; q < t->n; q++) {
      const hs_tp_event_t *e = &t->ev[sc->order[q].idx];
      if (e->kind != HS_TPE_CPU_OP || !(cls ? is_mem_op(e->name) : is_gemm_op(e->name)))
        continue;
      if (e->tid != tid) {
        tid = e->tid;
        open_end = -INFINITY;
      }
      if (e->ts_us + e->dur_us <= open_end) {
        sc->skip[sc->order[q].idx] = 1;
        continue;
      }
      open_end = e->ts_us + e->dur_us;
    }
  }
}

/* One calibration point per GEMM, memory-bound op and sized NCCL
 * all-reduce or send/recv inside a step, in file order, appended to ms and
 * counted in sum. HS_ENOMEM on failure. */
static hs_status_t add_points(const hs_torch_trace_t *t, const tp_scratch_t *sc, hs_measurements_t *ms,
                              hs_tp_summary_t *sum, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  /* points, in file order, inside the steps */
  for (int32_t i = 0; i < t->n; i++) {
    const hs_tp_event_t *e = &t->ev[i];
    if (sc->skip[i] || (e->kind != HS_TPE_CPU_OP && e->kind != HS_TPE_KERNEL))
      continue;
    if (!in_windows(sc->sw, sc->n_sw, e->ts_us))
      continue;
    hs_mb_point_t p;
    memset(&p, 0, sizeof p);
    if (e->kind == HS_TPE_CPU_OP && is_gemm_op(e->name)) {
      if (e->n_inputs == 0) {
        sum->n_gemm_no_shape++;
        continue;
      }
      if (!gemm_shape(e, &p.m, &p.n, &p.k, &p.flops))
        continue;
      p.kind = HS_MB_GEMM;
      p.dtype = dtype_of(e->type0);
      p.s = op_seconds(e, sc->gpu, sc->kt, sc->nk);
      /* a rate that overflows (a GEMM in 1e-300 s) is no measurement */
      if (!(p.s > 0) || !isfinite(p.flops / p.s))
        continue;
      if (hs_measurements_add(ms, &p) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      sum->n_gemm++;
    } else if (e->kind == HS_TPE_CPU_OP && is_mem_op(e->name)) {
      p.kind = HS_MB_MEM;
      p.bytes = mem_bytes(e);
      p.s = op_seconds(e, sc->gpu, sc->kt, sc->nk);
      if (!(p.bytes > 0) || !(p.s > 0) || !isfinite(p.bytes / p.s))
        continue;
      if (hs_measurements_add(ms, &p) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      sum->n_mem++;
    } else if (is_nccl_kernel(e)) {
      sum->n_comm_kernels++;
      bool ar = strstr(e->name, "AllReduce") != NULL, sr = strstr(e->name, "SendRecv") != NULL;
      if (!ar && !sr)
        continue;
      /* the c10d op with the same External id gives the message size */
      const hs_tp_event_t *op = e->ext_id >= 0 ? comm_op_of(sc->cops, sc->n_cops, e->ext_id) : NULL;
      if (!op)
        continue;
      p.kind = ar ? HS_MB_ALLREDUCE : HS_MB_P2P;
      p.bytes = op->comm_nelems * op->comm_elsize;
      p.ranks = op->comm_group;
      p.s = e->dur_us * 1e-6;
      if (!(p.s > 0) || !isfinite(p.bytes / p.s))
        continue;
      if (hs_measurements_add(ms, &p) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      sum->n_comm_points++;
    }
  }
cleanup:
  return st;
}

/* Guarantees per step (in sc->bucket[s] .. sc->bucket[s + 1] of
 * sc->member) the events overlapping its window, in file order, and the
 * per-step arrays of the breakdown and meas->iteration_s. HS_ENOMEM on
 * failure. */
static hs_status_t step_members(const hs_torch_trace_t *t, tp_scratch_t *sc, hs_measured_t *meas,
                                hs_error_t *err)
{
  hs_status_t st = HS_OK;
  /* the run */
  meas->iteration_s = hs_calloc((size_t)sc->n_steps, sizeof *meas->iteration_s);
  sc->c_s = hs_calloc((size_t)sc->n_steps, sizeof *sc->c_s);
  sc->x_s = hs_calloc((size_t)sc->n_steps, sizeof *sc->x_s);
  sc->i_s = hs_calloc((size_t)sc->n_steps, sizeof *sc->i_s);
  sc->win = hs_calloc((size_t)sc->n_steps, sizeof *sc->win);
  sc->wmax = hs_calloc((size_t)sc->n_steps, sizeof *sc->wmax);
  sc->bucket = hs_calloc((size_t)sc->n_steps + 1, sizeof *sc->bucket);
  sc->fill = hs_calloc((size_t)sc->n_steps + 1, sizeof *sc->fill);
  if (!meas->iteration_s || !sc->c_s || !sc->x_s || !sc->i_s || !sc->win || !sc->wmax || !sc->bucket || !sc->fill)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* Each step's window; the events overlapping it are found per event, not
   * per step: with the windows sorted by start and wmax the running maximum
   * of their ends, the windows an event [a, b) overlaps are among those
   * starting before b, walked back while wmax > a. Steps do not overlap in a
   * real trace, so that walk meets only the overlapped windows and the pass
   * is O(events log steps) (it was O(events x steps)). Two passes: count,
   * then fill the buckets (event indices per step, file order). */
  for (int32_t s = 0; s < sc->n_steps; s++) {
    const hs_tp_event_t *w = sc->gpu && s < sc->n_gsteps ? sc->gsteps[s] : sc->steps[s];
    sc->win[s] = (win_t){w->ts_us, w->ts_us + w->dur_us, s};
  }
  qsort(sc->win, (size_t)sc->n_steps, sizeof *sc->win, cmp_win);
  for (int32_t s = 0; s < sc->n_steps; s++)
    sc->wmax[s] = s ? fmax(sc->wmax[s - 1], sc->win[s].b) : sc->win[s].b;
  size_t n_members = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < t->n; i++) {
      const hs_tp_event_t *e = &t->ev[i];
      if (!(sc->gpu ? e->kind == HS_TPE_KERNEL || e->kind == HS_TPE_MEMCPY : e->kind == HS_TPE_CPU_OP))
        continue;
      double a = e->ts_us, b = e->ts_us + e->dur_us;
      int32_t lo = 0, hi = sc->n_steps; /* windows starting before b: [0, lo) */
      while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (sc->win[mid].a < b)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (int32_t k = lo - 1; k >= 0 && sc->wmax[k] > a; k--) {
        if (!(sc->win[k].b > a) || !(b > sc->win[k].a))
          continue;
        int32_t s = sc->win[k].step;
        if (!sc->gpu && e->tid != sc->steps[s]->tid)
          continue;
        if (pass == 0)
          sc->bucket[s + 1]++;
        else
          sc->member[sc->fill[s]++] = i;
      }
    }
    if (pass == 0) {
      for (int32_t s = 0; s < sc->n_steps; s++)
        sc->bucket[s + 1] += sc->bucket[s];
      n_members = (size_t)sc->bucket[sc->n_steps];
      sc->member = hs_calloc(n_members + 1, sizeof *sc->member);
      if (!sc->member)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      memcpy(sc->fill, sc->bucket, (size_t)sc->n_steps * sizeof *sc->fill);
    }
  }
cleanup:
  return st;
}

/* Per step: its duration into meas->iteration_s, and compute, exposed
 * communication and idle time over its window into sc->c_s, x_s, i_s.
 * HS_EINVAL naming a GPU-side step window of 0 us. */
static hs_status_t step_breakdown(const hs_torch_trace_t *t, tp_scratch_t *sc, hs_measured_t *meas,
                                  hs_error_t *err)
{
  hs_status_t st = HS_OK;
  for (int32_t s = 0; s < sc->n_steps; s++) {
    const hs_tp_event_t *w = sc->steps[s];
    if (sc->gpu && s < sc->n_gsteps)
      w = sc->gsteps[s];
    double lo = w->ts_us, hi = w->ts_us + w->dur_us;
    size_t nc = 0, nm = 0;
    /* members were filled in increasing event index: file order, as before */
    for (int32_t q = sc->bucket[s]; q < sc->bucket[s + 1]; q++) {
      const hs_tp_event_t *e = &t->ev[sc->member[q]];
      ival_t v = {e->ts_us, e->ts_us + e->dur_us};
      if (sc->gpu) {
        if (is_nccl_kernel(e))
          sc->comm[nm++] = v;
        else if (e->kind == HS_TPE_KERNEL || e->kind == HS_TPE_MEMCPY)
          sc->comp[nc++] = v;
      } else if (e->kind == HS_TPE_CPU_OP && e->tid == sc->steps[s]->tid) {
        if (is_comm_op(e))
          sc->comm[nm++] = v;
        else
          sc->comp[nc++] = v;
      }
    }
    memcpy(sc->both, sc->comp, nc * sizeof *sc->both);
    memcpy(sc->both + nc, sc->comm, nm * sizeof *sc->both);
    double step_s = w->dur_us * 1e-6; /* not hi - lo: ts is large, its difference loses digits */
    if (!(step_s > 0) || !isnormal(step_s)) /* a GPU-side window of 0 us */
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s (ts %.3f us, GPU side): duration %g us: a step "
                           "must take time", t->file, w->name, w->ts_us, w->dur_us));
    double uc = union_len(sc->comp, nc, lo, hi) * 1e-6;
    double ub = union_len(sc->both, nc + nm, lo, hi) * 1e-6;
    meas->iteration_s[s] = step_s;
    sc->c_s[s] = uc;
    sc->x_s[s] = ub - uc;
    sc->i_s[s] = fmax(step_s - ub, 0.0);
  }
cleanup:
  return st;
}

hs_status_t hs_torch_profiler_import(const hs_torch_trace_t *t, hs_measurements_t *ms,
                                     hs_measured_t *meas, hs_tp_summary_t *sum, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  tp_scratch_t scratch;
  tp_scratch_t *sc = &scratch;
  memset(sc, 0, sizeof *sc);
  hs_measured_init(meas);
  memset(sum, 0, sizeof *sum);
  HS_CHECK(sort_events(t, sc, err));
  mark_events(t, sc);
  sum->n_steps = sc->n_steps;
  sum->gpu = sc->gpu;
  HS_CHECK(add_points(t, sc, ms, sum, err));
  HS_CHECK(step_members(t, sc, meas, err));
  HS_CHECK(step_breakdown(t, sc, meas, err));
  meas->n_iterations = sc->n_steps;
  hs_spread_t sp;
  if (hs_spread_of(meas->iteration_s, (size_t)sc->n_steps, &sp) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  meas->iteration_time_s = sp.median;
  meas->has_breakdown = true;
  meas->compute_s = hs__median_inplace(sc->c_s, (size_t)sc->n_steps);
  meas->comm_exposed_s = hs__median_inplace(sc->x_s, (size_t)sc->n_steps);
  meas->idle_s = hs__median_inplace(sc->i_s, (size_t)sc->n_steps);
  hs_strlcpy(meas->backend, "torch-profiler", sizeof meas->backend);
  hs_strlcpy(meas->device, t->device, sizeof meas->device);
  hs_strlcpy(meas->mode, "rank", sizeof meas->mode);
  snprintf(meas->plan_summary, sizeof meas->plan_summary, "%.200s: one rank's sc->steps", t->file);
  if (!ms->device[0])
    hs_strlcpy(ms->device, t->device, sizeof ms->device);
  if (!ms->backend[0])
    hs_strlcpy(ms->backend, sc->gpu ? "torch-profiler (cuda)" : "torch-profiler (cpu)",
               sizeof ms->backend);
cleanup:
  scratch_free(sc);
  if (st != HS_OK)
    hs_measured_destroy(meas);
  return st;
}
