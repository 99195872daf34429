/*
 * test_hapt_pick_memo.c - hapt's memo of the memory rule (search/
 * hapt_space.c, hs__hspace_pick_at) against the rule itself
 * (hs__hspace_pick): for every entry of the table, every microbatch count
 * in flight and every successor (same site or across the slow link), the
 * memoised pick equals the direct one, on its first (computed) and second
 * (remembered) call, over several microbatch sizes and a change of the
 * estimator's practice between tables (each table clears the memo, as
 * hapt's memory-saving pass needs). GPT-3 6.7B on 4 A100 + 4 V100, where
 * memory decides: some entries fit nothing, some need a slower option.
 */
#include "hapt_space.h"
#include "search_fixture.h"

static void check_tables(hs_hspace_t *h, int32_t S, int32_t *n_none, int32_t *n_slower,
                         int32_t *n_cross_differs)
{
  int32_t K = h->n_cuts, A = h->n_sc;
  for (int32_t pass = 0; pass < 2; pass++)
    for (int32_t k = 0; k + 1 < K; k++)
      for (int32_t k2 = k + 1; k2 < K; k2++)
        for (int32_t a = 0; a < A; a++)
          for (int32_t zi = 0; zi < h->n_sizes[a]; zi++)
            for (int32_t inf = 1; inf <= S; inf++)
              for (int32_t b = -1; b < A; b++) {
                bool cross = b >= 0;
                double c = cross ? hs__hspace_cut_s(h, a, b, k2) : 0.0;
                int32_t want = hs__hspace_pick(h, k, k2, a, zi, inf, cross, c);
                int32_t got = hs__hspace_pick_at(h, k, k2, a, zi, inf, b);
                CHECK_MSG(got == want, "k %d k2 %d a %d zi %d inflight %d b %d: memo %d, rule %d", k,
                          k2, a, zi, inf, b, got, want);
                if (pass == 0 && b < 0) {
                  *n_none += want < 0;
                  *n_slower += want > 0;
                }
                /* the DP's stepped indices (run_dp): from k2 to k2 + 1 the
                 * memo base, the table entry and the cut row move by fixed
                 * steps; here against each computed directly */
                if (pass == 0 && k2 + 1 < K) {
                  size_t pb = hs__hspace_pick_base(h, k, k2, a, zi, inf);
                  CHECK(hs__hspace_pick_base(h, k, k2 + 1, a, zi, inf) ==
                        pb + hs__hspace_pick_step(h, pb));
                  CHECK(hs__hspace_pick_in(h, pb, k, k2, a, zi, inf, b) == want);
                  CHECK(hs__hspace_entry(h, k, k2 + 1, a, zi) ==
                        hs__hspace_entry(h, k, k2, a, zi) + hs__hspace_entry_step(h));
                  CHECK(hs__hspace_cut_row(h, a, k2 + 1) ==
                        hs__hspace_cut_row(h, a, k2) + (size_t)A * (size_t)A);
                }
                if (pass == 0 && cross &&
                    want != hs__hspace_pick(h, k, k2, a, zi, inf, false, 0.0))
                  (*n_cross_differs)++;
              }
}

static void test_memo_equals_rule(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  CHECK(two_site_cluster(&c, 4, 1.25, 500, &err) == HS_OK);
  hs_model_t m;
  hs_model_init(&m);
  CHECK_MSG(hs_model_load("gpt3-6.7b", 0, &m, &err) == HS_OK, "%s", err.msg);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 32;
  hs_hspace_t h;
  CHECK_MSG(hs__hspace_init(&h, &m, &c, &o, 12, &err) == HS_OK, "%s", err.msg);
  const int32_t S = 4;
  CHECK(hs__hspace_pick_memo(&h, S) == HS_OK);
  CHECK(h.pick != NULL); /* the memo is on: the comparison is not rule against rule */
  int32_t none = 0, slower = 0, cross = 0;
  for (int32_t mi = 0; mi < h.n_mbs; mi += HS_MAX(1, h.n_mbs / 3)) {
    CHECK(hs__hspace_table(&h, mi, INFINITY) == HS_OK);
    check_tables(&h, S, &none, &slower, &cross);
  }
  /* another practice, the same microbatch size: the memo must not keep
   * the last table's picks */
  hs_practice_t pr = *hs_estimator_practice(h.est);
  pr.zero_stage = 2;
  hs_estimator_set_practice(h.est, &pr);
  CHECK(hs__hspace_table(&h, 0, INFINITY) == HS_OK);
  check_tables(&h, S, &none, &slower, &cross);
  fprintf(stderr, "  entries: %d fit nothing, %d need a slower option, %d cross-site picks differ\n",
          none, slower, cross);
  CHECK(none > 0 && slower > 0); /* memory binds: the picks vary */
  hs__hspace_destroy(&h);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_memo_equals_rule);
  HS_TEST_END();
}
