/*
 * measured_json.c - measured.json: writing and reading the replay's record.
 *
 *   {"backend": "cpu", "model": ..., "cluster": ..., "device": ..., "plan": ...,
 *    "mode": "plan" | "stage K",
 *    "iteration_time_s": median, "iterations_s": [...],
 *    "stages": [{"pipeline", "stage", "fwd_s", "bwd_s", "predicted_fwd_s", "predicted_bwd_s"}],
 *    "kernels": [{"exec", "stage", "op", "kind", "phase", "recompute", "flops", "bytes",
 *                 "predicted_s", "measured_s"}],
 *    "tasks": [{"name", "exec", "device", "stage", "mb", "chunk", "t0_s", "t1_s",
 *               "predicted_s", "bytes"}],
 *    "speed_probe": {"kernel", "replay_s", "calibration_s", "iterations_s": [...]}}
 *
 * Tasks carry the simulator's identities (hs_taskgraph.h). Output order is
 * the record's order, so the same record gives the same bytes.
 *
 * Reading, only the iteration is required: {"iteration_time_s": 31.0} or
 * {"iterations_s": [30.5, 31.0, 31.2]} (the median is then the iteration
 * time). Imports add "source" and a one-rank step breakdown "compute_s",
 * "comm_exposed_s", "idle_s" (docs/validation.md has the schema).
 */
#include "hs_json.h"
#include "validate_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

cJSON *hs_measured_to_json(const hs_measured_t *m)
{
  hs_json_oom_clear(); /* members cJSON drops when out of memory fail the whole tree */
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "backend", m->backend);
  cJSON_AddStringToObject(j, "model", m->model);
  cJSON_AddStringToObject(j, "cluster", m->cluster);
  cJSON_AddStringToObject(j, "device", m->device);
  cJSON_AddStringToObject(j, "plan", m->plan_summary);
  cJSON_AddStringToObject(j, "mode", m->mode);
  cJSON_AddNumberToObject(j, "iteration_time_s", m->iteration_time_s);
  cJSON *its = cJSON_AddArrayToObject(j, "iterations_s");
  for (int32_t i = 0; its && i < m->n_iterations; i++)
    cJSON_AddItemToArray(its, cJSON_CreateNumber(m->iteration_s[i]));
  cJSON *st = cJSON_AddArrayToObject(j, "stages");
  for (int32_t i = 0; st && i < m->n_stages; i++) {
    const hs_meas_stage_t *s = &m->stages[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddNumberToObject(o, "pipeline", s->pipeline);
    cJSON_AddNumberToObject(o, "stage", s->stage);
    cJSON_AddNumberToObject(o, "fwd_s", s->fwd_s);
    cJSON_AddNumberToObject(o, "bwd_s", s->bwd_s);
    cJSON_AddNumberToObject(o, "predicted_fwd_s", s->predicted_fwd_s);
    cJSON_AddNumberToObject(o, "predicted_bwd_s", s->predicted_bwd_s);
    cJSON_AddItemToArray(st, o);
  }
  cJSON *ks = cJSON_AddArrayToObject(j, "kernels");
  for (int32_t i = 0; ks && i < m->n_kernels; i++) {
    const hs_meas_kernel_t *k = &m->kernels[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddNumberToObject(o, "exec", k->exec);
    cJSON_AddNumberToObject(o, "stage", k->stage);
    cJSON_AddNumberToObject(o, "op", k->op);
    cJSON_AddStringToObject(o, "kind", hs_op_kind_name(k->op_kind));
    cJSON_AddStringToObject(o, "phase", k->phase == HS_PHASE_FWD ? "fwd" : "bwd");
    cJSON_AddBoolToObject(o, "recompute", k->recompute);
    cJSON_AddNumberToObject(o, "flops", k->flops);
    cJSON_AddNumberToObject(o, "bytes", k->bytes);
    cJSON_AddNumberToObject(o, "predicted_s", k->predicted_s);
    cJSON_AddNumberToObject(o, "measured_s", k->measured_s);
    cJSON_AddItemToArray(ks, o);
  }
  if (m->has_breakdown) {
    cJSON_AddNumberToObject(j, "compute_s", m->compute_s);
    cJSON_AddNumberToObject(j, "comm_exposed_s", m->comm_exposed_s);
    cJSON_AddNumberToObject(j, "idle_s", m->idle_s);
  }
  if (m->speed_probe_s > 0) {
    cJSON *pr = cJSON_AddObjectToObject(j, "speed_probe");
    if (pr) {
      cJSON_AddStringToObject(pr, "kernel", HS_PROBE_KERNEL);
      cJSON_AddNumberToObject(pr, "replay_s", m->speed_probe_s);
      if (m->speed_probe_calibration_s > 0)
        cJSON_AddNumberToObject(pr, "calibration_s", m->speed_probe_calibration_s);
      if (m->speed_probe_iter_s)
        hs_json_add(pr, "iterations_s",
                    cJSON_CreateDoubleArray(m->speed_probe_iter_s, m->n_iterations));
    }
  }
  cJSON *ts = cJSON_AddArrayToObject(j, "tasks");
  for (int32_t i = 0; ts && i < m->n_tasks; i++) {
    const hs_meas_task_t *t = &m->tasks[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddNumberToObject(o, "exec", t->exec);
    cJSON_AddNumberToObject(o, "device", t->device);
    cJSON_AddNumberToObject(o, "stage", t->stage);
    cJSON_AddNumberToObject(o, "mb", t->mb);
    cJSON_AddNumberToObject(o, "chunk", t->chunk);
    cJSON_AddNumberToObject(o, "t0_s", t->t0_s);
    cJSON_AddNumberToObject(o, "t1_s", t->t1_s);
    cJSON_AddNumberToObject(o, "predicted_s", t->predicted_s);
    cJSON_AddNumberToObject(o, "bytes", t->bytes);
    cJSON_AddItemToArray(ts, o);
  }
  return hs_json_finish(j);
}

#define MAX_ITEMS 10000000

static hs_status_t get_i32(const hs_jreader_t *r, const cJSON *o, const char *p, const char *key,
                           bool req, int64_t lo, int32_t *out)
{
  int64_t v = 0;
  hs_status_t st = hs_json_int(r, o, p, key, req, lo, lo, INT32_MAX, &v);
  *out = (int32_t)v;
  return st;
}

/* The keys of measured.json's objects (unknown ones are warned about). */
static const char *const kprobe[] = {"kernel", "replay_s", "calibration_s", "iterations_s",
                                     NULL};
static const char *const kstage[] = {"pipeline", "stage", "fwd_s", "bwd_s", "predicted_fwd_s",
                                     "predicted_bwd_s", NULL};
static const char *const kkern[] = {"exec", "stage", "op", "kind", "phase", "recompute", "flops",
                                    "bytes", "predicted_s", "measured_s", NULL};
static const char *const ktask[] = {"name", "exec", "device", "stage", "mb", "chunk", "t0_s",
                                    "t1_s", "predicted_s", "bytes", NULL};

/* iterations_s (each positive, at most MAX_ITEMS) and iteration_time_s
 * (required without them, else their median), and one rank's step
 * breakdown when compute_s is there. */
static hs_status_t parse_iterations(const hs_jreader_t *r, const cJSON *j, hs_measured_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(r, j, "", "iterations_s", false, &arr, &n));
  /* required unless iterations_s gives the iterations */
  HS_CHECK(hs_json_number(r, j, "", "iteration_time_s", !arr || n == 0, 0, HS_JNUM_POSITIVE, 1e9,
                          &out->iteration_time_s));
  if (n > MAX_ITEMS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: iterations_s: %d entries (max %d)", file, n, MAX_ITEMS));
  out->iteration_s = hs_calloc((size_t)n + 1, sizeof(double));
  if (!out->iteration_s)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next) {
    if (!cJSON_IsNumber(e) || !isnormal(e->valuedouble) || !(e->valuedouble > 0) ||
        e->valuedouble > 1e9)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: iterations_s[%d]: must be a positive number of seconds",
                           file, out->n_iterations));
    out->iteration_s[out->n_iterations++] = e->valuedouble;
  }
  if (!cJSON_GetObjectItemCaseSensitive(j, "iteration_time_s")) {
    hs_spread_t sp;
    if (hs_spread_of(out->iteration_s, (size_t)out->n_iterations, &sp) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    out->iteration_time_s = sp.median;
  }
  if (cJSON_GetObjectItemCaseSensitive(j, "compute_s")) {
    out->has_breakdown = true;
    HS_CHECK(hs_json_number(r, j, "", "compute_s", true, 0, HS_JNUM_NONNEG, 1e9, &out->compute_s));
    HS_CHECK(hs_json_number(r, j, "", "comm_exposed_s", true, 0, HS_JNUM_NONNEG, 1e9,
                            &out->comm_exposed_s));
    HS_CHECK(hs_json_number(r, j, "", "idle_s", true, 0, HS_JNUM_NONNEG, 1e9, &out->idle_s));
  }
cleanup:
  return st;
}

/* The optional speed_probe: replay_s, calibration_s, and iterations_s (one
 * per iteration of iterations_s). */
static hs_status_t parse_probe(const hs_jreader_t *r, const cJSON *j, hs_measured_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *pr = NULL;
  HS_CHECK(hs_json_object(r, j, "", "speed_probe", false, &pr));
  if (pr) {
    hs_json_warn_unknown(r, pr, "speed_probe", kprobe);
    HS_CHECK(hs_json_number(r, pr, "speed_probe", "replay_s", true, 0, HS_JNUM_POSITIVE, 1e3,
                            &out->speed_probe_s));
    HS_CHECK(hs_json_number(r, pr, "speed_probe", "calibration_s", false, 0, HS_JNUM_POSITIVE,
                            1e3, &out->speed_probe_calibration_s));
    const cJSON *pa = NULL;
    int np = 0;
    HS_CHECK(hs_json_array(r, pr, "speed_probe", "iterations_s", false, &pa, &np));
    if (pa && np != out->n_iterations)
      HS_FAIL(hs_error_set(err, HS_EINVAL,
                           "%s: speed_probe.iterations_s: %d entries, but iterations_s has %d",
                           file, np, out->n_iterations));
    if (pa) {
      out->speed_probe_iter_s = hs_calloc((size_t)np + 1, sizeof(double));
      if (!out->speed_probe_iter_s)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
      int q = 0;
      for (const cJSON *e = pa->child; e; e = e->next, q++) {
        if (!cJSON_IsNumber(e) || !isnormal(e->valuedouble) || !(e->valuedouble > 0) ||
            e->valuedouble > 1e3)
          HS_FAIL(hs_error_set(err, HS_EINVAL,
                               "%s: speed_probe.iterations_s[%d]: must be a positive number of "
                               "seconds (<= 1000)", file, q));
        out->speed_probe_iter_s[q] = e->valuedouble;
      }
    }
  }
cleanup:
  return st;
}

/* The optional stages array: per stage, measured and predicted fwd/bwd. */
static hs_status_t parse_stages(const hs_jreader_t *r, const cJSON *j, hs_measured_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(r, j, "", "stages", false, &arr, &n));
  if (n > MAX_ITEMS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: stages: %d entries (max %d)", file, n, MAX_ITEMS));
  out->stages = hs_calloc((size_t)n + 1, sizeof *out->stages);
  if (!out->stages)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next) {
    char p[64];
    hs_json_path(p, sizeof p, "stages", NULL, out->n_stages);
    hs_meas_stage_t *s = &out->stages[out->n_stages++];
    HS_CHECK(hs_json_expect_object(r, e, p));
    hs_json_warn_unknown(r, e, p, kstage);
    HS_CHECK(get_i32(r, e, p, "pipeline", false, 0, &s->pipeline));
    HS_CHECK(get_i32(r, e, p, "stage", true, 0, &s->stage));
    HS_CHECK(hs_json_number(r, e, p, "fwd_s", true, 0, HS_JNUM_NONNEG, 1e9, &s->fwd_s));
    HS_CHECK(hs_json_number(r, e, p, "bwd_s", true, 0, HS_JNUM_NONNEG, 1e9, &s->bwd_s));
    HS_CHECK(hs_json_number(r, e, p, "predicted_fwd_s", false, 0, HS_JNUM_NONNEG, 1e9,
                            &s->predicted_fwd_s));
    HS_CHECK(hs_json_number(r, e, p, "predicted_bwd_s", false, 0, HS_JNUM_NONNEG, 1e9,
                            &s->predicted_bwd_s));
  }
cleanup:
  return st;
}

/* The optional kernels array: per kernel entry its op, kind, phase, work and
 * predicted and measured seconds. */
static hs_status_t parse_kernels(const hs_jreader_t *r, const cJSON *j, hs_measured_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(r, j, "", "kernels", false, &arr, &n));
  if (n > MAX_ITEMS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: kernels: %d entries (max %d)", file, n, MAX_ITEMS));
  out->kernels = hs_calloc((size_t)n + 1, sizeof *out->kernels);
  if (!out->kernels)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next) {
    char p[64], kind[32], phase[8];
    hs_json_path(p, sizeof p, "kernels", NULL, out->n_kernels);
    hs_meas_kernel_t *k = &out->kernels[out->n_kernels++];
    HS_CHECK(hs_json_expect_object(r, e, p));
    hs_json_warn_unknown(r, e, p, kkern);
    HS_CHECK(get_i32(r, e, p, "exec", false, 0, &k->exec));
    HS_CHECK(get_i32(r, e, p, "stage", false, 0, &k->stage));
    HS_CHECK(get_i32(r, e, p, "op", true, 0, &k->op));
    HS_CHECK(hs_json_string(r, e, p, "kind", true, "", kind, sizeof kind));
    if (hs_op_kind_parse(kind, &k->op_kind) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.kind: unknown op kind \"%s\"", file, p, kind));
    HS_CHECK(hs_json_string(r, e, p, "phase", true, "", phase, sizeof phase));
    if (strcmp(phase, "fwd") != 0 && strcmp(phase, "bwd") != 0)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.phase: must be \"fwd\" or \"bwd\", got \"%s\"",
                           file, p, phase));
    k->phase = strcmp(phase, "bwd") == 0 ? HS_PHASE_BWD : HS_PHASE_FWD;
    HS_CHECK(hs_json_bool(r, e, p, "recompute", false, false, &k->recompute));
    HS_CHECK(hs_json_number(r, e, p, "flops", false, 0, HS_JNUM_NONNEG, 1e30, &k->flops));
    HS_CHECK(hs_json_number(r, e, p, "bytes", false, 0, HS_JNUM_NONNEG, 1e30, &k->bytes));
    HS_CHECK(hs_json_number(r, e, p, "predicted_s", true, 0, HS_JNUM_NONNEG, 1e9, &k->predicted_s));
    HS_CHECK(hs_json_number(r, e, p, "measured_s", true, 0, HS_JNUM_NONNEG, 1e9, &k->measured_s));
  }
cleanup:
  return st;
}

/* The optional tasks array: the timeline, each task ending no earlier than
 * it starts. */
static hs_status_t parse_tasks(const hs_jreader_t *r, const cJSON *j, hs_measured_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(r, j, "", "tasks", false, &arr, &n));
  if (n > MAX_ITEMS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: tasks: %d entries (max %d)", file, n, MAX_ITEMS));
  out->tasks = hs_calloc((size_t)n + 1, sizeof *out->tasks);
  if (!out->tasks)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next) {
    char p[64];
    hs_json_path(p, sizeof p, "tasks", NULL, out->n_tasks);
    hs_meas_task_t *t = &out->tasks[out->n_tasks++];
    HS_CHECK(hs_json_expect_object(r, e, p));
    hs_json_warn_unknown(r, e, p, ktask);
    HS_CHECK(hs_json_string(r, e, p, "name", true, "", t->name, sizeof t->name));
    HS_CHECK(get_i32(r, e, p, "exec", false, 0, &t->exec));
    HS_CHECK(get_i32(r, e, p, "device", true, 0, &t->device));
    HS_CHECK(get_i32(r, e, p, "stage", false, 0, &t->stage));
    HS_CHECK(get_i32(r, e, p, "mb", false, -1, &t->mb));
    HS_CHECK(get_i32(r, e, p, "chunk", false, -1, &t->chunk));
    HS_CHECK(hs_json_number(r, e, p, "t0_s", true, 0, HS_JNUM_ANY, 1e9, &t->t0_s));
    HS_CHECK(hs_json_number(r, e, p, "t1_s", true, 0, HS_JNUM_ANY, 1e9, &t->t1_s));
    if (t->t1_s < t->t0_s)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.t1_s: ends before t0_s (%g < %g)", file, p,
                           t->t1_s, t->t0_s));
    HS_CHECK(hs_json_number(r, e, p, "predicted_s", false, 0, HS_JNUM_NONNEG, 1e9, &t->predicted_s));
    HS_CHECK(hs_json_number(r, e, p, "bytes", false, 0, HS_JNUM_NONNEG, 1e30, &t->bytes));
  }
cleanup:
  return st;
}

hs_status_t hs_measured_parse(const char *text, const char *file, hs_measured_t *out,
                              hs_error_t *err)
{
  static const char *const known[] = {"backend", "model", "cluster", "device", "plan", "mode",
                                      "iteration_time_s", "iterations_s", "stages", "kernels",
                                      "tasks", "source", "compute_s", "comm_exposed_s",
                                      "idle_s", "speed_probe", NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_measured_init(out);
  if (!file)
    file = "measured.json";
  hs_jreader_t r = {file, err};
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  HS_CHECK(hs_json_string(&r, j, "", "backend", false, "", out->backend, sizeof out->backend));
  HS_CHECK(hs_json_string(&r, j, "", "model", false, "", out->model, sizeof out->model));
  HS_CHECK(hs_json_string(&r, j, "", "cluster", false, "", out->cluster, sizeof out->cluster));
  HS_CHECK(hs_json_string(&r, j, "", "device", false, "", out->device, sizeof out->device));
  HS_CHECK(hs_json_string(&r, j, "", "plan", false, "", out->plan_summary, sizeof out->plan_summary));
  HS_CHECK(hs_json_string(&r, j, "", "mode", false, "plan", out->mode, sizeof out->mode));
  HS_CHECK(parse_iterations(&r, j, out));
  HS_CHECK(parse_probe(&r, j, out));
  HS_CHECK(parse_stages(&r, j, out));
  HS_CHECK(parse_kernels(&r, j, out));
  HS_CHECK(parse_tasks(&r, j, out));
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_measured_destroy(out);
  return st;
}

hs_status_t hs_measured_load(const char *path, hs_measured_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_measured_init(out);
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st == HS_OK)
    st = hs_measured_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}
