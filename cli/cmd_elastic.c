/*
 * cmd_elastic.c - `hetsim elastic`: a spot-instance what-if over hours of
 * training (preemptions, re-planning, recovery), one recovery strategy or a
 * comparison of all of them on the same preemption sequence. The logic is
 * in elastic/elastic*.c; this file parses options and prints.
 */
#include "cli.h"
#include "hs_elastic.h"
#include "hs_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char usage_text[] =
    "usage: hetsim elastic --model M --cluster C [--strategy S] [--recovery cloud|local-first|restart]\n"
    "         [--hours H] [--seed N] [--trace-file F] [--compare-recovery] [--rates KEY=R,...]\n"
    "         [--replace-s S | --no-replace] [--checkpoint-interval-s S] [--checkpoint-cost-s S]\n"
    "         [--cloud-GBps B] [--json] [-o result.json] [--timeline t.json] [--timeline-csv t.csv]\n"
    "Simulates hours of training on a cluster with spot nodes: preemptions (Poisson at the\n"
    "cluster's or --rates' rates per node-hour, or --trace-file), lost work since the last\n"
    "checkpoint, re-planning on the surviving devices and recovery of the training state.";

typedef struct dopt {
  const char *name;
  double *dst;
  double lo;
} dopt_t;

static int read_cfg(const hs_opt_t *opts, hs_elastic_cfg_t *cfg)
{
  int rc;
  int64_t v;
  hs_elastic_cfg_init(cfg);
  const hs_opt_t *o;
  if ((o = hs_cli_opt(opts, "strategy")))
    cfg->strategy = o->value;
  if ((o = hs_cli_opt(opts, "recovery")) && hs_recovery_parse(o->value, &cfg->recovery) != HS_OK) {
    fprintf(stderr, "hetsim elastic: --recovery: must be cloud, local-first or restart, got \"%s\"\n",
            o->value);
    return 2;
  }
  dopt_t d[] = {
      {"hours", &cfg->hours, 0},
      {"checkpoint-interval-s", &cfg->checkpoint_interval_s, 0},
      {"checkpoint-cost-s", &cfg->checkpoint_cost_s, 0},
      {"ckpt-write-GBps", &cfg->ckpt_write_GBps, 0},
      {"cloud-GBps", &cfg->cloud_GBps, 0},
      {"cloud-total-GBps", &cfg->cloud_total_GBps, 0},
      {"local-read-GBps", &cfg->local_read_GBps, 0},
      {"state-bytes-per-param", &cfg->state_bytes_per_param, 0},
      {"replan-base-s", &cfg->replan_base_s, 0},
      {"replan-ns-per-candidate", &cfg->replan_ns_per_candidate, 0},
      {"restart-overhead-s", &cfg->restart_overhead_s, 0},
      {"time-limit", &cfg->plan.time_limit_s, 0},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(d); k++) {
    double x;
    if ((rc = hs_cli_double(opts, d[k].name, *d[k].dst, &x)))
      return rc;
    if (x < d[k].lo) {
      fprintf(stderr, "hetsim elastic: --%s: must be >= %g, got %g\n", d[k].name, d[k].lo, x);
      return 2;
    }
    *d[k].dst = x;
  }
  if (!(cfg->hours > 0) || cfg->hours > 1e5) {
    fprintf(stderr, "hetsim elastic: --hours: must be in (0, 1e5], got %g\n", cfg->hours);
    return 2;
  }
  const char *pos_bw[] = {"ckpt-write-GBps", "cloud-GBps", "local-read-GBps", "state-bytes-per-param"};
  double *pos_v[] = {&cfg->ckpt_write_GBps, &cfg->cloud_GBps, &cfg->local_read_GBps,
                     &cfg->state_bytes_per_param};
  for (size_t k = 0; k < HS_ARRAY_LEN(pos_bw); k++)
    if (!(*pos_v[k] > 0)) {
      fprintf(stderr, "hetsim elastic: --%s: must be > 0, got %g\n", pos_bw[k], *pos_v[k]);
      return 2;
    }
  if ((rc = hs_cli_int(opts, "warmup-iterations", cfg->warmup_iterations, 0, 1000000, &v)))
    return rc;
  cfg->warmup_iterations = (int32_t)v;
  if ((rc = hs_cli_int(opts, "global-batch", 0, 0, INT64_C(1) << 40, &v)))
    return rc;
  cfg->plan.global_batch = v;
  if ((rc = hs_cli_int(opts, "max-microbatch-size", 8, 1, 1 << 20, &v)))
    return rc;
  cfg->plan.max_microbatch_size = (int32_t)v;
  return 0;
}

static double gb(double b) { return b / 1e9; }

static void print_recoveries(const hs_elastic_result_t *r)
{
  if (!r->n_recoveries) {
    printf("recoveries      none\n");
    return;
  }
  printf("\n  #   time h  cause    down up  GPUs   lost s  replan s  transfer s  overhead s   local GB   cloud GB  plan\n");
  for (size_t k = 0; k < r->n_recoveries; k++) {
    const hs_elastic_recovery_t *v = &r->recoveries[k];
    printf("%3zu %8.3f  %-7s %4d %2d %5d %8.1f %9.2f %11.2f %11.2f %10.2f %10.2f  %s%s%s\n", k,
           hs_time_to_s(v->t_ns) / 3600.0, v->kind == HS_ELASTIC_PREEMPT ? "preempt" : "replace",
           v->n_nodes_down, v->n_nodes_up, v->n_devices, v->lost_s, v->replan_s, v->transfer_s,
           v->overhead_s, gb(v->bytes_peer + v->bytes_own), gb(v->bytes_cloud), v->plan_summary,
           v->interrupted ? " [interrupted]" : "", v->cloud_fallback ? " [cloud faster]" : "");
  }
}

static double mean_recovery_s(const hs_elastic_result_t *r, double *bytes_local, double *bytes_cloud)
{
  double s = 0;
  int n = 0;
  *bytes_local = *bytes_cloud = 0;
  for (size_t k = 0; k < r->n_recoveries; k++) {
    const hs_elastic_recovery_t *v = &r->recoveries[k];
    *bytes_local += v->bytes_peer + v->bytes_own;
    *bytes_cloud += v->bytes_cloud;
    if (v->n_devices > 0) {
      s += v->recovery_s;
      n++;
    }
  }
  return n ? s / n : 0.0;
}

static void print_result(const hs_elastic_result_t *r, const hs_model_t *m, const hs_cluster_t *c,
                         uint64_t seed, const char *source, bool timing)
{
  printf("elastic         model %s   cluster %s (%zu GPUs)   strategy %s   recovery %s\n", m->name,
         c->name, c->n_devices, r->strategy, hs_recovery_name(r->recovery));
  printf("sequence        %s, %g h, seed %llu: %d preemptions, %d replacements\n", source, r->hours,
         (unsigned long long)seed, r->n_preemptions, r->n_replacements);
  printf("steady state    %.0f tokens/s (iteration %.4f s, global batch %lld)\n",
         r->steady_tokens_per_s, r->steady_iteration_s, (long long)r->global_batch);
  double steady_h = r->steady_tokens_per_s * 3600.0;
  printf("goodput         %.1f M tokens/h (%.1f%% of steady state)\n", r->goodput_tokens_per_h / 1e6,
         steady_h > 0 ? 100.0 * r->goodput_tokens_per_h / steady_h : 0.0);
  printf("time h          train %.3f  lost(recompute) %.3f  checkpoint %.3f  replan %.3f  recover %.3f  idle %.3f\n",
         r->time_s[HS_EPH_TRAIN] / 3600, r->time_s[HS_EPH_LOST] / 3600,
         r->time_s[HS_EPH_CKPT] / 3600, r->time_s[HS_EPH_REPLAN] / 3600,
         r->time_s[HS_EPH_RECOVER] / 3600, r->time_s[HS_EPH_IDLE] / 3600);
  printf("checkpoints     %d written\n", r->n_checkpoints);
  if (r->n_unpriced_devices)
    printf("cost            unpriced: %d GPUs have no known price (give them one in "
           "clusters/gpus.json)\n", r->n_unpriced_devices);
  else
    printf("cost            $%.2f, $%.4f per million useful tokens\n", r->cost_usd,
           r->usd_per_million_tokens);
  if (timing)
    printf("re-planning     %d searches, %.3f s wall (not in the timeline)\n", r->n_searches,
           r->replan_wall_s);
  print_recoveries(r);
}

/* `hetsim elastic`'s options after parsing. */
typedef struct elastic_args {
  const char *model, *cluster;
  hs_elastic_cfg_t cfg;
  int64_t seed;
  double replace_s;           /* -1: preempted nodes never come back */
  bool json, timing, compare;
  const char *trace_file;     /* --trace-file, NULL: Poisson sampling */
  const char *rates;          /* --rates, NULL: the cluster's */
  const char *out_path, *timeline, *timeline_csv; /* -o, --timeline, --timeline-csv */
} elastic_args_t;

/* Reads the parsed options into *a: the required ones, the configuration
 * (read_cfg), the strategy by name, --seed and --replace-s, in that order.
 * 0, or an exit code with the message printed. */
static int read_elastic_args(const hs_opt_t *opts, elastic_args_t *a)
{
  int rc;
  memset(a, 0, sizeof *a);
  const hs_opt_t *om = hs_cli_opt(opts, "model"), *oc = hs_cli_opt(opts, "cluster");
  if (!om || !oc) {
    fprintf(stderr, "hetsim elastic: --model and --cluster are required (see --help)\n");
    return 2;
  }
  a->model = om->value;
  a->cluster = oc->value;
  if ((rc = read_cfg(opts, &a->cfg)))
    return rc;
  if (!hs_planner_find(a->cfg.strategy)) {
    char hint[256];
    hs_cli_strategy_hint(a->cfg.strategy, hint, sizeof hint);
    fprintf(stderr, "hetsim elastic: unknown strategy \"%s\"%s (hetsim list strategies)\n",
            a->cfg.strategy, hint);
    return 2;
  }
  if ((rc = hs_cli_int(opts, "seed", 1, 0, INT64_MAX, &a->seed)))
    return rc;
  if ((rc = hs_cli_double(opts, "replace-s", 1800.0, &a->replace_s)))
    return rc;
  if (a->replace_s < 0) {
    fprintf(stderr, "hetsim elastic: --replace-s: must be >= 0, got %g\n", a->replace_s);
    return 2;
  }
  if (hs_cli_opt(opts, "no-replace"))
    a->replace_s = -1.0;
  a->json = hs_cli_opt(opts, "json") != NULL;
  a->timing = hs_cli_opt(opts, "timing") != NULL;
  a->compare = hs_cli_opt(opts, "compare-recovery") != NULL;
  const hs_opt_t *o;
  a->trace_file = (o = hs_cli_opt(opts, "trace-file")) ? o->value : NULL;
  a->rates = (o = hs_cli_opt(opts, "rates")) ? o->value : NULL;
  a->out_path = (o = hs_cli_opt(opts, "o")) ? o->value : NULL;
  a->timeline = (o = hs_cli_opt(opts, "timeline")) ? o->value : NULL;
  a->timeline_csv = (o = hs_cli_opt(opts, "timeline-csv")) ? o->value : NULL;
  return 0;
}

/* The preemption sequence into *tr: the --trace-file, or sampled from the
 * nodes' rates (--rates or the cluster's) over cfg.hours; `source` gets
 * the text the report prints for it. */
static hs_status_t load_sequence(const elastic_args_t *a, const hs_cluster_t *c, hs_elastic_trace_t *tr,
                                 char *source, size_t source_n, hs_error_t *err)
{
  hs_status_t st;
  if (a->trace_file) {
    if ((st = hs_elastic_trace_load(a->trace_file, c, tr, err)) != HS_OK)
      return st;
    snprintf(source, source_n, "trace %s", hs_basename(a->trace_file));
    return HS_OK;
  }
  double *rates = hs_calloc(c->n_nodes + 1, sizeof *rates);
  if (!rates)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  if ((st = hs_elastic_node_rates(c, a->rates, rates, err)) == HS_OK &&
      (st = hs_elastic_trace_sample(c, rates, a->cfg.hours, a->replace_s, (uint64_t)a->seed, tr, err)) ==
          HS_OK) {
    double sum = 0;
    int spot = 0;
    for (size_t n = 0; n < c->n_nodes; n++) {
      sum += rates[n];
      spot += rates[n] > 0;
    }
    snprintf(source, source_n, "Poisson, %d preemptible nodes, %.3g preemptions/h in all", spot, sum);
  }
  free(rates);
  return st;
}

/* Runs the asked recovery strategy, or with --compare-recovery every one,
 * on the same sequence into res[k] (k = the strategy). */
static hs_status_t run_recoveries(const elastic_args_t *a, const hs_model_t *m, const hs_cluster_t *c,
                                  const hs_elastic_trace_t *tr, hs_elastic_planner_t *pl,
                                  hs_elastic_result_t *res, hs_error_t *err)
{
  int first = a->compare ? 0 : (int)a->cfg.recovery;
  int last = a->compare ? HS_RECOVERY__COUNT - 1 : (int)a->cfg.recovery;
  for (int k = first; k <= last; k++) {
    hs_elastic_cfg_t ck = a->cfg;
    ck.recovery = (hs_recovery_t)k;
    hs_status_t st = hs_elastic_run(m, c, &ck, tr, pl, &res[k], err);
    if (st != HS_OK)
      return st;
  }
  return HS_OK;
}

/* The result JSON: one result, or {"results": [...]} with every recovery
 * strategy's; with model and seed. NULL when out of memory. */
static cJSON *elastic_json(const elastic_args_t *a, const hs_elastic_result_t *res, const hs_model_t *m,
                           const hs_cluster_t *c)
{
  cJSON *j = NULL;
  if (a->compare) {
    j = cJSON_CreateObject();
    cJSON *arr = j ? cJSON_AddArrayToObject(j, "results") : NULL;
    for (int k = 0; arr && k < HS_RECOVERY__COUNT; k++) {
      cJSON *x = hs_elastic_result_to_json(&res[k], c, a->timing);
      if (!x || !cJSON_AddItemToArray(arr, x)) {
        cJSON_Delete(x);
        arr = NULL;
      }
    }
    if (!arr) {
      cJSON_Delete(j);
      return NULL;
    }
  } else {
    j = hs_elastic_result_to_json(&res[a->cfg.recovery], c, a->timing);
    if (!j)
      return NULL;
  }
  cJSON_AddStringToObject(j, "model", m->name);
  cJSON_AddNumberToObject(j, "seed", (double)a->seed);
  return j;
}

/* The --compare-recovery table: one row per recovery strategy and
 * local-first's speed-up over cloud. */
static void print_recovery_table(const elastic_args_t *a, const hs_elastic_result_t *res,
                                 const hs_model_t *m, const hs_cluster_t *c, const char *source)
{
  const hs_elastic_result_t *main_r = &res[a->cfg.recovery];
  printf("elastic         model %s   cluster %s (%zu GPUs)   strategy %s\n", m->name, c->name,
         c->n_devices, main_r->strategy);
  printf("sequence        %s, %g h, seed %llu: %d preemptions, %d replacements\n", source,
         a->cfg.hours, (unsigned long long)a->seed, main_r->n_preemptions, main_r->n_replacements);
  printf("steady state    %.0f tokens/s\n\n", main_r->steady_tokens_per_s);
  printf("recovery     goodput Mtok/h  of steady  lost h  recover h  replan h  mean recovery s   local GB   cloud GB    $/Mtok\n");
  for (int k = 0; k < HS_RECOVERY__COUNT; k++) {
    const hs_elastic_result_t *r = &res[k];
    double bl, bc, mr = mean_recovery_s(r, &bl, &bc);
    char mt[32] = "unpriced";
    if (r->n_unpriced_devices == 0)
      snprintf(mt, sizeof mt, "%.4f", r->usd_per_million_tokens);
    printf("%-12s %14.1f %9.1f%% %7.3f %10.3f %9.3f %16.2f %10.1f %10.1f %9s\n",
           hs_recovery_name((hs_recovery_t)k), r->goodput_tokens_per_h / 1e6,
           100.0 * r->goodput_tokens_per_h / (r->steady_tokens_per_s * 3600.0),
           r->time_s[HS_EPH_LOST] / 3600, r->time_s[HS_EPH_RECOVER] / 3600,
           r->time_s[HS_EPH_REPLAN] / 3600, mr, gb(bl), gb(bc), mt);
  }
  if (main_r->n_unpriced_devices)
    printf("($/Mtok unpriced: %d GPUs have no known price)\n", main_r->n_unpriced_devices);
  double bl, bc;
  double lf = mean_recovery_s(&res[HS_RECOVERY_LOCAL_FIRST], &bl, &bc);
  double cl = mean_recovery_s(&res[HS_RECOVERY_CLOUD], &bl, &bc);
  if (lf > 0)
    printf("\nlocal-first recovers %.2fx faster than cloud on average (%.2f s vs %.2f s)\n",
           cl / lf, lf, cl);
  if (a->timing)
    printf("re-planning     %d searches, %.3f s wall (not in the timeline)\n",
           res[0].n_searches, res[0].replan_wall_s + res[1].replan_wall_s + res[2].replan_wall_s);
}

/* Writes the timelines, the JSON (-o and/or --json) and, without --json,
 * the text report. */
static hs_status_t emit_elastic(const elastic_args_t *a, const hs_elastic_result_t *res, const hs_model_t *m,
                                const hs_cluster_t *c, const char *source, hs_error_t *err)
{
  const hs_elastic_result_t *main_r = &res[a->cfg.recovery];
  hs_status_t st;
  if (a->timeline && (st = hs_elastic_timeline_write_json(main_r, c, a->timeline, err)) != HS_OK)
    return st;
  if (a->timeline_csv && (st = hs_elastic_timeline_write_csv(main_r, a->timeline_csv, err)) != HS_OK)
    return st;
  if (a->json || a->out_path) {
    if ((st = hs_cli_emit_json(elastic_json(a, res, m, c), a->out_path, a->json, err)) != HS_OK)
      return st;
    if (a->json)
      return HS_OK;
  }
  if (!a->compare)
    print_result(main_r, m, c, (uint64_t)a->seed, source, a->timing);
  else
    print_recovery_table(a, res, m, c, source);
  return HS_OK;
}

int hs_cmd_elastic(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "cluster: catalog name or JSON file"},
      {"strategy", true, "planner for every (re-)plan (default hapt)"},
      {"recovery", true, "cloud, local-first (default) or restart"},
      {"hours", true, "simulated horizon in hours (default 24)"},
      {"seed", true, "seed of the preemption sequence (default 1)"},
      {"trace-file", true, "JSON list of preemption/replacement times instead of sampling"},
      {"rates", true, "preemptions per node-hour by site or GPU type: KEY=R,KEY=R"},
      {"replace-s", true, "mean delay before a preempted node is replaced (default 1800)"},
      {"no-replace", false, "preempted nodes never come back"},
      {"compare-recovery", false, "run every recovery strategy on the same sequence"},
      {"checkpoint-interval-s", true, "training seconds between checkpoints (default 1800; 0 = never)"},
      {"checkpoint-cost-s", true, "fixed checkpoint write time (default: bytes / --ckpt-write-GBps)"},
      {"ckpt-write-GBps", true, "checkpoint upload per node, GB/s (default 1.25)"},
      {"cloud-GBps", true, "cloud download per node, GB/s (default 1.25)"},
      {"cloud-total-GBps", true, "cloud egress shared by all nodes, GB/s (default unlimited)"},
      {"local-read-GBps", true, "read of a node's own checkpoint copy, GB/s (default 5)"},
      {"state-bytes-per-param", true, "checkpointed bytes per parameter (default 14)"},
      {"replan-base-s", true, "modelled re-plan cost (default 1)"},
      {"replan-ns-per-candidate", true, "plus this per candidate the search scored (default 100)"},
      {"restart-overhead-s", true, "restart: relaunch cost (default 120)"},
      {"warmup-iterations", true, "restart: iterations redone for warm-up (default 10)"},
      {"global-batch", true, "samples per iteration (default: the first plan's)"},
      {"max-microbatch-size", true, "largest microbatch tried (default 8)"},
      {"time-limit", true, "search budget per re-plan in seconds (0 = none)"},
      {"json", false, "print the result as JSON"},
      {"o", true, "write the result JSON to this file"},
      {"timeline", true, "write the timeline as a Chrome trace JSON"},
      {"timeline-csv", true, "write the timeline as CSV"},
      {"timing", false, "also report re-planning wall time (varies run to run)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos, usage_text);
  if (rc)
    return rc < 0 ? 0 : rc;
  elastic_args_t a;
  if ((rc = read_elastic_args(opts, &a)))
    return rc;
  hs_model_t m;
  hs_cluster_t c;
  hs_elastic_trace_t tr;
  hs_elastic_planner_t *pl = NULL;
  hs_elastic_result_t res[HS_RECOVERY__COUNT];
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_elastic_trace_init(&tr);
  for (int k = 0; k < HS_RECOVERY__COUNT; k++)
    hs_elastic_result_init(&res[k]);
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  char source[600];
  if ((st = hs_model_load(a.model, 0, &m, &err)) != HS_OK ||
      (st = hs_cluster_load(a.cluster, &c, &err)) != HS_OK ||
      (st = load_sequence(&a, &c, &tr, source, sizeof source, &err)) != HS_OK ||
      (st = hs_elastic_planner_new(&m, &c, &a.cfg, &pl, &err)) != HS_OK ||
      (st = run_recoveries(&a, &m, &c, &tr, pl, res, &err)) != HS_OK ||
      (st = emit_elastic(&a, res, &m, &c, source, &err)) != HS_OK)
    rc = hs_cli_fail(&err, st);
  for (int k = 0; k < HS_RECOVERY__COUNT; k++)
    hs_elastic_result_destroy(&res[k]);
  hs_elastic_planner_free(pl);
  hs_elastic_trace_destroy(&tr);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return rc;
}
