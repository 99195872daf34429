/*
 * test_sim_practice.c - the kernel set (FlashAttention and the fusions) and
 * Megatron sequence parallelism against closed forms:
 *
 *  - activations per layer, per sample, through hs_memory_per_device on the
 *    middle stage of a 3-stage pipeline that holds exactly one block
 *    (Korthikanti et al. 2022, 2-byte activations, f = 4h):
 *      TP only               s·h·(10 + 24/t + 5·a·s/(h·t))
 *      TP + SP               s·h/t·(34 + 5·a·s/h)
 *      TP + SP + selective   34·s·h/t
 *      flash, TP + SP        (34·s·h + 4·a·s)/t   (the fp32 log-sum-exp per head)
 *    and FlashAttention's activations are linear in s (no s² term);
 *  - FlashAttention's kernel: memory traffic linear in s, backward 2.5x the
 *    forward FLOPs (the recomputed scores);
 *  - the cross entropy's bytes, unfused (Megatron-LM's fp32 passes) and
 *    fused, against hand counts, and its memory-bound kernel time;
 *  - sequence parallelism moves the same bytes as the all-reduces it
 *    replaces (reduce-scatter + all-gather = all-reduce on a ring);
 *  - ZeRO stages' training state per parameter against the ZeRO paper
 *    (mixed-precision Adam, N-way data parallelism): 2+2+12, 2+2+12/N,
 *    2+(2+12)/N, (2+2+12)/N (+ two gathered blocks at stage 3); the
 *    optimizer step divided by N; the link bytes of stages 0-2 equal, stage
 *    3 one and a half times (3 x params against 2 x per step);
 *  - precision: fp8 GEMMs at the fp8 peak, gradients synced in bf16 (2 B),
 *    fp32 training state 4+4+8 (ZeRO-1: 4+4+8/N); fp8 refused on a GPU
 *    without an fp8 peak, naming the field and the GPU;
 *  - TP communication overlap (with SP): each reduce-scatter / all-gather
 *    runs alongside its GEMM, a segment takes max(GEMM, collective)
 *    instead of their sum;
 *  - the default kernel set is megatron-core-2024 (named, the same report);
 *    megatron-2021 changes nothing but the loss; plan JSON round trip and broken
 *    input (names the field and the value); SP without TP refused.
 */
#include "hs_json.h"
#include "sim_fixture.h"

#include <cjson/cJSON.h>

/* Saved activation bytes per sample of one block under the practice: the
 * middle stage of pp=3 over a 3-block model, one microbatch in flight,
 * memory at microbatch size 2 minus at 1. */
static double block_act(int64_t h, int64_t a, int64_t s, int32_t t, const hs_practice_t *pr,
                        hs_recompute_t rc)
{
  hs_transformer_cfg_t cfg = fx_gpt_cfg("gpt-test", 3, h, a, s);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, 3 * t, 100, 0, 10, 0, &err) == HS_OK);
  double mem[2] = {0, 0};
  for (int b = 1; b <= 2; b++) {
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.tp = t;
    g.pp = 3;
    g.dp = 1;
    g.microbatch_size = b;
    g.global_batch = b;
    g.recompute = rc;
    g.practice = *pr;
    hs_plan_t plan;
    CHECK_MSG(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK, "%s", err.msg);
    CHECK(m.ops[plan.pipelines[0].stages[1].op_first].layer == 1);
    CHECK(m.ops[plan.pipelines[0].stages[1].op_last - 1].layer == 1);
    double *per = calloc(c.n_devices, sizeof *per);
    CHECK(hs_memory_per_device(&m, &c, &plan, per, &err) == HS_OK);
    mem[b - 1] = per[t]; /* first device of stage 1 */
    free(per);
    hs_plan_destroy(&plan);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return mem[1] - mem[0];
}

static void test_korthikanti_formulas(void)
{
  const int64_t h = 1024, a = 16, s = 2048;
  const int32_t ts[] = {2, 4, 8};
  for (size_t k = 0; k < HS_ARRAY_LEN(ts); k++) {
    int32_t t = ts[k];
    double sh = (double)s * h, as_h = (double)a * s / h;
    hs_practice_t pr; /* Korthikanti et al.'s kernels: attention scores materialised */
    hs_practice_init(&pr);
    CHECK(hs_kernels_preset("megatron-2021", &pr.kernels) == HS_OK);
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_NONE), sh * (10 + 24.0 / t + 5 * as_h / t),
              1e-12);
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_SELECTIVE), sh * (10 + 24.0 / t), 1e-12);
    pr.sequence_parallel = true;
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_NONE), sh / t * (34 + 5 * as_h), 1e-12);
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_SELECTIVE), 34 * sh / t, 1e-12);
    /* full recomputation keeps each block's input (2sh/t with SP) plus one
     * block's activations while it is recomputed */
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_FULL), 2 * sh / t + sh / t * (34 + 5 * as_h),
              1e-12);
    pr.sequence_parallel = false;
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_FULL),
              2 * sh + sh * (10 + 24.0 / t + 5 * as_h / t), 1e-12);
    pr.sequence_parallel = true;
    pr.kernels.attention = HS_ATTENTION_FLASH;
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_NONE), (34 * sh + 4.0 * a * s) / t, 1e-12);
    pr.sequence_parallel = false;
    CHECK_REL(block_act(h, a, s, t, &pr, HS_RECOMPUTE_NONE),
              sh * (10 + 24.0 / t) + 4.0 * a * s / t, 1e-12);
  }
}

/* FlashAttention: activations O(s·h), linear in s; the unfused kernel's are not. */
static void test_flash_linear_in_s(void)
{
  hs_practice_t pr;
  hs_practice_init(&pr);
  pr.kernels.attention = HS_ATTENTION_FLASH;
  double a1 = block_act(512, 8, 1024, 2, &pr, HS_RECOMPUTE_NONE);
  double a2 = block_act(512, 8, 2048, 2, &pr, HS_RECOMPUTE_NONE);
  CHECK_REL(a2, 2.0 * a1, 1e-12);
  hs_practice_init(&pr);
  pr.kernels.attention = HS_ATTENTION_UNFUSED;
  double u1 = block_act(512, 8, 1024, 2, &pr, HS_RECOMPUTE_NONE);
  double u2 = block_act(512, 8, 2048, 2, &pr, HS_RECOMPUTE_NONE);
  CHECK(u2 > 2.2 * u1);
}

static const hs_op_t *find_kind(const hs_model_t *m, hs_op_kind_t k)
{
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].kind == k)
      return &m->ops[i];
  return NULL;
}

/* The kernel: no s² memory traffic, backward = 2.5 x forward FLOPs. */
static void test_flash_kernel(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_practice_t pr;
  hs_practice_init(&pr);
  pr.kernels.attention = HS_ATTENTION_FLASH;
  double fm[2], bm[2];
  for (int k = 0; k < 2; k++) {
    hs_transformer_cfg_t cfg = fx_gpt_cfg("gpt-test", 1, 1024, 16, 1024 << k);
    hs_model_t m;
    CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
    const hs_op_t *at = find_kind(&m, HS_OP_ATTENTION);
    hs_op_t tmp;
    const hs_op_t *f = hs_practice_op(&pr, at, 1, &tmp);
    CHECK(f != at);
    CHECK_REL(f->bwd_flops, 2.5 * at->fwd_flops, 1e-15);
    CHECK_REL(f->fwd_flops, at->fwd_flops, 1e-15);
    double s = 1024 << k, h = 1024, a = 16;
    /* read Q, K, V, write O (2 bytes) and the log-sum-exp (4 bytes per head and position) */
    CHECK_REL(f->fwd_mem_bytes, 3 * s * h * 2 + s * h * 2 + 4 * a * s, 1e-15);
    fm[k] = f->fwd_mem_bytes;
    bm[k] = f->bwd_mem_bytes;
    /* megatron-2021 leaves every op as the model has it, but the loss (it
     * has no fused cross entropy: test_cross_entropy) */
    hs_practice_t d;
    hs_practice_init(&d);
    CHECK(hs_kernels_preset("megatron-2021", &d.kernels) == HS_OK);
    for (size_t i = 0; i < m.n_ops; i++)
      CHECK((hs_practice_op(&d, &m.ops[i], 8, &tmp) == &m.ops[i]) == (m.ops[i].kind != HS_OP_LOSS));
    hs_model_destroy(&m);
  }
  CHECK_REL(fm[1], 2 * fm[0], 1e-15);
  CHECK_REL(bm[1], 2 * bm[0], 1e-15);
}

/* The loss over T tokens x V logits, per sample, against hand counts of
 * the kernels each kernel set runs:
 *   unfused (Megatron-LM's vocab_parallel_cross_entropy on output.float()):
 *     forward  cast (d + 4), max 4, sub_ 8, exp 8, sum 4, div_ 8 = d + 36,
 *              plus the fp32 loss per token;
 *     backward mul_ 8, the cast's backward 4 + d = d + 12;
 *     fp32 logits: no cast, 32 and 8;
 *   fused: the logits read once (d) and the gradient written once (d).
 * The kernel time is memory-bound: launch + bytes / (mem_bw x mem_eff). */
static void test_cross_entropy(void)
{
  hs_error_t err;
  hs_error_init(&err);
  const double T = 256, V = 51200;
  for (int fp32 = 0; fp32 < 2; fp32++) {
    hs_transformer_cfg_t cfg = fx_gpt_cfg("gpt-test", 1, 512, 8, (int64_t)T);
    if (fp32)
      cfg.dtype = HS_DTYPE_FP32;
    double d = fp32 ? 4.0 : 2.0;
    hs_model_t m;
    CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
    const hs_op_t *loss = find_kind(&m, HS_OP_LOSS);
    hs_op_t tmp;
    hs_practice_t pr;
    hs_practice_init(&pr);
    CHECK(hs_kernels_preset("unfused", &pr.kernels) == HS_OK);
    const hs_op_t *u = hs_practice_op(&pr, loss, 1, &tmp);
    double cast = fp32 ? 0.0 : d + 4.0;
    CHECK_REL(u->fwd_mem_bytes, T * V * (32.0 + cast) + T * 4.0, 1e-12);
    CHECK_REL(u->bwd_mem_bytes, T * V * (8.0 + cast), 1e-12);
    CHECK_REL(u->saved_bytes, T * V * 4.0, 1e-12); /* the fp32 softmax, kept */
    CHECK(u->fwd_flops == loss->fwd_flops && u->bwd_flops == loss->bwd_flops);
    /* megatron-2021 has the same loss */
    hs_practice_t def;
    hs_practice_init(&def);
    CHECK(hs_kernels_preset("megatron-2021", &def.kernels) == HS_OK);
    hs_op_t tmp2;
    const hs_op_t *u2 = hs_practice_op(&def, loss, 1, &tmp2);
    CHECK(u2->fwd_mem_bytes == u->fwd_mem_bytes && u2->bwd_mem_bytes == u->bwd_mem_bytes);
    /* fused (megatron-core-2024): one read forward, one write backward */
    CHECK(hs_kernels_preset("megatron-core-2024", &pr.kernels) == HS_OK);
    const hs_op_t *f = hs_practice_op(&pr, loss, 1, &tmp2);
    CHECK_REL(f->fwd_mem_bytes, T * V * d + T * 4.0, 1e-12);
    CHECK_REL(f->bwd_mem_bytes, T * V * d, 1e-12);
    /* memory-bound kernel time on a GPU with known bandwidth */
    hs_gpu_t g;
    memset(&g, 0, sizeof g);
    snprintf(g.name, sizeof g.name, "membound");
    g.mem_bw_GBps = 1000.0;
    g.mem_eff = 0.5;
    g.launch_us = 3.0;
    g.peak_flops[HS_DTYPE_FP32] = 1e18; /* FLOPs never the bound */
    g.peak_flops[HS_DTYPE_BF16] = 1e18;
    double bw = 1000.0 * HS_GB * 0.5;
    CHECK_REL(hs_compute_op_s(&g, cfg.dtype, u, 2.0, 1, HS_PHASE_FWD),
              3e-6 + 2.0 * (T * V * (32.0 + cast) + T * 4.0) / bw, 1e-9);
    CHECK_REL(hs_compute_op_s(&g, cfg.dtype, u, 2.0, 1, HS_PHASE_BWD), 3e-6 + 2.0 * T * V * (8.0 + cast) / bw,
              1e-9);
    hs_model_destroy(&m);
  }
}

static double total_link_bytes(const hs_report_t *r)
{
  double b = 0.0;
  for (int32_t l = 0; l < r->n_links; l++)
    b += r->links[l].bytes;
  return b;
}

/* Sequence parallelism: reduce-scatter + all-gather move what the
 * all-reduces moved (Korthikanti et al. section 4.2.2); TP only, so every
 * byte on the links is TP traffic. */
static void test_sp_volume(void)
{
  hs_transformer_cfg_t cfg = fx_gpt_cfg("gpt-test", 2, 1024, 16, 512);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, 4, 100, 1, 10, 0, &err) == HS_OK);
  double bytes[2], t[2];
  for (int sp = 0; sp < 2; sp++) {
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.tp = 4;
    g.global_batch = 2;
    g.practice.sequence_parallel = sp;
    hs_plan_t plan;
    CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
    hs_report_t rep;
    CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
    bytes[sp] = total_link_bytes(&rep);
    t[sp] = rep.iteration_time_s;
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
  }
  CHECK(bytes[0] > 0);
  CHECK_REL(bytes[1], bytes[0], 1e-9);
  /* the norms and dropouts run on s/t: less compute, same communication */
  CHECK(t[1] < t[0]);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_refusals_and_json(void)
{
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_plan_t p;
  const char *base = "{\"pipelines\": [{\"microbatch_size\": 1, \"microbatches\": 1, \"stages\": "
                     "[{\"ops\": [0, 2], \"replicas\": [{\"devices\": [0]}]}]}]";
  char text[1024];
  struct {
    const char *extra, *needle;
  } bad[] = {
      {", \"attention\": \"fast\"", "attention: must be flash or unfused, got \"fast\""},
      {", \"kernels\": \"megatron-2099\"", "kernels: unknown preset \"megatron-2099\""},
      {", \"kernels\": {\"preset\": \"x\"}", "kernels.preset: unknown preset \"x\""},
      {", \"kernels\": {\"attention\": \"sdpa\"}", "kernels.attention: must be flash or unfused"},
      {", \"kernels\": {\"fused_act\": \"yes\"}", "fused_act"},
      {", \"kernels\": 3", "kernels"},
      {", \"sequence_parallel\": 1", "sequence_parallel"},
      {", \"zero_stage\": 4", "zero_stage"},
      {", \"tp_comm_overlap\": \"yes\"", "tp_comm_overlap"},
      {", \"zero_stage\": -1", "zero_stage"},
      {", \"fsdp_param_dtype\": \"fp64\"", "fsdp_param_dtype: must be fp32, fp16, bf16 or fp8, got \"fp64\""},
      {", \"fsdp_param_dtype\": 4", "fsdp_param_dtype"},
      {", \"fsdp_shard_grad_op\": \"yes\"", "fsdp_shard_grad_op"},
      {", \"fsdp_backward_prefetch\": \"none\"", "fsdp_backward_prefetch: must be pre or post, got \"none\""},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(bad); k++)
    fx_plan_refused(base, bad[k].extra, bad[k].needle, true);
  /* round trip: preset plus an override, SP */
  hs_error_init(&err);
  snprintf(text, sizeof text,
           "%s, \"kernels\": {\"preset\": \"megatron-core-2024\", \"fused_norm\": false},"
           " \"sequence_parallel\": true, \"zero_stage\": 2}",
           base);
  CHECK_MSG(hs_plan_parse(text, "p.json", &p, &err) == HS_OK, "%s", err.msg);
  CHECK(p.practice.kernels.attention == HS_ATTENTION_FLASH);
  CHECK(!p.practice.kernels.fused_norm && p.practice.kernels.fused_cross_entropy);
  CHECK(p.practice.sequence_parallel);
  CHECK(p.practice.zero_stage == 2 && hs_plan_zero_stage(&p) == 2);
  cJSON *j = hs_plan_to_json(&p);
  char *s = cJSON_PrintUnformatted(j);
  hs_plan_t q;
  CHECK(hs_plan_parse(s, "q.json", &q, &err) == HS_OK);
  CHECK(hs_practice_equal(&p.practice, &q.practice));
  free(s);
  cJSON_Delete(j);
  hs_plan_destroy(&q);
  hs_plan_destroy(&p);
  /* FSDP options: bytes per gathered parameter, round trip */
  hs_error_init(&err);
  snprintf(text, sizeof text, "%s, \"zero_stage\": 3, \"fsdp_param_dtype\": \"fp32\","
           " \"fsdp_backward_prefetch\": \"post\", \"fsdp_shard_grad_op\": true}", base);
  CHECK_MSG(hs_plan_parse(text, "p.json", &p, &err) == HS_OK, "%s", err.msg);
  CHECK(p.practice.fsdp_param_dtype_set && p.practice.fsdp_param_dtype == HS_DTYPE_FP32);
  CHECK(p.practice.fsdp_backward_post && p.practice.fsdp_shard_grad_op);
  CHECK(hs_practice_gather_bytes(&p.practice, HS_DTYPE_BF16) == 4.0);
  j = hs_plan_to_json(&p);
  s = cJSON_PrintUnformatted(j);
  CHECK(hs_plan_parse(s, "q.json", &q, &err) == HS_OK);
  CHECK(hs_practice_equal(&p.practice, &q.practice));
  CHECK(strstr(s, "\"fsdp_param_dtype\":\"fp32\"") && strstr(s, "\"fsdp_backward_prefetch\":\"post\""));
  free(s);
  cJSON_Delete(j);
  hs_plan_destroy(&q);
  hs_plan_destroy(&p);
  /* unset: the precision's weight bytes (hs_precision_state_bytes) */
  hs_practice_t d;
  hs_practice_init(&d);
  CHECK(hs_practice_gather_bytes(&d, HS_DTYPE_BF16) == 2.0);
  CHECK(hs_practice_gather_bytes(&d, HS_DTYPE_FP32) == 4.0);
  d.fsdp_param_dtype_set = true;
  d.fsdp_param_dtype = HS_DTYPE_BF16;
  CHECK(hs_practice_gather_bytes(&d, HS_DTYPE_FP32) == 2.0);
  bool post = true;
  CHECK(hs_fsdp_prefetch_parse("pre", &post) == HS_OK && !post);
  CHECK(hs_fsdp_prefetch_parse("POST", &post) == HS_EINVAL);
  CHECK(hs_fsdp_prefetch_parse(NULL, &post) == HS_EINVAL);
  snprintf(text, sizeof text, "%s, \"kernels\": {\"preset\": \"megatron-core-2024\", \"fused_norm\": false},"
           " \"sequence_parallel\": true, \"zero_stage\": 2}", base);
  CHECK(hs_plan_parse(text, "p.json", &p, &err) == HS_OK);
  CHECK(hs_plan_parse(text, "q.json", &q, &err) == HS_OK);
  /* SP on a plan whose TP groups are all single devices: refused, naming it */
  hs_model_t m;
  fx_chain_model(&m, 1, 2, 1e9, 1e6, 0, 0);
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, 2, 100, 0, 10, 0, &err) == HS_OK);
  hs_error_init(&err);
  CHECK(hs_plan_validate(&q, &m, &c, "q.json", &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "q.json: sequence_parallel (--sequence-parallel)"), "%s", err.msg);
  hs_plan_destroy(&q);
  hs_plan_destroy(&p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* Naming the default kernel set explicitly gives byte-identical reports. */
static void test_default_identical(void)
{
  hs_transformer_cfg_t cfg = fx_gpt_cfg("gpt-test", 4, 512, 8, 256);
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_model_from_transformer(&cfg, &m, &err) == HS_OK);
  hs_cluster_t c;
  CHECK(fx_cluster(&c, 1, 8, 100, 1, 10, 0, &err) == HS_OK);
  char *out[2];
  for (int k = 0; k < 2; k++) {
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.tp = 2;
    g.pp = 2;
    g.dp = 2;
    g.global_batch = 16;
    hs_plan_t plan;
    CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
    if (k) /* the default is current practice (HS_KERNELS_DEFAULT) */
      CHECK(hs_kernels_preset("megatron-core-2024", &plan.practice.kernels) == HS_OK);
    else
      CHECK(strcmp(hs_kernels_preset_name(&plan.practice.kernels), "megatron-core-2024") == 0);
    hs_report_t rep;
    CHECK(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK);
    cJSON *j = hs_report_to_json(&rep);
    out[k] = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
  }
  CHECK(strcmp(out[0], out[1]) == 0);
  free(out[0]);
  free(out[1]);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

static void test_zero_memory(void)
{
  const int L = 4, ops = 2;
  const double P = 10e6; /* per op */
  hs_model_t m;
  fx_chain_model(&m, L, ops, 1e9, P, 0.0, 0.0);
  const int ns[] = {2, 4, 8};
  for (size_t k = 0; k < HS_ARRAY_LEN(ns); k++) {
    int N = ns[k];
    hs_cluster_t c;
    hs_error_t err;
    hs_error_init(&err);
    CHECK(fx_cluster(&c, 1, N, 100, 1, 10, 0, &err) == HS_OK);
    double total = L * ops * P;
    double expect[4] = {16 * total, (4 + 12.0 / N) * total, (2 + 14.0 / N) * total,
                        16 * total / N + 2 * 2.0 * ops * P}; /* + two whole blocks at 2 B */
    double link[4] = {0}, opt_s[4] = {0};
    for (int z = 0; z < 4; z++) {
      hs_grid_opts_t g;
      hs_grid_opts_init(&g);
      g.dp = N;
      g.global_batch = N;
      g.practice.zero_stage = z;
      hs_plan_t plan;
      CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
      double *mem = calloc(c.n_devices, sizeof *mem);
      CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
      for (int d = 0; d < N; d++)
        CHECK_REL(mem[d], expect[z], 1e-12);
      free(mem);
      hs_report_t rep;
      CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
      link[z] = total_link_bytes(&rep);
      opt_s[z] = rep.iteration_time_s;
      hs_report_destroy(&rep);
      hs_plan_destroy(&plan);
    }
    CHECK(link[0] > 0);
    CHECK_REL(link[1], link[0], 1e-9);
    CHECK_REL(link[2], link[0], 1e-9);
    CHECK_REL(link[3], 1.5 * link[0], 1e-9);
    /* the optimizer step: 32 B per parameter at 1000 GB/s, over N under ZeRO */
    CHECK_REL(opt_s[0] - opt_s[1], total * 32.0 / 1000e9 * (1.0 - 1.0 / N), 1e-6);
    hs_cluster_destroy(&c);
  }
  hs_model_destroy(&m);
}

static void test_precision(void)
{
  const double params = 25e6; /* per op, 2 ops */
  hs_model_t m;
  fx_chain_model(&m, 1, 2, 1e9, params, 0.0, 0.0);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  const int n = 2;
  CHECK(fx_cluster(&c, 1, n, 100, 2, 10, 0, &err) == HS_OK);
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.dp = n;
  g.global_batch = n * 3;
  hs_plan_t plan;
  CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
  plan.bucket_bytes = 1e15; /* one bucket, after the backward */
  plan.precision = HS_DTYPE_FP8;
  /* the fixture GPU has no fp8 peak: refused */
  hs_report_t rep;
  CHECK(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "precision (--precision): fp8") && strstr(err.msg, "IdealGPU"), "%s",
            err.msg);
  /* with an fp8 peak of 2 TFLOP/s the GEMMs take half the time; gradients
   * are all-reduced in bf16 */
  c.gpus.gpus[c.devices[0].gpu].peak_flops[HS_DTYPE_FP8] = 2e12;
  hs_error_init(&err);
  CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
  double S = 2 * params * 2.0;
  double ring = 2.0 * (n - 1) * (2e-6 + S / (n * 100e9));
  double compute = 3 * (2e-3 + 4e-3) / 2.0;
  double opt = 2 * params * 32.0 / 1000e9;
  CHECK_REL(rep.iteration_time_s, compute + ring + opt, 1e-6);
  /* MFU against the fp8 peak: 6 samples x 6 GFLOP */
  CHECK_REL(rep.mfu, 6 * 6e9 / rep.iteration_time_s / (n * 2e12), 1e-9);
  hs_report_destroy(&rep);
  /* fp32 training state: 4 weights + 4 gradients + 8 Adam moments, ZeRO-1
   * shards the 8 */
  plan.precision = HS_DTYPE_FP32;
  double mem[2];
  CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
  CHECK_REL(mem[0], 16.0 * 2 * params, 1e-12);
  plan.practice.zero_stage = 1;
  CHECK(hs_memory_per_device(&m, &c, &plan, mem, &err) == HS_OK);
  CHECK_REL(mem[0], (8.0 + 8.0 / n) * 2 * params, 1e-12);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* L layers of a column-parallel then a row-parallel GEMM (1 GFLOP each, so
 * f = 1/t ms forward, b = 2/t ms backward), TP t = 2 with SP, one sample;
 * every sequence-parallel collective moves X bytes: c = (t-1) X/(t B). */
static void test_tp_comm_overlap(void)
{
  const int L = 3, t = 2;
  const double B = 100e9, X = 1.5e8;
  hs_model_t m;
  fx_chain_model(&m, L, 2, 1e9, 0.0, X, 0.0);
  for (size_t i = 0; i < m.n_ops; i++) {
    m.ops[i].tp_allreduce_bwd = i % 2 == 0; /* column-parallel */
    m.ops[i].tp_allreduce_fwd = i % 2 == 1; /* row-parallel */
    m.ops[i].tp_split = i % 2 == 0 ? HS_TP_COLUMN : HS_TP_ROW;
  }
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(fx_cluster(&c, 1, t, B / 1e9, 0, 10, 0, &err) == HS_OK);
  double f = 1e-3 / t, b = 2e-3 / t, cc = (t - 1) * X / (t * B);
  CHECK(f < cc && cc < b);
  double T[3];
  const double k = 0.25; /* ov = 2: overlap contention (sim/contention.h) */
  for (int ov = 0; ov < 3; ov++) {
    c.gpus.gpus[c.devices[0].gpu].overlap_slowdown = ov == 2 ? k : 0.0;
    hs_grid_opts_t g;
    hs_grid_opts_init(&g);
    g.tp = t;
    g.global_batch = 1;
    g.practice.sequence_parallel = true;
    g.practice.tp_comm_overlap = ov > 0;
    hs_plan_t plan;
    CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
    hs_report_t rep;
    CHECK_MSG(hs_simulate(&m, &c, &plan, NULL, &rep, &err) == HS_OK, "%s", err.msg);
    T[ov] = rep.iteration_time_s;
    hs_report_destroy(&rep);
    hs_plan_destroy(&plan);
  }
  /* the first column GEMM has no gather (nothing before it), the first
   * column GEMM's backward no reduce-scatter */
  double serial = 2 * L * (f + b) + 2 * (2 * L - 1) * cc;
  double overlapped = f + (2 * L - 1) * fmax(f, cc) + (2 * L - 1) * fmax(b, cc) + b;
  CHECK_REL(T[0], serial, 1e-6);
  CHECK_REL(T[1], overlapped, 1e-6);
  /* each overlapped GEMM x runs at 1/(1+k) while the collective runs:
   * max(c, x + k min(x, c/(1+k))); here the forward's stays hidden
   * (c >= f (1+k)) and the backward's grows by k c/(1+k) */
  double sf = fmax(cc, f + k * fmin(f, cc / (1 + k))), sb = fmax(cc, b + k * fmin(b, cc / (1 + k)));
  CHECK(sf == cc && sb > b);
  CHECK_REL(T[2], f + (2 * L - 1) * sf + (2 * L - 1) * sb + b, 1e-6);
  /* refused without SP, naming both */
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = t;
  g.global_batch = 1;
  g.practice.tp_comm_overlap = true;
  hs_plan_t plan;
  CHECK(hs_plan_grid(&m, &c, &g, &plan, &err) == HS_OK);
  hs_error_init(&err);
  CHECK(hs_plan_validate(&plan, &m, &c, NULL, &err) == HS_EINVAL);
  CHECK_MSG(strstr(err.msg, "tp_comm_overlap (--tp-comm-overlap)") &&
                strstr(err.msg, "sequence_parallel (--sequence-parallel)"),
            "%s", err.msg);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

int main(void)
{
  HS_RUN(test_tp_comm_overlap);
  HS_RUN(test_precision);
  HS_RUN(test_zero_memory);
  HS_RUN(test_korthikanti_formulas);
  HS_RUN(test_flash_linear_in_s);
  HS_RUN(test_flash_kernel);
  HS_RUN(test_cross_entropy);
  HS_RUN(test_sp_volume);
  HS_RUN(test_refusals_and_json);
  HS_RUN(test_default_identical);
  HS_TEST_END();
}
