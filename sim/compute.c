/*
 * compute.c - the compute cost model: time of a kernel or an op on a GPU.
 *
 * A kernel of f FLOPs moving b bytes takes
 *     launch + max(f / (peak * eff(f)), b / (mem_bw * mem_eff))
 * with the GEMM efficiency curve eff(f) = gemm_eff_max * f / (f + gemm_half_flops):
 * small GEMMs are latency/occupancy bound, large ones approach gemm_eff_max.
 * Memory-bound kernels (norms, elementwise, embedding) use only the byte
 * term at their own peak. The parameters are the GPU catalog's defaults until a
 * calibrated profile (hs_profile_apply_file) replaces them.
 */
#include "hs_sim.h"

#include <math.h>

double hs_compute_kernel_s(const hs_gpu_t *g, hs_dtype_t dt, bool is_gemm, double flops,
                           double bytes)
{
  double t_launch = g->launch_us * 1e-6;
  double t_mem = 0.0, t_flop = 0.0;
  if (bytes > 0.0 && g->mem_bw_GBps > 0.0)
    t_mem = bytes / (g->mem_bw_GBps * HS_GB * (g->mem_eff > 0 ? g->mem_eff : 1.0));
  if (flops > 0.0) {
    double peak = is_gemm ? hs_gpu_peak_flops(g, dt) : hs_gpu_peak_flops(g, HS_DTYPE_FP32);
    double eff = 1.0;
    if (is_gemm) {
      double emax = g->gemm_eff_max > 0 ? g->gemm_eff_max : 1.0;
      eff = emax * flops / (flops + (g->gemm_half_flops > 0 ? g->gemm_half_flops : 0.0));
    }
    if (peak > 0.0 && eff > 0.0)
      t_flop = flops / (peak * eff);
  }
  return t_launch + fmax(t_mem, t_flop);
}

static bool op_is_gemm(hs_op_kind_t k)
{
  return k == HS_OP_GEMM || k == HS_OP_ATTENTION || k == HS_OP_MOE_EXPERT || k == HS_OP_MOE_ROUTER;
}

double hs_compute_op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                       int32_t tp, hs_phase_t phase)
{
  double div = (op->tp_split == HS_TP_REPLICATE || tp <= 1) ? 1.0 : (double)tp;
  double flops = (phase == HS_PHASE_FWD ? op->fwd_flops : op->bwd_flops) * samples / div;
  double bytes = (phase == HS_PHASE_FWD ? op->fwd_mem_bytes : op->bwd_mem_bytes) * samples / div;
  bool gemm = op_is_gemm(op->kind);
  if (flops <= 0.0 && bytes <= 0.0)
    return 0.0;
  /* FP8 training (Transformer Engine) runs the weight GEMMs in fp8; the
   * attention core and the router stay in bf16 */
  if (dt == HS_DTYPE_FP8 && (op->kind == HS_OP_ATTENTION || op->kind == HS_OP_MOE_ROUTER))
    dt = HS_DTYPE_BF16;
  /* Backward of a GEMM is two kernels (input grad and weight grad). */
  int kernels = (gemm && phase == HS_PHASE_BWD) ? 2 : 1;
  return kernels * hs_compute_kernel_s(g, dt, gemm, flops / kernels, bytes / kernels);
}
