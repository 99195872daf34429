/*
 * coll_node_tree.c - NCCL's tree across nodes: an all-reduce over a group
 * that spans several nodes as chains inside the nodes and a double binary
 * tree over the nodes, reduce and broadcast pipelined together
 * (docs/network.md "Multi-node collectives").
 *
 * Layout. The group's devices are taken node by node (nodes in order of
 * first appearance in c->devices, the order of c->devices inside a node;
 * nodes may hold different numbers of ranks). Tree t in {0, 1} is NCCL's
 * double binary tree over the m nodes (hs__coll_dbtree_parent: tree 1 is
 * tree 0 mirrored, or shifted for odd m). Inside node g with ranks
 * r_0..r_{k_g-1}, tree 0 runs the chain r_{k-1} -> ... -> r_0 with head r_0
 * and tree 1 the reversed chain with head r_{k-1} (NCCL splits the node's
 * two trees over different GPUs so that one GPU does not carry both trees'
 * inter-node traffic). As in NCCL's default balanced tree pattern
 * (NCCL_TOPO_PATTERN_BALANCED_TREE: tree parent and one child on the first
 * GPU of the chain, the second child on the last), a node's head talks to
 * its parent node and to its first child node (children in increasing node
 * index); its second child node attaches to the other end of the chain. A
 * child always attaches through its own head.
 *
 * Decomposition: ONE phase. NCCL pipelines the tree all-reduce in chunks,
 * and the broadcast of early chunks runs while later chunks are still being
 * reduced, so every edge carries its reduce direction and its broadcast
 * direction at once. Each tree carries half the buffer: one coupled flow of
 * S/2 bytes per sub-flow over, for both trees, every chain edge child ->
 * parent (reduce) and parent -> child (broadcast) and every inter-node edge
 * child head -> parent head and back. Latency, as NCCL's tuning model counts
 * the tree (tuning.cc: 2 ((nRanks/nNodes - 1) intraLat + log2(nNodes)
 * interLat)), with the tree's height in place of log2:
 *   L = 2 ((k_max - 1) a_in + h a_x)
 * k_max the largest node's ranks, h the deeper inter-node tree's height in
 * edges (hs__coll_dbtree_height(m): 1 for m = 2, 2 for m = 3 or 4), a_in /
 * a_x the largest chain / inter-node edge path latency.
 *
 * Closed form, uncontended, GPU ports B_in (hetsim routes a node's NIC
 * traffic through the sending GPU's port, as its topology does), one NIC of
 * B_nic per node, T = L + (S/2) max_l w_l / B_l with w_l the sub-flows on l:
 *   m = 2: a NIC carries one edge of each tree each way (w = 2), a GPU port
 *          w = 4 inside a chain of k >= 3, 3 for k = 2, 2 for k = 1:
 *          T = L + max(w_gpu S / (2 B_in), S / B_nic)
 *   m >= 3: a node inner in one tree with two children carries up to
 *          4 sub-flows each way on its NIC (3 on 3 nodes): T = L + 2 S /
 *          B_nic when the NIC binds, so the ring (2(n-1)/n S / B_nic) is
 *          then faster; a GPU port carries at most 4 sub-flows each way
 *          (the balanced tree splits a node's edges over both chain ends).
 * On railed nodes (rail_scale below) each inter-node edge is
 * spread over the NIC rails of its nodes' ranks, which adds a third term
 * on m = 2 nodes of k ranks, R rails of B_nic / R: R S / (k B_nic).
 * So on two nodes each NIC moves S each way where the ring moves
 * 2(n-1)/n S: the busbw nccl-tests reports can reach 2(n-1)/n B_nic.
 * All-reduce only (NCCL has no tree reduce-scatter or all-gather).
 */
#include "coll_impl.h"

static bool node_tree_supports(hs_coll_op_t op) { return op == HS_COLL_ALLREDUCE; }

/* Index into c->devices of node g's head in tree t. */
static int32_t head_of(const int32_t *order, const int32_t *start, int32_t g, int32_t t)
{
  return t == 0 ? order[start[g]] : order[start[g + 1] - 1];
}

/* Rails (docs/network.md "Rail links"). NCCL's tree channels leave a node
 * through the NICs of the group's GPUs on it, the trees' heads rotating
 * over them; hetsim's edge from head to head stands for them all, so on
 * railed nodes (*railed) its traffic is spread over those rails: node g's
 * k_g ranks' rails carry 1/k_g of it each. Integer link weights need a
 * common scale: *K = lcm of the k_g (sub-flow bytes divided by K, every
 * other weight multiplied by K). *K = 1 and *railed false when no node of
 * the group has rails (the weights of the unrailed tree, bit for bit) or
 * the lcm would pass 5040 (the node's NIC link then stands for the rails). */
static hs_status_t rail_scale(hs_coll_builder_t *b, const hs_coll_t *c, const hs_coll_layout_t *lay,
                              int32_t *K, bool *railed_out)
{
  *K = 1;
  *railed_out = false;
  if (lay->m < 2)
    return HS_OK;
  const int32_t *d = c->devices, *order = lay->order, *start = lay->start;
  bool railed = false;
  for (int32_t g = 0; g < lay->m && !railed; g++) {
    int32_t rails = 1, other = g == 0 ? 1 : 0;
    hs_status_t st = hs__builder_nic_rails(b, d[order[start[g]]], d[order[start[other]]], &rails);
    if (st != HS_OK)
      return st;
    railed = rails > 1;
  }
  if (!railed)
    return HS_OK;
  int64_t l = 1;
  for (int32_t g = 0; g < lay->m; g++) {
    int64_t k = start[g + 1] - start[g], x = l, y = k;
    while (y) {
      int64_t r = x % y;
      x = y;
      y = r;
    }
    l = l / x * k;
    if (l > 5040)
      return HS_OK;
  }
  *K = (int32_t)l;
  *railed_out = true;
  return HS_OK;
}

/* Adds to the edge from `from` (on layout node gf) to `to` (on node gt)
 * the rails of both nodes' ranks: K / k_gf on each sending rail, K / k_gt
 * on each receiving one. */
static hs_status_t spread_rails(hs_coll_builder_t *b, const hs_coll_t *c, const hs_coll_layout_t *lay,
                                int32_t gf, int32_t gt, int32_t from, int32_t to, int32_t K)
{
  hs_status_t st = HS_OK;
  const int32_t *d = c->devices, *order = lay->order, *start = lay->start;
  int32_t kf = start[gf + 1] - start[gf], kt = start[gt + 1] - start[gt];
  for (int32_t j = start[gf]; j < start[gf + 1] && st == HS_OK; j++)
    st = hs__builder_rails(b, d[order[j]], to, K / kf, 0);
  for (int32_t j = start[gt]; j < start[gt + 1] && st == HS_OK; j++)
    st = hs__builder_rails(b, from, d[order[j]], 0, K / kt);
  return st;
}

static hs_status_t node_tree_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                                   bool *has_phase)
{
  hs_status_t st = HS_OK;
  int32_t n = c->n;
  const int32_t *d = c->devices;
  *has_phase = phase == 0 && n > 1 && c->bytes > 0.0;
  if (!*has_phase)
    return HS_OK;
  hs_coll_layout_t lay;
  HS_CHECK(hs__coll_node_layout(b, c, &lay));
  const int32_t *order = lay.order, *start = lay.start;
  int32_t m = lay.m;
  int32_t K = 1;
  bool railed = false;
  HS_CHECK(rail_scale(b, c, &lay, &K, &railed));
  HS_CHECK(hs__builder_flow(b, c->bytes / 2.0 / K));
  double a_in = 0.0, a_x = 0.0, lat = 0.0;
  int32_t k_max = 0;
  for (int32_t g = 0; g < m; g++) {
    int32_t k = start[g + 1] - start[g];
    k_max = HS_MAX(k_max, k);
    /* chain edges between neighbours j, j+1: tree 0 reduces toward r_0,
     * tree 1 toward r_{k-1}; each tree uses both directions (reduce and
     * broadcast), so every edge gets both directions twice */
    for (int32_t j = 0; j + 1 < k; j++) {
      int32_t p = d[order[start[g] + j]], q = d[order[start[g] + j + 1]];
      for (int32_t t = 0; t < 2; t++) {
        HS_CHECK(hs__builder_path_w(b, p, q, K, K, K, &lat));
        a_in = HS_MAX(a_in, lat);
        HS_CHECK(hs__builder_path_w(b, q, p, K, K, K, &lat));
        a_in = HS_MAX(a_in, lat);
      }
    }
  }
  /* NCCL's balanced tree: a node's parent and first child attach to the
   * head of the tree's chain, its second child to the chain's other end.
   * nth[] counts the children seen per node (the layout's scratch). */
  int32_t *nth = lay.scratch;
  for (int32_t t = 0; t < 2 && m > 1; t++) {
    for (int32_t g = 0; g < m; g++)
      nth[g] = 0;
    for (int32_t g = 0; g < m; g++) {
      int32_t up = hs__coll_dbtree_parent(m, t, g);
      if (up < 0)
        continue;
      int32_t ch = d[head_of(order, start, g, t)];
      int32_t pa = d[head_of(order, start, up, nth[up]++ == 0 ? t : 1 - t)];
      HS_CHECK(hs__builder_path_w(b, ch, pa, K, 0, K, &lat));
      a_x = HS_MAX(a_x, lat);
      HS_CHECK(hs__builder_path_w(b, pa, ch, K, 0, K, &lat));
      a_x = HS_MAX(a_x, lat);
      if (railed) {
        HS_CHECK(spread_rails(b, c, &lay, g, up, ch, pa, K));
        HS_CHECK(spread_rails(b, c, &lay, up, g, pa, ch, K));
      }
    }
  }
  int32_t h = m > 1 ? hs__coll_dbtree_height(m) : 0;
  b->latency_ns = 2.0 * ((double)(k_max - 1) * a_in + (double)h * a_x);
cleanup:
  return st;
}

static double node_tree_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_node_tree, paths, c);
}

const hs_coll_algo_t hs_coll_node_tree = {
    .name = "node_tree",
    .description = "NCCL's tree across nodes: all-reduce as chains inside nodes and a double "
                   "binary tree over nodes, reduce and broadcast pipelined together",
    .supports = node_tree_supports,
    .estimate_s = node_tree_estimate,
    .start = hs__coll_run,
    .build_phase = node_tree_build,
};
