/*
 * test_calibration_catalog.c - the GPU catalog's calibrated figures are the
 * fit of the published points kept in clusters/calibration/, and only those;
 * the fitted figures reproduce the stored measurements and agree with
 * published figures the fit never saw.
 *
 * - For every clusters/calibration/<GPU>.json: refit with hs_calibrate_fit
 *   (bf16 GEMMs, as scripts/calibrate_catalog.py runs `hetsim calibrate`)
 *   and check that the catalog entry says "calibrated" and holds the fitted
 *   value of each parameter the file "applies" (relative 1e-9: the script
 *   writes the fit's doubles). "applies" must include gemm_eff_max. Every
 *   catalog entry that says calibrated must have a file. Each file names a
 *   source (repo@commit path or URL, date) for every point.
 * - Independently of the fitting code, the catalog's figures put into the
 *   compute model's formulas (docs/clusters.md) reproduce the stored
 *   points: a "line" GEMM sweep within a median 10% and a worst 40% per
 *   point (H100: 6.0% and 33%, the worst a 512x256x4096 GEMM that a model
 *   in FLOPs alone cannot tell from a square one); a "max" figure exactly
 *   (the catalog's peak x efficiency is the best rate of the points).
 * - Cross-GPU ratios against the published maximum-achievable-matmul
 *   (MAMF) figures: the A100's and MI300X's efficiencies come from MAMF,
 *   the H100's from OpenXLA's GEMM table; the asymptotic rates must stand in
 *   the ratio of the MAMF figures within 2% (the H100's MAMF, 794.5
 *   TFLOP/s, is not in any fit).
 * - The GEMM sweeps of other GPUs (torch-performance-test-data issues) against
 *   published figures of the same compute that no fit uses (H20, H100 PCIe,
 *   V100); derived entries (V100-SXM2-32GB, H800) equal their
 *   sources; the dtype each sweep is fitted at (P100 fp32, V100 fp16).
 * - A100 PCIe (MAMF) against issue #108's A100-PCIE-40GB sweep, which no
 *   fit uses; MI250X's package efficiency is the published per-GCD one;
 *   the BabelStream copy rates behind A100-SXM4-80GB's and MI300X's mem_eff.
 * - Every uncalibrated entry says why in its "notes".
 * - Third pass: RTX 4090 against another 4090's best rate and copy rate.
 * - Bad input for the "gemm_fit"/"mem_fit" fields and the fits they select.
 * - Sixth pass: the H100's and A100's asymptotes against their sustained
 *   (10,000-warmup) cuBLASLt figures; the H100 takes no clock derate.
 */
#include "hs_test.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 64

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The stored points against the catalog entry g through the model's own
 * formulas (written out here, not taken from validate/ or sim/). */
static void check_points_reproduced(const hs_measurements_t *ms, const hs_gpu_t *g, const char *file,
                                    hs_dtype_t dt)
{
  uint32_t a = ms->applies ? ms->applies : HS_FIT_ALL;
  double peak = hs_gpu_peak_flops(g, dt);
  double rel[4096];
  int n = 0;
  double best_gemm = 0, best_mem = 0;
  for (int32_t i = 0; i < ms->n; i++) {
    const hs_mb_point_t *p = &ms->p[i];
    if (p->kind == HS_MB_GEMM && p->dtype == dt) {
      best_gemm = fmax(best_gemm, p->flops / p->s);
      if (!ms->gemm_fit_max && n < 4096) {
        /* "shape": 2 gemm_out_k per output element, out = flops / 2k */
        double extra = ms->gemm_fit_shape ? g->gemm_out_k * p->flops / (double)p->k : 0.0;
        double t = g->launch_us * 1e-6 + (p->flops + g->gemm_half_flops + extra) / (peak * g->gemm_eff_max);
        rel[n++] = fabs(t - p->s) / p->s;
      }
    } else if (p->kind == HS_MB_MEM) {
      best_mem = fmax(best_mem, p->bytes / p->s);
    }
  }
  if (ms->gemm_fit_max) {
    /* the asymptote is the best published rate */
    CHECK_MSG(best_gemm > 0, "%s: no %s GEMM point", file, hs_dtype_name(dt));
    CHECK_REL(peak * g->gemm_eff_max, best_gemm, 1e-9);
  } else if (a & HS_FIT_GEMM_HALF_FLOPS) {
    CHECK_MSG(n >= 2, "%s: a GEMM line needs >= 2 points", file);
    qsort(rel, (size_t)n, sizeof *rel, cmp_dbl);
    double med = (n % 2) ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2]);
    CHECK_MSG(med <= 0.10, "%s: GEMM median error %.1f%% > 10%%", file, 100 * med);
    /* P100 PCIe (issue #33): DeepBench's M = 35 fp32 GEMMs fill 35 of each
     * tile's rows and run up to 2.6x slower than the FLOP line (61%), which
     * the line cannot follow (docs/clusters.md, "Skinny GEMMs") */
    double worst = strcmp(g->name, "P100-PCIe-16GB") == 0 ? 0.65 : 0.40;
    CHECK_MSG(rel[n - 1] <= worst, "%s: GEMM worst error %.1f%% > %.0f%%", file, 100 * rel[n - 1],
              100 * worst);
    fprintf(stderr, "  %s: %d GEMMs reproduced, median %.1f%%, worst %.1f%%\n", g->name, n,
            100 * med, 100 * rel[n - 1]);
  }
  if (ms->mem_fit_max && (a & HS_FIT_MEM_EFF))
    CHECK_REL(g->mem_bw_GBps * 1e9 * g->mem_eff, best_mem, 1e-9);
  if (ms->mem_eff_source && (a & HS_FIT_MEM_EFF)) {
    /* the rate is the best of the named source's copies, not of the sweep */
    double best_src = 0;
    for (int32_t i = 0; i < ms->n; i++)
      if (ms->p[i].kind == HS_MB_MEM && ms->p[i].source == ms->mem_eff_source)
        best_src = fmax(best_src, ms->p[i].bytes / ms->p[i].s);
    CHECK_REL(g->mem_bw_GBps * 1e9 * g->mem_eff, best_src, 1e-9);
  }
  /* fused attention: the catalog's rate curve, bf16 peak x eff_max x s / (s
   * + half_seq), against every published rate of the mask it was fitted on
   * (causal forward where the file has causal forward points, else
   * non-causal; likewise backward), within 5% */
  bool causal_pts[2] = {false, false};
  int n_dir[2] = {0, 0};
  for (int32_t i = 0; i < ms->n; i++)
    if (ms->p[i].kind == HS_MB_ATTN && ms->p[i].causal && n_dir[ms->p[i].bwd]++ >= 1)
      causal_pts[ms->p[i].bwd] = true;
  double bf16 = hs_gpu_peak_flops(g, HS_DTYPE_BF16);
  for (int32_t i = 0; i < ms->n; i++) {
    const hs_mb_point_t *p = &ms->p[i];
    if (p->kind != HS_MB_ATTN || p->causal != causal_pts[p->bwd])
      continue;
    double emax = p->bwd ? g->attn_bwd_eff_max : g->attn_fwd_eff_max;
    double half = p->bwd ? g->attn_bwd_half_seq : g->attn_fwd_half_seq;
    double seq = (double)p->m, rate = bf16 * emax * seq / (seq + half);
    CHECK_MSG(fabs(rate - 1e12 * p->tflops) <= 0.05 * 1e12 * p->tflops,
              "%s: attn %s seq %g: catalog %.1f TFLOP/s, published %.1f", file,
              p->bwd ? "bwd" : "fwd", seq, rate / 1e12, p->tflops);
  }
}

static void test_catalog_matches_fit(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  memset(&cat, 0, sizeof cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/clusters/calibration", hs_data_dir());
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  char *names[MAX_FILES];
  int nf = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n > 5 && strcmp(e->d_name + n - 5, ".json") == 0 && nf < MAX_FILES)
      names[nf++] = strdup(e->d_name);
  }
  if (d)
    closedir(d);
  qsort(names, (size_t)nf, sizeof *names, cmp_str);
  /* A100 SXM4 40/80 GB, H100, H200 (derived), MI300X; A10G, H100-PCIe,
   * H20, H800 (derived), L4, P100 PCIe/SXM2, V100-SXM2 16 GB and 32 GB
   * (derived); A100 PCIe 40/80 GB (MAMF), MI250X (MAMF, derived package) */
  CHECK(nf >= 18); /* + RTX 4090 (third pass) */
  bool fitted[256] = {false};
  for (int i = 0; i < nf; i++) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    hs_measurements_t ms;
    hs_fit_t fit;
    CHECK_MSG(hs_measurements_load(path, &ms, &err) == HS_OK, "%s: %s", path, err.msg);
    /* the file is named after its GPU, and every point has a source */
    char want[HS_NAME_MAX + 8];
    snprintf(want, sizeof want, "%s.json", ms.gpu);
    CHECK_MSG(strcmp(want, names[i]) == 0, "%s describes %s", names[i], ms.gpu);
    CHECK(ms.n_sources >= 1 && ms.retrieved[0]);
    for (int32_t p = 0; p < ms.n; p++)
      CHECK_MSG(ms.p[p].source > 0, "%s: points[%d] has no source", names[i], p);
    uint32_t a = ms.applies ? ms.applies : HS_FIT_ALL;
    CHECK_MSG(a & HS_FIT_GEMM_EFF_MAX, "%s: applies lacks gemm_eff_max", names[i]);
    CHECK_MSG(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &fit, &err) == HS_OK, "%s: %s", names[i], err.msg);
    CHECK(!fit.clamped);
    CHECK_MSG((a & fit.fitted) == a, "%s: applies names a parameter the points do not determine",
              names[i]);
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, ms.gpu);
    CHECK_MSG(g != NULL, "%s: %s not in the catalog", names[i], ms.gpu);
    if (g) {
      fitted[g - cat.gpus] = true;
      CHECK_MSG(g->calibrated, "%s is fitted by %s but not marked calibrated", g->name, names[i]);
      /* the file's peaks are the catalog's: the efficiencies are relative to them
       * (bf16, or the dtype the fit fell back to where the GPU has no bf16) */
      CHECK_REL(ms.peak_flops[HS_DTYPE_BF16], g->peak_flops[HS_DTYPE_BF16], 1e-12);
      CHECK_REL(ms.peak_flops[fit.dtype], g->peak_flops[fit.dtype], 1e-12);
      CHECK_REL(ms.mem_bw_GBps, g->mem_bw_GBps, 1e-12);
      if (a & HS_FIT_GEMM_EFF_MAX)
        CHECK_REL(g->gemm_eff_max, fit.gemm_eff_max, 1e-9);
      if (a & HS_FIT_GEMM_HALF_FLOPS)
        CHECK_REL(g->gemm_half_flops, fit.gemm_half_flops, 1e-9);
      if (a & HS_FIT_MEM_EFF)
        CHECK_REL(g->mem_eff, fit.mem_eff, 1e-9);
      if (a & HS_FIT_LAUNCH_US)
        CHECK_REL(g->launch_us, fit.launch_us, 1e-9);
      if (a & HS_FIT_GEMM_OUT_K)
        CHECK_REL(g->gemm_out_k, fit.gemm_out_k, 1e-9);
      else
        CHECK_MSG(g->gemm_out_k == 0, "%s: gemm_out_k without a \"shape\" fit", g->name);
      if (fit.fitted & HS_FIT_ATTN) {
        CHECK_REL(g->attn_fwd_eff_max, fit.attn_fwd_eff_max, 1e-9);
        CHECK_REL(g->attn_fwd_half_seq, fit.attn_fwd_half_seq, 1e-9);
        CHECK_REL(g->attn_bwd_eff_max, fit.attn_bwd_eff_max, 1e-9);
        CHECK_REL(g->attn_bwd_half_seq, fit.attn_bwd_half_seq, 1e-9);
      } else {
        CHECK_MSG(!hs_gpu_attn_calibrated(g) && g->attn_fwd_half_seq == 0 && g->attn_bwd_half_seq == 0,
                  "%s: attention fields without \"attn\" points", g->name);
      }
      /* the fp8 GEMM curve is the fit of the file's fp8 GEMM points, when
       * it has 2 or more (scripts/calibrate_catalog.py), and absent otherwise */
      int32_t n_fp8 = 0;
      for (int32_t p = 0; p < ms.n; p++)
        n_fp8 += ms.p[p].kind == HS_MB_GEMM && ms.p[p].dtype == HS_DTYPE_FP8;
      if (n_fp8 >= 2) {
        hs_fit_t f8;
        CHECK_MSG(hs_calibrate_fit(&ms, HS_DTYPE_FP8, &f8, &err) == HS_OK, "%s: %s", names[i], err.msg);
        CHECK(f8.dtype == HS_DTYPE_FP8 && !f8.clamped && f8.n_gemm == n_fp8);
        CHECK_REL(ms.peak_flops[HS_DTYPE_FP8], g->peak_flops[HS_DTYPE_FP8], 1e-12);
        CHECK_REL(g->gemm_eff_max_fp8, f8.gemm_eff_max, 1e-9);
        CHECK_REL(g->gemm_half_flops_fp8, f8.gemm_half_flops, 1e-9);
      } else {
        CHECK_MSG(g->gemm_eff_max_fp8 == 0 && g->gemm_half_flops_fp8 == 0,
                  "%s: an fp8 GEMM curve without fp8 GEMM points", g->name);
      }
      check_points_reproduced(&ms, g, names[i], fit.dtype);
      fprintf(stderr, "  %s: gemm_eff_max %.4f gemm_half_flops %.4g mem_eff %.3f launch_us %.3f "
              "(gemm %s %s, %d points; mem %s, %d points)\n", g->name, g->gemm_eff_max,
              g->gemm_half_flops, g->mem_eff, g->launch_us, hs_dtype_name(fit.dtype),
              ms.gemm_fit_max ? "max" : ms.gemm_fit_shape ? "shape" : "line", fit.n_gemm, ms.mem_fit_max ? "max" : "line", fit.n_mem);
    }
    hs_measurements_destroy(&ms);
    free(names[i]);
  }
  for (size_t i = 0; i < cat.n && i < 256; i++)
    CHECK_MSG(!cat.gpus[i].calibrated || fitted[i],
              "%s says calibrated but clusters/calibration/ has no points for it", cat.gpus[i].name);
  hs_gpu_catalog_destroy(&cat);
}

/* Asymptotic bf16 GEMM rate of a catalog entry, FLOP/s. */
static double asymptote(const hs_gpu_catalog_t *cat, const char *name)
{
  const hs_gpu_t *g = hs_gpu_catalog_find(cat, name);
  CHECK_MSG(g != NULL && g->calibrated, "%s missing or not calibrated", name);
  return g ? g->peak_flops[HS_DTYPE_BF16] * g->gemm_eff_max : 0;
}

/* Published maximum achievable matmul FLOPS, bf16, TFLOP/s: stas00/ml-engineering
 * @b9e29720 compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS
 * comparison table" (v2 runs): A100 SXM 271.2, H100 SXM 794.5, MI300X 668.4. */
#define MAMF_A100 271.2e12
#define MAMF_H100 794.5e12
#define MAMF_MI300X 668.4e12

static void test_ratios_match_published(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  memset(&cat, 0, sizeof cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  double a100 = asymptote(&cat, "A100-SXM4-80GB"), h100 = asymptote(&cat, "H100-SXM5-80GB");
  double mi300x = asymptote(&cat, "MI300X-192GB");
  /* H100 from OpenXLA's sweep, MI300X from MAMF: their ratio is the MAMF
   * ratio. The A100 comes from a sweep of transformer shapes ("shape" fit):
   * its asymptote lies within 5% below the best shape of a brute-force
   * search, never above it. */
  CHECK(a100 <= MAMF_A100 * 1.001);
  CHECK_REL(a100, MAMF_A100, 0.05);
  CHECK_REL(mi300x / h100, MAMF_MI300X / MAMF_H100, 0.02);
  CHECK_REL(h100, MAMF_H100, 0.02);
  /* the two SXM4 A100s share one compute figure; H200 is derived from H100 */
  CHECK_REL(asymptote(&cat, "A100-SXM4-40GB"), a100, 1e-12);
  const hs_gpu_t *h = hs_gpu_catalog_find(&cat, "H100-SXM5-80GB");
  const hs_gpu_t *h2 = hs_gpu_catalog_find(&cat, "H200-SXM-141GB");
  CHECK(h && h2);
  if (h && h2) {
    CHECK_REL(h2->gemm_eff_max, h->gemm_eff_max, 1e-12);
    CHECK_REL(h2->gemm_half_flops, h->gemm_half_flops, 1e-12);
    CHECK_REL(h2->launch_us, h->launch_us, 1e-12);
  }
  /* GPUs without usable published GEMM figures stay on the defaults, said so
   * (docs/clusters.md says why for each) */
  static const char *const unc[] = {"L40S-48GB",      "A10-24GB",       "V100-PCIe-16GB",
                                    "V100-PCIe-32GB", "RTX-3090-24GB",  "RTX-A6000-48GB",
                                    "TITAN-RTX-24GB", "RTX-2080Ti-11GB"};
  for (size_t i = 0; i < HS_ARRAY_LEN(unc); i++) {
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, unc[i]);
    CHECK_MSG(g && !g->calibrated, "%s should be uncalibrated", unc[i]);
  }
  /* and the catalog says why, in each uncalibrated entry's "notes" (a field
   * the loader checks as text but does not keep: read with cJSON here) */
  char path[1200];
  snprintf(path, sizeof path, "%s/clusters/gpus.json", hs_data_dir());
  FILE *f = fopen(path, "rb");
  CHECK_MSG(f != NULL, "cannot open %s", path);
  char *text = NULL;
  if (f) {
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = len > 0 ? malloc((size_t)len + 1) : NULL;
    if (text) {
      size_t got = fread(text, 1, (size_t)len, f);
      text[got] = '\0';
    }
    fclose(f);
  }
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(root != NULL);
  int n_unc = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "gpus"))
  {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "calibrated")))
      continue;
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(e, "notes");
    n_unc++;
    CHECK_MSG(cJSON_IsString(notes) && strstr(notes->valuestring, "uncalibrated") &&
                  strstr(notes->valuestring, "docs/clusters.md"),
              "%s: uncalibrated without a \"notes\" saying why", cJSON_IsString(nm) ? nm->valuestring : "?");
  }
  CHECK_EQ_INT(n_unc, (int)HS_ARRAY_LEN(unc));
  cJSON_Delete(root);
  fprintf(stderr, "  asymptotes: A100 %.1f, H100 %.1f, MI300X %.1f TFLOP/s; A100:H100 %.4f (MAMF %.4f)\n",
          a100 / 1e12, h100 / 1e12, mi300x / 1e12, a100 / h100, MAMF_A100 / MAMF_H100);
  hs_gpu_catalog_destroy(&cat);
}

/* Asymptotic GEMM rate at the catalog's half precision (bf16, else fp16), FLOP/s. */
static double half_asymptote(const hs_gpu_catalog_t *cat, const char *name)
{
  const hs_gpu_t *g = hs_gpu_catalog_find(cat, name);
  CHECK_MSG(g != NULL && g->calibrated, "%s missing or not calibrated", name);
  return g ? hs_gpu_peak_flops(g, HS_DTYPE_BF16) * g->gemm_eff_max : 0;
}

static void check_same_profile(const hs_gpu_catalog_t *cat, const char *derived, const char *from)
{
  const hs_gpu_t *d = hs_gpu_catalog_find(cat, derived), *f = hs_gpu_catalog_find(cat, from);
  CHECK_MSG(d && f && d->calibrated && f->calibrated, "%s / %s missing or not calibrated", derived, from);
  if (d && f) {
    CHECK_REL(d->gemm_eff_max, f->gemm_eff_max, 1e-12);
    CHECK_REL(d->gemm_half_flops, f->gemm_half_flops, 1e-12);
    CHECK_REL(d->launch_us, f->launch_us, 1e-12);
    CHECK_REL(d->mem_eff, f->mem_eff, 1e-12);
    /* the fp8 curve too (H800: the H100's fp8 points; both 0 where absent) */
    CHECK(d->gemm_eff_max_fp8 == f->gemm_eff_max_fp8 && d->gemm_half_flops_fp8 == f->gemm_half_flops_fp8);
  }
}

/* The sweeps of 2026-11-24 (torch-performance-test-data issues, one GPU each)
 * against published figures that never enter a fit:
 * - H20: the project's database.md row of another H20 (contributor Charming,
 *   torch 2.8.0+cu128): 141.86 TFLOP/s bf16 best of the five sizes
 *   (zzc0721/torch-performance-test-data@bbb8e247 database.md); the fit of
 *   issue #77 has its asymptote within 6% of it.
 * - H100-PCIe: issue #112's H800 PCIe (the H100 PCIe's GH100 compute with
 *   cut NVLink), best bf16 503.83 TFLOP/s; within 5%.
 * - V100-SXM2: lablup/mlxcel issue #1654, cuBLAS fp16 GEMMs at m = 2048 on a
 *   Tesla V100 "reach 95 to 100" TFLOP/s; the fit's asymptote within 8% of
 *   97.5.
 * The derived entries equal their sources, and P100 is fitted at fp32 (no
 * tensor cores), V100 at fp16 (no bf16). */
static void test_sweeps_cross_checked(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  memset(&cat, 0, sizeof cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  CHECK_REL(half_asymptote(&cat, "H20-96GB"), 141.86e12, 0.06);
  CHECK_REL(half_asymptote(&cat, "H100-PCIe-80GB"), 503.83e12, 0.05);
  CHECK_REL(half_asymptote(&cat, "V100-SXM2-16GB"), 97.5e12, 0.08);
  check_same_profile(&cat, "V100-SXM2-32GB", "V100-SXM2-16GB");
  check_same_profile(&cat, "H800-SXM5-80GB", "H100-SXM5-80GB");
  static const struct {
    const char *gpu;
    hs_dtype_t dt;
  } fitted_at[] = {{"P100-PCIe-16GB", HS_DTYPE_FP32}, {"P100-SXM2-16GB", HS_DTYPE_FP32},
                   {"V100-SXM2-16GB", HS_DTYPE_FP16}, {"L4-24GB", HS_DTYPE_BF16}};
  for (size_t i = 0; i < HS_ARRAY_LEN(fitted_at); i++) {
    char path[1400];
    snprintf(path, sizeof path, "%s/clusters/calibration/%s.json", hs_data_dir(), fitted_at[i].gpu);
    hs_measurements_t ms;
    hs_fit_t fit;
    CHECK_MSG(hs_measurements_load(path, &ms, &err) == HS_OK, "%s: %s", path, err.msg);
    CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &fit, &err) == HS_OK);
    CHECK_MSG(fit.dtype == fitted_at[i].dt, "%s fitted at %s", fitted_at[i].gpu, hs_dtype_name(fit.dtype));
    hs_measurements_destroy(&ms);
  }
  fprintf(stderr, "  asymptotes: H20 %.1f, H100-PCIe %.1f, V100-SXM2 %.1f TFLOP/s\n",
          half_asymptote(&cat, "H20-96GB") / 1e12, half_asymptote(&cat, "H100-PCIe-80GB") / 1e12,
          half_asymptote(&cat, "V100-SXM2-16GB") / 1e12);
  hs_gpu_catalog_destroy(&cat);
}

/* The entries of issue #13's second pass (2026-11-24), against the
 * published figures written out here (not read from the files):
 * - A100 PCIe (40 and 80 GB) from the MAMF v2 row "NVIDIA A100 PCIe",
 *   252.9 TFLOP/s bf16: the asymptote is that figure; the 80 GB entry
 *   equals the 40 GB one; issue #108 of torch-performance-test-data (an
 *   NVIDIA A100-PCIE-40GB, not in any fit) measured 234.14 TFLOP/s bf16 at
 *   4096^3, within 8% below it.
 * - MI250X: MAMF v1, 147.0 TFLOP/s on one GCD of 191.5; the package entry
 *   (383 TFLOP/s, 2 GCDs) has the per-GCD efficiency.
 * - mem_eff from BabelStream Copy (Azure AI-benchmarking-guide tables):
 *   A100-SXM4-80GB 1.61 TB/s of 2039 GB/s, MI300X 4.11 TB/s of 5300 GB/s. */
#define MAMF_A100_PCIE 252.9e12
#define TPTD108_A100_PCIE_BF16 234.14e12
static void test_mamf_and_stream_entries(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  memset(&cat, 0, sizeof cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  double pcie = asymptote(&cat, "A100-PCIe-40GB");
  CHECK_REL(pcie, MAMF_A100_PCIE, 1e-9);
  CHECK(TPTD108_A100_PCIE_BF16 < pcie && TPTD108_A100_PCIE_BF16 > 0.92 * pcie);
  check_same_profile(&cat, "A100-PCIe-80GB", "A100-PCIe-40GB");
  const hs_gpu_t *mi = hs_gpu_catalog_find(&cat, "MI250X-128GB");
  CHECK(mi && mi->calibrated);
  if (mi)
    CHECK_REL(mi->gemm_eff_max, 147.0 / 191.5, 1e-9);
  static const struct {
    const char *gpu;
    double copy_GBps;
  } copy[] = {{"A100-SXM4-80GB", 1610.0}, {"MI300X-192GB", 4110.0}};
  for (size_t i = 0; i < HS_ARRAY_LEN(copy); i++) {
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, copy[i].gpu);
    CHECK(g && g->calibrated);
    if (g)
      CHECK_REL(g->mem_eff * g->mem_bw_GBps, copy[i].copy_GBps, 1e-9);
  }
  fprintf(stderr, "  A100-PCIe %.1f TFLOP/s (issue #108 at 4096: %.1f%% below); MI250X eff %.4f\n",
          pcie / 1e12, 100 * (1 - TPTD108_A100_PCIE_BF16 / pcie), mi ? mi->gemm_eff_max : 0.0);
  hs_gpu_catalog_destroy(&cat);
}

/* Third pass of issue #13 (2026-11-24): the RTX 4090 from issue #78 of
 * torch-performance-test-data (bf16 sweep, line fit) and the copy rate of
 * chsasank/device-benchmarks' README (912 GB/s), against figures that no
 * fit uses:
 * - issue #41 of the same repository, another RTX 4090 (torch 2.6.0+cu126):
 *   best bf16 of its five sizes 167.71 TFLOP/s; the fit's asymptote lies
 *   within 6% below it (the line follows the sustained 8192-10240 rates,
 *   a best-of-sizes figure errs fast);
 * - the catalog peak is the AD102 whitepaper's dense bf16 rate with fp32
 *   accumulation (165.2), not the fp16-accumulate 330.3: the sweep's best
 *   rate, 164.81, stays under it, so the efficiency is below 1;
 * - the README's 'Nvidia 4090 (WSL2)' row, 885 GB/s on another machine,
 *   within 4% of the fitted copy rate. */
static void test_third_pass_entries(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  memset(&cat, 0, sizeof cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  const hs_gpu_t *g = hs_gpu_catalog_find(&cat, "RTX-4090-24GB");
  CHECK(g && g->calibrated);
  if (g) {
    double asym = hs_gpu_peak_flops(g, HS_DTYPE_BF16) * g->gemm_eff_max;
    CHECK(asym < 167.71e12 && asym > 0.94 * 167.71e12);
    CHECK_REL(g->peak_flops[HS_DTYPE_BF16], 165.2e12, 1e-12);
    CHECK(g->gemm_eff_max < 1.0 && 164.81e12 < g->peak_flops[HS_DTYPE_BF16]);
    CHECK_REL(g->mem_eff * g->mem_bw_GBps, 912.0, 1e-9);
    CHECK_REL(g->mem_eff * g->mem_bw_GBps, 885.0, 0.04);
    fprintf(stderr, "  RTX-4090 %.1f TFLOP/s (issue #41 best: 167.7), copy %.0f GB/s\n", asym / 1e12,
            g->mem_eff * g->mem_bw_GBps);
  }
  hs_gpu_catalog_destroy(&cat);
}

/* A minimal published file; `extra` is spliced in after "retrieved". */
static hs_status_t parse_with(const char *extra, const char *points, hs_measurements_t *ms,
                              hs_error_t *err)
{
  char text[4096];
  snprintf(text, sizeof text,
           "{\"gpu\": \"A100-SXM4-40GB\", \"backend\": \"published\", \"retrieved\": \"2026-11-24\", %s"
           " \"sources\": [{\"id\": \"s\", \"ref\": \"example/repo@0 f.md\", \"date\": \"2025\"}],"
           " \"peak_tflops\": {\"bf16\": 312}, \"mem_bw_GBps\": 1555, \"points\": [%s]}",
           extra, points);
  hs_error_init(err);
  return hs_measurements_parse(text, "cal.json", ms, err);
}

#define GEMM_PT "{\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 1024, \"n\": 1024, \"k\": 1024, \"s\": 1e-5, \"source\": \"s\"}"
#define GEMM_PT2 "{\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 2048, \"n\": 1024, \"k\": 1024, \"s\": 1.5e-5, \"source\": \"s\"}"
#define MEM_PT "{\"kind\": \"mem\", \"bytes\": 1e9, \"s\": 1e-3, \"source\": \"s\"}"

static void expect_bad(const char *extra, const char *points, const char *needle)
{
  hs_measurements_t ms;
  hs_error_t err;
  hs_status_t st = parse_with(extra, points, &ms, &err);
  if (st == HS_OK) { /* the loader accepted it: the fit must refuse */
    hs_fit_t f;
    hs_error_init(&err);
    st = hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err);
    hs_measurements_destroy(&ms);
  }
  CHECK_MSG(st == HS_EINVAL, "accepted: %s", extra);
  CHECK_CONTAINS(err.msg, needle);
}

static void test_fit_fields_bad_input(void)
{
  expect_bad("\"gemm_fit\": \"median\",", GEMM_PT "," MEM_PT, "cal.json: gemm_fit: must be \"line\", \"shape\" or \"max\", got \"median\"");
  expect_bad("\"mem_fit\": 3,", GEMM_PT "," MEM_PT, "mem_fit");
  expect_bad("\"gemm_fit\": \"max\",", GEMM_PT "," MEM_PT, "cal.json: gemm_fit: \"max\" needs \"applies\"");
  expect_bad("\"mem_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"launch_us\"],", GEMM_PT "," GEMM_PT2 "," MEM_PT,
             "cal.json: applies: launch_us is not determined by mem_fit \"max\"");
  expect_bad("\"gemm_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"gemm_half_flops\"],", GEMM_PT "," MEM_PT,
             "cal.json: applies: gemm_half_flops is not determined by gemm_fit \"max\"");
  /* a "max" fit needs a point of its kind; a line still needs two sizes */
  expect_bad("\"gemm_fit\": \"max\", \"mem_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"mem_eff\"],",
             GEMM_PT, "calibrate: mem: \"max\" needs at least 1 point, got 0");
  expect_bad("\"gemm_fit\": \"max\", \"mem_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"mem_eff\"],", MEM_PT,
             "calibrate: gemm: \"max\" needs at least 1 point, got 0");
  expect_bad("\"gemm_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"mem_eff\"],", GEMM_PT,
             "calibrate: mem: need at least 2 points");
  /* "mem_eff_source": a known source with a memory point, beside a line */
  expect_bad("\"mem_eff_source\": \"nope\",", GEMM_PT "," GEMM_PT2 "," MEM_PT,
             "cal.json: mem_eff_source: \"nope\" is not an id of \"sources\"");
  expect_bad("\"mem_eff_source\": \"s\", \"mem_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"mem_eff\"],",
             GEMM_PT "," GEMM_PT2 "," MEM_PT, "cal.json: mem_eff_source: needs a \"line\" memory fit");
  expect_bad("\"mem_eff_source\": \"s\",", GEMM_PT "," GEMM_PT2,
             "cal.json: mem_eff_source: \"s\" has no \"mem\" point");
  expect_bad("\"mem_eff_source\": 7,", GEMM_PT "," GEMM_PT2 "," MEM_PT, "mem_eff_source");
  /* every memory point is of the rate source: no line is left for the launch */
  expect_bad("\"mem_eff_source\": \"s\",", GEMM_PT "," GEMM_PT2 "," MEM_PT,
             "calibrate: mem: need at least 2 points");
  /* a best rate above the peak is clamped, not taken: 2 PFLOP/s on 312 TFLOP/s */
  hs_measurements_t ms;
  hs_error_t err;
  CHECK(parse_with("\"gemm_fit\": \"max\", \"applies\": [\"gemm_eff_max\"],",
                   "{\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 1024, \"n\": 1024, \"k\": 1024, "
                   "\"s\": 1e-6, \"source\": \"s\"}", &ms, &err) == HS_OK);
  hs_fit_t f;
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_OK);
  CHECK(f.clamped && f.gemm_eff_max == 1.0);
  hs_measurements_destroy(&ms);
}

/* A "max" fit: the efficiency is best rate / peak (closed form), the size
 * terms are undetermined, left out of the profile, and the fields survive a
 * write/read round trip. */
static void test_max_fit(void)
{
  hs_measurements_t ms, back;
  hs_error_t err;
  CHECK(parse_with("\"gemm_fit\": \"max\", \"mem_fit\": \"max\", \"applies\": [\"gemm_eff_max\", \"mem_eff\"],",
                   GEMM_PT "," GEMM_PT2 "," MEM_PT, &ms, &err) == HS_OK);
  CHECK(ms.gemm_fit_max && ms.mem_fit_max);
  hs_fit_t f;
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_OK);
  double r1 = 2.0 * 1024 * 1024 * 1024 / 1e-5, r2 = 2.0 * 2048 * 1024 * 1024 / 1.5e-5;
  CHECK_REL(f.gemm_eff_max, fmax(r1, r2) / 312e12, 1e-12);
  CHECK_REL(f.mem_eff, 1e9 / 1e-3 / 1555e9, 1e-12);
  CHECK(f.fitted == (HS_FIT_GEMM_EFF_MAX | HS_FIT_MEM_EFF));
  CHECK(f.n_gemm == 2 && f.n_mem == 1);
  cJSON *prof = hs_profile_to_json(&ms, &f);
  CHECK(prof != NULL);
  const cJSON *g = prof ? cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(prof, "gpus"), 0) : NULL;
  CHECK(g && cJSON_GetObjectItemCaseSensitive(g, "gemm_eff_max"));
  CHECK(g && cJSON_GetObjectItemCaseSensitive(g, "mem_eff"));
  CHECK(g && !cJSON_GetObjectItemCaseSensitive(g, "gemm_half_flops"));
  CHECK(g && !cJSON_GetObjectItemCaseSensitive(g, "launch_us"));
  cJSON_Delete(prof);
  cJSON *j = hs_measurements_to_json(&ms);
  char *text = j ? cJSON_PrintUnformatted(j) : NULL;
  CHECK(text != NULL);
  if (text) {
    CHECK(hs_measurements_parse(text, "back.json", &back, &err) == HS_OK);
    CHECK(back.gemm_fit_max && back.mem_fit_max && back.applies == ms.applies);
    hs_measurements_destroy(&back);
  }
  free(text);
  cJSON_Delete(j);
  /* "line" is the default and the same as leaving the field out */
  hs_measurements_destroy(&ms);
  CHECK(parse_with("\"gemm_fit\": \"line\",", GEMM_PT "," GEMM_PT2 "," MEM_PT, &ms, &err) == HS_OK);
  CHECK(!ms.gemm_fit_max && !ms.mem_fit_max);
  hs_measurements_destroy(&ms);
}

/* "mem_eff_source": the launch is the intercept of the line through the
 * other source's two copies (closed form: t = 2 us + B / 100 GB/s at 1 MB and
 * 1 GB), mem_eff the named source's best rate over mem_bw_GBps (1 TB/s of
 * 1555 GB/s), and the field survives a write/read round trip. */
static void test_mem_eff_source(void)
{
  const char *text =
      "{\"gpu\": \"A100-SXM4-40GB\", \"backend\": \"published\", \"retrieved\": \"2026-11-24\","
      " \"mem_eff_source\": \"stream\","
      " \"sources\": [{\"id\": \"sweep\", \"ref\": \"example/a@0 f.md\", \"date\": \"2025\"},"
      "  {\"id\": \"stream\", \"ref\": \"example/b@0 g.md\", \"date\": \"2024\"}],"
      " \"peak_tflops\": {\"bf16\": 312}, \"mem_bw_GBps\": 1555, \"points\": ["
      " {\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 1024, \"n\": 1024, \"k\": 1024, \"s\": 2e-5, \"source\": \"sweep\"},"
      " {\"kind\": \"gemm\", \"dtype\": \"bf16\", \"m\": 2048, \"n\": 1024, \"k\": 1024, \"s\": 3.5e-5, \"source\": \"sweep\"},"
      " {\"kind\": \"mem\", \"bytes\": 1e6, \"s\": 1.2e-5, \"source\": \"sweep\"},"
      " {\"kind\": \"mem\", \"bytes\": 1e9, \"s\": 1.0002e-2, \"source\": \"sweep\"},"
      " {\"kind\": \"mem\", \"bytes\": 5e8, \"s\": 5e-4, \"source\": \"stream\"},"
      " {\"kind\": \"mem\", \"bytes\": 5e8, \"s\": 6e-4, \"source\": \"stream\"}]}";
  hs_measurements_t ms, back;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_measurements_parse(text, "split.json", &ms, &err) == HS_OK);
  CHECK(ms.mem_eff_source == 2);
  hs_fit_t f;
  CHECK(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &f, &err) == HS_OK);
  CHECK_REL(f.launch_us, 2.0, 1e-6);
  CHECK_REL(f.mem_eff, 5e8 / 5e-4 / 1555e9, 1e-12);
  CHECK(f.n_mem == 4);
  CHECK((f.fitted & (HS_FIT_MEM_EFF | HS_FIT_LAUNCH_US)) == (HS_FIT_MEM_EFF | HS_FIT_LAUNCH_US));
  cJSON *j = hs_measurements_to_json(&ms);
  char *t = j ? cJSON_PrintUnformatted(j) : NULL;
  CHECK(t != NULL);
  if (t) {
    CHECK(hs_measurements_parse(t, "back.json", &back, &err) == HS_OK);
    CHECK(back.mem_eff_source == 2);
    hs_measurements_destroy(&back);
  }
  free(t);
  cJSON_Delete(j);
  hs_measurements_destroy(&ms);
}

/* Issue #13, sixth pass: is the H100's bf16 curve a short-run (boost-clock)
 * figure that a GPU under sustained tensor-core load, power-limited, cannot
 * hold? The published long-run kernel figures say no. Truth (none of these
 * rates is in a fit's derivation here, and none is an end-to-end figure):
 * - Azure ND H100 v5, superbench cublaslt_gemm -t fp8e4m3 -w 10000 -i 1000
 *   (samuel-bohman/AI-benchmarking-guide@a6533f14
 *   Azure_Results/ND_H100_v5_results.md): 32768^3 at 1382.2 TFLOP/s after
 *   10,000 warmup GEMMs of 51 ms each (over 8 minutes of load);
 * - MAMF fp8 on H100 SXM, best shape of a brute-force search (50 warmup and
 *   100 timed matmuls per shape): 1402.6 (stas00/ml-engineering
 *   compute/accelerator/README.md @744d01e, shared/data/gpu-datasheets.json);
 * - Azure ND A100 v4, the same harness at fp16 (@26d18e94
 *   ND_A100_v4_results.md): 16384^3 at 256.5 TFLOP/s; A100 MAMF 271.2.
 * The H100's sustained fp8 rate is 1.5% below its short-run best (the
 * A100's fp16 one 5.4%), not the 20-30% that a power-limited clock would
 * have to take. Carrying the fp8 ratio over to bf16 (fp8 GEMMs run the
 * tensor cores at twice the rate, the more power-hungry case), the H100's
 * sustained bf16 rate is 794.5 x 1382.2 / 1402.6 = 782.9 TFLOP/s; the
 * catalog's asymptote must stand within 2% of it, as the A100's must of
 * its own sustained 256.5 (docs/clusters.md, sixth pass). */
#define MAMF_H100_FP8 1402.6e12
#define AZURE_H100_FP8_SUSTAINED 1382.2e12
#define AZURE_A100_FP16_SUSTAINED 256.5e12

static void test_sustained_clock_consistency(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  memset(&cat, 0, sizeof cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  double h100 = asymptote(&cat, "H100-SXM5-80GB"), a100 = asymptote(&cat, "A100-SXM4-80GB");
  double h100_sustained = MAMF_H100 * AZURE_H100_FP8_SUSTAINED / MAMF_H100_FP8;
  CHECK_REL(h100, h100_sustained, 0.02);
  CHECK_REL(a100, AZURE_A100_FP16_SUSTAINED, 0.02);
  /* the sustained-to-short ratios the two GPUs' sources give: neither is a
   * 20% clock loss (the H100's is the smaller) */
  double r_h100 = AZURE_H100_FP8_SUSTAINED / MAMF_H100_FP8;
  double r_a100 = AZURE_A100_FP16_SUSTAINED / MAMF_A100;
  CHECK(r_h100 > 0.95 && r_h100 <= 1.0);
  CHECK(r_a100 > 0.90 && r_a100 < r_h100);
  /* the derived variants carry the H100's curve unchanged */
  const hs_gpu_t *h = hs_gpu_catalog_find(&cat, "H100-SXM5-80GB");
  const hs_gpu_t *h8 = hs_gpu_catalog_find(&cat, "H800-SXM5-80GB");
  CHECK(h && h8);
  if (h && h8) {
    CHECK_REL(h8->gemm_eff_max, h->gemm_eff_max, 1e-12);
    CHECK_REL(h8->gemm_half_flops, h->gemm_half_flops, 1e-12);
  }
  fprintf(stderr, "  sustained: H100 bf16 asymptote %.1f vs %.1f derived (%+.1f%%), A100 %.1f vs %.1f (%+.1f%%); "
          "sustained/short fp8 H100 %.4f, fp16 A100 %.4f\n",
          h100 / 1e12, h100_sustained / 1e12, 100 * (h100 / h100_sustained - 1), a100 / 1e12,
          AZURE_A100_FP16_SUSTAINED / 1e12, 100 * (a100 / AZURE_A100_FP16_SUSTAINED - 1), r_h100, r_a100);
  hs_gpu_catalog_destroy(&cat);
}

int main(void)
{
  HS_RUN(test_catalog_matches_fit);
  HS_RUN(test_ratios_match_published);
  HS_RUN(test_sweeps_cross_checked);
  HS_RUN(test_mamf_and_stream_entries);
  HS_RUN(test_third_pass_entries);
  HS_RUN(test_fit_fields_bad_input);
  HS_RUN(test_max_fit);
  HS_RUN(test_mem_eff_source);
  HS_RUN(test_sustained_clock_consistency);
  return hs_test_failures ? 1 : 0;
}
