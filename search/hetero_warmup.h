/*
 * hetero_warmup.h - order adaptation for the hetero-1F1B schedule: the
 * per-stage warm-up depth (stages[].warmup, the forwards a stage runs
 * before its first backward) decides the order of forward and backward
 * micro-steps on each stage; a deeper warm-up on a fast stage feeding a
 * slow one (or a slow link) keeps it computing while the successor catches
 * up, at the price of more activations in flight. hs__hetero_warmup_tune
 * chooses the depths with the simulator as the judge.
 *
 * Invariants: the order family is 1F1B with warm-up w_r on rank r
 * (sim/sched.c); valid vectors are m - 1 >= w_0 >= w_1 >= ... >= w_{S-1}
 * >= 0: a shallower warm-up than the successor's deadlocks (plan
 * validation, sim/plan.c), and m - 1 already runs every forward first. A
 * move never leaves that set; plans that run out of memory are never
 * accepted.
 */
#ifndef HS_HETERO_WARMUP_H
#define HS_HETERO_WARMUP_H

#include "hs_search.h"

/* Coordinate descent over the warm-up vector of a one-pipeline hetero-1f1b
 * plan: each round tries every stage's depth one deeper (deepening the
 * stages before it as the chain needs) and one shallower, simulates each,
 * and takes the fastest move while it is faster than the incumbent; at
 * most max_sims simulations. *plan is updated in place (its default
 * warm-ups, -1, become explicit); *iter_s is its simulated time and *sims
 * the simulations run. HS_EINVAL for a plan that is not one hetero-1f1b
 * pipeline or that the simulator rejects; HS_ENOMEM on allocation
 * failure. start_s: the simulated time of *plan as given when the caller
 * has it (INFINITY: it does not run), NAN to simulate it here; a plan whose
 * warm-ups change when made explicit is simulated either way. The starting
 * point counts as one of *sims and of max_sims whether simulated or not,
 * so the result does not depend on start_s. O(max_sims simulations). */
hs_status_t hs__hetero_warmup_tune(const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *plan,
                                   double start_s, int32_t max_sims, double *iter_s,
                                   int32_t *sims, hs_error_t *err);

/* Makes pl's warm-ups explicit: the schedule's default (p - r - 1) where
 * -1, each at most m - 1; true when one changed. The simulated timeline
 * stays the same: sim/sched.c runs the default for -1 and clamps a
 * warm-up to m (m - 1 and m both run every forward first), and plan
 * validation and memory read the warm-up by the same rule. O(stages). */
bool hs__hetero_warmup_explicit(hs_plan_pipeline_t *pl);
/* Moves stage `stage`'s warm-up by dir (+1 or -1) inside the valid set of
 * the header; false when the move leaves it. Earlier stages are deepened
 * as the chain needs. O(stages). */
bool hs__hetero_warmup_move(hs_plan_t *plan, int32_t stage, int32_t dir);

#endif /* HS_HETERO_WARMUP_H */
