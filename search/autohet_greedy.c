/*
 * autohet_greedy.c - greedy integer points of autohet's configurations:
 * under the MILP's own coefficients (autohet_model.c), blocks to stages and
 * microbatches to pipelines, so each point is a feasible MILP point. They
 * give the incumbent (best_T), pool candidates, the solve order (heur_s)
 * and the transform sources (the best greedy plan per TP pattern and
 * pipeline count).
 *
 * Invariants: a point's objective is the MILP objective of that point
 * exactly; INFINITY means no feasible point was found (memory or TP runs).
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  hs_status_t st = hs__autohet_build_plan(a, cf, lss, lss + a->n_groups[cf->pat], &plan, err);
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

hs_status_t hs__autohet_greedy_incumbent(autohet_t *a, config_t *cf, const gcost_t *gc, hs_error_t *err)
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
  HS_CHECK(hs__autohet_config_coefs(a, cf, gc, &cc, err));
  bool nomem = false;
  double T = greedy_point(a, cf, &cc, lss, lss + ng, &nomem);
  if (nomem)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
  cf->heur_s = T;
  if (!isfinite(T))
    goto cleanup;
  a->greedy++;
  if (a->pool.n < a->pool.cap || T < a->pool.est_s[a->pool.n - 1]) {
    HS_CHECK(hs__autohet_build_plan(a, cf, lss, lss + ng, &plan, err));
    hs__cpool_offer(&a->pool, &plan, T);
  }
  HS_CHECK(keep_source(a, cf, lss, T, err));
  if (!a->have_best || T < a->best_T) {
    a->best_T = T;
    a->have_best = true;
  }
cleanup:
  hs_plan_destroy(&plan);
  hs__autohet_ccoef_free(&cc);
  free(lss);
  return st;
}

