/*
 * whatif_json.c - a purchase study's result (hs_whatif_run) as the JSON
 * object `hetsim whatif --format json` prints (docs/schemas.md, "What-if"),
 * built with cJSON. Entry point: hs_whatif_write_json.
 *
 * Invariants: schema_version first; rows that are not ok carry `reason`
 * and no throughput, MFU or cost; a cost that cannot be known (rent 0) is
 * absent, never 0. Out of memory is HS_ENOMEM, never a partial document.
 */
#include "hs_export.h"
#include "hs_json.h"

#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

static bool add_row(cJSON *arr, const hs_whatif_row_t *r, size_t rank)
{
  cJSON *o = cJSON_CreateObject();
  if (!o || !cJSON_AddItemToArray(arr, o)) {
    cJSON_Delete(o);
    return false;
  }
  bool ok = cJSON_AddNumberToObject(o, "rank", (double)rank) &&
            cJSON_AddStringToObject(o, "option", r->option) &&
            cJSON_AddNumberToObject(o, "n_gpus", r->best.n_gpus) &&
            cJSON_AddNumberToObject(o, "added_usd_per_hour", r->added_usd_per_hour) &&
            (r->unpriced_gpus > 0 ? cJSON_AddNullToObject(o, "usd_per_hour") != NULL
                                  : cJSON_AddNumberToObject(o, "usd_per_hour", r->usd_per_hour) != NULL) &&
            cJSON_AddBoolToObject(o, "priced", r->unpriced_gpus == 0) &&
            cJSON_AddNumberToObject(o, "unpriced_gpus", r->unpriced_gpus) &&
            cJSON_AddNumberToObject(o, "global_batch", (double)r->best.global_batch) &&
            cJSON_AddNumberToObject(o, "tokens_per_iteration", (double)r->best.tokens_per_iteration) &&
            cJSON_AddBoolToObject(o, "ok", r->ok);
  if (ok && r->ok) {
    ok = cJSON_AddStringToObject(o, "strategy", r->strategy) &&
         cJSON_AddNumberToObject(o, "tokens_per_s", r->best.tokens_per_s) &&
         cJSON_AddNumberToObject(o, "iteration_s", r->best.iteration_s) &&
         cJSON_AddNumberToObject(o, "mfu", r->best.mfu) &&
         (isfinite(r->usd_per_million_tokens)
              ? cJSON_AddNumberToObject(o, "usd_per_million_tokens", r->usd_per_million_tokens) != NULL
              : cJSON_AddNullToObject(o, "usd_per_million_tokens") != NULL) &&
         cJSON_AddBoolToObject(o, "pareto", r->pareto) &&
         cJSON_AddStringToObject(o, "plan", r->best.plan);
  } else if (ok) {
    ok = cJSON_AddStringToObject(o, "reason", r->reason) != NULL;
  }
  return ok;
}

/* The document, or NULL when out of memory. */
static cJSON *to_json(const hs_whatif_result_t *r, size_t shown)
{
  cJSON *root = cJSON_CreateObject(), *arr = NULL, *pr = NULL;
  bool ok = root && cJSON_AddNumberToObject(root, "schema_version", HS_SCHEMA_VERSION) &&
            cJSON_AddStringToObject(root, "model", r->model) &&
            cJSON_AddStringToObject(root, "base", r->base) &&
            cJSON_AddNumberToObject(root, "budget_usd_per_hour", r->budget_usd_per_hour) &&
            cJSON_AddStringToObject(root, "price_model", hs_price_model_name(r->price)) &&
            (r->global_batch_per_gpu > 0
                 ? cJSON_AddNumberToObject(root, "global_batch_per_gpu", (double)r->global_batch_per_gpu)
                 : cJSON_AddNumberToObject(root, "global_batch", (double)r->global_batch)) &&
            cJSON_AddBoolToObject(root, "feasible", r->n_ok > 0) &&
            (pr = cJSON_AddArrayToObject(root, "prices")) && (arr = cJSON_AddArrayToObject(root, "options"));
  for (int32_t k = 0; ok && k < r->n_candidates; k++) {
    cJSON *p = cJSON_CreateObject();
    if (!p || !cJSON_AddItemToArray(pr, p)) {
      cJSON_Delete(p);
      ok = false;
      break;
    }
    ok = cJSON_AddStringToObject(p, "gpu", r->candidates[k]) &&
         cJSON_AddNumberToObject(p, "usd_per_gpu_hour", r->candidate_usd_per_gpu_hour[k]) &&
         cJSON_AddStringToObject(p, "source", r->price_source[k]) &&
         cJSON_AddBoolToObject(p, "calibrated", r->candidate_calibrated[k]);
  }
  for (size_t i = 0; ok && i < shown; i++)
    ok = add_row(arr, &r->rows[i], i + 1);
  if (ok && r->ranking_set) { /* as compare's "ranking" (docs/schemas.md) */
    cJSON *rk = cJSON_AddObjectToObject(root, "ranking");
    ok = rk && cJSON_AddStringToObject(rk, "winner", r->rows[r->ranking_winner].option) &&
         cJSON_AddStringToObject(rk, "next", r->rows[r->ranking_next].option) &&
         cJSON_AddNumberToObject(rk, "margin", r->ranking_margin) &&
         (isfinite(r->ranking_band)
              ? cJSON_AddNumberToObject(rk, "error_band", r->ranking_band) &&
                    cJSON_AddBoolToObject(rk, "reliable_difference", r->ranking_reliable)
              : cJSON_AddNullToObject(rk, "error_band") &&
                    cJSON_AddNullToObject(rk, "reliable_difference")) &&
         cJSON_AddStringToObject(rk, "note", r->ranking_note);
  }
  if (!ok) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

hs_status_t hs_whatif_write_json(const hs_whatif_result_t *r, size_t top, FILE *f, hs_error_t *err)
{
  cJSON *root = to_json(r, top > 0 && top < r->n_rows ? top : r->n_rows);
  if (!root)
    return hs_error_set(err, HS_ENOMEM, "out of memory building the what-if JSON");
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  if (!s)
    return hs_error_set(err, HS_ENOMEM, "out of memory printing JSON");
  fputs(s, f);
  fputc('\n', f);
  cJSON_free(s);
  if (ferror(f))
    return hs_error_set(err, HS_EIO, "whatif: write error");
  return HS_OK;
}
