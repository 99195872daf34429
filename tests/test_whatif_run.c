/*
 * test_whatif_run.c - the purchase study (hs_whatif_run) against its
 * definition: the options are the enumerator's, each row's cost and $/M
 * tokens follow from its own figures, rows are ranked, the Pareto flags are
 * those of a naive recomputation, one forked worker and two give the same
 * bytes, planner options reach every search (a global batch given is the
 * batch of every row), and bad options are refused naming the flag.
 */
#include "hs_export.h"
#include "hs_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *write_csv(const hs_whatif_result_t *r)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  hs_error_t err;
  hs_error_init(&err);
  CHECK(f != NULL);
  CHECK_EQ_INT(hs_whatif_write(r, HS_WHATIF_CSV, 0, f, &err), HS_OK);
  fclose(f);
  return text;
}

static void setup(hs_whatif_run_opts_t *o)
{
  hs_whatif_run_opts_init(o);
  o->enumerate.budget_usd_per_hour = 40.0;
  o->n_candidates = 2;
  hs_strlcpy(o->candidates[0], "A100-SXM4-40GB", sizeof o->candidates[0]);
  hs_strlcpy(o->candidates[1], "V100-SXM2-16GB", sizeof o->candidates[1]);
  o->n_strategies = 1;
  hs_strlcpy(o->strategies[0], "megatron", sizeof o->strategies[0]);
  o->plan.global_batch = 96;
}

static void test_study_against_definition(const hs_model_t *m, const hs_cluster_t *base)
{
  hs_whatif_run_opts_t o;
  setup(&o);
  hs_whatif_result_t r1, r2;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_EQ_INT(hs_whatif_run(m, base, &o, &r1, &err), HS_OK);
  o.workers = 2;
  CHECK_EQ_INT(hs_whatif_run(m, base, &o, &r2, &err), HS_OK);
  char *a = write_csv(&r1), *b = write_csv(&r2);
  CHECK_MSG(strcmp(a, b) == 0, "one worker and two differ:\n%s\n%s", a, b);
  free(a);
  free(b);

  /* the options are exactly the enumerator's for the catalog prices */
  hs_whatif_option_t *opts = NULL;
  size_t n = 0;
  CHECK_EQ_INT(hs_whatif_enumerate(r1.candidate_usd_per_gpu_hour, 2, &o.enumerate, &opts, &n, &err),
               HS_OK);
  CHECK_EQ_INT((long)r1.n_rows, (long)n);
  size_t matched = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < r1.n_rows; k++)
      matched += memcmp(opts[i].count, r1.rows[k].count, sizeof opts[i].count) == 0;
  CHECK_EQ_INT((long)matched, (long)n);
  free(opts);

  double base_usd = 0;
  for (size_t d = 0; d < base->n_devices; d++)
    base_usd += hs_cluster_gpu(base, (int32_t)d)->price_ondemand_usd_h;
  size_t n_ok = 0;
  for (size_t i = 0; i < r1.n_rows; i++) {
    const hs_whatif_row_t *x = &r1.rows[i];
    double added = (double)x->count[0] * r1.candidate_usd_per_gpu_hour[0] +
                   (double)x->count[1] * r1.candidate_usd_per_gpu_hour[1];
    CHECK_REL(x->added_usd_per_hour, added, 1e-12);
    CHECK_EQ_INT(x->best.global_batch, 96); /* the planner options' batch, every row */
    CHECK_EQ_INT(x->best.n_gpus, (long)base->n_devices + x->count[0] + x->count[1]);
    n_ok += x->ok;
    if (!x->ok) {
      CHECK(x->reason[0] != '\0');
      continue;
    }
    CHECK_REL(x->usd_per_hour, base_usd + added, 1e-9);
    double want = x->usd_per_hour * x->best.iteration_s / 3600.0 / (96.0 * (double)m->seq_len) * 1e6;
    CHECK_REL(x->usd_per_million_tokens, want, 1e-12);
    if (i > 0 && r1.rows[i - 1].ok)
      CHECK(r1.rows[i - 1].best.tokens_per_s >= x->best.tokens_per_s);
    /* Pareto: naive, no other ok row both at least as fast and as cheap, one strictly */
    bool dominated = false;
    for (size_t k = 0; k < r1.n_rows; k++) {
      const hs_whatif_row_t *y = &r1.rows[k];
      if (k == i || !y->ok)
        continue;
      dominated |= y->best.tokens_per_s >= x->best.tokens_per_s &&
                   y->usd_per_million_tokens <= x->usd_per_million_tokens &&
                   (y->best.tokens_per_s > x->best.tokens_per_s ||
                    y->usd_per_million_tokens < x->usd_per_million_tokens);
    }
    CHECK_MSG(x->pareto == !dominated, "row %zu (%s): pareto %d", i, x->option, x->pareto);
  }
  CHECK_EQ_INT((long)r1.n_ok, (long)n_ok);
  CHECK(n_ok > 0);
  hs_whatif_result_destroy(&r1);
  hs_whatif_result_destroy(&r2);
}

static void expect_error(const hs_model_t *m, const hs_cluster_t *base, const hs_whatif_run_opts_t *o,
                         const char *needle)
{
  hs_whatif_result_t r;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK_EQ_INT(hs_whatif_run(m, base, o, &r, &err), HS_EINVAL);
  CHECK_MSG(strstr(err.msg, needle) != NULL, "expected \"%s\" in \"%s\"", needle, err.msg);
  CHECK(r.rows == NULL && r.n_rows == 0);
  hs_whatif_result_destroy(&r);
}

static void test_bad_options(const hs_model_t *m, const hs_cluster_t *base)
{
  hs_whatif_run_opts_t o;
  setup(&o);
  o.enumerate.budget_usd_per_hour = -2;
  expect_error(m, base, &o, "--budget-usd-per-hour: must be >= 0, got -2");
  setup(&o);
  hs_strlcpy(o.candidates[1], "A1OO", sizeof o.candidates[1]);
  expect_error(m, base, &o, "--candidates: unknown GPU \"A1OO\"");
  setup(&o);
  hs_strlcpy(o.strategies[0], "nope", sizeof o.strategies[0]);
  expect_error(m, base, &o, "unknown strategy \"nope\"");
  setup(&o);
  o.global_batch_per_gpu = 4;
  expect_error(m, base, &o, "not both");
  setup(&o);
  o.link_GBps = 0;
  expect_error(m, base, &o, "--link-GBps must be > 0");
  setup(&o);
  expect_error(m, NULL, &o, "give a base cluster, or --replace");
  o.enumerate.replace = true;
  expect_error(m, base, &o, "give no --cluster");
  setup(&o);
  o.enumerate.budget_usd_per_hour = 0.5;
  o.enumerate.replace = true;
  expect_error(m, NULL, &o, "no purchase of 8 GPUs fits a budget of 0.5 USD/h");
  /* price overrides: syntax errors name the entry */
  hs_price_override_t *p = NULL;
  size_t n = 0;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_EQ_INT(hs_price_overrides_parse("A100-SXM4-40GB=1.5:0.5,X=2", &p, &n, &err), HS_OK);
  CHECK_EQ_INT((long)n, 2);
  CHECK(p[0].ondemand_usd_h == 1.5 && p[0].spot_usd_h == 0.5 && p[1].spot_usd_h == -1.0);
  free(p);
  CHECK_EQ_INT(hs_price_overrides_parse("A100=1,B=x", &p, &n, &err), HS_EINVAL);
  CHECK(strstr(err.msg, "--gpu-price: B: expected a price") != NULL && p == NULL && n == 0);
}

/* An unpriced base (8 H20, no catalog price) with T4 purchases: every
 * option includes the H20s, so every row's USD/h and $/Mtok are unknown
 * (NAN / not finite), the row counts its unpriced GPUs, none is on the
 * Pareto front, and the CSV leaves both costs empty. Before: the H20s
 * counted $0 and "+8 T4" sat on the front at $0.0102/Mtok. */
static void test_unpriced_base(const hs_model_t *m)
{
  hs_cluster_t base;
  hs_error_t err;
  hs_cluster_init(&base);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_cluster_parse("{\"name\": \"h20x8\", \"sites\": [{\"name\": \"a\", \"nodes\": "
                                "[{\"count\": 1, \"gpu\": \"H20-96GB\", \"gpus_per_node\": 8}]}]}",
                                "h20x8.json", &base, &err),
               HS_OK);
  CHECK(!(hs_cluster_gpu(&base, 0)->price_ondemand_usd_h > 0)); /* the premise */
  hs_whatif_run_opts_t o;
  hs_whatif_run_opts_init(&o);
  o.enumerate.budget_usd_per_hour = 5.0;
  o.n_candidates = 1;
  hs_strlcpy(o.candidates[0], "T4-16GB", sizeof o.candidates[0]);
  o.n_strategies = 1;
  hs_strlcpy(o.strategies[0], "megatron", sizeof o.strategies[0]);
  o.plan.global_batch = 128;
  hs_whatif_result_t r;
  CHECK_EQ_INT(hs_whatif_run(m, &base, &o, &r, &err), HS_OK);
  CHECK_EQ_INT(r.base_unpriced_gpus, 8);
  CHECK(r.n_rows >= 2);
  size_t n_ok = 0;
  for (size_t i = 0; i < r.n_rows; i++) {
    const hs_whatif_row_t *x = &r.rows[i];
    CHECK_EQ_INT(x->unpriced_gpus, 8);
    CHECK_MSG(isnan(x->usd_per_hour), "%s: USD/h %g, want unknown", x->option, x->usd_per_hour);
    CHECK_MSG(!isfinite(x->usd_per_million_tokens), "%s: $/Mtok %g, want unknown", x->option,
              x->usd_per_million_tokens);
    CHECK_MSG(!x->pareto, "%s: unpriced, on the Pareto front", x->option);
    n_ok += x->ok;
  }
  CHECK(n_ok >= 2);
  char *csv = write_csv(&r);
  /* rank,option,n_gpus,added_usd_per_hour,usd_per_hour(empty),... and the
   * $/Mtok cell before pareto empty: ",,<batch>" and ",,no," */
  CHECK_CONTAINS(csv, ",,128,");
  CHECK_CONTAINS(csv, ",,no,");
  CHECK(strstr(csv, ",yes,") == NULL);
  free(csv);
  hs_whatif_result_destroy(&r);
  hs_cluster_destroy(&base);
}

int main(void)
{
  hs_model_t m;
  hs_cluster_t base;
  hs_error_t err;
  hs_model_init(&m);
  hs_cluster_init(&base);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_model_load("gpt3-1.3b", 0, &m, &err), HS_OK);
  CHECK_EQ_INT(hs_cluster_load("dgx-a100-1node", &base, &err), HS_OK);
  test_study_against_definition(&m, &base);
  test_bad_options(&m, &base);
  test_unpriced_base(&m);
  hs_cluster_destroy(&base);
  hs_model_destroy(&m);
  HS_TEST_END();
}
