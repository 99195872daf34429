/*
 * fuzz_measurements.c - microbenchmark measurements (`hetsim calibrate`
 * input): hs_measurements_parse, then the writer, whose output must parse
 * back (abort otherwise).
 */
#include "fuzz_util.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  FUZZ_ROUNDTRIP_BODY(hs_measurements_t, hs_measurements, "measurements", data, size);
}
