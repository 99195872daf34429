/*
 * capi_json.c - the C API's JSON edge: option objects in (one per call,
 * keys = the CLI's flags in snake case, same ranges and defaults as the
 * CLI), result texts out (exactly the bytes the CLI prints: cJSON_Print and
 * a newline, as hs_json_write_file writes them).
 *
 * Invariants: an option object with an unknown key, a wrong type or a value
 * outside the CLI's range is an error naming the option; a null value means
 * "not given". Decoders write only into caller records (no pointers into the
 * option text survive).
 */
#include "capi_internal.h"
#include "hs_json.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Parses the option text (NULL/"" = empty object) and refuses keys not in
 * `known`. */
static hs_status_t parse_opts(const char *text, const char *what, const char *const *known,
                              cJSON **out, hs_error_t *err)
{
  *out = NULL;
  if (!text || !*text)
    text = "{}";
  hs_status_t st = hs_json_parse(text, what, out, err);
  if (st != HS_OK)
    return st;
  if (!cJSON_IsObject(*out)) {
    hs_json_free(*out);
    *out = NULL;
    return hs_error_set(err, HS_EINVAL, "%s: must be a JSON object", what);
  }
  for (const cJSON *it = (*out)->child; it; it = it->next) {
    bool ok = false;
    for (const char *const *k = known; *k && !ok; k++)
      ok = it->string && strcmp(it->string, *k) == 0;
    if (!ok) {
      char list[512] = "";
      for (const char *const *k = known; *k; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", *k);
      }
      st = hs_error_set(err, HS_EINVAL, "%s: unknown option \"%.60s\" (known: %s)", what,
                        it->string ? it->string : "", list);
      hs_json_free(*out);
      *out = NULL;
      return st;
    }
  }
  return HS_OK;
}

/* The member `key`, or NULL when absent or null. */
static const cJSON *given(const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

static hs_status_t get_int(const hs_jreader_t *r, const cJSON *o, const char *key, int64_t def,
                           int64_t lo, int64_t hi, int64_t *out)
{
  if (!given(o, key)) {
    *out = def;
    return HS_OK;
  }
  return hs_json_int(r, o, "", key, true, def, lo, hi, out);
}

static hs_status_t get_double(const hs_jreader_t *r, const cJSON *o, const char *key, double def,
                              double lo, double hi, double *out)
{
  if (!given(o, key)) {
    *out = def;
    return HS_OK;
  }
  return hs_json_number_in(r, o, "", key, true, def, lo, hi, out);
}

static hs_status_t get_bool(const hs_jreader_t *r, const cJSON *o, const char *key, bool *out)
{
  if (!given(o, key)) {
    *out = false;
    return HS_OK;
  }
  return hs_json_bool(r, o, "", key, true, false, out);
}

static hs_status_t get_string(const hs_jreader_t *r, const cJSON *o, const char *key,
                              const char *def, char *out, size_t n)
{
  if (!given(o, key))
    return hs_strlcpy(out, def, n) ? HS_OK : HS_EINTERNAL;
  return hs_json_string(r, o, "", key, true, def, out, n);
}

hs_status_t hs__api_grid_decode(const char *text, hs__api_grid_t *out, hs_error_t *err)
{
  static const char *const known[] = {"tp", "pp", "dp", "microbatch_size", "global_batch",
                                      "schedule", "chunks", "recompute", NULL};
  const char *what = "simulate options";
  hs_jreader_t r = {what, err};
  hs_status_t st = HS_OK;
  cJSON *o = NULL;
  int64_t v;
  char rc[32];
  memset(out, 0, sizeof *out);
  hs_grid_opts_init(&out->g);
  HS_CHECK(parse_opts(text, what, known, &o, err));
  HS_CHECK(get_int(&r, o, "tp", 1, 1, 1024, &v));
  out->g.tp = (int32_t)v;
  HS_CHECK(get_int(&r, o, "pp", 1, 1, 1 << 20, &v));
  out->g.pp = (int32_t)v;
  HS_CHECK(get_int(&r, o, "dp", 0, 1, 1 << 20, &v)); /* 0: hs_grid_opts_defaults */
  out->g.dp = (int32_t)v;
  HS_CHECK(get_int(&r, o, "microbatch_size", 1, 1, 1 << 20, &v));
  out->g.microbatch_size = (int32_t)v;
  HS_CHECK(get_int(&r, o, "global_batch", 0, 1, INT64_C(1) << 40, &out->g.global_batch));
  HS_CHECK(get_int(&r, o, "chunks", 1, 1, 1024, &v));
  out->g.chunks = (int32_t)v;
  HS_CHECK(get_string(&r, o, "schedule", "1f1b", out->schedule, sizeof out->schedule));
  out->g.schedule = out->schedule;
  HS_CHECK(get_string(&r, o, "recompute", "none", rc, sizeof rc));
  if (hs_recompute_parse(rc, &out->g.recompute) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: recompute: must be none, selective or full, got \"%s\"",
                         what, rc));
cleanup:
  hs_json_free(o);
  return st;
}

hs_status_t hs__api_sim_decode(const char *text, hs__api_sim_t *out, hs_error_t *err)
{
  static const char *const known[] = {"trace", "trace_devices", NULL};
  const char *what = "simulate options";
  hs_jreader_t r = {what, err};
  hs_status_t st = HS_OK;
  cJSON *o = NULL;
  int64_t v;
  memset(out, 0, sizeof *out);
  HS_CHECK(parse_opts(text, what, known, &o, err));
  HS_CHECK(get_string(&r, o, "trace", "", out->trace, sizeof out->trace));
  HS_CHECK(get_int(&r, o, "trace_devices", 0, 0, 1 << 30, &v));
  out->trace_devices = (int32_t)v;
cleanup:
  hs_json_free(o);
  return st;
}

/* The search options of `hetsim plan` and `compare` (read_plan_opts). */
static hs_status_t plan_opts(const hs_jreader_t *r, const cJSON *o, hs_plan_opts_t *po,
                             bool *gb_set)
{
  hs_status_t st = HS_OK;
  int64_t v;
  double x;
  bool b;
  hs_plan_opts_init(po);
  *gb_set = given(o, "global_batch") != NULL;
  HS_CHECK(get_int(r, o, "global_batch", 0, 0, INT64_C(1) << 40, &po->global_batch));
  HS_CHECK(get_int(r, o, "max_microbatch_size", 8, 1, 1 << 20, &v));
  po->max_microbatch_size = (int32_t)v;
  HS_CHECK(get_int(r, o, "max_devices", 8, 1, 1 << 20, &v));
  po->max_devices = (int32_t)v;
  HS_CHECK(get_double(r, o, "time_limit", 0.0, 0.0, 1e9, &po->time_limit_s));
  HS_CHECK(get_double(r, o, "mip_gap", 0.01, 0.0, 1.0, &x));
  if (x >= 1.0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: mip_gap: must be in [0, 1), got %g", r->file, x));
  po->mip_gap = x;
  HS_CHECK(get_bool(r, o, "no_recompute", &b));
  po->allow_recompute = !b;
cleanup:
  return st;
}

hs_status_t hs__api_search_decode(const char *text, hs_plan_opts_t *out, hs_error_t *err)
{
  static const char *const known[] = {"global_batch", "max_microbatch_size", "max_devices",
                                      "time_limit", "mip_gap", "no_recompute", NULL};
  const char *what = "plan options";
  hs_jreader_t r = {what, err};
  cJSON *o = NULL;
  bool gb_set;
  hs_plan_opts_init(out);
  hs_status_t st = parse_opts(text, what, known, &o, err);
  if (st == HS_OK)
    st = plan_opts(&r, o, out, &gb_set);
  hs_json_free(o);
  return st;
}

hs_status_t hs__api_compare_decode(const char *text, hs__api_compare_t *out, hs_error_t *err)
{
  static const char *const known[] = {"strategies", "scenario", "charge", "global_batch",
                                      "max_microbatch_size", "max_devices", "time_limit",
                                      "mip_gap", "no_recompute", NULL};
  const char *what = "compare options";
  hs_jreader_t r = {what, err};
  hs_status_t st = HS_OK;
  cJSON *o = NULL;
  char charge[16];
  memset(out, 0, sizeof *out);
  hs_plan_opts_init(&out->po);
  HS_CHECK(parse_opts(text, what, known, &o, err));
  HS_CHECK(plan_opts(&r, o, &out->po, &out->global_batch_set));
  HS_CHECK(get_string(&r, o, "scenario", "", out->scenario, sizeof out->scenario));
  HS_CHECK(get_string(&r, o, "charge", "used", charge, sizeof charge));
  if (strcmp(charge, "used") && strcmp(charge, "cluster"))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: charge: must be used or cluster, got \"%s\"", what,
                         charge));
  out->charge_cluster = strcmp(charge, "cluster") == 0;
  const cJSON *s = given(o, "strategies");
  if (cJSON_IsArray(s)) { /* ["hapt", "megatron"] -> "hapt,megatron" */
    int i = 0;
    for (const cJSON *e = s->child; e; e = e->next, i++) {
      size_t l = strlen(out->strategies);
      if (!cJSON_IsString(e) || strchr(e->valuestring, ','))
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: strategies[%d]: must be a strategy name", what, i));
      if ((size_t)snprintf(out->strategies + l, sizeof out->strategies - l, "%s%s", l ? "," : "",
                           e->valuestring) >= sizeof out->strategies - l)
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: strategies: list longer than %zu characters",
                             what, sizeof out->strategies - 1));
    }
    if (i == 0)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: strategies: empty list", what));
  } else {
    HS_CHECK(get_string(&r, o, "strategies", "", out->strategies, sizeof out->strategies));
  }
cleanup:
  hs_json_free(o);
  return st;
}

hs_status_t hs__api_sweep_decode(const char *text, hs__api_sweep_t *out, hs_error_t *err)
{
  static const char *const known[] = {"no_timings", "workers", NULL};
  const char *what = "sweep options";
  hs_jreader_t r = {what, err};
  hs_status_t st = HS_OK;
  cJSON *o = NULL;
  int64_t v;
  memset(out, 0, sizeof *out);
  HS_CHECK(parse_opts(text, what, known, &o, err));
  HS_CHECK(get_bool(&r, o, "no_timings", &out->no_timings));
  HS_CHECK(get_int(&r, o, "workers", 1, 1, 1024, &v));
  out->workers = (int32_t)v;
cleanup:
  hs_json_free(o);
  return st;
}

/* ---- results ------------------------------------------------------------------ */

/* Prints and frees `j` (NULL = out of memory) into a malloc'd text. */
static hs_status_t print_json(cJSON *j, char **out, hs_error_t *err)
{
  *out = NULL;
  if (!j)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  char *s = cJSON_Print(j);
  hs_json_free(j);
  if (!s)
    return hs_error_set(err, HS_ENOMEM, "out of memory printing JSON");
  size_t n = strlen(s);
  char *t = malloc(n + 2);
  if (t) {
    memcpy(t, s, n);
    t[n] = '\n';
    t[n + 1] = '\0';
  }
  cJSON_free(s);
  if (!t)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  *out = t;
  return HS_OK;
}

hs_status_t hs__api_report_json(const hs_api_report_t *r, char **out, hs_error_t *err)
{
  return print_json(hs_report_to_json_named(&r->r, r->model, r->cluster), out, err);
}

hs_status_t hs__api_plan_json(const hs_plan_t *p, char **out, hs_error_t *err)
{
  return print_json(hs_plan_to_json(p), out, err);
}

hs_status_t hs__api_search_json(const hs_api_plan_t *p, char **out, hs_error_t *err)
{
  return print_json(hs_search_result_to_json(p->strategy, p->model, p->cluster, &p->stats,
                                             &p->plan, &p->report),
                    out, err);
}

hs_status_t hs__api_model_json(const hs_model_t *m, char **out, hs_error_t *err)
{
  return print_json(hs_model_to_json(m), out, err);
}

hs_status_t hs__api_cluster_json(const hs_cluster_t *c, char **out, hs_error_t *err)
{
  return print_json(hs_cluster_to_json(c), out, err);
}
