/*
 * search_fixture.h - shared pieces of the planner tests: a two-site A100 +
 * V100 cluster with a chosen cross-site link, a small GPT built by the
 * transformer generator, and a planner run through the registry (the path
 * the CLI takes) or through a type object directly (init, step, result).
 */
#ifndef HS_SEARCH_FIXTURE_H
#define HS_SEARCH_FIXTURE_H

#include "hs_search.h"
#include "hs_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Two sites of one node each (A100 x gpn, V100 x gpn) joined by a link of
 * GBps and latency_us. */
static inline hs_status_t two_site_cluster(hs_cluster_t *c, int gpn, double GBps, double latency_us,
                                    hs_error_t *err)
{
  char json[2048];
  snprintf(json, sizeof json,
           "{\"name\": \"two-site-%d\", \"sites\": ["
           " {\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": %d,"
           "   \"intra_node\": {\"GBps\": 300, \"latency_us\": 1}, \"nic\": {\"GBps\": 100, \"latency_us\": 5}}]},"
           " {\"name\": \"b\", \"nodes\": [{\"count\": 1, \"gpu\": \"V100-SXM2-32GB\", \"gpus_per_node\": %d,"
           "   \"intra_node\": {\"GBps\": 150, \"latency_us\": 1.5}, \"nic\": {\"GBps\": 50, \"latency_us\": 5}}]}],"
           " \"links\": [{\"between\": [\"a\", \"b\"], \"GBps\": %.17g, \"latency_us\": %.17g}]}",
           2 * gpn, gpn, gpn, GBps, latency_us);
  hs_cluster_init(c);
  return hs_cluster_parse(json, "two-site.json", c, err);
}

/* A GPT of `layers` x `hidden` (64-wide heads, ffn 4 x hidden, vocabulary
 * 32000) at sequence `seq`; with experts > 1 an MoE of that many experts,
 * top-2 routing. */
static inline void small_moe(hs_model_t *m, int layers, int hidden, int seq, int experts)
{
  hs_transformer_cfg_t cfg;
  hs_transformer_cfg_init(&cfg);
  if (experts > 1)
    snprintf(cfg.name, sizeof cfg.name, "moe-%dx%d-e%d", layers, hidden, experts);
  else
    snprintf(cfg.name, sizeof cfg.name, "gpt-%dx%d", layers, hidden);
  cfg.layers = layers;
  cfg.hidden = hidden;
  cfg.heads = hidden / 64;
  cfg.kv_heads = cfg.heads;
  cfg.ffn = 4 * hidden;
  cfg.vocab = 32000;
  cfg.seq_len = seq;
  cfg.max_positions = seq;
  if (experts > 1) {
    cfg.experts = experts;
    cfg.topk = 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_model_from_transformer(&cfg, m, &err);
  CHECK_MSG(st == HS_OK, "model: %s", err.msg);
}

static inline void small_gpt(hs_model_t *m, int layers, int hidden, int seq)
{
  small_moe(m, layers, hidden, seq, 0);
}

/* First op of block k (k == blocks: one past the last op). */
static inline int32_t block_first(const hs_model_t *m, int32_t k, int32_t blocks)
{
  if (k >= blocks)
    return (int32_t)m->n_ops;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].layer == k)
      return (int32_t)i;
  return -1;
}

/* Cuts every pipeline of a pp-stage plan unevenly: `first` blocks in the
 * first stage, `last` in the last, the rest split evenly between the
 * middle ones (the brute forces' uneven first/last points). */
static inline void cut_first_last(hs_plan_t *p, const hs_model_t *m, int32_t pp, int32_t first,
                                  int32_t last)
{
  int32_t blocks = (int32_t)hs_model_layers(m);
  int32_t mid = pp > 2 ? (blocks - first - last) / (pp - 2) : 0;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s + 1 < pp; s++) {
      int32_t b = block_first(m, first + s * mid, blocks);
      p->pipelines[i].stages[s].op_last = b;
      p->pipelines[i].stages[s + 1].op_first = b;
    }
}

/* Whether `first` and `last` blocks in the first and last of pp stages
 * is one of megatron's uneven cuts (Megatron-LM's rules written out): the
 * middle stages even and at least as full, first and last at most 4
 * blocks lighter, and not the even split. */
static inline bool uneven_cut_ok(int32_t pp, int32_t blocks, int32_t first, int32_t last)
{
  int32_t rest = blocks - first - last;
  if (rest < 0 || (pp > 2 && rest % (pp - 2)) || (pp == 2 && rest != 0))
    return false;
  int32_t mid = pp > 2 ? rest / (pp - 2) : (first > last ? first : last);
  return !(first > mid || last > mid || mid - first > 4 || mid - last > 4 || (first == mid && last == mid));
}

/* A simulated report's iteration time, or -1 when it ran out of memory or
 * a device's peak is above (1 - headroom) of its GPU's memory. */
static inline double fit_time_s(const hs_report_t *r, const hs_cluster_t *c, double headroom)
{
  bool fits = !r->oom;
  for (int32_t d = 0; d < r->n_device_mem; d++)
    fits = fits && r->device_peak_memory_bytes[d] <= (1.0 - headroom) * hs_cluster_gpu(c, d)->mem_bytes;
  return fits ? r->iteration_time_s : -1.0;
}

static inline hs_status_t run(const char *name, const hs_model_t *m, const hs_cluster_t *c,
                       const hs_plan_opts_t *o, hs_plan_t *plan, hs_search_stats_t *stats,
                       hs_report_t *rep, hs_error_t *err)
{
  const hs_planner_type_t *t = hs_planner_find(name);
  CHECK_MSG(t != NULL, "planner %s", name);
  if (!t)
    return HS_ENOTFOUND;
  hs_error_init(err);
  err->warn_fp = NULL;
  return hs_planner_run(t, m, c, o, NULL, plan, stats, rep, err);
}

/* Runs a planner type object directly: init, step until done (at most
 * max_steps; a planner that needs more fails the test), result. */
static inline hs_status_t run_type(const hs_planner_type_t *t, const hs_model_t *m,
                                   const hs_cluster_t *c, const hs_plan_opts_t *o,
                                   hs_plan_t *plan, hs_search_stats_t *stats, int max_steps,
                                   hs_error_t *err)
{
  void *state = calloc(1, t->state_size);
  hs_plan_init(plan);
  if (!state)
    return HS_ENOMEM;
  hs_status_t st = t->init(state, m, c, o, err);
  if (st == HS_OK) {
    bool done = false;
    double prog;
    int steps = 0;
    while (!done && st == HS_OK && steps < max_steps) {
      st = t->step(state, &done, &prog, err);
      steps++;
    }
    CHECK_MSG(done || st != HS_OK, "planner %s did not finish in %d steps", t->name, steps);
    if (st == HS_OK)
      st = t->result(state, plan, stats, err);
  }
  t->free(state);
  free(state);
  return st;
}

/* Monotonic wall time in seconds, for printing how long a search took
 * (never asserted: the suite runs on busy machines). */
static inline double wall_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* HS_SEARCH_FIXTURE_H */
