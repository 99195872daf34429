/*
 * fuzz_run_json.c - run.json (`hetsim validate --run`): hs_run_parse (with
 * the model and measured parsers inside), then the writer, whose output
 * must parse back.
 */
#include "fuzz_util.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  FUZZ_ROUNDTRIP_BODY(hs_run_t, hs_run, "run", data, size);
}
