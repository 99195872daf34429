/*
 * test_sim_grad_reduce.c - the gradient-reduce dtype (plan option
 * "grad_reduce_dtype", hs_practice_grad_bytes; docs/plan.md) against closed
 * forms, and the loaders' handling of the field.
 *
 * Data parallelism over n ideal GPUs of one node (B GB/s, latency l per
 * ring step), one bucket issued after the backward (exposed whole): the
 * ring all-reduce of S bytes takes 2 (n - 1) (l + S / (n B)), with
 * S = P x 2 for bf16 gradients and P x 4 for fp32 ones, so the iteration is
 *     compute + 2 (n - 1) (l + S / (n B)) + optimizer step
 * and the fp32 reduce adds 2 (n - 1) / n x 2 P / B. Memory per parameter:
 * 2 weights + 4 gradients + 12 optimizer (18 instead of 16); ZeRO-2 shards
 * the fp32 gradients, 2 + (4 + 12) / N; ZeRO-3 (4 + 2 + 12) / N plus two
 * gathered blocks at the weights' 2 bytes. ZeRO-3's link bytes: one
 * reduce-scatter of the fp32 gradients (4 P) and the per-microbatch
 * all-gathers of the bf16 weights (2 P each: the gathers keep the weights'
 * bytes). The planners' estimator costs the
 * same bytes: its prediction grows by the same closed-form amount.
 * Sources for the option: Megatron-LM --accumulate-allreduce-grads-in-fp32,
 * PyTorch FSDP MixedPrecision(reduce_dtype=torch.float32), Llama 3 Section
 * 3.3.4.
 */
#include "hs_test.h"
#include "sim_fixture.h"
#include "search_fixture.h"
#include "estimate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B_GBPS 100.0
#define LAT_US 2.0
#define P_OP 25e6 /* parameters per op, 2 ops */

static double link_bytes(const hs_report_t *r)
{
  double b = 0.0;
  for (int32_t l = 0; l < r->n_links; l++)
    b += r->links[l].bytes;
  return b;
}

static void grid_plan(const hs_model_t *m, const hs_cluster_t *c, int n, int zero, bool fp32,
                      hs_plan_t *plan)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = n;
  g.global_batch = n * 3;
  g.practice.zero_stage = zero;
  CHECK_MSG(hs_plan_grid(m, c, &g, plan, &err) == HS_OK, "%s", err.msg);
  plan->bucket_bytes = 1e15; /* one bucket, after the backward */
  plan->practice.grad_reduce_fp32 = fp32;
}

static void test_allreduce_closed_form(void)
{
  hs_model_t m;
  fx_chain_model(&m, 1, 2, 1e9, P_OP, 0.0, 0.0);
  const int ns[] = {2, 4};
  for (size_t k = 0; k < HS_ARRAY_LEN(ns); k++) {
    int n = ns[k];
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(fx_cluster(&c, 1, n, B_GBPS, LAT_US, 10, 0, &err) == HS_OK);
    double t[2], est[2];
    hs_estimator_t *e = NULL;
    CHECK(hs_estimator_new(&m, &c, HS_DTYPE_BF16, &e, &err) == HS_OK);
    for (int fp32 = 0; fp32 < 2; fp32++) {
      hs_plan_t plan;
      grid_plan(&m, &c, n, 0, fp32, &plan);
      hs_report_t rep;
      CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
      double S = 2 * P_OP * (fp32 ? 4.0 : 2.0);
      double ring = 2.0 * (n - 1) * (LAT_US * 1e-6 + S / (n * B_GBPS * 1e9));
      double compute = 3 * (2e-3 + 4e-3); /* 3 microbatches of 2 + 4 GFLOP at 1 TFLOP/s */
      double opt = 2 * P_OP * 32.0 / 1000e9;
      CHECK_MSG(fabs(rep.iteration_time_s - (compute + ring + opt)) <= 1e-6 * (compute + ring + opt),
                "n %d fp32 %d: %.9g vs %.9g", n, fp32, rep.iteration_time_s, compute + ring + opt);
      /* every link byte is the ring's: 2 (n-1)/n S per rank, n ranks, each
       * byte on two links (the sender's port to the switch, the receiver's) */
      CHECK_REL(link_bytes(&rep), 2.0 * 2.0 * (n - 1) * S, 1e-9);
      t[fp32] = rep.iteration_time_s;
      hs_report_destroy(&rep);
      hs_estimate_t es;
      CHECK_MSG(hs_estimate_plan(e, &plan, false, &es, &err) == HS_OK, "%s", err.msg);
      est[fp32] = es.iteration_s;
      hs_plan_destroy(&plan);
    }
    double extra = 2.0 * (n - 1) / n * (2 * P_OP * 2.0) / (B_GBPS * 1e9);
    CHECK_REL(t[1] - t[0], extra, 1e-6);
    CHECK_REL(est[1] - est[0], extra, 1e-6);
    hs_estimator_free(e);
    hs_cluster_destroy(&c);
  }
  hs_model_destroy(&m);
}

static void test_memory_and_zero(void)
{
  const int L = 4, ops = 2;
  const double P = 10e6; /* per op */
  hs_model_t m;
  fx_chain_model(&m, L, ops, 1e9, P, 0.0, 0.0);
  const int N = 4;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, N, 100, 1, 10, 0, &err) == HS_OK);
  double total = L * ops * P;
  double expect[4] = {18 * total, (6 + 12.0 / N) * total, (2 + 16.0 / N) * total,
                      18 * total / N + 2 * 2.0 * ops * P};
  double link[4];
  for (int z = 0; z < 4; z++) {
    hs_plan_t plan;
    grid_plan(&m, &c, N, z, true, &plan);
    double mem[N];
    CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
    for (int d = 0; d < N; d++)
      CHECK_MSG(fabs(mem[d] - expect[z]) <= 1e-12 * expect[z], "zero %d: %.17g vs %.17g", z, mem[d],
                expect[z]);
    hs_report_t rep;
    CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
    link[z] = link_bytes(&rep);
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
  }
  /* all-reduce of 4 P: 2 (N-1)/N x 4 P x N ranks, each byte on two links;
   * ZeRO-1 and -2 move the same; ZeRO-3 reduce-scatters the fp32
   * gradients once, (N-1)/N x 4 P, and all-gathers the bf16 weights in
   * every microbatch's forward and backward, 3 x 2 x (N-1)/N x 2 P */
  CHECK_REL(link[0], 2.0 * 2.0 * (N - 1) * 4.0 * total, 1e-9);
  CHECK_REL(link[1], link[0], 1e-9);
  CHECK_REL(link[2], link[0], 1e-9);
  CHECK_REL(link[3], 2.0 * (N - 1) * (4.0 + 3 * 2 * 2.0) * total, 1e-9);
  /* add_fp32 keeps and all-reduces Megatron's fp32 main_grad too */
  hs_plan_t plan;
  grid_plan(&m, &c, N, 0, false, &plan);
  plan.practice.grad_accum = HS_GRAD_ACCUM_ADD_FP32;
  double mem[N];
  CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
  CHECK_REL(mem[0], 18 * total, 1e-12);
  /* add (an accumulator in the gradient dtype) with an fp32 reduce: refused */
  plan.practice.grad_accum = HS_GRAD_ACCUM_ADD;
  plan.practice.grad_reduce_fp32 = true;
  hs_report_t rep;
  hs_error_init(&err);
  CHECK(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "grad_reduce_dtype") && strstr(err.msg, "add_fp32"), "%s", err.msg);
  /* fp32 precision: gradients are fp32 already, the option changes nothing */
  plan.practice.grad_accum = HS_GRAD_ACCUM_FUSED;
  plan.precision = HS_DTYPE_FP32;
  CHECK(hs_practice_grad_bytes(&plan.practice, HS_DTYPE_FP32) == 4.0);
  CHECK(hs_practice_grad_bytes(&plan.practice, HS_DTYPE_FP8) == 4.0);
  plan.practice.grad_reduce_fp32 = false;
  CHECK(hs_practice_grad_bytes(&plan.practice, HS_DTYPE_FP8) == 2.0);
  CHECK(hs_practice_grad_bytes(&plan.practice, HS_DTYPE_FP32) == 4.0);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_plan_loader(void)
{
  const char *base = "{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": "
                     "[{\"ops\": [0, 2], \"replicas\": [{\"devices\": [0]}]}]}]";
  char text[1024];
  struct {
    const char *extra, *needle;
  } bad[] = {
      {", \"grad_reduce_dtype\": \"bf16\"", "grad_reduce_dtype: must be fp32 or default, got \"bf16\""},
      {", \"grad_reduce_dtype\": \"FP32\"", "grad_reduce_dtype: must be fp32 or default, got \"FP32\""},
      {", \"grad_reduce_dtype\": \"\"", "grad_reduce_dtype: must be fp32 or default"},
      {", \"grad_reduce_dtype\": 4", "grad_reduce_dtype"},
      {", \"grad_reduce_dtype\": true", "grad_reduce_dtype"},
      {", \"grad_reduce_dtype\": null", "grad_reduce_dtype"},
  };
  hs_error_t err;
  hs_plan_t p;
  for (size_t k = 0; k < HS_ARRAY_LEN(bad); k++)
    fx_plan_refused(base, bad[k].extra, bad[k].needle, false);
  /* both values round-trip; the default is not written out */
  const char *vals[] = {"default", "fp32"};
  for (int v = 0; v < 2; v++) {
    snprintf(text, sizeof text, "%s, \"grad_reduce_dtype\": \"%s\"}", base, vals[v]);
    hs_error_init(&err);
    CHECK_MSG(hs_plan_parse(text, "p.json", &p, &err) == HS_OK, "%s", err.msg);
    CHECK(p.practice.grad_reduce_fp32 == (v == 1));
    CHECK(hs_practice_is_default(&p.practice) == (v == 0));
    cJSON *j = hs_plan_to_json(&p);
    char *s = cJSON_PrintUnformatted(j);
    CHECK((strstr(s, "\"grad_reduce_dtype\":\"fp32\"") != NULL) == (v == 1));
    CHECK((strstr(s, "grad_reduce_dtype") != NULL) == (v == 1));
    hs_plan_t q;
    CHECK(hs_plan_parse(s, "q.json", &q, &err) == HS_OK);
    CHECK(hs_practice_equal(&p.practice, &q.practice));
    free(s);
    cJSON_Delete(j);
    hs_plan_destroy(&q);
    hs_plan_destroy(&p);
  }
  bool f = true;
  CHECK(hs_grad_reduce_parse(NULL, &f) == HS_EINVAL && f);
  CHECK(hs_grad_reduce_parse("fp16", &f) == HS_EINVAL && f);
  CHECK(strcmp(hs_grad_reduce_name(true), "fp32") == 0 && strcmp(hs_grad_reduce_name(false), "default") == 0);
}

int main(void)
{
  HS_RUN(test_allreduce_closed_form);
  HS_RUN(test_memory_and_zero);
  HS_RUN(test_plan_loader);
  HS_TEST_END();
}
