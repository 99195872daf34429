/*
 * hs_search.h - planner strategies behind one interface.
 *
 * A planner is a const type object, as GSL's root solvers are: the caller
 * allocates `state_size` bytes, calls init, then drives step() until it says
 * done (or the caller's time budget runs out), and reads result(). Budgets,
 * progress reporting and stopping stay with the caller (hs_planner_run is the
 * standard driver). Every planner scores candidates with the simulator's cost
 * models (an analytical estimator in inner loops is fine); the final plan is
 * always run through hs_simulate by the driver.
 */
#ifndef HS_SEARCH_H
#define HS_SEARCH_H

#include "hs_sim.h"

typedef struct hs_plan_opts {
  int64_t global_batch;        /* samples per iteration; 0 = strategy default (see docs/planners.md) */
  int32_t max_microbatch_size; /* largest microbatch tried (default 8) */
  double time_limit_s;         /* wall-clock budget for the whole run: search, the simulations of
                                  its finalists and of the plan returned (MILP time limit too);
                                  0 = none */
  double deadline_s;           /* set by hs_planner_run from time_limit_s (callers leave 0): the
                                  search module's monotonic clock reading after which a planner
                                  stops enumerating, estimating and simulating; 0 = none */
  double work_limit;           /* MILP budget in GLPK work units (docs/autohet.md), counted in the
                                  solver's progress, not seconds, so results do not depend on how
                                  busy the machine is; 0 = the strategy's default */
  double mip_gap;              /* relative MIP gap for MILP strategies (default 0.01) */
  hs_dtype_t precision;        /* default bf16 (fp16 on GPUs without bf16) */
  bool allow_recompute;        /* may use activation recomputation to fit memory (default true) */
  hs_practice_t practice;      /* kernel set, sequence parallelism: costed and put in every plan */
  int32_t max_devices;         /* exhaustive: refuse bigger clusters (default 8) */
  bool device_subsets;         /* also plan on sets of whole node groups (a site, a GPU type, ...)
                                  and keep the fastest: devices may stay idle (default true) */
  double memory_headroom;      /* fraction of every GPU's memory no plan may use (default
                                  HS_MEMORY_HEADROOM_DEFAULT): the simulator models no allocator
                                  fragmentation and no framework workspace (CUDA context, NCCL
                                  buffers, cuBLAS workspace), so a plan at 100% of capacity would
                                  not run; planners see capacity x (1 - headroom) (docs/planners.md) */
  bool search_practice;        /* baselines (megatron, deepspeed) also search what their
                                  frameworks offer: sequence parallelism, distributed optimizer /
                                  ZeRO stage, selective recompute, interleaving, uneven first/last
                                  stages; false = only what `practice` says (default true) */
  double work_share;           /* fraction of the strategy's default work budget this search gets;
                                  the driver splits it over device subsets (0 = all of it) */
  double beat_s;               /* set by hs_planner_run on a device subset's search (callers
                                  leave 0): the iteration time of the best plan so far; a plan
                                  not faster is of no use, so a planner may leave out a step
                                  that provably cannot give one (hapt's order adaptation), and
                                  says so in stats.pruned_below_s; 0 = none */
  uint64_t seed;               /* for randomised tie breaks; default 1 */
  bool verbose;
} hs_plan_opts_t;

#define HS_MEMORY_HEADROOM_DEFAULT 0.1

/* Work a search refuses up front (HS_ELIMIT, before anything is sized by
 * it; docs/planners.md, "Limits"):
 * - microbatches per pipeline: the fewest any plan can have is the global
 *   batch over (GPUs x --max-microbatch-size), every GPU a data-parallel
 *   replica with the largest microbatch; above this, every candidate's
 *   schedule would have more microbatches than any training run uses, and
 *   its simulation would take minutes (hs_plan_validate refuses 2^23
 *   microbatch-stage pairs in any case);
 * - candidates one planner enumerates (megatron's grid, with
 *   --max-microbatch-size up to 2^20): the list is refused past this. */
#define HS_SEARCH_MAX_MICROBATCHES (INT64_C(1) << 16)
#define HS_SEARCH_MAX_CANDIDATES (INT64_C(1) << 22)

void hs_plan_opts_init(hs_plan_opts_t *o);

/* What a search did, for `hetsim plan` and `compare`. */
typedef struct hs_search_stats {
  double search_s;             /* wall seconds in init+steps */
  uint64_t candidates;         /* plans (or sub-plans) scored */
  uint64_t nodes_expanded;     /* A* / branch-and-bound nodes, where meaningful */
  double predicted_s;          /* the strategy's own estimate of the iteration time */
  bool optimal;                /* proven optimal within its search space (MILP, exhaustive, DP) */
  double pruned_below_s;       /* > 0: steps were left out under hs_plan_opts_t.beat_s = this
                                  (they could only give plans at least this slow); the plan is
                                  the full search's whenever it is faster than this */
  double own_sim_s;            /* set by hs_planner_run on a device subset's search, when a
                                  search memo is open: the plan's iteration seconds simulated
                                  on the sub-cluster it was searched on (INFINITY: out of
                                  memory or not simulable); 0 = not simulated */
  char note[768];              /* e.g. "MILP stopped at time limit, gap 3.1%" */
} hs_search_stats_t;

typedef struct hs_planner_type {
  const char *name;            /* "megatron", "hapt", ... */
  const char *description;
  size_t state_size;
  /* Prepares the search. Returns HS_EINFEASIBLE (with a message) when the
   * strategy does not apply (e.g. exhaustive on a big cluster). */
  hs_status_t (*init)(void *state, const hs_model_t *m, const hs_cluster_t *c,
                      const hs_plan_opts_t *o, hs_error_t *err);
  /* One unit of work. Sets *done when the search is over. *progress in [0,1]
   * when known, else negative. */
  hs_status_t (*step)(void *state, bool *done, double *progress, hs_error_t *err);
  /* Copies the best plan found into *out (caller destroys) and the stats. */
  hs_status_t (*result)(void *state, hs_plan_t *out, hs_search_stats_t *stats, hs_error_t *err);
  void (*free)(void *state);   /* releases what init allocated; state itself is the caller's */
} hs_planner_type_t;

extern const hs_planner_type_t *const hs_planners[]; /* NULL-terminated */
const hs_planner_type_t *hs_planner_find(const char *name);

/* The standard driver: allocates state, runs init/step until done or the
 * budget, prints progress to `progress` (NULL = quiet) when the search takes
 * longer than a second, gets the result and simulates it (report filled). */
hs_status_t hs_planner_run(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_plan_opts_t *o, FILE *progress, hs_plan_t *plan,
                           hs_search_stats_t *stats, hs_report_t *report, hs_error_t *err);

/* One planner run as the JSON object `hetsim plan --json` prints: strategy,
 * model, cluster, search statistics, plan summary, "plan" (hs_plan_to_json)
 * and "report" (hs_report_to_json). NULL when out of memory; the caller
 * frees it with hs_json_free. O(plan + report). */
struct cJSON *hs_search_result_to_json(const char *strategy, const char *model,
                                       const char *cluster, const hs_search_stats_t *stats,
                                       const hs_plan_t *plan, const hs_report_t *report);

/* Builds the cluster of the nodes with alive[node] (c->n_nodes entries):
 * sites and links kept (sites may be empty, so routes through them stay),
 * nodes and devices renumbered in order. dev_map[new device] = original
 * device (c->n_devices entries; NULL = not wanted). `out` is destroyed
 * first; the caller frees it with hs_cluster_destroy. HS_EINFEASIBLE when no
 * node is alive, HS_ENOMEM. O(nodes + devices). */
hs_status_t hs_search_subcluster(const hs_cluster_t *c, const bool *alive, hs_cluster_t *out,
                                 int32_t *dev_map, hs_error_t *err);

/* Search memo (search/search_memo.c; docs/performance.md): between
 * hs_search_memo_begin and the matching hs_search_memo_end, hs_planner_run
 * on this thread answers a device-subset search it ran before (same
 * planner, model, sub-cluster content and options) from memory instead of
 * searching again; outputs are the same as without it, bit for bit.
 * compare, sweep and whatif scope their runs with it; calls nest, and the
 * outermost end frees the memo. hs_search_memo_counts: lookups answered
 * and not answered since the outermost begin. O(1) each. */
void hs_search_memo_begin(void);
void hs_search_memo_end(void);
void hs_search_memo_counts(uint64_t *hits, uint64_t *misses);
/* Sharing the memo between forked workers of this binary (a what-if's
 * or a sweep's, notebooks-export/fork_map.c): hs_search_memo_export
 * appends to b the entries this process stored since its last export (not
 * those it imported); hs_search_memo_import adds the entries of such bytes
 * that the memo does not hold (none when no memo is active): HS_EINVAL on
 * garbled bytes (the entries before them kept), HS_ENOMEM. A shared entry
 * answers exactly as the search that stored it. O(bytes). */
void hs_search_memo_export(hs_bytes_t *b);
hs_status_t hs_search_memo_import(const void *data, size_t len);

#endif /* HS_SEARCH_H */
