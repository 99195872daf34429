/*
 * hs_export.h - what-if sweeps, purchase studies and exports: the sweep spec
 * and its grid of points, the evaluation of one point (plan + simulate +
 * cost), the result table (CSV in, CSV/JSON/tidy CSV/notebook out), the
 * what-if enumerator with its Pareto front, and the SVG Gantt chart of a
 * Chrome trace.
 *
 * A sweep is a grid of *jobs* (cluster x NIC bandwidth x inter-site
 * bandwidth x inter-site latency x model x global batch x strategy, the last
 * axis fastest); each job is planned and simulated once and gives one CSV
 * *row* per price model (pricing does not change the plan). Row number
 * `point` = job * n_prices + price index, so it is a pure function of the
 * spec: rows from any number of worker processes or MPI ranks sort back into the same
 * file. docs/sweep.md has the spec format and the columns.
 *
 * Ownership: every struct here is caller-allocated with _init/_destroy
 * (destroy accepts NULL and zeroed structs); strings returned through
 * `char **` are malloc'd and the caller frees them.
 */
#ifndef HS_EXPORT_H
#define HS_EXPORT_H

#include "hs_search.h"

/* ---- sweep spec ----------------------------------------------------------- */

#define HS_SWEEP_MAX_AXIS 4096      /* values on one axis (after expansion) */
#define HS_SWEEP_MAX_JOBS 1000000   /* product of the axes */
#define HS_SWEEP_MAX_TYPES 16       /* GPU types in one composition */

typedef enum { HS_PRICE_ONDEMAND = 0, HS_PRICE_SPOT = 1, HS_PRICE__COUNT } hs_price_model_t;
const char *hs_price_model_name(hs_price_model_t p); /* "on-demand", "spot" */

/* One value of the cluster axis: a catalog name / file, or a composition
 * (GPU type -> count) that hs_sweep_cluster_build turns into a cluster. */
typedef struct hs_sweep_cluster {
  char base[512];                   /* catalog name or path; "" = composition */
  int32_t n_types;
  char gpu[HS_SWEEP_MAX_TYPES][HS_NAME_MAX];
  int64_t count[HS_SWEEP_MAX_TYPES];
} hs_sweep_cluster_t;

/* Price override for one GPU type; negative = keep the catalog's. */
typedef struct hs_price_override {
  char gpu[HS_NAME_MAX];
  double ondemand_usd_h;
  double spot_usd_h;
} hs_price_override_t;

typedef struct hs_sweep_spec {
  char name[64];
  char file[256];                   /* for messages */
  hs_sweep_cluster_t *clusters; size_t n_clusters;
  /* Link axes. A value <= 0 (the single default value) keeps the cluster's
   * own figure. */
  double *nic_GBps; size_t n_nic;
  double *xsite_GBps; size_t n_xsite_GBps;
  double *xsite_latency_us; size_t n_xsite_latency;
  char (*models)[512]; size_t n_models;
  int64_t *global_batch; size_t n_global_batch;   /* 0 = the sweep's default (below) */
  /* > 0: a point's global batch is this x its GPUs (the user asked for a
   * batch that grows with the cluster); 0: fixed across points. */
  int64_t global_batch_per_gpu;
  /* The default for global_batch 0: 8 samples per GPU of the sweep's largest
   * cluster, the same for every point (hs_sweep_spec_resolve); 0 until then. */
  int64_t default_global_batch;
  char (*strategies)[48]; size_t n_strategies;
  hs_price_model_t prices[HS_PRICE__COUNT]; size_t n_prices;
  hs_price_override_t *price_overrides; size_t n_price_overrides;
  /* How compositions become clusters. */
  bool one_site;                    /* all types in one site; default: one site per type */
  int32_t gpus_per_node;            /* default 8 */
  double comp_nic_GBps, comp_xsite_GBps, comp_xsite_latency_us; /* composition defaults */
  /* Planning and reporting. */
  double train_tokens;              /* for time and cost to train; default 1e11 */
  double time_limit_s;              /* per job search budget; default 60 */
  int32_t max_microbatch_size;      /* default 8 */
  int64_t seq_len;                  /* 0 = the model's */
  hs_dtype_t precision;             /* "precision", default bf16 (fp16 on GPUs without bf16) */
  double memory_headroom;           /* "memory_headroom", default HS_MEMORY_HEADROOM_DEFAULT */
  hs_practice_t practice;           /* "kernels", "attention", "sequence_parallel", "zero_stage",
                                       "tp_comm_overlap"; default hs_practice_init's */
  /* Random sampling of the job grid: 0 = the full grid. */
  uint64_t samples;
  uint64_t seed;
  /* The jobs to run, ascending (all of them, or the sampled ones). */
  uint64_t *jobs; size_t n_jobs;
  uint64_t n_grid;                  /* product of the axes */
} hs_sweep_spec_t;

void hs_sweep_spec_init(hs_sweep_spec_t *s);
void hs_sweep_spec_destroy(hs_sweep_spec_t *s);
/* Parses a sweep spec (docs/sweep.md); `file` names it in messages
 * ("spec.json: clusters[2].A100-SXM4-80GB: must be ..."). Checks names of
 * strategies, price models and ranges; models and clusters are loaded when a
 * job runs (their errors become the row's error). Fills `jobs`. O(spec +
 * jobs). */
hs_status_t hs_sweep_spec_parse(const char *text, const char *file, hs_sweep_spec_t *out,
                                 hs_error_t *err);
hs_status_t hs_sweep_spec_load(const char *path, hs_sweep_spec_t *out, hs_error_t *err);
/* Fixes default_global_batch: 8 x the GPUs of the sweep's largest cluster
 * (compositions are counted, named clusters loaded; one that fails to load
 * is skipped: its rows carry its error). Every point then trains the same
 * global batch, so rows compare like with like. O(clusters). */
hs_status_t hs_sweep_spec_resolve(hs_sweep_spec_t *s, hs_error_t *err);

/* The axis indices of grid job `job` (mixed radix, strategy fastest). */
typedef struct hs_sweep_point {
  size_t cluster, nic, xsite_GBps, xsite_latency, model, global_batch, strategy;
} hs_sweep_point_t;
void hs_sweep_point_of(const hs_sweep_spec_t *s, uint64_t job, hs_sweep_point_t *out);
uint64_t hs_sweep_job_of(const hs_sweep_spec_t *s, const hs_sweep_point_t *p);
/* The global batch point `p` trains on a cluster of n_devices GPUs. */
int64_t hs_sweep_global_batch(const hs_sweep_spec_t *s, const hs_sweep_point_t *p, size_t n_devices);

/* Builds the cluster of point `p` into `out` (initialised by the caller):
 * loads or composes it, applies the link axes and the price overrides.
 * O(cluster size). */
hs_status_t hs_sweep_cluster_build(const hs_sweep_spec_t *s, const hs_sweep_point_t *p,
                                   hs_cluster_t *out, hs_error_t *err);
/* Cluster JSON text of a composition (caller frees). */
hs_status_t hs_sweep_composition_json(const hs_sweep_cluster_t *comp, bool one_site,
                                      int32_t gpus_per_node, double nic_GBps, double xsite_GBps,
                                      double xsite_latency_us, char **out, hs_error_t *err);
/* Label of a cluster axis value: the base name, or "A100-SXM4-80GB:16+V100-SXM2-32GB:32". */
void hs_sweep_cluster_label(const hs_sweep_cluster_t *c, char *buf, size_t n);

/* ---- evaluating one cluster: plan, simulate, price --------------------------- */

typedef struct hs_eval {
  bool ok;
  char error[400];
  int32_t n_gpus, n_gpus_used;
  char gpu_types[256];              /* "A100-SXM4-80GB:16 V100-SXM2-32GB:32" */
  double iteration_s, tokens_per_s, mfu, peak_memory_fraction;
  bool oom;
  int64_t global_batch, tokens_per_iteration;
  /* Rental of the whole cluster per price model, USD/h; a GPU without a spot
   * price is charged on-demand; unknown prices add 0 and are counted. */
  double usd_per_hour[HS_PRICE__COUNT];
  int32_t unpriced_gpus[HS_PRICE__COUNT];
  char plan[256];
  double search_s;
  double time_s[HS_TIME_PARTS];     /* hs_report_time_parts: add up to iteration_s */
  double mem_bytes[HS_MEM_PARTS];   /* hs_report_mem_parts: parts of the stage closest to capacity */
} hs_eval_t;

/* Prices of the whole cluster (every device) under each price model. O(devices). */
void hs_cluster_rent(const hs_cluster_t *c, double usd_per_hour[HS_PRICE__COUNT],
                     int32_t unpriced[HS_PRICE__COUNT]);

/* Plans `m` on `c` with strategy `strategy` (hs_planner_run, quiet), fills
 * `out`. A failing search is not an error of this function: out->ok = false
 * and out->error says why. Returns HS_OK unless out of memory. */
hs_status_t hs_eval_run(const hs_model_t *m, const hs_cluster_t *c, const char *strategy,
                        const hs_plan_opts_t *po, hs_eval_t *out);

/* Applies price overrides to the cluster's GPU entries (price_source then
 * names `source`). O(overrides x gpus). */
void hs_cluster_set_prices(hs_cluster_t *c, const hs_price_override_t *o, size_t n,
                           const char *source);

/* Runs items 0..n-1 on `workers` forked worker processes (1 = in this
 * process; fork_map.c says why not threads): fn computes item i into a
 * malloc'd buffer in the worker, sink receives it in this process, one call
 * at a time, in completion order; a non-zero sink or lost return stops the
 * run. A failing fn (its status and message) stops the run with that error.
 * A worker that dies is replaced and its item goes to `lost` with the reason
 * ("worker process died (signal 11)"); with lost NULL that stops the run
 * with HS_EINTERNAL. Each i runs at most once. */
typedef hs_status_t (*hs_map_fn)(void *ctx, size_t i, void **out, size_t *len, hs_error_t *err);
typedef int (*hs_sink_fn)(void *ctx, size_t i, const void *data, size_t len);
typedef int (*hs_lost_fn)(void *ctx, size_t i, const char *why);
hs_status_t hs_map_processes(size_t n, int workers, hs_map_fn fn, hs_sink_fn sink, hs_lost_fn lost,
                             void *ctx, hs_error_t *err);

/* ---- sweep rows ----------------------------------------------------------- */

/* The CSV header line (with '\n'). */
const char *hs_sweep_csv_header(void);
/* Flags for row formatting. */
#define HS_SWEEP_NO_TIMINGS 1u  /* leave search_s empty: rows then depend on the spec only */

/* Runs grid job `job`: builds the cluster, loads the model, plans, and
 * formats its n_prices rows (each ending in '\n') into *rows (caller frees).
 * Errors of the point's inputs go into the rows; HS_ENOMEM otherwise. */
hs_status_t hs_sweep_job_run(const hs_sweep_spec_t *s, uint64_t job, unsigned flags, char **rows,
                             hs_error_t *err);
/* Rows of job `job` marked error with reason `why` (a worker that died on
 * it): inputs as hs_sweep_job_run writes them, no results. Caller frees. */
hs_status_t hs_sweep_job_error_rows(const hs_sweep_spec_t *s, uint64_t job, const char *why,
                                    char **rows, hs_error_t *err);
/* The input columns of row `point` ("0,cluster,...,strategy,price_model,"),
 * used by --resume to check that a stored row belongs to this spec. */
void hs_sweep_row_inputs(const hs_sweep_spec_t *s, uint64_t point, char *buf, size_t n);

/* Called once per finished job in the calling process, never two at once,
 * in completion order. Returning non-zero stops the sweep early. */
typedef int (*hs_sweep_row_fn)(void *ctx, uint64_t job, const char *rows);

/* Runs jobs[0..n) on `workers` processes (hs_map_processes; 1 = in this
 * process) and calls `fn` for each. Deterministic rows; completion order
 * varies. O(n) jobs, each a planner run. */
hs_status_t hs_sweep_run(const hs_sweep_spec_t *s, const uint64_t *jobs, size_t n, int workers,
                         unsigned flags, hs_sweep_row_fn fn, void *ctx, hs_error_t *err);

/* ---- sweep output files ------------------------------------------------------ */

/* For --resume: reads the text of an existing output. The first record must
 * be the header; every complete record (ending in a newline outside quotes)
 * must be a row of this spec (its point in the spec's jobs and its input
 * columns equal to hs_sweep_row_inputs), else HS_EINVAL naming the line. A
 * truncated last record (a killed run) and rows of jobs with fewer than
 * n_prices rows are dropped. *kept (caller frees) is the header plus the
 * rows of complete jobs in file order; *done (caller frees) the complete
 * jobs, ascending. O(text + rows log rows). */
hs_status_t hs_sweep_resume_scan(const hs_sweep_spec_t *s, const char *text, const char *file,
                                 char **kept, uint64_t **done, size_t *n_done, hs_error_t *err);
/* The spec's jobs not in done[] (ascending); caller frees *todo. O(jobs). */
hs_status_t hs_sweep_todo(const hs_sweep_spec_t *s, const uint64_t *done, size_t n_done,
                          uint64_t **todo, size_t *n_todo, hs_error_t *err);
/* Header first, then the row records sorted by their point (first field),
 * so a file written in completion order becomes the deterministic one.
 * Caller frees *out. O(text + rows log rows). */
hs_status_t hs_sweep_sort_output(const char *text, const char *file, char **out, hs_error_t *err);

/* ---- result tables (CSV) --------------------------------------------------- */

typedef struct hs_table {
  char **cols; size_t n_cols;       /* header names, owned */
  char **cells; size_t n_rows;      /* row-major n_rows x n_cols, owned ("" for empty) */
} hs_table_t;

void hs_table_init(hs_table_t *t);
void hs_table_destroy(hs_table_t *t);
/* RFC 4180 CSV with a header line: quoted fields ("" escapes a quote, may
 * hold commas and newlines), every row as many fields as the header. Errors
 * name the file, line and column ("results.csv: line 4: 3 fields, the header
 * has 27"). O(text). */
hs_status_t hs_table_parse(const char *text, const char *file, hs_table_t *out, hs_error_t *err);
hs_status_t hs_table_load(const char *path, hs_table_t *out, hs_error_t *err);
/* Column index of `name`, -1 when absent. */
int hs_table_col(const hs_table_t *t, const char *name);
static inline const char *hs_table_cell(const hs_table_t *t, size_t row, size_t col)
{
  return t->cells[row * t->n_cols + col];
}
/* Writes one CSV field, quoted when it holds a comma, quote or newline. */
void hs_csv_field(FILE *f, const char *s);
/* Parses a cell as a finite number; false for "" and non-numbers. */
bool hs_cell_number(const char *s, double *out);

/* JSON array of row objects, numbers as numbers, "" as null. Caller frees with
 * hs_json_free. */
struct cJSON *hs_table_to_json(const hs_table_t *t);
/* What `hetsim export --json` writes: {schema_version, columns (the header,
 * in order), rows (hs_table_to_json)}. NULL when out of memory; the caller
 * frees it with hs_json_free. O(cells). */
struct cJSON *hs_table_to_json_doc(const hs_table_t *t);
/* Tidy (long) CSV: the identifying columns (every non-numeric column plus
 * point and the numeric input columns listed in docs/export.md) repeated,
 * then metric,value for each numeric result column of each row. */
hs_status_t hs_table_write_tidy(const hs_table_t *t, FILE *f, hs_error_t *err);
/* Writes a Jupyter notebook (nbformat 4.5, built with cJSON) that loads
 * `csv_ref` (the path as the notebook should open it) with pandas and plots
 * strategy comparison, speedup over `baseline` (a strategy name), throughput
 * against cost with the Pareto front, and scaling with cluster size. */
hs_status_t hs_notebook_write(const char *csv_ref, const char *baseline, const char *path,
                              hs_error_t *err);

/* ---- what-if: purchases within a budget ----------------------------------- */

typedef struct hs_whatif_opts {
  double budget_usd_per_hour;
  hs_price_model_t price;
  int32_t step;                /* GPUs are bought in multiples of this (default 8, a node) */
  int32_t max_options;         /* refuse enumerations larger than this (default 500) */
  bool replace;                /* options replace the base cluster instead of adding to it */
} hs_whatif_opts_t;
void hs_whatif_opts_init(hs_whatif_opts_t *o);

/* One purchase: count[i] GPUs of candidate i. */
typedef struct hs_whatif_option {
  int64_t count[HS_SWEEP_MAX_TYPES];
  double added_usd_per_hour;
} hs_whatif_option_t;

/* Every vector of counts (multiples of step, not all zero unless adding to a
 * base: the "buy nothing" option is first then) whose price is within the
 * budget, in lexicographic order of counts. price_usd_h[i] must be > 0.
 * Caller frees *out. O(options x types). */
hs_status_t hs_whatif_enumerate(const double *price_usd_h, int32_t n_types,
                                const hs_whatif_opts_t *o, hs_whatif_option_t **out, size_t *n,
                                hs_error_t *err);

/* Pareto front: on_front[i] = no j has tokens_s[j] >= tokens_s[i] and
 * usd_mtok[j] <= usd_mtok[i] with one strict. Entries with ok[i] false are
 * never on it and never dominate. O(n^2). */
void hs_pareto_front(const double *tokens_s, const double *usd_mtok, const bool *ok, size_t n,
                     bool *on_front);

/* Cluster JSON text: `base` (may be NULL when replacing) plus node groups of
 * the candidates with non-zero counts, in a new site "added" joined to every
 * base site by a link of link_GBps / link_latency_us (or, with base NULL, a
 * one-site cluster). Caller frees. */
hs_status_t hs_whatif_cluster_json(const hs_cluster_t *base, const char *const *gpus,
                                   const int64_t *count, int32_t n_types, int32_t gpus_per_node,
                                   double nic_GBps, double link_GBps, double link_latency_us,
                                   char **out, hs_error_t *err);

/* ---- what-if evaluation (whatif_run.c; `hetsim whatif`, hetsim.whatif()) ---- */

#define HS_WHATIF_MAX_STRATEGIES 16

/* Everything a purchase study takes besides the model and the base cluster.
 * Planner options travel as one hs_plan_opts_t (`plan`): whatever the
 * planners read there (precision, practice, time limit, ...) reaches every
 * option's search unchanged, except global_batch (below). */
typedef struct hs_whatif_run_opts {
  hs_whatif_opts_t enumerate;       /* budget, price model, step, max options, replace */
  hs_plan_opts_t plan;              /* time_limit_s 60 by default; global_batch 0 = 8 samples
                                       per GPU of the largest option, the same for every option */
  int64_t global_batch_per_gpu;     /* > 0 instead: each option trains this x its GPUs */
  int32_t n_candidates;
  char candidates[HS_SWEEP_MAX_TYPES][HS_NAME_MAX];
  int32_t n_strategies;             /* default megatron, whale, hapt, data-parallel */
  char strategies[HS_WHATIF_MAX_STRATEGIES][48];
  const hs_price_override_t *prices; size_t n_prices; /* borrowed; applied to every GPU */
  int32_t gpus_per_node;            /* per added node (default 8) */
  double nic_GBps;                  /* NIC per added node (default 25) */
  double link_GBps, link_latency_us;/* added site to each base site (default 25, 10) */
  int32_t workers;                  /* worker processes (hs_map_processes; default 1) */
  FILE *progress;                   /* the options/strategies line and a progress bar; NULL quiet */
} hs_whatif_run_opts_t;
void hs_whatif_run_opts_init(hs_whatif_run_opts_t *o);

/* One option, evaluated: the best strategy's figures, or why none planned. */
typedef struct hs_whatif_row {
  char option[256];                 /* "+8 A100-SXM4-40GB +8 V100-SXM2-16GB", "(base only)" */
  int64_t count[HS_SWEEP_MAX_TYPES];/* GPUs bought per candidate */
  double added_usd_per_hour;        /* the purchase's price */
  double usd_per_hour;              /* the whole option's rent under the price model; NAN when
                                       unpriced_gpus > 0 (unknown, never a partial sum) */
  double usd_per_million_tokens;    /* INFINITY when unknown (unpriced GPUs), ok rows only */
  int32_t unpriced_gpus;            /* the option's GPUs without a price: costs are unknown, and
                                       the row is never on the Pareto front */
  bool ok, pareto;
  char strategy[48];
  hs_eval_t best;                   /* cluster facts (n_gpus, batch) even when not ok */
  char reason[400];                 /* when not ok */
} hs_whatif_row_t;

typedef struct hs_whatif_result {
  char model[HS_NAME_MAX], base[HS_NAME_MAX]; /* base "" with replace */
  int64_t seq_len;
  double budget_usd_per_hour;
  hs_price_model_t price;
  int64_t global_batch;             /* with global_batch_per_gpu 0 */
  int64_t global_batch_per_gpu;
  int32_t n_candidates;
  char candidates[HS_SWEEP_MAX_TYPES][HS_NAME_MAX];
  double candidate_usd_per_gpu_hour[HS_SWEEP_MAX_TYPES];
  char price_source[HS_SWEEP_MAX_TYPES][200];
  bool candidate_calibrated[HS_SWEEP_MAX_TYPES]; /* the catalog entry's profile is fitted on
                                                  * published measurements (hs_gpu_t.calibrated) */
  int32_t n_strategies;
  int32_t base_unpriced_gpus;       /* base GPUs without a price (counted 0 USD/h) */
  hs_whatif_row_t *rows;            /* ranked: ok first by tokens/s, then USD/h, then label */
  size_t n_rows, n_ok;
  /* The verdict on the ranking: is the best option's tokens/s lead over
   * the next outside the error bands (docs/validation.md "Error bands")?
   * Set by the caller that holds the bands (cli/cmd_whatif.c); the writers
   * print it in text, CSV (reliable_lead on the best row) and JSON
   * ("ranking"). ranking_set false: no verdict (fewer than two feasible
   * options, or nobody set it). */
  bool ranking_set;
  size_t ranking_winner, ranking_next; /* rows[] indices */
  double ranking_margin;               /* next's s per token / winner's - 1 */
  double ranking_band;                 /* NAN: no band known */
  bool ranking_reliable;               /* margin > band */
  char ranking_note[512];              /* "ranking: A leads B by ...", as printed */
} hs_whatif_result_t;
void hs_whatif_result_init(hs_whatif_result_t *r);
void hs_whatif_result_destroy(hs_whatif_result_t *r);

/* The purchase study: prices the candidates (catalog, then overrides),
 * enumerates the affordable options (hs_whatif_enumerate), builds each
 * option's cluster (base + purchase, or the purchase alone when `base` is
 * NULL, which enumerate.replace must match), plans it with every strategy,
 * keeps the fastest feasible plan, ranks the options and marks the Pareto
 * front of tokens/s against $/M tokens. Bad options (an unknown candidate
 * or strategy, a candidate without a price, nothing affordable, a value out
 * of range) are HS_EINVAL naming the CLI flag; an option that no strategy
 * plans is a row with its reason (n_ok 0: nothing feasible), not an error.
 * Deterministic for any number of workers. O(options x strategies) planner
 * runs. */
hs_status_t hs_whatif_run(const hs_model_t *m, const hs_cluster_t *base,
                          const hs_whatif_run_opts_t *o, hs_whatif_result_t *out,
                          hs_error_t *err);

/* --gpu-price GPU=USD[:SPOT],... into overrides (caller frees *out); a
 * missing spot price is -1 (keep the catalog's). */
hs_status_t hs_price_overrides_parse(const char *s, hs_price_override_t **out, size_t *n,
                                     hs_error_t *err);

/* Writing a result (whatif_output.c, whatif_json.c): the `hetsim whatif`
 * table, CSV (docs/schemas.md, "What-if") or JSON, of the best `top` rows
 * (0 = all). The bytes are a function of the result only. */
typedef enum { HS_WHATIF_TABLE, HS_WHATIF_CSV, HS_WHATIF_JSON } hs_whatif_format_t;
hs_status_t hs_whatif_format_parse(const char *s, hs_whatif_format_t *out);
hs_status_t hs_whatif_write(const hs_whatif_result_t *r, hs_whatif_format_t fmt, size_t top,
                            FILE *f, hs_error_t *err); /* O(rows) */
hs_status_t hs_whatif_write_json(const hs_whatif_result_t *r, size_t top, FILE *f, hs_error_t *err);
/* "global batch 128 samples x 2048 tokens = 262144 tokens per iteration for
 * every option" or "global batch 4 samples per GPU (grows with the option)". */
void hs_whatif_batch_note(const hs_whatif_result_t *r, char *buf, size_t n);

/* ---- SVG Gantt chart of a Chrome trace ------------------------------------ */

/* One complete ("X") event. */
typedef struct hs_tspan {
  int64_t pid, tid;
  double ts_us, dur_us;
  char name[64];
  char cat[32];
} hs_tspan_t;

/* One counter ("C") sample: its first numeric arg. */
typedef struct hs_tcounter {
  int64_t pid;
  double ts_us, value;
  char name[64];
} hs_tcounter_t;

typedef struct hs_trace_doc {
  hs_tspan_t *spans; size_t n_spans;
  /* process_name / thread_name metadata */
  struct hs_trace_label { int64_t pid, tid; bool thread; char name[96]; } *labels;
  size_t n_labels;
  hs_tcounter_t *counters; size_t n_counters;
  /* process_sort_index metadata */
  struct hs_trace_sort { int64_t pid, index; } *sorts;
  size_t n_sorts;
} hs_trace_doc_t;

void hs_trace_doc_init(hs_trace_doc_t *d);
void hs_trace_doc_destroy(hs_trace_doc_t *d);
/* Parses a Chrome trace ({"traceEvents": [...]} or a bare array). Keeps "X"
 * events, counters with a numeric arg, process/thread names and process
 * sort indexes; other phases are skipped. An X event
 * without numeric pid, tid, ts, dur (dur >= 0) is an error naming
 * traceEvents[i]. */
hs_status_t hs_trace_doc_parse(const char *text, const char *file, hs_trace_doc_t *out,
                               hs_error_t *err);
hs_status_t hs_trace_doc_load(const char *path, hs_trace_doc_t *out, hs_error_t *err);

/* Colour classes of spans (docs/export.md). */
typedef enum {
  HS_SPAN_FORWARD, HS_SPAN_BACKWARD, HS_SPAN_RECOMPUTE, HS_SPAN_COLLECTIVE, HS_SPAN_P2P,
  HS_SPAN_DP, HS_SPAN_OPTIMIZER, HS_SPAN_LINK, HS_SPAN_TRAIN, HS_SPAN_LOST, HS_SPAN_FAILURE,
  HS_SPAN_RECOVERY, HS_SPAN_CHECKPOINT, HS_SPAN_REPLAN, HS_SPAN_UP, HS_SPAN_IDLE, HS_SPAN_OTHER,
  HS_SPAN__COUNT
} hs_span_class_t;
/* From `cat` when it names a class (forward, backward, recompute, collective,
 * p2p, optimizer, link, failure, recovery, checkpoint, idle), else from the
 * name, the process name and the thread name (either may be NULL): see
 * docs/export.md. */
hs_span_class_t hs_span_classify(const hs_tspan_t *s, const char *process_name,
                                 const char *thread_name);
const char *hs_span_class_name(hs_span_class_t k);
const char *hs_span_class_colour(hs_span_class_t k);

/* Renders the timeline (docs/export.md, "SVG timeline"). A simulator
 * trace (processes with a "compute" thread) gives, per device process in
 * sort-index order, a compute row and a communication row (exposed and
 * hidden-under-compute shades), only replica 0 / TP rank 0 devices unless
 * all_devices, after one row per link counter (cross-site first, at most 4
 * others); any other trace one row per (pid, tid) with X events, by sort
 * index, pid, tid. Each row draws, per pixel column, the fraction of the
 * column each class occupies (stacked), so short spans never merge into a
 * solid bar. Deterministic. Returns the number of rows through *n_rows when
 * not NULL. O(spans log spans + rows x width). */
typedef struct hs_svg_opts {
  const char *title;
  bool all_devices;
} hs_svg_opts_t;
hs_status_t hs_trace_svg_render(const hs_trace_doc_t *d, const hs_svg_opts_t *o, FILE *f,
                                size_t *n_rows, hs_error_t *err);
/* hs_trace_svg_render with a title and default options. */
hs_status_t hs_trace_svg_write(const hs_trace_doc_t *d, const char *title, FILE *f,
                               size_t *n_rows, hs_error_t *err);

/* ---- strategy comparison (`hetsim compare`) --------------------------------- */

/* One strategy's row: ok with the simulated figures of its plan, or why not. */
typedef struct hs_compare_row {
  char strategy[48];
  bool ok;
  char why[320];
  double iter_s, tokens_s, mfu;    /* iteration seconds, tokens/s, MFU (0..1) */
  double mem_ratio;                /* max over devices of peak memory / capacity */
  double peak_bytes, cap_bytes;    /* that device's peak and capacity, bytes */
  double usd_mtok;                 /* USD per million tokens */
  double search_s;
  uint64_t candidates;
  char summary[256];               /* hs_plan_describe, in Megatron-LM's terms */
  int32_t unpriced;                /* GPUs charged that have no price: $/Mtok unknown */
  double time_s[HS_TIME_PARTS];    /* hs_report_time_parts */
  double mem_bytes[HS_MEM_PARTS];  /* hs_report_mem_parts */
  int32_t gpus_used;               /* distinct devices of the plan (hs_plan_n_devices) */
  double tokens_s_per_gpu;         /* tokens_s / gpus_used: throughput per GPU used */
  char gpu_class[48];              /* the plan's GPU type, "heterogeneous" when several */
  char framework[32];              /* the plan's framework preset (hs_framework_name) */
  double error_band;               /* set by the caller (hs_bands.h): |relative error| band of
                                      iter_s; NAN or 0 with band_set false: not known */
  bool band_set;
  int8_t lead;                     /* the fastest row only: 1 its margin over the next row is
                                      outside the bands, -1 inside ("not a reliable
                                      difference"), 0 not known / not the fastest */
} hs_compare_row_t;

/* Max over devices of peak memory / capacity, with that device's peak and
 * capacity in *peak and *cap (bytes). O(devices). */
double hs_report_peak_memory_fraction(const hs_report_t *r, const hs_cluster_t *c, double *peak,
                                      double *cap);

/* Plans `m` on `c` with each of strategies[0..n) (hs_planner_run; progress
 * to `progress`, NULL = quiet) into rows[0..n) (caller-allocated). A name
 * that is not a registered planner, or a search that fails, gives a row
 * with ok false and the reason. $/Mtok charges the GPUs each plan uses, or
 * with charge_cluster the whole cluster's rent. *baseline_s is the iteration
 * time of the best baseline row (hs_compare_baseline), 0 when no baseline
 * planned. Returns HS_OK (failed searches are rows, not errors). O(n)
 * planner runs. */
hs_status_t hs_compare_run(const hs_model_t *m, const hs_cluster_t *c, const char *const *strategies,
                           size_t n, const hs_plan_opts_t *po, bool charge_cluster, FILE *progress,
                           hs_compare_row_t *rows, double *baseline_s);
/* hs_compare_run on `workers` processes (hs_map_processes; <= 1 = in this
 * process, as hs_compare_run): one strategy per item, rows back by index,
 * so the rows are the same whatever `workers` is (search_s aside, a clock
 * reading). With workers > 1 nothing is printed to `progress`; a worker
 * that dies gives its strategy a row with the reason. */
hs_status_t hs_compare_run_workers(const hs_model_t *m, const hs_cluster_t *c,
                                   const char *const *strategies, size_t n,
                                   const hs_plan_opts_t *po, bool charge_cluster, FILE *progress,
                                   int workers, hs_compare_row_t *rows, double *baseline_s);
/* The baselines speedups are measured against by default: what users run
 * without a heterogeneity-aware planner (megatron, deepspeed, whale,
 * data-parallel; issue 14). */
bool hs_compare_is_baseline(const char *strategy);
/* Index of the fastest planned baseline row (only NULL; ties keep the
 * first), or of the planned row named `only`; -1 when there is none. O(n). */
int hs_compare_baseline(const hs_compare_row_t *rows, size_t n, const char *only);
/* The CSV of `hetsim compare --format csv`: header and one line per row;
 * the speedup column is "speedup_vs_<baseline>", the baseline being the
 * planned row whose iteration time is baseline_s (a baseline row first),
 * "speedup_vs_baseline" and empty when baseline_s is 0. */
void hs_compare_write_csv(const hs_compare_row_t *rows, size_t n, double baseline_s, FILE *f);
/* hs_compare_write_csv against rows[baseline] (-1: none). */
void hs_compare_write_csv_vs(const hs_compare_row_t *rows, size_t n, int baseline, FILE *f);

#endif /* HS_EXPORT_H */
