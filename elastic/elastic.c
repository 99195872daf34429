/*
 * elastic.c - the elastic run: preemption sequences (rates, Poisson
 * sampling), the planner cache over sets of surviving nodes, and the
 * train / checkpoint / re-plan / recover / idle state machine on an integer
 * nanosecond timeline.
 *
 * Invariants: the segments tile [0, horizon) without gaps or overlaps, so
 * the per-phase times sum to the horizon exactly; training since the last
 * completed checkpoint (or completed recovery, which restores it) is the
 * only work a preemption can discard; wall-clock time never enters the
 * timeline (re-planning is charged by the candidates model), so the same
 * seed gives the same bytes.
 */
#include "hs_elastic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *hs_elastic_phase_name(hs_elastic_phase_t p)
{
  static const char *const names[HS_EPH__COUNT] = {"train", "lost", "checkpoint",
                                                   "replan", "recover", "idle"};
  return (unsigned)p < HS_EPH__COUNT ? names[p] : "?";
}

void hs_elastic_trace_init(hs_elastic_trace_t *t)
{
  if (t)
    memset(t, 0, sizeof *t);
}

void hs_elastic_trace_destroy(hs_elastic_trace_t *t)
{
  if (!t)
    return;
  free(t->events);
  memset(t, 0, sizeof *t);
}

void hs_elastic_result_init(hs_elastic_result_t *r)
{
  if (r)
    memset(r, 0, sizeof *r);
}

void hs_elastic_result_destroy(hs_elastic_result_t *r)
{
  if (!r)
    return;
  free(r->recoveries);
  free(r->segments);
  free(r->events);
  memset(r, 0, sizeof *r);
}

/* ---- preemption rates and sampling ----------------------------------------- */

hs_status_t hs_elastic_node_rates(const hs_cluster_t *c, const char *spec, double *rates,
                                  hs_error_t *err)
{
  for (size_t n = 0; n < c->n_nodes; n++)
    rates[n] = c->nodes[n].spot ? c->sites[c->nodes[n].site].preemptions_per_hour : 0.0;
  if (!spec || !*spec)
    return HS_OK;
  /* pass 0 applies site keys, pass 1 GPU keys, so GPU overrides win */
  for (int pass = 0; pass < 2; pass++) {
    const char *p = spec;
    while (*p) {
      const char *end = strchr(p, ',');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      char item[160];
      if (len == 0 || len >= sizeof item)
        return hs_error_set(err, HS_EINVAL, "--rates: bad item \"%.*s\" (want KEY=RATE)",
                            (int)HS_MIN(len, 80), p);
      memcpy(item, p, len);
      item[len] = 0;
      char *eq = strchr(item, '=');
      if (!eq || eq == item)
        return hs_error_set(err, HS_EINVAL, "--rates: bad item \"%s\" (want KEY=RATE)", item);
      *eq = 0;
      char *num_end = NULL;
      double r = strtod(eq + 1, &num_end);
      if (num_end == eq + 1 || *num_end || !isfinite(r) || r < 0 || r > 1e6)
        return hs_error_set(err, HS_EINVAL,
                            "--rates: %s: rate must be a number of preemptions per hour in [0, 1e6], got \"%s\"",
                            item, eq + 1);
      bool site_hit = false, gpu_hit = false;
      for (size_t s = 0; s < c->n_sites; s++)
        if (strcmp(c->sites[s].name, item) == 0) {
          site_hit = true;
          if (pass == 0)
            for (int32_t k = 0; k < c->sites[s].n_nodes; k++)
              rates[c->sites[s].first_node + k] = r;
        }
      for (size_t n = 0; n < c->n_nodes; n++)
        if (strcmp(c->gpus.gpus[c->nodes[n].gpu].name, item) == 0) {
          gpu_hit = true;
          if (pass == 1)
            rates[n] = r;
        }
      if (!site_hit && !gpu_hit)
        return hs_error_set(err, HS_EINVAL,
                            "--rates: \"%s\" is neither a site nor a GPU type of cluster %s", item,
                            c->name);
      p += len;
      if (*p == ',')
        p++;
    }
  }
  return HS_OK;
}

/* xoshiro256** seeded through splitmix64 (Blackman and Vigna). */
typedef struct rng {
  uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng_t *r)
{
  uint64_t res = rotl(r->s[1] * 5, 7) * 9, t = r->s[1] << 17;
  r->s[2] ^= r->s[0];
  r->s[3] ^= r->s[1];
  r->s[1] ^= r->s[2];
  r->s[0] ^= r->s[3];
  r->s[2] ^= t;
  r->s[3] = rotl(r->s[3], 45);
  return res;
}

static void rng_seed(rng_t *r, uint64_t seed, uint64_t stream)
{
  uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL);
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

/* Exponential with mean `mean` (seconds), from 53 random bits. */
static double rng_exp(rng_t *r, double mean)
{
  double u = (double)(rng_next(r) >> 11) * 0x1.0p-53; /* [0, 1) */
  return -mean * log1p(-u);
}

static int cmp_event(const void *a, const void *b)
{
  const hs_elastic_event_t *x = a, *y = b;
  if (x->t_ns != y->t_ns)
    return x->t_ns < y->t_ns ? -1 : 1;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  return (x->node > y->node) - (x->node < y->node);
}

void hs__elastic_sort_events(hs_elastic_event_t *ev, size_t n);
void hs__elastic_sort_events(hs_elastic_event_t *ev, size_t n)
{
  if (n)
    qsort(ev, n, sizeof *ev, cmp_event);
}

#define SAMPLE_MAX_EVENTS 5000000

hs_status_t hs_elastic_trace_sample(const hs_cluster_t *c, const double *rates, double hours,
                                    double replace_mean_s, uint64_t seed, hs_elastic_trace_t *out,
                                    hs_error_t *err)
{
  hs_elastic_trace_destroy(out);
  size_t cap = 0;
  double H = hours * 3600.0;
  if (!(H >= 0) || H > 1e9)
    return hs_error_set(err, HS_EINVAL, "hours: must be in [0, 2.7e5], got %g", hours);
  double expect = 0.0;
  for (size_t n = 0; n < c->n_nodes; n++)
    expect += rates[n] > 0 ? rates[n] * hours : 0.0;
  if (expect > SAMPLE_MAX_EVENTS)
    return hs_error_set(err, HS_ELIMIT,
                        "preemptions: %.3g expected over %g h (rates x hours), at most %d",
                        expect, hours, SAMPLE_MAX_EVENTS);
  for (size_t n = 0; n < c->n_nodes; n++) {
    if (!(rates[n] > 0))
      continue;
    rng_t r;
    rng_seed(&r, seed, (uint64_t)n + 1);
    double t = 0.0, mean_up = 3600.0 / rates[n];
    for (;;) {
      t += rng_exp(&r, mean_up);
      if (t >= H)
        break;
      for (int kind = 0; kind < 2; kind++) {
        if (hs_reserve((void **)&out->events, &cap, out->n + 1, sizeof *out->events) != HS_OK) {
          hs_elastic_trace_destroy(out);
          return hs_error_set(err, HS_ENOMEM, "out of memory for the preemption sequence");
        }
        out->events[out->n++] = (hs_elastic_event_t){hs_time_from_s(t), (int32_t)n, kind};
        if (kind == HS_ELASTIC_PREEMPT) {
          if (replace_mean_s < 0)
            goto next_node;
          t += replace_mean_s > 0 ? rng_exp(&r, replace_mean_s) : 0.0;
          if (t >= H)
            goto next_node;
        }
      }
    }
  next_node:;
  }
  hs__elastic_sort_events(out->events, out->n);
  return HS_OK;
}

/* ---- planner cache ------------------------------------------------------- */

typedef struct pentry {
  uint8_t *alive;            /* key: n_nodes flags */
  bool feasible;
  char why[320];
  hs_elastic_layout_t layout;
  uint8_t *node_used;        /* n_nodes flags */
  double tokens_per_s, iteration_s;
  int64_t global_batch;
  int32_t n_devices;
  uint64_t candidates;
  double search_s;
  char summary[160];
} pentry_t;

struct hs_elastic_planner {
  const hs_model_t *m;
  const hs_cluster_t *c;
  const hs_planner_type_t *type;
  hs_plan_opts_t opts;
  pentry_t **e;
  size_t n, cap;
  int32_t n_searches;
};

static void pentry_free(pentry_t *e)
{
  if (!e)
    return;
  free(e->alive);
  free(e->node_used);
  hs_elastic_layout_destroy(&e->layout);
  free(e);
}

void hs_elastic_planner_free(hs_elastic_planner_t *p)
{
  if (!p)
    return;
  for (size_t k = 0; k < p->n; k++)
    pentry_free(p->e[k]);
  free(p->e);
  free(p);
}

hs_status_t hs_elastic_planner_new(const hs_model_t *m, const hs_cluster_t *c,
                                   const hs_elastic_cfg_t *cfg, hs_elastic_planner_t **out,
                                   hs_error_t *err)
{
  const char *name = cfg->strategy ? cfg->strategy : "hapt";
  const hs_planner_type_t *t = hs_planner_find(name);
  *out = NULL;
  if (!t)
    return hs_error_set(err, HS_EINVAL, "strategy: unknown planner \"%s\" (hetsim list strategies)",
                        name);
  hs_elastic_planner_t *p = hs_calloc(1, sizeof *p);
  if (!p)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  p->m = m;
  p->c = c;
  p->type = t;
  p->opts = cfg->plan;
  *out = p;
  return HS_OK;
}

/* The plan for the set of nodes up: from the cache, or searched (the first
 * search fixes the global batch for later ones unless the options set it). */
static hs_status_t planner_get(hs_elastic_planner_t *p, const uint8_t *alive, pentry_t **out,
                               hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t N = p->c->n_nodes;
  for (size_t k = 0; k < p->n; k++)
    if (memcmp(p->e[k]->alive, alive, N) == 0) {
      *out = p->e[k];
      return HS_OK;
    }
  hs_cluster_t sub;
  hs_plan_t plan;
  hs_report_t rep;
  hs_search_stats_t stats;
  hs_error_t perr;
  int32_t *dev_map = NULL;
  bool *alive_b = NULL;
  hs_cluster_init(&sub);
  hs_plan_init(&plan);
  hs_report_init(&rep);
  hs_error_init(&perr);
  perr.warn_fp = NULL;
  memset(&stats, 0, sizeof stats);
  pentry_t *e = hs_calloc(1, sizeof *e);
  dev_map = hs_calloc(p->c->n_devices + 1, sizeof *dev_map);
  alive_b = hs_calloc(N + 1, sizeof *alive_b);
  if (!e || !dev_map || !alive_b || !(e->alive = hs_calloc(N + 1, 1)) ||
      !(e->node_used = hs_calloc(N + 1, 1)))
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for the planner cache"));
  memcpy(e->alive, alive, N);
  for (size_t n = 0; n < N; n++)
    alive_b[n] = alive[n] != 0;
  hs_status_t ps = hs_search_subcluster(p->c, alive_b, &sub, dev_map, &perr);
  if (ps == HS_OK) {
    p->n_searches++;
    ps = hs_planner_run(p->type, p->m, &sub, &p->opts, NULL, &plan, &stats, &rep, &perr);
  }
  if (ps == HS_ENOMEM || ps == HS_EINTERNAL) {
    hs_error_set(err, ps, "%s", perr.msg);
    HS_FAIL(ps);
  }
  e->candidates = stats.candidates;
  e->search_s = stats.search_s;
  if (ps != HS_OK) {
    hs_strlcpy(e->why, perr.msg, sizeof e->why);
  } else if (rep.oom) {
    snprintf(e->why, sizeof e->why, "%s: the plan does not fit in memory", p->type->name);
  } else {
    e->feasible = true;
    e->tokens_per_s = rep.tokens_per_s;
    e->iteration_s = rep.iteration_time_s;
    e->global_batch = rep.global_batch;
    e->n_devices = hs_plan_n_devices(&plan);
    hs_plan_describe(&plan, p->m, e->summary, sizeof e->summary);
    HS_CHECK(hs_elastic_layout_from_plan(p->m, &plan, dev_map, &e->layout, err));
    for (size_t k = 0; k < e->layout.n; k++)
      e->node_used[p->c->devices[e->layout.dev[k]].node] = 1;
    if (p->opts.global_batch == 0)
      p->opts.global_batch = rep.global_batch;
  }
  if (hs_reserve((void **)&p->e, &p->cap, p->n + 1, sizeof *p->e) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for the planner cache"));
  p->e[p->n++] = e;
  *out = e;
  e = NULL;
cleanup:
  pentry_free(e);
  free(dev_map);
  free(alive_b);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&sub);
  return st;
}

/* ---- the run ------------------------------------------------------------- */

typedef struct run {
  const hs_model_t *m;
  const hs_cluster_t *c;
  const hs_elastic_cfg_t *cfg;
  const hs_topology_t *topo;
  hs_elastic_result_t *r;
  size_t seg_cap, rec_cap;
  size_t last_ckpt_seg;      /* segments from here on are training since the last checkpoint */
} run_t;

static hs_status_t add_seg(run_t *rn, hs_time_t t0, hs_time_t t1, int32_t phase, int32_t rec,
                           double tps, hs_error_t *err)
{
  hs_elastic_result_t *r = rn->r;
  if (t1 <= t0)
    return HS_OK;
  if (r->n_segments) {
    hs_elastic_segment_t *s = &r->segments[r->n_segments - 1];
    if (s->t1 == t0 && s->phase == phase && s->recovery == rec && s->tokens_per_s == tps &&
        (phase != HS_EPH_TRAIN || r->n_segments > rn->last_ckpt_seg)) {
      s->t1 = t1;
      return HS_OK;
    }
  }
  if (hs_reserve((void **)&r->segments, &rn->seg_cap, r->n_segments + 1, sizeof *r->segments) !=
      HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory for the timeline");
  r->segments[r->n_segments++] = (hs_elastic_segment_t){t0, t1, phase, rec, tps};
  return HS_OK;
}

static double replan_cost_s(const hs_elastic_cfg_t *cfg, const pentry_t *e)
{
  return cfg->replan_base_s + (double)e->candidates * cfg->replan_ns_per_candidate * 1e-9;
}

typedef enum { PH_TRAIN, PH_CKPT, PH_REPLAN, PH_RECOVER, PH_IDLE } ph_t;

static int32_t eph_of(ph_t p)
{
  switch (p) {
  case PH_TRAIN: return HS_EPH_TRAIN;
  case PH_CKPT: return HS_EPH_CKPT;
  case PH_REPLAN: return HS_EPH_REPLAN;
  case PH_RECOVER: return HS_EPH_RECOVER;
  default: return HS_EPH_IDLE;
  }
}

/* State of one run besides the result. */
typedef struct rstate {
  hs_elastic_planner_t *planner;
  uint8_t *alive, *srcok;    /* per node: up; holds a valid copy of the last checkpoint */
  bool *srcok_b;
  const hs_elastic_layout_t *ckpt_layout;
  pentry_t *cur, *target;
  int32_t cur_rec;
  double replan_wall;
} rstate_t;

/* Opens a recovery record at t, plans for the nodes up and prices the
 * recovery of the last checkpoint into the new layout. Leaves rs->target
 * NULL when nothing is up or no plan fits. */
static hs_status_t begin_replan(run_t *rn, rstate_t *rs, hs_time_t t, int32_t kind, int32_t down,
                                int32_t up, double lost_s, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_elastic_result_t *r = rn->r;
  const hs_elastic_cfg_t *cfg = rn->cfg;
  size_t N = rn->c->n_nodes;
  if (hs_reserve((void **)&r->recoveries, &rn->rec_cap, r->n_recoveries + 1,
                 sizeof *r->recoveries) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  hs_elastic_recovery_t *rec = &r->recoveries[r->n_recoveries];
  memset(rec, 0, sizeof *rec);
  rec->t_ns = t;
  rec->kind = kind;
  rec->n_nodes_down = down;
  rec->n_nodes_up = up;
  rec->lost_s = lost_s;
  rs->cur_rec = (int32_t)r->n_recoveries++;
  rs->target = NULL;
  bool any = false;
  for (size_t n = 0; n < N; n++)
    any = any || rs->alive[n];
  if (!any) {
    hs_strlcpy(rec->plan_summary, "no node is up", sizeof rec->plan_summary);
    return HS_OK;
  }
  pentry_t *e = NULL;
  int32_t before = rs->planner->n_searches;
  HS_CHECK(planner_get(rs->planner, rs->alive, &e, err));
  if (rs->planner->n_searches != before) {
    rec->replan_wall_s = e->search_s;
    rs->replan_wall += e->search_s;
  }
  rec->replan_s = replan_cost_s(cfg, e);
  if (!e->feasible) {
    hs_strlcpy(rec->plan_summary, e->why, sizeof rec->plan_summary);
    return HS_OK;
  }
  hs_elastic_recovery_cost_t cost;
  for (size_t n = 0; n < N; n++)
    rs->srcok_b[n] = rs->srcok[n] != 0;
  HS_CHECK(hs_elastic_recovery_plan(rn->m, rn->c, rn->topo, cfg, cfg->recovery, rs->ckpt_layout,
                                    rs->srcok_b, &e->layout, &cost, err));
  rec->n_devices = e->n_devices;
  rec->transfer_s = cost.transfer_s;
  rec->bytes_peer = cost.bytes_peer;
  rec->bytes_own = cost.bytes_own;
  rec->bytes_cloud = cost.bytes_cloud;
  rec->cloud_fallback = cost.used_cloud_fallback;
  rec->overhead_s = cfg->recovery == HS_RECOVERY_RESTART
                        ? cfg->restart_overhead_s + cfg->warmup_iterations * e->iteration_s
                        : 0.0;
  rec->recovery_s = rec->transfer_s + rec->overhead_s;
  rec->tokens_per_s = e->tokens_per_s;
  hs_strlcpy(rec->plan_summary, e->summary, sizeof rec->plan_summary);
  rs->target = e;
cleanup:
  return st;
}

/* Checks the configuration and the trace against the cluster and the planner
 * cache. Reads cfg, trace, c, planner; writes only err. HS_EINVAL naming the
 * field or event on bad input, HS_OK otherwise. O(events). */
static hs_status_t check_run_inputs(const hs_model_t *m, const hs_cluster_t *c,
                                    const hs_elastic_cfg_t *cfg, const hs_elastic_trace_t *trace,
                                    const hs_elastic_planner_t *planner, hs_error_t *err)
{
  size_t N = c->n_nodes;
  if (!(cfg->hours > 0) || cfg->hours > 1e5)
    return hs_error_set(err, HS_EINVAL, "hours: must be in (0, 1e5], got %g", cfg->hours);
  if (!(cfg->checkpoint_interval_s >= 0) || !(cfg->cloud_GBps > 0) ||
      !(cfg->local_read_GBps > 0) || !(cfg->ckpt_write_GBps > 0) ||
      !(cfg->state_bytes_per_param > 0) || !(cfg->replan_base_s >= 0) ||
      !(cfg->replan_ns_per_candidate >= 0) || !(cfg->restart_overhead_s >= 0) ||
      !(cfg->checkpoint_cost_s >= 0) || !(cfg->cloud_total_GBps >= 0) ||
      cfg->warmup_iterations < 0)
    return hs_error_set(err, HS_EINVAL,
                        "elastic: intervals, costs and bandwidths must be >= 0 (bandwidths > 0)");
  for (size_t e = 0; e < trace->n; e++)
    if (trace->events[e].node < 0 || (size_t)trace->events[e].node >= N)
      return hs_error_set(err, HS_EINVAL, "elastic: event %zu names node %d, cluster %s has %zu",
                          e, trace->events[e].node, c->name, N);
  for (size_t e = 1; e < trace->n; e++)
    if (trace->events[e].t_ns < trace->events[e - 1].t_ns)
      return hs_error_set(err, HS_EINVAL, "elastic: events not sorted by time at event %zu", e);
  if (planner && (planner->m != m || planner->c != c))
    return hs_error_set(err, HS_EINVAL, "elastic: the planner cache belongs to another model or cluster");
  return HS_OK;
}

/* The event loop's state: the clock, the phase and when it ends, the work
 * since the last checkpoint, joins waiting for a re-plan, the next event. */
typedef struct loop {
  hs_time_t t, since_ckpt, phase_end;
  hs_time_t H, interval;     /* horizon; checkpoint interval (HS_TIME_MAX = none) */
  ph_t phase;
  bool join_pending;         /* nodes joined: re-plan at the next safe point */
  int32_t pending_up;        /* nodes joined since the last re-plan */
  size_t k, n_ev;            /* next event; events inside the horizon */
} loop_t;

/* What one loop step asks for: a re-plan, its cause, the nodes it lost and
 * the training time lost since the last checkpoint. */
typedef struct replan_req {
  bool start;
  int32_t kind, down;
  double lost_s;
} replan_req_t;

/* Sets up a run: the state arrays (every node up, every node holding the
 * checkpoint), the full cluster's plan (HS_EINFEASIBLE when none fits), the
 * result's header and the events inside the horizon (copied into r->events).
 * Reads rn->m, rn->c, rn->cfg, trace; rs->planner must be set. */
static hs_status_t start_run(run_t *rn, rstate_t *rs, const hs_elastic_trace_t *trace,
                             loop_t *L, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const hs_elastic_cfg_t *cfg = rn->cfg;
  hs_elastic_result_t *r = rn->r;
  size_t N = rn->c->n_nodes;
  rs->alive = hs_calloc(N + 1, 1);
  rs->srcok = hs_calloc(N + 1, 1);
  rs->srcok_b = hs_calloc(N + 1, sizeof *rs->srcok_b);
  if (!rs->alive || !rs->srcok || !rs->srcok_b)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  memset(rs->alive, 1, N);
  memset(rs->srcok, 1, N);
  r->hours = cfg->hours;
  r->recovery = cfg->recovery;
  hs_strlcpy(r->strategy, rs->planner->type->name, sizeof r->strategy);
  L->H = hs_time_from_s(cfg->hours * 3600.0);
  L->interval =
      cfg->checkpoint_interval_s > 0 ? hs_time_from_s(cfg->checkpoint_interval_s) : HS_TIME_MAX;

  HS_CHECK(planner_get(rs->planner, rs->alive, &rs->cur, err));
  if (!rs->cur->feasible)
    HS_FAIL(hs_error_set(err, HS_EINFEASIBLE, "elastic: no plan on the full cluster: %s",
                         rs->cur->why));
  r->steady_tokens_per_s = rs->cur->tokens_per_s;
  r->steady_iteration_s = rs->cur->iteration_s;
  r->global_batch = rs->cur->global_batch;
  rs->ckpt_layout = &rs->cur->layout;

  /* events inside the horizon */
  size_t n_ev = 0;
  while (n_ev < trace->n && trace->events[n_ev].t_ns < L->H)
    n_ev++;
  if (n_ev) {
    r->events = hs_calloc(n_ev, sizeof *r->events);
    if (!r->events)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    memcpy(r->events, trace->events, n_ev * sizeof *r->events);
    r->n_events = n_ev;
  }
  L->n_ev = n_ev;
  L->t = 0;
  L->since_ckpt = 0;
  L->phase_end = L->interval;
  L->phase = PH_TRAIN;
cleanup:
  return st;
}

/* Closes the current phase's segment at t1 (training time counts towards
 * since_ckpt) and moves the clock to t1. The segment's phase, recovery and
 * rate come from L->phase, rs->cur_rec and rs->cur as they are on entry. */
static hs_status_t advance_to(run_t *rn, const rstate_t *rs, loop_t *L, hs_time_t t1,
                              hs_error_t *err)
{
  hs_status_t st = HS_OK;
  ph_t phase = L->phase;
  double tps = phase == PH_TRAIN ? rs->cur->tokens_per_s : 0.0;
  int32_t seg_rec = (phase == PH_REPLAN || phase == PH_RECOVER || phase == PH_IDLE) ? rs->cur_rec
                                                                                  : -1;
  HS_CHECK(add_seg(rn, L->t, t1, eph_of(phase), seg_rec, tps, err));
  if (phase == PH_TRAIN)
    L->since_ckpt += t1 - L->t;
  L->t = t1;
cleanup:
  return st;
}

/* The events at t_ev cut the current phase: applies every event at that
 * time (preemptions take nodes down, replacements bring fresh ones up) and
 * decides what follows. A preemption of a node in use (or any preemption
 * during a re-plan or recovery) loses the training since the last
 * checkpoint and asks for a re-plan; joins ask for one at the next safe
 * point, after a checkpoint when training is unsaved. On return req says
 * whether to re-plan now. */
static hs_status_t on_events(run_t *rn, rstate_t *rs, loop_t *L, hs_time_t t_ev,
                             replan_req_t *req, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_elastic_result_t *r = rn->r;
  HS_CHECK(advance_to(rn, rs, L, t_ev, err));
  hs_time_t t = L->t;
  bool disrupt = false;
  for (; L->k < L->n_ev && r->events[L->k].t_ns == t; L->k++) {
    int32_t n = r->events[L->k].node;
    if (r->events[L->k].kind == HS_ELASTIC_PREEMPT) {
      r->n_preemptions++;
      if (!rs->alive[n])
        continue;
      rs->alive[n] = 0;
      rs->srcok[n] = 0;
      req->down++;
      /* training breaks when it used the node; a re-plan or recovery in
       * progress always restarts (its sources or targets may be gone) */
      if (((L->phase == PH_TRAIN || L->phase == PH_CKPT) && rs->cur->node_used[n]) ||
          L->phase == PH_REPLAN || L->phase == PH_RECOVER)
        disrupt = true;
    } else {
      r->n_replacements++;
      if (rs->alive[n])
        continue;
      rs->alive[n] = 1;
      rs->srcok[n] = 0; /* a fresh node: no local copy */
      L->pending_up++;
      L->join_pending = true;
    }
  }
  if (disrupt) {
    if (L->phase == PH_TRAIN || L->phase == PH_CKPT) {
      for (size_t s = rn->last_ckpt_seg; s < r->n_segments; s++)
        if (r->segments[s].phase == HS_EPH_TRAIN)
          r->segments[s].phase = HS_EPH_LOST;
      req->lost_s = hs_time_to_s(L->since_ckpt);
      L->since_ckpt = 0;
      rs->cur = NULL;
    } else if (rs->cur_rec >= 0) {
      r->recoveries[rs->cur_rec].interrupted = true;
    }
    L->join_pending = false;
    req->start = true;
    req->kind = HS_ELASTIC_PREEMPT;
  } else if (L->join_pending && L->phase == PH_TRAIN) {
    L->join_pending = false;
    if (L->since_ckpt > 0) {
      /* checkpoint first, so that the joined nodes lose nothing */
      L->phase = PH_CKPT;
      L->phase_end =
          t + hs_time_from_s(hs_elastic_checkpoint_s(rn->m, rn->c, rn->cfg, &rs->cur->layout));
      L->join_pending = true;
      return HS_OK;
    }
    req->start = true;
  } else if (L->join_pending && L->phase == PH_IDLE) {
    L->join_pending = false;
    req->start = true;
  }
cleanup:
  return st;
}

/* The current phase ends at t_end (before the next event): training turns
 * into a checkpoint, a checkpoint or recovery into training, a re-plan into
 * its recovery (or idling when nothing fit). Joins waiting for a safe point
 * ask for a re-plan through req. Reaching the horizon only closes the
 * segment. */
static hs_status_t on_phase_end(run_t *rn, rstate_t *rs, loop_t *L, hs_time_t t_end,
                                replan_req_t *req, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_elastic_result_t *r = rn->r;
  size_t N = rn->c->n_nodes;
  HS_CHECK(advance_to(rn, rs, L, t_end, err));
  hs_time_t t = L->t;
  if (t >= L->H)
    return HS_OK;
  switch (L->phase) {
  case PH_TRAIN:
    L->phase = PH_CKPT;
    L->phase_end =
        t + hs_time_from_s(hs_elastic_checkpoint_s(rn->m, rn->c, rn->cfg, &rs->cur->layout));
    return HS_OK;
  case PH_CKPT:
    r->n_checkpoints++;
    L->since_ckpt = 0;
    rn->last_ckpt_seg = r->n_segments;
    rs->ckpt_layout = &rs->cur->layout;
    memcpy(rs->srcok, rs->alive, N);
    break;
  case PH_REPLAN:
    if (rs->target) {
      L->phase = PH_RECOVER;
      L->phase_end = t + hs_time_from_s(r->recoveries[rs->cur_rec].recovery_s);
      return HS_OK;
    }
    L->phase = PH_IDLE;
    L->phase_end = HS_TIME_MAX;
    if (!L->join_pending)
      return HS_OK;
    /* nodes joined while planning found nothing: try again with them */
    L->join_pending = false;
    req->start = true;
    break;
  case PH_RECOVER:
    rs->cur = rs->target;
    rs->target = NULL;
    rs->ckpt_layout = &rs->cur->layout; /* every device now holds its shards */
    memcpy(rs->srcok, rs->alive, N);
    L->since_ckpt = 0;
    rn->last_ckpt_seg = r->n_segments;
    rs->cur_rec = -1;
    break;
  case PH_IDLE:
    return HS_OK;
  }
  if (!req->start) {
    /* after a checkpoint or a recovery: train, or re-plan for joined nodes */
    L->phase = PH_TRAIN;
    L->phase_end = L->interval == HS_TIME_MAX ? HS_TIME_MAX : t + L->interval;
    if (!L->join_pending)
      return HS_OK;
    L->join_pending = false;
    req->start = true;
  }
cleanup:
  return st;
}

/* Re-plans on the nodes up at L->t (begin_replan) and enters the re-plan
 * phase, or idles when no node is up. When nodes only joined and nothing
 * fits them, training goes on with the current plan. */
static hs_status_t replan_now(run_t *rn, rstate_t *rs, loop_t *L, const replan_req_t *req,
                              hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t N = rn->c->n_nodes;
  hs_time_t t = L->t;
  pentry_t *before = rs->cur;
  HS_CHECK(begin_replan(rn, rs, t, req->kind, req->down, L->pending_up, req->lost_s, err));
  L->pending_up = 0;
  if (!rs->target && before && req->kind == HS_ELASTIC_REPLACE) {
    /* more nodes and nothing fits: keep training on the current plan */
    rs->cur_rec = -1;
    L->phase = PH_TRAIN;
    L->phase_end = L->interval == HS_TIME_MAX ? HS_TIME_MAX : t + L->interval - L->since_ckpt;
    return HS_OK;
  }
  rs->cur = NULL;
  bool any = false;
  for (size_t n = 0; n < N; n++)
    any = any || rs->alive[n];
  L->phase = any ? PH_REPLAN : PH_IDLE;
  L->phase_end = any ? t + hs_time_from_s(rn->r->recoveries[rs->cur_rec].replan_s) : HS_TIME_MAX;
cleanup:
  return st;
}

/* The result's totals: time per phase, useful tokens, goodput, and the cost
 * of every node while it was up, at its spot or on-demand price (NaN when a
 * GPU has no price: unknown, not the priced GPUs' partial sum). Reads the
 * segments and events of r. O(segments + nodes x events). */
static void sum_totals(const hs_cluster_t *c, const hs_elastic_cfg_t *cfg, hs_time_t H,
                       hs_elastic_result_t *r)
{
  for (size_t s = 0; s < r->n_segments; s++) {
    const hs_elastic_segment_t *sg = &r->segments[s];
    double d = hs_time_to_s(sg->t1 - sg->t0);
    r->time_s[sg->phase] += d;
    if (sg->phase == HS_EPH_TRAIN)
      r->useful_tokens += d * sg->tokens_per_s;
  }
  r->goodput_tokens_per_h = r->useful_tokens / cfg->hours;
  double hsec = hs_time_to_s(H);
  for (size_t n = 0; n < c->n_nodes; n++) {
    const hs_gpu_t *g = &c->gpus.gpus[c->nodes[n].gpu];
    double price = c->nodes[n].spot && g->price_spot_usd_h > 0 ? g->price_spot_usd_h
                                                               : g->price_ondemand_usd_h;
    double up_s = 0.0, since = 0.0;
    bool is_up = true;
    for (size_t e = 0; e < r->n_events; e++) {
      if (r->events[e].node != (int32_t)n)
        continue;
      double te = hs_time_to_s(r->events[e].t_ns);
      if (r->events[e].kind == HS_ELASTIC_PREEMPT && is_up) {
        up_s += te - since;
        is_up = false;
      } else if (r->events[e].kind == HS_ELASTIC_REPLACE && !is_up) {
        since = te;
        is_up = true;
      }
    }
    if (is_up)
      up_s += hsec - since;
    r->cost_usd += up_s / 3600.0 * price * c->nodes[n].n_devices;
    if (!(price > 0))
      r->n_unpriced_devices += c->nodes[n].n_devices;
  }
  r->usd_per_million_tokens = r->useful_tokens > 0 ? r->cost_usd / (r->useful_tokens / 1e6) : 0.0;
  if (r->n_unpriced_devices > 0) /* unknown, not the priced GPUs' partial sum */
    r->cost_usd = r->usd_per_million_tokens = NAN;
}

hs_status_t hs_elastic_run(const hs_model_t *m, const hs_cluster_t *c, const hs_elastic_cfg_t *cfg,
                           const hs_elastic_trace_t *trace, hs_elastic_planner_t *planner,
                           hs_elastic_result_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_elastic_planner_t *own = NULL;
  hs_topology_t *topo = NULL;
  rstate_t rs = {0};
  loop_t L = {0};
  hs_elastic_result_destroy(out);
  HS_CHECK(check_run_inputs(m, c, cfg, trace, planner, err));
  if (!planner) {
    HS_CHECK(hs_elastic_planner_new(m, c, cfg, &own, err));
    planner = own;
  }
  rs.planner = planner;
  rs.cur_rec = -1;
  HS_CHECK(hs_topology_new(c, &topo, err));
  run_t rn = {.m = m, .c = c, .cfg = cfg, .topo = topo, .r = out};
  HS_CHECK(start_run(&rn, &rs, trace, &L, err));
  /* each step ends the phase or applies the next events, then re-plans
   * when that step asks for it */
  while (L.t < L.H) {
    hs_time_t t_ev = L.k < L.n_ev ? out->events[L.k].t_ns : HS_TIME_MAX;
    hs_time_t t_end = HS_MIN(L.phase_end, L.H);
    replan_req_t req = {.start = false, .kind = HS_ELASTIC_REPLACE, .down = 0, .lost_s = 0.0};
    if (t_ev < t_end)
      HS_CHECK(on_events(&rn, &rs, &L, t_ev, &req, err));
    else
      HS_CHECK(on_phase_end(&rn, &rs, &L, t_end, &req, err));
    if (req.start)
      HS_CHECK(replan_now(&rn, &rs, &L, &req, err));
  }
  sum_totals(c, cfg, L.H, out);
  out->replan_wall_s = rs.replan_wall;
  out->n_searches = planner->n_searches;
cleanup:
  if (st != HS_OK)
    hs_elastic_result_destroy(out);
  hs_elastic_planner_free(own);
  hs_topology_free(topo);
  free(rs.alive);
  free(rs.srcok);
  free(rs.srcok_b);
  return st;
}
