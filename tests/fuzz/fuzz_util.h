/*
 * fuzz_util.h - what every fuzz target shares: the libFuzzer entry point's
 * prototype and a copy of the input as a NUL-terminated string (the loaders
 * read C strings; an embedded NUL simply ends the text early, as it would for
 * a file read by hs_file_read).
 *
 * The same target sources build two ways (tests/fuzz/CMakeLists.txt): with clang's
 * libFuzzer (HS_FUZZ=ON) and with replay_main.c, an ordinary main() that runs
 * every file of the seed and regression corpora, so that ctest replays them
 * in every build.
 */
#ifndef HS_FUZZ_UTIL_H
#define HS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* malloc'd copy of data[0..size) plus a terminating NUL; NULL when out of
 * memory (the target then returns without testing anything). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
  char *t = malloc(size + 1);
  if (!t)
    return NULL;
  if (size)
    memcpy(t, data, size);
  t[size] = '\0';
  return t;
}

/* The body of a round-trip target for a loader with the usual quartet
 * PREFIX_init / PREFIX_parse(text, file, out, err) / PREFIX_to_json /
 * PREFIX_destroy over TYPE: parse, write, and abort when the written JSON
 * does not parse back (out of memory excepted). Needs <cjson/cJSON.h>. */
#define FUZZ_ROUNDTRIP_BODY(TYPE, PREFIX, NAME, data, size)                          \
  do {                                                                             \
    char *text = fuzz_text(data, size);                                            \
    if (!text)                                                                     \
      return 0;                                                                    \
    hs_error_t err;                                                                \
    hs_error_init(&err);                                                           \
    err.warn_fp = NULL;                                                            \
    TYPE m;                                                                        \
    PREFIX##_init(&m);                                                             \
    if (PREFIX##_parse(text, "fuzz-" NAME ".json", &m, &err) == HS_OK) {           \
      cJSON *j = PREFIX##_to_json(&m);                                             \
      char *s = j ? cJSON_PrintUnformatted(j) : NULL;                              \
      cJSON_Delete(j);                                                             \
      if (s) {                                                                     \
        TYPE back;                                                                 \
        PREFIX##_init(&back);                                                      \
        hs_error_t e2;                                                             \
        hs_error_init(&e2);                                                        \
        e2.warn_fp = NULL;                                                         \
        hs_status_t st = PREFIX##_parse(s, "roundtrip.json", &back, &e2);          \
        if (st != HS_OK && st != HS_ENOMEM) {                                      \
          fprintf(stderr, NAME " round trip failed: %s\n%s\n", e2.msg, s);          \
          abort();                                                                 \
        }                                                                          \
        PREFIX##_destroy(&back);                                                   \
        free(s);                                                                   \
      }                                                                            \
    }                                                                              \
    PREFIX##_destroy(&m);                                                          \
    free(text);                                                                    \
    return 0;                                                                      \
  } while (0)

#endif
