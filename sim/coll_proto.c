/*
 * coll_proto.c - NCCL's protocols as its tuner costs them (ring, one node):
 * per protocol a latency (base + steps x hardware latency) and a bus
 * bandwidth factor; the call runs the protocol of least tuner time. The
 * ring algorithm (coll_ring.c) applies the pick on PCIe nodes: the
 * protocol's latency replaces the path latency per step (the link's own
 * latency is then the extra a PCIe class adds, docs/network.md "PCIe
 * nodes"), and the flow carries bytes / bw_factor, so the flow model's
 * bandwidth sharing still sets the transfer time.
 *
 * Constants: NVIDIA/nccl@5067397c2676d5aed50042fc39e5c8ee96eb0027 (NCCL
 * 2.30.7), src/graph/tuning.cc, transcribed in docs/fidelity-sources.md
 * section 1:
 *   baseLatencies Ring {LL 6.6, LL128 14.0, Simple 8.4}      tuning.cc:151
 *   hwLatencies NVLINK Ring {0.6, 1.9, 3.4}                  tuning.cc:159
 *   hwLatencies PCI    Ring {1.0, 2.5, 5.7}                  tuning.cc:165
 *   hw row: NVLINK when the intra graph is NVLink, else PCI  tuning.cc:285
 *   nsteps 2(n-1) all-reduce, n-1 reduce-scatter/all-gather  tuning.cc:289-291
 *   Ring/LL busBw = min(llMaxBw, 0.5 busBw)                  tuning.cc:327
 *   Ring/LL128 busBw = 0.92 busBw (cap nCh x perChMaxRingLL128Bw, not
 *     modelled: hetsim has no channels)                      tuning.cc:328-329
 *   ring algbw = busBw n / nsteps                            tuning.cc:379
 *   one node: lat = base + nsteps x hwLat                    tuning.cc:384, 412
 *   LL128 auto only when the intra path is <= NVB            tuning.cc:531
 *   time = lat + nBytes / (1000 bw)                          tuning.cc:653
 * The PCI Ring LL/Simple hardware latencies (1.0 / 5.7 us) and the Ring base
 * latencies are the same in NCCL 2.18.3 (ea383122) and 2.10.3 (7e515921;
 * there Ring/LL base 3.6, LL128 factor 0.7 with one rank per node).
 */
#include "hs_net.h"

#include <math.h>

static const double ring_base_us[HS_NCCL_PROTO__COUNT] = {6.6, 14.0, 8.4};
static const double ring_hw_us[2][HS_NCCL_PROTO__COUNT] = {
    {0.6, 1.9, 3.4}, /* NVLINK */
    {1.0, 2.5, 5.7}, /* PCI */
};

const char *hs_nccl_proto_name(hs_nccl_proto_t p)
{
  static const char *const names[HS_NCCL_PROTO__COUNT] = {"LL", "LL128", "Simple"};
  return (unsigned)p < HS_NCCL_PROTO__COUNT ? names[p] : "?";
}

void hs_nccl_ring_costs(int32_t n_steps, hs_nccl_hw_t hw, double busbw_GBps, double ll_max_GBps,
                        hs_nccl_proto_cost_t cost[HS_NCCL_PROTO__COUNT])
{
  int h = hw == HS_NCCL_HW_NVLINK ? 0 : 1;
  for (int p = 0; p < HS_NCCL_PROTO__COUNT; p++) {
    cost[p].allowed = p != HS_NCCL_LL128 || hw == HS_NCCL_HW_NVLINK;
    cost[p].latency_us = ring_base_us[p] + (double)n_steps * ring_hw_us[h][p];
  }
  double B = busbw_GBps > 0.0 ? busbw_GBps : 1.0;
  cost[HS_NCCL_LL].bw_factor = fmin(ll_max_GBps > 0.0 ? ll_max_GBps : INFINITY, 0.5 * B) / B;
  cost[HS_NCCL_LL128].bw_factor = 0.92; /* 120.0 / 128.0 in NCCL's comment */
  cost[HS_NCCL_SIMPLE].bw_factor = 1.0;
}

hs_nccl_proto_t hs_nccl_proto_pick(const hs_nccl_proto_cost_t cost[HS_NCCL_PROTO__COUNT], double bytes,
                                   double busbw_GBps, double ratio, double *time_us)
{
  hs_nccl_proto_t best = HS_NCCL_SIMPLE;
  double t_best = INFINITY;
  for (int p = 0; p < HS_NCCL_PROTO__COUNT; p++) {
    if (!cost[p].allowed)
      continue;
    double algbw = busbw_GBps * cost[p].bw_factor * ratio; /* GB/s = 1e3 B/us */
    double t = cost[p].latency_us + (algbw > 0.0 ? bytes / (1e3 * algbw) : INFINITY);
    if (t < t_best) {
      t_best = t;
      best = (hs_nccl_proto_t)p;
    }
  }
  if (time_us)
    *time_us = t_best;
  return best;
}
