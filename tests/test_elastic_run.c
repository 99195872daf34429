/*
 * test_elastic_run.c - whole elastic runs against independent truths:
 *  - no preemption: goodput = steady-state throughput (an independent
 *    planner run + hs_simulate) x training time, where training time follows
 *    the closed form of a train/checkpoint cycle cut at the horizon;
 *  - a preemption whose layers all survive on DP replicas recovers with zero
 *    cloud bytes, each device reading its own copy (hand count), and the
 *    lost work equals the training since the start (no checkpoint yet);
 *  - local-first is never slower than cloud on the same sequence, restart
 *    never faster than cloud;
 *  - same seed, same bytes; the phases tile the horizon;
 *  - the Poisson sampler's event counts match rate x time;
 *  - the AutoHet-style scenario: local-first several times faster than cloud.
 */
#include "hs_elastic.h"
#include "hs_json.h"
#include "hs_test.h"

#include <cjson/cJSON.h>

static hs_model_t M;
static hs_cluster_t C;

static double model_state_bytes(double bpp)
{
  double p = 0;
  for (size_t o = 0; o < M.n_ops; o++)
    p += M.ops[o].params;
  return p * bpp;
}

static void check_tiling(const hs_elastic_result_t *r)
{
  double sum = 0;
  for (int p = 0; p < HS_EPH__COUNT; p++)
    sum += r->time_s[p];
  CHECK_REL(sum, r->hours * 3600.0, 1e-12);
  hs_time_t t = 0;
  double tokens = 0;
  for (size_t s = 0; s < r->n_segments; s++) {
    CHECK(r->segments[s].t0 == t);
    CHECK(r->segments[s].t1 > r->segments[s].t0);
    t = r->segments[s].t1;
    if (r->segments[s].phase == HS_EPH_TRAIN)
      tokens += hs_time_to_s(r->segments[s].t1 - r->segments[s].t0) * r->segments[s].tokens_per_s;
  }
  CHECK(t == hs_time_from_s(r->hours * 3600.0));
  CHECK_REL(tokens, r->useful_tokens, 1e-12);
}

/* Training seconds in [0, T) with checkpoints of cost c after every I
 * seconds of training. */
static double train_closed_form(double T, double I, double c, int *n_ckpt, double *ckpt_s)
{
  double cycle = I + c;
  double n = floor(T / cycle), rem = T - n * cycle;
  *n_ckpt = (int)n;
  *ckpt_s = n * c + fmax(0.0, rem - I);
  return n * I + fmin(rem, I);
}

static void test_no_preemption_goodput(void)
{
  const char *strategies[] = {"data-parallel", "hapt"};
  const double cases[][3] = {{1.0, 600, 60}, {1.0, 300, 500}, {2.5, 1000, 190}};
  for (size_t si = 0; si < HS_ARRAY_LEN(strategies); si++) {
    /* independent steady state: the planner and the simulator directly */
    hs_plan_opts_t po;
    hs_plan_opts_init(&po);
    po.global_batch = 48;
    po.device_subsets = false; /* as elastic plans (hs_elastic_cfg_init) */
    hs_plan_t plan;
    hs_report_t rep;
    hs_search_stats_t stats;
    hs_error_t err;
    hs_error_init(&err);
    hs_plan_init(&plan);
    hs_report_init(&rep);
    CHECK(hs_planner_run(hs_planner_find(strategies[si]), &M, &C, &po, NULL, &plan, &stats, &rep,
                         &err) == HS_OK);
    for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
      hs_elastic_cfg_t cfg;
      hs_elastic_cfg_init(&cfg);
      cfg.strategy = strategies[si];
      cfg.plan.global_batch = 48;
      cfg.hours = cases[k][0];
      cfg.checkpoint_interval_s = cases[k][1];
      cfg.checkpoint_cost_s = cases[k][2];
      hs_elastic_trace_t tr;
      hs_elastic_trace_init(&tr);
      hs_elastic_result_t r;
      hs_elastic_result_init(&r);
      CHECK_MSG(hs_elastic_run(&M, &C, &cfg, &tr, NULL, &r, &err) == HS_OK, "%s", err.msg);
      int n_ckpt;
      double ckpt_s;
      double train = train_closed_form(cfg.hours * 3600, cfg.checkpoint_interval_s,
                                       cfg.checkpoint_cost_s, &n_ckpt, &ckpt_s);
      CHECK_REL(r.steady_tokens_per_s, rep.tokens_per_s, 1e-12);
      CHECK_REL(r.goodput_tokens_per_h, rep.tokens_per_s * train / cfg.hours, 1e-9);
      CHECK_REL(r.time_s[HS_EPH_TRAIN], train, 1e-9);
      CHECK_REL(r.time_s[HS_EPH_CKPT], ckpt_s, 1e-9);
      CHECK_EQ_INT(r.n_checkpoints, n_ckpt);
      CHECK(r.time_s[HS_EPH_LOST] == 0 && r.time_s[HS_EPH_RECOVER] == 0 && r.n_recoveries == 0);
      check_tiling(&r);
      /* cost: every GPU up for the whole horizon at its price (spot nodes at
       * the spot rate when known) */
      double usd = 0;
      for (size_t n = 0; n < C.n_nodes; n++) {
        const hs_gpu_t *g = &C.gpus.gpus[C.nodes[n].gpu];
        double price = C.nodes[n].spot && g->price_spot_usd_h > 0 ? g->price_spot_usd_h
                                                                  : g->price_ondemand_usd_h;
        usd += price * C.nodes[n].n_devices * cfg.hours;
      }
      CHECK_REL(r.cost_usd, usd, 1e-9);
      hs_elastic_result_destroy(&r);
    }
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
  }
}

/* data-parallel: every device holds the whole model, so when node 3 goes,
 * every layer survives on DP replicas. */
static void test_dp_survive_trace(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_elastic_trace_t tr;
  hs_elastic_trace_init(&tr);
  CHECK(hs_elastic_trace_load(hs_test_data("elastic/dp_survive.json"), &C, &tr, &err) == HS_OK);
  hs_elastic_cfg_t cfg;
  hs_elastic_cfg_init(&cfg);
  cfg.strategy = "data-parallel";
  cfg.plan.global_batch = 48;
  cfg.hours = 2;
  for (int rk = 0; rk < HS_RECOVERY__COUNT; rk++) {
    cfg.recovery = (hs_recovery_t)rk;
    hs_elastic_result_t r;
    hs_elastic_result_init(&r);
    CHECK_MSG(hs_elastic_run(&M, &C, &cfg, &tr, NULL, &r, &err) == HS_OK, "%s", err.msg);
    double S = model_state_bytes(cfg.state_bytes_per_param);
    CHECK_EQ_INT(r.n_preemptions, 1);
    CHECK_EQ_INT(r.n_replacements, 1);
    CHECK_EQ_INT(r.n_recoveries, 2);
    if (r.n_recoveries != 2) {
      hs_elastic_result_destroy(&r);
      continue;
    }
    const hs_elastic_recovery_t *a = &r.recoveries[0], *b = &r.recoveries[1];
    CHECK_EQ_INT(a->n_devices, 12);
    CHECK_REL(a->lost_s, 1000.0, 1e-12); /* first checkpoint due at 1800 s */
    CHECK_EQ_INT(b->n_devices, 16);
    CHECK(b->lost_s == 0.0);
    if (rk == HS_RECOVERY_LOCAL_FIRST) {
      CHECK(a->bytes_cloud == 0.0);
      CHECK_REL(a->bytes_own, 12 * S, 1e-12);
      CHECK(a->bytes_peer == 0.0);
      CHECK_REL(a->transfer_s, 4 * S / 5e9, 1e-6); /* 4 devices per node share its 5 GB/s read */
      CHECK(b->bytes_cloud == 0.0);
      CHECK_REL(b->bytes_peer, 4 * S, 1e-12);
      CHECK_REL(b->bytes_own, 12 * S, 1e-12);
    } else {
      CHECK_REL(a->bytes_cloud, 12 * S, 1e-12);
      CHECK_REL(a->transfer_s, 4 * S / 1.25e9, 1e-6);
      CHECK_REL(b->bytes_cloud, 16 * S, 1e-12);
    }
    if (rk == HS_RECOVERY_RESTART)
      CHECK_REL(a->overhead_s, cfg.restart_overhead_s +
                                   cfg.warmup_iterations * (48.0 * M.seq_len / a->tokens_per_s),
                1e-9); /* iteration time = tokens per iteration / tokens per second */
    check_tiling(&r);
    hs_elastic_result_destroy(&r);
  }
  hs_elastic_trace_destroy(&tr);
}

/* One 6-hour run on the test cluster at 2 preemptions per spot node-hour;
 * `pl` NULL = a fresh planner (no cache shared with other runs). */
static hs_status_t run_trace(const char *json, hs_recovery_t rec, hs_elastic_result_t *r)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_elastic_trace_t tr;
  hs_elastic_trace_init(&tr);
  hs_status_t st = hs_elastic_trace_parse(json, "t.json", &C, &tr, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_elastic_cfg_t cfg;
  hs_elastic_cfg_init(&cfg);
  cfg.strategy = "data-parallel";
  cfg.plan.global_batch = 48;
  cfg.hours = 1;
  cfg.recovery = rec;
  hs_elastic_result_init(r);
  if (st == HS_OK)
    st = hs_elastic_run(&M, &C, &cfg, &tr, NULL, r, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_elastic_trace_destroy(&tr);
  return st;
}

/* Every node preempted at 600 s, node 0 back at 1200 s: 600 s idle, and
 * the recovery downloads the whole state (no copy survived) for the 4
 * devices of node 0 through its cloud link. */
static void test_all_down_idle(void)
{
  const char *json = "{\"events\": ["
                     "{\"t_s\": 600, \"kind\": \"preempt\", \"node\": 0},"
                     "{\"t_s\": 600, \"kind\": \"preempt\", \"node\": 1},"
                     "{\"t_s\": 600, \"kind\": \"preempt\", \"node\": 2},"
                     "{\"t_s\": 600, \"kind\": \"preempt\", \"node\": 3},"
                     "{\"t_s\": 1200, \"kind\": \"replace\", \"node\": 0}]}";
  hs_elastic_result_t r;
  if (run_trace(json, HS_RECOVERY_LOCAL_FIRST, &r) != HS_OK)
    return;
  double S = model_state_bytes(14.0);
  CHECK_REL(r.time_s[HS_EPH_IDLE], 600.0, 1e-12);
  CHECK_REL(r.time_s[HS_EPH_LOST], 600.0, 1e-12);
  CHECK_EQ_INT(r.n_recoveries, 2);
  if (r.n_recoveries == 2) {
    CHECK_EQ_INT(r.recoveries[0].n_devices, 0);
    CHECK_EQ_INT(r.recoveries[0].n_nodes_down, 4);
    CHECK_EQ_INT(r.recoveries[1].n_nodes_up, 1);
    CHECK_EQ_INT(r.recoveries[1].n_devices, 4);
    CHECK_REL(r.recoveries[1].bytes_cloud, 4 * S, 1e-12);
    CHECK_REL(r.recoveries[1].transfer_s, 4 * S / 1.25e9, 1e-6);
  }
  check_tiling(&r);
  hs_elastic_result_destroy(&r);
}

/* A second preemption 0.5 s into the first re-plan (>= 1 s) interrupts it;
 * the second recovery loses no further work and reads own copies only. */
static void test_interrupted_recovery(void)
{
  const char *json = "{\"events\": ["
                     "{\"t_s\": 1000, \"kind\": \"preempt\", \"node\": 3},"
                     "{\"t_s\": 1000.5, \"kind\": \"preempt\", \"node\": 2}]}";
  hs_elastic_result_t r;
  if (run_trace(json, HS_RECOVERY_LOCAL_FIRST, &r) != HS_OK)
    return;
  double S = model_state_bytes(14.0);
  CHECK_EQ_INT(r.n_recoveries, 2);
  if (r.n_recoveries == 2) {
    CHECK(r.recoveries[0].interrupted);
    CHECK(!r.recoveries[1].interrupted);
    CHECK_REL(r.recoveries[0].lost_s, 1000.0, 1e-12);
    CHECK(r.recoveries[1].lost_s == 0.0);
    CHECK_EQ_INT(r.recoveries[1].n_devices, 8);
    CHECK_REL(r.recoveries[1].bytes_own, 8 * S, 1e-12);
    CHECK(r.recoveries[1].bytes_cloud == 0.0);
    /* 0.5 s of the first re-plan, then the second re-plan and recovery */
    CHECK_REL(r.time_s[HS_EPH_REPLAN], 0.5 + r.recoveries[1].replan_s, 1e-9);
    CHECK_REL(r.time_s[HS_EPH_RECOVER], r.recoveries[1].recovery_s, 1e-9);
  }
  check_tiling(&r);
  hs_elastic_result_destroy(&r);
}

static char *run_json(uint64_t seed, hs_recovery_t rec, hs_elastic_planner_t *pl,
                      hs_elastic_result_t *keep)
{
  hs_error_t err;
  hs_error_init(&err);
  double rates[4];
  CHECK(hs_elastic_node_rates(&C, "spot=2", rates, &err) == HS_OK);
  hs_elastic_trace_t tr;
  hs_elastic_trace_init(&tr);
  CHECK(hs_elastic_trace_sample(&C, rates, 6, 900, seed, &tr, &err) == HS_OK);
  hs_elastic_cfg_t cfg;
  hs_elastic_cfg_init(&cfg);
  cfg.hours = 6;
  cfg.recovery = rec;
  hs_elastic_result_t r;
  hs_elastic_result_init(&r);
  CHECK_MSG(hs_elastic_run(&M, &C, &cfg, &tr, pl, &r, &err) == HS_OK, "%s", err.msg);
  cJSON *j = hs_elastic_result_to_json(&r, &C, false);
  char *s = j ? cJSON_PrintUnformatted(j) : NULL;
  hs_json_free(j);
  if (keep)
    *keep = r;
  else
    hs_elastic_result_destroy(&r);
  hs_elastic_trace_destroy(&tr);
  return s;
}

static void test_same_seed_same_bytes(void)
{
  char *a = run_json(7, HS_RECOVERY_LOCAL_FIRST, NULL, NULL);
  char *b = run_json(7, HS_RECOVERY_LOCAL_FIRST, NULL, NULL);
  char *c = run_json(8, HS_RECOVERY_LOCAL_FIRST, NULL, NULL);
  CHECK(a && b && c);
  if (a && b && c) {
    CHECK(strcmp(a, b) == 0);
    CHECK(strcmp(a, c) != 0);
    CHECK(strstr(a, "\"recoveries\":[{") != NULL); /* something happened */
  }
  free(a);
  free(b);
  free(c);
}

static void test_local_first_never_slower(void)
{
  /* plans depend only on the nodes up: one planner cache for all runs */
  hs_elastic_cfg_t cfg;
  hs_elastic_cfg_init(&cfg);
  hs_elastic_planner_t *pl = NULL;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_elastic_planner_new(&M, &C, &cfg, &pl, &err) == HS_OK);
  for (uint64_t seed = 1; seed <= 6; seed++) {
    hs_elastic_result_t lf, cl, rs;
    free(run_json(seed, HS_RECOVERY_LOCAL_FIRST, pl, &lf));
    free(run_json(seed, HS_RECOVERY_CLOUD, pl, &cl));
    free(run_json(seed, HS_RECOVERY_RESTART, pl, &rs));
    CHECK(lf.n_recoveries > 0);
    CHECK(lf.time_s[HS_EPH_RECOVER] <= cl.time_s[HS_EPH_RECOVER]);
    CHECK(cl.time_s[HS_EPH_RECOVER] <= rs.time_s[HS_EPH_RECOVER]);
    /* recoveries at the same instant into the same number of devices */
    int matched = 0;
    for (size_t i = 0; i < lf.n_recoveries; i++)
      for (size_t k = 0; k < cl.n_recoveries; k++) {
        const hs_elastic_recovery_t *a = &lf.recoveries[i], *b = &cl.recoveries[k];
        if (a->t_ns != b->t_ns || a->n_devices != b->n_devices || a->n_devices == 0)
          continue;
        matched++;
        /* the local plan itself must win here (local links beat the 1.25
         * GB/s cloud), not the all-cloud fallback */
        CHECK(!a->cloud_fallback);
        CHECK_MSG(a->recovery_s <= b->recovery_s, "seed %llu t=%.1f s: local-first %.3f s > cloud %.3f s",
                  (unsigned long long)seed, hs_time_to_s(a->t_ns), a->recovery_s, b->recovery_s);
        CHECK_REL(a->bytes_peer + a->bytes_own + a->bytes_cloud, b->bytes_cloud, 1e-9);
      }
    CHECK(matched > 0);
    check_tiling(&lf);
    check_tiling(&cl);
    check_tiling(&rs);
    hs_elastic_result_destroy(&lf);
    hs_elastic_result_destroy(&cl);
    hs_elastic_result_destroy(&rs);
  }
  hs_elastic_planner_free(pl);
}

/* Poisson: with immediate replacement, node n sees N ~ Poisson(rate x H)
 * preemptions; the sum over 3 nodes at 4/h over 500 h has mean 6000 and
 * standard deviation sqrt(6000) = 77. */
static void test_poisson_counts(void)
{
  hs_error_t err;
  hs_error_init(&err);
  double rates[4];
  CHECK(hs_elastic_node_rates(&C, "spot=4", rates, &err) == HS_OK);
  CHECK(rates[0] == 0 && rates[1] == 4 && rates[3] == 4);
  hs_elastic_trace_t tr;
  hs_elastic_trace_init(&tr);
  CHECK(hs_elastic_trace_sample(&C, rates, 500, 0, 11, &tr, &err) == HS_OK);
  size_t pre = 0, rep = 0;
  for (size_t k = 0; k < tr.n; k++) {
    pre += tr.events[k].kind == HS_ELASTIC_PREEMPT;
    rep += tr.events[k].kind == HS_ELASTIC_REPLACE;
    CHECK(tr.events[k].node != 0);
    if (k)
      CHECK(tr.events[k - 1].t_ns <= tr.events[k].t_ns);
  }
  CHECK_MSG(fabs((double)pre - 6000.0) < 5 * sqrt(6000.0), "%zu preemptions", pre);
  CHECK(rep == pre);
  /* no replacement: at most one preemption per node, P(none) = e^-2000 */
  CHECK(hs_elastic_trace_sample(&C, rates, 500, -1, 11, &tr, &err) == HS_OK);
  CHECK_EQ_INT(tr.n, 3);
  /* GPU-type override wins over the site */
  CHECK(hs_elastic_node_rates(&C, "A100-SXM4-80GB=0.25,spot=3", rates, &err) == HS_OK);
  CHECK(rates[0] == 0.25 && rates[2] == 0.25);
  hs_elastic_trace_destroy(&tr);
}

/* AutoHet-style: three GPU types, spot H800/H20 sites, 100 Gb/s between
 * sites; local-first recovers several times faster than cloud (AutoHet
 * reports 1.49-4.38x). */
static void test_autohet_scenario(void)
{
  hs_model_t m;
  hs_cluster_t c;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_load("gpt3-2.7b", 0, &m, &err) == HS_OK);
  CHECK(hs_cluster_load("autohet-a100-h800-h20", &c, &err) == HS_OK);
  double *rates = hs_calloc(c.n_nodes, sizeof *rates);
  CHECK(hs_elastic_node_rates(&c, NULL, rates, &err) == HS_OK);
  hs_elastic_trace_t tr;
  hs_elastic_trace_init(&tr);
  CHECK(hs_elastic_trace_sample(&c, rates, 24, 1800, 1, &tr, &err) == HS_OK);
  hs_elastic_cfg_t cfg;
  hs_elastic_cfg_init(&cfg);
  hs_elastic_planner_t *pl = NULL;
  CHECK(hs_elastic_planner_new(&m, &c, &cfg, &pl, &err) == HS_OK);
  double mean[HS_RECOVERY__COUNT] = {0};
  for (int k = 0; k < HS_RECOVERY__COUNT; k++) {
    cfg.recovery = (hs_recovery_t)k;
    hs_elastic_result_t r;
    hs_elastic_result_init(&r);
    CHECK_MSG(hs_elastic_run(&m, &c, &cfg, &tr, pl, &r, &err) == HS_OK, "%s", err.msg);
    int n = 0;
    for (size_t i = 0; i < r.n_recoveries; i++)
      if (r.recoveries[i].n_devices > 0) {
        mean[k] += r.recoveries[i].recovery_s;
        n++;
      }
    CHECK(n >= 5);
    mean[k] /= n ? n : 1;
    hs_elastic_result_destroy(&r);
  }
  double ratio = mean[HS_RECOVERY_CLOUD] / mean[HS_RECOVERY_LOCAL_FIRST];
  fprintf(stderr, "autohet scenario: local-first %.2f s, cloud %.2f s, restart %.2f s: %.2fx\n",
          mean[HS_RECOVERY_LOCAL_FIRST], mean[HS_RECOVERY_CLOUD], mean[HS_RECOVERY_RESTART], ratio);
  CHECK_MSG(ratio >= 2.0, "local-first only %.2fx faster than cloud", ratio);
  hs_elastic_planner_free(pl);
  hs_elastic_trace_destroy(&tr);
  free(rates);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_init(&M);
  hs_cluster_init(&C);
  if (hs_model_load("gpt3-1.3b", 0, &M, &err) != HS_OK ||
      hs_cluster_load(hs_test_data("elastic/spot4x4.json"), &C, &err) != HS_OK) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return 1;
  }
  HS_RUN(test_no_preemption_goodput);
  HS_RUN(test_dp_survive_trace);
  HS_RUN(test_all_down_idle);
  HS_RUN(test_interrupted_recovery);
  HS_RUN(test_same_seed_same_bytes);
  HS_RUN(test_local_first_never_slower);
  HS_RUN(test_poisson_counts);
  HS_RUN(test_autohet_scenario);
  hs_cluster_destroy(&C);
  hs_model_destroy(&M);
  HS_TEST_END();
}
