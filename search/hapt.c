/*
 * hapt.c - `hapt`: heterogeneity-aware inter-operator planning after HAPT /
 * HARP (arXiv 2509.24859): fine-grained stage cuts, stage meshes confined to
 * homogeneous subclusters (TP never crosses GPU types or sites), link-aware
 * cut costs, and the hetero-1F1B schedule (async sends, deeper warm-up in
 * front of slow links). Search space and scoring: hapt_space.h.
 *
 * Algorithm: Alpa's stage-time-cap dynamic programming with HAPT's
 * per-subcluster device counters. For a cap t_max,
 *   F(s, k, u, a) = min over (z, k', b) of
 *       t + f + 2 c(a -> b, k') + F(s - 1, k', u - z e_a, b)
 * subject to t <= t_max, c <= t_max and the stage fitting in memory with s
 * microbatches in flight (plus the hetero-1f1b extra); s = stages of the
 * suffix starting at cut k, u = devices (units) per subcluster at most used,
 * a = subcluster of the suffix's first stage. The total of a cap is
 * F + (B - 1) x (actual max stage time). Caps are swept downwards: after a
 * solution with actual max M, the next cap is the largest candidate stage or
 * cut time below M; this visits every Pareto point (sum, max) and so finds
 * the exact optimum of the objective (the proof is in docs/planners.md),
 * and stops when a cap is infeasible or after HS_HAPT_MAX_SWEEPS caps.
 *
 * Complexity per cap: O(S x K^2 x U x A^2 x Z x opts) with S stages, K cut
 * candidates, U = prod_a (levels_a + 1), A subclusters, Z mesh sizes; times
 * the sweeps and HS_HAPT_MAX_MB microbatch sizes. The knobs in hapt_space.h
 * bound every factor.
 */
#include "hapt_space.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HS_HAPT_MAX_SWEEPS 32
#define HS_HAPT_MAX_STATES 3000000
#define INF 1e300

typedef struct choice {
  int32_t k2, zi, b, opt;
} choice_t;

typedef struct hapt {
  hs_hspace_t h;
  int32_t S;                  /* max stages */
  int32_t U;                  /* budget vectors */
  int32_t *radix;             /* per sc: levels + 1 */
  int32_t *stride;
  double *F;                  /* (S+1) x K x U x A */
  choice_t *ch;
  int32_t mi;                 /* current microbatch size index */
  int32_t sweep;
  double tmax;
  hs_hsol_t best_mb;          /* best solution for the current mi */
  hs_hsol_t *per_mb;          /* best per microbatch size */
  int32_t phase;              /* 0 DP, 1 simulate */
  hs_cand_pool_t pool;
  uint64_t dp_runs, transitions;
  char why[256];
} hapt_t;

static size_t fidx(const hapt_t *s, int32_t st, int32_t k, int32_t u, int32_t a)
{
  return (((size_t)st * (size_t)s->h.n_cuts + (size_t)k) * (size_t)s->U + (size_t)u) *
             (size_t)s->h.n_sc +
         (size_t)a;
}

static int32_t digit(const hapt_t *s, int32_t u, int32_t a) { return (u / s->stride[a]) % s->radix[a]; }

/* One DP run for the current table and cap; fills F and choices. */
static void run_dp(hapt_t *s)
{
  hs_hspace_t *h = &s->h;
  int32_t K = h->n_cuts, A = h->n_sc;
  for (size_t i = 0, n = fidx(s, s->S + 1, 0, 0, 0); i < n; i++)
    s->F[i] = INF;
  for (int32_t st = 1; st <= s->S; st++)
    for (int32_t k = K - 2; k >= 0; k--)
      for (int32_t u = 0; u < s->U; u++)
        for (int32_t a = 0; a < A; a++) {
          int32_t avail = digit(s, u, a);
          double best = INF;
          choice_t bc = {-1, -1, -1, -1};
          for (int32_t zi = 0; zi < h->n_sizes[a] && h->sizes[a][zi] <= avail; zi++) {
            int32_t u2 = u - h->sizes[a][zi] * s->stride[a];
            if (st == 1) {
              int32_t opt = hs__hspace_pick(h, k, K - 1, a, zi, 1, false, 0.0);
              s->transitions++;
              if (opt < 0)
                continue;
              int32_t n;
              const hs_hopt_t *o = hs__hspace_opts(h, k, K - 1, a, zi, &n);
              if (o[opt].t > s->tmax)
                continue;
              double v = o[opt].t + o[opt].f;
              if (v < best) {
                best = v;
                bc = (choice_t){K - 1, zi, -1, opt};
              }
              continue;
            }
            for (int32_t k2 = k + 1; k2 < K - 1; k2++)
              for (int32_t b = 0; b < A; b++) {
                double rest = s->F[fidx(s, st - 1, k2, u2, b)];
                if (rest >= INF)
                  continue;
                double c = hs__hspace_cut_s(h, a, b, k2);
                if (c > s->tmax)
                  continue;
                s->transitions++;
                int32_t opt = hs__hspace_pick(h, k, k2, a, zi, st, hs__hspace_cross(h, a, b), c);
                if (opt < 0)
                  continue;
                int32_t n;
                const hs_hopt_t *o = hs__hspace_opts(h, k, k2, a, zi, &n);
                if (o[opt].t > s->tmax)
                  continue;
                double v = o[opt].t + o[opt].f + 2.0 * c + rest;
                if (v < best) {
                  best = v;
                  bc = (choice_t){k2, zi, b, opt};
                }
              }
          }
          size_t ix = fidx(s, st, k, u, a);
          s->F[ix] = best;
          s->ch[ix] = bc;
        }
}

/* Best solution of the last DP run into sol; false when infeasible. */
static bool extract(hapt_t *s, hs_hsol_t *sol)
{
  hs_hspace_t *h = &s->h;
  int32_t full = s->U - 1;
  double best = INF;
  int32_t bst = -1, ba = -1;
  for (int32_t st = 1; st <= s->S; st++)
    for (int32_t a = 0; a < h->n_sc; a++) {
      double v = s->F[fidx(s, st, 0, full, a)];
      if (v < best) {
        best = v;
        bst = st;
        ba = a;
      }
    }
  if (bst < 0)
    return false;
  sol->n = bst;
  int32_t k = 0, u = full, a = ba;
  double mx = 0.0;
  for (int32_t i = 0; i < bst; i++) {
    choice_t c = s->ch[fidx(s, bst - i, k, u, a)];
    hs_hstage_t *x = &sol->st[i];
    int32_t n;
    const hs_hopt_t *o = hs__hspace_opts(h, k, c.k2, a, c.zi, &n);
    x->k = k;
    x->k2 = c.k2;
    x->a = a;
    x->z = c.zi;
    x->opt = c.opt;
    x->t = o[c.opt].t;
    x->f = o[c.opt].f;
    x->c = c.b >= 0 ? hs__hspace_cut_s(h, a, c.b, c.k2) : 0.0;
    mx = fmax(mx, fmax(x->t, x->c));
    u -= h->sizes[a][c.zi] * s->stride[a];
    k = c.k2;
    if (c.b >= 0)
      a = c.b;
  }
  sol->sum_s = best;
  sol->max_s = mx;
  sol->score_s = best + (hs__hspace_B(h) - 1) * mx;
  return true;
}

/* Largest stage or cut time below x in the current table. */
static double next_cap(const hapt_t *s, double x)
{
  const hs_hspace_t *h = &s->h;
  double best = -1.0;
  int32_t K = h->n_cuts;
  for (int32_t k = 0; k + 1 < K; k++)
    for (int32_t k2 = k + 1; k2 < K; k2++)
      for (int32_t a = 0; a < h->n_sc; a++) {
        for (int32_t zi = 0; zi < h->n_sizes[a]; zi++) {
          int32_t n;
          const hs_hopt_t *o = hs__hspace_opts(h, k, k2, a, zi, &n);
          for (int32_t i = 0; i < n; i++)
            if (o[i].t < x && o[i].t > best)
              best = o[i].t;
        }
        for (int32_t b = 0; b < h->n_sc; b++) {
          double c = hs__hspace_cut_s(h, a, b, k2);
          if (c < x && c > best)
            best = c;
        }
      }
  return best;
}

static hs_status_t hapt_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                             const hs_plan_opts_t *o, hs_error_t *err)
{
  hapt_t *s = state;
  hs_status_t st = HS_OK;
  memset(s, 0, sizeof *s);
  HS_CHECK(hs__hspace_init(&s->h, m, c, o, err));
  hs_hspace_t *h = &s->h;
  s->radix = hs_calloc((size_t)h->n_sc, sizeof(int32_t));
  s->stride = hs_calloc((size_t)h->n_sc, sizeof(int32_t));
  s->per_mb = hs_calloc((size_t)h->n_mbs, sizeof *s->per_mb);
  if (!s->radix || !s->stride || !s->per_mb)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int64_t U = 1, units = 0;
  for (int32_t a = 0; a < h->n_sc; a++) {
    s->radix[a] = h->levels[a] + 1;
    s->stride[a] = (int32_t)U;
    U *= s->radix[a];
    units += h->levels[a];
    if (U > HS_HAPT_MAX_STATES)
      HS_FAIL(hs_error_set(err, HS_EINFEASIBLE,
                           "hapt: %d subclusters give too many device-count states (%lld)",
                           h->n_sc, (long long)U));
  }
  s->U = (int32_t)U;
  s->S = (int32_t)HS_MIN(units, (int64_t)h->n_cuts - 1);
  s->S = HS_MIN(s->S, 16);
  while (s->S > 1 && (int64_t)(s->S + 1) * h->n_cuts * U * h->n_sc > HS_HAPT_MAX_STATES)
    s->S--;
  size_t nf = fidx(s, s->S + 1, 0, 0, 0);
  s->F = hs_calloc(nf, sizeof *s->F);
  s->ch = hs_calloc(nf, sizeof *s->ch);
  s->best_mb.st = hs_calloc((size_t)s->S + 1, sizeof(hs_hstage_t));
  if (!s->F || !s->ch || !s->best_mb.st)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  if (hs__cpool_init(&s->pool, HS_MIN(hs__sim_budget(c), h->n_mbs)) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  s->mi = -1;
  return HS_OK;
cleanup:
  hs__hspace_destroy(&s->h);
  free(s->radix);
  free(s->stride);
  free(s->per_mb);
  free(s->F);
  free(s->ch);
  free(s->best_mb.st);
  memset(s, 0, sizeof *s);
  return st;
}

static hs_status_t finish_mb(hapt_t *s, hs_error_t *err)
{
  if (s->best_mb.n == 0)
    return HS_OK;
  hs_plan_t plan;
  hs_status_t st = hs__hspace_plan(&s->h, &s->best_mb, "hapt", &plan, err);
  if (st != HS_OK)
    return st;
  /* rank the per-microbatch-size optima by the whole-plan estimate, which
   * overlaps the stages' gradient syncs where the DP objective adds them */
  hs_estimate_t es;
  st = hs_estimate_plan(s->h.est, &plan, true, &es, err);
  if (st != HS_OK) {
    hs_plan_destroy(&plan);
    return st;
  }
  if (es.oom)
    hs_plan_destroy(&plan);
  else
    hs__cpool_offer(&s->pool, &plan, es.iteration_s);
  return HS_OK;
}

static hs_status_t hapt_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  hapt_t *s = state;
  hs_hspace_t *h = &s->h;
  *done = false;
  if (s->phase == 0) {
    if (s->mi < 0 || s->tmax <= 0.0 || s->sweep >= HS_HAPT_MAX_SWEEPS) {
      /* next microbatch size */
      if (s->mi >= 0) {
        hs_status_t st = finish_mb(s, err);
        if (st != HS_OK)
          return st;
      }
      s->mi++;
      if (s->mi >= h->n_mbs) {
        s->phase = 1;
        return HS_OK;
      }
      if (hs__hspace_table(h, s->mi) != HS_OK)
        return hs_error_set(err, HS_ENOMEM, "out of memory");
      s->tmax = INF;
      s->sweep = 0;
      s->best_mb.n = 0;
      s->best_mb.score_s = INF;
    }
    run_dp(s);
    s->dp_runs++;
    s->sweep++;
    hs_hsol_t sol = {.st = hs_calloc((size_t)s->S + 1, sizeof(hs_hstage_t))};
    if (!sol.st)
      return hs_error_set(err, HS_ENOMEM, "out of memory");
    if (!extract(s, &sol)) {
      s->tmax = 0.0; /* infeasible: smaller caps are too */
    } else {
      if (sol.score_s < s->best_mb.score_s) {
        memcpy(s->best_mb.st, sol.st, sizeof(hs_hstage_t) * (size_t)sol.n);
        s->best_mb.n = sol.n;
        s->best_mb.sum_s = sol.sum_s;
        s->best_mb.max_s = sol.max_s;
        s->best_mb.score_s = sol.score_s;
      }
      double nc = next_cap(s, sol.max_s);
      s->tmax = nc > 0.0 ? nc : 0.0;
    }
    free(sol.st);
    *progress = 0.9 * (s->mi + (double)s->sweep / HS_HAPT_MAX_SWEEPS) / h->n_mbs;
    return HS_OK;
  }
  hs_status_t st = hs__cpool_sim_step(&s->pool, h->m, h->c, done, err);
  *progress = 0.9 + 0.1 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
  return st;
}

static hs_status_t hapt_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                               hs_error_t *err)
{
  hapt_t *s = state;
  if (s->phase == 0 && s->mi >= 0 && s->mi < s->h.n_mbs) {
    /* stopped by the time limit: keep what this microbatch size found */
    hs_status_t st = finish_mb(s, err);
    if (st != HS_OK)
      return st;
  }
  stats->candidates = s->h.evaluated + s->transitions;
  stats->nodes_expanded = s->transitions;
  stats->optimal = s->phase == 1;
  snprintf(stats->note, sizeof stats->note,
           "%d cut candidates, %d subclusters, %d microbatch sizes, %llu DP runs, %d simulated",
           s->h.n_cuts - 1, s->h.n_sc, s->h.n_mbs, (unsigned long long)s->dp_runs, s->pool.next_sim);
  if (s->pool.n == 0)
    snprintf(s->pool.why, sizeof s->pool.why,
             "no stage layout fits in memory (largest mesh, full recomputation)");
  return hs__cpool_result(&s->pool, out, &stats->predicted_s, "hapt", err);
}

static void hapt_free(void *state)
{
  hapt_t *s = state;
  hs__hspace_destroy(&s->h);
  free(s->radix);
  free(s->stride);
  free(s->per_mb);
  free(s->F);
  free(s->ch);
  free(s->best_mb.st);
  hs__cpool_destroy(&s->pool);
}

const hs_planner_type_t hs_planner_hapt = {
    .name = "hapt",
    .description = "HAPT: op-level stage cuts over homogeneous subclusters, link-aware DP, hetero-1F1B",
    .state_size = sizeof(hapt_t),
    .init = hapt_init,
    .step = hapt_step,
    .result = hapt_result,
    .free = hapt_free,
};
