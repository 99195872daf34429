/*
 * hs_sim.h - the simulator's public interface: the plan (the contract between
 * planners, the simulator and the replay harness), pipeline schedules, the
 * compute cost model, and simulate() with its report and trace.
 *
 * Plan model. A plan is a list of pipelines (DP groups in AutoHet's sense);
 * each pipeline has its own microbatch size and count and an ordered list of
 * stages; each stage owns a contiguous op range [op_first, op_last) and one or
 * more replicas (DP inside the stage); each replica is a TP group of devices of
 * one GPU type and takes a share of every microbatch of the stage. Megatron's
 * DP = several identical pipelines; Whale/HAPT stage-level DP = replicas;
 * AutoHet asymmetric PP = pipelines with different stage cuts. Gradients are
 * synchronised per op across every TP group that holds the op (layer-wise sync
 * across asymmetric pipelines), bucketed and overlapped with backward.
 *
 * Interleaved 1F1B with v chunks: a pipeline of p·v stages where stage k runs
 * on the devices of stage k mod p.
 *
 * Units: time in seconds in reports (double) and nanoseconds inside (hs_time_t).
 */
#ifndef HS_SIM_H
#define HS_SIM_H

#include "hs_clusters.h"
#include "hs_engine.h"
#include "hs_models.h"
#include "hs_net.h"

/* ---- plan ---------------------------------------------------------------- */

typedef enum { HS_RECOMPUTE_NONE, HS_RECOMPUTE_SELECTIVE, HS_RECOMPUTE_FULL } hs_recompute_t;
const char *hs_recompute_name(hs_recompute_t r);
hs_status_t hs_recompute_parse(const char *s, hs_recompute_t *out);

typedef struct hs_plan_replica {
  int32_t *devices;     /* TP group, owned */
  int32_t n_devices;
  double share;         /* fraction of each microbatch of the stage; replicas sum to 1 */
} hs_plan_replica_t;

typedef struct hs_plan_stage {
  int32_t op_first, op_last; /* [first, last) into model->ops */
  hs_recompute_t recompute;
  hs_plan_replica_t *replicas; /* owned */
  int32_t n_replicas;
  int32_t warmup;            /* hetero-1f1b: forwards before the first backward; -1 = default */
  char *order;               /* hetero-1f1b: explicit order, 2 * microbatches of 'F'/'B' (the
                                k-th F is microbatch k's forward, the k-th B its backward);
                                owned; NULL = the warm-up rule. Overrides warmup. */
} hs_plan_stage_t;

typedef struct hs_plan_pipeline {
  int32_t microbatch_size;   /* samples per microbatch */
  int32_t n_microbatches;
  hs_plan_stage_t *stages;   /* owned */
  int32_t n_stages;
} hs_plan_pipeline_t;

/* Per-op SPMD sharding (HAP). Optional; absent = Megatron-style TP. */
typedef struct hs_plan_shard {
  int32_t op;
  uint32_t dim;              /* one HS_SHARD_* bit */
  hs_coll_op_t collective;   /* converts the op's input layout; HS_COLL__COUNT = none */
} hs_plan_shard_t;

#define HS_SCHED_NAME_MAX 32

/* ---- training practice (sim/practice.c, docs/simulator.md "Modern training
 * practice"): the kernel set and the parallelism options a framework uses,
 * carried by the plan. hs_practice_init gives today's default: current
 * kernels (HS_KERNELS_DEFAULT), no other option; with kernels megatron-2021
 * every figure is what it was before these options existed. -------------- */

typedef enum { HS_ATTENTION_UNFUSED = 0, HS_ATTENTION_FLASH = 1 } hs_attention_t;
const char *hs_attention_name(hs_attention_t a);
hs_status_t hs_attention_parse(const char *s, hs_attention_t *out);

/* Which kernels are fused. Unfused attention materialises the a·s² scores,
 * softmax and dropout (the model's own accounting); flash keeps Q, K, V and
 * the row log-sum-exp and recomputes the scores in backward. */
typedef struct hs_kernels {
  hs_attention_t attention;
  bool fused_act;            /* bias-GELU / SwiGLU in one kernel */
  bool fused_norm;           /* layer norm / RMSNorm in one kernel */
  bool fused_cross_entropy;  /* logits not kept as an fp32 softmax */
} hs_kernels_t;

/* Named presets per framework era ("megatron-2021", "megatron-core-2024",
 * "unfused"); NULL-terminated list for help texts. HS_KERNELS_DEFAULT is
 * the set hs_practice_init gives (current practice); tables and runs of
 * another era name theirs (validate/published.c pins megatron-2021 for
 * tables that name none). */
#define HS_KERNELS_DEFAULT "megatron-core-2024"
extern const char *const hs_kernel_presets[];
hs_status_t hs_kernels_preset(const char *name, hs_kernels_t *out);
/* The preset names joined by ", " into buf (truncated to n bytes); buf. */
const char *hs_kernel_presets_list(char *buf, size_t n);
/* The NULL-terminated names joined by ", " into buf (truncated to n bytes); buf. */
const char *hs_names_join(const char *const *names, char *buf, size_t n);
/* The preset name whose kernel set equals k, or NULL. */
const char *hs_kernels_preset_name(const hs_kernels_t *k);

/* How each microbatch's weight gradients reach the buffer the optimizer
 * and the gradient sync read (sim/grad_accum.c; docs/plan.md "grad_accum").
 * Every mode but FUSED adds a memory-bound pass over the stage's
 * parameters after each microbatch's backward, on the compute stream. */
typedef enum {
  HS_GRAD_ACCUM_FUSED = 0,    /* weight-gradient GEMMs accumulate in place (Megatron
                                 gradient_accumulation_fusion, Megatron-Core): no pass */
  HS_GRAD_ACCUM_ADD,          /* main_grad.add_(grad), main grad in the gradient dtype, every
                                 microbatch (Megatron-LM local DDP, --fp16 without
                                 --accumulate-allreduce-grads-in-fp32, before the fusion) */
  HS_GRAD_ACCUM_ADD_FP32,     /* the same into an fp32 main grad (Megatron-LM
                                 --accumulate-allreduce-grads-in-fp32 or --bf16, unfused);
                                 that buffer is all-reduced too: implies grad_reduce_fp32 */
  HS_GRAD_ACCUM_CAST_ADD_FP32, /* hp.add_(lp.grad.to(fp32)), every microbatch (DeepSpeed
                                 BF16_Optimizer.update_hp_grads) */
  HS_GRAD_ACCUM_AUTOGRAD,     /* PyTorch AccumulateGrad under DDP no_sync: grad += new in the
                                 gradient dtype for every microbatch but the first */
  HS_GRAD_ACCUM__COUNT
} hs_grad_accum_t;
/* "fused", "add", "add_fp32", "cast_add_fp32", "autograd"; parse returns
 * HS_EINVAL on anything else (s may be NULL). */
const char *hs_grad_accum_name(hs_grad_accum_t a);
hs_status_t hs_grad_accum_parse(const char *s, hs_grad_accum_t *out);
/* HBM bytes per parameter that one microbatch's accumulation pass moves,
 * averaged over the iteration's `microbatches` (>= 1) microbatches, for
 * gradients of the precision's gradient dtype (hs_precision_grad_bytes).
 * 0 for FUSED (and AUTOGRAD with one microbatch). O(1). */
double hs_grad_accum_bytes_per_param(hs_grad_accum_t a, hs_dtype_t precision,
                                     int32_t microbatches);

/* ---- framework host overheads (sim/host.c, docs/simulator.md "Framework
 * overheads"): what a training framework's host (CPU) side costs beside
 * the kernels. Eager PyTorch issues every kernel from Python: the GPU runs
 * a kernel only after the host has issued it, so a phase whose kernels are
 * shorter than their host cost runs at the host's pace. Presets name the
 * framework of a table or run; "none" (the default, every field 0) keeps
 * every figure what it was before the model existed, bit for bit. ------- */
typedef enum {
  HS_FW_NONE = 0,
  HS_FW_MEGATRON_LM_2021,     /* Megatron-LM 2021-2023: eager, megatron/schedules.py */
  HS_FW_MEGATRON_CORE_2024,   /* Megatron-Core 2024 with TE, eager */
  HS_FW_MEGATRON_CORE_GRAPHS, /* the same with --enable-cuda-graph (per-layer graphs) */
  HS_FW_NEMO_2024,            /* NeMo 24.x: Megatron-Core under PyTorch Lightning */
  HS_FW_DEEPSPEED_2022,       /* DeepSpeed 0.3-0.8 (2021-2022) PipelineEngine / ZeRO (Megatron-DeepSpeed) */
  HS_FW_FSDP_2023,            /* PyTorch FSDP under Composer/llm-foundry 2023 */
  HS_FW__COUNT
} hs_framework_id_t;

typedef struct hs_framework {
  hs_framework_id_t id;       /* HS_FW_NONE: no host model */
  double dispatch_us;         /* host time per kernel issued (Python module, PyTorch
                                 dispatcher, cudaLaunchKernel); >= 0 */
  double microbatch_us;       /* host time per microbatch per stage and phase before its
                                 first kernel (schedule / engine bookkeeping, hooks); >= 0 */
  bool cuda_graphs;           /* each layer replayed as one CUDA graph: one host issue per
                                 layer instead of one per kernel */
  bool optimizer_passes;      /* the optimizer step also runs the gradient-norm pass over
                                 the fp32 gradients (clip_grad_norm), and fp16's unscale
                                 and inf check */
} hs_framework_t;
/* Preset names in hs_framework_id_t order ("none", "megatron-lm-2021", ...),
 * NULL-terminated. */
extern const char *const hs_framework_presets[];
/* Fills *out with the named preset's sourced and fitted values; HS_EINVAL
 * for an unknown name (s may be NULL). */
hs_status_t hs_framework_preset(const char *name, hs_framework_t *out);
const char *hs_framework_name(hs_framework_id_t id);
/* The preset names joined by ", " into buf (truncated to n bytes); buf. */
const char *hs_framework_presets_list(char *buf, size_t n);
bool hs_framework_active(const hs_framework_t *fw);
/* The kernel preset (hs_kernel_presets) a framework preset runs, or NULL
 * when it has none of its own (none, fsdp-2023: the model's code decides). */
const char *hs_framework_kernels(hs_framework_id_t id);
bool hs_framework_equal(const hs_framework_t *a, const hs_framework_t *b);
/* "framework" of object j at path: a preset name, or {"preset", "dispatch_us",
 * "microbatch_us", "cuda_graphs", "optimizer_passes"} (fields override the
 * preset's); absent: *fw unchanged. Bad values name file, field and value
 * (sim/plan_json.c). */
struct hs_jreader;
struct cJSON;
hs_status_t hs_framework_from_json(const struct hs_jreader *r, const struct cJSON *j,
                                   const char *path, hs_framework_t *fw);
/* {"preset", "dispatch_us", "microbatch_us", "cuda_graphs", "optimizer_passes"};
 * NULL when out of memory. */
struct cJSON *hs_framework_to_json(const hs_framework_t *fw);

typedef struct hs_practice {
  hs_kernels_t kernels;       /* default: HS_KERNELS_DEFAULT (megatron-core-2024) */
  hs_framework_t framework;   /* default: none (no host model) */
  bool sequence_parallel;     /* Megatron SP over each TP group (Korthikanti et al.) */
  int32_t zero_stage;         /* ZeRO over each op's DP group: 0 none, 1 optimizer state,
                                 2 + gradients, 3 + parameters (FSDP); see hs_plan_zero_stage */
  bool tp_comm_overlap;       /* TP collectives overlapped with their adjacent GEMM
                                 (Megatron-Core userbuffers, --tp-comm-overlap) */
  bool dp_overlap;            /* default true: gradient buckets start during the last
                                 backward (PyTorch DDP buckets, Megatron-Core
                                 overlap_grad_reduce, FSDP); false: every bucket waits for
                                 the pipeline flush (Megatron-LM 2021 --DDP-impl local) */
  bool overlap_contention;    /* default true: compute beside a collective on its device
                                 runs at 1/(1 + overlap_slowdown) of its speed (the GPU's
                                 catalog figure; sim/contention.h); false: ideal overlap */
  int32_t context_parallel;   /* C >= 1 (default 1): ring attention over groups of C
                                 consecutive replicas of every stage, each holding 1/C of
                                 the sequence (sim/lower.c; docs/plan.md) */
  int32_t expert_parallel;    /* E >= 1 (default 1): MoE experts split over groups of E
                                 consecutive pipelines, all-to-all within each group */
  bool fsdp_param_dtype_set;  /* false (default): ZeRO-3 gathers the plan precision's weights */
  hs_dtype_t fsdp_param_dtype; /* when set: the dtype ZeRO-3 / FSDP all-gathers parameters in
                                 (PyTorch FSDP MixedPrecision.param_dtype; None there = fp32) */
  bool fsdp_shard_grad_op;    /* zero_stage 2 as PyTorch FSDP SHARD_GRAD_OP: each block's
                                 parameters all-gathered in forward (prefetched like
                                 ZeRO-3's) and kept for backward, gradients reduce-
                                 scattered; false (default): folded into the gradient
                                 all-reduce. No effect on other stages */
  bool fsdp_backward_post;    /* FSDP backward_prefetch BACKWARD_POST: a unit's backward
                                 gather starts after the later unit's backward, exposed;
                                 false (default): BACKWARD_PRE, overlapped (sim/lower.c) */
  hs_grad_accum_t grad_accum; /* default FUSED: no separate accumulation pass */
  bool grad_reduce_fp32;      /* gradients kept and reduced over DP in fp32 (Megatron
                                 --accumulate-allreduce-grads-in-fp32, FSDP reduce_dtype
                                 fp32); false (default): the precision's gradient dtype.
                                 See hs_practice_grad_bytes */
} hs_practice_t;
/* Bytes per gradient element of the data-parallel gradient collectives
 * (all-reduce, ZeRO reduce-scatter, expert buckets) and of the gradient
 * buffer in memory: 4 with grad_reduce_fp32 or grad_accum add_fp32 (the
 * fp32 main_grad Megatron both accumulates and all-reduces), else
 * hs_precision_grad_bytes(precision). O(1). */
double hs_practice_grad_bytes(const hs_practice_t *p, hs_dtype_t precision);
/* "fp32" / "default" for grad_reduce_fp32; parse returns HS_EINVAL on
 * anything else (s may be NULL). */
const char *hs_grad_reduce_name(bool fp32);
hs_status_t hs_grad_reduce_parse(const char *s, bool *fp32);
/* Bytes per parameter a ZeRO-3 gather moves: fsdp_param_dtype's, or the
 * precision's weight bytes (hs_precision_state_bytes) when unset. */
double hs_practice_gather_bytes(const hs_practice_t *p, hs_dtype_t precision);
/* "pre" / "post" for fsdp_backward_post; parse returns HS_EINVAL on others. */
const char *hs_fsdp_prefetch_name(bool post);
hs_status_t hs_fsdp_prefetch_parse(const char *s, bool *post);
void hs_practice_init(hs_practice_t *p);
bool hs_practice_is_default(const hs_practice_t *p);
bool hs_practice_equal(const hs_practice_t *a, const hs_practice_t *b);

/* Op `op` as it runs under practice `pr` on a TP group of degree tp: the
 * same op, or *tmp filled with the kernel set's and sequence parallelism's
 * FLOPs, memory traffic and saved activations (the TP split itself is
 * still the caller's, as for the model's op). O(1). */
const hs_op_t *hs_practice_op(const hs_practice_t *pr, const hs_op_t *op, int32_t tp, hs_op_t *tmp);
/* Bytes per parameter of the training state under mixed precision at
 * `precision` (fp32: 4 weights + 4 gradients + 8 Adam moments; bf16, fp16,
 * fp8: 2 weights + 2 gradients + 12 fp32 master weights and moments; fp8
 * keeps bf16 weights and gradients, as Transformer Engine does), and the
 * gradient element size the data-parallel sync moves. */
typedef struct hs_state_bytes {
  double weight, grad, optimizer;
} hs_state_bytes_t;
hs_state_bytes_t hs_precision_state_bytes(hs_dtype_t precision);
double hs_precision_grad_bytes(hs_dtype_t precision);
/* Planners: sets p->practice to *pr, without sequence parallelism (and
 * the TP overlap that needs it) when no TP group of p has 2 devices or
 * more: there is nothing to split, and the plan runs as it would without. */
struct hs_plan;
void hs_plan_set_practice(struct hs_plan *p, const hs_practice_t *pr);
/* Does selective recomputation recompute this op (it saves less with it)? */
bool hs_practice_recomputes_selective(const hs_op_t *op);

typedef struct hs_plan {
  char strategy[48];          /* who made it ("megatron", "hapt", "manual") */
  char schedule[HS_SCHED_NAME_MAX]; /* "gpipe", "1f1b", "interleaved-1f1b", "hetero-1f1b" */
  int32_t chunks;             /* interleaved: model chunks per device (v) */
  bool async_send;            /* post p2p sends without blocking compute (hetero-1f1b) */
  hs_dtype_t precision;
  bool optimizer_sharding;    /* ZeRO-1 style over each op's DP group */
  double bucket_bytes;        /* gradient bucket size (default 100 MB) */
  hs_practice_t practice;     /* kernel set, sequence parallelism (default: today's) */
  hs_plan_pipeline_t *pipelines; /* owned */
  int32_t n_pipelines;
  hs_plan_shard_t *shards;    /* owned, optional */
  int32_t n_shards;
  /* Stage-level device ratios for SPMD (HAP): per replica device shares of
   * the op work, NULL = equal. Indexed like the flattened replica devices. */
  double *device_ratios;
  int32_t n_device_ratios;
} hs_plan_t;

void hs_plan_init(hs_plan_t *p);
/* The ZeRO stage the plan runs: practice.zero_stage, at least 1 when
 * optimizer_sharding (the older field, ZeRO-1). */
int32_t hs_plan_zero_stage(const hs_plan_t *p);
void hs_plan_destroy(hs_plan_t *p);          /* NULL and zeroed ok */
hs_status_t hs_plan_copy(const hs_plan_t *src, hs_plan_t *dst, hs_error_t *err);
/* Plan p appended to b as raw bytes (sim/plan_pack.c), for a forked worker
 * of this same binary; hs_plan_unpack reads one back at r into *p (a plan
 * equal to the packed one; the caller destroys it): HS_EINVAL when the
 * bytes are short or garbled (r->ok cleared, *p empty), HS_ENOMEM. Not a
 * file format (plan_json.c is). O(plan). */
void hs_plan_pack(const hs_plan_t *p, hs_bytes_t *b);
hs_status_t hs_plan_unpack(hs_bytes_reader_t *r, hs_plan_t *p);
/* Whether a TP group of `tp` devices can split the model's attention: tp
 * divides the heads, and the KV heads are split (tp divides them) or
 * replicated evenly (fewer KV heads than ranks, tp a multiple of them).
 * Plan validation refuses other degrees and planners skip them. O(1). */
bool hs_model_tp_ok(const hs_model_t *m, int32_t tp);
/* Samples per iteration: sum over pipelines of microbatch_size x n_microbatches. */
int64_t hs_plan_global_batch(const hs_plan_t *p);
/* Number of distinct devices used. */
int32_t hs_plan_n_devices(const hs_plan_t *p);

/* Allocation helpers for planners: allocate arrays of the given sizes,
 * zeroed (replica shares default to 1/n_replicas, warmup -1). */
hs_status_t hs_plan_alloc_pipelines(hs_plan_t *p, int32_t n);
hs_status_t hs_plan_alloc_stages(hs_plan_pipeline_t *pl, int32_t n);
hs_status_t hs_plan_alloc_replicas(hs_plan_stage_t *st, int32_t n);
hs_status_t hs_plan_replica_set_devices(hs_plan_replica_t *r, const int32_t *devices, int32_t n);
/* Replaces st->order with a copy of order (NULL clears it); HS_ENOMEM. */
hs_status_t hs_plan_stage_set_order(hs_plan_stage_t *st, const char *order);
/* Two stage orders (NULL or strings) are the same. */
bool hs__order_same(const char *a, const char *b);

/* Megatron-style grid plan: dp identical pipelines of pp stages with tp-way
 * TP, even split of transformer blocks (embedding with the first stage, head
 * and loss with the last), device rank = (pp_rank*dp + dp_rank)*tp + tp_rank
 * over the cluster's devices in order. global_batch must be a multiple of
 * dp*microbatch_size. */
typedef struct hs_grid_opts {
  int32_t tp, pp, dp;
  int32_t microbatch_size;
  int64_t global_batch;
  const char *schedule;       /* NULL = "1f1b" */
  int32_t chunks;             /* interleaved */
  hs_recompute_t recompute;
  int32_t first_device;       /* offset into the cluster's devices */
  hs_practice_t practice;     /* copied into the plan; practice.context_parallel C puts
                                 C replicas of tp devices in every stage (device rank =
                                 ((pp_rank*dp + dp_rank)*C + cp_rank)*tp + tp_rank) */
  /* Uneven layout (sim/layout.c): transformer blocks per (virtual) stage,
   * n_stage_layers = pp x chunks entries in virtual-stage order (stage k =
   * chunk k / pp of rank k % pp), summing to the model's layers; 0 allowed
   * for the first (embedding only) and last (head and loss only) stage.
   * NULL = the even split. Not owned. */
  const int32_t *stage_layers;
  int32_t n_stage_layers;
} hs_grid_opts_t;
void hs_grid_opts_init(hs_grid_opts_t *o);
/* The defaults of `hetsim simulate`'s grid shortcut, for fields left at 0:
 * dp = every remaining device, n_devices / (tp x pp x cp) (at least 1), then
 * global_batch = dp x microbatch_size x pp x 4. O(1). */
void hs_grid_opts_defaults(hs_grid_opts_t *o, const hs_cluster_t *c);
hs_status_t hs_plan_grid(const hs_model_t *m, const hs_cluster_t *c, const hs_grid_opts_t *o,
                         hs_plan_t *out, hs_error_t *err);
/* Op boundaries (n+1, into bounds) of n stages holding counts[k] blocks
 * each, embedding with stage 0, head with stage n-1 (sim/layout.c).
 * HS_EINVAL naming stage_layers[k] when a count is negative, the sum is
 * not the model's layers, or a stage would be empty. O(n + ops). */
hs_status_t hs_layout_bounds(const hs_model_t *m, const int32_t *counts, int32_t n, int32_t *bounds,
                             hs_error_t *err);

/* Checks the plan against model and cluster: unknown device, device used
 * twice (except interleaved chunks), op ranges with gaps or overlaps, shares
 * not summing to 1, TP group with mixed GPU types, holders of one op with
 * unequal TP degree, unknown schedule, schedule constraints. The message names
 * the field: "plan.json: pipelines[0].stages[2].replicas[1].devices[3]: device
 * 17 already used by pipelines[0].stages[0]". `file` may be NULL ("plan"). */
hs_status_t hs_plan_validate(const hs_plan_t *p, const hs_model_t *m, const hs_cluster_t *c,
                             const char *file, hs_error_t *err);

/* Makes every replica's share a whole number of samples of its pipeline's
 * micro-batch (k / microbatch_size; a context-parallel group of C replicas
 * k / (C x microbatch_size) each), keeping the micro-batch total: largest
 * remainder with a floor of one sample per replica (group). The one
 * rounding rule of planners (docs/plan.md, "Uneven shares"). HS_EINVAL
 * naming the stage when a micro-batch has fewer samples than replicas.
 * O(stages x replicas^2). */
hs_status_t hs_plan_round_shares(hs_plan_t *p, const char *file, hs_error_t *err);

/* JSON (docs/plan.md). The parser checks types and ranges; semantic checks
 * against model and cluster are hs_plan_validate's. */
hs_status_t hs_plan_parse(const char *text, const char *file, hs_plan_t *out, hs_error_t *err);
hs_status_t hs_plan_load(const char *path, hs_plan_t *out, hs_error_t *err);
struct cJSON *hs_plan_to_json(const hs_plan_t *p);
/* One line in Megatron-LM terms (sim/plan_summary.c): "tp2 pp4 dp8 mbs 1 x
 * 64 microbatches 1f1b, layers emb+0-5|6-11|12-17|18-23+head"; with m NULL
 * the stages are op ranges ("ops 0-40|41-80"). O(stages x replicas + ops). */
void hs_plan_describe(const hs_plan_t *p, const hs_model_t *m, char *buf, size_t n);
/* hs_plan_describe without the model. */
void hs_plan_summary(const hs_plan_t *p, char *buf, size_t n);

/* ---- schedules ----------------------------------------------------------- */

typedef enum { HS_PHASE_FWD = 0, HS_PHASE_BWD = 1 } hs_phase_t;

typedef struct hs_sched_item {
  int32_t mb;        /* microbatch index */
  int16_t chunk;     /* model chunk (interleaved), else 0 */
  int16_t phase;     /* hs_phase_t */
} hs_sched_item_t;

typedef struct hs_sched_params {
  int32_t p;         /* pipeline ranks (devices positions) */
  int32_t v;         /* chunks per rank */
  int32_t m;         /* microbatches */
  int32_t rank;
  int32_t warmup;    /* -1 = schedule default */
  const char *order; /* hetero-1f1b: explicit 'F'/'B' order of length 2m, or NULL */
} hs_sched_params_t;

/* A pipeline schedule: the per-rank order of forward and backward items. */
typedef struct hs_schedule {
  const char *name;
  const char *description;
  bool interleaved;          /* uses chunks */
  bool default_async_send;   /* sends overlap compute by default */
  /* Checks m, p, v; message into err. */
  hs_status_t (*check)(const hs_sched_params_t *sp, hs_error_t *err);
  /* Writes the 2*m*v items of `rank` in execution order into out. O(m*v). */
  void (*order)(const hs_sched_params_t *sp, hs_sched_item_t *out);
} hs_schedule_t;

extern const hs_schedule_t *const hs_schedules[]; /* NULL-terminated */
const hs_schedule_t *hs_schedule_find(const char *name);

/* ---- compute model -------------------------------------------------------- */

/* Seconds for one kernel of `flops` FLOPs moving `bytes` bytes on `g` at
 * `dt`: launch + max(flops / achieved rate, bytes / achieved bandwidth), where
 * the achieved GEMM rate follows g's efficiency curve (hs_clusters.h). */
double hs_compute_kernel_s(const hs_gpu_t *g, hs_dtype_t dt, bool is_gemm, double flops,
                           double bytes);
/* Seconds of op `op` for `samples` samples on one device of a TP group of
 * degree tp (the op's TP split decides what is divided). */
/* One GEMM kernel writing out_elems output elements (the shape term
 * gemm_out_k of docs/clusters.md; with gemm_out_k 0 it is
 * hs_compute_kernel_s(g, dt, true, flops, bytes)). */
double hs_compute_gemm_s(const hs_gpu_t *g, hs_dtype_t dt, double flops, double out_elems,
                         double bytes);
double hs_compute_op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                       int32_t tp, hs_phase_t phase);
/* Transformer Engine's fp8 cast kernels (sim/compute.c, docs/simulator.md):
 * the part of hs_compute_op_s spent casting op's input (forward) or output
 * gradient (backward) to fp8 with its transpose; 0 unless dt is fp8 and op
 * a weight GEMM with a shape. */
double hs_compute_fp8_cast_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                             int32_t tp, hs_phase_t phase);
/* The fp8 weight cast + transpose of op's params_held parameters (experts:
 * experts_held experts, two weights each), once per optimizer step; 0
 * unless dt is fp8 and op a weight GEMM with a shape. */
double hs_compute_fp8_weight_cast_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op,
                                    double params_held, double experts_held);
/* True when hs_compute_op_s times op as a fused attention kernel at g's
 * calibrated rate (attn_* fields; sim/compute.c). */
bool hs_compute_attn_fused(const hs_gpu_t *g, const hs_op_t *op);

/* ---- the host queue of one phase (sim/host.c) ----
 * Kernels are issued by the host one after another, each after
 * dispatch_us; the GPU starts a kernel when the previous one has finished
 * and the host has issued it:
 *     cpu_i = cpu_{i-1} + d,   gpu_i = max(gpu_{i-1}, cpu_i) + t_i
 * from cpu_0 = microbatch_us, gpu_0 = 0 at the start of each microbatch's
 * forward or backward on a stage. */
typedef struct hs_host_cursor {
  double cpu_s, gpu_s;
  int32_t layer;              /* layer of the last op issued (CUDA-graph mode) */
} hs_host_cursor_t;
void hs_host_begin(hs_host_cursor_t *c, const hs_framework_t *fw);
/* Kernels the framework launches for op in phase ph (from the framework
 * code, sim/host.c); 0 for ops with no work. O(1). */
int32_t hs_host_kernels(const hs_practice_t *pr, const hs_op_t *op, hs_phase_t ph);
/* Issues op's kernels (hs_host_kernels, split evenly over its GPU time
 * t_gpu_s) and returns the GPU time the op occupies, idle waits for the
 * host included: >= t_gpu_s, == t_gpu_s when the host keeps ahead. */
double hs_host_op_s(hs_host_cursor_t *c, const hs_practice_t *pr, const hs_op_t *op,
                    hs_phase_t ph, double t_gpu_s);
/* A collective issued between two ops: one host issue, no GPU time here. */
void hs_host_collective(hs_host_cursor_t *c, const hs_framework_t *fw);
/* The per-op bound the planners' estimate uses where ops are summed
 * (prefix sums cannot carry the queue): max(t_gpu_s, kernels x dispatch). */
double hs_host_op_floor_s(const hs_practice_t *pr, const hs_op_t *op, hs_phase_t ph,
                          double t_gpu_s);
/* Bytes per parameter the optimizer step moves beyond Adam's own
 * (OPT_BYTES_PER_PARAM) under fw: the gradient norm reads the fp32
 * gradients (4), fp16's unscale and inf check read and write them (8). */
double hs_host_optimizer_extra_bytes(const hs_framework_t *fw, hs_dtype_t precision);

/* Device profiles: calibrated efficiency parameters that replace catalog
 * defaults (validate/ writes them). Applied to every GPU of the cluster whose
 * name matches an entry. */
hs_status_t hs_profile_apply_file(const char *path, hs_cluster_t *c, hs_error_t *err);
/* The same from profile text; `file` names it in messages (NULL: "profile").
 * On failure the entries before the bad one stay applied. O(text + gpus). */
hs_status_t hs_profile_parse(const char *text, const char *file, hs_cluster_t *c, hs_error_t *err);

/* ---- simulation ----------------------------------------------------------- */

/* How much a trace shows (docs/simulator.md, "Traces"): stage = one
 * representative device per pipeline stage, identical DP replicas folded;
 * device = every device, one slice per schedule item; kernel = device plus
 * compute segments, TP collectives and link flows. */
typedef enum { HS_TRACE_STAGE, HS_TRACE_DEVICE, HS_TRACE_KERNEL } hs_trace_detail_t;
const char *hs_trace_detail_name(hs_trace_detail_t d);
/* "stage", "device" or "kernel"; HS_ENOTFOUND otherwise. */
hs_status_t hs_trace_detail_parse(const char *s, hs_trace_detail_t *out);

typedef struct hs_sim_opts {
  const char *trace_path;     /* write a Chrome trace JSON when not NULL */
  hs_trace_detail_t trace_detail; /* default HS_TRACE_STAGE */
  bool trace_links;           /* add one track per busy link (default true) */
  int32_t trace_max_devices;  /* limit device tracks (0 = all) */
  bool verbose;
  /* > 0 (and no trace): a search's incumbent. The simulation stops as soon
   * as the iteration is known to take at least this long (an executor is
   * still busy when every event left is later); the report then says
   * stopped, with iteration_time_s = stop_at_s, a lower bound of the true
   * time, and only the memory and OOM fields besides. A plan that ends
   * before stop_at_s is simulated whole and reported exactly as without it,
   * so a search that keeps only plans faster than its incumbent decides
   * alike (sim/simulate.c, tests/test_sim_stop.c). */
  double stop_at_s;
} hs_sim_opts_t;
void hs_sim_opts_init(hs_sim_opts_t *o);

/* The parts of one device's peak memory (bytes); they add up to it. */
typedef struct hs_mem_parts {
  double weights_bytes;       /* bf16/fp16 weights held (TP shard, tied copies) */
  double gradients_bytes;     /* their gradients */
  double optimizer_bytes;     /* fp32 master weights and Adam moments (ZeRO-1: sharded) */
  double activations_bytes;   /* saved activations of the microbatches in flight at the peak */
  double workspace_bytes;     /* full recomputation: one block's activations recomputed at once;
                                 ZeRO-3: the gathered block in use and the prefetched next one */
} hs_mem_parts_t;

typedef struct hs_stage_report {
  int32_t pipeline, stage;
  int32_t op_first, op_last;
  int32_t n_devices;
  int32_t first_device;       /* of replica 0 */
  char gpu[HS_NAME_MAX];      /* replica 0's GPU */
  int32_t tp, n_replicas;
  double fwd_s, bwd_s;        /* per microbatch, replica 0, compute + blocking TP comm */
  double compute_s;           /* busy computing over the iteration (replica 0) */
  double comm_exposed_s;      /* compute stream blocked on communication */
  double idle_s;
  double peak_memory_bytes;   /* max over the stage's devices */
  double mem_capacity_bytes;
  double params;              /* per device of replica 0 */
  /* Where the iteration went on replica 0's first device: a partition of
   * [0, iteration_time_s], so the seven add up to it. compute excludes the
   * recomputed forwards (recompute) and the optimizer step; tp = blocked on
   * TP/SPMD collectives; pp = blocked on its own sends, or waiting for input
   * while that input was on the wire; dp = waiting for gradient buckets after
   * the last backward; bubble = every other wait (pipeline fill and drain,
   * slower stages, the end of the iteration). */
  double time_compute_s, time_recompute_s, time_tp_comm_s, time_pp_comm_s, time_dp_comm_s,
      time_bubble_s, time_optimizer_s;
  /* Peak memory of the stage's device with the largest peak: its parts add
   * up to peak_memory_bytes. */
  hs_mem_parts_t mem;
  /* Transformer blocks in the stage [layer_first, layer_last] (-1: none),
   * and whether it holds ops before the blocks (embedding) or after them
   * (final norm, LM head, loss). */
  int32_t layer_first, layer_last;
  bool has_embedding, has_head;
} hs_stage_report_t;

typedef struct hs_link_report {
  int32_t link;
  char label[48];
  double bytes;
  double utilisation;         /* bytes / (capacity x iteration time) */
  bool cross_site;            /* a direction of an inter-site link */
} hs_link_report_t;

typedef struct hs_report {
  double iteration_time_s;
  double samples_per_s;
  double tokens_per_s;
  double tflops_per_gpu;      /* model FLOPs (fwd+bwd, no recompute) / time / GPUs */
  double hw_tflops_per_gpu;   /* including recomputation */
  double mfu;                 /* model FLOP/s / sum of peak FLOP/s at the plan precision */
  double bubble_fraction;     /* mean over pipeline ranks of idle / iteration */
  double max_peak_memory_bytes;
  bool oom;
  bool stopped;               /* hs_sim_opts_t.stop_at_s reached: iteration_time_s is a lower bound */
  double max_device_work_s;   /* the busiest executor's compute at full speed (no contention, no
                                 optimizer step): the same items in any order (another warm-up
                                 depth or explicit hetero-1f1b order) take at least this long;
                                 set before the timeline runs, so a stopped report has it too */
  int32_t *oom_devices;       /* owned */
  int32_t n_oom_devices;
  double cost_usd_per_iteration;
  double cost_usd_per_million_tokens;
  double usd_per_hour;
  int32_t n_unpriced_devices; /* used GPUs without a catalog price: costs are then unknown */
  char uncalibrated_gpus[256]; /* the cluster's GPU types with no calibrated profile, comma-separated */
  char device_profiles[512];   /* "H100-SXM5-80GB calibrated; A100-SXM4-80GB uncalibrated" */
  char link_profiles[512];     /* hs_cluster_describe_links: "intra_node NVLink3-NVSwitch calibrated; ..." */
  char uncalibrated_links[256]; /* the used ports with no calibrated interconnect, comma-separated */
  int64_t global_batch;
  int64_t tokens_per_iteration;
  int32_t n_devices;
  hs_stage_report_t *stages;  /* owned */
  int32_t n_stages;
  hs_link_report_t *links;    /* owned, busiest first */
  int32_t n_links;
  double *device_peak_memory_bytes; /* owned, per cluster device (0 = unused) */
  int32_t n_device_mem;
  uint64_t events;
  uint64_t flows;
  char plan_summary[256];
} hs_report_t;

void hs_report_init(hs_report_t *r);
void hs_report_destroy(hs_report_t *r);
/* The report as `hetsim simulate --json` prints it: hs_report_to_json (below) plus
 * "model" and "cluster" names. NULL when out of memory. */
struct cJSON *hs_report_to_json_named(const hs_report_t *r, const char *model,
                                      const char *cluster);

/* Simulates one training iteration of `plan` (validated first). Fills
 * `report` (caller destroys). Deterministic: same inputs, same bytes. */
hs_status_t hs_simulate(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                        const hs_sim_opts_t *opts, hs_report_t *report, hs_error_t *err);

/* Memory per device under the plan's schedule without running the timeline
 * (used by planners and by hs_simulate). out has c->n_devices entries. */
hs_status_t hs_memory_per_device(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                                 double *out, hs_error_t *err);

/* hs_memory_per_device with the parts (parts: NULL or c->n_devices entries,
 * zero for unused devices). Same complexity. */
hs_status_t hs_memory_breakdown(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                                double *out, hs_mem_parts_t *parts, hs_error_t *err);

/* Breakdowns as arrays (breakdown.c), in the order of their keys:
 * hs_time_part_keys = compute, recompute, tp_comm, pp_comm, dp_comm, bubble,
 * optimizer (seconds); hs_mem_part_keys = weights, gradients, optimizer,
 * activations, workspace (bytes). O(1) per stage. */
#define HS_TIME_PARTS 7
#define HS_MEM_PARTS 5
extern const char *const hs_time_part_keys[HS_TIME_PARTS];
extern const char *const hs_mem_part_keys[HS_MEM_PARTS];
void hs_stage_time_parts(const hs_stage_report_t *s, double out_s[HS_TIME_PARTS]);
void hs_stage_mem_parts(const hs_stage_report_t *s, double out_bytes[HS_MEM_PARTS]);
/* One row for tables: the time parts averaged over all stages (they still
 * add up to the iteration time), and the memory parts of the stage closest
 * to its capacity (largest peak / capacity; they add up to its peak).
 * O(stages). */
void hs_report_time_parts(const hs_report_t *r, double out_s[HS_TIME_PARTS]);
void hs_report_mem_parts(const hs_report_t *r, double out_bytes[HS_MEM_PARTS]);

/* Version of the JSON outputs' layout (docs/schemas.md); bumped when a key
 * changes meaning or goes away. */
#define HS_SCHEMA_VERSION 1
struct cJSON *hs_report_to_json(const hs_report_t *r);
/* One line saying why a report's plan cannot run ("out of memory on 8
 * devices: peak 93.1 GB against 80.0 GB of device memory"); for reports with
 * oom set. */
void hs_report_infeasible_reason(const hs_report_t *r, char *buf, size_t n);
void hs_report_print(const hs_report_t *r, FILE *out);

#endif /* HS_SIM_H */
