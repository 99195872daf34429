/*
 * registry.c - the planner table, option defaults and the standard driver
 * (hs_search.h). The driver owns budgets and progress: planners only step.
 */
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const hs_planner_type_t hs_planner_data_parallel, hs_planner_megatron, hs_planner_whale,
    hs_planner_hapt, hs_planner_exhaustive;
extern const hs_planner_type_t hs_planner_autohet, hs_planner_hap;

const hs_planner_type_t *const hs_planners[] = {
    &hs_planner_data_parallel,
    &hs_planner_megatron,
    &hs_planner_whale,
    &hs_planner_hapt,
    &hs_planner_autohet,
    &hs_planner_hap,
    &hs_planner_exhaustive,
    NULL,
};

const hs_planner_type_t *hs_planner_find(const char *name)
{
  if (!name)
    return NULL;
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++)
    if (strcmp((*t)->name, name) == 0)
      return *t;
  return NULL;
}

void hs_plan_opts_init(hs_plan_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->global_batch = 0;
  o->max_microbatch_size = 8;
  o->time_limit_s = 0.0;
  o->mip_gap = 0.01;
  o->precision = HS_DTYPE_BF16;
  o->allow_recompute = true;
  hs_practice_init(&o->practice);
  o->max_devices = 8;
  o->seed = 1;
  o->verbose = false;
}

/* On a terminal the line is redrawn in place; elsewhere (logs, pipes) only
 * the final line is written, so logs are not flooded with carriage returns. */
static void show_progress(FILE *f, bool tty, const char *name, double progress, double elapsed_s)
{
  if (!tty)
    return;
  if (progress >= 0.0)
    fprintf(f, "\r[%s] %3.0f%% %.1f s", name, progress * 100.0, elapsed_s);
  else
    fprintf(f, "\r[%s] %.1f s", name, elapsed_s);
  fflush(f);
}

hs_status_t hs_planner_run(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_plan_opts_t *o, FILE *progress, hs_plan_t *plan,
                           hs_search_stats_t *stats, hs_report_t *report, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_opts_t defaults;
  if (!o) {
    hs_plan_opts_init(&defaults);
    o = &defaults;
  }
  hs_plan_init(plan);
  memset(stats, 0, sizeof *stats);
  if (report)
    hs_report_init(report);
  if (!t || !m || !c)
    return hs_error_set(err, HS_EINVAL, "hs_planner_run: planner, model and cluster are required");
  if (m->n_ops == 0 || c->n_devices == 0)
    return hs_error_set(err, HS_EINVAL, "%s: empty model or cluster", t->name);
  void *state = hs_calloc(1, t->state_size ? t->state_size : 1);
  if (!state)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  bool inited = false, shown = false;
  bool tty = progress && isatty(fileno(progress));
  double t0 = hs__now_s(), last_shown = t0;
  HS_CHECK(t->init(state, m, c, o, err));
  inited = true;
  bool done = false;
  while (!done) {
    double prog = -1.0;
    HS_CHECK(t->step(state, &done, &prog, err));
    double now = hs__now_s();
    if (progress && now - t0 > 1.0 && (now - last_shown > 0.1 || done)) {
      show_progress(progress, tty, t->name, done ? 1.0 : prog, now - t0);
      last_shown = now;
      shown = true;
    }
    if (o->time_limit_s > 0.0 && now - t0 > o->time_limit_s)
      break; /* the planner returns the best found so far */
  }
  double search_s = hs__now_s() - t0;
  HS_CHECK(t->result(state, plan, stats, err));
  /* the options as asked, less sequence parallelism on a plan without TP */
  hs_plan_set_practice(plan, &o->practice);
  stats->search_s = search_s;
  if (stats->candidates == 0)
    stats->candidates = 1;
  if (o->time_limit_s > 0.0 && !done) {
    size_t l = strlen(stats->note);
    snprintf(stats->note + l, sizeof stats->note - l, "%sstopped at the %.3g s time limit",
             l ? "; " : "", o->time_limit_s);
  }
  if (plan->strategy[0] == '\0' || strcmp(plan->strategy, "manual") == 0)
    hs_strlcpy(plan->strategy, t->name, sizeof plan->strategy);
  HS_CHECK(hs_plan_validate(plan, m, c, t->name, err));
  if (report)
    HS_CHECK(hs_simulate(m, c, plan, NULL, report, err));
cleanup:
  if (shown && tty)
    fputc('\n', progress);
  else if (shown)
    fprintf(progress, "[%s] searched %.1f s\n", t->name, hs__now_s() - t0);
  if (inited)
    t->free(state);
  free(state);
  if (st != HS_OK) {
    hs_plan_destroy(plan);
    hs_plan_init(plan);
    if (report) {
      hs_report_destroy(report);
      hs_report_init(report);
    }
  }
  return st;
}
