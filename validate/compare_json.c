/*
 * compare_json.c - the JSON edges of `hetsim validate`: reading what it needs
 * of a simulator report, writing the comparison, and the side-by-side Chrome
 * trace (the simulator's events unchanged, then the measured timeline as
 * processes "measured dev N" with pid 1000000 + N, task names as the
 * simulator writes them: "fwd mb3", "bwd mb0 c1", "optimizer").
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MEASURED_PID0 1000000

hs_status_t hs_report_view_parse(const char *text, const char *file, hs_report_view_t *out,
                                 hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_report_view_init(out);
  out->compute_s = out->comm_exposed_s = out->idle_s = -1.0;
  if (!file)
    file = "report.json";
  hs_jreader_t r = {file, err};
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  HS_CHECK(hs_json_number(&r, j, "", "iteration_time_s", true, 0, HS_JNUM_POSITIVE, 1e12,
                          &out->iteration_time_s));
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "stages", false, &arr, &n));
  if (n > 10000000)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: stages: %d entries", file, n));
  out->stages = hs_calloc((size_t)n + 1, sizeof *out->stages);
  if (!out->stages)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next) {
    char p[48];
    hs_json_path(p, sizeof p, "stages", NULL, out->n_stages);
    hs_meas_stage_t *s = &out->stages[out->n_stages++];
    int64_t v = 0;
    HS_CHECK(hs_json_expect_object(&r, e, p));
    HS_CHECK(hs_json_int(&r, e, p, "pipeline", false, 0, 0, INT32_MAX, &v));
    s->pipeline = (int32_t)v;
    HS_CHECK(hs_json_int(&r, e, p, "stage", true, 0, 0, INT32_MAX, &v));
    s->stage = (int32_t)v;
    HS_CHECK(hs_json_number(&r, e, p, "fwd_s", true, 0, HS_JNUM_NONNEG, 1e12, &s->fwd_s));
    HS_CHECK(hs_json_number(&r, e, p, "bwd_s", true, 0, HS_JNUM_NONNEG, 1e12, &s->bwd_s));
    if (s->pipeline == 0 && s->stage == 0 && cJSON_GetObjectItemCaseSensitive(e, "compute_s")) {
      HS_CHECK(hs_json_number(&r, e, p, "compute_s", true, 0, HS_JNUM_NONNEG, 1e12, &out->compute_s));
      HS_CHECK(hs_json_number(&r, e, p, "comm_exposed_s", false, 0, HS_JNUM_NONNEG, 1e12,
                              &out->comm_exposed_s));
      HS_CHECK(hs_json_number(&r, e, p, "idle_s", false, 0, HS_JNUM_NONNEG, 1e12, &out->idle_s));
    }
  }
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_report_view_destroy(out);
  return st;
}

cJSON *hs_comparison_to_json(const hs_comparison_t *c)
{
  hs_json_oom_clear(); /* members cJSON drops when out of memory fail the whole tree */
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  if (!isnan(c->iteration_error))
    cJSON_AddNumberToObject(j, "iteration_error", c->iteration_error);
  if (!isnan(c->gemm_median_abs_error))
    cJSON_AddNumberToObject(j, "gemm_median_abs_error", c->gemm_median_abs_error);
  if (!isnan(c->kernel_median_abs_error))
    cJSON_AddNumberToObject(j, "kernel_median_abs_error", c->kernel_median_abs_error);
  cJSON_AddStringToObject(j, "verdict", hs_verdict_name(c->verdict));
  cJSON_AddNumberToObject(j, "tolerance", c->tolerance);
  if (!isnan(c->iteration_error)) {
    cJSON_AddNumberToObject(j, "iteration_error_iqr_lo", c->error_lo);
    cJSON_AddNumberToObject(j, "iteration_error_iqr_hi", c->error_hi);
  }
  if (c->speed_ratio > 0) {
    cJSON_AddNumberToObject(j, "speed_ratio", c->speed_ratio);
    cJSON_AddNumberToObject(j, "iteration_error_speed_adjusted", c->iteration_error_speed_adjusted);
  }
  cJSON_AddNumberToObject(j, "runs", c->n_runs);
  const hs_spread_t *sp[2] = {&c->iterations, &c->run_medians};
  const char *sk[2] = {"iterations", "run_medians"};
  for (int k = 0; k < 2; k++) {
    if (k == 1 && c->n_runs < 2)
      continue;
    cJSON *o = cJSON_AddObjectToObject(j, sk[k]);
    if (!o)
      continue;
    cJSON_AddNumberToObject(o, "n", sp[k]->n);
    cJSON_AddNumberToObject(o, "median_s", sp[k]->median);
    cJSON_AddNumberToObject(o, "q1_s", sp[k]->q1);
    cJSON_AddNumberToObject(o, "q3_s", sp[k]->q3);
    cJSON_AddNumberToObject(o, "min_s", sp[k]->min);
    cJSON_AddNumberToObject(o, "max_s", sp[k]->max);
  }
  cJSON *rows = cJSON_AddArrayToObject(j, "rows");
  for (int32_t i = 0; rows && i < c->n; i++) {
    const hs_cmp_row_t *r = &c->rows[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddStringToObject(o, "what", r->what);
    cJSON_AddNumberToObject(o, "count", r->count);
    cJSON_AddNumberToObject(o, "predicted_s", r->predicted_s);
    cJSON_AddNumberToObject(o, "measured_s", r->measured_s);
    if (r->q3_s > 0) {
      cJSON_AddNumberToObject(o, "measured_q1_s", r->q1_s);
      cJSON_AddNumberToObject(o, "measured_q3_s", r->q3_s);
    }
    if (!isnan(r->error))
      cJSON_AddNumberToObject(o, "error", r->error);
    else
      cJSON_AddNullToObject(o, "error");
    cJSON_AddItemToArray(rows, o);
  }
  return hs_json_finish(j);
}

static int tid_of(const char *name)
{
  if (strcmp(name, "act") == 0 || strcmp(name, "grad") == 0)
    return 2;
  if (strstr(name, "all"))
    return 1;
  return 0;
}

hs_status_t hs_compare_trace_write(const char *sim_trace_text, const hs_measured_t *meas,
                                   const char *path, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  cJSON *events = NULL;
  uint8_t *seen = NULL;
  if (sim_trace_text) {
    HS_CHECK(hs_json_parse(sim_trace_text, "trace", &j, err));
    events = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
    if (!cJSON_IsArray(events))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "trace: traceEvents: must be an array"));
  } else {
    j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "displayTimeUnit", "ns") ||
        !(events = cJSON_AddArrayToObject(j, "traceEvents")))
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
  /* process names, once per measured device */
  int32_t max_dev = -1;
  for (int32_t i = 0; i < meas->n_tasks; i++)
    max_dev = HS_MAX(max_dev, meas->tasks[i].device);
  seen = hs_calloc((size_t)max_dev + 2, 1);
  if (!seen)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < meas->n_tasks; i++) {
    int32_t d = meas->tasks[i].device;
    if (d < 0 || seen[d])
      continue;
    seen[d] = 1;
    char name[64];
    snprintf(name, sizeof name, "measured dev %d (%s)", d, meas->backend);
    cJSON *o = cJSON_CreateObject();
    if (!o)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    cJSON_AddItemToArray(events, o);
    cJSON_AddStringToObject(o, "ph", "M");
    cJSON_AddStringToObject(o, "name", "process_name");
    cJSON_AddNumberToObject(o, "pid", MEASURED_PID0 + d);
    cJSON *a = cJSON_AddObjectToObject(o, "args");
    if (a)
      cJSON_AddStringToObject(a, "name", name);
  }
  for (int32_t i = 0; i < meas->n_tasks; i++) {
    const hs_meas_task_t *t = &meas->tasks[i];
    char name[64];
    if (t->mb >= 0 && t->chunk > 0)
      snprintf(name, sizeof name, "%s mb%d c%d", t->name, t->mb, t->chunk);
    else if (t->mb >= 0)
      snprintf(name, sizeof name, "%s mb%d", t->name, t->mb);
    else
      hs_strlcpy(name, t->name, sizeof name);
    cJSON *o = cJSON_CreateObject();
    if (!o)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    cJSON_AddItemToArray(events, o);
    cJSON_AddStringToObject(o, "ph", "X");
    cJSON_AddNumberToObject(o, "pid", MEASURED_PID0 + t->device);
    cJSON_AddNumberToObject(o, "tid", tid_of(t->name));
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddNumberToObject(o, "ts", t->t0_s * 1e6);
    cJSON_AddNumberToObject(o, "dur", (t->t1_s - t->t0_s) * 1e6);
    cJSON *a = cJSON_AddObjectToObject(o, "args");
    if (a && t->predicted_s > 0)
      cJSON_AddNumberToObject(a, "predicted_us", t->predicted_s * 1e6);
    if (a && t->bytes > 0)
      cJSON_AddNumberToObject(a, "bytes", t->bytes);
  }
  HS_CHECK(hs_json_write_file(j, path, err));
cleanup:
  free(seen);
  hs_json_free(j);
  return st;
}
