/*
 * fuzz_hf_config.c - HuggingFace config.json: hs_model_parse_hf_config, then
 * fuzz_model_exercise.
 */
#include "fuzz_model_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_model_t m;
  hs_model_init(&m);
  if (hs_model_parse_hf_config(text, "config.json", 0, &m, &err) == HS_OK)
    fuzz_model_exercise(&m);
  hs_model_destroy(&m);
  free(text);
  return 0;
}
