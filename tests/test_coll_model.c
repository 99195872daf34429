/*
 * test_coll_model.c - the collective layer as a whole: the analytical fast
 * path (hs_coll_estimate_paths) equals the flow model on uncontended cases
 * for every algorithm and operation (within the rounding of one latency
 * wait and one completion per phase and flow), validation messages, the
 * default algorithm choice, contention computed by hand, and determinism.
 */
#include "hs_net.h"
#include "hs_test.h"
#include "test_net_fabric.h"

#define GB 1e9
#define NS 1e9

static int n_done;
static void on_done(hs_coll_t *c) { n_done++; }

static void coll_set(hs_coll_t *c, const char *algo, hs_coll_op_t op, const int32_t *dev, int n,
                     double S, const double *shares)
{
  hs_coll_init(c);
  c->op = op;
  c->algo = algo ? hs_coll_algo_find(algo) : NULL;
  c->devices = dev;
  c->n = n;
  c->bytes = S;
  c->shares = shares;
  c->done = on_done;
}

/* Every algorithm x operation x group on a fabric whose nodes differ
 * (heterogeneous ports): simulated time vs estimate. */
static void test_sim_equals_estimate(void)
{
  tfab_t fab;
  tfab_build(&fab, 3, 4, 150, 700, 20, 4000);
  /* make node 1 slower (V100-like ports, a slower NIC) */
  for (int d = 4; d < 8; d++) {
    fab.links[tfab_up(&fab, d)].GBps = 75;
    fab.links[tfab_down(&fab, d)].GBps = 75;
  }
  fab.links[tfab_nic_up(&fab, 1)].GBps = 12.5;
  /* nodes 0 and 1's ports are NVLink SHARP ports: nvls runs on the groups
   * inside node 0, nvls_tree on the group of both nodes */
  for (int d = 0; d < 8; d++)
    fab.links[tfab_up(&fab, d)].nvls = fab.links[tfab_down(&fab, d)].nvls = true;
  hs_net_paths_t paths = tfab_paths(&fab);
  int32_t g_node[] = {0, 1, 2, 3};
  int32_t g_two[] = {0, 1, 2, 3, 4, 5, 6, 7};
  int32_t g_all[] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
  int32_t g_odd[] = {2, 9, 5};
  struct {
    const int32_t *d;
    int n;
  } groups[] = {{g_node, 4}, {g_two, 8}, {g_all, 12}, {g_odd, 3}, {g_node, 2}};
  double shares12[12], shares8[8], shares4[4], shares3[3], shares2[2];
  double *shares_by_n[13] = {0};
  shares_by_n[12] = shares12;
  shares_by_n[8] = shares8;
  shares_by_n[4] = shares4;
  shares_by_n[3] = shares3;
  shares_by_n[2] = shares2;
  for (int n = 2; n <= 12; n++)
    if (shares_by_n[n]) {
      double sum = 0;
      for (int i = 0; i < n; i++)
        sum += (shares_by_n[n][i] = 1.0 + (i * 7) % 5);
      for (int i = 0; i < n; i++)
        shares_by_n[n][i] /= sum;
    }
  int checked = 0;
  for (size_t a = 0; hs_coll_algos[a]; a++) {
    const hs_coll_algo_t *al = hs_coll_algos[a];
    for (int op = 0; op < HS_COLL__COUNT; op++) {
      if (!al->supports((hs_coll_op_t)op))
        continue;
      for (size_t g = 0; g < HS_ARRAY_LEN(groups); g++) {
        if (al == hs_coll_algo_find("nvls") && groups[g].d != g_node)
          continue; /* one node only (test_coll_formulas checks the refusal) */
        if (al == hs_coll_algo_find("nvls_tree") && groups[g].d != g_two)
          continue; /* NVLS nodes of equal ranks only (test_coll_formulas) */
        int n = op == HS_COLL_P2P ? 2 : groups[g].n;
        const int32_t *d = op == HS_COLL_P2P ? groups[g].d + groups[g].n - 2 : groups[g].d;
        hs_coll_t c;
        coll_set(&c, al->name, (hs_coll_op_t)op, d, n, 123.456e6, shares_by_n[n]);
        double est = NAN;
        hs_error_t err;
        hs_error_init(&err);
        hs_status_t st = hs_coll_estimate_paths(&paths, &c, &est, &err);
        CHECK_MSG(st == HS_OK, "%s %s: %s", al->name, hs_coll_op_name((hs_coll_op_t)op), err.msg);
        CHECK_REL(al->estimate_s(&paths, &c), est, 0);
        hs_engine_t eng;
        hs_engine_init(&eng, NULL);
        hs_net_t *net = tfab_net(&fab, &eng);
        CHECK(hs_coll_start(net, &c, &err) == HS_OK);
        CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
        double sim = hs_time_to_s(c.t_end - c.t_start);
        /* <= 1 ns of rounding per phase and flow: 3 phases, n flows max */
        CHECK_MSG(fabs(sim - est) * NS <= 3 + n, "%s %s n=%d: sim %.3f ns, estimate %.3f ns",
                  al->name, hs_coll_op_name((hs_coll_op_t)op), n, sim * NS, est * NS);
        CHECK(est > 0);
        checked++;
        hs_net_free(net);
        hs_engine_destroy(&eng);
      }
    }
  }
  CHECK(checked >= 40);
  tfab_free(&fab);
}

static void test_validation(void)
{
  tfab_t fab;
  tfab_build(&fab, 2, 4, 100, 1000, 25, 5000);
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = tfab_net(&fab, &eng);
  hs_coll_t c;
  hs_error_t err;
  int32_t dup[] = {0, 1, 2, 1};
  int32_t neg[] = {0, -3};
  int32_t far[] = {0, 99};
  int32_t ok[] = {0, 1, 2, 3};
  double bad_sum[] = {0.5, 0.4, 0.05, 0.0};
  double bad_one[] = {0.5, -0.5, 0.5, 0.5};
  struct {
    const char *algo;
    hs_coll_op_t op;
    const int32_t *d;
    int n;
    double S;
    const double *shares;
    hs_status_t want;
    const char *needle;
  } cases[] = {
      {NULL, HS_COLL_ALLREDUCE, dup, 4, 1e6, NULL, HS_EINVAL, "coll.devices[3]: device 1 appears twice"},
      {NULL, HS_COLL_ALLREDUCE, neg, 2, 1e6, NULL, HS_EINVAL, "coll.devices[1]: negative device -3"},
      {"ring", HS_COLL_ALLREDUCE, far, 2, 1e6, NULL, HS_ENOTFOUND, "no path from device 0 to device 99"},
      {NULL, HS_COLL_ALLREDUCE, ok, 0, 1e6, NULL, HS_EINVAL, "coll.n"},
      {NULL, HS_COLL_P2P, ok, 3, 1e6, NULL, HS_EINVAL, "p2p needs exactly 2 devices, got 3"},
      {NULL, HS_COLL_ALLREDUCE, ok, 4, -1, NULL, HS_EINVAL, "coll.bytes: -1"},
      {NULL, HS_COLL_ALLREDUCE, ok, 4, NAN, NULL, HS_EINVAL, "coll.bytes"},
      {NULL, HS_COLL_PADDED_ALLGATHER, ok, 4, 1e6, NULL, HS_EINVAL, "coll.shares: required"},
      {NULL, HS_COLL_PADDED_ALLGATHER, ok, 4, 1e6, bad_sum, HS_EINVAL, "coll.shares: sum to 0.95"},
      {NULL, HS_COLL_GROUPED_BROADCAST, ok, 4, 1e6, bad_one, HS_EINVAL, "coll.shares[1]: -0.5"},
      {"tree", HS_COLL_ALLGATHER, ok, 4, 1e6, NULL, HS_EUNSUPPORTED, "\"tree\" does not implement allgather"},
      {"direct", HS_COLL_ALLREDUCE, ok, 4, 1e6, NULL, HS_EUNSUPPORTED, "\"direct\" does not implement allreduce"},
      {"hierarchical", HS_COLL_ALLREDUCE, (int32_t[]){0, 1, 4}, 3, 1e6, NULL, HS_EUNSUPPORTED,
       "node 0 has 2, node 1 has 1"},
  };
  hs_net_paths_t paths = tfab_paths(&fab);
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    coll_set(&c, cases[i].algo, cases[i].op, cases[i].d, cases[i].n, cases[i].S, cases[i].shares);
    hs_error_init(&err);
    CHECK_EQ_INT(hs_coll_start(net, &c, &err), cases[i].want);
    CHECK_CONTAINS(err.msg, cases[i].needle);
    double s = 0;
    hs_error_init(&err);
    CHECK_EQ_INT(hs_coll_estimate_paths(&paths, &c, &s, &err), cases[i].want);
    CHECK(isnan(s));
    if (c.algo)
      CHECK(isnan(c.algo->estimate_s(&paths, &c)));
  }
  CHECK_EQ_INT(hs_engine_pending_count(&eng), 0);
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  /* no path function */
  hs_net_t *bare = NULL;
  CHECK(hs_net_new_links(&eng, fab.links, fab.n_links, &bare) == HS_OK);
  coll_set(&c, NULL, HS_COLL_ALLREDUCE, ok, 4, 1e6, NULL);
  hs_error_init(&err);
  CHECK(hs_coll_start(bare, &c, &err) != HS_OK);
  CHECK_CONTAINS(err.msg, "no path function");
  hs_net_free(bare);
  hs_net_free(net);
  hs_engine_destroy(&eng);
  tfab_free(&fab);
}

static void test_names_and_defaults(void)
{
  for (int op = 0; op < HS_COLL__COUNT; op++) {
    hs_coll_op_t back;
    CHECK(hs_coll_op_parse(hs_coll_op_name((hs_coll_op_t)op), &back) == HS_OK);
    CHECK_EQ_INT(back, op);
  }
  hs_coll_op_t x;
  CHECK(hs_coll_op_parse("all-reduce", &x) == HS_ENOTFOUND);
  CHECK(strcmp(hs_coll_op_name((hs_coll_op_t)99), "?") == 0);
  for (size_t i = 0; hs_coll_algos[i]; i++)
    CHECK(hs_coll_algo_find(hs_coll_algos[i]->name) == hs_coll_algos[i]);
  CHECK(hs_coll_algo_find("collnet") == NULL);
  CHECK(hs_coll_algo_find("nvls") != NULL); /* coll_nvls.c */
  tfab_t fab;
  tfab_build(&fab, 2, 4, 100, 1000, 25, 5000);
  hs_net_paths_t p = tfab_paths(&fab);
  int32_t in_node[] = {0, 1, 2, 3}, two[] = {0, 1, 4, 5}, uneven[] = {0, 1, 2, 4},
          one_each[] = {0, 4};
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLREDUCE, in_node, 4) == hs_coll_algo_find("ring"));
  /* across nodes, NCCL's pipelined ring over all ranks (any number per
   * node); one rank per node is the plain ring */
  const hs_coll_algo_t *nr = hs_coll_algo_find("node_ring");
  CHECK(nr != NULL);
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLREDUCE, two, 4) == nr);
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLREDUCE, uneven, 4) == nr);
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLREDUCE, one_each, 2) == hs_coll_algo_find("ring"));
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_P2P, two, 2) == hs_coll_algo_find("direct"));
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLTOALL, two, 4) == hs_coll_algo_find("direct"));
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLGATHER, two, 4) == nr);
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_REDUCE_SCATTER, two, 4) == nr);
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_ALLGATHER, in_node, 4) == hs_coll_algo_find("ring"));
  CHECK(hs_coll_algo_default_paths(&p, HS_COLL_BROADCAST, two, 4) == hs_coll_algo_find("ring"));
  tfab_free(&fab);
}

/* Ring all-reduce of S on 4 GPUs (a = 0) while a p2p of P = S/2 runs on the
 * ring's first neighbour path 0 -> 1 (ports up0, down1). Both flows are held
 * to B/2 there. The ring flow carries 2(n-1)S/n = 1.5 S per sub-flow: the
 * p2p ends at (S/2)/(B/2) = S/B, when the ring has moved S/2; the remaining
 * S goes at B: the all-reduce ends at 2 S/B instead of 1.5 S/B alone. */
static void test_contention(void)
{
  const double B = 100 * GB, S = 200e6;
  tfab_t fab;
  tfab_build(&fab, 1, 4, 100, 0, 10, 0);
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = tfab_net(&fab, &eng);
  int32_t ring[] = {0, 1, 2, 3}, pair[] = {0, 1};
  hs_coll_t ar, p2p;
  coll_set(&ar, "ring", HS_COLL_ALLREDUCE, ring, 4, S, NULL);
  coll_set(&p2p, NULL, HS_COLL_P2P, pair, 2, S / 2, NULL);
  CHECK(hs_coll_start(net, &ar, NULL) == HS_OK);
  CHECK(hs_coll_start(net, &p2p, NULL) == HS_OK);
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  CHECK(llabs(p2p.t_end - llround(S / B * NS)) <= 1);
  CHECK(llabs(ar.t_end - llround(2 * S / B * NS)) <= 1);
  const hs_link_stats_t *st = hs_net_link_stats(net);
  CHECK_EQ_INT(st[tfab_up(&fab, 0)].max_flows, 2);
  CHECK_REL(st[tfab_up(&fab, 0)].bytes, 1.5 * S + S / 2, 1e-12);
  CHECK_REL(st[tfab_up(&fab, 2)].bytes, 1.5 * S, 1e-12);
  hs_net_free(net);
  hs_engine_destroy(&eng);
  tfab_free(&fab);
}

/* Many overlapping collectives of every kind, started at staggered times:
 * everything completes, twice with identical times (determinism), and
 * freeing a network mid-run leaves nothing behind (ASan). */
typedef struct job {
  hs_coll_t c;
  hs_event_t start;
  hs_net_t *net;
  int32_t dev[12];
  double shares[12];
} job_t;

static void job_start(hs_engine_t *eng, hs_event_t *ev)
{
  job_t *j = HS_CONTAINER_OF(ev, job_t, start);
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_coll_start(j->net, &j->c, &err) == HS_OK, "%s", err.msg);
}

static void mixed_run(hs_time_t *t_end, int n_jobs, hs_time_t stop_at)
{
  tfab_t fab;
  tfab_build(&fab, 3, 4, 150, 700, 20, 4000);
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = tfab_net(&fab, &eng);
  job_t *jobs = calloc((size_t)n_jobs, sizeof *jobs);
  uint64_t s = 99;
  for (int i = 0; i < n_jobs; i++) {
    job_t *j = &jobs[i];
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    int kind = (int)((s >> 33) % 7);
    int n = kind == 0 ? 2 : 2 + (int)((s >> 40) % 11);
    for (int k = 0; k < n; k++)
      j->dev[k] = (int32_t)((k * 5 + i) % 12);
    for (int k = 0; k < n; k++)
      j->shares[k] = 1.0 / n;
    static const hs_coll_op_t ops[] = {HS_COLL_P2P, HS_COLL_ALLREDUCE, HS_COLL_ALLGATHER,
                                       HS_COLL_ALLTOALL, HS_COLL_GROUPED_BROADCAST,
                                       HS_COLL_PADDED_ALLGATHER, HS_COLL_BROADCAST};
    const char *algo = kind == 1 && i % 2 ? "tree" : NULL;
    coll_set(&j->c, algo, ops[kind], j->dev, n, (double)(1 + (s >> 50) % 100) * 1e6, j->shares);
    j->net = net;
    hs_event_init(&j->start, job_start);
    hs_engine_schedule(&eng, &j->start, (hs_time_t)((s >> 20) % 5000000), 0);
  }
  CHECK(hs_engine_run(&eng, stop_at) == HS_OK);
  for (int i = 0; i < n_jobs; i++)
    t_end[i] = jobs[i].c.t_end;
  hs_net_free(net); /* may be mid-run: cancels what is pending */
  hs_engine_destroy(&eng);
  free(jobs);
  tfab_free(&fab);
}

static void test_determinism(void)
{
  enum { N = 200 };
  hs_time_t a[N], b[N], c[N];
  int before = n_done;
  mixed_run(a, N, HS_TIME_MAX);
  CHECK_EQ_INT(n_done - before, N);
  mixed_run(b, N, HS_TIME_MAX);
  CHECK(memcmp(a, b, sizeof a) == 0);
  for (int i = 0; i < N; i++)
    CHECK(a[i] > 0);
  mixed_run(c, N, 2000000); /* stopped half-way, then freed */
}

int main(void)
{
  HS_RUN(test_sim_equals_estimate);
  HS_RUN(test_validation);
  HS_RUN(test_names_and_defaults);
  HS_RUN(test_contention);
  HS_RUN(test_determinism);
  HS_TEST_END();
}
