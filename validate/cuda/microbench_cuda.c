/*
 * microbench_cuda.c - CUDA microbenchmarks for `hetsim calibrate --microbench
 * --backend cuda`: cuBLAS GEMM (cublasGemmEx, fp32 accumulate) over a grid
 * of shapes for bf16 and fp16, the memory-bound replay kernel over sizes,
 * pinned host-to-device copies, and with two or more MPI ranks NCCL p2p
 * (ping-pong between ranks 0 and 1, half the round trip) and all-reduce over
 * every rank. Timing with CUDA events; each point is the median of
 * `repeats` runs of enough back-to-back launches to last >= 1 ms.
 */
#ifdef HS_HAVE_CUDA

#include "../hs_cuda_module.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

cudaError_t hs__cuda_stream(float *dst, const float *src, size_t n, cudaStream_t s);
cudaError_t hs__cuda_fill(void *v, size_t bytes, cudaStream_t s);

typedef struct mb {
  int kind;                 /* 0 gemm, 1 stream, 2 h2d */
  cublasHandle_t blas;
  cudaStream_t s;
  cudaDataType_t ct;
  int64_t m, n, k;
  void *A, *B, *C;
  float *src, *dst;
  size_t n_floats;
  void *host;
  size_t bytes;
} mb_t;

static cudaError_t launch(const mb_t *b)
{
  static const float one = 1.0f, zero = 0.0f;
  if (b->kind == 0) {
    cublasStatus_t cs = cublasGemmEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)b->n, (int)b->m,
                                     (int)b->k, &one, b->B, b->ct, (int)b->n, b->A, b->ct,
                                     (int)b->k, &zero, b->C, b->ct, (int)b->n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
  }
  if (b->kind == 1)
    return hs__cuda_stream(b->dst, b->src, b->n_floats, b->s);
  return cudaMemcpyAsync(b->dst, b->host, b->bytes, cudaMemcpyHostToDevice, b->s);
}

/* Median seconds per launch. */
static cudaError_t time_point(const mb_t *b, int repeats, double *out)
{
  cudaEvent_t e0 = NULL, e1 = NULL;
  cudaError_t ce = cudaEventCreate(&e0);
  if (ce == cudaSuccess)
    ce = cudaEventCreate(&e1);
  double v[64];
  int reps = 1;
  if (repeats > 64)
    repeats = 64;
  for (int round = -1; ce == cudaSuccess && round < repeats; round++) {
    for (;;) {
      cudaEventRecord(e0, b->s);
      for (int i = 0; i < reps && ce == cudaSuccess; i++)
        ce = launch(b);
      cudaEventRecord(e1, b->s);
      cudaEventSynchronize(e1);
      float ms = 0.0f;
      cudaEventElapsedTime(&ms, e0, e1);
      if (round >= 0) {
        v[round] = ms * 1e-3 / reps;
        break;
      }
      if (ms >= 1.0f || reps >= (1 << 16) || ce != cudaSuccess)
        break; /* calibrating the launch count */
      reps *= 2;
    }
  }
  if (ce == cudaSuccess)
    *out = hs_median(v, (size_t)repeats);
  if (e0)
    cudaEventDestroy(e0);
  if (e1)
    cudaEventDestroy(e1);
  return ce;
}

static int env_size(void)
{
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                      "SLURM_NTASKS", NULL};
  for (const char *const *n = names; *n; n++)
    if (getenv(*n) && atoi(getenv(*n)) > 0)
      return atoi(getenv(*n));
  return 0;
}

static void fin(void)
{
  int f = 0;
  MPI_Finalized(&f);
  if (!f)
    MPI_Finalize();
}

/* A CUDA call that fails sets st with the call and its error and leaves. */
#define CU(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      st = hs_error_set(err, HS_EINTERNAL, "microbench: %s: %s", #x, cudaGetErrorString(e_));     \
      goto cleanup;                                                                               \
    }                                                                                             \
  } while (0)

/* Rank 0's single-GPU points into out: cuBLAS GEMMs over the dims grid in
 * bf16 and fp16, the memory-bound kernel from 1 MiB to stream_max bytes,
 * and host-to-device copies up to 256 MiB. */
static hs_status_t single_gpu_points(mb_t *b, const hs_microbench_opts_t *o, const int64_t *dims,
                                     size_t nd, size_t stream_max, hs_measurements_t *out,
                                     hs_error_t *err)
{
  hs_status_t st = HS_OK;
  static const hs_dtype_t dts[] = {HS_DTYPE_BF16, HS_DTYPE_FP16};
  for (size_t d = 0; d < 2; d++)
    for (size_t i = 0; i < nd; i++)
      for (size_t j = 0; j < nd; j++) {
        b->kind = 0;
        b->ct = dts[d] == HS_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_16BF;
        b->m = dims[i];
        b->n = dims[j];
        b->k = dims[(i + j) % nd];
        hs_mb_point_t p = {.kind = HS_MB_GEMM, .dtype = dts[d], .m = b->m, .n = b->n, .k = b->k};
        p.flops = 2.0 * (double)b->m * (double)b->n * (double)b->k;
        CU(time_point(b, o->repeats, &p.s));
        if (hs_measurements_add(out, &p) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      }
  for (size_t bytes = (size_t)1 << 20; bytes <= stream_max; bytes *= 4) {
    b->kind = 1;
    b->n_floats = bytes / 8;
    hs_mb_point_t p = {.kind = HS_MB_MEM, .bytes = (double)bytes};
    CU(time_point(b, o->repeats, &p.s));
    if (hs_measurements_add(out, &p) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
  for (size_t bytes = (size_t)1 << 20; bytes <= ((size_t)256 << 20); bytes *= 4) {
    b->kind = 2;
    b->bytes = bytes;
    hs_mb_point_t p = {.kind = HS_MB_H2D, .bytes = (double)bytes};
    CU(time_point(b, o->repeats, &p.s));
    if (hs_measurements_add(out, &p) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
cleanup:
  return st;
}

/* With two ranks or more: NCCL p2p between ranks 0 and 1 and all-reduce
 * over every rank, 4 KiB to 256 MiB, the median of the repeats; points on
 * rank 0. *comm and *nbuf are the caller's to free. */
static hs_status_t nccl_points(mb_t *b, const hs_microbench_opts_t *o, int rank, int size,
                               ncclComm_t *comm, void **nbuf, hs_measurements_t *out,
                               hs_error_t *err)
{
  hs_status_t st = HS_OK;
  ncclUniqueId id;
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "microbench: ncclGetUniqueId failed"));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (ncclCommInitRank(comm, size, id, rank) != ncclSuccess)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "microbench: ncclCommInitRank failed"));
  size_t maxb = (size_t)256 << 20;
  CU(cudaMalloc(nbuf, maxb));
  cudaEvent_t e0, e1;
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  for (int coll = 0; coll < 2; coll++)
    for (size_t bytes = 4096; bytes <= maxb; bytes *= 8) {
      double v[64];
      int reps = o->repeats > 64 ? 64 : o->repeats;
      int rounds = bytes < ((size_t)1 << 20) ? 50 : 5;
      for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        cudaEventRecord(e0, b->s);
        for (int q = 0; q < rounds; q++) {
          if (coll) {
            ncclAllReduce(*nbuf, *nbuf, bytes / 2, ncclBfloat16, ncclSum, *comm, b->s);
          } else if (rank == 0) {
            ncclSend(*nbuf, bytes, ncclUint8, 1, *comm, b->s);
            ncclRecv(*nbuf, bytes, ncclUint8, 1, *comm, b->s);
          } else if (rank == 1) {
            ncclRecv(*nbuf, bytes, ncclUint8, 0, *comm, b->s);
            ncclSend(*nbuf, bytes, ncclUint8, 0, *comm, b->s);
          }
        }
        cudaEventRecord(e1, b->s);
        cudaEventSynchronize(e1);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, e0, e1);
        v[r] = ms * 1e-3 / rounds / (coll ? 1.0 : 2.0);
      }
      hs_mb_point_t p = {.kind = coll ? HS_MB_ALLREDUCE : HS_MB_P2P, .bytes = (double)bytes,
                         .ranks = coll ? size : 2};
      p.s = hs_median(v, (size_t)reps);
      if (rank == 0 && hs_measurements_add(out, &p) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
cleanup:
  return st;
}

hs_status_t hs__cuda_microbench(const hs_microbench_opts_t *o, hs_measurements_t *out, bool *is_root,
                               hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_microbench_opts_t defaults;
  if (!o) {
    hs_microbench_opts_init(&defaults);
    o = &defaults;
  }
  if (is_root)
    *is_root = true;
  int ndev = 0;
  cudaError_t ce = cudaGetDeviceCount(&ndev);
  if (ce != cudaSuccess || ndev == 0)
    return hs_error_set(err, HS_EINVAL,
                        "cuda backend: no CUDA device visible (cudaGetDeviceCount: %s)",
                        ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
  int rank = 0, size = 1, inited = 0;
  MPI_Initialized(&inited);
  if (env_size() > 0 || inited) {
    if (!inited) {
      MPI_Init(NULL, NULL);
      atexit(fin);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  if (is_root)
    *is_root = rank == 0;
  mb_t b;
  memset(&b, 0, sizeof b);
  ncclComm_t comm = NULL;
  void *nbuf = NULL;
  const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int local = lr ? atoi(lr) : rank;
  if (local >= ndev)
    return hs_error_set(err, HS_EINVAL, "cuda backend: local rank %d but %d CUDA devices", local, ndev);
  CU(cudaSetDevice(local));
  if (cublasCreate(&b.blas) != CUBLAS_STATUS_SUCCESS)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "microbench: cublasCreate failed"));
  CU(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
  cublasSetStream(b.blas, b.s);
  static const int64_t dims_full[] = {256, 512, 1024, 2048, 4096, 8192};
  static const int64_t dims_quick[] = {512, 2048, 8192};
  const int64_t *dims = o->quick ? dims_quick : dims_full;
  size_t nd = o->quick ? 3 : 6;
  int64_t dmax = dims[nd - 1];
  size_t big = (size_t)dmax * (size_t)dmax * 4;
  size_t stream_max = o->quick ? ((size_t)256 << 20) : ((size_t)2 << 30); /* bytes */
  CU(cudaMalloc(&b.A, big));
  CU(cudaMalloc(&b.B, big));
  CU(cudaMalloc(&b.C, big));
  CU(cudaMalloc((void **)&b.src, stream_max / 2));
  CU(cudaMalloc((void **)&b.dst, stream_max / 2));
  CU(cudaMallocHost(&b.host, (size_t)256 << 20));
  CU(hs__cuda_fill(b.A, big, b.s));
  CU(hs__cuda_fill(b.B, big, b.s));
  CU(cudaMemsetAsync(b.src, 0, stream_max / 2, b.s));
  CU(cudaStreamSynchronize(b.s));
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, local) == cudaSuccess)
    snprintf(out->device, sizeof out->device, "%.90s, cuBLAS %d, %d ranks", prop.name, CUBLAS_VERSION, size);
  hs_strlcpy(out->backend, "cuda", sizeof out->backend);
  if (rank == 0)
    HS_CHECK(single_gpu_points(&b, o, dims, nd, stream_max, out, err));
  if (size >= 2)
    HS_CHECK(nccl_points(&b, o, rank, size, &comm, &nbuf, out, err));
cleanup:
  if (comm)
    ncclCommDestroy(comm);
  cudaFree(nbuf);
  cudaFree(b.A);
  cudaFree(b.B);
  cudaFree(b.C);
  cudaFree(b.src);
  cudaFree(b.dst);
  if (b.host)
    cudaFreeHost(b.host);
  if (b.blas)
    cublasDestroy(b.blas);
  if (b.s)
    cudaStreamDestroy(b.s);
  if (st != HS_OK && size > 1) {
    fprintf(stderr, "hetsim: rank %d: %s\n", rank, err ? err->msg : "microbench failure");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return st;
}

#endif /* HS_HAVE_CUDA */
