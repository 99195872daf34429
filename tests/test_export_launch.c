/*
 * test_export_launch.c - hetsim export --to megatron|deepspeed
 * (notebooks-export/launch.c) against independent truths:
 *
 *  - every flag written is a Megatron-LM arguments.py flag and every key a
 *    DeepSpeed config key, from lists transcribed from the frameworks'
 *    sources (tests/data/export/, each with repository, path and commit);
 *  - the loop closes: a grid plan -> its Megatron arguments -> a synthetic
 *    Megatron log in the real format (the arguments block Megatron prints
 *    from those flags, iteration lines) -> hs_megatron_log_parse gives back
 *    the grid options the plan was built from, uneven first / last stages
 *    come back as the stage_layers given to hs_plan_grid, and the run
 *    simulated as `validate --run` does has the plan's grid and layout;
 *  - plans a framework cannot run (per-stage TP, op-level cuts, uneven
 *    shares, heterogeneous groups, ZeRO-2 under Megatron, TP under
 *    DeepSpeed) are refused with HS_EINFEASIBLE naming each extra.
 */
#include "hs_json.h"
#include "hs_launch.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct names {
  char **v;
  int n;
} names_t;

/* The non-comment lines of a fixture file. */
static names_t load_names(const char *file)
{
  names_t s = {0};
  char *t = hs_test_slurp(hs_test_data(file));
  if (!t)
    return s;
  for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
    if (line[0] != '#' && line[0]) {
      s.v = realloc(s.v, (size_t)(s.n + 1) * sizeof *s.v);
      s.v[s.n++] = strdup(line);
    }
  free(t);
  return s;
}

static bool has_name(const names_t *s, const char *n)
{
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->v[i], n) == 0)
      return true;
  return false;
}

static void free_names(names_t *s)
{
  for (int i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
}

/* What a writer printed, as a string (malloc'd). */
static char *capture(const hs_launch_grid_t *g, const hs_model_t *m, hs_launch_fw_t fw)
{
  FILE *f = tmpfile();
  if (!f)
    return NULL;
  if (fw == HS_LAUNCH_MEGATRON)
    hs_launch_megatron_write(g, m, "plan.json", f);
  else
    hs_launch_deepspeed_write(g, f);
  long n = ftell(f);
  char *s = calloc((size_t)n + 1, 1);
  rewind(f);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n)
    s[0] = '\0';
  fclose(f);
  return s;
}

typedef struct flagv {
  char name[64];
  char value[64]; /* "" for a switch */
} flagv_t;

/* The "--name [value]" lines of the exported arguments. */
static int parse_flags(const char *text, flagv_t *out, int max)
{
  int n = 0;
  for (const char *l = text; *l && n < max;) {
    const char *e = strchr(l, '\n');
    if (!e)
      e = l + strlen(l);
    const char *p = l;
    while (p < e && *p == ' ')
      p++;
    if (p + 2 < e && p[0] == '-' && p[1] == '-') {
      flagv_t *f = &out[n++];
      memset(f, 0, sizeof *f);
      size_t k = 0;
      while (p < e && *p != ' ' && k + 1 < sizeof f->name)
        f->name[k++] = *p++;
      while (p < e && *p == ' ')
        p++;
      k = 0;
      while (p < e && *p != ' ' && *p != '\\' && k + 1 < sizeof f->value)
        f->value[k++] = *p++;
    }
    l = *e ? e + 1 : e;
  }
  return n;
}

static const flagv_t *flag_get(const flagv_t *f, int n, const char *name)
{
  for (int i = 0; i < n; i++)
    if (strcmp(f[i].name, name) == 0)
      return &f[i];
  return NULL;
}

/* The log Megatron-LM prints for these flags: its arguments block (every
 * flag as key = its name without "--", dashes as underscores; switches
 * True), the derived sizes it adds (world_size, data_parallel_size,
 * padded_vocab_size, virtual_pipeline_model_parallel_size), with
 * argparse's dest where it is not the flag's name, and iteration lines.
 * malloc'd. */
static char *synthetic_log(const flagv_t *f, int n, int world, int dp, int pp, int64_t layers,
                           int64_t vocab)
{
  size_t cap = 65536, k = 0;
  char *s = malloc(cap);
  k += (size_t)snprintf(s + k, cap - k, "using world size: %d, data-parallel size: %d\n"
                        "------------------------ arguments ------------------------\n", world, dp);
  for (int i = 0; i < n; i++) {
    char key[64];
    size_t j = 0;
    for (const char *p = f[i].name + 2; *p && j + 1 < sizeof key; p++)
      key[j++] = *p == '-' ? '_' : *p;
    key[j] = '\0';
    const char *value = f[i].value[0] ? f[i].value : "True";
    /* argparse dests that are not the flag's name (arguments.py) */
    if (strcmp(key, "disable_bias_linear") == 0) {
      hs_strlcpy(key, "add_bias_linear", sizeof key);
      value = "False";
    }
    k += (size_t)snprintf(s + k, cap - k, "  %s %.*s %s\n", key, (int)(48 - strlen(key)),
                          "................................................", value);
    /* validate_args derives the virtual pipeline size from the layers */
    if (strcmp(key, "num_layers_per_virtual_pipeline_stage") == 0)
      k += (size_t)snprintf(s + k, cap - k, "  virtual_pipeline_model_parallel_size ... %lld\n",
                            (long long)(layers / pp / atoi(value)));
  }
  k += (size_t)snprintf(s + k, cap - k,
                        "  world_size ...................................... %d\n"
                        "  data_parallel_size .............................. %d\n"
                        "  padded_vocab_size ............................... %lld\n"
                        "-------------------- end of arguments ---------------------\n",
                        world, dp, (long long)vocab);
  for (int it = 1; it <= 4; it++)
    k += (size_t)snprintf(s + k, cap - k,
                          " [2026-12-02 07:0%d:00] iteration %8d/    1000 | consumed samples: %12d "
                          "| elapsed time per iteration (ms): %.1f | learning rate: 1.000000E-04 | "
                          "global batch size: %5d | lm loss: 9.000000E+00 | loss scale: 1.0 | "
                          "number of skipped iterations:   0 | number of nan iterations:   0 |\n",
                          it, 10 * it, 640 * it, 1000.0 + it, 64);
  return s;
}

/* The run, simulated as validate --run does, holds the plan's grid and
 * layout: its summary's "tpX ppY dpZ mbs B x N microbatches" and
 * ", layers ..." parts equal the original plan's (hs_plan_describe). */
static void same_layout(const hs_run_t *run, const hs_cluster_t *c, const hs_plan_t *p,
                        const hs_model_t *m)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m2;
  hs_report_t rep;
  hs_model_init(&m2);
  hs_report_init(&rep);
  hs_status_t st = hs_run_simulate(run, c, &m2, &rep, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  if (st == HS_OK) {
    char want[512];
    hs_plan_describe(p, m, want, sizeof want);
    const char *lw = strstr(want, ", layers "), *lg = strstr(rep.plan_summary, ", layers ");
    const char *mw = strstr(want, " microbatches"), *mg = strstr(rep.plan_summary, " microbatches");
    CHECK_MSG(lw && lg && strcmp(lw, lg) == 0, "layout %s vs %s", want, rep.plan_summary);
    CHECK_MSG(mw && mg && mw - want == mg - rep.plan_summary &&
                  strncmp(want, rep.plan_summary, (size_t)(mw - want)) == 0,
              "grid %s vs %s", want, rep.plan_summary);
  }
  hs_report_destroy(&rep);
  hs_model_destroy(&m2);
}

typedef struct grid_case {
  const char *model, *cluster;
  int32_t tp, pp, dp, cp, ep, chunks, mbs;
  int64_t gb;
  hs_recompute_t recompute;
  bool sp;
  int32_t zero;
  hs_dtype_t precision;
  int32_t layers[8]; /* uneven: blocks per stage, else all 0 */
} grid_case_t;

static const grid_case_t cases[] = {
    {"gpt3-1.3b", "dgx-a100-4nodes", 2, 2, 2, 1, 1, 1, 2, 64, HS_RECOMPUTE_SELECTIVE, true, 1,
     HS_DTYPE_BF16, {0}},
    {"llama2-7b", "dgx-a100-4nodes", 2, 4, 2, 1, 1, 1, 1, 64, HS_RECOMPUTE_FULL, false, 0,
     HS_DTYPE_FP16, {6, 10, 10, 6}},
    {"llama2-7b", "dgx-a100-4nodes", 4, 2, 2, 1, 1, 1, 1, 32, HS_RECOMPUTE_NONE, true, 1,
     HS_DTYPE_BF16, {14, 18}},
    {"llama3-8b", "dgx-h100-4nodes", 2, 2, 4, 1, 1, 2, 1, 64, HS_RECOMPUTE_NONE, true, 1,
     HS_DTYPE_BF16, {0}},
    {"llama3-8b", "dgx-h100-4nodes", 2, 1, 2, 4, 1, 1, 1, 16, HS_RECOMPUTE_FULL, true, 1,
     HS_DTYPE_BF16, {0}},
    {"mixtral-8x7b", "dgx-h100-4nodes", 2, 2, 8, 1, 2, 1, 1, 64, HS_RECOMPUTE_FULL, false, 1,
     HS_DTYPE_BF16, {0}},
};

static hs_status_t make_plan(const grid_case_t *k, hs_model_t *m, hs_cluster_t *c, hs_plan_t *p,
                             hs_error_t *err)
{
  hs_status_t st = hs_model_load(k->model, 0, m, err);
  if (st == HS_OK)
    st = hs_cluster_load(k->cluster, c, err);
  if (st != HS_OK)
    return st;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = k->tp;
  g.pp = k->pp;
  g.dp = k->dp;
  g.microbatch_size = k->mbs;
  g.global_batch = k->gb;
  g.chunks = k->chunks;
  g.schedule = k->chunks > 1 ? "interleaved-1f1b" : "1f1b";
  g.recompute = k->recompute;
  hs_practice_init(&g.practice);
  g.practice.sequence_parallel = k->sp;
  g.practice.zero_stage = k->zero;
  g.practice.context_parallel = k->cp;
  g.practice.expert_parallel = k->ep;
  if (k->layers[0]) {
    g.stage_layers = k->layers;
    g.n_stage_layers = k->pp;
  }
  st = hs_plan_grid(m, c, &g, p, err);
  if (st == HS_OK)
    p->precision = k->precision;
  return st;
}

/* Every exported flag / key is one of the framework's; the round trip
 * through a synthetic log gives the grid back. */
static void test_round_trip(void)
{
  names_t mflags = load_names("export/megatron_arguments_v0.15.3.txt");
  names_t dkeys = load_names("export/deepspeed_config_keys_v0.16.4.txt");
  CHECK(mflags.n > 500 && dkeys.n > 50);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const grid_case_t *k = &cases[ci];
    hs_error_t err;
    hs_error_init(&err);
    hs_model_t m;
    hs_cluster_t c;
    hs_plan_t p;
    hs_model_init(&m);
    hs_cluster_init(&c);
    hs_plan_init(&p);
    hs_status_t st = make_plan(k, &m, &c, &p, &err);
    CHECK_MSG(st == HS_OK, "case %zu: %s", ci, err.msg);
    hs_launch_grid_t g;
    if (st == HS_OK) {
      st = hs_launch_grid(&p, &m, &c, HS_LAUNCH_MEGATRON, &g, &err);
      CHECK_MSG(st == HS_OK, "case %zu: %s", ci, err.msg);
    }
    if (st == HS_OK) {
      char *text = capture(&g, &m, HS_LAUNCH_MEGATRON);
      flagv_t f[64];
      int n = parse_flags(text, f, 64);
      CHECK(n >= 10);
      for (int i = 0; i < n; i++)
        CHECK_MSG(has_name(&mflags, f[i].name), "case %zu: %s is not a Megatron-LM flag", ci,
                  f[i].name);
      /* uneven first / last stages as Megatron's flags say them */
      const flagv_t *ff = flag_get(f, n, "--decoder-first-pipeline-num-layers");
      const flagv_t *fl = flag_get(f, n, "--decoder-last-pipeline-num-layers");
      if (k->layers[0]) {
        CHECK(ff && atoi(ff->value) == k->layers[0]);
        CHECK(fl && atoi(fl->value) == k->layers[k->pp - 1]);
      } else {
        CHECK(!ff && !fl);
      }
      const flagv_t *fv = flag_get(f, n, "--num-layers-per-virtual-pipeline-stage");
      CHECK(k->chunks > 1 ? fv && atoi(fv->value) == m.cfg.layers / (k->pp * k->chunks) : !fv);
      const flagv_t *fc = flag_get(f, n, "--context-parallel-size");
      CHECK(k->cp > 1 ? fc && atoi(fc->value) == k->cp : !fc);
      const flagv_t *fe = flag_get(f, n, "--expert-model-parallel-size");
      CHECK(k->ep > 1 ? fe && atoi(fe->value) == k->ep : !fe);
      /* the log Megatron would print, read back */
      char *log = synthetic_log(f, n, k->tp * k->pp * k->dp * k->cp, k->dp, k->pp, m.cfg.layers,
                                m.cfg.vocab);
      hs_run_t run;
      hs_megatron_opts_t o;
      hs_megatron_opts_init(&o);
      st = hs_megatron_log_parse(log, "train.log", &o, &run, &err);
      if (k->cp > 1) { /* not in run.json yet: refused by name */
        CHECK_EQ_INT(st, HS_EINVAL);
        CHECK_CONTAINS(err.msg, "context_parallel_size 4: runs with context parallelism");
        st = HS_EINVAL;
      } else
        CHECK_MSG(st == HS_OK, "case %zu: %s", ci, err.msg);
      if (st == HS_OK) {
        CHECK_EQ_INT(run.plan.tp, k->tp);
        CHECK_EQ_INT(run.plan.pp, k->pp);
        CHECK_EQ_INT(run.plan.dp, k->dp);
        CHECK_EQ_INT(run.plan.microbatch_size, k->mbs);
        CHECK_EQ_INT(run.plan.global_batch, k->gb);
        CHECK_EQ_INT(run.plan.chunks, k->chunks);
        CHECK_EQ_INT(run.plan.recompute, k->recompute);
        CHECK_EQ_INT(run.plan.sequence_parallel, k->sp);
        CHECK_EQ_INT(run.plan.distributed_optimizer, k->zero >= 1);
        CHECK_EQ_INT(run.model.layers, m.cfg.layers);
        CHECK_EQ_INT(run.model.hidden, m.cfg.hidden);
        CHECK_EQ_INT(run.model.heads, m.cfg.heads);
        CHECK_EQ_INT(run.model.kv_heads, m.cfg.kv_heads);
        CHECK_EQ_INT(run.model.ffn, m.cfg.ffn);
        CHECK_EQ_INT(run.model.seq_len, m.seq_len);
        CHECK_EQ_INT(run.model.act, m.cfg.act);
        CHECK_EQ_INT(run.model.norm, m.cfg.norm);
        CHECK_EQ_INT(run.model.tied_embeddings, m.cfg.tied_embeddings);
        CHECK_EQ_INT(run.model.bias, m.cfg.bias);
        CHECK_EQ_INT(run.model.experts, m.cfg.experts);
        CHECK_EQ_INT(run.model.dtype, k->precision);
        CHECK_EQ_INT(run.world_size, k->tp * k->pp * k->dp * k->cp);
        CHECK_EQ_INT(run.measured.n_iterations, 3);
        CHECK_EQ_INT(run.plan.first_stage_layers, ff ? k->layers[0] : 0);
        CHECK_EQ_INT(run.plan.last_stage_layers, fl ? k->layers[k->pp - 1] : 0);
        same_layout(&run, &c, &p, &m);
      }
      hs_run_destroy(&run);
      free(log);
      free(text);
    }
    hs_plan_destroy(&p);
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
  free_names(&mflags);
  free_names(&dkeys);
}

/* Every dotted key path of a JSON object is in the list. */
static void check_keys(const cJSON *j, const char *prefix, const names_t *keys)
{
  for (const cJSON *e = j->child; e; e = e->next) {
    char path[160];
    snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", e->string);
    CHECK_MSG(has_name(keys, path), "%s is not a DeepSpeed config key", path);
    if (cJSON_IsObject(e))
      check_keys(e, path, keys);
  }
}

/* DeepSpeed plans: data parallel (with ZeRO 1-3), pipelines; the config's
 * batch arithmetic is DeepSpeed's own identity train_batch_size =
 * micro x accumulation x data-parallel ranks. */
static void test_deepspeed(void)
{
  names_t dkeys = load_names("export/deepspeed_config_keys_v0.16.4.txt");
  static const struct {
    int32_t pp, dp, mbs, zero;
    int64_t gb;
    hs_recompute_t rc;
    hs_dtype_t dt;
  } dc[] = {{1, 32, 2, 3, 256, HS_RECOMPUTE_NONE, HS_DTYPE_BF16},
            {4, 8, 1, 1, 64, HS_RECOMPUTE_FULL, HS_DTYPE_FP16},
            {2, 16, 4, 0, 128, HS_RECOMPUTE_NONE, HS_DTYPE_FP32}};
  for (size_t i = 0; i < sizeof dc / sizeof dc[0]; i++) {
    grid_case_t k = {"gpt3-1.3b", "dgx-a100-4nodes", 1, dc[i].pp, dc[i].dp, 1, 1, 1, dc[i].mbs,
                     dc[i].gb, dc[i].rc, false, dc[i].zero, dc[i].dt, {0}};
    hs_error_t err;
    hs_error_init(&err);
    hs_model_t m;
    hs_cluster_t c;
    hs_plan_t p;
    hs_model_init(&m);
    hs_cluster_init(&c);
    hs_plan_init(&p);
    hs_launch_grid_t g;
    hs_status_t st = make_plan(&k, &m, &c, &p, &err);
    if (st == HS_OK)
      st = hs_launch_grid(&p, &m, &c, HS_LAUNCH_DEEPSPEED, &g, &err);
    CHECK_MSG(st == HS_OK, "deepspeed case %zu: %s", i, err.msg);
    if (st == HS_OK) {
      char *text = capture(&g, &m, HS_LAUNCH_DEEPSPEED);
      cJSON *j = NULL;
      CHECK_MSG(hs_json_parse(text, "ds_config.json", &j, &err) == HS_OK, "%s", err.msg);
      if (j) {
        check_keys(j, "", &dkeys);
        int64_t tb = (int64_t)cJSON_GetObjectItem(j, "train_batch_size")->valuedouble;
        int64_t mb = (int64_t)cJSON_GetObjectItem(j, "train_micro_batch_size_per_gpu")->valuedouble;
        int64_t ga = (int64_t)cJSON_GetObjectItem(j, "gradient_accumulation_steps")->valuedouble;
        CHECK_EQ_INT(tb, dc[i].gb);
        CHECK_EQ_INT(mb * ga * dc[i].dp, tb);
        const cJSON *z = cJSON_GetObjectItem(j, "zero_optimization");
        CHECK(z && (int)cJSON_GetObjectItem(z, "stage")->valuedouble == dc[i].zero);
        const cJSON *pl = cJSON_GetObjectItem(j, "pipeline");
        CHECK(dc[i].pp > 1 ? pl && (int)cJSON_GetObjectItem(pl, "stages")->valuedouble == dc[i].pp
                           : !pl);
        CHECK((cJSON_GetObjectItem(j, "bf16") != NULL) == (dc[i].dt == HS_DTYPE_BF16));
        CHECK((cJSON_GetObjectItem(j, "fp16") != NULL) == (dc[i].dt == HS_DTYPE_FP16));
        cJSON_Delete(j);
      }
      free(text);
    }
    hs_plan_destroy(&p);
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
  free_names(&dkeys);
}

/* One grid plan edited into something a framework cannot run: refused
 * with HS_EINFEASIBLE and the message naming it. */
static void expect_extra(const char *model, const char *cluster, int32_t tp, int32_t pp,
                         int32_t dp, int32_t cp, int32_t zero, hs_launch_fw_t fw, int edit,
                         const char *needle)
{
  grid_case_t k = {model, cluster, tp, pp, dp, cp, 1, 1, 2, 8 * dp, HS_RECOMPUTE_NONE, false,
                   zero, HS_DTYPE_BF16, {0}};
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t p;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&p);
  hs_status_t st = make_plan(&k, &m, &c, &p, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  if (st == HS_OK) {
    hs_plan_stage_t *s0 = &p.pipelines[0].stages[0];
    if (edit == 1) /* per-stage TP: stage 1 of pipeline 0 on one GPU of its group */
      p.pipelines[0].stages[1].replicas[0].n_devices = 1;
    else if (edit == 2) { /* a cut one op into the first block of stage 1 */
      s0->op_last++;
      p.pipelines[0].stages[1].op_first++;
    } else if (edit == 3) { /* uneven shares over the cp replicas */
      s0->replicas[0].share = 0.75;
      s0->replicas[1].share = 0.25;
    }
    hs_launch_grid_t g;
    hs_error_init(&err);
    st = hs_launch_grid(&p, &m, &c, fw, &g, &err);
    CHECK_EQ_INT(st, HS_EINFEASIBLE);
    CHECK_CONTAINS(err.msg, needle);
  }
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_inexpressible(void)
{
  expect_extra("gpt3-1.3b", "dgx-a100-4nodes", 2, 2, 2, 1, 1, HS_LAUNCH_MEGATRON, 1,
               "per-stage TP: pipelines[0].stages[1].replicas[0] tp 1");
  expect_extra("gpt3-1.3b", "dgx-a100-4nodes", 2, 2, 2, 1, 1, HS_LAUNCH_MEGATRON, 2,
               "op-level cut inside block 12");
  expect_extra("gpt3-1.3b", "dgx-a100-4nodes", 2, 2, 2, 2, 1, HS_LAUNCH_MEGATRON, 3,
               "uneven data-parallel shares: pipelines[0].stages[0].replicas[0] share 0.75");
  expect_extra("gpt3-1.3b", "dgx-a100-4nodes", 1, 1, 8, 1, 2, HS_LAUNCH_MEGATRON, 0,
               "ZeRO stage 2");
  expect_extra("gpt3-1.3b", "dgx-a100-4nodes", 2, 1, 8, 1, 1, HS_LAUNCH_DEEPSPEED, 0,
               "tensor parallelism 2");
  /* all 48 devices of a100-v100-two-sites: A100s, then V100s */
  expect_extra("gpt3-1.3b", "a100-v100-two-sites", 1, 1, 48, 1, 1, HS_LAUNCH_MEGATRON, 0,
               "heterogeneous groups (A100-SXM4-80GB and V100-SXM2-32GB");
}

int main(void)
{
  HS_RUN(test_round_trip);
  HS_RUN(test_deepspeed);
  HS_RUN(test_inexpressible);
  HS_TEST_END();
}
