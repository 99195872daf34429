/*
 * replay_main.c - runs a fuzz target's LLVMFuzzerTestOneInput on every
 * regular file of the directories (or files) named on the command line, in
 * sorted order so that a failure is reproducible. Used by ctest in builds
 * without libFuzzer: the seed corpus and every crash input ever found are
 * replayed forever after. A crash, a sanitizer report or a leak fails the
 * test; exit 0 after at least one input, 1 when no input was found.
 */
#include "fuzz_util.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return -1;
    }
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap)
      break;
    cap *= 2;
    uint8_t *nb = realloc(buf, cap);
    if (!nb)
      free(buf);
    buf = nb;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 0;
}

static int run_path(const char *path, int *n_run)
{
  struct stat sb;
  if (stat(path, &sb) != 0) {
    fprintf(stderr, "replay: %s: no such file or directory\n", path);
    return -1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    if (run_file(path) != 0)
      return -1;
    (*n_run)++;
    return 0;
  }
  DIR *d = opendir(path);
  if (!d)
    return -1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **nn = realloc(names, cap * sizeof *names);
      if (!nn)
        break;
      names = nn;
    }
    size_t l = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(l);
    if (!names[n])
      break;
    snprintf(names[n], l, "%s/%s", path, e->d_name);
    n++;
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, cmp_str);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat fs;
    if (stat(names[i], &fs) == 0 && S_ISREG(fs.st_mode)) {
      if (run_file(names[i]) != 0)
        rc = -1;
      else
        (*n_run)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv)
{
  int n_run = 0, rc = 0;
  for (int i = 1; i < argc; i++) {
    int before = n_run;
    /* A regression directory may not exist yet for a target that never
     * crashed: only the seed corpus (first argument) is required. */
    struct stat sb;
    if (i > 1 && stat(argv[i], &sb) != 0)
      continue;
    if (run_path(argv[i], &n_run) != 0)
      rc = 1;
    printf("replay: %s: %d inputs\n", argv[i], n_run - before);
  }
  if (n_run == 0) {
    fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  printf("replay: %d inputs, no crash\n", n_run);
  return rc;
}
