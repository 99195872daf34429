/*
 * cmd_whatif.c - `hetsim whatif`: which purchase (or rental) within a budget
 * trains a model fastest, or cheapest? Enumerates the affordable GPU
 * vectors over the candidates (hs_whatif_enumerate), adds each to the base
 * cluster (or makes it the whole cluster with --replace), plans it with
 * every strategy given, keeps the best, and prints the options ranked by
 * tokens/s with the Pareto front of tokens/s against $/M tokens marked.
 *
 * Like with like: every option trains the same global batch (--global-batch,
 * default 8 samples per GPU of the largest option), unless the user asks for
 * a batch that grows with the cluster (--global-batch-per-gpu). Exit 3 when
 * no option has a feasible plan.
 */
#include "cli.h"
#include "hs_export.h"
#include "hs_json.h"
#include "hs_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define MAX_STRATEGIES 16

typedef struct option_row {
  const hs_whatif_option_t *opt;
  char label[256];
  hs_eval_t best;          /* best strategy's evaluation */
  char strategy[48];
  double usd_h, usd_mtok;
  bool ok, front;
  char why[400];
} option_row_t;

typedef struct job {
  const hs_model_t *m;
  const hs_cluster_t *base;   /* NULL with --replace */
  const char *const *gpus;
  int32_t n_types;
  int32_t gpus_per_node;
  double nic_GBps, link_GBps, link_latency_us;
  const hs_price_override_t *prices;
  size_t n_prices;
  hs_price_model_t price;
  const char *const *strategies;
  int n_strategies;
  const hs_plan_opts_t *po;
  int64_t batch_per_gpu;      /* > 0: global batch = this x the option's GPUs */
  option_row_t *rows;
  hs_progress_t *prog;
  bool oom;
} job_t;

/* Fills r (a copy of rows[i] in a worker process). */
static void eval_option(job_t *j, option_row_t *r)
{
  char *text = NULL;
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_whatif_cluster_json(j->base, j->gpus, r->opt->count, j->n_types,
                                          j->gpus_per_node, j->nic_GBps, j->link_GBps,
                                          j->link_latency_us, &text, &err);
  if (st == HS_OK)
    st = hs_cluster_parse(text, "whatif option", &c, &err);
  if (st != HS_OK) {
    snprintf(r->why, sizeof r->why, "%.390s", err.msg);
    goto out;
  }
  hs_cluster_set_prices(&c, j->prices, j->n_prices, "--gpu-price");
  hs_plan_opts_t po = *j->po;
  if (j->batch_per_gpu > 0)
    po.global_batch = j->batch_per_gpu * (int64_t)c.n_devices;
  r->best.global_batch = po.global_batch;
  r->best.tokens_per_iteration = po.global_batch * j->m->seq_len;
  for (int s = 0; s < j->n_strategies; s++) {
    hs_eval_t e;
    if (hs_eval_run(j->m, &c, j->strategies[s], &po, &e) != HS_OK) {
      j->oom = true;
      goto out;
    }
    if (s == 0) { /* cluster facts, also for rows where nothing plans */
      r->best = e;
      r->best.global_batch = po.global_batch;
      r->best.tokens_per_iteration = po.global_batch * j->m->seq_len;
    }
    if (e.ok && !e.oom && (!r->ok || e.tokens_per_s > r->best.tokens_per_s)) {
      r->best = e;
      r->ok = true;
      hs_strlcpy(r->strategy, j->strategies[s], sizeof r->strategy);
    } else if (!r->ok && !r->why[0] && e.error[0]) {
      snprintf(r->why, sizeof r->why, "%s: %.360s", j->strategies[s], e.error);
    }
  }
  r->usd_h = r->best.usd_per_hour[j->price];
  if (r->ok && r->best.tokens_per_iteration > 0 && r->usd_h > 0)
    r->usd_mtok = r->usd_h * r->best.iteration_s / 3600.0 / (double)r->best.tokens_per_iteration * 1e6;
  else if (r->ok)
    r->usd_mtok = INFINITY;
  if (!r->ok && !r->why[0])
    snprintf(r->why, sizeof r->why, "no strategy found a plan that fits in memory");
out:
  free(text);
  hs_cluster_destroy(&c);
}

static hs_status_t map_option(void *ctx, size_t i, void **out, size_t *len, hs_error_t *err)
{
  job_t *j = ctx;
  option_row_t *r = malloc(sizeof *r);
  if (!r)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  *r = j->rows[i];
  eval_option(j, r);
  if (j->oom) {
    free(r);
    return hs_error_set(err, HS_ENOMEM, "out of memory evaluating option %zu", i);
  }
  *out = r;
  *len = sizeof *r;
  return HS_OK;
}

static int lost_option(void *ctx, size_t i, const char *why)
{
  job_t *j = ctx;
  snprintf(j->rows[i].why, sizeof j->rows[i].why, "%s", why);
  j->rows[i].ok = false;
  hs_progress_add(j->prog, 1);
  return 0;
}

static int sink_option(void *ctx, size_t i, const void *data, size_t len)
{
  job_t *j = ctx;
  if (len == sizeof(option_row_t)) {
    const hs_whatif_option_t *opt = j->rows[i].opt; /* the worker's pointer means nothing here */
    memcpy(&j->rows[i], data, len);
    j->rows[i].opt = opt;
  }
  hs_progress_add(j->prog, 1);
  return 0;
}

static int cmp_rows(const void *a, const void *b)
{
  const option_row_t *x = a, *y = b;
  if (x->ok != y->ok)
    return x->ok ? -1 : 1;
  if (x->ok && x->best.tokens_per_s != y->best.tokens_per_s)
    return x->best.tokens_per_s > y->best.tokens_per_s ? -1 : 1;
  if (x->usd_h != y->usd_h)
    return x->usd_h < y->usd_h ? -1 : 1;
  return strcmp(x->label, y->label);
}

/* --gpu-price GPU=USD[:SPOT],... */
static int parse_prices(const char *s, hs_price_override_t **out, size_t *n)
{
  char buf[2048];
  hs_strlcpy(buf, s, sizeof buf);
  size_t cap = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok) {
      fprintf(stderr, "hetsim whatif: --gpu-price: expected GPU=USD_PER_HOUR[:SPOT], got \"%s\"\n", tok);
      return 2;
    }
    *eq = '\0';
    char *end = NULL;
    double od = strtod(eq + 1, &end), sp = -1.0;
    if (end && *end == ':') {
      char *e2 = NULL;
      sp = strtod(end + 1, &e2);
      end = e2;
    }
    if (end == eq + 1 || !end || *end || !(od >= 0) || !isfinite(od) || (sp < 0 && sp != -1.0) ||
        !isfinite(sp)) {
      fprintf(stderr, "hetsim whatif: --gpu-price: %s: expected a price >= 0 in USD per GPU-hour\n", tok);
      return 2;
    }
    if (hs_reserve((void **)out, &cap, *n + 1, sizeof **out) != HS_OK)
      return 1;
    hs_price_override_t *o = &(*out)[(*n)++];
    memset(o, 0, sizeof *o);
    hs_strlcpy(o->gpu, tok, sizeof o->gpu);
    o->ondemand_usd_h = od;
    o->spot_usd_h = sp;
  }
  return 0;
}

int hs_cmd_whatif(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "base cluster the purchases are added to (catalog name or JSON)"},
      {"replace", false, "options replace the base cluster instead of adding to it"},
      {"budget-usd-per-hour", true, "most the purchases may cost, USD per hour"},
      {"candidates", true, "comma-separated GPU types to buy (hetsim list gpus)"},
      {"price", true, "on-demand (default) or spot"},
      {"gpu-price", true, "price overrides GPU=USD[:SPOT],... (USD per GPU-hour)"},
      {"step", true, "GPUs are bought in multiples of this (default 8)"},
      {"gpus-per-node", true, "GPUs per added node (default 8)"},
      {"nic-GBps", true, "NIC bandwidth per added node, GB/s (default 25)"},
      {"link-GBps", true, "bandwidth of the link from the added site to each base site (default 25)"},
      {"link-latency-us", true, "its latency in microseconds (default 10)"},
      {"strategies", true, "planners tried per option (default megatron,whale,hapt,data-parallel)"},
      {"global-batch", true, "samples per iteration, the same for every option (default 8 per GPU "
                             "of the largest option)"},
      {"global-batch-per-gpu", true, "instead: each option trains this many samples per GPU (its "
                                     "batch grows with its size)"},
      {"quiet", false, "no progress output"},
      {"time-limit", true, "search budget per strategy and option, seconds (default 60)"},
      {"max-options", true, "refuse to evaluate more options than this (default 500)"},
      {"j", true, "worker processes (default 1)"},
      {"top", true, "print only the best N options (default all)"},
      {"format", true, "table (default), csv or json"},
      HS_CLI_HEADROOM_OPT,
      HS_CLI_PRACTICE_OPTS,
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim whatif --model M (--cluster BASE | --replace)\n"
                        "         --budget-usd-per-hour X --candidates GPU,GPU,...\n"
                        "         [--price on-demand|spot] [--gpu-price GPU=USD,...] [--step N]\n"
                        "         [--strategies a,b] [--global-batch G | --global-batch-per-gpu N]\n"
                        "         [--precision P] [--memory-headroom F] [--kernels K] [--zero-stage Z] ...\n"
                        "         [-j N] [--format table|csv|json] [--quiet]\n"
                        "exit: 0 ok, 2 bad input, 3 no option has a feasible plan");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *om = hs_cli_opt(opts, "model"), *oc = hs_cli_opt(opts, "cluster"),
                 *ob = hs_cli_opt(opts, "budget-usd-per-hour"), *ocand = hs_cli_opt(opts, "candidates"),
                 *ofmt = hs_cli_opt(opts, "format"), *oprice = hs_cli_opt(opts, "price"),
                 *ogp = hs_cli_opt(opts, "gpu-price"), *ost = hs_cli_opt(opts, "strategies");
  bool replace = hs_cli_opt(opts, "replace") != NULL;
  if (!om || !ob || !ocand || (!oc && !replace)) {
    fprintf(stderr, "hetsim whatif: --model, --budget-usd-per-hour, --candidates and --cluster (or "
                    "--replace) are required (see --help)\n");
    return 2;
  }
  const char *fmt = ofmt ? ofmt->value : "table";
  if (strcmp(fmt, "table") && strcmp(fmt, "csv") && strcmp(fmt, "json")) {
    fprintf(stderr, "hetsim whatif: --format: must be table, csv or json, got \"%s\"\n", fmt);
    return 2;
  }
  hs_whatif_opts_t wo;
  hs_whatif_opts_init(&wo);
  wo.replace = replace;
  if (oprice && strcmp(oprice->value, "spot") == 0)
    wo.price = HS_PRICE_SPOT;
  else if (oprice && strcmp(oprice->value, "on-demand") != 0) {
    fprintf(stderr, "hetsim whatif: --price: must be on-demand or spot, got \"%s\"\n", oprice->value);
    return 2;
  }
  hs_plan_opts_t po; /* the planners' options, checked before any work */
  hs_plan_opts_init(&po);
  if ((rc = hs_cli_precision(opts, &po.precision)) ||
      (rc = hs_cli_memory_headroom(opts, &po.memory_headroom)) ||
      (rc = hs_cli_practice(opts, &po.practice)))
    return rc;
  int64_t v;
  double budget, nic, link_bw, link_lat, tl;
  if ((rc = hs_cli_double(opts, "budget-usd-per-hour", 0, &budget)))
    return rc;
  if (!(budget >= 0)) {
    fprintf(stderr, "hetsim whatif: --budget-usd-per-hour: must be >= 0, got %g\n", budget);
    return 2;
  }
  wo.budget_usd_per_hour = budget;
  if ((rc = hs_cli_int(opts, "step", 8, 1, 1 << 20, &v)))
    return rc;
  wo.step = (int32_t)v;
  if ((rc = hs_cli_int(opts, "max-options", 500, 1, 1 << 20, &v)))
    return rc;
  wo.max_options = (int32_t)v;
  int64_t gpn, workers, top, gb, gb_per_gpu;
  if ((rc = hs_cli_int(opts, "gpus-per-node", 8, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &gpn)) ||
      (rc = hs_cli_int(opts, "j", 1, 1, 256, &workers)) ||
      (rc = hs_cli_int(opts, "top", 0, 0, INT64_C(1) << 30, &top)) ||
      (rc = hs_cli_int(opts, "global-batch", 0, 1, INT64_C(1) << 40, &gb)) ||
      (rc = hs_cli_int(opts, "global-batch-per-gpu", 0, 1, 1 << 20, &gb_per_gpu)) ||
      (rc = hs_cli_double(opts, "nic-GBps", 25.0, &nic)) ||
      (rc = hs_cli_double(opts, "link-GBps", 25.0, &link_bw)) ||
      (rc = hs_cli_double(opts, "link-latency-us", 10.0, &link_lat)) ||
      (rc = hs_cli_double(opts, "time-limit", 60.0, &tl)))
    return rc;
  if (gb > 0 && gb_per_gpu > 0) {
    fprintf(stderr, "hetsim whatif: give --global-batch or --global-batch-per-gpu, not both\n");
    return 2;
  }
  if (!(nic > 0) || !(link_bw > 0) || link_lat < 0 || tl < 0) {
    fprintf(stderr, "hetsim whatif: --nic-GBps and --link-GBps must be > 0, --link-latency-us and "
                    "--time-limit >= 0\n");
    return 2;
  }
  /* candidates and strategies */
  char cbuf[2048], sbuf[1024];
  const char *gpus[HS_SWEEP_MAX_TYPES];
  int32_t n_types = 0;
  hs_strlcpy(cbuf, ocand->value, sizeof cbuf);
  for (char *save = NULL, *t = strtok_r(cbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n_types >= HS_SWEEP_MAX_TYPES) {
      fprintf(stderr, "hetsim whatif: --candidates: at most %d GPU types\n", HS_SWEEP_MAX_TYPES);
      return 2;
    }
    gpus[n_types++] = t;
  }
  const char *strategies[MAX_STRATEGIES];
  int n_strategies = 0;
  hs_strlcpy(sbuf, ost ? ost->value : "megatron,whale,hapt,data-parallel", sizeof sbuf);
  for (char *save = NULL, *t = strtok_r(sbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!hs_planner_find(t)) {
      fprintf(stderr, "hetsim whatif: unknown strategy \"%s\" (hetsim list strategies)\n", t);
      return 2;
    }
    if (n_strategies < MAX_STRATEGIES)
      strategies[n_strategies++] = t;
  }
  if (n_types == 0 || n_strategies == 0) {
    fprintf(stderr, "hetsim whatif: give at least one candidate and one strategy\n");
    return 2;
  }

  hs_price_override_t *overrides = NULL;
  size_t n_over = 0;
  hs_model_t m;
  hs_cluster_t base;
  hs_gpu_catalog_t cat;
  hs_whatif_option_t *options = NULL;
  size_t n_options = 0;
  option_row_t *rows = NULL;
  hs_error_t err;
  hs_status_t st = HS_OK;
  hs_model_init(&m);
  hs_cluster_init(&base);
  hs_gpu_catalog_init(&cat);
  hs_error_init(&err);
  if (ogp && (rc = parse_prices(ogp->value, &overrides, &n_over)))
    goto out;
  if ((st = hs_model_load(om->value, 0, &m, &err)) != HS_OK ||
      (oc && (st = hs_cluster_load(oc->value, &base, &err)) != HS_OK) ||
      (st = hs_gpu_catalog_load(NULL, &cat, &err)) != HS_OK) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  if (oc)
    hs_cluster_set_prices(&base, overrides, n_over, "--gpu-price");
  /* candidate prices (catalog, then overrides) */
  double price[HS_SWEEP_MAX_TYPES];
  char source[HS_SWEEP_MAX_TYPES][200];
  for (int32_t k = 0; k < n_types; k++) {
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, gpus[k]);
    if (!g) {
      fprintf(stderr, "hetsim whatif: --candidates: unknown GPU \"%s\" (hetsim list gpus)\n", gpus[k]);
      rc = 2;
      goto out;
    }
    double od = g->price_ondemand_usd_h, sp = g->price_spot_usd_h;
    snprintf(source[k], sizeof source[k], "%.190s", g->price_source);
    for (size_t i = 0; i < n_over; i++)
      if (strcmp(overrides[i].gpu, gpus[k]) == 0) {
        if (overrides[i].ondemand_usd_h >= 0)
          od = overrides[i].ondemand_usd_h;
        if (overrides[i].spot_usd_h >= 0)
          sp = overrides[i].spot_usd_h;
        snprintf(source[k], sizeof source[k], "--gpu-price");
      }
    price[k] = wo.price == HS_PRICE_SPOT && sp > 0 ? sp : od;
    if (!(price[k] > 0)) {
      fprintf(stderr, "hetsim whatif: --candidates: %s has no %s price in the catalog (%s); give one "
                      "with --gpu-price %s=USD_PER_HOUR\n", gpus[k], hs_price_model_name(wo.price),
              g->price_source, gpus[k]);
      rc = 2;
      goto out;
    }
  }
  if ((st = hs_whatif_enumerate(price, n_types, &wo, &options, &n_options, &err)) != HS_OK) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  if (n_options == 0) {
    fprintf(stderr, "hetsim whatif: no purchase of %d GPUs fits a budget of %g USD/h\n", wo.step, budget);
    rc = 2;
    goto out;
  }
  rows = hs_calloc(n_options, sizeof *rows);
  if (!rows) {
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < n_options; i++) {
    rows[i].opt = &options[i];
    size_t len = 0;
    for (int32_t k = 0; k < n_types; k++)
      if (options[i].count[k] > 0)
        len += (size_t)snprintf(rows[i].label + len, sizeof rows[i].label - len, "%s%s%lld %s",
                                len ? " " : "", replace ? "" : "+", (long long)options[i].count[k], gpus[k]);
    if (!len)
      hs_strlcpy(rows[i].label, "(base only)", sizeof rows[i].label);
  }
  /* one global batch for every option unless asked otherwise: 8 samples
   * per GPU of the largest option, so that it too has work for every GPU */
  int64_t max_gpus = 1;
  for (size_t i = 0; i < n_options; i++) {
    int64_t n = oc && !replace ? (int64_t)base.n_devices : 0;
    for (int32_t k = 0; k < n_types; k++)
      n += options[i].count[k];
    max_gpus = n > max_gpus ? n : max_gpus;
  }
  if (gb == 0 && gb_per_gpu == 0)
    gb = 8 * max_gpus;
  char batch_note[160];
  if (gb_per_gpu > 0)
    snprintf(batch_note, sizeof batch_note, "global batch %lld samples per GPU (grows with the option)",
             (long long)gb_per_gpu);
  else
    snprintf(batch_note, sizeof batch_note, "global batch %lld samples x %lld tokens = %lld tokens per "
             "iteration for every option", (long long)gb, (long long)m.seq_len,
             (long long)(gb * m.seq_len));
  po.global_batch = gb;
  po.time_limit_s = tl;
  bool quiet = hs_cli_opt(opts, "quiet") != NULL;
  hs_progress_t prog;
  hs_progress_init(&prog, quiet ? NULL : stderr, "whatif", "options", n_options);
  job_t j = {&m, oc && !replace ? &base : NULL, gpus, n_types, (int32_t)gpn, nic, link_bw, link_lat,
             overrides, n_over, wo.price, strategies, n_strategies, &po, gb_per_gpu, rows, &prog,
             false};
  if (!quiet)
    fprintf(stderr, "whatif: %zu options x %d strategies, %s\n", n_options, n_strategies, batch_note);
  if ((st = hs_map_processes(n_options, (int)workers, map_option, sink_option, lost_option, &j, &err)) != HS_OK) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  hs_progress_finish(&prog, false);
  size_t n_ok = 0;
  for (size_t i = 0; i < n_options; i++)
    n_ok += rows[i].ok;
  qsort(rows, n_options, sizeof *rows, cmp_rows);
  {
    double *tk = hs_calloc(n_options, sizeof *tk), *cost = hs_calloc(n_options, sizeof *cost);
    bool *ok = hs_calloc(n_options, sizeof *ok), *front = hs_calloc(n_options, sizeof *front);
    if (!tk || !cost || !ok || !front) {
      free(tk), free(cost), free(ok), free(front);
      rc = 1;
      goto out;
    }
    for (size_t i = 0; i < n_options; i++) {
      tk[i] = rows[i].best.tokens_per_s;
      cost[i] = rows[i].usd_mtok;
      ok[i] = rows[i].ok && isfinite(rows[i].usd_mtok);
    }
    hs_pareto_front(tk, cost, ok, n_options, front);
    for (size_t i = 0; i < n_options; i++)
      rows[i].front = front[i];
    free(tk), free(cost), free(ok), free(front);
  }
  size_t shown = top > 0 && (size_t)top < n_options ? (size_t)top : n_options;
  const char *pname = hs_price_model_name(wo.price);
  if (!strcmp(fmt, "json")) {
    cJSON *root = cJSON_CreateObject(), *arr = NULL, *pr = NULL;
    if (root) {
      cJSON_AddNumberToObject(root, "schema_version", HS_SCHEMA_VERSION);
      cJSON_AddStringToObject(root, "model", m.name);
      cJSON_AddStringToObject(root, "base", oc && !replace ? base.name : "");
      cJSON_AddNumberToObject(root, "budget_usd_per_hour", budget);
      cJSON_AddStringToObject(root, "price_model", pname);
      if (gb_per_gpu > 0)
        cJSON_AddNumberToObject(root, "global_batch_per_gpu", (double)gb_per_gpu);
      else
        cJSON_AddNumberToObject(root, "global_batch", (double)gb);
      cJSON_AddBoolToObject(root, "feasible", n_ok > 0);
      pr = cJSON_AddArrayToObject(root, "prices");
      arr = cJSON_AddArrayToObject(root, "options");
    }
    for (int32_t k = 0; pr && k < n_types; k++) {
      cJSON *p = cJSON_CreateObject();
      cJSON_AddItemToArray(pr, p);
      cJSON_AddStringToObject(p, "gpu", gpus[k]);
      cJSON_AddNumberToObject(p, "usd_per_gpu_hour", price[k]);
      cJSON_AddStringToObject(p, "source", source[k]);
    }
    for (size_t i = 0; arr && i < shown; i++) {
      const option_row_t *r = &rows[i];
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(arr, o);
      cJSON_AddNumberToObject(o, "rank", (double)(i + 1));
      cJSON_AddStringToObject(o, "option", r->label);
      cJSON_AddNumberToObject(o, "n_gpus", r->best.n_gpus);
      cJSON_AddNumberToObject(o, "added_usd_per_hour", r->opt->added_usd_per_hour);
      cJSON_AddNumberToObject(o, "usd_per_hour", r->usd_h);
      cJSON_AddNumberToObject(o, "global_batch", (double)r->best.global_batch);
      cJSON_AddNumberToObject(o, "tokens_per_iteration", (double)r->best.tokens_per_iteration);
      cJSON_AddBoolToObject(o, "ok", r->ok);
      if (r->ok) {
        cJSON_AddStringToObject(o, "strategy", r->strategy);
        cJSON_AddNumberToObject(o, "tokens_per_s", r->best.tokens_per_s);
        cJSON_AddNumberToObject(o, "iteration_s", r->best.iteration_s);
        cJSON_AddNumberToObject(o, "mfu", r->best.mfu);
        if (isfinite(r->usd_mtok))
          cJSON_AddNumberToObject(o, "usd_per_million_tokens", r->usd_mtok);
        cJSON_AddBoolToObject(o, "pareto", r->front);
        cJSON_AddStringToObject(o, "plan", r->best.plan);
      } else {
        cJSON_AddStringToObject(o, "reason", r->why);
      }
    }
    if (!root || (st = hs_json_write_file(root, "-", &err)) != HS_OK)
      rc = root ? hs_cli_fail(&err, st) : 1;
    cJSON_Delete(root);
    if (rc == 0 && n_ok == 0)
      rc = HS_EXIT_INFEASIBLE;
    goto out;
  }
  bool csv = !strcmp(fmt, "csv");
  int lw = 12; /* option column width */
  if (csv) {
    printf("rank,option,n_gpus,added_usd_per_hour,usd_per_hour,global_batch,tokens_per_iteration,"
           "strategy,tokens_per_s,iteration_s,mfu,usd_per_million_tokens,pareto,plan,reason\n");
  } else {
    printf("%s on %s + purchases within %.2f USD/h (%s prices), %s:\n", m.name,
           oc && !replace ? base.name : "(nothing)", budget, pname, batch_note);
    for (int32_t k = 0; k < n_types; k++)
      printf("  %-16s %7.4f USD/GPU-h  (%s)\n", gpus[k], price[k], source[k]);
    for (size_t i = 0; i < shown; i++)
      if ((int)strlen(rows[i].label) > lw)
        lw = (int)strlen(rows[i].label);
    printf("%4s  %-*s %5s %9s %9s  %-13s %10s %8s %6s %8s %3s  %s\n", "rank", lw, "option", "GPUs",
           "+USD/h", "USD/h", "strategy", "tokens/s", "iter s", "MFU", "$/Mtok", "PF", "plan");
  }
  for (size_t i = 0; i < shown; i++) {
    const option_row_t *r = &rows[i];
    if (csv) {
      printf("%zu,", i + 1);
      hs_csv_field(stdout, r->label);
      printf(",%d,%.6g,%.6g,%lld,%lld,", r->best.n_gpus, r->opt->added_usd_per_hour, r->usd_h,
             (long long)r->best.global_batch, (long long)r->best.tokens_per_iteration);
      if (r->ok) {
        printf("%s,%.6g,%.6g,%.4f,", r->strategy, r->best.tokens_per_s, r->best.iteration_s, r->best.mfu);
        if (isfinite(r->usd_mtok))
          printf("%.6g", r->usd_mtok);
        printf(",%s,", r->front ? "yes" : "no");
        hs_csv_field(stdout, r->best.plan);
        printf(",\n");
      } else {
        printf(",,,,,no,,");
        hs_csv_field(stdout, r->why);
        putchar('\n');
      }
      continue;
    }
    if (!r->ok) {
      printf("%4zu  %-*s %5d %9.2f %9.2f  n/a: %s\n", i + 1, lw, r->label, r->best.n_gpus,
             r->opt->added_usd_per_hour, r->usd_h, r->why);
      continue;
    }
    char mt[32] = "-";
    if (isfinite(r->usd_mtok))
      snprintf(mt, sizeof mt, "%.4f", r->usd_mtok);
    printf("%4zu  %-*s %5d %9.2f %9.2f  %-13s %10.0f %8.4f %5.1f%% %8s %3s  %s\n", i + 1, lw, r->label,
           r->best.n_gpus, r->opt->added_usd_per_hour, r->usd_h, r->strategy, r->best.tokens_per_s,
           r->best.iteration_s, r->best.mfu * 100.0, mt, r->front ? "*" : "", r->best.plan);
  }
  if (!csv) {
    if (shown < n_options)
      printf("(%zu more options; --top 0 shows all)\n", n_options - shown);
    printf("PF * = on the Pareto front of tokens/s against $/M tokens (no option is both faster and "
           "cheaper per token).\n");
    int32_t unpriced = 0;
    if (oc && !replace)
      for (size_t d = 0; d < base.n_devices; d++)
        unpriced += !(hs_cluster_gpu(&base, (int32_t)d)->price_ondemand_usd_h > 0);
    if (unpriced)
      printf("note: %d GPUs of the base cluster have no catalog price and count 0 USD/h in USD/h and "
             "$/Mtok (give --gpu-price).\n", unpriced);
  }
  if (rc == 0 && n_ok == 0) {
    fprintf(stderr, "hetsim whatif: no option has a feasible plan (exit 3)\n");
    rc = HS_EXIT_INFEASIBLE;
  }
out:
  free(rows);
  free(options);
  free(overrides);
  hs_gpu_catalog_destroy(&cat);
  hs_cluster_destroy(&base);
  hs_model_destroy(&m);
  return rc;
}
