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

/* Dimensions an SPMD planner (HAP) may shard; bit mask. */
enum {
  HS_SHARD_BATCH = 1u << 0,   /* sample dimension: data parallel */
  HS_SHARD_OUT = 1u << 1,     /* GEMM N (output features / columns) */
  HS_SHARD_IN = 1u << 2,      /* GEMM K (input features / rows): partial sums */
  HS_SHARD_HEADS = 1u << 3,   /* attention heads */
  HS_SHARD_EXPERTS = 1u << 4, /* MoE experts */
  HS_SHARD_VOCAB = 1u << 5    /* vocabulary */
};

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
} hs_op_t;

typedef enum { HS_ARCH_DECODER, HS_ARCH_ENCODER } hs_arch_t;
typedef enum { HS_ACT_GELU, HS_ACT_SWIGLU, HS_ACT_RELU } hs_act_t;
typedef enum { HS_NORM_LAYERNORM, HS_NORM_RMSNORM } hs_norm_t;

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
} hs_model_t;

/* Zeroes *m. hs_model_destroy frees what a loader allocated; accepts NULL and
 * a zeroed model. */
void hs_model_init(hs_model_t *m);
void hs_model_destroy(hs_model_t *m);
/* Deep copy. */
hs_status_t hs_model_copy(const hs_model_t *src, hs_model_t *dst, hs_error_t *err);

/* Builds the op sequence of a transformer. Validates cfg (positive sizes,
 * heads divide hidden, kv_heads divide heads, topk <= experts, limits in
 * docs/limits.md) with messages naming the field. O(layers). */
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

/* Catalog: models/catalog/<name>.json under hs_data_dir(). Fills names
 * (sorted, caller frees each and the array with hs_model_catalog_free). */
hs_status_t hs_model_catalog_list(char ***names, size_t *n, hs_error_t *err);
void hs_model_catalog_free(char **names, size_t n);

/* Totals over ops [first, last) (per sample). */
typedef struct hs_model_totals {
  double params;
  double fwd_flops;
  double bwd_flops;
  double saved_bytes;
  double saved_bytes_selective;
} hs_model_totals_t;
void hs_model_totals(const hs_model_t *m, size_t first, size_t last, hs_model_totals_t *out);

/* FLOPs of one training iteration of `batch` samples: forward+backward, and
 * with one extra forward of every transformer block (full recomputation, the
 * count Megatron's 96Bslh² formula uses). */
typedef struct hs_model_flops {
  double fwd_bwd;
  double fwd_bwd_recompute;
} hs_model_flops_t;
void hs_model_flops(const hs_model_t *m, double batch, hs_model_flops_t *out);

/* Bytes of training state per parameter for mixed-precision Adam: 2 (weights)
 * + 2 (grads) + 12 (fp32 master, m, v) = 16 (Korthikanti/ZeRO accounting). */
#define HS_ADAM_STATE_BYTES_PER_PARAM 16.0

/* Writes a human-readable summary (params, FLOPs/token, memory per replica)
 * or its JSON form. */
void hs_model_print(const hs_model_t *m, FILE *out);
/* Returns a cJSON object (caller frees with hs_json_free). */
struct cJSON *hs_model_to_json(const hs_model_t *m);

#endif /* HS_MODELS_H */
