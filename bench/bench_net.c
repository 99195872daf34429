/*
 * bench_net.c - throughput of the flow-level network: flow start + finish
 * pairs per second of wall time, each flow restarted with a new size from
 * its own completion callback (so completions are staggered and every one
 * triggers a rate update).
 *
 *   (a) many independent small components: `nodes` nodes of 8 GPUs, each
 *       running a TP-ring coupled flow (16 GPU ports) that shares two ports
 *       with a p2p flow: components of 2 flows / 16 links;
 *   (a1) the same nodes with 8 separate neighbour flows (1-flow components);
 *   (b) one big component: k flows, each on its own port and all through
 *       one shared link: every update re-solves all k flows.
 *
 * Usage: bench_net [flows per case, default 2000000] [a|a1|b: one family only]
 */
#include "hs_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench bench_t;

typedef struct bflow {
  hs_flow_t f;
  hs_flow_hop_t hops[16];
  uint64_t rng;
  bench_t *b;
} bflow_t;

struct bench {
  long target, started, finished;
};

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double next_bytes(bflow_t *bf)
{
  bf->rng = bf->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(1 + (bf->rng >> 33) % 1000) * 1e5; /* 0.1 - 100 MB */
}

static void restart(hs_net_t *net, hs_flow_t *f)
{
  bflow_t *bf = f->ctx;
  bench_t *b = bf->b;
  b->finished++;
  if (b->started >= b->target)
    return;
  f->bytes = next_bytes(bf);
  b->started++;
  if (hs_net_flow_start(net, f) != HS_OK) {
    fprintf(stderr, "flow start failed\n");
    exit(1);
  }
}

static void bflow_start(hs_net_t *net, bflow_t *bf, bench_t *b, int n_hops, uint64_t seed)
{
  hs_flow_init(&bf->f);
  bf->b = b;
  bf->rng = seed;
  bf->f.hops = bf->hops;
  bf->f.n_hops = n_hops;
  bf->f.done = restart;
  bf->f.ctx = bf;
  bf->f.bytes = next_bytes(bf);
  b->started++;
  if (hs_net_flow_start(net, &bf->f) != HS_OK) {
    fprintf(stderr, "flow start failed\n");
    exit(1);
  }
}

typedef struct result {
  double flows_per_s;
  double updates_per_flow;
  double sim_s;
} result_t;

static result_t run(hs_engine_t *eng, hs_net_t *net, bench_t *b)
{
  double t0 = now_s();
  if (hs_engine_run(eng, HS_TIME_MAX) != HS_OK) {
    fprintf(stderr, "run failed\n");
    exit(1);
  }
  double dt = now_s() - t0;
  result_t r = {(double)b->finished / dt, (double)hs_net_rate_updates(net) / (double)b->finished,
                hs_time_to_s(eng->now)};
  return r;
}

static hs_link_t port(double GBps)
{
  hs_link_t l;
  memset(&l, 0, sizeof l);
  l.GBps = GBps;
  return l;
}

/* (a): nodes x 8 GPUs; links 2d (up), 2d+1 (down). */
static result_t bench_small(int nodes, long target, bool separate)
{
  int n_links = nodes * 16;
  hs_link_t *links = calloc((size_t)n_links, sizeof *links);
  for (int i = 0; i < n_links; i++)
    links[i] = port(300);
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = NULL;
  hs_net_new_links(&eng, links, (size_t)n_links, &net);
  int per_node = separate ? 8 : 2;
  bflow_t *fl = calloc((size_t)nodes * (size_t)per_node, sizeof *fl);
  bench_t b = {target, 0, 0};
  hs_engine_reserve(&eng, (size_t)nodes * (size_t)per_node + 16);
  for (int n = 0; n < nodes; n++) {
    int base = n * 8;
    if (separate) {
      for (int i = 0; i < 8; i++) {
        bflow_t *bf = &fl[n * 8 + i];
        bf->hops[0] = (hs_flow_hop_t){2 * (base + i), 1};
        bf->hops[1] = (hs_flow_hop_t){2 * (base + (i + 1) % 8) + 1, 1};
        bflow_start(net, bf, &b, 2, (uint64_t)(n * 8 + i + 1));
      }
    } else {
      bflow_t *ring = &fl[2 * n], *p2p = &fl[2 * n + 1];
      for (int i = 0; i < 8; i++) {
        ring->hops[2 * i] = (hs_flow_hop_t){2 * (base + i), 1};
        ring->hops[2 * i + 1] = (hs_flow_hop_t){2 * (base + i) + 1, 1};
      }
      p2p->hops[0] = (hs_flow_hop_t){2 * (base + 0), 1};     /* up of GPU 0 */
      p2p->hops[1] = (hs_flow_hop_t){2 * (base + 4) + 1, 1}; /* down of GPU 4 */
      bflow_start(net, ring, &b, 16, (uint64_t)(2 * n + 1));
      bflow_start(net, p2p, &b, 2, (uint64_t)(2 * n + 2));
    }
  }
  result_t r = run(&eng, net, &b);
  hs_net_free(net);
  hs_engine_destroy(&eng);
  free(fl);
  free(links);
  return r;
}

/* (b): k flows, flow i on port i and the shared link k. */
static result_t bench_big(int k, long target)
{
  hs_link_t *links = calloc((size_t)k + 1, sizeof *links);
  for (int i = 0; i < k; i++)
    links[i] = port(100);
  links[k] = port(50);
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_net_t *net = NULL;
  hs_net_new_links(&eng, links, (size_t)k + 1, &net);
  bflow_t *fl = calloc((size_t)k, sizeof *fl);
  bench_t b = {target, 0, 0};
  for (int i = 0; i < k; i++) {
    fl[i].hops[0] = (hs_flow_hop_t){i, 1};
    fl[i].hops[1] = (hs_flow_hop_t){k, 1};
    bflow_start(net, &fl[i], &b, 2, (uint64_t)(i + 1));
  }
  result_t r = run(&eng, net, &b);
  hs_net_free(net);
  hs_engine_destroy(&eng);
  free(fl);
  free(links);
  return r;
}

int main(int argc, char **argv)
{
  long target = argc > 1 ? atol(argv[1]) : 2000000;
  const char *only = argc > 2 ? argv[2] : "";
  bool all = !*only;
  printf("# flows = start + finish pairs; each finish triggers one rate update\n");
  printf("%-44s %14s %12s %10s\n", "case", "flows/s", "ns/flow", "upd/flow");
  double ref = 0;
  int node_counts[] = {16, 128, 1024};
  for (int i = 0; i < 3 && (all || !strcmp(only, "a")); i++) {
    result_t r = bench_small(node_counts[i], target, false);
    char name[64];
    snprintf(name, sizeof name, "(a) %d nodes: TP ring + p2p (2 flows/16 links)", node_counts[i]);
    printf("%-44s %14.0f %12.1f %10.2f\n", name, r.flows_per_s, 1e9 / r.flows_per_s,
           r.updates_per_flow);
    if (node_counts[i] == 1024)
      ref = r.flows_per_s;
  }
  for (int i = 0; i < 3 && (all || !strcmp(only, "a1")); i++) {
    result_t r = bench_small(node_counts[i], target, true);
    char name[64];
    snprintf(name, sizeof name, "(a1) %d nodes: 8 separate flows", node_counts[i]);
    printf("%-44s %14.0f %12.1f %10.2f\n", name, r.flows_per_s, 1e9 / r.flows_per_s,
           r.updates_per_flow);
  }
  int ks[] = {16, 64, 256, 1024, 4096};
  for (int i = 0; i < 5 && (all || !strcmp(only, "b")); i++) {
    long t = ks[i] >= 1024 ? target / 10 : target;
    result_t r = bench_big(ks[i], t);
    char name[64];
    snprintf(name, sizeof name, "(b) one component of %d flows", ks[i]);
    if (ref > 0)
      printf("%-44s %14.0f %12.1f %10.2f   (a)/(b) = %.1f\n", name, r.flows_per_s,
             1e9 / r.flows_per_s, r.updates_per_flow, ref / r.flows_per_s);
    else
      printf("%-44s %14.0f %12.1f %10.2f\n", name, r.flows_per_s, 1e9 / r.flows_per_s,
             r.updates_per_flow);
  }
  return 0;
}
