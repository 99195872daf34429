/*
 * import_megatron_log.c - reads a Megatron-LM training log into a run: the
 * model and plan from the "arguments" block Megatron prints at start,
 *
 *   ------------------------ arguments ------------------------
 *     micro_batch_size ................................ 1
 *     ...
 *   -------------------- end of arguments ---------------------
 *
 * and the measured iterations from the lines it prints every log_interval
 * iterations,
 *
 *   [2025-04-13 23:41:20] iteration       20/    1000 | consumed samples: 320 |
 *   elapsed time per iteration (ms): 820.7 | throughput per GPU (TFLOP/s/GPU): 239.8 | ...
 *
 * (one line in the log), the padded vocabulary ("padded vocab (size: 50257)
 * with 47 dummy tokens (new size: 50304)", when the block has no
 * padded_vocab_size) and the parameter count of rank (0, 0). A key of the block is its first word; its value is
 * the rest of the line after the run of dots (long keys have none). "None"
 * means absent. The first `skip` iteration lines are dropped (the first
 * interval holds start-up and, with fp16, loss-scale skips).
 *
 * A log without the block (a wrapper that prints only iteration lines)
 * takes the model and plan from the caller's flags (hs_megatron_opts_t:
 * --model, --tp, --pp, --dp, --micro-batch-size, --global-batch-size); every
 * missing one is named in one message. With a block, a flag that disagrees
 * with it is refused naming both values.
 *
 * Invariants after a successful parse: the model passes the generator's
 * limits later (hs_model_from_transformer checks them), tp x pp x dp =
 * world_size when the log states world_size, global_batch is a multiple of
 * dp x micro_batch_size, and at least one iteration is kept. O(file size).
 */
#include "hs_validate.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 4096
#define MAX_ITERS 10000000
#define MAX_RUNS_NAMED 8 /* block lines named in the several-runs error */

void hs_megatron_opts_init(hs_megatron_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->skip = 1;
}

void hs_run_init(hs_run_t *r)
{
  memset(r, 0, sizeof *r);
  hs_measured_init(&r->measured);
}

void hs_run_destroy(hs_run_t *r)
{
  if (!r)
    return;
  hs_measured_destroy(&r->measured);
  free(r->tflops_per_gpu);
  memset(r, 0, sizeof *r);
}

typedef struct arg {
  char key[64];
  char value[128];
  int32_t line;
} arg_t;

typedef struct args {
  arg_t *a;
  int32_t n;
  size_t cap;
  int32_t first, last;      /* lines of the block */
  const char *file;
  hs_error_t *err;
} args_t;

static const arg_t *find(const args_t *A, const char *key)
{
  for (int32_t i = 0; i < A->n; i++)
    if (strcmp(A->a[i].key, key) == 0)
      return strcmp(A->a[i].value, "None") == 0 ? NULL : &A->a[i];
  return NULL;
}

/* One "  key ........ value" line [s, e) of the block into A; a key given
 * twice is refused naming both lines. O(keys) (the duplicate scan). */
static hs_status_t add_arg(args_t *A, const char *s, const char *e, int32_t line)
{
  const char *p = s;
  while (p < e && (*p == ' ' || *p == '\t'))
    p++;
  const char *k = p;
  while (p < e && (isalnum((unsigned char)*p) || *p == '_'))
    p++;
  size_t kl = (size_t)(p - k);
  if (kl == 0 || p == e || *p != ' ')
    return hs_error_set(A->err, HS_EPARSE, "%s:%d: arguments block: expected \"key ..... "
                        "value\"", A->file, line);
  while (p < e && (*p == ' ' || *p == '.'))
    p++;
  const char *q = e;
  while (q > p && (q[-1] == ' ' || q[-1] == '\r'))
    q--;
  if (A->n >= MAX_ARGS)
    return hs_error_set(A->err, HS_ELIMIT, "%s:%d: more than %d arguments", A->file, line, MAX_ARGS);
  if (hs_reserve((void **)&A->a, &A->cap, (size_t)A->n + 1, sizeof *A->a) != HS_OK)
    return hs_error_set(A->err, HS_ENOMEM, "out of memory");
  arg_t *a = &A->a[A->n++];
  memset(a, 0, sizeof *a);
  size_t vl = (size_t)(q - p);
  memcpy(a->key, k, kl < sizeof a->key - 1 ? kl : sizeof a->key - 1);
  memcpy(a->value, p, vl < sizeof a->value - 1 ? vl : sizeof a->value - 1);
  a->line = line;
  /* one value per key: a second one is refused, not ignored. Linear in
   * the block per key; blocks are a few hundred keys (MAX_ARGS bounds). */
  for (int32_t i = 0; i + 1 < A->n; i++)
    if (strcmp(A->a[i].key, a->key) == 0)
      return hs_error_set(A->err, HS_EPARSE, "%s:%d: arguments block: %s given twice (lines %d "
                          "and %d)", A->file, line, a->key, A->a[i].line, line);
  return HS_OK;
}

/* Integer argument in [lo, hi]; `def` < lo means required. */
static hs_status_t get_int(const args_t *A, const char *key, int64_t def, int64_t lo, int64_t hi,
                           int64_t *out)
{
  const arg_t *a = find(A, key);
  if (!a) {
    if (def < lo)
      return hs_error_set(A->err, HS_EINVAL, "%s:%d-%d: arguments block: no %s", A->file, A->first,
                          A->last, key);
    *out = def;
    return HS_OK;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(a->value, &end, 10);
  if (end == a->value || *end || errno || v < lo || v > hi)
    return hs_error_set(A->err, HS_EINVAL, "%s:%d: %s: expected an integer in [%lld, %lld], got "
                        "\"%s\"", A->file, a->line, key, (long long)lo, (long long)hi, a->value);
  *out = v;
  return HS_OK;
}

static hs_status_t get_bool(const args_t *A, const char *key, bool def, bool *out)
{
  const arg_t *a = find(A, key);
  if (!a) {
    *out = def;
    return HS_OK;
  }
  if (strcmp(a->value, "True") == 0)
    *out = true;
  else if (strcmp(a->value, "False") == 0)
    *out = false;
  else
    return hs_error_set(A->err, HS_EINVAL, "%s:%d: %s: expected True or False, got \"%s\"",
                        A->file, a->line, key, a->value);
  return HS_OK;
}

static const char *get_str(const args_t *A, const char *key)
{
  const arg_t *a = find(A, key);
  return a ? a->value : NULL;
}

/* Number after `label` in [s, e); false when the label is absent. */
static bool number_after(const char *s, const char *e, const char *label, const char **at)
{
  size_t l = strlen(label);
  for (const char *p = s; p + l <= e; p++)
    if (memcmp(p, label, l) == 0) {
      *at = p + l;
      return true;
    }
  return false;
}

static hs_status_t read_number(const char *p, const char *e, const char *file, int32_t line,
                               const char *what, double *out, hs_error_t *err)
{
  char buf[40];
  while (p < e && *p == ' ')
    p++;
  size_t n = 0;
  while (p + n < e && n + 1 < sizeof buf && p[n] != ' ' && p[n] != '|' && p[n] != '\r' && p[n] != ')')
    n++;
  memcpy(buf, p, n);
  buf[n] = '\0';
  char *end = NULL;
  errno = 0;
  double v = strtod(buf, &end);
  if (n == 0 || end == buf || *end || errno || !isnormal(v) || !(v > 0) || v > 1e12 ||
      !isdigit((unsigned char)buf[0]))
    return hs_error_set(err, HS_EPARSE, "%s:%d: %s: expected a positive number, got \"%s\"", file,
                        line, what, buf);
  *out = v;
  return HS_OK;
}

static hs_status_t push(double **v, int32_t *n, size_t *cap, double x)
{
  if (*n >= MAX_ITERS || hs_reserve((void **)v, cap, (size_t)*n + 1, sizeof **v) != HS_OK)
    return HS_ENOMEM;
  (*v)[(*n)++] = x;
  return HS_OK;
}

/* Megatron's uneven first / last stage (decoder_first/last_pipeline_num_
 * layers) into p: only without interleaving and with pp > 1, the rest of
 * the blocks an even share per middle stage, as Megatron-LM requires.
 * O(1). */
static hs_status_t uneven_stages(const args_t *A, const char *file, int64_t layers,
                                 hs_run_plan_t *p, hs_error_t *err)
{
  int64_t f = 0, l = 0;
  hs_status_t st = get_int(A, "decoder_first_pipeline_num_layers", 0, 0, layers, &f);
  if (st == HS_OK)
    st = get_int(A, "decoder_last_pipeline_num_layers", 0, 0, layers, &l);
  if (st != HS_OK || (f == 0 && l == 0))
    return st;
  const arg_t *a = find(A, f ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers");
  if (p->pp < 2 || p->chunks > 1 || p->pp > 4096)
    return hs_error_set(err, HS_EINVAL, "%s:%d: %s with pipeline_model_parallel_size %d and "
                        "virtual_pipeline_model_parallel_size %d: uneven first/last stages are "
                        "read for 2..4096 stages without interleaving", file, a->line, a->key,
                        p->pp, p->chunks);
  int32_t set = (f > 0) + (l > 0);
  int64_t rest = layers - f - l;
  if (rest < 0 || (p->pp == set ? rest != 0 : rest % (p->pp - set) != 0))
    return hs_error_set(err, HS_EINVAL, "%s:%d: num_layers %lld minus decoder first %lld and "
                        "last %lld leaves %lld blocks, not an even share for %d middle stages",
                        file, a->line, (long long)layers, (long long)f, (long long)l,
                        (long long)rest, p->pp - set);
  p->first_stage_layers = (int32_t)f;
  p->last_stage_layers = (int32_t)l;
  return HS_OK;
}

/* The run's model and plan from the arguments block (the keys the header
 * of this file lists); errors name the file, the line and the key. Ends
 * at `cleanup:` for HS_CHECK/HS_FAIL. O(keys x block). */
static hs_status_t run_from_args(const args_t *A, const char *file, int64_t padded_vocab,
                                 hs_run_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  /* model */
  hs_transformer_cfg_t *m = &out->model;
  hs_transformer_cfg_init(m);
  snprintf(m->name, sizeof m->name, "megatron:%.40s", file);
  int64_t v = 0;
  HS_CHECK(get_int(A, "num_layers", -1, 1, HS_MODEL_MAX_LAYERS, &m->layers));
  HS_CHECK(get_int(A, "hidden_size", -1, 1, HS_MODEL_MAX_HIDDEN, &m->hidden));
  HS_CHECK(get_int(A, "num_attention_heads", -1, 1, HS_MODEL_MAX_HEADS, &m->heads));
  HS_CHECK(get_int(A, "ffn_hidden_size", 4 * m->hidden, 1, HS_MODEL_MAX_FFN, &m->ffn));
  /* newer Megatron prints the padded vocabulary after the block */
  HS_CHECK(get_int(A, "padded_vocab_size", padded_vocab ? padded_vocab : -1, 1, HS_MODEL_MAX_VOCAB,
                   &m->vocab));
  HS_CHECK(get_int(A, "seq_length", -1, 1, HS_MODEL_MAX_SEQ_LEN, &m->seq_len));
  bool gqa = false;
  HS_CHECK(get_bool(A, "group_query_attention", false, &gqa));
  m->kv_heads = m->heads;
  if (gqa)
    HS_CHECK(get_int(A, "num_query_groups", -1, 1, m->heads, &m->kv_heads));
  HS_CHECK(get_int(A, "kv_channels", 0, 0, HS_MODEL_MAX_HEAD_DIM, &v));
  m->head_dim = v && v * m->heads != m->hidden ? v : 0;
  const char *pe = get_str(A, "position_embedding_type");
  m->max_positions = 0;
  if (!pe || strcmp(pe, "learned_absolute") == 0)
    HS_CHECK(get_int(A, "max_position_embeddings", m->seq_len, 1, HS_MODEL_MAX_POSITIONS,
                     &m->max_positions));
  bool swiglu = false, squared_relu = false, untie = false, bias = true, bf16 = false,
       fp16 = false;
  HS_CHECK(get_bool(A, "swiglu", false, &swiglu));
  HS_CHECK(get_bool(A, "squared_relu", false, &squared_relu));
  if (swiglu && squared_relu)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: squared_relu: True together with swiglu True "
                         "(Megatron-LM refuses the pair; the log is inconsistent)",
                         file, find(A, "squared_relu")->line));
  m->act = swiglu ? HS_ACT_SWIGLU : squared_relu ? HS_ACT_RELU2 : HS_ACT_GELU;
  const char *norm = get_str(A, "normalization");
  if (norm && strcmp(norm, "RMSNorm") == 0)
    m->norm = HS_NORM_RMSNORM;
  else if (!norm || strcmp(norm, "LayerNorm") == 0)
    m->norm = HS_NORM_LAYERNORM;
  else
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: normalization: expected LayerNorm or RMSNorm, "
                         "got \"%s\"", file, find(A, "normalization")->line, norm));
  HS_CHECK(get_bool(A, "untie_embeddings_and_output_weights", false, &untie));
  m->tied_embeddings = !untie;
  HS_CHECK(get_bool(A, "add_bias_linear", true, &bias));
  m->bias = bias;
  HS_CHECK(get_bool(A, "bf16", false, &bf16));
  HS_CHECK(get_bool(A, "fp16", false, &fp16));
  m->dtype = bf16 ? HS_DTYPE_BF16 : fp16 ? HS_DTYPE_FP16 : HS_DTYPE_FP32;
  HS_CHECK(get_int(A, "num_experts", 0, 0, HS_MODEL_MAX_EXPERTS, &m->experts));
  if (m->experts > 1)
    HS_CHECK(get_int(A, "moe_router_topk", 2, 1, m->experts, &m->topk));
  /* plan */
  hs_run_plan_t *p = &out->plan;
  HS_CHECK(get_int(A, "tensor_model_parallel_size", -1, 1, 1 << 16, &v));
  p->tp = (int32_t)v;
  HS_CHECK(get_int(A, "pipeline_model_parallel_size", -1, 1, 1 << 16, &v));
  p->pp = (int32_t)v;
  int64_t ws = 0, tp_pp = 0, world = 0, cp = 1;
  HS_CHECK(get_int(A, "world_size", 0, 0, 1 << 24, &ws));
  /* run.json has no context parallelism: say so, not "world_size is not
   * tensor x pipeline x data" */
  HS_CHECK(get_int(A, "context_parallel_size", 1, 1, 1 << 16, &cp));
  if (cp > 1)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: context_parallel_size %lld: runs with context "
                         "parallelism cannot be imported yet (run.json has no such field)", file,
                         find(A, "context_parallel_size")->line, (long long)cp));
  if (!hs_mul_i64(p->tp, p->pp, HS_CLUSTER_MAX_DEVICES, &tp_pp))
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s:%d-%d: tensor_model_parallel_size %d x "
                         "pipeline_model_parallel_size %d: more than %d GPUs", file, A->first,
                         A->last, p->tp, p->pp, HS_CLUSTER_MAX_DEVICES));
  HS_CHECK(get_int(A, "data_parallel_size", ws ? ws / tp_pp : -1, 1, 1 << 24, &v));
  p->dp = (int32_t)v;
  if (!hs_mul_i64(tp_pp, p->dp, HS_CLUSTER_MAX_DEVICES, &world))
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s:%d-%d: tensor_model_parallel_size %d x "
                         "pipeline_model_parallel_size %d x data_parallel_size %d: more than %d "
                         "GPUs", file, A->first, A->last, p->tp, p->pp, p->dp,
                         HS_CLUSTER_MAX_DEVICES));
  if (ws && ws != world)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d-%d: world_size %lld is not tensor %d x pipeline %d "
                         "x data %d", file, A->first, A->last, (long long)ws, p->tp, p->pp, p->dp));
  out->world_size = (int32_t)world;
  HS_CHECK(get_int(A, "micro_batch_size", -1, 1, 1 << 20, &v));
  p->microbatch_size = (int32_t)v;
  HS_CHECK(get_int(A, "global_batch_size", -1, 1, INT64_C(1) << 40, &p->global_batch));
  if (p->global_batch % ((int64_t)p->dp * p->microbatch_size))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d-%d: global_batch_size %lld is not a multiple of "
                         "data parallel %d x micro_batch_size %d", file, A->first, A->last,
                         (long long)p->global_batch, p->dp, p->microbatch_size));
  HS_CHECK(get_int(A, "virtual_pipeline_model_parallel_size", 1, 1, 1 << 16, &v));
  p->chunks = (int32_t)v;
  HS_CHECK(uneven_stages(A, file, m->layers, p, err));
  const char *rg = get_str(A, "recompute_granularity");
  p->recompute = HS_RECOMPUTE_NONE;
  if (rg && hs_recompute_parse(rg, &p->recompute) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: recompute_granularity: expected None, selective "
                         "or full, got \"%s\"", file, find(A, "recompute_granularity")->line, rg));
  HS_CHECK(get_bool(A, "use_distributed_optimizer", false, &p->distributed_optimizer));
  HS_CHECK(get_bool(A, "sequence_parallel", false, &p->sequence_parallel));
cleanup:
  return st;
}

/* The run from the caller's flags when the log has no arguments block:
 * every missing flag is named in one message; the plan is checked as the
 * block's would be (GPU count, global batch a multiple of dp x micro batch).
 * O(1). */
static hs_status_t run_from_flags(const hs_megatron_opts_t *o, const char *file, int32_t n_lines,
                                  hs_run_t *out, hs_error_t *err)
{
  char missing[160] = "";
  size_t k = 0;
  const struct {
    bool given;
    const char *flag;
  } need[] = {
      {o && o->model, "--model"},
      {o && o->tp > 0, "--tp"},
      {o && o->pp > 0, "--pp"},
      {o && o->dp > 0, "--dp"},
      {o && o->microbatch_size > 0, "--micro-batch-size"},
      {o && o->global_batch > 0, "--global-batch-size"},
  };
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (!need[i].given && k < sizeof missing)
      k += (size_t)snprintf(missing + k, sizeof missing - k, "%s%s", k ? ", " : "", need[i].flag);
  if (k)
    return hs_error_set(err, HS_EPARSE, "%s: no Megatron-LM arguments block (\"---- arguments "
                        "----\") in %d lines: give the run's model and plan instead (missing: %s)",
                        file, n_lines, missing);
  out->model = *o->model;
  hs_run_plan_t *p = &out->plan;
  p->tp = o->tp;
  p->pp = o->pp;
  p->dp = o->dp;
  p->microbatch_size = o->microbatch_size;
  p->global_batch = o->global_batch;
  p->chunks = 1;
  p->recompute = HS_RECOMPUTE_NONE;
  int64_t world = 0;
  if (!hs_mul_i64((int64_t)o->tp * o->pp, o->dp, HS_CLUSTER_MAX_DEVICES, &world))
    return hs_error_set(err, HS_ELIMIT, "%s: --tp %d x --pp %d x --dp %d: more than %d GPUs", file,
                        o->tp, o->pp, o->dp, HS_CLUSTER_MAX_DEVICES);
  out->world_size = (int32_t)world;
  if (p->global_batch % ((int64_t)p->dp * p->microbatch_size))
    return hs_error_set(err, HS_EINVAL, "%s: --global-batch-size %lld is not a multiple of --dp %d "
                        "x --micro-batch-size %d", file, (long long)p->global_batch, p->dp,
                        p->microbatch_size);
  return HS_OK;
}

/* With an arguments block, a flag the caller gave must say what the block
 * says: the first disagreement is refused naming the flag, the key, its
 * line and both values. --model is compared on the architecture (layers,
 * hidden, heads, ffn); its name then names the run's model. O(keys). */
static hs_status_t flags_agree(const args_t *A, const hs_megatron_opts_t *o, const char *file,
                               hs_run_t *out, hs_error_t *err)
{
  if (!o)
    return HS_OK;
  const hs_run_plan_t *p = &out->plan;
  const hs_transformer_cfg_t *m = &out->model;
  const struct {
    const char *flag, *key;
    int64_t given, logged;
  } c[] = {
      {"--tp", "tensor_model_parallel_size", o->tp, p->tp},
      {"--pp", "pipeline_model_parallel_size", o->pp, p->pp},
      {"--dp", "data_parallel_size", o->dp, p->dp},
      {"--micro-batch-size", "micro_batch_size", o->microbatch_size, p->microbatch_size},
      {"--global-batch-size", "global_batch_size", o->global_batch, p->global_batch},
      {"--model (layers)", "num_layers", o->model ? o->model->layers : 0, m->layers},
      {"--model (hidden size)", "hidden_size", o->model ? o->model->hidden : 0, m->hidden},
      {"--model (attention heads)", "num_attention_heads", o->model ? o->model->heads : 0,
       m->heads},
      {"--model (ffn hidden size)", "ffn_hidden_size", o->model ? o->model->ffn : 0, m->ffn},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    if (c[i].given <= 0 || c[i].given == c[i].logged)
      continue;
    const arg_t *a = find(A, c[i].key);
    char where[48];
    if (a)
      snprintf(where, sizeof where, "%d", a->line);
    else
      snprintf(where, sizeof where, "%d-%d", A->first, A->last);
    return hs_error_set(err, HS_EINVAL, "%s:%s: %s %lld disagrees with the arguments block's %s "
                        "%lld%s; drop the flag or fix it", file, where, c[i].flag,
                        (long long)c[i].given, c[i].key, (long long)c[i].logged,
                        a ? "" : " (derived)");
  }
  if (o->model)
    snprintf(out->model.name, sizeof out->model.name, "%s", o->model->name);
  return HS_OK;
}
hs_status_t hs_megatron_log_parse(const char *text, const char *file, const hs_megatron_opts_t *o,
                                  hs_run_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  args_t A = {0};
  double *its = NULL, *tfl = NULL;
  int32_t n_its = 0, n_tfl = 0, n_lines_seen = 0;
  size_t cap_its = 0, cap_tfl = 0;
  hs_run_init(out);
  if (!file)
    file = "megatron log";
  A.file = file;
  A.err = err;
  int skip = o ? o->skip : 1;
  int32_t want = o && o->run > 0 ? o->run : 1; /* the run whose lines are read */
  int32_t n_runs = 0, run_line[MAX_RUNS_NAMED] = {0}, early_line = 0;
  int64_t padded_vocab = 0;
  int state = 0; /* 0 before the block, 1 inside, 2 after */
  int32_t line = 0;
  for (const char *s = text; *s;) {
    const char *e = strchr(s, '\n');
    if (!e)
      e = s + strlen(s);
    line++;
    const char *next = *e ? e + 1 : e;
    const char *at = NULL;
    /* every arguments block starts a run (a restarted job appends one);
     * only the lines of run `want` are read */
    if (state != 1 && number_after(s, e, "-- arguments --", &at)) {
      if (n_runs < MAX_RUNS_NAMED)
        run_line[n_runs] = line;
      n_runs++;
      if (n_runs == want) {
        state = 1;
        A.first = line;
      } else {
        state = 3;
      }
      s = next;
      continue;
    }
    if (state == 3) {
      s = next;
      continue;
    }
    if (state == 0 && !early_line && number_after(s, e, " iteration ", &at) &&
        number_after(s, e, "elapsed time per iteration (ms):", &at))
      early_line = line; /* belongs to no run: refused below if a block follows */
    if (state == 1 && number_after(s, e, "-- end of arguments --", &at)) {
      state = 2;
      A.last = line;
    } else if (state == 1) {
      HS_CHECK(add_arg(&A, s, e, line));
    } else if (state == 2 && number_after(s, e, "padded vocab (size: ", &at) &&
               number_after(s, e, "(new size: ", &at)) {
      /* "> padded vocab (size: 50257) with 47 dummy tokens (new size: 50304)" */
      double v = 0;
      HS_CHECK(read_number(at, e, file, line, "padded vocab new size", &v, err));
      if (v != floor(v) || v > HS_MODEL_MAX_VOCAB)
        HS_FAIL(hs_error_set(err, HS_EPARSE, "%s:%d: padded vocab new size: expected an integer "
                             "up to %d, got %g", file, line, HS_MODEL_MAX_VOCAB, v));
      padded_vocab = (int64_t)v;
    } else if (state == 2 && out->params_rank0 == 0 &&
               number_after(s, e, "number of parameters on (tensor, pipeline) model parallel rank "
                            "(0, 0): ", &at)) {
      HS_CHECK(read_number(at, e, file, line, "number of parameters", &out->params_rank0, err));
    } else if (number_after(s, e, " iteration ", &at) &&
               number_after(s, e, "elapsed time per iteration (ms):", &at)) {
      double ms = 0, tf = 0;
      HS_CHECK(read_number(at, e, file, line, "elapsed time per iteration (ms)", &ms, err));
      bool has_tf = number_after(s, e, "throughput per GPU (TFLOP/s/GPU):", &at);
      if (has_tf)
        HS_CHECK(read_number(at, e, file, line, "throughput per GPU (TFLOP/s/GPU)", &tf, err));
      if (n_lines_seen++ < skip) {
        s = next;
        continue;
      }
      if (push(&its, &n_its, &cap_its, ms * 1e-3) != HS_OK ||
          (has_tf && push(&tfl, &n_tfl, &cap_tfl, tf) != HS_OK))
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    }
    s = next;
  }
  if (n_runs == 0) /* no block: the model and plan are the flags' */
    HS_CHECK(run_from_flags(o, file, line, out, err));
  if (n_runs > 1 && !(o && o->run > 0)) {
    char lines[160] = "";
    size_t k = 0;
    for (int32_t i = 0; i < n_runs && i < MAX_RUNS_NAMED && k < sizeof lines; i++)
      k += (size_t)snprintf(lines + k, sizeof lines - k, "%s%d", i ? ", " : "", run_line[i]);
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %d runs (a restarted job: arguments blocks at lines "
                         "%s%s); their plans and iterations are not pooled: pick one with --run N "
                         "(1..%d)", file, n_runs, lines, n_runs > MAX_RUNS_NAMED ? ", ..." : "",
                         n_runs));
  }
  if (early_line && n_runs > 0)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s:%d: iteration line before the first arguments block "
                         "(line %d): the log's start is missing (a cut or concatenated log?)",
                         file, early_line, run_line[0]));
  if (n_runs > 0 && want > n_runs)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: --run %d: the log has %d run%s (arguments blocks)",
                         file, want, n_runs, n_runs == 1 ? "" : "s"));
  if (state == 1)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s:%d: arguments block never ends (expected \"---- end "
                         "of arguments ----\"; file truncated?)", file, A.first));
  if (n_its == 0)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: %d iteration line%s with \"elapsed time per "
                         "iteration (ms):\"%s; nothing measured", file, n_lines_seen,
                         n_lines_seen == 1 ? "" : "s",
                         n_lines_seen ? ", all skipped as warm-up (--skip)" : ""));
  if (n_tfl && n_tfl != n_its)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: throughput per GPU on %d of %d iteration lines", file,
                         n_tfl, n_its));
  if (n_runs > 0) {
    HS_CHECK(run_from_args(&A, file, padded_vocab, out, err));
    HS_CHECK(flags_agree(&A, o, file, out, err));
  }
  const hs_transformer_cfg_t *m = &out->model;
  const hs_run_plan_t *p = &out->plan;
  /* measured */
  hs_measured_t *ms = &out->measured;
  hs_strlcpy(ms->backend, "megatron-log", sizeof ms->backend);
  hs_strlcpy(ms->model, m->name, sizeof ms->model);
  hs_strlcpy(ms->mode, "plan", sizeof ms->mode);
  snprintf(ms->plan_summary, sizeof ms->plan_summary,
           "tp%d pp%d dp%d mb=%d gb=%lld%s%s%s", p->tp, p->pp, p->dp, p->microbatch_size,
           (long long)p->global_batch, p->chunks > 1 ? " interleaved" : "",
           p->recompute != HS_RECOMPUTE_NONE ? " recompute" : "",
           p->distributed_optimizer ? " dist-opt" : "");
  ms->iteration_s = its;
  ms->n_iterations = n_its;
  its = NULL;
  hs_spread_t sp;
  if (hs_spread_of(ms->iteration_s, (size_t)ms->n_iterations, &sp) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  ms->iteration_time_s = sp.median;
  out->tflops_per_gpu = tfl;
  out->n_tflops = n_tfl;
  tfl = NULL;
  snprintf(out->source, sizeof out->source, "hetsim import megatron-log: %.200s", file);
cleanup:
  free(A.a);
  free(its);
  free(tfl);
  if (st != HS_OK)
    hs_run_destroy(out);
  return st;
}

hs_status_t hs_megatron_log_load(const char *path, const hs_megatron_opts_t *o, hs_run_t *out,
                                 hs_error_t *err)
{
  char *text = NULL;
  hs_run_init(out);
  hs_status_t st = hs_file_read(path, (size_t)256 << 20, &text, NULL, err);
  if (st == HS_OK)
    st = hs_megatron_log_parse(text, hs_basename(path), o, out, err);
  free(text);
  return st;
}
