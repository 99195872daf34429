/*
 * validate_internal.h - shared between validate/ files, not installed.
 */
#ifndef HS_VALIDATE_INTERNAL_H
#define HS_VALIDATE_INTERNAL_H

#include "hs_validate.h"

/* CLOCK_MONOTONIC seconds. */
double hs__clock_s(void);
/* CLOCK_THREAD_CPUTIME_ID seconds: CPU time of the calling thread. */
double hs__thread_cpu_s(void);
/* C[m x n] = A[m x k] B[k x n], row-major, fp32. */
void hs__cpu_gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);
/* dst[i] = f(src[i]) for n floats: 8n bytes of traffic. */
void hs__cpu_stream(float *dst, const float *src, size_t n);

/* Keeps CBLAS single-threaded (one thread = one virtual device). */
void hs__cpu_blas_init(void);
/* Fills v with non-zero values (reference BLAS skips zero multiplicands). */
void hs__cpu_fill(float *v, size_t n);

/* The speed probe: one fixed GEMM, timed by calibration (between its grid
 * points) and by the replay (before each iteration) on every device thread
 * at once, so validate can say how fast the machine ran during each. */
#define HS_PROBE_DIM 128
#define HS_PROBE_FLOATS ((size_t)HS_PROBE_DIM * HS_PROBE_DIM)
#define HS_PROBE_KERNEL "sgemm 128x128x128 fp32"
/* Seconds per probe GEMM on `clock`, over a run of >= 2 ms; a, b, c hold
 * HS_PROBE_FLOATS floats each (a and b filled). */
double hs__cpu_probe_s(const float *a, const float *b, float *c, double (*clock)(void));

/* A weighted (1/t^2: relative errors) least-squares line t = a + b x. */
typedef struct hs_line_fit {
  double a, b;
  double r2;
  double med_rel, max_rel;  /* median and largest |fit - t| / t */
  int32_t n;
} hs_line_fit_t;
/* Fits t on x over n points (GSL, fit_ls.c); HS_EINVAL for fewer than 2 points of
 * different x or a non-positive time, the message starting with `what`
 * ("calibrate: gemm", "all_reduce.txt (all_reduce)"). O(n log n). */
hs_status_t hs__fit_line(const double *x, const double *t, int32_t n, const char *what,
                         hs_line_fit_t *out, hs_error_t *err);
/* "max" fit (fit_ls.c): the line through the origin at the best rate x/t
 * over n >= 1 points (t = x / best); rel: n scratch doubles. O(n log n). */
hs_status_t hs__fit_max(const double *x, const double *t, int32_t n, double *rel,
                        const char *what, hs_line_fit_t *out, hs_error_t *err);
/* Weighted least squares t = a + b x + c z over n >= 3 points (fit_ls.c):
 * out->a, out->b as in hs__fit_line, *c_out the third coefficient. O(n log n). */
hs_status_t hs__fit_plane(const double *x, const double *z, const double *t, int32_t n,
                          const char *what, hs_line_fit_t *out, double *c_out, hs_error_t *err);

/* Fits the fused-attention rate model (calibrate_attn.c) on the "attn"
 * points of ms into out (HS_FIT_ATTN); no such points: nothing. O(n). */
hs_status_t hs__calibrate_attn(const hs_measurements_t *ms, hs_fit_t *out, hs_error_t *err);

/* Median of v[0..n) sorting v in place (no allocation, so no silent
 * fallback when memory is short); 0 for n == 0. O(n log n). */
double hs__median_inplace(double *v, size_t n);

/* Largest single GEMM operand (elements) replay allocates on the CPU. */
#define HS_CPU_MAX_ELEMS ((int64_t)1 << 28)

/* What nccl-tests file t's header does not say and the import needs, as
 * one phrase per fact naming its flag, into buf ("the GPU (no device lines;
 * give --gpu NAME), how the ranks sit on nodes (give --gpus-per-node K)");
 * `ranks`: the rank count is missing too. Returns how many facts are
 * missing (0: buf empty). O(1). */
size_t hs__nt_missing_facts(const hs_nccl_tests_t *t, const hs_nt_opts_t *o, bool ranks,
                            char *buf, size_t n);

#endif
