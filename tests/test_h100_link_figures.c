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
 *   - NDR-IB-8x400 is fitted (hetsim import nccl-tests --nic-rails 8) on the
 *     2 x 8 H100 ring all_reduce_perf table of NVIDIA/nccl-tests issue #309
 *     (stored verbatim). The simulator's node_ring over the two nodes must
 *     reproduce the table's busbw within RING_NDR_TOL from 128 MiB up. The
 *     rails model (coll_node_ring.c) is checked against its closed form,
 *     T = L + f S max((g-1)/g / B_in, 1/B_nic) with g ranks per node over
 *     >= g rails and max(1/B_in, 1/B_nic) otherwise, on the catalog numbers
 *     and on raw ports where the GPU port binds. With one rail the same
 *     catalog NIC is bound by the 357.5 GB/s GPU port, under the table's
 *     392.69 GB/s: why the entry needs its rails.
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
#define RING_NDR_TOL 0.05    /* predicted busbw at 128 MiB-8 GiB against the 2 x 8 NDR ring table */

static const double NVLINK4_RING_BUSBW_GBPS = 370.0; /* nccl-tests #212 */

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
    CHECK(nv->calibrated && ib->calibrated); /* ring fit files, both */
    CHECK_EQ_INT(nv->n_fit_files, 3);
    CHECK_CONTAINS(nv->fit_files[0], "h100_sxm5_1x8_all_reduce_ring.txt");
    CHECK_CONTAINS(nv->source, "together-nccl-tests@6698e53c1dc519f8ab54f72193630849f5abf178");
    CHECK_REL(nv->nominal_GBps, 450, 0); /* DGX H100 datasheet */
    CHECK_REL(ib->nominal_GBps, 400, 0);
    CHECK_CONTAINS(ib->source, "NVIDIA/nccl-tests issue #309");
    CHECK_EQ_INT(ib->rails, 8); /* one NIC per GPU */
    CHECK_EQ_INT(nv->rails, 1);
    CHECK_EQ_INT(ib->n_fit_files, 2);
    CHECK_CONTAINS(ib->fit_files[1], "h100_sxm5_2x8_all_reduce_ring_ndr.txt");
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

/* A two-site-free cluster of `nodes` nodes of `gpn` H100s with raw ports. */
static hs_topology_t *raw_topo(int nodes, int gpn, double intra, double intra_us, double nic, double nic_us,
                               int rails, hs_cluster_t *c)
{
  char json[640];
  snprintf(json, sizeof json,
           "{\"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": %d, \"gpu\": \"H100-SXM5-80GB\", "
           "\"gpus_per_node\": %d, \"intra_node\": {\"GBps\": %.17g, \"latency_us\": %.17g}, \"nic\": "
           "{\"GBps\": %.17g, \"latency_us\": %.17g, \"rails\": %d}}], \"fabric\": {\"latency_us\": 2.0}}]}",
           nodes, gpn, intra, intra_us, nic, nic_us, rails);
  return fx_topo_of(json, c);
}

/* NCCL's ring over n = m g ranks (g per node, m nodes), uncontended, by the
 * closed form of coll_node_ring.c: steps s = 2(n-1) (all-reduce) or n-1,
 * s_x = 2(m-1) or m-1 of them across nodes; a_in = intra latency, a_x =
 * intra + nic + fabric latency; the port carries (g-1)/g of the traffic when
 * the nodes have >= g rails. */
static double ring_closed_form_s(hs_coll_op_t op, int m, int g, double intra, double intra_us, double nic,
                                 double nic_us, int rails, double S)
{
  int n = m * g;
  bool ar = op == HS_COLL_ALLREDUCE;
  double steps = ar ? 2.0 * (n - 1) : n - 1.0, sx = ar ? 2.0 * (m - 1) : m - 1.0;
  double L = ((steps - sx) * intra_us + sx * (intra_us + nic_us + 2.0)) * 1e-6;
  double port = rails >= g && g > 1 ? (g - 1.0) / g : 1.0;
  return L + steps / n * S * fmax(port / (intra * 1e9), 1.0 / (nic * 1e9));
}

/* The rails model against its closed form: the catalog DGX H100 (NIC-bound
 * with 8 rails, port-bound with 1), a port-bound raw node with rails (7/8 of
 * the port's traffic), 4 ranks per node over 8 rails (3/4), and 8 ranks over
 * 2 rails (no rotation: every port carries everything). */
static void test_ndr_ring_closed_form(void)
{
  static const struct {
    int m, g, rails;
    double intra, intra_us, nic, nic_us;
  } cs[] = {
      {2, 8, 8, 357.5, 2.6, 404.9, 30.4},  /* the catalog numbers, 8 rails: NIC-bound */
      {2, 8, 1, 357.5, 2.6, 404.9, 30.4},  /* one rail: the GPU port binds */
      {4, 8, 8, 300.0, 3.0, 1000.0, 5.0},  /* port-bound with rails: 7/8 */
      {3, 4, 8, 300.0, 3.0, 1000.0, 5.0},  /* 4 ranks per node: 3/4 */
      {2, 8, 2, 300.0, 3.0, 1000.0, 5.0},  /* rails < ranks per node: no rotation */
  };
  static const hs_coll_op_t ops[] = {HS_COLL_ALLREDUCE, HS_COLL_ALLGATHER, HS_COLL_REDUCE_SCATTER};
  for (size_t k = 0; k < HS_ARRAY_LEN(cs); k++) {
    hs_cluster_t c;
    hs_topology_t *topo = raw_topo(cs[k].m, cs[k].g, cs[k].intra, cs[k].intra_us, cs[k].nic, cs[k].nic_us,
                                   cs[k].rails, &c);
    int32_t n = cs[k].m * cs[k].g;
    for (size_t o = 0; topo && o < HS_ARRAY_LEN(ops); o++)
      for (double S = 1048576.0; S <= 8589934592.0; S *= 8) {
        double f = ops[o] == HS_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
        double t = f * S / (busbw(topo, ops[o], "node_ring", n, S) * 1e9);
        double want = ring_closed_form_s(ops[o], cs[k].m, cs[k].g, cs[k].intra, cs[k].intra_us, cs[k].nic,
                                         cs[k].nic_us, cs[k].rails, S);
        CHECK_MSG(fabs(t / want - 1) < 1e-9, "case %zu op %d %.0f B: %.9g s, closed form %.9g s", k, (int)ops[o],
                  S, t, want);
      }
    hs_topology_free(topo);
    hs_cluster_destroy(&c);
  }
}

/* The 2 x 8 H100 all_reduce_perf tables over 8 x 400 Gb/s InfiniBand of
 * NVIDIA/nccl-tests issue #309 (stored verbatim; docs/network.md "Rails").
 * The ring table is NDR-IB-8x400's fit file: the catalog DGX H100 (8 rails)
 * must reproduce its busbw within RING_NDR_TOL from 128 MiB up. The same
 * NIC with one rail (the model before rails) is bound by the GPU's fitted
 * NVLink port, under the measured busbw at 4-8 GiB: the reason the entry
 * carries its rails. The default-algorithm table is NCCL's NVLS-Tree, which
 * the default all-reduce runs as nvls_tree from 8 MiB (validation: its
 * figures come from the one-node NVLS fit and the ring fit above) and
 * reproduces within NVLS_TREE_TOL from 1 GiB; below, NCCL's ramp (one
 * line per link) leaves it up to 20% fast at 64 MiB, printed only.
 * HS_H100_TABLE=1 prints both. */
#define NVLS_TREE_TOL 0.05
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
  const hs_interconnect_t *ib = hs_link_catalog_find(&cat, "NDR-IB-8x400");
  double port_GBps = nv ? nv->GBps : 0, nic_GBps = ib ? ib->GBps : 0, nic_us = ib ? ib->latency_us : 0;
  double port_us = nv ? nv->latency_us : 0;
  CHECK(port_GBps > 0 && nic_GBps > 0);
  hs_link_catalog_destroy(&cat);

  hs_cluster_t c, c1;
  hs_topology_t *topo = fx_topo_of(DGX_H100(2), &c);
  hs_topology_t *one = raw_topo(2, 8, port_GBps, port_us, nic_GBps, nic_us, 1, &c1);
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
  for (int32_t r = 0; ok && topo && one && r < ring.n_rows; r++) {
    double S = ring.rows[r].size_bytes, m = ring.rows[r].busbw_GBps[0];
    double b = busbw(topo, HS_COLL_ALLREDUCE, "node_ring", 16, S);
    double b1 = busbw(one, HS_COLL_ALLREDUCE, "node_ring", 16, S);
    if (getenv("HS_H100_TABLE"))
      printf("  NDR 2x8 ring table %10.0f B  measured %.2f  node_ring %.1f GB/s (%+.1f%%), one rail %.1f\n", S, m,
             b, 100 * (b / m - 1), b1);
    if (S < 134217728.0)
      continue; /* below 128 MiB: printed, not checked (one alpha-beta line per link) */
    CHECK_MSG(fabs(b / m - 1) <= RING_NDR_TOL, "%.0f B: measured %.2f, node_ring %.2f GB/s (%+.1f%%)", S, m, b,
              100 * (b / m - 1));
    CHECK_MSG(b1 <= port_GBps * (1 + 1e-9), "%.0f B: one-rail node_ring %.2f above the port's %.1f", S, b1,
              port_GBps);
    if (S >= 4294967296.0)
      CHECK_MSG(m > port_GBps, "%.0f B: measured %.2f not above the port's %.1f GB/s", S, m, port_GBps);
    checked++;
  }
  CHECK_EQ_INT(checked, 7);
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
    /* NVLS-Tree (coll_nvls_tree.c) on the ports' NVLS fit of one node and
     * the NDR ring fit, neither fitted on this table: its busbw within
     * NVLS_TREE_TOL from 1 GiB (1.5-3.5% fast, measured 2026-11-28) */
    CHECK_MSG(fabs(b / m - 1) <= NVLS_TREE_TOL, "%.0f B: default all-reduce %.2f GB/s, NVLS-Tree measured %.2f",
              S, b, m);
    checked++;
  }
  CHECK_EQ_INT(checked, 4);
  hs_nccl_tests_destroy(&ring);
  hs_nccl_tests_destroy(&dflt);
  hs_topology_free(topo);
  hs_topology_free(one);
  hs_cluster_destroy(&c);
  hs_cluster_destroy(&c1);
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
  HS_RUN(test_ndr_ring_closed_form);
  HS_RUN(test_ndr_2x8_tables);
  print_a3mega();
  HS_TEST_END();
}
