/*
 * test_sim_profile.c - calibrated device profiles replace the catalog's
 * compute-model defaults: halving gemm_eff_max doubles every GEMM time, so a
 * compute-only pipeline takes exactly twice as long; broken profiles are
 * rejected naming the field.
 */
#include "sim_fixture.h"

#include <stdio.h>

static double run(hs_cluster_t *c, hs_model_t *m)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = 2;
  g.global_batch = 4;
  hs_plan_t plan;
  CHECK(hs_plan_grid(m, c, &g, &plan, &err) == HS_OK);
  hs_report_t rep;
  CHECK_MSG(hs_simulate(m, c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double t = rep.iteration_time_s;
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  return t;
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

static void test_profile_scales_compute(void)
{
  hs_model_t m;
  fx_chain_model(&m, 2, 2, 1e9, 0, 0, 0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 2, 100, 0, 10, 0, &err) == HS_OK);
  double t1 = run(&c, &m);
  CHECK_REL(t1, (4 + 2 - 1) * 6e-3, 1e-12);
  write_file("profile_ok.json",
             "{\"gpus\": [{\"name\": \"IdealGPU\", \"gemm_eff_max\": 0.5, \"launch_us\": 0},"
             " {\"name\": \"NotInThisCluster\", \"mem_eff\": 0.9}]}");
  err.warn_fp = NULL;
  CHECK_MSG(hs_profile_apply_file("profile_ok.json", &c, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(err.n_warnings, 1);
  CHECK(c.gpus.gpus[c.devices[0].gpu].calibrated);
  double t2 = run(&c, &m);
  CHECK_REL(t2, 2 * t1, 1e-12);
  /* the memory-side GEMM tail (issue #33) travels in a profile too; the
   * chain's GEMMs move no bytes, so their time does not change */
  write_file("profile_ok.json", "{\"gpus\": [{\"name\": \"IdealGPU\", \"gemm_mem_latency_us\": 7}]}");
  CHECK_MSG(hs_profile_apply_file("profile_ok.json", &c, &err) == HS_OK, "%s", err.msg);
  CHECK_REL(c.gpus.gpus[c.devices[0].gpu].gemm_mem_latency_us, 7, 0);
  CHECK_REL(run(&c, &m), t2, 1e-12);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_profile_errors(void)
{
  static const struct {
    const char *json, *needle;
  } cases[] = {
      {"{\"gpus\": [{\"name\": \"IdealGPU\", \"gemm_eff_max\": 1.5}]}", "gpus[0].gemm_eff_max: must be at most 1"},
      {"{\"gpus\": [{\"name\": \"IdealGPU\", \"mem_eff\": -0.1}]}", "gpus[0].mem_eff: must be between 0.001 and 1, got -0.1"},
      {"{\"gpus\": [{\"gemm_eff_max\": 0.5}]}", "gpus[0].name: required field missing"},
      {"{\"gpus\": [{\"name\": \"IdealGPU\", \"gemm_mem_latency_us\": -2}]}",
       "gpus[0].gemm_mem_latency_us: must be a non-negative number, got -2"},
      {"{\"gpus\": [{\"name\": \"IdealGPU\", \"gemm_mem_latency_us\": 2000}]}",
       "gpus[0].gemm_mem_latency_us: must be at most 1000, got 2000"},
      {"{\"gpus\": {}}", "gpus: must be an array"},
      {"{\"gpus\": [", "malformed JSON at line 1"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(fx_cluster(&c, 1, 2, 100, 0, 10, 0, &err) == HS_OK);
    write_file("profile_bad.json", cases[k].json);
    CHECK(hs_profile_apply_file("profile_bad.json", &c, &err) != HS_OK);
    CHECK_CONTAINS(err.msg, cases[k].needle);
    CHECK_CONTAINS(err.msg, "profile_bad.json");
    hs_cluster_destroy(&c);
  }
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 2, 100, 0, 10, 0, &err) == HS_OK);
  CHECK(hs_profile_apply_file("no-such-profile.json", &c, &err) == HS_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "no-such-profile.json");
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_profile_scales_compute);
  HS_RUN(test_profile_errors);
  HS_TEST_END();
}
