/*
 * fuzz_elastic_trace.c - spot preemption traces (docs/elastic.md):
 * hs_elastic_trace_parse against the 8-GPU fixture cluster of
 * fuzz_fixture.h (two sites, three nodes).
 */
#include "fuzz_fixture.h"
#include "fuzz_util.h"
#include "hs_elastic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  const hs_cluster_t *c = fuzz_fixture_cluster();
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_elastic_trace_t t;
  hs_elastic_trace_init(&t);
  (void)hs_elastic_trace_parse(text, "fuzz-trace.json", c, &t, &err);
  hs_elastic_trace_destroy(&t);
  free(text);
  return 0;
}
