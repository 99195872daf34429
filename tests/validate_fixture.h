/*
 * validate_fixture.h - shared set-up of the CPU validation tests
 * (test_validate_loop: structure, on a recorded calibration; and
 * test_validate_timing: live timing, label "timing"): the tiny GPT on the
 * two-device CPU cluster, a profile, and a plan simulated and lowered.
 */
#ifndef HS_VALIDATE_FIXTURE_H
#define HS_VALIDATE_FIXTURE_H

#include "hs_json.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <unistd.h>

static char g_model[4096], g_cluster[4096], g_profile[64];

static void fixture_paths(void)
{
  hs_strlcpy(g_model, hs_test_data("validate/tiny-gpt.json"), sizeof g_model);
  hs_strlcpy(g_cluster, hs_test_data("validate/cpu2.json"), sizeof g_cluster);
}

/* Fits `ms` and writes the profile to a temporary file (g_profile). */
static void fixture_write_profile(const hs_measurements_t *ms, hs_fit_t *f)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK_MSG(hs_calibrate_fit(ms, HS_DTYPE_FP32, f, &err) == HS_OK, "%s", err.msg);
  fprintf(stderr, "  fit: gemm_eff_max %.4g half %.4g mem_eff %.4g launch %.3g us; gemm R2 %.4f "
          "median err %.1f%%\n", f->gemm_eff_max, f->gemm_half_flops, f->mem_eff, f->launch_us,
          f->gemm_r2, 100 * f->gemm_median_rel_err);
  cJSON *j = hs_profile_to_json(ms, f);
  hs_strlcpy(g_profile, "/tmp/hs_test_loop_profile_XXXXXX", sizeof g_profile);
  int fd = mkstemp(g_profile);
  CHECK(fd >= 0);
  close(fd);
  CHECK(hs_json_write_file(j, g_profile, &err) == HS_OK);
  hs_json_free(j);
}

typedef struct world {
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t p;
  hs_report_t rep;
  hs_taskgraph_t *tg;
} world_t;

static void world_load(world_t *w, const char *plan)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_init(&w->m);
  hs_cluster_init(&w->c);
  hs_plan_init(&w->p);
  hs_report_init(&w->rep);
  w->tg = NULL;
  CHECK(hs_model_load(g_model, 0, &w->m, &err) == HS_OK);
  CHECK(hs_cluster_load(g_cluster, &w->c, &err) == HS_OK);
  CHECK_MSG(hs_profile_apply_file(g_profile, &w->c, &err) == HS_OK, "%s", err.msg);
  CHECK(hs_plan_load(hs_test_data(plan), &w->p, &err) == HS_OK);
  CHECK_MSG(hs_simulate(&w->m, &w->c, &w->p, NULL, &w->rep, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(hs_taskgraph_new(&w->m, &w->c, &w->p, &w->tg, &err) == HS_OK, "%s", err.msg);
}

static void world_free(world_t *w)
{
  hs_taskgraph_free(w->tg);
  hs_report_destroy(&w->rep);
  hs_plan_destroy(&w->p);
  hs_cluster_destroy(&w->c);
  hs_model_destroy(&w->m);
}

/* Replays w on the CPU backend: `iterations` (0 = the default), only one
 * stage when only_stage >= 0. */
static inline hs_status_t fixture_replay(const world_t *w, int32_t iterations, int32_t only_stage,
                                         hs_measured_t *meas, hs_error_t *err)
{
  hs_error_init(err);
  hs_replay_opts_t ro;
  hs_replay_opts_init(&ro);
  if (iterations > 0)
    ro.iterations = iterations;
  if (only_stage >= 0)
    ro.only_stage = only_stage;
  return hs_replay_cpu(w->tg, &w->m, &ro, meas, err);
}

static void view_of(const hs_report_t *r, hs_report_view_t *v)
{
  hs_report_view_init(v);
  v->iteration_time_s = r->iteration_time_s;
  v->stages = calloc((size_t)r->n_stages, sizeof *v->stages);
  v->n_stages = r->n_stages;
  for (int32_t i = 0; i < r->n_stages; i++) {
    v->stages[i].pipeline = r->stages[i].pipeline;
    v->stages[i].stage = r->stages[i].stage;
    v->stages[i].fwd_s = r->stages[i].fwd_s;
    v->stages[i].bwd_s = r->stages[i].bwd_s;
  }
}

/* The TP collectives, bucket all-reduces and fwd/bwd items the task graph
 * asks every rank to run: what a replay must have measured. */
static inline void expected_tasks(const hs_taskgraph_t *tg, int32_t *coll, int32_t *bucket, int32_t *items)
{
  *coll = *bucket = *items = 0;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    for (int32_t i = 0; i < x->n_items; i++) {
      const hs_tg_work_t *wk = &x->work[x->order[i].chunk * 2 + x->order[i].phase];
      for (int32_t q = 0; q < wk->n; q++)
        *coll += wk->e[q].kind == HS_TG_COLL ? x->tp : 0;
    }
    for (int32_t q = 0; q < x->n_buckets; q++)
      *bucket += tg->buckets[x->buckets[q]].tp; /* TP ranks that take part */
    *items += x->n_items * x->tp;
  }
}

static const char *const g_parallel_plans[] = {"validate/tp2.json", "validate/dp2.json",
                                               "validate/interleaved.json"};

#endif
