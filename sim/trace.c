/*
 * trace.c - Chrome trace writer (trace.h has the file's invariants).
 *
 * The file is streamed: hs_trace_new opens it (a temporary, renamed over the
 * target by hs_trace_write's commit, removed if the run fails) and every
 * device slice is written when the simulator reports it, in its
 * (deterministic) event order; link utilisation is binned as flows
 * complete. hs_trace_write adds what needs the whole run: the idle tail of
 * each compute track, the process and thread names (lane counts), and the
 * links (sorted by bytes; counters; kernel detail's flow slices, the only
 * slices kept in memory). Layout:
 *
 *   pid = device id (process "dev N GPU tpT: [P<i>] stage <k> (layers ..)"), sorted by
 *   sort index 10 + group x 1e9 + stage x 1e6 + member, where group is the
 *   first pipeline with the same structure and member counts the devices of
 *   (group, stage) in plan order (0: replica 0, TP rank 0 of the group's
 *   first pipeline, the stage's representative; export --svg relies on it):
 *     tid 0  "compute": one slice per schedule item (fwd/bwd mbK, cat compute)
 *            with a nested "recompute" child where the backward recomputes,
 *            at kernel detail the compute segments nested inside, the
 *            optimizer step, and "idle" slices filling every gap up to the
 *            end of the iteration, so the track covers [0, T] exactly;
 *     tid 1  "tp-comm": blocking TP/SPMD collectives (kernel detail);
 *     tid 2  "dp-comm": gradient bucket all-reduces (sequential per device);
 *     tid 100+k "pp send k", 200+k "pp recv k": pipeline transfers, each
 *            given, when it arrives, the lowest lane whose last transfer
 *            arrived by its post, so slices of one lane never overlap.
 *   pid = n_devices: "cross-site links", pid = n_devices + 1: "links", each
 *   with one utilisation counter per link and, at kernel detail, lanes of
 *   pipeline flows. The counter is a step function over bins of 2^k ns,
 *   the smallest power of two that fits the iteration in LINK_BINS bins
 *   (so 129 to 256 bins; the last one ends at T): bytes moved in the bin /
 *   (capacity x its width), a flow's bytes spread evenly over its lifetime,
 *   so counter x capacity integrates to the link's bytes. A sample that
 *   prints as the previous one is left out; a 0 at T closes the series.
 *
 * Detail levels: stage = one representative device (replica 0, TP rank 0)
 * per stage of each distinct pipeline (pipelines with the same stage cuts,
 * GPUs and TP are folded into the first) and, of the links, the cross-site
 * ones plus the 8 busiest; device = every device below trace_max_devices and
 * every busy link of theirs; kernel = device plus segments, TP collectives
 * and link flow lanes. A 1024-GPU Megatron run at stage detail has p
 * processes.
 *
 * --trace-devices N bounds every track family: device tracks, and links,
 * which are then the cross-site links plus those of the shown devices (their
 * GPU links, the NIC and rail links of their nodes, the fabric of their
 * sites). What is not shown is not recorded: hooks of hidden devices return
 * at once and only links that may be shown have a row of bins (issue #35:
 * a 1024-GPU device trace took 125 s after a 1 s simulation, then 307 MB
 * for its 8.4 million kept flow hops). Cost: O(lanes of its track) per
 * device slice, O(bins it spans) per flow hop on a recorded link, memory
 * 8 x LINK_BINS bytes per recorded link plus the lanes; hs_trace_write is
 * O(devices + L x LINK_BINS + k log k) for L shown links and k link flow
 * slices, and the bytes written, formatted by hand.
 */
#include "trace.h"
#include "hs_output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const hs_trace_cats[] = {"compute", "recompute", "tp-comm", "pp-comm", "dp-comm",
                                     "optimizer", "idle", NULL};

const char *hs_trace_detail_name(hs_trace_detail_t d)
{
  switch (d) {
  case HS_TRACE_STAGE: return "stage";
  case HS_TRACE_DEVICE: return "device";
  case HS_TRACE_KERNEL: return "kernel";
  }
  return "?";
}

hs_status_t hs_trace_detail_parse(const char *s, hs_trace_detail_t *out)
{
  for (int d = HS_TRACE_STAGE; d <= HS_TRACE_KERNEL; d++)
    if (s && strcmp(s, hs_trace_detail_name((hs_trace_detail_t)d)) == 0) {
      *out = (hs_trace_detail_t)d;
      return HS_OK;
    }
  return HS_ENOTFOUND;
}

typedef enum { K_ITEM, K_SEG, K_RECOMP, K_OPT, K_TP, K_DP, K_SEND, K_RECV, K_LINK } kind_t;

#define TID_COMPUTE 0
#define TID_TP 1
#define TID_DP 2
#define TID_SEND 100
#define TID_RECV 200
#define LINK_BINS 256
#define STAGE_LINKS 8

typedef struct span {
  int32_t pid;          /* device, or link id for K_LINK */
  int16_t kind;
  int8_t phase;         /* items: hs_phase_t; sends: 1 = activations */
  int8_t pad;
  int32_t mb, chunk;    /* -1 = none */
  int32_t peer;         /* sends: the other device */
  int32_t tid;          /* set when writing */
  const char *name;     /* static strings only */
  hs_time_t t0, t1;
  double bytes;
  uint64_t flow;        /* sends: arrow id (1-based), 0 = none */
} span_t;

/* Link utilisation is binned while simulating, one row of LINK_BINS bins
 * per recorded link: bin b holds the bytes the link's flows moved in
 * [b 2^k, (b + 1) 2^k) ns, a flow's bytes spread evenly over its lifetime
 * (integer overlaps; the flow's last bin takes the remainder, so a row sums
 * to the bytes exactly as added). All rows share the scale k: a flow ending
 * at or past LINK_BINS 2^k first doubles every row's bins (pairs summed)
 * until it fits, and writing doubles them up to the scale of the
 * iteration's end. Every completed flow, recorded or not, moves the scale,
 * and a row's values depend only on its own flows and those moves, so a
 * bounded trace bins its links exactly as the full one. Bins are stored
 * bin-major (bin b of every row together): flows that complete near one
 * another fall in the same few bins, so binning stays in cache (row-major
 * rows cost a cache miss per flow hop at 1,024 GPUs). Memory: 8 LINK_BINS
 * bytes per recorded link, whatever the number of flows (issue #35: keeping
 * every flow hop took 288 MB at 1,024 GPUs). */
typedef struct linkrows {
  int32_t *row_of;      /* per link: its row, -1 = not recorded */
  double *bins;         /* bin b of row r at [b * n_rows + r] */
  int32_t n_rows;
  int8_t scale;         /* log2 of the bin width in ns, -1 before the first flow */
} linkrows_t;

static bool shown(const hs_trace_t *t, int32_t d);

typedef struct devinfo {
  int32_t pipeline, stage, replica, tp_rank; /* -1: unused by the plan */
  int32_t folded;       /* stage detail: device groups this one stands for */
  int32_t group;        /* first pipeline with the same structure */
  int32_t member;       /* rank among the devices of (group, stage); 0 = representative */
} devinfo_t;

/* Greedy lanes of one family of overlapping slices: end[l] is the end of
 * the last slice given lane l. */
typedef struct lanes {
  hs_time_t *end;
  size_t n, cap;
} lanes_t;

/* What streaming a device's tracks needs: where its compute track's top
 * level has reached (idle fills the gaps), and its send and receive lanes. */
typedef struct devtrack {
  hs_time_t top_end;
  bool busy;            /* its compute track has slices */
  lanes_t send, recv;
} devtrack_t;

typedef struct writer writer_t;

struct hs_trace {
  const hs_model_t *m;
  uint8_t *link_rec;    /* per link: flows and spans on it are recorded */
  size_t n_links;
  bool links_bounded;   /* --trace-devices bounds the links too */
  const hs_cluster_t *c;
  const hs_plan_t *plan;
  hs_trace_detail_t detail;
  span_t *spans;        /* link flow slices (kernel detail), kept to the end */
  size_t n, cap;
  linkrows_t rows;
  devtrack_t *track;    /* per device */
  hs_output_t out;      /* the file, open from hs_trace_new to hs_trace_write */
  writer_t *w;
  hs_time_t shown_end;  /* latest end of a slice shown */
  hs_time_t flows_end;  /* latest end of a flow with hops */
  hs_time_t end;        /* latest end of anything a hook was told, shown or not */
  devinfo_t *dev;
  uint8_t *shown;
  uint64_t next_flow;
  bool links;
  bool oom;
};

/* Pipelines i and j have the same stage cuts, TP degrees and GPU types. */
static bool same_pipeline(const hs_cluster_t *c, const hs_plan_pipeline_t *a,
                          const hs_plan_pipeline_t *b)
{
  if (a->n_stages != b->n_stages || a->microbatch_size != b->microbatch_size ||
      a->n_microbatches != b->n_microbatches)
    return false;
  for (int32_t k = 0; k < a->n_stages; k++) {
    const hs_plan_stage_t *x = &a->stages[k], *y = &b->stages[k];
    if (x->op_first != y->op_first || x->op_last != y->op_last || x->n_replicas != y->n_replicas)
      return false;
    for (int32_t q = 0; q < x->n_replicas; q++) {
      const hs_plan_replica_t *rx = &x->replicas[q], *ry = &y->replicas[q];
      if (rx->n_devices != ry->n_devices || rx->n_devices < 1 || rx->share != ry->share ||
          hs_cluster_gpu(c, rx->devices[0]) != hs_cluster_gpu(c, ry->devices[0]))
        return false;
    }
  }
  return true;
}

/* A row for every recorded link (rec[l] != 0), all empty. */
static hs_status_t rows_new(linkrows_t *r, const uint8_t *rec, size_t n_links, hs_error_t *err)
{
  r->scale = -1;
  r->row_of = hs_calloc(n_links + 1, sizeof *r->row_of);
  if (!r->row_of)
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  for (size_t l = 0; l < n_links; l++)
    r->row_of[l] = rec[l] ? r->n_rows++ : -1;
  r->bins = hs_calloc((size_t)r->n_rows * LINK_BINS + 1, sizeof *r->bins);
  if (!r->bins)
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  return HS_OK;
}

static void rows_destroy(linkrows_t *r)
{
  free(r->row_of);
  free(r->bins);
}

/* Brings every row to a scale whose bins hold time `end` (end < LINK_BINS
 * 2^k), one doubling at a time. O(doublings x rows x LINK_BINS). */
static void rows_fit(linkrows_t *rows, hs_time_t end)
{
  if (rows->scale < 0) {
    rows->scale = 0;
    while (rows->scale < 62 && (end >> rows->scale) >= LINK_BINS)
      rows->scale++;
    return;
  }
  size_t n = (size_t)rows->n_rows;
  double *b = rows->bins;
  while (rows->scale < 62 && (end >> rows->scale) >= LINK_BINS) {
    for (size_t i = 0; i < LINK_BINS / 2; i++)
      for (size_t r = 0; r < n; r++)
        b[i * n + r] = b[2 * i * n + r] + b[(2 * i + 1) * n + r];
    memset(b + LINK_BINS / 2 * n, 0, LINK_BINS / 2 * n * sizeof *b);
    rows->scale++;
  }
}

/* Adds `bytes` moved evenly over [t0, t1] to row r, whose bins hold t1
 * (rows_fit). O(bins the flow spans). */
static void row_add(linkrows_t *rows, int32_t r, hs_time_t t0, hs_time_t t1, double bytes)
{
  t0 = HS_MAX(t0, 0);
  t1 = HS_MAX(t1, t0);
  int8_t k = rows->scale;
  size_t n = (size_t)rows->n_rows;
  double *b = rows->bins + r;
  int64_t b0 = t0 >> k, b1 = t1 > t0 ? (t1 - 1) >> k : b0;
  if (b0 == b1) {
    b[(size_t)b0 * n] += bytes;
    return;
  }
  double rate = bytes / (double)(t1 - t0), left = bytes;
  double part = rate * (double)(((b0 + 1) << k) - t0);
  b[(size_t)b0 * n] += part;
  left -= part;
  for (int64_t i = b0 + 1; i < b1; i++) {
    part = rate * (double)((hs_time_t)1 << k);
    b[(size_t)i * n] += part;
    left -= part;
  }
  b[(size_t)b1 * n] += left;
}

/* Which links the trace may show, hence records: every link at stage detail
 * (the busiest are picked at the end) and without a device bound; with
 * --trace-devices N, the cross-site links and the links of the shown
 * devices, their nodes and their sites. The topology is rebuilt from the
 * cluster as simulate.c builds it, so link ids agree. O(devices + links). */
static hs_status_t link_filter(hs_trace_t *t, const hs_sim_opts_t *opts, hs_error_t *err)
{
  const hs_cluster_t *c = t->c;
  hs_topology_t *topo = NULL;
  uint8_t *nodes = NULL, *sites = NULL;
  hs_status_t st = hs_topology_new(c, &topo, err);
  if (st != HS_OK)
    return st;
  t->n_links = hs_topology_n_links(topo);
  const hs_link_t *links = hs_topology_links(topo);
  t->link_rec = hs_calloc(t->n_links + 1, 1);
  nodes = hs_calloc(c->n_nodes + 1, 1);
  sites = hs_calloc(c->n_sites + 1, 1);
  if (!t->link_rec || !nodes || !sites) {
    st = hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
    goto out;
  }
  bool all = opts->trace_detail == HS_TRACE_STAGE || opts->trace_max_devices <= 0;
  t->links_bounded = !all;
  for (size_t d = 0; d < c->n_devices; d++)
    if (t->shown[d]) {
      nodes[c->devices[d].node] = 1;
      sites[c->devices[d].site] = 1;
    }
  for (size_t l = 0; l < t->n_links; l++) {
    const hs_link_t *lk = &links[l];
    bool keep = all;
    switch (lk->kind) {
    case HS_LINK_GPU_UP: case HS_LINK_GPU_DOWN:
      keep = keep || shown(t, lk->owner);
      break;
    case HS_LINK_NIC_UP: case HS_LINK_NIC_DOWN: case HS_LINK_RAIL_UP: case HS_LINK_RAIL_DOWN:
      keep = keep || (lk->owner >= 0 && (size_t)lk->owner < c->n_nodes && nodes[lk->owner]);
      break;
    case HS_LINK_FABRIC:
      keep = keep || (lk->owner >= 0 && (size_t)lk->owner < c->n_sites && sites[lk->owner]);
      break;
    case HS_LINK_XSITE:
      keep = true;
      break;
    }
    t->link_rec[l] = keep;
  }
  st = rows_new(&t->rows, t->link_rec, t->n_links, err);
out:
  free(nodes);
  free(sites);
  hs_topology_free(topo);
  return st;
}

static bool link_recorded(const hs_trace_t *t, int32_t l)
{
  return l >= 0 && (size_t)l < t->n_links && t->link_rec[l];
}

static hs_status_t stream_open(hs_trace_t *t, const char *path, hs_error_t *err);
static void stream_close(hs_trace_t *t);

hs_status_t hs_trace_new(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                         const hs_lowered_t *low, const hs_sim_opts_t *opts, hs_trace_t **out,
                         hs_error_t *err)
{
  (void)low;
  hs_trace_t *t = hs_calloc(1, sizeof *t);
  if (!t)
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  t->m = m;
  t->c = c;
  t->plan = plan;
  t->detail = opts->trace_detail;
  t->links = opts->trace_links;
  hs_output_init(&t->out);
  t->dev = hs_calloc(c->n_devices + 1, sizeof *t->dev);
  t->shown = hs_calloc(c->n_devices + 1, 1);
  t->track = hs_calloc(c->n_devices + 1, sizeof *t->track);
  if (!t->dev || !t->shown || !t->track) {
    hs_trace_free(t);
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  }
  for (size_t d = 0; d < c->n_devices; d++)
    t->dev[d] = (devinfo_t){-1, -1, -1, -1, 0, -1, 0};
  int32_t v = plan->chunks > 0 ? plan->chunks : 1;
  /* members per (pipeline group, stage rank) */
  int32_t max_ranks = 1;
  for (int32_t i = 0; i < plan->n_pipelines; i++)
    max_ranks = HS_MAX(max_ranks, plan->pipelines[i].n_stages / v);
  int32_t *members = hs_calloc((size_t)plan->n_pipelines * (size_t)max_ranks + 1, sizeof *members);
  if (!members) {
    hs_trace_free(t);
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  }
  for (int32_t i = 0; i < plan->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &plan->pipelines[i];
    int32_t ranks = pl->n_stages / v;
    int32_t fold_into = -1;
    for (int32_t j = 0; j < i && fold_into < 0; j++)
      if (same_pipeline(c, &plan->pipelines[j], pl))
        fold_into = j;
    for (int32_t k = 0; k < ranks; k++) {
      const hs_plan_stage_t *stg = &pl->stages[k];
      for (int32_t q = 0; q < stg->n_replicas; q++) {
        const hs_plan_replica_t *rp = &stg->replicas[q];
        for (int32_t r = 0; r < rp->n_devices; r++) {
          int32_t d = rp->devices[r];
          if (d < 0 || (size_t)d >= c->n_devices)
            continue;
          int32_t g = fold_into < 0 ? i : fold_into;
          t->dev[d] = (devinfo_t){i, k, q, r, 0, g, members[(size_t)g * max_ranks + k]++};
          if (opts->trace_detail != HS_TRACE_STAGE) {
            t->shown[d] = opts->trace_max_devices <= 0 || d < opts->trace_max_devices;
            t->dev[d].folded = 1;
          }
        }
      }
      if (opts->trace_detail == HS_TRACE_STAGE && stg->n_replicas > 0 &&
          stg->replicas[0].n_devices > 0) {
        int32_t rep = stg->replicas[0].devices[0];
        if (fold_into < 0) {
          t->shown[rep] = 1;
          t->dev[rep].folded += stg->n_replicas;
        } else {
          int32_t host = plan->pipelines[fold_into].stages[k].replicas[0].devices[0];
          t->dev[host].folded += stg->n_replicas;
        }
      }
    }
  }
  free(members);
  hs_status_t st = link_filter(t, opts, err);
  if (st == HS_OK)
    st = stream_open(t, opts->trace_path, err);
  if (st != HS_OK) {
    hs_trace_free(t);
    return st;
  }
  *out = t;
  return HS_OK;
}

void hs_trace_free(hs_trace_t *t)
{
  if (!t)
    return;
  hs_output_abort(&t->out); /* no-op once committed */
  stream_close(t);
  for (size_t d = 0; t->track && d < t->c->n_devices; d++) {
    free(t->track[d].send.end);
    free(t->track[d].recv.end);
  }
  free(t->track);
  free(t->link_rec);
  free(t->spans);
  rows_destroy(&t->rows);
  free(t->dev);
  free(t->shown);
  free(t);
}

static void put(hs_trace_t *t, span_t *s);

/* A span of kind k on device (or link) pid; the caller fills the rest. */
static span_t mk(int32_t pid, kind_t k, const char *name, hs_time_t t0, hs_time_t t1)
{
  return (span_t){.pid = pid, .kind = (int16_t)k, .mb = -1, .chunk = -1, .peer = -1,
                  .name = name, .t0 = t0, .t1 = t1};
}

static bool shown(const hs_trace_t *t, int32_t d)
{
  return d >= 0 && (size_t)d < t->c->n_devices && t->shown[d];
}

void hs_trace_item(hs_trace_t *t, const hs_exec_t *ex, int32_t phase, int32_t mb, int32_t chunk,
                   hs_time_t t0, hs_time_t t1, hs_time_t rc_end)
{
  t->end = HS_MAX(t->end, t1);
  for (int32_t d = 0; d < ex->tp; d++) {
    if (!shown(t, ex->devices[d]))
      continue;
    span_t s = mk(ex->devices[d], K_ITEM, phase == HS_PHASE_FWD ? "fwd" : "bwd", t0, t1);
    s.phase = (int8_t)phase;
    s.mb = mb;
    s.chunk = chunk;
    put(t, &s);
    /* at kernel detail the recomputed segments show it */
    if (rc_end > t0 && t->detail != HS_TRACE_KERNEL) {
      s = mk(ex->devices[d], K_RECOMP, "recompute", t0, HS_MIN(rc_end, t1));
      put(t, &s);
    }
  }
}

void hs_trace_segment(hs_trace_t *t, const hs_exec_t *ex, bool recompute, hs_time_t t0,
                      hs_time_t t1)
{
  if (t->detail != HS_TRACE_KERNEL)
    return;
  for (int32_t d = 0; d < ex->tp; d++)
    if (shown(t, ex->devices[d])) {
      span_t s = mk(ex->devices[d], recompute ? K_RECOMP : K_SEG, recompute ? "recompute" : "kernels",
                    t0, t1);
      put(t, &s);
    }
}

void hs_trace_optimizer(hs_trace_t *t, const hs_exec_t *ex, hs_time_t t0, hs_time_t t1)
{
  t->end = HS_MAX(t->end, t1);
  for (int32_t d = 0; d < ex->tp; d++)
    if (shown(t, ex->devices[d])) {
      span_t s = mk(ex->devices[d], K_OPT, "optimizer", t0, t1);
      put(t, &s);
    }
}

void hs_trace_tp(hs_trace_t *t, const hs_exec_t *ex, const char *name, hs_time_t t0, hs_time_t t1,
                 double bytes)
{
  if (t->detail != HS_TRACE_KERNEL)
    return;
  for (int32_t d = 0; d < ex->tp; d++)
    if (shown(t, ex->devices[d])) {
      span_t s = mk(ex->devices[d], K_TP, name, t0, t1);
      s.bytes = bytes;
      put(t, &s);
    }
}

void hs_trace_dp(hs_trace_t *t, const hs_exec_t *ex, hs_time_t t0, hs_time_t t1, double bytes)
{
  t->end = HS_MAX(t->end, t1);
  for (int32_t d = 0; d < ex->tp; d++)
    if (shown(t, ex->devices[d])) {
      span_t s = mk(ex->devices[d], K_DP, "grad all-reduce", t0, t1);
      s.bytes = bytes;
      put(t, &s);
    }
}

void hs_trace_send(hs_trace_t *t, int32_t dev_a, int32_t dev_b, bool fwd, int32_t mb,
                   hs_time_t t0, hs_time_t t1, double bytes)
{
  t->end = HS_MAX(t->end, t1);
  bool a = shown(t, dev_a), b = shown(t, dev_b);
  /* an arrow needs both ends and a slice long enough to bind to */
  uint64_t id = (a && b && t1 - t0 >= 2) ? ++t->next_flow : 0;
  const char *what = fwd ? "act" : "grad";
  if (a) {
    span_t s = {.pid = dev_a, .kind = K_SEND, .phase = fwd, .mb = mb, .chunk = -1,
                .peer = dev_b, .name = what, .t0 = t0, .t1 = t1, .bytes = bytes, .flow = id};
    put(t, &s);
  }
  if (b) {
    span_t s = {.pid = dev_b, .kind = K_RECV, .phase = fwd, .mb = mb, .chunk = -1,
                .peer = dev_a, .name = what, .t0 = t0, .t1 = t1, .bytes = bytes, .flow = id};
    put(t, &s);
  }
}

void hs_trace_link_span(hs_trace_t *t, int32_t link, bool fwd, hs_time_t t0, hs_time_t t1,
                        double bytes)
{
  if (!t->links || t->detail != HS_TRACE_KERNEL || !link_recorded(t, link))
    return;
  span_t s = mk(link, K_LINK, fwd ? "act" : "grad", t0, t1);
  s.bytes = bytes;
  put(t, &s);
}

void hs_trace_flow_done(void *ctx, const hs_flow_t *f)
{
  hs_trace_t *t = ctx;
  if (t->oom || !t->links)
    return;
  /* every flow sets the end (the counters' bins and the idle fill reach
   * it), shown or not, so bounding the devices leaves both as they were */
  if (f->n_hops > 0) {
    t->flows_end = HS_MAX(t->flows_end, f->t_end);
    rows_fit(&t->rows, HS_MAX(f->t_end, 0));
  }
  for (int32_t h = 0; h < f->n_hops; h++) {
    int32_t l = f->hops[h].link;
    if (link_recorded(t, l))
      row_add(&t->rows, t->rows.row_of[l], f->t_start, f->t_end, f->bytes * (double)f->hops[h].weight);
  }
}

/* ---- writing ------------------------------------------------------------------ */

static int track_rank(const span_t *s)
{
  switch (s->kind) {
  case K_ITEM: case K_OPT: return 0; /* top level of the compute track */
  case K_SEG: case K_RECOMP: return 1;
  default: return 2;
  }
}

/* Which track group a span belongs to on its device (or link). */
static int group_of(const span_t *s)
{
  return (s->kind == K_RECOMP || s->kind == K_SEG || s->kind == K_OPT) ? K_ITEM : s->kind;
}

/* Sort key: track group, then start, then longer first (parents before
 * children), then recording order (stable, deterministic). */
static int cmp_span(const void *pa, const void *pb)
{
  const span_t *a = *(const span_t *const *)pa, *b = *(const span_t *const *)pb;
  int ga = a->kind == K_LINK, gb = b->kind == K_LINK;
  if (ga != gb)
    return ga - gb;
  if (a->pid != b->pid)
    return a->pid < b->pid ? -1 : 1;
  int ka = group_of(a), kb = group_of(b);
  if (ka != kb)
    return ka - kb;
  if (a->t0 != b->t0)
    return a->t0 < b->t0 ? -1 : 1;
  if (a->t1 != b->t1)
    return a->t1 > b->t1 ? -1 : 1;
  int ra = track_rank(a), rb = track_rank(b);
  if (ra != rb)
    return ra - rb;
  return a < b ? -1 : (a > b);
}

static const char *cat_of(const span_t *s)
{
  switch (s->kind) {
  case K_ITEM: case K_SEG: return "compute";
  case K_RECOMP: return "recompute";
  case K_OPT: return "optimizer";
  case K_TP: return "tp-comm";
  case K_DP: return "dp-comm";
  default: return "pp-comm";
  }
}

/* The file is written through a buffer of its own, with integers formatted
 * by hand: stdio's fprintf cost more than the rest of the writer together on
 * a 130 MB trace. Every event is far shorter than WRITER_SLACK, so an event
 * never splits a flush. The first failed write's errno is kept (stdio loses
 * it once a large fwrite bypassed its buffer) for the message; later writes
 * are skipped. */
#define WRITER_BUF (1 << 18)
#define WRITER_SLACK 4096

typedef struct writer {
  FILE *f;
  bool first;
  char *buf;
  size_t n;
  int error;    /* errno of the first failed write (-1: none given), 0: none */
} writer_t;

static void w_flush(writer_t *w)
{
  errno = 0;
  if (w->n && !w->error && fwrite(w->buf, 1, w->n, w->f) != w->n)
    w->error = errno ? errno : -1;
  w->n = 0;
}

static void w_str(writer_t *w, const char *s)
{
  size_t len = strlen(s);
  memcpy(w->buf + w->n, s, len);
  w->n += len;
}

static void w_char(writer_t *w, char c) { w->buf[w->n++] = c; }

static void w_int(writer_t *w, long long v)
{
  char tmp[24];
  int k = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    tmp[k++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    tmp[k++] = '-';
  while (k)
    w->buf[w->n++] = tmp[--k];
}

static void w_printf(writer_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void w_printf(writer_t *w, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(w->buf + w->n, WRITER_BUF + WRITER_SLACK - w->n, fmt, ap);
  va_end(ap);
  if (len > 0)
    w->n += HS_MIN((size_t)len, WRITER_BUF + WRITER_SLACK - w->n - 1);
}

/* "%.17g" of x >= 0. An integer below 1e17 is exact in a double and has at
 * most 17 digits, so %.17g prints it plainly: those (most byte counts) are
 * formatted by hand, the rest by printf. */
static void w_g17(writer_t *w, double x)
{
  if (x >= 0 && x < 1e17 && x == (double)(long long)x)
    w_int(w, (long long)x);
  else
    w_printf(w, "%.17g", x);
}

/* Microseconds with three decimals, as "%lld.%03lld" of ns / 1000, ns % 1000. */
static void ts(writer_t *w, hs_time_t ns)
{
  long long us = (long long)(ns / 1000), frac = (long long)(ns % 1000);
  w_int(w, us);
  w_char(w, '.');
  if (frac < 0) { /* never for simulated times; kept as printf wrote it */
    w_printf(w, "%03lld", frac);
    return;
  }
  w_char(w, (char)('0' + frac / 100));
  w_char(w, (char)('0' + frac / 10 % 10));
  w_char(w, (char)('0' + frac % 10));
}

/* Starts an event: the separator, and room for it in the buffer. */
static void sep(writer_t *w)
{
  if (w->n >= WRITER_BUF)
    w_flush(w);
  if (!w->first)
    w_str(w, ",\n");
  w->first = false;
}

static void slice(writer_t *w, int32_t pid, int32_t tid, const char *cat, hs_time_t t0,
                  hs_time_t t1)
{
  sep(w);
  w_str(w, "{\"ph\":\"X\",\"cat\":\"");
  w_str(w, cat);
  w_str(w, "\",\"pid\":");
  w_int(w, pid);
  w_str(w, ",\"tid\":");
  w_int(w, tid);
  w_str(w, ",\"ts\":");
  ts(w, t0);
  w_str(w, ",\"dur\":");
  ts(w, t1 - t0);
}

static void write_span(writer_t *w, const span_t *s)
{
  slice(w, s->pid, s->tid, cat_of(s), s->t0, s->t1);
  w_str(w, ",\"name\":\"");
  switch (s->kind) {
  case K_ITEM:
    w_str(w, s->name);
    w_str(w, " mb");
    w_int(w, s->mb);
    if (s->chunk > 0) {
      w_str(w, " c");
      w_int(w, s->chunk);
    }
    break;
  case K_SEND: case K_RECV:
    w_str(w, s->kind == K_SEND ? "send " : "recv ");
    w_str(w, s->name);
    w_str(w, " mb");
    w_int(w, s->mb);
    w_str(w, s->kind == K_SEND ? " to dev " : " from dev ");
    w_int(w, s->peer);
    break;
  default: w_str(w, s->name);
  }
  w_char(w, '"');
  if (s->bytes > 0) {
    w_str(w, ",\"args\":{\"bytes\":");
    w_g17(w, s->bytes);
    w_char(w, '}');
  }
  w_char(w, '}');
  if (s->flow && s->t1 - s->t0 >= 2) {
    /* bound to the enclosing slice: inside it, on its track */
    sep(w);
    w_str(w, s->kind == K_SEND ? "{\"ph\":\"s\"" : "{\"ph\":\"f\"");
    w_str(w, ",\"cat\":\"pp-comm\",\"name\":\"p2p\",\"id\":");
    w_int(w, (long long)s->flow);
    w_str(w, ",\"pid\":");
    w_int(w, s->pid);
    w_str(w, ",\"tid\":");
    w_int(w, s->tid);
    w_str(w, s->kind == K_SEND ? ",\"ts\":" : ",\"bp\":\"e\",\"ts\":");
    ts(w, s->t0 + (s->t1 - s->t0) / 2);
    w_char(w, '}');
  }
}

/* ---- streaming ---------------------------------------------------------------- */

/* Opens the trace's file (through a temporary, common/output.c) and writes
 * its head; the events follow as the simulator reports them. */
static hs_status_t stream_open(hs_trace_t *t, const char *path, hs_error_t *err)
{
  t->w = hs_calloc(1, sizeof *t->w);
  char *buf = hs_calloc(WRITER_BUF + WRITER_SLACK, 1);
  if (!t->w || !buf) {
    free(buf);
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  }
  *t->w = (writer_t){NULL, true, buf, 0, 0};
  hs_status_t st = hs_output_open(&t->out, path, err);
  if (st != HS_OK)
    return st;
  t->w->f = t->out.f;
  w_str(t->w, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"detail\":\"");
  w_str(t->w, hs_trace_detail_name(t->detail));
  w_str(t->w, "\"},\"traceEvents\":[\n");
  return HS_OK;
}

static void stream_close(hs_trace_t *t)
{
  if (t->w)
    free(t->w->buf);
  free(t->w);
  t->w = NULL;
}

/* The lowest lane free at t0 for a slice [t0, t1], taken; -1 when out of
 * memory. Slices come in order of their ends (the simulator reports a
 * transfer when it arrives), so a lane whose last slice ended by t0 holds
 * none that overlaps. O(lanes). */
static int32_t lane_take(lanes_t *ln, hs_time_t t0, hs_time_t t1)
{
  size_t l = 0;
  while (l < ln->n && ln->end[l] > t0)
    l++;
  if (l == ln->n) {
    if (hs_reserve((void **)&ln->end, &ln->cap, ln->n + 1, sizeof *ln->end) != HS_OK)
      return -1;
    ln->n++;
  }
  ln->end[l] = t1;
  return (int32_t)l;
}

static void idle(writer_t *w, int32_t pid, hs_time_t t0, hs_time_t t1)
{
  slice(w, pid, TID_COMPUTE, "idle", t0, t1);
  w_str(w, ",\"name\":\"idle\"}");
}

/* Hands a shown span to the file: a device's span gets its track and is
 * written at once (an idle slice first where its compute track had a gap);
 * link flow slices are kept, their lanes and the links' order being known
 * only at the end. O(lanes of the span's track). */
static void put(hs_trace_t *t, span_t *s)
{
  if (t->oom)
    return;
  t->shown_end = HS_MAX(t->shown_end, s->t1);
  if (s->kind == K_LINK) {
    if (hs_reserve((void **)&t->spans, &t->cap, t->n + 1, sizeof *t->spans) != HS_OK) {
      t->oom = true;
      return;
    }
    t->spans[t->n++] = *s;
    return;
  }
  devtrack_t *d = &t->track[s->pid];
  int32_t lane = 0;
  switch (s->kind) {
  case K_SEND: case K_RECV:
    lane = lane_take(s->kind == K_SEND ? &d->send : &d->recv, s->t0, s->t1);
    if (lane < 0) {
      t->oom = true;
      return;
    }
    s->tid = (s->kind == K_SEND ? TID_SEND : TID_RECV) + lane;
    break;
  case K_TP: s->tid = TID_TP; break;
  case K_DP: s->tid = TID_DP; break;
  default:
    s->tid = TID_COMPUTE;
    d->busy = true;
    if (track_rank(s) == 0) {
      if (s->t0 > d->top_end)
        idle(t->w, s->pid, d->top_end, s->t0);
      d->top_end = HS_MAX(d->top_end, s->t1);
    }
  }
  write_span(t->w, s);
}

/* Greedy lane packing of spans [lo, hi) (sorted by start): each takes the
 * lowest lane free at its start. Writes tid = base + lane; returns lanes. */
static int32_t pack_lanes(span_t **v, size_t lo, size_t hi, int32_t base, hs_time_t *lane_end,
                          int32_t max_lanes)
{
  int32_t n = 0;
  for (size_t k = lo; k < hi; k++) {
    int32_t l = 0;
    while (l < n && lane_end[l] > v[k]->t0)
      l++;
    if (l == n) {
      if (n < max_lanes)
        n++;
      else
        l = n - 1; /* cannot happen with max_lanes >= spans; keeps the index valid */
    }
    lane_end[l] = v[k]->t1;
    v[k]->tid = base + l;
  }
  return n;
}

typedef struct link_key {
  double bytes;
  int32_t link;
} link_key_t;

/* Busiest first, then by id. */
static int cmp_link_key(const void *pa, const void *pb)
{
  const link_key_t *a = pa, *b = pb;
  if (a->bytes != b->bytes)
    return a->bytes > b->bytes ? -1 : 1;
  return a->link - b->link;
}

/* Label of a device's process: where it sits in the plan, in Megatron
 * terms, and what it stands for at stage detail. */
static void process_name(const hs_trace_t *t, int32_t d, char *buf, size_t n)
{
  const hs_cluster_t *c = t->c;
  const devinfo_t *di = &t->dev[d];
  const hs_plan_pipeline_t *pl = &t->plan->pipelines[di->pipeline];
  const hs_plan_stage_t *stg = &pl->stages[di->stage];
  int32_t lf = -1, ll = -1;
  for (int32_t op = stg->op_first; op < stg->op_last; op++)
    if (t->m->ops[op].layer >= 0) {
      if (lf < 0)
        lf = t->m->ops[op].layer;
      ll = t->m->ops[op].layer;
    }
  char layers[48];
  if (lf >= 0)
    snprintf(layers, sizeof layers, "layers %d-%d", lf, ll);
  else
    snprintf(layers, sizeof layers, "ops %d-%d", stg->op_first, stg->op_last - 1);
  int32_t v = t->plan->chunks > 1 ? t->plan->chunks : 1;
  /* "dev 16 H100 tp4: stage 2 (layers 8-13), stands for 2 DP replicas":
   * the device first (validate's merged traces match on "dev N"), then
   * where it sits in the plan */
  int len = snprintf(buf, n, "dev %d %s tp%d: ", d, hs_cluster_gpu(c, d)->name,
                     stg->replicas[di->replica].n_devices);
  if (len < 0 || (size_t)len >= n)
    return;
  if (t->plan->n_pipelines > 1)
    len += snprintf(buf + len, n - (size_t)len, "P%d ", di->pipeline);
  if (len < 0 || (size_t)len >= n)
    return;
  if (v > 1)
    len += snprintf(buf + len, n - (size_t)len, "pp rank %d (%d chunks, chunk 0 %s)", di->stage, v, layers);
  else
    len += snprintf(buf + len, n - (size_t)len, "stage %d (%s)", di->stage, layers);
  if (len < 0 || (size_t)len >= n)
    return;
  if (t->detail == HS_TRACE_STAGE)
    snprintf(buf + len, n - (size_t)len, ", stands for %d DP replica%s", di->folded,
             di->folded == 1 ? "" : "s");
  else
    snprintf(buf + len, n - (size_t)len, ", replica %d tp rank %d", di->replica, di->tp_rank);
}

/* "%.6g" of x into out (>= 32 bytes), by hand for 1e-4 <= x < 1e6 (every
 * utilisation but the tiniest): six significant digits, trailing zeros
 * dropped, the same text as printf's (exact decimal value, ties to even:
 * tests/test_trace_format.c). printf formats the rest. O(1). */
void hs__trace_fmt_g6(double x, char *out)
{
  static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  if (!(x >= 1e-4 && x < 1e6)) {
    snprintf(out, 32, "%.6g", x);
    return;
  }
  int e = 5; /* decimal exponent: 10^e <= x < 10^(e+1) */
  while (e > -4 && x < (e >= 0 ? pow10[e] : 1.0 / pow10[-e]))
    e--;
  /* x 10^(5-e) = y + r exactly (10^(5-e) is exact, fma gives the product's
   * rounding error), so ties are seen and go to even, as printf's do */
  double p = pow10[5 - e], y = x * p, r = fma(x, p, -y), fl = floor(y);
  long long m = (long long)fl;
  if (y - fl > 0.5 || (y - fl == 0.5 && (r > 0 || (r == 0 && (m & 1)))))
    m++;
  if (m >= 1000000) { /* rounded up to the next decade */
    e++;
    m = (m + 5) / 10;
  }
  if (e >= 6) {
    snprintf(out, 32, "%.6g", x);
    return;
  }
  char digits[8];
  for (int i = 5; i >= 0; i--, m /= 10)
    digits[i] = (char)('0' + m % 10);
  int nd = 6; /* significant digits kept: trailing zeros of the fraction go */
  while (nd > e + 1 && nd > 1 && digits[nd - 1] == '0')
    nd--;
  int n = 0;
  if (e < 0) {
    out[n++] = '0';
    out[n++] = '.';
    for (int i = 0; i < -e - 1; i++)
      out[n++] = '0';
    for (int i = 0; i < nd; i++)
      out[n++] = digits[i];
  } else {
    for (int i = 0; i <= e; i++)
      out[n++] = digits[i];
    if (nd > e + 1) {
      out[n++] = '.';
      for (int i = e + 1; i < nd; i++)
        out[n++] = digits[i];
    }
  }
  out[n] = '\0';
}

/* One counter sample: "ts" in microseconds, the utilisation as %.6g. */
static void counter_sample(writer_t *w, const hs_link_t *lk, int32_t pid, hs_time_t ns, const char *u)
{
  sep(w);
  w_str(w, "{\"ph\":\"C\",\"name\":\"");
  w_str(w, lk->label);
  w_str(w, "\",\"pid\":");
  w_int(w, pid);
  w_str(w, ",\"ts\":");
  ts(w, ns);
  w_str(w, ",\"args\":{\"utilisation\":");
  w_str(w, u);
  w_str(w, "}}");
}

/* The utilisation counter of one link from its row (bin b at row[b x
 * stride], at scale k, covering [0, T)): bin b spans [b 2^k, min((b + 1) 2^k, T)) and shows its bytes over
 * capacity x span. A sample that prints as the previous one is left out (the
 * counter holds its value until the next); a last sample at T (0) closes the
 * series, so the integral of the counter x capacity is the link's bytes. */
static void counters(writer_t *w, const double *row, size_t stride, int8_t k, const hs_link_t *lk,
                     int32_t pid, hs_time_t T)
{
  double cap_per_ns = lk->GBps * HS_GB * 1e-9;
  hs_time_t width = (hs_time_t)1 << k;
  char prev[32] = "", cur[32];
  for (int64_t b = 0; b * width < T; b++) {
    hs_time_t lo = b * width, hi = HS_MIN(lo + width, T);
    double cap = cap_per_ns * (double)(hi - lo);
    double u = cap > 0 && isfinite(cap) ? row[(size_t)b * stride] / cap : 0.0;
    if (u == 0.0 && !signbit(u))
      strcpy(cur, "0");
    else
      hs__trace_fmt_g6(u, cur);
    if (b > 0 && strcmp(cur, prev) == 0)
      continue;
    counter_sample(w, lk, pid, lo, cur);
    memcpy(prev, cur, sizeof prev);
  }
  counter_sample(w, lk, pid, T, "0");
}

/* Trace step: the lanes of the link flow slices v (sorted by link, then
 * start): sets their tids (lane numbers) and lanes[link]. lane_end: scratch
 * of t->n + 1. */
static void assign_link_lanes(const hs_trace_t *t, span_t **v, hs_time_t *lane_end, int32_t *lanes)
{
  for (size_t lo = 0; lo < t->n;) {
    size_t hi = lo;
    while (hi < t->n && v[hi]->pid == v[lo]->pid)
      hi++;
    lanes[v[lo]->pid] = pack_lanes(v, lo, hi, 0, lane_end, (int32_t)(hi - lo));
    lo = hi;
  }
}

/* Trace step: the metadata of every shown device's process (name, sort
 * index, its fixed threads and send/receive lanes), in plan order. */
static void write_device_meta(writer_t *w, const hs_trace_t *t)
{
  const hs_cluster_t *c = t->c;
  for (size_t d = 0; d < c->n_devices; d++) {
    if (!t->shown[d])
      continue;
    const devinfo_t *di = &t->dev[d];
    char name[200];
    process_name(t, (int32_t)d, name, sizeof name);
    sep(w);
    w_printf(w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%zu,\"args\":{\"name\":\"%s\"}}", d, name);
    sep(w);
    w_printf(w, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%zu,\"args\":{\"sort_index\":%lld}}",
            d, 10 + (long long)di->group * 1000000000 + (long long)di->stage * 1000000 + di->member);
    static const char *const fixed[] = {"compute", "tp-comm", "dp-comm"};
    for (int k = 0; k < 3; k++) {
      if (k == TID_TP && t->detail != HS_TRACE_KERNEL)
        continue;
      sep(w);
      w_printf(w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
              d, k, fixed[k]);
    }
    for (int32_t s = 0; s < 2; s++)
      for (size_t l = 0; l < (s ? t->track[d].recv.n : t->track[d].send.n); l++) {
        sep(w);
        w_printf(w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%d,\"args\":{\"name\":\"pp %s %zu\"}}",
                d, (s ? TID_RECV : TID_SEND) + (int)l, s ? "recv" : "send", l);
      }
  }
}

/* What the link section of a trace reads: the topology's links and their
 * counters, the sorted spans with each link's lanes and slice range
 * [span_lo, span_hi), the iteration's end T, and a scratch array of
 * n_links + 1 (lorder). */
typedef struct trace_links {
  const hs_topology_t *topo;
  const hs_link_stats_t *ls;
  span_t **v;
  link_key_t *lorder;
  const int32_t *lanes;
  const size_t *span_lo, *span_hi;
  hs_time_t T;
} trace_links_t;

/* Trace step: the links that carried bytes, cross-site first; at stage
 * detail only the cross-site ones and the STAGE_LINKS busiest others:
 * their processes, utilisation counters (each shown link's row brought to
 * the scale of T) and flow lanes. */
static void write_links(writer_t *w, hs_trace_t *t, const trace_links_t *tl)
{
  size_t nl = hs_topology_n_links(tl->topo);
  const hs_link_t *links = hs_topology_links(tl->topo);
  link_key_t *lorder = tl->lorder;
  hs_time_t T = tl->T;
  int32_t nshow = 0;
  for (size_t l = 0; l < nl; l++)
    if (tl->ls[l].bytes > 0 && link_recorded(t, (int32_t)l))
      lorder[nshow++] = (link_key_t){tl->ls[l].bytes, (int32_t)l};
  qsort(lorder, (size_t)nshow, sizeof *lorder, cmp_link_key);
  int32_t kept = 0, others = 0;
  for (int32_t k = 0; k < nshow; k++) {
    bool xs = links[lorder[k].link].kind == HS_LINK_XSITE;
    if (xs || t->detail != HS_TRACE_STAGE || others++ < STAGE_LINKS)
      lorder[kept++] = lorder[k];
  }
  nshow = kept;
  rows_fit(&t->rows, T);
  int32_t pid_x = (int32_t)t->c->n_devices, pid_o = pid_x + 1;
  sep(w);
  w_printf(w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"cross-site links\"}}", pid_x);
  sep(w);
  w_printf(w, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":0}}", pid_x);
  sep(w);
  w_printf(w, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"links (%s)\"}}", pid_o,
          t->detail == HS_TRACE_STAGE ? "the 8 busiest"
          : t->links_bounded         ? "busy, of the shown devices"
                                     : "all busy");
  sep(w);
  w_printf(w, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":4000000000000000}}", pid_o);
  int32_t tid = 0;
  for (int32_t k = 0; k < nshow; k++) {
    int32_t l = lorder[k].link;
    int32_t pid = links[l].kind == HS_LINK_XSITE ? pid_x : pid_o;
    if (T > 0) {
      int32_t r = t->rows.row_of[l];
      counters(w, t->rows.bins + r, (size_t)t->rows.n_rows, t->rows.scale, &links[l], pid, T);
    }
    /* flow lanes of this link (kernel detail) */
    int32_t base = tid;
    for (int32_t ln = 0; ln < tl->lanes[l]; ln++) {
      sep(w);
      w_printf(w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s (%.4g GB/s) flows %d\"}}",
              pid, tid++, links[l].label, links[l].GBps, ln);
    }
    for (size_t q = tl->span_lo[l]; q < tl->span_hi[l]; q++) {
      span_t tmp = *tl->v[q];
      tmp.pid = pid;
      tmp.tid = base + tl->v[q]->tid;
      write_span(w, &tmp);
    }
  }
}

/* Trace step: the idle tail of every compute track that has slices, up to
 * the iteration's end T. */
static void write_idle_tails(writer_t *w, const hs_trace_t *t, hs_time_t T)
{
  for (size_t d = 0; d < t->c->n_devices; d++)
    if (t->shown[d] && t->track[d].busy && T > t->track[d].top_end)
      idle(w, (int32_t)d, t->track[d].top_end, T);
}

/* Finishes the file: the idle tails, the device processes' metadata, then
 * the links (counters and, at kernel detail, flow lanes), and commits it
 * (the named steps above). The device slices were written as they came. */
hs_status_t hs_trace_write(hs_trace_t *t, const hs_topology_t *topo, const hs_link_stats_t *ls,
                           const char *path, hs_error_t *err)
{
  if (t->oom)
    return hs_error_set(err, HS_ENOMEM, "%s: out of memory recording the trace", path);
  hs_status_t st = HS_OK;
  size_t nl = hs_topology_n_links(topo);
  span_t **v = hs_calloc(t->n + 1, sizeof *v);
  hs_time_t *lane_end = hs_calloc(t->n + 1, sizeof *lane_end);
  link_key_t *lorder = hs_calloc(nl + 1, sizeof *lorder);
  int32_t *lanes = hs_calloc(nl + 1, sizeof *lanes);
  /* each link's flow slices in v: [span_lo[l], span_hi[l]) */
  size_t *span_lo = hs_calloc(nl + 1, sizeof *span_lo), *span_hi = hs_calloc(nl + 1, sizeof *span_hi);
  if (!v || !lane_end || !lorder || !lanes || !span_lo || !span_hi)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory writing the trace"));
  for (size_t k = 0; k < t->n; k++)
    v[k] = &t->spans[k];
  /* the iteration's end, whichever device or flow reached it: a bounded
   * trace fills idle time and bins its counters as the full one does */
  hs_time_t T = HS_MAX(t->shown_end, HS_MAX(t->flows_end, t->end));
  qsort(v, t->n, sizeof *v, cmp_span);
  for (size_t k = 0; k < t->n; k++)
    if (v[k]->pid >= 0 && (size_t)v[k]->pid < nl) {
      size_t l = (size_t)v[k]->pid;
      if (span_hi[l] == 0)
        span_lo[l] = k;
      span_hi[l] = k + 1;
    }
  assign_link_lanes(t, v, lane_end, lanes);
  writer_t *w = t->w;
  write_idle_tails(w, t, T);
  write_device_meta(w, t);
  if (t->links) {
    trace_links_t tl = {topo, ls, v, lorder, lanes, span_lo, span_hi, T};
    write_links(w, t, &tl);
  }
  w_str(w, "\n]}\n");
  w_flush(w);
  if (w->error) /* the temporary is removed at cleanup, the target left as it was */
    HS_FAIL(hs_error_set(err, HS_EIO, "%s: write error%s%s", path, w->error > 0 ? ": " : "",
                         w->error > 0 ? strerror(w->error) : ""));
  st = hs_output_commit(&t->out, err);
cleanup:
  hs_output_abort(&t->out); /* no-op once committed */
  free(v);
  free(lane_end);
  free(lorder);
  free(lanes);
  free(span_lo);
  free(span_hi);
  return st;
}
