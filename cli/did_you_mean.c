/*
 * did_you_mean.c - " (did you mean ...?)" hints for the names the command
 * line takes from a fixed list: planner strategies (search/registry.c's
 * hs_planners). Options, GPUs and models get theirs where they are looked
 * up (cli/args.c, clusters/gpu_catalog.c, models/model_json.c), commands in
 * cli/main.c. All through common/suggest.c's ranking.
 */
#include "cli.h"
#include "hs_search.h"

void hs_cli_strategy_hint(const char *name, char *buf, size_t n)
{
  const char *names[64];
  size_t k = 0;
  for (const hs_planner_type_t *const *t = hs_planners; *t && k < HS_ARRAY_LEN(names); t++)
    names[k++] = (*t)->name;
  hs_suggest_names(name ? name : "", names, k, buf, n);
}
