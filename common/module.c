/*
 * module.c - dlopen of hetsim's optional backend modules (hs_module.h has
 * the search order and why they are modules at all).
 */
#include "hs_module.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef HS_MODULE_DIR
#define HS_MODULE_DIR "."
#endif

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* Candidate k (0, 1, 2, ...) for `file`; false past the last one. */
static bool candidate(int k, const char *file, char *buf, size_t n)
{
  const char *env = getenv("HETSIM_MODULE_DIR");
  if (env && *env) {
    if (k > 0)
      return false;
    snprintf(buf, n, "%s/%s", env, file);
    return true;
  }
  if (k == 0) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
      exe[len] = '\0';
      char *slash = strrchr(exe, '/');
      if (slash) {
        *slash = '\0';
        snprintf(buf, n, "%s/%s", exe, file);
        return true;
      }
    }
    k = 1; /* no /proc: the build directory is the only place */
  }
  if (k == 1) {
    snprintf(buf, n, "%s/%s", HS_MODULE_DIR, file);
    return true;
  }
  return false;
}

void hs_module_path(const char *file, char *buf, size_t n)
{
  char first[PATH_MAX] = "";
  for (int k = 0; candidate(k, file, buf, n); k++) {
    if (k == 0)
      hs_strlcpy(first, buf, sizeof first);
    if (access(buf, F_OK) == 0)
      return;
  }
  hs_strlcpy(buf, first, n);
}

/* The build hint with "<build dir>" replaced by the directory this library
 * was built in, so the message gives a command that works as printed. */
static void hint_of(const char *hint, char *buf, size_t n)
{
  const char *at = strstr(hint, "<build dir>");
  if (!at)
    snprintf(buf, n, "%s", hint);
  else
    snprintf(buf, n, "%.*s%s%s", (int)(at - hint), hint, HS_MODULE_DIR, at + strlen("<build dir>"));
}

hs_status_t hs_module_load(const hs_module_spec_t *spec, const void **table, hs_error_t *err)
{
  char path[PATH_MAX], hint[1024];
  *table = NULL;
  hint_of(spec->build_hint, hint, sizeof hint);
  hs_module_path(spec->file, path, sizeof path);
  if (access(path, F_OK) != 0)
    return hs_error_set(err, HS_EUNSUPPORTED, "%s needs the module %s, which is not there: %s",
                        spec->what, path, hint);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return hs_error_set(err, HS_EUNSUPPORTED, "%s: cannot load the module %s: %s (%s)", spec->what,
                        path, why ? why : "unknown reason", hint);
  }
  const hs_module_abi_t *abi = dlsym(h, spec->symbol);
  if (!abi)
    return hs_error_set(err, HS_EUNSUPPORTED, "%s: the module %s has no symbol %s: %s", spec->what,
                        path, spec->symbol, hint);
  if (abi->version != spec->abi.version || abi->size != spec->abi.size ||
      abi->fingerprint != spec->abi.fingerprint)
    return hs_error_set(err, HS_EUNSUPPORTED,
                        "%s: the module %s was built from other sources (table version %u size "
                        "%u fingerprint %llx, this hetsim wants %u, %u, %llx): rebuild it, %s",
                        spec->what, path, abi->version, abi->size,
                        (unsigned long long)abi->fingerprint, spec->abi.version, spec->abi.size,
                        (unsigned long long)spec->abi.fingerprint, hint);
  *table = abi;
  return HS_OK;
}
