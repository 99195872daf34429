/*
 * fuzz_measured.c - replay measurements (measured.json, `hetsim replay`):
 * hs_measured_parse, then the writer, whose output must parse back (abort
 * otherwise: the fuzzer reports it).
 */
#include "fuzz_util.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_measured_t m;
  hs_measured_init(&m);
  if (hs_measured_parse(text, "fuzz-measured.json", &m, &err) == HS_OK) {
    cJSON *j = hs_measured_to_json(&m);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (s) {
      hs_measured_t back;
      hs_measured_init(&back);
      hs_error_t e2;
      hs_error_init(&e2);
      e2.warn_fp = NULL;
      hs_status_t st = hs_measured_parse(s, "roundtrip.json", &back, &e2);
      if (st != HS_OK && st != HS_ENOMEM) {
        fprintf(stderr, "measured round trip failed: %s\n%s\n", e2.msg, s);
        abort();
      }
      hs_measured_destroy(&back);
      free(s);
    }
  }
  hs_measured_destroy(&m);
  free(text);
  return 0;
}
