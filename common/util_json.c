/*
 * util_json.c - the one place that knows cJSON's quirks: its global error
 * pointer (we use ParseWithOpts' return_parse_end instead), case-insensitive
 * default lookups (we use the case-sensitive ones), and doubles as the only
 * number type (we range-check before converting).
 */
#include "hs_json.h"
#include "hs_output.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* cJSON reports an allocation failure while parsing as malformed input at
 * the position reached, and its builders (cJSON_Add*) silently drop members.
 * Its allocations therefore go through json_malloc, which records a failure
 * in a per-thread flag that hs_json_parse and the to_json builders read.
 * cJSON's hooks are global in cJSON itself: they are installed once, and
 * json_malloc/json_free are plain malloc/free, so memory allocated before and
 * after the installation is interchangeable. */
static _Thread_local bool json_oom;

static void *json_malloc(size_t n)
{
  void *p = malloc(n);
  if (!p)
    json_oom = true;
  return p;
}

static void json_free(void *p) { free(p); }

void hs_json_hooks_install(void)
{
  static atomic_int installed;
  if (atomic_exchange(&installed, 1))
    return;
  cJSON_Hooks hooks = {json_malloc, json_free};
  cJSON_InitHooks(&hooks);
}

void hs_json_oom_clear(void)
{
  hs_json_hooks_install();
  json_oom = false;
}

bool hs_json_oom(void) { return json_oom; }

cJSON *hs_json_add(cJSON *obj, const char *key, cJSON *item)
{
  if (obj && item && key && cJSON_AddItemToObject(obj, key, item))
    return item;
  cJSON_Delete(item);
  json_oom = true;
  return NULL;
}

cJSON *hs_json_finish(cJSON *j)
{
  if (json_oom) {
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

hs_status_t hs_json_parse(const char *text, const char *file, cJSON **out, hs_error_t *err)
{
  const char *end = NULL;
  *out = NULL;
  hs_json_oom_clear();
  cJSON *j = cJSON_ParseWithOpts(text, &end, 1);
  if (!j) {
    if (!end || json_oom)
      return hs_error_set(err, HS_ENOMEM, "%s: out of memory parsing JSON", file);
    int line = 1, col = 1;
    for (const char *p = text; p < end && *p; p++) {
      if (*p == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    /* the position only, never the text there: an input named by mistake
     * (/etc/passwd as a model) must not have its bytes echoed into messages
     * and sweep rows */
    if (*end == '\0')
      return hs_error_set(err, HS_EPARSE, "%s: malformed JSON at line %d, column %d (byte %td): "
                          "unexpected end of input", file, line, col, end - text);
    return hs_error_set(err, HS_EPARSE, "%s: malformed JSON at line %d, column %d (byte %td)",
                        file, line, col, end - text);
  }
  *out = j;
  return HS_OK;
}

hs_status_t hs_json_load_file(const char *path, cJSON **out, hs_error_t *err)
{
  char *text = NULL;
  *out = NULL;
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st != HS_OK)
    return st;
  if (strlen(text) == 0) {
    free(text);
    return hs_error_set(err, HS_EPARSE, "%s: empty file", path);
  }
  st = hs_json_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

void hs_json_free(cJSON *j) { cJSON_Delete(j); }

const char *hs_json_path(char *buf, size_t n, const char *parent, const char *key, int index)
{
  if (!parent)
    parent = "";
  if (key)
    snprintf(buf, n, "%s%s%s", parent, *parent ? "." : "", key);
  else
    snprintf(buf, n, "%s[%d]", parent, index);
  return buf;
}

static const char *type_name(const cJSON *v)
{
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsArray(v)) return "an array";
  if (cJSON_IsObject(v)) return "an object";
  return "an invalid value";
}

/* Prints the value compactly for messages, truncated. */
static void value_text(const cJSON *v, char *buf, size_t n)
{
  if (cJSON_IsString(v)) {
    snprintf(buf, n, "\"%.60s\"", v->valuestring);
  } else if (cJSON_IsNumber(v)) {
    snprintf(buf, n, "%.17g", v->valuedouble);
  } else {
    snprintf(buf, n, "%s", type_name(v));
  }
}

#define FIELD(r, path, key) (r)->file, (path), (*(path) ? "." : ""), (key)

/* The error for a member of the wrong type: "must be <what>, got <value>". */
static hs_status_t wrong_type(const hs_jreader_t *r, const char *path, const char *key, const cJSON *v,
                              const char *what)
{
  char val[80];
  value_text(v, val, sizeof val);
  return hs_error_set(r->err, HS_EINVAL, "%s: %s%s%s: must be %s, got %s", FIELD(r, path, key), what, val);
}

static const cJSON *member(const hs_jreader_t *r, const cJSON *obj, const char *path,
                           const char *key, bool required, hs_status_t *st)
{
  *st = HS_OK;
  if (!cJSON_IsObject(obj)) {
    *st = hs_error_set(r->err, HS_EINVAL, "%s: %s: must be an object, got %s", r->file,
                       *path ? path : "(top level)", type_name(obj));
    return NULL;
  }
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v && required)
    *st = hs_error_set(r->err, HS_EINVAL, "%s: %s%s%s: required field missing", FIELD(r, path, key));
  return v;
}

hs_status_t hs_json_expect_object(const hs_jreader_t *r, const cJSON *obj, const char *path)
{
  if (cJSON_IsObject(obj))
    return HS_OK;
  return hs_error_set(r->err, HS_EINVAL, "%s: %s: must be an object, got %s", r->file,
                      *path ? path : "(top level)", type_name(obj));
}

hs_status_t hs_json_number(const hs_jreader_t *r, const cJSON *obj, const char *path,
                           const char *key, bool required, double def, hs_jnum_rule_t rule,
                           double max, double *out)
{
  hs_status_t st;
  const cJSON *v = member(r, obj, path, key, required, &st);
  if (st != HS_OK)
    return st;
  if (!v) {
    *out = def;
    return HS_OK;
  }
  static const char *const what[] = {"a finite number", "a non-negative number", "a positive number"};
  if (!cJSON_IsNumber(v))
    return wrong_type(r, path, key, v, what[rule]);
  double x = v->valuedouble;
  bool ok = isfinite(x) && (rule != HS_JNUM_NONNEG || x >= 0.0) && (rule != HS_JNUM_POSITIVE || x > 0.0);
  if (!ok)
    return wrong_type(r, path, key, v, what[rule]);
  /* a subnormal passes "> 0" yet overflows to inf as a divisor (1 / 5e-324):
   * positive and non-negative quantities are normal numbers (or 0) */
  if (rule != HS_JNUM_ANY && x != 0.0 && !isnormal(x))
    return wrong_type(r, path, key, v, rule == HS_JNUM_POSITIVE ? "a positive normal number (not subnormal)"
                                                             : "0 or a positive normal number (not subnormal)");
  if (x > max) {
    char val[80];
    value_text(v, val, sizeof val);
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s%s%s: must be at most %g, got %s",
                        FIELD(r, path, key), max, val);
  }
  *out = x;
  return HS_OK;
}

hs_status_t hs_json_number_in(const hs_jreader_t *r, const cJSON *obj, const char *path,
                              const char *key, bool required, double def, double lo, double hi,
                              double *out)
{
  double x;
  hs_status_t st = hs_json_number(r, obj, path, key, required, def, HS_JNUM_ANY, hi, &x);
  if (st != HS_OK)
    return st;
  if (x < lo) {
    char val[80];
    snprintf(val, sizeof val, "%.17g", x);
    return hs_error_set(r->err, HS_EINVAL, "%s: %s%s%s: must be between %g and %g, got %s",
                        FIELD(r, path, key), lo, hi, val);
  }
  *out = x;
  return HS_OK;
}

hs_status_t hs_json_int(const hs_jreader_t *r, const cJSON *obj, const char *path, const char *key,
                        bool required, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
  hs_status_t st;
  const cJSON *v = member(r, obj, path, key, required, &st);
  if (st != HS_OK)
    return st;
  if (!v) {
    *out = def;
    return HS_OK;
  }
  const char *what = lo == 1 ? "a positive integer" : lo == 0 ? "a non-negative integer" : "an integer";
  if (!cJSON_IsNumber(v))
    return wrong_type(r, path, key, v, what);
  double x = v->valuedouble;
  if (!isfinite(x) || x != floor(x) || x < (double)lo)
    return wrong_type(r, path, key, v, what);
  if (x > (double)hi) {
    char val[80];
    value_text(v, val, sizeof val);
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s%s%s: must be at most %lld, got %s",
                        FIELD(r, path, key), (long long)hi, val);
  }
  *out = (int64_t)x;
  return HS_OK;
}

hs_status_t hs_json_bool(const hs_jreader_t *r, const cJSON *obj, const char *path, const char *key,
                         bool required, bool def, bool *out)
{
  hs_status_t st;
  const cJSON *v = member(r, obj, path, key, required, &st);
  if (st != HS_OK)
    return st;
  if (!v) {
    *out = def;
    return HS_OK;
  }
  if (!cJSON_IsBool(v)) {
    return wrong_type(r, path, key, v, "true or false");
  }
  *out = cJSON_IsTrue(v);
  return HS_OK;
}

hs_status_t hs_json_string(const hs_jreader_t *r, const cJSON *obj, const char *path,
                           const char *key, bool required, const char *def, char *out, size_t n)
{
  hs_status_t st;
  const cJSON *v = member(r, obj, path, key, required, &st);
  if (st != HS_OK)
    return st;
  if (!v) {
    hs_strlcpy(out, def ? def : "", n);
    return HS_OK;
  }
  if (!cJSON_IsString(v)) {
    return wrong_type(r, path, key, v, "a string");
  }
  if (!hs_strlcpy(out, v->valuestring, n))
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s%s%s: string longer than %zu characters: \"%.40s...\"",
                        FIELD(r, path, key), n - 1, v->valuestring);
  return HS_OK;
}

hs_status_t hs_json_array(const hs_jreader_t *r, const cJSON *obj, const char *path,
                          const char *key, bool required, const cJSON **out, int *count)
{
  hs_status_t st;
  *out = NULL;
  if (count)
    *count = 0;
  const cJSON *v = member(r, obj, path, key, required, &st);
  if (st != HS_OK || !v)
    return st;
  if (!cJSON_IsArray(v)) {
    return wrong_type(r, path, key, v, "an array");
  }
  *out = v;
  if (count)
    *count = cJSON_GetArraySize(v);
  return HS_OK;
}

hs_status_t hs_json_object(const hs_jreader_t *r, const cJSON *obj, const char *path,
                           const char *key, bool required, const cJSON **out)
{
  hs_status_t st;
  *out = NULL;
  const cJSON *v = member(r, obj, path, key, required, &st);
  if (st != HS_OK || !v)
    return st;
  if (!cJSON_IsObject(v)) {
    return wrong_type(r, path, key, v, "an object");
  }
  *out = v;
  return HS_OK;
}

void hs_json_warn_unknown(const hs_jreader_t *r, const cJSON *obj, const char *path,
                          const char *const *known)
{
  if (!cJSON_IsObject(obj))
    return;
  for (const cJSON *m = obj->child; m; m = m->next) {
    bool found = false;
    for (const char *const *k = known; *k && !found; k++)
      found = m->string && strcmp(*k, m->string) == 0;
    /* every JSON file hetsim writes carries schema_version at its top
     * level (docs/schemas.md); reading one back is not an unknown field */
    found = found || (!*path && m->string && strcmp(m->string, "schema_version") == 0);
    if (!found)
      hs_error_warn(r->err, "%s: %s%s%s: unknown field (ignored)", r->file, path, *path ? "." : "",
                    m->string ? m->string : "?");
  }
}

cJSON *hs_json_stamp_version(cJSON *j, int version)
{
  if (!j || !cJSON_IsObject(j) || cJSON_GetObjectItemCaseSensitive(j, "schema_version"))
    return j;
  cJSON *v = cJSON_AddNumberToObject(j, "schema_version", version);
  if (!v) {
    cJSON_Delete(j);
    return NULL;
  }
  if (j->child != v) /* to the front: readers see it first */
    cJSON_InsertItemInArray(j, 0, cJSON_DetachItemViaPointer(j, v));
  return j;
}

hs_status_t hs_json_write_file(const cJSON *j, const char *path, hs_error_t *err)
{
  char *s = cJSON_Print(j);
  if (!s)
    return hs_error_set(err, HS_ENOMEM, "out of memory printing JSON");
  hs_output_t o;
  hs_status_t st = hs_output_open(&o, path, err);
  if (st == HS_OK) {
    fputs(s, o.f); /* errors stick to the stream: commit reports them */
    fputc('\n', o.f);
    st = hs_output_commit(&o, err);
  }
  cJSON_free(s);
  return st;
}
