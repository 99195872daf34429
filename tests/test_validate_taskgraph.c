/*
 * test_validate_taskgraph.c - the public task graph is the simulator's
 * lowering, expanded: checked against independent counts.
 *
 * - FLOPs: over every executor, microbatch and kernel, the graph does the
 *   model's forward + backward FLOPs for the global batch (tp = 1), and TP
 *   splits divide exactly the split ops (tp = 2).
 * - GEMM shapes: 2 m n k x reps x kernels reproduces each GEMM entry's FLOPs.
 * - Megatron collectives: per transformer block 2 all-reduces forward and 2
 *   backward with tp > 1, none with tp = 1.
 * - Schedules: every executor runs each (microbatch, phase) once.
 * - Predictions: an entry's predicted_s is hs_compute_op_s of its op.
 */
#include "hs_taskgraph.h"
#include "hs_test.h"

static void load(const char *model, const char *cluster, hs_model_t *m, hs_cluster_t *c)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_init(m);
  hs_cluster_init(c);
  CHECK(hs_model_load(model, 0, m, &err) == HS_OK);
  CHECK(hs_cluster_load(cluster, c, &err) == HS_OK);
}

static void grid(const hs_model_t *m, const hs_cluster_t *c, int tp, int pp, int dp, int mb,
                 int64_t gb, hs_plan_t *p)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = tp;
  g.pp = pp;
  g.dp = dp;
  g.microbatch_size = mb;
  g.global_batch = gb;
  hs_plan_init(p);
  CHECK_MSG(hs_plan_grid(m, c, &g, p, &err) == HS_OK, "%s", err.msg);
}

static void test_flops_tp1(void)
{
  hs_model_t m;
  hs_cluster_t c;
  load("gpt3-1.3b", "dgx-a100-1node", &m, &c);
  hs_plan_t p;
  grid(&m, &c, 1, 4, 2, 2, 32, &p);
  hs_error_t err;
  hs_error_init(&err);
  hs_taskgraph_t *tg = NULL;
  CHECK_MSG(hs_taskgraph_new(&m, &c, &p, &tg, &err) == HS_OK, "%s", err.msg);
  /* the model's ops as the plan's kernel set runs them (hs_practice_op: the
   * default's flash attention recomputes the scores in backward, +2.2% of
   * gpt3-1.3b's FLOPs over the model's own count) */
  double want = 0.0;
  for (size_t i = 0; i < m.n_ops; i++) {
    hs_op_t tmp;
    const hs_op_t *op = hs_practice_op(&p.practice, &m.ops[i], 1, &tmp);
    want += op->fwd_flops + op->bwd_flops;
  }
  want *= (double)hs_plan_global_batch(&p);
  double got = 0.0;
  int colls = 0;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    for (int32_t k = 0; k < 2 * x->v; k++)
      for (int32_t i = 0; i < x->work[k].n; i++) {
        const hs_tg_entry_t *en = &x->work[k].e[i];
        if (en->kind == HS_TG_COLL) {
          colls++;
          continue;
        }
        got += en->flops * x->m;
        /* the op as the plan's practice runs it (the loss with the
         * unfused cross entropy's passes) */
        hs_op_t tmp;
        const hs_op_t *op = hs_practice_op(&p.practice, &m.ops[en->op], x->tp, &tmp);
        CHECK_REL(en->predicted_s,
                  hs_compute_op_s(x->gpu, p.precision, op, x->samples, x->tp, (hs_phase_t)en->phase),
                  1e-12);
        if (en->is_gemm && m.ops[en->op].kind == HS_OP_GEMM)
          CHECK_REL(2.0 * en->m * en->n * en->k * en->reps * en->n_kernels, en->flops, 1e-9);
      }
    /* every (microbatch, phase) exactly once */
    int seen[64][2] = {{0}};
    for (int32_t i = 0; i < x->n_items; i++)
      seen[x->order[i].mb][x->order[i].phase]++;
    for (int32_t mb = 0; mb < x->m; mb++)
      CHECK(seen[mb][0] == 1 && seen[mb][1] == 1);
  }
  CHECK_REL(got, want, 1e-9);
  CHECK_EQ_INT(colls, 0);
  CHECK_EQ_INT(tg->n_execs, 8);
  /* 3 stage boundaries x 2 pipelines x 2 directions */
  CHECK_EQ_INT(tg->n_pieces, 12);
  hs_taskgraph_free(tg);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_tp2_collectives(void)
{
  hs_model_t m;
  hs_cluster_t c;
  load("gpt3-1.3b", "dgx-a100-1node", &m, &c);
  hs_plan_t p;
  grid(&m, &c, 2, 2, 2, 1, 16, &p);
  hs_error_t err;
  hs_error_init(&err);
  hs_taskgraph_t *tg = NULL;
  CHECK_MSG(hs_taskgraph_new(&m, &c, &p, &tg, &err) == HS_OK, "%s", err.msg);
  int layers_total = 0;
  int colls_fwd = 0, colls_bwd = 0;
  double split = 0.0, repl = 0.0, want_split = 0.0, want_repl = 0.0;
  for (int32_t e = 0; e < tg->n_execs; e++) {
    const hs_tg_exec_t *x = &tg->execs[e];
    const hs_plan_stage_t *st = &p.pipelines[x->pipeline].stages[x->rank];
    int lo = INT32_MAX, hi = -1;
    for (int32_t op = st->op_first; op < st->op_last; op++)
      if (m.ops[op].layer >= 0) {
        lo = HS_MIN(lo, m.ops[op].layer);
        hi = HS_MAX(hi, m.ops[op].layer);
      }
    layers_total += hi >= lo ? hi - lo + 1 : 0;
    for (int32_t ph = 0; ph < 2; ph++)
      for (int32_t i = 0; i < x->work[ph].n; i++) {
        const hs_tg_entry_t *en = &x->work[ph].e[i];
        if (en->kind == HS_TG_COLL) {
          CHECK_EQ_INT(en->coll_op, HS_COLL_ALLREDUCE);
          if (ph == 0)
            colls_fwd++;
          else
            colls_bwd++;
          continue;
        }
        hs_op_t tmp; /* as the plan's kernel set runs it; the TP split is ours */
        const hs_op_t *op = hs_practice_op(&p.practice, &m.ops[en->op], 2, &tmp);
        double full = (ph ? op->bwd_flops : op->fwd_flops) * x->samples;
        if (op->tp_split == HS_TP_REPLICATE) {
          repl += en->flops;
          want_repl += full;
        } else {
          split += en->flops;
          want_split += full / 2.0;
        }
      }
  }
  /* Megatron: 2 all-reduces per block each way (forward after out_proj and
   * fc2, backward for the qkv and fc1 input gradients), plus the
   * vocab-parallel embedding's forward all-reduce and the LM head's input
   * gradient, once per pipeline (dp = 2) */
  CHECK_EQ_INT(colls_fwd, 2 * layers_total + 2);
  CHECK_EQ_INT(colls_bwd, 2 * layers_total + 2);
  CHECK_REL(split, want_split, 1e-12);
  CHECK_REL(repl, want_repl, 1e-12);
  hs_taskgraph_free(tg);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* A plan the simulator rejects is rejected here too, with its message. */
static void test_invalid_plan(void)
{
  hs_model_t m;
  hs_cluster_t c;
  char mpath[4096];
  hs_strlcpy(mpath, hs_test_data("validate/tiny-gpt.json"), sizeof mpath);
  load(mpath, hs_test_data("validate/cpu2.json"), &m, &c);
  hs_plan_t p;
  grid(&m, &c, 1, 2, 1, 1, 4, &p);
  p.pipelines[0].stages[1].replicas[0].devices[0] = 7; /* no such device */
  hs_error_t err;
  hs_error_init(&err);
  hs_taskgraph_t *tg = NULL;
  CHECK(hs_taskgraph_new(&m, &c, &p, &tg, &err) != HS_OK);
  CHECK(tg == NULL);
  CHECK_CONTAINS(err.msg, "devices[0]");
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_flops_tp1);
  HS_RUN(test_tp2_collectives);
  HS_RUN(test_invalid_plan);
  HS_TEST_END();
}
