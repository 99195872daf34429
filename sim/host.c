/*
 * host.c - framework host overheads: the CPU side of a training framework
 * (docs/simulator.md, "Framework overheads"). One concern: how long the
 * GPU waits for the host to issue its kernels. Entry points: the presets
 * (hs_framework_preset), the phase queue lowering runs per template
 * (hs_host_begin, hs_host_op_s, hs_host_collective) and the planners'
 * per-op bound (hs_host_op_floor_s).
 *
 * The queue. Eager PyTorch issues each kernel from Python; kernel i starts
 * on the GPU when kernel i-1 has finished and the host has issued it:
 *     cpu_i = cpu_{i-1} + d          (d = dispatch_us)
 *     gpu_i = max(gpu_{i-1}, cpu_i) + t_i
 * from cpu_0 = microbatch_us (charged once per microbatch on a rank: in
 * its first model chunk under interleaving; 0 in the others), gpu_0 = 0 at
 * the start of each microbatch's forward or backward on a stage (the
 * pipeline schedules synchronise the
 * host with the GPU around their point-to-point transfers: Megatron's
 * p2p_communication calls torch.cuda.synchronize() after
 * batch_isend_irecv, DeepSpeed's PipelineEngine waits on each
 * instruction). So a phase of long kernels pays about one dispatch, and a
 * phase of short kernels runs at the host's pace, sum_i d. A collective
 * issued between two ops costs the host one issue and no GPU time here
 * (its time is the network's): a conservative choice for launch-bound
 * phases with long collectives, where the real host keeps issuing while
 * the collective runs.
 *
 * Kernel counts per op (hs_host_kernels) are read from the frameworks'
 * code, per op of hetsim's transformer (models/transformer.c):
 *   norm        fwd 1; bwd 2 (PyTorch layer_norm_backward: the input
 *               gradient and GammaBetaBackward; Apex FusedLayerNorm's
 *               cuComputeGradInput + cuComputePartGradGammaBeta +
 *               cuComputeGradGammaBeta is 3 - counted 2, its two gamma
 *               kernels are short); unfused: fwd 3 (mean, var, affine)
 *   GEMM        fwd 1 (Megatron skips the bias and fuses it into the next
 *               elementwise kernel), bwd 2 (input and weight gradient)
 *   attention   unfused, Megatron-LM CoreAttention: baddbmm, fused
 *               scale-mask-softmax, dropout, bmm, permute+contiguous =
 *               fwd 5; bwd 7 (contiguous, 2 bmm, dropout, softmax, 2
 *               baddbmm). Flash (flash-attn 2): fwd 1; bwd 3
 *               (flash_bwd_dot_do_o, flash_bwd_dq_dk_dv, convert_dq)
 *   elementwise fused (bias-GELU / bias-dropout-add jit): fwd 1, bwd 1;
 *               unfused: fwd 2, bwd 2 (bias add, then the activation or
 *               dropout and add)
 *   embedding   fwd 5 (vocab-parallel mask: lt, ge, or, sub, masked_fill
 *               folded to 3; lookup; position add), bwd 3
 *               (embedding_dense_backward's sort, count, accumulate)
 *   loss        unfused vocab-parallel cross entropy (Megatron-LM
 *               mpu/cross_entropy.py): max, sub, exp, sum, log, gather,
 *               mask, div = fwd 8, bwd 4 (softmax copy, sub, mul, scatter);
 *               fused: fwd 2, bwd 2
 *   MoE router  fwd 4 (gate GEMM, softmax, top-k, scatter), bwd 4
 *   MoE expert  fwd 6 (permute, fc1, act, fc2, unpermute, combine),
 *               bwd 8
 * A count is a property of the framework's code, not a fitted figure;
 * d and microbatch_us are (see the presets below).
 *
 * CUDA graphs (Megatron-Core --enable-cuda-graph, Transformer Engine's
 * make_graphed_callables per layer): each layer's forward or backward is
 * one graph launch, so the host issues once per layer; ops outside the
 * layers (embedding, loss) stay eager.
 *
 * Invariants: with hs_framework_t all zero (HS_FW_NONE, the default)
 * hs_host_op_s returns t_gpu_s exactly and nothing else changes, so every
 * figure is what it was before this file existed, bit for bit. Pure
 * functions of their arguments, O(kernels of the op), no allocation.
 */
#include "hs_sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/*
 * The presets. dispatch_us and microbatch_us have no kernel-level source
 * (no published measurement of a framework's per-kernel host cost in a
 * training step, or of a pipeline engine's per-microbatch work, was found:
 * docs/fidelity-sources.md section 4). They are fitted on end-to-end
 * tables of the declared training split by `hetsim validate --published
 * --cv` (validate/published_cv.c; split and grid in
 * validate/published-fit.json), which prints every table's
 * leave-one-table-out error beside its in-fit error; the values below are
 * that fit's output, and tests/test_published_cv.c recomputes them. The
 * dispatch cost is shared by every eager preset (one PyTorch dispatcher);
 * the per-microbatch cost is per engine family.
 */
#define FIT_DISPATCH_US 32.0
#define FIT_MB_US_MEGATRON 1000.0
#define FIT_MB_US_DEEPSPEED 1000.0
#define FIT_MB_US_FSDP 1000.0

const char *const hs_framework_presets[] = {"none",          "megatron-lm-2021", "megatron-core-2024",
                                            "megatron-core-2024-graphs", "nemo-2024",
                                            "deepspeed-2022", "fsdp-2023",        NULL};

static const hs_framework_t presets[HS_FW__COUNT] = {
    [HS_FW_NONE] = {HS_FW_NONE, 0.0, 0.0, false, false},
    [HS_FW_MEGATRON_LM_2021] = {HS_FW_MEGATRON_LM_2021, FIT_DISPATCH_US, FIT_MB_US_MEGATRON, false, true},
    [HS_FW_MEGATRON_CORE_2024] = {HS_FW_MEGATRON_CORE_2024, FIT_DISPATCH_US, FIT_MB_US_MEGATRON, false,
                                  true},
    [HS_FW_MEGATRON_CORE_GRAPHS] = {HS_FW_MEGATRON_CORE_GRAPHS, FIT_DISPATCH_US, FIT_MB_US_MEGATRON,
                                    true, true},
    [HS_FW_NEMO_2024] = {HS_FW_NEMO_2024, FIT_DISPATCH_US, FIT_MB_US_MEGATRON, false, true},
    [HS_FW_DEEPSPEED_2022] = {HS_FW_DEEPSPEED_2022, FIT_DISPATCH_US, FIT_MB_US_DEEPSPEED, false, true},
    [HS_FW_FSDP_2023] = {HS_FW_FSDP_2023, FIT_DISPATCH_US, FIT_MB_US_FSDP, false, true},
};

const char *hs_framework_name(hs_framework_id_t id)
{
  return (unsigned)id < HS_FW__COUNT ? hs_framework_presets[id] : "?";
}

hs_status_t hs_framework_preset(const char *name, hs_framework_t *out)
{
  for (int i = 0; name && i < HS_FW__COUNT; i++)
    if (strcmp(name, hs_framework_presets[i]) == 0) {
      *out = presets[i];
      return HS_OK;
    }
  return HS_EINVAL;
}

const char *hs_framework_presets_list(char *buf, size_t n)
{
  return hs_names_join(hs_framework_presets, buf, n);
}

const char *hs_framework_kernels(hs_framework_id_t id)
{
  switch (id) {
  case HS_FW_MEGATRON_LM_2021:
  case HS_FW_DEEPSPEED_2022: /* Megatron-DeepSpeed: Megatron-LM's fused kernels */
    return "megatron-2021";
  case HS_FW_MEGATRON_CORE_2024:
  case HS_FW_MEGATRON_CORE_GRAPHS:
  case HS_FW_NEMO_2024:
    return "megatron-core-2024";
  default:
    return NULL;
  }
}

bool hs_framework_active(const hs_framework_t *fw)
{
  return fw->id != HS_FW_NONE || fw->dispatch_us > 0.0 || fw->microbatch_us > 0.0 ||
         fw->optimizer_passes;
}

bool hs_framework_equal(const hs_framework_t *a, const hs_framework_t *b)
{
  return a->id == b->id && a->dispatch_us == b->dispatch_us &&
         a->microbatch_us == b->microbatch_us && a->cuda_graphs == b->cuda_graphs &&
         a->optimizer_passes == b->optimizer_passes;
}

int32_t hs_host_kernels(const hs_practice_t *pr, const hs_op_t *op, hs_phase_t ph)
{
  const hs_kernels_t *k = &pr->kernels;
  bool fwd = ph == HS_PHASE_FWD;
  switch (op->kind) {
  case HS_OP_NORM:
    return fwd ? (k->fused_norm ? 1 : 3) : 2;
  case HS_OP_GEMM:
    return fwd ? 1 : 2;
  case HS_OP_ATTENTION:
    if (k->attention == HS_ATTENTION_FLASH)
      return fwd ? 1 : 3;
    return fwd ? 5 : 7;
  case HS_OP_ELEMENTWISE:
    return k->fused_act ? 1 : 2;
  case HS_OP_EMBEDDING:
    return fwd ? 5 : 3;
  case HS_OP_LOSS:
    if (k->fused_cross_entropy)
      return 2;
    return fwd ? 8 : 4;
  case HS_OP_MOE_ROUTER:
    return 4;
  case HS_OP_MOE_EXPERT:
    return fwd ? 6 : 8;
  default:
    return 1;
  }
}

void hs_host_begin(hs_host_cursor_t *c, const hs_framework_t *fw)
{
  c->cpu_s = fw->microbatch_us * 1e-6;
  c->gpu_s = 0.0;
  c->layer = INT32_MIN;
}

/* Host issues of op in CUDA-graph mode: one per layer entered, eager
 * outside the layers. */
static int32_t graph_issues(hs_host_cursor_t *c, const hs_practice_t *pr, const hs_op_t *op,
                            hs_phase_t ph)
{
  if (op->layer < 0) {
    c->layer = INT32_MIN;
    return hs_host_kernels(pr, op, ph);
  }
  if (op->layer == c->layer)
    return 0;
  c->layer = op->layer;
  return 1;
}

double hs_host_op_s(hs_host_cursor_t *c, const hs_practice_t *pr, const hs_op_t *op,
                    hs_phase_t ph, double t_gpu_s)
{
  const hs_framework_t *fw = &pr->framework;
  if (!(fw->dispatch_us > 0.0) && !(c->cpu_s > c->gpu_s))
    return t_gpu_s; /* the host is never behind: nothing changes */
  double d = fw->dispatch_us * 1e-6, start = c->gpu_s;
  if (fw->cuda_graphs) {
    /* the graph's kernels follow each other on the GPU once launched */
    int32_t issues = graph_issues(c, pr, op, ph);
    c->cpu_s += issues * d;
    c->gpu_s = fmax(c->gpu_s, c->cpu_s) + t_gpu_s;
    return c->gpu_s - start;
  }
  int32_t k = hs_host_kernels(pr, op, ph);
  if (k < 1)
    k = 1;
  double t = t_gpu_s / k;
  for (int32_t i = 0; i < k; i++) {
    c->cpu_s += d;
    c->gpu_s = fmax(c->gpu_s, c->cpu_s) + t;
  }
  return c->gpu_s - start;
}

void hs_host_collective(hs_host_cursor_t *c, const hs_framework_t *fw)
{
  if (!fw->cuda_graphs)
    c->cpu_s += fw->dispatch_us * 1e-6;
}

double hs_host_op_floor_s(const hs_practice_t *pr, const hs_op_t *op, hs_phase_t ph,
                          double t_gpu_s)
{
  const hs_framework_t *fw = &pr->framework;
  if (!(fw->dispatch_us > 0.0) || fw->cuda_graphs)
    return t_gpu_s;
  return fmax(t_gpu_s, hs_host_kernels(pr, op, ph) * fw->dispatch_us * 1e-6);
}

double hs_host_optimizer_extra_bytes(const hs_framework_t *fw, hs_dtype_t precision)
{
  if (!fw->optimizer_passes)
    return 0.0;
  /* clip_grad_norm: multi_tensor_l2norm reads every fp32 gradient once
   * (Megatron-LM optimizer/clip_grads.py; DeepSpeed and FSDP the same
   * pass); fp16: _amp_foreach_non_finite_check_and_unscale_ reads and
   * writes them (Megatron's MixedPrecisionOptimizer._unscale_main_grads_
   * and_check_for_nan) */
  return 4.0 + (precision == HS_DTYPE_FP16 ? 8.0 : 0.0);
}
