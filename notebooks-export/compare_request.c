/*
 * compare_request.c - the request side of a strategy comparison
 * (hs_compare.h): the strategy list, a scenario's defaults, and the run
 * with its baseline and ranking, shared by `hetsim compare` and the
 * Python package's compare().
 *
 * Invariants: nothing here prints; the same request gives the same names,
 * options and rows whichever caller makes it.
 */
#include "hs_compare.h"

#include <string.h>

int hs_compare_strategies(const char *given, const hs_scenario_t *scn, char *buf, size_t buf_n,
                          const char **names, size_t max, size_t *n)
{
  *n = 0;
  if (buf_n == 0)
    return -1;
  buf[0] = '\0';
  if (given)
    hs_strlcpy(buf, given, buf_n);
  else if (scn)
    hs_strlcpy(buf, scn->strategies, buf_n);
  else
    for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
      size_t l = strlen(buf);
      snprintf(buf + l, buf_n - l, "%s%s", l ? "," : "", (*t)->name);
    }
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && *n < max;
       tok = strtok_r(NULL, ",", &save))
    names[(*n)++] = tok;
  for (size_t i = 0; given && i < *n; i++)
    if (!hs_planner_find(names[i]))
      return (int)i;
  return -1;
}

bool hs_compare_listed(const char *const *names, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return true;
  return false;
}

void hs_compare_scenario_opts(const hs_scenario_t *scn, int64_t n_devices, bool batch_given,
                              bool precision_given, hs_plan_opts_t *po)
{
  if (!scn)
    return;
  if (!batch_given)
    po->global_batch = hs_scenario_global_batch(scn, n_devices);
  if (scn->precision && !precision_given)
    (void)hs_dtype_parse(scn->precision, &po->precision); /* the paper's (test_scenarios) */
}

hs_status_t hs_compare_rank(const hs_model_t *m, const hs_cluster_t *c, const char *const *names,
                            size_t n, const hs_plan_opts_t *po, bool charge_cluster,
                            FILE *progress, const char *baseline, hs_compare_row_t *rows,
                            int *base, hs_ranking_t *rk)
{
  return hs_compare_rank_workers(m, c, names, n, po, charge_cluster, progress, 1, baseline, rows,
                                 base, rk);
}

hs_status_t hs_compare_rank_workers(const hs_model_t *m, const hs_cluster_t *c,
                                    const char *const *names, size_t n, const hs_plan_opts_t *po,
                                    bool charge_cluster, FILE *progress, int workers,
                                    const char *baseline, hs_compare_row_t *rows, int *base,
                                    hs_ranking_t *rk)
{
  double best_s = 0.0;
  *base = -1;
  hs_status_t st = hs_compare_run_workers(m, c, names, n, po, charge_cluster, progress, workers,
                                          rows, &best_s);
  if (st != HS_OK)
    return st;
  *base = hs_compare_baseline(rows, n, baseline);
  hs_rank_compare_rows(rows, n, rk); /* bands and verdict: rows' figures stay as run */
  return HS_OK;
}
