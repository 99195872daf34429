/*
 * cmd_validate_published.c - `hetsim validate --published [DIR|FILE]`:
 * simulates every row of the published validation tables (default
 * validate/published/ under the data directory) and prints predicted,
 * measured and error per row, MAPE and rank order per table, Spearman,
 * top-pick regret and out-of-memory counts (--json: one
 * object with "tables"). Exit 0 whatever the errors are: the bounds are
 * asserted by ctest (tests/test_validate_published.c), not here.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"
#include "hs_bands.h" /* --bands-out */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

int hs_cmd_validate_published(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"published", false, "run the published validation suite (DIR or FILE, default validate/published)"},
      {"json", false, "print the results as JSON"},
      {"o", true, "write the results JSON here"},
      {"cv", false, "fit the framework host overheads on the training split, print leave-one-table-out errors"},
      {"fit", true, "the fit's split and grid (default validate/published-fit.json)"},
      {"j", true, "--cv: simulations in parallel (default: the online CPUs)"},
      {"bands-out", true, "write every row's residual for the error bands here (validate/error-bands.json)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim validate --published [DIR|FILE] [--json] [-o results.json]\n"
                        "       hetsim validate --published [DIR|FILE] --cv [--fit fit.json] [-j N] [--json]");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (hs_cli_opt(opts, "cv")) {
    char dir[1024], fit[1024];
    snprintf(dir, sizeof dir, "%s/validate/published", hs_data_dir());
    snprintf(fit, sizeof fit, "%s/validate/published-fit.json", hs_data_dir());
    const hs_opt_t *of = hs_cli_opt(opts, "fit"), *oo2 = hs_cli_opt(opts, "o");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t jobs = cpus > 0 ? (cpus < 64 ? cpus : 64) : 1;
    if ((rc = hs_cli_int(opts, "j", jobs, 1, 64, &jobs)))
      return rc;
    return hs_cli_validate_cv(npos ? pos[0] : dir, of ? of->value : fit, (int32_t)jobs,
                              hs_cli_opt(opts, "json") != NULL, oo2 ? oo2->value : NULL);
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  char def[1024];
  snprintf(def, sizeof def, "%s/validate/published", hs_data_dir());
  char **paths = NULL;
  int32_t n = 0;
  hs_pub_table_t t;
  hs_pub_table_init(&t);
  hs_pub_result_t *res = NULL;
  cJSON *all = NULL, *arr = NULL;
  bool json = hs_cli_opt(opts, "json") != NULL;
  const hs_opt_t *oo = hs_cli_opt(opts, "o"), *obands = hs_cli_opt(opts, "bands-out");
  hs_bands_t bands; /* --bands-out: residuals of every table */
  hs_bands_init(&bands);
  if ((st = hs_pub_paths(npos ? pos[0] : def, &paths, &n, &err)) != HS_OK)
    goto fail;
  if (json || oo) {
    all = cJSON_CreateObject();
    arr = all ? cJSON_AddArrayToObject(all, "tables") : NULL;
    if (!arr) {
      st = hs_error_set(&err, HS_ENOMEM, "out of memory");
      goto fail;
    }
  }
  for (int32_t i = 0; i < n; i++) {
    if ((st = hs_pub_table_load(paths[i], &t, &err)) != HS_OK)
      goto fail;
    res = hs_calloc((size_t)t.n_rows, sizeof *res);
    if (!res) {
      st = hs_error_set(&err, HS_ENOMEM, "out of memory");
      goto fail;
    }
    hs_pub_summary_t sum;
    if ((st = hs_pub_run(&t, res, &sum, &err)) != HS_OK)
      goto fail;
    if (obands && (st = hs_bands_add_table(&bands, &t, res, &err)) != HS_OK)
      goto fail;
    if (!json)
      hs_pub_print(&t, res, &sum, stdout);
    if (arr) {
      cJSON *j = hs_pub_to_json(&t, res, &sum);
      if (!j || !cJSON_AddItemToArray(arr, j)) {
        cJSON_Delete(j);
        st = hs_error_set(&err, HS_ENOMEM, "out of memory");
        goto fail;
      }
    }
    free(res);
    res = NULL;
    hs_pub_table_destroy(&t);
  }
  if (all && !(all = hs_json_stamp_version(all, HS_SCHEMA_VERSION))) {
    st = hs_error_set(&err, HS_ENOMEM, "out of memory");
    goto fail;
  }
  if (oo && (st = hs_json_write_file(all, oo->value, &err)) != HS_OK)
    goto fail;
  if (json && (st = hs_json_write_file(all, "-", &err)) != HS_OK)
    goto fail;
  if (obands && (st = hs_bands_write_json(&bands, obands->value, &err)) != HS_OK)
    goto fail;
  rc = 0;
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  hs_json_free(all);
  free(res);
  hs_pub_table_destroy(&t);
  hs_pub_paths_free(paths, n);
  hs_bands_destroy(&bands);
  return rc;
}
