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

#endif
