/*
 * test_search_cpep.c - the baselines' search over context parallelism (CP,
 * ring attention) and expert parallelism (EP, MoE), checked against brute
 * force: every point of the same space is built here from the Megatron-LM
 * and DeepSpeed rules written out again, simulated with hs_simulate and
 * held to the memory headroom, independently of the planners' estimator.
 *
 *  1. megatron on a long-sequence model (8192 tokens, where Megatron-Core
 *     recommends CP): its plan uses CP exactly when the brute force's
 *     fastest point does, and is within 2% of that point's time;
 *  2. megatron on a small MoE model: its plan uses EP exactly when the
 *     brute force's fastest point does, within 2%;
 *  3. deepspeed on the same MoE model: the expert-parallel degree of its
 *     plan is the brute force's (its space is small: ZeRO 1-3 x microbatch
 *     x recompute x E), within 2%;
 *  4. a short-sequence dense model: megatron's space has no CP or EP point,
 *     so its plan carries neither.
 * Every emitted plan validates and its simulated peak fits 0.9 of each
 * GPU's memory (the default headroom).
 */
#include "search_fixture.h"

#include <math.h>
#include <string.h>

#define HEADROOM 0.1

/* One node of 4 A100-40GB with the given NVLink bandwidth and memory. */
static void one_node(hs_cluster_t *c, double intra_GBps, double mem_gib)
{
  char json[1024];
  snprintf(json, sizeof json,
           "{\"name\": \"one-node\", \"gpus\": [{\"name\": \"A100-SXM4-40GB\", \"memory_GiB\": %g}],"
           " \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-40GB\","
           " \"gpus_per_node\": 4, \"intra_node\": {\"GBps\": %g, \"latency_us\": 1},"
           " \"nic\": {\"GBps\": 25, \"latency_us\": 5}}]}]}",
           mem_gib, intra_GBps);
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(c);
  CHECK_MSG(hs_cluster_parse(json, "one-node.json", c, &err) == HS_OK, "%s", err.msg);
}

/* Simulated time of one point, or -1 when it cannot be built, is rejected
 * or does not fit (1 - HEADROOM) of memory. */
static double sim_point(const hs_model_t *m, const hs_cluster_t *c, const hs_grid_opts_t *g,
                        int32_t first, int32_t last, const hs_practice_t *pr)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_plan_t p;
  if (hs_plan_grid(m, c, g, &p, &err) != HS_OK)
    return -1.0;
  p.precision = HS_DTYPE_BF16;
  hs_plan_set_practice(&p, pr);
  if (first > 0)
    cut_first_last(&p, m, g->pp, first, last);
  double t = -1.0;
  hs_report_t r;
  if (hs_plan_validate(&p, m, c, NULL, &err) == HS_OK && hs_simulate(m, c, &p, NULL, &r, &err) == HS_OK) {
    t = fit_time_s(&r, c, HEADROOM);
    hs_report_destroy(&r);
  }
  hs_plan_destroy(&p);
  return t;
}

/* Best simulated times over megatron's space on 4 GPUs (tp x pp x C x dp,
 * microbatch 1..max_mb, recompute none/selective/full, SP off/on for tp >
 * 1, ZeRO 0/1, even / interleaved / uneven first-last with at most 4
 * blocks fewer, CP in cps, EP in eps): *best_x over points with CP > 1
 * (or EP > 1 when x_is_ep), *best_1 over the others. */
static void megatron_brute(const hs_model_t *m, const hs_cluster_t *c, int64_t gb, int32_t max_mb,
                           const hs_practice_t *base, const int32_t *xs, int n_x, bool x_is_ep,
                           double *best_1, double *best_x, int *points)
{
  const int32_t n = (int32_t)c->n_devices, blocks = (int32_t)hs_model_layers(m);
  static const hs_recompute_t rcs[] = {HS_RECOMPUTE_NONE, HS_RECOMPUTE_SELECTIVE, HS_RECOMPUTE_FULL};
  *best_1 = *best_x = -1.0;
  *points = 0;
  for (int xi = 0; xi < n_x; xi++) {
    int32_t C = x_is_ep ? 1 : xs[xi], E = x_is_ep ? xs[xi] : 1;
    double *best = xs[xi] > 1 ? best_x : best_1;
    for (int32_t tp = 1; tp <= n; tp *= 2) {
      if (!hs_model_tp_ok(m, tp))
        continue;
      for (int32_t pp = 1; pp <= n / tp && pp <= blocks; pp++) {
        if ((n / tp) % pp || (n / tp / pp) % C)
          continue;
        int32_t dp = n / tp / pp / C;
        if (dp % E)
          continue;
        for (int32_t b = 1; b <= max_mb; b *= 2) {
          if (gb % ((int64_t)dp * b))
            continue;
          int64_t n_mb = gb / ((int64_t)dp * b);
          for (int r = 0; r < 3; r++)
            for (int sp = 0; sp <= (tp > 1); sp++)
              for (int32_t z = 0; z <= 1; z++) {
                hs_practice_t pr = *base;
                pr.sequence_parallel = sp;
                pr.zero_stage = z;
                pr.context_parallel = C;
                pr.expert_parallel = E;
                hs_grid_opts_t g;
                hs_grid_opts_init(&g);
                g.tp = tp, g.pp = pp, g.dp = dp, g.microbatch_size = b, g.global_batch = gb;
                g.recompute = rcs[r];
                g.practice.context_parallel = C;
                for (int32_t v = 1; v <= blocks / pp; v++) {
                  if (v > 1 && (pp < 2 || blocks % (pp * v) || n_mb % pp))
                    continue;
                  g.schedule = v > 1 ? "interleaved-1f1b" : NULL;
                  g.chunks = v;
                  double t = sim_point(m, c, &g, 0, 0, &pr);
                  (*points)++;
                  if (t > 0 && (*best < 0 || t < *best))
                    *best = t;
                }
                g.schedule = NULL;
                g.chunks = 1;
                for (int32_t f = 1; pp >= 2 && f <= blocks; f++)
                  for (int32_t l = 1; l <= blocks; l++) {
                    if (!uneven_cut_ok(pp, blocks, f, l))
                      continue;
                    double t = sim_point(m, c, &g, f, l, &pr);
                    (*points)++;
                    if (t > 0 && (*best < 0 || t < *best))
                      *best = t;
                  }
              }
        }
      }
    }
  }
}

/* Runs strategy `name`, checks that its plan validates and fits the
 * headroom; returns the simulated time (-1 on failure) and the plan's CP
 * and EP degrees. */
static double plan_with(const char *name, const hs_model_t *m, const hs_cluster_t *c,
                        const hs_plan_opts_t *o, int32_t *cp, int32_t *ep, char *summary, size_t n)
{
  hs_error_t err;
  hs_plan_t plan;
  hs_search_stats_t stats;
  hs_report_t rep;
  double t = -1.0;
  hs_status_t st = run(name, m, c, o, &plan, &stats, &rep, &err);
  CHECK_MSG(st == HS_OK, "%s: %s", name, err.msg);
  if (st != HS_OK)
    return t;
  hs_error_t e2;
  hs_error_init(&e2);
  CHECK_MSG(hs_plan_validate(&plan, m, c, NULL, &e2) == HS_OK, "%s: plan invalid: %s", name, e2.msg);
  CHECK_MSG(!rep.oom, "%s: plan out of memory", name);
  for (int32_t d = 0; d < rep.n_device_mem; d++)
    CHECK_MSG(rep.device_peak_memory_bytes[d] <= (1.0 - HEADROOM) * hs_cluster_gpu(c, d)->mem_bytes,
              "%s: device %d peak %.4g B above the headroom", name, d, rep.device_peak_memory_bytes[d]);
  *cp = plan.practice.context_parallel;
  *ep = plan.practice.expert_parallel;
  snprintf(summary, n, "%s", rep.plan_summary);
  t = rep.iteration_time_s;
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
  return t;
}

/* megatron's plan for `o` on `c` against megatron_brute over the degrees
 * xs (CP, or EP when x_is_ep) with microbatches of one: the plan uses CP
 * (EP) exactly when the brute force's fastest point does, and is within 2%
 * of that point's time, never below it. `label` names the case in the
 * messages. Returns whether the brute force's fastest point uses CP (EP). */
static bool megatron_vs_brute(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_opts_t *o,
                              const int32_t *xs, int n_x, bool x_is_ep, const char *label)
{
  const char *x = x_is_ep ? "EP" : "CP";
  double b1, bx;
  int points;
  megatron_brute(m, c, o->global_batch, 1, &o->practice, xs, n_x, x_is_ep, &b1, &bx, &points);
  CHECK_MSG(b1 > 0 || bx > 0, "%s: brute force found nothing in %d points", label, points);
  int32_t cp = 0, ep = 0;
  char sum[256];
  double t = plan_with("megatron", m, c, o, &cp, &ep, sum, sizeof sum);
  double best = (b1 > 0 && (bx < 0 || b1 <= bx)) ? b1 : bx;
  bool brute_x = bx > 0 && (b1 < 0 || bx < b1);
  int32_t plan_x = x_is_ep ? ep : cp;
  fprintf(stderr, "  %s %s: brute force %d points, best without %s %.6g s, with %s %.6g s; "
                  "megatron %.6g s (%s)\n", x_is_ep ? "ep" : "cp", label, points, x, b1, x, bx, t, sum);
  CHECK_MSG((plan_x > 1) == brute_x, "%s: megatron's plan has %s %d, the brute force's best %s %s", label,
            x, plan_x, brute_x ? "uses" : "does not use", x);
  CHECK_MSG(t >= best * (1 - 1e-12), "%s: megatron %.6g s below the brute force %.6g s", label, t, best);
  CHECK_MSG(t <= best * 1.02, "%s: megatron %.6g s, brute force %.6g s", label, t, best);
  return brute_x;
}

/* 1. CP iff the brute force says CP is faster. Two clusters: NVLink and a
 * global batch of 2 (few data-parallel ranks to use), and a slow 8 GB/s
 * link with a batch of 8 (the ring's KV exchange costs more). */
static void test_megatron_cp_brute_force(void)
{
  hs_model_t m;
  small_moe(&m, 4, 256, 8192, 0);
  const struct { double GBps; int64_t gb; } cases[] = {{300.0, 2}, {8.0, 8}};
  int cp_cases = 0;
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_cluster_t c;
    one_node(&c, cases[k].GBps, 40.0);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = cases[k].gb;
    o.max_microbatch_size = 1;
    o.device_subsets = false; /* the brute force covers all 4 GPUs */
    CHECK(hs_kernels_preset("megatron-core-2024", &o.practice.kernels) == HS_OK);
    /* megatron's CP degrees at 8192 tokens: each rank keeps >= 4096 */
    const int32_t cps[] = {1, 2};
    char label[32];
    snprintf(label, sizeof label, "case %zu", k);
    cp_cases += megatron_vs_brute(&m, &c, &o, cps, 2, false, label);
    hs_cluster_destroy(&c);
  }
  /* the cases are chosen so that both answers occur; if the simulator's
   * costs move and they stop doing so, the test says so */
  CHECK_MSG(cp_cases == 1, "expected CP to win in exactly one case, it won in %d", cp_cases);
  hs_model_destroy(&m);
}

/* 2. EP iff the brute force says EP is faster (a small MoE model: 8
 * experts of 4096 x 1024), over NVLink and over a slow 1 GB/s link. */
static void test_megatron_ep_brute_force(void)
{
  hs_model_t m;
  small_moe(&m, 4, 1024, 512, 8);
  const double link_GBps[] = {300.0, 1.0};
  int ep_cases = 0;
  for (size_t k = 0; k < HS_ARRAY_LEN(link_GBps); k++) {
    hs_cluster_t c;
    one_node(&c, link_GBps[k], 40.0);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = 8;
    o.max_microbatch_size = 1;
    o.device_subsets = false;
    const int32_t eps[] = {1, 2, 4};
    char label[32];
    snprintf(label, sizeof label, "%g GB/s", link_GBps[k]);
    ep_cases += megatron_vs_brute(&m, &c, &o, eps, 3, true, label);
    hs_cluster_destroy(&c);
  }
  CHECK_MSG(ep_cases == 1, "expected EP to win in exactly one case, it won in %d", ep_cases);
  hs_model_destroy(&m);
}

/* 3. deepspeed's EP degree is the brute force's over its space. */
static void test_deepspeed_ep_brute_force(void)
{
  hs_model_t m;
  small_moe(&m, 4, 1024, 512, 8);
  const double link_GBps[] = {300.0, 1.0};
  for (size_t k = 0; k < HS_ARRAY_LEN(link_GBps); k++) {
    hs_cluster_t c;
    one_node(&c, link_GBps[k], 40.0);
    const int64_t gb = 8;
    const int32_t n = 4;
    double best = -1.0;
    int32_t best_e = 0;
    for (int32_t E = 1; E <= 4; E *= 2)
      for (int32_t z = 1; z <= 3; z++) {
        if (E > 1 && z == 3)
          continue;
        for (int32_t b = 1; b <= 2; b *= 2)
          for (int r = 0; r < 2; r++) {
            if (gb % (n * b))
              continue;
            hs_grid_opts_t g;
            hs_grid_opts_init(&g);
            g.tp = 1, g.pp = 1, g.dp = n, g.microbatch_size = b, g.global_batch = gb;
            g.recompute = r ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE;
            hs_practice_t pr;
            hs_practice_init(&pr);
            pr.zero_stage = z;
            pr.expert_parallel = E;
            double t = sim_point(&m, &c, &g, 0, 0, &pr);
            if (t > 0 && (best < 0 || t < best)) {
              best = t;
              best_e = E;
            }
          }
      }
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = gb;
    o.max_microbatch_size = 2;
    o.device_subsets = false;
    int32_t cp = 0, ep = 0;
    char sum[256];
    double t = plan_with("deepspeed", &m, &c, &o, &cp, &ep, sum, sizeof sum);
    fprintf(stderr, "  deepspeed %g GB/s: brute force best %.6g s with EP %d; deepspeed %.6g s (%s)\n",
            link_GBps[k], best, best_e, t, sum);
    CHECK_MSG(best > 0, "%g GB/s: brute force found nothing", link_GBps[k]);
    CHECK_MSG(ep == best_e, "%g GB/s: deepspeed's EP %d, the brute force's %d", link_GBps[k], ep, best_e);
    CHECK_MSG(t >= best * (1 - 1e-12) && t <= best * 1.02, "%g GB/s: deepspeed %.6g s, brute force %.6g s",
              link_GBps[k], t, best);
    hs_cluster_destroy(&c);
  }
  hs_model_destroy(&m);
}

/* 4. Short sequence, dense model: no CP or EP in megatron's plan. */
static void test_short_dense_unchanged(void)
{
  hs_model_t m;
  small_moe(&m, 4, 256, 2048, 0);
  hs_cluster_t c;
  one_node(&c, 300.0, 40.0);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 2;
  o.max_microbatch_size = 1;
  int32_t cp = 0, ep = 0;
  char sum[256];
  plan_with("megatron", &m, &c, &o, &cp, &ep, sum, sizeof sum);
  CHECK_MSG(cp == 1 && ep == 1, "seq 2048, dense: CP %d EP %d (%s)", cp, ep, sum);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  test_megatron_cp_brute_force();
  test_megatron_ep_brute_force();
  test_deepspeed_ep_brute_force();
  test_short_dense_unchanged();
  HS_TEST_END();
}
