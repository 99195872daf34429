/*
 * test_calibration_catalog.c - the GPU catalog's calibrated figures are the
 * fit of the published points kept in clusters/calibration/, and only those.
 *
 * For every clusters/calibration/<GPU>.json: refit with hs_calibrate_fit
 * (bf16 GEMMs, as scripts/calibrate_catalog.py runs `hetsim calibrate`) and
 * check that the catalog entry says "calibrated" and holds the fitted value
 * of each parameter the file "applies" (relative 1e-9: the script writes
 * the fit's doubles). Every catalog entry that says calibrated must have a
 * file, so no figure is marked calibrated without its points. Each file
 * names a source (repo@commit path or URL, date) for every point.
 */
#include "hs_test.h"
#include "hs_validate.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 64

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
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
  CHECK(nf >= 1);
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
    CHECK_MSG(hs_calibrate_fit(&ms, HS_DTYPE_BF16, &fit, &err) == HS_OK, "%s: %s", names[i], err.msg);
    CHECK(!fit.clamped);
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, ms.gpu);
    CHECK_MSG(g != NULL, "%s: %s not in the catalog", names[i], ms.gpu);
    if (g) {
      uint32_t a = ms.applies ? ms.applies : HS_FIT_ALL;
      fitted[g - cat.gpus] = true;
      CHECK_MSG(g->calibrated, "%s is fitted by %s but not marked calibrated", g->name, names[i]);
      if (a & HS_FIT_GEMM_EFF_MAX)
        CHECK_REL(g->gemm_eff_max, fit.gemm_eff_max, 1e-9);
      if (a & HS_FIT_GEMM_HALF_FLOPS)
        CHECK_REL(g->gemm_half_flops, fit.gemm_half_flops, 1e-9);
      if (a & HS_FIT_MEM_EFF)
        CHECK_REL(g->mem_eff, fit.mem_eff, 1e-9);
      if (a & HS_FIT_LAUNCH_US)
        CHECK_REL(g->launch_us, fit.launch_us, 1e-9);
      fprintf(stderr, "  %s: gemm_eff_max %.4f gemm_half_flops %.4g mem_eff %.3f launch_us %.3f "
              "(gemm median |err| %.1f%%, mem %.1f%%)\n", g->name, fit.gemm_eff_max,
              fit.gemm_half_flops, fit.mem_eff, fit.launch_us, 100 * fit.gemm_median_rel_err,
              100 * fit.mem_median_rel_err);
    }
    hs_measurements_destroy(&ms);
    free(names[i]);
  }
  for (size_t i = 0; i < cat.n && i < 256; i++)
    CHECK_MSG(!cat.gpus[i].calibrated || fitted[i],
              "%s says calibrated but clusters/calibration/ has no points for it", cat.gpus[i].name);
  hs_gpu_catalog_destroy(&cat);
}

int main(void)
{
  HS_RUN(test_catalog_matches_fit);
  return hs_test_failures ? 1 : 0;
}
