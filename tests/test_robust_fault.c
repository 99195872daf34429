/*
 * test_robust_fault.c - allocation-failure injection over every loader, a
 * small simulation and a purchase study with planners (SQLite's "malloc
 * test", in small).
 *
 * In a build configured with -DHS_FAULT_INJECT=ON (docs/robustness.md;
 * .ci/run builds build-asan/ so, with ASan), every malloc, calloc,
 * realloc and strdup of hetsim's libraries and every cJSON allocation go
 * through the counter of common/hs_fault.h. Each scenario below first runs
 * unarmed to count its allocations N, then once for every n = 1..N with the
 * n-th allocation failing. Every such run must end in an error status (never
 * HS_OK with a silently dropped allocation, never a crash); LeakSanitizer
 * (ASAN_OPTIONS=detect_leaks=1) checks at exit that no failure path leaked.
 * Allocations inside igraph, GSL and GLPK are not counted and never fail.
 *
 * In ordinary builds the scenarios run once each, unarmed, and must succeed.
 * HS_FAULT_SCENARIO=name runs one scenario only; HS_FAULT_VERBOSE=1 prints
 * the message of every injected failure; HS_FAULT_N=n injects only at n
 * (with HS_FAULT_BACKTRACE=1: prints where that allocation is made).
 */
#include "hetsim.h"
#include "hs_elastic.h"
#include "hs_export.h"
#include "hs_fault.h"
#include "hs_search.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "hs_validate.h"
#include "robust_fixture.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

typedef hs_status_t (*scenario_fn)(hs_error_t *err);

/* What a scenario produced (JSON text, malloc'd; NULL when it has no
 * output). A run whose injected failure was absorbed (HS_OK) must produce
 * exactly the unarmed run's output: recovering is fine, a different answer
 * is not. */
static char *sc_output;

/* Keeps `j` printed as the scenario's output and deletes it. j == NULL means
 * that `what`, which made it, ran out of memory: HS_ENOMEM naming `what`. */
static hs_status_t keep_output(cJSON *j, const char *what, hs_error_t *err)
{
  free(sc_output);
  sc_output = NULL;
  if (!j)
    return hs_error_set(err, HS_ENOMEM, "%s: out of memory", what);
  char *s = cJSON_PrintUnformatted(j); /* cJSON's allocations are counted too */
  cJSON_Delete(j);
  if (!s)
    return hs_error_set(err, HS_ENOMEM, "printing JSON: out of memory");
  sc_output = strdup(s);
  cJSON_free(s);
  return HS_OK;
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *t = malloc((size_t)n + 1);
  if (t && fread(t, 1, (size_t)n, f) != (size_t)n) {
    free(t);
    t = NULL;
  }
  if (t)
    t[n] = '\0';
  fclose(f);
  return t;
}

/* Texts read once, outside the counted runs (the test's own mallocs are not
 * counted anyway: only hetsim's libraries are compiled with the wrappers). */
static char *txt_cluster, *txt_gpus, *txt_model, *txt_hf;
/* Inputs of the later loaders: the valid seeds of their fuzz corpora. */
static char *txt_sweep, *txt_measured, *txt_measurements, *txt_report, *txt_trace, *txt_csv,
    *txt_elastic, *txt_measurements_pub, *txt_published;
/* The importers' inputs (issue 15): real samples and the seeds of their corpora. */
static char *txt_nccl, *txt_megatron, *txt_run, *txt_torch;
/* The interconnect catalog (issue 13). */
static char *txt_links;

/* Where each text comes from: under HETSIM_TEST_DATA (tests/data) or under
 * HETSIM_DATA (the source tree: shipped catalogs, fuzz corpora). */
static const struct {
  char **text;
  bool test_data;
  const char *path;
} inputs[] = {
    {&txt_cluster, true, "clusters/topo-3sites.json"},
    {&txt_gpus, false, "clusters/gpus.json"},
    {&txt_model, false, "models/catalog/gpt3-1.3b.json"},
    {&txt_hf, true, "models/llama2-7b/config.json"},
    {&txt_sweep, false, "tests/fuzz/corpus/sweep_spec/small.json"},
    {&txt_measured, false, "tests/fuzz/corpus/measured/replay-cpu.json"},
    {&txt_measurements, false, "tests/fuzz/corpus/measurements/microbench-cpu.json"},
    {&txt_report, false, "tests/fuzz/corpus/report_view/sim-report.json"},
    {&txt_trace, false, "tests/fuzz/corpus/trace_doc/sim-trace.json"},
    {&txt_csv, false, "tests/fuzz/corpus/table/sweep-small.csv"},
    {&txt_elastic, false, "tests/fuzz/corpus/elastic_trace/fixture.json"},
    {&txt_measurements_pub, false, "tests/fuzz/corpus/measurements/published-h100.json"},
    {&txt_published, false, "tests/fuzz/corpus/published/two-rows-options.json"},
    {&txt_nccl, true, "import/nccl_all_gather_2xH200.txt"},
    {&txt_megatron, true, "import/megatron_gpt2_1gpu.log"},
    {&txt_run, false, "tests/fuzz/corpus/run_json/gpt2_run.json"},
    {&txt_torch, false, "tests/fuzz/corpus/torch_trace/cpu_step_slice.json"},
    {&txt_links, false, "clusters/links.json"},
};

/* 2 pipeline stages, cut at op 22 of the fixture model's 44. */
static const char *plan_text =
    "{\"schedule\": \"hetero-1f1b\", \"pipelines\": [{\"microbatch_size\": 4,"
    " \"microbatches\": 4, \"stages\": ["
    " {\"ops\": [0, 22], \"warmup\": 2, \"replicas\": [{\"devices\": [0, 1]}]},"
    " {\"ops\": [22, 44], \"replicas\": [{\"devices\": [4], \"share\": 0.25},"
    "  {\"devices\": [5], \"share\": 0.75}]}]}]}";

static const char *ops_model =
    "{\"name\": \"ops\", \"dtype\": \"bf16\", \"seq_len\": 16, \"ops\": ["
    " {\"name\": \"emb\", \"kind\": \"embedding\", \"layer\": -1, \"params\": 1024, \"out_bytes\": 512,"
    "  \"tp_split\": \"vocab\", \"shardable\": [\"batch\", \"vocab\"]},"
    " {\"name\": \"l0.fc1\", \"kind\": \"gemm\", \"layer\": 0, \"fwd_flops\": 1e6, \"params\": 4096,"
    "  \"out_bytes\": 2048, \"saved_bytes\": 512, \"gemm_m\": 16, \"gemm_n\": 256, \"gemm_k\": 16,"
    "  \"tp_split\": \"column\", \"tp_allreduce_bwd\": true},"
    " {\"name\": \"loss\", \"kind\": \"loss\", \"layer\": -1, \"fwd_flops\": 100, \"out_bytes\": 4}]}";

static const char *fixture_cluster_text =
    "{\"name\": \"f\", \"sites\": [{\"name\": \"east\", \"nodes\": [{\"count\": 1,"
    " \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 4}]},"
    " {\"name\": \"west\", \"nodes\": [{\"count\": 2, \"gpu\": \"V100-SXM2-32GB\","
    " \"gpus_per_node\": 2}]}],"
    " \"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": 1.25, \"latency_us\": 50}]}";

static const char *profile_text =
    "{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 0.78, \"gemm_half_flops\": 3.1e9,"
    " \"mem_eff\": 0.86, \"launch_us\": 3.2}, {\"name\": \"NoSuchGPU\"}]}";

/* A scenario that parses one text into a caller-allocated prefix##_t
 * (prefix##_init, _parse, _destroy) and, where `to_json` is not NULL, keeps
 * the object's JSON as the output. */
#define PARSE_SCENARIO(fn, prefix, text, file, to_json)                 \
  static hs_status_t fn(hs_error_t *err)                                \
  {                                                                     \
    struct cJSON *(*const out)(const prefix##_t *) = to_json;           \
    prefix##_t x;                                                       \
    prefix##_init(&x);                                                  \
    hs_status_t st = prefix##_parse(text, file, &x, err);               \
    if (st == HS_OK && out)                                             \
      st = keep_output(out(&x), #to_json, err);                         \
    prefix##_destroy(&x);                                               \
    return st;                                                          \
  }

PARSE_SCENARIO(sc_gpu_catalog, hs_gpu_catalog, txt_gpus, "gpus.json", NULL)
PARSE_SCENARIO(sc_link_catalog, hs_link_catalog, txt_links, "links.json", NULL)
PARSE_SCENARIO(sc_sweep_spec, hs_sweep_spec, txt_sweep, "small.json", NULL)
PARSE_SCENARIO(sc_measured, hs_measured, txt_measured, "measured.json", hs_measured_to_json)
PARSE_SCENARIO(sc_measurements, hs_measurements, txt_measurements, "measurements.json",
               hs_measurements_to_json)
PARSE_SCENARIO(sc_measurements_pub, hs_measurements, txt_measurements_pub, "H100.json",
               hs_measurements_to_json)
PARSE_SCENARIO(sc_report_view, hs_report_view, txt_report, "report.json", NULL)
PARSE_SCENARIO(sc_trace_doc, hs_trace_doc, txt_trace, "trace.json", NULL)
PARSE_SCENARIO(sc_table, hs_table, txt_csv, "results.csv", NULL)
PARSE_SCENARIO(sc_run_json, hs_run, txt_run, "run.json", hs_run_to_json)

static hs_status_t sc_nccl_tests(hs_error_t *err)
{
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  hs_nccl_tests_t t;
  hs_status_t st = hs_nccl_tests_parse(txt_nccl, "all_gather_perf.txt", &o, &t, err);
  hs_nccl_tests_destroy(&t);
  return st;
}

static hs_status_t sc_megatron_log(hs_error_t *err)
{
  hs_megatron_opts_t o;
  hs_megatron_opts_init(&o);
  hs_run_t r;
  hs_status_t st = hs_megatron_log_parse(txt_megatron, "train.log", &o, &r, err);
  if (st == HS_OK)
    st = keep_output(hs_run_to_json(&r), "hs_run_to_json", err);
  hs_run_destroy(&r);
  return st;
}

static hs_status_t sc_torch_trace(hs_error_t *err)
{
  hs_torch_trace_t t;
  hs_measurements_t ms;
  hs_measured_t m;
  hs_tp_summary_t sum;
  hs_measurements_init(&ms);
  hs_measured_init(&m);
  hs_status_t st = hs_torch_trace_parse(txt_torch, "trace.json", &t, err);
  if (st == HS_OK)
    st = hs_torch_profiler_import(&t, &ms, &m, &sum, err);
  if (st == HS_OK)
    st = keep_output(hs_measured_to_json(&m), "hs_measured_to_json", err);
  hs_measured_destroy(&m);
  hs_measurements_destroy(&ms);
  hs_torch_trace_destroy(&t);
  return st;
}

/* validate's comparison over two runs, with its spread and JSON */
static hs_status_t sc_compare_runs(hs_error_t *err)
{
  hs_measured_t a, b;
  hs_report_view_t v;
  hs_comparison_t c;
  hs_report_view_init(&v);
  hs_comparison_init(&c);
  hs_status_t st = hs_measured_parse(txt_measured, "a.json", &a, err);
  if (st == HS_OK) {
    st = hs_measured_parse("{\"iterations_s\": [1.0, 1.2, 0.9]}", "b.json", &b, err);
    if (st == HS_OK) {
      const hs_measured_t *runs[2] = {&a, &b};
      st = hs_report_view_parse(txt_report, "report.json", &v, err);
      if (st == HS_OK)
        st = hs_compare_runs(&v, runs, 2, 0.1, &c, err);
      if (st == HS_OK)
        st = keep_output(hs_comparison_to_json(&c), "hs_comparison_to_json", err);
      hs_measured_destroy(&b);
    }
    hs_measured_destroy(&a);
  }
  hs_comparison_destroy(&c);
  hs_report_view_destroy(&v);
  return st;
}

static hs_status_t sc_cluster(hs_error_t *err)
{
  hs_cluster_t c;
  hs_cluster_init(&c);
  hs_topology_t *t = NULL;
  hs_status_t st = hs_cluster_parse(txt_cluster, "topo-3sites.json", &c, err);
  if (st == HS_OK)
    st = hs_topology_new(&c, &t, err);
  if (st == HS_OK)
    st = keep_output(hs_cluster_to_json(&c), "hs_cluster_to_json", err);
  hs_topology_free(t);
  hs_cluster_destroy(&c);
  return st;
}

static hs_status_t sc_model_json(hs_error_t *err)
{
  hs_model_t m;
  hs_model_init(&m);
  hs_status_t st = hs_model_parse_json(txt_model, "gpt3-1.3b.json", 0, &m, err);
  if (st == HS_OK) {
    /* Both forms are made under injection; the ops form is the output. */
    cJSON *j = hs_model_to_json(&m);
    cJSON *o = hs_model_to_ops_json(&m);
    if (!j) {
      cJSON_Delete(o);
      o = NULL;
    }
    cJSON_Delete(j);
    st = keep_output(o, "hs_model_to_json", err);
  }
  hs_model_destroy(&m);
  return st;
}

static hs_status_t sc_model_ops(hs_error_t *err)
{
  hs_model_t m, copy;
  hs_model_init(&m);
  hs_model_init(&copy);
  hs_status_t st = hs_model_parse_json(ops_model, "ops.json", 0, &m, err);
  if (st == HS_OK)
    st = hs_model_copy(&m, &copy, err);
  hs_model_destroy(&copy);
  hs_model_destroy(&m);
  return st;
}

static hs_status_t sc_hf_config(hs_error_t *err)
{
  hs_model_t m;
  hs_model_init(&m);
  hs_status_t st = hs_model_parse_hf_config(txt_hf, "config.json", 0, &m, err);
  hs_model_destroy(&m);
  return st;
}

static hs_status_t sc_catalog_load(hs_error_t *err)
{
  hs_model_t m;
  hs_model_init(&m);
  hs_cluster_t c;
  hs_cluster_init(&c);
  hs_status_t st = hs_model_load("llama2-7b", 0, &m, err);
  if (st == HS_OK)
    st = hs_cluster_load("hap-v100-p100", &c, err);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return st;
}

/* Fixed inputs of the plan and simulation scenarios, built unarmed once: a
 * 4-layer GPT (44 ops) and 8 GPUs in two sites (4 A100 | 2x2 V100). */
static hs_model_t fx_model;
static hs_cluster_t fx_cluster;

static hs_status_t sc_plan(hs_error_t *err)
{
  hs_plan_t p, copy;
  hs_plan_init(&p);
  hs_plan_init(&copy);
  hs_status_t st = hs_plan_parse(plan_text, "plan.json", &p, err);
  if (st == HS_OK)
    st = hs_plan_validate(&p, &fx_model, &fx_cluster, "plan.json", err);
  if (st == HS_OK)
    st = hs_plan_copy(&p, &copy, err);
  if (st == HS_OK)
    st = keep_output(hs_plan_to_json(&p), "hs_plan_to_json", err);
  hs_plan_destroy(&copy);
  hs_plan_destroy(&p);
  return st;
}

static hs_status_t sc_profile(hs_error_t *err)
{
  hs_cluster_t c;
  hs_cluster_init(&c);
  hs_status_t st = hs_cluster_parse(txt_cluster, "topo-3sites.json", &c, err);
  if (st == HS_OK)
    st = hs_profile_parse(profile_text, "profile.json", &c, err);
  hs_cluster_destroy(&c);
  return st;
}

/* Simulates `p` on the fixture and keeps the report's JSON as the output.
 * `print_twice`: the report is printed once more before it is kept, so that
 * cJSON's printer fails under a live report too (the simulate scenario has
 * always done so; its allocation count includes that print). */
static hs_status_t simulate_output(const hs_plan_t *p, bool print_twice, hs_error_t *err)
{
  hs_report_t r;
  hs_report_init(&r);
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  hs_status_t st = hs_simulate(&fx_model, &fx_cluster, p, &so, &r, err);
  if (st == HS_OK) {
    cJSON *j = hs_report_to_json(&r);
    if (j && print_twice) {
      char *s = cJSON_PrintUnformatted(j);
      if (!s) {
        cJSON_Delete(j);
        j = NULL;
      }
      cJSON_free(s);
    }
    st = keep_output(j, "report JSON", err);
  }
  hs_report_destroy(&r);
  return st;
}

static hs_status_t sc_simulate(hs_error_t *err)
{
  hs_plan_t p;
  hs_plan_init(&p);
  hs_status_t st = hs_plan_parse(plan_text, "plan.json", &p, err);
  if (st == HS_OK)
    st = simulate_output(&p, true, err);
  hs_plan_destroy(&p);
  return st;
}

static hs_status_t sc_grid_simulate(hs_error_t *err)
{
  hs_grid_opts_t o = robust_grid_opts(2, 2, 2, 1, 8);
  o.schedule = "interleaved-1f1b";
  o.chunks = 2;
  hs_plan_t p;
  hs_plan_init(&p);
  hs_status_t st = hs_plan_grid(&fx_model, &fx_cluster, &o, &p, err);
  if (st == HS_OK)
    st = simulate_output(&p, false, err);
  hs_plan_destroy(&p);
  return st;
}

/* A simulation that streams a kernel-detail trace (sim/trace.c opens the
 * file before simulating and writes while it runs): on success the output
 * is the trace's text; on any failure, the trace's own allocations
 * included, neither the trace nor its temporary is left in the directory. */
static hs_status_t sc_trace_simulate(hs_error_t *err)
{
  static const char dir[] = "robust_fault_trace.d", path[] = "robust_fault_trace.d/t.json";
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return hs_error_set(err, HS_EIO, "%s: %s", dir, strerror(errno));
  hs_grid_opts_t o = robust_grid_opts(2, 2, 2, 1, 8);
  hs_plan_t p;
  hs_plan_init(&p);
  hs_report_t r;
  hs_report_init(&r);
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  so.trace_path = path;
  so.trace_detail = HS_TRACE_KERNEL;
  hs_status_t st = hs_plan_grid(&fx_model, &fx_cluster, &o, &p, err);
  if (st == HS_OK)
    st = hs_simulate(&fx_model, &fx_cluster, &p, &so, &r, err);
  free(sc_output);
  sc_output = NULL;
  if (st == HS_OK) {
    sc_output = slurp(path);
    CHECK_MSG(sc_output && strstr(sc_output, "\"traceEvents\""), "trace_simulate: no trace written");
  }
  remove(path);
  DIR *d = opendir(dir);
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
    CHECK_MSG(e->d_name[0] == '.', "trace_simulate: %s left in %s (%s)", e->d_name, dir,
              st == HS_OK ? "after a success" : err->msg);
  if (d)
    closedir(d);
  rmdir(dir);
  hs_report_destroy(&r);
  hs_plan_destroy(&p);
  return st;
}

/* The flat C API (capi/hetsim.h) end to end: model and cluster from text, a
 * grid plan, a simulation and its JSON text, every handle freed. */
static hs_status_t sc_capi(hs_error_t *err)
{
  hs_api_error_t e;
  hs_api_model_t *m = hs_api_model_parse(ops_model, "ops.json", 0, &e);
  hs_api_cluster_t *c = m ? hs_api_cluster_parse(fixture_cluster_text, "fixture.json", NULL, &e) : NULL;
  hs_api_plan_t *p = c ? hs_api_plan_grid(m, c, "{\"dp\": 2, \"global_batch\": 4}", &e) : NULL;
  hs_api_report_t *r = p ? hs_api_simulate(m, c, p, NULL, &e) : NULL;
  char *json = r ? hs_api_report_json(r, &e) : NULL;
  if (json) {
    free(sc_output);
    sc_output = json;
  }
  hs_api_report_free(r);
  hs_api_plan_free(p);
  hs_api_cluster_free(c);
  hs_api_model_free(m);
  if (e.status != HS_OK)
    return hs_error_set(err, (hs_status_t)e.status, "%s", e.message);
  return HS_OK;
}

/* A purchase study through the C API with a planner (the planners' side of
 * the allocation-failure test): one option (8 A100s at a --gpu-price of
 * 1 USD/h within 10 USD/h, replacing the cluster), planned by megatron and
 * data-parallel (search/util.c hs__offer_grid), the
 * JSON text. A failure inside the search (a grid, an estimator cache entry,
 * a collective estimate) must end the study with HS_ENOMEM, never change
 * its answer. */
static hs_status_t sc_whatif_plan(hs_error_t *err)
{
  hs_api_error_t e;
  char *text = NULL;
  hs_api_model_t *m = hs_api_model_parse(ops_model, "ops.json", 0, &e);
  if (m)
    text = hs_api_whatif(m, NULL,
                         "{\"replace\": true, \"budget_usd_per_hour\": 10, \"candidates\": "
                         "\"A100-SXM4-40GB\", \"gpu_price\": \"A100-SXM4-40GB=1\", \"strategies\": "
                         "\"megatron,data-parallel\", \"global_batch\": 8, \"format\": \"json\"}",
                         &e);
  hs_api_model_free(m);
  if (e.status != HS_OK)
    return hs_error_set(err, (hs_status_t)e.status, "%s", e.message);
  free(sc_output);
  sc_output = text;
  return HS_OK;
}

/* Runs planner `name` over fx_model on `c` with `o` (hs_planner_run) and
 * keeps its plan's JSON as the output: the common end of every planner
 * scenario. */
static hs_status_t planner_output(const char *name, const hs_cluster_t *c, const hs_plan_opts_t *o,
                                  hs_error_t *err)
{
  const hs_planner_type_t *t = hs_planner_find(name);
  if (!t)
    return hs_error_set(err, HS_EINTERNAL, "no %s planner", name);
  hs_plan_t plan;
  hs_plan_init(&plan);
  hs_search_stats_t stats;
  hs_status_t st = hs_planner_run(t, &fx_model, c, o, NULL, &plan, &stats, NULL, err);
  if (st == HS_OK)
    st = keep_output(hs_plan_to_json(&plan), "hs_plan_to_json", err);
  hs_plan_destroy(&plan);
  return st;
}

/* The whale baseline's whole search on the fixture (candidates built,
 * estimated, pooled and simulated): out of memory anywhere in it is
 * HS_ENOMEM, never a different plan. Its plan's JSON is the output. */
static hs_status_t sc_whale_plan(hs_error_t *err)
{
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 8;
  return planner_output("whale", &fx_cluster, &o, err);
}

/* The autohet planner's whole search on the fixture (TP patterns, device
 * groupings, greedy points, MILPs through GLPK, the pool's simulations and
 * the practice/schedule variants of the best plan): out of memory anywhere
 * in it is HS_ENOMEM, never a different plan. Its plan's JSON is the
 * output. (GLPK's own allocations are not counted.) */
static hs_status_t sc_autohet_plan(hs_error_t *err)
{
  /* a smaller cluster than the fixture's (one 2-GPU node per site: three
   * the whole cluster only), microbatches of one: every phase runs (TP
   * patterns 1 and 2, ZeRO classes, greedy points, MILPs, pool, variants)
   * in far fewer allocations than on the fixture (93,333 there) */
  hs_cluster_t c;
  hs_cluster_init(&c);
  hs_status_t st = hs_cluster_parse(
      "{\"name\": \"f2\", \"sites\": [{\"name\": \"east\", \"nodes\": [{\"count\": 1,"
      " \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 2}]},"
      " {\"name\": \"west\", \"nodes\": [{\"count\": 1, \"gpu\": \"V100-SXM2-32GB\","
      " \"gpus_per_node\": 2}]}],"
      " \"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": 1.25, \"latency_us\": 50}]}",
      "autohet-fixture.json", &c, err);
  if (st != HS_OK)
    return st;
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 2;
  o.max_microbatch_size = 1;
  o.device_subsets = false; /* the driver's subsets only repeat the same code */
  o.search_practice = false; /* variants: the schedule only (same code as practice ones) */
  st = planner_output("autohet", &c, &o, err);
  hs_cluster_destroy(&c);
  return st;
}

/* One planner's whole search on the fixture (hs_planner_run: device
 * subsets, search, final simulations): out of memory anywhere in it is
 * HS_ENOMEM with a message, never a crash or a different plan. The plan's
 * JSON is the output. */
static hs_status_t planner_scenario(const char *name, hs_error_t *err)
{
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 8;
  /* one search over the whole cluster, two microbatch sizes: every code
   * path of the planner, at a number of allocations (each failed once, a
   * whole run per failure) that the fault build runs in minutes */
  o.device_subsets = false;
  o.max_microbatch_size = 2;
  return planner_output(name, &fx_cluster, &o, err);
}

/* hapt: the DP tables, the candidate plans, the local search and the
 * hetero-1F1B warm-up tuning. */
static hs_status_t sc_hapt_plan(hs_error_t *err) { return planner_scenario("hapt", err); }

/* hap: A*, the LP and the simulated practice configurations. */
static hs_status_t sc_hap_plan(hs_error_t *err) { return planner_scenario("hap", err); }

/* A purchase study's own allocations, without the planners (whose search
 * is the planner scenarios' business): --gpu-price overrides parsed, and
 * the JSON of a result with a feasible and an infeasible option. */
static hs_status_t sc_whatif_output(hs_error_t *err)
{
  hs_price_override_t *prices = NULL;
  size_t n_prices = 0;
  hs_whatif_result_t res;
  hs_whatif_result_init(&res);
  char *text = NULL;
  size_t len = 0;
  FILE *f = NULL;
  hs_status_t st = HS_OK;
  HS_CHECK(hs_price_overrides_parse("A100-SXM4-40GB=1.5:0.5,V100-SXM2-16GB=0.9", &prices, &n_prices, err));
  hs_strlcpy(res.model, "ops", sizeof res.model);
  res.seq_len = 2048;
  res.budget_usd_per_hour = 20.0;
  res.global_batch = 64;
  res.n_candidates = (int32_t)n_prices;
  for (size_t k = 0; k < n_prices; k++) {
    hs_strlcpy(res.candidates[k], prices[k].gpu, sizeof res.candidates[k]);
    res.candidate_usd_per_gpu_hour[k] = prices[k].ondemand_usd_h;
    hs_strlcpy(res.price_source[k], "--gpu-price", sizeof res.price_source[k]);
  }
  if (!(res.rows = hs_calloc(2, sizeof *res.rows)))
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  res.n_rows = 2;
  res.n_ok = 1;
  hs_whatif_row_t *r = &res.rows[0];
  hs_strlcpy(r->option, "8 A100-SXM4-40GB", sizeof r->option);
  r->ok = r->pareto = true;
  hs_strlcpy(r->strategy, "megatron", sizeof r->strategy);
  r->best.n_gpus = 8;
  r->best.tokens_per_s = 1e5;
  r->best.iteration_s = 1.25;
  r->usd_per_hour = r->added_usd_per_hour = 12.0;
  r->usd_per_million_tokens = 0.03;
  hs_strlcpy(r->best.plan, "tp1 pp1 dp8", sizeof r->best.plan);
  hs_strlcpy(res.rows[1].option, "8 V100-SXM2-16GB", sizeof res.rows[1].option);
  hs_strlcpy(res.rows[1].reason, "megatron: no feasible plan", sizeof res.rows[1].reason);
  if (!(f = open_memstream(&text, &len)))
    HS_FAIL(hs_error_set(err, HS_EIO, "open_memstream failed"));
  HS_CHECK(hs_whatif_write(&res, HS_WHATIF_JSON, 0, f, err));
  fclose(f);
  f = NULL;
  free(sc_output);
  sc_output = text;
  text = NULL;
cleanup:
  if (f)
    fclose(f);
  free(text);
  free(prices);
  hs_whatif_result_destroy(&res);
  return st;
}

static hs_status_t sc_elastic_trace(hs_error_t *err)
{
  hs_elastic_trace_t t;
  hs_elastic_trace_init(&t);
  hs_status_t st = hs_elastic_trace_parse(txt_elastic, "preemptions.json", &fx_cluster, &t, err);
  hs_elastic_trace_destroy(&t);
  return st;
}

/* A published-suite row file: parse, map the options, write the results
 * JSON of a result set with the first row simulated at a made-up figure
 * (the simulation itself is sc_grid_simulate's). */
static hs_status_t sc_published(hs_error_t *err)
{
  hs_pub_table_t t;
  hs_pub_table_init(&t);
  hs_status_t st = hs_pub_table_parse(txt_published, "published.json", &t, err);
  if (st == HS_OK && t.n_rows != 2)
    st = hs_error_set(err, HS_EINVAL, "two-rows-options.json: expected 2 rows, got %d", t.n_rows);
  if (st == HS_OK) {
    hs_pub_result_t res[2];
    memset(res, 0, sizeof res);
    for (int32_t i = 0; i < t.n_rows && i < 2; i++) {
      hs_pub_setup_t s;
      memset(&s, 0, sizeof s);
      res[i].not_modelled = hs_pub_options_map(&t.rows[i].opt, &s);
    }
    res[0].predicted = 150.0;
    res[0].err = 150.0 / t.rows[0].measured - 1.0;
    hs_pub_summary_t sum;
    memset(&sum, 0, sizeof sum);
    sum.n_rows = t.n_rows;
    st = keep_output(hs_pub_to_json(&t, res, &sum), "hs_pub_to_json", err);
  }
  hs_pub_table_destroy(&t);
  return st;
}

static const struct {
  const char *name;
  scenario_fn fn;
} scenarios[] = {
    {"measurements_pub", sc_measurements_pub}, {"published", sc_published},
    {"cluster", sc_cluster},       {"gpu_catalog", sc_gpu_catalog}, {"model_json", sc_model_json},
    {"model_ops", sc_model_ops},   {"hf_config", sc_hf_config},     {"catalog_load", sc_catalog_load},
    {"plan", sc_plan},             {"profile", sc_profile},         {"simulate", sc_simulate},
    {"grid_simulate", sc_grid_simulate}, {"trace_simulate", sc_trace_simulate},
    {"sweep_spec", sc_sweep_spec},   {"measured", sc_measured},   {"measurements", sc_measurements},
    {"report_view", sc_report_view}, {"trace_doc", sc_trace_doc}, {"table", sc_table},
    {"elastic_trace", sc_elastic_trace}, {"capi", sc_capi},
    {"whatif_output", sc_whatif_output}, {"whatif_plan", sc_whatif_plan},
    {"whale_plan", sc_whale_plan},
    {"autohet_plan", sc_autohet_plan},
    {"hapt_plan", sc_hapt_plan},
    {"hap_plan", sc_hap_plan},
    {"nccl_tests", sc_nccl_tests},   {"megatron_log", sc_megatron_log}, {"run_json", sc_run_json},
    {"torch_trace", sc_torch_trace}, {"compare_runs", sc_compare_runs},
    {"link_catalog", sc_link_catalog},
};

static void run_scenario(const char *name, scenario_fn fn)
{
  hs_error_t err;
  robust_error_init(&err);
  free(sc_output);
  sc_output = NULL;
  hs_fault_arm(0);
  hs_status_t st = fn(&err);
  long total = hs_fault_count();
  char *ref = sc_output;
  sc_output = NULL;
  CHECK_MSG(st == HS_OK, "%s: unarmed run failed: %s", name, err.msg);
  if (st != HS_OK || !hs_fault_enabled()) {
    free(ref);
    if (st != HS_OK)
      return;
    fprintf(stderr, "  %-14s ok, %ld counted allocations (no injection in this build)\n", name,
            total);
    return;
  }
  bool verbose = getenv("HS_FAULT_VERBOSE") != NULL;
  long n_fired = 0, n_enomem = 0, n_other = 0, n_recovered = 0;
  long n;
  long only_n = getenv("HS_FAULT_N") ? atol(getenv("HS_FAULT_N")) : 0;
  for (n = only_n > 0 ? only_n : 1;; n++) {
    robust_error_init(&err);
    hs_fault_arm(n);
    st = fn(&err);
    bool fired = hs_fault_fired();
    hs_fault_arm(0);
    if (!fired)
      break;
    n_fired++;
    if (st == HS_OK) {
      /* Absorbed: only acceptable when the answer is the same. */
      bool same = (!ref && !sc_output) || (ref && sc_output && strcmp(ref, sc_output) == 0);
      CHECK_MSG(same && ref, "%s: allocation %ld of %ld failed, the result was HS_OK but %s", name,
                n, total, ref ? "the output differs" : "there is no output to compare");
      n_recovered++;
    }
    CHECK_MSG(st == HS_OK || err.msg[0], "%s: allocation %ld: %s without a message", name, n,
              hs_status_name(st));
    free(sc_output);
    sc_output = NULL;
    if (st == HS_ENOMEM)
      n_enomem++;
    else if (st != HS_OK)
      n_other++;
    if (verbose)
      fprintf(stderr, "    %s n=%ld: %s: %s\n", name, n, hs_status_name(st), err.msg);
    if (only_n > 0)
      break;
  }
  if (only_n <= 0)
    CHECK_MSG(n - 1 == total, "%s: %ld allocations unarmed, failures injected at 1..%ld", name,
              total, n - 1);
  fprintf(stderr,
          "  %-14s %5ld allocations, each failed once: %ld HS_ENOMEM, %ld other errors, %ld "
          "recovered with the same output\n",
          name, total, n_enomem, n_other, n_recovered);
  free(ref);
}

/* Builds the fixture model and cluster, then runs every scenario, or the one
 * HS_FAULT_SCENARIO names. */
static void run_scenarios(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_transformer_cfg_t cfg;
  hs_transformer_cfg_init(&cfg);
  cfg.layers = 4;
  cfg.hidden = 128;
  cfg.heads = 2;
  cfg.kv_heads = 2;
  cfg.ffn = 512;
  cfg.vocab = 1000;
  cfg.seq_len = 64;
  cfg.max_positions = 64;
  hs_model_init(&fx_model);
  hs_cluster_init(&fx_cluster);
  CHECK(hs_model_from_transformer(&cfg, &fx_model, &err) == HS_OK);
  CHECK_MSG(fx_model.n_ops == 44, "fixture model has %zu ops (the plan cuts at 22 of 44)",
            fx_model.n_ops);
  CHECK(hs_cluster_parse(fixture_cluster_text, "fixture.json", &fx_cluster, &err) == HS_OK);

  const char *only = getenv("HS_FAULT_SCENARIO");
  fprintf(stderr, "allocation-failure injection %s\n",
          hs_fault_enabled() ? "enabled" : "not compiled in (configure with -DHS_FAULT_INJECT=ON)");
  for (size_t i = 0; i < HS_ARRAY_LEN(scenarios); i++)
    if (!only || strcmp(only, scenarios[i].name) == 0)
      run_scenario(scenarios[i].name, scenarios[i].fn);

  hs_cluster_destroy(&fx_cluster);
  hs_model_destroy(&fx_model);
}

int main(void)
{
  const char *data = getenv("HETSIM_DATA");
  bool have_inputs = true;
  for (size_t i = 0; i < HS_ARRAY_LEN(inputs); i++) {
    char path[4096];
    if (inputs[i].test_data)
      snprintf(path, sizeof path, "%s", hs_test_data(inputs[i].path));
    else
      snprintf(path, sizeof path, "%s/%s", data ? data : ".", inputs[i].path);
    *inputs[i].text = slurp(path);
    CHECK_MSG(*inputs[i].text != NULL, "cannot read %s", path);
    have_inputs = have_inputs && *inputs[i].text;
  }
  if (have_inputs)
    run_scenarios();
  for (size_t i = 0; i < HS_ARRAY_LEN(inputs); i++)
    free(*inputs[i].text);
  HS_TEST_END();
}
