/*
 * fuzz_hf_config.c - HuggingFace config.json: hs_model_parse_hf_config, then
 * fuzz_model_exercise.
 */
#include "fuzz_model_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  return fuzz_model_run(data, size, hs_model_parse_hf_config, "config.json");
}
