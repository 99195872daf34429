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
  FUZZ_ROUNDTRIP_BODY(hs_measured_t, hs_measured, "measured", data, size);
}
