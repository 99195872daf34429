/*
 * model.c - the model object: names of the enums, init/destroy/copy, totals
 * over op ranges, iteration FLOPs and the human-readable summary.
 *
 * Invariants: a model owns its op array (ops == NULL iff n_ops == 0); every
 * per-op quantity is per sample and for the whole op (no tensor
 * parallelism); sums are plain double sums in op order, so the same model
 * gives the same totals bit for bit.
 */
#include "models_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- enum names ---------------------------------------------------------- */

static const char *const op_kind_names[] = {
#define HS__OPK_NAME(name, str) str,
    HS_OP_KIND_LIST(HS__OPK_NAME)
#undef HS__OPK_NAME
};

static const char *const tp_split_names[] = {"replicate", "column", "row",
                                             "heads",     "vocab",  "expert"};
static const char *const shard_names[HS_SHARD__COUNT] = {"batch",   "out",     "in",
                                                         "heads",   "experts", "vocab"};
static const char *const arch_names[] = {"decoder", "encoder"};
static const char *const act_names[] = {"gelu", "swiglu", "relu", "relu2"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};

static hs_status_t parse_name(const char *s, const char *const *names, int n, int *out)
{
  if (!s)
    return HS_EINVAL;
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return HS_OK;
    }
  return HS_EINVAL;
}

#define NAME_OR_Q(arr, v) ((int)(v) >= 0 && (size_t)(v) < HS_ARRAY_LEN(arr) ? arr[v] : "?")

const char *hs_op_kind_name(hs_op_kind_t k) { return NAME_OR_Q(op_kind_names, k); }
const char *hs_tp_split_name(hs_tp_split_t t) { return NAME_OR_Q(tp_split_names, t); }
const char *hs_shard_name(unsigned bit_index) { return NAME_OR_Q(shard_names, bit_index); }
const char *hs_arch_name(hs_arch_t a) { return NAME_OR_Q(arch_names, a); }
const char *hs_act_name(hs_act_t a) { return NAME_OR_Q(act_names, a); }
const char *hs_norm_name(hs_norm_t n) { return NAME_OR_Q(norm_names, n); }

#define PARSE_ENUM(fn, type, arr)                                          \
  hs_status_t fn(const char *s, type *out)                                 \
  {                                                                        \
    int i = 0;                                                             \
    hs_status_t st = parse_name(s, arr, (int)HS_ARRAY_LEN(arr), &i);       \
    if (st == HS_OK)                                                       \
      *out = (type)i;                                                      \
    return st;                                                             \
  }

PARSE_ENUM(hs_op_kind_parse, hs_op_kind_t, op_kind_names)
PARSE_ENUM(hs_tp_split_parse, hs_tp_split_t, tp_split_names)
PARSE_ENUM(hs_arch_parse, hs_arch_t, arch_names)
PARSE_ENUM(hs_act_parse, hs_act_t, act_names)
PARSE_ENUM(hs_norm_parse, hs_norm_t, norm_names)

/* ---- lifetime ------------------------------------------------------------ */

void hs_transformer_cfg_init(hs_transformer_cfg_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  hs_strlcpy(cfg->name, "gpt2", sizeof(cfg->name));
  cfg->arch = HS_ARCH_DECODER;
  cfg->layers = 12;
  cfg->hidden = 768;
  cfg->heads = 12;
  cfg->kv_heads = 12;
  cfg->ffn = 3072;
  cfg->vocab = 50257;
  cfg->seq_len = 1024;
  cfg->max_positions = 1024;
  cfg->act = HS_ACT_GELU;
  cfg->norm = HS_NORM_LAYERNORM;
  cfg->bias = true;
  cfg->tied_embeddings = true;
  cfg->lm_head = true;
  cfg->dtype = HS_DTYPE_BF16;
}

void hs_model_init(hs_model_t *m)
{
  if (m)
    memset(m, 0, sizeof(*m));
}

void hs_model_destroy(hs_model_t *m)
{
  if (!m)
    return;
  hs_free(m->ops);
  memset(m, 0, sizeof(*m));
}

hs_status_t hs_model_copy(const hs_model_t *src, hs_model_t *dst, hs_error_t *err)
{
  hs_model_init(dst);
  if (!src)
    return hs_error_set(err, HS_EINVAL, "hs_model_copy: source model is NULL");
  hs_op_t *ops = NULL;
  if (src->n_ops > 0) {
    ops = hs_calloc(src->n_ops, sizeof(*ops));
    if (!ops)
      return hs_error_set(err, HS_ENOMEM, "%s: out of memory copying %zu ops", src->name,
                          src->n_ops);
    memcpy(ops, src->ops, src->n_ops * sizeof(*ops));
  }
  *dst = *src;
  dst->ops = ops;
  return HS_OK;
}

/* ---- accounting ------------------------------------------------------------ */

static void add_op(hs_model_totals_t *t, const hs_op_t *op)
{
  t->params += op->params;
  t->fwd_flops += op->fwd_flops;
  t->bwd_flops += op->bwd_flops;
  t->saved_bytes += op->saved_bytes;
  t->saved_bytes_selective += op->saved_bytes_selective;
}

void hs_model_totals(const hs_model_t *m, size_t first, size_t last, hs_model_totals_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!m || !m->ops)
    return;
  if (last > m->n_ops)
    last = m->n_ops;
  for (size_t i = first; i < last; i++)
    add_op(out, &m->ops[i]);
}

void hs_model_layer_totals(const hs_model_t *m, int32_t layer, hs_model_totals_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!m || !m->ops)
    return;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].layer == layer)
      add_op(out, &m->ops[i]);
}

int64_t hs_model_layers(const hs_model_t *m)
{
  if (!m)
    return 0;
  if (m->from_generator)
    return m->cfg.layers;
  int64_t max_layer = -1;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].layer > max_layer)
      max_layer = m->ops[i].layer;
  return max_layer + 1;
}

double hs_model_kv_sample_bytes(const hs_model_t *m, const hs_op_t *op, int32_t tp)
{
  const hs_transformer_cfg_t *c = &m->cfg;
  if (!m->from_generator || c->heads <= 0)
    return op->saved_bytes_selective * 2.0 / 3.0 / (tp > 1 ? tp : 1);
  double kvh = (double)(c->kv_heads > 0 ? c->kv_heads : c->heads);
  double per_rank = tp > 1 ? (kvh >= tp ? kvh / tp : 1.0) : kvh;
  double head_dim = (double)c->hidden / (double)c->heads;
  return 2.0 * (double)m->seq_len * per_rank * head_dim * hs_dtype_bytes(m->dtype);
}

void hs_model_flops(const hs_model_t *m, double batch, hs_model_flops_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!m || !m->ops)
    return;
  double fb = 0.0, recompute = 0.0;
  for (size_t i = 0; i < m->n_ops; i++) {
    const hs_op_t *op = &m->ops[i];
    fb += op->fwd_flops + op->bwd_flops;
    /* Full recomputation replays the forward of every transformer block;
     * embedding, head and loss keep their activations (as Megatron does). */
    if (op->layer >= 0)
      recompute += op->fwd_flops;
  }
  out->fwd_bwd = batch * fb;
  out->fwd_bwd_recompute = batch * (fb + recompute);
}

/* ---- summary --------------------------------------------------------------- */

/* Formats a count as "6.74 B" / "124.4 M" / "1234". */
static const char *fmt_count(double x, char *buf, size_t n)
{
  if (x >= 1e12)
    snprintf(buf, n, "%.2f T", x / 1e12);
  else if (x >= 1e9)
    snprintf(buf, n, "%.2f B", x / 1e9);
  else if (x >= 1e6)
    snprintf(buf, n, "%.1f M", x / 1e6);
  else if (x >= 1e3)
    snprintf(buf, n, "%.1f K", x / 1e3);
  else
    snprintf(buf, n, "%.0f", x);
  return buf;
}

static const char *fmt_flops(double x, char *buf, size_t n)
{
  if (x >= 1e15)
    snprintf(buf, n, "%.2f PFLOP", x / 1e15);
  else if (x >= 1e12)
    snprintf(buf, n, "%.2f TFLOP", x / 1e12);
  else if (x >= 1e9)
    snprintf(buf, n, "%.2f GFLOP", x / 1e9);
  else if (x >= 1e6)
    snprintf(buf, n, "%.2f MFLOP", x / 1e6);
  else
    snprintf(buf, n, "%.0f FLOP", x);
  return buf;
}

void hs_model_print(const hs_model_t *m, FILE *out)
{
  if (!m || !out)
    return;
  hs_model_totals_t all, layer0;
  hs_model_flops_t fl;
  hs_model_totals(m, 0, m->n_ops, &all);
  hs_model_layer_totals(m, 0, &layer0);
  hs_model_flops(m, 1.0, &fl);
  double tokens = m->seq_len > 0 ? (double)m->seq_len : 1.0;
  char a[32], b[32], c[32], d[32];

  fprintf(out, "model %s\n", m->name);
  if (m->source[0])
    fprintf(out, "  source            %s\n", m->source);
  if (m->from_generator) {
    const hs_transformer_cfg_t *g = &m->cfg;
    fprintf(out, "  architecture      %s, %s, %s, %s%s%s%s\n", hs_arch_name(g->arch),
            hs_act_name(g->act), hs_norm_name(g->norm),
            g->max_positions > 0 ? "learned positions" : "rotary positions",
            g->tied_embeddings ? ", tied embeddings" : "", g->bias ? ", biases" : "",
            g->no_dropout ? ", no dropout" : "");
    fprintf(out, "  layers %lld, hidden %lld, heads %lld (kv %lld), ffn %lld, vocab %lld\n",
            (long long)g->layers, (long long)g->hidden, (long long)g->heads,
            (long long)g->kv_heads, (long long)g->ffn, (long long)g->vocab);
    if (g->experts > 1)
      fprintf(out, "  experts           %lld, top-%lld per token\n", (long long)g->experts,
              (long long)g->topk);
  } else {
    fprintf(out, "  explicit op list, %lld blocks\n", (long long)hs_model_layers(m));
  }
  fprintf(out, "  seq_len %lld, dtype %s, %zu ops\n", (long long)m->seq_len,
          hs_dtype_name(m->dtype), m->n_ops);
  fprintf(out, "  parameters        %s (%.0f)\n", fmt_count(all.params, a, sizeof a), all.params);
  fprintf(out, "  FLOPs per token   %s fwd+bwd, %s with full recomputation\n",
          fmt_flops(fl.fwd_bwd / tokens, b, sizeof b),
          fmt_flops(fl.fwd_bwd_recompute / tokens, c, sizeof c));
  fprintf(out, "  training state    %s (%.0f B/param: bf16 weights and grads, fp32 Adam)\n",
          hs_fmt_bytes(all.params * HS_ADAM_STATE_BYTES_PER_PARAM, d, sizeof d),
          HS_ADAM_STATE_BYTES_PER_PARAM);
  fprintf(out, "  activations       %s per sample per layer, %s with selective recomputation\n",
          hs_fmt_bytes(layer0.saved_bytes, a, sizeof a),
          hs_fmt_bytes(layer0.saved_bytes_selective, b, sizeof b));
  fprintf(out, "                    %s per sample for the whole model (no recomputation)\n",
          hs_fmt_bytes(all.saved_bytes, c, sizeof c));
}
