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

/* Case-insensitive Levenshtein distance of a[0..na) and b[0..nb), names are
 * at most HS_NAME_MAX bytes so two rows on the stack suffice. */
static int edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
  int prev[HS_NAME_MAX + 1], cur[HS_NAME_MAX + 1];
  na = HS_MIN(na, (size_t)HS_NAME_MAX);
  nb = HS_MIN(nb, (size_t)HS_NAME_MAX);
  for (size_t j = 0; j <= nb; j++)
    prev[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = HS_MIN(sub, HS_MIN(del, ins));
    }
    memcpy(prev, cur, sizeof(int) * (nb + 1));
  }
  return prev[nb];
}

void hs__gpu_suggest(const hs_gpu_catalog_t *c, const char *name, char *buf, size_t n)
{
  /* Score = distance to the whole name, or to the name's prefix of the same
   * length ("A1OO" is 2 edits from the "A100" of "A100-SXM4-80GB"). */
  size_t len = strlen(name);
  int best = 1 << 30;
  for (size_t i = 0; i < c->n; i++) {
    const char *g = c->gpus[i].name;
    size_t gl = strlen(g);
    int d = HS_MIN(edit_distance(name, len, g, gl), edit_distance(name, len, g, HS_MIN(len, gl)));
    best = HS_MIN(best, d);
  }
  buf[0] = '\0';
  int limit = len <= 4 ? 2 : (int)(len / 3);
  if (c->n == 0 || best > limit || len == 0)
    return;
  size_t used = (size_t)snprintf(buf, n, " (did you mean ");
  int shown = 0;
  for (size_t i = 0; i < c->n && shown < 4 && used < n; i++) {
    const char *g = c->gpus[i].name;
    size_t gl = strlen(g);
    int d = HS_MIN(edit_distance(name, len, g, gl), edit_distance(name, len, g, HS_MIN(len, gl)));
    if (d != best)
      continue;
    used += (size_t)snprintf(buf + used, n - used, "%s\"%s\"", shown ? ", " : "", g);
    shown++;
  }
  if (used < n)
    snprintf(buf + used, n - used, "?)");
}
