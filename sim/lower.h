/*
 * lower.h - internal to sim/: a validated plan lowered to executors.
 *
 * An executor is one TP group serving one pipeline rank of one pipeline
 * replica: its devices run in lockstep on a compute stream (compute and
 * blocking TP collectives), a p2p stream (sends to neighbour stages) and a
 * comm stream (gradient buckets). Its work per (chunk, phase) is a template
 * of segments - "compute for d ns, then a blocking collective of b bytes" -
 * identical for every microbatch, so lowering is O(ops + executors) and the
 * timeline is generated as the engine runs, never materialised as a task
 * array: memory stays O(executors x microbatches) even at 16k GPUs.
 *
 * The replay harness walks the same executors, orders and templates, so the
 * simulator and the real run execute one task list.
 */
#ifndef HS_LOWER_H
#define HS_LOWER_H

#include "hs_sim.h"

typedef struct hs_seg {
  hs_time_t compute_ns;     /* compute before the collective */
  double compute_flops;     /* FLOPs of that compute (for replay and traces) */
  double coll_bytes;        /* blocking TP collective after it; 0 = none */
  hs_coll_op_t coll_op;
  int32_t op_lo, op_hi;     /* ops covered [lo, hi] (for buckets and names) */
  int32_t grad_lo;          /* lowest op whose backward (weight gradient) ends in this
                               segment; INT32_MAX: none (forward, recomputed forward) */
  hs_time_t ov_ns;          /* tp_comm_overlap: the last ov_ns of the compute (the GEMM
                               next to the collective) run alongside the collective;
                               0 = the collective follows the compute */
  int32_t group;            /* -1: the collective runs over the executor's TP group;
                               >= 0: over group `group` (hs_lowered_t.groups) */
  /* A side collective over group side_group, started with this segment's
   * compute and awaited before the segment's own collective: ZeRO-3's
   * prefetched parameter all-gather, ring attention's KV exchange.
   * side_bytes 0 = none. */
  double side_bytes;
  hs_coll_op_t side_op;
  int32_t side_group;
} hs_seg_t;

typedef struct hs_tmpl {
  hs_seg_t *segs;
  int32_t n;
  hs_time_t compute_ns;     /* sum over segments */
  double coll_bytes;        /* sum over segments */
  bool shared;              /* segs belong to an equal template of an earlier executor
                               (lower_share.c): not freed with this one */
} hs_tmpl_t;

/* A p2p transfer between two executors of adjacent stages, for one microbatch. */
typedef struct hs_piece {
  int32_t src, dst;         /* executors */
  int32_t dst_chunk;        /* chunk index at the receiver */
  int32_t src_stage;        /* stage index in the pipeline at the sender */
  int32_t phase;            /* HS_PHASE_FWD: activation k -> k+1; BWD: gradient k+1 -> k */
  double bytes;             /* per sub-flow */
  double total_bytes;
  hs_time_t latency_ns;
  hs_flow_hop_t *hops;
  int32_t n_hops;
} hs_piece_t;

typedef struct hs_bucket {
  int32_t op_first, op_last;  /* ops [first, last) */
  double bytes;               /* gradient bytes per TP rank */
  hs_coll_op_t op;            /* all-reduce; reduce-scatter under ZeRO-3 with its gathers lowered */
  int32_t *holders;           /* executors */
  int32_t n_holders;
  int32_t tp;
  int32_t *devices;           /* tp x n_holders: devices of TP rank j at [j*n_holders...] */
} hs_bucket_t;

typedef struct hs_exec {
  int32_t pipeline, rank, replica;
  int32_t v;                  /* chunks */
  const int32_t *devices;     /* TP group (plan-owned) */
  int32_t tp;
  const hs_gpu_t *gpu;
  double samples;             /* per microbatch */
  int32_t m;                  /* microbatches */
  hs_tmpl_t *tmpl;            /* [chunk*2 + phase] */
  hs_tmpl_t *tmpl_final;      /* [chunk]: the last microbatch's backward, the same work
                                 cut where one of the executor's gradient buckets
                                 becomes ready, so buckets start during it */
  hs_sched_item_t *order;     /* 2*m*v items; read-only after the lowering */
  int32_t n_items;
  bool order_shared;          /* order belongs to an earlier executor with the same one
                                 (lower_share.c): not freed with this one */
  /* pieces sent after each (chunk, phase): indexes into pieces[] */
  int32_t *out_first;         /* [chunk*2 + phase] -> first index into out_list */
  int32_t *out_count;
  int32_t *in_count;          /* [chunk*2 + phase] pieces that must arrive before the item */
  int32_t *buckets;           /* bucket ids in issue order (descending op) */
  int32_t n_buckets;
  double params_per_device;
  double optimizer_ns_d;      /* optimizer step seconds (with fp8_weight_cast_s) */
  double fp8_weight_cast_s;   /* fp8 weight cast kernels, once per step (in optimizer_ns_d) */
  int32_t group;              /* SPMD group of its stage, -1 none */
  int32_t cp_group;           /* context-parallel group (ring attention), -1 none */
  int32_t ep_group;           /* expert-parallel group (MoE all-to-all), -1 none */
  int32_t *zgroup;            /* [chunk]: ZeRO-3 gather group (its DP peers), -1 none */
} hs_exec_t;

/* A group of executors that run collectives together: an SPMD stage (HAP
 * plans: the single-device replicas of one stage running sharded ops), a
 * context-parallel group, an expert-parallel group or a ZeRO-3 gather
 * group (the DP peers of a stage). Members run the same templates in the
 * same order; a collective starts when the last member arrives, as tp
 * collectives in parallel, one per TP rank over that rank's devices. */
typedef struct hs_group {
  int32_t *execs;             /* members */
  int32_t *devices;           /* tp x n: TP rank j's devices at [j*n, (j+1)*n) */
  double *shares;             /* SPMD: each member's share of the microbatch (sum 1); else NULL */
  int32_t n;
  int32_t tp;                 /* 1 for SPMD groups */
} hs_group_t;

typedef struct hs_lowered {
  hs_exec_t *execs;
  int32_t n_execs;
  hs_piece_t *pieces;
  int32_t n_pieces;
  int32_t *out_list;          /* piece ids grouped per (exec, chunk, phase) */
  int32_t n_out_list;
  hs_bucket_t *buckets;
  int32_t n_buckets;
  hs_group_t *groups;
  int32_t n_groups;
  int32_t **stage_exec;       /* [pipeline][stage * max_replicas + replica]: hs__exec_of */
  int32_t *max_replicas;      /* per pipeline */
} hs_lowered_t;

/* The executor running (pipeline, stage, replica); stage counts every chunk. */
static inline int32_t hs__exec_of(const hs_lowered_t *l, int32_t pipeline, int32_t stage,
                                  int32_t replica)
{
  return l->stage_exec[pipeline][stage * l->max_replicas[pipeline] + replica];
}

hs_status_t hs__lower(const hs_model_t *m, const hs_cluster_t *c, const hs_topology_t *topo,
                      const hs_plan_t *plan, hs_lowered_t *out, hs_error_t *err);
void hs__lowered_destroy(hs_lowered_t *l);
/* sim/grad_accum.c: appends the per-microbatch gradient accumulation pass
 * of mode `a` over `params` parameters (the stage chunk's, per device) to
 * backward template t as a compute-only segment covering ops [op_lo,
 * op_hi]; nothing for FUSED. HS_ENOMEM leaves t as it was. O(segments). */
hs_status_t hs__grad_accum_append(hs_tmpl_t *t, const hs_gpu_t *gpu, hs_grad_accum_t a,
                                  hs_dtype_t precision, int32_t microbatches, double params,
                                  int32_t op_lo, int32_t op_hi);

#endif
