/*
 * test_search_oracle.c - the seed strategies against the exhaustive oracle
 * (search/exhaustive.c) on small instances (issue 14). The oracle
 * enumerates hapt_space's broadened space by brute force: every cut
 * candidate (block boundaries and the attention/MLP cut inside each block),
 * every power-of-two microbatch size, per-stage meshes and TP (each stage's
 * own degree) and recomputation (none or full, by the fitting rule), on
 * every set of node groups (device subsets), and, where the options leave
 * training practice to the search, every ZeRO stage x sequence
 * parallelism; its best layouts are simulated. Property: each seed
 * strategy's simulated iteration time is within 2% of the oracle's (or
 * better: the seeds' spaces differ from the oracle's). Cases 4 and 5 are
 * memory-bound, so the optimum uses both sites; cases 6 and 7 have 16,384
 * tokens, where the oracle covers context parallelism too. The ratios print, so a
 * change in either side shows.
 */
#include "search_fixture.h"

#include <stdlib.h>
#include <string.h>

typedef struct ocase {
  int gpn;
  double GBps, lat;
  int layers, hidden, seq;
  int64_t gb;
} ocase_t;

static const ocase_t cases[] = {
    {4, 1.25, 1000, 4, 1024, 512, 32},
    {2, 12.5, 50, 6, 1024, 512, 16},
    {4, 100, 5, 3, 2048, 1024, 16},
    {2, 1.25, 500, 8, 2048, 1024, 32},
    /* memory-bound: a replica does not fit a V100 and both sites pay off */
    {2, 100, 5, 6, 4096, 1024, 16},
    {4, 25, 20, 4, 5120, 2048, 16},
    /* long sequences (issue 34 item 1): the oracle also brute-forces
     * context parallelism (seq >= 8192: C = 2, 4 x ZeRO x SP), and its
     * optimum is a cp2 pipeline over both sites on both */
    {2, 100, 5, 2, 2048, 16384, 4},
    {4, 100, 5, 2, 4096, 16384, 4},
};

/* The kernel presets every case runs under: megatron-2021 (the default
 * until 2026-12-02, where the cases and tolerances were first measured)
 * and megatron-core-2024 (today's default). Under the latter case 5's
 * optimum cuts inside a block (1.5 | 2.5 blocks on V100 | A100 TP-4
 * groups); autohet's block-granular MILP stopped 6.7% behind it until its
 * finalists' boundaries were also tried at the attention/MLP cut
 * (search/autohet_cuts.c, issue 34 item 1). */
static const char *const presets[] = {"megatron-2021", "megatron-core-2024"};

/* tol: allowed excess over the oracle; tol_pp the same where the oracle's
 * best plan is a pipeline (more than one stage). */
static void check_seed(const char *seed, double tol, double tol_pp)
{
  for (size_t k = 0; k < HS_ARRAY_LEN(cases) * HS_ARRAY_LEN(presets); k++) {
    const char *preset = presets[k / HS_ARRAY_LEN(cases)];
    size_t ci = k % HS_ARRAY_LEN(cases);
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_t c;
    CHECK(two_site_cluster(&c, cases[ci].gpn, cases[ci].GBps, cases[ci].lat, &err) == HS_OK);
    hs_model_t m;
    small_gpt(&m, cases[ci].layers, cases[ci].hidden, cases[ci].seq);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = cases[ci].gb;
    /* the oracle covers ZeRO 0-3 and sequence parallelism where the
     * options leave practice to the search (exh_practices), as every seed
     * does (hs_plan_opts_init's default) */
    o.search_practice = true;
    CHECK(hs_kernels_preset(preset, &o.practice.kernels) == HS_OK);
    hs_plan_t p1, p2;
    hs_search_stats_t s1, s2;
    hs_report_t r1, r2;
    CHECK_MSG(run("exhaustive", &m, &c, &o, &p2, &s2, &r2, &err) == HS_OK, "%s", err.msg);
    hs_status_t st = run(seed, &m, &c, &o, &p1, &s1, &r1, &err);
    CHECK_MSG(st == HS_OK, "case %zu %s %s: %s", ci, preset, seed, err.msg);
    if (st == HS_OK) {
      fprintf(stderr, "  case %zu %s: %-8s %.6f s vs oracle %.6f s (%+.2f%%)  %s | %s\n", ci,
              preset, seed,
              r1.iteration_time_s, r2.iteration_time_s,
              100.0 * (r1.iteration_time_s / r2.iteration_time_s - 1.0), r1.plan_summary, r2.plan_summary);
      double t = p2.n_pipelines > 0 && p2.pipelines[0].n_stages > 1 ? tol_pp : tol;
      CHECK_MSG(r1.iteration_time_s <= r2.iteration_time_s * (1.0 + t),
                "case %zu %s: %s %.6f s vs exhaustive %.6f s", ci, preset, seed, r1.iteration_time_s,
                r2.iteration_time_s);
      hs_plan_destroy(&p1);
      hs_report_destroy(&r1);
    }
    hs_plan_destroy(&p2);
    hs_report_destroy(&r2);
    hs_model_destroy(&m);
    hs_cluster_destroy(&c);
  }
}

static void test_hapt_oracle(void) { check_seed("hapt", 0.02, 0.02); }
/* autohet searches a TP degree per GPU type (symmetric across
 * data-parallel chains) and the stage order at block boundaries, with
 * ZeRO-2/3 memory over its pipelines and SP in the MILP, and simulates the
 * best plan under every ZeRO stage x SP x {1f1b, hetero-1f1b with hapt's
 * warm-up rule}. Measured 2026-11-24 against the practice-searching
 * oracle: cases 0-3 and 5 +0.00%, case 4 -9.82% (before: +3.55% on case 5
 * against the practice-less oracle, allowed 4%; the async sends closed
 * it). 2% everywhere, as the issue asks. Under megatron-core-2024
 * (2026-12-02): cases 0-3 +0.00%, case 4 -2.08%, case 5 +0.00% with the
 * half-block cut moves (+6.73% before, emb+0-2|3+head on A100 | V100). */
static void test_autohet_oracle(void) { check_seed("autohet", 0.02, 0.02); }
/* HAP is SPMD only (no pipeline), but since it chooses among its fitting
 * (ZeRO stage, recompute, microbatches) configurations by simulation it
 * beats the oracle where the oracle pipelines (case 4: -10.6%, ZeRO-1 data
 * parallelism over both GPU types, which hapt's space lacks; before, with
 * the first fitting configuration, +3.56%): 2% everywhere. Under
 * megatron-core-2024 (2026-12-02): case 5 +1.52%, case 4 -5.60%, the rest
 * -1.23% to +0.00%. */
static void test_hap_oracle(void) { check_seed("hap", 0.02, 0.02); }

int main(void)
{
  HS_RUN(test_hapt_oracle);
  HS_RUN(test_autohet_oracle);
  HS_RUN(test_hap_oracle);
  HS_TEST_END();
}
