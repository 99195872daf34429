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
 *
 * Events. Flow starts and ends only mark the links they touch; one rate
 * update event per instant (priority HS_NET_PRIO_RATES, after every other
 * event at that time) recomputes the rates of the flows connected to the
 * marked links, so k starts or ends at one time cost one recomputation. No
 * simulated time passes between a change and its update, so no byte is
 * misplaced. Completion events use HS_NET_PRIO_FLOW. docs/network.md has the
 * model, the algorithms and their formulas.
 *
 * Paths. Collectives obtain device-to-device paths through an hs_net_paths_t:
 * hs_net_new() uses the topology (hs_topology_path); a network built from a
 * bare link array (hs_net_new_links, for tests and synthetic fabrics) gets
 * its path function from the caller.
 */
#ifndef HS_NET_H
#define HS_NET_H

#include "hs_clusters.h"
#include "hs_engine.h"

typedef struct hs_net hs_net_t;
typedef struct hs_flow hs_flow_t;

/* Completion events fire at HS_NET_PRIO_FLOW; the rate update of an instant
 * fires after everything else at that instant. */
#define HS_NET_PRIO_FLOW 0
#define HS_NET_PRIO_RATES INT32_MAX
/* A flow with less than this many bytes left is complete (float drift). */
#define HS_NET_EPS_BYTES 1e-6

typedef void (*hs_flow_done_fn)(hs_net_t *net, hs_flow_t *f);

/* One (link, weight) pair of a flow. */
typedef struct hs_flow_hop {
  int32_t link;
  int32_t weight;
} hs_flow_hop_t;

/* Caller-owned flow. Fill the public part (hs_flow_init zeroes the rest),
 * then hs_net_flow_start(). The hops array must stay valid until `done` is
 * called; a link should appear once per flow (merge repeats into a weight).
 * After `done` the flow may be restarted or freed. */
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
  int32_t *pos;               /* per hop: index in that link's member table (pool block) */
};

/* Zeroes f and initialises its event; optional before filling it in. O(1). */
void hs_flow_init(hs_flow_t *f);

/* Per-link counters for reports. */
typedef struct hs_link_stats {
  double bytes;       /* bytes carried (weights counted) */
  hs_time_t busy_ns;  /* time with at least one active flow */
  int32_t max_flows;  /* most concurrent flows seen */
} hs_link_stats_t;

/* Path between two devices; ctx is the source's own context. */
typedef hs_status_t (*hs_net_path_fn)(void *ctx, int32_t dev_a, int32_t dev_b, hs_path_t *out);

/* Where collectives get paths and link capacities from. `node_of` is
 * optional: NULL (or a negative answer for some device) infers the node of
 * a device from the owner of the HS_LINK_NIC_UP link on its paths to other
 * devices (the topology model: one NIC per node), all devices joined by GPU
 * ports only sharing a node. A topology's network gives node_of (the
 * device's node, the same ids). */
typedef struct hs_net_paths {
  hs_net_path_fn path;
  void *ctx;
  const hs_link_t *links;     /* indexed by hs_path_t.links */
  size_t n_links;
  int32_t (*node_of)(void *ctx, int32_t dev);
} hs_net_paths_t;

/* The network borrows `eng` and `topo` (both must outlive it). Caller frees
 * with hs_net_free. O(links). */
hs_status_t hs_net_new(hs_engine_t *eng, const hs_topology_t *topo, hs_net_t **out);
/* A network over a bare link array (copied), without topology: tests and
 * synthetic fabrics. Collectives need hs_net_set_path_fn first. A link with
 * GBps <= 0, NaN or +inf is unconstrained (never a bottleneck). O(links). */
hs_status_t hs_net_new_links(hs_engine_t *eng, const hs_link_t *links, size_t n_links,
                             hs_net_t **out);
/* Sets the path function of a hs_net_new_links network (node_of optional). */
void hs_net_set_path_fn(hs_net_t *net, hs_net_path_fn path, void *ctx,
                        int32_t (*node_of)(void *ctx, int32_t dev));
/* The network's path source (for hs_coll_estimate_paths). */
const hs_net_paths_t *hs_net_paths(const hs_net_t *net);
/* Cancels the network's pending events (flows, collectives, rate update) and
 * frees it; the caller's flows and collectives are left unfinished. NULL ok. */
void hs_net_free(hs_net_t *net);
/* Starts f now. Zero bytes (< HS_NET_EPS_BYTES), no hops or only
 * unconstrained hops complete at the current time (through an event, never
 * re-entrantly). Fails with HS_EINVAL (bad link, weight < 1, negative or NaN
 * bytes) or HS_ENOMEM, leaving nothing started. O(hops) here, plus the
 * batched rate update of the instant: O(flows + hops + links of the affected
 * component) at most once per instant and component. */
hs_status_t hs_net_flow_start(hs_net_t *net, hs_flow_t *f);
/* Per-link counters, indexed like the links. `bytes` counts a flow when it
 * completes; `busy_ns` of a link busy right now counts up to the last
 * hs_net_sync_stats. O(links). */
const hs_link_stats_t *hs_net_link_stats(const hs_net_t *net);
/* Brings busy_ns of busy links up to the current time. O(links). */
void hs_net_sync_stats(hs_net_t *net);
/* Observer called from every flow's completion (before the flow's own
 * `done`), for traces: it sees the flow's hops, bytes, t_start and t_end and
 * must not start or stop flows. NULL removes it. O(1). */
typedef void (*hs_net_observer_fn)(void *ctx, const hs_flow_t *f);
void hs_net_set_observer(hs_net_t *net, hs_net_observer_fn fn, void *ctx);
hs_engine_t *hs_net_engine(hs_net_t *net);
const hs_topology_t *hs_net_topology(const hs_net_t *net); /* NULL for hs_net_new_links */
size_t hs_net_n_links(const hs_net_t *net);
const hs_link_t *hs_net_links(const hs_net_t *net);
size_t hs_net_active_flows(const hs_net_t *net);
uint64_t hs_net_rate_updates(const hs_net_t *net); /* max-min recomputations done */

/* ---- max-min solver (maxmin.c), usable on its own ------------------------ */

typedef struct hs_maxmin_entry {
  double level;
  int32_t link;
} hs_maxmin_entry_t;

/* Reusable workspace; zero or hs_maxmin_init it, hs_maxmin_destroy it. */
typedef struct hs_maxmin {
  double *rem;            /* per link: capacity left */
  int64_t *wsum;          /* per link: weight of unfrozen flows */
  int32_t *loff;          /* link -> flows CSR offsets */
  int32_t *act;           /* links still carrying unfrozen flows */
  hs_maxmin_entry_t *heap;
  int32_t *lflow;         /* link -> flows CSR entries */
  uint8_t *frozen;
  size_t cap_links, cap_flows, cap_hops;
} hs_maxmin_t;

void hs_maxmin_init(hs_maxmin_t *mm);
void hs_maxmin_destroy(hs_maxmin_t *mm);
/* Pre-sizes the workspace so later solves of at most these sizes never
 * allocate. */
hs_status_t hs_maxmin_reserve(hs_maxmin_t *mm, size_t n_flows, size_t n_links, size_t n_hops);
/* Weighted max-min fair rates by progressive filling. Flow f uses hops
 * [flow_off[f], flow_off[f+1]) of `hops` (link in [0, n_links), weight >= 1:
 * it consumes weight x rate there). cap[l] in bytes/s; cap <= 0, NaN or +inf
 * means unconstrained. Writes rate[f] (bytes/s, +inf for a flow with no
 * constrained link). HS_EINVAL on a bad link or weight. O(H + L log L), H the
 * hops, L the links; small problems (<= 32 live links or <= 8 flows) scan
 * instead of keeping a heap. */
hs_status_t hs_maxmin_solve(hs_maxmin_t *mm, int32_t n_flows, const int32_t *flow_off,
                            const hs_flow_hop_t *hops, int32_t n_links, const double *cap,
                            double *rate);

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

/* "p2p", "allreduce", "reducescatter", "allgather", "broadcast", "alltoall",
 * "padded_allgather", "grouped_broadcast"; "?" when out of range. */
const char *hs_coll_op_name(hs_coll_op_t op);
/* Inverse of hs_coll_op_name; HS_ENOTFOUND for other strings. */
hs_status_t hs_coll_op_parse(const char *s, hs_coll_op_t *out);

typedef struct hs_coll hs_coll_t;
/* Phase description under construction (private to the collective layer). */
typedef struct hs_coll_builder hs_coll_builder_t;

/* A collective algorithm: decomposes an operation into phases of coupled
 * flows and gives the matching closed-form time. Type objects in one table. */
typedef struct hs_coll_algo {
  const char *name;          /* "ring", "tree", "hierarchical", "direct" */
  const char *description;
  /* True when this algorithm implements `op`. */
  bool (*supports)(hs_coll_op_t op);
  /* Uncontended time in seconds (the analytical fast path); NaN when c is
   * invalid for this algorithm. Paths from any source (hs_net_paths). */
  double (*estimate_s)(const hs_net_paths_t *paths, const hs_coll_t *c);
  /* Starts the first phase; the collective layer calls back as phases end. */
  hs_status_t (*start)(hs_net_t *net, hs_coll_t *c);
  /* Describes phase `phase` of c into b (latency and coupled flows), or sets
   * *has_phase false when c has no such phase. Both the flow model and the
   * estimate run on these descriptions. */
  hs_status_t (*build_phase)(hs_coll_builder_t *b, const hs_coll_t *c, int32_t phase,
                             bool *has_phase);
} hs_coll_algo_t;

extern const hs_coll_algo_t *const hs_coll_algos[]; /* NULL-terminated */
const hs_coll_algo_t *hs_coll_algo_find(const char *name);
/* NCCL-like default choice for op and group, without the message size
 * (ring inside a node or with one rank per node, node_ring across nodes for
 * all-reduce / reduce-scatter / all-gather, direct for p2p and all-to-all).
 * O(n) path queries for those three, O(1) otherwise. NULL when out of
 * memory. */
const hs_coll_algo_t *hs_coll_algo_default(const hs_topology_t *topo, hs_coll_op_t op,
                                           const int32_t *devices, int32_t n);
const hs_coll_algo_t *hs_coll_algo_default_paths(const hs_net_paths_t *paths, hs_coll_op_t op,
                                                 const int32_t *devices, int32_t n);

/* The algorithm a collective with c->algo == NULL runs: the default above,
 * except that an all-reduce across nodes (node_ring by default) runs
 * node_tree when its uncontended time (estimate_s, the closed forms) is
 * strictly smaller for c->bytes, as NCCL's tuner picks Tree or Ring by size
 * (across nodes whose GPU ports are all NVLS: the fastest of node_ring,
 * node_tree and nvls_tree, NCCL's NVLS-Tree), and an all-reduce inside one
 * node whose GPU ports are all NVLS runs nvls
 * where NCCL's tuner prefers it (hs_coll_nvls_preferred; docs/network.md).
 * O(n) path queries. NULL when out of memory. */
const hs_coll_algo_t *hs_coll_algo_choose_paths(const hs_net_paths_t *paths, const hs_coll_t *c);

/* The rule inside hs_coll_algo_choose_paths, for callers that hold the two
 * closed forms as lines (search/estimate.c costs many sizes that way): at
 * `bytes` per rank, the ring takes t_ring_s of which x_ring_s is its
 * bandwidth term, the tree t_tree_s of which l_tree_s is its latency. On
 * NVLS groups the faster closed form wins; elsewhere NCCL's tuner rule
 * (docs/network.md, "Ring or tree"). n: ranks in the group. O(1). */
bool hs_coll_tree_preferred(double t_ring_s, double x_ring_s, double t_tree_s, double l_tree_s,
                            int32_t n, bool nvls, double bytes);
/* True when every GPU port on the group's ring paths is an NVLink SHARP
 * port (hs_link_t.nvls); false on a path error. O(n) path queries. */
bool hs_coll_group_nvls_paths(const hs_net_paths_t *paths, const int32_t *devices, int32_t n);
/* The slowest GPU port (GBps) of such a group, 0 when a port lacks nvls. */
double hs_coll_group_nvls_port_GBps(const hs_net_paths_t *paths, const int32_t *devices, int32_t n);
double hs_coll_group_nvls_port_GBps_topo(const hs_topology_t *topo, const int32_t *devices, int32_t n);
/* NCCL's tuner rule inside one node (tuning.cc constants, docs/network.md
 * "NVLS inside a node"): true when NVLS's tuner time for an all-reduce of
 * `bytes` per rank over n ranks is below the ring's best protocol's, with
 * the port's GBps as both algorithms' bus bandwidth. O(1). */
bool hs_coll_nvls_preferred(double bytes, int32_t n, double port_GBps);
bool hs_coll_group_nvls(const hs_topology_t *topo, const int32_t *devices, int32_t n);

/* ---- NCCL protocols (coll_proto.c, docs/network.md "Protocols") -----------
 * NCCL runs every call with one of three protocols, LL (8-byte lines of 4
 * data bytes and a flag: lowest latency, half the bandwidth), LL128 (128-byte
 * lines, 120 data bytes; NVLink only) and Simple (bulk copies, highest
 * latency), and picks the (algorithm, protocol) of least tuner time. The
 * constants are NCCL 2.30.7's (NVIDIA/nccl@5067397c, src/graph/tuning.cc). */
typedef enum { HS_NCCL_LL, HS_NCCL_LL128, HS_NCCL_SIMPLE, HS_NCCL_PROTO__COUNT } hs_nccl_proto_t;
/* "LL", "LL128", "Simple"; "?" out of range. */
const char *hs_nccl_proto_name(hs_nccl_proto_t p);

/* The intra-node hardware row of NCCL's tuner: NVLink or PCI. */
typedef enum { HS_NCCL_HW_NVLINK, HS_NCCL_HW_PCI } hs_nccl_hw_t;

/* One protocol of a ring call, as NCCL's tuner costs it. */
typedef struct hs_nccl_proto_cost {
  bool allowed;
  double latency_us;  /* baseLatencies[Ring][p] + n_steps x hwLatencies[hw][Ring][p] */
  double bw_factor;   /* the protocol's bus bandwidth over Simple's (LL 0.5, LL128 0.92) */
} hs_nccl_proto_cost_t;

/* NCCL's ring on one node of n ranks (n_steps = 2(n-1) for all-reduce, n-1
 * for reduce-scatter and all-gather) over a bus bandwidth of busbw_GBps
 * (Simple's): fills cost[HS_NCCL_PROTO__COUNT]. LL128 is allowed only on
 * NVLink (tuning.cc auto rule: intra path <= NVB). ll_max_GBps caps LL's
 * bus bandwidth (llMaxBws, single node: 39.0 pre-Ampere, 87.7 Ampere, 141
 * Hopper). O(1). */
void hs_nccl_ring_costs(int32_t n_steps, hs_nccl_hw_t hw, double busbw_GBps, double ll_max_GBps,
                        hs_nccl_proto_cost_t cost[HS_NCCL_PROTO__COUNT]);
/* The allowed protocol of least tuner time for `bytes` (NCCL's nBytes: the
 * per-rank buffer of an all-reduce, the whole buffer of an all-gather or
 * reduce-scatter): latency_us + bytes / (busbw bw_factor ratio), ratio =
 * n / n_steps, NCCL's ring conversion from bus to algorithm bandwidth. Ties
 * go to the earlier protocol (LL, LL128, Simple, as NCCL's loop). O(1). */
hs_nccl_proto_t hs_nccl_proto_pick(const hs_nccl_proto_cost_t cost[HS_NCCL_PROTO__COUNT], double bytes,
                                   double busbw_GBps, double ratio, double *time_us);

typedef void (*hs_coll_done_fn)(hs_coll_t *c);

#define HS_COLL_MAX_FLOWS 4

/* Caller-owned collective. devices (ring order) and shares must stay valid
 * until done; `done` (may be NULL) is called once, from an engine event,
 * never from hs_coll_start. Recover the caller's context from c->ctx or with
 * HS_CONTAINER_OF. The network owns the private buffers (hops, extra flows):
 * they go back to its pool before `done`, or at hs_net_free. */
struct hs_coll {
  /* public */
  hs_coll_op_t op;
  const hs_coll_algo_t *algo;   /* NULL = hs_coll_algo_choose_paths */
  const int32_t *devices;
  int32_t n;
  double bytes;
  const double *shares;         /* PADDED_ALLGATHER / GROUPED_BROADCAST: n shares summing to 1 */
  size_t memo_hint;             /* optional: memo_choice of an earlier collective that had the
                                   same op, devices and bytes (a TP group's next all-reduce);
                                   0 = none. A wrong hint costs one comparison, never a result */
  const int32_t *memo_hint_devices; /* optional: that collective's devices pointer. When it is
                                   c->devices the lists are not compared: the caller promises
                                   the array was not changed in between */
  size_t memo_choice;           /* set by hs_coll_start: what memo_hint takes (0: nothing) */
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
  const hs_coll_algo_t *run_algo; /* c->algo or the default chosen at start */
  int32_t n_flows;              /* flows of the current phase */
  int32_t slot;                 /* index in the network's live collectives */
  hs_flow_t *xflows;            /* phases of more than HS_COLL_MAX_FLOWS flows (pool block) */
  int32_t n_xflows_cap;
  uint64_t memo_hash;           /* hash of (op, n, bytes, devices), set at start (coll_memo.h) */
  size_t memo_devs;             /* where the memo holds a copy of devices; SIZE_MAX: not known yet */
  size_t memo_last;             /* the memo entry last found or stored for c; SIZE_MAX: none */
};

/* Zeroes c (optional before filling it in). O(1). */
void hs_coll_init(hs_coll_t *c);

/* Validates and starts c at the current time. Errors (bad group, duplicate
 * devices, shares not summing to 1, unsupported op for algo) name the field.
 * A failure in a later phase (out of memory) stops the engine with
 * hs_engine_fail. O(n + hops of the first phase). */
hs_status_t hs_coll_start(hs_net_t *net, hs_coll_t *c, hs_error_t *err);
/* Analytical uncontended time (seconds) with c->algo or the default: the sum
 * over phases of latency + transfer time of the phase's flows alone on the
 * network. NaN when c is invalid. O(phases x (n path queries + hops log hops)). */
double hs_coll_estimate_s(const hs_topology_t *topo, const hs_coll_t *c);
/* The same with its status: HS_ENOMEM (with a message) when memory ran out,
 * which the NaN of hs_coll_estimate_s cannot tell from invalid input. */
hs_status_t hs_coll_estimate_topo(const hs_topology_t *topo, const hs_coll_t *c, double *out_s,
                                  hs_error_t *err);
/* The same over any path source, with the validation message. */
hs_status_t hs_coll_estimate_paths(const hs_net_paths_t *paths, const hs_coll_t *c,
                                   double *out_s, hs_error_t *err);

#endif /* HS_NET_H */
