/*
 * autohet.c - AutoHet-style asymmetric 3D parallelism as a MILP (GLPK via
 * lp.c). docs/autohet.md has the formulation, its sources and deviations.
 *
 * Search space. A TP pattern (a degree in 1, 2, 4, 8 per GPU type, at most
 * the type's smallest node, dividing the heads: hs_model_tp_ok) cuts every
 * node into TP groups of its type's degree (one node, one GPU type; leftover
 * GPUs of a node stay idle); split patterns give one type's nodes two or
 * three degrees, mixed ones split every node of a type into two halves of
 * different degree (MIX_BASE). The groups are partitioned into G pipelines (DP
 * replicas); a pipeline's stages are its groups in device order (site, node,
 * rank), sorted by GPU type in a permutation of the types, site-major (sites
 * in device order or reversed) with a type permutation inside each site, or
 * by group memory, largest first (order_key); every group is one stage. TP is symmetric across data-parallel chains: the runs of equal
 * degree along every pipeline are the same sequence and hold the same blocks
 * (integer boundaries X_j shared by all pipelines), so an op has one TP
 * degree wherever it is held. For each (pattern, microbatch size b,
 * recomputation, partition, order) a MILP chooses the integer number of transformer blocks per
 * stage (>= 1; embedding with the first stage, head and loss with the last)
 * and the integer number of microbatches per pipeline (sum = B / b),
 * minimising the iteration time
 *     T >= sum_s t_s + 2 sum_cuts c + (m_g - 1) tmax_g + (y_g + o_g) L_g0
 * per pipeline g (1F1B fill/drain plus steady state, the exposed gradient
 * sync and optimizer step of the first stage, which finishes last), with
 * t_s = f_s L_s + pre/post ops, tmax_g >= t_s + c_in + c_out (blocking
 * sends; a stage order with a cross-site cut is listed again under
 * hetero-1f1b's async sends: tmax_g >= t_s and tmax_g >= c, the warm-up's
 * extra microbatches in the memory row), and per-stage memory (16 B/param state + activations of the
 * S_g - s microbatches 1F1B keeps in flight) under the GPU's capacity. The
 * product (m_g - 1) tmax_g is linearised exactly by a binary expansion of
 * m_g - 1 = sum_k 2^k z_gk with w_gk >= tmax_g - U_g (1 - z_gk), w_gk >= 0.
 *
 * Partitions: every set partition when there are at most EXHAUSTIVE_GROUPS
 * TP groups (Bell numbers: 203 for 6), otherwise three heuristics per G
 * (LPT on compute, contiguous in device order, strided across device order).
 * Every configuration first gets a greedy integer point under the same cost
 * model (an incumbent and a pool candidate); configurations are solved best
 * greedy point first, the rest by a perfect-balance lower bound
 * M L / sum_s (1 / f_s) (round-robin over (pattern, b, recompute) classes);
 * each MILP gets the constraint T <= 1.1 x best so far, so a configuration
 * that cannot come close is refuted at the root. The best few plans by MILP
 * objective are simulated at the end (hs__pool_*) and the best simulated one
 * is returned.
 *
 * State: the configuration list, the best objective, the candidate pool.
 * Each step solves one MILP, then simulates one pool entry. Per MILP:
 * O(groups + G log2 M) variables and rows; exponential worst case inside
 * GLPK, bounded by a work limit (and a time limit when the caller sets one).
 */
#include "lp.h"
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* Above MID_POOL_DEVICES GPUs a variant of the best plan is simulated only
 * when its estimate is below this factor x the best plan's */
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
  /* practice transforms of the simulated pool plans (transform_step):
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
} autohet_t;

/* Rounds x[0..n) (each >= 1, summing to `total` up to LP tolerance) to
 * integers >= 1 with the same sum: floors, then the remainder to the largest
 * fractional parts, ties to the lower index (deterministic). */
static void round_to_sum(double *x, int32_t n, double total)
{
  double sum = 0.0;
  for (int32_t i = 0; i < n; i++) {
    double f = floor(x[i] + 1e-9);
    if (f < 1.0)
      f = 1.0;
    sum += f;
    double frac = x[i] - f;
    x[i] = f + (frac > 0 ? frac * 0.5 : 0.0); /* keep the fraction, halved, as a rank key */
  }
  for (double left = total - sum; left > 0.5; left -= 1.0) {
    int32_t best = -1;
    double bf = -1.0;
    for (int32_t i = 0; i < n; i++) {
      double frac = x[i] - floor(x[i]);
      if (frac > bf) {
        bf = frac;
        best = i;
      }
    }
    x[best] = floor(x[best]) + 1.0;
  }
  for (double over = sum - total; over > 0.5; over -= 1.0) {
    /* floors above the total (cannot happen for exact LP values): take back from the largest */
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
      if (floor(x[i]) > floor(x[best]))
        best = i;
    if (floor(x[best]) <= 1.0)
      break;
    x[best] = floor(x[best]) - 1.0;
  }
  for (int32_t i = 0; i < n; i++)
    x[i] = floor(x[i]);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The driver's deadline (opts.deadline_s, --time-limit less the final
 * simulation's reserve) has passed: enumeration stops where it is and the
 * search goes on with the configurations listed so far (none: the driver
 * reports the time limit). Checked once per configuration pushed, per
 * microbatch size and class, and per greedy point, so init stops within
 * one partition's cost of the deadline (at 16,384 GPUs it ran past 60 s
 * on a 10 s limit before). */
static bool out_of_time(autohet_t *a)
{
  if (!hs__past(a->o.deadline_s))
    return false;
  a->budget_hit = a->deadline_hit = true;
  return true;
}


/* ---- cost coefficients ------------------------------------------------------ */

/* hs_estimate_stage, with an empty op range costing nothing. */
static hs_status_t range_cost(autohet_t *a, int32_t first, int32_t last, const int32_t *devs,
                              int32_t t, int32_t b, hs_recompute_t rc, hs_stage_cost_t *out,
                              hs_error_t *err)
{
  memset(out, 0, sizeof *out);
  if (first >= last)
    return HS_OK;
  hs_status_t st = hs_estimate_stage(a->est, first, last, devs, t, b, rc, out);
  if (st != HS_OK)
    return hs_error_set(err, st, "autohet: estimating ops [%d, %d) on device %d: %s", first, last,
                        devs[0], hs_status_message(st));
  return HS_OK;
}

static hs_status_t group_cost(autohet_t *a, const group_t *g, int32_t b, hs_recompute_t rc,
                              gcost_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t devs[8], t = g->t;
  for (int32_t k = 0; k < t; k++)
    devs[k] = g->first_device + k;
  hs_stage_cost_t sb, sp, sq;
  int32_t nops = (int32_t)a->m->n_ops;
  HS_CHECK(range_cost(a, a->block_first[0], a->block_first[a->L], devs, t, b, rc, &sb, err));
  HS_CHECK(range_cost(a, 0, a->block_first[0], devs, t, b, rc, &sp, err));
  HS_CHECK(range_cost(a, a->block_first[a->L], nops, devs, t, b, rc, &sq, err));
  memset(out, 0, sizeof *out);
  out->f_s = (sb.fwd_s + sb.bwd_s) / a->L;
  out->pre_s = sp.fwd_s + sp.bwd_s;
  out->post_s = sq.fwd_s + sq.bwd_s;
  out->state_l = sb.state_bytes / a->L;
  out->act_l = sb.act_bytes / a->L;
  out->state_pre = sp.state_bytes;
  out->act_pre = sp.act_bytes;
  out->state_post = sq.state_bytes;
  out->act_post = sq.act_bytes;
  out->opt_l = sb.optimizer_s / a->L;
  out->opt_pre = sp.optimizer_s;
  out->trans = sb.transient_bytes;
  out->cap = hs_cluster_gpu(a->c, g->first_device)->mem_bytes * MEM_SAFETY;
cleanup:
  return st;
}

/* Activation bytes crossing a cut between blocks, per microbatch. */
static double cut_bytes(const autohet_t *a, int32_t b)
{
  int32_t op = a->block_first[1 < a->L ? 1 : a->L] - 1;
  return a->m->ops[op].out_bytes * b;
}

/* ---- the MILP for one configuration ------------------------------------------- */

/* One row under construction. It grows as entries are added (its first
 * capacity is only a guess): a row's length depends on the configuration
 * (stages per pipeline, microbatch bits K, pipelines G), and the McCormick
 * rows (2K + 1 entries) outgrew the once-fixed capacity of ng + G K + 8 on
 * single-stage configurations with 512 or more microbatches, writing past
 * the buffer (issue #32). A failed growth is remembered and reported when
 * the row is handed to the LP (add_row), so rb_add needs no status. */
typedef struct row_buf {
  int32_t *idx;
  double *val;
  int32_t n;
  int32_t cap;
  bool nomem; /* a growth failed: the row is incomplete */
} row_buf_t;

static bool rb_grow(row_buf_t *r, int32_t need)
{
  if (need <= r->cap)
    return true;
  int32_t cap = r->cap > 0 ? r->cap : 8;
  while (cap < need)
    cap = cap > INT32_MAX / 2 ? need : cap * 2;
  int32_t *idx = hs_reallocarray(r->idx, (size_t)cap, sizeof *idx);
  if (!idx)
    return false;
  r->idx = idx;
  double *val = hs_reallocarray(r->val, (size_t)cap, sizeof *val);
  if (!val)
    return false;
  r->val = val;
  r->cap = cap;
  return true;
}

static void rb_free(row_buf_t *r)
{
  free(r->idx);
  free(r->val);
  *r = (row_buf_t){0};
}

/* Adds v to column col's coefficient (a new entry if col is not in the
 * row yet). O(n) per call: rows are short (tens of entries). */
static void rb_add(row_buf_t *r, int32_t col, double v)
{
  for (int32_t k = 0; k < r->n; k++)
    if (r->idx[k] == col) {
      r->val[k] += v;
      return;
    }
  if (r->n == INT32_MAX || !rb_grow(r, r->n + 1)) {
    r->nomem = true;
    return;
  }
  r->idx[r->n] = col;
  r->val[r->n] = v;
  r->n++;
}

/* Hands row r to the LP as lb <= row <= ub, or fails if an entry was lost. */
static hs_status_t add_row(hs_lp_t *lp, const row_buf_t *r, double lb, double ub, hs_error_t *err)
{
  if (r->nomem)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory building a MILP row");
  return hs_lp_add_row(lp, r->n, r->idx, r->val, lb, ub, err);
}

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

static void ccoef_free(ccoef_t *cc)
{
  free(cc->f);
  memset(cc, 0, sizeof *cc);
}

static hs_status_t config_coefs(autohet_t *a, const config_t *cf, const gcost_t *gc, ccoef_t *cc,
                                hs_error_t *err)
{
  const group_t *groups = a->groups[cf->pat];
  int32_t ng = a->n_groups[cf->pat], G = cf->G, L = a->L;
  const int32_t *pstart = a->assign + cf->assign_off, *order = pstart + G + 1;
  memset(cc, 0, sizeof *cc);
  cc->f = hs_calloc(4 * (size_t)ng + 5 * (size_t)G, sizeof *cc->f);
  if (!cc->f)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  cc->cst = cc->f + ng;
  cc->mcoef = cc->cst + ng;
  cc->mcap = cc->mcoef + ng;
  cc->fixed = cc->mcap + ng;
  cc->ysync = cc->fixed + G;
  cc->U = cc->ysync + G;
  cc->tlo = cc->U + G;
  cc->link = cc->tlo + G;
  double cb = cut_bytes(a, cf->b);
  /* the gradient all-reduce runs over the first stages of all pipelines:
   * one estimate per distinct gradient size (one per TP degree) */
  int32_t devs[64], nd = 0;
  for (int32_t h = 0; h < G && nd < 64; h++)
    devs[nd++] = groups[order[pstart[h]]].first_device;
  bool leaves_node = false;
  for (int32_t h = 1; h < nd; h++)
    leaves_node |= a->c->devices[devs[h]].node != a->c->devices[devs[0]].node;
  double memo_bytes[4], memo_s[4];
  int32_t n_memo = 0;
  /* ZeRO over the G holders of every op (one stage per pipeline): state
   * per parameter as the simulator counts it (weights, gradients,
   * optimizer at the plan's precision), the stored 16 B/param scaled to it;
   * the optimizer step split G ways; ZeRO-3 adds the parameter all-gathers
   * to the gradient sync (1.5x at equal weight and gradient bytes, as
   * hs_estimate_plan) */
  hs_state_bytes_t sbp = hs_precision_state_bytes(a->o.precision);
  /* gradients kept and reduced at 4 bytes under grad_reduce_dtype fp32 */
  double gb = hs_practice_grad_bytes(&a->o.practice, a->o.precision);
  double zdiv = G > 1 ? (double)G : 1.0;
  double zf = ((cf->z >= 3 ? sbp.weight / zdiv : sbp.weight) +
               (cf->z >= 2 ? gb / zdiv : gb) +
               (cf->z >= 1 ? sbp.optimizer / zdiv : sbp.optimizer)) /
              HS_ADAM_STATE_BYTES_PER_PARAM;
  double optf = cf->z >= 1 ? 1.0 / zdiv : 1.0;
  double syncf = cf->z >= 3 ? 0.5 + sbp.weight / gb : 1.0;
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    double U = 0.0, cuts = 0.0, c_in = 0.0, inv_f = 0.0, cst_f = 0.0, link = 0.0;
    /* async sends: hetero-1f1b's warm-up (set_warmups' rule) keeps
     * ceil(c / t_fwd) more microbatches in flight in front of a cross-site
     * send; t_fwd is taken at the stage's perfectly balanced share of the
     * blocks (a third of f per block), made non-increasing along the
     * pipeline. warm[] holds the in-flight counts of the stages. */
    double inv_all = 0.0, warm[64];
    for (int32_t s = 0; s < S; s++)
      inv_all += gc[order[pstart[g] + s]].f_s > 0 ? 1.0 / gc[order[pstart[g] + s]].f_s : 0.0;
    for (int32_t s = S; s-- > 0;) {
      int32_t p = pstart[g] + s, gi = order[p];
      double w = (double)(S - s);
      if (cf->async && s + 1 < S &&
          a->c->devices[groups[gi].first_device].site !=
              a->c->devices[groups[order[p + 1]].first_device].site) {
        double c = hs_estimate_p2p_s(a->est, groups[gi].first_device,
                                     groups[order[p + 1]].first_device, cb,
                                     HS_MIN(groups[gi].t, groups[order[p + 1]].t));
        double tf = inv_all > 0 ? (double)L / inv_all / 3.0 : 0.0;
        if (tf > 0)
          w += ceil(c / tf);
      }
      if (s + 1 < S && s + 1 < 64)
        w = fmax(w, warm[s + 1] + 1.0);
      if (s < 64)
        warm[s] = w;
    }
    for (int32_t s = 0; s < S; s++) {
      int32_t p = pstart[g] + s, gi = order[p];
      const gcost_t *q = &gc[gi];
      double c_out = 0.0;
      if (s + 1 < S)
        c_out = hs_estimate_p2p_s(a->est, groups[gi].first_device,
                                  groups[order[p + 1]].first_device, cb,
                                  HS_MIN(groups[gi].t, groups[order[p + 1]].t));
      cuts += c_out;
      link = fmax(link, c_out);
      /* blocking 1F1B: a stage's step includes its send and receive; async
       * (hetero-1f1b): they overlap compute, and the link is a resource of
       * its own (tmax >= link) */
      double cst = (s == 0 ? q->pre_s : 0.0) + (s == S - 1 ? q->post_s : 0.0) +
                   (cf->async ? 0.0 : c_in + c_out);
      cc->f[p] = q->f_s;
      cc->cst[p] = cst;
      U = fmax(U, q->f_s * (L - S + 1) + cst);
      if (q->f_s > 0) {
        inv_f += 1.0 / q->f_s;
        cst_f += cst / q->f_s;
      }
      /* memory: in flight S - s microbatches (1F1B), more under async
       * sends in front of a slow link (warm[]) */
      double k_in = cf->async && s < 64 ? warm[s] : (double)(S - s);
      cc->mcoef[p] = q->state_l * zf + q->act_l * k_in;
      cc->mcap[p] = q->cap - ((s == 0 ? q->state_pre * zf + q->act_pre * k_in : 0.0) +
                              (s == S - 1 ? q->state_post * zf + q->act_post * k_in : 0.0) + q->trans);
      c_in = c_out;
    }
    /* exposed gradient sync + optimizer of the first stage, per block */
    int32_t g0 = order[pstart[g]];
    double y_l = 0.0;
    if (G > 1) {
      /* 2 bytes per parameter, scaled by an fp32 reduce's 4 / 2 */
      double grad_bytes = gc[g0].state_l / HS_ADAM_STATE_BYTES_PER_PARAM * 2.0 * (gb / sbp.grad);
      int32_t k = 0;
      while (k < n_memo && memo_bytes[k] != grad_bytes)
        k++;
      if (k == n_memo) {
        if (hs_estimate_allreduce(a->est, devs, nd, grad_bytes * 16.0, &y_l) != HS_OK) {
          hs_free(cc->f);
          memset(cc, 0, sizeof *cc);
          return hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating a gradient sync");
        }
        y_l /= 16.0;
        if (n_memo < 4) {
          memo_bytes[n_memo] = grad_bytes;
          memo_s[n_memo++] = y_l;
        }
      } else {
        y_l = memo_s[k];
      }
      if (leaves_node)
        y_l *= groups[g0].t;
      y_l *= syncf;
    }
    double fixed = 2.0 * cuts + gc[g0].opt_pre * optf;
    for (int32_t s = 0; s < S; s++) {
      int32_t gi = order[pstart[g] + s];
      fixed += (s == 0 ? gc[gi].pre_s : 0.0) + (s == S - 1 ? gc[gi].post_s : 0.0);
    }
    cc->fixed[g] = fixed;
    cc->ysync[g] = y_l + gc[g0].opt_l * optf;
    cc->link[g] = cf->async ? link : 0.0;
    cc->U[g] = fmax(U, cc->link[g]);
    cc->tlo[g] = fmax(inv_f > 0 ? (L + cst_f) / inv_f : 0.0, cc->link[g]);
  }
  return HS_OK;
}

static hs_status_t set_warmups(autohet_t *a, hs_plan_t *p);

/* The plan of configuration cf with lss[p] blocks on stage position p and
 * mgs[g] microbatches on pipeline g (integer values). */
static hs_status_t build_plan(autohet_t *a, const config_t *cf, const double *lss,
                              const double *mgs, hs_plan_t *plan, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const group_t *groups = a->groups[cf->pat];
  int32_t G = cf->G, L = a->L;
  const int32_t *pstart = a->assign + cf->assign_off, *order = pstart + G + 1;
  hs_strlcpy(plan->strategy, "autohet", sizeof plan->strategy);
  hs_strlcpy(plan->schedule, "1f1b", sizeof plan->schedule);
  plan->precision = a->o.precision;
  HS_CHECK(hs_plan_alloc_pipelines(plan, G));
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    hs_plan_pipeline_t *pl = &plan->pipelines[g];
    pl->microbatch_size = cf->b;
    pl->n_microbatches = (int32_t)llround(mgs[g]);
    HS_CHECK(hs_plan_alloc_stages(pl, S));
    int32_t cum = 0;
    for (int32_t s = 0; s < S; s++) {
      int32_t gi = order[pstart[g] + s];
      int32_t ls = (int32_t)llround(lss[pstart[g] + s]);
      hs_plan_stage_t *stg = &pl->stages[s];
      stg->op_first = s == 0 ? 0 : a->block_first[cum];
      cum += ls;
      stg->op_last = s == S - 1 ? (int32_t)a->m->n_ops : a->block_first[cum];
      stg->recompute = cf->rc;
      HS_CHECK(hs_plan_alloc_replicas(stg, 1));
      int32_t devs[8];
      for (int32_t k = 0; k < groups[gi].t; k++)
        devs[k] = groups[gi].first_device + k;
      HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[0], devs, groups[gi].t));
      stg->replicas[0].share = 1.0;
    }
    if (cum != L)
      HS_FAIL(hs_error_set(err, HS_EINTERNAL, "autohet: MILP blocks %d != %d", cum, L));
  }
  hs_practice_t pr = a->base_pr;
  pr.zero_stage = cf->z;
  hs_plan_set_practice(plan, &pr); /* no sequence parallelism without TP */
  if (cf->async) {
    hs_strlcpy(plan->schedule, "hetero-1f1b", sizeof plan->schedule);
    plan->async_send = true;
    if (set_warmups(a, plan) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating warm-ups"));
  }
cleanup:
  if (st == HS_ENOMEM)
    hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  return st;
}

/* Greedy integer point of configuration cf under the MILP's cost model
 * (coefficients cc): TP segment sizes in proportion to the segments' speed,
 * then within each pipeline and segment one block at a time to the stage
 * that stays fastest and fits in memory, then microbatches by bisection on
 * the iteration time (each pipeline takes floor((T - A_g) / tmax_g) + 1).
 * Returns its objective (the MILP's, exactly) with lss / mgs filled, or
 * INFINITY when a stage runs out of memory (*nomem when the host does). A
 * feasible MILP point, so an incumbent: the MILPs then look only for better
 * plans. O(L x stages + G x 200). */
static double greedy_point(const autohet_t *a, const config_t *cf, const ccoef_t *cc, double *lss,
                           double *mgs, bool *nomem)
{
  const group_t *groups = a->groups[cf->pat];
  int32_t G = cf->G, L = a->L;
  const int32_t *pstart = a->assign + cf->assign_off, *order = pstart + G + 1;
  int64_t M = a->B / cf->b;
  /* TP segments along pipeline 0 (every pipeline has the same runs) */
  int32_t J = 0, seg_t[MAX_RUNS];
  for (int32_t s = 0; s < pstart[1]; s++)
    if (s == 0 || groups[order[s]].t != groups[order[s - 1]].t) {
      if (J == MAX_RUNS)
        return INFINITY;
      seg_t[J++] = groups[order[s]].t;
    }
  int32_t nseg[MAX_RUNS] = {0}, mincnt[MAX_RUNS] = {0};
  double w[MAX_RUNS] = {0};
  for (int32_t g = 0; g < G; g++)
    for (int32_t s = pstart[g], j = 0, cnt = 0; s < pstart[g + 1]; s++) {
      if (s > pstart[g] && groups[order[s]].t != groups[order[s - 1]].t)
        j++, cnt = 0;
      if (j > J - 1 || groups[order[s]].t != seg_t[j])
        return INFINITY;
      mincnt[j] = HS_MAX(mincnt[j], ++cnt);
      w[j] += cc->f[s] > 0 ? 1.0 / cc->f[s] : 1.0;
    }
  int32_t tot = 0;
  for (int32_t j = 0; j < J; j++)
    tot += nseg[j] = mincnt[j];
  for (; tot < L; tot++) { /* next block to the segment with the least blocks per speed */
    int32_t bj = 0;
    for (int32_t j = 1; j < J; j++)
      if ((nseg[j] + 1) / w[j] < (nseg[bj] + 1) / w[bj])
        bj = j;
    nseg[bj]++;
  }
  if (tot > L)
    return INFINITY;
  for (int32_t g = 0; g < G; g++) {
    for (int32_t s = pstart[g], j = 0; s < pstart[g + 1]; j++) {
      int32_t e = s + 1;
      while (e < pstart[g + 1] && groups[order[e]].t == groups[order[s]].t)
        e++;
      for (int32_t p = s; p < e; p++) {
        lss[p] = 1.0;
        if (cc->mcoef[p] > cc->mcap[p])
          return INFINITY;
      }
      for (int32_t left = nseg[j] - (e - s); left > 0; left--) {
        int32_t bp = -1;
        double bt = INFINITY;
        for (int32_t p = s; p < e; p++) {
          double tt = cc->f[p] * (lss[p] + 1.0) + cc->cst[p];
          if (cc->mcoef[p] * (lss[p] + 1.0) <= cc->mcap[p] && tt < bt) {
            bt = tt;
            bp = p;
          }
        }
        if (bp < 0)
          return INFINITY;
        lss[bp] += 1.0;
      }
      s = e;
    }
  }
  /* A_g: fill/drain and sync of pipeline g; tm_g: its slowest stage */
  double *A = hs_calloc(2 * (size_t)G, sizeof *A);
  if (!A) {
    *nomem = true;
    return INFINITY;
  }
  double *tm = A + G, Amax = 0.0, hi = 0.0;
  for (int32_t g = 0; g < G; g++) {
    A[g] = cc->fixed[g] + cc->ysync[g] * lss[pstart[g]];
    tm[g] = cc->link[g];
    for (int32_t p = pstart[g]; p < pstart[g + 1]; p++) {
      A[g] += cc->f[p] * lss[p];
      tm[g] = fmax(tm[g], cc->f[p] * lss[p] + cc->cst[p]);
    }
    Amax = fmax(Amax, A[g]);
    hi = fmax(hi, A[g] + (double)(M - G) * tm[g]);
  }
  /* bisection on T: pipeline g takes floor((T - A_g) / tm_g) + 1 microbatches */
  double lo = Amax;
  hi = fmax(hi, Amax);
  for (int it = 0; it < 200 && hi - lo > 1e-13 * hi; it++) {
    double mid = 0.5 * (lo + hi), cnt = 0.0;
    for (int32_t g = 0; g < G; g++)
      cnt += mid < A[g] ? 0.0 : tm[g] > 0 ? floor((mid - A[g]) / tm[g]) + 1.0 : (double)M;
    if (cnt >= (double)M)
      hi = mid;
    else
      lo = mid;
  }
  double sum = 0.0;
  for (int32_t g = 0; g < G; g++) {
    mgs[g] = tm[g] > 0 ? floor((hi - A[g]) / tm[g]) + 1.0 : (double)M;
    mgs[g] = fmin(fmax(mgs[g], 1.0), (double)(M - G + 1));
    sum += mgs[g];
  }
  /* too many (ties at hi): take back from the slowest pipelines; too few
   * (rounding): give to the pipeline that stays fastest */
  for (; sum > (double)M; sum -= 1.0) {
    int32_t bg = -1;
    for (int32_t g = 0; g < G; g++)
      if (mgs[g] > 1.0 && (bg < 0 || A[g] + (mgs[g] - 1) * tm[g] > A[bg] + (mgs[bg] - 1) * tm[bg]))
        bg = g;
    if (bg < 0)
      break;
    mgs[bg] -= 1.0;
  }
  for (; sum < (double)M; sum += 1.0) {
    int32_t bg = 0;
    for (int32_t g = 1; g < G; g++)
      if (A[g] + mgs[g] * tm[g] < A[bg] + mgs[bg] * tm[bg])
        bg = g;
    mgs[bg] += 1.0;
  }
  double T = 0.0;
  for (int32_t g = 0; g < G; g++)
    T = fmax(T, A[g] + (mgs[g] - 1.0) * tm[g]);
  free(A);
  return sum == (double)M ? T : INFINITY;
}

/* Scores configuration cf's greedy point (heur_s), offers its plan to the
 * pool when it would enter, and makes it the incumbent when it is best. */
/* Keeps the greedy plan of cf (objective T, blocks lss, microbatches
 * lss + ng) as a transform source when it is the best of its (TP pattern,
 * pipeline count) so far and X_SOURCES allow (a quarter of them above
 * MID_POOL_DEVICES GPUs; the worst is replaced).
 * Only with a CP or EP degree to try, and only plain 1f1b. O(devices)
 * when kept, O(X_SOURCES) otherwise. */
static hs_status_t keep_source(autohet_t *a, const config_t *cf, const double *lss, double T,
                               hs_error_t *err)
{
  if ((a->n_cp < 2 && a->n_ep < 2) || cf->async || !isfinite(T))
    return HS_OK;
  int32_t slot = -1, worst = -1;
  for (int32_t i = 0; i < a->n_xsrc; i++) {
    if (a->xsrc_pat[i] == cf->pat && a->xsrc_G[i] == cf->G)
      slot = i;
    if (worst < 0 || a->xsrc_T[i] > a->xsrc_T[worst])
      worst = i;
  }
  if (slot >= 0 && T >= a->xsrc_T[slot])
    return HS_OK;
  /* above MID_POOL_DEVICES an estimate costs milliseconds: fewer sources */
  int32_t cap = a->c->n_devices > MID_POOL_DEVICES ? X_SOURCES / 4 : X_SOURCES;
  if (slot < 0 && a->n_xsrc < cap)
    slot = a->n_xsrc++;
  else if (slot < 0 && T < a->xsrc_T[worst])
    slot = worst;
  if (slot < 0)
    return HS_OK;
  hs_plan_t plan;
  hs_plan_init(&plan);
  hs_status_t st = build_plan(a, cf, lss, lss + a->n_groups[cf->pat], &plan, err);
  if (st != HS_OK) {
    hs_plan_destroy(&plan);
    return st;
  }
  hs_plan_destroy(&a->xsrc[slot]);
  a->xsrc[slot] = plan;
  a->xsrc_T[slot] = T;
  a->xsrc_pat[slot] = cf->pat;
  a->xsrc_G[slot] = cf->G;
  return HS_OK;
}

static hs_status_t greedy_incumbent(autohet_t *a, config_t *cf, const gcost_t *gc, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  ccoef_t cc = {0};
  hs_plan_t plan;
  hs_plan_init(&plan);
  int32_t ng = a->n_groups[cf->pat];
  double *lss = hs_calloc((size_t)ng + (size_t)cf->G, sizeof *lss);
  cf->heur_s = INFINITY;
  if (!lss)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  const int32_t *pstart = a->assign + cf->assign_off;
  for (int32_t g = 0; g < cf->G; g++)
    if (pstart[g + 1] - pstart[g] > a->L)
      goto cleanup;
  HS_CHECK(config_coefs(a, cf, gc, &cc, err));
  bool nomem = false;
  double T = greedy_point(a, cf, &cc, lss, lss + ng, &nomem);
  if (nomem)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  cf->heur_s = T;
  if (!isfinite(T))
    goto cleanup;
  a->greedy++;
  if (a->pool.n < a->pool.cap || T < a->pool.est_s[a->pool.n - 1]) {
    HS_CHECK(build_plan(a, cf, lss, lss + ng, &plan, err));
    hs__cpool_offer(&a->pool, &plan, T);
  }
  HS_CHECK(keep_source(a, cf, lss, T, err));
  if (!a->have_best || T < a->best_T) {
    a->best_T = T;
    a->have_best = true;
  }
cleanup:
  hs_plan_destroy(&plan);
  ccoef_free(&cc);
  free(lss);
  return st;
}

/* Builds and solves the MILP of configuration cf and offers its plan to the
 * pool (the pool keeps the best few by objective). */
static hs_status_t solve_config(autohet_t *a, const config_t *cf, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_lp_t *lp = NULL;
  gcost_t *gc = NULL;
  int32_t *Lcol = NULL, *zcol = NULL, *wcol = NULL, *tcol = NULL;
  double *mgs = NULL, *lss = NULL; /* microbatches per pipeline, blocks per stage */
  hs_plan_t plan;
  hs_plan_init(&plan);
  row_buf_t r = {0}, r2 = {0}, mrow = {0};
  ccoef_t cc = {0};
  const group_t *groups = a->groups[cf->pat];
  int32_t ng = a->n_groups[cf->pat];
  const int32_t *seq = a->assign + cf->assign_off;
  int32_t G = cf->G, L = a->L;
  int32_t xcol[MAX_RUNS];
  int64_t M = a->B / cf->b;
  int32_t K = 0;
  while (((int64_t)1 << K) <= M)
    K++;
  gc = hs_calloc((size_t)ng, sizeof *gc);
  Lcol = hs_calloc((size_t)ng, sizeof *Lcol);
  zcol = hs_calloc((size_t)G * K, sizeof *zcol);
  wcol = hs_calloc((size_t)G * K, sizeof *wcol);
  tcol = hs_calloc((size_t)G, sizeof *tcol);
  if (!gc || !Lcol || !zcol || !wcol || !tcol)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  for (int32_t i = 0; i < ng; i++)
    HS_CHECK(group_cost(a, &groups[i], cf->b, cf->rc, &gc[i], err));
  /* stages of pipeline g: order[pstart[g]..pstart[g+1]) (push_config listed them) */
  const int32_t *pstart = seq, *order = seq + G + 1;
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    if (S == 0 || S > L)
      goto cleanup; /* not a valid partition for this model: nothing to do */
  }
  /* TP segments: the runs of equal TP degree along a pipeline, the same
   * sequence in every pipeline (push_config checked it); segment j holds
   * the blocks [X_j, X_{j+1}) in every pipeline, so every op has the same
   * TP degree in every pipeline that holds it (docs/plan.md) */
  int32_t J = 1;
  for (int32_t s = 1; s < pstart[1]; s++)
    J += groups[order[s]].t != groups[order[s - 1]].t;
  HS_CHECK(config_coefs(a, cf, gc, &cc, err));
  HS_CHECK(hs_lp_new(true, &lp));
  int32_t Tcol;
  HS_CHECK(hs_lp_add_col(lp, 0, INFINITY, 1.0, false, &Tcol));
  for (int32_t k = 0; k < ng; k++)
    HS_CHECK(hs_lp_add_col(lp, 1, L, 0.0, true, &Lcol[k]));
  /* segment boundaries X_1..X_{J-1} (X_0 = 0, X_J = L), integer blocks */
  for (int32_t j = 1; j < J; j++)
    HS_CHECK(hs_lp_add_col(lp, j, L - (J - j), 0.0, true, &xcol[j]));
  /* row buffers, first sized to the longest row each takes below (they
   * grow if a row is longer): r the per-stage rows, the T row (1 + S + K)
   * and the McCormick rows (2K + 1); mrow the microbatch sum
   * sum_g (1 + sum_k 2^k z_gk) = M (G K); r2 the w rows (3) */
  int64_t rcap = (int64_t)ng + 2 * (int64_t)K + 8, mcap = (int64_t)G * K + 1;
  if (rcap > INT32_MAX || mcap > INT32_MAX || !rb_grow(&r, (int32_t)rcap) ||
      !rb_grow(&mrow, (int32_t)mcap) || !rb_grow(&r2, 4))
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    /* blocks per pipeline */
    r.n = 0;
    for (int32_t s = 0; s < S; s++)
      rb_add(&r, Lcol[pstart[g] + s], 1.0);
    HS_CHECK(add_row(lp, &r, L, L, err));
    /* TP segments: sum of the stages of segment j = X_{j+1} - X_j */
    for (int32_t j = 0, s = 0; j + 1 < J && J > 1; j++) {
      r.n = 0;
      int32_t t = groups[order[pstart[g] + s]].t;
      for (; s < S && groups[order[pstart[g] + s]].t == t; s++)
        rb_add(&r, Lcol[pstart[g] + s], 1.0);
      rb_add(&r, xcol[j + 1], -1.0);
      if (j > 0)
        rb_add(&r, xcol[j], 1.0);
      HS_CHECK(add_row(lp, &r, 0.0, 0.0, err));
    }
    /* stage times (tmax_g >= f L_s + cst), memory rows */
    double U = cc.U[g];
    HS_CHECK(hs_lp_add_col(lp, cc.link[g], INFINITY, 0.0, false, &tcol[g]));
    for (int32_t s = 0; s < S; s++) {
      int32_t p = pstart[g] + s;
      r.n = 0;
      rb_add(&r, tcol[g], 1.0);
      rb_add(&r, Lcol[p], -cc.f[p]);
      HS_CHECK(add_row(lp, &r, cc.cst[p], INFINITY, err));
      r.n = 0;
      rb_add(&r, Lcol[p], cc.mcoef[p]);
      HS_CHECK(add_row(lp, &r, -INFINITY, cc.mcap[p], err));
    }
    /* T >= sum_s (f_s L_s + cst_s) + 2 cuts + sum_k 2^k w_gk + (y + o) L_g0 + o_pre */
    r.n = 0;
    rb_add(&r, Tcol, 1.0);
    double cst_sum = cc.fixed[g];
    for (int32_t s = 0; s < S; s++)
      rb_add(&r, Lcol[pstart[g] + s], -cc.f[pstart[g] + s]);
    rb_add(&r, Lcol[pstart[g]], -cc.ysync[g]);
    for (int32_t k = 0; k < K; k++) {
      HS_CHECK(hs_lp_add_col(lp, 0, 1, 0.0, true, &zcol[g * K + k]));
      HS_CHECK(hs_lp_add_col(lp, 0, INFINITY, 0.0, false, &wcol[g * K + k]));
      rb_add(&r, wcol[g * K + k], -(double)((int64_t)1 << k));
      rb_add(&mrow, zcol[g * K + k], (double)((int64_t)1 << k));
      /* w >= tmax - U (1 - z)  <=>  w - tmax - U z >= -U */
      r2.n = 0;
      rb_add(&r2, wcol[g * K + k], 1.0);
      rb_add(&r2, tcol[g], -1.0);
      rb_add(&r2, zcol[g * K + k], -U);
      HS_CHECK(add_row(lp, &r2, -U, INFINITY, err));
    }
    HS_CHECK(add_row(lp, &r, cst_sum, INFINITY, err));
    /* McCormick envelope of P = (m - 1) tmax for m - 1 in [0, M - G], tmax
     * in [tlo, U]: valid cuts that make the LP relaxation see the steady
     * state (tlo: the perfectly balanced stage time, a lower bound) */
    double tlo = cc.tlo[g];
    double mhi = (double)(M - G);
    r.n = 0; /* P >= tlo (m - 1) */
    for (int32_t k = 0; k < K; k++) {
      rb_add(&r, wcol[g * K + k], (double)((int64_t)1 << k));
      rb_add(&r, zcol[g * K + k], -tlo * (double)((int64_t)1 << k));
    }
    HS_CHECK(add_row(lp, &r, 0.0, INFINITY, err));
    r.n = 0; /* P >= mhi tmax + U (m - 1) - mhi U */
    for (int32_t k = 0; k < K; k++) {
      rb_add(&r, wcol[g * K + k], (double)((int64_t)1 << k));
      rb_add(&r, zcol[g * K + k], -U * (double)((int64_t)1 << k));
    }
    rb_add(&r, tcol[g], -mhi);
    HS_CHECK(add_row(lp, &r, -mhi * U, INFINITY, err));
  }
  HS_CHECK(add_row(lp, &mrow, (double)(M - G), (double)(M - G), err));
  if (a->have_best) {
    int32_t one = Tcol;
    double v = 1.0;
    HS_CHECK(hs_lp_add_row(lp, 1, &one, &v, -INFINITY, a->best_T * CUTOFF, err));
  }
  hs_lp_opts_t lo;
  hs_lp_opts_init(&lo);
  lo.mip_gap = a->o.mip_gap >= 0 ? a->o.mip_gap : 0.0;
  /* one MILP gets a twentieth of the budget (at least 2e6 work units or
   * 0.2 s), never more than is left */
  if (a->budget_work > 0) {
    double left = fmax(0.0, a->budget_work - a->work);
    lo.work_limit = fmax(1e5, fmin(left, a->milp_work));
  }
  if (a->budget_s > 0) /* a cap only: the work budget decides, whatever the load */
    lo.time_limit_s = fmax(0.05, a->budget_s - (now_s() - a->t_start));
  hs_lp_result_t res;
  HS_CHECK(hs_lp_solve(lp, &lo, &res, err));
  a->milps++;
  a->iterations += res.iterations;
  a->work += res.work;
  if (res.status == HS_LP_INFEASIBLE) {
    a->refuted++;
    goto cleanup;
  }
  bool rounded = false;
  if (res.status == HS_LP_NO_SOLUTION) {
    a->all_proven = false; /* stopped before deciding */
    if (!res.relaxed)
      goto cleanup;
    /* No integer solution within the time limit (large clusters): round
     * the root relaxation instead, so a big cluster still gets a plan; the
     * estimator and the final simulation judge it like any other. */
    rounded = true;
    a->rounded++;
  }
  if (res.status != HS_LP_OPTIMAL) {
    a->all_proven &= res.status == HS_LP_OPTIMAL_GAP;
    if (isfinite(res.gap))
      a->worst_gap = fmax(a->worst_gap, res.gap);
  }
  if (res.status == HS_LP_UNBOUNDED)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "autohet: MILP unbounded (pattern %d, G=%d)", cf->pat, G));
  /* build the plan */
  mgs = hs_calloc((size_t)G, sizeof *mgs);
  lss = hs_calloc((size_t)ng, sizeof *lss);
  if (!mgs || !lss)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  for (int32_t g = 0; g < G; g++) {
    double mg = 1.0;
    for (int32_t k = 0; k < K; k++)
      mg += (rounded ? hs_lp_value(lp, zcol[g * K + k]) : (double)llround(hs_lp_value(lp, zcol[g * K + k]))) *
            (double)((int64_t)1 << k);
    mgs[g] = mg;
  }
  if (rounded)
    round_to_sum(mgs, G, (double)M);
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    for (int32_t s = 0; s < S; s++)
      lss[pstart[g] + s] = hs_lp_value(lp, Lcol[pstart[g] + s]);
    if (rounded)
      round_to_sum(lss + pstart[g], S, (double)L);
  }
  HS_CHECK(build_plan(a, cf, lss, mgs, &plan, err));
  if (rounded) {
    /* a rounded relaxation is no incumbent (its T is not a MILP value):
     * rank it by the estimator, and only if it fits */
    hs_estimate_t e;
    HS_CHECK(hs_estimate_plan(a->est, &plan, true, &e, err));
    hs_estimator_set_practice(a->est, &a->base_pr); /* the plan's was set */
    if (!e.oom) {
      a->have_rounded = true;
      hs__cpool_offer(&a->pool, &plan, e.iteration_s);
    }
    goto cleanup;
  }
  if (!a->have_best || res.objective < a->best_T) {
    a->best_T = res.objective;
    a->have_best = true;
  }
  /* no better than the greedy point: that plan is offered already (a
   * second copy would take a pool slot) */
  if (res.objective < cf->heur_s * (1.0 - 1e-9))
    hs__cpool_offer(&a->pool, &plan, res.objective);
cleanup:
  free(mgs);
  free(lss);
  hs_plan_destroy(&plan);
  hs_lp_free(lp);
  rb_free(&r);
  rb_free(&r2);
  rb_free(&mrow);
  free(gc);
  ccoef_free(&cc);
  free(Lcol);
  free(zcol);
  free(wcol);
  free(tcol);
  return st;
}

/* ---- configuration enumeration ------------------------------------------------- */

/* Pipeline h's TP runs (degrees along its stages, equal neighbours merged)
 * are pipeline g's. */
static bool same_tp_runs(const group_t *groups, const int32_t *pstart, const int32_t *order,
                         int32_t g, int32_t h)
{
  int32_t i = pstart[g], k = pstart[h];
  while (i < pstart[g + 1] && k < pstart[h + 1]) {
    int32_t t = groups[order[i]].t;
    if (groups[order[k]].t != t)
      return false;
    while (i < pstart[g + 1] && groups[order[i]].t == t)
      i++;
    while (k < pstart[h + 1] && groups[order[k]].t == t)
      k++;
  }
  return i == pstart[g + 1] && k == pstart[h + 1];
}

/* Sort key of group gi under stage order v (0-based, besides device order):
 * v < P: the rank of its GPU type in permutation v; P <= v < 3P: site-major
 * (sites in device order, then reversed), the type's rank in permutation
 * v mod P inside a site (AutoHet: cross the slow link as few times as
 * possible; only with two or more sites); the last (3P, or P with one
 * site): group memory, TP degree x GPU memory, largest first (more in-flight
 * activations on earlier 1F1B stages). Sorting is stable: ties keep device
 * order. */
static double order_key(const autohet_t *a, const group_t *groups, int32_t v, int32_t gi)
{
  const group_t *gr = &groups[gi];
  int32_t P = a->n_perms;
  if (v < P)
    return a->perms[v][gr->kind];
  if (v < a->n_orders - 1) {
    int32_t site = a->c->devices[gr->first_device].site;
    if (v >= 2 * P)
      site = a->n_sites - 1 - site;
    return (double)site * MAX_KINDS + a->perms[v % P][gr->kind];
  }
  return -(double)gr->t * (double)hs_cluster_gpu(a->c, gr->first_device)->mem_bytes;
}

/* Lists configuration cf with partition asg (pipeline of each group) once
 * per stage order: device order (site, node, rank), then the groups of each
 * pipeline sorted by order_key's orders (type permutations, site-major with
 * a type permutation inside each site, memory). An order whose TP runs differ between
 * pipelines is skipped (an op would have two TP degrees: symmetric TP across
 * data-parallel chains), and so is a sequence already listed for the same
 * (pattern, b, rc). */
static hs_status_t push_config(autohet_t *a, const config_t *cf, const int32_t *asg, int32_t ng)
{
  int32_t G = cf->G;
  size_t len = (size_t)ng + (size_t)G + 1;
  const group_t *groups = a->groups[cf->pat];
  if (G == 1 && cf->z != a->zs[0])
    return HS_OK; /* one pipeline: no data parallelism to shard over */
  if (hs_reserve((void **)&a->keys, &a->cap_keys, (size_t)HS_MAX(ng, 1), sizeof *a->keys) ||
      hs_reserve((void **)&a->base, &a->cap_base, len, sizeof *a->base))
    return HS_ENOMEM;
  double *key = a->keys;
  /* every order starts from the groups of each pipeline in device order:
   * a stable counting sort by pipeline, built once and copied per order
   * (bstart[g] is pipeline g's first slot, advanced while filling, then
   * shifted back) */
  int32_t *bstart = a->base, *border = a->base + G + 1;
  for (int32_t g = 0; g <= G; g++)
    bstart[g] = 0;
  for (int32_t i = 0; i < ng; i++)
    if (asg[i] >= 0 && asg[i] < G)
      bstart[asg[i] + 1]++;
  for (int32_t g = 0; g < G; g++)
    bstart[g + 1] += bstart[g];
  for (int32_t i = 0; i < ng; i++)
    if (asg[i] >= 0 && asg[i] < G)
      border[bstart[asg[i]]++] = i;
  for (int32_t g = G; g > 0; g--)
    bstart[g] = bstart[g - 1];
  bstart[0] = 0;
  for (int32_t v = 0; v <= a->n_orders; v++) {
    if (hs_reserve((void **)&a->assign, &a->cap_assign, a->n_assign + len, sizeof *a->assign))
      return HS_ENOMEM;
    int32_t *pstart = a->assign + a->n_assign, *order = pstart + G + 1;
    memcpy(pstart, bstart, sizeof *pstart * (size_t)(G + 1));
    memcpy(order, border, sizeof *order * (size_t)bstart[G]);
    for (int32_t g = 0; g < G; g++) {
      int32_t k = bstart[g + 1];
      if (v > 0) { /* stable insertion sort by the order's key, each key computed once */
        for (int32_t x = pstart[g]; x < k; x++)
          key[x] = order_key(a, groups, v - 1, order[x]);
        for (int32_t x = pstart[g] + 1; x < k; x++) {
          double kx = key[x];
          int32_t ox = order[x], y = x;
          for (; y > pstart[g] && kx < key[y - 1]; y--) {
            key[y] = key[y - 1];
            order[y] = order[y - 1];
          }
          key[y] = kx;
          order[y] = ox;
        }
      }
    }
    int32_t runs = 1;
    for (int32_t x = 1; x < pstart[1]; x++)
      runs += groups[order[x]].t != groups[order[x - 1]].t;
    bool ok = runs <= MAX_RUNS; /* TP segments: X_1..X_{J-1} columns */
    for (int32_t g = 1; g < G && ok; g++)
      ok = same_tp_runs(groups, pstart, order, 0, g);
    for (size_t c = a->n_configs; ok && c-- > 0;) {
      const config_t *o = &a->configs[c];
      if (o->pat != cf->pat || o->b != cf->b || o->rc != cf->rc || o->z != cf->z)
        break;
      ok = !(o->G == G && !memcmp(a->assign + o->assign_off, pstart, sizeof(int32_t) * len));
    }
    if (!ok)
      continue;
    if (hs_reserve((void **)&a->configs, &a->cap_configs, a->n_configs + 1, sizeof *a->configs))
      return HS_ENOMEM;
    config_t c2 = *cf;
    c2.assign_off = (int32_t)a->n_assign;
    a->n_assign += len;
    a->configs[a->n_configs++] = c2;
    /* a stage order with a cross-site cut is listed a second time under
     * hetero-1f1b's async sends (same stage sequence, other cost model) */
    bool cross = false;
    for (int32_t g = 0; g < G && !cross; g++)
      for (int32_t x = pstart[g] + 1; x < pstart[g + 1] && !cross; x++)
        cross = a->c->devices[groups[order[x]].first_device].site !=
                a->c->devices[groups[order[x - 1]].first_device].site;
    if (cross) {
      if (hs_reserve((void **)&a->configs, &a->cap_configs, a->n_configs + 1, sizeof *a->configs))
        return HS_ENOMEM;
      c2.async = true;
      a->configs[a->n_configs++] = c2;
    }
  }
  return HS_OK;
}

/* Restricted growth strings: every set partition of ng items, visited once. */
static hs_status_t all_partitions(autohet_t *a, config_t *cf, int32_t ng, int64_t M)
{
  int32_t rgs[EXHAUSTIVE_GROUPS] = {0}, mx[EXHAUSTIVE_GROUPS + 1] = {0};
  for (;;) {
    int32_t G = 0;
    for (int32_t i = 0; i < ng; i++)
      G = HS_MAX(G, rgs[i] + 1);
    if (G <= M) {
      cf->G = G;
      hs_status_t st = push_config(a, cf, rgs, ng);
      if (st)
        return st;
    }
    int32_t i = ng - 1;
    while (i > 0 && rgs[i] > mx[i - 1])
      i--;
    if (i <= 0)
      return HS_OK;
    rgs[i]++;
    for (int32_t j = 0; j < i; j++)
      mx[j] = j == 0 ? rgs[0] : HS_MAX(mx[j - 1], rgs[j]);
    mx[i] = HS_MAX(mx[i - 1], rgs[i]);
    for (int32_t j = i + 1; j < ng; j++) {
      rgs[j] = 0;
      mx[j] = mx[j - 1];
    }
  }
}

static hs_status_t heuristic_partitions(autohet_t *a, config_t *cf, const group_t *groups,
                                        int32_t ng, int64_t M)
{
  hs_status_t st = HS_OK;
  int32_t *asg = hs_calloc((size_t)ng, sizeof *asg);
  int32_t *idx = hs_calloc((size_t)ng, sizeof *idx);
  double *load = hs_calloc((size_t)ng, sizeof *load);
  if (!asg || !idx || !load)
    HS_FAIL(HS_ENOMEM);
  double total = 0.0;
  for (int32_t i = 0; i < ng; i++)
    total += groups[i].speed;
  for (int32_t G = 1; G <= ng && G <= M && !out_of_time(a); G++) {
    bool listed = G <= 8 || G == ng || (ng % G == 0 && G <= 64);
    for (int32_t d = 2; d <= 8 && !listed; d++)
      listed = G == ng / d;
    if (!listed)
      continue;
    cf->G = G;
    /* LPT: fastest group first to the least loaded pipeline (stable order) */
    for (int32_t i = 0; i < ng; i++)
      idx[i] = i;
    for (int32_t i = 1; i < ng; i++) /* insertion sort by speed desc: O(ng^2) worst */
      for (int32_t j = i; j > 0 && groups[idx[j]].speed > groups[idx[j - 1]].speed; j--) {
        int32_t tmp = idx[j];
        idx[j] = idx[j - 1];
        idx[j - 1] = tmp;
      }
    for (int32_t g = 0; g < G; g++)
      load[g] = 0.0;
    for (int32_t k = 0; k < ng; k++) {
      int32_t best = 0;
      for (int32_t g = 1; g < G; g++)
        if (load[g] < load[best])
          best = g;
      asg[idx[k]] = best;
      load[best] += groups[idx[k]].speed;
    }
    HS_CHECK(push_config(a, cf, asg, ng));
    /* contiguous in device order, balanced on compute */
    double acc = 0.0;
    for (int32_t i = 0; i < ng; i++) {
      int32_t g = (int32_t)floor((acc + 0.5 * groups[i].speed) / total * G);
      int32_t left = ng - i; /* keep every pipeline non-empty */
      g = HS_MIN(HS_MAX(g, i > 0 ? asg[i - 1] : 0), G - 1);
      if (G - g > left)
        g = G - left;
      asg[i] = g;
      acc += groups[i].speed;
    }
    HS_CHECK(push_config(a, cf, asg, ng));
    /* strided: group i to pipeline i mod G (pipelines span the device order) */
    for (int32_t i = 0; i < ng; i++)
      asg[i] = i % G;
    HS_CHECK(push_config(a, cf, asg, ng));
  }
cleanup:
  free(asg);
  free(idx);
  free(load);
  return st;
}

static int cmp_config(const void *x, const void *y)
{
  const config_t *p = x, *q = y;
  /* configurations with a greedy point first, best first; then round-robin */
  if (isfinite(p->heur_s) != isfinite(q->heur_s))
    return isfinite(p->heur_s) ? -1 : 1;
  if (isfinite(p->heur_s) && p->heur_s != q->heur_s)
    return p->heur_s < q->heur_s ? -1 : 1;
  if (p->rank != q->rank)
    return p->rank < q->rank ? -1 : 1;
  if (p->lb_s != q->lb_s)
    return p->lb_s < q->lb_s ? -1 : 1;
  return p->assign_off < q->assign_off ? -1 : p->assign_off > q->assign_off;
}

/* Adds the TP pattern whose groups have degree node_t[n] on node n (every
 * node cut into consecutive groups of that size, leftover GPUs idle). */
static hs_status_t add_pattern(autohet_t *a, const int32_t *node_t, hs_error_t *err)
{
  const hs_cluster_t *c = a->c;
  int32_t pi = a->n_pats;
  int32_t ng = 0;
  for (size_t n = 0; n < c->n_nodes; n++) {
    int32_t nd = c->nodes[n].n_devices;
    ng += node_t[n] < MIX_BASE ? nd / node_t[n]
                               : nd / 2 / (node_t[n] / MIX_BASE) + nd / 2 / (node_t[n] % MIX_BASE);
  }
  a->groups[pi] = hs_calloc((size_t)HS_MAX(ng, 1), sizeof(group_t));
  a->pat_node_t[pi] = hs_calloc(c->n_nodes, sizeof(int32_t));
  if (!a->groups[pi] || !a->pat_node_t[pi]) {
    free(a->groups[pi]);
    free(a->pat_node_t[pi]);
    a->groups[pi] = NULL;
    a->pat_node_t[pi] = NULL;
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  }
  memcpy(a->pat_node_t[pi], node_t, c->n_nodes * sizeof *node_t);
  ng = 0;
  for (size_t n = 0; n < c->n_nodes; n++) {
    int32_t kind = a->kind_of_node[n], nd = c->nodes[n].n_devices;
    int32_t t1 = node_t[n], t2 = node_t[n], mid = nd;
    if (node_t[n] >= MIX_BASE) { /* mixed node: first half in groups of t1, second of t2 */
      t1 = node_t[n] / MIX_BASE;
      t2 = node_t[n] % MIX_BASE;
      mid = nd / 2;
    }
    for (int32_t k = 0;; ) {
      int32_t t = k < mid ? t1 : t2;
      if (k + t > (k < mid ? mid : nd))
        break;
      group_t *g = &a->groups[pi][ng++];
      g->first_device = c->nodes[n].first_device + k;
      g->node = (int32_t)n;
      g->t = t;
      g->kind = kind;
      g->speed = t * hs__gpu_speed(hs_cluster_gpu(c, g->first_device), a->o.precision);
      k += t;
    }
  }
  a->n_groups[pi] = ng;
  a->n_pats++;
  return HS_OK;
}

static hs_status_t pattern_configs(autohet_t *a, int32_t ti, hs_error_t *err);

/* add_pattern and its configurations, unless the same per-node degrees are
 * listed already or the pattern table is full (then nothing, HS_OK). */
static hs_status_t add_new_pattern(autohet_t *a, const int32_t *node_t, hs_error_t *err)
{
  size_t bytes = a->c->n_nodes * sizeof *node_t;
  for (int32_t q = 0; q < a->n_pats; q++)
    if (!memcmp(a->pat_node_t[q], node_t, bytes))
      return HS_OK;
  if (a->n_pats == MAX_PATTERNS)
    return HS_OK;
  hs_status_t st = add_pattern(a, node_t, err);
  return st == HS_OK ? pattern_configs(a, a->n_pats - 1, err) : st;
}

/* Lists the configurations of pattern ti (every microbatch size,
 * recomputation, ZeRO class and device grouping), each with its greedy
 * point, lower bound and rank within its class. */
static hs_status_t pattern_configs(autohet_t *a, int32_t ti, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  gcost_t *gcs = NULL;
  const hs_plan_opts_t *o = &a->o;
  int32_t maxmb = a->maxmb;
  hs_recompute_t rcs[2] = {HS_RECOMPUTE_NONE, HS_RECOMPUTE_FULL};
  {
    int32_t ng = a->n_groups[ti];
    for (int32_t b = 1; b <= maxmb && !out_of_time(a); b *= 2) {
      if (a->B % b)
        continue;
      int64_t M = a->B / b;
      for (int32_t rz = 0; rz < (o->allow_recompute ? 2 : 1) * a->n_zs && !out_of_time(a); rz++) {
        int r = rz / a->n_zs, zi = rz % a->n_zs;
        config_t cf = {.pat = ti, .b = b, .rc = rcs[r], .z = a->zs[zi]};
        size_t first = a->n_configs;
        if (ng <= EXHAUSTIVE_GROUPS)
          HS_CHECK(all_partitions(a, &cf, ng, M));
        else
          HS_CHECK(heuristic_partitions(a, &cf, a->groups[ti], ng, M));
        /* perfect-balance lower bound, same for every partition of (t, b, rc) */
        double inv = 0.0;
        gcs = hs_calloc((size_t)ng, sizeof *gcs);
        if (!gcs)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
        for (int32_t i = 0; i < ng; i++) {
          HS_CHECK(group_cost(a, &a->groups[ti][i], b, rcs[r], &gcs[i], err));
          inv += gcs[i].f_s > 0 ? 1.0 / gcs[i].f_s : 0.0;
        }
        double lb = inv > 0 ? (double)M * a->L / inv : 0.0;
        /* a greedy integer point per configuration: incumbents for the
         * MILPs, candidates for the pool, and the order they are solved in */
        for (size_t k = first; k < a->n_configs; k++) {
          if (out_of_time(a)) { /* the rest of this class has no greedy point: drop it */
            a->n_configs = k;
            break;
          }
          HS_CHECK(greedy_incumbent(a, &a->configs[k], gcs, err));
        }
        free(gcs);
        gcs = NULL;
        for (size_t k = first; k < a->n_configs; k++) {
          config_t *q = &a->configs[k];
          q->lb_s = lb;
          q->order_key = fabs(log2((double)ng / q->G / 4.0));
        }
        /* rank inside the class by pipeline depth closeness to 4 stages (stable) */
        for (size_t k = first + 1; k < a->n_configs; k++)
          for (size_t j = k; j > first && a->configs[j].order_key < a->configs[j - 1].order_key; j--) {
            config_t tmp = a->configs[j];
            a->configs[j] = a->configs[j - 1];
            a->configs[j - 1] = tmp;
          }
        for (size_t k = first; k < a->n_configs; k++)
          a->configs[k].rank = (int32_t)(k - first);
      }
    }
  }
cleanup:
  free(gcs);
  return st;
}

/* ---- type object --------------------------------------------------------------- */

static void autohet_free(void *state)
{
  autohet_t *a = state;
  if (!a)
    return;
  hs_estimator_free(a->est);
  free(a->block_first);
  for (int i = 0; i < MAX_PATTERNS; i++) {
    free(a->groups[i]);
    free(a->pat_node_t[i]);
  }
  free(a->kind_of_node);
  free(a->configs);
  free(a->assign);
  free(a->keys);
  free(a->base);
  hs__cpool_destroy(&a->pool);
  hs__cpool_destroy(&a->xpool);
  for (int32_t i = 0; i < a->n_xsrc; i++)
    hs_plan_destroy(&a->xsrc[i]);
  memset(a, 0, sizeof *a);
}

/* The context- and expert-parallel degrees the transforms try (megatron's
 * rules, search/megatron.c practices()): C = 1, then with practice search
 * and the options' C at 1, powers of two dividing the sequence from
 * X_CP_MIN_SEQ tokens with at least X_CP_MIN_TOKENS per rank; E = 1, then
 * for an MoE model every divisor >= 2 of the experts (up to 8 values).
 * O(ops). */
static void practice_degrees(autohet_t *a)
{
  a->cps[0] = a->eps[0] = 1;
  a->n_cp = a->n_ep = 1;
  if (!a->o.search_practice)
    return;
  int64_t seq = a->m->seq_len;
  if (a->o.practice.context_parallel <= 1 && seq >= X_CP_MIN_SEQ)
    for (int32_t C = 2; C <= X_MAX_CP && a->n_cp < 8 && seq / C >= X_CP_MIN_TOKENS; C *= 2)
      if (seq % C == 0)
        a->cps[a->n_cp++] = C;
  int32_t experts = 0;
  for (size_t i = 0; i < a->m->n_ops; i++)
    if (a->m->ops[i].kind == HS_OP_MOE_EXPERT)
      experts = HS_MAX(experts, a->m->ops[i].experts);
  if (a->o.practice.expert_parallel <= 1)
    for (int32_t E = 2; E <= experts && a->n_ep < 8; E++)
      if (experts % E == 0)
        a->eps[a->n_ep++] = E;
}

static hs_status_t autohet_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                                const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  autohet_t *a = state;
  int32_t *node_t = NULL;
  memset(a, 0, sizeof *a);
  a->t_start = now_s();
  a->m = m;
  a->c = c;
  a->o = *o;
  a->o.precision = hs__precision(o, c);
  a->all_proven = true;
  if (!m || !c || m->n_ops == 0 || c->n_devices == 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "autohet: empty model or cluster"));
  int64_t L64 = hs_model_layers(m);
  if (L64 < 1 || L64 > 100000)
    HS_FAIL(hs_error_set(err, HS_EINFEASIBLE, "autohet: model \"%s\" has no transformer blocks",
                        m->name));
  a->L = (int32_t)L64;
  a->block_first = hs_calloc((size_t)a->L + 1, sizeof *a->block_first);
  if (!a->block_first)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  /* blocks must be contiguous and in order: block_first[l] = first op of l */
  for (int32_t l = 0; l <= a->L; l++)
    a->block_first[l] = -1;
  int32_t last_block_op = -1;
  for (size_t i = 0; i < m->n_ops; i++) {
    int32_t l = m->ops[i].layer;
    if (l < 0)
      continue;
    if (l >= a->L || (i > 0 && m->ops[i - 1].layer != l && a->block_first[l] >= 0))
      HS_FAIL(hs_error_set(err, HS_EINFEASIBLE, "autohet: ops[%zu]: block %d is not contiguous", i, l));
    if (a->block_first[l] < 0) {
      if (l > 0 && a->block_first[l - 1] < 0)
        HS_FAIL(hs_error_set(err, HS_EINFEASIBLE, "autohet: ops[%zu]: block %d before block %d", i,
                            l, l - 1));
      a->block_first[l] = (int32_t)i;
    }
    last_block_op = (int32_t)i;
  }
  a->block_first[a->L] = last_block_op + 1;
  for (int32_t l = 0; l < a->L; l++)
    if (a->block_first[l] < 0)
      HS_FAIL(hs_error_set(err, HS_EINFEASIBLE, "autohet: block %d has no ops", l));
  a->B = hs__global_batch(o, c);
  int32_t maxmb = o->max_microbatch_size > 0 ? o->max_microbatch_size : 8;
  /* Default budget: 1e7 work units x (3 + 0.015 per GPU), at most 40x
   * (bench_search: 3.5 s at 64 GPUs, 16 s at 1024; the final simulations
   * come on top), or the caller's work_limit. Work is counted in GLPK's
   * progress, so the plan does not depend on how busy the machine is; a time
   * limit from the caller (sweep and whatif pass 60 s) only caps it. The
   * driver gives each device subset its share of the default (work_share,
   * by device count), so the total over the subsets stays bounded. */
  double share = o->work_share > 0 && o->work_share < 1 ? o->work_share : 1.0;
  a->budget_work = o->work_limit > 0 ? o->work_limit
                                     : 1e7 * fmin(40.0, 3.0 + 0.015 * (double)c->n_devices) * share;
  /* a MILP's own limit follows the undivided budget, so a subset's MILPs
   * are solved as deep as the whole cluster's (only fewer of them) */
  a->milp_work = fmax(2e6, (o->work_limit > 0 ? a->budget_work : a->budget_work / share) / 20.0);
  if (o->time_limit_s > 0)
    a->budget_s = o->time_limit_s;
  HS_CHECK(hs_estimator_new(m, c, a->o.precision, &a->est, err));
  hs_estimator_set_deadline(a->est, o->deadline_s);
  /* training practice (ours: AutoHet's record says nothing of it). With
   * practice search, stage costs and memory assume sequence parallelism
   * on TP groups (plans without TP drop it: hs_plan_set_practice), and the
   * configurations come in ZeRO-2 and ZeRO-3 classes (memory and optimizer
   * step sharded over the G pipelines); the best simulated plan is then
   * tried under every ZeRO stage from the options' up, with and without
   * SP, with blocking 1F1B and with hetero-1f1b's async sends */
  a->base_pr = o->practice;
  a->zs[a->n_zs++] = o->practice.zero_stage;
  if (o->search_practice) {
    a->base_pr.sequence_parallel = true;
    a->zs[0] = HS_MAX(o->practice.zero_stage, 2);
    if (a->zs[0] < 3)
      a->zs[a->n_zs++] = 3;
  }
  a->n_var = 2 * (4 - o->practice.zero_stage) *
             (o->search_practice && !o->practice.sequence_parallel ? 2 : 1);
  if (!o->search_practice)
    a->n_var = 2; /* the schedule only */
  hs_estimator_set_practice(a->est, &a->base_pr);
  /* the best few plans by the cost model are simulated; on small clusters
   * (simulations are cheap) more of them, since the model's ranking is
   * only as good as its blocking-1F1B approximation (docs/autohet.md) */
  int32_t pool_n = c->n_devices <= SMALL_POOL_DEVICES ? SMALL_POOL
                   : c->n_devices <= MID_POOL_DEVICES ? MID_POOL
                                                      : HS_MAX(2, hs__sim_budget(c));
  if (hs__cpool_init(&a->pool, pool_n) != HS_OK ||
      hs__cpool_init(&a->xpool, HS_MIN(pool_n, X_POOL)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  a->pool.deadline_s = o->deadline_s; /* finalists predicted past it are left out */
  a->xpool.deadline_s = o->deadline_s;
  practice_degrees(a);
  /* GPU types in order of first appearance; with more than MAX_KINDS of
   * them, one TP degree for all (one kind) and stages in device order */
  a->kind_of_node = hs_calloc(c->n_nodes, sizeof *a->kind_of_node);
  if (!a->kind_of_node)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  const hs_gpu_t *kind_gpu[MAX_KINDS];
  int32_t kind_gpn[MAX_KINDS];
  for (size_t n = 0; n < c->n_nodes && a->n_kinds <= MAX_KINDS; n++) {
    const hs_gpu_t *gpu = hs_cluster_gpu(c, c->nodes[n].first_device);
    int32_t k = 0;
    while (k < a->n_kinds && strcmp(kind_gpu[k]->name, gpu->name) != 0)
      k++;
    if (k == a->n_kinds && a->n_kinds++ < MAX_KINDS) {
      kind_gpu[k] = gpu;
      kind_gpn[k] = INT32_MAX;
    }
    if (k < MAX_KINDS) {
      a->kind_of_node[n] = k;
      kind_gpn[k] = HS_MIN(kind_gpn[k], c->nodes[n].n_devices);
    }
  }
  if (a->n_kinds > MAX_KINDS) {
    a->n_kinds = 1;
    kind_gpn[0] = INT32_MAX;
    for (size_t n = 0; n < c->n_nodes; n++) {
      a->kind_of_node[n] = 0;
      kind_gpn[0] = HS_MIN(kind_gpn[0], c->nodes[n].n_devices);
    }
  }
  /* TP patterns: a degree per GPU type, each a power of two up to 8 within
   * that type's smallest node that splits the model's heads, KV heads and
   * the other TP-split dimensions (hs_model_tp_ok) */
  int32_t tks[MAX_KINDS][4], ntk[MAX_KINDS];
  for (int32_t k = 0; k < a->n_kinds; k++) {
    ntk[k] = 0;
    for (int32_t t = 1; t <= 8 && t <= kind_gpn[k]; t *= 2)
      if (hs_model_tp_ok(m, t))
        tks[k][ntk[k]++] = t;
    if (ntk[k] == 0)
      HS_FAIL(hs_error_set(err, HS_EINFEASIBLE,
                           "autohet: no TP degree of 1-8 fits %s's heads on %d-GPU nodes", m->name,
                           kind_gpn[k]));
  }
  node_t = hs_calloc(c->n_nodes, sizeof *node_t);
  if (!node_t)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  for (int32_t p = 0;; p++) {
    int32_t rem = p, tp_of[MAX_KINDS];
    for (int32_t k = 0; k < a->n_kinds; k++) {
      tp_of[k] = tks[k][rem % ntk[k]];
      rem /= ntk[k];
    }
    if (rem > 0)
      break;
    for (size_t n = 0; n < c->n_nodes; n++)
      node_t[n] = tp_of[a->kind_of_node[n]];
    HS_CHECK(add_pattern(a, node_t, err));
  }
  /* stage orders beyond device order: every permutation of the GPU types */
  if (a->n_kinds >= 2) {
    int32_t perm[MAX_KINDS];
    for (int32_t k = 0; k < a->n_kinds; k++)
      perm[k] = k;
    for (;;) {
      for (int32_t k = 0; k < a->n_kinds; k++)
        a->perms[a->n_perms][perm[k]] = k; /* rank of type perm[k] is k */
      a->n_perms++;
      /* next permutation (lexicographic) */
      int32_t i = a->n_kinds - 2;
      while (i >= 0 && perm[i] > perm[i + 1])
        i--;
      if (i < 0)
        break;
      int32_t j = a->n_kinds - 1;
      while (perm[j] < perm[i])
        j--;
      int32_t tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
      for (int32_t x = i + 1, y = a->n_kinds - 1; x < y; x++, y--) {
        tmp = perm[x];
        perm[x] = perm[y];
        perm[y] = tmp;
      }
    }
  }
  /* site-major and memory orders: only where they can differ from the
   * ones above (two or more sites; two or more GPU types) */
  a->n_sites = (int32_t)c->n_sites;
  a->n_orders = a->n_perms;
  if (a->n_perms > 0 && a->n_sites > 1)
    a->n_orders = 3 * a->n_perms + 1;
  else if (a->n_perms > 0)
    a->n_orders = a->n_perms + 1;
  a->maxmb = maxmb;
  int32_t n_base = a->n_pats;
  for (int32_t ti = 0; ti < n_base && !out_of_time(a); ti++)
    HS_CHECK(pattern_configs(a, ti, err));
  /* per-stage TP (AutoHet: TP symmetric across data-parallel chains, free
   * along a pipeline): around the best per-type patterns by greedy point,
   * one GPU type's nodes split in two halves (device order) of different
   * degree, so two stages of one type can differ in TP; push_config keeps
   * only stage sequences whose TP runs agree over the pipelines */
  if (a->n_kinds <= MAX_KINDS) {
    int32_t seeds[MAX_PATTERNS], n_seeds = 0;
    double seed_s[MAX_PATTERNS];
    int32_t max_seeds = c->n_devices <= SMALL_POOL_DEVICES ? n_base : SPLIT_SEEDS;
    for (int32_t ti = 0; ti < n_base; ti++) {
      double best = INFINITY;
      for (size_t k = 0; k < a->n_configs; k++)
        if (a->configs[k].pat == ti)
          best = fmin(best, a->configs[k].heur_s);
      int32_t j = n_seeds++; /* insertion by best greedy point, stable */
      while (j > 0 && best < seed_s[j - 1]) {
        seeds[j] = seeds[j - 1];
        seed_s[j] = seed_s[j - 1];
        j--;
      }
      seeds[j] = ti;
      seed_s[j] = best;
    }
    for (int32_t si = 0; si < HS_MIN(n_seeds, max_seeds); si++) {
      int32_t ti = seeds[si];
      for (int32_t k = 0; k < a->n_kinds; k++) {
        int32_t nk = 0;
        for (size_t n = 0; n < c->n_nodes; n++)
          nk += a->kind_of_node[n] == k;
        int32_t t1 = 0;
        for (size_t n = 0; n < c->n_nodes && !t1; n++)
          if (a->kind_of_node[n] == k)
            t1 = a->pat_node_t[ti][n];
        for (int32_t x = 0; x < ntk[k] && nk >= 2; x++) {
          int32_t t2 = tks[k][x];
          if (t2 == t1 || (max_seeds == SPLIT_SEEDS && t2 != 2 * t1 && 2 * t2 != t1))
            continue;
          memcpy(node_t, a->pat_node_t[ti], c->n_nodes * sizeof *node_t);
          for (size_t n = 0, seen = 0; n < c->n_nodes; n++)
            if (a->kind_of_node[n] == k && seen++ >= (size_t)(nk + 1) / 2)
              node_t[n] = t2;
          HS_CHECK(add_new_pattern(a, node_t, err));
        }
        /* mixed degrees inside one node (every node of type k): the first
         * half of its GPUs in TP groups of d1, the second half of d2
         * (e.g. 8 = 4 + 2 + 2); up to SMALL_POOL_DEVICES GPUs every pair
         * of legal degrees up to half a node, above only pairs of the
         * seed's degree and a neighbour (half, double) */
        int32_t half = INT32_MAX;
        for (size_t n = 0; n < c->n_nodes; n++)
          if (a->kind_of_node[n] == k)
            half = HS_MIN(half, c->nodes[n].n_devices % 2 ? 0 : c->nodes[n].n_devices / 2);
        for (int32_t x = 0; x < ntk[k] * ntk[k]; x++) {
          int32_t d1 = tks[k][x / ntk[k]], d2 = tks[k][x % ntk[k]];
          if (d1 == d2 || d1 > half || d2 > half)
            continue;
          bool ok = true;
          for (size_t n = 0; n < c->n_nodes && ok; n++)
            ok = a->kind_of_node[n] != k || ((c->nodes[n].n_devices / 2) % d1 == 0 &&
                                                 (c->nodes[n].n_devices / 2) % d2 == 0);
          if (!ok || (max_seeds == SPLIT_SEEDS && !((d1 == t1 && (d2 == 2 * t1 || 2 * d2 == t1)) ||
                                                    (d2 == t1 && (d1 == 2 * t1 || 2 * d1 == t1)))))
            continue;
          memcpy(node_t, a->pat_node_t[ti], c->n_nodes * sizeof *node_t);
          for (size_t n = 0; n < c->n_nodes; n++)
            if (a->kind_of_node[n] == k)
              node_t[n] = d1 * MIX_BASE + d2;
          HS_CHECK(add_new_pattern(a, node_t, err));
        }
        /* three-way splits (small clusters only): the type's nodes in
         * three runs [0, i), [i, j), [j, nk) of device order, the first
         * with the seed's degree, the others with any legal degree each
         * (with three nodes: every degree per node after the first) */
        if (max_seeds == SPLIT_SEEDS || nk < 3)
          continue;
        for (int32_t i = 1; i < nk - 1; i++)
          for (int32_t j = i + 1; j < nk; j++)
            for (int32_t x = 0; x < ntk[k] * ntk[k]; x++) {
              int32_t t2 = tks[k][x / ntk[k]], t3 = tks[k][x % ntk[k]];
              if (t2 == t1 || t3 == t2)
                continue; /* a two-way split or none: listed above */
              memcpy(node_t, a->pat_node_t[ti], c->n_nodes * sizeof *node_t);
              for (size_t n = 0, seen = 0; n < c->n_nodes; n++)
                if (a->kind_of_node[n] == k) {
                  node_t[n] = (int32_t)seen < i ? t1 : (int32_t)seen < j ? t2 : t3;
                  seen++;
                }
              HS_CHECK(add_new_pattern(a, node_t, err));
            }
      }
    }
  }
  free(node_t);
  node_t = NULL;
  if (st == HS_ENOMEM)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  if (a->n_configs == 0)
    HS_FAIL(hs_error_set(err, HS_EINFEASIBLE,
                         "autohet: no configuration (global batch %lld, %zu devices)",
                         (long long)a->B, c->n_devices));
  qsort(a->configs, a->n_configs, sizeof *a->configs, cmp_config);
  return HS_OK;
cleanup:
  free(node_t);
  if (st != HS_OK && err && !err->msg[0])
    hs_error_set(err, st, "autohet: %s", hs_status_message(st));
  autohet_free(a);
  return st;
}

/* hetero-1f1b warm-up depths of plan p (hapt's rule, search/hapt_space.c):
 * stage r of a pipeline of S runs S - r - 1 forwards before its first
 * backward, plus ceil(c / t_fwd) when its outgoing activation crosses
 * sites (forwards keep the slow link busy while the send is in flight),
 * then made non-increasing along the pipeline (a shallower warm-up than
 * the successor's deadlocks). O(stages) estimates. */
static hs_status_t set_warmups(autohet_t *a, hs_plan_t *p)
{
  hs_estimator_set_practice(a->est, &p->practice);
  hs_status_t st = HS_OK;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t S = pl->n_stages;
    for (int32_t s = 0; s < S; s++) {
      hs_plan_stage_t *stg = &pl->stages[s];
      const hs_plan_replica_t *r = &stg->replicas[0];
      int32_t extra = 0;
      if (s + 1 < S) {
        const hs_plan_replica_t *nx = &pl->stages[s + 1].replicas[0];
        int32_t d0 = r->devices[0], d1 = nx->devices[0];
        if (a->c->devices[d0].site != a->c->devices[d1].site) {
          hs_stage_cost_t sc;
          st = hs_estimate_stage(a->est, stg->op_first, stg->op_last, r->devices, r->n_devices,
                                 pl->microbatch_size, stg->recompute, &sc);
          if (st != HS_OK)
            break;
          double c = hs_estimate_p2p_s(a->est, d0, d1,
                                       a->m->ops[stg->op_last - 1].out_bytes * pl->microbatch_size,
                                       HS_MIN(r->n_devices, nx->n_devices));
          if (sc.fwd_s > 0)
            extra = (int32_t)ceil(c / sc.fwd_s);
        }
      }
      stg->warmup = S - s - 1 + extra;
    }
    for (int32_t s = S - 2; s >= 0; s--)
      pl->stages[s].warmup = HS_MAX(pl->stages[s].warmup, pl->stages[s + 1].warmup + 1);
    if (st != HS_OK)
      break;
  }
  hs_estimator_set_practice(a->est, &a->base_pr);
  return st;
}

/* Variant k of the best simulated plan (pool.best): ZeRO stage, sequence
 * parallelism and schedule set absolutely from k, so that after all
 * n_var of them the plan is the best of that grid for its layout; then
 * (k = n_var, n_var + 1, with practice search) every stage's recomputation
 * selective, then none (the MILP's classes are none and full).
 * Simulates it and keeps it when it fits and is faster. O(one simulation). */
static hs_status_t variant_step(autohet_t *a, int32_t k, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_cand_pool_t *p = &a->pool;
  hs_plan_t v;
  hs_plan_init(&v);
  hs_report_t rep;
  hs_report_init(&rep);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  const hs_plan_t *cur = &p->plans[p->best];
  if (k >= a->n_var) {
    hs_recompute_t rc = k == a->n_var ? HS_RECOMPUTE_SELECTIVE : HS_RECOMPUTE_NONE;
    bool same = true;
    for (int32_t i = 0; i < cur->n_pipelines; i++)
      for (int32_t s = 0; s < cur->pipelines[i].n_stages; s++)
        same = same && cur->pipelines[i].stages[s].recompute == rc;
    if (same)
      goto cleanup;
    HS_CHECK(hs_plan_copy(cur, &v, err));
    for (int32_t i = 0; i < v.n_pipelines; i++)
      for (int32_t s = 0; s < v.pipelines[i].n_stages; s++)
        v.pipelines[i].stages[s].recompute = rc;
    goto simulate;
  }
  bool async = k % 2 == 1;
  int32_t rest = k / 2;
  int32_t nsp = a->o.search_practice && !a->o.practice.sequence_parallel ? 2 : 1;
  hs_practice_t pr = cur->practice;
  if (a->o.search_practice) {
    pr.sequence_parallel = a->o.practice.sequence_parallel || rest % nsp == 1;
    pr.zero_stage = a->o.practice.zero_stage + rest / nsp;
  }
  if (pr.expert_parallel > 1 && pr.zero_stage >= 3)
    goto cleanup; /* not modelled with expert parallelism (hs_plan_validate) */
  if (async && cur->chunks > 1)
    goto cleanup; /* an interleaved plan (transform_step) keeps its schedule */
  HS_CHECK(hs_plan_copy(cur, &v, err));
  hs_plan_set_practice(&v, &pr);
  hs_strlcpy(v.schedule, async ? "hetero-1f1b" : cur->chunks > 1 ? cur->schedule : "1f1b",
             sizeof v.schedule);
  v.async_send = async;
  for (int32_t i = 0; i < v.n_pipelines; i++)
    for (int32_t s = 0; s < v.pipelines[i].n_stages; s++)
      v.pipelines[i].stages[s].warmup = -1;
  if (async && set_warmups(a, &v) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating warm-ups"));
  if (hs_practice_equal(&v.practice, &cur->practice) && v.async_send == cur->async_send &&
      strcmp(v.schedule, cur->schedule) == 0)
    goto cleanup; /* the plan itself (or SP dropped: no TP) */
simulate:
  if (a->c->n_devices > MID_POOL_DEVICES) {
    /* large clusters: a simulation costs seconds; only a variant the
     * estimator puts within VAR_EST_SLACK of the best plan is simulated */
    hs_estimate_t ev, ec;
    HS_CHECK(hs_estimate_plan(a->est, &v, true, &ev, err));
    HS_CHECK(hs_estimate_plan(a->est, cur, false, &ec, err));
    hs_estimator_set_practice(a->est, &a->base_pr);
    if (ev.oom || !(ev.iteration_s < ec.iteration_s * VAR_EST_SLACK)) {
      a->var_pruned++;
      goto cleanup;
    }
  }
  if (!hs__sim_fits(p->deadline_s, p->sim_scale * hs__sim_cost_s(&v))) {
    a->deadline_hit = a->budget_hit = true; /* predicted to end past the deadline */
    goto cleanup;
  }
  a->var_sims++;
  st = hs_simulate(a->m, a->c, &v, NULL, &rep, &e2);
  if (st == HS_ENOMEM)
    HS_FAIL(hs_error_set(err, st, "%s", e2.msg));
  if (st != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL,
                         "autohet emitted a plan variant the simulator rejects: %.200s", e2.msg));
  if (!rep.oom && rep.iteration_time_s < p->best_sim_s) {
    hs_plan_t tmp = p->plans[p->best];
    p->plans[p->best] = v;
    v = tmp;
    p->best_sim_s = rep.iteration_time_s;
    a->var_better++;
  }
cleanup:
  hs_report_destroy(&rep);
  hs_plan_destroy(&v);
  return st;
}

/* ---- practice transforms: context / expert parallelism, interleaving ------ */

/* Block index whose first op is `op` (0 for op 0 and the embedding, L for
 * the op after the blocks), -1 when op is no block boundary. O(log L). */
static int32_t block_at(const autohet_t *a, int32_t op)
{
  if (op <= a->block_first[0])
    return 0;
  if (op >= a->block_first[a->L])
    return a->L;
  int32_t lo = 0, hi = a->L;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (a->block_first[mid] < op)
      lo = mid + 1;
    else
      hi = mid;
  }
  return a->block_first[lo] == op ? lo : -1;
}

/* Every pipeline of p has pipeline 0's stages (op ranges, one replica of
 * the same TP degree, recomputation), microbatch size and count, 1f1b or
 * hetero-1f1b without explicit orders (a transform runs plain 1f1b or
 * interleaved-1f1b; the variants put async sends back): the symmetric
 * plans the transforms below apply to. O(stages). */
static bool pipelines_alike(const hs_plan_t *p)
{
  if (p->n_pipelines < 1 || p->chunks > 1 || p->n_shards > 0 ||
      (strcmp(p->schedule, "1f1b") != 0 && strcmp(p->schedule, "hetero-1f1b") != 0) ||
      p->practice.context_parallel > 1 || p->practice.expert_parallel > 1)
    return false;
  const hs_plan_pipeline_t *p0 = &p->pipelines[0];
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    if (pl->n_stages != p0->n_stages || pl->microbatch_size != p0->microbatch_size ||
        pl->n_microbatches != p0->n_microbatches)
      return false;
    for (int32_t s = 0; s < pl->n_stages; s++) {
      const hs_plan_stage_t *x = &p0->stages[s], *y = &pl->stages[s];
      if (y->n_replicas != 1 || x->op_first != y->op_first || x->op_last != y->op_last ||
          x->recompute != y->recompute || x->replicas[0].n_devices != y->replicas[0].n_devices ||
          y->order)
        return false;
    }
  }
  return true;
}

/* The plan src (pipelines_alike) under practice transform x: groups of
 * x.C consecutive pipelines merged into one whose every stage has the C
 * TP groups as a context-parallel group (each replica 1/C of every
 * microbatch's sequence; x.cp_mbs: the C pipelines' microbatches side by
 * side, microbatch size x C, else one after the other, count x C) or, with
 * x.cp_split, each TP group of t devices split into a CP group of C TP
 * groups of t / C (TP traded for CP, pipelines unchanged), experts
 * split over x.E consecutive merged pipelines, and each stage's blocks cut
 * into x.v interleaved chunks (interleaved-1f1b; chunk j of every stage
 * holds the j-th v-th of its blocks). *ok false (nothing built) when x
 * does not apply: C or E does not divide the pipelines, a stage's blocks
 * are not a multiple of v, the microbatches not a multiple of the stages
 * (Megatron's rule for interleaving). O(devices + stages v). */
typedef struct xform {
  int32_t C, E, v;
  bool cp_mbs;
  bool cp_split;         /* the CP group from each TP group's t devices as C of t / C */
} xform_t;

static hs_status_t transform(const autohet_t *a, const hs_plan_t *src, xform_t x, hs_plan_t *out,
                             bool *ok)
{
  hs_status_t st = HS_OK;
  *ok = false;
  hs_plan_init(out);
  const hs_plan_pipeline_t *p0 = &src->pipelines[0];
  int32_t G = src->n_pipelines, S = p0->n_stages, C = x.C, v = x.v;
  int32_t M = x.cp_split ? 1 : C; /* pipelines merged into one */
  if (G % M || (G / M) % x.E || (x.E > 1 && hs_plan_zero_stage(src) >= 3))
    return HS_OK;
  for (int32_t s = 0; x.cp_split && s < S; s++) {
    int32_t t = p0->stages[s].replicas[0].n_devices;
    if (t % C || !hs_model_tp_ok(a->m, t / C))
      return HS_OK;
  }
  int32_t mbs = p0->microbatch_size * (x.cp_mbs && !x.cp_split ? C : 1);
  int64_t nmb = (int64_t)p0->n_microbatches * (x.cp_mbs || x.cp_split ? 1 : C);
  if (mbs > a->maxmb * C || nmb > INT32_MAX)
    return HS_OK;
  int32_t nb[64];
  if (v > 1 && (S < 2 || S > 64 || nmb % S))
    return HS_OK;
  for (int32_t s = 0; v > 1 && s < S; s++) {
    int32_t b0 = block_at(a, p0->stages[s].op_first), b1 = block_at(a, p0->stages[s].op_last);
    if (b0 < 0 || b1 < 0 || (b1 - b0) % v || b1 - b0 < v)
      return HS_OK;
    nb[s] = (b1 - b0) / v;
  }
  hs_strlcpy(out->strategy, src->strategy, sizeof out->strategy);
  hs_strlcpy(out->schedule, v > 1 ? "interleaved-1f1b" : "1f1b", sizeof out->schedule);
  out->chunks = v;
  out->precision = src->precision;
  out->optimizer_sharding = src->optimizer_sharding;
  out->bucket_bytes = src->bucket_bytes;
  HS_CHECK(hs_plan_alloc_pipelines(out, G / M));
  for (int32_t g = 0; g < G / M; g++) {
    hs_plan_pipeline_t *pl = &out->pipelines[g];
    pl->microbatch_size = mbs;
    pl->n_microbatches = (int32_t)nmb;
    HS_CHECK(hs_plan_alloc_stages(pl, S * v));
    int32_t blk = 0;
    for (int32_t k = 0; k < S * v; k++) {
      int32_t s = k % S; /* rank of virtual stage k */
      const hs_plan_stage_t *from = &p0->stages[s];
      hs_plan_stage_t *stg = &pl->stages[k];
      if (v > 1) {
        stg->op_first = k == 0 ? 0 : a->block_first[blk];
        blk += nb[s];
        stg->op_last = k == S * v - 1 ? (int32_t)a->m->n_ops : a->block_first[blk];
      } else {
        stg->op_first = from->op_first;
        stg->op_last = from->op_last;
      }
      stg->recompute = from->recompute;
      HS_CHECK(hs_plan_alloc_replicas(stg, C));
      for (int32_t q = 0; q < C; q++) {
        const hs_plan_replica_t *r =
            &src->pipelines[x.cp_split ? g : g * C + q].stages[s].replicas[0];
        int32_t n = x.cp_split ? r->n_devices / C : r->n_devices;
        HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[q],
                                             r->devices + (x.cp_split ? q * n : 0), n));
        stg->replicas[q].share = 1.0 / C;
      }
    }
  }
  hs_practice_t pr = src->practice;
  pr.sequence_parallel = a->base_pr.sequence_parallel || src->practice.sequence_parallel;
  pr.context_parallel = C;
  pr.expert_parallel = x.E;
  hs_plan_set_practice(out, &pr);
  *ok = true;
cleanup:
  if (st != HS_OK)
    hs_plan_destroy(out);
  return st;
}

/* Offers every practice transform of every simulated pool plan and every
 * kept source (keep_source) that is symmetric (pipelines_alike) to a->xpool, ranked by the estimator (memory
 * included; a transform that does not fit is dropped). The transforms: C
 * in a->cps, the three CP layouts, E in a->eps, v from 1 up to the largest
 * chunk count a stage's blocks allow (at most HS_AUTOHET_MAX_V); not the
 * identity. O(pool x |C| x 2 x |E| x |v| x one estimate). */
#define HS_AUTOHET_MAX_V 8
static hs_status_t offer_transforms(autohet_t *a, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_t t;
  hs_plan_init(&t);
  int32_t n_pool = HS_MIN(a->pool.n, a->pool.next_sim);
  for (int32_t k = 0; k < n_pool + a->n_xsrc; k++) {
    const hs_plan_t *src = k < n_pool ? &a->pool.plans[k] : &a->xsrc[k - n_pool];
    if (!pipelines_alike(src))
      continue;
    for (int32_t ci = 0; ci < a->n_cp; ci++)
      for (int32_t lay = 0; lay < (a->cps[ci] > 1 ? 3 : 1); lay++)
        for (int32_t ei = 0; ei < a->n_ep; ei++)
          for (int32_t v = 1; v <= (a->o.search_practice ? HS_AUTOHET_MAX_V : 1); v++) {
            xform_t x = {a->cps[ci], a->eps[ei], v, lay == 1, lay == 2};
            if (x.C == 1 && x.E == 1 && x.v == 1)
              continue;
            if (out_of_time(a))
              goto cleanup;
            bool ok = false;
            HS_CHECK(transform(a, src, x, &t, &ok));
            if (!ok)
              continue;
            hs_error_t e2;
            hs_error_init(&e2);
            e2.warn_fp = NULL;
            hs_estimate_t e = {0};
            if (hs_plan_validate(&t, a->m, a->c, NULL, &e2) == HS_OK)
              HS_CHECK(hs_estimate_plan(a->est, &t, true, &e, err));
            else
              e.oom = true; /* not a plan the simulator takes: dropped */
            a->x_estimated++;
            if (!e.oom && isfinite(e.iteration_s))
              hs__cpool_offer(&a->xpool, &t, e.iteration_s);
            hs_plan_destroy(&t);
            hs_plan_init(&t);
          }
  }
cleanup:
  hs_estimator_set_practice(a->est, &a->base_pr);
  hs_plan_destroy(&t);
  if (st == HS_ENOMEM)
    hs_error_set(err, st, "autohet: out of memory");
  return st;
}

/* One step of the transform phase: offer the transforms (first call),
 * then simulate xpool's entries one per step; at the end the fastest
 * transformed plan replaces the pool's best when it is faster. */
static hs_status_t transform_step(autohet_t *a, hs_error_t *err)
{
  if (!a->x_built) {
    a->x_built = true;
    return a->pool.best >= 0 ? offer_transforms(a, err) : HS_OK;
  }
  bool done = false;
  hs_status_t st = hs__cpool_sim_step(&a->xpool, a->m, a->c, &done, err);
  if (st != HS_OK || !done)
    return st;
  a->x_done = true;
  hs_cand_pool_t *p = &a->pool, *q = &a->xpool;
  if (q->best >= 0 && p->best >= 0 && q->best_sim_s < p->best_sim_s) {
    hs_plan_t tmp = p->plans[p->best];
    p->plans[p->best] = q->plans[q->best];
    q->plans[q->best] = tmp;
    double e = p->est_s[p->best];
    p->est_s[p->best] = q->est_s[q->best];
    q->est_s[q->best] = e;
    p->best_sim_s = q->best_sim_s;
    a->x_better = true;
  }
  return HS_OK;
}

static hs_status_t autohet_step_one(autohet_t *a, bool *done, double *progress, hs_error_t *err);

/* One step; a failure always carries a message (lp.c and the plan
 * allocators return HS_ENOMEM without one). */
static hs_status_t autohet_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  hs_status_t st = autohet_step_one(state, done, progress, err);
  if (st != HS_OK && err && !err->msg[0])
    hs_error_set(err, st, "autohet: %s", hs_status_message(st));
  return st;
}

static hs_status_t autohet_step_one(autohet_t *a, bool *done, double *progress, hs_error_t *err)
{
  *done = false;
  *progress = -1.0;
  if (!a->sim_phase) {
    /* MILP phase; 85% of the budget, the rest for simulating the pool */
    a->deadline_hit |= hs__past(a->o.deadline_s);
    bool spent = (a->budget_s > 0 && now_s() - a->t_start > 0.85 * a->budget_s) ||
                 a->deadline_hit ||
                 (a->budget_work > 0 && a->work > MILP_SHARE * a->budget_work);
    if (a->next < a->n_configs && spent) {
      a->budget_hit = true;
      a->next = a->n_configs;
    }
    if (a->next >= a->n_configs) {
      a->sim_phase = true;
      return HS_OK;
    }
    const config_t *cf = &a->configs[a->next++];
    *progress = 0.9 * (double)a->next / (double)a->n_configs;
    /* a configuration whose lower bound cannot reach the pool is skipped */
    if (a->have_best && cf->lb_s >= a->best_T * CUTOFF)
      return HS_OK;
    return solve_config(a, cf, err);
  }
  if (!a->var_phase) {
    bool sim_done = false;
    hs_status_t st = hs__cpool_sim_step(&a->pool, a->m, a->c, &sim_done, err);
    if (st != HS_OK) {
      *done = true;
      return st;
    }
    a->var_phase = sim_done;
    *progress = 0.95;
    return HS_OK;
  }
  /* variants of the best plan, then the transforms of the finalists; when
   * a transform wins, the variants again on it (so the plan is never
   * worse than the variants of the untransformed best) */
  if (a->pool.best >= 0 && a->var_next < a->n_var + (a->o.search_practice ? 2 : 0)) {
    *progress = 0.97;
    hs_status_t st = variant_step(a, a->var_next++, err);
    *done = st != HS_OK;
    return st;
  }
  if (!a->x_done) {
    *progress = 0.96;
    hs_status_t st = transform_step(a, err);
    if (st == HS_OK && a->x_done && a->x_better)
      a->var_next = 0;
    *done = st != HS_OK;
    return st;
  }
  *done = true;
  *progress = 1.0;
  return HS_OK;
}

static hs_status_t autohet_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                                  hs_error_t *err)
{
  autohet_t *a = state;
  memset(stats, 0, sizeof *stats);
  stats->search_s = now_s() - a->t_start;
  stats->candidates = a->milps;
  stats->nodes_expanded = 0;
  if (!a->have_best && !a->have_rounded)
    return hs_error_set(err, HS_EINFEASIBLE,
                        "autohet: no feasible plan (%llu MILPs; memory or batch %lld too small?)",
                        (unsigned long long)a->milps, (long long)a->B);
  hs_status_t st = hs__cpool_result(&a->pool, out, &stats->predicted_s, "autohet", err);
  if (st != HS_OK)
    return st;
  bool exhaustive = true;
  for (int ti = 0; ti < a->n_pats; ti++)
    exhaustive &= a->n_groups[ti] <= EXHAUSTIVE_GROUPS;
  stats->optimal = a->all_proven && !a->budget_hit && exhaustive;
  snprintf(stats->note, sizeof stats->note,
           "best MILP %.6g s; %llu greedy points, %llu MILPs (%llu refuted by the incumbent, %lld simplex iterations), %zu configurations%s%s%s",
           a->best_T, (unsigned long long)a->greedy, (unsigned long long)a->milps, (unsigned long long)a->refuted, (long long)a->iterations, a->n_configs,
           a->budget_hit ? (a->deadline_hit || (a->budget_s > 0 && a->work <= MILP_SHARE * a->budget_work)
                                ? "; stopped at the time limit" : "; stopped at the work budget") : "",
           a->all_proven ? "" : "; some MILP not proven optimal",
           exhaustive ? "" : "; heuristic device grouping");
  if (!a->all_proven && a->worst_gap > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n, " (gap <= %.1f%%)", 100 * a->worst_gap);
  }
  if (a->var_sims > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu practice/schedule variants of the best plan simulated, %llu better",
             (unsigned long long)a->var_sims, (unsigned long long)a->var_better);
    if (a->var_pruned > 0) {
      n = strlen(stats->note);
      snprintf(stats->note + n, sizeof stats->note - n, " (%llu left out by their estimate)",
               (unsigned long long)a->var_pruned);
    }
  }
  if (a->x_estimated > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu context/expert-parallel or interleaved transforms estimated, %d simulated%s",
             (unsigned long long)a->x_estimated, (int)a->xpool.next_sim,
             a->x_better ? ", one better" : "");
  }
  if (a->rounded > 0) {
    size_t n = strlen(stats->note);
    snprintf(stats->note + n, sizeof stats->note - n,
             "; %llu MILPs stopped without an integer solution, their LP relaxation rounded",
             (unsigned long long)a->rounded);
  }
  hs__cpool_note(&a->pool, stats->note, sizeof stats->note);
  return HS_OK;
}

const hs_planner_type_t hs_planner_autohet = {
    .name = "autohet",
    .description = "AutoHet: asymmetric 3D parallelism (device grouping, per-pipeline stages and "
                   "microbatches) as a MILP solved with GLPK",
    .state_size = sizeof(autohet_t),
    .init = autohet_init,
    .step = autohet_step,
    .result = autohet_result,
    .free = autohet_free,
};
