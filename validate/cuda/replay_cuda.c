/*
 * replay_cuda.c - the CUDA/NCCL replay backend (built when HS_WITH_CUDA
 * resolves ON) in the module hetsim-cuda.so; validate/cuda_module.c loads it
 * on demand (hs_cuda_module.h).
 *
 * Ranks: one MPI rank per device of the plan (`mpirun -np N`), rank r runs
 * the r-th smallest plan device id; without mpirun the process is one rank
 * (single-GPU mode: single-device plans, or one stage with --stage K). The
 * NCCL unique id travels over MPI_Bcast. Communicators, all split from the
 * world one so that each is used by exactly one stream per rank (NCCL
 * serialises per communicator): `act` (activations, forward direction),
 * `grad` (gradients, backward direction), one per TP group (blocking TP
 * collectives, on the compute stream as in the simulator) and one per
 * distinct gradient-bucket group (comm stream).
 *
 * Streams: compute (GEMMs via cublasGemmEx / cublasGemmStridedBatchedEx with
 * the plan dtype in and fp32 accumulate, memory-bound ops through a kernel
 * moving the op's bytes, TP collectives), act and grad p2p streams
 * (ncclSend/ncclRecv, Megatron's scatter: TP rank j < min(tp_src, tp_dst)
 * sends 1/min of the activation to rank j), comm stream (bucket all-reduces
 * issued as their ops' final backward completes, then the optimizer waits
 * for them). Every kernel entry, item, send and bucket is bracketed by CUDA
 * events; the iteration is the slowest rank's start-to-end elapsed time.
 *
 * Failure: a condition every rank evaluates identically (device count, rank
 * count) returns HS_EINVAL with the message; a CUDA/NCCL/cuBLAS error on one
 * rank prints and calls MPI_Abort when there are several ranks, since its
 * peers would otherwise wait forever inside NCCL.
 */
#ifdef HS_HAVE_CUDA

#include "../hs_cuda_module.h"
#include "../replay_internal.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

cudaError_t hs__cuda_stream(float *dst, const float *src, size_t n, cudaStream_t s);
cudaError_t hs__cuda_fill(void *v, size_t bytes, cudaStream_t s);

/* ---- process-level environment ---------------------------------------------- */

typedef struct renv {
  int rank, size, local_rank;
  bool mpi;
} renv_t;

static int env_int(const char *const *names, int def)
{
  for (; *names; names++) {
    const char *v = getenv(*names);
    if (v && *v)
      return atoi(v);
  }
  return def;
}

/* Ranks the launcher started, from its environment (1 without one). */
static int env_size_peek(void)
{
  static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                      "SLURM_NTASKS", NULL};
  int n = env_int(sizes, 0);
  return n > 0 ? n : 1;
}

static void mpi_finalize_at_exit(void)
{
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin)
    MPI_Finalize();
}

/* Under mpirun (Open MPI, MPICH/PMI, PMIx, Slurm) MPI is initialised;
 * otherwise this process is rank 0 of 1 and MPI is never touched. */
static void env_init(renv_t *e)
{
  static const char *const locals[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "PMIX_LOCAL_RANK", "SLURM_LOCALID", NULL};
  memset(e, 0, sizeof *e);
  e->size = 1;
  int inited = 0;
  MPI_Initialized(&inited);
  if (env_size_peek() > 1 || getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || inited) {
    if (!inited) {
      MPI_Init(NULL, NULL);
      atexit(mpi_finalize_at_exit);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &e->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &e->size);
    e->mpi = true;
  }
  e->local_rank = env_int(locals, e->rank);
}

static void die(const renv_t *e, const hs_error_t *err)
{
  if (e->mpi && e->size > 1) {
    fprintf(stderr, "hetsim: rank %d: %s\n", e->rank, err ? err->msg : "CUDA backend failure");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* A CUDA, NCCL or cuBLAS call that fails sets st, with this rank and the
 * call, in c->err and leaves through cleanup (every user has ctx_t *c). */
#define CU(x)                                                                                     \
  do {                                                                                            \
    cudaError_t ce_ = (x);                                                                        \
    if (ce_ != cudaSuccess) {                                                                     \
      st = hs_error_set(c->err, HS_EINTERNAL,                                                     \
                        "rank %d: %s: %s", c->env.rank, #x, cudaGetErrorString(ce_));             \
      goto cleanup;                                                                               \
    }                                                                                             \
  } while (0)
#define NC(x)                                                                                     \
  do {                                                                                            \
    ncclResult_t nr_ = (x);                                                                       \
    if (nr_ != ncclSuccess) {                                                                     \
      st = hs_error_set(c->err, HS_EINTERNAL,                                                     \
                        "rank %d: %s: %s", c->env.rank, #x, ncclGetErrorString(nr_));             \
      goto cleanup;                                                                               \
    }                                                                                             \
  } while (0)
#define CB(x)                                                                                     \
  do {                                                                                            \
    cublasStatus_t cs_ = (x);                                                                     \
    if (cs_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      st = hs_error_set(c->err, HS_EINTERNAL,                                                     \
                        "rank %d: %s: cuBLAS status %d", c->env.rank, #x, (int)cs_);              \
      goto cleanup;                                                                               \
    }                                                                                             \
  } while (0)

/* Device count, or the reason there is none. */
static hs_status_t check_device(int *n, hs_error_t *err)
{
  *n = 0;
  cudaError_t ce = cudaGetDeviceCount(n);
  if (ce != cudaSuccess || *n == 0)
    return hs_error_set(err, HS_EINVAL,
                        "cuda backend: no CUDA device visible (cudaGetDeviceCount: %s); it needs "
                        "one GPU per rank; --backend cpu runs without one",
                        ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
  return HS_OK;
}

static hs_status_t bind_device(const renv_t *e, int ndev, hs_error_t *err)
{
  if (e->local_rank >= ndev)
    return hs_error_set(err, HS_EINVAL,
                        "cuda backend: rank %d is local rank %d on its node but only %d CUDA "
                        "devices are visible there (one GPU per rank)",
                        e->rank, e->local_rank, ndev);
  cudaError_t ce = cudaSetDevice(e->local_rank);
  if (ce != cudaSuccess)
    return hs_error_set(err, HS_EINTERNAL, "cuda backend: cudaSetDevice(%d): %s", e->local_rank,
                        cudaGetErrorString(ce));
  return HS_OK;
}

static ncclDataType_t nccl_type(hs_dtype_t dt)
{
  switch (dt) {
  case HS_DTYPE_FP32: return ncclFloat32;
  case HS_DTYPE_FP16: return ncclFloat16;
  default: return ncclBfloat16; /* bf16, and fp8 plans run their GEMMs in bf16 */
  }
}

static cudaDataType_t cuda_type(hs_dtype_t dt)
{
  switch (dt) {
  case HS_DTYPE_FP32: return CUDA_R_32F;
  case HS_DTYPE_FP16: return CUDA_R_16F;
  default: return CUDA_R_16BF;
  }
}

static size_t elem_bytes(hs_dtype_t dt) { return dt == HS_DTYPE_FP32 ? 4 : 2; }

/* ---- replay -------------------------------------------------------------------- */

typedef struct evpair {
  cudaEvent_t a, b;
} evpair_t;

typedef enum { T_KERNEL, T_ITEM, T_TASK } tkind_t;

typedef struct timed {
  tkind_t kind;
  int32_t ev;              /* pair index */
  hs_kernel_sample_t ks;   /* T_KERNEL */
  hs_item_sample_t is;     /* T_ITEM */
  hs_meas_task_t task;     /* T_ITEM and T_TASK */
} timed_t;

typedef struct gcomm {
  int32_t *devs;           /* sorted member devices (signature) */
  int32_t n;
  ncclComm_t comm;         /* NULL when this rank is not a member */
} gcomm_t;

typedef struct ctx {
  const hs_taskgraph_t *tg;
  renv_t env;
  int32_t *rank_of_dev;    /* plan device -> rank, -1 unused */
  int32_t n_dev_ids;
  int32_t exec, tp_rank, device;
  hs_dtype_t dt;
  ncclComm_t world, act, grad, tp;
  gcomm_t *groups;
  int32_t n_groups;
  int32_t *bucket_group;   /* per bucket: group index for this rank's TP rank, -1 none */
  cublasHandle_t blas;
  cudaStream_t s_comp, s_act, s_grad, s_comm;
  void *A, *B, *C;
  size_t c_elems;          /* capacity of C in elements */
  float *src, *dst;
  size_t stream_n;
  void *cbuf, *sbuf, *rbuf;
  size_t cbuf_bytes, pbuf_bytes;
  evpair_t *ev;
  int32_t n_ev, used_ev;
  cudaEvent_t ev_start, ev_end, ev_sync;
  timed_t *t;
  size_t n_t, cap_t;
  /* the run and the walk's state within one iteration */
  const hs_replay_opts_t *o;
  hs_error_t *err;
  bool record;             /* a timed iteration (past the warm-up) */
  int32_t ie;              /* the current item's event pair, -1 none */
  bool final_bwd;          /* the current item is its chunk's last backward */
  int32_t bwd_done[64];    /* backward items done per chunk */
  int32_t bucket_head;     /* next of the executor's buckets to issue */
} ctx_t;

static int cmp_i32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static int32_t next_ev(ctx_t *c) { return c->used_ev < c->n_ev ? c->used_ev++ : -1; }

static hs_status_t add_timed(ctx_t *c, const timed_t *t)
{
  if (hs_reserve((void **)&c->t, &c->cap_t, c->n_t + 1, sizeof *c->t) != HS_OK)
    return HS_ENOMEM;
  c->t[c->n_t++] = *t;
  return HS_OK;
}

/* All-reduce of gradient bucket b on the comm stream once the compute stream
 * has reached this point. */
static hs_status_t issue_bucket(ctx_t *c, int32_t b, int32_t stage, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_tg_bucket_t *bk = &c->tg->buckets[b];
  int32_t g = c->bucket_group[b];
  int32_t be = next_ev(c);
  size_t eb = elem_bytes(c->dt);
  CU(cudaEventRecord(c->ev_sync, c->s_comp));
  CU(cudaStreamWaitEvent(c->s_comm, c->ev_sync, 0));
  if (be >= 0)
    CU(cudaEventRecord(c->ev[be].a, c->s_comm));
  if (g >= 0 && c->groups[g].comm)
    NC(ncclAllReduce(c->cbuf, c->cbuf, (size_t)(bk->bytes / (double)eb), nccl_type(c->dt), ncclSum,
                     c->groups[g].comm, c->s_comm));
  if (be >= 0) {
    CU(cudaEventRecord(c->ev[be].b, c->s_comm));
    timed_t t = {.kind = T_TASK, .ev = be};
    t.task = hs__replay_task("grad-allreduce", c->exec, c->device, stage, -1, -1, bk->predicted_s,
                             bk->bytes);
    if (add_timed(c, &t) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
cleanup:
  return st;
}

/* Frees everything the replay steps made on this rank (streams, events,
 * buffers, communicators, records); accepts a partly built ctx. */
static void ctx_destroy(ctx_t *c)
{
  free(c->t);
  if (c->ev) {
    for (int32_t i = 0; i < c->n_ev; i++) {
      if (c->ev[i].a)
        cudaEventDestroy(c->ev[i].a);
      if (c->ev[i].b)
        cudaEventDestroy(c->ev[i].b);
    }
    free(c->ev);
  }
  if (c->ev_start)
    cudaEventDestroy(c->ev_start);
  if (c->ev_end)
    cudaEventDestroy(c->ev_end);
  if (c->ev_sync)
    cudaEventDestroy(c->ev_sync);
  cudaFree(c->A);
  cudaFree(c->B);
  cudaFree(c->C);
  cudaFree(c->src);
  cudaFree(c->dst);
  cudaFree(c->cbuf);
  cudaFree(c->sbuf);
  cudaFree(c->rbuf);
  if (c->blas)
    cublasDestroy(c->blas);
  for (int32_t g = 0; g < c->n_groups; g++) {
    if (c->groups[g].comm)
      ncclCommDestroy(c->groups[g].comm);
    free(c->groups[g].devs);
  }
  free(c->groups);
  free(c->bucket_group);
  if (c->tp)
    ncclCommDestroy(c->tp);
  if (c->act)
    ncclCommDestroy(c->act);
  if (c->grad)
    ncclCommDestroy(c->grad);
  if (c->world)
    ncclCommDestroy(c->world);
  if (c->s_comp)
    cudaStreamDestroy(c->s_comp);
  if (c->s_act)
    cudaStreamDestroy(c->s_act);
  if (c->s_grad)
    cudaStreamDestroy(c->s_grad);
  if (c->s_comm)
    cudaStreamDestroy(c->s_comm);
  free(c->rank_of_dev);
}

/* ---- setup: ranks, communicators, buffers, events ------------------------------ */

/* Reads the active executors; guarantees c->rank_of_dev (plan device ->
 * rank, ranks in device id order, -1 for devices that do not run) and
 * *n_used, the ranks the plan needs. Errors: a --stage that selects
 * nothing, out of memory. */
static hs_status_t map_ranks(ctx_t *c, int32_t *n_used, hs_error_t *err)
{
  const hs_taskgraph_t *tg = c->tg;
  int32_t max_dev = 0;
  *n_used = 0;
  for (int32_t e = 0; e < tg->n_execs; e++)
    for (int32_t j = 0; j < tg->execs[e].tp; j++)
      max_dev = HS_MAX(max_dev, tg->execs[e].devices[j] + 1);
  c->rank_of_dev = hs_calloc((size_t)max_dev + 1, sizeof(int32_t));
  if (!c->rank_of_dev)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (int32_t d = 0; d < max_dev; d++)
    c->rank_of_dev[d] = -1;
  for (int32_t e = 0; e < tg->n_execs; e++)
    if (hs__replay_active(c->o, &tg->execs[e]))
      for (int32_t j = 0; j < tg->execs[e].tp; j++)
        c->rank_of_dev[tg->execs[e].devices[j]] = 0;
  for (int32_t d = 0; d < max_dev; d++)
    if (c->rank_of_dev[d] == 0)
      c->rank_of_dev[d] = (*n_used)++;
  if (*n_used == 0)
    return hs__replay_no_stage(c->o, err);
  return HS_OK;
}

/* Reads the launch (n_used ranks wanted); checks the launcher's rank count
 * before touching the GPU or MPI, so that a machine without either still
 * says what is wrong, then starts MPI, binds this rank's GPU and picks its
 * executor and TP rank. Errors: HS_EINVAL naming the mismatch. */
static hs_status_t start_rank(ctx_t *c, int32_t n_used, bool *is_root, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = c->tg;
  const hs_replay_opts_t *o = c->o;
  int ndev = 0;
  int launched = env_size_peek();
  if (n_used != launched)
    return hs_error_set(err, HS_EINVAL,
                        "cuda backend: plan needs %d ranks (one per device%s), mpirun gave %d: run "
                        "`mpirun -np %d hetsim replay --backend cuda ...`%s",
                        n_used, o->only_stage >= 0 ? " of the stage" : "", launched, n_used,
                        n_used > 1 ? "; with one GPU, time one stage with --stage K" : "");
  HS_CHECK(check_device(&ndev, err));
  env_init(&c->env);
  if (is_root)
    *is_root = c->env.rank == 0;
  if (c->env.size != n_used)
    return hs_error_set(err, HS_EINVAL, "cuda backend: plan needs %d ranks, MPI_COMM_WORLD has %d",
                        n_used, c->env.size);
  HS_CHECK(bind_device(&c->env, ndev, err));
  c->exec = -1;
  for (int32_t e = 0; e < tg->n_execs; e++)
    for (int32_t j = 0; j < tg->execs[e].tp; j++)
      if (hs__replay_active(o, &tg->execs[e]) &&
          c->rank_of_dev[tg->execs[e].devices[j]] == c->env.rank) {
        c->exec = e;
        c->tp_rank = j;
        c->device = tg->execs[e].devices[j];
      }
cleanup:
  return st;
}

/* Finds or adds the gradient group of member devices devs[0..n) (sorted;
 * taken over by the group or freed) and splits its communicator from the
 * world one; every rank calls it with the same sequence, so the splits
 * match. Guarantees *g, the group's index. */
static hs_status_t bucket_group(ctx_t *c, int32_t *devs, int32_t n, bool member, int32_t *g_out,
                                hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t g = 0;
  while (g < c->n_groups &&
         !(c->groups[g].n == n && memcmp(c->groups[g].devs, devs, sizeof(int32_t) * (size_t)n) == 0))
    g++;
  *g_out = g;
  if (g < c->n_groups) {
    free(devs);
    return HS_OK;
  }
  if (c->n_groups >= 4096) {
    free(devs);
    return hs_error_set(err, HS_ELIMIT, "cuda backend: more than 4096 distinct gradient groups");
  }
  gcomm_t *ng = hs_reallocarray(c->groups, (size_t)c->n_groups + 1, sizeof *ng);
  if (!ng) {
    free(devs);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  c->groups = ng;
  c->groups[g] = (gcomm_t){.devs = devs, .n = n, .comm = NULL};
  c->n_groups++;
  NC(ncclCommSplit(c->world, member ? (int)g : NCCL_SPLIT_NOCOLOR, c->env.rank, &c->groups[g].comm,
                   NULL));
cleanup:
  return st;
}

/* With several ranks: the NCCL communicators (world, act, grad, this
 * executor's TP group) and, in plan mode, per bucket the group of this
 * rank's TP rank (c->bucket_group, -1 where not a member). Every rank walks
 * the same (bucket, TP rank) list. One rank: nothing. */
static hs_status_t make_comms(ctx_t *c, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = c->tg;
  const hs_tg_exec_t *x = &tg->execs[c->exec];
  if (c->env.size <= 1)
    return HS_OK;
  ncclUniqueId id;
  if (c->env.rank == 0)
    NC(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  NC(ncclCommInitRank(&c->world, c->env.size, id, c->env.rank));
  NC(ncclCommSplit(c->world, 0, c->env.rank, &c->act, NULL));
  NC(ncclCommSplit(c->world, 0, c->env.rank, &c->grad, NULL));
  NC(ncclCommSplit(c->world, x->tp > 1 ? c->exec : NCCL_SPLIT_NOCOLOR, c->tp_rank, &c->tp, NULL));
  if (c->o->only_stage >= 0 || tg->n_buckets == 0)
    return HS_OK;
  c->bucket_group = hs_calloc((size_t)tg->n_buckets, sizeof(int32_t));
  if (!c->bucket_group)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (int32_t b = 0; b < tg->n_buckets; b++) {
    const hs_tg_bucket_t *bk = &tg->buckets[b];
    int32_t tp = bk->tp; /* 1 for a tied pair of unequal TP degrees */
    c->bucket_group[b] = -1;
    for (int32_t j = 0; j < tp; j++) {
      int32_t *devs = hs_calloc((size_t)bk->n_holders, sizeof(int32_t));
      if (!devs)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      bool member = false;
      for (int32_t h = 0; h < bk->n_holders; h++) {
        devs[h] = tg->execs[bk->holders[h]].devices[j];
        member |= devs[h] == c->device;
      }
      qsort(devs, (size_t)bk->n_holders, sizeof(int32_t), cmp_i32);
      int32_t g = 0;
      HS_CHECK(bucket_group(c, devs, bk->n_holders, member, &g, err));
      if (member)
        c->bucket_group[b] = g;
    }
  }
cleanup:
  return st;
}

/* Reads this rank's executor; guarantees cuBLAS on the compute stream, the
 * four streams, and device buffers holding its largest GEMM operands and
 * products (C capped at 1 GiB: batches loop), memory-bound kernel,
 * collective or bucket, and piece, filled where kernels read them. */
static hs_status_t make_buffers(ctx_t *c, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = c->tg;
  const hs_tg_exec_t *x = &tg->execs[c->exec];
  CB(cublasCreate(&c->blas));
  CU(cudaStreamCreateWithFlags(&c->s_comp, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->s_act, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->s_grad, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->s_comm, cudaStreamNonBlocking));
  CB(cublasSetStream(c->blas, c->s_comp));
  size_t eb = elem_bytes(c->dt), ab = 1, cmax = 1;
  c->stream_n = (size_t)(x->optimizer_bytes / 8.0) + 1;
  c->cbuf_bytes = 256;
  for (int32_t k = 0; k < 2 * x->v; k++)
    for (int32_t i = 0; i < x->work[k].n; i++) {
      const hs_tg_entry_t *en = &x->work[k].e[i];
      if (en->kind == HS_TG_KERNEL && en->is_gemm && en->reps > 0) {
        ab = HS_MAX(ab, (size_t)HS_MAX(en->m * en->k, HS_MAX(en->k * en->n, en->m * en->n)));
        cmax = HS_MAX(cmax, (size_t)HS_MAX(en->m * en->n, en->k * en->n) * (size_t)en->reps);
      } else if (en->kind == HS_TG_KERNEL) {
        c->stream_n = HS_MAX(c->stream_n, (size_t)(en->bytes / 8.0) + 1);
      } else {
        c->cbuf_bytes = HS_MAX(c->cbuf_bytes, 2 * (size_t)en->coll_bytes + 256);
      }
    }
  for (int32_t k = 0; k < x->n_buckets; k++)
    c->cbuf_bytes = HS_MAX(c->cbuf_bytes, (size_t)tg->buckets[x->buckets[k]].bytes + 256);
  c->pbuf_bytes = 256;
  for (int32_t p = 0; p < tg->n_pieces; p++)
    if (tg->pieces[p].src == c->exec || tg->pieces[p].dst == c->exec)
      c->pbuf_bytes = HS_MAX(c->pbuf_bytes, (size_t)tg->pieces[p].total_bytes + 256);
  size_t c_cap = ((size_t)1 << 30) / eb;
  c->c_elems = HS_MAX(HS_MIN(cmax, c_cap), ab);
  CU(cudaMalloc(&c->A, ab * eb));
  CU(cudaMalloc(&c->B, ab * eb));
  CU(cudaMalloc(&c->C, c->c_elems * eb));
  CU(cudaMalloc((void **)&c->src, c->stream_n * sizeof(float)));
  CU(cudaMalloc((void **)&c->dst, c->stream_n * sizeof(float)));
  CU(cudaMalloc(&c->cbuf, c->cbuf_bytes));
  CU(cudaMalloc(&c->sbuf, c->pbuf_bytes));
  CU(cudaMalloc(&c->rbuf, c->pbuf_bytes));
  CU(hs__cuda_fill(c->A, ab * eb, c->s_comp));
  CU(hs__cuda_fill(c->B, ab * eb, c->s_comp));
  CU(cudaMemsetAsync(c->src, 0, c->stream_n * sizeof(float), c->s_comp));
  CU(cudaMemsetAsync(c->cbuf, 0, c->cbuf_bytes, c->s_comp));
cleanup:
  return st;
}

/* Guarantees enough event pairs for one iteration of this rank's items
 * (per kernel entry, item, send, bucket, optimizer) and the start, end and
 * sync events; waits for the buffer fills. */
static hs_status_t make_events(ctx_t *c, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_tg_exec_t *x = &c->tg->execs[c->exec];
  int32_t n_ev = 8 + x->n_buckets * 2;
  for (int32_t p = 0; p < x->n_items; p++) {
    const hs_sched_item_t *it = &x->order[p];
    n_ev += x->work[it->chunk * 2 + it->phase].n + 2 + x->out_count[it->chunk * 2 + it->phase] * 2;
  }
  c->n_ev = n_ev;
  c->ev = hs_calloc((size_t)n_ev, sizeof *c->ev);
  if (!c->ev)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < n_ev; i++) {
    CU(cudaEventCreate(&c->ev[i].a));
    CU(cudaEventCreate(&c->ev[i].b));
  }
  CU(cudaEventCreate(&c->ev_start));
  CU(cudaEventCreate(&c->ev_end));
  CU(cudaEventCreateWithFlags(&c->ev_sync, cudaEventDisableTiming));
  CU(cudaStreamSynchronize(c->s_comp));
cleanup:
  return st;
}

/* ---- one iteration: the steps hs__replay_walk calls ------------------------- */

/* Receives the item's pieces (several ranks: TP rank j < min(tp_src, tp)
 * from rank j of the sender) on the act or grad stream, and makes the
 * compute stream wait for them. */
static hs_status_t cuda_recv(void *be, const hs_sched_item_t *it)
{
  ctx_t *c = be;
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = c->tg;
  const hs_tg_exec_t *x = &tg->execs[c->exec];
  for (int32_t q = 0; q < tg->n_pieces && c->env.size > 1; q++) {
    const hs_tg_piece_t *pc = &tg->pieces[q];
    if (pc->dst != c->exec || pc->dst_chunk != it->chunk || pc->phase != it->phase)
      continue;
    const hs_tg_exec_t *sx = &tg->execs[pc->src];
    int32_t nsub = HS_MIN(sx->tp, x->tp);
    if (!hs__replay_active(c->o, sx) || c->tp_rank >= nsub)
      continue;
    cudaStream_t s = it->phase == HS_PHASE_FWD ? c->s_act : c->s_grad;
    NC(ncclRecv(c->rbuf, (size_t)(pc->total_bytes / nsub), ncclUint8,
                c->rank_of_dev[sx->devices[c->tp_rank]], it->phase == HS_PHASE_FWD ? c->act : c->grad,
                s));
    CU(cudaEventRecord(c->ev_sync, s));
    CU(cudaStreamWaitEvent(c->s_comp, c->ev_sync, 0));
  }
cleanup:
  return st;
}

/* Opens the item's event pair and notes whether it is the final backward
 * of its chunk (the one after which gradient buckets may go). */
static hs_status_t cuda_item_begin(void *be, const hs_sched_item_t *it)
{
  ctx_t *c = be;
  hs_status_t st = HS_OK;
  const hs_tg_exec_t *x = &c->tg->execs[c->exec];
  c->ie = next_ev(c);
  if (c->ie >= 0)
    CU(cudaEventRecord(c->ev[c->ie].a, c->s_comp));
  c->final_bwd = it->phase == HS_PHASE_BWD && it->chunk < 64 && c->bwd_done[it->chunk] == x->m - 1;
cleanup:
  return st;
}

/* The GEMMs of kernel entry en on the compute stream: cublasGemmEx, or
 * batches of products when it has reps (C holds c->c_elems elements). */
static hs_status_t run_gemm(ctx_t *c, const hs_tg_entry_t *en)
{
  hs_status_t st = HS_OK;
  cudaDataType_t ct = cuda_type(c->dt);
  const float one = 1.0f, zero = 0.0f;
  for (int32_t kk = 0; kk < en->n_kernels; kk++) {
    /* row-major C[M x N] = A[M x K] B[K x N] is column-major C^T = B^T A^T */
    int64_t M = kk ? en->k : en->m, N = en->n, K = kk ? en->m : en->k;
    int64_t left = en->reps;
    while (left > 0) {
      int64_t batch = HS_MIN(left, (int64_t)(c->c_elems / (size_t)(M * N)));
      if (batch < 1)
        batch = 1;
      if (batch == 1)
        CB(cublasGemmEx(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, c->B, ct,
                        (int)N, c->A, ct, (int)K, &zero, c->C, ct, (int)N, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT));
      else
        CB(cublasGemmStridedBatchedEx(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K,
                                      &one, c->B, ct, (int)N, 0, c->A, ct, (int)K, 0, &zero, c->C,
                                      ct, (int)N, (long long)(M * N), (int)batch,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      left -= batch;
    }
  }
cleanup:
  return st;
}

/* A TP collective of entry en over this executor's group, on the compute
 * stream (blocking, as in the simulator). */
static hs_status_t run_coll(ctx_t *c, const hs_tg_entry_t *en)
{
  hs_status_t st = HS_OK;
  const hs_tg_exec_t *x = &c->tg->execs[c->exec];
  size_t eb = elem_bytes(c->dt);
  size_t count = (size_t)(en->coll_bytes / (double)eb);
  if (en->coll_op == HS_COLL_ALLTOALL) {
    size_t per = count / (size_t)x->tp * eb;
    NC(ncclGroupStart());
    for (int32_t q = 0; q < x->tp; q++) {
      NC(ncclSend((char *)c->cbuf + per * (size_t)q, per, ncclUint8, q, c->tp, c->s_comp));
      NC(ncclRecv((char *)c->cbuf + count * eb + per * (size_t)q, per, ncclUint8, q, c->tp,
                  c->s_comp));
    }
    NC(ncclGroupEnd());
  } else {
    NC(ncclAllReduce(c->cbuf, c->cbuf, count, nccl_type(c->dt), ncclSum, c->tp, c->s_comp));
  }
cleanup:
  return st;
}

/* Runs entry i of the item: a kernel between an event pair (its sample kept
 * on TP rank 0 of a timed iteration) or a TP collective; after the final
 * backward of a kernel, issues the gradient buckets whose ops it
 * completes. */
static hs_status_t cuda_entry(void *be, const hs_sched_item_t *it, int32_t i, const hs_tg_entry_t *en)
{
  ctx_t *c = be;
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = c->tg;
  const hs_tg_exec_t *x = &tg->execs[c->exec];
  int32_t ke = (en->kind == HS_TG_KERNEL) ? next_ev(c) : -1;
  if (ke >= 0)
    CU(cudaEventRecord(c->ev[ke].a, c->s_comp));
  if (en->kind == HS_TG_KERNEL && en->is_gemm && en->reps > 0)
    HS_CHECK(run_gemm(c, en));
  else if (en->kind == HS_TG_KERNEL && en->bytes > 0)
    CU(hs__cuda_stream(c->dst, c->src, (size_t)(en->bytes / 8.0), c->s_comp));
  else if (en->kind == HS_TG_COLL && x->tp > 1 && c->tp)
    HS_CHECK(run_coll(c, en));
  if (ke >= 0) {
    CU(cudaEventRecord(c->ev[ke].b, c->s_comp));
    if (c->record && c->tp_rank == 0) {
      timed_t t = {.kind = T_KERNEL, .ev = ke};
      t.ks = (hs_kernel_sample_t){.exec = c->exec, .chunk = it->chunk, .entry = i,
                                  .phase = it->phase};
      if (add_timed(c, &t) != HS_OK)
        HS_FAIL(hs_error_set(c->err, HS_ENOMEM, "out of memory"));
    }
  }
  while (c->final_bwd && en->kind == HS_TG_KERNEL && en->phase == HS_PHASE_BWD &&
         c->bucket_head < x->n_buckets && c->bucket_group &&
         tg->buckets[x->buckets[c->bucket_head]].op_first >= en->op) {
    HS_CHECK(issue_bucket(c, x->buckets[c->bucket_head], hs_tg_stage(x, it->chunk), c->err));
    c->bucket_head++;
  }
cleanup:
  return st;
}

/* Closes the item's event pair into an item sample and a "fwd"/"bwd" task;
 * counts a backward done. */
static hs_status_t cuda_item_end(void *be, const hs_sched_item_t *it)
{
  ctx_t *c = be;
  hs_status_t st = HS_OK;
  const hs_tg_exec_t *x = &c->tg->execs[c->exec];
  if (c->ie >= 0) {
    CU(cudaEventRecord(c->ev[c->ie].b, c->s_comp));
    timed_t t = {.kind = T_ITEM, .ev = c->ie};
    t.is = (hs_item_sample_t){.exec = c->exec, .chunk = it->chunk, .phase = it->phase};
    t.task = hs__replay_task(it->phase == HS_PHASE_FWD ? "fwd" : "bwd", c->exec, c->device,
                             hs_tg_stage(x, it->chunk), it->mb, it->chunk,
                             x->work[it->chunk * 2 + it->phase].predicted_compute_s, 0.0);
    if (add_timed(c, &t) != HS_OK)
      HS_FAIL(hs_error_set(c->err, HS_ENOMEM, "out of memory"));
  }
  if (it->phase == HS_PHASE_BWD && it->chunk < 64)
    c->bwd_done[it->chunk]++;
cleanup:
  return st;
}

/* Sends the item's pieces (Megatron's scatter: TP rank j < min(tp, tp_dst)
 * sends 1/min of the piece to rank j of the receiver) on the act or grad
 * stream once the compute stream has produced them; an "act"/"grad" task
 * each. */
static hs_status_t cuda_send(void *be, const hs_sched_item_t *it)
{
  ctx_t *c = be;
  hs_status_t st = HS_OK;
  const hs_taskgraph_t *tg = c->tg;
  const hs_tg_exec_t *x = &tg->execs[c->exec];
  int32_t key = it->chunk * 2 + it->phase;
  for (int32_t k = 0; k < x->out_count[key] && c->env.size > 1; k++) {
    const hs_tg_piece_t *pc = &tg->pieces[tg->out_list[x->out_first[key] + k]];
    const hs_tg_exec_t *dx = &tg->execs[pc->dst];
    int32_t nsub = HS_MIN(dx->tp, x->tp);
    if (!hs__replay_active(c->o, dx) || c->tp_rank >= nsub)
      continue;
    cudaStream_t s = it->phase == HS_PHASE_FWD ? c->s_act : c->s_grad;
    CU(cudaEventRecord(c->ev_sync, c->s_comp));
    CU(cudaStreamWaitEvent(s, c->ev_sync, 0));
    int32_t se = next_ev(c);
    if (se >= 0)
      CU(cudaEventRecord(c->ev[se].a, s));
    NC(ncclSend(c->sbuf, (size_t)(pc->total_bytes / nsub), ncclUint8,
                c->rank_of_dev[dx->devices[c->tp_rank]], it->phase == HS_PHASE_FWD ? c->act : c->grad,
                s));
    if (se >= 0) {
      CU(cudaEventRecord(c->ev[se].b, s));
      timed_t t = {.kind = T_TASK, .ev = se};
      t.task = hs__replay_task(it->phase == HS_PHASE_FWD ? "act" : "grad", c->exec, c->device,
                               pc->src_stage, it->mb, it->chunk, pc->predicted_s, pc->total_bytes);
      if (add_timed(c, &t) != HS_OK)
        HS_FAIL(hs_error_set(c->err, HS_ENOMEM, "out of memory"));
    }
  }
cleanup:
  return st;
}

/* After the last item: the buckets not yet issued (none when every op's
 * final backward matched; issuing them keeps every holder's collective
 * sequence equal), then the optimizer after every bucket and every send. */
static hs_status_t cuda_finish(void *be)
{
  ctx_t *c = be;
  hs_status_t st = HS_OK;
  const hs_tg_exec_t *x = &c->tg->execs[c->exec];
  while (c->bucket_head < x->n_buckets && c->bucket_group) {
    HS_CHECK(issue_bucket(c, x->buckets[c->bucket_head], hs_tg_stage(x, 0), c->err));
    c->bucket_head++;
  }
  CU(cudaEventRecord(c->ev_sync, c->s_comm));
  CU(cudaStreamWaitEvent(c->s_comp, c->ev_sync, 0));
  CU(cudaEventRecord(c->ev_sync, c->s_act));
  CU(cudaStreamWaitEvent(c->s_comp, c->ev_sync, 0));
  CU(cudaEventRecord(c->ev_sync, c->s_grad));
  CU(cudaStreamWaitEvent(c->s_comp, c->ev_sync, 0));
  int32_t oe = next_ev(c);
  if (oe >= 0)
    CU(cudaEventRecord(c->ev[oe].a, c->s_comp));
  CU(hs__cuda_stream(c->dst, c->src, (size_t)(x->optimizer_bytes / 8.0), c->s_comp));
  if (oe >= 0) {
    CU(cudaEventRecord(c->ev[oe].b, c->s_comp));
    timed_t t = {.kind = T_TASK, .ev = oe};
    t.task = hs__replay_task("optimizer", c->exec, c->device, hs_tg_stage(x, 0), -1, -1,
                             x->optimizer_predicted_s, x->optimizer_bytes);
    if (add_timed(c, &t) != HS_OK)
      HS_FAIL(hs_error_set(c->err, HS_ENOMEM, "out of memory"));
  }
cleanup:
  return st;
}

static const hs_replay_backend_t cuda_backend = {
    .name = "cuda",
    .recv = cuda_recv,
    .item_begin = cuda_item_begin,
    .entry = cuda_entry,
    .item_end = cuda_item_end,
    .send = cuda_send,
    .finish = cuda_finish,
};

/* One iteration on every rank at once (MPI barrier first): the walk of this
 * rank's executor between the start and end events, then the slowest
 * rank's elapsed time into *slowest_s and this iteration's event times into
 * its records (a warm-up keeps none). */
static hs_status_t run_iteration(ctx_t *c, bool record, double *slowest_s, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t t_mark = c->n_t;
  c->used_ev = 0;
  c->record = record;
  c->bucket_head = 0;
  memset(c->bwd_done, 0, sizeof c->bwd_done);
  if (c->env.mpi)
    MPI_Barrier(MPI_COMM_WORLD);
  CU(cudaEventRecord(c->ev_start, c->s_comp));
  CU(cudaStreamWaitEvent(c->s_act, c->ev_start, 0));
  CU(cudaStreamWaitEvent(c->s_grad, c->ev_start, 0));
  CU(cudaStreamWaitEvent(c->s_comm, c->ev_start, 0));
  HS_CHECK(hs__replay_walk(&cuda_backend, c, &c->tg->execs[c->exec]));
  CU(cudaEventRecord(c->ev_end, c->s_comp));
  CU(cudaDeviceSynchronize());
  float ms = 0.0f;
  CU(cudaEventElapsedTime(&ms, c->ev_start, c->ev_end));
  double local = ms * 1e-3;
  *slowest_s = local;
  if (c->env.mpi)
    MPI_Allreduce(&local, slowest_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (size_t k = t_mark; k < c->n_t; k++) {
    timed_t *t = &c->t[k];
    float a = 0.0f, d = 0.0f;
    CU(cudaEventElapsedTime(&a, c->ev_start, c->ev[t->ev].a));
    CU(cudaEventElapsedTime(&d, c->ev[t->ev].a, c->ev[t->ev].b));
    t->ks.s = d * 1e-3;
    t->is.s = d * 1e-3;
    t->task.t0_s = a * 1e-3;
    t->task.t1_s = (a + d) * 1e-3;
  }
  if (!record)
    c->n_t = t_mark;
cleanup:
  return st;
}

/* ---- results ------------------------------------------------------------------ */

/* Every rank's records as bytes onto rank 0 (one build, one architecture on
 * every rank): *gather (the caller frees it; rank 0's holds *total bytes),
 * *counts (per rank, several ranks only; the caller frees it). */
static hs_status_t gather_records(ctx_t *c, char **gather, int **counts_out, long long *total_out,
                                  hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int *displs = NULL;
  long long mine = (long long)(c->n_t * sizeof(timed_t)), total = mine;
  if (c->env.mpi && c->env.size > 1) {
    int *counts = *counts_out = hs_calloc((size_t)c->env.size, sizeof(int));
    displs = hs_calloc((size_t)c->env.size, sizeof(int));
    if (!counts || !displs)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    if (mine > INT32_MAX)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "cuda backend: rank %d recorded %lld bytes of timings "
                           "(more than MPI_Gatherv moves); use fewer --iterations", c->env.rank, mine));
    int my = (int)mine;
    MPI_Gather(&my, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    total = 0;
    for (int r = 0; r < c->env.size && c->env.rank == 0; r++) {
      displs[r] = (int)total;
      total += counts[r];
      if (total > INT32_MAX)
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "cuda backend: more than 2 GB of timings; use fewer "
                                             "--iterations"));
    }
    *gather = hs_calloc(c->env.rank == 0 ? (size_t)total + 1 : 1, 1);
    if (!*gather)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    MPI_Gatherv(c->t, my, MPI_BYTE, *gather, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  } else {
    *gather = hs_calloc((size_t)total + 1, 1);
    if (!*gather)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    if (total)
      memcpy(*gather, c->t, (size_t)total);
  }
  *total_out = total;
cleanup:
  free(displs);
  return st;
}

/* Rank 0: sorts the gathered records into kernel samples, item samples and
 * the median iteration's tasks (records come per rank in iteration order,
 * as many per iteration on that rank), then labels out. */
static hs_status_t assemble(ctx_t *c, const char *gather, const int *counts, long long total,
                            int32_t med_it, hs_measured_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_replay_opts_t *o = c->o;
  size_t n_all = (size_t)total / sizeof(timed_t);
  const timed_t *all = (const timed_t *)(const void *)gather;
  hs_kernel_sample_t *ks = hs_calloc(n_all + 1, sizeof *ks);
  hs_item_sample_t *is = hs_calloc(n_all + 1, sizeof *is);
  out->tasks = hs_calloc(n_all + 1, sizeof *out->tasks);
  if (!ks || !is || !out->tasks)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  size_t n_ks = 0, n_is = 0;
  for (int r = 0, base = 0; r < (c->env.mpi && c->env.size > 1 ? c->env.size : 1); r++) {
    size_t nr = (c->env.mpi && c->env.size > 1) ? (size_t)counts[r] / sizeof(timed_t) : n_all;
    size_t pi = o->iterations > 0 ? nr / (size_t)o->iterations : 0;
    for (size_t k = 0; k < nr; k++) {
      const timed_t *t = &all[(size_t)base + k];
      if (t->kind == T_KERNEL)
        ks[n_ks++] = t->ks;
      if (t->kind == T_ITEM)
        is[n_is++] = t->is;
      if (t->kind != T_KERNEL && pi > 0 && k / pi == (size_t)med_it)
        out->tasks[out->n_tasks++] = t->task;
    }
    base += (int)nr;
  }
  HS_CHECK(hs__replay_label(c->tg, o, cuda_backend.name, ks, n_ks, is, n_is, out, err));
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, c->env.local_rank) == cudaSuccess)
    snprintf(out->device, sizeof out->device, "%.100s x%d ranks", prop.name, c->env.size);
cleanup:
  free(ks);
  free(is);
  return st;
}

hs_status_t hs__cuda_replay(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                           hs_measured_t *out, bool *is_root, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_replay_opts_t defaults;
  ctx_t cx;
  memset(&cx, 0, sizeof cx);
  char *gather = NULL;
  int *counts = NULL;
  long long total = 0;
  int32_t n_used = 0;
  hs_measured_init(out);
  if (is_root)
    *is_root = true;
  HS_CHECK(hs__replay_opts(o, &defaults, &o, err));
  cx.tg = tg;
  cx.o = o;
  cx.err = err;
  cx.dt = tg->precision;
  HS_CHECK(map_ranks(&cx, &n_used, err));
  HS_CHECK(start_rank(&cx, n_used, is_root, err));
  HS_CHECK(make_comms(&cx, err));
  HS_CHECK(make_buffers(&cx, err));
  HS_CHECK(make_events(&cx, err));
  out->n_iterations = o->iterations;
  out->iteration_s = hs_calloc((size_t)o->iterations + 1, sizeof *out->iteration_s);
  if (!out->iteration_s)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t iter = 0; iter < o->warmup + o->iterations; iter++) {
    double slowest = 0.0;
    HS_CHECK(run_iteration(&cx, iter >= o->warmup, &slowest, err));
    if (iter >= o->warmup)
      out->iteration_s[iter - o->warmup] = slowest;
  }
  int32_t med_it = hs__replay_median(out);
  HS_CHECK(gather_records(&cx, &gather, &counts, &total, err));
  if (cx.env.rank == 0)
    HS_CHECK(assemble(&cx, gather, counts, total, med_it, out, err));
cleanup:
  if (st != HS_OK && st != HS_EINVAL && cx.env.mpi)
    die(&cx.env, err);
  if (st == HS_EINVAL && cx.env.mpi && cx.env.size > 1 && cx.env.rank != 0 && is_root)
    *is_root = false; /* every rank fails alike; only rank 0 reports */
  free(gather);
  free(counts);
  ctx_destroy(&cx);
  if (st != HS_OK)
    hs_measured_destroy(out);
  return st;
}

#endif /* HS_HAVE_CUDA */
