/*
 * test_sim_host.c - the framework host overheads (sim/host.c) against their
 * closed forms, on one stage of an ideal GPU (1 TFLOP/s, no launch cost):
 * a chain of L GEMM ops of 1 ms forward, each backward two kernels of
 * 1 ms (input and weight gradient).
 *
 * The host issues kernel i at cpu_i = M + i d (M = microbatch_us, d =
 * dispatch_us) and the GPU runs it from max(end of i-1, cpu_i):
 *   - host ahead (d <= 1 ms): each phase starts M + d late and runs its
 *     kernels back to back: iteration + m (2 (M + d)) over m microbatches;
 *   - host behind (d > 1 ms): a phase of k kernels ends at M + k d + 1 ms
 *     (the last kernel's issue plus its run): forward L kernels, backward
 *     2L, so per microbatch (M + L d + 1 ms) + (M + 2L d + 1 ms) in place
 *     of 3L ms;
 *   - CUDA graphs, 2 ops per layer, L/2 layers, d > 2 ms: one issue per
 *     layer, each layer's kernels back to back: forward ends at
 *     M + (L/2) d + 2 ms, backward at M + (L/2) d + 4 ms.
 * The optimizer passes add 4 bytes per parameter (bf16; 12 for fp16) to
 * the memory-bound step: + P x 4 / 1000 GB/s. And the preset "none" or an
 * all-zero framework changes nothing, bit for bit.
 */
#include "sim_fixture.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#define L_OPS 6
#define KERNEL_S 1e-3

static double iteration_s(const hs_model_t *m, const hs_cluster_t *c, int mb, const hs_framework_t *fw,
                          hs_dtype_t precision)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = 1;
  g.global_batch = mb;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(m, c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  plan.precision = precision;
  if (fw)
    plan.practice.framework = *fw;
  hs_report_t rep;
  CHECK_MSG(hs_simulate(m, c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double t = rep.iteration_time_s;
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  return t;
}

static hs_framework_t fw_of(double d_us, double m_us, bool graphs)
{
  hs_framework_t fw = {HS_FW_MEGATRON_LM_2021, d_us, m_us, graphs, false};
  return fw;
}

static void setup(hs_model_t *m, hs_cluster_t *c, int ops_per_layer)
{
  fx_chain_model(m, L_OPS / ops_per_layer, ops_per_layer, 1e9, 1e6, 0.0, 0.0);
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(c, 1, 1, 100, 2, 10, 0, &err) == HS_OK);
}

static void test_off_is_unchanged(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c, 1);
  double base = iteration_s(&m, &c, 4, NULL, HS_DTYPE_BF16);
  hs_framework_t none;
  CHECK(hs_framework_preset("none", &none) == HS_OK && !hs_framework_active(&none));
  CHECK(iteration_s(&m, &c, 4, &none, HS_DTYPE_BF16) == base);
  /* an active preset with every cost zero: the same time, bit for bit */
  hs_framework_t zero = fw_of(0.0, 0.0, false);
  CHECK(iteration_s(&m, &c, 4, &zero, HS_DTYPE_BF16) == base);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_host_ahead(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c, 1);
  const int mbs[] = {1, 3};
  const double ds[] = {10.0, 250.0, 1000.0}, ms[] = {0.0, 400.0};
  for (size_t i = 0; i < HS_ARRAY_LEN(mbs); i++) {
    double base = iteration_s(&m, &c, mbs[i], NULL, HS_DTYPE_BF16);
    for (size_t a = 0; a < HS_ARRAY_LEN(ds); a++)
      for (size_t b = 0; b < HS_ARRAY_LEN(ms); b++) {
        hs_framework_t fw = fw_of(ds[a], ms[b], false);
        double t = iteration_s(&m, &c, mbs[i], &fw, HS_DTYPE_BF16);
        double want = mbs[i] * 2.0 * (ms[b] + ds[a]) * 1e-6;
        CHECK_MSG(fabs((t - base) - want) <= 4 * mbs[i] * 1e-9, "d=%g M=%g m=%d: +%.9g s, closed form %.9g",
                  ds[a], ms[b], mbs[i], t - base, want);
      }
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_host_behind(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c, 1);
  const double ds[] = {1500.0, 4000.0}, ms[] = {0.0, 700.0};
  for (int mb = 1; mb <= 2; mb++) {
    double base = iteration_s(&m, &c, mb, NULL, HS_DTYPE_BF16);
    for (size_t a = 0; a < HS_ARRAY_LEN(ds); a++)
      for (size_t b = 0; b < HS_ARRAY_LEN(ms); b++) {
        hs_framework_t fw = fw_of(ds[a], ms[b], false);
        double d = ds[a] * 1e-6, M = ms[b] * 1e-6;
        double t = iteration_s(&m, &c, mb, &fw, HS_DTYPE_BF16);
        double phase_f = M + L_OPS * d + KERNEL_S, phase_b = M + 2 * L_OPS * d + KERNEL_S;
        double want = mb * (phase_f + phase_b - 3 * L_OPS * KERNEL_S);
        CHECK_MSG(fabs((t - base) - want) <= 4 * mb * 1e-9, "d=%g M=%g: +%.9g s, closed form %.9g", ds[a],
                  ms[b], t - base, want);
      }
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_cuda_graphs(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c, 2); /* L_OPS / 2 layers of 2 ops */
  double base = iteration_s(&m, &c, 1, NULL, HS_DTYPE_BF16);
  double d = 5e-3, M = 1e-4;
  hs_framework_t fw = fw_of(d * 1e6, M * 1e6, true);
  double t = iteration_s(&m, &c, 1, &fw, HS_DTYPE_BF16);
  int layers = L_OPS / 2;
  double want = (M + layers * d + 2 * KERNEL_S) + (M + layers * d + 4 * KERNEL_S) - 3 * L_OPS * KERNEL_S;
  CHECK_MSG(fabs((t - base) - want) <= 4e-9, "graphs: +%.9g s, closed form %.9g", t - base, want);
  /* eager at the same d is slower: every kernel is an issue */
  hs_framework_t eager = fw_of(d * 1e6, M * 1e6, false);
  CHECK(iteration_s(&m, &c, 1, &eager, HS_DTYPE_BF16) > t);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_optimizer_passes(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c, 1);
  double P = 0.0;
  for (size_t k = 0; k < m.n_ops; k++)
    P += m.ops[k].params;
  const hs_dtype_t dts[] = {HS_DTYPE_BF16, HS_DTYPE_FP16};
  const double extra[] = {4.0, 12.0};
  for (size_t i = 0; i < HS_ARRAY_LEN(dts); i++) {
    double base = iteration_s(&m, &c, 2, NULL, dts[i]);
    hs_framework_t fw = fw_of(0.0, 0.0, false);
    fw.optimizer_passes = true;
    CHECK(hs_host_optimizer_extra_bytes(&fw, dts[i]) == extra[i]);
    double t = iteration_s(&m, &c, 2, &fw, dts[i]);
    double want = P * extra[i] / 1000e9;
    CHECK_MSG(fabs((t - base) - want) <= 2e-9, "%s: +%.9g s, closed form %.9g", hs_dtype_name(dts[i]),
              t - base, want);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* The queue itself, op by op: a 3-kernel op of 3 ms after a 2 ms host lag. */
static void test_cursor(void)
{
  hs_practice_t pr;
  hs_practice_init(&pr);
  pr.framework = fw_of(1500.0, 500.0, false);
  hs_op_t op;
  memset(&op, 0, sizeof op);
  op.kind = HS_OP_NORM; /* unfused norm forward: 3 kernels */
  pr.kernels.fused_norm = false;
  CHECK(hs_host_kernels(&pr, &op, HS_PHASE_FWD) == 3);
  hs_host_cursor_t cur;
  hs_host_begin(&cur, &pr.framework);
  /* issues at 2.0, 3.5, 5.0 ms; 1 ms kernels end at 3.0, 4.5, 6.0 ms */
  double span = hs_host_op_s(&cur, &pr, &op, HS_PHASE_FWD, 3e-3);
  CHECK_MSG(fabs(span - 6e-3) < 1e-15, "span %.9g", span);
  hs_host_collective(&cur, &pr.framework); /* next issue at 6.5 + 1.5 ms */
  op.kind = HS_OP_GEMM;
  span = hs_host_op_s(&cur, &pr, &op, HS_PHASE_FWD, 10e-3);
  CHECK_MSG(fabs(span - (8e-3 - 6e-3 + 10e-3)) < 1e-15, "span %.9g", span);
  /* the planners' per-op bound */
  CHECK(fabs(hs_host_op_floor_s(&pr, &op, HS_PHASE_BWD, 1e-3) - 2 * 1.5e-3) < 1e-15);
  CHECK(hs_host_op_floor_s(&pr, &op, HS_PHASE_BWD, 5e-3) == 5e-3);
}

static void test_json(void)
{
  const char *base = "{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": "
                     "[{\"ops\": [0, 2], \"replicas\": [{\"devices\": [0]}]}]}]";
  struct {
    const char *extra, *needle;
  } bad[] = {
      {", \"framework\": \"pytorch\"", "framework: unknown preset \"pytorch\""},
      {", \"framework\": {\"preset\": \"megatron-lm-2021\", \"dispatch_us\": -1}", "framework.dispatch_us"},
      {", \"framework\": {\"preset\": \"fsdp-2023\", \"microbatch_us\": 1e9}", "framework.microbatch_us"},
      {", \"framework\": {\"dispatch_us\": 3}", "framework.preset"},
      {", \"framework\": {\"preset\": \"x\"}", "framework.preset: unknown preset \"x\""},
      {", \"framework\": 3", "framework"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(bad); k++) /* above the limit: HS_ELIMIT */
    fx_plan_refused(base, bad[k].extra, bad[k].needle, true);
  char text[1024];
  for (int id = 0; id < HS_FW__COUNT; id++) {
    snprintf(text, sizeof text, "%s, \"framework\": {\"preset\": \"%s\", \"dispatch_us\": 7.5}}", base,
             hs_framework_presets[id]);
    hs_error_t err;
    hs_error_init(&err);
    hs_plan_t p;
    CHECK_MSG(hs_plan_parse(text, "p.json", &p, &err) == HS_OK, "%s", err.msg);
    CHECK((int)p.practice.framework.id == id && p.practice.framework.dispatch_us == 7.5);
    cJSON *j = hs_plan_to_json(&p);
    char *s = cJSON_PrintUnformatted(j);
    hs_plan_t q;
    CHECK(hs_plan_parse(s, "q.json", &q, &err) == HS_OK);
    CHECK(hs_practice_equal(&p.practice, &q.practice));
    free(s);
    cJSON_Delete(j);
    hs_plan_destroy(&q);
    hs_plan_destroy(&p);
  }
  hs_framework_t fw;
  CHECK(hs_framework_preset(NULL, &fw) == HS_EINVAL);
  CHECK(strcmp(hs_framework_name(HS_FW__COUNT), "?") == 0);
}

int main(void)
{
  HS_RUN(test_cursor);
  HS_RUN(test_off_is_unchanged);
  HS_RUN(test_host_ahead);
  HS_RUN(test_host_behind);
  HS_RUN(test_cuda_graphs);
  HS_RUN(test_optimizer_passes);
  HS_RUN(test_json);
  HS_TEST_END();
}
