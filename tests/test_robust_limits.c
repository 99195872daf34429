/*
 * test_robust_limits.c - absurd sizes (a billion GPUs, a million layers,
 * bandwidth 1e-30 GB/s, batch 0, 2^63 bytes) give a clear error naming the
 * field and the value, or are handled within the limits docs/robustness.md
 * states; never an overflow (this test runs under UBSan in the sanitizer
 * build), a hang or an absurd allocation.
 */
#include "hs_sim.h"
#include "hs_test.h"

#include <cjson/cJSON.h>

static hs_status_t cluster_text(const char *json, hs_cluster_t *c, hs_error_t *err)
{
  hs_error_init(err);
  err->warn_fp = NULL;
  hs_cluster_init(c);
  return hs_cluster_parse(json, "limits.json", c, err);
}

/* Cluster with one group of `count` nodes of `gpn` A100 and an extra
 * member text for the group. */
static hs_status_t cluster_group(const char *count, const char *gpn, const char *extra,
                                 hs_cluster_t *c, hs_error_t *err)
{
  char json[1024];
  snprintf(json, sizeof json,
           "{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": %s,"
           " \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": %s%s}]}]}",
           count, gpn, extra);
  return cluster_text(json, c, err);
}

static void expect_error(hs_status_t st, hs_status_t want, const hs_error_t *err,
                         const char *field, const char *value)
{
  CHECK_MSG(st == want, "status %s, want %s (%s)", hs_status_name(st), hs_status_name(want),
            err->msg);
  CHECK_CONTAINS(err->msg, "limits.json");
  CHECK_CONTAINS(err->msg, field);
  if (value)
    CHECK_CONTAINS(err->msg, value);
}

static void test_cluster_absurd(void)
{
  hs_cluster_t c;
  hs_error_t err;
  /* A billion GPUs: refused before anything is allocated by the count. */
  hs_status_t st = cluster_group("1000000000", "8", "", &c, &err);
  expect_error(st, HS_ELIMIT, &err, "sites[0].nodes[0].count", "1000000000");
  CHECK(c.n_devices == 0 && c.devices == NULL);
  hs_cluster_destroy(&c);
  /* 2^63 does not fit in int64: no undefined conversion. */
  st = cluster_group("9223372036854775808", "8", "", &c, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "count");
  hs_cluster_destroy(&c);
  st = cluster_group("1e400", "8", "", &c, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "count");
  hs_cluster_destroy(&c);
  st = cluster_group("1", "1000000000", "", &c, &err);
  expect_error(st, HS_ELIMIT, &err, "gpus_per_node", "1000000000");
  hs_cluster_destroy(&c);
  st = cluster_group("0", "8", "", &c, &err);
  expect_error(st, HS_EINVAL, &err, "count", "0");
  hs_cluster_destroy(&c);
  /* Bandwidth 1e-30 GB/s: below the supported 1e-6. */
  st = cluster_group("2", "8", ", \"nic\": {\"GBps\": 1e-30}", &c, &err);
  expect_error(st, HS_ELIMIT, &err, "nic.GBps", "1e-30");
  hs_cluster_destroy(&c);
  st = cluster_group("2", "8", ", \"intra_node\": {\"GBps\": 0}", &c, &err);
  expect_error(st, HS_EINVAL, &err, "intra_node.GBps", NULL);
  hs_cluster_destroy(&c);
  st = cluster_group("2", "8", ", \"nic\": {\"latency_us\": 1e300}", &c, &err);
  expect_error(st, HS_ELIMIT, &err, "nic.latency_us", "1e+300");
  hs_cluster_destroy(&c);
  /* Groups each within the limit, together above it. */
  st = cluster_text("{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": ["
                    "{\"count\": 100000, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8},"
                    "{\"count\": 100000, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8}]}]}",
                    &c, &err);
  CHECK(st == HS_ELIMIT);
  CHECK_CONTAINS(err.msg, "1048576");
  hs_cluster_destroy(&c);
  st = cluster_text("{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": ["
                    "{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 1}]},"
                    "{\"name\": \"b\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\","
                    " \"gpus_per_node\": 1}]}], \"links\": [{\"between\": [\"a\", \"b\"],"
                    " \"GBps\": 1e-30}]}",
                    &c, &err);
  expect_error(st, HS_ELIMIT, &err, "links[0].GBps", NULL);
  hs_cluster_destroy(&c);
}

/* The largest cluster accepted: exactly HS_CLUSTER_MAX_DEVICES GPUs. */
static void test_cluster_at_limit(void)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_status_t st = cluster_group("131072", "8", "", &c, &err);
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
  hs_error_init(err);
  err->warn_fp = NULL;
  hs_model_init(m);
  return hs_model_parse_json(json, "limits.json", 0, m, err);
}

static void test_model_absurd(void)
{
  hs_model_t m;
  hs_error_t err;
  hs_status_t st = model_text("\"layers\": 1000000, \"hidden\": 64, \"heads\": 1, \"ffn\": 64,"
                              " \"vocab\": 10, \"seq_len\": 8",
                              &m, &err);
  expect_error(st, HS_ELIMIT, &err, "transformer.layers", "1000000");
  CHECK(m.ops == NULL);
  hs_model_destroy(&m);
  st = model_text("\"layers\": 2, \"hidden\": 9223372036854775807, \"heads\": 1, \"ffn\": 64,"
                  " \"vocab\": 10, \"seq_len\": 8",
                  &m, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "transformer.hidden");
  hs_model_destroy(&m);
  st = model_text("\"layers\": 2, \"hidden\": 64, \"heads\": 1, \"ffn\": 64, \"vocab\": 1e30,"
                  " \"seq_len\": 8",
                  &m, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "transformer.vocab");
  hs_model_destroy(&m);
  st = model_text("\"layers\": 2, \"hidden\": 64, \"heads\": 1, \"ffn\": 64, \"vocab\": 10,"
                  " \"seq_len\": 0",
                  &m, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "transformer.seq_len");
  hs_model_destroy(&m);

  /* HuggingFace: a billion layers. */
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_model_init(&m);
  st = hs_model_parse_hf_config("{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\","
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

static hs_status_t plan_text(const char *json, hs_plan_t *p, hs_error_t *err)
{
  hs_error_init(err);
  err->warn_fp = NULL;
  hs_plan_init(p);
  return hs_plan_parse(json, "limits.json", p, err);
}

static void test_plan_absurd(void)
{
  hs_plan_t p;
  hs_error_t err;
  hs_status_t st = plan_text("{\"pipelines\": [{\"microbatch_size\": 0, \"microbatches\": 4,"
                             " \"stages\": [{\"ops\": [0, 1], \"replicas\": [{\"devices\": [0]}]}]}]}",
                             &p, &err);
  expect_error(st, HS_EINVAL, &err, "pipelines[0].microbatch_size", "0");
  hs_plan_destroy(&p);
  st = plan_text("{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 9223372036854775807,"
                 " \"stages\": [{\"ops\": [0, 1], \"replicas\": [{\"devices\": [0]}]}]}]}",
                 &p, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "pipelines[0].microbatches");
  hs_plan_destroy(&p);
  st = plan_text("{\"bucket_bytes\": 1e400, \"pipelines\": []}", &p, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "bucket_bytes");
  hs_plan_destroy(&p);
  st = plan_text("{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1,"
                 " \"stages\": [{\"ops\": [0, 1], \"replicas\": [{\"devices\": [-1]}]}]}]}",
                 &p, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "devices");
  hs_plan_destroy(&p);
}

/* A Megatron grid with a global batch of 2^30 samples in microbatches of 1
 * would simulate for days: refused by hs_plan_validate with HS_ELIMIT. */
static void test_plan_too_much_work(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  CHECK(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK);
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("dgx-a100-1node", &c, &err) == HS_OK);
  hs_grid_opts_t o;
  hs_grid_opts_init(&o);
  o.tp = 4;
  o.pp = 2;
  o.dp = 1;
  o.microbatch_size = 1;
  o.global_batch = INT64_C(1) << 30;
  hs_plan_t p;
  hs_plan_init(&p);
  hs_status_t st = hs_plan_grid(&m, &c, &o, &p, &err);
  if (st == HS_OK)
    st = hs_plan_validate(&p, &m, &c, "limits.json", &err);
  CHECK_MSG(st == HS_ELIMIT, "status %s: %s", hs_status_name(st), err.msg);
  CHECK_CONTAINS(err.msg, "microbatches");
  hs_plan_destroy(&p);
  /* global_batch 0 in the API means one microbatch per replica (the CLI
   * refuses 0, tests/cli/robust_badinput.sh). */
  hs_error_init(&err);
  o.global_batch = 0;
  hs_plan_init(&p);
  st = hs_plan_grid(&m, &c, &o, &p, &err);
  if (st == HS_OK)
    st = hs_plan_validate(&p, &m, &c, "limits.json", &err);
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
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  CHECK(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK);
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("dgx-a100-1node", &c, &err) == HS_OK);
  static const int32_t cases[][5] = {/* tp, pp, dp, mb, chunks */
                                     {INT32_MAX, INT32_MAX, INT32_MAX, 1, 1},
                                     {1, 2, 1, INT32_MAX, 1},
                                     {1, 2, 1, 1, INT32_MAX},
                                     {1, 1024, 1, 1, 1024},
                                     {1, 4, 2, 1, 1 << 20}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_grid_opts_t o;
    hs_grid_opts_init(&o);
    o.tp = cases[i][0];
    o.pp = cases[i][1];
    o.dp = cases[i][2];
    o.microbatch_size = cases[i][3];
    o.chunks = cases[i][4];
    o.schedule = "interleaved-1f1b";
    o.global_batch = 0;
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
  hs_status_t st = cluster_group("131072", "8", "", &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_model_t m;
  hs_model_init(&m);
  CHECK(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK);
  hs_grid_opts_t o;
  hs_grid_opts_init(&o);
  o.tp = 8;
  o.pp = 1;
  o.dp = 131072;
  o.microbatch_size = 1;
  o.global_batch = 131072;
  hs_plan_t p;
  hs_plan_init(&p);
  st = hs_plan_grid(&m, &c, &o, &p, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  if (st == HS_OK)
    st = hs_plan_validate(&p, &m, &c, "limits.json", &err);
  CHECK_MSG(st == HS_ELIMIT, "status %s: %s", hs_status_name(st), err.msg);
  CHECK_CONTAINS(err.msg, "262144 devices");
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* hs_profile_parse (the parse-from-memory entry point of device profiles):
 * out-of-range and malformed input name the file, the field and the value. */
static void test_profile_parse_errors(void)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_status_t st = cluster_group("1", "8", "", &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_profile_parse("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 1.5}]}",
                        "limits.json", &c, &err);
  expect_error(st, HS_ELIMIT, &err, "gpus[0].gemm_eff_max", "1.5");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_profile_parse("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"launch_us\": 1e300}]}",
                        "limits.json", &c, &err);
  CHECK(st != HS_OK);
  CHECK_CONTAINS(err.msg, "gpus[0].launch_us");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_profile_parse("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"mem_eff\": 1e-320}]}",
                        "limits.json", &c, &err);
  expect_error(st, HS_EINVAL, &err, "gpus[0].mem_eff: must be between 0.001 and 1, got 9.99", NULL);
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_profile_parse("{\"gpus\": [", "limits.json", &c, &err);
  expect_error(st, HS_EPARSE, &err, "malformed JSON", NULL);
  /* A valid profile replaces the catalog figures and marks the GPU. */
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_profile_parse("{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 0.5,"
                        " \"launch_us\": 7}]}",
                        "limits.json", &c, &err);
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
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("a100-v100-two-sites", &c, &err) == HS_OK);
  for (int k = 0; k < 2; k++) {
    hs_model_t m;
    hs_model_init(&m);
    hs_error_init(&err);
    err.warn_fp = NULL;
    CHECK(hs_model_parse_json(k ? huge_time : huge_bytes, "huge.json", 0, &m, &err) == HS_OK);
    hs_grid_opts_t o;
    hs_grid_opts_init(&o);
    o.tp = 1;
    o.pp = 2;
    o.dp = 1;
    o.microbatch_size = 1;
    o.global_batch = 4;
    hs_plan_t p;
    hs_plan_init(&p);
    hs_report_t r;
    hs_report_init(&r);
    hs_sim_opts_t so;
    hs_sim_opts_init(&so);
    hs_status_t st = hs_plan_grid(&m, &c, &o, &p, &err);
    CHECK_MSG(st == HS_OK, "%s", err.msg);
    if (st == HS_OK)
      st = hs_simulate(&m, &c, &p, &so, &r, &err);
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
  hs_model_init(&m);
  CHECK(hs_model_load("bert-base", 128, &m, &err) == HS_OK);
  hs_grid_opts_t o;
  hs_grid_opts_init(&o);
  o.tp = 2;
  o.pp = 2;
  o.dp = 1;
  o.microbatch_size = 1;
  o.global_batch = 2;
  hs_plan_t p;
  hs_plan_init(&p);
  hs_report_t r;
  hs_report_init(&r);
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  st = hs_plan_grid(&m, &c, &o, &p, &err);
  if (st == HS_OK)
    st = hs_simulate(&m, &c, &p, &so, &r, &err);
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
  HS_TEST_END();
}
