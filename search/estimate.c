/*
 * estimate.c - the analytical plan estimator (see estimate.h for the model).
 *
 * Representation: a small cache of per-op prefix sums, one entry per
 * (GPU type, node class, tp, samples, recompute). Entry arrays have n_ops+1
 * doubles each; a stage query is a handful of subtractions. The cache holds
 * at most CACHE_MAX entries and is overwritten round-robin when full, so the
 * memory is bounded by CACHE_MAX x 8 x (n_ops+1) doubles.
 *
 * Collective estimates (coll_s) are memoised across calls in an open-
 * addressing table keyed by (op, devices in order, bytes): the topology's
 * estimate is a pure function of them, and a search estimates the same
 * gradient all-reduce for every microbatch size and recomputation of one
 * layout. The table stops growing at COLL_MEMO_MAX entries or
 * COLL_MEMO_MAX_DEVS stored device ids (then estimates are computed as
 * without it), so it holds at most a few tens of MB.
 */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX 48
#define MRU_N 8 /* recent cache hits tried first (hs_estimate_stage) */
#define OPT_BYTES_PER_PARAM 32.0 /* as the simulator's optimizer step (lower.c) */
#define AR_MEMO_MAX 64
#define COLL_MEMO_MAX (1 << 16)          /* entries; the table has twice as many slots */
#define COLL_MEMO_MAX_DEVS (1 << 22)     /* device ids stored over all entries */

/* One memoised collective estimate; devices at devs[dev_off .. + n). */
typedef struct coll_memo_entry {
  uint64_t hash; /* 0: free slot */
  double bytes, t;
  size_t dev_off;
  int32_t n;
  hs_coll_op_t op;
} coll_memo_entry_t;

typedef struct coll_memo {
  coll_memo_entry_t *slots; /* cap slots, cap a power of two, at most half used */
  size_t cap, n;
  int32_t *devs;
  size_t n_devs, cap_devs;
} coll_memo_t;

enum {
  P_FWD, P_BWD, P_RECOMP_SEL, P_PARAMS, P_ACT, P_ACT_SEL, P_ACT_FULL,
  /* context parallelism: attention compute, KV bytes per sample, count */
  P_ATT_FWD, P_ATT_BWD, P_KV, P_N_ATT,
  /* expert parallelism: all-to-all bytes per sample (one way), count */
  P_A2A, P_N_EXP,
  P__COUNT
};

typedef struct cache_entry {
  bool used;
  int32_t gpu, tp;
  double intra_GBps, intra_lat_us;
  double samples;
  double *pre[P__COUNT]; /* prefix sums, n_ops + 1 each */
} cache_entry_t;

/* One remembered pipeline_run_s: its inputs (key, n_key doubles, hash h)
 * and its results (tpipe, then bwd_end: the key's last S doubles). */
typedef struct run_memo {
  uint64_t h;
  const hs_schedule_t *sc;
  double *key; /* n_key + S doubles, NULL: empty */
  size_t n_key;
  double tpipe;
} run_memo_t;

#define RUN_MEMO 1024 /* direct-mapped entries */

struct hs_estimator {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_dtype_t dt;
  hs_topology_t *topo;
  cache_entry_t cache[CACHE_MAX];
  int32_t next_victim;
  int32_t mru[MRU_N];     /* cache indices of the last lookups, latest first */
  double max_block_saved; /* largest block's saved bytes per sample (full recompute transient) */
  double *mem;            /* per device, for hs_memory_per_device */
  /* the tied LM head (ops[tied_head].tied_op is the word embedding), -1 none */
  int32_t tied_head;
  hs_practice_t practice; /* of the cached entries (hs_estimator_set_practice) */
  double deadline_s;      /* hs_estimator_set_deadline; 0 = none */
  double cutoff_s;        /* hs_estimator_set_cutoff; INFINITY = none */
  bool out_of_time;       /* a collective was skipped for the deadline */
  coll_memo_t cm;         /* collective estimates of earlier calls (coll_s) */
  /* pipeline_run_s's scratch, grown as needed: per (stage, microbatch)
   * item ends, per rank its schedule order */
  double *run_end;
  size_t run_end_cap;
  hs_sched_item_t *run_items;
  size_t run_items_cap;
  size_t *run_pos;
  size_t run_pos_cap;
  /* pipeline_run_s's results by their inputs (run_memo_*) */
  run_memo_t *run_memo; /* RUN_MEMO entries, allocated on first use */
  double *run_key;      /* scratch: the inputs of the run being asked */
  size_t run_key_cap;
  /* run_orders' kept shape (orders_sc NULL: none) */
  const hs_schedule_t *orders_sc;
  int32_t orders_ranks, orders_v, orders_m;
  int32_t *orders_warm;
  size_t orders_warm_cap;
};

/* Largest block's saved bytes per sample under the kernel set (the
 * transient of full recomputation). */
/* Overlap contention (sim/contention.h): the GPU's overlap_slowdown k of
 * device dev, 0 with the plan's overlap_contention off. */
static double overlap_k(const hs_estimator_t *e, int32_t dev)
{
  return e->practice.overlap_contention ? hs_cluster_gpu(e->c, dev)->overlap_slowdown : 0.0;
}

/* Compute of c s beside a collective of g s started with it, running at
 * 1/(1+k) while the collective runs: the pair ends after this (k > 0). */
static double beside_s(double k, double c, double g)
{
  return fmax(g, c + k * fmin(c, g / (1.0 + k)));
}

static void set_block_saved(hs_estimator_t *e)
{
  const hs_model_t *m = e->m;
  double block = 0.0;
  e->max_block_saved = 0.0;
  for (size_t i = 0; i < m->n_ops; i++) {
    if (i > 0 && m->ops[i].layer != m->ops[i - 1].layer)
      block = 0.0;
    if (m->ops[i].layer >= 0) {
      hs_op_t tmp;
      block += hs_practice_op(&e->practice, &m->ops[i], 1, &tmp)->saved_bytes;
      e->max_block_saved = fmax(e->max_block_saved, block);
    }
  }
}

hs_status_t hs_estimator_new(const hs_model_t *m, const hs_cluster_t *c, hs_dtype_t precision,
                             hs_estimator_t **out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  *out = NULL;
  hs_estimator_t *e = hs_calloc(1, sizeof *e);
  if (!e)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  e->m = m;
  e->c = c;
  e->dt = precision;
  HS_CHECK(hs_topology_new(c, &e->topo, err));
  e->mem = hs_calloc(c->n_devices ? c->n_devices : 1, sizeof *e->mem);
  if (!e->mem)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  e->tied_head = -1;
  e->cutoff_s = INFINITY;
  hs_practice_init(&e->practice);
  for (size_t i = 0; i < m->n_ops && e->tied_head < 0; i++)
    if (m->ops[i].tied_params > 0 && m->ops[i].tied_op >= 0 &&
        (size_t)m->ops[i].tied_op < m->n_ops && (size_t)m->ops[i].tied_op != i)
      e->tied_head = (int32_t)i;
  set_block_saved(e);
  *out = e;
  return HS_OK;
cleanup:
  hs_estimator_free(e);
  return st;
}

void hs_estimator_free(hs_estimator_t *e)
{
  if (!e)
    return;
  for (int k = 0; k < CACHE_MAX; k++)
    for (int p = 0; p < P__COUNT; p++)
      free(e->cache[k].pre[p]);
  hs_topology_free(e->topo);
  free(e->mem);
  free(e->cm.slots);
  free(e->cm.devs);
  free(e->run_end);
  free(e->run_items);
  free(e->run_pos);
  free(e->orders_warm);
  if (e->run_memo)
    for (size_t k = 0; k < RUN_MEMO; k++)
      free(e->run_memo[k].key);
  free(e->run_memo);
  free(e->run_key);
  free(e);
}

const hs_topology_t *hs_estimator_topology(const hs_estimator_t *e) { return e->topo; }

const hs_practice_t *hs_estimator_practice(const hs_estimator_t *e) { return &e->practice; }

void hs_estimator_set_practice(hs_estimator_t *e, const hs_practice_t *p)
{
  if (hs_practice_equal(&e->practice, p))
    return;
  e->practice = *p;
  set_block_saved(e);
  for (int k = 0; k < CACHE_MAX; k++)
    e->cache[k].used = false;
}

void hs_estimator_set_precision(hs_estimator_t *e, hs_dtype_t precision)
{
  if (e->dt == precision)
    return;
  e->dt = precision;
  for (int k = 0; k < CACHE_MAX; k++)
    e->cache[k].used = false;
}

hs_dtype_t hs_estimator_precision(const hs_estimator_t *e) { return e->dt; }

void hs_estimator_set_deadline(hs_estimator_t *e, double deadline_s) { e->deadline_s = deadline_s; }

bool hs_estimator_out_of_time(const hs_estimator_t *e) { return e->out_of_time; }

/* FNV-1a of (op, n, bytes' bits, devices); never 0 (the free slot's
 * mark). O(n). */
static uint64_t coll_hash(hs_coll_op_t op, const int32_t *devices, int32_t n, double bytes)
{
  uint64_t h = 1469598103934665603ULL, bits = 0;
  memcpy(&bits, &bytes, sizeof bits);
  uint64_t head[3] = {(uint64_t)op, (uint64_t)n, bits};
  for (int k = 0; k < 3; k++)
    h = (h ^ head[k]) * 1099511628211ULL;
  for (int32_t k = 0; k < n; k++)
    h = (h ^ (uint32_t)devices[k]) * 1099511628211ULL;
  return h ? h : 1;
}

void hs_estimator_set_cutoff(hs_estimator_t *e, double cutoff_s)
{
  e->cutoff_s = cutoff_s > 0.0 ? cutoff_s : INFINITY;
}

/* The slot holding the key, or the free slot where it would go (the
 * table is never full). O(n) expected. */
static coll_memo_entry_t *coll_memo_slot(coll_memo_t *cm, uint64_t h, hs_coll_op_t op,
                                         const int32_t *devices, int32_t n, double bytes)
{
  for (size_t i = (size_t)h & (cm->cap - 1);; i = (i + 1) & (cm->cap - 1)) {
    coll_memo_entry_t *s = &cm->slots[i];
    if (s->hash == 0 ||
        (s->hash == h && s->op == op && s->n == n &&
         memcmp(&s->bytes, &bytes, sizeof bytes) == 0 &&
         memcmp(cm->devs + s->dev_off, devices, sizeof *devices * (size_t)n) == 0))
      return s;
  }
}

/* Doubles the table (rehashing every entry); false when out of memory
 * (the table is then unchanged). O(entries). */
static bool coll_memo_grow(coll_memo_t *cm)
{
  size_t cap = cm->cap ? 2 * cm->cap : 1024;
  coll_memo_entry_t *slots = hs_calloc(cap, sizeof *slots), *old = cm->slots;
  if (!slots)
    return false;
  size_t old_cap = cm->cap;
  cm->slots = slots;
  cm->cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].hash) {
      size_t k = (size_t)old[i].hash & (cap - 1);
      while (slots[k].hash)
        k = (k + 1) & (cap - 1);
      slots[k] = old[i];
    }
  free(old);
  return true;
}

/* Stores t for the key when the table has room (within COLL_MEMO_MAX and
 * COLL_MEMO_MAX_DEVS, memory permitting): a memo that cannot grow only
 * costs estimates. O(n) amortized. */
static void coll_memo_put(coll_memo_t *cm, uint64_t h, hs_coll_op_t op, const int32_t *devices,
                          int32_t n, double bytes, double t)
{
  if (cm->n >= COLL_MEMO_MAX || cm->n_devs + (size_t)n > COLL_MEMO_MAX_DEVS)
    return;
  if (2 * (cm->n + 1) > cm->cap && !coll_memo_grow(cm))
    return;
  if (cm->n_devs + (size_t)n > cm->cap_devs) {
    size_t cap = HS_MAX(2 * cm->cap_devs, cm->n_devs + (size_t)n + 1024);
    int32_t *d = realloc(cm->devs, cap * sizeof *d);
    if (!d)
      return;
    cm->devs = d;
    cm->cap_devs = cap;
  }
  memcpy(cm->devs + cm->n_devs, devices, sizeof *devices * (size_t)n);
  coll_memo_entry_t *s = coll_memo_slot(cm, h, op, devices, n, bytes);
  *s = (coll_memo_entry_t){h, bytes, t, cm->n_devs, n, op};
  cm->n_devs += (size_t)n;
  cm->n++;
}

/* Seconds of collective `op` over devices[0..n) into *t (0 for nothing to
 * move, or when the collective model has no finite answer), from e->cm
 * when an earlier call estimated the same; HS_ENOMEM only when memory ran
 * out. O(n) for a memo answer. */
static hs_status_t coll_s(hs_estimator_t *e, hs_coll_op_t op, const int32_t *devices, int32_t n,
                          double bytes, double *t)
{
  *t = 0.0;
  if (n <= 1 || bytes <= 0.0)
    return HS_OK;
  if (e->out_of_time) /* past the deadline: no estimate (below) */
    return HS_OK;
  uint64_t h = coll_hash(op, devices, n, bytes);
  const coll_memo_entry_t *hit = e->cm.cap ? coll_memo_slot(&e->cm, h, op, devices, n, bytes) : NULL;
  if (hit && hit->hash) {
    *t = hit->t;
    return HS_OK;
  }
  if (!hs__sim_fits(e->deadline_s, hs__coll_cost_s(op, n))) {
    e->out_of_time = true; /* this estimate would end after the deadline */
    return HS_OK;
  }
  hs_coll_t cl;
  hs_coll_init(&cl);
  cl.op = op;
  cl.devices = devices;
  cl.n = n;
  cl.bytes = bytes;
  double s = NAN;
  if (hs_coll_estimate_topo(e->topo, &cl, &s, NULL) == HS_ENOMEM)
    return HS_ENOMEM;
  *t = isfinite(s) ? s : 0.0;
  coll_memo_put(&e->cm, h, op, devices, n, bytes, *t);
  return HS_OK;
}

hs_status_t hs_estimate_allreduce(hs_estimator_t *e, const int32_t *devices, int32_t n, double bytes,
                                  double *out_s)
{
  return coll_s(e, HS_COLL_ALLREDUCE, devices, n, bytes, out_s);
}

/* `algo`'s uncontended all-reduce of `bytes` over the group into *s (NAN
 * when it does not apply); the estimate's status. */
static hs_status_t algo_probe(hs_estimator_t *e, const hs_coll_algo_t *algo, const int32_t *devices,
                              int32_t n, double bytes, double *s)
{
  hs_coll_t cl;
  hs_coll_init(&cl);
  cl.op = HS_COLL_ALLREDUCE;
  cl.algo = algo;
  cl.devices = devices;
  cl.n = n;
  cl.bytes = bytes;
  *s = NAN;
  return hs_coll_estimate_topo(e->topo, &cl, s, NULL);
}

/* One algorithm's line from two probes (its closed form is affine in the
 * bytes: latency terms plus bytes over bandwidths). */
static hs_status_t algo_line(hs_estimator_t *e, const hs_coll_algo_t *algo, const int32_t *devices,
                             int32_t n, double *a_s, double *b_s)
{
  double t[2] = {NAN, NAN};
  for (int i = 0; i < 2; i++) {
    if (algo_probe(e, algo, devices, n, (i + 1) * 1e6, &t[i]) == HS_ENOMEM)
      return HS_ENOMEM;
    if (!isfinite(t[i]))
      t[i] = 0.0;
  }
  *b_s = (t[1] - t[0]) / 1e6;
  *a_s = t[0] - *b_s * 1e6;
  return HS_OK;
}

/* *ok = whether `algo` runs an all-reduce over the group (its estimate at
 * 1 MB is valid and finite); HS_ENOMEM when memory ran out. */
static hs_status_t algo_applies(hs_estimator_t *e, const hs_coll_algo_t *algo, const int32_t *devices,
                                int32_t n, bool *ok)
{
  double s = NAN;
  hs_status_t st = algo_probe(e, algo, devices, n, 1e6, &s);
  *ok = st == HS_OK && isfinite(s);
  return st == HS_ENOMEM ? HS_ENOMEM : HS_OK;
}

hs_status_t hs_estimate_allreduce_line(hs_estimator_t *e, const int32_t *devices, int32_t n,
                                       hs_allreduce_line_t *out)
{
  memset(out, 0, sizeof *out);
  if (n <= 1)
    return HS_OK;
  const hs_coll_algo_t *def = hs_coll_algo_default(e->topo, HS_COLL_ALLREDUCE, devices, n);
  if (!def)
    return HS_ENOMEM;
  if (algo_line(e, def, devices, n, &out->a_s[0], &out->b_s_per_byte[0]) != HS_OK)
    return HS_ENOMEM;
  out->n_algos = 1;
  const hs_coll_algo_t *ring = hs_coll_algo_find("node_ring"), *tree = hs_coll_algo_find("node_tree");
  if (def == ring && tree) {
    if (algo_line(e, tree, devices, n, &out->a_s[1], &out->b_s_per_byte[1]) != HS_OK)
      return HS_ENOMEM;
    out->n_algos = 2;
    out->n = n;
    out->nvls = hs_coll_group_nvls(e->topo, devices, n);
    /* NVLS-Tree where it applies (the same ranks on every node, >= 2) */
    const hs_coll_algo_t *nt = hs_coll_algo_find("nvls_tree");
    bool ok = false;
    if (out->nvls && nt && algo_applies(e, nt, devices, n, &ok) != HS_OK)
      return HS_ENOMEM;
    if (ok) {
      if (algo_line(e, nt, devices, n, &out->a_s[2], &out->b_s_per_byte[2]) != HS_OK)
        return HS_ENOMEM;
      out->n_algos = 3;
    }
  } else if (def == hs_coll_algo_find("ring") &&
             (out->nvls_port_GBps = hs_coll_group_nvls_port_GBps_topo(e->topo, devices, n)) > 0) {
    /* one NVLS node: nvls where NCCL's tuner takes it (hs_coll_algo_choose_paths) */
    const hs_coll_algo_t *nvls = hs_coll_algo_find("nvls");
    bool ok = false;
    if (algo_applies(e, nvls, devices, n, &ok) != HS_OK)
      return HS_ENOMEM;
    if (ok) {
      if (algo_line(e, nvls, devices, n, &out->a_s[1], &out->b_s_per_byte[1]) != HS_OK)
        return HS_ENOMEM;
      out->n_algos = 2;
      out->n = n;
    } else {
      out->nvls_port_GBps = 0.0;
    }
  }
  return HS_OK;
}

double hs_estimate_allreduce_line_s(const hs_allreduce_line_t *l, double bytes)
{
  if (bytes <= 0.0 || l->n_algos == 0)
    return 0.0;
  double ring = l->a_s[0] + l->b_s_per_byte[0] * bytes;
  if (l->n_algos < 2)
    return ring;
  double tree = l->a_s[1] + l->b_s_per_byte[1] * bytes;
  if (l->nvls_port_GBps > 0.0)
    return hs_coll_nvls_preferred(bytes, l->n, l->nvls_port_GBps) ? tree : ring;
  double t = hs_coll_tree_preferred(ring, l->b_s_per_byte[0] * bytes, tree, l->a_s[1], l->n, l->nvls,
                                    bytes)
                 ? tree
                 : ring;
  if (l->n_algos > 2) {
    double nt = l->a_s[2] + l->b_s_per_byte[2] * bytes;
    if (nt < fmin(ring, tree))
      t = nt;
  }
  return t;
}

/* Bytes per second of a link or path of `GBps`; an unbounded one as 1e12 GB/s. */
static double link_Bps(double GBps)
{
  return (isfinite(GBps) && GBps > 0 ? GBps : 1e12) * HS_GB;
}

double hs_estimate_p2p_shared_s(hs_estimator_t *e, int32_t src, int32_t dst, double bytes,
                                double node_bytes, double site_bytes, int32_t nsub)
{
  if (bytes <= 0.0 || src == dst)
    return 0.0;
  hs_path_t p;
  if (hs_topology_path(e->topo, src, dst, &p) != HS_OK)
    return 0.0;
  /* nsub sub-sends, one per rank pair: their own GPU ports and NIC rails
   * (the path's every link: the bottleneck), the node's NIC and fabric
   * shared by them all and by node_bytes' other senders, the site links
   * by site_bytes' */
  double t = (nsub > 1 ? bytes / nsub : bytes) / link_Bps(p.bottleneck_GBps);
  const hs_link_t *L = hs_topology_links(e->topo);
  for (int32_t i = 0; i < p.n; i++) {
    hs_link_kind_t k = L[p.links[i]].kind;
    if (k == HS_LINK_GPU_UP || k == HS_LINK_GPU_DOWN || k == HS_LINK_RAIL_UP || k == HS_LINK_RAIL_DOWN)
      continue;
    double b = fmax(bytes, k == HS_LINK_XSITE ? site_bytes : node_bytes);
    t = fmax(t, b / link_Bps(L[p.links[i]].GBps));
  }
  return p.latency_ns * 1e-9 + t;
}

double hs_estimate_p2p_s(hs_estimator_t *e, int32_t src, int32_t dst, double bytes, int32_t nsub)
{
  return hs_estimate_p2p_shared_s(e, src, dst, bytes, bytes, bytes, nsub);
}

static double op_saved(const hs_op_t *op, bool selective, int32_t tp)
{
  double b = selective ? op->saved_bytes_selective : op->saved_bytes;
  return (op->saved_tp_sharded && tp > 1) ? b / tp : b;
}


/* Fills entry k for the key; O(ops) compute calls plus a few collective
 * estimates (the TP all-reduce and all-to-all are linear in bytes: two
 * probes give the line). */
static hs_status_t fill_entry(hs_estimator_t *e, cache_entry_t *ce, const int32_t *devices,
                              int32_t tp, double samples)
{
  const hs_model_t *m = e->m;
  size_t n = m->n_ops;
  for (int p = 0; p < P__COUNT; p++) {
    if (!ce->pre[p]) {
      ce->pre[p] = hs_calloc(n + 1, sizeof(double));
      if (!ce->pre[p])
        return HS_ENOMEM;
    }
  }
  const hs_gpu_t *g = hs_cluster_gpu(e->c, devices[0]);
  double kc = e->practice.overlap_contention ? g->overlap_slowdown : 0.0; /* tp_comm_overlap */
  double ar_a = 0, ar_b = 0, a2a_a = 0, a2a_b = 0;
  bool sp = e->practice.sequence_parallel && tp > 1;
  int32_t ep = e->practice.expert_parallel > 1 ? e->practice.expert_parallel : 1;
  if (tp > 1) {
    double rs1 = 0, ag1 = 0, rs2 = 0, ag2 = 0, u1, u2;
    if (sp ? coll_s(e, HS_COLL_REDUCE_SCATTER, devices, tp, 1e6, &rs1) != HS_OK ||
                 coll_s(e, HS_COLL_ALLGATHER, devices, tp, 1e6, &ag1) != HS_OK ||
                 coll_s(e, HS_COLL_REDUCE_SCATTER, devices, tp, 2e6, &rs2) != HS_OK ||
                 coll_s(e, HS_COLL_ALLGATHER, devices, tp, 2e6, &ag2) != HS_OK
           : coll_s(e, HS_COLL_ALLREDUCE, devices, tp, 1e6, &rs1) != HS_OK ||
                 coll_s(e, HS_COLL_ALLREDUCE, devices, tp, 2e6, &rs2) != HS_OK)
      return HS_ENOMEM;
    if (coll_s(e, HS_COLL_ALLTOALL, devices, tp, 1e6, &u1) != HS_OK ||
        coll_s(e, HS_COLL_ALLTOALL, devices, tp, 2e6, &u2) != HS_OK)
      return HS_ENOMEM;
    /* sequence parallelism: each all-reduce becomes a reduce-scatter and an
     * all-gather (the same bytes on a ring) */
    double t1 = rs1 + ag1, t2 = rs2 + ag2;
    ar_b = (t2 - t1) / 1e6;
    ar_a = t1 - ar_b * 1e6;
    a2a_b = (u2 - u1) / 1e6;
    a2a_a = u1 - a2a_b * 1e6;
  }
  for (size_t i = 0; i < n; i++) {
    hs_op_t tmp;
    const hs_op_t *op = hs_practice_op(&e->practice, &m->ops[i], tp, &tmp);
    /* each op at least its kernels' host issues (sim/host.c: the queue
     * lowering runs does not split into prefix sums) */
    double f = hs_host_op_floor_s(&e->practice, op, HS_PHASE_FWD,
                                  hs_compute_op_s(g, e->dt, op, samples, tp, HS_PHASE_FWD));
    double b = hs_host_op_floor_s(&e->practice, op, HS_PHASE_BWD,
                                  hs_compute_op_s(g, e->dt, op, samples, tp, HS_PHASE_BWD));
    if (tp > 1) {
      /* tp_comm_overlap: the GEMM next to the collective hides it (lower.c) */
      bool ov = e->practice.tp_comm_overlap;
      if (op->tp_allreduce_fwd) {
        double c = ar_a + ar_b * op->out_bytes * samples;
        f = !ov ? f + c : kc > 0.0 ? beside_s(kc, f, c) : f + fmax(0.0, c - f);
      }
      if (op->tp_allreduce_bwd && i > 0) {
        double c = ar_a + ar_b * m->ops[i - 1].out_bytes * samples;
        b = !ov ? b + c : kc > 0.0 ? beside_s(kc, b, c) : b + fmax(0.0, c - b);
      }
      if (op->kind == HS_OP_MOE_EXPERT && ep == 1) { /* EP: over the EP group instead */
        double a2a = 2 * (a2a_a + a2a_b * op->out_bytes * (op->topk > 0 ? op->topk : 1) * samples);
        f += a2a;
        b += a2a;
      }
    }
    double sel = hs_practice_recomputes_selective(op)
                     ? hs_compute_op_s(g, e->dt, op, samples, tp, HS_PHASE_FWD) : 0.0;
    double params = (op->tp_split == HS_TP_REPLICATE || tp <= 1) ? op->params : op->params / tp;
    bool expert = op->kind == HS_OP_MOE_EXPERT;
    if (expert && ep > 1)
      params /= ep; /* each rank of the EP group holds 1/E of the experts */
    bool att = op->kind == HS_OP_ATTENTION;
    double fc = att ? hs_compute_op_s(g, e->dt, op, samples, tp, HS_PHASE_FWD) : 0.0;
    double bc = att ? hs_compute_op_s(g, e->dt, op, samples, tp, HS_PHASE_BWD) : 0.0;
    double full;
    if (op->layer < 0)
      full = op_saved(op, false, tp);
    else if (i > 0 && m->ops[i - 1].layer != op->layer)
      full = m->ops[i - 1].out_bytes / (sp ? tp : 1);
    else
      full = 0.0;
    double vals[P__COUNT] = {f, b, sel, params, op_saved(op, false, tp) * samples,
                             op_saved(op, true, tp) * samples, full * samples, fc, bc,
                             att ? hs_model_kv_sample_bytes(m, op, tp) : 0.0, att ? 1.0 : 0.0,
                             expert ? op->out_bytes * (op->topk > 0 ? op->topk : 1) : 0.0,
                             expert ? 1.0 : 0.0};
    for (int p = 0; p < P__COUNT; p++)
      ce->pre[p][i + 1] = ce->pre[p][i] + vals[p];
  }
  return HS_OK;
}

/* Cache index k moves to the front of the recent hits. O(MRU_N). */
static void mru_touch(hs_estimator_t *e, int32_t k)
{
  int32_t i = 0;
  while (i + 1 < MRU_N && e->mru[i] != k)
    i++;
  for (; i > 0; i--)
    e->mru[i] = e->mru[i - 1];
  e->mru[0] = k;
}

hs_status_t hs_estimate_stage(hs_estimator_t *e, int32_t op_first, int32_t op_last,
                              const int32_t *devices, int32_t tp, double samples,
                              hs_recompute_t recompute, hs_stage_cost_t *out)
{
  memset(out, 0, sizeof *out);
  if (op_first < 0 || op_last > (int32_t)e->m->n_ops || op_first >= op_last || tp < 1)
    return HS_EINVAL;
  const hs_device_t *d0 = &e->c->devices[devices[0]];
  const hs_node_t *nd = &e->c->nodes[d0->node];
  cache_entry_t *ce = NULL;
  /* keys are unique in the cache, so the lookup may try entries in any
   * order: first the last few hits (the table of hapt_space.c asks for
   * the same handful of (tp, samples) entries span after span), then
   * every entry */
  int hit = -1;
  for (int i = 0; i < MRU_N + CACHE_MAX && hit < 0; i++) {
    int k = i < MRU_N ? e->mru[i] : i - MRU_N;
    const cache_entry_t *x = &e->cache[k];
    if (x->used && x->gpu == d0->gpu && x->tp == tp && x->samples == samples &&
        x->intra_GBps == nd->intra_GBps && x->intra_lat_us == nd->intra_latency_us)
      hit = k;
  }
  if (hit >= 0) {
    ce = &e->cache[hit];
    mru_touch(e, hit);
  }
  if (!ce) {
    int k = 0;
    while (k < CACHE_MAX && e->cache[k].used)
      k++;
    if (k == CACHE_MAX) {
      k = e->next_victim;
      e->next_victim = (e->next_victim + 1) % CACHE_MAX;
    }
    ce = &e->cache[k];
    mru_touch(e, k);
    ce->used = false;
    if (fill_entry(e, ce, devices, tp, samples) != HS_OK)
      return HS_ENOMEM;
    ce->used = true;
    ce->gpu = d0->gpu;
    ce->tp = tp;
    ce->samples = samples;
    ce->intra_GBps = nd->intra_GBps;
    ce->intra_lat_us = nd->intra_latency_us;
  }
#define RANGE(p) (ce->pre[p][op_last] - ce->pre[p][op_first])
  /* the framework's host work before each microbatch's first kernel (sim/host.c) */
  double mb_host_s = e->practice.framework.microbatch_us * 1e-6;
  out->fwd_s = RANGE(P_FWD) + mb_host_s;
  out->bwd_s = RANGE(P_BWD) + mb_host_s;
  out->params_per_device = RANGE(P_PARAMS);
  if (e->tied_head >= op_first && e->tied_head < op_last) {
    /* a stage with the LM head but not its tied embedding keeps a copy */
    const hs_op_t *h = &e->m->ops[e->tied_head];
    if (h->tied_op < op_first || h->tied_op >= op_last)
      out->params_per_device +=
          (h->tp_split == HS_TP_REPLICATE || tp <= 1) ? h->tied_params : h->tied_params / tp;
  }
  out->state_bytes = out->params_per_device * HS_ADAM_STATE_BYTES_PER_PARAM;
  out->att_fwd_s = RANGE(P_ATT_FWD);
  out->att_bwd_s = RANGE(P_ATT_BWD);
  out->kv_bytes = RANGE(P_KV);
  out->n_att = (int32_t)lround(RANGE(P_N_ATT));
  out->a2a_bytes = RANGE(P_A2A);
  out->n_expert = (int32_t)lround(RANGE(P_N_EXP));
  switch (recompute) {
  case HS_RECOMPUTE_FULL:
    out->bwd_s += out->fwd_s - mb_host_s;
    out->act_bytes = RANGE(P_ACT_FULL);
    out->transient_bytes = e->max_block_saved * samples / (tp > 1 ? tp : 1);
    break;
  case HS_RECOMPUTE_SELECTIVE:
    out->bwd_s += RANGE(P_RECOMP_SEL);
    out->act_bytes = RANGE(P_ACT_SEL);
    break;
  default:
    out->act_bytes = RANGE(P_ACT);
    break;
  }
#undef RANGE
  const hs_gpu_t *g = hs_cluster_gpu(e->c, devices[0]);
  double ob = out->params_per_device *
              (OPT_BYTES_PER_PARAM + hs_host_optimizer_extra_bytes(&e->practice.framework, e->dt));
  out->optimizer_s = ob > 0 ? hs_compute_kernel_s(g, HS_DTYPE_FP32, false, 0.0, ob) : 0.0;
  return HS_OK;
}

/* ---- whole plans ------------------------------------------------------------ */

typedef struct ar_memo {
  uint64_t key;
  int32_t n;
  double bytes, t;
} ar_memo_t;

typedef struct group_memo {
  int32_t op_first, n;
  uint64_t key;
  bool multi_node;
} group_memo_t;

/* Stage of pipeline pl holding op, by binary search over op ranges. */
static int32_t stage_of(const hs_plan_pipeline_t *pl, int32_t op)
{
  int32_t lo = 0, hi = pl->n_stages - 1;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (pl->stages[mid].op_last <= op)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The first devices of every TP group holding `op` (over all pipelines)
 * into group[], their count returned and an FNV hash of them in *key.
 * O(pipelines x log stages + replicas). */
static int32_t holders(const hs_plan_t *p, int32_t op, int32_t *group, uint64_t *key)
{
  int32_t n = 0;
  *key = 1469598103934665603ULL;
  for (int32_t j = 0; j < p->n_pipelines; j++) {
    const hs_plan_pipeline_t *pj = &p->pipelines[j];
    const hs_plan_stage_t *sj = &pj->stages[stage_of(pj, op)];
    for (int32_t q = 0; q < sj->n_replicas; q++) {
      group[n++] = sj->replicas[q].devices[0];
      *key = (*key ^ (uint64_t)sj->replicas[q].devices[0]) * 1099511628211ULL;
    }
  }
  return n;
}

/* Exposed time per microbatch of stage s of pipeline i's group exchanges,
 * forward into *xf and backward into *xb (the recomputed forward of full
 * recomputation repeats the forward's), as sim/lower.c runs them, from
 * the stage's first replica (sc0) and its groups (buf: scratch for
 * device ids, at least max(C, E) entries):
 *  - ring attention (practice.context_parallel C): per attention op the
 *    group's K and V are all-gathered over the C replicas' first devices
 *    beside (C-1)/C of the attention, so max(0, ring - (C-1)/C att) shows;
 *    backward moves twice the bytes;
 *  - expert parallelism (practice.expert_parallel E): per expert op an
 *    all-to-all before and after (dispatch, combine), each carrying the
 *    TP rank's 1/t of the routed tokens, over the same replica of E
 *    consecutive pipelines; the same in backward.
 * The TP ranks' exchanges share the NIC when the group leaves a node
 * (bytes x tp). O(C + E) plus two collective estimates. */
static hs_status_t group_exchanges(hs_estimator_t *e, const hs_plan_t *p, int32_t i, int32_t s,
                                   const hs_stage_cost_t *sc0, int32_t *buf, double *xf, double *xb)
{
  *xf = *xb = 0.0;
  const hs_cluster_t *c = e->c;
  const hs_plan_pipeline_t *pl = &p->pipelines[i];
  const hs_plan_stage_t *stg = &pl->stages[s];
  int32_t C = p->practice.context_parallel, E = p->practice.expert_parallel;
  int32_t tp = stg->replicas[0].n_devices;
  if (C > 1 && sc0->n_att > 0 && stg->n_replicas >= C) {
    bool multi = false;
    double share = 0.0;
    for (int32_t k = 0; k < C; k++) {
      buf[k] = stg->replicas[k].devices[0];
      share += stg->replicas[k].share;
      multi = multi || c->devices[buf[k]].node != c->devices[buf[0]].node;
    }
    double bytes = sc0->kv_bytes / sc0->n_att * share * pl->microbatch_size;
    if (multi && tp > 1)
      bytes *= tp;
    double rf = 0.0, rb = 0.0;
    if (coll_s(e, HS_COLL_ALLGATHER, buf, C, bytes, &rf) != HS_OK ||
        coll_s(e, HS_COLL_ALLGATHER, buf, C, 2.0 * bytes, &rb) != HS_OK)
      return HS_ENOMEM;
    double hide = (C - 1.0) / C / sc0->n_att;
    double k = overlap_k(e, buf[0]), hf = hide * sc0->att_fwd_s, hb = hide * sc0->att_bwd_s;
    *xf += sc0->n_att * (k > 0.0 ? beside_s(k, hf, rf) - hf : fmax(0.0, rf - hf));
    *xb += sc0->n_att * (k > 0.0 ? beside_s(k, hb, rb) - hb : fmax(0.0, rb - hb));
  }
  if (E > 1 && sc0->n_expert > 0 && p->n_pipelines >= E) {
    int32_t i0 = i - i % E;
    if (i0 + E > p->n_pipelines)
      return HS_OK;
    bool multi = false;
    for (int32_t k = 0; k < E; k++) {
      const hs_plan_pipeline_t *pk = &p->pipelines[i0 + k];
      if (s >= pk->n_stages)
        return HS_OK; /* pipelines not alike: validation refuses the plan */
      buf[k] = pk->stages[s].replicas[0].devices[0];
      multi = multi || c->devices[buf[k]].node != c->devices[buf[0]].node;
    }
    double bytes = sc0->a2a_bytes / sc0->n_expert * stg->replicas[0].share * pl->microbatch_size /
                   (tp > 1 ? tp : 1);
    if (multi && tp > 1)
      bytes *= tp;
    double a = 0.0;
    if (coll_s(e, HS_COLL_ALLTOALL, buf, E, bytes, &a) != HS_OK)
      return HS_ENOMEM;
    *xf += sc0->n_expert * 2.0 * a;
    *xb += sc0->n_expert * 2.0 * a;
  }
  return HS_OK;
}

/* Scratch of one hs_estimate_plan call: per-stage times of the pipeline
 * being estimated, the holders of a stage's first op, the bytes each node
 * sends off-node, and the memos of gradient all-reduces and holder groups
 * (a grid's pipelines repeat them). Owned by the call. */
typedef struct plan_ws {
  double *tf, *tb, *cut, *params, *opt; /* per stage: fwd, bwd, send to the next, params, step
                                           (all of the stage's parameters; after stage_syncs,
                                           a ZeRO holder's share) */
  double *bwd_end;                      /* per stage: when its last backward ends (pipeline_run_s) */
  double *cut_b;                        /* per stage: the gradients' send back from stage s + 1 */
  int32_t *nic_f, *nic_b;               /* per stage: the node whose NIC the send to (from) stage
                                           s + 1 leaves by, -1 when it stays in the node */
  double *occ_f, *occ_b;                /* ... and how long it holds that NIC */
  double *cut_occ;                      /* per stage: cut[s] with every send crossing that site
                                           pair in that direction at once */
  double *xcut_bytes;                   /* per rank: bytes its cut sends across sites, every pipeline */
  int32_t *group;
  double *nic_bytes;                    /* per node: activations sent off-node per microbatch */
  double *nic_back;                     /* per node: gradients sent back off-node per microbatch */
  double nic_mb_s;                      /* the busiest NIC's time to send one microbatch's */
  double *site_bytes;                   /* per (site, site): sends crossing, both directions */
  ar_memo_t memo[AR_MEMO_MAX];
  int32_t n_memo;
  group_memo_t gmemo[AR_MEMO_MAX];
  int32_t n_gmemo;
} plan_ws_t;

/* pipeline_run_s's state: when each item's output arrives (< 0: not run
 * yet) and each rank's next item, clock and NIC queue. */
typedef struct pipe_run {
  plan_ws_t *ws;
  int32_t S, ranks, m;
  bool async;
  size_t per_rank;              /* items per rank: 2 m v */
  const hs_sched_item_t *items; /* ranks x per_rank, each rank's order */
  double *fsent, *bsent;        /* [s m + i]: when stage s's forward (backward) output of
                                   microbatch i reaches stage s + 1 (s - 1) */
  double *flast;                /* [i]: when the last stage's forward of microbatch i ends */
  double *clock;                /* per rank: when its last item (and blocking send) ended */
  double *nic_free;             /* per rank: when its NIC is done with the rank's sends queued */
  size_t *pos;                  /* per rank: its next item */
} pipe_run_t;

/* ws's arrays, zeroed: per stage (n_st of them), the holder group's
 * devices (n_group), per node and per pair of sites; two allocations.
 * HS_ENOMEM (ws then holds nothing to free). */
static hs_status_t ws_alloc(plan_ws_t *ws, size_t n_st, size_t n_group, const hs_cluster_t *c)
{
  memset(ws, 0, sizeof *ws);
  size_t n_nodes = c->n_nodes + 1, n_sites2 = c->n_sites * c->n_sites + 1;
  double *d = hs_calloc(11 * n_st + 2 * n_nodes + n_sites2, sizeof *d);
  int32_t *k = hs_calloc(2 * n_st + n_group, sizeof *k);
  if (!d || !k) {
    free(d);
    free(k);
    return HS_ENOMEM;
  }
  double **per_stage[] = {&ws->tf,    &ws->tb,      &ws->cut,   &ws->params,
                          &ws->opt,   &ws->bwd_end, &ws->cut_b, &ws->occ_f,
                          &ws->occ_b, &ws->cut_occ, &ws->xcut_bytes};
  for (size_t i = 0; i < sizeof per_stage / sizeof *per_stage; i++)
    *per_stage[i] = d + i * n_st;
  ws->nic_bytes = d + 11 * n_st;
  ws->nic_back = ws->nic_bytes + n_nodes;
  ws->site_bytes = ws->nic_back + n_nodes;
  ws->nic_f = k;
  ws->nic_b = k + n_st;
  ws->group = k + 2 * n_st;
  return HS_OK;
}

static void ws_free(plan_ws_t *ws)
{
  free(ws->tf);
  free(ws->nic_f);
}

/* Streams of the tied sync through the busiest NIC rail among the pairs'
 * ends: per node, the streams with an end there (tps per replica of the
 * head's or the embedding's stage), over the node's rails (a stream per
 * GPU, rail-aligned: coll_node_ring.c). Pipelines whose ends share a rank
 * are skipped, as in tied_allreduce_s. O(stages x replicas) with count
 * (n_nodes, zeroed here) as scratch. */
static int32_t tied_node_streams(const hs_estimator_t *e, const hs_plan_t *p, int32_t v,
                                 int32_t tps, int32_t *count)
{
  const hs_cluster_t *c = e->c;
  const hs_op_t *h = &e->m->ops[e->tied_head];
  memset(count, 0, (size_t)c->n_nodes * sizeof *count);
  int32_t most = 1;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t ranks = pl->n_stages / v, sh = stage_of(pl, e->tied_head), se = stage_of(pl, h->tied_op);
    if (ranks < 1 || sh % ranks == se % ranks)
      continue;
    const int32_t ends[2] = {sh, se};
    for (int32_t k = 0; k < 2; k++)
      for (int32_t q = 0; q < pl->stages[ends[k]].n_replicas; q++) {
        int32_t node = c->devices[pl->stages[ends[k]].replicas[q].devices[0]].node;
        int32_t rails = HS_MAX(1, c->nodes[node].nic_rails);
        count[node] += tps;
        most = HS_MAX(most, (count[node] + rails - 1) / rails);
      }
  }
  return most;
}

/* Tied embedding split from its LM head (sim/lower.c): after the DP sync,
 * pairs of (embedding, head) holders all-reduce the copy's gradient in
 * parallel, tps streams per pair (one per TP rank when both ends have the
 * same TP degree, else one between their first devices), each with its
 * share of the gradient. Streams share what they cross: the inter-site
 * link carries every stream when the ends are in different sites, a NIC
 * rail the streams of its node (tied_node_streams) when they are in
 * different nodes. *tied_ar = 0 when no pipeline splits them. HS_ENOMEM
 * only. O(stages x replicas + nodes). */
static hs_status_t tied_allreduce_s(hs_estimator_t *e, const hs_plan_t *p, int32_t v,
                                    double grad_bytes, double *tied_ar, hs_error_t *err)
{
  const hs_model_t *m = e->m;
  const hs_cluster_t *c = e->c;
  *tied_ar = 0.0;
  if (e->tied_head < 0)
    return HS_OK;
  const hs_op_t *h = &m->ops[e->tied_head];
  int32_t nh = 0, ne = 0, d_h = -1, d_e = -1, tp_h = 1, tp_e = 1;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t ranks = pl->n_stages / v, sh = stage_of(pl, e->tied_head), se = stage_of(pl, h->tied_op);
    if (ranks < 1 || sh % ranks == se % ranks)
      continue;
    nh += pl->stages[sh].n_replicas;
    ne += pl->stages[se].n_replicas;
    if (d_h < 0) {
      d_h = pl->stages[sh].replicas[0].devices[0];
      d_e = pl->stages[se].replicas[0].devices[0];
      tp_h = pl->stages[sh].replicas[0].n_devices;
      tp_e = pl->stages[se].replicas[0].n_devices;
    }
  }
  if (nh == 0)
    return HS_OK;
  /* DeepSpeed's pipeline engine syncs the tied gradient in the model's
   * dtype (sim/lower_grad.c, hs__lower_tied_sync) */
  if (p->practice.framework.id == HS_FW_DEEPSPEED_2022)
    grad_bytes = hs_precision_grad_bytes(p->precision);
  /* a stream per TP rank when both ends have the same TP degree, each with
   * its 1/tp of a TP-split gradient; else the whole gradient between the
   * first devices */
  int32_t tps = tp_h == tp_e ? tp_h : 1;
  double bytes = h->tied_params * grad_bytes / (h->tp_split == HS_TP_REPLICATE ? 1.0 : tps);
  int32_t streams = 1;
  if (c->devices[d_h].site != c->devices[d_e].site) {
    streams = HS_MAX(nh, ne) * tps;
  } else if (c->devices[d_h].node != c->devices[d_e].node) {
    int32_t *count = hs_calloc(c->n_nodes + 1, sizeof *count);
    if (!count)
      return hs_error_set(err, HS_ENOMEM, "out of memory estimating the tied embedding's all-reduce");
    streams = tied_node_streams(e, p, v, tps, count);
    free(count);
  }
  int32_t pair[2] = {d_e, d_h};
  if (hs_estimate_allreduce(e, pair, 2, bytes * streams, tied_ar) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory estimating the tied embedding's all-reduce");
  return HS_OK;
}

/* Activation bytes per microbatch each node sends off-node, summed over
 * pipelines (the dp pipelines of a grid send at the same time through
 * one NIC); one chunk per rank under interleaving. Adds into nic_bytes
 * (zeroed by the caller). And per ordered pair of sites, the bytes that
 * cross from the first to the second per microbatch: every replica's
 * activations to the next stage's site, and the same bytes of gradients
 * back, from every node of the site and every pipeline (they share the
 * inter-site link). Adds into site_bytes (n_sites^2, zeroed by the
 * caller). O(stages x replicas). */
static void send_bytes(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p, int32_t v,
                       plan_ws_t *ws)
{
  size_t ns = c->n_sites;
  double *nic_bytes = ws->nic_bytes, *site_bytes = ws->site_bytes, *xcut_bytes = ws->xcut_bytes;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t ranks = pl->n_stages / v;
    for (int32_t s = 0; s + 1 < pl->n_stages && s < ranks; s++) {
      const hs_plan_stage_t *stg = &pl->stages[s];
      int32_t src = stg->replicas[0].devices[0], dst = pl->stages[s + 1].replicas[0].devices[0];
      double per_sample = m->ops[stg->op_last - 1].out_bytes * pl->microbatch_size;
      size_t sd = (size_t)c->devices[dst].site;
      for (int32_t q = 0; q < stg->n_replicas; q++) {
        size_t sq = (size_t)c->devices[stg->replicas[q].devices[0]].site;
        if (sq != sd) {
          site_bytes[sq * ns + sd] += per_sample * stg->replicas[q].share;
          site_bytes[sd * ns + sq] += per_sample * stg->replicas[q].share;
          xcut_bytes[s] += per_sample * stg->replicas[q].share;
        }
      }
      if (c->devices[src].node == c->devices[dst].node)
        continue;
      double share = 0.0;
      for (int32_t q = 0; q < stg->n_replicas; q++)
        if (c->devices[stg->replicas[q].devices[0]].node == c->devices[src].node)
          share += stg->replicas[q].share;
      nic_bytes[c->devices[src].node] += per_sample * share;
      const hs_plan_stage_t *nx = &pl->stages[s + 1];
      double back = 0.0;
      for (int32_t q = 0; q < nx->n_replicas; q++)
        if (c->devices[nx->replicas[q].devices[0]].node == c->devices[dst].node)
          back += nx->replicas[q].share;
      ws->nic_back[c->devices[dst].node] += per_sample * back;
    }
  }
}

/* The share of stg's samples held by its replicas on `node`. */
static double node_share(const hs_cluster_t *c, const hs_plan_stage_t *stg, int32_t node)
{
  double share = 0.0;
  for (int32_t q = 0; q < stg->n_replicas; q++)
    if (c->devices[stg->replicas[q].devices[0]].node == node)
      share += stg->replicas[q].share;
  return share;
}

/* Per-stage costs of pipeline i into ws: tf/tb (the slowest replica, plus
 * the context/expert-parallel exchanges; full recompute repeats the
 * forward's), params and optimizer step (the largest replica's), and cut[s],
 * the send of stage s's activations to stage s + 1 sharing the node's NIC
 * (ws->nic_bytes). HS_ENOMEM, or HS_EINVAL for a stage the estimator cannot
 * cost. O(stages x replicas). */
static hs_status_t stage_costs(hs_estimator_t *e, const hs_plan_t *p, int32_t i, plan_ws_t *ws,
                               hs_error_t *err)
{
  const hs_model_t *m = e->m;
  const hs_cluster_t *c = e->c;
  const hs_plan_pipeline_t *pl = &p->pipelines[i];
  int32_t S = pl->n_stages, ranks = HS_MAX(1, S / (p->chunks > 0 ? p->chunks : 1));
  double *tf = ws->tf, *tb = ws->tb, *params = ws->params, *opt = ws->opt, *cut = ws->cut;
  for (int32_t s = 0; s < S; s++) {
    const hs_plan_stage_t *stg = &pl->stages[s];
    tf[s] = tb[s] = params[s] = opt[s] = 0.0;
    hs_stage_cost_t sc0;
    memset(&sc0, 0, sizeof sc0);
    for (int32_t q = 0; q < stg->n_replicas; q++) {
      const hs_plan_replica_t *r = &stg->replicas[q];
      hs_stage_cost_t sc_;
      hs_status_t se = hs_estimate_stage(e, stg->op_first, stg->op_last, r->devices, r->n_devices,
                                         r->share * pl->microbatch_size, stg->recompute, &sc_);
      if (se == HS_ENOMEM)
        return hs_error_set(err, HS_ENOMEM, "out of memory estimating pipelines[%d].stages[%d]", i, s);
      if (se != HS_OK)
        return hs_error_set(err, HS_EINVAL, "pipelines[%d].stages[%d]: cannot estimate", i, s);
      if (q == 0)
        sc0 = sc_;
      tf[s] = fmax(tf[s], sc_.fwd_s);
      tb[s] = fmax(tb[s], sc_.bwd_s);
      params[s] = fmax(params[s], sc_.params_per_device);
      opt[s] = fmax(opt[s], sc_.optimizer_s);
    }
    double xf = 0.0, xb = 0.0;
    if (group_exchanges(e, p, i, s, &sc0, ws->group, &xf, &xb) != HS_OK)
      return hs_error_set(err, HS_ENOMEM, "out of memory estimating pipelines[%d].stages[%d]'s "
                          "context/expert-parallel exchanges", i, s);
    tf[s] += xf;
    tb[s] += xb + (stg->recompute == HS_RECOMPUTE_FULL ? xf : 0.0);
    cut[s] = ws->cut_b[s] = ws->cut_occ[s] = ws->occ_f[s] = ws->occ_b[s] = 0.0;
    ws->nic_f[s] = ws->nic_b[s] = -1;
    if (s + 1 < S) {
      const hs_plan_stage_t *nx = &pl->stages[s + 1];
      int32_t nsub = HS_MIN(stg->replicas[0].n_devices, nx->replicas[0].n_devices);
      int32_t src = stg->replicas[0].devices[0], dst = nx->replicas[0].devices[0];
      int32_t na = c->devices[src].node, nb = c->devices[dst].node;
      int32_t sa = c->devices[src].site, sb = c->devices[dst].site;
      /* per microbatch, the activations of this stage's replicas on src's
       * node and the gradients back from the next stage's on dst's node:
       * the pieces of one node's replicas add up on its NIC */
      double per_sample = m->ops[stg->op_last - 1].out_bytes * pl->microbatch_size;
      double act = per_sample * node_share(c, stg, na), grad = per_sample * node_share(c, nx, nb);
      /* leaving a node, a send shares its NIC with the same send of the
       * node's other replicas and pipelines; the node's sends the other
       * way queue behind each other on its NIC (pipeline_run_s, occ_*) */
      double node_f = na != nb ? ws->nic_bytes[na] : 0.0;
      double node_b = na != nb ? ws->nic_back[nb] : 0.0;
      ws->nic_f[s] = na != nb ? na : -1;
      ws->nic_b[s] = na != nb ? nb : -1;
      ws->occ_f[s] = na != nb ? node_f / link_Bps(c->nodes[na].nic_GBps) : 0.0;
      ws->occ_b[s] = na != nb ? node_b / link_Bps(c->nodes[nb].nic_GBps) : 0.0;
      /* leaving the site: this cut's sends of every pipeline cross
       * together (the others at other times); with all of them at once
       * for the link's throughput (cut_occ) */
      double site_now = sa != sb ? ws->xcut_bytes[s % ranks] : 0.0;
      double site_all = sa != sb ? ws->site_bytes[(size_t)sa * c->n_sites + (size_t)sb] : 0.0;
      cut[s] = hs_estimate_p2p_shared_s(e, src, dst, act, node_f, site_now, nsub);
      ws->cut_b[s] = hs_estimate_p2p_shared_s(e, dst, src, grad, node_b, site_now, nsub);
      ws->cut_occ[s] = hs_estimate_p2p_shared_s(e, src, dst, act, node_f, site_all, nsub);
    }
  }
  return HS_OK;
}

static inline double max2(double a, double b) { return a > b ? a : b; }

/* Runs rank r's items from pr->pos[r] on while their inputs have arrived
 * (pipeline_run_s's rules), raising ws->bwd_end; returns how many ran. */
static size_t run_rank(const pipe_run_t *pr, int32_t r)
{
  const hs_sched_item_t *items = pr->items + (size_t)r * pr->per_rank;
  plan_ws_t *ws = pr->ws;
  const double *tf = ws->tf, *tb = ws->tb, *cut = ws->cut, *cut_b = ws->cut_b;
  int32_t S = pr->S, m = pr->m;
  size_t ran = 0;
  for (; pr->pos[r] < pr->per_rank; pr->pos[r]++, ran++) {
    const hs_sched_item_t *it = &items[pr->pos[r]];
    int32_t s = it->chunk * pr->ranks + r, i = it->mb;
    bool fwd = it->phase == HS_PHASE_FWD;
    double ready; /* when the item's input is there; < 0: not yet */
    if (fwd)
      ready = s == 0 ? 0.0 : pr->fsent[(size_t)(s - 1) * m + i];
    else
      ready = s == S - 1 ? pr->flast[i] : pr->bsent[(size_t)(s + 1) * m + i];
    if (ready < 0.0)
      break;
    double end = max2(pr->clock[r], ready) + (fwd ? tf[s] : tb[s]);
    /* the send out: cut[s] (cut_b[s - 1]) from the item's end, or, when
     * it leaves the node, from when the rank's earlier sends off the node
     * are through its NIC (FIFO: forwards' activations and backwards'
     * gradients take turns there in 1F1B's steady state; other ranks'
     * sends from the node are in node_f's share, not in this queue, as the
     * ranks do not run in the order of time here) */
    int32_t k = fwd ? s : s - 1;
    double arrive = end;
    if (k >= 0 && k < S - 1) {
      int32_t nic = fwd ? ws->nic_f[k] : ws->nic_b[k];
      double start = end;
      if (nic >= 0) {
        start = max2(end, pr->nic_free[r]);
        pr->nic_free[r] = start + (fwd ? ws->occ_f[k] : ws->occ_b[k]);
      }
      arrive = start + (fwd ? cut[k] : cut_b[k]);
    }
    if (fwd && s == S - 1)
      pr->flast[i] = end;
    else if (fwd)
      pr->fsent[(size_t)s * m + i] = arrive;
    else
      pr->bsent[(size_t)s * m + i] = arrive;
    if (!fwd)
      ws->bwd_end[s] = max2(ws->bwd_end[s], end);
    /* blocking sends hold the rank until they arrive */
    pr->clock[r] = pr->async ? end : arrive;
  }
  return ran;
}

/* A bound below pipeline_run_s's time: the most compute any rank runs,
 * m (t_f + t_b) over its chunks; without interleaving, plus the time the
 * first forward takes to reach it (the stages and cuts before it) and the
 * time its last backward's gradient takes to get back through stage 0 (for
 * p equal stages of t, (m + p - 1) t: the schedule's time). O(stages). */
static double run_bound_s(const hs_plan_pipeline_t *pl, int32_t v, const plan_ws_t *ws)
{
  int32_t ranks = pl->n_stages / HS_MAX(v, 1);
  double most = 0.0, fill = 0.0, drain = 0.0;
  for (int32_t r = 0; r < ranks; r++) {
    double t = 0.0;
    for (int32_t ch = 0; ch < v; ch++)
      t += ws->tf[ch * ranks + r] + ws->tb[ch * ranks + r];
    most = fmax(most, pl->n_microbatches * t + (v == 1 ? fill + drain : 0.0));
    fill += ws->tf[r] + ws->cut[r];
    drain += ws->tb[r] + ws->cut_b[r];
  }
  return most;
}

/* Every rank's schedule order of pl into e->run_items (sc->order, asked as
 * sim/lower_place.c asks); *ok false when the schedule does not accept the
 * pipeline's shape or an order names a microbatch or chunk outside it.
 * The orders of the last shape asked (schedule, ranks, chunks,
 * microbatches, warm-ups, no explicit order) are kept: a search estimates
 * many plans of one shape. HS_ENOMEM only. O(m v ranks) when asked anew,
 * O(ranks) when kept. */
static hs_status_t run_orders(hs_estimator_t *e, const hs_plan_pipeline_t *pl, int32_t v,
                              const hs_schedule_t *sc, bool *ok)
{
  int32_t S = pl->n_stages, ranks = S / v, m = pl->n_microbatches;
  size_t per_rank = 2 * (size_t)m * (size_t)v;
  bool keep = e->orders_sc == sc && e->orders_ranks == ranks && e->orders_v == v &&
              e->orders_m == m;
  for (int32_t r = 0; r < ranks && keep; r++)
    keep = !pl->stages[r].order && e->orders_warm[r] == pl->stages[r].warmup;
  *ok = true;
  if (keep)
    return HS_OK;
  e->orders_sc = NULL;
  if (hs_reserve((void **)&e->run_items, &e->run_items_cap, per_rank * (size_t)ranks,
                 sizeof *e->run_items) != HS_OK ||
      hs_reserve((void **)&e->orders_warm, &e->orders_warm_cap, (size_t)ranks,
                 sizeof *e->orders_warm) != HS_OK)
    return HS_ENOMEM;
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  bool explicit_order = false;
  for (int32_t r = 0; r < ranks; r++) {
    hs_sched_params_t sp = {.p = ranks, .v = v, .m = m, .rank = r,
                            .warmup = pl->stages[r].warmup, .order = pl->stages[r].order};
    if (sc->check(&sp, &e2) != HS_OK) {
      *ok = false;
      return HS_OK;
    }
    hs_sched_item_t *it = e->run_items + (size_t)r * per_rank;
    sc->order(&sp, it);
    for (size_t k = 0; k < per_rank; k++)
      if (it[k].mb < 0 || it[k].mb >= m || it[k].chunk < 0 || it[k].chunk >= v) {
        *ok = false;
        return HS_OK;
      }
    e->orders_warm[r] = pl->stages[r].warmup;
    explicit_order = explicit_order || pl->stages[r].order;
  }
  if (!explicit_order) {
    e->orders_sc = sc;
    e->orders_ranks = ranks;
    e->orders_v = v;
    e->orders_m = m;
  }
  return HS_OK;
}

/* The pipeline's time, running its schedule over ws's stage costs (the
 * simulator's executors without the network's contention): each rank runs
 * its items in the schedule's order (run_orders); an item starts when the
 * rank's previous one has ended (with blocking sends, when their data has
 * arrived too) and its input has arrived: stage s's forward of a
 * microbatch cut[s - 1] after stage s - 1's, its backward cut_b[s] after
 * stage s + 1's (the last stage's backward follows its own forward), each
 * later when its sender's NIC queue holds it (run_rank). Stage s is chunk
 * x ranks + rank.
 *
 * Max-plus over the items' graph, so the warm-up bubbles, hetero-1f1b's
 * depths, explicit orders, interleaving and slow cuts are the schedule's
 * own, not a closed form's: the closed form m t + (p - 1) t / v it
 * replaced put a pp2 hetero-1f1b plan whose first stage is the slowest
 * (its warm-up hides part of the round trip) 2.6% over its simulation and
 * an interleaved one 10.5% under (test_estimate_pipeline_run; now -0.1%
 * and -0.7%).
 *
 * Sets *out_s (INFINITY when the schedule does not accept the pipeline's
 * shape or its orders deadlock: the simulator rejects both) and
 * ws->bwd_end. HS_ENOMEM only. O(S m) items plus O(ranks) per sweep of the
 * ranks (up and down each sweep; about m sweeps for 1F1B). */
static hs_status_t run_schedule(hs_estimator_t *e, const hs_plan_pipeline_t *pl, int32_t v,
                                bool async, const hs_schedule_t *sc, plan_ws_t *ws, double *out_s,
                                hs_error_t *err)
{
  int32_t S = pl->n_stages, ranks = S / v, m = pl->n_microbatches;
  *out_s = INFINITY;
  for (int32_t s = 0; s < S; s++)
    ws->bwd_end[s] = INFINITY; /* until the run ends */
  if (ranks < 1 || m < 1 || ranks * v != S)
    return HS_OK;
  if (S == 1) {
    /* one stage: its items back to back */
    ws->bwd_end[0] = *out_s = m * (ws->tf[0] + ws->tb[0]);
    return HS_OK;
  }
  pipe_run_t pr = {.ws = ws, .S = S, .ranks = ranks, .m = m, .async = async,
                   .per_rank = 2 * (size_t)m * (size_t)v};
  size_t n_items = pr.per_rank * (size_t)ranks, n_sent = 2 * (size_t)S * (size_t)m;
  if (hs_reserve((void **)&e->run_end, &e->run_end_cap, n_sent + (size_t)m + 2 * (size_t)ranks,
                 sizeof *e->run_end) != HS_OK ||
      hs_reserve((void **)&e->run_pos, &e->run_pos_cap, (size_t)ranks, sizeof *e->run_pos) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory running a pipeline's schedule");
  pr.fsent = e->run_end;
  pr.bsent = pr.fsent + (size_t)S * m;
  pr.flast = pr.bsent + (size_t)S * m;
  pr.clock = pr.flast + m;
  pr.nic_free = pr.clock + ranks;
  pr.pos = e->run_pos;
  for (size_t k = 0; k < n_sent + (size_t)m; k++)
    pr.fsent[k] = -1.0; /* bsent and flast follow fsent */
  bool ok = true;
  hs_status_t st = run_orders(e, pl, v, sc, &ok);
  if (st != HS_OK)
    return hs_error_set(err, st, "out of memory running a pipeline's schedule");
  if (!ok)
    return HS_OK;
  pr.items = e->run_items;
  for (int32_t r = 0; r < ranks; r++) {
    pr.clock[r] = pr.nic_free[r] = 0.0;
    pr.pos[r] = 0;
  }
  for (int32_t s = 0; s < S; s++)
    ws->bwd_end[s] = 0.0;
  /* forwards flow up the ranks, backwards down: a sweep each way */
  for (size_t left = n_items; left > 0;) {
    size_t ran = 0;
    for (int32_t r = 0; r < ranks; r++)
      ran += run_rank(&pr, r);
    for (int32_t r = ranks - 1; r >= 0; r--)
      ran += run_rank(&pr, r);
    if (ran == 0) {
      for (int32_t s = 0; s < S; s++)
        ws->bwd_end[s] = INFINITY; /* deadlock */
      return HS_OK;
    }
    left -= ran;
  }
  /* the links carry every microbatch's sends: at the busiest cut's rate
   * with all of its sharers at once, and the busiest NIC's (the graph's
   * delays take the sends of one instant); a pipeline the links hold
   * back ends that much later on every stage */
  double bound = m * ws->nic_mb_s, end = 0.0;
  for (int32_t s = 0; s + 1 < S; s++)
    bound = fmax(bound, m * ws->cut_occ[s]);
  for (int32_t s = 0; s < S; s++)
    end = fmax(end, ws->bwd_end[s]);
  if (bound > end) {
    for (int32_t s = 0; s < S; s++)
      ws->bwd_end[s] += bound - end;
    end = bound;
  }
  *out_s = end;
  return HS_OK;
}

/* The inputs of pipeline_run_s for pl into e->run_key (*n doubles) and
 * their hash; false when pl is not remembered (an explicit order, which the
 * key does not hold). HS_ENOMEM via *st. O(stages). */
static bool run_key(hs_estimator_t *e, const hs_plan_pipeline_t *pl, int32_t v, bool async,
                    const plan_ws_t *ws, size_t *n, uint64_t *h, hs_status_t *st)
{
  int32_t S = pl->n_stages;
  *st = HS_OK;
  for (int32_t q = 0; q < S; q++)
    if (pl->stages[q].order)
      return false;
  *n = 5 + 10 * (size_t)S;
  if (hs_reserve((void **)&e->run_key, &e->run_key_cap, *n, sizeof *e->run_key) != HS_OK) {
    *st = HS_ENOMEM;
    return false;
  }
  double *k = e->run_key;
  k[0] = S;
  k[1] = pl->n_microbatches;
  k[2] = v;
  k[3] = async;
  k[4] = ws->nic_mb_s;
  for (int32_t q = 0; q < S; q++) {
    double *x = k + 5 + 10 * (size_t)q;
    x[0] = ws->tf[q];
    x[1] = ws->tb[q];
    x[2] = ws->cut[q];
    x[3] = ws->cut_b[q];
    x[4] = ws->occ_f[q];
    x[5] = ws->occ_b[q];
    x[6] = ws->nic_f[q] >= 0;
    x[7] = ws->nic_b[q] >= 0;
    x[8] = ws->cut_occ[q];
    x[9] = pl->stages[q].warmup;
  }
  uint64_t hh = 1469598103934665603ULL;
  const unsigned char *b = (const unsigned char *)k;
  for (size_t i = 0; i < *n * sizeof *k; i++)
    hh = (hh ^ b[i]) * 1099511628211ULL;
  *h = hh;
  return true;
}

/* pipeline_run_s remembered: a search estimates the same pipeline many
 * times (practice variants and device subsets leave its stage costs alike:
 * 3 in 4 runs of megatron's search on the 48-GPU what-if cluster), so the
 * results of the last RUN_MEMO distinct inputs are kept, direct-mapped by
 * the inputs' hash and compared whole (a hit is the same inputs, so the
 * same results). Sets *out_s and ws->bwd_end; HS_ENOMEM only. O(stages)
 * on a hit. */
static hs_status_t pipeline_run_s(hs_estimator_t *e, const hs_plan_pipeline_t *pl, int32_t v,
                                  bool async, const hs_schedule_t *sc, plan_ws_t *ws,
                                  double *out_s, hs_error_t *err)
{
  int32_t S = pl->n_stages;
  size_t n = 0;
  uint64_t h = 0;
  hs_status_t st = HS_OK;
  if (!run_key(e, pl, v, async, ws, &n, &h, &st)) {
    if (st != HS_OK)
      return hs_error_set(err, st, "out of memory running a pipeline's schedule");
    return run_schedule(e, pl, v, async, sc, ws, out_s, err);
  }
  if (!e->run_memo && !(e->run_memo = hs_calloc(RUN_MEMO, sizeof *e->run_memo)))
    return hs_error_set(err, HS_ENOMEM, "out of memory running a pipeline's schedule");
  run_memo_t *me = &e->run_memo[h % RUN_MEMO];
  if (me->key && me->h == h && me->sc == sc && me->n_key == n &&
      memcmp(me->key, e->run_key, n * sizeof *e->run_key) == 0) {
    memcpy(ws->bwd_end, me->key + n, (size_t)S * sizeof *ws->bwd_end);
    *out_s = me->tpipe;
    return HS_OK;
  }
  HS_CHECK(run_schedule(e, pl, v, async, sc, ws, out_s, err));
  double *key = hs_reallocarray(me->key, n + (size_t)S, sizeof *key);
  if (!key)
    return hs_error_set(err, HS_ENOMEM, "out of memory running a pipeline's schedule");
  memcpy(key, e->run_key, n * sizeof *key);
  memcpy(key + n, ws->bwd_end, (size_t)S * sizeof *key);
  me->key = key;
  me->h = h;
  me->sc = sc;
  me->n_key = n;
  me->tpipe = *out_s;
cleanup:
  return st;
}

/* The time of stage s's gradient all-reduce over the holders of its first
 * op (memoised in ws by op and by (holders, bytes)); *n_out: the number of
 * holders. HS_ENOMEM only. */
static hs_status_t stage_allreduce_s(hs_estimator_t *e, const hs_plan_t *p, int32_t i, int32_t s,
                                     double grad_bytes, plan_ws_t *ws, double *bytes_out,
                                     int32_t *n_out, double *ar_out, hs_error_t *err)
{
  const hs_cluster_t *c = e->c;
  const hs_plan_stage_t *stg = &p->pipelines[i].stages[s];
  int32_t *group = ws->group;
  /* the holders of the stage's first op: the same for every stage
   * that starts there (every pipeline of a grid), so looked up once */
  int32_t n = 0;
  uint64_t key = 1469598103934665603ULL;
  bool multi_node = false, have_group = false;
  int32_t gk = 0;
  while (gk < ws->n_gmemo && ws->gmemo[gk].op_first != stg->op_first)
    gk++;
  if (gk < ws->n_gmemo) {
    n = ws->gmemo[gk].n;
    key = ws->gmemo[gk].key;
    multi_node = ws->gmemo[gk].multi_node;
  } else {
    n = holders(p, stg->op_first, group, &key);
    for (int32_t k = 1; k < n && !multi_node; k++)
      multi_node = c->devices[group[k]].node != c->devices[group[0]].node;
    have_group = true;
    if (ws->n_gmemo < AR_MEMO_MAX)
      ws->gmemo[ws->n_gmemo++] = (group_memo_t){stg->op_first, n, key, multi_node};
  }
  int32_t tp = stg->replicas[0].n_devices;
  double bytes = ws->params[s] * grad_bytes;
  if (multi_node && tp > 1)
    bytes *= tp;
  if (hs_plan_zero_stage(p) >= 3) /* parameter all-gathers with the gradient sync (lower.c) */
    bytes *= 0.5 + hs_precision_state_bytes(p->precision).weight / grad_bytes;
  double ar = -1.0;
  for (int32_t k = 0; k < ws->n_memo; k++)
    if (ws->memo[k].key == key && ws->memo[k].n == n && ws->memo[k].bytes == bytes)
      ar = ws->memo[k].t;
  if (ar < 0.0) {
    if (!have_group)
      holders(p, stg->op_first, group, &key);
    if (hs_estimate_allreduce(e, group, n, bytes, &ar) != HS_OK)
      return hs_error_set(err, HS_ENOMEM, "out of memory estimating pipelines[%d].stages[%d]'s "
                          "gradient all-reduce", i, s);
    if (ws->n_memo < AR_MEMO_MAX)
      ws->memo[ws->n_memo++] = (ar_memo_t){key, n, bytes, ar};
  }
  *bytes_out = bytes;
  *n_out = n;
  *ar_out = ar;
  return HS_OK;
}

/* Gradient sync and optimizer per stage of pipeline i, after each stage's
 * last backward (ws->bwd_end, pipeline_run_s): raises out->dp_exposed_s,
 * out->optimizer_s and *iter (the end of the last step), and gives stage
 * 0's exposed sync in *exposed0. Buckets of bucket_bytes start as the last
 * backward produces them (the simulator's overlap). HS_ENOMEM only.
 * O(stages x memo). */
static hs_status_t stage_syncs(hs_estimator_t *e, const hs_plan_t *p, int32_t i, double grad_bytes,
                               plan_ws_t *ws, hs_estimate_t *out, double *iter, double *exposed0,
                               hs_error_t *err)
{
  const hs_plan_pipeline_t *pl = &p->pipelines[i];
  const double *tb = ws->tb;
  double *opt = ws->opt;
  for (int32_t s = 0; s < pl->n_stages; s++) {
    const hs_plan_stage_t *stg = &pl->stages[s];
    double bytes = 0.0, ar = 0.0;
    int32_t n = 0;
    hs_status_t st = stage_allreduce_s(e, p, i, s, grad_bytes, ws, &bytes, &n, &ar, err);
    if (st != HS_OK)
      return st;
    /* buckets of bucket_bytes start as the last backward produces them
     * (the simulator's overlap): the first after its share of the
     * backward, the last one's all-reduce always exposed */
    double frac = bytes > 0.0 ? fmin(1.0, p->bucket_bytes / (ws->params[s] * grad_bytes)) : 1.0;
    double exposed = fmax(frac * tb[s] + ar, tb[s] + frac * ar) - tb[s];
    double kd = overlap_k(e, stg->replicas[0].devices[0]);
    if (kd > 0.0 && frac < 1.0) {
      /* the backward after the first bucket runs beside the other
       * buckets ((1 - frac) ar of all-reduce), slowed while they run */
      double rest = (1.0 - frac) * tb[s];
      rest += kd * fmin(rest, (1.0 - frac) * ar / (1.0 + kd));
      exposed = fmax(frac * tb[s] + ar, frac * tb[s] + rest + frac * ar) - tb[s];
    }
    if (s == 0)
      *exposed0 = exposed;
    out->dp_exposed_s = fmax(out->dp_exposed_s, exposed);
    /* ZeRO: each of the n holders steps 1/n of the parameters (lower.c) */
    double opt_s = hs_plan_zero_stage(p) >= 1 && n > 1 ? opt[s] / n : opt[s];
    ws->opt[s] = opt_s; /* the step as it runs, for the tied sync's end */
    out->optimizer_s = fmax(out->optimizer_s, opt_s);
    double end = ws->bwd_end[s] + exposed + opt_s;
    *iter = fmax(*iter, end);
  }
  return HS_OK;
}

/* The memory pass: every device's peak bytes (hs_memory_per_device into
 * e->mem), the largest, and the first device over its GPU's memory. */
static hs_status_t plan_memory(hs_estimator_t *e, const hs_plan_t *p, hs_estimate_t *out,
                               hs_error_t *err);

hs_status_t hs_estimate_memory(hs_estimator_t *e, const hs_plan_t *p, hs_estimate_t *out,
                               hs_error_t *err)
{
  out->max_memory_bytes = 0.0;
  out->oom = false;
  out->oom_device = -1;
  hs_estimator_set_practice(e, &p->practice);
  hs_estimator_set_precision(e, p->precision);
  return plan_memory(e, p, out, err);
}

static hs_status_t plan_memory(hs_estimator_t *e, const hs_plan_t *p, hs_estimate_t *out,
                               hs_error_t *err)
{
  const hs_cluster_t *c = e->c;
  hs_status_t st = hs_memory_per_device(e->m, c, p, e->mem, err);
  if (st != HS_OK)
    return st;
  for (size_t d = 0; d < c->n_devices; d++) {
    out->max_memory_bytes = fmax(out->max_memory_bytes, e->mem[d]);
    if (e->mem[d] > hs_cluster_gpu(c, (int32_t)d)->mem_bytes && out->oom_device < 0) {
      out->oom = true;
      out->oom_device = (int32_t)d;
    }
  }
  return HS_OK;
}

hs_status_t hs_estimate_plan(hs_estimator_t *e, const hs_plan_t *p, bool with_memory,
                             hs_estimate_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(out, 0, sizeof *out);
  out->oom_device = -1;
  if (e->out_of_time || hs__past(e->deadline_s)) {
    e->out_of_time = true; /* past the deadline: no estimate, no memory pass */
    out->iteration_s = INFINITY;
    return HS_OK;
  }
  hs_estimator_set_practice(e, &p->practice);
  /* the plan runs at its precision: estimate it there (hs_simulate does) */
  hs_estimator_set_precision(e, p->precision);
  const hs_model_t *m = e->m;
  const hs_cluster_t *c = e->c;
  const hs_schedule_t *sc = hs_schedule_find(p->schedule);
  if (!sc)
    return hs_error_set(err, HS_EINVAL, "schedule: unknown schedule \"%s\"", p->schedule);
  bool async = p->async_send || sc->default_async_send;
  int32_t v = p->chunks > 0 ? p->chunks : 1;
  /* the simulator's gradient bytes (grad_reduce_dtype fp32: 4, sim/lower.c) */
  double grad_bytes = hs_practice_grad_bytes(&p->practice, p->precision);
  int32_t max_stages = 0, total_tp_groups = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    max_stages = HS_MAX(max_stages, p->pipelines[i].n_stages);
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++)
      total_tp_groups += p->pipelines[i].stages[s].n_replicas;
  }
  plan_ws_t ws;
  if (ws_alloc(&ws, (size_t)max_stages + 1, (size_t)total_tp_groups + 1, c) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  double tied_ar = 0.0;
  HS_CHECK(tied_allreduce_s(e, p, v, grad_bytes, &tied_ar, err));
  send_bytes(m, c, p, v, &ws);
  /* per microbatch, the busiest NIC's sends out (activations up the
   * pipeline, gradients down) */
  ws.nic_mb_s = 0.0;
  for (size_t n = 0; n < c->n_nodes; n++)
    ws.nic_mb_s = fmax(ws.nic_mb_s, (ws.nic_bytes[n] + ws.nic_back[n]) / link_Bps(c->nodes[n].nic_GBps));
  double iter = 0.0;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    double exposed0 = 0.0;
    HS_CHECK(stage_costs(e, p, i, &ws, err));
    /* a bound below the schedule's run, enough to answer a plan that
     * cannot beat cutoff_s */
    double busy = run_bound_s(pl, v, &ws);
    if (busy >= e->cutoff_s) {
      out->iteration_s = busy;
      out->pipeline_s = busy;
      out->bounded = true;
      goto cleanup;
    }
    double tpipe = 0.0;
    HS_CHECK(pipeline_run_s(e, pl, v, async, sc, &ws, &tpipe, err));
    out->pipeline_s = fmax(out->pipeline_s, tpipe);
    HS_CHECK(stage_syncs(e, p, i, grad_bytes, &ws, out, &iter, &exposed0, err));
    if (tied_ar > 0.0) {
      /* the embedding's stage finishes backward last; the sync follows its
       * DP all-reduce, then both ends step their optimizers */
      int32_t ranks = pl->n_stages / v;
      int32_t sh = stage_of(pl, e->tied_head), se = stage_of(pl, m->ops[e->tied_head].tied_op);
      if (ranks >= 1 && sh % ranks != se % ranks)
        iter = fmax(iter, tpipe + exposed0 + tied_ar + fmax(ws.opt[se], ws.opt[sh]));
    }
  }
  out->iteration_s = e->out_of_time ? INFINITY : iter;
  if (with_memory)
    HS_CHECK(plan_memory(e, p, out, err));
cleanup:
  ws_free(&ws);
  return st;
}
