/*
 * hs_taskgraph.h - the lowered plan as a public task graph, for executors
 * other than the simulator (the replay harness in validate/).
 *
 * One lowering, two executors: hs_taskgraph_new runs the simulator's own
 * lowering (sim/lower.c: executors, schedule orders, p2p pieces, gradient
 * buckets) and expands each (executor, chunk, phase) template into the list
 * of kernels and blocking TP collectives it stands for, in execution order.
 * The expansion is checked against the template it comes from (same
 * collective bytes, same predicted compute time to the rounding of each
 * segment), so the replay runs exactly what the simulator timed.
 *
 * Task identities (shared with the simulator's Chrome trace and with
 * measured.json): compute items are ("fwd"|"bwd", exec, mb, chunk), sends are
 * ("act"|"grad", piece, mb), gradient all-reduces ("grad-allreduce", bucket),
 * and "optimizer" per executor. A stage index is chunk * ranks + rank.
 *
 * Ownership: hs_taskgraph_new allocates; hs_taskgraph_free (NULL ok) frees
 * everything, including the arrays the accessors point into. The model,
 * cluster and plan must outlive nothing: the graph copies what it needs.
 */
#ifndef HS_TASKGRAPH_H
#define HS_TASKGRAPH_H

#include "hs_sim.h"

typedef enum { HS_TG_KERNEL = 0, HS_TG_COLL = 1 } hs_tg_entry_kind_t;

/* One entry of a work list: a kernel of one op, or a blocking collective over
 * the executor's TP group. */
typedef struct hs_tg_entry {
  hs_tg_entry_kind_t kind;
  int32_t op;             /* model op (kernel), -1 for collectives */
  hs_op_kind_t op_kind;
  int16_t phase;          /* HS_PHASE_FWD (also recomputed forward) or HS_PHASE_BWD */
  bool is_gemm;
  bool recompute;         /* a recomputed forward inside a backward item */
  /* GEMM kernels: C[m x n] = A[m x k] B[k x n], `reps` products per kernel,
   * `n_kernels` kernels (backward: input grad and weight grad). Shapes are on
   * this device: TP splits already applied, m multiplied by the samples. */
  int64_t m, n, k, reps;
  int32_t n_kernels;
  double flops;           /* this device, all kernels of the entry */
  double bytes;           /* memory traffic, this device */
  double predicted_s;     /* hs_compute_op_s on the executor's GPU */
  /* Collectives. */
  hs_coll_op_t coll_op;
  double coll_bytes;
  double coll_predicted_s; /* uncontended estimate over the TP group (hs_coll_estimate_s) */
} hs_tg_entry_t;

typedef struct hs_tg_work {
  hs_tg_entry_t *e;       /* owned by the graph */
  int32_t n;
  double predicted_compute_s; /* sum of kernel predictions */
  double coll_bytes;
} hs_tg_work_t;

typedef struct hs_tg_exec {
  int32_t pipeline, rank, replica;
  int32_t v;              /* chunks */
  int32_t ranks;          /* pipeline ranks of its pipeline */
  int32_t tp;
  int32_t *devices;       /* TP group, owned by the graph */
  const hs_gpu_t *gpu;    /* points into the graph's copy of the cluster's catalog */
  double samples;         /* per microbatch */
  int32_t m;              /* microbatches */
  hs_sched_item_t *order; /* n_items in execution order */
  int32_t n_items;
  hs_tg_work_t *work;     /* [chunk * 2 + phase] */
  int32_t *out_first;     /* [chunk * 2 + phase] into the graph's out_list */
  int32_t *out_count;
  int32_t *in_count;      /* pieces to receive before (chunk, phase) of one microbatch */
  int32_t *buckets;       /* bucket ids in issue order */
  int32_t n_buckets;
  double optimizer_bytes; /* memory traffic of the optimizer step */
  double optimizer_predicted_s;
} hs_tg_exec_t;

typedef struct hs_tg_piece {
  int32_t src, dst;       /* executors */
  int32_t dst_chunk;
  int32_t src_stage;
  int32_t phase;          /* HS_PHASE_FWD: activation; HS_PHASE_BWD: gradient */
  double total_bytes;     /* per microbatch */
  double predicted_s;     /* uncontended p2p of total_bytes between the executors' first devices */
} hs_tg_piece_t;

typedef struct hs_tg_bucket {
  int32_t op_first, op_last;
  double bytes;           /* gradient bytes per TP rank */
  int32_t *holders;       /* executors, owned */
  int32_t n_holders;
  /* TP rank j < tp of every holder all-reduces with rank j of the others:
   * the holders' TP degree, or 1 for a tied-weight pair whose two holders
   * differ in TP degree (their first devices exchange the whole gradient);
   * higher ranks sit the bucket out. */
  int32_t tp;
  double predicted_s;     /* uncontended all-reduce of `bytes` over TP rank 0 of every holder */
} hs_tg_bucket_t;

typedef struct hs_taskgraph {
  hs_tg_exec_t *execs;
  int32_t n_execs;
  hs_tg_piece_t *pieces;
  int32_t n_pieces;
  int32_t *out_list;
  hs_tg_bucket_t *buckets;
  int32_t n_buckets;
  hs_gpu_catalog_t gpus;  /* copy of the cluster's catalog (profiles applied) */
  hs_dtype_t precision;
  bool async_send;
  int32_t n_stages_total; /* sum over pipelines of stages */
} hs_taskgraph_t;

/* Validates the plan, lowers it as hs_simulate does and expands the work
 * lists. O(ops x executors + pieces). *out is allocated here. */
hs_status_t hs_taskgraph_new(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                             hs_taskgraph_t **out, hs_error_t *err);
void hs_taskgraph_free(hs_taskgraph_t *tg);
/* Stage index inside its pipeline of an executor's chunk. */
static inline int32_t hs_tg_stage(const hs_tg_exec_t *x, int32_t chunk)
{
  return chunk * x->ranks + x->rank;
}

#endif /* HS_TASKGRAPH_H */
