/*
 * robust_fixture.h - set-up shared by the robustness tests
 * (test_robust_fault.c, test_robust_limits.c): a quiet error record and grid
 * options in one call. Header-only; nothing here allocates.
 */
#ifndef HS_ROBUST_FIXTURE_H
#define HS_ROBUST_FIXTURE_H

#include "hs_sim.h"

/* An empty error record that counts warnings without printing them: these
 * tests feed warning-prone input by design. */
static inline void robust_error_init(hs_error_t *err)
{
  hs_error_init(err);
  err->warn_fp = NULL;
}

/* Grid options for a tp x pp x dp grid with microbatches of `mb` samples and
 * a global batch of `global_batch` samples (0: one microbatch per replica);
 * every other field keeps its hs_grid_opts_init default. */
static inline hs_grid_opts_t robust_grid_opts(int32_t tp, int32_t pp, int32_t dp, int32_t mb,
                                              int64_t global_batch)
{
  hs_grid_opts_t o;
  hs_grid_opts_init(&o);
  o.tp = tp;
  o.pp = pp;
  o.dp = dp;
  o.microbatch_size = mb;
  o.global_batch = global_batch;
  return o;
}

#endif
