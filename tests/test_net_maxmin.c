/*
 * test_net_maxmin.c - hs_maxmin_solve against hand-computed rates and
 * against a naive progressive-filling reference written here from the
 * definition (recomputes every sum from scratch each round), plus the
 * max-min optimality conditions checked directly on random problems:
 * feasibility, and every flow has a saturated bottleneck link on which no
 * flow gets more than it.
 */
#include "hs_net.h"
#include "hs_test.h"

#include <stdint.h>

static uint64_t rnd(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static bool finite_cap(double c) { return c > 0 && c < INFINITY; }

/* The definition, slowly: raise all unfrozen flows together; the link that
 * saturates first freezes its flows. */
static void naive_maxmin(int nf, const int32_t *off, const hs_flow_hop_t *hops, int nl,
                         const double *cap, double *rate)
{
  bool *frozen = calloc((size_t)nf, sizeof *frozen);
  for (int f = 0; f < nf; f++)
    rate[f] = INFINITY;
  for (;;) {
    int best = -1;
    double best_level = INFINITY;
    for (int l = 0; l < nl; l++) {
      if (!finite_cap(cap[l]))
        continue;
      double used = 0, w_unfrozen = 0;
      for (int f = 0; f < nf; f++)
        for (int h = off[f]; h < off[f + 1]; h++)
          if (hops[h].link == l) {
            if (frozen[f])
              used += hops[h].weight * rate[f];
            else
              w_unfrozen += hops[h].weight;
          }
      if (w_unfrozen == 0)
        continue;
      double level = fmax(cap[l] - used, 0) / w_unfrozen;
      if (level < best_level) {
        best_level = level;
        best = l;
      }
    }
    if (best < 0)
      break;
    for (int f = 0; f < nf; f++)
      for (int h = off[f]; h < off[f + 1]; h++)
        if (hops[h].link == best && !frozen[f]) {
          frozen[f] = true;
          rate[f] = best_level;
        }
  }
  free(frozen);
}

static void test_three_flows(void)
{
  /* L0 = 10, L1 = 4. A: L0; B: L0 + L1; C: L1. L1 saturates first at 2
   * (B, C); A takes what B leaves on L0: 10 - 2 = 8. */
  double cap[] = {10e9, 4e9};
  hs_flow_hop_t hops[] = {{0, 1}, {0, 1}, {1, 1}, {1, 1}};
  int32_t off[] = {0, 1, 3, 4};
  double rate[3];
  hs_maxmin_t mm;
  hs_maxmin_init(&mm);
  CHECK(hs_maxmin_solve(&mm, 3, off, hops, 2, cap, rate) == HS_OK);
  CHECK_REL(rate[0], 8e9, 1e-12);
  CHECK_REL(rate[1], 2e9, 1e-12);
  CHECK_REL(rate[2], 2e9, 1e-12);
  hs_maxmin_destroy(&mm);
}

static void test_weighted_and_unconstrained(void)
{
  /* L0 = 9: X with weight 2, Y with weight 1: equal rates r, 3r = 9. L1 is
   * unconstrained (0 and +inf both mean that): Z alone there gets +inf. */
  double cap[] = {9e9, 0, INFINITY};
  hs_flow_hop_t hops[] = {{0, 2}, {0, 1}, {1, 1}, {1, 3}, {2, 1}};
  int32_t off[] = {0, 1, 3, 5};
  double rate[3];
  hs_maxmin_t mm;
  hs_maxmin_init(&mm);
  CHECK(hs_maxmin_solve(&mm, 3, off, hops, 3, cap, rate) == HS_OK);
  CHECK_REL(rate[0], 3e9, 1e-12);
  CHECK_REL(rate[1], 3e9, 1e-12);
  CHECK(rate[2] == INFINITY);
  /* k flows on one link: B/k each */
  double c1[] = {12e9};
  hs_flow_hop_t h1[6];
  int32_t o1[7];
  for (int i = 0; i < 6; i++) {
    h1[i] = (hs_flow_hop_t){0, 1};
    o1[i] = i;
  }
  o1[6] = 6;
  double r1[6];
  CHECK(hs_maxmin_solve(&mm, 6, o1, h1, 1, c1, r1) == HS_OK);
  for (int i = 0; i < 6; i++)
    CHECK_REL(r1[i], 2e9, 1e-12);
  /* bad input */
  hs_flow_hop_t bad[] = {{5, 1}};
  int32_t ob[] = {0, 1};
  CHECK(hs_maxmin_solve(&mm, 1, ob, bad, 1, c1, r1) == HS_EINVAL);
  bad[0] = (hs_flow_hop_t){0, 0};
  CHECK(hs_maxmin_solve(&mm, 1, ob, bad, 1, c1, r1) == HS_EINVAL);
  hs_maxmin_destroy(&mm);
}

/* Random problems of growing size (the larger use the solver's heap path). */
static void test_random_vs_naive(void)
{
  uint64_t s = 12345;
  hs_maxmin_t mm;
  hs_maxmin_init(&mm);
  int worst = 0;
  for (int trial = 0; trial < 300; trial++) {
    int nl = 1 + (int)(rnd(&s) % (trial < 150 ? 12 : 120));
    int nf = 1 + (int)(rnd(&s) % (trial < 150 ? 10 : 150));
    double *cap = calloc((size_t)nl, sizeof *cap);
    int32_t *off = calloc((size_t)nf + 1, sizeof *off);
    hs_flow_hop_t *hops = calloc((size_t)nf * 8, sizeof *hops);
    double *r1 = calloc((size_t)nf, sizeof *r1), *r2 = calloc((size_t)nf, sizeof *r2);
    for (int l = 0; l < nl; l++) {
      uint64_t k = rnd(&s) % 10;
      cap[l] = k == 0 ? INFINITY : (double)(1 + rnd(&s) % 50) * 1e9;
    }
    int k = 0;
    for (int f = 0; f < nf; f++) {
      off[f] = k;
      int nh = 1 + (int)(rnd(&s) % 5);
      for (int h = 0; h < nh; h++) {
        int32_t l = (int32_t)(rnd(&s) % (uint64_t)nl);
        bool dup = false;
        for (int q = off[f]; q < k; q++)
          dup |= hops[q].link == l;
        if (!dup)
          hops[k++] = (hs_flow_hop_t){l, 1 + (int32_t)(rnd(&s) % 3)};
      }
    }
    off[nf] = k;
    CHECK(hs_maxmin_solve(&mm, nf, off, hops, nl, cap, r1) == HS_OK);
    naive_maxmin(nf, off, hops, nl, cap, r2);
    int bad = 0;
    for (int f = 0; f < nf; f++)
      if (!(r1[f] == r2[f] || fabs(r1[f] - r2[f]) <= 1e-9 * fmax(r1[f], r2[f])))
        bad++;
    CHECK_MSG(bad == 0, "trial %d: %d of %d rates differ", trial, bad, nf);
    /* optimality: feasible, and each constrained flow has a saturated link
     * where it is among the fastest */
    for (int l = 0; l < nl; l++) {
      if (!finite_cap(cap[l]))
        continue;
      double used = 0;
      for (int f = 0; f < nf; f++)
        for (int h = off[f]; h < off[f + 1]; h++)
          if (hops[h].link == l)
            used += hops[h].weight * r1[f];
      CHECK(used <= cap[l] * (1 + 1e-9));
    }
    for (int f = 0; f < nf; f++) {
      if (r1[f] == INFINITY)
        continue;
      bool has_bottleneck = false;
      for (int h = off[f]; h < off[f + 1] && !has_bottleneck; h++) {
        int l = hops[h].link;
        if (!finite_cap(cap[l]))
          continue;
        double used = 0, fastest = 0;
        for (int g = 0; g < nf; g++)
          for (int q = off[g]; q < off[g + 1]; q++)
            if (hops[q].link == l) {
              used += hops[q].weight * r1[g];
              fastest = fmax(fastest, r1[g]);
            }
        has_bottleneck = used >= cap[l] * (1 - 1e-9) && r1[f] >= fastest * (1 - 1e-9);
      }
      if (!has_bottleneck)
        worst++;
    }
    free(cap);
    free(off);
    free(hops);
    free(r1);
    free(r2);
  }
  CHECK_EQ_INT(worst, 0);
  hs_maxmin_destroy(&mm);
}

int main(void)
{
  HS_RUN(test_three_flows);
  HS_RUN(test_weighted_and_unconstrained);
  HS_RUN(test_random_vs_naive);
  HS_TEST_END();
}
