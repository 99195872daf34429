/*
 * coll_nvls.c - NCCL's NVLS all-reduce (NVLink SHARP) inside one node: the
 * NVSwitch reduces. Explicit ("nvls", hs_coll_algo_find), and the default
 * for an all-reduce inside one node of NVLS ports when its estimate beats
 * the ring's (collective.c, choose_algo; docs/network.md, "NVLS").
 *
 * What moves: NCCL's NVLS kernel gives each of the n GPUs 1/n of the buffer;
 * a multimem load-reduce pulls that chunk from all n GPUs through the switch
 * and returns the sum (each GPU's port sends S in total, S/n for each
 * requester, and receives S/n), then a multimem store sends the summed S/n
 * once and the switch writes it to all n GPUs (each sends S/n and receives
 * S). Per GPU port and direction: (n + 1) S / n.
 *
 * Decomposition (one phase; S = c->bytes, n ranks, a = max_i a_i over the
 * neighbour paths devices[i] -> devices[(i+1) % n]): latency a (one switch
 * traversal); one coupled flow over the n neighbour paths, (n + 1) S / n
 * bytes per sub-flow, so each GPU's up and down port carries one sub-flow:
 *   T = a + (n + 1) S / (n B),  algbw = n / (n + 1) B.
 * Calibrated ports (hs_link_t.nvls_GBps / nvls_latency_ns > 0, the catalog's
 * fit of a published NVLS all-reduce table): NVLS reaches only nvls_GBps of
 * a port of GBps, so each sub-flow carries (n + 1) S / n x GBps / nvls_GBps
 * (max over the ports: alone it takes (n + 1) S / (n nvls_GBps); under
 * contention it holds the port that much longer), and a is the ports'
 * nvls_latency_ns (the measured fixed cost of NVLS, NCCL's channel setup and
 * multimem round trips included) instead of the path latency:
 *   T = L_nvls + (n + 1) S / (n B_nvls).
 * The links' byte counters then count that port occupancy (x GBps /
 * nvls_GBps), not the payload.
 *
 * Invariants: every device of the group on one node (else HS_EUNSUPPORTED),
 * and every GPU port on the neighbour paths an NVLink SHARP port
 * (hs_link_t.nvls, the interconnect catalog's "nvls"; else HS_EUNSUPPORTED
 * naming the device). All-reduce only.
 */
#include "coll_impl.h"

static bool nvls_supports(hs_coll_op_t op) { return op == HS_COLL_ALLREDUCE; }


static hs_status_t nvls_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                              bool *has_phase)
{
  int32_t n = c->n;
  const int32_t *d = c->devices;
  double S = c->bytes;
  *has_phase = phase == 0 && n > 1 && S > 0.0;
  if (!*has_phase)
    return HS_OK;
  hs_status_t st = hs__builder_tmp(b, (size_t)n);
  if (st != HS_OK)
    return st;
  if ((st = hs__coll_nodes(b, d, n, b->tmp)) != HS_OK)
    return st;
  for (int32_t i = 1; i < n; i++)
    if (b->tmp[i] != b->tmp[0])
      return hs_error_set(b->err, HS_EUNSUPPORTED,
                          "coll.devices: nvls all-reduce runs inside one node (devices[0] is on "
                          "node %d, devices[%d] on node %d)",
                          b->tmp[0], i, b->tmp[i]);
  double scale = 1.0, nvls_lat = 0.0;
  bool calibrated = true;
  for (int32_t i = 0; i < n; i++)
    if ((st = hs__coll_nvls_path(b, "nvls", i, d[i], d[(i + 1) % n], &scale, &nvls_lat, &calibrated)) != HS_OK)
      return st;
  if (!calibrated)
    scale = 1.0;
  if ((st = hs__builder_flow(b, (n + 1.0) * S / n * scale)) != HS_OK)
    return st;
  double lat = 0.0;
  for (int32_t i = 0; i < n; i++) {
    double a = 0.0;
    if ((st = hs__builder_path(b, d[i], d[(i + 1) % n], &a)) != HS_OK)
      return st;
    lat = HS_MAX(lat, a);
  }
  b->latency_ns = calibrated ? nvls_lat : lat;
  return HS_OK;
}

static double nvls_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_nvls, paths, c);
}

const hs_coll_algo_t hs_coll_nvls = {
    .name = "nvls",
    .description = "NCCL's NVLS all-reduce (NVLink SHARP) inside one node",
    .supports = nvls_supports,
    .estimate_s = nvls_estimate,
    .start = hs__coll_run,
    .build_phase = nvls_build,
};
