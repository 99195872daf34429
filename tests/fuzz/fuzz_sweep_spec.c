/*
 * fuzz_sweep_spec.c - what-if sweep specs (docs/sweep.md):
 * hs_sweep_spec_parse, which checks names and ranges and expands the jobs.
 */
#include "fuzz_util.h"
#include "hs_export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_sweep_spec_t spec;
  hs_sweep_spec_init(&spec);
  (void)hs_sweep_spec_parse(text, "fuzz-spec.json", &spec, &err);
  hs_sweep_spec_destroy(&spec);
  free(text);
  return 0;
}
