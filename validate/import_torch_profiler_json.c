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

/* One traceEvents element (already parsed on its own) into out->ev. */
static hs_status_t read_event(const cJSON *e, const char *file, int idx, hs_torch_trace_t *out,
                              hs_error_t *err)
{
  if (!cJSON_IsObject(e))
    return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d]: expected an object", file, idx);
  const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
  if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0)
    return HS_OK;
  hs_tp_event_t *x = &out->ev[out->n++];
  x->ext_id = -1;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
  const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
  const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
  if (!cJSON_IsString(name))
    return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].name: expected a string", file, idx);
  if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || fabs(ts->valuedouble) > 1e18)
    return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].ts: expected a time in us", file, idx);
  if (!cJSON_IsNumber(dur) || !(dur->valuedouble >= 0) || dur->valuedouble > 1e15 ||
      (dur->valuedouble != 0 && !isnormal(dur->valuedouble)))
    return hs_error_set(err, HS_EINVAL, "%s: traceEvents[%d].dur: expected a duration >= 0 us "
                        "(0 or a normal number)", file, idx);
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
    return read_args(args, file, idx, x, err);
  return HS_OK;
}

/*
 * The trace is not parsed into one cJSON tree: a tree costs ~40 bytes per
 * byte of trace. A minimal scanner walks the top-level object and the
 * traceEvents array, finding where each value ends (strings with escapes,
 * nesting), and cJSON parses one value at a time, which is freed before the
 * next. Every value still goes through cJSON, so malformed JSON is refused;
 * the scanner checks the punctuation between values. Memory: the text plus
 * one hs_tp_event_t per element of traceEvents.
 */
typedef struct scan {
  const char *text, *p, *end;
  const char *file;
  hs_error_t *err;
} scan_t;

#define SCAN_MAX_DEPTH 512

/* The position of `at` as line, column and byte offset; never the text
 * there (error messages quote no input bytes). O(at - text), on errors only. */
static hs_status_t scan_error(const scan_t *s, const char *at, const char *what)
{
  int line = 1, col = 1;
  for (const char *q = s->text; q < at; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  if (at >= s->end)
    return hs_error_set(s->err, HS_EPARSE, "%s: malformed JSON at line %d, column %d (byte %td): "
                        "unexpected end of input", s->file, line, col, at - s->text);
  return hs_error_set(s->err, HS_EPARSE, "%s: malformed JSON at line %d, column %d (byte %td): %s",
                      s->file, line, col, at - s->text, what);
}

static void scan_ws(scan_t *s)
{
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

/* Past the string starting at s->p ('"'). */
static hs_status_t scan_string(scan_t *s)
{
  const char *q = s->p + 1;
  while (q < s->end && *q != '"')
    q += *q == '\\' ? 2 : 1;
  if (q >= s->end)
    return scan_error(s, s->end, "unterminated string");
  s->p = q + 1;
  return HS_OK;
}

/* Past the value starting at s->p. */
static hs_status_t scan_value(scan_t *s)
{
  char stack[SCAN_MAX_DEPTH];
  int depth = 0;
  if (s->p >= s->end)
    return scan_error(s, s->p, "expected a value");
  if (*s->p == '"')
    return scan_string(s);
  if (*s->p != '{' && *s->p != '[') {
    const char *b = s->p;
    while (s->p < s->end && !strchr(",]} \t\r\n", *s->p))
      s->p++;
    return s->p > b ? HS_OK : scan_error(s, b, "expected a value");
  }
  while (s->p < s->end) {
    char c = *s->p;
    if (c == '"') {
      hs_status_t st = scan_string(s);
      if (st != HS_OK)
        return st;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == SCAN_MAX_DEPTH)
        return scan_error(s, s->p, "nested deeper than 512 levels");
      stack[depth++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
      if (stack[depth - 1] != c)
        return scan_error(s, s->p, "mismatched bracket");
      if (--depth == 0) {
        s->p++;
        return HS_OK;
      }
    }
    s->p++;
  }
  return scan_error(s, s->end, "");
}

/* Parses the value at s->p with cJSON (and moves past it); *out freed by the
 * caller. */
static hs_status_t scan_parse(scan_t *s, cJSON **out)
{
  const char *b = s->p, *pe = NULL;
  hs_status_t st = scan_value(s);
  if (st != HS_OK)
    return st;
  hs_json_oom_clear();
  *out = cJSON_ParseWithLengthOpts(b, (size_t)(s->p - b), &pe, 0);
  if (*out && pe == s->p)
    return HS_OK;
  cJSON_Delete(*out);
  *out = NULL;
  if (hs_json_oom())
    return hs_error_set(s->err, HS_ENOMEM, "%s: out of memory parsing JSON", s->file);
  return scan_error(s, pe && pe >= b && pe <= s->p ? pe : b, "invalid value");
}

/* Calls `each` on every element of the array at s->p ('['), moves past it. */
static hs_status_t scan_array(scan_t *s, hs_torch_trace_t *out, bool count_only, int *n)
{
  hs_status_t st = HS_OK;
  *n = 0;
  s->p++;
  scan_ws(s);
  if (s->p < s->end && *s->p == ']') {
    s->p++;
    return HS_OK;
  }
  for (;;) {
    scan_ws(s);
    if (*n >= MAX_EVENTS)
      return hs_error_set(s->err, HS_ELIMIT, "%s: traceEvents: more than %d events", s->file,
                          MAX_EVENTS);
    if (count_only) {
      if ((st = scan_value(s)) != HS_OK)
        return st;
    } else {
      cJSON *e = NULL;
      if ((st = scan_parse(s, &e)) != HS_OK)
        return st;
      st = read_event(e, s->file, *n, out, s->err);
      cJSON_Delete(e);
      if (st != HS_OK)
        return st;
    }
    (*n)++;
    scan_ws(s);
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      continue;
    }
    if (s->p < s->end && *s->p == ']') {
      s->p++;
      return HS_OK;
    }
    return scan_error(s, s->p, "expected ',' or ']' in traceEvents");
  }
}

static bool key_is(const char *b, const char *e, const char *key)
{
  size_t n = strlen(key);
  return (size_t)(e - b) == n && memcmp(b, key, n) == 0;
}

hs_status_t hs_torch_trace_parse(const char *text, const char *file, hs_torch_trace_t *out,
                                 hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *v = NULL;
  hs_torch_trace_init(out);
  if (!file)
    file = "trace.json";
  hs_strlcpy(out->file, file, sizeof out->file);
  scan_t s = {text, text, text + strlen(text), file, err};
  bool have_events = false, have_device = false;
  char host[100] = "?";
  scan_ws(&s);
  if (s.p >= s.end || *s.p != '{')
    HS_FAIL(s.p < s.end && strchr("[\"-0123456789tfn", *s.p)
                ? hs_error_set(err, HS_EINVAL, "%s: (top level): must be an object", file)
                : scan_error(&s, s.p, "expected an object"));
  s.p++;
  scan_ws(&s);
  if (s.p < s.end && *s.p == '}') {
    s.p++;
  } else {
    for (;;) {
      scan_ws(&s);
      if (s.p >= s.end || *s.p != '"')
        HS_FAIL(scan_error(&s, s.p, "expected a member name"));
      const char *kb = s.p + 1;
      HS_CHECK(scan_string(&s));
      const char *ke = s.p - 1;
      scan_ws(&s);
      if (s.p >= s.end || *s.p != ':')
        HS_FAIL(scan_error(&s, s.p, "expected ':'"));
      s.p++;
      scan_ws(&s);
      if (key_is(kb, ke, "traceEvents")) {
        if (have_events)
          HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents: given twice", file));
        have_events = true;
        if (s.p >= s.end || *s.p != '[') {
          HS_CHECK(scan_parse(&s, &v)); /* a malformed value is a parse error first */
          HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents: must be an array", file));
        }
        /* count first, so that the events take one exact allocation */
        scan_t c = s;
        int n = 0;
        HS_CHECK(scan_array(&c, out, true, &n));
        out->ev = hs_calloc((size_t)n + 1, sizeof *out->ev);
        if (!out->ev)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory for %d events", file, n));
        HS_CHECK(scan_array(&s, out, false, &n));
      } else {
        HS_CHECK(scan_parse(&s, &v));
        if (key_is(kb, ke, "record_shapes")) {
          out->record_shapes = cJSON_IsNumber(v) ? v->valuedouble != 0 : cJSON_IsTrue(v);
        } else if (key_is(kb, ke, "deviceProperties") && !have_device) {
          const cJSON *d0 = cJSON_IsArray(v) ? v->child : NULL;
          const cJSON *dn = cJSON_IsObject(d0) ? cJSON_GetObjectItemCaseSensitive(d0, "name") : NULL;
          if (cJSON_IsString(dn)) {
            hs_strlcpy(out->device, dn->valuestring, sizeof out->device);
            have_device = true;
          }
        } else if (key_is(kb, ke, "host_name") && cJSON_IsString(v)) {
          hs_strlcpy(host, v->valuestring, sizeof host);
        }
        cJSON_Delete(v);
        v = NULL;
      }
      scan_ws(&s);
      if (s.p < s.end && *s.p == ',') {
        s.p++;
        continue;
      }
      if (s.p < s.end && *s.p == '}') {
        s.p++;
        break;
      }
      HS_FAIL(scan_error(&s, s.p, "expected ',' or '}'"));
    }
  }
  scan_ws(&s);
  if (s.p < s.end)
    HS_FAIL(scan_error(&s, s.p, "text after the top-level object"));
  if (!have_events)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: traceEvents: required field missing", file));
  if (!have_device)
    snprintf(out->device, sizeof out->device, "cpu: %.100s", host);
cleanup:
  cJSON_Delete(v);
  if (st != HS_OK)
    hs_torch_trace_destroy(out);
  return st;
}

hs_status_t hs_torch_trace_load(const char *path, hs_torch_trace_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_torch_trace_init(out);
  /* 1 GiB: the scan keeps the text and one event record per element, about
   * 4.5x the file at peak (docs/import.md) */
  hs_status_t st = hs_file_read(path, (size_t)1 << 30, &text, NULL, err);
  if (st == HS_OK)
    st = hs_torch_trace_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}
