/*
 * test_import_ranges.c - `hetsim import nccl-tests` fits one line per size
 * range (where NCCL's protocol / algorithm choice changes the line) and the
 * profile carries the ranges to the simulator (sim/profile_json.c ->
 * hs_link_t.ranges -> the collective's per-size figures).
 *
 * Truths: the measured times in every nccl-tests file of the repository
 * (re-read here from the files, not from the import's own table), the
 * closed form of the ring per range (2(n-1) (a_r + S / (n B_r))), and the
 * refusal of bad ranges with the field and the value.
 */
#include "hs_clusters.h"
#include "hs_json.h"
#include "hs_net.h"
#include "hs_sim.h"
#include "hs_test.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every nccl-tests output of the repository with what its header does not
 * say. The busbw tables beside them (azure_nd_*: NVLS busbw per size, no
 * nccl-tests table) are read by validate/busbw_table.c, not by this import. */
static const struct file_case {
  const char *dir, *name, *gpu;
  int32_t gpus_per_node, nic_rails;
  bool ring_model; /* false: NCCL ran NVLS-Tree, which the ring import cannot express */
} files[] = {
    {"clusters/calibration/nccl-tests", "a100_sxm4_1x8_all_reduce.txt", NULL, 0, 0, true},
    {"clusters/calibration/nccl-tests", "a100_sxm4_2x8_all_reduce.txt", NULL, 0, 0, true},
    {"clusters/calibration/nccl-tests", "h100_sxm5_1x8_all_gather_ring.txt", "H100-SXM5-80GB", 0, 0, true},
    {"clusters/calibration/nccl-tests", "h100_sxm5_1x8_all_reduce_ring.txt", "H100-SXM5-80GB", 0, 0, true},
    {"clusters/calibration/nccl-tests", "h100_sxm5_1x8_reduce_scatter_ring.txt", "H100-SXM5-80GB", 0, 0, true},
    {"clusters/calibration/nccl-tests", "h100_sxm5_2x8_all_reduce_ring_ndr.txt", "H100-SXM5-80GB", 0, 8, true},
    {"clusters/calibration/nccl-tests", "h100_sxm5_2x8_all_reduce_default_ndr.txt", "H100-SXM5-80GB", 0, 8,
     false},
    {"tests/data/import", "nccl_all_gather_2xH200.txt", NULL, 0, 0, true},
    {"tests/data/import", "nccl_all_reduce_a3mega_h100_2x8.txt", "H100-SXM5-80GB", 0, 0, true},
    {"tests/data/import", "nccl_all_reduce_coreweave_a100.txt", NULL, 8, 0, true},
    /* the 2080 Ti is not in the GPU catalog; the T4 (Turing, Gen3 x16) stands in */
    {"tests/data/import", "nccl_all_reduce_2x2080ti_pcie_p2p_off.txt", "T4-16GB", 0, 0, true},
    {"tests/data/import", "nccl_all_gather_2x2080ti_pcie_p2p_off.txt", "T4-16GB", 0, 0, true},
};

static void path_of(const struct file_case *f, char *buf, size_t n)
{
  const char *root = getenv("HETSIM_DATA");
  snprintf(buf, n, "%s/%s/%s", root ? root : ".", f->dir, f->name);
}

static hs_coll_op_t op_of(hs_nt_coll_t c)
{
  return c == HS_NT_ALL_GATHER ? HS_COLL_ALLGATHER : c == HS_NT_REDUCE_SCATTER ? HS_COLL_REDUCE_SCATTER
                                                                                : HS_COLL_ALLREDUCE;
}

/* Imports one file alone, writes its profile JSON, applies the profile to a
 * fresh cluster of the file's shape (as simulate --profile does) and
 * estimates every size with the collective model; the error per size is
 * against the time re-read from the file. Returns the largest |error|. */
static double max_error_via_profile(const struct file_case *fc, const struct file_case *intra, int32_t *n_ranges)
{
  char path[1024], ipath[1024];
  path_of(fc, path, sizeof path);
  const char *paths[2] = {path, ipath};
  if (intra) /* the single-node file that sets intra_node, imported with it */
    path_of(intra, ipath, sizeof ipath);
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  o.gpus_per_node = fc->gpus_per_node;
  o.nic_rails = fc->nic_rails;
  hs_nt_import_t im;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_nt_import(paths, intra ? 2 : 1, &o, fc->gpu, &im, &err);
  CHECK_MSG(st == HS_OK, "%s: %s", fc->name, err.msg);
  if (st != HS_OK)
    return INFINITY;
  *n_ranges = HS_MAX(im.links.intra_ranges.n, im.links.nic_ranges.n);
  cJSON *j = hs_nt_import_to_json(&im);
  char *text = j ? cJSON_Print(j) : NULL;
  hs_json_free(j);
  /* the file's group as a cluster, then the profile */
  hs_nccl_tests_t t;
  CHECK(hs_nccl_tests_load(path, &o, &t, &err) == HS_OK);
  int32_t m = t.n_nodes > 0 ? t.n_nodes : t.nranks / fc->gpus_per_node, k = t.nranks / m;
  char ctext[512];
  snprintf(ctext, sizeof ctext,
           "{\"name\": \"g\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": %d, \"gpu\": \"%s\", "
           "\"gpus_per_node\": %d}]}]}", m, im.links.gpu, k);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_parse(ctext, "g.json", &c, &err) == HS_OK);
  CHECK_MSG(text && hs_profile_parse(text, "profile.json", &c, &err) == HS_OK, "%s", err.msg);
  if (fc->nic_rails > 1)
    for (size_t i = 0; i < c.n_nodes; i++)
      CHECK_EQ_INT(c.nodes[i].nic_rails, fc->nic_rails);
  hs_topology_t *topo = NULL;
  CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
  int32_t dev[64];
  for (int32_t i = 0; i < t.nranks && i < 64; i++)
    dev[i] = i;
  hs_coll_t coll;
  hs_coll_init(&coll);
  coll.op = op_of(t.coll);
  coll.devices = dev;
  coll.n = t.nranks;
  coll.algo = hs_coll_algo_default(topo, coll.op, dev, coll.n); /* the import's algorithm */
  double worst = 0.0;
  for (int32_t r = 0; r < t.n_rows; r++) {
    if (!(t.rows[r].size_bytes > 0))
      continue;
    coll.bytes = t.rows[r].size_bytes;
    double pred_us = hs_coll_estimate_s(topo, &coll) * 1e6, meas = t.rows[r].time_us[0];
    double e = fabs(pred_us - meas) / meas;
    worst = fmax(worst, e);
    if (e > 0.10 && fc->ring_model)
      fprintf(stderr, "  %s %.0f B: %.2f us predicted, %.2f measured\n", fc->name, coll.bytes, pred_us, meas);
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
  hs_nccl_tests_destroy(&t);
  free(text);
  hs_nt_import_destroy(&im);
  return worst;
}

/* Every size of every file within 10% through the profile. */
static void test_every_file_within_10pct(void)
{
  for (size_t i = 0; i < HS_ARRAY_LEN(files); i++) {
    int32_t nr = 0;
    double e = max_error_via_profile(&files[i], NULL, &nr);
    fprintf(stderr, "  %-48s %2d ranges, max |error| %5.1f%%%s\n", files[i].name, nr, 100 * e,
            files[i].ring_model ? "" : " (NCCL's NVLS-Tree: not a ring; reported, not checked)");
    if (files[i].ring_model)
      CHECK_MSG(e <= 0.10, "%s: %.1f%%", files[i].name, 100 * e);
  }
  /* the catalog's HDR fit: the 2x8 A100 file with the 1x8 file setting the
   * intra-node link (which has ranges) */
  int32_t nr = 0;
  double e = max_error_via_profile(&files[1], &files[0], &nr);
  fprintf(stderr, "  %-48s %2d ranges, max |error| %5.1f%% (with %s)\n", files[1].name, nr, 100 * e, files[0].name);
  CHECK_MSG(e <= 0.10, "%s with %s: %.1f%%", files[1].name, files[0].name, 100 * e);
}

/* The table covers every nccl-tests output in the two folders (a new file
 * must be added here). */
static void test_table_complete(void)
{
  static const char *const dirs[] = {"clusters/calibration/nccl-tests", "tests/data/import"};
  for (size_t d = 0; d < HS_ARRAY_LEN(dirs); d++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", getenv("HETSIM_DATA") ? getenv("HETSIM_DATA") : ".", dirs[d]);
    DIR *dir = opendir(p);
    CHECK(dir != NULL);
    if (!dir)
      continue;
    for (struct dirent *e; (e = readdir(dir));) {
      size_t l = strlen(e->d_name);
      if (l < 4 || strcmp(e->d_name + l - 4, ".txt") || strncmp(e->d_name, "azure_nd_", 9) == 0 ||
          (d == 1 && strncmp(e->d_name, "nccl_", 5) != 0))
        continue;
      bool found = false;
      for (size_t i = 0; i < HS_ARRAY_LEN(files); i++)
        found |= strcmp(files[i].name, e->d_name) == 0;
      CHECK_MSG(found, "%s/%s is not in the table", dirs[d], e->d_name);
    }
    closedir(dir);
  }
}

/* A profile with two ranges on a 4-GPU node: each size takes its range's
 * figures in the ring's closed form 2(n-1) (a_r + S / (n B_r)) (a_r the
 * range's latency_us as the port's: the path latency inside the node). */
static void test_range_closed_form(void)
{
  const char *prof =
      "{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"intra_node\": {\"GBps\": 200, \"latency_us\": 2, "
      "\"ranges\": [{\"min_bytes\": 0, \"max_bytes\": 65536, \"GBps\": 20, \"latency_us\": 5}, "
      "{\"min_bytes\": 65536, \"max_bytes\": 1e7, \"GBps\": 100, \"latency_us\": 3}, "
      "{\"min_bytes\": 1e7, \"GBps\": 250, \"latency_us\": 1}]}}]}";
  const char *ctext = "{\"name\": \"g\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 1, "
                      "\"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 4}]}]}";
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_parse(ctext, "g.json", &c, &err) == HS_OK);
  CHECK_MSG(hs_profile_parse(prof, "p.json", &c, &err) == HS_OK, "%s", err.msg);
  hs_topology_t *topo = NULL;
  CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
  int32_t dev[4] = {0, 1, 2, 3};
  static const struct { double S, B_GBps, a_us; } cases[] = {
      {1024, 20, 5}, {65535, 20, 5}, {65536, 100, 3}, {4e6, 100, 3}, {1e7, 250, 1}, {1e9, 250, 1}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_coll_t coll;
    hs_coll_init(&coll);
    coll.op = HS_COLL_ALLREDUCE;
    coll.devices = dev;
    coll.n = 4;
    coll.bytes = cases[i].S;
    double want = 6 * (cases[i].a_us * 1e-6 + cases[i].S / (4 * cases[i].B_GBps * 1e9));
    CHECK_REL(hs_coll_estimate_s(topo, &coll), want, 1e-9);
    /* the flow model too (rounded to ns once per event) */
    hs_engine_t eng;
    hs_engine_init(&eng, NULL);
    hs_net_t *net = NULL;
    CHECK(hs_net_new(&eng, topo, &net) == HS_OK);
    CHECK(hs_coll_start(net, &coll, &err) == HS_OK);
    CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
    double sim = (double)(coll.t_end - coll.t_start) * 1e-9;
    CHECK_MSG(fabs(sim - want) <= 3e-9, "%g B: %.12g vs %.12g", cases[i].S, sim, want);
    hs_net_free(net);
    hs_engine_destroy(&eng);
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

/* nic ranges across 2 nodes of 2 GPUs (node_ring: 2(n-1) = 6 steps, 2 of
 * them across the NIC; the NIC carries the whole ring once per direction,
 * weight 1, 2(n-1)S/n bytes per sub-flow): at each size the time is
 * 4 a_intra + 2 (a_intra + a_nic_r + a_fabric) + (3/2) S / min(B_intra, B_nic_r),
 * which the flow model and the estimate both give. */
static void test_nic_range_closed_form(void)
{
  const char *prof =
      "{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"intra_node\": {\"GBps\": 200, \"latency_us\": 2}, "
      "\"nic\": {\"GBps\": 25, \"latency_us\": 6, \"ranges\": ["
      "{\"min_bytes\": 0, \"max_bytes\": 1e6, \"GBps\": 5, \"latency_us\": 10}, "
      "{\"min_bytes\": 1e6, \"GBps\": 400, \"latency_us\": 4}]}}]}";
  const char *ctext = "{\"name\": \"g\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 2, "
                      "\"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 2}]}]}";
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK(hs_cluster_parse(ctext, "g.json", &c, &err) == HS_OK);
  CHECK_MSG(hs_profile_parse(prof, "p.json", &c, &err) == HS_OK, "%s", err.msg);
  double fabric_us = c.sites[0].fabric_latency_us;
  hs_topology_t *topo = NULL;
  CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
  int32_t dev[4] = {0, 1, 2, 3};
  static const struct { double S, B_nic, a_nic; } cases[] = {{4096, 5, 10}, {5e5, 5, 10}, {1e6, 400, 4}, {1e9, 400, 4}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_coll_t coll;
    hs_coll_init(&coll);
    coll.op = HS_COLL_ALLREDUCE;
    coll.algo = hs_coll_algo_find("node_ring");
    coll.devices = dev;
    coll.n = 4;
    coll.bytes = cases[i].S;
    double a_cross = (2 + cases[i].a_nic + fabric_us) * 1e-6;
    double want = 4 * 2e-6 + 2 * a_cross + 1.5 * cases[i].S / (fmin(200, cases[i].B_nic) * 1e9);
    double est = hs_coll_estimate_s(topo, &coll);
    CHECK_MSG(fabs(est - want) <= 1e-9 * want + 1e-12, "%g B: %.12g vs %.12g", cases[i].S, est, want);
    hs_engine_t eng;
    hs_engine_init(&eng, NULL);
    hs_net_t *net = NULL;
    CHECK(hs_net_new(&eng, topo, &net) == HS_OK);
    CHECK(hs_coll_start(net, &coll, &err) == HS_OK);
    CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
    double sim = (double)(coll.t_end - coll.t_start) * 1e-9;
    CHECK_MSG(fabs(sim - want) <= 3e-9, "%g B: sim %.12g vs %.12g", cases[i].S, sim, want);
    hs_net_free(net);
    hs_engine_destroy(&eng);
  }
  hs_topology_free(topo);
  hs_cluster_destroy(&c);
}

static void test_bad_ranges(void)
{
  static const struct { const char *ranges, *needle; } cases[] = {
      {"[{\"min_bytes\": 0, \"max_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}, "
       "{\"min_bytes\": 200, \"GBps\": 1, \"latency_us\": 1}]",
       "gpus[0].intra_node.ranges[1].min_bytes: 200, but the range before ends at max_bytes 100: ranges must "
       "not leave a gap"},
      {"[{\"min_bytes\": 0, \"max_bytes\": 300, \"GBps\": 1, \"latency_us\": 1}, "
       "{\"min_bytes\": 200, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[1].min_bytes: 200, but the range before ends at max_bytes 300: ranges must not overlap"},
      {"[{\"min_bytes\": -5, \"max_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}, "
       "{\"min_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[0].min_bytes: -5, must be >= 0"},
      {"[{\"min_bytes\": 10, \"max_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}, "
       "{\"min_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[0].min_bytes: 10, the first range must start at 0"},
      {"[{\"min_bytes\": 0, \"max_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}, "
       "{\"min_bytes\": 100, \"max_bytes\": 1000, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[1].max_bytes: the last range has no max_bytes"},
      {"[{\"min_bytes\": 0, \"max_bytes\": 100, \"GBps\": 0, \"latency_us\": 1}, "
       "{\"min_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[0].GBps"},
      {"[{\"min_bytes\": 0, \"max_bytes\": 100, \"GBps\": 1, \"latency_us\": -1}, "
       "{\"min_bytes\": 100, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[0].latency_us"},
      {"[]", "ranges: 0 ranges, need 1 to 12"},
      {"{\"min_bytes\": 0}", "ranges: must be an array"},
      {"[{\"min_bytes\": 0, \"max_bytes\": 0, \"GBps\": 1, \"latency_us\": 1}, "
       "{\"min_bytes\": 0, \"GBps\": 1, \"latency_us\": 1}]",
       "ranges[0].max_bytes: 0, must be above min_bytes 0"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    char prof[1024];
    snprintf(prof, sizeof prof,
             "{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"intra_node\": {\"GBps\": 200, \"latency_us\": 2, "
             "\"ranges\": %s}}]}", cases[i].ranges);
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_t c;
    hs_cluster_init(&c);
    CHECK(hs_cluster_load("dgx-a100-1node", &c, &err) == HS_OK);
    CHECK(hs_profile_parse(prof, "p.json", &c, &err) != HS_OK);
    CHECK_CONTAINS(err.msg, cases[i].needle);
    CHECK_CONTAINS(err.msg, "p.json");
    hs_cluster_destroy(&c);
  }
}

int main(void)
{
  HS_RUN(test_table_complete);
  HS_RUN(test_range_closed_form);
  HS_RUN(test_nic_range_closed_form);
  HS_RUN(test_bad_ranges);
  HS_RUN(test_every_file_within_10pct);
  HS_TEST_END();
}
