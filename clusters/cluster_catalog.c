/*
 * cluster_catalog.c - where clusters come from: a spec names either a file
 * (a path or anything ending in .json) or an entry of the built-in catalog
 * (<data dir>/clusters/catalog/<name>.json); the catalog listing is sorted by
 * name. Parsing is cluster_json.c's; this file only finds and reads files, so
 * the dependency runs one way: catalog -> json -> cluster.
 */
#include "clusters_internal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A spec is a path when it names a directory or ends in .json; otherwise a
 * catalog name, which must be a plain file name. */
static bool spec_is_path(const char *spec)
{
  return strchr(spec, '/') != NULL || hs_str_endswith(spec, ".json");
}

hs_status_t hs_cluster_load(const char *spec, hs_cluster_t *out, hs_error_t *err)
{
  char path[4096];
  char *text = NULL;
  hs_status_t st = HS_OK;
  hs_cluster_destroy(out);
  if (!spec || !*spec)
    return hs_error_set(err, HS_EINVAL, "cluster: empty name");
  if (spec_is_path(spec)) {
    hs_strlcpy(path, spec, sizeof path);
  } else {
    snprintf(path, sizeof path, "%s/clusters/catalog/%s.json", hs_data_dir(), spec);
    struct stat sb;
    if (stat(path, &sb) != 0)
      return hs_error_set(err, HS_ENOTFOUND,
                          "cluster \"%s\": not in the catalog (hetsim list clusters) and not a .json path",
                          spec);
  }
  HS_CHECK(hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err));
  HS_CHECK(hs_cluster_parse(text, hs_basename(path), out, err));
cleanup:
  free(text);
  return st;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

hs_status_t hs_cluster_catalog_list(char ***names, size_t *n, hs_error_t *err)
{
  char dir[4096];
  char **list = NULL;
  size_t count = 0, cap = 0;
  hs_status_t st = HS_OK;
  *names = NULL;
  *n = 0;
  snprintf(dir, sizeof dir, "%s/clusters/catalog", hs_data_dir());
  DIR *d = opendir(dir);
  if (!d)
    return hs_error_set(err, HS_ENOTFOUND, "%s: cannot open the cluster catalog", dir);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || !hs_str_endswith(e->d_name, ".json"))
      continue;
    void *data = list;
    if (hs_reserve(&data, &cap, count + 1, sizeof(char *)) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory listing %s", dir));
    list = data;
    list[count] = hs_calloc(len - 4, 1);
    if (!list[count])
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory listing %s", dir));
    memcpy(list[count], e->d_name, len - 5);
    count++;
  }
  qsort(list, count, sizeof(char *), cmp_names);
  *names = list;
  *n = count;
  list = NULL;
  count = 0;
cleanup:
  closedir(d);
  hs_cluster_catalog_free(list, count);
  return st;
}

void hs_cluster_catalog_free(char **names, size_t n)
{
  if (!names)
    return;
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}
