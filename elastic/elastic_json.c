/*
 * elastic_json.c - the elastic trace-file reader (preemption and
 * replacement times), the result as JSON, and the timeline as a Chrome
 * trace and as CSV. Output is printed in a fixed order with fixed formats,
 * so the same result gives the same bytes.
 */
#include "hs_elastic.h"
#include "hs_json.h"
#include "hs_output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

void hs__elastic_sort_events(hs_elastic_event_t *ev, size_t n);

#define TRACE_MAX_EVENTS 10000000

hs_status_t hs_elastic_trace_parse(const char *text, const char *file, const hs_cluster_t *c,
                                   hs_elastic_trace_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *root = NULL;
  uint8_t *down = NULL;
  hs_jreader_t r = {file ? file : "trace", err};
  static const char *const known_root[] = {"events", "description", NULL};
  static const char *const known_ev[] = {"t_s", "kind", "node", "site", NULL};
  hs_elastic_trace_destroy(out);
  HS_CHECK(hs_json_parse(text, r.file, &root, err));
  HS_CHECK(hs_json_expect_object(&r, root, ""));
  hs_json_warn_unknown(&r, root, "", known_root);
  const cJSON *evs = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, root, "", "events", true, &evs, &n));
  if (n > TRACE_MAX_EVENTS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: events: %d events, at most %d", r.file, n,
                         TRACE_MAX_EVENTS));
  out->events = hs_calloc((size_t)n + 1, sizeof *out->events);
  if (!out->events)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int i = 0;
  char path[96];
  for (const cJSON *e = evs->child; e; e = e->next, i++) {
    hs_json_path(path, sizeof path, "events", NULL, i);
    HS_CHECK(hs_json_expect_object(&r, e, path));
    hs_json_warn_unknown(&r, e, path, known_ev);
    double t_s = 0;
    HS_CHECK(hs_json_number(&r, e, path, "t_s", true, 0, HS_JNUM_NONNEG, 1e9, &t_s));
    char kind[16], site[HS_NAME_MAX];
    HS_CHECK(hs_json_string(&r, e, path, "kind", true, NULL, kind, sizeof kind));
    int32_t k;
    if (strcmp(kind, "preempt") == 0)
      k = HS_ELASTIC_PREEMPT;
    else if (strcmp(kind, "replace") == 0)
      k = HS_ELASTIC_REPLACE;
    else
      HS_FAIL(hs_error_set(err, HS_EINVAL,
                           "%s: %s.kind: must be \"preempt\" or \"replace\", got \"%s\"", r.file,
                           path, kind));
    HS_CHECK(hs_json_string(&r, e, path, "site", false, "", site, sizeof site));
    int64_t node = 0;
    int32_t node_g;
    if (site[0]) {
      size_t s = 0;
      while (s < c->n_sites && strcmp(c->sites[s].name, site) != 0)
        s++;
      if (s == c->n_sites)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.site: no site \"%s\" in cluster %s", r.file,
                             path, site, c->name));
      HS_CHECK(hs_json_int(&r, e, path, "node", true, 0, 0, c->sites[s].n_nodes - 1, &node));
      node_g = c->sites[s].first_node + (int32_t)node;
    } else {
      if (c->n_nodes == 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: cluster %s has no nodes", r.file, c->name));
      HS_CHECK(hs_json_int(&r, e, path, "node", true, 0, 0, (int64_t)c->n_nodes - 1, &node));
      node_g = (int32_t)node;
    }
    out->events[out->n++] = (hs_elastic_event_t){hs_time_from_s(t_s), node_g, k};
  }
  /* stable order by time, kind, node; then check the up/down sequence */
  hs__elastic_sort_events(out->events, out->n);
  down = hs_calloc(c->n_nodes + 1, 1);
  if (!down)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (size_t j = 0; j < out->n; j++) {
    const hs_elastic_event_t *e = &out->events[j];
    bool pre = e->kind == HS_ELASTIC_PREEMPT;
    if (pre == (down[e->node] != 0))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: events: node %d %s at t_s=%.9g, but it is %s", r.file,
                           e->node, pre ? "preempted" : "replaced", hs_time_to_s(e->t_ns),
                           pre ? "already down" : "up"));
    down[e->node] = pre;
  }
cleanup:
  free(down);
  hs_json_free(root);
  if (st != HS_OK)
    hs_elastic_trace_destroy(out);
  return st;
}

hs_status_t hs_elastic_trace_load(const char *path, const hs_cluster_t *c, hs_elastic_trace_t *out,
                                  hs_error_t *err)
{
  char *text = NULL;
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st == HS_OK)
    st = hs_elastic_trace_parse(text, hs_basename(path), c, out, err);
  free(text);
  return st;
}

/* ---- result JSON ----------------------------------------------------------- */

struct cJSON *hs_elastic_result_to_json(const hs_elastic_result_t *r, const hs_cluster_t *c,
                                        bool with_wall)
{
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  bool ok = true;
  ok = ok && cJSON_AddNumberToObject(j, "schema_version", HS_SCHEMA_VERSION);
  ok = ok && cJSON_AddStringToObject(j, "cluster", c->name);
  ok = ok && cJSON_AddStringToObject(j, "strategy", r->strategy);
  ok = ok && cJSON_AddStringToObject(j, "recovery", hs_recovery_name(r->recovery));
  ok = ok && cJSON_AddNumberToObject(j, "hours", r->hours);
  ok = ok && cJSON_AddNumberToObject(j, "global_batch", (double)r->global_batch);
  ok = ok && cJSON_AddNumberToObject(j, "steady_tokens_per_s", r->steady_tokens_per_s);
  ok = ok && cJSON_AddNumberToObject(j, "steady_iteration_s", r->steady_iteration_s);
  ok = ok && cJSON_AddNumberToObject(j, "goodput_tokens_per_h", r->goodput_tokens_per_h);
  ok = ok && cJSON_AddNumberToObject(j, "useful_tokens", r->useful_tokens);
  ok = ok && cJSON_AddNumberToObject(j, "n_preemptions", r->n_preemptions);
  ok = ok && cJSON_AddNumberToObject(j, "n_replacements", r->n_replacements);
  ok = ok && cJSON_AddNumberToObject(j, "n_checkpoints", r->n_checkpoints);
  /* a GPU without a price: costs unknown (null), never a partial sum */
  bool priced = r->n_unpriced_devices == 0;
  ok = ok && (priced ? cJSON_AddNumberToObject(j, "cost_usd", r->cost_usd) != NULL
                     : cJSON_AddNullToObject(j, "cost_usd") != NULL);
  ok = ok && (priced ? cJSON_AddNumberToObject(j, "usd_per_million_tokens", r->usd_per_million_tokens) != NULL
                     : cJSON_AddNullToObject(j, "usd_per_million_tokens") != NULL);
  ok = ok && cJSON_AddBoolToObject(j, "priced", priced);
  ok = ok && cJSON_AddNumberToObject(j, "n_unpriced_devices", r->n_unpriced_devices);
  ok = ok && cJSON_AddNumberToObject(j, "n_searches", r->n_searches);
  if (with_wall)
    ok = ok && cJSON_AddNumberToObject(j, "replan_wall_s", r->replan_wall_s);
  cJSON *ts = ok ? cJSON_AddObjectToObject(j, "time_s") : NULL;
  ok = ok && ts;
  for (int p = 0; ok && p < HS_EPH__COUNT; p++)
    ok = cJSON_AddNumberToObject(ts, hs_elastic_phase_name((hs_elastic_phase_t)p), r->time_s[p]) != NULL;
  double bp = 0, bo = 0, bc = 0;
  cJSON *recs = ok ? cJSON_AddArrayToObject(j, "recoveries") : NULL;
  ok = ok && recs;
  for (size_t k = 0; ok && k < r->n_recoveries; k++) {
    const hs_elastic_recovery_t *v = &r->recoveries[k];
    cJSON *o = cJSON_CreateObject();
    ok = o && cJSON_AddItemToArray(recs, o);
    ok = ok && cJSON_AddNumberToObject(o, "t_s", hs_time_to_s(v->t_ns));
    ok = ok && cJSON_AddStringToObject(o, "cause", v->kind == HS_ELASTIC_PREEMPT ? "preempt" : "replace");
    ok = ok && cJSON_AddNumberToObject(o, "nodes_down", v->n_nodes_down);
    ok = ok && cJSON_AddNumberToObject(o, "nodes_up", v->n_nodes_up);
    ok = ok && cJSON_AddNumberToObject(o, "devices", v->n_devices);
    ok = ok && cJSON_AddNumberToObject(o, "lost_s", v->lost_s);
    ok = ok && cJSON_AddNumberToObject(o, "replan_s", v->replan_s);
    if (with_wall)
      ok = ok && cJSON_AddNumberToObject(o, "replan_wall_s", v->replan_wall_s);
    ok = ok && cJSON_AddNumberToObject(o, "transfer_s", v->transfer_s);
    ok = ok && cJSON_AddNumberToObject(o, "overhead_s", v->overhead_s);
    ok = ok && cJSON_AddNumberToObject(o, "recovery_s", v->recovery_s);
    ok = ok && cJSON_AddNumberToObject(o, "bytes_local", v->bytes_peer + v->bytes_own);
    ok = ok && cJSON_AddNumberToObject(o, "bytes_peer", v->bytes_peer);
    ok = ok && cJSON_AddNumberToObject(o, "bytes_own", v->bytes_own);
    ok = ok && cJSON_AddNumberToObject(o, "bytes_cloud", v->bytes_cloud);
    ok = ok && cJSON_AddBoolToObject(o, "cloud_fallback", v->cloud_fallback);
    ok = ok && cJSON_AddBoolToObject(o, "interrupted", v->interrupted);
    ok = ok && cJSON_AddNumberToObject(o, "tokens_per_s", v->tokens_per_s);
    ok = ok && cJSON_AddStringToObject(o, "plan", v->plan_summary);
    bp += v->bytes_peer;
    bo += v->bytes_own;
    bc += v->bytes_cloud;
  }
  ok = ok && cJSON_AddNumberToObject(j, "bytes_local", bp + bo);
  ok = ok && cJSON_AddNumberToObject(j, "bytes_cloud", bc);
  if (!ok) {
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

/* ---- timeline ------------------------------------------------------------ */

static void ts_us(FILE *f, hs_time_t ns)
{
  fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

hs_status_t hs_elastic_timeline_write_json(const hs_elastic_result_t *r, const hs_cluster_t *c,
                                           const char *path, hs_error_t *err)
{
  hs_output_t out;
  hs_status_t st = hs_output_open(&out, path, err);
  if (st != HS_OK)
    return st;
  FILE *f = out.f;
  hs_time_t H = hs_time_from_s(r->hours * 3600.0);
  fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
  fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"run (%s, %s)\"}}",
          r->strategy, hs_recovery_name(r->recovery));
  fputs(",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"phase\"}}", f);
  fputs(",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"recoveries\"}}", f);
  fputs(",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"nodes\"}}", f);
  for (size_t n = 0; n < c->n_nodes; n++)
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%zu,\"args\":{\"name\":\"n%zu %s (%s%s)\"}}",
            n, n, c->sites[c->nodes[n].site].name, c->gpus.gpus[c->nodes[n].gpu].name,
            c->nodes[n].spot ? ", spot" : "");
  for (size_t s = 0; s < r->n_segments; s++) {
    const hs_elastic_segment_t *sg = &r->segments[s];
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"%s\",\"cat\":\"%s\",\"ts\":",
            hs_elastic_phase_name((hs_elastic_phase_t)sg->phase),
            hs_elastic_phase_name((hs_elastic_phase_t)sg->phase));
    ts_us(f, sg->t0);
    fputs(",\"dur\":", f);
    ts_us(f, sg->t1 - sg->t0);
    fprintf(f, ",\"args\":{\"tokens_per_s\":%.6g,\"recovery\":%d}}", sg->tokens_per_s, sg->recovery);
  }
  for (size_t k = 0; k < r->n_recoveries; k++) {
    const hs_elastic_recovery_t *v = &r->recoveries[k];
    hs_time_t t1 = v->t_ns + hs_time_from_s(v->replan_s + v->recovery_s);
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":0,\"tid\":1,\"name\":\"recovery %zu (%s)\",\"cat\":\"recover\",\"ts\":", k,
            v->kind == HS_ELASTIC_PREEMPT ? "preempt" : "replace");
    ts_us(f, v->t_ns);
    fputs(",\"dur\":", f);
    ts_us(f, HS_MIN(t1, H) - v->t_ns);
    fprintf(f, ",\"args\":{\"replan_s\":%.6g,\"transfer_s\":%.6g,\"bytes_local\":%.6g,\"bytes_cloud\":%.6g,\"interrupted\":%s}}",
            v->replan_s, v->transfer_s, v->bytes_peer + v->bytes_own, v->bytes_cloud,
            v->interrupted ? "true" : "false");
  }
  /* node up spans */
  for (size_t n = 0; n < c->n_nodes; n++) {
    hs_time_t since = 0;
    bool up = true;
    for (size_t e = 0; e <= r->n_events; e++) {
      bool last = e == r->n_events;
      if (!last && r->events[e].node != (int32_t)n)
        continue;
      hs_time_t te = last ? H : r->events[e].t_ns;
      if ((last && up) || (!last && r->events[e].kind == HS_ELASTIC_PREEMPT && up)) {
        if (te > since) {
          fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%zu,\"name\":\"up\",\"cat\":\"node-up\",\"ts\":", n);
          ts_us(f, since);
          fputs(",\"dur\":", f);
          ts_us(f, te - since);
          fputs("}", f);
        }
        up = false;
      } else if (!last && r->events[e].kind == HS_ELASTIC_REPLACE && !up) {
        since = te;
        up = true;
      }
    }
  }
  fputs("\n]}\n", f);
  return hs_output_commit(&out, err);
}

hs_status_t hs_elastic_timeline_write_csv(const hs_elastic_result_t *r, const char *path,
                                          hs_error_t *err)
{
  hs_output_t out;
  hs_status_t st = hs_output_open(&out, path, err);
  if (st != HS_OK)
    return st;
  FILE *f = out.f;
  fputs("start_s,end_s,phase,recovery,tokens_per_s\n", f);
  for (size_t s = 0; s < r->n_segments; s++) {
    const hs_elastic_segment_t *sg = &r->segments[s];
    fprintf(f, "%.9f,%.9f,%s,%d,%.6g\n", hs_time_to_s(sg->t0), hs_time_to_s(sg->t1),
            hs_elastic_phase_name((hs_elastic_phase_t)sg->phase), sg->recovery, sg->tokens_per_s);
  }
  return hs_output_commit(&out, err);
}
