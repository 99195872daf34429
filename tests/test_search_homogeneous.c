/*
 * test_search_homogeneous.c - on homogeneous clusters the seed planners are
 * never behind the baselines (issue 34, its first test). On one GPU type,
 * whatever a baseline can do is inside a seed planner's space once that
 * space has every practice dimension the baseline has (context and expert
 * parallelism, interleaving, sequence parallelism, ZeRO stages,
 * recomputation), so each seed strategy (hapt, autohet, hap) must come
 * within 1% of the best baseline (megatron, deepspeed, data-parallel,
 * whale) in simulated iteration time. The truth is the baselines' own
 * simulated plans, not a figure printed once.
 *
 * Cases: 3 models x 3 cluster sizes of H100-SXM5-80GB DGX nodes (8, 16
 * and 32 GPUs), global batches small enough that plain data parallelism
 * over every GPU is not possible (so TP, CP, EP or pipelining must be
 * chosen well):
 *  - Llama-3-8B at sequence 8192 (where megatron searches context
 *    parallelism), half a sample per GPU;
 *  - an 8-block MoE (hidden 2048, 16 experts, top-2, sequence 2048), where
 *    the baselines search expert parallelism, half a sample per GPU;
 *  - GPT-3 2.7B (plain dense GPT, sequence 2048), one sample per GPU.
 * Every emitted plan validates and fits memory (default headroom). Each
 * row prints its times, so a failure names the strategy, the case and the
 * margin. Measured 6-8 CPU s on the 2-core build machine (2026-12-02).
 * On main 23b1eff (before issue 34's item 1 for autohet) autohet trailed
 * megatron by 9.1-35.9% on the Llama rows and 1.3-44.2% on the MoE rows.
 * On main 3b1f487 (before hapt's interleaved variants, search/hapt_vpp.h)
 * hapt trailed megatron's interleaved plan by 5.4% on the 2-node MoE row
 * (0.0185 s against 0.0175 s) and was held to 6% there.
 */
#include "search_fixture.h"

#include <math.h>

#define TOLERANCE 0.01 /* seed time / best baseline time - 1, at most */

static const char *const baselines[] = {"megatron", "deepspeed", "data-parallel", "whale"};
static const char *const seeds[] = {"hapt", "autohet", "hap"};

/* n DGX H100 nodes (8 GPUs each) as dgx-h100-4nodes.json describes them. */
static void dgx_h100(hs_cluster_t *c, int nodes)
{
  char json[1024];
  snprintf(json, sizeof json,
           "{\"name\": \"dgx-h100-%dnodes\", \"sites\": [{\"name\": \"dc\", \"nodes\": [{\"count\": %d,"
           " \"gpu\": \"H100-SXM5-80GB\", \"gpus_per_node\": 8,"
           " \"intra_node\": {\"interconnect\": \"NVLink4-NVSwitch\"},"
           " \"nic\": {\"interconnect\": \"NDR-IB-8x400\"}}], \"fabric\": {\"latency_us\": 2.0}}]}",
           nodes, nodes);
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(c);
  CHECK_MSG(hs_cluster_parse(json, "dgx-h100.json", c, &err) == HS_OK, "%s", err.msg);
}

/* Simulated time of the strategy's plan (-1: none or infeasible), checked
 * to validate and fit; the plan's summary into what. */
static double plan_s(const char *name, const hs_model_t *m, const hs_cluster_t *c, int64_t gb,
                     char *what, size_t what_len)
{
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = gb;
  hs_plan_t plan;
  hs_search_stats_t stats;
  hs_report_t rep;
  hs_error_t err;
  snprintf(what, what_len, "-");
  hs_status_t st = run(name, m, c, &o, &plan, &stats, &rep, &err);
  if (st == HS_EINFEASIBLE)
    return -1.0;
  CHECK_MSG(st == HS_OK, "%s on %s / %s: %s", name, c->name, m->name, err.msg);
  if (st != HS_OK)
    return -1.0;
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  CHECK_MSG(hs_plan_validate(&plan, m, c, NULL, &e2) == HS_OK, "%s: %s", name, e2.msg);
  double t = fit_time_s(&rep, c, 0.1);
  CHECK_MSG(t > 0.0, "%s on %s / %s: plan does not fit memory", name, c->name, m->name);
  hs_plan_summary(&plan, what, what_len);
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
  return t;
}

static void test_seeds_match_baselines(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t models[3];
  hs_model_init(&models[0]);
  CHECK_MSG(hs_model_load("llama3-8b", 8192, &models[0], &err) == HS_OK, "%s", err.msg);
  small_moe(&models[1], 8, 2048, 2048, 16);
  hs_model_init(&models[2]);
  CHECK_MSG(hs_model_load("gpt3-2.7b", 0, &models[2], &err) == HS_OK, "%s", err.msg);
  /* samples per GPU, x 2 */
  static const int64_t batches[3] = {1, 1, 2};
  static const int nodes[3] = {1, 2, 4};
  for (int ni = 0; ni < 3; ni++) {
    hs_cluster_t c;
    dgx_h100(&c, nodes[ni]);
    for (int mi = 0; mi < 3; mi++) {
      char what[512];
      double best = INFINITY;
      const char *best_name = "";
      for (size_t b = 0; b < sizeof baselines / sizeof *baselines; b++) {
        double t0 = wall_s();
        double t = plan_s(baselines[b], &models[mi], &c, batches[mi] * (int64_t)c.n_devices / 2,
                          what, sizeof what);
        printf("%-16s %-10s %-14s %9.4f s  (%.1f s wall)  %s\n", c.name, models[mi].name,
               baselines[b], t, wall_s() - t0, what);
        if (t > 0.0 && t < best) {
          best = t;
          best_name = baselines[b];
        }
      }
      CHECK_MSG(isfinite(best), "%s / %s: no baseline has a plan", c.name, models[mi].name);
      for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++) {
        double t0 = wall_s();
        double t = plan_s(seeds[s], &models[mi], &c, batches[mi] * (int64_t)c.n_devices / 2, what,
                          sizeof what);
        printf("%-16s %-10s %-14s %9.4f s  (%.1f s wall)  %s  = %.4fx of %s\n", c.name,
               models[mi].name, seeds[s], t, wall_s() - t0, what, t / best, best_name);
        CHECK_MSG(t > 0.0 && t <= best * (1.0 + TOLERANCE),
                  "%s on %s / %s: %.4f s, %.2f%% behind %s's %.4f s (tolerance %.0f%%)", seeds[s],
                  c.name, models[mi].name, t, 100.0 * (t / best - 1.0), best_name, best,
                  100.0 * TOLERANCE);
      }
      fflush(stdout);
    }
    hs_cluster_destroy(&c);
  }
  for (int mi = 0; mi < 3; mi++)
    hs_model_destroy(&models[mi]);
}

int main(void)
{
  test_seeds_match_baselines();
  HS_TEST_END();
}
