/*
 * trace_json.c - reads a Chrome trace (the simulator's --trace output, the
 * elastic timelines, or any tool's) for the SVG timeline: complete ("X")
 * events, counters ("C", first numeric arg), and the process_name /
 * thread_name / process_sort_index metadata. Other phases (B/E pairs,
 * instants, flows) are skipped: the chart draws spans and counters.
 */
#include "hs_export.h"
#include "hs_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_EVENTS 50000000

void hs_trace_doc_init(hs_trace_doc_t *d) { memset(d, 0, sizeof *d); }

void hs_trace_doc_destroy(hs_trace_doc_t *d)
{
  if (!d)
    return;
  free(d->spans);
  free(d->labels);
  free(d->counters);
  free(d->sorts);
  memset(d, 0, sizeof *d);
}

/* Integer-valued number member (pid, tid) in [-2^53, 2^53]. */
static bool get_id(const cJSON *e, const char *key, int64_t *out)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
  if (!v) {
    *out = 0;
    return !strcmp(key, "tid"); /* tid may be absent */
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 9007199254740992.0 ||
      v->valuedouble != floor(v->valuedouble))
    return false;
  *out = (int64_t)v->valuedouble;
  return true;
}

static void copy_str(char *dst, size_t n, const cJSON *v)
{
  hs_strlcpy(dst, cJSON_IsString(v) ? v->valuestring : "", n);
}

hs_status_t hs_trace_doc_parse(const char *text, const char *file, hs_trace_doc_t *out,
                               hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *root = NULL;
  size_t scap = 0, lcap = 0, ccap = 0, ocap = 0;
  if (!file)
    file = "trace";
  hs_trace_doc_destroy(out);
  HS_CHECK(hs_json_parse(text, file, &root, err));
  const cJSON *events = root;
  if (cJSON_IsObject(root)) {
    events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    if (!events)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents: required (a Chrome trace object or array)", file));
  }
  if (!cJSON_IsArray(events))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents: must be an array", file));
  int i = 0;
  for (const cJSON *e = events->child; e; e = e->next, i++) {
    if (i >= TRACE_MAX_EVENTS)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: more than %d events", file, TRACE_MAX_EVENTS));
    if (!cJSON_IsObject(e))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d]: must be an object", file, i));
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    if (!cJSON_IsString(ph))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].ph: must be a string", file, i));
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (strcmp(ph->valuestring, "M") == 0) {
      bool thread = cJSON_IsString(name) && strcmp(name->valuestring, "thread_name") == 0;
      bool process = cJSON_IsString(name) && strcmp(name->valuestring, "process_name") == 0;
      if (cJSON_IsString(name) && strcmp(name->valuestring, "process_sort_index") == 0) {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const cJSON *ix = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "sort_index") : NULL;
        int64_t pid;
        if (!get_id(e, "pid", &pid) || !cJSON_IsNumber(ix) || !isfinite(ix->valuedouble) ||
            fabs(ix->valuedouble) > 9e15)
          HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d]: process_sort_index needs an integer pid and a "
                               "numeric args.sort_index", file, i));
        if (hs_reserve((void **)&out->sorts, &ocap, out->n_sorts + 1, sizeof *out->sorts) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
        out->sorts[out->n_sorts++] = (struct hs_trace_sort){pid, (int64_t)ix->valuedouble};
        continue;
      }
      if (!thread && !process)
        continue;
      const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
      const cJSON *lab = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "name") : NULL;
      int64_t pid, tid;
      if (!get_id(e, "pid", &pid) || !get_id(e, "tid", &tid) || !cJSON_IsString(lab))
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d]: %s needs an integer pid and args.name",
                             file, i, name->valuestring));
      if (hs_reserve((void **)&out->labels, &lcap, out->n_labels + 1, sizeof *out->labels) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
      struct hs_trace_label *l = &out->labels[out->n_labels++];
      memset(l, 0, sizeof *l);
      l->pid = pid;
      l->tid = thread ? tid : 0;
      l->thread = thread;
      copy_str(l->name, sizeof l->name, lab);
      continue;
    }
    if (strcmp(ph->valuestring, "C") == 0) {
      /* a counter: its first numeric arg; others are skipped, as Perfetto's
       * tracks show them separately */
      const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
      const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
      const cJSON *v = NULL;
      for (const cJSON *a = cJSON_IsObject(args) ? args->child : NULL; a && !v; a = a->next)
        if (cJSON_IsNumber(a) && isfinite(a->valuedouble))
          v = a;
      hs_tcounter_t cn;
      memset(&cn, 0, sizeof cn);
      if (!v || !get_id(e, "pid", &cn.pid) || !cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) ||
          fabs(ts->valuedouble) > 1e15)
        continue;
      cn.ts_us = ts->valuedouble;
      cn.value = v->valuedouble;
      copy_str(cn.name, sizeof cn.name, name);
      if (hs_reserve((void **)&out->counters, &ccap, out->n_counters + 1, sizeof *out->counters) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
      out->counters[out->n_counters++] = cn;
      continue;
    }
    if (strcmp(ph->valuestring, "X") != 0)
      continue;
    hs_tspan_t s;
    memset(&s, 0, sizeof s);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts"), *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
    if (!get_id(e, "pid", &s.pid) || !get_id(e, "tid", &s.tid))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d]: pid and tid must be integers", file, i));
    if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || fabs(ts->valuedouble) > 1e15)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].ts: must be a finite number of microseconds",
                           file, i));
    if (!cJSON_IsNumber(dur) || !isfinite(dur->valuedouble) || dur->valuedouble < 0 || dur->valuedouble > 1e15)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].dur: must be a number >= 0, got %s", file, i,
                           cJSON_IsNumber(dur) ? "a negative or huge number" : "no number"));
    s.ts_us = ts->valuedouble;
    s.dur_us = dur->valuedouble;
    copy_str(s.name, sizeof s.name, name);
    copy_str(s.cat, sizeof s.cat, cJSON_GetObjectItemCaseSensitive(e, "cat"));
    if (hs_reserve((void **)&out->spans, &scap, out->n_spans + 1, sizeof *out->spans) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
    out->spans[out->n_spans++] = s;
  }
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs_trace_doc_destroy(out);
  return st;
}

hs_status_t hs_trace_doc_load(const char *path, hs_trace_doc_t *out, hs_error_t *err)
{
  char *text = NULL;
  size_t len = 0;
  hs_status_t st = hs_file_read(path, 1024u * 1024u * 1024u, &text, &len, err);
  if (st == HS_OK)
    st = hs_trace_doc_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}
