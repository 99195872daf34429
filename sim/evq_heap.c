/*
 * evq_heap.c - the event list of real runs: an intrusive binary min-heap
 * ordered by (time, prio, seq).
 *
 * Representation: a[0..n) is a heap (a[(i-1)/2] fires before a[i]) of
 * entries holding a copy of the event's key next to the event pointer, so
 * sifting compares without touching the (scattered, caller-owned) events:
 * only moved events are written (their qidx). Every queued event stores its
 * index in ev->qidx, so remove and update find their entry in O(1) and
 * repair in O(log n); unqueued events have qidx == -1. Invariant: a[i]'s key
 * equals a[i].ev's (time, prio, seq). The array grows geometrically
 * (hs_reserve), so a push allocates only when the queue is larger than ever
 * before.
 *
 * Tried and measured against this (issue 35, callgrind, bench_sim 1024:
 * the heap holds about n_gpus / 8.6 events, so it is shallow): a 4-ary heap
 * (half the levels, so half the qidx writes) cost 25% more instructions in
 * sift (four three-field comparisons per level); Floyd's bottom-up pop (one
 * comparison per level down, then up) cost 6% more (the entry that fills a
 * pop's hole often belongs near the top: many events share `now`).
 */
#include "hs_engine.h"

#include <stdlib.h>

typedef struct entry {
  hs_time_t time;
  uint64_t seq;
  int32_t prio;
  hs_event_t *ev;
} entry_t;

typedef struct heap {
  entry_t *a;
  size_t n, cap;
} heap_t;

static inline bool entry_before(const entry_t *x, const entry_t *y)
{
  if (x->time != y->time)
    return x->time < y->time;
  if (x->prio != y->prio)
    return x->prio < y->prio;
  return x->seq < y->seq;
}

static inline entry_t entry_of(hs_event_t *ev)
{
  entry_t e = {ev->time, ev->seq, ev->prio, ev};
  return e;
}

static hs_status_t heap_init(void **state)
{
  heap_t *h = hs_calloc(1, sizeof *h);
  if (!h)
    return HS_ENOMEM;
  *state = h;
  return HS_OK;
}

static void heap_destroy(void *state)
{
  heap_t *h = state;
  if (!h)
    return;
  for (size_t i = 0; i < h->n; i++)
    h->a[i].ev->qidx = -1;
  hs_free(h->a);
  hs_free(h);
}

static hs_status_t heap_reserve(void *state, size_t n)
{
  heap_t *h = state;
  if (n > (size_t)INT32_MAX)
    return HS_ELIMIT;
  return hs_reserve((void **)&h->a, &h->cap, n, sizeof *h->a);
}

/* Places e at hole i or above. */
static void sift_up(heap_t *h, size_t i, entry_t e)
{
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!entry_before(&e, &h->a[p]))
      break;
    h->a[i] = h->a[p];
    h->a[i].ev->qidx = (int32_t)i;
    i = p;
  }
  h->a[i] = e;
  e.ev->qidx = (int32_t)i;
}

/* Places e at hole i or below. */
static void sift_down(heap_t *h, size_t i, entry_t e)
{
  size_t n = h->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && entry_before(&h->a[c + 1], &h->a[c]))
      c++;
    if (!entry_before(&h->a[c], &e))
      break;
    h->a[i] = h->a[c];
    h->a[i].ev->qidx = (int32_t)i;
    i = c;
  }
  h->a[i] = e;
  e.ev->qidx = (int32_t)i;
}

/* Places e at hole i, up or down as its key requires. */
static void sift(heap_t *h, size_t i, entry_t e)
{
  if (i > 0 && entry_before(&e, &h->a[(i - 1) / 2]))
    sift_up(h, i, e);
  else
    sift_down(h, i, e);
}

static hs_status_t heap_push(void *state, hs_event_t *ev)
{
  heap_t *h = state;
  if (h->n == h->cap) {
    hs_status_t st = heap_reserve(h, h->n + 1);
    if (st != HS_OK)
      return st;
  }
  h->n++;
  sift_up(h, h->n - 1, entry_of(ev));
  return HS_OK;
}

static hs_event_t *heap_peek(void *state)
{
  heap_t *h = state;
  return h->n ? h->a[0].ev : NULL;
}

/* Takes a[i] out and fills the hole with the last element. */
static void remove_at(heap_t *h, size_t i)
{
  h->a[i].ev->qidx = -1;
  h->n--;
  if (i < h->n)
    sift(h, i, h->a[h->n]);
}

static hs_event_t *heap_pop(void *state)
{
  heap_t *h = state;
  if (!h->n)
    return NULL;
  hs_event_t *ev = h->a[0].ev;
  remove_at(h, 0);
  return ev;
}

static void heap_remove(void *state, hs_event_t *ev)
{
  heap_t *h = state;
  if (ev->qidx < 0 || (size_t)ev->qidx >= h->n || h->a[ev->qidx].ev != ev)
    return;
  remove_at(h, (size_t)ev->qidx);
}

static void heap_update(void *state, hs_event_t *ev)
{
  heap_t *h = state;
  sift(h, (size_t)ev->qidx, entry_of(ev));
}

static size_t heap_size(const void *state)
{
  const heap_t *h = state;
  return h->n;
}

const hs_evq_type_t hs_evq_heap = {
    .name = "heap",
    .init = heap_init,
    .destroy = heap_destroy,
    .reserve = heap_reserve,
    .push = heap_push,
    .peek = heap_peek,
    .pop = heap_pop,
    .remove = heap_remove,
    .size = heap_size,
    .update = heap_update,
};
