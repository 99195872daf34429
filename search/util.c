/*
 * util.c - helpers shared by the planners (search_internal.h): clock,
 * defaults, subclusters and the candidate pool.
 */
#include "search_internal.h"
#include "sim_memo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double hs__now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool hs__past(double deadline_s)
{
  return deadline_s > 0.0 && hs__now_s() > deadline_s;
}

/* Per-unit simulation costs measured with `hetsim simulate` (gpt3-1.3b) on
 * the 2-core build machine at a load of about 7: tp8 x dp512 on 4096 GPUs
 * took 5.7 s and tp8 x dp2048 on 16384 GPUs 27.9 s (1.4-1.7 ms per device
 * place); pp8 with 65536 microbatches of 1 on 8 GPUs took 1.74 s (3.3 us
 * per microbatch-stage pair). Rounded up (x1.1, x3): a deadline needs a
 * pessimistic guess, and the pool scales it by what it measures. */
#define SIM_S_PER_DEVICE_PLACE 1.8e-3
#define SIM_S_PER_MB_STAGE 1e-5

double hs__sim_cost_s(const hs_plan_t *p)
{
  double places = 0.0, mb_stages = 0.0;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    mb_stages += (double)HS_MAX(pl->n_microbatches, 0) * HS_MAX(pl->n_stages, 0);
    for (int32_t s = 0; s < pl->n_stages; s++)
      for (int32_t r = 0; r < pl->stages[s].n_replicas; r++)
        places += HS_MAX(pl->stages[s].replicas[r].n_devices, 0);
  }
  return SIM_S_PER_DEVICE_PLACE * places + SIM_S_PER_MB_STAGE * mb_stages;
}

double hs__coll_cost_s(hs_coll_op_t op, int32_t n)
{
  double d = n > 1 ? (double)n : 0.0;
  return op == HS_COLL_ALLTOALL ? 2.5e-6 * d * d : 1e-4 * d;
}

hs_status_t hs__simulate_below(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p,
                               double below_s, hs_report_t *rep, hs_error_t *err)
{
  hs_sim_opts_t o;
  hs_sim_opts_init(&o);
  o.stop_at_s = isfinite(below_s) && below_s > 0.0 ? below_s : 0.0;
  return hs_simulate(m, c, p, &o, rep, err);
}

bool hs__sim_fits(double deadline_s, double cost_s)
{
  return deadline_s <= 0.0 || hs__now_s() + cost_s <= deadline_s;
}

hs_status_t hs__check_batch(int64_t gb, int64_t n_devices, int64_t max_mb, const char *who,
                            hs_error_t *err)
{
  int64_t per_step = 0, most = 0;
  n_devices = HS_MAX(n_devices, 1);
  max_mb = HS_MAX(max_mb, 1);
  /* samples one iteration can hold at HS_SEARCH_MAX_MICROBATCHES per pipeline */
  bool big = __builtin_mul_overflow(n_devices, max_mb, &per_step) ||
             __builtin_mul_overflow(per_step, HS_SEARCH_MAX_MICROBATCHES, &most);
  if (big || gb <= most)
    return HS_OK;
  int64_t need = gb / per_step + (gb % per_step != 0);
  return hs_error_set(err, HS_ELIMIT,
                      "%s: global batch %lld on %lld GPUs needs at least %lld microbatches per "
                      "pipeline (every GPU a data-parallel replica, microbatches of at most %lld "
                      "samples, --max-microbatch-size); the planners support at most %lld "
                      "(HS_SEARCH_MAX_MICROBATCHES): use a smaller --global-batch or a larger "
                      "--max-microbatch-size",
                      who, (long long)gb, (long long)n_devices, (long long)need, (long long)max_mb,
                      (long long)HS_SEARCH_MAX_MICROBATCHES);
}

int64_t hs__global_batch(const hs_plan_opts_t *o, const hs_cluster_t *c)
{
  if (o->global_batch > 0)
    return o->global_batch;
  return 8 * (int64_t)(c->n_devices > 0 ? c->n_devices : 1);
}

hs_dtype_t hs__precision(const hs_plan_opts_t *o, const hs_cluster_t *c)
{
  if (o->precision != HS_DTYPE_BF16)
    return o->precision;
  for (size_t d = 0; d < c->n_devices; d++)
    if (hs_cluster_gpu(c, (int32_t)d)->peak_flops[HS_DTYPE_BF16] <= 0.0)
      return HS_DTYPE_FP16;
  return HS_DTYPE_BF16;
}

double hs__gpu_speed(const hs_gpu_t *g, hs_dtype_t dt)
{
  double eff = g->gemm_eff_max > 0 ? g->gemm_eff_max : 1.0;
  if ((dt == HS_DTYPE_BF16 || dt == HS_DTYPE_FP16) && g->gemm_sustained_eff > 0) /* as sim/compute.c */
    eff = fmin(eff, g->gemm_sustained_eff);
  return hs_gpu_peak_flops(g, dt) * eff;
}

int32_t hs__max_tp(const hs_cluster_t *c)
{
  int32_t gpn = INT32_MAX;
  for (size_t n = 0; n < c->n_nodes; n++)
    gpn = HS_MIN(gpn, c->nodes[n].n_devices);
  int32_t tp = 1;
  while (tp * 2 <= gpn)
    tp *= 2;
  return tp;
}

hs_status_t hs__subclusters(const hs_cluster_t *c, hs_dtype_t dt, hs_subcluster_t **out,
                            int32_t *n)
{
  *out = NULL;
  *n = 0;
  hs_subcluster_t *s = hs_calloc(c->n_nodes ? c->n_nodes : 1, sizeof *s);
  if (!s)
    return HS_ENOMEM;
  int32_t ns = 0;
  for (size_t i = 0; i < c->n_nodes; i++) {
    const hs_node_t *nd = &c->nodes[i];
    int32_t k = 0;
    while (k < ns && !(s[k].site == nd->site && s[k].gpu == nd->gpu && s[k].gpn == nd->n_devices))
      k++;
    if (k == ns) {
      s[k].site = nd->site;
      s[k].gpu = nd->gpu;
      s[k].gpn = nd->n_devices;
      s[k].nodes = hs_calloc(c->n_nodes, sizeof(int32_t));
      if (!s[k].nodes) {
        hs__subclusters_free(s, ns);
        return HS_ENOMEM;
      }
      s[k].speed_flops = hs__gpu_speed(&c->gpus.gpus[nd->gpu], dt);
      ns++;
    }
    s[k].nodes[s[k].n_nodes++] = (int32_t)i;
    s[k].n_devices += nd->n_devices;
  }
  *out = s;
  *n = ns;
  return HS_OK;
}

void hs__subclusters_free(hs_subcluster_t *s, int32_t n)
{
  if (!s)
    return;
  for (int32_t k = 0; k < n; k++)
    free(s[k].nodes);
  free(s);
}

int32_t hs__sim_budget(const hs_cluster_t *c)
{
  if (c->n_devices <= 256)
    return 3;
  return c->n_devices <= 1024 ? 2 : 1;
}

/* ---- candidate pool ----------------------------------------------------------- */

hs_status_t hs__cpool_init(hs_cand_pool_t *p, int32_t cap)
{
  memset(p, 0, sizeof *p);
  p->plans = hs_calloc((size_t)cap, sizeof *p->plans);
  p->est_s = hs_calloc((size_t)cap, sizeof *p->est_s);
  if (!p->plans || !p->est_s) {
    hs__cpool_destroy(p);
    return HS_ENOMEM;
  }
  p->cap = cap;
  p->best = -1;
  p->sim_scale = 1.0;
  return HS_OK;
}

void hs__cpool_destroy(hs_cand_pool_t *p)
{
  if (!p)
    return;
  for (int32_t i = 0; i < p->n; i++)
    hs_plan_destroy(&p->plans[i]);
  free(p->plans);
  free(p->est_s);
  memset(p, 0, sizeof *p);
}

hs_status_t hs__round_for_offer(hs_plan_t *plan, hs_error_t *err)
{
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t st = hs_plan_round_shares(plan, NULL, &e2);
  return st == HS_OK ? HS_OK : hs_error_set(err, st, "%s", e2.msg);
}

void hs__cpool_offer(hs_cand_pool_t *p, hs_plan_t *plan, double est_s)
{
  if (p->cap <= 0 || !isfinite(est_s) || (p->n == p->cap && est_s >= p->est_s[p->n - 1])) {
    hs_plan_destroy(plan);
    hs_plan_init(plan);
    return;
  }
  /* a candidate without TP runs without sequence parallelism */
  hs_plan_set_practice(plan, &plan->practice);
  /* whole samples per rank (hs_plan_round_shares); a micro-batch smaller
   * than a stage's replicas cannot be run: not a candidate */
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  if (hs_plan_round_shares(plan, NULL, &e2) != HS_OK) {
    hs_plan_destroy(plan);
    hs_plan_init(plan);
    return;
  }
  if (p->one_zero && p->next_sim == 0) {
    /* a ZeRO sibling already in: the lower estimate stays */
    int32_t j = 0;
    while (j < p->n && !hs__plan_same_but_zero(&p->plans[j], plan))
      j++;
    if (j < p->n && p->est_s[j] <= est_s) {
      hs_plan_destroy(plan);
      hs_plan_init(plan);
      return;
    }
    if (j < p->n) {
      hs_plan_destroy(&p->plans[j]);
      memmove(&p->plans[j], &p->plans[j + 1], sizeof *p->plans * (size_t)(p->n - j - 1));
      memmove(&p->est_s[j], &p->est_s[j + 1], sizeof *p->est_s * (size_t)(p->n - j - 1));
      p->n--;
    }
  }
  if (p->n == p->cap) {
    hs_plan_destroy(&p->plans[p->n - 1]);
    p->n--;
  }
  int32_t k = p->n;
  while (k > 0 && p->est_s[k - 1] > est_s) {
    p->plans[k] = p->plans[k - 1];
    p->est_s[k] = p->est_s[k - 1];
    k--;
  }
  p->plans[k] = *plan;
  p->est_s[k] = est_s;
  p->n++;
  hs_plan_init(plan);
}

/* Entry next_sim is the same (hs__plan_same) as an entry simulated before
 * it while the pool has a best: it simulates as that one did, to the best's
 * time or slower or out of memory, so it cannot become the best (a strict
 * improvement), and the reason of a rejection (p->why) is read only when
 * there is no best. O(next_sim x plan size). */
static bool cpool_repeat(const hs_cand_pool_t *p)
{
  for (int32_t j = 0; p->best >= 0 && j < p->next_sim; j++)
    if (hs__plan_same(&p->plans[j], &p->plans[p->next_sim]))
      return true;
  return false;
}

hs_status_t hs__cpool_sim_step(hs_cand_pool_t *p, const hs_model_t *m, const hs_cluster_t *c,
                              bool *done, hs_error_t *err)
{
  if (p->next_sim >= p->n) {
    *done = true;
    return HS_OK;
  }
  if (cpool_repeat(p)) {
    *done = ++p->next_sim >= p->n;
    return HS_OK;
  }
  double known_s = 0.0;
  if (p->memo && hs__sim_memo_get(p->memo, &p->plans[p->next_sim], &known_s)) {
    /* simulated before (the memo holds fitting plans only): the same report */
    int32_t k = p->next_sim++;
    if (p->best < 0 || known_s < p->best_sim_s) {
      p->best = k;
      p->best_sim_s = known_s;
    }
    *done = p->next_sim >= p->n;
    return HS_OK;
  }
  /* the driver simulates the plan returned once more: leave time for it */
  double cost_s = hs__sim_cost_s(&p->plans[p->next_sim]) * p->sim_scale;
  if (!hs__sim_fits(p->deadline_s, 2.0 * cost_s)) {
    p->cut = true;
    *done = true;
    return HS_OK;
  }
  hs_report_t rep;
  hs_report_init(&rep);
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  int32_t k = p->next_sim++;
  double t0 = hs__now_s();
  /* stopped at the best's time: it could only tie, never become the best;
   * and at beat_s, past which no plan is of use */
  double below = p->best >= 0 ? p->best_sim_s : 0.0;
  bool at_beat = p->beat_s > 0.0 && (below <= 0.0 || p->beat_s < below);
  if (at_beat)
    below = p->beat_s;
  hs_status_t st = hs__simulate_below(m, c, &p->plans[k], below, &rep, &e2);
  p->beat_stops += at_beat && st == HS_OK && rep.stopped;
  if (cost_s > 0.0)
    p->sim_scale = HS_MAX(p->sim_scale, (hs__now_s() - t0) / (cost_s / p->sim_scale));
  if (st == HS_ENOMEM) {
    hs_report_destroy(&rep);
    return hs_error_set(err, st, "%s", e2.msg);
  }
  if (st != HS_OK) {
    /* a planner that emits an invalid plan is a bug, not an infeasibility */
    hs_report_destroy(&rep);
    return hs_error_set(err, HS_EINTERNAL, "planner emitted a plan the simulator rejects: %.200s",
                        e2.msg);
  } else if (rep.oom) {
    char b1[32], b2[32];
    int32_t d = rep.n_oom_devices > 0 ? rep.oom_devices[0] : 0;
    snprintf(p->why, sizeof p->why, "out of memory on device %d (%s needed, %s available)", d,
             hs_fmt_bytes(rep.n_device_mem > d ? rep.device_peak_memory_bytes[d] : 0, b1, sizeof b1),
             hs_fmt_bytes(hs_cluster_gpu(c, d)->mem_bytes, b2, sizeof b2));
  } else if (!rep.stopped) { /* a stopped plan's time is a bound, kept nowhere */
    if (p->memo && hs__sim_memo_put(p->memo, &p->plans[k], rep.iteration_time_s) != HS_OK) {
      hs_report_destroy(&rep);
      return hs_error_set(err, HS_ENOMEM, "out of memory storing a simulated plan");
    }
    if (p->best < 0 || rep.iteration_time_s < p->best_sim_s) {
      p->best = k;
      p->best_sim_s = rep.iteration_time_s;
    }
  }
  hs_report_destroy(&rep);
  *done = p->next_sim >= p->n;
  return HS_OK;
}

hs_status_t hs__cpool_result(hs_cand_pool_t *p, hs_plan_t *out, double *pred_s, const char *what,
                            hs_error_t *err)
{
  int32_t k = p->best;
  if (k < 0 && p->next_sim == 0 && p->n > 0)
    k = 0;
  if (k < 0 && hs__cpool_pruned_below(p) > 0.0) /* every plan at least beat_s */
    return hs_error_set(err, HS_EINFEASIBLE, "%s: no plan faster than %.9g s (the best so far)",
                        what, p->beat_s);
  if (k < 0)
    return hs_error_set(err, HS_EINFEASIBLE, "%s: no feasible plan%s%s", what,
                        p->why[0] ? ": " : " (no candidate fits the cluster)", p->why);
  *pred_s = p->est_s[k];
  return hs_plan_copy(&p->plans[k], out, err);
}

double hs__cpool_pruned_below(const hs_cand_pool_t *p)
{
  /* a best faster than beat_s is the full pool's: every plan the bound
   * stopped takes at least beat_s */
  bool full = p->beat_stops == 0 || (p->best >= 0 && p->best_sim_s < p->beat_s);
  return full ? 0.0 : p->beat_s;
}

void hs__cpool_note(const hs_cand_pool_t *p, char *note, size_t note_n)
{
  if (!p->cut)
    return;
  size_t l = strlen(note);
  if (l + 1 < note_n)
    snprintf(note + l, note_n - l, "%s%d simulation%s left out at the time limit", l ? "; " : "",
             p->n - p->next_sim, p->n - p->next_sim == 1 ? "" : "s");
}

hs_status_t hs__offer_grid(hs_estimator_t *est, const hs_model_t *m, const hs_cluster_t *c,
                           const hs_grid_opts_t *g, const char *name, hs_dtype_t dt,
                           const char *oom_what, hs_cand_pool_t *pool, uint64_t *scored,
                           char *why, size_t why_n, hs_error_t *err)
{
  if (hs_estimator_out_of_time(est))
    return HS_OK; /* past the search's deadline: not even the grid is built */
  hs_plan_t plan;
  hs_error_t e2;
  hs_error_init(&e2);
  e2.warn_fp = NULL;
  hs_status_t gs = hs_plan_grid(m, c, g, &plan, &e2);
  if (gs == HS_ENOMEM) /* not "no plan": the search would end with another answer */
    return hs_error_set(err, gs, "%s", e2.msg);
  if (gs != HS_OK) {
    snprintf(why, why_n, "%.200s", e2.msg);
    return HS_OK;
  }
  hs_strlcpy(plan.strategy, name, sizeof plan.strategy);
  plan.precision = dt;
  plan.practice = *hs_estimator_practice(est);
  hs_estimate_t es;
  hs_status_t st = hs_estimate_plan(est, &plan, true, &es, err);
  if (st != HS_OK) {
    hs_plan_destroy(&plan);
    return st;
  }
  (*scored)++;
  if (es.oom) {
    char b1[32], b2[32];
    snprintf(why, why_n, "%s: %s needed, %s on device %d", oom_what,
             hs_fmt_bytes(es.max_memory_bytes, b1, sizeof b1),
             hs_fmt_bytes(hs_cluster_gpu(c, es.oom_device)->mem_bytes, b2, sizeof b2), es.oom_device);
    hs_plan_destroy(&plan);
    return HS_OK;
  }
  hs__cpool_offer(pool, &plan, es.iteration_s);
  return HS_OK;
}

hs_status_t hs__offer_dp_grids(hs_estimator_t *est, const hs_model_t *m, const hs_cluster_t *c,
                               int64_t gb, int32_t max_mb, bool allow_recompute, const char *name,
                               hs_dtype_t dt, const char *oom_what, hs_cand_pool_t *pool,
                               uint64_t *scored, char *why, size_t why_n, hs_error_t *err)
{
  int32_t n = (int32_t)c->n_devices;
  for (int32_t b = 1; b <= max_mb; b *= 2) {
    if (gb % ((int64_t)n * b))
      continue;
    for (int rc = 0; rc < (allow_recompute ? 2 : 1); rc++) {
      hs_grid_opts_t g;
      hs_grid_opts_init(&g);
      g.tp = 1;
      g.pp = 1;
      g.dp = n;
      g.microbatch_size = b;
      g.global_batch = gb;
      g.recompute = rc ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE;
      hs_status_t st = hs__offer_grid(est, m, c, &g, name, dt, oom_what, pool, scored, why, why_n, err);
      if (st != HS_OK)
        return st;
    }
  }
  return HS_OK;
}
