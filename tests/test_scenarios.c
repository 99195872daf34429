/*
 * test_scenarios.c - the scenario table (search/scenarios.c) against its
 * sources: every scenario's model and cluster load from the catalogs, its
 * precision parses, its paper strategy is registered, it says what is ours;
 * the HAP scenarios use HAP's setting as its repository gives it
 * (shared/reference/planners.md 1.5: fp32, 2x8 V100 + 6x8 P100, global batch
 * 32 x world size, DeepSpeed among the baselines), and a HAP scenario run at
 * its precision plans in fp32, where a V100 is under 2x a P100 (datasheet
 * fp32 peaks 15.7 vs 9.3 TFLOP/s) instead of the 6.7x of fp16.
 */
#include "hs_scenarios.h"
#include "hs_test.h"

#include <string.h>

static void test_table(void)
{
  int n = 0;
  for (const hs_scenario_t *s = hs_scenarios; s->name; s++, n++) {
    hs_error_t err;
    hs_error_init(&err);
    CHECK_MSG(hs_scenario_find(s->name) == s, "%s", s->name);
    hs_model_t m;
    CHECK_MSG(hs_model_load(s->model, 0, &m, &err) == HS_OK, "%s: %s", s->name, err.msg);
    hs_model_destroy(&m);
    hs_cluster_t c;
    hs_cluster_init(&c);
    CHECK_MSG(hs_cluster_load(s->cluster, &c, &err) == HS_OK, "%s: %s", s->name, err.msg);
    CHECK(hs_scenario_global_batch(s, (int64_t)c.n_devices) > 0);
    hs_cluster_destroy(&c);
    if (s->precision) {
      hs_dtype_t dt;
      CHECK_MSG(hs_dtype_parse(s->precision, &dt) == HS_OK, "%s: precision %s", s->name, s->precision);
    }
    CHECK_MSG(hs_planner_find(s->seed_strategy) != NULL, "%s: %s", s->name, s->seed_strategy);
    CHECK_MSG(strstr(s->strategies, s->seed_strategy) != NULL, "%s", s->name);
    CHECK_MSG(s->source && s->source[0] && s->ours && s->ours[0], "%s: source and ours", s->name);
  }
  CHECK(n >= 4);
  CHECK(hs_scenario_find("nope") == NULL);
  CHECK(hs_scenario_find(NULL) == NULL);
}

static void test_hap_setting(void)
{
  static const char *const names[] = {"hap", "hap-vit"};
  for (size_t k = 0; k < HS_ARRAY_LEN(names); k++) {
    const hs_scenario_t *s = hs_scenario_find(names[k]);
    CHECK_MSG(s != NULL, "%s", names[k]);
    if (!s)
      continue;
    CHECK(s->precision && strcmp(s->precision, "fp32") == 0);
    CHECK(strcmp(s->cluster, "hap-v100-p100") == 0);
    CHECK_EQ_INT(s->global_batch, 0);
    CHECK_EQ_INT(s->global_batch_per_device, 32);
    CHECK(strstr(s->strategies, "deepspeed") != NULL);
    CHECK(strstr(s->strategies, "data-parallel") != NULL);
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("hap-v100-p100", &c, &err) == HS_OK);
  CHECK_EQ_INT(c.n_devices, 64); /* 2 x 8 V100 + 6 x 8 P100 */
  /* plan the HAP scenario at its precision: the plan is fp32 and the V100s
   * get at most 2x a P100's share (fp32 peaks 15.7 / 9.3 = 1.69) */
  const hs_scenario_t *s = hs_scenario_find("hap");
  hs_model_t m;
  CHECK(hs_model_load(s->model, 0, &m, &err) == HS_OK);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = hs_scenario_global_batch(s, (int64_t)c.n_devices);
  CHECK(hs_dtype_parse(s->precision, &o.precision) == HS_OK);
  o.device_subsets = false;
  hs_plan_t plan;
  hs_search_stats_t st;
  hs_report_t rep;
  CHECK_MSG(hs_planner_run(hs_planner_find("hap"), &m, &c, &o, NULL, &plan, &st, &rep, &err) == HS_OK,
            "%s", err.msg);
  CHECK_EQ_INT((int)plan.precision, (int)HS_DTYPE_FP32);
  double vmax = 0.0, pmin = 1.0;
  for (int32_t i = 0; i < plan.n_pipelines; i++)
    for (int32_t j = 0; j < plan.pipelines[i].n_stages; j++) {
      const hs_plan_stage_t *stg = &plan.pipelines[i].stages[j];
      for (int32_t r = 0; r < stg->n_replicas; r++) {
        const hs_gpu_t *g = hs_cluster_gpu(&c, stg->replicas[r].devices[0]);
        double sh = stg->replicas[r].share / stg->replicas[r].n_devices;
        if (strstr(g->name, "V100"))
          vmax = vmax > sh ? vmax : sh;
        else
          pmin = pmin < sh ? pmin : sh;
      }
    }
  CHECK_MSG(vmax > 0 && vmax <= 2.0 * pmin, "V100 share %.4f vs P100 %.4f", vmax, pmin);
  fprintf(stderr, "  hap fp32: %s, %.4f s; V100 share %.4f, P100 %.4f\n", rep.plan_summary,
          rep.iteration_time_s, vmax, pmin);
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_table);
  HS_RUN(test_hap_setting);
  HS_TEST_END();
}
