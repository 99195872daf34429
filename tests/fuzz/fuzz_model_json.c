/*
 * fuzz_model_json.c - hetsim model files (transformer generator form and
 * explicit op lists): hs_model_parse_json, then fuzz_model_exercise.
 */
#include "fuzz_model_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  return fuzz_model_run(data, size, hs_model_parse_json, "fuzz-model.json");
}
