/*
 * lower_int.h - internal to the lowering files of sim/ (lower.c,
 * lower_place.c, lower_grad.c): the lowering context the passes share and
 * the passes' entry points.
 *
 * hs__lower (lower.c) runs the passes in a fixed order over one
 * lower_ctx_t; each pass reads what the passes before it wrote into the
 * context and into the hs_lowered_t under construction, and states its
 * contract (reads / guarantees) at its definition. The order is part of
 * the output: group ids and bucket ids are assigned in pass order (SPMD
 * groups, then context-, expert-parallel and ZeRO-3 gather groups; data-
 * parallel buckets in descending op order, then tied-weight pairs), and
 * the engine issues collectives in that order.
 *
 * Invariants: the context owns spmd, holders and members (freed by
 * lower_ctx_free in lower.c); everything else a pass allocates hangs off
 * ctx->out and is freed by hs__lowered_destroy. A pass that fails returns
 * its status and leaves ctx->out destroyable. No pass touches globals.
 */
#ifndef HS_LOWER_INT_H
#define HS_LOWER_INT_H

#include "lower.h"

#define OPT_BYTES_PER_PARAM 32.0 /* Adam step: read w, g, m, v (fp32) and write w, m, v, w16 */

/* The executor's groups for one template: ring attention over its
 * context-parallel group, MoE all-to-alls over its expert-parallel group,
 * ZeRO-3 parameter gathers over its DP peers. -1 / 0 = none. */
typedef struct gctx {
  int32_t cp_group, cp;
  int32_t ep_group, ep;
  int32_t zgroup;
  double weight_bytes;     /* bytes per gathered parameter */
  bool bwd_gathers;        /* ZeRO-3: gathered again for backward (not SHARD_GRAD_OP) */
  double mb_samples;       /* the CP group's samples per microbatch (the executor's x cp) */
} gctx_t;

/* HAP's per-op SPMD exchanges (plan.sharding), resolved for lowering: the
 * collective converting op k's input before it runs, the one exchanging its
 * output after it (partial sums: all-reduce or reduce-scatter), and whether
 * its parameters are split over the group (feature/head/expert/vocab rules)
 * rather than replicated (batch rules). */
typedef struct spmd_op {
  hs_coll_op_t before, after;
  bool col_split;          /* column-split GEMM: input gradient all-reduced in backward */
  bool sharded_params;
} spmd_op_t;

/* Stage-wide context of a template: NULL spmd or group < 0 = none. */
typedef struct spmd_ctx {
  const spmd_op_t *ops;
  int32_t group;
  int32_t n;               /* group members */
  double mb_samples;       /* the whole microbatch: SPMD tensors are split, not the batch */
} spmd_ctx_t;

typedef struct holder_list {
  int32_t *ids; /* executors holding the op, ascending */
  int32_t n, cap;
  bool tied_copy; /* set by mark_tied_copies once the lists are whole */
} holder_list_t;

/* State shared by the lowering passes (one per hs__lower call). */
typedef struct lower_ctx {
  const hs_model_t *m;
  const hs_cluster_t *c;
  const hs_topology_t *topo;
  const hs_plan_t *plan;
  hs_lowered_t *out;          /* the result under construction */
  int32_t v;                  /* chunks per rank (interleaving), >= 1 */
  int32_t CP, EP;             /* context- and expert-parallel degrees, >= 1 */
  /* per-block parameter gathers lowered into the templates (ZeRO-3, and
   * ZeRO-2 run as FSDP SHARD_GRAD_OP); cleared by the ZeRO group pass when
   * the holders do not line up, then the gathers stay in the buckets */
  bool zero3;
  double grad_bytes;          /* bytes per gradient element the DP collectives move */
  spmd_op_t *spmd;            /* [op] SPMD exchanges of HAP plans; NULL without plan.sharding */
  holder_list_t *holders;     /* [op] executors holding the op (holders pass) */
  int32_t *members;           /* scratch of n_execs + 1 executor ids (group pass) */
  size_t buckets_cap;         /* capacity of out->buckets */
} lower_ctx_t;

/* ---- lower_place.c: placement, SPMD segments, pipeline paths ---- */
hs_status_t hs__lower_spmd_ops(lower_ctx_t *cx);
hs_status_t hs__lower_place_executors(lower_ctx_t *cx);
hs_status_t hs__lower_pipeline_pieces(lower_ctx_t *cx);
hs_status_t hs__lower_group_pieces(lower_ctx_t *cx);

/* ---- lower_grad.c: holders, groups, gradient buckets, ZeRO, tied weights ---- */
hs_status_t hs__lower_holders(lower_ctx_t *cx);
hs_status_t hs__lower_cp_ep_groups(lower_ctx_t *cx);
hs_status_t hs__lower_zero_groups(lower_ctx_t *cx);
hs_status_t hs__lower_grad_buckets(lower_ctx_t *cx);
hs_status_t hs__lower_tied_sync(lower_ctx_t *cx);
hs_status_t hs__lower_bucket_lists(lower_ctx_t *cx);
void hs__lower_optimizer(lower_ctx_t *cx);
hs_status_t hs__lower_share(lower_ctx_t *cx);
double hs__lower_chunk_params(const lower_ctx_t *cx, const hs_plan_stage_t *stg,
                              const hs_exec_t *ex);

#endif
