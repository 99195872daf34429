/*
 * topo_fixture.h - a topology from an inline cluster JSON, for the tests
 * that check the catalog's links against published collective figures
 * (test_nvls_calibration, test_h100_link_figures). The caller destroys the
 * topology and the cluster.
 */
#ifndef HS_TOPO_FIXTURE_H
#define HS_TOPO_FIXTURE_H

#include "hs_clusters.h"
#include "hs_net.h"
#include "hs_test.h"

static inline hs_topology_t *fx_topo_of(const char *json, hs_cluster_t *c)
{
  hs_topology_t *topo = NULL;
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(c);
  CHECK_MSG(hs_cluster_parse(json, "t.json", c, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(hs_topology_new(c, &topo, &err) == HS_OK, "%s", err.msg);
  return topo;
}

#endif
