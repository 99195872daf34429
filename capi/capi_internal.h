/*
 * capi_internal.h - shared between capi.c (handles, calls into the library)
 * and capi_json.c (decoding option objects, encoding results with cJSON):
 * the handle structs and the option records.
 *
 * Invariant: a handle owns deep copies of everything it holds (names are
 * copied, not borrowed), so handles can be freed in any order.
 */
#ifndef HS_CAPI_INTERNAL_H
#define HS_CAPI_INTERNAL_H

#include "hetsim.h"
#include "hs_export.h"
#include "hs_bands.h"

struct hs_api_model {
  hs_model_t m;
};

struct hs_api_cluster {
  hs_cluster_t c;
};

struct hs_api_plan {
  hs_plan_t plan;
  char summary[256];
  /* Set by hs_api_plan_search: the run `hetsim plan --json` prints. */
  bool searched;
  char strategy[48];
  char model[64], cluster[HS_NAME_MAX];
  hs_search_stats_t stats;
  hs_report_t report;
  hs_band_t band; /* the predicted iteration's error band (hs_rank_plan_band) */
};

struct hs_api_report {
  hs_report_t r;
  char model[64], cluster[HS_NAME_MAX];
};

/* Decoded options; the strings live in the records (no pointers into the
 * option text, which the caller may free at once). */

/* The training-practice options of cli/opt_practice.c (kernels, attention,
 * sequence_parallel, tp_comm_overlap, zero_stage, precision, grad_reduce_dtype), as given:
 * hs__api_practice_apply changes only those, as the CLI's flags do. */
typedef struct hs__api_practice {
  bool any;                   /* at least one given */
  char kernels[48], attention[16], precision[16]; /* "" = not given */
  int8_t sequence_parallel, tp_comm_overlap;       /* -1 = not given, else 0/1 */
  int32_t zero_stage;                              /* -1 = not given */
  char grad_reduce_dtype[16];                      /* "" = not given */
} hs__api_practice_t;

typedef struct hs__api_grid {
  hs_grid_opts_t g;
  char schedule[HS_SCHED_NAME_MAX];
  hs__api_practice_t practice; /* precision goes into the plan, the rest into g.practice */
} hs__api_grid_t;

typedef struct hs__api_sim {
  char trace[4096];           /* "" = no trace */
  int32_t trace_devices;
  hs__api_practice_t practice; /* overrides for a plan file's practice and precision */
} hs__api_sim_t;

#define HS__API_MAX_STRATEGIES 64

typedef struct hs__api_compare {
  hs_plan_opts_t po;
  bool global_batch_set;
  bool precision_set;         /* else a scenario's precision applies, as in the CLI */
  char baseline[64];          /* speedups against this row, "" = the best baseline */
  char strategies[1024];      /* comma list, "" = default */
  char scenario[64];
  bool charge_cluster;
} hs__api_compare_t;

typedef struct hs__api_whatif {
  hs_whatif_run_opts_t o;     /* o.prices points at nothing yet: gpu_price is the text */
  char gpu_price[2048];       /* --gpu-price syntax, "" = none */
  hs_whatif_format_t format;  /* default csv */
  int64_t top;                /* 0 = all */
} hs__api_whatif_t;

typedef struct hs__api_sweep {
  bool no_timings;
  int32_t workers;
  char precision[16];         /* "" = the spec's */
  double memory_headroom;     /* < 0 = the spec's */
} hs__api_sweep_t;

/* Each decoder takes the caller's option text (NULL or "" = defaults) and
 * refuses unknown keys, wrong types and values outside the CLI's ranges,
 * naming the option: "simulate options: tp: must be ...". O(text). */
hs_status_t hs__api_grid_decode(const char *text, hs__api_grid_t *out, hs_error_t *err);
hs_status_t hs__api_sim_decode(const char *text, hs__api_sim_t *out, hs_error_t *err);
hs_status_t hs__api_search_decode(const char *text, hs_plan_opts_t *out, hs_error_t *err);
hs_status_t hs__api_compare_decode(const char *text, hs__api_compare_t *out, hs_error_t *err);
hs_status_t hs__api_sweep_decode(const char *text, hs__api_sweep_t *out, hs_error_t *err);
hs_status_t hs__api_whatif_decode(const char *text, hs__api_whatif_t *out, hs_error_t *err);
/* Applies the given practice options to *pr and *precision (either may be
 * NULL: those options are then refused); messages start with `what`. */
hs_status_t hs__api_practice_apply(const hs__api_practice_t *p, const char *what, hs_practice_t *pr,
                                   hs_dtype_t *precision, hs_error_t *err);

/* JSON texts as the CLI prints them (cJSON_Print and a newline), malloc'd. */
hs_status_t hs__api_report_json(const hs_api_report_t *r, char **out, hs_error_t *err);
hs_status_t hs__api_plan_json(const hs_plan_t *p, char **out, hs_error_t *err);
hs_status_t hs__api_search_json(const hs_api_plan_t *p, char **out, hs_error_t *err);
hs_status_t hs__api_model_json(const hs_model_t *m, char **out, hs_error_t *err);
hs_status_t hs__api_cluster_json(const hs_cluster_t *c, char **out, hs_error_t *err);

#endif /* HS_CAPI_INTERNAL_H */
