/*
 * launch.c - a plan as Megatron-LM arguments or a DeepSpeed ds_config.json
 * (hs_launch.h; docs/export.md, "Launch arguments").
 *
 * hs_launch_grid reads the grid out of the plan in four checks, each
 * appending what the framework cannot express to one message:
 *   structure  pipelines alike (stages, micro-batch size and count), every
 *              stage cp replicas of equal share and one TP degree;
 *   layers     whole blocks per stage (no cut inside a block), embedding in
 *              the first stage and head in the last, and a layout the
 *              framework has flags for (Megatron: even, or uneven first /
 *              last stage without interleaving; DeepSpeed: even);
 *   practice   what the framework's flags or keys cover (schedule, ZeRO
 *              stage, recomputation per stage, TP / CP / EP for DeepSpeed);
 *   groups     every device of one GPU type (with a cluster).
 * The writers then print only flags and keys of the frameworks' own
 * argument definitions (tests/data/export/ holds them, transcribed).
 */
#include "hs_launch.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

const char *hs_launch_fw_name(hs_launch_fw_t fw)
{
  return fw == HS_LAUNCH_DEEPSPEED ? "deepspeed" : "megatron";
}

hs_status_t hs_launch_fw_parse(const char *s, hs_launch_fw_t *out)
{
  if (s && strcmp(s, "megatron") == 0)
    *out = HS_LAUNCH_MEGATRON;
  else if (s && strcmp(s, "deepspeed") == 0)
    *out = HS_LAUNCH_DEEPSPEED;
  else
    return HS_EINVAL;
  return HS_OK;
}

/* The list of inexpressible extras under construction. */
typedef struct extras {
  char buf[1536];
  size_t k;
  int n;
} extras_t;

static void extra(extras_t *x, const char *fmt, ...)
{
  if (x->n++ && x->k + 2 < sizeof x->buf)
    x->k += (size_t)snprintf(x->buf + x->k, sizeof x->buf - x->k, "; ");
  if (x->k >= sizeof x->buf)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(x->buf + x->k, sizeof x->buf - x->k, fmt, ap);
  va_end(ap);
  x->k = w > 0 ? HS_MIN(x->k + (size_t)w, sizeof x->buf) : x->k;
}

/* Pipelines alike, stages of cp equal-share replicas of one TP degree.
 * Fills tp, pp, dp, cp, chunks, micro-batch size and count. O(stages x
 * replicas x pipelines). */
static void check_structure(const hs_plan_t *p, hs_launch_grid_t *g, extras_t *x)
{
  const hs_plan_pipeline_t *p0 = &p->pipelines[0];
  g->chunks = HS_MAX(p->chunks, 1);
  g->dp = p->n_pipelines;
  g->pp = HS_MAX(p0->n_stages / g->chunks, 1);
  g->cp = HS_MAX(p->practice.context_parallel, 1);
  g->microbatch_size = p0->microbatch_size;
  g->n_microbatches = p0->n_microbatches;
  g->global_batch = hs_plan_global_batch(p);
  g->tp = p0->stages[0].n_replicas > 0 ? p0->stages[0].replicas[0].n_devices : 0;
  /* R equal-share replicas in every stage = cp x (R / cp) data-parallel
   * ranks, each with 1/(R / cp) of the micro-batch */
  int32_t R = p0->stages[0].n_replicas, rdp = R % g->cp == 0 ? R / g->cp : 0;
  if (rdp > 1 && g->microbatch_size % rdp == 0) {
    g->dp *= rdp;
    g->microbatch_size /= rdp;
  } else if (rdp != 1) {
    extra(x, "a micro-batch of %d samples over %d replicas of a stage (%d context-parallel): "
          "no whole micro-batch per rank", g->microbatch_size, R, g->cp);
  }
  bool tp_said = false, rep_said = false, share_said = false;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    if (pl->n_stages != p0->n_stages || pl->microbatch_size != p0->microbatch_size ||
        pl->n_microbatches != p0->n_microbatches) {
      extra(x, "uneven data parallelism: pipelines[%d] has %d stages, micro-batch %d x %d, "
            "pipelines[0] %d stages, %d x %d", i, pl->n_stages, pl->microbatch_size,
            pl->n_microbatches, p0->n_stages, p0->microbatch_size, p0->n_microbatches);
      continue;
    }
    for (int32_t k = 0; k < pl->n_stages; k++) {
      const hs_plan_stage_t *st = &pl->stages[k];
      if (st->op_first != p0->stages[k].op_first || st->op_last != p0->stages[k].op_last)
        extra(x, "pipelines differ in layout: pipelines[%d].stages[%d] holds ops %d-%d, "
              "pipelines[0] %d-%d", i, k, st->op_first, st->op_last - 1, p0->stages[k].op_first,
              p0->stages[k].op_last - 1);
      if (st->n_replicas != R && !rep_said) {
        rep_said = true;
        extra(x, "per-stage data parallelism: pipelines[%d].stages[%d] has %d replicas, "
              "pipelines[0].stages[0] %d", i, k, st->n_replicas, R);
      }
      for (int32_t r = 0; r < st->n_replicas; r++) {
        const hs_plan_replica_t *rp = &st->replicas[r];
        if (rp->n_devices != g->tp && !tp_said) {
          tp_said = true;
          extra(x, "per-stage TP: pipelines[%d].stages[%d].replicas[%d] tp %d, "
                "pipelines[0].stages[0] tp %d", i, k, r, rp->n_devices, g->tp);
        }
        if (fabs(rp->share - 1.0 / st->n_replicas) > 1e-9 && !share_said) {
          share_said = true;
          extra(x, "uneven data-parallel shares: pipelines[%d].stages[%d].replicas[%d] share "
                "%.4g of %d", i, k, r, rp->share, st->n_replicas);
        }
      }
    }
  }
  if (p->n_shards > 0 || p->n_device_ratios > 0)
    extra(x, "op-level SPMD sharding (%d sharded ops, %d device ratios; HAP)", p->n_shards,
          p->n_device_ratios);
}

/* Whole blocks per virtual stage of pipeline 0 into g->layers; cuts inside
 * a block and embedding / head away from the ends are extras. O(ops). */
static hs_status_t check_layers(const hs_plan_t *p, const hs_model_t *m, hs_launch_grid_t *g,
                                extras_t *x, hs_error_t *err)
{
  const hs_plan_pipeline_t *p0 = &p->pipelines[0];
  if (p0->n_stages > HS_LAUNCH_MAX_STAGES)
    return hs_error_set(err, HS_ELIMIT, "plan: %d stages, more than %d", p0->n_stages,
                        HS_LAUNCH_MAX_STAGES);
  g->n_layers = p0->n_stages;
  for (int32_t k = 0; k < p0->n_stages; k++) {
    const hs_plan_stage_t *st = &p0->stages[k];
    if (st->op_first < 0 || st->op_last > (int32_t)m->n_ops || st->op_first >= st->op_last)
      return hs_error_set(err, HS_EINVAL, "plan: pipelines[0].stages[%d]: ops %d-%d, the model "
                          "%s has %zu", k, st->op_first, st->op_last - 1, m->name, m->n_ops);
    int32_t prev = -2, count = 0;
    for (int32_t op = st->op_first; op < st->op_last; op++) {
      int32_t l = m->ops[op].layer;
      if (l >= 0 && l != prev)
        count++;
      if (l < 0 && k != 0 && k != p0->n_stages - 1)
        extra(x, "embedding or head op %d in pipelines[0].stages[%d] (a framework keeps them "
              "in the first and last stage)", op, k);
      prev = l;
    }
    g->layers[k] = count;
    int32_t f = st->op_first;
    if (f > 0 && m->ops[f].layer >= 0 && m->ops[f - 1].layer == m->ops[f].layer)
      extra(x, "op-level cut inside block %d (pipelines[0].stages[%d] starts at op %d)",
            m->ops[f].layer, k, f);
  }
  return HS_OK;
}

/* Layouts the framework's flags can state: Megatron takes an even split,
 * or (without interleaving) uneven first and last stages around equal
 * middle ones; DeepSpeed's ds_config an even split. O(stages). */
static void check_layout(const hs_launch_grid_t *g, hs_launch_fw_t fw, extras_t *x)
{
  bool even = true;
  for (int32_t k = 1; k < g->n_layers; k++)
    even &= g->layers[k] == g->layers[0];
  if (even)
    return;
  if (fw == HS_LAUNCH_DEEPSPEED) {
    extra(x, "uneven layout (blocks per stage %d, %d, ...): ds_config's pipeline partition is "
          "uniform, parameters or type:REGEX, not counts", g->layers[0], g->layers[1]);
    return;
  }
  if (g->chunks > 1) {
    extra(x, "uneven interleaved layout (blocks per virtual stage %d, %d, ...): "
          "--num-layers-per-virtual-pipeline-stage is one count", g->layers[0], g->layers[1]);
    return;
  }
  for (int32_t k = 2; k + 1 < g->pp; k++)
    if (g->layers[k] != g->layers[1]) {
      extra(x, "uneven middle stages (stage 1 %d blocks, stage %d %d): Megatron-LM sets only "
            "the first and last stage apart", g->layers[1], k, g->layers[k]);
      return;
    }
}

/* Practice the framework's flags or keys cannot state. O(stages). */
static void check_practice(const hs_plan_t *p, hs_launch_fw_t fw, hs_launch_grid_t *g,
                           extras_t *x)
{
  const hs_practice_t *pr = &p->practice;
  hs_strlcpy(g->schedule, p->schedule, sizeof g->schedule);
  g->ep = HS_MAX(pr->expert_parallel, 1);
  g->zero_stage = hs_plan_zero_stage(p);
  g->precision = p->precision;
  g->sequence_parallel = pr->sequence_parallel;
  g->tp_comm_overlap = pr->tp_comm_overlap;
  g->dp_overlap = pr->dp_overlap;
  g->grad_reduce_fp32 = pr->grad_reduce_fp32;
  const hs_plan_pipeline_t *p0 = &p->pipelines[0];
  g->recompute = p0->stages[0].recompute;
  for (int32_t k = 1; k < p0->n_stages; k++)
    if (p0->stages[k].recompute != g->recompute) {
      extra(x, "per-stage recomputation (stage 0 %s, stage %d %s)", hs_recompute_name(g->recompute),
            k, hs_recompute_name(p0->stages[k].recompute));
      break;
    }
  if (g->pp > 1 && strcmp(p->schedule, "1f1b") != 0 && strcmp(p->schedule, "interleaved-1f1b") != 0)
    extra(x, "schedule %s (the frameworks run 1F1B)", p->schedule);
  if (g->precision == HS_DTYPE_FP8)
    extra(x, "precision fp8 (no launch flag written for Transformer Engine's recipe)");
  if (fw == HS_LAUNCH_MEGATRON) {
    if (g->zero_stage >= 2)
      extra(x, "ZeRO stage %d (Megatron-LM's distributed optimizer shards the optimizer state "
            "only: ZeRO-1; try --to deepspeed)", g->zero_stage);
    return;
  }
  if (g->tp > 1)
    extra(x, "tensor parallelism %d (not a ds_config key: the model code sets it, e.g. "
          "Megatron-DeepSpeed's --tensor-model-parallel-size)", g->tp);
  if (g->sequence_parallel)
    extra(x, "sequence parallelism (not a ds_config key)");
  if (g->cp > 1)
    extra(x, "context parallelism %d (not a ds_config key)", g->cp);
  if (g->ep > 1)
    extra(x, "expert parallelism %d (a deepspeed.moe.layer.MoE argument, not a ds_config key)",
          g->ep);
  if (g->chunks > 1)
    extra(x, "interleaved pipeline (%d chunks; DeepSpeed's PipelineEngine has no interleaving)",
          g->chunks);
  if (g->recompute == HS_RECOMPUTE_SELECTIVE)
    extra(x, "selective recomputation (DeepSpeed checkpoints whole layers)");
  if (g->pp > 1 && g->zero_stage >= 2)
    extra(x, "ZeRO stage %d with pipeline parallelism (DeepSpeed's PipelineEngine takes ZeRO-1 "
          "at most)", g->zero_stage);
}

/* Every device of one GPU type. O(devices of the plan). */
static void check_groups(const hs_plan_t *p, const hs_cluster_t *c, extras_t *x)
{
  int32_t first = -1;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t k = 0; k < p->pipelines[i].n_stages; k++) {
      const hs_plan_stage_t *st = &p->pipelines[i].stages[k];
      for (int32_t r = 0; r < st->n_replicas; r++)
        for (int32_t d = 0; d < st->replicas[r].n_devices; d++) {
          int32_t dev = st->replicas[r].devices[d];
          if (dev < 0 || (size_t)dev >= c->n_devices)
            continue;
          int32_t gi = c->devices[dev].gpu;
          if (first < 0)
            first = gi;
          else if (gi != first) {
            extra(x, "heterogeneous groups (%s and %s: one launch runs one GPU type's kernels "
                  "and memory per rank alike)", c->gpus.gpus[first].name, c->gpus.gpus[gi].name);
            return;
          }
        }
    }
}

hs_status_t hs_launch_grid(const hs_plan_t *p, const hs_model_t *m, const hs_cluster_t *c,
                           hs_launch_fw_t fw, hs_launch_grid_t *g, hs_error_t *err)
{
  memset(g, 0, sizeof *g);
  if (p->n_pipelines < 1 || p->pipelines[0].n_stages < 1)
    return hs_error_set(err, HS_EINVAL, "plan: no pipeline with a stage");
  extras_t x = {0};
  check_structure(p, g, &x);
  hs_status_t st = check_layers(p, m, g, &x, err);
  if (st != HS_OK)
    return st;
  check_layout(g, fw, &x);
  check_practice(p, fw, g, &x);
  if (c)
    check_groups(p, c, &x);
  if (x.n)
    return hs_error_set(err, HS_EINFEASIBLE, "%s cannot express %d part%s of this plan: %s",
                        fw == HS_LAUNCH_MEGATRON ? "Megatron-LM" : "DeepSpeed", x.n,
                        x.n == 1 ? "" : "s", x.buf);
  return HS_OK;
}

static void flag(FILE *out, const char *name, const char *fmt, ...)
{
  fprintf(out, "  %s", name);
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    fputc(' ', out);
    vfprintf(out, fmt, ap);
    va_end(ap);
  }
  fputs(" \\\n", out);
}

/* The model's flags (Megatron-LM's spellings of the generator's fields). */
static void megatron_model(const hs_model_t *m, FILE *out)
{
  const hs_transformer_cfg_t *t = &m->cfg;
  flag(out, "--num-layers", "%lld", (long long)t->layers);
  flag(out, "--hidden-size", "%lld", (long long)t->hidden);
  flag(out, "--num-attention-heads", "%lld", (long long)t->heads);
  flag(out, "--ffn-hidden-size", "%lld", (long long)t->ffn);
  flag(out, "--seq-length", "%lld", (long long)m->seq_len);
  if (t->kv_heads > 0 && t->kv_heads != t->heads) {
    flag(out, "--group-query-attention", NULL);
    flag(out, "--num-query-groups", "%lld", (long long)t->kv_heads);
  }
  if (t->head_dim > 0)
    flag(out, "--kv-channels", "%lld", (long long)t->head_dim);
  if (t->max_positions > 0)
    flag(out, "--max-position-embeddings", "%lld", (long long)t->max_positions);
  else {
    flag(out, "--position-embedding-type", "rope");
    flag(out, "--max-position-embeddings", "%lld", (long long)m->seq_len);
  }
  if (t->act == HS_ACT_SWIGLU)
    flag(out, "--swiglu", NULL);
  else if (t->act == HS_ACT_RELU2)
    flag(out, "--squared-relu", NULL);
  if (t->norm == HS_NORM_RMSNORM)
    flag(out, "--normalization", "RMSNorm");
  if (!t->tied_embeddings)
    flag(out, "--untie-embeddings-and-output-weights", NULL);
  if (!t->bias)
    flag(out, "--disable-bias-linear", NULL);
  if (t->experts > 1) {
    flag(out, "--num-experts", "%lld", (long long)t->experts);
    flag(out, "--moe-router-topk", "%lld", (long long)t->topk);
  }
}

void hs_launch_megatron_write(const hs_launch_grid_t *g, const hs_model_t *m, const char *source,
                              FILE *out)
{
  fprintf(out, "# hetsim export --to megatron: Megatron-LM pretrain_gpt.py arguments for %s\n"
          "# (model %s): world size %d = tp %d x pp %d x dp %d x cp %d; append your data,\n"
          "# tokenizer (vocabulary %lld), optimizer and checkpoint arguments.\n",
          source ? source : "the plan", m->name, g->tp * g->pp * g->dp * g->cp, g->tp, g->pp,
          g->dp, g->cp, (long long)m->cfg.vocab);
  fputs("ARGS=(\\\n", out);
  megatron_model(m, out);
  flag(out, "--tensor-model-parallel-size", "%d", g->tp);
  flag(out, "--pipeline-model-parallel-size", "%d", g->pp);
  if (g->chunks > 1 && g->n_layers > 0)
    flag(out, "--num-layers-per-virtual-pipeline-stage", "%d", g->layers[0]);
  if (g->chunks == 1 && g->pp > 1) {
    int32_t first = g->layers[0], last = g->layers[g->pp - 1];
    int32_t mid = g->pp > 2 ? g->layers[1] : -1;
    bool even = first == last && (mid < 0 || mid == first);
    if (!even && (mid < 0 || first != mid))
      flag(out, "--decoder-first-pipeline-num-layers", "%d", first);
    if (!even && (mid < 0 || last != mid))
      flag(out, "--decoder-last-pipeline-num-layers", "%d", last);
  }
  if (g->cp > 1)
    flag(out, "--context-parallel-size", "%d", g->cp);
  if (g->ep > 1)
    flag(out, "--expert-model-parallel-size", "%d", g->ep);
  flag(out, "--micro-batch-size", "%d", g->microbatch_size);
  flag(out, "--global-batch-size", "%lld", (long long)g->global_batch);
  if (g->sequence_parallel)
    flag(out, "--sequence-parallel", NULL);
  if (g->tp_comm_overlap)
    flag(out, "--tp-comm-overlap", NULL);
  if (g->zero_stage >= 1)
    flag(out, "--use-distributed-optimizer", NULL);
  if (g->dp_overlap && g->dp * g->cp > 1)
    flag(out, "--overlap-grad-reduce", NULL);
  if (g->grad_reduce_fp32)
    flag(out, "--accumulate-allreduce-grads-in-fp32", NULL);
  if (g->recompute == HS_RECOMPUTE_SELECTIVE)
    flag(out, "--recompute-granularity", "selective");
  else if (g->recompute == HS_RECOMPUTE_FULL) {
    flag(out, "--recompute-granularity", "full");
    flag(out, "--recompute-method", "uniform");
    flag(out, "--recompute-num-layers", "1");
  }
  if (g->precision == HS_DTYPE_BF16)
    flag(out, "--bf16", NULL);
  else if (g->precision == HS_DTYPE_FP16)
    flag(out, "--fp16", NULL);
  fputs(")\n", out);
}

void hs_launch_deepspeed_write(const hs_launch_grid_t *g, FILE *out)
{
  fprintf(out, "{\n  \"train_batch_size\": %lld,\n  \"train_micro_batch_size_per_gpu\": %d,\n"
          "  \"gradient_accumulation_steps\": %d,\n", (long long)g->global_batch,
          g->microbatch_size, g->n_microbatches);
  if (g->precision == HS_DTYPE_BF16 || g->precision == HS_DTYPE_FP16)
    fprintf(out, "  \"%s\": {\"enabled\": true},\n", g->precision == HS_DTYPE_BF16 ? "bf16" : "fp16");
  if (g->recompute == HS_RECOMPUTE_FULL)
    fprintf(out, "  \"activation_checkpointing\": {\"partition_activations\": false},\n");
  if (g->pp > 1)
    fprintf(out, "  \"pipeline\": {\"stages\": %d, \"partition\": \"uniform\"%s},\n", g->pp,
            g->recompute == HS_RECOMPUTE_FULL ? ", \"activation_checkpoint_interval\": 1" : "");
  fprintf(out, "  \"zero_optimization\": {\"stage\": %d}\n}\n", g->zero_stage);
}
