/*
 * random_cluster.h - the seeded random heterogeneous clusters of the
 * property tests (test_search_subsets, test_search_compare_random): 2-4 GPU
 * types, 1-3 sites joined by a full mesh of 1-400 Gb/s links, two to four
 * node groups of 1-2 nodes with 1, 2 or 4 GPUs each. The generator is a
 * 64-bit LCG seeded per case (random_seed), so a failure names a case that
 * reproduces on any machine.
 */
#ifndef HS_RANDOM_CLUSTER_H
#define HS_RANDOM_CLUSTER_H

#include "hs_common.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const gpus[] = {"A100-SXM4-40GB", "V100-SXM2-16GB", "H100-SXM5-80GB",
                                   "L4-24GB", "T4-16GB", "A100-SXM4-80GB"};

static uint64_t rng_state;

/* Case i's stream. */
static void random_seed(int i)
{
  rng_state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(i + 1) * 0xD1B54A32D192ED03ULL;
}

static uint32_t rnd(uint32_t n) /* uniform in [0, n) */
{
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)((rng_state >> 33) % n);
}

typedef struct group {
  int site, gpu, nodes, gpn;
} group_t;

typedef struct world {
  int n_sites;
  double link_GBps[3][3];
  group_t g[4];
  int n_groups;
} world_t;

/* Cluster JSON of the first n groups of w: the sites they use, joined by a
 * full mesh of links. */
static void cluster_json(const world_t *w, int n, char *buf, size_t cap)
{
  bool used[3] = {false, false, false};
  for (int i = 0; i < n; i++)
    used[w->g[i].site] = true;
  size_t len = (size_t)snprintf(buf, cap, "{\"name\": \"random\", \"sites\": [");
  int ns = 0;
  for (int s = 0; s < w->n_sites; s++) {
    if (!used[s])
      continue;
    len += (size_t)snprintf(buf + len, cap - len, "%s{\"name\": \"s%d\", \"nodes\": [", ns++ ? ", " : "", s);
    int k = 0;
    for (int i = 0; i < n; i++) {
      if (w->g[i].site != s)
        continue;
      len += (size_t)snprintf(buf + len, cap - len,
                              "%s{\"count\": %d, \"gpu\": \"%s\", \"gpus_per_node\": %d, "
                              "\"intra_node\": {\"GBps\": 100}, \"nic\": {\"GBps\": 25}}",
                              k++ ? ", " : "", w->g[i].nodes, gpus[w->g[i].gpu], w->g[i].gpn);
    }
    len += (size_t)snprintf(buf + len, cap - len, "]}");
  }
  len += (size_t)snprintf(buf + len, cap - len, "], \"links\": [");
  int k = 0;
  for (int a = 0; a < w->n_sites; a++)
    for (int b = a + 1; b < w->n_sites; b++)
      if (used[a] && used[b])
        len += (size_t)snprintf(buf + len, cap - len,
                                "%s{\"between\": [\"s%d\", \"s%d\"], \"GBps\": %.6g, \"latency_us\": 1000}",
                                k++ ? ", " : "", a, b, w->link_GBps[a][b]);
  snprintf(buf + len, cap - len, "]}");
}

static void random_world(world_t *w)
{
  memset(w, 0, sizeof *w);
  w->n_sites = 1 + (int)rnd(3);
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) /* 1-400 Gb/s */
      w->link_GBps[a][b] = 0.125 * (1 + rnd(400));
  int types = 2 + (int)rnd(3);      /* 2-4 GPU types in play */
  int first = (int)rnd(HS_ARRAY_LEN(gpus));
  w->n_groups = 2 + (int)rnd(3);    /* the last one is the added group */
  for (int i = 0; i < w->n_groups; i++) {
    w->g[i].site = (int)rnd((uint32_t)w->n_sites);
    w->g[i].gpu = (first + (int)rnd((uint32_t)types)) % (int)HS_ARRAY_LEN(gpus);
    w->g[i].nodes = 1 + (int)rnd(2);
    w->g[i].gpn = 1 << rnd(3);       /* 1, 2 or 4 GPUs per node */
  }
}

#endif
