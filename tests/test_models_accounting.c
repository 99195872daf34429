/*
 * test_models_accounting.c - the transformer generator against independent
 * truths: published parameter counts (HF num_parameters(), papers), the
 * closed-form parameter formula, Megatron-LM's FLOP formula and Korthikanti
 * et al.'s activation formula. Expected values are written out here, never
 * taken from the code under test.
 */
#include "hs_json.h"
#include "hs_models.h"
#include "hs_test.h"
#include "sim_fixture.h"

#include <cjson/cJSON.h>
#include <string.h>

static hs_transformer_cfg_t llama_cfg(int64_t l, int64_t h, int64_t a, int64_t kv, int64_t f,
                                      int64_t v)
{
  hs_transformer_cfg_t c;
  hs_transformer_cfg_init(&c);
  c.layers = l;
  c.hidden = h;
  c.heads = a;
  c.kv_heads = kv;
  c.ffn = f;
  c.vocab = v;
  c.seq_len = 4096;
  c.max_positions = 0;
  c.act = HS_ACT_SWIGLU;
  c.norm = HS_NORM_RMSNORM;
  c.bias = false;
  c.tied_embeddings = false;
  return c;
}

static double params_of(const hs_transformer_cfg_t *c)
{
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_model_from_transformer(c, &m, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_model_totals_t t;
  hs_model_totals(&m, 0, m.n_ops, &t);
  hs_model_destroy(&m);
  return t.params;
}

static double catalog_params(const char *name, hs_model_t *keep)
{
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_model_load(name, 0, &m, &err);
  CHECK_MSG(st == HS_OK, "%s: %s", name, err.msg);
  hs_model_totals_t t;
  hs_model_totals(&m, 0, m.n_ops, &t);
  if (keep)
    *keep = m;
  else
    hs_model_destroy(&m);
  return t.params;
}

/* ---- parameters ------------------------------------------------------------ */

static void test_llama_params(void)
{
  /* HF num_parameters(): Llama-2-7B, Llama-2-70B, Llama-3-8B. */
  hs_transformer_cfg_t c = llama_cfg(32, 4096, 32, 32, 11008, 32000);
  CHECK_EQ_INT(params_of(&c), 6738415616LL);
  c = llama_cfg(80, 8192, 64, 8, 28672, 32000);
  CHECK_EQ_INT(params_of(&c), 68976648192LL);
  c = llama_cfg(32, 4096, 32, 8, 14336, 128256);
  CHECK_EQ_INT(params_of(&c), 8030261248LL);
  /* and the shipped catalog entries */
  CHECK_EQ_INT(catalog_params("llama2-7b", NULL), 6738415616LL);
  CHECK_EQ_INT(catalog_params("llama2-13b", NULL), 13015864320LL);
  CHECK_EQ_INT(catalog_params("llama2-70b", NULL), 68976648192LL);
  CHECK_EQ_INT(catalog_params("llama3-8b", NULL), 8030261248LL);
  CHECK_EQ_INT(catalog_params("llama3-70b", NULL), 70553706496LL);
}

static void test_mixtral_params(void)
{
  hs_transformer_cfg_t c = llama_cfg(32, 4096, 32, 8, 14336, 32000);
  c.experts = 8;
  c.topk = 2;
  /* HF: Mixtral-8x7B has 46,702,792,704 parameters. */
  CHECK_EQ_INT(params_of(&c), 46702792704LL);
  CHECK_EQ_INT(catalog_params("mixtral-8x7b", NULL), 46702792704LL);
}

/* GPT-3 with learned positions, biases and tied embeddings, closed form:
 * V·h + s·h + l·(12h² + 13h) + 2h. */
static double gpt_params_formula(double l, double h, double s, double v)
{
  return v * h + s * h + l * (12.0 * h * h + 13.0 * h) + 2.0 * h;
}

static void test_gpt3_params(void)
{
  hs_transformer_cfg_t c = fx_gpt_cfg("gpt3-175b", 96, 12288, 96, 2048);
  double p = params_of(&c);
  CHECK_REL(p, 174.6e9, 1e-3); /* Brown et al. 2020: 175B; Megatron: 174.6B */
  CHECK_REL(p, gpt_params_formula(96, 12288, 2048, 51200), 1e-15);
  static const struct {
    const char *name;
    double l, h;
  } sizes[] = {{"gpt3-1.3b", 24, 2048}, {"gpt3-2.7b", 32, 2560}, {"gpt3-6.7b", 32, 4096},
               {"gpt3-13b", 40, 5120},  {"gpt3-175b", 96, 12288}};
  for (size_t i = 0; i < HS_ARRAY_LEN(sizes); i++)
    CHECK_REL(catalog_params(sizes[i].name, NULL),
              gpt_params_formula(sizes[i].l, sizes[i].h, 2048, 51200), 1e-15);
  /* GPT-2 small (HF GPT2LMHeadModel): 124,439,808. */
  hs_transformer_cfg_t g;
  hs_transformer_cfg_init(&g);
  CHECK_EQ_INT(params_of(&g), 124439808LL);
}

static hs_transformer_cfg_t bert_cfg(int64_t l, int64_t h, int64_t a)
{
  hs_transformer_cfg_t c;
  hs_transformer_cfg_init(&c);
  c.arch = HS_ARCH_ENCODER;
  c.layers = l;
  c.hidden = h;
  c.heads = a;
  c.kv_heads = a;
  c.ffn = 4 * h;
  c.vocab = 30522;
  c.seq_len = 512;
  c.max_positions = 512;
  c.type_vocab = 2;
  c.lm_head = false;
  c.pooler = true;
  return c;
}

static void test_bert_params(void)
{
  /* HF BertModel (with pooler): bert-large 335,141,888, bert-base 109,482,240. */
  hs_transformer_cfg_t c = bert_cfg(24, 1024, 16);
  CHECK_EQ_INT(params_of(&c), 335141888LL);
  c = bert_cfg(12, 768, 12);
  CHECK_EQ_INT(params_of(&c), 109482240LL);
  /* BertForMaskedLM: no pooler, MLM head (dense h² + h, LayerNorm 2h, tied
   * decoder with a vocab bias): 108,891,648 + 590,592 + 1,536 + 30,522. */
  c.pooler = false;
  c.lm_head = true;
  CHECK_EQ_INT(params_of(&c), 109514298LL);
  /* Catalog BERTs model pre-training: pooler and MLM head (no NSP head). */
  double h = 1024, v = 30522;
  CHECK_EQ_INT(catalog_params("bert-large", NULL), 335141888LL + (h * h + h + 2 * h + v));
  h = 768;
  CHECK_EQ_INT(catalog_params("bert-base", NULL), 109482240LL + (h * h + h + 2 * h + v));
}

/* ---- FLOPs -------------------------------------------------------------------- */

static void check_megatron_flops(int64_t l, int64_t h, int64_t a, double B)
{
  double s = 2048, V = 51200, L = (double)l, H = (double)h;
  hs_transformer_cfg_t c = fx_gpt_cfg("gpt", l, h, a, 2048);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_OK);
  hs_model_flops_t f;
  hs_model_flops(&m, B, &f);
  /* Narayanan et al. 2021 (Megatron-LM), with full recomputation. */
  double megatron = 96.0 * B * s * L * H * H * (1.0 + s / (6.0 * H) + V / (16.0 * L * H));
  /* Without recomputation: 3 x forward. */
  double plain = 72.0 * B * s * L * H * H * (1.0 + s / (6.0 * H)) + 6.0 * B * s * H * V;
  CHECK_REL(f.fwd_bwd_recompute, megatron, 0.01);
  CHECK_REL(f.fwd_bwd, plain, 0.01);
  /* Memory-bound ops make up less than 1% but are not free. */
  CHECK(f.fwd_bwd > plain);
  hs_model_destroy(&m);
}

static void test_megatron_flops(void)
{
  check_megatron_flops(96, 12288, 96, 1);  /* GPT-3 175B */
  check_megatron_flops(96, 12288, 96, 1536);
  check_megatron_flops(24, 2048, 16, 8);   /* GPT-3 1.3B */
  check_megatron_flops(32, 4096, 32, 4);   /* GPT-3 6.7B */
}

/* GEMM shapes agree with the FLOPs; attention is 4·s²·h also with GQA. */
static void test_gemm_shapes(void)
{
  hs_transformer_cfg_t c = llama_cfg(2, 8192, 64, 8, 28672, 32000);
  c.seq_len = 1024;
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_OK);
  double s = 1024, h = 8192;
  for (size_t i = 0; i < m.n_ops; i++) {
    const hs_op_t *op = &m.ops[i];
    double prod = 2.0 * op->gemm_m * op->gemm_n * op->gemm_k * op->gemm_batch;
    if (op->kind == HS_OP_GEMM) {
      CHECK_REL(op->fwd_flops, prod, 1e-15);
      CHECK_REL(op->bwd_flops, 2.0 * op->fwd_flops, 1e-15);
      CHECK_EQ_INT(op->gemm_m, 1024);
    } else if (op->kind == HS_OP_ATTENTION) {
      CHECK_REL(op->fwd_flops, 2.0 * prod, 1e-15);
      CHECK_REL(op->fwd_flops, 4.0 * s * s * h, 1e-15);
      CHECK_EQ_INT(op->gemm_batch, 64);
      CHECK_EQ_INT(op->gemm_k, 128);
    }
  }
  /* qkv with 8 KV heads: N = h + 2·8·128 */
  CHECK_EQ_INT(m.ops[2].gemm_n, 8192 + 2 * 8 * 128);
  CHECK_EQ_INT(m.ops[2].gemm_k, 8192);
  /* fc1 fused gate+up: N = 2·ffn */
  CHECK(strcmp(m.ops[7].name, "layers.0.fc1") == 0);
  CHECK_EQ_INT(m.ops[7].gemm_n, 2 * 28672);
  CHECK_EQ_INT(m.ops[9].gemm_k, 28672);
  hs_model_destroy(&m);
}

/* ---- op sequence ----------------------------------------------------------- */

static void test_op_sequence(void)
{
  hs_transformer_cfg_t c = fx_gpt_cfg("gpt", 3, 1024, 16, 1024);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_OK);
  CHECK_EQ_INT(m.n_ops, 1 + 3 * 10 + 3);
  static const struct {
    const char *suffix;
    hs_op_kind_t kind;
    hs_tp_split_t split;
    bool ar_fwd, ar_bwd;
  } layer[] = {
      {"ln1", HS_OP_NORM, HS_TP_REPLICATE, false, false},
      {"qkv", HS_OP_GEMM, HS_TP_COLUMN, false, true},
      {"attn", HS_OP_ATTENTION, HS_TP_HEADS, false, false},
      {"out_proj", HS_OP_GEMM, HS_TP_ROW, true, false},
      {"resid1", HS_OP_ELEMENTWISE, HS_TP_REPLICATE, false, false},
      {"ln2", HS_OP_NORM, HS_TP_REPLICATE, false, false},
      {"fc1", HS_OP_GEMM, HS_TP_COLUMN, false, true},
      {"act", HS_OP_ELEMENTWISE, HS_TP_COLUMN, false, false},
      {"fc2", HS_OP_GEMM, HS_TP_ROW, true, false},
      {"resid2", HS_OP_ELEMENTWISE, HS_TP_REPLICATE, false, false},
  };
  CHECK(strcmp(m.ops[0].name, "embedding") == 0 && m.ops[0].kind == HS_OP_EMBEDDING);
  CHECK(m.ops[0].tp_split == HS_TP_VOCAB && m.ops[0].layer == -1);
  for (int l = 0; l < 3; l++) {
    int fwd = 0, bwd = 0;
    for (int j = 0; j < 10; j++) {
      const hs_op_t *op = &m.ops[1 + 10 * l + j];
      char want[64];
      snprintf(want, sizeof want, "layers.%d.%s", l, layer[j].suffix);
      CHECK_MSG(strcmp(op->name, want) == 0, "%s vs %s", op->name, want);
      CHECK(op->kind == layer[j].kind);
      CHECK(op->tp_split == layer[j].split);
      CHECK(op->tp_allreduce_fwd == layer[j].ar_fwd);
      CHECK(op->tp_allreduce_bwd == layer[j].ar_bwd);
      CHECK_EQ_INT(op->layer, l);
      fwd += op->tp_allreduce_fwd;
      bwd += op->tp_allreduce_bwd;
    }
    CHECK_EQ_INT(fwd, 2); /* Megatron: 2 all-reduces forward, 2 backward per layer */
    CHECK_EQ_INT(bwd, 2);
  }
  const hs_op_t *tail = &m.ops[31];
  CHECK(strcmp(tail[0].name, "final_norm") == 0 && tail[0].kind == HS_OP_NORM);
  CHECK(strcmp(tail[1].name, "lm_head") == 0 && tail[1].kind == HS_OP_GEMM);
  CHECK(tail[1].tp_split == HS_TP_VOCAB && tail[1].gemm_n == 51200);
  CHECK(tail[1].params == 0); /* tied */
  CHECK(strcmp(tail[2].name, "loss") == 0 && tail[2].kind == HS_OP_LOSS);
  CHECK_EQ_INT(hs_model_layers(&m), 3);

  /* totals over [0, n) = sum of per-layer totals + the rest */
  hs_model_totals_t all, part, l0;
  hs_model_totals(&m, 0, m.n_ops, &all);
  hs_model_totals(&m, 0, 1, &part);
  double p = part.params;
  for (int l = 0; l < 3; l++) {
    hs_model_layer_totals(&m, l, &l0);
    p += l0.params;
  }
  hs_model_totals(&m, 31, 1000, &part); /* last clamps */
  p += part.params;
  CHECK_REL(p, all.params, 1e-15);
  hs_model_destroy(&m);
}

static void test_moe_accounting(void)
{
  /* Mixtral-like, small. */
  hs_transformer_cfg_t c = llama_cfg(2, 512, 8, 4, 1792, 1000);
  c.experts = 8;
  c.topk = 2;
  c.seq_len = 256;
  hs_model_t moe, dense;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &moe, &err) == HS_OK);
  hs_transformer_cfg_t d = c;
  d.experts = 0;
  d.topk = 0;
  CHECK(hs_model_from_transformer(&d, &dense, &err) == HS_OK);
  const hs_op_t *router = NULL, *experts = NULL;
  for (size_t i = 0; i < moe.n_ops; i++) {
    if (moe.ops[i].layer != 0)
      continue;
    if (moe.ops[i].kind == HS_OP_MOE_ROUTER)
      router = &moe.ops[i];
    if (moe.ops[i].kind == HS_OP_MOE_EXPERT)
      experts = &moe.ops[i];
  }
  CHECK(router && experts);
  if (!router || !experts)
    goto done;
  double s = 256, h = 512, f = 1792;
  /* expert params = experts x SwiGLU FFN params (3hf); router h x E */
  CHECK_EQ_INT(experts->params, 8 * 3 * h * f);
  CHECK_EQ_INT(router->params, h * 8);
  /* expert GEMM FLOPs = topk x dense FFN GEMM FLOPs (6hf per token) */
  double gemm_fwd = 2.0 * 6.0 * h * f * s;
  CHECK(experts->fwd_flops >= gemm_fwd && experts->fwd_flops < gemm_fwd * 1.01);
  CHECK_EQ_INT(experts->experts, 8);
  CHECK_EQ_INT(experts->topk, 2);
  CHECK(experts->tp_split == HS_TP_EXPERT);
  CHECK(experts->shardable & HS_SHARD_EXPERTS);
  /* the MoE layer differs from the dense one by 7 extra experts' FFN + router */
  hs_model_totals_t tm, td;
  hs_model_layer_totals(&moe, 1, &tm);
  hs_model_layer_totals(&dense, 1, &td);
  CHECK_EQ_INT(tm.params - td.params, 7 * 3 * h * f + h * 8);
done:
  hs_model_destroy(&moe);
  hs_model_destroy(&dense);
}

/* Squared ReLU (Nemotron-4): parameters as the report states them, and the
 * act op as the two kernels Megatron-Core runs (relu, then pow). */
static void test_squared_relu(void)
{
  /* Nemotron-4 340B report (arXiv:2406.11704): 9.4B embedding and 331.6B
   * non-embedding parameters. Closed form with h = 18432, 8 KV heads of
   * 192, f = 4h, no biases, two LayerNorms of 2h per layer: */
  double h = 18432, kvd = 8 * 192, f = 73728, V = 256000, l = 96;
  double layer = h * (h + 2 * kvd) + h * h + 2 * h * f + 4 * h;
  double want = 2 * V * h + l * layer + 2 * h;
  hs_model_t m;
  double p = catalog_params("nemotron-4-340b", &m);
  CHECK_EQ_INT(p, want);
  CHECK_REL(2 * V * h, 9.4e9, 0.005);    /* the report's 9.4B, to its rounding */
  CHECK_REL(p - 2 * V * h, 331.6e9, 2e-4); /* and its 331.6B */
  CHECK(m.cfg.act == HS_ACT_RELU2 && strcmp(hs_act_name(m.cfg.act), "relu2") == 0);
  hs_model_destroy(&m);

  /* the act op: relu2 against relu on the same shape */
  hs_transformer_cfg_t c = fx_gpt_cfg("gpt", 2, 1024, 16, 1024);
  c.act = HS_ACT_RELU;
  hs_model_t r1, r2;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &r1, &err) == HS_OK);
  c.act = HS_ACT_RELU2;
  CHECK(hs_model_from_transformer(&c, &r2, &err) == HS_OK);
  double s = 1024, ff = 4096, d = 2; /* fx_gpt_cfg: ffn 4h, bf16 */
  CHECK_EQ_INT(r1.n_ops, r2.n_ops);
  for (size_t i = 0; i < r2.n_ops; i++) {
    const hs_op_t *a = &r1.ops[i], *b = &r2.ops[i];
    if (strstr(b->name, ".act")) {
      CHECK_EQ_INT(b->fwd_flops, 2 * s * ff);         /* max(x, 0) and x² */
      CHECK_EQ_INT(b->fwd_mem_bytes, 2 * 2 * s * ff * d); /* two passes, each read + write */
      CHECK_EQ_INT(a->fwd_mem_bytes, 2 * s * ff * d);     /* relu: one pass */
      CHECK_EQ_INT(b->bwd_mem_bytes, 2 * b->fwd_mem_bytes);
      CHECK_EQ_INT(b->saved_bytes, s * ff * d);            /* one s·f tensor, as relu */
      CHECK_EQ_INT(a->saved_bytes, b->saved_bytes);
    } else {
      CHECK(a->fwd_flops == b->fwd_flops && a->fwd_mem_bytes == b->fwd_mem_bytes &&
            a->saved_bytes == b->saved_bytes && a->params == b->params);
    }
  }
  hs_model_destroy(&r1);
  hs_model_destroy(&r2);
  /* parsed by name, an unknown one refused */
  hs_act_t act;
  CHECK(hs_act_parse("relu2", &act) == HS_OK && act == HS_ACT_RELU2);
  CHECK(hs_act_parse("relu3", &act) == HS_EINVAL);
}

/* ---- activations ------------------------------------------------------------- */

static void test_activations_korthikanti(void)
{
  /* GPT-3 175B layer: s = 2048, h = 12288, a = 96, 2-byte activations. */
  double s = 2048, h = 12288, a = 96, t = 8;
  hs_transformer_cfg_t c = fx_gpt_cfg("gpt3", 2, 12288, 96, 2048);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_OK);
  hs_model_totals_t l1;
  hs_model_layer_totals(&m, 1, &l1);
  CHECK_REL(l1.saved_bytes, 34.0 * s * h + 5.0 * a * s * s, 1e-15);
  CHECK_REL(l1.saved_bytes_selective, 34.0 * s * h, 1e-15);
  /* Tensor parallel without sequence parallelism: s·b·h(10 + 24/t + 5as/(ht)). */
  double tp = 0.0;
  for (size_t i = 0; i < m.n_ops; i++)
    if (m.ops[i].layer == 1)
      tp += m.ops[i].saved_tp_sharded ? m.ops[i].saved_bytes / t : m.ops[i].saved_bytes;
  CHECK_REL(tp, s * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t)), 1e-15);
  hs_model_destroy(&m);

  /* fp32: tensors at 4 bytes, dropout masks stay 1 byte:
   * (34 - 2)·2·sh + 2·sh and (5 - 1)·2·as² + as². */
  c.dtype = HS_DTYPE_FP32;
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_OK);
  hs_model_layer_totals(&m, 0, &l1);
  CHECK_REL(l1.saved_bytes, 66.0 * s * h + 9.0 * a * s * s, 1e-15);
  CHECK_REL(l1.saved_bytes_selective, 66.0 * s * h, 1e-15);
  hs_model_destroy(&m);

  /* SwiGLU saves gate and up (4·s·f instead of 2·s·f). Llama-2-7B, s = 4096. */
  hs_transformer_cfg_t l = llama_cfg(1, 4096, 32, 32, 11008, 32000);
  CHECK(hs_model_from_transformer(&l, &m, &err) == HS_OK);
  hs_model_layer_totals(&m, 0, &l1);
  double f = 11008;
  s = 4096, h = 4096, a = 32;
  /* ln1 2 + qkv in 2 + QKV 6 + out in 2 + mask 1 + ln2 2 + fc1 in 2 + mask 1 = 18 sh;
   * act in 4sf + fc2 in 2sf */
  CHECK_REL(l1.saved_bytes, 18.0 * s * h + 6.0 * s * f + 5.0 * a * s * s, 1e-15);
  hs_model_destroy(&m);
}

/* Trained without dropout (Llama, MPT): Korthikanti's count minus the two
 * residual masks (sh each), the attention mask (as²) and the dropout output
 * (2as²): 32sh + 2as² per block, 32sh selective; the embedding saves nothing;
 * the attention's memory traffic loses the dropout pass (2 x 2as² + as²). */
static void test_activations_no_dropout(void)
{
  double s = 2048, h = 12288, a = 96;
  hs_transformer_cfg_t c = fx_gpt_cfg("gpt3", 2, 12288, 96, 2048);
  hs_model_t with, without;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &with, &err) == HS_OK);
  c.no_dropout = true;
  CHECK(hs_model_from_transformer(&c, &without, &err) == HS_OK);
  hs_model_totals_t l1;
  hs_model_layer_totals(&without, 1, &l1);
  CHECK_REL(l1.saved_bytes, 32.0 * s * h + 2.0 * a * s * s, 1e-15);
  CHECK_REL(l1.saved_bytes_selective, 32.0 * s * h, 1e-15);
  CHECK_EQ_INT(with.n_ops, without.n_ops);
  for (size_t i = 0; i < with.n_ops; i++) {
    const hs_op_t *x = &with.ops[i], *y = &without.ops[i];
    CHECK(x->fwd_flops == y->fwd_flops && x->params == y->params);
    if (x->kind == HS_OP_EMBEDDING)
      CHECK(y->saved_bytes == 0.0 && x->saved_bytes == s * h);
    if (x->kind == HS_OP_ATTENTION)
      CHECK_REL(x->fwd_mem_bytes - y->fwd_mem_bytes, 2.0 * 2.0 * a * s * s + a * s * s, 1e-12);
    if (x->kind == HS_OP_ELEMENTWISE && strstr(x->name, "resid") != NULL)
      CHECK_REL(x->fwd_mem_bytes - y->fwd_mem_bytes, s * h, 1e-12);
  }
  hs_model_destroy(&with);
  hs_model_destroy(&without);
}

/* ---- JSON views ---------------------------------------------------------------- */

static void test_ops_json_roundtrip(void)
{
  hs_model_t a, b;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_load("mixtral-8x7b", 512, &a, &err) == HS_OK);
  cJSON *j = hs_model_to_ops_json(&a);
  CHECK(j != NULL);
  char *text = cJSON_Print(j);
  hs_json_free(j);
  CHECK(hs_model_parse_json(text, "roundtrip.json", 0, &b, &err) == HS_OK);
  cJSON_free(text);
  CHECK_EQ_INT(b.n_ops, a.n_ops);
  CHECK(!b.from_generator);
  CHECK_EQ_INT(b.seq_len, 512);
  for (size_t i = 0; i < a.n_ops && i < b.n_ops; i++) {
    const hs_op_t *x = &a.ops[i], *y = &b.ops[i];
    CHECK(strcmp(x->name, y->name) == 0 && x->kind == y->kind && x->layer == y->layer);
    CHECK(x->fwd_flops == y->fwd_flops && x->bwd_flops == y->bwd_flops);
    CHECK(x->fwd_mem_bytes == y->fwd_mem_bytes && x->bwd_mem_bytes == y->bwd_mem_bytes);
    CHECK(x->params == y->params && x->out_bytes == y->out_bytes);
    CHECK(x->saved_bytes == y->saved_bytes && x->saved_bytes_selective == y->saved_bytes_selective);
    CHECK(x->saved_tp_sharded == y->saved_tp_sharded);
    CHECK(x->gemm_m == y->gemm_m && x->gemm_n == y->gemm_n && x->gemm_k == y->gemm_k);
    CHECK(x->gemm_batch == y->gemm_batch && x->tp_split == y->tp_split);
    CHECK(x->tp_allreduce_fwd == y->tp_allreduce_fwd && x->tp_allreduce_bwd == y->tp_allreduce_bwd);
    CHECK(x->shardable == y->shardable && x->experts == y->experts && x->topk == y->topk);
  }
  CHECK_EQ_INT(hs_model_layers(&b), 32);
  hs_model_flops_t fa, fb;
  hs_model_flops(&a, 3, &fa);
  hs_model_flops(&b, 3, &fb);
  CHECK(fa.fwd_bwd == fb.fwd_bwd && fa.fwd_bwd_recompute == fb.fwd_bwd_recompute);
  hs_model_destroy(&a);
  hs_model_destroy(&b);
}

static void test_summary_json(void)
{
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_load("gpt3-175b", 0, &m, &err) == HS_OK);
  cJSON *j = hs_model_to_json(&m);
  CHECK(j != NULL);
  static const char *const keys[] = {"name", "params", "layers", "hidden", "heads", "kv_heads",
                                     "ffn", "vocab", "seq_len", "dtype", "flops_per_token_fwd_bwd",
                                     "flops_per_token_fwd_bwd_recompute", "train_state_bytes",
                                     "activation_bytes_per_sample", "n_ops"};
  for (size_t i = 0; j && i < HS_ARRAY_LEN(keys); i++)
    CHECK_MSG(cJSON_GetObjectItemCaseSensitive(j, keys[i]) != NULL, "missing key %s", keys[i]);
  if (j) {
    double s = 2048, h = 12288, a = 96, l = 96, V = 51200;
    double p = cJSON_GetObjectItemCaseSensitive(j, "params")->valuedouble;
    CHECK_REL(p, gpt_params_formula(l, h, s, V), 1e-15);
    CHECK_REL(cJSON_GetObjectItemCaseSensitive(j, "train_state_bytes")->valuedouble, 16.0 * p, 1e-15);
    CHECK_REL(cJSON_GetObjectItemCaseSensitive(j, "activation_bytes_per_sample")->valuedouble,
              34.0 * s * h + 5.0 * a * s * s, 1e-15);
    /* per token, with recomputation: Megatron's 96·s·l·h²(...) / s */
    CHECK_REL(cJSON_GetObjectItemCaseSensitive(j, "flops_per_token_fwd_bwd_recompute")->valuedouble,
              96.0 * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h)), 0.01);
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(j, "layers")->valuedouble, 96);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(j, "dtype")->valuestring, "bf16") == 0);
  }
  hs_json_free(j);

  FILE *f = tmpfile();
  CHECK(f != NULL);
  if (f) {
    hs_model_print(&m, f);
    rewind(f);
    char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    CHECK_CONTAINS(buf, "gpt3-175b");
    CHECK_CONTAINS(buf, "parameters");
    CHECK_CONTAINS(buf, "layers 96, hidden 12288, heads 96");
  }
  hs_model_destroy(&m);
}

static void test_copy_and_destroy(void)
{
  hs_model_t a, b, z;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_load("hap-bert-moe", 0, &a, &err) == HS_OK);
  CHECK(hs_model_copy(&a, &b, &err) == HS_OK);
  CHECK(b.ops != a.ops && b.n_ops == a.n_ops);
  CHECK(memcmp(a.ops, b.ops, a.n_ops * sizeof(hs_op_t)) == 0);
  hs_model_destroy(&a);
  CHECK(a.ops == NULL && a.n_ops == 0);
  hs_model_destroy(&a); /* twice is fine */
  hs_model_init(&z);
  hs_model_destroy(&z);
  hs_model_destroy(NULL);
  hs_model_totals_t t;
  hs_model_totals(&z, 0, 10, &t);
  CHECK(t.params == 0.0);
  hs_model_flops_t fl;
  hs_model_flops(NULL, 1, &fl);
  CHECK(fl.fwd_bwd == 0.0);
  hs_model_destroy(&b);
}

static void test_catalog(void)
{
  char **names = NULL;
  size_t n = 0;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_catalog_list(&names, &n, &err) == HS_OK);
  static const char *const want[] = {
      "bert-base",   "bert-large",  "gpt3-1.3b",  "gpt3-13b",    "gpt3-175b",   "gpt3-2.7b",
      "gpt3-6.7b",   "hap-bert-base", "hap-bert-moe", "hap-vit", "llama2-13b", "llama2-70b",
      "llama2-7b",   "llama3-70b",  "llama3-8b",  "mixtral-8x7b", "nemotron-4-340b"};
  for (size_t i = 0; i + 1 < n; i++)
    CHECK(strcmp(names[i], names[i + 1]) < 0);
  for (size_t w = 0; w < HS_ARRAY_LEN(want); w++) {
    bool found = false;
    for (size_t i = 0; i < n; i++)
      found = found || strcmp(names[i], want[w]) == 0;
    CHECK_MSG(found, "catalog lacks %s", want[w]);
  }
  /* every entry loads without warnings and says where it comes from */
  for (size_t i = 0; i < n; i++) {
    hs_model_t m;
    hs_error_init(&err);
    err.warn_fp = NULL;
    CHECK_MSG(hs_model_load(names[i], 0, &m, &err) == HS_OK, "%s", err.msg);
    CHECK_MSG(err.n_warnings == 0, "%s: %d warnings", names[i], err.n_warnings);
    CHECK_MSG(m.source[0] != '\0', "%s has no source", names[i]);
    CHECK(strcmp(m.name, names[i]) == 0);
    hs_model_destroy(&m);
  }
  hs_model_catalog_free(names, n);
  hs_model_catalog_free(NULL, 0);

  /* HAP configurations as the paper gives them */
  hs_model_t m;
  CHECK(hs_model_load("hap-bert-base", 0, &m, &err) == HS_OK);
  CHECK(m.cfg.layers == 12 && m.cfg.hidden == 768 && m.cfg.heads == 12 && m.cfg.ffn == 3072);
  CHECK(m.seq_len == 128 && m.cfg.vocab == 30522);
  hs_model_destroy(&m);
  CHECK(hs_model_load("hap-vit", 0, &m, &err) == HS_OK);
  CHECK(m.seq_len == 64 && m.cfg.vocab == 10 && m.cfg.arch == HS_ARCH_ENCODER);
  hs_model_destroy(&m);
  CHECK(hs_model_load("hap-bert-moe", 0, &m, &err) == HS_OK);
  CHECK(m.cfg.experts == 16 && m.cfg.topk == 2);
  hs_model_destroy(&m);
  /* seq_len override */
  CHECK(hs_model_load("llama3-8b", 2048, &m, &err) == HS_OK);
  CHECK_EQ_INT(m.seq_len, 2048);
  CHECK_EQ_INT(m.ops[2].gemm_m, 2048);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_llama_params);
  HS_RUN(test_mixtral_params);
  HS_RUN(test_gpt3_params);
  HS_RUN(test_bert_params);
  HS_RUN(test_megatron_flops);
  HS_RUN(test_gemm_shapes);
  HS_RUN(test_op_sequence);
  HS_RUN(test_moe_accounting);
  HS_RUN(test_squared_relu);
  HS_RUN(test_activations_korthikanti);
  HS_RUN(test_activations_no_dropout);
  HS_RUN(test_ops_json_roundtrip);
  HS_RUN(test_summary_json);
  HS_RUN(test_copy_and_destroy);
  HS_RUN(test_catalog);
  HS_TEST_END();
}
