/*
 * fuzz_trace_doc.c - Chrome trace JSON read back by `hetsim export`:
 * hs_trace_doc_parse.
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
  hs_trace_doc_t d;
  hs_trace_doc_init(&d);
  (void)hs_trace_doc_parse(text, "fuzz-trace.json", &d, &err);
  hs_trace_doc_destroy(&d);
  free(text);
  return 0;
}
