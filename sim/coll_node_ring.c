/*
 * coll_node_ring.c - NCCL's ring across nodes: all-reduce, reduce-scatter
 * and all-gather over a group that spans several nodes, as one pipelined
 * ring over all its ranks (docs/network.md "Multi-node collectives").
 *
 * NCCL builds its rings over every rank of the communicator, ordered so that
 * the ranks of a node are contiguous (each ring leaves a node once, through
 * one NIC; its channels use different NICs, which hetsim's one NIC link per
 * node aggregates), splits the buffer into chunks and pipelines them around
 * the ring, so every link works at once and the slowest one sets the rate.
 * This file takes the group's devices node by node (nodes in order of first
 * appearance in c->devices, the order of c->devices inside each node; nodes
 * may hold different numbers of ranks) and runs the ring algorithm's single
 * phase over that order: one coupled flow over the n neighbour paths, of
 * 2(n-1) S / n bytes per sub-flow (all-reduce) or (n-1) S / n
 * (reduce-scatter, all-gather). The ring crosses each node's NIC once and
 * each GPU port once, so uncontended, with GPU ports B_in and NICs B_nic:
 *   all-reduce                  T = L + 2(n-1)/n S max(1/B_in, 1/B_nic)
 *   reduce-scatter, all-gather  T = L + (n-1)/n S max(1/B_in, 1/B_nic)
 * Latency L, as NCCL's tuning model counts a ring's steps (tuning.cc: the
 * ring's s = 2(n-1) (resp. n-1) steps, of which s_x = 2(m-1) (resp. m-1)
 * cross nodes, m nodes):
 *   L = (s - s_x) a_in + s_x a_x
 * with a_in / a_x the largest same-node / cross-node neighbour path
 * latency. With one rank per node (m = n) this is the ring's 2(n-1) a_x
 * exactly.
 *
 * Rails. On a node whose NIC port is r NICs, one per GPU (DGX: 8 x HDR or
 * NDR, each behind its GPU's PCIe switch; the cluster's nic "rails"), NCCL
 * builds one ring per channel and lets each channel leave the node through
 * a different NIC, entered from that NIC's own GPU over PCIe (GPUDirect
 * RDMA), not over the GPU's NVLink port. With g ranks of the group on every
 * node, g >= 2 and r >= g, each GPU is the boundary of 1/g of the channels:
 * its NVLink port carries (g-1)/g of the ring's traffic, the node's NICs
 * all of it once. This file builds that average as one ring with weights
 * (sub-flow bytes / g; same-node hops weight g-1; the cross-node hop
 * weight g on NIC and fabric links, none on the two GPU ports, and 1 on
 * the NIC rail of each of the g ranks of either node, as the channels use
 * only the NICs of the group's own GPUs):
 *   all-reduce  T = L + 2(n-1)/n S max((g-1)/g / B_in, 1/B_nic, R/(g B_nic))
 * with R = min(rails, GPUs of the node) rails of B_nic / R each (the last
 * term binds when the group holds fewer GPUs of a node than it has NICs:
 * a TP-2 plan's data-parallel group uses half of a DGX's eight NICs).
 * A single NIC (r = 1), nodes holding different numbers of ranks, or r < g
 * (some GPUs never a boundary, their ports carry everything) keep the
 * unweighted ring above.
 */
#include "coll_impl.h"

static bool node_ring_supports(hs_coll_op_t op)
{
  return op == HS_COLL_ALLREDUCE || op == HS_COLL_REDUCE_SCATTER || op == HS_COLL_ALLGATHER;
}

/* *g_out = g when every one of the m >= 2 nodes holds g >= 2 ranks of the
 * ring and every cross-node hop's NICs have at least g rails (the rail
 * rotation of the header), else 1. `order` is node by node. O(n). */
static hs_status_t rail_ranks(hs_coll_builder_t *b, const hs_coll_t *c, const int32_t *order,
                              const int32_t *node, int32_t m, int32_t *g_out)
{
  int32_t n = c->n;
  *g_out = 1;
  if (m < 2 || n % m != 0 || n / m < 2)
    return HS_OK;
  int32_t g = n / m;
  for (int32_t i = 0; i < n; i += g) /* each node's ranks are contiguous in order */
    if (node[order[i]] != node[order[i + g - 1]] || (i + g < n && node[order[i + g]] == node[order[i]]))
      return HS_OK;
  for (int32_t i = g - 1; i < n; i += g) {
    int32_t rails = 1;
    hs_status_t st = hs__builder_nic_rails(b, c->devices[order[i]], c->devices[order[(i + 1) % n]], &rails);
    if (st != HS_OK || rails < g)
      return st;
  }
  *g_out = g;
  return HS_OK;
}

static hs_status_t node_ring_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                                   bool *has_phase)
{
  hs_status_t st = HS_OK;
  int32_t n = c->n, m = 0;
  double S = c->bytes;
  const int32_t *d = c->devices;
  *has_phase = phase == 0 && n > 1 && S > 0.0;
  if (!*has_phase)
    return HS_OK;
  hs_coll_layout_t lay;
  HS_CHECK(hs__coll_node_layout(b, c, &lay));
  const int32_t *order = lay.order, *node = lay.node;
  m = lay.m;
  double steps = c->op == HS_COLL_ALLREDUCE ? 2.0 * (n - 1) : (double)(n - 1);
  int32_t g = 1;
  HS_CHECK(rail_ranks(b, c, order, node, m, &g));
  HS_CHECK(hs__builder_flow(b, steps * S / n / g));
  double a_in = 0.0, a_x = 0.0;
  for (int32_t i = 0; i < n; i++) {
    int32_t p = order[i], q = order[(i + 1) % n];
    double lat = 0.0;
    bool same = node[p] == node[q];
    int32_t w_port = g == 1 ? 1 : same ? g - 1 : 0, w_net = g == 1 ? 1 : same ? g - 1 : g;
    HS_CHECK(hs__builder_path_w(b, d[p], d[q], w_port, 0, w_net, &lat));
    /* the hop's channels leave through the NICs of all g ranks of p's node
     * and arrive through those of q's node (each 1/g of the traffic) */
    for (int32_t j = 0; g > 1 && !same && j < g; j++) {
      HS_CHECK(hs__builder_rails(b, d[order[i / g * g + j]], d[q], 1, 0));
      HS_CHECK(hs__builder_rails(b, d[p], d[order[(i + 1) % n / g * g + j]], 0, 1));
    }
    if (same)
      a_in = HS_MAX(a_in, lat);
    else
      a_x = HS_MAX(a_x, lat);
  }
  /* m = 1: a plain ring inside one node (no inter-node hop) */
  double inter = m < 2 ? 0.0 : c->op == HS_COLL_ALLREDUCE ? 2.0 * (m - 1) : (double)(m - 1);
  b->latency_ns = (steps - inter) * a_in + inter * a_x;
cleanup:
  return st;
}

static double node_ring_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_node_ring, paths, c);
}

const hs_coll_algo_t hs_coll_node_ring = {
    .name = "node_ring",
    .description = "NCCL's ring across nodes: all-reduce / reduce-scatter / all-gather as one "
                   "pipelined ring over all ranks, node by node (the slowest link sets the rate)",
    .supports = node_ring_supports,
    .estimate_s = node_ring_estimate,
    .start = hs__coll_run,
    .build_phase = node_ring_build,
};
