/*
 * topology.c - the network of a cluster: one hs_link_t per direction of
 * every port, an igraph graph of the same network, the site-to-site routes,
 * and path queries between GPUs.
 *
 * Link ids follow a fixed layout (hs_clusters.h): GPU ports first (2 per
 * device), then NIC ports (2 per node), then one FABRIC link per site whose
 * fabric has a finite GBps, then two XSITE links per inter-site link, then
 * two RAIL links per NIC rail of every railed node.
 *
 * Rails. A node whose NIC port is r NICs (nic_rails > 1: DGX, one NIC per
 * GPU behind its PCIe switch) gets R = min(r, g) rail links per direction,
 * each nic_GBps / R, latency 0; its GPU of local rank j uses rail j R / g.
 * A path leaving the node crosses the sender's rail and the node's NIC
 * link (the sum of the rails), so one GPU's send to another node gets one
 * NIC's bandwidth, as a point-to-point send in NCCL does (one NIC per
 * peer connection), while all GPUs sending together still share the
 * node's NIC. Collectives whose channels leave a node through several
 * NICs (node_ring, node_tree) spread a hop over the rails of the group's
 * GPUs instead (sim/collective.c hs__builder_rails; docs/network.md "Rail
 * links").
 *
 * Latency split. Every latency is charged half on each side of the hop it
 * describes, so that sums come out as the cluster file states them:
 *   GPU_UP(d) = GPU_DOWN(d) = intra_latency_us(node of d) / 2
 *   NIC_UP(n) = NIC_DOWN(n) = (nic_latency_us(n) + fabric_latency_us(site)) / 2
 *   FABRIC(s) = 0 (its latency rides on the NIC ports, finite or not)
 *   XSITE     = the link's latency_us
 * Hence: same node = intra; same site = intra + nic + fabric (for two nodes of
 * one group); across sites = (intra + nic + fabric)_a / 2 + sum of the route's
 * link latencies + (intra + nic + fabric)_b / 2.
 *
 * Graph. Vertices: GPUs [0, D), node switches [D, D+N), and three per site:
 * fabric-in, fabric-out and gateway. Directed edges, one per hs_link_t:
 * GPU->switch (GPU_UP), switch->GPU (GPU_DOWN), switch->fabric-in (NIC_UP),
 * fabric-out->switch (NIC_DOWN), fabric-in->fabric-out (FABRIC, or an
 * internal edge with no link when non-blocking), gateway->gateway (XSITE);
 * plus internal edges fabric-out->gateway and gateway->fabric-in. A railed
 * node instead has, per GPU d, an egress and an ingress vertex (GPU_UP
 * d->egress, egress->switch internal, switch->ingress internal, GPU_DOWN
 * ingress->d) and per rail an up and a down vertex (RAIL_UP egress->up,
 * NIC_UP up->fabric-in, NIC_DOWN fabric-out->down, RAIL_DOWN down->ingress
 * of each GPU on that rail): its NIC link is one edge per rail, and only a
 * GPU's own rail leads out of or into it. Traffic
 * passing through a site on a multi-hop route stays on gateways and does not
 * cross that site's fabric, exactly as hs_topology_path builds it. Weights are
 * latency in ns plus HOP_EPS_NS per edge, so among equal latencies fewer hops
 * win. Routes between sites come from igraph Dijkstra on a small graph of
 * gateways with the same weights; when two routes tie exactly, the structural
 * and the graph path may pick different (equally short) routes.
 *
 * Threads. igraph's error and warning handlers abort by default, and an
 * igraph built without IGRAPH_THREAD_SAFE (Debian's libigraph3) keeps them,
 * and the IGRAPH_FINALLY stack every igraph function pushes its cleanups on,
 * in process globals: two threads inside igraph at once corrupt that stack
 * ("Corrupt finally stack", an abort). So every igraph call of this file
 * (the only one that calls igraph) runs between igraph_enter() and
 * igraph_leave(): in such a build, under one process-wide mutex, with the
 * handlers switched to "ignore" once (pthread_once) and the mutex held
 * across fork() (pthread_atfork) so that a child forked while another
 * thread was inside igraph (fork_map.c's workers) does not inherit it
 * locked; in a thread-safe igraph build, where the handlers are per thread,
 * without the mutex and with the handlers set on every entry. The critical
 * sections are the graph builds and Dijkstra calls of hs_topology_new,
 * hs_topology_free and hs_topology_path_graph; everything else here is
 * per-topology state. Every igraph call's return code is mapped to
 * hs_status_t.
 */
#include "clusters_internal.h"

#include <igraph/igraph.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HOP_EPS_NS 1e-3

struct hs_topology {
  size_t n_devices, n_nodes, n_sites, n_xlinks;
  int32_t *dev_node;      /* [n_devices] */
  int32_t *node_site;     /* [n_nodes] */
  int32_t *fabric_link;   /* [n_sites], -1 = non-blocking */
  int32_t *xlink_ends;    /* [2 * n_xlinks]: site_a, site_b */
  hs_link_t *links;
  size_t n_links;
  size_t nic_base, fab_base, xsite_base, rail_base;
  int32_t *node_rails;    /* [n_nodes]: R, the rail links per direction; 0 = none */
  int32_t *node_rail0;    /* [n_nodes]: RAIL_UP(n, 0), -1 = none */
  int32_t *dev_rail;      /* [n_devices]: RAIL_UP of the device's rail, -1 = none */
  /* route_in[a * S + b]: XSITE link by which the route from site a enters
   * site b; -1 when a == b. */
  int32_t *route_in;
  igraph_t graph;
  bool has_graph, has_weights;
  igraph_vector_t weights;    /* per edge, ns */
  int32_t *edge_link;         /* per edge: link id, -1 for internal edges */
};

static void igraph_quiet(void)
{
  igraph_set_error_handler(igraph_error_handler_ignore);
  igraph_set_warning_handler(igraph_warning_handler_ignore);
}

#if IGRAPH_THREAD_SAFE
/* Handlers and the finally stack are thread-local: nothing to share. */
static void igraph_enter(void) { igraph_quiet(); }
static void igraph_leave(void) {}
#else
static pthread_once_t igraph_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t igraph_mu = PTHREAD_MUTEX_INITIALIZER;

static void igraph_lock(void) { pthread_mutex_lock(&igraph_mu); }
static void igraph_unlock(void) { pthread_mutex_unlock(&igraph_mu); }

static void igraph_setup(void)
{
  igraph_quiet();
  /* Failure (ENOMEM) leaves fork() unguarded, nothing else; a child then
   * could only deadlock if it forked while another thread was in igraph. */
  (void)pthread_atfork(igraph_lock, igraph_unlock, igraph_unlock);
}

static void igraph_enter(void)
{
  pthread_once(&igraph_once, igraph_setup);
  igraph_lock();
}

static void igraph_leave(void) { igraph_unlock(); }
#endif

#define IG(expr) ((expr) == IGRAPH_SUCCESS ? HS_OK : HS_EINTERNAL)

const char *hs_link_kind_name(hs_link_kind_t k)
{
  switch (k) {
  case HS_LINK_GPU_UP: return "gpu_up";
  case HS_LINK_GPU_DOWN: return "gpu_down";
  case HS_LINK_NIC_UP: return "nic_up";
  case HS_LINK_NIC_DOWN: return "nic_down";
  case HS_LINK_FABRIC: return "fabric";
  case HS_LINK_XSITE: return "xsite";
  case HS_LINK_RAIL_UP: return "rail_up";
  case HS_LINK_RAIL_DOWN: return "rail_down";
  }
  return "unknown";
}

static void set_link(hs_link_t *l, hs_link_kind_t kind, int32_t owner, int32_t dir, double GBps,
                     double latency_us)
{
  l->kind = kind;
  l->owner = owner;
  l->dir = dir;
  l->GBps = GBps;
  l->latency_ns = latency_us * 1e3;
}

static hs_status_t build_links(const hs_cluster_t *c, hs_topology_t *t)
{
  size_t D = c->n_devices, N = c->n_nodes, S = c->n_sites, X = c->n_xlinks;
  size_t F = 0;
  for (size_t s = 0; s < S; s++)
    F += c->sites[s].fabric_GBps > 0.0;
  t->nic_base = 2 * D;
  t->fab_base = 2 * D + 2 * N;
  t->xsite_base = t->fab_base + F;
  t->rail_base = t->xsite_base + 2 * X;
  size_t n_rails = 0;
  for (size_t i = 0; i < N; i++) {
    const hs_node_t *n = &c->nodes[i];
    int32_t R = HS_MIN((int32_t)n->nic_rails, n->n_devices);
    t->node_rails[i] = R > 1 ? R : 0;
    t->node_rail0[i] = R > 1 ? (int32_t)(t->rail_base + 2 * n_rails) : -1;
    n_rails += (size_t)t->node_rails[i];
  }
  t->n_links = t->rail_base + 2 * n_rails;
  t->links = hs_calloc(t->n_links, sizeof(hs_link_t));
  if (!t->links)
    return HS_ENOMEM;
  for (size_t d = 0; d < D; d++) {
    const hs_node_t *n = &c->nodes[c->devices[d].node];
    hs_link_t *up = &t->links[2 * d], *down = up + 1;
    set_link(up, HS_LINK_GPU_UP, (int32_t)d, 0, n->intra_GBps, n->intra_latency_us / 2);
    set_link(down, HS_LINK_GPU_DOWN, (int32_t)d, 1, n->intra_GBps, n->intra_latency_us / 2);
    const hs_link_ref_t *ref = hs_cluster_node_link(c, c->devices[d].node, false);
    up->nvls = down->nvls = ref && ref->nvls; /* the catalog's NVLink SHARP switch */
    up->nvls_GBps = down->nvls_GBps = up->nvls ? ref->nvls_GBps : 0.0;
    up->nvls_latency_ns = down->nvls_latency_ns = up->nvls ? 1e3 * ref->nvls_latency_us : 0.0;
    up->pcie_path = down->pcie_path = n->pcie_path;
    if (n->intra_ranges > 0 && n->intra_ranges <= c->n_link_ranges)
      up->ranges = down->ranges = &c->link_ranges[n->intra_ranges - 1];
    snprintf(up->label, sizeof up->label, "d%zu.up", d);
    snprintf(down->label, sizeof down->label, "d%zu.down", d);
  }
  for (size_t i = 0; i < N; i++) {
    const hs_node_t *n = &c->nodes[i];
    double lat = (n->nic_latency_us + c->sites[n->site].fabric_latency_us) / 2;
    hs_link_t *up = &t->links[t->nic_base + 2 * i], *down = up + 1;
    set_link(up, HS_LINK_NIC_UP, (int32_t)i, 0, n->nic_GBps, lat);
    set_link(down, HS_LINK_NIC_DOWN, (int32_t)i, 1, n->nic_GBps, lat);
    up->rails = down->rails = n->nic_rails > 1 ? n->nic_rails : 1;
    if (n->nic_ranges > 0 && n->nic_ranges <= c->n_link_ranges)
      up->ranges = down->ranges = &c->link_ranges[n->nic_ranges - 1];
    snprintf(up->label, sizeof up->label, "n%zu.nic.up", i);
    snprintf(down->label, sizeof down->label, "n%zu.nic.down", i);
  }
  size_t f = 0;
  for (size_t s = 0; s < S; s++) {
    t->fabric_link[s] = -1;
    if (!(c->sites[s].fabric_GBps > 0.0))
      continue;
    hs_link_t *l = &t->links[t->fab_base + f];
    t->fabric_link[s] = (int32_t)(t->fab_base + f);
    set_link(l, HS_LINK_FABRIC, (int32_t)s, 0, c->sites[s].fabric_GBps, 0.0);
    snprintf(l->label, sizeof l->label, "%.32s.fabric", c->sites[s].name);
    f++;
  }
  for (size_t x = 0; x < X; x++) {
    const hs_xlink_t *xl = &c->xlinks[x];
    const char *a = c->sites[xl->site_a].name, *b = c->sites[xl->site_b].name;
    hs_link_t *ab = &t->links[t->xsite_base + 2 * x], *ba = ab + 1;
    set_link(ab, HS_LINK_XSITE, (int32_t)x, 0, xl->GBps, xl->latency_us);
    set_link(ba, HS_LINK_XSITE, (int32_t)x, 1, xl->GBps, xl->latency_us);
    snprintf(ab->label, sizeof ab->label, "%.22s->%.22s", a, b);
    snprintf(ba->label, sizeof ba->label, "%.22s->%.22s", b, a);
    t->xlink_ends[2 * x] = xl->site_a;
    t->xlink_ends[2 * x + 1] = xl->site_b;
  }
  for (size_t i = 0; i < N; i++) {
    const hs_node_t *n = &c->nodes[i];
    int32_t R = t->node_rails[i];
    for (int32_t r = 0; r < R; r++) {
      hs_link_t *up = &t->links[t->node_rail0[i] + 2 * r], *down = up + 1;
      set_link(up, HS_LINK_RAIL_UP, (int32_t)i, 0, n->nic_GBps / R, 0.0);
      set_link(down, HS_LINK_RAIL_DOWN, (int32_t)i, 1, n->nic_GBps / R, 0.0);
      up->rails = down->rails = R;
      snprintf(up->label, sizeof up->label, "n%zu.rail%d.up", i, (int)r);
      snprintf(down->label, sizeof down->label, "n%zu.rail%d.down", i, (int)r);
    }
  }
  for (size_t d = 0; d < D; d++) {
    const hs_device_t *dv = &c->devices[d];
    int32_t R = t->node_rails[dv->node], g = c->nodes[dv->node].n_devices;
    t->dev_rail[d] = R > 0 ? t->node_rail0[dv->node] + 2 * (dv->local_rank * R / g) : -1;
  }
  return HS_OK;
}

static double link_weight(const hs_topology_t *t, int32_t link)
{
  return (link >= 0 ? t->links[link].latency_ns : 0.0) + HOP_EPS_NS;
}

/* The full graph. Edge e's link is edge_link[e]. */
static hs_status_t build_graph(hs_topology_t *t)
{
  size_t D = t->n_devices, N = t->n_nodes, S = t->n_sites, X = t->n_xlinks;
  size_t n_edges = 2 * D + 2 * N + 3 * S + 2 * X, n_vert = D + N + 3 * S;
  for (size_t n = 0; n < N; n++)
    if (t->node_rails[n] > 0) {
      n_edges += 2 * (size_t)t->node_rails[n] - 2; /* one NIC edge per rail and direction */
      n_vert += 2 * (size_t)t->node_rails[n];
    }
  for (size_t d = 0; d < D; d++)
    if (t->dev_rail[d] >= 0) {
      n_edges += 4; /* two internal, RAIL_UP, RAIL_DOWN */
      n_vert += 2;
    }
  igraph_integer_t site_v0 = (igraph_integer_t)(D + N), next_v = site_v0 + 3 * (igraph_integer_t)S;
  igraph_vector_int_t ev;
  hs_status_t st = HS_OK;
  size_t e = 0;
  igraph_integer_t *rail_v = NULL; /* [N]: node's first rail vertex (up r = +2r, down = +2r+1) */
  if (igraph_vector_int_init(&ev, (igraph_integer_t)(2 * n_edges)) != IGRAPH_SUCCESS)
    return HS_ENOMEM;
  if (igraph_vector_init(&t->weights, (igraph_integer_t)n_edges) != IGRAPH_SUCCESS) {
    igraph_vector_int_destroy(&ev);
    return HS_ENOMEM;
  }
  t->has_weights = true;
  t->edge_link = hs_calloc(n_edges, sizeof(int32_t));
  rail_v = hs_calloc(N, sizeof *rail_v);
  if (!t->edge_link || !rail_v)
    HS_FAIL(HS_ENOMEM);
#define EDGE(from, to, link)                                             \
  do {                                                                   \
    VECTOR(ev)[2 * e] = (igraph_integer_t)(from);                        \
    VECTOR(ev)[2 * e + 1] = (igraph_integer_t)(to);                      \
    t->edge_link[e] = (int32_t)(link);                                   \
    VECTOR(t->weights)[e] = link_weight(t, (int32_t)(link));             \
    e++;                                                                 \
  } while (0)
  for (size_t n = 0; n < N; n++) {
    igraph_integer_t site = site_v0 + 3 * t->node_site[n];
    if (t->node_rails[n] == 0) {
      EDGE(D + n, site, t->nic_base + 2 * n);
      EDGE(site + 1, D + n, t->nic_base + 2 * n + 1);
      continue;
    }
    rail_v[n] = next_v;
    next_v += 2 * t->node_rails[n];
    for (int32_t r = 0; r < t->node_rails[n]; r++) {
      EDGE(rail_v[n] + 2 * r, site, t->nic_base + 2 * n);
      EDGE(site + 1, rail_v[n] + 2 * r + 1, t->nic_base + 2 * n + 1);
    }
  }
  for (size_t d = 0; d < D; d++) {
    int32_t n = t->dev_node[d];
    igraph_integer_t sw = (igraph_integer_t)(D + (size_t)n);
    if (t->dev_rail[d] < 0) {
      EDGE(d, sw, 2 * d);
      EDGE(sw, d, 2 * d + 1);
      continue;
    }
    igraph_integer_t out = next_v++, in = next_v++;
    igraph_integer_t r = (t->dev_rail[d] - t->node_rail0[n]) / 2;
    EDGE(d, out, 2 * d);
    EDGE(out, sw, -1);
    EDGE(sw, in, -1);
    EDGE(in, d, 2 * d + 1);
    EDGE(out, rail_v[n] + 2 * r, t->dev_rail[d]);
    EDGE(rail_v[n] + 2 * r + 1, in, t->dev_rail[d] + 1);
  }
  for (size_t s = 0; s < S; s++) {
    igraph_integer_t in = site_v0 + 3 * (igraph_integer_t)s;
    EDGE(in, in + 1, t->fabric_link[s]);
    EDGE(in + 1, in + 2, -1);
    EDGE(in + 2, in, -1);
  }
  for (size_t x = 0; x < X; x++) {
    igraph_integer_t ga = site_v0 + 3 * t->xlink_ends[2 * x] + 2;
    igraph_integer_t gb = site_v0 + 3 * t->xlink_ends[2 * x + 1] + 2;
    EDGE(ga, gb, t->xsite_base + 2 * x);
    EDGE(gb, ga, t->xsite_base + 2 * x + 1);
  }
#undef EDGE
  if (e != n_edges || (size_t)next_v != n_vert)
    HS_FAIL(HS_EINTERNAL);
  HS_CHECK(IG(igraph_create(&t->graph, &ev, (igraph_integer_t)n_vert, IGRAPH_DIRECTED)));
  t->has_graph = true;
cleanup:
  free(rail_v);
  igraph_vector_int_destroy(&ev);
  return st;
}

/* Site routes: Dijkstra from every site on the gateway graph. Fails naming
 * an unreachable site or a route longer than a path can hold.
 * O(S * (S + X) log S). */
static hs_status_t build_routes(const hs_cluster_t *c, hs_topology_t *t, hs_error_t *err)
{
  size_t S = t->n_sites, X = t->n_xlinks;
  hs_status_t st = HS_OK;
  igraph_t g;
  bool has_g = false;
  igraph_vector_int_t ev, inbound;
  igraph_vector_t w;
  bool has_ev = false, has_in = false, has_w = false;
  t->route_in = hs_calloc(S * S, sizeof(int32_t));
  if (!t->route_in)
    return hs_error_set(err, HS_ENOMEM, "out of memory for %zu x %zu site routes", S, S);
  for (size_t i = 0; i < S * S; i++)
    t->route_in[i] = -1;
  if (S == 1)
    return HS_OK;
  HS_CHECK(IG(igraph_vector_int_init(&ev, (igraph_integer_t)(4 * X))));
  has_ev = true;
  HS_CHECK(IG(igraph_vector_init(&w, (igraph_integer_t)(2 * X))));
  has_w = true;
  HS_CHECK(IG(igraph_vector_int_init(&inbound, 0)));
  has_in = true;
  for (size_t x = 0; x < X; x++) {
    VECTOR(ev)[4 * x] = t->xlink_ends[2 * x];
    VECTOR(ev)[4 * x + 1] = t->xlink_ends[2 * x + 1];
    VECTOR(ev)[4 * x + 2] = t->xlink_ends[2 * x + 1];
    VECTOR(ev)[4 * x + 3] = t->xlink_ends[2 * x];
    VECTOR(w)[2 * x] = VECTOR(w)[2 * x + 1] = link_weight(t, (int32_t)(t->xsite_base + 2 * x));
  }
  HS_CHECK(IG(igraph_create(&g, &ev, (igraph_integer_t)S, IGRAPH_DIRECTED)));
  has_g = true;
  for (size_t a = 0; a < S; a++) {
    /* Edge 2x + dir of this graph is XSITE link xsite_base + 2x + dir. */
    HS_CHECK(IG(igraph_get_shortest_paths_dijkstra(&g, NULL, NULL, (igraph_integer_t)a, igraph_vss_all(),
                                                   &w, IGRAPH_OUT, NULL, &inbound)));
    for (size_t b = 0; b < S; b++) {
      if (b == a)
        continue;
      igraph_integer_t edge = VECTOR(inbound)[b];
      if (edge < 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "cluster %s: site \"%s\" is unreachable from site \"%s\"",
                             c->name, c->sites[b].name, c->sites[a].name));
      t->route_in[a * S + b] = (int32_t)(t->xsite_base + (size_t)edge);
    }
  }
  /* Every route must fit a path: GPU ports, rails, NIC ports, two fabrics,
   * the hops. */
  for (size_t a = 0; a < S; a++) {
    for (size_t b = 0; b < S; b++) {
      int32_t hops = hs_topology_route_hops(t, (int32_t)a, (int32_t)b);
      if (hops > HS_PATH_MAX - 8)
        HS_FAIL(hs_error_set(err, HS_ELIMIT,
                             "cluster %s: the route from site \"%s\" to \"%s\" has %d links, above the "
                             "limit of %d",
                             c->name, c->sites[a].name, c->sites[b].name, hops, HS_PATH_MAX - 8));
    }
  }
cleanup:
  if (has_g)
    igraph_destroy(&g);
  if (has_ev)
    igraph_vector_int_destroy(&ev);
  if (has_w)
    igraph_vector_destroy(&w);
  if (has_in)
    igraph_vector_int_destroy(&inbound);
  if (st == HS_EINTERNAL)
    hs_error_set(err, st, "cluster %s: igraph failed while routing between sites", c->name);
  return st;
}

hs_status_t hs_topology_new(const hs_cluster_t *c, hs_topology_t **out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_topology_t *t = NULL;
  *out = NULL;
  if (!c || c->n_devices == 0 || c->n_sites == 0)
    return hs_error_set(err, HS_EINVAL, "topology: empty cluster");
  t = hs_calloc(1, sizeof(*t));
  if (!t)
    return hs_error_set(err, HS_ENOMEM, "topology: out of memory");
  t->n_devices = c->n_devices;
  t->n_nodes = c->n_nodes;
  t->n_sites = c->n_sites;
  t->n_xlinks = c->n_xlinks;
  t->dev_node = hs_calloc(c->n_devices, sizeof(int32_t));
  t->node_site = hs_calloc(c->n_nodes, sizeof(int32_t));
  t->fabric_link = hs_calloc(c->n_sites, sizeof(int32_t));
  t->xlink_ends = hs_calloc(2 * c->n_xlinks, sizeof(int32_t));
  t->node_rails = hs_calloc(c->n_nodes, sizeof(int32_t));
  t->node_rail0 = hs_calloc(c->n_nodes, sizeof(int32_t));
  t->dev_rail = hs_calloc(c->n_devices, sizeof(int32_t));
  if (!t->dev_node || !t->node_site || !t->fabric_link || !t->xlink_ends || !t->node_rails ||
      !t->node_rail0 || !t->dev_rail)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "topology: out of memory"));
  for (size_t d = 0; d < c->n_devices; d++)
    t->dev_node[d] = c->devices[d].node;
  for (size_t n = 0; n < c->n_nodes; n++)
    t->node_site[n] = c->nodes[n].site;
  if (build_links(c, t) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "topology: out of memory for %zu links", t->n_links));
  igraph_enter();
  st = build_routes(c, t, err);
  if (st == HS_OK) {
    st = build_graph(t);
    if (st != HS_OK)
      hs_error_set(err, st, "topology: cannot build the igraph graph (%s)", hs_status_message(st));
  }
  igraph_leave();
  if (st != HS_OK)
    goto cleanup;
  *out = t;
  t = NULL;
cleanup:
  hs_topology_free(t);
  return st;
}

void hs_topology_free(hs_topology_t *t)
{
  if (!t)
    return;
  if (t->has_graph || t->has_weights) {
    igraph_enter();
    if (t->has_graph)
      igraph_destroy(&t->graph);
    if (t->has_weights)
      igraph_vector_destroy(&t->weights);
    igraph_leave();
  }
  free(t->edge_link);
  free(t->route_in);
  free(t->links);
  free(t->xlink_ends);
  free(t->fabric_link);
  free(t->node_site);
  free(t->dev_node);
  free(t->node_rails);
  free(t->node_rail0);
  free(t->dev_rail);
  free(t);
}

size_t hs_topology_n_links(const hs_topology_t *t) { return t ? t->n_links : 0; }

const hs_link_t *hs_topology_links(const hs_topology_t *t) { return t ? t->links : NULL; }

int32_t hs_topology_device_node(const hs_topology_t *t, int32_t device)
{
  if (!t || device < 0 || (size_t)device >= t->n_devices)
    return -1;
  return t->dev_node[device];
}

int32_t hs_topology_link_gpu_up(const hs_topology_t *t, int32_t device)
{
  return device >= 0 && (size_t)device < t->n_devices ? 2 * device : -1;
}

int32_t hs_topology_link_gpu_down(const hs_topology_t *t, int32_t device)
{
  return device >= 0 && (size_t)device < t->n_devices ? 2 * device + 1 : -1;
}

int32_t hs_topology_link_nic_up(const hs_topology_t *t, int32_t node)
{
  return node >= 0 && (size_t)node < t->n_nodes ? (int32_t)t->nic_base + 2 * node : -1;
}

int32_t hs_topology_link_nic_down(const hs_topology_t *t, int32_t node)
{
  return node >= 0 && (size_t)node < t->n_nodes ? (int32_t)t->nic_base + 2 * node + 1 : -1;
}

int32_t hs_topology_link_fabric(const hs_topology_t *t, int32_t site)
{
  return site >= 0 && (size_t)site < t->n_sites ? t->fabric_link[site] : -1;
}

int32_t hs_topology_link_xsite(const hs_topology_t *t, int32_t xlink, int32_t dir)
{
  if (xlink < 0 || (size_t)xlink >= t->n_xlinks || (dir != 0 && dir != 1))
    return -1;
  return (int32_t)t->xsite_base + 2 * xlink + dir;
}

int32_t hs_topology_link_rail_up(const hs_topology_t *t, int32_t device)
{
  return device >= 0 && (size_t)device < t->n_devices ? t->dev_rail[device] : -1;
}

int32_t hs_topology_link_rail_down(const hs_topology_t *t, int32_t device)
{
  int32_t up = hs_topology_link_rail_up(t, device);
  return up >= 0 ? up + 1 : -1;
}

/* The site a route link leaves from. */
static int32_t xsite_from(const hs_topology_t *t, int32_t link)
{
  const hs_link_t *l = &t->links[link];
  return t->xlink_ends[2 * l->owner + l->dir];
}

int32_t hs_topology_route_hops(const hs_topology_t *t, int32_t a, int32_t b)
{
  if (!t || a < 0 || b < 0 || (size_t)a >= t->n_sites || (size_t)b >= t->n_sites)
    return -1;
  int32_t hops = 0;
  size_t S = t->n_sites;
  for (int32_t cur = b; cur != a; hops++) {
    int32_t l = t->route_in[(size_t)a * S + (size_t)cur];
    if (l < 0 || hops > (int32_t)S)
      return -1;
    cur = xsite_from(t, l);
  }
  return hops;
}

static void path_finish(const hs_topology_t *t, hs_path_t *p)
{
  p->bottleneck_GBps = INFINITY;
  p->latency_ns = 0.0;
  for (int32_t i = 0; i < p->n; i++) {
    const hs_link_t *l = &t->links[p->links[i]];
    p->bottleneck_GBps = fmin(p->bottleneck_GBps, l->GBps);
    p->latency_ns += l->latency_ns;
  }
}

hs_status_t hs_topology_path(const hs_topology_t *t, int32_t a, int32_t b, hs_path_t *out)
{
  if (!t || !out || a < 0 || b < 0 || (size_t)a >= t->n_devices || (size_t)b >= t->n_devices)
    return HS_EINVAL;
  hs_path_t *p = out;
  p->n = 0;
  if (a != b) {
    int32_t na = t->dev_node[a], nb = t->dev_node[b];
    p->links[p->n++] = 2 * a;
    if (na != nb) {
      int32_t sa = t->node_site[na], sb = t->node_site[nb];
      if (t->dev_rail[a] >= 0)
        p->links[p->n++] = t->dev_rail[a];
      p->links[p->n++] = (int32_t)t->nic_base + 2 * na;
      if (t->fabric_link[sa] >= 0)
        p->links[p->n++] = t->fabric_link[sa];
      if (sa != sb) {
        /* Walk the route backwards from b, then reverse it in place. The
         * length was checked against HS_PATH_MAX when routes were built. */
        int32_t first = p->n;
        size_t S = t->n_sites;
        for (int32_t cur = sb; cur != sa;) {
          int32_t l = t->route_in[(size_t)sa * S + (size_t)cur];
          p->links[p->n++] = l;
          cur = xsite_from(t, l);
        }
        for (int32_t i = first, j = p->n - 1; i < j; i++, j--) {
          int32_t tmp = p->links[i];
          p->links[i] = p->links[j];
          p->links[j] = tmp;
        }
        if (t->fabric_link[sb] >= 0)
          p->links[p->n++] = t->fabric_link[sb];
      }
      p->links[p->n++] = (int32_t)t->nic_base + 2 * nb + 1;
      if (t->dev_rail[b] >= 0)
        p->links[p->n++] = t->dev_rail[b] + 1;
    }
    p->links[p->n++] = 2 * b + 1;
  }
  path_finish(t, p);
  return HS_OK;
}

hs_status_t hs_topology_path_graph(const hs_topology_t *t, int32_t a, int32_t b, hs_path_t *out)
{
  if (!t || !out || a < 0 || b < 0 || (size_t)a >= t->n_devices || (size_t)b >= t->n_devices)
    return HS_EINVAL;
  hs_status_t st = HS_OK;
  igraph_vector_int_t edges;
  out->n = 0;
  igraph_enter();
  if (igraph_vector_int_init(&edges, 0) != IGRAPH_SUCCESS) {
    igraph_leave();
    return HS_ENOMEM;
  }
  if (a != b) {
    HS_CHECK(IG(igraph_get_shortest_path_dijkstra(&t->graph, NULL, &edges, a, b, &t->weights, IGRAPH_OUT)));
    igraph_integer_t ne = igraph_vector_int_size(&edges);
    if (ne == 0)
      HS_FAIL(HS_EINTERNAL); /* every GPU reaches every other: routes were checked */
    for (igraph_integer_t i = 0; i < ne; i++) {
      int32_t l = t->edge_link[VECTOR(edges)[i]];
      if (l < 0)
        continue;
      if (out->n >= HS_PATH_MAX)
        HS_FAIL(HS_ELIMIT);
      out->links[out->n++] = l;
    }
  }
  path_finish(t, out);
cleanup:
  igraph_vector_int_destroy(&edges);
  igraph_leave();
  return st;
}
