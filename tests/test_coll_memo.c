/*
 * test_coll_memo.c - the collective memo (sim/coll_memo.c) changes nothing
 * but speed. The same rounds of collectives run on two networks over one
 * topology: hs_net_new's (memo on: algorithm choices and built phases kept
 * from the first round) and a bare-links network with the topology's path
 * function and no node_of (memo off: every collective chooses and builds
 * from scratch, nodes inferred from path queries, the code path that
 * predates the memo). Every collective's start and end must agree to the
 * nanosecond, round after round, with collectives running concurrently over
 * shared links; the memo must have been used, and hints (hs_coll_t.memo_hint:
 * a collective's own choice from the round before, another's, indices past
 * the memo) change no time. Also: a path function set
 * after construction drops the memo (hs_net_set_path_fn); a collective that
 * fails validation fails it on every start (the memo skips validation only
 * for keys that passed it).
 */
#include "hs_clusters.h"
#include "hs_net.h"
#include "hs_test.h"
#include "net_colls.h"
#include "net_impl.h"
#include "topo_fixture.h"

#include <stdlib.h>
#include <string.h>

/* Two DGX H100 nodes: NVLS ports, NIC rails, NCCL's tuner choices. */
#define DGX_H100_2                                                                              \
  "{\"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 2, \"gpu\": "                          \
  "\"H100-SXM5-80GB\", \"gpus_per_node\": 8, \"intra_node\": {\"interconnect\": "               \
  "\"NVLink4-NVSwitch\"}, \"nic\": {\"interconnect\": \"NDR-IB-8x400\"}}], "                     \
  "\"fabric\": {\"latency_us\": 2.0}}]}"

/* Two sites over a slow link, A100 and V100 nodes of 4 GPUs. */
#define TWO_SITES                                                                               \
  "{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 2, \"gpu\": \"A100-SXM4-80GB\", "      \
  "\"gpus_per_node\": 4}]}, {\"name\": \"b\", \"nodes\": [{\"count\": 2, \"gpu\": "             \
  "\"V100-SXM2-32GB\", \"gpus_per_node\": 4}]}], \"links\": [{\"between\": [\"a\", \"b\"], "      \
  "\"GBps\": 3.125, \"latency_us\": 500}]}"

typedef struct spec {
  hs_coll_op_t op;
  const char *algo; /* NULL: the default choice */
  int32_t dev[16];
  int n;
  double bytes;
  bool shares;      /* padded all-gather with uneven shares (not memoised) */
} spec_t;

static const spec_t h100_specs[] = {
    {HS_COLL_ALLREDUCE, NULL, {0, 1, 2, 3}, 4, 4e6, false},
    {HS_COLL_ALLREDUCE, NULL, {4, 5, 6, 7}, 4, 256e6, false},
    {HS_COLL_REDUCE_SCATTER, NULL, {0, 1, 2, 3}, 4, 64e6, false},
    {HS_COLL_ALLGATHER, NULL, {4, 5, 6, 7}, 4, 64e6, false},
    {HS_COLL_ALLREDUCE, NULL, {0, 8}, 2, 32e6, false},
    {HS_COLL_ALLREDUCE, NULL, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 16, 1e9, false},
    {HS_COLL_ALLREDUCE, NULL, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 16, 2e6, false},
    {HS_COLL_ALLREDUCE, NULL, {1, 2, 9, 10}, 4, 8e6, false},
    {HS_COLL_ALLREDUCE, "ring", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 16, 1e8, false},
    {HS_COLL_P2P, NULL, {3, 11}, 2, 128e6, false},
    {HS_COLL_ALLTOALL, NULL, {0, 1, 8, 9}, 4, 16e6, false},
    {HS_COLL_BROADCAST, NULL, {8, 9, 10, 11, 12, 13, 14, 15}, 8, 50e6, false},
    {HS_COLL_PADDED_ALLGATHER, NULL, {12, 13, 14, 15}, 4, 40e6, true},
};

static const spec_t site_specs[] = {
    {HS_COLL_ALLREDUCE, NULL, {0, 1, 2, 3}, 4, 100e6, false},
    {HS_COLL_ALLREDUCE, NULL, {0, 4, 8, 12}, 4, 100e6, false},
    {HS_COLL_ALLREDUCE, NULL, {0, 1, 4, 5, 8, 9, 12, 13}, 8, 300e6, false},
    {HS_COLL_ALLREDUCE, NULL, {0, 1, 4, 5, 8, 9, 12, 13}, 8, 300e3, false},
    {HS_COLL_REDUCE_SCATTER, NULL, {2, 3, 6, 7}, 4, 20e6, false},
    {HS_COLL_ALLGATHER, NULL, {10, 11, 14, 15}, 4, 20e6, false},
    {HS_COLL_P2P, NULL, {7, 8}, 2, 10e6, false},
};

static hs_status_t topo_path_fn(void *ctx, int32_t a, int32_t b, hs_path_t *out)
{
  return hs_topology_path((const hs_topology_t *)ctx, a, b, out);
}

static void on_done(hs_coll_t *c) { (void)c; }

/* Hints a collective gets (hs_coll_t.memo_hint): none; its own choice
 * from the round before (what a TP group's executor passes); another
 * spec's choice, off by one every second round; indices past the memo. */
enum { HINT_NONE, HINT_OWN, HINT_WRONG, HINT_PAST };

/* Runs `rounds` rounds of every spec at once; t[r * n + i] = end - start. */
static void run(const hs_topology_t *topo, bool memo, int hint_mode, const spec_t *s, int n,
                int rounds, hs_time_t *t, uint64_t *hits, uint64_t *hint_hits)
{
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = NULL;
  if (memo) {
    CHECK_EQ_INT(hs_net_new(&eng, topo, &net), HS_OK);
  } else {
    CHECK_EQ_INT(hs_net_new_links(&eng, hs_topology_links(topo), hs_topology_n_links(topo), &net),
                 HS_OK);
    if (net)
      hs_net_set_path_fn(net, topo_path_fn, (void *)(uintptr_t)topo, NULL);
  }
  hs_coll_t *c = calloc((size_t)n, sizeof *c);
  size_t *hint = calloc((size_t)n, sizeof *hint);
  double shares[4] = {0.4, 0.3, 0.2, 0.1};
  for (int r = 0; r < rounds && net && c && hint; r++) {
    for (int i = 0; i < n; i++) {
      hs_coll_init(&c[i]);
      c[i].op = s[i].op;
      c[i].algo = s[i].algo ? hs_coll_algo_find(s[i].algo) : NULL;
      c[i].devices = s[i].dev;
      c[i].n = s[i].n;
      c[i].bytes = s[i].bytes;
      c[i].shares = s[i].shares ? shares : NULL;
      c[i].done = on_done;
      c[i].memo_hint = hint_mode == HINT_OWN     ? hint[i]
                       : hint_mode == HINT_WRONG ? hint[(i + 1) % n] + (size_t)(r % 2)
                       : hint_mode == HINT_PAST  ? (size_t)1000000 + (size_t)i
                                                 : 0;
      /* the hinted collective's own array (the promise hs_coll_t states) */
      c[i].memo_hint_devices = hint_mode == HINT_WRONG ? s[(i + 1) % n].dev : s[i].dev;
      hs_error_t err;
      hs_error_init(&err);
      CHECK_MSG(hs_coll_start(net, &c[i], &err) == HS_OK, "spec %d: %s", i, err.msg);
      /* a memoised default choice is named for the next round's hint */
      if (memo && !s[i].shares && !s[i].algo)
        CHECK_MSG(c[i].memo_choice > 0, "round %d spec %d: no memo_choice", r, i);
      hint[i] = c[i].memo_choice;
    }
    CHECK_EQ_INT(hs_engine_run(&eng, HS_TIME_MAX), HS_OK);
    for (int i = 0; i < n; i++)
      t[r * n + i] = c[i].t_end - c[i].t_start;
  }
  *hits = net ? hs__colls_memo_hits(net->colls) : 0;
  *hint_hits = net ? hs__colls_memo_hint_hits(net->colls) : 0;
  free(c);
  free(hint);
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

static void same_with_and_without(const char *json, const spec_t *s, int n)
{
  hs_cluster_t cl;
  hs_topology_t *topo = fx_topo_of(json, &cl);
  CHECK(topo != NULL);
  if (!topo)
    return;
  enum { ROUNDS = 3 };
  hs_time_t *on = calloc((size_t)(ROUNDS * n), sizeof *on);
  hs_time_t *off = calloc((size_t)(ROUNDS * n), sizeof *off);
  uint64_t hits_on = 0, hits_off = 0, hint_hits = 0;
  run(topo, false, HINT_NONE, s, n, ROUNDS, off, &hits_off, &hint_hits);
  CHECK_EQ_INT(hits_off, 0);
  /* every kind of hint, right or wrong, changes no time */
  for (int mode = HINT_NONE; mode <= HINT_PAST; mode++) {
    run(topo, true, mode, s, n, ROUNDS, on, &hits_on, &hint_hits);
    for (int k = 0; k < ROUNDS * n; k++) {
      CHECK_MSG(on[k] == off[k], "hints %d, round %d spec %d: %lld ns with the memo, %lld without",
                mode, k / n, k % n, (long long)on[k], (long long)off[k]);
      CHECK(on[k] > 0);
    }
    /* rounds 2 and 3 find every memoisable collective's choice and phases */
    int keyed = 0;
    for (int i = 0; i < n; i++)
      keyed += !s[i].shares;
    CHECK_MSG(hits_on >= (uint64_t)(2 * keyed), "hints %d: %llu memo hits for %d memoisable collectives",
              mode, (unsigned long long)hits_on, keyed);
    /* its own choice is taken in rounds 2 and 3 by every keyed default
     * collective; indices past the memo never */
    int chosen = 0;
    for (int i = 0; i < n; i++)
      chosen += !s[i].shares && !s[i].algo;
    if (mode == HINT_OWN)
      CHECK_MSG(hint_hits == (uint64_t)(2 * chosen), "%llu hints taken, %d expected",
                (unsigned long long)hint_hits, 2 * chosen);
    if (mode == HINT_NONE || mode == HINT_PAST)
      CHECK_EQ_INT(hint_hits, 0);
  }
  free(on);
  free(off);
  hs_topology_free(topo);
  hs_cluster_destroy(&cl);
}

static void test_dgx_h100(void) { same_with_and_without(DGX_H100_2, h100_specs, HS_ARRAY_LEN(h100_specs)); }

static void test_two_sites(void) { same_with_and_without(TWO_SITES, site_specs, HS_ARRAY_LEN(site_specs)); }

/* A path function set after construction: the memo is gone (what it held
 * came from the old paths). */
static void test_set_path_drops(void)
{
  hs_cluster_t cl;
  hs_topology_t *topo = fx_topo_of(DGX_H100_2, &cl);
  if (!topo)
    return;
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = NULL;
  CHECK_EQ_INT(hs_net_new(&eng, topo, &net), HS_OK);
  int32_t dev[4] = {0, 1, 2, 3};
  for (int r = 0; r < 2 && net; r++) {
    hs_coll_t c;
    hs_coll_init(&c);
    c.op = HS_COLL_ALLREDUCE;
    c.devices = dev;
    c.n = 4;
    c.bytes = 1e6;
    c.done = on_done;
    CHECK_EQ_INT(hs_coll_start(net, &c, NULL), HS_OK);
    CHECK_EQ_INT(hs_engine_run(&eng, HS_TIME_MAX), HS_OK);
  }
  CHECK(net && hs__colls_memo_entries(net->colls) > 0 && hs__colls_memo_hits(net->colls) > 0);
  if (net) {
    hs_net_set_path_fn(net, topo_path_fn, (void *)(uintptr_t)topo, NULL);
    CHECK_EQ_INT(hs__colls_memo_entries(net->colls), 0);
  }
  hs_net_free(net);
  hs_engine_destroy(&eng);
  hs_topology_free(topo);
  hs_cluster_destroy(&cl);
}

/* The memo skips validation only for a key that passed it (issue 35): a
 * collective with a repeated device is refused on every start, not only on
 * the first, and the valid collective of the same shape that follows still
 * runs, memoised. */
static void test_invalid_every_time(void)
{
  hs_cluster_t cl;
  hs_topology_t *topo = fx_topo_of(DGX_H100_2, &cl);
  if (!topo)
    return;
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = NULL;
  CHECK_EQ_INT(hs_net_new(&eng, topo, &net), HS_OK);
  int32_t bad[4] = {0, 1, 1, 2}, good[4] = {0, 1, 3, 2};
  for (int r = 0; r < 3 && net; r++) {
    for (int k = 0; k < 2; k++) {
      hs_coll_t c;
      hs_coll_init(&c);
      c.op = HS_COLL_ALLREDUCE;
      c.devices = k == 0 ? bad : good;
      c.n = 4;
      c.bytes = 1e6;
      c.done = on_done;
      hs_error_t err;
      hs_error_init(&err);
      hs_status_t st = hs_coll_start(net, &c, &err);
      if (k == 0) {
        CHECK_MSG(st == HS_EINVAL && strstr(err.msg, "appears twice"), "round %d: %s (%s)", r,
                  hs_status_name(st), err.msg);
      } else {
        CHECK_MSG(st == HS_OK, "round %d: %s", r, err.msg);
        CHECK_EQ_INT(hs_engine_run(&eng, HS_TIME_MAX), HS_OK);
        CHECK(c.t_end > c.t_start);
      }
    }
  }
  CHECK(net && hs__colls_memo_hits(net->colls) > 0);
  hs_net_free(net);
  hs_engine_destroy(&eng);
  hs_topology_free(topo);
  hs_cluster_destroy(&cl);
}

int main(void)
{
  HS_RUN(test_dgx_h100);
  HS_RUN(test_two_sites);
  HS_RUN(test_set_path_drops);
  HS_RUN(test_invalid_every_time);
  HS_TEST_END();
}
