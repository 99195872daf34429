/*
 * collective.c - the collective layer: validation, the phase builder, the
 * phase driver that runs an algorithm's phases on the network, the generic
 * uncontended-time evaluator behind every estimate_s, and the algorithm
 * table, and the size-aware default (ring or tree across nodes, also
 * NVLS-Tree across NVLink SHARP nodes; ring or nvls inside such a node, by
 * the closed forms). The algorithms (coll_ring.c, coll_tree.c, coll_hier.c,
 * coll_node_ring.c, coll_node_tree.c, coll_nvls.c, coll_nvls_tree.c,
 * coll_direct.c) only describe phases; simulation and estimate both consume
 * those descriptions, so they cannot disagree on the decomposition.
 *
 * A running collective: phase k = wait latency_ns (one engine event, rounded
 * once), then start its coupled flows; when the last one completes, phase
 * k + 1 is built and started from that completion event. The hops of the
 * phase live in one pool block owned by the collective until it ends.
 *
 * The network owns one hs__colls_t (net_colls.h) but never looks inside: the
 * live list, the builder and the pool are this file's. This file makes it at
 * the network's first collective and hands it to the network's slot with
 * the hooks that free it and drop its memo (net_seam.h); the network
 * includes nothing of this layer. From the network this file uses only its
 * public calls, its engine and that slot.
 */
#include "coll_impl.h"
#include "coll_memo.h"
#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- operations and the algorithm table ----------------------------------- */

static const char *const op_names[HS_COLL__COUNT] = {
    [HS_COLL_P2P] = "p2p",
    [HS_COLL_ALLREDUCE] = "allreduce",
    [HS_COLL_REDUCE_SCATTER] = "reducescatter",
    [HS_COLL_ALLGATHER] = "allgather",
    [HS_COLL_BROADCAST] = "broadcast",
    [HS_COLL_ALLTOALL] = "alltoall",
    [HS_COLL_PADDED_ALLGATHER] = "padded_allgather",
    [HS_COLL_GROUPED_BROADCAST] = "grouped_broadcast",
};

const char *hs_coll_op_name(hs_coll_op_t op)
{
  return (unsigned)op < HS_COLL__COUNT ? op_names[op] : "?";
}

hs_status_t hs_coll_op_parse(const char *s, hs_coll_op_t *out)
{
  for (int i = 0; s && i < HS_COLL__COUNT; i++)
    if (strcmp(s, op_names[i]) == 0) {
      *out = (hs_coll_op_t)i;
      return HS_OK;
    }
  return HS_ENOTFOUND;
}

const hs_coll_algo_t *const hs_coll_algos[] = {&hs_coll_ring,      &hs_coll_tree,
                                               &hs_coll_hier,      &hs_coll_node_ring,
                                               &hs_coll_node_tree, &hs_coll_direct,
                                               &hs_coll_nvls,      &hs_coll_nvls_tree,
                                               NULL};

const hs_coll_algo_t *hs_coll_algo_find(const char *name)
{
  for (size_t i = 0; name && hs_coll_algos[i]; i++)
    if (strcmp(hs_coll_algos[i]->name, name) == 0)
      return hs_coll_algos[i];
  return NULL;
}

void hs_coll_init(hs_coll_t *c)
{
  memset(c, 0, sizeof *c);
  c->slot = -1;
  hs_event_init(&c->ev, NULL);
}

/* ---- builder ---------------------------------------------------------------- */

void hs__builder_init(hs_coll_builder_t *b, const hs_net_paths_t *paths, hs_error_t *err)
{
  memset(b, 0, sizeof *b);
  b->paths = paths;
  b->err = err;
}

void hs__builder_destroy(hs_coll_builder_t *b)
{
  if (!b)
    return;
  hs_free(b->bytes);
  hs_free(b->flow_off);
  hs_free(b->hops);
  hs_free(b->raw);
  hs_free(b->tmp);
  memset(b, 0, sizeof *b);
}

void hs__builder_reset(hs_coll_builder_t *b)
{
  b->latency_ns = 0.0;
  b->n_flows = 0;
  b->n_hops = 0;
  b->n_raw = 0;
  b->open = false;
}

hs_status_t hs__builder_tmp(hs_coll_builder_t *b, size_t n)
{
  return hs_reserve((void **)&b->tmp, &b->cap_tmp, n, sizeof *b->tmp);
}

static int cmp_i32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static void sort_i32(int32_t *a, size_t n)
{
  if (n > 24) {
    qsort(a, n, sizeof *a, cmp_i32);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    int32_t v = a[i];
    size_t j = i;
    for (; j > 0 && a[j - 1] > v; j--)
      a[j] = a[j - 1];
    a[j] = v;
  }
}

/* Sorts hops by link: insertion sort below 24 elements, else an in-place
 * quicksort (median of three, smaller side first, so O(log n) stack).
 * Hops of one link are merged right after (their weights summed), so the
 * order among equal links does not matter; libc's qsort, which this
 * replaces, spent a third of megatron's search in its callbacks and the
 * temporary buffer it allocates (perf, compare on 48 GPUs). */
static void sort_hops(hs_flow_hop_t *a, size_t n)
{
  while (n > 24) {
    size_t mid = n / 2, last = n - 1;
    int32_t x = a[0].link, y = a[mid].link, z = a[last].link;
    int32_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    size_t i = 0, j = last;
    for (;;) { /* Hoare partition: a[0..j] <= pivot <= a[j+1..n) */
      while (a[i].link < pivot)
        i++;
      while (a[j].link > pivot)
        j--;
      if (i >= j)
        break;
      hs_flow_hop_t t = a[i];
      a[i++] = a[j];
      a[j--] = t;
    }
    size_t left = j + 1;
    if (left < n - left) {
      sort_hops(a, left);
      a += left;
      n -= left;
    } else {
      sort_hops(a + left, n - left);
      n = left;
    }
  }
  for (size_t i = 1; i < n; i++) {
    hs_flow_hop_t v = a[i];
    size_t j = i;
    for (; j > 0 && a[j - 1].link > v.link; j--)
      a[j] = a[j - 1];
    a[j] = v;
  }
}

/* A link's figures at the call's size: its range's where it has ranges. */
static double link_GBps_at(const hs_coll_builder_t *b, const hs_link_t *l)
{
  if (!l->ranges || l->ranges->n < 1)
    return l->GBps;
  return l->ranges->GBps[hs_link_ranges_find(l->ranges, b->size_bytes)];
}

/* The path's latency at the call's size: a ranged link's half of its port
 * latency (each port's latency is split over its two directions, topology.c)
 * moves from the port's base figure to the range's. */
static double path_latency_at(const hs_coll_builder_t *b, const hs_path_t *p)
{
  double lat = p->latency_ns;
  for (int32_t i = 0; i < p->n; i++) {
    const hs_link_ranges_t *r = b->paths->links[p->links[i]].ranges;
    if (r && r->n > 0)
      lat += 0.5e3 * (r->latency_us[hs_link_ranges_find(r, b->size_bytes)] - r->base_latency_us);
  }
  return lat;
}

/* Scales the last flow's bytes (its merged hops from `first`) so that
 * bytes x max_l(w_l / B_l) with the links' own B gives the time of the
 * ranges' B: exact uncontended. */
static void scale_ranged_flow(hs_coll_builder_t *b, size_t first)
{
  double worst = 0.0, worst_r = 0.0;
  for (size_t i = first; i < b->n_hops; i++) {
    const hs_link_t *l = &b->paths->links[b->hops[i].link];
    double g = l->GBps, gr = link_GBps_at(b, l);
    if (g > 0.0 && g < INFINITY)
      worst = fmax(worst, (double)b->hops[i].weight / g);
    if (gr > 0.0 && gr < INFINITY)
      worst_r = fmax(worst_r, (double)b->hops[i].weight / gr);
  }
  if (worst > 0.0 && worst_r > 0.0)
    b->bytes[b->n_flows - 1] *= worst_r / worst;
}

hs_status_t hs__builder_close(hs_coll_builder_t *b)
{
  if (!b->open)
    return HS_OK;
  size_t first = b->n_hops;
  hs_status_t st = hs_reserve((void **)&b->hops, &b->cap_hops, b->n_hops + b->n_raw,
                              sizeof *b->hops);
  if (st != HS_OK)
    return st;
  sort_hops(b->raw, b->n_raw);
  for (size_t i = 0; i < b->n_raw;) {
    size_t j = i;
    int32_t w = 0;
    for (; j < b->n_raw && b->raw[j].link == b->raw[i].link; j++)
      w += b->raw[j].weight;
    b->hops[b->n_hops++] = (hs_flow_hop_t){b->raw[i].link, w};
    i = j;
  }
  b->n_raw = 0;
  b->flow_off[b->n_flows] = (int32_t)b->n_hops;
  b->open = false;
  if (b->ranged)
    scale_ranged_flow(b, first);
  return HS_OK;
}

hs_status_t hs__builder_flow(hs_coll_builder_t *b, double bytes)
{
  hs_status_t st = HS_OK;
  HS_CHECK(hs__builder_close(b));
  HS_CHECK(hs_reserve((void **)&b->bytes, &b->cap_flows, (size_t)b->n_flows + 1,
                      sizeof *b->bytes));
  HS_CHECK(hs_reserve((void **)&b->flow_off, &b->cap_off, (size_t)b->n_flows + 2,
                      sizeof *b->flow_off));
  b->flow_off[b->n_flows] = (int32_t)b->n_hops;
  b->bytes[b->n_flows++] = bytes;
  b->open = true;
  b->ranged = false;
  b->flow_pcie = true;
  b->flow_min_GBps = INFINITY;
cleanup:
  return st;
}

static hs_status_t get_path(hs_coll_builder_t *b, int32_t a, int32_t d, hs_path_t *p)
{
  const hs_net_paths_t *ps = b->paths;
  if (!ps || !ps->path)
    return hs_error_set(b->err, HS_EINVAL, "coll: the network has no path function");
  hs_status_t st = ps->path(ps->ctx, a, d, p);
  if (st != HS_OK)
    return hs_error_set(b->err, st, "coll.devices: no path from device %d to device %d", a, d);
  if (p->n < 0 || p->n > HS_PATH_MAX)
    return hs_error_set(b->err, HS_EINTERNAL, "coll: path %d -> %d has %d links", a, d, p->n);
  for (int32_t i = 0; i < p->n; i++)
    if (p->links[i] < 0 || (size_t)p->links[i] >= ps->n_links)
      return hs_error_set(b->err, HS_EINTERNAL, "coll: path %d -> %d uses unknown link %d", a,
                          d, p->links[i]);
  return HS_OK;
}

hs_status_t hs__builder_latency(hs_coll_builder_t *b, int32_t a, int32_t d, double *lat_ns)
{
  hs_path_t p;
  hs_status_t st = get_path(b, a, d, &p);
  if (st == HS_OK)
    *lat_ns = path_latency_at(b, &p);
  return st;
}

hs_status_t hs__builder_path_w(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t w_gpu, int32_t w_rail,
                               int32_t w_net, double *lat_ns)
{
  hs_path_t p;
  hs_status_t st = get_path(b, a, d, &p);
  if (st != HS_OK)
    return st;
  if (!b->open || w_gpu < 0 || w_rail < 0 || w_net < 0)
    return HS_EINTERNAL;
  st = hs_reserve((void **)&b->raw, &b->cap_raw, b->n_raw + (size_t)p.n, sizeof *b->raw);
  if (st != HS_OK)
    return st;
  bool ranged = false;
  for (int32_t i = 0; i < p.n; i++) {
    const hs_link_t *l = &b->paths->links[p.links[i]];
    hs_link_kind_t k = l->kind;
    bool gpu = k == HS_LINK_GPU_UP || k == HS_LINK_GPU_DOWN;
    int32_t w = gpu                                              ? w_gpu
                : k == HS_LINK_RAIL_UP || k == HS_LINK_RAIL_DOWN ? w_rail
                                                                 : w_net;
    if (w > 0)
      b->raw[b->n_raw++] = (hs_flow_hop_t){p.links[i], w};
    ranged |= l->ranges != NULL;
    if (gpu && l->pcie_path > 0)
      b->flow_min_GBps = fmin(b->flow_min_GBps, l->GBps);
    else
      b->flow_pcie = false;
  }
  b->ranged |= ranged;
  if (lat_ns)
    *lat_ns = ranged ? path_latency_at(b, &p) : p.latency_ns;
  return HS_OK;
}

void hs__builder_ring_protocol(hs_coll_builder_t *b, int32_t n, int32_t n_steps, double path_lat_ns)
{
  b->latency_ns = (double)n_steps * path_lat_ns;
  if (!b->open || !b->flow_pcie || n < 2 || n_steps < 1 || !(b->flow_min_GBps < INFINITY))
    return;
  /* LL's bus bandwidth cap: NCCL's llMaxBws single-node Volta row, 39.0 GB/s
   * (tuning.cc:179; pre-Ampere, and far above any PCIe port). */
  hs_nccl_proto_cost_t cost[HS_NCCL_PROTO__COUNT];
  hs_nccl_ring_costs(n_steps, HS_NCCL_HW_PCI, b->flow_min_GBps, 39.0, cost);
  hs_nccl_proto_t p = hs_nccl_proto_pick(cost, b->size_bytes, b->flow_min_GBps, (double)n / n_steps, NULL);
  b->latency_ns += 1e3 * cost[p].latency_us;
  b->bytes[b->n_flows - 1] /= cost[p].bw_factor;
}

hs_status_t hs__builder_path(hs_coll_builder_t *b, int32_t a, int32_t d, double *lat_ns)
{
  return hs__builder_path_w(b, a, d, 1, 1, 1, lat_ns);
}

hs_status_t hs__builder_rails(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t w_up, int32_t w_down)
{
  hs_path_t p;
  hs_status_t st = get_path(b, a, d, &p);
  if (st != HS_OK)
    return st;
  if (!b->open || w_up < 0 || w_down < 0)
    return HS_EINTERNAL;
  st = hs_reserve((void **)&b->raw, &b->cap_raw, b->n_raw + 2, sizeof *b->raw);
  if (st != HS_OK)
    return st;
  for (int32_t i = 0; i < p.n; i++) {
    hs_link_kind_t k = b->paths->links[p.links[i]].kind;
    int32_t w = k == HS_LINK_RAIL_UP ? w_up : k == HS_LINK_RAIL_DOWN ? w_down : 0;
    if (w > 0)
      b->raw[b->n_raw++] = (hs_flow_hop_t){p.links[i], w};
  }
  return HS_OK;
}

hs_status_t hs__builder_nic_rails(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t *rails)
{
  hs_path_t p;
  hs_status_t st = get_path(b, a, d, &p);
  if (st != HS_OK)
    return st;
  int32_t lo = INT32_MAX;
  for (int32_t i = 0; i < p.n; i++) {
    const hs_link_t *l = &b->paths->links[p.links[i]];
    if (l->kind == HS_LINK_NIC_UP || l->kind == HS_LINK_NIC_DOWN)
      lo = HS_MIN(lo, l->rails > 1 ? l->rails : 1);
  }
  *rails = lo == INT32_MAX ? 1 : lo;
  return HS_OK;
}

/* Owner of the first NIC_UP link of the path a -> d, or -1. */
static hs_status_t nic_owner(hs_coll_builder_t *b, int32_t a, int32_t d, int32_t *owner)
{
  hs_path_t p;
  hs_status_t st = get_path(b, a, d, &p);
  if (st != HS_OK)
    return st;
  *owner = -1;
  for (int32_t i = 0; i < p.n; i++)
    if (b->paths->links[p.links[i]].kind == HS_LINK_NIC_UP) {
      *owner = b->paths->links[p.links[i]].owner;
      break;
    }
  return HS_OK;
}

hs_status_t hs__coll_nodes(hs_coll_builder_t *b, const int32_t *devices, int32_t n, int32_t *out)
{
  const hs_net_paths_t *ps = b->paths;
  if (ps->node_of) {
    bool known = true;
    for (int32_t i = 0; i < n && known; i++)
      known = (out[i] = ps->node_of(ps->ctx, devices[i])) >= 0;
    if (known)
      return HS_OK;
    /* a device the source does not know: the path queries below report it */
  }
  /* out[i] = -1 marks "on devices[0]'s node" until that node is known. */
  int32_t node0 = -1;
  for (int32_t i = 1; i < n; i++) {
    hs_status_t st = nic_owner(b, devices[i], devices[0], &out[i]);
    if (st != HS_OK)
      return st;
    if (out[i] >= 0 && node0 < 0 && (st = nic_owner(b, devices[0], devices[i], &node0)) != HS_OK)
      return st;
  }
  if (node0 < 0)
    node0 = 0; /* one node only: any id will do */
  out[0] = node0;
  for (int32_t i = 1; i < n; i++)
    if (out[i] < 0)
      out[i] = node0;
  return HS_OK;
}

hs_status_t hs__coll_nvls_path(hs_coll_builder_t *b, const char *algo, int32_t i, int32_t d, int32_t e,
                               double *scale, double *lat_ns, bool *calibrated)
{
  hs_path_t p;
  hs_status_t st = b->paths->path(b->paths->ctx, d, e, &p);
  if (st != HS_OK)
    return hs_error_set(b->err, st, "coll.devices[%d]: no path from device %d to %d", i, d, e);
  for (int32_t h = 0; h < p.n; h++) {
    const hs_link_t *l = &b->paths->links[p.links[h]];
    bool gpu = l->kind == HS_LINK_GPU_UP || l->kind == HS_LINK_GPU_DOWN;
    if (!gpu || !l->nvls)
      return hs_error_set(b->err, HS_EUNSUPPORTED,
                          "coll.devices[%d]: %s all-reduce needs NVLink SHARP GPU ports "
                          "(an interconnect with \"nvls\"); the path from device %d to %d "
                          "crosses link %d (%s), which is not one",
                          i, algo, d, e, (int)p.links[h], l->label);
    if (l->nvls_GBps > 0.0 && l->nvls_latency_ns > 0.0) {
      *scale = HS_MAX(*scale, l->GBps / l->nvls_GBps);
      *lat_ns = HS_MAX(*lat_ns, l->nvls_latency_ns);
    } else {
      *calibrated = false;
    }
  }
  return HS_OK;
}

hs_status_t hs__coll_node_layout(hs_coll_builder_t *b, const hs_coll_t *c, hs_coll_layout_t *out)
{
  int32_t n = c->n;
  hs_status_t st = hs__builder_tmp(b, 4 * (size_t)n + 1);
  if (st != HS_OK)
    return st;
  int32_t *node = b->tmp, *first = b->tmp + n, *order = b->tmp + 2 * n, *start = b->tmp + 3 * n;
  if ((st = hs__coll_nodes(b, c->devices, n, node)) != HS_OK)
    return st;
  int32_t m = 0;
  for (int32_t i = 0; i < n; i++) {
    bool seen = i > 0 && node[i] == node[i - 1];
    for (int32_t g = 0; !seen && g < m; g++)
      seen = node[first[g]] == node[i];
    if (!seen)
      first[m++] = i;
  }
  int32_t w = 0;
  for (int32_t g = 0; g < m; g++) {
    start[g] = w;
    for (int32_t i = first[g]; i < n; i++)
      if (node[i] == node[first[g]])
        order[w++] = i;
  }
  start[m] = w;
  out->node = node;
  out->order = order;
  out->start = start;
  out->scratch = first;
  out->m = m;
  return HS_OK;
}

/* ---- validation and default choice --------------------------------------- */

static hs_status_t coll_validate(hs_coll_builder_t *b, const hs_coll_t *c,
                                 const hs_coll_algo_t *algo)
{
  hs_error_t *err = b->err;
  if ((unsigned)c->op >= HS_COLL__COUNT)
    return hs_error_set(err, HS_EINVAL, "coll.op: unknown operation %d", (int)c->op);
  const char *op = hs_coll_op_name(c->op);
  if (c->n < 1)
    return hs_error_set(err, HS_EINVAL, "coll.n: %d devices, %s needs at least 1", c->n, op);
  if (c->op == HS_COLL_P2P && c->n != 2)
    return hs_error_set(err, HS_EINVAL, "coll.n: p2p needs exactly 2 devices, got %d", c->n);
  if (!c->devices)
    return hs_error_set(err, HS_EINVAL, "coll.devices: NULL for %d devices", c->n);
  if (!(c->bytes >= 0.0) || c->bytes == INFINITY)
    return hs_error_set(err, HS_EINVAL, "coll.bytes: %g, need a finite number >= 0", c->bytes);
  for (int32_t i = 0; i < c->n; i++)
    if (c->devices[i] < 0)
      return hs_error_set(err, HS_EINVAL, "coll.devices[%d]: negative device %d", i,
                          c->devices[i]);
  /* duplicates (a p2p to itself is allowed: it takes no time) */
  if (c->op != HS_COLL_P2P) {
    if (c->n <= 32) {
      for (int32_t i = 1; i < c->n; i++)
        for (int32_t j = 0; j < i; j++)
          if (c->devices[i] == c->devices[j])
            return hs_error_set(err, HS_EINVAL,
                                "coll.devices[%d]: device %d appears twice (also devices[%d])",
                                i, c->devices[i], j);
    } else {
      hs_status_t st = hs__builder_tmp(b, (size_t)c->n);
      if (st != HS_OK)
        return st;
      memcpy(b->tmp, c->devices, (size_t)c->n * sizeof *b->tmp);
      sort_i32(b->tmp, (size_t)c->n);
      for (int32_t i = 1; i < c->n; i++)
        if (b->tmp[i] == b->tmp[i - 1])
          return hs_error_set(err, HS_EINVAL, "coll.devices: device %d appears twice",
                              b->tmp[i]);
    }
  }
  if (c->op == HS_COLL_PADDED_ALLGATHER || c->op == HS_COLL_GROUPED_BROADCAST) {
    if (!c->shares)
      return hs_error_set(err, HS_EINVAL, "coll.shares: required for %s", op);
    double sum = 0.0;
    for (int32_t i = 0; i < c->n; i++) {
      if (!(c->shares[i] >= 0.0) || c->shares[i] > 1.0)
        return hs_error_set(err, HS_EINVAL, "coll.shares[%d]: %g, need a number in [0, 1]", i,
                            c->shares[i]);
      sum += c->shares[i];
    }
    if (fabs(sum - 1.0) > 1e-6)
      return hs_error_set(err, HS_EINVAL, "coll.shares: sum to %.9g, not 1", sum);
  }
  if (!algo->supports(c->op))
    return hs_error_set(err, HS_EUNSUPPORTED, "coll.algo: \"%s\" does not implement %s",
                        algo->name, op);
  return HS_OK;
}

/* Ranks per node of the group when every node holds the same number, else 0;
 * *n_nodes gets the number of nodes. */
static hs_status_t uniform_ranks_per_node(hs_coll_builder_t *b, const int32_t *devices, int32_t n,
                                          int32_t *k, int32_t *n_nodes)
{
  hs_status_t st = hs__builder_tmp(b, 2 * (size_t)n);
  if (st != HS_OK)
    return st;
  int32_t *node = b->tmp, *sorted = b->tmp + n;
  if ((st = hs__coll_nodes(b, devices, n, node)) != HS_OK)
    return st;
  memcpy(sorted, node, (size_t)n * sizeof *sorted);
  sort_i32(sorted, (size_t)n);
  int32_t m = 0, per = -1;
  *k = 0;
  for (int32_t i = 0; i < n;) {
    int32_t j = i;
    while (j < n && sorted[j] == sorted[i])
      j++;
    if (per >= 0 && j - i != per)
      per = 0;
    else if (per < 0)
      per = j - i;
    m++;
    i = j;
  }
  *k = per > 0 ? per : 0;
  *n_nodes = m;
  return HS_OK;
}

static const hs_coll_algo_t *default_algo(hs_coll_builder_t *b, hs_coll_op_t op,
                                          const int32_t *devices, int32_t n)
{
  switch (op) {
  case HS_COLL_P2P:
  case HS_COLL_ALLTOALL:
    return &hs_coll_direct;
  case HS_COLL_ALLREDUCE:
  case HS_COLL_REDUCE_SCATTER:
  case HS_COLL_ALLGATHER: {
    /* NCCL's ring over all ranks, node by node, when the group spans several
     * nodes and some node holds more than one of its ranks; the plain ring
     * otherwise (one node, or one rank per node: the same ring). */
    int32_t k = 0, m = 0;
    hs_error_t *saved = b->err;
    b->err = NULL;
    hs_status_t st = n > 1 && devices ? uniform_ranks_per_node(b, devices, n, &k, &m) : HS_EINVAL;
    b->err = saved;
    if (st == HS_ENOMEM)
      return NULL; /* not a silent fall-back to ring: the choice changes results */
    return st == HS_OK && m > 1 && m < n ? &hs_coll_node_ring : &hs_coll_ring;
  }
  default:
    return &hs_coll_ring;
  }
}

static hs_status_t estimate_with(hs_coll_builder_t *b, const hs_coll_algo_t *algo,
                                 const hs_coll_t *c, double *out_s);

/* NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc, commit
 * b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2, ncclTopoTuneModel and
 * ncclTopoGetAlgoTime) gives Tree, Simple protocol, the bus bandwidth of the
 * same channels as Ring times 0.92, and converts it to algorithm bandwidth
 * with 0.5 where Ring uses nRanks / (2 (nRanks - 1)); for sizes below 256 MiB
 * it also multiplies Tree's bandwidth by treeCorrectionFactor[Simple]
 * [log2(bytes / 64)]. Those are the constants below. */
#define HS_NCCL_TREE_BW_FACTOR 0.92
static double nccl_tree_correction(double bytes)
{
  static const double simple[23] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                    .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};
  if (!(bytes >= 0.0) || bytes >= 0x1p62)
    return 1.0;
  uint64_t v = (uint64_t)bytes >> 6;
  int l = 0;
  while (v >>= 1)
    l++;
  return l < 23 ? simple[l] : 1.0;
}

/* The slowest GPU port on the group's ring paths when every GPU port there
 * is an NVLink SHARP switch port (hs_link_t.nvls, the catalog's "nvls"),
 * else 0. */
double hs_coll_group_nvls_port_GBps(const hs_net_paths_t *ps, const int32_t *d, int32_t n)
{
  double port = INFINITY;
  if (!ps || !ps->path || !d)
    return 0.0;
  for (int32_t i = 0; i < n; i++) {
    hs_path_t p;
    if (ps->path(ps->ctx, d[i], d[(i + 1) % n], &p) != HS_OK)
      return 0.0;
    for (int32_t h = 0; h < p.n; h++) {
      const hs_link_t *l = &ps->links[p.links[h]];
      if (l->kind == HS_LINK_GPU_UP || l->kind == HS_LINK_GPU_DOWN) {
        if (!l->nvls)
          return 0.0;
        port = HS_MIN(port, l->GBps);
      }
    }
  }
  return isfinite(port) ? port : 0.0;
}

bool hs_coll_group_nvls_paths(const hs_net_paths_t *ps, const int32_t *d, int32_t n)
{
  return hs_coll_group_nvls_port_GBps(ps, d, n) > 0.0;
}

/* NCCL's tuner on one node (tuning.cc at b6475625, ncclTopoTuneModel, Hopper
 * index, NVLink hardware latencies; ncclTopoGetAlgoTime: time = latency +
 * bytes / algbw), all-reduce of n ranks, nsteps = 2 (n - 1):
 *   NVLS  (Simple only): latency hwLat 23 us (no base), algbw = 5/6 busBw;
 *   Ring LL:     6.6 + nsteps 0.6 us, busBw min(llMaxBw 87.7, busBw / 4);
 *   Ring LL128: 14.0 + nsteps 1.9 us, busBw 0.92 busBw;
 *   Ring Simple: 8.4 + nsteps 3.4 us, busBw;
 * ring algbw = busBw n / nsteps. busBw (nChannels x per-channel bandwidth of
 * each algorithm's graph) is taken as the GPU port's GBps for both (hetsim
 * has no channels; the LL128 per-channel cap is not modelled). */
bool hs_coll_nvls_preferred(double bytes, int32_t n, double port_GBps)
{
  if (n < 2 || !(port_GBps > 0.0) || !(bytes > 0.0))
    return false;
  double steps = 2.0 * (n - 1), ratio = n / steps, B = port_GBps * HS_GB;
  double t_nvls = 23e-6 + bytes / (B * 5.0 / 6.0);
  double t_ll = (6.6 + steps * 0.6) * 1e-6 + bytes / (HS_MIN(87.7 * HS_GB, B / 4.0) * ratio);
  double t_ll128 = (14.0 + steps * 1.9) * 1e-6 + bytes / (0.92 * B * ratio);
  double t_simple = (8.4 + steps * 3.4) * 1e-6 + bytes / (B * ratio);
  return t_nvls < HS_MIN(t_ll, HS_MIN(t_ll128, t_simple));
}

/* An all-reduce whose default is the plain ring (one node, or one rank per
 * node) runs as nvls when every GPU port of the group is an NVLink SHARP
 * port, the group lies in one node (else nvls refuses and the ring stays),
 * and NCCL's tuner prefers NVLS at this size (hs_coll_nvls_preferred): NCCL
 * enables NVLS on one node of NVLS-capable NVSwitch GPUs (tuning.cc at
 * b6475625, ncclTopoTuneModel: NVLS is disabled only across nodes without
 * CollNet) and runs each call with the algorithm and protocol of least
 * tuner time. As for ring or tree across nodes, the tuner picks and the
 * links decide how long it takes (nvls with its fitted NVLS figures, the
 * ring with the port's). NULL only when out of memory. */
static const hs_coll_algo_t *choose_nvls(hs_coll_builder_t *b, const hs_coll_t *c)
{
  hs_error_t *saved = b->err;
  b->err = NULL;
  hs_status_t st = coll_validate(b, c, &hs_coll_ring);
  b->err = saved;
  if (st == HS_ENOMEM)
    return NULL;
  double port = st == HS_OK ? hs_coll_group_nvls_port_GBps(b->paths, c->devices, c->n) : 0.0;
  if (!hs_coll_nvls_preferred(c->bytes, c->n, port))
    return &hs_coll_ring; /* its own validation reports a bad group */
  b->err = NULL;
  double t_nvls = NAN;
  st = estimate_with(b, &hs_coll_nvls, c, &t_nvls);
  b->err = saved;
  if (st == HS_ENOMEM)
    return NULL;
  return st == HS_OK ? &hs_coll_nvls : &hs_coll_ring;
}

/* The size-aware choice (hs_coll_algo_choose_paths): an all-reduce whose
 * default is node_ring may run node_tree instead.
 * - Nodes without NVLink SHARP (A100, any node whose GPU ports lack "nvls"):
 *   as NCCL's tuner decides between Tree and Ring: the tree is chosen when
 *   its latency plus the ring's bandwidth term rescaled to the tuner's tree
 *   bandwidth, L_tree + X_ring n / ((n - 1) 0.92 c(S)), is strictly smaller
 *   than the ring's time. Latencies and X_ring are this model's closed forms
 *   (estimate_s at S and S/2: one phase, linear in S). The tuner never prefers
 *   Tree's bandwidth (2 / 0.92 > 2 (n - 1) / n), so the tree wins only on
 *   latency, at small and medium sizes.
 * - Every GPU port NVLS (H100 NVSwitch): NCCL's tuner chooses among Ring,
 *   Tree and NVLS-Tree; the fastest closed form of node_ring, node_tree and
 *   nvls_tree wins (ties to the earlier; nvls_tree where it applies: the
 *   same number of ranks on every node, at least 2; coll_nvls_tree.c).
 * An estimate that fails (bad input) leaves the default, whose own
 * validation then reports the error; NULL only when out of memory. */
static const hs_coll_algo_t *choose_algo(hs_coll_builder_t *b, const hs_coll_t *c)
{
  const hs_coll_algo_t *a = default_algo(b, c->op, c->devices, c->n);
  if (a == &hs_coll_ring && c->op == HS_COLL_ALLREDUCE)
    return choose_nvls(b, c);
  if (a != &hs_coll_node_ring || c->op != HS_COLL_ALLREDUCE)
    return a;
  hs_error_t *saved = b->err;
  b->err = NULL;
  double t_ring = NAN, t_tree = NAN, t_ring_h = NAN, t_tree_h = NAN;
  bool nvls = hs_coll_group_nvls_paths(b->paths, c->devices, c->n);
  hs_status_t st = estimate_with(b, &hs_coll_node_ring, c, &t_ring);
  if (st == HS_OK)
    st = estimate_with(b, &hs_coll_node_tree, c, &t_tree);
  if (st == HS_OK && !nvls) {
    hs_coll_t c2 = *c;
    c2.bytes = 0.5 * c->bytes;
    st = estimate_with(b, &hs_coll_node_ring, &c2, &t_ring_h);
    if (st == HS_OK)
      st = estimate_with(b, &hs_coll_node_tree, &c2, &t_tree_h);
  }
  b->err = saved;
  if (st == HS_ENOMEM)
    return NULL;
  if (st != HS_OK)
    return a;
  double x_ring = nvls ? 0.0 : 2.0 * (t_ring - t_ring_h);
  double l_tree = nvls ? 0.0 : 2.0 * t_tree_h - t_tree;
  const hs_coll_algo_t *pick =
      hs_coll_tree_preferred(t_ring, x_ring, t_tree, l_tree, c->n, nvls, c->bytes) ? &hs_coll_node_tree : a;
  if (nvls) {
    double t_nt = NAN;
    b->err = NULL;
    st = estimate_with(b, &hs_coll_nvls_tree, c, &t_nt);
    b->err = saved;
    if (st == HS_ENOMEM)
      return NULL;
    if (st == HS_OK && t_nt < fmin(t_ring, t_tree))
      pick = &hs_coll_nvls_tree;
  }
  return pick;
}

bool hs_coll_tree_preferred(double t_ring_s, double x_ring_s, double t_tree_s, double l_tree_s,
                            int32_t n, bool nvls, double bytes)
{
  if (nvls)
    return t_tree_s < t_ring_s;
  double nr = (double)n;
  double t_tuner = l_tree_s + x_ring_s * nr / ((nr - 1.0) * HS_NCCL_TREE_BW_FACTOR *
                                               nccl_tree_correction(bytes));
  return t_tuner < t_ring_s;
}

const hs_coll_algo_t *hs_coll_algo_choose_paths(const hs_net_paths_t *paths, const hs_coll_t *c)
{
  if (!paths || !c)
    return NULL;
  hs_coll_builder_t b;
  hs__builder_init(&b, paths, NULL);
  const hs_coll_algo_t *a = choose_algo(&b, c);
  hs__builder_destroy(&b);
  return a;
}

const hs_coll_algo_t *hs_coll_algo_default_paths(const hs_net_paths_t *paths, hs_coll_op_t op,
                                                 const int32_t *devices, int32_t n)
{
  hs_coll_builder_t b;
  hs__builder_init(&b, paths, NULL);
  const hs_coll_algo_t *a = default_algo(&b, op, devices, n);
  hs__builder_destroy(&b);
  return a;
}

/* ---- uncontended evaluation (estimates) ----------------------------------- */

static int32_t find_link(const int32_t *ids, int32_t n, int32_t link)
{
  int32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (ids[mid] < link)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Seconds the phase's flows take alone on the network: for one flow,
 * bytes x max over links of weight / capacity; for several, the fluid
 * max-min evolution (re-solve at each completion). */
static hs_status_t phase_transfer_s(const hs_coll_builder_t *b, double *out_s)
{
  const hs_net_paths_t *ps = b->paths;
  *out_s = 0.0;
  if (b->n_flows == 1) {
    double worst = 0.0;
    for (int32_t h = b->flow_off[0]; h < b->flow_off[1]; h++) {
      double g = ps->links[b->hops[h].link].GBps;
      if (g > 0.0 && g < INFINITY)
        worst = fmax(worst, (double)b->hops[h].weight / (g * HS_GB));
    }
    *out_s = b->bytes[0] < HS_NET_EPS_BYTES ? 0.0 : b->bytes[0] * worst;
    return HS_OK;
  }
  if (b->n_flows == 0)
    return HS_OK;
  hs_status_t st = HS_OK;
  int32_t nf = b->n_flows, nh = (int32_t)b->n_hops;
  int32_t *ids = hs_calloc((size_t)nh, sizeof *ids);
  int32_t *off = hs_calloc((size_t)nf + 1, sizeof *off);
  hs_flow_hop_t *hops = hs_calloc((size_t)nh, sizeof *hops);
  double *cap = hs_calloc((size_t)nh, sizeof *cap);
  double *rem = hs_calloc((size_t)nf, sizeof *rem);
  double *rate = hs_calloc((size_t)nf, sizeof *rate);
  int32_t *live = hs_calloc((size_t)nf, sizeof *live);
  hs_maxmin_t mm;
  hs_maxmin_init(&mm);
  if (!ids || !off || !hops || !cap || !rem || !rate || !live)
    HS_FAIL(HS_ENOMEM);
  for (int32_t h = 0; h < nh; h++)
    ids[h] = b->hops[h].link;
  sort_i32(ids, (size_t)nh);
  int32_t nl = 0;
  for (int32_t h = 0; h < nh; h++)
    if (nl == 0 || ids[nl - 1] != ids[h])
      ids[nl++] = ids[h];
  for (int32_t l = 0; l < nl; l++) {
    double g = ps->links[ids[l]].GBps;
    cap[l] = g > 0.0 && g < INFINITY ? g * HS_GB : INFINITY;
  }
  int32_t n_live = 0;
  for (int32_t f = 0; f < nf; f++)
    if (b->bytes[f] >= HS_NET_EPS_BYTES) {
      rem[n_live] = b->bytes[f];
      live[n_live++] = f;
    }
  double t = 0.0;
  while (n_live > 0) {
    int32_t k = 0;
    for (int32_t i = 0; i < n_live; i++) {
      int32_t f = live[i];
      off[i] = k;
      for (int32_t h = b->flow_off[f]; h < b->flow_off[f + 1]; h++)
        hops[k++] = (hs_flow_hop_t){find_link(ids, nl, b->hops[h].link), b->hops[h].weight};
    }
    off[n_live] = k;
    HS_CHECK(hs_maxmin_solve(&mm, n_live, off, hops, nl, cap, rate));
    double dt = INFINITY;
    for (int32_t i = 0; i < n_live; i++)
      dt = fmin(dt, rate[i] == INFINITY ? 0.0 : rem[i] / rate[i]);
    t += dt;
    int32_t w = 0;
    for (int32_t i = 0; i < n_live; i++) {
      double r = rem[i] - (rate[i] == INFINITY ? rem[i] : rate[i] * dt);
      if (r >= HS_NET_EPS_BYTES && rate[i] != INFINITY && rem[i] / rate[i] > dt) {
        rem[w] = r;
        live[w++] = live[i];
      }
    }
    n_live = w;
  }
  *out_s = t;
cleanup:
  hs_free(ids);
  hs_free(off);
  hs_free(hops);
  hs_free(cap);
  hs_free(rem);
  hs_free(rate);
  hs_free(live);
  hs_maxmin_destroy(&mm);
  return st;
}

static hs_status_t estimate_with(hs_coll_builder_t *b, const hs_coll_algo_t *algo,
                                 const hs_coll_t *c, double *out_s)
{
  hs_status_t st = coll_validate(b, c, algo);
  double total_ns = 0.0;
  b->size_bytes = c->bytes;
  for (int32_t phase = 0; st == HS_OK; phase++) {
    bool has = false;
    hs__builder_reset(b);
    HS_CHECK(algo->build_phase(b, c, phase, &has));
    if (!has)
      break;
    HS_CHECK(hs__builder_close(b));
    double s = 0.0;
    HS_CHECK(phase_transfer_s(b, &s));
    total_ns += b->latency_ns + s * 1e9;
  }
  *out_s = total_ns * 1e-9;
cleanup:
  return st;
}

hs_status_t hs_coll_estimate_paths(const hs_net_paths_t *paths, const hs_coll_t *c,
                                   double *out_s, hs_error_t *err)
{
  if (!paths || !c || !out_s)
    return hs_error_set(err, HS_EINVAL, "coll: NULL argument");
  *out_s = NAN;
  hs_coll_builder_t b;
  hs__builder_init(&b, paths, err);
  const hs_coll_algo_t *algo = c->algo ? c->algo : choose_algo(&b, c);
  double s = NAN;
  hs_status_t st = algo ? estimate_with(&b, algo, c, &s)
                        : hs_error_set(err, HS_ENOMEM, "coll: out of memory choosing the algorithm");
  hs__builder_destroy(&b);
  if (st == HS_OK)
    *out_s = s;
  return st;
}

double hs__coll_estimate(const hs_coll_algo_t *algo, const hs_net_paths_t *paths,
                         const hs_coll_t *c)
{
  hs_coll_builder_t b;
  hs__builder_init(&b, paths, NULL);
  double s = NAN;
  hs_status_t st = estimate_with(&b, algo, c, &s);
  hs__builder_destroy(&b);
  return st == HS_OK ? s : NAN;
}

/* ---- a network's collective state ------------------------------------------ */

struct hs__colls {
  hs__pool_t pool;            /* phase hops and large flow arrays */
  hs_coll_builder_t builder;  /* shared by every phase of every collective */
  hs__coll_memo_t *memo;      /* NULL: none (paths that may change) */
  hs_coll_t **live;           /* live collectives (swap-remove by c->slot) */
  size_t n_live, cap_live;
};

hs_status_t hs__colls_new(const hs_net_paths_t *paths, hs__colls_t **out)
{
  hs__colls_t *cs = hs_calloc(1, sizeof *cs);
  *out = cs;
  if (!cs)
    return HS_ENOMEM;
  hs__builder_init(&cs->builder, paths, NULL);
  return HS_OK;
}

void hs__colls_enable_memo(hs__colls_t *cs)
{
  if (cs && !cs->memo)
    cs->memo = hs__coll_memo_new(); /* NULL (out of memory): run without */
}

void hs__colls_disable_memo(hs__colls_t *cs)
{
  if (!cs)
    return;
  hs__coll_memo_free(cs->memo);
  cs->memo = NULL;
}

size_t hs__colls_memo_entries(const hs__colls_t *cs)
{
  return cs ? hs__coll_memo_entries(cs->memo) : 0;
}

uint64_t hs__colls_memo_hits(const hs__colls_t *cs)
{
  return cs ? hs__coll_memo_hits(cs->memo) : 0;
}

uint64_t hs__colls_memo_hint_hits(const hs__colls_t *cs)
{
  return cs ? hs__coll_memo_hint_hits(cs->memo) : 0;
}

void hs__colls_free(hs__colls_t *cs, hs_engine_t *eng)
{
  if (!cs)
    return;
  for (size_t i = 0; eng && i < cs->n_live; i++)
    hs_engine_cancel(eng, &cs->live[i]->ev);
  hs_free(cs->live);
  hs__coll_memo_free(cs->memo);
  hs__builder_destroy(&cs->builder);
  hs__pool_destroy(&cs->pool);
  hs_free(cs);
}

static void colls_slot_free(void *state, hs_engine_t *eng) { hs__colls_free(state, eng); }

static void colls_slot_paths_changed(void *state) { hs__colls_disable_memo(state); }

static const hs__net_slot_ops_t colls_slot_ops = {colls_slot_free, colls_slot_paths_changed};

/* The collective state of net, made at its first collective (memoising
 * when the network's paths are fixed); NULL when out of memory. */
static hs__colls_t *net_colls_get(hs_net_t *net)
{
  hs__colls_t *cs = hs__net_colls(net);
  if (cs)
    return cs;
  if (hs__colls_new(hs_net_paths(net), &cs) != HS_OK)
    return NULL;
  if (hs__net_paths_fixed(net))
    hs__colls_enable_memo(cs);
  hs__net_set_colls(net, cs, &colls_slot_ops);
  return cs;
}

/* Releases c's blocks and takes it off the live list. */
static void coll_retire(hs__colls_t *cs, hs_coll_t *c)
{
  hs__pool_release(&cs->pool, c->hops);
  hs__pool_release(&cs->pool, c->xflows);
  c->hops = NULL;
  c->n_hops_cap = 0;
  c->xflows = NULL;
  c->n_xflows_cap = 0;
  size_t s = (size_t)c->slot;
  cs->live[s] = cs->live[--cs->n_live];
  cs->live[s]->slot = (int32_t)s;
  c->slot = -1;
}

/* ---- the phase driver ------------------------------------------------------ */

static inline hs_flow_t *coll_flow(hs_coll_t *c, int32_t i)
{
  return c->n_flows <= HS_COLL_MAX_FLOWS ? &c->flows[i] : &c->xflows[i];
}

static void coll_finish(hs_net_t *net, hs_coll_t *c)
{
  c->t_end = hs__net_engine(net)->now;
  coll_retire(hs__net_colls(net), c);
  if (c->done)
    c->done(c);
}

static void coll_finish_ev(hs_engine_t *eng, hs_event_t *ev)
{
  hs_coll_t *c = HS_CONTAINER_OF(ev, hs_coll_t, ev);
  coll_finish(c->net, c);
}

static void coll_flow_done(hs_net_t *net, hs_flow_t *f);
static hs_status_t phase_begin(hs_net_t *net, hs_coll_t *c, bool *finished);

static hs_status_t start_flows(hs_net_t *net, hs_coll_t *c)
{
  for (int32_t i = 0; i < c->n_flows; i++) {
    hs_status_t st = hs_net_flow_start(net, coll_flow(c, i));
    if (st != HS_OK)
      return st;
    c->n_flows_live++;
  }
  return HS_OK;
}

/* In event context: the current phase is over; start the next or finish. */
static void coll_advance(hs_net_t *net, hs_coll_t *c)
{
  bool finished = false;
  c->phase++;
  hs_status_t st = phase_begin(net, c, &finished);
  if (st != HS_OK) {
    hs_engine_fail(hs__net_engine(net), st);
    return;
  }
  if (finished)
    coll_finish(net, c);
}

static void coll_flow_done(hs_net_t *net, hs_flow_t *f)
{
  hs_coll_t *c = f->ctx;
  if (--c->n_flows_live == 0)
    coll_advance(net, c);
}

static void coll_latency_done(hs_engine_t *eng, hs_event_t *ev)
{
  hs_coll_t *c = HS_CONTAINER_OF(ev, hs_coll_t, ev);
  hs_status_t st = start_flows(c->net, c);
  if (st != HS_OK)
    hs_engine_fail(eng, st);
  else if (c->n_flows == 0)
    coll_advance(c->net, c);
}

/* Builds phase c->phase (skipping empty ones) and starts it: the latency
 * wait, or the flows at once when there is none. *finished when c has no
 * phase left. Never calls c->done. */
static hs_status_t phase_begin(hs_net_t *net, hs_coll_t *c, bool *finished)
{
  hs_status_t st = HS_OK;
  hs__colls_t *cs = hs__net_colls(net);
  hs_coll_builder_t *b = &cs->builder;
  hs__coll_phase_t p; /* the phase: in the memo, or in the builder */
  *finished = false;
  for (;;) {
    bool has = false;
    if (!hs__coll_memo_get_phase(cs->memo, c->run_algo, c, c->phase, &p, &has)) {
      hs__builder_reset(b);
      b->size_bytes = c->bytes;
      HS_CHECK(c->run_algo->build_phase(b, c, c->phase, &has));
      if (has)
        HS_CHECK(hs__builder_close(b));
      hs__coll_memo_put_phase(cs->memo, c->run_algo, c, c->phase, b, has);
      p = (hs__coll_phase_t){b->latency_ns, b->n_flows, b->bytes, b->flow_off, b->hops, b->n_hops};
    }
    if (!has) {
      *finished = true;
      return HS_OK;
    }
    if (p.n_flows > 0 || llround(p.latency_ns) > 0)
      break;
    c->phase++;
  }
  size_t need = p.n_hops * sizeof *c->hops;
  if (need > hs__pool_block_size(c->hops)) {
    hs__pool_release(&cs->pool, c->hops);
    c->hops = hs__pool_alloc(&cs->pool, need);
    if (!c->hops)
      HS_FAIL(HS_ENOMEM);
    c->n_hops_cap = (int32_t)(hs__pool_block_size(c->hops) / sizeof *c->hops);
  }
  if (p.n_hops)
    memcpy(c->hops, p.hops, need);
  if (p.n_flows > HS_COLL_MAX_FLOWS && p.n_flows > c->n_xflows_cap) {
    hs__pool_release(&cs->pool, c->xflows);
    c->xflows = hs__pool_alloc(&cs->pool, (size_t)p.n_flows * sizeof *c->xflows);
    if (!c->xflows)
      HS_FAIL(HS_ENOMEM);
    c->n_xflows_cap = (int32_t)(hs__pool_block_size(c->xflows) / sizeof *c->xflows);
  }
  c->n_flows = p.n_flows;
  c->n_flows_live = 0;
  for (int32_t i = 0; i < p.n_flows; i++) {
    hs_flow_t *f = coll_flow(c, i);
    hs_flow_init(f);
    f->bytes = p.bytes[i];
    f->hops = c->hops + p.flow_off[i];
    f->n_hops = p.flow_off[i + 1] - p.flow_off[i];
    f->done = coll_flow_done;
    f->ctx = c;
  }
  hs_time_t lat = p.latency_ns > 0.0 ? hs_time_from_s(p.latency_ns * 1e-9) : 0;
  if (lat > 0) {
    hs_event_init(&c->ev, coll_latency_done);
    HS_CHECK(hs_engine_after(hs__net_engine(net), &c->ev, lat, HS_NET_PRIO_FLOW));
  } else {
    HS_CHECK(start_flows(net, c));
  }
cleanup:
  return st;
}

hs_status_t hs__coll_run(hs_net_t *net, hs_coll_t *c)
{
  bool finished = false;
  c->phase = 0;
  hs_status_t st = phase_begin(net, c, &finished);
  if (st == HS_OK && finished) {
    hs_event_init(&c->ev, coll_finish_ev);
    hs_engine_t *eng = hs__net_engine(net);
    st = hs_engine_schedule(eng, &c->ev, eng->now, HS_NET_PRIO_FLOW);
  }
  return st;
}

hs_status_t hs_coll_start(hs_net_t *net, hs_coll_t *c, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  if (!net || !c)
    return hs_error_set(err, HS_EINVAL, "coll: NULL argument");
  hs__colls_t *cs = net_colls_get(net);
  if (!cs)
    return hs_error_set(err, HS_ENOMEM, "coll: out of memory");
  hs_engine_t *eng = hs__net_engine(net);
  hs_coll_builder_t *b = &cs->builder;
  b->err = err;
  c->run_algo = c->algo;
  c->memo_devs = SIZE_MAX;
  c->memo_last = SIZE_MAX;
  c->memo_choice = 0;
  if (c->algo || !hs__coll_memo_take_hint(cs->memo, c))
    c->memo_hash = hs__coll_memo_hash(cs->memo, c);
  bool checked = false; /* the memo says c passed coll_validate with run_algo */
  if (!c->run_algo) {
    if (!hs__coll_memo_get_algo(cs->memo, c, &c->run_algo, &checked)) {
      c->run_algo = choose_algo(b, c);
      hs__coll_memo_put_algo(cs->memo, c, c->run_algo);
    }
    c->memo_choice = hs__coll_memo_choice(cs->memo, c);
  }
  if (!c->run_algo)
    return hs_error_set(err, HS_ENOMEM, "coll: out of memory choosing the algorithm");
  if (!checked) {
    HS_CHECK(coll_validate(b, c, c->run_algo));
    if (!c->algo)
      hs__coll_memo_set_checked(cs->memo, c);
  }
  HS_CHECK(hs_reserve((void **)&cs->live, &cs->cap_live, cs->n_live + 1, sizeof *cs->live));
  c->net = net;
  c->t_start = eng->now;
  c->t_end = 0;
  c->hops = NULL;
  c->n_hops_cap = 0;
  c->xflows = NULL;
  c->n_xflows_cap = 0;
  c->n_flows = 0;
  c->n_flows_live = 0;
  hs_event_init(&c->ev, NULL);
  c->slot = (int32_t)cs->n_live;
  cs->live[cs->n_live++] = c;
  st = c->run_algo->start(net, c);
  if (st != HS_OK && c->n_flows_live == 0 && !hs_event_pending(&c->ev))
    coll_retire(cs, c); /* nothing in flight: undo */
  else if (st != HS_OK)
    hs_engine_fail(eng, st);
cleanup:
  b->err = NULL;
  return st;
}
