/*
 * autohet_orders.c - the device groupings and stage orders of autohet's
 * configurations: every set partition of the TP groups into pipelines up
 * to EXHAUSTIVE_GROUPS groups, three heuristics above; each pipeline's
 * stages in device order, by a GPU-type permutation, site-major or by
 * group memory (order_key); and the order the configurations are solved in
 * (cmp_config).
 *
 * Invariants: a listed stage sequence has the same TP runs in every
 * pipeline (symmetric TP across data-parallel chains) and at most MAX_RUNS
 * runs; one sequence is listed once per (pattern, b, recompute, ZeRO).
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration enumeration ------------------------------------------------- */

/* Pipeline h's TP runs (degrees along its stages, equal neighbours merged)
 * are pipeline g's. */
static bool same_tp_runs(const group_t *groups, const int32_t *pstart, const int32_t *order,
                         int32_t g, int32_t h)
{
  int32_t i = pstart[g], k = pstart[h];
  while (i < pstart[g + 1] && k < pstart[h + 1]) {
    int32_t t = groups[order[i]].t;
    if (groups[order[k]].t != t)
      return false;
    while (i < pstart[g + 1] && groups[order[i]].t == t)
      i++;
    while (k < pstart[h + 1] && groups[order[k]].t == t)
      k++;
  }
  return i == pstart[g + 1] && k == pstart[h + 1];
}

/* Sort key of group gi under stage order v (0-based, besides device order):
 * v < P: the rank of its GPU type in permutation v; P <= v < 3P: site-major
 * (sites in device order, then reversed), the type's rank in permutation
 * v mod P inside a site (AutoHet: cross the slow link as few times as
 * possible; only with two or more sites); the last (3P, or P with one
 * site): group memory, TP degree x GPU memory, largest first (more in-flight
 * activations on earlier 1F1B stages). Sorting is stable: ties keep device
 * order. */
static double order_key(const autohet_t *a, const group_t *groups, int32_t v, int32_t gi)
{
  const group_t *gr = &groups[gi];
  int32_t P = a->n_perms;
  if (v < P)
    return a->perms[v][gr->kind];
  if (v < a->n_orders - 1) {
    int32_t site = a->c->devices[gr->first_device].site;
    if (v >= 2 * P)
      site = a->n_sites - 1 - site;
    return (double)site * MAX_KINDS + a->perms[v % P][gr->kind];
  }
  return -(double)gr->t * (double)hs_cluster_gpu(a->c, gr->first_device)->mem_bytes;
}

/* Stable sort of ord[0..n) by key[0..n) (both permuted), the order an
 * insertion sort gives, in O(n log n): bottom-up merges through ktmp /
 * otmp (n entries each). The keys are finite. It was an insertion sort:
 * O(n^2) moves for a pipeline of 1,024 groups whose order reverses the
 * device order (bench_search at 1024 GPUs). */
static void stable_sort_keys(double *key, int32_t *ord, int32_t n, double *ktmp, int32_t *otmp)
{
  double *ks = key, *kd = ktmp;
  int32_t *os = ord, *od = otmp;
  for (int32_t w = 1; w < n; w *= 2) {
    for (int32_t lo = 0; lo < n; lo += 2 * w) {
      int32_t mid = HS_MIN(lo + w, n), hi = n - lo > 2 * w ? lo + 2 * w : n;
      int32_t i = lo, j = mid, x = lo;
      while (i < mid && j < hi) { /* the right run's entry first only when strictly smaller */
        bool right = ks[j] < ks[i];
        kd[x] = right ? ks[j] : ks[i];
        od[x++] = right ? os[j++] : os[i++];
      }
      for (; i < mid; i++, x++)
        kd[x] = ks[i], od[x] = os[i];
      for (; j < hi; j++, x++)
        kd[x] = ks[j], od[x] = os[j];
    }
    double *kt = ks;
    ks = kd;
    kd = kt;
    int32_t *ot = os;
    os = od;
    od = ot;
  }
  if (ks != key) {
    memcpy(key, ks, (size_t)n * sizeof *key);
    memcpy(ord, os, (size_t)n * sizeof *ord);
  }
}

/* Lists configuration cf with partition asg (pipeline of each group) once
 * per stage order: device order (site, node, rank), then the groups of each
 * pipeline sorted by order_key's orders (type permutations, site-major with
 * a type permutation inside each site, memory). An order whose TP runs differ between
 * pipelines is skipped (an op would have two TP degrees: symmetric TP across
 * data-parallel chains), and so is a sequence already listed for the same
 * (pattern, b, rc). */
static hs_status_t push_config(autohet_t *a, const config_t *cf, const int32_t *asg, int32_t ng)
{
  int32_t G = cf->G;
  size_t len = (size_t)ng + (size_t)G + 1;
  const group_t *groups = a->groups[cf->pat];
  if (G == 1 && cf->z != a->zs[0])
    return HS_OK; /* one pipeline: no data parallelism to shard over */
  if (hs_reserve((void **)&a->keys, &a->cap_keys, 2 * (size_t)HS_MAX(ng, 1), sizeof *a->keys) ||
      hs_reserve((void **)&a->ord_tmp, &a->cap_ord_tmp, (size_t)HS_MAX(ng, 1),
                 sizeof *a->ord_tmp) ||
      hs_reserve((void **)&a->base, &a->cap_base, len, sizeof *a->base))
    return HS_ENOMEM;
  double *key = a->keys;
  /* every order starts from the groups of each pipeline in device order:
   * a stable counting sort by pipeline, built once and copied per order
   * (bstart[g] is pipeline g's first slot, advanced while filling, then
   * shifted back) */
  int32_t *bstart = a->base, *border = a->base + G + 1;
  for (int32_t g = 0; g <= G; g++)
    bstart[g] = 0;
  for (int32_t i = 0; i < ng; i++)
    if (asg[i] >= 0 && asg[i] < G)
      bstart[asg[i] + 1]++;
  for (int32_t g = 0; g < G; g++)
    bstart[g + 1] += bstart[g];
  for (int32_t i = 0; i < ng; i++)
    if (asg[i] >= 0 && asg[i] < G)
      border[bstart[asg[i]]++] = i;
  for (int32_t g = G; g > 0; g--)
    bstart[g] = bstart[g - 1];
  bstart[0] = 0;
  for (int32_t v = 0; v <= a->n_orders; v++) {
    if (hs_reserve((void **)&a->assign, &a->cap_assign, a->n_assign + len, sizeof *a->assign))
      return HS_ENOMEM;
    int32_t *pstart = a->assign + a->n_assign, *order = pstart + G + 1;
    memcpy(pstart, bstart, sizeof *pstart * (size_t)(G + 1));
    memcpy(order, border, sizeof *order * (size_t)bstart[G]);
    for (int32_t g = 0; g < G; g++) {
      int32_t k = bstart[g + 1];
      if (v > 0) { /* stable sort by the order's key, each key computed once */
        for (int32_t x = pstart[g]; x < k; x++)
          key[x] = order_key(a, groups, v - 1, order[x]);
        stable_sort_keys(key + pstart[g], order + pstart[g], k - pstart[g], key + ng,
                         a->ord_tmp);
      }
    }
    int32_t runs = 1;
    for (int32_t x = 1; x < pstart[1]; x++)
      runs += groups[order[x]].t != groups[order[x - 1]].t;
    bool ok = runs <= MAX_RUNS; /* TP segments: X_1..X_{J-1} columns */
    for (int32_t g = 1; g < G && ok; g++)
      ok = same_tp_runs(groups, pstart, order, 0, g);
    for (size_t c = a->n_configs; ok && c-- > 0;) {
      const config_t *o = &a->configs[c];
      if (o->pat != cf->pat || o->b != cf->b || o->rc != cf->rc || o->z != cf->z)
        break;
      ok = !(o->G == G && !memcmp(a->assign + o->assign_off, pstart, sizeof(int32_t) * len));
    }
    if (!ok)
      continue;
    if (hs_reserve((void **)&a->configs, &a->cap_configs, a->n_configs + 1, sizeof *a->configs))
      return HS_ENOMEM;
    config_t c2 = *cf;
    c2.assign_off = (int32_t)a->n_assign;
    a->n_assign += len;
    a->configs[a->n_configs++] = c2;
    /* a stage order with a cross-site cut is listed a second time under
     * hetero-1f1b's async sends (same stage sequence, other cost model) */
    bool cross = false;
    for (int32_t g = 0; g < G && !cross; g++)
      for (int32_t x = pstart[g] + 1; x < pstart[g + 1] && !cross; x++)
        cross = a->c->devices[groups[order[x]].first_device].site !=
                a->c->devices[groups[order[x - 1]].first_device].site;
    if (cross) {
      if (hs_reserve((void **)&a->configs, &a->cap_configs, a->n_configs + 1, sizeof *a->configs))
        return HS_ENOMEM;
      c2.async = true;
      a->configs[a->n_configs++] = c2;
    }
  }
  return HS_OK;
}

/* Restricted growth strings: every set partition of ng items, visited once. */
hs_status_t hs__autohet_all_partitions(autohet_t *a, config_t *cf, int32_t ng, int64_t M)
{
  int32_t rgs[EXHAUSTIVE_GROUPS] = {0}, mx[EXHAUSTIVE_GROUPS + 1] = {0};
  for (;;) {
    int32_t G = 0;
    for (int32_t i = 0; i < ng; i++)
      G = HS_MAX(G, rgs[i] + 1);
    if (G <= M) {
      cf->G = G;
      hs_status_t st = push_config(a, cf, rgs, ng);
      if (st)
        return st;
    }
    int32_t i = ng - 1;
    while (i > 0 && rgs[i] > mx[i - 1])
      i--;
    if (i <= 0)
      return HS_OK;
    rgs[i]++;
    for (int32_t j = 0; j < i; j++)
      mx[j] = j == 0 ? rgs[0] : HS_MAX(mx[j - 1], rgs[j]);
    mx[i] = HS_MAX(mx[i - 1], rgs[i]);
    for (int32_t j = i + 1; j < ng; j++) {
      rgs[j] = 0;
      mx[j] = mx[j - 1];
    }
  }
}

/* LPT: groups idx[0..ng) (fastest first) each to the least loaded of G
 * pipelines, ties to the lowest pipeline index, into asg. A binary
 * min-heap on (load, index) picks the same pipeline as a scan for the
 * first minimum, in O(ng log G) instead of O(ng G) (at 1,024 groups the
 * scan was 11% of bench_search's CPU). load and heap: G entries. */
static void lpt_assign(const group_t *groups, const int32_t *idx, int32_t ng, int32_t G,
                       double *load, int32_t *heap, int32_t *asg)
{
  for (int32_t g = 0; g < G; g++) {
    load[g] = 0.0;
    heap[g] = g; /* equal loads: ordered by index, a heap already */
  }
  for (int32_t k = 0; k < ng; k++) {
    int32_t best = heap[0];
    asg[idx[k]] = best;
    load[best] += groups[idx[k]].speed;
    for (int32_t i = 0;;) { /* sift the root down */
      int32_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < G && (load[heap[l]] < load[heap[m]] ||
                    (load[heap[l]] == load[heap[m]] && heap[l] < heap[m])))
        m = l;
      if (r < G && (load[heap[r]] < load[heap[m]] ||
                    (load[heap[r]] == load[heap[m]] && heap[r] < heap[m])))
        m = r;
      if (m == i)
        break;
      int32_t t = heap[i];
      heap[i] = heap[m];
      heap[m] = t;
      i = m;
    }
  }
}

hs_status_t hs__autohet_heuristic_partitions(autohet_t *a, config_t *cf, const group_t *groups,
                                        int32_t ng, int64_t M)
{
  hs_status_t st = HS_OK;
  int32_t *asg = hs_calloc((size_t)ng, sizeof *asg);
  int32_t *idx = hs_calloc((size_t)ng, sizeof *idx);
  double *load = hs_calloc((size_t)ng, sizeof *load);
  int32_t *heap = hs_calloc((size_t)ng, sizeof *heap);
  if (!asg || !idx || !load || !heap)
    HS_FAIL(HS_ENOMEM);
  double total = 0.0;
  for (int32_t i = 0; i < ng; i++)
    total += groups[i].speed;
  /* LPT's order, the same for every G: fastest group first (stable) */
  for (int32_t i = 0; i < ng; i++)
    idx[i] = i;
  for (int32_t i = 1; i < ng; i++) /* insertion sort by speed desc: O(ng^2) worst */
    for (int32_t j = i; j > 0 && groups[idx[j]].speed > groups[idx[j - 1]].speed; j--) {
      int32_t tmp = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = tmp;
    }
  for (int32_t G = 1; G <= ng && G <= M && !hs__autohet_out_of_time(a); G++) {
    bool listed = G <= 8 || G == ng || (ng % G == 0 && G <= 64);
    for (int32_t d = 2; d <= 8 && !listed; d++)
      listed = G == ng / d;
    if (!listed)
      continue;
    cf->G = G;
    lpt_assign(groups, idx, ng, G, load, heap, asg);
    HS_CHECK(push_config(a, cf, asg, ng));
    /* contiguous in device order, balanced on compute */
    double acc = 0.0;
    for (int32_t i = 0; i < ng; i++) {
      int32_t g = (int32_t)floor((acc + 0.5 * groups[i].speed) / total * G);
      int32_t left = ng - i; /* keep every pipeline non-empty */
      g = HS_MIN(HS_MAX(g, i > 0 ? asg[i - 1] : 0), G - 1);
      if (G - g > left)
        g = G - left;
      asg[i] = g;
      acc += groups[i].speed;
    }
    HS_CHECK(push_config(a, cf, asg, ng));
    /* strided: group i to pipeline i mod G (pipelines span the device order) */
    for (int32_t i = 0; i < ng; i++)
      asg[i] = i % G;
    HS_CHECK(push_config(a, cf, asg, ng));
  }
cleanup:
  free(asg);
  free(idx);
  free(load);
  free(heap);
  return st;
}

int hs__autohet_cmp_config(const void *x, const void *y)
{
  const config_t *p = x, *q = y;
  /* configurations with a greedy point first, best first; then round-robin */
  if (isfinite(p->heur_s) != isfinite(q->heur_s))
    return isfinite(p->heur_s) ? -1 : 1;
  if (isfinite(p->heur_s) && p->heur_s != q->heur_s)
    return p->heur_s < q->heur_s ? -1 : 1;
  if (p->rank != q->rank)
    return p->rank < q->rank ? -1 : 1;
  if (p->lb_s != q->lb_s)
    return p->lb_s < q->lb_s ? -1 : 1;
  return p->assign_off < q->assign_off ? -1 : p->assign_off > q->assign_off;
}


/* Stage orders beyond device order (from autohet_init): every permutation
 * of the GPU types (a->perms, lexicographic), then site-major and memory
 * orders only where they can differ from those (two or more sites; two or
 * more GPU types). Sets perms, n_perms, n_sites, n_orders. O(types!). */
void hs__autohet_stage_orders(autohet_t *a)
{
  if (a->n_kinds >= 2) {
    int32_t perm[MAX_KINDS];
    for (int32_t k = 0; k < a->n_kinds; k++)
      perm[k] = k;
    for (;;) {
      for (int32_t k = 0; k < a->n_kinds; k++)
        a->perms[a->n_perms][perm[k]] = k; /* rank of type perm[k] is k */
      a->n_perms++;
      /* next permutation (lexicographic) */
      int32_t i = a->n_kinds - 2;
      while (i >= 0 && perm[i] > perm[i + 1])
        i--;
      if (i < 0)
        break;
      int32_t j = a->n_kinds - 1;
      while (perm[j] < perm[i])
        j--;
      int32_t tmp = perm[i];
      perm[i] = perm[j];
      perm[j] = tmp;
      for (int32_t x = i + 1, y = a->n_kinds - 1; x < y; x++, y--) {
        tmp = perm[x];
        perm[x] = perm[y];
        perm[y] = tmp;
      }
    }
  }
  a->n_sites = (int32_t)a->c->n_sites;
  a->n_orders = a->n_perms;
  if (a->n_perms > 0 && a->n_sites > 1)
    a->n_orders = 3 * a->n_perms + 1;
  else if (a->n_perms > 0)
    a->n_orders = a->n_perms + 1;
}
