/*
 * compute.c - the compute cost model: time of a kernel or an op on a GPU.
 *
 * A kernel of f FLOPs moving b bytes takes
 *     launch + max(f / (peak * eff(f)), b / (mem_bw * mem_eff))
 * with the GEMM efficiency curve eff(f) = gemm_eff_max * f / (f + gemm_half_flops):
 * small GEMMs are latency/occupancy bound, large ones approach gemm_eff_max.
 * Memory-bound kernels (norms, elementwise, embedding) use only the byte
 * term at their own peak. FP8 GEMMs (dtype fp8 on a GPU with an fp8 peak)
 * use gemm_eff_max_fp8 and gemm_half_flops_fp8 instead where the catalog
 * entry has them (fitted on published fp8 GEMM sweeps, docs/clusters.md);
 * without them fp8 GEMMs take the curve above on the fp8 peak, bit for bit
 * as before. The parameters are the GPU catalog's defaults until a
 * calibrated profile (hs_profile_apply_file) replaces them.
 *
 * Kernel shape (GPUs whose catalog entry has gemm_out_k > 0, fitted on GEMM
 * and BMM points with shapes, docs/clusters.md): a GEMM writing `out`
 * output elements pays, besides its FLOPs, a fixed cost per output element
 * (tile prologue and epilogue) worth gemm_out_k steps of the reduction:
 *     t_flop = (f + gemm_half_flops + 2 * gemm_out_k * out) / (peak * gemm_eff_max)
 * so a GEMM of reduction depth k runs at k / (k + gemm_out_k) of the
 * FLOP-only rate: attention's QK^T (k = head_dim) far below the weight
 * GEMMs. With it, each GEMM op is timed kernel by kernel with its own
 * shape (forward; backward = input gradient m x k and weight gradient
 * k x n), and the unfused attention core (scores materialised: saved_bytes
 * > saved_bytes_selective) is the serial kernels it is in Megatron-LM
 * (QK^T, scale-mask-softmax, dropout, AV; backward: two BMMs, dropout,
 * softmax, two BMMs), whose times add instead of overlapping. GPUs without
 * gemm_out_k keep the FLOP-only model above, bit for bit.
 *
 * Fused attention (FlashAttention: the attention op with no score matrix
 * saved, saved_bytes <= saved_bytes_selective) on a GPU whose catalog entry
 * has the attn_* fields (fitted on published FlashAttention benchmarks,
 * docs/clusters.md) is one kernel per direction at the measured rate
 *     t = launch + (f / 2) / (bf16 peak * attn_eff_max * s / (s + attn_half_seq))
 * with s the sequence length (gemm_m): the published rates count a causal
 * kernel's FLOPs halved (only the unmasked half is computed) while the op
 * counts the full 4 s^2 d per head forward (2.5x backward), hence f / 2:
 * every model is timed as causal (decoder) attention. The memory term is
 * inside the measured rate. GPUs without the fields keep the GEMM timing
 * above, bit for bit.
 */
#include "hs_sim.h"

#include <math.h>

/* One kernel: f FLOPs (GEMM when out >= 0: `out` output elements), b bytes. */
static double kernel_s(const hs_gpu_t *g, hs_dtype_t dt, bool is_gemm, double flops, double out,
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
      /* fp8 GEMMs on their own curve where the catalog has one (and the GPU
       * runs fp8: the fallback to a bf16 peak keeps the bf16 curve) */
      bool fp8 = dt == HS_DTYPE_FP8 && g->gemm_eff_max_fp8 > 0 && g->peak_flops[HS_DTYPE_FP8] > 0;
      double emax = fp8 ? g->gemm_eff_max_fp8 : g->gemm_eff_max > 0 ? g->gemm_eff_max : 1.0;
      double half = fp8 ? g->gemm_half_flops_fp8 : g->gemm_half_flops;
      double extra = (half > 0 ? half : 0.0) +
                     (g->gemm_out_k > 0 && out > 0 ? 2.0 * g->gemm_out_k * out : 0.0);
      eff = emax * flops / (flops + extra);
    }
    if (peak > 0.0 && eff > 0.0)
      t_flop = flops / (peak * eff);
  }
  return t_launch + fmax(t_mem, t_flop);
}

double hs_compute_kernel_s(const hs_gpu_t *g, hs_dtype_t dt, bool is_gemm, double flops,
                           double bytes)
{
  return kernel_s(g, dt, is_gemm, flops, 0.0, bytes);
}

double hs_compute_gemm_s(const hs_gpu_t *g, hs_dtype_t dt, double flops, double out_elems,
                         double bytes)
{
  return kernel_s(g, dt, true, flops, out_elems, bytes);
}

static bool op_is_gemm(hs_op_kind_t k)
{
  return k == HS_OP_GEMM || k == HS_OP_ATTENTION || k == HS_OP_MOE_EXPERT || k == HS_OP_MOE_ROUTER;
}

/* A weight GEMM (m x k) by (k x n), `batch` times per sample, kernel by
 * kernel with output elements: forward m x n, input gradient m x k, weight
 * gradient k x n (once per microbatch, not per sample). */
static double gemm_op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                        int32_t tp, hs_phase_t phase, double flops, double bytes)
{
  double m = op->gemm_m, n = op->gemm_n, k = op->gemm_k;
  double b = op->gemm_batch > 0 ? (double)op->gemm_batch : 1.0;
  if (tp > 1) {
    double t = (double)tp;
    switch (op->tp_split) {
    case HS_TP_COLUMN:
    case HS_TP_VOCAB: n /= t; break;
    case HS_TP_ROW: k /= t; break;
    case HS_TP_HEADS:
    case HS_TP_EXPERT: b /= t; break;
    default: break;
    }
  }
  if (phase == HS_PHASE_FWD)
    return kernel_s(g, dt, true, flops, b * m * n * samples, bytes);
  return kernel_s(g, dt, true, 0.5 * flops, b * m * k * samples, 0.5 * bytes) +
         kernel_s(g, dt, true, 0.5 * flops, b * k * n, 0.5 * bytes);
}

/* The unfused attention core as its serial kernels; P = score elements,
 * c = elements of Q (= K = V = context) on this device, d bytes per element,
 * mask 1 byte per score. */
static double unfused_attention_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op,
                                  double samples, int32_t tp, hs_phase_t phase)
{
  double heads = op->gemm_batch > 0 ? (double)op->gemm_batch : 1.0;
  if (tp > 1 && op->tp_split == HS_TP_HEADS)
    heads /= (double)tp;
  double s = op->gemm_m, hd = op->gemm_k, d = hs_dtype_bytes(dt);
  double P = heads * s * s * samples, c = heads * s * hd * samples, f = 2.0 * P * hd;
  if (phase == HS_PHASE_FWD)
    return kernel_s(g, dt, true, f, P, P * d + 2.0 * c * d)        /* QK^T: read Q, K, write scores */
           + kernel_s(g, dt, false, 0.0, 0.0, 2.0 * P * d)         /* scale-mask-softmax */
           + kernel_s(g, dt, false, 0.0, 0.0, 2.0 * P * d + P)     /* dropout: probs, output, mask */
           + kernel_s(g, dt, true, f, c, P * d + 2.0 * c * d);     /* AV: read probs, V, write context */
  return kernel_s(g, dt, true, f, P, P * d + 2.0 * c * d)          /* dP = dC V^T */
         + kernel_s(g, dt, true, f, c, P * d + 2.0 * c * d)        /* dV = P^T dC */
         + kernel_s(g, dt, false, 0.0, 0.0, 2.0 * P * d + P)       /* dropout backward */
         + kernel_s(g, dt, false, 0.0, 0.0, 3.0 * P * d)           /* softmax backward */
         + kernel_s(g, dt, true, f, c, P * d + 2.0 * c * d)        /* dQ = dS K */
         + kernel_s(g, dt, true, f, c, P * d + 2.0 * c * d);       /* dK = dS^T Q */
}

/* Fused causal attention at the calibrated rate (see the header). */
static double fused_attention_s(const hs_gpu_t *g, double flops, double seq, hs_phase_t phase)
{
  double emax = phase == HS_PHASE_FWD ? g->attn_fwd_eff_max : g->attn_bwd_eff_max;
  double half = phase == HS_PHASE_FWD ? g->attn_fwd_half_seq : g->attn_bwd_half_seq;
  double rate = hs_gpu_peak_flops(g, HS_DTYPE_BF16) * emax * seq / (seq + half);
  return g->launch_us * 1e-6 + (rate > 0.0 ? 0.5 * flops / rate : 0.0);
}

bool hs_compute_attn_fused(const hs_gpu_t *g, const hs_op_t *op)
{
  return op->kind == HS_OP_ATTENTION && hs_gpu_attn_calibrated(g) && op->gemm_m > 0 &&
         op->saved_bytes <= op->saved_bytes_selective;
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
  if (flops > 0.0 && hs_compute_attn_fused(g, op))
    return fused_attention_s(g, flops, (double)op->gemm_m, phase);
  if (g->gemm_out_k > 0 && gemm && op->gemm_m > 0 && op->gemm_n > 0 && op->gemm_k > 0) {
    if (op->kind != HS_OP_ATTENTION)
      return gemm_op_s(g, dt, op, samples, tp, phase, flops, bytes);
    if (op->saved_bytes > op->saved_bytes_selective)
      return unfused_attention_s(g, dt, op, samples, tp, phase);
  }
  /* Backward of a GEMM is two kernels (input grad and weight grad). */
  int kernels = (gemm && phase == HS_PHASE_BWD) ? 2 : 1;
  return kernels * hs_compute_kernel_s(g, dt, gemm, flops / kernels, bytes / kernels);
}
