/*
 * profile_json.c - device profiles: calibrated compute-model parameters that
 * replace the GPU catalog's defaults. Format (written by `hetsim calibrate`):
 *
 *   {"gpus": [{"name": "H100-SXM5-80GB", "gemm_eff_max": 0.78,
 *              "gemm_half_flops": 3.1e9, "mem_eff": 0.86, "launch_us": 3.2}]}
 *
 * An entry may also carry links fitted to nccl-tests (`hetsim import
 * nccl-tests`, docs/import.md), which replace the cluster file's values on
 * every node of that GPU type:
 *
 *   "intra_node": {"GBps": 370, "latency_us": 1.9}, "nic": {"GBps": 32, "latency_us": 8}
 *
 * and, per link, "ranges": [{"min_bytes", "max_bytes", "GBps", "latency_us"}]:
 * the figures per message-size range (docs/import.md).
 *
 * Every listed field is optional; entries whose name is not in the cluster
 * are reported as warnings (the profile may cover other clusters too).
 */
#include "hs_json.h"
#include "hs_sim.h"

#include <cjson/cJSON.h>
#include <string.h>

static hs_status_t apply_json(cJSON *j, const char *file, hs_cluster_t *c, hs_error_t *err)
{
  static const char *const known_top[] = {"gpus", "source", "fit", "description", "nccl_tests",
                                          NULL};
  static const char *const known[] = {"name", "gemm_eff_max", "gemm_half_flops", "mem_eff",
                                      "launch_us", "gemm_out_k", "gemm_mem_latency_us", "gemm_sustained_eff",
                                      "attn_fwd_eff_max", "attn_fwd_half_seq",
                                      "attn_bwd_eff_max", "attn_bwd_half_seq", "fit", "source", "intra_node", "nic",
                                      NULL};
  static const char *const known_link[] = {"GBps", "latency_us", "rails", "ranges", NULL};
  hs_status_t st = HS_OK;
  hs_jreader_t r = {file, err};
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known_top);
  HS_CHECK(hs_json_array(&r, j, "", "gpus", true, &arr, &n));
  int k = 0;
  for (const cJSON *e = arr->child; e; e = e->next, k++) {
    char p[64], name[HS_NAME_MAX];
    hs_json_path(p, sizeof p, "gpus", NULL, k);
    HS_CHECK(hs_json_expect_object(&r, e, p));
    hs_json_warn_unknown(&r, e, p, known);
    HS_CHECK(hs_json_string(&r, e, p, "name", true, "", name, sizeof name));
    hs_gpu_t *g = NULL;
    for (size_t i = 0; i < c->gpus.n; i++)
      if (strcmp(c->gpus.gpus[i].name, name) == 0)
        g = &c->gpus.gpus[i];
    if (!g) {
      hs_error_warn(err, "%s: %s.name: GPU \"%s\" is not in cluster %s (ignored)", file, p, name, c->name);
      continue;
    }
    HS_CHECK(hs_json_number_in(&r, e, p, "gemm_eff_max", false, g->gemm_eff_max, HS_EFF_MIN, 1.0,
                               &g->gemm_eff_max));
    HS_CHECK(hs_json_number(&r, e, p, "gemm_half_flops", false, g->gemm_half_flops, HS_JNUM_NONNEG,
                            1e18, &g->gemm_half_flops));
    HS_CHECK(hs_json_number_in(&r, e, p, "mem_eff", false, g->mem_eff, HS_EFF_MIN, 1.0,
                               &g->mem_eff));
    HS_CHECK(hs_json_number(&r, e, p, "launch_us", false, g->launch_us, HS_JNUM_NONNEG, 1e6,
                            &g->launch_us));
    HS_CHECK(hs_json_number(&r, e, p, "gemm_out_k", false, g->gemm_out_k, HS_JNUM_NONNEG, 1e6,
                            &g->gemm_out_k));
    HS_CHECK(hs_json_number(&r, e, p, "gemm_mem_latency_us", false, g->gemm_mem_latency_us,
                            HS_JNUM_NONNEG, 1e3, &g->gemm_mem_latency_us));
    if (cJSON_GetObjectItemCaseSensitive(e, "gemm_sustained_eff"))
      HS_CHECK(hs_json_number_in(&r, e, p, "gemm_sustained_eff", true, 0.0, HS_EFF_MIN, 1.0,
                                 &g->gemm_sustained_eff));
    HS_CHECK(hs_gpu_attn_read(&r, e, p, g));
    g->calibrated = true;
    int32_t gi = (int32_t)(g - c->gpus.gpus);
    for (int q = 0; q < 2; q++) {
      const char *key = q ? "nic" : "intra_node";
      const cJSON *lo = NULL;
      char lp[96];
      HS_CHECK(hs_json_object(&r, e, p, key, false, &lo));
      if (!lo)
        continue;
      snprintf(lp, sizeof lp, "%s.%s", p, key);
      hs_json_warn_unknown(&r, lo, lp, known_link);
      double GBps = 0, lat = 0;
      int64_t rails = 0;
      HS_CHECK(hs_json_number(&r, lo, lp, "GBps", true, 0, HS_JNUM_POSITIVE, 1e7, &GBps));
      HS_CHECK(hs_json_number(&r, lo, lp, "latency_us", true, 0, HS_JNUM_NONNEG, 1e7, &lat));
      /* rails: the NICs per node the nic link was fitted with (absent: the
       * cluster's own); only on nic */
      HS_CHECK(hs_json_int(&r, lo, lp, "rails", false, 0, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &rails));
      if (!q && rails > 1)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.rails: only on nic (NICs per node), got %lld", file, lp,
                             (long long)rails));
      /* ranges: per-size figures (hs_link_ranges_read checks them) */
      int8_t ranges = 0;
      const cJSON *ra = cJSON_GetObjectItemCaseSensitive(lo, "ranges");
      if (ra) {
        char rp[128];
        snprintf(rp, sizeof rp, "%s.ranges", lp);
        if (c->n_link_ranges >= HS_CLUSTER_MAX_NAMED_LINKS)
          HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: %s: at most %d ranged links", file, rp,
                               HS_CLUSTER_MAX_NAMED_LINKS));
        HS_CHECK(hs_link_ranges_read(&r, ra, rp, lat, &c->link_ranges[c->n_link_ranges]));
        ranges = (int8_t)++c->n_link_ranges;
      }
      for (size_t i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].gpu != gi)
          continue;
        if (q) {
          c->nodes[i].nic_GBps = GBps;
          c->nodes[i].nic_latency_us = lat;
          c->nodes[i].nic_ranges = ranges;
          if (rails > 0)
            c->nodes[i].nic_rails = (int16_t)rails;
        } else {
          c->nodes[i].intra_GBps = GBps;
          c->nodes[i].intra_latency_us = lat;
          c->nodes[i].intra_ranges = ranges;
        }
      }
    }
  }
cleanup:
  return st;
}

hs_status_t hs_profile_parse(const char *text, const char *file, hs_cluster_t *c, hs_error_t *err)
{
  cJSON *j = NULL;
  if (!file)
    file = "profile";
  hs_status_t st = hs_json_parse(text, file, &j, err);
  if (st == HS_OK)
    st = apply_json(j, file, c, err);
  hs_json_free(j);
  return st;
}

hs_status_t hs_profile_apply_file(const char *path, hs_cluster_t *c, hs_error_t *err)
{
  cJSON *j = NULL;
  hs_status_t st = hs_json_load_file(path, &j, err);
  if (st == HS_OK)
    st = apply_json(j, hs_basename(path), c, err);
  hs_json_free(j);
  return st;
}
