/*
 * test_import_megatron.c - `hetsim import megatron-log` and run.json
 * (validate/import_megatron_log.c, validate/run_json.c, validate/run.c).
 *
 * Truths: the numbers printed in the real logs (tests/data/import), typed
 * here from the files, and Megatron's own parameter count of the GPT-2 run
 * (124082688 on rank (0, 0)), which hetsim's model accounting of the
 * imported arguments must reproduce.
 */
#include "hs_json.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void test_real_gpt2(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_megatron_opts_t o;
  hs_megatron_opts_init(&o);
  hs_run_t r;
  CHECK_MSG(hs_megatron_log_load(hs_test_data("import/megatron_gpt2_1gpu.log"), &o, &r, &err) ==
                HS_OK, "%s", err.msg);
  const hs_transformer_cfg_t *m = &r.model;
  CHECK(m->layers == 12 && m->hidden == 768 && m->heads == 12 && m->kv_heads == 12);
  CHECK(m->ffn == 3072 && m->vocab == 50304 && m->seq_len == 512 && m->max_positions == 512);
  CHECK(m->dtype == HS_DTYPE_FP16 && m->tied_embeddings && m->bias && m->act == HS_ACT_GELU &&
        m->norm == HS_NORM_LAYERNORM && m->head_dim == 0);
  const hs_run_plan_t *p = &r.plan;
  CHECK(p->tp == 1 && p->pp == 1 && p->dp == 1 && p->microbatch_size == 1 && p->global_batch == 16);
  CHECK(p->chunks == 1 && p->recompute == HS_RECOMPUTE_NONE && !p->distributed_optimizer &&
        !p->sequence_parallel);
  CHECK(r.params_rank0 == 124082688.0);
  /* the first logged line (iteration 10, 1147.6 ms) is warm-up */
  CHECK_EQ_INT(r.measured.n_iterations, 4);
  static const double ms[4] = {820.7, 821.8, 849.8, 904.5};
  for (int i = 0; i < 4 && i < r.measured.n_iterations; i++)
    CHECK_REL(r.measured.iteration_s[i], ms[i] / 1e3, 1e-12);
  CHECK_REL(r.measured.iteration_time_s, (821.8 + 849.8) / 2e3, 1e-12);
  CHECK_EQ_INT(r.n_tflops, 0);
  /* hetsim counts the same parameters as Megatron */
  hs_model_t model;
  CHECK_MSG(hs_model_from_transformer(m, &model, &err) == HS_OK, "%s", err.msg);
  hs_model_totals_t tot;
  hs_model_totals(&model, 0, model.n_ops, &tot);
  CHECK_MSG(tot.params == r.params_rank0, "hetsim %.0f, Megatron %.0f", tot.params, r.params_rank0);
  hs_model_destroy(&model);
  /* run.json round trip */
  cJSON *j = hs_run_to_json(&r);
  char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
  hs_run_t b;
  CHECK_MSG(txt && hs_run_parse(txt, "run.json", &b, &err) == HS_OK, "%s", err.msg);
  CHECK(b.model.layers == 12 && b.model.vocab == 50304 && b.model.dtype == HS_DTYPE_FP16 &&
        b.model.max_positions == 512 && b.plan.global_batch == 16);
  CHECK_EQ_INT(b.measured.n_iterations, 4);
  CHECK(b.measured.n_iterations == 4 && b.measured.iteration_s[3] == r.measured.iteration_s[3]);
  /* simulated on one A100 node; too small a cluster is refused */
  hs_cluster_t c;
  hs_cluster_init(&c);
  hs_report_t rep;
  CHECK(hs_cluster_load("dgx-a100-1node", &c, &err) == HS_OK);
  CHECK_MSG(hs_run_simulate(&b, &c, &model, &rep, &err) == HS_OK, "%s", err.msg);
  CHECK(rep.iteration_time_s > 0 && !rep.oom);
  hs_report_destroy(&rep);
  hs_model_destroy(&model);
  b.plan.dp = 16;
  hs_error_init(&err);
  hs_status_t st = hs_run_simulate(&b, &c, &model, &rep, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "16 GPUs");
  hs_cluster_destroy(&c);
  hs_run_destroy(&b);
  cJSON_free(txt);
  hs_json_free(j);
  hs_run_destroy(&r);
}

static void test_real_throughput_lines(void)
{
  /* the GPT-2 arguments with the Mixtral issue's iteration lines: TFLOP/s */
  char *args = hs_test_slurp(hs_test_data("import/megatron_gpt2_1gpu.log"));
  char *its = hs_test_slurp(hs_test_data("import/megatron_mixtral_iterations.log"));
  CHECK(args && its);
  if (!args || !its) {
    free(args);
    free(its);
    return;
  }
  char *end = strstr(args, "training ...");
  *end = '\0';
  size_t n = strlen(args) + strlen(its) + 1;
  char *txt = malloc(n);
  snprintf(txt, n, "%s%s", args, its);
  hs_error_t err;
  hs_error_init(&err);
  hs_megatron_opts_t o;
  hs_megatron_opts_init(&o);
  o.skip = 0;
  hs_run_t r;
  CHECK_MSG(hs_megatron_log_parse(txt, "mixed.log", &o, &r, &err) == HS_OK, "%s", err.msg);
  static const double ms[3] = {5444.9, 5533.8, 5718.6}, tf[3] = {239.8, 236.0, 228.4};
  CHECK_EQ_INT(r.measured.n_iterations, 3);
  CHECK_EQ_INT(r.n_tflops, 3);
  for (int i = 0; i < 3 && i < r.n_tflops && i < r.measured.n_iterations; i++) {
    CHECK_REL(r.measured.iteration_s[i], ms[i] / 1e3, 1e-12);
    CHECK(r.tflops_per_gpu[i] == tf[i]);
  }
  hs_run_destroy(&r);
  /* without the arguments block there is no model: the iterations alone
   * are refused with what is missing */
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_megatron_log_parse(its, "mixtral.log", &o, &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "mixtral.log: no Megatron-LM arguments block");
  free(txt);
  free(args);
  free(its);
}

/* Parses `text` as train.log with the default options, warnings quiet. */
static hs_status_t parse_log(const char *text, hs_run_t *r, hs_error_t *err)
{
  hs_error_init(err);
  err->warn_fp = NULL;
  hs_megatron_opts_t o;
  hs_megatron_opts_init(&o);
  return hs_megatron_log_parse(text, "train.log", &o, r, err);
}

static void expect_bad(const char *text, const char *needle)
{
  hs_error_t err;
  hs_run_t r;
  hs_status_t st = parse_log(text, &r, &err);
  CHECK_MSG(st != HS_OK, "accepted: %.60s", text);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "train.log");
  CHECK_CONTAINS(err.msg, needle);
  hs_run_destroy(&r);
}

/* text with `from` replaced by `to` (once) */
static char *subst(const char *text, const char *from, const char *to)
{
  const char *p = strstr(text, from);
  CHECK(p != NULL);
  if (!p)
    return strdup(text);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *o = malloc(n);
  snprintf(o, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
  return o;
}

static void test_malformed(void)
{
  char *t = hs_test_slurp(hs_test_data("import/megatron_gpt2_1gpu.log"));
  CHECK(t != NULL);
  if (!t)
    return;
  char *b;
  /* truncated inside the arguments block */
  b = strdup(t);
  *strstr(b, "  num_layers") = '\0';
  expect_bad(b, "train.log:5: arguments block never ends");
  free(b);
  /* a required argument missing, a value that is not a number, an
   * iteration time that is not one, inconsistent sizes: the log with one
   * text replaced */
  static const struct {
    const char *from, *to, *needle;
  } cases[] = {
      {"  num_layers ...................................... 12\n", "",
       "train.log:5-42: arguments block: no num_layers"},
      {"hidden_size ..................................... 768", "hidden_size ..................................... 7x8",
       "train.log:17: hidden_size: expected an integer"},
      {"fp16 ............................................ True", "fp16 ............................................ yes",
       "fp16: expected True or False"},
      {"  swiglu .......................................... False\n",
       "  squared_relu .................................... 1\n  swiglu .......................................... False\n",
       "squared_relu: expected True or False"},
      {"(ms): 820.7", "(ms): fast",
       "train.log:50: elapsed time per iteration (ms): expected a positive number, got \"fast\""},
      {"(ms): 820.7", "(ms): 1e-320",
       "train.log:50: elapsed time per iteration (ms): expected a positive number, got \"1e-320\""},
      {"world_size ...................................... 1", "world_size ...................................... 8",
       "world_size 8 is not tensor 1 x pipeline 1 x data 1"},
      {"global_batch_size ............................... 16", "global_batch_size ............................... 0",
       "global_batch_size: expected an integer in [1,"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    b = subst(t, cases[i].from, cases[i].to);
    expect_bad(b, cases[i].needle);
    free(b);
  }
  /* squared ReLU: --squared-relu gives relu2; with --swiglu it is refused */
  b = subst(t, "  swiglu .......................................... False\n",
            "  squared_relu .................................... True\n"
            "  swiglu .......................................... False\n");
  {
    hs_error_t err;
    hs_run_t r;
    CHECK_MSG(parse_log(b, &r, &err) == HS_OK, "%s", err.msg);
    CHECK(r.model.act == HS_ACT_RELU2);
    hs_run_destroy(&r);
  }
  char *b2 = subst(b, "swiglu .......................................... False",
                   "swiglu .......................................... True");
  expect_bad(b2, "squared_relu: True together with swiglu True");
  free(b2);
  free(b);
  /* nothing measured */
  b = strdup(t);
  *strstr(b, "training ...") = '\0';
  expect_bad(b, "0 iteration lines");
  free(b);
  expect_bad("", "no Megatron-LM arguments block");
  free(t);
}

static void test_run_json_bad(void)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_run_t r;
  hs_status_t st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                                "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                                "\"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, \"microbatch_size\": 1, "
                                "\"global_batch\": 4, \"recompute\": \"sometimes\"}, "
                                "\"measured\": {\"iteration_time_s\": 1}}", "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "run.json: plan.recompute");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                    "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                    "\"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, \"microbatch_size\": 1, "
                    "\"global_batch\": 4}, \"measured\": {\"iteration_time_s\": -1}}", "run.json",
                    &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "run.json (measured): iteration_time_s");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_run_parse("{\"plan\": {}}", "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "run.json: model");
}

/* issue #32: tp x pp x dp past int32 wrapped to "world_size": 0, exit 0 */
static void test_parallel_overflow(void)
{
  char *t = hs_test_slurp(hs_test_data("import/megatron_gpt2_1gpu.log"));
  CHECK(t != NULL);
  if (!t)
    return;
  char *a = subst(t, "tensor_model_parallel_size ...................... 1",
                  "tensor_model_parallel_size ...................... 65536");
  char *b = subst(a, "pipeline_model_parallel_size .................... 1",
                  "pipeline_model_parallel_size .................... 65536");
  char *c = subst(b, "world_size ...................................... 1\n", "");
  /* 65536 x 65536 = 2^32: wraps to 0 in int32 */
  expect_bad(c, "tensor_model_parallel_size 65536 x pipeline_model_parallel_size 65536: more than");
  free(c);
  /* tp x pp fits, x dp does not (2^16 x 2^4 x 2^16 = 2^36) */
  c = subst(b, "pipeline_model_parallel_size .................... 65536",
            "pipeline_model_parallel_size .................... 16");
  char *d = subst(c, "data_parallel_size .............................. 1",
                  "data_parallel_size .............................. 65536");
  char *e = subst(d, "world_size ...................................... 1\n", "");
  expect_bad(e, "x data_parallel_size 65536: more than 1048576 GPUs");
  free(a);
  free(b);
  free(c);
  free(d);
  free(e);
  /* run.json: the same product */
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_run_t r;
  hs_status_t st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                                "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                                "\"plan\": {\"tp\": 65536, \"pp\": 65536, \"dp\": 1, "
                                "\"microbatch_size\": 1, \"global_batch\": 4}, "
                                "\"measured\": {\"iteration_time_s\": 1}}", "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "run.json: plan: tp 65536 x pp 65536 x dp 1: more than 1048576 GPUs");
  /* a world_size that disagrees with the plan */
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                    "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                    "\"plan\": {\"tp\": 2, \"pp\": 1, \"dp\": 2, \"microbatch_size\": 1, "
                    "\"global_batch\": 4}, \"world_size\": 0, "
                    "\"measured\": {\"iteration_time_s\": 1}}", "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "run.json: world_size");
  /* subnormal measured numbers: refused, not divided by */
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                    "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                    "\"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, \"microbatch_size\": 1, "
                    "\"global_batch\": 4}, \"measured\": {\"iterations_s\": [1, 5e-324]}}",
                    "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "iterations_s[1]");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                    "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                    "\"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, \"microbatch_size\": 1, "
                    "\"global_batch\": 4}, \"measured\": {\"iteration_time_s\": 1e-310}}",
                    "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "iteration_time_s: must be a positive normal number");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_run_parse("{\"model\": {\"name\": \"m\", \"transformer\": {\"layers\": 2, "
                    "\"hidden\": 64, \"heads\": 4, \"vocab\": 100, \"seq_len\": 16}}, "
                    "\"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 1, \"microbatch_size\": 1, "
                    "\"global_batch\": 4}, \"measured\": {\"iteration_time_s\": 1}, "
                    "\"tflops_per_gpu\": [4e-320]}", "run.json", &r, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "run.json: tflops_per_gpu[0]");
  free(t);
}

/* issue #32: a restarted job's log (two arguments blocks) was read with the
 * first block's plan and both runs' iterations pooled */
static void test_restarted_log(void)
{
  char *t = hs_test_slurp(hs_test_data("import/megatron_gpt2_1gpu.log"));
  CHECK(t != NULL);
  if (!t)
    return;
  /* run 2: the same log with dp 2 and other iteration times */
  char *a = subst(t, "data_parallel_size .............................. 1",
                  "data_parallel_size .............................. 2");
  char *b = subst(a, "world_size ...................................... 1",
                  "world_size ...................................... 2");
  char *c = subst(b, "(ms): 820.7", "(ms): 1820.7");
  int lines1 = 0;
  for (const char *p = t; *p; p++)
    lines1 += *p == '\n';
  size_t n = strlen(t) + strlen(c) + 1;
  char *both = malloc(n);
  snprintf(both, n, "%s%s", t, c);
  /* refused by default, naming the count and the blocks' lines */
  char needle[160];
  snprintf(needle, sizeof needle, "train.log: 2 runs (a restarted job: arguments blocks at lines 5, "
           "%d)", lines1 + 5);
  expect_bad(both, needle);
  expect_bad(both, "--run N (1..2)");
  /* --run picks one: its plan and only its iterations, each as in the
   * single-run log (the independent truth) */
  for (int run = 1; run <= 2; run++) {
    hs_error_t err, err1;
    hs_error_init(&err);
    hs_error_init(&err1);
    err.warn_fp = err1.warn_fp = NULL;
    hs_megatron_opts_t o;
    hs_megatron_opts_init(&o);
    o.run = run;
    hs_run_t r, r1;
    CHECK_MSG(hs_megatron_log_parse(both, "train.log", &o, &r, &err) == HS_OK, "%s", err.msg);
    o.run = 0;
    CHECK_MSG(hs_megatron_log_parse(run == 1 ? t : c, "train.log", &o, &r1, &err1) == HS_OK, "%s",
              err1.msg);
    CHECK_EQ_INT(r.plan.dp, run);
    CHECK_EQ_INT(r.world_size, run);
    CHECK_EQ_INT(r.measured.n_iterations, r1.measured.n_iterations);
    for (int32_t i = 0; i < r.measured.n_iterations && i < r1.measured.n_iterations; i++)
      CHECK(r.measured.iteration_s[i] == r1.measured.iteration_s[i]);
    hs_run_destroy(&r);
    hs_run_destroy(&r1);
  }
  {
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_megatron_opts_t o;
    hs_megatron_opts_init(&o);
    o.run = 3;
    hs_run_t r;
    CHECK(hs_megatron_log_parse(both, "train.log", &o, &r, &err) != HS_OK);
    CHECK_CONTAINS(err.msg, "train.log: --run 3: the log has 2 runs");
  }
  /* an iteration line before any arguments block (a cut log): refused */
  const char *itl = strstr(t, " iteration ");
  while (itl && itl > t && itl[-1] != '\n')
    itl--;
  CHECK(itl != NULL);
  if (itl) {
    const char *eol = strchr(itl, '\n');
    size_t ln = eol ? (size_t)(eol - itl + 1) : strlen(itl);
    size_t m = ln + strlen(t) + 1;
    char *pre = malloc(m);
    snprintf(pre, m, "%.*s%s", (int)ln, itl, t);
    expect_bad(pre, "train.log:1: iteration line before the first arguments block");
    free(pre);
  }
  free(both);
  free(a);
  free(b);
  free(c);
  free(t);
}

/* issue #32: a key given twice in one block kept its first value silently */
static void test_duplicate_key(void)
{
  char *t = hs_test_slurp(hs_test_data("import/megatron_gpt2_1gpu.log"));
  CHECK(t != NULL);
  if (!t)
    return;
  /* num_layers is on line 27 (the 12 of the test above); add a second one
   * right after world_size (line 42) */
  char *b = subst(t, "  world_size ...................................... 1\n",
                  "  world_size ...................................... 1\n"
                  "  num_layers ...................................... 48\n");
  expect_bad(b, "train.log:43: arguments block: num_layers given twice (lines ");
  expect_bad(b, "and 43)");
  free(b);
  free(t);
}

int main(void)
{
  HS_RUN(test_real_gpt2);
  HS_RUN(test_real_throughput_lines);
  HS_RUN(test_malformed);
  HS_RUN(test_run_json_bad);
  HS_RUN(test_parallel_overflow);
  HS_RUN(test_restarted_log);
  HS_RUN(test_duplicate_key);
  HS_TEST_END();
}
