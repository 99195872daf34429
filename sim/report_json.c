/*
 * report_json.c - the simulation report as JSON (`simulate --json`) and as a
 * text table. Keys are the contract in DESIGN.md ("Report").
 *
 * An infeasible plan (a device out of memory) has no throughput, MFU or cost
 * that could be achieved: the JSON says "feasible": false, gives the reason,
 * sets those keys to null and keeps the simulated time only as
 * "infeasible_simulated_iteration_time_s"; the text says INFEASIBLE instead
 * of printing them.
 */
#include "hs_json.h"
#include "hs_sim.h"

#include <cjson/cJSON.h>
#include <string.h>

/* "emb+0-7", "8-15", "24-31+head": the stage's transformer blocks as a
 * range, with what it holds outside them. */
static void layers_str(const hs_stage_report_t *s, char *buf, size_t n)
{
  if (s->layer_first < 0)
    snprintf(buf, n, "%s%s%s", s->has_embedding ? "emb" : "", s->has_embedding && s->has_head ? "+" : "",
             s->has_head ? "head" : (s->has_embedding ? "" : "-"));
  else
    snprintf(buf, n, "%s%d-%d%s", s->has_embedding ? "emb+" : "", s->layer_first, s->layer_last,
             s->has_head ? "+head" : "");
}

cJSON *hs_report_to_json(const hs_report_t *r)
{
  hs_json_oom_clear();
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddNumberToObject(j, "schema_version", HS_SCHEMA_VERSION);
  cJSON_AddStringToObject(j, "plan", r->plan_summary);
  cJSON_AddBoolToObject(j, "feasible", !r->oom);
  if (r->oom) {
    char why[160];
    hs_report_infeasible_reason(r, why, sizeof why);
    cJSON_AddStringToObject(j, "infeasible_reason", why);
    cJSON_AddNumberToObject(j, "infeasible_simulated_iteration_time_s", r->iteration_time_s);
  }
  /* achievable figures only: null for an infeasible plan */
#define ACHIEVABLE(key, v) \
  (r->oom ? (void)cJSON_AddNullToObject(j, key) : (void)cJSON_AddNumberToObject(j, key, v))
  ACHIEVABLE("iteration_time_s", r->iteration_time_s);
  ACHIEVABLE("samples_per_s", r->samples_per_s);
  ACHIEVABLE("tokens_per_s", r->tokens_per_s);
  ACHIEVABLE("tflops_per_gpu", r->tflops_per_gpu);
  ACHIEVABLE("hw_tflops_per_gpu", r->hw_tflops_per_gpu);
  ACHIEVABLE("mfu", r->mfu);
  cJSON_AddNumberToObject(j, "bubble_fraction", r->bubble_fraction);
  cJSON_AddNumberToObject(j, "max_peak_memory_bytes", r->max_peak_memory_bytes);
  cJSON_AddBoolToObject(j, "oom", r->oom);
  hs_json_add(j, "oom_devices", r->n_oom_devices > 0
                                    ? cJSON_CreateIntArray(r->oom_devices, r->n_oom_devices)
                                    : cJSON_CreateArray());
  /* unpriced GPUs: the costs are unknown, not 0 or a partial sum; an
   * infeasible plan has no achievable cost */
  if (r->n_unpriced_devices > 0 || r->oom) {
    cJSON_AddNullToObject(j, "cost_usd_per_iteration");
    cJSON_AddNullToObject(j, "cost_usd_per_million_tokens");
  } else {
    cJSON_AddNumberToObject(j, "cost_usd_per_iteration", r->cost_usd_per_iteration);
    cJSON_AddNumberToObject(j, "cost_usd_per_million_tokens", r->cost_usd_per_million_tokens);
  }
#undef ACHIEVABLE
  if (r->n_unpriced_devices > 0)
    cJSON_AddNullToObject(j, "usd_per_hour");
  else
    cJSON_AddNumberToObject(j, "usd_per_hour", r->usd_per_hour);
  cJSON_AddNumberToObject(j, "unpriced_gpus", r->n_unpriced_devices);
  cJSON_AddNumberToObject(j, "global_batch", (double)r->global_batch);
  cJSON_AddNumberToObject(j, "tokens_per_iteration", (double)r->tokens_per_iteration);
  cJSON_AddNumberToObject(j, "n_devices", r->n_devices);
  cJSON_AddNumberToObject(j, "events", (double)r->events);
  cJSON_AddNumberToObject(j, "flows", (double)r->flows);
  cJSON *st = cJSON_AddArrayToObject(j, "stages");
  for (int32_t k = 0; st && k < r->n_stages; k++) {
    const hs_stage_report_t *s = &r->stages[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(st, o);
    cJSON_AddNumberToObject(o, "pipeline", s->pipeline);
    cJSON_AddNumberToObject(o, "stage", s->stage);
    int ops[2] = {s->op_first, s->op_last};
    hs_json_add(o, "ops", cJSON_CreateIntArray(ops, 2));
    if (s->layer_first >= 0) {
      int ls[2] = {s->layer_first, s->layer_last};
      hs_json_add(o, "layers", cJSON_CreateIntArray(ls, 2));
    } else {
      cJSON_AddNullToObject(o, "layers");
    }
    cJSON_AddBoolToObject(o, "embedding", s->has_embedding);
    cJSON_AddBoolToObject(o, "head", s->has_head);
    cJSON_AddStringToObject(o, "gpu", s->gpu);
    cJSON_AddNumberToObject(o, "devices", s->n_devices);
    cJSON_AddNumberToObject(o, "first_device", s->first_device);
    cJSON_AddNumberToObject(o, "tp", s->tp);
    cJSON_AddNumberToObject(o, "replicas", s->n_replicas);
    cJSON_AddNumberToObject(o, "fwd_s", s->fwd_s);
    cJSON_AddNumberToObject(o, "bwd_s", s->bwd_s);
    cJSON_AddNumberToObject(o, "compute_s", s->compute_s);
    cJSON_AddNumberToObject(o, "comm_exposed_s", s->comm_exposed_s);
    cJSON_AddNumberToObject(o, "idle_s", s->idle_s);
    cJSON_AddNumberToObject(o, "peak_memory_bytes", s->peak_memory_bytes);
    cJSON_AddNumberToObject(o, "memory_capacity_bytes", s->mem_capacity_bytes);
    cJSON_AddNumberToObject(o, "params_per_device", s->params);
    cJSON *tb = cJSON_AddObjectToObject(o, "time_breakdown_s");
    if (tb) {
      cJSON_AddNumberToObject(tb, "compute", s->time_compute_s);
      cJSON_AddNumberToObject(tb, "recompute", s->time_recompute_s);
      cJSON_AddNumberToObject(tb, "tp_comm", s->time_tp_comm_s);
      cJSON_AddNumberToObject(tb, "pp_comm", s->time_pp_comm_s);
      cJSON_AddNumberToObject(tb, "dp_comm", s->time_dp_comm_s);
      cJSON_AddNumberToObject(tb, "bubble", s->time_bubble_s);
      cJSON_AddNumberToObject(tb, "optimizer", s->time_optimizer_s);
    }
    cJSON *mb = cJSON_AddObjectToObject(o, "memory_breakdown_bytes");
    if (mb) {
      cJSON_AddNumberToObject(mb, "weights", s->mem.weights_bytes);
      cJSON_AddNumberToObject(mb, "gradients", s->mem.gradients_bytes);
      cJSON_AddNumberToObject(mb, "optimizer", s->mem.optimizer_bytes);
      cJSON_AddNumberToObject(mb, "activations", s->mem.activations_bytes);
      cJSON_AddNumberToObject(mb, "workspace", s->mem.workspace_bytes);
    }
  }
  cJSON *ls = cJSON_AddArrayToObject(j, "links");
  for (int32_t k = 0; ls && k < r->n_links; k++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(ls, o);
    cJSON_AddStringToObject(o, "link", r->links[k].label);
    cJSON_AddNumberToObject(o, "bytes", r->links[k].bytes);
    cJSON_AddNumberToObject(o, "utilisation", r->links[k].utilisation);
    cJSON_AddBoolToObject(o, "cross_site", r->links[k].cross_site);
  }
  cJSON *unc = cJSON_AddArrayToObject(j, "uncalibrated_gpus");
  char names[sizeof r->uncalibrated_gpus];
  hs_strlcpy(names, r->uncalibrated_gpus, sizeof names);
  for (char *t = names; unc && *t;) { /* comma-separated GPU names */
    char *comma = strchr(t, ',');
    if (comma)
      *comma = '\0';
    cJSON_AddItemToArray(unc, cJSON_CreateString(t));
    t = comma ? comma + 1 : t + strlen(t);
  }
  cJSON *ulk = cJSON_AddArrayToObject(j, "uncalibrated_links");
  char lnames[sizeof r->uncalibrated_links];
  hs_strlcpy(lnames, r->uncalibrated_links, sizeof lnames);
  for (char *t = lnames; ulk && *t;) { /* comma-separated "nic 25 GB/s" items */
    char *comma = strchr(t, ',');
    if (comma)
      *comma = '\0';
    cJSON_AddItemToArray(ulk, cJSON_CreateString(t));
    t = comma ? comma + 1 : t + strlen(t);
  }
  return hs_json_finish(j);
}

void hs_report_infeasible_reason(const hs_report_t *r, char *buf, size_t n)
{
  char b1[32], b2[32];
  double cap = 0.0;
  for (int32_t k = 0; k < r->n_stages; k++)
    if (r->stages[k].peak_memory_bytes > r->stages[k].mem_capacity_bytes &&
        (cap == 0.0 || r->stages[k].mem_capacity_bytes < cap))
      cap = r->stages[k].mem_capacity_bytes;
  if (cap > 0.0)
    snprintf(buf, n, "out of memory on %d device%s: peak %s against %s of device memory",
             r->n_oom_devices, r->n_oom_devices == 1 ? "" : "s",
             hs_fmt_bytes(r->max_peak_memory_bytes, b1, sizeof b1), hs_fmt_bytes(cap, b2, sizeof b2));
  else
    snprintf(buf, n, "out of memory on %d device%s: peak %s", r->n_oom_devices,
             r->n_oom_devices == 1 ? "" : "s", hs_fmt_bytes(r->max_peak_memory_bytes, b1, sizeof b1));
}

/* The text tables of large plans (more than 32 stages) show the first
 * pipeline only: it is representative, and the JSON has every stage. */
static bool stage_shown(const hs_report_t *r, const hs_stage_report_t *s)
{
  return s->pipeline == 0 || r->n_stages <= 32;
}

void hs_report_print(const hs_report_t *r, FILE *out)
{
  char b1[32];
  if (r->device_profiles[0]) /* as hs_cluster_print_calibration says it */
    fprintf(out, "device profiles: %s%s\n", r->device_profiles,
            r->uncalibrated_gpus[0] ? " (uncalibrated = datasheet defaults for gemm_eff_max, "
                                      "gemm_half_flops, mem_eff and launch_us: no published points "
                                      "in clusters/calibration/)" : "");
  if (r->link_profiles[0]) /* as hs_cluster_print_calibration says it */
    fprintf(out, "interconnects: %s%s\n", r->link_profiles,
            r->uncalibrated_links[0] ? " (uncalibrated = datasheet or file numbers, no nccl-tests fit in "
                                       "clusters/links.json)" : "");
  fprintf(out, "plan            %s\n", r->plan_summary);
  if (r->oom) {
    char why[160];
    hs_report_infeasible_reason(r, why, sizeof why);
    fprintf(out, "INFEASIBLE      %s\n", why);
    fprintf(out, "                (no throughput, MFU or cost: the plan cannot run; %lld samples, %lld "
                 "tokens per iteration)\n",
            (long long)r->global_batch, (long long)r->tokens_per_iteration);
  } else {
    fprintf(out, "iteration       %.4f s   (%lld samples, %lld tokens)\n", r->iteration_time_s,
            (long long)r->global_batch, (long long)r->tokens_per_iteration);
    fprintf(out, "throughput      %.1f samples/s   %.0f tokens/s\n", r->samples_per_s, r->tokens_per_s);
    fprintf(out, "per GPU         %.1f TFLOP/s model   %.1f TFLOP/s with recompute   MFU %.1f%%\n",
            r->tflops_per_gpu, r->hw_tflops_per_gpu, 100.0 * r->mfu);
  }
  fprintf(out, "bubble          %.1f%%\n", 100.0 * r->bubble_fraction);
  fprintf(out, "peak memory     %s%s\n", hs_fmt_bytes(r->max_peak_memory_bytes, b1, sizeof b1),
          r->oom ? "   OUT OF MEMORY" : "");
  if (r->oom) {
    fprintf(out, "oom devices     ");
    for (int32_t k = 0; k < r->n_oom_devices && k < 16; k++)
      fprintf(out, "%s%d", k ? "," : "", r->oom_devices[k]);
    fprintf(out, "%s\n", r->n_oom_devices > 16 ? ",..." : "");
  }
  if (r->oom) {
    /* infeasible: no cost */
  } else if (r->n_unpriced_devices > 0)
    fprintf(out, "cost            unpriced: %d of the plan's %d GPUs have no price in clusters/gpus.json\n",
            r->n_unpriced_devices, r->n_devices);
  else
    fprintf(out, "cost            $%.4f per iteration   $%.3f per million tokens   ($%.2f/h, %d GPUs)\n",
            r->cost_usd_per_iteration, r->cost_usd_per_million_tokens, r->usd_per_hour, r->n_devices);
  fprintf(out, "\nstages (replica 0 of each; per microbatch)\n");
  fprintf(out, "%-4s %-5s %-16s %-16s %4s %4s %9s %9s\n", "pipe", "stage", "layers", "gpu", "tp",
          "dp", "fwd ms", "bwd ms");
  int32_t shown = 0;
  for (int32_t k = 0; k < r->n_stages; k++) {
    const hs_stage_report_t *s = &r->stages[k];
    if (!stage_shown(r, s))
      continue;
    char lay[40];
    layers_str(s, lay, sizeof lay);
    fprintf(out, "%-4d %-5d %-16s %-16.16s %4d %4d %9.3f %9.3f\n", s->pipeline, s->stage, lay, s->gpu,
            s->tp, s->n_replicas, 1e3 * s->fwd_s, 1e3 * s->bwd_s);
    shown++;
  }
  fprintf(out, "\ntime per stage (s; each row adds up to the iteration)\n");
  fprintf(out, "%-4s %-5s %9s %9s %9s %9s %9s %9s %9s\n", "pipe", "stage", "compute", "recompute",
          "tp-comm", "pp-comm", "dp-comm", "bubble", "optimizer");
  for (int32_t k = 0; k < r->n_stages; k++) {
    const hs_stage_report_t *s = &r->stages[k];
    if (!stage_shown(r, s))
      continue;
    fprintf(out, "%-4d %-5d %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f\n", s->pipeline, s->stage,
            s->time_compute_s, s->time_recompute_s, s->time_tp_comm_s, s->time_pp_comm_s,
            s->time_dp_comm_s, s->time_bubble_s, s->time_optimizer_s);
  }
  fprintf(out, "\nmemory per stage (GB = 1e9 bytes; its device with the largest peak)\n");
  fprintf(out, "%-4s %-5s %9s %9s %9s %11s %9s %9s %9s\n", "pipe", "stage", "weights", "grads",
          "optimizer", "activations", "workspace", "peak", "capacity");
  for (int32_t k = 0; k < r->n_stages; k++) {
    const hs_stage_report_t *s = &r->stages[k];
    if (!stage_shown(r, s))
      continue;
    fprintf(out, "%-4d %-5d %9.2f %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f%s\n", s->pipeline, s->stage,
            s->mem.weights_bytes / HS_GB, s->mem.gradients_bytes / HS_GB,
            s->mem.optimizer_bytes / HS_GB, s->mem.activations_bytes / HS_GB,
            s->mem.workspace_bytes / HS_GB, s->peak_memory_bytes / HS_GB,
            s->mem_capacity_bytes / HS_GB, s->peak_memory_bytes > s->mem_capacity_bytes ? "  OOM" : "");
  }
  if (shown < r->n_stages)
    fprintf(out, "(%d more stages of other pipelines: see --json)\n", r->n_stages - shown);
  if (r->n_links > 0) {
    /* the cross-site links first (they are what heterogeneous plans fight
     * over), then the busiest others, 5 lines in all */
    fprintf(out, "\nbusiest links (cross-site first)\n");
    int shown_links = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int32_t k = 0; k < r->n_links && shown_links < 5; k++)
        if (r->links[k].cross_site == (pass == 0)) {
          fprintf(out, "  %-28s %12s  %5.1f%% utilised%s\n", r->links[k].label,
                  hs_fmt_bytes(r->links[k].bytes, b1, sizeof b1), 100.0 * r->links[k].utilisation,
                  r->links[k].cross_site ? "  (cross-site)" : "");
          shown_links++;
        }
  }

}

cJSON *hs_report_to_json_named(const hs_report_t *r, const char *model, const char *cluster)
{
  cJSON *j = hs_report_to_json(r);
  if (!j)
    return NULL;
  hs_json_oom_clear();
  cJSON_AddStringToObject(j, "model", model);
  cJSON_AddStringToObject(j, "cluster", cluster);
  return hs_json_finish(j);
}
