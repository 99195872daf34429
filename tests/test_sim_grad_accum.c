/*
 * test_sim_grad_accum.c - the per-microbatch gradient accumulation pass
 * (plan option "grad_accum", sim/grad_accum.c) against its closed form,
 * and the plan loader's handling of the field.
 *
 * One stage on one GPU (no data parallelism, no pipeline), m microbatches:
 * the pass lengthens every backward by
 *     a = launch + P x bytes / (mem_bw x mem_eff)
 * with P the stage's parameters (the model's, summed here from its ops)
 * and bytes per parameter from the sources the option names (gradients in
 * bf16, g = 2): add 3g = 6, add_fp32 g + 8 = 10, cast_add_fp32 g + 4 + 12
 * = 18, autograd 3g (m - 1) / m. Everything else is the same work, so the
 * iteration time grows by exactly m x a (each a rounded once to ns). Two
 * stages with one microbatch: the backward of the last stage, its pass,
 * then the first stage's backward and pass are in series, so the time
 * grows by a_0 + a_1, the two stages' passes sized by their own
 * parameters.
 */
#include "sim_fixture.h"

#include <cjson/cJSON.h>
#include <string.h>

#define MEM_BW_GBPS 1000.0 /* the fixture GPU's */
#define MEM_EFF 0.8
#define LAUNCH_US 5.0

static void slow_memory(hs_cluster_t *c)
{
  for (size_t k = 0; k < c->gpus.n; k++) {
    c->gpus.gpus[k].mem_eff = MEM_EFF;
    c->gpus.gpus[k].launch_us = LAUNCH_US;
  }
}

/* The closed form: one pass over p parameters of b bytes each. */
static double pass_s(double p, double b)
{
  if (!(b > 0.0))
    return 0.0;
  return LAUNCH_US * 1e-6 + p * b / (MEM_BW_GBPS * 1e9 * MEM_EFF);
}

static double iteration_s(const hs_model_t *m, const hs_cluster_t *c, int pp, int mb,
                          hs_grad_accum_t a)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = pp;
  g.global_batch = mb;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(m, c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  plan.practice.grad_accum = a;
  hs_report_t rep;
  CHECK_MSG(hs_simulate(m, c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double t = rep.iteration_time_s;
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  return t;
}

static void test_one_stage_closed_form(void)
{
  hs_model_t m;
  fx_chain_model(&m, 4, 2, 2e9, 30e6, 0.0, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 1, 100, 2, 10, 0, &err) == HS_OK);
  slow_memory(&c);
  double P = 0.0;
  for (size_t k = 0; k < m.n_ops; k++)
    P += m.ops[k].params;
  const int mbs[] = {1, 3, 8};
  for (size_t i = 0; i < HS_ARRAY_LEN(mbs); i++) {
    int mb = mbs[i];
    double base = iteration_s(&m, &c, 1, mb, HS_GRAD_ACCUM_FUSED);
    struct {
      hs_grad_accum_t a;
      double bytes;
    } cases[] = {
        {HS_GRAD_ACCUM_ADD, 2.0 + 2.0 + 2.0},
        {HS_GRAD_ACCUM_ADD_FP32, 2.0 + 4.0 + 4.0},
        {HS_GRAD_ACCUM_CAST_ADD_FP32, 2.0 + 4.0 + 4.0 + 4.0 + 4.0},
        {HS_GRAD_ACCUM_AUTOGRAD, 6.0 * (mb - 1) / mb},
    };
    for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
      double t = iteration_s(&m, &c, 1, mb, cases[k].a);
      double want = mb * pass_s(P, cases[k].bytes);
      /* each pass rounded once to whole ns */
      CHECK_MSG(fabs((t - base) - want) <= mb * 1e-9 + 1e-12, "%s m=%d: +%.9g s, closed form %.9g s",
                hs_grad_accum_name(cases[k].a), mb, t - base, want);
      if (cases[k].bytes > 0.0)
        CHECK(t > base);
    }
    /* one microbatch: AccumulateGrad keeps the first gradient, no pass */
    if (mb == 1)
      CHECK(iteration_s(&m, &c, 1, mb, HS_GRAD_ACCUM_AUTOGRAD) == base);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_two_stages_in_series(void)
{
  hs_model_t m;
  fx_chain_model(&m, 3, 1, 1e9, 40e6, 0.0, 0.0);
  m.ops[0].params = 10e6; /* unequal stages: whichever cut, the passes differ */
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 2, 100, 2, 10, 0, &err) == HS_OK);
  slow_memory(&c);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = 2;
  g.global_batch = 1;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  double p[2] = {0.0, 0.0};
  for (int s = 0; s < 2; s++) {
    const hs_plan_stage_t *st = &plan.pipelines[0].stages[s];
    for (int32_t op = st->op_first; op < st->op_last; op++)
      p[s] += m.ops[op].params;
  }
  hs_plan_destroy(&plan);
  CHECK(p[0] != p[1] && p[0] + p[1] == 90e6);
  double base = iteration_s(&m, &c, 2, 1, HS_GRAD_ACCUM_FUSED);
  double t = iteration_s(&m, &c, 2, 1, HS_GRAD_ACCUM_ADD_FP32);
  double want = pass_s(p[0], 10.0) + pass_s(p[1], 10.0);
  CHECK_MSG(fabs((t - base) - want) <= 2e-9 + 1e-12, "+%.9g s, closed form %.9g s", t - base, want);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_bytes_per_param(void)
{
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_FUSED, HS_DTYPE_BF16, 8) == 0.0);
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_ADD, HS_DTYPE_FP16, 8) == 6.0);
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_ADD, HS_DTYPE_FP32, 8) == 12.0);
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_ADD_FP32, HS_DTYPE_FP16, 8) == 10.0);
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_CAST_ADD_FP32, HS_DTYPE_BF16, 8) == 18.0);
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_AUTOGRAD, HS_DTYPE_FP16, 4) == 4.5);
  CHECK(hs_grad_accum_bytes_per_param(HS_GRAD_ACCUM_AUTOGRAD, HS_DTYPE_FP16, 1) == 0.0);
}

static void test_json(void)
{
  const char *base = "{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": "
                     "[{\"ops\": [0, 2], \"replicas\": [{\"devices\": [0]}]}]}]";
  char text[1024];
  struct {
    const char *extra, *needle;
  } bad[] = {
      {", \"grad_accum\": \"separate\"",
       "grad_accum: must be fused, add, add_fp32, cast_add_fp32 or autograd, got \"separate\""},
      {", \"grad_accum\": \"FUSED\"", "grad_accum: must be fused"},
      {", \"grad_accum\": \"\"", "grad_accum: must be fused"},
      {", \"grad_accum\": 1", "grad_accum"},
      {", \"grad_accum\": true", "grad_accum"},
      {", \"grad_accum\": null", "grad_accum"},
  };
  hs_error_t err;
  hs_plan_t p;
  for (size_t k = 0; k < HS_ARRAY_LEN(bad); k++)
    fx_plan_refused(base, bad[k].extra, bad[k].needle, false);
  /* every value round-trips; the default is not written out */
  for (int a = 0; a < HS_GRAD_ACCUM__COUNT; a++) {
    snprintf(text, sizeof text, "%s, \"grad_accum\": \"%s\"}", base,
             hs_grad_accum_name((hs_grad_accum_t)a));
    hs_error_init(&err);
    CHECK_MSG(hs_plan_parse(text, "p.json", &p, &err) == HS_OK, "%s", err.msg);
    CHECK((int)p.practice.grad_accum == a);
    CHECK(hs_practice_is_default(&p.practice) == (a == HS_GRAD_ACCUM_FUSED));
    cJSON *j = hs_plan_to_json(&p);
    char *s = cJSON_PrintUnformatted(j);
    CHECK((strstr(s, "\"grad_accum\"") != NULL) == (a != HS_GRAD_ACCUM_FUSED));
    hs_plan_t q;
    CHECK(hs_plan_parse(s, "q.json", &q, &err) == HS_OK);
    CHECK(hs_practice_equal(&p.practice, &q.practice));
    free(s);
    cJSON_Delete(j);
    hs_plan_destroy(&q);
    hs_plan_destroy(&p);
  }
  hs_grad_accum_t a = HS_GRAD_ACCUM_ADD;
  CHECK(hs_grad_accum_parse(NULL, &a) == HS_EINVAL && a == HS_GRAD_ACCUM_ADD);
  CHECK(strcmp(hs_grad_accum_name(HS_GRAD_ACCUM__COUNT), "?") == 0);
}

int main(void)
{
  HS_RUN(test_bytes_per_param);
  HS_RUN(test_one_stage_closed_form);
  HS_RUN(test_two_stages_in_series);
  HS_RUN(test_json);
  HS_TEST_END();
}
