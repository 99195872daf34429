/*
 * test_lp.c - the GLPK adapter (search/lp.c) against problems with known
 * answers: a tiny LP and a tiny MILP solved by hand, an infeasible problem
 * (status reported, process alive), an unbounded one, a time-limited MILP
 * (parity-infeasible equality knapsack, exponential for branch-and-bound),
 * bad input refused with a message, and a problem solved twice.
 */
#include "hs_test.h"
#include "lp.h"

#include <time.h>

static double wall_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* max 3x + 2y  s.t. x + y <= 4, x + 3y <= 6, 0 <= x <= 3: optimum x=3, y=1, 11. */
static void test_lp_tiny(void)
{
  hs_lp_t *lp = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_lp_new(false, &lp) == HS_OK);
  int32_t x, y;
  CHECK(hs_lp_add_col(lp, 0, 3, 3, false, &x) == HS_OK);
  CHECK(hs_lp_add_col(lp, 0, INFINITY, 2, false, &y) == HS_OK);
  int32_t idx[2] = {x, y};
  double a[2] = {1, 1}, b[2] = {1, 3};
  CHECK(hs_lp_add_row(lp, 2, idx, a, -INFINITY, 4, &err) == HS_OK);
  CHECK(hs_lp_add_row(lp, 2, idx, b, -INFINITY, 6, &err) == HS_OK);
  hs_lp_result_t res;
  CHECK(hs_lp_solve(lp, NULL, &res, &err) == HS_OK);
  CHECK_EQ_INT(res.status, HS_LP_OPTIMAL);
  CHECK(!res.is_mip);
  CHECK_REL(res.objective, 11.0, 1e-9);
  CHECK_REL(hs_lp_value(lp, x), 3.0, 1e-9);
  CHECK_REL(hs_lp_value(lp, y), 1.0, 1e-9);
  /* change and solve again: add x + y >= 4.5 -> infeasible with x + y <= 4 */
  CHECK(hs_lp_add_row(lp, 2, idx, a, 4.5, INFINITY, &err) == HS_OK);
  CHECK(hs_lp_solve(lp, NULL, &res, &err) == HS_OK);
  CHECK_EQ_INT(res.status, HS_LP_INFEASIBLE);
  CHECK(isnan(res.objective));
  hs_lp_free(lp);
}

/* min -x - y s.t. 2x + 2y <= 3, x,y integer >= 0; also 3x - 2y = 1 would
 * be fractional. Optimum of the MILP: x + y = 1 (LP relaxation 1.5). */
static void test_milp_tiny(void)
{
  hs_lp_t *lp = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_lp_new(true, &lp) == HS_OK);
  int32_t x, y;
  CHECK(hs_lp_add_col(lp, 0, 10, -1, true, &x) == HS_OK);
  CHECK(hs_lp_add_col(lp, 0, 10, -1, true, &y) == HS_OK);
  int32_t idx[2] = {x, y};
  double a[2] = {2, 2};
  CHECK(hs_lp_add_row(lp, 2, idx, a, -INFINITY, 3, &err) == HS_OK);
  /* 3x - 2y = 1 forces (x, y) = (1, 1) + k(2, 3): with x + y <= 1.5 only
   * infeasible... so use the inequality 3x - 2y >= 1 instead: x = 1, y = 0. */
  double b[2] = {3, -2};
  CHECK(hs_lp_add_row(lp, 2, idx, b, 1, INFINITY, &err) == HS_OK);
  hs_lp_result_t res;
  hs_lp_opts_t o;
  hs_lp_opts_init(&o);
  o.mip_gap = 0.0;
  CHECK(hs_lp_solve(lp, &o, &res, &err) == HS_OK);
  CHECK(res.is_mip);
  CHECK_EQ_INT(res.status, HS_LP_OPTIMAL);
  CHECK_REL(res.objective, -1.0, 1e-9);
  CHECK_REL(hs_lp_value(lp, x), 1.0, 1e-9);
  CHECK(fabs(hs_lp_value(lp, y)) < 1e-9);
  CHECK(res.gap == 0.0);
  hs_lp_free(lp);
}

/* Integer infeasible with a feasible relaxation: 2x = 1, x integer. */
static void test_milp_infeasible(void)
{
  hs_lp_t *lp = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_lp_new(true, &lp) == HS_OK);
  int32_t x;
  CHECK(hs_lp_add_col(lp, 0, 5, 1, true, &x) == HS_OK);
  double two = 2;
  CHECK(hs_lp_add_row(lp, 1, &x, &two, 1, 1, &err) == HS_OK);
  hs_lp_result_t res;
  CHECK(hs_lp_solve(lp, NULL, &res, &err) == HS_OK);
  CHECK_EQ_INT(res.status, HS_LP_INFEASIBLE);
  hs_lp_free(lp);
  /* LP infeasible at the root, through presolve */
  CHECK(hs_lp_new(true, &lp) == HS_OK);
  CHECK(hs_lp_add_col(lp, 0, 1, 1, true, &x) == HS_OK);
  double one = 1;
  CHECK(hs_lp_add_row(lp, 1, &x, &one, 2, INFINITY, &err) == HS_OK);
  CHECK(hs_lp_solve(lp, NULL, &res, &err) == HS_OK);
  CHECK_EQ_INT(res.status, HS_LP_INFEASIBLE);
  hs_lp_free(lp);
}

static void test_lp_unbounded(void)
{
  hs_lp_t *lp = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_lp_new(false, &lp) == HS_OK);
  int32_t x, y;
  CHECK(hs_lp_add_col(lp, 0, INFINITY, 1, false, &x) == HS_OK);
  CHECK(hs_lp_add_col(lp, -INFINITY, INFINITY, 0, false, &y) == HS_OK);
  int32_t idx[2] = {x, y};
  double a[2] = {1, -1};
  CHECK(hs_lp_add_row(lp, 2, idx, a, -INFINITY, 1, &err) == HS_OK);
  hs_lp_result_t res;
  CHECK(hs_lp_solve(lp, NULL, &res, &err) == HS_OK);
  CHECK_EQ_INT(res.status, HS_LP_UNBOUNDED);
  hs_lp_free(lp);
}

/* sum_i a_i x_i = 41 over 40 binaries with even a_i: no integer solution, LP
 * relaxation feasible, and branch-and-bound must enumerate a huge tree, so
 * only a limit stops it. */
static hs_lp_t *hopeless_milp(void)
{
  enum { N = 40 };
  hs_lp_t *lp = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_lp_new(true, &lp) == HS_OK);
  int32_t idx[N];
  double a[N];
  for (int i = 0; i < N; i++) {
    CHECK(hs_lp_add_col(lp, 0, 1, (double)(i % 7 + 1), true, &idx[i]) == HS_OK);
    a[i] = 2.0 + 2.0 * (i % 5);
  }
  CHECK(hs_lp_add_row(lp, N, idx, a, 41, 41, &err) == HS_OK);
  return lp;
}

static void test_milp_time_limit(void)
{
  hs_lp_t *lp = hopeless_milp();
  hs_error_t err;
  hs_error_init(&err);
  hs_lp_opts_t o;
  hs_lp_opts_init(&o);
  o.time_limit_s = 0.3;
  hs_lp_result_t res;
  double t0 = wall_s();
  hs_status_t st = hs_lp_solve(lp, &o, &res, &err);
  double dt = wall_s() - t0;
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  /* Either the limit stopped it (no solution) or the solver proved
   * infeasibility quickly; never a made-up solution. */
  CHECK_MSG(res.status == HS_LP_NO_SOLUTION || res.status == HS_LP_INFEASIBLE, "status %s",
            hs_lp_status_name(res.status));
  /* how far past 0.3 s it stopped is printed, not bounded: a wall-clock
   * bound fails on a busy machine (test_milp_work_limit bounds the work) */
  fprintf(stderr, "  time-limited MILP: %s after %.2f s (limit hit: %d)\n",
          hs_lp_status_name(res.status), dt, res.time_limit_hit);
  CHECK(res.time_limit_hit == (res.status == HS_LP_NO_SOLUTION));
  hs_lp_free(lp);
}

/* The same MILP under a work limit: stopped without a made-up solution, at
 * the same point every time (iterations, nodes and work equal across runs:
 * the limit counts GLPK's progress, not seconds), and not far past the limit
 * (GLPK asks between subproblems; each of these costs a few iterations x 1
 * row + 2.5 x 40 nonzeros). */
static void test_milp_work_limit(void)
{
  hs_lp_result_t res[2];
  for (int run = 0; run < 2; run++) {
    hs_lp_t *lp = hopeless_milp();
    hs_error_t err;
    hs_error_init(&err);
    hs_lp_opts_t o;
    hs_lp_opts_init(&o);
    o.work_limit = 2e4;
    CHECK_MSG(hs_lp_solve(lp, &o, &res[run], &err) == HS_OK, "%s", err.msg);
    hs_lp_free(lp);
  }
  CHECK_MSG(res[0].status == HS_LP_NO_SOLUTION || res[0].status == HS_LP_INFEASIBLE, "status %s",
            hs_lp_status_name(res[0].status));
  CHECK(res[0].time_limit_hit == (res[0].status == HS_LP_NO_SOLUTION));
  if (res[0].time_limit_hit) {
    CHECK_MSG(res[0].work >= 2e4 && res[0].work < 2e4 + 1e3, "work %g", res[0].work);
    CHECK(res[0].nodes > 0);
  }
  CHECK(res[0].work > 0);
  CHECK_EQ_INT(res[0].status, res[1].status);
  CHECK(res[0].iterations == res[1].iterations);
  CHECK(res[0].nodes == res[1].nodes);
  CHECK(res[0].work == res[1].work);
  fprintf(stderr, "  work-limited MILP: %s, %lld iterations, %lld nodes, work %g\n",
          hs_lp_status_name(res[0].status), (long long)res[0].iterations,
          (long long)res[0].nodes, res[0].work);
}

static void test_bad_input(void)
{
  hs_lp_t *lp = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_lp_new(true, &lp) == HS_OK);
  int32_t x;
  CHECK(hs_lp_add_col(lp, 1, 0, 0, false, &x) == HS_EINVAL);
  CHECK(hs_lp_add_col(lp, NAN, 0, 0, false, &x) == HS_EINVAL);
  CHECK(hs_lp_add_col(lp, 0, 1, 1, false, &x) == HS_OK);
  int32_t bad = 7;
  double one = 1;
  CHECK(hs_lp_add_row(lp, 1, &bad, &one, 0, 1, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "column 7 does not exist");
  hs_error_clear(&err);
  int32_t dup[2] = {x, x};
  double v2[2] = {1, 1};
  CHECK(hs_lp_add_row(lp, 2, dup, v2, 0, 1, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "appears twice");
  hs_error_clear(&err);
  CHECK(hs_lp_add_row(lp, 1, &x, &one, 2, 1, &err) == HS_EINVAL);
  hs_error_clear(&err);
  hs_lp_opts_t o;
  hs_lp_opts_init(&o);
  o.mip_gap = -1;
  hs_lp_result_t res;
  CHECK(hs_lp_solve(lp, &o, &res, &err) == HS_EINVAL);
  /* a negative or NaN work limit is refused, naming it */
  hs_lp_opts_init(&o);
  o.work_limit = -5;
  hs_error_clear(&err);
  CHECK(hs_lp_solve(lp, &o, &res, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "work limit -5");
  o.work_limit = NAN;
  hs_error_clear(&err);
  CHECK(hs_lp_solve(lp, &o, &res, &err) == HS_EINVAL);
  hs_lp_free(lp);
  hs_lp_free(NULL);
}

int main(void)
{
  HS_RUN(test_lp_tiny);
  HS_RUN(test_milp_tiny);
  HS_RUN(test_milp_infeasible);
  HS_RUN(test_lp_unbounded);
  HS_RUN(test_milp_time_limit);
  HS_RUN(test_milp_work_limit);
  HS_RUN(test_bad_input);
  fprintf(stderr, "%d checks, %d failures\n", hs_test_checks, hs_test_failures);
  return hs_test_failures ? 1 : 0;
}
