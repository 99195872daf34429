/*
 * report_json.c - the simulation report as JSON (`simulate --json`) and as a
 * text table. Keys are the contract in DESIGN.md ("Report").
 */
#include "hs_json.h"
#include "hs_sim.h"

#include <cjson/cJSON.h>

cJSON *hs_report_to_json(const hs_report_t *r)
{
  hs_json_oom_clear();
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "plan", r->plan_summary);
  cJSON_AddNumberToObject(j, "iteration_time_s", r->iteration_time_s);
  cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
  cJSON_AddNumberToObject(j, "tokens_per_s", r->tokens_per_s);
  cJSON_AddNumberToObject(j, "tflops_per_gpu", r->tflops_per_gpu);
  cJSON_AddNumberToObject(j, "hw_tflops_per_gpu", r->hw_tflops_per_gpu);
  cJSON_AddNumberToObject(j, "mfu", r->mfu);
  cJSON_AddNumberToObject(j, "bubble_fraction", r->bubble_fraction);
  cJSON_AddNumberToObject(j, "max_peak_memory_bytes", r->max_peak_memory_bytes);
  cJSON_AddBoolToObject(j, "oom", r->oom);
  hs_json_add(j, "oom_devices", r->n_oom_devices > 0
                                    ? cJSON_CreateIntArray(r->oom_devices, r->n_oom_devices)
                                    : cJSON_CreateArray());
  cJSON_AddNumberToObject(j, "cost_usd_per_iteration", r->cost_usd_per_iteration);
  cJSON_AddNumberToObject(j, "cost_usd_per_million_tokens", r->cost_usd_per_million_tokens);
  cJSON_AddNumberToObject(j, "usd_per_hour", r->usd_per_hour);
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
  }
  cJSON *ls = cJSON_AddArrayToObject(j, "links");
  for (int32_t k = 0; ls && k < r->n_links; k++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(ls, o);
    cJSON_AddStringToObject(o, "link", r->links[k].label);
    cJSON_AddNumberToObject(o, "bytes", r->links[k].bytes);
    cJSON_AddNumberToObject(o, "utilisation", r->links[k].utilisation);
  }
  return hs_json_finish(j);
}

void hs_report_print(const hs_report_t *r, FILE *out)
{
  char b1[32], b2[32];
  fprintf(out, "plan            %s\n", r->plan_summary);
  fprintf(out, "iteration       %.4f s   (%lld samples, %lld tokens)\n", r->iteration_time_s,
          (long long)r->global_batch, (long long)r->tokens_per_iteration);
  fprintf(out, "throughput      %.1f samples/s   %.0f tokens/s\n", r->samples_per_s, r->tokens_per_s);
  fprintf(out, "per GPU         %.1f TFLOP/s model   %.1f TFLOP/s with recompute   MFU %.1f%%\n",
          r->tflops_per_gpu, r->hw_tflops_per_gpu, 100.0 * r->mfu);
  fprintf(out, "bubble          %.1f%%\n", 100.0 * r->bubble_fraction);
  fprintf(out, "peak memory     %s%s\n", hs_fmt_bytes(r->max_peak_memory_bytes, b1, sizeof b1),
          r->oom ? "   OUT OF MEMORY" : "");
  if (r->oom) {
    fprintf(out, "oom devices     ");
    for (int32_t k = 0; k < r->n_oom_devices && k < 16; k++)
      fprintf(out, "%s%d", k ? "," : "", r->oom_devices[k]);
    fprintf(out, "%s\n", r->n_oom_devices > 16 ? ",..." : "");
  }
  fprintf(out, "cost            $%.4f per iteration   $%.3f per million tokens   ($%.2f/h, %d GPUs)\n",
          r->cost_usd_per_iteration, r->cost_usd_per_million_tokens, r->usd_per_hour, r->n_devices);
  fprintf(out, "\n%-4s %-5s %-12s %-16s %4s %4s %9s %9s %9s %9s %9s %10s\n", "pipe", "stage", "ops",
          "gpu", "tp", "reps", "fwd ms", "bwd ms", "busy s", "comm s", "idle s", "peak mem");
  int32_t shown = 0;
  for (int32_t k = 0; k < r->n_stages; k++) {
    const hs_stage_report_t *s = &r->stages[k];
    if (s->pipeline > 0 && r->n_stages > 32)
      continue; /* large plans: the first pipeline is representative */
    char ops[24];
    snprintf(ops, sizeof ops, "%d-%d", s->op_first, s->op_last - 1);
    fprintf(out, "%-4d %-5d %-12s %-16.16s %4d %4d %9.3f %9.3f %9.4f %9.4f %9.4f %10s\n", s->pipeline,
            s->stage, ops, s->gpu, s->tp, s->n_replicas, 1e3 * s->fwd_s, 1e3 * s->bwd_s,
            s->compute_s, s->comm_exposed_s, s->idle_s,
            hs_fmt_bytes(s->peak_memory_bytes, b2, sizeof b2));
    shown++;
  }
  if (shown < r->n_stages)
    fprintf(out, "(%d more stages of other pipelines: see --json)\n", r->n_stages - shown);
  if (r->n_links > 0) {
    fprintf(out, "\nbusiest links\n");
    for (int32_t k = 0; k < r->n_links && k < 5; k++)
      fprintf(out, "  %-28s %12s  %5.1f%% utilised\n", r->links[k].label,
              hs_fmt_bytes(r->links[k].bytes, b1, sizeof b1), 100.0 * r->links[k].utilisation);
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
