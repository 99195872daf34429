/*
 * evq_naive.c - the oracle event list: a sorted array, latest event first,
 * so the next event is the last element. Deliberately simple (O(n) insert
 * and remove by shifting, O(1) pop) and independent of the heap's code: the
 * engine tests run random workloads on both and demand identical firing.
 *
 * Invariant: a[i] fires after a[i+1] for all i, and a[i]->qidx == i.
 */
#include "hs_engine.h"

#include <string.h>

typedef struct sorted {
  hs_event_t **a;
  size_t n, cap;
} sorted_t;

static hs_status_t naive_init(void **state)
{
  sorted_t *s = hs_calloc(1, sizeof *s);
  if (!s)
    return HS_ENOMEM;
  *state = s;
  return HS_OK;
}

static void naive_destroy(void *state)
{
  sorted_t *s = state;
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    s->a[i]->qidx = -1;
  hs_free(s->a);
  hs_free(s);
}

static hs_status_t naive_reserve(void *state, size_t n)
{
  sorted_t *s = state;
  if (n > (size_t)INT32_MAX)
    return HS_ELIMIT;
  return hs_reserve((void **)&s->a, &s->cap, n, sizeof *s->a);
}

static void renumber(sorted_t *s, size_t from)
{
  for (size_t i = from; i < s->n; i++)
    s->a[i]->qidx = (int32_t)i;
}

static hs_status_t naive_push(void *state, hs_event_t *ev)
{
  sorted_t *s = state;
  hs_status_t st = naive_reserve(s, s->n + 1);
  if (st != HS_OK)
    return st;
  /* First position whose event fires before ev: ev goes just ahead of it. */
  size_t i = 0;
  while (i < s->n && !hs_event_before(s->a[i], ev))
    i++;
  memmove(&s->a[i + 1], &s->a[i], (s->n - i) * sizeof *s->a);
  s->a[i] = ev;
  s->n++;
  renumber(s, i);
  return HS_OK;
}

static hs_event_t *naive_peek(void *state)
{
  sorted_t *s = state;
  return s->n ? s->a[s->n - 1] : NULL;
}

static hs_event_t *naive_pop(void *state)
{
  sorted_t *s = state;
  if (!s->n)
    return NULL;
  hs_event_t *ev = s->a[--s->n];
  ev->qidx = -1;
  return ev;
}

static void naive_remove(void *state, hs_event_t *ev)
{
  sorted_t *s = state;
  size_t i = 0;
  while (i < s->n && s->a[i] != ev)
    i++;
  if (i == s->n)
    return;
  memmove(&s->a[i], &s->a[i + 1], (s->n - i - 1) * sizeof *s->a);
  s->n--;
  ev->qidx = -1;
  renumber(s, i);
}

static size_t naive_size(const void *state)
{
  const sorted_t *s = state;
  return s->n;
}

const hs_evq_type_t hs_evq_naive = {
    .name = "naive",
    .init = naive_init,
    .destroy = naive_destroy,
    .reserve = naive_reserve,
    .push = naive_push,
    .peek = naive_peek,
    .pop = naive_pop,
    .remove = naive_remove,
    .size = naive_size,
    .update = NULL,
};
