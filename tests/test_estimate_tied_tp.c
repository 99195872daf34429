/*
 * test_estimate_tied_tp.c - the estimator's tied-embedding all-reduce
 * against the simulator (sim/lower_grad.c, hs__lower_tied_sync: one
 * 2-holder bucket per (embedding, head) pair, a stream per TP rank when
 * both ends have the same TP degree, else the whole gradient between the
 * pairs' first devices). Each instance makes that exchange the dominant
 * cost, and the estimate must be within 10% of the simulated iteration
 * (the simulator is the independent model here: flows over the topology):
 *
 *  - different TP degrees (tp1 x 2 replicas against one tp2), two sites
 *    joined by 0.2 GB/s: the whole gradient per pair. Before the fix the
 *    estimator halved the bytes: 0.3618 s estimated against 0.6896 s
 *    simulated; hapt's sweep plan at 100 Gb/s was ranked first because of
 *    it (docs/planners.md).
 *  - the same TP degree (tp2 x 2 replicas at both ends), two sites: 4
 *    streams of half the gradient share the link. Before the fix the
 *    estimator counted one stream per pair, not per TP rank: 4.2% low on
 *    bench_search's 64-GPU tp2 pp4 dp8 plan, which it ranked ahead of a
 *    faster one.
 *  - the same, one site, the ends on two nodes joined by 1 GB/s NICs: the
 *    4 streams share each node's NIC (before the fix: not counted).
 */
#include "search_fixture.h"
#include "estimate.h"

#include <math.h>

/* A 2-stage plan: stage 0 (the embedding) on r0 replicas of tp0 devices
 * from device 0, stage 1 (the LM head) on r1 replicas of tp1 from device
 * first1. */
static void two_stage_plan(const hs_model_t *m, hs_plan_t *p, int32_t r0, int32_t tp0,
                           int32_t r1, int32_t tp1, int32_t first1)
{
  hs_plan_init(p);
  p->precision = HS_DTYPE_FP16;
  CHECK(hs_plan_alloc_pipelines(p, 1) == HS_OK);
  hs_plan_pipeline_t *pl = &p->pipelines[0];
  pl->microbatch_size = 2;
  pl->n_microbatches = 4;
  CHECK(hs_plan_alloc_stages(pl, 2) == HS_OK);
  int32_t half = block_first(m, 1, 2);
  pl->stages[0].op_first = 0;
  pl->stages[0].op_last = half;
  pl->stages[1].op_first = half;
  pl->stages[1].op_last = (int32_t)m->n_ops;
  const int32_t reps[2] = {r0, r1}, tps[2] = {tp0, tp1}, first[2] = {0, first1};
  for (int32_t s = 0; s < 2; s++) {
    CHECK(hs_plan_alloc_replicas(&pl->stages[s], reps[s]) == HS_OK);
    for (int32_t q = 0; q < reps[s]; q++) {
      int32_t dv[8];
      for (int32_t j = 0; j < tps[s]; j++)
        dv[j] = first[s] + q * tps[s] + j;
      CHECK(hs_plan_replica_set_devices(&pl->stages[s].replicas[q], dv, tps[s]) == HS_OK);
      pl->stages[s].replicas[q].share = 1.0 / reps[s];
    }
  }
}

static void check_close(const char *what, const hs_model_t *m, const hs_cluster_t *c,
                        hs_plan_t *p)
{
  hs_error_t err;
  hs_error_init(&err);
  CHECK_MSG(hs_plan_validate(p, m, c, "plan", &err) == HS_OK, "%s: %s", what, err.msg);
  hs_estimator_t *e = NULL;
  CHECK(hs_estimator_new(m, c, HS_DTYPE_FP16, &e, &err) == HS_OK);
  hs_estimate_t es;
  CHECK_MSG(hs_estimate_plan(e, p, false, &es, &err) == HS_OK, "%s", err.msg);
  hs_report_t r;
  hs_report_init(&r);
  CHECK_MSG(hs_simulate(m, c, p, NULL, &r, &err) == HS_OK, "%s", err.msg);
  printf("%s: estimate %.6f s, simulated %.6f s\n", what, es.iteration_s, r.iteration_time_s);
  CHECK_MSG(fabs(es.iteration_s - r.iteration_time_s) <= 0.1 * r.iteration_time_s,
            "%s: estimate %.6f s vs simulated %.6f s", what, es.iteration_s, r.iteration_time_s);
  hs_report_destroy(&r);
  hs_estimator_free(e);
}

int main(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  small_gpt(&m, 2, 1024, 256);
  bool tied = false;
  for (size_t i = 0; i < m.n_ops; i++)
    tied = tied || m.ops[i].tied_params > 0;
  CHECK_MSG(tied, "the model has no tied embedding");
  hs_plan_t p;

  hs_cluster_t c;
  CHECK_MSG(two_site_cluster(&c, 2, 0.2, 50, &err) == HS_OK, "%s", err.msg);
  two_stage_plan(&m, &p, 2, 1, 1, 2, 2);
  check_close("tp1 x 2 | tp2, two sites", &m, &c, &p);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);

  CHECK_MSG(two_site_cluster(&c, 4, 0.2, 50, &err) == HS_OK, "%s", err.msg);
  two_stage_plan(&m, &p, 2, 2, 2, 2, 4);
  check_close("tp2 x 2 | tp2 x 2, two sites", &m, &c, &p);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);

  const char *one_site =
      "{\"name\": \"two-node\", \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 2,"
      " \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 4,"
      " \"intra_node\": {\"GBps\": 300, \"latency_us\": 1}, \"nic\": {\"GBps\": 1, \"latency_us\": 5}}]}]}";
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_parse(one_site, "two-node.json", &c, &err) == HS_OK, "%s", err.msg);
  two_stage_plan(&m, &p, 2, 2, 2, 2, 4);
  check_close("tp2 x 2 | tp2 x 2, two nodes", &m, &c, &p);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);

  hs_model_destroy(&m);
  HS_TEST_END();
}
