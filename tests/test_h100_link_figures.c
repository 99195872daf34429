/*
 * test_h100_link_figures.c - the H100 ring-side interconnects of
 * clusters/links.json (NVLink4-NVSwitch's port, NDR-IB-8x400) against the
 * collective-level figures they are taken from.
 *
 * Independent truths: the busbw NCCL's maintainers state for these systems,
 * copied by hand from the threads (not read from links.json):
 *   - 8x H100 NVLink4: 370 GB/s busbw for the ring algorithms (all_gather,
 *     reduce_scatter, all_reduce with NCCL_ALGO=RING), NVIDIA/nccl-tests
 *     issue #212, 2024-05-06; NCCL's topo.h (SM90_NVLINK_BW 20.6 GB/s x 18
 *     links = 370.8 GB/s) agrees;
 *   - NDR 400 Gb/s: 46-48 GB/s ring busbw per NIC, NVIDIA/nccl-tests issue
 *     #290, 2025-03-03; a DGX H100 node has 8 of them.
 * No whole nccl-tests table of either was found (docs/network.md), so the
 * entries are reported uncalibrated and these are the only checks: the
 * simulator's own ring collectives on catalog clusters reach those busbw
 * (within RING_TOL of 370 at 1-8 GiB inside a node; inside 8 x [46, 48]
 * GB/s at 4-8 GiB across two nodes), where the datasheet ports (450 and
 * 400 GB/s) were 22% and 4-9% above them. Invariant: both entries stay flagged uncalibrated (no fit
 * file). HS_H100_TABLE=1 prints the predicted busbw per size.
 */
#include "hs_clusters.h"
#include "hs_net.h"
#include "hs_test.h"
#include "hs_validate.h"
#include "topo_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_TOL 0.02 /* busbw at 1-8 GiB against the stated 370 GB/s */

static const double NVLINK4_RING_BUSBW_GBPS = 370.0; /* nccl-tests #212 */
static const double NDR_NIC_BUSBW_LO_GBPS = 46.0;    /* nccl-tests #290, per NIC */
static const double NDR_NIC_BUSBW_HI_GBPS = 48.0;

/* busbw (nccl-tests' definition) of `op` over ranks 0..n-1 with `algo`. */
static double busbw(hs_topology_t *topo, hs_coll_op_t op, const char *algo, int32_t n, double S)
{
  int32_t dev[64];
  for (int32_t i = 0; i < n; i++)
    dev[i] = i;
  hs_coll_t c;
  hs_coll_init(&c);
  c.op = op;
  c.devices = dev;
  c.n = n;
  c.bytes = S;
  c.algo = hs_coll_algo_find(algo);
  double t = hs_coll_estimate_s(topo, &c);
  double f = op == HS_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
  return f * S / t / 1e9;
}

static void test_catalog_entries(void)
{
  hs_link_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  hs_link_catalog_init(&cat);
  CHECK(hs_link_catalog_load(NULL, &cat, &err) == HS_OK);
  const hs_interconnect_t *nv = hs_link_catalog_find(&cat, "NVLink4-NVSwitch");
  const hs_interconnect_t *ib = hs_link_catalog_find(&cat, "NDR-IB-8x400");
  CHECK(nv && ib);
  if (nv && ib) {
    CHECK(!nv->calibrated && !ib->calibrated); /* quoted figures, no fit file */
    CHECK_REL(nv->nominal_GBps, 450, 0);       /* DGX H100 datasheet */
    CHECK_REL(ib->nominal_GBps, 400, 0);
    CHECK_CONTAINS(nv->source, "nccl-tests issue #212");
    CHECK_CONTAINS(ib->source, "nccl-tests issue #290");
    CHECK(nv->nvls && nv->nvls_GBps < nv->GBps); /* the NVLS fit is kept */
  }
  hs_link_catalog_destroy(&cat);
}

#define DGX_H100(nodes)                                                                          \
  "{\"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": " #nodes ", \"gpu\": "                 \
  "\"H100-SXM5-80GB\", \"gpus_per_node\": 8, \"intra_node\": {\"interconnect\": "               \
  "\"NVLink4-NVSwitch\"}, \"nic\": {\"interconnect\": \"NDR-IB-8x400\"}}], "                     \
  "\"fabric\": {\"latency_us\": 2.0}}]}"

/* One node: the ring's all_gather, reduce_scatter and all-reduce busbw at
 * 1-8 GiB is the stated 370 GB/s. */
static void test_nvlink4_ring_busbw(void)
{
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(DGX_H100(1), &c);
  static const struct {
    hs_coll_op_t op;
    const char *name;
  } ops[] = {{HS_COLL_ALLGATHER, "all_gather"},
             {HS_COLL_REDUCE_SCATTER, "reduce_scatter"},
             {HS_COLL_ALLREDUCE, "all_reduce (ring)"}};
  for (size_t k = 0; topo && k < HS_ARRAY_LEN(ops); k++)
    for (double S = 1073741824.0; S <= 8589934592.0; S *= 2) {
      double b = busbw(topo, ops[k].op, "ring", 8, S);
      if (getenv("HS_H100_TABLE"))
        printf("  NVLink4 8 ranks %-18s %10.0f B  busbw %.1f GB/s (%+.1f%% vs %.0f)\n", ops[k].name, S, b,
               100 * (b / NVLINK4_RING_BUSBW_GBPS - 1), NVLINK4_RING_BUSBW_GBPS);
      CHECK_MSG(fabs(b / NVLINK4_RING_BUSBW_GBPS - 1) <= RING_TOL, "%s %.0f B: busbw %.2f GB/s",
                ops[k].name, S, b);
      /* the datasheet port was 450 / 370 - 1 = 22% above the stated busbw */
      CHECK(450.0 / b - 1 > 0.2);
    }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

/* Two nodes, NCCL's ring over all 16 ranks: the peak busbw (4 and 8 GiB)
 * lies within 8 NICs x [46, 48] GB/s. In this model the GPU's NVLink port
 * (370 GB/s) binds before the node's NICs (376 GB/s); at 1 GiB (printed,
 * not checked) the latencies put it 0.3% under the range. */
static void test_ndr_ring_busbw(void)
{
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(DGX_H100(2), &c);
  static const hs_coll_op_t ops[] = {HS_COLL_ALLGATHER, HS_COLL_REDUCE_SCATTER, HS_COLL_ALLREDUCE};
  double lo = 8 * NDR_NIC_BUSBW_LO_GBPS, hi = 8 * NDR_NIC_BUSBW_HI_GBPS;
  for (size_t k = 0; topo && k < HS_ARRAY_LEN(ops); k++)
    for (double S = 1073741824.0; S <= 8589934592.0; S *= 2) {
      double b = busbw(topo, ops[k], "node_ring", 16, S);
      if (getenv("HS_H100_TABLE"))
        printf("  NDR 2x8 ranks op %d %10.0f B  busbw %.1f GB/s (stated %.0f-%.0f)\n", (int)ops[k], S, b, lo, hi);
      if (S >= 4294967296.0)
        CHECK_MSG(b >= lo && b <= hi, "op %d %.0f B: busbw %.2f GB/s outside [%.0f, %.0f]", (int)ops[k], S, b,
                  lo, hi);
    }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

/* HS_H100_TABLE=1: the default all-reduce's busbw on the GCP A3 Mega
 * cluster as docs/network.md writes it (2 x 8 H100, NVLink4-NVSwitch, the
 * HDR-IB-8x200 fit for its 8 x 200 Gb/s NICs) beside the stored table
 * (tests/data/import/; test_import_nccl checks 8 GiB). Prints only. */
static void print_a3mega(void)
{
  if (!getenv("HS_H100_TABLE"))
    return;
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  hs_nccl_tests_t t;
  hs_error_t err;
  hs_error_init(&err);
  if (hs_nccl_tests_load(hs_test_data("import/nccl_all_reduce_a3mega_h100_2x8.txt"), &o, &t, &err) != HS_OK)
    return;
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of("{\"sites\": [{\"name\": \"dc\", \"nodes\": [{\"count\": 2, \"gpu\": "
                                "\"H100-SXM5-80GB\", \"gpus_per_node\": 8, \"intra_node\": {\"interconnect\": "
                                "\"NVLink4-NVSwitch\"}, \"nic\": {\"interconnect\": \"HDR-IB-8x200\"}}], "
                                "\"fabric\": {\"latency_us\": 2.0}}]}",
                                &c);
  int32_t dev[16];
  for (int32_t i = 0; i < 16; i++)
    dev[i] = i;
  for (int32_t r = 0; topo && r < t.n_rows; r++) {
    hs_coll_t k;
    hs_coll_init(&k);
    k.op = HS_COLL_ALLREDUCE;
    k.devices = dev;
    k.n = 16;
    k.bytes = t.rows[r].size_bytes;
    if (k.bytes < 1048576)
      continue;
    double b = 2.0 * 15 / 16 * k.bytes / hs_coll_estimate_s(topo, &k) / 1e9;
    printf("  A3 Mega %.0f B measured %.2f predicted %.1f (%+.1f%%)\n", k.bytes, t.rows[r].busbw_GBps[0], b,
           100 * (t.rows[r].busbw_GBps[0] / b - 1));
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
  hs_nccl_tests_destroy(&t);
}

int main(void)
{
  HS_RUN(test_catalog_entries);
  HS_RUN(test_nvlink4_ring_busbw);
  HS_RUN(test_ndr_ring_busbw);
  print_a3mega();
  HS_TEST_END();
}
