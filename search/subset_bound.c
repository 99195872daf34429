/*
 * subset_bound.c - a lower bound of the iteration time of any plan on a set
 * of devices, in the simulator's own cost model (hs__subset_time_lb_s), so
 * that the device-subset search (registry.c) skips the subsets whose every
 * plan is slower than a plan it already has.
 *
 * Why it holds (sim/compute.c): a GEMM kernel of f FLOPs takes at least
 * f / (peak(dtype) x gemm_eff_max) (and, bf16/fp16 where the catalog has a
 * sustained rate, f / (peak x gemm_sustained_eff)), fused attention at
 * least (f / 2) / (bf16 peak x attn_eff_max) (the published causal rates
 * count half the op's FLOPs) and unfused attention its GEMMs' time on all
 * of f; tensor parallelism and
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

#include <math.h>

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

/* The fastest a GEMM of dtype dt runs on g: its peak times the GEMM curve's
 * ceiling (eff(f) = gemm_eff_max x f / (f + extra) never exceeds
 * gemm_eff_max; fp8 on its own ceiling where the catalog has one), and not
 * above the sustained rate for bf16/fp16 (compute.c's kernel_s). */
static double gemm_rate(const hs_gpu_t *g, hs_dtype_t dt)
{
  double peak = hs_gpu_peak_flops(g, dt);
  bool fp8 = dt == HS_DTYPE_FP8 && g->gemm_eff_max_fp8 > 0 && g->peak_flops[HS_DTYPE_FP8] > 0;
  double emax = fp8 ? g->gemm_eff_max_fp8 : g->gemm_eff_max > 0 ? g->gemm_eff_max : 1.0;
  double r = peak * emax;
  if ((dt == HS_DTYPE_BF16 || dt == HS_DTYPE_FP16) && g->gemm_sustained_eff > 0)
    r = fmin(r, peak * g->gemm_sustained_eff);
  return r;
}

/* The fastest g computes a FLOP of the bound (above): a weight GEMM in the
 * plan's precision or bf16, or half an attention FLOP: fused at the
 * measured bf16 rate (compute.c's fused_attention_s counts half the op's
 * FLOPs), unfused as GEMMs of all of them in bf16 (fp8 runs attention in
 * bf16). */
static double device_rate(const hs_gpu_t *g, hs_dtype_t precision)
{
  double attn_eff = fmax(g->attn_fwd_eff_max, g->attn_bwd_eff_max);
  double r_attn = fmax(hs_gpu_peak_flops(g, HS_DTYPE_BF16) * attn_eff, 0.5 * gemm_rate(g, HS_DTYPE_BF16));
  return fmax(fmax(gemm_rate(g, precision), gemm_rate(g, HS_DTYPE_BF16)), r_attn);
}

double hs__subset_time_lb_s(const hs_model_t *m, const hs_cluster_t *c, const bool *alive,
                            int64_t global_batch, hs_dtype_t precision)
{
  double rate = 0.0; /* FLOP/s of the alive devices, each at its fastest */
  for (size_t n = 0; n < c->n_nodes; n++)
    if (!alive || alive[n])
      rate += (double)c->nodes[n].n_devices * device_rate(&c->gpus.gpus[c->nodes[n].gpu], precision);
  if (!(rate > 0.0))
    return 0.0;
  /* a margin for the simulator's whole-nanosecond segments */
  return 0.999 * bounded_flops(m) * (double)global_batch / rate;
}
