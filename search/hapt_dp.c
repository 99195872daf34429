/*
 * hapt_dp.c - hapt's stage-time-cap dynamic programme (hapt_dp.h).
 */
#include "hapt_dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define INF HS_HAPT_DP_INF

static size_t fidx(const hs_hapt_dp_t *d, int32_t st, int32_t k, int32_t u, int32_t a)
{
  return (((size_t)st * (size_t)d->K + (size_t)k) * (size_t)d->U + (size_t)u) * (size_t)d->A +
         (size_t)a;
}

static int32_t digit(const hs_hapt_dp_t *d, int32_t u, int32_t a)
{
  return (u / d->stride[a]) % d->radix[a];
}

hs_status_t hs__hapt_dp_init(hs_hapt_dp_t *d, const hs_hspace_t *h, int32_t max_stages,
                             int64_t max_states, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(d, 0, sizeof *d);
  d->K = h->n_cuts;
  d->A = h->n_sc;
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
  if (!d->F || !d->ch)
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
  memset(d, 0, sizeof *d);
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

/* F(st, k, u, a) for st >= 2: the first stage [k, k2) on mesh zi of a,
 * the rest from F(st - 1, k2, u - z e_a, b). */
static void inner_stage(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax, int32_t st, int32_t k,
                        int32_t u, int32_t a, double *best, hs_hapt_choice_t *bc)
{
  int32_t K = h->n_cuts, A = h->n_sc, avail = digit(d, u, a);
  for (int32_t zi = 0; zi < h->n_sizes[a] && h->sizes[a][zi] <= avail; zi++) {
    int32_t u2 = u - h->sizes[a][zi] * d->stride[a];
    /* the table entry, cut costs and pick memo of (k, k2, a, zi) each move
     * by a fixed step from one k2 to the next */
    size_t e = hs__hspace_entry(h, k, k + 1, a, zi), estep = hs__hspace_entry_step(h);
    const double *cut = hs__hspace_cut_row(h, a, k + 1);
    size_t cstep = (size_t)A * (size_t)A;
    size_t pbase = hs__hspace_pick_base(h, k, k + 1, a, zi, st);
    size_t pstep = hs__hspace_pick_step(h, pbase);
    for (int32_t k2 = k + 1; k2 < K - 1; k2++, e += estep, cut += cstep, pbase += pstep) {
      /* stage time grows with k2 (prefix sums): once the fastest option is
       * over the cap, every longer stage is too; once it reaches the best
       * value of this state, every longer stage's value (t + f + 2 c + F,
       * all >= 0) does too */
      int32_t n0;
      const hs_hopt_t *o0 = hs__hspace_opts_e(h, e, &n0);
      if (n0 == 0 || o0[0].t > tmax || o0[0].t >= *best)
        break;
      /* the option of a same-site successor does not depend on it */
      int32_t opt_same = -2;
      const double *Frest = &d->F[fidx(d, st - 1, k2, u2, 0)];
      for (int32_t b = 0; b < A; b++) {
        double rest = Frest[b];
        if (rest >= INF)
          continue;
        double c = cut[b];
        if (c > tmax)
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
        if (opt < 0 || o0[opt].t > tmax)
          continue;
        double v = o0[opt].t + o0[opt].f + 2.0 * c + rest;
        if (v < *best) {
          *best = v;
          *bc = (hs_hapt_choice_t){k2, zi, b, opt};
        }
      }
    }
  }
}

void hs__hapt_dp_run(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax)
{
  int32_t K = h->n_cuts, A = h->n_sc;
  for (size_t i = 0, n = fidx(d, d->S + 1, 0, 0, 0); i < n; i++)
    d->F[i] = INF;
  for (int32_t st = 1; st <= d->S; st++)
    for (int32_t k = K - 2; k >= 0; k--)
      for (int32_t u = 0; u < d->U; u++)
        for (int32_t a = 0; a < A; a++) {
          if (d->usum[u] < st)
            continue; /* every stage takes at least one unit: stays INF */
          double best = INF;
          hs_hapt_choice_t bc = {-1, -1, -1, -1};
          if (st == 1)
            last_stage(d, h, tmax, k, u, a, &best, &bc);
          else
            inner_stage(d, h, tmax, st, k, u, a, &best, &bc);
          size_t ix = fidx(d, st, k, u, a);
          d->F[ix] = best;
          d->ch[ix] = bc;
        }
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
