/*
 * autohet_space.c - autohet's TP patterns and their configurations: the
 * GPU types of the cluster, each type's legal TP degrees, the per-type
 * patterns, the split (two or three degrees over a type's nodes) and mixed
 * (two degrees inside a node) patterns around the best ones, and for each
 * pattern every (microbatch size, recomputation, ZeRO class, grouping)
 * configuration with its greedy point and lower bound.
 *
 * Invariants: at most MAX_PATTERNS patterns, no two with the same per-node
 * degrees; a pattern's groups are consecutive devices of one node.
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Adds the TP pattern whose groups have degree node_t[n] on node n (every
 * node cut into consecutive groups of that size, leftover GPUs idle). */
static hs_status_t add_pattern(autohet_t *a, const int32_t *node_t, hs_error_t *err)
{
  const hs_cluster_t *c = a->c;
  int32_t pi = a->n_pats;
  int32_t ng = 0;
  for (size_t n = 0; n < c->n_nodes; n++) {
    int32_t nd = c->nodes[n].n_devices;
    ng += node_t[n] < MIX_BASE ? nd / node_t[n]
                               : nd / 2 / (node_t[n] / MIX_BASE) + nd / 2 / (node_t[n] % MIX_BASE);
  }
  a->groups[pi] = hs_calloc((size_t)HS_MAX(ng, 1), sizeof(group_t));
  a->pat_node_t[pi] = hs_calloc(c->n_nodes, sizeof(int32_t));
  if (!a->groups[pi] || !a->pat_node_t[pi]) {
    free(a->groups[pi]);
    free(a->pat_node_t[pi]);
    a->groups[pi] = NULL;
    a->pat_node_t[pi] = NULL;
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  }
  memcpy(a->pat_node_t[pi], node_t, c->n_nodes * sizeof *node_t);
  ng = 0;
  for (size_t n = 0; n < c->n_nodes; n++) {
    int32_t kind = a->kind_of_node[n], nd = c->nodes[n].n_devices;
    int32_t t1 = node_t[n], t2 = node_t[n], mid = nd;
    if (node_t[n] >= MIX_BASE) { /* mixed node: first half in groups of t1, second of t2 */
      t1 = node_t[n] / MIX_BASE;
      t2 = node_t[n] % MIX_BASE;
      mid = nd / 2;
    }
    for (int32_t k = 0;; ) {
      int32_t t = k < mid ? t1 : t2;
      if (k + t > (k < mid ? mid : nd))
        break;
      group_t *g = &a->groups[pi][ng++];
      g->first_device = c->nodes[n].first_device + k;
      g->node = (int32_t)n;
      g->t = t;
      g->kind = kind;
      g->speed = t * hs__gpu_speed(hs_cluster_gpu(c, g->first_device), a->o.precision);
      k += t;
    }
  }
  a->n_groups[pi] = ng;
  a->n_pats++;
  return HS_OK;
}


/* add_pattern and its configurations, unless the same per-node degrees are
 * listed already or the pattern table is full (then nothing, HS_OK). */
static hs_status_t add_new_pattern(autohet_t *a, const int32_t *node_t, hs_error_t *err)
{
  size_t bytes = a->c->n_nodes * sizeof *node_t;
  for (int32_t q = 0; q < a->n_pats; q++)
    if (!memcmp(a->pat_node_t[q], node_t, bytes))
      return HS_OK;
  if (a->n_pats == MAX_PATTERNS)
    return HS_OK;
  hs_status_t st = add_pattern(a, node_t, err);
  return st == HS_OK ? hs__autohet_pattern_configs(a, a->n_pats - 1, err) : st;
}

/* Stable sort of configs[first..n_configs) by order_key (a class's depth
 * key), the order an insertion sort gives, in O(n log n) moves: a bottom-up
 * merge through a->sort_tmp (it was an insertion sort, O(n^2) config
 * moves: 5% of bench_search's CPU at 16-256 GPUs, classes of up to ~8,000
 * configurations). order_key is finite (no NaN), so the order is total. */
static hs_status_t sort_by_depth(autohet_t *a, size_t first)
{
  size_t n = a->n_configs - first;
  if (n < 2)
    return HS_OK;
  if (hs_reserve((void **)&a->sort_tmp, &a->cap_sort_tmp, n, sizeof *a->sort_tmp))
    return HS_ENOMEM;
  config_t *src = a->configs + first, *dst = a->sort_tmp;
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = HS_MIN(lo + w, n), hi = HS_MIN(lo + 2 * w, n), i = lo, j = mid, k = lo;
      while (i < mid && j < hi) /* the right run's entry first only when strictly smaller */
        dst[k++] = src[j].order_key < src[i].order_key ? src[j++] : src[i++];
      while (i < mid)
        dst[k++] = src[i++];
      while (j < hi)
        dst[k++] = src[j++];
    }
    config_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a->configs + first)
    memcpy(a->configs + first, src, n * sizeof *src);
  return HS_OK;
}

/* Lists the configurations of pattern ti (every microbatch size,
 * recomputation, ZeRO class and device grouping), each with its greedy
 * point, lower bound and rank within its class. */
hs_status_t hs__autohet_pattern_configs(autohet_t *a, int32_t ti, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  gcost_t *gcs = NULL;
  const hs_plan_opts_t *o = &a->o;
  int32_t maxmb = a->maxmb;
  hs_recompute_t rcs[2] = {HS_RECOMPUTE_NONE, HS_RECOMPUTE_FULL};
  {
    int32_t ng = a->n_groups[ti];
    for (int32_t b = 1; b <= maxmb && !hs__autohet_out_of_time(a); b *= 2) {
      if (a->B % b)
        continue;
      int64_t M = a->B / b;
      for (int32_t rz = 0; rz < (o->allow_recompute ? 2 : 1) * a->n_zs && !hs__autohet_out_of_time(a); rz++) {
        int r = rz / a->n_zs, zi = rz % a->n_zs;
        config_t cf = {.pat = ti, .b = b, .rc = rcs[r], .z = a->zs[zi]};
        size_t first = a->n_configs;
        if (ng <= EXHAUSTIVE_GROUPS)
          HS_CHECK(hs__autohet_all_partitions(a, &cf, ng, M));
        else
          HS_CHECK(hs__autohet_heuristic_partitions(a, &cf, a->groups[ti], ng, M));
        /* perfect-balance lower bound, same for every partition of (t, b, rc) */
        double inv = 0.0;
        gcs = hs_calloc((size_t)ng, sizeof *gcs);
        if (!gcs)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
        for (int32_t i = 0; i < ng; i++) {
          HS_CHECK(hs__autohet_group_cost(a, &a->groups[ti][i], b, rcs[r], &gcs[i], err));
          inv += gcs[i].f_s > 0 ? 1.0 / gcs[i].f_s : 0.0;
        }
        double lb = inv > 0 ? (double)M * a->L / inv : 0.0;
        /* a greedy integer point per configuration: incumbents for the
         * MILPs, candidates for the pool, and the order they are solved in */
        for (size_t k = first; k < a->n_configs; k++) {
          if (hs__autohet_out_of_time(a)) { /* the rest of this class has no greedy point: drop it */
            a->n_configs = k;
            break;
          }
          HS_CHECK(hs__autohet_greedy_incumbent(a, &a->configs[k], gcs, err));
        }
        free(gcs);
        gcs = NULL;
        for (size_t k = first; k < a->n_configs; k++) {
          config_t *q = &a->configs[k];
          q->lb_s = lb;
          q->order_key = fabs(log2((double)ng / q->G / 4.0));
        }
        /* rank inside the class by pipeline depth closeness to 4 stages (stable) */
        if (sort_by_depth(a, first) != HS_OK)
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory"));
        for (size_t k = first; k < a->n_configs; k++)
          a->configs[k].rank = (int32_t)(k - first);
      }
    }
  }
cleanup:
  free(gcs);
  return st;
}


/* ---- GPU types, TP degrees, patterns (from autohet_init) ---------------------- */

/* GPU types in order of first appearance (a->kind_of_node, a->n_kinds);
 * with more than MAX_KINDS of them, one TP degree for all (one kind) and
 * stages in device order. Then each type's TP degrees: powers of two up
 * to 8 within that type's smallest node that split the model's heads, KV
 * heads and the other TP-split dimensions (hs_model_tp_ok). O(nodes). */
hs_status_t hs__autohet_kinds(autohet_t *a, autohet_tp_t *tp, hs_error_t *err)
{
  const hs_cluster_t *c = a->c;
  memset(tp, 0, sizeof *tp);
  a->kind_of_node = hs_calloc(c->n_nodes, sizeof *a->kind_of_node);
  if (!a->kind_of_node)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  const hs_gpu_t *kind_gpu[MAX_KINDS];
  int32_t kind_gpn[MAX_KINDS];
  for (size_t n = 0; n < c->n_nodes && a->n_kinds <= MAX_KINDS; n++) {
    const hs_gpu_t *gpu = hs_cluster_gpu(c, c->nodes[n].first_device);
    int32_t k = 0;
    while (k < a->n_kinds && strcmp(kind_gpu[k]->name, gpu->name) != 0)
      k++;
    if (k == a->n_kinds && a->n_kinds++ < MAX_KINDS) {
      kind_gpu[k] = gpu;
      kind_gpn[k] = INT32_MAX;
    }
    if (k < MAX_KINDS) {
      a->kind_of_node[n] = k;
      kind_gpn[k] = HS_MIN(kind_gpn[k], c->nodes[n].n_devices);
    }
  }
  if (a->n_kinds > MAX_KINDS) {
    a->n_kinds = 1;
    kind_gpn[0] = INT32_MAX;
    for (size_t n = 0; n < c->n_nodes; n++) {
      a->kind_of_node[n] = 0;
      kind_gpn[0] = HS_MIN(kind_gpn[0], c->nodes[n].n_devices);
    }
  }
  for (int32_t k = 0; k < a->n_kinds; k++) {
    tp->ntk[k] = 0;
    for (int32_t t = 1; t <= 8 && t <= kind_gpn[k]; t *= 2)
      if (hs_model_tp_ok(a->m, t))
        tp->tks[k][tp->ntk[k]++] = t;
    if (tp->ntk[k] == 0)
      return hs_error_set(err, HS_EINFEASIBLE,
                          "autohet: no TP degree of 1-8 fits %s's heads on %d-GPU nodes",
                          a->m->name, kind_gpn[k]);
  }
  return HS_OK;
}

/* Every combination of one TP degree per GPU type as a pattern (type 0's
 * degree varying fastest). Allocates tp->node_t (the caller frees it). */
hs_status_t hs__autohet_base_patterns(autohet_t *a, autohet_tp_t *tp, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_cluster_t *c = a->c;
  tp->node_t = hs_calloc(c->n_nodes, sizeof *tp->node_t);
  if (!tp->node_t)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  for (int32_t p = 0;; p++) {
    int32_t rem = p, tp_of[MAX_KINDS];
    for (int32_t k = 0; k < a->n_kinds; k++) {
      tp_of[k] = tp->tks[k][rem % tp->ntk[k]];
      rem /= tp->ntk[k];
    }
    if (rem > 0)
      break;
    for (size_t n = 0; n < c->n_nodes; n++)
      tp->node_t[n] = tp_of[a->kind_of_node[n]];
    HS_CHECK(add_pattern(a, tp->node_t, err));
  }
cleanup:
  return st;
}

/* seeds[0..return) = the first n_base patterns by their best greedy point,
 * best first (stable). O(n_base x configurations). */
static int32_t rank_seeds(const autohet_t *a, int32_t n_base, int32_t *seeds)
{
  int32_t n_seeds = 0;
  double seed_s[MAX_PATTERNS];
  for (int32_t ti = 0; ti < n_base; ti++) {
    double best = INFINITY;
    for (size_t k = 0; k < a->n_configs; k++)
      if (a->configs[k].pat == ti)
        best = fmin(best, a->configs[k].heur_s);
    int32_t j = n_seeds++; /* insertion by best greedy point, stable */
    while (j > 0 && best < seed_s[j - 1]) {
      seeds[j] = seeds[j - 1];
      seed_s[j] = seed_s[j - 1];
      j--;
    }
    seeds[j] = ti;
    seed_s[j] = best;
  }
  return n_seeds;
}

/* Around seed pattern ti, type k's nodes (nk of them, seed degree t1) in
 * two halves of device order, the second with degree t2 (every legal t2
 * when `all`, else only half or double t1). */
static hs_status_t two_way_splits(autohet_t *a, const autohet_tp_t *tp, int32_t ti, int32_t k,
                                  int32_t nk, int32_t t1, bool all, hs_error_t *err)
{
  const hs_cluster_t *c = a->c;
  int32_t *node_t = tp->node_t;
  for (int32_t x = 0; x < tp->ntk[k] && nk >= 2; x++) {
    int32_t t2 = tp->tks[k][x];
    if (t2 == t1 || (!all && t2 != 2 * t1 && 2 * t2 != t1))
      continue;
    memcpy(node_t, a->pat_node_t[ti], c->n_nodes * sizeof *node_t);
    for (size_t n = 0, seen = 0; n < c->n_nodes; n++)
      if (a->kind_of_node[n] == k && seen++ >= (size_t)(nk + 1) / 2)
        node_t[n] = t2;
    hs_status_t st = add_new_pattern(a, node_t, err);
    if (st != HS_OK)
      return st;
  }
  return HS_OK;
}

/* Mixed degrees inside one node (every node of type k): the first half of
 * its GPUs in TP groups of d1, the second half of d2 (e.g. 8 = 4 + 2 + 2);
 * with `all` every pair of legal degrees up to half a node, else only
 * pairs of the seed's degree t1 and a neighbour (half, double). */
static hs_status_t mixed_nodes(autohet_t *a, const autohet_tp_t *tp, int32_t ti, int32_t k,
                               int32_t t1, bool all, hs_error_t *err)
{
  const hs_cluster_t *c = a->c;
  int32_t *node_t = tp->node_t, ntk = tp->ntk[k];
  int32_t half = INT32_MAX;
  for (size_t n = 0; n < c->n_nodes; n++)
    if (a->kind_of_node[n] == k)
      half = HS_MIN(half, c->nodes[n].n_devices % 2 ? 0 : c->nodes[n].n_devices / 2);
  for (int32_t x = 0; x < ntk * ntk; x++) {
    int32_t d1 = tp->tks[k][x / ntk], d2 = tp->tks[k][x % ntk];
    if (d1 == d2 || d1 > half || d2 > half)
      continue;
    bool ok = true;
    for (size_t n = 0; n < c->n_nodes && ok; n++)
      ok = a->kind_of_node[n] != k ||
           ((c->nodes[n].n_devices / 2) % d1 == 0 && (c->nodes[n].n_devices / 2) % d2 == 0);
    if (!ok || (!all && !((d1 == t1 && (d2 == 2 * t1 || 2 * d2 == t1)) ||
                          (d2 == t1 && (d1 == 2 * t1 || 2 * d1 == t1)))))
      continue;
    memcpy(node_t, a->pat_node_t[ti], c->n_nodes * sizeof *node_t);
    for (size_t n = 0; n < c->n_nodes; n++)
      if (a->kind_of_node[n] == k)
        node_t[n] = d1 * MIX_BASE + d2;
    hs_status_t st = add_new_pattern(a, node_t, err);
    if (st != HS_OK)
      return st;
  }
  return HS_OK;
}

/* Three-way splits (small clusters only): type k's nk nodes in three runs
 * [0, i), [i, j), [j, nk) of device order, the first with the seed's
 * degree t1, the others with any legal degree each (with three nodes:
 * every degree per node after the first). */
static hs_status_t three_way_splits(autohet_t *a, const autohet_tp_t *tp, int32_t ti, int32_t k,
                                    int32_t nk, int32_t t1, hs_error_t *err)
{
  const hs_cluster_t *c = a->c;
  int32_t *node_t = tp->node_t, ntk = tp->ntk[k];
  for (int32_t i = 1; i < nk - 1; i++)
    for (int32_t j = i + 1; j < nk; j++)
      for (int32_t x = 0; x < ntk * ntk; x++) {
        int32_t t2 = tp->tks[k][x / ntk], t3 = tp->tks[k][x % ntk];
        if (t2 == t1 || t3 == t2)
          continue; /* a two-way split or none: listed above */
        memcpy(node_t, a->pat_node_t[ti], c->n_nodes * sizeof *node_t);
        for (size_t n = 0, seen = 0; n < c->n_nodes; n++)
          if (a->kind_of_node[n] == k) {
            node_t[n] = (int32_t)seen < i ? t1 : (int32_t)seen < j ? t2 : t3;
            seen++;
          }
        hs_status_t st = add_new_pattern(a, node_t, err);
        if (st != HS_OK)
          return st;
      }
  return HS_OK;
}

/* Per-stage TP (AutoHet: TP symmetric across data-parallel chains, free
 * along a pipeline): around the best per-type patterns by greedy point
 * (all of them up to SMALL_POOL_DEVICES GPUs, else SPLIT_SEEDS), one GPU
 * type's nodes split in two halves (device order) of different degree,
 * mixed nodes, and on small clusters three-way splits, so two stages of
 * one type can differ in TP; push_config keeps only stage sequences whose
 * TP runs agree over the pipelines. Reads the base patterns' configs;
 * uses tp->node_t as scratch. */
hs_status_t hs__autohet_split_patterns(autohet_t *a, const autohet_tp_t *tp, int32_t n_base,
                                       hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_cluster_t *c = a->c;
  int32_t seeds[MAX_PATTERNS];
  int32_t max_seeds = c->n_devices <= SMALL_POOL_DEVICES ? n_base : SPLIT_SEEDS;
  bool all = max_seeds != SPLIT_SEEDS;
  int32_t n_seeds = rank_seeds(a, n_base, seeds);
  for (int32_t si = 0; si < HS_MIN(n_seeds, max_seeds); si++) {
    int32_t ti = seeds[si];
    for (int32_t k = 0; k < a->n_kinds; k++) {
      int32_t nk = 0;
      for (size_t n = 0; n < c->n_nodes; n++)
        nk += a->kind_of_node[n] == k;
      int32_t t1 = 0;
      for (size_t n = 0; n < c->n_nodes && !t1; n++)
        if (a->kind_of_node[n] == k)
          t1 = a->pat_node_t[ti][n];
      HS_CHECK(two_way_splits(a, tp, ti, k, nk, t1, all, err));
      HS_CHECK(mixed_nodes(a, tp, ti, k, t1, all, err));
      if (!all || nk < 3)
        continue;
      HS_CHECK(three_way_splits(a, tp, ti, k, nk, t1, err));
    }
  }
cleanup:
  return st;
}
