/*
 * hs_launch.h - a plan as a training framework's launch arguments
 * (docs/export.md, "Launch arguments"): Megatron-LM's pretrain_gpt.py flags
 * or a DeepSpeed ds_config.json.
 *
 * A framework runs one grid: dp identical pipelines of pp stages (v model
 * chunks each when interleaved), every stage a tp x cp group of one GPU
 * type, whole transformer blocks per stage. hs_launch_grid reads that grid
 * out of a plan, and lists every hetsim extra the framework cannot express
 * (per-stage TP, op-level cuts inside a block, uneven data-parallel shares
 * or pipelines, SPMD sharding, heterogeneous groups, ...) in one message.
 *
 * Ownership: hs_launch_grid_t is caller-allocated and holds no pointers.
 */
#ifndef HS_LAUNCH_H
#define HS_LAUNCH_H

#include "hs_sim.h"

#include <stdio.h>

#define HS_LAUNCH_MAX_STAGES 1024

typedef enum { HS_LAUNCH_MEGATRON, HS_LAUNCH_DEEPSPEED } hs_launch_fw_t;
/* "megatron", "deepspeed"; parse returns HS_EINVAL for other names. */
const char *hs_launch_fw_name(hs_launch_fw_t fw);
hs_status_t hs_launch_fw_parse(const char *s, hs_launch_fw_t *out);

typedef struct hs_launch_grid {
  int32_t tp, pp, dp, cp, ep, chunks;
  int32_t microbatch_size, n_microbatches;
  int64_t global_batch;
  int32_t layers[HS_LAUNCH_MAX_STAGES]; /* blocks per virtual stage, pp x chunks entries in
                                           virtual-stage order (plan order) */
  int32_t n_layers;
  hs_recompute_t recompute;
  int32_t zero_stage;
  hs_dtype_t precision;
  bool sequence_parallel, tp_comm_overlap, dp_overlap, grad_reduce_fp32;
  char schedule[HS_SCHED_NAME_MAX];
} hs_launch_grid_t;

/* The grid of plan p over model m (c: the cluster, to check that every
 * group is one GPU type; NULL skips that check). HS_OK, or HS_EINFEASIBLE
 * with err naming every extra `fw` cannot express ("per-stage TP:
 * pipelines[0].stages[1] tp 4, stages[0] tp 2; ..."), or HS_EINVAL when the
 * plan does not match the model (a stage past its ops). The grid is filled
 * as far as it goes either way. O(pipelines x stages x replicas + ops). */
hs_status_t hs_launch_grid(const hs_plan_t *p, const hs_model_t *m, const hs_cluster_t *c,
                           hs_launch_fw_t fw, hs_launch_grid_t *g, hs_error_t *err);

/* Megatron-LM pretrain_gpt.py arguments for grid g and model m, one flag
 * per line with its value, "\"-continued, after "#" comment lines naming
 * the source; every flag is a Megatron-LM arguments.py name. O(stages). */
void hs_launch_megatron_write(const hs_launch_grid_t *g, const hs_model_t *m, const char *source,
                              FILE *out);
/* A DeepSpeed ds_config.json for grid g (keys of DeepSpeed's config
 * parser: train_batch_size, train_micro_batch_size_per_gpu,
 * gradient_accumulation_steps, bf16/fp16, zero_optimization.stage,
 * pipeline.stages/partition, activation_checkpointing). O(1). */
void hs_launch_deepspeed_write(const hs_launch_grid_t *g, FILE *out);

#endif
