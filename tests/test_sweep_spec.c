/*
 * test_sweep_spec.c - the sweep spec: grid size and order against nested
 * loops, composition expansion against brute force, random sampling, the
 * cluster a composition becomes, and broken specs (message names file, field
 * and value; never a crash).
 */
#include "hs_export.h"
#include "hs_test.h"

static const char *spec_text =
    "{\"name\": \"t\",\n"
    " \"clusters\": [\"dgx-a100-1node\", {\"A100-SXM4-40GB\": [8, 16], \"V100-SXM2-16GB\": [0, 4, 12],"
    " \"T4-16GB\": [0, 3]}],\n"
    " \"nic_GBps\": [12.5, 25],\n"
    " \"intersite_GBps\": 1.25,\n"
    " \"intersite_latency_us\": [100, 1000, 5000],\n"
    " \"models\": [\"gpt3-1.3b\", \"bert-large\"],\n"
    " \"global_batch\": [64, 128],\n"
    " \"strategies\": [\"megatron\", \"whale\", \"hapt\"],\n"
    " \"price_models\": [\"on-demand\", \"spot\"]}\n";

static void test_grid(void)
{
  hs_sweep_spec_t s;
  hs_error_t err;
  hs_sweep_spec_init(&s);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_sweep_spec_parse(spec_text, "t.json", &s, &err), HS_OK);
  if (err.msg[0])
    fprintf(stderr, "%s\n", err.msg);
  /* brute force: 1 named + every (a, v, t) with a in {8,16}, v in {0,4,12},
   * t in {0,3}; none is all zero since a > 0 */
  size_t comps = 1;
  for (int a = 0; a < 2; a++)
    for (int v = 0; v < 3; v++)
      for (int t = 0; t < 2; t++)
        comps++;
  CHECK_EQ_INT(s.n_clusters, comps);
  CHECK_EQ_INT(s.n_grid, comps * 2 * 1 * 3 * 2 * 2 * 3);
  CHECK_EQ_INT(s.n_jobs, s.n_grid);
  CHECK_EQ_INT(s.n_prices, 2);
  /* composition order: first type slowest; 2nd expanded = A100:8,V100:0,T4:3 */
  CHECK_EQ_INT(s.clusters[2].count[0], 8);
  CHECK_EQ_INT(s.clusters[2].count[1], 0);
  CHECK_EQ_INT(s.clusters[2].count[2], 3);
  CHECK_EQ_INT(s.clusters[12].count[0], 16);
  CHECK_EQ_INT(s.clusters[12].count[1], 12);
  /* job numbering equals the nested loops, strategy fastest */
  uint64_t job = 0;
  bool order_ok = true;
  for (size_t c = 0; c < s.n_clusters; c++)
    for (size_t n = 0; n < s.n_nic; n++)
      for (size_t xb = 0; xb < s.n_xsite_GBps; xb++)
        for (size_t xl = 0; xl < s.n_xsite_latency; xl++)
          for (size_t m = 0; m < s.n_models; m++)
            for (size_t g = 0; g < s.n_global_batch; g++)
              for (size_t st = 0; st < s.n_strategies; st++, job++) {
                hs_sweep_point_t p;
                hs_sweep_point_of(&s, job, &p);
                order_ok &= p.cluster == c && p.nic == n && p.xsite_GBps == xb &&
                            p.xsite_latency == xl && p.model == m && p.global_batch == g &&
                            p.strategy == st && hs_sweep_job_of(&s, &p) == job;
              }
  CHECK(order_ok);
  CHECK_EQ_INT(job, s.n_grid);
  /* row inputs name the axis values */
  char buf[1024];
  hs_sweep_row_inputs(&s, 1, buf, sizeof buf);
  CHECK_MSG(strcmp(buf, "1,dgx-a100-1node,12.5,1.25,100,gpt3-1.3b,64,megatron,spot,") == 0, "%s", buf);
  hs_sweep_spec_destroy(&s);
}

static void test_defaults_and_sampling(void)
{
  hs_sweep_spec_t s, s2, s3;
  hs_error_t err;
  hs_sweep_spec_init(&s);
  hs_sweep_spec_init(&s2);
  hs_sweep_spec_init(&s3);
  hs_error_init(&err);
  const char *t = "{\"clusters\": [{\"H100-SXM5-80GB\": [8, 16, 24, 32]}, {\"A100-SXM4-80GB\": [8, 16, 32]}],"
                  " \"models\": \"gpt3-1.3b\", \"random\": {\"samples\": 10, \"seed\": 7}}";
  CHECK_EQ_INT(hs_sweep_spec_parse(t, "r.json", &s, &err), HS_OK);
  CHECK_EQ_INT(s.n_strategies, 4); /* megatron, whale, hapt, data-parallel */
  CHECK_EQ_INT(s.precision, HS_DTYPE_BF16);
  CHECK(s.memory_headroom == HS_MEMORY_HEADROOM_DEFAULT);
  CHECK(hs_practice_is_default(&s.practice));
  CHECK_EQ_INT(s.n_prices, 1);
  CHECK_EQ_INT(s.n_grid, 7 * 4);
  CHECK_EQ_INT(s.n_jobs, 10);
  bool sorted = true;
  for (size_t i = 1; i < s.n_jobs; i++)
    sorted &= s.jobs[i - 1] < s.jobs[i];
  CHECK(sorted);
  CHECK(s.jobs[s.n_jobs - 1] < s.n_grid);
  CHECK_EQ_INT(hs_sweep_spec_parse(t, "r.json", &s2, &err), HS_OK);
  CHECK(memcmp(s.jobs, s2.jobs, s.n_jobs * sizeof *s.jobs) == 0); /* same seed, same sample */
  char t3[512];
  snprintf(t3, sizeof t3, "%s", t);
  *strstr(t3, "7}") = '8';
  CHECK_EQ_INT(hs_sweep_spec_parse(t3, "r.json", &s3, &err), HS_OK);
  CHECK(memcmp(s.jobs, s3.jobs, s.n_jobs * sizeof *s.jobs) != 0);
  hs_sweep_spec_destroy(&s);
  hs_sweep_spec_destroy(&s2);
  hs_sweep_spec_destroy(&s3);
}

/* A composition becomes a cluster with those GPUs, one site per type, a full
 * mesh of links, and a smaller last node for a remainder. */
static void test_composition_cluster(void)
{
  hs_sweep_spec_t s;
  hs_error_t err;
  hs_cluster_t c;
  hs_sweep_spec_init(&s);
  hs_error_init(&err);
  hs_cluster_init(&c);
  const char *t = "{\"clusters\": [{\"A100-SXM4-40GB\": 20, \"V100-SXM2-16GB\": 8, \"T4-16GB\": 3}],"
                  " \"models\": \"gpt3-1.3b\", \"nic_GBps\": 50, \"intersite_GBps\": 2.5,"
                  " \"intersite_latency_us\": 700, \"prices\": {\"T4-16GB\": {\"on_demand_usd_h\": 0.5}}}";
  CHECK_EQ_INT(hs_sweep_spec_parse(t, "c.json", &s, &err), HS_OK);
  hs_sweep_point_t p = {0};
  CHECK_EQ_INT(hs_sweep_cluster_build(&s, &p, &c, &err), HS_OK);
  if (err.msg[0])
    fprintf(stderr, "%s\n", err.msg);
  CHECK_EQ_INT(c.n_devices, 31);
  CHECK_EQ_INT(c.n_sites, 3);
  CHECK_EQ_INT(c.n_xlinks, 3);
  CHECK_EQ_INT(c.n_nodes, 3 + 1 + 1); /* 8+8+4, 8, 3 */
  int a100 = 0, v100 = 0, t4 = 0;
  for (size_t d = 0; d < c.n_devices; d++) {
    const char *n = hs_cluster_gpu(&c, (int32_t)d)->name;
    a100 += !strcmp(n, "A100-SXM4-40GB");
    v100 += !strcmp(n, "V100-SXM2-16GB");
    t4 += !strcmp(n, "T4-16GB");
  }
  CHECK_EQ_INT(a100, 20);
  CHECK_EQ_INT(v100, 8);
  CHECK_EQ_INT(t4, 3);
  CHECK_EQ_INT(c.nodes[2].n_devices, 4);
  for (size_t i = 0; i < c.n_nodes; i++)
    CHECK_REL(c.nodes[i].nic_GBps, 50.0, 1e-12);
  for (size_t i = 0; i < c.n_xlinks; i++) {
    CHECK_REL(c.xlinks[i].GBps, 2.5, 1e-12);
    CHECK_REL(c.xlinks[i].latency_us, 700.0, 1e-12);
  }
  /* rent: sum of catalog prices, T4 overridden */
  hs_gpu_catalog_t cat;
  hs_gpu_catalog_init(&cat);
  CHECK_EQ_INT(hs_gpu_catalog_load(NULL, &cat, &err), HS_OK);
  double expect = 20 * hs_gpu_catalog_find(&cat, "A100-SXM4-40GB")->price_ondemand_usd_h +
                  8 * hs_gpu_catalog_find(&cat, "V100-SXM2-16GB")->price_ondemand_usd_h + 3 * 0.5;
  double usd[HS_PRICE__COUNT];
  int32_t unpriced[HS_PRICE__COUNT];
  hs_cluster_rent(&c, usd, unpriced);
  CHECK_REL(usd[HS_PRICE_ONDEMAND], expect, 1e-12);
  CHECK_EQ_INT(unpriced[HS_PRICE_ONDEMAND], 0);
  hs_gpu_catalog_destroy(&cat);
  hs_cluster_destroy(&c);
  hs_sweep_spec_destroy(&s);
}

static void expect_error(const char *text, const char *a, const char *b)
{
  hs_sweep_spec_t s;
  hs_error_t err;
  hs_sweep_spec_init(&s);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_sweep_spec_parse(text, "bad.json", &s, &err);
  CHECK_MSG(st != HS_OK, "accepted: %s", text);
  CHECK_MSG(strstr(err.msg, "bad.json") && strstr(err.msg, a) && (!b || strstr(err.msg, b)),
            "message \"%s\" lacks \"%s\"/\"%s\"", err.msg, a, b ? b : "");
  CHECK(s.n_jobs == 0 && s.jobs == NULL);
  hs_sweep_spec_destroy(&s);
}

/* The planner options of every job: precision, headroom, training practice. */
static void test_planner_options(void)
{
  hs_sweep_spec_t s;
  hs_error_t err;
  hs_sweep_spec_init(&s);
  hs_error_init(&err);
  const char *t = "{\"clusters\": [\"dgx-a100-1node\"], \"models\": \"gpt3-1.3b\", \"precision\": \"fp32\","
                  " \"memory_headroom\": 0.25, \"kernels\": \"megatron-core-2024\", \"attention\": \"unfused\","
                  " \"sequence_parallel\": true, \"tp_comm_overlap\": true, \"zero_stage\": 2,"
                  " \"grad_reduce_dtype\": \"fp32\"}";
  CHECK_EQ_INT(hs_sweep_spec_parse(t, "o.json", &s, &err), HS_OK);
  CHECK_EQ_INT(s.precision, HS_DTYPE_FP32);
  CHECK(s.memory_headroom == 0.25);
  hs_kernels_t k;
  CHECK(hs_kernels_preset("megatron-core-2024", &k) == HS_OK);
  CHECK(s.practice.kernels.fused_act == k.fused_act && s.practice.kernels.fused_norm == k.fused_norm);
  CHECK_EQ_INT(s.practice.kernels.attention, HS_ATTENTION_UNFUSED);
  CHECK(s.practice.sequence_parallel && s.practice.tp_comm_overlap);
  CHECK_EQ_INT(s.practice.zero_stage, 2);
  CHECK(s.practice.grad_reduce_fp32);
  hs_sweep_spec_destroy(&s);
}

static void test_bad_specs(void)
{
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"precision\": \"fp4\"}", "precision", "fp4");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"memory_headroom\": 1}", "memory_headroom", NULL);
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"memory_headroom\": -0.5}", "memory_headroom",
               NULL);
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"kernels\": \"cuda-2099\"}", "kernels",
               "cuda-2099");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"attention\": \"sdpa\"}", "attention", "sdpa");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"tp_comm_overlap\": true}", "tp_comm_overlap",
               "sequence_parallel");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"zero_stage\": 4}", "zero_stage", NULL);
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"grad_reduce_dtype\": \"bf16\"}",
               "grad_reduce_dtype", "bf16");
  expect_error("{\"clusters\": [\"x\"], \"models\": [\"m\"]", "malformed", NULL);
  expect_error("{\"models\": [\"gpt3-1.3b\"]}", "clusters", NULL);
  expect_error("{\"clusters\": [\"a\"]}", "models", NULL);
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"strategies\": [\"megatron\", \"nope\"]}",
               "strategies[1]", "nope");
  expect_error("{\"clusters\": [{\"A100-SXM4-40GB\": -8}], \"models\": \"m\"}",
               "clusters[0].A100-SXM4-40GB", "-8");
  expect_error("{\"clusters\": [{\"A100-SXM4-40GB\": [0]}], \"models\": \"m\"}", "clusters", "0 GPUs");
  expect_error("{\"clusters\": [42], \"models\": \"m\"}", "clusters[0]", "42");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"price_models\": [\"cheap\"]}",
               "price_models[0]", "cheap");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"nic_GBps\": [25, -1]}", "nic_GBps[1]", "-1");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"global_batch\": [1.5]}", "global_batch[0]",
               "1.5");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"layout\": {\"sites\": \"many\"}}",
               "layout.sites", "many");
  expect_error("{\"clusters\": [\"a\"], \"models\": \"m\", \"random\": {\"samples\": 0}}", "random",
               "samples");
  /* a grid past the limit is refused before anything is sized by it */
  expect_error("{\"clusters\": [{\"A100-SXM4-40GB\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,"
               "22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,"
               "52,53,54,55,56,57,58,59,60,61,62,63,64], \"T4-16GB\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,"
               "16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,"
               "47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64]}], \"models\": \"m\","
               " \"global_batch\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
               "28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50],"
               " \"nic_GBps\": [1, 2, 3, 4, 5]}",
               "grid", "1000000");
  expect_error("{\"clusters\": [{\"A100-SXM4-40GB\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
               "21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,"
               "51,52,53,54,55,56,57,58,59,60,61,62,63,64], \"T4-16GB\": [1,2,3,4,5,6,7,8,9,10,11,12,13,"
               "14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,"
               "44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64], \"L4-24GB\": [1, 2]}],"
               " \"models\": \"m\"}",
               "clusters", "4096");
  expect_error("[1, 2]", "must be an object", NULL);
  expect_error("", "malformed", NULL);
}

int main(void)
{
  HS_RUN(test_grid);
  HS_RUN(test_defaults_and_sampling);
  HS_RUN(test_composition_cluster);
  HS_RUN(test_planner_options);
  HS_RUN(test_bad_specs);
  HS_TEST_END();
}
