/*
 * breakdown.c - the report's per-stage time and memory breakdowns as
 * arrays with stable keys, and their one-row summaries for tables (compare,
 * sweep CSV, notebooks).
 *
 * Invariants: a stage's time parts add up to the iteration time (simulate.c
 * partitions each executor's timeline), so their mean over stages does too;
 * a stage's memory parts add up to its peak (memory.c), and the summary is
 * the stage closest to its capacity (largest peak / capacity), the one that
 * decides whether a plan fits.
 */
#include "hs_sim.h"

#include <string.h>

const char *const hs_time_part_keys[HS_TIME_PARTS] = {"compute", "recompute", "tp_comm", "pp_comm",
                                                      "dp_comm", "bubble", "optimizer"};
const char *const hs_mem_part_keys[HS_MEM_PARTS] = {"weights", "gradients", "optimizer",
                                                    "activations", "workspace"};

void hs_stage_time_parts(const hs_stage_report_t *s, double out_s[HS_TIME_PARTS])
{
  out_s[0] = s->time_compute_s;
  out_s[1] = s->time_recompute_s;
  out_s[2] = s->time_tp_comm_s;
  out_s[3] = s->time_pp_comm_s;
  out_s[4] = s->time_dp_comm_s;
  out_s[5] = s->time_bubble_s;
  out_s[6] = s->time_optimizer_s;
}

void hs_stage_mem_parts(const hs_stage_report_t *s, double out_bytes[HS_MEM_PARTS])
{
  out_bytes[0] = s->mem.weights_bytes;
  out_bytes[1] = s->mem.gradients_bytes;
  out_bytes[2] = s->mem.optimizer_bytes;
  out_bytes[3] = s->mem.activations_bytes;
  out_bytes[4] = s->mem.workspace_bytes;
}

void hs_report_time_parts(const hs_report_t *r, double out_s[HS_TIME_PARTS])
{
  memset(out_s, 0, sizeof(double) * HS_TIME_PARTS);
  if (r->n_stages <= 0)
    return;
  for (int32_t k = 0; k < r->n_stages; k++) {
    double p[HS_TIME_PARTS];
    hs_stage_time_parts(&r->stages[k], p);
    for (int i = 0; i < HS_TIME_PARTS; i++)
      out_s[i] += p[i];
  }
  for (int i = 0; i < HS_TIME_PARTS; i++)
    out_s[i] /= r->n_stages;
}

void hs_report_mem_parts(const hs_report_t *r, double out_bytes[HS_MEM_PARTS])
{
  memset(out_bytes, 0, sizeof(double) * HS_MEM_PARTS);
  int32_t best = -1;
  double best_x = -1.0;
  for (int32_t k = 0; k < r->n_stages; k++) {
    const hs_stage_report_t *s = &r->stages[k];
    double x = s->mem_capacity_bytes > 0 ? s->peak_memory_bytes / s->mem_capacity_bytes : 0.0;
    if (x > best_x) {
      best_x = x;
      best = k;
    }
  }
  if (best >= 0)
    hs_stage_mem_parts(&r->stages[best], out_bytes);
}
