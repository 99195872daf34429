/*
 * test_search_budget.c - the driver splits a strategy's default work budget
 * over device subsets (hs_planner_run, hs_plan_opts_t.work_share), so a
 * search on G node groups costs about one whole-cluster budget, not 2^G - 1
 * of them (issue 14: autohet missed the 10 s target at 256 GPUs). A probe
 * planner records the share and device count each subset search gets;
 * checked against the closed form: the whole cluster max(1/2, n_0 / sum n),
 * every other subset (1 - that) x n_k / sum_{j>0} n_j, shares summing to 1,
 * and a caller's own share scaling them all.
 */
#include "hs_search.h"
#include "hs_test.h"

#include <math.h>
#include <string.h>

static double shares[64];
static int devices[64];
static int calls;

static hs_status_t probe_init(void *state, const hs_model_t *m, const hs_cluster_t *c,
                              const hs_plan_opts_t *o, hs_error_t *err)
{
  (void)state, (void)m;
  if (calls < 64) {
    shares[calls] = o->work_share;
    devices[calls] = (int)c->n_devices;
  }
  calls++;
  return hs_error_set(err, HS_EINFEASIBLE, "probe: records only");
}

static hs_status_t probe_step(void *state, bool *done, double *progress, hs_error_t *err)
{
  (void)state, (void)err;
  *done = true;
  *progress = 1.0;
  return HS_OK;
}

static hs_status_t probe_result(void *state, hs_plan_t *out, hs_search_stats_t *stats,
                                hs_error_t *err)
{
  (void)state, (void)out, (void)stats;
  return hs_error_set(err, HS_EINTERNAL, "probe: never reached");
}

static void probe_free(void *state) { (void)state; }

static const hs_planner_type_t probe = {
    .name = "probe",
    .description = "records the options of each subset search",
    .state_size = 8,
    .init = probe_init,
    .step = probe_step,
    .result = probe_result,
    .free = probe_free,
};

/* Runs the probe on a cluster of groups with the given node counts (8 GPUs
 * per node, one site per group) and checks the shares. */
static void check_split(const int *nodes, int n_groups, double caller_share)
{
  char json[4096];
  size_t len = (size_t)snprintf(json, sizeof json, "{\"name\": \"probe\", \"sites\": [");
  for (int g = 0; g < n_groups; g++)
    len += (size_t)snprintf(json + len, sizeof json - len,
                            "%s{\"name\": \"s%d\", \"nodes\": [{\"count\": %d, \"gpu\": \"A100-SXM4-80GB\", "
                            "\"gpus_per_node\": 8}]}",
                            g ? ", " : "", g, nodes[g]);
  len += (size_t)snprintf(json + len, sizeof json - len, "], \"links\": [");
  int k = 0;
  for (int a = 0; a < n_groups; a++)
    for (int b = a + 1; b < n_groups; b++)
      len += (size_t)snprintf(json + len, sizeof json - len,
                              "%s{\"between\": [\"s%d\", \"s%d\"], \"GBps\": 10, \"latency_us\": 100}", k++ ? ", " : "", a, b);
  snprintf(json + len, sizeof json - len, "]}");
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_t c;
  hs_cluster_init(&c);
  CHECK_MSG(hs_cluster_parse(json, "probe.json", &c, &err) == HS_OK, "%s", err.msg);
  hs_model_t m;
  CHECK(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.work_share = caller_share;
  calls = 0;
  hs_plan_t plan;
  hs_search_stats_t st;
  hs_report_t rep;
  err.warn_fp = NULL;
  CHECK(hs_planner_run(&probe, &m, &c, &o, NULL, &plan, &st, &rep, &err) == HS_EINFEASIBLE);
  CHECK_EQ_INT(calls, (1 << n_groups) - 1); /* every non-empty set of groups */
  /* the closed form */
  double total = 0.0;
  int sub_devices = 0;
  for (int i = 1; i < calls; i++)
    sub_devices += devices[i];
  double whole = fmax(0.5, (double)devices[0] / (devices[0] + sub_devices));
  double scale = caller_share > 0 ? caller_share : 1.0;
  CHECK_EQ_INT(devices[0], (int)c.n_devices);
  CHECK_REL(shares[0], scale * whole, 1e-12);
  total += shares[0];
  for (int i = 1; i < calls; i++) {
    CHECK_REL(shares[i], scale * (1.0 - whole) * devices[i] / sub_devices, 1e-12);
    total += shares[i];
  }
  CHECK_REL(total, scale, 1e-12);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

static void test_split(void)
{
  static const int two[] = {16, 16}, three[] = {2, 2, 2}, uneven[] = {1, 4, 2};
  check_split(two, 2, 0.0);    /* whole cluster 1/2, each half 1/4 */
  check_split(three, 3, 0.0);  /* whole cluster raised to 1/2 */
  check_split(uneven, 3, 0.0);
  check_split(two, 2, 0.25);   /* a caller's share scales every subset's */
}

int main(void)
{
  HS_RUN(test_split);
  HS_TEST_END();
}
