/*
 * hs_scenarios.h - named comparison scenarios mirroring each seed paper's
 * setting (model, cluster, global batch, precision, strategies compared,
 * and a note of what is ours where the paper's value is not public). A static
 * table (search/scenarios.c); `hetsim compare --scenario NAME` and
 * `hetsim list scenarios` read it.
 */
#ifndef HS_SCENARIOS_H
#define HS_SCENARIOS_H

#include "hs_search.h"

typedef struct hs_scenario {
  const char *name;
  const char *description;
  const char *model;              /* catalog name */
  const char *cluster;            /* catalog name */
  int64_t global_batch;           /* samples; 0 = per_device x devices */
  int64_t global_batch_per_device;
  const char *strategies;         /* comma-separated, compared in this order */
  const char *seed_strategy;      /* the paper's own strategy */
  const char *source;             /* where the setting comes from */
  const char *precision;          /* "fp32", ...: the paper's; NULL = the planners' default */
  const char *ours;               /* what is our choice, not the paper's */
} hs_scenario_t;

extern const hs_scenario_t hs_scenarios[]; /* terminated by a NULL name */
/* Exact name match; NULL when absent. O(scenarios). */
const hs_scenario_t *hs_scenario_find(const char *name);
/* The scenario's global batch on a cluster of n_devices devices. */
int64_t hs_scenario_global_batch(const hs_scenario_t *s, int64_t n_devices);

#endif /* HS_SCENARIOS_H */
