/*
 * subcluster.c - the cluster of a subset of a cluster's nodes: what the
 * registry's device-subset search (hs_planner_run, search/registry.c) plans
 * on, and what the spot-preemption what-if (elastic/) re-plans on after a
 * preemption.
 *
 * Invariants: sites and cross-site links are kept whole (a site may end with
 * no node, so routes through it stay valid); nodes and devices keep their
 * order and are renumbered densely; dev_map maps every new device back to
 * the original one. The result is plain data owned by the caller
 * (hs_cluster_destroy).
 */
#include "hs_search.h"

#include <string.h>

hs_status_t hs_search_subcluster(const hs_cluster_t *c, const bool *alive, hs_cluster_t *out,
                                 int32_t *dev_map, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_cluster_destroy(out);
  size_t nn = 0, nd = 0;
  for (size_t n = 0; n < c->n_nodes; n++)
    if (alive[n]) {
      nn++;
      nd += (size_t)c->nodes[n].n_devices;
    }
  if (nn == 0)
    return hs_error_set(err, HS_EINFEASIBLE, "cluster %s: no node is up", c->name);
  memcpy(out->name, c->name, sizeof out->name);
  memcpy(out->description, c->description, sizeof out->description);
  memcpy(out->source, c->source, sizeof out->source);
  out->gpus.gpus = hs_calloc(c->gpus.n + 1, sizeof *out->gpus.gpus);
  out->sites = hs_calloc(c->n_sites + 1, sizeof *out->sites);
  out->nodes = hs_calloc(nn, sizeof *out->nodes);
  out->devices = hs_calloc(nd, sizeof *out->devices);
  out->xlinks = hs_calloc(c->n_xlinks + 1, sizeof *out->xlinks);
  if (!out->gpus.gpus || !out->sites || !out->nodes || !out->devices || !out->xlinks)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for the surviving cluster"));
  if (c->gpus.n)
    memcpy(out->gpus.gpus, c->gpus.gpus, c->gpus.n * sizeof *c->gpus.gpus);
  out->gpus.n = c->gpus.n;
  if (c->n_xlinks)
    memcpy(out->xlinks, c->xlinks, c->n_xlinks * sizeof *c->xlinks);
  out->n_xlinks = c->n_xlinks;
  size_t in = 0, id = 0;
  for (size_t s = 0; s < c->n_sites; s++) {
    out->sites[s] = c->sites[s];
    out->sites[s].first_node = (int32_t)in;
    out->sites[s].n_nodes = 0;
    for (int32_t k = 0; k < c->sites[s].n_nodes; k++) {
      int32_t n = c->sites[s].first_node + k;
      if (!alive[n])
        continue;
      hs_node_t nd2 = c->nodes[n];
      nd2.site = (int32_t)s;
      nd2.first_device = (int32_t)id;
      for (int32_t j = 0; j < nd2.n_devices; j++) {
        int32_t d = c->nodes[n].first_device + j;
        out->devices[id] = c->devices[d];
        out->devices[id].node = (int32_t)in;
        out->devices[id].site = (int32_t)s;
        if (dev_map)
          dev_map[id] = d;
        id++;
      }
      out->nodes[in++] = nd2;
      out->sites[s].n_nodes++;
    }
  }
  out->n_sites = c->n_sites;
  out->n_nodes = nn;
  out->n_devices = nd;
cleanup:
  if (st != HS_OK)
    hs_cluster_destroy(out);
  return st;
}
