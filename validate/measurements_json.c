/*
 * measurements_json.c - microbenchmark points (measurements.json) and the
 * fitted profile (profile.json, the format sim/profile_json.c reads).
 *
 *   {"gpu": "H100-SXM5-80GB", "backend": "cuda", "device": "...",
 *    "peak_tflops": {"fp32": 67, "bf16": 989, ...}, "mem_bw_GBps": 3350,
 *    "points": [{"kind": "gemm", "dtype": "bf16", "m": 4096, "n": 4096, "k": 4096,
 *                "flops": 1.37e11, "s": 2.1e-4},
 *               {"kind": "mem", "bytes": 1e9, "s": 3.6e-4},
 *               {"kind": "p2p", "bytes": 1e6, "s": 1.1e-5, "ranks": 2}]}
 *
 * A GEMM point without "flops" gets 2·m·n·k.
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 1000000

cJSON *hs_measurements_to_json(const hs_measurements_t *m)
{
  hs_json_oom_clear(); /* members cJSON drops when out of memory fail the whole tree */
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "gpu", m->gpu);
  cJSON_AddStringToObject(j, "backend", m->backend);
  cJSON_AddStringToObject(j, "device", m->device);
  cJSON *pk = cJSON_AddObjectToObject(j, "peak_tflops");
  for (int d = 0; pk && d < HS_DTYPE__COUNT; d++)
    cJSON_AddNumberToObject(pk, hs_dtype_name((hs_dtype_t)d), m->peak_flops[d] / 1e12);
  cJSON_AddNumberToObject(j, "mem_bw_GBps", m->mem_bw_GBps);
  cJSON *arr = cJSON_AddArrayToObject(j, "points");
  for (int32_t i = 0; arr && i < m->n; i++) {
    const hs_mb_point_t *p = &m->p[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddStringToObject(o, "kind", hs_mb_kind_name(p->kind));
    if (p->kind == HS_MB_GEMM) {
      cJSON_AddStringToObject(o, "dtype", hs_dtype_name(p->dtype));
      cJSON_AddNumberToObject(o, "m", (double)p->m);
      cJSON_AddNumberToObject(o, "n", (double)p->n);
      cJSON_AddNumberToObject(o, "k", (double)p->k);
      cJSON_AddNumberToObject(o, "flops", p->flops);
    } else {
      cJSON_AddNumberToObject(o, "bytes", p->bytes);
      if (p->ranks > 0)
        cJSON_AddNumberToObject(o, "ranks", p->ranks);
    }
    cJSON_AddNumberToObject(o, "s", p->s);
    cJSON_AddItemToArray(arr, o);
  }
  return hs_json_finish(j);
}

hs_status_t hs_measurements_parse(const char *text, const char *file, hs_measurements_t *out,
                                  hs_error_t *err)
{
  static const char *const known[] = {"gpu", "backend", "device", "peak_tflops", "mem_bw_GBps",
                                      "points", "description", NULL};
  static const char *const kpt[] = {"kind", "dtype", "m", "n", "k", "flops", "bytes", "ranks", "s",
                                    NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_measurements_init(out);
  if (!file)
    file = "measurements.json";
  hs_jreader_t r = {file, err};
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  HS_CHECK(hs_json_string(&r, j, "", "gpu", true, "", out->gpu, sizeof out->gpu));
  HS_CHECK(hs_json_string(&r, j, "", "backend", false, "", out->backend, sizeof out->backend));
  HS_CHECK(hs_json_string(&r, j, "", "device", false, "", out->device, sizeof out->device));
  const cJSON *pk = NULL;
  HS_CHECK(hs_json_object(&r, j, "", "peak_tflops", true, &pk));
  for (int d = 0; d < HS_DTYPE__COUNT; d++) {
    double v = 0;
    HS_CHECK(hs_json_number(&r, pk, "peak_tflops", hs_dtype_name((hs_dtype_t)d), false, 0,
                            HS_JNUM_NONNEG, 1e9, &v));
    out->peak_flops[d] = v * 1e12;
  }
  HS_CHECK(hs_json_number(&r, j, "", "mem_bw_GBps", true, 0, HS_JNUM_POSITIVE, 1e9,
                          &out->mem_bw_GBps));
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "points", true, &arr, &n));
  if (n > MAX_POINTS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: points: %d entries (max %d)", file, n, MAX_POINTS));
  int k = 0;
  for (const cJSON *e = arr->child; e; e = e->next, k++) {
    char p[48], kind[16], dt[16];
    hs_json_path(p, sizeof p, "points", NULL, k);
    HS_CHECK(hs_json_expect_object(&r, e, p));
    hs_json_warn_unknown(&r, e, p, kpt);
    hs_mb_point_t pt;
    memset(&pt, 0, sizeof pt);
    HS_CHECK(hs_json_string(&r, e, p, "kind", true, "", kind, sizeof kind));
    bool found = false;
    for (int q = 0; q <= HS_MB_ALLREDUCE; q++)
      if (strcmp(kind, hs_mb_kind_name((hs_mb_kind_t)q)) == 0) {
        pt.kind = (hs_mb_kind_t)q;
        found = true;
      }
    if (!found)
      HS_FAIL(hs_error_set(err, HS_EINVAL,
                           "%s: %s.kind: must be gemm, mem, p2p, h2d or allreduce, got \"%s\"", file,
                           p, kind));
    HS_CHECK(hs_json_number(&r, e, p, "s", true, 0, HS_JNUM_POSITIVE, 1e6, &pt.s));
    if (pt.kind == HS_MB_GEMM) {
      HS_CHECK(hs_json_string(&r, e, p, "dtype", false, "fp32", dt, sizeof dt));
      if (hs_dtype_parse(dt, &pt.dtype) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.dtype: unknown dtype \"%s\"", file, p, dt));
      HS_CHECK(hs_json_int(&r, e, p, "m", true, 1, 1, INT64_C(1) << 32, &pt.m));
      HS_CHECK(hs_json_int(&r, e, p, "n", true, 1, 1, INT64_C(1) << 32, &pt.n));
      HS_CHECK(hs_json_int(&r, e, p, "k", true, 1, 1, INT64_C(1) << 32, &pt.k));
      HS_CHECK(hs_json_number(&r, e, p, "flops", false, 2.0 * (double)pt.m * (double)pt.n * (double)pt.k,
                              HS_JNUM_POSITIVE, 1e30, &pt.flops));
    } else {
      HS_CHECK(hs_json_number(&r, e, p, "bytes", true, 0, HS_JNUM_POSITIVE, 1e18, &pt.bytes));
      int64_t ranks = 0;
      HS_CHECK(hs_json_int(&r, e, p, "ranks", false, 0, 0, 1 << 24, &ranks));
      pt.ranks = (int32_t)ranks;
    }
    if (hs_measurements_add(out, &pt) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  }
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_measurements_destroy(out);
  return st;
}

hs_status_t hs_measurements_load(const char *path, hs_measurements_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_measurements_init(out);
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st == HS_OK)
    st = hs_measurements_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

cJSON *hs_profile_to_json(const hs_measurements_t *ms, const hs_fit_t *f)
{
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  char src[256];
  snprintf(src, sizeof src, "hetsim calibrate (%s backend%s%s)", ms->backend[0] ? ms->backend : "?",
           ms->device[0] ? ": " : "", ms->device);
  cJSON_AddStringToObject(j, "source", src);
  cJSON *arr = cJSON_AddArrayToObject(j, "gpus");
  cJSON *g = cJSON_CreateObject();
  if (!arr || !g) {
    cJSON_Delete(g);
    cJSON_Delete(j);
    return NULL;
  }
  cJSON_AddItemToArray(arr, g);
  cJSON_AddStringToObject(g, "name", ms->gpu);
  cJSON_AddNumberToObject(g, "gemm_eff_max", f->gemm_eff_max);
  cJSON_AddNumberToObject(g, "gemm_half_flops", f->gemm_half_flops);
  cJSON_AddNumberToObject(g, "mem_eff", f->mem_eff);
  cJSON_AddNumberToObject(g, "launch_us", f->launch_us);
  cJSON *fit = cJSON_AddObjectToObject(g, "fit");
  if (fit) {
    cJSON_AddStringToObject(fit, "gemm_dtype", hs_dtype_name(f->dtype));
    cJSON_AddNumberToObject(fit, "gemm_points", f->n_gemm);
    cJSON_AddNumberToObject(fit, "gemm_r2", f->gemm_r2);
    cJSON_AddNumberToObject(fit, "gemm_median_rel_err", f->gemm_median_rel_err);
    cJSON_AddNumberToObject(fit, "gemm_max_rel_err", f->gemm_max_rel_err);
    cJSON_AddNumberToObject(fit, "mem_points", f->n_mem);
    cJSON_AddNumberToObject(fit, "mem_r2", f->mem_r2);
    cJSON_AddNumberToObject(fit, "mem_median_rel_err", f->mem_median_rel_err);
    cJSON_AddNumberToObject(fit, "mem_max_rel_err", f->mem_max_rel_err);
    cJSON_AddBoolToObject(fit, "clamped", f->clamped);
    if (f->n_p2p >= 2) {
      cJSON_AddNumberToObject(fit, "p2p_points", f->n_p2p);
      cJSON_AddNumberToObject(fit, "p2p_latency_us", f->p2p_latency_us);
      cJSON_AddNumberToObject(fit, "p2p_GBps", f->p2p_GBps);
      cJSON_AddNumberToObject(fit, "p2p_r2", f->p2p_r2);
      cJSON_AddNumberToObject(fit, "p2p_median_rel_err", f->p2p_median_rel_err);
    }
  }
  return j;
}
