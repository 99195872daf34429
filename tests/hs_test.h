/*
 * hs_test.h - the tiny test harness every tests/test_*.c uses. A test file
 * lists its cases in main() with HS_RUN; each CHECK failure prints file:line
 * and the values and the process exits non-zero at the end.
 */
#ifndef HS_TEST_H
#define HS_TEST_H

#include "hs_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hs_test_failures;
static int hs_test_checks;

#define CHECK(cond)                                                               \
  do {                                                                            \
    hs_test_checks++;                                                             \
    if (!(cond)) {                                                                \
      hs_test_failures++;                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
    }                                                                             \
  } while (0)

#define CHECK_MSG(cond, ...)                                                      \
  do {                                                                            \
    hs_test_checks++;                                                             \
    if (!(cond)) {                                                                \
      hs_test_failures++;                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                               \
      fputc('\n', stderr);                                                        \
    }                                                                             \
  } while (0)

/* |a - b| <= rel * max(|a|, |b|) (or both tiny); an infinity only equals
 * itself and a NaN nothing (fmax would hide a NaN, and inf - x <= rel * inf
 * holds for any x). */
#define CHECK_REL(a, b, rel)                                                      \
  do {                                                                            \
    double hs__a = (double)(a), hs__b = (double)(b);                              \
    double hs__m = fmax(fabs(hs__a), fabs(hs__b));                                \
    hs_test_checks++;                                                             \
    if (!(hs__a == hs__b ||                                                       \
          (isfinite(hs__a) && isfinite(hs__b) &&                                  \
           (fabs(hs__a - hs__b) <= (rel) * hs__m || hs__m < 1e-300)))) {          \
      hs_test_failures++;                                                         \
      fprintf(stderr, "%s:%d: CHECK_REL failed: %s = %.9g vs %s = %.9g (rel %.3g > %.3g)\n", \
              __FILE__, __LINE__, #a, hs__a, #b, hs__b, fabs(hs__a - hs__b) / hs__m,        \
              (double)(rel));                                                     \
    }                                                                             \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                        \
  do {                                                                            \
    long long hs__a = (long long)(a), hs__b = (long long)(b);                     \
    hs_test_checks++;                                                             \
    if (hs__a != hs__b) {                                                         \
      hs_test_failures++;                                                         \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld vs %s = %lld\n", __FILE__, \
              __LINE__, #a, hs__a, #b, hs__b);                                    \
    }                                                                             \
  } while (0)

/* The error message contains `needle`. */
#define CHECK_CONTAINS(hay, needle)                                               \
  do {                                                                            \
    const char *hs__h = (hay);                                                    \
    hs_test_checks++;                                                             \
    if (!hs__h || !strstr(hs__h, (needle))) {                                     \
      hs_test_failures++;                                                         \
      fprintf(stderr, "%s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__,   \
              (needle), hs__h ? hs__h : "(null)");                                \
    }                                                                             \
  } while (0)

#define HS_RUN(fn)                                                                \
  do {                                                                            \
    int hs__before = hs_test_failures;                                            \
    fn();                                                                         \
    fprintf(stderr, "%-48s %s\n", #fn, hs_test_failures == hs__before ? "ok" : "FAILED"); \
  } while (0)

#define HS_TEST_END()                                                             \
  do {                                                                            \
    fprintf(stderr, "%d checks, %d failed\n", hs_test_checks, hs_test_failures);  \
    return hs_test_failures ? 1 : 0;                                              \
  } while (0)

/* Path of a test input under tests/data. */
static inline const char *hs_test_data(const char *name)
{
  static char buf[4096];
  const char *d = getenv("HETSIM_TEST_DATA");
  snprintf(buf, sizeof buf, "%s/%s", d ? d : "tests/data", name);
  return buf;
}

/* The whole file at `path` (up to 64 MiB; malloc'd, the caller frees), or
 * NULL with the error printed. */
static inline char *hs_test_slurp(const char *path)
{
  char *t = NULL;
  hs_error_t err;
  hs_error_init(&err);
  if (hs_file_read(path, 1 << 26, &t, NULL, &err) != HS_OK)
    fprintf(stderr, "%s\n", err.msg);
  return t;
}

#endif
