/*
 * fuzz_plan.c - plan files and the plan validator: hs_plan_parse, the JSON
 * round trip (hs_plan_to_json must parse back), hs_plan_validate against the
 * fixed 4-layer model and 8-GPU cluster of fuzz_fixture.h, and for a valid
 * plan of at most 64 microbatches per pipeline the memory model and a full
 * simulation, whose report must hold only finite numbers and be the same
 * bytes when the plan is simulated again (abort otherwise: the fuzzer
 * reports it as a crash).
 */
#include "fuzz_fixture.h"
#include "fuzz_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static void check_finite(const char *what, double v)
{
  if (!isfinite(v)) {
    fprintf(stderr, "report: %s is not finite (%g)\n", what, v);
    abort();
  }
}

static void check_report(const hs_report_t *r)
{
  check_finite("iteration_time_s", r->iteration_time_s);
  check_finite("samples_per_s", r->samples_per_s);
  check_finite("tokens_per_s", r->tokens_per_s);
  check_finite("tflops_per_gpu", r->tflops_per_gpu);
  check_finite("hw_tflops_per_gpu", r->hw_tflops_per_gpu);
  check_finite("mfu", r->mfu);
  check_finite("bubble_fraction", r->bubble_fraction);
  check_finite("max_peak_memory_bytes", r->max_peak_memory_bytes);
  check_finite("cost_usd_per_iteration", r->cost_usd_per_iteration);
  check_finite("cost_usd_per_million_tokens", r->cost_usd_per_million_tokens);
  for (int32_t i = 0; i < r->n_stages; i++) {
    const hs_stage_report_t *s = &r->stages[i];
    check_finite("stages[].fwd_s", s->fwd_s);
    check_finite("stages[].bwd_s", s->bwd_s);
    check_finite("stages[].compute_s", s->compute_s);
    check_finite("stages[].comm_exposed_s", s->comm_exposed_s);
    check_finite("stages[].idle_s", s->idle_s);
    check_finite("stages[].peak_memory_bytes", s->peak_memory_bytes);
  }
  for (int32_t i = 0; i < r->n_links; i++)
    check_finite("links[].utilisation", r->links[i].utilisation);
}

static bool small_enough(const hs_plan_t *p)
{
  int64_t work = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    if (p->pipelines[i].n_microbatches > 64)
      return false;
    work += (int64_t)p->pipelines[i].n_microbatches * p->pipelines[i].n_stages;
  }
  return work <= 1024;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_model_t model;
  fuzz_fixture_model(&model);
  const hs_cluster_t *cluster = fuzz_fixture_cluster();
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_plan_t plan;
  hs_plan_init(&plan);
  if (hs_plan_parse(text, "fuzz-plan.json", &plan, &err) != HS_OK)
    goto done;
  char summary[256];
  hs_plan_summary(&plan, summary, sizeof summary);
  (void)hs_plan_global_batch(&plan);
  (void)hs_plan_n_devices(&plan);

  cJSON *j = hs_plan_to_json(&plan);
  char *js = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  if (js) {
    hs_plan_t back;
    hs_plan_init(&back);
    hs_error_t e2;
    hs_error_init(&e2);
    e2.warn_fp = NULL;
    hs_status_t st = hs_plan_parse(js, "roundtrip.json", &back, &e2);
    if (st != HS_OK && st != HS_ENOMEM) {
      fprintf(stderr, "plan round trip failed: %s\n%s\n", e2.msg, js);
      abort();
    }
    if (st == HS_OK && back.n_pipelines != plan.n_pipelines) {
      fprintf(stderr, "plan round trip: %d pipelines became %d\n", plan.n_pipelines,
              back.n_pipelines);
      abort();
    }
    hs_plan_destroy(&back);
    free(js);
  }

  if (hs_plan_validate(&plan, &model, cluster, "fuzz-plan.json", &err) != HS_OK)
    goto done;
  if (!small_enough(&plan))
    goto done;
  double mem[8] = {0};
  if (cluster->n_devices <= 8)
    (void)hs_memory_per_device(&model, cluster, &plan, mem, &err);
  hs_error_clear(&err);
  hs_sim_opts_t opts;
  hs_sim_opts_init(&opts);
  hs_report_t rep;
  hs_report_init(&rep);
  if (hs_simulate(&model, cluster, &plan, &opts, &rep, &err) == HS_OK) {
    check_report(&rep);
    cJSON *rj = hs_report_to_json(&rep);
    char *rs = rj ? cJSON_PrintUnformatted(rj) : NULL;
    cJSON_Delete(rj);
    /* Determinism: the same plan simulated again gives the same bytes. */
    hs_report_t rep2;
    hs_report_init(&rep2);
    if (rs && hs_simulate(&model, cluster, &plan, &opts, &rep2, &err) == HS_OK) {
      cJSON *rj2 = hs_report_to_json(&rep2);
      char *rs2 = rj2 ? cJSON_PrintUnformatted(rj2) : NULL;
      cJSON_Delete(rj2);
      if (rs2 && strcmp(rs, rs2) != 0) {
        fprintf(stderr, "simulation not deterministic:\n%s\n%s\n", rs, rs2);
        abort();
      }
      free(rs2);
    }
    hs_report_destroy(&rep2);
    free(rs);
  }
  hs_report_destroy(&rep);
done:
  hs_plan_destroy(&plan);
  free(text);
  return 0;
}
