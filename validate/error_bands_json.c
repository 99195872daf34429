/*
 * error_bands_json.c - validate/error-bands.json, the published suite's
 * residuals that compare, plan and whatif read their error bands from
 * (hs_bands.h). Written by `hetsim validate --published --bands-out F`.
 */
#include "hs_bands.h"
#include "hs_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* One lookup per class present, for a reader of the file (the loader
 * ignores them: bands are recomputed from "rows"). O(rows^2 log rows). */
static void add_band_list(const hs_bands_t *b, cJSON *j)
{
  cJSON *arr = cJSON_AddArrayToObject(j, "bands");
  for (int32_t i = 0; arr && i < b->n_rows; i++) {
    const hs_band_row_t *r = &b->rows[i];
    bool seen = false;
    for (int32_t k = 0; k < i && !seen; k++)
      seen = !strcmp(b->rows[k].gpu_class, r->gpu_class) && !strcmp(b->rows[k].framework, r->framework) &&
             !strcmp(hs_band_scale(b->rows[k].n_gpus), hs_band_scale(r->n_gpus));
    if (seen)
      continue;
    hs_band_t band;
    hs_bands_lookup(b, r->gpu_class, r->framework, r->n_gpus, &band);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gpu_class", r->gpu_class);
    cJSON_AddStringToObject(o, "framework", r->framework);
    cJSON_AddStringToObject(o, "scale", hs_band_scale(r->n_gpus));
    cJSON_AddNumberToObject(o, "band", band.rel);
    cJSON_AddNumberToObject(o, "n_rows", band.n_rows);
    cJSON_AddStringToObject(o, "basis", band.basis);
    if (!cJSON_AddItemToArray(arr, o))
      cJSON_Delete(o);
  }
}

hs_status_t hs_bands_write_json(const hs_bands_t *b, const char *path, hs_error_t *err)
{
  hs_json_oom_clear();
  cJSON *j = hs_json_stamp_version(cJSON_CreateObject(), HS_SCHEMA_VERSION);
  if (!j)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  cJSON_AddStringToObject(j, "source",
                          "hetsim validate --published --bands-out: every simulated row of "
                          "validate/published/ (each table cites its source and date)");
  cJSON_AddNumberToObject(j, "percentile", HS_BAND_PERCENTILE);
  cJSON_AddNumberToObject(j, "min_rows", HS_BAND_MIN_ROWS);
  cJSON *rows = cJSON_AddArrayToObject(j, "rows");
  for (int32_t i = 0; rows && i < b->n_rows; i++) {
    const hs_band_row_t *r = &b->rows[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "table", r->table);
    cJSON_AddStringToObject(o, "row", r->row);
    cJSON_AddStringToObject(o, "gpu_class", r->gpu_class);
    cJSON_AddStringToObject(o, "framework", r->framework);
    cJSON_AddNumberToObject(o, "n_gpus", r->n_gpus);
    cJSON_AddNumberToObject(o, "rel_err", r->rel_err);
    if (!cJSON_AddItemToArray(rows, o))
      cJSON_Delete(o);
  }
  add_band_list(b, j);
  if (!(j = hs_json_finish(j)))
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  hs_status_t st = hs_json_write_file(j, path, err);
  hs_json_free(j);
  return st;
}

hs_status_t hs_bands_load(const char *path, hs_bands_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_bands_init(out);
  const char *file = hs_basename(path);
  hs_jreader_t r = {file, err};
  HS_CHECK(hs_json_load_file(path, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  const cJSON *rows = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "rows", true, &rows, &n));
  out->rows = hs_calloc((size_t)(n > 0 ? n : 1), sizeof *out->rows);
  if (!out->rows)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  out->cap = n;
  int i = 0;
  for (const cJSON *o = rows->child; o; o = o->next, i++) {
    char p[64];
    hs_json_path(p, sizeof p, "rows", NULL, i);
    hs_band_row_t *b = &out->rows[out->n_rows];
    int64_t g = 0;
    HS_CHECK(hs_json_expect_object(&r, o, p));
    HS_CHECK(hs_json_string(&r, o, p, "table", false, "", b->table, sizeof b->table));
    HS_CHECK(hs_json_string(&r, o, p, "row", false, "", b->row, sizeof b->row));
    HS_CHECK(hs_json_string(&r, o, p, "gpu_class", true, NULL, b->gpu_class, sizeof b->gpu_class));
    HS_CHECK(hs_json_string(&r, o, p, "framework", true, NULL, b->framework, sizeof b->framework));
    HS_CHECK(hs_json_int(&r, o, p, "n_gpus", true, 0, 1, 1 << 24, &g));
    HS_CHECK(hs_json_number_in(&r, o, p, "rel_err", true, 0.0, -1.0, 100.0, &b->rel_err));
    b->n_gpus = (int32_t)g;
    out->n_rows++;
  }
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_bands_destroy(out);
  return st;
}
