/*
 * test_hapt_vpp.c - hapt's interleaved re-cut (search/hapt_vpp.c) against
 * the grid builder (hs_plan_grid with stage_layers, sim/layout.c), an
 * independent writer of the same plans: a pp-stage 1f1b grid re-cut into v
 * chunks per rank must be, field by field (hs__plan_same), the grid built
 * interleaved with v chunks and blocks per virtual stage the rank's blocks
 * / v ("own" layout) or L / (pp v) ("even" layout). The own layout's
 * rank blocks come from the source's cuts moved to the nearest multiple
 * of v blocks (ties down), worked out here by plain integer arithmetic
 * (own_blocks). Also: stage cuts inside a block sit at their fractional
 * position; hetero-1f1b sources (with warm-ups) re-cut like 1f1b ones;
 * and no variant where the schedule or the layout forbids one
 * (microbatches not a multiple of the ranks, a rank left with fewer than
 * v blocks, L not a multiple of v, one stage, the even layout equal to
 * the own one).
 */
#include "hapt_vpp.h"
#include "search_fixture.h"
#include "sim_memo.h"

#include <string.h>

#define L_BLOCKS 12

/* 2 x 4 GPUs (A100 site, V100 site): TP groups stay on one GPU type. */
static void cluster8(hs_cluster_t *c)
{
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(two_site_cluster(c, 4, 25.0, 10.0, &err) == HS_OK, "%s", err.msg);
}

/* The grid (tp, pp, dp) with `counts` blocks per virtual stage (pp x v of
 * them), interleaved-1f1b with v chunks when v > 1, mb samples per
 * microbatch and gb in all. */
static void grid(const hs_model_t *m, const hs_cluster_t *c, int32_t tp, int32_t pp, int32_t dp,
                 int32_t v, const int32_t *counts, int64_t gb, hs_plan_t *out)
{
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.pp = pp;
  g.dp = dp;
  g.microbatch_size = 1;
  g.global_batch = gb;
  g.schedule = v > 1 ? "interleaved-1f1b" : "1f1b";
  g.chunks = v;
  g.stage_layers = counts;
  g.n_stage_layers = pp * v;
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_init(out);
  CHECK_MSG(hs_plan_grid(m, c, &g, out, &err) == HS_OK, "grid tp%d pp%d dp%d v%d: %s", tp, pp, dp,
            v, err.msg);
}

/* rank blocks nb[0..pp-1] repeated v times, each / v: the per-virtual-stage
 * counts of the "own" layout */
static void chunk_counts(const int32_t *nb, int32_t pp, int32_t v, int32_t *out)
{
  for (int32_t k = 0; k < pp * v; k++)
    out[k] = nb[k % pp] / v;
}

/* The own layout's rank blocks of a source with rank blocks nb[0..pp-1]
 * (whole blocks, L_BLOCKS in all): every cut (the running sum) moved to
 * the nearest multiple of v, the lower one on a tie; false when a rank is
 * left with fewer than v blocks or L_BLOCKS is not a multiple of v. */
static bool own_blocks(const int32_t *nb, int32_t pp, int32_t v, int32_t *out)
{
  if (L_BLOCKS % v != 0)
    return false;
  int32_t sum = 0, prev = 0;
  for (int32_t s = 0; s < pp; s++) {
    sum += nb[s];
    int32_t cut = L_BLOCKS;
    if (s < pp - 1) {
      int32_t lower = sum / v * v;
      cut = 2 * (sum - lower) <= v ? lower : lower + v;
    }
    out[s] = cut - prev;
    if (out[s] < v)
      return false;
    prev = cut;
  }
  return true;
}

/* Re-cut of src (v, even, async): *ok and the plan. */
static bool recut(const hs_hapt_vpp_t *x, const hs_plan_t *src, int32_t v, bool even, bool async,
                  hs_plan_t *out)
{
  hs_error_t err;
  hs_error_init(&err);
  bool ok = false;
  CHECK_MSG(hs__hapt_vpp_interleave(x, src, v, even, async, out, &ok, &err) == HS_OK, "%s",
            err.msg);
  return ok;
}

static void expect_same(const hs_hapt_vpp_t *x, const hs_model_t *m, const hs_cluster_t *c,
                        const hs_plan_t *src, int32_t v, bool even, bool async,
                        const hs_plan_t *want, const char *what)
{
  hs_plan_t got;
  bool ok = recut(x, src, v, even, async, &got);
  CHECK_MSG(ok, "%s: no variant", what);
  if (ok) {
    hs_plan_t w;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(hs_plan_copy(want, &w, &err) == HS_OK);
    w.async_send = async;
    CHECK_MSG(hs__plan_same(&got, &w), "%s: the re-cut differs from the grid", what);
    err.warn_fp = NULL;
    CHECK_MSG(hs_plan_validate(&got, m, c, NULL, &err) == HS_OK, "%s: %s", what, err.msg);
    hs_plan_destroy(&w);
  }
  hs_plan_destroy(&got);
}

static void expect_none(const hs_hapt_vpp_t *x, const hs_plan_t *src, int32_t v, bool even,
                        const char *what)
{
  hs_plan_t got;
  CHECK_MSG(!recut(x, src, v, even, false, &got), "%s: a variant where none is legal", what);
  CHECK(got.n_pipelines == 0);
  hs_plan_destroy(&got);
}

/* Every (tp, pp, dp, rank blocks) source below against the grid for
 * every v the ranks' blocks allow, both layouts, both send modes. */
static void test_against_grid(const hs_hapt_vpp_t *x, const hs_model_t *m, const hs_cluster_t *c)
{
  static const struct {
    int32_t tp, pp, dp, nb[4];
  } cases[] = {
      {2, 2, 2, {6, 6}},    {1, 2, 4, {4, 8}},    {2, 3, 1, {4, 4, 4}},
      {1, 4, 2, {3, 3, 3, 3}}, {2, 4, 1, {2, 4, 4, 2}}, {4, 2, 1, {8, 4}},
      {1, 2, 4, {5, 7}},    {2, 3, 1, {3, 5, 4}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int32_t pp = cases[i].pp, dp = cases[i].dp;
    int64_t gb = (int64_t)dp * pp * 2; /* 2 pp microbatches per pipeline */
    hs_plan_t src;
    grid(m, c, cases[i].tp, pp, dp, 1, cases[i].nb, gb, &src);
    for (int32_t v = 2; v <= HS_HAPT_VPP_MAX_V; v++) {
      int32_t own[4];
      bool own_ok = own_blocks(cases[i].nb, pp, v, own);
      bool own_even = own_ok;
      for (int32_t s = 0; s < pp; s++)
        own_even = own_even && own[s] == L_BLOCKS / pp;
      bool even_ok = L_BLOCKS % (pp * v) == 0 && !own_even;
      char what[96];
      int32_t counts[64], even_nb[4] = {L_BLOCKS / pp, L_BLOCKS / pp, L_BLOCKS / pp, L_BLOCKS / pp};
      for (int async = 0; async < 2; async++) {
        snprintf(what, sizeof what, "case %zu v%d own async %d", i, v, async);
        if (own_ok) {
          hs_plan_t want;
          chunk_counts(own, pp, v, counts);
          grid(m, c, cases[i].tp, pp, dp, v, counts, gb, &want);
          expect_same(x, m, c, &src, v, false, async, &want, what);
          hs_plan_destroy(&want);
        } else {
          expect_none(x, &src, v, false, what);
        }
        snprintf(what, sizeof what, "case %zu v%d even async %d", i, v, async);
        if (even_ok) {
          hs_plan_t want;
          chunk_counts(even_nb, pp, v, counts);
          grid(m, c, cases[i].tp, pp, dp, v, counts, gb, &want);
          expect_same(x, m, c, &src, v, true, async, &want, what);
          hs_plan_destroy(&want);
        } else {
          expect_none(x, &src, v, true, what);
        }
      }
    }
    hs_plan_destroy(&src);
  }
}

/* Op-level cuts (hapt's cut candidates inside blocks) go to the nearest
 * allowed block boundary from their fractional position; a hetero-1f1b
 * source with warm-ups re-cuts as its 1f1b twin; the legality rules. */
static void test_rounding_and_rules(const hs_hapt_vpp_t *x, const hs_model_t *m,
                                    const hs_cluster_t *c)
{
  static const int32_t six[2] = {6, 6}, five[2] = {5, 7}, all[1] = {L_BLOCKS};
  hs_plan_t src, want;
  grid(m, c, 2, 2, 2, 1, six, 8, &src);
  int32_t counts[4] = {3, 3, 3, 3};
  grid(m, c, 2, 2, 2, 2, counts, 8, &want);
  int32_t b5 = block_first(m, 5, L_BLOCKS), b6 = block_first(m, 6, L_BLOCKS);
  int32_t b7 = block_first(m, 7, L_BLOCKS);
  CHECK(b6 - b5 >= 3 && b7 - b6 >= 3);
  /* one op before block 6 and one op into it: both nearest to block 6 */
  for (int32_t d = -1; d <= 1; d += 2) {
    for (int32_t i = 0; i < src.n_pipelines; i++) {
      src.pipelines[i].stages[0].op_last = b6 + d;
      src.pipelines[i].stages[1].op_first = b6 + d;
    }
    expect_same(x, m, c, &src, 2, false, false, &want, d < 0 ? "cut b6 - 1" : "cut b6 + 1");
  }
  /* one op past block 5's start, at 5 + 1/len blocks: block 6 is nearer
   * than 4, the multiples of 2 around it (the cut of the old rule, to the
   * nearest block boundary, was 5 and gave no variant) */
  for (int32_t i = 0; i < src.n_pipelines; i++) {
    src.pipelines[i].stages[0].op_last = b5 + 1;
    src.pipelines[i].stages[1].op_first = b5 + 1;
  }
  expect_same(x, m, c, &src, 2, false, false, &want, "cut b5 + 1, v2");
  /* exactly at block 5: a tie between 4 and 6, the lower one (4 + 8) */
  for (int32_t i = 0; i < src.n_pipelines; i++) {
    src.pipelines[i].stages[0].op_last = b5;
    src.pipelines[i].stages[1].op_first = b5;
  }
  {
    static const int32_t c48[4] = {2, 4, 2, 4};
    hs_plan_t w48;
    grid(m, c, 2, 2, 2, 2, c48, 8, &w48);
    expect_same(x, m, c, &src, 2, false, false, &w48, "cut b5, v2: tie down");
    hs_plan_destroy(&w48);
  }
  /* past block 11 (12 blocks): the second rank would keep none */
  int32_t b11 = block_first(m, 11, L_BLOCKS);
  for (int32_t i = 0; i < src.n_pipelines; i++) {
    src.pipelines[i].stages[0].op_last = b11 + 1;
    src.pipelines[i].stages[1].op_first = b11 + 1;
  }
  expect_none(x, &src, 2, false, "cut b11 + 1, v2: last rank empty");
  hs_plan_destroy(&src);

  /* hetero-1f1b with async sends and warm-ups: the 1f1b grid's re-cut */
  grid(m, c, 2, 2, 2, 1, six, 8, &src);
  hs_strlcpy(src.schedule, "hetero-1f1b", sizeof src.schedule);
  src.async_send = true;
  for (int32_t i = 0; i < src.n_pipelines; i++) {
    src.pipelines[i].stages[0].warmup = 2;
    src.pipelines[i].stages[1].warmup = 0;
  }
  expect_same(x, m, c, &src, 2, false, true, &want, "hetero-1f1b source");
  hs_plan_destroy(&src);
  hs_plan_destroy(&want);

  /* 3 microbatches on 2 ranks: the interleaved schedule refuses it */
  grid(m, c, 2, 2, 2, 1, six, 6, &src);
  expect_none(x, &src, 2, false, "3 microbatches, 2 ranks");
  expect_none(x, &src, 3, true, "3 microbatches, 2 ranks, even");
  hs_plan_destroy(&src);
  /* 5 and 7 blocks: no own layout where 12 is not a multiple of v */
  grid(m, c, 2, 2, 2, 1, five, 8, &src);
  for (int32_t v = 5; v <= HS_HAPT_VPP_MAX_V; v++)
    if (L_BLOCKS % v != 0)
      expect_none(x, &src, v, false, "5 + 7 blocks");
  hs_plan_destroy(&src);
  /* one stage: nothing to interleave */
  grid(m, c, 2, 1, 4, 1, all, 8, &src);
  expect_none(x, &src, 2, false, "one stage");
  expect_none(x, &src, 2, true, "one stage, even");
  hs_plan_destroy(&src);
  /* an interleaved source is not re-cut again */
  grid(m, c, 2, 2, 2, 2, counts, 8, &src);
  expect_none(x, &src, 2, false, "interleaved source");
  hs_plan_destroy(&src);
}

int main(void)
{
  hs_model_t m;
  small_gpt(&m, L_BLOCKS, 1024, 512);
  hs_cluster_t c;
  cluster8(&c);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  hs_hapt_vpp_t x;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs__hapt_vpp_init(&x, &m, &c, &o, &err) == HS_OK, "%s", err.msg);
  CHECK(x.L == L_BLOCKS);
  test_against_grid(&x, &m, &c);
  test_rounding_and_rules(&x, &m, &c);
  hs__hapt_vpp_destroy(&x);
  hs__hapt_vpp_destroy(&x); /* a zeroed one: a no-op */
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  HS_TEST_END();
}
