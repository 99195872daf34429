/*
 * lp.h - the one adapter between hetsim and GLPK (STYLE rule 5).
 *
 * A problem is built in hetsim's own arrays with 0-based column and row
 * indexes (hs_lp_add_col / hs_lp_add_row), then hs_lp_solve creates the GLPK
 * object, solves it (simplex for pure LPs, branch-and-cut with presolve for
 * MILPs), copies the solution out and deletes the GLPK object before it
 * returns. No GLPK object outlives a call, which is what makes the error hook
 * safe: GLPK's error hook is process-global (per thread where GLPK was built
 * with thread-local storage), so lp.c installs it around every solve with a
 * context on the solver's stack; on a GLPK internal error the hook longjmps
 * back, lp.c calls glp_free_env() (the only way GLPK allows recovery; it
 * frees every GLPK object of the thread, of which there is only ours), and
 * the call returns HS_EINTERNAL instead of aborting the process. Terminal
 * output is switched off (glp_term_out(GLP_OFF)) inside the same call.
 *
 * Two outcomes are kept apart, as GLPK does: the *solver outcome* is the
 * returned hs_status_t (HS_OK when the solver ran to one of its normal
 * stops, HS_EINVAL for a malformed problem, HS_ENOMEM, HS_EINTERNAL when
 * GLPK failed), and the *solution status* (hs_lp_result_t.status) says what
 * the solution is: optimal, optimal within the requested MIP gap, feasible
 * but not proven (time limit), infeasible, unbounded, or none found.
 *
 * Ownership: hs_lp_new allocates, hs_lp_free releases (NULL ok). Not thread
 * safe per object; different objects may be solved on different threads at
 * once: in parallel when GLPK was built with thread-local environments
 * (glp_config("TLS"); Debian/Ubuntu builds are), one at a time under a
 * process-wide mutex otherwise (lp.c).
 */
#ifndef HS_LP_H
#define HS_LP_H

#include "hs_common.h"

typedef struct hs_lp hs_lp_t;

typedef enum {
  HS_LP_OPTIMAL,        /* proven optimal */
  HS_LP_OPTIMAL_GAP,    /* MILP stopped at the requested relative gap */
  HS_LP_FEASIBLE,       /* a solution, not proven optimal (time limit) */
  HS_LP_INFEASIBLE,     /* proven to have no feasible solution */
  HS_LP_UNBOUNDED,      /* objective unbounded */
  HS_LP_NO_SOLUTION     /* stopped (time limit) before finding any solution */
} hs_lp_status_t;

/* "optimal", "optimal-within-gap", "feasible", "infeasible", "unbounded",
 * "no-solution". */
const char *hs_lp_status_name(hs_lp_status_t s);

#define HS_LP_NODE_WORK 2.5

typedef struct hs_lp_opts {
  double time_limit_s;  /* wall-clock limit of one solve; 0 = none */
  /* Work limit in deterministic units, 0 = none: simplex iterations times
   * rows plus HS_LP_NODE_WORK times nonzeros per branch-and-cut subproblem
   * (the two terms fitted to GLPK's time on autohet's MILPs: 1e7 units took
   * about 1 s on the 2-core build machine, +-50% per solve). Unlike a time
   * limit, it stops a solve at the same point on a loaded machine as on an
   * idle one. GLPK is asked between subproblems, so one subproblem may go
   * past it. */
  double work_limit;
  double mip_gap;       /* relative gap at which branch-and-cut stops (0 = prove optimality) */
} hs_lp_opts_t;

/* Defaults: no time limit, gap 1e-4. */
void hs_lp_opts_init(hs_lp_opts_t *o);

typedef struct hs_lp_result {
  hs_lp_status_t status;
  double objective;     /* of the solution; NaN when there is none */
  double gap;           /* relative gap of a MILP solution when known (0 when proven), else NaN */
  bool time_limit_hit;  /* stopped by time_limit_s or work_limit */
  int64_t iterations;   /* simplex iterations spent, root and subproblems */
  int64_t nodes;        /* branch-and-cut subproblems (0 for an LP) */
  double work;          /* in work_limit's units */
  bool is_mip;
  /* MILP stopped (time limit) before any integer solution: the column
   * values (hs_lp_value) are then the root LP relaxation's, for callers
   * that round them into a heuristic solution; status stays NO_SOLUTION. */
  bool relaxed;
} hs_lp_result_t;

/* Minimisation (true) or maximisation. O(1). */
hs_status_t hs_lp_new(bool minimise, hs_lp_t **out);
void hs_lp_free(hs_lp_t *lp);

/* Adds a column with bounds [lb, ub] (-INFINITY / INFINITY for free sides),
 * objective coefficient `obj`, integer when `integer`. Writes its 0-based
 * index to *col (may be NULL). HS_EINVAL for NaN or lb > ub. Amortised O(1). */
hs_status_t hs_lp_add_col(hs_lp_t *lp, double lb, double ub, double obj, bool integer,
                          int32_t *col);
/* Adds the row lb <= sum_k val[k] x[idx[k]] <= ub (either side may be
 * infinite; lb == ub is an equality). Indexes are 0-based columns that exist;
 * a column may appear once. Zero coefficients are dropped. HS_EINVAL names
 * the bad entry. Amortised O(n). */
hs_status_t hs_lp_add_row(hs_lp_t *lp, int32_t n, const int32_t *idx, const double *val,
                          double lb, double ub, hs_error_t *err);
int32_t hs_lp_n_cols(const hs_lp_t *lp);
int32_t hs_lp_n_rows(const hs_lp_t *lp);

/* Solves. `opts` NULL = defaults. HS_OK means the solver ran; read
 * res->status for what the solution is. The column values of the solution
 * (when status is OPTIMAL, OPTIMAL_GAP or FEASIBLE) are kept in lp for
 * hs_lp_value. The problem can be changed and solved again. Time: GLPK's
 * (simplex: polynomial in practice; MILP: exponential worst case, bounded by
 * the time limit); building costs O(nonzeros). */
hs_status_t hs_lp_solve(hs_lp_t *lp, const hs_lp_opts_t *opts, hs_lp_result_t *res,
                        hs_error_t *err);
/* Value of column `col` in the last solution (0 when none). O(1). */
double hs_lp_value(const hs_lp_t *lp, int32_t col);

#endif /* HS_LP_H */
