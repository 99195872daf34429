/*
 * test_robust_numeric.c - numeric hygiene: degenerate inputs (ops with zero
 * FLOPs and zero bytes, zero-byte transfers between stages and for gradient
 * synchronisation, a single device, an ideal GPU with no launch overhead so
 * that an iteration can take zero time, a free GPU) must give reports whose
 * every number is finite and sane.
 *
 * The check is independent of the report code: the report is printed to JSON
 * text, parsed back, and every value walked. cJSON prints NaN and infinity as
 * `null`, so a null anywhere is a failure, as is a negative time, byte count
 * or throughput, a fraction (mfu, bubble_fraction, utilisation) outside
 * [0, 1], and the in-memory doubles that are not finite.
 */
#include "hs_sim.h"
#include "hs_test.h"
#include "robust_fixture.h"

#include <cjson/cJSON.h>

static const char *ideal_cluster_fmt =
    "{\"name\": \"ideal\","
    " \"gpus\": [{\"name\": \"Ideal\", \"vendor\": \"test\", \"memory_GiB\": 80,"
    "   \"mem_bw_GBps\": 1000, \"peak_tflops\": {\"fp32\": 1, \"fp16\": 1, \"bf16\": 1, \"fp8\": 0},"
    "   \"gemm_eff_max\": 1, \"gemm_half_flops\": 0, \"mem_eff\": 1, \"launch_us\": 0,"
    "   \"price_ondemand_usd_h\": %s, \"price_spot_usd_h\": 0}],"
    " \"sites\": [{\"name\": \"s\", \"fabric\": {\"latency_us\": 0},"
    "   \"nodes\": [{\"count\": %d, \"gpu\": \"Ideal\", \"gpus_per_node\": %d,"
    "     \"intra_node\": {\"GBps\": 100, \"latency_us\": %s},"
    "     \"nic\": {\"GBps\": 10, \"latency_us\": %s}}]}]}";

static hs_status_t ideal_cluster(hs_cluster_t *c, int nodes, int gpn, const char *price,
                                 const char *lat_us)
{
  char json[2048];
  snprintf(json, sizeof json, ideal_cluster_fmt, price, nodes, gpn, lat_us, lat_us);
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(c);
  hs_status_t st = hs_cluster_parse(json, "ideal.json", c, &err);
  if (st != HS_OK)
    fprintf(stderr, "%s\n", err.msg);
  return st;
}

/* An explicit op list where every quantity is zero (no FLOPs, no bytes, no
 * parameters, no activations). */
static const char *zero_model_json =
    "{\"name\": \"zeros\", \"dtype\": \"bf16\", \"seq_len\": 1, \"ops\": ["
    " {\"name\": \"emb\", \"kind\": \"embedding\", \"layer\": -1},"
    " {\"name\": \"l0.a\", \"kind\": \"gemm\", \"layer\": 0, \"tp_split\": \"column\"},"
    " {\"name\": \"l0.b\", \"kind\": \"gemm\", \"layer\": 0, \"tp_split\": \"row\","
    "  \"tp_allreduce_fwd\": true},"
    " {\"name\": \"l1.a\", \"kind\": \"attention\", \"layer\": 1, \"tp_split\": \"heads\"},"
    " {\"name\": \"l1.b\", \"kind\": \"norm\", \"layer\": 1},"
    " {\"name\": \"loss\", \"kind\": \"loss\", \"layer\": -1}]}";

/* Compute but zero bytes anywhere: no parameters (zero-byte gradient
 * all-reduce), no activations (zero-byte p2p between stages). */
static const char *flops_only_model_json =
    "{\"name\": \"flops-only\", \"dtype\": \"bf16\", \"seq_len\": 4, \"ops\": ["
    " {\"name\": \"l0\", \"kind\": \"gemm\", \"layer\": 0, \"fwd_flops\": 1e9, \"tp_split\": \"column\"},"
    " {\"name\": \"l1\", \"kind\": \"gemm\", \"layer\": 1, \"fwd_flops\": 1e9, \"tp_split\": \"column\"},"
    " {\"name\": \"l2\", \"kind\": \"gemm\", \"layer\": 2, \"fwd_flops\": 1e9, \"tp_split\": \"column\"},"
    " {\"name\": \"l3\", \"kind\": \"gemm\", \"layer\": 3, \"fwd_flops\": 1e9, \"tp_split\": \"column\"}]}";

/* Bytes and parameters but no FLOPs. */
static const char *bytes_only_model_json =
    "{\"name\": \"bytes-only\", \"dtype\": \"bf16\", \"seq_len\": 4, \"ops\": ["
    " {\"name\": \"l0\", \"kind\": \"elementwise\", \"layer\": 0, \"params\": 1e6,"
    "  \"out_bytes\": 1e6, \"saved_bytes\": 1e6},"
    " {\"name\": \"l1\", \"kind\": \"elementwise\", \"layer\": 1, \"params\": 1e6,"
    "  \"out_bytes\": 1e6, \"saved_bytes\": 1e6}]}";

static hs_status_t parse_model(const char *json, hs_model_t *m)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_init(m);
  hs_status_t st = hs_model_parse_json(json, "model.json", 0, m, &err);
  if (st != HS_OK)
    fprintf(stderr, "%s\n", err.msg);
  return st;
}

/* Fractions that must lie in [0, 1]. */
static bool is_fraction_key(const char *k)
{
  return k && (strcmp(k, "mfu") == 0 || strcmp(k, "bubble_fraction") == 0 ||
               strcmp(k, "utilisation") == 0);
}

static int walk_bad;
static bool walk_infeasible; /* the report's plan is out of memory */

/* Figures an infeasible report must not state as achievable: null there. */
static bool is_achievable_key(const char *k)
{
  static const char *const keys[] = {"iteration_time_s", "samples_per_s", "tokens_per_s",
                                     "tflops_per_gpu", "hw_tflops_per_gpu", "mfu",
                                     "cost_usd_per_iteration", "cost_usd_per_million_tokens", NULL};
  for (int i = 0; k && keys[i]; i++)
    if (strcmp(k, keys[i]) == 0)
      return true;
  return false;
}

/* Nulls docs/schemas.md defines: costs when GPUs are unpriced (the object
 * says how many), a stage's layers when it holds no transformer block. */
static bool null_allowed(const cJSON *parent, const char *k)
{
  if (!k)
    return false;
  if (strcmp(k, "layers") == 0)
    return true;
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(parent, "unpriced_gpus");
  return cJSON_IsNumber(u) && u->valuedouble > 0 &&
         (strcmp(k, "cost_usd_per_iteration") == 0 || strcmp(k, "cost_usd_per_million_tokens") == 0 ||
          strcmp(k, "usd_per_hour") == 0);
}

static void walk(const cJSON *v, const char *where)
{
  for (const cJSON *e = v->child; e; e = e->next) {
    char path[256];
    if (e->string)
      snprintf(path, sizeof path, "%s.%s", where, e->string);
    else
      snprintf(path, sizeof path, "%s[]", where);
    if (cJSON_IsNull(e) && (null_allowed(v, e->string) ||
                            (walk_infeasible && is_achievable_key(e->string))))
      continue;
    if (cJSON_IsNull(e)) {
      walk_bad++;
      fprintf(stderr, "  %s is null (NaN or infinity in the report)\n", path);
    } else if (cJSON_IsNumber(e)) {
      double x = e->valuedouble;
      if (!isfinite(x) || x < 0) {
        walk_bad++;
        fprintf(stderr, "  %s = %g (must be finite and >= 0)\n", path, x);
      }
      if (is_fraction_key(e->string) && x > 1.0 + 1e-9) {
        walk_bad++;
        fprintf(stderr, "  %s = %g (a fraction above 1)\n", path, x);
      }
    }
    if (cJSON_IsArray(e) || cJSON_IsObject(e))
      walk(e, path);
  }
}

/* Simulates `plan`, checks the in-memory report and its JSON text; returns
 * the iteration time (s) for further checks, -1 on failure. */
static double simulate_and_check(const char *what, const hs_model_t *m, const hs_cluster_t *c,
                                 const hs_plan_t *plan)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_sim_opts_t opts;
  hs_sim_opts_init(&opts);
  hs_report_t r;
  hs_report_init(&r);
  hs_status_t st = hs_simulate(m, c, plan, &opts, &r, &err);
  CHECK_MSG(st == HS_OK, "%s: %s", what, err.msg);
  if (st != HS_OK) {
    hs_report_destroy(&r);
    return -1;
  }
  double fields[] = {r.iteration_time_s, r.samples_per_s, r.tokens_per_s, r.tflops_per_gpu,
                     r.hw_tflops_per_gpu, r.mfu, r.bubble_fraction, r.max_peak_memory_bytes,
                     r.cost_usd_per_iteration, r.cost_usd_per_million_tokens, r.usd_per_hour};
  for (size_t i = 0; i < HS_ARRAY_LEN(fields); i++)
    CHECK_MSG(isfinite(fields[i]) && fields[i] >= 0, "%s: report field %zu = %g", what, i,
              fields[i]);
  for (int32_t i = 0; i < r.n_device_mem; i++)
    CHECK_MSG(isfinite(r.device_peak_memory_bytes[i]), "%s: device %d memory", what, i);
  cJSON *j = hs_report_to_json(&r);
  CHECK(j != NULL);
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  CHECK(text != NULL);
  cJSON *back = text ? cJSON_Parse(text) : NULL;
  CHECK_MSG(back != NULL, "%s: report JSON does not parse back", what);
  if (back) {
    walk_bad = 0;
    walk_infeasible = r.oom;
    walk(back, "report");
    /* infeasible: marked, and no achievable figure stated (issue 12) */
    const cJSON *feas = cJSON_GetObjectItemCaseSensitive(back, "feasible");
    CHECK_MSG(cJSON_IsBool(feas) && cJSON_IsTrue(feas) == !r.oom, "%s: feasible flag", what);
    if (r.oom)
      CHECK_MSG(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(back, "tokens_per_s")) &&
                    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(back, "mfu")) &&
                    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(back, "cost_usd_per_million_tokens")),
                "%s: infeasible report states throughput, MFU or cost", what);
    CHECK_MSG(walk_bad == 0, "%s: %d bad numbers in the report JSON", what, walk_bad);
    /* Every key the contract (DESIGN.md) promises is there. */
    static const char *const keys[] = {"iteration_time_s", "samples_per_s", "tokens_per_s",
                                       "tflops_per_gpu", "mfu", "bubble_fraction",
                                       "max_peak_memory_bytes", "oom", "cost_usd_per_iteration",
                                       "stages", "links", NULL};
    for (int k = 0; keys[k]; k++)
      CHECK_MSG(cJSON_GetObjectItemCaseSensitive(back, keys[k]) != NULL, "%s: key %s missing", what,
                keys[k]);
  }
  cJSON_Delete(back);
  free(text);
  double t = r.iteration_time_s;
  hs_report_destroy(&r);
  return t;
}

static hs_status_t grid(const hs_model_t *m, const hs_cluster_t *c, int tp, int pp, int dp, int mb,
                        int64_t gb, const char *sched, hs_plan_t *plan)
{
  hs_grid_opts_t o = robust_grid_opts(tp, pp, dp, mb, gb);
  o.schedule = sched;
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_init(plan);
  hs_status_t st = hs_plan_grid(m, c, &o, plan, &err);
  if (st != HS_OK)
    fprintf(stderr, "grid: %s\n", err.msg);
  return st;
}

/* Nothing to compute, nothing to move, on an ideal GPU with zero latency:
 * the iteration takes zero time, and throughput must not become inf/NaN. */
static void test_zero_model_every_shape(void)
{
  hs_model_t m;
  hs_cluster_t c;
  CHECK(parse_model(zero_model_json, &m) == HS_OK);
  CHECK(ideal_cluster(&c, 1, 4, "1.0", "0") == HS_OK);
  static const struct { int tp, pp, dp; const char *sched; } shapes[] = {
      {1, 1, 1, "1f1b"}, {1, 1, 1, "gpipe"}, {2, 1, 1, "1f1b"}, {1, 2, 1, "1f1b"},
      {1, 1, 2, "gpipe"}, {2, 2, 1, "hetero-1f1b"}, {1, 2, 2, "1f1b"}, {1, 1, 4, "1f1b"}};
  for (size_t i = 0; i < HS_ARRAY_LEN(shapes); i++) {
    hs_plan_t plan;
    char what[96];
    snprintf(what, sizeof what, "zero model tp%d pp%d dp%d %s", shapes[i].tp, shapes[i].pp,
             shapes[i].dp, shapes[i].sched);
    if (grid(&m, &c, shapes[i].tp, shapes[i].pp, shapes[i].dp, 1, 4 * shapes[i].dp,
             shapes[i].sched, &plan) == HS_OK) {
      double t = simulate_and_check(what, &m, &c, &plan);
      CHECK_MSG(t == 0.0, "%s: iteration time %g, want 0 (nothing to do, no latency)", what, t);
    } else {
      CHECK_MSG(0, "%s: no grid plan", what);
    }
    hs_plan_destroy(&plan);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* Zero-byte transfers: p2p between stages and gradient sync carry nothing,
 * so with zero latency the 1F1B iteration is exactly (m + p - 1) (t_f + t_b)
 * with t_f = 1 ms, t_b = 2 ms (1e9 FLOPs per sample at 1 TFLOP/s, 1 sample
 * per microbatch), one op per stage. */
static void test_zero_byte_transfers(void)
{
  hs_model_t m;
  hs_cluster_t c;
  CHECK(parse_model(flops_only_model_json, &m) == HS_OK);
  CHECK(ideal_cluster(&c, 2, 2, "1.0", "0") == HS_OK);
  hs_plan_t plan;
  if (grid(&m, &c, 1, 4, 1, 1, 8, "1f1b", &plan) == HS_OK) {
    double t = simulate_and_check("flops-only pp4", &m, &c, &plan);
    CHECK_REL(t, (8 + 4 - 1) * 3e-3, 1e-6);
  }
  hs_plan_destroy(&plan);
  /* DP over 4: no parameters, so the all-reduce moves zero bytes; each
   * replica runs 2 microbatches of 1 ms + 2 ms over all four ops. */
  if (grid(&m, &c, 1, 1, 4, 1, 8, "1f1b", &plan) == HS_OK) {
    double t = simulate_and_check("flops-only dp4", &m, &c, &plan);
    CHECK_REL(t, 2 * 4 * 3e-3, 1e-6);
  }
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* No FLOPs but bytes, parameters and a free GPU (price 0): MFU and
 * TFLOP/s are 0, cost is 0, time is positive. */
static void test_bytes_only_free_gpu(void)
{
  hs_model_t m;
  hs_cluster_t c;
  CHECK(parse_model(bytes_only_model_json, &m) == HS_OK);
  CHECK(ideal_cluster(&c, 1, 2, "0", "1") == HS_OK);
  hs_plan_t plan;
  if (grid(&m, &c, 1, 2, 1, 2, 4, "gpipe", &plan) == HS_OK) {
    double t = simulate_and_check("bytes-only pp2", &m, &c, &plan);
    CHECK(t > 0);
  }
  hs_plan_destroy(&plan);
  if (grid(&m, &c, 1, 1, 2, 1, 4, "1f1b", &plan) == HS_OK)
    CHECK(simulate_and_check("bytes-only dp2", &m, &c, &plan) > 0);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* A real model on a single real device (catalog GPU, launch overheads). */
static void test_single_device_real(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_model_init(&m);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_model_load("gpt3-1.3b", 256, &m, &err) == HS_OK);
  CHECK(hs_cluster_parse("{\"name\": \"one\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 1,"
                         " \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}]}]}",
                         "one.json", &c, &err) == HS_OK);
  hs_plan_t plan;
  if (grid(&m, &c, 1, 1, 1, 1, 1, "1f1b", &plan) == HS_OK)
    CHECK(simulate_and_check("gpt3-1.3b on one T4", &m, &c, &plan) > 0);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_zero_model_every_shape);
  HS_RUN(test_zero_byte_transfers);
  HS_RUN(test_bytes_only_free_gpu);
  HS_RUN(test_single_device_real);
  HS_TEST_END();
}
