/*
 * autohet_internal.h - state and steps shared by the files of the autohet
 * planner (search/autohet*.c); nothing outside search/autohet*.c includes it.
 *
 * The files, by concern:
 *   autohet.c          the planner type object: init (blocks, budgets, the
 *                      search space in order), step (MILP phase, pool
 *                      simulations, variants, transforms), result
 *   autohet_space.c    GPU types, TP degrees and TP patterns (per type,
 *                      split and mixed), each pattern's configurations
 *   autohet_orders.c   stage orders and device groupings (partitions) of
 *                      one configuration class, the solve order
 *   autohet_model.c    the MILP's cost model: per-group costs, one
 *                      configuration's coefficients, its plan
 *   autohet_greedy.c   greedy integer points (incumbents, pool candidates,
 *                      transform sources)
 *   autohet_milp.c     one configuration's MILP built and solved through the
 *                      GLPK adapter (search/lp.c; no GLPK call here)
 *   autohet_practice.c the variants and the CP/EP/interleaving transforms
 *                      of the simulated finalists
 *
 * Invariants: an autohet_t is owned by the planner driver (state_size) and
 * freed by autohet_free; configs[k].assign_off indexes assign, which holds
 * pstart[G + 1] then the stage sequence; the MILP and the greedy point read
 * the same ccoef_t, so a greedy objective is a MILP objective.
 */
#ifndef HS_AUTOHET_INTERNAL_H
#define HS_AUTOHET_INTERNAL_H

#include "search_internal.h"
#include "sim_memo.h"


#define EXHAUSTIVE_GROUPS 6
#define MAX_KINDS 3        /* GPU types with their own TP degree and stage-order permutations */
#define MAX_PATTERNS 128   /* TP degree per GPU type (4^MAX_KINDS) plus per-stage splits */
#define MAX_RUNS 6         /* TP runs along a pipeline (MILP columns X_1..X_{J-1}) */
/* per-stage TP: the split patterns (one GPU type's nodes in two halves of
 * different degree) are built around the SPLIT_SEEDS per-type patterns
 * with the best greedy points, all of them up to SMALL_POOL_DEVICES GPUs */
#define SPLIT_SEEDS 2
#define MAX_PERMS 6        /* every permutation of <= 3 GPU types */
/* a pattern's node degree >= MIX_BASE is a mixed node: t1 * MIX_BASE + t2,
 * the first half of its GPUs in TP groups of t1, the second half of t2 */
#define MIX_BASE 16
/* stage orders besides device order: by type (every permutation), site-major
 * with the sites in device order and reversed, each with every type
 * permutation inside a site, and by group memory (largest first) */
#define MAX_ORDERS (3 * MAX_PERMS + 1) /* bound on n_orders */
#define MEM_SAFETY 0.999 /* keep a hair below capacity: the simulator flags > capacity */
#define SMALL_POOL_DEVICES 16 /* clusters up to this many GPUs simulate SMALL_POOL candidates */
#define SMALL_POOL 24
#define MID_POOL_DEVICES 64   /* up to this many GPUs: MID_POOL candidates */
#define MID_POOL 8
/* Share of the work budget for the MILPs. 0.85 until the greedy incumbents
 * (2026-11-24); GLPK's branching on these MILPs costs more CPU per work
 * unit once a tight incumbent row is in (bench_search at 256 GPUs: 9.2 CPU
 * s at 0.85), and at scale the greedy points are the plans (docs/autohet.md) */
#define MILP_SHARE 0.5
#define CUTOFF 1.10      /* MILPs look for plans within 10% of the best: pool candidates */
/* Practice transforms (context / expert parallelism, interleaving) of the
 * simulated finalists: the best few by estimate are simulated too */
#define X_POOL 8
/* A variant of the best plan is simulated only when its estimate is below
 * this factor x the best plan's (above MID_POOL_DEVICES GPUs until
 * 2026-12-04, at every size since: the estimator runs the schedule) */
#define VAR_EST_SLACK 1.02
#define X_SOURCES 16 /* transform sources: best greedy plan per (TP pattern, pipelines) */
/* Context parallelism as megatron searches it (search/megatron.c): from
 * this sequence length, powers of two up to X_MAX_CP keeping at least
 * X_CP_MIN_TOKENS per rank */
#define X_CP_MIN_SEQ 8192
#define X_MAX_CP 32
#define X_CP_MIN_TOKENS 4096

typedef struct group {
  int32_t first_device;  /* t consecutive devices of one node */
  int32_t node;
  int32_t t;             /* TP degree: the pattern's degree for this GPU type */
  int32_t kind;          /* GPU type index (first appearance in device order) */
  double speed;          /* peak FLOP/s of the group, for heuristics */
} group_t;

typedef struct config {
  int32_t pat, b, G;     /* TP pattern (degree per GPU type), microbatch size, pipelines */
  hs_recompute_t rc;
  int32_t z;             /* ZeRO stage over the G pipelines (each op's DP group) */
  bool async;            /* hetero-1f1b with async sends: sends overlap compute (cost model) */
  int32_t assign_off;    /* into st->assign: pstart[G + 1] then the stage sequence (group
                          * indexes, pipeline by pipeline, in stage order) */
  double lb_s;
  double heur_s;         /* objective of the greedy integer point (INFINITY: none) */
  double order_key;      /* within a (t, b, rc) class: moderate pipeline depth first */
  int32_t rank;          /* position within its class, for round-robin over classes */
} config_t;

/* Per-group costs for one (t, b, recompute). */
typedef struct gcost {
  double f_s;            /* fwd+bwd of one block, per microbatch */
  double pre_s, post_s;  /* embedding ops (first stage), head/loss (last stage) */
  double state_l, act_l; /* bytes per block: state, saved per microbatch in flight */
  double state_pre, act_pre, state_post, act_post;
  double opt_l, opt_pre; /* optimizer step seconds per block / for pre ops */
  double trans;          /* transient bytes (full recomputation) */
  double cap;            /* usable bytes */
} gcost_t;

/* One memoised hs_estimate_p2p_s (autohet_model.c): arguments and value. */
typedef struct autohet_p2p {
  int32_t src, dst, nsub;
  bool used;
  double bytes, s;
} autohet_p2p_t;

typedef struct autohet_p2p_memo {
  autohet_p2p_t *e; /* cap slots (a power of two), n used */
  size_t n, cap;
} autohet_p2p_memo_t;

/* One memoised hs_estimate_allreduce of config_coefs' gradient sync
 * (autohet_model.c): the group's devices (devs[off .. off + nd) of the
 * memo's pool), the bytes, the value; h the key's full hash. */
typedef struct autohet_ar {
  uint64_t h;
  double bytes, s;
  int32_t nd;
  bool used;
  size_t off;
} autohet_ar_t;

typedef struct autohet_ar_memo {
  autohet_ar_t *e; /* cap slots (a power of two), n used */
  size_t n, cap;
  int32_t *devs;   /* the keys' device lists, n_devs of cap_devs */
  size_t n_devs, cap_devs;
} autohet_ar_memo_t;

typedef struct autohet {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_plan_opts_t o;
  hs_estimator_t *est;
  int32_t L;             /* transformer blocks */
  int32_t *block_first;  /* L + 1: first op of block l; [L] = first op after the blocks */
  int64_t B;
  int32_t n_kinds;       /* GPU types, capped at MAX_RUNS (more: uniform TP only) */
  int32_t *kind_of_node;
  int32_t *pat_node_t[MAX_PATTERNS]; /* TP degree of every node's groups (or MIX_BASE code) */
  int32_t n_pats;
  int32_t maxmb;
  int32_t perms[MAX_PERMS][MAX_KINDS];    /* rank of each GPU type, per permutation */
  int32_t n_perms;
  int32_t n_orders;      /* stage orders besides device order (order_key) */
  int32_t n_sites;
  group_t *groups[MAX_PATTERNS];
  int32_t n_groups[MAX_PATTERNS];
  config_t *configs;
  size_t n_configs, cap_configs;
  int32_t *assign;
  size_t n_assign, cap_assign;
  double *keys;               /* push_config: order_key of each listed group */
  size_t cap_keys;
  int32_t *base;              /* push_config: pstart and order in device order (G + 1 + ng) */
  size_t cap_base;
  int32_t *ord_tmp;           /* push_config: stable_sort_keys' scratch (ng) */
  size_t cap_ord_tmp;
  autohet_p2p_memo_t p2p;     /* config_coefs' neighbour sends (p2p_s) */
  autohet_ar_memo_t ar;       /* config_coefs' gradient all-reduces (allreduce_s) */
  config_t *sort_tmp;         /* sort_by_depth's merge buffer */
  size_t cap_sort_tmp;
  size_t next;
  double t_start;
  /* Budgets: work (the default, deterministic) or wall clock (only when
   * the caller sets a time limit), work in hs_lp_opts_t.work_limit's units
   * (about 1e7 per second). */
  double budget_s;       /* 0 = none */
  double budget_work;    /* 0 = none */
  double work;
  double milp_work;      /* one MILP's work limit */
  /* best MILP objective so far, and the best few plans by it (simulated at the end) */
  double best_T;
  bool have_best;
  hs_cand_pool_t pool;
  bool sim_phase;
  bool all_proven;       /* every MILP solved to optimality within the gap */
  bool budget_hit;
  bool deadline_hit;     /* the driver's deadline cut enumeration or the MILPs short */
  double worst_gap;
  uint64_t milps, refuted;
  int64_t iterations;    /* simplex iterations over all MILPs */
  uint64_t greedy;       /* configurations with a greedy integer point */
  uint64_t rounded;      /* MILPs stopped without an integer solution, relaxation rounded */
  bool have_rounded;     /* some rounded plan fits (pool holds it) */
  /* training practice: the stage costs' (base_pr: the options', plus
   * sequence parallelism under practice search), the ZeRO stages of the
   * configuration classes, and the variants tried on the best simulated
   * plan (ZeRO stage, sequence parallelism, hetero-1f1b async sends) */
  hs_practice_t base_pr;
  int32_t zs[2], n_zs;
  bool var_phase;
  int32_t var_next, n_var;
  uint64_t var_sims, var_better, var_pruned;
  /* the simulated times of the fitting plans of the pools and variants:
   * a variant can be a pool plan, transforms of two sources the same
   * plan, and the variants run again on a transformed best */
  hs_sim_memo_t sims;
  /* the variants that ran out of memory, with their simulated time (the
   * whole timeline runs: sim/simulate.c flags memory after it) */
  hs_sim_memo_t oom_sims;
  /* practice transforms of the simulated pool plans (hs__autohet_transform_step):
   * context parallelism C in cps, expert parallelism E in eps (cps[0] =
   * eps[0] = 1), interleaving; the finalists by estimate in xpool */
  int32_t cps[8], n_cp, eps[8], n_ep;
  hs_cand_pool_t xpool;
  /* transform sources besides the pool: the best greedy plan of each
   * (TP pattern, pipeline count) (keep_source), so that layouts whose
   * cost-model time ranks them out of the pool (the model knows no CP or
   * EP) are transformed too */
  hs_plan_t xsrc[X_SOURCES];
  double xsrc_T[X_SOURCES];
  int32_t xsrc_pat[X_SOURCES], xsrc_G[X_SOURCES], n_xsrc;
  bool x_built, x_done, x_better;
  uint64_t x_estimated;
  uint64_t x_cut_shifts; /* of them half-block boundary moves (autohet_cuts.c) */
} autohet_t;

/* One configuration's cost coefficients (docs/autohet.md), shared by the
 * MILP and the greedy incumbent: per stage position p (into the stage
 * sequence) f (s per block), cst (pre/post ops plus the blocking sends in
 * and out), mcoef / mcap (memory row: mcoef L_p <= mcap); per pipeline
 * fixed (fill/drain constants, 2 x cuts, optimizer of the pre ops), ysync
 * (exposed sync + optimizer per block of the first stage), U (largest stage
 * time) and tlo (perfectly balanced stage time). */
typedef struct ccoef {
  double *f, *cst, *mcoef, *mcap; /* ng */
  double *fixed, *ysync, *U, *tlo, *link; /* G; link: slowest send (async: tmax >= link) */
} ccoef_t;

/* ---- autohet.c ---- */

/* Monotonic seconds (budget_s only; the plans never depend on it). */
double hs__autohet_now_s(void);
/* True (and budget_hit, deadline_hit set) once opts.deadline_s has passed. */
bool hs__autohet_out_of_time(autohet_t *a);

/* ---- autohet_space.c ---- */

/* TP degrees per GPU type: tks[k][0..ntk[k]) */
typedef struct autohet_tp {
  int32_t tks[MAX_KINDS][4], ntk[MAX_KINDS];
  int32_t *node_t; /* scratch: a pattern's degree per node (hs__autohet_base_patterns allocates) */
} autohet_tp_t;

/* GPU types (kind_of_node, n_kinds) and each type's legal TP degrees; a
 * model whose heads no degree of 1-8 splits is HS_EINFEASIBLE. O(nodes). */
hs_status_t hs__autohet_kinds(autohet_t *a, autohet_tp_t *tp, hs_error_t *err);
/* The per-type TP patterns (every combination of the types' degrees). */
hs_status_t hs__autohet_base_patterns(autohet_t *a, autohet_tp_t *tp, hs_error_t *err);
/* Configurations of pattern ti, each with its greedy point and class rank. */
hs_status_t hs__autohet_pattern_configs(autohet_t *a, int32_t ti, hs_error_t *err);
/* Split and mixed patterns around the best n_base patterns by greedy point. */
hs_status_t hs__autohet_split_patterns(autohet_t *a, const autohet_tp_t *tp, int32_t n_base,
                                       hs_error_t *err);

/* ---- autohet_orders.c ---- */

/* perms, n_perms, n_sites, n_orders from n_kinds and the cluster's sites. */
void hs__autohet_stage_orders(autohet_t *a);
hs_status_t hs__autohet_all_partitions(autohet_t *a, config_t *cf, int32_t ng, int64_t M);
hs_status_t hs__autohet_heuristic_partitions(autohet_t *a, config_t *cf, const group_t *groups,
                                             int32_t ng, int64_t M);
/* qsort order of configurations: greedy point, then round-robin, bound */
int hs__autohet_cmp_config(const void *x, const void *y);

/* ---- autohet_model.c ---- */

hs_status_t hs__autohet_group_cost(autohet_t *a, const group_t *g, int32_t b, hs_recompute_t rc,
                                   gcost_t *out, hs_error_t *err);
void hs__autohet_ccoef_free(ccoef_t *cc);
hs_status_t hs__autohet_config_coefs(autohet_t *a, const config_t *cf, const gcost_t *gc,
                                     ccoef_t *cc, hs_error_t *err);
hs_status_t hs__autohet_build_plan(autohet_t *a, const config_t *cf, const double *lss,
                                   const double *mgs, hs_plan_t *plan, hs_error_t *err);
hs_status_t hs__autohet_set_warmups(autohet_t *a, hs_plan_t *p);

/* ---- autohet_greedy.c ---- */

hs_status_t hs__autohet_greedy_incumbent(autohet_t *a, config_t *cf, const gcost_t *gc,
                                         hs_error_t *err);

/* ---- autohet_milp.c ---- */

hs_status_t hs__autohet_solve_config(autohet_t *a, const config_t *cf, hs_error_t *err);

/* ---- autohet_practice.c ---- */

void hs__autohet_practice_degrees(autohet_t *a);
hs_status_t hs__autohet_variant_step(autohet_t *a, int32_t k, hs_error_t *err);
hs_status_t hs__autohet_transform_step(autohet_t *a, hs_error_t *err);

/* ---- autohet_cuts.c ---- */

/* Offers to a->xpool, estimated, src with each stage boundary moved to the
 * attention/MLP cut of the block before or after it (with practice search,
 * plans whose pipelines share their cuts). O(stages x one estimate). */
hs_status_t hs__autohet_offer_cut_shifts(autohet_t *a, const hs_plan_t *src, hs_error_t *err);

#endif
