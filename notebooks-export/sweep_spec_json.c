/*
 * sweep_spec_json.c - reads a sweep spec (docs/sweep.md) into an
 * hs_sweep_spec_t and builds the cluster JSON of compositions.
 *
 * Every axis accepts a scalar or an array. A composition's counts accept an
 * integer or an array of integers; a composition with arrays expands into the
 * cartesian product of its counts (first type slowest), skipping the
 * all-zero one. The job list is the whole grid, or `random.samples` jobs
 * drawn without replacement by a seeded splitmix64 (then sorted), so it is a
 * pure function of the file.
 *
 * Dependencies run one way: sweep.c (jobs, rows) calls into this file
 * (compositions, labels, price model names), never the reverse, so the
 * spec reader builds and tests without the job runner.
 */
#include "hs_export.h"
#include "hs_json.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TRAIN_TOKENS 1e11
#define DEFAULT_TIME_LIMIT_S 60.0
#define DEFAULT_COMP_NIC_GBPS 25.0
#define DEFAULT_COMP_XSITE_GBPS 1.25
#define DEFAULT_COMP_XSITE_LATENCY_US 5000.0

static const char *const top_known[] = {
    "name", "description", "clusters", "layout", "nic_GBps", "intersite_GBps",
    "intersite_latency_us", "models", "global_batch", "strategies", "price_models", "prices",
    "train_tokens", "time_limit_s", "max_microbatch_size", "seq_len", "random",
    "global_batch_per_gpu", "precision", "memory_headroom", "kernels", "attention",
    "sequence_parallel", "zero_stage", "tp_comm_overlap", "grad_reduce_dtype", NULL};
static const char *const layout_known[] = {"sites", "gpus_per_node", "nic_GBps", "intersite_GBps",
                                           "intersite_latency_us", NULL};
static const char *const price_known[] = {"on_demand_usd_h", "spot_usd_h", NULL};
static const char *const random_known[] = {"samples", "seed", NULL};

static const char *const default_strategies[] = {"megatron", "whale", "hapt", "data-parallel"};

const char *hs_price_model_name(hs_price_model_t p)
{
  return p == HS_PRICE_SPOT ? "spot" : "on-demand";
}

void hs_sweep_spec_init(hs_sweep_spec_t *s)
{
  memset(s, 0, sizeof *s);
  s->precision = HS_DTYPE_BF16;
  s->memory_headroom = HS_MEMORY_HEADROOM_DEFAULT;
  hs_practice_init(&s->practice);
}

void hs_sweep_spec_destroy(hs_sweep_spec_t *s)
{
  if (!s)
    return;
  free(s->clusters);
  free(s->nic_GBps);
  free(s->xsite_GBps);
  free(s->xsite_latency_us);
  free(s->models);
  free(s->global_batch);
  free(s->strategies);
  free(s->price_overrides);
  free(s->jobs);
  memset(s, 0, sizeof *s);
}

/* The members of axis `key`: an array, or a one-element view of a scalar. */
static hs_status_t axis_items(const hs_jreader_t *r, const cJSON *o, const char *key,
                              const cJSON ***items, int *n)
{
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  *items = NULL;
  *n = 0;
  if (!a)
    return HS_OK;
  int count = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 1;
  if (count == 0)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: must not be empty", r->file, key);
  if (count > HS_SWEEP_MAX_AXIS)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s: at most %d values, got %d", r->file, key,
                        HS_SWEEP_MAX_AXIS, count);
  const cJSON **v = hs_calloc((size_t)count, sizeof *v);
  if (!v)
    return hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file);
  if (cJSON_IsArray(a)) {
    int i = 0;
    for (const cJSON *e = a->child; e; e = e->next)
      v[i++] = e;
  } else {
    v[0] = a;
  }
  *items = v;
  *n = count;
  return HS_OK;
}

/* A number axis: values in (0, max]. Absent: one value `def`. */
static hs_status_t number_axis(const hs_jreader_t *r, const cJSON *o, const char *key, double def,
                               double max, bool allow_zero, double **out, size_t *n)
{
  hs_status_t st = HS_OK;
  const cJSON **items = NULL;
  int count = 0;
  HS_CHECK(axis_items(r, o, key, &items, &count));
  size_t m = count ? (size_t)count : 1;
  double *v = hs_calloc(m, sizeof *v);
  if (!v)
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file));
  *out = v;
  *n = m;
  if (!count) {
    v[0] = def;
    goto cleanup;
  }
  for (int i = 0; i < count; i++) {
    const cJSON *e = items[i];
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0 ||
        (!allow_zero && e->valuedouble == 0) || e->valuedouble > max) {
      char *txt = cJSON_PrintUnformatted(e);
      st = hs_error_set(r->err, HS_EINVAL, "%s: %s[%d]: must be a number in %s0, %g], got %s",
                        r->file, key, i, allow_zero ? "[" : "(", max, txt ? txt : "?");
      free(txt);
      goto cleanup;
    }
    v[i] = e->valuedouble;
  }
cleanup:
  free(items);
  return st;
}

static hs_status_t string_axis(const hs_jreader_t *r, const cJSON *o, const char *key, size_t width,
                               void **out, size_t *n)
{
  hs_status_t st = HS_OK;
  const cJSON **items = NULL;
  int count = 0;
  HS_CHECK(axis_items(r, o, key, &items, &count));
  if (!count)
    goto cleanup;
  char *v = hs_calloc((size_t)count, width);
  if (!v)
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file));
  *out = v;
  *n = (size_t)count;
  for (int i = 0; i < count; i++) {
    const cJSON *e = items[i];
    if (!cJSON_IsString(e) || !e->valuestring[0] || strlen(e->valuestring) >= width) {
      char *txt = cJSON_PrintUnformatted(e);
      st = hs_error_set(r->err, HS_EINVAL,
                        "%s: %s[%d]: must be a non-empty string of at most %zu characters, got %.80s",
                        r->file, key, i, width - 1, txt ? txt : "?");
      free(txt);
      goto cleanup;
    }
    memcpy(v + (size_t)i * width, e->valuestring, strlen(e->valuestring) + 1);
  }
cleanup:
  free(items);
  return st;
}

/* Counts of one composition entry: an integer or an array of integers in
 * [0, HS_CLUSTER_MAX_DEVICES]. */
static hs_status_t read_counts(const hs_jreader_t *r, const cJSON *e, const char *path,
                               int64_t *vals, int *n)
{
  int count = cJSON_IsArray(e) ? cJSON_GetArraySize(e) : 1;
  if (count < 1 || count > 64)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: must be a count or an array of 1 to 64 counts",
                        r->file, path);
  const cJSON *x = cJSON_IsArray(e) ? e->child : e;
  for (int i = 0; i < count; i++, x = x->next) {
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0 ||
        x->valuedouble > HS_CLUSTER_MAX_DEVICES || x->valuedouble != floor(x->valuedouble)) {
      char *txt = cJSON_PrintUnformatted(x);
      hs_status_t st = hs_error_set(r->err, HS_EINVAL,
                                    "%s: %s: must be an integer in [0, %d], got %.60s", r->file,
                                    path, HS_CLUSTER_MAX_DEVICES, txt ? txt : "?");
      free(txt);
      return st;
    }
    vals[i] = (int64_t)x->valuedouble;
  }
  *n = count;
  return HS_OK;
}

static hs_status_t push_cluster(const hs_jreader_t *r, hs_sweep_spec_t *s, size_t *cap,
                                const hs_sweep_cluster_t *c)
{
  if (s->n_clusters >= HS_SWEEP_MAX_AXIS)
    return hs_error_set(r->err, HS_ELIMIT, "%s: clusters: more than %d clusters after expansion",
                        r->file, HS_SWEEP_MAX_AXIS);
  if (hs_reserve((void **)&s->clusters, cap, s->n_clusters + 1, sizeof *s->clusters) != HS_OK)
    return hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file);
  s->clusters[s->n_clusters++] = *c;
  return HS_OK;
}

static hs_status_t read_clusters(const hs_jreader_t *r, const cJSON *root, hs_sweep_spec_t *s)
{
  hs_status_t st = HS_OK;
  const cJSON **items = NULL;
  int count = 0;
  size_t cap = 0;
  HS_CHECK(axis_items(r, root, "clusters", &items, &count));
  if (!count)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: clusters: required (catalog names, files or "
                                            "compositions {\"GPU\": count})", r->file));
  for (int i = 0; i < count; i++) {
    const cJSON *e = items[i];
    hs_sweep_cluster_t c;
    memset(&c, 0, sizeof c);
    if (cJSON_IsString(e)) {
      if (!e->valuestring[0] || strlen(e->valuestring) >= sizeof c.base)
        HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: clusters[%d]: empty or too long name", r->file, i));
      hs_strlcpy(c.base, e->valuestring, sizeof c.base);
      HS_CHECK(push_cluster(r, s, &cap, &c));
      continue;
    }
    if (!cJSON_IsObject(e)) {
      char *txt = cJSON_PrintUnformatted(e);
      st = hs_error_set(r->err, HS_EINVAL,
                        "%s: clusters[%d]: must be a cluster name or a composition object, got %.60s",
                        r->file, i, txt ? txt : "?");
      free(txt);
      goto cleanup;
    }
    int nt = 0;
    int64_t vals[HS_SWEEP_MAX_TYPES][64];
    int nv[HS_SWEEP_MAX_TYPES];
    for (const cJSON *t = e->child; t; t = t->next) {
      char path[160];
      snprintf(path, sizeof path, "clusters[%d].%.80s", i, t->string);
      if (nt >= HS_SWEEP_MAX_TYPES)
        HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: clusters[%d]: at most %d GPU types", r->file, i,
                             HS_SWEEP_MAX_TYPES));
      if (!t->string[0] || strlen(t->string) >= HS_NAME_MAX)
        HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: bad GPU name", r->file, path));
      for (int k = 0; k < nt; k++)
        if (strcmp(c.gpu[k], t->string) == 0)
          HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: GPU type given twice", r->file, path));
      hs_strlcpy(c.gpu[nt], t->string, HS_NAME_MAX);
      HS_CHECK(read_counts(r, t, path, vals[nt], &nv[nt]));
      nt++;
    }
    if (nt == 0)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: clusters[%d]: empty composition", r->file, i));
    c.n_types = nt;
    /* cartesian product, first type slowest */
    int idx[HS_SWEEP_MAX_TYPES] = {0};
    for (;;) {
      int64_t total = 0;
      for (int k = 0; k < nt; k++) {
        c.count[k] = vals[k][idx[k]];
        total += c.count[k];
      }
      if (total > HS_CLUSTER_MAX_DEVICES)
        HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: clusters[%d]: %lld GPUs, at most %d", r->file,
                             i, (long long)total, HS_CLUSTER_MAX_DEVICES));
      if (total > 0)
        HS_CHECK(push_cluster(r, s, &cap, &c));
      int k = nt - 1;
      while (k >= 0 && ++idx[k] == nv[k])
        idx[k--] = 0;
      if (k < 0)
        break;
    }
  }
  if (s->n_clusters == 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: clusters: every composition has 0 GPUs", r->file));
cleanup:
  free(items);
  return st;
}

static hs_status_t read_prices(const hs_jreader_t *r, const cJSON *root, hs_sweep_spec_t *s)
{
  hs_status_t st = HS_OK;
  const cJSON *p = NULL;
  HS_CHECK(hs_json_object(r, root, "", "prices", false, &p));
  if (!p)
    return HS_OK;
  int n = cJSON_GetArraySize(p);
  if (n > HS_GPU_CATALOG_MAX)
    return hs_error_set(r->err, HS_ELIMIT, "%s: prices: at most %d entries", r->file, HS_GPU_CATALOG_MAX);
  s->price_overrides = hs_calloc((size_t)n + 1, sizeof *s->price_overrides);
  if (!s->price_overrides)
    return hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file);
  for (const cJSON *e = p->child; e; e = e->next) {
    char path[160];
    snprintf(path, sizeof path, "prices.%.80s", e->string);
    HS_CHECK(hs_json_expect_object(r, e, path));
    hs_json_warn_unknown(r, e, path, price_known);
    hs_price_override_t *o = &s->price_overrides[s->n_price_overrides++];
    if (!e->string[0] || strlen(e->string) >= HS_NAME_MAX)
      return hs_error_set(r->err, HS_EINVAL, "%s: %s: bad GPU name", r->file, path);
    hs_strlcpy(o->gpu, e->string, sizeof o->gpu);
    HS_CHECK(hs_json_number(r, e, path, "on_demand_usd_h", false, -1.0, HS_JNUM_ANY, 1e6,
                            &o->ondemand_usd_h));
    HS_CHECK(hs_json_number(r, e, path, "spot_usd_h", false, -1.0, HS_JNUM_ANY, 1e6, &o->spot_usd_h));
    if ((o->ondemand_usd_h < 0 && o->ondemand_usd_h != -1.0) || (o->spot_usd_h < 0 && o->spot_usd_h != -1.0))
      return hs_error_set(r->err, HS_EINVAL, "%s: %s: prices must be >= 0", r->file, path);
  }
cleanup:
  return st;
}

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static hs_status_t make_jobs(const hs_jreader_t *r, hs_sweep_spec_t *s)
{
  const size_t dims[] = {s->n_clusters, s->n_nic, s->n_xsite_GBps, s->n_xsite_latency,
                         s->n_models, s->n_global_batch, s->n_strategies};
  uint64_t total = 1;
  for (size_t i = 0; i < HS_ARRAY_LEN(dims); i++) {
    total *= dims[i];
    if (total > HS_SWEEP_MAX_JOBS)
      return hs_error_set(r->err, HS_ELIMIT, "%s: the grid has more than %d jobs; sample it with "
                                             "\"random\": {\"samples\": N}", r->file, HS_SWEEP_MAX_JOBS);
  }
  s->n_grid = total;
  size_t n = s->samples && s->samples < total ? (size_t)s->samples : (size_t)total;
  uint64_t *all = hs_calloc((size_t)total, sizeof *all);
  if (!all)
    return hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file);
  for (uint64_t i = 0; i < total; i++)
    all[i] = i;
  if (n < total) {
    uint64_t x = s->seed;
    for (size_t i = 0; i < n; i++) { /* partial Fisher-Yates */
      size_t j = i + (size_t)(splitmix64(&x) % (total - i));
      uint64_t t = all[i];
      all[i] = all[j];
      all[j] = t;
    }
    qsort(all, n, sizeof *all, cmp_u64);
  }
  s->jobs = all;
  s->n_jobs = n;
  return HS_OK;
}

hs_status_t hs_sweep_spec_parse(const char *text, const char *file, hs_sweep_spec_t *out,
                                 hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *root = NULL;
  const cJSON **items = NULL;
  int count = 0;
  if (!file)
    file = "sweep spec";
  hs_jreader_t rd = {file, err}, *r = &rd;
  hs_sweep_spec_destroy(out);
  hs_strlcpy(out->file, file, sizeof out->file);
  HS_CHECK(hs_json_parse(text, file, &root, err));
  HS_CHECK(hs_json_expect_object(r, root, ""));
  hs_json_warn_unknown(r, root, "", top_known);
  HS_CHECK(hs_json_string(r, root, "", "name", false, "sweep", out->name, sizeof out->name));
  HS_CHECK(read_clusters(r, root, out));

  const cJSON *lay = NULL;
  char sites[32] = "per-gpu-type";
  int64_t gpn = 8;
  HS_CHECK(hs_json_object(r, root, "", "layout", false, &lay));
  out->comp_nic_GBps = DEFAULT_COMP_NIC_GBPS;
  out->comp_xsite_GBps = DEFAULT_COMP_XSITE_GBPS;
  out->comp_xsite_latency_us = DEFAULT_COMP_XSITE_LATENCY_US;
  if (lay) {
    hs_json_warn_unknown(r, lay, "layout", layout_known);
    HS_CHECK(hs_json_string(r, lay, "layout", "sites", false, "per-gpu-type", sites, sizeof sites));
    HS_CHECK(hs_json_int(r, lay, "layout", "gpus_per_node", false, 8, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &gpn));
    HS_CHECK(hs_json_number(r, lay, "layout", "nic_GBps", false, DEFAULT_COMP_NIC_GBPS,
                            HS_JNUM_POSITIVE, HS_BW_MAX_GBPS, &out->comp_nic_GBps));
    HS_CHECK(hs_json_number(r, lay, "layout", "intersite_GBps", false, DEFAULT_COMP_XSITE_GBPS,
                            HS_JNUM_POSITIVE, HS_BW_MAX_GBPS, &out->comp_xsite_GBps));
    HS_CHECK(hs_json_number(r, lay, "layout", "intersite_latency_us", false,
                            DEFAULT_COMP_XSITE_LATENCY_US, HS_JNUM_NONNEG, HS_LATENCY_MAX_US,
                            &out->comp_xsite_latency_us));
  }
  if (strcmp(sites, "per-gpu-type") == 0)
    out->one_site = false;
  else if (strcmp(sites, "one") == 0)
    out->one_site = true;
  else
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: layout.sites: must be \"per-gpu-type\" or \"one\", got \"%s\"",
                         file, sites));
  out->gpus_per_node = (int32_t)gpn;

  HS_CHECK(number_axis(r, root, "nic_GBps", 0.0, HS_BW_MAX_GBPS, false, &out->nic_GBps, &out->n_nic));
  HS_CHECK(number_axis(r, root, "intersite_GBps", 0.0, HS_BW_MAX_GBPS, false, &out->xsite_GBps,
                       &out->n_xsite_GBps));
  HS_CHECK(number_axis(r, root, "intersite_latency_us", -1.0, HS_LATENCY_MAX_US, true,
                       &out->xsite_latency_us, &out->n_xsite_latency));
  for (size_t i = 0; i < out->n_nic; i++)
    if (out->nic_GBps[i] > 0 && out->nic_GBps[i] < HS_BW_MIN_GBPS)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: nic_GBps[%zu]: below %g", file, i, HS_BW_MIN_GBPS));
  for (size_t i = 0; i < out->n_xsite_GBps; i++)
    if (out->xsite_GBps[i] > 0 && out->xsite_GBps[i] < HS_BW_MIN_GBPS)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: intersite_GBps[%zu]: below %g", file, i, HS_BW_MIN_GBPS));

  HS_CHECK(string_axis(r, root, "models", sizeof *out->models, (void **)&out->models, &out->n_models));
  if (!out->n_models)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: models: required (catalog names or model files)", file));

  /* global batch: integers >= 0 (0 = the sweep's fixed default), or a
   * batch per GPU that grows with the cluster */
  HS_CHECK(hs_json_int(r, root, "", "global_batch_per_gpu", false, 0, 1, 1 << 20,
                       &out->global_batch_per_gpu));
  HS_CHECK(axis_items(r, root, "global_batch", &items, &count));
  out->n_global_batch = count ? (size_t)count : 1;
  out->global_batch = hs_calloc(out->n_global_batch, sizeof *out->global_batch);
  if (!out->global_batch)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  for (int i = 0; i < count; i++) {
    const cJSON *e = items[i];
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0 ||
        e->valuedouble > 1e12 || e->valuedouble != floor(e->valuedouble)) {
      char *txt = cJSON_PrintUnformatted(e);
      st = hs_error_set(err, HS_EINVAL, "%s: global_batch[%d]: must be an integer in [0, 1e12], got %.60s",
                        file, i, txt ? txt : "?");
      free(txt);
      goto cleanup;
    }
    out->global_batch[i] = (int64_t)e->valuedouble;
  }
  if (count && out->global_batch_per_gpu > 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: global_batch_per_gpu: give it or global_batch, not both",
                         file));
  free(items);
  items = NULL;

  HS_CHECK(string_axis(r, root, "strategies", sizeof *out->strategies, (void **)&out->strategies,
                       &out->n_strategies));
  if (!out->n_strategies) {
    out->n_strategies = HS_ARRAY_LEN(default_strategies);
    out->strategies = hs_calloc(out->n_strategies, sizeof *out->strategies);
    if (!out->strategies)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
    for (size_t i = 0; i < out->n_strategies; i++)
      hs_strlcpy(out->strategies[i], default_strategies[i], sizeof out->strategies[i]);
  }
  for (size_t i = 0; i < out->n_strategies; i++)
    if (!hs_planner_find(out->strategies[i]))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: strategies[%zu]: unknown strategy \"%s\" (hetsim list strategies)",
                           file, i, out->strategies[i]));

  HS_CHECK(axis_items(r, root, "price_models", &items, &count));
  if (!count) {
    out->prices[0] = HS_PRICE_ONDEMAND;
    out->n_prices = 1;
  }
  for (int i = 0; i < count; i++) {
    const cJSON *e = items[i];
    const char *v = cJSON_IsString(e) ? e->valuestring : "";
    hs_price_model_t pm;
    if (strcmp(v, "on-demand") == 0)
      pm = HS_PRICE_ONDEMAND;
    else if (strcmp(v, "spot") == 0)
      pm = HS_PRICE_SPOT;
    else
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: price_models[%d]: must be \"on-demand\" or \"spot\", got \"%.40s\"",
                           file, i, v));
    for (size_t k = 0; k < out->n_prices; k++)
      if (out->prices[k] == pm)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: price_models[%d]: \"%s\" given twice", file, i, v));
    out->prices[out->n_prices++] = pm;
  }
  HS_CHECK(read_prices(r, root, out));

  HS_CHECK(hs_json_number(r, root, "", "train_tokens", false, DEFAULT_TRAIN_TOKENS, HS_JNUM_POSITIVE,
                          1e18, &out->train_tokens));
  HS_CHECK(hs_json_number(r, root, "", "time_limit_s", false, DEFAULT_TIME_LIMIT_S, HS_JNUM_NONNEG,
                          1e6, &out->time_limit_s));
  int64_t v = 0;
  HS_CHECK(hs_json_int(r, root, "", "max_microbatch_size", false, 8, 1, 1 << 20, &v));
  out->max_microbatch_size = (int32_t)v;
  HS_CHECK(hs_json_int(r, root, "", "seq_len", false, 0, 0, 1 << 24, &out->seq_len));
  char prec[16];
  HS_CHECK(hs_json_string(r, root, "", "precision", false, "bf16", prec, sizeof prec));
  if (hs_dtype_parse(prec, &out->precision) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: precision: must be bf16, fp16, fp8 or fp32, got \"%s\"",
                         file, prec));
  HS_CHECK(hs_json_number(r, root, "", "memory_headroom", false, HS_MEMORY_HEADROOM_DEFAULT,
                          HS_JNUM_NONNEG, 1.0, &out->memory_headroom));
  if (!(out->memory_headroom < 1.0))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: memory_headroom: must be a fraction in [0, 1), got %g",
                         file, out->memory_headroom));
  /* training practice for every job (docs/simulator.md, "Modern training practice") */
  hs_practice_init(&out->practice);
  char kern[40];
  HS_CHECK(hs_json_string(r, root, "", "kernels", false, HS_KERNELS_DEFAULT, kern, sizeof kern));
  if (hs_kernels_preset(kern, &out->practice.kernels) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: kernels: unknown preset \"%s\" (megatron-2021, "
                         "megatron-core-2024, ...)", file, kern));
  char att[16];
  HS_CHECK(hs_json_string(r, root, "", "attention", false, "", att, sizeof att));
  if (att[0] && hs_attention_parse(att, &out->practice.kernels.attention) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: attention: must be \"flash\" or \"unfused\", got \"%s\"",
                         file, att));
  HS_CHECK(hs_json_bool(r, root, "", "sequence_parallel", false, false,
                        &out->practice.sequence_parallel));
  HS_CHECK(hs_json_bool(r, root, "", "tp_comm_overlap", false, false, &out->practice.tp_comm_overlap));
  if (out->practice.tp_comm_overlap && !out->practice.sequence_parallel)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: tp_comm_overlap: needs \"sequence_parallel\": true",
                         file));
  int64_t zs = 0;
  HS_CHECK(hs_json_int(r, root, "", "zero_stage", false, 0, 0, 3, &zs));
  out->practice.zero_stage = (int32_t)zs;
  char grd[16];
  HS_CHECK(hs_json_string(r, root, "", "grad_reduce_dtype", false, "default", grd, sizeof grd));
  if (hs_grad_reduce_parse(grd, &out->practice.grad_reduce_fp32) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: grad_reduce_dtype: must be fp32 or default, got \"%s\"",
                         file, grd));
  const cJSON *rnd = NULL;
  HS_CHECK(hs_json_object(r, root, "", "random", false, &rnd));
  if (rnd) {
    int64_t n = 0, seed = 1;
    hs_json_warn_unknown(r, rnd, "random", random_known);
    HS_CHECK(hs_json_int(r, rnd, "random", "samples", true, 0, 1, HS_SWEEP_MAX_JOBS, &n));
    HS_CHECK(hs_json_int(r, rnd, "random", "seed", false, 1, 0, INT64_C(1) << 53, &seed));
    out->samples = (uint64_t)n;
    out->seed = (uint64_t)seed;
  }
  HS_CHECK(make_jobs(r, out));
cleanup:
  free(items);
  hs_json_free(root);
  if (st != HS_OK) {
    char f[256];
    hs_strlcpy(f, out->file, sizeof f);
    hs_sweep_spec_destroy(out);
    hs_strlcpy(out->file, f, sizeof out->file);
  }
  return st;
}

hs_status_t hs_sweep_spec_load(const char *path, hs_sweep_spec_t *out, hs_error_t *err)
{
  char *text = NULL;
  size_t len = 0;
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, &len, err);
  if (st == HS_OK)
    st = hs_sweep_spec_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

/* ---- compositions and what-if clusters as cluster JSON ------------------------ */

static void site_name(const char *gpu, char *buf, size_t n)
{
  size_t k = 0;
  for (; gpu[k] && k + 1 < n; k++)
    buf[k] = (char)tolower((unsigned char)gpu[k]);
  buf[k] = '\0';
}

/* Adds node groups for `count` GPUs of `gpu` to array `nodes`: full nodes of
 * gpus_per_node, then one smaller node for the remainder. */
static bool add_groups(cJSON *nodes, const char *gpu, int64_t count, int32_t gpus_per_node,
                       double nic_GBps)
{
  int64_t full = count / gpus_per_node, rem = count % gpus_per_node;
  for (int k = 0; k < 2; k++) {
    int64_t nn = k == 0 ? full : (rem ? 1 : 0);
    if (!nn)
      continue;
    cJSON *g = cJSON_CreateObject(), *nic = NULL;
    if (!g || !cJSON_AddItemToArray(nodes, g)) {
      cJSON_Delete(g);
      return false;
    }
    /* every member or false: out of memory never yields a partial node group */
    if (!cJSON_AddNumberToObject(g, "count", (double)nn) || !cJSON_AddStringToObject(g, "gpu", gpu) ||
        !cJSON_AddNumberToObject(g, "gpus_per_node", (double)(k == 0 ? gpus_per_node : rem)) ||
        !(nic = cJSON_AddObjectToObject(g, "nic")) || !cJSON_AddNumberToObject(nic, "GBps", nic_GBps))
      return false;
  }
  return true;
}

static bool add_link(cJSON *links, const char *a, const char *b, double GBps, double lat_us)
{
  cJSON *l = cJSON_CreateObject();
  if (!l || !cJSON_AddItemToArray(links, l)) {
    cJSON_Delete(l);
    return false;
  }
  const char *both[2] = {a, b};
  cJSON *bt = cJSON_CreateStringArray(both, 2);
  if (!bt || !cJSON_AddItemToObject(l, "between", bt)) {
    cJSON_Delete(bt);
    return false;
  }
  return cJSON_AddNumberToObject(l, "GBps", GBps) &&
         cJSON_AddNumberToObject(l, "latency_us", lat_us) != NULL;
}

static hs_status_t print_out(cJSON *root, char **out, hs_error_t *err)
{
  *out = root ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  return *out ? HS_OK : hs_error_set(err, HS_ENOMEM, "out of memory building a cluster");
}

void hs_sweep_cluster_label(const hs_sweep_cluster_t *c, char *buf, size_t n)
{
  if (c->base[0]) {
    hs_strlcpy(buf, c->base, n);
    return;
  }
  size_t len = 0;
  buf[0] = '\0';
  for (int32_t k = 0; k < c->n_types; k++) {
    if (c->count[k] <= 0)
      continue;
    int w = snprintf(buf + len, len < n ? n - len : 0, "%s%s:%lld", len ? "+" : "", c->gpu[k],
                     (long long)c->count[k]);
    if (w < 0 || (size_t)w >= n - len)
      return;
    len += (size_t)w;
  }
}

hs_status_t hs_sweep_composition_json(const hs_sweep_cluster_t *comp, bool one_site,
                                      int32_t gpus_per_node, double nic_GBps, double xsite_GBps,
                                      double xsite_latency_us, char **out, hs_error_t *err)
{
  cJSON *root = cJSON_CreateObject();
  char label[512];
  hs_sweep_cluster_label(comp, label, sizeof label);
  bool ok = root != NULL;
  cJSON *sites = ok ? cJSON_AddArrayToObject(root, "sites") : NULL;
  ok = ok && sites && cJSON_AddStringToObject(root, "description", label);
  char names[HS_SWEEP_MAX_TYPES][HS_NAME_MAX];
  int n_sites = 0;
  cJSON *one_nodes = NULL;
  for (int32_t k = 0; ok && k < comp->n_types; k++) {
    if (comp->count[k] <= 0)
      continue;
    cJSON *nodes = one_nodes;
    if (!nodes) {
      cJSON *s = cJSON_CreateObject();
      ok = s && cJSON_AddItemToArray(sites, s);
      if (!ok) {
        cJSON_Delete(s);
        break;
      }
      site_name(one_site ? "site" : comp->gpu[k], names[n_sites], HS_NAME_MAX);
      nodes = cJSON_AddStringToObject(s, "name", names[n_sites++]) ? cJSON_AddArrayToObject(s, "nodes")
                                                                   : NULL;
      ok = nodes != NULL;
      if (one_site)
        one_nodes = nodes;
    }
    ok = ok && add_groups(nodes, comp->gpu[k], comp->count[k], gpus_per_node, nic_GBps);
  }
  if (ok && n_sites > 1) {
    cJSON *links = cJSON_AddArrayToObject(root, "links");
    ok = links != NULL;
    for (int a = 0; ok && a < n_sites; a++)
      for (int b = a + 1; ok && b < n_sites; b++)
        ok = add_link(links, names[a], names[b], xsite_GBps, xsite_latency_us);
  }
  if (!ok) {
    cJSON_Delete(root);
    root = NULL;
  }
  return print_out(root, out, err);
}

hs_status_t hs_whatif_cluster_json(const hs_cluster_t *base, const char *const *gpus,
                                   const int64_t *count, int32_t n_types, int32_t gpus_per_node,
                                   double nic_GBps, double link_GBps, double link_latency_us,
                                   char **out, hs_error_t *err)
{
  cJSON *root = NULL;
  bool ok = true;
  if (base) {
    cJSON *j = hs_cluster_to_json(base);
    root = cJSON_CreateObject();
    ok = j && root;
    /* keep only what reads back as a cluster file */
    static const char *const keep[] = {"name", "sites", "links", "spot", NULL};
    for (int k = 0; ok && keep[k]; k++) {
      cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(j, keep[k]);
      if (it && !cJSON_AddItemToObject(root, keep[k], it)) {
        cJSON_Delete(it);
        ok = false; /* out of memory: never a cluster with a part missing */
      }
    }
    cJSON_Delete(j);
  } else {
    root = cJSON_CreateObject();
    ok = root != NULL;
    if (ok)
      ok = cJSON_AddStringToObject(root, "name", "purchase") && cJSON_AddArrayToObject(root, "sites");
  }
  int64_t added = 0;
  for (int32_t k = 0; k < n_types; k++)
    added += count[k];
  if (ok && added > 0) {
    cJSON *sites = cJSON_GetObjectItemCaseSensitive(root, "sites");
    cJSON *s = cJSON_CreateObject();
    ok = sites && s && cJSON_AddItemToArray(sites, s);
    if (!ok)
      cJSON_Delete(s);
    else {
      cJSON *nodes = cJSON_AddStringToObject(s, "name", "added") ? cJSON_AddArrayToObject(s, "nodes")
                                                                 : NULL;
      ok = nodes != NULL;
      for (int32_t k = 0; ok && k < n_types; k++)
        if (count[k] > 0)
          ok = add_groups(nodes, gpus[k], count[k], gpus_per_node, nic_GBps);
    }
    if (ok && base) {
      cJSON *links = cJSON_GetObjectItemCaseSensitive(root, "links");
      if (!links)
        links = cJSON_AddArrayToObject(root, "links");
      ok = links != NULL;
      for (size_t i = 0; ok && i < base->n_sites; i++)
        ok = add_link(links, base->sites[i].name, "added", link_GBps, link_latency_us);
    }
  }
  if (!ok) {
    cJSON_Delete(root);
    root = NULL;
  }
  return print_out(root, out, err);
}
