/*
 * hs_net.h - flow-level network model and collectives.
 *
 * Flows. A flow moves `bytes` over a set of directed links (hs_link_t from the
 * topology). Concurrent flows share every link max-min fairly; a flow may use
 * a link with an integer weight w (it consumes w x its rate there). Rates are
 * recomputed when a flow starts or ends, only over the flows connected to the
 * change through shared links (incremental max-min; the solver sits in
 * maxmin.c). A flow's completion is an engine event, rescheduled whenever its
 * rate changes.
 *
 * Coupled flows. A collective step in which n ranks each send the same number
 * of bytes to a peer (a ring step, a tree level, an all-to-all) is one flow
 * whose link set is the union of the n sub-flow paths, each link weighted by
 * how many sub-flows cross it. Its rate is that of its slowest sub-flow, which
 * is what synchronised collectives achieve, and without contention its time
 * is exactly max over links of (w * bytes / capacity): the textbook formulas.
 *
 * Latency. Per-hop latency is not bandwidth: the collective layer waits the
 * algorithm's latency term (steps x path latency) before starting its flows.
 */
#ifndef HS_NET_H
#define HS_NET_H

#include "hs_clusters.h"
#include "hs_engine.h"

typedef struct hs_net hs_net_t;
typedef struct hs_flow hs_flow_t;

typedef void (*hs_flow_done_fn)(hs_net_t *net, hs_flow_t *f);

/* One (link, weight) pair of a flow. */
typedef struct hs_flow_hop {
  int32_t link;
  int32_t weight;
} hs_flow_hop_t;

/* Caller-owned flow. Fill the public part, then hs_net_flow_start(). The
 * hops array must stay valid until `done` is called. */
struct hs_flow {
  /* public, set by the caller */
  double bytes;               /* bytes per sub-flow */
  const hs_flow_hop_t *hops;
  int32_t n_hops;
  hs_flow_done_fn done;       /* called once, from an engine event, at completion */
  void *ctx;
  /* results */
  hs_time_t t_start, t_end;
  /* private to the network */
  double remaining;
  double rate_Bps;            /* per sub-flow */
  hs_time_t t_last;
  hs_event_t ev;
  int32_t slot;               /* index in the network's active table */
  uint64_t mark;
  hs_net_t *net;
};

/* Per-link counters for reports. */
typedef struct hs_link_stats {
  double bytes;       /* bytes carried (weights counted) */
  hs_time_t busy_ns;  /* time with at least one active flow */
  int32_t max_flows;  /* most concurrent flows seen */
} hs_link_stats_t;

/* The network borrows `eng` and `topo` (both must outlive it). */
hs_status_t hs_net_new(hs_engine_t *eng, const hs_topology_t *topo, hs_net_t **out);
void hs_net_free(hs_net_t *net);
/* Starts f now. Zero bytes or no hops complete at the current time (through
 * an event, never re-entrantly). Amortised O(flows and links of the affected
 * component). */
hs_status_t hs_net_flow_start(hs_net_t *net, hs_flow_t *f);
const hs_link_stats_t *hs_net_link_stats(const hs_net_t *net);
hs_engine_t *hs_net_engine(hs_net_t *net);
const hs_topology_t *hs_net_topology(const hs_net_t *net);
size_t hs_net_active_flows(const hs_net_t *net);
uint64_t hs_net_rate_updates(const hs_net_t *net); /* max-min recomputations done */

/* ---- collectives -------------------------------------------------------- */

typedef enum {
  HS_COLL_P2P,                /* devices[0] -> devices[1], bytes */
  HS_COLL_ALLREDUCE,          /* bytes = buffer size on each rank */
  HS_COLL_REDUCE_SCATTER,     /* bytes = input buffer size on each rank */
  HS_COLL_ALLGATHER,          /* bytes = output buffer size on each rank */
  HS_COLL_BROADCAST,          /* bytes from devices[0] to all */
  HS_COLL_ALLTOALL,           /* bytes = what each rank sends in total (bytes/n to each peer) */
  HS_COLL_PADDED_ALLGATHER,   /* HAP: shards of unequal `shares`, padded to the largest */
  HS_COLL_GROUPED_BROADCAST,  /* HAP: one broadcast per rank of its own shard, one group call */
  HS_COLL__COUNT
} hs_coll_op_t;

const char *hs_coll_op_name(hs_coll_op_t op);

typedef struct hs_coll hs_coll_t;

/* A collective algorithm: decomposes an operation into phases of coupled
 * flows and gives the matching closed-form time. Type objects in one table. */
typedef struct hs_coll_algo {
  const char *name;          /* "ring", "tree", "hierarchical", "direct" */
  const char *description;
  /* True when this algorithm implements `op`. */
  bool (*supports)(hs_coll_op_t op);
  /* Uncontended time in seconds (the analytical fast path). */
  double (*estimate_s)(const hs_topology_t *topo, const hs_coll_t *c);
  /* Starts the first phase; the collective layer calls back as phases end. */
  hs_status_t (*start)(hs_net_t *net, hs_coll_t *c);
} hs_coll_algo_t;

extern const hs_coll_algo_t *const hs_coll_algos[]; /* NULL-terminated */
const hs_coll_algo_t *hs_coll_algo_find(const char *name);
/* NCCL-like default choice for op and group (ring inside a node, hierarchical
 * across nodes for all-reduce, direct for p2p and all-to-all). */
const hs_coll_algo_t *hs_coll_algo_default(const hs_topology_t *topo, hs_coll_op_t op,
                                           const int32_t *devices, int32_t n);

typedef void (*hs_coll_done_fn)(hs_coll_t *c);

#define HS_COLL_MAX_FLOWS 4

/* Caller-owned collective. devices (ring order) and shares must stay valid
 * until done. */
struct hs_coll {
  /* public */
  hs_coll_op_t op;
  const hs_coll_algo_t *algo;   /* NULL = hs_coll_algo_default */
  const int32_t *devices;
  int32_t n;
  double bytes;
  const double *shares;         /* PADDED_ALLGATHER / GROUPED_BROADCAST: n shares summing to 1 */
  hs_coll_done_fn done;
  void *ctx;
  hs_time_t t_start, t_end;     /* results */
  /* private */
  int32_t phase;
  int32_t n_flows_live;
  hs_flow_t flows[HS_COLL_MAX_FLOWS];
  hs_flow_hop_t *hops;          /* owned by the network's arena */
  int32_t n_hops_cap;
  hs_event_t ev;                /* latency waits */
  hs_net_t *net;
};

/* Validates and starts c at the current time. Errors (bad group, duplicate
 * devices, shares not summing to 1, unsupported op for algo) name the field. */
hs_status_t hs_coll_start(hs_net_t *net, hs_coll_t *c, hs_error_t *err);
/* Analytical uncontended time (seconds) with c->algo or the default. */
double hs_coll_estimate_s(const hs_topology_t *topo, const hs_coll_t *c);

#endif /* HS_NET_H */
