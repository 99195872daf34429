/*
 * contention.c - compute slowed by concurrent communication on the same
 * device (contention.h states the model and its invariants).
 *
 * The running compute segment's remaining full-speed work is kept at the
 * last rate change; a change of the number of collectives in flight between
 * 0 and >= 1 changes the rate and hands back the new remaining wall time.
 */
#include "contention.h"

#include <math.h>

static inline double factor(const hs_contention_t *c)
{
  return c->live > 0 ? 1.0 + c->k : 1.0;
}

static hs_time_t wall_ns(const hs_contention_t *c, double work_ns)
{
  double w = work_ns * factor(c);
  if (!(w > 0.0))
    return 0;
  if (w >= (double)HS_TIME_MAX) /* the clock saturates rather than overflow */
    return HS_TIME_MAX;
  return (hs_time_t)llround(w);
}

hs_time_t hs__contention(hs_contention_t *c, hs_cont_event_t ev, hs_time_t now, hs_time_t work_ns)
{
  switch (ev) {
  case HS_CONT_COMPUTE_START:
    c->running = true;
    c->t_mark = now;
    c->left_ns = (double)work_ns;
    if (c->live == 0 || c->k == 0.0)
      return work_ns; /* full speed: exactly the segment's own duration */
    return wall_ns(c, c->left_ns);
  case HS_CONT_COMPUTE_END:
    c->running = false;
    return 0;
  case HS_CONT_COMM_START:
  case HS_CONT_COMM_END: {
    bool was_slow = c->live > 0;
    double f_old = factor(c);
    c->live += ev == HS_CONT_COMM_START ? 1 : -1;
    if (c->live < 0)
      c->live = 0; /* defensive: an end without its start */
    if (!c->running || c->k == 0.0 || was_slow == (c->live > 0))
      return -1;
    double done = (double)(now - c->t_mark) / f_old;
    c->left_ns = c->left_ns > done ? c->left_ns - done : 0.0;
    c->t_mark = now;
    return wall_ns(c, c->left_ns);
  }
  }
  return -1;
}
