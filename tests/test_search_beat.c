/*
 * test_search_beat.c - searches that only need to beat a plan they have
 * (hs_plan_opts_t.beat_s): the device-subset driver gives a subset's
 * search the best time so far, and hapt leaves out its order adaptation
 * when the busiest device's full-speed compute alone is over it.
 *
 * What is checked, each against an independent truth:
 * 1. The bound (hs_report_t.max_device_work_s) against brute force: on a
 *    3-stage hetero-1f1b pipeline, every valid warm-up vector is simulated
 *    (the orders order adaptation can reach); every one has the same
 *    bound, and every one runs at least that long. On one GPU with no
 *    communication it equals the stage's compute and recompute time
 *    (hs_stage_report_t, a different account of the same kernels).
 * 2. hapt under beat_s against hapt without it, over beat_s from half to
 *    1.05x the unpruned plan's time: whenever that plan is faster than
 *    beat_s, the pruned search returns it, byte for byte; otherwise its
 *    plan is no faster than beat_s; at least one beat_s prunes (the note
 *    says so and stats.pruned_below_s = beat_s), and a beat_s of 1e9
 *    changes nothing (plan and note the same).
 * 3. The search memo against its rule (search_memo.h): a pruned result
 *    answers only searches whose beat_s is positive and at most its own,
 *    and a less pruned result replaces it.
 * 4. megatron, whale and deepspeed (their pool's simulations stop at
 *    beat_s) against themselves without it, over beat_s from half to
 *    twice the full plan's time: the same plan and note whenever that plan
 *    is faster than beat_s; otherwise no plan ("no plan faster than",
 *    pruned_below_s = beat_s) or one no faster; each prunes at least once.
 */
#include "search_fixture.h"
#include "search_memo.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

/* Simulated time and bound of p; fills *work_s. */
static double sim_s(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *p, double *work_s)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_report_t r;
  hs_report_init(&r);
  CHECK_MSG(hs_simulate(m, c, p, NULL, &r, &err) == HS_OK, "%s", err.msg);
  double t = r.oom ? INFINITY : r.iteration_time_s;
  *work_s = r.max_device_work_s;
  hs_report_destroy(&r);
  return t;
}

/* 1. warm-up vectors w0 >= w1 >= w2 = 0 of a 3-stage pipeline, m = 5 */
static void bound_vs_brute_force(const hs_model_t *m, const hs_cluster_t *c)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t go;
  hs_grid_opts_init(&go);
  go.tp = 1;
  go.pp = 3;
  go.dp = 1;
  go.microbatch_size = 2;
  go.global_batch = 10;
  go.schedule = "hetero-1f1b";
  hs_plan_t p;
  hs_plan_init(&p);
  CHECK_MSG(hs_plan_grid(m, c, &go, &p, &err) == HS_OK, "%s", err.msg);
  double w_ref = -1.0, t_min = INFINITY, t_max = 0.0;
  int n = 0;
  for (int w0 = 0; w0 <= 4; w0++)
    for (int w1 = 0; w1 <= w0; w1++) {
      p.pipelines[0].stages[0].warmup = w0;
      p.pipelines[0].stages[1].warmup = w1;
      p.pipelines[0].stages[2].warmup = 0;
      double w;
      double t = sim_s(m, c, &p, &w);
      if (w_ref < 0.0)
        w_ref = w;
      CHECK_MSG(w == w_ref, "warm-ups (%d %d 0): bound %.9f s, (0 0 0) had %.9f s", w0, w1, w, w_ref);
      CHECK_MSG(t >= w, "warm-ups (%d %d 0): %.9f s simulated, under the bound %.9f s", w0, w1, t, w);
      t_min = fmin(t_min, t);
      t_max = fmax(t_max, t);
      n++;
    }
  printf("bound %.6f s; %d warm-up vectors simulated %.6f-%.6f s\n", w_ref, n, t_min, t_max);
  CHECK_MSG(w_ref > 0.5 * t_min, "bound %.6f s is far under the best order's %.6f s", w_ref, t_min);
  CHECK_MSG(t_max > t_min, "the orders all ran alike: the instance does not test much");
  hs_plan_destroy(&p);

  /* one GPU: the bound is the stage's compute and recompute */
  go.pp = 1;
  go.global_batch = 4;
  go.schedule = NULL;
  CHECK_MSG(hs_plan_grid(m, c, &go, &p, &err) == HS_OK, "%s", err.msg);
  hs_report_t r;
  hs_report_init(&r);
  CHECK_MSG(hs_simulate(m, c, &p, NULL, &r, &err) == HS_OK, "%s", err.msg);
  double parts = r.stages[0].time_compute_s + r.stages[0].time_recompute_s;
  printf("one GPU: bound %.9f s, compute + recompute %.9f s\n", r.max_device_work_s, parts);
  CHECK_MSG(fabs(r.max_device_work_s - parts) <= 1e-6, "one GPU: bound %.9f s vs %.9f s",
            r.max_device_work_s, parts);
  hs_report_destroy(&r);
  hs_plan_destroy(&p);
}

/* A planner's plan as JSON text (caller frees; NULL without a plan), its
 * statistics, simulated time (INFINITY without a plan) and status. */
static char *planner_run(const char *name, const hs_model_t *m, const hs_cluster_t *c,
                         double beat_s, hs_search_stats_t *stats, double *t_s, hs_status_t *st_out,
                         char *msg, size_t msg_n)
{
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 64;
  o.beat_s = beat_s;
  hs_plan_t plan;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  memset(stats, 0, sizeof *stats); /* as hs_planner_run leaves them for a planner */
  hs_status_t st = run_type(hs_planner_find(name), m, c, &o, &plan, stats, 1000000, &err);
  *st_out = st;
  hs_strlcpy(msg, st == HS_OK ? "" : err.msg, msg_n);
  *t_s = INFINITY;
  if (st != HS_OK)
    return NULL;
  double w;
  *t_s = sim_s(m, c, &plan, &w);
  cJSON *j = hs_plan_to_json(&plan);
  char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  hs_plan_destroy(&plan);
  return txt;
}

/* hapt's plan as JSON text (caller frees), its note, simulated time */
static char *hapt_run(const hs_model_t *m, const hs_cluster_t *c, double beat_s,
                      hs_search_stats_t *stats, double *t_s)
{
  hs_status_t st;
  char msg[HS_ERROR_MSG_MAX];
  char *txt = planner_run("hapt", m, c, beat_s, stats, t_s, &st, msg, sizeof msg);
  CHECK_MSG(st == HS_OK, "hapt (beat %g): %s", beat_s, msg);
  return txt;
}

/* 2. */
static void hapt_under_beat(const hs_model_t *m, const hs_cluster_t *c)
{
  hs_search_stats_t s0, sb;
  double t0, tb;
  char *p0 = hapt_run(m, c, 0.0, &s0, &t0);
  CHECK_MSG(p0 && strstr(s0.note, "warm-up order"), "hapt ran no order adaptation here: %s",
            s0.note);
  CHECK(!(s0.pruned_below_s > 0.0));
  static const double frac[] = {0.5, 0.8, 0.9, 0.95, 0.99, 1.0, 1.0 + 1e-9, 1.01, 1.05};
  int pruned = 0;
  for (size_t i = 0; i < sizeof frac / sizeof *frac; i++) {
    double beat = frac[i] * t0;
    char *pb = hapt_run(m, c, beat, &sb, &tb);
    bool cut = sb.pruned_below_s > 0.0;
    pruned += cut;
    printf("beat %.6f s (%.4g x): %.6f s%s\n", beat, frac[i], tb, cut ? ", order adaptation left out" : "");
    if (cut)
      CHECK_MSG(sb.pruned_below_s == beat && strstr(sb.note, "left out"), "beat %g: pruned_below_s %g, "
                "note %s", beat, sb.pruned_below_s, sb.note);
    if (t0 < beat)
      CHECK_MSG(p0 && pb && strcmp(p0, pb) == 0, "beat %.9f s: the full search's plan (%.9f s) beats "
                "it, but the pruned search returned another (%.9f s)", beat, t0, tb);
    else
      CHECK_MSG(tb >= beat, "beat %.9f s: the pruned search's plan runs %.9f s, faster than the "
                "full search's %.9f s could", beat, tb, t0);
    free(pb);
  }
  CHECK_MSG(pruned > 0, "no beat_s left the order adaptation out");
  char *pn = hapt_run(m, c, 1e9, &sb, &tb);
  CHECK_MSG(p0 && pn && strcmp(p0, pn) == 0 && strcmp(s0.note, sb.note) == 0 && !(sb.pruned_below_s > 0.0),
            "beat 1e9 changed the search: %s", sb.note);
  free(pn);
  free(p0);
}

/* 4. The planners that return their candidate pool's best (megatron,
 * whale, deepspeed) stop every pool simulation at beat_s: whenever the
 * full search's plan is faster than beat_s the pruned search returns it,
 * byte for byte, with its note; otherwise it has no plan (HS_EINFEASIBLE,
 * "no plan faster than", stats.pruned_below_s = beat_s) or one no faster
 * than beat_s. */
static void pool_planners_under_beat(const hs_model_t *m, const hs_cluster_t *c)
{
  static const char *const names[] = {"megatron", "whale", "deepspeed"};
  static const double frac[] = {0.5, 0.9, 0.99, 1.0, 1.0 + 1e-9, 1.01, 2.0};
  char msg[HS_ERROR_MSG_MAX];
  for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
    hs_search_stats_t s0, sb;
    hs_status_t st0, stb;
    double t0, tb;
    char *p0 = planner_run(names[n], m, c, 0.0, &s0, &t0, &st0, msg, sizeof msg);
    CHECK_MSG(st0 == HS_OK && p0, "%s: %s", names[n], msg);
    CHECK(!(s0.pruned_below_s > 0.0));
    int pruned = 0;
    for (size_t i = 0; p0 && i < sizeof frac / sizeof *frac; i++) {
      double beat = frac[i] * t0;
      char *pb = planner_run(names[n], m, c, beat, &sb, &tb, &stb, msg, sizeof msg);
      pruned += sb.pruned_below_s > 0.0;
      if (t0 < beat) {
        CHECK_MSG(pb && strcmp(p0, pb) == 0 && strcmp(s0.note, sb.note) == 0 &&
                      !(sb.pruned_below_s > 0.0),
                  "%s, beat %.9f s: the full search's plan (%.9f s) beats it, but the pruned search "
                  "returned %s (%.9f s, note %s)", names[n], beat, t0, pb ? "another" : msg, tb, sb.note);
      } else if (!pb) {
        CHECK_MSG(stb == HS_EINFEASIBLE && strstr(msg, "no plan faster than") &&
                      sb.pruned_below_s == beat,
                  "%s, beat %.9f s: status %d, pruned_below_s %g, %s", names[n], beat, stb,
                  sb.pruned_below_s, msg);
      } else {
        CHECK_MSG(tb >= beat, "%s, beat %.9f s: the pruned search's plan runs %.9f s, faster than "
                  "the full search's %.9f s could", names[n], beat, tb, t0);
      }
      free(pb);
    }
    printf("%s: full plan %.6f s, %d of %zu beat_s values pruned\n", names[n], t0, pruned,
           sizeof frac / sizeof *frac);
    CHECK_MSG(pruned > 0, "%s: no beat_s stopped a pool simulation", names[n]);
    free(p0);
  }
}

/* 3. */
static void memo_rule(const hs_model_t *m, const hs_cluster_t *c)
{
  const hs_planner_type_t *t = hs_planner_find("hapt");
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  hs_search_memo_begin();
  hs_search_key_t k;
  hs__search_memo_key(&k, t, m, c, &o);
  hs_plan_t plan, got;
  hs_plan_init(&plan);
  hs_plan_init(&got);
  hs_search_stats_t st, out;
  memset(&st, 0, sizeof st);
  st.pruned_below_s = 10.0;
  hs_strlcpy(st.note, "pruned at 10", sizeof st.note);
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t s;
  hs__search_memo_put(&k, c->name, HS_OK, &plan, &st, &err);
  static const struct { double beat; bool hit; } q[] = {{5.0, true}, {10.0, true}, {0.0, false},
                                                       {10.5, false}, {20.0, false}};
  for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
    k.beat_s = q[i].beat;
    bool hit = hs__search_memo_get(&k, c->name, &got, &out, &s, &err);
    CHECK_MSG(hit == q[i].hit, "beat %g: %s, expected %s", q[i].beat, hit ? "hit" : "miss",
              q[i].hit ? "hit" : "miss");
  }
  /* a more pruned result does not replace it; a less pruned one does */
  st.pruned_below_s = 5.0;
  hs_strlcpy(st.note, "pruned at 5", sizeof st.note);
  hs__search_memo_put(&k, c->name, HS_OK, &plan, &st, &err);
  k.beat_s = 8.0;
  CHECK(hs__search_memo_get(&k, c->name, &got, &out, &s, &err) && strcmp(out.note, "pruned at 10") == 0);
  st.pruned_below_s = 0.0;
  hs_strlcpy(st.note, "full", sizeof st.note);
  hs__search_memo_put(&k, c->name, HS_OK, &plan, &st, &err);
  k.beat_s = 0.0;
  CHECK(hs__search_memo_get(&k, c->name, &got, &out, &s, &err) && strcmp(out.note, "full") == 0);
  k.beat_s = 30.0;
  CHECK(hs__search_memo_get(&k, c->name, &got, &out, &s, &err) && strcmp(out.note, "full") == 0);
  hs__search_memo_key_free(&k);
  hs_plan_destroy(&got);
  hs_plan_destroy(&plan);
  hs_search_memo_end();
}

int main(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  small_gpt(&m, 16, 2048, 2048);
  hs_cluster_t c;
  /* 4 A100 + 4 V100 across a slow link: pipelines that order adaptation
   * changes */
  CHECK_MSG(two_site_cluster(&c, 4, 1.0, 50, &err) == HS_OK, "%s", err.msg);
  bound_vs_brute_force(&m, &c);
  hapt_under_beat(&m, &c);
  pool_planners_under_beat(&m, &c);
  memo_rule(&m, &c);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  HS_TEST_END();
}
