/*
 * test_robust_limits.c - absurd sizes (a billion GPUs, a million layers,
 * bandwidth 1e-30 GB/s, batch 0, 2^63 bytes) give a clear error naming the
 * field and the value, or are handled within the limits docs/robustness.md
 * states; never an overflow (this test runs under UBSan in the sanitizer
 * build), a hang or an absurd allocation.
 */
#include "hs_fault.h"
#include "hs_search.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "robust_fixture.h"
#include "search_fixture.h"

#include <cjson/cJSON.h>

/* expect_error's `want` for input whose status is not specified (a number
 * that does not fit its type): any error will do. */
#define ANY_ERROR HS_STATUS__COUNT

static void expect_error(hs_status_t st, hs_status_t want, const hs_error_t *err,
                         const char *field, const char *value)
{
  if (want == ANY_ERROR)
    CHECK_MSG(st != HS_OK, "status HS_OK, want an error");
  else
    CHECK_MSG(st == want, "status %s, want %s (%s)", hs_status_name(st), hs_status_name(want),
              err->msg);
  CHECK_CONTAINS(err->msg, "limits.json");
  CHECK_CONTAINS(err->msg, field);
  if (value)
    CHECK_CONTAINS(err->msg, value);
}

static hs_status_t cluster_text(const char *json, hs_cluster_t *c, hs_error_t *err)
{
  robust_error_init(err);
  hs_cluster_init(c);
  return hs_cluster_parse(json, "limits.json", c, err);
}

/* Cluster text with one group of `count` nodes of `gpn` A100 and an extra
 * member text for the group; valid until the next call. */
static const char *group_json(const char *count, const char *gpn, const char *extra)
{
  static char json[1024];
  snprintf(json, sizeof json,
           "{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": %s,"
           " \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": %s%s}]}]}",
           count, gpn, extra);
  return json;
}

/* A refused cluster holds no devices (nothing is allocated by the count). */
static void expect_cluster_error(const char *json, hs_status_t want, const char *field,
                                 const char *value)
{
  hs_cluster_t c;
  hs_error_t err;
  expect_error(cluster_text(json, &c, &err), want, &err, field, value);
  CHECK(c.n_devices == 0 && c.devices == NULL);
  hs_cluster_destroy(&c);
}

static void test_cluster_absurd(void)
{
  /* A billion GPUs: refused before anything is allocated by the count. */
  expect_cluster_error(group_json("1000000000", "8", ""), HS_ELIMIT, "sites[0].nodes[0].count",
                       "1000000000");
  /* 2^63 does not fit in int64: no undefined conversion. */
  expect_cluster_error(group_json("9223372036854775808", "8", ""), ANY_ERROR, "count", NULL);
  expect_cluster_error(group_json("1e400", "8", ""), ANY_ERROR, "count", NULL);
  expect_cluster_error(group_json("1", "1000000000", ""), HS_ELIMIT, "gpus_per_node",
                       "1000000000");
  expect_cluster_error(group_json("0", "8", ""), HS_EINVAL, "count", "0");
  /* Bandwidth 1e-30 GB/s: below the supported 1e-6. */
  expect_cluster_error(group_json("2", "8", ", \"nic\": {\"GBps\": 1e-30}"), HS_ELIMIT, "nic.GBps",
                       "1e-30");
  expect_cluster_error(group_json("2", "8", ", \"intra_node\": {\"GBps\": 0}"), HS_EINVAL,
                       "intra_node.GBps", NULL);
  expect_cluster_error(group_json("2", "8", ", \"nic\": {\"latency_us\": 1e300}"), HS_ELIMIT,
                       "nic.latency_us", "1e+300");
  /* Groups each within the limit, together above it. */
  expect_cluster_error("{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": ["
                       "{\"count\": 100000, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8},"
                       "{\"count\": 100000, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8}]}]}",
                       HS_ELIMIT, "1048576", NULL);
  expect_cluster_error("{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": ["
                       "{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 1}]},"
                       "{\"name\": \"b\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\","
                       " \"gpus_per_node\": 1}]}], \"links\": [{\"between\": [\"a\", \"b\"],"
                       " \"GBps\": 1e-30}]}",
                       HS_ELIMIT, "links[0].GBps", NULL);
}

/* The largest cluster accepted: exactly HS_CLUSTER_MAX_DEVICES GPUs. */
static void test_cluster_at_limit(void)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_status_t st = cluster_text(group_json("131072", "8", ""), &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(c.n_devices, HS_CLUSTER_MAX_DEVICES);
  CHECK_EQ_INT(c.n_nodes, 131072);
  hs_cluster_totals_t t;
  hs_cluster_totals(&c, HS_DTYPE_BF16, &t);
  CHECK(isfinite(t.peak_flops) && t.peak_flops > 0);
  hs_cluster_destroy(&c);
}

static hs_status_t model_text(const char *transformer, hs_model_t *m, hs_error_t *err)
{
  char json[1024];
  snprintf(json, sizeof json, "{\"name\": \"m\", \"transformer\": {%s}}", transformer);
  robust_error_init(err);
  hs_model_init(m);
  return hs_model_parse_json(json, "limits.json", 0, m, err);
}

/* A refused model holds no ops. */
static void expect_model_error(const char *transformer, hs_status_t want, const char *field,
                               const char *value)
{
  hs_model_t m;
  hs_error_t err;
  expect_error(model_text(transformer, &m, &err), want, &err, field, value);
  CHECK(m.ops == NULL);
  hs_model_destroy(&m);
}

static void test_model_absurd(void)
{
  expect_model_error("\"layers\": 1000000, \"hidden\": 64, \"heads\": 1, \"ffn\": 64,"
                     " \"vocab\": 10, \"seq_len\": 8",
                     HS_ELIMIT, "transformer.layers", "1000000");
  expect_model_error("\"layers\": 2, \"hidden\": 9223372036854775807, \"heads\": 1, \"ffn\": 64,"
                     " \"vocab\": 10, \"seq_len\": 8",
                     ANY_ERROR, "transformer.hidden", NULL);
  expect_model_error("\"layers\": 2, \"hidden\": 64, \"heads\": 1, \"ffn\": 64, \"vocab\": 1e30,"
                     " \"seq_len\": 8",
                     ANY_ERROR, "transformer.vocab", NULL);
  expect_model_error("\"layers\": 2, \"hidden\": 64, \"heads\": 1, \"ffn\": 64, \"vocab\": 10,"
                     " \"seq_len\": 0",
                     ANY_ERROR, "transformer.seq_len", NULL);

  /* HuggingFace: a billion layers. */
  hs_model_t m;
  hs_error_t err;
  robust_error_init(&err);
  hs_model_init(&m);
  hs_status_t st = hs_model_parse_hf_config(
      "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\","
      " \"hidden_size\": 4096, \"num_attention_heads\": 32,"
      " \"num_hidden_layers\": 1000000000, \"intermediate_size\": 11008,"
      " \"vocab_size\": 32000, \"max_position_embeddings\": 4096}",
      "config.json", 0, &m, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "config.json");
  CHECK_CONTAINS(err.msg, "num_hidden_layers");
  hs_model_destroy(&m);
}

/* The largest generator sizes together: accounting stays finite (double
 * throughout, docs/models.md). */
static void test_model_at_limits(void)
{
  hs_model_t m;
  hs_error_t err;
  hs_status_t st = model_text("\"layers\": 2, \"hidden\": 1000000, \"heads\": 1, \"ffn\": 10000000,"
                              " \"vocab\": 100000000, \"seq_len\": 10000000,"
                              " \"max_positions\": 100000000",
                              &m, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_model_flops_t f;
  hs_model_flops(&m, 1e6, &f);
  hs_model_totals_t t;
  hs_model_totals(&m, 0, m.n_ops, &t);
  CHECK(isfinite(f.fwd_bwd) && f.fwd_bwd > 0);
  CHECK(isfinite(f.fwd_bwd_recompute));
  CHECK(isfinite(t.params) && isfinite(t.saved_bytes));
  hs_model_destroy(&m);
}

static void expect_plan_error(const char *json, hs_status_t want, const char *field,
                              const char *value)
{
  hs_plan_t p;
  hs_error_t err;
  robust_error_init(&err);
  hs_plan_init(&p);
  expect_error(hs_plan_parse(json, "limits.json", &p, &err), want, &err, field, value);
  hs_plan_destroy(&p);
}

static void test_plan_absurd(void)
{
  expect_plan_error("{\"pipelines\": [{\"microbatch_size\": 0, \"microbatches\": 4,"
                    " \"stages\": [{\"ops\": [0, 1], \"replicas\": [{\"devices\": [0]}]}]}]}",
                    HS_EINVAL, "pipelines[0].microbatch_size", "0");
  expect_plan_error("{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 9223372036854775807,"
                    " \"stages\": [{\"ops\": [0, 1], \"replicas\": [{\"devices\": [0]}]}]}]}",
                    ANY_ERROR, "pipelines[0].microbatches", NULL);
  expect_plan_error("{\"bucket_bytes\": 1e400, \"pipelines\": []}", ANY_ERROR, "bucket_bytes",
                    NULL);
  expect_plan_error("{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1,"
                    " \"stages\": [{\"ops\": [0, 1], \"replicas\": [{\"devices\": [-1]}]}]}]}",
                    ANY_ERROR, "devices", NULL);
}

/* Catalog entries the plan and simulation cases start from. */
static void load_model(const char *spec, int64_t seq_len, hs_model_t *m, hs_error_t *err)
{
  hs_model_init(m);
  CHECK_MSG(hs_model_load(spec, seq_len, m, err) == HS_OK, "%s: %s", spec, err->msg);
}

static void load_cluster(const char *name, hs_cluster_t *c, hs_error_t *err)
{
  hs_cluster_init(c);
  CHECK_MSG(hs_cluster_load(name, c, err) == HS_OK, "%s: %s", name, err->msg);
}

/* The catalog's 1.3B GPT on one DGX A100 node (8 GPUs), with `err` reset. */
static void load_gpt_dgx(hs_model_t *m, hs_cluster_t *c, hs_error_t *err)
{
  hs_error_init(err);
  load_model("gpt3-1.3b", 0, m, err);
  load_cluster("dgx-a100-1node", c, err);
}

/* Plans `o` on m and c into p (initialised here; the caller destroys it) and
 * validates the plan. */
static hs_status_t grid_validate(const hs_model_t *m, const hs_cluster_t *c,
                                 const hs_grid_opts_t *o, hs_plan_t *p, hs_error_t *err)
{
  hs_plan_init(p);
  hs_status_t st = hs_plan_grid(m, c, o, p, err);
  if (st == HS_OK)
    st = hs_plan_validate(p, m, c, "limits.json", err);
  return st;
}

/* Plans `o` on m and c into p and simulates it into r (both initialised
 * here; the caller destroys them). */
static hs_status_t grid_simulate(const hs_model_t *m, const hs_cluster_t *c,
                                 const hs_grid_opts_t *o, hs_plan_t *p, hs_report_t *r,
                                 hs_error_t *err)
{
  hs_plan_init(p);
  hs_report_init(r);
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  hs_status_t st = hs_plan_grid(m, c, o, p, err);
  if (st == HS_OK)
    st = hs_simulate(m, c, p, &so, r, err);
  return st;
}

/* A Megatron grid with a global batch of 2^30 samples in microbatches of 1
 * would simulate for days: refused by hs_plan_validate with HS_ELIMIT. */
static void test_plan_too_much_work(void)
{
  hs_error_t err;
  hs_model_t m;
  hs_cluster_t c;
  load_gpt_dgx(&m, &c, &err);
  hs_grid_opts_t o = robust_grid_opts(4, 2, 1, 1, INT64_C(1) << 30);
  hs_plan_t p;
  hs_status_t st = grid_validate(&m, &c, &o, &p, &err);
  CHECK_MSG(st == HS_ELIMIT, "status %s: %s", hs_status_name(st), err.msg);
  CHECK_CONTAINS(err.msg, "microbatches");
  hs_plan_destroy(&p);
  /* global_batch 0 in the API means one microbatch per replica (the CLI
   * refuses 0, tests/cli/robust_badinput.sh). */
  hs_error_init(&err);
  o.global_batch = 0;
  st = grid_validate(&m, &c, &o, &p, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(hs_plan_global_batch(&p), 1);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* The grid API with absurd degrees: an error, no integer overflow (UBSan
 * checks in the sanitizer build). */
static void test_grid_absurd_degrees(void)
{
  hs_error_t err;
  hs_model_t m;
  hs_cluster_t c;
  load_gpt_dgx(&m, &c, &err);
  static const int32_t cases[][5] = {/* tp, pp, dp, mb, chunks */
                                     {INT32_MAX, INT32_MAX, INT32_MAX, 1, 1},
                                     {1, 2, 1, INT32_MAX, 1},
                                     {1, 2, 1, 1, INT32_MAX},
                                     {1, 1024, 1, 1, 1024},
                                     {1, 4, 2, 1, 1 << 20}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_grid_opts_t o = robust_grid_opts(cases[i][0], cases[i][1], cases[i][2], cases[i][3], 0);
    o.chunks = cases[i][4];
    o.schedule = "interleaved-1f1b";
    hs_plan_t p;
    hs_plan_init(&p);
    hs_error_init(&err);
    hs_status_t st = hs_plan_grid(&m, &c, &o, &p, &err);
    CHECK_MSG(st == HS_EINVAL || st == HS_ELIMIT, "case %zu: %s (%s)", i, hs_status_name(st),
              err.msg);
    hs_plan_destroy(&p);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* A plan over the largest cluster (2^20 GPUs) would simulate for many
 * minutes and gigabytes: refused with HS_ELIMIT (more than 2^18 device
 * places). The cluster itself loads (test_cluster_at_limit). */
static void test_plan_too_many_devices(void)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_status_t st = cluster_text(group_json("131072", "8", ""), &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_model_t m;
  load_model("gpt3-1.3b", 0, &m, &err);
  hs_grid_opts_t o = robust_grid_opts(8, 1, 131072, 1, 131072);
  hs_plan_t p;
  st = grid_validate(&m, &c, &o, &p, &err);
  /* The grid is built (a failed hs_plan_grid leaves p empty); only
   * validation refuses it. */
  CHECK_MSG(hs_plan_global_batch(&p) == 131072, "grid not built: %s", err.msg);
  CHECK_MSG(st == HS_ELIMIT, "status %s: %s", hs_status_name(st), err.msg);
  CHECK_CONTAINS(err.msg, "262144 devices");
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* hs_profile_parse (the parse-from-memory entry point of device profiles):
 * out-of-range and malformed input name the file, the field and the value. */
static hs_status_t profile_text(const char *json, hs_cluster_t *c, hs_error_t *err)
{
  robust_error_init(err);
  return hs_profile_parse(json, "limits.json", c, err);
}

static void test_profile_parse_errors(void)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_status_t st = cluster_text(group_json("1", "8", ""), &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  st = profile_text("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 1.5}]}", &c, &err);
  expect_error(st, HS_ELIMIT, &err, "gpus[0].gemm_eff_max", "1.5");
  st = profile_text("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"launch_us\": 1e300}]}", &c, &err);
  expect_error(st, ANY_ERROR, &err, "gpus[0].launch_us", NULL);
  st = profile_text("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"mem_eff\": 1e-320}]}", &c, &err);
  expect_error(st, HS_EINVAL, &err, "gpus[0].mem_eff: must be between 0.001 and 1, got 9.99", NULL);
  st = profile_text("{\"gpus\": [", &c, &err);
  expect_error(st, HS_EPARSE, &err, "malformed JSON", NULL);
  /* A valid profile replaces the catalog figures and marks the GPU. */
  st = profile_text("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 0.5,"
                    " \"launch_us\": 7}]}",
                    &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  CHECK(c.gpus.gpus[c.devices[0].gpu].gemm_eff_max == 0.5);
  CHECK(c.gpus.gpus[c.devices[0].gpu].launch_us == 7.0);
  CHECK(c.gpus.gpus[c.devices[0].gpu].calibrated);
  hs_cluster_destroy(&c);
}

/* 2^63 bytes of activations and weights per op and 1e30 FLOPs: memory is
 * reported as OOM with finite numbers; the iteration would last 1e10 s on
 * 1.25 GB/s, past the 100-year horizon of the ns clock, so the simulation
 * says so instead of printing a saturated time (MFU above 1). */
static void test_sim_huge_values(void)
{
  static const char *huge_bytes =
      "{\"name\": \"huge\", \"dtype\": \"bf16\", \"seq_len\": 1, \"ops\": ["
      " {\"name\": \"a\", \"kind\": \"gemm\", \"layer\": 0, \"fwd_flops\": 1e6,"
      "  \"params\": 9.2233720368547758e18, \"out_bytes\": 1e3, \"saved_bytes\": 9.2233720368547758e18,"
      "  \"tp_split\": \"column\"},"
      " {\"name\": \"b\", \"kind\": \"gemm\", \"layer\": 1, \"fwd_flops\": 1e6, \"out_bytes\": 1e3,"
      "  \"tp_split\": \"column\"}]}";
  static const char *huge_time =
      "{\"name\": \"forever\", \"dtype\": \"bf16\", \"seq_len\": 1, \"ops\": ["
      " {\"name\": \"a\", \"kind\": \"gemm\", \"layer\": 0, \"fwd_flops\": 1e30, \"out_bytes\": 1e30,"
      "  \"tp_split\": \"column\"},"
      " {\"name\": \"b\", \"kind\": \"gemm\", \"layer\": 1, \"fwd_flops\": 1e30, \"tp_split\": \"column\"}]}";
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  load_cluster("a100-v100-two-sites", &c, &err);
  for (int k = 0; k < 2; k++) {
    hs_model_t m;
    hs_model_init(&m);
    robust_error_init(&err);
    CHECK(hs_model_parse_json(k ? huge_time : huge_bytes, "huge.json", 0, &m, &err) == HS_OK);
    hs_grid_opts_t o = robust_grid_opts(1, 2, 1, 1, 4);
    hs_plan_t p;
    hs_report_t r;
    hs_status_t st = grid_simulate(&m, &c, &o, &p, &r, &err);
    /* The grid is built (a failed hs_plan_grid leaves p empty). */
    CHECK_MSG(hs_plan_global_batch(&p) == 4, "grid not built: %s", err.msg);
    if (k == 0) {
      CHECK_MSG(st == HS_OK, "%s", err.msg);
      CHECK(r.oom);
      CHECK(isfinite(r.max_peak_memory_bytes) && r.max_peak_memory_bytes >= 9.2e18);
      CHECK(isfinite(r.iteration_time_s) && r.mfu >= 0 && r.mfu <= 1);
    } else {
      CHECK_MSG(st == HS_ELIMIT, "status %s (%s), time %g s, mfu %g", hs_status_name(st), err.msg,
                r.iteration_time_s, r.mfu);
      CHECK_CONTAINS(err.msg, "100 years");
    }
    hs_report_destroy(&r);
    hs_plan_destroy(&p);
    hs_model_destroy(&m);
  }
  hs_cluster_destroy(&c);
}

/* The slowest bandwidth accepted (1e-6 GB/s = 1 kB/s) on every port: a
 * small model still gives a finite, sane report (or the horizon error). */
static void test_sim_slowest_network(void)
{
  hs_error_t err;
  hs_cluster_t c;
  hs_status_t st = cluster_text(
      "{\"name\": \"slow\", \"sites\": [{\"name\": \"a\", \"fabric\": {\"GBps\": 1e-6},"
      " \"nodes\": [{\"count\": 2, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 2,"
      " \"intra_node\": {\"GBps\": 1e-6}, \"nic\": {\"GBps\": 1e-6}}]}]}",
      &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_model_t m;
  load_model("bert-base", 128, &m, &err);
  hs_grid_opts_t o = robust_grid_opts(2, 2, 1, 1, 2);
  hs_plan_t p;
  hs_report_t r;
  st = grid_simulate(&m, &c, &o, &p, &r, &err);
  CHECK_MSG(st == HS_OK || st == HS_ELIMIT, "%s", err.msg);
  if (st == HS_OK) {
    CHECK(isfinite(r.iteration_time_s) && r.iteration_time_s > 1.0);
    CHECK(r.mfu >= 0 && r.mfu <= 1);
    CHECK(isfinite(r.cost_usd_per_million_tokens));
  }
  hs_report_destroy(&r);
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* A global batch of 2^31 on 8 GPUs would need 2^31 / (8 x 8) = 2^25
 * microbatches per pipeline: every strategy refuses it with HS_ELIMIT
 * naming the batch, the count needed and the limit, before allocating
 * anything (in a fault-injection build the first allocation is armed to
 * fail, so an allocation before the refusal would show as HS_ENOMEM or a
 * fired fault). Before the limit, the CLI spent 113 s and 4.3 GB on it. */
static void test_search_batch_limit(void)
{
  hs_error_t err;
  hs_model_t m;
  hs_cluster_t c;
  load_gpt_dgx(&m, &c, &err);
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = INT64_C(1) << 31;
    hs_plan_t p;
    hs_search_stats_t stats;
    hs_report_t r;
    robust_error_init(&err);
    hs_fault_arm(1);
    hs_status_t st = hs_planner_run(*t, &m, &c, &o, NULL, &p, &stats, &r, &err);
    bool fired = hs_fault_fired();
    hs_fault_arm(0);
    CHECK_MSG(st == HS_ELIMIT, "%s: status %s (%s)", (*t)->name, hs_status_name(st), err.msg);
    CHECK_MSG(!fired, "%s: allocated before refusing", (*t)->name);
    CHECK_CONTAINS(err.msg, "2147483648");
    CHECK_CONTAINS(err.msg, "33554432"); /* 2^31 / (8 GPUs x 8 samples) */
    CHECK_CONTAINS(err.msg, "HS_SEARCH_MAX_MICROBATCHES");
    hs_report_destroy(&r);
    hs_plan_destroy(&p);
  }
  /* At the limit (2^16 x 64 samples) the batch passes the check: whatever
   * the search answers, it is not this refusal. */
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = HS_SEARCH_MAX_MICROBATCHES * 64;
  o.deadline_s = 1e-9; /* long past: no search work, only the check */
  hs_plan_t p;
  hs_search_stats_t stats;
  robust_error_init(&err);
  hs_status_t st = hs_planner_run(hs_planner_find("megatron"), &m, &c, &o, NULL, &p, &stats, NULL,
                                  &err);
  CHECK_MSG(strstr(err.msg, "HS_SEARCH_MAX_MICROBATCHES") == NULL, "%s: %s", hs_status_name(st),
            err.msg);
  hs_plan_destroy(&p);
  /* one sample more is refused */
  o.global_batch++;
  robust_error_init(&err);
  st = hs_planner_run(hs_planner_find("megatron"), &m, &c, &o, NULL, &p, &stats, NULL, &err);
  CHECK_MSG(st == HS_ELIMIT, "status %s (%s)", hs_status_name(st), err.msg);
  CHECK_CONTAINS(err.msg, "65537 microbatches");
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* A deadline already past (hs_plan_opts_t.deadline_s, what --time-limit
 * becomes): every strategy stops at once and says the time limit left it
 * without a plan (HS_ELIMIT, exit 2), or returns a plan whose note says it
 * stopped at the time limit; never a search run to its end, never "no
 * feasible plan". No wall clock is read by the test. The model is small
 * enough for exhaustive (4 blocks, 4 GPUs). */
static void test_search_deadline_past(void)
{
  hs_error_t err;
  hs_model_t m;
  hs_cluster_t c;
  small_gpt(&m, 4, 256, 128);
  robust_error_init(&err);
  CHECK(two_site_cluster(&c, 2, 25.0, 5.0, &err) == HS_OK);
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.deadline_s = 1e-9;
    hs_plan_t p;
    hs_search_stats_t stats;
    hs_report_t r;
    robust_error_init(&err);
    hs_status_t st = hs_planner_run(*t, &m, &c, &o, NULL, &p, &stats, &r, &err);
    if (st == HS_OK) {
      CHECK_MSG(strstr(stats.note, "time limit") != NULL, "%s: a plan without the time-limit "
                "note: %s", (*t)->name, stats.note);
    } else {
      CHECK_MSG(st == HS_ELIMIT, "%s: status %s (%s)", (*t)->name, hs_status_name(st), err.msg);
      CHECK_CONTAINS(err.msg, "time limit");
    }
    hs_report_destroy(&r);
    hs_plan_destroy(&p);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_cluster_absurd);
  HS_RUN(test_cluster_at_limit);
  HS_RUN(test_model_absurd);
  HS_RUN(test_model_at_limits);
  HS_RUN(test_plan_absurd);
  HS_RUN(test_plan_too_much_work);
  HS_RUN(test_grid_absurd_degrees);
  HS_RUN(test_plan_too_many_devices);
  HS_RUN(test_profile_parse_errors);
  HS_RUN(test_sim_huge_values);
  HS_RUN(test_sim_slowest_network);
  HS_RUN(test_search_batch_limit);
  HS_RUN(test_search_deadline_past);
  HS_TEST_END();
}
