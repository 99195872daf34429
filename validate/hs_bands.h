/*
 * hs_bands.h - error bands of predicted iterations from the published
 * suite's residuals (validate/error_bands.c, docs/validation.md "Error
 * bands"), and the verdict on a ranking: is the winner's margin over the
 * next option larger than the band?
 *
 * Representation: every simulated published row's relative error
 * (predicted - measured) / measured with its GPU class (the catalog name
 * of its GPUs, "heterogeneous" when several), framework preset and GPU
 * count. A band is computed from those rows on demand, never stored as the
 * truth: the file validate/error-bands.json keeps the residuals (written by
 * `hetsim validate --published --bands-out`), so compare does not rerun
 * the suite. Invariant: a band is the nearest-rank HS_BAND_PERCENTILE-th
 * percentile of |error| over the rows of the finest class with at least
 * HS_BAND_MIN_ROWS rows: (GPU class, framework, scale), then (GPU class,
 * framework), then (GPU class), then every row.
 */
#ifndef HS_BANDS_H
#define HS_BANDS_H

#include "hs_validate.h"

#define HS_BAND_PERCENTILE 90.0
#define HS_BAND_MIN_ROWS 5

typedef struct hs_band_row {
  char table[64];
  char row[64];
  char gpu_class[48];      /* catalog GPU name, or "heterogeneous" */
  char framework[32];      /* hs_framework_name of the row's preset */
  int32_t n_gpus;
  double rel_err;          /* (predicted - measured) / measured */
} hs_band_row_t;

typedef struct hs_bands {
  hs_band_row_t *rows;     /* owned */
  int32_t n_rows, cap;
} hs_bands_t;

typedef struct hs_band {
  double rel;              /* the band: |relative error| percentile, fraction */
  int32_t n_rows;          /* rows it was taken over */
  char basis[160];         /* "H100-SXM5-80GB, megatron-core-2024, 9-64 GPUs" or coarser */
} hs_band_t;

void hs_bands_init(hs_bands_t *b);
void hs_bands_destroy(hs_bands_t *b); /* NULL and zeroed ok */
/* "1-8", "9-64", "65-512" or "513+": the scale class of n GPUs. */
const char *hs_band_scale(int32_t n_gpus);
/* The GPU class of devices[0..n) of c: the GPU name when one type, else
 * "heterogeneous"; all devices when devices is NULL. O(n). */
const char *hs_band_gpu_class(const hs_cluster_t *c, const int32_t *devices, int32_t n);
/* Appends the simulated rows of table t (res from hs_pub_run): rows not
 * modelled, predicted out of memory or measured out of memory carry no
 * residual and are skipped. O(rows x cluster parse). */
hs_status_t hs_bands_add_table(hs_bands_t *b, const hs_pub_table_t *t, const hs_pub_result_t *res,
                               hs_error_t *err);
/* The band of a predicted iteration of that class (see the file header);
 * out->n_rows 0 and rel NAN when b has no rows. O(rows log rows). */
void hs_bands_lookup(const hs_bands_t *b, const char *gpu_class, const char *framework,
                     int32_t n_gpus, hs_band_t *out);
/* Whether the winner's margin next_s / winner_s - 1 exceeds band_rel: a
 * margin inside the band is "not a reliable difference". NAN band: false. */
bool hs_band_reliable(double winner_s, double next_s, double band_rel);

/* validate/error-bands.json (error_bands_json.c): {"schema_version", "source",
 * "percentile", "min_rows", "rows": [{table, row, gpu_class, framework,
 * n_gpus, rel_err}], "bands": [the lookups of every class present, for
 * reading]}. Load names the file, the field and the value on bad input. */
hs_status_t hs_bands_write_json(const hs_bands_t *b, const char *path, hs_error_t *err);
hs_status_t hs_bands_load(const char *path, hs_bands_t *out, hs_error_t *err);

#endif /* HS_BANDS_H */
