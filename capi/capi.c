/*
 * capi.c - libhetsim's flat C API (hetsim.h): opaque handles over the
 * library's caller-allocated structs, and calls that do what the CLI's
 * commands do, in-process, returning the bytes the CLI prints.
 *
 * Nothing here computes a result: every figure comes from the library
 * function the CLI calls (hs_simulate, hs_planner_run, hs_compare_rank and
 * the rest of hs_compare.h, hs_sweep_run, hs_whatif_run). What lives here is
 * glue: handle lifetimes, text through open_memstream, and errors copied
 * into the caller's record.
 *
 * Invariants: every entry point clears the caller's error on success and
 * fills it on failure; a failing constructor returns NULL and leaks
 * nothing; allocation failure is HS_ENOMEM.
 */
#include "capi_internal.h"
#include "hs_compare.h" /* the comparison request, shared with `hetsim compare` */
#include "hs_ranking.h"
#include "hs_scenarios.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Copies the library's error (or success) into the caller's record. */
static void report_error(hs_api_error_t *out, hs_status_t st, const hs_error_t *e)
{
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  out->status = (int32_t)st;
  if (st == HS_OK)
    return;
  int code = hs_status_exit_code(st);
  out->exit_code = code ? code : 1;
  hs_strlcpy(out->name, hs_status_name(st), sizeof out->name);
  hs_strlcpy(out->message, e && e->msg[0] ? e->msg : hs_status_message(st), sizeof out->message);
}

/* A quiet error record: warnings (unknown fields) still go to stderr, as in
 * the CLI. */
static void error_init(hs_error_t *e) { hs_error_init(e); }

static hs_status_t null_handle(hs_error_t *e, const char *what)
{
  return hs_error_set(e, HS_EINVAL, "%s: NULL handle", what);
}

/* Reports st into the caller's record and returns `out` (a text, or NULL). */
static char *text_done(hs_status_t st, char *out, const hs_error_t *e, hs_api_error_t *err)
{
  report_error(err, st, e);
  return out;
}

/* A zeroed handle of `size` bytes, or NULL with HS_ENOMEM in *e. */
static void *handle_alloc(size_t size, hs_error_t *e)
{
  void *h = hs_calloc(1, size);
  if (!h)
    hs_error_set(e, HS_ENOMEM, "out of memory");
  return h;
}

int32_t hs_api_version(void) { return HS_API_VERSION; }

void hs_api_free(void *p) { free(p); }

/* Runs `write` into a memory stream and returns its text (malloc'd). */
typedef hs_status_t (*writer_fn)(const void *ctx, FILE *f, hs_error_t *err);
static hs_status_t stream_text(writer_fn write, const void *ctx, char **out, hs_error_t *err)
{
  char *buf = NULL;
  size_t len = 0;
  *out = NULL;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  hs_status_t st = write(ctx, f, err);
  int bad = ferror(f);
  if (fclose(f) != 0 || st != HS_OK || bad || !buf) {
    free(buf);
    return st != HS_OK ? st : hs_error_set(err, HS_ENOMEM, "out of memory writing text");
  }
  *out = buf;
  return HS_OK;
}

/* ---- models ------------------------------------------------------------------ */

static hs_api_model_t *model_new(const char *spec, const char *text, const char *file,
                                 int64_t seq_len, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs_status_t st = HS_OK;
  hs_api_model_t *m = handle_alloc(sizeof *m, &e);
  if (!m) {
    report_error(err, HS_ENOMEM, &e);
    return NULL;
  }
  hs_model_init(&m->m);
  if (spec)
    st = hs_model_load(spec, seq_len, &m->m, &e);
  else
    st = hs_model_parse(text, file, seq_len, &m->m, &e);
  report_error(err, st, &e);
  if (st != HS_OK) {
    hs_api_model_free(m);
    return NULL;
  }
  return m;
}

hs_api_model_t *hs_api_model_load(const char *spec, int64_t seq_len, hs_api_error_t *err)
{
  return model_new(spec ? spec : "", NULL, NULL, seq_len, err);
}

hs_api_model_t *hs_api_model_parse(const char *text, const char *file, int64_t seq_len,
                                   hs_api_error_t *err)
{
  return model_new(NULL, text, file, seq_len, err);
}

void hs_api_model_free(hs_api_model_t *m)
{
  if (!m)
    return;
  hs_model_destroy(&m->m);
  free(m);
}

const char *hs_api_model_name(const hs_api_model_t *m) { return m ? m->m.name : ""; }

char *hs_api_model_json(const hs_api_model_t *m, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  char *out = NULL;
  hs_status_t st = m ? hs__api_model_json(&m->m, &out, &e) : null_handle(&e, "model");
  return text_done(st, out, &e, err);
}

/* ---- clusters ------------------------------------------------------------------ */

static hs_api_cluster_t *cluster_new(const char *spec, const char *text, const char *file,
                                     const char *profile, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs_status_t st = HS_OK;
  hs_api_cluster_t *c = handle_alloc(sizeof *c, &e);
  if (!c) {
    report_error(err, HS_ENOMEM, &e);
    return NULL;
  }
  hs_cluster_init(&c->c);
  if (spec)
    st = hs_cluster_load(spec, &c->c, &e);
  else if (!text)
    st = hs_error_set(&e, HS_EINVAL, "%s: no text to parse", file ? file : "cluster");
  else
    st = hs_cluster_parse(text, file ? file : "cluster", &c->c, &e);
  if (st == HS_OK && profile && *profile)
    st = hs_profile_apply_file(profile, &c->c, &e);
  report_error(err, st, &e);
  if (st != HS_OK) {
    hs_api_cluster_free(c);
    return NULL;
  }
  return c;
}

hs_api_cluster_t *hs_api_cluster_load(const char *spec, const char *profile, hs_api_error_t *err)
{
  return cluster_new(spec ? spec : "", NULL, NULL, profile, err);
}

hs_api_cluster_t *hs_api_cluster_parse(const char *text, const char *file, const char *profile,
                                       hs_api_error_t *err)
{
  return cluster_new(NULL, text, file, profile, err);
}

void hs_api_cluster_free(hs_api_cluster_t *c)
{
  if (!c)
    return;
  hs_cluster_destroy(&c->c);
  free(c);
}

const char *hs_api_cluster_name(const hs_api_cluster_t *c) { return c ? c->c.name : ""; }

int32_t hs_api_cluster_n_devices(const hs_api_cluster_t *c)
{
  return c ? (int32_t)c->c.n_devices : 0;
}

char *hs_api_cluster_json(const hs_api_cluster_t *c, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  char *out = NULL;
  hs_status_t st = c ? hs__api_cluster_json(&c->c, &out, &e) : null_handle(&e, "cluster");
  return text_done(st, out, &e, err);
}

/* ---- plans ---------------------------------------------------------------------- */

static hs_api_plan_t *plan_alloc(hs_error_t *e)
{
  hs_api_plan_t *p = handle_alloc(sizeof *p, e);
  if (!p)
    return NULL;
  hs_plan_init(&p->plan);
  hs_report_init(&p->report);
  return p;
}

/* Finishes a constructor: the summary (in layers of model m) on success,
 * the handle freed on failure. */
static hs_api_plan_t *plan_done(hs_api_plan_t *p, const hs_api_model_t *m, hs_status_t st,
                                hs_error_t *e, hs_api_error_t *err)
{
  report_error(err, st, e);
  if (st != HS_OK) {
    hs_api_plan_free(p);
    return NULL;
  }
  hs_plan_describe(&p->plan, m ? &m->m : NULL, p->summary, sizeof p->summary);
  return p;
}

static hs_status_t check_inputs(const hs_api_model_t *m, const hs_api_cluster_t *c, hs_error_t *e)
{
  if (!m)
    return null_handle(e, "model");
  if (!c)
    return null_handle(e, "cluster");
  return HS_OK;
}

hs_api_plan_t *hs_api_plan_grid(const hs_api_model_t *m, const hs_api_cluster_t *c,
                                const char *opts_json, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs__api_grid_t g;
  hs_api_plan_t *p = NULL;
  hs_status_t st = check_inputs(m, c, &e);
  if (st == HS_OK)
    st = hs__api_grid_decode(opts_json, &g, &e);
  if (st == HS_OK && !(p = plan_alloc(&e)))
    st = HS_ENOMEM;
  if (st == HS_OK) {
    hs_grid_opts_defaults(&g.g, &c->c);
    st = hs_plan_grid(&m->m, &c->c, &g.g, &p->plan, &e);
  }
  if (st == HS_OK) { /* as `hetsim simulate --tp ...` names, sets and checks it */
    hs_strlcpy(p->plan.strategy, "manual-grid", sizeof p->plan.strategy);
    if (g.practice.precision[0])
      hs_dtype_parse(g.practice.precision, &p->plan.precision); /* checked by the decoder */
    st = hs_plan_validate(&p->plan, &m->m, &c->c, NULL, &e);
  }
  return plan_done(p, m, st, &e, err);
}

static hs_api_plan_t *plan_read(const char *path, const char *text, const char *file,
                                const hs_api_model_t *m, const hs_api_cluster_t *c,
                                hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs_api_plan_t *p = NULL;
  hs_status_t st = check_inputs(m, c, &e);
  if (st == HS_OK && !(p = plan_alloc(&e)))
    st = HS_ENOMEM;
  if (!file)
    file = path ? hs_basename(path) : "plan";
  if (st == HS_OK)
    st = path ? hs_plan_load(path, &p->plan, &e) : hs_plan_parse(text, file, &p->plan, &e);
  if (st == HS_OK)
    st = hs_plan_validate(&p->plan, &m->m, &c->c, file, &e);
  return plan_done(p, m, st, &e, err);
}

hs_api_plan_t *hs_api_plan_load(const char *path, const hs_api_model_t *m,
                                const hs_api_cluster_t *c, hs_api_error_t *err)
{
  return plan_read(path ? path : "", NULL, NULL, m, c, err);
}

hs_api_plan_t *hs_api_plan_parse(const char *text, const char *file, const hs_api_model_t *m,
                                 const hs_api_cluster_t *c, hs_api_error_t *err)
{
  if (!text) {
    hs_error_t e;
    error_init(&e);
    report_error(err, hs_error_set(&e, HS_EINVAL, "%s: no text to parse", file ? file : "plan"), &e);
    return NULL;
  }
  return plan_read(NULL, text, file, m, c, err);
}

hs_api_plan_t *hs_api_plan_search(const hs_api_model_t *m, const hs_api_cluster_t *c,
                                  const char *strategy, const char *opts_json,
                                  hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs_plan_opts_t po;
  hs_api_plan_t *p = NULL;
  const hs_planner_type_t *t = NULL;
  hs_status_t st = check_inputs(m, c, &e);
  if (st == HS_OK && !(t = hs_planner_find(strategy ? strategy : "")))
    st = hs_error_set(&e, HS_EINVAL, "strategy: unknown strategy \"%s\" (hetsim list strategies)",
                      strategy ? strategy : "");
  if (st == HS_OK)
    st = hs__api_search_decode(opts_json, &po, &e);
  if (st == HS_OK && !(p = plan_alloc(&e)))
    st = HS_ENOMEM;
  if (st == HS_OK)
    st = hs_planner_run(t, &m->m, &c->c, &po, NULL, &p->plan, &p->stats, &p->report, &e);
  if (st == HS_OK) {
    p->searched = true;
    hs_strlcpy(p->strategy, t->name, sizeof p->strategy);
    hs_strlcpy(p->model, m->m.name, sizeof p->model);
    hs_strlcpy(p->cluster, c->c.name, sizeof p->cluster);
    hs_rank_plan_band(&p->plan, &c->c, &p->band);
  }
  return plan_done(p, m, st, &e, err);
}

void hs_api_plan_free(hs_api_plan_t *p)
{
  if (!p)
    return;
  hs_plan_destroy(&p->plan);
  hs_report_destroy(&p->report);
  free(p);
}

char *hs_api_plan_json(const hs_api_plan_t *p, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  char *out = NULL;
  hs_status_t st = p ? hs__api_plan_json(&p->plan, &out, &e) : null_handle(&e, "plan");
  return text_done(st, out, &e, err);
}

const char *hs_api_plan_summary(const hs_api_plan_t *p) { return p ? p->summary : ""; }

char *hs_api_plan_result_json(const hs_api_plan_t *p, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  char *out = NULL;
  hs_status_t st;
  if (!p)
    st = null_handle(&e, "plan");
  else if (!p->searched)
    st = hs_error_set(&e, HS_EINVAL, "plan: not made by a strategy search (no search result)");
  else
    st = hs__api_search_json(p, &out, &e);
  return text_done(st, out, &e, err);
}

/* ---- simulation ------------------------------------------------------------------ */

hs_api_report_t *hs_api_simulate(const hs_api_model_t *m, const hs_api_cluster_t *c,
                                 const hs_api_plan_t *p, const char *opts_json,
                                 hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs__api_sim_t so;
  hs_api_report_t *r = NULL;
  hs_status_t st = check_inputs(m, c, &e);
  hs_plan_t over; /* the plan with the caller's practice options, as --plan with --kernels ... */
  hs_plan_init(&over);
  if (st == HS_OK && !p)
    st = null_handle(&e, "plan");
  if (st == HS_OK)
    st = hs__api_sim_decode(opts_json, &so, &e);
  if (st == HS_OK && so.practice.any) {
    st = hs_plan_copy(&p->plan, &over, &e);
    if (st == HS_OK)
      st = hs__api_practice_apply(&so.practice, "simulate options", &over.practice, &over.precision, &e);
    if (st == HS_OK)
      st = hs_plan_validate(&over, &m->m, &c->c, NULL, &e);
  }
  if (st == HS_OK && !(r = handle_alloc(sizeof *r, &e)))
    st = HS_ENOMEM;
  if (st == HS_OK) {
    hs_report_init(&r->r);
    hs_sim_opts_t o;
    hs_sim_opts_init(&o);
    o.trace_path = so.trace[0] ? so.trace : NULL;
    o.trace_max_devices = so.trace_devices;
    st = hs_simulate(&m->m, &c->c, so.practice.any ? &over : &p->plan, &o, &r->r, &e);
  }
  hs_plan_destroy(&over);
  if (st == HS_OK) {
    hs_strlcpy(r->model, m->m.name, sizeof r->model);
    hs_strlcpy(r->cluster, c->c.name, sizeof r->cluster);
  }
  report_error(err, st, &e);
  if (st != HS_OK) {
    hs_api_report_free(r);
    return NULL;
  }
  return r;
}

void hs_api_report_free(hs_api_report_t *r)
{
  if (!r)
    return;
  hs_report_destroy(&r->r);
  free(r);
}

char *hs_api_report_json(const hs_api_report_t *r, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  char *out = NULL;
  hs_status_t st = r ? hs__api_report_json(r, &out, &e) : null_handle(&e, "report");
  return text_done(st, out, &e, err);
}

static hs_status_t write_report(const void *ctx, FILE *f, hs_error_t *err)
{
  (void)err;
  hs_report_print(ctx, f);
  return HS_OK;
}

char *hs_api_report_text(const hs_api_report_t *r, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  char *out = NULL;
  hs_status_t st = r ? stream_text(write_report, &r->r, &out, &e) : null_handle(&e, "report");
  return text_done(st, out, &e, err);
}

/* NaN where the JSON report says null: an out-of-memory plan's figures are
 * not a throughput (the simulator still times the iteration it cannot run).
 * NULL reads 0, as every accessor's NULL does. */
double hs_api_report_iteration_time_s(const hs_api_report_t *r)
{
  return !r ? 0.0 : r->r.oom ? NAN : r->r.iteration_time_s;
}

double hs_api_report_tokens_per_s(const hs_api_report_t *r)
{
  return !r ? 0.0 : r->r.oom ? NAN : r->r.tokens_per_s;
}
int32_t hs_api_report_oom(const hs_api_report_t *r) { return r && r->r.oom ? 1 : 0; }

/* ---- tables ------------------------------------------------------------------------ */

typedef struct compare_out {
  const hs_compare_row_t *rows;
  size_t n;
  int baseline; /* the row speedups are against, -1: none */
} compare_out_t;

static hs_status_t write_compare(const void *ctx, FILE *f, hs_error_t *err)
{
  const compare_out_t *o = ctx;
  (void)err;
  hs_compare_write_csv_vs(o->rows, o->n, o->baseline, f);
  return HS_OK;
}

char *hs_api_compare_csv(const hs_api_model_t *m, const hs_api_cluster_t *c,
                         const char *opts_json, hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs__api_compare_t co;
  hs_api_model_t *own_m = NULL;
  hs_api_cluster_t *own_c = NULL;
  hs_compare_row_t *rows = NULL;
  const hs_scenario_t *scn = NULL;
  char *out = NULL;
  char list[1024] = "";
  const char *names[HS__API_MAX_STRATEGIES];
  size_t n = 0;
  hs_status_t st = HS_OK;
  HS_CHECK(hs__api_compare_decode(opts_json, &co, &e));
  if (co.scenario[0] && !(scn = hs_scenario_find(co.scenario)))
    HS_FAIL(hs_error_set(&e, HS_EINVAL,
                         "compare options: scenario: unknown scenario \"%s\" (hetsim list scenarios)",
                         co.scenario));
  if (!scn && (!m || !c))
    HS_FAIL(hs_error_set(&e, HS_EINVAL, "compare: give a model and a cluster, or a scenario"));
  /* the scenario's model and cluster where the caller gave none, as the CLI */
  if (!m) {
    hs_api_error_t ae;
    if (!(own_m = hs_api_model_load(scn->model, 0, &ae)))
      HS_FAIL(hs_error_set(&e, (hs_status_t)ae.status, "%s", ae.message));
    m = own_m;
  }
  if (!c) {
    hs_api_error_t ae;
    if (!(own_c = hs_api_cluster_load(scn->cluster, NULL, &ae)))
      HS_FAIL(hs_error_set(&e, (hs_status_t)ae.status, "%s", ae.message));
    c = own_c;
  }
  /* the strategies, the scenario's defaults and the ranked run: as the CLI's (hs_compare.h) */
  int bad = hs_compare_strategies(co.strategies[0] ? co.strategies : NULL, scn, list, sizeof list,
                                  names, HS__API_MAX_STRATEGIES, &n);
  if (bad >= 0) /* names the caller gave must exist; a scenario's unbuilt ones get a row */
    HS_FAIL(hs_error_set(&e, HS_EINVAL,
                         "compare options: strategies: unknown strategy \"%s\" (hetsim list "
                         "strategies)", names[bad]));
  if (n == 0)
    HS_FAIL(hs_error_set(&e, HS_EINVAL, "compare options: strategies: no strategy given"));
  if (co.baseline[0] && !hs_compare_listed(names, n, co.baseline))
    HS_FAIL(hs_error_set(&e, HS_EINVAL, "compare options: baseline: \"%s\" is not among the "
                         "strategies compared", co.baseline));
  hs_compare_scenario_opts(scn, (int64_t)c->c.n_devices, co.global_batch_set, co.precision_set, &co.po);
  if (!(rows = hs_calloc(n, sizeof *rows)))
    HS_FAIL(hs_error_set(&e, HS_ENOMEM, "out of memory"));
  hs_ranking_t rk; /* each row's error band and the lead's verdict, as the CLI's */
  int base = -1;
  if (hs_compare_rank(&m->m, &c->c, names, n, &co.po, co.charge_cluster, NULL,
                      co.baseline[0] ? co.baseline : NULL, rows, &base, &rk) != HS_OK)
    HS_FAIL(hs_error_set(&e, HS_ENOMEM, "out of memory comparing strategies"));
  compare_out_t co_out = {rows, n, base};
  HS_CHECK(stream_text(write_compare, &co_out, &out, &e));
cleanup:
  free(rows);
  hs_api_model_free(own_m);
  hs_api_cluster_free(own_c);
  report_error(err, st, &e);
  return out;
}

/* Sweep rows in completion order, appended into one buffer. */
typedef struct sweep_buf {
  char *text;
  size_t len, cap;
  bool oom;
} sweep_buf_t;

static bool buf_add(sweep_buf_t *b, const char *s)
{
  size_t n = strlen(s);
  if (hs_reserve((void **)&b->text, &b->cap, b->len + n + 1, 1) != HS_OK)
    return false;
  memcpy(b->text + b->len, s, n + 1);
  b->len += n;
  return true;
}

static int on_sweep_rows(void *ctx, uint64_t job, const char *rows)
{
  sweep_buf_t *b = ctx;
  (void)job;
  if (!buf_add(b, rows)) {
    b->oom = true;
    return 1;
  }
  return 0;
}

char *hs_api_sweep_csv(const char *spec_text, const char *file, const char *opts_json,
                       hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs__api_sweep_t so;
  hs_sweep_spec_t spec;
  sweep_buf_t b = {0};
  char *out = NULL;
  hs_status_t st = HS_OK;
  hs_sweep_spec_init(&spec);
  if (!file)
    file = "spec.json";
  HS_CHECK(hs__api_sweep_decode(opts_json, &so, &e));
  if (!spec_text)
    HS_FAIL(hs_error_set(&e, HS_EINVAL, "%s: no text to parse", file));
  HS_CHECK(hs_sweep_spec_parse(spec_text, file, &spec, &e));
  HS_CHECK(hs_sweep_spec_resolve(&spec, &e)); /* one global batch, as `hetsim sweep` */
  if (so.precision[0])
    (void)hs_dtype_parse(so.precision, &spec.precision); /* checked by the decoder */
  if (so.memory_headroom >= 0.0)
    spec.memory_headroom = so.memory_headroom;
  if (!buf_add(&b, hs_sweep_csv_header()))
    HS_FAIL(hs_error_set(&e, HS_ENOMEM, "out of memory"));
  st = hs_sweep_run(&spec, spec.jobs, spec.n_jobs, so.workers,
                    so.no_timings ? HS_SWEEP_NO_TIMINGS : 0u, on_sweep_rows, &b, &e);
  if (b.oom)
    HS_FAIL(hs_error_set(&e, HS_ENOMEM, "out of memory collecting sweep rows"));
  if (st != HS_OK)
    goto cleanup;
  HS_CHECK(hs_sweep_sort_output(b.text, file, &out, &e));
cleanup:
  free(b.text);
  hs_sweep_spec_destroy(&spec);
  report_error(err, st, &e);
  return out;
}

/* ---- purchase studies ---------------------------------------------------------- */

typedef struct whatif_out {
  const hs_whatif_result_t *res;
  hs_whatif_format_t format;
  size_t top;
} whatif_out_t;

static hs_status_t write_whatif(const void *ctx, FILE *f, hs_error_t *err)
{
  const whatif_out_t *o = ctx;
  return hs_whatif_write(o->res, o->format, o->top, f, err);
}

char *hs_api_whatif(const hs_api_model_t *m, const hs_api_cluster_t *base, const char *opts_json,
                    hs_api_error_t *err)
{
  hs_error_t e;
  error_init(&e);
  hs__api_whatif_t *wo = NULL; /* 4 KB of names: on the heap, Python's threads have small stacks */
  hs_price_override_t *prices = NULL;
  hs_whatif_result_t res;
  char *out = NULL;
  hs_status_t st = HS_OK;
  hs_whatif_result_init(&res);
  if (!m)
    HS_FAIL(null_handle(&e, "model"));
  if (!(wo = handle_alloc(sizeof *wo, &e)))
    HS_FAIL(HS_ENOMEM);
  HS_CHECK(hs__api_whatif_decode(opts_json, wo, &e));
  if (wo->gpu_price[0])
    HS_CHECK(hs_price_overrides_parse(wo->gpu_price, &prices, &wo->o.n_prices, &e));
  wo->o.prices = prices;
  HS_CHECK(hs_whatif_run(&m->m, base ? &base->c : NULL, &wo->o, &res, &e));
  hs_whatif_rank(&res, wo->o.plan.practice.framework.id); /* the CLI's verdict */
  whatif_out_t wout = {&res, wo->format, (size_t)wo->top};
  HS_CHECK(stream_text(write_whatif, &wout, &out, &e));
cleanup:
  hs_whatif_result_destroy(&res);
  free(prices);
  free(wo);
  return text_done(st, out, &e, err);
}
