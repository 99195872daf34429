/*
 * test_link_catalog.c - the interconnect catalog (clusters/links.json) and
 * cluster files that name its entries.
 *
 * Independent truths: the nccl-tests files stored under
 * clusters/calibration/nccl-tests/ (their measured times and busbw, read
 * here by the nccl-tests parser, not by the code under test) and a re-fit of
 * those files with the importer's fit. Checked: every calibrated entry's
 * numbers equal a re-fit of its files (to the catalog's 4 significant
 * digits); the simulator's collective estimate on a cluster that names the
 * calibrated interconnects is within 3% of the measured time at the largest
 * size of each file (the fit's own residual there is under 1%), and a
 * cluster with the datasheet numbers is not (so the check can fail);
 * uncalibrated entries and raw numbers are reported uncalibrated; bad
 * catalogs and bad references fail with file, field and value.
 */
#include "hs_clusters.h"
#include "hs_net.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE_MSG_REL_TOL 0.03

static void test_catalog_matches_refit(void)
{
  hs_link_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  hs_link_catalog_init(&cat);
  CHECK(hs_link_catalog_load(NULL, &cat, &err) == HS_OK);
  int n_cal = 0;
  for (size_t i = 0; i < cat.n; i++) {
    const hs_interconnect_t *l = &cat.links[i];
    CHECK_MSG(l->source[0] && l->date[0], "%s: no source or date", l->name);
    if (!l->calibrated)
      continue;
    n_cal++;
    hs_nt_import_t im;
    double GBps = 0, lat = 0;
    hs_status_t st = hs_link_refit(l, NULL, &im, &GBps, &lat, &err);
    CHECK_MSG(st == HS_OK, "%s: %s", l->name, err.msg);
    CHECK_REL(GBps, l->GBps, 1e-3);
    CHECK_MSG(fabs(lat - l->latency_us) <= 1e-3 * fmax(l->latency_us, 1.0), "%s: latency %g us, re-fit %g",
              l->name, l->latency_us, lat);
    hs_nt_import_destroy(&im);
  }
  CHECK_MSG(n_cal >= 2, "only %d calibrated interconnects", n_cal);
  hs_link_catalog_destroy(&cat);
}

/* The measured out-of-place time (s) and size of the last row of `file`. */
static void last_row(const char *file, double *bytes, double *time_s, int32_t *nranks)
{
  char path[2048];
  hs_nccl_tests_t t;
  hs_nt_opts_t o;
  hs_error_t err;
  hs_error_init(&err);
  hs_nccl_tests_init(&t);
  hs_nt_opts_init(&o);
  snprintf(path, sizeof path, "%s/clusters/calibration/nccl-tests/%s", getenv("HETSIM_DATA"), file);
  CHECK_MSG(hs_nccl_tests_load(path, &o, &t, &err) == HS_OK, "%s", err.msg);
  *bytes = t.n_rows ? t.rows[t.n_rows - 1].size_bytes : 0;
  *time_s = t.n_rows ? t.rows[t.n_rows - 1].time_us[0] * 1e-6 : 0;
  *nranks = t.nranks;
  hs_nccl_tests_destroy(&t);
}

/* All-reduce estimate (s) of `bytes` over the first n devices of the cluster. */
static double allreduce_s(const char *cluster_json, int32_t n, double bytes)
{
  hs_cluster_t c;
  hs_topology_t *topo = NULL;
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(&c);
  double s = NAN;
  int32_t dev[64];
  if (hs_cluster_parse(cluster_json, "t.json", &c, &err) != HS_OK ||
      hs_topology_new(&c, &topo, &err) != HS_OK) {
    CHECK_MSG(0, "%s", err.msg);
  } else {
    hs_coll_t coll;
    hs_coll_init(&coll);
    for (int32_t i = 0; i < n; i++)
      dev[i] = i;
    coll.op = HS_COLL_ALLREDUCE;
    coll.devices = dev;
    coll.n = n;
    coll.bytes = bytes;
    /* the algorithm the links are fitted with (node_ring across nodes) */
    coll.algo = hs_coll_algo_default(topo, coll.op, dev, n);
    s = hs_coll_estimate_s(topo, &coll);
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
  return s;
}

#define NODES(count, intra, nic)                                                                  \
  "{\"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": " count ", \"gpu\": \"A100-SXM4-80GB\", " \
  "\"gpus_per_node\": 8, \"intra_node\": " intra ", \"nic\": " nic "}]}]}"

static void test_prediction_at_large_messages(void)
{
  static const struct {
    const char *file, *cluster, *datasheet;
  } cases[] = {
      {"a100_sxm4_1x8_all_reduce.txt",
       NODES("1", "{\"interconnect\": \"NVLink3-NVSwitch\"}", "{\"interconnect\": \"HDR-IB-8x200\"}"),
       NODES("1", "{\"GBps\": 300, \"latency_us\": 1}", "{\"GBps\": 200, \"latency_us\": 5}")},
      {"a100_sxm4_2x8_all_reduce.txt",
       NODES("2", "{\"interconnect\": \"NVLink3-NVSwitch\"}", "{\"interconnect\": \"HDR-IB-8x200\"}"),
       NODES("2", "{\"GBps\": 300, \"latency_us\": 1}", "{\"GBps\": 200, \"latency_us\": 5}")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double bytes = 0, measured = 0;
    int32_t n = 0;
    last_row(cases[i].file, &bytes, &measured, &n);
    CHECK(n >= 8 && n <= 64 && bytes > 0);
    if (n < 8 || n > 64)
      continue;
    double cal = allreduce_s(cases[i].cluster, n, bytes);
    double nominal = allreduce_s(cases[i].datasheet, n, bytes);
    CHECK_MSG(fabs(cal / measured - 1) <= LARGE_MSG_REL_TOL, "%s: calibrated %.4g s against measured %.4g s",
              cases[i].file, cal, measured);
    CHECK_MSG(fabs(nominal / measured - 1) > LARGE_MSG_REL_TOL,
              "%s: the datasheet links already predict %.4g s against %.4g s: the check cannot fail",
              cases[i].file, nominal, measured);
  }
}

static void test_reported_uncalibrated(void)
{
  hs_cluster_t c;
  hs_error_t err;
  char buf[512], unc[256];
  hs_error_init(&err);
  hs_cluster_init(&c);
  CHECK(hs_cluster_parse(NODES("2", "{\"interconnect\": \"NVLink3-NVSwitch\"}",
                               "{\"interconnect\": \"HDR-IB-8x200\"}"), "t.json", &c, &err) == HS_OK);
  CHECK_EQ_INT(hs_cluster_describe_links(&c, buf, sizeof buf, unc, sizeof unc), 0);
  CHECK_CONTAINS(buf, "intra_node NVLink3-NVSwitch calibrated; nic HDR-IB-8x200 calibrated");
  /* a profile that rewrites the numbers makes the port raw again */
  c.nodes[0].nic_GBps = 100;
  CHECK_EQ_INT(hs_cluster_describe_links(&c, buf, sizeof buf, unc, sizeof unc), 1);
  CHECK_CONTAINS(unc, "nic 100 GB/s");
  CHECK(hs_cluster_parse("{\"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 2, \"gpu\": \"H100-SXM5-80GB\", "
                         "\"gpus_per_node\": 8, \"intra_node\": {\"interconnect\": \"NVLink4-NVSwitch\"}}]}]}",
                         "t.json", &c, &err) == HS_OK);
  /* NVLink4-NVSwitch is fitted (8x H100 ring tables, 2026-11-25); the raw default NIC is not */
  CHECK_EQ_INT(hs_cluster_describe_links(&c, buf, sizeof buf, unc, sizeof unc), 1);
  CHECK_CONTAINS(buf, "intra_node NVLink4-NVSwitch calibrated");
  /* NVLink4-NVSwitch carries "nvls" (NVLink SHARP) onto its nodes' GPU
   * ports; NVLink3 (A100) does not */
  {
    hs_topology_t *topo = NULL;
    CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
    if (topo) {
      size_t gpu_ports = 0, nvls = 0;
      for (size_t i = 0; i < hs_topology_n_links(topo); i++) {
        const hs_link_t *l = &hs_topology_links(topo)[i];
        gpu_ports += l->kind == HS_LINK_GPU_UP || l->kind == HS_LINK_GPU_DOWN;
        nvls += l->nvls;
        CHECK(!l->nvls || l->kind == HS_LINK_GPU_UP || l->kind == HS_LINK_GPU_DOWN);
      }
      CHECK_EQ_INT((int)gpu_ports, 32);
      CHECK_EQ_INT((int)nvls, 32);
    }
    hs_topology_free(topo);
  }
  CHECK_CONTAINS(unc, "nic 25 GB/s");
  hs_cluster_destroy(&c);
}

static void expect_cluster_fail(const char *json, hs_status_t want, const char *msg)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_cluster_parse(json, "cluster.json", &c, &err);
  CHECK_MSG(st == want, "got %s (%s), expected %s", hs_status_name(st), err.msg, hs_status_name(want));
  CHECK_CONTAINS(err.msg, msg);
  CHECK_MSG(strncmp(err.msg, "cluster.json: ", 14) == 0, "message does not name the file: %s", err.msg);
  hs_cluster_destroy(&c);
}

static void test_bad_references(void)
{
  expect_cluster_fail(NODES("1", "{\"interconnect\": \"NVLink9\"}", "{}"), HS_ENOTFOUND,
                      "sites[0].nodes[0].intra_node.interconnect: unknown interconnect \"NVLink9\"");
  expect_cluster_fail(NODES("1", "{\"interconnect\": \"HDR-IB-8x200\"}", "{}"), HS_EINVAL,
                      "interconnect \"HDR-IB-8x200\" has scope nic, not intra_node");
  expect_cluster_fail(NODES("1", "{\"interconnect\": \"NVLink3-NVSwitch\", \"GBps\": 1}", "{}"), HS_EINVAL,
                      "sites[0].nodes[0].intra_node: give \"interconnect\" or GBps/latency_us, not both");
  expect_cluster_fail(NODES("1", "{\"interconnect\": 3}", "{}"), HS_EINVAL,
                      "sites[0].nodes[0].intra_node.interconnect");
}

static void expect_catalog_fail(const char *json, hs_status_t want, const char *msg)
{
  hs_link_catalog_t cat;
  hs_error_t err;
  hs_link_catalog_init(&cat);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_link_catalog_parse(json, "links.json", &cat, &err);
  CHECK_MSG(st == want, "got %s (%s), expected %s for %.160s", hs_status_name(st), err.msg,
            hs_status_name(want), json);
  CHECK_CONTAINS(err.msg, msg);
  CHECK_MSG(strncmp(err.msg, "links.json: ", 12) == 0, "message does not name the file: %s", err.msg);
  CHECK(cat.n == 0 && cat.links == NULL);
}

#define ENTRY(extra)                                                                                \
  "{\"interconnects\": [{\"name\": \"X\", \"scope\": \"nic\", \"GBps\": 10, \"latency_us\": 2, "    \
  "\"nominal_GBps\": 12, \"source\": \"s\", \"date\": \"d\"" extra "}]}"

static void test_bad_catalogs(void)
{
  hs_link_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  hs_link_catalog_init(&cat);
  CHECK(hs_link_catalog_parse(ENTRY(""), "links.json", &cat, &err) == HS_OK);
  CHECK(cat.n == 1 && !cat.links[0].calibrated && hs_link_catalog_find(&cat, "X"));
  hs_link_catalog_destroy(&cat);
  expect_catalog_fail("{\"interconnects\": [{\"name\": \"X\", \"scope\": \"pcie\", \"GBps\": 1, \"latency_us\": 1, "
                      "\"nominal_GBps\": 1, \"source\": \"s\", \"date\": \"d\"}]}", HS_EINVAL,
                      "interconnects[0].scope: must be \"intra_node\" or \"nic\", got \"pcie\"");
  expect_catalog_fail("{\"interconnects\": [{\"name\": \"X\", \"scope\": \"nic\", \"GBps\": -3, \"latency_us\": 1, "
                      "\"nominal_GBps\": 1, \"source\": \"s\", \"date\": \"d\"}]}", HS_EINVAL,
                      "interconnects[0].GBps");
  expect_catalog_fail("{\"interconnects\": [{\"name\": \"X\", \"scope\": \"nic\", \"GBps\": 1, \"latency_us\": 1, "
                      "\"nominal_GBps\": 1, \"date\": \"d\"}]}", HS_EINVAL, "interconnects[0].source");
  expect_catalog_fail("{\"interconnects\": [{\"name\": \"X\", \"scope\": \"nic\", \"GBps\": 1, \"latency_us\": 1, "
                      "\"nominal_GBps\": 1, \"source\": \"\", \"date\": \"d\"}]}", HS_EINVAL,
                      "interconnects[0].source: must not be empty");
  expect_catalog_fail(ENTRY(", \"fit\": {\"gpu\": \"A100-SXM4-80GB\", \"files\": [\"../../etc/passwd\"]}"),
                      HS_EINVAL, "interconnects[0].fit.files[0]: \"../../etc/passwd\": must be a path inside");
  expect_catalog_fail(ENTRY(", \"fit\": {\"gpu\": \"A100-SXM4-80GB\", \"files\": []}"), HS_EINVAL,
                      "interconnects[0].fit.files: must list 1 to 8 nccl-tests files, got 0");
  expect_catalog_fail(ENTRY(", \"fit\": {\"files\": [\"a.txt\"]}"), HS_EINVAL, "interconnects[0].fit.gpu");
  expect_catalog_fail("{\"interconnects\": [{\"name\": \"X\", \"scope\": \"nic\", \"GBps\": 1, \"latency_us\": 1, "
                      "\"nominal_GBps\": 1, \"source\": \"s\", \"date\": \"d\"}, {\"name\": \"X\", \"scope\": "
                      "\"nic\", \"GBps\": 1, \"latency_us\": 1, \"nominal_GBps\": 1, \"source\": \"s\", \"date\": "
                      "\"d\"}]}", HS_EINVAL, "interconnects[1].name: duplicate interconnect \"X\" (also interconnects[0])");
  /* "nvls": a boolean, and only for an intra_node switch */
  expect_catalog_fail(ENTRY(", \"nvls\": \"yes\""), HS_EINVAL, "interconnects[0].nvls");
  expect_catalog_fail(ENTRY(", \"nvls\": true"), HS_EINVAL,
                      "interconnects[0].nvls: true only for an intra_node interconnect");
  expect_catalog_fail("{\"interconnects\": 5}", HS_EINVAL, "interconnects");
  expect_catalog_fail("{\"interconnects\": [", HS_EPARSE, "malformed JSON");
  /* a calibrated entry whose files do not exist: the re-fit names the file */
  CHECK(hs_link_catalog_parse(ENTRY(", \"fit\": {\"gpu\": \"A100-SXM4-80GB\", \"files\": [\"nope.txt\"]}"),
                              "links.json", &cat, &err) == HS_OK);
  hs_nt_import_t im;
  double g = 0, l = 0;
  CHECK(hs_link_refit(&cat.links[0], NULL, &im, &g, &l, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "nope.txt");
  hs_nt_import_destroy(&im);
  hs_error_init(&err);
  /* a single-node file cannot calibrate a nic entry */
  hs_link_catalog_destroy(&cat);
  CHECK(hs_link_catalog_parse(ENTRY(", \"fit\": {\"gpu\": \"A100-SXM4-80GB\", \"files\": "
                                    "[\"nccl-tests/a100_sxm4_1x8_all_reduce.txt\"]}"),
                              "links.json", &cat, &err) == HS_OK);
  CHECK(hs_link_refit(&cat.links[0], NULL, &im, &g, &l, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "interconnect \"X\": its files set no nic link");
  hs_nt_import_destroy(&im);
  hs_link_catalog_destroy(&cat);
}

int main(void)
{
  HS_RUN(test_catalog_matches_refit);
  HS_RUN(test_prediction_at_large_messages);
  HS_RUN(test_reported_uncalibrated);
  HS_RUN(test_bad_references);
  HS_RUN(test_bad_catalogs);
  HS_TEST_END();
}
