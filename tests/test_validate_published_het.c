/*
 * test_validate_published_het.c - heterogeneous tables of the published
 * validation suite (issue #33 item 5).
 *
 * 1. Planner metrics against hand-computed values: Spearman's rho with and
 *    without ties (1 - 6 sum d^2 / n(n^2-1), and the Pearson correlation of
 *    mean ranks worked by hand), top-pick regret for times and throughputs,
 *    ties, a pick that did not fit, rows predicted out of memory.
 * 2. Clusters of several node groups: a placement that moves the ranks of
 *    one node group onto another predicts what the same plan predicts on
 *    the cluster written with its node groups swapped (an independent
 *    cluster file, no placement); a row's own "cluster" is the table's.
 * 3. Out-of-memory rows: counted apart from the error statistics; a run
 *    that did not fit and is predicted so, one predicted to fit, and a run
 *    that ran but is predicted out of memory are each counted.
 * 4. The AMP table (validate/published/amp-neurips22-het.json): 53 rows,
 *    AMP's boundaries turned into blocks per stage as worked by hand from
 *    the artifact's 30 layer specs, the T4 node holding the last ranks.
 * 5. Broken heterogeneous-cluster fields are refused naming field and value.
 */
#include "hs_json.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_spearman(void)
{
  /* no ties: d = -1, 1, -1, 1, 0, rho = 1 - 6 x 4 / (5 x 24) = 0.8 */
  const double x1[] = {1, 2, 3, 4, 5}, y1[] = {2, 1, 4, 3, 5};
  CHECK_REL(hs_pub_spearman(x1, y1, 5), 0.8, 1e-12);
  /* monotone, not linear: 1; reversed: -1 */
  const double x2[] = {0.1, 0.5, 3.0}, y2[] = {10, 20, 300}, y3[] = {3, 2, 1};
  CHECK_REL(hs_pub_spearman(x2, y2, 3), 1.0, 1e-12);
  CHECK_REL(hs_pub_spearman(x2, y3, 3), -1.0, 1e-12);
  /* ties: ranks x = 1, 2.5, 2.5, 4, y = 1, 3, 2, 4; about the mean 2.5:
   * sxy = 2.25 + 2.25, sxx = 4.5, syy = 5, rho = 4.5 / sqrt(22.5) = 3 / sqrt(10) */
  const double x4[] = {1, 2, 2, 3}, y4[] = {1, 3, 2, 4};
  CHECK_REL(hs_pub_spearman(x4, y4, 4), 3.0 / sqrt(10.0), 1e-12);
  CHECK_REL(hs_pub_spearman(y4, x4, 4), 3.0 / sqrt(10.0), 1e-12);
  /* undefined: one row, or a constant side */
  const double c[] = {2, 2, 2};
  CHECK(isnan(hs_pub_spearman(x1, y1, 1)));
  CHECK(isnan(hs_pub_spearman(c, x2, 3)));
}

static void test_regret(void)
{
  int32_t pick = -2, best = -2;
  /* times: the pick is row 0 (1.5 s measured), the best row 1 (1.2 s) */
  const double p1[] = {1.0, 2.0, 3.0}, m1[] = {1.5, 1.2, 2.0};
  CHECK_REL(hs_pub_regret(p1, m1, 3, true, &pick, &best), 1.5 / 1.2 - 1, 1e-12);
  CHECK_EQ_INT(pick, 0);
  CHECK_EQ_INT(best, 1);
  /* the predicted-best is the measured best: 0 */
  const double m1b[] = {1.0, 1.2, 2.0};
  CHECK(hs_pub_regret(p1, m1b, 3, true, &pick, &best) == 0.0);
  /* a tie in the prediction goes to the worse measured, in either order */
  const double p2[] = {1.0, 1.0, 2.0}, m2[] = {1.5, 1.8, 1.2}, m2r[] = {1.8, 1.5, 1.2};
  CHECK_REL(hs_pub_regret(p2, m2, 3, true, &pick, &best), 1.8 / 1.2 - 1, 1e-12);
  CHECK_EQ_INT(pick, 1);
  CHECK_REL(hs_pub_regret(p2, m2r, 3, true, &pick, &best), 1.8 / 1.2 - 1, 1e-12);
  CHECK_EQ_INT(pick, 0);
  CHECK_EQ_INT(best, 2);
  /* a tie with a run that did not fit: the pick did not fit */
  const double m3[] = {1.0, NAN, 1.2};
  CHECK(isinf(hs_pub_regret(p2, m3, 3, true, &pick, &best)));
  CHECK_EQ_INT(pick, 1);
  CHECK_EQ_INT(best, 0);
  /* rows predicted out of memory are no candidates, but can be the best */
  const double p4[] = {NAN, 2.0, 3.0}, m4[] = {0.5, 1.0, 1.1};
  CHECK_REL(hs_pub_regret(p4, m4, 3, true, &pick, &best), 1.0, 1e-12);
  CHECK_EQ_INT(pick, 1);
  CHECK_EQ_INT(best, 0);
  /* a throughput: higher is better, regret in time = best / pick - 1 */
  const double p5[] = {100, 90}, m5[] = {80, 100};
  CHECK_REL(hs_pub_regret(p5, m5, 2, false, &pick, &best), 100.0 / 80 - 1, 1e-12);
  CHECK_EQ_INT(pick, 0);
  CHECK_EQ_INT(best, 1);
  /* nothing predicted to fit, or nothing ran: undefined */
  const double pn[] = {NAN, NAN}, mn[] = {NAN, NAN};
  CHECK(isnan(hs_pub_regret(pn, m5, 2, true, &pick, &best)));
  CHECK_EQ_INT(pick, -1);
  CHECK(isnan(hs_pub_regret(p5, mn, 2, true, &pick, &best)));
  CHECK_EQ_INT(best, -1);
}

/* A 2-group table: one node of 4 A100 and one of 4 V100 (`first`, `second`
 * in file order), tp 1, pp 2, dp 4; stage 0 holds the embedding and 1 of 4
 * blocks, stage 1 3 blocks and the head (the heavier stage by 3 blocks'
 * GEMM FLOPs, 3 x 24 s h^2, against one block's). */
static const char *het_table(char *buf, size_t n, const char *first, const char *second, const char *top,
                             const char *row_extra, const char *plan_extra)
{
  snprintf(buf, n,
           "{\"table\": \"h\", \"title\": \"het\", \"source\": \"test\", \"date\": \"2026-12-02\","
           " \"metric\": \"iteration_time_s\", \"max_mape\": 0.5%s,"
           " \"model\": {\"name\": \"m\", \"transformer\": {\"arch\": \"decoder\", \"layers\": 4,"
           "   \"hidden\": 1024, \"heads\": 16, \"ffn\": 4096, \"vocab\": 32000, \"seq_len\": 1024}},"
           " \"cluster\": {\"name\": \"c\", \"sites\": [{\"name\": \"s\", \"nodes\": ["
           "   {\"count\": 1, \"gpu\": \"%s\", \"gpus_per_node\": 4, \"intra_node\": {\"GBps\": 100},"
           "    \"nic\": {\"GBps\": 5}},"
           "   {\"count\": 1, \"gpu\": \"%s\", \"gpus_per_node\": 4, \"intra_node\": {\"GBps\": 100},"
           "    \"nic\": {\"GBps\": 5}}]}]},"
           " \"options\": {\"precision\": \"fp16\"},"
           " \"rows\": [{\"name\": \"a\", \"source\": \"r1\", \"measured\": 1%s,"
           "             \"plan\": {\"tp\": 1, \"pp\": 2, \"dp\": 4, \"microbatch\": 1, \"global_batch\": 16,"
           "                      \"stage_layers\": [1, 3]%s}}]}",
           top, first, second, row_extra, plan_extra);
  return buf;
}

static double run_one(const char *text, hs_pub_summary_t *sum_out)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_pub_table_t t;
  hs_pub_result_t res[4];
  hs_pub_summary_t sum;
  CHECK_MSG(hs_pub_table_parse(text, "h.json", &t, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(t.n_rows <= 4 && hs_pub_run(&t, res, &sum, &err) == HS_OK, "%s", err.msg);
  if (sum_out)
    *sum_out = sum;
  double p = res[0].infeasible || res[0].not_modelled ? NAN : res[0].predicted;
  hs_pub_table_destroy(&t);
  return p;
}

static void test_placement(void)
{
  char b[4096];
  /* stage 0 on the A100s, stage 1 (the heavier) on the V100s */
  double fast_first = run_one(het_table(b, sizeof b, "A100-SXM4-80GB", "V100-SXM2-32GB", "", "", ""), NULL);
  /* the same cluster, stage 0 placed on the V100s: as the cluster written
   * with the V100 node first and no placement */
  double placed = run_one(het_table(b, sizeof b, "A100-SXM4-80GB", "V100-SXM2-32GB",
                                    ", \"placement\": [4, 5, 6, 7, 0, 1, 2, 3]", "", ""), NULL);
  double swapped = run_one(het_table(b, sizeof b, "V100-SXM2-32GB", "A100-SXM4-80GB", "", "", ""), NULL);
  CHECK(isfinite(fast_first) && isfinite(placed));
  CHECK(placed == swapped);
  /* the heavier stage on the faster GPUs is faster */
  CHECK(placed < fast_first);
  /* a row's placement replaces the table's; the identity is no placement */
  double row_placed = run_one(het_table(b, sizeof b, "A100-SXM4-80GB", "V100-SXM2-32GB",
                                        ", \"placement\": [0, 1, 2, 3, 4, 5, 6, 7]", "",
                                        ", \"placement\": [4, 5, 6, 7, 0, 1, 2, 3]"),
                              NULL);
  CHECK(row_placed == swapped);
  double ident = run_one(het_table(b, sizeof b, "A100-SXM4-80GB", "V100-SXM2-32GB",
                                   ", \"placement\": [0, 1, 2, 3, 4, 5, 6, 7]", "", ""), NULL);
  CHECK(ident == fast_first);
  /* a row's own whole cluster: the template written out again */
  double own = run_one(het_table(b, sizeof b, "T4-16GB", "T4-16GB", "",
                                 ", \"cluster\": {\"name\": \"c2\", \"sites\": [{\"name\": \"s\", \"nodes\": ["
                                 "{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 4, "
                                 "\"intra_node\": {\"GBps\": 100}, \"nic\": {\"GBps\": 5}},"
                                 "{\"count\": 1, \"gpu\": \"V100-SXM2-32GB\", \"gpus_per_node\": 4, "
                                 "\"intra_node\": {\"GBps\": 100}, \"nic\": {\"GBps\": 5}}]}]}",
                                 ""),
                       NULL);
  CHECK(own == fast_first);
}

static void test_oom_rows(void)
{
  char b[4096];
  hs_error_t err;
  hs_error_init(&err);
  /* row a did not fit but is predicted to; row b (microbatch 1024 of 1024
   * tokens on a T4) did not fit and is predicted so; row c ran but is
   * predicted out of memory */
  snprintf(b, sizeof b,
           "{\"table\": \"o\", \"title\": \"oom\", \"source\": \"test\", \"date\": \"2026-12-02\","
           " \"metric\": \"iteration_time_s\", \"max_mape\": 0.5,"
           " \"model\": {\"name\": \"m\", \"transformer\": {\"arch\": \"decoder\", \"layers\": 4,"
           "   \"hidden\": 1024, \"heads\": 16, \"ffn\": 4096, \"vocab\": 32000, \"seq_len\": 1024}},"
           " \"cluster\": {\"name\": \"c\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 1,"
           "   \"gpu\": \"T4-16GB\", \"gpus_per_node\": 4, \"intra_node\": {\"GBps\": 6}, \"nic\": {\"GBps\": 6}}]}]},"
           " \"rows\": [{\"name\": \"a\", \"source\": \"r1\", \"measured\": \"out_of_memory\","
           "             \"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 4, \"microbatch\": 1, \"global_batch\": 4}},"
           "            {\"name\": \"b\", \"source\": \"r2\", \"measured\": \"out_of_memory\","
           "             \"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 4, \"microbatch\": 1024, \"global_batch\": 4096}},"
           "            {\"name\": \"c\", \"source\": \"r3\", \"measured\": 9,"
           "             \"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 4, \"microbatch\": 1024, \"global_batch\": 4096}},"
           "            {\"name\": \"d\", \"source\": \"r4\", \"measured\": 2,"
           "             \"plan\": {\"tp\": 1, \"pp\": 1, \"dp\": 4, \"microbatch\": 2, \"global_batch\": 8}}]}");
  hs_pub_table_t t;
  hs_pub_result_t res[4];
  hs_pub_summary_t sum;
  CHECK_MSG(hs_pub_table_parse(b, "o.json", &t, &err) == HS_OK, "%s", err.msg);
  CHECK(t.rows[0].measured_oom && t.rows[1].measured_oom && !t.rows[2].measured_oom);
  CHECK_REL(t.min_oom_predicted, 1.0, 0);
  CHECK_MSG(hs_pub_run(&t, res, &sum, &err) == HS_OK, "%s", err.msg);
  CHECK(!res[0].infeasible && res[1].infeasible && res[2].infeasible && !res[3].infeasible);
  CHECK_EQ_INT(sum.n_measured_oom, 2);
  CHECK_EQ_INT(sum.n_oom_predicted, 1);
  CHECK_EQ_INT(sum.n_infeasible, 1);
  /* the error statistics are row d's alone */
  CHECK_EQ_INT(sum.n_simulated, 1);
  CHECK_REL(sum.mape, fabs(res[3].predicted - 2) / 2, 1e-12);
  CHECK_EQ_INT(sum.pairs, 0);
  /* the planner's pick is row a (predicted to fit, fastest) unless d is
   * predicted faster: either way the regret follows hs_pub_regret */
  if (res[0].predicted <= res[3].predicted) {
    CHECK(isinf(sum.regret));
    CHECK_EQ_INT(sum.top_pick, 0);
  } else {
    CHECK(sum.regret == 0.0);
    CHECK_EQ_INT(sum.top_pick, 3);
  }
  CHECK_EQ_INT(sum.measured_best, 3);
  CHECK(isnan(sum.spearman)); /* one row both predicted and run */
  struct cJSON *j = hs_pub_to_json(&t, res, &sum);
  CHECK(j != NULL);
  char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
  CHECK(txt && strstr(txt, "\"rows_measured_oom\":2") && strstr(txt, "\"rows_measured_oom_predicted_oom\":1") &&
        strstr(txt, "\"measured\":\"out_of_memory\"") && strstr(txt, "\"spearman\":null"));
  free(txt);
  hs_json_free(j);
  hs_pub_table_destroy(&t);
  /* rows of two models (row d with 2 layers): no plan choice, no top pick;
   * the same keys on every row are one model again */
  char *d = strstr(b, "{\"name\": \"d\"");
  CHECK(d != NULL);
  char m[4096];
  snprintf(m, sizeof m, "%.*s{\"model\": {\"layers\": 2}, %s", (int)(d - b), b, d + 1);
  CHECK_MSG(hs_pub_table_parse(m, "o2.json", &t, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(hs_pub_run(&t, res, &sum, &err) == HS_OK, "%s", err.msg);
  CHECK(isnan(sum.regret));
  CHECK_EQ_INT(sum.top_pick, -1);
  CHECK_EQ_INT(sum.n_measured_oom, 2);
  hs_pub_table_destroy(&t);
}

static void test_amp_table(void)
{
  hs_error_t err;
  hs_error_init(&err);
  char path[1024];
  snprintf(path, sizeof path, "%s/validate/published/amp-neurips22-het.json", hs_data_dir());
  hs_pub_table_t t;
  CHECK_MSG(hs_pub_table_load(path, &t, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(t.n_rows, 53);
  int oom = 0, left = 0;
  for (int32_t i = 0; i < t.n_rows; i++) {
    const hs_pub_row_t *r = &t.rows[i];
    oom += r->measured_oom;
    left += r->not_modelled[0] != '\0';
    CHECK_EQ_INT((int64_t)r->tp * r->pp * r->dp, 16);
    CHECK_EQ_INT(r->global_batch, 32);
    CHECK(r->opt.grad_reduce_fp32 && !r->opt.dp_overlap && r->opt.grad_accum == HS_GRAD_ACCUM_AUTOGRAD);
    CHECK(r->n_placement == 16);
    int32_t blocks = 0;
    for (int32_t k = 0; k < r->n_stage_layers; k++)
      blocks += r->stage_layers[k];
    CHECK(r->pp == 1 || (r->n_stage_layers == r->pp && blocks == 24));
  }
  CHECK_EQ_INT(oom, 10);
  CHECK_EQ_INT(left, 5);
  /* trial 0: boundaries 0 7 14 20 30 over specs 0 embedding, 1 transpose,
   * 2-25 blocks, 26-29 tail = 5, 7, 6, 6 blocks; trial 2 (pp 16): 0 3 5 7
   * 9 11 13 15 16 17 19 20 21 22 23 25 30 = 1, 2 x 6, 1, 1, 2, 1 x 5, 2, 1 */
  const int32_t t0[] = {5, 7, 6, 6};
  const int32_t t2[] = {1, 2, 2, 2, 2, 2, 2, 1, 1, 2, 1, 1, 1, 1, 2, 1};
  CHECK(strcmp(t.rows[0].name, "mb1-tp1-pp4-dp4") == 0 && t.rows[0].n_stage_layers == 4);
  CHECK(memcmp(t.rows[0].stage_layers, t0, sizeof t0) == 0);
  CHECK(t.rows[2].n_stage_layers == 16 && memcmp(t.rows[2].stage_layers, t2, sizeof t2) == 0);
  /* the T4 node holds ranks 12-15 */
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_parse(t.rows[0].cluster_json, "cluster", &c, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT((int64_t)c.n_devices, 16);
  for (int32_t r = 0; r < 16; r++) {
    const char *gpu = c.gpus.gpus[c.devices[t.rows[0].placement[r]].gpu].name;
    CHECK_MSG(strcmp(gpu, r >= 12 ? "T4-16GB" : "V100-SXM2-16GB") == 0, "rank %d on %s", r, gpu);
  }
  hs_cluster_destroy(&c);
  hs_pub_table_destroy(&t);
}

static void expect_bad(const char *text, const char *needle, bool at_run)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_pub_table_t t;
  hs_status_t st = hs_pub_table_parse(text, "bad.json", &t, &err);
  if (at_run && st == HS_OK) {
    hs_pub_result_t *res = calloc((size_t)t.n_rows, sizeof *res);
    hs_pub_summary_t sum;
    st = res ? hs_pub_run(&t, res, &sum, &err) : HS_ENOMEM;
    free(res);
  }
  hs_pub_table_destroy(&t);
  CHECK_MSG(st != HS_OK, "accepted: %s", needle);
  CHECK_CONTAINS(err.msg, "bad.json");
  CHECK_CONTAINS(err.msg, needle);
}

static void test_bad_input(void)
{
  char b[4096];
  const char *A = "A100-SXM4-80GB", *V = "V100-SXM2-32GB";
  expect_bad(het_table(b, sizeof b, A, V, "", ", \"nodes\": 1", ""),
             "rows[0].nodes: 1, but the cluster has 2 node groups", false);
  expect_bad(het_table(b, sizeof b, A, V, "", ", \"nodes\": 2, \"cluster\": {\"name\": \"x\"}", ""),
             "rows[0].nodes: 2 beside rows[0].cluster", false);
  expect_bad(het_table(b, sizeof b, A, V, "", ", \"cluster\": 3", ""), "rows[0].cluster", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"placement\": [0, 1, 2, 3, 4, 5, 6]", "", ""),
             "placement: 7 devices, but the plan has tp x pp x dp = 8 ranks", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"placement\": [0, 1, 2, 2, 4, 5, 6, 7]", "", ""),
             "placement[3]: device 2 already placed", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"placement\": [8, 1, 2, 3, 4, 5, 6, 7]", "", ""),
             "placement[0]: must be a device index 0 to 7, got 8", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"placement\": [0, 1.5, 2, 3, 4, 5, 6, 7]", "", ""),
             "placement[1]: must be a device index 0 to 7, got 1.5", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"placement\": [0, \"1\", 2, 3, 4, 5, 6, 7]", "", ""),
             "placement[1]: must be a device index 0 to 7, got a non-number", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"placement\": 7", "", ""), "placement", false);
  expect_bad(het_table(b, sizeof b, A, V, "", "", ", \"placement\": [0, 1, 2, 3, 4, 5, 7, -1]"),
             "rows[0].plan.placement[7]: must be a device index 0 to 7, got -1", false);
  expect_bad(het_table(b, sizeof b, A, V, ", \"min_oom_predicted\": 1.5", "", ""), "min_oom_predicted", false);
  /* the measured figure: a number or out_of_memory */
  {
    char m[4096];
    het_table(b, sizeof b, A, V, "", "", "");
    char *at = strstr(b, "\"measured\": 1");
    CHECK(at != NULL);
    snprintf(m, sizeof m, "%.*s\"measured\": \"inf\"%s", (int)(at - b), b, at + strlen("\"measured\": 1"));
    expect_bad(m, "rows[0].measured: must be a positive number or \"out_of_memory\", got \"inf\"", false);
  }
  /* a GPU type no catalog has, in the second node group: the row's cluster
   * is refused when the row runs, naming the row, the field and the value */
  expect_bad(het_table(b, sizeof b, A, "V1OO", "", "", ""), "V1OO", true);
  expect_bad(het_table(b, sizeof b, A, "V1OO", "", "", ""), "rows[0] (a)", true);
}

int main(void)
{
  HS_RUN(test_spearman);
  HS_RUN(test_regret);
  HS_RUN(test_placement);
  HS_RUN(test_oom_rows);
  HS_RUN(test_amp_table);
  HS_RUN(test_bad_input);
  return hs_test_failures ? 1 : 0;
}
