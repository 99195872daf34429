/*
 * test_search_hap_spmd.c - hap's block-level SPMD programs (search/hap_spmd.c,
 * docs/hap.md) against a brute force over the same program family on small
 * heterogeneous instances (issue 34, item 2).
 *
 * Truth: every pp-1 grid over all devices of a two-site A100 + V100
 * cluster - TP t in {1, 2, 4} inside a node, ZeRO 0 / 1, sequence
 * parallelism off / on, every number T of samples per microbatch over all
 * ranks that divides the batch, and every split of T that gives each A100
 * rank a samples and each V100 rank b (a, b >= 1; not the FLOP/s-
 * proportional rounding hap uses, so the split rule is checked too) - is
 * simulated, and the fastest that fits memory (10% headroom) is the
 * oracle. hap (through the registry, device subsets included) must be
 * within 2% of it or better. The instances are memory-bound (a replica of
 * the model does not fit a V100 without sharding), so the oracle's best is
 * a sharded program over both GPU types, which op-level hap never emitted.
 */
#include "search_fixture.h"

#include <math.h>
#include <string.h>

#define TOL 0.02

typedef struct scase {
  int gpn;
  double GBps, lat;
  int layers, hidden, seq;
  int64_t gb;
} scase_t;

static const scase_t cases[] = {
    {2, 100, 5, 6, 4096, 1024, 16},
    {4, 25, 20, 4, 5120, 2048, 16},
};

/* Simulated time of the grid (tp, dp = n / tp, T samples per microbatch,
 * a per A100 rank, b per V100 rank) with practice pr; -1 when it cannot be
 * built or does not fit. */
static double grid_s(const hs_model_t *m, const hs_cluster_t *c, int32_t tp, int64_t gb, int64_t T,
                     int32_t a, int32_t b, const hs_practice_t *pr)
{
  int32_t n = (int32_t)c->n_devices, dp = n / tp;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.pp = 1;
  g.dp = dp;
  g.microbatch_size = 1;
  g.global_batch = (int64_t)dp * (gb / T);
  hs_plan_t p;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  if (hs_plan_grid(m, c, &g, &p, &err) != HS_OK)
    return -1.0;
  hs_plan_set_practice(&p, pr);
  for (int32_t i = 0; i < dp; i++) {
    int32_t d0 = p.pipelines[i].stages[0].replicas[0].devices[0];
    bool fast = strstr(hs_cluster_gpu(c, d0)->name, "A100") != NULL;
    p.pipelines[i].microbatch_size = fast ? a : b;
  }
  hs_report_t rep;
  hs_report_init(&rep);
  double t = -1.0;
  if (hs_simulate(m, c, &p, NULL, &rep, &err) == HS_OK)
    t = fit_time_s(&rep, c, 0.1);
  hs_report_destroy(&rep);
  hs_plan_destroy(&p);
  return t;
}

/* The oracle: the fastest fitting grid of the family in the file comment. */
static double oracle_s(const hs_model_t *m, const hs_cluster_t *c, int gpn, int64_t gb, char *what,
                       size_t what_n)
{
  double best = INFINITY;
  int32_t n = (int32_t)c->n_devices;
  for (int32_t tp = 1; tp <= gpn; tp *= 2) {
    int32_t half = n / tp / 2; /* data-parallel ranks per GPU type */
    for (int z = 0; z <= 1; z++)
      for (int sp = 0; sp <= (tp > 1); sp++)
        for (int64_t T = 2 * half; T <= gb; T++) {
          if (gb % T || T % half)
            continue;
          for (int32_t a = 1; a < T / half; a++) {
            int32_t b = (int32_t)(T / half) - a;
            hs_practice_t pr;
            hs_practice_init(&pr);
            pr.zero_stage = z;
            pr.sequence_parallel = sp;
            double t = grid_s(m, c, tp, gb, T, a, b, &pr);
            if (t > 0.0 && t < best) {
              best = t;
              snprintf(what, what_n, "tp%d dp%d T%lld A100 %d V100 %d zero%d%s", tp, n / tp,
                       (long long)T, a, b, z, sp ? " sp" : "");
            }
          }
        }
  }
  return best;
}

static void test_hap_block_programs_match_brute_force(void)
{
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_t c;
    CHECK(two_site_cluster(&c, cases[k].gpn, cases[k].GBps, cases[k].lat, &err) == HS_OK);
    hs_model_t m;
    small_gpt(&m, cases[k].layers, cases[k].hidden, cases[k].seq);
    char what[128] = "-";
    double truth = oracle_s(&m, &c, cases[k].gpn, cases[k].gb, what, sizeof what);
    CHECK_MSG(isfinite(truth), "case %zu: the brute force found no fitting program", k);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = cases[k].gb;
    hs_plan_t p;
    hs_search_stats_t s;
    hs_report_t r;
    hs_status_t st = run("hap", &m, &c, &o, &p, &s, &r, &err);
    CHECK_MSG(st == HS_OK, "case %zu: hap: %s", k, err.msg);
    if (st == HS_OK) {
      fprintf(stderr, "  case %zu: hap %.6f s vs brute force %.6f s (%+.2f%%)  %s | %s\n", k,
              r.iteration_time_s, truth, 100.0 * (r.iteration_time_s / truth - 1.0),
              r.plan_summary, what);
      CHECK_MSG(r.iteration_time_s <= truth * (1.0 + TOL), "case %zu: hap %.6f s vs %.6f s (%s)",
                k, r.iteration_time_s, truth, what);
      hs_plan_destroy(&p);
      hs_report_destroy(&r);
    }
    hs_model_destroy(&m);
    hs_cluster_destroy(&c);
  }
}

int main(void)
{
  HS_RUN(test_hap_block_programs_match_brute_force);
  HS_TEST_END();
}
