/*
 * progress.c - progress lines for long commands (hs_progress.h): redrawn on
 * a terminal, plain periodic lines with done/total and ETA elsewhere.
 */
#include "hs_common.h"
#include "hs_progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double hs_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hs_progress_init(hs_progress_t *p, FILE *f, const char *what, const char *unit, uint64_t total)
{
  memset(p, 0, sizeof *p);
  p->f = f;
  p->tty = f && isatty(fileno(f));
  hs_strlcpy(p->what, what ? what : "", sizeof p->what);
  hs_strlcpy(p->unit, unit ? unit : "", sizeof p->unit);
  p->total = total;
  p->fraction = total ? 0.0 : -1.0;
  p->clock_s = hs_now_s;
  p->t0_s = hs_now_s();
  p->last_s = p->t0_s;
  p->interval_s = 10.0;
  p->quiet_s = 1.0;
  const char *env = getenv("HETSIM_PROGRESS_INTERVAL_S");
  if (env) {
    char *end = NULL;
    double v = strtod(env, &end);
    if (end && end != env && !*end && v >= 0.0 && v < 1e6) {
      p->interval_s = v;
      p->quiet_s = v < p->quiet_s ? v : p->quiet_s;
    }
  }
  p->last_tenth = 0;
}

/* Below this fraction no ETA is shown (hs_progress.h). */
#define ETA_MIN_FRACTION 0.1

static void eta_text(const hs_progress_t *p, double el, bool last, char *buf, size_t n)
{
  if (!last && p->fraction >= ETA_MIN_FRACTION && p->fraction < 1.0)
    snprintf(buf, n, ", ETA %.0f s", el * (1.0 - p->fraction) / p->fraction);
  else if (!last && p->fraction >= 1.0)
    snprintf(buf, n, ", finishing");
  else
    buf[0] = '\0';
}

static void print(hs_progress_t *p, double now, bool last)
{
  double el = now - p->t0_s;
  char eta[48], count[96];
  eta_text(p, el, last, eta, sizeof eta);
  /* 100% only on the last line: floor, at most 99 before it */
  double pct = last ? 100.0 : (double)(int64_t)(100.0 * p->fraction);
  pct = !last && pct > 99.0 ? 99.0 : pct;
  if (p->total)
    snprintf(count, sizeof count, "%llu/%llu %s done (%.0f%%)", (unsigned long long)p->done,
             (unsigned long long)p->total, p->unit, pct);
  else if (p->fraction >= 0.0)
    snprintf(count, sizeof count, "%.0f%% done", pct);
  else
    snprintf(count, sizeof count, "running");
  if (p->tty)
    fprintf(p->f, "\r%s %s, %.1f s%s   %s", p->what, count, el, eta, last ? "\n" : "");
  else
    fprintf(p->f, "%s: %s, %.1f s elapsed%s\n", p->what, count, el, eta);
  fflush(p->f);
  p->last_s = now;
  p->shown = true;
  p->final_shown = last;
}

static void maybe_print(hs_progress_t *p)
{
  if (!p->f)
    return;
  double now = p->clock_s();
  if (now - p->t0_s < p->quiet_s)
    return;
  int tenth = p->fraction >= 0.0 ? (int)(10.0 * p->fraction) : 0;
  bool due = p->tty ? now - p->last_s >= 0.2 || !p->shown
                    : tenth > p->last_tenth || now - p->last_s >= p->interval_s || !p->shown;
  p->last_tenth = tenth > p->last_tenth ? tenth : p->last_tenth;
  if (due)
    print(p, now, false);
}

void hs_progress_add(hs_progress_t *p, uint64_t n)
{
  p->done += n;
  if (p->total)
    p->fraction = p->done >= p->total ? 1.0 : (double)p->done / (double)p->total;
  maybe_print(p);
}

void hs_progress_set_fraction(hs_progress_t *p, double fraction)
{
  p->fraction = fraction > 1.0 ? 1.0 : fraction;
  maybe_print(p);
}

void hs_progress_finish(hs_progress_t *p, bool always)
{
  if (!p->f || (!p->shown && !always) || p->final_shown)
    return;
  print(p, p->clock_s(), true);
}
