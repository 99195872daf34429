/*
 * whatif.c - purchases within a budget and the Pareto front.
 *
 * Enumeration is a depth-first walk over count vectors (multiples of `step`)
 * that prunes as soon as the running price exceeds the budget, so it visits
 * only affordable vectors (plus one failed extension per level): the output
 * order is lexicographic in the counts, first candidate slowest.
 */
#include "hs_export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs_whatif_opts_init(hs_whatif_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->price = HS_PRICE_ONDEMAND;
  o->step = 8;
  o->max_options = 500;
}

typedef struct walk {
  const double *price;
  int32_t n;
  const hs_whatif_opts_t *o;
  int64_t cur[HS_SWEEP_MAX_TYPES];
  hs_whatif_option_t *out;
  size_t n_out, cap;
  hs_status_t st;
} walk_t;

static void visit(walk_t *w, int32_t k, double spent)
{
  if (w->st != HS_OK)
    return;
  if (k == w->n) {
    bool any = false;
    for (int32_t i = 0; i < w->n; i++)
      any |= w->cur[i] > 0;
    if (!any && w->o->replace)
      return;
    if (w->n_out >= (size_t)w->o->max_options) {
      w->st = HS_ELIMIT;
      return;
    }
    if (hs_reserve((void **)&w->out, &w->cap, w->n_out + 1, sizeof *w->out) != HS_OK) {
      w->st = HS_ENOMEM;
      return;
    }
    hs_whatif_option_t *op = &w->out[w->n_out++];
    memset(op, 0, sizeof *op);
    memcpy(op->count, w->cur, sizeof w->cur);
    op->added_usd_per_hour = spent;
    return;
  }
  for (int64_t c = 0;; c += w->o->step) {
    double cost = spent + (double)c * w->price[k];
    /* a relative tolerance keeps exact-budget purchases in despite rounding */
    if (cost > w->o->budget_usd_per_hour * (1 + 1e-12) || c > HS_CLUSTER_MAX_DEVICES)
      break;
    w->cur[k] = c;
    visit(w, k + 1, cost);
    if (w->st != HS_OK)
      return;
  }
  w->cur[k] = 0;
}

hs_status_t hs_whatif_enumerate(const double *price_usd_h, int32_t n_types,
                                const hs_whatif_opts_t *o, hs_whatif_option_t **out, size_t *n,
                                hs_error_t *err)
{
  *out = NULL;
  *n = 0;
  if (n_types < 1 || n_types > HS_SWEEP_MAX_TYPES)
    return hs_error_set(err, HS_EINVAL, "candidates: give 1 to %d GPU types, got %d", HS_SWEEP_MAX_TYPES,
                        n_types);
  if (o->step < 1)
    return hs_error_set(err, HS_EINVAL, "step: must be >= 1, got %d", o->step);
  if (!(o->budget_usd_per_hour >= 0) || !isfinite(o->budget_usd_per_hour))
    return hs_error_set(err, HS_EINVAL, "budget: must be a number >= 0, got %g", o->budget_usd_per_hour);
  for (int32_t k = 0; k < n_types; k++)
    if (!(price_usd_h[k] > 0) || !isfinite(price_usd_h[k]))
      return hs_error_set(err, HS_EINVAL, "candidate %d: price must be > 0 USD/h, got %g", k,
                          price_usd_h[k]);
  walk_t w;
  memset(&w, 0, sizeof w);
  w.price = price_usd_h;
  w.n = n_types;
  w.o = o;
  visit(&w, 0, 0.0);
  if (w.st == HS_ELIMIT) {
    free(w.out);
    return hs_error_set(err, HS_ELIMIT,
                        "more than %d purchases fit the budget of %g USD/h: raise the step (now %d "
                        "GPUs) or max options, or lower the budget",
                        o->max_options, o->budget_usd_per_hour, o->step);
  }
  if (w.st != HS_OK) {
    free(w.out);
    return hs_error_set(err, w.st, "out of memory enumerating purchases");
  }
  *out = w.out;
  *n = w.n_out;
  return HS_OK;
}

void hs_pareto_front(const double *tokens_s, const double *usd_mtok, const bool *ok, size_t n,
                     bool *on_front)
{
  for (size_t i = 0; i < n; i++) {
    on_front[i] = ok[i];
    for (size_t j = 0; j < n && on_front[i]; j++) {
      if (j == i || !ok[j])
        continue;
      bool ge = tokens_s[j] >= tokens_s[i] && usd_mtok[j] <= usd_mtok[i];
      bool strict = tokens_s[j] > tokens_s[i] || usd_mtok[j] < usd_mtok[i];
      if (ge && strict)
        on_front[i] = false;
    }
  }
}
