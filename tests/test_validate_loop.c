/*
 * test_validate_loop.c - the whole CPU loop without a GPU, checked for what
 * does not depend on how busy the machine is: calibrate from microbenchmark
 * points recorded on the build machine (tests/data/validate/
 * cpu-measurements.json), simulate, replay on the CPU backend, compare. It
 * asserts the structure of every replay (each rank ran each microbatch's
 * forward and backward once, every collective of the task graph ran,
 * causality across stages, the measured.json round trip, stage isolation)
 * and prints predicted against measured without bounding it: how close they
 * land is a timing question, asserted by test_validate_timing (ctest label
 * "timing", run alone and beside a CPU hog in CI) with a tolerance taken
 * from the measured spread.
 */
#include "validate_fixture.h"

/* The fit of real recorded points: the GEMM curve describes them (R^2 of
 * this recording 0.996) and the figures are a CPU thread's, not a GPU's. */
static void test_calibrate_recorded(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  CHECK_MSG(hs_measurements_load(hs_test_data("validate/cpu-measurements.json"), &ms, &err) == HS_OK,
            "%s", err.msg);
  hs_fit_t f;
  fixture_write_profile(&ms, &f);
  CHECK(f.gemm_eff_max > 0 && f.gemm_eff_max <= 1.0);
  CHECK(f.mem_eff > 0 && f.mem_eff <= 1.0);
  CHECK(f.gemm_r2 > 0.9);
  CHECK(f.gemm_median_rel_err < 0.1);
  hs_measurements_destroy(&ms);
}

static void test_pipeline_loop(void)
{
  world_t w;
  world_load(&w, "validate/pipeline2.json");
  hs_error_t err;
  hs_measured_t meas;
  CHECK_MSG(fixture_replay(&w, 7, -1, &meas, &err) == HS_OK, "%s",
            err.msg);
  CHECK_EQ_INT(meas.n_iterations, 7);
  CHECK(meas.iteration_time_s > 0 && isfinite(meas.iteration_time_s));
  /* the speed probe ran around every timed iteration */
  CHECK(meas.speed_probe_s > 0 && meas.speed_probe_iter_s != NULL);
  for (int32_t i = 0; meas.speed_probe_iter_s && i < meas.n_iterations; i++)
    CHECK(meas.speed_probe_iter_s[i] > 0 && isfinite(meas.speed_probe_iter_s[i]));
  hs_report_view_t v;
  view_of(&w.rep, &v);
  hs_comparison_t cmp;
  CHECK(hs_compare(&v, &meas, &cmp, &err) == HS_OK);
  hs_comparison_print(&cmp, stderr);
  CHECK(isfinite(cmp.iteration_error));
  int32_t stage_rows = 0;
  for (int32_t i = 0; i < cmp.n; i++)
    stage_rows += strstr(cmp.rows[i].what, "stage") != NULL && isfinite(cmp.rows[i].error);
  CHECK_EQ_INT(stage_rows, 4); /* fwd and bwd of both stages, predicted and measured */
  /* identities: each device ran fwd and bwd of every microbatch once; sends
   * of activations and gradients, one per microbatch */
  int fwd[2][4] = {{0}}, bwd[2][4] = {{0}}, act = 0, grad = 0, opt = 0;
  for (int32_t i = 0; i < meas.n_tasks; i++) {
    const hs_meas_task_t *t = &meas.tasks[i];
    CHECK(t->t1_s >= t->t0_s);
    if (strcmp(t->name, "fwd") == 0 && t->mb >= 0 && t->mb < 4)
      fwd[t->device][t->mb]++;
    if (strcmp(t->name, "bwd") == 0 && t->mb >= 0 && t->mb < 4)
      bwd[t->device][t->mb]++;
    act += strcmp(t->name, "act") == 0;
    grad += strcmp(t->name, "grad") == 0;
    opt += strcmp(t->name, "optimizer") == 0;
  }
  for (int d = 0; d < 2; d++)
    for (int mb = 0; mb < 4; mb++)
      CHECK(fwd[d][mb] == 1 && bwd[d][mb] == 1);
  CHECK_EQ_INT(act, 4);
  CHECK_EQ_INT(grad, 4);
  CHECK_EQ_INT(opt, 2);
  /* causality on the timeline: stage 1's forward of mb k starts after stage
   * 0's forward of mb k ended */
  for (int mb = 0; mb < 4; mb++) {
    double end0 = -1, start1 = -1;
    for (int32_t i = 0; i < meas.n_tasks; i++) {
      const hs_meas_task_t *t = &meas.tasks[i];
      if (strcmp(t->name, "fwd") == 0 && t->mb == mb && t->device == 0)
        end0 = t->t1_s;
      if (strcmp(t->name, "fwd") == 0 && t->mb == mb && t->device == 1)
        start1 = t->t0_s;
    }
    CHECK(start1 >= end0);
  }
  /* measured.json round trip */
  cJSON *j = hs_measured_to_json(&meas);
  char *text = cJSON_PrintUnformatted(j);
  hs_measured_t back;
  CHECK(hs_measured_parse(text, "measured.json", &back, &err) == HS_OK);
  CHECK_REL(back.iteration_time_s, meas.iteration_time_s, 1e-12);
  CHECK_EQ_INT(back.n_kernels, meas.n_kernels);
  CHECK_EQ_INT(back.n_tasks, meas.n_tasks);
  CHECK_EQ_INT(back.n_stages, meas.n_stages);
  cJSON *j2 = hs_measured_to_json(&back);
  char *text2 = cJSON_PrintUnformatted(j2);
  CHECK(strcmp(text, text2) == 0);
  free(text2);
  hs_json_free(j2);
  free(text);
  hs_json_free(j);
  hs_measured_destroy(&back);
  hs_comparison_destroy(&cmp);
  hs_report_view_destroy(&v);
  hs_measured_destroy(&meas);
  world_free(&w);
}

/* One device: every microbatch's forward and backward, then the optimizer. */
static void test_single_device(void)
{
  world_t w;
  world_load(&w, "validate/single.json");
  hs_error_t err;
  hs_measured_t meas;
  CHECK_MSG(fixture_replay(&w, 3, -1, &meas, &err) == HS_OK, "%s",
            err.msg);
  int32_t opt = 0, items = 0;
  for (int32_t i = 0; i < meas.n_tasks; i++) {
    CHECK_EQ_INT(meas.tasks[i].device, 0);
    opt += strcmp(meas.tasks[i].name, "optimizer") == 0;
    items += strcmp(meas.tasks[i].name, "fwd") == 0 || strcmp(meas.tasks[i].name, "bwd") == 0;
  }
  CHECK_EQ_INT(opt, 1);
  CHECK_EQ_INT(items, 2 * w.p.pipelines[0].n_microbatches);
  fprintf(stderr, "  single device: predicted %.6g s measured %.6g s (not bounded here)\n",
          w.rep.iteration_time_s, meas.iteration_time_s);
  hs_measured_destroy(&meas);
  world_free(&w);
}

/* Each stage of the pipeline alone: only its device's tasks, in its mode. */
static void test_stage_isolation(void)
{
  world_t w;
  world_load(&w, "validate/pipeline2.json");
  for (int32_t s = 0; s < 2; s++) {
    hs_error_t err;
    hs_measured_t meas;
    CHECK_MSG(fixture_replay(&w, 2, s, &meas, &err) == HS_OK, "%s",
              err.msg);
    CHECK_EQ_INT(meas.n_stages, 1);
    CHECK_EQ_INT(meas.stages[0].stage, s);
    CHECK(strcmp(meas.mode, s ? "stage 1" : "stage 0") == 0);
    for (int32_t i = 0; i < meas.n_tasks; i++)
      CHECK_EQ_INT(meas.tasks[i].device, s);
    CHECK(meas.stages[0].fwd_s > 0 && meas.stages[0].bwd_s > 0);
    hs_measured_destroy(&meas);
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_replay_opts_t ro;
  hs_replay_opts_init(&ro);
  ro.only_stage = 5;
  hs_measured_t meas;
  CHECK(hs_replay_cpu(w.tg, &w.m, &ro, &meas, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "no such stage");
  world_free(&w);
}

/* TP, DP and interleaved plans: every collective of the graph runs (task
 * counts from the task graph) and nothing deadlocks. */
static void test_parallel_shapes(void)
{
  for (size_t k = 0; k < HS_ARRAY_LEN(g_parallel_plans); k++) {
    world_t w;
    world_load(&w, g_parallel_plans[k]);
    hs_error_t err;
    hs_measured_t meas;
    CHECK_MSG(fixture_replay(&w, 2, -1, &meas, &err) == HS_OK, "%s",
              err.msg);
    int32_t want_coll, want_bucket, want_items;
    expected_tasks(w.tg, &want_coll, &want_bucket, &want_items);
    int32_t coll = 0, bucket = 0, items = 0;
    for (int32_t i = 0; i < meas.n_tasks; i++) {
      coll += strcmp(meas.tasks[i].name, "allreduce") == 0;
      bucket += strcmp(meas.tasks[i].name, "grad-allreduce") == 0;
      items += strcmp(meas.tasks[i].name, "fwd") == 0 || strcmp(meas.tasks[i].name, "bwd") == 0;
    }
    CHECK_EQ_INT(coll, want_coll);
    CHECK_EQ_INT(bucket, want_bucket);
    CHECK_EQ_INT(items, want_items);
    fprintf(stderr, "  %-28s predicted %.6g s measured %.6g s, %d TP collectives, %d bucket "
            "all-reduces\n", g_parallel_plans[k], w.rep.iteration_time_s, meas.iteration_time_s,
            coll, bucket);
    hs_measured_destroy(&meas);
    world_free(&w);
  }
}

/* The wall clock runs the same graph. */
static void test_wall_clock_runs(void)
{
  world_t w;
  world_load(&w, "validate/pipeline2.json");
  hs_error_t err;
  hs_error_init(&err);
  hs_replay_opts_t ro;
  hs_replay_opts_init(&ro);
  ro.clock = HS_CLOCK_WALL;
  ro.iterations = 2;
  hs_measured_t meas;
  CHECK_MSG(hs_replay_cpu(w.tg, &w.m, &ro, &meas, &err) == HS_OK, "%s", err.msg);
  CHECK(meas.iteration_time_s > 0);
  CHECK_EQ_INT(meas.n_iterations, 2);
  CHECK_CONTAINS(meas.device, "wall clock");
  hs_measured_destroy(&meas);
  world_free(&w);
}

/* tiny-gpt's head is tied to its embedding. With the embedding's stage on a
 * TP 2 group and the head's on one device, the tied pair's sync runs between
 * the two first devices only (bucket tp 1): the replay must neither wait for
 * a second rank that never comes nor index past the one-device group. */
static void test_tied_pair_mixed_tp(void)
{
  static const char cluster[] =
      "{\"name\": \"cpu-3dev\", \"gpus\": [{\"name\": \"CPU-THREAD\", \"vendor\": \"cpu\","
      " \"memory_GiB\": 4, \"mem_bw_GBps\": 200, \"peak_tflops\": {\"fp32\": 0.2}}],"
      " \"sites\": [{\"name\": \"host\", \"nodes\": [{\"count\": 1, \"gpu\": \"CPU-THREAD\","
      " \"gpus_per_node\": 3, \"intra_node\": {\"GBps\": 5, \"latency_us\": 5}}]}]}";
  static const char plan[] =
      "{\"strategy\": \"manual\", \"schedule\": \"1f1b\", \"precision\": \"fp32\","
      " \"pipelines\": [{\"microbatch_size\": 2, \"microbatches\": 2, \"stages\": ["
      " {\"ops\": [0, 12], \"replicas\": [{\"devices\": [0, 1]}]},"
      " {\"ops\": [12, 24], \"replicas\": [{\"devices\": [2]}]}]}]}";
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t p;
  hs_cluster_init(&c);
  CHECK(hs_model_load(g_model, 0, &m, &err) == HS_OK);
  CHECK_MSG(hs_cluster_parse(cluster, "cpu3.json", &c, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(hs_plan_parse(plan, "mixed-tp.json", &p, &err) == HS_OK, "%s", err.msg);
  hs_taskgraph_t *tg = NULL;
  CHECK_MSG(hs_taskgraph_new(&m, &c, &p, &tg, &err) == HS_OK, "%s", err.msg);
  int32_t pairs = 0;
  for (int32_t b = 0; tg && b < tg->n_buckets; b++)
    if (tg->buckets[b].n_holders == 2 && tg->buckets[b].tp == 1)
      pairs++;
  CHECK_EQ_INT(pairs, 1);
  hs_replay_opts_t ro;
  hs_replay_opts_init(&ro);
  ro.iterations = 1;
  ro.warmup = 0;
  hs_measured_t meas;
  CHECK_MSG(tg && hs_replay_cpu(tg, &m, &ro, &meas, &err) == HS_OK, "%s", err.msg);
  int32_t grad = 0;
  for (int32_t i = 0; tg && i < meas.n_tasks; i++)
    grad += strcmp(meas.tasks[i].name, "grad-allreduce") == 0;
  CHECK_EQ_INT(grad, 2); /* device 0 and device 2; device 1 sits it out */
  if (tg)
    hs_measured_destroy(&meas);
  hs_taskgraph_free(tg);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* The speed-adjusted error against closed forms: a replay whose iterations
 * ran at twice, 2.2 and 1.8 times the calibration's probe time, each taking
 * that many times the predicted 1 s, is exact once scaled (error 0, speed
 * 2x), while its raw error is -50%; without per-iteration probes the median
 * probe scales the median iteration. */
static void test_speed_adjusted(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_report_view_t v;
  hs_report_view_init(&v);
  v.iteration_time_s = 1.0;
  double it[3] = {2.0, 2.2, 1.8}, pr[3] = {0.004, 0.0044, 0.0036};
  hs_measured_t m;
  hs_measured_init(&m);
  hs_strlcpy(m.mode, "plan", sizeof m.mode);
  m.iteration_s = it;
  m.n_iterations = 3;
  m.iteration_time_s = 2.0;
  m.speed_probe_s = 0.004;
  m.speed_probe_calibration_s = 0.002;
  m.speed_probe_iter_s = pr;
  hs_comparison_t cmp;
  CHECK(hs_compare(&v, &m, &cmp, &err) == HS_OK);
  CHECK_REL(cmp.iteration_error, -0.5, 1e-12);
  CHECK_REL(cmp.speed_ratio, 2.0, 1e-12);
  CHECK(fabs(cmp.iteration_error_speed_adjusted) < 1e-12);
  CHECK(cmp.verdict == HS_VERDICT_OFF); /* the verdict stays on the raw error */
  hs_comparison_destroy(&cmp);
  /* the median probe only: 2.0 s at 0.003 / 0.002 = 1.5x -> 1.333 s adjusted */
  m.speed_probe_iter_s = NULL;
  m.speed_probe_s = 0.003;
  CHECK(hs_compare(&v, &m, &cmp, &err) == HS_OK);
  CHECK_REL(cmp.speed_ratio, 1.5, 1e-12);
  CHECK_REL(cmp.iteration_error_speed_adjusted, 1.0 / (2.0 / 1.5) - 1.0, 1e-12);
  hs_comparison_destroy(&cmp);
  /* no calibration probe: no adjustment */
  m.speed_probe_calibration_s = 0;
  CHECK(hs_compare(&v, &m, &cmp, &err) == HS_OK);
  CHECK(cmp.speed_ratio == 0.0);
  hs_comparison_destroy(&cmp);
}

int main(void)
{
  fixture_paths();
  HS_RUN(test_calibrate_recorded);
  HS_RUN(test_speed_adjusted);
  HS_RUN(test_pipeline_loop);
  HS_RUN(test_single_device);
  HS_RUN(test_stage_isolation);
  HS_RUN(test_parallel_shapes);
  HS_RUN(test_wall_clock_runs);
  HS_RUN(test_tied_pair_mixed_tp);
  unlink(g_profile);
  HS_TEST_END();
}
