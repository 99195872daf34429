/*
 * test_search_subsets.c - more devices never make a plan slower (issue 14).
 * A user can always leave devices idle, so the driver (hs_planner_run)
 * plans every strategy on every set of whole node groups and keeps the
 * fastest. Property, on random clusters (2-4 GPU types, 1-3 sites, link
 * speeds 1-400 Gb/s, one to three node groups) and three models: adding a
 * node group never makes any strategy's best plan slower, exactly (the old
 * cluster is one of the new cluster's subsets and the simulator is
 * deterministic); every plan validates and fits in memory with the
 * default memory headroom (0.1 of every GPU's catalog capacity left free;
 * every fifth case 0.25). The random
 * generator is seeded, so a failure names a case that reproduces.
 */
#include "hs_search.h"
#include "hs_test.h"
#include "random_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Best plan's iteration time, or -1 when the strategy finds none. */
static double best(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                   int64_t batch, double headroom, const char *what)
{
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = batch;
  o.memory_headroom = headroom;
  o.max_microbatch_size = 4;
  hs_plan_t plan;
  hs_report_t rep;
  hs_search_stats_t st;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t s = hs_planner_run(t, m, c, &o, NULL, &plan, &st, &rep, &err);
  if (s == HS_EINFEASIBLE)
    return -1.0;
  CHECK_MSG(s == HS_OK, "%s %s: %s", what, t->name, err.msg);
  if (s != HS_OK)
    return -1.0;
  CHECK_MSG(!rep.oom, "%s %s: plan out of memory", what, t->name);
  for (int32_t d = 0; d < rep.n_device_mem; d++)
    CHECK_MSG(rep.device_peak_memory_bytes[d] <= (1.0 - headroom) * hs_cluster_gpu(c, d)->mem_bytes,
              "%s %s: device %d peak %.6g bytes, over %.6g x (1 - %g)", what, t->name, d,
              rep.device_peak_memory_bytes[d], hs_cluster_gpu(c, d)->mem_bytes, headroom);
  CHECK_MSG(hs_plan_validate(&plan, m, c, t->name, &err) == HS_OK, "%s: %s", what, err.msg);
  CHECK_EQ_INT(hs_plan_global_batch(&plan), batch);
  double it = rep.iteration_time_s;
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
  return it;
}

static void test_more_devices_never_slower(void)
{
  /* cases first .. first + cases - 1: the suite runs 0-59, and CI adds
   * 60-159 (.ci/run: HS_SUBSET_FIRST=60 HS_SUBSET_CASES=100), new clusters
   * rather than the suite's 60 again */
  const char *env = getenv("HS_SUBSET_CASES"), *env_first = getenv("HS_SUBSET_FIRST");
  int cases = env ? atoi(env) : 60, first = env_first ? atoi(env_first) : 0;
  static const char *const models[] = {"validate/tiny-gpt.json", "models/gpt2/config.json",
                                       "models/pythia-160m/config.json"};
  static const char *const strategies[] = {"megatron", "deepspeed", "whale", "hapt",
                                           "data-parallel", "autohet"};
  hs_model_t mod[3];
  hs_error_t err;
  hs_error_init(&err);
  for (int k = 0; k < 3; k++)
    CHECK_MSG(hs_model_load(hs_test_data(models[k]), k ? 256 : 0, &mod[k], &err) == HS_OK, "%s",
              err.msg);
  int compared = 0, none = 0;
  char json[8192];
  for (int i = first; i < first + cases; i++) {
    random_seed(i);
    world_t w;
    random_world(&w);
    hs_cluster_t small, big;
    hs_cluster_init(&small);
    hs_cluster_init(&big);
    cluster_json(&w, w.n_groups - 1, json, sizeof json);
    hs_error_init(&err);
    CHECK_MSG(hs_cluster_parse(json, "small.json", &small, &err) == HS_OK, "%s\n  %s", err.msg, json);
    cluster_json(&w, w.n_groups, json, sizeof json);
    CHECK_MSG(hs_cluster_parse(json, "big.json", &big, &err) == HS_OK, "%s", err.msg);
    const hs_model_t *m = &mod[i % 3];
    int64_t batch = 16;
    for (size_t s = 0; s < HS_ARRAY_LEN(strategies); s++) {
      const hs_planner_type_t *t = hs_planner_find(strategies[s]);
      char what[64];
      snprintf(what, sizeof what, "case %d (%s)", i, m->name);
      double h = i % 5 == 4 ? 0.25 : HS_MEMORY_HEADROOM_DEFAULT;
      double a = best(t, m, &small, batch, h, what), b = best(t, m, &big, batch, h, what);
      if (a < 0) {
        none++;
        continue;
      }
      compared++;
      CHECK_MSG(b >= 0 && b <= a, "%s, %s: %.9g s with the added group, %.9g s without\n  %s",
                what, t->name, b, a, json);
    }
    hs_cluster_destroy(&small);
    hs_cluster_destroy(&big);
  }
  fprintf(stderr, "  %d cases: %d strategy comparisons, %d without a plan on the smaller cluster\n",
          cases, compared, none);
  CHECK(compared > cases); /* most cases plan */
  for (int k = 0; k < 3; k++)
    hs_model_destroy(&mod[k]);
}

int main(void)
{
  HS_RUN(test_more_devices_never_slower);
  HS_TEST_END();
}
