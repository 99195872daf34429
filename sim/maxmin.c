/*
 * maxmin.c - weighted max-min fair rates by progressive filling.
 *
 * Problem: flows f with hops (link l, integer weight w); a link of capacity
 * C_l (bytes/s) admits sum_f w_fl * r_f <= C_l. Max-min fairness: no rate can
 * grow without shrinking a rate that is not larger. Progressive filling
 * raises every unfrozen rate together; the first link to saturate is the one
 * with the lowest level rem_l / W_l (rem_l: capacity left after frozen flows,
 * W_l: weight sum of unfrozen flows on l); its unfrozen flows freeze at that
 * level, their consumption leaves every other link they cross, and the
 * filling goes on. A flow bottlenecked elsewhere thus leaves its share to
 * the others. Flows with no constrained link get +inf.
 *
 * Levels never decrease from one round to the next (freezing a flow at the
 * current minimum level cannot lower another link's level), so a lazy heap
 * of links keyed by level works: a stale entry is re-pushed when popped. The
 * level sequence is also clamped to be non-decreasing, which keeps rounding
 * from producing a rate below an earlier bottleneck's (or a zero rate).
 *
 * Cost: O(H + L) to set up plus, per round, a scan of the live links
 * (problems of at most SCAN_MAX links or SCAN_FLOWS_MAX flows, hence few
 * rounds: the common case) or O(log L) heap work per level change (larger
 * ones, the heap built bottom-up in O(L)): O(H + L log L) overall, H =
 * hops. Both stop once every flow with a constrained link is frozen: the
 * links left then carry none (a collective's component has many links and
 * few bottlenecks, so most of them are never popped). SCAN_MAX was 32 until
 * 2026-12-04: at 128, simulating the 48-GPU compare benchmark's autohet
 * plan took 675M -> 630M instructions and its hapt plan 342M -> 323M
 * (callgrind; the rates the same bit for bit), since the heap popped most
 * of its links anyway (43 pops for 57 links a solve).
 * Workspace is kept between solves; a solve allocates only when a problem
 * is larger than every one before.
 */
#include "hs_net.h"

#include <math.h>
#include <string.h>

#define SCAN_MAX 128
#define SCAN_FLOWS_MAX 8

void hs_maxmin_init(hs_maxmin_t *mm) { memset(mm, 0, sizeof *mm); }

void hs_maxmin_destroy(hs_maxmin_t *mm)
{
  if (!mm)
    return;
  hs_free(mm->rem);
  hs_free(mm->wsum);
  hs_free(mm->loff);
  hs_free(mm->act);
  hs_free(mm->heap);
  hs_free(mm->lflow);
  hs_free(mm->frozen);
  memset(mm, 0, sizeof *mm);
}

hs_status_t hs_maxmin_reserve(hs_maxmin_t *mm, size_t n_flows, size_t n_links, size_t n_hops)
{
  hs_status_t st = HS_OK;
  if (n_links > mm->cap_links) {
    size_t c = mm->cap_links, c2 = mm->cap_links, c3 = mm->cap_links, c4 = mm->cap_links,
           c5 = mm->cap_links;
    HS_CHECK(hs_reserve((void **)&mm->rem, &c, n_links, sizeof *mm->rem));
    HS_CHECK(hs_reserve((void **)&mm->wsum, &c2, n_links, sizeof *mm->wsum));
    HS_CHECK(hs_reserve((void **)&mm->loff, &c3, n_links + 1, sizeof *mm->loff));
    HS_CHECK(hs_reserve((void **)&mm->act, &c4, n_links, sizeof *mm->act));
    /* lazy heap: at most one live entry per link plus one re-push per round */
    HS_CHECK(hs_reserve((void **)&mm->heap, &c5, 2 * n_links, sizeof *mm->heap));
    mm->cap_links = n_links;
  }
  if (n_flows > mm->cap_flows) {
    size_t c = mm->cap_flows;
    HS_CHECK(hs_reserve((void **)&mm->frozen, &c, n_flows, sizeof *mm->frozen));
    mm->cap_flows = n_flows;
  }
  if (n_hops > mm->cap_hops) {
    size_t c = mm->cap_hops;
    HS_CHECK(hs_reserve((void **)&mm->lflow, &c, n_hops, sizeof *mm->lflow));
    mm->cap_hops = n_hops;
  }
cleanup:
  return st;
}

static inline bool constrained(double cap) { return cap > 0.0 && cap < INFINITY; }

/* (level, link) ordering of the lazy heap: ties go to the lower link index,
 * as in the scan, so both paths pick the same bottleneck. */
static inline bool entry_less(const hs_maxmin_entry_t *a, const hs_maxmin_entry_t *b)
{
  return a->level < b->level || (a->level == b->level && a->link < b->link);
}

static void heap_push(hs_maxmin_entry_t *h, size_t *n, double level, int32_t link)
{
  size_t i = (*n)++;
  hs_maxmin_entry_t e = {level, link};
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!entry_less(&e, &h[p]))
      break;
    h[i] = h[p];
    i = p;
  }
  h[i] = e;
}

/* Sifts h[i] down in a heap of n entries. */
static void sift_down(hs_maxmin_entry_t *h, size_t n, size_t i)
{
  hs_maxmin_entry_t e = h[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && entry_less(&h[c + 1], &h[c]))
      c++;
    if (!entry_less(&h[c], &e))
      break;
    h[i] = h[c];
    i = c;
  }
  h[i] = e;
}

static hs_maxmin_entry_t heap_pop(hs_maxmin_entry_t *h, size_t *n)
{
  hs_maxmin_entry_t top = h[0];
  if (--*n > 0) {
    h[0] = h[*n];
    sift_down(h, *n, 0);
  }
  return top;
}

/* Freezes the unfrozen flows of link l at `level`; returns how many. */
static int32_t freeze_link(hs_maxmin_t *mm, int32_t l, double level, const int32_t *flow_off,
                           const hs_flow_hop_t *hops, const double *cap, double *rate)
{
  int32_t n = 0;
  for (int32_t k = mm->loff[l]; k < mm->loff[l + 1]; k++) {
    int32_t f = mm->lflow[k];
    if (mm->frozen[f])
      continue;
    mm->frozen[f] = 1;
    rate[f] = level;
    n++;
    for (int32_t h = flow_off[f]; h < flow_off[f + 1]; h++) {
      int32_t l2 = hops[h].link;
      if (!constrained(cap[l2]))
        continue;
      mm->rem[l2] -= (double)hops[h].weight * level;
      mm->wsum[l2] -= hops[h].weight;
    }
  }
  return n;
}

static inline double level_of(const hs_maxmin_t *mm, int32_t l)
{
  double r = mm->rem[l] > 0.0 ? mm->rem[l] : 0.0;
  return r / (double)mm->wsum[l];
}

hs_status_t hs_maxmin_solve(hs_maxmin_t *mm, int32_t n_flows, const int32_t *flow_off,
                            const hs_flow_hop_t *hops, int32_t n_links, const double *cap,
                            double *rate)
{
  if (n_flows < 0 || n_links < 0 || (n_flows > 0 && (!flow_off || !rate)))
    return HS_EINVAL;
  if (n_flows == 0)
    return HS_OK;
  if (n_flows == 1) {
    /* alone: the tightest of its links, cap / weight */
    double r = INFINITY;
    for (int32_t h = flow_off[0]; h < flow_off[1]; h++) {
      int32_t l = hops[h].link;
      if (l < 0 || l >= n_links || hops[h].weight < 1)
        return HS_EINVAL;
      double lv = cap[l] / (double)hops[h].weight;
      if (constrained(cap[l]) && lv < r)
        r = lv;
    }
    rate[0] = r;
    return HS_OK;
  }
  int32_t n_hops = flow_off[n_flows];
  hs_status_t st = hs_maxmin_reserve(mm, (size_t)n_flows, (size_t)n_links, (size_t)n_hops);
  if (st != HS_OK)
    return st;
  for (int32_t l = 0; l < n_links; l++) {
    mm->rem[l] = cap[l];
    mm->wsum[l] = 0;
    mm->loff[l + 1] = 0;
  }
  mm->loff[0] = 0;
  int32_t unfrozen = 0; /* flows with a constrained link, not yet frozen */
  for (int32_t f = 0; f < n_flows; f++) {
    rate[f] = INFINITY;
    mm->frozen[f] = 0;
    if (flow_off[f + 1] < flow_off[f])
      return HS_EINVAL;
    bool bound = false;
    for (int32_t h = flow_off[f]; h < flow_off[f + 1]; h++) {
      int32_t l = hops[h].link;
      if (l < 0 || l >= n_links || hops[h].weight < 1)
        return HS_EINVAL;
      if (!constrained(cap[l]))
        continue;
      mm->wsum[l] += hops[h].weight;
      mm->loff[l + 1]++;
      bound = true;
    }
    unfrozen += bound;
  }
  /* link -> flows CSR (counting sort); act = links that carry a flow */
  int32_t n_act = 0;
  for (int32_t l = 0; l < n_links; l++) {
    if (mm->wsum[l] > 0)
      mm->act[n_act++] = l;
    mm->loff[l + 1] += mm->loff[l];
  }
  for (int32_t f = 0; f < n_flows; f++)
    for (int32_t h = flow_off[f]; h < flow_off[f + 1]; h++) {
      int32_t l = hops[h].link;
      if (constrained(cap[l]))
        mm->lflow[mm->loff[l]++] = f;
    }
  for (int32_t l = n_links; l > 0; l--)
    mm->loff[l] = mm->loff[l - 1];
  mm->loff[0] = 0;

  double floor_level = 0.0;
  /* each round freezes at least one flow: at most min(flows, links) rounds */
  if (n_act <= SCAN_MAX || n_flows <= SCAN_FLOWS_MAX) {
    while (n_act > 0 && unfrozen > 0) {
      int32_t best = -1;
      double best_level = INFINITY;
      int32_t w = 0;
      for (int32_t i = 0; i < n_act; i++) {
        int32_t l = mm->act[i];
        if (mm->wsum[l] <= 0)
          continue;
        mm->act[w++] = l;
        double lv = level_of(mm, l);
        if (best < 0 || lv < best_level || (lv == best_level && l < best)) {
          best = l;
          best_level = lv;
        }
      }
      n_act = w;
      if (best < 0)
        break;
      if (best_level < floor_level)
        best_level = floor_level;
      floor_level = best_level;
      unfrozen -= freeze_link(mm, best, best_level, flow_off, hops, cap, rate);
    }
  } else {
    /* the heap built bottom-up in O(links); once every flow is frozen the
     * entries left are links without unfrozen flows: done */
    size_t hn = (size_t)n_act;
    for (int32_t i = 0; i < n_act; i++)
      mm->heap[i] = (hs_maxmin_entry_t){level_of(mm, mm->act[i]), mm->act[i]};
    for (size_t i = hn / 2; i-- > 0;)
      sift_down(mm->heap, hn, i);
    while (hn > 0 && unfrozen > 0) {
      hs_maxmin_entry_t e = heap_pop(mm->heap, &hn);
      if (mm->wsum[e.link] <= 0)
        continue;
      double lv = level_of(mm, e.link);
      if (lv != e.level) {
        heap_push(mm->heap, &hn, lv, e.link);
        continue;
      }
      if (lv < floor_level)
        lv = floor_level;
      floor_level = lv;
      unfrozen -= freeze_link(mm, e.link, lv, flow_off, hops, cap, rate);
    }
  }
  return HS_OK;
}
