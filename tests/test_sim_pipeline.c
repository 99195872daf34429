/*
 * test_sim_pipeline.c - the simulator against closed forms.
 *
 *  - 1F1B and GPipe on a homogeneous p-stage pipeline with free communication:
 *    iteration = (m + p - 1)(t_f + t_b) to the nanosecond;
 *  - interleaved 1F1B with v chunks: bubble (p - 1)(t_f + t_b) / v;
 *  - data parallelism: iteration = compute + ring all-reduce
 *    2(n-1)(a + S/(nB)) + optimizer step, through the whole simulator;
 *  - a slow pipeline link: blocking 1F1B pays the transfer on every
 *    microbatch, hetero-1f1b with early sends and a deeper warm-up hides it;
 *  - bubble fraction (p-1)/(m+p-1).
 */
#include "hs_json.h"
#include "sim_fixture.h"

static double simulate_grid(const hs_model_t *m, const hs_cluster_t *c, int tp, int pp, int dp,
                            int mbs, int gb, const char *sched, int chunks, hs_report_t *rep)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.pp = pp;
  g.dp = dp;
  g.microbatch_size = mbs;
  g.global_batch = gb;
  g.schedule = sched;
  g.chunks = chunks;
  hs_plan_t plan;
  hs_status_t st = hs_plan_grid(m, c, &g, &plan, &err);
  CHECK_MSG(st == HS_OK, "grid: %s", err.msg);
  if (st != HS_OK)
    return -1;
  st = hs_simulate(m, c, &plan, NULL, rep, &err);
  CHECK_MSG(st == HS_OK, "simulate: %s", err.msg);
  hs_plan_destroy(&plan);
  return st == HS_OK ? rep->iteration_time_s : -1;
}

static void test_1f1b_and_gpipe_closed_form(void)
{
  static const int cases[][3] = {{2, 4, 3}, {4, 8, 2}, {4, 1, 1}, {8, 16, 1}, {3, 7, 2}};
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    int p = cases[k][0], m_mb = cases[k][1], ops = cases[k][2];
    hs_model_t m;
    fx_chain_model(&m, p, ops, 1e9, 0.0, 0.0, 0.0);
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(fx_cluster(&c, 1, p, 100, 0, 10, 0, &err) == HS_OK);
    /* t_f = ops ms, t_b = 2 ops ms per stage */
    double tf = ops * 1e-3, tb = 2 * ops * 1e-3;
    double expect = (m_mb + p - 1) * (tf + tb);
    const char *scheds[] = {"1f1b", "gpipe", "hetero-1f1b"};
    for (int s = 0; s < 3; s++) {
      hs_report_t rep;
      double t = simulate_grid(&m, &c, 1, p, 1, 1, m_mb, scheds[s], 1, &rep);
      CHECK_MSG(llround(t * 1e9) == llround(expect * 1e9), "%s p=%d m=%d: %.9f vs %.9f", scheds[s], p,
                m_mb, t, expect);
      CHECK_REL(rep.bubble_fraction, (double)(p - 1) / (m_mb + p - 1), 1e-9);
      hs_report_destroy(&rep);
    }
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
}

static void test_interleaved_bubble(void)
{
  static const int cases[][3] = {{2, 4, 2}, {4, 8, 2}, {4, 8, 4}, {2, 6, 3}};
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    int p = cases[k][0], m_mb = cases[k][1], v = cases[k][2];
    hs_model_t m;
    fx_chain_model(&m, p * v, 1, 1e9, 0.0, 0.0, 0.0);
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(fx_cluster(&c, 1, p, 100, 0, 10, 0, &err) == HS_OK);
    /* per rank: v chunks of 1 op each: t_f = v ms, t_b = 2v ms */
    double tf = v * 1e-3, tb = 2 * v * 1e-3;
    double expect = m_mb * (tf + tb) + (p - 1) * (tf + tb) / v;
    hs_report_t rep;
    double t = simulate_grid(&m, &c, 1, p, 1, 1, m_mb, "interleaved-1f1b", v, &rep);
    CHECK_MSG(llround(t * 1e9) == llround(expect * 1e9), "p=%d m=%d v=%d: %.9f vs %.9f", p, m_mb, v, t,
              expect);
    hs_report_destroy(&rep);
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
}

/* DP over n GPUs of one node: the gradient ring all-reduce after the last
 * backward, then the optimizer step. */
static void test_dp_ring_allreduce(void)
{
  const int ns[] = {2, 4, 8};
  for (size_t k = 0; k < HS_ARRAY_LEN(ns); k++) {
    int n = ns[k];
    double params = 25e6;              /* per op; 2 ops: 50M params, 100 MB of bf16 grads */
    double B = 100.0, lat_us = 2.0;     /* node-internal GPU-to-GPU: 100 GB/s, 2 us */
    hs_model_t m;
    fx_chain_model(&m, 1, 2, 1e9, params, 0.0, 0.0);
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(fx_cluster(&c, 1, n, B, lat_us, 10, 0, &err) == HS_OK);
    hs_plan_t plan;
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.dp = n;
    g.global_batch = n * 3;
    CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
    plan.bucket_bytes = 1e12; /* one bucket: starts after the last backward */
    hs_report_t rep;
    CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
    double S = 2 * params * 2.0;
    double a = lat_us * 1e-6;
    double ring = 2.0 * (n - 1) * (a + S / (n * B * 1e9));
    double compute = 3 * (2e-3 + 4e-3);
    double opt = 2 * params * 32.0 / 1000e9;
    double expect = compute + ring + opt;
    CHECK_REL(rep.iteration_time_s, expect, 1e-6);
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
    hs_cluster_destroy(&c);
    hs_model_destroy(&m);
  }
}

/* Naive oracle for hetero-1f1b liveness: interpret every rank's order list
 * with token passing (F_j on rank r needs F_j on r-1; B_j needs F_j on r and
 * B_j on r+1) and report whether all ranks finish. */
static bool naive_pipeline_completes(int p, int m, const int *warmup)
{
  hs_sched_item_t order[8][16];
  int pos[8] = {0}, fdone[8][16] = {{0}}, bdone[8][16] = {{0}};
  const hs_schedule_t *sc = hs_schedule_find("hetero-1f1b");
  for (int r = 0; r < p; r++) {
    hs_sched_params_t sp = {.p = p, .v = 1, .m = m, .rank = r, .warmup = warmup[r]};
    sc->order(&sp, order[r]);
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; r++) {
      if (pos[r] == 2 * m)
        continue;
      hs_sched_item_t it = order[r][pos[r]];
      bool ready = it.phase == HS_PHASE_FWD ? (r == 0 || fdone[r - 1][it.mb])
                                            : (fdone[r][it.mb] && (r == p - 1 || bdone[r + 1][it.mb]));
      if (ready) {
        (it.phase == HS_PHASE_FWD ? fdone : bdone)[r][it.mb] = 1;
        pos[r]++;
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; r++)
    if (pos[r] != 2 * m)
      return false;
  return true;
}

/* Plan validation accepts exactly the hetero-1f1b warm-ups that the naive
 * interpreter completes, and the simulator runs every accepted one. */
static void test_hetero_warmup_liveness(void)
{
  hs_model_t m;
  fx_chain_model(&m, 3, 2, 1e9, 0.0, 1e6, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 3, 100, 1, 25, 10, &err) == HS_OK);
  int accepted = 0, rejected = 0;
  for (int mb = 2; mb <= 4; mb += 2) {
    hs_plan_t plan;
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.pp = 3;
    g.global_batch = mb;
    g.schedule = "hetero-1f1b";
    CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
    for (int code = 0; code < 6 * 6 * 6; code++) {
      int w[3] = {code % 6 - 1, code / 6 % 6 - 1, code / 36 - 1};
      for (int r = 0; r < 3; r++)
        plan.pipelines[0].stages[r].warmup = w[r];
      int weff[3];
      for (int r = 0; r < 3; r++)
        weff[r] = w[r] >= 0 ? w[r] : 3 - r - 1;
      bool live = naive_pipeline_completes(3, mb, weff);
      hs_error_t e2;
      hs_error_init(&e2);
      bool ok = hs_plan_validate(&plan, &m, &c, NULL, &e2) == HS_OK;
      CHECK_MSG(ok == live, "mb=%d warmups %d %d %d: validate %d, naive %d (%s)", mb, w[0], w[1],
                w[2], ok, live, e2.msg);
      if (ok) {
        hs_report_t r;
        CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &r, &e2) == HS_OK, "%s", e2.msg);
        hs_report_destroy(&r);
        accepted++;
      } else {
        rejected++;
      }
    }
    hs_plan_destroy(&plan);
  }
  CHECK(accepted > 0 && rejected > 0);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* Two stages on two nodes joined by a slow NIC. Blocking 1F1B waits for
 * every activation/gradient transfer; hetero-1f1b posts sends early and the
 * first stage runs deeper warm-up, hiding the transfers behind compute. */
static void test_hetero_1f1b_hides_slow_link(void)
{
  hs_model_t m;
  /* 2 stages x 4 ops of 1 ms fwd; activation 50 MB per sample */
  fx_chain_model(&m, 2, 4, 1e9, 0.0, 50e6, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  /* NIC 25 GB/s: 50 MB takes 2 ms, comparable to a 4 ms forward */
  CHECK(fx_cluster(&c, 2, 1, 100, 1, 25, 10, &err) == HS_OK);
  hs_report_t r1, r2;
  double t_1f1b = simulate_grid(&m, &c, 1, 2, 1, 1, 16, "1f1b", 1, &r1);
  hs_plan_t plan;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = 2;
  g.global_batch = 16;
  g.schedule = "hetero-1f1b";
  CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
  plan.pipelines[0].stages[0].warmup = 2;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &r2, &err) == HS_OK, "%s", err.msg);
  double t_het = r2.iteration_time_s;
  /* lower bound: the slower path is compute of 16 microbatches on one stage
   * plus the pipeline fill and drain */
  double tf = 4e-3, tb = 8e-3, xfer = 50e6 / 25e9;
  CHECK_MSG(t_het < t_1f1b * 0.9, "hetero %.6f vs 1f1b %.6f", t_het, t_1f1b);
  CHECK(t_het >= 16 * (tf + tb) + (tf + tb));
  /* blocking 1F1B pays each transfer: at least m transfers on the critical path */
  CHECK(t_1f1b >= 16 * (tf + tb) + 16 * xfer);
  hs_report_destroy(&r1);
  hs_report_destroy(&r2);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_determinism(void)
{
  hs_model_t m;
  fx_chain_model(&m, 4, 3, 7.3e8, 1.1e7, 3.3e6, 1e6);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 2, 4, 150, 1.5, 12.5, 5, &err) == HS_OK);
  char *out[2] = {NULL, NULL};
  char *traces[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.tp = 2;
    g.pp = 2;
    g.dp = 2;
    g.global_batch = 16;
    hs_plan_t plan;
    CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
    hs_sim_opts_t so;
    hs_sim_opts_init(&so);
    char path[64];
    snprintf(path, sizeof path, "det_trace_%d.json", k);
    so.trace_path = path;
    hs_report_t rep;
    CHECK_MSG(hs_simulate(&m, &c, &plan, &so, &rep, &err) == HS_OK, "%s", err.msg);
    struct cJSON *j = hs_report_to_json(&rep);
    char p2[64];
    snprintf(p2, sizeof p2, "det_report_%d.json", k);
    CHECK(hs_json_write_file(j, p2, &err) == HS_OK);
    hs_json_free(j);
    CHECK(hs_file_read(p2, 1 << 26, &out[k], NULL, &err) == HS_OK);
    CHECK(hs_file_read(path, 1 << 28, &traces[k], NULL, &err) == HS_OK);
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
  }
  CHECK(out[0] && out[1] && strcmp(out[0], out[1]) == 0);
  CHECK(traces[0] && traces[1] && strcmp(traces[0], traces[1]) == 0);
  CHECK(traces[0] && strstr(traces[0], "\"traceEvents\""));
  for (int k = 0; k < 2; k++) {
    free(out[k]);
    free(traces[k]);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* Stage 0: one TP-2 replica; stage 1: two TP-1 replicas taking 25% and 75%
 * of each microbatch. Replica a sends each stage-1 replica exactly the samples
 * it serves; gradients come back the same way. Bytes per link, by hand. */
static double link_bytes(const hs_report_t *r, const char *label)
{
  for (int32_t k = 0; k < r->n_links; k++)
    if (strcmp(r->links[k].label, label) == 0)
      return r->links[k].bytes;
  return 0.0;
}

static void test_p2p_between_unequal_stages(void)
{
  hs_model_t m;
  double X = 4e6; /* activation bytes per sample */
  fx_chain_model(&m, 2, 1, 1e9, 0.0, X, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 4, 100, 1, 10, 0, &err) == HS_OK);
  const char *json =
      "{\"pipelines\": [{\"microbatch_size\": 4, \"microbatches\": 6, \"stages\": ["
      " {\"ops\": [0, 1], \"replicas\": [{\"devices\": [0, 1]}]},"
      " {\"ops\": [1, 2], \"replicas\": [{\"devices\": [2], \"share\": 0.25},"
      "                                  {\"devices\": [3], \"share\": 0.75}]}]}]}";
  hs_plan_t plan;
  CHECK_MSG(hs_plan_parse(json, "plan.json", &plan, &err) == HS_OK, "%s", err.msg);
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double per_mb = 4 * X, mbs = 6;
  CHECK_REL(link_bytes(&rep, "d0.up"), per_mb * mbs, 1e-9);   /* activations out */
  CHECK_REL(link_bytes(&rep, "d0.down"), per_mb * mbs, 1e-9); /* gradients back */
  CHECK_REL(link_bytes(&rep, "d2.down"), 0.25 * per_mb * mbs, 1e-9);
  CHECK_REL(link_bytes(&rep, "d3.down"), 0.75 * per_mb * mbs, 1e-9);
  CHECK_REL(link_bytes(&rep, "d3.up"), 0.75 * per_mb * mbs, 1e-9);
  CHECK(link_bytes(&rep, "d1.up") == 0.0);
  /* stage 1's replica with 75% of the samples is the bottleneck: 0.75*4 = 3
   * samples x 1 ms fwd, 6 ms fwd+bwd per microbatch */
  CHECK(rep.iteration_time_s >= 6 * 9e-3);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_p2p_between_unequal_stages);
  HS_RUN(test_1f1b_and_gpipe_closed_form);
  HS_RUN(test_interleaved_bubble);
  HS_RUN(test_dp_ring_allreduce);
  HS_RUN(test_hetero_1f1b_hides_slow_link);
  HS_RUN(test_hetero_warmup_liveness);
  HS_RUN(test_determinism);
  HS_TEST_END();
}
