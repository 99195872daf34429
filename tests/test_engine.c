/*
 * test_engine.c - the event engine on every queue type: ordering by (time,
 * priority, sequence), run(until), the stop flag, cancel/reschedule, and a
 * differential test: random schedule / cancel / reschedule workloads (also
 * from inside callbacks) must fire in exactly the same order on the heap and
 * on the naive sorted list, the oracle.
 */
#include "hs_engine.h"
#include "hs_test.h"

#include <math.h>
#include <stdint.h>

/* ---- helpers ------------------------------------------------------------- */

typedef struct tctx tctx_t;

typedef struct tev {
  hs_event_t ev;
  int id;
  tctx_t *cx;
} tev_t;

#define MAX_LOG 200000

struct tctx {
  hs_engine_t eng;
  tev_t *evs;
  int n_evs;
  uint64_t rng;
  int64_t *log;      /* id * 2^32 + time, in firing order */
  int n_log;
  int stop_at;       /* id whose firing sets eng->stop; -1 none */
  bool chatty;       /* callbacks schedule/cancel at random */
};

static uint64_t rnd(uint64_t *s)
{
  /* splitmix64: tiny, seedable, good enough for workloads */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int rnd_below(uint64_t *s, int n) { return (int)(rnd(s) % (uint64_t)n); }

static void on_fire(hs_engine_t *eng, hs_event_t *ev)
{
  tev_t *t = HS_CONTAINER_OF(ev, tev_t, ev);
  tctx_t *cx = t->cx;
  if (cx->n_log < MAX_LOG)
    cx->log[cx->n_log++] = ((int64_t)t->id << 32) + eng->now;
  if (t->id == cx->stop_at)
    eng->stop = true;
  if (!cx->chatty)
    return;
  int what = rnd_below(&cx->rng, 10);
  tev_t *o = &cx->evs[rnd_below(&cx->rng, cx->n_evs)];
  if (what < 4)
    hs_engine_after(eng, &o->ev, rnd_below(&cx->rng, 40), rnd_below(&cx->rng, 3));
  else if (what < 6)
    hs_engine_cancel(eng, &o->ev);
  else if (what < 7)
    hs_engine_schedule(eng, &t->ev, eng->now + rnd_below(&cx->rng, 5), 0); /* re-arm itself */
}

static void ctx_init(tctx_t *cx, const hs_evq_type_t *qt, int n_evs, uint64_t seed)
{
  memset(cx, 0, sizeof *cx);
  CHECK(hs_engine_init(&cx->eng, qt) == HS_OK);
  cx->evs = calloc((size_t)n_evs, sizeof *cx->evs);
  cx->log = calloc(MAX_LOG, sizeof *cx->log);
  cx->n_evs = n_evs;
  cx->rng = seed;
  cx->stop_at = -1;
  for (int i = 0; i < n_evs; i++) {
    hs_event_init(&cx->evs[i].ev, on_fire);
    cx->evs[i].id = i;
    cx->evs[i].cx = cx;
  }
}

static void ctx_destroy(tctx_t *cx)
{
  hs_engine_destroy(&cx->eng);
  free(cx->evs);
  free(cx->log);
}

/* ---- ordering, run(until), stop: every queue type -------------------------- */

static void test_ties(const hs_evq_type_t *qt)
{
  tctx_t cx;
  ctx_init(&cx, qt, 6, 1);
  hs_engine_t *e = &cx.eng;
  /* same time 10: prio 1 (ids 0, 1), prio 0 (id 2), prio -1 (id 3); id 4 at 5 */
  hs_engine_schedule(e, &cx.evs[0].ev, 10, 1);
  hs_engine_schedule(e, &cx.evs[1].ev, 10, 1);
  hs_engine_schedule(e, &cx.evs[2].ev, 10, 0);
  hs_engine_schedule(e, &cx.evs[3].ev, 10, -1);
  hs_engine_schedule(e, &cx.evs[4].ev, 5, 7);
  /* rescheduling 0 to the same key puts it after 1 (new sequence number) */
  hs_engine_schedule(e, &cx.evs[0].ev, 10, 1);
  CHECK_EQ_INT(hs_engine_pending_count(e), 5);
  CHECK(hs_engine_run(e, HS_TIME_MAX) == HS_OK);
  int want[] = {4, 3, 2, 1, 0};
  CHECK_EQ_INT(cx.n_log, 5);
  for (int i = 0; i < 5 && i < cx.n_log; i++)
    CHECK_EQ_INT(cx.log[i] >> 32, want[i]);
  CHECK_EQ_INT(e->now, 10);
  CHECK_EQ_INT(e->n_fired, 5);
  ctx_destroy(&cx);
}

static void test_until_and_stop(const hs_evq_type_t *qt)
{
  tctx_t cx;
  ctx_init(&cx, qt, 4, 1);
  hs_engine_t *e = &cx.eng;
  hs_engine_schedule(e, &cx.evs[0].ev, 10, 0);
  hs_engine_schedule(e, &cx.evs[1].ev, 20, 0);
  hs_engine_schedule(e, &cx.evs[2].ev, 30, 0);
  hs_engine_schedule(e, &cx.evs[3].ev, 40, 0);
  CHECK(hs_engine_run(e, 20) == HS_OK); /* fires 10 and 20 (inclusive) */
  CHECK_EQ_INT(cx.n_log, 2);
  CHECK_EQ_INT(e->now, 20);
  CHECK_EQ_INT(hs_engine_pending_count(e), 2);
  CHECK(hs_engine_run(e, 25) == HS_OK); /* nothing due: the clock moves to 25 */
  CHECK_EQ_INT(cx.n_log, 2);
  CHECK_EQ_INT(e->now, 25);
  /* the past clamps to now */
  hs_engine_schedule(e, &cx.evs[0].ev, 3, 0);
  CHECK_EQ_INT(cx.evs[0].ev.time, 25);
  cx.stop_at = 0;
  CHECK(hs_engine_run(e, HS_TIME_MAX) == HS_OK); /* 0 fires at 25 and stops */
  CHECK_EQ_INT(cx.n_log, 3);
  CHECK_EQ_INT(e->now, 25);
  CHECK_EQ_INT(hs_engine_pending_count(e), 2);
  cx.stop_at = -1;
  hs_engine_cancel(e, &cx.evs[3].ev);
  hs_engine_cancel(e, &cx.evs[3].ev); /* not queued: no-op */
  CHECK(!hs_event_pending(&cx.evs[3].ev));
  CHECK(hs_engine_run(e, HS_TIME_MAX) == HS_OK);
  CHECK_EQ_INT(cx.n_log, 4);
  CHECK_EQ_INT(cx.log[3] >> 32, 2);
  CHECK_EQ_INT(e->now, 30); /* HS_TIME_MAX leaves the clock at the last event */
  /* a recorded failure stops the run and sticks */
  hs_engine_schedule(e, &cx.evs[1].ev, 50, 0);
  hs_engine_fail(e, HS_ENOMEM);
  CHECK(hs_engine_run(e, HS_TIME_MAX) == HS_ENOMEM);
  CHECK_EQ_INT(cx.n_log, 4);
  ctx_destroy(&cx);
}

static void test_reserve_and_after(const hs_evq_type_t *qt)
{
  tctx_t cx;
  ctx_init(&cx, qt, 100, 1);
  hs_engine_t *e = &cx.eng;
  CHECK(hs_engine_reserve(e, 1000) == HS_OK);
  for (int i = 0; i < 100; i++)
    hs_engine_after(e, &cx.evs[i].ev, 100 - i, 0);
  hs_engine_after(e, &cx.evs[0].ev, HS_TIME_MAX, 0); /* saturates, does not wrap */
  CHECK_EQ_INT(cx.evs[0].ev.time, HS_TIME_MAX);
  CHECK(hs_engine_run(e, 1000) == HS_OK);
  CHECK_EQ_INT(cx.n_log, 99);
  for (int i = 1; i < 99; i++)
    CHECK((cx.log[i] & 0xffffffff) >= (cx.log[i - 1] & 0xffffffff));
  ctx_destroy(&cx);
}

static void test_every_queue(void)
{
  for (size_t i = 0; hs_evq_types[i]; i++) {
    const hs_evq_type_t *qt = hs_evq_types[i];
    CHECK(hs_evq_find(qt->name) == qt);
    test_ties(qt);
    test_until_and_stop(qt);
    test_reserve_and_after(qt);
  }
  CHECK(hs_evq_find("no-such-queue") == NULL);
  CHECK(hs_evq_find(NULL) == NULL);
}

static void test_zeroed_destroy(void)
{
  hs_engine_t e;
  memset(&e, 0, sizeof e);
  hs_engine_destroy(&e);
  hs_engine_destroy(NULL);
  CHECK(hs_engine_init(&e, NULL) == HS_OK);
  CHECK(e.q_type == &hs_evq_heap);
  hs_engine_destroy(&e);
}

/* ---- differential ---------------------------------------------------------- */

/* Runs `n_ops` random driver operations (schedule, cancel, reschedule, run a
 * while) on an engine of queue type qt; callbacks add their own. */
static void workload(tctx_t *cx, int n_ops, uint64_t seed)
{
  uint64_t drv = seed;
  hs_engine_t *e = &cx->eng;
  for (int op = 0; op < n_ops; op++) {
    int what = rnd_below(&drv, 100);
    tev_t *t = &cx->evs[rnd_below(&drv, cx->n_evs)];
    if (what < 45) /* (re)schedule: small ranges make many ties */
      hs_engine_schedule(e, &t->ev, e->now + rnd_below(&drv, 64), rnd_below(&drv, 4) - 1);
    else if (what < 60)
      hs_engine_cancel(e, &t->ev);
    else if (what < 70 && hs_event_pending(&t->ev)) /* reschedule earlier or later */
      hs_engine_schedule(e, &t->ev, t->ev.time + rnd_below(&drv, 21) - 10, t->ev.prio);
    else if (what < 98)
      hs_engine_run(e, e->now + rnd_below(&drv, 16));
    else
      cx->stop_at = rnd_below(&drv, cx->n_evs);
  }
  cx->stop_at = -1;
  cx->chatty = false;
  hs_engine_run(e, HS_TIME_MAX);
}

static void test_differential(void)
{
  const int n_ops = 60000;
  for (uint64_t seed = 1; seed <= 4; seed++) {
    tctx_t a, b;
    ctx_init(&a, &hs_evq_heap, 64 + 200 * (int)seed, seed * 77);
    ctx_init(&b, &hs_evq_naive, 64 + 200 * (int)seed, seed * 77);
    a.chatty = b.chatty = true;
    workload(&a, n_ops, seed);
    workload(&b, n_ops, seed);
    CHECK(a.n_log > 10000);
    CHECK_EQ_INT(a.n_log, b.n_log);
    int first_diff = -1;
    for (int i = 0; i < a.n_log && i < b.n_log; i++)
      if (a.log[i] != b.log[i]) {
        first_diff = i;
        break;
      }
    CHECK_MSG(first_diff < 0, "seed %llu: firing differs at %d", (unsigned long long)seed,
              first_diff);
    CHECK_EQ_INT(a.eng.now, b.eng.now);
    CHECK_EQ_INT(a.eng.n_fired, b.eng.n_fired);
    CHECK_EQ_INT(hs_engine_pending_count(&a.eng), 0);
    /* the log is ordered by time */
    for (int i = 1; i < a.n_log; i++)
      if ((a.log[i] & 0xffffffff) < (a.log[i - 1] & 0xffffffff)) {
        CHECK_MSG(0, "time went back at %d", i);
        break;
      }
    ctx_destroy(&a);
    ctx_destroy(&b);
  }
}

/* hs_time_from_s rounds s x 1e9 as llround does (half away from zero),
 * without calling it: whole and halfway nanoseconds, the neighbours of
 * 0.5 (0.49999999999999994 must not round up), both sides of 2^52 and
 * 2^53 ns, and random magnitudes from 1e-12 s to 9e9 s. */
static void test_time_from_s_rounds(void)
{
  static const double ns[] = {0.5, 1.5, 2.5, 0.49999999999999994, 0.5000000000000001, 1.0,
                              999999.5, 4503599627370495.5, 4503599627370496.0,
                              4503599627370497.0, 9007199254740991.0, 9007199254740993.0,
                              1e18, 9.1e18};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    double s = ns[i] / 1e9;
    double x = s * 1e9; /* what hs_time_from_s rounds */
    CHECK_MSG(hs_time_from_s(s) == (hs_time_t)llround(x), "%.17g ns: %lld, llround %lld", x,
              (long long)hs_time_from_s(s), (long long)llround(x));
  }
  uint64_t r = 0x2545f4914f6cdd1dULL;
  for (int i = 0; i < 200000; i++) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    double mant = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
    double s = mant * pow(10.0, (double)(int)(r % 22) - 12.0);
    double x = s * 1e9;
    if (!(s > 0.0) || x >= 9.2e18)
      continue;
    CHECK_MSG(hs_time_from_s(s) == (hs_time_t)llround(x), "%.17g s: %lld, llround %lld", s,
              (long long)hs_time_from_s(s), (long long)llround(x));
  }
  CHECK(hs_time_from_s(0.0) == 0 && hs_time_from_s(-1.0) == 0 && hs_time_from_s(NAN) == 0);
  CHECK(hs_time_from_s(1e10) == HS_TIME_MAX);
}

int main(void)
{
  HS_RUN(test_every_queue);
  HS_RUN(test_zeroed_destroy);
  HS_RUN(test_differential);
  HS_RUN(test_time_from_s_rounds);
  HS_TEST_END();
}
