/*
 * test_plan.c - plan JSON parsing, round trip, validation against model and
 * cluster (every rejection names the field), schedule orders, and memory by
 * hand count.
 */
#include "hs_json.h"
#include "sim_fixture.h"

#include <cjson/cJSON.h>

static const char *good_plan =
    "{\"schedule\": \"1f1b\", \"precision\": \"bf16\", \"pipelines\": ["
    " {\"microbatch_size\": 4, \"microbatches\": 2, \"stages\": ["
    "   {\"ops\": [0, 4], \"replicas\": [{\"devices\": [0, 1]}]},"
    "   {\"ops\": [4, 8], \"recompute\": \"selective\","
    "    \"replicas\": [{\"devices\": [2], \"share\": 0.25}, {\"devices\": [3], \"share\": 0.75}]}]}]}";

static void setup(hs_model_t *m, hs_cluster_t *c)
{
  hs_error_t err;
  hs_error_init(&err);
  fx_chain_model(m, 4, 2, 1e9, 1e6, 1e6, 1e6);
  CHECK(fx_cluster(c, 1, 4, 100, 1, 10, 1, &err) == HS_OK);
}

static void test_parse_roundtrip(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_t p, q;
  CHECK_MSG(hs_plan_parse(good_plan, "plan.json", &p, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(hs_plan_global_batch(&p), 8);
  CHECK_EQ_INT(p.pipelines[0].stages[1].n_replicas, 2);
  CHECK_REL(p.pipelines[0].stages[1].replicas[1].share, 0.75, 1e-12);
  CHECK_EQ_INT(p.pipelines[0].stages[1].recompute, HS_RECOMPUTE_SELECTIVE);
  cJSON *j = hs_plan_to_json(&p);
  char *s = cJSON_PrintUnformatted(j);
  CHECK(hs_plan_parse(s, "roundtrip.json", &q, &err) == HS_OK);
  cJSON *j2 = hs_plan_to_json(&q);
  char *s2 = cJSON_PrintUnformatted(j2);
  CHECK(strcmp(s, s2) == 0);
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c);
  CHECK_MSG(hs_plan_validate(&q, &m, &c, "plan.json", &err) == HS_OK, "%s", err.msg);
  cJSON_free(s);
  cJSON_free(s2);
  cJSON_Delete(j);
  cJSON_Delete(j2);
  hs_plan_destroy(&p);
  hs_plan_destroy(&q);
  hs_plan_destroy(NULL);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* Parse-level rejections: each names the field and value. */
static void test_parse_errors(void)
{
  static const struct {
    const char *json, *needle;
  } cases[] = {
      {"{\"pipelines\": [", "line 1"},
      {"{\"schedule\": \"2f2b\", \"pipelines\": []}", "schedule: unknown schedule \"2f2b\""},
      {"{\"pipelines\": []}", "pipelines: must not be empty"},
      {"{\"pipelines\": [{\"microbatch_size\": 0, \"microbatches\": 1, \"stages\": []}]}",
       "pipelines[0].microbatch_size: must be a positive integer, got 0"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1.5, \"stages\": []}]}",
       "pipelines[0].microbatches: must be a positive integer, got 1.5"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": ["
       "{\"ops\": [3, 1], \"replicas\": [{\"devices\": [0]}]}]}]}",
       "pipelines[0].stages[0].ops"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": ["
       "{\"ops\": [0, 1], \"replicas\": [{\"devices\": [-1]}]}]}]}",
       "pipelines[0].stages[0].replicas[0].devices[0]"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": ["
       "{\"ops\": [0, 1], \"recompute\": \"some\", \"replicas\": [{\"devices\": [0]}]}]}]}",
       "pipelines[0].stages[0].recompute: must be none, selective or full, got \"some\""},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": ["
       "{\"ops\": [0, 1], \"replicas\": [{\"devices\": [0], \"share\": 0}]}]}]}",
       "pipelines[0].stages[0].replicas[0].share: must be a positive number, got 0"},
      {"{\"precision\": \"fp4\", \"pipelines\": [{}]}", "precision: must be fp32, fp16, bf16 or fp8, got \"fp4\""},
      {"{\"global_batch\": 7, \"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 1], \"replicas\": [{\"devices\": [0]}]}]}]}",
       "global_batch: 7, but the pipelines hold 2 samples"},
      {"[1, 2]", "must be an object"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_plan_t p;
    hs_status_t st = hs_plan_parse(cases[k].json, "plan.json", &p, &err);
    CHECK_MSG(st != HS_OK, "case %zu accepted", k);
    CHECK_CONTAINS(err.msg, cases[k].needle);
    CHECK_CONTAINS(err.msg, "plan.json");
    hs_plan_destroy(&p);
  }
}

/* Semantic rejections against model (8 ops) and cluster (4 devices). */
static void test_validate_errors(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c);
  static const struct {
    const char *json, *needle;
  } cases[] = {
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 4], \"replicas\": [{\"devices\": [0]}]},"
       "{\"ops\": [5, 8], \"replicas\": [{\"devices\": [1]}]}]}]}",
       "pipelines[0].stages[1].ops: starts at op 5 but the previous stage ends at op 4"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 4], \"replicas\": [{\"devices\": [0]}]},"
       "{\"ops\": [4, 8], \"replicas\": [{\"devices\": [0]}]}]}]}",
       "pipelines[0].stages[1].replicas[0].devices[0]: device 0 already used by pipelines[0].stages[0]"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 8], \"replicas\": [{\"devices\": [9]}]}]}]}",
       "pipelines[0].stages[0].replicas[0].devices[0]: unknown device 9"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 6], \"replicas\": [{\"devices\": [0]}]}]}]}",
       "pipelines[0].stages: ops end at 6"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 8], \"replicas\": [{\"devices\": [0], \"share\": 0.5}, {\"devices\": [1], \"share\": 0.4}]}]}]}",
       "pipelines[0].stages[0].replicas: shares sum to 0.9"},
      {"{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 8], \"replicas\": [{\"devices\": [0, 1]}, {\"devices\": [2]}]}]}]}",
       "TP degree 1, but op 0 (l0.op0) is held elsewhere with TP degree 2"},
      {"{\"schedule\": \"interleaved-1f1b\", \"chunks\": 2, \"pipelines\": [{\"microbatch_size\": 1,"
       " \"microbatches\": 3, \"stages\": ["
       "{\"ops\": [0, 2], \"replicas\": [{\"devices\": [0]}]}, {\"ops\": [2, 4], \"replicas\": [{\"devices\": [1]}]},"
       "{\"ops\": [4, 6], \"replicas\": [{\"devices\": [0]}]}, {\"ops\": [6, 8], \"replicas\": [{\"devices\": [1]}]}]}]}",
       "microbatches (3) to be a multiple of pipeline ranks (2)"},
      {"{\"schedule\": \"interleaved-1f1b\", \"chunks\": 2, \"pipelines\": [{\"microbatch_size\": 1,"
       " \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 2], \"replicas\": [{\"devices\": [0]}]}, {\"ops\": [2, 4], \"replicas\": [{\"devices\": [1]}]},"
       "{\"ops\": [4, 6], \"replicas\": [{\"devices\": [1]}]}, {\"ops\": [6, 8], \"replicas\": [{\"devices\": [0]}]}]}]}",
       "interleaved chunk must run on the same devices as stages[0]"},
      {"{\"chunks\": 2, \"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 2, \"stages\": ["
       "{\"ops\": [0, 8], \"replicas\": [{\"devices\": [0]}]}]}]}",
       "chunks: must be 1 for schedule 1f1b, got 2"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_plan_t p;
    hs_status_t st = hs_plan_parse(cases[k].json, "plan.json", &p, &err);
    CHECK_MSG(st == HS_OK, "case %zu: parse: %s", k, err.msg);
    if (st == HS_OK) {
      st = hs_plan_validate(&p, &m, &c, "plan.json", &err);
      CHECK_MSG(st != HS_OK, "case %zu accepted", k);
      CHECK_CONTAINS(err.msg, cases[k].needle);
    }
    hs_plan_destroy(&p);
  }
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* Every schedule: each (mb, chunk) forward exactly once before its backward;
 * 1F1B warm-up p-r-1; in-flight never above p for 1F1B, m for GPipe. */
static void test_schedule_orders(void)
{
  for (const hs_schedule_t *const *sp = hs_schedules; *sp; sp++) {
    const hs_schedule_t *s = *sp;
    for (int p = 1; p <= 4; p++)
      for (int v = 1; v <= (s->interleaved ? 3 : 1); v++)
        for (int m = p; m <= 3 * p; m += p) {
          for (int r = 0; r < p; r++) {
            hs_sched_params_t par = {.p = p, .v = v, .m = m, .rank = r, .warmup = -1};
            hs_error_t err;
            hs_error_init(&err);
            if (s->check(&par, &err) != HS_OK)
              continue;
            int n = 2 * m * v;
            hs_sched_item_t *o = calloc((size_t)n, sizeof *o);
            int *fwd = calloc((size_t)(m * v), sizeof(int)), *bwd = calloc((size_t)(m * v), sizeof(int));
            s->order(&par, o);
            int inflight = 0, peak = 0, first_bwd = -1;
            for (int k = 0; k < n; k++) {
              int key = o[k].mb * v + o[k].chunk;
              CHECK(o[k].mb >= 0 && o[k].mb < m && o[k].chunk >= 0 && o[k].chunk < v);
              if (o[k].phase == HS_PHASE_FWD) {
                fwd[key]++;
                inflight++;
                peak = HS_MAX(peak, inflight);
              } else {
                CHECK_MSG(fwd[key] == 1, "%s: backward before forward", s->name);
                bwd[key]++;
                inflight--;
                if (first_bwd < 0)
                  first_bwd = k;
              }
            }
            for (int k = 0; k < m * v; k++)
              CHECK(fwd[k] == 1 && bwd[k] == 1);
            if (strcmp(s->name, "1f1b") == 0) {
              CHECK_EQ_INT(first_bwd, HS_MIN(p - r - 1, m) + (p - r - 1 < m ? 1 : 0));
              CHECK(peak <= p - r);
            }
            if (strcmp(s->name, "gpipe") == 0)
              CHECK_EQ_INT(peak, m);
            free(o);
            free(fwd);
            free(bwd);
          }
        }
  }
  CHECK(hs_schedule_find("1f1b") != NULL);
  CHECK(hs_schedule_find("nope") == NULL);
}

/* Memory by hand: 2 stages x TP 2, 1F1B with 4 microbatches of 2 samples.
 * Stage 0 keeps min(p - 0, m) = 2 microbatches in flight, stage 1 one. */
static void test_memory_hand_count(void)
{
  hs_model_t m;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  fx_chain_model(&m, 4, 2, 1e9, 3e6, 1e5, 7e5); /* saved 7e5 B/sample/op, TP-sharded */
  m.ops[0].saved_tp_sharded = false;             /* one replicated op in stage 0 */
  m.ops[0].tp_split = HS_TP_REPLICATE;
  CHECK(fx_cluster(&c, 1, 4, 100, 1, 10, 1, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = 2;
  g.pp = 2;
  g.microbatch_size = 2;
  g.global_batch = 8;
  hs_plan_t plan;
  CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
  double mem[4];
  CHECK_MSG(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK, "%s", err.msg);
  /* stage 0: ops 0..3; op 0 replicated (3e6 params, 7e5 saved), ops 1..3 split */
  double state0 = 16.0 * (3e6 + 3 * 3e6 / 2);
  double act0 = 2 /* in flight */ * 2 /* samples */ * (7e5 + 3 * 7e5 / 2);
  double state1 = 16.0 * (4 * 3e6 / 2);
  double act1 = 1 * 2 * (4 * 7e5 / 2);
  CHECK_REL(mem[0], state0 + act0, 1e-12);
  CHECK_REL(mem[1], state0 + act0, 1e-12);
  CHECK_REL(mem[2], state1 + act1, 1e-12);
  /* GPipe keeps all 4 microbatches */
  hs_strlcpy(plan.schedule, "gpipe", sizeof plan.schedule);
  CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
  CHECK_REL(mem[2], state1 + 4 * 2 * (4 * 7e5 / 2), 1e-12);
  /* ZeRO-1 over 2 DP replicas is tested through the optimizer term: with a
   * single pipeline nothing is shared, so the state is unchanged */
  plan.optimizer_sharding = true;
  CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
  CHECK_REL(mem[2], state1 + 4 * 2 * (4 * 7e5 / 2), 1e-12);
  hs_plan_destroy(&plan);
  /* OOM is reported, not an error: 80 GiB device, 1e10 params per op */
  hs_model_t big;
  fx_chain_model(&big, 2, 1, 1e9, 1e10, 0, 0);
  hs_grid_opts_init(&g);
  g.global_batch = 1;
  CHECK(hs_plan_grid(&big, &c, &g, &plan, &err) == HS_OK);
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&big, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  CHECK(rep.oom);
  CHECK_EQ_INT(rep.n_oom_devices, 1);
  CHECK_EQ_INT(rep.oom_devices[0], 0);
  CHECK_REL(rep.max_peak_memory_bytes, 16.0 * 2e10, 1e-12);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_model_destroy(&big);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* Whole samples per replica: the validator refuses a fractional share,
 * naming the replica and its share; hs_plan_round_shares gives largest
 * remainder with a floor of one, checked against a naive implementation
 * (sort the remainders) on random targets. */
static uint64_t xorshift(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void round_naive(const double *t, int n, int total, int *out)
{
  int idx[16], given = 0;
  for (int g = 0; g < n; g++) {
    out[g] = (int)floor(t[g]);
    given += out[g];
    idx[g] = g;
  }
  for (int a = 0; a < n; a++) /* stable sort by remainder, largest first */
    for (int b = a + 1; b < n; b++)
      if (t[idx[b]] - floor(t[idx[b]]) > t[idx[a]] - floor(t[idx[a]]) + 1e-12 ||
          (fabs((t[idx[b]] - floor(t[idx[b]])) - (t[idx[a]] - floor(t[idx[a]]))) <= 1e-12 &&
           idx[b] < idx[a])) {
        int x = idx[a];
        idx[a] = idx[b];
        idx[b] = x;
      }
  for (int k = 0; given < total; k++, given++)
    out[idx[k]]++;
}

static void test_whole_samples(void)
{
  hs_model_t m;
  hs_cluster_t c;
  setup(&m, &c);
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_plan_t p;
  const char *frac =
      "{\"schedule\": \"1f1b\", \"pipelines\": ["
      " {\"microbatch_size\": 3, \"microbatches\": 4, \"stages\": ["
      "   {\"ops\": [0, 4], \"replicas\": [{\"devices\": [0, 1]}]},"
      "   {\"ops\": [4, 8], \"replicas\": [{\"devices\": [2], \"share\": 0.5}, {\"devices\": [3], "
      "\"share\": 0.5}]}]}]}";
  CHECK(hs_plan_parse(frac, "plan.json", &p, &err) == HS_OK);
  CHECK(hs_plan_validate(&p, &m, &c, "plan.json", &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "pipelines[0].stages[1].replicas[0].share: 0.5 of a micro-batch of 3");
  /* rounded: 2 + 1 samples (the tie goes to the lower index), then valid */
  CHECK(hs_plan_round_shares(&p, "plan.json", &err) == HS_OK);
  CHECK_REL(p.pipelines[0].stages[1].replicas[0].share, 2.0 / 3.0, 1e-12);
  CHECK_REL(p.pipelines[0].stages[1].replicas[1].share, 1.0 / 3.0, 1e-12);
  CHECK_REL(p.pipelines[0].stages[0].replicas[0].share, 1.0, 1e-12);
  CHECK_MSG(hs_plan_validate(&p, &m, &c, "plan.json", &err) == HS_OK, "%s", err.msg);
  /* a micro-batch of 1 cannot feed two replicas */
  p.pipelines[0].microbatch_size = 1;
  CHECK(hs_plan_round_shares(&p, "plan.json", &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "pipelines[0].stages[1]");
  hs_plan_destroy(&p);
  /* random shares against the naive largest remainder (targets >= 1) */
  uint64_t seed = 12345;
  for (int trial = 0; trial < 500; trial++) {
    int n = 1 + (int)(xorshift(&seed) % 8), total = n + (int)(xorshift(&seed) % 40);
    double w[16], sum = 0.0, t[16];
    for (int g = 0; g < n; g++)
      sum += w[g] = 1.0 + (double)(xorshift(&seed) % 1000);
    for (int g = 0; g < n; g++)
      t[g] = w[g] / sum * total;
    bool all_ge1 = true;
    for (int g = 0; g < n; g++)
      all_ge1 = all_ge1 && t[g] >= 1.0;
    hs_plan_t q;
    hs_plan_init(&q);
    CHECK(hs_plan_alloc_pipelines(&q, 1) == HS_OK);
    q.pipelines[0].microbatch_size = total;
    q.pipelines[0].n_microbatches = 1;
    CHECK(hs_plan_alloc_stages(&q.pipelines[0], 1) == HS_OK);
    CHECK(hs_plan_alloc_replicas(&q.pipelines[0].stages[0], n) == HS_OK);
    for (int g = 0; g < n; g++)
      q.pipelines[0].stages[0].replicas[g].share = w[g] / sum;
    CHECK(hs_plan_round_shares(&q, NULL, &err) == HS_OK);
    int got[16], want[16], tot = 0;
    round_naive(t, n, total, want);
    for (int g = 0; g < n; g++) {
      double x = q.pipelines[0].stages[0].replicas[g].share * total;
      got[g] = (int)nearbyint(x);
      CHECK(fabs(x - got[g]) < 1e-9 && got[g] >= 1);
      tot += got[g];
      if (all_ge1)
        CHECK_EQ_INT(got[g], want[g]);
      else if (t[g] < 1.0) /* raised to one sample, taken from the others */
        CHECK_EQ_INT(got[g], 1);
      else
        CHECK(got[g] <= (int)ceil(t[g] - 1e-9));
    }
    CHECK_EQ_INT(tot, total);
    hs_plan_destroy(&q);
  }
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

/* Memory by hand when data-parallel replicas differ: one stage of 4 ops
 * (3e6 parameters each, 7e5 saved bytes per sample and op), 2 pipelines of
 * 4 single-GPU replicas, a microbatch of 8 split by uneven shares, and the
 * second pipeline fully recomputed. A replica's activations are its
 * samples x 4 x 7e5 (one microbatch in flight on a single stage), or with
 * full recomputation the inputs of the blocks after the first plus one
 * block recomputed. Replicas equal
 * to their neighbour may share the computation (memory.c): the shares are
 * ordered so that equal ones are, and are not, adjacent, and every device
 * must still get its own count. */
static void test_memory_uneven_replicas(void)
{
  hs_model_t m;
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  fx_chain_model(&m, 4, 1, 1e9, 3e6, 1e5, 7e5); /* 4 blocks of one op, 1e5 B out per sample */
  CHECK(fx_cluster(&c, 1, 8, 100, 1, 10, 1, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = 8;
  g.microbatch_size = 8;
  g.global_batch = 64;
  hs_plan_t plan;
  CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
  /* the grid's 8 replicas as 2 pipelines of 4 (replicas of stage 0) */
  const double shares[2][4] = {{0.5, 0.25, 0.125, 0.125}, {0.125, 0.5, 0.125, 0.25}};
  double want[8];
  int dev = 0;
  for (int32_t i = 0; i < plan.n_pipelines; i++) {
    hs_plan_stage_t *stg = &plan.pipelines[i].stages[0];
    for (int32_t q = 0; q < stg->n_replicas; q++, dev++) {
      int k = dev / 4, r = dev % 4;
      stg->replicas[q].share = shares[k][r];
      if (k == 1)
        stg->recompute = HS_RECOMPUTE_FULL;
      double samples = shares[k][r] * 8;
      /* full recomputation keeps the inputs of blocks 1-3 (1e5 each) and
       * recomputes one block (7e5) at a time */
      double act = k == 0 ? samples * 4 * 7e5 : samples * (3 * 1e5 + 7e5);
      want[stg->replicas[q].devices[0]] = 16.0 * 4 * 3e6 + act;
    }
  }
  CHECK_MSG(dev == 8, "the grid gave %d replicas", dev);
  double mem[8];
  CHECK_MSG(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK, "%s", err.msg);
  for (int d = 0; d < 8; d++)
    CHECK_MSG(fabs(mem[d] - want[d]) <= 1e-12 * want[d], "device %d: %.6g B, by hand %.6g B", d, mem[d],
              want[d]);
  hs_plan_destroy(&plan);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
}

int main(void)
{
  HS_RUN(test_parse_roundtrip);
  HS_RUN(test_parse_errors);
  HS_RUN(test_validate_errors);
  HS_RUN(test_schedule_orders);
  HS_RUN(test_memory_hand_count);
  HS_RUN(test_whole_samples);
  HS_RUN(test_memory_uneven_replicas);
  HS_TEST_END();
}
