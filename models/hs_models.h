/*
 * hs_models.h - the DNN description: an ordered sequence of ops with FLOP,
 * byte and parameter accounting, a transformer generator, loaders (hetsim
 * model JSON, HuggingFace config.json) and the shipped catalog.
 *
 * Representation. A model is a flat array of ops in execution order; a
 * pipeline may cut between any two ops. All per-op quantities are *per
 * sample* (one sequence of seq_len tokens) and for the whole op (no tensor
 * parallelism): the simulator scales by microbatch size and divides by the TP
 * degree according to `tp_split`. FLOPs count a multiply-add as 2.
 *
 * FLOP conventions (docs/models.md): backward = 2 x forward for GEMMs and
 * attention; forward+backward of a GPT model therefore equals
 * 72·B·s·l·h²·(1 + s/(6h)) + 6·B·s·h·V. Megatron's 96·B·s·l·h²·(1 + s/(6h) +
 * V/(16lh)) additionally counts one recomputed forward of every layer (full
 * recomputation); hs_model_flops() reports both.
 *
 * Activations follow Korthikanti et al. ("Reducing Activation Recomputation
 * in Large Transformer Models"): 34·s·h + 5·a·s² bytes per layer per sample
 * at 2-byte activations (1-byte dropout masks). Conventions, file formats and
 * limits: docs/models.md.
 */
#ifndef HS_MODELS_H
#define HS_MODELS_H

#include "hs_common.h"

/* hs_dtype_t lives in hs_common.h: clusters need it too. */

#define HS_OP_KIND_LIST(X)                                                      \
  X(EMBEDDING, "embedding")   /* token (+position) lookup: memory-bound */     \
  X(NORM, "norm")             /* LayerNorm / RMSNorm: memory-bound */          \
  X(GEMM, "gemm")             /* dense matmul with weights */                  \
  X(ATTENTION, "attention")   /* QK^T, softmax, dropout, AV: batched GEMMs */  \
  X(ELEMENTWISE, "elementwise") /* activation, dropout, residual add */        \
  X(LOSS, "loss")             /* softmax cross-entropy */                      \
  X(MOE_ROUTER, "moe_router") /* gate GEMM + top-k */                          \
  X(MOE_EXPERT, "moe_expert") /* expert FFN GEMMs (top-k tokens) */

typedef enum {
#define HS__OPK_ENUM(name, str) HS_OP_##name,
  HS_OP_KIND_LIST(HS__OPK_ENUM)
#undef HS__OPK_ENUM
  HS_OP__COUNT
} hs_op_kind_t;

const char *hs_op_kind_name(hs_op_kind_t k);
hs_status_t hs_op_kind_parse(const char *s, hs_op_kind_t *out);

/* How Megatron-style tensor parallelism splits an op across a TP group. */
typedef enum {
  HS_TP_REPLICATE, /* every TP rank does the whole op (norms, dropout outside TP regions) */
  HS_TP_COLUMN,    /* weight split by output columns (qkv, fc1): input grad all-reduced in bwd */
  HS_TP_ROW,       /* weight split by input rows (out proj, fc2): output all-reduced in fwd */
  HS_TP_HEADS,     /* attention heads split (attention core) */
  HS_TP_VOCAB,     /* vocabulary-parallel embedding / logits / loss */
  HS_TP_EXPERT     /* experts split across ranks (expert parallelism) */
} hs_tp_split_t;

/* "replicate", "column", "row", "heads", "vocab", "expert" (names used by the
 * explicit-op model JSON). Which collectives an op needs is given by
 * tp_allreduce_fwd/bwd, not by tp_split: the activation between fc1 and fc2
 * is HS_TP_COLUMN (it works on the column-sharded tensor) without any flag. */
const char *hs_tp_split_name(hs_tp_split_t t);
hs_status_t hs_tp_split_parse(const char *s, hs_tp_split_t *out);

/* Dimensions an SPMD planner (HAP) may shard; bit mask. */
enum {
  HS_SHARD_BATCH = 1u << 0,   /* sample dimension: data parallel */
  HS_SHARD_OUT = 1u << 1,     /* GEMM N (output features / columns) */
  HS_SHARD_IN = 1u << 2,      /* GEMM K (input features / rows): partial sums */
  HS_SHARD_HEADS = 1u << 3,   /* attention heads */
  HS_SHARD_EXPERTS = 1u << 4, /* MoE experts */
  HS_SHARD_VOCAB = 1u << 5    /* vocabulary */
};
/* Bit names in order: "batch", "out", "in", "heads", "experts", "vocab". */
#define HS_SHARD__COUNT 6
const char *hs_shard_name(unsigned bit_index);

#define HS_OP_NAME_MAX 48

typedef struct hs_op {
  char name[HS_OP_NAME_MAX]; /* "layers.3.mlp.fc1" */
  hs_op_kind_t kind;
  int32_t layer;             /* transformer block index, -1 before/after the blocks */
  /* Compute, per sample. */
  double fwd_flops;
  double bwd_flops;
  double fwd_mem_bytes;      /* bytes read + written by the forward kernel(s) */
  double bwd_mem_bytes;
  /* Weights. */
  double params;             /* parameter count (tied weights counted once) */
  /* Activations, per sample, bytes at the model's dtype. */
  double out_bytes;          /* output tensor: what crosses a pipeline cut after this op */
  double saved_bytes;        /* kept for backward without recomputation */
  double saved_bytes_selective; /* kept with selective recomputation (Korthikanti et al.) */
  bool saved_tp_sharded;     /* saved activations are divided by the TP degree */
  /* GEMM shape for one sample: an (m x k) by (k x n) product, `gemm_batch`
   * times (attention: batch = heads, two products QK^T and AV counted in
   * flops). Zero when not a GEMM. */
  double gemm_m, gemm_n, gemm_k;
  int32_t gemm_batch;
  /* Parallelism. */
  hs_tp_split_t tp_split;
  bool tp_allreduce_fwd;     /* output all-reduced over TP in forward (row-parallel) */
  bool tp_allreduce_bwd;     /* input gradient all-reduced over TP in backward (column-parallel) */
  uint32_t shardable;        /* HS_SHARD_* mask */
  /* MoE expert ops: experts and tokens routed per token (all-to-all before
   * and after, out_bytes*topk each way). 0 otherwise. */
  int32_t experts;
  int32_t topk;
  /* Weights shared with op `tied_op` (the LM head's view of the word
   * embedding), counted once, at tied_op, in `params`. A stage that holds
   * this op without tied_op keeps its own copy (weights, gradients and
   * optimizer state, as Megatron-LM does) and all-reduces the copy's
   * gradient with a holder of tied_op after backward. 0 / unused when not
   * tied. */
  double tied_params;
  int32_t tied_op;
} hs_op_t;

typedef enum { HS_ARCH_DECODER, HS_ARCH_ENCODER } hs_arch_t;
/* HS_ACT_RELU2: squared ReLU, relu(x)^2 (Primer, So et al. 2021; Nemotron-4). */
typedef enum { HS_ACT_GELU, HS_ACT_SWIGLU, HS_ACT_RELU, HS_ACT_RELU2 } hs_act_t;
typedef enum { HS_NORM_LAYERNORM, HS_NORM_RMSNORM } hs_norm_t;

/* Names used in model files: "decoder"/"encoder", "gelu"/"swiglu"/"relu"/"relu2",
 * "layernorm"/"rmsnorm". Parsers return HS_EINVAL for unknown strings. */
const char *hs_arch_name(hs_arch_t a);
const char *hs_act_name(hs_act_t a);
const char *hs_norm_name(hs_norm_t n);
hs_status_t hs_arch_parse(const char *s, hs_arch_t *out);
hs_status_t hs_act_parse(const char *s, hs_act_t *out);
hs_status_t hs_norm_parse(const char *s, hs_norm_t *out);

/* Limits on generator sizes and op lists: larger values are refused with
 * HS_ELIMIT naming the field, so that no product overflows and no allocation
 * is absurd. All accounting is in double. */
#define HS_MODEL_MAX_LAYERS 100000
#define HS_MODEL_MAX_HIDDEN 1000000
#define HS_MODEL_MAX_HEADS 100000
#define HS_MODEL_MAX_HEAD_DIM 100000
#define HS_MODEL_MAX_FFN 10000000
#define HS_MODEL_MAX_VOCAB 100000000
#define HS_MODEL_MAX_SEQ_LEN 10000000
#define HS_MODEL_MAX_POSITIONS 100000000
#define HS_MODEL_MAX_TYPE_VOCAB 1000000
#define HS_MODEL_MAX_EXPERTS 4096
#define HS_MODEL_MAX_OPS 1000000

/* Parameters of the transformer generator. hs_transformer_cfg_init() fills
 * GPT-2-small-like defaults; override what you need. */
typedef struct hs_transformer_cfg {
  char name[64];
  hs_arch_t arch;
  int64_t layers;
  int64_t hidden;
  int64_t heads;
  int64_t kv_heads;        /* = heads unless grouped-query attention */
  int64_t ffn;             /* intermediate size */
  int64_t vocab;
  int64_t seq_len;         /* training sequence length */
  int64_t max_positions;   /* learned position embeddings; 0 = rotary (no params) */
  int64_t type_vocab;      /* BERT token types; 0 = none */
  int64_t experts;         /* 0 or 1 = dense */
  int64_t topk;
  hs_act_t act;
  hs_norm_t norm;
  bool bias;               /* linear layers have biases */
  bool tied_embeddings;    /* LM head shares the token embedding */
  bool lm_head;            /* decoder LM head / BERT MLM head present */
  bool pooler;             /* BERT pooler */
  hs_dtype_t dtype;
  /* Added after the first version of this header. */
  int64_t head_dim;        /* per-head size; 0 = hidden / heads (Mistral-Nemo, Qwen3 set it) */
  bool qkv_bias;           /* q/k/v projections have biases even when `bias` is false (Qwen2) */
  bool no_dropout;         /* trained without dropout (Llama, MPT): no masks saved or written,
                              no attention-dropout pass; false (the zero value) = dropout */
} hs_transformer_cfg_t;

void hs_transformer_cfg_init(hs_transformer_cfg_t *cfg);

typedef struct hs_model {
  char name[64];
  hs_transformer_cfg_t cfg; /* the generator parameters (zeroed for explicit op lists) */
  bool from_generator;
  hs_dtype_t dtype;
  int64_t seq_len;
  hs_op_t *ops;             /* owned; hs_model_destroy frees */
  size_t n_ops;
  char source[256];         /* where the description comes from ("" when unknown) */
} hs_model_t;

/* Zeroes *m. hs_model_destroy frees what a loader allocated; accepts NULL and
 * a zeroed model. */
void hs_model_init(hs_model_t *m);
void hs_model_destroy(hs_model_t *m);
/* Deep copy into *dst (initialised here; the caller destroys it). O(n_ops). */
hs_status_t hs_model_copy(const hs_model_t *src, hs_model_t *dst, hs_error_t *err);

/* Builds the op sequence of a transformer into *out (which it initialises;
 * the caller destroys it, also on failure). Validates cfg (positive sizes,
 * heads divide hidden, kv_heads divide heads, topk <= experts, the
 * HS_MODEL_MAX_* limits) with messages naming the field. O(layers). */
hs_status_t hs_model_from_transformer(const hs_transformer_cfg_t *cfg, hs_model_t *out,
                                      hs_error_t *err);

/* Loads `spec`: a catalog name ("llama2-7b"), a hetsim model JSON, or a
 * HuggingFace config.json (recognised by "architectures"/"model_type").
 * `seq_len_override` > 0 replaces the sequence length. */
hs_status_t hs_model_load(const char *spec, int64_t seq_len_override, hs_model_t *out,
                          hs_error_t *err);
/* The two file formats, from parsed text (file = name for messages). */
hs_status_t hs_model_parse_json(const char *text, const char *file, int64_t seq_len_override,
                                hs_model_t *out, hs_error_t *err);
hs_status_t hs_model_parse_hf_config(const char *text, const char *file, int64_t seq_len_override,
                                     hs_model_t *out, hs_error_t *err);
/* Either format from text, recognised as hs_model_load does (a HuggingFace
 * config by "architectures"/"model_type"). O(text + layers). */
hs_status_t hs_model_parse(const char *text, const char *file, int64_t seq_len_override,
                           hs_model_t *out, hs_error_t *err);

/* Catalog: models/catalog/<name>.json under hs_data_dir(). Fills names
 * (sorted by strcmp; caller frees each and the array with
 * hs_model_catalog_free, which accepts NULL). O(n log n) in the entries. */
hs_status_t hs_model_catalog_list(char ***names, size_t *n, hs_error_t *err);
void hs_model_catalog_free(char **names, size_t n);

/* Totals over ops [first, last) (per sample; `last` is clamped to n_ops; a
 * NULL or empty model gives zeros). O(last - first). */
typedef struct hs_model_totals {
  double params;
  double fwd_flops;
  double bwd_flops;
  double saved_bytes;
  double saved_bytes_selective;
} hs_model_totals_t;
void hs_model_totals(const hs_model_t *m, size_t first, size_t last, hs_model_totals_t *out);
/* Totals over the ops of transformer block `layer` (op.layer == layer); all
 * zero when no op has that index. O(n_ops). */
void hs_model_layer_totals(const hs_model_t *m, int32_t layer, hs_model_totals_t *out);
/* Number of transformer blocks: cfg.layers for generated models, else
 * 1 + the largest op.layer (0 when no op belongs to a block). O(n_ops). */
int64_t hs_model_layers(const hs_model_t *m);
/* Bytes of K and V of one sample held by one of `tp` TP ranks, as ring
 * attention (context parallelism) exchanges them: 2 x seq_len x the rank's
 * KV heads x head_dim elements, the KV heads split over the TP group (one
 * each when there are fewer than ranks). Explicit op lists: two thirds of
 * the attention op's saved Q, K, V, divided by tp. O(1). */
double hs_model_kv_sample_bytes(const hs_model_t *m, const hs_op_t *op, int32_t tp);

/* FLOPs of one training iteration of `batch` samples: forward+backward, and
 * with one extra forward of every transformer block (ops with layer >= 0:
 * full recomputation, the count Megatron's 96Bslh² formula uses). O(n_ops). */
typedef struct hs_model_flops {
  double fwd_bwd;
  double fwd_bwd_recompute;
} hs_model_flops_t;
void hs_model_flops(const hs_model_t *m, double batch, hs_model_flops_t *out);

/* Bytes of training state per parameter for mixed-precision Adam: 2 (weights)
 * + 2 (grads) + 12 (fp32 master, m, v) = 16 (Korthikanti/ZeRO accounting). */
#define HS_ADAM_STATE_BYTES_PER_PARAM 16.0

/* Writes a human-readable summary (name, layers/hidden/heads, params, FLOPs
 * per token fwd+bwd, training state at 16 B/param, activation bytes per
 * sample per layer) to `out`. O(n_ops). */
void hs_model_print(const hs_model_t *m, FILE *out);
/* Returns a cJSON object with the summary keys of docs/models.md (name,
 * params, layers, hidden, heads, kv_heads, ffn, vocab, seq_len, dtype,
 * flops_per_token_fwd_bwd, flops_per_token_fwd_bwd_recompute,
 * train_state_bytes, activation_bytes_per_sample, n_ops, ...); caller frees
 * with hs_json_free. NULL when out of memory. O(n_ops). */
struct cJSON *hs_model_to_json(const hs_model_t *m);
/* The model in hetsim's explicit-op JSON form ({"name", "dtype", "seq_len",
 * "ops": [...]}) that hs_model_parse_json reads back to the same ops. Caller
 * frees with hs_json_free; NULL when out of memory. O(n_ops). */
struct cJSON *hs_model_to_ops_json(const hs_model_t *m);

#endif /* HS_MODELS_H */
