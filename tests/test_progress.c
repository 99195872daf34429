/*
 * test_progress.c - common/progress.c's plain (non-terminal) lines against
 * work schedules whose remaining time is known in closed form, on a fake
 * clock (no wall-clock dependence):
 *
 * - steady work, 100 units of 1 s then 5 s of the caller's last steps: every
 *   ETA equals the remaining counted work, 100 - t, to the printed second;
 *   no ETA before 10% done; no line but the last says 100%, and the last
 *   (written by hs_progress_finish at t = 105) does;
 * - a slow first step (autohet's case): 0.1% done after 3 s, then the rest
 *   at a steady rate to t = 33. Every ETA shown is within a factor 4 of the
 *   true remaining time (33 - t); the ETA the old rule printed at 0.1%
 *   (3 x 0.999 / 0.001 = 2,997 s, 100x the truth) is not shown.
 */
#include "hs_progress.h"
#include "hs_test.h"

static double fake_now_s;
static double fake_clock(void) { return fake_now_s; }

/* A reporter writing plain lines to a temporary file, on the fake clock at t = 0. */
static FILE *start(hs_progress_t *p, const char *unit, uint64_t total)
{
  FILE *f = tmpfile();
  CHECK(f != NULL);
  hs_progress_init(p, f, "test", unit, total);
  p->tty = false;
  p->clock_s = fake_clock;
  fake_now_s = 0.0;
  p->t0_s = p->last_s = 0.0;
  p->interval_s = 1.0; /* a line every second at least: many ETAs to check */
  return f;
}

/* Reads f's lines into lines[] (at most max); returns the count. */
static int read_lines(FILE *f, char lines[][256], int max)
{
  rewind(f);
  int n = 0;
  while (n < max && fgets(lines[n], 256, f))
    n++;
  return n;
}

static void test_steady(void)
{
  hs_progress_t p;
  FILE *f = start(&p, "units", 100);
  for (int k = 1; k <= 100; k++) {
    fake_now_s = k;
    hs_progress_add(&p, 1);
  }
  fake_now_s = 105.0;
  hs_progress_finish(&p, false);
  static char lines[512][256];
  int n = read_lines(f, lines, 512);
  CHECK(n >= 90);
  int etas = 0;
  for (int i = 0; i < n; i++) {
    unsigned long long done = 0, total = 0;
    double el = 0.0, eta = -1.0;
    CHECK(sscanf(lines[i], "test: %llu/%llu units", &done, &total) == 2);
    const char *e = strstr(lines[i], "s elapsed");
    CHECK(e != NULL);
    sscanf(strstr(lines[i], "%), ") + 3, "%lf", &el);
    const char *q = strstr(lines[i], "ETA ");
    if (q) {
      sscanf(q + 4, "%lf", &eta);
      etas++;
      CHECK_MSG(done >= 10, "ETA at %llu%% done: %s", done, lines[i]);
      CHECK_MSG(fabs(eta - (100.0 - el)) <= 0.5, "ETA %.0f at t = %.1f, truth %.1f", eta, el, 100.0 - el);
    }
    bool says_100 = strstr(lines[i], "(100%)") != NULL;
    CHECK_MSG(says_100 == (i == n - 1), "line %d of %d: %s", i, n, lines[i]);
  }
  CHECK(etas >= 80);
  CHECK_CONTAINS(lines[n - 1], "100/100 units done (100%), 105.0 s elapsed");
  CHECK_CONTAINS(lines[n - 2], "100/100 units done (99%), 100.0 s elapsed, finishing");
  fclose(f);
}

/* Fraction done at time t of the slow-start schedule. */
static double slow_start_fraction(double t)
{
  return t <= 3.0 ? 0.001 * t / 3.0 : 0.001 + 0.999 * (t - 3.0) / 30.0;
}

static void test_slow_start(void)
{
  hs_progress_t p;
  FILE *f = start(&p, "", 0);
  for (int k = 1; k <= 330; k++) {
    fake_now_s = 0.1 * k;
    hs_progress_set_fraction(&p, slow_start_fraction(fake_now_s));
  }
  hs_progress_finish(&p, false);
  static char lines[512][256];
  int n = read_lines(f, lines, 512);
  CHECK(n >= 20);
  int etas = 0;
  for (int i = 0; i < n; i++) {
    double el = 0.0, eta = -1.0;
    const char *c = strstr(lines[i], "done, ");
    CHECK(c != NULL);
    if (!c)
      continue;
    sscanf(c + 6, "%lf", &el);
    const char *q = strstr(lines[i], "ETA ");
    if (!q)
      continue;
    sscanf(q + 4, "%lf", &eta);
    etas++;
    double truth = 33.0 - el;
    CHECK_MSG(eta <= 4.0 * truth + 0.5 && eta >= truth / 4.0 - 0.5, "ETA %.0f s at t = %.1f, truth %.1f s",
              eta, el, truth);
  }
  CHECK(etas >= 10);
  CHECK_CONTAINS(lines[n - 1], "100% done, 33.0 s elapsed");
  fclose(f);
}

int main(void)
{
  HS_RUN(test_steady);
  HS_RUN(test_slow_start);
  HS_TEST_END();
}
