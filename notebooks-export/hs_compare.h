/*
 * hs_compare.h - one strategy comparison as a request: which strategies,
 * the scenario's defaults, and the run with its baseline and ranking.
 * `hetsim compare` (cli/cmd_plan.c) and the Python package's compare
 * (capi/capi.c, hs_api_compare_csv) both call these, so the two cannot
 * drift apart. Each caller keeps its own inputs (files or loaded handles)
 * and its own wording of errors: these functions say what is wrong (an
 * index, a flag), not how to print it.
 */
#ifndef HS_COMPARE_H
#define HS_COMPARE_H

#include "hs_export.h"
#include "hs_ranking.h"
#include "hs_scenarios.h"

/* The most strategies one comparison runs; later names are dropped. */
#define HS_COMPARE_MAX_STRATEGIES 64

/* Splits the strategies to compare into names[0..*n) (at most `max`),
 * pointing into buf (buf_n bytes, overwritten): `given` (comma-separated)
 * when not NULL, else the scenario's list (scn not NULL), else every
 * registered planner in table order. Returns the index in names of the
 * first name of `given` that is not a registered planner, -1 when there is
 * none; a scenario's strategies that are not built are not errors (their
 * rows say so). O(names x planners). */
int hs_compare_strategies(const char *given, const hs_scenario_t *scn, char *buf, size_t buf_n,
                          const char **names, size_t max, size_t *n);
/* True when `name` is one of names[0..n). O(n). */
bool hs_compare_listed(const char *const *names, size_t n, const char *name);
/* A scenario's planner options where the caller gave none: its global
 * batch on a cluster of n_devices (unless batch_given) and the paper's
 * precision (unless precision_given). scn NULL: nothing. O(1). */
void hs_compare_scenario_opts(const hs_scenario_t *scn, int64_t n_devices, bool batch_given,
                              bool precision_given, hs_plan_opts_t *po);
/* One comparison: hs_compare_run of names[0..n) into rows[0..n)
 * (caller-allocated; progress to `progress`, NULL = quiet), each row's
 * error band and the lead's verdict (hs_rank_compare_rows into *rk), and
 * in *base the index of the row speedups are against: the planned row
 * named `baseline`, or with NULL the fastest planned standard baseline
 * (hs_compare_baseline); -1 when there is none. Returns HS_OK, or
 * HS_ENOMEM (failed searches are rows, not errors). O(n) planner runs. */
hs_status_t hs_compare_rank(const hs_model_t *m, const hs_cluster_t *c, const char *const *names,
                            size_t n, const hs_plan_opts_t *po, bool charge_cluster,
                            FILE *progress, const char *baseline, hs_compare_row_t *rows,
                            int *base, hs_ranking_t *rk);

/* hs_compare_rank with the strategies planned on `workers` processes
 * (hs_compare_run_workers): the same rows, baseline and ranking. */
hs_status_t hs_compare_rank_workers(const hs_model_t *m, const hs_cluster_t *c,
                                    const char *const *names, size_t n, const hs_plan_opts_t *po,
                                    bool charge_cluster, FILE *progress, int workers,
                                    const char *baseline, hs_compare_row_t *rows, int *base,
                                    hs_ranking_t *rk);

#endif /* HS_COMPARE_H */
