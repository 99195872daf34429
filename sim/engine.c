/*
 * engine.c - the discrete-event loop: clock, scheduling, cancel, run.
 *
 * The engine owns only the event list (behind hs_evq_type_t); events are
 * caller-owned and intrusive. Invariants:
 *   - every queued event has time >= now (scheduling in the past clamps);
 *   - ev->qidx >= 0 exactly when ev is queued (the queue maintains it);
 *   - sequence numbers strictly increase with every (re)scheduling, so equal
 *     (time, prio) events fire in scheduling order on every queue type.
 * Workload: millions of schedule/reschedule/pop per run, mostly near the
 * front of the queue; nothing here allocates once the queue is reserved.
 */
#include "hs_engine.h"

#include <string.h>

const hs_evq_type_t *const hs_evq_types[] = {&hs_evq_heap, &hs_evq_naive, NULL};

const hs_evq_type_t *hs_evq_find(const char *name)
{
  if (!name)
    return NULL;
  for (size_t i = 0; hs_evq_types[i]; i++)
    if (strcmp(hs_evq_types[i]->name, name) == 0)
      return hs_evq_types[i];
  return NULL;
}

hs_status_t hs_engine_init(hs_engine_t *eng, const hs_evq_type_t *q_type)
{
  if (!eng)
    return HS_EINVAL;
  memset(eng, 0, sizeof *eng);
  eng->q_type = q_type ? q_type : &hs_evq_heap;
  hs_status_t st = eng->q_type->init(&eng->q);
  if (st != HS_OK) {
    eng->q_type = NULL;
    eng->q = NULL;
  }
  return st;
}

void hs_engine_destroy(hs_engine_t *eng)
{
  if (!eng)
    return;
  if (eng->q_type && eng->q)
    eng->q_type->destroy(eng->q);
  eng->q = NULL;
  eng->q_type = NULL;
}

hs_status_t hs_engine_reserve(hs_engine_t *eng, size_t n)
{
  return eng->q_type->reserve(eng->q, n);
}

hs_status_t hs_engine_schedule(hs_engine_t *eng, hs_event_t *ev, hs_time_t at, int32_t prio)
{
  if (at < eng->now)
    at = eng->now;
  if (ev->qidx >= 0) {
    ev->time = at;
    ev->prio = prio;
    ev->seq = eng->next_seq++;
    if (eng->q_type->update) {
      eng->q_type->update(eng->q, ev);
      return HS_OK;
    }
    eng->q_type->remove(eng->q, ev);
  }
  ev->time = at;
  ev->prio = prio;
  ev->seq = eng->next_seq++;
  return eng->q_type->push(eng->q, ev);
}

hs_status_t hs_engine_after(hs_engine_t *eng, hs_event_t *ev, hs_time_t delay, int32_t prio)
{
  hs_time_t at = delay > HS_TIME_MAX - eng->now ? HS_TIME_MAX : eng->now + delay;
  return hs_engine_schedule(eng, ev, at, prio);
}

void hs_engine_cancel(hs_engine_t *eng, hs_event_t *ev)
{
  if (ev->qidx >= 0)
    eng->q_type->remove(eng->q, ev);
}

void hs_engine_fail(hs_engine_t *eng, hs_status_t st)
{
  if (st == HS_OK)
    return;
  if (eng->status == HS_OK)
    eng->status = st;
  eng->stop = true;
}

hs_status_t hs_engine_run(hs_engine_t *eng, hs_time_t until)
{
  if (eng->status != HS_OK)
    return eng->status;
  eng->stop = false;
  const hs_evq_type_t *qt = eng->q_type;
  void *q = eng->q;
  for (;;) {
    hs_event_t *ev = qt->peek(q);
    if (!ev || ev->time > until)
      break;
    qt->pop(q);
    eng->now = ev->time;
    eng->n_fired++;
    ev->fire(eng, ev);
    if (eng->stop)
      return eng->status;
  }
  if (until != HS_TIME_MAX && until > eng->now)
    eng->now = until;
  return eng->status;
}

size_t hs_engine_pending_count(const hs_engine_t *eng)
{
  return eng->q_type->size(eng->q);
}
