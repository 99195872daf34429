/*
 * catalog.c - the shipped model catalog: models/catalog/<name>.json under
 * hs_data_dir(). A name is a file stem; listing is sorted by strcmp so that
 * `hetsim list models` is the same on every machine.
 */
#include "models_internal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define CATALOG_SUBDIR "models/catalog"

bool hs__model_catalog_path(const char *name, char *buf, size_t n)
{
  int len = snprintf(buf, n, "%s/%s/%s.json", hs_data_dir(), CATALOG_SUBDIR, name);
  return len > 0 && (size_t)len < n;
}

static int cmp_names(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void hs_model_catalog_free(char **names, size_t n)
{
  if (!names)
    return;
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

hs_status_t hs_model_catalog_list(char ***names, size_t *n, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  char dir_path[4096];
  char **list = NULL;
  size_t count = 0, cap = 0;
  DIR *dir = NULL;
  *names = NULL;
  *n = 0;

  int len = snprintf(dir_path, sizeof dir_path, "%s/%s", hs_data_dir(), CATALOG_SUBDIR);
  if (len < 0 || (size_t)len >= sizeof dir_path)
    return hs_error_set(err, HS_ELIMIT, "model catalog path too long");
  dir = opendir(dir_path);
  if (!dir)
    return hs_error_set(err, HS_ENOTFOUND,
                        "%s: cannot open the model catalog (set HETSIM_DATA to the source tree)",
                        dir_path);
  for (struct dirent *e = readdir(dir); e; e = readdir(dir)) {
    size_t nl = strlen(e->d_name);
    if (nl <= 5 || e->d_name[0] == '.' || !hs_str_endswith(e->d_name, ".json"))
      continue;
    if (hs_reserve((void **)&list, &cap, count + 1, sizeof(*list)) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory listing the model catalog"));
    char *s = malloc(nl - 4);
    if (!s)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory listing the model catalog"));
    memcpy(s, e->d_name, nl - 5);
    s[nl - 5] = '\0';
    list[count++] = s;
  }
  if (count > 1)
    qsort(list, count, sizeof(*list), cmp_names);
  *names = list;
  *n = count;
  list = NULL;
  count = 0;
cleanup:
  closedir(dir);
  hs_model_catalog_free(list, count);
  return st;
}
