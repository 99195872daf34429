/*
 * test_trace_format.c - the trace writer's hand-made number formatting
 * (sim/trace.c, hs__trace_fmt_g6) against libc's printf "%.6g", the
 * independent truth: every link counter sample of a trace goes through it.
 * Random values over the whole range a utilisation takes (and beyond, where
 * the function hands over to printf), plus the edges: the decades, values
 * that round up into the next decade (0.99999951 -> "1", 999999.5 ->
 * "1e+06"), the 1e-4 switch to printf, zero, negatives, NaN and infinities,
 * and values exactly halfway between two 6-digit decimals (2^-k with more
 * than six digits, k/2^j), which printf rounds to even.
 */
#include "hs_test.h"
#include "trace.h"

#include <stdint.h>

static void check_one(double x)
{
  char got[32], want[32];
  hs__trace_fmt_g6(x, got);
  snprintf(want, sizeof want, "%.6g", x);
  CHECK_MSG(strcmp(got, want) == 0, "%.17g: \"%s\", printf \"%s\"", x, got, want);
}

/* xorshift64*: a fixed sequence, so a failure reproduces. */
static uint64_t next(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static void test_edges(void)
{
  static const double v[] = {
      0.0, -0.0, 1.0, 0.5, 0.25, 0.1, 0.01, 0.001, 0.0001, 1e-5, 9.9999e-5, 0.000099999951,
      0.00010000049, 0.99999949, 0.99999951, 0.9999995, 1.0000005, 9.9999949, 9.9999951,
      99999.949, 99999.951, 999999.4, 999999.5, 1e6, 1234567.0, 0.123456789, 0.246224,
      0.0796441, 0.106192, 1.5, 2.0 / 3.0, 1e-300, 1e300, -0.5, -1e-20, NAN, INFINITY, -INFINITY,
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    check_one(v[i]);
  for (int k = 1; k <= 40; k++) /* 2^-k, 3 x 2^-k: exact, many are ties */
    for (int j = 1; j <= 3; j += 2)
      for (int sh = 0; sh <= 20; sh += 4)
        check_one(ldexp((double)j, sh - k));
  for (int i = 1; i < 4096; i++) /* i/4096 and 1000 + i/4096: ties at 7 digits */
    check_one(i / 4096.0), check_one(1000.0 + i / 4096.0), check_one(0.001 * (1.0 + i / 4096.0));
  for (int e = -6; e <= 7; e++) /* every decade and its neighbours */
    for (int d = -2; d <= 2; d++)
      check_one(nextafter(pow(10.0, e), d < 0 ? 0.0 : INFINITY) * (1.0 + d * 1e-7));
}

static void test_random(void)
{
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 1000000; i++) {
    double u = (double)(next(&s) >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (i % 4) {
    case 0: check_one(u); break;                               /* utilisations */
    case 1: check_one(pow(10.0, -6.0 + 13.0 * u)); break;     /* every decade */
    case 2: check_one((double)(next(&s) % 1000000) / 1e6); break; /* short decimals */
    default: check_one((double)(next(&s) % 100000) * pow(10.0, (double)(next(&s) % 12) - 9.0));
    }
  }
}

int main(void)
{
  HS_RUN(test_edges);
  HS_RUN(test_random);
  HS_TEST_END();
}
