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
 */
#include "hs_json.h"
#include "models_internal.h"

#include <cjson/cJSON.h>
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

static hs_status_t opt_int(const hs_jreader_t *r, const cJSON *root, const char *key, int64_t def,
                           int64_t lo, int64_t hi, int64_t *out)
{
  if (!present(root, key)) {
    *out = def;
    return HS_OK;
  }
  return hs_json_int(r, root, "", key, true, def, lo, hi, out);
}

static hs_status_t req_int(const hs_jreader_t *r, const cJSON *root, const char *key, int64_t hi,
                           int64_t *out)
{
  return hs_json_int(r, root, "", key, true, 0, 1, hi, out);
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
      {"swish", HS_ACT_GELU},     {"relu", HS_ACT_RELU},
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
                      "gelu_pytorch_tanh, quick_gelu, silu, swish, relu)",
                      r->file, key, buf);
}

static hs_status_t read_hf_dtype(const hs_jreader_t *r, const cJSON *root, hs_dtype_t *out)
{
  /* transformers >= 4.56 writes "dtype", older versions "torch_dtype". */
  const char *key = present(root, "torch_dtype") ? "torch_dtype" : "dtype";
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

static hs_status_t read_llama(const hs_jreader_t *r, const cJSON *root, const hf_arch_t *a,
                              hs_transformer_cfg_t *c, hs__cfg_fields_t *f, int64_t *positions)
{
  hs_status_t st = HS_OK;
  bool attn_bias = false, mlp_bias = false;
  HS_CHECK(req_int(r, root, "num_hidden_layers", HS_MODEL_MAX_LAYERS, &c->layers));
  HS_CHECK(req_int(r, root, "hidden_size", HS_MODEL_MAX_HIDDEN, &c->hidden));
  HS_CHECK(req_int(r, root, "num_attention_heads", HS_MODEL_MAX_HEADS, &c->heads));
  HS_CHECK(opt_int(r, root, "num_key_value_heads", c->heads, 1, HS_MODEL_MAX_HEADS, &c->kv_heads));
  HS_CHECK(opt_int(r, root, "head_dim", 0, 1, HS_MODEL_MAX_HEAD_DIM, &c->head_dim));
  if (c->head_dim > 0 && c->head_dim * c->heads == c->hidden)
    c->head_dim = 0; /* the default; keeps the divisibility check meaningful */
  HS_CHECK(req_int(r, root, "intermediate_size", HS_MODEL_MAX_FFN, &c->ffn));
  HS_CHECK(req_int(r, root, "vocab_size", HS_MODEL_MAX_VOCAB, &c->vocab));
  HS_CHECK(opt_int(r, root, "max_position_embeddings", HF_DEFAULT_POSITIONS, 1,
                   HS_MODEL_MAX_POSITIONS, positions));
  HS_CHECK(opt_bool(r, root, "tie_word_embeddings", false, &c->tied_embeddings));
  HS_CHECK(opt_bool(r, root, "attention_bias", false, &attn_bias));
  HS_CHECK(opt_bool(r, root, "mlp_bias", false, &mlp_bias));
  if (a->moe) {
    HS_CHECK(req_int(r, root, "num_local_experts", HS_MODEL_MAX_EXPERTS, &c->experts));
    HS_CHECK(req_int(r, root, "num_experts_per_tok", HS_MODEL_MAX_EXPERTS, &c->topk));
    f->experts = "num_local_experts";
    f->topk = "num_experts_per_tok";
  }
  /* Llama's attention_bias also puts a bias on o_proj (hidden values per
   * layer) that the generator does not model separately. */
  c->qkv_bias = a->qkv_bias || attn_bias;
  c->bias = mlp_bias && attn_bias;
  c->act = HS_ACT_SWIGLU;
  c->norm = HS_NORM_RMSNORM;
  c->max_positions = 0;
  f->layers = "num_hidden_layers";
  f->hidden = "hidden_size";
  f->heads = "num_attention_heads";
  f->kv_heads = "num_key_value_heads";
  f->ffn = "intermediate_size";
  f->vocab = "vocab_size";
cleanup:
  return st;
}

static hs_status_t read_gpt2(const hs_jreader_t *r, const cJSON *root, hs_transformer_cfg_t *c,
                             hs__cfg_fields_t *f, int64_t *positions)
{
  hs_status_t st = HS_OK;
  HS_CHECK(req_int(r, root, "n_layer", HS_MODEL_MAX_LAYERS, &c->layers));
  HS_CHECK(req_int(r, root, "n_embd", HS_MODEL_MAX_HIDDEN, &c->hidden));
  HS_CHECK(req_int(r, root, "n_head", HS_MODEL_MAX_HEADS, &c->heads));
  c->kv_heads = c->heads;
  HS_CHECK(opt_int(r, root, "n_inner", 4 * c->hidden, 1, HS_MODEL_MAX_FFN, &c->ffn));
  HS_CHECK(req_int(r, root, "vocab_size", HS_MODEL_MAX_VOCAB, &c->vocab));
  const char *pos_key = present(root, "n_positions") ? "n_positions" : "n_ctx";
  if (!present(root, pos_key))
    pos_key = "n_positions";
  HS_CHECK(req_int(r, root, pos_key, HS_MODEL_MAX_POSITIONS, positions));
  c->max_positions = *positions;
  HS_CHECK(opt_bool(r, root, "tie_word_embeddings", true, &c->tied_embeddings));
  HS_CHECK(read_act(r, root, "activation_function", "gelu_new", &c->act));
  c->norm = HS_NORM_LAYERNORM;
  c->bias = true;
  f->layers = "n_layer";
  f->hidden = "n_embd";
  f->heads = "n_head";
  f->kv_heads = "n_head";
  f->ffn = "n_inner";
  f->vocab = "vocab_size";
  f->max_positions = pos_key;
cleanup:
  return st;
}

/* GPT-NeoX / Pythia: rotary on a fraction of each head (no parameters),
 * untied head, parallel residual (same ops and counts, different order). */
static hs_status_t read_neox(const hs_jreader_t *r, const cJSON *root, hs_transformer_cfg_t *c,
                             hs__cfg_fields_t *f, int64_t *positions)
{
  hs_status_t st = HS_OK;
  HS_CHECK(req_int(r, root, "num_hidden_layers", HS_MODEL_MAX_LAYERS, &c->layers));
  HS_CHECK(req_int(r, root, "hidden_size", HS_MODEL_MAX_HIDDEN, &c->hidden));
  HS_CHECK(req_int(r, root, "num_attention_heads", HS_MODEL_MAX_HEADS, &c->heads));
  c->kv_heads = c->heads;
  HS_CHECK(opt_int(r, root, "intermediate_size", 4 * c->hidden, 1, HS_MODEL_MAX_FFN, &c->ffn));
  HS_CHECK(req_int(r, root, "vocab_size", HS_MODEL_MAX_VOCAB, &c->vocab));
  HS_CHECK(opt_int(r, root, "max_position_embeddings", HF_DEFAULT_POSITIONS, 1,
                   HS_MODEL_MAX_POSITIONS, positions));
  HS_CHECK(opt_bool(r, root, "tie_word_embeddings", false, &c->tied_embeddings));
  HS_CHECK(opt_bool(r, root, "attention_bias", true, &c->bias));
  HS_CHECK(read_act(r, root, "hidden_act", "gelu", &c->act));
  c->norm = HS_NORM_LAYERNORM;
  c->max_positions = 0;
  f->layers = "num_hidden_layers";
  f->hidden = "hidden_size";
  f->heads = "num_attention_heads";
  f->kv_heads = "num_attention_heads";
  f->ffn = "intermediate_size";
  f->vocab = "vocab_size";
cleanup:
  return st;
}

/* OPT: learned positions with an offset of 2 (max_position_embeddings + 2
 * rows), ReLU, tied head. */
static hs_status_t read_opt(const hs_jreader_t *r, const cJSON *root, hs_transformer_cfg_t *c,
                            hs__cfg_fields_t *f, int64_t *positions)
{
  hs_status_t st = HS_OK;
  int64_t proj = 0;
  bool pre_norm = true;
  HS_CHECK(req_int(r, root, "num_hidden_layers", HS_MODEL_MAX_LAYERS, &c->layers));
  HS_CHECK(req_int(r, root, "hidden_size", HS_MODEL_MAX_HIDDEN, &c->hidden));
  HS_CHECK(req_int(r, root, "num_attention_heads", HS_MODEL_MAX_HEADS, &c->heads));
  c->kv_heads = c->heads;
  HS_CHECK(req_int(r, root, "ffn_dim", HS_MODEL_MAX_FFN, &c->ffn));
  HS_CHECK(req_int(r, root, "vocab_size", HS_MODEL_MAX_VOCAB, &c->vocab));
  HS_CHECK(opt_int(r, root, "max_position_embeddings", HF_DEFAULT_POSITIONS, 1,
                   HS_MODEL_MAX_POSITIONS - 2, positions));
  HS_CHECK(opt_int(r, root, "word_embed_proj_dim", c->hidden, 1, HS_MODEL_MAX_HIDDEN, &proj));
  if (proj != c->hidden)
    return hs_error_set(r->err, HS_EUNSUPPORTED,
                        "%s: word_embed_proj_dim: projected embeddings are not supported (must "
                        "equal hidden_size %lld), got %lld",
                        r->file, (long long)c->hidden, (long long)proj);
  HS_CHECK(opt_bool(r, root, "do_layer_norm_before", true, &pre_norm));
  if (!pre_norm)
    hs_error_warn(r->err,
                  "%s: do_layer_norm_before: false (post-norm OPT) is modelled as pre-norm with a "
                  "final layer norm (%lld parameters too many)",
                  r->file, (long long)(2 * c->hidden));
  HS_CHECK(opt_bool(r, root, "tie_word_embeddings", true, &c->tied_embeddings));
  HS_CHECK(opt_bool(r, root, "enable_bias", true, &c->bias));
  HS_CHECK(read_act(r, root, "activation_function", "relu", &c->act));
  c->norm = HS_NORM_LAYERNORM;
  c->max_positions = *positions + 2;
  f->layers = "num_hidden_layers";
  f->hidden = "hidden_size";
  f->heads = "num_attention_heads";
  f->kv_heads = "num_attention_heads";
  f->ffn = "ffn_dim";
  f->vocab = "vocab_size";
  f->max_positions = "max_position_embeddings";
cleanup:
  return st;
}

static hs_status_t read_bert(const hs_jreader_t *r, const cJSON *root, hs_transformer_cfg_t *c,
                             hs__cfg_fields_t *f, int64_t *positions)
{
  hs_status_t st = HS_OK;
  char pos_type[32] = "absolute";
  HS_CHECK(req_int(r, root, "num_hidden_layers", HS_MODEL_MAX_LAYERS, &c->layers));
  HS_CHECK(req_int(r, root, "hidden_size", HS_MODEL_MAX_HIDDEN, &c->hidden));
  HS_CHECK(req_int(r, root, "num_attention_heads", HS_MODEL_MAX_HEADS, &c->heads));
  c->kv_heads = c->heads;
  HS_CHECK(opt_int(r, root, "intermediate_size", 4 * c->hidden, 1, HS_MODEL_MAX_FFN, &c->ffn));
  HS_CHECK(req_int(r, root, "vocab_size", HS_MODEL_MAX_VOCAB, &c->vocab));
  HS_CHECK(opt_int(r, root, "max_position_embeddings", 512, 1, HS_MODEL_MAX_POSITIONS, positions));
  HS_CHECK(opt_int(r, root, "type_vocab_size", 2, 0, HS_MODEL_MAX_TYPE_VOCAB, &c->type_vocab));
  HS_CHECK(opt_bool(r, root, "tie_word_embeddings", true, &c->tied_embeddings));
  HS_CHECK(read_act(r, root, "hidden_act", "gelu", &c->act));
  if (present(root, "position_embedding_type"))
    HS_CHECK(hs_json_string(r, root, "", "position_embedding_type", false, "absolute", pos_type,
                            sizeof pos_type));
  if (strcmp(pos_type, "absolute") != 0)
    return hs_error_set(r->err, HS_EUNSUPPORTED,
                        "%s: position_embedding_type: only \"absolute\" is supported, got \"%s\"",
                        r->file, pos_type);
  c->arch = HS_ARCH_ENCODER;
  c->norm = HS_NORM_LAYERNORM;
  c->bias = true;
  c->max_positions = *positions;
  f->layers = "num_hidden_layers";
  f->hidden = "hidden_size";
  f->heads = "num_attention_heads";
  f->kv_heads = "num_attention_heads";
  f->ffn = "intermediate_size";
  f->vocab = "vocab_size";
  f->max_positions = "max_position_embeddings";
  f->type_vocab = "type_vocab_size";
cleanup:
  return st;
}

hs_status_t hs__model_from_hf_json(const cJSON *root, const char *file, const char *default_name,
                                   int64_t seq_len_override, hs_model_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_jreader_t r = {.file = file, .err = err};
  hs_transformer_cfg_t cfg;
  hs__cfg_fields_t f = hs__cfg_fields_plain;
  const hf_arch_t *a = NULL;
  int64_t positions = 0;
  char name[64] = "";
  hs_model_init(out);

  HS_CHECK(hs_json_expect_object(&r, root, ""));
  HS_CHECK(detect(&r, root, &a));
  hs_transformer_cfg_init(&cfg);
  cfg.arch = HS_ARCH_DECODER;
  cfg.experts = 0;
  cfg.topk = 0;
  cfg.type_vocab = 0;
  cfg.lm_head = a->lm_head;
  cfg.pooler = a->pooler;
  switch (a->family) {
  case HF_LLAMA: HS_CHECK(read_llama(&r, root, a, &cfg, &f, &positions)); break;
  case HF_GPT2: HS_CHECK(read_gpt2(&r, root, &cfg, &f, &positions)); break;
  case HF_NEOX: HS_CHECK(read_neox(&r, root, &cfg, &f, &positions)); break;
  case HF_OPT: HS_CHECK(read_opt(&r, root, &cfg, &f, &positions)); break;
  case HF_BERT: HS_CHECK(read_bert(&r, root, &cfg, &f, &positions)); break;
  }
  HS_CHECK(read_hf_dtype(&r, root, &cfg.dtype));

  if (seq_len_override > 0) {
    cfg.seq_len = seq_len_override;
    f.seq_len = "seq_len (override)";
  } else {
    cfg.seq_len = HS_MIN(positions, (int64_t)HF_DEFAULT_SEQ_MAX);
    f.seq_len = "seq_len (from max_position_embeddings)";
  }

  /* Model name: _name_or_path when the file has one, else the caller's. */
  const cJSON *np = present(root, "_name_or_path");
  if (cJSON_IsString(np) && np->valuestring[0])
    hs_strlcpy(name, np->valuestring, sizeof name);
  else
    hs_strlcpy(name, default_name && *default_name ? default_name : a->arch, sizeof name);
  hs_strlcpy(cfg.name, name, sizeof cfg.name);

  HS_CHECK(hs__transformer_build(&cfg, file, &f, out, err));
  snprintf(out->source, sizeof out->source, "HuggingFace config %s (%s)", file, a->arch);
cleanup:
  if (st != HS_OK)
    hs_model_destroy(out);
  return st;
}

hs_status_t hs_model_parse_hf_config(const char *text, const char *file, int64_t seq_len_override,
                                     hs_model_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *root = NULL;
  char name[64];
  hs_model_init(out);
  if (!file)
    file = "config.json";
  if (!text)
    return hs_error_set(err, HS_EINVAL, "%s: no text to parse", file);
  hs__model_name_from_path(file, name, sizeof name);
  HS_CHECK(hs_json_parse(text, file, &root, err));
  HS_CHECK(hs__model_from_hf_json(root, file, name, seq_len_override, out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs__error_one_line(err);
  return st;
}
