/*
 * test_clusters_topology.c - hs_topology_path against paths and latencies
 * computed by hand from tests/data/clusters/topo-3sites.json, against
 * hs_topology_path_graph (igraph Dijkstra on the full graph) on every pair of
 * that cluster and random pairs of bigger ones, and against a brute-force
 * Floyd-Warshall over sites for route latency and bottleneck.
 */
#include "hs_clusters.h"
#include "hs_test.h"

#include <stdint.h>

static hs_cluster_t load(const char *spec)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_cluster_load(spec, &c, &err);
  CHECK_MSG(st == HS_OK, "%s: %s", spec, err.msg);
  return c;
}

static hs_topology_t *topo(const hs_cluster_t *c)
{
  hs_topology_t *t = NULL;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_topology_new(c, &t, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  return t;
}

static void check_path(const hs_topology_t *t, int32_t a, int32_t b, const int32_t *links, int n,
                       double latency_us, double bottleneck_GBps)
{
  hs_path_t p;
  CHECK_EQ_INT(hs_topology_path(t, a, b, &p), HS_OK);
  CHECK_EQ_INT(p.n, n);
  for (int i = 0; i < n && i < p.n; i++)
    CHECK_MSG(p.links[i] == links[i], "path %d->%d hop %d: link %d, expected %d", a, b, i, p.links[i],
              links[i]);
  CHECK_REL(p.latency_ns, latency_us * 1e3, 1e-12);
  CHECK_REL(p.bottleneck_GBps, bottleneck_GBps, 1e-12);
}

/* Link layout of topo-3sites: 11 devices, 5 nodes, fabrics in a and c,
 * 3 inter-site links. GPU_UP(d) = 2d, NIC_UP(n) = 22 + 2n, FABRIC(a) = 32,
 * FABRIC(c) = 33, XSITE(x, dir) = 34 + 2x + dir. */
static void test_hand_paths(void)
{
  hs_cluster_t c = load(hs_test_data("clusters/topo-3sites.json"));
  hs_topology_t *t = topo(&c);
  if (!t)
    goto done;
  CHECK_EQ_INT(c.n_devices, 11);
  CHECK_EQ_INT(c.n_nodes, 5);
  CHECK_EQ_INT(hs_topology_n_links(t), 40);
  CHECK_EQ_INT(hs_topology_link_gpu_up(t, 4), 8);
  CHECK_EQ_INT(hs_topology_link_gpu_down(t, 4), 9);
  CHECK_EQ_INT(hs_topology_link_nic_up(t, 2), 26);
  CHECK_EQ_INT(hs_topology_link_nic_down(t, 2), 27);
  CHECK_EQ_INT(hs_topology_link_fabric(t, 0), 32);
  CHECK_EQ_INT(hs_topology_link_fabric(t, 1), -1);
  CHECK_EQ_INT(hs_topology_link_fabric(t, 2), 33);
  CHECK_EQ_INT(hs_topology_link_xsite(t, 1, 0), 36);
  CHECK_EQ_INT(hs_topology_link_xsite(t, 2, 1), 39);
  CHECK_EQ_INT(hs_topology_link_xsite(t, 3, 0), -1);
  CHECK_EQ_INT(hs_topology_link_gpu_up(t, 11), -1);
  CHECK_EQ_INT(hs_topology_route_hops(t, 0, 1), 2);
  CHECK_EQ_INT(hs_topology_route_hops(t, 0, 2), 1);
  CHECK_EQ_INT(hs_topology_route_hops(t, 1, 1), 0);

  const hs_link_t *L = hs_topology_links(t);
  CHECK_EQ_INT(L[8].kind, HS_LINK_GPU_UP);
  CHECK_EQ_INT(L[8].owner, 4);
  CHECK_EQ_INT(L[27].kind, HS_LINK_NIC_DOWN);
  CHECK_EQ_INT(L[27].owner, 2);
  CHECK_EQ_INT(L[33].kind, HS_LINK_FABRIC);
  CHECK_EQ_INT(L[33].owner, 2);
  CHECK_REL(L[33].GBps, 40, 0);
  CHECK_EQ_INT(L[37].kind, HS_LINK_XSITE);
  CHECK_EQ_INT(L[37].owner, 1);
  CHECK_EQ_INT(L[37].dir, 1);
  CHECK(strcmp(L[37].label, "c->a") == 0);

  /* Same device. */
  hs_path_t p;
  CHECK_EQ_INT(hs_topology_path(t, 3, 3, &p), HS_OK);
  CHECK_EQ_INT(p.n, 0);
  CHECK(isinf(p.bottleneck_GBps) && p.bottleneck_GBps > 0);
  CHECK(p.latency_ns == 0.0);
  /* Same node: the file's intra latency. */
  check_path(t, 0, 1, (int32_t[]){0, 3}, 2, 1.0, 300);
  /* Same site a, two nodes: intra 1 + nic 4 + fabric 2; bottleneck the NIC. */
  check_path(t, 0, 2, (int32_t[]){0, 22, 32, 25, 5}, 5, 7.0, 100);
  /* Site b, V100 node to T4 node, non-blocking fabric (1 us):
   * 3/2 + (6+1)/2 + (8+1)/2 + 0.5/2 = 9.75 us; bottleneck T4's NIC 5. */
  check_path(t, 4, 8, (int32_t[]){8, 26, 29, 17}, 4, 9.75, 5);
  /* a -> b via c (100 + 300 < 1000), no fabric in transit through c:
   * 1/2 + (4+2)/2 + 100 + 300 + (6+1)/2 + 3/2 = 408.5 us; bottleneck c->b 2. */
  check_path(t, 0, 4, (int32_t[]){0, 22, 32, 36, 38, 27, 9}, 7, 408.5, 2);
  /* c -> a, direct: 1/2 + (2+4)/2 + 100 + (4+2)/2 + 1/2 = 107 us; both
   * fabrics crossed; bottleneck the a-c link 20. */
  check_path(t, 9, 0, (int32_t[]){18, 30, 33, 37, 32, 23, 1}, 7, 107, 20);
  /* b (T4) -> a (node 1), via c: 0.5/2 + (8+1)/2 + 300 + 100 + (4+2)/2 + 1/2. */
  check_path(t, 8, 2, (int32_t[]){16, 28, 39, 37, 32, 25, 5}, 7, 408.25, 2);

  /* Bad arguments. */
  CHECK_EQ_INT(hs_topology_path(t, -1, 0, &p), HS_EINVAL);
  CHECK_EQ_INT(hs_topology_path(t, 0, 11, &p), HS_EINVAL);
  CHECK_EQ_INT(hs_topology_path_graph(t, 0, 11, &p), HS_EINVAL);
done:
  hs_topology_free(t);
  hs_cluster_destroy(&c);
}

static bool same_path(const hs_path_t *x, const hs_path_t *y)
{
  if (x->n != y->n)
    return false;
  for (int i = 0; i < x->n; i++)
    if (x->links[i] != y->links[i])
      return false;
  return x->latency_ns == y->latency_ns && x->bottleneck_GBps == y->bottleneck_GBps;
}

/* Independent truth for any pair: the file's latencies by the documented
 * split, with the site route from Floyd-Warshall over the cluster's links. */
typedef struct fw {
  size_t S;
  double *dist;  /* latency us (+ 1e-6 per hop, as the topology breaks ties) */
  double *bw;    /* bottleneck over the route's links */
  int *hops;
} fw_t;

static fw_t fw_new(const hs_cluster_t *c)
{
  fw_t f;
  size_t S = c->n_sites;
  f.S = S;
  f.dist = calloc(S * S, sizeof(double));
  f.bw = calloc(S * S, sizeof(double));
  f.hops = calloc(S * S, sizeof(int));
  for (size_t i = 0; i < S * S; i++) {
    f.dist[i] = i / S == i % S ? 0 : INFINITY;
    f.bw[i] = INFINITY;
  }
  for (size_t k = 0; k < c->n_xlinks; k++) {
    const hs_xlink_t *x = &c->xlinks[k];
    size_t a = (size_t)x->site_a, b = (size_t)x->site_b;
    f.dist[a * S + b] = f.dist[b * S + a] = x->latency_us + 1e-6;
    f.bw[a * S + b] = f.bw[b * S + a] = x->GBps;
    f.hops[a * S + b] = f.hops[b * S + a] = 1;
  }
  for (size_t k = 0; k < S; k++)
    for (size_t i = 0; i < S; i++)
      for (size_t j = 0; j < S; j++)
        if (f.dist[i * S + k] + f.dist[k * S + j] < f.dist[i * S + j]) {
          f.dist[i * S + j] = f.dist[i * S + k] + f.dist[k * S + j];
          f.bw[i * S + j] = fmin(f.bw[i * S + k], f.bw[k * S + j]);
          f.hops[i * S + j] = f.hops[i * S + k] + f.hops[k * S + j];
        }
  return f;
}

static void fw_free(fw_t *f)
{
  free(f->dist);
  free(f->bw);
  free(f->hops);
}

static double rail_GBps(const hs_node_t *n)
{
  int r = n->nic_rails < n->n_devices ? n->nic_rails : n->n_devices;
  return r > 1 ? n->nic_GBps / r : INFINITY;
}

static void check_truth(const hs_cluster_t *c, const fw_t *f, int32_t a, int32_t b, const hs_path_t *p)
{
  const hs_device_t *da = &c->devices[a], *db = &c->devices[b];
  const hs_node_t *na = &c->nodes[da->node], *nb = &c->nodes[db->node];
  const hs_site_t *sa = &c->sites[da->site], *sb = &c->sites[db->site];
  double lat, bw;
  if (a == b) {
    lat = 0;
    bw = INFINITY;
  } else if (da->node == db->node) {
    lat = na->intra_latency_us;
    bw = na->intra_GBps;
  } else {
    lat = (na->intra_latency_us + na->nic_latency_us + sa->fabric_latency_us) / 2 +
          (nb->intra_latency_us + nb->nic_latency_us + sb->fabric_latency_us) / 2;
    bw = fmin(fmin(na->intra_GBps, nb->intra_GBps), fmin(na->nic_GBps, nb->nic_GBps));
    /* a railed node's GPU leaves and enters it over its own NIC: the
     * node's NIC bandwidth over min(rails, GPUs) */
    bw = fmin(bw, fmin(rail_GBps(na), rail_GBps(nb)));
    if (sa->fabric_GBps > 0)
      bw = fmin(bw, sa->fabric_GBps);
    if (da->site != db->site) {
      size_t k = (size_t)da->site * f->S + (size_t)db->site;
      lat += f->dist[k] - 1e-6 * f->hops[k];
      bw = fmin(bw, f->bw[k]);
      if (sb->fabric_GBps > 0)
        bw = fmin(bw, sb->fabric_GBps);
    }
  }
  CHECK_MSG(fabs(p->latency_ns - lat * 1e3) <= 1e-6 * fmax(1.0, lat * 1e3), "%d->%d latency %.9g ns, expected %.9g",
            a, b, p->latency_ns, lat * 1e3);
  CHECK_MSG(p->bottleneck_GBps == bw, "%d->%d bottleneck %g, expected %g", a, b, p->bottleneck_GBps, bw);
}

static void compare_pairs(const char *spec, int n_random)
{
  hs_cluster_t c = load(spec);
  hs_topology_t *t = topo(&c);
  fw_t f = fw_new(&c);
  int mismatches = 0;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  size_t D = c.n_devices;
  size_t n_pairs = n_random > 0 ? (size_t)n_random : D * D;
  for (size_t i = 0; t && i < n_pairs; i++) {
    int32_t a, b;
    if (n_random > 0) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      a = (int32_t)((rng >> 33) % D);
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      b = (int32_t)((rng >> 33) % D);
    } else {
      a = (int32_t)(i / D);
      b = (int32_t)(i % D);
    }
    hs_path_t ps, pg;
    CHECK_EQ_INT(hs_topology_path(t, a, b, &ps), HS_OK);
    CHECK_EQ_INT(hs_topology_path_graph(t, a, b, &pg), HS_OK);
    if (!same_path(&ps, &pg) && mismatches++ < 5)
      CHECK_MSG(false, "%s: %d->%d structural (%d links, %g ns) != graph (%d links, %g ns)", spec, a, b,
                ps.n, ps.latency_ns, pg.n, pg.latency_ns);
    check_truth(&c, &f, a, b, &ps);
    /* the device's node: the cluster's own, and the owner of the NIC its
     * path to another node leaves through (what collectives group by) */
    CHECK_EQ_INT(hs_topology_device_node(t, a), c.devices[a].node);
    const hs_link_t *L = hs_topology_links(t);
    for (int32_t h = 0; h < ps.n; h++)
      if (L[ps.links[h]].kind == HS_LINK_NIC_UP) {
        CHECK_EQ_INT(L[ps.links[h]].owner, hs_topology_device_node(t, a));
        break;
      }
  }
  CHECK_EQ_INT(hs_topology_device_node(t, -1), -1);
  CHECK_EQ_INT(hs_topology_device_node(t, (int32_t)D), -1);
  CHECK_EQ_INT(hs_topology_device_node(NULL, 0), -1);
  CHECK_MSG(mismatches == 0, "%s: %d mismatching pairs", spec, mismatches);
  fw_free(&f);
  hs_topology_free(t);
  hs_cluster_destroy(&c);
}

static void test_all_pairs_small(void) { compare_pairs(hs_test_data("clusters/topo-3sites.json"), 0); }

static void test_all_pairs_catalog(void)
{
  compare_pairs("a100-v100-two-sites", 0);
  compare_pairs("autohet-a100-h800-h20", 0);
  compare_pairs("mixed-a100-v100-t4", 0);
}

/* Six sites in a ring with chords; latencies are distinct powers of two
 * (x 10 us), so every route is unique and all its subsets sum differently. */
static const char *big_json =
    "{\"name\": \"big\", \"sites\": ["
    "{\"name\": \"s0\", \"nodes\": [{\"count\": 6, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8},"
    "  {\"count\": 2, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 4}], \"fabric\": {\"GBps\": 400}},"
    "{\"name\": \"s1\", \"nodes\": [{\"count\": 5, \"gpu\": \"V100-SXM2-16GB\", \"gpus_per_node\": 8,"
    "  \"nic\": {\"GBps\": 12.5, \"latency_us\": 7}}]},"
    "{\"name\": \"s2\", \"nodes\": [{\"count\": 3, \"gpu\": \"H100-SXM5-80GB\", \"gpus_per_node\": 8}],"
    "  \"fabric\": {\"GBps\": 60, \"latency_us\": 3}},"
    "{\"name\": \"s3\", \"nodes\": [{\"count\": 4, \"gpu\": \"L4-24GB\", \"gpus_per_node\": 2}]},"
    "{\"name\": \"s4\", \"nodes\": [{\"count\": 2, \"gpu\": \"A10-24GB\", \"gpus_per_node\": 1}]},"
    "{\"name\": \"s5\", \"nodes\": [{\"count\": 7, \"gpu\": \"MI300X-192GB\", \"gpus_per_node\": 8}],"
    "  \"fabric\": {\"GBps\": 1000, \"latency_us\": 1}}],"
    "\"links\": ["
    "{\"between\": [\"s0\", \"s1\"], \"GBps\": 1, \"latency_us\": 10},"
    "{\"between\": [\"s1\", \"s2\"], \"GBps\": 2, \"latency_us\": 20},"
    "{\"between\": [\"s2\", \"s3\"], \"GBps\": 3, \"latency_us\": 40},"
    "{\"between\": [\"s3\", \"s4\"], \"GBps\": 4, \"latency_us\": 80},"
    "{\"between\": [\"s4\", \"s5\"], \"GBps\": 5, \"latency_us\": 160},"
    "{\"between\": [\"s5\", \"s0\"], \"GBps\": 6, \"latency_us\": 320},"
    "{\"between\": [\"s0\", \"s3\"], \"GBps\": 7, \"latency_us\": 640},"
    "{\"between\": [\"s1\", \"s4\"], \"GBps\": 8, \"latency_us\": 1280},"
    "{\"between\": [\"s2\", \"s5\"], \"GBps\": 9, \"latency_us\": 2560}]}";

/* Writes `json` to a fresh temporary file named in path (a mkstemp
 * template); false when it cannot. */
static bool write_tmp(char *path, const char *json)
{
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0)
    return false;
  FILE *f = fdopen(fd, "w");
  fputs(json, f);
  fclose(f);
  return true;
}

static void test_random_pairs_big(void)
{
  char path[] = "/tmp/hs_topo_bigXXXXXX";
  if (!write_tmp(path, big_json))
    return;
  compare_pairs(path, 20000);
  remove(path);
  compare_pairs("dgx-h100-128nodes", 5000);
  compare_pairs("hap-v100-p100", 0);
}

/* A cluster assembled in code with an island: hs_topology_new names it. */
static void test_unreachable(void)
{
  hs_cluster_t c = load(hs_test_data("clusters/topo-3sites.json"));
  hs_topology_t *t = NULL;
  hs_error_t err;
  hs_error_init(&err);
  size_t saved = c.n_xlinks;
  c.n_xlinks = 1; /* only a-b remains: c is an island */
  CHECK(hs_topology_new(&c, &t, &err) == HS_EINVAL);
  CHECK(t == NULL);
  CHECK_CONTAINS(err.msg, "site \"c\" is unreachable");
  c.n_xlinks = saved;
  hs_topology_free(t);
  hs_topology_free(NULL);
  hs_cluster_destroy(&c);
}

/* The latency split the simulator relies on, on a catalog cluster (DGX H100:
 * its ports name the entries NVLink4-NVSwitch 357.5 GB/s 2.6 us, fitted on
 * an 8x H100 ring nccl-tests table, and NDR-IB-8x400 404.9 GB/s 30.4 us over
 * 8 rails, fitted on a 2 x 8 H100 ring table, of clusters/links.json). */
static void test_dgx_latency_rules(void)
{
  hs_cluster_t c = load("dgx-h100-4nodes");
  hs_topology_t *t = topo(&c);
  hs_path_t p;
  if (t) {
    CHECK_EQ_INT(hs_topology_path(t, 0, 7, &p), HS_OK);
    CHECK_REL(p.latency_ns, 2600.0, 1e-12); /* intra 2.6 us */
    CHECK_REL(p.bottleneck_GBps, 357.5, 0);
    CHECK_EQ_INT(hs_topology_path(t, 0, 31, &p), HS_OK);
    CHECK_REL(p.latency_ns, (2.6 + 30.4 + 2.0) * 1e3, 1e-12); /* intra + nic + fabric */
    CHECK_REL(p.bottleneck_GBps, 404.9 / 8, 0); /* the sender's own NIC, one of 8 */
    const hs_link_t *L = hs_topology_links(t);
    CHECK_EQ_INT(L[hs_topology_link_nic_up(t, 3)].rails, 8);  /* the catalog entry's NICs per node */
    CHECK_EQ_INT(L[hs_topology_link_nic_down(t, 0)].rails, 8);
    CHECK_EQ_INT(L[hs_topology_link_gpu_up(t, 0)].rails, 0);
    CHECK_EQ_INT(p.n, 6); /* GPU, rail, NIC; non-blocking fabric: no FABRIC link */
    CHECK_EQ_INT(p.links[1], hs_topology_link_rail_up(t, 0));
    CHECK_EQ_INT(p.links[4], hs_topology_link_rail_down(t, 31));
    CHECK_EQ_INT(hs_topology_n_links(t), 2 * 32 + 2 * 4 + 2 * 8 * 4);
  }
  hs_topology_free(t);
  hs_cluster_destroy(&c);
}

/* Rail links: R = min(rails, GPUs) per node, nic / R each, GPU j on rail
 * j R / g; ids after the XSITE links, node by node; the graph's path takes
 * the same rails. Node 0: 8 GPUs on 4 NICs (two GPUs per rail); node 1: 4
 * GPUs on 8 NICs (R = 4, two NICs per GPU); node 2: one NIC (no rails). */
static const char *rails_json =
    "{\"name\": \"rails\", \"sites\": [{\"name\": \"s\", \"nodes\": ["
    "{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8,"
    "  \"nic\": {\"GBps\": 100, \"latency_us\": 4, \"rails\": 4}},"
    "{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 4,"
    "  \"nic\": {\"GBps\": 200, \"latency_us\": 4, \"rails\": 8}},"
    "{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 2,"
    "  \"nic\": {\"GBps\": 25, \"latency_us\": 4}}]}]}";

static void test_rails(void)
{
  char path[] = "/tmp/hs_topo_railsXXXXXX";
  if (!write_tmp(path, rails_json))
    return;
  hs_cluster_t c = load(path);
  hs_topology_t *t = topo(&c);
  if (t) {
    /* 14 devices, 3 nodes, no fabric, no xlinks: rails from 2*14 + 2*3 = 34 */
    CHECK_EQ_INT(hs_topology_n_links(t), 34 + 2 * 4 + 2 * 4);
    int32_t want[14] = {34, 34, 36, 36, 38, 38, 40, 40, 42, 44, 46, 48, -1, -1};
    for (int32_t d = 0; d < 14; d++) {
      CHECK_MSG(hs_topology_link_rail_up(t, d) == want[d], "device %d: rail %d, expected %d", d,
                hs_topology_link_rail_up(t, d), want[d]);
      CHECK_EQ_INT(hs_topology_link_rail_down(t, d), want[d] < 0 ? -1 : want[d] + 1);
    }
    const hs_link_t *L = hs_topology_links(t);
    CHECK_EQ_INT(L[36].kind, HS_LINK_RAIL_UP);
    CHECK_EQ_INT(L[37].kind, HS_LINK_RAIL_DOWN);
    CHECK_EQ_INT(L[36].owner, 0);
    CHECK_EQ_INT(L[36].rails, 4);
    CHECK_REL(L[36].GBps, 25.0, 0);  /* 100 / 4 */
    CHECK_REL(L[44].GBps, 50.0, 0);  /* 200 / min(8, 4) */
    CHECK(strcmp(L[46].label, "n1.rail2.up") == 0);
    CHECK(strcmp(hs_link_kind_name(L[47].kind), "rail_down") == 0);
    /* node 0 GPU 3 (rail 1) -> node 1 GPU 3 (device 11, rail 3) */
    check_path(t, 3, 11, (int32_t[]){6, 36, 28, 31, 49, 23}, 6, 1.0 + 4.0 + 2.0, 25.0); /* intra 1, nic 4, fabric 2 (defaults) */
    /* node 1 -> node 2 (no rails): the NIC of node 2 binds */
    check_path(t, 8, 12, (int32_t[]){16, 42, 30, 33, 25}, 5, 1.0 + 4.0 + 2.0, 25.0);
    /* inside a railed node: no rail */
    check_path(t, 0, 1, (int32_t[]){0, 3}, 2, 1.0, 300.0);
    CHECK_EQ_INT(hs_topology_link_rail_up(t, 14), -1);
  }
  hs_topology_free(t);
  hs_cluster_destroy(&c);
  compare_pairs(path, 0);
  remove(path);
}

int main(void)
{
  HS_RUN(test_hand_paths);
  HS_RUN(test_all_pairs_small);
  HS_RUN(test_all_pairs_catalog);
  HS_RUN(test_random_pairs_big);
  HS_RUN(test_unreachable);
  HS_RUN(test_dgx_latency_rules);
  HS_RUN(test_rails);
  HS_TEST_END();
}
