/*
 * gpu_catalog.c - the GPU catalog in memory: lookup, dtype fallback, defaults
 * derived from datasheet figures, and name suggestions for typos.
 *
 * Representation: a plain array of hs_gpu_t in file order; names are unique
 * (the reader enforces it), so lookup is a linear scan: catalogs hold tens of
 * entries and lookups happen at load time only.
 */
#include "clusters_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void hs_gpu_catalog_init(hs_gpu_catalog_t *c)
{
  if (c)
    memset(c, 0, sizeof(*c));
}

void hs_gpu_catalog_destroy(hs_gpu_catalog_t *c)
{
  if (!c)
    return;
  free(c->gpus);
  memset(c, 0, sizeof(*c));
}

const hs_gpu_t *hs_gpu_catalog_find(const hs_gpu_catalog_t *c, const char *name)
{
  if (!c || !name)
    return NULL;
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->gpus[i].name, name) == 0)
      return &c->gpus[i];
  return NULL;
}

double hs_gpu_peak_flops(const hs_gpu_t *g, hs_dtype_t dt)
{
  if (!g)
    return 0.0;
  /* Fallback order: a kernel in a dtype the GPU lacks runs in the next wider
   * format it has (fp8 -> bf16 -> fp16 -> fp32). */
  static const hs_dtype_t order[] = {HS_DTYPE_FP8, HS_DTYPE_BF16, HS_DTYPE_FP16, HS_DTYPE_FP32};
  size_t start = 0;
  while (start < HS_ARRAY_LEN(order) && order[start] != dt)
    start++;
  for (size_t i = start; i < HS_ARRAY_LEN(order); i++)
    if (g->peak_flops[order[i]] > 0.0)
      return g->peak_flops[order[i]];
  return 0.0;
}

double hs_gpu_intra_default_GBps(const hs_gpu_t *g)
{
  if (g->nvlink_GBps > 0.0 && !g->nvlink_bridge_only)
    return g->nvlink_GBps;
  return g->pcie_GBps;
}

hs_status_t hs__gpu_catalog_copy(const hs_gpu_catalog_t *src, hs_gpu_catalog_t *dst)
{
  dst->gpus = hs_calloc(src->n ? src->n : 1, sizeof(hs_gpu_t));
  if (!dst->gpus)
    return HS_ENOMEM;
  if (src->n)
    memcpy(dst->gpus, src->gpus, src->n * sizeof(hs_gpu_t));
  dst->n = src->n;
  return HS_OK;
}


void hs__gpu_suggest(const hs_gpu_catalog_t *c, const char *name, char *buf, size_t n)
{
  /* hs_suggest_names ranks: all tokens ("A100-40GB" -> the A100 40 GB
   * entries), prefix, then edit distance ("A1OO" is 2 edits from the
   * "A100" of "A100-SXM4-80GB") */
  const char **names = hs_calloc(c->n + 1, sizeof *names);
  buf[0] = '\0';
  if (!names)
    return; /* a suggestion is a courtesy: none when out of memory */
  for (size_t i = 0; i < c->n; i++)
    names[i] = c->gpus[i].name;
  hs_suggest_names(name, names, c->n, buf, n);
  free(names);
}
