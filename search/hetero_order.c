/*
 * hetero_order.c - explicit per-stage hetero-1F1B orders tuned by a hill
 * climb over adjacent forward/backward swaps, the simulator as the judge
 * (hetero_order.h states the move set and the invariants). Used by `hapt`
 * after the warm-up tuning; tested against brute force over every legal
 * per-stage order (tests/test_hetero_order.c).
 */
#include "hetero_order.h"
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs__hetero_order_from_warmup(int32_t w, int32_t r, int32_t S, int32_t n_mb, char *out)
{
  if (w < 0)
    w = S - r - 1;
  w = HS_MIN(w, n_mb);
  int32_t k = 0, f = 0, b = 0;
  for (; f < w; f++)
    out[k++] = 'F';
  while (f < n_mb) {
    out[k++] = 'F';
    f++;
    out[k++] = 'B';
    b++;
  }
  while (b < n_mb) {
    out[k++] = 'B';
    b++;
  }
  out[k] = '\0';
}

/* Simulated time of p; INFINITY when the validator rejects it (*ran
 * false: nothing simulated), it runs out of memory, does not run, or takes
 * at least below_s (not finite: no bound; the simulation stops there);
 * HS_ENOMEM passes through. */
static hs_status_t sim_s(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p,
                         double below_s, double *t, bool *ran, hs_error_t *err)
{
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  *t = INFINITY;
  *ran = false;
  hs_status_t st = hs_plan_validate(p, m, c, "hetero-1f1b order", &e2);
  if (st == HS_ENOMEM)
    return hs_error_set(err, st, "hetero-1f1b order: %s", e2.msg);
  if (st != HS_OK)
    return HS_OK;
  *ran = true;
  hs_report_t rep;
  hs_report_init(&rep);
  st = hs__simulate_below(m, c, p, below_s, &rep, &e2);
  *t = st == HS_OK && !rep.oom && !rep.stopped ? rep.iteration_time_s : INFINITY;
  hs_report_destroy(&rep);
  if (st == HS_ENOMEM)
    return hs_error_set(err, st, "hetero-1f1b order: %s", e2.msg);
  return HS_OK;
}

/* Swaps letters j and j + 1 of o when they differ and the result keeps
 * every prefix with no more Bs than Fs. */
static bool try_swap(char *o, int32_t j)
{
  if (o[j] == o[j + 1])
    return false;
  if (o[j] == 'F') { /* FB -> BF: the B now needs more Fs than Bs before j */
    int32_t d = 0;
    for (int32_t k = 0; k < j; k++)
      d += o[k] == 'F' ? 1 : -1;
    if (d < 1)
      return false;
  }
  char x = o[j];
  o[j] = o[j + 1];
  o[j + 1] = x;
  return true;
}

hs_status_t hs__hetero_order_tune(const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *plan,
                                  double start_s, int32_t max_sims, double *iter_s,
                                  int32_t *sims, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  *sims = 0;
  *iter_s = INFINITY;
  if (plan->n_pipelines != 1 || strcmp(plan->schedule, "hetero-1f1b") != 0 || plan->chunks != 1)
    return hs_error_set(err, HS_EINVAL,
                        "hetero-1f1b order: the plan must be one pipeline under hetero-1f1b "
                        "(has %d pipelines, schedule \"%s\")",
                        plan->n_pipelines, plan->schedule);
  hs_plan_t cand;
  hs_plan_init(&cand);
  char *buf = NULL;
  int32_t *perm = NULL;
  double best = start_s;
  bool ran = true; /* the caller's time: counted as a simulation (the budget does not depend on it) */
  if (isnan(start_s))
    HS_CHECK(sim_s(m, c, plan, INFINITY, &best, &ran, err));
  *sims += ran;
  *iter_s = best;
  hs_plan_pipeline_t *pl = &plan->pipelines[0];
  int32_t S = pl->n_stages, n_mb = pl->n_microbatches;
  buf = hs_calloc((size_t)2 * n_mb + 1, 1);
  if (!buf)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "hetero-1f1b order: out of memory"));
  HS_CHECK(hs_plan_copy(plan, &cand, err));
  /* a plan that does not fit starts from the leanest order instead: one
   * activation in flight per stage (FBFB...), always live */
  bool lean = !isfinite(best);
  for (int32_t r = 0; r < S; r++)
    if (lean || !cand.pipelines[0].stages[r].order) {
      hs__hetero_order_from_warmup(lean ? 0 : cand.pipelines[0].stages[r].warmup, r, S, n_mb, buf);
      if (hs_plan_stage_set_order(&cand.pipelines[0].stages[r], buf) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "hetero-1f1b order: out of memory"));
    }
  bool improved = false;
  if (lean) {
    HS_CHECK(sim_s(m, c, &cand, INFINITY, &best, &ran, err));
    *sims += ran;
    if (!isfinite(best))
      HS_FAIL(hs_error_set(err, HS_EINVAL,
                           "hetero-1f1b order: the plan does not run, not even with one "
                           "microbatch in flight per stage"));
    improved = true;
  }
  /* Scan order: the stages in turn, on each the swap positions by distance
   * from where its first backward stood at the start (the end of its
   * warm-up: where a stage's order differs from its neighbours'), so a
   * small budget tries every stage's likeliest moves first. */
  int32_t P = 2 * n_mb - 1;
  perm = hs_calloc((size_t)S * (size_t)P, sizeof *perm);
  if (!perm)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "hetero-1f1b order: out of memory"));
  for (int32_t r = 0; r < S; r++) {
    const char *o = cand.pipelines[0].stages[r].order;
    int32_t b0 = (int32_t)(strchr(o, 'B') - o), k = 0;
    for (int32_t d = 0; k < P; d++)
      for (int32_t sgn = -1; sgn <= 1 && k < P; sgn += 2) {
        int32_t j = b0 - 1 + sgn * d + (sgn > 0); /* b0 - 1 - d, then b0 + d */
        if (j >= 0 && j < P)
          perm[(size_t)r * P + k++] = j;
      }
  }
  /* first improvement; a full pass without one ends the climb */
  int32_t since = 0, total = S * P, pos = 0;
  while (since < total && *sims < max_sims) {
    int32_t r = pos % S, j = perm[(size_t)r * P + pos / S];
    pos = (pos + 1) % total;
    since++;
    char *o = cand.pipelines[0].stages[r].order;
    if (!try_swap(o, j))
      continue;
    double t;
    HS_CHECK(sim_s(m, c, &cand, best, &t, &ran, err)); /* first improvement: only below best counts */
    *sims += ran;
    if (t < best) {
      best = t;
      improved = true;
      since = 0;
    } else {
      try_swap(o, j); /* undo: the pair was valid before */
    }
  }
  if (improved) {
    for (int32_t r = 0; r < S; r++) {
      pl->stages[r].warmup = -1;
      if (hs_plan_stage_set_order(&pl->stages[r], cand.pipelines[0].stages[r].order) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "hetero-1f1b order: out of memory"));
    }
    *iter_s = best;
  }
cleanup:
  hs_plan_destroy(&cand);
  free(buf);
  free(perm);
  return st;
}
