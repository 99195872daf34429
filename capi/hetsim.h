/*
 * hetsim.h - the flat C API of libhetsim.so: what the Python package (and any
 * other language's foreign-function interface) calls, in-process.
 *
 * Why a folder of its own: the facade reaches every layer (models, clusters,
 * sim, search, and notebooks-export for comparisons and sweeps), so it sits
 * at the top of the link order beside cli/; like cli/ it holds no business
 * logic, only handles, option decoding and result encoding. This header is
 * the only one a binding needs: it includes no other hetsim header, and its
 * types are opaque handles, fixed-size structs of plain C types, and
 * NUL-terminated UTF-8 strings.
 *
 * Conventions:
 *  - Every function that can fail takes a caller-owned hs_api_error_t (may be
 *    NULL), returns NULL or a non-zero status on failure, and fills the error
 *    with the library's message, which names the file, the field and the
 *    value ("cluster.json: sites[1].nodes[0].gpu: unknown GPU \"A1OO\"").
 *    Allocation failure is HS_ENOMEM ("out of memory"), never an abort.
 *  - Options travel as one JSON object text (NULL or "" = all defaults);
 *    keys are the CLI's flags in snake case ("microbatch_size" for
 *    --microbatch-size); an unknown key is an error naming it.
 *  - Handles come from _new/_load/_parse/_search functions and are freed by
 *    the matching _free, which accepts NULL. Strings returned as `char *`
 *    are malloc'd: free them with hs_api_free. Handles are independent (a
 *    report does not point into its model), so they may be freed in any
 *    order; none is shared between threads by the library.
 *  - Threads: every function may be called from several threads at once.
 *    Handles passed as const (the model, cluster and plan of
 *    hs_api_simulate, hs_api_plan_grid, hs_api_plan_search,
 *    hs_api_compare_csv, hs_api_whatif, and every accessor) are only read
 *    and may be shared by concurrent calls; a handle must not be freed while
 *    another thread uses it, and an hs_api_error_t belongs to one call. The
 *    process-global state of the libraries underneath is guarded where it
 *    is touched, and nothing else serialises: igraph (not built
 *    thread-safe on Debian; its error handlers and cleanup stack are
 *    globals) is called only by clusters/topology.c, under one mutex, for
 *    the graph and routes each simulation builds (a small part of a call);
 *    GLPK's environment is per thread where GLPK was built with thread-local
 *    storage (Debian's is: glp_config("TLS")), else every LP solve takes one
 *    mutex (search/lp.c); cJSON's allocation hooks are installed once; GSL is
 *    not reached from this API. The workers option of hs_api_sweep_csv and
 *    hs_api_whatif forks processes; the locks above are held across fork()
 *    (pthread_atfork), so a fork while another thread simulates is safe.
 *    python/tests/test_threads.py checks 8 threads x 1,000 simulations
 *    (and compare from 4 more) against the same calls made serially.
 *  - Cost: loaders and parsers are O(input size); hs_api_simulate is one
 *    hs_simulate (O(events log events)); hs_api_plan_search one planner run,
 *    hs_api_compare_csv one per strategy, hs_api_sweep_csv one per sweep
 *    job, hs_api_whatif one per option and strategy; texts are O(their
 *    length); accessors are O(1).
 *  - Results are the bytes the CLI prints: hs_api_report_json is
 *    `hetsim simulate --json`, hs_api_compare_csv is `hetsim compare
 *    --format csv`, hs_api_sweep_csv is `hetsim sweep` (sorted by point),
 *    hs_api_whatif is `hetsim whatif --format csv|json|table`.
 *  - The training-practice options of simulate, plan and compare (keys
 *    kernels, attention, sequence_parallel, tp_comm_overlap, zero_stage,
 *    precision) are those of cli/opt_practice.c: a preset name, "flash" or
 *    "unfused", booleans, 0-3, "bf16"/"fp16"/"fp8"/"fp32"; only the keys
 *    given change the plan (a plan file's own values stay otherwise).
 */
#ifndef HETSIM_H
#define HETSIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a signature or a struct layout here changes. */
#define HS_API_VERSION 1

typedef struct hs_api_error {
  int32_t status;     /* 0 = success, else an hs_status_t value (hs_common.h) */
  int32_t exit_code;  /* what the hetsim CLI exits with for it: 2 bad input, 1 internal */
  char name[32];      /* "HS_EINVAL" */
  char message[1024]; /* one line naming file, field and value */
} hs_api_error_t;

typedef struct hs_api_model hs_api_model_t;
typedef struct hs_api_cluster hs_api_cluster_t;
typedef struct hs_api_plan hs_api_plan_t;
typedef struct hs_api_report hs_api_report_t;

/* HS_API_VERSION of the library actually loaded. */
int32_t hs_api_version(void);
/* Frees a string this API returned; NULL is a no-op. */
void hs_api_free(void *p);

/* ---- models ---------------------------------------------------------------- */

/* `spec`: a catalog name, a hetsim model JSON path or a HuggingFace
 * config.json path; seq_len > 0 replaces the sequence length. */
hs_api_model_t *hs_api_model_load(const char *spec, int64_t seq_len, hs_api_error_t *err);
/* The same from JSON text in either format (recognised as the loader
 * does); `file` names it in messages and gives the model its name when
 * the text has none ("model.json" -> "model"). */
hs_api_model_t *hs_api_model_parse(const char *text, const char *file, int64_t seq_len,
                                   hs_api_error_t *err);
void hs_api_model_free(hs_api_model_t *m);
/* Borrowed, valid while m lives. */
const char *hs_api_model_name(const hs_api_model_t *m);
/* `hetsim show model --json` output. */
char *hs_api_model_json(const hs_api_model_t *m, hs_api_error_t *err);

/* ---- clusters -------------------------------------------------------------- */

/* `spec`: a catalog name or a cluster JSON path. `profile` (NULL = none): a
 * calibrated device profile JSON applied as `--profile` does. */
hs_api_cluster_t *hs_api_cluster_load(const char *spec, const char *profile, hs_api_error_t *err);
hs_api_cluster_t *hs_api_cluster_parse(const char *text, const char *file, const char *profile,
                                       hs_api_error_t *err);
void hs_api_cluster_free(hs_api_cluster_t *c);
const char *hs_api_cluster_name(const hs_api_cluster_t *c);
int32_t hs_api_cluster_n_devices(const hs_api_cluster_t *c);
/* `hetsim show cluster --json` output. */
char *hs_api_cluster_json(const hs_api_cluster_t *c, hs_api_error_t *err);

/* ---- plans ----------------------------------------------------------------- */

/* The Megatron-style grid of `hetsim simulate --tp ...`, validated as the
 * CLI does. Options: tp, pp, dp (default: every remaining device),
 * microbatch_size (1), global_batch (dp x microbatch_size x pp x 4),
 * schedule ("1f1b"), chunks (1), recompute ("none"), and the practice
 * options (sequence_parallel needs tp >= 2). */
hs_api_plan_t *hs_api_plan_grid(const hs_api_model_t *m, const hs_api_cluster_t *c,
                                const char *opts_json, hs_api_error_t *err);
/* A plan file (`--plan plan.json`) or plan JSON text, validated against the
 * model and cluster. */
hs_api_plan_t *hs_api_plan_load(const char *path, const hs_api_model_t *m,
                                const hs_api_cluster_t *c, hs_api_error_t *err);
hs_api_plan_t *hs_api_plan_parse(const char *text, const char *file, const hs_api_model_t *m,
                                 const hs_api_cluster_t *c, hs_api_error_t *err);
/* `hetsim plan --strategy S`: the planner's best plan, already simulated.
 * Options: global_batch, max_microbatch_size, max_devices, time_limit,
 * mip_gap, no_recompute, memory_headroom (fraction in [0, 1), default 0.1),
 * search_practice (bool, default true; false = --no-practice-search) and the
 * practice options (precision among them). A strategy that finds no plan is an error
 * (HS_EINFEASIBLE with its reason). */
hs_api_plan_t *hs_api_plan_search(const hs_api_model_t *m, const hs_api_cluster_t *c,
                                  const char *strategy, const char *opts_json,
                                  hs_api_error_t *err);
void hs_api_plan_free(hs_api_plan_t *p);
/* The plan file (docs/plan.md), as `hetsim plan -o plan.json` writes it. */
char *hs_api_plan_json(const hs_api_plan_t *p, hs_api_error_t *err);
/* "pp4 [tp8 x1 | ...] mb=1x192 1f1b"; borrowed, valid while p lives. */
const char *hs_api_plan_summary(const hs_api_plan_t *p);
/* For a searched plan: `hetsim plan --json` (stats, plan and report);
 * HS_EINVAL for a grid or loaded plan. */
char *hs_api_plan_result_json(const hs_api_plan_t *p, hs_api_error_t *err);

/* ---- simulation ------------------------------------------------------------ */

/* One simulated iteration. Options: trace (path of a Chrome trace JSON to
 * write), trace_devices (trace only devices below this id; 0 = all), and
 * the practice options, which override the plan's for this run (the plan
 * handle is unchanged), as `--plan plan.json --kernels ...` does. */
hs_api_report_t *hs_api_simulate(const hs_api_model_t *m, const hs_api_cluster_t *c,
                                 const hs_api_plan_t *p, const char *opts_json,
                                 hs_api_error_t *err);
void hs_api_report_free(hs_api_report_t *r);
/* `hetsim simulate --json` output, byte for byte (with the final newline). */
char *hs_api_report_json(const hs_api_report_t *r, hs_api_error_t *err);
/* The text report `hetsim simulate` prints. */
char *hs_api_report_text(const hs_api_report_t *r, hs_api_error_t *err);
/* Fast scalar reads, no JSON: iteration time (s), tokens/s, and whether a
 * device ran out of memory (r NULL reads 0). For an out-of-memory plan the
 * two figures are NaN, where the JSON report says null: they are not
 * achievable (the JSON's infeasible_simulated_iteration_time_s has the
 * simulated time). */
double hs_api_report_iteration_time_s(const hs_api_report_t *r);
double hs_api_report_tokens_per_s(const hs_api_report_t *r);
int32_t hs_api_report_oom(const hs_api_report_t *r);

/* ---- tables ---------------------------------------------------------------- */

/* `hetsim compare --format csv`. m and c may be NULL when the options name a
 * "scenario" (its model and cluster are used). Options: strategies (comma
 * list or array; default all, or the scenario's), scenario, charge ("used"
 * or "cluster"), baseline (the strategy speedups are against, one of those
 * compared; default the fastest of megatron, deepspeed, whale and
 * data-parallel; the column is speedup_vs_<it>), and the plan search options
 * above. */
char *hs_api_compare_csv(const hs_api_model_t *m, const hs_api_cluster_t *c,
                         const char *opts_json, hs_api_error_t *err);
/* `hetsim sweep SPEC` output (header, rows by point) for spec JSON text;
 * `file` names it in messages and relative paths in it are relative to the
 * working directory. Options: no_timings (bool), workers (processes,
 * default 1), precision and memory_headroom (override the spec's). */
char *hs_api_sweep_csv(const char *spec_text, const char *file, const char *opts_json,
                       hs_api_error_t *err);
/* `hetsim whatif`: purchases within a budget added to `base` (NULL with the
 * option replace: true), ranked. Options, the CLI's flags: replace,
 * budget_usd_per_hour, candidates (comma list or array), price
 * ("on-demand" or "spot"), gpu_price ("GPU=USD[:SPOT],..."), step,
 * gpus_per_node, nic_GBps, link_GBps, link_latency_us, strategies,
 * global_batch or global_batch_per_gpu, time_limit (default 60), max_options,
 * workers (-j: worker processes, as hs_api_sweep_csv's), top, format ("csv", the default, "json" or
 * "table"), memory_headroom and the practice options (precision among them). An option no strategy plans is a row with its reason (the CLI
 * exits 3 when there is no other), not an error. */
char *hs_api_whatif(const hs_api_model_t *m, const hs_api_cluster_t *base, const char *opts_json,
                    hs_api_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* HETSIM_H */
