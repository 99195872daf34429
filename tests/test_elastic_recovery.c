/*
 * test_elastic_recovery.c - recovery transfer plans and checkpoint costs
 * against hand counts: which bytes come from the device's own copy, from
 * surviving peers and from the cloud, for hand-made old and new plans
 * (Megatron grids, device rank = (pp_rank*dp + dp_rank)*tp + tp_rank), and
 * transfer times against the closed form of a single saturated bottleneck
 * (a node's NIC or its cloud link), plus the surviving sub-cluster.
 *
 * Cluster tests/data/elastic/spot4x4.json: 4 nodes x 4 A100, NIC 12.5 GB/s,
 * GPU ports 300 GB/s; node 0 in site "ondemand", nodes 1-3 in site "spot".
 */
#include "hs_elastic.h"
#include "hs_test.h"

static hs_model_t M;
static hs_cluster_t C;
static hs_topology_t *T;

#define BPP 14.0

/* Sum over ops [a, b) of state bytes held by `copies` holders of a
 * replicated op or `split_copies` full copies of a split op. */
static double state_sum(int32_t a, int32_t b, double split_copies, double repl_copies)
{
  double s = 0;
  for (int32_t o = a; o < b; o++) {
    double st = M.ops[o].params * BPP;
    s += M.ops[o].tp_split == HS_TP_REPLICATE ? st * repl_copies : st * split_copies;
  }
  return s;
}

static void grid(int32_t tp, int32_t pp, int32_t dp, int32_t first, hs_plan_t *p)
{
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.pp = pp;
  g.dp = dp;
  g.microbatch_size = 1;
  g.global_batch = 8 * dp;
  g.first_device = first;
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_init(p);
  hs_status_t st = hs_plan_grid(&M, &C, &g, p, &err);
  CHECK_MSG(st == HS_OK, "grid tp%d pp%d dp%d: %s", tp, pp, dp, err.msg);
}

static void layout(const hs_plan_t *p, hs_elastic_layout_t *l)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_elastic_layout_init(l);
  CHECK(hs_elastic_layout_from_plan(&M, p, NULL, l, &err) == HS_OK);
}

static void cfg_default(hs_elastic_cfg_t *cfg)
{
  hs_elastic_cfg_init(cfg);
  cfg->state_bytes_per_param = BPP;
  cfg->cloud_GBps = 1.25;
  cfg->local_read_GBps = 5.0;
}

static hs_elastic_recovery_cost_t recover(hs_recovery_t r, const hs_plan_t *oldp, const bool *ok,
                                          const hs_plan_t *newp, const hs_elastic_cfg_t *cfg)
{
  hs_elastic_layout_t lo, ln;
  layout(oldp, &lo);
  layout(newp, &ln);
  hs_elastic_recovery_cost_t out = {0};
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_elastic_recovery_plan(&M, &C, T, cfg, r, &lo, ok, &ln, &out, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  hs_elastic_layout_destroy(&lo);
  hs_elastic_layout_destroy(&ln);
  return out;
}

/* Every layer survives on a DP replica: zero cloud bytes, everything from
 * the surviving replica's node, at NIC speed. */
static void test_dp_replica_survives(void)
{
  hs_plan_t oldp, newp;
  grid(4, 1, 2, 0, &oldp); /* replica 0 on node 0, replica 1 on node 1 */
  grid(4, 1, 1, 8, &newp); /* fresh devices on node 2 */
  bool ok[4] = {false, true, true, true};
  hs_elastic_cfg_t cfg;
  cfg_default(&cfg);
  hs_elastic_recovery_cost_t lf = recover(HS_RECOVERY_LOCAL_FIRST, &oldp, ok, &newp, &cfg);
  double total = state_sum(0, (int32_t)M.n_ops, 1, 4);
  CHECK(lf.bytes_cloud == 0.0);
  CHECK(lf.bytes_own == 0.0);
  CHECK_REL(lf.bytes_peer, total, 1e-12);
  CHECK(!lf.used_cloud_fallback);
  /* all of it crosses node 1's NIC up and node 2's NIC down (12.5 GB/s) */
  CHECK_REL(lf.transfer_s, total / 12.5e9, 1e-6);
  /* cloud: node 2 downloads everything through its 1.25 GB/s cloud link */
  hs_elastic_recovery_cost_t cl = recover(HS_RECOVERY_CLOUD, &oldp, ok, &newp, &cfg);
  CHECK_REL(cl.bytes_cloud, total, 1e-12);
  CHECK(cl.bytes_peer == 0.0 && cl.bytes_own == 0.0);
  CHECK_REL(cl.transfer_s, total / 1.25e9, 1e-6);
  CHECK(lf.transfer_s <= cl.transfer_s);
  /* restart moves the same bytes as cloud */
  hs_elastic_recovery_cost_t rs = recover(HS_RECOVERY_RESTART, &oldp, ok, &newp, &cfg);
  CHECK_REL(rs.bytes_cloud, total, 1e-12);
  hs_plan_destroy(&oldp);
  hs_plan_destroy(&newp);
}

/* Every copy of the second stage is lost: exactly its shards come from the
 * cloud, the first stage's from each device's own copy. */
static void test_lost_shards_from_cloud(void)
{
  hs_plan_t oldp, newp;
  grid(4, 2, 1, 0, &oldp); /* stage 0 on node 0, stage 1 on node 1 */
  grid(4, 1, 1, 0, &newp); /* everything on node 0 */
  bool ok[4] = {true, false, true, true};
  hs_elastic_cfg_t cfg;
  cfg_default(&cfg);
  const hs_plan_stage_t *s0 = &oldp.pipelines[0].stages[0], *s1 = &oldp.pipelines[0].stages[1];
  double lost = state_sum(s1->op_first, s1->op_last, 1, 4);
  double kept = state_sum(s0->op_first, s0->op_last, 1, 4);
  CHECK(lost > 0 && kept > 0);
  hs_elastic_recovery_cost_t lf = recover(HS_RECOVERY_LOCAL_FIRST, &oldp, ok, &newp, &cfg);
  CHECK_REL(lf.bytes_cloud, lost, 1e-12);
  CHECK_REL(lf.bytes_own, kept, 1e-12);
  CHECK(lf.bytes_peer == 0.0);
  /* node 0 reads `kept` at 5 GB/s and downloads `lost` at 1.25 GB/s, in
   * parallel on separate links */
  CHECK_REL(lf.transfer_s, fmax(kept / 5e9, lost / 1.25e9), 1e-6);
  hs_elastic_recovery_cost_t cl = recover(HS_RECOVERY_CLOUD, &oldp, ok, &newp, &cfg);
  CHECK_REL(cl.bytes_cloud, lost + kept, 1e-12);
  CHECK_REL(cl.transfer_s, (lost + kept) / 1.25e9, 1e-6);
  CHECK(lf.transfer_s < cl.transfer_s);
  hs_plan_destroy(&oldp);
  hs_plan_destroy(&newp);
}

/* TP 4 -> TP 2 x DP 2 on another node: each new slice is assembled from two
 * old slices; all bytes are peer bytes. */
static void test_tp_reshard(void)
{
  hs_plan_t oldp, newp;
  grid(4, 1, 1, 0, &oldp);
  grid(2, 1, 2, 4, &newp);
  bool ok[4] = {true, true, true, true};
  hs_elastic_cfg_t cfg;
  cfg_default(&cfg);
  hs_elastic_recovery_cost_t lf = recover(HS_RECOVERY_LOCAL_FIRST, &oldp, ok, &newp, &cfg);
  double total = state_sum(0, (int32_t)M.n_ops, 2, 4);
  CHECK_REL(lf.bytes_peer, total, 1e-12);
  CHECK(lf.bytes_cloud == 0.0 && lf.bytes_own == 0.0);
  CHECK_REL(lf.transfer_s, total / 12.5e9, 1e-6);
  hs_plan_destroy(&oldp);
  hs_plan_destroy(&newp);
}

/* TP 4 x DP 2 on nodes 0-1, node 1 lost, new TP 2 x DP 2 on node 0: new
 * device d (rank k of its replica) needs units 2k, 2k+1 of 4; old device u
 * holds unit u. Own units: device 0 (unit 0) and device 3 (unit 3). */
static void test_partial_own(void)
{
  hs_plan_t oldp, newp;
  grid(4, 1, 2, 0, &oldp);
  grid(2, 1, 2, 0, &newp);
  bool ok[4] = {true, false, true, true};
  hs_elastic_cfg_t cfg;
  cfg_default(&cfg);
  hs_elastic_recovery_cost_t lf = recover(HS_RECOVERY_LOCAL_FIRST, &oldp, ok, &newp, &cfg);
  double own = state_sum(0, (int32_t)M.n_ops, 0.5, 4);
  double peer = state_sum(0, (int32_t)M.n_ops, 1.5, 0);
  CHECK_REL(lf.bytes_own, own, 1e-12);
  CHECK_REL(lf.bytes_peer, peer, 1e-12);
  CHECK(lf.bytes_cloud == 0.0);
  hs_plan_destroy(&oldp);
  hs_plan_destroy(&newp);
}

/* Checkpoint: one writer per slice (replica 0 on node 0; a replicated op is
 * written once, by TP rank 0): the whole state from node 0 at
 * ckpt_write_GBps; node 1 writes nothing. */
static void test_checkpoint_cost(void)
{
  hs_plan_t p;
  grid(4, 1, 2, 0, &p);
  hs_elastic_layout_t l;
  layout(&p, &l);
  hs_elastic_cfg_t cfg;
  cfg_default(&cfg);
  cfg.ckpt_write_GBps = 2.0;
  double total = state_sum(0, (int32_t)M.n_ops, 1, 1);
  CHECK_REL(hs_elastic_checkpoint_s(&M, &C, &cfg, &l), total / 2e9, 1e-12);
  /* pp2 x tp4: node s writes stage s: max over the two stage sizes */
  hs_plan_t q;
  grid(4, 2, 1, 0, &q);
  hs_elastic_layout_t lq;
  layout(&q, &lq);
  const hs_plan_stage_t *s0 = &q.pipelines[0].stages[0], *s1 = &q.pipelines[0].stages[1];
  double b0 = state_sum(s0->op_first, s0->op_last, 1, 1), b1 = state_sum(s1->op_first, s1->op_last, 1, 1);
  CHECK_REL(hs_elastic_checkpoint_s(&M, &C, &cfg, &lq), fmax(b0, b1) / 2e9, 1e-12);
  cfg.checkpoint_cost_s = 42.0;
  CHECK(hs_elastic_checkpoint_s(&M, &C, &cfg, &lq) == 42.0);
  /* slice bytes */
  for (int32_t o = 0; o < (int32_t)M.n_ops; o++) {
    double b = M.ops[o].params * BPP;
    double want = M.ops[o].tp_split == HS_TP_REPLICATE ? b : b / 4;
    CHECK_REL(hs_elastic_slice_bytes(&M, o, 4, BPP), want, 1e-15);
  }
  hs_elastic_layout_destroy(&l);
  hs_elastic_layout_destroy(&lq);
  hs_plan_destroy(&p);
  hs_plan_destroy(&q);
}

static void test_subcluster(void)
{
  bool alive[4] = {true, false, true, true};
  hs_cluster_t s;
  hs_cluster_init(&s);
  int32_t map[16];
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_search_subcluster(&C, alive, &s, map, &err) == HS_OK);
  CHECK_EQ_INT(s.n_devices, 12);
  CHECK_EQ_INT(s.n_nodes, 3);
  CHECK_EQ_INT(s.n_sites, 2);
  CHECK_EQ_INT(s.sites[1].n_nodes, 2);
  for (int d = 0; d < 4; d++)
    CHECK_EQ_INT(map[d], d);
  for (int d = 4; d < 12; d++)
    CHECK_EQ_INT(map[d], d + 4);
  for (size_t d = 0; d < s.n_devices; d++) {
    CHECK_EQ_INT(s.devices[d].node, (int32_t)d / 4);
    CHECK_EQ_INT(s.nodes[s.devices[d].node].first_device + s.devices[d].local_rank, (int32_t)d);
  }
  hs_topology_t *t = NULL;
  CHECK(hs_topology_new(&s, &t, &err) == HS_OK);
  hs_topology_free(t);
  bool none[4] = {false, false, false, false};
  CHECK(hs_search_subcluster(&C, none, &s, map, &err) == HS_EINFEASIBLE);
  hs_cluster_destroy(&s);
}

int main(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_init(&M);
  hs_cluster_init(&C);
  if (hs_model_load("gpt3-1.3b", 0, &M, &err) != HS_OK ||
      hs_cluster_load(hs_test_data("elastic/spot4x4.json"), &C, &err) != HS_OK ||
      hs_topology_new(&C, &T, &err) != HS_OK) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return 1;
  }
  HS_RUN(test_dp_replica_survives);
  HS_RUN(test_lost_shards_from_cloud);
  HS_RUN(test_tp_reshard);
  HS_RUN(test_partial_own);
  HS_RUN(test_checkpoint_cost);
  HS_RUN(test_subcluster);
  hs_topology_free(T);
  hs_cluster_destroy(&C);
  hs_model_destroy(&M);
  HS_TEST_END();
}
