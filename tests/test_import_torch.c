/*
 * test_import_torch.c - `hetsim import torch-profiler`
 * (validate/import_torch_profiler*.c).
 *
 * Truths: the durations and shapes printed in the real CPU trace
 * (tests/data/import/torch_cpu_step.json, typed here from the file: two
 * steps of 2095.655 and 1916.709 us; 6 aten::addmm and 10 aten::mm); the
 * compute model of sim/compute.c, from which a synthetic GPU trace in
 * Kineto's format is written so that calibrate must recover its parameters;
 * and a hand-laid GPU timeline whose compute, exposed communication and idle
 * time are known by construction.
 */
#include "hs_test.h"
#include "hs_validate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void test_real_cpu_trace(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_torch_trace_t t;
  CHECK_MSG(hs_torch_trace_load(hs_test_data("import/torch_cpu_step.json"), &t, &err) == HS_OK,
            "%s", err.msg);
  CHECK(t.record_shapes);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_measured_t m;
  hs_tp_summary_t sum;
  CHECK_MSG(hs_torch_profiler_import(&t, &ms, &m, &sum, &err) == HS_OK, "%s", err.msg);
  CHECK(!sum.gpu);
  CHECK_EQ_INT(sum.n_steps, 2);
  CHECK_EQ_INT(m.n_iterations, 2);
  if (m.n_iterations == 2) {
    CHECK_REL(m.iteration_s[0], 2095.655e-6, 1e-12);
    CHECK_REL(m.iteration_s[1], 1916.709e-6, 1e-12);
  }
  CHECK_EQ_INT(sum.n_gemm, 16);
  /* the first GEMM: aten::addmm, Input Dims [[512], [64, 256], [256, 512]], 223.421 us */
  int32_t first = -1;
  for (int32_t i = 0; i < ms.n && first < 0; i++)
    if (ms.p[i].kind == HS_MB_GEMM)
      first = i;
  CHECK(first >= 0);
  if (first >= 0) {
    const hs_mb_point_t *p = &ms.p[first];
    CHECK(p->m == 64 && p->k == 256 && p->n == 512 && p->dtype == HS_DTYPE_FP32);
    CHECK(p->flops == 2.0 * 64 * 256 * 512);
    CHECK_REL(p->s, 223.421e-6, 1e-12);
  }
  /* one thread, no communication: compute + idle = the step */
  CHECK(m.has_breakdown && m.comm_exposed_s == 0);
  CHECK(m.compute_s > 0 && m.compute_s <= m.iteration_time_s);
  CHECK_REL(m.compute_s + m.idle_s, m.iteration_time_s, 1e-9);
  CHECK(sum.n_mem > 0);
  hs_measurements_destroy(&ms);
  hs_measured_destroy(&m);
  hs_torch_trace_destroy(&t);
}

/* Appends one complete event. */
static size_t ev(char *b, size_t len, size_t cap, const char *cat, const char *name, double ts,
                 double dur, int ext, const char *args)
{
  bool first = len >= 2 && b[len - 2] == '[' && b[len - 1] == '\n';
  return len + (size_t)snprintf(b + len, cap - len,
                                "%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, "
                                "\"tid\": %s, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"External id\": "
                                "%d%s%s}}", first ? "" : ",\n", cat, name,
                                strcmp(cat, "kernel") == 0 ? 0 : 77,
                                strcmp(cat, "kernel") == 0 ? "\"stream 7\"" : "77", ts, dur, ext,
                                args ? ", " : "", args ? args : "");
}

/* sim/compute.c's model of an H100 at bf16 with these parameters */
#define PEAK 989e12
#define EFF 0.7
#define HALF 2e9
#define LAUNCH_US 4.0
#define BW 3350e9
#define MEM_EFF 0.8

static void test_gpu_fit_recovers_profile(void)
{
  size_t cap = 1 << 16, len = 0;
  char *b = malloc(cap);
  len += (size_t)snprintf(b + len, cap - len, "{\"deviceProperties\": [{\"name\": \"NVIDIA H100 "
                          "80GB HBM3\"}], \"record_shapes\": 1, \"traceEvents\": [\n");
  len = ev(b, len, cap, "user_annotation", "ProfilerStep#1", 0, 100000, 1, NULL);
  double ts = 10;
  int ext = 10;
  static const int sizes[] = {512, 1024, 2048, 4096, 8192};
  for (int i = 0; i < 5; i++, ext++) {
    int s = sizes[i];
    double f = 2.0 * s * s * s;
    double us = LAUNCH_US + (f + HALF) / (PEAK * EFF) * 1e6;
    char a[256];
    snprintf(a, sizeof a, "\"Input Dims\": [[%d, %d], [%d, %d]], \"Input type\": "
             "[\"c10::BFloat16\", \"c10::BFloat16\"]", s, s, s, s);
    len = ev(b, len, cap, "cpu_op", "aten::mm", ts, 5, ext, a);
    len = ev(b, len, cap, "kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", ts + 20, us, ext, NULL);
    ts += 20 + us + 1;
  }
  for (int i = 0; i < 4; i++, ext++) {
    double numel = 1e6 * (1 << (2 * i));
    double bytes = 3 * numel * 2; /* add: two inputs read, one written */
    double us = LAUNCH_US + bytes / (BW * MEM_EFF) * 1e6;
    char a[256];
    snprintf(a, sizeof a, "\"Input Dims\": [[%.0f], [%.0f], []], \"Input type\": "
             "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]", numel, numel);
    len = ev(b, len, cap, "cpu_op", "aten::add", ts, 5, ext, a);
    len = ev(b, len, cap, "kernel", "vectorized_elementwise_kernel", ts + 20, us, ext, NULL);
    ts += 20 + us + 1;
  }
  /* an all-reduce of 64 MiB bf16 over 8 ranks, launched by c10d */
  len = ev(b, len, cap, "cpu_op", "nccl:all_reduce", ts, 5, 99,
           "\"In msg nelems\": 33554432, \"Group size\": 8, \"dtype\": \"BFloat16\"");
  len = ev(b, len, cap, "kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", ts + 10, 500, 99, NULL);
  len += (size_t)snprintf(b + len, cap - len, "]}\n");
  hs_error_t err;
  hs_error_init(&err);
  hs_torch_trace_t t;
  CHECK_MSG(hs_torch_trace_parse(b, "gpu.json", &t, &err) == HS_OK, "%s", err.msg);
  hs_gpu_catalog_t cat;
  hs_gpu_catalog_init(&cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  const hs_gpu_t *g = hs_gpu_catalog_find(&cat, "H100-SXM5-80GB");
  CHECK(g != NULL);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_measurements_set_gpu(&ms, g);
  ms.peak_flops[HS_DTYPE_BF16] = PEAK; /* the model's, not the catalog's */
  ms.mem_bw_GBps = BW / 1e9;
  hs_measured_t m;
  hs_tp_summary_t sum;
  CHECK_MSG(hs_torch_profiler_import(&t, &ms, &m, &sum, &err) == HS_OK, "%s", err.msg);
  CHECK(sum.gpu);
  CHECK_EQ_INT(sum.n_gemm, 5);
  CHECK_EQ_INT(sum.n_mem, 4);
  CHECK_EQ_INT(sum.n_comm_points, 1);
  for (int32_t i = 0; i < ms.n; i++)
    if (ms.p[i].kind == HS_MB_ALLREDUCE)
      CHECK(ms.p[i].bytes == 33554432.0 * 2 && ms.p[i].ranks == 8 && ms.p[i].s == 500e-6);
  hs_fit_t fit;
  CHECK_MSG(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &fit, &err) == HS_OK, "%s", err.msg);
  CHECK_REL(fit.gemm_eff_max, EFF, 1e-4);
  CHECK_REL(fit.gemm_half_flops, HALF, 1e-3);
  CHECK_REL(fit.mem_eff, MEM_EFF, 1e-4);
  CHECK_REL(fit.launch_us, LAUNCH_US, 1e-3);
  hs_measurements_destroy(&ms);
  hs_measured_destroy(&m);
  hs_gpu_catalog_destroy(&cat);
  hs_torch_trace_destroy(&t);
  free(b);
}

static void test_gpu_breakdown(void)
{
  /* GPU step [1000, 2000] us: compute kernels [1100, 1300] and [1350, 1500],
   * NCCL [1450, 1700]: compute 350 us, exposed comm 200 us, idle 450 us */
  size_t cap = 8192, len = 0;
  char *b = malloc(cap);
  len += (size_t)snprintf(b + len, cap - len, "{\"traceEvents\": [\n");
  len = ev(b, len, cap, "user_annotation", "ProfilerStep#4", 900, 800, 1, NULL);
  len = ev(b, len, cap, "gpu_user_annotation", "ProfilerStep#4", 1000, 1000, 1, NULL);
  len = ev(b, len, cap, "kernel", "ampere_sgemm_128x64_nn", 1100, 200, 2, NULL);
  len = ev(b, len, cap, "kernel", "elementwise_kernel", 1350, 150, 3, NULL);
  len = ev(b, len, cap, "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 1450, 250, 4, NULL);
  len += (size_t)snprintf(b + len, cap - len, "]}\n");
  hs_error_t err;
  hs_error_init(&err);
  hs_torch_trace_t t;
  CHECK_MSG(hs_torch_trace_parse(b, "step.json", &t, &err) == HS_OK, "%s", err.msg);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_measured_t m;
  hs_tp_summary_t sum;
  CHECK_MSG(hs_torch_profiler_import(&t, &ms, &m, &sum, &err) == HS_OK, "%s", err.msg);
  CHECK_REL(m.iteration_time_s, 1000e-6, 1e-12);
  CHECK_REL(m.compute_s, 350e-6, 1e-9);
  CHECK_REL(m.comm_exposed_s, 200e-6, 1e-9);
  CHECK_REL(m.idle_s, 450e-6, 1e-9);
  CHECK_EQ_INT(sum.n_comm_kernels, 1);
  CHECK_EQ_INT(sum.n_comm_points, 0); /* no c10d op gives its size */
  hs_measurements_destroy(&ms);
  hs_measured_destroy(&m);
  hs_torch_trace_destroy(&t);
  free(b);
}

/* Many steps (issue #32: the per-step pass was O(steps x events)): GPU step
 * k is [1000 + 2000 k, 2000 + 2000 k] us with the kernels of
 * test_gpu_breakdown plus a compute kernel of k us at 1800: compute 350 + k,
 * exposed comm 200, idle 450 - k, so the medians over k = 0..50 are those
 * of k = 25 (closed form). A kernel of another step counted in step k, or
 * one of k's missed, moves them. */
static void test_many_steps(void)
{
  enum { N = 51 };
  size_t cap = (size_t)N * 6 * 400 + 64, len = 0;
  char *b = malloc(cap);
  len += (size_t)snprintf(b + len, cap - len, "{\"traceEvents\": [\n");
  /* in reverse file order: the steps are put in time order by the importer */
  for (int k = N - 1; k >= 0; k--) {
    double o = 2000.0 * k;
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", k);
    len = ev(b, len, cap, "user_annotation", name, 900 + o, 800, 1, NULL);
    len = ev(b, len, cap, "gpu_user_annotation", name, 1000 + o, 1000, 1, NULL);
    len = ev(b, len, cap, "kernel", "ampere_sgemm_128x64_nn", 1100 + o, 200, 2, NULL);
    len = ev(b, len, cap, "kernel", "elementwise_kernel", 1350 + o, 150, 3, NULL);
    len = ev(b, len, cap, "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 1450 + o, 250, 4, NULL);
    len = ev(b, len, cap, "kernel", "vectorized_elementwise_kernel", 1800 + o, k, 5, NULL);
  }
  len += (size_t)snprintf(b + len, cap - len, "]}\n");
  hs_error_t err;
  hs_error_init(&err);
  hs_torch_trace_t t;
  CHECK_MSG(hs_torch_trace_parse(b, "steps.json", &t, &err) == HS_OK, "%s", err.msg);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_measured_t m;
  hs_tp_summary_t sum;
  CHECK_MSG(hs_torch_profiler_import(&t, &ms, &m, &sum, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(sum.n_steps, N);
  CHECK_EQ_INT(m.n_iterations, N);
  for (int32_t i = 0; i < m.n_iterations; i++)
    CHECK_REL(m.iteration_s[i], 1000e-6, 1e-9);
  CHECK_REL(m.compute_s, 375e-6, 1e-9);
  CHECK_REL(m.comm_exposed_s, 200e-6, 1e-9);
  CHECK_REL(m.idle_s, 425e-6, 1e-9);
  hs_measurements_destroy(&ms);
  hs_measured_destroy(&m);
  hs_torch_trace_destroy(&t);
  free(b);
}

static void expect_bad(const char *text, const char *needle)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_torch_trace_t t;
  hs_status_t st = hs_torch_trace_parse(text, "trace.json", &t, &err);
  if (st == HS_OK) {
    hs_measurements_t ms;
    hs_measurements_init(&ms);
    hs_measured_t m;
    hs_tp_summary_t sum;
    st = hs_torch_profiler_import(&t, &ms, &m, &sum, &err);
    hs_measurements_destroy(&ms);
    hs_measured_destroy(&m);
  }
  hs_torch_trace_destroy(&t);
  CHECK_MSG(st != HS_OK, "accepted: %.60s", text);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "trace.json");
  CHECK_CONTAINS(err.msg, needle);
}

static void test_malformed(void)
{
  expect_bad("{\"traceEvents\": [", "malformed JSON");
  expect_bad("{}", "traceEvents");
  expect_bad("{\"traceEvents\": 3}", "traceEvents");
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": -1}]}",
             "traceEvents[0].dur");
  expect_bad("{\"traceEvents\": [{\"ph\": \"M\"}, {\"ph\": \"X\", \"name\": 5, \"ts\": 1, \"dur\": 1}]}",
             "traceEvents[1].name");
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, "
             "\"dur\": 1, \"args\": {\"Input Dims\": [[2, \"x\"]]}}]}",
             "traceEvents[0].args.Input Dims[0][1]");
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, "
             "\"dur\": 1}]}", "no ProfilerStep#N");
  /* issue #32: a step of duration 0 became iteration_time_s 0 (exit 0),
   * which validate then refused */
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
             "\"ProfilerStep#7\", \"ts\": 10, \"dur\": 0}]}",
             "trace.json: ProfilerStep#7 (ts 10.000 us): duration 0 us: a step must take time");
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
             "\"ProfilerStep#7\", \"ts\": 10, \"dur\": 1e-320}]}", "traceEvents[0].dur");
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 4e-320}]}",
             "traceEvents[0].dur: expected a duration >= 0 us (0 or a normal number)");
  /* the scanner: structure errors give the position, never the text */
  expect_bad("{\"traceEvents\": [{\"ph\": \"X\"} {\"ph\": \"X\"}]}",
             "malformed JSON at line 1, column 30 (byte 29): expected ',' or ']' in traceEvents");
  expect_bad("{\"traceEvents\": [],\n \"x\": SECRET}", "malformed JSON at line 2, column");
  expect_bad("{\"traceEvents\": []} trailing", "text after the top-level object");
  expect_bad("{\"traceEvents\": [], \"traceEvents\": []}", "traceEvents: given twice");
  expect_bad("{\"traceEvents\": [{\"a\": [}]}", "mismatched bracket");
  expect_bad("{\"traceEvents\": [\"unterminated]}", "unexpected end of input");
  expect_bad("[1]", "(top level): must be an object");
  {
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_torch_trace_t t;
    CHECK(hs_torch_trace_parse("{\"traceEvents\": [],\n \"x\": SECRET}", "trace.json", &t, &err) != HS_OK);
    CHECK(strstr(err.msg, "SECRET") == NULL);
  }
  /* the real trace cut in half */
  char *txt = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_file_read(hs_test_data("import/torch_cpu_step.json"), 1 << 24, &txt, NULL, &err) == HS_OK);
  if (txt) {
    txt[strlen(txt) / 2] = '\0';
    expect_bad(txt, "malformed JSON at line");
    free(txt);
  }
}

int main(void)
{
  HS_RUN(test_real_cpu_trace);
  HS_RUN(test_gpu_fit_recovers_profile);
  HS_RUN(test_gpu_breakdown);
  HS_RUN(test_many_steps);
  HS_RUN(test_malformed);
  HS_TEST_END();
}
