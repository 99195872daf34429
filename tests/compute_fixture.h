/*
 * compute_fixture.h - shared by the compute-model tests (test_compute_attn,
 * test_compute_shape): the made-up GPU their closed forms are written for,
 * and the bad-input checks of the GPU catalog and measurements loaders
 * (an error with exit code 2 whose message contains the expected text).
 */
#ifndef HS_COMPUTE_FIXTURE_H
#define HS_COMPUTE_FIXTURE_H

#include "hs_clusters.h"
#include "hs_test.h"
#include "hs_validate.h"

/* The closed forms' GPU: 300 TFLOP/s fp16/bf16 (20 fp32), GEMM eff_max 0.8
 * and half 1e10 FLOP, 2000 GB/s at mem_eff 0.75, 5 us launch; no
 * attention or shape terms (the tests add theirs). */
static inline void truth_gpu_base(hs_gpu_t *g, const char *name)
{
  memset(g, 0, sizeof *g);
  hs_strlcpy(g->name, name, sizeof g->name);
  g->mem_bw_GBps = 2000;
  g->peak_flops[HS_DTYPE_FP32] = 20e12;
  g->peak_flops[HS_DTYPE_FP16] = 300e12;
  g->peak_flops[HS_DTYPE_BF16] = 300e12;
  g->gemm_eff_max = 0.8;
  g->gemm_half_flops = 1e10;
  g->mem_eff = 0.75;
  g->launch_us = 5.0;
}

/* The shipped catalog overlaid with `json` as "g.json" must be refused
 * with exit code 2 and a message containing `needle`. */
static inline void expect_bad_gpu(const char *json, const char *needle)
{
  hs_gpu_catalog_t cat;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_gpu_catalog_init(&cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  hs_status_t st = hs_gpu_catalog_parse(json, "g.json", &cat, &err);
  CHECK_MSG(st != HS_OK && hs_status_exit_code(st) == 2, "accepted: %s", json);
  CHECK_CONTAINS(err.msg, needle);
  hs_gpu_catalog_destroy(&cat);
}

/* `text` as measurements file "m.json" must be refused with exit code 2
 * and a message containing `needle`. */
static inline void expect_bad_measurements(const char *text, const char *needle)
{
  hs_measurements_t ms;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_measurements_parse(text, "m.json", &ms, &err);
  CHECK_MSG(st != HS_OK && hs_status_exit_code(st) == 2, "accepted: %s", text);
  CHECK_CONTAINS(err.msg, needle);
  if (st == HS_OK)
    hs_measurements_destroy(&ms);
}

#endif /* HS_COMPUTE_FIXTURE_H */
