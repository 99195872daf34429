/*
 * hapt_dp.h - hapt's stage-time-cap dynamic programme over one option
 * table (hapt_space.h), moved out of hapt.c so that a test can hold it
 * against a naive recurrence and so that hapt can run it over two tables
 * (the capped cut list and every op-level cut candidate).
 *
 * For a cap t_max,
 *   F(s, k, u, a) = min over (z, k', b) of
 *       t + f + 2 c(a -> b, k') + F(s - 1, k', u - z e_a, b)
 * subject to t <= t_max, c <= t_max and the stage fitting in memory with s
 * microbatches in flight (plus the hetero-1f1b extra); s = stages of the
 * suffix starting at cut k, u = units per subcluster at most used (a mixed
 * radix vector), a = subcluster of the suffix's first stage; F(1, k, u, a)
 * is one stage to the end, t + f.
 *
 * Pruning (exact: the minimum and the choice are those of the plain
 * recurrence, test_hapt_dp): for a fixed (s, k, u, a, z) the loop over the
 * stage's end cut k' stops as soon as the fastest option's t of [k, k')
 * exceeds the cap, or reaches the best value found so far for the state:
 * t grows with k' (prefix sums) and f, c and F are >= 0, so no longer
 * stage can give a strictly smaller value.
 */
#ifndef HS_HAPT_DP_H
#define HS_HAPT_DP_H

#include "hapt_space.h"

#define HS_HAPT_DP_INF 1e300 /* no cap; F of an infeasible state */

typedef struct hs_hapt_choice {
  int32_t k2, zi, b, opt;
} hs_hapt_choice_t;

typedef struct hs_hapt_dp {
  int32_t S;                  /* max stages */
  int32_t K;                  /* cut candidates of the table it was sized for */
  int32_t U;                  /* budget vectors */
  int32_t A;                  /* subclusters */
  int32_t *radix;             /* per sc: levels + 1 */
  int32_t *stride;
  int32_t *usum;              /* per budget vector: units in it (a suffix of st stages needs st) */
  double *F;                  /* (S+1) x K x U x A */
  hs_hapt_choice_t *ch;
  uint64_t transitions;       /* (state, successor) pairs examined, all runs */
} hs_hapt_dp_t;

/* Sizes d for h's table: S = min(units, cuts - 1, max_stages), fewer while
 * (S + 1) x K x U x A passes max_states. HS_EINFEASIBLE (err names the
 * count) when the budget vectors alone pass max_states; HS_ENOMEM. On
 * failure d is zeroed. O(S x K x U x A). */
hs_status_t hs__hapt_dp_init(hs_hapt_dp_t *d, const hs_hspace_t *h, int32_t max_stages,
                             int64_t max_states, hs_error_t *err);
void hs__hapt_dp_destroy(hs_hapt_dp_t *d);
/* One run for h's current table (h->n_cuts == d->K) and cap tmax (HS_HAPT_DP_INF:
 * none). Per run O(S x K x K' x U x A^2 x Z), K' the end cuts the pruning
 * leaves. */
void hs__hapt_dp_run(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax);
/* The last run's best solution (fewest-cost stage count, then subcluster)
 * into sol (sol->st holds at least d->S entries); false when infeasible. */
bool hs__hapt_dp_extract(const hs_hapt_dp_t *d, const hs_hspace_t *h, hs_hsol_t *sol);
/* F of the last run (HS_HAPT_DP_INF when infeasible or out of range). */
double hs__hapt_dp_value(const hs_hapt_dp_t *d, int32_t st, int32_t k, int32_t u, int32_t a);
/* Largest stage or cut time below x in h's current table; -1 when none.
 * O(K^2 x A x Z x opts). */
double hs__hapt_dp_next_cap(const hs_hspace_t *h, double x);

#endif /* HS_HAPT_DP_H */
