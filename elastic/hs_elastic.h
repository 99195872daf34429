/*
 * hs_elastic.h - elastic training on spot instances: a what-if simulation of
 * a long run (hours) in which spot nodes are preempted and replaced, the job
 * re-plans on the surviving devices with a planner strategy, and training
 * state is recovered with a recovery strategy (cloud, local-first, restart).
 *
 * Model (docs/elastic.md has the details and the defaults):
 *  - Preemptions: per node a Poisson process (rate per hour from the
 *    cluster's spot sites, or per site / per GPU type overrides), with
 *    exponential replacement delays; or a trace of preemption and
 *    replacement times. Seeded, one random stream per node: same seed, same
 *    sequence, bit for bit.
 *  - The run alternates train / checkpoint / re-plan / recover / idle
 *    phases on an integer-nanosecond timeline. Training accrues tokens at the
 *    simulated steady-state throughput of the current plan (hs_simulate).
 *    Every `checkpoint_interval_s` of training the run pauses to write a
 *    checkpoint (one writer per op slice, per node at ckpt_write_GBps); each
 *    device also keeps a copy of its own shards on its node (host memory /
 *    local disk). A preemption of a node used by the plan discards the
 *    training since the last completed checkpoint (recompute), re-plans
 *    (modelled cost: replan_base_s + candidates x replan_ns_per_candidate,
 *    never wall time) and recovers the checkpoint state into the new plan's
 *    layout. A replacement node joining triggers a checkpoint, a re-plan and
 *    a recovery (no work lost).
 *  - Recovery transfers (training state: params x state_bytes_per_param per
 *    op, divided by the TP degree for TP-split ops) run through the flow
 *    network (hs_net.h) on the original cluster's links plus, per node, a
 *    cloud download link (cloud_GBps, shared with the node's NIC) and a
 *    local-copy read link (local_read_GBps). `cloud`: every device downloads
 *    its shards from the cloud. `local-first`: each shard comes from the
 *    device's own copy, else a surviving holder (same node, same site, other
 *    site, least loaded first), else the cloud; when the all-cloud plan would
 *    be faster it is used instead (counted). `restart`: cloud download plus
 *    restart_overhead_s plus warmup_iterations of the new plan.
 *
 * Ownership: hs_elastic_cfg_t is plain data (_init fills the defaults);
 * hs_elastic_trace_t and hs_elastic_result_t are caller-allocated
 * (_init/_destroy, destroy accepts NULL and zeroed structs).
 */
#ifndef HS_ELASTIC_H
#define HS_ELASTIC_H

#include "hs_search.h"

typedef enum {
  HS_RECOVERY_CLOUD,
  HS_RECOVERY_LOCAL_FIRST,
  HS_RECOVERY_RESTART,
  HS_RECOVERY__COUNT
} hs_recovery_t;

/* "cloud", "local-first", "restart". */
const char *hs_recovery_name(hs_recovery_t r);
hs_status_t hs_recovery_parse(const char *s, hs_recovery_t *out);

/* ---- preemption sequences ------------------------------------------------ */

typedef enum { HS_ELASTIC_PREEMPT = 0, HS_ELASTIC_REPLACE = 1 } hs_elastic_ev_kind_t;

typedef struct hs_elastic_event {
  hs_time_t t_ns;
  int32_t node;              /* index into the cluster's nodes */
  int32_t kind;              /* hs_elastic_ev_kind_t */
} hs_elastic_event_t;

/* A sorted list of events (by time, then kind, then node). */
typedef struct hs_elastic_trace {
  hs_elastic_event_t *events; /* owned */
  size_t n;
} hs_elastic_trace_t;

void hs_elastic_trace_init(hs_elastic_trace_t *t);
void hs_elastic_trace_destroy(hs_elastic_trace_t *t);

/* Parses a trace file:
 *   {"events": [{"t_s": 3600, "kind": "preempt", "node": 2},
 *               {"t_s": 4800, "kind": "replace", "site": "h800", "node": 0}]}
 * `node` is the global node index, or the index within `site` when `site` is
 * given. Nodes and sites are checked against `c`; events are sorted. A
 * preemption of a node already down or a replacement of a node that is up is
 * an error naming the event. O(n log n). */
hs_status_t hs_elastic_trace_parse(const char *text, const char *file, const hs_cluster_t *c,
                                   hs_elastic_trace_t *out, hs_error_t *err);
hs_status_t hs_elastic_trace_load(const char *path, const hs_cluster_t *c, hs_elastic_trace_t *out,
                                  hs_error_t *err);

/* Per-node preemption rates (per hour): the site's preemptions_per_hour for
 * spot nodes, then overrides from `spec` ("KEY=RATE,KEY=RATE": KEY is a site
 * name or a GPU name; GPU overrides win over site ones; a rate > 0 makes the
 * node preemptible). rates[] has c->n_nodes entries. Bad keys or rates:
 * HS_EINVAL naming them. O(nodes x keys). */
hs_status_t hs_elastic_node_rates(const hs_cluster_t *c, const char *spec, double *rates,
                                  hs_error_t *err);

/* Samples a Poisson sequence over [0, hours): per node, exponential times to
 * preemption at rates[n] per hour while up, then exponential replacement
 * delays of mean replace_mean_s (replace_mean_s < 0: never replaced). One
 * splitmix64-seeded xoshiro256** stream per node. More than 5e6 expected
 * preemptions (sum of rates x hours) is HS_ELIMIT. O(events log events). */
hs_status_t hs_elastic_trace_sample(const hs_cluster_t *c, const double *rates, double hours,
                                    double replace_mean_s, uint64_t seed, hs_elastic_trace_t *out,
                                    hs_error_t *err);

/* ---- configuration ------------------------------------------------------- */

typedef struct hs_elastic_cfg {
  const char *strategy;          /* planner name; default "hapt" */
  hs_plan_opts_t plan;           /* options for every re-plan */
  hs_recovery_t recovery;
  double hours;                  /* simulated horizon */
  double checkpoint_interval_s;  /* training time between checkpoints (default 1800) */
  double checkpoint_cost_s;      /* > 0: fixed write cost; 0 = modelled from bytes */
  double ckpt_write_GBps;        /* per node, checkpoint upload (default 1.25) */
  double cloud_GBps;             /* per node, cloud download (default 1.25) */
  double cloud_total_GBps;       /* cloud egress shared by all nodes; 0 = unlimited */
  double local_read_GBps;        /* per node, read of its own local copy (default 5) */
  double state_bytes_per_param;  /* checkpointed bytes per parameter (default 14) */
  double replan_base_s;          /* modelled re-plan cost (default 1) */
  double replan_ns_per_candidate;/* plus candidates x this (default 100) */
  double restart_overhead_s;     /* restart: relaunch, communicator setup (default 120) */
  int32_t warmup_iterations;     /* restart: iterations redone for warm-up (default 10) */
} hs_elastic_cfg_t;

void hs_elastic_cfg_init(hs_elastic_cfg_t *cfg);

/* ---- training-state layouts and transfer plans ---------------------------- */

/* Which device holds which slice of which op's state: for op o, entries
 * [op_off[o], op_off[o+1]) of dev/tp/rank (device ids of the original
 * cluster; the device holds slice `rank` of `tp` of the op, or all of it for
 * ops whose tp_split is HS_TP_REPLICATE). */
typedef struct hs_elastic_layout {
  int32_t *op_off;           /* n_ops + 1 */
  int32_t *dev, *tp, *rank;  /* owned */
  size_t n_ops, n;
} hs_elastic_layout_t;

void hs_elastic_layout_init(hs_elastic_layout_t *l);
void hs_elastic_layout_destroy(hs_elastic_layout_t *l);
/* Builds the layout of `plan`, whose device ids are mapped through dev_map
 * (NULL = identity) to original ids. O(ops x holders). */
hs_status_t hs_elastic_layout_from_plan(const hs_model_t *m, const hs_plan_t *plan,
                                        const int32_t *dev_map, hs_elastic_layout_t *out,
                                        hs_error_t *err);
/* Bytes of op `op`'s state a holder of TP degree `tp` keeps. O(1). */
double hs_elastic_slice_bytes(const hs_model_t *m, int32_t op, int32_t tp,
                              double state_bytes_per_param);

typedef struct hs_elastic_recovery_cost {
  double transfer_s;         /* simulated transfer time (flow network) */
  double bytes_peer;         /* fetched from other devices over cluster links */
  double bytes_own;          /* read from the device's own local copy */
  double bytes_cloud;        /* downloaded from cloud storage */
  int32_t n_flows;
  bool used_cloud_fallback;  /* local-first found the all-cloud plan faster */
} hs_elastic_recovery_cost_t;

/* Plans and simulates moving the state of checkpoint layout `old` (sources:
 * devices of nodes with src_ok[node]) into layout `new_l` with `recovery`
 * (restart transfers like cloud). Runs the flows on the cluster's links plus
 * the per-node cloud and local-read links of cfg. O(ops x holders x slices +
 * flows x path length + the network simulation). */
hs_status_t hs_elastic_recovery_plan(const hs_model_t *m, const hs_cluster_t *c,
                                     const hs_topology_t *topo, const hs_elastic_cfg_t *cfg,
                                     hs_recovery_t recovery, const hs_elastic_layout_t *old,
                                     const bool *src_ok, const hs_elastic_layout_t *new_l,
                                     hs_elastic_recovery_cost_t *out, hs_error_t *err);

/* Modelled checkpoint write time of a layout: max over nodes of the bytes
 * its devices write (one writer per op slice: its first holder) divided by
 * ckpt_write_GBps, or cfg->checkpoint_cost_s when > 0. O(ops x holders). */
double hs_elastic_checkpoint_s(const hs_model_t *m, const hs_cluster_t *c,
                               const hs_elastic_cfg_t *cfg, const hs_elastic_layout_t *l);

/* ---- the run ------------------------------------------------------------- */

typedef enum {
  HS_EPH_TRAIN,    /* useful training (kept) */
  HS_EPH_LOST,     /* training discarded by a preemption: recomputed */
  HS_EPH_CKPT,
  HS_EPH_REPLAN,
  HS_EPH_RECOVER,
  HS_EPH_IDLE,     /* no feasible plan on the surviving devices */
  HS_EPH__COUNT
} hs_elastic_phase_t;

/* "train", "lost", "checkpoint", "replan", "recover", "idle". */
const char *hs_elastic_phase_name(hs_elastic_phase_t p);

typedef struct hs_elastic_segment {
  hs_time_t t0, t1;
  int32_t phase;             /* hs_elastic_phase_t */
  int32_t recovery;          /* index into recoveries, -1 */
  double tokens_per_s;       /* train / lost */
} hs_elastic_segment_t;

typedef struct hs_elastic_recovery {
  hs_time_t t_ns;            /* event time */
  int32_t kind;              /* hs_elastic_ev_kind_t of the triggering event(s) */
  int32_t n_nodes_down;      /* nodes preempted at this time */
  int32_t n_nodes_up;        /* nodes joining at this time */
  int32_t n_devices;         /* devices of the new plan (0: none feasible) */
  double lost_s;             /* training discarded */
  double replan_s;           /* modelled */
  double replan_wall_s;      /* measured search wall time (0 when the plan came from the cache) */
  double transfer_s;
  double overhead_s;         /* restart relaunch + warm-up */
  double recovery_s;         /* transfer + overhead */
  double bytes_peer, bytes_own, bytes_cloud;
  bool cloud_fallback;
  bool interrupted;          /* cut short by a later preemption */
  double tokens_per_s;       /* of the new plan */
  char plan_summary[160];
} hs_elastic_recovery_t;

typedef struct hs_elastic_result {
  double hours;
  hs_recovery_t recovery;
  char strategy[48];
  double steady_tokens_per_s;   /* initial plan on the full cluster */
  double steady_iteration_s;
  int64_t global_batch;
  double time_s[HS_EPH__COUNT]; /* seconds per phase; sums to hours x 3600 */
  double useful_tokens;
  double goodput_tokens_per_h;
  int32_t n_preemptions;        /* preemption events in the horizon */
  int32_t n_replacements;
  int32_t n_checkpoints;        /* completed */
  double cost_usd;              /* GPU-hours of nodes while up, spot price for spot nodes; NAN
                                   (and usd_per_million_tokens too) when n_unpriced_devices > 0 */
  int32_t n_unpriced_devices;   /* devices whose price is unknown: costs are then unknown */
  double usd_per_million_tokens;
  double replan_wall_s;         /* total measured search wall time (not in the timeline) */
  int32_t n_searches;           /* planner runs (distinct surviving sets) */
  hs_elastic_recovery_t *recoveries; /* owned */
  size_t n_recoveries;
  hs_elastic_segment_t *segments;    /* owned, in time order */
  size_t n_segments;
  hs_elastic_event_t *events;        /* owned: the events inside the horizon */
  size_t n_events;
} hs_elastic_result_t;

void hs_elastic_result_init(hs_elastic_result_t *r);
void hs_elastic_result_destroy(hs_elastic_result_t *r);

/* A planner cache shared by several runs on the same model, cluster and
 * configuration (e.g. --compare-recovery): plans depend only on the set of
 * nodes up. Opaque; _new/_free (NULL ok). */
typedef struct hs_elastic_planner hs_elastic_planner_t;
hs_status_t hs_elastic_planner_new(const hs_model_t *m, const hs_cluster_t *c,
                                   const hs_elastic_cfg_t *cfg, hs_elastic_planner_t **out,
                                   hs_error_t *err);
void hs_elastic_planner_free(hs_elastic_planner_t *p);

/* Simulates the run over cfg->hours with the events of `trace` (those at or
 * after the horizon are ignored). `planner` may be NULL (a private one is
 * used). Deterministic: the timeline never uses wall time. O(events x
 * (re-plan + recovery plan) + segments). */
hs_status_t hs_elastic_run(const hs_model_t *m, const hs_cluster_t *c, const hs_elastic_cfg_t *cfg,
                           const hs_elastic_trace_t *trace, hs_elastic_planner_t *planner,
                           hs_elastic_result_t *out, hs_error_t *err);

/* ---- output --------------------------------------------------------------- */

/* The result as JSON (keys in docs/elastic.md); wall-clock figures only
 * when with_wall. Caller frees with hs_json_free; NULL when out of memory. */
struct cJSON *hs_elastic_result_to_json(const hs_elastic_result_t *r, const hs_cluster_t *c,
                                        bool with_wall);
/* Timeline as a Chrome trace (pid 0 "run": tid 0 phases, tid 1 recoveries;
 * pid 1 "nodes": one tid per node with its up spans) and as CSV
 * (start_s,end_s,phase,recovery,tokens_per_s). */
hs_status_t hs_elastic_timeline_write_json(const hs_elastic_result_t *r, const hs_cluster_t *c,
                                           const char *path, hs_error_t *err);
hs_status_t hs_elastic_timeline_write_csv(const hs_elastic_result_t *r, const char *path,
                                          hs_error_t *err);

#endif /* HS_ELASTIC_H */
