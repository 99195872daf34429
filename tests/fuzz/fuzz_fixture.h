/*
 * fuzz_fixture.h - the fixed small model and cluster that the plan and
 * profile targets check their input against: a 4-layer GPT (hidden 256, 4
 * heads, vocabulary 1000, sequence 128) and 8 GPUs in two sites (one node of
 * 4 A100 in "east", two nodes of 2 V100 in "west", joined by 1.25 GB/s).
 * Built once per process: a fuzz harness may keep such read-only state.
 */
#ifndef HS_FUZZ_FIXTURE_H
#define HS_FUZZ_FIXTURE_H

#include "hs_sim.h"

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CLUSTER_JSON                                                                   \
  "{\"name\": \"fuzz-8gpu\", \"sites\": ["                                                  \
  " {\"name\": \"east\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\","           \
  "   \"gpus_per_node\": 4}]},"                                                             \
  " {\"name\": \"west\", \"nodes\": [{\"count\": 2, \"gpu\": \"V100-SXM2-32GB\","           \
  "   \"gpus_per_node\": 2, \"nic\": {\"GBps\": 12.5}}], \"fabric\": {\"GBps\": 20}}],"      \
  " \"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": 1.25, \"latency_us\": 5000}],"  \
  " \"spot\": {\"west\": {\"preemptions_per_hour\": 0.05}}}"

static inline void fuzz_fixture_model(hs_model_t *m)
{
  static hs_model_t model;
  static int ready;
  if (!ready) {
    hs_transformer_cfg_t cfg;
    hs_transformer_cfg_init(&cfg);
    snprintf(cfg.name, sizeof cfg.name, "fuzz-gpt-4l");
    cfg.layers = 4;
    cfg.hidden = 256;
    cfg.heads = 4;
    cfg.kv_heads = 4;
    cfg.ffn = 1024;
    cfg.vocab = 1000;
    cfg.seq_len = 128;
    cfg.max_positions = 128;
    hs_error_t err;
    hs_error_init(&err);
    if (hs_model_from_transformer(&cfg, &model, &err) != HS_OK) {
      fprintf(stderr, "fuzz fixture model: %s\n", err.msg);
      abort();
    }
    ready = 1;
  }
  *m = model;
}

static inline const hs_cluster_t *fuzz_fixture_cluster(void)
{
  static hs_cluster_t cluster;
  static int ready;
  if (!ready) {
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_init(&cluster);
    if (hs_cluster_parse(FUZZ_CLUSTER_JSON, "fuzz-8gpu.json", &cluster, &err) != HS_OK) {
      fprintf(stderr, "fuzz fixture cluster: %s\n", err.msg);
      abort();
    }
    ready = 1;
  }
  return &cluster;
}

#endif
