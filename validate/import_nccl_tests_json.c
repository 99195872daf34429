/*
 * import_nccl_tests_json.c - the profile `hetsim import nccl-tests` writes:
 *
 *   {"source": "hetsim import nccl-tests: a.txt, b.txt",
 *    "gpus": [{"name": "H200-SXM-141GB",
 *              "intra_node": {"GBps": 370.1, "latency_us": 1.9,
 *                             "ranges": [{"min_bytes": 0, "max_bytes": 46341, "GBps": 120,
 *                                         "latency_us": 1.2}, ..., {"min_bytes": 1.2e7, ...}]},
 *              "nic": {"GBps": 32.2, "latency_us": 8.5}}],
 *    "nccl_tests": [{"file", "collective", "ranks", "nodes", "gpus_per_node",
 *                    "latency_us", "busbw_GBps", "r2", "median_rel_err",
 *                    "max_rel_err", "points", "sets",
 *                    "rows": [{"size_bytes", "time_us", "busbw_GBps",
 *                              "predicted_time_us", "predicted_busbw_GBps"}]}]}
 *
 * sim/profile_json.c applies gpus[].intra_node and .nic to every node of that
 * GPU type; "nccl_tests" is the record of the fits (read back by nothing).
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <string.h>

/* rails > 1 only for the nic link (the NICs per node it was fitted with) */
static void add_link(cJSON *g, const char *key, double GBps, double latency_us, int32_t rails,
                     const hs_link_ranges_t *r)
{
  cJSON *o = cJSON_AddObjectToObject(g, key);
  if (!o)
    return;
  cJSON_AddNumberToObject(o, "GBps", GBps);
  cJSON_AddNumberToObject(o, "latency_us", latency_us);
  if (rails > 1)
    cJSON_AddNumberToObject(o, "rails", rails);
  if (r->n < 1)
    return;
  /* per size range: [min_bytes, max_bytes), the last without max_bytes */
  cJSON *arr = cJSON_AddArrayToObject(o, "ranges");
  for (int32_t i = 0; arr && i < r->n; i++) {
    cJSON *e = cJSON_CreateObject();
    if (!e)
      break;
    cJSON_AddItemToArray(arr, e);
    cJSON_AddNumberToObject(e, "min_bytes", r->min_bytes[i]);
    if (i + 1 < r->n)
      cJSON_AddNumberToObject(e, "max_bytes", r->min_bytes[i + 1]);
    cJSON_AddNumberToObject(e, "GBps", r->GBps[i]);
    cJSON_AddNumberToObject(e, "latency_us", r->latency_us[i]);
  }
}

cJSON *hs_nt_import_to_json(const hs_nt_import_t *im)
{
  hs_json_oom_clear(); /* members cJSON drops when out of memory fail the whole tree */
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  char src[512];
  size_t l = (size_t)snprintf(src, sizeof src, "hetsim import nccl-tests:");
  for (int32_t i = 0; i < im->n_files && l < sizeof src; i++)
    l += (size_t)snprintf(src + l, sizeof src - l, "%s %s", i ? "," : "", im->files[i].file);
  cJSON_AddStringToObject(j, "source", src);
  cJSON *gs = cJSON_AddArrayToObject(j, "gpus");
  cJSON *g = cJSON_CreateObject();
  if (g && gs) {
    cJSON_AddItemToArray(gs, g);
    cJSON_AddStringToObject(g, "name", im->links.gpu);
    if (im->links.has_intra)
      add_link(g, "intra_node", im->links.intra_GBps, im->links.intra_latency_us, 1,
               &im->links.intra_ranges);
    if (im->links.has_nic)
      add_link(g, "nic", im->links.nic_GBps, im->links.nic_latency_us, im->links.nic_rails,
               &im->links.nic_ranges);
  } else {
    cJSON_Delete(g);
  }
  cJSON *arr = cJSON_AddArrayToObject(j, "nccl_tests");
  for (int32_t i = 0; arr && i < im->n_files; i++) {
    const hs_nccl_tests_t *f = &im->files[i];
    const hs_nt_fit_t *fit = &im->fits[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddItemToArray(arr, o);
    cJSON_AddStringToObject(o, "file", f->file);
    cJSON_AddStringToObject(o, "collective", hs_nt_coll_name(f->coll));
    cJSON_AddStringToObject(o, "algo", hs_nt_algo_name(f->algo));
    cJSON_AddNumberToObject(o, "ranks", f->nranks);
    cJSON_AddNumberToObject(o, "nodes", f->n_nodes);
    cJSON_AddNumberToObject(o, "gpus_per_node", f->gpus_per_node);
    cJSON_AddStringToObject(o, "device", f->gpu_name);
    cJSON_AddNumberToObject(o, "latency_us", fit->latency_us);
    cJSON_AddNumberToObject(o, "busbw_GBps", fit->busbw_GBps);
    cJSON_AddNumberToObject(o, "r2", fit->r2);
    cJSON_AddNumberToObject(o, "median_rel_err", fit->median_rel_err);
    cJSON_AddNumberToObject(o, "max_rel_err", fit->max_rel_err);
    cJSON_AddNumberToObject(o, "points", fit->n_points);
    if (fit->sets)
      cJSON_AddStringToObject(o, "sets", fit->sets);
    else
      cJSON_AddNullToObject(o, "sets");
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int32_t r = 0; rows && r < f->n_rows; r++) {
      cJSON *ro = cJSON_CreateObject();
      if (!ro)
        break;
      cJSON_AddItemToArray(rows, ro);
      cJSON_AddNumberToObject(ro, "size_bytes", f->rows[r].size_bytes);
      cJSON_AddNumberToObject(ro, "time_us", f->rows[r].time_us[0]);
      cJSON_AddNumberToObject(ro, "busbw_GBps", f->rows[r].busbw_GBps[0]);
      cJSON_AddNumberToObject(ro, "predicted_time_us", fit->pred_time_us[r]);
      cJSON_AddNumberToObject(ro, "predicted_busbw_GBps", fit->pred_busbw_GBps[r]);
    }
  }
  return hs_json_finish(j);
}
