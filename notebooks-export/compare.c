/*
 * compare.c - the strategy comparison behind `hetsim compare` and the Python
 * package's compare(): every strategy planned on one model and cluster, one
 * row each, and the CSV of those rows.
 *
 * Speedups are against the best baseline (hs_compare_baseline): the fastest
 * of megatron, deepspeed, whale and data-parallel in the list, each of
 * which already plans on the best subset of node groups, so a strategy's
 * gain is what it adds over a user who runs the standard tools well.
 *
 * Invariants: a row is either ok (the figures of the plan hs_planner_run
 * simulated) or carries the reason in `why`; a failed search is a row, never
 * an error of the comparison. The CSV bytes are a function of the rows only.
 */
#include "hs_export.h"

#include <stdlib.h>
#include <string.h>

double hs_report_peak_memory_fraction(const hs_report_t *r, const hs_cluster_t *c, double *peak,
                                      double *cap)
{
  double best = 0.0;
  *peak = *cap = 0.0;
  for (int32_t d = 0; d < r->n_device_mem && (size_t)d < c->n_devices; d++) {
    double capd = hs_cluster_gpu(c, d)->mem_bytes;
    double x = capd > 0 ? r->device_peak_memory_bytes[d] / capd : 0.0;
    if (x > best) {
      best = x;
      *peak = r->device_peak_memory_bytes[d];
      *cap = capd;
    }
  }
  return best;
}

/* The GPU type every device of the plan has, or "heterogeneous" (the
 * class its error band is looked up by). O(devices). */
static void plan_gpu_class(const hs_plan_t *p, const hs_cluster_t *c, char *out, size_t n)
{
  int32_t gpu = -1;
  bool mixed = false;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++)
      for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas; r++) {
        const hs_plan_replica_t *rp = &p->pipelines[i].stages[s].replicas[r];
        for (int32_t d = 0; d < rp->n_devices; d++) {
          int32_t g = c->devices[rp->devices[d]].gpu;
          mixed = mixed || (gpu >= 0 && g != gpu);
          gpu = g;
        }
      }
  hs_strlcpy(out, mixed ? "heterogeneous" : gpu >= 0 ? c->gpus.gpus[gpu].name : "unknown", n);
}

/* Plans strategy `name` into row r (zeroed here): its figures, or why
 * there is no plan. HS_ENOMEM only; a failed search is a row. */
static hs_status_t compare_row(const hs_model_t *m, const hs_cluster_t *c, const char *name,
                               const hs_plan_opts_t *po, bool charge_cluster,
                               const hs_cluster_totals_t *tot, FILE *progress, hs_compare_row_t *r)
{
  memset(r, 0, sizeof *r);
  hs_strlcpy(r->strategy, name, sizeof r->strategy);
  const hs_planner_type_t *t = hs_planner_find(name);
  if (!t) {
    snprintf(r->why, sizeof r->why, "strategy not available in this build");
    return HS_OK;
  }
  hs_plan_t plan;
  hs_report_t rep;
  hs_search_stats_t stats;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_planner_run(t, m, c, po, progress, &plan, &stats, &rep, &err);
  if (st != HS_OK) {
    if (st == HS_ENOMEM)
      return HS_ENOMEM;
    snprintf(r->why, sizeof r->why, "%.300s", err.msg[0] ? err.msg : hs_status_message(st));
    return HS_OK;
  }
  if (rep.oom) {
    /* a planner bug (`plan` says INFEASIBLE): no time, speedup or cost is
     * shown for a plan that does not fit, and it is never ranked */
    char oom[160];
    hs_report_infeasible_reason(&rep, oom, sizeof oom);
    snprintf(r->why, sizeof r->why, "%s: its plan was simulated %.200s", r->strategy, oom);
    hs_plan_destroy(&plan);
    hs_report_destroy(&rep);
    return HS_OK;
  }
  r->ok = true;
  r->iter_s = rep.iteration_time_s;
  r->tokens_s = rep.tokens_per_s;
  r->mfu = rep.mfu;
  r->mem_ratio = hs_report_peak_memory_fraction(&rep, c, &r->peak_bytes, &r->cap_bytes);
  r->usd_mtok = rep.cost_usd_per_million_tokens;
  r->unpriced = charge_cluster ? tot->n_unpriced_devices : rep.n_unpriced_devices;
  if (charge_cluster) /* the whole cluster's rent over this plan's tokens */
    r->usd_mtok = rep.tokens_per_iteration > 0 ? tot->usd_per_hour * rep.iteration_time_s / 3600.0 /
                                                     (double)rep.tokens_per_iteration * 1e6
                                               : 0.0;
  r->search_s = stats.search_s;
  r->candidates = stats.candidates;
  hs_report_time_parts(&rep, r->time_s);
  hs_report_mem_parts(&rep, r->mem_bytes);
  hs_plan_describe(&plan, m, r->summary, sizeof r->summary);
  r->gpus_used = hs_plan_n_devices(&plan);
  r->tokens_s_per_gpu = r->gpus_used > 0 ? r->tokens_s / r->gpus_used : 0.0;
  plan_gpu_class(&plan, c, r->gpu_class, sizeof r->gpu_class);
  hs_strlcpy(r->framework, hs_framework_name(plan.practice.framework.id), sizeof r->framework);
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
  return HS_OK;
}

/* ---- strategies on worker processes (compare -j) ------------------------------ */

typedef struct compare_job {
  const hs_model_t *m;
  const hs_cluster_t *c;
  const char *const *strategies;
  const hs_plan_opts_t *po;
  bool charge_cluster;
  const hs_cluster_totals_t *tot;
  FILE *progress;
  hs_compare_row_t *rows;
} compare_job_t;

static hs_status_t map_row(void *ctx, size_t i, void **out, size_t *len, hs_error_t *err)
{
  compare_job_t *j = ctx;
  hs_compare_row_t *r = malloc(sizeof *r);
  if (!r || compare_row(j->m, j->c, j->strategies[i], j->po, j->charge_cluster, j->tot, j->progress,
                        r) != HS_OK) {
    free(r);
    return hs_error_set(err, HS_ENOMEM, "out of memory planning %s", j->strategies[i]);
  }
  *out = r;
  *len = sizeof *r;
  return HS_OK;
}

static int sink_row(void *ctx, size_t i, const void *data, size_t len)
{
  compare_job_t *j = ctx;
  if (len == sizeof *j->rows)
    memcpy(&j->rows[i], data, len);
  return 0;
}

/* A worker that died (or ran out of memory): the row says so. */
static int lost_row(void *ctx, size_t i, const char *why)
{
  compare_job_t *j = ctx;
  memset(&j->rows[i], 0, sizeof j->rows[i]);
  hs_strlcpy(j->rows[i].strategy, j->strategies[i], sizeof j->rows[i].strategy);
  snprintf(j->rows[i].why, sizeof j->rows[i].why, "%.300s", why);
  return 0;
}

hs_status_t hs_compare_run(const hs_model_t *m, const hs_cluster_t *c, const char *const *strategies,
                           size_t n, const hs_plan_opts_t *po, bool charge_cluster, FILE *progress,
                           hs_compare_row_t *rows, double *baseline_s)
{
  return hs_compare_run_workers(m, c, strategies, n, po, charge_cluster, progress, 1, rows,
                                baseline_s);
}

hs_status_t hs_compare_run_workers(const hs_model_t *m, const hs_cluster_t *c,
                                   const char *const *strategies, size_t n,
                                   const hs_plan_opts_t *po, bool charge_cluster, FILE *progress,
                                   int workers, hs_compare_row_t *rows, double *baseline_s)
{
  hs_status_t st = HS_OK;
  *baseline_s = 0.0;
  hs_cluster_totals_t tot;
  hs_cluster_totals(c, HS_DTYPE_BF16, &tot);
  /* a strategy listed twice, or a comparison inside a sweep or what-if,
   * answers a device-subset search it ran before from the search memo */
  hs_search_memo_begin();
  if (workers <= 1 || n <= 1) {
    for (size_t i = 0; i < n && st == HS_OK; i++)
      st = compare_row(m, c, strategies[i], po, charge_cluster, &tot, progress, &rows[i]);
  } else { /* rows come back by index: the same rows as in one process */
    compare_job_t j = {m, c, strategies, po, charge_cluster, &tot, NULL, rows};
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    memset(rows, 0, n * sizeof *rows);
    st = hs_map_processes(n, workers, map_row, sink_row, lost_row, &j, &err);
  }
  hs_search_memo_end();
  if (st != HS_OK)
    return st;
  int b = hs_compare_baseline(rows, n, NULL);
  *baseline_s = b >= 0 ? rows[b].iter_s : 0.0;
  return HS_OK;
}

bool hs_compare_is_baseline(const char *strategy)
{
  static const char *const baselines[] = {"megatron", "deepspeed", "whale", "data-parallel"};
  for (size_t i = 0; i < HS_ARRAY_LEN(baselines); i++)
    if (strcmp(strategy, baselines[i]) == 0)
      return true;
  return false;
}

int hs_compare_baseline(const hs_compare_row_t *rows, size_t n, const char *only)
{
  int best = -1;
  for (size_t i = 0; i < n; i++) {
    const hs_compare_row_t *r = &rows[i];
    if (!r->ok || (only ? strcmp(r->strategy, only) != 0 : !hs_compare_is_baseline(r->strategy)))
      continue;
    if (best < 0 || r->iter_s < rows[best].iter_s)
      best = (int)i;
  }
  return best;
}

void hs_compare_write_csv(const hs_compare_row_t *rows, size_t n, double baseline_s, FILE *f)
{
  int b = -1;
  for (int pass = 0; pass < 2 && b < 0 && baseline_s > 0; pass++)
    for (size_t i = 0; i < n && b < 0; i++)
      if (rows[i].ok && rows[i].iter_s == baseline_s &&
          (pass == 1 || hs_compare_is_baseline(rows[i].strategy)))
        b = (int)i;
  hs_compare_write_csv_vs(rows, n, b, f);
}

void hs_compare_write_csv_vs(const hs_compare_row_t *rows, size_t n, int baseline, FILE *f)
{
  double baseline_s = baseline >= 0 ? rows[baseline].iter_s : 0.0;
  /* the JSON rows' keys, in this order */
  fprintf(f, "strategy,iteration_s,tokens_per_s,speedup_vs_%s,mfu,peak_memory_fraction,"
             "usd_per_million_tokens,search_s,plan,peak_memory_bytes,memory_capacity_bytes,candidates,"
             "unpriced_gpus", baseline >= 0 ? rows[baseline].strategy : "baseline");
  for (int k = 0; k < HS_TIME_PARTS; k++)
    fprintf(f, ",time_%s_s", hs_time_part_keys[k]);
  for (int k = 0; k < HS_MEM_PARTS; k++)
    fprintf(f, ",mem_%s_bytes", hs_mem_part_keys[k]);
  fprintf(f, ",gpus_used,tokens_per_s_per_gpu,error_band,reliable_lead");
  fputc('\n', f);
  for (size_t i = 0; i < n; i++) {
    const hs_compare_row_t *r = &rows[i];
    hs_csv_field(f, r->strategy);
    if (r->ok) {
      fprintf(f, ",%.6g,%.6g,", r->iter_s, r->tokens_s);
      if (baseline_s > 0)
        fprintf(f, "%.4f", baseline_s / r->iter_s);
      fprintf(f, ",%.4f,%.4f,", r->mfu, r->mem_ratio);
      if (r->unpriced == 0) /* unknown, not $0 or a partial sum */
        fprintf(f, "%.4g", r->usd_mtok);
      fprintf(f, ",%.4g,", r->search_s);
      hs_csv_field(f, r->summary);
      fprintf(f, ",%.17g,%.17g,%llu,%d", r->peak_bytes, r->cap_bytes,
              (unsigned long long)r->candidates, r->unpriced);
      for (int k = 0; k < HS_TIME_PARTS; k++)
        fprintf(f, ",%.9g", r->time_s[k]);
      for (int k = 0; k < HS_MEM_PARTS; k++)
        fprintf(f, ",%.17g", r->mem_bytes[k]);
      fprintf(f, ",%d,%.6g", r->gpus_used, r->tokens_s_per_gpu);
      fputc(',', f);
      if (r->band_set)
        fprintf(f, "%.4f", r->error_band);
      /* the fastest row: whether its lead over the next is outside the error bands */
      fprintf(f, ",%s", r->lead > 0 ? "true" : r->lead < 0 ? "false (not a reliable difference)" : "");
    } else {
      fprintf(f, ",,,,,,,,");
      char why[340];
      snprintf(why, sizeof why, "n/a: %s", r->why);
      hs_csv_field(f, why);
      fprintf(f, ",,,,");
      for (int k = 0; k < HS_TIME_PARTS + HS_MEM_PARTS + 4; k++)
        fputc(',', f);
    }
    fputc('\n', f);
  }
}
