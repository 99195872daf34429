/*
 * net_impl.h - private to the network and collective files of sim/ (net.c,
 * net_topo.c, collective.c, coll_*.c): the network's state, its block pool
 * and the phase builder the collective algorithms describe phases into.
 */
#ifndef HS_NET_IMPL_H
#define HS_NET_IMPL_H

#include "hs_net.h"

/* ---- block pool ----------------------------------------------------------
 * Power-of-two size classes with a free list each; blocks are malloc'd once
 * and never move, so pointers into them stay valid (flow hop arrays point
 * into collective blocks). Steady state: alloc and release are O(1) pops and
 * pushes; hs__pool_destroy frees every block. */
typedef struct hs__pool {
  void *free_list[48];
  void *all;
} hs__pool_t;

/* A block of at least `bytes` (16-byte aligned); NULL when out of memory. */
void *hs__pool_alloc(hs__pool_t *p, size_t bytes);
/* Usable size of a block from hs__pool_alloc. */
size_t hs__pool_block_size(const void *mem);
void hs__pool_release(hs__pool_t *p, void *mem); /* NULL ok */
void hs__pool_destroy(hs__pool_t *p);

/* ---- phase builder -------------------------------------------------------
 * An algorithm describes one phase as a latency wait and up to any number of
 * coupled flows, each a multiset of device-to-device paths; the builder
 * merges each flow's links into (link, weight) hops, sorted by link. */
struct hs_coll_builder {
  const hs_net_paths_t *paths;
  hs_error_t *err;            /* may be NULL */
  double latency_ns;          /* set by the algorithm */
  int32_t n_flows;
  double *bytes;              /* per flow */
  int32_t *flow_off;          /* n_flows + 1 into hops */
  hs_flow_hop_t *hops;
  size_t n_hops;
  int32_t *raw;               /* links of the open flow, unmerged */
  size_t n_raw;
  size_t cap_flows, cap_off, cap_hops, cap_raw;
  int32_t *tmp;               /* scratch for algorithms (node layout) */
  size_t cap_tmp;
  bool open;
};

void hs__builder_init(hs_coll_builder_t *b, const hs_net_paths_t *paths, hs_error_t *err);
void hs__builder_destroy(hs_coll_builder_t *b);
/* Empties b for the next phase. O(1). */
void hs__builder_reset(hs_coll_builder_t *b);
/* Opens a new coupled flow of `bytes` per sub-flow. */
hs_status_t hs__builder_flow(hs_coll_builder_t *b, double bytes);
/* Adds the path a -> d to the open flow; *lat_ns (may be NULL) gets its
 * latency. Errors name the devices. O(path length). */
hs_status_t hs__builder_path(hs_coll_builder_t *b, int32_t a, int32_t d, double *lat_ns);
/* Closes the open flow (merging its links). Called by hs__builder_flow and
 * before the phase is used. O(k log k) for k raw links. */
hs_status_t hs__builder_close(hs_coll_builder_t *b);
/* Scratch of n int32 in b->tmp. */
hs_status_t hs__builder_tmp(hs_coll_builder_t *b, size_t n);
/* Latency of the path a -> d (ns). */
hs_status_t hs__builder_latency(hs_coll_builder_t *b, int32_t a, int32_t d, double *lat_ns);

/* Node index of every device of c into out[0..n) (in the builder's path
 * source's terms; see hs_net_paths_t.node_of). O(n) path queries. */
hs_status_t hs__coll_nodes(hs_coll_builder_t *b, const int32_t *devices, int32_t n,
                           int32_t *out);

/* Generic pieces every algorithm's type object uses. */
hs_status_t hs__coll_run(hs_net_t *net, hs_coll_t *c);
double hs__coll_estimate(const hs_coll_algo_t *algo, const hs_net_paths_t *paths,
                         const hs_coll_t *c);

extern const hs_coll_algo_t hs_coll_ring;
extern const hs_coll_algo_t hs_coll_tree;
extern const hs_coll_algo_t hs_coll_hier;
extern const hs_coll_algo_t hs_coll_direct;

/* ---- the network ---------------------------------------------------------- */

typedef struct hs__member {
  hs_flow_t *f;
  int32_t hop;                /* index into f->hops */
} hs__member_t;

typedef struct hs__link {
  double cap_Bps;             /* +inf when unconstrained */
  uint64_t mark;              /* component search epoch */
  hs__member_t *m;            /* flows on the link, any order */
  int32_t n, cap;
  int32_t local;              /* index in the component being solved */
  bool finite;
  bool dirty;                 /* in net->dirty */
  hs_time_t busy_since;
} hs__link_t;

struct hs_net {
  hs_engine_t *eng;
  const hs_topology_t *topo;
  hs_link_t *links_own;       /* hs_net_new_links copy */
  const hs_link_t *links;
  size_t n_links;
  hs_net_paths_t paths;
  hs__link_t *lk;
  hs_link_stats_t *stats;
  /* active flows (swap-remove by f->slot) */
  hs_flow_t **active;
  size_t n_active, cap_active;
  size_t active_hops;         /* hops of the flows on links */
  /* reserved sizes of the update buffers below */
  size_t res_flows, res_hops;
  int32_t *dirty;             /* links touched since the last update (<= n_links) */
  size_t n_dirty;
  int32_t *comp_links;        /* component: links (<= n_links) */
  hs_flow_t **comp_flows;     /* component: flows (<= res_flows) */
  int32_t *csr_off;           /* res_flows + 1 */
  hs_flow_hop_t *csr_hops;    /* res_hops */
  double *csr_cap;            /* n_links */
  double *rates;              /* res_flows */
  hs_maxmin_t mm;
  hs_event_t upd_ev;
  uint64_t epoch;
  uint64_t n_updates;
  hs__pool_t pool;
  hs_coll_builder_t builder;
  hs_coll_t **colls;          /* live collectives (swap-remove by c->slot) */
  size_t n_colls, cap_colls;
  hs_net_observer_fn observer; /* traces; NULL = none */
  void *observer_ctx;
};

/* Shared constructor tail: links (borrowed or owned) are set; builds the rest. */
hs_status_t hs__net_init_links(hs_net_t *net);

#endif /* HS_NET_IMPL_H */
