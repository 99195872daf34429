/*
 * model_json.c - hetsim's own model file (generator form and explicit op
 * list), hs_model_load (catalog name, hetsim file or HuggingFace config) and
 * the JSON views of a model (summary for `hetsim show model --json`, explicit
 * op list that reads back to the same ops).
 *
 * Invariants: every value is range-checked through hs_json.h before it is
 * converted, so a bad file gives one message naming file, field path and
 * value and never an overflow or a huge allocation; on failure *out is left
 * destroyed (zeroed); unknown fields only warn.
 */
#include "hs_json.h"
#include "json_common.h"
#include "models_internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Largest FLOP/byte/parameter value of an explicit op: far above any real
 * model, far below the double range, so sums stay finite. */
#define OP_VALUE_MAX 1e30

static const char *const known_top_transformer[] = {"name", "description", "source",
                                                    "transformer", NULL};
static const char *const known_top_ops[] = {"name", "description", "source", "dtype",
                                            "seq_len", "ops", NULL};
static const char *const known_transformer[] = {
    "arch",       "layers",  "hidden", "heads", "kv_heads", "head_dim",        "ffn",
    "vocab",      "seq_len", "max_positions",   "type_vocab", "experts",       "topk",
    "act",        "norm",    "bias",   "qkv_bias",          "tied_embeddings", "lm_head",
    "pooler",     "dtype",   "dropout", NULL};
static const char *const known_op[] = {
    "name",          "kind",          "layer",          "fwd_flops",  "bwd_flops",
    "fwd_mem_bytes", "bwd_mem_bytes", "params",         "out_bytes",  "saved_bytes",
    "saved_bytes_selective",          "saved_tp_sharded", "gemm_m",   "gemm_n",
    "gemm_k",        "gemm_batch",    "tp_split",       "tp_allreduce_fwd",
    "tp_allreduce_bwd",               "shardable",      "experts",    "topk",
    NULL};

static const hs__cfg_fields_t fields_transformer = {
    .layers = "transformer.layers",
    .hidden = "transformer.hidden",
    .heads = "transformer.heads",
    .kv_heads = "transformer.kv_heads",
    .head_dim = "transformer.head_dim",
    .ffn = "transformer.ffn",
    .vocab = "transformer.vocab",
    .seq_len = "transformer.seq_len",
    .max_positions = "transformer.max_positions",
    .type_vocab = "transformer.type_vocab",
    .experts = "transformer.experts",
    .topk = "transformer.topk",
};

static hs_status_t read_dtype(const hs_jreader_t *r, const cJSON *obj, const char *path,
                              hs_dtype_t *out)
{
  char buf[32];
  hs_status_t st = hs_json_string(r, obj, path, "dtype", false, "bf16", buf, sizeof buf);
  if (st != HS_OK)
    return st;
  if (hs_dtype_parse(buf, out) != HS_OK)
    return hs_error_set(r->err, HS_EINVAL,
                        "%s: %s%sdtype: unknown dtype \"%s\" (expected fp32, fp16, bf16 or fp8)",
                        r->file, path, *path ? "." : "", buf);
  return HS_OK;
}

/* ---- generator form ------------------------------------------------------ */

static hs_status_t read_transformer(const hs_jreader_t *r, const cJSON *t, hs_transformer_cfg_t *c)
{
  hs_status_t st = HS_OK;
  const char *p = "transformer";
  char buf[32];
  hs_json_warn_unknown(r, t, p, known_transformer);

  HS_CHECK(hs_json_string(r, t, p, "arch", false, "decoder", buf, sizeof buf));
  if (hs_arch_parse(buf, &c->arch) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: transformer.arch: unknown architecture \"%s\" (expected decoder or encoder)",
                         r->file, buf));
  HS_CHECK(hs_json_int(r, t, p, "layers", true, 0, 1, HS_MODEL_MAX_LAYERS, &c->layers));
  HS_CHECK(hs_json_int(r, t, p, "hidden", true, 0, 1, HS_MODEL_MAX_HIDDEN, &c->hidden));
  HS_CHECK(hs_json_int(r, t, p, "heads", true, 0, 1, HS_MODEL_MAX_HEADS, &c->heads));
  HS_CHECK(hs_json_int(r, t, p, "kv_heads", false, c->heads, 1, HS_MODEL_MAX_HEADS, &c->kv_heads));
  HS_CHECK(hs_json_int(r, t, p, "head_dim", false, 0, 1, HS_MODEL_MAX_HEAD_DIM, &c->head_dim));
  HS_CHECK(hs_json_int(r, t, p, "ffn", false, 4 * c->hidden, 1, HS_MODEL_MAX_FFN, &c->ffn));
  HS_CHECK(hs_json_int(r, t, p, "vocab", true, 0, 1, HS_MODEL_MAX_VOCAB, &c->vocab));
  HS_CHECK(hs_json_int(r, t, p, "seq_len", true, 0, 1, HS_MODEL_MAX_SEQ_LEN, &c->seq_len));
  HS_CHECK(hs_json_int(r, t, p, "max_positions", false, 0, 0, HS_MODEL_MAX_POSITIONS,
                       &c->max_positions));
  HS_CHECK(hs_json_int(r, t, p, "type_vocab", false, 0, 0, HS_MODEL_MAX_TYPE_VOCAB, &c->type_vocab));
  HS_CHECK(hs_json_int(r, t, p, "experts", false, 0, 0, HS_MODEL_MAX_EXPERTS, &c->experts));
  HS_CHECK(hs_json_int(r, t, p, "topk", false, 0, 0, HS_MODEL_MAX_EXPERTS, &c->topk));

  HS_CHECK(hs_json_string(r, t, p, "act", false, "gelu", buf, sizeof buf));
  if (hs_act_parse(buf, &c->act) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: transformer.act: unknown activation \"%s\" (expected gelu, swiglu, relu or relu2)",
                         r->file, buf));
  HS_CHECK(hs_json_string(r, t, p, "norm", false, "layernorm", buf, sizeof buf));
  if (hs_norm_parse(buf, &c->norm) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: transformer.norm: unknown norm \"%s\" (expected layernorm or rmsnorm)",
                         r->file, buf));
  HS_CHECK(hs_json_bool(r, t, p, "bias", false, true, &c->bias));
  HS_CHECK(hs_json_bool(r, t, p, "qkv_bias", false, false, &c->qkv_bias));
  HS_CHECK(hs_json_bool(r, t, p, "tied_embeddings", false, true, &c->tied_embeddings));
  HS_CHECK(hs_json_bool(r, t, p, "lm_head", false, true, &c->lm_head));
  HS_CHECK(hs_json_bool(r, t, p, "pooler", false, false, &c->pooler));
  bool dropout = true;
  HS_CHECK(hs_json_bool(r, t, p, "dropout", false, true, &dropout));
  c->no_dropout = !dropout;
  HS_CHECK(read_dtype(r, t, p, &c->dtype));
cleanup:
  return st;
}

/* ---- explicit op list ------------------------------------------------------ */

static hs_status_t read_num(const hs_jreader_t *r, const cJSON *o, const char *p, const char *key,
                            double def, double *out)
{
  return hs_json_number(r, o, p, key, false, def, HS_JNUM_NONNEG, OP_VALUE_MAX, out);
}

static hs_status_t read_op(const hs_jreader_t *r, const cJSON *o, const char *p, hs_op_t *op)
{
  hs_status_t st = HS_OK;
  char buf[32];
  int64_t v = 0;
  HS_CHECK(hs_json_expect_object(r, o, p));
  hs_json_warn_unknown(r, o, p, known_op);
  HS_CHECK(hs_json_string(r, o, p, "name", true, NULL, op->name, sizeof op->name));
  HS_CHECK(hs_json_string(r, o, p, "kind", true, NULL, buf, sizeof buf));
  if (hs_op_kind_parse(buf, &op->kind) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.kind: unknown op kind \"%s\" (expected embedding, norm, gemm, "
                         "attention, elementwise, loss, moe_router or moe_expert)",
                         r->file, p, buf));
  HS_CHECK(hs_json_int(r, o, p, "layer", false, -1, INT32_MIN, HS_MODEL_MAX_LAYERS - 1, &v));
  if (v < -1)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.layer: must be a block index or -1 (outside the blocks), got %lld",
                         r->file, p, (long long)v));
  op->layer = (int32_t)v;
  HS_CHECK(read_num(r, o, p, "fwd_flops", 0.0, &op->fwd_flops));
  HS_CHECK(read_num(r, o, p, "bwd_flops", 2.0 * op->fwd_flops, &op->bwd_flops));
  HS_CHECK(read_num(r, o, p, "fwd_mem_bytes", 0.0, &op->fwd_mem_bytes));
  HS_CHECK(read_num(r, o, p, "bwd_mem_bytes", 2.0 * op->fwd_mem_bytes, &op->bwd_mem_bytes));
  HS_CHECK(read_num(r, o, p, "params", 0.0, &op->params));
  HS_CHECK(read_num(r, o, p, "out_bytes", 0.0, &op->out_bytes));
  HS_CHECK(read_num(r, o, p, "saved_bytes", 0.0, &op->saved_bytes));
  HS_CHECK(read_num(r, o, p, "saved_bytes_selective", op->saved_bytes, &op->saved_bytes_selective));
  if (op->saved_bytes_selective > op->saved_bytes)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.saved_bytes_selective: must be at most saved_bytes (%.17g), got %.17g",
                         r->file, p, op->saved_bytes, op->saved_bytes_selective));
  HS_CHECK(hs_json_bool(r, o, p, "saved_tp_sharded", false, false, &op->saved_tp_sharded));
  HS_CHECK(read_num(r, o, p, "gemm_m", 0.0, &op->gemm_m));
  HS_CHECK(read_num(r, o, p, "gemm_n", 0.0, &op->gemm_n));
  HS_CHECK(read_num(r, o, p, "gemm_k", 0.0, &op->gemm_k));
  HS_CHECK(hs_json_int(r, o, p, "gemm_batch", false, op->gemm_m > 0 ? 1 : 0, 0, 1000000000, &v));
  op->gemm_batch = (int32_t)v;
  HS_CHECK(hs_json_string(r, o, p, "tp_split", false, "replicate", buf, sizeof buf));
  if (hs_tp_split_parse(buf, &op->tp_split) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.tp_split: unknown split \"%s\" (expected replicate, column, row, "
                         "heads, vocab or expert)",
                         r->file, p, buf));
  HS_CHECK(hs_json_bool(r, o, p, "tp_allreduce_fwd", false, false, &op->tp_allreduce_fwd));
  HS_CHECK(hs_json_bool(r, o, p, "tp_allreduce_bwd", false, false, &op->tp_allreduce_bwd));

  const cJSON *sh = NULL;
  int n_sh = 0;
  char path[160];
  HS_CHECK(hs_json_array(r, o, p, "shardable", false, &sh, &n_sh));
  op->shardable = sh ? 0u : HS_SHARD_BATCH;
  for (int i = 0; sh && i < n_sh; i++) {
    const cJSON *it = cJSON_GetArrayItem(sh, i);
    hs_json_path(path, sizeof path, p, "shardable", -1);
    char ipath[176];
    hs_json_path(ipath, sizeof ipath, path, NULL, i);
    if (!cJSON_IsString(it))
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: must be a string naming a dimension", r->file,
                           ipath));
    unsigned bit = 0;
    while (bit < HS_SHARD__COUNT && strcmp(it->valuestring, hs_shard_name(bit)) != 0)
      bit++;
    if (bit == HS_SHARD__COUNT)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                           "%s: %s: unknown dimension \"%.40s\" (expected batch, out, in, heads, "
                           "experts or vocab)",
                           r->file, ipath, it->valuestring));
    op->shardable |= 1u << bit;
  }
  HS_CHECK(hs_json_int(r, o, p, "experts", false, 0, 0, HS_MODEL_MAX_EXPERTS, &v));
  op->experts = (int32_t)v;
  HS_CHECK(hs_json_int(r, o, p, "topk", false, 0, 0, HS_MODEL_MAX_EXPERTS, &v));
  if (v > op->experts && op->experts > 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.topk: must be at most experts (%d), got %lld",
                         r->file, p, (int)op->experts, (long long)v));
  op->topk = (int32_t)v;
cleanup:
  return st;
}

static hs_status_t read_ops(const hs_jreader_t *r, const cJSON *root, int64_t seq_len_override,
                            hs_model_t *m)
{
  hs_status_t st = HS_OK;
  int64_t v = 0;
  hs_json_warn_unknown(r, root, "", known_top_ops);
  HS_CHECK(read_dtype(r, root, "", &m->dtype));
  HS_CHECK(hs_json_int(r, root, "", "seq_len", true, 0, 1, HS_MODEL_MAX_SEQ_LEN, &v));
  m->seq_len = v;
  if (seq_len_override > 0 && seq_len_override != m->seq_len)
    HS_FAIL(hs_error_set(r->err, HS_EUNSUPPORTED,
                         "%s: seq_len: an explicit op list cannot be rescaled from %lld to %lld "
                         "tokens (use the \"transformer\" form)",
                         r->file, (long long)m->seq_len, (long long)seq_len_override));
  const cJSON *ops = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(r, root, "", "ops", true, &ops, &n));
  if (n < 1)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: ops: must hold at least one op, got an empty array",
                         r->file));
  if (n > HS_MODEL_MAX_OPS)
    HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: ops: at most %d ops are supported, got %d", r->file,
                         HS_MODEL_MAX_OPS, n));
  m->ops = hs_calloc((size_t)n, sizeof(hs_op_t));
  if (!m->ops)
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "%s: ops: out of memory for %d ops", r->file, n));
  int i = 0;
  char path[32];
  for (const cJSON *it = ops->child; it && i < n; it = it->next, i++) {
    hs_json_path(path, sizeof path, "ops", NULL, i);
    HS_CHECK(read_op(r, it, path, &m->ops[i]));
    m->n_ops++;
  }
cleanup:
  return st;
}

hs_status_t hs__model_from_hetsim_json(const cJSON *root, const char *file, const char *default_name,
                                       int64_t seq_len_override, hs_model_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_jreader_t r = {.file = file, .err = err};
  hs_model_init(out);
  hs_transformer_cfg_t cfg;
  char name[64] = "", source[256] = "";
  const cJSON *t = NULL;

  HS_CHECK(hs_json_expect_object(&r, root, ""));
  HS_CHECK(hs_json_string(&r, root, "", "name", false, default_name, name, sizeof name));
  HS_CHECK(hs_json_string(&r, root, "", "source", false, "", source, sizeof source));
  if (!name[0])
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: name: must not be empty", file));
  HS_CHECK(hs_json_object(&r, root, "", "transformer", false, &t));
  bool has_ops = cJSON_GetObjectItemCaseSensitive(root, "ops") != NULL;
  if (t && has_ops)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: ops: cannot be given together with \"transformer\" (choose one form)",
                         file));
  if (!t && !has_ops)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: transformer: required field missing (or give an \"ops\" list)", file));
  if (t) {
    hs_json_warn_unknown(&r, root, "", known_top_transformer);
    hs_transformer_cfg_init(&cfg);
    HS_CHECK(read_transformer(&r, t, &cfg));
    hs__cfg_fields_t fields = fields_transformer;
    if (seq_len_override > 0) {
      cfg.seq_len = seq_len_override;
      fields.seq_len = "seq_len (override)";
    }
    hs_strlcpy(cfg.name, name, sizeof cfg.name);
    HS_CHECK(hs__transformer_build(&cfg, file, &fields, out, err));
  } else {
    HS_CHECK(read_ops(&r, root, seq_len_override, out));
  }
  hs_strlcpy(out->name, name, sizeof out->name);
  hs_strlcpy(out->source, source, sizeof out->source);
cleanup:
  if (st != HS_OK)
    hs_model_destroy(out);
  return st;
}

/* ---- entry points ------------------------------------------------------------ */

hs_status_t hs_model_parse_json(const char *text, const char *file, int64_t seq_len_override,
                                hs_model_t *out, hs_error_t *err)
{
  return hs__model_parse_text(text, file, "model.json", seq_len_override,
                              hs__model_from_hetsim_json, out, err);
}

/* Either format, told apart as hs_model_load does. */
static hs_status_t from_any_json(const cJSON *root, const char *file, const char *name,
                                 int64_t seq_len_override, hs_model_t *out, hs_error_t *err)
{
  if (hs__hf_is_config(root))
    return hs__model_from_hf_json(root, file, name, seq_len_override, out, err);
  return hs__model_from_hetsim_json(root, file, name, seq_len_override, out, err);
}

hs_status_t hs_model_parse(const char *text, const char *file, int64_t seq_len_override,
                           hs_model_t *out, hs_error_t *err)
{
  hs_model_init(out);
  if (seq_len_override < 0)
    return hs_error_set(err, HS_EINVAL, "%s: seq_len (override): must be positive, got %lld",
                        file ? file : "model.json", (long long)seq_len_override);
  return hs__model_parse_text(text, file, "model.json", seq_len_override, from_any_json, out, err);
}

/* stat, not fopen: opening a FIFO would wait for a writer; what is not a
 * regular file is refused by hs_file_read, naming the path */
static bool file_exists(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0;
}

hs_status_t hs_model_load(const char *spec, int64_t seq_len_override, hs_model_t *out,
                          hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *root = NULL;
  char path[4096], name[64];
  hs_model_init(out);
  if (!spec || !*spec)
    return hs_error_set(err, HS_EINVAL, "model: empty model name or path");
  if (seq_len_override < 0)
    return hs_error_set(err, HS_EINVAL, "%s: seq_len (override): must be positive, got %lld", spec,
                        (long long)seq_len_override);

  bool looks_like_name = !strchr(spec, '/') && !hs_str_endswith(spec, ".json");
  if (looks_like_name && hs__model_catalog_path(spec, path, sizeof path) && file_exists(path)) {
    /* catalog entry */
  } else if (file_exists(spec)) {
    if (!hs_strlcpy(path, spec, sizeof path))
      return hs_error_set(err, HS_ELIMIT, "model path too long: \"%.60s...\"", spec);
  } else if (looks_like_name) {
    char hint[256] = "";
    char **names = NULL;
    size_t nn = 0;
    hs_error_t lerr;
    hs_error_init(&lerr);
    lerr.warn_fp = NULL;
    if (hs_model_catalog_list(&names, &nn, &lerr) == HS_OK)
      hs_suggest_names(spec, (const char *const *)names, nn, hint, sizeof hint);
    hs_model_catalog_free(names, nn);
    return hs_error_set(err, HS_ENOTFOUND,
                        "model \"%s\": not a catalog name (see `hetsim list models`) nor a file%s",
                        spec, hint);
  } else {
    return hs_error_set(err, HS_ENOTFOUND, "%s: no such model file", spec);
  }

  const char *file = hs_basename(path);
  hs__model_name_from_path(path, name, sizeof name);
  HS_CHECK(hs_json_load_file(path, &root, err));
  if (hs__hf_is_config(root))
    HS_CHECK(hs__model_from_hf_json(root, file, name, seq_len_override, out, err));
  else
    HS_CHECK(hs__model_from_hetsim_json(root, file, name, seq_len_override, out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK) {
    hs_model_destroy(out);
    hs__error_one_line(err);
  }
  return st;
}

/* ---- writing ---------------------------------------------------------------- */

/* Adds a member, remembering an allocation failure in *ok. */
static void add_num(cJSON *o, const char *k, double v, bool *ok)
{
  if (!cJSON_AddNumberToObject(o, k, v))
    *ok = false;
}

static void add_str(cJSON *o, const char *k, const char *v, bool *ok)
{
  if (!cJSON_AddStringToObject(o, k, v))
    *ok = false;
}

static void add_bool(cJSON *o, const char *k, bool v, bool *ok)
{
  if (!cJSON_AddBoolToObject(o, k, v))
    *ok = false;
}

/* A new document about m; NULL when m is NULL or memory is short. */
static cJSON *doc_begin(const hs_model_t *m)
{
  hs_json_oom_clear();
  return m ? cJSON_CreateObject() : NULL;
}

/* The finished document, or NULL (freeing it) when a member was lost. */
static cJSON *doc_end(cJSON *j, bool ok)
{
  if (!ok) {
    cJSON_Delete(j);
    return NULL;
  }
  return hs_json_finish(j);
}

cJSON *hs_model_to_json(const hs_model_t *m)
{
  cJSON *j = doc_begin(m);
  if (!j)
    return NULL;
  bool ok = true;
  hs_model_totals_t all, layer0;
  hs_model_flops_t fl;
  hs_model_totals(m, 0, m->n_ops, &all);
  hs_model_layer_totals(m, 0, &layer0);
  hs_model_flops(m, 1.0, &fl);
  double tokens = m->seq_len > 0 ? (double)m->seq_len : 1.0;
  const hs_transformer_cfg_t *c = &m->cfg;
  bool gen = m->from_generator;

  add_str(j, "name", m->name, &ok);
  add_str(j, "source", m->source, &ok);
  add_bool(j, "from_generator", gen, &ok);
  add_str(j, "arch", gen ? hs_arch_name(c->arch) : "explicit", &ok);
  add_num(j, "params", all.params, &ok);
  add_num(j, "layers", (double)hs_model_layers(m), &ok);
  add_num(j, "hidden", gen ? (double)c->hidden : 0.0, &ok);
  add_num(j, "heads", gen ? (double)c->heads : 0.0, &ok);
  add_num(j, "kv_heads", gen ? (double)c->kv_heads : 0.0, &ok);
  add_num(j, "ffn", gen ? (double)c->ffn : 0.0, &ok);
  add_num(j, "vocab", gen ? (double)c->vocab : 0.0, &ok);
  add_num(j, "experts", gen ? (double)c->experts : 0.0, &ok);
  add_num(j, "topk", gen ? (double)c->topk : 0.0, &ok);
  add_num(j, "seq_len", (double)m->seq_len, &ok);
  add_str(j, "dtype", hs_dtype_name(m->dtype), &ok);
  add_num(j, "flops_per_token_fwd_bwd", fl.fwd_bwd / tokens, &ok);
  add_num(j, "flops_per_token_fwd_bwd_recompute", fl.fwd_bwd_recompute / tokens, &ok);
  add_num(j, "train_state_bytes", all.params * HS_ADAM_STATE_BYTES_PER_PARAM, &ok);
  /* One transformer block, one sample, no TP: what the per-layer
   * formula 34sh + 5as² gives; the whole-model figures follow. */
  add_num(j, "activation_bytes_per_sample", layer0.saved_bytes, &ok);
  add_num(j, "activation_bytes_per_sample_selective", layer0.saved_bytes_selective, &ok);
  add_num(j, "activation_bytes_per_sample_model", all.saved_bytes, &ok);
  add_num(j, "activation_bytes_per_sample_model_selective", all.saved_bytes_selective, &ok);
  add_num(j, "n_ops", (double)m->n_ops, &ok);
  return doc_end(j, ok);
}

static cJSON *op_to_json(const hs_op_t *op)
{
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  bool ok = true;
  add_str(o, "name", op->name, &ok);
  add_str(o, "kind", hs_op_kind_name(op->kind), &ok);
  add_num(o, "layer", op->layer, &ok);
  add_num(o, "fwd_flops", op->fwd_flops, &ok);
  add_num(o, "bwd_flops", op->bwd_flops, &ok);
  add_num(o, "fwd_mem_bytes", op->fwd_mem_bytes, &ok);
  add_num(o, "bwd_mem_bytes", op->bwd_mem_bytes, &ok);
  add_num(o, "params", op->params, &ok);
  add_num(o, "out_bytes", op->out_bytes, &ok);
  add_num(o, "saved_bytes", op->saved_bytes, &ok);
  add_num(o, "saved_bytes_selective", op->saved_bytes_selective, &ok);
  add_bool(o, "saved_tp_sharded", op->saved_tp_sharded, &ok);
  add_num(o, "gemm_m", op->gemm_m, &ok);
  add_num(o, "gemm_n", op->gemm_n, &ok);
  add_num(o, "gemm_k", op->gemm_k, &ok);
  add_num(o, "gemm_batch", op->gemm_batch, &ok);
  add_str(o, "tp_split", hs_tp_split_name(op->tp_split), &ok);
  add_bool(o, "tp_allreduce_fwd", op->tp_allreduce_fwd, &ok);
  add_bool(o, "tp_allreduce_bwd", op->tp_allreduce_bwd, &ok);
  cJSON *sh = cJSON_AddArrayToObject(o, "shardable");
  if (!sh)
    ok = false;
  for (unsigned b = 0; sh && b < HS_SHARD__COUNT; b++) {
    if (!(op->shardable & (1u << b)))
      continue;
    cJSON *s = cJSON_CreateString(hs_shard_name(b));
    if (!s || !cJSON_AddItemToArray(sh, s)) {
      cJSON_Delete(s);
      ok = false;
    }
  }
  add_num(o, "experts", op->experts, &ok);
  add_num(o, "topk", op->topk, &ok);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

cJSON *hs_model_to_ops_json(const hs_model_t *m)
{
  cJSON *j = doc_begin(m);
  if (!j)
    return NULL;
  bool ok = true;
  add_str(j, "name", m->name, &ok);
  if (m->source[0])
    add_str(j, "source", m->source, &ok);
  add_str(j, "dtype", hs_dtype_name(m->dtype), &ok);
  add_num(j, "seq_len", (double)m->seq_len, &ok);
  cJSON *ops = cJSON_AddArrayToObject(j, "ops");
  if (!ops)
    ok = false;
  for (size_t i = 0; ok && i < m->n_ops; i++) {
    cJSON *o = op_to_json(&m->ops[i]);
    if (!o || !cJSON_AddItemToArray(ops, o)) {
      cJSON_Delete(o);
      ok = false;
    }
  }
  return doc_end(j, ok);
}
