/*
 * fuzz_gpu_catalog.c - GPU catalog entries (gpus.json and a cluster file's
 * inline "gpus"): hs_gpu_catalog_parse twice into one catalog (the second
 * pass exercises the override-by-name path), then lookups.
 */
#include "fuzz_util.h"
#include "hs_clusters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_gpu_catalog_t cat;
  hs_gpu_catalog_init(&cat);
  if (hs_gpu_catalog_parse(text, "fuzz-gpus.json", &cat, &err) == HS_OK &&
      hs_gpu_catalog_parse(text, "fuzz-gpus.json", &cat, &err) == HS_OK) {
    for (size_t i = 0; i < cat.n; i++) {
      const hs_gpu_t *g = hs_gpu_catalog_find(&cat, cat.gpus[i].name);
      for (int d = 0; g && d < HS_DTYPE__COUNT; d++)
        (void)hs_gpu_peak_flops(g, (hs_dtype_t)d);
      if (g)
        (void)hs_gpu_intra_default_GBps(g);
    }
  }
  hs_gpu_catalog_destroy(&cat);
  free(text);
  return 0;
}
