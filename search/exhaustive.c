/*
 * exhaustive.c - `exhaustive`: brute force over hapt's search space
 * (hapt_space.h) with the same scoring rule, the oracle for tests. It
 * enumerates, for every microbatch size and stage count S, every sequence of
 * S stages (cut candidate pairs covering the model) with a (subcluster, mesh
 * size) each within the device budget, and scores each complete layout.
 *
 * Refuses (HS_EINFEASIBLE) clusters of more than opts->max_devices devices
 * and models of more than 8 blocks. Complexity: O(MB x sum_S C(K-1, S-1) x
 * (A Z)^S x S) layouts; fine for <= 8 devices and <= 8 blocks.
 */
#include "hapt_space.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXH_MAX_LAYERS 8
#define EXH_MAX_STAGES 16
/* context parallelism (issue 34 item 1), as hapt and megatron search it:
 * from EXH_CP_MIN_SEQ tokens, powers of two keeping EXH_CP_MIN_TOKENS per
 * rank */
#define EXH_CP_MIN_SEQ 8192
#define EXH_CP_MIN_TOKENS 4096
#define EXH_MAX_CP 4
#define EXH_MAX_PRACTICES (8 + 8 * 2) /* 4 ZeRO stages x SP off/on, plain and per C */

typedef struct exh {
  hs_hspace_t h;
  int32_t mi;
  int32_t *avail;             /* per sc: units left */
  hs_hstage_t cur[EXH_MAX_STAGES];
  hs_hstage_t best[EXH_MAX_STAGES];
  int32_t best_n;
  double best_score;
  uint64_t layouts;
  hs_cand_pool_t pool;
  bool dp_done;
  hs_practice_t pr[EXH_MAX_PRACTICES]; /* training-practice variants, each brute-forced (exh_practices) */
  int32_t n_pr, pi;
  double deadline_s;          /* opts.deadline_s: the enumeration stops there (0 = none) */
  bool stopped;               /* it did: the result is not proven optimal */
} exh_t;

/* The practice variants the oracle covers (issue 14's broadened space):
 * the options' practice, and with practice search every ZeRO stage from
 * the options' to 3 x sequence parallelism off/on; with a sequence of at
 * least EXH_CP_MIN_SEQ tokens (and the options' CP at 1) also context
 * parallelism C = 2, 4 (at least EXH_CP_MIN_TOKENS per rank) x every
 * ZeRO stage x sequence parallelism off/on (a stage's replicas then form
 * CP groups of C: hapt_space.h's cp). The brute force runs once per
 * variant, the table's memory rule and stage times under it
 * (hapt_space.c). Returns the count (<= EXH_MAX_PRACTICES). */
static int32_t exh_practices(const hs_model_t *m, const hs_plan_opts_t *o, hs_practice_t *out)
{
  int32_t n = 0;
  out[n++] = o->practice;
  if (!o->search_practice)
    return n;
  for (int32_t z = o->practice.zero_stage; z <= 3; z++)
    for (int sp = 0; sp < (o->practice.sequence_parallel ? 1 : 2); sp++) {
      hs_practice_t v = o->practice;
      v.zero_stage = z;
      v.sequence_parallel = o->practice.sequence_parallel || sp;
      if (!hs_practice_equal(&v, &o->practice))
        out[n++] = v;
    }
  int64_t seq = m->seq_len;
  if (o->practice.context_parallel > 1 || seq < EXH_CP_MIN_SEQ)
    return n;
  for (int32_t C = 2; C <= EXH_MAX_CP && seq % C == 0 && seq / C >= EXH_CP_MIN_TOKENS; C *= 2)
    for (int32_t z = o->practice.zero_stage; z <= 3; z++)
      for (int sp = 0; sp < (o->practice.sequence_parallel ? 1 : 2) && n < EXH_MAX_PRACTICES; sp++) {
        hs_practice_t v = o->practice;
        v.zero_stage = z;
        v.sequence_parallel = o->practice.sequence_parallel || sp;
        v.context_parallel = C;
        out[n++] = v;
      }
  return n;
}

/* Variant pi as the table's practice: the estimator's and the CP degree
 * its stage options group replicas by. */
static void exh_set_practice(exh_t *s, int32_t pi)
{
  hs_estimator_set_practice(s->h.est, &s->pr[pi]);
  s->h.cp = HS_MAX(s->pr[pi].context_parallel, 1);
}

static void score_leaf(exh_t *s, int32_t S)
{
  hs_hspace_t *h = &s->h;
  double sum = 0.0, mx = 0.0;
  /* the clock read once per 4096 layouts: a few ns each */
  if ((++s->layouts & 4095) == 0 && hs__past(s->deadline_s))
    s->stopped = true;
  for (int32_t i = 0; i < S; i++) {
    hs_hstage_t *x = &s->cur[i];
    bool last = i + 1 == S;
    x->c = last ? 0.0 : hs__hspace_cut_s(h, x->a, s->cur[i + 1].a, x->k2);
    bool cross = !last && hs__hspace_cross(h, x->a, s->cur[i + 1].a);
    int32_t opt = hs__hspace_pick(h, x->k, x->k2, x->a, x->z, S - i, cross, x->c);
    if (opt < 0)
      return;
    int32_t n;
    const hs_hopt_t *o = hs__hspace_opts(h, x->k, x->k2, x->a, x->z, &n);
    x->opt = opt;
    x->t = o[opt].t;
    x->f = o[opt].f;
    sum += x->t + x->f + 2.0 * x->c;
    mx = fmax(mx, fmax(x->t, x->c));
  }
  double score = sum + (hs__hspace_B(h) - 1) * mx;
  if (score < s->best_score) {
    s->best_score = score;
    s->best_n = S;
    memcpy(s->best, s->cur, sizeof(hs_hstage_t) * (size_t)S);
  }
}

static void dfs(exh_t *s, int32_t i, int32_t S, int32_t k)
{
  hs_hspace_t *h = &s->h;
  int32_t K = h->n_cuts;
  int32_t left = S - i; /* stages still to place, this one included */
  for (int32_t k2 = k + 1; k2 <= K - 1 && !s->stopped; k2++) {
    if (left == 1 && k2 != K - 1)
      continue;
    if (left > 1 && K - 1 - k2 < left - 1)
      break;
    for (int32_t a = 0; a < h->n_sc; a++)
      for (int32_t zi = 0; zi < h->n_sizes[a] && h->sizes[a][zi] <= s->avail[a]; zi++) {
        s->cur[i] = (hs_hstage_t){.k = k, .k2 = k2, .a = a, .z = zi};
        s->avail[a] -= h->sizes[a][zi];
        if (left == 1)
          score_leaf(s, S);
        else
          dfs(s, i + 1, S, k2);
        s->avail[a] += h->sizes[a][zi];
      }
  }
}

static hs_status_t exh_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                            const hs_plan_opts_t *o, hs_error_t *err)
{
  exh_t *s = state;
  memset(s, 0, sizeof *s);
  if ((int64_t)c->n_devices > o->max_devices)
    return hs_error_set(err, HS_EINFEASIBLE,
                        "exhaustive: cluster %s has %zu devices, above the limit of %d "
                        "(--max-devices / opts.max_devices)",
                        c->name, c->n_devices, o->max_devices);
  if (hs_model_layers(m) > EXH_MAX_LAYERS)
    return hs_error_set(err, HS_EINFEASIBLE,
                        "exhaustive: model %s has %lld blocks, above the limit of %d", m->name,
                        (long long)hs_model_layers(m), EXH_MAX_LAYERS);
  hs_status_t st = hs__hspace_init(&s->h, m, c, o, 0, err);
  if (st != HS_OK)
    return st;
  s->n_pr = exh_practices(m, o, s->pr);
  s->h.cp = HS_MAX(o->practice.context_parallel, 1);
  s->avail = hs_calloc((size_t)s->h.n_sc, sizeof(int32_t));
  if (!s->avail ||
      hs__cpool_init(&s->pool, HS_MIN(hs__sim_budget(c), s->h.n_mbs * s->n_pr)) != HS_OK) {
    free(s->avail);
    hs__hspace_destroy(&s->h);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  s->pool.deadline_s = o->deadline_s;
  s->deadline_s = o->deadline_s;
  s->mi = 0;
  return HS_OK;
}

static hs_status_t exh_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  exh_t *s = state;
  hs_hspace_t *h = &s->h;
  *done = false;
  if (!s->dp_done) {
    if (hs__hspace_table(h, s->mi, INFINITY) != HS_OK)
      return hs_error_set(err, HS_ENOMEM, "out of memory");
    s->best_score = INFINITY;
    s->best_n = 0;
    int32_t units = 0;
    for (int32_t a = 0; a < h->n_sc; a++) {
      s->avail[a] = h->levels[a];
      units += h->levels[a];
    }
    int32_t smax = HS_MIN(HS_MIN(units, h->n_cuts - 1), EXH_MAX_STAGES);
    for (int32_t S = 1; S <= smax && !s->stopped; S++)
      dfs(s, 0, S, 0);
    if (s->best_n > 0) {
      hs_hsol_t sol = {.st = s->best, .n = s->best_n, .score_s = s->best_score};
      hs_plan_t plan;
      hs_status_t st = hs__hspace_plan(h, &sol, "exhaustive", &plan, err);
      if (st != HS_OK)
        return st;
      hs_plan_set_practice(&plan, &s->pr[s->pi]);
      /* SP without a TP group is the variant without SP, offered already */
      bool dup = !hs_practice_equal(&plan.practice, &s->pr[s->pi]);
      hs_estimate_t es;
      st = hs_estimate_plan(h->est, &plan, true, &es, err);
      exh_set_practice(s, s->pi); /* the table's, again */
      if (st != HS_OK) {
        hs_plan_destroy(&plan);
        return st;
      }
      if (es.oom || dup)
        hs_plan_destroy(&plan);
      else
        hs__cpool_offer(&s->pool, &plan, es.iteration_s);
    }
    s->mi++;
    if (s->stopped)
      s->dp_done = true; /* what was found so far goes to the simulations */
    else if (s->mi >= h->n_mbs) {
      s->mi = 0;
      if (++s->pi >= s->n_pr)
        s->dp_done = true;
      else
        exh_set_practice(s, s->pi);
    }
    *progress = 0.9 * (s->pi * h->n_mbs + s->mi) / (h->n_mbs * s->n_pr);
    return HS_OK;
  }
  hs_status_t st = hs__cpool_sim_step(&s->pool, h->m, h->c, done, err);
  *progress = 0.9 + 0.1 * s->pool.next_sim / HS_MAX(s->pool.n, 1);
  return st;
}

static hs_status_t exh_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                              hs_error_t *err)
{
  exh_t *s = state;
  stats->candidates = s->layouts;
  stats->optimal = s->dp_done && !s->stopped && !s->pool.cut;
  snprintf(stats->note, sizeof stats->note, "%llu layouts, %d simulated%s",
           (unsigned long long)s->layouts, s->pool.next_sim,
           s->stopped ? "; stopped at the time limit" : "");
  hs__cpool_note(&s->pool, stats->note, sizeof stats->note);
  if (s->pool.n == 0)
    snprintf(s->pool.why, sizeof s->pool.why, "no stage layout fits in memory");
  return hs__cpool_result(&s->pool, out, &stats->predicted_s, "exhaustive", err);
}

static void exh_free(void *state)
{
  exh_t *s = state;
  hs__hspace_destroy(&s->h);
  free(s->avail);
  hs__cpool_destroy(&s->pool);
}

const hs_planner_type_t hs_planner_exhaustive = {
    .name = "exhaustive",
    .description = "brute force over hapt's search space (small clusters and models; test oracle)",
    .state_size = sizeof(exh_t),
    .init = exh_init,
    .step = exh_step,
    .result = exh_result,
    .free = exh_free,
};
