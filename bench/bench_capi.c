/*
 * bench_capi.c - the cost of one simulation through the flat C API
 * (capi/hetsim.h), the floor under the Python package's simulate(): the
 * model and cluster are loaded once, then each call is
 *   grid:      hs_api_plan_grid + hs_api_simulate + the two frees, what
 *              hetsim.simulate(m, c, tp=..., pp=...) does in C;
 *   simulate:  hs_api_simulate + hs_api_report_free on a plan made once.
 * Prints microseconds per call for each: the fastest of 5 batches, the one
 * least disturbed by other work on a shared machine.
 *
 *   bench_capi [model] [cluster] [tp] [pp] [calls per batch]
 *   (defaults: gpt3-1.3b dgx-a100-1node 2 2 2000)
 */
#include "hetsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  const char *model = argc > 1 ? argv[1] : "gpt3-1.3b";
  const char *cluster = argc > 2 ? argv[2] : "dgx-a100-1node";
  int tp = argc > 3 ? atoi(argv[3]) : 2, pp = argc > 4 ? atoi(argv[4]) : 2;
  int n = argc > 5 ? atoi(argv[5]) : 2000;
  if (n < 1 || tp < 1 || pp < 1) {
    fprintf(stderr, "usage: bench_capi [model] [cluster] [tp] [pp] [calls per batch]\n");
    return 2;
  }
  hs_api_error_t e;
  hs_api_model_t *m = hs_api_model_load(model, 0, &e);
  hs_api_cluster_t *c = m ? hs_api_cluster_load(cluster, NULL, &e) : NULL;
  char opts[128];
  snprintf(opts, sizeof opts, "{\"tp\": %d, \"pp\": %d}", tp, pp);
  hs_api_plan_t *p = c ? hs_api_plan_grid(m, c, opts, &e) : NULL;
  if (!p) {
    fprintf(stderr, "bench_capi: %s\n", e.message);
    return 2;
  }
  double grid_us[5], sim_us[5];
  double t_iter = 0.0;
  for (int b = 0; b < 5; b++) {
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
      hs_api_plan_t *q = hs_api_plan_grid(m, c, opts, &e);
      hs_api_report_t *r = q ? hs_api_simulate(m, c, q, NULL, &e) : NULL;
      if (!r) {
        fprintf(stderr, "bench_capi: %s\n", e.message);
        return 1;
      }
      t_iter = hs_api_report_iteration_time_s(r);
      hs_api_report_free(r);
      hs_api_plan_free(q);
    }
    double t1 = now_s();
    for (int i = 0; i < n; i++)
      hs_api_report_free(hs_api_simulate(m, c, p, NULL, &e));
    double t2 = now_s();
    grid_us[b] = (t1 - t0) / n * 1e6;
    sim_us[b] = (t2 - t1) / n * 1e6;
  }
  qsort(grid_us, 5, sizeof *grid_us, cmp_double);
  qsort(sim_us, 5, sizeof *sim_us, cmp_double);
  printf("bench_capi: %s on %s, %s: iteration %.6f s simulated\n", model, cluster,
         hs_api_plan_summary(p), t_iter);
  printf("grid+simulate_us %.2f\n", grid_us[0]);
  printf("simulate_us %.2f\n", sim_us[0]);
  hs_api_plan_free(p);
  hs_api_cluster_free(c);
  hs_api_model_free(m);
  return 0;
}
