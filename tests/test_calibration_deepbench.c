/*
 * test_calibration_deepbench.c - the catalog entries fitted on DeepBench's
 * published cuBLAS GEMMs (issue #33 item 2; docs/clusters.md, "Skinny
 * GEMMs") against every published shape, and the memory-side GEMM term.
 *
 * - For every clusters/calibration/deepbench/<GPU>.json (all 160 shapes of
 *   one DeepBench sheet, scripts/deepbench_points.py): the side of each row
 *   is the roofline ridge, flops / bytes against datasheet peak / copy rate,
 *   recomputed here from the catalog; the compute-side rows, and only they,
 *   are GEMM points of clusters/calibration/<GPU>.json with the same time.
 * - The fit recomputed from the calibration file's points, independently of
 *   validate/calibrate.c: the weighted (1 / t^2) least-squares line
 *   t = a + b F in closed form gives gemm_eff_max = 1 / (b peak) and
 *   gemm_half_flops = a / b; gemm_mem_latency_us is the weighted mean of
 *   t - launch - bytes / rate over the memory-side rows (0 for P100).
 * - The simulator's own GEMM time (hs_compute_gemm_s) against every
 *   published time: median and worst error over all 160 shapes and over the
 *   84 with N or M <= 128, within the figures measured when the fit was made
 *   (docs/clusters.md) plus at most one point.
 * - The term in closed form on a hand-made GPU: memory-side GEMM time =
 *   launch + gemm_mem_latency_us + bytes / rate; compute side and kernels
 *   that are not GEMMs unchanged; 0 = the roofline bit for bit.
 * - Bad input: gemm_mem_latency_us out of range in a catalog entry, and a
 *   broken DeepBench-derived calibration file, refused naming the field and
 *   the value.
 */
#include "hs_test.h"
#include "hs_sim.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Bounds on the catalog's errors against all DeepBench shapes, as measured
 * on 2026-12-02 (median / worst over 160 shapes; median over the 84 with
 * min(M, N) <= 128), each rounded up to the next whole percent. */
typedef struct {
  const char *gpu;
  double med_all, max_all, med_small;
} bound_t;

static const bound_t bounds[] = {
    {"V100-SXM2-16GB", 0.08, 1.01, 0.15}, /* 7.0%, 100.8%, 14.3% */
    {"V100-SXM2-32GB", 0.08, 1.01, 0.15},
    {"T4-16GB", 0.08, 1.27, 0.12},        /* 7.3%, 126.6%, 11.4% */
    {"P100-PCIe-16GB", 0.07, 2.00, 0.44}, /* 6.2%, 199.5%, 43.3% */
};

typedef struct {
  double m, n, k, s, flops, bytes;
  bool compute;
} row_t;

static void check_table(const char *gpu_name, const hs_gpu_catalog_t *cat)
{
  char path[1200];
  snprintf(path, sizeof path, "%s/clusters/calibration/deepbench/%s.json", hs_data_dir(), gpu_name);
  char *text = hs_test_slurp(path);
  CHECK_MSG(text != NULL, "cannot read %s", path);
  if (!text)
    return;
  cJSON *root = cJSON_Parse(text);
  free(text);
  CHECK(root != NULL);
  const cJSON *jrows = cJSON_GetObjectItemCaseSensitive(root, "rows");
  const cJSON *jdt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
  const cJSON *jlat = cJSON_GetObjectItemCaseSensitive(root, "fit_gemm_mem_latency");
  const cJSON *jsrc = cJSON_GetObjectItemCaseSensitive(root, "source");
  CHECK(cJSON_IsArray(jrows) && cJSON_IsString(jdt) && cJSON_IsBool(jlat) && cJSON_IsString(jsrc));
  const hs_gpu_t *g = hs_gpu_catalog_find(cat, gpu_name);
  CHECK_MSG(g != NULL && g->calibrated, "%s: not a calibrated catalog entry", gpu_name);
  if (!root || !g || !cJSON_IsArray(jrows) || !cJSON_IsString(jdt)) {
    cJSON_Delete(root);
    return;
  }
  CHECK(strstr(jsrc->valuestring, "baidu-research/DeepBench@da81ba7820739e2e506dc27f382d15be5479f98f"));
  hs_dtype_t dt = strcmp(jdt->valuestring, "fp16") == 0 ? HS_DTYPE_FP16 : HS_DTYPE_FP32;
  double eb = hs_dtype_bytes(dt);
  double peak = g->peak_flops[dt];
  double rate = g->mem_bw_GBps * 1e9 * g->mem_eff;
  double launch = g->launch_us * 1e-6;
  int nr = cJSON_GetArraySize(jrows);
  CHECK_EQ_INT(nr, 160);
  row_t *rows = calloc((size_t)nr, sizeof *rows);
  double *rel = calloc((size_t)nr, sizeof *rel), *rel_small = calloc((size_t)nr, sizeof *rel_small);
  if (!rows || !rel || !rel_small) {
    CHECK(false);
    goto cleanup;
  }
  int i = 0, n_comp = 0, n_small = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, jrows)
  {
    row_t *r = &rows[i++];
    r->m = cJSON_GetObjectItemCaseSensitive(e, "m")->valuedouble;
    r->n = cJSON_GetObjectItemCaseSensitive(e, "n")->valuedouble;
    r->k = cJSON_GetObjectItemCaseSensitive(e, "k")->valuedouble;
    r->s = cJSON_GetObjectItemCaseSensitive(e, "s")->valuedouble;
    r->compute = strcmp(cJSON_GetObjectItemCaseSensitive(e, "side")->valuestring, "compute") == 0;
    r->flops = 2.0 * r->m * r->n * r->k;
    r->bytes = eb * (r->m * r->k + r->k * r->n + r->m * r->n);
    /* the ridge: arithmetic intensity against peak / copy rate */
    CHECK_MSG(r->compute == (r->flops * rate >= peak * r->bytes), "%s: %gx%gx%g on the wrong side",
              gpu_name, r->m, r->n, r->k);
    n_comp += r->compute;
  }

  /* the compute-side rows are the file's DeepBench points, one for one */
  hs_measurements_t ms;
  hs_error_t err;
  hs_error_init(&err);
  snprintf(path, sizeof path, "%s/clusters/calibration/%s.json", hs_data_dir(), gpu_name);
  CHECK_MSG(hs_measurements_load(path, &ms, &err) == HS_OK, "%s: %s", path, err.msg);
  int n_db = 0;
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int32_t p = 0; p < ms.n; p++) {
    const hs_mb_point_t *q = &ms.p[p];
    if (q->kind != HS_MB_GEMM || q->dtype != dt)
      continue;
    double w = 1.0 / (q->s * q->s);
    sw += w, sx += w * q->flops, sy += w * q->s, sxx += w * q->flops * q->flops, sxy += w * q->flops * q->s;
    if (strncmp(ms.sources[q->source - 1].id, "deepbench-", 10) != 0)
      continue;
    n_db++;
    bool found = false;
    for (int j = 0; j < nr && !found; j++)
      found = rows[j].compute && rows[j].m == (double)q->m && rows[j].n == (double)q->n &&
              rows[j].k == (double)q->k && rows[j].s == q->s;
    CHECK_MSG(found, "%s: point %d is not a compute-side row", gpu_name, p);
  }
  CHECK_EQ_INT(n_db, n_comp);
  /* the line in closed form; the intercept is all gemm_half_flops (no
   * launch is fitted: the files take no launch_us) */
  uint32_t a = ms.applies ? ms.applies : HS_FIT_ALL;
  CHECK(!(a & HS_FIT_LAUNCH_US));
  double b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx), icpt = (sy - b * sx) / sw;
  CHECK_REL(g->gemm_eff_max, 1.0 / (b * peak), 1e-6);
  CHECK_REL(g->gemm_half_flops, icpt / b, 1e-6);
  hs_measurements_destroy(&ms);

  /* gemm_mem_latency_us: weighted mean residual of the memory side */
  double hw = 0, hsum = 0;
  for (int j = 0; j < nr; j++)
    if (!rows[j].compute) {
      double w = 1.0 / (rows[j].s * rows[j].s);
      hw += w;
      hsum += w * (rows[j].s - launch - rows[j].bytes / rate);
    }
  if (cJSON_IsTrue(jlat))
    CHECK_REL(g->gemm_mem_latency_us, fmax(hsum / hw, 0.0) * 1e6, 1e-9);
  else
    CHECK(g->gemm_mem_latency_us == 0);

  /* the simulator's time against every published one */
  for (int j = 0; j < nr; j++) {
    const row_t *r = &rows[j];
    double t = hs_compute_gemm_s(g, dt, r->flops, r->m * r->n, r->bytes);
    rel[j] = fabs(t - r->s) / r->s;
    if (r->m <= 128 || r->n <= 128)
      rel_small[n_small++] = rel[j];
  }
  CHECK_EQ_INT(n_small, 84);
  double med = median(rel, nr), worst = rel[nr - 1], med_small = median(rel_small, n_small);
  fprintf(stderr, "  %s (%s): %d compute-side points; all 160: median %.1f%%, worst %.1f%%; "
          "N or M <= 128: median %.1f%%; gemm_mem_latency_us %.3f\n",
          gpu_name, hs_dtype_name(dt), n_comp, 100 * med, 100 * worst, 100 * med_small,
          g->gemm_mem_latency_us);
  for (size_t q = 0; q < HS_ARRAY_LEN(bounds); q++)
    if (strcmp(bounds[q].gpu, gpu_name) == 0) {
      CHECK_MSG(med <= bounds[q].med_all, "%s: median %.1f%%", gpu_name, 100 * med);
      CHECK_MSG(worst <= bounds[q].max_all, "%s: worst %.1f%%", gpu_name, 100 * worst);
      CHECK_MSG(med_small <= bounds[q].med_small, "%s: small median %.1f%%", gpu_name, 100 * med_small);
    }
cleanup:
  free(rows);
  free(rel);
  free(rel_small);
  cJSON_Delete(root);
}

static void test_tables(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_gpu_catalog_t cat;
  hs_gpu_catalog_init(&cat);
  CHECK(hs_gpu_catalog_load(NULL, &cat, &err) == HS_OK);
  for (size_t q = 0; q < HS_ARRAY_LEN(bounds); q++)
    check_table(bounds[q].gpu, &cat);
  /* the derived 32 GB part equals the 16 GB one */
  const hs_gpu_t *a = hs_gpu_catalog_find(&cat, "V100-SXM2-16GB");
  const hs_gpu_t *b = hs_gpu_catalog_find(&cat, "V100-SXM2-32GB");
  CHECK(a && b && a->gemm_mem_latency_us == b->gemm_mem_latency_us);
  /* every other entry is off: its figures stay bit for bit */
  for (size_t i = 0; i < cat.n; i++) {
    const char *nm = cat.gpus[i].name;
    if (strncmp(nm, "V100-SXM2", 9) != 0 && strcmp(nm, "T4-16GB") != 0)
      CHECK_MSG(cat.gpus[i].gemm_mem_latency_us == 0, "%s has gemm_mem_latency_us", nm);
  }
  hs_gpu_catalog_destroy(&cat);
}

/* A hand-worked GPU: 100 TFLOP/s, 1000 GB/s at mem_eff 0.5 (500 GB/s),
 * gemm_eff_max 0.5, gemm_half_flops 1e9, launch 4 us, latency 6 us. */
static void test_term_closed_form(void)
{
  hs_gpu_t g;
  memset(&g, 0, sizeof g);
  g.peak_flops[HS_DTYPE_FP16] = 100e12;
  g.peak_flops[HS_DTYPE_FP32] = 10e12;
  g.mem_bw_GBps = 1000;
  g.mem_eff = 0.5;
  g.gemm_eff_max = 0.5;
  g.gemm_half_flops = 1e9;
  g.launch_us = 4;
  g.gemm_mem_latency_us = 6;
  /* skinny: 4096 x 16 x 4096 fp16, F = 536,870,912, B = 2 (4096^2 + 2 x
   * 16 x 4096) = 33,816,576: memory 6 us + 67.633 us, compute
   * (F + 1e9) / 50e12 = 30.737 us -> 4 + 73.633 us */
  double F = 2.0 * 4096 * 16 * 4096, B = 2.0 * (4096.0 * 4096 + 2 * 16 * 4096);
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP16, F, 4096.0 * 16, B), 4e-6 + 6e-6 + B / 500e9, 1e-15);
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP16, F, 4096.0 * 16, B), 77.633152e-6, 1e-9);
  /* square 4096^3: compute side, 4 + (1.374e11 + 1e9) / 50e12 us; unchanged by the term */
  double F2 = 2.0 * 4096 * 4096 * 4096, B2 = 2.0 * 3 * 4096 * 4096;
  double t2 = 4e-6 + (F2 + 1e9) / 50e12;
  CHECK_REL(hs_compute_gemm_s(&g, HS_DTYPE_FP16, F2, 4096.0 * 4096, B2), t2, 1e-15);
  /* a memory-bound kernel that is not a GEMM never pays it */
  CHECK_REL(hs_compute_kernel_s(&g, HS_DTYPE_FP16, false, 0.0, B), 4e-6 + B / 500e9, 1e-15);
  /* 0: the roofline, bit for bit */
  hs_gpu_t h = g;
  h.gemm_mem_latency_us = 0;
  CHECK(hs_compute_gemm_s(&h, HS_DTYPE_FP16, F, 4096.0 * 16, B) ==
        4e-6 + fmax(B / (1000 * HS_GB * 0.5), F / (100e12 * (0.5 * F / (F + 1e9)))));
  /* the latency moves the ridge: with it the skinny GEMM crosses to the
   * memory side only when its bytes cost more than the compute line */
  CHECK(hs_compute_gemm_s(&g, HS_DTYPE_FP16, F, 4096.0 * 16, B) >
        hs_compute_gemm_s(&h, HS_DTYPE_FP16, F, 4096.0 * 16, B));
}

static void test_bad_input(void)
{
  static const char *const cases[][2] = {
      {"-1", "gpus.json: [0].gemm_mem_latency_us: must be a non-negative number, got -1"},
      {"5000", "gemm_mem_latency_us"},
      {"\"5\"", "gemm_mem_latency_us"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    char text[512];
    snprintf(text, sizeof text,
             "[{\"name\": \"G\", \"memory_GiB\": 8, \"mem_bw_GBps\": 100, "
             "\"peak_tflops\": {\"fp16\": 10}, \"gemm_mem_latency_us\": %s}]",
             cases[i][0]);
    hs_gpu_catalog_t cat;
    hs_error_t err;
    hs_gpu_catalog_init(&cat);
    hs_error_init(&err);
    CHECK(hs_gpu_catalog_parse(text, "gpus.json", &cat, &err) != HS_OK);
    CHECK_CONTAINS(err.msg, cases[i][1]);
    fprintf(stderr, "  refused: %s\n", err.msg);
    if (i == 1)
      CHECK_CONTAINS(err.msg, "5000");
    hs_gpu_catalog_destroy(&cat);
  }
  /* a DeepBench-derived calibration file with a broken point: the T4 file
   * with its first GEMM point's time made negative, then its m made 0 */
  char path[1200];
  snprintf(path, sizeof path, "%s/clusters/calibration/T4-16GB.json", hs_data_dir());
  char *text = hs_test_slurp(path);
  CHECK(text != NULL);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(root != NULL);
  if (!root)
    return;
  cJSON *pts = cJSON_GetObjectItemCaseSensitive(root, "points");
  int first = -1, idx = 0;
  cJSON *p;
  cJSON_ArrayForEach(p, pts)
  {
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(p, "kind");
    if (first < 0 && cJSON_IsString(kind) && strcmp(kind->valuestring, "gemm") == 0)
      first = idx;
    idx++;
  }
  CHECK(first >= 0);
  cJSON *pt = cJSON_GetArrayItem(pts, first);
  static const char *const fields[] = {"s", "m"};
  static const double values[] = {-2.5e-5, 0};
  for (int f = 0; f < 2 && pt; f++) {
    double keep = cJSON_GetObjectItemCaseSensitive(pt, fields[f])->valuedouble;
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, fields[f]), values[f]);
    char *bad = cJSON_PrintUnformatted(root);
    hs_measurements_t ms;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(bad && hs_measurements_parse(bad, "T4-16GB.json", &ms, &err) == HS_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "points[%d].%s", first, fields[f]);
    CHECK_CONTAINS(err.msg, "T4-16GB.json");
    CHECK_CONTAINS(err.msg, want);
    CHECK_CONTAINS(err.msg, f == 0 ? "got -2.5" : "got 0");
    fprintf(stderr, "  refused: %s\n", err.msg);
    free(bad);
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, fields[f]), keep);
  }
  cJSON_Delete(root);
}

int main(void)
{
  HS_RUN(test_tables);
  HS_RUN(test_term_closed_form);
  HS_RUN(test_bad_input);
  HS_TEST_END();
}
