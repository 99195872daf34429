/*
 * lp.c - GLPK adapter (see lp.h for the contract).
 *
 * Representation: columns (bounds, objective, integrality) and rows (bounds
 * plus a slice of one shared coordinate list) in growable 0-based arrays.
 * hs_lp_solve translates to GLPK's 1-based API inside solve_glpk(), which is
 * the only function of hetsim that calls GLPK. Invariant: no glp_prob exists
 * outside solve_glpk(), so recovering from a GLPK error with glp_free_env()
 * cannot invalidate anybody else's object.
 *
 * GLPK's process-global state touched here, and how it is contained:
 *  - glp_error_hook: set on entry to solve_glpk to a hook that longjmps to a
 *    jmp_buf on solve_glpk's stack, reset to NULL before it returns;
 *  - glp_term_out: switched off on entry (GLPK otherwise prints to stdout).
 * Both live in GLPK's environment, which is per thread in a GLPK built with
 * thread-local storage (glp_config("TLS") names the keyword; Debian's 5.0
 * says "_Thread_local") and per process otherwise. glpk_enter() asks once
 * (pthread_once): with TLS, solves on several threads are independent and
 * take no lock, and each thread's environment is freed when the thread
 * exits (a pthread key's destructor calls glp_free_env there), so threads
 * that come and go leak nothing; without TLS, every solve_glpk runs under
 * one process-wide mutex. This is the only file that may call GLPK.
 */
#include "lp.h"
#include "search_internal.h"

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct lp_col {
  double lb, ub, obj;
  bool integer;
} lp_col_t;

typedef struct lp_row {
  double lb, ub;
  size_t first;   /* into idx/val */
  int32_t n;
} lp_row_t;

struct hs_lp {
  bool minimise;
  lp_col_t *cols;
  size_t n_cols, cap_cols;
  lp_row_t *rows;
  size_t n_rows, cap_rows;
  int32_t *idx;
  double *val;
  size_t n_nz, cap_idx, cap_val;
  double *x;      /* last solution, n_cols entries (NULL before a solve) */
  size_t cap_x;
  bool has_x;
};

const char *hs_lp_status_name(hs_lp_status_t s)
{
  switch (s) {
  case HS_LP_OPTIMAL: return "optimal";
  case HS_LP_OPTIMAL_GAP: return "optimal-within-gap";
  case HS_LP_FEASIBLE: return "feasible";
  case HS_LP_INFEASIBLE: return "infeasible";
  case HS_LP_UNBOUNDED: return "unbounded";
  case HS_LP_NO_SOLUTION: return "no-solution";
  }
  return "?";
}

void hs_lp_opts_init(hs_lp_opts_t *o)
{
  o->time_limit_s = 0.0;
  o->work_limit = 0.0;
  o->mip_gap = 1e-4;
}

hs_status_t hs_lp_new(bool minimise, hs_lp_t **out)
{
  hs_lp_t *lp = hs_calloc(1, sizeof *lp);
  *out = lp;
  if (!lp)
    return HS_ENOMEM;
  lp->minimise = minimise;
  return HS_OK;
}

void hs_lp_free(hs_lp_t *lp)
{
  if (!lp)
    return;
  free(lp->cols);
  free(lp->rows);
  free(lp->idx);
  free(lp->val);
  free(lp->x);
  free(lp);
}

int32_t hs_lp_n_cols(const hs_lp_t *lp) { return (int32_t)lp->n_cols; }
int32_t hs_lp_n_rows(const hs_lp_t *lp) { return (int32_t)lp->n_rows; }

hs_status_t hs_lp_add_col(hs_lp_t *lp, double lb, double ub, double obj, bool integer,
                          int32_t *col)
{
  if (!lp || isnan(lb) || isnan(ub) || isnan(obj) || !isfinite(obj) || lb > ub ||
      lb == INFINITY || ub == -INFINITY)
    return HS_EINVAL;
  if (lp->n_cols >= INT_MAX - 1)
    return HS_ELIMIT;
  if (hs_reserve((void **)&lp->cols, &lp->cap_cols, lp->n_cols + 1, sizeof *lp->cols) != HS_OK)
    return HS_ENOMEM;
  lp->cols[lp->n_cols] = (lp_col_t){.lb = lb, .ub = ub, .obj = obj, .integer = integer};
  if (col)
    *col = (int32_t)lp->n_cols;
  lp->n_cols++;
  lp->has_x = false;
  return HS_OK;
}

hs_status_t hs_lp_add_row(hs_lp_t *lp, int32_t n, const int32_t *idx, const double *val,
                          double lb, double ub, hs_error_t *err)
{
  if (!lp || n < 0 || (n > 0 && (!idx || !val)))
    return hs_error_set(err, HS_EINVAL, "lp: row %zu: bad arguments", lp ? lp->n_rows : 0);
  if (isnan(lb) || isnan(ub) || lb > ub || lb == INFINITY || ub == -INFINITY)
    return hs_error_set(err, HS_EINVAL, "lp: row %zu: bad bounds [%g, %g]", lp->n_rows, lb, ub);
  if (lp->n_rows >= INT_MAX - 1 || lp->n_nz + (size_t)n >= INT_MAX - 1)
    return hs_error_set(err, HS_ELIMIT, "lp: problem too large");
  for (int32_t k = 0; k < n; k++) {
    if (idx[k] < 0 || (size_t)idx[k] >= lp->n_cols)
      return hs_error_set(err, HS_EINVAL, "lp: row %zu: entry %d: column %d does not exist (%zu columns)",
                          lp->n_rows, k, idx[k], lp->n_cols);
    if (!isfinite(val[k]))
      return hs_error_set(err, HS_EINVAL, "lp: row %zu: entry %d: coefficient %g", lp->n_rows, k,
                          val[k]);
    for (int32_t j = 0; j < k; j++)
      if (idx[j] == idx[k])
        return hs_error_set(err, HS_EINVAL, "lp: row %zu: column %d appears twice", lp->n_rows,
                            idx[k]);
  }
  if (hs_reserve((void **)&lp->rows, &lp->cap_rows, lp->n_rows + 1, sizeof *lp->rows) != HS_OK ||
      hs_reserve((void **)&lp->idx, &lp->cap_idx, lp->n_nz + (size_t)n, sizeof *lp->idx) != HS_OK ||
      hs_reserve((void **)&lp->val, &lp->cap_val, lp->n_nz + (size_t)n, sizeof *lp->val) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "lp: out of memory");
  lp_row_t *r = &lp->rows[lp->n_rows];
  r->lb = lb;
  r->ub = ub;
  r->first = lp->n_nz;
  r->n = 0;
  for (int32_t k = 0; k < n; k++) {
    if (val[k] == 0.0)
      continue;
    lp->idx[lp->n_nz] = idx[k];
    lp->val[lp->n_nz] = val[k];
    lp->n_nz++;
    r->n++;
  }
  lp->n_rows++;
  lp->has_x = false;
  return HS_OK;
}

double hs_lp_value(const hs_lp_t *lp, int32_t col)
{
  if (!lp || !lp->has_x || col < 0 || (size_t)col >= lp->n_cols)
    return 0.0;
  return lp->x[col];
}

/* ---- the GLPK side --------------------------------------------------------- */

typedef struct glpk_ctx {
  jmp_buf jb;
  double last_gap;  /* from the branch-and-cut callback; NaN until known */
  double deadline_s; /* hs__now_s() after which the callback stops the search; 0 = none */
  double work_limit; /* hs_lp_opts_t.work_limit; 0 = none */
  double rows, nnz;
  int64_t nodes;     /* branch-and-cut subproblems selected */
  bool stopped;      /* the callback terminated the search */
} glpk_ctx_t;

static void on_glpk_error(void *info)
{
  glpk_ctx_t *ctx = info;
  longjmp(ctx->jb, 1);
}

static double work_done(const glpk_ctx_t *ctx, int iterations)
{
  return (double)iterations * ctx->rows + HS_LP_NODE_WORK * (double)ctx->nodes * ctx->nnz;
}

static void on_mip_event(glp_tree *tree, void *info)
{
  glpk_ctx_t *ctx = info;
  int r = glp_ios_reason(tree);
  if (r == GLP_ISELECT)
    ctx->nodes++;
  if (r == GLP_IBINGO || r == GLP_ISELECT) {
    double g = glp_ios_mip_gap(tree);
    if (isfinite(g))
      ctx->last_gap = g;
  }
  /* GLPK checks tm_lim only between subproblems; cut generation and the
   * heuristics in between can run far past it on large models, so the
   * deadline is also enforced here, at every callback. */
  if (ctx->stopped)
    return;
  bool work_out = ctx->work_limit > 0 &&
                  work_done(ctx, glp_get_it_cnt(glp_ios_get_prob(tree))) >= ctx->work_limit;
  if (work_out || (ctx->deadline_s > 0.0 && hs__now_s() > ctx->deadline_s)) {
    ctx->stopped = true;
    glp_ios_terminate(tree);
  }
}

static int bound_type(double lb, double ub)
{
  bool l = isfinite(lb), u = isfinite(ub);
  if (l && u)
    return lb == ub ? GLP_FX : GLP_DB;
  if (l)
    return GLP_LO;
  if (u)
    return GLP_UP;
  return GLP_FR;
}

/* The simplex iteration limit that spends `work` units on an LP of `rows`. */
static int it_limit_glpk(double work, double rows)
{
  if (!(work > 0.0))
    return INT_MAX;
  double it = ceil(work / fmax(rows, 1.0));
  return it < (double)INT_MAX ? (int)it : INT_MAX;
}

static int time_limit_ms(double s)
{
  if (!(s > 0.0))
    return INT_MAX;
  double ms = ceil(s * 1000.0);
  return ms >= (double)INT_MAX ? INT_MAX : (int)ms;
}

static pthread_once_t glpk_once = PTHREAD_ONCE_INIT;
static bool glpk_tls;             /* written once, under glpk_once */
static bool glpk_key_ok;          /* the same */
static pthread_key_t glpk_key;
static pthread_mutex_t glpk_mu = PTHREAD_MUTEX_INITIALIZER;

static void glpk_thread_exit(void *unused)
{
  (void)unused;
  glp_free_env();
}

static void glpk_lock(void) { pthread_mutex_lock(&glpk_mu); }
static void glpk_unlock(void) { pthread_mutex_unlock(&glpk_mu); }

static void glpk_setup(void)
{
  glpk_tls = glp_config("TLS") != NULL;
  glpk_key_ok = glpk_tls && pthread_key_create(&glpk_key, glpk_thread_exit) == 0;
  if (!glpk_tls) /* a child forked mid-solve (fork_map.c) must not inherit the lock held */
    (void)pthread_atfork(glpk_lock, glpk_unlock, glpk_unlock);
}

/* Makes this thread's solve safe against the others' (see the header). */
static void glpk_enter(void)
{
  pthread_once(&glpk_once, glpk_setup);
  if (!glpk_tls)
    glpk_lock();
  else if (glpk_key_ok)
    (void)pthread_setspecific(glpk_key, &glpk_key); /* any non-NULL value arms the destructor */
}

static void glpk_leave(void)
{
  if (!glpk_tls)
    glpk_unlock();
}

/* Loads lp into the empty GLPK problem `prob`: direction, row and column
 * bounds, objective, integer columns, and the matrix through the caller's
 * 1-based ia/ja/ar (lp->n_nz + 1 entries each). */
static void load_problem(glp_prob *prob, const hs_lp_t *lp, int *ia, int *ja, double *ar)
{
  glp_set_obj_dir(prob, lp->minimise ? GLP_MIN : GLP_MAX);
  if (lp->n_rows)
    glp_add_rows(prob, (int)lp->n_rows);
  if (lp->n_cols)
    glp_add_cols(prob, (int)lp->n_cols);
  for (size_t i = 0; i < lp->n_rows; i++) {
    const lp_row_t *r = &lp->rows[i];
    glp_set_row_bnds(prob, (int)i + 1, bound_type(r->lb, r->ub), isfinite(r->lb) ? r->lb : 0.0,
                     isfinite(r->ub) ? r->ub : 0.0);
  }
  for (size_t j = 0; j < lp->n_cols; j++) {
    const lp_col_t *c = &lp->cols[j];
    glp_set_col_bnds(prob, (int)j + 1, bound_type(c->lb, c->ub), isfinite(c->lb) ? c->lb : 0.0,
                     isfinite(c->ub) ? c->ub : 0.0);
    glp_set_obj_coef(prob, (int)j + 1, c->obj);
    if (c->integer)
      glp_set_col_kind(prob, (int)j + 1, GLP_IV);
  }
  size_t k = 0;
  for (size_t i = 0; i < lp->n_rows; i++)
    for (int32_t q = 0; q < lp->rows[i].n; q++, k++) {
      ia[k + 1] = (int)i + 1;
      ja[k + 1] = lp->idx[lp->rows[i].first + (size_t)q] + 1;
      ar[k + 1] = lp->val[lp->rows[i].first + (size_t)q];
    }
  if (k)
    glp_load_matrix(prob, (int)k, ia, ja, ar);
}

/* Solves the loaded LP with the simplex under the time and work limits
 * (no presolve, so infeasible problems keep their exact status); fills
 * res's status, iterations, work and objective, and lp->x when a solution
 * (or, with none, the relaxation GLPK left) is there. HS_EINTERNAL when
 * GLPK fails for another reason than a limit. */
static hs_status_t solve_simplex(glp_prob *prob, hs_lp_t *lp, const hs_lp_opts_t *o,
                                 glpk_ctx_t *ctx, hs_lp_result_t *res, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  glp_smcp sm;
  glp_init_smcp(&sm);
  sm.msg_lev = GLP_MSG_OFF;
  sm.tm_lim = time_limit_ms(o->time_limit_s);
  sm.it_lim = it_limit_glpk(o->work_limit, ctx->rows);
  sm.presolve = GLP_OFF; /* keeps the status of infeasible problems exact */
  int ret = glp_simplex(prob, &sm);
  res->iterations = glp_get_it_cnt(prob);
  res->work = work_done(ctx, (int)res->iterations);
  res->time_limit_hit = ret == GLP_ETMLIM || ret == GLP_EITLIM;
  if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_EITLIM) {
    st = hs_error_set(err, HS_EINTERNAL, "lp: simplex failed (GLPK code %d)", ret);
  } else {
    switch (glp_get_status(prob)) {
    case GLP_OPT: res->status = HS_LP_OPTIMAL; break;
    case GLP_FEAS: res->status = HS_LP_FEASIBLE; break;
    case GLP_NOFEAS: res->status = HS_LP_INFEASIBLE; break;
    case GLP_UNBND: res->status = HS_LP_UNBOUNDED; break;
    default: res->status = HS_LP_NO_SOLUTION; break;
    }
    if (res->status == HS_LP_NO_SOLUTION) {
      res->relaxed = true; /* lp->x still holds the root relaxation */
      lp->has_x = true;
    }
    if (res->status == HS_LP_OPTIMAL || res->status == HS_LP_FEASIBLE) {
      res->objective = glp_get_obj_val(prob);
      for (size_t j = 0; j < lp->n_cols; j++)
        lp->x[j] = glp_get_col_prim(prob, (int)j + 1);
      lp->has_x = true;
    }
  }
  return st;
}

/* The root LP of a MILP, under the time limit: glp_intopt's own presolver
 * solves it with no time limit at all, which on big models ran 100x past
 * the budget (bench_search, 64 GPUs). Returns HS_OK with *go set when the
 * root is optimal (lp->x then holds it) and branch-and-cut may follow;
 * otherwise res->status says why not (limit, infeasible, unbounded).
 * HS_EINTERNAL when GLPK fails. */
static hs_status_t solve_root(glp_prob *prob, hs_lp_t *lp, const hs_lp_opts_t *o,
                              glpk_ctx_t *ctx, hs_lp_result_t *res, bool *go, hs_error_t *err)
{
  *go = false;
  glp_smcp sm;
  glp_init_smcp(&sm);
  sm.msg_lev = GLP_MSG_OFF;
  sm.tm_lim = time_limit_ms(o->time_limit_s);
  sm.it_lim = it_limit_glpk(o->work_limit, ctx->rows);
  sm.presolve = GLP_OFF;
  glp_scale_prob(prob, GLP_SF_AUTO); /* big-M rows span many magnitudes */
  glp_adv_basis(prob, 0);
  int rr = glp_simplex(prob, &sm);
  int root = glp_get_status(prob);
  res->iterations = glp_get_it_cnt(prob);
  res->work = work_done(ctx, (int)res->iterations);
  if (rr == GLP_ETMLIM || rr == GLP_EITLIM ||
      (rr == 0 && root != GLP_OPT && root != GLP_NOFEAS && root != GLP_UNBND)) {
    res->time_limit_hit = rr == GLP_ETMLIM || rr == GLP_EITLIM;
    res->status = HS_LP_NO_SOLUTION;
    return HS_OK;
  }
  if (rr != 0)
    return hs_error_set(err, HS_EINTERNAL, "lp: root relaxation failed (GLPK code %d)", rr);
  if (root == GLP_NOFEAS) {
    res->status = HS_LP_INFEASIBLE;
    return HS_OK;
  }
  if (root == GLP_UNBND) {
    res->status = HS_LP_UNBOUNDED;
    return HS_OK;
  }
  for (size_t j = 0; j < lp->n_cols; j++)
    lp->x[j] = glp_get_col_prim(prob, (int)j + 1);
  *go = true;
  return HS_OK;
}

/* Solves the loaded MILP: the root LP (solve_root), then branch-and-cut in
 * the time left, stopped by on_mip_event at the deadline or work limit.
 * Fills res (status, gap, nodes, iterations, work, objective) and lp->x as
 * solve_simplex does. HS_EINTERNAL when GLPK fails for another reason than
 * a limit or the gap. */
static hs_status_t solve_mip(glp_prob *prob, hs_lp_t *lp, const hs_lp_opts_t *o, glpk_ctx_t *ctx,
                             hs_lp_result_t *res, hs_error_t *err)
{
  bool go = false;
  hs_status_t st = solve_root(prob, lp, o, ctx, res, &go, err);
  if (st != HS_OK || !go)
    return st;
  double spent_s = hs__now_s() - (ctx->deadline_s - o->time_limit_s);
  glp_iocp io;
  glp_init_iocp(&io);
  io.msg_lev = GLP_MSG_OFF;
  io.presolve = GLP_OFF; /* the root LP is solved above */
  io.tm_lim = o->time_limit_s > 0.0 ? time_limit_ms(fmax(1e-3, o->time_limit_s - spent_s))
                                    : time_limit_ms(0.0);
  io.mip_gap = o->mip_gap > 0.0 ? o->mip_gap : 0.0;
  /* most fractional variable: GLPK's default (Driebeck-Tomlin) prices
   * every candidate with a tableau row per node, 14% of a compare's
   * instructions in glp_eval_tab_row; MFV found the same autohet plans on
   * every case measured (docs/autohet.md, "Branching") for 25-28% less CPU */
  io.br_tech = GLP_BR_MFV;
  io.cb_func = on_mip_event;
  io.cb_info = ctx;
  int ret = glp_intopt(prob, &io);
  res->iterations = glp_get_it_cnt(prob);
  res->nodes = ctx->nodes;
  res->work = work_done(ctx, (int)res->iterations);
  if (ret == GLP_ESTOP)
    ret = GLP_ETMLIM; /* stopped by our deadline or work limit: same meaning */
  res->time_limit_hit = ret == GLP_ETMLIM;
  if (ret == GLP_ENOPFS) {
    res->status = HS_LP_INFEASIBLE;
  } else if (ret == GLP_ENODFS) {
    res->status = HS_LP_UNBOUNDED;
  } else if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_EMIPGAP) {
    st = hs_error_set(err, HS_EINTERNAL, "lp: branch-and-cut failed (GLPK code %d)", ret);
  } else {
    switch (glp_mip_status(prob)) {
    case GLP_OPT:
      res->status = ret == GLP_EMIPGAP ? HS_LP_OPTIMAL_GAP : HS_LP_OPTIMAL;
      break;
    case GLP_FEAS:
      res->status = ret == GLP_EMIPGAP ? HS_LP_OPTIMAL_GAP : HS_LP_FEASIBLE;
      break;
    case GLP_NOFEAS: res->status = HS_LP_INFEASIBLE; break;
    default: res->status = HS_LP_NO_SOLUTION; break;
    }
    if (res->status == HS_LP_NO_SOLUTION) {
      res->relaxed = true; /* lp->x still holds the root relaxation */
      lp->has_x = true;
    }
    if (res->status == HS_LP_OPTIMAL || res->status == HS_LP_OPTIMAL_GAP ||
        res->status == HS_LP_FEASIBLE) {
      res->objective = glp_mip_obj_val(prob);
      res->gap = res->status == HS_LP_OPTIMAL ? 0.0 : ctx->last_gap;
      for (size_t j = 0; j < lp->n_cols; j++)
        lp->x[j] = glp_mip_col_val(prob, (int)j + 1);
      lp->has_x = true;
    }
  }
  return st;
}

/* Everything GLPK. The arrays it needs (1-based) are allocated by the caller
 * so that a longjmp out of GLPK leaks nothing of ours. `prob` is volatile
 * because it is assigned between setjmp and a possible longjmp; the steps
 * (load_problem, solve_simplex, solve_mip) run inside this frame, so GLPK's
 * error hook can jump back here from any of them. */
static hs_status_t solve_glpk(hs_lp_t *lp, const hs_lp_opts_t *o, bool is_mip, int *ia, int *ja,
                              double *ar, hs_lp_result_t *res, hs_error_t *err)
{
  glpk_ctx_t ctx;
  ctx.last_gap = NAN;
  ctx.deadline_s = o->time_limit_s > 0.0 ? hs__now_s() + o->time_limit_s : 0.0;
  ctx.work_limit = o->work_limit;
  ctx.rows = (double)HS_MAX((size_t)1, lp->n_rows);
  ctx.nnz = (double)lp->n_nz;
  ctx.nodes = 0;
  ctx.stopped = false;
  glp_prob *volatile prob = NULL;
  res->is_mip = is_mip;

  if (setjmp(ctx.jb)) {
    /* GLPK hit an internal error: its state is undefined; free it all. */
    glp_error_hook(NULL, NULL);
    glp_free_env();
    return hs_error_set(err, HS_EINTERNAL, "lp: GLPK internal error (%zu rows, %zu columns)",
                        lp->n_rows, lp->n_cols);
  }
  glp_error_hook(on_glpk_error, &ctx);
  glp_term_out(GLP_OFF);

  prob = glp_create_prob();
  load_problem(prob, lp, ia, ja, ar);
  res->status = HS_LP_NO_SOLUTION;
  res->objective = NAN;
  res->gap = NAN;
  res->time_limit_hit = false;
  hs_status_t st = is_mip ? solve_mip(prob, lp, o, &ctx, res, err)
                          : solve_simplex(prob, lp, o, &ctx, res, err);
  glp_delete_prob(prob);
  prob = NULL;
  glp_error_hook(NULL, NULL);
  return st;
}

hs_status_t hs_lp_solve(hs_lp_t *lp, const hs_lp_opts_t *opts, hs_lp_result_t *res,
                        hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int *ia = NULL, *ja = NULL;
  double *ar = NULL;
  hs_lp_opts_t o;
  hs_lp_opts_init(&o);
  if (opts)
    o = *opts;
  memset(res, 0, sizeof *res);
  res->objective = NAN;
  res->gap = NAN;
  res->status = HS_LP_NO_SOLUTION;
  if (!lp)
    return hs_error_set(err, HS_EINVAL, "lp: no problem");
  if (isnan(o.time_limit_s) || o.time_limit_s < 0 || isnan(o.mip_gap) || o.mip_gap < 0 ||
      isnan(o.work_limit) || o.work_limit < 0)
    return hs_error_set(err, HS_EINVAL, "lp: bad options (time limit %g s, work limit %g, gap %g)",
                        o.time_limit_s, o.work_limit, o.mip_gap);
  lp->has_x = false;
  if (lp->n_cols == 0) {
    /* GLPK rejects empty problems in places; the answer is trivial. */
    for (size_t i = 0; i < lp->n_rows; i++)
      if (lp->rows[i].lb > 0.0 || lp->rows[i].ub < 0.0) {
        res->status = HS_LP_INFEASIBLE;
        return HS_OK;
      }
    res->status = HS_LP_OPTIMAL;
    res->objective = 0.0;
    res->gap = 0.0;
    return HS_OK;
  }
  ia = hs_calloc(lp->n_nz + 1, sizeof *ia);
  ja = hs_calloc(lp->n_nz + 1, sizeof *ja);
  ar = hs_calloc(lp->n_nz + 1, sizeof *ar);
  if (!ia || !ja || !ar ||
      hs_reserve((void **)&lp->x, &lp->cap_x, lp->n_cols, sizeof *lp->x) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "lp: out of memory"));
  bool is_mip = false;
  for (size_t j = 0; j < lp->n_cols; j++)
    is_mip |= lp->cols[j].integer;
  glpk_enter();
  st = solve_glpk(lp, &o, is_mip, ia, ja, ar, res, err);
  glpk_leave();
cleanup:
  free(ia);
  free(ja);
  free(ar);
  return st;
}
