/*
 * microbench_cpu.c - CPU microbenchmarks with the replay backend's kernels:
 * fp32 CBLAS GEMM over a grid of shapes, the memory-bound loop over sizes,
 * and copies between two threads' buffers (ping-pong, half the round trip)
 * over message sizes. Each point is the median of `repeats` timed runs; a
 * run repeats the kernel until it lasts >= 2 ms, so the clock's resolution
 * does not matter. O(grid x repeats).
 *
 * The GEMM and memory points run on one thread per virtual device at once
 * (at most one per core), because that is how the replay runs them: two
 * pipeline stages compute together, sharing the machine's caches and memory
 * bandwidth (and, where cores are SMT siblings, their execution units). A
 * speed probe (HS_PROBE_KERNEL) between consecutive points scales each point
 * to one reference speed (below): CI's run of 2026-11-28 had 4 of 5 rounds
 * predicted 26-31% under the replay because the machine ran slower while
 * replaying than while calibrating.
 */
#include "validate_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void hs_microbench_opts_init(hs_microbench_opts_t *o)
{
  o->repeats = 5;
  o->threads = 2;
  o->quick = false;
  o->clock = HS_CLOCK_CPU;
}

#define MIN_RUN_S 2e-3

typedef struct bench {
  int kind; /* 0 gemm, 1 stream */
  int64_t m, n, k;
  size_t floats;
  float *a, *b, *c;
} bench_t;

static void bench_once(const bench_t *bn)
{
  if (bn->kind == 0)
    hs__cpu_gemm(bn->m, bn->n, bn->k, bn->a, bn->b, bn->c);
  else
    hs__cpu_stream(bn->c, bn->a, bn->floats);
}

static double time_median(const bench_t *bn, int repeats, double (*clock)(void))
{
  bench_once(bn); /* warm caches and pages */
  int reps = 1;
  for (;;) {
    double t0 = clock();
    for (int i = 0; i < reps; i++)
      bench_once(bn);
    double dt = clock() - t0;
    if (dt >= MIN_RUN_S || reps >= (1 << 20))
      break;
    reps *= 2;
  }
  double v[64];
  if (repeats > 64)
    repeats = 64;
  if (repeats < 1)
    repeats = 1;
  for (int r = 0; r < repeats; r++) {
    double t0 = clock();
    for (int i = 0; i < reps; i++)
      bench_once(bn);
    v[r] = (clock() - t0) / reps;
  }
  return hs_median(v, (size_t)repeats);
}

/* ---- two-thread copies ------------------------------------------------------- */

typedef struct pingpong {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int turn;          /* 0: thread 0 copies into 1; 1: thread 1 copies back */
  int rounds;
  size_t n;
  float *buf[2];
} pingpong_t;

static void *pong(void *arg)
{
  pingpong_t *pp = arg;
  for (int r = 0; r < pp->rounds; r++) {
    pthread_mutex_lock(&pp->mu);
    while (pp->turn != 1)
      pthread_cond_wait(&pp->cv, &pp->mu);
    memcpy(pp->buf[0], pp->buf[1], pp->n * sizeof(float));
    pp->turn = 0;
    pthread_cond_signal(&pp->cv);
    pthread_mutex_unlock(&pp->mu);
  }
  return NULL;
}

static hs_status_t p2p_time(size_t bytes, int rounds, bool cpu_clock, double *out)
{
  pingpong_t pp;
  memset(&pp, 0, sizeof pp);
  pp.n = bytes / 4 ? bytes / 4 : 1;
  pp.rounds = rounds;
  pp.buf[0] = hs_calloc(pp.n, sizeof(float));
  pp.buf[1] = hs_calloc(pp.n, sizeof(float));
  if (!pp.buf[0] || !pp.buf[1]) {
    free(pp.buf[0]);
    free(pp.buf[1]);
    return HS_ENOMEM;
  }
  pthread_mutex_init(&pp.mu, NULL);
  pthread_cond_init(&pp.cv, NULL);
  pthread_t th;
  hs_status_t st = HS_OK;
  if (pthread_create(&th, NULL, pong, &pp) != 0) {
    st = HS_EINTERNAL;
  } else {
    /* wall: half the round trip; cpu: the sender's CPU time per copy
     * (what the replay's sending thread spends) */
    double t0 = hs__clock_s(), busy = 0.0;
    for (int r = 0; r < rounds; r++) {
      pthread_mutex_lock(&pp.mu);
      while (pp.turn != 0)
        pthread_cond_wait(&pp.cv, &pp.mu);
      double c0 = hs__thread_cpu_s();
      memcpy(pp.buf[1], pp.buf[0], pp.n * sizeof(float));
      pp.turn = 1;
      pthread_cond_signal(&pp.cv);
      busy += hs__thread_cpu_s() - c0;
      pthread_mutex_unlock(&pp.mu);
    }
    pthread_mutex_lock(&pp.mu);
    while (pp.turn != 0)
      pthread_cond_wait(&pp.cv, &pp.mu);
    pthread_mutex_unlock(&pp.mu);
    *out = cpu_clock ? busy / rounds : (hs__clock_s() - t0) / (2.0 * rounds);
    pthread_join(th, NULL);
  }
  pthread_mutex_destroy(&pp.mu);
  pthread_cond_destroy(&pp.cv);
  free(pp.buf[0]);
  free(pp.buf[1]);
  return st;
}

/* ---- the GEMM grid and the memory loop on every virtual device at once ------- */

/* One point of the grid: a GEMM shape or a memory-loop size. */
typedef struct mb_shape {
  hs_mb_point_t p;
  bench_t bn; /* kind and shape; the buffers are each thread's own */
} mb_shape_t;

/* Threads start behind a gate: the barrier is made once all have started,
 * and a failed start sends the started ones home without timing anything. */
typedef struct mb_gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state; /* 0 closed, 1 run, -1 abort */
} mb_gate_t;

typedef struct mb_worker {
  const hs_microbench_opts_t *o;
  const mb_shape_t *shapes;
  size_t n_shapes, alloc;
  pthread_barrier_t *bar;
  struct mb_gate *gate;
  double (*clock)(void);
  double *s;       /* per shape: this thread's median */
  double *probe;   /* speed probe: [0] before the first shape, [i + 1] after shape i */
  bool failed;     /* out of memory: times stay 0, the caller fails */
} mb_worker_t;

/* Every thread runs every shape, all threads on the same shape at the same
 * time (a barrier per shape), so each sees the cores, caches and memory
 * bandwidth shared as the replay's devices share them. */
static void *mb_run(void *arg)
{
  mb_worker_t *w = arg;
  pthread_mutex_lock(&w->gate->mu);
  while (w->gate->state == 0)
    pthread_cond_wait(&w->gate->cv, &w->gate->mu);
  int state = w->gate->state;
  pthread_mutex_unlock(&w->gate->mu);
  if (state < 0)
    return NULL;
  float *a = hs_calloc(w->alloc, sizeof(float));
  float *b = hs_calloc(w->alloc, sizeof(float));
  float *c = hs_calloc(w->alloc, sizeof(float));
  w->failed = !a || !b || !c;
  if (!w->failed) {
    hs__cpu_fill(a, w->alloc);
    hs__cpu_fill(b, w->alloc);
    w->probe[0] = hs__cpu_probe_s(a, b, c, w->clock);
  }
  for (size_t i = 0; i < w->n_shapes; i++) {
    pthread_barrier_wait(w->bar); /* every thread waits, failed or not */
    if (w->failed)
      continue;
    bench_t bn = w->shapes[i].bn;
    bn.a = a;
    bn.b = b;
    bn.c = c;
    w->s[i] = time_median(&bn, w->o->repeats, w->clock);
    w->probe[i + 1] = hs__cpu_probe_s(a, b, c, w->clock);
  }
  free(a);
  free(b);
  free(c);
  return NULL;
}

/* How many virtual devices are timed at once: o->threads, at most one per
 * online core (more threads only take turns on the cores, which the CPU
 * clock leaves out, and would each cost the grid's buffers). */
static int mb_concurrency(const hs_microbench_opts_t *o)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int n = o->threads > 1 ? o->threads : 1;
  if (cores >= 1 && n > cores)
    n = (int)cores;
  return n;
}

hs_status_t hs_microbench_cpu(const hs_microbench_opts_t *o, hs_measurements_t *out,
                              hs_error_t *err)
{
  hs_microbench_opts_t defaults;
  if (!o) {
    hs_microbench_opts_init(&defaults);
    o = &defaults;
  }
  hs_status_t st = HS_OK;
  static const int64_t dims_quick[] = {32, 64, 128, 256};
  static const int64_t dims_full[] = {16, 32, 64, 128, 192, 256, 384, 512};
  double (*clock)(void) = o->clock == HS_CLOCK_WALL ? hs__clock_s : hs__thread_cpu_s;
  const int64_t *dims = o->quick ? dims_quick : dims_full;
  size_t nd = o->quick ? HS_ARRAY_LEN(dims_quick) : HS_ARRAY_LEN(dims_full);
  int64_t maxd = dims[nd - 1];
  size_t max_stream = o->quick ? ((size_t)1 << 20) : ((size_t)16 << 20); /* floats */
  int nt = mb_concurrency(o);
  mb_shape_t shapes[8 * 8 * 8 + 16];
  size_t ns = 0;
  mb_worker_t *ws = NULL;
  pthread_t *th = NULL;
  double *times = NULL, *probes = NULL, *sorted = NULL;
  int started = 0;
  bool bar_ok = false;
  pthread_barrier_t bar;
  /* GEMM grid: (m, n, k) over dims^3; memory-bound loop: bytes = 8 per float
   * (read + write) */
  for (size_t i = 0; i < nd; i++)
    for (size_t j = 0; j < nd; j++)
      for (size_t l = 0; l < nd; l++) {
        mb_shape_t *sh = &shapes[ns++];
        memset(sh, 0, sizeof *sh);
        sh->bn.kind = 0;
        sh->bn.m = dims[i];
        sh->bn.n = dims[j];
        sh->bn.k = dims[l];
        sh->p = (hs_mb_point_t){.kind = HS_MB_GEMM, .dtype = HS_DTYPE_FP32, .m = sh->bn.m,
                                .n = sh->bn.n, .k = sh->bn.k};
        sh->p.flops = 2.0 * (double)sh->bn.m * (double)sh->bn.n * (double)sh->bn.k;
      }
  for (size_t n = 1024; n <= max_stream; n *= 4) {
    mb_shape_t *sh = &shapes[ns++];
    memset(sh, 0, sizeof *sh);
    sh->bn.kind = 1;
    sh->bn.floats = n;
    sh->p = (hs_mb_point_t){.kind = HS_MB_MEM, .bytes = 8.0 * (double)n};
  }
  hs__cpu_blas_init();
  hs_strlcpy(out->backend, "cpu", sizeof out->backend);
  snprintf(out->device, sizeof out->device, "cpu: CBLAS sgemm, %d concurrent thread%s, %s clock",
           nt, nt == 1 ? "" : "s", o->clock == HS_CLOCK_WALL ? "wall" : "thread-cpu");
  ws = hs_calloc((size_t)nt, sizeof *ws);
  th = hs_calloc((size_t)nt, sizeof *th);
  times = hs_calloc((size_t)nt * ns, sizeof *times);
  probes = hs_calloc((size_t)nt * (ns + 1), sizeof *probes);
  sorted = hs_calloc((size_t)nt * (ns + 1), sizeof *sorted);
  if (!ws || !th || !times || !probes || !sorted)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "microbench: out of memory"));
  mb_gate_t gate = {.state = 0};
  pthread_mutex_init(&gate.mu, NULL);
  pthread_cond_init(&gate.cv, NULL);
  for (int t = 0; t < nt; t++) {
    ws[t] = (mb_worker_t){.o = o, .shapes = shapes, .n_shapes = ns,
                          .alloc = HS_MAX((size_t)(maxd * maxd), max_stream), .bar = &bar,
                          .gate = &gate, .clock = clock, .s = times + (size_t)t * ns,
                          .probe = probes + (size_t)t * (ns + 1)};
    /* thread 0 is this one */
    if (t > 0 && pthread_create(&th[t], NULL, mb_run, &ws[t]) != 0)
      break;
    started++;
  }
  bar_ok = started == nt && pthread_barrier_init(&bar, NULL, (unsigned)nt) == 0;
  pthread_mutex_lock(&gate.mu);
  gate.state = bar_ok ? 1 : -1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  if (!bar_ok) {
    for (int t = 1; t < started; t++)
      pthread_join(th[t], NULL);
    pthread_mutex_destroy(&gate.mu);
    pthread_cond_destroy(&gate.cv);
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "microbench: could only start %d of %d threads",
                         started, nt));
  }
  mb_run(&ws[0]);
  for (int t = 1; t < nt; t++)
    pthread_join(th[t], NULL);
  pthread_mutex_destroy(&gate.mu);
  pthread_cond_destroy(&gate.cv);
  for (int t = 0; t < nt; t++)
    if (ws[t].failed)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "microbench: out of memory"));
  /* The machine's speed moves (a shared 2-core VM, 2026-11-29: the probe's
   * median over 40 ms blocks ranged 0.88..1.73 ms within 0.8 s, while
   * successive 2 ms samples differed by 3.5% in the median). So each point
   * is scaled to the run's reference speed, the median of every probe, by
   * the mean of the probes just before and after it: the fit then sees one
   * machine, at the speed the profile records in speed_probe_s. */
  memcpy(sorted, probes, (size_t)nt * (ns + 1) * sizeof *sorted);
  double ref = hs__median_inplace(sorted, (size_t)nt * (ns + 1));
  out->speed_probe_s = ref;
  /* a point's time: the mean over the threads that ran it together */
  for (size_t i = 0; i < ns; i++) {
    hs_mb_point_t p = shapes[i].p;
    double sum = 0.0;
    for (int t = 0; t < nt; t++) {
      const double *pr = probes + (size_t)t * (ns + 1);
      double local = 0.5 * (pr[i] + pr[i + 1]);
      sum += times[(size_t)t * ns + i] * (local > 0 ? ref / local : 1.0);
    }
    p.s = sum / nt;
    if (hs_measurements_add(out, &p) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "microbench: out of memory"));
  }
  /* copies between two threads */
  if (o->threads >= 2)
    for (size_t bytes = 4096; bytes <= max_stream; bytes *= 8) {
      double v[64];
      int reps = o->repeats > 64 ? 64 : o->repeats;
      int rounds = bytes < ((size_t)1 << 20) ? 200 : 10;
      for (int r = 0; r < reps; r++)
        if (p2p_time(bytes, rounds, o->clock != HS_CLOCK_WALL, &v[r]) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_EINTERNAL, "microbench: cannot run the two-thread copy"));
      hs_mb_point_t p = {.kind = HS_MB_P2P, .bytes = (double)bytes, .ranks = 2};
      p.s = hs_median(v, (size_t)reps);
      if (hs_measurements_add(out, &p) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "microbench: out of memory"));
    }
cleanup:
  if (bar_ok)
    pthread_barrier_destroy(&bar);
  free(ws);
  free(th);
  free(times);
  free(probes);
  free(sorted);
  return st;
}
