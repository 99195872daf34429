/*
 * coll_ring.c - ring algorithms (NCCL's ring): all-reduce, reduce-scatter,
 * all-gather, chain broadcast, HAP's padded all-gather and grouped
 * broadcast. Ranks are taken in the order of c->devices; neighbour path i
 * runs devices[i] -> devices[(i+1) % n] with latency a_i.
 *
 * Decomposition (one phase each; S = c->bytes, n ranks, a = max_i a_i):
 *   all-reduce       latency 2(n-1) a, one coupled flow over the n neighbour
 *                    paths, 2(n-1) S / n bytes per sub-flow
 *   reduce-scatter,  latency (n-1) a, (n-1) S / n bytes
 *   all-gather
 *   padded           latency (n-1) a, (n-1) max_i(share_i) S bytes: every
 *   all-gather       ring step moves the largest shard
 *   broadcast        pipelined chain devices[0] -> ... -> devices[n-1]:
 *                    latency sum of the n-1 chain paths, S bytes over them
 *   grouped          one chain per root r with share_r > 0, starting at r and
 *   broadcast        following the ring: share_r S bytes each, all started
 *                    together after max over roots of its chain latency
 * A coupled flow's link weight is the number of its sub-flow paths crossing
 * the link, so uncontended it takes bytes x max_l(w_l / B_l): with one port
 * per GPU on a switch (w = 1, bandwidth B) all-reduce takes
 *   2(n-1) a + 2(n-1) S / (n B) = 2(n-1) (a + S / (n B)),
 * the alpha-beta form of nccl-tests' busbw factor 2(n-1)/n.
 */
#include "coll_impl.h"

static bool ring_supports(hs_coll_op_t op)
{
  switch (op) {
  case HS_COLL_ALLREDUCE:
  case HS_COLL_REDUCE_SCATTER:
  case HS_COLL_ALLGATHER:
  case HS_COLL_BROADCAST:
  case HS_COLL_PADDED_ALLGATHER:
  case HS_COLL_GROUPED_BROADCAST:
    return true;
  default:
    return false;
  }
}

/* The closed ring as one coupled flow; *max_lat gets max_i a_i. */
static hs_status_t ring_flow(hs_coll_builder_t *b, const int32_t *d, int32_t n, double bytes,
                             double *max_lat)
{
  hs_status_t st = hs__builder_flow(b, bytes);
  *max_lat = 0.0;
  for (int32_t i = 0; i < n && st == HS_OK; i++) {
    double lat = 0.0;
    st = hs__builder_path(b, d[i], d[(i + 1) % n], &lat);
    *max_lat = HS_MAX(*max_lat, lat);
  }
  return st;
}

/* The chain root, root+1, ... (n-1 paths along the ring); *sum_lat gets the
 * sum of their latencies. */
static hs_status_t chain_flow(hs_coll_builder_t *b, const int32_t *d, int32_t n, int32_t root,
                              double bytes, double *sum_lat)
{
  hs_status_t st = hs__builder_flow(b, bytes);
  *sum_lat = 0.0;
  for (int32_t k = 0; k < n - 1 && st == HS_OK; k++) {
    double lat = 0.0;
    st = hs__builder_path(b, d[(root + k) % n], d[(root + k + 1) % n], &lat);
    *sum_lat += lat;
  }
  return st;
}

static hs_status_t ring_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                              bool *has_phase)
{
  hs_status_t st = HS_OK;
  int32_t n = c->n;
  double S = c->bytes, lat = 0.0;
  *has_phase = phase == 0 && n > 1 && S > 0.0;
  if (!*has_phase)
    return HS_OK;
  switch (c->op) {
  case HS_COLL_ALLREDUCE:
    st = ring_flow(b, c->devices, n, 2.0 * (n - 1) * S / n, &lat);
    if (st == HS_OK) /* 2(n-1) lat, or NCCL's protocol on a PCIe node */
      hs__builder_ring_protocol(b, n, 2 * (n - 1), lat);
    break;
  case HS_COLL_REDUCE_SCATTER:
  case HS_COLL_ALLGATHER:
    st = ring_flow(b, c->devices, n, (double)(n - 1) * S / n, &lat);
    if (st == HS_OK)
      hs__builder_ring_protocol(b, n, n - 1, lat);
    break;
  case HS_COLL_PADDED_ALLGATHER: {
    double smax = 0.0;
    for (int32_t i = 0; i < n; i++)
      smax = HS_MAX(smax, c->shares[i]);
    st = ring_flow(b, c->devices, n, (double)(n - 1) * smax * S, &lat);
    b->latency_ns = (double)(n - 1) * lat;
    break;
  }
  case HS_COLL_BROADCAST:
    st = chain_flow(b, c->devices, n, 0, S, &lat);
    b->latency_ns = lat;
    break;
  case HS_COLL_GROUPED_BROADCAST:
    for (int32_t r = 0; r < n && st == HS_OK; r++) {
      if (!(c->shares[r] > 0.0))
        continue;
      st = chain_flow(b, c->devices, n, r, c->shares[r] * S, &lat);
      b->latency_ns = HS_MAX(b->latency_ns, lat);
    }
    break;
  default:
    return HS_EUNSUPPORTED;
  }
  return st;
}

static double ring_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_ring, paths, c);
}

const hs_coll_algo_t hs_coll_ring = {
    .name = "ring",
    .description = "ring all-reduce / reduce-scatter / all-gather, chain broadcast, "
                   "padded all-gather and grouped broadcast",
    .supports = ring_supports,
    .estimate_s = ring_estimate,
    .start = hs__coll_run,
    .build_phase = ring_build,
};
