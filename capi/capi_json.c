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

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Whether `text` escapes a NUL (\u0000) in a string. cJSON decodes one into
 * a 0 byte that ends its C string, so "megatron\u0000x" would silently read
 * as "megatron"; no option value (a name, a path, a list of names) can hold
 * a NUL, so the text is refused instead. A backslash outside a string is a
 * syntax error that the parser reports. O(length). */
static bool escapes_nul(const char *text)
{
  for (const char *p = text; *p; p++) {
    if (*p != '\\')
      continue;
    if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0)
      return true;
    if (p[1])
      p++; /* the escaped character, so "\\u0000" is a backslash and "u0000" */
  }
  return false;
}

/* Parses the option text (NULL/"" = empty object) and refuses keys not in
 * `known`, and strings holding a NUL. */
static hs_status_t parse_opts(const char *text, const char *what, const char *const *known,
                              cJSON **out, hs_error_t *err)
{
  *out = NULL;
  if (!text || !*text)
    text = "{}";
  if (escapes_nul(text))
    return hs_error_set(err, HS_EINVAL,
                        "%s: a string holds \\u0000 (NUL), which no option value may contain", what);
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

/* get_int into an int32_t field (lo and hi within int32_t); *out is
 * unchanged on error. */
static hs_status_t get_int32(const hs_jreader_t *r, const cJSON *o, const char *key, int64_t def,
                             int64_t lo, int64_t hi, int32_t *out)
{
  int64_t v;
  hs_status_t st = get_int(r, o, key, def, lo, hi, &v);
  if (st == HS_OK)
    *out = (int32_t)v;
  return st;
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

/* A decoder's body: reads the parsed object `o` into `out`. */
typedef hs_status_t (*read_fn)(const hs_jreader_t *r, const cJSON *o, void *out);

/* Parses `text` (refusing keys not in `known`) and reads it with `fn`. */
static hs_status_t decode(const char *text, const char *what, const char *const *known, read_fn fn,
                          void *out, hs_error_t *err)
{
  hs_jreader_t r = {what, err};
  cJSON *o = NULL;
  hs_status_t st = parse_opts(text, what, known, &o, err);
  if (st == HS_OK)
    st = fn(&r, o, out);
  hs_json_free(o);
  return st;
}

/* The option names of cli/opt_practice.c, for the known-key lists. */
#define PRACTICE_KEYS "kernels", "attention", "sequence_parallel", "tp_comm_overlap", "zero_stage", \
                      "precision", "grad_reduce_dtype"
/* The search options of `hetsim plan` and `compare` (cli/cmd_plan.c read_plan_opts). */
#define PLAN_KEYS "global_batch", "max_microbatch_size", "max_devices", "time_limit", "mip_gap", \
                  "no_recompute", "memory_headroom", "search_practice", PRACTICE_KEYS

/* A bool option as -1 (not given), 0 or 1. */
static hs_status_t get_flag(const hs_jreader_t *r, const cJSON *o, const char *key, int8_t *out)
{
  bool b;
  *out = -1;
  if (!given(o, key))
    return HS_OK;
  hs_status_t st = hs_json_bool(r, o, "", key, true, false, &b);
  *out = (int8_t)b;
  return st;
}

/* memory_headroom (--memory-headroom F, cli/opt_practice.c): *out unchanged
 * when not given; the CLI's range and message. */
static hs_status_t get_headroom(const hs_jreader_t *r, const cJSON *o, double *out)
{
  double x;
  if (!given(o, "memory_headroom"))
    return HS_OK;
  hs_status_t st = hs_json_number_in(r, o, "", "memory_headroom", true, 0.0, -HUGE_VAL, HUGE_VAL, &x);
  if (st != HS_OK)
    return st;
  if (!(x >= 0.0 && x < 1.0))
    return hs_error_set(r->err, HS_EINVAL, "%s: memory_headroom: must be a fraction in [0, 1), got %g",
                        r->file, x);
  *out = x;
  return HS_OK;
}

static hs_status_t read_practice(const hs_jreader_t *r, const cJSON *o, hs__api_practice_t *p)
{
  hs_status_t st = HS_OK;
  memset(p, 0, sizeof *p);
  HS_CHECK(get_string(r, o, "kernels", "", p->kernels, sizeof p->kernels));
  HS_CHECK(get_string(r, o, "attention", "", p->attention, sizeof p->attention));
  HS_CHECK(get_string(r, o, "precision", "", p->precision, sizeof p->precision));
  HS_CHECK(get_flag(r, o, "sequence_parallel", &p->sequence_parallel));
  HS_CHECK(get_flag(r, o, "tp_comm_overlap", &p->tp_comm_overlap));
  HS_CHECK(get_int32(r, o, "zero_stage", -1, 0, 3, &p->zero_stage));
  HS_CHECK(get_string(r, o, "grad_reduce_dtype", "", p->grad_reduce_dtype, sizeof p->grad_reduce_dtype));
  p->any = p->kernels[0] || p->attention[0] || p->precision[0] || p->sequence_parallel >= 0 ||
           p->tp_comm_overlap >= 0 || p->zero_stage >= 0 || p->grad_reduce_dtype[0];
cleanup:
  return st;
}

hs_status_t hs__api_practice_apply(const hs__api_practice_t *p, const char *what, hs_practice_t *pr,
                                   hs_dtype_t *precision, hs_error_t *err)
{
  if (p->kernels[0] && hs_kernels_preset(p->kernels, &pr->kernels) != HS_OK) {
    char list[256];
    return hs_error_set(err, HS_EINVAL, "%s: kernels: unknown preset \"%s\" (%s)", what, p->kernels,
                        hs_kernel_presets_list(list, sizeof list));
  }
  if (p->attention[0] && hs_attention_parse(p->attention, &pr->kernels.attention) != HS_OK)
    return hs_error_set(err, HS_EINVAL, "%s: attention: must be flash or unfused, got \"%s\"", what,
                        p->attention);
  if (p->sequence_parallel >= 0)
    pr->sequence_parallel = p->sequence_parallel;
  if (p->tp_comm_overlap >= 0)
    pr->tp_comm_overlap = p->tp_comm_overlap;
  if (pr->tp_comm_overlap && !pr->sequence_parallel)
    return hs_error_set(err, HS_EINVAL, "%s: tp_comm_overlap: needs sequence_parallel (Megatron-Core's "
                        "userbuffers overlap works on the sequence-parallel collectives)", what);
  if (p->zero_stage >= 0)
    pr->zero_stage = p->zero_stage;
  if (p->grad_reduce_dtype[0] && hs_grad_reduce_parse(p->grad_reduce_dtype, &pr->grad_reduce_fp32) != HS_OK)
    return hs_error_set(err, HS_EINVAL, "%s: grad_reduce_dtype: must be fp32 or default, got \"%s\"", what,
                        p->grad_reduce_dtype);
  if (p->precision[0] && (!precision || hs_dtype_parse(p->precision, precision) != HS_OK))
    return hs_error_set(err, HS_EINVAL, "%s: precision: must be bf16, fp16, fp8 or fp32, got \"%s\"",
                        what, p->precision);
  return HS_OK;
}

static hs_status_t read_grid(const hs_jreader_t *r, const cJSON *o, void *outp)
{
  hs__api_grid_t *out = outp;
  hs_status_t st = HS_OK;
  char rc[32];
  HS_CHECK(get_int32(r, o, "tp", 1, 1, 1024, &out->g.tp));
  HS_CHECK(get_int32(r, o, "pp", 1, 1, 1 << 20, &out->g.pp));
  HS_CHECK(get_int32(r, o, "dp", 0, 1, 1 << 20, &out->g.dp)); /* 0: hs_grid_opts_defaults */
  HS_CHECK(get_int32(r, o, "microbatch_size", 1, 1, 1 << 20, &out->g.microbatch_size));
  HS_CHECK(get_int(r, o, "global_batch", 0, 1, INT64_C(1) << 40, &out->g.global_batch));
  HS_CHECK(get_int32(r, o, "chunks", 1, 1, 1024, &out->g.chunks));
  HS_CHECK(get_string(r, o, "schedule", "1f1b", out->schedule, sizeof out->schedule));
  out->g.schedule = out->schedule;
  HS_CHECK(get_string(r, o, "recompute", "none", rc, sizeof rc));
  if (hs_recompute_parse(rc, &out->g.recompute) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: recompute: must be none, selective or full, got \"%s\"",
                         r->file, rc));
  HS_CHECK(read_practice(r, o, &out->practice));
  HS_CHECK(hs__api_practice_apply(&out->practice, r->file, &out->g.practice, &(hs_dtype_t){0}, r->err));
  if (out->g.practice.sequence_parallel && out->g.tp < 2)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: sequence_parallel: needs tensor parallelism (tp 2 or "
                         "more), got tp %d", r->file, out->g.tp));
cleanup:
  return st;
}

hs_status_t hs__api_grid_decode(const char *text, hs__api_grid_t *out, hs_error_t *err)
{
  static const char *const known[] = {"tp", "pp", "dp", "microbatch_size", "global_batch", "schedule",
                                      "chunks", "recompute", PRACTICE_KEYS, NULL};
  memset(out, 0, sizeof *out);
  hs_grid_opts_init(&out->g);
  return decode(text, "simulate options", known, read_grid, out, err);
}

static hs_status_t read_sim(const hs_jreader_t *r, const cJSON *o, void *outp)
{
  hs__api_sim_t *out = outp;
  hs_status_t st = HS_OK;
  HS_CHECK(get_string(r, o, "trace", "", out->trace, sizeof out->trace));
  HS_CHECK(get_int32(r, o, "trace_devices", 0, 0, 1 << 30, &out->trace_devices));
  HS_CHECK(read_practice(r, o, &out->practice));
cleanup:
  return st;
}

hs_status_t hs__api_sim_decode(const char *text, hs__api_sim_t *out, hs_error_t *err)
{
  static const char *const known[] = {"trace", "trace_devices", PRACTICE_KEYS, NULL};
  memset(out, 0, sizeof *out);
  return decode(text, "simulate options", known, read_sim, out, err);
}

/* The search options into *po, which holds the command's defaults: only
 * the options given change it. */
static hs_status_t read_plan_opts(const hs_jreader_t *r, const cJSON *o, hs_plan_opts_t *po)
{
  hs_status_t st = HS_OK;
  hs__api_practice_t pr;
  double x;
  bool b;
  HS_CHECK(get_int(r, o, "global_batch", po->global_batch, 0, INT64_C(1) << 40, &po->global_batch));
  HS_CHECK(get_int32(r, o, "max_microbatch_size", po->max_microbatch_size, 1, 1 << 20,
                     &po->max_microbatch_size));
  HS_CHECK(get_int32(r, o, "max_devices", po->max_devices, 1, 1 << 20, &po->max_devices));
  HS_CHECK(get_double(r, o, "time_limit", po->time_limit_s, 0.0, 1e9, &po->time_limit_s));
  HS_CHECK(get_double(r, o, "mip_gap", po->mip_gap, 0.0, 1.0, &x));
  if (x >= 1.0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: mip_gap: must be in [0, 1), got %g", r->file, x));
  po->mip_gap = x;
  if (given(o, "no_recompute")) {
    HS_CHECK(get_bool(r, o, "no_recompute", &b));
    po->allow_recompute = !b;
  }
  if (given(o, "search_practice")) /* false: --no-practice-search */
    HS_CHECK(get_bool(r, o, "search_practice", &po->search_practice));
  HS_CHECK(get_headroom(r, o, &po->memory_headroom));
  HS_CHECK(read_practice(r, o, &pr));
  HS_CHECK(hs__api_practice_apply(&pr, r->file, &po->practice, &po->precision, r->err));
cleanup:
  return st;
}

static hs_status_t read_search(const hs_jreader_t *r, const cJSON *o, void *out)
{
  return read_plan_opts(r, o, out);
}

hs_status_t hs__api_search_decode(const char *text, hs_plan_opts_t *out, hs_error_t *err)
{
  static const char *const known[] = {PLAN_KEYS, NULL};
  hs_plan_opts_init(out);
  return decode(text, "plan options", known, read_search, out, err);
}

/* `key`: a comma list or an array of names, into "a,b,c" ("" when not given). */
static hs_status_t read_list(const hs_jreader_t *r, const cJSON *o, const char *key, char *out,
                             size_t n)
{
  hs_status_t st = HS_OK;
  const cJSON *s = given(o, key);
  if (!cJSON_IsArray(s))
    return get_string(r, o, key, "", out, n);
  int i = 0;
  out[0] = '\0';
  for (const cJSON *e = s->child; e; e = e->next, i++) {
    size_t l = strlen(out);
    if (!cJSON_IsString(e) || strchr(e->valuestring, ','))
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s[%d]: must be a name", r->file, key, i));
    if ((size_t)snprintf(out + l, n - l, "%s%s", l ? "," : "", e->valuestring) >= n - l)
      HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: %s: list longer than %zu characters", r->file, key,
                           n - 1));
  }
  if (i == 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: empty list", r->file, key));
cleanup:
  return st;
}

/* `key` (read_list) split into names[max][len]; *n unchanged when not given. */
static hs_status_t read_names(const hs_jreader_t *r, const cJSON *o, const char *key, char *names,
                              size_t len, int32_t max, int32_t *n)
{
  char list[2048];
  hs_status_t st = read_list(r, o, key, list, sizeof list);
  if (st != HS_OK || !given(o, key))
    return st;
  *n = 0;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n >= max)
      return hs_error_set(r->err, HS_EINVAL, "%s: %s: at most %d names", r->file, key, max);
    if (!hs_strlcpy(names + (size_t)*n * len, t, len))
      return hs_error_set(r->err, HS_EINVAL, "%s: %s: \"%.60s\" is longer than %zu characters",
                          r->file, key, t, len - 1);
    (*n)++;
  }
  return HS_OK;
}

static hs_status_t read_compare(const hs_jreader_t *r, const cJSON *o, void *outp)
{
  hs__api_compare_t *out = outp;
  hs_status_t st = HS_OK;
  char charge[16];
  out->global_batch_set = given(o, "global_batch") != NULL;
  out->precision_set = given(o, "precision") != NULL;
  HS_CHECK(get_string(r, o, "baseline", "", out->baseline, sizeof out->baseline));
  HS_CHECK(read_plan_opts(r, o, &out->po));
  HS_CHECK(get_string(r, o, "scenario", "", out->scenario, sizeof out->scenario));
  HS_CHECK(get_string(r, o, "charge", "used", charge, sizeof charge));
  if (strcmp(charge, "used") && strcmp(charge, "cluster"))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: charge: must be used or cluster, got \"%s\"", r->file,
                         charge));
  out->charge_cluster = strcmp(charge, "cluster") == 0;
  HS_CHECK(read_list(r, o, "strategies", out->strategies, sizeof out->strategies));
cleanup:
  return st;
}

hs_status_t hs__api_compare_decode(const char *text, hs__api_compare_t *out, hs_error_t *err)
{
  static const char *const known[] = {"strategies", "scenario", "charge", "baseline", PLAN_KEYS,
                                      NULL};
  memset(out, 0, sizeof *out);
  hs_plan_opts_init(&out->po);
  return decode(text, "compare options", known, read_compare, out, err);
}

static hs_status_t read_whatif(const hs_jreader_t *r, const cJSON *o, void *outp)
{
  hs__api_whatif_t *out = outp;
  hs_whatif_run_opts_t *w = &out->o;
  hs_status_t st = HS_OK;
  char s[2048];
  hs__api_practice_t pr;
  HS_CHECK(get_bool(r, o, "replace", &w->enumerate.replace));
  /* ranges of values (budget >= 0, bandwidths > 0, ...) are hs_whatif_run's to check: its
   * messages are the CLI's */
  HS_CHECK(get_double(r, o, "budget_usd_per_hour", 0.0, -HUGE_VAL, HUGE_VAL,
                      &w->enumerate.budget_usd_per_hour));
  HS_CHECK(get_string(r, o, "price", "on-demand", s, 32));
  if (strcmp(s, "on-demand") && strcmp(s, "spot"))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: price: must be on-demand or spot, got \"%s\"", r->file, s));
  w->enumerate.price = strcmp(s, "spot") == 0 ? HS_PRICE_SPOT : HS_PRICE_ONDEMAND;
  HS_CHECK(get_string(r, o, "gpu_price", "", out->gpu_price, sizeof out->gpu_price));
  HS_CHECK(get_int32(r, o, "step", 8, 1, 1 << 20, &w->enumerate.step));
  HS_CHECK(get_int32(r, o, "max_options", 500, 1, 1 << 20, &w->enumerate.max_options));
  HS_CHECK(get_int32(r, o, "gpus_per_node", 8, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &w->gpus_per_node));
  HS_CHECK(get_double(r, o, "nic_GBps", 25.0, -HUGE_VAL, HUGE_VAL, &w->nic_GBps));
  HS_CHECK(get_double(r, o, "link_GBps", 25.0, -HUGE_VAL, HUGE_VAL, &w->link_GBps));
  HS_CHECK(get_double(r, o, "link_latency_us", 10.0, -HUGE_VAL, HUGE_VAL, &w->link_latency_us));
  HS_CHECK(get_int(r, o, "global_batch", 0, 1, INT64_C(1) << 40, &w->plan.global_batch));
  HS_CHECK(get_int(r, o, "global_batch_per_gpu", 0, 1, 1 << 20, &w->global_batch_per_gpu));
  HS_CHECK(get_double(r, o, "time_limit", 60.0, 0.0, 1e9, &w->plan.time_limit_s));
  HS_CHECK(get_int32(r, o, "workers", 1, 1, 256, &w->workers));
  HS_CHECK(get_int(r, o, "top", 0, 0, INT64_C(1) << 30, &out->top));
  HS_CHECK(get_string(r, o, "format", "csv", s, 32));
  if (hs_whatif_format_parse(s, &out->format) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: format: must be table, csv or json, got \"%s\"", r->file, s));
  HS_CHECK(read_names(r, o, "candidates", w->candidates[0], sizeof w->candidates[0],
                      HS_SWEEP_MAX_TYPES, &w->n_candidates));
  HS_CHECK(read_names(r, o, "strategies", w->strategies[0], sizeof w->strategies[0],
                      HS_WHATIF_MAX_STRATEGIES, &w->n_strategies));
  /* --precision, --memory-headroom and the practice flags go into the plan options */
  HS_CHECK(get_headroom(r, o, &w->plan.memory_headroom));
  HS_CHECK(read_practice(r, o, &pr));
  HS_CHECK(hs__api_practice_apply(&pr, r->file, &w->plan.practice, &w->plan.precision, r->err));
cleanup:
  return st;
}
hs_status_t hs__api_whatif_decode(const char *text, hs__api_whatif_t *out, hs_error_t *err)
{
  static const char *const known[] = {"replace", "budget_usd_per_hour", "candidates", "price",
                                      "gpu_price", "step", "gpus_per_node", "nic_GBps", "link_GBps",
                                      "link_latency_us", "strategies", "global_batch",
                                      "global_batch_per_gpu", "time_limit", "max_options", "workers",
                                      "top", "format", "memory_headroom", PRACTICE_KEYS, NULL};
  memset(out, 0, sizeof *out);
  hs_whatif_run_opts_init(&out->o);
  return decode(text, "whatif options", known, read_whatif, out, err);
}

static hs_status_t read_sweep(const hs_jreader_t *r, const cJSON *o, void *outp)
{
  hs__api_sweep_t *out = outp;
  hs_status_t st = HS_OK;
  HS_CHECK(get_bool(r, o, "no_timings", &out->no_timings));
  HS_CHECK(get_int32(r, o, "workers", 1, 1, 1024, &out->workers));
  /* --precision and --memory-headroom override the spec's */
  HS_CHECK(get_string(r, o, "precision", "", out->precision, sizeof out->precision));
  if (out->precision[0] && hs_dtype_parse(out->precision, &(hs_dtype_t){0}) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: precision: must be bf16, fp16, fp8 or fp32, got \"%s\"",
                         r->file, out->precision));
  out->memory_headroom = -1.0;
  HS_CHECK(get_headroom(r, o, &out->memory_headroom));
cleanup:
  return st;
}

hs_status_t hs__api_sweep_decode(const char *text, hs__api_sweep_t *out, hs_error_t *err)
{
  static const char *const known[] = {"no_timings", "workers", "precision", "memory_headroom", NULL};
  memset(out, 0, sizeof *out);
  return decode(text, "sweep options", known, read_sweep, out, err);
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
  return print_json(hs_json_stamp_version(hs_plan_to_json(p), HS_SCHEMA_VERSION), out, err);
}

/* What `hetsim plan --json` prints (cli/cmd_plan.c), key for key. */
hs_status_t hs__api_search_json(const hs_api_plan_t *p, char **out, hs_error_t *err)
{
  cJSON *j = hs_json_stamp_version(hs_search_result_to_json(p->strategy, p->model, p->cluster,
                                                            &p->stats, &p->plan, &p->report),
                                   HS_SCHEMA_VERSION);
  if (j) {
    int32_t used = hs_plan_n_devices(&p->plan); /* throughput per GPU the plan uses */
    bool ok = cJSON_AddNumberToObject(j, "gpus_used", used) &&
              cJSON_AddNumberToObject(j, "tokens_per_s_per_gpu",
                                      used > 0 && !p->report.oom ? p->report.tokens_per_s / used : 0.0) &&
              (p->band.n_rows > 0 ? cJSON_AddNumberToObject(j, "error_band", p->band.rel) != NULL
                                  : cJSON_AddNullToObject(j, "error_band") != NULL);
    if (!ok) {
      cJSON_Delete(j);
      j = NULL;
    }
  }
  return print_json(j, out, err);
}

hs_status_t hs__api_model_json(const hs_model_t *m, char **out, hs_error_t *err)
{
  return print_json(hs_model_to_json(m), out, err);
}

hs_status_t hs__api_cluster_json(const hs_cluster_t *c, char **out, hs_error_t *err)
{
  return print_json(hs_cluster_to_json(c), out, err);
}
