/*
 * hs_common.h - what every hetsim module needs: status codes, the error
 * record, cleanup macros, simulated time and unit helpers, growable arrays.
 *
 * Errors: a function that can fail returns hs_status_t and, when the caller
 * passed one, fills the caller-owned hs_error_t with a one-line message that
 * names the input ("cluster.json: sites[1].nodes[0].gpu: unknown GPU \"A1OO\"").
 * Nothing here is global or mutable, so many simulations can run in one
 * process and on several threads.
 */
#ifndef HS_COMMON_H
#define HS_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One list makes the enum, the names and the default messages. */
#define HS_STATUS_LIST(X)                                   \
  X(OK, "success")                                          \
  X(EINVAL, "invalid input")                                \
  X(EPARSE, "malformed file")                               \
  X(ENOTFOUND, "not found")                                 \
  X(EIO, "input/output error")                              \
  X(ENOMEM, "out of memory")                                \
  X(ELIMIT, "outside the supported limits")                 \
  X(EINFEASIBLE, "no feasible solution")                    \
  X(EUNSUPPORTED, "not supported in this build")            \
  X(EINTERNAL, "internal error")

typedef enum {
#define HS__STATUS_ENUM(name, msg) HS_##name,
  HS_STATUS_LIST(HS__STATUS_ENUM)
#undef HS__STATUS_ENUM
  HS_STATUS__COUNT
} hs_status_t;

/* "HS_EINVAL"; never NULL, also for out-of-range values. */
const char *hs_status_name(hs_status_t st);
/* "invalid input"; never NULL. */
const char *hs_status_message(hs_status_t st);
/* Process exit code for a status: 0 ok, 2 bad input or usage, 3 infeasible
 * (HS_EINFEASIBLE: searched or simulated, but no plan holds), 1 internal
 * failure (cli/cli.h lists them). */
int hs_status_exit_code(hs_status_t st);

#define HS_ERROR_MSG_MAX 1024

/*
 * Caller-owned error record. hs_error_init() zeroes it; warnings (for example
 * unknown JSON fields) go to `warn_fp` when it is not NULL (stderr after init)
 * and are counted.
 */
typedef struct hs_error {
  hs_status_t status;
  char msg[HS_ERROR_MSG_MAX];
  int n_warnings;
  FILE *warn_fp;
} hs_error_t;

void hs_error_init(hs_error_t *err);
/* Records the first error only (later ones usually follow from it) and returns
 * `st`, so that `return hs_error_set(err, HS_EINVAL, ...)` reads naturally.
 * `err` may be NULL. */
hs_status_t hs_error_set(hs_error_t *err, hs_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears a recorded error (used where a caller tries alternatives). */
void hs_error_clear(hs_error_t *err);
void hs_error_warn(hs_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the stored message with "prefix: " (e.g. a file name). */
void hs_error_prefix(hs_error_t *err, const char *prefix);

/* Cleanup pattern: declare `hs_status_t st = HS_OK;` and a `cleanup:` label. */
#define HS_CHECK(expr)                  \
  do {                                  \
    if ((st = (expr)) != HS_OK)         \
      goto cleanup;                     \
  } while (0)

#define HS_FAIL(expr)                   \
  do {                                  \
    st = (expr);                        \
    goto cleanup;                       \
  } while (0)

#define HS_CONTAINER_OF(ptr, type, member) \
  ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define HS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define HS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define HS_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- time and units ---------------------------------------------------- */

/* Simulated time: integer nanoseconds. Cost models compute in double; a
 * duration is rounded once, when its event is scheduled (hs_time_from_s). */
typedef int64_t hs_time_t;
#define HS_TIME_MAX INT64_MAX
#define HS_NS_PER_US 1000LL
#define HS_NS_PER_S 1000000000LL

/* Rounds seconds to the nearest nanosecond; negative and NaN become 0 and
 * values past ~292 years saturate at HS_TIME_MAX. */
hs_time_t hs_time_from_s(double s);
static inline double hs_time_to_s(hs_time_t t) { return (double)t * 1e-9; }

#define HS_GB 1e9   /* decimal gigabyte: bandwidths are GB/s = 1e9 B/s */
#define HS_GIB 1073741824.0

/* ---- numeric types ------------------------------------------------------ */

typedef enum {
  HS_DTYPE_FP32,
  HS_DTYPE_FP16,
  HS_DTYPE_BF16,
  HS_DTYPE_FP8,
  HS_DTYPE__COUNT
} hs_dtype_t;

/* "fp32", "fp16", "bf16", "fp8". */
const char *hs_dtype_name(hs_dtype_t d);
/* Parses a dtype name (also "float16", "bfloat16", "float32"). */
hs_status_t hs_dtype_parse(const char *s, hs_dtype_t *out);
double hs_dtype_bytes(hs_dtype_t d);

/* ---- growable arrays ---------------------------------------------------- */

/* Makes room for `need` elements of `elem_size` bytes in *data (capacity in
 * *cap, grown geometrically). Returns HS_ENOMEM on failure or overflow, with
 * *data untouched. Amortised O(1) per element. */
hs_status_t hs_reserve(void **data, size_t *cap, size_t need, size_t elem_size);

/* A byte string built by appending (hs_bytes_put) and read back in order
 * (hs_bytes_get): the raw form in which forked workers hand each other
 * results of this same binary (search/search_memo.c). A failed append
 * (out of memory) clears ok and makes later appends no-ops; a read past the
 * end clears the reader's ok and reads nothing. The caller frees p. */
typedef struct hs_bytes {
  unsigned char *p;
  size_t len, cap;
  bool ok;
} hs_bytes_t;
typedef struct hs_bytes_reader {
  const unsigned char *p;
  size_t len, pos;
  bool ok;
} hs_bytes_reader_t;
void hs_bytes_put(hs_bytes_t *b, const void *src, size_t n);             /* amortised O(n) */
bool hs_bytes_get(hs_bytes_reader_t *r, void *dst, size_t n);            /* O(n) */

/* *out = a x b when the product is within [0, max] (a, b >= 0); false (and
 * *out untouched) when it overflows int64_t or exceeds `max`. For products of
 * user-given counts (tp x pp x dp): the caller refuses naming the fields and
 * the values. O(1). */
static inline bool hs_mul_i64(int64_t a, int64_t b, int64_t max, int64_t *out)
{
  int64_t p;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &p) || p > max)
    return false;
  *out = p;
  return true;
}

/* Checked allocation helpers: NULL on overflow or failure. calloc semantics. */
void *hs_calloc(size_t n, size_t size);
void *hs_reallocarray(void *p, size_t n, size_t size);
void hs_free(void *p);

/* ---- strings and files -------------------------------------------------- */

/* Copies at most dst_size-1 bytes and always terminates. Returns false when
 * truncated. */
bool hs_strlcpy(char *dst, const char *src, size_t dst_size);
/* Reads a whole file into a NUL-terminated malloc'd buffer (caller frees).
 * Files larger than `max_bytes` are refused with HS_ELIMIT. */
hs_status_t hs_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len,
                         hs_error_t *err);
/* Directory holding the shipped data (catalogs): $HETSIM_DATA if set, else the
 * source tree the binary was built from. Never NULL. */
const char *hs_data_dir(void);
/* Base name of a path without directories ("a/b/c.json" -> "c.json"). */
const char *hs_basename(const char *path);
/* True when `s` ends with `suffix`. */
bool hs_str_endswith(const char *s, const char *suffix);
/* " (did you mean "a", "b"?)" naming up to 4 of `names` that the mistyped
 * `query` probably meant (token subset, prefix, then edit distance: see
 * common/suggest.c), or "" when none is close. O(n x len^2). */
void hs_suggest_names(const char *query, const char *const *names, size_t n, char *buf, size_t bufn);

/* Formats a byte count as "12.3 GB"/"512 MB" into buf. Returns buf. */
char *hs_fmt_bytes(double bytes, char *buf, size_t n);

#endif /* HS_COMMON_H */
