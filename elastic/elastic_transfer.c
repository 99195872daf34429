/*
 * elastic_transfer.c - training-state layouts, checkpoint write cost and
 * recovery transfer plans run through the flow network (the surviving
 * sub-cluster is hs_search_subcluster, search/subcluster.c).
 *
 * A layout lists, per op, the devices holding a slice of the op's training
 * state (TP rank r of degree t holds [r/t, (r+1)/t) of a TP-split op; every
 * holder of a replicated op holds all of it). A recovery moves the state of
 * the checkpoint layout into the new plan's layout: for each op, the slices
 * are cut at the common refinement of every holder's TP partition (L = lcm
 * of the degrees, so each unit lies inside exactly one slice of every
 * holder) and every unit a new holder needs gets one source. Transfers are
 * merged per (source, destination, kind) into flows that start together and
 * share links max-min fairly (hs_net.h), so contention counts. Everything
 * is sorted before use: same input, same plan, same bytes.
 */
#include "hs_elastic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *hs_recovery_name(hs_recovery_t r)
{
  switch (r) {
  case HS_RECOVERY_CLOUD: return "cloud";
  case HS_RECOVERY_LOCAL_FIRST: return "local-first";
  case HS_RECOVERY_RESTART: return "restart";
  default: return "?";
  }
}

hs_status_t hs_recovery_parse(const char *s, hs_recovery_t *out)
{
  for (int r = 0; r < HS_RECOVERY__COUNT; r++)
    if (s && strcmp(s, hs_recovery_name((hs_recovery_t)r)) == 0) {
      *out = (hs_recovery_t)r;
      return HS_OK;
    }
  return HS_EINVAL;
}

void hs_elastic_cfg_init(hs_elastic_cfg_t *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->strategy = "hapt";
  hs_plan_opts_init(&cfg->plan);
  /* the surviving nodes are the elastic run's subset already; its recovery
   * model charges every device the plan is given (docs/elastic.md) */
  cfg->plan.device_subsets = false;
  cfg->recovery = HS_RECOVERY_LOCAL_FIRST;
  cfg->hours = 24.0;
  cfg->checkpoint_interval_s = 1800.0;
  cfg->checkpoint_cost_s = 0.0;
  cfg->ckpt_write_GBps = 1.25;
  cfg->cloud_GBps = 1.25;
  cfg->cloud_total_GBps = 0.0;
  cfg->local_read_GBps = 5.0;
  cfg->state_bytes_per_param = 14.0;
  cfg->replan_base_s = 1.0;
  cfg->replan_ns_per_candidate = 100.0;
  cfg->restart_overhead_s = 120.0;
  cfg->warmup_iterations = 10;
}

/* ---- layouts --------------------------------------------------------------- */

void hs_elastic_layout_init(hs_elastic_layout_t *l)
{
  if (l)
    memset(l, 0, sizeof *l);
}

void hs_elastic_layout_destroy(hs_elastic_layout_t *l)
{
  if (!l)
    return;
  free(l->op_off);
  free(l->dev);
  free(l->tp);
  free(l->rank);
  memset(l, 0, sizeof *l);
}

hs_status_t hs_elastic_layout_from_plan(const hs_model_t *m, const hs_plan_t *plan,
                                        const int32_t *dev_map, hs_elastic_layout_t *out,
                                        hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t *fill = NULL;
  hs_elastic_layout_destroy(out);
  size_t n_ops = m->n_ops;
  out->n_ops = n_ops;
  out->op_off = hs_calloc(n_ops + 1, sizeof *out->op_off);
  fill = hs_calloc(n_ops + 1, sizeof *fill);
  if (!out->op_off || !fill)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for a state layout"));
  /* count holders per op, then fill (two passes keep it one allocation) */
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < plan->n_pipelines; i++)
      for (int32_t s = 0; s < plan->pipelines[i].n_stages; s++) {
        const hs_plan_stage_t *stg = &plan->pipelines[i].stages[s];
        if (stg->op_first < 0 || stg->op_last > (int32_t)n_ops || stg->op_first > stg->op_last)
          HS_FAIL(hs_error_set(err, HS_EINVAL,
                               "plan: pipelines[%d].stages[%d]: op range [%d, %d) outside the model's %zu ops",
                               i, s, stg->op_first, stg->op_last, n_ops));
        for (int32_t q = 0; q < stg->n_replicas; q++) {
          const hs_plan_replica_t *rp = &stg->replicas[q];
          for (int32_t op = stg->op_first; op < stg->op_last; op++)
            for (int32_t k = 0; k < rp->n_devices; k++) {
              if (pass == 0) {
                out->op_off[op + 1]++;
                continue;
              }
              int32_t at = out->op_off[op] + fill[op]++;
              out->dev[at] = dev_map ? dev_map[rp->devices[k]] : rp->devices[k];
              out->tp[at] = rp->n_devices;
              out->rank[at] = k;
            }
        }
      }
    if (pass == 0) {
      for (size_t o = 0; o < n_ops; o++)
        out->op_off[o + 1] += out->op_off[o];
      out->n = (size_t)out->op_off[n_ops];
      out->dev = hs_calloc(out->n + 1, sizeof *out->dev);
      out->tp = hs_calloc(out->n + 1, sizeof *out->tp);
      out->rank = hs_calloc(out->n + 1, sizeof *out->rank);
      if (!out->dev || !out->tp || !out->rank)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for a state layout"));
    }
  }
cleanup:
  free(fill);
  if (st != HS_OK)
    hs_elastic_layout_destroy(out);
  return st;
}

static bool op_replicated(const hs_model_t *m, int32_t op)
{
  return m->ops[op].tp_split == HS_TP_REPLICATE;
}

double hs_elastic_slice_bytes(const hs_model_t *m, int32_t op, int32_t tp,
                              double state_bytes_per_param)
{
  double b = m->ops[op].params * state_bytes_per_param;
  return (op_replicated(m, op) || tp <= 1) ? b : b / tp;
}

double hs_elastic_checkpoint_s(const hs_model_t *m, const hs_cluster_t *c,
                               const hs_elastic_cfg_t *cfg, const hs_elastic_layout_t *l)
{
  if (cfg->checkpoint_cost_s > 0)
    return cfg->checkpoint_cost_s;
  int32_t max_tp = 1;
  for (size_t k = 0; k < l->n; k++)
    max_tp = HS_MAX(max_tp, l->tp[k]);
  double *node_bytes = hs_calloc(c->n_nodes + 1, sizeof *node_bytes);
  uint8_t *written = hs_calloc((size_t)max_tp + 1, 1);
  if (!node_bytes || !written) {
    free(node_bytes);
    free(written);
    return NAN;
  }
  /* writer of each slice: the first holder (in plan order) holding it.
   * Slices of different TP degrees overlap, so the degree of the op's first
   * holder decides the partition; its ranks are written once each (a
   * replicated op once in all). O(holders) per op. */
  for (size_t o = 0; o < l->n_ops; o++) {
    int32_t a = l->op_off[o], b = l->op_off[o + 1];
    if (a == b)
      continue;
    bool repl = op_replicated(m, (int32_t)o);
    int32_t t0 = repl ? 1 : l->tp[a];
    memset(written, 0, (size_t)t0);
    for (int32_t k = a; k < b; k++) {
      int32_t t = repl ? 1 : l->tp[k];
      int32_t rank = repl ? 0 : l->rank[k];
      if (t != t0 || written[rank])
        continue;
      written[rank] = 1;
      node_bytes[c->devices[l->dev[k]].node] +=
          hs_elastic_slice_bytes(m, (int32_t)o, t, cfg->state_bytes_per_param);
    }
  }
  double worst = 0.0;
  for (size_t n = 0; n < c->n_nodes; n++)
    worst = HS_MAX(worst, node_bytes[n]);
  free(node_bytes);
  free(written);
  return worst / (cfg->ckpt_write_GBps * HS_GB);
}

/* ---- recovery transfer plans ----------------------------------------------- */

enum { SRC_OWN = 0, SRC_PEER = 1, SRC_CLOUD = 2 };

typedef struct xfer {
  int32_t dst, kind, src; /* src: device (own, peer) or -1 (cloud) */
  double bytes;
} xfer_t;

typedef struct xplan {
  xfer_t *x;
  size_t n, cap;
  double *src_load; /* per device: bytes assigned to send (peer) */
} xplan_t;

static hs_status_t xadd(xplan_t *p, int32_t dst, int32_t kind, int32_t src, double bytes)
{
  if (bytes <= 0)
    return HS_OK;
  if (p->n && p->x[p->n - 1].dst == dst && p->x[p->n - 1].kind == kind && p->x[p->n - 1].src == src) {
    p->x[p->n - 1].bytes += bytes;
    return HS_OK;
  }
  if (hs_reserve((void **)&p->x, &p->cap, p->n + 1, sizeof *p->x) != HS_OK)
    return HS_ENOMEM;
  p->x[p->n++] = (xfer_t){dst, kind, src, bytes};
  return HS_OK;
}

static int cmp_xfer(const void *a, const void *b)
{
  const xfer_t *x = a, *y = b;
  if (x->dst != y->dst)
    return x->dst < y->dst ? -1 : 1;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->src != y->src)
    return x->src < y->src ? -1 : 1;
  return 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

#define UNITS_MAX (1 << 16)

/* Source for unit u (of L) of op o needed by device dst under local-first:
 * the device's own copy, else the surviving holder that is closest (same
 * node, same site, other site) and, among those, has the least bytes
 * assigned so far, then the lowest id; -1 when no copy survives. */
static int32_t pick_source(const hs_cluster_t *c, const hs_elastic_layout_t *old, const bool *src_ok,
                           bool replicated, size_t o, int64_t u, int64_t L, int32_t dst,
                           const double *load, int32_t *kind)
{
  int32_t best = -1, best_cls = 3;
  for (int32_t i = old->op_off[o]; i < old->op_off[o + 1]; i++) {
    int32_t d = old->dev[i];
    if (!src_ok[c->devices[d].node])
      continue;
    if (!replicated && old->tp[i] > 1 && (u * old->tp[i]) / L != old->rank[i])
      continue;
    if (d == dst) {
      *kind = SRC_OWN;
      return d;
    }
    int32_t cls = c->devices[d].node == c->devices[dst].node ? 0
                  : c->devices[d].site == c->devices[dst].site ? 1
                                                              : 2;
    if (best < 0 || cls < best_cls || (cls == best_cls && (load[d] < load[best] ||
                                                          (load[d] == load[best] && d < best)))) {
      best = d;
      best_cls = cls;
    }
  }
  *kind = SRC_PEER;
  return best;
}

static hs_status_t build_xplan(const hs_model_t *m, const hs_cluster_t *c, const hs_elastic_cfg_t *cfg,
                               bool local, const hs_elastic_layout_t *old, const bool *src_ok,
                               const hs_elastic_layout_t *nl, xplan_t *p, hs_error_t *err)
{
  for (size_t o = 0; o < nl->n_ops && o < m->n_ops; o++) {
    if (m->ops[o].params <= 0)
      continue;
    bool repl = op_replicated(m, (int32_t)o);
    int64_t L = 1;
    if (!repl) {
      for (int32_t j = nl->op_off[o]; j < nl->op_off[o + 1]; j++)
        L = L / gcd64(L, nl->tp[j]) * nl->tp[j];
      if (local && old)
        for (int32_t i = old->op_off[o]; i < old->op_off[o + 1]; i++)
          if (src_ok[c->devices[old->dev[i]].node])
            L = L / gcd64(L, old->tp[i]) * old->tp[i];
      if (L > UNITS_MAX)
        return hs_error_set(err, HS_ELIMIT,
                            "recovery plan: op %zu (%s): TP degrees refine into %lld slices, more than %d",
                            o, m->ops[o].name, (long long)L, UNITS_MAX);
    }
    double unit_bytes = m->ops[o].params * cfg->state_bytes_per_param / (double)L;
    for (int32_t j = nl->op_off[o]; j < nl->op_off[o + 1]; j++) {
      int32_t dst = nl->dev[j];
      int64_t u0 = 0, u1 = L;
      if (!repl && nl->tp[j] > 1) {
        u0 = (int64_t)nl->rank[j] * L / nl->tp[j];
        u1 = (int64_t)(nl->rank[j] + 1) * L / nl->tp[j];
      }
      for (int64_t u = u0; u < u1; u++) {
        int32_t kind = SRC_CLOUD, src = -1;
        if (local && old)
          src = pick_source(c, old, src_ok, repl, o, u, L, dst, p->src_load, &kind);
        if (src < 0)
          kind = SRC_CLOUD;
        if (kind == SRC_PEER)
          p->src_load[src] += unit_bytes;
        if (xadd(p, dst, kind, src, unit_bytes) != HS_OK)
          return hs_error_set(err, HS_ENOMEM, "out of memory for a recovery plan");
      }
    }
  }
  if (p->n)
    qsort(p->x, p->n, sizeof *p->x, cmp_xfer);
  size_t w = 0;
  for (size_t k = 0; k < p->n; k++) {
    if (w && cmp_xfer(&p->x[w - 1], &p->x[k]) == 0)
      p->x[w - 1].bytes += p->x[k].bytes;
    else
      p->x[w++] = p->x[k];
  }
  p->n = w;
  return HS_OK;
}

/* Runs the transfers of p as concurrent flows; fills out->transfer_s and the
 * byte counts. */
static hs_status_t run_xplan(const hs_cluster_t *c, const hs_topology_t *topo,
                             const hs_elastic_cfg_t *cfg, const xplan_t *p,
                             hs_elastic_recovery_cost_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_engine_t eng;
  memset(&eng, 0, sizeof eng);
  hs_net_t *net = NULL;
  hs_link_t *links = NULL;
  hs_flow_t *flows = NULL;
  hs_flow_hop_t *hops = NULL;
  size_t nt = hs_topology_n_links(topo), N = c->n_nodes;
  /* extra links: per node a local-copy read link and a cloud download link,
   * then one shared cloud egress link (unconstrained when 0) */
  size_t disk0 = nt, cloud0 = nt + N, egress = nt + 2 * N, nl = nt + 2 * N + 1;
  links = hs_calloc(nl, sizeof *links);
  flows = hs_calloc(p->n + 1, sizeof *flows);
  hops = hs_calloc((p->n + 1) * HS_PATH_MAX, sizeof *hops);
  if (!links || !flows || !hops)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for recovery flows"));
  memcpy(links, hs_topology_links(topo), nt * sizeof *links);
  for (size_t n = 0; n < N; n++) {
    links[disk0 + n] = (hs_link_t){.kind = HS_LINK_NIC_DOWN, .owner = (int32_t)n,
                                   .GBps = cfg->local_read_GBps};
    snprintf(links[disk0 + n].label, sizeof links[disk0 + n].label, "n%zu.local", n);
    links[cloud0 + n] = (hs_link_t){.kind = HS_LINK_NIC_DOWN, .owner = (int32_t)n,
                                    .GBps = cfg->cloud_GBps};
    snprintf(links[cloud0 + n].label, sizeof links[cloud0 + n].label, "n%zu.cloud", n);
  }
  links[egress] = (hs_link_t){.kind = HS_LINK_XSITE, .owner = -1, .GBps = cfg->cloud_total_GBps};
  snprintf(links[egress].label, sizeof links[egress].label, "cloud.egress");
  if (hs_engine_init(&eng, NULL) != HS_OK || hs_net_new_links(&eng, links, nl, &net) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for the recovery network"));
  for (size_t k = 0; k < p->n; k++) {
    const xfer_t *x = &p->x[k];
    hs_flow_hop_t *h = hops + k * HS_PATH_MAX;
    int32_t nh = 0, node = c->devices[x->dst].node;
    if (x->kind == SRC_OWN) {
      h[nh++] = (hs_flow_hop_t){(int32_t)(disk0 + node), 1};
      out->bytes_own += x->bytes;
    } else if (x->kind == SRC_CLOUD) {
      h[nh++] = (hs_flow_hop_t){(int32_t)(cloud0 + node), 1};
      h[nh++] = (hs_flow_hop_t){hs_topology_link_nic_down(topo, node), 1};
      h[nh++] = (hs_flow_hop_t){(int32_t)egress, 1};
      out->bytes_cloud += x->bytes;
    } else {
      hs_path_t path;
      if (hs_topology_path(topo, x->src, x->dst, &path) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_EINTERNAL, "recovery: no path from device %d to %d", x->src,
                             x->dst));
      for (int32_t i = 0; i < path.n; i++)
        h[nh++] = (hs_flow_hop_t){path.links[i], 1};
      out->bytes_peer += x->bytes;
    }
    hs_flow_init(&flows[k]);
    flows[k].bytes = x->bytes;
    flows[k].hops = h;
    flows[k].n_hops = nh;
    if ((st = hs_net_flow_start(net, &flows[k])) != HS_OK)
      HS_FAIL(hs_error_set(err, st, "recovery: cannot start flow %zu", k));
  }
  HS_CHECK(hs_engine_run(&eng, HS_TIME_MAX));
  hs_time_t end = 0;
  for (size_t k = 0; k < p->n; k++)
    end = HS_MAX(end, flows[k].t_end);
  out->transfer_s = hs_time_to_s(end);
  out->n_flows = (int32_t)p->n;
cleanup:
  hs_net_free(net);
  hs_engine_destroy(&eng);
  free(links);
  free(flows);
  free(hops);
  return st;
}

static hs_status_t plan_and_run(const hs_model_t *m, const hs_cluster_t *c,
                                const hs_topology_t *topo, const hs_elastic_cfg_t *cfg, bool local,
                                const hs_elastic_layout_t *old, const bool *src_ok,
                                const hs_elastic_layout_t *nl, hs_elastic_recovery_cost_t *out,
                                hs_error_t *err)
{
  hs_status_t st = HS_OK;
  xplan_t p = {0};
  memset(out, 0, sizeof *out);
  p.src_load = hs_calloc(c->n_devices + 1, sizeof *p.src_load);
  if (!p.src_load)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for a recovery plan"));
  HS_CHECK(build_xplan(m, c, cfg, local, old, src_ok, nl, &p, err));
  HS_CHECK(run_xplan(c, topo, cfg, &p, out, err));
cleanup:
  free(p.x);
  free(p.src_load);
  return st;
}

hs_status_t hs_elastic_recovery_plan(const hs_model_t *m, const hs_cluster_t *c,
                                     const hs_topology_t *topo, const hs_elastic_cfg_t *cfg,
                                     hs_recovery_t recovery, const hs_elastic_layout_t *old,
                                     const bool *src_ok, const hs_elastic_layout_t *new_l,
                                     hs_elastic_recovery_cost_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  if (new_l->n_ops != m->n_ops || (old && old->n_ops != m->n_ops))
    return hs_error_set(err, HS_EINVAL, "recovery plan: layouts do not match the model's %zu ops",
                        m->n_ops);
  for (size_t k = 0; k < new_l->n; k++)
    if (new_l->dev[k] < 0 || (size_t)new_l->dev[k] >= c->n_devices)
      return hs_error_set(err, HS_EINVAL, "recovery plan: device %d outside the cluster",
                          new_l->dev[k]);
  if (old)
    for (size_t k = 0; k < old->n; k++)
      if (old->dev[k] < 0 || (size_t)old->dev[k] >= c->n_devices)
        return hs_error_set(err, HS_EINVAL, "recovery plan: device %d outside the cluster",
                            old->dev[k]);
  if (recovery != HS_RECOVERY_LOCAL_FIRST)
    return plan_and_run(m, c, topo, cfg, false, NULL, src_ok, new_l, out, err);
  HS_CHECK(plan_and_run(m, c, topo, cfg, true, old, src_ok, new_l, out, err));
  {
    hs_elastic_recovery_cost_t cloud;
    HS_CHECK(plan_and_run(m, c, topo, cfg, false, NULL, src_ok, new_l, &cloud, err));
    if (cloud.transfer_s < out->transfer_s) {
      *out = cloud;
      out->used_cloud_fallback = true;
    }
  }
cleanup:
  return st;
}
