/*
 * autohet_milp.c - one autohet configuration's MILP (docs/autohet.md,
 * "Formulation"): columns T, blocks per stage L_p, TP segment boundaries
 * X_j, per pipeline tmax_g and the binary expansion z_gk / products w_gk of
 * its microbatch count; rows for blocks, segments, stage times, memory, the
 * iteration time, the exact linearisation and McCormick cuts. Built and
 * solved through the GLPK adapter (search/lp.c): no GLPK call here.
 *
 * Invariants: columns and rows are added in one fixed order, so the
 * solver's path and the plan are the same on every run; every MILP gets
 * the incumbent cutoff T <= CUTOFF x best_T once there is an incumbent.
 */
#include "autohet_internal.h"
#include "lp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* One configuration's MILP under construction and its solution: the
 * configuration's stage sequence (pstart, order), group costs and
 * coefficients, the LP and its column indexes, the row buffers. Owned by
 * solve_config, freed by milp_destroy. */
typedef struct milp {
  const group_t *groups;
  const int32_t *pstart, *order; /* stages of pipeline g: order[pstart[g]..pstart[g+1]) */
  int32_t ng, G, L;
  int32_t J;                     /* TP segments (runs of equal degree) along a pipeline */
  int32_t K;                     /* bits of m_g - 1 */
  int64_t M;                     /* microbatches over all pipelines, B / b */
  gcost_t *gc;
  ccoef_t cc;
  hs_lp_t *lp;
  int32_t Tcol, xcol[MAX_RUNS];
  int32_t *Lcol, *zcol, *wcol, *tcol;
  row_buf_t r, r2, mrow;
  double *mgs, *lss;             /* the integer point: microbatches per pipeline, blocks per stage */
} milp_t;

static void milp_destroy(milp_t *mp)
{
  free(mp->mgs);
  free(mp->lss);
  hs_lp_free(mp->lp);
  rb_free(&mp->r);
  rb_free(&mp->r2);
  rb_free(&mp->mrow);
  free(mp->gc);
  hs__autohet_ccoef_free(&mp->cc);
  free(mp->Lcol);
  free(mp->zcol);
  free(mp->wcol);
  free(mp->tcol);
}

/* Reads configuration cf; fills mp's sizes, group costs, TP segment count
 * J and coefficients, or sets *valid false (HS_OK, nothing built) when a
 * pipeline has no stage or more stages than blocks. Allocates the column
 * index arrays. O(groups estimates + config_coefs). */
static hs_status_t milp_prepare(autohet_t *a, const config_t *cf, milp_t *mp, bool *valid,
                                hs_error_t *err)
{
  hs_status_t st = HS_OK;
  mp->groups = a->groups[cf->pat];
  mp->ng = a->n_groups[cf->pat];
  mp->pstart = a->assign + cf->assign_off;
  mp->order = mp->pstart + cf->G + 1;
  mp->G = cf->G;
  mp->L = a->L;
  mp->M = a->B / cf->b;
  int32_t ng = mp->ng, G = mp->G, K = 0;
  while (((int64_t)1 << K) <= mp->M)
    K++;
  mp->K = K;
  *valid = false;
  mp->gc = hs_calloc((size_t)ng, sizeof *mp->gc);
  mp->Lcol = hs_calloc((size_t)ng, sizeof *mp->Lcol);
  mp->zcol = hs_calloc((size_t)G * K, sizeof *mp->zcol);
  mp->wcol = hs_calloc((size_t)G * K, sizeof *mp->wcol);
  mp->tcol = hs_calloc((size_t)G, sizeof *mp->tcol);
  if (!mp->gc || !mp->Lcol || !mp->zcol || !mp->wcol || !mp->tcol)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  for (int32_t i = 0; i < ng; i++)
    HS_CHECK(hs__autohet_group_cost(a, &mp->groups[i], cf->b, cf->rc, &mp->gc[i], err));
  for (int32_t g = 0; g < G; g++) {
    int32_t S = mp->pstart[g + 1] - mp->pstart[g];
    if (S == 0 || S > mp->L)
      return HS_OK; /* not a valid partition for this model: nothing to do */
  }
  /* TP segments: the runs of equal TP degree along a pipeline, the same
   * sequence in every pipeline (push_config checked it); segment j holds
   * the blocks [X_j, X_{j+1}) in every pipeline, so every op has the same
   * TP degree in every pipeline that holds it (docs/plan.md) */
  mp->J = 1;
  for (int32_t s = 1; s < mp->pstart[1]; s++)
    mp->J += mp->groups[mp->order[s]].t != mp->groups[mp->order[s - 1]].t;
  HS_CHECK(hs__autohet_config_coefs(a, cf, mp->gc, &mp->cc, err));
  *valid = true;
cleanup:
  return st;
}

/* Adds pipeline g's columns (tmax_g, z_gk, w_gk) and rows: its blocks sum
 * to L, its TP segments match X, stage times and memory, the T row, the w
 * rows and the McCormick cuts; adds its z terms to the microbatch row
 * mp->mrow. Reads mp->cc. Columns and rows are added in one fixed order
 * (the solver's path depends on it). O(stages + K) entries. */
static hs_status_t milp_pipeline_rows(milp_t *mp, int32_t g, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_lp_t *lp = mp->lp;
  row_buf_t *r = &mp->r, *r2 = &mp->r2;
  const group_t *groups = mp->groups;
  const int32_t *pstart = mp->pstart, *order = mp->order;
  const ccoef_t *cc = &mp->cc;
  int32_t *Lcol = mp->Lcol, *zcol = mp->zcol, *wcol = mp->wcol, *tcol = mp->tcol;
  int32_t S = pstart[g + 1] - pstart[g], J = mp->J, K = mp->K, L = mp->L;
  /* blocks per pipeline */
  r->n = 0;
  for (int32_t s = 0; s < S; s++)
    rb_add(r, Lcol[pstart[g] + s], 1.0);
  HS_CHECK(add_row(lp, r, L, L, err));
  /* TP segments: sum of the stages of segment j = X_{j+1} - X_j */
  for (int32_t j = 0, s = 0; j + 1 < J && J > 1; j++) {
    r->n = 0;
    int32_t t = groups[order[pstart[g] + s]].t;
    for (; s < S && groups[order[pstart[g] + s]].t == t; s++)
      rb_add(r, Lcol[pstart[g] + s], 1.0);
    rb_add(r, mp->xcol[j + 1], -1.0);
    if (j > 0)
      rb_add(r, mp->xcol[j], 1.0);
    HS_CHECK(add_row(lp, r, 0.0, 0.0, err));
  }
  /* stage times (tmax_g >= f L_s + cst), memory rows */
  double U = cc->U[g];
  HS_CHECK(hs_lp_add_col(lp, cc->link[g], INFINITY, 0.0, false, &tcol[g]));
  for (int32_t s = 0; s < S; s++) {
    int32_t p = pstart[g] + s;
    r->n = 0;
    rb_add(r, tcol[g], 1.0);
    rb_add(r, Lcol[p], -cc->f[p]);
    HS_CHECK(add_row(lp, r, cc->cst[p], INFINITY, err));
    r->n = 0;
    rb_add(r, Lcol[p], cc->mcoef[p]);
    HS_CHECK(add_row(lp, r, -INFINITY, cc->mcap[p], err));
  }
  /* T >= sum_s (f_s L_s + cst_s) + 2 cuts + sum_k 2^k w_gk + (y + o) L_g0 + o_pre */
  r->n = 0;
  rb_add(r, mp->Tcol, 1.0);
  double cst_sum = cc->fixed[g];
  for (int32_t s = 0; s < S; s++)
    rb_add(r, Lcol[pstart[g] + s], -cc->f[pstart[g] + s]);
  rb_add(r, Lcol[pstart[g]], -cc->ysync[g]);
  for (int32_t k = 0; k < K; k++) {
    HS_CHECK(hs_lp_add_col(lp, 0, 1, 0.0, true, &zcol[g * K + k]));
    HS_CHECK(hs_lp_add_col(lp, 0, INFINITY, 0.0, false, &wcol[g * K + k]));
    rb_add(r, wcol[g * K + k], -(double)((int64_t)1 << k));
    rb_add(&mp->mrow, zcol[g * K + k], (double)((int64_t)1 << k));
    /* w >= tmax - U (1 - z)  <=>  w - tmax - U z >= -U */
    r2->n = 0;
    rb_add(r2, wcol[g * K + k], 1.0);
    rb_add(r2, tcol[g], -1.0);
    rb_add(r2, zcol[g * K + k], -U);
    HS_CHECK(add_row(lp, r2, -U, INFINITY, err));
  }
  HS_CHECK(add_row(lp, r, cst_sum, INFINITY, err));
  /* McCormick envelope of P = (m - 1) tmax for m - 1 in [0, M - G], tmax
   * in [tlo, U]: valid cuts that make the LP relaxation see the steady
   * state (tlo: the perfectly balanced stage time, a lower bound) */
  double tlo = cc->tlo[g];
  double mhi = (double)(mp->M - mp->G);
  r->n = 0; /* P >= tlo (m - 1) */
  for (int32_t k = 0; k < K; k++) {
    rb_add(r, wcol[g * K + k], (double)((int64_t)1 << k));
    rb_add(r, zcol[g * K + k], -tlo * (double)((int64_t)1 << k));
  }
  HS_CHECK(add_row(lp, r, 0.0, INFINITY, err));
  r->n = 0; /* P >= mhi tmax + U (m - 1) - mhi U */
  for (int32_t k = 0; k < K; k++) {
    rb_add(r, wcol[g * K + k], (double)((int64_t)1 << k));
    rb_add(r, zcol[g * K + k], -U * (double)((int64_t)1 << k));
  }
  rb_add(r, tcol[g], -mhi);
  HS_CHECK(add_row(lp, r, -mhi * U, INFINITY, err));
cleanup:
  return st;
}

/* Builds the whole MILP of a prepared mp (milp_prepare): columns T, L_p,
 * X_j, every pipeline's rows, the microbatch sum and, with an incumbent,
 * T <= CUTOFF x best_T. O(groups + G K) columns and rows. */
static hs_status_t milp_build(const autohet_t *a, milp_t *mp, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t ng = mp->ng, G = mp->G, K = mp->K, J = mp->J, L = mp->L;
  HS_CHECK(hs_lp_new(true, &mp->lp));
  HS_CHECK(hs_lp_add_col(mp->lp, 0, INFINITY, 1.0, false, &mp->Tcol));
  for (int32_t k = 0; k < ng; k++)
    HS_CHECK(hs_lp_add_col(mp->lp, 1, L, 0.0, true, &mp->Lcol[k]));
  /* segment boundaries X_1..X_{J-1} (X_0 = 0, X_J = L), integer blocks */
  for (int32_t j = 1; j < J; j++)
    HS_CHECK(hs_lp_add_col(mp->lp, j, L - (J - j), 0.0, true, &mp->xcol[j]));
  /* row buffers, first sized to the longest row each takes below (they
   * grow if a row is longer): r the per-stage rows, the T row (1 + S + K)
   * and the McCormick rows (2K + 1); mrow the microbatch sum
   * sum_g (1 + sum_k 2^k z_gk) = M (G K); r2 the w rows (3) */
  int64_t rcap = (int64_t)ng + 2 * (int64_t)K + 8, mcap = (int64_t)G * K + 1;
  if (rcap > INT32_MAX || mcap > INT32_MAX || !rb_grow(&mp->r, (int32_t)rcap) ||
      !rb_grow(&mp->mrow, (int32_t)mcap) || !rb_grow(&mp->r2, 4))
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  for (int32_t g = 0; g < G; g++)
    HS_CHECK(milp_pipeline_rows(mp, g, err));
  HS_CHECK(add_row(mp->lp, &mp->mrow, (double)(mp->M - G), (double)(mp->M - G), err));
  if (a->have_best) {
    int32_t one = mp->Tcol;
    double v = 1.0;
    HS_CHECK(hs_lp_add_row(mp->lp, 1, &one, &v, -INFINITY, a->best_T * CUTOFF, err));
  }
cleanup:
  return st;
}

/* Solves the built MILP under the planner's gap, work and time budgets
 * (through lp.c) and counts it (milps, iterations, work, refuted,
 * rounded, all_proven, worst_gap). *use: the solution is to be read (an
 * integer point, or with *rounded its root relaxation). */
static hs_status_t milp_run(autohet_t *a, const config_t *cf, milp_t *mp, hs_lp_result_t *res,
                            bool *use, bool *rounded, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  *use = *rounded = false;
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
    lo.time_limit_s = fmax(0.05, a->budget_s - (hs__autohet_now_s() - a->t_start));
  HS_CHECK(hs_lp_solve(mp->lp, &lo, res, err));
  a->milps++;
  a->iterations += res->iterations;
  a->work += res->work;
  if (res->status == HS_LP_INFEASIBLE) {
    a->refuted++;
    return HS_OK;
  }
  if (res->status == HS_LP_NO_SOLUTION) {
    a->all_proven = false; /* stopped before deciding */
    if (!res->relaxed)
      return HS_OK;
    /* No integer solution within the time limit (large clusters): round
     * the root relaxation instead, so a big cluster still gets a plan; the
     * estimator and the final simulation judge it like any other. */
    *rounded = true;
    a->rounded++;
  }
  if (res->status != HS_LP_OPTIMAL) {
    a->all_proven &= res->status == HS_LP_OPTIMAL_GAP;
    if (isfinite(res->gap))
      a->worst_gap = fmax(a->worst_gap, res->gap);
  }
  if (res->status == HS_LP_UNBOUNDED)
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "autohet: MILP unbounded (pattern %d, G=%d)", cf->pat,
                         mp->G));
  *use = true;
cleanup:
  return st;
}

/* Reads the solution of a solved mp into mp->mgs / mp->lss (rounded to
 * integers with the right sums when the relaxation is used) and builds
 * its plan. O(groups + G K). */
static hs_status_t milp_plan(autohet_t *a, const config_t *cf, milp_t *mp, bool rounded,
                             hs_plan_t *plan, hs_error_t *err)
{
  int32_t G = mp->G, K = mp->K;
  const int32_t *pstart = mp->pstart;
  mp->mgs = hs_calloc((size_t)G, sizeof *mp->mgs);
  mp->lss = hs_calloc((size_t)mp->ng, sizeof *mp->lss);
  if (!mp->mgs || !mp->lss)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  for (int32_t g = 0; g < G; g++) {
    double mg = 1.0;
    for (int32_t k = 0; k < K; k++)
      mg += (rounded ? hs_lp_value(mp->lp, mp->zcol[g * K + k])
                     : (double)llround(hs_lp_value(mp->lp, mp->zcol[g * K + k]))) *
            (double)((int64_t)1 << k);
    mp->mgs[g] = mg;
  }
  if (rounded)
    round_to_sum(mp->mgs, G, (double)mp->M);
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    for (int32_t s = 0; s < S; s++)
      mp->lss[pstart[g] + s] = hs_lp_value(mp->lp, mp->Lcol[pstart[g] + s]);
    if (rounded)
      round_to_sum(mp->lss + pstart[g], S, (double)mp->L);
  }
  return hs__autohet_build_plan(a, cf, mp->lss, mp->mgs, plan, err);
}

/* Builds and solves the MILP of configuration cf and offers its plan to the
 * pool (the pool keeps the best few by objective): a solved MILP by its
 * objective (and as the incumbent when best), a rounded relaxation by the
 * estimator when it fits. */
hs_status_t hs__autohet_solve_config(autohet_t *a, const config_t *cf, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  milp_t mp = {0};
  hs_plan_t plan;
  hs_plan_init(&plan);
  bool valid = false, use = false, rounded = false;
  hs_lp_result_t res;
  HS_CHECK(milp_prepare(a, cf, &mp, &valid, err));
  if (!valid)
    goto cleanup;
  HS_CHECK(milp_build(a, &mp, err));
  HS_CHECK(milp_run(a, cf, &mp, &res, &use, &rounded, err));
  if (!use)
    goto cleanup;
  HS_CHECK(milp_plan(a, cf, &mp, rounded, &plan, err));
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
  hs_plan_destroy(&plan);
  milp_destroy(&mp);
  return st;
}
