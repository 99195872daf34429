/*
 * hapt_space.h - the inter-operator search space shared by `hapt` (dynamic
 * programming) and `exhaustive` (brute force), with one scoring rule so the
 * two compare like with like.
 *
 * A solution is one pipeline of S stages. Stage i owns ops
 * [cuts[k_i], cuts[k_i']) and a mesh: z_i counter units of one homogeneous
 * subcluster a_i (hs__subclusters), laid out as replicas of a TP group of
 * degree tp (a power of two inside a node) sharing each microbatch equally.
 * The option (tp, recomputation) of a stage is fixed by a rule: the fastest
 * one that fits in memory with `inflight` microbatches in flight, where
 * inflight = (stages from i to the end) + extra_i, extra_i = ceil(c_i / tf_i)
 * when the stage's outgoing cut crosses sites (hetero-1f1b's deeper warm-up).
 * Memory and the optimizer step follow the estimator's practice: under ZeRO
 * stage z >= 1 a stage of r replicas keeps 1/r of the optimizer state (and
 * of the gradients from z = 2, of the weights from z = 3) and steps 1/r of
 * its parameters (hapt sets ZeRO-1, then ZeRO-2 + SP in its memory-saving
 * pass; exhaustive one practice per pass).
 *
 * Score (HAPT's objective under hetero-1f1b, async sends):
 *   sum_i (t_i + f_i + 2 c_i) + (B - 1) max_i max(t_i, c_i)
 * t_i = fwd + bwd per microbatch (estimator, TP collectives included), c_i =
 * latency + activation bytes / bottleneck bandwidth of the outgoing cut, f_i =
 * gradient all-reduce over the stage's replicas not hidden by one backward,
 * plus the optimizer step. B = global batch / microbatch size.
 *
 * Granularity knobs (docs/planners.md): cut candidates (all_cuts) are every
 * block boundary plus one cut inside each block (after the attention half);
 * the table uses them all unless the caller's max_cuts or
 * HS_HAPT_MAX_TABLE_BYTES (the table is triangular in the cut pairs) says
 * fewer: then every k-th block boundary (coarse_cuts = k); every microbatch
 * size that divides the batch (up to max_microbatch_size per replica of the
 * biggest mesh; every k-th past HS_HAPT_MAX_MB of them); counter units are single GPUs on clusters of at most
 * HS_HAPT_FINE_DEVICES devices (mesh sizes: powers of two up to a node, then
 * whole nodes), else groups of whole nodes with at most HS_HAPT_MAX_LEVELS
 * units per subcluster.
 */
#ifndef HS_HAPT_SPACE_H
#define HS_HAPT_SPACE_H

#include "search_internal.h"

#define HS_HAPT_FINE_DEVICES 16
#define HS_HAPT_MAX_LEVELS 8
#define HS_HAPT_MAX_TABLE_BYTES ((size_t)256 << 20)
#define HS_HAPT_MAX_MB 64     /* microbatch sizes (divisors of the batch) */
#define HS_HAPT_MAX_OPTS 16   /* tp x recompute options per stage */

typedef struct hs_hopt {
  int32_t tp;
  hs_recompute_t rc;
  double t, tf, f;           /* seconds per microbatch; f per iteration */
  double state_bytes, act_bytes, transient_bytes;
} hs_hopt_t;

typedef struct hs_hstage {
  int32_t k, k2;             /* cut indices */
  int32_t a, z;              /* subcluster, index into sizes[a] */
  int32_t opt;               /* option index in the table entry */
  double t, c, f;
} hs_hstage_t;

typedef struct hs_hsol {
  hs_hstage_t *st;           /* owned, n entries */
  int32_t n;
  double sum_s, max_s, score_s;
} hs_hsol_t;

typedef struct hs_hspace {
  const hs_model_t *m;
  const hs_cluster_t *c;
  hs_dtype_t dt;
  int64_t gb;
  bool allow_rc;
  hs_estimator_t *est;
  hs_subcluster_t *sc;
  int32_t n_sc;
  int32_t *unit_dev;         /* per sc: devices per counter unit */
  int32_t *levels;           /* per sc: units available */
  int32_t **sizes;           /* per sc: allowed mesh sizes in units, ascending */
  int32_t *n_sizes;
  int32_t max_sizes;
  int32_t **sc_devs;         /* per sc: its devices in cluster order */
  int32_t *cuts;             /* op indices, cuts[0] = 0, cuts[n_cuts-1] = n_ops */
  int32_t n_cuts;
  int32_t coarse_cuts;       /* 0: every candidate; k: every k-th block boundary */
  int32_t *all_cuts;         /* every candidate (hapt's local search moves over these) */
  int32_t n_all_cuts;
  int32_t opt_stride;        /* option slots per table entry (tp degrees x recompute) */
  int32_t cp;                /* context-parallel degree of the table's plans (0 or 1: none):
                                a stage's replicas must form groups of cp, and a group (not a
                                replica) holds at least one sample of a microbatch */
  int32_t mbs[HS_HAPT_MAX_MB];
  int32_t n_mbs;
  int32_t n_mbs_valid;       /* divisors of the batch within the cap (n_mbs < it: thinned) */
  double *lat_s, *inv_bw;    /* n_sc x n_sc: cut latency and s/byte (same sc: inter-node) */
  hs_allreduce_line_t *ar;   /* per (sc, size idx, tp log2): all-reduce time per algorithm */
  /* table for the current microbatch size: entry (k, k2, a, zi) -> options */
  int32_t cur_mb;            /* index into mbs, -1 none */
  uint64_t table_id;         /* hs__hspace_table calls so far: a DP's per-table bounds key on it */
  hs_hopt_t *opts;           /* n_sc x max_sizes x pairs k < k2 x opt_stride (hs__hspace_entry) */
  uint8_t *n_opts;
  double *cut_s;             /* n_cuts x n_sc x n_sc: hs__hspace_cut_s for the current table */
  /* memo of hs__hspace_pick for the current table (hs__hspace_pick_at);
   * NULL: none, every pick computed */
  int8_t *pick;
  size_t n_pick;
  int32_t pick_inflight;     /* largest inflight it holds */
  uint64_t evaluated;
} hs_hspace_t;

/* max_cuts: most cut candidates in the table (0 = every candidate). */
hs_status_t hs__hspace_init(hs_hspace_t *h, const hs_model_t *m, const hs_cluster_t *c,
                            const hs_plan_opts_t *o, int32_t max_cuts, hs_error_t *err);
void hs__hspace_destroy(hs_hspace_t *h);
/* Builds the option table for microbatch size mbs[mi]. O(cuts^2 x sc x
 * sizes x opts), less what t_limit_s leaves out. An option's t grows with
 * the span's end cut (a difference of per-op prefix sums), so once an
 * option of a start cut's span passes t_limit_s it is left out of that
 * span and of every longer one (on that mesh), unestimated; a span left
 * with none gets one placeholder option instead, with the smallest t that
 * passed (no faster than any option of the span, and over the limit), no
 * memory and no f. A reader that keeps to options with t <= t_limit_s
 * (the DP under caps at most t_limit_s, taking the first option that fits
 * in memory and checking its t) reads what the full table gives it: the
 * options left out come after those kept, by t. INFINITY: the full
 * table. */
hs_status_t hs__hspace_table(hs_hspace_t *h, int32_t mi, double t_limit_s);
/* The microbatches per iteration at size mbs[mi]. */
int32_t hs__hspace_B_of(const hs_hspace_t *h, int32_t mi);
/* The small accessors below are inline: hapt's DP calls them in its
 * innermost loop (about 10^8 times a search at 64 GPUs). */

/* Table entry of (k, k2, a, zi): per mesh (a, zi), the pairs k < k2 in
 * row order, so the end cuts k2 of one start cut are adjacent (the DP
 * scans them in order; with the mesh innermost they were 16 kB apart on
 * 66 cuts and the option loads missed the cache). */
static inline size_t hs__hspace_entry(const hs_hspace_t *h, int32_t k, int32_t k2, int32_t a,
                                      int32_t zi)
{
  size_t K = (size_t)h->n_cuts, pairs = K * (K - 1) / 2;
  size_t pair = (size_t)k * (2 * K - (size_t)k - 1) / 2 + (size_t)(k2 - k - 1);
  return ((size_t)a * (size_t)h->max_sizes + (size_t)zi) * pairs + pair;
}

/* Entries (k, k2, a, zi) and (k, k2 + 1, a, zi) are this far apart. */
static inline size_t hs__hspace_entry_step(const hs_hspace_t *h)
{
  (void)h;
  return 1;
}

/* Options of table entry e, sorted by t; count in *n. */
static inline const hs_hopt_t *hs__hspace_opts_e(const hs_hspace_t *h, size_t e, int32_t *n)
{
  *n = h->n_opts[e];
  return &h->opts[e * (size_t)h->opt_stride];
}

/* Options of entry (k, k2, a, zi), sorted by t; count in *n. */
static inline const hs_hopt_t *hs__hspace_opts(const hs_hspace_t *h, int32_t k, int32_t k2,
                                               int32_t a, int32_t zi, int32_t *n)
{
  return hs__hspace_opts_e(h, hs__hspace_entry(h, k, k2, a, zi), n);
}

/* Cut costs (s) of the activation after cut k2 from subcluster a, indexed
 * by the receiving subcluster b. */
static inline const double *hs__hspace_cut_row(const hs_hspace_t *h, int32_t a, int32_t k2)
{
  return &h->cut_s[((size_t)k2 * (size_t)h->n_sc + (size_t)a) * (size_t)h->n_sc];
}

/* Cut cost (s) of the activation after cut k2 from subcluster a to b. */
static inline double hs__hspace_cut_s(const hs_hspace_t *h, int32_t a, int32_t b, int32_t k2)
{
  return hs__hspace_cut_row(h, a, k2)[b];
}
/* The rule: first option (fastest) that fits with `inflight` microbatches
 * (clamped to B) and the extra warm-up for a cross-site outgoing cut of c_s;
 * -1 when none fits. */
int32_t hs__hspace_pick(const hs_hspace_t *h, int32_t k, int32_t k2, int32_t a, int32_t zi,
                        int32_t inflight, bool cross, double c_s);
/* A memo of hs__hspace_pick for inflight 1..max_inflight, kept per table
 * (each hs__hspace_table clears it): the pick depends on the table and its
 * arguments only, so the DP's runs of one table (every cap) share it. Off
 * (HS_OK, picks computed) when it would pass 64 MiB or an option index
 * would not fit in int8_t; HS_ENOMEM when allocating fails. */
hs_status_t hs__hspace_pick_memo(hs_hspace_t *h, int32_t max_inflight);
#define HS_HSPACE_PICK_UNSET INT8_MIN /* memo entry not computed yet */
/* The rule computed (and stored at memo index i when the memo holds it):
 * hs__hspace_pick_at's miss path. */
int32_t hs__hspace_pick_slow(hs_hspace_t *h, int32_t k, int32_t k2, int32_t a, int32_t zi,
                             int32_t inflight, int32_t b, size_t i);
/* Memo index of (inflight, k, k2, a, zi) with b = -1 (b adds b + 1), or
 * SIZE_MAX where the memo does not hold it. */
static inline size_t hs__hspace_pick_base(const hs_hspace_t *h, int32_t k, int32_t k2, int32_t a,
                                          int32_t zi, int32_t inflight)
{
  if (!h->pick || inflight < 0 || inflight > h->pick_inflight)
    return SIZE_MAX;
  size_t K = (size_t)h->n_cuts, A = (size_t)h->n_sc;
  return (((((size_t)inflight * K + (size_t)k) * K + (size_t)k2) * A + (size_t)a) *
              (size_t)h->max_sizes + (size_t)zi) * (A + 1);
}
/* What hs__hspace_pick_base moves by from k2 to k2 + 1 (0 for SIZE_MAX). */
static inline size_t hs__hspace_pick_step(const hs_hspace_t *h, size_t base)
{
  size_t A = (size_t)h->n_sc;
  return base == SIZE_MAX ? 0 : A * (size_t)h->max_sizes * (A + 1);
}
/* hs__hspace_pick_at with its hs__hspace_pick_base given (the DP computes
 * it once for every successor b). */
static inline int32_t hs__hspace_pick_in(hs_hspace_t *h, size_t base, int32_t k, int32_t k2,
                                         int32_t a, int32_t zi, int32_t inflight, int32_t b)
{
  if (base == SIZE_MAX)
    return hs__hspace_pick_slow(h, k, k2, a, zi, inflight, b, SIZE_MAX);
  size_t i = base + (size_t)(b + 1);
  int8_t v = h->pick[i];
  return v != HS_HSPACE_PICK_UNSET ? v : hs__hspace_pick_slow(h, k, k2, a, zi, inflight, b, i);
}
/* hs__hspace_pick(h, k, k2, a, zi, inflight, b >= 0, b >= 0 ? cut_s(a, b,
 * k2) : 0), through the memo when it is on: the same value. b < 0: a
 * successor on the same site (or none); b >= 0: subcluster b across
 * sites. O(1) amortized. */
static inline int32_t hs__hspace_pick_at(hs_hspace_t *h, int32_t k, int32_t k2, int32_t a,
                                         int32_t zi, int32_t inflight, int32_t b)
{
  return hs__hspace_pick_in(h, hs__hspace_pick_base(h, k, k2, a, zi, inflight), k, k2, a, zi,
                            inflight, b);
}
static inline bool hs__hspace_cross(const hs_hspace_t *h, int32_t a, int32_t b)
{
  return h->sc[a].site != h->sc[b].site;
}
/* Microbatches per iteration for the current table. */
int32_t hs__hspace_B(const hs_hspace_t *h);
/* Plan of a solution (current table): hetero-1f1b, async sends, per-stage
 * warm-up. */
hs_status_t hs__hspace_plan(hs_hspace_t *h, const hs_hsol_t *sol, const char *strategy,
                            hs_plan_t *out, hs_error_t *err);
void hs__hsol_destroy(hs_hsol_t *s);
hs_status_t hs__hsol_copy(const hs_hsol_t *src, hs_hsol_t *dst);

#endif /* HS_HAPT_SPACE_H */
