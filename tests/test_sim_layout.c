/*
 * test_sim_layout.c - uneven pipeline layouts (hs_grid_opts_t.stage_layers,
 * sim/layout.c) and the published suite's plan.stage_layers field.
 *
 *  - boundaries: counts turn into the op ranges a hand count gives,
 *    embedding with the first stage and head with the last, 0 allowed only
 *    where the stage keeps the embedding or the head;
 *  - timing against a naive oracle: interleaved 1F1B (and 1F1B) over
 *    uneven chunks on a toy of uniform 1 ms layers and free communication,
 *    against a dataflow list schedule the test computes itself (each item
 *    starts when its rank is free and its input exists); with equal chunks
 *    the oracle is the closed form (m + (p-1)/v)(t_f + t_b);
 *  - activation memory of an uneven interleaved layout against a hand count;
 *  - broken input: wrong length, bad sum, negative or empty stages, and the
 *    row file's field (non-integer, wrong length), each naming the field.
 */
#include "hs_json.h"
#include "hs_validate.h"
#include "sim_fixture.h"

/* A chain of n_layers one-op blocks (fwd 1 ms, bwd 2 ms, no parameters),
 * with, when emb_head, a zero-cost embedding op before and a head op after
 * (layer -1), as the generator places them. */
static void layout_model(hs_model_t *m, int n_layers, bool emb_head, double saved_bytes)
{
  fx_chain_model(m, n_layers, 1, 1e9, 0.0, 0.0, saved_bytes);
  if (!emb_head)
    return;
  hs_op_t *ops = calloc(m->n_ops + 2, sizeof *ops);
  CHECK(ops != NULL);
  if (!ops)
    return;
  memcpy(ops + 1, m->ops, m->n_ops * sizeof *ops);
  for (int k = 0; k < 2; k++) {
    hs_op_t *o = k == 0 ? &ops[0] : &ops[m->n_ops + 1];
    snprintf(o->name, sizeof o->name, "%s", k == 0 ? "embedding" : "head");
    o->kind = HS_OP_ELEMENTWISE;
    o->layer = -1;
    o->tp_split = HS_TP_REPLICATE;
  }
  free(m->ops);
  m->ops = ops;
  m->n_ops += 2;
}

static hs_status_t grid(const hs_model_t *m, const hs_cluster_t *c, int p, int v, int mb,
                        const char *sched, const int32_t *counts, int n, hs_plan_t *plan,
                        hs_error_t *err)
{
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.pp = p;
  g.global_batch = mb;
  g.schedule = sched;
  g.chunks = v;
  g.stage_layers = counts;
  g.n_stage_layers = n;
  return hs_plan_grid(m, c, &g, plan, err);
}

static void test_bounds(void)
{
  hs_model_t m;
  layout_model(&m, 6, true, 0.0); /* ops: 0 emb, 1..6 blocks 0..5, 7 head */
  hs_error_t err;
  hs_error_init(&err);
  int32_t b[5];
  const int32_t c1[] = {0, 2, 3, 1};
  CHECK_MSG(hs_layout_bounds(&m, c1, 4, b, &err) == HS_OK, "%s", err.msg);
  const int32_t e1[] = {0, 1, 3, 6, 8}; /* emb | 0 1 | 2 3 4 | 5 head */
  for (int k = 0; k < 5; k++)
    CHECK_EQ_INT(b[k], e1[k]);
  const int32_t c2[] = {1, 2, 3, 0};
  CHECK_MSG(hs_layout_bounds(&m, c2, 4, b, &err) == HS_OK, "%s", err.msg);
  const int32_t e2[] = {0, 2, 4, 7, 8}; /* emb 0 | 1 2 | 3 4 5 | head */
  for (int k = 0; k < 5; k++)
    CHECK_EQ_INT(b[k], e2[k]);
  /* broken counts: each names stage_layers and the value */
  const struct {
    int32_t c[4];
    int n;
    const char *want;
  } bad[] = {
      {{1, 2, 3, 1}, 4, "sum to 7 layers"},
      {{0, 0, 3, 3}, 4, "stage_layers[1]: 0 layers leaves the stage empty"},
      {{2, -1, 3, 2}, 4, "stage_layers[1]: must be 0 to 6 layers, got -1"},
      {{3, 3, 0, 0}, 4, "stage_layers[2]: 0 layers"},
      {{6, 0, 0, 0}, 0, "one count per pipeline stage"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(bad); k++) {
    hs_error_init(&err);
    CHECK(hs_layout_bounds(&m, bad[k].c, bad[k].n, b, &err) == HS_EINVAL);
    CHECK_MSG(strstr(err.msg, bad[k].want) != NULL, "case %zu: %s", k, err.msg);
  }
  hs_model_destroy(&m);
  /* no embedding or head: a 0 at either end leaves an empty stage */
  layout_model(&m, 4, false, 0.0);
  const int32_t c3[] = {0, 2, 2};
  hs_error_init(&err);
  CHECK(hs_layout_bounds(&m, c3, 3, b, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "stage_layers[0]") && strstr(err.msg, "before its first block"), "%s", err.msg);
  const int32_t c4[] = {2, 2, 0};
  hs_error_init(&err);
  CHECK(hs_layout_bounds(&m, c4, 3, b, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "stage_layers[2]") && strstr(err.msg, "after its last block"), "%s", err.msg);
  /* through the grid: the count of counts must be pp x chunks */
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, 2, 100, 0, 10, 0, &err) == HS_OK);
  hs_plan_t plan;
  const int32_t c5[] = {1, 1, 2};
  hs_error_init(&err);
  CHECK(grid(&m, &c, 2, 2, 2, "interleaved-1f1b", c5, 3, &plan, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "stage_layers: 3 counts, but pp x chunks = 2 x 2 = 4"), "%s", err.msg);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* ---- naive oracle ---------------------------------------------------------- */

#define NV_MAX 64

/* Megatron's interleaved order written out here (k-th forward: chunk
 * (k / p) % v of microbatch (k / (p v)) p + k % p; backwards mirror it;
 * warm-up (p - r - 1) 2 + (v - 1) p), or 1F1B when v is 1. */
static int naive_order(int p, int v, int m, int r, int *mb, int *ch, int *ph)
{
  int total = m * v, n = 0;
  int warm = v == 1 ? p - r - 1 : (p - r - 1) * 2 + (v - 1) * p;
  if (warm > total)
    warm = total;
  int f = 0, b = 0;
#define PUT(idx, back)                                                          \
  do {                                                                          \
    mb[n] = ((idx) / (p * v)) * p + (idx) % p;                                  \
    ch[n] = (back) ? v - 1 - ((idx) / p) % v : ((idx) / p) % v;                 \
    ph[n] = (back);                                                             \
    n++;                                                                        \
  } while (0)
  for (; f < warm; f++)
    PUT(f, 0);
  for (; f < total; f++, b++) {
    PUT(f, 0);
    PUT(b, 1);
  }
  for (; b < total; b++)
    PUT(b, 1);
#undef PUT
  return n;
}

/* Iteration time (ms) of the dataflow list schedule: forward of virtual
 * stage s needs the forward of s-1, backward of s the backward of s+1 (the
 * last stage: its own forward); an item starts when its rank is done with
 * the previous one and its input exists. Stage s costs counts[s] ms
 * forward, twice that backward. */
static double naive_ms(int p, int v, int m, const int32_t *counts)
{
  static int mb[NV_MAX][4 * NV_MAX], ch[NV_MAX][4 * NV_MAX], ph[NV_MAX][4 * NV_MAX];
  static double fend[NV_MAX][NV_MAX], bend[NV_MAX][NV_MAX];
  int n = p * v, len = 0, pos[NV_MAX] = {0};
  double free_at[NV_MAX] = {0};
  for (int r = 0; r < p; r++)
    len = naive_order(p, v, m, r, mb[r], ch[r], ph[r]);
  for (int s = 0; s < n; s++)
    for (int j = 0; j < m; j++)
      fend[s][j] = bend[s][j] = -1;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; r++) {
      while (pos[r] < len) {
        int k = pos[r], j = mb[r][k], s = ch[r][k] * p + r;
        double dep;
        if (ph[r][k] == 0)
          dep = s == 0 ? 0.0 : fend[s - 1][j];
        else
          dep = s == n - 1 ? fend[s][j] : bend[s + 1][j];
        if (dep < 0)
          break;
        double start = free_at[r] > dep ? free_at[r] : dep;
        double end = start + (ph[r][k] ? 2.0 : 1.0) * counts[s];
        (ph[r][k] ? bend : fend)[s][j] = end;
        free_at[r] = end;
        pos[r]++;
        progress = true;
      }
    }
  }
  double t = 0;
  for (int r = 0; r < p; r++) {
    CHECK_EQ_INT(pos[r], len); /* the order completes */
    t = free_at[r] > t ? free_at[r] : t;
  }
  return t;
}

static void check_timing(int p, int v, int m_mb, const int32_t *counts, bool emb_head)
{
  int n = p * v, layers = 0;
  for (int s = 0; s < n; s++)
    layers += counts[s];
  hs_model_t m;
  layout_model(&m, layers, emb_head, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, p, 100, 0, 10, 0, &err) == HS_OK);
  hs_plan_t plan;
  const char *sched = v > 1 ? "interleaved-1f1b" : "1f1b";
  CHECK_MSG(grid(&m, &c, p, v, m_mb, sched, counts, n, &plan, &err) == HS_OK, "%s", err.msg);
  plan.async_send = true; /* sends never wait for the receiver, as in the oracle */
  hs_report_t rep;
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double expect_ms = naive_ms(p, v, m_mb, counts);
  CHECK_MSG(llround(rep.iteration_time_s * 1e9) == llround(expect_ms * 1e6), "p=%d v=%d m=%d: %.9f s vs %.9f s",
            p, v, m_mb, rep.iteration_time_s, expect_ms * 1e-3);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_timing_naive(void)
{
  /* equal chunks: the oracle is the closed form (m + (p-1)/v)(t_f + t_b)
   * with t_f = v ms, t_b = 2v ms per rank */
  {
    const int32_t one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_REL(naive_ms(4, 2, 8, one), (8 + 3.0 / 2) * (2 + 4), 1e-12);
    CHECK_REL(naive_ms(2, 4, 4, one), (4 + 1.0 / 4) * (4 + 8), 1e-12);
    check_timing(4, 2, 8, one, false);
  }
  /* Llama 3's rule on a toy: one block per chunk, the first chunk
   * embedding only, the last head only (zero-cost ops here) */
  {
    int32_t l3[16];
    for (int s = 0; s < 16; s++)
      l3[s] = s == 0 || s == 15 ? 0 : 1;
    check_timing(4, 4, 8, l3, true);
    check_timing(4, 4, 4, l3, true);
  }
  /* uneven chunks, interleaved and plain 1F1B */
  {
    const int32_t u1[] = {1, 3, 2, 2, 1, 3};
    check_timing(3, 2, 6, u1, false);
    const int32_t u2[] = {2, 1, 1, 3, 2, 1, 2, 1};
    check_timing(2, 4, 4, u2, false);
    const int32_t u3[] = {0, 3, 1, 2};
    check_timing(4, 1, 5, u3, true);
  }
}

/* Activations of an uneven interleaved layout: p 2, v 2, m 2, layers
 * [1, 3, 2, 2] (rank 0 holds 1 and 2, rank 1 holds 3 and 2), S bytes per
 * layer and sample. Rank 0 warms up through all 4 forwards: 2x1 + 2x2 = 6S.
 * Rank 1: F0c0 F1c0 F0c1 (2x3 + 2 = 8S) B0c1 F1c1 (8S again) ...: 8S. */
static void test_memory_hand_count(void)
{
  const double S = 1e6;
  hs_model_t m;
  layout_model(&m, 8, false, S);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, 2, 100, 0, 10, 0, &err) == HS_OK);
  const int32_t counts[] = {1, 3, 2, 2};
  hs_plan_t plan;
  CHECK_MSG(grid(&m, &c, 2, 2, 2, "interleaved-1f1b", counts, 4, &plan, &err) == HS_OK, "%s", err.msg);
  double mem[2];
  CHECK_MSG(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK, "%s", err.msg);
  CHECK_REL(mem[0], 6 * S, 1e-12);
  CHECK_REL(mem[1], 8 * S, 1e-12);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* A one-row published table (4-layer model, 8 A100s, tp2 pp2 dp2, 2 chunks)
 * whose plan carries `extra` (NULL: nothing) and stage_layers `layers`. */
static void small_table(char *buf, size_t n, const char *extra, const char *layers)
{
  snprintf(buf, n,
             "{\"table\": \"t\", \"title\": \"small\", \"source\": \"test\", \"date\": \"2026-11-25\","
             " \"metric\": \"tflops_per_gpu\", \"max_mape\": 0.5,"
             " \"model\": {\"name\": \"m\", \"transformer\": {\"arch\": \"decoder\", \"layers\": 4,"
             "   \"hidden\": 1024, \"heads\": 16, \"ffn\": 4096, \"vocab\": 32000, \"seq_len\": 1024}},"
             " \"cluster\": {\"name\": \"c\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": 1,"
             "   \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8, \"intra_node\": {\"GBps\": 300},"
             "   \"nic\": {\"GBps\": 25}}]}]},"
             " \"rows\": [{\"name\": \"a\", \"source\": \"r1\", \"nodes\": 1, \"measured\": 1,"
             "   \"plan\": {\"tp\": 2, \"pp\": 2, \"dp\": 2, \"microbatch\": 1, \"global_batch\": 8,"
             "              \"chunks\": 2, %s%s\"stage_layers\": %s}}]}",
           extra ? extra : "", extra ? ", " : "", layers);
}

/* The row file's plan.stage_layers. */
static void test_row_field(void)
{
  char buf[4096];
  const char *cases[][2] = {
      {"[0, 2, 2, 0]", NULL},
      {"[1, 2, 1]", "plan.stage_layers: 3 counts, pp x chunks = 4"},
      {"[1, 2.5, 1, 0]", "plan.stage_layers[1]: must be an integer >= 0"},
      {"[1, \"x\", 1, 0]", "plan.stage_layers[1]: must be an integer >= 0 (layers), got a non-number"},
      {"[1, -1, 1, 0]", "plan.stage_layers[1]"},
      {"7", "stage_layers"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    small_table(buf, sizeof buf, "\"async_send\": true", cases[k][0]);
    hs_pub_table_t t;
    hs_pub_table_init(&t);
    hs_error_t err;
    hs_error_init(&err);
    hs_status_t st = hs_pub_table_parse(buf, "t.json", &t, &err);
    if (!cases[k][1]) {
      CHECK_MSG(st == HS_OK, "%s", err.msg);
      if (st == HS_OK) {
        CHECK_EQ_INT(t.rows[0].n_stage_layers, 4);
        CHECK(t.rows[0].async_send);
        hs_pub_result_t res;
        hs_pub_summary_t sum;
        CHECK_MSG(hs_pub_run(&t, &res, &sum, &err) == HS_OK, "%s", err.msg);
        CHECK_EQ_INT(sum.n_simulated, 1);
      }
    } else {
      CHECK(st == HS_EINVAL);
      CHECK_MSG(strstr(err.msg, "t.json") && strstr(err.msg, cases[k][1]), "case %zu: %s", k, err.msg);
    }
    hs_pub_table_destroy(&t);
  }
  /* a layout the model refuses: the row, the field and the value */
  {
    hs_pub_table_t t;
    hs_pub_table_init(&t);
    hs_error_t err;
    hs_error_init(&err);
    small_table(buf, sizeof buf, NULL, "[1, 2, 2, 0]");
    CHECK_MSG(hs_pub_table_parse(buf, "t.json", &t, &err) == HS_OK, "%s", err.msg);
    hs_pub_result_t res;
    hs_pub_summary_t sum;
    CHECK(hs_pub_run(&t, &res, &sum, &err) == HS_EINVAL);
    CHECK_MSG(strstr(err.msg, "t.json: rows[0] (a)") && strstr(err.msg, "sum to 5 layers"), "%s", err.msg);
    hs_pub_table_destroy(&t);
  }
}

int main(void)
{
  HS_RUN(test_bounds);
  HS_RUN(test_timing_naive);
  HS_RUN(test_memory_hand_count);
  HS_RUN(test_row_field);
  HS_TEST_END();
}
