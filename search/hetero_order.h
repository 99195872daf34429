/*
 * hetero_order.h - order adaptation for hetero-1F1B beyond warm-up depths:
 * each stage gets an explicit order of its forward and backward micro-steps
 * (stages[].order, 'F'/'B' x 2m, sim/sched.c), found by a hill climb over
 * adjacent swaps with the simulator as the judge. A swap FB -> BF runs a
 * backward one forward earlier (fewer activations in flight, gradients
 * flow sooner to a slow predecessor); BF -> FB runs a forward ahead of a
 * backward (a fast stage keeps computing while a slow successor or link
 * stalls its gradient). The warm-up family of hetero_warmup.h is the
 * subset where every backward k follows min(w + 1 + k, m) forwards.
 *
 * Invariants: every order tried is a Dyck word (no prefix with more Bs
 * than Fs); orders the plan validator rejects (the pipeline would
 * deadlock) are skipped without simulating; plans that run out of memory
 * are never accepted; the result is never slower than the input plan, and
 * when no swap helps the input plan is left as it was (no order fields).
 * An input plan that runs out of memory starts from the leanest order
 * (FBFB...: one microbatch in flight per stage) instead.
 */
#ifndef HS_HETERO_ORDER_H
#define HS_HETERO_ORDER_H

#include "hs_search.h"

/* First-improvement hill climb over adjacent FB/BF swaps on every stage of
 * a one-pipeline hetero-1f1b plan, starting from the order its warm-up
 * depths give, until a full pass over every stage and position improves
 * nothing or max_sims simulations have run. *plan gets explicit orders
 * only if they are faster; *iter_s is its simulated time and *sims the
 * simulations run. HS_EINVAL for a plan that is not one hetero-1f1b
 * pipeline or that does not run even with the leanest order; HS_ENOMEM on
 * allocation failure. start_s: the simulated time of *plan as given when
 * the caller has it (INFINITY: it does not run; the plan must be valid),
 * NAN to simulate it here; counted as one of *sims and of max_sims either
 * way, so the result does not depend on it.
 * O(max_sims simulations). */
hs_status_t hs__hetero_order_tune(const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *plan,
                                  double start_s, int32_t max_sims, double *iter_s,
                                  int32_t *sims, hs_error_t *err);

/* Writes the hetero-1f1b order of a stage with warm-up w (w < 0: the
 * schedule's default for rank r of S) over n_mb microbatches into out
 * (2 n_mb letters and a NUL). O(n_mb). */
void hs__hetero_order_from_warmup(int32_t w, int32_t r, int32_t S, int32_t n_mb, char *out);

#endif /* HS_HETERO_ORDER_H */
