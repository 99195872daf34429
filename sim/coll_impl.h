/*
 * coll_impl.h - private to the collective files of sim/ (collective.c,
 * coll_*.c): the phase builder the algorithms describe phases into, the
 * generic pieces every algorithm uses, and the two things the collective
 * layer needs from a network (its engine and its collective state). The
 * network's own internals (net_impl.h) are not visible here.
 */
#ifndef HS_COLL_IMPL_H
#define HS_COLL_IMPL_H

#include "hs_net.h"
#include "net_colls.h"
#include "net_seam.h"

/* ---- phase builder -------------------------------------------------------
 * An algorithm describes one phase as a latency wait and up to any number of
 * coupled flows, each a multiset of device-to-device paths; the builder
 * merges each flow's links into (link, weight) hops, sorted by link. */
struct hs_coll_builder {
  const hs_net_paths_t *paths;
  hs_error_t *err;            /* may be NULL */
  double latency_ns;          /* set by the algorithm */
  int32_t n_flows;
  double *bytes;              /* per flow */
  int32_t *flow_off;          /* n_flows + 1 into hops */
  hs_flow_hop_t *hops;
  size_t n_hops;
  hs_flow_hop_t *raw;         /* (link, weight) of the open flow, unmerged */
  size_t n_raw;
  size_t cap_flows, cap_off, cap_hops, cap_raw;
  int32_t *tmp;               /* scratch for algorithms (node layout) */
  size_t cap_tmp;
  bool open;
  /* The call's size (c->bytes), for links with per-size figures
   * (hs_link_t.ranges): their range's latency replaces the link's in path
   * latencies, and a flow crossing them carries bytes scaled so that its
   * uncontended time is that of the range's bandwidths. */
  double size_bytes;
  bool ranged;                /* the open flow crosses a link with ranges */
  /* The open flow: whether every link it crosses is a GPU port of a PCIe
   * node (hs_link_t.pcie_path), and the slowest of them (GBps). */
  bool flow_pcie;
  double flow_min_GBps;
};

void hs__builder_init(hs_coll_builder_t *b, const hs_net_paths_t *paths, hs_error_t *err);
void hs__builder_destroy(hs_coll_builder_t *b);
/* Empties b for the next phase. O(1). */
void hs__builder_reset(hs_coll_builder_t *b);
/* Opens a new coupled flow of `bytes` per sub-flow. */
hs_status_t hs__builder_flow(hs_coll_builder_t *b, double bytes);
/* Adds the path a -> d to the open flow; *lat_ns (may be NULL) gets its
 * latency. Errors name the devices. O(path length). */
hs_status_t hs__builder_path(hs_coll_builder_t *b, int32_t a, int32_t d, double *lat_ns);
/* The same with weights: the path's GPU ports (GPU_UP, GPU_DOWN) count
 * w_gpu times, its NIC rails (RAIL_UP, RAIL_DOWN: the sender's and the
 * receiver's own NIC on railed nodes) w_rail times, its other links w_net
 * times (0 leaves a link out: a hop that does not cross it, as a NIC
 * reached over PCIe bypasses the GPU's NVLink port, or a ring whose
 * channels leave the node over every NIC in turn rather than its own). */
hs_status_t hs__builder_path_w(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t w_gpu, int32_t w_rail,
                               int32_t w_net, double *lat_ns);
/* On a PCIe node (the open flow's links all PCIe GPU ports): NCCL's ring
 * protocol pick for a ring call of n ranks and n_steps steps whose per-step
 * path latency is path_lat_ns (coll_proto.c): sets b->latency_ns to the
 * protocol's latency plus n_steps x path_lat_ns and scales the open flow's
 * bytes by 1 / bw_factor. Elsewhere sets b->latency_ns = n_steps x
 * path_lat_ns, as before. O(1). */
void hs__builder_ring_protocol(hs_coll_builder_t *b, int32_t n, int32_t n_steps, double path_lat_ns);

/* Closes the open flow (merging its links). Called by hs__builder_flow and
 * before the phase is used. O(k log k) for k raw links. */
hs_status_t hs__builder_close(hs_coll_builder_t *b);
/* Scratch of n int32 in b->tmp. */
hs_status_t hs__builder_tmp(hs_coll_builder_t *b, size_t n);
/* Latency of the path a -> d (ns). */
hs_status_t hs__builder_latency(hs_coll_builder_t *b, int32_t a, int32_t d, double *lat_ns);
/* Adds to the open flow only the NIC rails of the path a -> d: the
 * sender's (RAIL_UP) w_up times, the receiver's (RAIL_DOWN) w_down times;
 * nothing on a path without rails (inside a node, or nodes of one NIC).
 * A hop whose traffic is spread over several GPUs' NICs (node_ring's
 * channels) adds each of them this way. O(path length). */
hs_status_t hs__builder_rails(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t w_up, int32_t w_down);
/* The fewest rails (hs_link_t.rails) of the NIC links on the path a -> d;
 * 1 when it crosses no NIC. */
hs_status_t hs__builder_nic_rails(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t *rails);

/* Node index of every device of c into out[0..n) (in the builder's path
 * source's terms; see hs_net_paths_t.node_of). O(n) path queries. */
hs_status_t hs__coll_nodes(hs_coll_builder_t *b, const int32_t *devices, int32_t n,
                           int32_t *out);

/* The group's ranks node by node: nodes in order of first appearance in
 * c->devices, the order of c->devices inside each node. order[start[g] ..
 * start[g+1]) are the indices into c->devices of node g's ranks, node[i]
 * the node of c->devices[i]; scratch has n int32 free for the caller. All
 * live in b->tmp (4n + 1 int32) until the next hs__builder_tmp. O(n m). */
typedef struct hs_coll_layout {
  const int32_t *node, *order, *start;
  int32_t *scratch;
  int32_t m;
} hs_coll_layout_t;
hs_status_t hs__coll_node_layout(hs_coll_builder_t *b, const hs_coll_t *c, hs_coll_layout_t *out);

/* For the NVLink SHARP algorithms (coll_nvls.c, coll_nvls_tree.c): HS_OK
 * when the path d -> e (devices[i] to its neighbour) crosses only NVLS GPU
 * ports, else HS_EUNSUPPORTED naming `algo`, the devices and the link;
 * raises *scale to the ports' GBps / nvls_GBps and *lat_ns to their
 * nvls_latency_ns (*calibrated false when a port lacks either). O(path). */
hs_status_t hs__coll_nvls_path(hs_coll_builder_t *b, const char *algo, int32_t i, int32_t d, int32_t e,
                               double *scale, double *lat_ns, bool *calibrated);

/* Generic pieces every algorithm's type object uses. */
hs_status_t hs__coll_run(hs_net_t *net, hs_coll_t *c);
double hs__coll_estimate(const hs_coll_algo_t *algo, const hs_net_paths_t *paths,
                         const hs_coll_t *c);

/* NCCL's double binary tree over ranks 0..n-1 (coll_tree.c): the parent of
 * rank r in tree 0 or 1, -1 for the root; and the deeper tree's height in
 * edges. O(log n) and O(n log n). */
int32_t hs__coll_dbtree_parent(int32_t n, int32_t tree, int32_t r);
int32_t hs__coll_dbtree_height(int32_t n);

extern const hs_coll_algo_t hs_coll_ring;
extern const hs_coll_algo_t hs_coll_tree;
extern const hs_coll_algo_t hs_coll_hier;
extern const hs_coll_algo_t hs_coll_node_ring;
extern const hs_coll_algo_t hs_coll_node_tree;
extern const hs_coll_algo_t hs_coll_nvls;
extern const hs_coll_algo_t hs_coll_nvls_tree;
extern const hs_coll_algo_t hs_coll_direct;

#endif /* HS_COLL_IMPL_H */
