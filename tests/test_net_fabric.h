/*
 * test_net_fabric.h - a tiny hand-built fabric for the network and
 * collective tests (they must not depend on clusters/): `nodes` nodes of
 * `per_node` GPUs; every GPU has an up and a down port to its node switch,
 * every node a NIC up and down to a non-blocking fabric. Paths:
 *   same node:  gpu_up(a), gpu_down(b)
 *   other node: gpu_up(a), nic_up(node a), nic_down(node b), gpu_down(b)
 * and a path's latency is the sum of its links' latency_ns, as in the
 * topology. Link kinds and owners follow hs_clusters.h (NIC_UP owner =
 * node), which hs__coll_nodes relies on to find nodes.
 */
#ifndef TEST_NET_FABRIC_H
#define TEST_NET_FABRIC_H

#include "hs_net.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct tfab {
  hs_link_t *links;
  size_t n_links;
  int nodes, per_node;
} tfab_t;

static inline int32_t tfab_up(const tfab_t *f, int32_t d) { return 2 * d; }
static inline int32_t tfab_down(const tfab_t *f, int32_t d) { return 2 * d + 1; }
static inline int32_t tfab_nic_up(const tfab_t *f, int32_t node)
{
  return 2 * f->nodes * f->per_node + 2 * node;
}
static inline int32_t tfab_nic_down(const tfab_t *f, int32_t node)
{
  return tfab_nic_up(f, node) + 1;
}

static inline void tfab_link(hs_link_t *l, hs_link_kind_t kind, int32_t owner, double GBps,
                             double lat_ns)
{
  memset(l, 0, sizeof *l);
  l->kind = kind;
  l->owner = owner;
  l->GBps = GBps;
  l->latency_ns = lat_ns;
  snprintf(l->label, sizeof l->label, "%d.%d", (int)kind, (int)owner);
}

/* Port latencies are per link: a same-node path has latency 2 * gpu_lat_ns. */
static inline void tfab_build(tfab_t *f, int nodes, int per_node, double gpu_GBps,
                              double gpu_lat_ns, double nic_GBps, double nic_lat_ns)
{
  f->nodes = nodes;
  f->per_node = per_node;
  f->n_links = (size_t)(2 * nodes * per_node + 2 * nodes);
  f->links = calloc(f->n_links, sizeof *f->links);
  for (int d = 0; d < nodes * per_node; d++) {
    tfab_link(&f->links[tfab_up(f, d)], HS_LINK_GPU_UP, d, gpu_GBps, gpu_lat_ns);
    tfab_link(&f->links[tfab_down(f, d)], HS_LINK_GPU_DOWN, d, gpu_GBps, gpu_lat_ns);
  }
  for (int n = 0; n < nodes; n++) {
    tfab_link(&f->links[tfab_nic_up(f, n)], HS_LINK_NIC_UP, n, nic_GBps, nic_lat_ns);
    tfab_link(&f->links[tfab_nic_down(f, n)], HS_LINK_NIC_DOWN, n, nic_GBps, nic_lat_ns);
  }
}

static inline void tfab_free(tfab_t *f) { free(f->links); }

static inline hs_status_t tfab_path(void *ctx, int32_t a, int32_t b, hs_path_t *out)
{
  const tfab_t *f = ctx;
  int32_t n_dev = f->nodes * f->per_node;
  if (a < 0 || b < 0 || a >= n_dev || b >= n_dev)
    return HS_ENOTFOUND;
  out->n = 0;
  if (a != b) {
    out->links[out->n++] = tfab_up(f, a);
    if (a / f->per_node != b / f->per_node) {
      out->links[out->n++] = tfab_nic_up(f, a / f->per_node);
      out->links[out->n++] = tfab_nic_down(f, b / f->per_node);
    }
    out->links[out->n++] = tfab_down(f, b);
  }
  out->latency_ns = 0.0;
  out->bottleneck_GBps = INFINITY;
  for (int32_t i = 0; i < out->n; i++) {
    out->latency_ns += f->links[out->links[i]].latency_ns;
    out->bottleneck_GBps = fmin(out->bottleneck_GBps, f->links[out->links[i]].GBps);
  }
  return HS_OK;
}

static inline hs_net_paths_t tfab_paths(tfab_t *f)
{
  hs_net_paths_t p = {tfab_path, f, f->links, f->n_links, NULL};
  return p;
}

/* A network over the fabric with its path function installed. */
static inline hs_net_t *tfab_net(tfab_t *f, hs_engine_t *eng)
{
  hs_net_t *net = NULL;
  if (hs_net_new_links(eng, f->links, f->n_links, &net) != HS_OK)
    return NULL;
  hs_net_set_path_fn(net, tfab_path, f, NULL);
  return net;
}

#endif
