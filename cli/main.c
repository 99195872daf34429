/*
 * main.c - `hetsim`: git-style subcommands over the library.
 *
 * Standard output is closed here, after the command returns (coreutils'
 * close_stdout): text and JSON printed to a full disk, /dev/full, a closed
 * pipe's file or past `ulimit -f` fail at a write or the final flush, and
 * the exit code says so (docs/robustness.md, "Outputs"). Files go through
 * common/hs_output.h.
 */
/* SIGXFSZ is XSI */
#define _XOPEN_SOURCE 700

#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

/* Flushes and closes stdout; on failure prints what was lost and returns the
 * exit code for an unwritten output, else rc. A command that already failed
 * (rc 1 or 2) has said why; its code stands and nothing more is printed. */
static int close_stdout(int rc)
{
  bool bad = ferror(stdout) != 0; /* a failed write whose errno is gone */
  errno = 0;
  int e = 0;
  if (fclose(stdout) != 0) {
    bad = true;
    e = errno;
  }
  if (!bad || rc == HS_EXIT_INTERNAL || rc == HS_EXIT_USAGE)
    return rc;
  fprintf(stderr, "hetsim: standard output: write error%s%s (the output is incomplete)\n",
          e ? ": " : "", e ? strerror(e) : "");
  return hs_status_exit_code(HS_EIO);
}

static const hs_cmd_t commands[] = {
    {"list", "list models, clusters, gpus, strategies or schedules", hs_cmd_list},
    {"show", "show a model or a cluster (text or --json)", hs_cmd_show},
    {"simulate", "simulate one training iteration of a plan", hs_cmd_simulate},
    {"plan", "search a plan with one strategy, simulate it, write plan.json", hs_cmd_plan},
    {"compare", "compare strategies on a model and cluster, or a named scenario", hs_cmd_compare},
    {"elastic", "spot preemptions: goodput, re-planning and recovery what-if", hs_cmd_elastic},
    {"replay", "execute a plan for real (cpu threads or cuda/nccl), write measured.json", hs_cmd_replay},
    {"calibrate", "microbenchmark a device or read measurements, fit the device profile", hs_cmd_calibrate},
    {"import", "read nccl-tests output, Megatron-LM logs, PyTorch profiler traces", hs_cmd_import},
    {"validate", "compare a simulator report with a replay's measurements", hs_cmd_validate},
    {"sweep", "what-if grid over clusters, links, models, strategies, prices (-j, mpirun)", hs_cmd_sweep},
    {"whatif", "rank GPU purchases within a budget: tokens/s, $/M tokens, Pareto front", hs_cmd_whatif},
    {"export", "sweep CSV to notebook/JSON/tidy CSV; Chrome trace to SVG Gantt chart", hs_cmd_export},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: hetsim COMMAND [options]   (hetsim COMMAND --help for details)\n\n"
             "Plans and predicts distributed DNN training on heterogeneous GPU clusters.\n\n"
             "commands:\n");
  for (const hs_cmd_t *c = commands; c->name; c++)
    fprintf(f, "  %-10s %s\n", c->name, c->summary);
}

static int run(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("hetsim 0.1.0\n");
    return 0;
  }
  for (const hs_cmd_t *c = commands; c->name; c++)
    if (strcmp(argv[1], c->name) == 0)
      return c->run(argc - 1, argv + 1);
  const char *names[64];
  size_t n = 0;
  for (const hs_cmd_t *c = commands; c->name && n < HS_ARRAY_LEN(names); c++)
    names[n++] = c->name;
  char hint[256];
  hs_suggest_names(argv[1], names, n, hint, sizeof hint);
  fprintf(stderr, "hetsim: unknown command '%s'%s\n\n", argv[1], hint);
  usage(stderr);
  return 2;
}

int main(int argc, char **argv)
{
  /* past `ulimit -f` a write fails with EFBIG instead of the kernel killing
   * the process with SIGXFSZ, so the error can be reported */
  signal(SIGXFSZ, SIG_IGN);
  return close_stdout(run(argc, argv));
}
