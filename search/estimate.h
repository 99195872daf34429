/*
 * estimate.h - a fast analytical iteration-time and memory estimator for
 * plans, shared by the planners' inner loops (the final plan is always run
 * through hs_simulate by the driver).
 *
 * Model (docs/planners.md, "The estimator"):
 *  - stage compute per microbatch: the simulator's templates summed, i.e.
 *    sum of hs_compute_op_s over the stage's ops for the replica's samples
 *    (share x microbatch size) and TP degree, forward and backward (plus the
 *    recomputed forward under recomputation), plus the Megatron TP
 *    all-reduces (hs_coll_estimate_s over the replica's TP group); a stage
 *    takes the slowest of its replicas;
 *  - pipeline: the schedule itself, run over those stage costs (every
 *    rank's items in sim/sched.c's order; an item starts when the rank is
 *    free and its input has arrived; max-plus over the items' graph, so
 *    warm-up bubbles, hetero-1f1b's depths, explicit orders and
 *    interleaving are the schedule's own). A send takes c_k: latency plus
 *    its bytes over the path's bottleneck, sharing a NIC with the node's
 *    replicas' and pipelines' same send and an inter-site link with every
 *    pipeline's send over that cut; off the node it queues behind the
 *    rank's earlier sends (a forward's activations and a backward's
 *    gradients take turns on its NIC); blocking schedules hold the rank
 *    until it arrives. The links' throughput bounds the pipeline too: m
 *    times the busiest NIC's sends per microbatch (both directions of the
 *    pipeline) and the busiest cut with every sharer of its site link;
 *  - gradient sync: per stage an all-reduce of its gradient shard over the
 *    first devices of every TP group holding its first op
 *    (hs_coll_estimate_s), times tp when the group leaves a node (the TP
 *    ranks' all-reduces share the NIC), in buckets of bucket_bytes that
 *    start as the last microbatch's backward produces them: with f =
 *    min(1, bucket_bytes / gradient bytes), exposed = max(f bwd + AR,
 *    bwd + f AR) - bwd (the first bucket after its share of the backward,
 *    the last bucket's all-reduce always exposed), from the stage's own
 *    last backward in the run above;
 *  - tied embedding split from its LM head: after stage 0's sync, a
 *    stream per (embedding, head) pair and TP rank (sim/lower_grad.c),
 *    every stream sharing the inter-site link, or the busiest NIC rail,
 *    that they cross; then both ends' optimizer steps (ZeRO's share);
 *  - context parallelism: per attention op the ring's K/V all-gather over
 *    the C replicas' first devices, minus the (C-1)/C of the attention it
 *    overlaps (twice the bytes in backward); expert parallelism: two
 *    all-to-alls per expert op and pass over the same replica of E
 *    consecutive pipelines (the TP rank's 1/t of the tokens), 1/E of the
 *    expert parameters (sim/lower.c);
 *  - optimizer: memory-bound Adam over the device's parameters (32 B/param);
 *  - memory: hs_memory_per_device against each GPU's capacity (the
 *    planners' cluster view already has the memory headroom taken off:
 *    search/registry.c);
 *  - precision: the plan's (hs_estimate_plan switches to it).
 *
 * Invariants: deterministic; no global state; an estimator is used by one
 * thread at a time (it caches per-op prefix sums keyed by GPU type, TP degree,
 * samples and recomputation).
 */
#ifndef HS_ESTIMATE_H
#define HS_ESTIMATE_H

#include "hs_sim.h"

typedef struct hs_estimator hs_estimator_t; /* opaque */

/* Builds the estimator (topology included). Caller frees with
 * hs_estimator_free (NULL ok). m and c must outlive it. O(devices + ops). */
hs_status_t hs_estimator_new(const hs_model_t *m, const hs_cluster_t *c, hs_dtype_t precision,
                             hs_estimator_t **out, hs_error_t *err);
void hs_estimator_free(hs_estimator_t *e);
const hs_topology_t *hs_estimator_topology(const hs_estimator_t *e);
/* The kernel set and sequence parallelism the stage costs assume (default:
 * hs_practice_init's); hs_estimate_plan sets the plan's. A change empties
 * the cache. O(1). */
/* The search's deadline (hs_plan_opts_t.deadline_s; 0 = none). Once it has
 * passed, collective estimates are skipped (the largest clusters spend
 * seconds in one) and hs_estimate_plan answers an infinite iteration time,
 * which no pool keeps; hs_estimator_out_of_time says so. O(1). */
void hs_estimator_set_deadline(hs_estimator_t *e, double deadline_s);
bool hs_estimator_out_of_time(const hs_estimator_t *e);
void hs_estimator_set_practice(hs_estimator_t *e, const hs_practice_t *p);
const hs_practice_t *hs_estimator_practice(const hs_estimator_t *e);

/* The GEMM precision of stage costs (hs_estimator_new's; hs_estimate_plan
 * sets the plan's, so a plan is always estimated at the precision it is
 * simulated at). A change empties the cache. O(1). */
void hs_estimator_set_precision(hs_estimator_t *e, hs_dtype_t precision);
hs_dtype_t hs_estimator_precision(const hs_estimator_t *e);

/* Per-microbatch cost of ops [op_first, op_last) on one TP group. */
typedef struct hs_stage_cost {
  double fwd_s;              /* compute + blocking TP all-reduces */
  double bwd_s;              /* idem, recomputed forward included */
  double params_per_device;  /* parameters held by each device of the group */
  double state_bytes;        /* weights + grads + Adam state per device (16 B/param) */
  double act_bytes;          /* activations saved per microbatch in flight, per device */
  double transient_bytes;    /* full recomputation: one block's activations */
  double optimizer_s;        /* Adam step over params_per_device */
  /* for the context- and expert-parallel exchanges (hs_estimate_plan) */
  double att_fwd_s, att_bwd_s; /* attention cores' compute, forward / backward */
  double kv_bytes;           /* K and V of one sample over the attention ops (one TP rank) */
  int32_t n_att;             /* attention ops */
  double a2a_bytes;          /* expert ops' routed tokens of one sample, one way */
  int32_t n_expert;          /* MoE expert ops */
} hs_stage_cost_t;

/* Cost of ops [op_first, op_last) for `samples` samples per microbatch on the
 * TP group devices[0..tp) (one GPU type; only devices[0]'s GPU and node are
 * read for compute, the group for the TP all-reduce). O(1) amortised through
 * a prefix-sum cache keyed by (GPU type, node class, tp, samples,
 * recompute); O(ops) on a miss. */
hs_status_t hs_estimate_stage(hs_estimator_t *e, int32_t op_first, int32_t op_last,
                              const int32_t *devices, int32_t tp, double samples,
                              hs_recompute_t recompute, hs_stage_cost_t *out);

/* Seconds to move `bytes` from the TP group at `src` to the one at `dst`
 * as nsub = min(tp_src, tp_dst) parallel sends (the simulator's scatter/
 * gather): latency + the largest of bytes / nsub over the path's bottleneck
 * (each send's own GPU ports and, on railed nodes, its own NIC rail),
 * max(bytes, node_bytes) over the path's node-level shared links (NIC,
 * fabric) and max(bytes, site_bytes) over its inter-site links,
 * node_bytes being everything the sending node moves through its NIC at
 * the same time and site_bytes everything crossing that inter-site link in
 * that direction at the same time (every node of the site). O(path). */
double hs_estimate_p2p_shared_s(hs_estimator_t *e, int32_t src, int32_t dst, double bytes,
                                double node_bytes, double site_bytes, int32_t nsub);
/* hs_estimate_p2p_shared_s with node_bytes = site_bytes = bytes. */
double hs_estimate_p2p_s(hs_estimator_t *e, int32_t src, int32_t dst, double bytes, int32_t nsub);

/* Seconds of an all-reduce of `bytes` per rank over devices[0..n)
 * (hs_coll_estimate_s with the default algorithm) into *out_s; HS_ENOMEM
 * when memory ran out. O(n). */
hs_status_t hs_estimate_allreduce(hs_estimator_t *e, const int32_t *devices, int32_t n, double bytes,
                                  double *out_s);

/* An all-reduce's time over a group as a function of bytes per rank, for
 * callers that cost many sizes: one line a_s + b_s_per_byte x bytes per
 * algorithm the simulator may pick for the group (the default; plus NCCL's
 * tree where the default is node_ring, and NVLS-Tree when that group's GPU
 * ports are all NVLS; or nvls where it is the ring of one node of NVLS
 * ports, hs_coll_algo_choose_paths), so that hs_estimate_allreduce_line_s
 * returns the time of the algorithm the simulator runs at that size (by
 * hs_coll_tree_preferred, the simulator's rule), not one line probed at a
 * size where the other algorithm wins. */
typedef struct hs_allreduce_line {
  double a_s[3], b_s_per_byte[3]; /* [0] the default, [1] node_tree or nvls, [2] nvls_tree */
  int32_t n_algos; /* 0: no traffic (n <= 1); 1, 2 or 3 lines */
  int32_t n;       /* ranks, for the tuner rule (hs_coll_tree_preferred) */
  bool nvls;       /* every GPU port NVLS: the fastest line wins */
  double nvls_port_GBps; /* > 0: [1] is nvls, picked by hs_coll_nvls_preferred */
} hs_allreduce_line_t;
/* O(n) path queries; HS_ENOMEM when memory ran out. */
hs_status_t hs_estimate_allreduce_line(hs_estimator_t *e, const int32_t *devices, int32_t n,
                                       hs_allreduce_line_t *out);
/* Seconds for `bytes` per rank (0 for bytes <= 0). O(1). */
double hs_estimate_allreduce_line_s(const hs_allreduce_line_t *l, double bytes);

typedef struct hs_estimate {
  double iteration_s;        /* predicted iteration time */
  double pipeline_s;         /* slowest pipeline's fill + steady + drain */
  double dp_exposed_s;       /* gradient sync not hidden behind backward */
  double optimizer_s;
  double max_memory_bytes;   /* max over devices (only when memory was computed) */
  bool oom;                  /* some device over its capacity */
  bool bounded;              /* iteration_s is only a bound below, at least the estimator's
                                cutoff (hs_estimator_set_cutoff); memory not computed */
  int32_t oom_device;        /* first device over capacity, -1 when none */
} hs_estimate_t;

/* A plan whose iteration the estimator can bound from below at cutoff_s or
 * more (the busiest rank's compute) is answered with that bound, marked
 * bounded, without running its schedule or the memory pass: callers that
 * keep only plans faster than cutoff_s (a full candidate pool's last
 * estimate) set it before estimating. cutoff_s <= 0 or INFINITY: none
 * (the default). O(1). */
void hs_estimator_set_cutoff(hs_estimator_t *e, double cutoff_s);

/* Estimates a validated plan. with_memory: also run hs_memory_per_device
 * (O(devices + pipelines x microbatches)). O(stages x replicas + ops) with a
 * warm cache plus one collective estimate per stage. */
hs_status_t hs_estimate_plan(hs_estimator_t *e, const hs_plan_t *p, bool with_memory,
                             hs_estimate_t *out, hs_error_t *err);
/* Only the memory pass of hs_estimate_plan: out's max_memory_bytes, oom and
 * oom_device (the rest untouched). O(devices + pipelines x microbatches). */
hs_status_t hs_estimate_memory(hs_estimator_t *e, const hs_plan_t *p, hs_estimate_t *out,
                               hs_error_t *err);

#endif /* HS_ESTIMATE_H */
