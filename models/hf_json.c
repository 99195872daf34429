/*
 * hf_json.c - HuggingFace config.json files: maps the published fields of
 * each supported architecture onto the transformer generator.
 *
 * Supported (by "architectures"[0], else "model_type"): LlamaForCausalLM,
 * MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel,
 * GPTNeoXForCausalLM, OPTForCausalLM, BertModel, BertForMaskedLM,
 * BertForPreTraining. Approximations are listed in docs/models.md (GPT-NeoX
 * parallel residual, Qwen2 sliding window, BERT NSP head, ...).
 *
 * Invariants: messages name the HF field as written in the file
 * ("config.json: num_attention_heads: must divide hidden_size (4096), got
 * 30"); a null value counts as absent (HF writes "n_inner": null); unknown
 * fields are not warned about, since every config carries dozens the
 * generator has no use for; the training sequence length defaults to
 * min(max_position_embeddings, HF_DEFAULT_SEQ_MAX).
 *
 * Each family is data: a table of the fields it reads (HF key, generator
 * field, required or default, range), walked in order by read_fields, plus
 * its activation field, norm and position scheme. Table order is read order,
 * and so decides which of several bad fields a message names.
 */
#include "hs_json.h"
#include "json_common.h"
#include "models_internal.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Longest default training sequence taken from max_position_embeddings:
 * Mistral and Qwen2 publish 32k/128k context windows they were not
 * pretrained at; --seq-len overrides. */
#define HF_DEFAULT_SEQ_MAX 8192
/* max_position_embeddings when a rotary config omits it (HF's own default
 * for Llama is 2048). */
#define HF_DEFAULT_POSITIONS 2048

typedef enum {
  HF_LLAMA, /* Llama, Mistral, Mixtral, Qwen2: RMSNorm, SwiGLU, rotary */
  HF_GPT2,
  HF_NEOX,
  HF_OPT,
  HF_BERT
} hf_family_t;

typedef struct hf_arch {
  const char *arch;       /* architectures[0] */
  const char *model_type; /* model_type that implies it (NULL: never inferred) */
  hf_family_t family;
  bool moe;
  bool qkv_bias;          /* Qwen2: q/k/v projections always have biases */
  bool lm_head;
  bool pooler;
} hf_arch_t;

static const hf_arch_t hf_archs[] = {
    {"LlamaForCausalLM", "llama", HF_LLAMA, false, false, true, false},
    {"MistralForCausalLM", "mistral", HF_LLAMA, false, false, true, false},
    {"MixtralForCausalLM", "mixtral", HF_LLAMA, true, false, true, false},
    {"Qwen2ForCausalLM", "qwen2", HF_LLAMA, false, true, true, false},
    {"GPT2LMHeadModel", "gpt2", HF_GPT2, false, false, true, false},
    {"GPTNeoXForCausalLM", "gpt_neox", HF_NEOX, false, false, true, false},
    {"OPTForCausalLM", "opt", HF_OPT, false, false, true, false},
    {"BertModel", "bert", HF_BERT, false, false, false, true},
    {"BertForMaskedLM", NULL, HF_BERT, false, false, true, false},
    {"BertForPreTraining", NULL, HF_BERT, false, false, true, true},
};

#define SUPPORTED_ARCHS                                                                   \
  "LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, "         \
  "GPT2LMHeadModel, GPTNeoXForCausalLM, OPTForCausalLM, BertModel, BertForMaskedLM, "    \
  "BertForPreTraining"
#define SUPPORTED_TYPES "llama, mistral, mixtral, qwen2, gpt2, gpt_neox, opt, bert"

bool hs__hf_is_config(const cJSON *root)
{
  return cJSON_IsObject(root) && (cJSON_GetObjectItemCaseSensitive(root, "architectures") ||
                                  cJSON_GetObjectItemCaseSensitive(root, "model_type"));
}

/* Member `key` unless absent or null. */
static const cJSON *present(const cJSON *root, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* The name a field goes by in this file: `key`, or `alias` when only the
 * alias is present (NULL: no alias). */
static const char *pick_key(const cJSON *root, const char *key, const char *alias)
{
  return !present(root, key) && alias && present(root, alias) ? alias : key;
}

static hs_status_t opt_int(const hs_jreader_t *r, const cJSON *root, const char *key, int64_t def,
                           int64_t lo, int64_t hi, int64_t *out)
{
  if (!present(root, key)) {
    *out = def;
    return HS_OK;
  }
  return hs_json_int(r, root, "", key, true, def, lo, hi, out);
}

static hs_status_t opt_bool(const hs_jreader_t *r, const cJSON *root, const char *key, bool def,
                            bool *out)
{
  if (!present(root, key)) {
    *out = def;
    return HS_OK;
  }
  return hs_json_bool(r, root, "", key, true, def, out);
}

/* Finds the architecture: architectures[0] when supported, else model_type
 * (with a warning when architectures[0] named something else). */
static hs_status_t detect(const hs_jreader_t *r, const cJSON *root, const hf_arch_t **out)
{
  hs_status_t st = HS_OK;
  const cJSON *archs = NULL;
  int n = 0;
  char arch0[128] = "", mtype[64] = "";
  *out = NULL;
  HS_CHECK(hs_json_array(r, root, "", "architectures", false, &archs, &n));
  if (archs && n > 0) {
    const cJSON *a0 = cJSON_GetArrayItem(archs, 0);
    if (!cJSON_IsString(a0)) {
      if (cJSON_IsNumber(a0))
        return hs_error_set(r->err, HS_EINVAL, "%s: architectures[0]: must be a string, got %g",
                            r->file, a0->valuedouble);
      return hs_error_set(r->err, HS_EINVAL, "%s: architectures[0]: must be a string", r->file);
    }
    if (!hs_strlcpy(arch0, a0->valuestring, sizeof arch0))
      return hs_error_set(r->err, HS_EINVAL,
                          "%s: architectures[0]: unsupported architecture \"%.60s...\" "
                          "(supported: " SUPPORTED_ARCHS ")",
                          r->file, a0->valuestring);
    for (size_t i = 0; i < HS_ARRAY_LEN(hf_archs); i++)
      if (strcmp(arch0, hf_archs[i].arch) == 0) {
        *out = &hf_archs[i];
        return HS_OK;
      }
  }
  if (present(root, "model_type"))
    HS_CHECK(hs_json_string(r, root, "", "model_type", false, "", mtype, sizeof mtype));
  for (size_t i = 0; mtype[0] && i < HS_ARRAY_LEN(hf_archs); i++)
    if (hf_archs[i].model_type && strcmp(mtype, hf_archs[i].model_type) == 0) {
      *out = &hf_archs[i];
      if (arch0[0])
        hs_error_warn(r->err,
                      "%s: architectures[0]: \"%s\" is not supported; modelling it as %s "
                      "(model_type \"%s\")",
                      r->file, arch0, hf_archs[i].arch, mtype);
      return HS_OK;
    }
  if (arch0[0])
    return hs_error_set(r->err, HS_EUNSUPPORTED,
                        "%s: architectures[0]: unsupported architecture \"%s\" "
                        "(supported: " SUPPORTED_ARCHS ")",
                        r->file, arch0);
  return hs_error_set(r->err, HS_EUNSUPPORTED,
                      "%s: model_type: unsupported model type \"%s\" (supported: " SUPPORTED_TYPES
                      "; or architectures[0] one of " SUPPORTED_ARCHS ")",
                      r->file, mtype);
cleanup:
  return st;
}

/* Maps an HF activation name for a non-gated MLP. */
static hs_status_t read_act(const hs_jreader_t *r, const cJSON *root, const char *key,
                            const char *def, hs_act_t *out)
{
  static const struct {
    const char *name;
    hs_act_t act;
  } acts[] = {
      {"gelu", HS_ACT_GELU},      {"gelu_new", HS_ACT_GELU},  {"gelu_fast", HS_ACT_GELU},
      {"gelu_pytorch_tanh", HS_ACT_GELU}, {"quick_gelu", HS_ACT_GELU}, {"silu", HS_ACT_GELU},
      {"swish", HS_ACT_GELU},     {"relu", HS_ACT_RELU},      {"relu2", HS_ACT_RELU2},
  };
  char buf[64];
  hs_status_t st = present(root, key) ? hs_json_string(r, root, "", key, false, def, buf, sizeof buf)
                                      : (hs_strlcpy(buf, def, sizeof buf), HS_OK);
  if (st != HS_OK)
    return st;
  for (size_t i = 0; i < HS_ARRAY_LEN(acts); i++)
    if (strcmp(buf, acts[i].name) == 0) {
      *out = acts[i].act;
      return HS_OK;
    }
  return hs_error_set(r->err, HS_EUNSUPPORTED,
                      "%s: %s: unsupported activation \"%s\" (supported: gelu, gelu_new, gelu_fast, "
                      "gelu_pytorch_tanh, quick_gelu, silu, swish, relu, relu2)",
                      r->file, key, buf);
}

static hs_status_t read_hf_dtype(const hs_jreader_t *r, const cJSON *root, hs_dtype_t *out)
{
  /* transformers >= 4.56 writes "dtype", older versions "torch_dtype". */
  const char *key = pick_key(root, "torch_dtype", "dtype");
  char buf[32];
  *out = HS_DTYPE_BF16;
  if (!present(root, key))
    return HS_OK;
  hs_status_t st = hs_json_string(r, root, "", key, false, "bfloat16", buf, sizeof buf);
  if (st != HS_OK)
    return st;
  if (hs_dtype_parse(buf, out) != HS_OK)
    return hs_error_set(r->err, HS_EINVAL,
                        "%s: %s: unknown dtype \"%s\" (expected float32, float16 or bfloat16)",
                        r->file, key, buf);
  return HS_OK;
}

/* ---- field tables ----------------------------------------------------------- */

/* Everything one config.json sets: the generator configuration, the name each
 * of its fields goes by in the file, and the values that only shape it. */
typedef struct hf_doc {
  const hf_arch_t *arch;
  hs_transformer_cfg_t cfg;
  hs__cfg_fields_t f; /* f.kv_heads NULL until a row reads a KV head count */
  int64_t positions;  /* max_position_embeddings (GPT-2: n_positions) */
  int64_t proj;       /* OPT: word_embed_proj_dim */
  bool attn_bias, mlp_bias, pre_norm;
} hf_doc_t;

typedef enum {
  HF_REQUIRED, /* integer, 1..hi; absent or null is an error */
  HF_OPTIONAL, /* integer, lo..hi; absent or null gives the default */
  HF_FLAG      /* boolean; absent or null gives the default */
} hf_kind_t;

#define HF_NONE SIZE_MAX

/* One field of a family's table. Values are reached by offsetof into
 * hf_doc_t so that one walker serves every family. */
typedef struct hf_field {
  const char *key;   /* as config.json writes it */
  const char *alias; /* read instead when only it is present (NULL: none) */
  hf_kind_t kind;
  size_t at;         /* the int64_t (bool for HF_FLAG) the value goes to */
  size_t name_at;    /* the hs__cfg_fields_t member that records the key, or HF_NONE */
  int64_t def;       /* default; a factor of the int64_t at def_of unless that is HF_NONE */
  size_t def_of;
  int64_t lo, hi;
  bool moe_only;     /* read only for mixture-of-experts architectures */
  /* Check or warning right after the read, before the next field is read. */
  hs_status_t (*then)(const hs_jreader_t *r, hf_doc_t *d);
} hf_field_t;

/* Where a row's value goes: a generator field (recording the key as its
 * name), the position count (named as max_positions), or a value with no
 * field name. */
#define CFG(m) .at = offsetof(hf_doc_t, cfg.m), .name_at = offsetof(hf_doc_t, f.m)
#define POS .at = offsetof(hf_doc_t, positions), .name_at = offsetof(hf_doc_t, f.max_positions)
#define AT(m) .at = offsetof(hf_doc_t, m), .name_at = HF_NONE

/* Row bodies: a required count; an optional count whose default is a
 * constant or `k` times an earlier generator field; a flag. */
#define REQ(k, slot, max) .key = k, .kind = HF_REQUIRED, slot, .def_of = HF_NONE, .lo = 1, .hi = max
#define OPT(k, slot, d, min, max)                                                          \
  .key = k, .kind = HF_OPTIONAL, slot, .def = d, .def_of = HF_NONE, .lo = min, .hi = max
#define OPT_TIMES(k, slot, d, of, min, max)                                                \
  .key = k, .kind = HF_OPTIONAL, slot, .def = d, .def_of = offsetof(hf_doc_t, cfg.of),    \
  .lo = min, .hi = max
#define FLAG(k, slot, d) .key = k, .kind = HF_FLAG, slot, .def = d, .def_of = HF_NONE

static hs_status_t opt_check_proj(const hs_jreader_t *r, hf_doc_t *d)
{
  if (d->proj == d->cfg.hidden)
    return HS_OK;
  return hs_error_set(r->err, HS_EUNSUPPORTED,
                      "%s: word_embed_proj_dim: projected embeddings are not supported (must "
                      "equal hidden_size %lld), got %lld",
                      r->file, (long long)d->cfg.hidden, (long long)d->proj);
}

static hs_status_t opt_warn_post_norm(const hs_jreader_t *r, hf_doc_t *d)
{
  if (!d->pre_norm)
    hs_error_warn(r->err,
                  "%s: do_layer_norm_before: false (post-norm OPT) is modelled as pre-norm with a "
                  "final layer norm (%lld parameters too many)",
                  r->file, (long long)(2 * d->cfg.hidden));
  return HS_OK;
}

static const hf_field_t llama_fields[] = {
    {REQ("num_hidden_layers", CFG(layers), HS_MODEL_MAX_LAYERS)},
    {REQ("hidden_size", CFG(hidden), HS_MODEL_MAX_HIDDEN)},
    {REQ("num_attention_heads", CFG(heads), HS_MODEL_MAX_HEADS)},
    {OPT_TIMES("num_key_value_heads", CFG(kv_heads), 1, heads, 1, HS_MODEL_MAX_HEADS)},
    {OPT("head_dim", CFG(head_dim), 0, 1, HS_MODEL_MAX_HEAD_DIM)},
    {REQ("intermediate_size", CFG(ffn), HS_MODEL_MAX_FFN)},
    {REQ("vocab_size", CFG(vocab), HS_MODEL_MAX_VOCAB)},
    {OPT("max_position_embeddings", POS, HF_DEFAULT_POSITIONS, 1, HS_MODEL_MAX_POSITIONS)},
    {FLAG("tie_word_embeddings", AT(cfg.tied_embeddings), false)},
    {FLAG("attention_bias", AT(attn_bias), false)},
    {FLAG("mlp_bias", AT(mlp_bias), false)},
    {REQ("num_local_experts", CFG(experts), HS_MODEL_MAX_EXPERTS), .moe_only = true},
    {REQ("num_experts_per_tok", CFG(topk), HS_MODEL_MAX_EXPERTS), .moe_only = true},
};

static const hf_field_t gpt2_fields[] = {
    {REQ("n_layer", CFG(layers), HS_MODEL_MAX_LAYERS)},
    {REQ("n_embd", CFG(hidden), HS_MODEL_MAX_HIDDEN)},
    {REQ("n_head", CFG(heads), HS_MODEL_MAX_HEADS)},
    {OPT_TIMES("n_inner", CFG(ffn), 4, hidden, 1, HS_MODEL_MAX_FFN)},
    {REQ("vocab_size", CFG(vocab), HS_MODEL_MAX_VOCAB)},
    {REQ("n_positions", POS, HS_MODEL_MAX_POSITIONS), .alias = "n_ctx"},
    {FLAG("tie_word_embeddings", AT(cfg.tied_embeddings), true)},
};

/* GPT-NeoX / Pythia: rotary on a fraction of each head (no parameters),
 * untied head, parallel residual (same ops and counts, different order). */
static const hf_field_t neox_fields[] = {
    {REQ("num_hidden_layers", CFG(layers), HS_MODEL_MAX_LAYERS)},
    {REQ("hidden_size", CFG(hidden), HS_MODEL_MAX_HIDDEN)},
    {REQ("num_attention_heads", CFG(heads), HS_MODEL_MAX_HEADS)},
    {OPT_TIMES("intermediate_size", CFG(ffn), 4, hidden, 1, HS_MODEL_MAX_FFN)},
    {REQ("vocab_size", CFG(vocab), HS_MODEL_MAX_VOCAB)},
    {OPT("max_position_embeddings", POS, HF_DEFAULT_POSITIONS, 1, HS_MODEL_MAX_POSITIONS)},
    {FLAG("tie_word_embeddings", AT(cfg.tied_embeddings), false)},
    {FLAG("attention_bias", AT(cfg.bias), true)},
};

/* OPT: learned positions with an offset of 2 (max_position_embeddings + 2
 * rows), ReLU, tied head. */
static const hf_field_t opt_fields[] = {
    {REQ("num_hidden_layers", CFG(layers), HS_MODEL_MAX_LAYERS)},
    {REQ("hidden_size", CFG(hidden), HS_MODEL_MAX_HIDDEN)},
    {REQ("num_attention_heads", CFG(heads), HS_MODEL_MAX_HEADS)},
    {REQ("ffn_dim", CFG(ffn), HS_MODEL_MAX_FFN)},
    {REQ("vocab_size", CFG(vocab), HS_MODEL_MAX_VOCAB)},
    {OPT("max_position_embeddings", POS, HF_DEFAULT_POSITIONS, 1, HS_MODEL_MAX_POSITIONS - 2)},
    {OPT_TIMES("word_embed_proj_dim", AT(proj), 1, hidden, 1, HS_MODEL_MAX_HIDDEN),
     .then = opt_check_proj},
    {FLAG("do_layer_norm_before", AT(pre_norm), true), .then = opt_warn_post_norm},
    {FLAG("tie_word_embeddings", AT(cfg.tied_embeddings), true)},
    {FLAG("enable_bias", AT(cfg.bias), true)},
};

static const hf_field_t bert_fields[] = {
    {REQ("num_hidden_layers", CFG(layers), HS_MODEL_MAX_LAYERS)},
    {REQ("hidden_size", CFG(hidden), HS_MODEL_MAX_HIDDEN)},
    {REQ("num_attention_heads", CFG(heads), HS_MODEL_MAX_HEADS)},
    {OPT_TIMES("intermediate_size", CFG(ffn), 4, hidden, 1, HS_MODEL_MAX_FFN)},
    {REQ("vocab_size", CFG(vocab), HS_MODEL_MAX_VOCAB)},
    {OPT("max_position_embeddings", POS, 512, 1, HS_MODEL_MAX_POSITIONS)},
    {OPT("type_vocab_size", CFG(type_vocab), 2, 0, HS_MODEL_MAX_TYPE_VOCAB)},
    {FLAG("tie_word_embeddings", AT(cfg.tied_embeddings), true)},
};

/* Llama's attention_bias also puts a bias on o_proj (hidden values per layer)
 * that the generator does not model separately. */
static hs_status_t llama_finish(const hs_jreader_t *r, const cJSON *root, hf_doc_t *d)
{
  hs_transformer_cfg_t *c = &d->cfg;
  if (c->head_dim > 0 && c->head_dim * c->heads == c->hidden)
    c->head_dim = 0; /* the default; keeps the divisibility check meaningful */
  c->qkv_bias = d->arch->qkv_bias || d->attn_bias;
  c->bias = d->mlp_bias && d->attn_bias;
  return HS_OK;
}

static hs_status_t bert_finish(const hs_jreader_t *r, const cJSON *root, hf_doc_t *d)
{
  char pos_type[32] = "absolute";
  if (present(root, "position_embedding_type")) {
    hs_status_t st = hs_json_string(r, root, "", "position_embedding_type", false, "absolute",
                                    pos_type, sizeof pos_type);
    if (st != HS_OK)
      return st;
  }
  if (strcmp(pos_type, "absolute") != 0)
    return hs_error_set(r->err, HS_EUNSUPPORTED,
                        "%s: position_embedding_type: only \"absolute\" is supported, got \"%s\"",
                        r->file, pos_type);
  return HS_OK;
}

typedef struct hf_family_spec {
  const hf_field_t *fields; /* read in this order */
  size_t n_fields;
  const char *act_key, *act_def; /* activation field and HF's default; NULL: SwiGLU */
  hs_arch_t arch;
  hs_norm_t norm;
  bool rotary;        /* no learned positions */
  int64_t pos_offset; /* learned position rows beyond max_position_embeddings */
  /* Checks and derived values after the fields and the activation; NULL: none. */
  hs_status_t (*finish)(const hs_jreader_t *r, const cJSON *root, hf_doc_t *d);
} hf_family_spec_t;

#define FIELDS(t) .fields = t, .n_fields = HS_ARRAY_LEN(t)
static const hf_family_spec_t hf_families[] = {
    [HF_LLAMA] = {FIELDS(llama_fields), .arch = HS_ARCH_DECODER, .norm = HS_NORM_RMSNORM,
                  .rotary = true, .finish = llama_finish},
    [HF_GPT2] = {FIELDS(gpt2_fields), .act_key = "activation_function", .act_def = "gelu_new",
                 .arch = HS_ARCH_DECODER, .norm = HS_NORM_LAYERNORM},
    [HF_NEOX] = {FIELDS(neox_fields), .act_key = "hidden_act", .act_def = "gelu",
                 .arch = HS_ARCH_DECODER, .norm = HS_NORM_LAYERNORM, .rotary = true},
    [HF_OPT] = {FIELDS(opt_fields), .act_key = "activation_function", .act_def = "relu",
                .arch = HS_ARCH_DECODER, .norm = HS_NORM_LAYERNORM, .pos_offset = 2},
    [HF_BERT] = {FIELDS(bert_fields), .act_key = "hidden_act", .act_def = "gelu",
                 .arch = HS_ARCH_ENCODER, .norm = HS_NORM_LAYERNORM, .finish = bert_finish},
};

/* Dropout probabilities each family's HF config carries, with HF's defaults
 * (transformers' *Config classes). The Llama family's models (Llama,
 * Mistral, Mixtral, Qwen2) have no residual or embedding dropout at all,
 * only attention_dropout. A model whose every probability is 0 trains
 * without dropout (cfg.no_dropout: no masks saved or written); any nonzero
 * one keeps the full dropout accounting (an attention-only dropout is
 * counted as full dropout). */
typedef struct hf_dropout_key {
  const char *key;
  double def;
} hf_dropout_key_t;

#define HF_DROPOUT_KEYS_MAX 3
static const hf_dropout_key_t hf_dropout_keys[][HF_DROPOUT_KEYS_MAX] = {
    [HF_LLAMA] = {{"attention_dropout", 0.0}},
    [HF_GPT2] = {{"resid_pdrop", 0.1}, {"embd_pdrop", 0.1}, {"attn_pdrop", 0.1}},
    [HF_NEOX] = {{"hidden_dropout", 0.0}, {"attention_dropout", 0.0}},
    [HF_OPT] = {{"dropout", 0.1}, {"attention_dropout", 0.0}},
    [HF_BERT] = {{"hidden_dropout_prob", 0.1}, {"attention_probs_dropout_prob", 0.1}},
};

static hs_status_t read_dropout(const hs_jreader_t *r, const cJSON *root, hf_family_t fam,
                                bool *no_dropout)
{
  hs_status_t st = HS_OK;
  bool any = false;
  for (size_t i = 0; i < HF_DROPOUT_KEYS_MAX && hf_dropout_keys[fam][i].key; i++) {
    const hf_dropout_key_t *k = &hf_dropout_keys[fam][i];
    double p = k->def;
    if (present(root, k->key))
      HS_CHECK(hs_json_number_in(r, root, "", k->key, false, k->def, 0.0, 1.0, &p));
    any = any || p > 0.0;
  }
  *no_dropout = !any;
cleanup:
  return st;
}

/* Reads rows[0..n) in order into *d, recording each generator field's key as
 * its name. A null value counts as absent. O(n). */
static hs_status_t read_fields(const hs_jreader_t *r, const cJSON *root, const hf_field_t *rows,
                               size_t n, hf_doc_t *d)
{
  hs_status_t st = HS_OK;
  char *base = (char *)d;
  for (size_t i = 0; i < n; i++) {
    const hf_field_t *row = &rows[i];
    if (row->moe_only && !d->arch->moe)
      continue;
    const char *key = pick_key(root, row->key, row->alias);
    if (row->kind == HF_FLAG) {
      HS_CHECK(opt_bool(r, root, key, row->def != 0, (bool *)(base + row->at)));
    } else {
      int64_t *out = (int64_t *)(base + row->at);
      if (row->kind == HF_REQUIRED)
        HS_CHECK(hs_json_int(r, root, "", key, true, 0, row->lo, row->hi, out));
      else if (row->def_of == HF_NONE)
        HS_CHECK(opt_int(r, root, key, row->def, row->lo, row->hi, out));
      else
        HS_CHECK(opt_int(r, root, key, row->def * *(const int64_t *)(base + row->def_of), row->lo,
                         row->hi, out));
    }
    if (row->name_at != HF_NONE)
      *(const char **)(base + row->name_at) = key;
    if (row->then)
      HS_CHECK(row->then(r, d));
  }
cleanup:
  return st;
}

/* Fills d->cfg from the fields of d->arch's family. */
static hs_status_t read_family(const hs_jreader_t *r, const cJSON *root, hf_doc_t *d)
{
  hs_status_t st = HS_OK;
  const hf_family_spec_t *fam = &hf_families[d->arch->family];
  hs_transformer_cfg_t *c = &d->cfg;
  HS_CHECK(read_fields(r, root, fam->fields, fam->n_fields, d));
  if (!d->f.kv_heads) { /* no KV head count: multi-head attention */
    c->kv_heads = c->heads;
    d->f.kv_heads = d->f.heads;
  }
  if (fam->act_key)
    HS_CHECK(read_act(r, root, fam->act_key, fam->act_def, &c->act));
  else
    c->act = HS_ACT_SWIGLU;
  if (fam->finish)
    HS_CHECK(fam->finish(r, root, d));
  HS_CHECK(read_dropout(r, root, d->arch->family, &c->no_dropout));
  c->arch = fam->arch;
  c->norm = fam->norm;
  c->max_positions = fam->rotary ? 0 : d->positions + fam->pos_offset;
cleanup:
  return st;
}

hs_status_t hs__model_from_hf_json(const cJSON *root, const char *file, const char *default_name,
                                   int64_t seq_len_override, hs_model_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_jreader_t r = {.file = file, .err = err};
  hf_doc_t d = {0};
  char name[64] = "";
  hs_model_init(out);

  HS_CHECK(hs_json_expect_object(&r, root, ""));
  HS_CHECK(detect(&r, root, &d.arch));
  hs_transformer_cfg_init(&d.cfg);
  d.cfg.experts = 0;
  d.cfg.topk = 0;
  d.cfg.type_vocab = 0;
  d.cfg.bias = true; /* GPT-2 and BERT; the other families read or derive it */
  d.cfg.lm_head = d.arch->lm_head;
  d.cfg.pooler = d.arch->pooler;
  d.f = hs__cfg_fields_plain;
  d.f.kv_heads = NULL;
  HS_CHECK(read_family(&r, root, &d));
  HS_CHECK(read_hf_dtype(&r, root, &d.cfg.dtype));

  if (seq_len_override > 0) {
    d.cfg.seq_len = seq_len_override;
    d.f.seq_len = "seq_len (override)";
  } else {
    d.cfg.seq_len = HS_MIN(d.positions, (int64_t)HF_DEFAULT_SEQ_MAX);
    d.f.seq_len = "seq_len (from max_position_embeddings)";
  }

  /* Model name: _name_or_path when the file has one, else the caller's. */
  const cJSON *np = present(root, "_name_or_path");
  if (cJSON_IsString(np) && np->valuestring[0])
    hs_strlcpy(name, np->valuestring, sizeof name);
  else
    hs_strlcpy(name, default_name && *default_name ? default_name : d.arch->arch, sizeof name);
  hs_strlcpy(d.cfg.name, name, sizeof d.cfg.name);

  HS_CHECK(hs__transformer_build(&d.cfg, file, &d.f, out, err));
  snprintf(out->source, sizeof out->source, "HuggingFace config %s (%s)", file, d.arch->arch);
cleanup:
  if (st != HS_OK)
    hs_model_destroy(out);
  return st;
}

hs_status_t hs_model_parse_hf_config(const char *text, const char *file, int64_t seq_len_override,
                                     hs_model_t *out, hs_error_t *err)
{
  return hs__model_parse_text(text, file, "config.json", seq_len_override, hs__model_from_hf_json,
                              out, err);
}
