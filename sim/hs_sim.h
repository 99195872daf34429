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

typedef struct hs_plan {
  char strategy[48];          /* who made it ("megatron", "hapt", "manual") */
  char schedule[HS_SCHED_NAME_MAX]; /* "gpipe", "1f1b", "interleaved-1f1b", "hetero-1f1b" */
  int32_t chunks;             /* interleaved: model chunks per device (v) */
  bool async_send;            /* post p2p sends without blocking compute (hetero-1f1b) */
  hs_dtype_t precision;
  bool optimizer_sharding;    /* ZeRO-1 style over each op's DP group */
  double bucket_bytes;        /* gradient bucket size (default 100 MB) */
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
void hs_plan_destroy(hs_plan_t *p);          /* NULL and zeroed ok */
hs_status_t hs_plan_copy(const hs_plan_t *src, hs_plan_t *dst, hs_error_t *err);
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
} hs_grid_opts_t;
void hs_grid_opts_init(hs_grid_opts_t *o);
/* The defaults of `hetsim simulate`'s grid shortcut, for fields left at 0:
 * dp = every remaining device, n_devices / (tp x pp) (at least 1), then
 * global_batch = dp x microbatch_size x pp x 4. O(1). */
void hs_grid_opts_defaults(hs_grid_opts_t *o, const hs_cluster_t *c);
hs_status_t hs_plan_grid(const hs_model_t *m, const hs_cluster_t *c, const hs_grid_opts_t *o,
                         hs_plan_t *out, hs_error_t *err);

/* Checks the plan against model and cluster: unknown device, device used
 * twice (except interleaved chunks), op ranges with gaps or overlaps, shares
 * not summing to 1, TP group with mixed GPU types, holders of one op with
 * unequal TP degree, unknown schedule, schedule constraints. The message names
 * the field: "plan.json: pipelines[0].stages[2].replicas[1].devices[3]: device
 * 17 already used by pipelines[0].stages[0]". `file` may be NULL ("plan"). */
hs_status_t hs_plan_validate(const hs_plan_t *p, const hs_model_t *m, const hs_cluster_t *c,
                             const char *file, hs_error_t *err);

/* JSON (docs/plan.md). The parser checks types and ranges; semantic checks
 * against model and cluster are hs_plan_validate's. */
hs_status_t hs_plan_parse(const char *text, const char *file, hs_plan_t *out, hs_error_t *err);
hs_status_t hs_plan_load(const char *path, hs_plan_t *out, hs_error_t *err);
struct cJSON *hs_plan_to_json(const hs_plan_t *p);
/* Short human form: "pp4 [tp8 x1 | tp8 x1 | ...] mb=1x192 1f1b". */
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
double hs_compute_op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                       int32_t tp, hs_phase_t phase);

/* Device profiles: calibrated efficiency parameters that replace catalog
 * defaults (validate/ writes them). Applied to every GPU of the cluster whose
 * name matches an entry. */
hs_status_t hs_profile_apply_file(const char *path, hs_cluster_t *c, hs_error_t *err);
/* The same from profile text; `file` names it in messages (NULL: "profile").
 * On failure the entries before the bad one stay applied. O(text + gpus). */
hs_status_t hs_profile_parse(const char *text, const char *file, hs_cluster_t *c, hs_error_t *err);

/* ---- simulation ----------------------------------------------------------- */

typedef struct hs_sim_opts {
  const char *trace_path;     /* write a Chrome trace JSON when not NULL */
  bool trace_links;           /* add one track per busy link (default true) */
  int32_t trace_max_devices;  /* limit device tracks (0 = all) */
  bool verbose;
} hs_sim_opts_t;
void hs_sim_opts_init(hs_sim_opts_t *o);

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
} hs_stage_report_t;

typedef struct hs_link_report {
  int32_t link;
  char label[48];
  double bytes;
  double utilisation;         /* bytes / (capacity x iteration time) */
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
  int32_t *oom_devices;       /* owned */
  int32_t n_oom_devices;
  double cost_usd_per_iteration;
  double cost_usd_per_million_tokens;
  double usd_per_hour;
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

struct cJSON *hs_report_to_json(const hs_report_t *r);
void hs_report_print(const hs_report_t *r, FILE *out);

#endif /* HS_SIM_H */
