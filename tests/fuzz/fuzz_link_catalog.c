/*
 * fuzz_link_catalog.c - the interconnect catalog (clusters/links.json):
 * hs_link_catalog_parse, then a lookup of every entry and its scope name.
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
  hs_link_catalog_t cat;
  hs_link_catalog_init(&cat);
  if (hs_link_catalog_parse(text, "fuzz-links.json", &cat, &err) == HS_OK) {
    for (size_t i = 0; i < cat.n; i++) {
      const hs_interconnect_t *l = hs_link_catalog_find(&cat, cat.links[i].name);
      if (l)
        (void)hs_link_scope_name(l->scope);
    }
  }
  hs_link_catalog_destroy(&cat);
  free(text);
  return 0;
}
