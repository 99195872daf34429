/*
 * fuzz_report_view.c - simulator reports read back by `hetsim validate`:
 * hs_report_view_parse.
 */
#include "fuzz_util.h"
#include "hs_validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_report_view_t r;
  hs_report_view_init(&r);
  (void)hs_report_view_parse(text, "fuzz-report.json", &r, &err);
  hs_report_view_destroy(&r);
  free(text);
  return 0;
}
