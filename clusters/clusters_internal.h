/*
 * clusters_internal.h - what the files of the clusters module share (hs__
 * names); not installed, not for other modules.
 */
#ifndef HS_CLUSTERS_INTERNAL_H
#define HS_CLUSTERS_INTERNAL_H

#include "hs_clusters.h"
#include "hs_json.h"

struct cJSON;

/* Reads a JSON array of GPU entries at `path` (the array itself) into `cat`:
 * entries whose name is already in `cat` are overridden field by field, new
 * names are appended (and must give memory, bandwidth and peak rates). A name
 * twice in one array is an error. On failure `cat` may hold the entries read
 * before the bad one. O(n * m) for n entries into a catalog of m. */
hs_status_t hs__gpu_catalog_read(const hs_jreader_t *r, const struct cJSON *arr, const char *path,
                                 hs_gpu_catalog_t *cat);
/* Deep copy of `src` into the initialised, empty `dst`. */
hs_status_t hs__gpu_catalog_copy(const hs_gpu_catalog_t *src, hs_gpu_catalog_t *dst);
/* Writes " (did you mean X?)" or "" into buf: the catalog names closest to
 * `name` by edit distance (case-insensitive), at most four. */
void hs__gpu_suggest(const hs_gpu_catalog_t *c, const char *name, char *buf, size_t n);
/* Coalesced node groups of site `s` for printing: calls `fn` once per run of
 * consecutive nodes with the same GPU, size, ports and spot flag. */
typedef void (*hs__group_fn)(const hs_cluster_t *c, const hs_node_t *first, int32_t count, void *arg);
void hs__cluster_for_each_group(const hs_cluster_t *c, int32_t site, hs__group_fn fn, void *arg);

#endif
