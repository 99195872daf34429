/*
 * coll_tree.c - double binary tree all-reduce (NCCL's "tree").
 *
 * Trees. Tree 1 is NCCL's in-order binary tree over ranks 0..n-1 (rank r's
 * parent clears r's lowest set bit b and sets 2b, or just clears b when that
 * leaves the range; rank 0 is the root). Tree 2 is its mirror r -> n-1-r
 * when n is even, its shift r -> r+1 when n is odd, so every rank is an
 * inner node of at most one tree and each rank's port carries at most two
 * sub-flows per direction. Each tree carries half the buffer, pipelined.
 *
 * Decomposition (S = c->bytes, h = the deeper tree's height in edges, a =
 * max latency over the phase's tree edges):
 *   phase 0, reduce     latency h a, one coupled flow over every
 *                       child -> parent path of both trees, S/2 bytes each
 *   phase 1, broadcast  latency h a, every parent -> child path, S/2 bytes
 * so uncontended T = 2 h a + 2 (S/2) max_l(w_l / B_l). One port per GPU on a
 * switch (bandwidth B, per-path latency a) and n >= 3: w_max = 2 and
 * h = ceil(log2 n), so T = 2 ceil(log2 n) a + 2 S / B; n = 2 gives
 * 2 a + S / B (each direction carries one sub-flow).
 */
#include "coll_impl.h"

static bool tree_supports(hs_coll_op_t op) { return op == HS_COLL_ALLREDUCE; }

static int32_t btree_parent(int32_t n, int32_t r)
{
  if (r == 0)
    return -1;
  int32_t bit = 1;
  while (!(bit & r))
    bit <<= 1;
  int32_t up = (r ^ bit) | (bit << 1);
  if (up >= n)
    up = r ^ bit;
  return up;
}

int32_t hs__coll_dbtree_parent(int32_t n, int32_t tree, int32_t r)
{
  if (tree == 0)
    return btree_parent(n, r);
  if (n % 2 == 0) {
    int32_t u = btree_parent(n, n - 1 - r);
    return u < 0 ? -1 : n - 1 - u;
  }
  int32_t u = btree_parent(n, (r - 1 + n) % n);
  return u < 0 ? -1 : (u + 1) % n;
}

int32_t hs__coll_dbtree_height(int32_t n)
{
  int32_t h = 0;
  for (int32_t t = 0; t < 2; t++)
    for (int32_t r = 0; r < n; r++) {
      int32_t d = 0;
      for (int32_t p = hs__coll_dbtree_parent(n, t, r); p >= 0; p = hs__coll_dbtree_parent(n, t, p))
        d++;
      h = HS_MAX(h, d);
    }
  return h;
}

static hs_status_t tree_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                              bool *has_phase)
{
  hs_status_t st = HS_OK;
  int32_t n = c->n;
  const int32_t *d = c->devices;
  *has_phase = phase < 2 && n > 1 && c->bytes > 0.0;
  if (!*has_phase)
    return HS_OK;
  double amax = 0.0;
  HS_CHECK(hs__builder_flow(b, c->bytes / 2.0));
  for (int32_t t = 0; t < 2; t++)
    for (int32_t r = 0; r < n; r++) {
      int32_t p = hs__coll_dbtree_parent(n, t, r);
      if (p < 0)
        continue;
      double lat = 0.0;
      if (phase == 0)
        HS_CHECK(hs__builder_path(b, d[r], d[p], &lat));
      else
        HS_CHECK(hs__builder_path(b, d[p], d[r], &lat));
      amax = HS_MAX(amax, lat);
    }
  b->latency_ns = (double)hs__coll_dbtree_height(n) * amax;
cleanup:
  return st;
}

static double tree_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_tree, paths, c);
}

const hs_coll_algo_t hs_coll_tree = {
    .name = "tree",
    .description = "double binary tree all-reduce (reduce then broadcast, pipelined)",
    .supports = tree_supports,
    .estimate_s = tree_estimate,
    .start = hs__coll_run,
    .build_phase = tree_build,
};
