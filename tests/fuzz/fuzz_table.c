/*
 * fuzz_table.c - CSV result tables read by `hetsim export`: hs_table_parse
 * (RFC 4180 quoting, ragged rows), then column lookups.
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
  hs_table_t t;
  hs_table_init(&t);
  if (hs_table_parse(text, "fuzz.csv", &t, &err) == HS_OK) {
    (void)hs_table_col(&t, "strategy");
    (void)hs_table_col(&t, "");
  }
  hs_table_destroy(&t);
  free(text);
  return 0;
}
