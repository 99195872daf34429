/*
 * test_whatif_enum.c - purchase enumeration against brute force over the
 * whole count grid, and the Pareto front against its definition on random
 * points (with ties and failed entries).
 */
#include "hs_export.h"
#include "hs_test.h"

static void check_against_brute(const double *price, int32_t n, double budget, int32_t step, bool replace)
{
  hs_whatif_opts_t o;
  hs_whatif_opts_init(&o);
  o.budget_usd_per_hour = budget;
  o.step = step;
  o.replace = replace;
  o.max_options = 100000;
  hs_whatif_option_t *opts = NULL;
  size_t n_opts = 0;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_EQ_INT(hs_whatif_enumerate(price, n, &o, &opts, &n_opts, &err), HS_OK);
  /* brute force: every vector with counts in [0, 64 step] (far above what
   * the budget allows), odometer order = lexicographic, first slowest */
  int64_t c[HS_SWEEP_MAX_TYPES] = {0};
  size_t k = 0;
  bool same = true;
  for (;;) {
    double cost = 0;
    bool any = false;
    for (int32_t i = 0; i < n; i++) {
      cost += (double)c[i] * price[i];
      any |= c[i] > 0;
    }
    if (cost <= budget * (1 + 1e-12) && (any || !replace)) {
      same &= k < n_opts && memcmp(opts[k].count, c, sizeof c) == 0;
      if (k < n_opts)
        CHECK_REL(opts[k].added_usd_per_hour, cost, 1e-12);
      k++;
    }
    int32_t i = n - 1;
    while (i >= 0 && (c[i] += step) > 64 * step)
      c[i--] = 0;
    if (i < 0)
      break;
  }
  CHECK_MSG(same && k == n_opts, "enumeration differs from brute force: %zu vs %zu options", n_opts, k);
  free(opts);
}

static void test_enumerate(void)
{
  const double p3[] = {6.88, 3.4309, 1.09};
  check_against_brute(p3, 3, 60.0, 8, false);
  check_against_brute(p3, 3, 60.0, 8, true);
  check_against_brute(p3, 3, 0.0, 8, false);   /* only "buy nothing" */
  const double p2[] = {1.0, 2.0};
  check_against_brute(p2, 2, 16.0, 4, false);  /* purchases exactly on the budget count */
  check_against_brute(p2, 2, 7.5, 1, true);
  /* refusals name the problem */
  hs_whatif_opts_t o;
  hs_whatif_opts_init(&o);
  o.budget_usd_per_hour = 1000;
  o.step = 1;
  o.max_options = 50;
  hs_whatif_option_t *opts = NULL;
  size_t n = 0;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_whatif_enumerate(p3, 3, &o, &opts, &n, &err) == HS_ELIMIT);
  CHECK_CONTAINS(err.msg, "more than 50");
  const double bad[] = {1.0, 0.0};
  hs_error_init(&err);
  CHECK(hs_whatif_enumerate(bad, 2, &o, &opts, &n, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "price");
}

static void test_pareto(void)
{
  uint64_t x = 12345;
  for (int trial = 0; trial < 50; trial++) {
    enum { N = 40 };
    double tk[N], cost[N];
    bool ok[N], front[N];
    for (int i = 0; i < N; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      tk[i] = (double)((x >> 33) % 20);       /* few values: many ties */
      cost[i] = (double)((x >> 45) % 20);
      ok[i] = ((x >> 20) % 7) != 0;
    }
    hs_pareto_front(tk, cost, ok, N, front);
    for (int i = 0; i < N; i++) {
      bool dominated = false;
      for (int j = 0; j < N; j++)
        if (ok[j] && j != i && tk[j] >= tk[i] && cost[j] <= cost[i] && (tk[j] > tk[i] || cost[j] < cost[i]))
          dominated = true;
      CHECK(front[i] == (ok[i] && !dominated));
    }
  }
}

int main(void)
{
  HS_RUN(test_enumerate);
  HS_RUN(test_pareto);
  HS_TEST_END();
}
