/*
 * error_bands.c - error bands from the published suite's residuals
 * (hs_bands.h). Lookups sort the |errors| of the rows of one class: the
 * suite has a few hundred rows, so a lookup is cheap next to a search.
 */
#include "hs_bands.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs_bands_init(hs_bands_t *b) { memset(b, 0, sizeof *b); }

void hs_bands_destroy(hs_bands_t *b)
{
  if (!b)
    return;
  free(b->rows);
  memset(b, 0, sizeof *b);
}

const char *hs_band_scale(int32_t n_gpus)
{
  return n_gpus <= 8 ? "1-8" : n_gpus <= 64 ? "9-64" : n_gpus <= 512 ? "65-512" : "513+";
}

const char *hs_band_gpu_class(const hs_cluster_t *c, const int32_t *devices, int32_t n)
{
  int32_t gpu = -1;
  int32_t cnt = devices ? n : (int32_t)c->n_devices;
  for (int32_t k = 0; k < cnt; k++) {
    int32_t d = devices ? devices[k] : k;
    if (d < 0 || (size_t)d >= c->n_devices)
      continue;
    if (gpu < 0)
      gpu = c->devices[d].gpu;
    else if (c->devices[d].gpu != gpu)
      return "heterogeneous";
  }
  return gpu < 0 ? "unknown" : c->gpus.gpus[gpu].name;
}

static hs_status_t push(hs_bands_t *b, hs_error_t *err)
{
  if (b->n_rows < b->cap)
    return HS_OK;
  int32_t cap = b->cap ? 2 * b->cap : 64;
  hs_band_row_t *r = realloc(b->rows, (size_t)cap * sizeof *r);
  if (!r)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  b->rows = r;
  b->cap = cap;
  return HS_OK;
}

hs_status_t hs_bands_add_table(hs_bands_t *b, const hs_pub_table_t *t, const hs_pub_result_t *res,
                               hs_error_t *err)
{
  hs_status_t st = HS_OK;
  for (int32_t i = 0; i < t->n_rows; i++) {
    const hs_pub_row_t *row = &t->rows[i];
    if (res[i].not_modelled || res[i].infeasible || row->measured_oom || !isfinite(res[i].err))
      continue;
    hs_cluster_t c;
    hs_cluster_init(&c);
    if ((st = hs_cluster_parse(row->cluster_json, t->file, &c, err)) != HS_OK)
      return st;
    if ((st = push(b, err)) != HS_OK) {
      hs_cluster_destroy(&c);
      return st;
    }
    hs_band_row_t *r = &b->rows[b->n_rows++];
    memset(r, 0, sizeof *r);
    hs_strlcpy(r->table, t->name, sizeof r->table);
    hs_strlcpy(r->row, row->name, sizeof r->row);
    hs_strlcpy(r->gpu_class, hs_band_gpu_class(&c, NULL, 0), sizeof r->gpu_class);
    hs_strlcpy(r->framework, hs_framework_name(row->opt.framework.id), sizeof r->framework);
    r->n_gpus = res[i].n_gpus;
    r->rel_err = res[i].err;
    hs_cluster_destroy(&c);
  }
  return HS_OK;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of |rel_err| over the rows matching the keys
 * given (NULL = any); returns the count. O(rows log rows). */
static int32_t band_over(const hs_bands_t *b, const char *gpu, const char *fw, const char *scale,
                         double *out)
{
  double *v = malloc((size_t)(b->n_rows > 0 ? b->n_rows : 1) * sizeof *v);
  int32_t n = 0;
  if (!v)
    return 0;
  for (int32_t i = 0; i < b->n_rows; i++) {
    const hs_band_row_t *r = &b->rows[i];
    if ((gpu && strcmp(r->gpu_class, gpu)) || (fw && strcmp(r->framework, fw)) ||
        (scale && strcmp(hs_band_scale(r->n_gpus), scale)))
      continue;
    v[n++] = fabs(r->rel_err);
  }
  if (n > 0) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int32_t k = (int32_t)ceil(HS_BAND_PERCENTILE / 100.0 * n) - 1;
    *out = v[k < 0 ? 0 : k];
  }
  free(v);
  return n;
}

void hs_bands_lookup(const hs_bands_t *b, const char *gpu_class, const char *framework,
                     int32_t n_gpus, hs_band_t *out)
{
  const char *scale = hs_band_scale(n_gpus);
  struct {
    const char *gpu, *fw, *scale;
  } levels[] = {{gpu_class, framework, scale}, {gpu_class, framework, NULL}, {gpu_class, NULL, NULL},
                {NULL, NULL, NULL}};
  memset(out, 0, sizeof *out);
  out->rel = NAN;
  for (size_t l = 0; l < HS_ARRAY_LEN(levels); l++) {
    double x = NAN;
    int32_t n = band_over(b, levels[l].gpu, levels[l].fw, levels[l].scale, &x);
    if (n >= HS_BAND_MIN_ROWS || (l + 1 == HS_ARRAY_LEN(levels) && n > 0)) {
      out->rel = x;
      out->n_rows = n;
      if (l == 0)
        snprintf(out->basis, sizeof out->basis, "%s, %s, %s GPUs", gpu_class, framework, scale);
      else if (l == 1)
        snprintf(out->basis, sizeof out->basis, "%s, %s", gpu_class, framework);
      else if (l == 2)
        snprintf(out->basis, sizeof out->basis, "%s", gpu_class);
      else
        snprintf(out->basis, sizeof out->basis, "all published rows");
      return;
    }
  }
}

bool hs_band_reliable(double winner_s, double next_s, double band_rel)
{
  if (!isfinite(band_rel) || !(winner_s > 0.0) || !isfinite(next_s))
    return false;
  return next_s / winner_s - 1.0 > band_rel;
}
