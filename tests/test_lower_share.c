/*
 * test_lower_share.c - the lowering's sharing pass (sim/lower_share.c):
 * executors with equal schedule orders, and templates with equal segments,
 * read one copy.
 *
 * Truths: each executor's order is the one its schedule generates for its
 * own rank (hs_schedule_t.order, called here afresh), so sharing never
 * hands a rank another rank's order; replicas whose work differs (uneven
 * shares) keep templates of their own, and every template's segments add
 * up to its compute. Structure: data-parallel replicas of equal work point
 * at one order and one set of segments (the point of the pass); executors
 * are numbered rank-major (a lockstep instant's state side by side, for
 * speed at 100,000 GPUs: bench_sim). Freeing
 * the lowering frees each array once (the ASan build in CI checks it), and
 * the simulation is unchanged by it (scripts/behaviour_diff.sh: 64
 * outputs, bit for bit; bench_sim's event counts).
 */
#include "hs_search.h"
#include "hs_test.h"
#include "lower.h"
#include "sim_fixture.h"

#include <stdlib.h>
#include <string.h>

/* all_equal: every executor of a rank has the same work (a grid), so
 * each must share replica 0's arrays. */
static void check_lowering(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                           bool all_equal)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_topology_t *topo = NULL;
  CHECK(hs_topology_new(c, &topo, &err) == HS_OK);
  hs_lowered_t low;
  hs_status_t st = hs__lower(m, c, topo, plan, &low, &err);
  CHECK_MSG(st == HS_OK, "%s", err.msg);
  if (st != HS_OK) {
    hs_topology_free(topo);
    return;
  }
  const hs_schedule_t *sc = hs_schedule_find(plan->schedule);
  int shared_orders = 0, shared_tmpls = 0;
  for (int32_t e = 0; e < low.n_execs; e++) {
    const hs_exec_t *x = &low.execs[e];
    const hs_plan_pipeline_t *pl = &plan->pipelines[x->pipeline];
    /* numbered rank-major, then pipeline, then replica (lower_place.c):
     * the executors of one lockstep instant side by side */
    if (e > 0) {
      const hs_exec_t *w = &low.execs[e - 1];
      bool after = x->rank != w->rank ? x->rank > w->rank
                   : x->pipeline != w->pipeline ? x->pipeline > w->pipeline
                                                : x->replica > w->replica;
      CHECK_MSG(after, "executor %d (rank %d, pipeline %d, replica %d) after (%d, %d, %d)", e,
                x->rank, x->pipeline, x->replica, w->rank, w->pipeline, w->replica);
    }
    hs_sched_params_t sp = {.p = pl->n_stages / x->v, .v = x->v, .m = x->m, .rank = x->rank,
                            .warmup = pl->stages[x->rank].warmup, .order = pl->stages[x->rank].order};
    hs_sched_item_t *want = calloc((size_t)x->n_items, sizeof *want);
    sc->order(&sp, want);
    CHECK_MSG(memcmp(want, x->order, (size_t)x->n_items * sizeof *want) == 0,
              "executor %d (rank %d): order is not its rank's", e, x->rank);
    free(want);
    shared_orders += x->order_shared;
    for (int32_t k = 0; k < 2 * x->v; k++) {
      const hs_tmpl_t *t = &x->tmpl[k];
      hs_time_t sum = 0;
      for (int32_t i = 0; i < t->n; i++)
        sum += t->segs[i].compute_ns;
      CHECK_MSG(sum == t->compute_ns, "executor %d template %d: segments %lld ns, template %lld ns", e,
                k, (long long)sum, (long long)t->compute_ns);
      shared_tmpls += t->shared;
      for (int32_t f = 0; f < e; f++) {
        const hs_exec_t *y = &low.execs[f];
        /* segments read by two executors: the same work */
        if (t->n > 0 && y->tmpl[k].segs == t->segs)
          CHECK_MSG(y->samples == x->samples && y->gpu == x->gpu && y->tp == x->tp,
                    "executors %d and %d (%.4g and %.4g samples) share template %d", f, e, y->samples,
                    x->samples, k);
        /* the first executor of a rank owns what a grid's replicas share */
        if (all_equal && y->rank == x->rank && (f == 0 || low.execs[f - 1].rank != x->rank) &&
            (y->pipeline != x->pipeline || y->replica != x->replica)) {
          CHECK_MSG(x->order == y->order, "executor %d: order not shared with executor %d", e, f);
          CHECK_MSG(t->shared && t->segs == y->tmpl[k].segs,
                    "executor %d template %d: not shared with executor %d", e, k, f);
        }
      }
    }
  }
  CHECK_MSG(shared_orders > 0 && shared_tmpls > 0, "nothing shared (%d orders, %d templates)",
            shared_orders, shared_tmpls);
  hs__lowered_destroy(&low);
  hs_topology_free(topo);
}

static void test_grid_and_uneven_shares(void)
{
  hs_model_t m;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_model_load(hs_test_data("models/gpt2/config.json"), 256, &m, &err) == HS_OK, "%s",
            err.msg);
  CHECK(fx_cluster(&c, 4, 8, 300, 1, 25, 5, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = 2;
  g.pp = 2;
  g.dp = 8;
  g.microbatch_size = 16;
  g.global_batch = 16 * 8 * 4;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  check_lowering(&m, &c, &plan, true);
  hs_plan_destroy(&plan);
  /* uneven shares: one pipeline whose first stage's four replicas take 3,
   * 1, 6 and 6 of 16 samples, the second stage's 4 each; the stage
   * boundary from a pp2 grid */
  hs_plan_t g2;
  g.pp = 2;
  g.dp = 1;
  g.global_batch = 64;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &g2, &err) == HS_OK, "%s", err.msg);
  int32_t o0 = g2.pipelines[0].stages[0].op_first, o1 = g2.pipelines[0].stages[0].op_last,
          o2 = g2.pipelines[0].stages[1].op_last;
  hs_plan_destroy(&g2);
  char json[4096];
  int n = snprintf(json, sizeof json,
                   "{\"schema_version\": 1, \"schedule\": \"1f1b\", \"global_batch\": 64,"
                   " \"pipelines\": [{\"microbatch_size\": 16, \"microbatches\": 4, \"stages\": [");
  static const int take[2][4] = {{3, 1, 6, 6}, {4, 4, 4, 4}};
  for (int st2 = 0; st2 < 2; st2++) {
    n += snprintf(json + n, sizeof json - (size_t)n, "%s{\"ops\": [%d, %d], \"replicas\": [",
                  st2 ? ", " : "", st2 ? o1 : o0, st2 ? o2 : o1);
    for (int q = 0; q < 4; q++) {
      int d = st2 * 8 + 2 * q;
      n += snprintf(json + n, sizeof json - (size_t)n, "%s{\"devices\": [%d, %d], \"share\": %.17g}",
                    q ? ", " : "", d, d + 1, take[st2][q] / 16.0);
    }
    n += snprintf(json + n, sizeof json - (size_t)n, "]}");
  }
  snprintf(json + n, sizeof json - (size_t)n, "]}]}");
  hs_status_t rc = hs_plan_parse(json, "uneven.json", &plan, &err);
  CHECK_MSG(rc == HS_OK, "%s\n  %s", err.msg, json);
  if (rc == HS_OK) {
    CHECK_MSG(hs_plan_validate(&plan, &m, &c, NULL, &err) == HS_OK, "%s", err.msg);
    check_lowering(&m, &c, &plan, false);
    /* the even second stage still shares; the first stage's two replicas
     * of 6 samples share with each other and with no one else */
    hs_topology_t *topo = NULL;
    hs_lowered_t low;
    CHECK(hs_topology_new(&c, &topo, &err) == HS_OK);
    if (hs__lower(&m, &c, topo, &plan, &low, &err) == HS_OK) {
      int shared0 = 0, shared1 = 0;
      for (int32_t e = 0; e < low.n_execs; e++)
        *(low.execs[e].rank == 0 ? &shared0 : &shared1) += low.execs[e].tmpl[0].shared;
      CHECK_MSG(shared0 == 1 && shared1 == 3, "shared forward templates: rank 0 %d (want 1), rank 1 %d (want 3)",
                shared0, shared1);
      hs__lowered_destroy(&low);
    }
    hs_topology_free(topo);
    hs_plan_destroy(&plan);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_grid_and_uneven_shares);
  HS_TEST_END();
}
