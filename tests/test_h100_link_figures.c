/*
 * test_h100_link_figures.c - the H100 ring-side interconnects of
 * clusters/links.json (NVLink4-NVSwitch's port, NDR-IB-8x400) against
 * collective-level measurements.
 *
 * Independent truths:
 *   - NVLink4-NVSwitch's port is fitted (hetsim import nccl-tests, the A100
 *     path) on the all_reduce_perf table of one 8x H100 80GB HBM3 node with
 *     NCCL's ring forced (NCCL 2.26.2, NCCL_ALGO=RING NCCL_NVLS_ENABLE=0;
 *     togethercomputer/together-nccl-tests@6698e53c, stored verbatim as
 *     clusters/calibration/nccl-tests/h100_sxm5_1x8_*_ring.txt). The
 *     simulator's own ring all-reduce, all-gather and reduce-scatter on a
 *     catalog DGX H100 node must reproduce the published busbw of those
 *     tables, read from the stored files, within RING_TABLE_TOL at 1-8 GiB.
 *     The all-gather and reduce-scatter tables are not fit inputs (the
 *     all-reduce file alone sets the link), so they check it out of sample.
 *     The busbw NCCL's maintainers state (370 GB/s, NVIDIA/nccl-tests issue
 *     #212, 2024-05-06; copied here by hand) is a second truth, within
 *     RING_STATED_TOL: 2% while the port was that quoted figure, 5% since the
 *     fit (the whole-table line's asymptote is 357.5 GB/s, 3.4% under it, and
 *     the model's 1 GiB busbw 355.0 is 4.0% under it; the measured table
 *     itself peaks at 368.09 GB/s, 0.5% under it).
 *   - NDR 400 Gb/s: 46-48 GB/s ring busbw per NIC, NVIDIA/nccl-tests issue
 *     #290, 2025-03-03; a DGX H100 node has 8 of them. The whole 2 x 8 H100
 *     tables over NDR found since (nccl-tests #309, stored; test_ndr_2x8_tables)
 *     run faster than this model's ring can, so the entry stays uncalibrated
 *     (invariant checked below). Across two nodes this
 *     model's ring is bound by min(GPU port, node NIC) = the fitted 357.5 GB/s
 *     NVLink port, under the node's 376 GB/s of NICs: the check is
 *     [8 x 46 x (1 - NDR_TOL), 8 x 48] at 4-8 GiB, NDR_TOL = 4% (it was the
 *     stated range exactly while the port was the quoted 370 GB/s).
 * HS_H100_TABLE=1 prints the predicted busbw per size.
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

#define RING_TABLE_TOL 0.04  /* predicted busbw at 1-8 GiB against the published tables */
#define RING_STATED_TOL 0.05 /* against the stated 370 GB/s (0.02 before the fit) */
#define NDR_TOL 0.04         /* under 8 x 46 GB/s across two nodes (0 before the fit) */

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

/* clusters/links.json, loaded (checked) */
static void catalog_load(hs_link_catalog_t *cat)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_link_catalog_init(cat);
  CHECK_MSG(hs_link_catalog_load(NULL, cat, &err) == HS_OK, "%s", err.msg);
}

static void test_catalog_entries(void)
{
  hs_link_catalog_t cat;
  catalog_load(&cat);
  const hs_interconnect_t *nv = hs_link_catalog_find(&cat, "NVLink4-NVSwitch");
  const hs_interconnect_t *ib = hs_link_catalog_find(&cat, "NDR-IB-8x400");
  CHECK(nv && ib);
  if (nv && ib) {
    CHECK(nv->calibrated && !ib->calibrated); /* ring fit files; NDR: quoted figure */
    CHECK_EQ_INT(nv->n_fit_files, 3);
    CHECK_CONTAINS(nv->fit_files[0], "h100_sxm5_1x8_all_reduce_ring.txt");
    CHECK_CONTAINS(nv->source, "together-nccl-tests@6698e53c1dc519f8ab54f72193630849f5abf178");
    CHECK_REL(nv->nominal_GBps, 450, 0); /* DGX H100 datasheet */
    CHECK_REL(ib->nominal_GBps, 400, 0);
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

/* The published busbw (out-of-place) of `file` at `S`, 0 if absent. */
static double published_busbw(const char *file, double S)
{
  char path[2048];
  hs_nccl_tests_t t;
  hs_nt_opts_t o;
  hs_error_t err;
  hs_error_init(&err);
  hs_nt_opts_init(&o);
  snprintf(path, sizeof path, "%s/clusters/calibration/nccl-tests/%s", hs_data_dir(), file);
  double b = 0;
  if (hs_nccl_tests_load(path, &o, &t, &err) != HS_OK) {
    CHECK_MSG(false, "%s", err.msg);
    return 0;
  }
  CHECK_EQ_INT(t.nranks, 8);
  for (int32_t r = 0; r < t.n_rows; r++)
    if (t.rows[r].size_bytes == S)
      b = t.rows[r].busbw_GBps[0];
  hs_nccl_tests_destroy(&t);
  return b;
}

/* One node: the ring's all_gather, reduce_scatter and all-reduce busbw at
 * 1-8 GiB against the published ring tables and the stated 370 GB/s. */
static void test_nvlink4_ring_busbw(void)
{
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(DGX_H100(1), &c);
  static const struct {
    hs_coll_op_t op;
    const char *name, *file;
  } ops[] = {{HS_COLL_ALLGATHER, "all_gather", "h100_sxm5_1x8_all_gather_ring.txt"},
             {HS_COLL_REDUCE_SCATTER, "reduce_scatter", "h100_sxm5_1x8_reduce_scatter_ring.txt"},
             {HS_COLL_ALLREDUCE, "all_reduce (ring)", "h100_sxm5_1x8_all_reduce_ring.txt"}};
  for (size_t k = 0; topo && k < HS_ARRAY_LEN(ops); k++)
    for (double S = 1073741824.0; S <= 8589934592.0; S *= 2) {
      double b = busbw(topo, ops[k].op, "ring", 8, S), m = published_busbw(ops[k].file, S);
      CHECK_MSG(m > 0, "%s: no row of %.0f B", ops[k].file, S);
      if (getenv("HS_H100_TABLE"))
        printf("  NVLink4 8 ranks %-18s %10.0f B  busbw %.1f GB/s, published %.2f (%+.1f%%), stated %.0f (%+.1f%%)\n",
               ops[k].name, S, b, m, 100 * (b / m - 1), NVLINK4_RING_BUSBW_GBPS,
               100 * (b / NVLINK4_RING_BUSBW_GBPS - 1));
      CHECK_MSG(fabs(b / m - 1) <= RING_TABLE_TOL, "%s %.0f B: busbw %.2f GB/s, published %.2f", ops[k].name, S,
                b, m);
      CHECK_MSG(fabs(b / NVLINK4_RING_BUSBW_GBPS - 1) <= RING_STATED_TOL, "%s %.0f B: busbw %.2f GB/s",
                ops[k].name, S, b);
      /* the datasheet port was 450 / 368 - 1 = 22% above the published busbw */
      CHECK(450.0 / m - 1 > 0.2);
    }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

/* Two nodes, NCCL's ring over all 16 ranks: the peak busbw (4 and 8 GiB)
 * lies within 8 NICs x [46 x (1 - NDR_TOL), 48] GB/s. In this model the
 * GPU's fitted NVLink port (357.5 GB/s) binds before the node's NICs (376
 * GB/s), 3.2% under 8 x 46; 1-2 GiB are printed, not checked. */
static void test_ndr_ring_busbw(void)
{
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(DGX_H100(2), &c);
  static const hs_coll_op_t ops[] = {HS_COLL_ALLGATHER, HS_COLL_REDUCE_SCATTER, HS_COLL_ALLREDUCE};
  double lo = 8 * NDR_NIC_BUSBW_LO_GBPS * (1 - NDR_TOL), hi = 8 * NDR_NIC_BUSBW_HI_GBPS;
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

/* The 2 x 8 H100 all_reduce_perf tables over 8 x 400 Gb/s InfiniBand of
 * NVIDIA/nccl-tests issue #309 (stored verbatim; docs/network.md "NDR: whole
 * 2 x 8 H100 tables found, not fittable"). They are validation, not fit
 * inputs: NDR-IB-8x400 stays uncalibrated because NCCL's ring across the two
 * nodes (392.69 GB/s busbw at 8 GiB) runs faster than this model's ring can,
 * whatever the NIC: node_ring routes each node's NIC hop through the sending
 * GPU's NVLink port, so its busbw is bound by that port's fitted 357.5 GB/s
 * ("not identifiable" in hetsim import nccl-tests). Checked here, from the
 * stored rows: the measured ring busbw at 4-8 GiB is above the catalog port
 * (the reason), the model's node_ring busbw is under the measured by
 * NDR_RING_GAP_LO..HI at 1-8 GiB (the documented error; a model whose NIC hop
 * bypasses the port would leave this band and should then fit the entry),
 * and the default all-reduce (NVLS-Tree in NCCL, node_tree standing for it
 * here) is under the default table's busbw. HS_H100_TABLE=1 prints both. */
#define NDR_RING_GAP_LO 0.08 /* measured / predicted - 1, ring table, 1-8 GiB */
#define NDR_RING_GAP_HI 0.11

static hs_status_t load_stored(const char *file, hs_nccl_tests_t *t)
{
  char path[2048];
  hs_nt_opts_t o;
  hs_error_t err;
  hs_error_init(&err);
  hs_nt_opts_init(&o);
  snprintf(path, sizeof path, "%s/clusters/calibration/nccl-tests/%s", hs_data_dir(), file);
  hs_status_t st = hs_nccl_tests_load(path, &o, t, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  return st;
}

static void test_ndr_2x8_tables(void)
{
  hs_link_catalog_t cat;
  catalog_load(&cat);
  const hs_interconnect_t *nv = hs_link_catalog_find(&cat, "NVLink4-NVSwitch");
  double port_GBps = nv ? nv->GBps : 0;
  CHECK(port_GBps > 0);
  hs_link_catalog_destroy(&cat);

  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(DGX_H100(2), &c);
  hs_nccl_tests_t ring, dflt;
  hs_nccl_tests_init(&ring);
  hs_nccl_tests_init(&dflt);
  bool ok = load_stored("h100_sxm5_2x8_all_reduce_ring_ndr.txt", &ring) == HS_OK &&
            load_stored("h100_sxm5_2x8_all_reduce_default_ndr.txt", &dflt) == HS_OK;
  if (ok) {
    CHECK_EQ_INT(ring.nranks, 16);
    CHECK_EQ_INT(dflt.nranks, 16);
  }
  int32_t dev[16];
  for (int32_t i = 0; i < 16; i++)
    dev[i] = i;
  int32_t checked = 0;
  for (int32_t r = 0; ok && topo && r < ring.n_rows; r++) {
    double S = ring.rows[r].size_bytes, m = ring.rows[r].busbw_GBps[0];
    double b = busbw(topo, HS_COLL_ALLREDUCE, "node_ring", 16, S), gap = m / b - 1;
    if (getenv("HS_H100_TABLE"))
      printf("  NDR 2x8 ring table %10.0f B  measured %.2f  node_ring %.1f GB/s  (measured/predicted %+.1f%%)\n", S,
             m, b, 100 * gap);
    if (S < 1073741824.0)
      continue; /* below 1 GiB: printed, not checked (one alpha-beta line per link) */
    CHECK_MSG(b <= port_GBps * (1 + 1e-9), "%.0f B: node_ring busbw %.2f above the port's %.1f", S, b, port_GBps);
    CHECK_MSG(gap >= NDR_RING_GAP_LO && gap <= NDR_RING_GAP_HI, "%.0f B: measured %.2f, node_ring %.2f GB/s (%+.1f%%)",
              S, m, b, 100 * gap);
    if (S >= 4294967296.0)
      CHECK_MSG(m > port_GBps, "%.0f B: measured %.2f not above the port's %.1f GB/s", S, m, port_GBps);
    checked++;
  }
  CHECK_EQ_INT(checked, 4);
  checked = 0;
  for (int32_t r = 0; ok && topo && r < dflt.n_rows; r++) {
    double S = dflt.rows[r].size_bytes, m = dflt.rows[r].busbw_GBps[0];
    if (S < 1048576.0)
      continue;
    hs_coll_t k;
    hs_coll_init(&k);
    k.op = HS_COLL_ALLREDUCE;
    k.devices = dev;
    k.n = 16;
    k.bytes = S; /* algo NULL: the per-call choice */
    double b = 2.0 * 15 / 16 * S / hs_coll_estimate_s(topo, &k) / 1e9;
    if (getenv("HS_H100_TABLE"))
      printf("  NDR 2x8 default table %10.0f B  measured %.2f  default %.1f GB/s  (measured/predicted %+.1f%%)\n",
             S, m, b, 100 * (m / b - 1));
    if (S < 1073741824.0 || S > 8589934592.0)
      continue;
    CHECK_MSG(b < m, "%.0f B: default all-reduce %.2f GB/s not under NVLS-Tree's measured %.2f", S, b, m);
    checked++;
  }
  CHECK_EQ_INT(checked, 4);
  hs_nccl_tests_destroy(&ring);
  hs_nccl_tests_destroy(&dflt);
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
  HS_RUN(test_ndr_2x8_tables);
  print_a3mega();
  HS_TEST_END();
}
