/*
 * link_refit.c - re-fits a calibrated interconnect of clusters/links.json
 * from the nccl-tests files it names (docs/network.md "Calibrated
 * interconnects"): the same import and fit as `hetsim import nccl-tests`, so
 * the catalog's numbers are reproducible from the stored points. Used by
 * `hetsim calibrate links` and tests/test_link_catalog.c. Reads files only;
 * no global state.
 */
#include "hs_validate.h"

#include <stdio.h>
#include <string.h>

hs_status_t hs_link_refit(const hs_interconnect_t *l, const char *calib_dir, hs_nt_import_t *im,
                          double *GBps, double *latency_us, hs_error_t *err)
{
  char dir[2048], paths[HS_LINK_FIT_FILES_MAX][2048 + 132];
  const char *argv[HS_LINK_FIT_FILES_MAX];
  hs_nt_opts_t o;
  hs_nt_import_init(im);
  if (!l->calibrated || l->n_fit_files < 1)
    return hs_error_set(err, HS_EINVAL, "links.json: interconnect \"%s\" is uncalibrated: no nccl-tests "
                        "files to fit", l->name);
  if (!calib_dir) {
    snprintf(dir, sizeof dir, "%s/clusters/calibration", hs_data_dir());
    calib_dir = dir;
  }
  for (int32_t i = 0; i < l->n_fit_files; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/%s", calib_dir, l->fit_files[i]);
    argv[i] = paths[i];
  }
  hs_nt_opts_init(&o);
  o.nic_rails = l->rails; /* the entry's NICs per node: the fit's rail rotation */
  hs_status_t st = hs_nt_import(argv, l->n_fit_files, &o, l->fit_gpu, im, err);
  if (st != HS_OK)
    return st;
  const hs_nt_links_t *L = &im->links;
  bool nic = l->scope == HS_LINK_SCOPE_NIC;
  if (nic ? !L->has_nic : !L->has_intra)
    return hs_error_set(err, HS_EINVAL, "links.json: interconnect \"%s\": its files set no %s link (%s "
                        "needs a %s file)", l->name, hs_link_scope_name(l->scope), l->name,
                        nic ? "multi-node" : "single-node");
  *GBps = nic ? L->nic_GBps : L->intra_GBps;
  *latency_us = nic ? L->nic_latency_us : L->intra_latency_us;
  return HS_OK;
}
