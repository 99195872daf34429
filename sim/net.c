/*
 * net.c - the flow-level network: flows on links, max-min fair rates,
 * completion events and per-link counters.
 *
 * Representation. Each link keeps its member table (flow, hop index):
 * member 0 inline in the link's own cache line, the others in a heap array
 * (hs__link_member). Each flow on links keeps, per hop, its index in that
 * link's table (f->pos, a pool block), so joining and leaving a link are
 * O(1) appends and swap-removes. Active flows sit in one array (f->slot),
 * also swap-removed.
 *
 * Rates. A start or an end only marks the touched constrained links dirty
 * and makes sure the rate update event of the current instant is queued
 * (HS_NET_PRIO_RATES: after everything else at this time). A start marks
 * only its first constrained link: the flow stays on all of its links until
 * the update, so they share one component, and that link is listed no
 * later than the others would have been, so each component is still seeded
 * from the same link, in the same order (an end marks every link: they may
 * part). The update collects, from each dirty link, the component of flows
 * connected to it through shared constrained links (breadth-first, epoch
 * marks instead of clearing), lays it out as local arrays and calls
 * hs_maxmin_solve on it, without the links a flow has to itself other than
 * its tightest one (tightest_private_hop). A flow whose rate changed has
 * its remaining bytes advanced lazily (remaining -= old rate x elapsed
 * since its last change) and its completion event rescheduled at now +
 * round(remaining / rate), rounded once; unchanged flows are left alone.
 * Unconstrained links carry members (for the counters) but never couple
 * flows.
 *
 * Invariants: a flow on links has f->pos != NULL and appears exactly once in
 * each hop's member table; between updates, rate_Bps and t_last describe
 * every flow's progress exactly; all update buffers are reserved when flows
 * start, so the update event never allocates (except the solver workspace
 * on a first solve larger than any before: failures stop the engine).
 */
#include "net_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- construction ---------------------------------------------------------- */

static void rates_update(hs_engine_t *eng, hs_event_t *ev);
static void flow_complete(hs_engine_t *eng, hs_event_t *ev);

void hs_flow_init(hs_flow_t *f)
{
  memset(f, 0, sizeof *f);
  f->slot = -1;
  hs_event_init(&f->ev, flow_complete);
}

hs_status_t hs__net_init_links(hs_net_t *net)
{
  hs_status_t st = HS_OK;
  size_t n = net->n_links;
  if (n > (size_t)INT32_MAX / 2)
    return HS_ELIMIT;
  net->lk_mem = hs_calloc(n + 1, sizeof *net->lk);
  if (net->lk_mem)
    net->lk = (hs__link_t *)(((uintptr_t)net->lk_mem + 63) & ~(uintptr_t)63);
  net->stats = hs_calloc(n, sizeof *net->stats);
  net->dirty = hs_calloc(n, sizeof *net->dirty);
  net->comp_links = hs_calloc(n, sizeof *net->comp_links);
  net->csr_cap = hs_calloc(n, sizeof *net->csr_cap);
  if (!net->lk || !net->stats || !net->dirty || !net->comp_links || !net->csr_cap)
    HS_FAIL(HS_ENOMEM);
  for (size_t l = 0; l < n; l++) {
    net->lk[l].cap = 1;
    net->lk[l].local = -1;
    double g = net->links[l].GBps;
    net->lk[l].finite = g > 0.0 && g < INFINITY;
    net->lk[l].cap_Bps = net->lk[l].finite ? g * HS_GB : INFINITY;
  }
  hs_event_init(&net->upd_ev, rates_update);
  hs_maxmin_init(&net->mm);
  net->paths.links = net->links;
  net->paths.n_links = n;
cleanup:
  return st;
}

hs_status_t hs_net_new_links(hs_engine_t *eng, const hs_link_t *links, size_t n_links,
                             hs_net_t **out)
{
  hs_status_t st = HS_OK;
  hs_net_t *net = NULL;
  if (!eng || !out || (n_links && !links))
    return HS_EINVAL;
  *out = NULL;
  net = hs_calloc(1, sizeof *net);
  if (!net)
    return HS_ENOMEM;
  net->eng = eng;
  net->links_own = hs_calloc(n_links, sizeof *net->links_own);
  if (!net->links_own)
    HS_FAIL(HS_ENOMEM);
  if (n_links)
    memcpy(net->links_own, links, n_links * sizeof *links);
  net->links = net->links_own;
  net->n_links = n_links;
  HS_CHECK(hs__net_init_links(net));
  *out = net;
  net = NULL;
cleanup:
  hs_net_free(net);
  return st;
}

void hs_net_set_path_fn(hs_net_t *net, hs_net_path_fn path, void *ctx,
                        int32_t (*node_of)(void *ctx, int32_t dev))
{
  net->paths_fixed = false;
  if (net->colls) /* what the collectives kept came from the old paths */
    net->colls_ops->paths_changed(net->colls);
  net->paths.path = path;
  net->paths.ctx = ctx;
  net->paths.node_of = node_of;
}

const hs_net_paths_t *hs_net_paths(const hs_net_t *net) { return &net->paths; }

hs_engine_t *hs__net_engine(hs_net_t *net) { return net->eng; }

void *hs__net_colls(hs_net_t *net) { return net->colls; }

void hs__net_set_colls(hs_net_t *net, void *state, const hs__net_slot_ops_t *ops)
{
  net->colls = state;
  net->colls_ops = ops;
}

bool hs__net_paths_fixed(const hs_net_t *net) { return net->paths_fixed; }

void hs_net_free(hs_net_t *net)
{
  if (!net)
    return;
  if (net->eng) {
    hs_engine_cancel(net->eng, &net->upd_ev);
    for (size_t i = 0; i < net->n_active; i++)
      hs_engine_cancel(net->eng, &net->active[i]->ev);
  }
  if (net->colls)
    net->colls_ops->free(net->colls, net->eng);
  if (net->lk)
    for (size_t l = 0; l < net->n_links; l++)
      hs_free(net->lk[l].mx);
  hs_free(net->lk_mem);
  hs_free(net->stats);
  hs_free(net->dirty);
  hs_free(net->comp_links);
  hs_free(net->csr_cap);
  hs_free(net->active);
  hs_free(net->comp_flows);
  hs_free(net->csr_off);
  hs_free(net->csr_hops);
  hs_free(net->rates);
  hs_free(net->links_own);
  hs_maxmin_destroy(&net->mm);
  hs__pool_destroy(&net->pool);
  hs_free(net);
}

/* ---- accessors ------------------------------------------------------------- */

const hs_link_stats_t *hs_net_link_stats(const hs_net_t *net)
{
  for (size_t l = 0; l < net->n_links; l++) /* max_flows 1 is kept as `used` (flow start) */
    if (net->lk[l].used && net->stats[l].max_flows < 1)
      net->stats[l].max_flows = 1;
  return net->stats;
}
hs_engine_t *hs_net_engine(hs_net_t *net) { return net->eng; }
const hs_topology_t *hs_net_topology(const hs_net_t *net) { return net->topo; }
size_t hs_net_n_links(const hs_net_t *net) { return net->n_links; }
const hs_link_t *hs_net_links(const hs_net_t *net) { return net->links; }
size_t hs_net_active_flows(const hs_net_t *net) { return net->n_active; }
uint64_t hs_net_rate_updates(const hs_net_t *net) { return net->n_updates; }

void hs_net_sync_stats(hs_net_t *net)
{
  hs_time_t now = net->eng->now;
  for (size_t l = 0; l < net->n_links; l++)
    if (net->lk[l].n > 0) {
      net->stats[l].busy_ns += now - net->lk[l].busy_since;
      net->lk[l].busy_since = now;
    }
}

/* ---- flows ----------------------------------------------------------------- */

/* Grows the update buffers so a component of `flows` flows and `hops` hops
 * fits; geometric, so amortised O(1) per flow start. */
static hs_status_t reserve_update(hs_net_t *net, size_t flows, size_t hops)
{
  hs_status_t st = HS_OK;
  if (flows > net->res_flows) {
    size_t want = HS_MAX(flows, 2 * net->res_flows), c1 = net->res_flows, c2 = net->res_flows,
           c3 = net->res_flows;
    HS_CHECK(hs_reserve((void **)&net->comp_flows, &c1, want, sizeof *net->comp_flows));
    HS_CHECK(hs_reserve((void **)&net->csr_off, &c2, want + 1, sizeof *net->csr_off));
    HS_CHECK(hs_reserve((void **)&net->rates, &c3, want, sizeof *net->rates));
    net->res_flows = want;
  }
  if (hops > net->res_hops) {
    size_t want = HS_MAX(hops, 2 * net->res_hops), c = net->res_hops;
    HS_CHECK(hs_reserve((void **)&net->csr_hops, &c, want, sizeof *net->csr_hops));
    net->res_hops = want;
  }
  HS_CHECK(hs_maxmin_reserve(&net->mm, net->res_flows, net->n_links, net->res_hops));
cleanup:
  return st;
}

/* Makes room for one more member on lk: the heap array of members 1 .. n
 * grows geometrically. */
static hs_status_t grow_members(hs__link_t *lk)
{
  hs_status_t st = HS_OK;
  size_t cap = (size_t)lk->cap - 1;
  HS_CHECK(hs_reserve((void **)&lk->mx, &cap, (size_t)lk->n, sizeof *lk->mx));
  lk->cap = (int32_t)HS_MIN(cap + 1, (size_t)INT32_MAX);
cleanup:
  return st;
}

static inline void mark_dirty(hs_net_t *net, int32_t l)
{
  hs__link_t *lk = &net->lk[l];
  if (lk->finite && !lk->dirty) {
    lk->dirty = true;
    net->dirty[net->n_dirty++] = l;
  }
}

hs_status_t hs_net_flow_start(hs_net_t *net, hs_flow_t *f)
{
  hs_status_t st = HS_OK;
  int32_t *pos = NULL;
  if (!net || !f)
    return HS_EINVAL;
  if (!(f->bytes >= 0.0) || f->bytes == INFINITY || f->n_hops < 0 || (f->n_hops > 0 && !f->hops))
    return HS_EINVAL;
  bool constrained = false, full = false; /* full: a member table must grow */
  for (int32_t h = 0; h < f->n_hops; h++) {
    int32_t l = f->hops[h].link;
    if (l < 0 || (size_t)l >= net->n_links || f->hops[h].weight < 1)
      return HS_EINVAL;
    const hs__link_t *lk = &net->lk[l];
    constrained |= lk->finite;
    full |= lk->n == lk->cap;
  }
  hs_engine_t *eng = net->eng;
  bool joins = constrained && f->bytes >= HS_NET_EPS_BYTES;

  /* Reserve everything first: nothing below can fail once state changes. */
  HS_CHECK(hs_reserve((void **)&net->active, &net->cap_active, net->n_active + 1,
                      sizeof *net->active));
  if (joins) {
    HS_CHECK(reserve_update(net, net->n_active + 1, net->active_hops + (size_t)f->n_hops));
    for (int32_t h = 0; full && h < f->n_hops; h++) {
      hs__link_t *lk = &net->lk[f->hops[h].link];
      if (lk->n == lk->cap)
        HS_CHECK(grow_members(lk));
    }
    pos = hs__pool_alloc(&net->pool, (size_t)f->n_hops * sizeof *pos);
    if (!pos)
      return HS_ENOMEM;
  }
  hs_event_init(&f->ev, flow_complete);
  if (joins) {
    if (!hs_event_pending(&net->upd_ev))
      st = hs_engine_schedule(eng, &net->upd_ev, eng->now, HS_NET_PRIO_RATES);
  } else {
    st = hs_engine_schedule(eng, &f->ev, eng->now, HS_NET_PRIO_FLOW);
  }
  if (st != HS_OK) {
    hs__pool_release(&net->pool, pos);
    return st;
  }

  f->net = net;
  f->t_start = eng->now;
  f->t_end = 0;
  f->remaining = f->bytes;
  f->rate_Bps = 0.0;
  f->t_last = eng->now;
  f->mark = 0;
  f->pos = pos;
  f->slot = (int32_t)net->n_active;
  net->active[net->n_active++] = f;
  if (!joins)
    return HS_OK;
  bool marked = false; /* its first constrained link is (see the file header) */
  for (int32_t h = 0; h < f->n_hops; h++) {
    int32_t l = f->hops[h].link;
    hs__link_t *lk = &net->lk[l];
    if (lk->n == 0)
      lk->busy_since = eng->now;
    *hs__link_member(lk, lk->n) = (hs__member_t){f, h};
    pos[h] = lk->n++;
    lk->used = true;
    if (lk->n > 1 && lk->n > net->stats[l].max_flows)
      net->stats[l].max_flows = lk->n;
    if (!marked && lk->finite) {
      mark_dirty(net, l);
      marked = true;
    }
  }
  net->active_hops += (size_t)f->n_hops;
cleanup:
  return st;
}

/* Counts f's bytes on its links and takes it off them (swap-remove),
 * marking them dirty. O(hops). */
static void leave_links(hs_net_t *net, hs_flow_t *f)
{
  hs_time_t now = net->eng->now;
  for (int32_t h = 0; h < f->n_hops; h++) {
    int32_t l = f->hops[h].link;
    net->stats[l].bytes += f->bytes * (double)f->hops[h].weight;
    hs__link_t *lk = &net->lk[l];
    int32_t i = f->pos[h];
    lk->n--;
    if (i != lk->n) {
      hs__member_t *mi = hs__link_member(lk, i);
      *mi = *hs__link_member(lk, lk->n);
      mi->f->pos[mi->hop] = i;
    }
    if (lk->n == 0)
      net->stats[l].busy_ns += now - lk->busy_since;
    mark_dirty(net, l);
  }
  net->active_hops -= (size_t)f->n_hops;
  hs__pool_release(&net->pool, f->pos);
  f->pos = NULL;
}

static void flow_complete(hs_engine_t *eng, hs_event_t *ev)
{
  hs_flow_t *f = HS_CONTAINER_OF(ev, hs_flow_t, ev);
  hs_net_t *net = f->net;
  if (f->pos)
    leave_links(net, f);
  else
    for (int32_t h = 0; h < f->n_hops; h++)
      net->stats[f->hops[h].link].bytes += f->bytes * (double)f->hops[h].weight;
  size_t s = (size_t)f->slot;
  net->active[s] = net->active[--net->n_active];
  net->active[s]->slot = (int32_t)s;
  f->slot = -1;
  f->t_end = eng->now;
  f->remaining = 0.0;
  f->rate_Bps = 0.0;
  if (net->n_dirty && !hs_event_pending(&net->upd_ev))
    hs_engine_fail(eng, hs_engine_schedule(eng, &net->upd_ev, eng->now, HS_NET_PRIO_RATES));
  if (net->observer)
    net->observer(net->observer_ctx, f);
  if (f->done)
    f->done(net, f);
}

void hs_net_set_observer(hs_net_t *net, hs_net_observer_fn fn, void *ctx)
{
  net->observer = fn;
  net->observer_ctx = ctx;
}

/* Gives f the rate r (bytes/s) from now on: its progress at the old rate is
 * booked and its completion rescheduled, rounded once; a flow whose rate did
 * not change keeps its queued completion. O(log events). */
static hs_status_t set_rate(hs_net_t *net, hs_flow_t *f, double r)
{
  if (r == f->rate_Bps && hs_event_pending(&f->ev))
    return HS_OK;
  hs_engine_t *eng = net->eng;
  hs_time_t now = eng->now;
  if (now > f->t_last)
    f->remaining -= f->rate_Bps * hs_time_to_s(now - f->t_last);
  f->t_last = now;
  f->rate_Bps = r;
  hs_time_t dt = f->remaining < HS_NET_EPS_BYTES ? 0 : hs_time_from_s(f->remaining / r);
  hs_time_t at = dt > HS_TIME_MAX - now ? HS_TIME_MAX : now + dt;
  return hs_engine_schedule(eng, &f->ev, at, HS_NET_PRIO_FLOW);
}

/* The common component of one flow alone on every constrained link it
 * crosses (a collective's flow over its node's ports): its rate is its
 * tightest cap / weight, as hs_maxmin_solve gives a single flow, with no
 * component layout and no solver call. Returns false, touching nothing,
 * when another flow shares one of f's constrained links. Else marks f's
 * constrained links with `epoch` (solved) and sets the rate. O(hops). */
static bool solve_alone(hs_net_t *net, hs_flow_t *f, uint64_t epoch, hs_status_t *st)
{
  hs__link_t *lks = net->lk;
  double r = INFINITY;
  for (int32_t h = 0; h < f->n_hops; h++) {
    const hs__link_t *lk = &lks[f->hops[h].link];
    if (!lk->finite)
      continue;
    if (lk->n != 1)
      return false;
    double cap = lk->cap_Bps, lv = cap / (double)f->hops[h].weight;
    if (cap > 0.0 && cap < INFINITY && lv < r)
      r = lv;
  }
  f->mark = epoch;
  for (int32_t h = 0; h < f->n_hops; h++)
    lks[f->hops[h].link].mark = epoch;
  net->n_updates++;
  *st = set_rate(net, f, r);
  return true;
}

/* Of f's constrained links that carry f alone, the first of the tightest
 * (lowest cap / weight); -1 when there is none. Such a link's level stays
 * cap / weight while f is unfrozen, so only this one can be where f
 * freezes: the others would be picked only after it (higher level, or
 * the same level and a later index, since f's own links are found in hop
 * order), when f is frozen and they carry nothing. The component leaves
 * them out, which gives the solver the same picks and the same arithmetic
 * on the links it keeps (and fewer links: in the 48-GPU compare about two
 * of every three links of a component carried one flow). O(hops). */
static int32_t tightest_private_hop(const hs__link_t *lks, const hs_flow_t *f)
{
  int32_t best = -1;
  double best_level = INFINITY;
  for (int32_t h = 0; h < f->n_hops; h++) {
    const hs__link_t *lk = &lks[f->hops[h].link];
    if (!lk->finite || lk->n != 1)
      continue;
    double lv = lk->cap_Bps / (double)f->hops[h].weight;
    if (best < 0 || lv < best_level) {
      best = h;
      best_level = lv;
    }
  }
  return best;
}

/* Re-solves one component: the flows connected to comp_links[0..nl) (the
 * seed, marked) through constrained links. O(flows + hops + links of the
 * component) plus the solve. */
static hs_status_t solve_component(hs_net_t *net, uint64_t epoch, size_t nl)
{
  hs__link_t *lks = net->lk;
  size_t nf = 0;
  hs_status_t st = HS_OK;
  const hs__link_t *seed = &lks[net->comp_links[0]];
  if (nl == 1 && seed->n == 1 && solve_alone(net, seed->m0.f, epoch, &st))
    return st;
  for (size_t q = 0; q < nl; q++) {
    hs__link_t *lk = &lks[net->comp_links[q]];
    for (int32_t i = 0; i < lk->n; i++) {
      hs_flow_t *f = hs__link_member(lk, i)->f;
      if (f->mark == epoch)
        continue;
      f->mark = epoch;
      net->comp_flows[nf++] = f;
      /* with 2 hops or fewer, a flow in a component of several has at most
       * one link of its own: nothing to leave out, and no pass to pay */
      int32_t keep = f->n_hops > 2 ? tightest_private_hop(lks, f) : -1;
      for (int32_t h = 0; h < f->n_hops; h++) {
        int32_t l2 = f->hops[h].link;
        if (lks[l2].finite && lks[l2].mark != epoch) {
          lks[l2].mark = epoch;
          if (keep >= 0 && h != keep && lks[l2].n == 1) {
            lks[l2].local = -1; /* f's alone, and never its bottleneck */
            continue;
          }
          lks[l2].local = (int32_t)nl;
          net->comp_links[nl++] = l2;
        }
      }
    }
  }
  if (nf == 0)
    return HS_OK;
  size_t k = 0;
  for (size_t i = 0; i < nf; i++) {
    const hs_flow_t *f = net->comp_flows[i];
    net->csr_off[i] = (int32_t)k;
    for (int32_t h = 0; h < f->n_hops; h++) {
      const hs__link_t *lk = &lks[f->hops[h].link];
      if (lk->local >= 0) /* finite and in the component (see solve_component's search) */
        net->csr_hops[k++] = (hs_flow_hop_t){lk->local, f->hops[h].weight};
    }
  }
  net->csr_off[nf] = (int32_t)k;
  for (size_t i = 0; i < nl; i++)
    net->csr_cap[i] = lks[net->comp_links[i]].cap_Bps;
  st = hs_maxmin_solve(&net->mm, (int32_t)nf, net->csr_off, net->csr_hops,
                                   (int32_t)nl, net->csr_cap, net->rates);
  if (st != HS_OK)
    return st;
  net->n_updates++;
  for (size_t i = 0; i < nf; i++)
    if ((st = set_rate(net, net->comp_flows[i], net->rates[i])) != HS_OK)
      return st;
  return HS_OK;
}

/* The rate update of one instant: max-min over each component touched by
 * the dirty links, one component at a time (solving several independent
 * components together gives the same rates at a superlinear cost). */
static void rates_update(hs_engine_t *eng, hs_event_t *ev)
{
  hs_net_t *net = HS_CONTAINER_OF(ev, hs_net_t, upd_ev);
  uint64_t epoch = ++net->epoch;
  hs__link_t *lks = net->lk;
  for (size_t i = 0; i < net->n_dirty; i++) {
    int32_t l = net->dirty[i];
    lks[l].dirty = false;
    if (lks[l].n == 0 || lks[l].mark == epoch)
      continue;
    lks[l].mark = epoch;
    lks[l].local = 0;
    net->comp_links[0] = l;
    hs_status_t st = solve_component(net, epoch, 1);
    if (st != HS_OK) {
      for (size_t j = i + 1; j < net->n_dirty; j++)
        lks[net->dirty[j]].dirty = false;
      net->n_dirty = 0;
      hs_engine_fail(eng, st);
      return;
    }
  }
  net->n_dirty = 0;
}
