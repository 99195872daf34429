/*
 * main.c - `hetsim`: git-style subcommands over the library.
 */
#include "cli.h"

#include <string.h>

static const hs_cmd_t commands[] = {
    {"list", "list models, clusters, gpus, strategies or schedules", hs_cmd_list},
    {"show", "show a model or a cluster (text or --json)", hs_cmd_show},
    {"simulate", "simulate one training iteration of a plan", hs_cmd_simulate},
    {"plan", "search a plan with one strategy, simulate it, write plan.json", hs_cmd_plan},
    {"compare", "compare strategies on a model and cluster, or a named scenario", hs_cmd_compare},
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

int main(int argc, char **argv)
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
  fprintf(stderr, "hetsim: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
