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
 * Bound (exact: every value and every choice are those of the plain
 * recurrence, test_hapt_dp). Fix a table and a mesh (a, zi). Let w(k, k')
 * be the smallest t + f over the options of stage [k, k') on it (the
 * memory rule picks one of them) and pot(0) = 0, pot(k') = min over k < k'
 * of pot(k) + w(k, k'): a shortest path, so pot(k') <= pot(k) + w(k, k'),
 * i.e. w(k, k') >= pot(k') - pot(k) for every k < k'. For the level s - 1
 * let rest(k') = min over successors b (F(s - 1, k', u2, b) finite, c(a ->
 * b, k') <= t_max) of 2 c + F(s - 1, k', u2, b). Every candidate (zi, k',
 * b) of F(s, k, u, a) then costs
 *   t + f + 2 c + F >= w(k, k') + rest(k') >= H(k') - pot(k),
 *   H(k') = pot(k') + rest(k'),
 * a bound that splits into a part of k' and a part of k, and the tighter
 * w(k, k') + rest(k'), which does not. Each state keeps a threshold: the
 * smaller of its best value so far and an upper bound known beforehand,
 * F(s, k, u - e_a', a) for a subcluster a' with a unit in u (every
 * candidate there is one here, its rest no larger: F falls as u grows).
 * A candidate whose bound passes the threshold is neither smaller than
 * the minimum nor equal to it; the comparisons allow a relative slack of
 * 1e-9 for rounding (the sums are of a few dozen positive doubles). Per
 * row of states (s, u, a) and mesh, a monotone deque over k gives every
 * window's smallest H(k') in O(K); a state tries its meshes in
 * the order of H - pot(k), stops at the first that passes the threshold,
 * and in a mesh tries the window's smallest-H end cut first (a small best
 * early), then every end cut whose w + rest does not pass the threshold,
 * in order. Candidates thus come out of the plain order (zi, k', b
 * ascending), so a tie replaces the best when it comes first in that
 * order: the plain recurrence's first minimum.
 *
 * Windows: the fastest option's t grows with k' and falls with k (it is
 * a difference of per-op prefix sums, and rounding is monotone), and
 * whether a mesh has options does not depend on the cuts; so the end cuts
 * under the cap are [k + 1, kend(k)], kend non-decreasing in k (two
 * pointers per run), and within a window an end cut whose fastest t
 * passes the threshold ends the scan (t + f + 2 c + F >= t).
 *
 * Incremental runs: a run on the same table with a cap no larger than the
 * last run's only removes candidates (stages or cuts over the new cap),
 * so a state whose solution has every stage and cut within the new cap
 * (M, its largest, at most the cap) keeps its value and its choice: no
 * candidate got smaller and none before it in the plain order was as
 * small. Only the other states are computed again.
 *
 * Why not a sliding-window minimum of the values themselves: t splits into
 * prefix sums only per option, the option is the memory rule's (it
 * changes with the span and the stages in flight), and f's unhidden
 * all-reduce (max(0, ar - bwd)) does not split; the potential's bound
 * splits and holds for every pair, and the exact values are computed only
 * where it does not decide.
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
  double *M;                  /* per state: largest stage or cut time of its solution */
  uint64_t run_table;         /* the last run's h->table_id, h->opts and cap */
  const void *run_opts;
  double run_tmax;
  uint64_t transitions;       /* (state, successor) pairs examined, all runs */
  /* the bound (above): per mesh (a, zi) of Z = max_sizes per subcluster */
  int32_t Z;
  double *pot;                /* A x Z x K: potentials of the current table */
  double *pot_max;            /* A x Z: largest finite potential (rounding slack) */
  double *wmin;               /* A x Z x K x K: smallest t + f of stage [k, k') */
  double *tfast;              /* A x Z x K x K: fastest t of stage [k, k') */
  uint64_t pot_table;         /* h->table_id and h->opts those were made for */
  const void *pot_opts;
  int32_t *kend;              /* A x Z x K: last end cut under the run's cap */
  double *rest;               /* A x U x K: rest(k') of the level being filled */
  uint8_t *rest_made;         /* A x U: whether that row of rest is made this level */
  int32_t *fewer;             /* A: a row's budget vectors with one unit fewer */
  double *lb;                 /* Z x K: a row's bound per mesh and cut */
  int32_t *larg;              /* Z x K: ... and the end cut that gives it */
  int32_t *deque;             /* K */
  int32_t *order;             /* Z: a state's meshes by bound */
  /* hs__hapt_dp_next_cap_in: the current table's candidate values below
   * the last x asked (unsorted), for the table and opts named */
  double *capv;
  size_t n_capv, cap_capv;
  uint64_t cap_table;
  const void *cap_opts;
  double cap_x;
} hs_hapt_dp_t;

/* Sizes d for h's table: S = min(units, cuts - 1, max_stages), fewer while
 * (S + 1) x K x U x A passes max_states. HS_EINFEASIBLE (err names the
 * count) when the budget vectors alone pass max_states; HS_ENOMEM. On
 * failure d is zeroed. O(S x K x U x A + A x Z x K^2). */
hs_status_t hs__hapt_dp_init(hs_hapt_dp_t *d, const hs_hspace_t *h, int32_t max_stages,
                             int64_t max_states, hs_error_t *err);
void hs__hapt_dp_destroy(hs_hapt_dp_t *d);
/* One run for h's current table (h->n_cuts == d->K) and cap tmax (HS_HAPT_DP_INF:
 * none). Worst case O(S x K^2 x U x A^2 x Z); in practice O(S x K x U x A x
 * Z) for the bounds plus O(A) per end cut the bound leaves, on the states
 * the cap changes when the last run was on the same table with a cap no
 * smaller; plus O(K^2 x A x Z x opts) when the table is new. */
void hs__hapt_dp_run(hs_hapt_dp_t *d, hs_hspace_t *h, double tmax);
/* The last run's best solution (fewest-cost stage count, then subcluster)
 * into sol (sol->st holds at least d->S entries); false when infeasible. */
bool hs__hapt_dp_extract(const hs_hapt_dp_t *d, const hs_hspace_t *h, hs_hsol_t *sol);
/* F of the last run (HS_HAPT_DP_INF when infeasible or out of range). */
double hs__hapt_dp_value(const hs_hapt_dp_t *d, int32_t st, int32_t k, int32_t u, int32_t a);
/* Largest stage or cut time below x in h's current table; -1 when none.
 * O(K^2 x A x Z x opts). */
double hs__hapt_dp_next_cap(const hs_hspace_t *h, double x);
/* The same value, from the values d keeps of h's table: a sweep asks for
 * ever smaller x on one table (hapt's caps descend), so each call scans
 * only the values below the last x, and drops those not below this one.
 * O(K^2 x A x Z x opts) on a new table or a larger x, then O(values left);
 * falls back to hs__hapt_dp_next_cap when the values' array cannot be
 * allocated. */
double hs__hapt_dp_next_cap_in(hs_hapt_dp_t *d, const hs_hspace_t *h, double x);

#endif /* HS_HAPT_DP_H */
