/*
 * sim_fixture.h - small synthetic models and clusters for simulator tests,
 * built so that closed-form answers are exact: an ideal GPU (1 TFLOP/s,
 * efficiency 1, no launch overhead, 1000 GB/s memory) and links with chosen
 * bandwidth and zero or chosen latency.
 */
#ifndef HS_SIM_FIXTURE_H
#define HS_SIM_FIXTURE_H

#include "hs_sim.h"
#include "hs_test.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A chain of n_layers blocks of ops_per_layer GEMMs. Each op: fwd_flops
 * (1e9 = 1 ms on the ideal GPU), bwd = 2 x fwd, params, out/saved bytes per
 * sample. */
static inline void fx_chain_model(hs_model_t *m, int n_layers, int ops_per_layer, double fwd_flops,
                                  double params, double out_bytes, double saved_bytes)
{
  hs_model_init(m);
  snprintf(m->name, sizeof m->name, "chain-%dx%d", n_layers, ops_per_layer);
  m->dtype = HS_DTYPE_BF16;
  m->seq_len = 1;
  m->n_ops = (size_t)n_layers * (size_t)ops_per_layer;
  m->ops = calloc(m->n_ops, sizeof *m->ops);
  for (size_t i = 0; i < m->n_ops; i++) {
    hs_op_t *o = &m->ops[i];
    snprintf(o->name, sizeof o->name, "l%zu.op%zu", i / (size_t)ops_per_layer, i % (size_t)ops_per_layer);
    o->kind = HS_OP_GEMM;
    o->layer = (int32_t)(i / (size_t)ops_per_layer);
    o->fwd_flops = fwd_flops;
    o->bwd_flops = 2 * fwd_flops;
    o->params = params;
    o->out_bytes = out_bytes;
    o->saved_bytes = saved_bytes;
    o->saved_bytes_selective = saved_bytes;
    o->saved_tp_sharded = true;
    o->tp_split = HS_TP_COLUMN;
  }
}

/* A GPT-3-style decoder (Megatron-LM's: GELU, LayerNorm, biases, tied
 * embeddings, ffn 4h, vocabulary 51200, bf16) of l layers, hidden h, a
 * heads and sequence s. */
static inline hs_transformer_cfg_t fx_gpt_cfg(const char *name, int64_t l, int64_t h, int64_t a,
                                              int64_t s)
{
  hs_transformer_cfg_t c;
  hs_transformer_cfg_init(&c);
  snprintf(c.name, sizeof c.name, "%s", name);
  c.layers = l;
  c.hidden = h;
  c.heads = a;
  c.kv_heads = a;
  c.ffn = 4 * h;
  c.vocab = 51200;
  c.seq_len = s;
  c.max_positions = s;
  c.bias = true;
  c.tied_embeddings = true;
  c.act = HS_ACT_GELU;
  c.norm = HS_NORM_LAYERNORM;
  c.dtype = HS_DTYPE_BF16;
  return c;
}

/* The generator's attention op (the single HS_OP_ATTENTION op of a
 * one-layer decoder) for sequence s, heads a, head_dim hd in dtype. */
static inline hs_op_t fx_attention_op(double s, double a, double hd, hs_dtype_t dtype)
{
  hs_transformer_cfg_t c;
  memset(&c, 0, sizeof c);
  c.arch = HS_ARCH_DECODER;
  c.layers = 1;
  c.hidden = (int64_t)(a * hd);
  c.heads = (int64_t)a;
  c.kv_heads = (int64_t)a;
  c.ffn = 4 * c.hidden;
  c.vocab = 1000;
  c.seq_len = (int64_t)s;
  c.dtype = dtype;
  hs_model_t m;
  hs_error_t err;
  hs_error_init(&err);
  hs_op_t out;
  memset(&out, 0, sizeof out);
  CHECK(hs_model_from_transformer(&c, &m, &err) == HS_OK);
  for (size_t i = 0; i < m.n_ops; i++)
    if (m.ops[i].kind == HS_OP_ATTENTION)
      out = m.ops[i];
  hs_model_destroy(&m);
  return out;
}

/* One site, `nodes` nodes of `gpn` ideal GPUs; intra-node GB/s and latency,
 * NIC GB/s and latency. */
static inline hs_status_t fx_cluster(hs_cluster_t *c, int nodes, int gpn, double intra_GBps,
                                     double intra_lat_us, double nic_GBps, double nic_lat_us,
                                     hs_error_t *err)
{
  char json[4096];
  snprintf(json, sizeof json,
           "{\"name\": \"fixture\","
           " \"gpus\": [{\"name\": \"IdealGPU\", \"vendor\": \"test\", \"memory_GiB\": 80,"
           "   \"mem_bw_GBps\": 1000, \"peak_tflops\": {\"fp32\": 1, \"fp16\": 1, \"bf16\": 1, \"fp8\": 0},"
           "   \"gemm_eff_max\": 1, \"gemm_half_flops\": 0, \"mem_eff\": 1, \"launch_us\": 0,"
           "   \"price_ondemand_usd_h\": 1.0, \"price_spot_usd_h\": 0.5}],"
           " \"sites\": [{\"name\": \"s\", \"fabric\": {\"latency_us\": 0},"
           "   \"nodes\": [{\"count\": %d, \"gpu\": \"IdealGPU\", \"gpus_per_node\": %d,"
           "     \"intra_node\": {\"GBps\": %.17g, \"latency_us\": %.17g},"
           "     \"nic\": {\"GBps\": %.17g, \"latency_us\": %.17g}}]}]}",
           nodes, gpn, intra_GBps, intra_lat_us, nic_GBps, nic_lat_us);
  hs_cluster_init(c);
  return hs_cluster_parse(json, "fixture.json", c, err);
}

/* The plan `base` + `extra` + "}" is refused as HS_EINVAL (or HS_ELIMIT
 * where allow_elimit) with a message naming the file "p.json" and holding
 * `needle`. */
static inline void fx_plan_refused(const char *base, const char *extra, const char *needle,
                                   bool allow_elimit)
{
  char text[1024];
  snprintf(text, sizeof text, "%s%s}", base, extra);
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_plan_t p;
  hs_status_t st = hs_plan_parse(text, "p.json", &p, &err);
  CHECK_MSG(st == HS_EINVAL || (allow_elimit && st == HS_ELIMIT), "%s", extra);
  CHECK_MSG(strstr(err.msg, needle) && strstr(err.msg, "p.json"), "%s -> %s", extra, err.msg);
  hs_plan_destroy(&p);
}

#endif
