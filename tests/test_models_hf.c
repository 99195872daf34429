/*
 * test_models_hf.c - HuggingFace config.json loading against published
 * parameter counts (the Hub's num_parameters(), model cards and papers) and
 * against closed-form arithmetic on the config fields, written out here.
 * Inputs: tests/data/models/<name>/config.json (copies of the published files).
 */
#include "hs_models.h"
#include "hs_test.h"

static const char *cfg_path(const char *name)
{
  static char buf[4096];
  const char *d = getenv("HETSIM_TEST_DATA");
  snprintf(buf, sizeof buf, "%s/models/%s/config.json", d ? d : "tests/data", name);
  return buf;
}

/* Loads tests/data/models/<name>/config.json; returns its parameter count. */
static double load_params(const char *name, int64_t seq, hs_model_t *keep)
{
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_model_load(cfg_path(name), seq, &m, &err);
  CHECK_MSG(st == HS_OK, "%s: %s", name, err.msg);
  hs_model_totals_t t;
  hs_model_totals(&m, 0, m.n_ops, &t);
  if (keep)
    *keep = m;
  else
    hs_model_destroy(&m);
  return t.params;
}

/* Llama family: q/k/v/o, SwiGLU (3·h·f), two RMSNorms per layer, final
 * RMSNorm, embedding and (untied) head. */
static double llama_formula(double L, double h, double a, double kv, double f, double V, bool tied,
                            bool qkv_bias, double E)
{
  double hd = h / a;
  double qkv = h * (h + 2 * kv * hd) + (qkv_bias ? h + 2 * kv * hd : 0);
  double mlp = E > 1 ? E * 3 * h * f + h * E : 3 * h * f;
  return L * (qkv + h * h + mlp + 2 * h) + V * h * (tied ? 1 : 2) + h;
}

/* GPT-style block with biases and LayerNorms: 4h² + 2hf + f + 9h. */
static double gpt_block(double h, double f) { return 4 * h * h + 2 * h * f + f + 9 * h; }

static void test_llama_family(void)
{
  hs_model_t m;
  CHECK_EQ_INT(load_params("llama2-7b", 0, &m), 6738415616LL);
  CHECK_EQ_INT(llama_formula(32, 4096, 32, 32, 11008, 32000, false, false, 0), 6738415616LL);
  CHECK_EQ_INT(m.seq_len, 4096); /* max_position_embeddings */
  CHECK(m.dtype == HS_DTYPE_FP16); /* torch_dtype float16 */
  CHECK(strcmp(m.name, "meta-llama/Llama-2-7b-hf") == 0);
  CHECK(m.cfg.act == HS_ACT_SWIGLU && m.cfg.norm == HS_NORM_RMSNORM && m.cfg.max_positions == 0);
  hs_model_destroy(&m);

  CHECK_EQ_INT(load_params("mistral-7b", 0, &m), 7241732096LL);
  CHECK_EQ_INT(llama_formula(32, 4096, 32, 8, 14336, 32000, false, false, 0), 7241732096LL);
  CHECK_EQ_INT(m.seq_len, 8192); /* min(32768, 8192) */
  CHECK(strcmp(m.name, "mistral-7b") == 0); /* folder name: the file has no _name_or_path */
  CHECK(m.dtype == HS_DTYPE_BF16);
  hs_model_destroy(&m);

  CHECK_EQ_INT(load_params("mixtral-8x7b", 4096, &m), 46702792704LL);
  CHECK_EQ_INT(llama_formula(32, 4096, 32, 8, 14336, 32000, false, false, 8), 46702792704LL);
  CHECK(m.cfg.experts == 8 && m.cfg.topk == 2 && m.seq_len == 4096);
  hs_model_destroy(&m);

  /* Qwen2-7B: untied head and biases on q, k, v only. */
  CHECK_EQ_INT(load_params("qwen2-7b", 0, &m), 7615616512LL);
  CHECK_EQ_INT(llama_formula(28, 3584, 28, 4, 18944, 152064, false, true, 0), 7615616512LL);
  CHECK(!m.cfg.tied_embeddings && m.cfg.qkv_bias && !m.cfg.bias);
  CHECK(strcmp(m.ops[2].name, "layers.0.qkv") == 0);
  CHECK_EQ_INT(m.ops[2].params, 3584.0 * (3584 + 2 * 4 * 128) + (3584 + 2 * 4 * 128));
  CHECK_EQ_INT(m.ops[4].params, 3584.0 * 3584); /* o_proj: no bias */
  hs_model_destroy(&m);
}

static void test_gpt2(void)
{
  hs_model_t m;
  double h = 768, V = 50257, P = 1024;
  CHECK_EQ_INT(load_params("gpt2", 0, &m), 124439808LL);
  CHECK_EQ_INT((V + P) * h + 12 * gpt_block(h, 4 * h) + 2 * h, 124439808LL);
  CHECK_EQ_INT(m.seq_len, 1024);
  CHECK_EQ_INT(m.cfg.max_positions, 1024);
  CHECK(m.cfg.tied_embeddings && m.cfg.act == HS_ACT_GELU);
  hs_model_destroy(&m);

  /* learned positions bound the sequence length */
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_load(cfg_path("gpt2"), 2048, &m, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "config.json");
  CHECK_CONTAINS(err.msg, "seq_len");
  CHECK_CONTAINS(err.msg, "2048");
  CHECK_CONTAINS(err.msg, "n_positions");
  hs_model_destroy(&m);
}

static void test_neox(void)
{
  hs_model_t m;
  /* GPT-NeoX-20B (Black et al. 2022): 20,554,567,680 parameters. */
  double h = 6144, V = 50432;
  CHECK_EQ_INT(load_params("gpt-neox-20b", 0, &m), 20554567680LL);
  CHECK_EQ_INT(2 * V * h + 44 * gpt_block(h, 4 * h) + 2 * h, 20554567680LL);
  CHECK(!m.cfg.tied_embeddings && m.cfg.max_positions == 0 && m.seq_len == 2048);
  hs_model_destroy(&m);
  /* Pythia-160M (Biderman et al. 2023, Table 1): 162,322,944. */
  h = 768, V = 50304;
  CHECK_EQ_INT(load_params("pythia-160m", 0, NULL), 162322944LL);
  CHECK_EQ_INT(2 * V * h + 12 * gpt_block(h, 4 * h) + 2 * h, 162322944LL);
}

static void test_opt(void)
{
  hs_model_t m;
  double h = 2048, f = 8192, V = 50272, P = 2048 + 2;
  CHECK_EQ_INT(load_params("opt-1.3b", 0, &m), 1315758080LL);
  CHECK_EQ_INT((V + P) * h + 24 * gpt_block(h, f) + 2 * h, 1315758080LL);
  CHECK_EQ_INT(m.cfg.max_positions, 2050); /* offset of 2 */
  CHECK_EQ_INT(m.seq_len, 2048);
  CHECK(m.cfg.act == HS_ACT_RELU && m.cfg.tied_embeddings);
  hs_model_destroy(&m);
}

static void test_bert(void)
{
  hs_model_t m;
  double h = 768, V = 30522, P = 512, T = 2;
  /* BertForMaskedLM: embeddings + LN, 12 blocks, MLM head (dense, LN, vocab
   * bias; decoder tied). HF num_parameters() = 109,514,298. */
  CHECK_EQ_INT(load_params("bert-base-uncased", 0, &m), 109514298LL);
  CHECK_EQ_INT((V + P + T) * h + 2 * h + 12 * gpt_block(h, 4 * h) + (h * h + h + 2 * h + V),
               109514298LL);
  CHECK(m.cfg.arch == HS_ARCH_ENCODER && m.cfg.lm_head && !m.cfg.pooler);
  CHECK_EQ_INT(m.seq_len, 512);
  hs_model_destroy(&m);

  /* model_type only means BertModel: with pooler, no MLM head. */
  const char *bm = "{\"model_type\": \"bert\", \"hidden_size\": 1024, \"num_hidden_layers\": 24,"
                   " \"num_attention_heads\": 16, \"intermediate_size\": 4096,"
                   " \"vocab_size\": 30522, \"max_position_embeddings\": 512, \"type_vocab_size\": 2}";
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_parse_hf_config(bm, "config.json", 128, &m, &err) == HS_OK);
  hs_model_totals_t t;
  hs_model_totals(&m, 0, m.n_ops, &t);
  CHECK_EQ_INT(t.params, 335141888LL);
  CHECK_EQ_INT(m.seq_len, 128);
  hs_model_destroy(&m);
}

/* Dropout from the configs' own probabilities: the Llama family (no
 * residual dropout in HF's code, attention_dropout 0.0) and Pythia/NeoX
 * (0.0 by default) train without it; GPT-2, OPT and BERT ship 0.1. A
 * probability outside [0, 1] is refused naming the key. */
static void test_dropout(void)
{
  static const struct {
    const char *name;
    bool no_dropout;
  } cases[] = {{"llama2-7b", true},  {"mistral-7b", true},   {"mixtral-8x7b", true},
               {"qwen2-7b", true},   {"pythia-160m", true},  {"gpt2", false},
               {"opt-1.3b", false},  {"bert-base-uncased", false}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_model_t m;
    load_params(cases[i].name, 0, &m);
    CHECK_MSG(m.cfg.no_dropout == cases[i].no_dropout, "%s", cases[i].name);
    hs_model_destroy(&m);
  }
  const char *g0 = "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 4,"
                   " \"vocab_size\": 100, \"n_positions\": 128, \"resid_pdrop\": 0.0,"
                   " \"embd_pdrop\": 0, \"attn_pdrop\": 0.0}";
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_model_parse_hf_config(g0, "g0.json", 0, &m, &err) == HS_OK, "%s", err.msg);
  CHECK(m.cfg.no_dropout);
  hs_model_destroy(&m);
  const char *bad = "{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
                    " \"num_attention_heads\": 4, \"vocab_size\": 100,"
                    " \"hidden_dropout_prob\": 1.5}";
  CHECK(hs_model_parse_hf_config(bad, "bad.json", 0, &m, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "bad.json");
  CHECK_CONTAINS(err.msg, "hidden_dropout_prob");
  CHECK_CONTAINS(err.msg, "1.5");
  hs_model_destroy(&m);
}

/* hidden_act "relu2" (squared ReLU, as Persimmon and Nemotron write it)
 * maps to relu2 on a non-gated family; an unknown name is refused naming
 * the file, the key and the value. */
static void test_relu2(void)
{
  const char *neox = "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 2,"
                     " \"hidden_size\": 64, \"num_attention_heads\": 4, \"vocab_size\": 100,"
                     " \"hidden_act\": \"relu2\"}";
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_model_parse_hf_config(neox, "n.json", 0, &m, &err) == HS_OK, "%s", err.msg);
  CHECK(m.cfg.act == HS_ACT_RELU2);
  hs_model_destroy(&m);
  const char *bad = "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 2,"
                    " \"hidden_size\": 64, \"num_attention_heads\": 4, \"vocab_size\": 100,"
                    " \"hidden_act\": \"relu3\"}";
  hs_error_init(&err);
  CHECK(hs_model_parse_hf_config(bad, "b.json", 0, &m, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "b.json: hidden_act");
  CHECK_CONTAINS(err.msg, "\"relu3\"");
  CHECK_CONTAINS(err.msg, "relu2)");
  hs_model_destroy(&m);
}

static void test_detection(void)
{
  hs_model_t m;
  hs_error_t err;
  /* architectures[0] unknown but model_type known: modelled, with a warning */
  const char *cls = "{\"architectures\": [\"LlamaForSequenceClassification\"], \"model_type\": \"llama\","
                    " \"hidden_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 512, \"vocab_size\": 1000}";
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK(hs_model_parse_hf_config(cls, "cls.json", 0, &m, &err) == HS_OK);
  CHECK_EQ_INT(err.n_warnings, 1);
  CHECK_EQ_INT(m.seq_len, 2048); /* HF's default max_position_embeddings */
  hs_model_destroy(&m);

  /* unknown architecture: names file, field, value and the supported list */
  const char *t5 = "{\"architectures\": [\"T5ForConditionalGeneration\"], \"model_type\": \"t5\","
                   " \"d_model\": 512}";
  hs_error_init(&err);
  CHECK(hs_model_parse_hf_config(t5, "t5.json", 0, &m, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "t5.json: architectures[0]");
  CHECK_CONTAINS(err.msg, "\"T5ForConditionalGeneration\"");
  CHECK_CONTAINS(err.msg, "LlamaForCausalLM");
  CHECK_CONTAINS(err.msg, "BertForMaskedLM");
  hs_model_destroy(&m);

  hs_error_init(&err);
  CHECK(hs_model_parse_hf_config("{\"model_type\": \"falcon\"}", "f.json", 0, &m, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "f.json: model_type");
  CHECK_CONTAINS(err.msg, "\"falcon\"");
  CHECK_CONTAINS(err.msg, "gpt_neox");

  /* head_dim different from hidden/heads (Mistral-NeMo 12B): q is 32·128 = 4096 wide */
  const char *nemo = "{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 5120,"
                     " \"head_dim\": 128, \"num_attention_heads\": 32, \"num_key_value_heads\": 8,"
                     " \"num_hidden_layers\": 40, \"intermediate_size\": 14336,"
                     " \"vocab_size\": 131072, \"max_position_embeddings\": 1024000,"
                     " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\"}";
  hs_error_init(&err);
  CHECK_MSG(hs_model_parse_hf_config(nemo, "nemo.json", 4096, &m, &err) == HS_OK, "%s", err.msg);
  hs_model_totals_t t;
  hs_model_totals(&m, 0, m.n_ops, &t);
  double h = 5120, q = 4096, kvd = 1024;
  double per_layer = h * (q + 2 * kvd) + q * h + 3 * h * 14336 + 2 * h;
  CHECK_EQ_INT(t.params, 40 * per_layer + 2 * 131072.0 * h + h);
  CHECK_EQ_INT(t.params, 12247782400LL);
  CHECK_REL(m.ops[3].fwd_flops, 4.0 * 4096 * 4096 * q, 1e-15); /* attention over a·head_dim */
  hs_model_destroy(&m);

  /* hs_model_load on a hetsim file path goes to the hetsim reader */
  char path[4096];
  const char *d = getenv("HETSIM_DATA");
  snprintf(path, sizeof path, "%s/models/catalog/llama2-7b.json", d ? d : ".");
  hs_error_init(&err);
  CHECK_MSG(hs_model_load(path, 0, &m, &err) == HS_OK, "%s", err.msg);
  hs_model_totals(&m, 0, m.n_ops, &t);
  CHECK_EQ_INT(t.params, 6738415616LL);
  hs_model_destroy(&m);

  /* neither catalog name nor file */
  hs_error_init(&err);
  CHECK(hs_model_load("no-such-model", 0, &m, &err) == HS_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "no-such-model");
  hs_error_init(&err);
  CHECK(hs_model_load("/nonexistent/config.json", 0, &m, &err) == HS_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "/nonexistent/config.json");
}

int main(void)
{
  HS_RUN(test_llama_family);
  HS_RUN(test_gpt2);
  HS_RUN(test_neox);
  HS_RUN(test_opt);
  HS_RUN(test_bert);
  HS_RUN(test_dropout);
  HS_RUN(test_relu2);
  HS_RUN(test_detection);
  HS_TEST_END();
}
