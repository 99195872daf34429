/*
 * link_catalog_json.c - reads the interconnect catalog (clusters/links.json,
 * docs/network.md "Calibrated interconnects") into an hs_link_catalog_t.
 *
 * File shape: {"description", "source", "interconnects": [entry, ...]}. An
 * entry has name, scope ("intra_node" or "nic"), GBps, latency_us,
 * nominal_GBps, system, source, date, and, when calibrated, "fit": {"gpu",
 * "files": [...]} naming the stored nccl-tests outputs (relative to
 * clusters/calibration/) whose fit GBps and latency_us are. Invariants after
 * a successful read: names unique and non-empty; every bandwidth within
 * [HS_BW_MIN_GBPS, HS_BW_MAX_GBPS]; latency within [0, HS_LATENCY_MAX_US];
 * every entry has source and date; a calibrated entry has 1 to
 * HS_LINK_FIT_FILES_MAX files with no ".." in them. Every error is one line
 * naming the file, the field path and the value.
 */
#include "clusters_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const top_known[] = {"description", "source", "interconnects", NULL};
static const char *const entry_known[] = {"name", "scope", "GBps", "latency_us", "nominal_GBps",
                                          "system", "source", "date", "fit", "notes", "nvls",
                                          "nvls_GBps", "nvls_latency_us", "nvls_fit", "rails", NULL};
static const char *const fit_known[] = {"gpu", "files", NULL};
static const char *const nvls_fit_known[] = {"file", "min_bytes", NULL};

static hs_status_t read_bw(const hs_jreader_t *r, const cJSON *o, const char *path, const char *key,
                           double *out)
{
  hs_status_t st = hs_json_number(r, o, path, key, true, 0.0, HS_JNUM_POSITIVE, HS_BW_MAX_GBPS, out);
  if (st == HS_OK && *out < HS_BW_MIN_GBPS)
    st = hs_error_set(r->err, HS_ELIMIT, "%s: %s.%s: must be at least %g GB/s, got %.17g", r->file, path,
                      key, HS_BW_MIN_GBPS, *out);
  return st;
}

static hs_status_t read_fit(const hs_jreader_t *r, const cJSON *e, const char *path, hs_interconnect_t *l)
{
  hs_status_t st = HS_OK;
  const cJSON *fit = NULL, *files = NULL;
  char fpath[256], lpath[256], apath[256];
  int n = 0;
  HS_CHECK(hs_json_object(r, e, path, "fit", false, &fit));
  if (!fit)
    return HS_OK;
  hs_json_path(fpath, sizeof fpath, path, "fit", 0);
  hs_json_warn_unknown(r, fit, fpath, fit_known);
  HS_CHECK(hs_json_string(r, fit, fpath, "gpu", true, NULL, l->fit_gpu, sizeof l->fit_gpu));
  HS_CHECK(hs_json_array(r, fit, fpath, "files", true, &files, &n));
  if (n < 1 || n > HS_LINK_FIT_FILES_MAX)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.files: must list 1 to %d nccl-tests files, got %d",
                         r->file, fpath, HS_LINK_FIT_FILES_MAX, n));
  hs_json_path(lpath, sizeof lpath, fpath, "files", 0);
  int i = 0;
  for (const cJSON *f = files->child; f; f = f->next, i++) {
    hs_json_path(apath, sizeof apath, lpath, NULL, i);
    if (!cJSON_IsString(f) || !f->valuestring[0])
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: must be a file name (a non-empty string)", r->file,
                           apath));
    if (strlen(f->valuestring) >= sizeof l->fit_files[0])
      HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: %s: longer than %zu bytes", r->file, apath,
                           sizeof l->fit_files[0] - 1));
    if (strstr(f->valuestring, "..") || f->valuestring[0] == '/')
      HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                           "%s: %s: \"%s\": must be a path inside clusters/calibration/ (no \"..\", "
                           "not absolute)", r->file, apath, f->valuestring));
    hs_strlcpy(l->fit_files[i], f->valuestring, sizeof l->fit_files[i]);
  }
  l->n_fit_files = n;
  l->calibrated = true;
cleanup:
  return st;
}

/* "nvls_GBps", "nvls_latency_us" (both or neither, only with "nvls": true,
 * nvls_GBps at most GBps: NVLS cannot beat the port it crosses) and
 * "nvls_fit": {"file", "min_bytes"} (only with both numbers). */
static hs_status_t read_nvls(const hs_jreader_t *r, const cJSON *e, const char *path, hs_interconnect_t *l)
{
  hs_status_t st = HS_OK;
  const cJSON *fit = NULL;
  char fpath[256];
  bool has_bw = cJSON_GetObjectItemCaseSensitive(e, "nvls_GBps") != NULL;
  bool has_lat = cJSON_GetObjectItemCaseSensitive(e, "nvls_latency_us") != NULL;
  bool has_fit = cJSON_GetObjectItemCaseSensitive(e, "nvls_fit") != NULL;
  if ((has_bw || has_lat || has_fit) && !l->nvls)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.%s: only for an interconnect with \"nvls\": true",
                        r->file, path, has_bw ? "nvls_GBps" : has_lat ? "nvls_latency_us" : "nvls_fit");
  if (has_bw != has_lat || (has_fit && !has_bw))
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: nvls_GBps and nvls_latency_us go together (and "
                        "nvls_fit needs both); got %s", r->file, path,
                        has_bw ? "nvls_GBps only" : has_lat ? "nvls_latency_us only" : "nvls_fit only");
  if (!has_bw)
    return HS_OK;
  HS_CHECK(read_bw(r, e, path, "nvls_GBps", &l->nvls_GBps));
  if (l->nvls_GBps > l->GBps)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.nvls_GBps: %.17g is above the port's GBps %.17g",
                         r->file, path, l->nvls_GBps, l->GBps));
  HS_CHECK(hs_json_number(r, e, path, "nvls_latency_us", true, 0.0, HS_JNUM_POSITIVE, HS_LATENCY_MAX_US,
                          &l->nvls_latency_us));
  if (!has_fit)
    return HS_OK;
  HS_CHECK(hs_json_object(r, e, path, "nvls_fit", true, &fit));
  hs_json_path(fpath, sizeof fpath, path, "nvls_fit", 0);
  hs_json_warn_unknown(r, fit, fpath, nvls_fit_known);
  HS_CHECK(hs_json_string(r, fit, fpath, "file", true, NULL, l->nvls_fit_file, sizeof l->nvls_fit_file));
  if (!l->nvls_fit_file[0] || strstr(l->nvls_fit_file, "..") || l->nvls_fit_file[0] == '/')
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.file: \"%s\": must be a path inside "
                         "clusters/calibration/ (not empty, no \"..\", not absolute)", r->file, fpath,
                         l->nvls_fit_file));
  HS_CHECK(hs_json_number(r, fit, fpath, "min_bytes", true, 0.0, HS_JNUM_NONNEG, 1e15,
                          &l->nvls_fit_min_bytes));
cleanup:
  return st;
}

static hs_status_t read_entry(const hs_jreader_t *r, const cJSON *e, const char *path, hs_interconnect_t *l)
{
  hs_status_t st = HS_OK;
  char scope[32];
  memset(l, 0, sizeof *l);
  HS_CHECK(hs_json_expect_object(r, e, path));
  hs_json_warn_unknown(r, e, path, entry_known);
  HS_CHECK(hs_json_string(r, e, path, "name", true, NULL, l->name, sizeof l->name));
  if (!l->name[0])
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.name: must not be empty", r->file, path));
  HS_CHECK(hs_json_string(r, e, path, "scope", true, NULL, scope, sizeof scope));
  if (strcmp(scope, "intra_node") == 0)
    l->scope = HS_LINK_SCOPE_INTRA_NODE;
  else if (strcmp(scope, "nic") == 0)
    l->scope = HS_LINK_SCOPE_NIC;
  else
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.scope: must be \"intra_node\" or \"nic\", got \"%s\"",
                         r->file, path, scope));
  HS_CHECK(read_bw(r, e, path, "GBps", &l->GBps));
  HS_CHECK(hs_json_number(r, e, path, "latency_us", true, 0.0, HS_JNUM_NONNEG, HS_LATENCY_MAX_US,
                          &l->latency_us));
  HS_CHECK(read_bw(r, e, path, "nominal_GBps", &l->nominal_GBps));
  HS_CHECK(hs_json_string(r, e, path, "system", false, "", l->system, sizeof l->system));
  HS_CHECK(hs_json_string(r, e, path, "source", true, NULL, l->source, sizeof l->source));
  HS_CHECK(hs_json_string(r, e, path, "date", true, NULL, l->date, sizeof l->date));
  if (!l->source[0] || !l->date[0])
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.%s: must not be empty (every catalog figure carries "
                         "its source and date)", r->file, path, l->source[0] ? "date" : "source"));
  HS_CHECK(hs_json_bool(r, e, path, "nvls", false, false, &l->nvls));
  if (l->nvls && l->scope != HS_LINK_SCOPE_INTRA_NODE)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.nvls: true only for an intra_node interconnect "
                         "(an NVLink switch), not scope nic", r->file, path));
  HS_CHECK(read_nvls(r, e, path, l));
  int64_t rails = 1;
  HS_CHECK(hs_json_int(r, e, path, "rails", false, 1, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &rails));
  if (rails > 1 && l->scope != HS_LINK_SCOPE_NIC)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.rails: only for a nic interconnect (NICs per node), "
                         "not scope intra_node, got %lld", r->file, path, (long long)rails));
  l->rails = (int32_t)rails;
  HS_CHECK(read_fit(r, e, path, l));
cleanup:
  return st;
}

static hs_status_t parse_root(const cJSON *root, const char *file, hs_link_catalog_t *cat, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_jreader_t rd = {file, err};
  const hs_jreader_t *r = &rd;
  const cJSON *arr = NULL;
  char epath[64];
  int n = 0;
  HS_CHECK(hs_json_expect_object(r, root, ""));
  hs_json_warn_unknown(r, root, "", top_known);
  HS_CHECK(hs_json_array(r, root, "", "interconnects", true, &arr, &n));
  if (n > HS_LINK_CATALOG_MAX)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: interconnects: at most %d entries, got %d", file,
                         HS_LINK_CATALOG_MAX, n));
  if (n > 0) {
    cat->links = hs_calloc((size_t)n, sizeof *cat->links);
    if (!cat->links)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  }
  int i = 0;
  for (const cJSON *e = arr->child; e; e = e->next, i++) {
    hs_json_path(epath, sizeof epath, "interconnects", NULL, i);
    HS_CHECK(read_entry(r, e, epath, &cat->links[i]));
    for (int j = 0; j < i; j++)
      if (strcmp(cat->links[j].name, cat->links[i].name) == 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.name: duplicate interconnect \"%s\" (also "
                             "interconnects[%d])", file, epath, cat->links[i].name, j));
    cat->n = (size_t)i + 1;
  }
cleanup:
  return st;
}

hs_status_t hs_link_catalog_parse(const char *text, const char *file, hs_link_catalog_t *out,
                                  hs_error_t *err)
{
  cJSON *root = NULL;
  hs_status_t st = HS_OK;
  if (!file)
    file = "(links)";
  hs_link_catalog_destroy(out);
  HS_CHECK(hs_json_parse(text, file, &root, err));
  HS_CHECK(parse_root(root, file, out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs_link_catalog_destroy(out);
  return st;
}

hs_status_t hs_link_catalog_load(const char *path, hs_link_catalog_t *out, hs_error_t *err)
{
  char buf[4096];
  cJSON *root = NULL;
  hs_status_t st = HS_OK;
  hs_link_catalog_destroy(out);
  if (!path) {
    snprintf(buf, sizeof buf, "%s/clusters/links.json", hs_data_dir());
    path = buf;
  }
  HS_CHECK(hs_json_load_file(path, &root, err));
  HS_CHECK(parse_root(root, hs_basename(path), out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs_link_catalog_destroy(out);
  return st;
}

static const char *const range_known[] = {"min_bytes", "max_bytes", "GBps", "latency_us", NULL};

hs_status_t hs_link_ranges_read(const hs_jreader_t *r, const cJSON *arr, const char *path,
                                double base_latency_us, hs_link_ranges_t *out)
{
  hs_status_t st = HS_OK;
  memset(out, 0, sizeof *out);
  out->base_latency_us = base_latency_us;
  if (!cJSON_IsArray(arr))
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: must be an array of ranges", r->file, path);
  int n = cJSON_GetArraySize(arr);
  if (n < 1 || n > HS_LINK_RANGES_MAX)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: %d ranges, need 1 to %d", r->file, path, n,
                        HS_LINK_RANGES_MAX);
  double prev_max = 0.0;
  int i = 0;
  for (const cJSON *e = arr->child; e; e = e->next, i++) {
    char p[160];
    hs_json_path(p, sizeof p, path, NULL, i);
    HS_CHECK(hs_json_expect_object(r, e, p));
    hs_json_warn_unknown(r, e, p, range_known);
    double lo = 0.0, hi = 0.0;
    HS_CHECK(hs_json_number(r, e, p, "min_bytes", true, 0.0, HS_JNUM_ANY, 1e30, &lo));
    if (lo < 0.0)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.min_bytes: %.17g, must be >= 0", r->file, p, lo));
    if (i == 0 && lo != 0.0)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.min_bytes: %.17g, the first range must start at 0 "
                           "(the ranges must cover every size)", r->file, p, lo));
    if (i > 0 && lo != prev_max)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.min_bytes: %.17g, but the range before ends at "
                           "max_bytes %.17g: ranges must not %s", r->file, p, lo, prev_max,
                           lo > prev_max ? "leave a gap" : "overlap"));
    bool has_max = cJSON_GetObjectItemCaseSensitive(e, "max_bytes") != NULL;
    if (i + 1 == n && has_max)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.max_bytes: the last range has no max_bytes "
                           "(it covers every larger size), got %.17g", r->file, p,
                           cJSON_GetObjectItemCaseSensitive(e, "max_bytes")->valuedouble));
    if (i + 1 < n) {
      HS_CHECK(hs_json_number(r, e, p, "max_bytes", true, 0.0, HS_JNUM_ANY, 1e30, &hi));
      if (!(hi > lo))
        HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.max_bytes: %.17g, must be above min_bytes %.17g",
                             r->file, p, hi, lo));
    }
    HS_CHECK(read_bw(r, e, p, "GBps", &out->GBps[i]));
    HS_CHECK(hs_json_number(r, e, p, "latency_us", true, 0.0, HS_JNUM_NONNEG, HS_LATENCY_MAX_US,
                            &out->latency_us[i]));
    out->min_bytes[i] = lo;
    prev_max = hi;
  }
  out->n = n;
cleanup:
  return st;
}
