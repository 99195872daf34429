/*
 * published.c - the published validation suite: each row of a public
 * end-to-end training table (validate/published/, read by published_json.c)
 * is simulated with the plan `hetsim simulate --tp --pp --dp ...` builds
 * (hs_plan_grid) and compared with the published figure.
 *
 * Validation only: no figure here feeds a fit, a default or a choice of
 * parameter (docs/validation.md). Rows whose framework options the
 * simulator does not model are reported as such and left out of the
 * statistics; which options those are is decided in hs_pub_options_map
 * alone. A row file may also leave a row out itself ("not_modelled":
 * reason, e.g. a figure whose FLOP convention its source does not state);
 * the reason is printed instead of a prediction. Deterministic: the simulator is, and rows run in file order.
 *
 * Beside the error statistics, a table gets what a planner needs of the
 * predictions (hs_pub_spearman, hs_pub_regret): whether they order the
 * rows and whether their pick is the fastest run. Rows measured out of
 * memory are not in either; they check the memory model instead (predicted
 * out of memory or not), as rows that ran must not be predicted out of it.
 *
 * Above published_json.c (the row files, the options' defaults, the metric
 * names), which uses nothing of this file.
 */
#include "hs_validate.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILES 256
/* The kernel preset of a table that names none (see hs_pub_options_map). */
#define HS_PUB_DEFAULT_KERNELS "megatron-2021"

/* The one place that says what the simulator models of a framework's
 * options. Grows as the simulator does: when an option is modelled, map it
 * onto the grid options or plan fields here instead of refusing it. */
const char *hs_pub_options_map(const hs_pub_options_t *o, hs_pub_setup_t *s)
{
  hs_practice_t *pr = &s->grid.practice;
  s->grid.recompute = o->recompute;
  pr->dp_overlap = o->dp_overlap;
  /* the kernel set: the named preset, else megatron-2021 (the era of every
   * table here, as their descriptions state; not hs_practice_init's
   * current-practice default), then attention where the table or row
   * states it */
  if (hs_kernels_preset(o->kernels[0] ? o->kernels : HS_PUB_DEFAULT_KERNELS, &pr->kernels) != HS_OK)
    return "kernels";
  if (o->attention[0] && hs_attention_parse(o->attention, &pr->kernels.attention) != HS_OK)
    return "attention";
  /* Megatron-LM turns sequence parallelism off when tp is 1 */
  pr->sequence_parallel = o->sequence_parallel && s->grid.tp > 1;
  pr->tp_comm_overlap = o->tp_comm_overlap && pr->sequence_parallel;
  pr->zero_stage = o->zero_stage;
  pr->context_parallel = o->context_parallel;
  pr->expert_parallel = o->expert_parallel;
  pr->fsdp_backward_post = o->fsdp_backward_post;
  pr->fsdp_shard_grad_op = o->fsdp_shard_grad_op;
  pr->grad_accum = o->grad_accum;
  pr->grad_reduce_fp32 = o->grad_reduce_fp32;
  pr->framework = o->framework;
  pr->fsdp_param_dtype_set = o->fsdp_param_dtype[0] != '\0';
  if (pr->fsdp_param_dtype_set && hs_dtype_parse(o->fsdp_param_dtype, &pr->fsdp_param_dtype) != HS_OK)
    return "fsdp_param_dtype";
  if (o->precision[0]) {
    hs_dtype_t dt = HS_DTYPE_BF16;
    if (hs_dtype_parse(o->precision, &dt) != HS_OK)
      return "precision";
    s->set_precision = true;
    s->precision = dt;
  }
  return NULL;
}

static double metric_of(hs_pub_metric_t m, const hs_report_t *r)
{
  switch (m) {
  case HS_PUB_HW_TFLOPS:
    return r->hw_tflops_per_gpu;
  case HS_PUB_TFLOPS:
    return r->tflops_per_gpu;
  case HS_PUB_MFU:
    return r->mfu;
  case HS_PUB_ITERATION_S:
    return r->iteration_time_s;
  }
  return 0.0;
}

/* Names the row in an error the loaders or the simulator raised. */
static hs_status_t row_error(const hs_pub_table_t *t, int32_t i, hs_status_t st, hs_error_t *err)
{
  char pre[400];
  snprintf(pre, sizeof pre, "%s: rows[%d] (%s)", t->file, i, t->rows[i].name);
  hs_error_prefix(err, pre);
  return st;
}

static hs_status_t run_row(const hs_pub_table_t *t, int32_t i, hs_pub_result_t *out, hs_error_t *err)
{
  const hs_pub_row_t *row = &t->rows[i];
  hs_status_t st = HS_OK;
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t plan;
  hs_report_t rep;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&plan);
  hs_report_init(&rep);
  memset(out, 0, sizeof *out);
  /* at most HS_CLUSTER_MAX_DEVICES: published_json.c refuses larger products */
  out->n_gpus = row->tp * row->pp * row->dp * HS_MAX(row->opt.context_parallel, 1);
  hs_pub_setup_t s;
  memset(&s, 0, sizeof s);
  hs_grid_opts_init(&s.grid);
  s.grid.tp = row->tp;
  s.grid.pp = row->pp;
  s.grid.dp = row->dp;
  s.grid.microbatch_size = row->microbatch;
  s.grid.global_batch = row->global_batch;
  s.grid.schedule = row->schedule;
  s.grid.chunks = row->chunks;
  s.grid.stage_layers = row->stage_layers;
  s.grid.n_stage_layers = row->n_stage_layers;
  out->not_modelled = row->not_modelled[0] ? row->not_modelled : hs_pub_options_map(&row->opt, &s);
  if (out->not_modelled)
    return HS_OK;
  HS_CHECK(hs_model_parse_json(row->model_json, "model", 0, &m, err));
  HS_CHECK(hs_cluster_parse(row->cluster_json, "cluster", &c, err));
  if ((int64_t)c.n_devices != (int64_t)out->n_gpus)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "nodes: the cluster has %zu GPUs, the plan tp x pp x dp%s = %d",
                         c.n_devices, row->opt.context_parallel > 1 ? " x cp" : "", out->n_gpus));
  HS_CHECK(hs_plan_grid(&m, &c, &s.grid, &plan, err));
  /* the row's placement moves grid rank d to its device (published_json.c
   * checked it is a permutation of tp x pp x dp = the cluster's devices) */
  for (int32_t p = 0; row->placement && p < plan.n_pipelines; p++)
    for (int32_t k = 0; k < plan.pipelines[p].n_stages; k++)
      for (int32_t q = 0; q < plan.pipelines[p].stages[k].n_replicas; q++) {
        hs_plan_replica_t *rp = &plan.pipelines[p].stages[k].replicas[q];
        for (int32_t d = 0; d < rp->n_devices; d++)
          if (rp->devices[d] >= 0 && rp->devices[d] < row->n_placement)
            rp->devices[d] = row->placement[rp->devices[d]];
      }
  if (s.set_precision)
    plan.precision = s.precision;
  plan.async_send = row->async_send;
  hs_sim_opts_t so;
  hs_sim_opts_init(&so);
  HS_CHECK(hs_simulate(&m, &c, &plan, &so, &rep, err));
  out->infeasible = rep.oom;
  if (!rep.oom && row->measured_oom) {
    out->predicted = metric_of(t->metric, &rep);
  } else if (!rep.oom) {
    out->predicted = metric_of(t->metric, &rep);
    out->err = (out->predicted - row->measured) / row->measured;
    /* measured is a normal positive number (published_json.c), but a tiny
     * one still makes the quotient overflow: no "+inf%" in the table */
    if (!isfinite(out->err))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "measured: %g against the prediction %g gives no finite "
                           "relative error", row->measured, out->predicted));
  }
cleanup:
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return st == HS_OK ? st : row_error(t, i, st, err);
}

hs_status_t hs_pub_run(const hs_pub_table_t *t, hs_pub_result_t *res, hs_pub_summary_t *sum,
                       hs_error_t *err)
{
  memset(sum, 0, sizeof *sum);
  sum->n_rows = t->n_rows;
  for (int32_t i = 0; i < t->n_rows; i++) {
    hs_status_t st = run_row(t, i, &res[i], err);
    if (st != HS_OK)
      return st;
    if (res[i].not_modelled) {
      sum->n_not_modelled++;
    } else if (t->rows[i].measured_oom) {
      sum->n_measured_oom++;
      sum->n_oom_predicted += res[i].infeasible;
    } else if (res[i].infeasible) {
      sum->n_infeasible++;
    } else {
      sum->n_simulated++;
      sum->mape += fabs(res[i].err);
      sum->max_abs_err = fmax(sum->max_abs_err, fabs(res[i].err));
    }
  }
  if (sum->n_simulated > 0)
    sum->mape /= sum->n_simulated;
  /* lower is better for iteration time: the order is the same either way */
  for (int32_t i = 0; i < t->n_rows; i++)
    for (int32_t j = i + 1; j < t->n_rows; j++) {
      const hs_pub_result_t *a = &res[i], *b = &res[j];
      if (a->not_modelled || a->infeasible || b->not_modelled || b->infeasible ||
          t->rows[i].measured_oom || t->rows[j].measured_oom)
        continue;
      double mi = t->rows[i].measured, mj = t->rows[j].measured;
      if (mi == mj)
        continue;
      bool same = (mi < mj) == (a->predicted < b->predicted) && a->predicted != b->predicted;
      sum->pairs++;
      sum->concordant += same;
      if (fabs(mi - mj) >= HS_PUB_RANK_RESOLUTION * fmin(mi, mj)) {
        sum->pairs_resolved++;
        sum->concordant_resolved += same;
      }
    }
  sum->rank_preserved = sum->concordant_resolved == sum->pairs_resolved;
  /* planner view over the simulated rows: pred NAN = predicted out of
   * memory, meas NAN = measured out of memory */
  size_t cap = (size_t)t->n_rows + 1;
  double *pred = hs_calloc(cap, sizeof *pred), *meas = hs_calloc(cap, sizeof *meas);
  double *px = hs_calloc(cap, sizeof *px), *mx = hs_calloc(cap, sizeof *mx);
  int32_t *rows_of = hs_calloc(cap, sizeof *rows_of);
  int32_t n = 0, nr = 0;
  if (!pred || !meas || !px || !mx || !rows_of) {
    free(pred);
    free(meas);
    free(px);
    free(mx);
    free(rows_of);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  for (int32_t i = 0; i < t->n_rows; i++) {
    if (res[i].not_modelled)
      continue;
    pred[n] = res[i].infeasible ? NAN : res[i].predicted;
    meas[n] = t->rows[i].measured_oom ? NAN : t->rows[i].measured;
    rows_of[n++] = i;
    if (isfinite(pred[n - 1]) && isfinite(meas[n - 1])) {
      px[nr] = pred[n - 1];
      mx[nr++] = meas[n - 1];
    }
  }
  sum->spearman = hs_pub_spearman(px, mx, nr);
  /* a pick is a choice between plans of one job: rows of different models
   * (a weak-scaling table) have no top pick */
  bool one_model = true;
  for (int32_t k = 1; k < n; k++)
    one_model = one_model && t->rows[rows_of[k]].model_over_json && t->rows[rows_of[0]].model_over_json &&
                strcmp(t->rows[rows_of[k]].model_over_json, t->rows[rows_of[0]].model_over_json) == 0;
  int32_t pick = -1, best = -1;
  sum->regret = one_model ? hs_pub_regret(pred, meas, n, t->metric == HS_PUB_ITERATION_S, &pick, &best) : NAN;
  sum->top_pick = pick >= 0 ? rows_of[pick] : -1;
  sum->measured_best = best >= 0 ? rows_of[best] : -1;
  free(rows_of);
  free(pred);
  free(meas);
  free(px);
  free(mx);
  return HS_OK;
}

/* Mean ranks (1-based) of v[0..n) into r: ties share the mean of their
 * places. O(n^2), no allocation. */
static void mean_ranks(const double *v, int32_t n, double *r)
{
  for (int32_t i = 0; i < n; i++) {
    int32_t below = 0, equal = 0;
    for (int32_t j = 0; j < n; j++) {
      below += v[j] < v[i];
      equal += v[j] == v[i];
    }
    r[i] = below + (equal + 1) / 2.0;
  }
}

double hs_pub_spearman(const double *x, const double *y, int32_t n)
{
  if (n < 2)
    return NAN;
  double *rx = hs_calloc((size_t)n, sizeof *rx), *ry = hs_calloc((size_t)n, sizeof *ry);
  double out = NAN;
  if (rx && ry) {
    mean_ranks(x, n, rx);
    mean_ranks(y, n, ry);
    /* both rank sets have mean (n + 1) / 2 */
    double mean = (n + 1) / 2.0, sxy = 0, sxx = 0, syy = 0;
    for (int32_t i = 0; i < n; i++) {
      sxy += (rx[i] - mean) * (ry[i] - mean);
      sxx += (rx[i] - mean) * (rx[i] - mean);
      syy += (ry[i] - mean) * (ry[i] - mean);
    }
    if (sxx > 0 && syy > 0)
      out = sxy / sqrt(sxx * syy);
  }
  free(rx);
  free(ry);
  return out;
}

double hs_pub_regret(const double *pred, const double *meas, int32_t n, bool lower_is_better,
                     int32_t *pick, int32_t *best)
{
  *pick = *best = -1;
  /* "better" in the metric's direction; a measured NAN (did not fit) is
   * worse than any run */
  for (int32_t i = 0; i < n; i++) {
    if (isfinite(meas[i]) &&
        (*best < 0 || (lower_is_better ? meas[i] < meas[*best] : meas[i] > meas[*best])))
      *best = i;
    if (!isfinite(pred[i]))
      continue;
    if (*pick < 0 || (lower_is_better ? pred[i] < pred[*pick] : pred[i] > pred[*pick])) {
      *pick = i;
    } else if (pred[i] == pred[*pick]) {
      /* tie: the worse measured of the two (a run that did not fit first) */
      bool worse = !isfinite(meas[i]) ||
                   (isfinite(meas[*pick]) && (lower_is_better ? meas[i] > meas[*pick] : meas[i] < meas[*pick]));
      if (worse)
        *pick = i;
    }
  }
  if (*pick < 0 || *best < 0)
    return NAN;
  if (!isfinite(meas[*pick]))
    return INFINITY;
  return lower_is_better ? meas[*pick] / meas[*best] - 1.0 : meas[*best] / meas[*pick] - 1.0;
}

void hs_pub_print(const hs_pub_table_t *t, const hs_pub_result_t *res, const hs_pub_summary_t *sum,
                  FILE *f)
{
  fprintf(f, "table %s: %s\n  source: %s (%s)\n  metric: %s\n", t->name, t->title, t->source, t->date,
          hs_pub_metric_name(t->metric));
  /* the name column fits the longest name (at least 10, as before) */
  int w = 10;
  for (int32_t i = 0; i < t->n_rows; i++)
    w = HS_MAX(w, (int)strlen(t->rows[i].name));
  fprintf(f, "  %-*s %6s %4s %4s %5s %4s %6s %3s  %10s %10s %8s\n", w, "row", "gpus", "tp", "pp", "dp",
          "mb", "gb", "v", "predicted", "measured", "error");
  for (int32_t i = 0; i < t->n_rows; i++) {
    const hs_pub_row_t *r = &t->rows[i];
    fprintf(f, "  %-*s %6d %4d %4d %5d %4d %6lld %3d  ", w, r->name, res[i].n_gpus, r->tp, r->pp, r->dp,
            r->microbatch, (long long)r->global_batch, r->chunks);
    char meas[16];
    if (r->measured_oom)
      snprintf(meas, sizeof meas, "OOM");
    else
      snprintf(meas, sizeof meas, "%.4g", r->measured);
    if (res[i].not_modelled)
      fprintf(f, "%10s %10s  not modelled: %s\n", "-", meas, res[i].not_modelled);
    else if (res[i].infeasible && r->measured_oom)
      fprintf(f, "%10s %10s  out of memory, as predicted\n", "OOM", meas);
    else if (res[i].infeasible)
      fprintf(f, "%10s %10s  infeasible (out of memory)\n", "-", meas);
    else if (r->measured_oom)
      fprintf(f, "%10.4g %10s  ran out of memory, predicted to fit\n", res[i].predicted, meas);
    else
      fprintf(f, "%10.4g %10s %+7.1f%%\n", res[i].predicted, meas, 100 * res[i].err);
  }
  char bound[32] = "none yet";
  if (t->max_mape > 0)
    snprintf(bound, sizeof bound, "%.1f%%", 100 * t->max_mape);
  if (sum->n_simulated == 0) {
    fprintf(f, "  MAPE -: no row simulated (%d not modelled, %d infeasible), bound %s\n",
            sum->n_not_modelled, sum->n_infeasible, bound);
  } else {
    fprintf(f, "  MAPE %.1f%% over %d rows (%d not modelled, %d infeasible), max |error| %.1f%%, "
            "bound %s\n", 100 * sum->mape, sum->n_simulated, sum->n_not_modelled, sum->n_infeasible,
            100 * sum->max_abs_err, bound);
    fprintf(f, "  rank order: %d/%d pairs concordant; pairs >= %.0f%% apart %d/%d: %s\n",
            sum->concordant, sum->pairs, 100 * HS_PUB_RANK_RESOLUTION, sum->concordant_resolved,
            sum->pairs_resolved, sum->rank_preserved ? "preserved" : "NOT preserved");
    char sp[16] = "-", rg[192] = "-";
    if (isfinite(sum->spearman))
      snprintf(sp, sizeof sp, "%.3f", sum->spearman);
    if (isinf(sum->regret))
      snprintf(rg, sizeof rg, "its pick %s ran out of memory", t->rows[sum->top_pick].name);
    else if (isfinite(sum->regret))
      snprintf(rg, sizeof rg, "%.1f%% (pick %s, best %s)", 100 * sum->regret, t->rows[sum->top_pick].name,
               t->rows[sum->measured_best].name);
    if (sum->top_pick < 0 && isnan(sum->regret))
      snprintf(rg, sizeof rg, "- (rows of different models, or none to pick)");
    fprintf(f, "  planner view: Spearman %s; top-pick regret %s\n", sp, rg);
  }
  if (sum->n_measured_oom > 0 || sum->n_infeasible > 0)
    fprintf(f, "  out of memory: %d/%d rows measured out of memory predicted so; %d rows that ran predicted "
            "out of memory\n", sum->n_oom_predicted, sum->n_measured_oom, sum->n_infeasible);
  bool met = sum->n_simulated > 0 && sum->mape <= 0.05 && sum->max_abs_err <= 0.12 && sum->rank_preserved;
  fprintf(f, "  targets (MAPE <= 5%%, every row within 12%%, rank order): %s\n",
          sum->n_simulated == 0 ? "not assessed (no row simulated)" : met ? "met" : "not met");
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void hs_pub_paths_free(char **paths, int32_t n)
{
  for (int32_t i = 0; paths && i < n; i++)
    free(paths[i]);
  free(paths);
}

hs_status_t hs_pub_paths(const char *path, char ***out, int32_t *n, hs_error_t *err)
{
  *out = NULL;
  *n = 0;
  struct stat sb;
  if (stat(path, &sb) != 0)
    return hs_error_set(err, HS_ENOTFOUND, "%s: no such file or directory", path);
  char **v = hs_calloc(MAX_FILES, sizeof *v);
  if (!v)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  int32_t k = 0;
  if (!S_ISDIR(sb.st_mode)) {
    size_t len = strlen(path) + 1;
    if (!(v[k] = malloc(len))) {
      free(v);
      return hs_error_set(err, HS_ENOMEM, "out of memory");
    }
    memcpy(v[k++], path, len);
  } else {
    DIR *d = opendir(path);
    if (!d) {
      free(v);
      return hs_error_set(err, HS_EIO, "%s: cannot open the directory", path);
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
      size_t len = strlen(e->d_name);
      if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
        continue;
      if (k == MAX_FILES) {
        closedir(d);
        hs_pub_paths_free(v, k);
        return hs_error_set(err, HS_ELIMIT, "%s: more than %d row files", path, MAX_FILES);
      }
      size_t need = strlen(path) + len + 2;
      if (!(v[k] = malloc(need))) {
        closedir(d);
        hs_pub_paths_free(v, k);
        return hs_error_set(err, HS_ENOMEM, "out of memory");
      }
      snprintf(v[k++], need, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (k == 0) {
      hs_pub_paths_free(v, k);
      return hs_error_set(err, HS_ENOTFOUND, "%s: no *.json row files", path);
    }
    qsort(v, (size_t)k, sizeof *v, cmp_str);
  }
  *out = v;
  *n = k;
  return HS_OK;
}
