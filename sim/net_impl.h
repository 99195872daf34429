/*
 * net_impl.h - private to the network files of sim/ (net.c, net_topo.c):
 * the network's state. The collective layer sees none of it (coll_impl.h);
 * the network holds the collectives' state as an opaque slot (net_seam.h)
 * and includes nothing of the collective layer.
 */
#ifndef HS_NET_IMPL_H
#define HS_NET_IMPL_H

#include "hs_net.h"
#include "net_seam.h"
#include "pool.h"

/* ---- the network ---------------------------------------------------------- */

typedef struct hs__member {
  hs_flow_t *f;
  int32_t hop;                /* index into f->hops */
} hs__member_t;

/* 64 bytes, 64-byte aligned: a link a flow crosses costs one cache line,
 * its member table included while it carries one flow (most links). */
typedef struct hs__link {
  double cap_Bps;             /* +inf when unconstrained */
  uint64_t mark;              /* component search epoch */
  hs__member_t *mx;           /* members 1 .. n - 1 (heap array); NULL until two share it */
  int32_t n, cap;             /* members, and how many fit (1 + mx's length) */
  int32_t local;              /* index in the component being solved; -1 when left out
                                 of it, and always on an unconstrained link */
  bool finite;
  bool dirty;                 /* in net->dirty */
  bool used;                  /* some flow has sat on it: its stats' max_flows is at least 1
                                 (counted there only from 2 on, so that a flow start alone
                                 on a link does not touch the stats array: it is another
                                 cache line, a miss per hop at 100,000 GPUs) */
  hs_time_t busy_since;
  hs__member_t m0;            /* member 0: a flow alone on the link touches this line only */
} hs__link_t;

_Static_assert(sizeof(hs__link_t) == 64, "a link is one cache line");

/* Member i of lk's table (any order; i < lk->n). Member 0 stays inline even
 * once the link has held several flows, so a flow that finds the link empty
 * touches no second cache line (at 100,000 GPUs that line was a miss per
 * hop: the links of inter-node rings hold two flows now and then). */
static inline hs__member_t *hs__link_member(hs__link_t *lk, int32_t i)
{
  return i == 0 ? &lk->m0 : &lk->mx[i - 1];
}

struct hs_net {
  hs_engine_t *eng;
  const hs_topology_t *topo;
  hs_link_t *links_own;       /* hs_net_new_links copy */
  const hs_link_t *links;
  size_t n_links;
  hs_net_paths_t paths;
  hs__link_t *lk;             /* n_links, 64-byte aligned in lk_mem */
  void *lk_mem;
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
  void *colls;                /* the collective layer's state (collective.c's); NULL: none yet */
  const hs__net_slot_ops_t *colls_ops; /* its hooks */
  bool paths_fixed;           /* a const topology's paths (hs_net_new) */
  hs_net_observer_fn observer; /* traces; NULL = none */
  void *observer_ctx;
};

/* Shared constructor tail: links (borrowed or owned) are set; builds the rest. */
hs_status_t hs__net_init_links(hs_net_t *net);

#endif /* HS_NET_IMPL_H */
