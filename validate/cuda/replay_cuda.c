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

#define CU(x)                                                                                     \
  do {                                                                                            \
    cudaError_t ce_ = (x);                                                                        \
    if (ce_ != cudaSuccess) {                                                                     \
      st = hs_error_set(err, HS_EINTERNAL, "rank %d: %s: %s", env.rank, #x, cudaGetErrorString(ce_)); \
      goto cleanup;                                                                               \
    }                                                                                             \
  } while (0)
#define NC(x)                                                                                     \
  do {                                                                                            \
    ncclResult_t nr_ = (x);                                                                       \
    if (nr_ != ncclSuccess) {                                                                     \
      st = hs_error_set(err, HS_EINTERNAL, "rank %d: %s: %s", env.rank, #x, ncclGetErrorString(nr_)); \
      goto cleanup;                                                                               \
    }                                                                                             \
  } while (0)
#define CB(x)                                                                                     \
  do {                                                                                            \
    cublasStatus_t cs_ = (x);                                                                     \
    if (cs_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      st = hs_error_set(err, HS_EINTERNAL, "rank %d: %s: cuBLAS status %d", env.rank, #x, (int)cs_); \
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
  renv_t env = c->env;
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
    t.task = (hs_meas_task_t){.exec = c->exec, .device = c->device, .stage = stage, .mb = -1,
                              .chunk = -1, .bytes = bk->bytes, .predicted_s = bk->predicted_s};
    hs_strlcpy(t.task.name, "grad-allreduce", sizeof t.task.name);
    if (add_timed(c, &t) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
cleanup:
  return st;
}

static bool active(const hs_replay_opts_t *o, const hs_tg_exec_t *x)
{
  return o->only_stage < 0 || (x->pipeline == 0 && x->v == 1 && x->rank == o->only_stage);
}

hs_status_t hs__cuda_replay(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                           hs_measured_t *out, bool *is_root, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_replay_opts_t defaults;
  ctx_t cx;
  memset(&cx, 0, sizeof cx);
  renv_t env;
  memset(&env, 0, sizeof env);
  hs_kernel_sample_t *ks = NULL;
  hs_item_sample_t *is = NULL;
  char *gather = NULL;
  int *counts = NULL, *displs = NULL;
  double *it_s = NULL;
  hs_measured_init(out);
  if (is_root)
    *is_root = true;
  if (!o) {
    hs_replay_opts_init(&defaults);
    o = &defaults;
  }
  int ndev = 0;
  cx.tg = tg;
  cx.dt = tg->precision;

  /* devices of the (active part of the) plan, in id order -> ranks */
  int32_t max_dev = 0, n_used = 0;
  for (int32_t e = 0; e < tg->n_execs; e++)
    for (int32_t j = 0; j < tg->execs[e].tp; j++)
      max_dev = HS_MAX(max_dev, tg->execs[e].devices[j] + 1);
  cx.rank_of_dev = hs_calloc((size_t)max_dev + 1, sizeof(int32_t));
  if (!cx.rank_of_dev)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t d = 0; d < max_dev; d++)
    cx.rank_of_dev[d] = -1;
  for (int32_t e = 0; e < tg->n_execs; e++)
    if (active(o, &tg->execs[e]))
      for (int32_t j = 0; j < tg->execs[e].tp; j++)
        cx.rank_of_dev[tg->execs[e].devices[j]] = 0;
  for (int32_t d = 0; d < max_dev; d++)
    if (cx.rank_of_dev[d] == 0)
      cx.rank_of_dev[d] = n_used++;
  if (n_used == 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "replay: --stage %d: pipeline 0 has no such stage",
                         o->only_stage));
  /* checked before touching the GPU or MPI, so that a machine without either
   * still says what is wrong with the launch */
  int launched = env_size_peek();
  if (n_used != launched)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "cuda backend: plan needs %d ranks (one per device%s), mpirun gave %d: run "
                         "`mpirun -np %d hetsim replay --backend cuda ...`%s",
                         n_used, o->only_stage >= 0 ? " of the stage" : "", launched, n_used,
                         n_used > 1 ? "; with one GPU, time one stage with --stage K" : ""));
  HS_CHECK(check_device(&ndev, err));
  env_init(&env);
  cx.env = env;
  if (is_root)
    *is_root = env.rank == 0;
  if (env.size != n_used)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "cuda backend: plan needs %d ranks, MPI_COMM_WORLD has %d",
                         n_used, env.size));
  HS_CHECK(bind_device(&env, ndev, err));
  cx.exec = -1;
  for (int32_t e = 0; e < tg->n_execs; e++)
    for (int32_t j = 0; j < tg->execs[e].tp; j++)
      if (active(o, &tg->execs[e]) && cx.rank_of_dev[tg->execs[e].devices[j]] == env.rank) {
        cx.exec = e;
        cx.tp_rank = j;
        cx.device = tg->execs[e].devices[j];
      }
  const hs_tg_exec_t *x = &tg->execs[cx.exec];

  /* NCCL communicators */
  if (env.size > 1) {
    ncclUniqueId id;
    if (env.rank == 0)
      NC(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    NC(ncclCommInitRank(&cx.world, env.size, id, env.rank));
    NC(ncclCommSplit(cx.world, 0, env.rank, &cx.act, NULL));
    NC(ncclCommSplit(cx.world, 0, env.rank, &cx.grad, NULL));
    NC(ncclCommSplit(cx.world, x->tp > 1 ? cx.exec : NCCL_SPLIT_NOCOLOR, cx.tp_rank, &cx.tp, NULL));
    if (o->only_stage < 0 && tg->n_buckets > 0) {
      /* every rank walks the same (bucket, TP rank) list and splits once per
       * distinct member set, so the collective calls match */
      cx.bucket_group = hs_calloc((size_t)tg->n_buckets, sizeof(int32_t));
      int32_t *devs = NULL;
      for (int32_t b = 0; b < tg->n_buckets; b++) {
        const hs_tg_bucket_t *bk = &tg->buckets[b];
        int32_t tp = bk->tp; /* 1 for a tied pair of unequal TP degrees */
        cx.bucket_group[b] = -1;
        for (int32_t j = 0; j < tp; j++) {
          devs = hs_calloc((size_t)bk->n_holders, sizeof(int32_t));
          if (!devs)
            HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
          bool member = false;
          for (int32_t h = 0; h < bk->n_holders; h++) {
            devs[h] = tg->execs[bk->holders[h]].devices[j];
            member |= devs[h] == cx.device;
          }
          qsort(devs, (size_t)bk->n_holders, sizeof(int32_t), cmp_i32);
          int32_t g = 0;
          while (g < cx.n_groups && !(cx.groups[g].n == bk->n_holders &&
                                     memcmp(cx.groups[g].devs, devs, sizeof(int32_t) * (size_t)bk->n_holders) == 0))
            g++;
          if (g == cx.n_groups) {
            if (cx.n_groups >= 4096) {
              free(devs);
              HS_FAIL(hs_error_set(err, HS_ELIMIT, "cuda backend: more than 4096 distinct "
                                                   "gradient groups"));
            }
            gcomm_t *ng = hs_reallocarray(cx.groups, (size_t)cx.n_groups + 1, sizeof *ng);
            if (!ng) {
              free(devs);
              HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
            }
            cx.groups = ng;
            cx.groups[g] = (gcomm_t){.devs = devs, .n = bk->n_holders, .comm = NULL};
            cx.n_groups++;
            NC(ncclCommSplit(cx.world, member ? (int)g : NCCL_SPLIT_NOCOLOR, env.rank,
                             &cx.groups[g].comm, NULL));
          } else {
            free(devs);
          }
          devs = NULL;
          if (member)
            cx.bucket_group[b] = g;
        }
      }
    }
  }

  /* cuBLAS, streams, buffers */
  CB(cublasCreate(&cx.blas));
  CU(cudaStreamCreateWithFlags(&cx.s_comp, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&cx.s_act, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&cx.s_grad, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&cx.s_comm, cudaStreamNonBlocking));
  CB(cublasSetStream(cx.blas, cx.s_comp));
  size_t eb = elem_bytes(cx.dt), ab = 1, cmax = 1;
  cx.stream_n = (size_t)(x->optimizer_bytes / 8.0) + 1;
  cx.cbuf_bytes = 256;
  for (int32_t k = 0; k < 2 * x->v; k++)
    for (int32_t i = 0; i < x->work[k].n; i++) {
      const hs_tg_entry_t *en = &x->work[k].e[i];
      if (en->kind == HS_TG_KERNEL && en->is_gemm && en->reps > 0) {
        ab = HS_MAX(ab, (size_t)HS_MAX(en->m * en->k, HS_MAX(en->k * en->n, en->m * en->n)));
        cmax = HS_MAX(cmax, (size_t)HS_MAX(en->m * en->n, en->k * en->n) * (size_t)en->reps);
      } else if (en->kind == HS_TG_KERNEL) {
        cx.stream_n = HS_MAX(cx.stream_n, (size_t)(en->bytes / 8.0) + 1);
      } else {
        cx.cbuf_bytes = HS_MAX(cx.cbuf_bytes, 2 * (size_t)en->coll_bytes + 256);
      }
    }
  for (int32_t k = 0; k < x->n_buckets; k++)
    cx.cbuf_bytes = HS_MAX(cx.cbuf_bytes, (size_t)tg->buckets[x->buckets[k]].bytes + 256);
  cx.pbuf_bytes = 256;
  for (int32_t p = 0; p < tg->n_pieces; p++)
    if (tg->pieces[p].src == cx.exec || tg->pieces[p].dst == cx.exec)
      cx.pbuf_bytes = HS_MAX(cx.pbuf_bytes, (size_t)tg->pieces[p].total_bytes + 256);
  /* C holds a batch of products; cap it at 1 GiB and loop over batches */
  size_t c_cap = ((size_t)1 << 30) / eb;
  cx.c_elems = HS_MAX(HS_MIN(cmax, c_cap), ab);
  CU(cudaMalloc(&cx.A, ab * eb));
  CU(cudaMalloc(&cx.B, ab * eb));
  CU(cudaMalloc(&cx.C, cx.c_elems * eb));
  CU(cudaMalloc((void **)&cx.src, cx.stream_n * sizeof(float)));
  CU(cudaMalloc((void **)&cx.dst, cx.stream_n * sizeof(float)));
  CU(cudaMalloc(&cx.cbuf, cx.cbuf_bytes));
  CU(cudaMalloc(&cx.sbuf, cx.pbuf_bytes));
  CU(cudaMalloc(&cx.rbuf, cx.pbuf_bytes));
  CU(hs__cuda_fill(cx.A, ab * eb, cx.s_comp));
  CU(hs__cuda_fill(cx.B, ab * eb, cx.s_comp));
  CU(cudaMemsetAsync(cx.src, 0, cx.stream_n * sizeof(float), cx.s_comp));
  CU(cudaMemsetAsync(cx.cbuf, 0, cx.cbuf_bytes, cx.s_comp));
  /* events: per kernel entry, item, send, bucket, optimizer */
  int32_t n_ev = 8 + x->n_buckets * 2;
  for (int32_t p = 0; p < x->n_items; p++) {
    const hs_sched_item_t *it = &x->order[p];
    n_ev += x->work[it->chunk * 2 + it->phase].n + 2 + x->out_count[it->chunk * 2 + it->phase] * 2;
  }
  cx.n_ev = n_ev;
  cx.ev = hs_calloc((size_t)n_ev, sizeof *cx.ev);
  if (!cx.ev)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < n_ev; i++) {
    CU(cudaEventCreate(&cx.ev[i].a));
    CU(cudaEventCreate(&cx.ev[i].b));
  }
  CU(cudaEventCreate(&cx.ev_start));
  CU(cudaEventCreate(&cx.ev_end));
  CU(cudaEventCreateWithFlags(&cx.ev_sync, cudaEventDisableTiming));
  CU(cudaStreamSynchronize(cx.s_comp));

  int32_t n_total = o->warmup + o->iterations;
  it_s = hs_calloc((size_t)o->iterations + 1, sizeof *it_s);
  if (!it_s)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  cudaDataType_t ct = cuda_type(cx.dt);
  const float one = 1.0f, zero = 0.0f;
  for (int32_t iter = 0; iter < n_total; iter++) {
    bool record = iter >= o->warmup;
    size_t t_mark = cx.n_t;
    cx.used_ev = 0;
    if (env.mpi)
      MPI_Barrier(MPI_COMM_WORLD);
    CU(cudaEventRecord(cx.ev_start, cx.s_comp));
    CU(cudaStreamWaitEvent(cx.s_act, cx.ev_start, 0));
    CU(cudaStreamWaitEvent(cx.s_grad, cx.ev_start, 0));
    CU(cudaStreamWaitEvent(cx.s_comm, cx.ev_start, 0));
    int32_t bwd_done[64] = {0};
    int32_t bucket_head = 0;
    for (int32_t p = 0; p < x->n_items; p++) {
      const hs_sched_item_t *it = &x->order[p];
      int32_t key = it->chunk * 2 + it->phase;
      /* receive this item's pieces */
      for (int32_t q = 0; q < tg->n_pieces && env.size > 1; q++) {
        const hs_tg_piece_t *pc = &tg->pieces[q];
        if (pc->dst != cx.exec || pc->dst_chunk != it->chunk || pc->phase != it->phase)
          continue;
        const hs_tg_exec_t *sx = &tg->execs[pc->src];
        int32_t nsub = HS_MIN(sx->tp, x->tp);
        if (!active(o, sx) || cx.tp_rank >= nsub)
          continue;
        cudaStream_t s = it->phase == HS_PHASE_FWD ? cx.s_act : cx.s_grad;
        NC(ncclRecv(cx.rbuf, (size_t)(pc->total_bytes / nsub), ncclUint8,
                    cx.rank_of_dev[sx->devices[cx.tp_rank]],
                    it->phase == HS_PHASE_FWD ? cx.act : cx.grad, s));
        CU(cudaEventRecord(cx.ev_sync, s));
        CU(cudaStreamWaitEvent(cx.s_comp, cx.ev_sync, 0));
      }
      int32_t ie = next_ev(&cx);
      if (ie >= 0)
        CU(cudaEventRecord(cx.ev[ie].a, cx.s_comp));
      const hs_tg_work_t *wk = &x->work[key];
      bool final_bwd = it->phase == HS_PHASE_BWD && it->chunk < 64 && bwd_done[it->chunk] == x->m - 1;
      for (int32_t i = 0; i < wk->n; i++) {
        const hs_tg_entry_t *en = &wk->e[i];
        int32_t ke = (en->kind == HS_TG_KERNEL) ? next_ev(&cx) : -1;
        if (ke >= 0)
          CU(cudaEventRecord(cx.ev[ke].a, cx.s_comp));
        if (en->kind == HS_TG_KERNEL && en->is_gemm && en->reps > 0) {
          for (int32_t kk = 0; kk < en->n_kernels; kk++) {
            /* row-major C[M x N] = A[M x K] B[K x N] is column-major C^T = B^T A^T */
            int64_t M = kk ? en->k : en->m, N = en->n, K = kk ? en->m : en->k;
            int64_t left = en->reps;
            while (left > 0) {
              int64_t batch = HS_MIN(left, (int64_t)(cx.c_elems / (size_t)(M * N)));
              if (batch < 1)
                batch = 1;
              if (batch == 1)
                CB(cublasGemmEx(cx.blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one,
                                cx.B, ct, (int)N, cx.A, ct, (int)K, &zero, cx.C, ct, (int)N,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
              else
                CB(cublasGemmStridedBatchedEx(cx.blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M,
                                              (int)K, &one, cx.B, ct, (int)N, 0, cx.A, ct, (int)K,
                                              0, &zero, cx.C, ct, (int)N, (long long)(M * N),
                                              (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
              left -= batch;
            }
          }
        } else if (en->kind == HS_TG_KERNEL && en->bytes > 0) {
          CU(hs__cuda_stream(cx.dst, cx.src, (size_t)(en->bytes / 8.0), cx.s_comp));
        } else if (en->kind == HS_TG_COLL && x->tp > 1 && cx.tp) {
          size_t count = (size_t)(en->coll_bytes / (double)eb);
          if (en->coll_op == HS_COLL_ALLTOALL) {
            size_t per = count / (size_t)x->tp * eb;
            NC(ncclGroupStart());
            for (int32_t q = 0; q < x->tp; q++) {
              NC(ncclSend((char *)cx.cbuf + per * (size_t)q, per, ncclUint8, q, cx.tp, cx.s_comp));
              NC(ncclRecv((char *)cx.cbuf + count * eb + per * (size_t)q, per, ncclUint8, q, cx.tp,
                          cx.s_comp));
            }
            NC(ncclGroupEnd());
          } else {
            NC(ncclAllReduce(cx.cbuf, cx.cbuf, count, nccl_type(cx.dt), ncclSum, cx.tp, cx.s_comp));
          }
        }
        if (ke >= 0) {
          CU(cudaEventRecord(cx.ev[ke].b, cx.s_comp));
          if (record && cx.tp_rank == 0) {
            timed_t t = {.kind = T_KERNEL, .ev = ke};
            t.ks = (hs_kernel_sample_t){.exec = cx.exec, .chunk = it->chunk, .entry = i,
                                        .phase = it->phase};
            if (add_timed(&cx, &t) != HS_OK)
              HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
          }
        }
        /* gradient buckets whose ops' final backward just completed */
        while (final_bwd && en->kind == HS_TG_KERNEL && en->phase == HS_PHASE_BWD &&
               bucket_head < x->n_buckets && cx.bucket_group &&
               tg->buckets[x->buckets[bucket_head]].op_first >= en->op) {
          HS_CHECK(issue_bucket(&cx, x->buckets[bucket_head], hs_tg_stage(x, it->chunk), err));
          bucket_head++;
        }
      }
      if (ie >= 0) {
        CU(cudaEventRecord(cx.ev[ie].b, cx.s_comp));
        timed_t t = {.kind = T_ITEM, .ev = ie};
        t.is = (hs_item_sample_t){.exec = cx.exec, .chunk = it->chunk, .phase = it->phase};
        t.task = (hs_meas_task_t){.exec = cx.exec, .device = cx.device,
                                  .stage = hs_tg_stage(x, it->chunk), .mb = it->mb,
                                  .chunk = it->chunk, .predicted_s = wk->predicted_compute_s};
        hs_strlcpy(t.task.name, it->phase == HS_PHASE_FWD ? "fwd" : "bwd", sizeof t.task.name);
        if (add_timed(&cx, &t) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      }
      if (it->phase == HS_PHASE_BWD && it->chunk < 64)
        bwd_done[it->chunk]++;
      /* send this item's pieces */
      for (int32_t k = 0; k < x->out_count[key] && env.size > 1; k++) {
        const hs_tg_piece_t *pc = &tg->pieces[tg->out_list[x->out_first[key] + k]];
        const hs_tg_exec_t *dx = &tg->execs[pc->dst];
        int32_t nsub = HS_MIN(dx->tp, x->tp);
        if (!active(o, dx) || cx.tp_rank >= nsub)
          continue;
        cudaStream_t s = it->phase == HS_PHASE_FWD ? cx.s_act : cx.s_grad;
        CU(cudaEventRecord(cx.ev_sync, cx.s_comp));
        CU(cudaStreamWaitEvent(s, cx.ev_sync, 0));
        int32_t se = next_ev(&cx);
        if (se >= 0)
          CU(cudaEventRecord(cx.ev[se].a, s));
        NC(ncclSend(cx.sbuf, (size_t)(pc->total_bytes / nsub), ncclUint8,
                    cx.rank_of_dev[dx->devices[cx.tp_rank]],
                    it->phase == HS_PHASE_FWD ? cx.act : cx.grad, s));
        if (se >= 0) {
          CU(cudaEventRecord(cx.ev[se].b, s));
          timed_t t = {.kind = T_TASK, .ev = se};
          t.task = (hs_meas_task_t){.exec = cx.exec, .device = cx.device, .stage = pc->src_stage,
                                    .mb = it->mb, .chunk = it->chunk, .bytes = pc->total_bytes,
                                    .predicted_s = pc->predicted_s};
          hs_strlcpy(t.task.name, it->phase == HS_PHASE_FWD ? "act" : "grad", sizeof t.task.name);
          if (add_timed(&cx, &t) != HS_OK)
            HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
        }
      }
    }
    /* buckets not yet issued (none when every op's final backward matched
     * above): issuing them keeps every holder's collective sequence equal */
    while (bucket_head < x->n_buckets && cx.bucket_group) {
      HS_CHECK(issue_bucket(&cx, x->buckets[bucket_head], hs_tg_stage(x, 0), err));
      bucket_head++;
    }
    /* optimizer after every bucket and every send */
    CU(cudaEventRecord(cx.ev_sync, cx.s_comm));
    CU(cudaStreamWaitEvent(cx.s_comp, cx.ev_sync, 0));
    CU(cudaEventRecord(cx.ev_sync, cx.s_act));
    CU(cudaStreamWaitEvent(cx.s_comp, cx.ev_sync, 0));
    CU(cudaEventRecord(cx.ev_sync, cx.s_grad));
    CU(cudaStreamWaitEvent(cx.s_comp, cx.ev_sync, 0));
    int32_t oe = next_ev(&cx);
    if (oe >= 0)
      CU(cudaEventRecord(cx.ev[oe].a, cx.s_comp));
    CU(hs__cuda_stream(cx.dst, cx.src, (size_t)(x->optimizer_bytes / 8.0), cx.s_comp));
    if (oe >= 0) {
      CU(cudaEventRecord(cx.ev[oe].b, cx.s_comp));
      timed_t t = {.kind = T_TASK, .ev = oe};
      t.task = (hs_meas_task_t){.exec = cx.exec, .device = cx.device, .stage = hs_tg_stage(x, 0),
                                .mb = -1, .chunk = -1, .predicted_s = x->optimizer_predicted_s,
                                .bytes = x->optimizer_bytes};
      hs_strlcpy(t.task.name, "optimizer", sizeof t.task.name);
      if (add_timed(&cx, &t) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    }
    CU(cudaEventRecord(cx.ev_end, cx.s_comp));
    CU(cudaDeviceSynchronize());
    float ms = 0.0f;
    CU(cudaEventElapsedTime(&ms, cx.ev_start, cx.ev_end));
    double local = ms * 1e-3, slowest = local;
    if (env.mpi)
      MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* read this iteration's events into its records */
    for (size_t k = t_mark; k < cx.n_t; k++) {
      timed_t *t = &cx.t[k];
      float a = 0.0f, d = 0.0f;
      CU(cudaEventElapsedTime(&a, cx.ev_start, cx.ev[t->ev].a));
      CU(cudaEventElapsedTime(&d, cx.ev[t->ev].a, cx.ev[t->ev].b));
      t->ks.s = d * 1e-3;
      t->is.s = d * 1e-3;
      t->task.t0_s = a * 1e-3;
      t->task.t1_s = (a + d) * 1e-3;
    }
    if (!record) {
      cx.n_t = t_mark; /* warm-up: keep nothing */
    } else {
      it_s[iter - o->warmup] = slowest;
    }
  }
  /* results on rank 0: gather every rank's records as bytes (one build, one
   * architecture on every rank) */
  out->n_iterations = o->iterations;
  out->iteration_s = it_s;
  it_s = NULL;
  out->iteration_time_s = hs_median(out->iteration_s, (size_t)o->iterations);
  int32_t med_it = 0;
  for (int32_t i = 0; i < o->iterations; i++)
    if (fabs(out->iteration_s[i] - out->iteration_time_s) <
        fabs(out->iteration_s[med_it] - out->iteration_time_s))
      med_it = i;
  long long mine = (long long)(cx.n_t * sizeof(timed_t));
  long long total = mine;
  if (env.mpi && env.size > 1) {
    counts = hs_calloc((size_t)env.size, sizeof(int));
    displs = hs_calloc((size_t)env.size, sizeof(int));
    if (!counts || !displs)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    if (mine > INT32_MAX)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "cuda backend: rank %d recorded %lld bytes of timings "
                           "(more than MPI_Gatherv moves); use fewer --iterations", env.rank, mine));
    int my = (int)mine;
    MPI_Gather(&my, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    total = 0;
    for (int r = 0; r < env.size && env.rank == 0; r++) {
      displs[r] = (int)total;
      total += counts[r];
      if (total > INT32_MAX)
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "cuda backend: more than 2 GB of timings; use fewer "
                                             "--iterations"));
    }
    gather = hs_calloc(env.rank == 0 ? (size_t)total + 1 : 1, 1);
    if (!gather)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    MPI_Gatherv(cx.t, my, MPI_BYTE, gather, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  } else {
    gather = hs_calloc((size_t)total + 1, 1);
    if (!gather)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    if (total)
      memcpy(gather, cx.t, (size_t)total);
  }
  if (env.rank != 0)
    goto cleanup;
  size_t n_all = (size_t)total / sizeof(timed_t);
  const timed_t *all = (const timed_t *)(void *)gather;
  ks = hs_calloc(n_all + 1, sizeof *ks);
  is = hs_calloc(n_all + 1, sizeof *is);
  out->tasks = hs_calloc(n_all + 1, sizeof *out->tasks);
  if (!ks || !is || !out->tasks)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  size_t n_ks = 0, n_is = 0;
  /* records come per rank in iteration order, per_iter of them per iteration
   * on that rank; the timeline keeps the median iteration's */
  for (int r = 0, base = 0; r < (env.mpi && env.size > 1 ? env.size : 1); r++) {
    size_t nr = (env.mpi && env.size > 1) ? (size_t)counts[r] / sizeof(timed_t) : n_all;
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
  if (hs__measured_aggregate(tg, ks, n_ks, is, n_is, out) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  hs_strlcpy(out->backend, "cuda", sizeof out->backend);
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, env.local_rank) == cudaSuccess)
    snprintf(out->device, sizeof out->device, "%.100s x%d ranks", prop.name, env.size);
  if (o->only_stage >= 0)
    snprintf(out->mode, sizeof out->mode, "stage %d", o->only_stage);
  else
    hs_strlcpy(out->mode, "plan", sizeof out->mode);
cleanup:
  if (st != HS_OK && st != HS_EINVAL && env.mpi)
    die(&env, err);
  if (st == HS_EINVAL && env.mpi && env.size > 1 && env.rank != 0 && is_root)
    *is_root = false; /* every rank fails alike; only rank 0 reports */
  free(ks);
  free(is);
  free(gather);
  free(counts);
  free(displs);
  free(it_s);
  free(cx.t);
  if (cx.ev) {
    for (int32_t i = 0; i < cx.n_ev; i++) {
      if (cx.ev[i].a)
        cudaEventDestroy(cx.ev[i].a);
      if (cx.ev[i].b)
        cudaEventDestroy(cx.ev[i].b);
    }
    free(cx.ev);
  }
  if (cx.ev_start)
    cudaEventDestroy(cx.ev_start);
  if (cx.ev_end)
    cudaEventDestroy(cx.ev_end);
  if (cx.ev_sync)
    cudaEventDestroy(cx.ev_sync);
  cudaFree(cx.A);
  cudaFree(cx.B);
  cudaFree(cx.C);
  cudaFree(cx.src);
  cudaFree(cx.dst);
  cudaFree(cx.cbuf);
  cudaFree(cx.sbuf);
  cudaFree(cx.rbuf);
  if (cx.blas)
    cublasDestroy(cx.blas);
  for (int32_t g = 0; g < cx.n_groups; g++) {
    if (cx.groups[g].comm)
      ncclCommDestroy(cx.groups[g].comm);
    free(cx.groups[g].devs);
  }
  free(cx.groups);
  free(cx.bucket_group);
  if (cx.tp)
    ncclCommDestroy(cx.tp);
  if (cx.act)
    ncclCommDestroy(cx.act);
  if (cx.grad)
    ncclCommDestroy(cx.grad);
  if (cx.world)
    ncclCommDestroy(cx.world);
  if (cx.s_comp)
    cudaStreamDestroy(cx.s_comp);
  if (cx.s_act)
    cudaStreamDestroy(cx.s_act);
  if (cx.s_grad)
    cudaStreamDestroy(cx.s_grad);
  if (cx.s_comm)
    cudaStreamDestroy(cx.s_comm);
  free(cx.rank_of_dev);
  if (st != HS_OK)
    hs_measured_destroy(out);
  return st;
}

#endif /* HS_HAVE_CUDA */
