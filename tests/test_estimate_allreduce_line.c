/*
 * test_estimate_allreduce_line.c - hs_estimate_allreduce_line (the lines
 * hapt's option table costs gradient all-reduces with) against the truth it
 * stands for: the estimator's per-call all-reduce (hs_estimate_allreduce,
 * the algorithm the simulator picks for that size, ring or NCCL's tree) at
 * sizes from 1 kB to 8 GB, on groups inside a node, one rank per node and
 * several ranks on several nodes. On the multi-rank multi-node group both
 * algorithms must win somewhere in that range (checked with each forced),
 * so a single line probed at one size (hapt's table before) fails there.
 */
#include "estimate.h"
#include "hs_test.h"

#include <math.h>
#include <stdio.h>

static double forced_s(const hs_estimator_t *e, const char *algo, const int32_t *dev, int32_t n,
                       double bytes)
{
  hs_coll_t cl;
  hs_coll_init(&cl);
  cl.op = HS_COLL_ALLREDUCE;
  cl.algo = hs_coll_algo_find(algo);
  cl.devices = dev;
  cl.n = n;
  cl.bytes = bytes;
  double s = NAN;
  CHECK(cl.algo != NULL);
  CHECK(hs_coll_estimate_topo(hs_estimator_topology(e), &cl, &s, NULL) == HS_OK);
  return s;
}

static void test_lines_match_per_call(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  /* 4 nodes x 8 GPUs, slow NIC with a high latency: the tree's log-depth
   * latency wins small messages, the ring's bandwidth large ones (or the
   * reverse; the test only asks that both win somewhere) */
  const char *json =
      "{\"name\": \"four-node\", \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 4,"
      " \"gpu\": \"V100-SXM2-32GB\", \"gpus_per_node\": 8,"
      " \"intra_node\": {\"GBps\": 150, \"latency_us\": 1.5},"
      " \"nic\": {\"GBps\": 25, \"latency_us\": 50}}]}]}";
  CHECK_MSG(hs_cluster_parse(json, "four-node.json", &c, &err) == HS_OK, "%s", err.msg);
  hs_model_t m;
  hs_model_init(&m);
  CHECK_MSG(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK, "%s", err.msg);
  hs_estimator_t *e = NULL;
  CHECK(hs_estimator_new(&m, &c, HS_DTYPE_FP16, &e, &err) == HS_OK);
  int32_t all[32], pernode[4], inside[8];
  for (int32_t i = 0; i < 32; i++)
    all[i] = i;
  for (int32_t i = 0; i < 4; i++)
    pernode[i] = 8 * i;
  for (int32_t i = 0; i < 8; i++)
    inside[i] = i;
  const int32_t *groups[] = {all, pernode, inside, all};
  const int32_t sizes[] = {32, 4, 8, 1};
  int tree_wins = 0, ring_wins = 0;
  for (size_t g = 0; g < HS_ARRAY_LEN(groups); g++) {
    hs_allreduce_line_t l;
    CHECK(hs_estimate_allreduce_line(e, groups[g], sizes[g], &l) == HS_OK);
    CHECK(l.n_algos == (sizes[g] <= 1 ? 0 : g == 0 ? 2 : 1));
    for (double b = 1e3; b <= 8e9; b *= 1.7) {
      double want = 0.0;
      CHECK(hs_estimate_allreduce(e, groups[g], sizes[g], b, &want) == HS_OK);
      double got = hs_estimate_allreduce_line_s(&l, b);
      CHECK_MSG(fabs(got - want) <= 1e-9 * want + 1e-15, "group %zu bytes %g: line %.9g per-call %.9g",
                g, b, got, want);
      if (g == 0) {
        double ring = forced_s(e, "node_ring", groups[g], sizes[g], b);
        double tree = forced_s(e, "node_tree", groups[g], sizes[g], b);
        tree_wins += tree < ring;
        ring_wins += ring < tree;
      }
    }
  }
  CHECK_MSG(tree_wins > 0 && ring_wins > 0, "tree wins %d sizes, ring %d", tree_wins, ring_wins);
  hs_estimator_free(e);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* DGX H100 nodes (NVLink SHARP ports, 8 NIC rails): the line set holds
 * NVLS-Tree as a third line, which must match the per-call choice at every
 * size and win somewhere (large sizes: the ring cannot pass the NICs), as
 * the ring or the tree must at small ones. */
static void test_nvls_tree_line(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_load("dgx-h100-4nodes", &c, &err) == HS_OK, "%s", err.msg);
  hs_model_t m;
  hs_model_init(&m);
  CHECK_MSG(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK, "%s", err.msg);
  hs_estimator_t *e = NULL;
  CHECK(hs_estimator_new(&m, &c, HS_DTYPE_BF16, &e, &err) == HS_OK);
  int32_t all[32], two[16];
  for (int32_t i = 0; i < 32; i++)
    all[i] = i;
  for (int32_t i = 0; i < 16; i++)
    two[i] = i;
  const int32_t *groups[] = {all, two};
  const int32_t sizes[] = {32, 16};
  for (size_t g = 0; g < HS_ARRAY_LEN(groups); g++) {
    hs_allreduce_line_t l;
    CHECK(hs_estimate_allreduce_line(e, groups[g], sizes[g], &l) == HS_OK);
    CHECK_EQ_INT(l.n_algos, 3);
    int nt_wins = 0, other_wins = 0;
    for (double b = 1e3; b <= 8e9; b *= 1.7) {
      double want = 0.0;
      CHECK(hs_estimate_allreduce(e, groups[g], sizes[g], b, &want) == HS_OK);
      double got = hs_estimate_allreduce_line_s(&l, b);
      CHECK_MSG(fabs(got - want) <= 1e-9 * want + 1e-15, "group %zu bytes %g: line %.9g per-call %.9g",
                g, b, got, want);
      double nt = forced_s(e, "nvls_tree", groups[g], sizes[g], b);
      double other = fmin(forced_s(e, "node_ring", groups[g], sizes[g], b),
                          forced_s(e, "node_tree", groups[g], sizes[g], b));
      nt_wins += nt < other;
      other_wins += other < nt;
      CHECK_MSG(fabs(want - fmin(nt, other)) <= 1e-9 * want, "bytes %g: per-call %.9g, fastest %.9g", b,
                want, fmin(nt, other));
    }
    CHECK_MSG(nt_wins > 0 && other_wins > 0, "nvls_tree wins %d sizes, ring or tree %d", nt_wins,
              other_wins);
  }
  hs_estimator_free(e);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

int main(void)
{
  test_lines_match_per_call();
  test_nvls_tree_line();
  HS_TEST_END();
}
