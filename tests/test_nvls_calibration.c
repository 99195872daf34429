/*
 * test_nvls_calibration.c - the published busbw tables under
 * clusters/calibration/nccl-tests/azure_*.txt, the NVLS fit of
 * NVLink4-NVSwitch on them, and the all-reduce choice inside one node.
 *
 * Independent truths: the numbers printed on the published pages (first and
 * last rows checked against the page as read), a re-fit of the stored table,
 * the H200 table (same NVLink4 switch, never fitted), and the A100 table
 * (NVLink3 ring, never fitted: the NVLink3 entry is fitted on Meta's gcm
 * file). Checked: the loader's errors name file, line and value; the catalog
 * equals a re-fit; the default all-reduce on 8 H100 (cluster naming
 * NVLink4-NVSwitch) is nvls at large sizes and within LARGE_TOL of the
 * published busbw at 256 MiB-8 GiB on H100 and H200, where the datasheet
 * port in the same model would be 46% fast; A100 stays on the ring and is
 * within 3% of its table at 1-8 GiB.
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

#define LARGE_TOL 0.08 /* busbw, rows >= 256 MiB */

static void expect_parse_fail(const char *text, const char *needle)
{
  hs_busbw_table_t t;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_busbw_table_parse(text, "tab.txt", &t, &err);
  CHECK_MSG(st == HS_EINVAL, "got %s for %s", hs_status_name(st), needle);
  CHECK_CONTAINS(err.msg, needle);
  CHECK_MSG(strncmp(err.msg, "tab.txt", 7) == 0, "message does not name the file: %s", err.msg);
  CHECK(t.n == 0 && t.size_bytes == NULL);
  hs_busbw_table_destroy(&t);
}

#define HDR "collective all_reduce\nalgorithm nvls\nranks 8\ngpu H100-SXM5-80GB\n"

static void test_parse_errors(void)
{
  expect_parse_fail(HDR "1024 0.07\n", "1 rows, need at least 2");
  expect_parse_fail(HDR "1024 0.07\n1024 0.1\n", "tab.txt:6: size_bytes 1024: sizes must increase");
  expect_parse_fail(HDR "1024 0.07\n2048 -1\n", "tab.txt:6: busbw_GBps \"-1\"");
  expect_parse_fail(HDR "1024 0.07\n2048 x\n", "busbw_GBps \"x\"");
  expect_parse_fail(HDR "1024.5 0.07\n2048 1\n", "tab.txt:5: size_bytes \"1024.5\"");
  expect_parse_fail(HDR "1024 0.07 1K extra\n", "tab.txt:5: a row is");
  expect_parse_fail("collective all_reduce\nalgorithm nvls\ngpu X\n1024 0.07\nranks 4\n", "tab.txt:5: ranks after the rows");
  expect_parse_fail(HDR "ranks 4\n", "ranks given twice");
  expect_parse_fail("collective all_reduce\nalgorithm nvls\nranks 1\n", "tab.txt:3: ranks \"1\"");
  expect_parse_fail("collective allsum\n", "collective \"allsum\"");
  expect_parse_fail("algorithm magic\n", "algorithm \"magic\"");
  expect_parse_fail("colective all_reduce\n", "tab.txt:1: \"colective\"");
  expect_parse_fail("collective all_reduce\nalgorithm nvls\nranks 8\n1024 1\n2048 2\n", "missing gpu");
  expect_parse_fail("", "missing collective");
  /* comments and blank lines are skipped; CRLF accepted */
  hs_busbw_table_t t;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_busbw_table_parse("# c\r\n\n" HDR "1024 0.07 1K\r\n2048 0.14\n", "t", &t, &err) == HS_OK);
  CHECK_EQ_INT(t.n, 2);
  CHECK_EQ_INT(t.nranks, 8);
  /* t = S 2(n-1)/n / busbw */
  CHECK_REL(hs_busbw_table_time_s(&t, 0), 1024 * 1.75 / 0.07e9, 1e-12);
  hs_busbw_table_destroy(&t);
}

static void load(const char *name, hs_busbw_table_t *t)
{
  char path[2048];
  hs_error_t err;
  hs_error_init(&err);
  snprintf(path, sizeof path, "%s/clusters/calibration/nccl-tests/%s", getenv("HETSIM_DATA"), name);
  CHECK_MSG(hs_busbw_table_load(path, t, &err) == HS_OK, "%s", err.msg);
}

/* The tables as published: 24 rows 1 KiB to 8 GiB, first and last busbw as
 * printed on the pages. */
static void test_stored_tables(void)
{
  static const struct {
    const char *file, *algo;
    double first, last;
  } cases[] = {{"azure_nd_h100_v5_nvls_all_reduce.txt", "nvls", 0.07, 478.87},
               {"azure_nd_h200_v5_nvls_all_reduce.txt", "nvls", 0.06, 479.98},
               {"azure_nd_a100_v4_all_reduce.txt", "default", 0.04, 231.58}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_busbw_table_t t;
    load(cases[i].file, &t);
    CHECK_EQ_INT(t.n, 24);
    if (t.n == 24) {
      CHECK(t.size_bytes[0] == 1024 && t.size_bytes[23] == 8589934592.0);
      CHECK(t.busbw_GBps[0] == cases[i].first && t.busbw_GBps[23] == cases[i].last);
    }
    CHECK_EQ_INT(t.nranks, 8);
    CHECK_MSG(strcmp(t.algorithm, cases[i].algo) == 0, "%s: algorithm %s", cases[i].file, t.algorithm);
    hs_busbw_table_destroy(&t);
  }
}

static void test_catalog_matches_refit(void)
{
  hs_link_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  hs_link_catalog_init(&cat);
  CHECK(hs_link_catalog_load(NULL, &cat, &err) == HS_OK);
  int n = 0;
  for (size_t i = 0; i < cat.n; i++) {
    const hs_interconnect_t *l = &cat.links[i];
    if (!l->nvls_fit_file[0])
      continue;
    n++;
    hs_busbw_table_t t;
    hs_nvls_fit_t f;
    CHECK_MSG(hs_link_refit_nvls(l, NULL, &t, &f, &err) == HS_OK, "%s", err.msg);
    CHECK_REL(f.GBps, l->nvls_GBps, 1e-3);
    CHECK_REL(f.latency_us, l->nvls_latency_us, 1e-3);
    CHECK(l->nvls_GBps < l->GBps);
    /* the fit's own line, by hand at the largest row: T = L + 9 S / (8 B) */
    double S = t.size_bytes[t.n - 1];
    double T = f.latency_us * 1e-6 + 9 * S / (8 * f.GBps * 1e9);
    CHECK(fabs(1.75 * S / T / 1e9 / t.busbw_GBps[t.n - 1] - 1) < LARGE_TOL);
    hs_busbw_table_destroy(&t);
  }
  CHECK_EQ_INT(n, 1); /* NVLink4-NVSwitch */
  hs_link_catalog_destroy(&cat);
}

#define NODE8(gpu, link)                                                                         \
  "{\"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 1, \"gpu\": \"" gpu "\", "             \
  "\"gpus_per_node\": 8, \"intra_node\": {\"interconnect\": \"" link "\"}}]}]}"

/* All-reduce estimates over the 8 GPUs of the one-node cluster: the
 * default's, nvls's and the ring's (NAN where the algorithm refuses). */
static void estimates(hs_topology_t *topo, double bytes, double *def, double *nvls, double *ring)
{
  static const int32_t dev[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  hs_coll_t c;
  hs_coll_init(&c);
  c.op = HS_COLL_ALLREDUCE;
  c.devices = dev;
  c.n = 8;
  c.bytes = bytes;
  *def = hs_coll_estimate_s(topo, &c);
  c.algo = hs_coll_algo_find("nvls");
  *nvls = hs_coll_estimate_s(topo, &c);
  c.algo = hs_coll_algo_find("ring");
  *ring = hs_coll_estimate_s(topo, &c);
}

/* Predicted busbw against each published row; prints the per-band errors. */
static void test_h100_h200_prediction(void)
{
  static const struct {
    const char *file, *cluster;
  } cases[] = {{"azure_nd_h100_v5_nvls_all_reduce.txt", NODE8("H100-SXM5-80GB", "NVLink4-NVSwitch")},
               {"azure_nd_h200_v5_nvls_all_reduce.txt", NODE8("H200-SXM-141GB", "NVLink4-NVSwitch")}};
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_cluster_t c;
    hs_topology_t *topo = fx_topo_of(cases[k].cluster, &c);
    hs_busbw_table_t t;
    load(cases[k].file, &t);
    double band_max[3] = {0, 0, 0};
    int n_large = 0;
    for (int32_t i = 0; topo && i < t.n; i++) {
      double S = t.size_bytes[i], def, nv, ring;
      estimates(topo, S, &def, &nv, &ring);
      CHECK(isfinite(def) && isfinite(nv) && isfinite(ring));
      /* NCCL's tuner: the ring's LL protocol below 481993 B on 8 ranks of
       * the catalog's 357.5 GB/s ports, NVLS above (tests/test_coll_formulas.c
       * derives the rule; here 8 us / (1/50.114 - 1/297.92) ns/B: LL's
       * min(87.7, 357.5/4) GB/s x 8/14 against NVLS's 5/6 x 357.5) */
      CHECK(def == (S < 481993 ? ring : nv));
      double pred = 1.75 * S / def / 1e9, err = pred / t.busbw_GBps[i] - 1;
      int band = S < 1048576 ? 0 : S < 268435456 ? 1 : 2;
      if (getenv("HS_NVLS_TABLE"))
        printf("  %s %.0f %s %.2f %.2f %+.1f%% (nvls alone %.2f)\n", cases[k].file, S,
               def == nv ? "nvls" : "ring", t.busbw_GBps[i], pred, 100 * err, 1.75 * S / nv / 1e9);
      band_max[band] = fmax(band_max[band], fabs(err));
      if (band == 2) {
        n_large++;
        CHECK_MSG(def == nv, "%s: %.0f B: the default is not nvls", cases[k].file, S);
        CHECK_MSG(fabs(err) <= LARGE_TOL, "%s: %.0f B: predicted busbw %.2f GB/s, published %.2f",
                  cases[k].file, S, pred, t.busbw_GBps[i]);
        /* the datasheet port in the same model: 2 (7/8) (8/9) 450 = 700 GB/s */
        CHECK(1.75 * (8.0 / 9.0) * 450 / t.busbw_GBps[i] - 1 > 0.4);
      }
    }
    CHECK_EQ_INT(n_large, 6);
    printf("  %s: max |busbw error| < 1 MiB %.1f%%, 1-256 MiB %.1f%%, >= 256 MiB %.1f%%\n",
           cases[k].file, 100 * band_max[0], 100 * band_max[1], 100 * band_max[2]);
    hs_busbw_table_destroy(&t);
    hs_topology_free(topo);
    hs_cluster_destroy(&c);
  }
}

/* NVLink3 (A100) has no NVLink SHARP: the default stays the ring, and the
 * calibrated ring (fitted on another file) predicts Azure's table. */
static void test_a100_ring(void)
{
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(NODE8("A100-SXM4-80GB", "NVLink3-NVSwitch"), &c);
  hs_busbw_table_t t;
  load("azure_nd_a100_v4_all_reduce.txt", &t);
  int n = 0;
  for (int32_t i = 0; topo && i < t.n; i++) {
    double S = t.size_bytes[i], def, nv, ring;
    estimates(topo, S, &def, &nv, &ring);
    CHECK(isnan(nv)); /* refused: no NVLS ports */
    CHECK(def == ring);
    if (S >= 1073741824.0) {
      double pred = 1.75 * S / def / 1e9;
      CHECK_MSG(fabs(pred / t.busbw_GBps[i] - 1) <= 0.03, "%.0f B: %.2f against %.2f", S, pred,
                t.busbw_GBps[i]);
      n++;
    }
  }
  CHECK_EQ_INT(n, 4);
  hs_busbw_table_destroy(&t);
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

/* Small H100 all-reduces stay on the ring (NCCL's tuner: LL below 481993 B),
 * large ones go nvls: the tuner picks, the links decide how long it takes
 * (with the catalog's fitted ring port, 357.5 GB/s, this model's ring is
 * slower than its NVLS at large sizes, as NCCL's is). */
static void test_h100_choice_by_size(void)
{
  hs_cluster_t c;
  hs_topology_t *topo = fx_topo_of(NODE8("H100-SXM5-80GB", "NVLink4-NVSwitch"), &c);
  double def, nv, ring;
  if (topo) {
    estimates(topo, 4096, &def, &nv, &ring);
    CHECK(def == ring && ring < nv);
    estimates(topo, 1e9, &def, &nv, &ring);
    CHECK(def == nv);
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

static void expect_catalog_fail(const char *entry_extra, const char *needle)
{
  char json[2048];
  snprintf(json, sizeof json,
           "{\"interconnects\": [{\"name\": \"X\", \"scope\": \"intra_node\", \"GBps\": 450, "
           "\"latency_us\": 1, \"nominal_GBps\": 450, \"source\": \"s\", \"date\": \"d\"%s}]}",
           entry_extra);
  hs_link_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_link_catalog_init(&cat);
  CHECK_MSG(hs_link_catalog_parse(json, "links.json", &cat, &err) == HS_EINVAL, "accepted %s", entry_extra);
  CHECK_CONTAINS(err.msg, needle);
  CHECK_MSG(strncmp(err.msg, "links.json", 10) == 0, "message does not name the file: %s", err.msg);
  hs_link_catalog_destroy(&cat);
}

static void test_catalog_errors(void)
{
  expect_catalog_fail(", \"nvls_GBps\": 300, \"nvls_latency_us\": 40", "nvls_GBps: only for an interconnect "
                      "with \"nvls\": true");
  expect_catalog_fail(", \"nvls\": true, \"nvls_GBps\": 300", "nvls_GBps only");
  expect_catalog_fail(", \"nvls\": true, \"nvls_GBps\": 500, \"nvls_latency_us\": 40",
                      "nvls_GBps: 500 is above the port's GBps 450");
  expect_catalog_fail(", \"nvls\": true, \"nvls_GBps\": 300, \"nvls_latency_us\": 0",
                      "nvls_latency_us");
  expect_catalog_fail(", \"nvls\": true, \"nvls_GBps\": 300, \"nvls_latency_us\": 40, "
                      "\"nvls_fit\": {\"file\": \"../x\", \"min_bytes\": 0}",
                      "nvls_fit.file: \"../x\"");
  expect_catalog_fail(", \"nvls\": true, \"nvls_GBps\": 300, \"nvls_latency_us\": 40, "
                      "\"nvls_fit\": {\"file\": \"x\", \"min_bytes\": -1}",
                      "min_bytes");
}

int main(void)
{
  HS_RUN(test_parse_errors);
  HS_RUN(test_stored_tables);
  HS_RUN(test_catalog_matches_refit);
  HS_RUN(test_h100_h200_prediction);
  HS_RUN(test_a100_ring);
  HS_RUN(test_h100_choice_by_size);
  HS_RUN(test_catalog_errors);
  HS_TEST_END();
}
