/*
 * hs_json.h - reading hand-written JSON with messages that name the file, the
 * field path and the value. Only *_json.c files include cJSON; they all go
 * through these helpers so that every loader words its errors the same way:
 *
 *   cluster.json: sites[1].nodes[0].gpus_per_node: must be a positive integer, got -4
 *
 * Lookups are case-sensitive. Numbers are read through valuedouble and range
 * checked before any conversion to an integer type.
 */
#ifndef HS_JSON_H
#define HS_JSON_H

#include "hs_common.h"

struct cJSON;

/* What a loader knows about where it reads: file name for messages, the
 * caller's error record (warnings for unknown fields go there too). */
typedef struct hs_jreader {
  const char *file;
  hs_error_t *err;
} hs_jreader_t;

/* Largest JSON input any loader accepts. */
#define HS_JSON_MAX_BYTES (64u * 1024u * 1024u)

/* Parses `text` (NUL-terminated). Malformed input: HS_EPARSE with
 * "file: malformed JSON at line L, column C". *out is freed by hs_json_free. */
hs_status_t hs_json_parse(const char *text, const char *file, struct cJSON **out, hs_error_t *err);
hs_status_t hs_json_load_file(const char *path, struct cJSON **out, hs_error_t *err);
/* cJSON drops members silently when an allocation fails (cJSON_Add*). A
 * builder that returns a tree calls hs_json_oom_clear() first and discards
 * the tree when hs_json_oom() is true afterwards. The flag is per thread;
 * hs_json_hooks_install routes cJSON's allocations through it (done by the
 * first call of either function; idempotent). */
void hs_json_oom_clear(void);
bool hs_json_oom(void);
void hs_json_hooks_install(void);
/* Returns `j`, or deletes it and returns NULL when a cJSON allocation failed
 * since hs_json_oom_clear(): `return hs_json_finish(j);` ends a builder. */
struct cJSON *hs_json_finish(struct cJSON *j);
/* cJSON_AddItemToObject, except that `item` is deleted (and the failure
 * recorded for hs_json_finish) when it cannot be attached: cJSON leaks it
 * when copying the key fails or obj is NULL. Returns item, or NULL; use the
 * returned pointer, never `item`, afterwards. */
struct cJSON *hs_json_add(struct cJSON *obj, const char *key, struct cJSON *item);
void hs_json_free(struct cJSON *j);

/* Builds "parent.key", "parent[index]" (key NULL) or "key" (parent empty). */
const char *hs_json_path(char *buf, size_t n, const char *parent, const char *key, int index);

/* Range rules for numbers. */
typedef enum {
  HS_JNUM_ANY = 0,     /* any finite number */
  HS_JNUM_NONNEG = 1,  /* >= 0 */
  HS_JNUM_POSITIVE = 2 /* > 0 */
} hs_jnum_rule_t;

/* Optional number `key` of object `obj` at `path`. Missing: *out = def (or an
 * error when `required`). Wrong type, not finite, outside rule or above `max`:
 * HS_EINVAL naming file, path.key and the value. */
hs_status_t hs_json_number(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                           const char *key, bool required, double def, hs_jnum_rule_t rule,
                           double max, double *out);
/* Number in the closed range [lo, hi]; otherwise as hs_json_number. */
hs_status_t hs_json_number_in(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                              const char *key, bool required, double def, double lo, double hi,
                              double *out);
/* Integers: as above, and the value must be integral and within [lo, hi]. */
hs_status_t hs_json_int(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                        const char *key, bool required, int64_t def, int64_t lo, int64_t hi,
                        int64_t *out);
hs_status_t hs_json_bool(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                         const char *key, bool required, bool def, bool *out);
/* Copies the string into out[n]; longer than n-1 bytes is an error. */
hs_status_t hs_json_string(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                           const char *key, bool required, const char *def, char *out, size_t n);
/* Array / object members: *out = NULL when absent and not required. */
hs_status_t hs_json_array(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                          const char *key, bool required, const struct cJSON **out, int *count);
hs_status_t hs_json_object(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                           const char *key, bool required, const struct cJSON **out);
/* Checks that `obj` (at `path`) is an object; error otherwise. */
hs_status_t hs_json_expect_object(const hs_jreader_t *r, const struct cJSON *obj, const char *path);
/* Warns (not an error) for every member of `obj` not in the NULL-terminated
 * `known` list: "file: path.key: unknown field (ignored)". */
void hs_json_warn_unknown(const hs_jreader_t *r, const struct cJSON *obj, const char *path,
                          const char *const *known);

/* ---- writing ------------------------------------------------------------ */

/* Prints `j` (formatted) to `path` ("-" = stdout) through hs_output_open/commit
 * (common/hs_output.h): the file is replaced whole or left as it was. */
hs_status_t hs_json_write_file(const struct cJSON *j, const char *path, hs_error_t *err);
/* Puts "schema_version": version first in object j unless j has one (every
 * JSON result hetsim writes carries it: docs/schemas.md); j, or NULL when
 * j is NULL or memory ran out (j is then freed). Not for files of another
 * tool's schema (notebooks, Chrome traces keep their own). O(keys). */
struct cJSON *hs_json_stamp_version(struct cJSON *j, int version);

#endif /* HS_JSON_H */
