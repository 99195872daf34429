/*
 * hs_engine.h - the domain-free discrete-event core. It knows nothing of DNNs
 * or networks: it orders caller-owned events by (time, priority, sequence)
 * and fires their callbacks. Time is an integer count of nanoseconds; the
 * sequence number is assigned at scheduling, so ties break in scheduling
 * order and a run is bit-for-bit reproducible.
 *
 * Events are intrusive: the caller embeds hs_event_t in its own struct and
 * recovers it with HS_CONTAINER_OF in the callback. The queue stores only
 * pointers and keeps each event's heap index in the event, so cancel and
 * reschedule are O(log n) and the hot path allocates nothing (the heap array
 * is grown ahead with hs_engine_reserve, or amortised).
 *
 * The event list sits behind a small type object (hs_evq_type_t): a binary
 * heap for real runs and a naive sorted list used as the test oracle.
 */
#ifndef HS_ENGINE_H
#define HS_ENGINE_H

#include "hs_common.h"

typedef struct hs_engine hs_engine_t;
typedef struct hs_event hs_event_t;

typedef void (*hs_event_fn)(hs_engine_t *eng, hs_event_t *ev);

struct hs_event {
  hs_time_t time;     /* set by hs_engine_schedule */
  uint64_t seq;       /* set by hs_engine_schedule */
  int32_t prio;       /* lower fires first at equal time */
  int32_t qidx;       /* queue position; -1 when not queued (owned by the queue) */
  hs_event_fn fire;   /* set by the caller before scheduling */
};

/* Initialises an event that is not queued. */
static inline void hs_event_init(hs_event_t *ev, hs_event_fn fire)
{
  ev->time = 0;
  ev->seq = 0;
  ev->prio = 0;
  ev->qidx = -1;
  ev->fire = fire;
}
static inline bool hs_event_pending(const hs_event_t *ev) { return ev->qidx >= 0; }

/* An event-list implementation. `state` is engine-owned storage. */
typedef struct hs_evq_type {
  const char *name;
  hs_status_t (*init)(void **state);
  void (*destroy)(void *state);
  hs_status_t (*reserve)(void *state, size_t n);
  hs_status_t (*push)(void *state, hs_event_t *ev);
  hs_event_t *(*peek)(void *state);
  hs_event_t *(*pop)(void *state);
  void (*remove)(void *state, hs_event_t *ev);
  size_t (*size)(const void *state);
  /* Restores order after a queued event's key changed (reschedule); NULL =
   * remove + push. */
  void (*update)(void *state, hs_event_t *ev);
} hs_evq_type_t;

extern const hs_evq_type_t hs_evq_heap;  /* binary heap: O(log n) push/pop/remove */
extern const hs_evq_type_t hs_evq_naive; /* sorted list: O(n) push; the oracle */
/* NULL-terminated table of all queues, and lookup by name (NULL if absent). */
extern const hs_evq_type_t *const hs_evq_types[];
const hs_evq_type_t *hs_evq_find(const char *name);

/* True when event a fires before b: (time, prio, seq) lexicographic. */
static inline bool hs_event_before(const hs_event_t *a, const hs_event_t *b)
{
  if (a->time != b->time)
    return a->time < b->time;
  if (a->prio != b->prio)
    return a->prio < b->prio;
  return a->seq < b->seq;
}

struct hs_engine {
  const hs_evq_type_t *q_type;
  void *q;
  hs_time_t now;
  uint64_t next_seq;
  uint64_t n_fired;
  bool stop;          /* set by a callback to end hs_engine_run early */
  void *user;         /* free for the caller */
  hs_status_t status; /* first failure a callback reported (hs_engine_fail) */
};

/* Caller-allocated engine. q_type NULL = hs_evq_heap. */
hs_status_t hs_engine_init(hs_engine_t *eng, const hs_evq_type_t *q_type);
/* Accepts a zeroed engine. Does not touch the (caller-owned) events. */
void hs_engine_destroy(hs_engine_t *eng);
/* Pre-sizes the queue for n pending events. */
hs_status_t hs_engine_reserve(hs_engine_t *eng, size_t n);
/* Queues ev at absolute time `at` (>= now; earlier is clamped to now). An
 * event already queued is moved. O(log n). Fails only with HS_ENOMEM. */
hs_status_t hs_engine_schedule(hs_engine_t *eng, hs_event_t *ev, hs_time_t at, int32_t prio);
/* Same, relative to now. */
hs_status_t hs_engine_after(hs_engine_t *eng, hs_event_t *ev, hs_time_t delay, int32_t prio);
/* Removes a queued event; no-op when not queued. O(log n). */
void hs_engine_cancel(hs_engine_t *eng, hs_event_t *ev);
/* Fires events in order until the queue is empty, `until` is passed (events
 * at time > until stay queued) or a callback sets eng->stop. Clears `stop` on
 * entry, so a stopped run resumes with the next call. When it returns because
 * nothing is left at or before a finite `until`, the clock is advanced to
 * `until` (HS_TIME_MAX leaves it at the last event). Returns eng->status: a
 * failure recorded by hs_engine_fail (then nothing more is fired, ever).
 * O(log n) per event fired on the heap. */
hs_status_t hs_engine_run(hs_engine_t *eng, hs_time_t until);
/* For callbacks, which return nothing: records the first failure `st` and
 * stops the run; hs_engine_run returns it. HS_OK is ignored. O(1). */
void hs_engine_fail(hs_engine_t *eng, hs_status_t st);
size_t hs_engine_pending_count(const hs_engine_t *eng);

#endif /* HS_ENGINE_H */
