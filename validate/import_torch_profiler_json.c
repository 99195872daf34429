/*
 * import_torch_profiler_json.c - the cJSON edge of `hetsim import
 * torch-profiler`: reads a PyTorch profiler (Kineto) Chrome trace into
 * plain events (hs_tp_event_t); import_torch_profiler.c does the rest.
 *
 *   {"deviceProperties": [{"name": "NVIDIA H100 80GB HBM3", ...}],
 *    "record_shapes": 1, "host_name": "vm",
 *    "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::addmm",
 *                     "pid": 9654, "tid": 9654, "ts": 4639786201850.576, "dur": 223.421,
 *                     "args": {"External id": 7, "Input Dims": [[512], [64, 256], [256, 512]],
 *                              "Input type": ["float", "float", "float"], ...}}, ...]}
 *
 * Only complete events ("ph": "X") are kept; categories map to kinds:
 * cpu_op, kernel, gpu_memcpy/gpu_memset, user_annotation "ProfilerStep#N"
 * (the step), gpu_user_annotation "ProfilerStep#N" (its GPU side). c10d
 * ops carry "In msg nelems", "Group size" and "dtype". pid and tid may be
 * numbers or strings ("stream 7"): strings become an FNV-1a hash. Every
 * event must have a name, a finite ts and a dur >= 0. O(events).
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENTS 20000000

void hs_torch_trace_init(hs_torch_trace_t *t) { memset(t, 0, sizeof *t); }

void hs_torch_trace_destroy(hs_torch_trace_t *t)
{
  if (!t)
    return;
  free(t->ev);
  memset(t, 0, sizeof *t);
}

static int64_t fnv(const char *s)
{
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return (int64_t)(h >> 1);
}

static bool id_of(const cJSON *v, int64_t *out)
{
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && fabs(v->valuedouble) < 9e15) {
    *out = (int64_t)v->valuedouble;
    return true;
  }
  if (cJSON_IsString(v)) {
    *out = fnv(v->valuestring);
    return true;
  }
  return false;
}

/* Bytes per element of a profiler type name; 0 for non-tensors. */
static int32_t type_size(const char *t)
{
  static const struct { const char *n; int32_t b; } k[] = {
      {"float", 4},           {"double", 8},        {"c10::Half", 2},  {"c10::BFloat16", 2},
      {"int", 4},             {"long int", 8},      {"bool", 1},       {"signed char", 1},
      {"unsigned char", 1},   {"short int", 2},     {"c10::Float8_e4m3fn", 1},
      {"c10::Float8_e5m2", 1}, {"Float", 4},        {"Half", 2},       {"BFloat16", 2},
      {"Long", 8},            {"Int", 4},           {"Double", 8},     {"Byte", 1}, {"Bool", 1},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(k); i++)
    if (strcmp(t, k[i].n) == 0)
      return k[i].b;
  return 0;
}

static hs_tp_kind_t kind_of(const char *cat, const char *name)
{
  bool step = strncmp(name, "ProfilerStep#", 13) == 0;
  if (strcmp(cat, "cpu_op") == 0)
    return HS_TPE_CPU_OP;
  if (strcmp(cat, "kernel") == 0)
    return HS_TPE_KERNEL;
  if (strcmp(cat, "gpu_memcpy") == 0 || strcmp(cat, "gpu_memset") == 0)
    return HS_TPE_MEMCPY;
  if (step && strcmp(cat, "user_annotation") == 0)
    return HS_TPE_STEP;
  if (step && strcmp(cat, "gpu_user_annotation") == 0)
    return HS_TPE_GPU_STEP;
  return HS_TPE_OTHER;
}

static hs_status_t read_args(const cJSON *args, const char *file, int idx, hs_tp_event_t *e,
                             hs_error_t *err)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(args, "External id");
  if (x && !id_of(x, &e->ext_id))
    return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].args.External id: expected a number",
                        file, idx);
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
  const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
  if (dims && !cJSON_IsArray(dims))
    return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].args.Input Dims: expected an array",
                        file, idx);
  int i = 0;
  for (const cJSON *d = dims ? dims->child : NULL; d && i < HS_TP_MAX_INPUTS; d = d->next, i++) {
    if (!cJSON_IsArray(d))
      return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].args.Input Dims[%d]: expected an "
                          "array of sizes", file, idx, i);
    double numel = 1.0;
    int r = 0;
    for (const cJSON *v = d->child; v; v = v->next, r++) {
      if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 1e15)
        return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].args.Input Dims[%d][%d]: expected "
                            "a size >= 0", file, idx, i, r);
      if (r < 4)
        e->dims[i][r] = (int64_t)v->valuedouble;
      numel *= v->valuedouble;
    }
    if (numel > 1e18)
      return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].args.Input Dims[%d]: more than 1e18 "
                          "elements", file, idx, i);
    e->rank[i] = r;
    e->numel[i] = r ? numel : 0.0; /* scalars ([]) are not tensors */
  }
  e->n_inputs = i;
  int k = 0;
  for (const cJSON *t = cJSON_IsArray(types) ? types->child : NULL; t && k < e->n_inputs;
       t = t->next, k++) {
    if (!cJSON_IsString(t))
      continue;
    e->elsize[k] = e->rank[k] ? type_size(t->valuestring) : 0;
    if (e->elsize[k] && !e->type0[0])
      hs_strlcpy(e->type0, t->valuestring, sizeof e->type0);
  }
  const cJSON *ne = cJSON_GetObjectItemCaseSensitive(args, "In msg nelems");
  if (ne) {
    if (!cJSON_IsNumber(ne) || !(ne->valuedouble >= 0) || ne->valuedouble > 1e15)
      return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].args.In msg nelems: expected a "
                          "count >= 0", file, idx);
    e->comm_nelems = ne->valuedouble;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(args, "Group size");
    if (cJSON_IsNumber(g) && g->valuedouble >= 1 && g->valuedouble < 1e7)
      e->comm_group = (int32_t)g->valuedouble;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(args, "dtype");
    e->comm_elsize = cJSON_IsString(dt) ? type_size(dt->valuestring) : 0;
  }
  return HS_OK;
}

hs_status_t hs_torch_trace_parse(const char *text, const char *file, hs_torch_trace_t *out,
                                 hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_torch_trace_init(out);
  if (!file)
    file = "trace.json";
  hs_strlcpy(out->file, file, sizeof out->file);
  hs_jreader_t r = {file, err};
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  const cJSON *evs = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "traceEvents", true, &evs, &n));
  if (n > MAX_EVENTS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: traceEvents: %d events (max %d)", file, n, MAX_EVENTS));
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "record_shapes");
  out->record_shapes = cJSON_IsNumber(rs) ? rs->valuedouble != 0 : cJSON_IsTrue(rs);
  const cJSON *dp = cJSON_GetObjectItemCaseSensitive(j, "deviceProperties");
  const cJSON *d0 = cJSON_IsArray(dp) ? dp->child : NULL;
  const cJSON *dn = cJSON_IsObject(d0) ? cJSON_GetObjectItemCaseSensitive(d0, "name") : NULL;
  const cJSON *host = cJSON_GetObjectItemCaseSensitive(j, "host_name");
  if (cJSON_IsString(dn))
    hs_strlcpy(out->device, dn->valuestring, sizeof out->device);
  else
    snprintf(out->device, sizeof out->device, "cpu: %.100s",
             cJSON_IsString(host) ? host->valuestring : "?");
  int32_t n_x = 0;
  for (const cJSON *e = evs->child; e; e = e->next) {
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    n_x += cJSON_IsString(ph) && strcmp(ph->valuestring, "X") == 0;
  }
  out->ev = hs_calloc((size_t)n_x + 1, sizeof *out->ev);
  if (!out->ev)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int idx = 0;
  for (const cJSON *e = evs->child; e; e = e->next, idx++) {
    if (!cJSON_IsObject(e))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d]: expected an object", file, idx));
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0)
      continue;
    hs_tp_event_t *x = &out->ev[out->n++];
    x->ext_id = -1;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
    if (!cJSON_IsString(name))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].name: expected a string", file, idx));
    if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || fabs(ts->valuedouble) > 1e18)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].ts: expected a time in us", file,
                           idx));
    if (!cJSON_IsNumber(dur) || !(dur->valuedouble >= 0) || dur->valuedouble > 1e15)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].dur: expected a duration >= 0 us",
                           file, idx));
    hs_strlcpy(x->name, name->valuestring, sizeof x->name);
    x->kind = kind_of(cJSON_IsString(cat) ? cat->valuestring : "", x->name);
    x->ts_us = ts->valuedouble;
    x->dur_us = dur->valuedouble;
    if (!id_of(cJSON_GetObjectItemCaseSensitive(e, "pid"), &x->pid))
      x->pid = 0;
    if (!id_of(cJSON_GetObjectItemCaseSensitive(e, "tid"), &x->tid))
      x->tid = 0;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    if (cJSON_IsObject(args))
      HS_CHECK(read_args(args, file, idx, x, err));
  }
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_torch_trace_destroy(out);
  return st;
}

hs_status_t hs_torch_trace_load(const char *path, hs_torch_trace_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_torch_trace_init(out);
  hs_status_t st = hs_file_read(path, (size_t)1 << 31, &text, NULL, err);
  if (st == HS_OK)
    st = hs_torch_trace_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}
