/*
 * sweep.c - the grid of a sweep, the evaluation of one job (build cluster,
 * load model, plan, simulate, price) and its CSV rows, and running jobs on
 * worker processes.
 *
 * Determinism: a row is a pure function of (spec, point) except search_s
 * (wall time), which HS_SWEEP_NO_TIMINGS leaves empty. Numbers print with
 * %.6g, so equal doubles give equal bytes. Jobs run on worker processes
 * (fork_map.c) and report to the caller's process one at a time; completion
 * order is the only thing the number of workers changes, and callers sort by
 * point.
 */
#include "hs_export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs_sweep_point_of(const hs_sweep_spec_t *s, uint64_t job, hs_sweep_point_t *p)
{
  p->strategy = (size_t)(job % s->n_strategies);
  job /= s->n_strategies;
  p->global_batch = (size_t)(job % s->n_global_batch);
  job /= s->n_global_batch;
  p->model = (size_t)(job % s->n_models);
  job /= s->n_models;
  p->xsite_latency = (size_t)(job % s->n_xsite_latency);
  job /= s->n_xsite_latency;
  p->xsite_GBps = (size_t)(job % s->n_xsite_GBps);
  job /= s->n_xsite_GBps;
  p->nic = (size_t)(job % s->n_nic);
  job /= s->n_nic;
  p->cluster = (size_t)job;
}

uint64_t hs_sweep_job_of(const hs_sweep_spec_t *s, const hs_sweep_point_t *p)
{
  uint64_t j = p->cluster;
  j = j * s->n_nic + p->nic;
  j = j * s->n_xsite_GBps + p->xsite_GBps;
  j = j * s->n_xsite_latency + p->xsite_latency;
  j = j * s->n_models + p->model;
  j = j * s->n_global_batch + p->global_batch;
  return j * s->n_strategies + p->strategy;
}

hs_status_t hs_sweep_spec_resolve(hs_sweep_spec_t *s, hs_error_t *err)
{
  int64_t max_gpus = 0;
  for (size_t i = 0; i < s->n_clusters; i++) {
    const hs_sweep_cluster_t *c = &s->clusters[i];
    int64_t n = 0;
    if (c->base[0]) {
      hs_cluster_t cl;
      hs_error_t lerr;
      hs_cluster_init(&cl);
      hs_error_init(&lerr);
      lerr.warn_fp = NULL;
      hs_status_t st = hs_cluster_load(c->base, &cl, &lerr);
      n = st == HS_OK ? (int64_t)cl.n_devices : 0;
      hs_cluster_destroy(&cl);
      if (st == HS_ENOMEM)
        return hs_error_set(err, HS_ENOMEM, "%s: out of memory loading clusters[%zu]", s->file, i);
    } else {
      for (int32_t k = 0; k < c->n_types; k++)
        n += c->count[k] > 0 ? c->count[k] : 0;
    }
    max_gpus = n > max_gpus ? n : max_gpus;
  }
  s->default_global_batch = 8 * (max_gpus > 0 ? max_gpus : 1);
  return HS_OK;
}

int64_t hs_sweep_global_batch(const hs_sweep_spec_t *s, const hs_sweep_point_t *p, size_t n_devices)
{
  if (s->global_batch[p->global_batch] > 0)
    return s->global_batch[p->global_batch];
  if (s->global_batch_per_gpu > 0)
    return s->global_batch_per_gpu * (int64_t)(n_devices > 0 ? n_devices : 1);
  return s->default_global_batch; /* 0 when unresolved: the strategy's default */
}

/* Values the link axes take for `p` (<= 0: the cluster's own). */
static void link_values(const hs_sweep_spec_t *s, const hs_sweep_point_t *p, double *nic,
                        double *xbw, double *xlat)
{
  const hs_sweep_cluster_t *c = &s->clusters[p->cluster];
  *nic = s->nic_GBps[p->nic];
  *xbw = s->xsite_GBps[p->xsite_GBps];
  *xlat = s->xsite_latency_us[p->xsite_latency];
  if (!c->base[0]) { /* compositions: the layout defaults stand in for "keep" */
    int32_t types = 0;
    for (int32_t k = 0; k < c->n_types; k++)
      types += c->count[k] > 0;
    if (*nic <= 0)
      *nic = s->comp_nic_GBps;
    if (s->one_site || types < 2) { /* one site: no inter-site link to set */
      *xbw = 0.0;
      *xlat = -1.0;
    } else {
      if (*xbw <= 0)
        *xbw = s->comp_xsite_GBps;
      if (*xlat < 0)
        *xlat = s->comp_xsite_latency_us;
    }
  }
}

hs_status_t hs_sweep_cluster_build(const hs_sweep_spec_t *s, const hs_sweep_point_t *p,
                                   hs_cluster_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  char *text = NULL;
  const hs_sweep_cluster_t *c = &s->clusters[p->cluster];
  double nic, xbw, xlat;
  link_values(s, p, &nic, &xbw, &xlat);
  if (c->base[0]) {
    HS_CHECK(hs_cluster_load(c->base, out, err));
  } else {
    char label[512];
    hs_sweep_cluster_label(c, label, sizeof label);
    HS_CHECK(hs_sweep_composition_json(c, s->one_site, s->gpus_per_node, nic, xbw, xlat, &text, err));
    HS_CHECK(hs_cluster_parse(text, label, out, err));
    hs_strlcpy(out->name, "composition", sizeof out->name);
  }
  for (size_t i = 0; i < out->n_nodes && nic > 0; i++)
    out->nodes[i].nic_GBps = nic;
  for (size_t i = 0; i < out->n_xlinks; i++) {
    if (xbw > 0)
      out->xlinks[i].GBps = xbw;
    if (xlat >= 0)
      out->xlinks[i].latency_us = xlat;
  }
  hs_cluster_set_prices(out, s->price_overrides, s->n_price_overrides, s->file);
cleanup:
  free(text);
  return st;
}

void hs_cluster_set_prices(hs_cluster_t *c, const hs_price_override_t *o, size_t n,
                           const char *source)
{
  for (size_t i = 0; i < n; i++)
    for (size_t g = 0; g < c->gpus.n; g++) {
      hs_gpu_t *gpu = &c->gpus.gpus[g];
      if (strcmp(gpu->name, o[i].gpu) != 0)
        continue;
      if (o[i].ondemand_usd_h >= 0)
        gpu->price_ondemand_usd_h = o[i].ondemand_usd_h;
      if (o[i].spot_usd_h >= 0)
        gpu->price_spot_usd_h = o[i].spot_usd_h;
      snprintf(gpu->price_source, sizeof gpu->price_source, "%.60s: prices.%.60s", source, o[i].gpu);
    }
}

void hs_cluster_rent(const hs_cluster_t *c, double usd_per_hour[HS_PRICE__COUNT],
                     int32_t unpriced[HS_PRICE__COUNT])
{
  for (int k = 0; k < HS_PRICE__COUNT; k++) {
    usd_per_hour[k] = 0.0;
    unpriced[k] = 0;
  }
  for (size_t d = 0; d < c->n_devices; d++) {
    const hs_gpu_t *g = hs_cluster_gpu(c, (int32_t)d);
    double od = g->price_ondemand_usd_h, sp = g->price_spot_usd_h > 0 ? g->price_spot_usd_h : od;
    usd_per_hour[HS_PRICE_ONDEMAND] += od;
    usd_per_hour[HS_PRICE_SPOT] += sp;
    unpriced[HS_PRICE_ONDEMAND] += od <= 0;
    unpriced[HS_PRICE_SPOT] += sp <= 0;
  }
}

static void gpu_types(const hs_cluster_t *c, char *buf, size_t n)
{
  size_t len = 0;
  buf[0] = '\0';
  int32_t *count = hs_calloc(c->gpus.n + 1, sizeof *count);
  int32_t *order = hs_calloc(c->gpus.n + 1, sizeof *order);
  int32_t n_order = 0;
  if (!count || !order)
    goto out;
  for (size_t d = 0; d < c->n_devices; d++) {
    int32_t g = c->devices[d].gpu;
    if (count[g]++ == 0)
      order[n_order++] = g;
  }
  for (int32_t i = 0; i < n_order; i++) {
    int w = snprintf(buf + len, n - len, "%s%s:%d", i ? " " : "", c->gpus.gpus[order[i]].name,
                     count[order[i]]);
    if (w < 0 || (size_t)w >= n - len)
      break;
    len += (size_t)w;
  }
out:
  free(count);
  free(order);
}

hs_status_t hs_eval_run(const hs_model_t *m, const hs_cluster_t *c, const char *strategy,
                        const hs_plan_opts_t *po, hs_eval_t *out)
{
  memset(out, 0, sizeof *out);
  out->n_gpus = (int32_t)c->n_devices;
  gpu_types(c, out->gpu_types, sizeof out->gpu_types);
  hs_cluster_rent(c, out->usd_per_hour, out->unpriced_gpus);
  const hs_planner_type_t *t = hs_planner_find(strategy);
  if (!t) {
    snprintf(out->error, sizeof out->error, "unknown strategy \"%s\"", strategy);
    return HS_OK;
  }
  hs_plan_t plan;
  hs_report_t rep;
  hs_search_stats_t stats;
  hs_error_t err;
  hs_plan_init(&plan);
  hs_report_init(&rep);
  memset(&stats, 0, sizeof stats);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_planner_run(t, m, c, po, NULL, &plan, &stats, &rep, &err);
  out->search_s = stats.search_s;
  if (st == HS_ENOMEM) {
    hs_plan_destroy(&plan);
    hs_report_destroy(&rep);
    return st;
  }
  if (st != HS_OK) {
    snprintf(out->error, sizeof out->error, "%.390s", err.msg[0] ? err.msg : hs_status_message(st));
    goto out;
  }
  out->ok = true;
  out->iteration_s = rep.iteration_time_s;
  out->tokens_per_s = rep.tokens_per_s;
  out->mfu = rep.mfu;
  out->oom = rep.oom;
  out->global_batch = rep.global_batch;
  out->tokens_per_iteration = rep.tokens_per_iteration;
  out->n_gpus_used = hs_plan_n_devices(&plan);
  for (int32_t d = 0; d < rep.n_device_mem && (size_t)d < c->n_devices; d++) {
    double cap = hs_cluster_gpu(c, d)->mem_bytes;
    double x = cap > 0 ? rep.device_peak_memory_bytes[d] / cap : 0.0;
    if (x > out->peak_memory_fraction)
      out->peak_memory_fraction = x;
  }
  hs_plan_describe(&plan, m, out->plan, sizeof out->plan);
  hs_report_time_parts(&rep, out->time_s);
  hs_report_mem_parts(&rep, out->mem_bytes);
out:
  hs_plan_destroy(&plan);
  hs_report_destroy(&rep);
  return HS_OK;
}

/* ---- rows ------------------------------------------------------------------ */

/* hs_report_time_parts / hs_report_mem_parts, in their key order */
#define BREAKDOWN_COLS                                                                      \
  "time_compute_s,time_recompute_s,time_tp_comm_s,time_pp_comm_s,time_dp_comm_s,"           \
  "time_bubble_s,time_optimizer_s,mem_weights_bytes,mem_gradients_bytes,mem_optimizer_bytes," \
  "mem_activations_bytes,mem_workspace_bytes,"
#define N_BREAKDOWN_COLS (HS_TIME_PARTS + HS_MEM_PARTS)

#define HEADER                                                                                  \
  "point,cluster,nic_GBps,intersite_GBps,intersite_latency_us,model,global_batch_spec,strategy," \
  "price_model,status,n_gpus,gpu_types,n_gpus_used,global_batch,tokens_per_iteration,"           \
  "iteration_s,tokens_per_s,mfu,"                                                                \
  "peak_memory_fraction,usd_per_hour,unpriced_gpus,usd_per_iteration,usd_per_million_tokens,"  \
  "train_tokens,time_to_train_h,cost_to_train_usd,plan," BREAKDOWN_COLS "search_s,error\n"

const char *hs_sweep_csv_header(void) { return HEADER; }

/* A growable string. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int w = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)w < room) {
      b->len += (size_t)w;
      return;
    }
    if (hs_reserve((void **)&b->p, &b->cap, b->len + (size_t)w + 1, 1) != HS_OK) {
      b->oom = true;
      return;
    }
  }
}

static void sb_field(sbuf_t *b, const char *s)
{
  if (!strpbrk(s, ",\"\n\r")) {
    sb_printf(b, "%s", s);
    return;
  }
  sb_printf(b, "\"");
  for (; *s; s++)
    sb_printf(b, *s == '"' ? "\"\"" : "%c", *s);
  sb_printf(b, "\"");
}

static void sb_num(sbuf_t *b, double v, bool empty)
{
  if (empty || !isfinite(v))
    sb_printf(b, ",");
  else
    sb_printf(b, ",%.6g", v);
}

static void row_inputs(sbuf_t *b, const hs_sweep_spec_t *s, uint64_t point)
{
  uint64_t job = point / s->n_prices;
  hs_sweep_point_t p;
  hs_sweep_point_of(s, job, &p);
  char label[512];
  hs_sweep_cluster_label(&s->clusters[p.cluster], label, sizeof label);
  double nic, xbw, xlat;
  link_values(s, &p, &nic, &xbw, &xlat);
  sb_printf(b, "%llu,", (unsigned long long)point);
  sb_field(b, label);
  sb_num(b, nic, nic <= 0);
  sb_num(b, xbw, xbw <= 0);
  sb_num(b, xlat, xlat < 0);
  sb_printf(b, ",");
  sb_field(b, s->models[p.model]);
  if (s->global_batch[p.global_batch] > 0)
    sb_printf(b, ",%lld,", (long long)s->global_batch[p.global_batch]);
  else
    sb_printf(b, ",,");
  sb_field(b, s->strategies[p.strategy]);
  sb_printf(b, ",%s,", hs_price_model_name(s->prices[point % s->n_prices]));
}

void hs_sweep_row_inputs(const hs_sweep_spec_t *s, uint64_t point, char *buf, size_t n)
{
  sbuf_t b = {0};
  row_inputs(&b, s, point);
  hs_strlcpy(buf, b.oom || !b.p ? "" : b.p, n);
  free(b.p);
}

static void row_results(sbuf_t *b, const hs_sweep_spec_t *s, const hs_eval_t *e,
                        hs_price_model_t pm, unsigned flags)
{
  sb_printf(b, "%s,%d,", !e->ok ? "error" : e->oom ? "oom" : "ok", e->n_gpus);
  sb_field(b, e->gpu_types);
  /* every row states the batch it trains (or would have trained) */
  if (!e->ok || e->oom) {
    sb_printf(b, ",");
    if (e->n_gpus_used > 0)
      sb_printf(b, "%d", e->n_gpus_used);
    sb_num(b, (double)e->global_batch, e->global_batch <= 0);
    sb_num(b, (double)e->tokens_per_iteration, e->tokens_per_iteration <= 0);
    /* infeasible: no throughput, MFU or cost as if they were achievable */
    sb_printf(b, ",,,,");
    sb_num(b, e->usd_per_hour[pm], e->unpriced_gpus[pm] > 0); /* unknown, not a partial sum */
    sb_printf(b, ",%d,,,%.6g,,,", e->unpriced_gpus[pm], s->train_tokens);
    if (e->ok)
      sb_field(b, e->plan);
    for (int k = 0; k < N_BREAKDOWN_COLS; k++)
      sb_printf(b, ",");
  } else {
    double usd_h = e->usd_per_hour[pm];
    /* one GPU without a price makes every cost unknown: empty, never a partial sum */
    bool priced = usd_h > 0 && e->unpriced_gpus[pm] == 0;
    double usd_it = usd_h * e->iteration_s / 3600.0;
    double usd_mtok = e->tokens_per_iteration > 0 ? usd_it / (double)e->tokens_per_iteration * 1e6 : 0;
    double train_h = e->tokens_per_s > 0 ? s->train_tokens / e->tokens_per_s / 3600.0 : INFINITY;
    sb_printf(b, ",%d,%lld,%lld", e->n_gpus_used, (long long)e->global_batch,
              (long long)e->tokens_per_iteration);
    sb_num(b, e->iteration_s, false);
    sb_num(b, e->tokens_per_s, false);
    sb_num(b, e->mfu, false);
    sb_num(b, e->peak_memory_fraction, false);
    sb_num(b, usd_h, !priced);
    sb_printf(b, ",%d", e->unpriced_gpus[pm]);
    sb_num(b, usd_it, !priced);
    sb_num(b, usd_mtok, !priced);
    sb_num(b, s->train_tokens, false);
    sb_num(b, train_h, false);
    sb_num(b, train_h * usd_h, !priced);
    sb_printf(b, ",");
    sb_field(b, e->plan);
    for (int k = 0; k < HS_TIME_PARTS; k++)
      sb_num(b, e->time_s[k], false);
    for (int k = 0; k < HS_MEM_PARTS; k++)
      sb_num(b, e->mem_bytes[k], false);
  }
  sb_num(b, e->search_s, (flags & HS_SWEEP_NO_TIMINGS) != 0);
  sb_printf(b, ",");
  sb_field(b, e->error);
  sb_printf(b, "\n");
}

hs_status_t hs_sweep_job_run(const hs_sweep_spec_t *s, uint64_t job, unsigned flags, char **rows,
                             hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_sweep_point_t p;
  hs_sweep_point_of(s, job, &p);
  hs_cluster_t c;
  hs_model_t m;
  hs_eval_t e;
  hs_error_t lerr;
  sbuf_t b = {0};
  hs_cluster_init(&c);
  hs_model_init(&m);
  hs_error_init(&lerr);
  lerr.warn_fp = NULL;
  memset(&e, 0, sizeof e);
  *rows = NULL;
  hs_status_t lst = hs_sweep_cluster_build(s, &p, &c, &lerr);
  if (lst == HS_OK)
    lst = hs_model_load(s->models[p.model], s->seq_len, &m, &lerr);
  if (lst == HS_ENOMEM)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory in sweep job %llu", (unsigned long long)job));
  if (lst != HS_OK) {
    snprintf(e.error, sizeof e.error, "%.390s", lerr.msg[0] ? lerr.msg : hs_status_message(lst));
    if (c.n_devices) {
      e.n_gpus = (int32_t)c.n_devices;
      gpu_types(&c, e.gpu_types, sizeof e.gpu_types);
      hs_cluster_rent(&c, e.usd_per_hour, e.unpriced_gpus);
    }
  } else {
    hs_plan_opts_t po;
    hs_plan_opts_init(&po);
    po.global_batch = hs_sweep_global_batch(s, &p, c.n_devices);
    po.time_limit_s = s->time_limit_s;
    po.max_microbatch_size = s->max_microbatch_size;
    po.precision = s->precision;
    po.memory_headroom = s->memory_headroom;
    po.practice = s->practice;
    if ((st = hs_eval_run(&m, &c, s->strategies[p.strategy], &po, &e)) != HS_OK)
      HS_FAIL(hs_error_set(err, st, "out of memory in sweep job %llu", (unsigned long long)job));
    if (!e.ok && po.global_batch > 0) { /* the batch it was asked to train */
      e.global_batch = po.global_batch;
      e.tokens_per_iteration = po.global_batch * m.seq_len;
    }
  }
  for (size_t k = 0; k < s->n_prices; k++) {
    row_inputs(&b, s, job * s->n_prices + k);
    row_results(&b, s, &e, s->prices[k], flags);
  }
  if (b.oom)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory formatting sweep rows"));
  *rows = b.p;
  b.p = NULL;
cleanup:
  free(b.p);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
  return st;
}

hs_status_t hs_sweep_job_error_rows(const hs_sweep_spec_t *s, uint64_t job, const char *why,
                                    char **rows, hs_error_t *err)
{
  hs_eval_t e;
  sbuf_t b = {0};
  memset(&e, 0, sizeof e);
  snprintf(e.error, sizeof e.error, "%.390s", why);
  for (size_t k = 0; k < s->n_prices; k++) {
    row_inputs(&b, s, job * s->n_prices + k);
    row_results(&b, s, &e, s->prices[k], HS_SWEEP_NO_TIMINGS);
  }
  if (b.oom) {
    free(b.p);
    *rows = NULL;
    return hs_error_set(err, HS_ENOMEM, "out of memory formatting sweep rows");
  }
  *rows = b.p;
  return HS_OK;
}

/* ---- running jobs on worker processes ---------------------------------------- */

typedef struct run_ctx {
  const hs_sweep_spec_t *s;
  const uint64_t *jobs;
  unsigned flags;
  hs_sweep_row_fn fn;
  void *ctx;
} run_ctx_t;

static hs_status_t run_item(void *ctx, size_t i, void **out, size_t *len, hs_error_t *err)
{
  run_ctx_t *r = ctx;
  char *rows = NULL;
  hs_status_t st = hs_sweep_job_run(r->s, r->jobs[i], r->flags, &rows, err);
  *out = rows;
  *len = rows ? strlen(rows) + 1 : 0;
  return st;
}

static int sink_item(void *ctx, size_t i, const void *data, size_t len)
{
  run_ctx_t *r = ctx;
  return len ? r->fn(r->ctx, r->jobs[i], data) : 0;
}

static int lost_item(void *ctx, size_t i, const char *why)
{
  run_ctx_t *r = ctx;
  char *rows = NULL;
  hs_error_t err;
  hs_error_init(&err);
  if (hs_sweep_job_error_rows(r->s, r->jobs[i], why, &rows, &err) != HS_OK)
    return 1;
  int stop = r->fn(r->ctx, r->jobs[i], rows);
  free(rows);
  return stop;
}

hs_status_t hs_sweep_run(const hs_sweep_spec_t *s, const uint64_t *jobs, size_t n, int workers,
                         unsigned flags, hs_sweep_row_fn fn, void *ctx, hs_error_t *err)
{
  run_ctx_t r = {s, jobs, flags, fn, ctx};
  /* points share device subsets: each worker answers a search it ran
   * before from the search memo (hs_search.h) */
  hs_search_memo_begin();
  hs_status_t st = hs_map_processes(n, workers, run_item, sink_item, lost_item, &r, err);
  hs_search_memo_end();
  return st;
}
