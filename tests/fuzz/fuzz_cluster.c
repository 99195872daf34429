/*
 * fuzz_cluster.c - cluster files: hs_cluster_parse, then what a valid cluster
 * feeds: totals, the `show cluster --json` object, and (clusters up to 4096
 * GPUs, to keep an execution fast) the topology with a few path queries.
 */
#include "fuzz_util.h"
#include "hs_clusters.h"

#include <cjson/cJSON.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_cluster_t c;
  hs_cluster_init(&c);
  if (hs_cluster_parse(text, "fuzz-cluster.json", &c, &err) == HS_OK) {
    hs_cluster_totals_t t;
    hs_cluster_totals(&c, HS_DTYPE_BF16, &t);
    cJSON *j = hs_cluster_to_json(&c);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    free(s);
    cJSON_Delete(j);
    if (c.n_devices <= 4096) {
      hs_topology_t *topo = NULL;
      if (hs_topology_new(&c, &topo, &err) == HS_OK) {
        int32_t n = (int32_t)c.n_devices;
        hs_path_t p;
        hs_topology_path(topo, 0, n - 1, &p);
        hs_topology_path(topo, n - 1, 0, &p);
        hs_topology_path(topo, 0, n / 2, &p);
        hs_topology_path_graph(topo, 0, n - 1, &p);
      }
      hs_topology_free(topo);
    }
  }
  hs_cluster_destroy(&c);
  free(text);
  return 0;
}
