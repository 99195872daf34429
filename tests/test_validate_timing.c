/*
 * test_validate_timing.c - ctest label "timing": the CPU loop's live
 * figures. A fresh microbenchmark calibration, then replays of five plans,
 * each predicted against measured. It runs alone (RUN_SERIAL), is left out
 * of the default suite (scripts/test.sh runs `ctest -LE timing`), and CI runs
 * it once beside a CPU-bound process (.ci/run), so that a change that breaks
 * the loop's accuracy, or makes it fall apart under load, fails CI.
 *
 * The tolerances come from the measured spread, not from one run: 20 runs of
 * the loop on the 2-core build VM beside a CPU hog while two builds ran
 * (load average 11, 2026-11-24; bench/bench_validate_spread.sh repeats the
 * measurement) gave a GEMM fit R^2 from 0.795 to 0.9997 and per-plan errors
 * from -43% to +30% (iteration: -6% to +8%); an idle VM's host steals
 * vCPUs in bursts that thread CPU time cannot see and put single replays up
 * to 39% over (docs/validation.md), and 40 rounds of the README's loop beside
 * a hog (2026-11-28, tests/cli/validate_timing.sh) ranged from 0.64x to 1.70x
 * predicted/measured, CI's run to 1.73x. So: R^2 above 0.6 and every
 * prediction within a factor of 3 of its measurement, either way
 * (uncalibrated the loop was 10x off; until 2026-11-28 the bound was an error
 * under 67%, which allowed 0.33x but only 1.67x). Under AddressSanitizer,
 * where the replay's own loops are instrumented, the figures are printed
 * only.
 */
#include "validate_fixture.h"

#if defined(__SANITIZE_ADDRESS__)
#define FACTOR 1e9
#define R2_MIN -1e9
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FACTOR 1e9
#define R2_MIN -1e9
#endif
#endif
#ifndef FACTOR
#define FACTOR 3.0 /* predicted / measured within [1/FACTOR, FACTOR] */
#define R2_MIN 0.6 /* GEMM fit of a live microbenchmark */
#endif

static bool within_factor(double predicted, double measured)
{
  return predicted > 0 && measured > 0 && predicted < FACTOR * measured &&
         measured < FACTOR * predicted;
}

static void test_calibrate_live(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_load(g_cluster, &c, &err) == HS_OK);
  hs_measurements_t ms;
  hs_measurements_init(&ms);
  hs_measurements_set_gpu(&ms, hs_cluster_gpu(&c, 0));
  hs_microbench_opts_t mo;
  hs_microbench_opts_init(&mo);
  mo.quick = true;
  mo.repeats = 5;
  CHECK_MSG(hs_microbench_cpu(&mo, &ms, &err) == HS_OK, "%s", err.msg);
  hs_fit_t f;
  fixture_write_profile(&ms, &f);
  CHECK(f.gemm_eff_max > 0 && f.gemm_eff_max <= 1.0);
  CHECK_MSG(f.gemm_r2 > R2_MIN, "GEMM fit R^2 %.4f", f.gemm_r2);
  hs_measurements_destroy(&ms);
  hs_cluster_destroy(&c);
}

static double rel_err(double predicted, double measured)
{
  return (predicted - measured) / measured;
}

static void test_pipeline(void)
{
  world_t w;
  world_load(&w, "validate/pipeline2.json");
  hs_error_t err;
  hs_measured_t meas;
  CHECK_MSG(fixture_replay(&w, 7, -1, &meas, &err) == HS_OK, "%s",
            err.msg);
  hs_report_view_t v;
  view_of(&w.rep, &v);
  hs_comparison_t cmp;
  CHECK(hs_compare(&v, &meas, &cmp, &err) == HS_OK);
  hs_comparison_print(&cmp, stderr);
  CHECK_MSG(within_factor(w.rep.iteration_time_s, meas.iteration_time_s), "iteration: predicted %.6g s, measured %.6g s",
            w.rep.iteration_time_s, meas.iteration_time_s);
  for (int32_t i = 0; i < cmp.n; i++)
    if (strstr(cmp.rows[i].what, "stage"))
      CHECK_MSG(within_factor(cmp.rows[i].predicted_s, cmp.rows[i].measured_s), "%s: %+.1f%%", cmp.rows[i].what,
                100 * cmp.rows[i].error);
  hs_comparison_destroy(&cmp);
  hs_report_view_destroy(&v);
  hs_measured_destroy(&meas);
  world_free(&w);
}

/* One device: the iteration is the sum of its work, and as predicted. */
static void test_single_device(void)
{
  world_t w;
  world_load(&w, "validate/single.json");
  hs_error_t err;
  hs_measured_t meas;
  CHECK_MSG(fixture_replay(&w, 5, -1, &meas, &err) == HS_OK, "%s",
            err.msg);
  double rel = rel_err(w.rep.iteration_time_s, meas.iteration_time_s);
  fprintf(stderr, "  single device: predicted %.6g s measured %.6g s (%+.1f%%)\n",
          w.rep.iteration_time_s, meas.iteration_time_s, 100 * rel);
  CHECK(within_factor(w.rep.iteration_time_s, meas.iteration_time_s));
  double sum = 0.0;
  for (int32_t i = 0; i < meas.n_tasks; i++)
    sum += meas.tasks[i].t1_s - meas.tasks[i].t0_s;
  CHECK_REL(sum, meas.iteration_time_s, 0.05);
  hs_measured_destroy(&meas);
  world_free(&w);
}

/* Each stage timed alone against its simulated stage. */
static void test_stage_isolation(void)
{
  world_t w;
  world_load(&w, "validate/pipeline2.json");
  for (int32_t s = 0; s < 2; s++) {
    hs_error_t err;
    hs_measured_t meas;
    CHECK_MSG(fixture_replay(&w, 0, s, &meas, &err) == HS_OK, "%s",
              err.msg);
    fprintf(stderr, "  stage %d alone: fwd %+.1f%% bwd %+.1f%%\n", s,
            100 * rel_err(w.rep.stages[s].fwd_s, meas.stages[0].fwd_s),
            100 * rel_err(w.rep.stages[s].bwd_s, meas.stages[0].bwd_s));
    CHECK(within_factor(w.rep.stages[s].fwd_s, meas.stages[0].fwd_s));
    CHECK(within_factor(w.rep.stages[s].bwd_s, meas.stages[0].bwd_s));
    hs_measured_destroy(&meas);
  }
  world_free(&w);
}

/* TP, DP and interleaved plans (the collectives are small next to compute). */
static void test_parallel_shapes(void)
{
  for (size_t k = 0; k < HS_ARRAY_LEN(g_parallel_plans); k++) {
    world_t w;
    world_load(&w, g_parallel_plans[k]);
    hs_error_t err;
    hs_measured_t meas;
    CHECK_MSG(fixture_replay(&w, 0, -1, &meas, &err) == HS_OK, "%s",
              err.msg);
    double rel = rel_err(w.rep.iteration_time_s, meas.iteration_time_s);
    fprintf(stderr, "  %-28s predicted %.6g s measured %.6g s (%+.1f%%)\n", g_parallel_plans[k],
            w.rep.iteration_time_s, meas.iteration_time_s, 100 * rel);
    CHECK(within_factor(w.rep.iteration_time_s, meas.iteration_time_s));
    hs_measured_destroy(&meas);
    world_free(&w);
  }
}

int main(void)
{
  fixture_paths();
  HS_RUN(test_calibrate_live);
  HS_RUN(test_pipeline);
  HS_RUN(test_single_device);
  HS_RUN(test_stage_isolation);
  HS_RUN(test_parallel_shapes);
  unlink(g_profile);
  HS_TEST_END();
}
