/*
 * test_import_nccl.c - `hetsim import nccl-tests` (validate/import_nccl_tests*.c)
 * and the links it writes into a profile (sim/profile_json.c).
 *
 * Truths: the numbers printed in the real samples (tests/data/import), typed
 * here from the files; nccl-tests' own busbw convention; synthetic files
 * written in nccl-tests' format from the closed forms of docs/network.md
 * (ring all-reduce on one node 2(n-1)(a + S/(nB)); a 2-rank ring across two
 * nodes (a_intra + a_nic + a_fabric) + S/(2B)), whose link parameters the
 * import must recover.
 */
#include "hs_clusters.h"
#include "hs_json.h"
#include "hs_net.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static void test_real_all_gather(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_nccl_tests_t t;
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  CHECK_MSG(hs_nccl_tests_load(hs_test_data("import/nccl_all_gather_2xH200.txt"), &o, &t, &err) ==
                HS_OK, "%s", err.msg);
  CHECK(t.coll == HS_NT_ALL_GATHER);
  CHECK_EQ_INT(t.nranks, 2);
  CHECK_EQ_INT(t.n_nodes, 2);
  CHECK_EQ_INT(t.gpus_per_node, 1);
  CHECK(strcmp(t.gpu_name, "NVIDIA H200") == 0);
  CHECK_EQ_INT(t.n_rows, 24);
  if (t.n_rows == 24) {
    /* first and last rows, as printed */
    const hs_nt_row_t *a = &t.rows[0], *z = &t.rows[23];
    CHECK(a->size_bytes == 1024 && a->count == 128 && strcmp(a->type, "float") == 0 &&
          strcmp(a->redop, "none") == 0 && a->root == -1);
    CHECK(a->time_us[0] == 21.75 && a->algbw_GBps[0] == 0.05 && a->busbw_GBps[0] == 0.02 &&
          a->wrong[0] == 0);
    CHECK(a->time_us[1] == 20.94 && a->algbw_GBps[1] == 0.05 && a->busbw_GBps[1] == 0.02);
    CHECK(z->size_bytes == 8589934592.0 && z->count == 1073741824);
    CHECK(z->time_us[0] == 133370 && z->algbw_GBps[0] == 64.41 && z->busbw_GBps[0] == 32.20);
    CHECK(z->time_us[1] == 128890 && z->algbw_GBps[1] == 66.65 && z->busbw_GBps[1] == 33.32);
    CHECK(t.rows[12].time_us[0] == 119.5 && t.rows[12].busbw_GBps[0] == 17.55);
  }
  /* nccl-tests' conventions hold on every row: algbw = size / time (GB/s
   * with time in us), busbw = algbw (n-1)/n for all-gather */
  for (int32_t i = 0; i < t.n_rows; i++)
    for (int k = 0; k < 2; k++) {
      const hs_nt_row_t *r = &t.rows[i];
      double algbw = r->size_bytes / r->time_us[k] / 1e3;
      CHECK_MSG(fabs(algbw - r->algbw_GBps[k]) <= 0.005 + 5e-4 * algbw, "row %d: %g vs %g", i,
                algbw, r->algbw_GBps[k]);
      CHECK(fabs(r->algbw_GBps[k] * 0.5 - r->busbw_GBps[k]) <= 0.0076);
    }
  hs_nccl_tests_destroy(&t);
}

static void test_real_all_reduce_ranks_inferred(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_nccl_tests_t t;
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  const char *f = hs_test_data("import/nccl_all_reduce_coreweave_a100.txt");
  CHECK_MSG(hs_nccl_tests_load(f, &o, &t, &err) == HS_OK, "%s", err.msg);
  /* the header lists 5 ranks then "...": the ranks come from busbw/algbw
   * = 2(n-1)/n = 147.85 / 76.31 -> n = 32 */
  CHECK(t.coll == HS_NT_ALL_REDUCE);
  CHECK_EQ_INT(t.nranks, 32);
  CHECK_EQ_INT(t.n_nodes, 0);
  CHECK_EQ_INT(t.n_rows, 5);
  if (t.n_rows == 5) {
    CHECK(t.rows[0].size_bytes == 536870912 && t.rows[0].time_us[0] == 7035.5 &&
          t.rows[0].algbw_GBps[0] == 76.31 && t.rows[0].busbw_GBps[0] == 147.85);
    CHECK(t.rows[4].time_us[0] == 104180 && t.rows[4].busbw_GBps[0] == 159.75 &&
          t.rows[4].time_us[1] == 106210 && t.rows[4].busbw_GBps[1] == 156.70);
  }
  hs_nccl_tests_destroy(&t);
  /* a wrong rank count contradicts busbw: named with the file and line */
  o.nranks = 16;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_nccl_tests_load(f, &o, &t, &err);
  CHECK(hs_status_exit_code(st) == 2);
  CHECK_CONTAINS(err.msg, "nccl_all_reduce_coreweave_a100.txt:16:");
  CHECK_CONTAINS(err.msg, "16 ranks");
  /* with the node size, the import fits the NIC and predicts every row */
  hs_nt_opts_init(&o);
  o.gpus_per_node = 8;
  hs_nt_import_t im;
  hs_error_init(&err);
  CHECK_MSG(hs_nt_import(&f, 1, &o, NULL, &im, &err) == HS_OK, "%s", err.msg);
  CHECK(strcmp(im.links.gpu, "A100-SXM4-80GB") == 0);
  CHECK(im.links.has_nic && !im.links.has_intra);
  for (int32_t r = 0; r < im.files[0].n_rows; r++)
    CHECK_REL(im.fits[0].pred_busbw_GBps[r], im.files[0].rows[r].busbw_GBps[0], 0.02);
  hs_nt_import_destroy(&im);
}

/* GCP A3 Mega, 2 x 8 H100, all_reduce_perf 8 B - 8 GiB: the busbw at 8 GiB,
 * 338.82 GB/s, is above any ring's bound (the per-node NIC rate, 200 GB/s
 * line rate for 8 x 200 Gb/s): NCCL ran its tree. With the catalog links
 * (NVLink4-NVSwitch, and HDR-IB-8x200 for the 8 x 200 Gb/s NICs) the
 * default all-reduce picks the tree there and predicts it within 5%; the
 * ring alone stays under the NIC's 186.8 GB/s. Validation, not a fit: no
 * link is set from this file. */
static void test_real_a3mega_tree(void)
{
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  hs_nccl_tests_t t;
  hs_error_t err;
  hs_error_init(&err);
  const char *f = hs_test_data("import/nccl_all_reduce_a3mega_h100_2x8.txt");
  CHECK_MSG(hs_nccl_tests_load(f, &o, &t, &err) == HS_OK, "%s", err.msg);
  CHECK(t.coll == HS_NT_ALL_REDUCE);
  CHECK_EQ_INT(t.nranks, 16);
  CHECK_EQ_INT(t.n_nodes, 2);
  CHECK_EQ_INT(t.n_rows, 31);
  double S = 0, busbw = 0;
  if (t.n_rows == 31) {
    S = t.rows[30].size_bytes;
    busbw = t.rows[30].busbw_GBps[0];
    CHECK(S == 8589934592.0 && t.rows[30].time_us[0] == 47535 && busbw == 338.82);
  }
  hs_nccl_tests_destroy(&t);
  const char *cl = "{\"name\": \"a3mega\", \"sites\": [{\"name\": \"dc\", \"nodes\": [{"
                   "\"count\": 2, \"gpu\": \"H100-SXM5-80GB\", \"gpus_per_node\": 8, "
                   "\"intra_node\": {\"interconnect\": \"NVLink4-NVSwitch\"}, "
                   "\"nic\": {\"interconnect\": \"HDR-IB-8x200\"}}], "
                   "\"fabric\": {\"latency_us\": 2.0}}]}";
  hs_cluster_t c;
  hs_cluster_init(&c);
  hs_topology_t *topo = NULL;
  hs_error_init(&err);
  if (hs_cluster_parse(cl, "a3mega.json", &c, &err) != HS_OK ||
      hs_topology_new(&c, &topo, &err) != HS_OK) {
    CHECK_MSG(0, "%s", err.msg);
  } else {
    int32_t dev[16];
    for (int32_t i = 0; i < 16; i++)
      dev[i] = i;
    hs_coll_t coll;
    hs_coll_init(&coll);
    coll.op = HS_COLL_ALLREDUCE;
    coll.devices = dev;
    coll.n = 16;
    coll.bytes = S;
    double f_bus = 2.0 * 15 / 16 * S / 1e9; /* busbw x seconds */
    double t_auto = hs_coll_estimate_s(topo, &coll);
    coll.algo = hs_coll_algo_find("node_ring");
    double t_ring = hs_coll_estimate_s(topo, &coll);
    CHECK_REL(f_bus / t_auto, busbw, 0.05);
    CHECK(f_bus / t_ring < 200.0);
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

/* Writes an nccl-tests file of `n` ranks on `hosts` hosts whose out-of-place
 * and in-place times are t_us(size). */
static char *synth(const char *coll, int n, int hosts, double (*t_us)(double, const void *),
                   const void *ctx)
{
  size_t cap = 1 << 16, len = 0;
  char *b = malloc(cap);
  len += (size_t)snprintf(b + len, cap - len, "# nThread 1 nGpus 1 minBytes 1024 maxBytes "
                          "1073741824 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n#\n"
                          "# Using devices\n");
  for (int r = 0; r < n; r++)
    len += (size_t)snprintf(b + len, cap - len, "#  Rank %2d Group  0 Pid %6d on     host-%d "
                            "device %2d [0x%02x] NVIDIA H100 80GB HBM3\n", r, 1000 + r,
                            r * hosts / n, r % (n / hosts), r);
  len += (size_t)snprintf(b + len, cap - len,
                          "#\n#                                                              "
                          "out-of-place                       in-place\n"
                          "#       size         count      type   redop    root     time   algbw"
                          "   busbw #wrong     time   algbw   busbw #wrong\n"
                          "#        (B)    (elements)                               (us)  (GB/s)"
                          "  (GB/s)            (us)  (GB/s)  (GB/s)\n");
  bool ar = strcmp(coll, "all_reduce") == 0;
  double f = ar ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
  for (double s = 1024; s <= 1073741824.0; s *= 4) {
    double t = t_us(s, ctx);
    char ts[32];
    snprintf(ts, sizeof ts, "%.2f", t);
    double tp = atof(ts); /* what the file says: algbw from the printed time */
    double alg = s / tp / 1e3;
    long long count = (long long)(ar ? s / 4 : s / 4 / n);
    len += (size_t)snprintf(b + len, cap - len,
                            "  %10.0f  %12lld     float  %6s      -1  %7s  %6.2f  %6.2f      0  %7s"
                            "  %6.2f  %6.2f      0\n", s, count, ar ? "sum" : "none", ts, alg,
                            alg * f, ts, alg, alg * f);
  }
  return b;
}

typedef struct truth {
  int n;
  double a_us, B_GBps;
} truth_t;

/* ring all-reduce on one node: 2(n-1)(a + S/(nB)) */
static double ring_ar_us(double s, const void *ctx)
{
  const truth_t *t = ctx;
  return 2.0 * (t->n - 1) * (t->a_us + s / (t->n * t->B_GBps * 1e9) * 1e6);
}

/* 2-rank ring all-gather across two nodes of one GPU: (n-1)(a_path + S/(nB))
 * with a_path = intra 1.5 us (the intra-node link of the same import) + nic
 * a + fabric 2 us (docs/clusters.md default) */
static double ring_ag2_us(double s, const void *ctx)
{
  const truth_t *t = ctx;
  return (1.5 + t->a_us + 2.0) + s / (2 * t->B_GBps * 1e9) * 1e6;
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void test_fit_recovers_links(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  /* intra-node: 8 ranks, a = 1.5 us, B = 200 GB/s */
  truth_t ti = {8, 1.5, 200.0};
  char *txt = synth("all_reduce", 8, 1, ring_ar_us, &ti);
  char p1[] = "/tmp/hs_test_nt_XXXXXX";
  int fd = mkstemp(p1);
  CHECK(fd >= 0);
  if (fd >= 0)
    close(fd);
  char path_ar[64], path_ag[64];
  snprintf(path_ar, sizeof path_ar, "%s_all_reduce.txt", p1);
  snprintf(path_ag, sizeof path_ag, "%s_all_gather.txt", p1);
  write_file(path_ar, txt);
  free(txt);
  /* inter-node: 2 ranks on 2 hosts, nic a = 5 us, B = 25 GB/s */
  truth_t tx = {2, 5.0, 25.0};
  txt = synth("all_gather", 2, 2, ring_ag2_us, &tx);
  write_file(path_ag, txt);
  free(txt);
  const char *paths[2] = {path_ar, path_ag};
  hs_nt_import_t im;
  CHECK_MSG(hs_nt_import(paths, 2, &o, "H100-SXM5-80GB", &im, &err) == HS_OK, "%s", err.msg);
  if (im.n_files == 2) {
    /* the fit of the all-reduce: intercept 2(n-1)a, busbw B */
    CHECK_REL(im.fits[0].latency_us, 2 * 7 * 1.5, 0.01);
    CHECK_REL(im.fits[0].busbw_GBps, 200.0, 0.001);
    CHECK(strcmp(im.fits[0].sets, "intra_node") == 0);
    CHECK(im.links.has_intra && im.links.has_nic);
    CHECK_REL(im.links.intra_GBps, 200.0, 0.001);
    CHECK_REL(im.links.intra_latency_us, 1.5, 0.01);
    CHECK_REL(im.links.nic_GBps, 25.0, 0.001);
    CHECK_REL(im.links.nic_latency_us, 5.0, 0.01);
    /* the simulator with those links reproduces every measured time */
    for (int f = 0; f < 2; f++)
      for (int32_t r = 0; r < im.files[f].n_rows; r++)
        CHECK_REL(im.fits[f].pred_time_us[r], im.files[f].rows[r].time_us[0], 0.002);
  }
  /* the profile sets those links on the cluster's H100 nodes */
  cJSON *j = hs_nt_import_to_json(&im);
  CHECK(j != NULL);
  char *ptxt = j ? cJSON_PrintUnformatted(j) : NULL;
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_load("dgx-h100-4nodes", &c, &err) == HS_OK, "%s", err.msg);
  CHECK_MSG(ptxt && hs_profile_parse(ptxt, "profile.json", &c, &err) == HS_OK, "%s", err.msg);
  for (size_t i = 0; i < c.n_nodes; i++) {
    CHECK_REL(c.nodes[i].intra_GBps, 200.0, 0.001);
    CHECK_REL(c.nodes[i].nic_GBps, 25.0, 0.001);
    CHECK_REL(c.nodes[i].nic_latency_us, 5.0, 0.01);
  }
  hs_cluster_destroy(&c);
  cJSON_free(ptxt);
  hs_json_free(j);
  hs_nt_import_destroy(&im);
  remove(path_ar);
  remove(path_ag);
  remove(p1);
}

static void expect_bad(const char *text, const char *file, const hs_nt_opts_t *o,
                       const char *needle)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_nccl_tests_t t;
  hs_status_t st = hs_nccl_tests_parse(text, file, o, &t, &err);
  CHECK_MSG(st != HS_OK, "accepted %s", file);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, file);
  CHECK_CONTAINS(err.msg, needle);
  hs_nccl_tests_destroy(&t);
}

static void test_malformed(void)
{
  char *txt = hs_test_slurp(hs_test_data("import/nccl_all_gather_2xH200.txt"));
  CHECK(txt != NULL);
  if (!txt)
    return;
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  const char *f = "all_gather_perf.txt";
  /* truncated in the middle of row 3 (line 13) */
  char *cut = strdup(txt);
  char *r3 = strstr(cut, "        4096           512     float");
  r3[strlen("        4096           512     float")] = '\0';
  expect_bad(cut, f, &o, "all_gather_perf.txt:13: expected a row of 13 columns");
  /* the header and nothing after it */
  char *h = strstr(cut, "        1024");
  *h = '\0';
  expect_bad(cut, f, &o, "table header but no rows");
  free(cut);
  /* a number that is not one */
  char *bad = strdup(txt);
  memcpy(strstr(bad, "21.75"), "21.7x", 5);
  expect_bad(bad, f, &o, "all_gather_perf.txt:11: column 6 (out-of-place time, us): expected a "
                         "positive number, got \"21.7x\"");
  free(bad);
  bad = strdup(txt);
  memcpy(strstr(bad, "float    none      -1    21.75"), "floaty", 6);
  expect_bad(bad, f, &o, "column 3 (type): unknown data type \"floaty\"");
  free(bad);
  /* issue #32: a row whose size does not parse dropped out of the fit */
  bad = strdup(txt);
  memcpy(strstr(bad, "        1024           128"), "       1024x", 12);
  expect_bad(bad, f, &o, "all_gather_perf.txt:11: column 1 (size, bytes): expected an integer in "
                         "[0, 2^50], got \"1024x\"");
  free(bad);
  bad = strdup(txt);
  memcpy(strstr(bad, "        1024           128"), "99999999999999999999", 20);
  expect_bad(bad, f, &o, "all_gather_perf.txt:11: column 1 (size, bytes)");
  free(bad);
  /* ... and a subnormal time is no positive time */
  bad = strdup(txt);
  memcpy(strstr(bad, "21.75"), "4e-320", 6);
  expect_bad(bad, f, &o, "all_gather_perf.txt:11: column 6 (out-of-place time, us)");
  free(bad);
  /* NCCL INFO lines (host:pid:tid, the host may start with a digit), blank
   * lines and comments between the rows stay skipped */
  {
    bad = malloc(strlen(txt) + 200);
    char *cp = strdup(txt), *r2 = strstr(cp, "        2048");
    CHECK(r2 != NULL);
    sprintf(bad, "%.*s10-0-0-1:4711:4712 [0] NCCL INFO comm 0x1 rank 0 nranks 2\n\n# a comment\n%s",
            (int)(r2 - cp), cp, r2);
    free(cp);
    hs_nt_opts_t o2 = o;
    o2.coll = HS_NT_ALL_GATHER;
    hs_error_t err2;
    hs_error_init(&err2);
    err2.warn_fp = NULL;
    hs_nccl_tests_t t2, t1;
    CHECK_MSG(hs_nccl_tests_parse(bad, "out.txt", &o2, &t2, &err2) == HS_OK, "%s", err2.msg);
    CHECK(hs_nccl_tests_parse(txt, "out.txt", &o2, &t1, &err2) == HS_OK);
    CHECK_EQ_INT(t2.n_rows, t1.n_rows);
    hs_nccl_tests_destroy(&t2);
    hs_nccl_tests_destroy(&t1);
    free(bad);
  }
  /* no table at all */
  expect_bad("# nThread 1 nGpus 1\n#  Rank  0 Group  0 Pid 1 on h device 0 [0x1] NVIDIA H200\n", f,
             &o, "no nccl-tests table header");
  expect_bad("", f, &o, "no nccl-tests table header");
  /* all_gather and alltoall print the same table: a name must tell them */
  expect_bad(txt, "out.txt", &o, "cannot tell all_gather from alltoall");
  o.coll = HS_NT_ALLTOALL;
  hs_error_t err;
  hs_error_init(&err);
  hs_nccl_tests_t t;
  CHECK(hs_nccl_tests_parse(txt, "out.txt", &o, &t, &err) == HS_OK && t.coll == HS_NT_ALLTOALL);
  hs_nccl_tests_destroy(&t);
  /* the wrong collective contradicts busbw */
  o.coll = HS_NT_ALL_REDUCE;
  expect_bad(txt, "out.txt", &o, "busbw");
  free(txt);
}

static void test_profile_links_bad(void)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_load("dgx-h100-1node", &c, &err) == HS_OK);
  hs_status_t st = hs_profile_parse("{\"gpus\": [{\"name\": \"H100-SXM5-80GB\", \"intra_node\": "
                                    "{\"GBps\": -3, \"latency_us\": 1}}]}", "p.json", &c, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "p.json");
  CHECK_CONTAINS(err.msg, "gpus[0].intra_node");
  CHECK_CONTAINS(err.msg, "GBps");
  hs_error_init(&err);
  err.warn_fp = NULL;
  st = hs_profile_parse("{\"gpus\": [{\"name\": \"H100-SXM5-80GB\", \"nic\": {\"GBps\": 50}}]}",
                        "p.json", &c, &err);
  CHECK_EQ_INT(hs_status_exit_code(st), 2);
  CHECK_CONTAINS(err.msg, "latency_us");
  /* rails: NICs per node, only on nic, an integer in [1, 64]; a good one sets the nodes' */
  static const struct {
    const char *port, *rails, *needle;
  } bad[] = {{"intra_node", "2", "p.json: gpus[0].intra_node.rails: only on nic (NICs per node), got 2"},
             {"nic", "0", "p.json: gpus[0].nic.rails"},
             {"nic", "65", "p.json: gpus[0].nic.rails"},
             {"nic", "\"8\"", "p.json: gpus[0].nic.rails"}};
  for (size_t i = 0; i < HS_ARRAY_LEN(bad); i++) {
    char text[256];
    snprintf(text, sizeof text,
             "{\"gpus\": [{\"name\": \"H100-SXM5-80GB\", \"%s\": {\"GBps\": 50, \"latency_us\": 5, "
             "\"rails\": %s}}]}", bad[i].port, bad[i].rails);
    hs_error_init(&err);
    err.warn_fp = NULL;
    st = hs_profile_parse(text, "p.json", &c, &err);
    CHECK_MSG(hs_status_exit_code(st) == 2, "accepted: %s", text);
    CHECK_CONTAINS(err.msg, bad[i].needle);
  }
  hs_error_init(&err);
  st = hs_profile_parse("{\"gpus\": [{\"name\": \"H100-SXM5-80GB\", \"nic\": {\"GBps\": 50, \"latency_us\": 5, "
                        "\"rails\": 4}}]}", "p.json", &c, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(c.nodes[0].nic_rails, 4);
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_real_all_gather);
  HS_RUN(test_real_all_reduce_ranks_inferred);
  HS_RUN(test_real_a3mega_tree);
  HS_RUN(test_fit_recovers_links);
  HS_RUN(test_malformed);
  HS_RUN(test_profile_links_bad);
  HS_TEST_END();
}
