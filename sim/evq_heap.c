/*
 * evq_heap.c - the event list of real runs: a binary min-heap of buckets,
 * each bucket a FIFO of events that share one (time, prio).
 *
 * Workload (issue 35, bench_sim): simulated replicas run in lockstep, so
 * many queued events share a time: at 4096 GPUs, 95% of pops have the
 * (time, prio) of the pop before. A heap of single events spent a quarter
 * of the run sifting through ties broken by seq; here equal keys queue up
 * in a bucket and the heap only orders the buckets.
 *
 * Representation: a node per queued event (ev->qidx is its index; -1 when
 * unqueued) holds the event, a copy of its seq and its bucket's links. A
 * bucket holds events of one (time, prio) in increasing seq: a push appends,
 * and seq grows with every scheduling, so appending keeps the order. The
 * heap orders buckets by (time, prio, seq of the head): since each bucket is
 * sorted, the head of the top bucket is the next event, so the pop order is
 * exactly the (time, prio, seq) order. Several buckets may share a key (a
 * push finds an open bucket for its key through a small direct-mapped table
 * of recent ones, else opens another); they still merge by head seq.
 * Invariants: heap[hpos] of a queued bucket is that bucket; a bucket is in
 * the heap exactly when it holds events; node.seq == node.ev->seq.
 * Push O(log B) (B buckets) when it opens a bucket, O(1) otherwise; pop and
 * remove O(log B) when the head changes. Arrays grow geometrically, so
 * nothing allocates once the queue is as large as it has ever been.
 *
 * Tried before this (callgrind and user CPU, bench_sim 1024-16384): a heap of
 * events, binary and 4-ary; ids instead of positions in the events; Floyd's
 * pop; prefetching the next level: none beat the binary heap of events,
 * whose cost was the tie-breaking depth, not the layout.
 */
#include "hs_engine.h"

#include <stdlib.h>

#define RECENT 64 /* direct-mapped table of open buckets, by key */

typedef struct node {
  hs_event_t *ev;  /* NULL when free */
  uint64_t seq;
  int32_t next;    /* later in the bucket (or the next free node); -1 ends */
  int32_t prev;    /* earlier in the bucket; -1: the head */
  int32_t bucket;
} node_t;

typedef struct bucket {
  hs_time_t time;
  uint64_t head_seq; /* nodes[head].seq */
  int32_t prio;
  int32_t head, tail; /* -1: empty (free; tail then links the free list) */
  int32_t hpos;       /* index in the heap */
} bucket_t;

typedef struct heap {
  node_t *nodes;
  bucket_t *b;
  int32_t *heap; /* bucket indices */
  size_t n, hn, cap; /* events queued, buckets in the heap, capacity of all three */
  size_t n_nodes, n_b; /* high-water marks */
  int32_t free_node, free_b;
  int32_t recent[RECENT];
} heap_t;

static inline bool bucket_before(const bucket_t *x, const bucket_t *y)
{
  if (x->time != y->time)
    return x->time < y->time;
  if (x->prio != y->prio)
    return x->prio < y->prio;
  return x->head_seq < y->head_seq;
}

static inline size_t recent_slot(hs_time_t time, int32_t prio)
{
  uint64_t k = ((uint64_t)time ^ ((uint64_t)(uint32_t)prio << 40)) * 0x9E3779B97F4A7C15ull;
  return (size_t)(k >> 58);
}

static hs_status_t heap_init(void **state)
{
  heap_t *h = hs_calloc(1, sizeof *h);
  if (!h)
    return HS_ENOMEM;
  h->free_node = h->free_b = -1;
  for (size_t i = 0; i < RECENT; i++)
    h->recent[i] = -1;
  *state = h;
  return HS_OK;
}

static void heap_destroy(void *state)
{
  heap_t *h = state;
  if (!h)
    return;
  for (size_t i = 0; i < h->n_nodes; i++)
    if (h->nodes[i].ev)
      h->nodes[i].ev->qidx = -1;
  hs_free(h->nodes);
  hs_free(h->b);
  hs_free(h->heap);
  hs_free(h);
}

/* Room for n queued events: n nodes, and n buckets in the heap at most. */
static hs_status_t heap_reserve(void *state, size_t n)
{
  heap_t *h = state;
  hs_status_t st = HS_OK;
  if (n > (size_t)INT32_MAX)
    return HS_ELIMIT;
  if (n <= h->cap)
    return HS_OK;
  size_t c1 = h->cap, c2 = h->cap, c3 = h->cap;
  HS_CHECK(hs_reserve((void **)&h->nodes, &c1, n, sizeof *h->nodes));
  HS_CHECK(hs_reserve((void **)&h->b, &c2, n, sizeof *h->b));
  HS_CHECK(hs_reserve((void **)&h->heap, &c3, n, sizeof *h->heap));
  h->cap = n;
cleanup:
  return st;
}

/* Places bucket k at hole i or above. */
static void sift_up(heap_t *h, size_t i, int32_t k)
{
  const bucket_t *bk = &h->b[k];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!bucket_before(bk, &h->b[h->heap[p]]))
      break;
    h->heap[i] = h->heap[p];
    h->b[h->heap[i]].hpos = (int32_t)i;
    i = p;
  }
  h->heap[i] = k;
  h->b[k].hpos = (int32_t)i;
}

/* Places bucket k at hole i or below. */
static void sift_down(heap_t *h, size_t i, int32_t k)
{
  const bucket_t *bk = &h->b[k];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->hn)
      break;
    if (c + 1 < h->hn && bucket_before(&h->b[h->heap[c + 1]], &h->b[h->heap[c]]))
      c++;
    if (!bucket_before(&h->b[h->heap[c]], bk))
      break;
    h->heap[i] = h->heap[c];
    h->b[h->heap[i]].hpos = (int32_t)i;
    i = c;
  }
  h->heap[i] = k;
  h->b[k].hpos = (int32_t)i;
}

/* Takes emptied bucket k out of the heap and frees it. */
static void bucket_close(heap_t *h, int32_t k)
{
  size_t i = (size_t)h->b[k].hpos;
  int32_t last = h->heap[--h->hn];
  if (i < h->hn) {
    if (i > 0 && bucket_before(&h->b[last], &h->b[h->heap[(i - 1) / 2]]))
      sift_up(h, i, last);
    else
      sift_down(h, i, last);
  }
  h->b[k].head = -1;
  h->b[k].tail = h->free_b;
  h->free_b = k;
}

/* A new bucket for ev's key holding node j alone, in the heap. */
static int32_t bucket_open(heap_t *h, const hs_event_t *ev, int32_t j)
{
  int32_t k = h->free_b;
  if (k >= 0)
    h->free_b = h->b[k].tail;
  else
    k = (int32_t)h->n_b++;
  bucket_t *bk = &h->b[k];
  bk->time = ev->time;
  bk->prio = ev->prio;
  bk->head_seq = ev->seq;
  bk->head = bk->tail = j;
  h->hn++;
  sift_up(h, h->hn - 1, k);
  return k;
}

/* Queues ev in node j: appended to an open bucket of its key, else alone in
 * a new one. */
static void enqueue(heap_t *h, hs_event_t *ev, int32_t j)
{
  node_t *nd = &h->nodes[j];
  nd->ev = ev;
  nd->seq = ev->seq;
  nd->next = -1;
  ev->qidx = j;
  size_t slot = recent_slot(ev->time, ev->prio);
  int32_t k = h->recent[slot];
  bucket_t *bk = k >= 0 ? &h->b[k] : NULL;
  if (bk && bk->head >= 0 && bk->time == ev->time && bk->prio == ev->prio) {
    nd->prev = bk->tail; /* seq is the largest queued: the order holds */
    nd->bucket = k;
    h->nodes[bk->tail].next = j;
    bk->tail = j;
    return;
  }
  nd->prev = -1;
  nd->bucket = bucket_open(h, ev, j);
  h->recent[slot] = nd->bucket;
}

static hs_status_t heap_push(void *state, hs_event_t *ev)
{
  heap_t *h = state;
  if (h->n == h->cap) {
    size_t want = h->cap < 64 ? 64 : 2 * h->cap; /* geometric: heap_reserve sizes exactly */
    hs_status_t st = heap_reserve(h, want > (size_t)INT32_MAX ? h->n + 1 : want);
    if (st != HS_OK)
      return st;
  }
  int32_t j = h->free_node;
  if (j >= 0)
    h->free_node = h->nodes[j].next;
  else
    j = (int32_t)h->n_nodes++;
  h->n++;
  enqueue(h, ev, j);
  return HS_OK;
}

static hs_event_t *heap_peek(void *state)
{
  heap_t *h = state;
  return h->hn ? h->nodes[h->b[h->heap[0]].head].ev : NULL;
}

/* Unlinks node j from its bucket (repairing the heap when the head
 * changes) and leaves it unqueued; with `keep` the node stays allocated
 * for a re-enqueue. */
static void unlink_node(heap_t *h, int32_t j, bool keep)
{
  node_t *nd = &h->nodes[j];
  int32_t k = nd->bucket;
  bucket_t *bk = &h->b[k];
  if (nd->next >= 0)
    h->nodes[nd->next].prev = nd->prev;
  else
    bk->tail = nd->prev;
  if (nd->prev >= 0) {
    h->nodes[nd->prev].next = nd->next;
  } else if (nd->next < 0) {
    bucket_close(h, k);
  } else {
    bk->head = nd->next;
    bk->head_seq = h->nodes[nd->next].seq;
    sift_down(h, (size_t)bk->hpos, k);
  }
  nd->ev->qidx = -1;
  if (keep)
    return;
  nd->ev = NULL;
  nd->next = h->free_node;
  h->free_node = j;
  h->n--;
}

static hs_event_t *heap_pop(void *state)
{
  heap_t *h = state;
  if (!h->hn)
    return NULL;
  int32_t j = h->b[h->heap[0]].head;
  hs_event_t *ev = h->nodes[j].ev;
  unlink_node(h, j, false);
  return ev;
}

static void heap_remove(void *state, hs_event_t *ev)
{
  heap_t *h = state;
  if (ev->qidx < 0 || (size_t)ev->qidx >= h->n_nodes || h->nodes[ev->qidx].ev != ev)
    return;
  unlink_node(h, ev->qidx, false);
}

/* ev's key changed (its seq is the newest): out of its bucket, then in
 * again through the same node. */
static void heap_update(void *state, hs_event_t *ev)
{
  heap_t *h = state;
  int32_t j = ev->qidx;
  unlink_node(h, j, true);
  enqueue(h, ev, j);
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
