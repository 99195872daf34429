/*
 * net_topo.c - the network's binding to the cluster topology: the
 * constructor over an hs_topology_t and the topology-flavoured collective
 * entry points. Kept apart so that networks built from bare link arrays
 * (tests, synthetic fabrics) link without the clusters module.
 */
#include "net_impl.h"

#include <math.h>

static hs_status_t topo_path(void *ctx, int32_t a, int32_t b, hs_path_t *out)
{
  return hs_topology_path((const hs_topology_t *)ctx, a, b, out);
}

/* The topology knows each device's node: the owner of the NIC_UP link its
 * paths to other nodes take, which is what collectives would otherwise infer
 * from O(n) path queries per call (hs__coll_nodes). */
static int32_t topo_node_of(void *ctx, int32_t dev)
{
  return hs_topology_device_node((const hs_topology_t *)ctx, dev);
}

static hs_net_paths_t topo_paths(const hs_topology_t *topo)
{
  hs_net_paths_t p = {
      .path = topo_path,
      .ctx = (void *)(uintptr_t)topo, /* the callbacks only read through it */
      .links = hs_topology_links(topo),
      .n_links = hs_topology_n_links(topo),
      .node_of = topo_node_of,
  };
  return p;
}

hs_status_t hs_net_new(hs_engine_t *eng, const hs_topology_t *topo, hs_net_t **out)
{
  hs_status_t st = HS_OK;
  hs_net_t *net = NULL;
  if (!eng || !topo || !out)
    return HS_EINVAL;
  *out = NULL;
  net = hs_calloc(1, sizeof *net);
  if (!net)
    return HS_ENOMEM;
  net->eng = eng;
  net->topo = topo;
  net->paths = topo_paths(topo);
  net->links = net->paths.links;
  net->n_links = net->paths.n_links;
  HS_CHECK(hs__net_init_links(net));
  net->paths_fixed = true; /* the topology is const and outlives net */
  *out = net;
  net = NULL;
cleanup:
  hs_net_free(net);
  return st;
}

double hs_coll_estimate_s(const hs_topology_t *topo, const hs_coll_t *c)
{
  double s = NAN;
  if (hs_coll_estimate_topo(topo, c, &s, NULL) != HS_OK)
    return NAN;
  return s;
}

hs_status_t hs_coll_estimate_topo(const hs_topology_t *topo, const hs_coll_t *c, double *out_s,
                                  hs_error_t *err)
{
  *out_s = NAN;
  if (!topo)
    return hs_error_set(err, HS_EINVAL, "coll: NULL topology");
  hs_net_paths_t p = topo_paths(topo);
  return hs_coll_estimate_paths(&p, c, out_s, err);
}

const hs_coll_algo_t *hs_coll_algo_default(const hs_topology_t *topo, hs_coll_op_t op,
                                           const int32_t *devices, int32_t n)
{
  hs_net_paths_t p = topo_paths(topo);
  return hs_coll_algo_default_paths(&p, op, devices, n);
}

bool hs_coll_group_nvls(const hs_topology_t *topo, const int32_t *devices, int32_t n)
{
  hs_net_paths_t p = topo_paths(topo);
  return hs_coll_group_nvls_paths(&p, devices, n);
}

double hs_coll_group_nvls_port_GBps_topo(const hs_topology_t *topo, const int32_t *devices, int32_t n)
{
  hs_net_paths_t p = topo_paths(topo);
  return hs_coll_group_nvls_port_GBps(&p, devices, n);
}
