/*
 * test_search_hapt_fine.c - hapt's fine pass and its second climb (issue 34
 * item 3: every op boundary a cut candidate, with the same or better
 * plans).
 *
 * When a model has more cut candidates than hapt's DP takes (36), the fine
 * pass runs the DP again over every op-level candidate; its finalist is
 * simulated after the coarse finalists' climb. When it simulates faster
 * than every coarse finalist, a second climb (and order adaptation) starts
 * from it, and the faster of the two climbs' plans is returned. The swap
 * of the two climbs' states is where a bug would hide: a plan returned
 * with the other climb's time, or the first climb's plan lost.
 *
 * The instance: Llama-3-8B (32 blocks, 66 cut candidates) on the catalog's
 * hapt-a100-v100-10gbps, global batch 64: on one of its device subsets the
 * fine finalist beats the coarse ones (2026-12-04, fifth session; hapt
 * returns 4.1429 s). Earlier instances stopped climbing as the pool
 * changed: Llama-2-7B on mixed-a100-v100-t4 at batch 64 once hapt's pool
 * kept one plan per ZeRO sibling, Llama-2-7B on mixed-h100-a100-l4 at
 * batch 128 once the estimator ran the schedule and the pool's entries
 * were polished by it (docs/planners.md, hapt): each time the coarse
 * finalists got better, not the fine one worse.
 *
 * What is checked, against the simulator rather than numbers hapt printed:
 * - the path runs: the note says the fine pass climbed (a change that
 *   stops the fine pass or its climb fails here instead of passing
 *   vacuously), over every microbatch size the first pass had;
 * - the returned plan, simulated again from scratch, takes exactly the
 *   time hapt reports for it (a plan paired with the other climb's or the
 *   tuned plan's time fails);
 * - the plan validates (whole samples a rank) and fits in memory;
 * - it is at least as fast as every baseline's (megatron, deepspeed,
 *   whale) on the same cluster, which the issue asks of the seed planners.
 * That the second climb never makes a plan slower is by construction (the
 * faster plan is kept); the README's what-if table (readme_outputs) holds
 * the case where climbing only from the fine layout was slower (+8 H100,
 * 6.9814 s, against 7.1024 s).
 */
#include "search_fixture.h"

#include <stdio.h>
#include <string.h>

static void test_fine_climb(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_model_init(&m);
  CHECK_MSG(hs_model_load("llama3-8b", 0, &m, &err) == HS_OK, "%s", err.msg);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_load("hapt-a100-v100-10gbps", &c, &err) == HS_OK, "%s", err.msg);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 64;

  hs_plan_t plan;
  hs_search_stats_t stats;
  hs_report_t rep;
  hs_status_t st = run("hapt", &m, &c, &o, &plan, &stats, &rep, &err);
  CHECK_MSG(st == HS_OK, "hapt: %s", err.msg);
  if (st != HS_OK)
    goto out;
  fprintf(stderr, "  hapt %.4f s  %s\n  note: %s\n", rep.iteration_time_s, rep.plan_summary,
          stats.note);
  CHECK_MSG(strstr(stats.note, "fine pass:") != NULL, "no fine pass: %s", stats.note);
  CHECK_MSG(strstr(stats.note, "its climb:") != NULL, "the fine pass did not climb: %s", stats.note);
  /* every microbatch size of the first pass gets the fine DP (since
   * 2026-12-05: a size 67% behind with the coarse cuts came within 7%
   * with the fine ones, docs/planners.md) */
  int sizes = -1, fine_sizes = -2;
  const char *cs = strstr(stats.note, "subclusters, "), *fp = strstr(stats.note, "fine pass: ");
  if (cs)
    sscanf(cs, "subclusters, %d microbatch sizes", &sizes);
  if (fp)
    sscanf(fp, "fine pass: %*d cut candidates, %d microbatch sizes", &fine_sizes);
  CHECK_MSG(sizes > 1 && fine_sizes == sizes, "fine pass over %d of %d microbatch sizes: %s",
            fine_sizes, sizes, stats.note);

  /* the plan again, simulated from scratch */
  hs_error_t e2;
  hs_error_init(&e2);
  CHECK_MSG(hs_plan_validate(&plan, &m, &c, NULL, &e2) == HS_OK, "%s", e2.msg);
  hs_report_t again;
  hs_report_init(&again);
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &again, &e2) == HS_OK, "%s", e2.msg);
  CHECK_MSG(!again.oom, "hapt's plan is out of memory: %s", again.plan_summary);
  CHECK_MSG(again.iteration_time_s == stats.predicted_s,
            "hapt reports %.6f s for a plan that simulates at %.6f s", stats.predicted_s,
            again.iteration_time_s);
  CHECK_MSG(again.iteration_time_s == rep.iteration_time_s, "%.6f != %.6f",
            again.iteration_time_s, rep.iteration_time_s);
  hs_report_destroy(&again);

  static const char *const baselines[] = {"megatron", "deepspeed", "whale"};
  for (size_t i = 0; i < HS_ARRAY_LEN(baselines); i++) {
    hs_plan_t bp;
    hs_search_stats_t bs;
    hs_report_t br;
    hs_status_t bst = run(baselines[i], &m, &c, &o, &bp, &bs, &br, &err);
    CHECK_MSG(bst == HS_OK || bst == HS_EINFEASIBLE, "%s: %s", baselines[i], err.msg);
    if (bst != HS_OK)
      continue;
    CHECK_MSG(rep.iteration_time_s <= br.iteration_time_s, "hapt %.4f s behind %s %.4f s",
              rep.iteration_time_s, baselines[i], br.iteration_time_s);
    hs_plan_destroy(&bp);
    hs_report_destroy(&br);
  }
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
out:
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  test_fine_climb();
  HS_TEST_END();
}
