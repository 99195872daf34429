/*
 * test_models_badinput.c - every model loader refuses bad input with one
 * line naming the file, the field path and the value; nothing crashes, leaks
 * or allocates absurdly; the output model is left empty (safe to destroy).
 */
#include "hs_models.h"
#include "hs_test.h"

typedef hs_status_t (*parse_fn)(const char *text, const char *file, int64_t seq, hs_model_t *out,
                                hs_error_t *err);

#define ANY_ERROR ((hs_status_t)-1)
#define MAX_NEEDLES 4

typedef struct bad_case {
  const char *json;
  hs_status_t want; /* ANY_ERROR: any status but HS_OK */
  int64_t seq;      /* seq_len override */
  const char *needles[MAX_NEEDLES];
} bad_case_t;

/* BAD(json, status, needles...); BAD_SEQ adds a seq_len override. */
#define BAD(json, want, ...)                                                                       \
  {                                                                                                \
    json, want, 0,                                                                                 \
    {                                                                                              \
      __VA_ARGS__                                                                                  \
    }                                                                                              \
  }
#define BAD_SEQ(json, want, seq, ...)                                                              \
  {                                                                                                \
    json, want, seq,                                                                               \
    {                                                                                              \
      __VA_ARGS__                                                                                  \
    }                                                                                              \
  }

static void run_cases(parse_fn fn, const char *file, const bad_case_t *cases, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    const bad_case_t *c = &cases[i];
    hs_model_t m;
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_status_t st = fn(c->json, file, c->seq, &m, &err);
    CHECK_MSG(st != HS_OK, "case %zu accepted: %s", i, c->json);
    if (c->want != ANY_ERROR)
      CHECK_MSG(st == c->want, "case %zu: %s, expected %s (%s)", i, hs_status_name(st),
                hs_status_name(c->want), err.msg);
    if (getenv("HS_TEST_VERBOSE"))
      fprintf(stderr, "  [%s] %s\n", hs_status_name(st), err.msg);
    CHECK_MSG(err.status == st, "case %zu: error record not filled", i);
    CHECK_MSG(strncmp(err.msg, file, strlen(file)) == 0,
              "case %zu: message does not start with "
              "the file name: %s",
              i, err.msg);
    CHECK_MSG(strchr(err.msg, '\n') == NULL, "case %zu: more than one line: %s", i, err.msg);
    for (int k = 0; k < MAX_NEEDLES && c->needles[k]; k++)
      CHECK_MSG(strstr(err.msg, c->needles[k]) != NULL, "case %zu: \"%s\" not in \"%s\"", i,
                c->needles[k], err.msg);
    CHECK_MSG(m.ops == NULL && m.n_ops == 0, "case %zu: output not left empty", i);
    hs_model_destroy(&m);
  }
}

/* A valid generator body; cases splice one field in front of it (later
 * duplicates are ignored by cJSON's first-match lookup). */
#define T(extra)                                                                                   \
  "{\"name\": \"bad\", \"transformer\": {" extra "\"layers\": 2, \"hidden\": 64, "                 \
  "\"heads\": 4, \"vocab\": 100, \"seq_len\": 32}}"

static void test_hetsim_json(void)
{
  static const bad_case_t cases[] = {
      /* syntax */
      BAD("{\"name\": \"x\", \"transformer\": {\"layers\": 2,}}", HS_EPARSE, "malformed JSON",
          "line 1", "column"),
      BAD("{\n  \"name\": \"x\",\n  \"transformer\": {\n    \"layers\": 2\n    \"hidden\": 4\n  "
          "}\n}",
          HS_EPARSE, "line 5"),
      BAD("", HS_EPARSE, "malformed JSON"),
      BAD("[1, 2]", HS_EINVAL, "(top level)", "an array"),
      /* types and ranges */
      BAD(T("\"heads\": -4, "), HS_EINVAL, "transformer.heads", "must be a positive integer", "-4"),
      BAD(T("\"heads\": 0, "), HS_EINVAL, "transformer.heads", "0"),
      BAD(T("\"heads\": \"32\", "), HS_EINVAL, "transformer.heads", "\"32\""),
      BAD(T("\"heads\": 2.5, "), HS_EINVAL, "transformer.heads", "2.5"),
      BAD(T("\"layers\": null, "), HS_EINVAL, "transformer.layers", "null"),
      BAD(T("\"bias\": \"yes\", "), HS_EINVAL, "transformer.bias", "\"yes\""),
      BAD(T("\"dropout\": 0, "), HS_EINVAL, "transformer.dropout", "0"),
      BAD(T("\"kv_heads\": 0, "), HS_EINVAL, "transformer.kv_heads", "0"),
      BAD(T("\"head_dim\": -1, "), HS_EINVAL, "transformer.head_dim", "-1"),
      BAD(T("\"max_positions\": -5, "), HS_EINVAL, "transformer.max_positions", "-5"),
      BAD("{\"name\": \"x\", \"transformer\": {\"hidden\": 64, \"heads\": 4, \"vocab\": 100,"
          " \"seq_len\": 32}}",
          HS_EINVAL, "transformer.layers", "required field missing"),
      BAD("{\"name\": \"x\", \"transformer\": {\"layers\": 2, \"hidden\": 64, \"heads\": 4,"
          " \"vocab\": 100}}",
          HS_EINVAL, "transformer.seq_len", "required field missing"),
      BAD("{\"name\": \"x\", \"transformer\": [1]}", HS_EINVAL, "transformer", "must be an object"),
      BAD("{\"name\": 7, \"transformer\": {}}", HS_EINVAL, "name", "7"),
      BAD("{\"name\": \"\", \"transformer\": {}}", HS_EINVAL, "name", "empty"),
      BAD("{\"name\": \"0123456789012345678901234567890123456789012345678901234567890123456789\","
          " \"transformer\": {}}",
          HS_ELIMIT, "name", "01234567890"),
      /* cross-field rules */
      BAD(T("\"hidden\": 100, \"heads\": 3, "), HS_EINVAL, "transformer.heads", "3", "100"),
      BAD(T("\"heads\": 8, \"kv_heads\": 5, "), HS_EINVAL, "transformer.kv_heads", "5", "8"),
      BAD(T("\"heads\": 4, \"kv_heads\": 8, "), HS_EINVAL, "transformer.kv_heads", "8"),
      BAD(T("\"experts\": 2, \"topk\": 3, "), HS_EINVAL, "transformer.topk", "3", "2"),
      BAD(T("\"experts\": 8, "), HS_EINVAL, "transformer.topk", "got 0"),
      BAD(T("\"seq_len\": 2048, \"max_positions\": 1024, "), HS_EINVAL, "transformer.seq_len",
          "2048", "transformer.max_positions", "1024"),
      /* strings */
      BAD(T("\"dtype\": \"fp64\", "), HS_EINVAL, "transformer.dtype", "\"fp64\""),
      BAD(T("\"act\": \"tanh\", "), HS_EINVAL, "transformer.act", "\"tanh\"", "relu or relu2"),
      BAD(T("\"norm\": \"batchnorm\", "), HS_EINVAL, "transformer.norm", "\"batchnorm\""),
      BAD(T("\"arch\": \"seq2seq\", "), HS_EINVAL, "transformer.arch", "\"seq2seq\""),
      /* limits: refused before anything is allocated */
      BAD(T("\"layers\": 100001, "), HS_ELIMIT, "transformer.layers", "100001"),
      BAD(T("\"layers\": 1e300, "), HS_ELIMIT, "transformer.layers", "1e+300"),
      BAD(T("\"hidden\": 2000000, "), HS_ELIMIT, "transformer.hidden", "2000000"),
      BAD(T("\"vocab\": 1000000000, "), HS_ELIMIT, "transformer.vocab", "1000000000"),
      BAD(T("\"seq_len\": 100000000, "), HS_ELIMIT, "transformer.seq_len", "100000000"),
      BAD(T("\"experts\": 5000, \"topk\": 2, "), HS_ELIMIT, "transformer.experts", "5000"),
      BAD(T("\"ffn\": 1e18, "), HS_ELIMIT, "transformer.ffn", "1e+18"),
      BAD(T("\"type_vocab\": 1e7, "), HS_ELIMIT, "transformer.type_vocab", "10000000"),
      BAD_SEQ(T(""), HS_ELIMIT, 20000000, "seq_len (override)", "20000000"),
      /* form */
      BAD("{\"name\": \"x\"}", HS_EINVAL, "transformer", "required field missing", "ops"),
      BAD("{\"name\": \"x\", \"transformer\": {}, \"ops\": []}", HS_EINVAL, "ops", "transformer"),
      /* explicit op lists */
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": []}", HS_EINVAL, "ops", "empty"),
      BAD("{\"name\": \"x\", \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\"}]}", HS_EINVAL,
          "seq_len", "required field missing"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": {}}", HS_EINVAL, "ops", "must be an array"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [5]}", HS_EINVAL, "ops[0]",
          "must be an object"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"kind\": \"gemm\"}]}", HS_EINVAL,
          "ops[0].name", "required field missing"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\"},"
          " {\"name\": \"b\", \"kind\": \"conv\"}]}",
          HS_EINVAL, "ops[1].kind", "\"conv\""),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
          " \"fwd_flops\": -1}]}",
          HS_EINVAL, "ops[0].fwd_flops", "-1"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
          " \"params\": 1e40}]}",
          HS_ELIMIT, "ops[0].params", "1e+40"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
          " \"layer\": -2}]}",
          HS_EINVAL, "ops[0].layer", "-2"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
          " \"tp_split\": \"ring\"}]}",
          HS_EINVAL, "ops[0].tp_split", "\"ring\""),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
          " \"shardable\": [\"batch\", \"diagonal\"]}]}",
          HS_EINVAL, "ops[0].shardable[1]", "\"diagonal\""),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
          " \"saved_bytes\": 10, \"saved_bytes_selective\": 20}]}",
          HS_EINVAL, "ops[0].saved_bytes_selective", "20"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"moe_expert\","
          " \"experts\": 4, \"topk\": 5}]}",
          HS_EINVAL, "ops[0].topk", "5"),
      BAD_SEQ("{\"name\": \"x\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\"}]}",
              HS_EUNSUPPORTED, 16, "seq_len", "8", "16"),
      BAD("{\"name\": \"x\", \"seq_len\": 8, \"dtype\": \"int4\", \"ops\": [{\"name\": \"a\","
          " \"kind\": \"gemm\"}]}",
          HS_EINVAL, "dtype", "\"int4\""),
  };
  run_cases(hs_model_parse_json, "model.json", cases, HS_ARRAY_LEN(cases));
}

/* A valid Llama config; cases splice one field in front. */
#define L(extra)                                                                                   \
  "{\"architectures\": [\"LlamaForCausalLM\"], " extra "\"hidden_size\": 4096, "                   \
  "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 32, "          \
  "\"intermediate_size\": 11008, \"vocab_size\": 32000, \"max_position_embeddings\": 4096}"
#define MIX(extra)                                                                                 \
  "{\"architectures\": [\"MixtralForCausalLM\"], " extra "\"hidden_size\": 4096, "                 \
  "\"num_hidden_layers\": 2, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, "            \
  "\"intermediate_size\": 14336, \"vocab_size\": 32000, \"num_local_experts\": 8, "                \
  "\"num_experts_per_tok\": 2}"

static void test_hf_config(void)
{
  static const bad_case_t cases[] = {
      BAD("{\"architectures\": [\"LlamaForCausalLM\"],}", HS_EPARSE, "malformed JSON", "line 1"),
      BAD(L("\"num_attention_heads\": -4, "), HS_EINVAL, "num_attention_heads",
          "must be a positive integer", "-4"),
      BAD(L("\"num_attention_heads\": 30, "), HS_EINVAL, "num_attention_heads", "30",
          "hidden_size"),
      BAD(L("\"num_key_value_heads\": 3, "), HS_EINVAL, "num_key_value_heads", "3", "32"),
      BAD(L("\"vocab_size\": \"32000\", "), HS_EINVAL, "vocab_size", "\"32000\""),
      BAD(L("\"torch_dtype\": \"int8\", "), HS_EINVAL, "torch_dtype", "\"int8\""),
      BAD(L("\"tie_word_embeddings\": \"no\", "), HS_EINVAL, "tie_word_embeddings", "\"no\""),
      BAD(L("\"num_hidden_layers\": 1e9, "), HS_ELIMIT, "num_hidden_layers", "1000000000"),
      BAD(L("\"vocab_size\": 1e9, "), HS_ELIMIT, "vocab_size", "1000000000"),
      BAD(L("\"intermediate_size\": 1e12, "), HS_ELIMIT, "intermediate_size", "1000000000000"),
      BAD(L("\"max_position_embeddings\": 1e12, "), HS_ELIMIT, "max_position_embeddings",
          "1000000000000"),
      BAD_SEQ(L(""), HS_ELIMIT, 20000000, "seq_len (override)", "20000000"),
      BAD("{\"architectures\": [\"LlamaForCausalLM\"], \"num_hidden_layers\": 2,"
          " \"num_attention_heads\": 4, \"intermediate_size\": 64, \"vocab_size\": 10}",
          HS_EINVAL, "hidden_size", "required field missing"),
      BAD(MIX("\"num_experts_per_tok\": 9, "), HS_EINVAL, "num_experts_per_tok", "9", "8"),
      BAD(MIX("\"num_local_experts\": 100000, "), HS_ELIMIT, "num_local_experts", "100000"),
      BAD("{\"architectures\": [\"MixtralForCausalLM\"], \"hidden_size\": 64,"
          " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 64,"
          " \"vocab_size\": 10, \"num_experts_per_tok\": 2}",
          HS_EINVAL, "num_local_experts", "required field missing"),
      BAD("{\"architectures\": \"LlamaForCausalLM\", \"model_type\": \"llama\"}", HS_EINVAL,
          "architectures", "must be an array"),
      BAD("{\"architectures\": [42]}", HS_EINVAL, "architectures[0]", "must be a string", "42"),
      BAD("{\"architectures\": [\"FooForCausalLM\"]}", HS_EUNSUPPORTED, "architectures[0]",
          "\"FooForCausalLM\"", "Qwen2ForCausalLM"),
      BAD("{\"model_type\": \"t5\"}", HS_EUNSUPPORTED, "model_type", "\"t5\"", "llama"),
      BAD("{\"model_type\": 5}", HS_EINVAL, "model_type", "5"),
      BAD("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4,"
          " \"n_positions\": 128, \"vocab_size\": 100, \"activation_function\": \"mish\"}",
          HS_EUNSUPPORTED, "activation_function", "\"mish\""),
      BAD("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4,"
          " \"vocab_size\": 100}",
          HS_EINVAL, "n_positions", "required field missing"),
      BAD("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 5,"
          " \"n_positions\": 128, \"vocab_size\": 100}",
          HS_EINVAL, "n_head", "5", "n_embd", "64"),
      BAD("{\"model_type\": \"opt\", \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
          " \"num_attention_heads\": 16, \"ffn_dim\": 4096, \"vocab_size\": 100,"
          " \"word_embed_proj_dim\": 512}",
          HS_EUNSUPPORTED, "word_embed_proj_dim", "512"),
      BAD("{\"model_type\": \"opt\", \"hidden_size\": 1024, \"num_hidden_layers\": 2,"
          " \"num_attention_heads\": 16, \"vocab_size\": 100}",
          HS_EINVAL, "ffn_dim", "required field missing"),
      BAD("{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
          " \"num_attention_heads\": 4, \"vocab_size\": 100,"
          " \"position_embedding_type\": \"relative_key\"}",
          HS_EUNSUPPORTED, "position_embedding_type", "\"relative_key\""),
      BAD("{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
          " \"num_attention_heads\": 4, \"vocab_size\": 100, \"type_vocab_size\": -1}",
          HS_EINVAL, "type_vocab_size", "-1"),
  };
  run_cases(hs_model_parse_hf_config, "config.json", cases, HS_ARRAY_LEN(cases));
}

static void test_warnings_not_errors(void)
{
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  const char *t = "{\"name\": \"w\", \"colour\": \"red\", \"transformer\": {\"flavour\": 1,"
                  " \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 32}}";
  CHECK(hs_model_parse_json(t, "model.json", 0, &m, &err) == HS_OK);
  CHECK_EQ_INT(err.n_warnings, 2);
  CHECK(m.n_ops > 0);
  hs_model_destroy(&m);

  hs_error_init(&err);
  err.warn_fp = NULL;
  const char *o =
      "{\"name\": \"o\", \"seq_len\": 8, \"ops\": [{\"name\": \"a\", \"kind\": \"gemm\","
      " \"fwd_flops\": 10, \"shape\": 3}]}";
  CHECK(hs_model_parse_json(o, "model.json", 8, &m, &err) == HS_OK);
  CHECK_EQ_INT(err.n_warnings, 1);
  CHECK_EQ_INT(m.n_ops, 1);
  CHECK(m.ops[0].bwd_flops == 20.0); /* default: twice the forward */
  CHECK(m.ops[0].layer == -1 && m.ops[0].shardable == HS_SHARD_BATCH);
  hs_model_destroy(&m);
}

static void test_api_misuse(void)
{
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_parse_json(NULL, "model.json", 0, &m, &err) != HS_OK);
  CHECK(m.ops == NULL);
  hs_error_init(&err);
  CHECK(hs_model_parse_hf_config(NULL, NULL, 0, &m, &err) != HS_OK);
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(NULL, &m, &err) != HS_OK);
  hs_error_init(&err);
  CHECK(hs_model_load("", 0, &m, &err) == HS_EINVAL);
  hs_error_init(&err);
  CHECK(hs_model_load(NULL, 0, &m, &err) == HS_EINVAL);
  hs_error_init(&err);
  CHECK(hs_model_load("gpt3-1.3b", -5, &m, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "-5");

  hs_transformer_cfg_t c;
  hs_transformer_cfg_init(&c);
  c.heads = 0;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "gpt2: heads: must be a positive integer, got 0");
  hs_transformer_cfg_init(&c);
  c.act = (hs_act_t)7;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "act");
  hs_transformer_cfg_init(&c);
  c.layers = (int64_t)1 << 40;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_ELIMIT);
  CHECK_CONTAINS(err.msg, "layers");
  CHECK(m.ops == NULL && m.n_ops == 0);

  /* a zeroed model and NULL are accepted by destroy */
  hs_model_t z;
  memset(&z, 0, sizeof z);
  hs_model_destroy(&z);
  hs_model_destroy(NULL);
  CHECK(hs_model_copy(NULL, &z, &err) != HS_OK);
  hs_model_destroy(&z);
  /* NULL error records are allowed */
  CHECK(hs_model_parse_json("{", "model.json", 0, &m, NULL) == HS_EPARSE);
  CHECK(hs_model_to_json(NULL) == NULL);
  CHECK(hs_model_to_ops_json(NULL) == NULL);
}

int main(void)
{
  HS_RUN(test_hetsim_json);
  HS_RUN(test_hf_config);
  HS_RUN(test_warnings_not_errors);
  HS_RUN(test_api_misuse);
  HS_TEST_END();
}
