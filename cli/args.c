/*
 * args.c - option parsing shared by the subcommands.
 *
 * Megatron-LM's flag names are accepted where they mean the same as a
 * hetsim option the subcommand has (aliases below, docs in README); an
 * unknown option gets a "did you mean" from the subcommand's options and
 * those aliases (common/suggest.c).
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Megatron-LM flag -> hetsim option of the same meaning. */
static const struct {
  const char *megatron, *hetsim;
} aliases[] = {
    {"tensor-model-parallel-size", "tp"},
    {"pipeline-model-parallel-size", "pp"},
    {"micro-batch-size", "microbatch-size"},
    {"global-batch-size", "global-batch"},
    {"seq-length", "seq-len"},
    {"recompute-granularity", "recompute"},         /* full | selective, as Megatron's */
    {"virtual-pipeline-model-parallel-size", "chunks"}, /* model chunks per device */
};

/* Megatron-LM flags that look like a hetsim option but mean something else. */
static const struct {
  const char *megatron, *hint;
} not_aliases[] = {
    {"num-layers-per-virtual-pipeline-stage",
     "hetsim counts model chunks per device instead: --chunks V with V = layers / (pp x this), "
     "and --schedule interleaved-1f1b"},
    {"data-parallel-size", "Megatron derives DP from the world size; hetsim takes --dp"},
};

static hs_opt_t *find_opt(hs_opt_t *opts, const char *name, size_t len)
{
  for (hs_opt_t *k = opts; k && k->name; k++)
    if (strlen(k->name) == len && strncmp(k->name, name, len) == 0)
      return k;
  return NULL;
}

static void unknown_option(const char *arg, const char *name, size_t len, hs_opt_t *opts)
{
  char q[128];
  snprintf(q, sizeof q, "%.*s", (int)HS_MIN(len, sizeof q - 1), name);
  for (size_t i = 0; i < HS_ARRAY_LEN(not_aliases); i++)
    if (strcmp(q, not_aliases[i].megatron) == 0) {
      fprintf(stderr, "hetsim: unknown option '%s': %s\n", arg, not_aliases[i].hint);
      return;
    }
  const char *names[96];
  char dashed[96][72];
  size_t n = 0;
  for (hs_opt_t *k = opts; k && k->name && n < 96; k++, n++)
    snprintf(dashed[n], sizeof dashed[n], "%s%s", strlen(k->name) == 1 ? "-" : "--", k->name);
  for (size_t i = 0; i < HS_ARRAY_LEN(aliases) && n < 96; i++)
    if (find_opt(opts, aliases[i].hetsim, strlen(aliases[i].hetsim)))
      snprintf(dashed[n++], sizeof dashed[0], "--%s", aliases[i].megatron);
  for (size_t i = 0; i < n; i++)
    names[i] = dashed[i];
  char hint[256], full[140];
  snprintf(full, sizeof full, "--%s", q);
  hs_suggest_names(full, names, n, hint, sizeof hint);
  fprintf(stderr, "hetsim: unknown option '%s'%s (see --help)\n", arg, hint);
}

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
  bool any = false;
  for (size_t i = 0; i < HS_ARRAY_LEN(aliases); i++)
    for (const hs_opt_t *o = opts; o && o->name; o++)
      if (strcmp(o->name, aliases[i].hetsim) == 0) {
        if (!any)
          printf("\nMegatron-LM names accepted:\n");
        any = true;
        printf("  --%-36s = --%s\n", aliases[i].megatron, aliases[i].hetsim);
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
      hs_opt_t *o = find_opt(opts, name, len);
      for (size_t k = 0; !o && k < HS_ARRAY_LEN(aliases); k++)
        if (strlen(aliases[k].megatron) == len && strncmp(aliases[k].megatron, name, len) == 0)
          o = find_opt(opts, aliases[k].hetsim, strlen(aliases[k].hetsim));
      if (!o) {
        unknown_option(a, name, len, opts);
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

/* How the user typed option `name`: "-j" for a one-letter name, "--name" else. */
static const char *dashes(const char *name) { return name[0] && !name[1] ? "-" : "--"; }

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
    fprintf(stderr, "hetsim: %s%s: must be an integer, got \"%s\"\n", dashes(name), name, o->value);
    return 2;
  }
  if (v < lo || v > hi) {
    fprintf(stderr, "hetsim: %s%s: must be between %lld and %lld, got %lld\n", dashes(name), name,
            (long long)lo, (long long)hi, v);
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
    fprintf(stderr, "hetsim: %s%s: must be a number, got \"%s\"\n", dashes(name), name, o->value);
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
