/*
 * test_coll_formulas.c - every collective algorithm, run on the flow model
 * over a hand-built fabric, against the textbook formula written out here
 * (not against the code's own estimate). Fabric: GPU ports of B GB/s with
 * latency a/2 each, so a same-node neighbour path has latency a; NICs of
 * B_nic with latency x/2 each (an inter-node path: a + x).
 */
#include "hs_net.h"
#include "hs_test.h"
#include "test_net_fabric.h"

#define GB 1e9
#define NS 1e9

typedef struct run {
  hs_engine_t eng;
  hs_net_t *net;
  tfab_t fab;
} run_t;

/* nvls: every GPU port is an NVLink SHARP switch port (hs_link_t.nvls). */
static void run_open_nvls(run_t *r, int nodes, int per_node, double B, double a_ns, double B_nic,
                          double x_ns, bool nvls)
{
  hs_engine_init(&r->eng, NULL);
  tfab_build(&r->fab, nodes, per_node, B, a_ns / 2, B_nic, x_ns / 2);
  for (int d = 0; d < nodes * per_node; d++)
    r->fab.links[tfab_up(&r->fab, d)].nvls = r->fab.links[tfab_down(&r->fab, d)].nvls = nvls;
  r->net = tfab_net(&r->fab, &r->eng);
  CHECK(r->net != NULL);
}

static void run_open(run_t *r, int nodes, int per_node, double B, double a_ns, double B_nic,
                     double x_ns)
{
  run_open_nvls(r, nodes, per_node, B, a_ns, B_nic, x_ns, false);
}

static void run_close(run_t *r)
{
  hs_net_free(r->net);
  hs_engine_destroy(&r->eng);
  tfab_free(&r->fab);
}

static int done_count;
static void on_done(hs_coll_t *c) { done_count++; }

/* Simulated seconds of one collective alone on the fabric. */
static double sim_one(run_t *r, const char *algo, hs_coll_op_t op, const int32_t *dev, int n,
                      double S, const double *shares)
{
  hs_coll_t c;
  hs_coll_init(&c);
  c.op = op;
  c.algo = algo ? hs_coll_algo_find(algo) : NULL;
  c.devices = dev;
  c.n = n;
  c.bytes = S;
  c.shares = shares;
  c.done = on_done;
  hs_error_t err;
  hs_error_init(&err);
  int before = done_count;
  hs_time_t t0 = r->eng.now;
  hs_status_t st = hs_coll_start(r->net, &c, &err);
  CHECK_MSG(st == HS_OK, "%s %s: %s", algo ? algo : "default", hs_coll_op_name(op), err.msg);
  CHECK(hs_engine_run(&r->eng, HS_TIME_MAX) == HS_OK);
  CHECK_EQ_INT(done_count, before + 1);
  CHECK_EQ_INT(c.t_start, t0);
  return hs_time_to_s(c.t_end - c.t_start);
}

/* within `ns` nanoseconds */
#define CHECK_NS(got_s, want_s, ns) CHECK_MSG(fabs((got_s) - (want_s)) * NS <= (ns) + 1e-6, \
                                              "%.3f ns vs formula %.3f ns", (got_s) * NS,     \
                                              (want_s) * NS)

static const int32_t seq[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void test_ring_allreduce(void)
{
  /* 2(n-1)(a + S/(nB)) */
  const double B = 100 * GB, a = 3000, S = 256e6;
  for (int n = 2; n <= 8; n *= 2) {
    run_t r;
    run_open(&r, 1, 8, 100, a, 50, 0);
    double t = sim_one(&r, "ring", HS_COLL_ALLREDUCE, seq, n, S, NULL);
    CHECK_NS(t, 2.0 * (n - 1) * (a / NS + S / (n * B)), 1);
    run_close(&r);
  }
}

static void test_ring_rs_ag_bcast(void)
{
  const double B = 100 * GB, a = 3000, S = 64e6;
  run_t r;
  run_open(&r, 1, 8, 100, a, 50, 0);
  for (int n = 2; n <= 8; n *= 2) {
    /* reduce-scatter and all-gather: (n-1)(a + S/(nB)) */
    double want = (n - 1) * (a / NS + S / (n * B));
    CHECK_NS(sim_one(&r, "ring", HS_COLL_REDUCE_SCATTER, seq, n, S, NULL), want, 1);
    CHECK_NS(sim_one(&r, "ring", HS_COLL_ALLGATHER, seq, n, S, NULL), want, 1);
    /* pipelined chain broadcast: (n-1) a + S/B */
    CHECK_NS(sim_one(&r, "ring", HS_COLL_BROADCAST, seq, n, S, NULL), (n - 1) * a / NS + S / B, 1);
  }
  run_close(&r);
}

static void test_tree(void)
{
  /* double binary tree: 2 ceil(log2 n) a + 2 S/B (n >= 3); n = 2: 2a + S/B */
  const double B = 100 * GB, a = 3000, S = 128e6;
  run_t r;
  run_open(&r, 1, 16, 100, a, 50, 0);
  int ns[] = {4, 8, 16};
  for (int i = 0; i < 3; i++) {
    int n = ns[i];
    double want = 2 * ceil(log2(n)) * a / NS + 2 * S / B;
    CHECK_NS(sim_one(&r, "tree", HS_COLL_ALLREDUCE, seq, n, S, NULL), want, 2);
  }
  CHECK_NS(sim_one(&r, "tree", HS_COLL_ALLREDUCE, seq, 2, S, NULL), 2 * a / NS + S / B, 2);
  run_close(&r);
}

static void test_hierarchical(void)
{
  /* m nodes x k GPUs. GPU ports B, latency a per same-node path; NIC B_nic,
   * an inter-node path has latency a + x. The k inter-node rings all cross
   * each NIC (weight k):
   *   2(k-1)(a + S/(k B)) + 2(m-1)(a + x) + 2(m-1)/m (S/k) max(k/B_nic, 1/B) */
  const double B = 200 * GB, B_nic = 25 * GB, a = 2000, x = 8000, S = 512e6;
  int shapes[][2] = {{2, 4}, {4, 2}, {4, 4}, {3, 4}};
  for (int i = 0; i < 4; i++) {
    int m = shapes[i][0], k = shapes[i][1];
    run_t r;
    run_open(&r, m, k, 200, a, 25, x);
    int32_t dev[16];
    for (int d = 0; d < m * k; d++)
      dev[d] = d;
    double want = 2.0 * (k - 1) * (a / NS + S / (k * B)) + 2.0 * (m - 1) * (a + x) / NS +
                  2.0 * (m - 1) / m * (S / k) * fmax(k / B_nic, 1 / B);
    CHECK_NS(sim_one(&r, "hierarchical", HS_COLL_ALLREDUCE, dev, m * k, S, NULL), want, 3);
    /* nodes need not be contiguous in the group: interleave them */
    int32_t mixed[16];
    for (int d = 0; d < m * k; d++)
      mixed[d] = (d % m) * k + d / m;
    CHECK_NS(sim_one(&r, "hierarchical", HS_COLL_ALLREDUCE, mixed, m * k, S, NULL), want, 3);
    run_close(&r);
  }
  /* one GPU per node: only the inter-node phase, a plain ring over NICs:
   * 2(m-1)(a + x + S/(m B_nic)) */
  run_t r;
  run_open(&r, 4, 1, 200, a, 25, x);
  CHECK_NS(sim_one(&r, "hierarchical", HS_COLL_ALLREDUCE, seq, 4, S, NULL),
           6 * ((a + x) / NS + S / (4 * B_nic)), 1);
  run_close(&r);
}

/* NCCL's ring across nodes (node_ring, the default for all-reduce,
 * reduce-scatter and all-gather when a group spans nodes): one pipelined
 * ring over all n = m k ranks, node by node. It crosses each GPU port and
 * each NIC once, so the slowest link sets the rate:
 *   all-reduce      s = 2(n-1):  s L + 2(n-1)/n S max(1/B, 1/B_nic)
 *   RS, all-gather  s = n-1:     s L + (n-1)/n S max(1/B, 1/B_nic)
 * with NCCL's count of the steps that cross nodes, s_x = 2(m-1) (all-reduce)
 * or m-1: latency (s - s_x) a + s_x (a + x). */
static double node_ring_want(hs_coll_op_t op, int m, int k, double S, double B, double B_nic,
                             double a, double x)
{
  int n = m * k;
  double s = op == HS_COLL_ALLREDUCE ? 2.0 * (n - 1) : n - 1.0;
  double sx = op == HS_COLL_ALLREDUCE ? 2.0 * (m - 1) : m - 1.0;
  return ((s - sx) * a + sx * (a + x)) / NS + s / n * S * fmax(1 / B, 1 / B_nic);
}

/* NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc, commit b6475625): Tree,
 * Simple protocol, gets 0.92 of the channels' bus bandwidth and algorithm
 * bandwidth = bus x 0.5 (Ring: bus x n / (2(n-1))), times
 * treeCorrectionFactor[Simple][floor(log2(S / 64))] below 256 MiB. With the
 * ring's bandwidth term X = 2(n-1)/n S max(1/B, 1/B_nic) the tuner's tree
 * time is L_tree + X n / ((n-1) 0.92 cf(S)). */
static double nccl_cf(double S)
{
  const double simple[23] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                             .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
  int l = 0;
  for (double v = floor(S / 64); v >= 2; v = floor(v / 2))
    l++;
  return l < 23 ? simple[l] : 1.0;
}

static double node_tree_want(int m, int k, double S, double B, double B_nic, double a, double x);

/* Whether the default on nodes without NVLS runs the tree (the tuner's rule). */
static bool tuner_tree(int m, int k, double S, double B, double B_nic, double a, double x)
{
  int n = m * k;
  double X = 2.0 * (n - 1) / n * S * fmax(1 / B, 1 / B_nic);
  double ring = node_ring_want(HS_COLL_ALLREDUCE, m, k, S, B, B_nic, a, x);
  double l_tree = node_tree_want(m, k, 0, B, B_nic, a, x);
  return l_tree + X * n / ((n - 1) * 0.92 * nccl_cf(S)) < ring;
}

static void test_node_ring(void)
{
  const double a = 2000, x = 8000, S = 512e6;
  const hs_coll_op_t ops[] = {HS_COLL_ALLREDUCE, HS_COLL_REDUCE_SCATTER, HS_COLL_ALLGATHER};
  int shapes[][2] = {{2, 4}, {4, 2}, {4, 4}, {3, 4}, {2, 8}};
  /* NIC slower than a GPU port (the usual case), then faster */
  double nic_GBps[] = {25, 200, 600};
  for (int i = 0; i < 5; i++)
    for (int v = 0; v < 3; v++) {
      int m = shapes[i][0], k = shapes[i][1];
      const double B = 300 * GB, B_nic = nic_GBps[v] * GB;
      run_t r;
      run_open(&r, m, k, 300, a, nic_GBps[v], x);
      int32_t dev[16], mixed[16];
      for (int d = 0; d < m * k; d++) {
        dev[d] = d;
        mixed[d] = (d % m) * k + d / m; /* nodes interleaved in the group */
      }
      for (int o = 0; o < 3; o++) {
        double want = node_ring_want(ops[o], m, k, S, B, B_nic, a, x);
        CHECK_NS(sim_one(&r, "node_ring", ops[o], dev, m * k, S, NULL), want, 2);
        CHECK_NS(sim_one(&r, "node_ring", ops[o], mixed, m * k, S, NULL), want, 2);
        /* the default: the ring, or for all-reduce NCCL's tree across
         * nodes where NCCL's tuner takes it (test_node_tree checks the
         * tree against its closed form) */
        double best = ops[o] == HS_COLL_ALLREDUCE && tuner_tree(m, k, S, B, B_nic, a, x)
                          ? sim_one(&r, "node_tree", ops[o], mixed, m * k, S, NULL)
                          : want;
        CHECK_NS(sim_one(&r, NULL, ops[o], mixed, m * k, S, NULL), best, 2);
      }
      run_close(&r);
    }
  /* nodes holding different numbers of ranks: 3 + 1 + 2 on 3 nodes of 4
   * (n = 6, m = 3): s = 10 steps, 4 of them across nodes */
  {
    const double B = 300 * GB, B_nic = 25 * GB;
    run_t r;
    run_open(&r, 3, 4, 300, a, 25, x);
    int32_t uneven[] = {0, 4, 8, 1, 9, 2};
    double s = 2.0 * 5, L = (6 * a + 4 * (a + x)) / NS;
    CHECK_NS(sim_one(&r, "node_ring", HS_COLL_ALLREDUCE, uneven, 6, S, NULL),
             L + s / 6 * S * fmax(1 / B, 1 / B_nic), 2);
    /* all-gather has no tree: the default is this ring, (n-1)/n S */
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLGATHER, uneven, 6, S, NULL),
             (3 * a + 2 * (a + x)) / NS + 5.0 / 6 * S * fmax(1 / B, 1 / B_nic), 2);
    run_close(&r);
  }
  /* the case, 2 nodes x 8 A100 (NVLink 232.3 GB/s per GPU, NIC
   * 200 GB/s per node), no latency: the ring's busbw 2(n-1)/n S / T is the
   * NIC's rate, not twice it. The three-phase hierarchical all-reduce (kept
   * as an explicit choice), which does not pipeline, adds its phases:
   *   T_hier = 2 (7/8) S / 232.3 + 2 (1/2) (S/8) 8 / 200
   *          = S (1.75 / 232.3 + 1 / 200) */
  {
    const double S1 = 1 << 30;
    run_t r;
    run_open(&r, 2, 8, 232.3, 0, 200, 0);
    double t = sim_one(&r, "node_ring", HS_COLL_ALLREDUCE, seq, 16, S1, NULL);
    CHECK_MSG(fabs(2.0 * 15 / 16 * S1 / t / GB - 200) < 1e-3, "busbw %.6f GB/s, want 200",
              2.0 * 15 / 16 * S1 / t / GB);
    /* NCCL's tree across the 2 nodes moves S through each NIC (not
     * 2(n-1)/n S) and 2S through an inner chain GPU's port: T = max(2S /
     * 232.3, S / 200) = S / 116.15 GB/s, faster than the ring's 1.875 S /
     * 200 on these links; but NCCL's tuner rates Tree at 0.92 x 0.5 of the
     * bus bandwidth against the ring's 16/30, so on A100 (no NVLS) the
     * default stays the ring (NCCL 2.12.12's measured busbw, 182.8 GB/s at
     * 1 GiB, stays below this NIC's 200 too) */
    double tt = sim_one(&r, "node_tree", HS_COLL_ALLREDUCE, seq, 16, S1, NULL);
    CHECK_NS(tt, 2 * S1 / (232.3 * GB), 2);
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 16, S1, NULL), t, 2);
    double th = sim_one(&r, "hierarchical", HS_COLL_ALLREDUCE, seq, 16, S1, NULL);
    CHECK_NS(th, S1 * (1.75 / (232.3 * GB) + 1 / (200 * GB)), 2);
    CHECK(th > 1.2 * t);
    /* all-gather of the same group: (n-1)/n S / 200 GB/s */
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLGATHER, seq, 16, S1, NULL), 15.0 / 16 * S1 / (200 * GB),
             2);
    run_close(&r);
  }
  /* the same links as NVLink SHARP ports (H100 NVSwitch): the default is
   * the fastest of ring, tree and NVLS-Tree (test_nvls_tree); with one NIC
   * per node NVLS-Tree's rail traffic crosses the GPU ports beside NVLS's
   * 9S/8 (10S/8 per port): T = 10 S / (8 x 232.3 GB/s) against the tree's
   * 2S / 232.3 GB/s and the ring's 1.875 S / 200 GB/s */
  {
    const double S1 = 1 << 30;
    run_t r;
    run_open_nvls(&r, 2, 8, 232.3, 0, 200, 0, true);
    double tt = sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 16, S1, NULL);
    CHECK_NS(tt, 10 * S1 / (8 * 232.3 * GB), 2);
    CHECK_NS(sim_one(&r, "node_tree", HS_COLL_ALLREDUCE, seq, 16, S1, NULL), 2 * S1 / (232.3 * GB), 2);
    run_close(&r);
  }
  /* one rank per node: the default stays the plain ring, and node_ring
   * gives it exactly: 2(m-1)(a + x + S/(m B_nic)) */
  {
    run_t r;
    run_open(&r, 4, 1, 300, a, 25, x);
    double want = 6 * ((a + x) / NS + S / (4 * 25 * GB));
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 4, S, NULL), want, 1);
    CHECK_NS(sim_one(&r, "node_ring", HS_COLL_ALLREDUCE, seq, 4, S, NULL), want, 1);
    run_close(&r);
  }
}

/* NCCL's tree across nodes (node_tree): chains inside the m nodes (tree 0
 * headed by a node's first rank, tree 1 by its last), NCCL's double binary
 * tree over the nodes, reduce and broadcast at once: one coupled flow of S/2
 * per sub-flow, latency 2((k-1) a_in + h a_x). Sub-flows per NIC and
 * direction, counted by hand from the trees (m = 2: nodes 0 and 1 are each
 * other's parent in one tree; m = 3: tree 0 is 1 -> 2 -> 0, tree 1 is
 * 2 -> 0 -> 1; m = 4: tree 0 has 1, 3 -> 2 -> 0, tree 1 its mirror), with h
 * the deeper tree's height:
 *   m = 2: w 2, h 1;  m = 3: w 3, h 2;  m = 4: w 4, h 2
 * GPU ports: 2 sub-flows per direction per chain neighbour (both trees),
 * plus the head's inter-node ones: an inner chain GPU w = 4, on 2 nodes a
 * head 3 (k >= 2) or 2 (k = 1). */
static double node_tree_want(int m, int k, double S, double B, double B_nic, double a, double x)
{
  const int w_nic[] = {0, 0, 2, 3, 4}, h[] = {0, 0, 1, 2, 2};
  int w_gpu = k >= 3 ? 4 : k == 2 ? 3 : 2;
  if (m > 2) /* balanced tree: parent + first child on a chain's head, the
              * second child on its other end: at most 4 per port (k >= 2) */
    w_gpu = k == 1 ? w_nic[m] : 4;
  return 2.0 * ((k - 1) * a + h[m] * (a + x)) / NS +
         S / 2 * fmax(w_gpu / B, w_nic[m] / B_nic);
}

static void test_node_tree(void)
{
  const double a = 2000, x = 8000;
  /* NIC-bound (GPU ports 10x the NIC): every shape, nodes in order and
   * interleaved; then GPU-bound (NIC 6x a GPU port) on 2 nodes, and on 4
   * nodes, where a port would carry 5 sub-flows (2S/B_in + S/(2B_in))
   * without the balanced tree's split */
  for (int m = 2; m <= 4; m++)
    for (int k = 1; k <= 4; k *= 2) {
      const double B = 250 * GB, B_nic = 25 * GB, S = 256e6;
      run_t r;
      run_open(&r, m, k, 250, a, 25, x);
      int32_t dev[16], mixed[16];
      for (int d = 0; d < m * k; d++) {
        dev[d] = d;
        mixed[d] = (d % m) * k + d / m;
      }
      double want = node_tree_want(m, k, S, B, B_nic, a, x);
      CHECK_NS(sim_one(&r, "node_tree", HS_COLL_ALLREDUCE, dev, m * k, S, NULL), want, 2);
      CHECK_NS(sim_one(&r, "node_tree", HS_COLL_ALLREDUCE, mixed, m * k, S, NULL), want, 2);
      run_close(&r);
    }
  for (int k = 1; k <= 8; k *= 2) {
    const double B = 100 * GB, B_nic = 600 * GB, S = 256e6;
    run_t r;
    run_open(&r, 2, k, 100, a, 600, x);
    CHECK_NS(sim_one(&r, "node_tree", HS_COLL_ALLREDUCE, seq, 2 * k, S, NULL),
             node_tree_want(2, k, S, B, B_nic, a, x), 2);
    run_close(&r);
  }
  for (int k = 2; k <= 4; k *= 2) {
    const double B = 100 * GB, B_nic = 600 * GB, S = 256e6;
    run_t r;
    run_open(&r, 4, k, 100, a, 600, x);
    CHECK_NS(sim_one(&r, "node_tree", HS_COLL_ALLREDUCE, seq, 4 * k, S, NULL),
             node_tree_want(4, k, S, B, B_nic, a, x), 2);
    run_close(&r);
  }
  /* the size-aware default, per size. Without NVLS, NCCL's tuner rule
   * (tuner_tree): the tree only where its latency wins, i.e. at small sizes
   * (2 x 4: L_tree = 2(3a + a + x) = 32 us against the ring's 12a + 2(a + x)
   * = 44 us; at 1 GB the ring). With NVLS ports, the fastest closed form of
   * ring, tree and NVLS-Tree: on 2 x 4 with NIC 25 GB/s NVLS-Tree at every
   * size (the tree's S/B_nic, latency a + 2(a + x) = 22 us against the
   * tree's 32); on 4 x 4 NVLS-Tree's latency (a + 4(a + x) = 42 us against
   * 52) at small sizes and the ring's NIC term (1.875 S vs 2 S) at large
   * ones */
  const double sizes[] = {1e3, 1e5, 1e6, 64e6, 1e9};
  for (int nv = 0; nv < 2; nv++)
    for (int m = 2; m <= 4; m += 2)
      for (int i = 0; i < 5; i++) {
        const double B = 250 * GB, B_nic = 25 * GB, S = sizes[i];
        int k = 4;
        run_t r;
        run_open_nvls(&r, m, k, 250, a, 25, x, nv == 1);
        double ring = node_ring_want(HS_COLL_ALLREDUCE, m, k, S, B, B_nic, a, x);
        double tree = node_tree_want(m, k, S, B, B_nic, a, x);
        bool pick_tree = nv ? tree < ring : tuner_tree(m, k, S, B, B_nic, a, x);
        /* NVLS ports: NVLS-Tree too (test_nvls_tree's closed form; NIC-bound
         * here, so its rail traffic on the GPU ports does not bind) */
        const int w_nt[] = {0, 0, 2, 3, 4}, h_nt[] = {0, 0, 1, 2, 2};
        double nt = a / NS + 2 * h_nt[m] * (a + x) / NS +
                    fmax((k + 1) * S / (k * B), w_nt[m] * S / (2 * B_nic));
        bool pick_nt = nv && nt < fmin(ring, tree);
        CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, m * k, S, NULL),
                 pick_nt ? nt : pick_tree ? tree : ring, 2);
        hs_coll_t c;
        hs_coll_init(&c);
        c.op = HS_COLL_ALLREDUCE;
        c.devices = seq;
        c.n = m * k;
        c.bytes = S;
        hs_net_paths_t p = tfab_paths(&r.fab);
        CHECK(hs_coll_algo_choose_paths(&p, &c) ==
              hs_coll_algo_find(pick_nt ? "nvls_tree" : pick_tree ? "node_tree" : "node_ring"));
        if (nv && S <= 1e6)
          CHECK(pick_nt); /* its one switch traversal and h tree hops beat the chain's 2(k-1) steps */
        if (nv && m == 2)
          CHECK(tree < ring);
        if (m == 4 && S >= 1e9)
          CHECK(ring < tree && !pick_tree);
        if (S <= 1e3)
          CHECK(pick_tree || pick_nt);
        if (!nv && S >= 1e9)
          CHECK(!pick_tree && tree < ring * (m == 2 ? 1 : 2)); /* 2 x 4: the tree is faster, not taken */
        run_close(&r);
      }
  /* unchanged: one node, and one rank per node, stay the plain ring even
   * where a tree's latency would win (4 x 1, 1 kB: ring 6 (a + x), tree
   * 4 (a + x)) */
  {
    const double S = 1e3;
    run_t r;
    run_open(&r, 4, 1, 250, a, 25, x);
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 4, S, NULL),
             6 * ((a + x) / NS + S / (4 * 25 * GB)), 1);
    run_close(&r);
    run_open(&r, 1, 8, 250, a, 25, x);
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 8, S, NULL),
             14 * (a / NS + S / (8 * 250 * GB)), 1);
    run_close(&r);
  }
  /* node_tree is all-reduce only */
  CHECK(!hs_coll_algo_find("node_tree")->supports(HS_COLL_ALLGATHER));
  CHECK(!hs_coll_algo_find("node_tree")->supports(HS_COLL_REDUCE_SCATTER));
}

/* A pipelined ring occupies every GPU port and NIC of its group at once:
 * 2 nodes x 2 GPUs, B = B_nic = 100 GB/s, no latency, all-gather of S
 * (3S/4 per sub-flow, ring 0 -> 1 -> 2 -> 3 -> 0). A p2p of 3S/8 sharing
 * one of the ring's links holds both to B/2 until it ends (at 3S/4 / B);
 * the ring then moves its last 3S/8 at B: it ends at 9S/8 / B instead of
 * 3S/4 / B. The same holds whether the shared link is an NVLink port
 * (p2p 0 -> 1) or the NIC (p2p 1 -> 3 crosses up1, nic0 up, nic1 down,
 * down3, all on the ring's hops 1 -> 2 and 2 -> 3). */
static void test_node_ring_contention(void)
{
  const double B = 100 * GB, S = 400e6;
  int32_t pairs[2][2] = {{0, 1}, {1, 3}};
  for (int p = 0; p < 2; p++) {
    run_t r;
    run_open(&r, 2, 2, 100, 0, 100, 0);
    hs_coll_t ag, p2p;
    hs_coll_init(&ag);
    ag.op = HS_COLL_ALLGATHER;
    ag.devices = seq;
    ag.n = 4;
    ag.bytes = S;
    hs_coll_init(&p2p);
    p2p.op = HS_COLL_P2P;
    p2p.devices = pairs[p];
    p2p.n = 2;
    p2p.bytes = 3 * S / 8;
    CHECK(hs_coll_start(r.net, &ag, NULL) == HS_OK);
    CHECK(ag.run_algo == hs_coll_algo_find("node_ring"));
    CHECK(hs_coll_start(r.net, &p2p, NULL) == HS_OK);
    CHECK(hs_engine_run(&r.eng, HS_TIME_MAX) == HS_OK);
    CHECK_NS(hs_time_to_s(p2p.t_end), 0.75 * S / B, 1);
    CHECK_NS(hs_time_to_s(ag.t_end), 9.0 / 8 * S / B, 1);
    run_close(&r);
  }
}

static void test_direct(void)
{
  const double B = 100 * GB, B_nic = 10 * GB, a = 3000, x = 10000, S = 80e6;
  run_t r;
  run_open(&r, 2, 8, 100, a, 10, x);
  /* p2p inside a node: a + S/B; across nodes: a + x + S/B_nic */
  int32_t p_in[] = {1, 5}, p_x[] = {2, 12}, p_self[] = {3, 3};
  CHECK_NS(sim_one(&r, "direct", HS_COLL_P2P, p_in, 2, S, NULL), a / NS + S / B, 1);
  CHECK_NS(sim_one(&r, "direct", HS_COLL_P2P, p_x, 2, S, NULL), (a + x) / NS + S / B_nic, 1);
  CHECK_NS(sim_one(&r, NULL, HS_COLL_P2P, p_self, 2, S, NULL), 0, 0);
  /* all-to-all in a node: a + (n-1) S/(n B) */
  for (int n = 2; n <= 8; n *= 2)
    CHECK_NS(sim_one(&r, "direct", HS_COLL_ALLTOALL, seq, n, S, NULL),
             a / NS + (n - 1) * S / (n * B), 1);
  /* all-to-all across 2 nodes x 8: each NIC carries 8 x 8 sub-flows of S/16:
   * (a + x) + 64 (S/16) / B_nic (the GPU ports carry 15 x S/16 at B: less) */
  CHECK_NS(sim_one(&r, "direct", HS_COLL_ALLTOALL, seq, 16, S, NULL),
           (a + x) / NS + 64 * (S / 16) / B_nic, 1);
  run_close(&r);
}

static void test_hap_collectives(void)
{
  const double B = 100 * GB, a = 3000, S = 90e6;
  run_t r;
  run_open(&r, 1, 8, 100, a, 50, 0);
  /* padded all-gather: (n-1)(a + max_i(share_i) S / B) */
  double sh4[] = {0.1, 0.4, 0.3, 0.2};
  CHECK_NS(sim_one(&r, "ring", HS_COLL_PADDED_ALLGATHER, seq, 4, S, sh4),
           3 * (a / NS + 0.4 * S / B), 1);
  /* equal shares: padding costs nothing: the plain all-gather formula */
  double eq4[] = {0.25, 0.25, 0.25, 0.25};
  CHECK_NS(sim_one(&r, "ring", HS_COLL_PADDED_ALLGATHER, seq, 4, S, eq4),
           3 * (a / NS + S / (4 * B)), 1);
  /* grouped broadcast, 2 ranks (0.75, 0.25): the chains 0->1 and 1->0 use
   * different ports: max(0.75, 0.25) S / B after one latency a */
  double sh2[] = {0.75, 0.25};
  CHECK_NS(sim_one(&r, "ring", HS_COLL_GROUPED_BROADCAST, seq, 2, S, sh2), a / NS + 0.75 * S / B, 2);
  /* 3 equal shares: every port is crossed by two of the three chains, all
   * of S/3 bytes at B/2: 2 (S/3) / B after the chain latency 2a (equals the
   * ring all-gather's 2(a + S/(3B))) */
  double eq3[] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
  CHECK_NS(sim_one(&r, "ring", HS_COLL_GROUPED_BROADCAST, seq, 3, S, eq3),
           2 * a / NS + 2 * (S / 3) / B, 3);
  /* 3 ranks (0.5, 0.3, 0.2): chain r crosses up(r), down(r+1), up(r+1),
   * down(r+2). All start at B/2. Chain 2 (0.2 S) ends at 0.4 S/B; chains 0
   * (0.3 S left) and 1 (0.1 S left) then share only up(1)/down(2): B/2
   * each. Chain 1 ends at 0.4 + 0.2 = 0.6 S/B; chain 0 (0.2 S left), alone:
   * 0.6 + 0.2 = 0.8 S/B. */
  double sh3[] = {0.5, 0.3, 0.2};
  CHECK_NS(sim_one(&r, "ring", HS_COLL_GROUPED_BROADCAST, seq, 3, S, sh3),
           2 * a / NS + 0.8 * S / B, 3);
  run_close(&r);
}

/* NVLS all-reduce inside one node (coll_nvls.c): each GPU port carries
 * (n + 1) S / n per direction (load-reduce: S out, S/n in; multicast store:
 * S/n out, S in), latency one switch traversal a:
 *   T = a + (n + 1) S / (n B);
 * the default takes it where it is faster than the ring. */
static void test_nvls(void)
{
  const double a = 3000, S = 256e6, B = 450 * GB;
  run_t r;
  run_open_nvls(&r, 2, 8, 450, a, 50, 8000, true);
  for (int n = 2; n <= 8; n *= 2) {
    CHECK_NS(sim_one(&r, "nvls", HS_COLL_ALLREDUCE, seq, n, S, NULL),
             a / NS + (n + 1.0) * S / (n * B), 2);
    /* the default inside an NVLS node follows NCCL's tuner (collective.c,
     * choose_nvls): at 256 MB nvls for n = 4 and 8, the ring for n = 2
     * (below) */
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, n, S, NULL),
             n > 2 ? a / NS + (n + 1.0) * S / (n * B) : 2 * (n - 1) * (a / NS + S / (n * B)), 2);
  }
  /* NCCL's tuner (tuning.cc constants) with busBw B = 450 GB/s: NVLS
   * 23 us + S / (5/6 B) against Ring LL (6.6 + 0.6 x 2(n-1)) us +
   * S / (min(87.7, B/4) n / (2(n-1))) GB/s; LL128 and Simple never win
   * for n >= 4 (higher latency, lower algbw than NVLS: B n / (2(n-1)) <=
   * 2/3 B < 5/6 B). Crossovers, by hand: n = 8: 8 us / (1/50.114 - 1/375)
   * ns/B = 462756 B; n = 4: 886605 B. n = 2: Ring Simple (15.2 us, algbw B)
   * beats NVLS (23 us, 5/6 B) at every size, so NVLS is never chosen. */
  static const double cross[2][2] = {{4, 886605}, {8, 462756}};
  for (int i = 0; i < 2; i++) {
    CHECK(!hs_coll_nvls_preferred(cross[i][1] * 0.999, (int32_t)cross[i][0], 450));
    CHECK(hs_coll_nvls_preferred(cross[i][1] * 1.001, (int32_t)cross[i][0], 450));
  }
  CHECK(!hs_coll_nvls_preferred(1e6, 2, 450) && !hs_coll_nvls_preferred(1e9, 2, 450));
  CHECK(!hs_coll_nvls_preferred(1e9, 1, 450) && !hs_coll_nvls_preferred(1e9, 8, 0));
  /* 8 ranks at large sizes: algbw 8/9 B, busbw 2 (7/8) (8/9) 450 = 700 GB/s */
  double t = sim_one(&r, "nvls", HS_COLL_ALLREDUCE, seq, 8, 64e9, NULL);
  CHECK_MSG(fabs(1.75 * 64e9 / t / GB - 700) < 0.05, "busbw %.3f", 1.75 * 64e9 / t / GB);
  CHECK(!hs_coll_algo_find("nvls")->supports(HS_COLL_ALLGATHER));
  /* refused across nodes, and on ports without NVLS */
  hs_coll_t c;
  hs_error_t err;
  hs_coll_init(&c);
  c.op = HS_COLL_ALLREDUCE;
  c.algo = hs_coll_algo_find("nvls");
  c.devices = (const int32_t[]){6, 7, 8, 9};
  c.n = 4;
  c.bytes = S;
  hs_error_init(&err);
  CHECK(hs_coll_start(r.net, &c, &err) == HS_EUNSUPPORTED);
  CHECK_CONTAINS(err.msg, "nvls all-reduce runs inside one node");
  run_close(&r);
  run_open(&r, 1, 8, 450, a, 50, 8000);
  c.devices = seq;
  hs_error_init(&err);
  CHECK(hs_coll_start(r.net, &c, &err) == HS_EUNSUPPORTED);
  CHECK_CONTAINS(err.msg, "needs NVLink SHARP GPU ports");
  /* without NVLS ports the default stays the ring */
  CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 8, S, NULL), 14 * (a / NS + S / (8 * B)), 2);
  run_close(&r);
  /* calibrated NVLS ports (hs_link_t.nvls_GBps / nvls_latency_ns, the
   * catalog's fit): NVLS reaches 300 of the port's 450 GB/s after 40 us,
   *   T = 40 us + 9 S / (8 x 300 GB/s);
   * the tuner (above: 462756 B on 8 ranks) picks the ring (a = 1 us per
   * step) at 64 kB and nvls from 1 MB, whichever is faster here. */
  const double a1 = 1000, Bn = 300 * GB, L = 40e-6;
  hs_engine_init(&r.eng, NULL);
  tfab_build(&r.fab, 1, 8, 450, a1 / 2, 50, 4000);
  for (int d = 0; d < 8; d++)
    for (int k = 0; k < 2; k++) {
      hs_link_t *l = &r.fab.links[k ? tfab_down(&r.fab, d) : tfab_up(&r.fab, d)];
      l->nvls = true;
      l->nvls_GBps = 300;
      l->nvls_latency_ns = 40000;
    }
  r.net = tfab_net(&r.fab, &r.eng);
  static const double sizes[] = {64e3, 1e6, 64e6, 1e9};
  for (size_t i = 0; i < HS_ARRAY_LEN(sizes); i++) {
    double Si = sizes[i];
    double ring = 14 * (a1 / NS + Si / (8 * B)), nv = L + 9 * Si / (8 * Bn);
    CHECK_NS(sim_one(&r, "nvls", HS_COLL_ALLREDUCE, seq, 8, Si, NULL), nv, 2);
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 8, Si, NULL), Si < 462756 ? ring : nv, 2);
  }
  run_close(&r);
}

/* NVLS-Tree across nodes (coll_nvls_tree.c): NVLS inside each node of k
 * ranks ((k + 1) S / k per GPU port and direction), NCCL's double binary
 * tree over the m nodes on every rail (S / (2k) per edge and direction per
 * rail; per NIC and direction w_nic(m) S / 2, with w_nic as node_tree_want
 * counts the tree's edges: 2, 3, 4 for m = 2, 3, 4), both at once. With
 * NICs of k rails the tree bypasses the GPU ports:
 *   T = L_nvls + 2 h (a + x) + max((k + 1) S / (k B_nvls), w_nic S / (2 B_nic))
 * L_nvls the node path latency a (uncalibrated ports) or the ports'
 * nvls_latency_ns, B_nvls the port's GBps or its nvls_GBps, h the deeper
 * tree's height (1, 2, 2). */
static void run_open_rails(run_t *r, int nodes, int per_node, double B, double a_ns, double B_nic,
                           double x_ns, int rails, double nvls_GBps, double nvls_lat_ns)
{
  hs_engine_init(&r->eng, NULL);
  tfab_build(&r->fab, nodes, per_node, B, a_ns / 2, B_nic, x_ns / 2);
  for (int d = 0; d < nodes * per_node; d++)
    for (int k = 0; k < 2; k++) {
      hs_link_t *l = &r->fab.links[k ? tfab_down(&r->fab, d) : tfab_up(&r->fab, d)];
      l->nvls = true;
      l->nvls_GBps = nvls_GBps;
      l->nvls_latency_ns = nvls_lat_ns;
    }
  for (int g = 0; g < nodes; g++)
    r->fab.links[tfab_nic_up(&r->fab, g)].rails = r->fab.links[tfab_nic_down(&r->fab, g)].rails = rails;
  r->net = tfab_net(&r->fab, &r->eng);
  CHECK(r->net != NULL);
}

static void test_nvls_tree(void)
{
  const double a = 2000, x = 8000, S = 256e6;
  const int w_nic[] = {0, 0, 2, 3, 4}, h[] = {0, 0, 1, 2, 2};
  /* uncalibrated and calibrated NVLS ports, NIC-bound (B_nic 100) and
   * NVLS-bound (B_nic 800), 2 to 4 nodes of 2 to 8 ranks */
  for (int cal = 0; cal < 2; cal++)
    for (int nb = 0; nb < 2; nb++)
      for (int m = 2; m <= 4; m++)
        for (int k = 2; k <= 8; k *= 2) {
          if (m * k > 16)
            continue;
          const double B = 450 * GB, B_nic = (nb ? 800 : 100) * GB;
          double Bn = cal ? 300 * GB : B, L = cal ? 40e-6 : a / NS;
          run_t r;
          run_open_rails(&r, m, k, 450, a, B_nic / GB, x, 8, cal ? 300 : 0, cal ? 40000 : 0);
          double want = L + 2 * h[m] * (a + x) / NS +
                        fmax((k + 1) * S / (k * Bn), w_nic[m] * S / (2 * B_nic));
          CHECK_NS(sim_one(&r, "nvls_tree", HS_COLL_ALLREDUCE, seq, m * k, S, NULL), want, 2);
          hs_coll_t c;
          hs_coll_init(&c);
          c.op = HS_COLL_ALLREDUCE;
          c.algo = hs_coll_algo_find("nvls_tree");
          c.devices = seq;
          c.n = m * k;
          c.bytes = S;
          hs_net_paths_t p = tfab_paths(&r.fab);
          double est = NAN;
          hs_error_t err;
          hs_error_init(&err);
          CHECK(hs_coll_estimate_paths(&p, &c, &est, &err) == HS_OK);
          CHECK_NS(est, want, 2); /* the estimate is the same closed form */
          run_close(&r);
        }
  /* the default on 2 x 8 with 8 rails: NVLS-Tree where it is the fastest
   * closed form. NIC 400 GB/s, calibrated ports (300 GB/s, 40 us): at 1 GB
   * NVLS-Tree's 40 us + 2 (a + x) + 9 S / (8 x 300) beats the ring
   * (1.875 S / 400 after its 28 latencies) and the tree (2 S / 450); at
   * 1 kB the tree's latency (2 (7a + a + x) = 48 us) wins */
  {
    run_t r;
    run_open_rails(&r, 2, 8, 450, a, 400, x, 8, 300, 40000);
    double S1 = 1e9;
    double nt = 40e-6 + 2 * (a + x) / NS + 9 * S1 / (8 * 300 * GB);
    CHECK_NS(sim_one(&r, NULL, HS_COLL_ALLREDUCE, seq, 16, S1, NULL), nt, 2);
    hs_coll_t c;
    hs_coll_init(&c);
    c.op = HS_COLL_ALLREDUCE;
    c.devices = seq;
    c.n = 16;
    c.bytes = S1;
    hs_net_paths_t p = tfab_paths(&r.fab);
    CHECK(hs_coll_algo_choose_paths(&p, &c) == hs_coll_algo_find("nvls_tree"));
    c.bytes = 1e3;
    CHECK(hs_coll_algo_choose_paths(&p, &c) == hs_coll_algo_find("node_tree"));
    /* refusals: one node, uneven nodes, one rank per node */
    hs_error_t err;
    c.algo = hs_coll_algo_find("nvls_tree");
    c.devices = (const int32_t[]){0, 1, 2, 3};
    c.n = 4;
    hs_error_init(&err);
    CHECK(hs_coll_start(r.net, &c, &err) == HS_EUNSUPPORTED);
    CHECK_CONTAINS(err.msg, "runs across nodes");
    c.devices = (const int32_t[]){0, 1, 2, 8, 9};
    c.n = 5;
    hs_error_init(&err);
    CHECK(hs_coll_start(r.net, &c, &err) == HS_EUNSUPPORTED);
    CHECK_CONTAINS(err.msg, "same number of ranks on every node");
    c.devices = (const int32_t[]){0, 8};
    c.n = 2;
    hs_error_init(&err);
    CHECK(hs_coll_start(r.net, &c, &err) == HS_EUNSUPPORTED);
    CHECK_CONTAINS(err.msg, "at least 2 ranks per node");
    run_close(&r);
  }
  /* ports without NVLS: refused, naming the link */
  {
    run_t r;
    run_open(&r, 2, 4, 450, a, 100, x);
    hs_coll_t c;
    hs_error_t err;
    hs_coll_init(&c);
    c.op = HS_COLL_ALLREDUCE;
    c.algo = hs_coll_algo_find("nvls_tree");
    c.devices = seq;
    c.n = 8;
    c.bytes = S;
    hs_error_init(&err);
    CHECK(hs_coll_start(r.net, &c, &err) == HS_EUNSUPPORTED);
    CHECK_CONTAINS(err.msg, "needs NVLink SHARP GPU ports");
    run_close(&r);
  }
  CHECK(!hs_coll_algo_find("nvls_tree")->supports(HS_COLL_ALLGATHER));
  CHECK(!hs_coll_algo_find("nvls_tree")->supports(HS_COLL_REDUCE_SCATTER));
}

static void test_trivial(void)
{
  run_t r;
  run_open(&r, 1, 8, 100, 3000, 50, 0);
  /* one rank, or nothing to move: done at once (through an event) */
  for (size_t i = 0; hs_coll_algos[i]; i++) {
    const hs_coll_algo_t *al = hs_coll_algos[i];
    for (int op = 0; op < HS_COLL__COUNT; op++) {
      if (!al->supports((hs_coll_op_t)op))
        continue;
      double sh[] = {0.5, 0.5};
      int n = op == HS_COLL_P2P ? 2 : 1;
      double *shares = (op == HS_COLL_PADDED_ALLGATHER || op == HS_COLL_GROUPED_BROADCAST)
                           ? (n == 1 ? (double[]){1.0} : sh)
                           : NULL;
      CHECK_NS(sim_one(&r, al->name, (hs_coll_op_t)op, seq, n, 0.0, shares), 0, 0);
      if (n == 1)
        CHECK_NS(sim_one(&r, al->name, (hs_coll_op_t)op, seq, 1, 1e6, shares), 0, 0);
    }
  }
  run_close(&r);
}

int main(void)
{
  HS_RUN(test_ring_allreduce);
  HS_RUN(test_ring_rs_ag_bcast);
  HS_RUN(test_tree);
  HS_RUN(test_hierarchical);
  HS_RUN(test_node_ring);
  HS_RUN(test_node_ring_contention);
  HS_RUN(test_node_tree);
  HS_RUN(test_direct);
  HS_RUN(test_hap_collectives);
  HS_RUN(test_nvls);
  HS_RUN(test_nvls_tree);
  HS_RUN(test_trivial);
  HS_TEST_END();
}
