/*
 * coll_nvls_tree.c - NCCL's NVLS-Tree all-reduce: NVLink SHARP inside each
 * node, a double binary tree over the nodes, one NIC rail per GPU. The
 * algorithm NCCL runs by default for an all-reduce across nodes of Hopper
 * NVSwitch GPUs (NCCL >= 2.18); explicit ("nvls_tree", hs_coll_algo_find),
 * and the per-call choice on groups whose GPU ports are all NVLS where its
 * estimate is the fastest (collective.c, choose_algo; docs/network.md,
 * "NVLS-Tree across nodes").
 *
 * What moves, per node of k ranks: the switch reduces the node's buffers
 * (multimem load-reduce: each GPU owns 1/k of the buffer, its port sends S
 * and receives S/k), each GPU sends its reduced chunk of S/k up the tree on
 * its own NIC (GPUDirect RDMA over PCIe, not its NVLink port), receives the
 * result chunk from the tree, and a multimem store spreads it to every GPU
 * of the node (its port sends S/k, receives S). Per GPU port and direction:
 * (k + 1) S / k, as NVLS inside one node (coll_nvls.c). Across nodes, rail j
 * (the j-th rank of every node) runs NCCL's double binary tree over the m
 * nodes on its chunk, each tree half of it: on every tree edge, child ->
 * parent (reduce) and parent -> child (broadcast), S / (2k) bytes per
 * sub-flow; on two nodes each node's NICs carry S per direction in all.
 *
 * Decomposition: ONE phase (NCCL pipelines the node's reduction, the tree
 * and the node's broadcast in chunks), two flows that run at once and end
 * the phase when the slower one ends:
 *   - NVLS: one coupled flow over every node's neighbour paths (rank j ->
 *     rank j+1 mod k inside the node), (k + 1) S / k bytes per sub-flow,
 *     times GBps / nvls_GBps on calibrated NVLS ports (coll_nvls.c);
 *   - tree: one coupled flow over every rail's tree edges, both directions,
 *     S / (2k) bytes per sub-flow; the edges skip the GPU ports (weight 0,
 *     as node_ring's rails) when every NIC on them has at least k rails,
 *     else they cross them (one NIC per node: its traffic through the
 *     sending GPU's port, as the topology routes it).
 * Latency: L = L_nvls + 2 h a_x, with L_nvls the ports' nvls_latency_ns
 * (calibrated; else the largest neighbour path latency), h the deeper
 * tree's height in edges (hs__coll_dbtree_height(m)) and a_x the largest
 * tree edge's path latency (up and down the tree, as NCCL's tuner counts
 * its trees' inter-node steps).
 *
 * Closed form, uncontended, on m = 2 nodes of k ranks with rails >= k
 * (NVLS port rate B_nvls, node NIC rate B_nic):
 *   T = L + max((k + 1) S / (k B_nvls), S / B_nic)
 * (tests/test_coll_formulas.c, test_nvls_tree). On a DGX H100 pair the NVLS
 * term binds: busbw 2(n-1)/n S / T -> 1.875 x 8/9 x 286.5 = 477.6 GB/s
 * against the 468.5 measured (nccl-tests, NCCL 2.26.2; docs/network.md).
 *
 * Invariants (else HS_EUNSUPPORTED naming the device): the group spans at
 * least two nodes, every node holds the same number k >= 2 of its ranks
 * (NCCL builds NVLS-Tree only then), and every path inside a node crosses
 * only NVLink SHARP GPU ports. All-reduce only.
 */
#include "coll_impl.h"

static bool nvls_tree_supports(hs_coll_op_t op) { return op == HS_COLL_ALLREDUCE; }


static hs_status_t nvls_tree_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                                   bool *has_phase)
{
  hs_status_t st = HS_OK;
  int32_t n = c->n;
  const int32_t *d = c->devices;
  double S = c->bytes;
  *has_phase = phase == 0 && n > 1 && S > 0.0;
  if (!*has_phase)
    return HS_OK;
  hs_coll_layout_t lay;
  HS_CHECK(hs__coll_node_layout(b, c, &lay));
  const int32_t *order = lay.order, *start = lay.start;
  int32_t m = lay.m, k = start[1] - start[0];
  if (m < 2)
    return hs_error_set(b->err, HS_EUNSUPPORTED,
                        "coll.devices: nvls_tree all-reduce runs across nodes (all %d devices are "
                        "on one node: nvls runs inside one)",
                        n);
  if (k < 2)
    return hs_error_set(b->err, HS_EUNSUPPORTED,
                        "coll.devices: nvls_tree all-reduce needs at least 2 ranks per node "
                        "(device %d's node holds 1: with one GPU per node there is nothing for "
                        "NVLink SHARP to reduce)",
                        d[order[start[0]]]);
  for (int32_t g = 1; g < m; g++)
    if (start[g + 1] - start[g] != k)
      return hs_error_set(b->err, HS_EUNSUPPORTED,
                          "coll.devices: nvls_tree all-reduce needs the same number of ranks on "
                          "every node (device %d's node holds %d, device %d's %d)",
                          d[order[start[0]]], k, d[order[start[g]]], start[g + 1] - start[g]);

  /* NVLS inside every node */
  double scale = 1.0, nvls_lat = 0.0, a_in = 0.0, lat = 0.0;
  bool calibrated = true;
  for (int32_t g = 0; g < m; g++)
    for (int32_t j = 0; j < k; j++) {
      int32_t i = order[start[g] + j], e = order[start[g] + (j + 1) % k];
      HS_CHECK(hs__coll_nvls_path(b, "nvls_tree", i, d[i], d[e], &scale, &nvls_lat, &calibrated));
    }
  if (!calibrated)
    scale = 1.0;
  HS_CHECK(hs__builder_flow(b, (k + 1.0) * S / k * scale));
  for (int32_t g = 0; g < m; g++)
    for (int32_t j = 0; j < k; j++) {
      HS_CHECK(hs__builder_path(b, d[order[start[g] + j]], d[order[start[g] + (j + 1) % k]], &lat));
      a_in = HS_MAX(a_in, lat);
    }

  /* rails: the tree edges bypass the GPU ports when every NIC on them has
   * k rails or more */
  int32_t w_gpu = 0;
  for (int32_t g = 0; g < m && w_gpu == 0; g++) {
    int32_t rails = 1, up = hs__coll_dbtree_parent(m, 0, g);
    if (up < 0)
      continue;
    HS_CHECK(hs__builder_nic_rails(b, d[order[start[g]]], d[order[start[up]]], &rails));
    if (rails < k)
      w_gpu = 1;
  }
  double a_x = 0.0;
  HS_CHECK(hs__builder_flow(b, S / (2.0 * k)));
  for (int32_t t = 0; t < 2; t++)
    for (int32_t g = 0; g < m; g++) {
      int32_t up = hs__coll_dbtree_parent(m, t, g);
      if (up < 0)
        continue;
      for (int32_t j = 0; j < k; j++) {
        int32_t ch = d[order[start[g] + j]], pa = d[order[start[up] + j]];
        HS_CHECK(hs__builder_path_w(b, ch, pa, w_gpu, 1, 1, &lat));
        a_x = HS_MAX(a_x, lat);
        HS_CHECK(hs__builder_path_w(b, pa, ch, w_gpu, 1, 1, &lat));
        a_x = HS_MAX(a_x, lat);
      }
    }
  double l_nvls = calibrated ? nvls_lat : a_in;
  b->latency_ns = l_nvls + 2.0 * hs__coll_dbtree_height(m) * a_x;
cleanup:
  return st;
}

static double nvls_tree_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_nvls_tree, paths, c);
}

const hs_coll_algo_t hs_coll_nvls_tree = {
    .name = "nvls_tree",
    .description = "NCCL's NVLS-Tree all-reduce: NVLink SHARP inside each node, a double binary "
                   "tree over the nodes on every GPU's NIC rail",
    .supports = nvls_tree_supports,
    .estimate_s = nvls_tree_estimate,
    .start = hs__coll_run,
    .build_phase = nvls_tree_build,
};
