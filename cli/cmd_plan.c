/*
 * cmd_plan.c - `hetsim plan` (one strategy: search, simulate, print or write
 * the plan) and `hetsim compare` (several strategies or a named scenario:
 * one row per strategy as a table, CSV or JSON). Each handler reads its
 * options into a struct, calls the library (hs_planner_run; compare's
 * hs_compare_rank and the request helpers of hs_compare.h, which the
 * Python package's compare calls too) and prints; nothing here computes.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_compare.h" /* the comparison request, shared with capi/ */
#include "hs_ranking.h" /* error bands: compare, plan */
#include "hs_export.h"
#include "hs_scenarios.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Shared option handling: --global-batch, --time-limit, --max-microbatch-size. */
static int read_plan_opts(const hs_opt_t *opts, hs_plan_opts_t *po)
{
  int rc;
  int64_t v;
  hs_plan_opts_init(po);
  if ((rc = hs_cli_int(opts, "global-batch", 0, 0, INT64_C(1) << 40, &v)))
    return rc;
  po->global_batch = v;
  if ((rc = hs_cli_int(opts, "max-microbatch-size", 8, 1, 1 << 20, &v)))
    return rc;
  po->max_microbatch_size = (int32_t)v;
  if ((rc = hs_cli_int(opts, "max-devices", 8, 1, 1 << 20, &v)))
    return rc;
  po->max_devices = (int32_t)v;
  double t;
  if ((rc = hs_cli_double(opts, "time-limit", 0.0, &t)))
    return rc;
  if (t < 0) {
    fprintf(stderr, "hetsim: --time-limit: must be >= 0, got %g\n", t);
    return 2;
  }
  po->time_limit_s = t;
  double gap;
  if ((rc = hs_cli_double(opts, "mip-gap", 0.01, &gap)))
    return rc;
  if (!(gap >= 0.0 && gap < 1.0)) {
    fprintf(stderr, "hetsim: --mip-gap: must be in [0, 1), got %g\n", gap);
    return 2;
  }
  po->mip_gap = gap;
  po->allow_recompute = !hs_cli_opt(opts, "no-recompute");
  if ((rc = hs_cli_precision(opts, &po->precision)))
    return rc;
  if ((rc = hs_cli_memory_headroom(opts, &po->memory_headroom)))
    return rc;
  po->search_practice = !hs_cli_opt(opts, "no-practice-search");
  return hs_cli_practice(opts, &po->practice);
}

static int load_inputs(const char *model, const char *cluster, hs_model_t *m, hs_cluster_t *c)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_model_load(model, 0, m, &err);
  if (st == HS_OK)
    st = hs_cluster_load(cluster, c, &err);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

/* `hetsim plan`'s options after parsing. */
typedef struct plan_args {
  const hs_planner_type_t *type;
  const char *model, *cluster;
  const char *out_path; /* -o, NULL: none */
  bool json, quiet;
  hs_plan_opts_t po;
} plan_args_t;

/* Reads the parsed options into *a: the required ones, the strategy by
 * name (a usage error with a hint when unknown) and the planner options.
 * 0, or an exit code with the message printed. */
static int read_plan_args(const hs_opt_t *opts, plan_args_t *a)
{
  memset(a, 0, sizeof *a);
  const hs_opt_t *om = hs_cli_opt(opts, "model"), *oc = hs_cli_opt(opts, "cluster"),
                 *os = hs_cli_opt(opts, "strategy"), *oo = hs_cli_opt(opts, "o");
  if (!om || !oc || !os) {
    fprintf(stderr, "hetsim plan: --model, --cluster and --strategy are required (see --help)\n");
    return 2;
  }
  a->type = hs_planner_find(os->value);
  if (!a->type) {
    char hint[256];
    hs_cli_strategy_hint(os->value, hint, sizeof hint);
    fprintf(stderr, "hetsim plan: unknown strategy \"%s\"%s (hetsim list strategies)\n", os->value, hint);
    return 2;
  }
  a->model = om->value;
  a->cluster = oc->value;
  a->out_path = oo ? oo->value : NULL;
  a->json = hs_cli_opt(opts, "json") != NULL;
  a->quiet = hs_cli_opt(opts, "quiet") != NULL;
  return read_plan_opts(opts, &a->po);
}

/* Writes the plan as versioned JSON to path (-o). 0 or the exit code. */
static int write_plan_file(const hs_plan_t *plan, const char *path)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  cJSON *j = hs_json_stamp_version(hs_plan_to_json(plan), HS_SCHEMA_VERSION);
  if (!j || (st = hs_json_write_file(j, path, &err)) != HS_OK) {
    hs_json_free(j);
    return hs_cli_fail(&err, j ? st : HS_ENOMEM);
  }
  hs_json_free(j);
  return 0;
}

/* `plan --json`: the search result with GPUs used, tokens/s per GPU and
 * the error band, to stdout. 0, 3 when the plan simulated out of memory,
 * or the exit code of a failure. */
static int print_plan_json(const plan_args_t *a, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_search_stats_t *stats, const hs_plan_t *plan,
                           const hs_report_t *rep)
{
  hs_error_t err;
  hs_error_init(&err);
  cJSON *j = hs_json_stamp_version(hs_search_result_to_json(a->type->name, m->name, c->name, stats, plan, rep),
                                   HS_SCHEMA_VERSION);
  if (!j)
    return 1;
  int rc = 0;
  int32_t used = hs_plan_n_devices(plan); /* throughput per GPU the plan uses */
  cJSON_AddNumberToObject(j, "gpus_used", used);
  cJSON_AddNumberToObject(j, "tokens_per_s_per_gpu", used > 0 && !rep->oom ? rep->tokens_per_s / used : 0.0);
  hs_band_t band;
  hs_rank_plan_band(plan, c, &band);
  if (band.n_rows > 0)
    cJSON_AddNumberToObject(j, "error_band", band.rel);
  else
    cJSON_AddNullToObject(j, "error_band");
  hs_status_t st = hs_json_write_file(j, "-", &err);
  if (st != HS_OK)
    rc = hs_cli_fail(&err, st);
  else if (rep->oom)
    rc = HS_EXIT_INFEASIBLE;
  cJSON_Delete(j);
  return rc;
}

/* `plan`'s text report on stdout. 0, or 3 when the plan simulated out of
 * memory (then no throughput, MFU or cost is printed). */
static int print_plan_text(const plan_args_t *a, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_search_stats_t *stats, const hs_plan_t *plan,
                           const hs_report_t *rep)
{
  char summary[256];
  hs_plan_describe(plan, m, summary, sizeof summary);
  double peak, cap;
  double ratio = hs_report_peak_memory_fraction(rep, c, &peak, &cap);
  char b1[32], b2[32];
  printf("strategy        %s   model %s   cluster %s (%zu GPUs)\n", a->type->name, m->name, c->name,
         c->n_devices);
  printf("plan            %s\n", summary);
  printf("global batch    %lld samples (%lld tokens)\n", (long long)rep->global_batch,
         (long long)rep->tokens_per_iteration);
  if (rep->oom) { /* a planner bug: the plan was simulated out of memory */
    char why[160];
    hs_report_infeasible_reason(rep, why, sizeof why);
    printf("INFEASIBLE      %s (no throughput, MFU or cost)\n", why);
    return HS_EXIT_INFEASIBLE;
  }
  printf("iteration       %.4f s simulated (strategy estimate %.4f s)\n", rep->iteration_time_s,
         stats->predicted_s);
  printf("throughput      %.0f tokens/s, MFU %.1f%%\n", rep->tokens_per_s, rep->mfu * 100.0);
  int32_t used = hs_plan_n_devices(plan);
  printf("GPUs used       %d of %zu, %.0f tokens/s per GPU used\n", used, c->n_devices,
         used > 0 ? rep->tokens_per_s / used : 0.0);
  hs_band_t band;
  hs_rank_plan_band(plan, c, &band);
  if (band.n_rows > 0)
    printf("error band      +-%.1f%% (90th percentile of |error| over %d published rows: %s); a "
           "plan faster by less is not a reliable difference\n",
           band.rel * 100.0, band.n_rows, band.basis);
  else
    printf("error band      unknown (no validate/error-bands.json)\n");
  printf("memory          peak %s of %s (%.0f%%)\n", hs_fmt_bytes(peak, b1, sizeof b1),
         hs_fmt_bytes(cap, b2, sizeof b2), ratio * 100.0);
  if (rep->n_unpriced_devices > 0) /* unknown, not $0 or the priced GPUs' partial sum */
    printf("cost            unpriced: %d of the plan's %d GPUs have no known price\n",
           rep->n_unpriced_devices, rep->n_devices);
  else
    printf("cost            $%.3f per million tokens\n", rep->cost_usd_per_million_tokens);
  printf("search          %.3f s, %llu candidates%s; %s\n", stats->search_s,
         (unsigned long long)stats->candidates, stats->optimal ? " (optimal in its space)" : "",
         stats->note);
  if (a->out_path)
    printf("plan written to %s\n", a->out_path);
  return 0;
}

int hs_cmd_plan(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "cluster: catalog name or JSON file"},
      {"strategy", true, "planner (hetsim list strategies)"},
      {"global-batch", true, "samples per iteration (default: strategy default, 8 per device)"},
      {"max-microbatch-size", true, "largest microbatch tried (default 8)"},
      {"max-devices", true, "exhaustive: largest cluster accepted (default 8)"},
      {"time-limit", true, "search budget in seconds (0 = none)"},
      {"mip-gap", true, "relative MIP gap for autohet (default 0.01)"},
      {"no-recompute", false, "never use activation recomputation"},
      {"no-practice-search", false, "baselines use only the practice options given (no search over "
                                    "sequence parallelism, ZeRO stage, interleaving, uneven stages)"},
      HS_CLI_HEADROOM_OPT,
      HS_CLI_PRACTICE_OPTS,
      {"json", false, "print plan, stats and report as JSON"},
      {"o", true, "write the plan JSON to this file (hetsim simulate --plan reads it)"},
      {"quiet", false, "no progress line"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim plan --model M --cluster C --strategy S [--global-batch G]\n"
                        "         [--time-limit S] [--mip-gap G] [--max-microbatch-size B] [--no-recompute]\n"
                        "         [--kernels K] [--attention flash|unfused] [--sequence-parallel]\n"
                        "         [--zero-stage Z] [--precision P] [--grad-reduce-dtype fp32|default] [--memory-headroom F]\n"
                        "         [--no-practice-search] [-o plan.json] [--json]");
  if (rc)
    return rc < 0 ? 0 : rc;
  plan_args_t a;
  if ((rc = read_plan_args(opts, &a)))
    return rc;
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t plan;
  hs_report_t rep;
  hs_search_stats_t stats;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&plan);
  hs_report_init(&rep);
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  if ((rc = load_inputs(a.model, a.cluster, &m, &c)))
    goto out;
  FILE *prog = (a.json || a.quiet) ? NULL : stderr;
  if ((st = hs_planner_run(a.type, &m, &c, &a.po, prog, &plan, &stats, &rep, &err)) != HS_OK) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  if (a.out_path && (rc = write_plan_file(&plan, a.out_path)))
    goto out;
  if (a.json)
    rc = print_plan_json(&a, &m, &c, &stats, &plan, &rep);
  else
    rc = print_plan_text(&a, &m, &c, &stats, &plan, &rep);
out:
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return rc;
}

/* ---- compare --------------------------------------------------------------- */

/* `hetsim compare`'s options after parsing: inputs, the strategies (names
 * point into list) and the planner options. */
typedef struct compare_args {
  const char *model, *cluster;
  const hs_scenario_t *scn;   /* --scenario, NULL: none */
  const char *fmt;            /* table, csv or json */
  const char *baseline;       /* --baseline, NULL: the fastest standard baseline */
  bool charge_cluster;        /* --charge cluster */
  bool batch_given, precision_given;
  int workers;                /* -j: strategies planned on this many processes */
  char list[1024];
  const char *names[HS_COMPARE_MAX_STRATEGIES];
  size_t n_names;
  hs_plan_opts_t po;
} compare_args_t;

/* One comparison's results as the printers need them. */
typedef struct compare_view {
  const compare_args_t *a;
  const hs_model_t *m;
  const hs_cluster_t *c;
  const hs_compare_row_t *rows;
  size_t n;
  int base;                   /* row speedups are against, -1 none */
  double baseline_s;          /* its iteration time, 0 none */
  char vs[64];                /* "vs_<baseline>" */
  hs_ranking_t rk;
  char rk_text[512];          /* the verdict line */
  hs_cluster_totals_t tot;    /* for the priced-GPU and --charge notes */
} compare_view_t;

/* Reads --format, --charge, --scenario, --model/--cluster, the strategy
 * list (hs_compare_strategies), --baseline and the planner options into
 * *a, in that order, so the first bad option is the one reported.
 * 0, or 2 with the message printed. */
static int read_compare_args(const hs_opt_t *opts, compare_args_t *a)
{
  memset(a, 0, sizeof *a);
  const hs_opt_t *om = hs_cli_opt(opts, "model"), *oc = hs_cli_opt(opts, "cluster"),
                 *osc = hs_cli_opt(opts, "scenario"), *ost = hs_cli_opt(opts, "strategies"),
                 *ofmt = hs_cli_opt(opts, "format"), *obase = hs_cli_opt(opts, "baseline"),
                 *och = hs_cli_opt(opts, "charge");
  a->fmt = ofmt ? ofmt->value : "table";
  if (strcmp(a->fmt, "table") && strcmp(a->fmt, "csv") && strcmp(a->fmt, "json")) {
    fprintf(stderr, "hetsim compare: --format: must be table, csv or json, got \"%s\"\n", a->fmt);
    return 2;
  }
  a->charge_cluster = och && strcmp(och->value, "cluster") == 0;
  if (och && !a->charge_cluster && strcmp(och->value, "used") != 0) {
    fprintf(stderr, "hetsim compare: --charge: must be used or cluster, got \"%s\"\n", och->value);
    return 2;
  }
  a->model = om ? om->value : NULL;
  a->cluster = oc ? oc->value : NULL;
  if (osc) {
    a->scn = hs_scenario_find(osc->value);
    if (!a->scn) {
      fprintf(stderr, "hetsim compare: unknown scenario \"%s\" (hetsim list scenarios)\n", osc->value);
      return 2;
    }
    if (!a->model)
      a->model = a->scn->model;
    if (!a->cluster)
      a->cluster = a->scn->cluster;
  }
  if (!a->model || !a->cluster) {
    fprintf(stderr, "hetsim compare: give --model and --cluster, or --scenario (see --help)\n");
    return 2;
  }
  int bad = hs_compare_strategies(ost ? ost->value : NULL, a->scn, a->list, sizeof a->list, a->names,
                                  HS_COMPARE_MAX_STRATEGIES, &a->n_names);
  if (bad >= 0) {
    char hint[256];
    hs_cli_strategy_hint(a->names[bad], hint, sizeof hint);
    fprintf(stderr, "hetsim compare: unknown strategy \"%s\"%s (hetsim list strategies)\n", a->names[bad], hint);
    return 2;
  }
  if (obase) {
    if (!hs_compare_listed(a->names, a->n_names, obase->value)) {
      fprintf(stderr, "hetsim compare: --baseline: \"%s\" is not among the strategies compared\n",
              obase->value);
      return 2;
    }
    a->baseline = obase->value;
  }
  a->batch_given = hs_cli_opt(opts, "global-batch") != NULL;
  a->precision_given = hs_cli_opt(opts, "precision") != NULL;
  int64_t workers;
  int rc = hs_cli_int(opts, "j", 1, 1, 256, &workers);
  if (rc)
    return rc;
  a->workers = (int)workers;
  return read_plan_opts(opts, &a->po);
}

/* One ok row's JSON fields into o (the keys of the CSV, in order). */
static void compare_row_json(const compare_view_t *v, const hs_compare_row_t *r, cJSON *o)
{
  cJSON_AddNumberToObject(o, "iteration_s", r->iter_s);
  cJSON_AddNumberToObject(o, "tokens_per_s", r->tokens_s);
  cJSON_AddNumberToObject(o, "gpus_used", r->gpus_used);
  cJSON_AddNumberToObject(o, "tokens_per_s_per_gpu", r->tokens_s_per_gpu);
  if (r->band_set)
    cJSON_AddNumberToObject(o, "error_band", r->error_band);
  else
    cJSON_AddNullToObject(o, "error_band");
  if (v->baseline_s > 0) {
    char key[80];
    snprintf(key, sizeof key, "speedup_%s", v->vs);
    cJSON_AddNumberToObject(o, key, v->baseline_s / r->iter_s);
  }
  cJSON_AddNumberToObject(o, "mfu", r->mfu);
  cJSON_AddNumberToObject(o, "peak_memory_bytes", r->peak_bytes);
  cJSON_AddNumberToObject(o, "memory_capacity_bytes", r->cap_bytes);
  cJSON_AddNumberToObject(o, "peak_memory_fraction", r->mem_ratio);
  char key[48];
  for (int k = 0; k < HS_TIME_PARTS; k++) {
    snprintf(key, sizeof key, "time_%s_s", hs_time_part_keys[k]);
    cJSON_AddNumberToObject(o, key, r->time_s[k]);
  }
  for (int k = 0; k < HS_MEM_PARTS; k++) {
    snprintf(key, sizeof key, "mem_%s_bytes", hs_mem_part_keys[k]);
    cJSON_AddNumberToObject(o, key, r->mem_bytes[k]);
  }
  if (r->unpriced > 0) /* unknown, not $0 or a partial sum */
    cJSON_AddNullToObject(o, "usd_per_million_tokens");
  else
    cJSON_AddNumberToObject(o, "usd_per_million_tokens", r->usd_mtok);
  cJSON_AddNumberToObject(o, "unpriced_gpus", r->unpriced);
  cJSON_AddNumberToObject(o, "search_s", r->search_s);
  cJSON_AddNumberToObject(o, "candidates", (double)r->candidates);
  cJSON_AddStringToObject(o, "plan", r->summary);
}

/* The ranking object: winner, next, margin, band and verdict (empty when
 * fewer than two rows planned). */
static void compare_ranking_json(const compare_view_t *v, cJSON *rko)
{
  const hs_ranking_t *rk = &v->rk;
  if (!rko || rk->winner < 0 || rk->next < 0)
    return;
  cJSON_AddStringToObject(rko, "winner", v->rows[rk->winner].strategy);
  cJSON_AddStringToObject(rko, "next", v->rows[rk->next].strategy);
  cJSON_AddNumberToObject(rko, "margin", rk->margin);
  if (isfinite(rk->band)) {
    cJSON_AddNumberToObject(rko, "error_band", rk->band);
    cJSON_AddBoolToObject(rko, "reliable_difference", rk->reliable);
  } else {
    cJSON_AddNullToObject(rko, "error_band");
    cJSON_AddNullToObject(rko, "reliable_difference");
  }
  cJSON_AddStringToObject(rko, "note", v->rk_text);
}

/* `compare --format json` to stdout. 0 or the exit code of a write failure. */
static int print_compare_json(const compare_view_t *v)
{
  const hs_cluster_t *c = v->c;
  cJSON *j = hs_json_stamp_version(cJSON_CreateObject(), HS_SCHEMA_VERSION),
        *arr = cJSON_AddArrayToObject(j, "rows");
  cJSON_AddStringToObject(j, "model", v->m->name);
  cJSON_AddStringToObject(j, "cluster", c->name);
  cJSON_AddNumberToObject(j, "unpriced_gpus", v->tot.n_unpriced_devices);
  cJSON_AddStringToObject(j, "charge", v->a->charge_cluster ? "cluster" : "used");
  bool any_ok = false;
  for (size_t i = 0; i < v->n; i++)
    any_ok = any_ok || v->rows[i].ok;
  cJSON_AddBoolToObject(j, "feasible", any_ok); /* false: exit 3 */
  cJSON *unc = cJSON_AddArrayToObject(j, "uncalibrated_gpus");
  for (size_t g = 0; unc && g < c->gpus.n; g++)
    if (!c->gpus.gpus[g].calibrated && hs_cluster_gpu_used(c, (int32_t)g))
      cJSON_AddItemToArray(unc, cJSON_CreateString(c->gpus.gpus[g].name));
  if (v->a->scn)
    cJSON_AddStringToObject(j, "scenario", v->a->scn->name);
  if (v->base >= 0)
    cJSON_AddStringToObject(j, "baseline", v->rows[v->base].strategy);
  else
    cJSON_AddNullToObject(j, "baseline");
  for (size_t i = 0; i < v->n; i++) {
    const hs_compare_row_t *r = &v->rows[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "strategy", r->strategy);
    cJSON_AddBoolToObject(o, "ok", r->ok);
    if (!r->ok)
      cJSON_AddStringToObject(o, "reason", r->why);
    else
      compare_row_json(v, r, o);
    cJSON_AddItemToArray(arr, o);
  }
  compare_ranking_json(v, cJSON_AddObjectToObject(j, "ranking"));
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_json_write_file(j, "-", &err);
  cJSON_Delete(j);
  return st != HS_OK ? hs_cli_fail(&err, st) : 0;
}

/* The table's notes under the rows: verdict, calibration, what the
 * speedups are against and what $/Mtok charges. */
static void print_compare_notes(const compare_view_t *v)
{
  const compare_args_t *a = v->a;
  printf("%s\n", v->rk_text);
  hs_cluster_print_calibration(v->c, "", stdout);
  if (v->base >= 0)
    printf("(%s: speedup against %s, the fastest %s; every strategy may leave node groups idle)\n",
           v->vs, v->rows[v->base].strategy,
           a->baseline ? "row asked for with --baseline" : "baseline (megatron, deepspeed, whale, data-parallel) in the list");
  else if (a->baseline)
    printf("(no speedups: baseline %s found no plan or is not in the list)\n", a->baseline);
  /* say what is charged: a plan that leaves GPUs idle pays for fewer */
  if (a->charge_cluster)
    printf("($/Mtok: rent of the whole cluster, %.2f USD/h, idle GPUs included)\n",
           v->tot.usd_per_hour);
  else
    printf("($/Mtok: rent of the GPUs each plan uses, at their catalog price; --charge "
           "cluster charges the whole cluster, as `hetsim sweep` does)\n");
  if (v->tot.n_unpriced_devices > 0)
    printf("($/Mtok is \"unpriced\" for a plan that uses any of the cluster's %d GPUs (of %zu) with no "
           "known price in clusters/gpus.json)\n",
           v->tot.n_unpriced_devices, v->c->n_devices);
}

/* `compare --format table` (rows and notes) or `--format csv` to stdout. */
static void print_compare_table(const compare_view_t *v)
{
  const hs_scenario_t *scn = v->a->scn;
  if (strcmp(v->a->fmt, "csv") == 0) {
    hs_compare_write_csv_vs(v->rows, v->n, v->base, stdout);
    return;
  }
  printf("%s on %s (%zu GPUs)%s%s\n%-14s %10s %12s %5s %10s %16s %6s %8s %9s %9s  %s\n", v->m->name,
         v->c->name, v->c->n_devices, scn ? ", scenario " : "", scn ? scn->name : "", "strategy", "iter s",
         "tokens/s", "GPUs", "tok/s/GPU", v->vs, "MFU", "mem", "$/Mtok", "search s", "plan");
  for (size_t i = 0; i < v->n; i++) {
    const hs_compare_row_t *r = &v->rows[i];
    if (!r->ok) {
      printf("%-14s n/a: %s\n", r->strategy, r->why);
      continue;
    }
    char sp[16] = "-";
    if (v->baseline_s > 0)
      snprintf(sp, sizeof sp, "%.2fx", v->baseline_s / r->iter_s);
    char usd[24] = "unpriced";
    if (r->unpriced == 0)
      snprintf(usd, sizeof usd, "%.3f", r->usd_mtok);
    printf("%-14s %10.4f %12.0f %5d %10.0f %16s %5.1f%% %7.0f%% %9s %9.3f  %s\n", r->strategy,
           r->iter_s, r->tokens_s, r->gpus_used, r->tokens_s_per_gpu, sp, r->mfu * 100.0,
           r->mem_ratio * 100.0, usd, r->search_s, r->summary);
  }
  print_compare_notes(v);
}

/* Fills the view's baseline time, column name and verdict line from the
 * ranked rows. */
static void compare_view_finish(compare_view_t *v)
{
  v->baseline_s = v->base >= 0 ? v->rows[v->base].iter_s : 0.0;
  hs_strlcpy(v->vs, "vs_baseline", sizeof v->vs);
  if (v->base >= 0)
    snprintf(v->vs, sizeof v->vs, "vs_%s", v->rows[v->base].strategy);
  /* is the fastest row's lead outside the error bands (docs/validation.md)? */
  const hs_ranking_t *rk = &v->rk;
  hs_ranking_text(rk, rk->winner >= 0 ? v->rows[rk->winner].strategy : "",
                  rk->next >= 0 ? v->rows[rk->next].strategy : "", v->rk_text, sizeof v->rk_text);
}

int hs_cmd_compare(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "cluster: catalog name or JSON file"},
      {"scenario", true, "named scenario (hetsim list scenarios) instead of --model/--cluster"},
      {"strategies", true, "comma-separated planners (default: all registered)"},
      {"global-batch", true, "samples per iteration"},
      {"max-microbatch-size", true, "largest microbatch tried (default 8)"},
      {"max-devices", true, "exhaustive: largest cluster accepted (default 8)"},
      {"time-limit", true, "search budget per strategy in seconds (0 = none)"},
      {"mip-gap", true, "relative MIP gap for autohet (default 0.01)"},
      {"no-recompute", false, "never use activation recomputation"},
      {"no-practice-search", false, "baselines use only the practice options given (no search over "
                                    "sequence parallelism, ZeRO stage, interleaving, uneven stages)"},
      HS_CLI_HEADROOM_OPT,
      HS_CLI_PRACTICE_OPTS,
      {"baseline", true, "speedups against this strategy (default: the fastest of megatron, "
                         "deepspeed, whale, data-parallel in the list)"},
      {"format", true, "table (default), csv or json"},
      {"charge", true, "$/Mtok charges the GPUs each plan uses (used, default) or the whole "
                       "cluster (cluster: idle GPUs are paid for too)"},
      {"j", true, "worker processes, one strategy each at a time (default 1; same rows)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim compare (--model M --cluster C | --scenario NAME)\n"
                        "         [--strategies a,b,...] [--global-batch G] [--time-limit S]\n"
                        "         [--kernels K] [--attention flash|unfused] [--sequence-parallel]\n"
                        "         [--zero-stage Z] [--precision P] [--grad-reduce-dtype fp32|default] [--memory-headroom F]\n"
                        "         [--no-practice-search] [--baseline S]\n"
                        "         [--format table|csv|json] [--charge used|cluster] [-j N]");
  if (rc)
    return rc < 0 ? 0 : rc;
  compare_args_t args;
  const compare_args_t *a = &args;
  hs_model_t m;
  hs_cluster_t c;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_compare_row_t *rows = NULL;
  compare_view_t v;
  memset(&v, 0, sizeof v);
  if ((rc = read_compare_args(opts, &args)) || (rc = load_inputs(a->model, a->cluster, &m, &c)))
    goto out;
  hs_compare_scenario_opts(a->scn, (int64_t)c.n_devices, a->batch_given, a->precision_given, &args.po);
  rows = calloc(a->n_names + 1, sizeof *rows);
  if (!rows) {
    rc = 1;
    goto out;
  }
  v = (compare_view_t){.a = a, .m = &m, .c = &c, .rows = rows, .n = a->n_names};
  hs_cluster_totals(&c, HS_DTYPE_BF16, &v.tot); /* for the priced-GPU note */
  if (hs_compare_rank_workers(&m, &c, a->names, a->n_names, &a->po, a->charge_cluster,
                              strcmp(a->fmt, "table") ? NULL : stderr, a->workers, a->baseline,
                              rows, &v.base, &v.rk) != HS_OK) {
    fprintf(stderr, "hetsim: out of memory\n");
    rc = 1;
    goto out;
  }
  compare_view_finish(&v);
  if (strcmp(a->fmt, "json") == 0)
    rc = print_compare_json(&v);
  else
    print_compare_table(&v);
  bool any = false; /* no strategy found a plan: nothing holds */
  for (size_t i = 0; i < a->n_names; i++)
    any = any || rows[i].ok;
  if (rc == 0 && !any) {
    fprintf(stderr, "hetsim compare: no strategy found a feasible plan (exit 3)\n");
    rc = HS_EXIT_INFEASIBLE;
  }
out:
  free(rows);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return rc;
}
