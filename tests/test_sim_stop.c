/*
 * test_sim_stop.c - hs_sim_opts_t.stop_at_s, the incumbent bound the
 * planners' climbs simulate under (search/util.c hs__simulate_below).
 *
 * The truth is the same simulation run whole. For plans of several shapes
 * (hapt's pipelines with warm-up and recomputation, megatron's grids, whale's
 * uneven replicas) on random valid clusters (random_cluster.h) and three
 * models, each plan is simulated without a bound (time T, events E), then
 * with stop_at_s at fractions of T below and above it:
 *
 * - below T (0.3 T .. the largest double under T): the run must stop, report
 *   stop_at_s as its time, the whole run's memory and OOM verdict, and fire
 *   no more events than the whole run;
 * - at or above T (T, the next double, 1.001 T, 2 T): a run that does not
 *   stop must give the whole run's report bit for bit (time, events, flows,
 *   memory); at T it may stop (the iteration does take T); above T it must
 *   not.
 *
 * What fails it: a compute bound that counts more than an executor's
 * remaining full-speed work (stops a plan that ends before the bound: the
 * "above T" rows), a stop test off by one ns at the boundary (the next
 * double above T), or a stopped report that drops the memory verdict.
 * Also: a traced run ignores the bound (the trace needs the whole run).
 */
#include "hs_search.h"
#include "hs_test.h"
#include "random_cluster.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int n_plans, n_stopped_early;

/* hs_simulate of p under stop_at_s = s (0: none). */
static hs_status_t sim_at(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p, double s,
                          hs_report_t *rep)
{
  hs_sim_opts_t o;
  hs_sim_opts_init(&o);
  o.stop_at_s = s;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_simulate(m, c, p, &o, rep, &err);
  CHECK_MSG(st == HS_OK, "simulate: %s", err.msg);
  return st;
}

static void check_plan(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p, const char *what)
{
  hs_report_t whole;
  if (sim_at(m, c, p, 0.0, &whole) != HS_OK)
    return;
  double T = whole.iteration_time_s;
  CHECK_MSG(!whole.stopped && T > 0.0, "%s: whole run stopped or empty", what);
  n_plans++;
  const double below[] = {0.3 * T, 0.9 * T, 0.999 * T, nextafter(T, 0.0)};
  for (size_t k = 0; k < HS_ARRAY_LEN(below); k++) {
    hs_report_t r;
    if (sim_at(m, c, p, below[k], &r) != HS_OK)
      continue;
    CHECK_MSG(r.stopped, "%s: stop at %.17g s under the time %.17g s did not stop", what, below[k], T);
    CHECK_MSG(r.iteration_time_s == below[k], "%s: stopped at %.17g s reports %.17g s", what, below[k],
              r.iteration_time_s);
    CHECK_MSG(r.oom == whole.oom && r.max_peak_memory_bytes == whole.max_peak_memory_bytes,
              "%s: stopped run's memory %.6g (oom %d) vs whole %.6g (oom %d)", what,
              r.max_peak_memory_bytes, r.oom, whole.max_peak_memory_bytes, whole.oom);
    CHECK_MSG(r.events <= whole.events, "%s: stopped run fired %llu events, the whole %llu", what,
              (unsigned long long)r.events, (unsigned long long)whole.events);
    if (k == 0 && r.events == 0)
      n_stopped_early++; /* the compute bound: an executor's own work passes 0.3 T */
    hs_report_destroy(&r);
  }
  const double above[] = {T, nextafter(T, INFINITY), 1.001 * T, 2.0 * T};
  for (size_t k = 0; k < HS_ARRAY_LEN(above); k++) {
    hs_report_t r;
    if (sim_at(m, c, p, above[k], &r) != HS_OK)
      continue;
    CHECK_MSG(k == 0 || !r.stopped, "%s: stop at %.17g s stopped a plan of %.17g s", what, above[k], T);
    if (!r.stopped) {
      CHECK_MSG(r.iteration_time_s == T && r.events == whole.events && r.flows == whole.flows &&
                    r.max_peak_memory_bytes == whole.max_peak_memory_bytes && r.oom == whole.oom,
                "%s: bound %.17g s changed the report: %.17g s %llu events vs %.17g s %llu", what,
                above[k], r.iteration_time_s, (unsigned long long)r.events, T,
                (unsigned long long)whole.events);
    }
    hs_report_destroy(&r);
  }
  hs_report_destroy(&whole);
}

static void test_random_plans(void)
{
  static const char *const models[] = {"validate/tiny-gpt.json", "models/gpt2/config.json",
                                       "models/pythia-160m/config.json"};
  static const char *const strategies[] = {"hapt", "megatron", "whale"};
  hs_model_t mod[3];
  hs_error_t err;
  hs_error_init(&err);
  for (int k = 0; k < 3; k++)
    CHECK_MSG(hs_model_load(hs_test_data(models[k]), k ? 256 : 0, &mod[k], &err) == HS_OK, "%s",
              err.msg);
  char json[8192];
  for (int i = 0; i < 6; i++) {
    random_seed(2000 + i);
    world_t w;
    random_world(&w);
    cluster_json(&w, w.n_groups, json, sizeof json);
    hs_cluster_t c;
    hs_cluster_init(&c);
    hs_error_init(&err);
    hs_status_t pc = hs_cluster_parse(json, "random.json", &c, &err);
    CHECK_MSG(pc == HS_OK, "%s", err.msg);
    if (pc != HS_OK)
      continue;
    const hs_model_t *m = &mod[i % 3];
    for (size_t s = 0; s < HS_ARRAY_LEN(strategies); s++) {
      hs_plan_opts_t o;
      hs_plan_opts_init(&o);
      o.global_batch = 8 * (int64_t)c.n_devices;
      o.max_microbatch_size = 4;
      hs_plan_t plan;
      hs_report_t rep;
      hs_search_stats_t st;
      hs_error_init(&err);
      err.warn_fp = NULL;
      hs_status_t rc = hs_planner_run(hs_planner_find(strategies[s]), m, &c, &o, NULL, &plan, &st,
                                      &rep, &err);
      if (rc == HS_EINFEASIBLE)
        continue;
      CHECK_MSG(rc == HS_OK, "case %d %s: %s", i, strategies[s], err.msg);
      if (rc != HS_OK)
        continue;
      char what[96];
      snprintf(what, sizeof what, "case %d %s (%d stages)", i, strategies[s],
               plan.n_pipelines > 0 ? plan.pipelines[0].n_stages : 0);
      check_plan(m, &c, &plan, what);
      hs_plan_destroy(&plan);
      hs_report_destroy(&rep);
    }
    hs_cluster_destroy(&c);
  }
  for (int k = 0; k < 3; k++)
    hs_model_destroy(&mod[k]);
  printf("%d plans, %d stopped before any event at 0.3 T\n", n_plans, n_stopped_early);
  /* the compute bound is not vacuous: a plan whose busiest executor
   * computes for more than 0.3 T of its iteration stops before its first
   * event (most plans here: compute is well over a third of the time) */
  CHECK_MSG(n_plans >= 10, "only %d plans simulated", n_plans);
  CHECK_MSG(2 * n_stopped_early >= n_plans, "%d of %d plans stopped before any event at 0.3 T",
            n_stopped_early, n_plans);
}

static void test_trace_ignores_stop(void)
{
  hs_model_t m;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_model_load(hs_test_data("models/gpt2/config.json"), 256, &m, &err) == HS_OK, "%s", err.msg);
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_load("dgx-a100-1node", &c, &err) == HS_OK, "%s", err.msg);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 64;
  hs_plan_t plan;
  hs_report_t rep, r;
  hs_search_stats_t st;
  hs_status_t rc = hs_planner_run(hs_planner_find("megatron"), &m, &c, &o, NULL, &plan, &st, &rep, &err);
  CHECK_MSG(rc == HS_OK, "%s", err.msg);
  if (rc != HS_OK)
    return;
  char path[] = "/tmp/hs_test_sim_stop_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  so.trace_path = path;
  so.stop_at_s = 0.5 * rep.iteration_time_s;
  CHECK(hs_simulate(&m, &c, &plan, &so, &r, &err) == HS_OK);
  CHECK(!r.stopped && r.iteration_time_s == rep.iteration_time_s);
  remove(path);
  hs_report_destroy(&r);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_random_plans);
  HS_RUN(test_trace_ignores_stop);
  HS_TEST_END();
}
