/*
 * test_search_subset_sim.c - a plan on whole node groups simulates on the
 * whole cluster exactly as on its sub-cluster (hs_search_subcluster): the
 * other nodes idle, the routes between the plan's devices and the
 * collectives over them the same. hs_planner_run relies on it: a device
 * subset's plan is simulated once on its sub-cluster when its search is
 * stored in the search memo (stats.own_sim_s), and a plan no faster there
 * than the best so far is not simulated again on the whole cluster
 * (search/registry.c, try_subset).
 *
 * Independent truth: the simulator itself, run on both clusters. On seeded
 * random clusters (random_cluster.h: 2-4 GPU types, 1-3 sites, links of
 * 1-400 Gb/s, two to four node groups) every proper non-empty set of node
 * groups is cut out, megatron, whale, hapt and data-parallel plan on it
 * (its subsets off), and the plan, with its devices renamed back, is
 * simulated on the whole cluster: the iteration time, the out-of-memory
 * flag and every used device's peak memory must be equal bit for bit.
 */
#include "hs_search.h"
#include "hs_test.h"
#include "random_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plan's devices renamed through dev_map (sub-cluster -> cluster). */
static void remap(hs_plan_t *p, const int32_t *dev_map)
{
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++) {
      hs_plan_stage_t *st = &p->pipelines[i].stages[s];
      for (int32_t r = 0; r < st->n_replicas; r++)
        for (int32_t d = 0; d < st->replicas[r].n_devices; d++)
          st->replicas[r].devices[d] = dev_map[st->replicas[r].devices[d]];
    }
}

/* Plans with t on sub and compares its simulation there with the renamed
 * plan's on c; returns 1 when a plan was compared. */
static int compare_one(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                       const hs_cluster_t *sub, const int32_t *dev_map, const char *what)
{
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 16;
  o.max_microbatch_size = 4;
  o.device_subsets = false;
  hs_plan_t plan;
  hs_search_stats_t stats;
  hs_report_t a, b;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_report_init(&a);
  hs_report_init(&b);
  if (hs_planner_run(t, m, sub, &o, NULL, &plan, &stats, &a, &err) != HS_OK)
    return 0; /* no plan on this subset (too little memory): nothing to compare */
  remap(&plan, dev_map);
  hs_status_t s = hs_simulate(m, c, &plan, NULL, &b, &err);
  CHECK_MSG(s == HS_OK, "%s %s: %s", what, t->name, err.msg);
  if (s == HS_OK) {
    CHECK_MSG(memcmp(&a.iteration_time_s, &b.iteration_time_s, sizeof a.iteration_time_s) == 0,
              "%s %s: %.17g s on the sub-cluster, %.17g s on the whole cluster", what, t->name,
              a.iteration_time_s, b.iteration_time_s);
    CHECK_MSG(a.oom == b.oom, "%s %s: out of memory %d vs %d", what, t->name, a.oom, b.oom);
    for (int32_t d = 0; d < a.n_device_mem && d < (int32_t)sub->n_devices; d++) {
      int32_t w = dev_map[d];
      CHECK_MSG(w < b.n_device_mem &&
                    a.device_peak_memory_bytes[d] == b.device_peak_memory_bytes[w],
                "%s %s: device %d (%d of the cluster) peak %.17g vs %.17g bytes", what, t->name,
                d, w, a.device_peak_memory_bytes[d],
                w < b.n_device_mem ? b.device_peak_memory_bytes[w] : -1.0);
    }
  }
  hs_plan_destroy(&plan);
  hs_report_destroy(&a);
  hs_report_destroy(&b);
  return 1;
}

static void test_subset_plans_simulate_alike(void)
{
  const char *env = getenv("HS_SUBSET_SIM_CASES");
  int cases = env ? atoi(env) : 20;
  static const char *const strategies[] = {"megatron", "whale", "hapt", "data-parallel"};
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_model_load(hs_test_data("models/gpt2/config.json"), 256, &m, &err) == HS_OK, "%s",
            err.msg);
  char json[8192];
  int compared = 0;
  for (int i = 0; i < cases; i++) {
    random_seed(5000 + i);
    world_t w;
    random_world(&w);
    hs_cluster_t c, sub;
    hs_cluster_init(&c);
    hs_cluster_init(&sub);
    cluster_json(&w, w.n_groups, json, sizeof json);
    CHECK_MSG(hs_cluster_parse(json, "random.json", &c, &err) == HS_OK, "%s", err.msg);
    bool *alive = calloc(c.n_nodes + 1, sizeof *alive);
    int32_t *dev_map = calloc(c.n_devices + 1, sizeof *dev_map);
    int32_t n_groups = 0;
    for (size_t n = 0; n < c.n_nodes; n++)
      n_groups = HS_MAX(n_groups, c.nodes[n].group + 1);
    for (uint32_t mask = 1; alive && dev_map && mask + 1 < (1u << n_groups); mask++) {
      for (size_t n = 0; n < c.n_nodes; n++)
        alive[n] = (mask >> c.nodes[n].group) & 1;
      CHECK_MSG(hs_search_subcluster(&c, alive, &sub, dev_map, &err) == HS_OK, "%s", err.msg);
      for (size_t s = 0; s < HS_ARRAY_LEN(strategies); s++) {
        char what[96];
        snprintf(what, sizeof what, "case %d, node groups 0x%x of %d", i, mask, n_groups);
        compared += compare_one(hs_planner_find(strategies[s]), &m, &c, &sub, dev_map, what);
      }
    }
    free(alive);
    free(dev_map);
    hs_cluster_destroy(&sub);
    hs_cluster_destroy(&c);
  }
  fprintf(stderr, "  %d cases: %d plans compared\n", cases, compared);
  CHECK(compared > cases); /* most subsets plan */
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_subset_plans_simulate_alike);
  HS_TEST_END();
}
