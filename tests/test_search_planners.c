/*
 * test_search_planners.c - every planner through the same cases
 * (conformance), and the planners against independent truths:
 *  1. every registered planner emits a plan that validates and fits in
 *     memory under hs_simulate, or says HS_EINFEASIBLE with a message;
 *  2. hapt's DP reaches the brute-force optimum of its own search space
 *     (exhaustive, same scoring) within 2% on small instances;
 *  3. on homogeneous clusters the heterogeneity-aware strategies (whale,
 *     hapt) are at most 3% slower than megatron (simulated);
 *  4. on each seed scenario the seed's strategy beats megatron;
 *  5. hapt's hetero-1f1b beats plain blocking 1f1b on the same cuts across
 *     a slow inter-site link.
 */
#include "hs_scenarios.h"
#include "hs_search.h"
#include "hs_test.h"

#include <stdlib.h>
#include <string.h>

/* Two sites of one node each (A100 x gpn, V100 x gpn) joined by a link of
 * GBps and latency_us. */
static hs_status_t two_site_cluster(hs_cluster_t *c, int gpn, double GBps, double latency_us,
                                    hs_error_t *err)
{
  char json[2048];
  snprintf(json, sizeof json,
           "{\"name\": \"two-site-%d\", \"sites\": ["
           " {\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": %d,"
           "   \"intra_node\": {\"GBps\": 300, \"latency_us\": 1}, \"nic\": {\"GBps\": 100, \"latency_us\": 5}}]},"
           " {\"name\": \"b\", \"nodes\": [{\"count\": 1, \"gpu\": \"V100-SXM2-32GB\", \"gpus_per_node\": %d,"
           "   \"intra_node\": {\"GBps\": 150, \"latency_us\": 1.5}, \"nic\": {\"GBps\": 50, \"latency_us\": 5}}]}],"
           " \"links\": [{\"between\": [\"a\", \"b\"], \"GBps\": %.17g, \"latency_us\": %.17g}]}",
           2 * gpn, gpn, gpn, GBps, latency_us);
  hs_cluster_init(c);
  return hs_cluster_parse(json, "two-site.json", c, err);
}

static void small_gpt(hs_model_t *m, int layers, int hidden, int seq)
{
  hs_transformer_cfg_t cfg;
  hs_transformer_cfg_init(&cfg);
  snprintf(cfg.name, sizeof cfg.name, "gpt-%dx%d", layers, hidden);
  cfg.layers = layers;
  cfg.hidden = hidden;
  cfg.heads = hidden / 64;
  cfg.kv_heads = cfg.heads;
  cfg.ffn = 4 * hidden;
  cfg.vocab = 32000;
  cfg.seq_len = seq;
  cfg.max_positions = seq;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_model_from_transformer(&cfg, m, &err);
  CHECK_MSG(st == HS_OK, "model: %s", err.msg);
}

static hs_status_t run(const char *name, const hs_model_t *m, const hs_cluster_t *c,
                       const hs_plan_opts_t *o, hs_plan_t *plan, hs_search_stats_t *stats,
                       hs_report_t *rep, hs_error_t *err)
{
  const hs_planner_type_t *t = hs_planner_find(name);
  CHECK_MSG(t != NULL, "planner %s", name);
  if (!t)
    return HS_ENOTFOUND;
  hs_error_init(err);
  err->warn_fp = NULL;
  return hs_planner_run(t, m, c, o, NULL, plan, stats, rep, err);
}

static void test_conformance(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t cl[3];
  hs_cluster_init(&cl[0]);
  CHECK(hs_cluster_load("dgx-a100-1node", &cl[0], &err) == HS_OK);
  CHECK(two_site_cluster(&cl[1], 4, 1.25, 1000, &err) == HS_OK);
  CHECK(two_site_cluster(&cl[2], 2, 12.5, 50, &err) == HS_OK);
  /* models[2] does not fit as plain data parallelism on 32 GB V100s
   * (2.7e9 params x 16 bytes of weights, gradients and Adam state) */
  hs_model_t models[3];
  small_gpt(&models[0], 4, 1024, 512);
  small_gpt(&models[1], 12, 2048, 1024);
  hs_model_init(&models[2]);
  CHECK(hs_model_load("gpt3-2.7b", 0, &models[2], &err) == HS_OK);
  for (int ci = 0; ci < 3; ci++)
    for (int mi = 0; mi < 3; mi++)
      for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
        hs_plan_opts_t o;
        hs_plan_opts_init(&o);
        o.global_batch = 64;
        hs_plan_t plan;
        hs_search_stats_t stats;
        hs_report_t rep;
        hs_status_t st = run((*t)->name, &models[mi], &cl[ci], &o, &plan, &stats, &rep, &err);
        if (st == HS_EINFEASIBLE) {
          CHECK_MSG(err.msg[0] != '\0', "%s: infeasible without a message", (*t)->name);
        } else {
          CHECK_MSG(st == HS_OK, "%s on %s / %s: %s", (*t)->name, cl[ci].name, models[mi].name,
                    err.msg);
          if (st == HS_OK) {
            hs_error_t e2;
            hs_error_init(&e2);
            e2.warn_fp = NULL;
            CHECK_MSG(hs_plan_validate(&plan, &models[mi], &cl[ci], NULL, &e2) == HS_OK, "%s: %s",
                      (*t)->name, e2.msg);
            CHECK_MSG(!rep.oom, "%s on %s / %s: out of memory", (*t)->name, cl[ci].name,
                      models[mi].name);
            CHECK(rep.iteration_time_s > 0.0);
            CHECK_EQ_INT(hs_plan_global_batch(&plan), 64);
            CHECK(stats.candidates > 0);
          }
        }
        hs_plan_destroy(&plan);
        hs_report_destroy(&rep);
      }
  for (int i = 0; i < 3; i++)
    hs_model_destroy(&models[i]);
  for (int i = 0; i < 3; i++)
    hs_cluster_destroy(&cl[i]);
}

static void test_registry(void)
{
  CHECK(hs_planner_find("nope") == NULL);
  CHECK(hs_planner_find(NULL) == NULL);
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
    CHECK(hs_planner_find((*t)->name) == *t);
    CHECK((*t)->description && (*t)->description[0]);
  }
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  CHECK_EQ_INT(o.max_microbatch_size, 8);
  CHECK_EQ_INT(o.max_devices, 8);
  CHECK(o.allow_recompute);
  /* exhaustive refuses big clusters with a message naming the limit */
  hs_error_t err;
  hs_cluster_t c;
  hs_error_init(&err);
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("dgx-a100-4nodes", &c, &err) == HS_OK);
  hs_model_t m;
  small_gpt(&m, 4, 512, 128);
  hs_plan_t plan;
  hs_search_stats_t stats;
  hs_report_t rep;
  CHECK(run("exhaustive", &m, &c, &o, &plan, &stats, &rep, &err) == HS_EINFEASIBLE);
  CHECK_CONTAINS(err.msg, "limit of 8");
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

static void test_hapt_matches_exhaustive(void)
{
  struct {
    int gpn;
    double GBps, lat;
    int layers, hidden, seq;
    int64_t gb;
  } cases[] = {
      {4, 1.25, 1000, 4, 1024, 512, 32},
      {2, 12.5, 50, 6, 1024, 512, 16},
      {4, 100, 5, 3, 2048, 1024, 16},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_t c;
    CHECK(two_site_cluster(&c, cases[k].gpn, cases[k].GBps, cases[k].lat, &err) == HS_OK);
    hs_model_t m;
    small_gpt(&m, cases[k].layers, cases[k].hidden, cases[k].seq);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = cases[k].gb;
    hs_plan_t p1, p2;
    hs_search_stats_t s1, s2;
    hs_report_t r1, r2;
    CHECK(run("hapt", &m, &c, &o, &p1, &s1, &r1, &err) == HS_OK);
    CHECK(run("exhaustive", &m, &c, &o, &p2, &s2, &r2, &err) == HS_OK);
    CHECK(s2.optimal);
    /* same objective: the DP optimum is the brute-force optimum */
    CHECK_MSG(s1.predicted_s <= s2.predicted_s * 1.02 && s2.predicted_s <= s1.predicted_s * 1.02,
              "case %zu: hapt %.6f vs exhaustive %.6f", k, s1.predicted_s, s2.predicted_s);
    CHECK_MSG(r1.iteration_time_s <= r2.iteration_time_s * 1.02, "case %zu: simulated %.6f vs %.6f",
              k, r1.iteration_time_s, r2.iteration_time_s);
    hs_plan_destroy(&p1);
    hs_plan_destroy(&p2);
    hs_report_destroy(&r1);
    hs_report_destroy(&r2);
    hs_model_destroy(&m);
    hs_cluster_destroy(&c);
  }
}

static void test_homogeneous_close_to_megatron(void)
{
  const char *clusters[] = {"dgx-a100-1node", "dgx-a100-4nodes"};
  const char *models[] = {"gpt3-1.3b", "llama2-7b"};
  for (size_t ci = 0; ci < HS_ARRAY_LEN(clusters); ci++)
    for (size_t mi = 0; mi < HS_ARRAY_LEN(models); mi++) {
      hs_error_t err;
      hs_error_init(&err);
      hs_cluster_t c;
      hs_model_t m;
      hs_model_init(&m);
      hs_cluster_init(&c);
      CHECK(hs_cluster_load(clusters[ci], &c, &err) == HS_OK);
      CHECK(hs_model_load(models[mi], 0, &m, &err) == HS_OK);
      hs_plan_opts_t o;
      hs_plan_opts_init(&o);
      o.global_batch = 16 * (int64_t)c.n_devices;
      hs_plan_t pm;
      hs_search_stats_t sm;
      hs_report_t rm;
      CHECK(run("megatron", &m, &c, &o, &pm, &sm, &rm, &err) == HS_OK);
      const char *aware[] = {"whale", "hapt"};
      for (int a = 0; a < 2; a++) {
        hs_plan_t p;
        hs_search_stats_t s;
        hs_report_t r;
        hs_status_t st = run(aware[a], &m, &c, &o, &p, &s, &r, &err);
        CHECK_MSG(st == HS_OK, "%s: %s", aware[a], err.msg);
        if (st == HS_OK)
          CHECK_MSG(r.iteration_time_s <= rm.iteration_time_s * 1.03,
                    "%s on %s / %s: %.4f s vs megatron %.4f s", aware[a], clusters[ci], models[mi],
                    r.iteration_time_s, rm.iteration_time_s);
        hs_plan_destroy(&p);
        hs_report_destroy(&r);
      }
      hs_plan_destroy(&pm);
      hs_report_destroy(&rm);
      hs_model_destroy(&m);
      hs_cluster_destroy(&c);
    }
}

static void test_scenarios_seed_beats_megatron(void)
{
  int ran = 0;
  for (const hs_scenario_t *sc = hs_scenarios; sc->name; sc++) {
    CHECK(hs_scenario_find(sc->name) == sc);
    if (!hs_planner_find(sc->seed_strategy)) {
      fprintf(stderr, "  scenario %s: strategy %s not built, skipped\n", sc->name, sc->seed_strategy);
      continue;
    }
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_t c;
    hs_model_t m;
    hs_model_init(&m);
    hs_cluster_init(&c);
    CHECK(hs_cluster_load(sc->cluster, &c, &err) == HS_OK);
    CHECK(hs_model_load(sc->model, 0, &m, &err) == HS_OK);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = hs_scenario_global_batch(sc, (int64_t)c.n_devices);
    hs_plan_t p1, p2;
    hs_search_stats_t s1, s2;
    hs_report_t r1, r2;
    CHECK(run("megatron", &m, &c, &o, &p1, &s1, &r1, &err) == HS_OK);
    hs_status_t st = run(sc->seed_strategy, &m, &c, &o, &p2, &s2, &r2, &err);
    CHECK_MSG(st == HS_OK, "%s: %s", sc->seed_strategy, err.msg);
    /* never worse than the baseline; since megatron may leave node groups
     * idle (issue 14) it ties on the hapt scenario, where training on the
     * A100 site alone is best for both */
    if (st == HS_OK)
      CHECK_MSG(r2.iteration_time_s <= r1.iteration_time_s * (1 + 1e-9),
                "scenario %s: %s %.4f s vs megatron %.4f s", sc->name, sc->seed_strategy,
                r2.iteration_time_s, r1.iteration_time_s);
    ran++;
    hs_plan_destroy(&p1);
    hs_plan_destroy(&p2);
    hs_report_destroy(&r1);
    hs_report_destroy(&r2);
    hs_model_destroy(&m);
    hs_cluster_destroy(&c);
  }
  CHECK(ran >= 1);
}

static void test_hetero_1f1b_beats_1f1b(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  CHECK(two_site_cluster(&c, 4, 2.5, 1000, &err) == HS_OK);
  hs_model_t m;
  hs_model_init(&m);
  CHECK(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 64;
  hs_plan_t p;
  hs_search_stats_t s;
  hs_report_t r;
  CHECK(run("hapt", &m, &c, &o, &p, &s, &r, &err) == HS_OK);
  CHECK(strcmp(p.schedule, "hetero-1f1b") == 0);
  CHECK(p.async_send);
  /* the plan must cut across the sites */
  bool cross = false;
  const hs_plan_pipeline_t *pl = &p.pipelines[0];
  for (int32_t i = 0; i + 1 < pl->n_stages; i++)
    cross |= c.devices[pl->stages[i].replicas[0].devices[0]].site !=
             c.devices[pl->stages[i + 1].replicas[0].devices[0]].site;
  CHECK_MSG(cross, "hapt did not use both sites: %s", r.plan_summary);
  hs_plan_t q;
  CHECK(hs_plan_copy(&p, &q, &err) == HS_OK);
  hs_strlcpy(q.schedule, "1f1b", sizeof q.schedule);
  q.async_send = false;
  for (int32_t i = 0; i < q.pipelines[0].n_stages; i++)
    q.pipelines[0].stages[i].warmup = -1;
  hs_report_t rq;
  CHECK(hs_simulate(&m, &c, &q, NULL, &rq, &err) == HS_OK);
  CHECK_MSG(r.iteration_time_s < 0.97 * rq.iteration_time_s, "hetero-1f1b %.5f s vs 1f1b %.5f s",
            r.iteration_time_s, rq.iteration_time_s);
  hs_report_destroy(&rq);
  hs_plan_destroy(&q);
  hs_plan_destroy(&p);
  hs_report_destroy(&r);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_registry);
  HS_RUN(test_conformance);
  HS_RUN(test_hapt_matches_exhaustive);
  HS_RUN(test_homogeneous_close_to_megatron);
  HS_RUN(test_scenarios_seed_beats_megatron);
  HS_RUN(test_hetero_1f1b_beats_1f1b);
  fprintf(stderr, "%d checks, %d failures\n", hs_test_checks, hs_test_failures);
  return hs_test_failures ? 1 : 0;
}
