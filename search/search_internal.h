/*
 * search_internal.h - helpers shared by the planner files of search/ (hs__
 * names): wall clock, defaults, homogeneous subclusters, and a candidate pool
 * that keeps the best few plans by estimate and simulates them one per step.
 *
 * Invariants: a pool owns the plans offered to it (offer moves the plan and
 * re-initialises the caller's copy); entries are kept sorted by estimate.
 */
#ifndef HS_SEARCH_INTERNAL_H
#define HS_SEARCH_INTERNAL_H

#include "estimate.h"
#include "hs_search.h"

/* Monotonic wall clock, seconds. */
double hs__now_s(void);

/* True once `deadline_s` (hs_plan_opts_t.deadline_s, on hs__now_s's clock)
 * has passed; false when it is 0 (no limit). O(1). */
bool hs__past(double deadline_s);

/* Seconds one hs_simulate of `p` is predicted to take: simulation work grows
 * with the plan's device places (replica devices over stages) and its
 * microbatch-stage pairs (docs/planners.md, "Limits": the per-unit costs
 * were measured on the 2-core build machine under load, so they are
 * pessimistic on a quiet one). O(stages x replicas). */
double hs__sim_cost_s(const hs_plan_t *p);

/* Seconds one collective estimate over n devices is predicted to take
 * (hs_coll_estimate_topo builds every algorithm's paths: an all-to-all's
 * direct algorithm n^2 of them, the others O(n)); pessimistic constants
 * measured on the loaded 2-core build machine (hap's estimates: 62 s at
 * 2048 GPUs; megatron's first estimate at 65,536 GPUs: about 7 s). Lets a
 * search with a deadline skip an estimate that would end past it. O(1). */
double hs__coll_cost_s(hs_coll_op_t op, int32_t n);

/* hs_simulate of p, stopped once its iteration is known to take at least
 * below_s (hs_sim_opts_t.stop_at_s; none when below_s is not finite and
 * positive): for a search that keeps p only when it is faster than an
 * incumbent of below_s. rep->stopped then says p cannot beat it, and
 * rep->iteration_time_s is only a lower bound; a plan faster than below_s
 * gets the report it gets without the bound. O(one simulation, to below_s). */
hs_status_t hs__simulate_below(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p,
                               double below_s, hs_report_t *rep, hs_error_t *err);

/* True when a simulation predicted at `cost_s` still ends before
 * deadline_s (always true without one). O(1). */
bool hs__sim_fits(double deadline_s, double cost_s);

/* HS_ELIMIT (naming the values and the limit) when the global batch `gb`
 * on `n_devices` GPUs needs more than HS_SEARCH_MAX_MICROBATCHES
 * microbatches per pipeline at the largest microbatch `max_mb`; checked
 * before a planner sizes anything by it. O(1). */
hs_status_t hs__check_batch(int64_t gb, int64_t n_devices, int64_t max_mb, const char *who,
                            hs_error_t *err);

/* Samples per iteration when the options say 0: 8 per device (docs/planners.md). */
int64_t hs__global_batch(const hs_plan_opts_t *o, const hs_cluster_t *c);

/* The plan precision: the option, or fp16 when some GPU of the cluster has no
 * bf16 rate and the option is bf16. O(devices). */
hs_dtype_t hs__precision(const hs_plan_opts_t *o, const hs_cluster_t *c);

/* Achieved dense GEMM FLOP/s of one GPU: peak x gemm_eff_max. */
double hs__gpu_speed(const hs_gpu_t *g, hs_dtype_t dt);

/* Largest power of two <= gpus per node over every node: TP stays in a node. */
int32_t hs__max_tp(const hs_cluster_t *c);

/* A homogeneous subcluster: the nodes of one site with one GPU type and one
 * node size, in cluster order. */
typedef struct hs_subcluster {
  int32_t site, gpu, gpn;
  int32_t *nodes;        /* owned */
  int32_t n_nodes;
  int32_t n_devices;
  double speed_flops;    /* hs__gpu_speed of its GPU */
} hs_subcluster_t;

/* Groups the cluster's nodes; caller frees with hs__subclusters_free. O(nodes^2) worst. */
hs_status_t hs__subclusters(const hs_cluster_t *c, hs_dtype_t dt, hs_subcluster_t **out,
                            int32_t *n);
void hs__subclusters_free(hs_subcluster_t *s, int32_t n);

struct hs_sim_memo;

/* Best few plans by estimated time, then by simulated time. */
typedef struct hs_cand_pool {
  hs_plan_t *plans;
  double *est_s;
  int32_t n, cap;
  int32_t next_sim;      /* simulate phase: next entry */
  int32_t best;          /* index of the best simulated feasible plan, -1 none */
  double best_sim_s;
  char why[256];         /* reason of the last rejected simulation (OOM ...) */
  double deadline_s;     /* the search's deadline (hs_plan_opts_t.deadline_s; 0 = none): a
                            candidate whose predicted simulation (hs__sim_cost_s, scaled by
                            sim_scale) would end after it is not simulated */
  double sim_scale;      /* largest measured / predicted simulation time seen (>= 1) */
  bool cut;              /* simulations were left out for the deadline */
  bool one_zero;         /* at most one entry per plan but for its ZeRO stage (the lower
                            estimate kept; hs__plan_same_but_zero) */
  struct hs_sim_memo *memo; /* optional, not owned (NULL: none): the simulated times of the
                               planner's plans (sim_memo.h); an entry the same as one stored
                               there is answered from it, and a fitting one is stored */
  double beat_s;         /* > 0: hs_plan_opts_t.beat_s of a planner that returns the pool's
                            best: every simulation stops there at the latest (a plan not
                            faster is of no use), so when the full pool's best is faster the
                            result is the same, and otherwise the pool has no plan
                            (hs__cpool_pruned_below) */
  int32_t beat_stops;    /* simulations stopped at beat_s with no faster best yet */
} hs_cand_pool_t;

hs_status_t hs__cpool_init(hs_cand_pool_t *p, int32_t cap);
void hs__cpool_destroy(hs_cand_pool_t *p);
/* Offers *plan (moved in when kept; otherwise destroyed); *plan is left
 * initialised and empty. O(cap). The pool rounds the plan to whole
 * samples per rank; est_s should be of the rounded plan
 * (hs__round_for_offer), or a plan estimated at 1.5 samples per replica
 * runs at 2. */
void hs__cpool_offer(hs_cand_pool_t *p, hs_plan_t *plan, double est_s);
/* Rounds *plan to whole samples per rank (hs_plan_round_shares) before a
 * planner estimates and offers it: HS_OK, HS_EINVAL (a micro-batch with
 * fewer samples than a stage's replicas: not a candidate) or HS_ENOMEM,
 * named in *err. O(hs_plan_round_shares). */
hs_status_t hs__round_for_offer(hs_plan_t *plan, hs_error_t *err);
/* Simulates the next entry, or answers it from p->memo when a plan the
 * same was simulated before (a fitting one simulated is stored there),
 * or passes over it when it repeats an entry simulated before while there
 * is a best (it cannot beat it);
 * *done when all are simulated, or when the next one's predicted
 * simulation would end past p->deadline_s (then p->cut). O(one
 * simulation). */
hs_status_t hs__cpool_sim_step(hs_cand_pool_t *p, const hs_model_t *m, const hs_cluster_t *c,
                              bool *done, hs_error_t *err);
/* Copies the best simulated plan (or, when none was simulated, the best
 * estimate) into out; HS_EINFEASIBLE with `what` when the pool is empty or
 * every simulated plan ran out of memory. */
hs_status_t hs__cpool_result(hs_cand_pool_t *p, hs_plan_t *out, double *pred_s, const char *what,
                            hs_error_t *err);
/* stats.pruned_below_s of a planner returning the pool's result: p->beat_s
 * when the pool has no plan because every simulation stopped at it (each
 * plan at least that slow: HS_EINFEASIBLE, "no plan faster than"), else 0
 * (the result is the full search's). O(1). */
double hs__cpool_pruned_below(const hs_cand_pool_t *p);

/* Appends "; N simulations left out at the time limit" to note (of size
 * note_n) when the pool skipped finalists for its deadline. O(note). */
void hs__cpool_note(const hs_cand_pool_t *p, char *note, size_t note_n);

/* Builds the uniform grid plan `g` for strategy `name`, estimates it with
 * memory and offers it to `pool` when it fits. A grid that cannot be built
 * or does not fit is skipped with the reason in why[] (`oom_what` prefixes
 * the out-of-memory reason); only estimator failures are errors. *scored
 * counts estimated plans. O(one estimate). */
hs_status_t hs__offer_grid(hs_estimator_t *est, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_grid_opts_t *g, const char *name, hs_dtype_t dt,
                           const char *oom_what, hs_cand_pool_t *pool, uint64_t *scored,
                           char *why, size_t why_n, hs_error_t *err);

/* Offers every pure data-parallel grid over all of c's devices (tp 1, pp 1,
 * dp = devices): each power-of-two microbatch size up to max_mb that divides
 * gb per device, with and without full recomputation when allow_recompute,
 * through hs__offer_grid (same arguments, same skip rules). The estimator's
 * practice (ZeRO stage, ...) is the caller's. O(log max_mb) estimates. */
hs_status_t hs__offer_dp_grids(hs_estimator_t *est, const hs_model_t *m, const hs_cluster_t *c,
                               int64_t gb, int32_t max_mb, bool allow_recompute, const char *name,
                               hs_dtype_t dt, const char *oom_what, hs_cand_pool_t *pool,
                               uint64_t *scored, char *why, size_t why_n, hs_error_t *err);

/* Number of plans to simulate at the end of a search: fewer on big clusters. */
int32_t hs__sim_budget(const hs_cluster_t *c);

/* A lower bound of the iteration time, in the simulator's cost model, of
 * any plan that trains global_batch samples of m on the devices of c's
 * nodes with alive[node] (every node when alive is NULL), in precision;
 * 0 when those devices have no FLOP rate (search/subset_bound.c says why
 * it holds). O(ops + nodes). */
double hs__subset_time_lb_s(const hs_model_t *m, const hs_cluster_t *c, const bool *alive,
                            int64_t global_batch, hs_dtype_t precision);

#endif /* HS_SEARCH_INTERNAL_H */
