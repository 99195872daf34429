/*
 * coll_hier.c - hierarchical (two-level) all-reduce.
 *
 * The group's devices are split by node (hs__coll_nodes), keeping the order
 * of c->devices inside each node and ordering nodes by first appearance;
 * every node must hold the same number k of ranks (else HS_EUNSUPPORTED).
 * With m nodes, S = c->bytes, a_in / a_x the largest intra / inter
 * neighbour path latency:
 *   1. intra-node reduce-scatter: a ring in every node, all nodes as one
 *      coupled flow: latency (k-1) a_in, (k-1) S / k bytes
 *   2. inter-node all-reduce of the S/k shards: k rings (one per local rank
 *      j, over the j-th rank of every node) as one coupled flow: latency
 *      2(m-1) a_x, 2(m-1) (S/k) / m bytes
 *   3. intra-node all-gather: as 1
 * Phases that move nothing (k = 1: 1 and 3; m = 1: 2) are skipped. With
 * GPU ports of bandwidth B_in and one NIC of bandwidth B_nic per node (the k
 * rings all cross it: weight k):
 *   T = 2(k-1)(a_in + S/(k B_in)) + 2(m-1) a_x
 *       + 2(m-1)/m (S/k) max(k / B_nic, 1 / B_in).
 */
#include "coll_impl.h"

#include <string.h>

static bool hier_supports(hs_coll_op_t op) { return op == HS_COLL_ALLREDUCE; }

/* Node layout in b->tmp: pos[g*k + j] = index into devices of local rank j
 * of node g. */
static hs_status_t layout(hs_coll_builder_t *b, const hs_coll_t *c, int32_t *k_out,
                          int32_t *m_out, const int32_t **pos_out)
{
  int32_t n = c->n;
  hs_status_t st = hs__builder_tmp(b, 4 * (size_t)n);
  if (st != HS_OK)
    return st;
  int32_t *node = b->tmp, *group = b->tmp + n, *count = b->tmp + 2 * n, *pos = b->tmp + 3 * n;
  if ((st = hs__coll_nodes(b, c->devices, n, node)) != HS_OK)
    return st;
  /* group[i]: index of devices[i]'s node in order of first appearance;
   * count[g] its ranks; group_node[g] (in pos[] for now) its node id */
  int32_t m = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t g = -1;
    if (i > 0 && node[i] == node[i - 1])
      g = group[i - 1];
    for (int32_t q = 0; g < 0 && q < m; q++)
      if (pos[q] == node[i])
        g = q;
    if (g < 0) {
      g = m++;
      pos[g] = node[i];
      count[g] = 0;
    }
    group[i] = g;
    count[g]++;
  }
  int32_t k = count[0];
  for (int32_t g = 1; g < m; g++)
    if (count[g] != k)
      return hs_error_set(b->err, HS_EUNSUPPORTED,
                          "coll.devices: hierarchical all-reduce needs the same number of "
                          "ranks on every node (node %d has %d, node %d has %d)",
                          pos[0], k, pos[g], count[g]);
  for (int32_t g = 0; g < m; g++)
    count[g] = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t g = group[i];
    pos[g * k + count[g]++] = i;
  }
  *k_out = k;
  *m_out = m;
  *pos_out = pos;
  return HS_OK;
}

enum { STEP_INTRA_RS, STEP_INTER_AR, STEP_INTRA_AG };

static hs_status_t hier_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                              bool *has_phase)
{
  hs_status_t st = HS_OK;
  const int32_t *d = c->devices, *pos = NULL;
  double S = c->bytes;
  int32_t k = 0, m = 0;
  *has_phase = false;
  if (c->n < 2 || !(S > 0.0) || phase > 2)
    return HS_OK;
  HS_CHECK(layout(b, c, &k, &m, &pos));
  int32_t steps[3], n_steps = 0;
  if (k > 1)
    steps[n_steps++] = STEP_INTRA_RS;
  if (m > 1)
    steps[n_steps++] = STEP_INTER_AR;
  if (k > 1)
    steps[n_steps++] = STEP_INTRA_AG;
  if (phase >= n_steps)
    return HS_OK;
  *has_phase = true;
  double amax = 0.0, lat = 0.0;
  if (steps[phase] == STEP_INTER_AR) {
    HS_CHECK(hs__builder_flow(b, 2.0 * (m - 1) * (S / k) / m));
    for (int32_t j = 0; j < k; j++)
      for (int32_t g = 0; g < m; g++) {
        HS_CHECK(hs__builder_path(b, d[pos[g * k + j]], d[pos[((g + 1) % m) * k + j]], &lat));
        amax = HS_MAX(amax, lat);
      }
    b->latency_ns = 2.0 * (m - 1) * amax;
  } else {
    HS_CHECK(hs__builder_flow(b, (double)(k - 1) * S / k));
    for (int32_t g = 0; g < m; g++)
      for (int32_t j = 0; j < k; j++) {
        HS_CHECK(hs__builder_path(b, d[pos[g * k + j]], d[pos[g * k + (j + 1) % k]], &lat));
        amax = HS_MAX(amax, lat);
      }
    b->latency_ns = (double)(k - 1) * amax;
  }
cleanup:
  return st;
}

static double hier_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_hier, paths, c);
}

const hs_coll_algo_t hs_coll_hier = {
    .name = "hierarchical",
    .description = "two-level all-reduce: intra-node reduce-scatter, inter-node all-reduce "
                   "per local rank, intra-node all-gather",
    .supports = hier_supports,
    .estimate_s = hier_estimate,
    .start = hs__coll_run,
    .build_phase = hier_build,
};
