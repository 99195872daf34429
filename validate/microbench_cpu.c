/*
 * microbench_cpu.c - CPU microbenchmarks with the replay backend's kernels:
 * fp32 CBLAS GEMM over a grid of shapes, the memory-bound loop over sizes,
 * and copies between two threads' buffers (ping-pong, half the round trip)
 * over message sizes. Each point is the median of `repeats` timed runs; a
 * run repeats the kernel until it lasts >= 2 ms, so the clock's resolution
 * does not matter. O(grid x repeats).
 */
#include "validate_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

hs_status_t hs_microbench_cpu(const hs_microbench_opts_t *o, hs_measurements_t *out,
                              hs_error_t *err)
{
  hs_microbench_opts_t defaults;
  if (!o) {
    hs_microbench_opts_init(&defaults);
    o = &defaults;
  }
  hs_status_t st = HS_OK;
  bench_t bn;
  memset(&bn, 0, sizeof bn);
  static const int64_t dims_quick[] = {32, 64, 128, 256};
  static const int64_t dims_full[] = {16, 32, 64, 128, 192, 256, 384, 512};
  double (*clock)(void) = o->clock == HS_CLOCK_WALL ? hs__clock_s : hs__thread_cpu_s;
  const int64_t *dims = o->quick ? dims_quick : dims_full;
  size_t nd = o->quick ? HS_ARRAY_LEN(dims_quick) : HS_ARRAY_LEN(dims_full);
  int64_t maxd = dims[nd - 1];
  size_t max_stream = o->quick ? ((size_t)1 << 20) : ((size_t)16 << 20); /* floats */
  size_t alloc = HS_MAX((size_t)(maxd * maxd), max_stream);
  bn.a = hs_calloc(alloc, sizeof(float));
  bn.b = hs_calloc(alloc, sizeof(float));
  bn.c = hs_calloc(alloc, sizeof(float));
  if (!bn.a || !bn.b || !bn.c)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "microbench: out of memory"));
  hs__cpu_blas_init();
  hs__cpu_fill(bn.a, alloc);
  hs__cpu_fill(bn.b, alloc);
  hs_strlcpy(out->backend, "cpu", sizeof out->backend);
  snprintf(out->device, sizeof out->device, "cpu: CBLAS sgemm, one thread, %s clock",
           o->clock == HS_CLOCK_WALL ? "wall" : "thread-cpu");
  /* GEMM grid: (m, n, k) over dims^3, skipping shapes far off the diagonal in quick mode */
  for (size_t i = 0; i < nd; i++)
    for (size_t j = 0; j < nd; j++)
      for (size_t l = 0; l < nd; l++) {
        bn.kind = 0;
        bn.m = dims[i];
        bn.n = dims[j];
        bn.k = dims[l];
        hs_mb_point_t p = {.kind = HS_MB_GEMM, .dtype = HS_DTYPE_FP32, .m = bn.m, .n = bn.n,
                           .k = bn.k};
        p.flops = 2.0 * (double)bn.m * (double)bn.n * (double)bn.k;
        p.s = time_median(&bn, o->repeats, clock);
        if (hs_measurements_add(out, &p) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "microbench: out of memory"));
      }
  /* memory-bound loop: bytes = 8 per float (read + write) */
  for (size_t n = 1024; n <= max_stream; n *= 4) {
    bn.kind = 1;
    bn.floats = n;
    hs_mb_point_t p = {.kind = HS_MB_MEM, .bytes = 8.0 * (double)n};
    p.s = time_median(&bn, o->repeats, clock);
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
  free(bn.a);
  free(bn.b);
  free(bn.c);
  return st;
}
