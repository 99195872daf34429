/*
 * test_validate_badinput.c - broken measured.json, measurements.json and
 * report.json give a clear message naming the file, the field and the value,
 * a non-OK status, and never a crash; plans the harness cannot run fail with
 * a message saying why (CUDA backend absent from the build, no CUDA device,
 * too few MPI ranks - whichever applies on this machine).
 */
#include "hs_test.h"
#include "hs_validate.h"

typedef hs_status_t (*parse_fn)(const char *text, const char *file, void *out, hs_error_t *err);

static hs_status_t p_measured(const char *t, const char *f, void *o, hs_error_t *e)
{
  hs_status_t st = hs_measured_parse(t, f, o, e);
  hs_measured_destroy(o);
  return st;
}

static hs_status_t p_measurements(const char *t, const char *f, void *o, hs_error_t *e)
{
  hs_status_t st = hs_measurements_parse(t, f, o, e);
  hs_measurements_destroy(o);
  return st;
}

static hs_status_t p_report(const char *t, const char *f, void *o, hs_error_t *e)
{
  hs_status_t st = hs_report_view_parse(t, f, o, e);
  hs_report_view_destroy(o);
  return st;
}

static void expect(parse_fn fn, const char *file, const char *text, const char *needle)
{
  union {
    hs_measured_t a;
    hs_measurements_t b;
    hs_report_view_t c;
  } out;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = fn(text, file, &out, &err);
  CHECK_MSG(st != HS_OK, "accepted: %s", text);
  CHECK_CONTAINS(err.msg, file);
  CHECK_CONTAINS(err.msg, needle);
  CHECK_MSG(hs_status_exit_code(st) == 2, "%s -> %s", text, hs_status_name(st));
}

/* The smallest measured runs are accepted: the iteration alone, or the
 * iterations (their median is the iteration time). */
static void test_measured_minimal(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_measured_t m;
  CHECK(hs_measured_parse("{\"iteration_time_s\": 31.0}", "m.json", &m, &err) == HS_OK);
  CHECK(m.iteration_time_s == 31.0 && m.n_iterations == 0 && m.backend[0] == '\0');
  hs_measured_destroy(&m);
  CHECK(hs_measured_parse("{\"iterations_s\": [3, 1, 2, 10]}", "m.json", &m, &err) == HS_OK);
  CHECK(m.iteration_time_s == 2.5 && m.n_iterations == 4);
  hs_measured_destroy(&m);
}

static void test_measured(void)
{
  const char *f = "measured.json";
  expect(p_measured, f, "{", "malformed JSON");
  expect(p_measured, f, "[]", "must be an object");
  /* only the iteration is required (issue 15): {} names what is missing */
  expect(p_measured, f, "{}", "iteration_time_s");
  expect(p_measured, f, "{\"iterations_s\": []}", "iteration_time_s");
  expect(p_measured, f, "{\"backend\": \"cpu\", \"iteration_time_s\": -1}", "iteration_time_s");
  expect(p_measured, f, "{\"backend\": \"cpu\", \"iteration_time_s\": \"fast\"}", "\"fast\"");
  expect(p_measured, f, "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"iterations_s\": [1, 0]}",
         "iterations_s[1]");
  expect(p_measured, f,
         "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"stages\": [{\"stage\": 0, \"fwd_s\": 1}]}",
         "stages[0].bwd_s");
  expect(p_measured, f,
         "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"kernels\": [{\"op\": 1, \"kind\": \"conv\","
         " \"phase\": \"fwd\", \"predicted_s\": 1, \"measured_s\": 1}]}",
         "kernels[0].kind: unknown op kind \"conv\"");
  expect(p_measured, f,
         "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"kernels\": [{\"op\": 1, \"kind\": \"gemm\","
         " \"phase\": \"sideways\", \"predicted_s\": 1, \"measured_s\": 1}]}",
         "kernels[0].phase");
  expect(p_measured, f,
         "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"tasks\": [{\"name\": \"fwd\", \"device\": 0,"
         " \"t0_s\": 2, \"t1_s\": 1}]}",
         "tasks[0].t1_s");
  expect(p_measured, f,
         "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"tasks\": [{\"name\": \"fwd\", \"device\": -3,"
         " \"t0_s\": 0, \"t1_s\": 1}]}",
         "tasks[0].device");
  expect(p_measured, f, "{\"backend\": \"cpu\", \"iteration_time_s\": 1, \"tasks\": {}}", "tasks");
  /* the speed probe (CPU replays): {record, what the message must name} */
  static const char *const probe[][2] = {
      {"{\"iterations_s\": [1, 2], \"speed_probe\": {}}", "speed_probe.replay_s"},
      {"{\"iterations_s\": [1, 2], \"speed_probe\": {\"replay_s\": -1}}", "speed_probe.replay_s"},
      {"{\"iterations_s\": [1, 2], \"speed_probe\": {\"replay_s\": 1, \"calibration_s\": 0}}",
       "speed_probe.calibration_s"},
      {"{\"iterations_s\": [1, 2], \"speed_probe\": {\"replay_s\": 1, \"iterations_s\": [1]}}",
       "speed_probe.iterations_s: 1 entries, but iterations_s has 2"},
      {"{\"iterations_s\": [1, 2], \"speed_probe\": {\"replay_s\": 1, \"iterations_s\": [1, \"x\"]}}",
       "speed_probe.iterations_s[1]"},
      {"{\"iterations_s\": [1, 2], \"speed_probe\": [1]}", "speed_probe"},
  };
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++)
    expect(p_measured, f, probe[i][0], probe[i][1]);
}

/* The profile's speed probe: absent is 0, present must be a positive time. */
static void test_profile_speed_probe(void)
{
  const char *path = "test_validate_badinput_profile.json";
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  double s = -1;
  FILE *fp = fopen(path, "w");
  CHECK(fp != NULL);
  if (!fp)
    return;
  fputs("{\"gpus\": [{\"name\": \"A\", \"fit\": {\"speed_probe_s\": 0.002}},"
        " {\"name\": \"B\", \"fit\": {\"speed_probe_s\": \"slow\"}}, {\"name\": \"C\"}]}", fp);
  fclose(fp);
  CHECK(hs_profile_speed_probe(path, "A", &s, &err) == HS_OK && s == 0.002);
  CHECK(hs_profile_speed_probe(path, "C", &s, &err) == HS_OK && s == 0.0);
  CHECK(hs_profile_speed_probe(path, "Z", &s, &err) == HS_OK && s == 0.0);
  CHECK(hs_profile_speed_probe(path, "B", &s, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, path);
  CHECK_CONTAINS(err.msg, "gpus[1].fit.speed_probe_s");
  CHECK_CONTAINS(err.msg, "slow");
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK(hs_profile_speed_probe("no-such-profile.json", "A", &s, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "no-such-profile.json");
  remove(path);
}

static void test_measurements(void)
{
  const char *f = "m.json";
  const char *head = "{\"gpu\": \"X\", \"peak_tflops\": {\"bf16\": 100}, \"mem_bw_GBps\": 1000, ";
  char buf[1024];
  expect(p_measurements, f, "{\"gpu\": \"X\"}", "peak_tflops");
  expect(p_measurements, f, "{\"gpu\": \"X\", \"peak_tflops\": {\"bf16\": -1}, \"mem_bw_GBps\": 1, \"points\": []}",
         "peak_tflops.bf16");
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"warp\", \"s\": 1}]}", head);
  expect(p_measurements, f, buf, "points[0].kind");
  /* the CPU microbenchmarks' speed probe: a positive time */
  snprintf(buf, sizeof buf, "%s\"speed_probe_s\": 0, \"points\": []}", head);
  expect(p_measurements, f, buf, "speed_probe_s");
  snprintf(buf, sizeof buf, "%s\"speed_probe_s\": \"fast\", \"points\": []}", head);
  expect(p_measurements, f, buf, "\"fast\"");
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"gemm\", \"m\": 0, \"n\": 1, \"k\": 1, \"s\": 1}]}", head);
  expect(p_measurements, f, buf, "points[0].m");
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"gemm\", \"dtype\": \"fp4\", \"m\": 1, \"n\": 1, \"k\": 1, \"s\": 1}]}", head);
  expect(p_measurements, f, buf, "points[0].dtype: unknown dtype \"fp4\"");
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"mem\", \"bytes\": 10, \"s\": 0}]}", head);
  expect(p_measurements, f, buf, "points[0].s");
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"mem\", \"s\": 1}]}", head);
  expect(p_measurements, f, buf, "points[0].bytes");
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"mem\", \"bytes\": 1e300, \"s\": 1}]}", head);
  expect(p_measurements, f, buf, "points[0].bytes");
  /* published points: sources, their dates, the ids points name, "applies" */
  const char *src = "\"sources\": [{\"id\": \"a\", \"ref\": \"x@1 f.txt\", \"date\": \"2025-02\"}], ";
  const char *pt = "\"points\": [{\"kind\": \"mem\", \"bytes\": 10, \"s\": 1, \"source\": \"%s\"}]}";
  char fmt[512];
  snprintf(fmt, sizeof fmt, "%%s%%s%s", pt);
  snprintf(buf, sizeof buf, fmt, head, src, "b");
  expect(p_measurements, f, buf, "points[0].source: \"b\" is not an id of \"sources\"");
  snprintf(buf, sizeof buf, fmt, head, "\"sources\": [{\"id\": \"a\", \"ref\": \"r\", \"date\": \"2025-13\"}], ", "a");
  expect(p_measurements, f, buf, "sources[0].date: must be YYYY, YYYY-MM or YYYY-MM-DD, got \"2025-13\"");
  snprintf(buf, sizeof buf, fmt, head, "\"sources\": [{\"id\": \"a\", \"ref\": \"r\", \"date\": \"25\"}], ", "a");
  expect(p_measurements, f, buf, "sources[0].date");
  snprintf(buf, sizeof buf, fmt, head, "\"sources\": [{\"id\": \"a\", \"date\": \"2025\"}], ", "a");
  expect(p_measurements, f, buf, "sources[0].ref");
  snprintf(buf, sizeof buf, fmt, head, "\"sources\": [{\"id\": \"a\", \"ref\": \"r\", \"date\": \"2025\"}, "
           "{\"id\": \"a\", \"ref\": \"q\", \"date\": \"2024\"}], ", "a");
  expect(p_measurements, f, buf, "sources[1].id: \"a\" already names sources[0]");
  snprintf(buf, sizeof buf, fmt, head, "\"sources\": [7], ", "a");
  expect(p_measurements, f, buf, "sources[0]");
  snprintf(buf, sizeof buf, fmt, head, "\"retrieved\": \"2026-11\", ", "a");
  expect(p_measurements, f, buf, "retrieved: must be a date YYYY-MM-DD, got \"2026-11\"");
  snprintf(buf, sizeof buf, "%s\"applies\": [\"gemm_eff_max\", \"speed\"], \"points\": []}", head);
  expect(p_measurements, f, buf, "applies[1]: must be gemm_eff_max, gemm_half_flops, mem_eff, launch_us, gemm_out_k or gemm_sustained_eff");
  snprintf(buf, sizeof buf, "%s\"applies\": [], \"points\": []}", head);
  expect(p_measurements, f, buf, "applies: empty");
}

static void test_report(void)
{
  const char *f = "report.json";
  expect(p_report, f, "{\"stages\": []}", "iteration_time_s");
  expect(p_report, f, "{\"iteration_time_s\": 0}", "iteration_time_s");
  expect(p_report, f, "{\"iteration_time_s\": 1, \"stages\": [{\"stage\": 0, \"fwd_s\": 1, \"bwd_s\": null}]}",
         "stages[0].bwd_s");
  expect(p_report, f, "{\"iteration_time_s\": 1, \"stages\": [{\"stage\": 1.5, \"fwd_s\": 1, \"bwd_s\": 1}]}",
         "stages[0].stage");
}

/* Random truncations and byte flips of a valid file never crash. */
static void test_mutations(void)
{
  const char *good =
      "{\"backend\": \"cpu\", \"iteration_time_s\": 0.5, \"iterations_s\": [0.5, 0.6],"
      " \"stages\": [{\"pipeline\": 0, \"stage\": 0, \"fwd_s\": 0.1, \"bwd_s\": 0.2}],"
      " \"kernels\": [{\"exec\": 0, \"stage\": 0, \"op\": 3, \"kind\": \"gemm\", \"phase\": \"bwd\","
      " \"predicted_s\": 0.01, \"measured_s\": 0.012}],"
      " \"tasks\": [{\"name\": \"fwd\", \"exec\": 0, \"device\": 0, \"stage\": 0, \"mb\": 0, \"chunk\": 0,"
      " \"t0_s\": 0, \"t1_s\": 0.1}]}";
  size_t n = strlen(good);
  char *buf = malloc(n + 1);
  uint64_t s = 99;
  int ok = 0;
  for (int it = 0; it < 2000; it++) {
    memcpy(buf, good, n + 1);
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t pos = (size_t)(s >> 33) % n;
    if (it % 2)
      buf[pos] = '\0';
    else
      buf[pos] = (char)(' ' + (int)((s >> 20) % 90));
    hs_measured_t m;
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    if (hs_measured_parse(buf, "x.json", &m, &err) == HS_OK)
      ok++;
    else
      CHECK(err.msg[0] != '\0');
    hs_measured_destroy(&m);
  }
  CHECK(ok > 0 && ok < 2000);
  free(buf);
}

/* The CUDA backend on this machine: either not built (message says so) or
 * built and refusing (no device visible / ranks mismatch). Never a crash. */
static void test_cuda_refuses_cleanly(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t p;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&p);
  char mpath[4096];
  hs_strlcpy(mpath, hs_test_data("validate/tiny-gpt.json"), sizeof mpath);
  CHECK(hs_model_load(mpath, 0, &m, &err) == HS_OK);
  CHECK(hs_cluster_load(hs_test_data("validate/cpu2.json"), &c, &err) == HS_OK);
  CHECK(hs_plan_load(hs_test_data("validate/pipeline2.json"), &p, &err) == HS_OK);
  hs_taskgraph_t *tg = NULL;
  CHECK(hs_taskgraph_new(&m, &c, &p, &tg, &err) == HS_OK);
  hs_measured_t meas;
  bool root = false;
  hs_status_t st = hs_replay_cuda(tg, &m, NULL, &meas, &root, &err);
  if (!hs_cuda_backend_built()) {
    CHECK(st == HS_EUNSUPPORTED);
    CHECK_CONTAINS(err.msg, "built without CUDA/NCCL");
  } else if (getenv("OMPI_COMM_WORLD_SIZE") == NULL && getenv("PMI_SIZE") == NULL) {
    /* a two-device plan in a process that mpirun did not start */
    CHECK(st == HS_EINVAL);
    CHECK_CONTAINS(err.msg, "plan needs 2 ranks");
    CHECK_CONTAINS(err.msg, "mpirun gave 1");
  }
  fprintf(stderr, "  cuda backend, 2-device plan: %s\n", st == HS_OK ? "ran" : err.msg);
  hs_measured_destroy(&meas);
  /* one device: either it runs (a GPU is here) or says there is none */
  hs_replay_opts_t ro;
  hs_replay_opts_init(&ro);
  ro.only_stage = 0;
  ro.iterations = 1;
  hs_error_init(&err);
  st = hs_replay_cuda(tg, &m, &ro, &meas, &root, &err);
  if (hs_cuda_backend_built() && st != HS_OK) {
    CHECK(st == HS_EINVAL);
    CHECK_CONTAINS(err.msg, "no CUDA device visible");
  }
  fprintf(stderr, "  cuda backend, one stage: %s\n", st == HS_OK ? "ran" : err.msg);
  hs_measured_destroy(&meas);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_error_init(&err);
  st = hs_microbench_cuda(NULL, &ms, &root, &err);
  if (!hs_cuda_backend_built())
    CHECK(st == HS_EUNSUPPORTED);
  hs_measurements_destroy(&ms);
  hs_taskgraph_free(tg);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* issue #32: subnormal measured values passed "> 0" and printed "+inf%" /
 * "MAPE inf%": every measured value is a normal positive number, and a
 * relative error that overflows is left out ("-", null), never inf */
static void test_subnormal_measured(void)
{
  const char *f = "measured.json";
  expect(p_measured, f, "{\"iteration_time_s\": 5e-324}", "iteration_time_s: must be a positive normal number");
  expect(p_measured, f, "{\"iteration_time_s\": 2e-310}", "(not subnormal)");
  expect(p_measured, f, "{\"iterations_s\": [1, 4e-320]}", "iterations_s[1]");
  expect(p_measured, f, "{\"iterations_s\": [1, 2], \"speed_probe\": {\"replay_s\": 1e-315}}",
         "speed_probe.replay_s");
  expect(p_measured, f, "{\"iterations_s\": [1, 2], \"speed_probe\": {\"replay_s\": 1, \"iterations_s\": [1, 1e-320]}}",
         "speed_probe.iterations_s[1]");
  expect(p_measured, f, "{\"iteration_time_s\": 1, \"compute_s\": 1e-320, \"comm_exposed_s\": 0, \"idle_s\": 0}",
         "compute_s: must be 0 or a positive normal number");
  const char *head = "{\"gpu\": \"X\", \"peak_tflops\": {\"bf16\": 100}, \"mem_bw_GBps\": 1000, ";
  char buf[512];
  snprintf(buf, sizeof buf, "%s\"points\": [{\"kind\": \"mem\", \"bytes\": 10, \"s\": 1e-320}]}", head);
  expect(p_measurements, "m.json", buf, "points[0].s");
  /* the smallest normal measured time against a large prediction: the
   * quotient overflows; the comparison leaves the error out */
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_measured_t m;
  CHECK_MSG(hs_measured_parse("{\"iteration_time_s\": 2.3e-308, \"kernels\": [{\"op\": 1, \"kind\": "
                              "\"gemm\", \"phase\": \"fwd\", \"predicted_s\": 10, \"measured_s\": "
                              "2.3e-308}]}", "m.json", &m, &err) == HS_OK, "%s", err.msg);
  hs_report_view_t v;
  hs_report_view_init(&v);
  v.iteration_time_s = 10.0;
  hs_comparison_t c;
  CHECK_MSG(hs_compare(&v, &m, &c, &err) == HS_OK, "%s", err.msg);
  CHECK(isnan(c.iteration_error));
  CHECK(c.verdict == HS_VERDICT_NONE);
  CHECK(!isinf(c.error_lo) && !isinf(c.error_hi));
  for (int32_t i = 0; i < c.n; i++)
    CHECK_MSG(!isinf(c.rows[i].error), "row %s: error %g", c.rows[i].what, c.rows[i].error);
  CHECK(!isinf(c.gemm_median_abs_error) && !isinf(c.kernel_median_abs_error));
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  hs_comparison_print(&c, fp);
  fclose(fp);
  CHECK(text && !strstr(text, "inf") && !strstr(text, "nan"));
  free(text);
  hs_comparison_destroy(&c);
  hs_report_view_destroy(&v);
  hs_measured_destroy(&m);
}

int main(void)
{
  HS_RUN(test_measured_minimal);
  HS_RUN(test_measured);
  HS_RUN(test_subnormal_measured);
  HS_RUN(test_profile_speed_probe);
  HS_RUN(test_measurements);
  HS_RUN(test_report);
  HS_RUN(test_mutations);
  HS_RUN(test_cuda_refuses_cleanly);
  HS_TEST_END();
}
