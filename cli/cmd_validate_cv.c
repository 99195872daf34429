/*
 * cmd_validate_cv.c - `hetsim validate --published [DIR|FILE] --cv [--fit
 * FIT.json]`: fits the framework host overheads on the declared training
 * split (validate/published_cv.c) and prints, for every table, its MAPE
 * with the full fit (in-fit for training tables) beside its MAPE when it
 * was left out of the fit (leave-one-table-out), and whether sim/host.c's
 * presets hold the full fit's values. Exit 0 when they do, 1 when they
 * differ (the presets must be the fit's output), 2 on bad input.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct cv_run {
  hs_pub_table_t *tables;
  int32_t n;
  hs_pub_fit_spec_t spec;
  hs_pub_cv_t cv;
  hs_pub_fit_t full;
  hs_pub_fit_t *fold;          /* per table (training tables only) */
  double *full_mape;           /* per table with the full fit */
  double *loto_mape;           /* per training table; NAN for held-out */
} cv_run_t;

static void cv_free(cv_run_t *r)
{
  for (int32_t i = 0; r->tables && i < r->n; i++)
    hs_pub_table_destroy(&r->tables[i]);
  free(r->tables);
  hs_pub_fit_spec_destroy(&r->spec);
  hs_pub_cv_destroy(&r->cv);
  free(r->fold);
  free(r->full_mape);
  free(r->loto_mape);
}

static void fit_values(const cv_run_t *r, const hs_pub_fit_t *f, double *d, double *mb)
{
  *d = r->spec.dispatch_us[f->dispatch_idx];
  for (int k = 0; k < HS_PUB_FAMILIES; k++)
    mb[k] = r->spec.microbatch_us[f->microbatch_idx[k]];
}

/* Held-out tables at the full fit's point: simulated once each. */
static hs_status_t run_held_out(cv_run_t *r, int32_t jobs, hs_error_t *err)
{
  double d, mb[HS_PUB_FAMILIES];
  fit_values(r, &r->full, &d, mb);
  bool *which = hs_calloc((size_t)(r->n > 0 ? r->n : 1), sizeof *which);
  if (!which)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (int32_t t = 0; t < r->n; t++)
    which[t] = !r->cv.train[t];
  hs_status_t st = hs_pub_run_at(r->tables, r->n, which, d, mb, jobs, r->full_mape, err);
  free(which);
  return st;
}

static hs_status_t cv_compute(cv_run_t *r, int32_t jobs, hs_error_t *err)
{
  hs_status_t st = hs_pub_cv_eval(r->tables, r->n, &r->spec, jobs, &r->cv, err);
  if (st != HS_OK)
    return st;
  hs_pub_cv_fit(&r->cv, -1, &r->full);
  r->fold = hs_calloc((size_t)r->n, sizeof *r->fold);
  r->full_mape = hs_calloc((size_t)r->n, sizeof *r->full_mape);
  r->loto_mape = hs_calloc((size_t)r->n, sizeof *r->loto_mape);
  if (!r->fold || !r->full_mape || !r->loto_mape)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (int32_t t = 0; t < r->n; t++) {
    r->loto_mape[t] = NAN;
    r->full_mape[t] = NAN;
    if (!r->cv.train[t])
      continue;
    r->full_mape[t] = hs_pub_cv_table_mape(&r->cv, t, &r->full);
    hs_pub_cv_fit(&r->cv, t, &r->fold[t]);
    r->loto_mape[t] = hs_pub_cv_table_mape(&r->cv, t, &r->fold[t]);
  }
  return run_held_out(r, jobs, err);
}

/* True when every preset of a fitted family holds the full fit's values. */
static bool presets_match(const cv_run_t *r, char *why, size_t n)
{
  double d, mb[HS_PUB_FAMILIES];
  fit_values(r, &r->full, &d, mb);
  for (int id = 1; id < HS_FW__COUNT; id++) {
    hs_framework_t fw;
    hs_framework_preset(hs_framework_presets[id], &fw);
    int f = hs_pub_family(fw.id);
    if (f < 0)
      continue;
    if (fw.dispatch_us != d || fw.microbatch_us != mb[f]) {
      snprintf(why, n, "%s has dispatch_us %g, microbatch_us %g; the fit gives %g, %g",
               hs_framework_presets[id], fw.dispatch_us, fw.microbatch_us, d, mb[f]);
      return false;
    }
  }
  return true;
}

static void print_text(const cv_run_t *r, bool match, const char *why)
{
  double d, mb[HS_PUB_FAMILIES];
  fit_values(r, &r->full, &d, mb);
  printf("framework host overheads fitted on %d training tables (grid: %d dispatch_us x %d "
         "microbatch_us values; objective: mean table MAPE)\n",
         (int)r->full.n_tables, (int)r->spec.n_dispatch, (int)r->spec.n_microbatch);
  printf("fit: dispatch_us %g (every eager preset)", d);
  for (int f = 0; f < HS_PUB_FAMILIES; f++)
    printf(", microbatch_us %s %g", hs_pub_family_name(f), mb[f]);
  printf("; mean in-fit MAPE %.1f%%\n", 100.0 * r->full.objective);
  printf("presets in sim/host.c: %s\n", match ? "equal to the fit" : why);
  printf("%-28s %-9s %-10s %11s %11s   %s\n", "table", "split", "family", "in-fit MAPE",
         "LOTO MAPE", "fold's dispatch_us / microbatch_us");
  for (int32_t t = 0; t < r->n; t++) {
    const hs_pub_table_t *tb = &r->tables[t];
    int f = r->cv.family[t];
    printf("%-28s %-9s %-10s", tb->name, r->cv.train[t] ? "train" : "held-out", hs_pub_family_name(f));
    if (isfinite(r->full_mape[t]))
      printf(" %10.1f%%", 100.0 * r->full_mape[t]);
    else
      printf(" %11s", "-");
    if (!r->cv.train[t]) {
      printf(" %11s   (not fitted on)\n", "-");
      continue;
    }
    double fd, fmb[HS_PUB_FAMILIES];
    fit_values(r, &r->fold[t], &fd, fmb);
    printf(" %10.1f%%   %g / %g\n", 100.0 * r->loto_mape[t], fd, f >= 0 ? fmb[f] : 0.0);
  }
}

static cJSON *to_json(const cv_run_t *r, bool match)
{
  double d, mb[HS_PUB_FAMILIES];
  fit_values(r, &r->full, &d, mb);
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  cJSON_AddNumberToObject(o, "schema_version", HS_SCHEMA_VERSION);
  cJSON *fit = cJSON_AddObjectToObject(o, "fit");
  if (fit) {
    cJSON_AddNumberToObject(fit, "dispatch_us", d);
    cJSON *m = cJSON_AddObjectToObject(fit, "microbatch_us");
    for (int f = 0; m && f < HS_PUB_FAMILIES; f++)
      cJSON_AddNumberToObject(m, hs_pub_family_name(f), mb[f]);
    cJSON_AddNumberToObject(fit, "mean_mape", r->full.objective);
    cJSON_AddNumberToObject(fit, "tables", r->full.n_tables);
  }
  cJSON_AddBoolToObject(o, "presets_match_fit", match);
  cJSON *arr = cJSON_AddArrayToObject(o, "tables");
  for (int32_t t = 0; arr && t < r->n; t++) {
    cJSON *j = cJSON_CreateObject();
    if (!j)
      break;
    cJSON_AddItemToArray(arr, j);
    cJSON_AddStringToObject(j, "table", r->tables[t].name);
    cJSON_AddStringToObject(j, "split", r->cv.train[t] ? "train" : "held_out");
    cJSON_AddStringToObject(j, "family", hs_pub_family_name(r->cv.family[t]));
    if (isfinite(r->full_mape[t]))
      cJSON_AddNumberToObject(j, r->cv.train[t] ? "in_fit_mape" : "mape", r->full_mape[t]);
    if (r->cv.train[t] && isfinite(r->loto_mape[t]))
      cJSON_AddNumberToObject(j, "loto_mape", r->loto_mape[t]);
  }
  return o;
}

int hs_cli_validate_cv(const char *path, const char *fit_path, int32_t jobs, bool json,
                       const char *out_path)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  cv_run_t r;
  memset(&r, 0, sizeof r);
  char **paths = NULL, *text = NULL;
  int32_t np = 0;
  cJSON *j = NULL;
  int rc = 2;
  if ((st = hs_file_read(fit_path, HS_JSON_MAX_BYTES, &text, NULL, &err)) != HS_OK ||
      (st = hs_pub_fit_spec_parse(text, fit_path, &r.spec, &err)) != HS_OK ||
      (st = hs_pub_paths(path, &paths, &np, &err)) != HS_OK)
    goto fail;
  r.tables = hs_calloc((size_t)(np > 0 ? np : 1), sizeof *r.tables);
  if (!r.tables) {
    st = hs_error_set(&err, HS_ENOMEM, "out of memory");
    goto fail;
  }
  for (int32_t i = 0; i < np; i++, r.n++)
    if ((st = hs_pub_table_load(paths[i], &r.tables[i], &err)) != HS_OK)
      goto fail;
  if ((st = cv_compute(&r, jobs, &err)) != HS_OK)
    goto fail;
  char why[256] = "";
  bool match = presets_match(&r, why, sizeof why);
  if (json || out_path) {
    if (!(j = to_json(&r, match))) {
      st = hs_error_set(&err, HS_ENOMEM, "out of memory");
      goto fail;
    }
    if (out_path && (st = hs_json_write_file(j, out_path, &err)) != HS_OK)
      goto fail;
    if (json && (st = hs_json_write_file(j, "-", &err)) != HS_OK)
      goto fail;
  }
  if (!json)
    print_text(&r, match, why);
  rc = match ? 0 : 1;
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  hs_json_free(j);
  free(text);
  hs_pub_paths_free(paths, np);
  cv_free(&r);
  return rc;
}
