/*
 * whatif_run.c - the purchase study behind `hetsim whatif` and the Python
 * package's whatif(): which purchase (or rental) within a budget trains a
 * model fastest, or cheapest? Prices the candidates, enumerates the
 * affordable GPU vectors (hs_whatif_enumerate), adds each to the base
 * cluster (or makes it the whole cluster when replacing), plans it with
 * every strategy given, keeps the fastest feasible plan, ranks the options
 * by tokens/s and marks the Pareto front of tokens/s against $/M tokens.
 * Entry point: hs_whatif_run.
 *
 * Like with like: every option trains the same global batch (the planner
 * options' global_batch, default 8 samples per GPU of the largest option),
 * unless the caller asks for a batch that grows with the cluster
 * (global_batch_per_gpu).
 *
 * Invariants: the rows are a function of the inputs only (options run on
 * forked workers come back by index and are ranked by a total order); an
 * option no strategy plans is a row with its reason, never an error;
 * messages name the CLI flag, so the CLI and the Python package say the
 * same thing.
 */
#include "hs_export.h"
#include "hs_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const default_strategies[] = {"megatron", "whale", "hapt", "data-parallel"};

void hs_whatif_run_opts_init(hs_whatif_run_opts_t *o)
{
  memset(o, 0, sizeof *o);
  hs_whatif_opts_init(&o->enumerate);
  hs_plan_opts_init(&o->plan);
  o->plan.time_limit_s = 60.0;
  o->n_strategies = (int32_t)(sizeof default_strategies / sizeof *default_strategies);
  for (int32_t s = 0; s < o->n_strategies; s++)
    hs_strlcpy(o->strategies[s], default_strategies[s], sizeof o->strategies[s]);
  o->gpus_per_node = 8;
  o->nic_GBps = 25.0;
  o->link_GBps = 25.0;
  o->link_latency_us = 10.0;
  o->workers = 1;
}

void hs_whatif_result_init(hs_whatif_result_t *r) { memset(r, 0, sizeof *r); }

void hs_whatif_result_destroy(hs_whatif_result_t *r)
{
  if (!r)
    return;
  free(r->rows);
  memset(r, 0, sizeof *r);
}

hs_status_t hs_price_overrides_parse(const char *s, hs_price_override_t **out, size_t *n,
                                     hs_error_t *err)
{
  char buf[2048];
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  if (!hs_strlcpy(buf, s, sizeof buf))
    return hs_error_set(err, HS_ELIMIT, "--gpu-price: longer than %zu characters", sizeof buf - 1);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    hs_status_t st = HS_OK;
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok) {
      st = hs_error_set(err, HS_EINVAL, "--gpu-price: expected GPU=USD_PER_HOUR[:SPOT], got \"%s\"", tok);
    } else {
      *eq = '\0';
      char *end = NULL;
      double od = strtod(eq + 1, &end), sp = -1.0;
      if (end && *end == ':') {
        char *e2 = NULL;
        sp = strtod(end + 1, &e2);
        end = e2;
      }
      if (end == eq + 1 || !end || *end || !(od >= 0) || !isfinite(od) || (sp < 0 && sp != -1.0) ||
          !isfinite(sp))
        st = hs_error_set(err, HS_EINVAL, "--gpu-price: %s: expected a price >= 0 in USD per GPU-hour", tok);
      else if (hs_reserve((void **)out, &cap, *n + 1, sizeof **out) != HS_OK)
        st = hs_error_set(err, HS_ENOMEM, "out of memory");
      else {
        hs_price_override_t *o = &(*out)[(*n)++];
        memset(o, 0, sizeof *o);
        hs_strlcpy(o->gpu, tok, sizeof o->gpu);
        o->ondemand_usd_h = od;
        o->spot_usd_h = sp;
      }
    }
    if (st != HS_OK) {
      free(*out);
      *out = NULL;
      *n = 0;
      return st;
    }
  }
  return HS_OK;
}

/* ---- one option --------------------------------------------------------------- */

typedef struct job {
  const hs_model_t *m;
  const hs_cluster_t *base;   /* NULL when replacing */
  const hs_whatif_run_opts_t *o;
  const char *gpus[HS_SWEEP_MAX_TYPES];
  hs_whatif_row_t *rows;
  size_t *order;              /* item i is option order[i]: smaller purchases first */
  hs_progress_t *prog;
  bool oom;
} job_t;

/* Fills r (a copy of rows[i] in a worker process). */
static void eval_option(job_t *j, hs_whatif_row_t *r)
{
  const hs_whatif_run_opts_t *o = j->o;
  char *text = NULL;
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_whatif_cluster_json(j->base, j->gpus, r->count, o->n_candidates,
                                          o->gpus_per_node, o->nic_GBps, o->link_GBps,
                                          o->link_latency_us, &text, &err);
  if (st == HS_OK)
    st = hs_cluster_parse(text, "whatif option", &c, &err);
  if (st != HS_OK) {
    if (st == HS_ENOMEM)
      j->oom = true;
    snprintf(r->reason, sizeof r->reason, "%.390s", err.msg);
    goto out;
  }
  hs_cluster_set_prices(&c, o->prices, o->n_prices, "--gpu-price");
  hs_plan_opts_t po = o->plan;
  if (o->global_batch_per_gpu > 0)
    po.global_batch = o->global_batch_per_gpu * (int64_t)c.n_devices;
  r->best.global_batch = po.global_batch;
  r->best.tokens_per_iteration = po.global_batch * j->m->seq_len;
  for (int32_t s = 0; s < o->n_strategies; s++) {
    hs_eval_t e;
    if (hs_eval_run(j->m, &c, o->strategies[s], &po, &e) != HS_OK) {
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
      hs_strlcpy(r->strategy, o->strategies[s], sizeof r->strategy);
    } else if (!r->ok && !r->reason[0] && e.error[0]) {
      snprintf(r->reason, sizeof r->reason, "%s: %.360s", o->strategies[s], e.error);
    }
  }
  /* a GPU without a price makes the rent unknown, not a partial sum */
  r->unpriced_gpus = r->best.unpriced_gpus[o->enumerate.price];
  r->usd_per_hour = r->unpriced_gpus > 0 ? NAN : r->best.usd_per_hour[o->enumerate.price];
  if (r->ok && r->unpriced_gpus == 0 && r->best.tokens_per_iteration > 0 && r->usd_per_hour > 0)
    r->usd_per_million_tokens = r->usd_per_hour * r->best.iteration_s / 3600.0 /
                                (double)r->best.tokens_per_iteration * 1e6;
  else if (r->ok)
    r->usd_per_million_tokens = INFINITY;
  if (!r->ok && !r->reason[0])
    snprintf(r->reason, sizeof r->reason, "no strategy found a plan that fits in memory");
out:
  free(text);
  hs_cluster_destroy(&c);
}

static hs_status_t map_option(void *ctx, size_t i, void **out, size_t *len, hs_error_t *err)
{
  job_t *j = ctx;
  hs_whatif_row_t *r = malloc(sizeof *r);
  if (!r)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  *r = j->rows[j->order[i]];
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
  hs_whatif_row_t *r = &j->rows[j->order[i]];
  snprintf(r->reason, sizeof r->reason, "%s", why);
  r->ok = false;
  hs_progress_add(j->prog, 1);
  return 0;
}

static int sink_option(void *ctx, size_t i, const void *data, size_t len)
{
  job_t *j = ctx;
  if (len == sizeof(hs_whatif_row_t))
    memcpy(&j->rows[j->order[i]], data, len);
  hs_progress_add(j->prog, 1);
  return 0;
}

static int cmp_rows(const void *a, const void *b)
{
  const hs_whatif_row_t *x = a, *y = b;
  if (x->ok != y->ok)
    return x->ok ? -1 : 1;
  if (x->ok && x->best.tokens_per_s != y->best.tokens_per_s)
    return x->best.tokens_per_s > y->best.tokens_per_s ? -1 : 1;
  if ((x->unpriced_gpus > 0) != (y->unpriced_gpus > 0)) /* unknown rent after a known one */
    return x->unpriced_gpus > 0 ? 1 : -1;
  if (x->unpriced_gpus == 0 && x->usd_per_hour != y->usd_per_hour)
    return x->usd_per_hour < y->usd_per_hour ? -1 : 1;
  return strcmp(x->option, y->option);
}

/* ---- inputs ------------------------------------------------------------------- */

static hs_status_t check_opts(const hs_cluster_t *base, const hs_whatif_run_opts_t *o, hs_error_t *err)
{
  const hs_whatif_opts_t *w = &o->enumerate;
  if (!base && !w->replace)
    return hs_error_set(err, HS_EINVAL, "--cluster: give a base cluster, or --replace");
  if (base && w->replace)
    return hs_error_set(err, HS_EINVAL, "--replace: the options replace the base cluster; give no "
                                        "--cluster with it");
  if (!(w->budget_usd_per_hour >= 0) || !isfinite(w->budget_usd_per_hour))
    return hs_error_set(err, HS_EINVAL, "--budget-usd-per-hour: must be >= 0, got %g",
                        w->budget_usd_per_hour);
  if (o->plan.global_batch > 0 && o->global_batch_per_gpu > 0)
    return hs_error_set(err, HS_EINVAL, "give --global-batch or --global-batch-per-gpu, not both");
  if (o->plan.global_batch < 0 || o->global_batch_per_gpu < 0)
    return hs_error_set(err, HS_EINVAL, "--global-batch: must be >= 1");
  if (!(o->nic_GBps > 0) || !(o->link_GBps > 0) || !(o->link_latency_us >= 0) ||
      !(o->plan.time_limit_s >= 0) || !isfinite(o->nic_GBps) || !isfinite(o->link_GBps) ||
      !isfinite(o->link_latency_us))
    return hs_error_set(err, HS_EINVAL, "--nic-GBps and --link-GBps must be > 0, --link-latency-us "
                                        "and --time-limit >= 0");
  if (o->gpus_per_node < 1 || o->gpus_per_node > HS_CLUSTER_MAX_GPUS_PER_NODE)
    return hs_error_set(err, HS_EINVAL, "--gpus-per-node: must be in [1, %d], got %d",
                        HS_CLUSTER_MAX_GPUS_PER_NODE, o->gpus_per_node);
  if (o->workers < 1)
    return hs_error_set(err, HS_EINVAL, "-j: must be >= 1, got %d", o->workers);
  if (o->n_candidates < 1 || o->n_candidates > HS_SWEEP_MAX_TYPES || o->n_strategies < 1 ||
      o->n_strategies > HS_WHATIF_MAX_STRATEGIES)
    return hs_error_set(err, HS_EINVAL, "give 1 to %d candidates and 1 to %d strategies, got %d and %d",
                        HS_SWEEP_MAX_TYPES, HS_WHATIF_MAX_STRATEGIES, o->n_candidates, o->n_strategies);
  for (int32_t s = 0; s < o->n_strategies; s++)
    if (!hs_planner_find(o->strategies[s]))
      return hs_error_set(err, HS_EINVAL, "unknown strategy \"%s\" (hetsim list strategies)",
                          o->strategies[s]);
  return HS_OK;
}

/* Candidate prices: the catalog's, then the overrides'. */
static hs_status_t price_candidates(const hs_whatif_run_opts_t *o, hs_whatif_result_t *r,
                                    hs_error_t *err)
{
  hs_gpu_catalog_t cat;
  hs_gpu_catalog_init(&cat);
  hs_status_t st = hs_gpu_catalog_load(NULL, &cat, err);
  for (int32_t k = 0; st == HS_OK && k < o->n_candidates; k++) {
    const char *name = o->candidates[k];
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, name);
    if (!g) {
      const char *names[512];
      size_t n = 0;
      for (size_t i = 0; i < cat.n && n < HS_ARRAY_LEN(names); i++)
        names[n++] = cat.gpus[i].name;
      char hint[256];
      hs_suggest_names(name, names, n, hint, sizeof hint);
      st = hs_error_set(err, HS_EINVAL, "--candidates: unknown GPU \"%s\"%s (hetsim list gpus)", name, hint);
      break;
    }
    double od = g->price_ondemand_usd_h, sp = g->price_spot_usd_h;
    snprintf(r->price_source[k], sizeof r->price_source[k], "%.190s", g->price_source);
    for (size_t i = 0; i < o->n_prices; i++)
      if (strcmp(o->prices[i].gpu, name) == 0) {
        if (o->prices[i].ondemand_usd_h >= 0)
          od = o->prices[i].ondemand_usd_h;
        if (o->prices[i].spot_usd_h >= 0)
          sp = o->prices[i].spot_usd_h;
        snprintf(r->price_source[k], sizeof r->price_source[k], "--gpu-price");
      }
    double p = o->enumerate.price == HS_PRICE_SPOT && sp > 0 ? sp : od;
    if (!(p > 0)) {
      st = hs_error_set(err, HS_EINVAL, "--candidates: %s has no %s price in the catalog (%s); give "
                        "one with --gpu-price %s=USD_PER_HOUR", name,
                        hs_price_model_name(o->enumerate.price), g->price_source, name);
      break;
    }
    hs_strlcpy(r->candidates[k], name, sizeof r->candidates[k]);
    r->candidate_usd_per_gpu_hour[k] = p;
    r->candidate_calibrated[k] = g->calibrated;
  }
  hs_gpu_catalog_destroy(&cat);
  return st;
}

/* Base GPUs without an on-demand price once the overrides apply. */
static int32_t base_unpriced(const hs_cluster_t *base, const hs_whatif_run_opts_t *o)
{
  int32_t n = 0;
  for (size_t d = 0; base && d < base->n_devices; d++) {
    const hs_gpu_t *g = hs_cluster_gpu(base, (int32_t)d);
    double p = g->price_ondemand_usd_h;
    for (size_t i = 0; i < o->n_prices; i++)
      if (strcmp(o->prices[i].gpu, g->name) == 0 && o->prices[i].ondemand_usd_h >= 0)
        p = o->prices[i].ondemand_usd_h;
    n += !(p > 0);
  }
  return n;
}

/* Labels, counts and prices of the rows; the fixed global batch. */
static void label_rows(const hs_cluster_t *base, const hs_whatif_run_opts_t *o,
                       const hs_whatif_option_t *options, hs_whatif_result_t *r)
{
  int64_t max_gpus = 1;
  for (size_t i = 0; i < r->n_rows; i++) {
    hs_whatif_row_t *row = &r->rows[i];
    size_t len = 0;
    int64_t n = base ? (int64_t)base->n_devices : 0;
    memcpy(row->count, options[i].count, sizeof row->count);
    row->added_usd_per_hour = options[i].added_usd_per_hour;
    for (int32_t k = 0; k < o->n_candidates; k++) {
      n += row->count[k];
      if (row->count[k] > 0 && len < sizeof row->option)
        len += (size_t)snprintf(row->option + len, sizeof row->option - len, "%s%s%lld %s",
                                len ? " " : "", o->enumerate.replace ? "" : "+",
                                (long long)row->count[k], o->candidates[k]);
    }
    if (!len)
      hs_strlcpy(row->option, "(base only)", sizeof row->option);
    max_gpus = n > max_gpus ? n : max_gpus;
  }
  /* one global batch for every option unless asked otherwise: 8 samples
   * per GPU of the largest option, so that it too has work for every GPU */
  r->global_batch_per_gpu = o->global_batch_per_gpu;
  r->global_batch = o->plan.global_batch;
  if (r->global_batch == 0 && r->global_batch_per_gpu == 0)
    r->global_batch = 8 * max_gpus;
}

static hs_status_t mark_front(hs_whatif_result_t *r, hs_error_t *err)
{
  size_t n = r->n_rows;
  double *tk = hs_calloc(n, sizeof *tk), *cost = hs_calloc(n, sizeof *cost);
  bool *ok = hs_calloc(n, sizeof *ok), *front = hs_calloc(n, sizeof *front);
  hs_status_t st = HS_OK;
  if (!tk || !cost || !ok || !front) {
    st = hs_error_set(err, HS_ENOMEM, "out of memory");
  } else {
    for (size_t i = 0; i < n; i++) {
      tk[i] = r->rows[i].best.tokens_per_s;
      cost[i] = r->rows[i].usd_per_million_tokens;
      ok[i] = r->rows[i].ok && isfinite(r->rows[i].usd_per_million_tokens);
    }
    hs_pareto_front(tk, cost, ok, n, front);
    for (size_t i = 0; i < n; i++)
      r->rows[i].pareto = front[i];
  }
  free(tk), free(cost), free(ok), free(front);
  return st;
}

/* The order the options are evaluated in: fewest GPUs bought first (ties
 * by row), so that the device subsets a larger purchase shares with a
 * smaller one are in the search memo when it comes (hs_search.h; the
 * workers share it: fork_map.c). The rows do not depend on it. */
typedef struct order_key {
  int64_t bought;
  size_t row;
} order_key_t;

static int cmp_order(const void *a, const void *b)
{
  const order_key_t *x = a, *y = b;
  if (x->bought != y->bought)
    return x->bought < y->bought ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

static size_t *eval_order(const hs_whatif_result_t *r)
{
  size_t *order = hs_calloc(r->n_rows, sizeof *order);
  order_key_t *keys = hs_calloc(r->n_rows, sizeof *keys);
  if (!order || !keys) {
    free(order), free(keys);
    return NULL;
  }
  for (size_t i = 0; i < r->n_rows; i++) {
    keys[i].row = i;
    for (int32_t k = 0; k < HS_SWEEP_MAX_TYPES; k++)
      keys[i].bought += r->rows[i].count[k];
  }
  qsort(keys, r->n_rows, sizeof *keys, cmp_order);
  for (size_t i = 0; i < r->n_rows; i++)
    order[i] = keys[i].row;
  free(keys);
  return order;
}

hs_status_t hs_whatif_run(const hs_model_t *m, const hs_cluster_t *base,
                          const hs_whatif_run_opts_t *o, hs_whatif_result_t *out,
                          hs_error_t *err)
{
  hs_whatif_option_t *options = NULL;
  hs_status_t st = HS_OK;
  hs_whatif_result_init(out);
  HS_CHECK(check_opts(base, o, err));
  hs_strlcpy(out->model, m->name, sizeof out->model);
  hs_strlcpy(out->base, base ? base->name : "", sizeof out->base);
  out->seq_len = m->seq_len;
  out->budget_usd_per_hour = o->enumerate.budget_usd_per_hour;
  out->price = o->enumerate.price;
  out->n_candidates = o->n_candidates;
  out->n_strategies = o->n_strategies;
  out->base_unpriced_gpus = base_unpriced(base, o);
  HS_CHECK(price_candidates(o, out, err));
  HS_CHECK(hs_whatif_enumerate(out->candidate_usd_per_gpu_hour, o->n_candidates, &o->enumerate,
                               &options, &out->n_rows, err));
  if (out->n_rows == 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "no purchase of %d GPUs fits a budget of %g USD/h",
                         o->enumerate.step, o->enumerate.budget_usd_per_hour));
  if (!(out->rows = hs_calloc(out->n_rows, sizeof *out->rows)))
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  label_rows(base, o, options, out);

  hs_whatif_run_opts_t ro = *o;
  ro.plan.global_batch = out->global_batch;
  hs_progress_t prog;
  hs_progress_init(&prog, o->progress, "whatif", "options", out->n_rows);
  job_t j = {m, base, &ro, {0}, out->rows, eval_order(out), &prog, false};
  if (!j.order)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t k = 0; k < o->n_candidates; k++)
    j.gpus[k] = o->candidates[k];
  if (o->progress) {
    char note[160];
    hs_whatif_batch_note(out, note, sizeof note);
    fprintf(o->progress, "whatif: %zu options x %d strategies, %s\n", out->n_rows, o->n_strategies, note);
  }
  /* options share device subsets (the base cluster's and those with the
   * same purchases of one type): each worker answers a search it ran
   * before from the search memo (hs_search.h) */
  hs_search_memo_begin();
  st = hs_map_processes(out->n_rows, o->workers, map_option, sink_option, lost_option, &j, err);
  hs_search_memo_end();
  free(j.order);
  HS_CHECK(st);
  hs_progress_finish(&prog, false);
  for (size_t i = 0; i < out->n_rows; i++)
    out->n_ok += out->rows[i].ok;
  qsort(out->rows, out->n_rows, sizeof *out->rows, cmp_rows);
  HS_CHECK(mark_front(out, err));
cleanup:
  free(options);
  if (st != HS_OK)
    hs_whatif_result_destroy(out);
  return st;
}
