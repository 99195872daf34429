/*
 * published_cv.c - the one place where end-to-end tables feed parameters:
 * the framework host overheads (sim/host.c) that no kernel-level source
 * gives, fitted on a declared training split of the published suite, with
 * every table's leave-one-table-out error beside its in-fit error
 * (`hetsim validate --published --cv`, docs/validation.md "Fitted
 * framework overheads").
 *
 * The fit (validate/published-fit.json declares it):
 *   parameters  d = dispatch_us, shared by every eager framework preset
 *               (one PyTorch dispatcher), and m_f = microbatch_us per engine
 *               family f (megatron: megatron-lm-2021, megatron-core-2024*,
 *               nemo-2024; deepspeed: deepspeed-2022; fsdp: fsdp-2023);
 *   grid        the file's dispatch_us and microbatch_us lists;
 *   objective   the mean over the fitted tables of each table's MAPE
 *               (every table counts once, whatever its row count);
 *   search      exhaustive over the grid: for each d, each family takes the
 *               m minimising its own tables' MAPE sum (the objective is a
 *               sum over tables and each table sees one family's m), then
 *               the d of least total. Ties go to the smaller value, so the
 *               result is deterministic.
 * A family with no table in the fitted set keeps m = 0 (no evidence);
 * tables whose framework is "none" do not depend on the parameters.
 *
 * Leave-one-table-out: for each training table T, the fit is redone on the
 * training split without T and T is predicted with that fit. Held-out
 * tables are predicted with the full fit only. Every table's predictions at
 * every grid point are computed once (tables x |d| x |m| simulations of
 * their rows), so the folds cost no simulation.
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int hs_pub_family(hs_framework_id_t id)
{
  switch (id) {
  case HS_FW_MEGATRON_LM_2021:
  case HS_FW_MEGATRON_CORE_2024:
  case HS_FW_MEGATRON_CORE_GRAPHS:
  case HS_FW_NEMO_2024:
    return HS_PUB_FAMILY_MEGATRON;
  case HS_FW_DEEPSPEED_2022:
    return HS_PUB_FAMILY_DEEPSPEED;
  case HS_FW_FSDP_2023:
    return HS_PUB_FAMILY_FSDP;
  default:
    return -1;
  }
}

static const char *const family_names[HS_PUB_FAMILIES] = {"megatron", "deepspeed", "fsdp"};

const char *hs_pub_family_name(int f)
{
  return f >= 0 && f < HS_PUB_FAMILIES ? family_names[f] : "none";
}

void hs_pub_fit_spec_destroy(hs_pub_fit_spec_t *s)
{
  if (!s)
    return;
  for (int32_t i = 0; i < s->n_train; i++)
    free(s->train[i]);
  free(s->train);
  free(s->dispatch_us);
  free(s->microbatch_us);
  memset(s, 0, sizeof *s);
}

/* A grid list: a non-empty array of strictly increasing numbers in [0, 1e6]. */
static hs_status_t read_grid(const hs_jreader_t *r, const cJSON *j, const char *key, double **out,
                             int32_t *n)
{
  const cJSON *a = NULL;
  int na = 0;
  hs_status_t st = hs_json_array(r, j, "", key, true, &a, &na);
  if (st != HS_OK)
    return st;
  if (na < 1 || na > 64)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: must list 1 to 64 values, got %d", r->file, key, na);
  *out = hs_calloc((size_t)na, sizeof **out);
  if (!*out)
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  int k = 0;
  for (const cJSON *e = a->child; e; e = e->next, k++) {
    double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    if (!(v >= 0.0 && v <= 1e6) || (k > 0 && !(v > (*out)[k - 1])))
      return hs_error_set(r->err, HS_EINVAL,
                          "%s: %s[%d]: must be microseconds in [0, 1e6], increasing, got %s", r->file,
                          key, k, cJSON_IsNumber(e) ? "a smaller or equal value" : "a non-number");
    (*out)[k] = v;
  }
  *n = na;
  return HS_OK;
}

hs_status_t hs_pub_fit_spec_parse(const char *text, const char *file, hs_pub_fit_spec_t *out,
                                  hs_error_t *err)
{
  static const char *const known[] = {"schema_version", "description", "train", "held_out",
                                      "dispatch_us", "microbatch_us", NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_jreader_t r = {file, err};
  memset(out, 0, sizeof *out);
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  int64_t ver = 0;
  HS_CHECK(hs_json_int(&r, j, "", "schema_version", true, 1, 1, 1, &ver));
  const cJSON *tr = NULL;
  int nt = 0;
  HS_CHECK(hs_json_array(&r, j, "", "train", true, &tr, &nt));
  if (nt < 1 || nt > 256)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: train: must name 1 to 256 tables, got %d", file, nt));
  out->train = hs_calloc((size_t)nt, sizeof *out->train);
  if (!out->train)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = tr->child; e; e = e->next) {
    if (!cJSON_IsString(e) || !e->valuestring[0] || strlen(e->valuestring) >= 64)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: train[%d]: must be a table name", file,
                           (int)out->n_train));
    for (int32_t k = 0; k < out->n_train; k++)
      if (strcmp(out->train[k], e->valuestring) == 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: train[%d]: \"%s\" is listed twice", file,
                             (int)out->n_train, e->valuestring));
    if (!(out->train[out->n_train] = strdup(e->valuestring)))
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    out->n_train++;
  }
  HS_CHECK(read_grid(&r, j, "dispatch_us", &out->dispatch_us, &out->n_dispatch));
  HS_CHECK(read_grid(&r, j, "microbatch_us", &out->microbatch_us, &out->n_microbatch));
cleanup:
  cJSON_Delete(j);
  if (st != HS_OK)
    hs_pub_fit_spec_destroy(out);
  return st;
}

bool hs_pub_fit_spec_trains(const hs_pub_fit_spec_t *s, const char *table)
{
  for (int32_t k = 0; k < s->n_train; k++)
    if (strcmp(s->train[k], table) == 0)
      return true;
  return false;
}

/* The family of a table: its rows' framework (the first row with one; a
 * table whose rows name two families is refused by the caller). */
static int table_family(const hs_pub_table_t *t, bool *mixed)
{
  int f = -1;
  *mixed = false;
  for (int32_t i = 0; i < t->n_rows; i++) {
    int g = hs_pub_family(t->rows[i].opt.framework.id);
    if (g < 0)
      continue;
    if (f >= 0 && g != f)
      *mixed = true;
    f = f < 0 ? g : f;
  }
  return f;
}

void hs_pub_set_host(hs_pub_table_t *t, double dispatch_us, const double *microbatch_us)
{
  for (int32_t i = 0; i < t->n_rows; i++) {
    hs_framework_t *fw = &t->rows[i].opt.framework;
    int f = hs_pub_family(fw->id);
    if (f < 0)
      continue;
    fw->dispatch_us = dispatch_us;
    fw->microbatch_us = microbatch_us[f];
  }
}

/* Tasks: one table at one (dispatch_us, microbatch_us) point, simulated on
 * a private copy of the table's row array (the row texts are shared and
 * only read), so tasks run in any order on any thread with the same
 * result. */
typedef struct cv_task {
  int32_t table;
  double dispatch_us, microbatch_us[HS_PUB_FAMILIES];
  double *out;                 /* the table's MAPE (NAN: nothing simulated) */
} cv_task_t;

typedef struct cv_work {
  const hs_pub_table_t *tables;
  const cv_task_t *tasks;
  int32_t n_tasks;
  int32_t next;                /* next task; under lock */
  pthread_mutex_t lock;
  hs_status_t st;              /* first failure, in task order */
  int32_t st_at;
  hs_error_t err;
} cv_work_t;

static hs_status_t run_task(const hs_pub_table_t *tables, const cv_task_t *k, hs_error_t *err)
{
  hs_pub_table_t copy = tables[k->table];
  copy.rows = hs_calloc((size_t)(copy.n_rows > 0 ? copy.n_rows : 1), sizeof *copy.rows);
  hs_pub_result_t *res = hs_calloc((size_t)(copy.n_rows > 0 ? copy.n_rows : 1), sizeof *res);
  hs_status_t st = HS_OK;
  if (!copy.rows || !res) {
    st = hs_error_set(err, HS_ENOMEM, "out of memory");
  } else {
    memcpy(copy.rows, tables[k->table].rows, (size_t)copy.n_rows * sizeof *copy.rows);
    hs_pub_set_host(&copy, k->dispatch_us, k->microbatch_us);
    hs_pub_summary_t sum;
    st = hs_pub_run(&copy, res, &sum, err);
    if (st == HS_OK)
      *k->out = sum.n_simulated > 0 ? sum.mape : NAN;
  }
  free(res);
  free(copy.rows);
  return st;
}

static void *cv_worker(void *arg)
{
  cv_work_t *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->lock);
    int32_t k = w->next < w->n_tasks && w->st == HS_OK ? w->next++ : -1;
    pthread_mutex_unlock(&w->lock);
    if (k < 0)
      return NULL;
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_status_t st = run_task(w->tables, &w->tasks[k], &err);
    if (st != HS_OK) {
      pthread_mutex_lock(&w->lock);
      if (w->st == HS_OK || k < w->st_at) {
        w->st = st;
        w->st_at = k;
        w->err = err;
      }
      pthread_mutex_unlock(&w->lock);
    }
  }
}

/* Runs the tasks on `jobs` threads (the caller's among them). */
static hs_status_t run_tasks(const hs_pub_table_t *tables, const cv_task_t *tasks, int32_t n,
                             int32_t jobs, hs_error_t *err)
{
  cv_work_t w;
  memset(&w, 0, sizeof w);
  w.tables = tables;
  w.tasks = tasks;
  w.n_tasks = n;
  pthread_mutex_init(&w.lock, NULL);
  hs_error_init(&w.err);
  int32_t nthreads = HS_MIN(HS_MAX(jobs, 1), HS_MAX(n, 1));
  pthread_t th[64];
  int32_t started = 0;
  for (int32_t i = 1; i < nthreads && started < 64; i++)
    if (pthread_create(&th[started], NULL, cv_worker, &w) == 0)
      started++;
  cv_worker(&w);
  for (int32_t i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&w.lock);
  if (w.st != HS_OK) {
    hs_error_set(err, w.st, "%s", w.err.msg);
    return w.st;
  }
  return HS_OK;
}

hs_status_t hs_pub_run_at(const hs_pub_table_t *tables, int32_t n_tables, const bool *which,
                          double dispatch_us, const double *microbatch_us, int32_t jobs,
                          double *mape, hs_error_t *err)
{
  cv_task_t *tasks = hs_calloc((size_t)(n_tables > 0 ? n_tables : 1), sizeof *tasks);
  if (!tasks)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  int32_t n = 0;
  for (int32_t t = 0; t < n_tables; t++) {
    if (!which[t])
      continue;
    cv_task_t *k = &tasks[n++];
    k->table = t;
    k->dispatch_us = dispatch_us;
    memcpy(k->microbatch_us, microbatch_us, sizeof k->microbatch_us);
    k->out = &mape[t];
  }
  hs_status_t st = run_tasks(tables, tasks, n, jobs, err);
  free(tasks);
  return st;
}

/* Families and splits; NULL-free checks of the spec against the tables. */
static hs_status_t cv_setup(const hs_pub_table_t *tables, int32_t n_tables,
                            const hs_pub_fit_spec_t *s, hs_pub_cv_t *cv, hs_error_t *err)
{
  int32_t nd = s->n_dispatch, nm = s->n_microbatch;
  cv->n_tables = n_tables;
  cv->n_dispatch = nd;
  cv->n_microbatch = nm;
  cv->family = hs_calloc((size_t)(n_tables > 0 ? n_tables : 1), sizeof *cv->family);
  cv->train = hs_calloc((size_t)(n_tables > 0 ? n_tables : 1), sizeof *cv->train);
  cv->mape = hs_calloc((size_t)(n_tables > 0 ? n_tables : 1) * nd * nm, sizeof *cv->mape);
  if (!cv->family || !cv->train || !cv->mape)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  for (int32_t t = 0; t < n_tables; t++) {
    bool mixed = false;
    cv->family[t] = table_family(&tables[t], &mixed);
    cv->train[t] = hs_pub_fit_spec_trains(s, tables[t].name);
    if (mixed)
      return hs_error_set(err, HS_EINVAL, "%s: rows name frameworks of two engine families; "
                          "a fitted table must be one family", tables[t].file);
  }
  for (int32_t k = 0; k < s->n_train; k++) {
    bool found = false;
    for (int32_t t = 0; t < n_tables && !found; t++)
      found = strcmp(tables[t].name, s->train[k]) == 0;
    if (!found)
      return hs_error_set(err, HS_EINVAL, "fit: train: table \"%s\" is not in the suite", s->train[k]);
  }
  return HS_OK;
}

hs_status_t hs_pub_cv_eval(const hs_pub_table_t *tables, int32_t n_tables, const hs_pub_fit_spec_t *s,
                           int32_t jobs, hs_pub_cv_t *cv, hs_error_t *err)
{
  memset(cv, 0, sizeof *cv);
  hs_status_t st = cv_setup(tables, n_tables, s, cv, err);
  if (st != HS_OK)
    return st;
  int32_t nd = s->n_dispatch, nm = s->n_microbatch, cells = n_tables * nd * nm;
  cv_task_t *tasks = hs_calloc((size_t)(cells > 0 ? cells : 1), sizeof *tasks);
  if (!tasks)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  /* held-out tables: NAN here (the caller simulates them at the fit);
   * a training table that does not depend on the parameters: one cell */
  int32_t n = 0;
  for (int32_t c = 0; c < cells; c++) {
    int32_t t = c / (nd * nm), a = c / nm % nd, b = c % nm;
    cv->mape[c] = NAN;
    if (!cv->train[t] || (cv->family[t] < 0 && c % (nd * nm) != 0))
      continue;
    cv_task_t *k = &tasks[n++];
    k->table = t;
    k->dispatch_us = s->dispatch_us[a];
    for (int f = 0; f < HS_PUB_FAMILIES; f++)
      k->microbatch_us[f] = s->microbatch_us[b];
    k->out = &cv->mape[c];
  }
  st = run_tasks(tables, tasks, n, jobs, err);
  free(tasks);
  if (st != HS_OK)
    return st;
  for (int32_t c = 0; c < cells; c++) {
    int32_t t = c / (nd * nm);
    if (cv->train[t] && cv->family[t] < 0)
      cv->mape[c] = cv->mape[(size_t)t * nd * nm];
  }
  return HS_OK;
}

void hs_pub_cv_destroy(hs_pub_cv_t *cv)
{
  if (!cv)
    return;
  free(cv->family);
  free(cv->train);
  free(cv->mape);
  memset(cv, 0, sizeof *cv);
}

/* MAPE of table t at grid point (a, b). */
static double cell(const hs_pub_cv_t *cv, int32_t t, int32_t a, int32_t b)
{
  return cv->mape[((size_t)t * cv->n_dispatch + a) * cv->n_microbatch + b];
}

void hs_pub_cv_fit(const hs_pub_cv_t *cv, int32_t leave_out, hs_pub_fit_t *out)
{
  memset(out, 0, sizeof *out);
  double best = INFINITY;
  int32_t used = 0;
  for (int32_t t = 0; t < cv->n_tables; t++)
    used += cv->train[t] && t != leave_out && isfinite(cell(cv, t, 0, 0));
  for (int32_t a = 0; a < cv->n_dispatch; a++) {
    double total = 0.0;
    int32_t pick[HS_PUB_FAMILIES] = {0};
    for (int f = -1; f < HS_PUB_FAMILIES; f++) {
      double fbest = INFINITY;
      for (int32_t b = 0; b < cv->n_microbatch; b++) {
        double sum = 0.0;
        for (int32_t t = 0; t < cv->n_tables; t++)
          if (cv->train[t] && t != leave_out && cv->family[t] == f && isfinite(cell(cv, t, a, b)))
            sum += cell(cv, t, a, b);
        if (sum < fbest) { /* strict: ties keep the smaller m */
          fbest = sum;
          if (f >= 0)
            pick[f] = b;
        }
        if (f < 0)
          break; /* no family: m does not apply */
      }
      total += fbest;
    }
    if (total < best) {
      best = total;
      out->dispatch_idx = a;
      memcpy(out->microbatch_idx, pick, sizeof pick);
    }
  }
  out->objective = used > 0 ? best / used : NAN;
  out->n_tables = used;
}

double hs_pub_cv_table_mape(const hs_pub_cv_t *cv, int32_t t, const hs_pub_fit_t *fit)
{
  int f = cv->family[t];
  return cell(cv, t, fit->dispatch_idx, f >= 0 ? fit->microbatch_idx[f] : 0);
}
