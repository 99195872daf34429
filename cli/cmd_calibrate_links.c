/*
 * cmd_calibrate_links.c - `hetsim calibrate links`: re-fit every calibrated
 * interconnect of clusters/links.json from its stored nccl-tests files and
 * print the catalog's numbers beside the re-fit, the datasheet figure and
 * the measured-against-predicted busbw at the largest size; list the
 * uncalibrated entries; then every NVLS fit (nvls_GBps / nvls_latency_us
 * from its published busbw table, hs_link_refit_nvls; the "nominal" column
 * is the port's GBps). Exit 1 when a re-fit disagrees with the catalog by
 * more than its printed rounding (0.1%), so the catalog cannot drift from its
 * data (docs/network.md "Calibrated interconnects").
 */
#include "cli.h"
#include "hs_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REFIT_REL_TOL 1e-3 /* links.json keeps 4 significant digits */

int hs_cmd_calibrate_links(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"links", true, "interconnect catalog to check (default: clusters/links.json)"},
      {"calibration-dir", true, "where its fit files lie (default: clusters/calibration)"},
      {NULL},
  };
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, NULL, 0, &npos,
                        "usage: hetsim calibrate links [--links links.json] [--calibration-dir DIR]\n"
                        "Re-fits every calibrated interconnect from its stored nccl-tests files.");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *ol = hs_cli_opt(opts, "links"), *od = hs_cli_opt(opts, "calibration-dir");
  hs_error_t err;
  hs_error_init(&err);
  hs_link_catalog_t cat;
  hs_link_catalog_init(&cat);
  hs_status_t st = hs_link_catalog_load(ol ? ol->value : NULL, &cat, &err);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  int n_bad = 0;
  printf("%-18s %-10s %9s %18s %18s %9s  %s\n", "interconnect", "scope", "nominal", "catalog",
         "re-fit", "max err", "fit files (nccl-tests busbw at the largest size: measured / predicted)");
  for (size_t i = 0; i < cat.n; i++) {
    const hs_interconnect_t *l = &cat.links[i];
    if (!l->calibrated)
      continue;
    hs_nt_import_t im;
    double GBps = 0, lat = 0;
    st = hs_link_refit(l, od ? od->value : NULL, &im, &GBps, &lat, &err);
    if (st != HS_OK) {
      hs_nt_import_destroy(&im);
      hs_link_catalog_destroy(&cat);
      return hs_cli_fail(&err, st);
    }
    bool ok = fabs(GBps - l->GBps) <= REFIT_REL_TOL * l->GBps &&
              fabs(lat - l->latency_us) <= REFIT_REL_TOL * fmax(l->latency_us, 1.0);
    n_bad += !ok;
    double max_err = 0;
    for (int32_t f = 0; f < im.n_files; f++)
      max_err = fmax(max_err, im.fits[f].max_rel_err);
    char cat_s[48], fit_s[48];
    snprintf(cat_s, sizeof cat_s, "%.4g GB/s %.3g us", l->GBps, l->latency_us);
    snprintf(fit_s, sizeof fit_s, "%.4g GB/s %.3g us", GBps, lat);
    printf("%-18s %-10s %4.0f GB/s %18s %18s %8.1f%%  ", l->name, hs_link_scope_name(l->scope),
           l->nominal_GBps, cat_s, fit_s, 100 * max_err);
    for (int32_t f = 0; f < im.n_files; f++) {
      const hs_nccl_tests_t *t = &im.files[f];
      int32_t r = t->n_rows - 1;
      printf("%s%s %.1f/%.1f", f ? ", " : "", l->fit_files[f], r >= 0 ? t->rows[r].busbw_GBps[0] : 0.0,
             r >= 0 ? im.fits[f].pred_busbw_GBps[r] : 0.0);
    }
    printf("%s\n", ok ? "" : "  MISMATCH: links.json disagrees with its files");
    hs_nt_import_destroy(&im);
  }
  for (size_t i = 0; i < cat.n; i++) {
    const hs_interconnect_t *l = &cat.links[i];
    if (!l->nvls_fit_file[0])
      continue;
    hs_busbw_table_t t;
    hs_nvls_fit_t f;
    st = hs_link_refit_nvls(l, od ? od->value : NULL, &t, &f, &err);
    if (st != HS_OK) {
      hs_busbw_table_destroy(&t);
      hs_link_catalog_destroy(&cat);
      return hs_cli_fail(&err, st);
    }
    bool ok = fabs(f.GBps - l->nvls_GBps) <= REFIT_REL_TOL * l->nvls_GBps &&
              fabs(f.latency_us - l->nvls_latency_us) <= REFIT_REL_TOL * fmax(l->nvls_latency_us, 1.0);
    n_bad += !ok;
    char cat_s[48], fit_s[48];
    snprintf(cat_s, sizeof cat_s, "%.4g GB/s %.4g us", l->nvls_GBps, l->nvls_latency_us);
    snprintf(fit_s, sizeof fit_s, "%.4g GB/s %.4g us", f.GBps, f.latency_us);
    int32_t r = t.n - 1;
    double n = t.nranks, S = t.size_bytes[r];
    double T = f.latency_us * 1e-6 + (n + 1) * S / (n * f.GBps * HS_GB);
    printf("%-18s %-10s %4.0f GB/s %18s %18s %8.1f%%  %s (%d rows >= %.0f B) %.1f/%.1f%s\n", l->name,
           "nvls", l->GBps, cat_s, fit_s, 100 * f.max_rel, l->nvls_fit_file, f.n_rows,
           l->nvls_fit_min_bytes, t.busbw_GBps[r], S * hs_nt_busbw_factor(t.coll, t.nranks) / T / HS_GB,
           ok ? "" : "  MISMATCH: links.json disagrees with its file");
    hs_busbw_table_destroy(&t);
  }
  printf("uncalibrated (no nccl-tests fit file):");
  const char *sep = " ";
  for (size_t i = 0; i < cat.n; i++)
    if (!cat.links[i].calibrated) {
      printf("%s%s %s %.4g GB/s", sep, cat.links[i].name, hs_link_scope_name(cat.links[i].scope),
             cat.links[i].GBps);
      sep = "; ";
    }
  printf("%s\n", *sep == ' ' ? " none" : "");
  hs_link_catalog_destroy(&cat);
  if (n_bad) {
    fprintf(stderr, "hetsim calibrate links: %d interconnect%s of the catalog disagree%s with a re-fit of "
            "%s files\n", n_bad, n_bad == 1 ? "" : "s", n_bad == 1 ? "s" : "", n_bad == 1 ? "its" : "their");
    return 1;
  }
  return 0;
}
