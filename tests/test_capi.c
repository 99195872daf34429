/*
 * test_capi.c - the flat C API (capi/hetsim.h) that the Python package calls:
 * handles from catalog names, files and text; results equal to what the
 * library gives when called directly (as the CLI calls it); errors filled
 * with the library's message and never a NULL deref on NULL handles; every
 * handle freed (the ASan build runs this with LeakSanitizer).
 *
 * The byte-for-byte comparison with the hetsim executable itself is in
 * python/tests (pytest, against the CLI on the same inputs).
 */
#include "hetsim.h"
#include "hs_export.h"
#include "hs_ranking.h"
#include "hs_test.h"

#include <cjson/cJSON.h>

/* The error record says success. */
#define CHECK_OK(e) CHECK_MSG((e).status == 0, "%s: %s", (e).name, (e).message)

static bool has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

/* A report made through the API equals the library's own simulate of the
 * same grid, with the simulate command's defaults written out by hand:
 * dp = 8 / (2 x 2) = 2, global batch = dp x mb x pp x 4 = 2 x 4 x 2 x 4. */
static void test_simulate_equals_library(void)
{
  hs_api_error_t e;
  hs_api_model_t *m = hs_api_model_load("gpt3-1.3b", 0, &e);
  CHECK_OK(e);
  hs_api_cluster_t *c = hs_api_cluster_load("dgx-a100-1node", NULL, &e);
  CHECK_OK(e);
  CHECK_EQ_INT(hs_api_cluster_n_devices(c), 8);
  CHECK(strcmp(hs_api_model_name(m), "gpt3-1.3b") == 0);
  hs_api_plan_t *p = hs_api_plan_grid(m, c, "{\"tp\": 2, \"pp\": 2, \"microbatch_size\": 4}", &e);
  CHECK_OK(e);
  hs_api_report_t *r = hs_api_simulate(m, c, p, NULL, &e);
  CHECK_OK(e);
  char *json = hs_api_report_json(r, &e);
  CHECK_OK(e);

  hs_error_t err;
  hs_error_init(&err);
  hs_model_t lm;
  hs_cluster_t lc;
  hs_plan_t lp;
  hs_report_t lr;
  hs_model_init(&lm);
  hs_cluster_init(&lc);
  hs_plan_init(&lp);
  hs_report_init(&lr);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = 2, g.pp = 2, g.dp = 2, g.microbatch_size = 4, g.global_batch = 2 * 4 * 2 * 4;
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  CHECK(hs_model_load("gpt3-1.3b", 0, &lm, &err) == HS_OK);
  CHECK(hs_cluster_load("dgx-a100-1node", &lc, &err) == HS_OK);
  CHECK(hs_plan_grid(&lm, &lc, &g, &lp, &err) == HS_OK);
  hs_strlcpy(lp.strategy, "manual-grid", sizeof lp.strategy);
  CHECK(hs_simulate(&lm, &lc, &lp, &so, &lr, &err) == HS_OK);
  cJSON *j = hs_report_to_json_named(&lr, lm.name, lc.name);
  char *s = j ? cJSON_Print(j) : NULL;
  CHECK(s && json && strncmp(s, json, strlen(s)) == 0 && strcmp(json + strlen(s), "\n") == 0);
  CHECK(hs_api_report_iteration_time_s(r) == lr.iteration_time_s);
  CHECK(hs_api_report_tokens_per_s(r) == lr.tokens_per_s);
  CHECK(hs_api_report_oom(r) == (lr.oom ? 1 : 0));
  CHECK_EQ_INT(lr.global_batch, 64);
  cJSON_free(s);
  cJSON_Delete(j);

  char *text = hs_api_report_text(r, &e);
  CHECK_OK(e);
  CHECK(has(text, "iteration"));
  char summary[256];
  hs_plan_describe(&lp, &lm, summary, sizeof summary); /* in layers, not op ranges */
  CHECK(strcmp(hs_api_plan_summary(p), summary) == 0 && has(summary, "layers "));
  char *pj = hs_api_plan_json(p, &e);
  CHECK_OK(e);
  CHECK(has(pj, "\"pipelines\""));
  /* the plan's own JSON parses back to a plan that simulates the same */
  hs_api_plan_t *p2 = hs_api_plan_parse(pj, "plan.json", m, c, &e);
  CHECK_OK(e);
  hs_api_report_t *r2 = hs_api_simulate(m, c, p2, "{\"trace_devices\": 0}", &e);
  CHECK_OK(e);
  CHECK(hs_api_report_iteration_time_s(r2) == lr.iteration_time_s);
  /* not a searched plan: no search result */
  CHECK(hs_api_plan_result_json(p, &e) == NULL && e.status == HS_EINVAL);

  hs_api_free(text);
  hs_api_free(pj);
  hs_api_free(json);
  hs_api_report_free(r2);
  hs_api_plan_free(p2);
  /* handles are independent: free the inputs before the report */
  hs_api_model_free(m);
  hs_api_cluster_free(c);
  hs_api_plan_free(p);
  hs_api_report_free(r);
  hs_report_destroy(&lr);
  hs_plan_destroy(&lp);
  hs_cluster_destroy(&lc);
  hs_model_destroy(&lm);
}

static void test_errors_name_input(void)
{
  hs_api_error_t e;
  CHECK(hs_api_model_load("gpt9-1t", 0, &e) == NULL);
  CHECK(e.status == HS_ENOTFOUND && e.exit_code == 2 && has(e.message, "gpt9-1t"));
  CHECK(strcmp(e.name, "HS_ENOTFOUND") == 0);
  CHECK(hs_api_model_parse("{\"name\": \"m\", \"layers\": ", "m.json", 0, &e) == NULL);
  CHECK(e.status == HS_EPARSE && has(e.message, "m.json"));
  CHECK(hs_api_model_parse(NULL, NULL, 0, &e) == NULL && e.status == HS_EINVAL);
  CHECK(hs_api_cluster_load(hs_test_data("clusters/malformed.json"), NULL, &e) == NULL);
  CHECK(e.status == HS_EPARSE && has(e.message, "malformed.json"));
  CHECK(hs_api_cluster_parse(
            "{\"name\": \"x\", \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": "
            "\"A1OO\", \"gpus_per_node\": 8}]}]}",
            "x.json", NULL, &e) == NULL);
  CHECK(has(e.message, "x.json") && has(e.message, "sites[0].nodes[0].gpu") && has(e.message, "A1OO"));
  CHECK(hs_api_cluster_load("dgx-a100-1node", "/nonexistent/profile.json", &e) == NULL);
  CHECK(e.status != 0 && has(e.message, "profile.json"));

  hs_api_model_t *m = hs_api_model_load("gpt3-1.3b", 0, &e);
  hs_api_cluster_t *c = hs_api_cluster_load("dgx-a100-1node", NULL, &e);
  CHECK(m && c);
  /* options: unknown key, wrong type, out of range, bad enum, not an object */
  CHECK(hs_api_plan_grid(m, c, "{\"tpp\": 2}", &e) == NULL);
  CHECK(e.status == HS_EINVAL && has(e.message, "unknown option \"tpp\""));
  CHECK(hs_api_plan_grid(m, c, "{\"tp\": \"2\"}", &e) == NULL && has(e.message, "tp"));
  CHECK(hs_api_plan_grid(m, c, "{\"tp\": 0}", &e) == NULL && has(e.message, "tp"));
  CHECK(hs_api_plan_grid(m, c, "{\"tp\": 2.5}", &e) == NULL && has(e.message, "tp"));
  CHECK(hs_api_plan_grid(m, c, "{\"recompute\": \"some\"}", &e) == NULL);
  CHECK(has(e.message, "recompute") && has(e.message, "some"));
  CHECK(hs_api_plan_grid(m, c, "[1]", &e) == NULL && has(e.message, "object"));
  CHECK(hs_api_plan_grid(m, c, "{", &e) == NULL && e.status == HS_EPARSE);
  /* the library's own checks come through */
  CHECK(hs_api_plan_grid(m, c, "{\"tp\": 4, \"pp\": 4}", &e) == NULL);
  CHECK(has(e.message, "16 devices") && has(e.message, "dgx-a100-1node"));
  CHECK(hs_api_plan_load(hs_test_data("plans/bad-device.json"), m, c, &e) == NULL);
  CHECK(has(e.message, "bad-device.json: pipelines[0].stages[1].replicas[0].devices[0]: unknown device 99"));
  CHECK(hs_api_plan_search(m, c, "nope", NULL, &e) == NULL && has(e.message, "\"nope\""));
  CHECK(hs_api_plan_search(m, c, "megatron", "{\"mip_gap\": 1}", &e) == NULL);
  CHECK(has(e.message, "mip_gap"));
  CHECK(hs_api_compare_csv(m, c, "{\"strategies\": \"megatron,nope\"}", &e) == NULL);
  CHECK(has(e.message, "unknown strategy \"nope\""));
  CHECK(hs_api_compare_csv(NULL, NULL, "{\"scenario\": \"nope\"}", &e) == NULL);
  CHECK(has(e.message, "unknown scenario"));
  CHECK(hs_api_compare_csv(NULL, c, NULL, &e) == NULL && e.status == HS_EINVAL);
  CHECK(hs_api_sweep_csv("{\"name\": 3}", "s.json", NULL, &e) == NULL && has(e.message, "s.json"));
  CHECK(hs_api_sweep_csv("{}", "s.json", "{\"workers\": 0}", &e) == NULL);
  CHECK(has(e.message, "workers"));

  /* NULL handles are errors, not crashes; NULL frees are no-ops */
  CHECK(hs_api_simulate(m, c, NULL, NULL, &e) == NULL && e.status == HS_EINVAL);
  CHECK(hs_api_simulate(NULL, c, NULL, NULL, &e) == NULL && has(e.message, "model"));
  CHECK(hs_api_report_json(NULL, &e) == NULL && e.status == HS_EINVAL);
  CHECK(hs_api_plan_json(NULL, NULL) == NULL); /* err may be NULL */
  CHECK(hs_api_report_iteration_time_s(NULL) == 0.0);
  hs_api_model_free(NULL);
  hs_api_cluster_free(NULL);
  hs_api_plan_free(NULL);
  hs_api_report_free(NULL);
  hs_api_free(NULL);
  hs_api_model_free(m);
  hs_api_cluster_free(c);
}

/* A searched plan carries the search result; its report is the plan's
 * simulation; compare rows and the CSV come from hs_compare_run. */
static void test_search_and_compare(void)
{
  hs_api_error_t e;
  hs_api_model_t *m = hs_api_model_parse(
      "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": 256, "
      "\"n_layer\": 4, \"n_head\": 4, \"vocab_size\": 1000, \"n_positions\": 128}",
      "tiny-config.json", 0, &e);
  CHECK_OK(e);
  hs_api_cluster_t *c = hs_api_cluster_load("dgx-a100-1node", NULL, &e);
  CHECK_OK(e);
  hs_api_plan_t *p = hs_api_plan_search(m, c, "megatron", "{\"global_batch\": 32}", &e);
  CHECK_OK(e);
  char *res = hs_api_plan_result_json(p, &e);
  CHECK_OK(e);
  CHECK(has(res, "\"strategy\":\t\"megatron\"") && has(res, "\"report\""));
  hs_api_report_t *r = hs_api_simulate(m, c, p, NULL, &e);
  CHECK_OK(e);
  cJSON *j = cJSON_Parse(res), *rep = cJSON_GetObjectItem(j, "report");
  char *rj = hs_api_report_json(r, &e);
  cJSON *jr = cJSON_Parse(rj);
  CHECK(jr && rep && cJSON_GetObjectItem(jr, "iteration_time_s")->valuedouble ==
                         cJSON_GetObjectItem(rep, "iteration_time_s")->valuedouble);
  cJSON_Delete(jr);
  cJSON_Delete(j);

  char *csv = hs_api_compare_csv(m, c, "{\"strategies\": [\"megatron\", \"data-parallel\"], "
                                       "\"global_batch\": 32, \"charge\": \"cluster\"}", &e);
  CHECK_OK(e);
  const char *head = "strategy,iteration_s,tokens_per_s,speedup_vs_megatron,";
  CHECK(csv && strncmp(csv, head, strlen(head)) == 0);
  CHECK(has(csv, "\nmegatron,") && has(csv, "\ndata-parallel,") && has(csv, ",1.0000,"));
  hs_api_free(csv);
  hs_api_free(rj);
  hs_api_free(res);
  hs_api_report_free(r);
  hs_api_plan_free(p);
  hs_api_cluster_free(c);
  hs_api_model_free(m);
}

/* hs_api_whatif: the CSV equals hs_whatif_run + hs_whatif_write called
 * directly with the same options; every failure path fills the error and
 * frees what it made (LeakSanitizer in the ASan build). */
static void test_whatif(void)
{
  hs_api_error_t e;
  hs_api_model_t *m = hs_api_model_load("gpt3-1.3b", 0, &e);
  hs_api_cluster_t *c = hs_api_cluster_load("dgx-a100-1node", NULL, &e);
  CHECK_OK(e);
  char *csv = hs_api_whatif(m, c,
                            "{\"budget_usd_per_hour\": 30, \"candidates\": [\"V100-SXM2-16GB\"], "
                            "\"strategies\": \"megatron\", \"global_batch\": 64, "
                            "\"gpu_price\": \"V100-SXM2-16GB=1.5\"}",
                            &e);
  CHECK_OK(e);

  hs_model_t lm;
  hs_cluster_t lc;
  hs_error_t err;
  hs_model_init(&lm);
  hs_cluster_init(&lc);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_model_load("gpt3-1.3b", 0, &lm, &err), HS_OK);
  CHECK_EQ_INT(hs_cluster_load("dgx-a100-1node", &lc, &err), HS_OK);
  hs_whatif_run_opts_t o;
  hs_whatif_run_opts_init(&o);
  o.enumerate.budget_usd_per_hour = 30;
  o.n_candidates = 1;
  hs_strlcpy(o.candidates[0], "V100-SXM2-16GB", sizeof o.candidates[0]);
  o.n_strategies = 1;
  hs_strlcpy(o.strategies[0], "megatron", sizeof o.strategies[0]);
  o.plan.global_batch = 64;
  hs_price_override_t price = {"V100-SXM2-16GB", 1.5, -1.0};
  o.prices = &price;
  o.n_prices = 1;
  hs_whatif_result_t res;
  CHECK_EQ_INT(hs_whatif_run(&lm, &lc, &o, &res, &err), HS_OK);
  hs_whatif_rank(&res, o.plan.practice.framework.id); /* the verdict, as the CLI and the API */
  char *want = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&want, &len);
  CHECK(f && hs_whatif_write(&res, HS_WHATIF_CSV, 0, f, &err) == HS_OK);
  fclose(f);
  CHECK_MSG(csv && want && strcmp(csv, want) == 0, "api:\n%s\nlibrary:\n%s", csv ? csv : "-",
            want ? want : "-");
  /* 0, 8 and 16 V100 at 1.5 USD/h fit 30 USD/h: three rows and the header */
  size_t lines = 0;
  for (const char *p = csv; p && *p; p++)
    lines += *p == '\n';
  CHECK_EQ_INT((long)lines, 4);
  free(want);
  hs_api_free(csv);
  hs_whatif_result_destroy(&res);
  hs_cluster_destroy(&lc);
  hs_model_destroy(&lm);

  static const struct { const char *opts, *needle; } bad[] = {
      {"{\"budget_usd_per_hour\": 30, \"candidates\": \"V100-SXM2-16GB\", \"nope\": 1}",
       "whatif options: unknown option \"nope\""},
      {"{\"budget_usd_per_hour\": 30, \"candidates\": \"V100-SXM2-16GB\", \"gpu_price\": \"V=x\"}",
       "--gpu-price: V: expected a price"},
      {"{\"budget_usd_per_hour\": 30, \"candidates\": [\"A1OO\"]}", "unknown GPU \"A1OO\""},
      {"{\"budget_usd_per_hour\": 30, \"candidates\": \"V100-SXM2-16GB\", \"format\": \"xml\"}",
       "format: must be table, csv or json, got \"xml\""},
      {"{\"budget_usd_per_hour\": 30, \"candidates\": [1]}", "candidates[0]: must be a name"},
      {"[1]", "whatif options: must be a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *out = hs_api_whatif(m, c, bad[i].opts, &e);
    CHECK_MSG(!out && e.status != 0 && e.exit_code == 2 && has(e.message, bad[i].needle),
              "case %zu: %s", i, e.message);
    hs_api_free(out);
  }
  CHECK(!hs_api_whatif(NULL, c, NULL, &e) && has(e.message, "model: NULL handle"));
  /* no base and no replace */
  CHECK(!hs_api_whatif(m, NULL, "{\"budget_usd_per_hour\": 30, \"candidates\": \"V100-SXM2-16GB\"}", &e) &&
        has(e.message, "--cluster: give a base cluster, or --replace"));
  hs_api_cluster_free(c);
  hs_api_model_free(m);
}

int main(void)
{
  CHECK_EQ_INT(hs_api_version(), HS_API_VERSION);
  HS_RUN(test_simulate_equals_library);
  HS_RUN(test_errors_name_input);
  HS_RUN(test_search_and_compare);
  HS_RUN(test_whatif);
  HS_TEST_END();
}
