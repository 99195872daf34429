/*
 * hap.c - HAP (Zhang et al., EuroSys'24): SPMD program synthesis by A*
 * search over a distributed instruction set, alternating with an LP (GLPK
 * via lp.c) for per-device sharding ratios. docs/hap.md has the model, the
 * sources (shared/reference/planners.md §1) and the deviations.
 *
 * Representation. The model is a chain: op k consumes op k-1's output. A
 * search state is (k, layout of the tensor entering op k) with layouts
 * Identity (replicated), Gather(batch), Gather(feature) and Reduce (partial
 * sums): 4 (n_ops + 1) states. An edge is HAP's fused step "convert the input
 * (all-gather padded or grouped broadcast, reduce-scatter, all-reduce,
 * all-to-all, slice), then compute op k under one sharding rule" and costs
 *     max_d comp_d + max_d comm_d   (bulk synchronous, as hap.rs)
 * with comp_d = ratio-weighted FLOPs / device FLOP/s and comm from
 * hs_coll_estimate_s on the real topology. Ratios are per GPU type (every
 * device of a type gets the same ratio), so the LP has one variable per type.
 *
 * A* uses h(k) = sum_{j >= k} FLOPs_j / sum_d FLOP/s_d (perfect balance, zero
 * communication): admissible and consistent, so the first goal popped is
 * optimal; memoisation keeps the best g per state (dominance). The LP
 *     min sum_t C_t + M_t   s.t. C_t >= a_t r_c / F_c, M_t >= m_t N r_c + k_t,
 *                               sum_c n_c r_c = 1, r >= 0
 * re-optimises ratios for the fixed program; the loop stops when a new
 * program is not cheaper (at most MAX_ROUNDS rounds).
 *
 * Complexity: A* O(S log S) with S = 4 (n_ops + 1) states and <= 8 edges per
 * state; cost tables: a few collective estimates fitted as affine in bytes
 * (O(devices) path queries each; grouped broadcast O(devices^2) per round); LP
 * O(n_ops x types) rows.
 */
#include "hap_spmd.h"
#include "lp.h"
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUNDS 20
#define MAX_TYPES 16

enum { LY_ID, LY_GB, LY_GF, LY_RD, LY__COUNT };

/* Sharding rules; R_REPL is all-Identity. */
enum { R_REPL, R_BATCH, R_BATCH_SFB, R_OUT, R_IN, R_HEADS, R_EXPERTS, R_VOCAB, R__COUNT };

static const uint32_t rule_dim[R__COUNT] = {0, HS_SHARD_BATCH, HS_SHARD_BATCH, HS_SHARD_OUT,
                                            HS_SHARD_IN, HS_SHARD_HEADS, HS_SHARD_EXPERTS,
                                            HS_SHARD_VOCAB};

/* One step of a program: op k under rule, input converted from `from`. */
typedef struct instr {
  int8_t rule, from, in, out;
  hs_coll_op_t conv;     /* conversion used (HS_COLL__COUNT = none) */
  hs_coll_op_t own;      /* the rule's own exchange (grad sync, SFB, a2a), or __COUNT */
} instr_t;

/* Per-op, ratio-independent collective coefficients: a cost is
 * k (constant) + m * N * max_c r_c (padded: the largest shard sets it). */
typedef struct op_coef {
  double flops;          /* fwd+bwd for the global batch */
  double x_bytes;        /* input tensor, global batch */
  double ar_x, ag_x_m, a2a_x_m; /* AR of the input; padded AG / a2a coefficient (m) */
  double gb_x;           /* grouped broadcast of the input (ratio independent) */
  double ar_w;           /* weight-gradient all-reduce */
  double sfb_m;          /* SFB: padded all-gather coefficient of the factors (m) */
  bool sfb_ok;           /* batch (M + N) < M N */
  double a2a_out_m;      /* experts: all-to-all of the routed tokens, coefficient */
  double ar_out;         /* OUT GEMM backward: all-reduce of the input gradient */
} op_coef_t;

typedef struct hap {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_plan_opts_t o;
  hs_topology_t *topo;
  int64_t B;
  int32_t N;
  int32_t n_types;
  int32_t type_of_gpu[MAX_TYPES];  /* catalog gpu index of each type */
  int32_t n_of[MAX_TYPES];
  double F[MAX_TYPES];             /* FLOP/s per device of the type */
  double sumF;
  int32_t *dev_type;               /* per device */
  op_coef_t *coef;
  double *h;                       /* n_ops + 1: heuristic suffix sums */
  /* Collective times over all devices are affine in bytes (latency + bytes /
   * bandwidth in every algorithm of sim/coll_*.c): two estimates per kind
   * give lat + per_byte x bytes, so big clusters pay O(N) path queries per
   * kind, not per op. Index: hs_coll_op_t. */
  double aff_lat[HS_COLL__COUNT], aff_per_byte[HS_COLL__COUNT];
  bool aff_ok[HS_COLL__COUNT];
  bool oom;             /* a collective estimate ran out of memory (coll_est) */
  bool use_heuristic;
  /* alternation */
  double r[MAX_TYPES];
  double best_cost;
  double best_r[MAX_TYPES];
  instr_t *best_prog, *prog;
  int32_t rounds;
  bool done;
  uint64_t expanded;
  bool out_of_time;     /* a collective estimate was skipped for opts.deadline_s */
} hap_t;

/* ---- cost pieces ------------------------------------------------------------- */

static double coll_est(hap_t *a, hs_coll_op_t op, double bytes, const double *shares)
{
  if (bytes <= 0.0 || a->N <= 1)
    return 0.0;
  if (a->out_of_time || !hs__sim_fits(a->o.deadline_s, hs__coll_cost_s(op, a->N))) {
    a->out_of_time = true; /* the caller reports the time limit: 0 s is no answer */
    return 0.0;
  }
  int32_t *devs = NULL;
  double t = 0.0;
  devs = hs_calloc((size_t)a->N, sizeof *devs);
  if (!devs) {
    a->oom = true; /* the caller reports HS_ENOMEM: a 0 s collective is no answer */
    return 0.0;
  }
  for (int32_t d = 0; d < a->N; d++)
    devs[d] = d;
  hs_coll_t cl;
  hs_coll_init(&cl);
  cl.op = op;
  cl.devices = devs;
  cl.n = a->N;
  cl.bytes = bytes;
  cl.shares = shares;
  if (hs_coll_estimate_topo(a->topo, &cl, &t, NULL) == HS_ENOMEM)
    a->oom = true;
  free(devs);
  return isfinite(t) ? t : 0.0;
}

/* Affine fit of an equal-share collective (ratio independent). */
static double coll_fast(hap_t *a, hs_coll_op_t op, double bytes)
{
  if (bytes <= 0.0 || a->N <= 1)
    return 0.0;
  if (!a->aff_ok[op]) {
    double t1 = coll_est(a, op, 1e6, NULL), t2 = coll_est(a, op, 2e6, NULL);
    a->aff_per_byte[op] = (t2 - t1) / 1e6;
    a->aff_lat[op] = t1 - a->aff_per_byte[op] * 1e6;
    a->aff_ok[op] = true;
  }
  return a->aff_lat[op] + a->aff_per_byte[op] * bytes;
}

static double max_ratio(const hap_t *a, const double *r)
{
  double mx = 0.0;
  for (int32_t c = 0; c < a->n_types; c++)
    if (a->n_of[c] > 0)
      mx = fmax(mx, r[c]);
  return mx;
}

/* Grouped broadcast of `bytes` at ratios r (one broadcast per rank), from
 * an affine fit at these ratios (2 estimates, each O(N^2) path queries). */
static void grouped_fit(hap_t *a, const double *r, double *lat, double *per_byte)
{
  *lat = 0.0;
  *per_byte = 0.0;
  double *sh = hs_calloc((size_t)a->N, sizeof *sh);
  if (!sh) {
    *lat = INFINITY;
    return;
  }
  double tot = 0.0;
  for (int32_t d = 0; d < a->N; d++)
    tot += sh[d] = r[a->dev_type[d]];
  for (int32_t d = 0; d < a->N && tot > 0; d++)
    sh[d] /= tot;
  double t1 = coll_est(a, HS_COLL_GROUPED_BROADCAST, 1e6, sh);
  double t2 = coll_est(a, HS_COLL_GROUPED_BROADCAST, 2e6, sh);
  free(sh);
  *per_byte = (t2 - t1) / 1e6;
  *lat = t1 - *per_byte * 1e6;
}

/* Comm of converting the input of op k from layout `from` to `to` at ratios
 * r: fwd + bwd (the backward mirrors: AG <-> RS, AR <-> AR, a2a <-> a2a). */
static double conv_s(hap_t *a, int32_t k, int from, int to, const double *r, double gb,
                     hs_coll_op_t *which)
{
  const op_coef_t *q = &a->coef[k];
  double mN = a->N * max_ratio(a, r);
  *which = HS_COLL__COUNT;
  if (from == to || to == LY_RD)
    return from == to ? 0.0 : INFINITY;
  if (from == LY_ID)
    return 0.0; /* dynamic slice */
  if (from == LY_RD) {
    if (to == LY_ID) {
      *which = HS_COLL_ALLREDUCE;
      return 2.0 * q->ar_x;
    }
    *which = HS_COLL_REDUCE_SCATTER;
    return 2.0 * q->ag_x_m * mN;
  }
  if (to == LY_ID) {
    double padded = 2.0 * q->ag_x_m * mN;
    double grouped = 2.0 * gb;
    *which = grouped < padded ? HS_COLL_GROUPED_BROADCAST : HS_COLL_PADDED_ALLGATHER;
    return fmin(padded, grouped);
  }
  *which = HS_COLL_ALLTOALL; /* Gather(batch) <-> Gather(feature) */
  return 2.0 * q->a2a_x_m * mN;
}

/* Input and output layouts of a rule on op k; false when not applicable. */
static bool rule_layouts(const hap_t *a, int32_t k, int rule, int *in, int *out)
{
  const hs_op_t *op = &a->m->ops[k];
  uint32_t sh = op->shardable;
  if (rule != R_REPL && !(sh & rule_dim[rule]))
    return false;
  bool gemm = op->kind == HS_OP_GEMM;
  switch (rule) {
  case R_REPL: *in = LY_ID; *out = LY_ID; return true;
  case R_BATCH: *in = LY_GB; *out = LY_GB; return true;
  case R_BATCH_SFB: *in = LY_GB; *out = LY_GB; return gemm && a->coef[k].sfb_ok;
  case R_OUT:
    if (gemm) {
      *in = LY_ID; /* column split: replicated input, feature-sharded output */
      *out = LY_GF;
    } else {
      *in = LY_GF; /* shape-preserving op on a feature-sharded tensor */
      *out = LY_GF;
    }
    return true;
  case R_IN: *in = LY_GF; *out = LY_RD; return gemm;
  case R_HEADS: *in = LY_GF; *out = LY_GF; return true;
  case R_EXPERTS: *in = LY_GB; *out = LY_GB; return true;
  case R_VOCAB:
    if (op->kind == HS_OP_EMBEDDING) {
      *in = LY_ID;
      *out = LY_RD; /* vocabulary-sharded lookup: partial rows */
    } else if (gemm) {
      *in = LY_ID;
      *out = LY_GF;
    } else {
      *in = LY_GF; /* vocabulary-parallel cross entropy */
      *out = LY_RD;
    }
    return true;
  }
  return false;
}

/* Compute and own-comm of a rule at ratios r. */
static void rule_cost(hap_t *a, int32_t k, int rule, const double *r, double *comp, double *comm,
                      hs_coll_op_t *own)
{
  const op_coef_t *q = &a->coef[k];
  double mN = a->N * max_ratio(a, r);
  *own = HS_COLL__COUNT;
  *comm = 0.0;
  if (rule == R_REPL) {
    double f_lo = INFINITY;
    for (int32_t c = 0; c < a->n_types; c++)
      if (a->n_of[c] > 0)
        f_lo = fmin(f_lo, a->F[c]);
    *comp = q->flops / f_lo;
    return;
  }
  double mx = 0.0;
  for (int32_t c = 0; c < a->n_types; c++)
    if (a->n_of[c] > 0)
      mx = fmax(mx, q->flops * r[c] / a->F[c]);
  *comp = mx;
  if (rule == R_BATCH && q->ar_w > 0) {
    *comm = q->ar_w;
    *own = HS_COLL_ALLREDUCE;
  } else if (rule == R_BATCH_SFB) {
    *comm = q->sfb_m * mN;
    *own = HS_COLL_PADDED_ALLGATHER;
  } else if (rule == R_EXPERTS) {
    *comm = 4.0 * q->a2a_out_m * mN; /* dispatch + combine, fwd + bwd */
    *own = HS_COLL_ALLTOALL;
  } else if (rule == R_OUT && a->m->ops[k].kind == HS_OP_GEMM) {
    *comm = q->ar_out; /* input gradient is a partial sum */
    *own = HS_COLL_ALLREDUCE;
  }
}

/* ---- A* ------------------------------------------------------------------------ */

typedef struct hnode {
  double f, g;
  uint64_t seq;
  int32_t state;
} hnode_t;

static bool hless(const hnode_t *x, const hnode_t *y)
{
  return x->f < y->f || (x->f == y->f && x->seq < y->seq);
}

static void heap_push(hnode_t *h, int32_t *n, hnode_t v)
{
  int32_t i = (*n)++;
  h[i] = v;
  while (i > 0 && hless(&h[i], &h[(i - 1) / 2])) {
    hnode_t t = h[i];
    h[i] = h[(i - 1) / 2];
    h[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static hnode_t heap_pop(hnode_t *h, int32_t *n)
{
  hnode_t top = h[0];
  h[0] = h[--(*n)];
  for (int32_t i = 0;;) {
    int32_t l = 2 * i + 1, r = l + 1, s = i;
    if (l < *n && hless(&h[l], &h[s]))
      s = l;
    if (r < *n && hless(&h[r], &h[s]))
      s = r;
    if (s == i)
      break;
    hnode_t t = h[i];
    h[i] = h[s];
    h[s] = t;
    i = s;
  }
  return top;
}

/* Best program at ratios r into prog[n_ops]; returns its cost (INFINITY when
 * no program exists). Expanded nodes are added to *expanded. */
static hs_status_t astar(hap_t *a, const double *r, instr_t *prog, double *cost, uint64_t *expanded)
{
  hs_status_t st = HS_OK;
  int32_t n = (int32_t)a->m->n_ops;
  int32_t S = (n + 1) * LY__COUNT;
  double *g = hs_calloc((size_t)S, sizeof *g);
  instr_t *via = hs_calloc((size_t)S, sizeof *via);
  int32_t *parent = hs_calloc((size_t)S, sizeof *parent);
  uint8_t *closed = hs_calloc((size_t)S, 1);
  double *gb = hs_calloc((size_t)n, sizeof *gb);
  int32_t cap = S * R__COUNT + 8, hn = 0;
  hnode_t *heap = hs_calloc((size_t)cap, sizeof *heap);
  uint64_t seq = 0;
  *cost = INFINITY;
  if (!g || !via || !parent || !closed || !heap || !gb)
    HS_FAIL(HS_ENOMEM);
  double glat, gpb;
  grouped_fit(a, r, &glat, &gpb);
  for (int32_t k = 0; k < n; k++)
    gb[k] = a->coef[k].x_bytes > 0 && a->N > 1 ? glat + gpb * a->coef[k].x_bytes : 0.0;
  for (int32_t s = 0; s < S; s++) {
    g[s] = INFINITY;
    parent[s] = -1;
  }
  /* the input batch may start replicated or batch-sharded for free */
  int starts[2] = {LY_ID, LY_GB};
  for (int i = 0; i < 2; i++) {
    g[starts[i]] = 0.0;
    heap_push(heap, &hn, (hnode_t){.f = a->use_heuristic ? a->h[0] : 0.0, .g = 0.0, .seq = seq++,
                                   .state = starts[i]});
  }
  int32_t goal = -1;
  while (hn > 0) {
    hnode_t cur = heap_pop(heap, &hn);
    int32_t s = cur.state;
    if (closed[s] || cur.g > g[s])
      continue; /* dominated: a cheaper path to this state was found */
    closed[s] = 1;
    (*expanded)++;
    int32_t k = s / LY__COUNT;
    int from = s % LY__COUNT;
    if (k == n) {
      goal = s;
      break;
    }
    for (int rule = 0; rule < R__COUNT; rule++) {
      int in, out;
      if (!rule_layouts(a, k, rule, &in, &out))
        continue;
      hs_coll_op_t cv, own;
      double cc = conv_s(a, k, from, in, r, gb[k], &cv);
      if (!isfinite(cc))
        continue;
      double comp, comm;
      rule_cost(a, k, rule, r, &comp, &comm, &own);
      double ng = cur.g + comp + cc + comm;
      int32_t t = (k + 1) * LY__COUNT + out;
      if (ng < g[t]) {
        g[t] = ng;
        parent[t] = s;
        via[t] = (instr_t){.rule = (int8_t)rule, .from = (int8_t)from, .in = (int8_t)in,
                           .out = (int8_t)out, .conv = cv, .own = own};
        double hh = a->use_heuristic ? a->h[k + 1] : 0.0;
        if (hn < cap)
          heap_push(heap, &hn, (hnode_t){.f = ng + hh, .g = ng, .seq = seq++, .state = t});
      }
    }
  }
  if (goal >= 0) {
    *cost = g[goal];
    for (int32_t s = goal; parent[s] >= 0; s = parent[s])
      prog[s / LY__COUNT - 1] = via[s];
  }
cleanup:
  free(g);
  free(via);
  free(parent);
  free(closed);
  free(gb);
  free(heap);
  return st;
}

/* HAP's cost of program prog at ratios r. O(n_ops). */
static double program_cost(hap_t *a, const instr_t *prog, const double *r)
{
  double total = 0.0, glat, gpb;
  grouped_fit(a, r, &glat, &gpb);
  for (int32_t k = 0; k < (int32_t)a->m->n_ops; k++) {
    const instr_t *p = &prog[k];
    double comp, comm;
    hs_coll_op_t own, cv;
    rule_cost(a, k, p->rule, r, &comp, &comm, &own);
    double gbk = p->conv == HS_COLL_GROUPED_BROADCAST ? glat + gpb * a->coef[k].x_bytes : INFINITY;
    double cc = conv_s(a, k, p->from, p->in, r, gbk, &cv);
    if (p->conv == HS_COLL_PADDED_ALLGATHER)
      cc = 2.0 * a->coef[k].ag_x_m * a->N * max_ratio(a, r);
    total += comp + comm + cc;
  }
  return total;
}

/* LP over the ratios for a fixed program; writes r_out. */
static hs_status_t ratio_lp(hap_t *a, const instr_t *prog, double *r_out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_lp_t *lp = NULL;
  int32_t n = (int32_t)a->m->n_ops;
  int32_t rc[MAX_TYPES], idx[MAX_TYPES + 2];
  double val[MAX_TYPES + 2];
  HS_CHECK(hs_lp_new(true, &lp));
  for (int32_t c = 0; c < a->n_types; c++)
    HS_CHECK(hs_lp_add_col(lp, 0.0, 1.0, 0.0, false, &rc[c]));
  for (int32_t c = 0; c < a->n_types; c++) {
    idx[c] = rc[c];
    val[c] = a->n_of[c];
  }
  HS_CHECK(hs_lp_add_row(lp, a->n_types, idx, val, 1.0, 1.0, err));
  /* one max-shard variable: every padded cost is m_t N max_c r_c */
  int32_t rmax;
  HS_CHECK(hs_lp_add_col(lp, 0.0, 1.0, 0.0, false, &rmax));
  for (int32_t c = 0; c < a->n_types; c++) {
    int32_t i2[2] = {rmax, rc[c]};
    double v2[2] = {1.0, -1.0};
    HS_CHECK(hs_lp_add_row(lp, 2, i2, v2, 0.0, INFINITY, err));
  }
  double mcoef = 0.0; /* sum over instructions of padded coefficients x N */
  for (int32_t k = 0; k < n; k++) {
    const instr_t *p = &prog[k];
    const op_coef_t *q = &a->coef[k];
    if (p->rule != R_REPL && q->flops > 0) {
      int32_t Ct;
      HS_CHECK(hs_lp_add_col(lp, 0.0, INFINITY, 1.0, false, &Ct));
      for (int32_t c = 0; c < a->n_types; c++) {
        int32_t i2[2] = {Ct, rc[c]};
        double v2[2] = {1.0, -q->flops / a->F[c]};
        HS_CHECK(hs_lp_add_row(lp, 2, i2, v2, 0.0, INFINITY, err));
      }
    }
    if (p->conv == HS_COLL_PADDED_ALLGATHER || p->conv == HS_COLL_REDUCE_SCATTER)
      mcoef += 2.0 * q->ag_x_m * a->N;
    if (p->conv == HS_COLL_ALLTOALL)
      mcoef += 2.0 * q->a2a_x_m * a->N;
    if (p->own == HS_COLL_PADDED_ALLGATHER)
      mcoef += q->sfb_m * a->N;
    if (p->rule == R_EXPERTS)
      mcoef += 4.0 * q->a2a_out_m * a->N;
  }
  /* the ratio-independent terms (all-reduce, grouped broadcast, replicated
   * compute) are constants and drop out, as in hap.rs */
  if (mcoef > 0) {
    int32_t Mt;
    HS_CHECK(hs_lp_add_col(lp, 0.0, INFINITY, 1.0, false, &Mt));
    int32_t i2[2] = {Mt, rmax};
    double v2[2] = {1.0, -mcoef};
    HS_CHECK(hs_lp_add_row(lp, 2, i2, v2, 0.0, INFINITY, err));
  }
  hs_lp_result_t res;
  HS_CHECK(hs_lp_solve(lp, NULL, &res, err));
  if (res.status != HS_LP_OPTIMAL && res.status != HS_LP_FEASIBLE)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "hap: ratio LP %s", hs_lp_status_name(res.status)));
  for (int32_t c = 0; c < a->n_types; c++)
    r_out[c] = fmax(0.0, hs_lp_value(lp, rc[c]));
cleanup:
  hs_lp_free(lp);
  return st;
}

/* ---- type object --------------------------------------------------------------- */

static void hap_free(void *state)
{
  hap_t *a = state;
  if (!a)
    return;
  hs_topology_free(a->topo);
  free(a->dev_type);
  free(a->coef);
  free(a->h);
  free(a->best_prog);
  free(a->prog);
  memset(a, 0, sizeof *a);
}

static hs_status_t hap_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                            const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hap_t *a = state;
  memset(a, 0, sizeof *a);
  if (!m || !c || m->n_ops == 0 || c->n_devices == 0)
    return hs_error_set(err, HS_EINVAL, "hap: empty model or cluster");
  if (c->n_devices > INT32_MAX / 4)
    return hs_error_set(err, HS_ELIMIT, "hap: %zu devices", c->n_devices);
  a->m = m;
  a->c = c;
  a->o = *o;
  a->o.precision = hs__precision(o, c);
  a->B = hs__global_batch(o, c);
  a->N = (int32_t)c->n_devices;
  a->use_heuristic = true;
  a->best_cost = INFINITY;
  size_t n = m->n_ops;
  HS_CHECK(hs_topology_new(c, &a->topo, err));
  a->dev_type = hs_calloc(c->n_devices, sizeof *a->dev_type);
  a->coef = hs_calloc(n, sizeof *a->coef);
  a->h = hs_calloc(n + 1, sizeof *a->h);
  a->best_prog = hs_calloc(n, sizeof *a->best_prog);
  a->prog = hs_calloc(n, sizeof *a->prog);
  if (!a->dev_type || !a->coef || !a->h || !a->best_prog || !a->prog)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "hap: out of memory"));
  for (size_t d = 0; d < c->n_devices; d++) {
    int32_t gi = c->devices[d].gpu, t = 0;
    while (t < a->n_types && a->type_of_gpu[t] != gi)
      t++;
    if (t == a->n_types) {
      if (t == MAX_TYPES)
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "hap: more than %d GPU types", MAX_TYPES));
      a->type_of_gpu[t] = gi;
      a->F[t] = hs__gpu_speed(&c->gpus.gpus[gi], a->o.precision);
      if (!(a->F[t] > 0))
        HS_FAIL(hs_error_set(err, HS_EINVAL, "hap: GPU \"%s\" has no FLOP rate",
                             c->gpus.gpus[gi].name));
      a->n_types++;
    }
    a->dev_type[d] = t;
    a->n_of[t]++;
    a->sumF += a->F[t];
  }
  /* ratio-independent coefficients: collectives at equal shares */
  double db = hs_practice_grad_bytes(&a->o.practice, a->o.precision); /* fp32 reduce: 4 */
  double Bd = (double)a->B;
  for (size_t k = 0; k < n; k++) {
    const hs_op_t *op = &m->ops[k];
    op_coef_t *q = &a->coef[k];
    q->flops = (op->fwd_flops + op->bwd_flops) * Bd;
    q->x_bytes = (k > 0 ? m->ops[k - 1].out_bytes : 0.0) * Bd;
    q->ar_x = coll_fast(a, HS_COLL_ALLREDUCE, q->x_bytes);
    /* padded all-gather at equal shares costs N (1/N) X: the coefficient per N max r */
    q->ag_x_m = coll_fast(a, HS_COLL_ALLGATHER, q->x_bytes);
    q->a2a_x_m = coll_fast(a, HS_COLL_ALLTOALL, q->x_bytes / a->N);
    q->ar_w = coll_fast(a, HS_COLL_ALLREDUCE, op->params * db);
    double fac = op->gemm_m * (op->gemm_k + op->gemm_n) * Bd;
    q->sfb_ok = op->kind == HS_OP_GEMM && op->params > 0 && fac < op->gemm_k * op->gemm_n;
    q->sfb_m = q->sfb_ok ? coll_fast(a, HS_COLL_ALLGATHER, fac * db) : 0.0;
    q->a2a_out_m = op->kind == HS_OP_MOE_EXPERT
                       ? coll_fast(a, HS_COLL_ALLTOALL, op->out_bytes * Bd * HS_MAX(op->topk, 1) / a->N)
                       : 0.0;
    q->ar_out = q->ar_x;
  }
  if (a->oom)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "hap: out of memory estimating the collectives"));
  if (a->out_of_time)
    HS_FAIL(hs_error_set(err, HS_ELIMIT,
                         "hap: time limit: the collective estimates over %d GPUs are predicted "
                         "to end after it; raise --time-limit", a->N));
  for (size_t k = n; k-- > 0;)
    a->h[k] = a->h[k + 1] + a->coef[k].flops / a->sumF;
  /* HAP starts from ratios proportional to FLOP/s */
  for (int32_t t = 0; t < a->n_types; t++)
    a->r[t] = a->F[t] / a->sumF;
  return HS_OK;
cleanup:
  hap_free(a);
  return st;
}

/* One round: A* at the current ratios, then the LP for the program found. */
static hs_status_t hap_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hap_t *a = state;
  *progress = -1.0;
  if (a->done || a->rounds >= MAX_ROUNDS) {
    *done = true;
    return HS_OK;
  }
  double cost;
  HS_CHECK(astar(a, a->r, a->prog, &cost, &a->expanded));
  a->rounds++;
  if (a->out_of_time) { /* its collectives were not all costed: the best so far stands */
    a->done = true;
    *done = true;
    return HS_OK;
  }
  if (!(cost < a->best_cost * (1.0 - 1e-9))) {
    a->done = true; /* no improvement: HAP's stopping rule */
    *done = true;
    return HS_OK;
  }
  a->best_cost = cost;
  memcpy(a->best_r, a->r, sizeof a->r);
  memcpy(a->best_prog, a->prog, sizeof *a->prog * a->m->n_ops);
  double r2[MAX_TYPES] = {0};
  HS_CHECK(ratio_lp(a, a->prog, r2, err));
  double c2 = program_cost(a, a->prog, r2);
  if (c2 < a->best_cost * (1.0 - 1e-9)) {
    a->best_cost = c2;
    memcpy(a->best_r, r2, sizeof r2);
  }
  memcpy(a->r, r2, sizeof r2);
  *done = a->rounds >= MAX_ROUNDS;
cleanup:
  if (st == HS_OK && a->oom)
    st = HS_ENOMEM; /* a collective estimate inside A* or the cost was not made */
  if (st == HS_ENOMEM)
    hs_error_set(err, st, "hap: out of memory");
  return st;
}


/* HAP has no memory term, but an emitted plan must fit (as simulated: SPMD
 * stages keep only their slice of sharded parameters). A configuration is
 * (ZeRO stage, recomputation, microbatches); for each (ZeRO, recompute) mode
 * the fewest microbatches (gradient accumulation) with which every device
 * fits are taken. Without practice search: the modes of HAP's fallback
 * (none, ZeRO-1, ZeRO-1 + full recompute) in that order, the first that
 * fits wins. With it (the default; docs/hap.md, "ours"): every ZeRO stage
 * from the options' to 3 x (none, selective, full) recompute, each fitting
 * mode simulated and the fastest kept. None fitting is HS_EINFEASIBLE, with
 * the numbers, rather than a plan that cannot run. */
/* Sets microbatch size mbs on the op-level plan and its replicas' shares
 * to the LP's ratios (r, one per replica) rounded to whole samples of it
 * (hs_plan_round_shares, the planners' one rounding rule). *ok false when
 * the micro-batch has fewer samples than replicas. HS_ENOMEM (with a
 * message) when the rounding runs out of memory, rather than the candidate
 * silently dropped. O(replicas^2). */
static hs_status_t set_microbatch(hs_plan_t *p, const double *r, int32_t mbs, bool *ok,
                                  hs_error_t *err)
{
  hs_plan_stage_t *stg = &p->pipelines[0].stages[0];
  p->pipelines[0].microbatch_size = mbs;
  for (int32_t i = 0; i < stg->n_replicas; i++)
    stg->replicas[i].share = r[i];
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t st = hs_plan_round_shares(p, NULL, &e2);
  *ok = st == HS_OK;
  if (st == HS_ENOMEM)
    return hs_error_set(err, HS_ENOMEM, "hap: out of memory rounding shares");
  return HS_OK;
}

#define HAP_MAX_MODES 12

/* One memory mode: ZeRO stage and recomputation. */
typedef struct hap_mode {
  int32_t zero;
  hs_recompute_t rc;
} hap_mode_t;

/* The search of fit_memory: its scratch (per-device memory, the LP's
 * ratios, the divisors of B) and the best configuration so far. */
typedef struct fit_search {
  double *mem, *ratio;
  int64_t *divs, n_div;
  double best_s, best_over;  /* best simulated time; smallest overflow (need/capacity) */
  int32_t best_mode, worst_dev, n_sim;
  int64_t best_nmb;
  bool out_of_time;
} fit_search_t;

/* The modes tried, in order: with practice search every ZeRO stage from the
 * options' to 3 x (none, selective, full) recompute (recompute only when
 * allowed); without, HAP's fallback (none, ZeRO-1, ZeRO-1 + full
 * recompute). Returns their number (at most HAP_MAX_MODES). */
static int32_t fit_modes(const hap_t *a, hap_mode_t *modes)
{
  int32_t n_modes = 0;
  int32_t z0 = a->o.practice.zero_stage;
  if (a->o.search_practice) {
    for (int32_t z = z0; z <= 3; z++)
      for (int rc = 0; rc < 3 && n_modes < HAP_MAX_MODES; rc++) {
        if (rc != HS_RECOMPUTE_NONE && !a->o.allow_recompute)
          continue;
        modes[n_modes].zero = z;
        modes[n_modes++].rc = (hs_recompute_t)rc;
      }
  } else {
    modes[n_modes].zero = z0;
    modes[n_modes++].rc = HS_RECOMPUTE_NONE;
    modes[n_modes].zero = HS_MAX(z0, 1);
    modes[n_modes++].rc = HS_RECOMPUTE_NONE;
    modes[n_modes].zero = HS_MAX(z0, 1);
    modes[n_modes++].rc = HS_RECOMPUTE_FULL;
  }
  return n_modes;
}

/* The microbatch counts tried: the divisors of B in increasing order into
 * fs->divs (caller frees), found in O(sqrt(B)) (a loop to B took seconds at
 * B = 2^31). HS_ENOMEM only. */
static hs_status_t batch_divisors(int64_t B, fit_search_t *fs, hs_error_t *err)
{
  int64_t n_div = 0;
  for (int64_t d = 1; d <= B / d; d++)
    if (B % d == 0)
      n_div += d == B / d ? 1 : 2;
  fs->divs = hs_calloc((size_t)HS_MAX(n_div, 1), sizeof *fs->divs);
  if (!fs->divs)
    return hs_error_set(err, HS_ENOMEM, "hap: out of memory");
  fs->n_div = n_div;
  int64_t lo = 0, hi = n_div;
  for (int64_t d = 1; d <= B / d; d++)
    if (B % d == 0) {
      fs->divs[lo++] = d;
      if (d != B / d)
        fs->divs[--hi] = B / d;
    }
  return HS_OK;
}

/* Mode k on plan p: the fewest microbatches (of at most 2^20 samples, as
 * hs_plan_validate accepts) with which every device fits; with practice
 * search that configuration is simulated and kept when faster. Updates fs
 * (best, smallest overflow and its device, simulations, out_of_time when
 * no simulation fits the deadline). HS_ENOMEM only. */
static hs_status_t fit_mode(hap_t *a, hs_plan_t *p, const hap_mode_t *modes, int32_t k,
                            fit_search_t *fs, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  int64_t B = a->B;
  bool search = a->o.search_practice;
  p->optimizer_sharding = false;
  p->practice.zero_stage = modes[k].zero;
  pl->stages[0].recompute = modes[k].rc;
  for (int64_t di = 0; di < fs->n_div; di++) {
    int64_t nmb = fs->divs[di];
    if (B / nmb > (INT64_C(1) << 20) || nmb > INT32_MAX)
      continue;
    pl->n_microbatches = (int32_t)nmb;
    bool ok = false;
    HS_CHECK(set_microbatch(p, fs->ratio, (int32_t)(B / nmb), &ok, err));
    if (!ok)
      break; /* fewer samples than replicas: smaller microbatches neither */
    HS_CHECK(hs_memory_per_device(a->m, a->c, p, fs->mem, err));
    double over = 0.0;
    int32_t dev = 0;
    for (size_t d = 0; d < a->c->n_devices; d++) {
      double o = fs->mem[d] / hs_cluster_gpu(a->c, (int32_t)d)->mem_bytes;
      if (o > over) {
        over = o;
        dev = (int32_t)d;
      }
    }
    if (over <= 1.0) {
      double t = 0.0;
      if (search && !hs__sim_fits(a->o.deadline_s, 2.0 * hs__sim_cost_s(p))) {
        /* no time to simulate: the first fitting mode stands, as without search */
        fs->out_of_time = true;
        if (fs->best_mode < 0) {
          fs->best_mode = k;
          fs->best_nmb = nmb;
        }
        break;
      }
      if (search) {
        /* the simulator decides between fitting configurations */
        hs_report_t rep;
        hs_report_init(&rep);
        hs_error_t e2;
        hs_error_init(&e2);
        e2.warn_fp = NULL;
        /* stopped at the best mode's time: it is kept only when faster */
        hs_status_t s2 = hs__simulate_below(a->m, a->c, p, fs->best_s, &rep, &e2);
        fs->n_sim++;
        if (s2 == HS_ENOMEM) {
          hs_report_destroy(&rep);
          HS_FAIL(hs_error_set(err, s2, "hap: %s", e2.msg));
        }
        t = s2 == HS_OK && !rep.oom && !rep.stopped ? rep.iteration_time_s : INFINITY;
        hs_report_destroy(&rep);
      }
      if (t < fs->best_s || (!search && fs->best_mode < 0)) {
        fs->best_s = t;
        fs->best_mode = k;
        fs->best_nmb = nmb;
      }
      break;
    }
    if (over < fs->best_over) {
      fs->best_over = over;
      fs->worst_dev = dev;
    }
    /* activations scale with the microbatch; once a microbatch is one
     * sample per device there is nothing left to split */
    if (B / nmb <= (int64_t)a->N)
      break;
  }
cleanup:
  return st;
}

/* Sets the best configuration of fs on p (mode, microbatches, shares) and
 * describes it in `what`; *sim_s = its simulated time. fs->best_mode >= 0.
 * HS_ENOMEM only. */
static hs_status_t apply_fit(hap_t *a, hs_plan_t *p, const hap_mode_t *modes,
                             const fit_search_t *fs, char *what, size_t what_n, double *sim_s,
                             hs_error_t *err)
{
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  int64_t B = a->B, best_nmb = fs->best_nmb;
  const hap_mode_t *bm = &modes[fs->best_mode];
  *sim_s = fs->best_s;
  p->optimizer_sharding = false;
  p->practice.zero_stage = bm->zero;
  pl->stages[0].recompute = bm->rc;
  bool ok = false; /* it rounded in the loop: only memory can fail here */
  hs_status_t st = set_microbatch(p, fs->ratio, (int32_t)(B / best_nmb), &ok, err);
  if (st != HS_OK)
    return st;
  pl->n_microbatches = (int32_t)best_nmb;
  char sim[64] = "";
  if (a->o.search_practice)
    snprintf(sim, sizeof sim, "; %d configurations simulated%s", fs->n_sim,
             fs->out_of_time ? " (time limit)" : "");
  snprintf(what, what_n, "%lld microbatches of %lld%s%s%s%s", (long long)best_nmb,
           (long long)(B / best_nmb), bm->zero > 0 ? ", ZeRO-" : "",
           bm->zero == 1 ? "1" : bm->zero == 2 ? "2" : bm->zero == 3 ? "3" : "",
           bm->rc == HS_RECOMPUTE_FULL        ? ", full recompute"
           : bm->rc == HS_RECOMPUTE_SELECTIVE ? ", selective recompute"
                                              : "",
           sim);
  return HS_OK;
}

/* The memory fit described above set_microbatch: the modes (fit_modes),
 * each mode's fewest fitting microbatches (fit_mode), the best applied to p
 * (apply_fit); HS_EINFEASIBLE naming the device furthest over when no mode
 * fits. */
static hs_status_t fit_memory(hap_t *a, hs_plan_t *p, char *what, size_t what_n, double *sim_s,
                              hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  fit_search_t fs = {.best_s = INFINITY, .best_over = INFINITY, .best_mode = -1};
  fs.mem = hs_calloc(a->c->n_devices, sizeof *fs.mem);
  fs.ratio = hs_calloc((size_t)HS_MAX(pl->stages[0].n_replicas, 1), sizeof *fs.ratio);
  if (!fs.mem || !fs.ratio) {
    free(fs.mem);
    free(fs.ratio);
    return hs_error_set(err, HS_ENOMEM, "hap: out of memory");
  }
  for (int32_t i = 0; i < pl->stages[0].n_replicas; i++)
    fs.ratio[i] = pl->stages[0].replicas[i].share;
  hap_mode_t modes[HAP_MAX_MODES];
  int32_t n_modes = fit_modes(a, modes);
  bool search = a->o.search_practice;
  HS_CHECK(batch_divisors(a->B, &fs, err));
  for (int32_t k = 0; k < n_modes && !fs.out_of_time; k++) {
    HS_CHECK(fit_mode(a, p, modes, k, &fs, err));
    if (!search && fs.best_mode >= 0)
      break;
  }
  if (fs.best_mode >= 0) {
    st = apply_fit(a, p, modes, &fs, what, what_n, sim_s, err);
    goto cleanup;
  }
  {
    const hs_gpu_t *g = hs_cluster_gpu(a->c, fs.worst_dev);
    st = hs_error_set(err, HS_EINFEASIBLE,
                      "hap: the program does not fit: device %d (%s, %.1f GB) needs %.1f GB even "
                      "with ZeRO-%d, full recompute and one-sample microbatches (HAP's search has "
                      "no memory term; see docs/hap.md)",
                      fs.worst_dev, g->name, g->mem_bytes / 1e9, fs.best_over * g->mem_bytes / 1e9,
                      search ? 3 : HS_MAX(a->o.practice.zero_stage, 1));
  }
cleanup:
  free(fs.divs);
  free(fs.mem);
  free(fs.ratio);
  return st;
}

/* HAP's block-level SPMD programs (hap_spmd.c: tensor, sequence, context,
 * expert sharding of whole transformer blocks with the LP's per-type
 * ratios) against the op-level program `out`, whose simulated time is
 * sim_s: the best few are simulated and the fastest plan replaces *out when
 * it beats sim_s. With practice search only (without it the op-level
 * program is not simulated, so there is nothing to compare with), and on
 * models with attention (transformer blocks). what[]
 * gets a note, *replaced whether *out was replaced. O(candidates x estimate + hs__sim_budget simulations). */
static hs_status_t block_programs(hap_t *a, hs_plan_t *out, double sim_s, char *what,
                                  size_t what_n, hs_search_stats_t *stats, bool *replaced,
                                  hs_error_t *err)
{
  hs_status_t st = HS_OK;
  bool attention = false; /* block programs shard transformer blocks only */
  for (size_t k = 0; k < a->m->n_ops && !attention; k++)
    attention = a->m->ops[k].kind == HS_OP_ATTENTION;
  if (!a->o.search_practice || hs_model_layers(a->m) < 1 || !attention)
    return HS_OK;
  /* one pool per TP degree 1, 2, 4, 8+, each simulating its best few */
  enum { N_POOLS = 4 };
  hs_cand_pool_t pools[N_POOLS];
  memset(pools, 0, sizeof pools);
  /* two finalists per degree up to 64 GPUs, one beyond (bench_search at
   * 256 GPUs: 3.40 CPU s with two, docs/hap.md) */
  int32_t cap = a->c->n_devices <= 64 ? 2 : 1;
  for (int32_t i = 0; i < N_POOLS; i++) {
    if (hs__cpool_init(&pools[i], cap) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "hap: out of memory"));
    pools[i].deadline_s = a->o.deadline_s;
  }
  uint64_t scored = 0;
  char why[256] = "";
  HS_CHECK(hs__hap_spmd_offer(a->m, a->c, &a->o, a->o.precision, a->B, pools, N_POOLS, &scored,
                              why, sizeof why, err));
  int32_t n_sim = 0, bi = -1;
  for (int32_t i = 0; i < N_POOLS; i++) {
    for (bool done = pools[i].n == 0; !done;)
      HS_CHECK(hs__cpool_sim_step(&pools[i], a->m, a->c, &done, err));
    n_sim += pools[i].next_sim;
    if (pools[i].best >= 0 && (bi < 0 || pools[i].best_sim_s < pools[bi].best_sim_s))
      bi = i;
  }
  stats->candidates += scored;
  if (bi >= 0 && pools[bi].best_sim_s < sim_s) {
    hs_cand_pool_t *pool = &pools[bi];
    hs_plan_t best;
    HS_CHECK(hs_plan_copy(&pool->plans[pool->best], &best, err));
    hs_plan_destroy(out);
    *out = best;
    *replaced = true;
    const hs_practice_t *pr = &out->practice;
    int32_t tp = out->pipelines[0].stages[0].replicas[0].n_devices;
    snprintf(what, what_n,
             "; block program tp%d cp%d ep%d%s ZeRO-%d (%.4f s simulated vs %.4f s op-level; "
             "%llu estimated, %d simulated)",
             tp, HS_MAX(pr->context_parallel, 1), HS_MAX(pr->expert_parallel, 1),
             pr->sequence_parallel ? " sp" : "", pr->zero_stage, pool->best_sim_s, sim_s,
             (unsigned long long)scored, n_sim);
    stats->predicted_s = pool->est_s[pool->best];
  } else {
    snprintf(what, what_n, "; op-level program kept (%llu block programs estimated, %d simulated)",
             (unsigned long long)scored, n_sim);
  }
cleanup:
  for (int32_t i = 0; i < N_POOLS; i++)
    hs__cpool_destroy(&pools[i]);
  return st;
}

static bool emitted(const instr_t *p)
{
  bool batch = p->rule == R_REPL || p->rule == R_BATCH || p->rule == R_BATCH_SFB;
  return !batch || p->conv != HS_COLL__COUNT;
}

static hs_status_t hap_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                              hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hap_t *a = state;
  memset(stats, 0, sizeof *stats);
  hs_plan_init(out);
  if (!isfinite(a->best_cost))
    return hs_error_set(err, HS_EINFEASIBLE, "hap: no program found");
  int32_t used = 0;
  double total = 0.0;
  for (int32_t d = 0; d < a->N; d++)
    if (a->best_r[a->dev_type[d]] > 1e-9) {
      used++;
      total += a->best_r[a->dev_type[d]];
    }
  hs_strlcpy(out->strategy, "hap", sizeof out->strategy);
  hs_strlcpy(out->schedule, "1f1b", sizeof out->schedule);
  out->precision = a->o.precision;
  out->practice = a->o.practice;
  HS_CHECK(hs_plan_alloc_pipelines(out, 1));
  hs_plan_pipeline_t *pl = &out->pipelines[0];
  if (a->B > INT32_MAX)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "hap: global batch %lld", (long long)a->B));
  pl->microbatch_size = (int32_t)a->B;
  pl->n_microbatches = 1;
  HS_CHECK(hs_plan_alloc_stages(pl, 1));
  hs_plan_stage_t *stg = &pl->stages[0];
  stg->op_first = 0;
  stg->op_last = (int32_t)a->m->n_ops;
  HS_CHECK(hs_plan_alloc_replicas(stg, used));
  for (int32_t d = 0, i = 0; d < a->N; d++) {
    double rd = a->best_r[a->dev_type[d]];
    if (!(rd > 1e-9))
      continue;
    HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[i], &d, 1));
    stg->replicas[i].share = rd / total;
    i++;
  }
  /* sharding[]: every op that is not plain data parallel (its rule says how
   * it is split) or that converts its input layout (collective); batch
   * rules without a conversion are the plan's data-parallel default */
  int32_t ns = 0;
  for (size_t k = 0; k < a->m->n_ops; k++)
    ns += emitted(&a->best_prog[k]);
  if (ns > 0) {
    out->shards = hs_calloc((size_t)ns, sizeof *out->shards);
    if (!out->shards)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "hap: out of memory"));
    for (size_t k = 0; k < a->m->n_ops; k++) {
      const instr_t *p = &a->best_prog[k];
      if (!emitted(p))
        continue;
      hs_plan_shard_t *s = &out->shards[out->n_shards++];
      s->op = (int32_t)k;
      s->dim = p->rule == R_REPL ? HS_SHARD_BATCH : rule_dim[p->rule];
      s->collective = p->conv;
    }
  }
  char fit[128];
  double sim_s = INFINITY;
  /* an op-level program that does not fit may still lose to a block
   * program that does (sharded parameters): infeasible only if none fits */
  hs_error_t fit_err;
  hs_error_init(&fit_err);
  fit_err.warn_fp = NULL;
  hs_status_t fit_st = fit_memory(a, out, fit, sizeof fit, &sim_s, &fit_err);
  if (fit_st != HS_OK && fit_st != HS_EINFEASIBLE) {
    HS_FAIL(hs_error_set(err, fit_st, "%s", fit_err.msg));
  }
  if (fit_st != HS_OK)
    snprintf(fit, sizeof fit, "op-level program does not fit");
  stats->predicted_s = a->best_cost;
  char spmd[200] = "";
  bool replaced = false;
  HS_CHECK(block_programs(a, out, sim_s, spmd, sizeof spmd, stats, &replaced, err));
  if (fit_st != HS_OK && !replaced) {
    HS_FAIL(hs_error_set(err, fit_st, "%s", fit_err.msg));
  }
  stats->nodes_expanded = a->expanded;
  stats->candidates = (uint64_t)a->rounds;
  stats->optimal = false;
  int32_t batch = 0;
  for (size_t k = 0; k < a->m->n_ops; k++)
    batch += a->best_prog[k].rule == R_BATCH || a->best_prog[k].rule == R_BATCH_SFB;
  snprintf(stats->note, sizeof stats->note,
           "%d A* and LP rounds, %llu nodes expanded; %d of %zu ops data parallel; ratios:", a->rounds,
           (unsigned long long)a->expanded, batch, a->m->n_ops);
  for (int32_t t = 0; t < a->n_types; t++) {
    size_t len = strlen(stats->note);
    snprintf(stats->note + len, sizeof stats->note - len, " %s %.4f",
             a->c->gpus.gpus[a->type_of_gpu[t]].name, a->best_r[t]);
  }
  size_t len = strlen(stats->note);
  snprintf(stats->note + len, sizeof stats->note - len, "; %s%s", fit, spmd);
  return HS_OK;
cleanup:
  if (st == HS_ENOMEM && !err->msg[0])
    hs_error_set(err, st, "hap: out of memory building the plan");
  hs_plan_destroy(out);
  return st;
}

/* For tests (declared there): one A* run at given per-type ratios, with or
 * without the heuristic; types are numbered in order of first device. */
hs_status_t hs__hap_astar(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_opts_t *o,
                          const double *ratios, bool use_heuristic, double *cost,
                          uint64_t *expanded, hs_error_t *err);
hs_status_t hs__hap_astar(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_opts_t *o,
                          const double *ratios, bool use_heuristic, double *cost,
                          uint64_t *expanded, hs_error_t *err)
{
  hap_t a;
  hs_status_t st = hap_init(&a, m, c, o, err);
  if (st != HS_OK)
    return st;
  a.use_heuristic = use_heuristic;
  *expanded = 0;
  st = astar(&a, ratios ? ratios : a.r, a.prog, cost, expanded);
  hap_free(&a);
  return st;
}

const hs_planner_type_t hs_planner_hap = {
    .name = "hap",
    .description = "HAP: SPMD program synthesis (A* over sharding rules and collectives) "
                   "alternating with an LP for per-device sharding ratios",
    .state_size = sizeof(hap_t),
    .init = hap_init,
    .step = hap_step,
    .result = hap_result,
    .free = hap_free,
};
