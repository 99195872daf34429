/*
 * test_search_subset_bound.c - the device-subset lower bound
 * (search/subset_bound.c) against the simulator: no plan any planner makes
 * runs faster than the bound of the devices it uses.
 *
 * The independent truth is the simulated iteration time (hs_simulate, via
 * the report hs_planner_run returns). Cases: seeded random clusters
 * (random_cluster.h: 2-4 GPU types, 1-3 sites), a dense GPT at sequence 256
 * and 2,048 (attention-heavy), an MoE, bf16 and fp8; every planner of the
 * table. Each plan's bound is taken over the nodes it uses (a subset plan
 * leaves the others idle), so the check is as tight as the registry's use
 * of it. Also: the bound grows when nodes are taken away, and is 0 for a
 * set of devices with no FLOP rate (no nodes).
 */
#include "hs_search.h"
#include "hs_test.h"
#include "random_cluster.h"
#include "search_fixture.h"
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>

/* The nodes plan p uses: alive[node] (c->n_nodes entries). */
static void used_nodes(const hs_plan_t *p, const hs_cluster_t *c, bool *alive)
{
  memset(alive, 0, c->n_nodes * sizeof *alive);
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++) {
      const hs_plan_stage_t *st = &p->pipelines[i].stages[s];
      for (int32_t r = 0; r < st->n_replicas; r++)
        for (int32_t d = 0; d < st->replicas[r].n_devices; d++)
          alive[c->devices[st->replicas[r].devices[d]].node] = true;
    }
}

/* The smallest simulated time over bound seen: how tight the bound is. */
static double g_min_ratio = 1e300;

static int check_case(const hs_model_t *m, const hs_cluster_t *c, hs_dtype_t precision, int i)
{
  int plans = 0;
  bool alive[64];
  CHECK(c->n_nodes <= HS_ARRAY_LEN(alive));
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 32;
  o.precision = precision;
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
    if (strcmp((*t)->name, "exhaustive") == 0)
      continue; /* the same plans as the others, on clusters this small, at minutes each */
    hs_plan_t plan;
    hs_search_stats_t stats;
    hs_report_t rep;
    hs_error_t err;
    if (run((*t)->name, m, c, &o, &plan, &stats, &rep, &err) != HS_OK)
      continue;
    used_nodes(&plan, c, alive);
    double lb = hs__subset_time_lb_s(m, c, alive, o.global_batch, precision);
    double all = hs__subset_time_lb_s(m, c, NULL, o.global_batch, precision);
    CHECK_MSG(lb > 0 && lb <= rep.iteration_time_s,
              "case %d %s %s %s: bound %.9g s above the simulated %.9g s", i, m->name, (*t)->name,
              hs_dtype_name(precision), lb, rep.iteration_time_s);
    CHECK_MSG(all <= lb, "case %d %s: whole-cluster bound %.9g above the used nodes' %.9g", i,
              (*t)->name, all, lb);
    if (lb > 0 && rep.iteration_time_s / lb < g_min_ratio)
      g_min_ratio = rep.iteration_time_s / lb;
    plans++;
    hs_plan_destroy(&plan);
    hs_report_destroy(&rep);
  }
  return plans;
}

static void test_bound_below_every_plan(void)
{
  const char *env = getenv("HS_BOUND_CASES");
  int cases = env ? atoi(env) : 6;
  hs_model_t models[3];
  small_gpt(&models[0], 4, 256, 256);
  small_gpt(&models[1], 4, 512, 2048);
  small_moe(&models[2], 4, 256, 256, 4);
  char json[8192];
  int plans = 0;
  for (int i = 0; i < cases; i++) {
    random_seed(4100 + i);
    world_t w;
    random_world(&w);
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_init(&c);
    cluster_json(&w, w.n_groups, json, sizeof json);
    CHECK_MSG(hs_cluster_parse(json, "bound.json", &c, &err) == HS_OK, "%s", err.msg);
    const hs_model_t *m = &models[i % 3];
    plans += check_case(m, &c, HS_DTYPE_BF16, i);
    bool fp8 = false;
    for (size_t d = 0; d < c.n_devices; d++)
      fp8 |= hs_cluster_gpu(&c, (int32_t)d)->peak_flops[HS_DTYPE_FP8] > 0.0;
    if (fp8)
      plans += check_case(m, &c, HS_DTYPE_FP8, i);
    hs_cluster_destroy(&c);
  }
  fprintf(stderr, "  %d cases, %d plans at or above their bound (closest: %.3fx the bound)\n", cases,
          plans, g_min_ratio);
  CHECK(plans > 0);
  for (int k = 0; k < 3; k++)
    hs_model_destroy(&models[k]);
}

/* Catalog models on catalog clusters at their real sizes, where GEMMs are
 * large and the bound closest to the plans (H100 and A100 with sustained
 * rates and fused attention, V100 unfused). */
static void test_bound_below_catalog_plans(void)
{
  static const char *const cases[][2] = {{"llama3-8b", "dgx-h100-1node"},
                                         {"gpt3-1.3b", "dgx-a100-1node"},
                                         {"gpt3-1.3b", "hap-v100-p100"}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_model_t m;
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_init(&c);
    CHECK_MSG(hs_model_load(cases[i][0], 0, &m, &err) == HS_OK, "%s", err.msg);
    CHECK_MSG(hs_cluster_load(cases[i][1], &c, &err) == HS_OK, "%s", err.msg);
    bool alive[64];
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = 64;
    static const char *const planners[] = {"megatron", "hapt"};
    for (size_t p = 0; p < HS_ARRAY_LEN(planners); p++) {
      hs_plan_t plan;
      hs_search_stats_t stats;
      hs_report_t rep;
      if (run(planners[p], &m, &c, &o, &plan, &stats, &rep, &err) != HS_OK)
        continue;
      used_nodes(&plan, &c, alive);
      double lb = hs__subset_time_lb_s(&m, &c, alive, o.global_batch, o.precision);
      CHECK_MSG(lb > 0 && lb <= rep.iteration_time_s, "%s on %s, %s: bound %.9g s above the simulated %.9g s",
                cases[i][0], cases[i][1], planners[p], lb, rep.iteration_time_s);
      fprintf(stderr, "  %s on %s, %s: %.4f s simulated, %.3fx the bound\n", cases[i][0], cases[i][1],
              planners[p], rep.iteration_time_s, rep.iteration_time_s / lb);
      hs_plan_destroy(&plan);
      hs_report_destroy(&rep);
    }
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
}

static void test_bound_grows_with_fewer_nodes(void)
{
  hs_model_t m;
  small_gpt(&m, 4, 256, 256);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(two_site_cluster(&c, 2, 10.0, 100.0, &err) == HS_OK);
  bool alive[64];
  for (size_t n = 0; n < c.n_nodes; n++)
    alive[n] = true;
  double all = hs__subset_time_lb_s(&m, &c, alive, 64, HS_DTYPE_BF16);
  CHECK(all > 0 && all == hs__subset_time_lb_s(&m, &c, NULL, 64, HS_DTYPE_BF16));
  alive[0] = false;
  double fewer = hs__subset_time_lb_s(&m, &c, alive, 64, HS_DTYPE_BF16);
  CHECK(fewer > all);
  /* twice the batch, twice the bound */
  CHECK_REL(hs__subset_time_lb_s(&m, &c, alive, 128, HS_DTYPE_BF16), 2.0 * fewer, 1e-12);
  for (size_t n = 0; n < c.n_nodes; n++)
    alive[n] = false;
  CHECK(hs__subset_time_lb_s(&m, &c, alive, 64, HS_DTYPE_BF16) == 0.0);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* The bound with two resources (FLOPs and the bytes of memory-bound
 * kernels) against brute force: on each site alone (one GPU kind) it is
 * the FLOPs' bound plus the bytes over the site's bandwidth, in closed
 * form; on both it is the best split of the two kinds of work between the
 * sites, found here by trying every split on a 400 x 400 grid. The FLOPs'
 * part comes from the bound of the same model with no memory-bound bytes. */
static void test_bound_two_resources_brute_force(void)
{
  hs_model_t m, m0;
  small_gpt(&m, 4, 256, 256);
  small_gpt(&m0, 4, 256, 256);
  double mb = 0.0; /* bytes per sample of norms and element-wise ops */
  for (size_t i = 0; i < m0.n_ops; i++)
    if (m0.ops[i].kind == HS_OP_NORM || m0.ops[i].kind == HS_OP_ELEMENTWISE) {
      mb += m0.ops[i].fwd_mem_bytes + m0.ops[i].bwd_mem_bytes;
      m0.ops[i].fwd_mem_bytes = m0.ops[i].bwd_mem_bytes = 0.0;
    }
  CHECK(mb > 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(two_site_cluster(&c, 2, 10.0, 100.0, &err) == HS_OK);
  const int64_t batch = 64;
  double tf[2], tb[2]; /* per site alone: FLOPs' time, bytes' time */
  bool alive[2];
  for (int s = 0; s < 2; s++) {
    alive[s] = true;
    alive[1 - s] = false;
    tf[s] = hs__subset_time_lb_s(&m0, &c, alive, batch, HS_DTYPE_BF16) / 0.999;
    const hs_gpu_t *g = &c.gpus.gpus[c.nodes[s].gpu];
    double bw = (double)c.nodes[s].n_devices * g->mem_bw_GBps * HS_GB *
                (g->mem_eff > 0 ? g->mem_eff : 1.0);
    tb[s] = mb * (double)batch / bw;
    CHECK_REL(hs__subset_time_lb_s(&m, &c, alive, batch, HS_DTYPE_BF16) / 0.999, tf[s] + tb[s],
              1e-9);
  }
  double best = INFINITY;
  for (int i = 0; i <= 400; i++)
    for (int j = 0; j <= 400; j++) {
      double x = i / 400.0, y = j / 400.0; /* site 0's shares of FLOPs and bytes */
      double t = fmax(x * tf[0] + y * tb[0], (1 - x) * tf[1] + (1 - y) * tb[1]);
      best = fmin(best, t);
    }
  double lb = hs__subset_time_lb_s(&m, &c, NULL, batch, HS_DTYPE_BF16) / 0.999;
  fprintf(stderr, "  both sites: bound %.6g s, best grid split %.6g s\n", lb, best);
  CHECK_MSG(lb <= best * (1 + 1e-9), "bound %.9g above a feasible split %.9g", lb, best);
  CHECK_MSG(lb >= best * (1 - 5e-3), "bound %.9g far below the best split %.9g", lb, best);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  hs_model_destroy(&m0);
}

int main(void)
{
  HS_RUN(test_bound_below_every_plan);
  HS_RUN(test_bound_below_catalog_plans);
  HS_RUN(test_bound_grows_with_fewer_nodes);
  HS_RUN(test_bound_two_resources_brute_force);
  HS_TEST_END();
}
