/*
 * test_net_flows.c - flows on the network through the engine: completion
 * times computed by hand from the max-min definition (fair sharing, a flow
 * bottlenecked elsewhere, weights, staggered arrivals), zero-byte and
 * unconstrained flows, counters, batching of simultaneous changes,
 * determinism, and a randomized comparison with an exact fluid simulation
 * written here (naive max-min, event by event, in double seconds).
 */
#include "hs_net.h"
#include "hs_test.h"

#include <stdint.h>

#define GB 1e9
#define NS 1e9

static hs_link_t mk_link(double GBps)
{
  hs_link_t l;
  memset(&l, 0, sizeof l);
  l.GBps = GBps;
  return l;
}

typedef struct tflow {
  hs_flow_t f;
  hs_flow_hop_t hops[8];
  hs_event_t start_ev;   /* delayed start */
  hs_net_t *net;
  int done_calls;
  bool in_start;         /* set around hs_net_flow_start: done must not run then */
  bool reentrant;
} tflow_t;

static void on_done(hs_net_t *net, hs_flow_t *f)
{
  tflow_t *t = f->ctx;
  t->done_calls++;
  if (t->in_start)
    t->reentrant = true;
}

static void tflow_set(tflow_t *t, hs_net_t *net, double bytes, int n, const int32_t *links,
                      const int32_t *weights)
{
  memset(t, 0, sizeof *t);
  hs_flow_init(&t->f);
  for (int i = 0; i < n; i++)
    t->hops[i] = (hs_flow_hop_t){links[i], weights ? weights[i] : 1};
  t->f.bytes = bytes;
  t->f.hops = t->hops;
  t->f.n_hops = n;
  t->f.done = on_done;
  t->f.ctx = t;
  t->net = net;
}

static void start_now(tflow_t *t)
{
  t->in_start = true;
  CHECK(hs_net_flow_start(t->net, &t->f) == HS_OK);
  t->in_start = false;
}

static void delayed_start(hs_engine_t *eng, hs_event_t *ev)
{
  start_now(HS_CONTAINER_OF(ev, tflow_t, start_ev));
}

static void start_at(hs_engine_t *eng, tflow_t *t, hs_time_t at)
{
  hs_event_init(&t->start_ev, delayed_start);
  hs_engine_schedule(eng, &t->start_ev, at, -1);
}

/* |t_end - expected seconds| <= 1 ns (each completion is rounded once). */
#define CHECK_T(flow, secs) CHECK_MSG(llabs((flow).f.t_end - llround((secs) * NS)) <= 1, \
                                      "t_end %lld ns, want %.3f ns", (long long)(flow).f.t_end, \
                                      (secs) * NS)

static void test_fair_share(void)
{
  /* k flows of S bytes on one link of B: each gets B/k, all end at k S / B */
  for (int k = 1; k <= 16; k *= 2) {
    hs_engine_t eng;
    hs_engine_init(&eng, NULL);
    hs_link_t l = mk_link(100);
    hs_net_t *net = NULL;
    CHECK(hs_net_new_links(&eng, &l, 1, &net) == HS_OK);
    tflow_t *t = calloc((size_t)k, sizeof *t);
    int32_t link0 = 0;
    double S = 3e9;
    for (int i = 0; i < k; i++) {
      tflow_set(&t[i], net, S, 1, &link0, NULL);
      start_now(&t[i]);
    }
    CHECK_EQ_INT(hs_net_active_flows(net), k);
    CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
    for (int i = 0; i < k; i++) {
      CHECK_T(t[i], k * S / (100 * GB));
      CHECK_EQ_INT(t[i].done_calls, 1);
      CHECK(!t[i].reentrant);
    }
    CHECK_EQ_INT(hs_net_active_flows(net), 0);
    CHECK_EQ_INT(hs_net_rate_updates(net), 1); /* k starts at one instant: one update */
    const hs_link_stats_t *st = hs_net_link_stats(net);
    CHECK_REL(st[0].bytes, k * S, 1e-12);
    CHECK_EQ_INT(st[0].max_flows, k);
    CHECK(llabs(st[0].busy_ns - llround(k * S / (100 * GB) * NS)) <= 1);
    free(t);
    hs_net_free(net);
    hs_engine_destroy(&eng);
  }
}

static void test_bottleneck_elsewhere(void)
{
  /* L0 = 10 GB/s, L1 = 4 GB/s. A (16 GB) on L0, B (4 GB) on L0+L1, C (2 GB)
   * on L1. Rates A 8, B 2, C 2 (L1 saturates first at 2; A takes the rest of
   * L0). C ends at 1 s. Then B is alone on L1 (level 4) and shares L0 with A
   * (level 5): B 4, A 6. B has 2 GB left: ends at 1.5 s. A has 16-8-3 = 5 GB
   * left at 1.5 s, alone at 10: ends at 2.0 s. */
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_link_t l[2] = {mk_link(10), mk_link(4)};
  hs_net_t *net = NULL;
  CHECK(hs_net_new_links(&eng, l, 2, &net) == HS_OK);
  tflow_t a, b, c;
  int32_t la[] = {0}, lb[] = {0, 1}, lc[] = {1};
  tflow_set(&a, net, 16 * GB, 1, la, NULL);
  tflow_set(&b, net, 4 * GB, 2, lb, NULL);
  tflow_set(&c, net, 2 * GB, 1, lc, NULL);
  start_now(&a);
  start_now(&b);
  start_now(&c);
  CHECK(hs_engine_run(&eng, 1) == HS_OK); /* rates are set by the update at t = 0 */
  CHECK_REL(a.f.rate_Bps, 8 * GB, 1e-12);
  CHECK_REL(b.f.rate_Bps, 2 * GB, 1e-12);
  CHECK_REL(c.f.rate_Bps, 2 * GB, 1e-12);
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  CHECK_T(c, 1.0);
  CHECK_T(b, 1.5);
  CHECK_T(a, 2.0);
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

static void test_weighted(void)
{
  /* One link of 10 GB/s. X uses it with weight 2, Y with weight 1: equal
   * rates r with 2r + r = 10. Y (5 GB) ends at 1.5 s; X (10 GB) has 5 GB
   * left, alone: 2r = 10, r = 5: ends at 2.5 s. */
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_link_t l = mk_link(10);
  hs_net_t *net = NULL;
  CHECK(hs_net_new_links(&eng, &l, 1, &net) == HS_OK);
  tflow_t x, y;
  int32_t l0 = 0, w2 = 2;
  tflow_set(&x, net, 10 * GB, 1, &l0, &w2);
  tflow_set(&y, net, 5 * GB, 1, &l0, NULL);
  start_now(&x);
  start_now(&y);
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  CHECK_T(y, 1.5);
  CHECK_T(x, 2.5);
  CHECK_REL(hs_net_link_stats(net)[0].bytes, 2 * 10 * GB + 5 * GB, 1e-12);
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

static void test_staggered(void)
{
  /* One link of 10 GB/s. A (10 GB) at 0; B (3 GB) at 0.5 s. A has 5 GB left
   * at 0.5 s; both at 5: B ends at 1.1 s; A has 2 GB left, alone at 10: ends
   * at 1.3 s. C (1 GB) at 1.3 s exactly when A ends: alone, ends at 1.4 s. */
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_link_t l = mk_link(10);
  hs_net_t *net = NULL;
  CHECK(hs_net_new_links(&eng, &l, 1, &net) == HS_OK);
  tflow_t a, b, c;
  int32_t l0 = 0;
  tflow_set(&a, net, 10 * GB, 1, &l0, NULL);
  tflow_set(&b, net, 3 * GB, 1, &l0, NULL);
  tflow_set(&c, net, 1 * GB, 1, &l0, NULL);
  start_now(&a);
  start_at(&eng, &b, llround(0.5 * NS));
  start_at(&eng, &c, llround(1.3 * NS));
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  CHECK_T(a, 1.3);
  CHECK_T(b, 1.1);
  CHECK_T(c, 1.4);
  CHECK_EQ_INT(b.f.t_start, llround(0.5 * NS));
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

static void test_zero_and_unconstrained(void)
{
  /* links: 0 finite 10 GB/s, 1 GBps 0, 2 GBps +inf (both unconstrained) */
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_link_t l[3] = {mk_link(10), mk_link(0), mk_link(INFINITY)};
  hs_net_t *net = NULL;
  CHECK(hs_net_new_links(&eng, l, 3, &net) == HS_OK);
  tflow_t z, nohop, free_, mixed;
  int32_t lz[] = {0}, lf[] = {1, 2}, lm[] = {0, 1, 2};
  hs_engine_run(&eng, 1000); /* now = 1000 */
  tflow_set(&z, net, 0, 1, lz, NULL);
  tflow_set(&nohop, net, 5 * GB, 0, NULL, NULL);
  tflow_set(&free_, net, 5 * GB, 2, lf, NULL);
  tflow_set(&mixed, net, 5 * GB, 3, lm, NULL);
  start_now(&z);
  start_now(&nohop);
  start_now(&free_);
  start_now(&mixed);
  CHECK_EQ_INT(z.done_calls, 0); /* never re-entrantly */
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  CHECK_EQ_INT(z.done_calls, 1);
  CHECK_EQ_INT(z.f.t_end, 1000);
  CHECK_EQ_INT(nohop.f.t_end, 1000);
  CHECK_EQ_INT(free_.f.t_end, 1000);
  CHECK_EQ_INT(mixed.f.t_end, 1000 + llround(0.5 * NS));
  const hs_link_stats_t *st = hs_net_link_stats(net);
  CHECK_REL(st[1].bytes, 10 * GB, 1e-12); /* free_ and mixed */
  CHECK_EQ_INT(st[1].max_flows, 1);       /* only mixed sat on it */
  CHECK_EQ_INT(st[2].busy_ns, llround(0.5 * NS));
  /* bad input leaves nothing started */
  tflow_t bad;
  int32_t lbad[] = {7};
  tflow_set(&bad, net, 1, 1, lbad, NULL);
  CHECK(hs_net_flow_start(net, &bad.f) == HS_EINVAL);
  int32_t w0 = 0;
  tflow_set(&bad, net, 1, 1, lz, &w0);
  CHECK(hs_net_flow_start(net, &bad.f) == HS_EINVAL);
  tflow_set(&bad, net, NAN, 1, lz, NULL);
  CHECK(hs_net_flow_start(net, &bad.f) == HS_EINVAL);
  tflow_set(&bad, net, -1, 1, lz, NULL);
  CHECK(hs_net_flow_start(net, &bad.f) == HS_EINVAL);
  CHECK_EQ_INT(hs_net_active_flows(net), 0);
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

/* A flow restarted from its own done callback, 100 times: back-to-back. */
static int chain_left;
static void chain_done(hs_net_t *net, hs_flow_t *f)
{
  if (--chain_left > 0)
    CHECK(hs_net_flow_start(net, f) == HS_OK);
}

static void test_restart_from_done(void)
{
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_link_t l = mk_link(1);
  hs_net_t *net = NULL;
  CHECK(hs_net_new_links(&eng, &l, 1, &net) == HS_OK);
  hs_flow_t f;
  hs_flow_hop_t hop = {0, 1};
  hs_flow_init(&f);
  f.bytes = 1e6; /* 1 ms at 1 GB/s */
  f.hops = &hop;
  f.n_hops = 1;
  f.done = chain_done;
  chain_left = 100;
  CHECK(hs_net_flow_start(net, &f) == HS_OK);
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  CHECK_EQ_INT(chain_left, 0);
  CHECK_EQ_INT(eng.now, 100 * 1000000LL);
  CHECK_EQ_INT(hs_net_link_stats(net)[0].busy_ns, 100 * 1000000LL);
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

/* ---- randomized: the network against an exact fluid simulation ------------ */

static uint64_t rnd(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

#define RF 300
#define RL 12
#define PF 40                 /* flows of the private-link scenarios */
#define RLMAX (RL + 2 * PF)
#define MAXH 5                /* hops of a flow: up to 3 shared + 2 own */

typedef struct scen {
  int n_flows, n_links;
  double cap_GBps[RLMAX];
  double bytes[RF];
  double t0[RF];        /* arrival, seconds (whole ns) */
  int nh[RF];
  int32_t link[RF][MAXH], w[RF][MAXH];
} scen_t;

static void scen_make(scen_t *s, uint64_t seed)
{
  s->n_flows = RF;
  s->n_links = RL;
  for (int l = 0; l < RL; l++)
    s->cap_GBps[l] = (double)(1 + rnd(&seed) % 20);
  for (int f = 0; f < RF; f++) {
    s->bytes[f] = rnd(&seed) % 7 == 0 ? 0 : (double)(1 + rnd(&seed) % 1000) * 1e6;
    s->t0[f] = (double)(rnd(&seed) % 200) * 1e-3;
    s->nh[f] = 0;
    int want = 1 + (int)(rnd(&seed) % 3);
    for (int h = 0; h < want; h++) {
      int32_t l = (int32_t)(rnd(&seed) % RL);
      bool dup = false;
      for (int q = 0; q < s->nh[f]; q++)
        dup |= s->link[f][q] == l;
      if (!dup) {
        s->link[f][s->nh[f]] = l;
        s->w[f][s->nh[f]++] = 1 + (int32_t)(rnd(&seed) % 2);
      }
    }
  }
}

/* As a collective's flows on a node's ports: PF flows, each on two links
 * of its own (capacities 4-6 GB/s, so often tied with each other and with
 * the shared ones) placed before, between or after 0-3 of RL shared links
 * (capacities 2-20 GB/s), weights 1-2. The network leaves a flow's
 * untightest own links out of its components; the fluid reference keeps
 * every link. */
static void scen_make_private(scen_t *s, uint64_t seed)
{
  s->n_flows = PF;
  s->n_links = RL + 2 * PF;
  for (int l = 0; l < RL; l++)
    s->cap_GBps[l] = (double)(2 + rnd(&seed) % 19);
  for (int l = RL; l < s->n_links; l++)
    s->cap_GBps[l] = (double)(4 + rnd(&seed) % 3);
  for (int f = 0; f < PF; f++) {
    s->bytes[f] = (double)(1 + rnd(&seed) % 1000) * 1e6;
    s->t0[f] = (double)(rnd(&seed) % 100) * 1e-3;
    int32_t hops[MAXH];
    int n = 0, shared = (int)(rnd(&seed) % 4);
    for (int h = 0; h < shared; h++) {
      int32_t l = (int32_t)(rnd(&seed) % RL);
      bool dup = false;
      for (int q = 0; q < n; q++)
        dup |= hops[q] == l;
      if (!dup)
        hops[n++] = l;
    }
    for (int p = 0; p < 2; p++) { /* own link p at a random place */
      int at = (int)(rnd(&seed) % (uint64_t)(n + 1));
      memmove(hops + at + 1, hops + at, (size_t)(n - at) * sizeof *hops);
      hops[at] = RL + 2 * f + p;
      n++;
    }
    s->nh[f] = n;
    for (int h = 0; h < n; h++) {
      s->link[f][h] = hops[h];
      s->w[f][h] = 1 + (int32_t)(rnd(&seed) % 2);
    }
  }
}

/* Exact fluid model: rates from the definition, recomputed at every arrival
 * and completion; completion times in double seconds. */
static void scen_reference(const scen_t *s, double *t_end)
{
  double rem[RF], rate[RF];
  bool started[RF] = {0}, done[RF] = {0};
  double t = 0;
  for (;;) {
    /* arrivals due */
    for (int f = 0; f < s->n_flows; f++)
      if (!started[f] && s->t0[f] <= t) {
        started[f] = true;
        rem[f] = s->bytes[f];
        if (rem[f] == 0) {
          done[f] = true;
          t_end[f] = t;
        }
      }
    /* rates: progressive filling over active flows */
    bool frozen[RF];
    int n_active = 0;
    for (int f = 0; f < s->n_flows; f++) {
      frozen[f] = !(started[f] && !done[f]);
      n_active += !frozen[f];
      rate[f] = 0;
    }
    for (;;) {
      int best = -1;
      double best_level = INFINITY;
      for (int l = 0; l < s->n_links; l++) {
        double used = 0, wu = 0;
        for (int f = 0; f < s->n_flows; f++) {
          if (!started[f] || done[f])
            continue;
          for (int h = 0; h < s->nh[f]; h++)
            if (s->link[f][h] == l) {
              if (frozen[f])
                used += s->w[f][h] * rate[f];
              else
                wu += s->w[f][h];
            }
        }
        if (wu > 0 && (s->cap_GBps[l] * GB - used) / wu < best_level) {
          best_level = fmax(s->cap_GBps[l] * GB - used, 0) / wu;
          best = l;
        }
      }
      if (best < 0)
        break;
      for (int f = 0; f < s->n_flows; f++)
        if (!frozen[f])
          for (int h = 0; h < s->nh[f]; h++)
            if (s->link[f][h] == best) {
              frozen[f] = true;
              rate[f] = best_level;
            }
    }
    double next = INFINITY;
    for (int f = 0; f < s->n_flows; f++) {
      if (!started[f])
        next = fmin(next, s->t0[f]);
      else if (!done[f])
        next = fmin(next, t + rem[f] / rate[f]);
    }
    if (next == INFINITY)
      break;
    for (int f = 0; f < s->n_flows; f++)
      if (started[f] && !done[f]) {
        if (t + rem[f] / rate[f] <= next) {
          done[f] = true;
          t_end[f] = next;
        } else {
          rem[f] -= rate[f] * (next - t);
        }
      }
    t = next;
    (void)n_active;
  }
}

static void scen_run(const scen_t *s, hs_time_t *t_end, uint64_t *updates)
{
  hs_engine_t eng;
  hs_engine_init(&eng, NULL);
  hs_link_t l[RLMAX];
  for (int i = 0; i < s->n_links; i++)
    l[i] = mk_link(s->cap_GBps[i]);
  hs_net_t *net = NULL;
  CHECK(hs_net_new_links(&eng, l, (size_t)s->n_links, &net) == HS_OK);
  tflow_t *t = calloc((size_t)s->n_flows, sizeof *t);
  for (int f = 0; f < s->n_flows; f++) {
    tflow_set(&t[f], net, s->bytes[f], s->nh[f], s->link[f], s->w[f]);
    start_at(&eng, &t[f], llround(s->t0[f] * NS));
  }
  CHECK(hs_engine_run(&eng, HS_TIME_MAX) == HS_OK);
  for (int f = 0; f < s->n_flows; f++) {
    t_end[f] = t[f].f.t_end;
    CHECK_EQ_INT(t[f].done_calls, 1);
  }
  CHECK_EQ_INT(hs_net_active_flows(net), 0);
  *updates = hs_net_rate_updates(net);
  free(t);
  hs_net_free(net);
  hs_engine_destroy(&eng);
}

static void check_vs_fluid(void (*make)(scen_t *, uint64_t), const char *what)
{
  for (uint64_t seed = 1; seed <= 3; seed++) {
    scen_t *s = calloc(1, sizeof *s);
    make(s, seed);
    double ref[RF];
    hs_time_t got[RF], again[RF];
    uint64_t u1 = 0, u2 = 0;
    scen_reference(s, ref);
    scen_run(s, got, &u1);
    scen_run(s, again, &u2);
    int off = 0;
    double worst = 0;
    for (int f = 0; f < s->n_flows; f++) {
      double err = fabs((double)got[f] - ref[f] * NS);
      worst = fmax(worst, err);
      off += err > 20; /* rounding accumulates over a few hundred events */
    }
    CHECK_MSG(off == 0, "%s seed %llu: %d flows off the fluid reference (worst %.1f ns)", what,
              (unsigned long long)seed, off, worst);
    CHECK(memcmp(got, again, (size_t)s->n_flows * sizeof *got) == 0); /* determinism, bit for bit */
    CHECK_EQ_INT(u1, u2);
    free(s);
  }
}

static void test_random_vs_fluid(void) { check_vs_fluid(scen_make, "shared links"); }

static void test_private_links_vs_fluid(void) { check_vs_fluid(scen_make_private, "own links"); }

int main(void)
{
  HS_RUN(test_fair_share);
  HS_RUN(test_bottleneck_elsewhere);
  HS_RUN(test_weighted);
  HS_RUN(test_staggered);
  HS_RUN(test_zero_and_unconstrained);
  HS_RUN(test_restart_from_done);
  HS_RUN(test_random_vs_fluid);
  HS_RUN(test_private_links_vs_fluid);
  HS_TEST_END();
}
