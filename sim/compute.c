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
 * Sustained ceiling (GPUs whose catalog entry has gemm_sustained_eff > 0,
 * a published maximum-sustainable-matmul rate over the peak): a bf16/fp16
 * GEMM takes max(the time above, f / (peak * gemm_sustained_eff)): its
 * rate, launch included, never beats the sustained one. Short-timed
 * GEMM sweeps run at the boost clock; a training step holds the GPU at its
 * power limit, where the clock settles lower and the rate stops growing
 * with the GEMM's size (docs/clusters.md, "Sustained GEMM rate"). GPUs
 * without it keep the curve, bit for bit.
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
 * Memory-side GEMMs (GPUs whose catalog entry has gemm_mem_latency_us > 0,
 * fitted on DeepBench's cuBLAS GEMMs, docs/clusters.md "Skinny GEMMs"): a
 * GEMM kernel's memory time is gemm_mem_latency_us + b / (mem_bw * mem_eff).
 * DeepBench's fp16 GEMMs with N = 16 and M = K = 1760-4096 on a V100 take
 * 8-12 us more than their operand bytes at the copy rate, at every size
 * (between sizes the time grows at about the copy rate): a fixed tail
 * (split-K reduction, pipeline fill of a grid with fewer tiles than SMs)
 * that the FLOP line's intercept (gemm_half_flops) does not give on the
 * memory side of the max; the fit over all memory-side shapes gives 5.4 us
 * beyond the launch (V100), 3.1 (T4). Memory-bound kernels that are not
 * GEMMs never see it; GPUs without it keep the roofline above, bit for bit.
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
#include <string.h>

/* One kernel: f FLOPs (GEMM when out >= 0: `out` output elements), b bytes. */
static double kernel_s(const hs_gpu_t *g, hs_dtype_t dt, bool is_gemm, double flops, double out,
                       double bytes)
{
  double t_launch = g->launch_us * 1e-6;
  double t_mem = 0.0, t_flop = 0.0, t_floor = 0.0;
  if (bytes > 0.0 && g->mem_bw_GBps > 0.0)
    t_mem = bytes / (g->mem_bw_GBps * HS_GB * (g->mem_eff > 0 ? g->mem_eff : 1.0));
  /* a GEMM on the memory side pays its fixed tail (skinny GEMMs, header) */
  if (is_gemm && t_mem > 0.0 && g->gemm_mem_latency_us > 0.0)
    t_mem += g->gemm_mem_latency_us * 1e-6;
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
    /* the power limit: no bf16/fp16 GEMM runs faster than the sustained rate */
    if (is_gemm && (dt == HS_DTYPE_BF16 || dt == HS_DTYPE_FP16) && g->gemm_sustained_eff > 0 && peak > 0.0)
      t_floor = flops / (peak * g->gemm_sustained_eff);
  }
  return fmax(t_launch + fmax(t_mem, t_flop), t_floor);
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

/* ---- Transformer Engine fp8 cast kernels (docs/simulator.md, precision) ----
 * Every weight GEMM that runs in fp8 (HS_OP_GEMM, HS_OP_MOE_EXPERT with a
 * GEMM shape) pays TE's memory-bound cast kernels around it, each timed as
 * one kernel: launch + bytes / (mem_bw * mem_eff).
 * Forward, per microbatch: the input activation is cast to fp8 with its
 * transpose for the wgrad GEMM (tex.fp8_cast_transpose_fused in
 * transformer_engine/pytorch/module/linear.py: read 2 B, write 1 + 1 B per
 * element) unless the producer emits fp8: Megatron-Core's TE layer spec
 * (gpt_layer_specs.py) builds qkv and fc1 as TELayerNormColumnParallelLinear
 * (layernorm_linear.py: the norm kernel writes the fp8 output), out_proj
 * and fc2 as TERowParallelLinear (linear.py), with the activation in
 * Megatron's MLP (bf16), so out_proj, fc2 and every other fp8 GEMM (lm_head,
 * pooler, mlm.transform, explicit-op GEMMs) cast their input; MoE experts
 * (TEGroupedMLP: grouped_linear.py) cast both the fc1 and the fc2 input.
 * Backward, per microbatch: each fp8 GEMM casts its output gradient dY with
 * its transpose (fp8_cast_transpose[_bgrad]_fused, linear.py: read 2 B,
 * write 1 + 1 B); experts cast fc2's and fc1's dY. */
static bool op_name_is(const char *name, const char *suffix)
{
  size_t n = strlen(name), k = strlen(suffix);
  return n >= k && strcmp(name + n - k, suffix) == 0 && (n == k || name[n - k - 1] == '.');
}

static bool fp8_linear(hs_dtype_t dt, const hs_op_t *op)
{
  return dt == HS_DTYPE_FP8 && (op->kind == HS_OP_GEMM || op->kind == HS_OP_MOE_EXPERT) &&
         op->gemm_m > 0 && op->gemm_n > 0 && op->gemm_k > 0;
}

/* Bytes per element of a cast + transpose: read bf16, write fp8 and its
 * fp8 transpose. */
#define FP8_CAST_T_BYTES_PER_ELEM 4.0

static double fp8_cast_kernels_s(const hs_gpu_t *g, const hs_op_t *op, double samples, int32_t tp,
                                 hs_phase_t phase)
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
  double rows = b * m * samples, t = 0.0;
  if (op->kind == HS_OP_MOE_EXPERT) {
    /* fc1 (rows x k) -> (rows x n), fc2 (rows x f) -> (rows x k); f, the
     * fc2 input width, from the per-expert weights h*n + f*h (a bias adds
     * (n + h) / h < 0.1% to f) */
    double e = op->experts > 0 ? (double)op->experts : (op->gemm_batch > 0 ? op->gemm_batch : 1);
    double f = op->params / (e * op->gemm_k) - op->gemm_n;
    if (f < 0)
      f = 0;
    if (phase == HS_PHASE_FWD)
      return kernel_s(g, HS_DTYPE_BF16, false, 0.0, 0.0, FP8_CAST_T_BYTES_PER_ELEM * rows * k) +
             kernel_s(g, HS_DTYPE_BF16, false, 0.0, 0.0, FP8_CAST_T_BYTES_PER_ELEM * rows * f);
    return kernel_s(g, HS_DTYPE_BF16, false, 0.0, 0.0, FP8_CAST_T_BYTES_PER_ELEM * rows * k) +
           kernel_s(g, HS_DTYPE_BF16, false, 0.0, 0.0, FP8_CAST_T_BYTES_PER_ELEM * rows * n);
  }
  if (phase == HS_PHASE_FWD) {
    if (!op_name_is(op->name, "qkv") && !op_name_is(op->name, "fc1"))
      t += kernel_s(g, HS_DTYPE_BF16, false, 0.0, 0.0, FP8_CAST_T_BYTES_PER_ELEM * rows * k);
    return t;
  }
  return kernel_s(g, HS_DTYPE_BF16, false, 0.0, 0.0, FP8_CAST_T_BYTES_PER_ELEM * rows * n);
}

/* fp8 weight cast + transpose once per optimizer step (TE keeps the fp8
 * weight across microbatches: Megatron-Core passes is_first_microbatch,
 * base.py / linear.py): read 2 B, write 1 + 1 B per parameter held, one
 * kernel per weight (experts: fc1 and fc2 of each expert held). */
double hs_compute_fp8_weight_cast_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op,
                                    double params_held, double experts_held)
{
  if (!fp8_linear(dt, op) || params_held <= 0.0)
    return 0.0;
  double kernels = 1.0;
  if (op->kind == HS_OP_MOE_EXPERT)
    kernels = 2.0 * fmax(1.0, experts_held);
  double t_mem = 0.0;
  if (g->mem_bw_GBps > 0.0)
    t_mem = FP8_CAST_T_BYTES_PER_ELEM * params_held /
            (g->mem_bw_GBps * HS_GB * (g->mem_eff > 0 ? g->mem_eff : 1.0));
  return kernels * g->launch_us * 1e-6 + t_mem;
}

double hs_compute_fp8_cast_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                             int32_t tp, hs_phase_t phase)
{
  return fp8_linear(dt, op) ? fp8_cast_kernels_s(g, op, samples, tp, phase) : 0.0;
}

bool hs_compute_attn_fused(const hs_gpu_t *g, const hs_op_t *op)
{
  return op->kind == HS_OP_ATTENTION && hs_gpu_attn_calibrated(g) && op->gemm_m > 0 &&
         op->saved_bytes <= op->saved_bytes_selective;
}

static double op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                   int32_t tp, hs_phase_t phase, double flops, double bytes);

double hs_compute_op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                       int32_t tp, hs_phase_t phase)
{
  double div = (op->tp_split == HS_TP_REPLICATE || tp <= 1) ? 1.0 : (double)tp;
  double flops = (phase == HS_PHASE_FWD ? op->fwd_flops : op->bwd_flops) * samples / div;
  double bytes = (phase == HS_PHASE_FWD ? op->fwd_mem_bytes : op->bwd_mem_bytes) * samples / div;
  if (flops <= 0.0 && bytes <= 0.0)
    return 0.0;
  if (!fp8_linear(dt, op))
    return op_s(g, dt, op, samples, tp, phase, flops, bytes);
  /* Transformer Engine's fp8 cast kernels around an fp8 weight GEMM */
  return fp8_cast_kernels_s(g, op, samples, tp, phase) +
         op_s(g, dt, op, samples, tp, phase, flops, bytes);
}

static double op_s(const hs_gpu_t *g, hs_dtype_t dt, const hs_op_t *op, double samples,
                   int32_t tp, hs_phase_t phase, double flops, double bytes)
{
  bool gemm = op_is_gemm(op->kind);
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
