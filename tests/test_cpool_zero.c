/*
 * test_cpool_zero.c - the candidate pool's ZeRO siblings rule
 * (hs_cand_pool_t.one_zero, search/util.c): hapt's pool keeps at most one
 * plan per layout among ZeRO stages 1-3, the one with the lower estimate,
 * so its few simulated finalists are different layouts. Before, the DP's
 * practice variants of one layout (ZeRO-1/2/3, estimated within 0.1%) took
 * all three slots and simulated to the same time.
 *
 * Truths, from the rule itself on hand-made plans (a megatron plan with its
 * practice changed, and one with another microbatch size): siblings
 * collapse to the lowest estimate whatever the order offered; ZeRO-0 is
 * not a sibling of ZeRO-1 (its optimizer step is not sharded: on
 * bench_search's 16 GPUs they simulated 1.3% apart at equal estimates);
 * another layout stays; a sibling that replaces an entry of a full pool
 * evicts nothing else; and a pool without the flag keeps every variant
 * (every other strategy's pool).
 */
#include "search_fixture.h"
#include "search_internal.h"

static hs_plan_t variant(const hs_plan_t *base, int32_t zero, int32_t mb_div)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_t p;
  hs_plan_init(&p);
  CHECK(hs_plan_copy(base, &p, &err) == HS_OK);
  hs_practice_t pr = p.practice;
  pr.zero_stage = zero;
  hs_plan_set_practice(&p, &pr);
  if (mb_div > 1) {
    hs_plan_pipeline_t *q = &p.pipelines[0];
    q->n_microbatches *= mb_div;
    q->microbatch_size /= mb_div;
  }
  return p;
}

static void offer(hs_cand_pool_t *pool, const hs_plan_t *base, int32_t zero, int32_t mb_div,
                  double est)
{
  hs_plan_t p = variant(base, zero, mb_div);
  hs__cpool_offer(pool, &p, est);
  hs_plan_destroy(&p);
}

static int32_t zero_of(const hs_cand_pool_t *pool, int32_t i)
{
  return pool->plans[i].practice.zero_stage;
}

static void test_zero_siblings(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  small_gpt(&m, 4, 512, 256);
  CHECK(two_site_cluster(&c, 4, 12.5, 10, &err) == HS_OK);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 32;
  o.device_subsets = false;
  hs_plan_t base;
  hs_search_stats_t stats;
  hs_report_t rep;
  hs_plan_init(&base);
  hs_status_t st = run("megatron", &m, &c, &o, &base, &stats, &rep, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_report_destroy(&rep);
  CHECK(base.n_pipelines == 1 && base.pipelines[0].microbatch_size % 2 == 0);

  /* siblings collapse to the lowest estimate, in either order */
  hs_cand_pool_t pool;
  CHECK(hs__cpool_init(&pool, 3) == HS_OK);
  pool.one_zero = true;
  offer(&pool, &base, 1, 1, 1.00);
  offer(&pool, &base, 2, 1, 1.01);
  offer(&pool, &base, 3, 1, 1.02);
  CHECK_MSG(pool.n == 1 && zero_of(&pool, 0) == 1, "n %d", pool.n);
  offer(&pool, &base, 2, 1, 0.99);
  CHECK_MSG(pool.n == 1 && zero_of(&pool, 0) == 2 && pool.est_s[0] == 0.99, "n %d", pool.n);
  /* a tie keeps the one already in */
  offer(&pool, &base, 3, 1, 0.99);
  CHECK(pool.n == 1 && zero_of(&pool, 0) == 2);

  /* ZeRO-0 and another microbatch size are other layouts */
  offer(&pool, &base, 0, 1, 1.10);
  offer(&pool, &base, 1, 2, 1.20);
  CHECK_MSG(pool.n == 3, "n %d", pool.n);
  CHECK(zero_of(&pool, 0) == 2 && zero_of(&pool, 1) == 0 && pool.est_s[2] == 1.20);

  /* full: a sibling with a lower estimate replaces its entry only */
  offer(&pool, &base, 3, 2, 1.05);
  CHECK_MSG(pool.n == 3, "n %d", pool.n);
  CHECK(pool.est_s[0] == 0.99 && pool.est_s[1] == 1.05 && pool.est_s[2] == 1.10);
  CHECK(pool.plans[1].pipelines[0].microbatch_size * 2 == base.pipelines[0].microbatch_size);
  CHECK(zero_of(&pool, 1) == 3 && zero_of(&pool, 2) == 0);
  /* a sibling slower than its entry changes nothing */
  offer(&pool, &base, 1, 1, 1.50);
  CHECK(pool.n == 3 && pool.est_s[0] == 0.99);
  hs__cpool_destroy(&pool);

  /* without the flag every variant is a candidate of its own */
  CHECK(hs__cpool_init(&pool, 3) == HS_OK);
  offer(&pool, &base, 1, 1, 1.00);
  offer(&pool, &base, 2, 1, 1.01);
  offer(&pool, &base, 3, 1, 1.02);
  CHECK_MSG(pool.n == 3, "n %d", pool.n);
  hs__cpool_destroy(&pool);

  hs_plan_destroy(&base);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_zero_siblings);
  HS_TEST_END();
}
