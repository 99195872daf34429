/*
 * plan_summary.c - a plan in one line, in Megatron-LM's vocabulary:
 *
 *   tp2 pp4 dp8 mbs 1 x 64 microbatches 1f1b bf16 megatron-core-2024 framework=none,
 *   layers emb+0-5|6-11|12-17|18-23+head
 *
 * tp = tensor-parallel degree, pp = pipeline stages (ranks), dp = data-
 * parallel replicas of a stage (identical pipelines x replicas inside a
 * stage), vpp = virtual pipeline size (model chunks per device, interleaved
 * schedules), mbs = micro-batch size per rank (samples one TP group
 * computes per microbatch: the pipeline's microbatch x the replica's share),
 * then the number of microbatches per pipeline and the schedule. hetsim's
 * extras are spelled out: a degree that differs between stages is listed
 * per stage ("tp8|8|4|4", asymmetric stages), uneven DP shares give the
 * range of mbs ("mbs 0.5-1.5 (uneven DP shares)"), and pipelines that
 * differ from the first are counted ("3 pipelines with different stages").
 * The precision, kernel preset and framework preset are always named
 * ("1f1b bf16 megatron-core-2024 framework=none"), other practice options
 * when set. Layers per stage are transformer-block ranges ("emb+" / "+head"
 * where a stage holds ops before or after the blocks) when the model is
 * known, else op ranges ("ops 0-40|41-80"); an interleaved rank lists every
 * chunk it holds ("emb+0-3,8-11|4-7,12-15+head"). O(stages x replicas + ops).
 */
#include "hs_sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct out {
  char *buf;
  size_t n, off;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_t *o, const char *fmt, ...)
{
  if (o->off >= o->n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(o->buf + o->off, o->n - o->off, fmt, ap);
  va_end(ap);
  if (k > 0)
    o->off += (size_t)k;
}

static bool same_structure(const hs_plan_pipeline_t *a, const hs_plan_pipeline_t *b)
{
  if (a->n_stages != b->n_stages || a->microbatch_size != b->microbatch_size ||
      a->n_microbatches != b->n_microbatches)
    return false;
  for (int32_t k = 0; k < a->n_stages; k++)
    if (a->stages[k].op_first != b->stages[k].op_first || a->stages[k].op_last != b->stages[k].op_last ||
        a->stages[k].n_replicas != b->stages[k].n_replicas ||
        a->stages[k].replicas[0].n_devices != b->stages[k].replicas[0].n_devices)
      return false;
  return true;
}

/* "tp8" or "tp8|8|4|4": a per-stage degree of pipeline 0. */
static void degree(out_t *o, const char *name, const hs_plan_pipeline_t *pl, int32_t ranks,
                   int32_t mult, bool tp, int32_t div)
{
  int32_t first = 0;
  bool uniform = true;
  for (int32_t k = 0; k < ranks; k++) {
    const hs_plan_stage_t *s = &pl->stages[k];
    int32_t v = tp ? s->replicas[0].n_devices : s->n_replicas * mult / div;
    if (k == 0)
      first = v;
    uniform &= v == first;
  }
  put(o, "%s%d", name, first);
  if (!uniform)
    for (int32_t k = 1; k < ranks; k++) {
      const hs_plan_stage_t *s = &pl->stages[k];
      put(o, "|%d", tp ? s->replicas[0].n_devices : s->n_replicas * mult / div);
    }
}

/* " bf16 megatron-core-2024 sp zero1 framework=none": the precision, the
 * kernel preset and the framework preset always (a reader must not have to
 * know the defaults), the other practice options where they are not. */
static void practice(out_t *o, const hs_plan_t *p)
{
  const hs_practice_t *pr = &p->practice;
  put(o, " %s", hs_dtype_name(p->precision));
  const char *pn = hs_kernels_preset_name(&pr->kernels);
  if (pn)
    put(o, " %s", pn);
  else
    put(o, " attention=%s kernels=custom", hs_attention_name(pr->kernels.attention));
  if (pr->sequence_parallel)
    put(o, " sp");
  if (pr->zero_stage > 0)
    put(o, " zero%d", (int)pr->zero_stage);
  if (pr->tp_comm_overlap)
    put(o, " tp-overlap");
  if (!pr->dp_overlap)
    put(o, " dp-overlap=off");
  if (!pr->overlap_contention)
    put(o, " contention=off");
  if (pr->expert_parallel > 1)
    put(o, " ep%d", (int)pr->expert_parallel);
  if (pr->grad_accum != HS_GRAD_ACCUM_FUSED)
    put(o, " grad-accum=%s", hs_grad_accum_name(pr->grad_accum));
  if (pr->grad_reduce_fp32)
    put(o, " grad-reduce=fp32");
  put(o, " framework=%s", hs_framework_name(pr->framework.id));
}

/* One stage's transformer blocks ("emb+0-5", "6-11+head", "emb"), or its op
 * range when the model is unknown or does not match. O(ops of the stage). */
static void stage_layers(out_t *o, const hs_model_t *m, const hs_plan_stage_t *s)
{
  if (!m || s->op_last > (int32_t)m->n_ops) {
    put(o, "%d-%d", s->op_first, s->op_last - 1);
    return;
  }
  int32_t lf = -1, ll = -1;
  bool pre = false, post = false;
  for (int32_t op = s->op_first; op < s->op_last; op++) {
    int32_t l = m->ops[op].layer;
    if (l < 0) {
      if (lf < 0)
        pre = true;
      else
        post = true;
      continue;
    }
    if (lf < 0)
      lf = l;
    ll = l;
  }
  if (lf < 0)
    put(o, pre ? "emb" : "-");
  else if (lf == ll)
    put(o, "%s%d%s", pre ? "emb+" : "", lf, post ? "+head" : "");
  else
    put(o, "%s%d-%d%s", pre ? "emb+" : "", lf, ll, post ? "+head" : "");
}

void hs_plan_describe(const hs_plan_t *p, const hs_model_t *m, char *buf, size_t n)
{
  out_t o = {buf, n, 0};
  if (n == 0)
    return;
  buf[0] = '\0';
  if (p->n_pipelines <= 0 || p->pipelines[0].n_stages <= 0) {
    put(&o, "(empty plan)");
    return;
  }
  const hs_plan_pipeline_t *pl = &p->pipelines[0];
  int32_t v = HS_MAX(p->chunks, 1);
  int32_t ranks = HS_MAX(pl->n_stages / v, 1);
  int32_t same = 0, differ = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    if (same_structure(pl, &p->pipelines[i]))
      same++;
    else
      differ++;
  for (int32_t k = 0; k < pl->n_stages; k++)
    if (pl->stages[k].n_replicas <= 0 || !pl->stages[k].replicas) {
      put(&o, "(plan with an empty stage)");
      return;
    }
  /* context parallelism: groups of C replicas share each microbatch */
  int32_t cp = HS_MAX(p->practice.context_parallel, 1);
  degree(&o, "tp", pl, ranks, 1, true, 1);
  put(&o, " pp%d ", ranks);
  degree(&o, "dp", pl, ranks, same, false, cp);
  if (cp > 1)
    put(&o, " cp%d", cp);
  if (v > 1)
    put(&o, " vpp%d", v);
  double lo = INFINITY, hi = 0.0;
  for (int32_t k = 0; k < pl->n_stages; k++)
    for (int32_t q = 0; q < pl->stages[k].n_replicas; q++) {
      double b = pl->microbatch_size * pl->stages[k].replicas[q].share * cp;
      lo = fmin(lo, b);
      hi = fmax(hi, b);
    }
  if (hi - lo <= 1e-9 * hi)
    put(&o, " mbs %.4g", hi);
  else
    put(&o, " mbs %.3g-%.3g (uneven DP shares)", lo, hi);
  put(&o, " x %d microbatches %s", pl->n_microbatches, p->schedule);
  practice(&o, p);
  if (differ > 0)
    put(&o, ", %d pipeline%s with different stages", differ, differ == 1 ? "" : "s");
  if (ranks > 16)
    return;
  put(&o, ", %s ", m ? "layers" : "ops");
  /* rank k holds virtual stages k, k + ranks, ...: its chunks joined by ",",
   * ranks by "|" */
  for (int32_t k = 0; k < ranks; k++) {
    if (k)
      put(&o, "|");
    for (int32_t c = 0; c < v && k + c * ranks < pl->n_stages; c++) {
      if (c)
        put(&o, ",");
      stage_layers(&o, m, &pl->stages[k + c * ranks]);
    }
  }
}
