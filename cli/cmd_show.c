/*
 * cmd_show.c - `hetsim list ...` and `hetsim show model|cluster ...`.
 */
#include "cli.h"
#include "hs_clusters.h"
#include "hs_json.h"
#include "hs_models.h"
#include "hs_scenarios.h"
#include "hs_search.h"
#include "hs_sim.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

int hs_cmd_list(int argc, char **argv)
{
  hs_opt_t opts[] = {{NULL}};
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim list {models|clusters|gpus|schedules|strategies|scenarios}");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (npos != 1) {
    fprintf(stderr, "hetsim list: say what to list: models, clusters, gpus or schedules\n");
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  if (strcmp(pos[0], "models") == 0 || strcmp(pos[0], "clusters") == 0) {
    bool models = pos[0][0] == 'm';
    char **names = NULL;
    size_t n = 0;
    st = models ? hs_model_catalog_list(&names, &n, &err) : hs_cluster_catalog_list(&names, &n, &err);
    if (st != HS_OK)
      return hs_cli_fail(&err, st);
    for (size_t i = 0; i < n; i++)
      printf("%s\n", names[i]);
    if (models)
      hs_model_catalog_free(names, n);
    else
      hs_cluster_catalog_free(names, n);
    return 0;
  }
  if (strcmp(pos[0], "gpus") == 0) {
    hs_gpu_catalog_t cat;
    hs_gpu_catalog_init(&cat);
    if ((st = hs_gpu_catalog_load(NULL, &cat, &err)) != HS_OK)
      return hs_cli_fail(&err, st);
    printf("%-22s %9s %9s %8s %9s %9s %9s  %s\n", "gpu", "bf16 TF/s", "fp16 TF/s", "mem GiB", "HBM GB/s",
           "$/h", "spot $/h", "profile");
    for (size_t i = 0; i < cat.n; i++) {
      const hs_gpu_t *g = &cat.gpus[i];
      printf("%-22s %9.1f %9.1f %8.1f %9.0f %9.3f %9.3f  %s\n", g->name,
             g->peak_flops[HS_DTYPE_BF16] / 1e12, g->peak_flops[HS_DTYPE_FP16] / 1e12,
             g->mem_bytes / (1024.0 * 1024.0 * 1024.0), /* the catalog's memory_GiB */
             g->mem_bw_GBps, g->price_ondemand_usd_h, g->price_spot_usd_h,
             g->calibrated ? "calibrated" : "uncalibrated");
    }
    hs_gpu_catalog_destroy(&cat);
    return 0;
  }
  if (strcmp(pos[0], "schedules") == 0) {
    for (const hs_schedule_t *const *s = hs_schedules; *s; s++)
      printf("%-18s %s\n", (*s)->name, (*s)->description);
    return 0;
  }
  if (strcmp(pos[0], "strategies") == 0) {
    for (const hs_planner_type_t *const *t = hs_planners; *t; t++)
      printf("%-14s %s\n", (*t)->name, (*t)->description);
    return 0;
  }
  if (strcmp(pos[0], "scenarios") == 0) {
    for (const hs_scenario_t *s = hs_scenarios; s->name; s++)
      printf("%-10s %s\n           model %s, cluster %s, strategies %s\n", s->name, s->description,
             s->model, s->cluster, s->strategies);
    return 0;
  }
  fprintf(stderr, "hetsim list: unknown list '%s' (models, clusters, gpus, schedules, strategies, scenarios)\n", pos[0]);
  return 2;
}

int hs_cmd_show(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"json", false, "print JSON instead of text"},
      {"seq-len", true, "override the model's sequence length"},
      {NULL},
  };
  const char *pos[2];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 2, &npos,
                        "usage: hetsim show model NAME|FILE [--json] [--seq-len S]\n"
                        "       hetsim show cluster NAME|FILE [--json]\n\n"
                        "NAME is a catalog entry (hetsim list models|clusters); FILE a hetsim JSON\n"
                        "or, for models, a HuggingFace config.json.");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (npos != 2 || (strcmp(pos[0], "model") != 0 && strcmp(pos[0], "cluster") != 0)) {
    fprintf(stderr, "hetsim show: usage: hetsim show model|cluster NAME|FILE [--json]\n");
    return 2;
  }
  bool json = hs_cli_opt(opts, "json") != NULL;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st;
  cJSON *j = NULL;
  if (pos[0][0] == 'm') {
    int64_t seq = 0;
    if ((rc = hs_cli_int(opts, "seq-len", 0, 1, 10000000, &seq)))
      return rc;
    hs_model_t m;
    hs_model_init(&m);
    if ((st = hs_model_load(pos[1], seq, &m, &err)) != HS_OK)
      return hs_cli_fail(&err, st);
    if (json)
      j = hs_model_to_json(&m);
    else
      hs_model_print(&m, stdout);
    hs_model_destroy(&m);
  } else {
    hs_cluster_t c;
    hs_cluster_init(&c);
    if ((st = hs_cluster_load(pos[1], &c, &err)) != HS_OK)
      return hs_cli_fail(&err, st);
    if (json)
      j = hs_cluster_to_json(&c);
    else
      hs_cluster_print(&c, stdout);
    hs_cluster_destroy(&c);
  }
  if (json) {
    if (!j) {
      fprintf(stderr, "hetsim: out of memory\n");
      return 1;
    }
    j = hs_json_stamp_version(j, HS_SCHEMA_VERSION);
    st = j ? hs_json_write_file(j, "-", &err) : hs_error_set(&err, HS_ENOMEM, "out of memory");
    hs_json_free(j);
    if (st != HS_OK)
      return hs_cli_fail(&err, st);
  }
  return 0;
}
