/*
 * test_search_compare_random.c - every strategy in one process, as `hetsim
 * compare` runs them with its default list, on random valid clusters
 * (random_cluster.h: 2-4 GPU types, 1-3 sites, 1-400 Gb/s links) and three
 * models, at global batches up to 2,048 samples (issue #32), two of them
 * (384, 96) not powers of two, so replica shares round unevenly (issue #34
 * item 5; these random cases did not reach hapt's fractional-share bug,
 * test_search_whole_samples_fit holds the instance that did). A row
 * `compare` keeps out of the ranking because its plan was simulated out of
 * memory fails here: that is the planner's bug.
 *
 * Why this test exists: autohet sized its MILP row buffers for rows of at
 * most ng + G K + 8 entries, but its McCormick rows have 2K + 1 (K bits of
 * the microbatch count), so a single-stage configuration with 512 or more
 * microbatches wrote past the buffer. In Release that corrupted the heap
 * and a later free() aborted `compare` (only when hapt had run first in the
 * same process, which is why every strategy must share one process here);
 * under ASan the first bad write is reported. The property test of device
 * subsets ran batch 16 (at most 16 microbatches) and never reached it.
 *
 * What is checked (independent of the numbers the planners print): every
 * row is a plan or a reason; a plan's iteration time is finite and
 * positive, its tokens/s is the global batch's tokens over that time, its
 * MFU is in (0, 1] and its peak memory within the GPU's capacity; when any
 * strategy finds a plan, at least one baseline does too.
 * The C test runs under ASan + UBSan in CI (HS_SANITIZE=1 scripts/test.sh),
 * which is what catches a write past a buffer.
 */
#include "hs_export.h"
#include "hs_search.h"
#include "hs_test.h"
#include "random_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_every_strategy_one_process(void)
{
  const char *env = getenv("HS_COMPARE_CASES");
  int cases = env ? atoi(env) : 9;
  static const char *const models[] = {"validate/tiny-gpt.json", "models/gpt2/config.json",
                                       "models/pythia-160m/config.json"};
  static const int64_t batches[] = {2048, 384, 96}; /* 384, 96: shares that do not divide evenly */
  hs_model_t mod[3];
  hs_error_t err;
  hs_error_init(&err);
  for (int k = 0; k < 3; k++)
    CHECK_MSG(hs_model_load(hs_test_data(models[k]), k ? 256 : 0, &mod[k], &err) == HS_OK, "%s",
              err.msg);
  const char *names[16];
  size_t n = 0;
  for (const hs_planner_type_t *const *t = hs_planners; *t && n < HS_ARRAY_LEN(names); t++)
    names[n++] = (*t)->name;
  hs_compare_row_t rows[16];
  char json[8192];
  int plans = 0;
  for (int i = 0; i < cases; i++) {
    random_seed(1000 + i);
    world_t w;
    random_world(&w);
    cluster_json(&w, w.n_groups, json, sizeof json);
    hs_cluster_t c;
    hs_cluster_init(&c);
    hs_error_init(&err);
    CHECK_MSG(hs_cluster_parse(json, "random.json", &c, &err) == HS_OK, "%s\n  %s", err.msg, json);
    const hs_model_t *m = &mod[i % 3];
    hs_plan_opts_t po;
    hs_plan_opts_init(&po);
    po.global_batch = batches[(i / 3) % 3];
    double baseline_s = 0.0;
    CHECK(hs_compare_run(m, &c, names, n, &po, false, NULL, rows, &baseline_s) == HS_OK);
    bool any = false, any_baseline = false;
    for (size_t s = 0; s < n; s++) {
      const hs_compare_row_t *r = &rows[s];
      if (!r->ok) {
        CHECK_MSG(r->why[0] != '\0', "case %d %s: no plan and no reason", i, r->strategy);
        /* compare keeps an out-of-memory plan out of the ranking; that the
         * planner returned one is its bug */
        CHECK_MSG(!strstr(r->why, "was simulated out of memory"), "case %d %s: %s\n  %s", i, r->strategy,
                  r->why, json);
        continue;
      }
      plans++;
      any = true;
      any_baseline |= hs_compare_is_baseline(r->strategy);
      double tokens = (double)po.global_batch * (double)m->seq_len;
      CHECK_MSG(isfinite(r->iter_s) && r->iter_s > 0, "case %d %s: iteration %g s", i, r->strategy,
                r->iter_s);
      CHECK_REL(r->tokens_s, tokens / r->iter_s, 1e-9);
      CHECK_MSG(r->mfu > 0 && r->mfu <= 1.0, "case %d %s: MFU %g", i, r->strategy, r->mfu);
      CHECK_MSG(r->mem_ratio > 0 && r->mem_ratio <= 1.0, "case %d %s: peak memory %g of capacity",
                i, r->strategy, r->mem_ratio);
    }
    CHECK_MSG(!any || any_baseline, "case %d (%s, batch %lld): a plan, but no baseline found one\n  %s",
              i, m->name, (long long)po.global_batch, json);
    hs_cluster_destroy(&c);
  }
  fprintf(stderr, "  %d cases x %zu strategies: %d plans\n", cases, n, plans);
  CHECK(plans > cases); /* most strategies plan on most cases */
  for (int k = 0; k < 3; k++)
    hs_model_destroy(&mod[k]);
}

int main(void)
{
  HS_RUN(test_every_strategy_one_process);
  HS_TEST_END();
}
