/*
 * kernels_cpu.c - the CPU backend's real work: single-precision GEMM through
 * CBLAS (GSL's reference CBLAS, single-threaded, so one thread is one
 * virtual device), a memory-bound loop that reads and writes the op's bytes,
 * and a monotonic clock.
 *
 * Buffers are float arrays owned by the caller; the kernels never allocate.
 */
#include "validate_internal.h"

#include <gsl/gsl_cblas.h>
#include <time.h>

double hs__clock_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double hs__thread_cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void hs__cpu_gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c)
{
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k,
              b, (int)n, 0.0f, c, (int)n);
}

/* OpenBLAS, when it is the CBLAS the loader picked, would spread one GEMM
 * over every core; a virtual device is one thread. Weak: absent elsewhere. */
extern void openblas_set_num_threads(int n) __attribute__((weak));

void hs__cpu_blas_init(void)
{
  if (openblas_set_num_threads)
    openblas_set_num_threads(1);
}

void hs__cpu_fill(float *v, size_t n)
{
  /* non-zero operands: reference BLAS skips zero multiplicands */
  for (size_t i = 0; i < n; i++)
    v[i] = 1.0f / (float)(i % 97 + 1);
}

void hs__cpu_stream(float *dst, const float *src, size_t n)
{
  /* a scaled copy: reads n floats, writes n floats (the op's bytes / 2 each) */
  for (size_t i = 0; i < n; i++)
    dst[i] = src[i] * 0.5f + 1.0f;
}

double hs__cpu_probe_s(const float *a, const float *b, float *c, double (*clock)(void))
{
  hs__cpu_gemm(HS_PROBE_DIM, HS_PROBE_DIM, HS_PROBE_DIM, a, b, c); /* warm */
  int reps = 0;
  double t0 = clock(), dt = 0.0;
  do {
    hs__cpu_gemm(HS_PROBE_DIM, HS_PROBE_DIM, HS_PROBE_DIM, a, b, c);
    reps++;
    dt = clock() - t0;
  } while (dt < 2e-3 && reps < (1 << 16));
  return dt / reps;
}
