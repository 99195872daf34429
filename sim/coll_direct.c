/*
 * coll_direct.c - direct algorithms: point-to-point and all-to-all.
 *
 *   p2p        latency a (the path's), one flow of S bytes on the path:
 *              a + S / B for a bottleneck B
 *   all-to-all every rank sends S/n to every other rank at once: latency
 *              max over pairs of the path latency, one coupled flow over the
 *              n(n-1) pair paths of S/n bytes each; with one port per GPU
 *              on a switch each port carries n-1 sub-flows:
 *              a + (n-1) S / (n B)  (nccl-tests' factor (n-1)/n)
 */
#include "coll_impl.h"

static bool direct_supports(hs_coll_op_t op)
{
  return op == HS_COLL_P2P || op == HS_COLL_ALLTOALL;
}

static hs_status_t direct_build(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                                bool *has_phase)
{
  hs_status_t st = HS_OK;
  int32_t n = c->n;
  const int32_t *d = c->devices;
  double S = c->bytes;
  *has_phase = phase == 0 && n > 1 && S > 0.0;
  if (!*has_phase)
    return HS_OK;
  if (c->op == HS_COLL_P2P) {
    if (d[0] == d[1]) {
      *has_phase = false;
      return HS_OK;
    }
    HS_CHECK(hs__builder_flow(b, S));
    HS_CHECK(hs__builder_path(b, d[0], d[1], &b->latency_ns));
  } else if (c->op == HS_COLL_ALLTOALL) {
    HS_CHECK(hs__builder_flow(b, S / n));
    for (int32_t i = 0; i < n; i++)
      for (int32_t j = 0; j < n; j++) {
        if (i == j)
          continue;
        double lat = 0.0;
        HS_CHECK(hs__builder_path(b, d[i], d[j], &lat));
        b->latency_ns = HS_MAX(b->latency_ns, lat);
      }
  } else {
    return HS_EUNSUPPORTED;
  }
cleanup:
  return st;
}

static double direct_estimate(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  return hs__coll_estimate(&hs_coll_direct, paths, c);
}

const hs_coll_algo_t hs_coll_direct = {
    .name = "direct",
    .description = "point-to-point on the path; all-to-all as every pair at once",
    .supports = direct_supports,
    .estimate_s = direct_estimate,
    .start = hs__coll_run,
    .build_phase = direct_build,
};
