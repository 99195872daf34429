/*
 * args.c - option parsing shared by the subcommands.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void print_usage(const char *usage, const hs_opt_t *opts)
{
  printf("%s\n", usage);
  if (opts && opts[0].name)
    printf("\noptions:\n");
  for (const hs_opt_t *o = opts; o && o->name; o++) {
    char left[64];
    snprintf(left, sizeof left, "%s%s%s", strlen(o->name) == 1 ? "-" : "--", o->name,
             o->takes_value ? " VALUE" : "");
    printf("  %-26s %s\n", left, o->help);
  }
}

int hs_cli_parse(int argc, char **argv, hs_opt_t *opts, const char **pos, int max_pos, int *n_pos,
                 const char *usage)
{
  *n_pos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      print_usage(usage, opts);
      return -1;
    }
    if (a[0] == '-' && a[1] != '\0') {
      const char *name = a + (a[1] == '-' ? 2 : 1);
      const char *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      hs_opt_t *o = NULL;
      for (hs_opt_t *k = opts; k && k->name; k++)
        if (strlen(k->name) == len && strncmp(k->name, name, len) == 0)
          o = k;
      if (!o) {
        fprintf(stderr, "hetsim: unknown option '%s' (see --help)\n", a);
        return 2;
      }
      o->set = true;
      if (o->takes_value) {
        if (eq) {
          o->value = eq + 1;
        } else if (i + 1 < argc) {
          o->value = argv[++i];
        } else {
          fprintf(stderr, "hetsim: option '%s' needs a value\n", a);
          return 2;
        }
      } else if (eq) {
        fprintf(stderr, "hetsim: option '--%.*s' takes no value\n", (int)len, name);
        return 2;
      }
      continue;
    }
    if (*n_pos >= max_pos) {
      fprintf(stderr, "hetsim: unexpected argument '%s' (see --help)\n", a);
      return 2;
    }
    pos[(*n_pos)++] = a;
  }
  return 0;
}

const hs_opt_t *hs_cli_opt(const hs_opt_t *opts, const char *name)
{
  for (const hs_opt_t *o = opts; o && o->name; o++)
    if (strcmp(o->name, name) == 0)
      return o->set ? o : NULL;
  return NULL;
}

int hs_cli_int(const hs_opt_t *opts, const char *name, int64_t def, int64_t lo, int64_t hi,
               int64_t *out)
{
  const hs_opt_t *o = hs_cli_opt(opts, name);
  if (!o) {
    *out = def;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(o->value, &end, 10);
  if (errno || !end || *end || end == o->value) {
    fprintf(stderr, "hetsim: --%s: must be an integer, got \"%s\"\n", name, o->value);
    return 2;
  }
  if (v < lo || v > hi) {
    fprintf(stderr, "hetsim: --%s: must be between %lld and %lld, got %lld\n", name, (long long)lo,
            (long long)hi, v);
    return 2;
  }
  *out = v;
  return 0;
}

int hs_cli_double(const hs_opt_t *opts, const char *name, double def, double *out)
{
  const hs_opt_t *o = hs_cli_opt(opts, name);
  if (!o) {
    *out = def;
    return 0;
  }
  char *end = NULL;
  double v = strtod(o->value, &end);
  if (!end || *end || end == o->value || !isfinite(v)) {
    fprintf(stderr, "hetsim: --%s: must be a number, got \"%s\"\n", name, o->value);
    return 2;
  }
  *out = v;
  return 0;
}

int hs_cli_fail(const hs_error_t *err, hs_status_t st)
{
  fprintf(stderr, "hetsim: %s\n", err && err->msg[0] ? err->msg : hs_status_message(st));
  int code = hs_status_exit_code(st);
  return code ? code : 1;
}
