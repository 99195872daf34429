/*
 * gpu_json.c - reads GPU catalog entries (clusters/gpus.json and the inline
 * "gpus" of cluster files) with messages naming file, field path and value.
 *
 * File shape: either a JSON array of entries or an object whose "gpus" member
 * is that array (gpus.json uses the object form so it can carry a description
 * and source). An entry whose name is already in the catalog overrides only
 * the fields it gives; a new entry must give memory_GiB, mem_bw_GBps and
 * peak_tflops, and the rest takes the defaults documented in docs/clusters.md.
 * File units are the datasheet's (GiB, GB/s, TFLOP/s); hs_gpu_t holds bytes
 * and FLOP/s.
 */
#include "clusters_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defaults for new entries that omit the field (docs/clusters.md). */
#define GPU_DEFAULT_PCIE_GBPS 32.0        /* PCIe gen4 x16, per direction */
#define GPU_DEFAULT_GEMM_EFF_MAX 0.7
#define GPU_DEFAULT_HALF_PEAK_S 20e-6     /* gemm_half_flops = 20 us at peak */
#define GPU_GEMM_MEM_LATENCY_MAX_US 1e3   /* a skinny GEMM tail beyond 1 ms is not a kernel constant */
#define GPU_PEAK_TFLOPS_MIN 1e-6          /* 1 MFLOP/s: a nonzero peak below is an error */
#define GPU_DEFAULT_MEM_EFF 0.8
#define GPU_DEFAULT_LAUNCH_US 4.0

static const char *const gpu_known[] = {
    "name", "vendor", "memory_GiB", "mem_bw_GBps", "peak_tflops", "nvlink_GBps",
    "nvlink_bridge_only", "pcie_gen", "pcie_GBps", "tdp_w", "gemm_eff_max", "gemm_half_flops",
    "mem_eff", "launch_us", "gemm_out_k", "gemm_mem_latency_us", "gemm_sustained_eff",
    "gemm_eff_max_fp8", "gemm_half_flops_fp8", "attn_fwd_eff_max", "attn_fwd_half_seq",
    "attn_bwd_eff_max", "attn_bwd_half_seq", "calibrated", "price_ondemand_usd_h", "price_spot_usd_h",
    "price_source", "source", "notes", "calibration_source", "overlap_slowdown",
    "overlap_slowdown_source", NULL};

static const char *const dtype_keys[HS_DTYPE__COUNT] = {
    [HS_DTYPE_FP32] = "fp32", [HS_DTYPE_FP16] = "fp16", [HS_DTYPE_BF16] = "bf16", [HS_DTYPE_FP8] = "fp8"};

/* A bandwidth: positive, at most HS_BW_MAX_GBPS, at least HS_BW_MIN_GBPS. A
 * present value of 0 is allowed only when `zero_ok` (nvlink_GBps: none). */
static hs_status_t read_bw(const hs_jreader_t *r, const cJSON *o, const char *path, const char *key,
                           bool required, double def, bool zero_ok, double *out)
{
  hs_status_t st = hs_json_number(r, o, path, key, required, def,
                                  zero_ok ? HS_JNUM_NONNEG : HS_JNUM_POSITIVE, HS_BW_MAX_GBPS, out);
  if (st != HS_OK)
    return st;
  if (*out > 0.0 && *out < HS_BW_MIN_GBPS)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s%s%s: must be at least %g GB/s, got %.17g", r->file,
                        path, *path ? "." : "", key, HS_BW_MIN_GBPS, *out);
  return HS_OK;
}

/* overlap_slowdown: in [0, 1) (1 would halve compute beside every
 * collective: no published kernel-level figure comes near); a nonzero value
 * needs an "overlap_slowdown_source" string (every catalog figure carries
 * its source and date). */
static hs_status_t read_overlap_slowdown(const hs_jreader_t *r, const cJSON *e, const char *path,
                                         hs_gpu_t *g)
{
  double k = g->overlap_slowdown;
  hs_status_t st = hs_json_number(r, e, path, "overlap_slowdown", false, k, HS_JNUM_ANY, 1.0, &k);
  if (st != HS_OK)
    return st;
  if (!(k >= 0.0 && k < 1.0))
    return hs_error_set(r->err, HS_EINVAL, "%s: %s%soverlap_slowdown: must be in [0, 1), got %.17g",
                        r->file, path, *path ? "." : "", k);
  const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "overlap_slowdown_source");
  if (src && !cJSON_IsString(src))
    return hs_error_set(r->err, HS_EINVAL, "%s: %s%soverlap_slowdown_source: must be a string",
                        r->file, path, *path ? "." : "");
  if (cJSON_GetObjectItemCaseSensitive(e, "overlap_slowdown") && k > 0.0 && !src)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s%soverlap_slowdown: %.17g needs an "
                        "\"overlap_slowdown_source\" (the kernel-level measurement and its date)",
                        r->file, path, *path ? "." : "", k);
  g->overlap_slowdown = k;
  return HS_OK;
}

/* Optional free-text member: must be a string when present. */
static hs_status_t check_text(const hs_jreader_t *r, const cJSON *o, const char *path, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsString(v))
    return HS_OK;
  return hs_error_set(r->err, HS_EINVAL, "%s: %s.%s: must be a string", r->file, path, key);
}

static hs_status_t read_peaks(const hs_jreader_t *r, const cJSON *e, const char *path, bool is_new,
                              hs_gpu_t *g)
{
  hs_status_t st = HS_OK;
  const cJSON *pt = NULL;
  char ppath[256];
  HS_CHECK(hs_json_object(r, e, path, "peak_tflops", is_new, &pt));
  if (!pt)
    return HS_OK;
  hs_json_path(ppath, sizeof ppath, path, "peak_tflops", 0);
  static const char *const known[] = {"fp32", "fp16", "bf16", "fp8", NULL};
  hs_json_warn_unknown(r, pt, ppath, known);
  for (int d = 0; d < HS_DTYPE__COUNT; d++) {
    double tf = g->peak_flops[d] / 1e12;
    HS_CHECK(hs_json_number(r, pt, ppath, dtype_keys[d], false, tf, HS_JNUM_NONNEG, 1e6, &tf));
    /* 0 = unsupported; a subnormal rate would make kernel times infinite */
    if (tf != 0.0 && tf < GPU_PEAK_TFLOPS_MIN)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.%s: must be 0 (unsupported) or at least %g, got %g",
                           r->file, ppath, dtype_keys[d], GPU_PEAK_TFLOPS_MIN, tf));
    g->peak_flops[d] = tf * 1e12;
  }
  bool any = false;
  for (int d = 0; d < HS_DTYPE__COUNT; d++)
    any |= g->peak_flops[d] > 0.0;
  if (!any)
    st = hs_error_set(r->err, HS_EINVAL, "%s: %s: needs a positive rate for at least one of fp32, fp16, bf16, fp8",
                      r->file, ppath);
cleanup:
  return st;
}

static hs_status_t read_entry(const hs_jreader_t *r, const cJSON *e, const char *path,
                              const hs_gpu_t *base, hs_gpu_t *g)
{
  hs_status_t st = HS_OK;
  bool is_new = base == NULL;
  double v = 0.0;
  int64_t iv = 0;
  char name[HS_NAME_MAX];

  HS_CHECK(hs_json_string(r, e, path, "name", true, NULL, name, sizeof name));
  if (is_new) {
    memset(g, 0, sizeof(*g));
    hs_strlcpy(g->name, name, sizeof g->name);
    g->pcie_GBps = GPU_DEFAULT_PCIE_GBPS;
    g->gemm_eff_max = GPU_DEFAULT_GEMM_EFF_MAX;
    g->mem_eff = GPU_DEFAULT_MEM_EFF;
    g->launch_us = GPU_DEFAULT_LAUNCH_US;
  } else {
    *g = *base;
  }
  /* Strings go through a copy: hs_json_string's default must not alias out. */
  char vendor[sizeof g->vendor], psrc[sizeof g->price_source];
  hs_strlcpy(vendor, g->vendor, sizeof vendor);
  HS_CHECK(hs_json_string(r, e, path, "vendor", false, vendor, g->vendor, sizeof g->vendor));
  v = g->mem_bytes / HS_GIB;
  HS_CHECK(hs_json_number(r, e, path, "memory_GiB", is_new, v, HS_JNUM_POSITIVE, 1e6, &v));
  g->mem_bytes = v * HS_GIB;
  HS_CHECK(read_bw(r, e, path, "mem_bw_GBps", is_new, g->mem_bw_GBps, false, &g->mem_bw_GBps));
  HS_CHECK(read_peaks(r, e, path, is_new, g));
  HS_CHECK(read_bw(r, e, path, "nvlink_GBps", false, g->nvlink_GBps, true, &g->nvlink_GBps));
  HS_CHECK(hs_json_bool(r, e, path, "nvlink_bridge_only", false, g->nvlink_bridge_only,
                        &g->nvlink_bridge_only));
  /* pcie_GBps wins over pcie_gen; gen g x16 moves 2^(g+1) GB/s per direction
   * (gen3 16, gen4 32, gen5 64), the nominal figure. */
  HS_CHECK(hs_json_int(r, e, path, "pcie_gen", false, 0, 1, 7, &iv));
  if (iv > 0)
    g->pcie_GBps = ldexp(1.0, (int)iv + 1);
  HS_CHECK(read_bw(r, e, path, "pcie_GBps", false, g->pcie_GBps, false, &g->pcie_GBps));
  HS_CHECK(hs_json_number(r, e, path, "tdp_w", false, g->tdp_w, HS_JNUM_NONNEG, 1e5, &g->tdp_w));
  HS_CHECK(hs_json_number_in(r, e, path, "gemm_eff_max", false, g->gemm_eff_max, HS_EFF_MIN, 1.0,
                               &g->gemm_eff_max));
  if (is_new) {
    /* Half efficiency at the GEMM that takes 20 us at peak: small kernels do
     * not fill the GPU (docs/clusters.md). */
    double peak = hs_gpu_peak_flops(g, HS_DTYPE_BF16);
    g->gemm_half_flops = peak * GPU_DEFAULT_HALF_PEAK_S;
  }
  HS_CHECK(hs_json_number(r, e, path, "gemm_half_flops", false, g->gemm_half_flops, HS_JNUM_NONNEG,
                          1e18, &g->gemm_half_flops));
  HS_CHECK(hs_json_number_in(r, e, path, "mem_eff", false, g->mem_eff, HS_EFF_MIN, 1.0,
                               &g->mem_eff));
  HS_CHECK(hs_json_number(r, e, path, "launch_us", false, g->launch_us, HS_JNUM_NONNEG, 1e6,
                          &g->launch_us));
  HS_CHECK(hs_json_number(r, e, path, "gemm_out_k", false, g->gemm_out_k, HS_JNUM_NONNEG, 1e6,
                          &g->gemm_out_k));
  HS_CHECK(hs_json_number(r, e, path, "gemm_mem_latency_us", false, g->gemm_mem_latency_us,
                          HS_JNUM_NONNEG, GPU_GEMM_MEM_LATENCY_MAX_US, &g->gemm_mem_latency_us));
  if (cJSON_GetObjectItemCaseSensitive(e, "gemm_sustained_eff"))
    HS_CHECK(hs_json_number_in(r, e, path, "gemm_sustained_eff", true, 0.0, HS_EFF_MIN, 1.0,
                               &g->gemm_sustained_eff));
  {
    /* the fp8 GEMM curve: both fields or neither (absent: 0, the bf16 curve) */
    bool has_eff = cJSON_GetObjectItemCaseSensitive(e, "gemm_eff_max_fp8") != NULL;
    bool has_half = cJSON_GetObjectItemCaseSensitive(e, "gemm_half_flops_fp8") != NULL;
    if (has_eff)
      HS_CHECK(hs_json_number_in(r, e, path, "gemm_eff_max_fp8", true, 0.0, HS_EFF_MIN, 1.0,
                                 &g->gemm_eff_max_fp8));
    if (has_half)
      HS_CHECK(hs_json_number(r, e, path, "gemm_half_flops_fp8", true, 0.0, HS_JNUM_NONNEG, 1e18,
                              &g->gemm_half_flops_fp8));
    if (has_eff != has_half)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.%s: given (%g) without %s: the fp8 GEMM "
                           "curve needs both", r->file, path,
                           has_eff ? "gemm_eff_max_fp8" : "gemm_half_flops_fp8",
                           has_eff ? g->gemm_eff_max_fp8 : g->gemm_half_flops_fp8,
                           has_eff ? "gemm_half_flops_fp8" : "gemm_eff_max_fp8"));
  }
  HS_CHECK(hs_gpu_attn_read(r, e, path, g));
  HS_CHECK(hs_json_bool(r, e, path, "calibrated", false, g->calibrated, &g->calibrated));
  /* A catalog entry that says calibrated names where its figures come from
   * (clusters/calibration/<GPU>.json); a profile applied at run time
   * (hs_profile_apply_file) sets the flag without this field. */
  HS_CHECK(check_text(r, e, path, "calibration_source"));
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "calibrated")) &&
      !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "calibration_source")))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.calibrated: true needs a \"calibration_source\" "
                        "(the points the figures were fitted on)", r->file, path));
  HS_CHECK(hs_json_number(r, e, path, "price_ondemand_usd_h", false, g->price_ondemand_usd_h,
                          HS_JNUM_NONNEG, 1e5, &g->price_ondemand_usd_h));
  HS_CHECK(hs_json_number(r, e, path, "price_spot_usd_h", false, g->price_spot_usd_h, HS_JNUM_NONNEG,
                          1e5, &g->price_spot_usd_h));
  hs_strlcpy(psrc, g->price_source, sizeof psrc);
  HS_CHECK(hs_json_string(r, e, path, "price_source", false, psrc, g->price_source,
                          sizeof g->price_source));
  HS_CHECK(check_text(r, e, path, "source"));
  HS_CHECK(check_text(r, e, path, "notes"));
  HS_CHECK(read_overlap_slowdown(r, e, path, g));
  hs_json_warn_unknown(r, e, path, gpu_known);
cleanup:
  return st;
}

hs_status_t hs_gpu_attn_read(const hs_jreader_t *r, const cJSON *e, const char *path, hs_gpu_t *g)
{
  static const char *const keys[4] = {"attn_fwd_eff_max", "attn_fwd_half_seq", "attn_bwd_eff_max",
                                      "attn_bwd_half_seq"};
  double *vals[4] = {&g->attn_fwd_eff_max, &g->attn_fwd_half_seq, &g->attn_bwd_eff_max,
                     &g->attn_bwd_half_seq};
  hs_status_t st = HS_OK;
  int present = 0, first = -1, missing = -1;
  for (int i = 0; i < 4; i++) {
    if (!cJSON_GetObjectItemCaseSensitive(e, keys[i])) {
      missing = missing < 0 ? i : missing;
      continue;
    }
    present++;
    first = first < 0 ? i : first;
    if (i % 2 == 0)
      HS_CHECK(hs_json_number_in(r, e, path, keys[i], false, *vals[i], HS_EFF_MIN, 1.0, vals[i]));
    else
      HS_CHECK(hs_json_number(r, e, path, keys[i], false, *vals[i], HS_JNUM_NONNEG, 1e7, vals[i]));
  }
  if (present > 0 && present < 4)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.%s: given (%g) without %s: the fused attention "
                         "model needs all four attn_* fields", r->file, path, keys[first],
                         *vals[first], keys[missing]));
cleanup:
  return st;
}

bool hs_gpu_attn_calibrated(const hs_gpu_t *g)
{
  return g->attn_fwd_eff_max > 0 && g->attn_bwd_eff_max > 0;
}

hs_status_t hs__gpu_catalog_read(const hs_jreader_t *r, const cJSON *arr, const char *path,
                                 hs_gpu_catalog_t *cat)
{
  hs_status_t st = HS_OK;
  char epath[256];
  size_t cap = cat->n;
  if (!cJSON_IsArray(arr))
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: must be an array of GPU entries", r->file,
                        *path ? path : "(top level)");
  int count = cJSON_GetArraySize(arr);
  if ((size_t)count + cat->n > HS_GPU_CATALOG_MAX)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s: at most %d GPU entries, got %d", r->file,
                        *path ? path : "(top level)", HS_GPU_CATALOG_MAX, count);
  int i = 0;
  for (const cJSON *e = arr->child; e; e = e->next, i++) {
    hs_gpu_t g;
    hs_json_path(epath, sizeof epath, path, NULL, i);
    HS_CHECK(hs_json_expect_object(r, e, epath));
    /* The same name twice in one array is a mistake, not an override; a name
     * already in the catalog before this array is an override. */
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(e, "name");
    const hs_gpu_t *base = NULL;
    if (cJSON_IsString(jn)) {
      int j = 0;
      for (const cJSON *p = arr->child; p != e; p = p->next, j++) {
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(p, "name");
        if (cJSON_IsString(pn) && strcmp(pn->valuestring, jn->valuestring) == 0)
          HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.name: duplicate GPU \"%.64s\" (also %s[%d])",
                               r->file, epath, jn->valuestring, path, j));
      }
      base = hs_gpu_catalog_find(cat, jn->valuestring);
    }
    HS_CHECK(read_entry(r, e, epath, base, &g));
    if (base) {
      cat->gpus[base - cat->gpus] = g;
    } else {
      void *data = cat->gpus;
      if (hs_reserve(&data, &cap, cat->n + 1, sizeof(hs_gpu_t)) != HS_OK)
        HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file));
      cat->gpus = data;
      cat->gpus[cat->n++] = g;
    }
  }
cleanup:
  return st;
}

static hs_status_t parse_root(const cJSON *root, const char *file, hs_gpu_catalog_t *cat, hs_error_t *err)
{
  hs_jreader_t r = {file, err};
  if (cJSON_IsArray(root))
    return hs__gpu_catalog_read(&r, root, "", cat);
  hs_status_t st = HS_OK;
  const cJSON *arr = NULL;
  HS_CHECK(hs_json_expect_object(&r, root, ""));
  HS_CHECK(hs_json_array(&r, root, "", "gpus", true, &arr, NULL));
  HS_CHECK(check_text(&r, root, "(top level)", "description"));
  HS_CHECK(check_text(&r, root, "(top level)", "source"));
  static const char *const known[] = {"description", "source", "gpus", NULL};
  hs_json_warn_unknown(&r, root, "", known);
  HS_CHECK(hs__gpu_catalog_read(&r, arr, "gpus", cat));
cleanup:
  return st;
}

hs_status_t hs_gpu_catalog_parse(const char *text, const char *file, hs_gpu_catalog_t *cat,
                                 hs_error_t *err)
{
  cJSON *root = NULL;
  hs_status_t st = HS_OK;
  if (!file)
    file = "(gpus)";
  HS_CHECK(hs_json_parse(text, file, &root, err));
  HS_CHECK(parse_root(root, file, cat, err));
cleanup:
  hs_json_free(root);
  return st;
}

hs_status_t hs_gpu_catalog_load(const char *path, hs_gpu_catalog_t *out, hs_error_t *err)
{
  char buf[4096];
  cJSON *root = NULL;
  hs_status_t st = HS_OK;
  if (!path) {
    snprintf(buf, sizeof buf, "%s/clusters/gpus.json", hs_data_dir());
    path = buf;
  }
  HS_CHECK(hs_json_load_file(path, &root, err));
  HS_CHECK(parse_root(root, hs_basename(path), out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs_gpu_catalog_destroy(out);
  return st;
}
