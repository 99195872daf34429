/*
 * hs_validate.h - the validation harness: replay a plan's task graph for real
 * (CPU threads, or CUDA/NCCL under MPI), microbenchmark a device, fit the
 * compute-model profile the simulator uses, compare predicted with measured.
 *
 * One task graph, two executors: replay walks hs_taskgraph_t (the simulator's
 * own lowering, sim/hs_taskgraph.h) in each executor's schedule order, so the
 * measured tasks carry the simulator's task identities ("fwd"/"bwd" per
 * executor, microbatch and chunk; "act"/"grad" sends; "grad-allreduce";
 * "optimizer").
 *
 * Files (docs/validation.md):
 *   measured.json      replay output: per-iteration times, per-stage fwd/bwd
 *                      medians, per-kernel medians with the prediction, the
 *                      timeline of the median iteration
 *   measurements.json  microbenchmark points (gemm, mem, p2p) that
 *                      `hetsim calibrate` fits
 *   profile.json       the fitted device profile (sim/profile_json.c format)
 *
 * Ownership: every struct here is caller-allocated, _init zeroes it and
 * _destroy (NULL and zeroed ok) frees what the library allocated inside.
 * Units: seconds (double), bytes, FLOPs.
 */
#ifndef HS_VALIDATE_H
#define HS_VALIDATE_H

#include "hs_sim.h"
#include "hs_taskgraph.h"

struct cJSON;

/* ---- measured.json --------------------------------------------------------- */

#define HS_TASK_NAME_MAX 24

/* Median over every occurrence (items x iterations) of one kernel entry. */
typedef struct hs_meas_kernel {
  int32_t exec, stage, op;
  int16_t phase;
  bool recompute;
  hs_op_kind_t op_kind;
  double flops, bytes;
  double predicted_s;
  double measured_s;
} hs_meas_kernel_t;

/* One task of the median iteration's timeline (times from iteration start). */
typedef struct hs_meas_task {
  char name[HS_TASK_NAME_MAX]; /* "fwd", "bwd", "act", "grad", "allreduce", "grad-allreduce", "optimizer" */
  int32_t exec, device, stage, mb, chunk;
  double t0_s, t1_s;
  double predicted_s;          /* compute tasks: the simulator's compute time; else 0 */
  double bytes;
} hs_meas_task_t;

typedef struct hs_meas_stage {
  int32_t pipeline, stage;
  double fwd_s, bwd_s;           /* medians per microbatch, replica 0 (compute + blocking TP comm) */
  double predicted_fwd_s, predicted_bwd_s; /* kernel predictions summed (no comm) */
} hs_meas_stage_t;

typedef struct hs_measured {
  char backend[16];
  char model[64];
  char cluster[64];
  char device[128];              /* what ran it ("cpu: 2 threads", "NVIDIA H100 80GB HBM3") */
  char plan_summary[256];
  char mode[24];                 /* "plan", "stage N" (one stage in isolation) */
  double *iteration_s;           /* owned, every timed iteration */
  int32_t n_iterations;
  double iteration_time_s;       /* median */
  hs_meas_stage_t *stages;       /* owned */
  int32_t n_stages;
  hs_meas_kernel_t *kernels;     /* owned */
  int32_t n_kernels;
  hs_meas_task_t *tasks;         /* owned */
  int32_t n_tasks;
  /* one rank's step breakdown (torch-profiler import), medians over steps;
   * has_breakdown false when the record has none */
  bool has_breakdown;
  double compute_s, comm_exposed_s, idle_s;
  /* CPU replay: the speed probe's median during the replay and during the
   * calibration of the profile it ran with (0 = not measured / no profile
   * probe). Their ratio is how much slower the machine ran in the replay
   * than when it was calibrated (hs_compare: the speed-adjusted error). */
  double speed_probe_s, speed_probe_calibration_s;
  /* per timed iteration: the probe around it (mean of the samples just
   * before and after, over the threads); owned, NULL or n_iterations long */
  double *speed_probe_iter_s;
} hs_measured_t;

void hs_measured_init(hs_measured_t *m);
void hs_measured_destroy(hs_measured_t *m);
/* cJSON_Delete (hs_json_free) frees; NULL when out of memory. */
struct cJSON *hs_measured_to_json(const hs_measured_t *m);
/* Parses measured.json text; messages name `file`, the field and the value. */
hs_status_t hs_measured_parse(const char *text, const char *file, hs_measured_t *out,
                              hs_error_t *err);
hs_status_t hs_measured_load(const char *path, hs_measured_t *out, hs_error_t *err);

/* ---- replay ------------------------------------------------------------------ */

/* CPU backend clocks: wall (CLOCK_MONOTONIC) or cpu (each device's timeline
 * advanced by its thread's CPU time, waits by what it waited for: the
 * default, because a shared machine preempts threads at random). */
typedef enum { HS_CLOCK_CPU, HS_CLOCK_WALL } hs_clock_t;

typedef struct hs_replay_opts {
  int32_t iterations;     /* timed iterations (default 5) */
  int32_t warmup;         /* untimed iterations first (default 1) */
  int32_t only_stage;     /* -1: the whole plan; k >= 0: stage k of pipeline 0 in isolation */
  hs_clock_t clock;       /* CPU backend (default HS_CLOCK_CPU); CUDA uses CUDA events */
} hs_replay_opts_t;
void hs_replay_opts_init(hs_replay_opts_t *o);

/* CPU backend: one thread per device of the plan, real work of the ops'
 * shapes (single-precision CBLAS GEMM, memory-bound loops moving the op's
 * bytes, copies between device buffers for p2p and collectives), timed with
 * CLOCK_MONOTONIC. `out` is initialised here. */
hs_status_t hs_replay_cpu(const hs_taskgraph_t *tg, const hs_model_t *m,
                          const hs_replay_opts_t *o, hs_measured_t *out, hs_error_t *err);

/* CUDA backend (validate/cuda/): cuBLAS GEMMs, NCCL p2p and collectives, one
 * MPI rank per device. Without a CUDA build: HS_EUNSUPPORTED "built without
 * CUDA/NCCL". Runtime mismatches (no device, fewer ranks than the plan's
 * devices) are HS_EINVAL with a message saying what is missing. On ranks
 * other than 0 *out stays empty and *is_root is false. */
hs_status_t hs_replay_cuda(const hs_taskgraph_t *tg, const hs_model_t *m,
                           const hs_replay_opts_t *o, hs_measured_t *out, bool *is_root,
                           hs_error_t *err);
/* True when this binary was built with the CUDA backend. */
bool hs_cuda_backend_built(void);

/* Fills kernels/stages aggregates of `out` from raw per-occurrence samples;
 * shared by both backends (validate/measured.c). */
typedef struct hs_kernel_sample {
  int32_t exec, chunk, entry;  /* entry index into the exec's work[chunk*2+phase] */
  int16_t phase;
  double s;
} hs_kernel_sample_t;
typedef struct hs_item_sample {
  int32_t exec, chunk;
  int16_t phase;
  double s;                    /* compute + blocking TP collectives of one item */
} hs_item_sample_t;
hs_status_t hs__measured_aggregate(const hs_taskgraph_t *tg, const hs_kernel_sample_t *ks,
                                   size_t n_ks, const hs_item_sample_t *is, size_t n_is,
                                   hs_measured_t *out);

/* ---- microbenchmarks and calibration ---------------------------------------- */

typedef enum { HS_MB_GEMM, HS_MB_MEM, HS_MB_P2P, HS_MB_H2D, HS_MB_ALLREDUCE, HS_MB_ATTN } hs_mb_kind_t;
const char *hs_mb_kind_name(hs_mb_kind_t k);

typedef struct hs_mb_point {
  hs_mb_kind_t kind;
  hs_dtype_t dtype;
  int64_t m, n, k;        /* GEMM shape */
  int32_t ranks;          /* collectives */
  double flops;           /* one kernel */
  double bytes;           /* moved */
  double s;               /* median seconds */
  int32_t source;         /* 1 + index into hs_measurements_t.sources; 0 = none */
  /* "attn" points (fused attention kernel benchmarks): m = sequence length,
   * k = head dim, the published rate in TFLOP/s as written in the file
   * (FlashAttention's count: forward 4 s^2 d per head, backward 2.5x,
   * causal halved). */
  bool bwd, causal;
  double tflops;
} hs_mb_point_t;

/* Where published points come from (measurements transcribed from a
 * public table rather than measured here): an id the points name, the
 * reference (URL or repo@commit path) and its date (YYYY, YYYY-MM or
 * YYYY-MM-DD). */
#define HS_MB_SOURCES_MAX 16
typedef struct hs_mb_source {
  char id[32];
  char ref[400];
  char date[16];
} hs_mb_source_t;

typedef struct hs_measurements {
  char gpu[HS_NAME_MAX];  /* GPU catalog entry the points describe */
  char backend[16];
  char device[128];
  double peak_flops[HS_DTYPE__COUNT]; /* the entry's peaks the fit is relative to */
  double mem_bw_GBps;
  hs_mb_point_t *p;       /* owned */
  int32_t n;
  hs_mb_source_t sources[HS_MB_SOURCES_MAX];
  int32_t n_sources;
  char retrieved[16];     /* when published points were read (YYYY-MM-DD); "" = measured here */
  double speed_probe_s;   /* CPU backend: the speed probe's median during the run
                           * (HS_PROBE_KERNEL, every thread at once); 0 = none */
  uint32_t applies;       /* HS_FIT_* bits the GPU catalog takes from this fit; 0 = all */
  /* How the points determine the model ("gemm_fit"/"mem_fit" in the file):
   * false = a sweep of sizes, fitted as a line (launch and slope); true =
   * "max": the points are best-achievable rates (e.g. a maximum-achievable
   * matmul figure, a peak copy bandwidth), and the largest rate / peak is
   * the asymptotic efficiency (gemm_eff_max, mem_eff) while the size terms
   * (gemm_half_flops; launch_us for memory) stay undetermined. */
  bool gemm_fit_max;
  bool mem_fit_max;
  /* "gemm_fit": "shape": GEMM (and BMM: "flops" = 2 b m n k) points of
   * several shapes, fitted as t = a + F / (peak eff_max) + 2 out gemm_out_k /
   * (peak eff_max), out = F / (2 k) output elements (sim/compute.c). */
  bool gemm_fit_shape;
  /* "mem_eff_source": "<id>" (a "line" memory fit only): the memory points
   * of that source are best-achievable rates and set mem_eff alone (as
   * "max"); the line through the other memory points sets launch_us. For
   * a copy sweep that gives the launch but not the HBM rate of the part
   * (e.g. an unnamed board variant) beside a published STREAM figure.
   * 1-based index into sources; 0 = none. */
  int32_t mem_eff_source;
  /* "gemm_sustained_source": "<id>": the GEMM points of that source are
   * sustained rates (held at the power limit after the clock settled, e.g.
   * a maximum-sustainable-matmul figure) beside a sweep of burst-timed ones.
   * They stay out of the GEMM fit, and the best of them over the peak is
   * gemm_sustained_eff, the ceiling sim/compute.c puts on the curve.
   * 1-based index into sources; 0 = none. */
  int32_t gemm_sustained_source;
} hs_measurements_t;

/* Fitted parameters, as bits of hs_measurements_t.applies ("applies":
 * ["gemm_eff_max", ...] in the file): a published set may support some of
 * them only (e.g. a memory sweep of an unidentified board variant). */
enum {
  HS_FIT_GEMM_EFF_MAX = 1u << 0,
  HS_FIT_GEMM_HALF_FLOPS = 1u << 1,
  HS_FIT_MEM_EFF = 1u << 2,
  HS_FIT_LAUNCH_US = 1u << 3,
  HS_FIT_ALL = 15u,
  HS_FIT_GEMM_OUT_K = 1u << 4, /* only from "gemm_fit": "shape"; not part of HS_FIT_ALL */
  HS_FIT_ATTN = 1u << 5,       /* attn_{fwd,bwd}_{eff_max,half_seq}, from "attn" points */
  HS_FIT_GEMM_SUSTAINED = 1u << 6 /* gemm_sustained_eff, from "gemm_sustained_source" */
};

void hs_measurements_init(hs_measurements_t *m);
void hs_measurements_destroy(hs_measurements_t *m);
hs_status_t hs_measurements_add(hs_measurements_t *m, const hs_mb_point_t *p);
struct cJSON *hs_measurements_to_json(const hs_measurements_t *m);
hs_status_t hs_measurements_parse(const char *text, const char *file, hs_measurements_t *out,
                                  hs_error_t *err);
hs_status_t hs_measurements_load(const char *path, hs_measurements_t *out, hs_error_t *err);
/* Copies the GPU's name and peaks into m (before adding points). */
void hs_measurements_set_gpu(hs_measurements_t *m, const hs_gpu_t *g);

typedef struct hs_microbench_opts {
  int32_t repeats;        /* timed runs per point (median), default 5 */
  int32_t threads;        /* CPU: virtual devices replayed at once (default 2): the
                           * GEMM grid and memory loop run on that many threads
                           * together (at most one per core), p2p points on two */
  bool quick;             /* smaller grid (tests) */
  hs_clock_t clock;       /* CPU backend: as hs_replay_opts_t (default HS_CLOCK_CPU) */
} hs_microbench_opts_t;
void hs_microbench_opts_init(hs_microbench_opts_t *o);
/* CPU microbenchmarks: sgemm over a shape grid and memory-bound loops over
 * sizes, each point timed on o->threads threads at once (a point's time is
 * their mean), then copies between two threads' buffers over message sizes. */
hs_status_t hs_microbench_cpu(const hs_microbench_opts_t *o, hs_measurements_t *out, hs_error_t *err);
/* CUDA microbenchmarks (cuBLAS GEMM grid per dtype, device memory copies,
 * host-device copies; NCCL p2p/all-reduce with two or more ranks). */
hs_status_t hs_microbench_cuda(const hs_microbench_opts_t *o, hs_measurements_t *out,
                               bool *is_root, hs_error_t *err);

/* The fitted profile. The compute model (sim/compute.c) is linear in the
 * work once launch is known: t_mem(B) = launch + B / (bw mem_eff) and
 * t_gemm(F) = launch + (F + gemm_half_flops) / (peak gemm_eff_max), so both
 * are weighted linear least squares (GSL, weights 1/t^2: relative errors).
 * Links: alpha-beta t = alpha + B / beta over the p2p points. */
typedef struct hs_fit {
  hs_dtype_t dtype;       /* GEMM dtype fitted */
  double launch_us;
  double mem_eff;
  double gemm_eff_max;
  double gemm_half_flops;
  double gemm_out_k;      /* "shape" fits only; 0 otherwise */
  double gemm_sustained_eff; /* HS_FIT_GEMM_SUSTAINED only; 0 otherwise */
  int32_t n_gemm_sustained;
  /* fused attention (HS_FIT_ATTN): eff(s) = eff_max s / (s + half_seq) of
   * the bf16 peak, each direction fitted on its causal points (or, with
   * fewer than 2, its non-causal ones; *_causal says which) */
  double attn_fwd_eff_max, attn_fwd_half_seq, attn_bwd_eff_max, attn_bwd_half_seq;
  bool attn_fwd_causal, attn_bwd_causal;
  int32_t n_attn_fwd, n_attn_bwd;
  double attn_median_rel_err, attn_max_rel_err; /* of the rate, over the fitted points */
  int32_t n_gemm, n_mem, n_p2p;
  double gemm_r2, mem_r2, p2p_r2;
  double gemm_median_rel_err, gemm_max_rel_err;
  double mem_median_rel_err, mem_max_rel_err;
  double p2p_latency_us, p2p_GBps;
  double p2p_median_rel_err;
  bool clamped;           /* a parameter hit its bound (see warnings) */
  uint32_t fitted;        /* HS_FIT_* bits the points determined (a "max" fit leaves the
                           * size terms out; they are 0 here and absent from the profile) */
} hs_fit_t;

/* Fits the profile of `ms` at GEMM dtype `dt` (falls back to any GEMM dtype
 * present when none at dt). A line fit needs >= 2 points of distinct sizes
 * of its kind, a "max" fit >= 1; fewer is HS_EINVAL naming the kind.
 * O(points). */
hs_status_t hs_calibrate_fit(const hs_measurements_t *ms, hs_dtype_t dt, hs_fit_t *out,
                             hs_error_t *err);
/* Profile JSON that hs_profile_apply_file reads, with the fit quality under
 * "fit". */
struct cJSON *hs_profile_to_json(const hs_measurements_t *ms, const hs_fit_t *f);
/* The speed probe's calibration time in profile `path` for GPU `gpu`
 * (gpus[].fit.speed_probe_s); *probe_s = 0 when the entry has none. A
 * present but invalid value is HS_EINVAL naming the file and the field. */
hs_status_t hs_profile_speed_probe(const char *path, const char *gpu, double *probe_s,
                                   hs_error_t *err);

/* ---- compare --------------------------------------------------------------------- */

/* What `validate` needs of a simulator report (report.json). */
typedef struct hs_report_view {
  double iteration_time_s;
  hs_meas_stage_t *stages;  /* owned: pipeline, stage, predicted fwd_s/bwd_s in fwd_s/bwd_s */
  int32_t n_stages;
  /* stage 0 of pipeline 0 (rank 0's): compute, exposed communication, idle
   * per iteration; negative when the report has none */
  double compute_s, comm_exposed_s, idle_s;
} hs_report_view_t;
void hs_report_view_init(hs_report_view_t *r);
void hs_report_view_destroy(hs_report_view_t *r);
hs_status_t hs_report_view_parse(const char *text, const char *file, hs_report_view_t *out,
                                 hs_error_t *err);

typedef struct hs_cmp_row {
  char what[48];            /* "iteration", "stage 0 fwd", "kind gemm", ... */
  double predicted_s, measured_s;
  double error;             /* (predicted - measured) / measured */
  int32_t count;
  double q1_s, q3_s;        /* measured interquartile range; 0 when one value */
} hs_cmp_row_t;

/* Median and quartiles (GSL, linear interpolation between order statistics)
 * of n values. */
typedef struct hs_spread {
  int32_t n;
  double median, q1, q3, min, max;
} hs_spread_t;
/* O(n log n); n == 0 gives zeros. HS_ENOMEM when the sorted copy cannot be
 * made. */
hs_status_t hs_spread_of(const double *v, size_t n, hs_spread_t *out);

typedef enum { HS_VERDICT_NONE, HS_VERDICT_OK, HS_VERDICT_OFF } hs_verdict_t;
const char *hs_verdict_name(hs_verdict_t v); /* "none", "ok", "off" */

typedef struct hs_comparison {
  hs_cmp_row_t *rows;       /* owned */
  int32_t n;
  double iteration_error;   /* signed relative, against the median iteration */
  double gemm_median_abs_error; /* median over GEMM kernels of |error| */
  double kernel_median_abs_error;
  /* spread: every measured iteration of every run pooled, and the runs'
   * medians (n_runs > 1) */
  hs_spread_t iterations;
  int32_t n_runs;
  hs_spread_t run_medians;
  /* (predicted - q3)/q3 .. (predicted - q1)/q1 of the pooled iterations */
  double error_lo, error_hi;
  double tolerance;         /* relative; the verdict's */
  /* machine speed (CPU replays whose profile carries the speed probe): the
   * median over runs of replay probe / calibration probe, and the iteration
   * error with the prediction scaled by it; speed_ratio 0 when unknown.
   * The verdict stays on the unscaled error. */
  double speed_ratio;
  double iteration_error_speed_adjusted;
  hs_verdict_t verdict;     /* ok: |iteration_error| <= tolerance or the
                             * prediction inside the measured IQR; none: no
                             * prediction */
} hs_comparison_t;
void hs_comparison_init(hs_comparison_t *c);
void hs_comparison_destroy(hs_comparison_t *c);
/* Rows: the iteration (report against measured median; no prediction when
 * rep is NULL or the record is one stage replayed alone), per stage fwd/bwd
 * per microbatch (report's, else the recorded kernel sums), per op kind
 * (sums of kernel medians), per task kind. O(kernels + tasks + stages). */
hs_status_t hs_compare(const hs_report_view_t *rep, const hs_measured_t *meas,
                       hs_comparison_t *out, hs_error_t *err);
/* The same over n repeated runs of one configuration: the iteration row and
 * the spread pool every run's iterations (a run without iterations_s counts
 * its iteration_time_s once); stage, kernel and task rows are the first
 * run's. tolerance <= 0 takes 0.1. O(n x (kernels + tasks + iterations log
 * iterations)). */
hs_status_t hs_compare_runs(const hs_report_view_t *rep, const hs_measured_t *const *runs,
                            int32_t n, double tolerance, hs_comparison_t *out, hs_error_t *err);
/* One line a script can read:
 * "verdict: ok iteration error +3.1% (IQR -2.0%..+5.3%, 12 iterations, 1 run, tolerance 10%)" */
void hs_comparison_print_verdict(const hs_comparison_t *c, FILE *out);
void hs_comparison_print(const hs_comparison_t *c, FILE *out);
struct cJSON *hs_comparison_to_json(const hs_comparison_t *c);
/* Chrome trace with both timelines: the simulator's trace (if sim_trace_text
 * is not NULL) and the measured tasks as processes "measured dev N". */
hs_status_t hs_compare_trace_write(const char *sim_trace_text, const hs_measured_t *meas,
                                   const char *path, hs_error_t *err);

/* Median of v[0..n) (sorts a copy); 0 for n == 0. */
double hs_median(const double *v, size_t n);

/* ---- published validation suite (validate/published/) ------------------------ */

/* End-to-end training runs from public sources, simulated row by row and
 * compared with the published figure. Validation only: nothing here feeds a
 * fit or a default (docs/validation.md). */
typedef enum {
  HS_PUB_HW_TFLOPS,   /* TFLOP/s per GPU counting recomputation (Megatron's formula) */
  HS_PUB_TFLOPS,      /* model TFLOP/s per GPU, no recomputation */
  HS_PUB_MFU,         /* model FLOPs utilisation, 0..1 */
  HS_PUB_ITERATION_S  /* seconds per iteration */
} hs_pub_metric_t;
const char *hs_pub_metric_name(hs_pub_metric_t m);

/* A run's framework options as the source states them. Which of them the
 * simulator models is decided in one place, hs_pub_options_map. */
typedef struct hs_pub_options {
  hs_recompute_t recompute;
  char kernels[24];            /* "" = the default preset (megatron-2021) | a hs_kernel_presets name */
  char attention[16];          /* "" = the preset's | "unfused" | "flash" */
  bool sequence_parallel;
  int32_t zero_stage;          /* 0..3; Megatron's distributed optimizer = 1 */
  char precision[8];           /* "" = the model's dtype; bf16|fp16|fp32|fp8 */
  bool tp_comm_overlap;
  bool dp_overlap;             /* default true; false: gradients reduced after the flush */
  int32_t context_parallel;    /* 1 = none */
  int32_t expert_parallel;     /* 1 = none */
  char fsdp_param_dtype[8];    /* "" = the precision's weights; FSDP all-gather dtype */
  bool fsdp_backward_post;     /* FSDP backward_prefetch BACKWARD_POST (default PRE) */
  bool fsdp_shard_grad_op;     /* zero_stage 2 as FSDP SHARD_GRAD_OP (forward gathers) */
  hs_grad_accum_t grad_accum;  /* default fused: no per-microbatch accumulation pass */
  bool grad_reduce_fp32;       /* grad_reduce_dtype "fp32" (default "default") */
  hs_framework_t framework;    /* host overheads (sim/host.c); default none */
} hs_pub_options_t;
void hs_pub_options_init(hs_pub_options_t *o);

/* What the simulator is given for a row: the grid options simulate's
 * --tp/--pp/... flags build (hs_plan_grid) plus the plan fields set after. */
typedef struct hs_pub_setup {
  hs_grid_opts_t grid;         /* grid.practice: kernels, SP, ZeRO stage, overlaps */
  bool set_precision;          /* plan.precision = precision */
  hs_dtype_t precision;
} hs_pub_setup_t;
/* Maps the row's options onto the simulator: fills `s` (whose grid tp/pp/dp
 * etc. the caller has set) and returns NULL, or returns the first option the
 * simulator does not model (none today: every option of hs_pub_options_t
 * is), a static string; then the row is reported as not modelled and left
 * out of the error statistics. O(1). */
const char *hs_pub_options_map(const hs_pub_options_t *o, hs_pub_setup_t *s);

typedef struct hs_pub_row {
  char name[64];
  char source[256];            /* where in the source the row is ("Table 1, row 3") */
  char *model_json;            /* owned: hetsim model JSON text of this row */
  char *model_over_json;       /* owned: the row's "model" keys as JSON text ("{}" when none):
                                  rows with equal texts run one model (a plan choice) */
  char *cluster_json;          /* owned: cluster JSON text of this row */
  int32_t tp, pp, dp, microbatch, chunks;
  int64_t global_batch;
  char schedule[24];           /* "1f1b" | "interleaved-1f1b" | "gpipe" */
  int32_t *stage_layers;       /* owned, optional: blocks per virtual stage (pp x chunks
                                  entries, hs_grid_opts_t.stage_layers); NULL = even split */
  int32_t n_stage_layers;
  bool async_send;             /* plan.async_send: p2p sends overlap compute */
  hs_pub_options_t opt;
  double measured;             /* in the table's metric; 0 when measured_oom */
  bool measured_oom;           /* "measured": "out_of_memory": the run did not fit */
  int32_t *placement;          /* owned, optional: device of grid rank r (DeepSpeed's and
                                  hs_plan_grid's rank order), a permutation of the
                                  cluster's devices; NULL = rank r on device r */
  int32_t n_placement;
  char not_modelled[256];      /* the file's reason to leave the row out of the
                                  statistics unsimulated ("" = simulate it) */
} hs_pub_row_t;

typedef struct hs_pub_table {
  char name[64];
  char title[256];
  char source[512];            /* paper / repo@commit, as cited */
  char date[16];               /* YYYY, YYYY-MM or YYYY-MM-DD */
  char file[256];              /* basename of the row file */
  hs_pub_metric_t metric;
  double max_mape;             /* CI bound on the table's MAPE (fraction); 0 = none yet */
  double min_rank_concordance; /* CI bound on concordant_resolved / pairs_resolved */
  double min_oom_predicted;    /* CI bound on the share of rows measured out of memory
                                  that are predicted so (default 1: all) */
  hs_pub_row_t *rows;          /* owned */
  int32_t n_rows;
} hs_pub_table_t;
void hs_pub_table_init(hs_pub_table_t *t);
void hs_pub_table_destroy(hs_pub_table_t *t);   /* NULL and zeroed ok */
/* Reads a row file (validate/published/<table>.json, format in docs/validation.md);
 * bad input names the file, the field (rows[i].plan.tp ...) and the value.
 * `out` owns the row texts; free with hs_pub_table_destroy. O(rows x size of
 * the model and cluster templates). */
hs_status_t hs_pub_table_parse(const char *text, const char *file, hs_pub_table_t *out,
                               hs_error_t *err);
hs_status_t hs_pub_table_load(const char *path, hs_pub_table_t *out, hs_error_t *err);
/* The row files of `path`: the file itself, or the directory's *.json sorted
 * by name. Caller frees with hs_pub_paths_free. */
hs_status_t hs_pub_paths(const char *path, char ***out, int32_t *n, hs_error_t *err);
void hs_pub_paths_free(char **paths, int32_t n);

typedef struct hs_pub_result {
  const char *not_modelled;    /* static, or the row's own reason (lives as long
                                  as the table); NULL when simulated */
  bool infeasible;             /* simulated, out of memory: no figure */
  int32_t n_gpus;
  double predicted;            /* in the table's metric */
  double err;                  /* (predicted - measured) / measured */
} hs_pub_result_t;

/* Rank order: over pairs of simulated rows, the predicted order must agree
 * with the measured one; pairs whose measured figures differ by less than
 * HS_PUB_RANK_RESOLUTION (relative) are counted but do not decide, since a
 * 1% difference between two published runs is within their own noise. */
#define HS_PUB_RANK_RESOLUTION 0.05
typedef struct hs_pub_summary {
  int32_t n_rows, n_simulated, n_not_modelled, n_infeasible;
  double mape;                 /* mean |err| over simulated rows */
  double max_abs_err;
  int32_t pairs, concordant;   /* all pairs with distinct measured figures */
  int32_t pairs_resolved, concordant_resolved;
  bool rank_preserved;         /* concordant_resolved == pairs_resolved */
  /* n_infeasible above: rows that ran but are predicted out of memory */
  int32_t n_measured_oom;      /* simulated rows measured out of memory (not in n_simulated) */
  int32_t n_oom_predicted;     /* of those, predicted out of memory too */
  double spearman;             /* hs_pub_spearman over rows simulated, run and fitting; NAN if undefined */
  double regret;               /* hs_pub_regret over the simulated rows when they are all of
                                  one model (plans of one job); NAN otherwise or if undefined */
  int32_t top_pick, measured_best; /* row indices hs_pub_regret chose, -1 none */
} hs_pub_summary_t;

/* Spearman rank correlation of x[0..n) and y[0..n): Pearson correlation of
 * their ranks, tied values getting the mean of the ranks they span. NAN
 * when n < 2 or either side is constant. O(n^2), n = table rows. */
double hs_pub_spearman(const double *x, const double *y, int32_t n);
/* Top-pick regret of a planner trusting the predictions: the row with the
 * best prediction among those predicted to fit (pred[i] finite; ties go to
 * the worst measured, so a tie never flatters), against the best measured
 * row (meas[i] finite; NAN = the run did not fit). In time: measured time
 * of the pick / best measured time - 1 (metric lower_is_better), or best /
 * pick - 1 for a throughput. INFINITY when the pick itself did not fit; NAN
 * when no row is both predicted and measured. *pick, *best: row indices or
 * -1. O(n). */
double hs_pub_regret(const double *pred, const double *meas, int32_t n, bool lower_is_better,
                     int32_t *pick, int32_t *best);

/* Simulates every row of `t` (res[t->n_rows], caller-allocated) and fills
 * the summary. A row whose plan or model the simulator rejects is an error
 * naming the file and the row. Time: one simulation per modelled row. */
hs_status_t hs_pub_run(const hs_pub_table_t *t, hs_pub_result_t *res, hs_pub_summary_t *sum,
                       hs_error_t *err);
/* Text table of the rows and the summary lines. O(rows). */
void hs_pub_print(const hs_pub_table_t *t, const hs_pub_result_t *res, const hs_pub_summary_t *sum,
                  FILE *f);
/* {"table", "title", "source", "metric", "mape", ..., "rows": [...]}; NULL
 * when out of memory. Caller frees with hs_json_free. O(rows). */
struct cJSON *hs_pub_to_json(const hs_pub_table_t *t, const hs_pub_result_t *res,
                             const hs_pub_summary_t *sum);

/* ---- fitted framework overheads (validate/published_cv.c) -------------------
 * The host-overhead parameters (sim/host.c) fitted on a declared training
 * split of the suite, with leave-one-table-out errors. */
enum { HS_PUB_FAMILY_MEGATRON = 0, HS_PUB_FAMILY_DEEPSPEED, HS_PUB_FAMILY_FSDP, HS_PUB_FAMILIES };
/* The engine family of a framework preset (its microbatch_us), -1 for none. */
int hs_pub_family(hs_framework_id_t id);
const char *hs_pub_family_name(int family);   /* "megatron", ...; "none" for -1 */

/* validate/published-fit.json: {"schema_version": 1, "train": [table names],
 * "held_out": [...], "dispatch_us": [grid], "microbatch_us": [grid]}. */
typedef struct hs_pub_fit_spec {
  char **train;
  int32_t n_train;
  double *dispatch_us, *microbatch_us;   /* increasing, in [0, 1e6] */
  int32_t n_dispatch, n_microbatch;
} hs_pub_fit_spec_t;
hs_status_t hs_pub_fit_spec_parse(const char *text, const char *file, hs_pub_fit_spec_t *out,
                                  hs_error_t *err);
void hs_pub_fit_spec_destroy(hs_pub_fit_spec_t *s);
bool hs_pub_fit_spec_trains(const hs_pub_fit_spec_t *s, const char *table);

/* Sets every row's framework dispatch_us and its family's microbatch_us
 * (rows whose framework is none are left alone). */
void hs_pub_set_host(hs_pub_table_t *t, double dispatch_us, const double *microbatch_us);

/* Every training table's MAPE at every grid point (NAN for held-out tables). */
typedef struct hs_pub_cv {
  int32_t n_tables, n_dispatch, n_microbatch;
  int *family;                  /* per table: hs_pub_family of its rows, -1 none */
  bool *train;                  /* per table: in the training split */
  double *mape;                 /* [table][dispatch][microbatch] */
} hs_pub_cv_t;
/* Simulates the training tables over the grid on `jobs` threads (each
 * cell on a private copy of the rows; the same result for any jobs).
 * Errors: a train name not in `tables`, a table mixing families, the
 * simulator's (the first in cell order). O(training tables x grid x rows). */
hs_status_t hs_pub_cv_eval(const hs_pub_table_t *tables, int32_t n_tables, const hs_pub_fit_spec_t *s,
                           int32_t jobs, hs_pub_cv_t *cv, hs_error_t *err);
void hs_pub_cv_destroy(hs_pub_cv_t *cv);
/* MAPE of each table t with which[t] at one point (dispatch_us, the
 * families' microbatch_us), on `jobs` threads; mape[t] NAN when the table
 * simulates no row; other entries untouched. */
hs_status_t hs_pub_run_at(const hs_pub_table_t *tables, int32_t n_tables, const bool *which,
                          double dispatch_us, const double *microbatch_us, int32_t jobs,
                          double *mape, hs_error_t *err);
typedef struct hs_pub_fit {
  int32_t dispatch_idx;
  int32_t microbatch_idx[HS_PUB_FAMILIES];
  double objective;             /* mean MAPE over the fitted tables */
  int32_t n_tables;             /* tables fitted on */
} hs_pub_fit_t;
/* The grid point of least mean MAPE over the training tables but
 * `leave_out` (-1: none); ties to the smaller values. O(grid x tables). */
void hs_pub_cv_fit(const hs_pub_cv_t *cv, int32_t leave_out, hs_pub_fit_t *out);
/* Table t's MAPE at the fit's grid point. */
double hs_pub_cv_table_mape(const hs_pub_cv_t *cv, int32_t t, const hs_pub_fit_t *fit);
/* ---- importers (docs/import.md) ---------------------------------------------- */

/* nccl-tests collectives, named as the binaries (all_reduce_perf, ...). */
typedef enum {
  HS_NT_ALL_REDUCE,
  HS_NT_ALL_GATHER,
  HS_NT_REDUCE_SCATTER,
  HS_NT_ALLTOALL,
  HS_NT_SENDRECV,
  HS_NT__COUNT
} hs_nt_coll_t;
/* "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv". */
const char *hs_nt_coll_name(hs_nt_coll_t c);
/* Accepts those names, with or without "_perf", and without underscores. */
hs_status_t hs_nt_coll_parse(const char *s, hs_nt_coll_t *out);
/* nccl-tests' busbw/algbw factor: 2(n-1)/n all-reduce, (n-1)/n all-gather,
 * reduce-scatter and alltoall, 1 sendrecv. */
double hs_nt_busbw_factor(hs_nt_coll_t c, int32_t nranks);

/* One row of the table: out-of-place [0] and in-place [1]. */
typedef struct hs_nt_row {
  double size_bytes;
  int64_t count;
  char type[16], redop[16];
  int32_t root;
  double time_us[2], algbw_GBps[2], busbw_GBps[2];
  int64_t wrong[2];         /* -1: "N/A" (run with -c 0) */
  int32_t line;             /* 1-based line in the file */
} hs_nt_row_t;

typedef struct hs_nccl_tests {
  char file[128];
  hs_nt_coll_t coll;
  int32_t nranks;           /* from the rank lines, the options or busbw/algbw */
  int32_t n_nodes;          /* distinct hosts of the rank lines; 0 = unknown */
  int32_t gpus_per_node;    /* 0 = unknown */
  char gpu_name[96];        /* device name of the rank lines ("NVIDIA H200"); "" when absent */
  hs_nt_row_t *rows;        /* owned */
  int32_t n_rows;
  int algo;                 /* hs_nt_algo_t: --algo, else NCCL_ALGO in the file (an "NCCL_ALGO=X"
                               line or NCCL INFO's "NCCL_ALGO set by environment to X"), else
                               HS_NT_ALGO_DEFAULT (the simulator's size-independent choice) */
} hs_nccl_tests_t;
/* The algorithm NCCL ran (NCCL_ALGO): default (unset: ring inside a node,
 * node_ring across), ring, tree (node_tree across nodes), nvls (nvls_tree
 * across nodes). */
typedef enum { HS_NT_ALGO_DEFAULT, HS_NT_ALGO_RING, HS_NT_ALGO_TREE, HS_NT_ALGO_NVLS } hs_nt_algo_t;
/* "default", "ring", "tree", "nvls". */
const char *hs_nt_algo_name(int a);
/* Ring, Tree, NVLS, NVLSTree (NCCL's spellings, any case); HS_EINVAL for
 * anything else (lists, "^" exclusions, CollNet, PAT). */
hs_status_t hs_nt_algo_parse(const char *s, int *out);

/* What the header may not say. coll -1, nranks 0, gpus_per_node 0: infer. */
typedef struct hs_nt_opts {
  int coll;
  int32_t nranks;
  int32_t gpus_per_node;
  int32_t nic_rails;      /* NICs per node of the multi-node files (0 or 1: one NIC); the nic
                             link is fitted with NCCL's rail rotation (coll_node_ring.c) */
  int algo;               /* hs_nt_algo_t, --algo; HS_NT_ALGO_DEFAULT: the file's NCCL_ALGO */
  bool gpu_given;         /* --gpu given: a header without device lines lacks nothing */
} hs_nt_opts_t;
void hs_nt_opts_init(hs_nt_opts_t *o);

void hs_nccl_tests_init(hs_nccl_tests_t *t);
void hs_nccl_tests_destroy(hs_nccl_tests_t *t);
/* Parses nccl-tests output (stdout, optionally with mpirun "[1,0]<stdout>:"
 * prefixes and NCCL INFO lines mixed in). The collective comes from o->coll,
 * else the file name (all_gather_perf.txt), else the table (redop and
 * count x type size against size); nranks from the rank lines when they are
 * all there, else o->nranks, else busbw/algbw. Every row's busbw must equal
 * its algbw times the collective's factor to the printed rounding, which
 * checks the collective and nranks. Errors name `file`, the line and what
 * was expected. O(file size). */
hs_status_t hs_nccl_tests_parse(const char *text, const char *file, const hs_nt_opts_t *o,
                                hs_nccl_tests_t *out, hs_error_t *err);
hs_status_t hs_nccl_tests_load(const char *path, const hs_nt_opts_t *o, hs_nccl_tests_t *out,
                               hs_error_t *err);

/* Alpha-beta fit of one file and what the simulator predicts for it. */
typedef struct hs_nt_fit {
  double latency_us;        /* intercept of t = a + S b (out-of-place times, sizes > 0) */
  double busbw_GBps;        /* factor / b: the asymptotic bus bandwidth */
  double r2, median_rel_err, max_rel_err;
  int32_t n_points;
  const char *sets;         /* "intra_node", "nic" or NULL: the links this fit set */
  double *pred_time_us;     /* owned, per row: the simulator's estimate with the links */
  double *pred_busbw_GBps;  /* owned, per row */
} hs_nt_fit_t;

/* The links the import sets, per GPU type, in the cluster-file units. */
typedef struct hs_nt_links {
  char gpu[HS_NAME_MAX];    /* GPU catalog name */
  bool has_intra, has_nic;
  double intra_GBps, intra_latency_us;
  double nic_GBps, nic_latency_us;
  int32_t nic_rails;        /* the opts' nic_rails the nic link was fitted with (>= 1) */
  /* Per size range (where NCCL's protocol changes the line), found from
   * the data: every size of the fitted file within its range's line; n 0:
   * one line (the fields above) at every size (fit_ranges). */
  hs_link_ranges_t intra_ranges, nic_ranges;
} hs_nt_links_t;

typedef struct hs_nt_import {
  hs_nccl_tests_t *files;   /* owned, n_files */
  hs_nt_fit_t *fits;        /* owned, one per file */
  int32_t n_files;
  hs_nt_links_t links;
} hs_nt_import_t;
void hs_nt_import_init(hs_nt_import_t *im);
void hs_nt_import_destroy(hs_nt_import_t *im);

/* `hetsim import nccl-tests`: loads every file, fits each (weighted least
 * squares as calibrate), then sets the links of GPU type `gpu` (a catalog
 * name; NULL: matched from the files' device names) so that the simulator's
 * own collective model (hs_coll_estimate_s on a one-site cluster of the
 * files' nodes) reproduces the fitted line: single-node files set
 * intra_node, multi-node files nic (all-reduce first; the other files are
 * predicted with those links, not fitted). All files must be of one GPU
 * type. O(files x rows + 200 estimates). */
hs_status_t hs_nt_import(const char *const *paths, int32_t n, const hs_nt_opts_t *o,
                         const char *gpu, hs_nt_import_t *out, hs_error_t *err);
/* Sets the links on every node of cluster `c` whose GPU is links->gpu (what
 * a profile with them does). Returns the number of nodes changed. O(nodes). */
int32_t hs_nt_links_apply(const hs_nt_links_t *links, hs_cluster_t *c);
/* Profile JSON (sim/profile_json.c reads "gpus[].intra_node/nic"; the fits
 * and per-size predictions go under "nccl_tests"). NULL when out of memory. */
struct cJSON *hs_nt_import_to_json(const hs_nt_import_t *im);
/* The predicted-against-measured table, per file, in nccl-tests' units. */
void hs_nt_import_print(const hs_nt_import_t *im, FILE *out);

/* Re-fits one interconnect of clusters/links.json from its stored nccl-tests
 * files (`calib_dir`/fit_files[i]; NULL: hs_data_dir()/clusters/calibration)
 * with hs_nt_import (GPU l->fit_gpu, ranks and hosts from the files' rank
 * lines) and returns the link of l->scope the import set in *GBps and
 * *latency_us; `im` (initialised by the call, destroyed by the caller) keeps
 * the per-file fits and predictions. An uncalibrated entry, or files that set
 * no link of that scope, is HS_EINVAL naming the entry. */
hs_status_t hs_link_refit(const hs_interconnect_t *l, const char *calib_dir, hs_nt_import_t *im,
                          double *GBps, double *latency_us, hs_error_t *err);

/* A published bus-bandwidth table (validate/busbw_table.c: size and busbw
 * per row, as benchmark reports print them, no times). */
typedef struct hs_busbw_table {
  char file[256];
  hs_nt_coll_t coll;
  char algorithm[16]; /* "nvls", "ring", "tree" or "default" */
  int32_t nranks;
  char gpu[64];
  double *size_bytes, *busbw_GBps; /* owned, n rows, sizes increasing */
  int32_t n;
} hs_busbw_table_t;
void hs_busbw_table_init(hs_busbw_table_t *t);
void hs_busbw_table_destroy(hs_busbw_table_t *t);
/* Errors name the file, the line and the value (HS_EINVAL). O(size). */
hs_status_t hs_busbw_table_parse(const char *text, const char *file, hs_busbw_table_t *t,
                                 hs_error_t *err);
hs_status_t hs_busbw_table_load(const char *path, hs_busbw_table_t *t, hs_error_t *err);
/* Row i's time (s): size x nccl-tests' busbw factor / busbw. */
double hs_busbw_table_time_s(const hs_busbw_table_t *t, int32_t i);

/* NCCL's NVLS all-reduce fitted on a table (rows of at least min_bytes) with
 * the model of sim/coll_nvls.c: per-port rate and fixed cost. */
typedef struct hs_nvls_fit {
  double GBps, latency_us;
  double med_rel, max_rel; /* |line - t| / t over the fitted rows */
  int32_t n_rows;
} hs_nvls_fit_t;
hs_status_t hs_nvls_fit(const hs_busbw_table_t *t, double min_bytes, hs_nvls_fit_t *out,
                        hs_error_t *err);
/* Re-fits an interconnect's nvls_GBps / nvls_latency_us from its nvls_fit
 * file (`calib_dir`/file; NULL: hs_data_dir()/clusters/calibration); *t is
 * initialised by the call and destroyed by the caller. */
hs_status_t hs_link_refit_nvls(const hs_interconnect_t *l, const char *calib_dir, hs_busbw_table_t *t,
                               hs_nvls_fit_t *out, hs_error_t *err);

/* A measured training run with what is needed to simulate it: run.json,
 * written by `hetsim import megatron-log`, read by `hetsim validate --run`. */
typedef struct hs_run_plan {
  int32_t tp, pp, dp;
  int32_t microbatch_size;
  int64_t global_batch;
  int32_t chunks;               /* > 1: interleaved-1f1b */
  hs_recompute_t recompute;
  bool distributed_optimizer;   /* -> plan.optimizer_sharding */
  bool sequence_parallel;       /* recorded; the simulator does not model it */
  int32_t first_stage_layers;   /* Megatron's --decoder-first/last-pipeline-num-layers: blocks */
  int32_t last_stage_layers;    /* of the first / last stage; 0 = the even share */
} hs_run_plan_t;

typedef struct hs_run {
  char source[256];
  hs_transformer_cfg_t model;   /* the generator parameters */
  hs_run_plan_t plan;
  int32_t world_size;
  hs_measured_t measured;       /* backend "megatron-log"; iterations_s = logged lines */
  double *tflops_per_gpu;       /* owned, per kept logged line; n_tflops 0 when not logged */
  int32_t n_tflops;
  double params_rank0;          /* "number of parameters on (tensor, pipeline) model parallel
                                 * rank (0, 0): N"; 0 when not logged */
} hs_run_t;
void hs_run_init(hs_run_t *r);
void hs_run_destroy(hs_run_t *r);

typedef struct hs_megatron_opts {
  int32_t skip;                 /* logged iteration lines dropped first (warm-up), default 1 */
  int32_t run;                  /* 1-based run of a restarted log (one arguments block per
                                 * start); 0 (default): the log must hold exactly one run */
  /* Megatron's arguments given by the caller (import megatron-log --model,
   * --tp, --pp, --dp, --micro-batch-size, --global-batch-size): the run's
   * model and plan when the log has no arguments block (all needed); when
   * it has one, a given value that disagrees with it is refused naming both.
   * 0 / NULL: not given. model is not owned. */
  const hs_transformer_cfg_t *model;
  int32_t tp, pp, dp, microbatch_size;
  int64_t global_batch;
} hs_megatron_opts_t;
void hs_megatron_opts_init(hs_megatron_opts_t *o);

/* `hetsim import megatron-log`: reads the arguments block ("---- arguments
 * ----" .. "---- end of arguments ----": tensor/pipeline/data parallel sizes,
 * micro and global batch, seq_length, num_layers, hidden_size,
 * num_attention_heads, ffn_hidden_size, padded_vocab_size, ...) and the
 * iteration lines ("iteration N/ M | ... elapsed time per iteration (ms): X |
 * ... throughput per GPU (TFLOP/s/GPU): Y |"). Each line's time is
 * Megatron's average over its log_interval iterations. Errors name `file`,
 * the line and what was expected (a missing argument names the key and the
 * block's lines). A restarted job appends a second arguments block: each
 * block starts a run, the lines up to the next block belong to it; a log of
 * several runs is refused (naming how many and the blocks' lines) unless
 * o->run picks one. A key twice in one block is refused naming both lines.
 * O(file size). */
hs_status_t hs_megatron_log_parse(const char *text, const char *file, const hs_megatron_opts_t *o,
                                  hs_run_t *out, hs_error_t *err);
hs_status_t hs_megatron_log_load(const char *path, const hs_megatron_opts_t *o, hs_run_t *out,
                                 hs_error_t *err);
/* run.json: {"source", "model": {"name", "transformer": {...}} (a hetsim model
 * file), "plan": {...}, "world_size", "measured": {measured.json},
 * "tflops_per_gpu": [...]}. NULL when out of memory. */
struct cJSON *hs_run_to_json(const hs_run_t *r);
hs_status_t hs_run_parse(const char *text, const char *file, hs_run_t *out, hs_error_t *err);
hs_status_t hs_run_load(const char *path, hs_run_t *out, hs_error_t *err);
/* Simulates run `r` on cluster `c`: the model from r->model, a Megatron grid
 * plan (hs_plan_grid: tp, pp, dp, micro and global batch, interleaved-1f1b
 * when chunks > 1, recompute; optimizer sharding when the distributed
 * optimizer was on) over the cluster's first tp x pp x dp devices. The
 * caller destroys *m and *rep. Errors: a cluster with fewer devices than the
 * run's world size (HS_EINVAL naming both), the plan's validation. */
hs_status_t hs_run_simulate(const hs_run_t *r, const hs_cluster_t *c, hs_model_t *m,
                            hs_report_t *rep, hs_error_t *err);
/* The report view of a simulator report (for hs_compare after hs_simulate).
 * HS_ENOMEM only. */
hs_status_t hs_report_view_from_report(const hs_report_t *rep, hs_report_view_t *out);

/* ---- torch-profiler import -------------------------------------------------- */

#define HS_TP_MAX_INPUTS 6
typedef enum { HS_TPE_OTHER, HS_TPE_CPU_OP, HS_TPE_KERNEL, HS_TPE_STEP, HS_TPE_GPU_STEP,
               HS_TPE_MEMCPY } hs_tp_kind_t;

/* One complete ("ph": "X") event of a Kineto Chrome trace. */
typedef struct hs_tp_event {
  char name[96];
  hs_tp_kind_t kind;
  int64_t pid, tid;             /* numbers, or a hash of the string form */
  double ts_us, dur_us;
  int64_t ext_id;               /* args "External id"; -1 when absent */
  int32_t n_inputs;             /* args "Input Dims" (record_shapes) */
  int32_t rank[HS_TP_MAX_INPUTS];
  int64_t dims[HS_TP_MAX_INPUTS][4];
  double numel[HS_TP_MAX_INPUTS];
  int32_t elsize[HS_TP_MAX_INPUTS]; /* bytes per element from "Input type"; 0 not a tensor */
  char type0[24];               /* "Input type" of the first tensor input */
  double comm_nelems;           /* "In msg nelems" (c10d ops); 0 when absent */
  int32_t comm_group;           /* "Group size"; 0 when absent */
  int32_t comm_elsize;          /* from "dtype" */
} hs_tp_event_t;

typedef struct hs_torch_trace {
  char file[128];
  char device[128];             /* deviceProperties[0].name, else "cpu: <host_name>" */
  bool record_shapes;
  hs_tp_event_t *ev;            /* owned, in file order */
  int32_t n;
} hs_torch_trace_t;
void hs_torch_trace_init(hs_torch_trace_t *t);
void hs_torch_trace_destroy(hs_torch_trace_t *t);
/* Reads the trace's complete events (validate/import_torch_profiler_json.c).
 * Errors name `file`, the event index and the field. O(events). */
hs_status_t hs_torch_trace_parse(const char *text, const char *file, hs_torch_trace_t *out,
                                 hs_error_t *err);
hs_status_t hs_torch_trace_load(const char *path, hs_torch_trace_t *out, hs_error_t *err);

typedef struct hs_tp_summary {
  int32_t n_steps;
  bool gpu;                     /* kernels present: durations are the kernels' */
  int32_t n_gemm, n_mem, n_comm_points, n_comm_kernels;
  int32_t n_gemm_no_shape;      /* GEMM ops without Input Dims (record_shapes off) */
} hs_tp_summary_t;

/* `hetsim import torch-profiler`: the steps (ProfilerStep#N) become a
 * measured run (iterations_s, and the median per step of compute, exposed
 * communication and idle time: unions of intervals, GPU kernels when the
 * trace has them, else the CPU ops of the step's thread); aten::mm, addmm,
 * bmm and baddbmm with their shapes become GEMM points (duration: their
 * kernels' sum, or the op's on CPU); elementwise and normalisation ops
 * become memory points (bytes: tensor inputs read plus the largest written;
 * fill_/zero_ write only, copy_ reads and writes once); NCCL kernels with
 * the c10d op's message size become allreduce (AllReduce) and p2p
 * (SendRecv) points. Points go into `ms` (caller-initialised; set its GPU
 * first for calibrate), the run into `meas` (initialised here). Needs at
 * least one ProfilerStep; HS_EINVAL naming the file otherwise.
 * first; a step of duration 0 is refused naming it. O(events log events)
 * when the steps do not overlap (each event is looked up, not each step
 * scanned). */
hs_status_t hs_torch_profiler_import(const hs_torch_trace_t *t, hs_measurements_t *ms,
                                     hs_measured_t *meas, hs_tp_summary_t *sum, hs_error_t *err);

#endif /* HS_VALIDATE_H */
