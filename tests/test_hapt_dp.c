/*
 * test_hapt_dp.c - hapt's DP (search/hapt_dp.c: the stage-time-cap
 * recurrence with its bound, its windows and its incremental runs) against
 * a naive implementation of the same recurrence written here: every state
 * (stages, cut, budget vector, subcluster) by plain recursion over every
 * end cut, mesh and successor in the order (mesh, end cut, successor), the
 * first minimum kept, the memory rule through hs__hspace_pick itself (not
 * the memo), no pruning. Every state's value and choice must be equal, and
 * the extracted solution's cost the naive optimum. Over every op-level cut
 * candidate (no coarsening), several microbatch sizes, the caps from none
 * down to where nothing fits and then the same caps in a random order (a
 * smaller cap than the last run's is an incremental run, a larger one a
 * full run; a new table's first run is under the last table's cap; the optimum's sum
 * never falls as the caps descend), on three fixed instances (GPT-3 2.7B and 6.7B: 67 candidates,
 * memory decides some picks) and random ones (GPTs of 30-36 blocks, 63-75
 * candidates, on random two-site clusters).
 */
#include "hapt_dp.h"
#include "search_fixture.h"

#include <math.h>
#include <stdlib.h>

typedef struct naive {
  hs_hspace_t *h;
  const hs_hapt_dp_t *d; /* its budget radix only */
  double tmax;
  double *memo;          /* (S+1) x K x U x A, NAN unset */
  hs_hapt_choice_t *ch;  /* the first minimum's choice per state */
  int32_t S;
} naive_t;

static int32_t units_of(const naive_t *n, int32_t u, int32_t a)
{
  return (u / n->d->stride[a]) % n->d->radix[a];
}

static size_t state_ix(const naive_t *n, int32_t st, int32_t k, int32_t u, int32_t a)
{
  return (((size_t)st * (size_t)n->h->n_cuts + (size_t)k) * (size_t)n->d->U + (size_t)u) *
             (size_t)n->h->n_sc + (size_t)a;
}

static double naive_F(naive_t *n, int32_t st, int32_t k, int32_t u, int32_t a)
{
  hs_hspace_t *h = n->h;
  int32_t K = h->n_cuts, A = h->n_sc;
  size_t ix = state_ix(n, st, k, u, a);
  if (!isnan(n->memo[ix]))
    return n->memo[ix];
  double best = HS_HAPT_DP_INF;
  hs_hapt_choice_t bc = {-1, -1, -1, -1};
  for (int32_t zi = 0; zi < h->n_sizes[a]; zi++) {
    if (h->sizes[a][zi] > units_of(n, u, a))
      continue;
    int32_t u2 = u - h->sizes[a][zi] * n->d->stride[a];
    int32_t no;
    if (st == 1) {
      int32_t opt = hs__hspace_pick(h, k, K - 1, a, zi, 1, false, 0.0);
      if (opt < 0)
        continue;
      const hs_hopt_t *o = hs__hspace_opts(h, k, K - 1, a, zi, &no);
      if (o[opt].t <= n->tmax && o[opt].t + o[opt].f < best) {
        best = o[opt].t + o[opt].f;
        bc = (hs_hapt_choice_t){K - 1, zi, -1, opt};
      }
      continue;
    }
    for (int32_t k2 = k + 1; k2 < K - 1; k2++)
      for (int32_t b = 0; b < A; b++) {
        double rest = naive_F(n, st - 1, k2, u2, b);
        if (rest >= HS_HAPT_DP_INF)
          continue;
        double c = hs__hspace_cut_s(h, a, b, k2);
        if (c > n->tmax)
          continue;
        bool cross = h->sc[a].site != h->sc[b].site;
        int32_t opt = hs__hspace_pick(h, k, k2, a, zi, st, cross, cross ? c : 0.0);
        if (opt < 0)
          continue;
        const hs_hopt_t *o = hs__hspace_opts(h, k, k2, a, zi, &no);
        if (o[opt].t > n->tmax)
          continue;
        double v = o[opt].t + o[opt].f + 2.0 * c + rest;
        if (v < best) {
          best = v;
          bc = (hs_hapt_choice_t){k2, zi, b, opt};
        }
      }
  }
  n->memo[ix] = best;
  n->ch[ix] = bc;
  return best;
}

/* Every state of one DP run against the naive recurrence; returns the
 * naive optimum over stage counts and first subclusters. */
static double check_run(hs_hspace_t *h, hs_hapt_dp_t *d, double tmax, int64_t *n_states)
{
  hs__hapt_dp_run(d, h, tmax);
  int32_t K = h->n_cuts, A = h->n_sc;
  size_t nm = (size_t)(d->S + 1) * (size_t)K * (size_t)d->U * (size_t)A;
  naive_t n = {h, d, tmax, malloc(nm * sizeof(double)), malloc(nm * sizeof(hs_hapt_choice_t)),
               d->S};
  CHECK(n.memo != NULL && n.ch != NULL);
  for (size_t i = 0; i < nm; i++)
    n.memo[i] = NAN;
  double opt = HS_HAPT_DP_INF;
  for (int32_t st = 1; st <= d->S; st++)
    for (int32_t k = 0; k + 1 < K; k++)
      for (int32_t u = 0; u < d->U; u++)
        for (int32_t a = 0; a < A; a++) {
          double want = naive_F(&n, st, k, u, a);
          double got = hs__hapt_dp_value(d, st, k, u, a);
          CHECK_MSG(got == want, "cap %g: F(%d, %d, %d, %d) = %.17g, naive %.17g", tmax, st, k,
                    u, a, got, want);
          if (want < HS_HAPT_DP_INF) {
            hs_hapt_choice_t cw = n.ch[state_ix(&n, st, k, u, a)], cg = d->ch[state_ix(&n, st, k, u, a)];
            CHECK_MSG(cg.k2 == cw.k2 && cg.zi == cw.zi && cg.b == cw.b && cg.opt == cw.opt,
                      "cap %g: F(%d, %d, %d, %d) chose (%d, %d, %d, %d), naive (%d, %d, %d, %d)",
                      tmax, st, k, u, a, cg.k2, cg.zi, cg.b, cg.opt, cw.k2, cw.zi, cw.b, cw.opt);
          }
          (*n_states)++;
          if (k == 0 && u == d->U - 1)
            opt = fmin(opt, want);
        }
  free(n.memo);
  free(n.ch);
  /* the extracted solution costs the naive optimum */
  hs_hsol_t sol = {.st = calloc((size_t)d->S + 1, sizeof(hs_hstage_t))};
  CHECK(sol.st != NULL);
  bool found = hs__hapt_dp_extract(d, h, &sol);
  CHECK(found == (opt < HS_HAPT_DP_INF));
  if (found) {
    double sum = 0.0;
    for (int32_t i = 0; i < sol.n; i++)
      sum += sol.st[i].t + sol.st[i].f + 2.0 * sol.st[i].c;
    CHECK_MSG(sol.sum_s == opt, "extracted %.17g, naive %.17g", sol.sum_s, opt);
    CHECK_MSG(fabs(sum - opt) <= 1e-9 * opt, "stages sum to %.17g, naive %.17g", sum, opt);
    CHECK(sol.st[0].k == 0 && sol.st[sol.n - 1].k2 == K - 1);
  }
  free(sol.st);
  return opt;
}

#define MAX_CAPS 40

/* hs__hspace_table's limit: h2 (made as h) holds table mi built with
 * limit L, every cap of caps[] at most L is run on both, in the sweep's
 * (descending) order, and every state's value and choice must be equal,
 * so a limited table leaves out only what no such cap can take. The
 * limit must leave some option out (or the check could not fail).
 * Returns the options the limit left out. */
static uint64_t check_limited(hs_hspace_t *h, hs_hapt_dp_t *d, hs_hspace_t *h2, hs_hapt_dp_t *d2,
                              int32_t mi, double L, const double *caps, int32_t n_caps)
{
  uint64_t e0 = h->evaluated, e2 = h2->evaluated;
  CHECK(hs__hspace_table(h, mi, INFINITY) == HS_OK);
  CHECK(hs__hspace_table(h2, mi, L) == HS_OK);
  uint64_t full = h->evaluated - e0, limited = h2->evaluated - e2;
  CHECK_MSG(limited <= full, "limit %.9g: %llu options estimated, %llu without it", L,
            (unsigned long long)limited, (unsigned long long)full);
  int32_t K = h->n_cuts, A = h->n_sc;
  size_t nm = (size_t)(d->S + 1) * (size_t)K * (size_t)d->U * (size_t)A;
  for (int32_t i = 0; i < n_caps; i++) {
    if (!(caps[i] <= L))
      continue;
    hs__hapt_dp_run(d, h, caps[i]);
    hs__hapt_dp_run(d2, h2, caps[i]);
    for (size_t x = 0; x < nm; x++) {
      CHECK_MSG(d->F[x] == d2->F[x], "limit %.9g, cap %.9g: state %zu %.17g, full table %.17g",
                L, caps[i], x, d2->F[x], d->F[x]);
      if (d->F[x] < HS_HAPT_DP_INF) {
        hs_hapt_choice_t a = d->ch[x], b = d2->ch[x];
        CHECK_MSG(a.k2 == b.k2 && a.zi == b.zi && a.b == b.b && a.opt == b.opt,
                  "limit %.9g, cap %.9g: state %zu chose (%d, %d, %d, %d), full table (%d, %d, "
                  "%d, %d)",
                  L, caps[i], x, b.k2, b.zi, b.b, b.opt, a.k2, a.zi, a.b, a.opt);
      }
    }
  }
  return full - limited;
}

/* One instance: every candidate cut, `sizes` microbatch sizes, the caps
 * from none down to infeasible, then those caps again in an order drawn
 * from seed (repeats allowed: up, down and equal steps). */
static void check_instance(const hs_model_t *m, const hs_cluster_t *c, int64_t gb, int32_t S,
                           int32_t sizes, uint64_t seed)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = gb;
  hs_hspace_t h;
  CHECK_MSG(hs__hspace_init(&h, m, c, &o, 0, &err) == HS_OK, "%s", err.msg);
  CHECK(h.coarse_cuts == 0 && h.n_cuts == h.n_all_cuts); /* every op-level candidate */
  hs_hapt_dp_t d;
  CHECK_MSG(hs__hapt_dp_init(&d, &h, S, 3000000, &err) == HS_OK, "%s", err.msg);
  CHECK(hs__hspace_pick_memo(&h, d.S) == HS_OK);
  /* the same space and DP again, for tables built with a limit */
  hs_hspace_t h2;
  CHECK_MSG(hs__hspace_init(&h2, m, c, &o, 0, &err) == HS_OK, "%s", err.msg);
  hs_hapt_dp_t d2;
  CHECK_MSG(hs__hapt_dp_init(&d2, &h2, S, 3000000, &err) == HS_OK, "%s", err.msg);
  CHECK(d2.S == d.S && d2.U == d.U);
  CHECK(hs__hspace_pick_memo(&h2, d2.S) == HS_OK);
  uint64_t left_out = 0;
  int32_t runs = 0, feasible = 0;
  int64_t states = 0;
  double last_cap = HS_HAPT_DP_INF;
  /* largest microbatch first: a table kept from a larger size (the DP's
   * potentials or windows not remade) would make the bounds too high */
  int32_t step = HS_MAX(1, h.n_mbs / sizes);
  for (int32_t mi = (h.n_mbs - 1) / step * step; mi >= 0; mi -= step) {
    CHECK(hs__hspace_table(&h, mi, INFINITY) == HS_OK);
    /* a new table under the last table's cap: a full run, not an
     * incremental one (nothing of the last table may be kept) */
    check_run(&h, &d, last_cap, &states);
    runs++;
    double caps[MAX_CAPS];
    int32_t n_caps = 0;
    double tmax = HS_HAPT_DP_INF, last_sum = 0.0;
    for (int32_t cap = 0; cap < MAX_CAPS && tmax > 0.0; cap++) {
      caps[n_caps++] = tmax;
      double opt = check_run(&h, &d, tmax, &states);
      runs++;
      feasible += opt < HS_HAPT_DP_INF;
      /* next: a cap well below the last optimum's largest stage */
      hs_hsol_t sol = {.st = calloc((size_t)d.S + 1, sizeof(hs_hstage_t))};
      CHECK(sol.st != NULL);
      if (!hs__hapt_dp_extract(&d, &h, &sol)) {
        free(sol.st);
        break;
      }
      /* a smaller cap only removes candidates: the optimum's sum does not
       * fall as the caps descend (hapt's offer_cap jumps on this) */
      CHECK_MSG(sol.sum_s >= last_sum, "cap %.9g: sum %.17g below the larger cap's %.17g", tmax,
                sol.sum_s, last_sum);
      last_sum = sol.sum_s;
      tmax = hs__hapt_dp_next_cap(&h, sol.max_s * 0.8);
      /* the kept values give the scan's answer (caps descend: one table) */
      CHECK(hs__hapt_dp_next_cap_in(&d, &h, sol.max_s * 0.8) == tmax);
      free(sol.st);
    }
    /* next_cap_in against the scan: descending x down to 0 (x equal to a
     * value: the one below it), then a larger x (values made again), then
     * a smaller one */
    double top = hs__hapt_dp_next_cap(&h, HS_HAPT_DP_INF);
    for (int32_t i = 0; i <= 18; i++) {
      double x = i <= 16 ? top * (16 - i) / 16.0 : i == 17 ? 2.0 * top : 0.5 * top;
      if (i == 1)
        x = top;
      double want = hs__hapt_dp_next_cap(&h, x), got = hs__hapt_dp_next_cap_in(&d, &h, x);
      CHECK_MSG(got == want, "next cap below %.9g: %.9g, the scan %.9g", x, got, want);
    }
    for (int32_t i = 0; i < n_caps; i++) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      last_cap = caps[(seed >> 33) % (uint64_t)n_caps];
      check_run(&h, &d, last_cap, &states);
      runs++;
    }
    /* limits: the sweep's second cap (its first below no cap), a middle
     * one and the last */
    for (int32_t j = 1; j < n_caps; j += HS_MAX(1, (n_caps - 1) / 2))
      left_out += check_limited(&h, &d, &h2, &d2, mi, caps[j], caps, n_caps);
  }
  CHECK_MSG(left_out > 0, "%s: no limit left an option out", m->name);
  fprintf(stderr,
          "  %s: %d cuts, S %d, %d runs (%d feasible in the sweeps), %lld states equal; limited "
          "tables: %llu options left out\n",
          m->name, h.n_cuts, d.S, runs, feasible, (long long)states, (unsigned long long)left_out);
  CHECK(feasible > 1); /* the sweeps reach past the last feasible cap */
  hs__hapt_dp_destroy(&d);
  hs__hspace_destroy(&h);
  hs__hapt_dp_destroy(&d2);
  hs__hspace_destroy(&h2);
}

static void test_dp_equals_naive(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  /* 2 A100 + 2 V100 over a slow link: cross-site cuts, meshes of 1 or 2 */
  CHECK(two_site_cluster(&c, 2, 1.25, 500, &err) == HS_OK);
  hs_model_t m;
  small_gpt(&m, 6, 1024, 1024);
  check_instance(&m, &c, 16, 4, 3, 1);
  hs_model_destroy(&m);
  /* memory decides: GPT-3 2.7B's blocks on 32 GiB V100s */
  hs_model_init(&m);
  CHECK_MSG(hs_model_load("gpt3-2.7b", 0, &m, &err) == HS_OK, "%s", err.msg);
  check_instance(&m, &c, 8, 3, 3, 2);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
  /* 4 + 4 GPUs (meshes of 1, 2, 4), GPT-3 6.7B: 66 op-level candidates,
   * up to 6 stages */
  CHECK(two_site_cluster(&c, 4, 1.25, 500, &err) == HS_OK);
  hs_model_init(&m);
  CHECK_MSG(hs_model_load("gpt3-6.7b", 0, &m, &err) == HS_OK, "%s", err.msg);
  check_instance(&m, &c, 32, 6, 3, 3);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* Random GPTs of 30-36 blocks (63-75 cut candidates) on random two-site
 * clusters: 2 or 4 GPUs a site, links from 0.5 to 12.5 GB/s. */
static void test_dp_equals_naive_random(void)
{
  static const int hidden[] = {1024, 1536, 2048, 2560, 4096};
  static const double GBps[] = {0.5, 1.25, 12.5};
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < 4; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t r = (uint32_t)(seed >> 32);
    int layers = 30 + (int)(r % 7), hid = hidden[(r >> 3) % 5], gpn = (r >> 6) & 1 ? 4 : 2;
    double bw = GBps[(r >> 7) % 3];
    int64_t gb = (int64_t)8 << ((r >> 9) % 3);
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_t c;
    CHECK(two_site_cluster(&c, gpn, bw, 100 + (r >> 11) % 900, &err) == HS_OK);
    hs_model_t m;
    small_gpt(&m, layers, hid, (r >> 20) & 1 ? 2048 : 1024);
    fprintf(stderr, "  random %d: %d x %d, %d + %d GPUs, %g GB/s, batch %lld\n", i, layers, hid,
            gpn, gpn, bw, (long long)gb);
    check_instance(&m, &c, gb, gpn == 4 ? 5 : 4, 2, seed);
    hs_model_destroy(&m);
    hs_cluster_destroy(&c);
  }
}

int main(void)
{
  HS_RUN(test_dp_equals_naive);
  HS_RUN(test_dp_equals_naive_random);
  HS_TEST_END();
}
