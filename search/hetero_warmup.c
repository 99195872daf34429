/*
 * hetero_warmup.c - order adaptation for hetero-1F1B: per-stage warm-up
 * depths chosen by coordinate descent with the simulator as the judge
 * (hetero_warmup.h states the valid set and the invariants). Used by
 * `hapt` on its final plan; tested against brute force over every valid
 * warm-up vector (tests/test_hetero_warmup.c).
 */
#include "hetero_warmup.h"
#include "sim_memo.h"

#include <math.h>
#include <string.h>

bool hs__hetero_warmup_explicit(hs_plan_pipeline_t *pl)
{
  int32_t S = pl->n_stages;
  bool changed = false;
  for (int32_t r = 0; r < S; r++) {
    int32_t w = pl->stages[r].warmup;
    if (pl->stages[r].warmup < 0)
      pl->stages[r].warmup = S - r - 1;
    pl->stages[r].warmup = HS_MIN(pl->stages[r].warmup, HS_MAX(pl->n_microbatches - 1, 0));
    changed = changed || pl->stages[r].warmup != w;
  }
  return changed;
}

bool hs__hetero_warmup_move(hs_plan_t *plan, int32_t stage, int32_t dir)
{
  if (plan->n_pipelines != 1 || stage < 0 || stage >= plan->pipelines[0].n_stages)
    return false;
  hs_plan_pipeline_t *pl = &plan->pipelines[0];
  int32_t S = pl->n_stages, m = pl->n_microbatches;
  hs__hetero_warmup_explicit(pl);
  int32_t w = pl->stages[stage].warmup + dir;
  int32_t lo = stage + 1 < S ? pl->stages[stage + 1].warmup : 0;
  int32_t hi = m - 1;
  if (w < lo || w > hi)
    return false;
  pl->stages[stage].warmup = w;
  for (int32_t r = stage - 1; r >= 0; r--)
    pl->stages[r].warmup = HS_MAX(pl->stages[r].warmup, pl->stages[r + 1].warmup);
  return true;
}

/* Simulated time of p, INFINITY when it runs out of memory, the simulator
 * rejects it, or it takes at least below_s (not finite: no bound; the
 * simulation stops there); HS_ENOMEM passes through. */
static hs_status_t sim_s(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p,
                         double below_s, double *t, hs_error_t *err)
{
  hs_report_t rep;
  hs_report_init(&rep);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t st = hs__simulate_below(m, c, p, below_s, &rep, &e2);
  *t = st == HS_OK && !rep.oom && !rep.stopped ? rep.iteration_time_s : INFINITY;
  hs_report_destroy(&rep);
  if (st == HS_ENOMEM)
    return hs_error_set(err, st, "hetero-1f1b warm-up: %s", e2.msg);
  return HS_OK;
}

hs_status_t hs__hetero_warmup_tune(const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *plan,
                                   double start_s, int32_t max_sims, double *iter_s,
                                   int32_t *sims, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  *sims = 0;
  *iter_s = INFINITY;
  if (plan->n_pipelines != 1 || strcmp(plan->schedule, "hetero-1f1b") != 0)
    return hs_error_set(err, HS_EINVAL,
                        "hetero-1f1b warm-up: the plan must be one pipeline under hetero-1f1b "
                        "(has %d pipelines, schedule \"%s\")",
                        plan->n_pipelines, plan->schedule);
  double best = start_s;
  /* the plans judged so far: a move back to one (the undo of the last
   * round's move) is answered from it, counted as a simulation all the
   * same, so the climb is the one without the memo (sim_memo.h) */
  hs_sim_memo_t memo;
  hs__sim_memo_init(&memo);
  hs_plan_t cand, round;
  hs_plan_init(&cand);
  hs_plan_init(&round);
  /* the caller's time stands for the plan as given; made explicit, a
   * changed plan is simulated. Counted either way: the budget, and so the
   * climb, does not depend on it */
  if (hs__hetero_warmup_explicit(&plan->pipelines[0]) || isnan(start_s)) {
    HS_CHECK(sim_s(m, c, plan, INFINITY, &best, err));
    if (hs__sim_memo_put(&memo, plan, best) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "hetero-1f1b warm-up: out of memory"));
  }
  (*sims)++;
  if (!isfinite(best))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "hetero-1f1b warm-up: the starting plan does not run"));
  int32_t S = plan->pipelines[0].n_stages;
  while (*sims < max_sims) {
    double round_s = best;
    bool moved = false;
    for (int32_t r = 0; r < S && *sims < max_sims; r++)
      for (int32_t dir = 1; dir >= -1 && *sims < max_sims; dir -= 2) {
        HS_CHECK(hs_plan_copy(plan, &cand, err));
        if (hs__hetero_warmup_move(&cand, r, dir)) {
          double t;
          if (!hs__sim_memo_get(&memo, &cand, &t)) {
            /* a move counts only when faster than round_s, which only
             * falls over the climb: one that reaches it is lost for good */
            HS_CHECK(sim_s(m, c, &cand, round_s, &t, err));
            if (hs__sim_memo_put(&memo, &cand, t) != HS_OK)
              HS_FAIL(hs_error_set(err, HS_ENOMEM, "hetero-1f1b warm-up: out of memory"));
          }
          (*sims)++;
          if (t < round_s) {
            round_s = t;
            hs_plan_destroy(&round);
            round = cand;
            hs_plan_init(&cand);
            moved = true;
          }
        }
        hs_plan_destroy(&cand);
        hs_plan_init(&cand);
      }
    if (!moved)
      break;
    hs_plan_destroy(plan);
    *plan = round;
    hs_plan_init(&round);
    best = round_s;
  }
  *iter_s = best;
cleanup:
  hs_plan_destroy(&cand);
  hs_plan_destroy(&round);
  hs__sim_memo_destroy(&memo);
  return st;
}
