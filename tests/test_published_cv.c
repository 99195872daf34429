/*
 * test_published_cv.c - the fitted framework overheads' cross-validation
 * (validate/published_cv.c) recomputed from the tables by brute force.
 *
 * Three published tables of two engine families (MPT A100 and MPT H100
 * node: fsdp; BLOOM: deepspeed) over a small grid. The brute force
 * simulates every table at every grid point with hs_pub_run itself and
 * searches the joint space (d, m_fsdp, m_deepspeed) for the least mean
 * table MAPE, for the full training split and for each left-out table; the
 * library's decomposed search must pick the same point and report the same
 * errors. Then the fit spec loader's refusals.
 */
#include "hs_test.h"
#include "hs_validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"llm-foundry-mpt-a100", "llm-foundry-mpt-h100-node", "bloom-176b-tr11"};
#define NT 3
static const double grid_d[] = {0.0, 8.0, 40.0};
static const double grid_m[] = {0.0, 500.0};
#define ND 3
#define NM 2

static void load(hs_pub_table_t *t)
{
  const char *dir = getenv("HETSIM_DATA");
  for (int i = 0; i < NT; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/validate/published/%s.json", dir ? dir : ".", names[i]);
    hs_error_t err;
    hs_error_init(&err);
    CHECK_MSG(hs_pub_table_load(path, &t[i], &err) == HS_OK, "%s", err.msg);
  }
}

/* MAPE of table t with dispatch d and family microbatch m[]. */
static double mape_at(hs_pub_table_t *t, double d, const double *m)
{
  hs_pub_result_t *res = calloc((size_t)t->n_rows, sizeof *res);
  hs_pub_set_host(t, d, m);
  hs_pub_summary_t sum;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_pub_run(t, res, &sum, &err) == HS_OK, "%s", err.msg);
  free(res);
  return sum.mape;
}

static void test_cv_against_brute_force(void)
{
  hs_pub_table_t t[NT];
  memset(t, 0, sizeof t);
  load(t);
  /* brute force: every table at every (d, m) */
  double brute[NT][ND][NM];
  for (int i = 0; i < NT; i++)
    for (int a = 0; a < ND; a++)
      for (int b = 0; b < NM; b++) {
        double m[HS_PUB_FAMILIES] = {grid_m[b], grid_m[b], grid_m[b]};
        brute[i][a][b] = mape_at(&t[i], grid_d[a], m);
      }
  /* the parameters matter here: the grid's corners differ */
  CHECK(brute[0][0][0] != brute[0][ND - 1][NM - 1] && brute[2][0][0] != brute[2][ND - 1][NM - 1]);

  hs_pub_fit_spec_t spec;
  char text[512];
  snprintf(text, sizeof text,
           "{\"schema_version\": 1, \"train\": [\"%s\", \"%s\", \"%s\"], \"dispatch_us\": [0, 8, 40], "
           "\"microbatch_us\": [0, 500]}",
           names[0], names[1], names[2]);
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_pub_fit_spec_parse(text, "fit.json", &spec, &err) == HS_OK, "%s", err.msg);
  hs_pub_cv_t cv;
  CHECK_MSG(hs_pub_cv_eval(t, NT, &spec, 2, &cv, &err) == HS_OK, "%s", err.msg);
  /* one thread gives the same cells, bit for bit */
  hs_pub_cv_t cv1;
  CHECK_MSG(hs_pub_cv_eval(t, NT, &spec, 1, &cv1, &err) == HS_OK, "%s", err.msg);
  CHECK(memcmp(cv.mape, cv1.mape, sizeof *cv.mape * NT * ND * NM) == 0);
  hs_pub_cv_destroy(&cv1);
  CHECK(cv.family[0] == HS_PUB_FAMILY_FSDP && cv.family[1] == HS_PUB_FAMILY_FSDP &&
        cv.family[2] == HS_PUB_FAMILY_DEEPSPEED);
  for (int i = 0; i < NT; i++)
    for (int a = 0; a < ND; a++)
      for (int b = 0; b < NM; b++)
        CHECK(cv.mape[((size_t)i * ND + a) * NM + b] == brute[i][a][b]);

  for (int leave = -1; leave < NT; leave++) {
    /* joint search, d outer, then m_fsdp, m_deepspeed; strict < keeps the smallest */
    double best = INFINITY;
    int bd = 0, bf = 0, bs = 0, used = 0;
    for (int a = 0; a < ND; a++)
      for (int f = 0; f < NM; f++)
        for (int s = 0; s < NM; s++) {
          double sum = 0.0;
          used = 0;
          for (int i = 0; i < NT; i++) {
            if (i == leave)
              continue;
            sum += brute[i][a][i == 2 ? s : f];
            used++;
          }
          if (sum < best - 1e-15) {
            best = sum;
            bd = a;
            bf = f;
            bs = s;
          }
        }
    hs_pub_fit_t fit;
    hs_pub_cv_fit(&cv, leave, &fit);
    CHECK_MSG(fit.dispatch_idx == bd, "leave %d: d index %d, brute force %d", leave, fit.dispatch_idx, bd);
    CHECK_MSG(fit.microbatch_idx[HS_PUB_FAMILY_FSDP] == bf, "leave %d: fsdp m index %d, brute force %d",
              leave, fit.microbatch_idx[HS_PUB_FAMILY_FSDP], bf);
    if (leave != 2)
      CHECK_MSG(fit.microbatch_idx[HS_PUB_FAMILY_DEEPSPEED] == bs, "leave %d: deepspeed m index %d, brute %d",
                leave, fit.microbatch_idx[HS_PUB_FAMILY_DEEPSPEED], bs);
    else /* no deepspeed table left: m stays at the grid's first value */
      CHECK(fit.microbatch_idx[HS_PUB_FAMILY_DEEPSPEED] == 0);
    CHECK(fit.n_tables == used);
    CHECK_MSG(fabs(fit.objective - best / used) < 1e-12, "leave %d: objective %.9g, brute %.9g", leave,
              fit.objective, best / used);
    /* the left-out table's error is its MAPE at the fold's point */
    if (leave >= 0) {
      int fam = cv.family[leave];
      int b = fam == HS_PUB_FAMILY_DEEPSPEED ? fit.microbatch_idx[fam] : fit.microbatch_idx[HS_PUB_FAMILY_FSDP];
      CHECK(hs_pub_cv_table_mape(&cv, leave, &fit) == brute[leave][fit.dispatch_idx][b]);
    }
  }
  hs_pub_cv_destroy(&cv);
  /* a train name that is not among the tables */
  hs_pub_fit_spec_destroy(&spec);
  CHECK(hs_pub_fit_spec_parse("{\"schema_version\": 1, \"train\": [\"nope\"], \"dispatch_us\": [0], "
                              "\"microbatch_us\": [0]}",
                              "fit.json", &spec, &err) == HS_OK);
  CHECK(hs_pub_cv_eval(t, NT, &spec, 2, &cv, &err) == HS_EINVAL && strstr(err.msg, "\"nope\""));
  hs_pub_cv_destroy(&cv);
  hs_pub_fit_spec_destroy(&spec);
  for (int i = 0; i < NT; i++)
    hs_pub_table_destroy(&t[i]);
}

static void test_spec_refused(void)
{
  struct {
    const char *text, *needle;
  } bad[] = {
      {"{\"train\": [\"a\"], \"dispatch_us\": [0], \"microbatch_us\": [0]}", "schema_version"},
      {"{\"schema_version\": 2, \"train\": [\"a\"], \"dispatch_us\": [0], \"microbatch_us\": [0]}",
       "schema_version"},
      {"{\"schema_version\": 1, \"train\": [], \"dispatch_us\": [0], \"microbatch_us\": [0]}", "train"},
      {"{\"schema_version\": 1, \"train\": [\"a\", \"a\"], \"dispatch_us\": [0], \"microbatch_us\": [0]}",
       "train[1]: \"a\" is listed twice"},
      {"{\"schema_version\": 1, \"train\": [3], \"dispatch_us\": [0], \"microbatch_us\": [0]}", "train[0]"},
      {"{\"schema_version\": 1, \"train\": [\"a\"], \"dispatch_us\": [-1], \"microbatch_us\": [0]}",
       "dispatch_us[0]"},
      {"{\"schema_version\": 1, \"train\": [\"a\"], \"dispatch_us\": [4, 2], \"microbatch_us\": [0]}",
       "dispatch_us[1]"},
      {"{\"schema_version\": 1, \"train\": [\"a\"], \"dispatch_us\": [0], \"microbatch_us\": []}",
       "microbatch_us"},
      {"{\"schema_version\": 1, \"train\": [\"a\"], \"dispatch_us\": [0]}", "microbatch_us"},
      {"{\"schema_version\": 1, \"train\": [\"a\"], \"dispatch_us\": [\"x\"], \"microbatch_us\": [0]}",
       "dispatch_us[0]"},
      {"[1]", "fit.json"},
      {"{", "fit.json"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(bad); k++) {
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_pub_fit_spec_t spec;
    hs_status_t st = hs_pub_fit_spec_parse(bad[k].text, "fit.json", &spec, &err);
    CHECK_MSG(st != HS_OK && strstr(err.msg, bad[k].needle) && strstr(err.msg, "fit.json"), "%s -> %s",
              bad[k].text, err.msg);
  }
}

int main(void)
{
  HS_RUN(test_spec_refused);
  HS_RUN(test_cv_against_brute_force);
  HS_TEST_END();
}
