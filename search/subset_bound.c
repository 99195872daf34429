/*
 * subset_bound.c - a lower bound of the iteration time of any plan on a set
 * of devices, in the simulator's own cost model (hs__subset_time_lb_s), so
 * that the device-subset search (registry.c) skips the subsets whose every
 * plan is slower than a plan it already has.
 *
 * Why it holds (sim/compute.c): a GEMM kernel of f FLOPs takes at least
 * f / (peak(dtype) x gemm_eff_max), gemm_eff_max <= 1 (the catalog refuses
 * more), and fused attention at least (f / 2) / bf16 peak (the published
 * causal rates count half the op's FLOPs); tensor parallelism and
 * data-parallel shares divide an op's FLOPs between devices without
 * shrinking their sum (replicated ops repeat them), recomputation only adds
 * some; an executor runs its compute segments one after another
 * (sim/simulate.c), so every device is busy at least its FLOPs over its
 * rate and the iteration lasts at least the busiest device:
 *     T >= max_d F_d / r_d >= sum_d F_d / sum_d r_d = F / R.
 * Only weight GEMMs and attention count in F (norms, element-wise ops,
 * MoE experts and communication only make T longer). tests/
 * test_search_subset_bound.c checks the bound against the simulated time of
 * every planner's plans on random clusters.
 */
#include "search_internal.h"

/* FLOPs per sample that every plan computes at no more than r_d (above). */
static double bounded_flops(const hs_model_t *m)
{
  double f = 0.0;
  for (size_t i = 0; i < m->n_ops; i++) {
    const hs_op_t *op = &m->ops[i];
    if (op->kind == HS_OP_GEMM)
      f += op->fwd_flops + op->bwd_flops;
    else if (op->kind == HS_OP_ATTENTION)
      f += 0.5 * (op->fwd_flops + op->bwd_flops);
  }
  return f;
}

double hs__subset_time_lb_s(const hs_model_t *m, const hs_cluster_t *c, const bool *alive,
                            int64_t global_batch, hs_dtype_t precision)
{
  double rate = 0.0; /* FLOP/s of the alive devices, each at its fastest */
  for (size_t n = 0; n < c->n_nodes; n++) {
    if (alive && !alive[n])
      continue;
    const hs_gpu_t *g = &c->gpus.gpus[c->nodes[n].gpu];
    double r = hs_gpu_peak_flops(g, precision);
    double r_bf16 = hs_gpu_peak_flops(g, HS_DTYPE_BF16);
    rate += (double)c->nodes[n].n_devices * (r > r_bf16 ? r : r_bf16);
  }
  if (!(rate > 0.0))
    return 0.0;
  /* a margin for the simulator's whole-nanosecond segments */
  return 0.999 * bounded_flops(m) * (double)global_batch / rate;
}
