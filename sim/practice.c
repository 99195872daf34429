/*
 * practice.c - training practice carried by a plan: the kernel set (fused
 * attention and the other fusions, named presets per framework era) and
 * Megatron sequence parallelism, as they change each op's FLOPs, memory
 * traffic and saved activations, and the FSDP options (gather dtype,
 * backward prefetch) and the gradient-reduce dtype lowering reads (docs/simulator.md, "Modern training
 * practice"). One entry point for the cost side: hs_practice_op.
 *
 * Invariants: hs_practice_init's default kernel set is current practice,
 * HS_KERNELS_DEFAULT (megatron-core-2024: FlashAttention, fused
 * activation, norm and cross entropy; until 2026-12-02 it was
 * megatron-2021, which modelled 2021 kernels for every config without
 * saying so). Under megatron-2021 and no sequence parallelism every op is
 * the model's own but the loss: the model's loss op counts what a fused
 * cross entropy moves (the logits read once, the gradient written once),
 * and a kernel set without one (megatron-2021, unfused) adds the fp32
 * passes of Megatron-LM's vocab_parallel_cross_entropy (since 2026-11-28;
 * it was costed as fused before). Everything is a pure function of
 * (practice, op, tp), O(1), no allocation.
 */
#include "hs_sim.h"

#include <stdio.h>
#include <string.h>

/* The row log-sum-exp FlashAttention keeps per head and position (fp32). */
#define FLASH_LSE_BYTES 4.0

/* Unfused cross entropy, bytes per logit element beyond the cast:
 * Megatron-LM's vocab_parallel_cross_entropy (megatron/mpu/cross_entropy.py,
 * 2020-2023, called on output.float() unless --fp16-lm-cross-entropy)
 * runs, on the fp32 logits, max (read 4), sub_ (read and write 8), exp
 * (8), sum (4) and div_ (8) forward and mul_ (8) backward; the cast to fp32
 * moves d + 4 forward and its backward 4 + d (none when the logits are
 * fp32 already). PyTorch's F.cross_entropy under autocast (fp32 cast,
 * log_softmax's three passes, nll_loss; backward: zero fill, log_softmax
 * backward, cast back) moves 48 bytes per bf16 element against these 52. */
#define CE_UNFUSED_FWD_BYTES 32.0
#define CE_UNFUSED_BWD_BYTES 8.0

static const char *const attention_names[] = {"unfused", "flash"};

const char *hs_attention_name(hs_attention_t a)
{
  return (unsigned)a < HS_ARRAY_LEN(attention_names) ? attention_names[a] : "?";
}

hs_status_t hs_attention_parse(const char *s, hs_attention_t *out)
{
  for (size_t i = 0; s && i < HS_ARRAY_LEN(attention_names); i++)
    if (strcmp(s, attention_names[i]) == 0) {
      *out = (hs_attention_t)i;
      return HS_OK;
    }
  return HS_EINVAL;
}

typedef struct preset {
  const char *name;
  hs_kernels_t k;
} preset_t;

/* megatron-2021: Megatron-LM as in Narayanan et al. SC'21 and Korthikanti
 * et al. 2022 (fused bias-GELU, Apex fused layer norm, fused scale-mask-
 * softmax but attention scores materialised, fp32 vocab-parallel cross
 * entropy). megatron-core-2024: Megatron-Core with Transformer Engine
 * (FlashAttention, fused bias-SwiGLU/GELU, TE layer norm,
 * cross_entropy_loss_fusion). unfused: every kernel separate (frameworks
 * before these fusions). */
static const preset_t presets[] = {
    {"megatron-2021", {HS_ATTENTION_UNFUSED, true, true, false}},
    {"megatron-core-2024", {HS_ATTENTION_FLASH, true, true, true}},
    {"unfused", {HS_ATTENTION_UNFUSED, false, false, false}},
};

const char *const hs_kernel_presets[] = {"megatron-2021", "megatron-core-2024", "unfused", NULL};

hs_status_t hs_kernels_preset(const char *name, hs_kernels_t *out)
{
  for (size_t i = 0; name && i < HS_ARRAY_LEN(presets); i++)
    if (strcmp(name, presets[i].name) == 0) {
      *out = presets[i].k;
      return HS_OK;
    }
  return HS_EINVAL;
}

const char *hs_names_join(const char *const *names, char *buf, size_t n)
{
  size_t len = 0;
  if (n)
    buf[0] = '\0';
  for (int i = 0; names[i] && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", names[i]);
  return buf;
}

const char *hs_kernel_presets_list(char *buf, size_t n)
{
  return hs_names_join(hs_kernel_presets, buf, n);
}

const char *hs_kernels_preset_name(const hs_kernels_t *k)
{
  for (size_t i = 0; i < HS_ARRAY_LEN(presets); i++) {
    const hs_kernels_t *p = &presets[i].k;
    if (p->attention == k->attention && p->fused_act == k->fused_act &&
        p->fused_norm == k->fused_norm && p->fused_cross_entropy == k->fused_cross_entropy)
      return presets[i].name;
  }
  return NULL;
}

void hs_practice_init(hs_practice_t *p)
{
  memset(p, 0, sizeof *p);
  hs_kernels_preset(HS_KERNELS_DEFAULT, &p->kernels);
  p->dp_overlap = true;
  p->overlap_contention = true;
  p->context_parallel = 1;
  p->expert_parallel = 1;
}

double hs_practice_gather_bytes(const hs_practice_t *p, hs_dtype_t precision)
{
  if (p->fsdp_param_dtype_set)
    return hs_dtype_bytes(p->fsdp_param_dtype);
  return hs_precision_state_bytes(precision).weight;
}

double hs_practice_grad_bytes(const hs_practice_t *p, hs_dtype_t precision)
{
  if (p->grad_reduce_fp32 || p->grad_accum == HS_GRAD_ACCUM_ADD_FP32)
    return 4.0;
  return hs_precision_grad_bytes(precision);
}

const char *hs_grad_reduce_name(bool fp32)
{
  return fp32 ? "fp32" : "default";
}

/* One of two names: *second tells which; anything else is HS_EINVAL. */
static hs_status_t parse_either(const char *s, const char *first, const char *second_name, bool *second)
{
  if (s && (strcmp(s, first) == 0 || strcmp(s, second_name) == 0)) {
    *second = strcmp(s, second_name) == 0;
    return HS_OK;
  }
  return HS_EINVAL;
}

hs_status_t hs_grad_reduce_parse(const char *s, bool *fp32)
{
  return parse_either(s, "default", "fp32", fp32);
}

const char *hs_fsdp_prefetch_name(bool post)
{
  return post ? "post" : "pre";
}

hs_status_t hs_fsdp_prefetch_parse(const char *s, bool *post)
{
  return parse_either(s, "pre", "post", post);
}

bool hs_practice_equal(const hs_practice_t *a, const hs_practice_t *b)
{
  return a->kernels.attention == b->kernels.attention && a->kernels.fused_act == b->kernels.fused_act &&
         a->kernels.fused_norm == b->kernels.fused_norm &&
         a->kernels.fused_cross_entropy == b->kernels.fused_cross_entropy &&
         a->sequence_parallel == b->sequence_parallel && a->zero_stage == b->zero_stage &&
         a->tp_comm_overlap == b->tp_comm_overlap && a->dp_overlap == b->dp_overlap &&
         a->overlap_contention == b->overlap_contention &&
         a->context_parallel == b->context_parallel && a->expert_parallel == b->expert_parallel &&
         a->fsdp_param_dtype_set == b->fsdp_param_dtype_set &&
         (!a->fsdp_param_dtype_set || a->fsdp_param_dtype == b->fsdp_param_dtype) &&
         a->fsdp_backward_post == b->fsdp_backward_post &&
         a->fsdp_shard_grad_op == b->fsdp_shard_grad_op && a->grad_accum == b->grad_accum &&
         a->grad_reduce_fp32 == b->grad_reduce_fp32 &&
         hs_framework_equal(&a->framework, &b->framework);
}

bool hs_practice_is_default(const hs_practice_t *p)
{
  hs_practice_t d;
  hs_practice_init(&d);
  return hs_practice_equal(p, &d);
}

hs_state_bytes_t hs_precision_state_bytes(hs_dtype_t precision)
{
  if (precision == HS_DTYPE_FP32)
    return (hs_state_bytes_t){4.0, 4.0, 8.0};
  return (hs_state_bytes_t){2.0, 2.0, 12.0};
}

double hs_precision_grad_bytes(hs_dtype_t precision)
{
  return hs_precision_state_bytes(precision).grad;
}

void hs_plan_set_practice(hs_plan_t *p, const hs_practice_t *pr)
{
  p->practice = *pr;
  bool any_tp = false;
  for (int32_t i = 0; i < p->n_pipelines && !any_tp; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages && !any_tp; s++)
      for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas && !any_tp; r++)
        any_tp = p->pipelines[i].stages[s].replicas[r].n_devices > 1;
  if (!any_tp) {
    p->practice.sequence_parallel = false;
    p->practice.tp_comm_overlap = false;
  }
}

bool hs_practice_recomputes_selective(const hs_op_t *op)
{
  return op->kind == HS_OP_ATTENTION && op->saved_bytes_selective < op->saved_bytes;
}

/* Ops in Megatron's sequence-parallel region: norms, dropout + residual
 * adds and the embedding's dropout run on s/t of the sequence. */
static bool sp_region(const hs_op_t *op)
{
  return op->kind == HS_OP_NORM || op->kind == HS_OP_EMBEDDING ||
         (op->kind == HS_OP_ELEMENTWISE && op->tp_split == HS_TP_REPLICATE);
}

const hs_op_t *hs_practice_op(const hs_practice_t *pr, const hs_op_t *op, int32_t tp, hs_op_t *tmp)
{
  const hs_kernels_t *k = &pr->kernels;
  bool sp = pr->sequence_parallel && tp > 1;
  bool flash = k->attention == HS_ATTENTION_FLASH && op->kind == HS_OP_ATTENTION;
  bool act = !k->fused_act && op->kind == HS_OP_ELEMENTWISE && op->tp_split != HS_TP_REPLICATE;
  bool norm = !k->fused_norm && op->kind == HS_OP_NORM;
  bool ce = k->fused_cross_entropy && op->kind == HS_OP_LOSS;
  bool ce_unfused = !k->fused_cross_entropy && op->kind == HS_OP_LOSS && op->saved_bytes > 0.0;
  bool sp_op = sp && (sp_region(op) || (op->tp_allreduce_bwd && !op->saved_tp_sharded));
  if (!flash && !act && !norm && !ce && !ce_unfused && !sp_op)
    return op;
  *tmp = *op;
  if (flash) {
    /* FlashAttention (Dao et al.): reads Q, K, V and writes O and the
     * log-sum-exp, no a·s² tensor in memory; backward reads Q, K, V, O, dO
     * and the log-sum-exp, recomputes the scores (one more QK^T: 5 GEMMs
     * against the forward's 2, i.e. 2.5x its FLOPs) and writes dQ, dK, dV.
     * Saved: Q, K, V (the model's selective set) and the log-sum-exp; O is
     * out_proj's saved input already. */
    double qkv = op->saved_bytes_selective;
    double lse = FLASH_LSE_BYTES * op->gemm_batch * op->gemm_m;
    tmp->fwd_mem_bytes = qkv + op->out_bytes + lse;
    tmp->bwd_mem_bytes = 2.0 * (qkv + op->out_bytes) + lse;
    tmp->bwd_flops = 2.5 * op->fwd_flops;
    tmp->saved_bytes = qkv + lse;
    tmp->saved_bytes_selective = qkv + lse;
  }
  if (act || norm) {
    /* a separate bias add (GELU), SiLU and multiply (SwiGLU) or statistics
     * pass (norm): one more read and write of the tensor */
    tmp->fwd_mem_bytes *= 2.0;
    tmp->bwd_mem_bytes *= 2.0;
  }
  if (ce || ce_unfused) {
    double elems = op->saved_bytes / 4.0; /* the model keeps an fp32 softmax */
    double d = elems > 0 && op->fwd_mem_bytes > op->out_bytes
                   ? (op->fwd_mem_bytes - op->out_bytes) / elems : 2.0;
    if (ce) {
      /* fused cross entropy: logits read once, gradient written in place,
       * nothing kept at fp32 */
      tmp->saved_bytes = elems * d;
      tmp->saved_bytes_selective = elems * d;
      tmp->bwd_mem_bytes = elems * d;
    } else {
      /* unfused: the fp32 passes above (the softmax kept in fp32, as the
       * model has it) */
      double cast = d < 4.0 ? d + 4.0 : 0.0;
      tmp->fwd_mem_bytes = elems * (CE_UNFUSED_FWD_BYTES + cast) + op->out_bytes;
      tmp->bwd_mem_bytes = elems * (CE_UNFUSED_BWD_BYTES + cast);
    }
  }
  if (sp_op) {
    /* Korthikanti et al. 2022: the sequence-parallel region runs on s/t
     * and keeps s/t of its activations; the column-parallel GEMMs keep
     * their sharded input (all-gathered again in backward) */
    double t = (double)tp;
    tmp->saved_bytes /= t;
    tmp->saved_bytes_selective /= t;
    if (sp_region(op) && op->tp_split == HS_TP_REPLICATE) {
      tmp->fwd_flops /= t;
      tmp->bwd_flops /= t;
      tmp->fwd_mem_bytes /= t;
      tmp->bwd_mem_bytes /= t;
    }
  }
  return tmp;
}
