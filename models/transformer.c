/*
 * transformer.c - the transformer generator: turns a hs_transformer_cfg_t
 * into the flat op sequence with FLOP, byte, parameter and activation
 * accounting (conventions in docs/models.md).
 *
 * Op sequence (s = seq_len, h = hidden, a = heads, f = ffn; per sample):
 *   embedding [embedding.norm (encoders)]
 *   per block, pre-norm decoder:  ln1 qkv attn out_proj resid1 ln2 fc1 act fc2 resid2
 *   per block, post-norm encoder: qkv attn out_proj resid1 ln1 fc1 act fc2 resid2 ln2
 *   (MoE blocks replace fc1 act fc2 by router experts)
 *   decoder: final_norm [lm_head] loss
 *   encoder: [mlm.transform mlm.act mlm.norm lm_head] [pooler] loss
 *
 * Invariants:
 * - FLOPs: a GEMM's forward is 2·m·n·k (bias adds not counted), backward is
 *   twice the forward; attention forward is 4·s²·(a·head_dim); memory-bound
 *   ops count a few FLOPs per element and their bytes in fwd_mem_bytes.
 * - Activations (Korthikanti et al.): tensors at the model's dtype, dropout
 *   masks at 1 byte; with 2-byte dtypes and f = 4h a block saves exactly
 *   34·s·h + 5·a·s² bytes, 34·s·h with selective recomputation.
 * - All arithmetic is in double on values checked against HS_MODEL_MAX_*,
 *   so nothing overflows; the op array is allocated once.
 */
#include "models_internal.h"

#include <stdlib.h>
#include <string.h>

const hs__cfg_fields_t hs__cfg_fields_plain = {
    .layers = "layers",
    .hidden = "hidden",
    .heads = "heads",
    .kv_heads = "kv_heads",
    .head_dim = "head_dim",
    .ffn = "ffn",
    .vocab = "vocab",
    .seq_len = "seq_len",
    .max_positions = "max_positions",
    .type_vocab = "type_vocab",
    .experts = "experts",
    .topk = "topk",
};

/* FLOPs per element of the memory-bound ops (forward). Small next to the
 * GEMMs (about 1/h of them); they exist so that the ops are not free. */
#define LAYERNORM_FLOPS_PER_ELEM 5.0
#define RMSNORM_FLOPS_PER_ELEM 4.0
#define DROPOUT_ADD_FLOPS_PER_ELEM 2.0
#define GELU_FLOPS_PER_ELEM 8.0
#define SWIGLU_FLOPS_PER_ELEM 5.0
#define RELU_FLOPS_PER_ELEM 1.0
#define RELU2_FLOPS_PER_ELEM 2.0 /* max(x, 0), then its square */
#define SOFTMAX_CE_FLOPS_PER_ELEM 5.0
/* Dropout masks are bytes whatever the dtype; the cross-entropy keeps its
 * softmax in fp32 (Korthikanti et al. count 4·s·b·v/t for it). */
#define MASK_BYTES 1.0
#define LOSS_BYTES 4.0

/* ---- checks ------------------------------------------------------------ */

static hs_status_t check_range(hs_error_t *err, const char *file, const char *field, int64_t v,
                               int64_t lo, int64_t hi)
{
  if (v < lo) {
    const char *what = lo == 1 ? "a positive integer" : "a non-negative integer";
    return hs_error_set(err, HS_EINVAL, "%s: %s: must be %s, got %lld", file, field, what,
                        (long long)v);
  }
  if (v > hi)
    return hs_error_set(err, HS_ELIMIT, "%s: %s: must be at most %lld, got %lld", file, field,
                        (long long)hi, (long long)v);
  return HS_OK;
}

static hs_status_t check_cfg(const hs_transformer_cfg_t *c, const char *file,
                             const hs__cfg_fields_t *f, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  HS_CHECK(check_range(err, file, f->layers, c->layers, 1, HS_MODEL_MAX_LAYERS));
  HS_CHECK(check_range(err, file, f->hidden, c->hidden, 1, HS_MODEL_MAX_HIDDEN));
  HS_CHECK(check_range(err, file, f->heads, c->heads, 1, HS_MODEL_MAX_HEADS));
  HS_CHECK(check_range(err, file, f->kv_heads, c->kv_heads, 1, HS_MODEL_MAX_HEADS));
  HS_CHECK(check_range(err, file, f->head_dim, c->head_dim, 0, HS_MODEL_MAX_HEAD_DIM));
  HS_CHECK(check_range(err, file, f->ffn, c->ffn, 1, HS_MODEL_MAX_FFN));
  HS_CHECK(check_range(err, file, f->vocab, c->vocab, 1, HS_MODEL_MAX_VOCAB));
  HS_CHECK(check_range(err, file, f->seq_len, c->seq_len, 1, HS_MODEL_MAX_SEQ_LEN));
  HS_CHECK(check_range(err, file, f->max_positions, c->max_positions, 0, HS_MODEL_MAX_POSITIONS));
  HS_CHECK(check_range(err, file, f->type_vocab, c->type_vocab, 0, HS_MODEL_MAX_TYPE_VOCAB));
  HS_CHECK(check_range(err, file, f->experts, c->experts, 0, HS_MODEL_MAX_EXPERTS));
  if (c->head_dim == 0 && c->hidden % c->heads != 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: must divide %s (%lld), got %lld", file,
                         f->heads, f->hidden, (long long)c->hidden, (long long)c->heads));
  if (c->kv_heads > c->heads || c->heads % c->kv_heads != 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: must divide %s (%lld), got %lld", file,
                         f->kv_heads, f->heads, (long long)c->heads, (long long)c->kv_heads));
  if (c->experts > 1 && (c->topk < 1 || c->topk > c->experts))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: must be between 1 and %s (%lld), got %lld",
                         file, f->topk, f->experts, (long long)c->experts, (long long)c->topk));
  if (c->experts <= 1 && c->topk < 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: must be a non-negative integer, got %lld", file,
                         f->topk, (long long)c->topk));
  if (c->max_positions > 0 && c->seq_len > c->max_positions)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: %s: must be at most %s (%lld) with learned positions, got %lld",
                         file, f->seq_len, f->max_positions, (long long)c->max_positions,
                         (long long)c->seq_len));
  if ((unsigned)c->arch > HS_ARCH_ENCODER)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: arch: unknown value %d", file, (int)c->arch));
  if ((unsigned)c->act > HS_ACT_RELU2)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: act: unknown value %d", file, (int)c->act));
  if ((unsigned)c->norm > HS_NORM_RMSNORM)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: norm: unknown value %d", file, (int)c->norm));
  if ((unsigned)c->dtype >= HS_DTYPE__COUNT)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: dtype: unknown value %d", file, (int)c->dtype));
cleanup:
  return st;
}

/* ---- op builders ---------------------------------------------------------- */

/* Sizes as doubles, fixed for one model. */
typedef struct dims {
  double s, h, a, kv, hd, qd, kvd, f, fn, v, e, k, d;
  const hs_transformer_cfg_t *c;
} dims_t;

typedef struct builder {
  hs_model_t *m;
  size_t cap;
} builder_t;

static hs_op_t *push(builder_t *b, hs_op_kind_t kind, int64_t layer, const char *suffix)
{
  /* cap was computed from the configuration; running past it is a bug. */
  if (b->m->n_ops >= b->cap)
    return NULL;
  hs_op_t *op = &b->m->ops[b->m->n_ops++];
  memset(op, 0, sizeof(*op));
  op->kind = kind;
  op->layer = (int32_t)layer;
  if (layer >= 0)
    snprintf(op->name, sizeof(op->name), "layers.%lld.%s", (long long)layer, suffix);
  else
    snprintf(op->name, sizeof(op->name), "%s", suffix);
  op->tp_split = HS_TP_REPLICATE;
  op->shardable = HS_SHARD_BATCH;
  return op;
}

/* A weight GEMM (m x k) by (k x n), one sample. */
static void set_gemm(hs_op_t *op, const dims_t *g, double m, double n, double k, bool bias)
{
  op->gemm_m = m;
  op->gemm_n = n;
  op->gemm_k = k;
  op->gemm_batch = 1;
  op->fwd_flops = 2.0 * m * n * k;
  op->bwd_flops = 2.0 * op->fwd_flops;
  op->params = k * n + (bias ? n : 0.0);
  op->fwd_mem_bytes = (m * k + k * n + m * n) * g->d;
  op->bwd_mem_bytes = 2.0 * op->fwd_mem_bytes;
  op->out_bytes = m * n * g->d;
  op->shardable = HS_SHARD_BATCH | HS_SHARD_OUT | HS_SHARD_IN;
}

/* Saved for backward, identical with selective recomputation. */
static void set_saved(hs_op_t *op, double bytes, bool tp_sharded)
{
  op->saved_bytes = bytes;
  op->saved_bytes_selective = bytes;
  op->saved_tp_sharded = tp_sharded;
}

/* A memory-bound op over `elems` output elements reading `in_elems`. */
static void set_membound(hs_op_t *op, const dims_t *g, double elems, double in_elems,
                         double flops_per_elem)
{
  op->fwd_flops = flops_per_elem * elems;
  op->bwd_flops = 2.0 * op->fwd_flops;
  op->fwd_mem_bytes = (in_elems + elems) * g->d;
  op->bwd_mem_bytes = 2.0 * op->fwd_mem_bytes;
  op->out_bytes = elems * g->d;
}

static hs_status_t add_norm(builder_t *b, const dims_t *g, int64_t layer, const char *name)
{
  hs_op_t *op = push(b, HS_OP_NORM, layer, name);
  if (!op)
    return HS_EINTERNAL;
  bool ln = g->c->norm == HS_NORM_LAYERNORM;
  double sh = g->s * g->h;
  set_membound(op, g, sh, sh, ln ? LAYERNORM_FLOPS_PER_ELEM : RMSNORM_FLOPS_PER_ELEM);
  op->params = (ln ? 2.0 : 1.0) * g->h;
  set_saved(op, sh * g->d, false); /* its input: the "2sh" of a layer norm */
  return HS_OK;
}

/* Dropout + residual add after a row-parallel GEMM (a plain residual add,
 * with no mask written or saved, for models trained without dropout). */
static hs_status_t add_resid(builder_t *b, const dims_t *g, int64_t layer, const char *name)
{
  hs_op_t *op = push(b, HS_OP_ELEMENTWISE, layer, name);
  if (!op)
    return HS_EINTERNAL;
  double sh = g->s * g->h;
  double mask = g->c->no_dropout ? 0.0 : sh * MASK_BYTES;
  set_membound(op, g, sh, 2.0 * sh, DROPOUT_ADD_FLOPS_PER_ELEM);
  op->fwd_mem_bytes += mask;
  set_saved(op, mask, false);
  op->shardable = HS_SHARD_BATCH | HS_SHARD_OUT;
  return HS_OK;
}

static double act_flops_per_elem(hs_act_t act)
{
  switch (act) {
  case HS_ACT_SWIGLU: return SWIGLU_FLOPS_PER_ELEM;
  case HS_ACT_RELU: return RELU_FLOPS_PER_ELEM;
  case HS_ACT_RELU2: return RELU2_FLOPS_PER_ELEM;
  default: return GELU_FLOPS_PER_ELEM;
  }
}

static hs_status_t add_attention_block(builder_t *b, const dims_t *g, int64_t l)
{
  const hs_transformer_cfg_t *c = g->c;
  double s = g->s, h = g->h;
  hs_op_t *op = NULL;

  if (!(op = push(b, HS_OP_GEMM, l, "qkv")))
    return HS_EINTERNAL;
  set_gemm(op, g, s, g->qd + 2.0 * g->kvd, h, c->bias || c->qkv_bias);
  set_saved(op, s * h * g->d, false);
  op->tp_split = HS_TP_COLUMN;
  op->tp_allreduce_bwd = true;

  if (!(op = push(b, HS_OP_ATTENTION, l, "attn")))
    return HS_EINTERNAL;
  double qkv_bytes = s * (g->qd + 2.0 * g->kvd) * g->d;
  double probs = g->a * s * s; /* elements of one score matrix over all heads */
  op->gemm_m = s;
  op->gemm_n = s;
  op->gemm_k = g->hd;
  op->gemm_batch = (int32_t)c->heads;
  op->fwd_flops = 4.0 * s * s * g->qd; /* QK^T and AV, no causal discount */
  op->bwd_flops = 2.0 * op->fwd_flops;
  /* read Q,K,V; scores, softmax and dropout each written and read; write
   * context. Without dropout the dropout pass (its read, write and mask) goes. */
  double drop_passes = c->no_dropout ? 0.0 : 2.0;
  double drop_mask = c->no_dropout ? 0.0 : probs * MASK_BYTES;
  op->fwd_mem_bytes = qkv_bytes + (3.0 + drop_passes) * probs * g->d + drop_mask + s * g->qd * g->d;
  op->bwd_mem_bytes = 2.0 * op->fwd_mem_bytes;
  op->out_bytes = s * g->qd * g->d;
  /* Q, K, V (6sh without GQA) + softmax output, dropout mask, dropout output
   * (2as² + as² + 2as² at 2 bytes; without dropout the softmax output alone,
   * 2as²); selective recomputation drops the as² part. */
  op->saved_bytes = qkv_bytes + (c->no_dropout ? 1.0 : 2.0) * probs * g->d + drop_mask;
  op->saved_bytes_selective = qkv_bytes;
  op->saved_tp_sharded = true;
  op->tp_split = HS_TP_HEADS;
  op->shardable = HS_SHARD_BATCH | HS_SHARD_HEADS;

  if (!(op = push(b, HS_OP_GEMM, l, "out_proj")))
    return HS_EINTERNAL;
  set_gemm(op, g, s, h, g->qd, c->bias);
  set_saved(op, s * g->qd * g->d, true);
  op->tp_split = HS_TP_ROW;
  op->tp_allreduce_fwd = true;

  return add_resid(b, g, l, "resid1");
}

static hs_status_t add_dense_ffn(builder_t *b, const dims_t *g, int64_t l)
{
  const hs_transformer_cfg_t *c = g->c;
  double s = g->s, h = g->h;
  hs_op_t *op = NULL;

  if (!(op = push(b, HS_OP_GEMM, l, "fc1")))
    return HS_EINTERNAL;
  set_gemm(op, g, s, g->fn, h, c->bias); /* SwiGLU: gate and up fused, N = 2f */
  set_saved(op, s * h * g->d, false);
  op->tp_split = HS_TP_COLUMN;
  op->tp_allreduce_bwd = true;

  if (!(op = push(b, HS_OP_ELEMENTWISE, l, "act")))
    return HS_EINTERNAL;
  set_membound(op, g, s * g->f, s * g->fn, act_flops_per_elem(c->act));
  if (c->act == HS_ACT_RELU2) {
    /* two kernels, as every framework of the kernel presets runs it:
     * Megatron-Core's squared_relu is torch.pow(F.relu(x), 2) (no fused
     * bias-activation for it), so the tensor is read and written twice */
    op->fwd_mem_bytes *= 2.0;
    op->bwd_mem_bytes *= 2.0;
  }
  /* GELU 2·s·f, SwiGLU 4·s·f at 2 bytes; squared ReLU keeps its input too
   * (pow's backward reads relu's output, relu's backward the same tensor) */
  set_saved(op, s * g->fn * g->d, true);
  op->tp_split = HS_TP_COLUMN;
  op->shardable = HS_SHARD_BATCH | HS_SHARD_OUT;

  if (!(op = push(b, HS_OP_GEMM, l, "fc2")))
    return HS_EINTERNAL;
  set_gemm(op, g, s, h, g->f, c->bias);
  set_saved(op, s * g->f * g->d, true);
  op->tp_split = HS_TP_ROW;
  op->tp_allreduce_fwd = true;
  return HS_OK;
}

/* Mixtral-style MoE FFN: a router GEMM + top-k, then the experts as one op
 * (all-to-all dispatch before it and combine after it are the simulator's). */
static hs_status_t add_moe_ffn(builder_t *b, const dims_t *g, int64_t l)
{
  const hs_transformer_cfg_t *c = g->c;
  double s = g->s, h = g->h, e = g->e, k = g->k;
  hs_op_t *op = NULL;

  if (!(op = push(b, HS_OP_MOE_ROUTER, l, "router")))
    return HS_EINTERNAL;
  set_gemm(op, g, s, e, h, false);
  op->kind = HS_OP_MOE_ROUTER;
  op->fwd_flops += SOFTMAX_CE_FLOPS_PER_ELEM * s * e; /* softmax + top-k over E */
  op->bwd_flops = 2.0 * op->fwd_flops;
  op->out_bytes = s * h * g->d + s * e * g->d; /* hidden states pass through, plus gates */
  set_saved(op, s * h * g->d, false);
  op->shardable = HS_SHARD_BATCH;
  op->experts = (int32_t)c->experts;
  op->topk = (int32_t)c->topk;

  if (!(op = push(b, HS_OP_MOE_EXPERT, l, "experts")))
    return HS_EINTERNAL;
  double tokens = k * s; /* token-expert pairs per sample */
  double per_token = 2.0 * h * g->fn + 2.0 * g->f * h;
  op->gemm_m = tokens / e; /* fc1 shape of one expert at perfect balance */
  op->gemm_n = g->fn;
  op->gemm_k = h;
  op->gemm_batch = (int32_t)c->experts;
  op->fwd_flops = tokens * (per_token + act_flops_per_elem(c->act) * g->f);
  op->bwd_flops = tokens * 2.0 * per_token + tokens * 2.0 * act_flops_per_elem(c->act) * g->f;
  op->params = e * (h * g->fn + g->f * h + (c->bias ? g->fn + h : 0.0));
  op->fwd_mem_bytes = e * (h * g->fn + g->f * h) * g->d +
                      tokens * (2.0 * h + 2.0 * g->fn + g->f) * g->d;
  if (c->act == HS_ACT_RELU2)
    op->fwd_mem_bytes += tokens * 2.0 * g->f * g->d; /* pow's pass after relu's */
  op->bwd_mem_bytes = 2.0 * op->fwd_mem_bytes;
  op->out_bytes = s * h * g->d;
  /* per routed copy: dispatched input, activation input, fc2 input */
  set_saved(op, tokens * (h + g->fn + g->f) * g->d, true);
  op->tp_split = HS_TP_EXPERT;
  op->shardable = HS_SHARD_BATCH | HS_SHARD_EXPERTS;
  op->experts = (int32_t)c->experts;
  op->topk = (int32_t)c->topk;
  return HS_OK;
}

static hs_status_t add_ffn(builder_t *b, const dims_t *g, int64_t l)
{
  return g->c->experts > 1 ? add_moe_ffn(b, g, l) : add_dense_ffn(b, g, l);
}

static hs_status_t add_embedding(builder_t *b, const dims_t *g)
{
  const hs_transformer_cfg_t *c = g->c;
  hs_op_t *op = push(b, HS_OP_EMBEDDING, -1, "embedding");
  if (!op)
    return HS_EINTERNAL;
  double sh = g->s * g->h;
  double adds = (c->max_positions > 0 ? 1.0 : 0.0) + (c->type_vocab > 0 ? 1.0 : 0.0);
  op->params = ((double)c->vocab + (double)c->max_positions + (double)c->type_vocab) * g->h;
  op->fwd_flops = adds * sh;
  op->bwd_flops = (1.0 + adds) * sh; /* scatter-add of the gradient rows */
  op->fwd_mem_bytes = (1.0 + adds) * sh * g->d + sh * g->d;
  op->bwd_mem_bytes = 2.0 * op->fwd_mem_bytes;
  op->out_bytes = sh * g->d;
  set_saved(op, c->no_dropout ? 0.0 : sh * MASK_BYTES, false); /* embedding dropout mask */
  op->tp_split = HS_TP_VOCAB;
  op->tp_allreduce_fwd = true; /* vocab-parallel lookup sums partial rows */
  op->shardable = HS_SHARD_BATCH | HS_SHARD_VOCAB;
  return HS_OK;
}

/* Logits GEMM over the vocabulary; weights tied to the embedding count 0. */
static hs_status_t add_lm_head(builder_t *b, const dims_t *g, bool bias)
{
  const hs_transformer_cfg_t *c = g->c;
  hs_op_t *op = push(b, HS_OP_GEMM, -1, "lm_head");
  if (!op)
    return HS_EINTERNAL;
  set_gemm(op, g, g->s, g->v, g->h, bias);
  op->params = (c->tied_embeddings ? 0.0 : g->v * g->h) + (bias ? g->v : 0.0);
  if (c->tied_embeddings) {
    /* the word embedding (vocab rows of the embedding op, pushed first) */
    for (size_t i = 0; i < b->m->n_ops; i++)
      if (b->m->ops[i].kind == HS_OP_EMBEDDING) {
        op->tied_op = (int32_t)i;
        op->tied_params = g->v * g->h;
        break;
      }
  }
  set_saved(op, g->s * g->h * g->d, false);
  op->tp_split = HS_TP_VOCAB;
  op->tp_allreduce_bwd = true;
  op->shardable = HS_SHARD_BATCH | HS_SHARD_OUT | HS_SHARD_IN | HS_SHARD_VOCAB;
  return HS_OK;
}

/* Softmax cross-entropy over `width` classes for `tokens` positions. */
static hs_status_t add_loss(builder_t *b, const dims_t *g, double tokens, double width,
                            bool vocab_split)
{
  hs_op_t *op = push(b, HS_OP_LOSS, -1, "loss");
  if (!op)
    return HS_EINTERNAL;
  double elems = tokens * width;
  op->fwd_flops = SOFTMAX_CE_FLOPS_PER_ELEM * elems;
  op->bwd_flops = 2.0 * op->fwd_flops;
  op->fwd_mem_bytes = elems * g->d + tokens * LOSS_BYTES;
  op->bwd_mem_bytes = 2.0 * elems * g->d;
  op->out_bytes = tokens * LOSS_BYTES;
  set_saved(op, elems * LOSS_BYTES, vocab_split);
  op->tp_split = vocab_split ? HS_TP_VOCAB : HS_TP_REPLICATE;
  op->shardable = HS_SHARD_BATCH | (vocab_split ? HS_SHARD_VOCAB : 0u);
  return HS_OK;
}

static hs_status_t build_decoder(builder_t *b, const dims_t *g)
{
  hs_status_t st = HS_OK;
  HS_CHECK(add_embedding(b, g));
  for (int64_t l = 0; l < g->c->layers; l++) {
    HS_CHECK(add_norm(b, g, l, "ln1"));
    HS_CHECK(add_attention_block(b, g, l));
    HS_CHECK(add_norm(b, g, l, "ln2"));
    HS_CHECK(add_ffn(b, g, l));
    HS_CHECK(add_resid(b, g, l, "resid2"));
  }
  HS_CHECK(add_norm(b, g, -1, "final_norm"));
  if (g->c->lm_head) {
    HS_CHECK(add_lm_head(b, g, false));
    HS_CHECK(add_loss(b, g, g->s, g->v, true));
  } else {
    HS_CHECK(add_loss(b, g, g->s, g->h, false));
  }
cleanup:
  return st;
}

/* BERT: post-norm blocks, optional MLM head (dense + act + norm + tied
 * decoder with a vocabulary bias) and pooler (dense on the first token). */
static hs_status_t build_encoder(builder_t *b, const dims_t *g)
{
  hs_status_t st = HS_OK;
  const hs_transformer_cfg_t *c = g->c;
  hs_op_t *op = NULL;
  HS_CHECK(add_embedding(b, g));
  HS_CHECK(add_norm(b, g, -1, "embedding.norm"));
  for (int64_t l = 0; l < c->layers; l++) {
    HS_CHECK(add_attention_block(b, g, l));
    HS_CHECK(add_norm(b, g, l, "ln1"));
    HS_CHECK(add_ffn(b, g, l));
    HS_CHECK(add_resid(b, g, l, "resid2"));
    HS_CHECK(add_norm(b, g, l, "ln2"));
  }
  if (c->lm_head) {
    if (!(op = push(b, HS_OP_GEMM, -1, "mlm.transform")))
      HS_FAIL(HS_EINTERNAL);
    set_gemm(op, g, g->s, g->h, g->h, c->bias);
    set_saved(op, g->s * g->h * g->d, false);
    if (!(op = push(b, HS_OP_ELEMENTWISE, -1, "mlm.act")))
      HS_FAIL(HS_EINTERNAL);
    set_membound(op, g, g->s * g->h, g->s * g->h, GELU_FLOPS_PER_ELEM);
    set_saved(op, g->s * g->h * g->d, false);
    HS_CHECK(add_norm(b, g, -1, "mlm.norm"));
    HS_CHECK(add_lm_head(b, g, c->bias));
  }
  if (c->pooler) {
    if (!(op = push(b, HS_OP_GEMM, -1, "pooler")))
      HS_FAIL(HS_EINTERNAL);
    set_gemm(op, g, 1.0, g->h, g->h, c->bias);
    op->fwd_flops += GELU_FLOPS_PER_ELEM * g->h; /* tanh */
    op->bwd_flops = 2.0 * op->fwd_flops;
    set_saved(op, 2.0 * g->h * g->d, false); /* first-token input and tanh output */
  }
  if (c->lm_head)
    HS_CHECK(add_loss(b, g, g->s, g->v, true));
  else
    HS_CHECK(add_loss(b, g, c->pooler ? 1.0 : g->s, g->h, false));
cleanup:
  return st;
}

hs_status_t hs__transformer_build(const hs_transformer_cfg_t *cfg, const char *file,
                                  const hs__cfg_fields_t *fields, hs_model_t *out,
                                  hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_model_init(out);
  if (!cfg)
    return hs_error_set(err, HS_EINVAL, "%s: transformer configuration is NULL", file);
  HS_CHECK(check_cfg(cfg, file, fields, err));

  dims_t g = {0};
  g.c = cfg;
  g.s = (double)cfg->seq_len;
  g.h = (double)cfg->hidden;
  g.a = (double)cfg->heads;
  g.kv = (double)cfg->kv_heads;
  g.hd = cfg->head_dim > 0 ? (double)cfg->head_dim : g.h / g.a;
  g.qd = g.a * g.hd;
  g.kvd = g.kv * g.hd;
  g.f = (double)cfg->ffn;
  g.fn = cfg->act == HS_ACT_SWIGLU ? 2.0 * g.f : g.f;
  g.v = (double)cfg->vocab;
  g.e = (double)cfg->experts;
  g.k = (double)cfg->topk;
  g.d = hs_dtype_bytes(cfg->dtype);

  /* At most 10 ops per block plus 8 around them (checked by push). */
  size_t cap = (size_t)cfg->layers * 10u + 8u;
  out->ops = hs_calloc(cap, sizeof(hs_op_t));
  if (!out->ops)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory for %zu ops", file, cap));
  builder_t b = {.m = out, .cap = cap};
  hs_strlcpy(out->name, cfg->name[0] ? cfg->name : "transformer", sizeof(out->name));
  out->cfg = *cfg;
  out->from_generator = true;
  out->dtype = cfg->dtype;
  out->seq_len = cfg->seq_len;
  st = cfg->arch == HS_ARCH_ENCODER ? build_encoder(&b, &g) : build_decoder(&b, &g);
  if (st != HS_OK)
    HS_FAIL(hs_error_set(err, st, "%s: internal error: op count exceeds %zu", file, cap));
cleanup:
  if (st != HS_OK)
    hs_model_destroy(out);
  return st;
}

hs_status_t hs_model_from_transformer(const hs_transformer_cfg_t *cfg, hs_model_t *out,
                                      hs_error_t *err)
{
  const char *file = cfg && cfg->name[0] ? cfg->name : "transformer";
  return hs__transformer_build(cfg, file, &hs__cfg_fields_plain, out, err);
}
