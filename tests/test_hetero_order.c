/*
 * test_hetero_order.c - explicit hetero-1F1B stage orders (stages[].order,
 * sim/sched.c) and their tuner (search/hetero_order.c, issue 14) against
 * brute force: on 2- and 3-stage pipelines of fast A100 and slow V100
 * stages joined by a slow link, every legal combination of per-stage
 * orders (each a Dyck word of m forwards and m backwards; combinations the
 * plan validator calls deadlocking skipped, those out of memory counted
 * as infeasible) is simulated. The tuner, started from the warm-up tuner's
 * plan, must come within 0.5% of the brute-force optimum (the printed
 * lines say where it is exactly equal), never be slower than its input,
 * and emit only valid orders. Also: explicit orders equal to the warm-up
 * rule simulate bit for bit like the rule, and the validator rejects
 * malformed and deadlocking orders naming the field.
 */
#include "hetero_order.h"
#include "hetero_warmup.h"
#include "search_fixture.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hs_status_t cluster3(hs_cluster_t *c, double GBps, double latency_us, hs_error_t *err)
{
  char json[2048];
  snprintf(json, sizeof json,
           "{\"name\": \"order-3\", \"sites\": ["
           " {\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 2,"
           "   \"intra_node\": {\"GBps\": 300, \"latency_us\": 1}, \"nic\": {\"GBps\": 100, \"latency_us\": 5}}]},"
           " {\"name\": \"b\", \"nodes\": [{\"count\": 1, \"gpu\": \"V100-SXM2-32GB\", \"gpus_per_node\": 1,"
           "   \"intra_node\": {\"GBps\": 150, \"latency_us\": 1.5}, \"nic\": {\"GBps\": 50, \"latency_us\": 5}}]}],"
           " \"links\": [{\"between\": [\"a\", \"b\"], \"GBps\": %.17g, \"latency_us\": %.17g}]}",
           GBps, latency_us);
  hs_cluster_init(c);
  return hs_cluster_parse(json, "order.json", c, err);
}

static void make_plan(hs_plan_t *p, const hs_model_t *m, int32_t S, const int32_t *devs,
                      int32_t n_mb, int32_t mb)
{
  int32_t cut[4];
  for (int32_t i = 0; i + 1 < S; i++) {
    int32_t layer = 6 * (i + 1) / S;
    cut[i] = -1;
    for (size_t k = 0; k < m->n_ops && cut[i] < 0; k++)
      if (m->ops[k].layer == layer)
        cut[i] = (int32_t)k;
  }
  hs_plan_init(p);
  hs_strlcpy(p->strategy, "manual", sizeof p->strategy);
  hs_strlcpy(p->schedule, "hetero-1f1b", sizeof p->schedule);
  p->async_send = true;
  p->precision = HS_DTYPE_BF16;
  CHECK(hs_plan_alloc_pipelines(p, 1) == HS_OK);
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  pl->microbatch_size = mb;
  pl->n_microbatches = n_mb;
  CHECK(hs_plan_alloc_stages(pl, S) == HS_OK);
  for (int32_t i = 0; i < S; i++) {
    pl->stages[i].op_first = i == 0 ? 0 : cut[i - 1];
    pl->stages[i].op_last = i + 1 == S ? (int32_t)m->n_ops : cut[i];
    CHECK(hs_plan_alloc_replicas(&pl->stages[i], 1) == HS_OK);
    CHECK(hs_plan_replica_set_devices(&pl->stages[i].replicas[0], &devs[i], 1) == HS_OK);
    pl->stages[i].replicas[0].share = 1.0;
  }
}

/* Simulated seconds; INFINITY when invalid (deadlock), OOM or failing.
 * *valid says whether the validator accepted the plan. */
static double sim(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p, bool *valid)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  *valid = hs_plan_validate(p, m, c, "t", &err) == HS_OK;
  if (!*valid)
    return INFINITY;
  hs_report_t r;
  hs_report_init(&r);
  hs_status_t st = hs_simulate(m, c, p, NULL, &r, &err);
  double t = st == HS_OK && !r.oom ? r.iteration_time_s : INFINITY;
  hs_report_destroy(&r);
  return t;
}

/* Every Dyck word of n_mb Fs and n_mb Bs, in lexicographic order (B < F). */
static int32_t dyck_all(int32_t n_mb, char *words, int32_t cap)
{
  int32_t n = 0, L = 2 * n_mb;
  char w[64];
  /* iterate over all 2^L bit patterns; L <= 12 here */
  for (uint32_t bits = 0; bits < (1u << L); bits++) {
    int32_t d = 0, f = 0;
    bool ok = true;
    for (int32_t k = 0; k < L && ok; k++) {
      bool isf = (bits >> (L - 1 - k)) & 1u;
      w[k] = isf ? 'F' : 'B';
      f += isf;
      d += isf ? 1 : -1;
      ok = d >= 0;
    }
    if (!ok || f != n_mb)
      continue;
    w[L] = '\0';
    CHECK(n < cap);
    memcpy(words + (size_t)n * (L + 1), w, (size_t)L + 1);
    n++;
  }
  return n;
}

static double brute(const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *p, int32_t i,
                    const char *words, int32_t n_words, int32_t L, int32_t *count, int32_t *oom)
{
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  if (i == pl->n_stages) {
    bool valid;
    double t = sim(m, c, p, &valid);
    *count += valid;
    *oom += valid && !isfinite(t);
    return t;
  }
  double best = INFINITY;
  for (int32_t k = 0; k < n_words; k++) {
    CHECK(hs_plan_stage_set_order(&pl->stages[i], words + (size_t)k * (L + 1)) == HS_OK);
    best = fmin(best, brute(m, c, p, i + 1, words, n_words, L, count, oom));
  }
  return best;
}

/* Brute force over the warm-up family: non-increasing vectors in [0, m-1]. */
static double brute_warmup(const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *p, int32_t i,
                           int32_t hi)
{
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  bool valid;
  if (i == pl->n_stages)
    return sim(m, c, p, &valid);
  double best = INFINITY;
  for (int32_t w = 0; w <= hi; w++) {
    pl->stages[i].warmup = w;
    best = fmin(best, brute_warmup(m, c, p, i + 1, w));
  }
  return best;
}

static void check_case(int32_t S, const int32_t *devs, double GBps, double lat_us, int32_t n_mb,
                       int32_t mb, int32_t layers_h)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  CHECK(cluster3(&c, GBps, lat_us, &err) == HS_OK);
  hs_model_t m;
  small_gpt(&m, 6, layers_h, layers_h > 1024 ? 2048 : 1024);
  hs_plan_t p;
  make_plan(&p, &m, S, devs, n_mb, mb);
  bool valid;
  double t_default = sim(&m, &c, &p, &valid);
  CHECK(valid);
  int32_t L = 2 * n_mb, cap = 200;
  char *words = calloc((size_t)cap * (L + 1), 1);
  CHECK(words);
  int32_t n_words = dyck_all(n_mb, words, cap);
  int32_t count = 0, oom = 0;
  double t_brute = brute(&m, &c, &p, 0, words, n_words, L, &count, &oom);
  free(words);
  for (int32_t i = 0; i < S; i++)
    CHECK(hs_plan_stage_set_order(&p.pipelines[0].stages[i], NULL) == HS_OK);
  double t_wbrute = brute_warmup(&m, &c, &p, 0, n_mb - 1);
  CHECK(t_brute <= t_wbrute); /* the warm-up family is a subset */
  for (int32_t i = 0; i < S; i++)
    p.pipelines[0].stages[i].warmup = -1;
  double t_warm, t_order;
  int32_t sims_w, sims_o;
  /* the warm-up tuner needs a plan that fits; the order tuner does not */
  if (hs__hetero_warmup_tune(&m, &c, &p, NAN, 1000, &t_warm, &sims_w, &err) != HS_OK)
    t_warm = INFINITY;
  hs_error_init(&err); /* the warm-up tuner may have recorded its failure */
  hs_status_t st = hs__hetero_order_tune(&m, &c, &p, NAN, 5000, &t_order, &sims_o, &err);
  if (!isfinite(t_brute)) { /* nothing fits: the tuner says so */
    CHECK_MSG(st == HS_EINVAL && strstr(err.msg, "not even with one microbatch in flight"), "%s",
              err.msg);
    fprintf(stderr, "  h=%d S=%d m=%d mb=%d: no order fits (%d combinations)\n", layers_h, S, n_mb,
            mb, count);
    hs_plan_destroy(&p);
    hs_model_destroy(&m);
    hs_cluster_destroy(&c);
    return;
  }
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  fprintf(stderr, "  h=%d S=%d m=%d mb=%d link %.3g GB/s: default %.6f s, warm-up tuned %.6f s, best "
                  "warm-up vector %.6f s, order tuned %.6f s (%d sims), brute force %.6f s (%d "
                  "legal combinations, %d out of memory)%s; devices",
          layers_h, S, n_mb, mb, GBps, t_default, t_warm, t_wbrute, t_order, sims_o, t_brute,
          count, oom,
          t_order == t_brute ? " [equal]" : "");
  for (int32_t i = 0; i < S; i++)
    fprintf(stderr, " %s", devs[i] == 2 ? "V100" : "A100");
  fprintf(stderr, "; orders");
  for (int32_t i = 0; i < S; i++)
    fprintf(stderr, " %s", p.pipelines[0].stages[i].order ? p.pipelines[0].stages[i].order : "(rule)");
  fprintf(stderr, "\n");
  /* what the tuner emits is valid and simulates to what it says */
  double t_again = sim(&m, &c, &p, &valid);
  CHECK(valid && t_again == t_order);
  CHECK(t_order <= t_warm);
  CHECK(t_brute <= t_order);
  CHECK_MSG(t_order <= t_brute * 1.005, "order tuned %.9f s vs brute force %.9f s", t_order, t_brute);
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

static void test_brute_force(void)
{
  const int32_t ab[2] = {0, 2}, ba[2] = {2, 0};
  check_case(2, ab, 1.25, 1000, 5, 4, 1024);
  check_case(2, ba, 1.25, 1000, 5, 4, 1024);
  check_case(2, ba, 2.5, 500, 6, 4, 1024);
  check_case(2, ab, 100, 5, 6, 8, 1024);
  const int32_t aab[3] = {0, 1, 2}, baa[3] = {2, 0, 1}, aba[3] = {0, 2, 1};
  check_case(3, aab, 1.25, 1000, 4, 4, 1024);
  check_case(3, baa, 2.5, 500, 4, 4, 1024);
  check_case(3, aba, 1.25, 1000, 4, 4, 1024);
  /* memory-bound (hidden 2560, seq 2048): explicit orders beat the
   * warm-up tuner, one of them outside the warm-up family */
  check_case(3, baa, 1.25, 1000, 4, 4, 2560);
  check_case(3, aba, 1.25, 1000, 4, 4, 2560);
  /* the default order does not fit; some leaner orders do */
  check_case(3, aba, 1.25, 1000, 4, 8, 2048);
  check_case(2, ba, 1.25, 1000, 6, 8, 2048);
  /* nothing fits */
  check_case(2, ab, 1.25, 1000, 4, 8, 3072);
}

/* An explicit order equal to the warm-up rule runs the same schedule. */
static void test_rule_equivalence(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  CHECK(cluster3(&c, 1.25, 1000, &err) == HS_OK);
  hs_model_t m;
  small_gpt(&m, 6, 1024, 1024);
  const int32_t devs[3] = {2, 0, 1};
  hs_plan_t p;
  make_plan(&p, &m, 3, devs, 6, 4);
  const int32_t w[3] = {4, 2, 1};
  for (int32_t i = 0; i < 3; i++)
    p.pipelines[0].stages[i].warmup = w[i];
  bool valid;
  double t_rule = sim(&m, &c, &p, &valid);
  char buf[16];
  for (int32_t i = 0; i < 3; i++) {
    hs__hetero_order_from_warmup(w[i], i, 3, 6, buf);
    CHECK(hs_plan_stage_set_order(&p.pipelines[0].stages[i], buf) == HS_OK);
    p.pipelines[0].stages[i].warmup = -1;
  }
  CHECK(strcmp(p.pipelines[0].stages[2].order, "FFBFBFBFBFBB") == 0);
  double t_order = sim(&m, &c, &p, &valid);
  CHECK(valid && isfinite(t_rule) && t_rule == t_order);
  /* copies carry the order */
  hs_plan_t q;
  CHECK(hs_plan_copy(&p, &q, &err) == HS_OK);
  CHECK(strcmp(q.pipelines[0].stages[1].order, p.pipelines[0].stages[1].order) == 0 &&
        q.pipelines[0].stages[1].order != p.pipelines[0].stages[1].order);
  hs_plan_destroy(&q);
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* Broken orders: the validator names the field and the problem. */
static void expect_bad(const char *o0, const char *o1, const char *sched, const char *needle)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_cluster_t c;
  CHECK(cluster3(&c, 10, 10, &err) == HS_OK);
  hs_model_t m;
  small_gpt(&m, 6, 256, 128);
  const int32_t devs[2] = {0, 1};
  hs_plan_t p;
  make_plan(&p, &m, 2, devs, 3, 1);
  hs_strlcpy(p.schedule, sched, sizeof p.schedule);
  CHECK(hs_plan_stage_set_order(&p.pipelines[0].stages[0], o0) == HS_OK);
  CHECK(hs_plan_stage_set_order(&p.pipelines[0].stages[1], o1) == HS_OK);
  CHECK(hs_plan_validate(&p, &m, &c, "plan.json", &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "plan.json: pipelines[0].stages[") && strstr(err.msg, "].order: ") &&
                strstr(err.msg, needle),
            "%s", err.msg);
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

static void test_bad_orders(void)
{
  expect_bad("FFBFBB", "FXBFBB", "hetero-1f1b", "letter 1 is 'X'");
  expect_bad("FFBFBB", "FBBFFB", "hetero-1f1b", "backward 1 at letter 2 comes before its forward");
  expect_bad("FFBFB", "FBFBFB", "hetero-1f1b", "has 5 letters, need 3 Fs and 3 Bs");
  expect_bad("FFFBBBB", "FBFBFB", "hetero-1f1b", "letter 6");
  expect_bad("FFBFBB", "FBFBFB", "1f1b", "only hetero-1f1b");
  /* stage 1 runs 2 forwards before backward 0, stage 0 only 1: deadlock */
  expect_bad("FBFBFB", "FFBFBB", "hetero-1f1b", "deadlocks");
}

/* Plan JSON: the order round-trips; a non-string is rejected by the
 * loader, bad letters by validation, both naming field and value. */
static void test_json(void)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  static const char *fmt =
      "{\"schedule\": \"hetero-1f1b\", \"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 3, "
      "\"stages\": [{\"ops\": [0, %d], \"order\": %s, \"replicas\": [{\"devices\": [0]}]},"
      " {\"ops\": [%d, %d], \"replicas\": [{\"devices\": [1]}]}]}]}";
  hs_model_t m;
  small_gpt(&m, 2, 256, 128);
  int32_t cut = block_first(&m, 1, 2), n = (int32_t)m.n_ops;
  hs_cluster_t c;
  CHECK(cluster3(&c, 10, 10, &err) == HS_OK);
  char json[1024];
  hs_plan_t p, q;
  snprintf(json, sizeof json, fmt, cut, "\"FFBFBB\"", cut, n);
  CHECK_MSG(hs_plan_parse(json, "plan.json", &p, &err) == HS_OK, "%s", err.msg);
  CHECK(strcmp(p.pipelines[0].stages[0].order, "FFBFBB") == 0 && !p.pipelines[0].stages[1].order);
  CHECK_MSG(hs_plan_validate(&p, &m, &c, "plan.json", &err) == HS_OK, "%s", err.msg);
  cJSON *j = hs_plan_to_json(&p);
  char *txt = cJSON_PrintUnformatted(j);
  CHECK(strstr(txt, "\"order\":\"FFBFBB\""));
  CHECK(hs_plan_parse(txt, "again.json", &q, &err) == HS_OK);
  CHECK(strcmp(q.pipelines[0].stages[0].order, "FFBFBB") == 0);
  cJSON_free(txt);
  cJSON_Delete(j);
  hs_plan_destroy(&q);
  hs_plan_destroy(&p);
  snprintf(json, sizeof json, fmt, cut, "42", cut, n);
  CHECK(hs_plan_parse(json, "plan.json", &p, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "plan.json: pipelines[0].stages[0].order: must be a string"), "%s", err.msg);
  hs_plan_destroy(&p);
  hs_error_init(&err);
  err.warn_fp = NULL;
  snprintf(json, sizeof json, fmt, cut, "\"FFBFBZ\"", cut, n);
  CHECK(hs_plan_parse(json, "plan.json", &p, &err) == HS_OK);
  CHECK(hs_plan_validate(&p, &m, &c, "plan.json", &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "plan.json: pipelines[0].stages[0].order: letter 5 is 'Z'"), "%s", err.msg);
  hs_plan_destroy(&p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_json);
  HS_RUN(test_bad_orders);
  HS_RUN(test_rule_equivalence);
  HS_RUN(test_brute_force);
  HS_TEST_END();
}
