/*
 * hs_progress.h - progress of a long command on stderr, on a terminal and
 * off it. On a terminal one line is redrawn in place (carriage return, at
 * most five times a second); elsewhere (a log, a pipe, CI) plain lines are
 * written: one at every tenth of the work and at least one per interval
 * (default 10 s; HETSIM_PROGRESS_INTERVAL_S overrides it), each with
 * done/total, the elapsed time and an ETA. Nothing is written during the
 * first `quiet_s` seconds (default 1 s), so quick commands stay silent.
 *
 * The ETA (elapsed x (1 - f) / f for fraction f) is shown from f >= 0.1 on:
 * below that one slow first step makes it jump by orders of magnitude
 * (autohet's first ETA read 3,300 s for a search that took seconds). 100%
 * is written only by hs_progress_finish: work counted done may still be
 * followed by the caller's last steps, so a line before it says at most
 * 99% and "finishing" once everything counted is done.
 *
 * The reporter reads the monotonic clock only for what it prints; no result
 * depends on it.
 */
#ifndef HS_PROGRESS_H
#define HS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct hs_progress {
  FILE *f;               /* NULL = silent */
  bool tty;
  char what[48];         /* "whatif", "hapt search" */
  char unit[24];         /* "options", "points"; "" for a fraction */
  uint64_t total, done;  /* units; total 0 with a fraction */
  double fraction;       /* [0, 1], or < 0 when unknown */
  double t0_s, last_s;   /* monotonic seconds */
  double interval_s;     /* plain lines: at least one per interval */
  double quiet_s;        /* nothing before this much time has passed */
  int last_tenth;
  bool shown;            /* something was written */
  bool final_shown;      /* the last line written said 100% (or ended the redrawn line) */
  double (*clock_s)(void); /* monotonic seconds; hs_now_s unless a test sets its own */
} hs_progress_t;

/* Monotonic clock in seconds. */
double hs_now_s(void);

/* Starts a reporter writing to f (NULL: silent). `unit` names what is
 * counted ("options"); pass "" and use hs_progress_set_fraction when only a
 * fraction is known (a planner's search). */
void hs_progress_init(hs_progress_t *p, FILE *f, const char *what, const char *unit, uint64_t total);
/* n more units are done; prints when due. */
void hs_progress_add(hs_progress_t *p, uint64_t n);
/* The fraction done, in [0, 1], or < 0 when unknown; prints when due. */
void hs_progress_set_fraction(hs_progress_t *p, double fraction);
/* Writes the last line (when anything was shown, or `always`) and ends a
 * terminal's redrawn line with a newline. */
void hs_progress_finish(hs_progress_t *p, bool always);

#endif
