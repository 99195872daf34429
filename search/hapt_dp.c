/*
 * hapt_dp.c - hapt's stage-time-cap dynamic programme (hapt_dp.h).
 *
 * The minimum over a stage's end cut is where the time goes: K end cuts
 * for each of the S K U A Z (state, mesh) pairs. The bound of hapt_dp.h
 * splits into a part of the start cut and a part of the end cut, so per
 * row of states (level, budget vector, subcluster) and mesh a monotone
 * deque gives every state's smallest bound at once, a state tries its
 * meshes in the order of those bounds, and within a mesh only the end
 * cuts the bound leaves reach the memory rule. Representation: per table
 * (remade when h->table_id moves) the potentials pot and, per mesh and
 * cut pair, the smallest t + f (wmin) and the fastest t (tfast); per run
 * the windows (kend); per level the best rest of the pipeline from each
 * end cut (rest, a row made when a state first reads it); per row the
 * bounds (lb, larg); per state, beside its value and choice, the largest
 * stage or cut time of its solution (M), which decides whether a smaller
 * cap on the same table recomputes it.
 */
#include "hapt_dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define INF HS_HAPT_DP_INF
/* A bound rules a candidate out only when it passes the threshold by this
 * much (relative): bounds and values are sums of a few dozen positive
 * doubles, whose rounding errors are ~1e-15 relative. */
#define BOUND_SLACK 1e-9

/* fmin without the library call (no NaN reaches these) */
static inline double dmin(double x, double y) { return y < x ? y : x; }

static size_t fidx(const hs_hapt_dp_t *d, int32_t st, int32_t k, int32_t u, int32_t a)
{
  return (((size_t)st * (size_t)d->K + (size_t)k) * (size_t)d->U + (size_t)u) * (size_t)d->A +
         (size_t)a;
}

static int32_t digit(const hs_hapt_dp_t *d, int32_t u, int32_t a)
{
  return (u / d->stride[a]) % d->radix[a];
}

/* index of mesh (a, zi) in the per-mesh arrays */
static size_t mesh(const hs_hapt_dp_t *d, int32_t a, int32_t zi)
{
  return (size_t)a * (size_t)d->Z + (size_t)zi;
}

/* the per-pair arrays (wmin, tfast) of mesh mi from start cut k */
static size_t pair_row(const hs_hapt_dp_t *d, size_t mi, int32_t k)
{
  return (mi * (size_t)d->K + (size_t)k) * (size_t)d->K;
}

hs_status_t hs__hapt_dp_init(hs_hapt_dp_t *d, const hs_hspace_t *h, int32_t max_stages,
                             int64_t max_states, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(d, 0, sizeof *d);
  d->K = h->n_cuts;
  d->A = h->n_sc;
  d->Z = HS_MAX(h->max_sizes, 1);
  d->radix = hs_calloc((size_t)h->n_sc, sizeof(int32_t));
  d->stride = hs_calloc((size_t)h->n_sc, sizeof(int32_t));
  if (!d->radix || !d->stride)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int64_t U = 1, units = 0;
  for (int32_t a = 0; a < h->n_sc; a++) {
    d->radix[a] = h->levels[a] + 1;
    d->stride[a] = (int32_t)U;
    U *= d->radix[a];
    units += h->levels[a];
    if (U > max_states)
      HS_FAIL(hs_error_set(err, HS_EINFEASIBLE,
                           "hapt: %d subclusters give too many device-count states (%lld)",
                           h->n_sc, (long long)U));
  }
  d->U = (int32_t)U;
  d->usum = hs_calloc((size_t)U, sizeof(int32_t));
  if (!d->usum)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t u = 0; u < d->U; u++)
    for (int32_t a = 0; a < h->n_sc; a++)
      d->usum[u] += digit(d, u, a);
  d->S = (int32_t)HS_MIN(units, (int64_t)h->n_cuts - 1);
  d->S = HS_MIN(d->S, max_stages);
  while (d->S > 1 && (int64_t)(d->S + 1) * h->n_cuts * U * h->n_sc > max_states)
    d->S--;
  size_t nf = fidx(d, d->S + 1, 0, 0, 0);
  d->F = hs_calloc(nf, sizeof *d->F);
  d->ch = hs_calloc(nf, sizeof *d->ch);
  d->M = hs_calloc(nf, sizeof *d->M);
  size_t nm = (size_t)d->A * (size_t)d->Z, K = (size_t)d->K;
  d->pot = hs_calloc(nm * K, sizeof *d->pot);
  d->pot_max = hs_calloc(nm, sizeof *d->pot_max);
  d->wmin = hs_calloc(nm * K * K, sizeof *d->wmin);
  d->tfast = hs_calloc(nm * K * K, sizeof *d->tfast);
  d->kend = hs_calloc(nm * K, sizeof *d->kend);
  d->rest = hs_calloc((size_t)d->A * (size_t)d->U * K, sizeof *d->rest);
  d->rest_made = hs_calloc((size_t)d->A * (size_t)d->U, 1);
  d->fewer = hs_calloc((size_t)d->A, sizeof *d->fewer);
  d->lb = hs_calloc((size_t)d->Z * K, sizeof *d->lb);
  d->larg = hs_calloc((size_t)d->Z * K, sizeof *d->larg);
  d->deque = hs_calloc(K, sizeof *d->deque);
  d->order = hs_calloc((size_t)d->Z, sizeof *d->order);
  if (!d->F || !d->ch || !d->M || !d->pot || !d->pot_max || !d->wmin || !d->tfast || !d->kend ||
      !d->rest || !d->rest_made || !d->fewer || !d->lb || !d->larg || !d->deque || !d->order)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  return HS_OK;
cleanup:
  hs__hapt_dp_destroy(d);
  return st;
}

void hs__hapt_dp_destroy(hs_hapt_dp_t *d)
{
  free(d->radix);
  free(d->stride);
  free(d->usum);
  free(d->F);
  free(d->ch);
  free(d->M);
  free(d->pot);
  free(d->pot_max);
  free(d->wmin);
  free(d->tfast);
  free(d->kend);
  free(d->rest);
  free(d->rest_made);
  free(d->fewer);
  free(d->lb);
  free(d->larg);
  free(d->deque);
  free(d->order);
  free(d->capv);
  memset(d, 0, sizeof *d);
}

/* Per mesh (a, zi) of h's current table: wmin(k, k') the smallest t + f
 * and tfast(k, k') the fastest t of the options of stage [k, k') (INF
 * without options), and the potentials pot(0) = 0, pot(k') = min over k <
 * k' of pot(k) + wmin(k, k') (hapt_dp.h). O(K^2 A Z opts), once per
 * table. */
static void make_potentials(hs_hapt_dp_t *d, const hs_hspace_t *h)
{
  int32_t K = h->n_cuts;
  for (int32_t a = 0; a < h->n_sc; a++)
    for (int32_t zi = 0; zi < h->n_sizes[a]; zi++) {
      size_t mi = mesh(d, a, zi);
      double *p = &d->pot[mi * (size_t)K];
      for (int32_t k2 = 0; k2 < K; k2++)
        p[k2] = k2 == 0 ? 0.0 : INF;
      for (int32_t k = 0; k + 1 < K; k++) {
        double *w = &d->wmin[pair_row(d, mi, k)], *tf = &d->tfast[pair_row(d, mi, k)];
        for (int32_t k2 = k + 1; k2 < K; k2++) {
          int32_t n;
          const hs_hopt_t *o = hs__hspace_opts(h, k, k2, a, zi, &n);
          w[k2] = INF;
          tf[k2] = n > 0 ? o[0].t : INF; /* options sorted by t */
          for (int32_t i = 0; i < n; i++)
            w[k2] = dmin(w[k2], o[i].t + o[i].f);
          if (p[k] < INF && w[k2] < INF)
            p[k2] = dmin(p[k2], p[k] + w[k2]);
        }
      }
      double mx = 0.0;
      for (int32_t k2 = 0; k2 < K; k2++)
        if (p[k2] < INF)
          mx = fmax(mx, p[k2]);
      d->pot_max[mi] = mx;
    }
  d->pot_table = h->table_id;
  d->pot_opts = h->opts;
}

/* kend(k) per mesh: the last end cut k' such that every stage [k, k'')
 * with k < k'' <= k' has an option and a fastest option within the cap
 * (k itself when none). The fastest option's t grows with k' and falls
 * with k (differences of prefix sums), and whether a mesh has options
 * does not depend on the cuts, so kend does not fall with k: two
 * pointers. O(K A Z) per run. */
static void make_windows(hs_hapt_dp_t *d, const hs_hspace_t *h, double tmax)
{
  int32_t K = h->n_cuts;
  for (int32_t a = 0; a < h->n_sc; a++)
    for (int32_t zi = 0; zi < h->n_sizes[a]; zi++) {
      size_t mi = mesh(d, a, zi);
      int32_t *ke = &d->kend[mi * (size_t)K];
      int32_t p = 0;
      for (int32_t k = 0; k < K; k++) {
        const double *tf = &d->tfast[pair_row(d, mi, k)];
        p = HS_MAX(p, k);
        while (p + 1 < K && tf[p + 1] <= tmax)
          p++;
        ke[k] = p;
      }
    }
}

/* For level st >= 2: rest(a, u2, k') = the best 2 c(a -> b, k') + F(st -
 * 1, k', u2, b) over successors b within the cap (INF: none), the row (a,
 * u2) made when a state first needs it (d->rest_made, cleared per level:
 * an incremental run recomputes few rows, and only those read it).
 * O(K A) per row made. */
static const double *rest_row(hs_hapt_dp_t *d, const hs_hspace_t *h, double tmax, int32_t st,
                              int32_t a, int32_t u2)
{
  int32_t K = h->n_cuts, A = h->n_sc;
  size_t row = (size_t)a * (size_t)d->U + (size_t)u2;
  double *r = &d->rest[row * (size_t)K];
  if (d->rest_made[row])
    return r;
  d->rest_made[row] = 1;
  for (int32_t k2 = 0; k2 < K; k2++) {
    double best = INF;
    if (d->usum[u2] >= st - 1 && k2 > 0 && k2 < K - 1) {
      const double *cut = hs__hspace_cut_row(h, a, k2);
      const double *Fr = &d->F[fidx(d, st - 1, k2, u2, 0)];
      for (int32_t b = 0; b < A; b++)
        if (Fr[b] < INF && cut[b] <= tmax)
          best = dmin(best, 2.0 * cut[b] + Fr[b]);
    }
    r[k2] = best;
  }
  return r;
}

/* F(1, k, u, a): one stage from cut k to the end on a mesh of subcluster a
 * within u. */
static void last_stage(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax, int32_t k, int32_t u,
                       int32_t a, double *best, hs_hapt_choice_t *bc)
{
  int32_t K = h->n_cuts, avail = digit(d, u, a);
  for (int32_t zi = 0; zi < h->n_sizes[a] && h->sizes[a][zi] <= avail; zi++) {
    int32_t opt = hs__hspace_pick_at(h, k, K - 1, a, zi, 1, -1);
    d->transitions++;
    if (opt < 0)
      continue;
    int32_t n;
    const hs_hopt_t *o = hs__hspace_opts(h, k, K - 1, a, zi, &n);
    if (o[opt].t > tmax)
      continue;
    double v = o[opt].t + o[opt].f;
    if (v < *best) {
      *best = v;
      *bc = (hs_hapt_choice_t){K - 1, zi, -1, opt};
    }
  }
}

/* One state's search over its first stage: the state (st, k, u, a), the
 * mesh zi with u2 = u - z e_a, the best value so far with its choice, and
 * the threshold: the smaller of best and an upper bound of the state's
 * value known beforehand. A candidate whose bound passes the threshold
 * (by the slack) is neither smaller than the minimum nor equal to it. */
typedef struct stage_ctx {
  hs_hapt_dp_t *d;
  hs_hspace_t *h;
  double tmax;
  int32_t st, k, u2, a, zi;
  double best, thr;
  hs_hapt_choice_t bc;
} stage_ctx_t;

/* the threshold with the rounding slack, for bounds of mesh mi */
static double limit(const stage_ctx_t *x, size_t mi)
{
  return x->thr + BOUND_SLACK * (x->d->pot_max[mi] + x->thr);
}

/* (zi, k2, b) before the best choice's in the naive order (zi, k', b
 * ascending), whose first minimum the recurrence keeps */
static bool before_best(const stage_ctx_t *x, int32_t k2, int32_t b)
{
  const hs_hapt_choice_t *c = &x->bc;
  if (x->zi != c->zi)
    return x->zi < c->zi;
  if (k2 != c->k2)
    return k2 < c->k2;
  return b < c->b;
}

/* Every successor b of the first stage [k, k2) on the context's mesh: the
 * plain recurrence's step (a successor whose bound wmin + 2 c + F passes
 * the threshold left out), a tie kept when it comes first in the naive
 * order. */
static void try_end_cut(stage_ctx_t *x, int32_t k2)
{
  hs_hapt_dp_t *d = x->d;
  hs_hspace_t *h = x->h;
  int32_t k = x->k, a = x->a, zi = x->zi, st = x->st, A = h->n_sc;
  size_t mi = mesh(d, a, zi);
  double w = d->wmin[pair_row(d, mi, k) + (size_t)k2];
  int32_t n0;
  const hs_hopt_t *o0 = hs__hspace_opts(h, k, k2, a, zi, &n0);
  const double *cut = hs__hspace_cut_row(h, a, k2);
  size_t pbase = hs__hspace_pick_base(h, k, k2, a, zi, st);
  /* the option of a same-site successor does not depend on it */
  int32_t opt_same = -2;
  const double *Frest = &d->F[fidx(d, st - 1, k2, x->u2, 0)];
  for (int32_t b = 0; b < A; b++) {
    double rest = Frest[b];
    if (rest >= INF)
      continue;
    double c = cut[b];
    if (c > x->tmax || w + 2.0 * c + rest > limit(x, mi))
      continue;
    d->transitions++;
    int32_t opt;
    if (hs__hspace_cross(h, a, b)) {
      opt = hs__hspace_pick_in(h, pbase, k, k2, a, zi, st, b);
    } else {
      if (opt_same == -2)
        opt_same = hs__hspace_pick_in(h, pbase, k, k2, a, zi, st, -1);
      opt = opt_same;
    }
    if (opt < 0 || o0[opt].t > x->tmax)
      continue;
    double v = o0[opt].t + o0[opt].f + 2.0 * c + rest;
    if (v < x->best || (v == x->best && before_best(x, k2, b))) {
      x->best = v;
      x->thr = dmin(x->thr, v);
      x->bc = (hs_hapt_choice_t){k2, zi, b, opt};
    }
  }
}

/* For every k of one row (st, u, a) and mesh zi, with r the rest row of
 * u2 = u - z e_a (rest_row): the end cut of the window [k + 1, hi(k)] with the smallest H = pot + rest
 * into arg[k] (-1: empty window or every H infinite) and that H minus
 * pot(k) into lb[k] (INF likewise). Both window ends move down with k
 * (kend does not fall with k), so a monotone deque of the end cuts that
 * can still be a window's minimum (smaller end cuts stay longer; H falls
 * from its left end to its right end) gives every minimum in O(K) for the
 * row. */
static void row_bounds(hs_hapt_dp_t *d, const hs_hspace_t *h, const double *r, int32_t a,
                       int32_t zi, double *lb, int32_t *arg)
{
  int32_t K = h->n_cuts;
  size_t mi = mesh(d, a, zi);
  const double *p = &d->pot[mi * (size_t)K];
  const int32_t *ke = &d->kend[mi * (size_t)K];
  int32_t *q = d->deque, head = K, tail = K; /* q[head .. tail - 1], end cuts ascending */
  for (int32_t k = K - 2; k >= 0; k--) {
    int32_t hi = HS_MIN(ke[k], K - 2);
    if (k + 1 <= K - 2) {
      double hn = p[k + 1] + r[k + 1];
      while (head < tail && p[q[head]] + r[q[head]] >= hn)
        head++;
      q[--head] = k + 1;
    }
    while (head < tail && q[tail - 1] > hi)
      tail--;
    lb[k] = INF;
    arg[k] = -1;
    if (head < tail) {
      int32_t j = q[tail - 1];
      double hj = p[j] + r[j];
      if (hj < INF && p[k] < INF) {
        lb[k] = hj - p[k];
        arg[k] = j;
      }
    }
  }
}

/* The first stage on mesh x->zi: the window's end cut with the smallest
 * bound (first) first, then every other end cut of the window whose bound
 * wmin(k, k2) + rest(k2) does not pass the threshold, in order, until the
 * fastest option's t (growing with k2) passes it. */
static void mesh_stage(stage_ctx_t *x, int32_t first)
{
  hs_hapt_dp_t *d = x->d;
  int32_t K = x->h->n_cuts, k = x->k;
  size_t mi = mesh(d, x->a, x->zi);
  int32_t lo = k + 1, hi = HS_MIN(d->kend[mi * (size_t)K + (size_t)k], K - 2);
  const double *r = &d->rest[((size_t)x->a * (size_t)d->U + (size_t)x->u2) * (size_t)K];
  const double *w = &d->wmin[pair_row(d, mi, k)], *tf = &d->tfast[pair_row(d, mi, k)];
  try_end_cut(x, first);
  for (int32_t k2 = lo; k2 <= hi; k2++) {
    if (tf[k2] > x->thr)
      break; /* every value from here on is at least tfast > thr */
    if (k2 != first && r[k2] < INF && w[k2] + r[k2] <= limit(x, mi))
      try_end_cut(x, k2);
  }
}

/* The meshes of state k in the row, those with a finite bound, in the
 * order of their bounds into d->order; their count. O(Z^2). */
static int32_t order_meshes(hs_hapt_dp_t *d, int32_t nz, int32_t k)
{
  size_t K = (size_t)d->K;
  int32_t no = 0, *order = d->order;
  for (int32_t zi = 0; zi < nz; zi++) {
    double v = d->lb[(size_t)zi * K + (size_t)k];
    if (v >= INF)
      continue;
    int32_t i = no++;
    while (i > 0 && d->lb[(size_t)order[i - 1] * K + (size_t)k] > v) {
      order[i] = order[i - 1];
      i--;
    }
    order[i] = zi;
  }
  return no;
}

/* M of a state with choice c: the largest stage or cut time of its
 * solution (0 when it has none). O(1). */
static double state_max(const hs_hapt_dp_t *d, const hs_hspace_t *h, int32_t st, int32_t k,
                        int32_t u, int32_t a, hs_hapt_choice_t c)
{
  if (c.opt < 0)
    return 0.0;
  int32_t n;
  double m = hs__hspace_opts(h, k, c.k2, a, c.zi, &n)[c.opt].t;
  if (c.b >= 0) {
    int32_t u2 = u - h->sizes[a][c.zi] * d->stride[a];
    m = fmax(m, fmax(hs__hspace_cut_s(h, a, c.b, c.k2), d->M[fidx(d, st - 1, c.k2, u2, c.b)]));
  }
  return m;
}

/* the state is computed in this run: all are in a full run; in an
 * incremental one those whose solution has a stage or cut over the cap */
static bool stale(const hs_hapt_dp_t *d, size_t ix, double tmax, bool full)
{
  return full || (d->F[ix] < INF && d->M[ix] > tmax);
}

/* F(st, k, u, a) for st >= 2 and every stale k: the first stage [k, k2)
 * on mesh zi of a, the rest from F(st - 1, k2, u - z e_a, b). A state's
 * threshold starts at F(st, k, u - e_a', a) (fewer units of some
 * subcluster a'; its row is done): every candidate there is one here,
 * with a rest that is no larger. The meshes go in the order of their
 * bounds until one passes the threshold. O(K Z) for the bounds, plus the
 * meshes and end cuts they leave. */
static void inner_row(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax, int32_t st, int32_t u,
                      int32_t a, bool full)
{
  int32_t K = h->n_cuts, A = h->n_sc, nz = 0, avail = digit(d, u, a);
  bool any = false;
  for (int32_t k = K - 2; k >= 0 && !any; k--)
    any = stale(d, fidx(d, st, k, u, a), tmax, full);
  if (!any)
    return;
  while (nz < h->n_sizes[a] && h->sizes[a][nz] <= avail)
    nz++;
  for (int32_t zi = 0; zi < nz; zi++) {
    int32_t u2 = u - h->sizes[a][zi] * d->stride[a];
    row_bounds(d, h, rest_row(d, h, tmax, st, a, u2), a, zi, &d->lb[(size_t)zi * K],
               &d->larg[(size_t)zi * K]);
  }
  /* the rows with one unit fewer of some subcluster: each state's
   * threshold starts at their F */
  int32_t *fewer = d->fewer, n_fewer = 0;
  for (int32_t a2 = 0; a2 < A; a2++)
    if (digit(d, u, a2) > 0)
      fewer[n_fewer++] = u - d->stride[a2];
  for (int32_t k = K - 2; k >= 0; k--) {
    size_t ix = fidx(d, st, k, u, a);
    if (!stale(d, ix, tmax, full))
      continue;
    stage_ctx_t x = {d, h, tmax, st, k, 0, a, 0, INF, INF, {-1, -1, -1, -1}};
    for (int32_t i = 0; i < n_fewer; i++)
      x.thr = dmin(x.thr, d->F[fidx(d, st, k, fewer[i], a)]);
    int32_t no = order_meshes(d, nz, k);
    for (int32_t i = 0; i < no; i++) {
      int32_t zi = d->order[i];
      if (d->lb[(size_t)zi * K + k] > limit(&x, mesh(d, a, zi)))
        break; /* this mesh and every later one: nothing reaches the minimum */
      x.zi = zi;
      x.u2 = u - h->sizes[a][zi] * d->stride[a];
      mesh_stage(&x, d->larg[(size_t)zi * K + k]);
    }
    d->F[ix] = x.best;
    d->ch[ix] = x.bc;
    d->M[ix] = state_max(d, h, st, k, u, a, x.bc);
  }
}

/* Level 1 (one stage to the end), the stale states. O(K U A Z). */
static void last_level(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax, bool full)
{
  for (int32_t k = h->n_cuts - 2; k >= 0; k--)
    for (int32_t u = 1; u < d->U; u++)
      for (int32_t a = 0; a < h->n_sc; a++) {
        size_t ix = fidx(d, 1, k, u, a);
        if (!stale(d, ix, tmax, full))
          continue;
        double best = INF;
        hs_hapt_choice_t bc = {-1, -1, -1, -1};
        last_stage(d, h, tmax, k, u, a, &best, &bc);
        d->F[ix] = best;
        d->ch[ix] = bc;
        d->M[ix] = state_max(d, h, 1, k, u, a, bc);
      }
}

void hs__hapt_dp_run(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax)
{
  /* A smaller cap on the same table only removes candidates: a state whose
   * solution keeps every stage and cut within it keeps its value and its
   * choice (no other candidate got smaller, and none before it in the
   * naive order was as small), so only the others are computed again. */
  bool same = d->run_table == h->table_id && d->run_opts == h->opts && d->run_opts;
  bool full = !same || !(tmax <= d->run_tmax);
  if (d->pot_table != h->table_id || d->pot_opts != h->opts)
    make_potentials(d, h);
  make_windows(d, h, tmax);
  if (full)
    for (size_t i = 0, n = fidx(d, d->S + 1, 0, 0, 0); i < n; i++) {
      d->F[i] = INF;
      d->M[i] = 0.0;
    }
  last_level(d, h, tmax, full);
  for (int32_t st = 2; st <= d->S; st++) {
    memset(d->rest_made, 0, (size_t)d->A * (size_t)d->U); /* rest_row makes them */
    for (int32_t u = 0; u < d->U; u++)
      for (int32_t a = 0; a < h->n_sc; a++)
        if (d->usum[u] >= st) /* every stage takes at least one unit: else INF */
          inner_row(d, h, tmax, st, u, a, full);
  }
  d->run_table = h->table_id;
  d->run_opts = h->opts;
  d->run_tmax = tmax;
}

double hs__hapt_dp_value(const hs_hapt_dp_t *d, int32_t st, int32_t k, int32_t u, int32_t a)
{
  if (st < 1 || st > d->S || k < 0 || k >= d->K || u < 0 || u >= d->U || a < 0 || a >= d->A)
    return INF;
  return d->F[fidx(d, st, k, u, a)];
}

bool hs__hapt_dp_extract(const hs_hapt_dp_t *d, const hs_hspace_t *h, hs_hsol_t *sol)
{
  int32_t full = d->U - 1;
  double best = INF;
  int32_t bst = -1, ba = -1;
  for (int32_t st = 1; st <= d->S; st++)
    for (int32_t a = 0; a < h->n_sc; a++) {
      double v = d->F[fidx(d, st, 0, full, a)];
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
    hs_hapt_choice_t c = d->ch[fidx(d, bst - i, k, u, a)];
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
    u -= h->sizes[a][c.zi] * d->stride[a];
    k = c.k2;
    if (c.b >= 0)
      a = c.b;
  }
  sol->sum_s = best;
  sol->max_s = mx;
  sol->score_s = best + (hs__hspace_B(h) - 1) * mx;
  return true;
}

double hs__hapt_dp_next_cap(const hs_hspace_t *h, double x)
{
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

/* Every candidate value of h's current table below x (the values
 * hs__hapt_dp_next_cap scans: every option's t, every cut cost from cut 1
 * on) into d->capv; false when the array cannot be allocated. */
static bool cap_values(hs_hapt_dp_t *d, const hs_hspace_t *h, double x)
{
  int32_t K = h->n_cuts, A = h->n_sc;
  size_t need = (size_t)K * (size_t)K / 2 * (size_t)A * (size_t)HS_MAX(h->max_sizes, 1) *
                    (size_t)HS_MAX(h->opt_stride, 1) +
                (size_t)K * (size_t)A * (size_t)A;
  if (need > d->cap_capv) {
    double *v = realloc(d->capv, need * sizeof *v);
    if (!v)
      return false;
    d->capv = v;
    d->cap_capv = need;
  }
  size_t n = 0;
  for (int32_t k = 0; k + 1 < K; k++)
    for (int32_t k2 = k + 1; k2 < K; k2++)
      for (int32_t a = 0; a < A; a++)
        for (int32_t zi = 0; zi < h->n_sizes[a]; zi++) {
          int32_t no;
          const hs_hopt_t *o = hs__hspace_opts(h, k, k2, a, zi, &no);
          for (int32_t i = 0; i < no; i++)
            if (o[i].t < x && o[i].t > -1.0)
              d->capv[n++] = o[i].t;
        }
  for (int32_t k2 = 1; k2 < K; k2++)
    for (int32_t a = 0; a < A; a++)
      for (int32_t b = 0; b < A; b++) {
        double c = hs__hspace_cut_s(h, a, b, k2);
        if (c < x && c > -1.0)
          d->capv[n++] = c;
      }
  d->n_capv = n;
  return true;
}

double hs__hapt_dp_next_cap_in(hs_hapt_dp_t *d, const hs_hspace_t *h, double x)
{
  bool fresh = d->cap_table != h->table_id || d->cap_opts != (const void *)h->opts ||
               !d->capv || !(x <= d->cap_x);
  if (fresh && !cap_values(d, h, x)) {
    d->cap_opts = NULL;
    return hs__hapt_dp_next_cap(h, x);
  }
  d->cap_table = h->table_id;
  d->cap_opts = h->opts;
  d->cap_x = x;
  /* keep the values below x (later calls ask for less) and take the largest */
  double best = -1.0;
  size_t n = 0;
  for (size_t i = 0; i < d->n_capv; i++) {
    double v = d->capv[i];
    if (v < x) {
      d->capv[n++] = v;
      best = v > best ? v : best;
    }
  }
  d->n_capv = n;
  return best;
}
