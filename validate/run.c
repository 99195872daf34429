/*
 * run.c - a measured run's simulation: the model, a Megatron-style grid plan
 * and the simulator's report for `hetsim validate --run`.
 *
 * The plan is what Megatron-LM ran as far as the simulator models it: dp
 * identical pipelines of pp stages with tp-way TP, layers split evenly,
 * 1F1B (interleaved with the virtual pipeline size), the recompute
 * granularity, ZeRO-1 style optimizer sharding for the distributed optimizer.
 * Sequence parallelism is not modelled (a warning says so). O(simulation).
 */
#include "hs_validate.h"

#include <string.h>

#define HS_RUN_MAX_UNEVEN_PP 4096 /* pipeline stages of an uneven run (the importer checks) */

hs_status_t hs_run_simulate(const hs_run_t *r, const hs_cluster_t *c, hs_model_t *m,
                            hs_report_t *rep, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_t plan;
  hs_plan_init(&plan);
  hs_model_init(m);
  hs_report_init(rep);
  const hs_run_plan_t *p = &r->plan;
  int64_t need = (int64_t)p->tp * p->pp * p->dp;
  if ((int64_t)c->n_devices < need)
    return hs_error_set(err, HS_EINVAL, "run: tp %d x pp %d x dp %d = %lld GPUs, but cluster %s has "
                        "%zu", p->tp, p->pp, p->dp, (long long)need, c->name, c->n_devices);
  if (p->sequence_parallel)
    hs_error_warn(err, "run: sequence_parallel is on; the simulator does not model it (TP "
                  "all-reduces instead of reduce-scatter/all-gather, full activations)");
  HS_CHECK(hs_model_from_transformer(&r->model, m, err));
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = p->tp;
  g.pp = p->pp;
  g.dp = p->dp;
  g.microbatch_size = p->microbatch_size;
  g.global_batch = p->global_batch;
  g.schedule = p->chunks > 1 ? "interleaved-1f1b" : "1f1b";
  g.chunks = p->chunks > 1 ? p->chunks : 1;
  g.recompute = p->recompute;
  /* uneven first / last stage (Megatron's decoder_first/last_pipeline_num_
   * layers), the middle stages sharing the rest evenly */
  int32_t layers[HS_RUN_MAX_UNEVEN_PP];
  if ((p->first_stage_layers > 0 || p->last_stage_layers > 0) && p->pp <= HS_RUN_MAX_UNEVEN_PP) {
    int32_t set = (p->first_stage_layers > 0) + (p->last_stage_layers > 0);
    int64_t rest = r->model.layers - p->first_stage_layers - p->last_stage_layers;
    int32_t mid = p->pp > set ? (int32_t)(rest / (p->pp - set)) : 0;
    for (int32_t k = 0; k < p->pp; k++)
      layers[k] = mid;
    if (p->first_stage_layers > 0)
      layers[0] = p->first_stage_layers;
    if (p->last_stage_layers > 0)
      layers[p->pp - 1] = p->last_stage_layers;
    g.stage_layers = layers;
    g.n_stage_layers = p->pp;
  }
  HS_CHECK(hs_plan_grid(m, c, &g, &plan, err));
  plan.optimizer_sharding = p->distributed_optimizer;
  hs_strlcpy(plan.strategy, "megatron-log", sizeof plan.strategy);
  HS_CHECK(hs_plan_validate(&plan, m, c, "run plan", err));
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  HS_CHECK(hs_simulate(m, c, &plan, &so, rep, err));
cleanup:
  hs_plan_destroy(&plan);
  if (st != HS_OK) {
    hs_report_destroy(rep);
    hs_model_destroy(m);
  }
  return st;
}
