/*
 * cmd_simulate.c - `hetsim simulate`: a plan file or the Megatron-style grid
 * shortcut, simulated once; text report, --json, -o report.json, --trace.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_sim.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* --stage-layers: comma-separated items N (one stage of N blocks) or N*R
 * (R stages of N blocks each), at most 2^20 stages; *out owned by the
 * caller. 0 or HS_EXIT_USAGE with a message naming the item. */
static int parse_stage_layers(const char *text, int32_t **out, int32_t *n)
{
  *out = NULL;
  *n = 0;
  int64_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    int64_t k = 0;
    const char *p = text;
    for (int item = 0;; item++) {
      char *end = NULL;
      long long v = strtoll(p, &end, 10), r = 1;
      bool ok = end != p && v >= 0 && v <= (1 << 20);
      if (ok && *end == '*') {
        const char *q = end + 1;
        r = strtoll(q, &end, 10);
        ok = end != q && r >= 1 && r <= (1 << 20);
      }
      if (!ok || (*end != ',' && *end != '\0') || k + r > (1 << 20)) {
        fprintf(stderr, "hetsim simulate: --stage-layers: item %d: must be N or N*R (N >= 0 blocks, R >= 1 "
                        "stages, at most 1048576 stages in all), got \"%s\"\n", item, text);
        free(*out);
        *out = NULL;
        return HS_EXIT_USAGE;
      }
      for (long long j = 0; j < r; j++, k++)
        if (pass == 1)
          (*out)[k] = (int32_t)v;
      if (*end == '\0')
        break;
      p = end + 1;
    }
    if (pass == 0) {
      total = k;
      *out = hs_calloc((size_t)total, sizeof **out);
      if (!*out) {
        fprintf(stderr, "hetsim simulate: out of memory\n");
        return 1;
      }
    }
  }
  *n = (int32_t)total;
  return 0;
}

/* Loads the model (with --seq-len), the cluster and the --profile.
 * 0, or the exit code with the message printed. */
static int load_sim_inputs(const hs_opt_t *opts, const char *model, const char *cluster, hs_model_t *m,
                           hs_cluster_t *c, hs_error_t *err)
{
  int64_t seq = 0;
  int rc = hs_cli_int(opts, "seq-len", 0, 1, 10000000, &seq);
  if (rc)
    return rc;
  hs_status_t st;
  const hs_opt_t *oprof = hs_cli_opt(opts, "profile");
  if ((st = hs_model_load(model, seq, m, err)) != HS_OK || (st = hs_cluster_load(cluster, c, err)) != HS_OK ||
      (oprof && (st = hs_profile_apply_file(oprof->value, c, err)) != HS_OK))
    return hs_cli_fail(err, st);
  return 0;
}

/* --plan FILE: loads it, applies the practice and precision flags and
 * validates it against the model and cluster. 0 or the exit code. */
static int plan_from_file(const hs_opt_t *opts, const char *path, const hs_model_t *m, const hs_cluster_t *c,
                          hs_plan_t *plan, hs_error_t *err)
{
  int rc;
  hs_status_t st;
  if (hs_cli_opt(opts, "tp") || hs_cli_opt(opts, "pp") || hs_cli_opt(opts, "dp")) {
    fprintf(stderr, "hetsim simulate: give either --plan or --tp/--pp/--dp, not both\n");
    return 2;
  }
  if ((st = hs_plan_load(path, plan, err)) != HS_OK)
    return hs_cli_fail(err, st);
  if ((rc = hs_cli_practice(opts, &plan->practice)) || (rc = hs_cli_sim_practice(opts, &plan->practice)) ||
      (rc = hs_cli_precision(opts, &plan->precision)))
    return rc;
  if ((st = hs_plan_validate(plan, m, c, hs_basename(path), err)) != HS_OK)
    return hs_cli_fail(err, st);
  return 0;
}

/* The grid shortcut's options (--tp ... --recompute, practice flags) into
 * *g, defaults filled in for cluster c; *layers (caller frees) holds
 * --stage-layers. 0 or the exit code with the message printed. */
static int read_grid_opts(const hs_opt_t *opts, const hs_cluster_t *c, hs_grid_opts_t *g, int32_t **layers)
{
  int rc;
  int64_t v;
  hs_grid_opts_init(g);
  if ((rc = hs_cli_int(opts, "tp", 1, 1, 1024, &v)))
    return rc;
  g->tp = (int32_t)v;
  if ((rc = hs_cli_int(opts, "pp", 1, 1, 1 << 20, &v)))
    return rc;
  g->pp = (int32_t)v;
  if ((rc = hs_cli_int(opts, "dp", 0, 1, 1 << 20, &v))) /* 0: hs_grid_opts_defaults */
    return rc;
  g->dp = (int32_t)v;
  if ((rc = hs_cli_int(opts, "microbatch-size", 1, 1, 1 << 20, &v)))
    return rc;
  g->microbatch_size = (int32_t)v;
  if ((rc = hs_cli_int(opts, "global-batch", 0, 1, INT64_C(1) << 40, &v)))
    return rc;
  g->global_batch = v;
  const hs_opt_t *os = hs_cli_opt(opts, "schedule");
  g->schedule = os ? os->value : "1f1b";
  if ((rc = hs_cli_int(opts, "chunks", 1, 1, 1024, &v)))
    return rc;
  g->chunks = (int32_t)v;
  const hs_opt_t *osl = hs_cli_opt(opts, "stage-layers");
  if (osl) {
    if ((rc = parse_stage_layers(osl->value, layers, &g->n_stage_layers)))
      return rc;
    g->stage_layers = *layers;
  }
  const hs_opt_t *orc = hs_cli_opt(opts, "recompute");
  if (orc && hs_recompute_parse(orc->value, &g->recompute) != HS_OK) {
    fprintf(stderr, "hetsim: --recompute: must be none, selective or full, got \"%s\"\n", orc->value);
    return 2;
  }
  if ((rc = hs_cli_practice(opts, &g->practice)) || (rc = hs_cli_sim_practice(opts, &g->practice)))
    return rc;
  hs_grid_opts_defaults(g, c); /* dp after --context-parallel */
  if (g->practice.sequence_parallel && g->tp < 2) {
    fprintf(stderr, "hetsim simulate: --sequence-parallel: needs tensor parallelism (--tp 2 or "
                    "more), got --tp %d\n", g->tp);
    return HS_EXIT_USAGE;
  }
  return 0;
}

/* The grid shortcut: builds the Megatron-style plan ("manual-grid"),
 * applies --precision and validates it. 0 or the exit code. */
static int plan_from_grid(const hs_opt_t *opts, const hs_model_t *m, const hs_cluster_t *c, hs_plan_t *plan,
                          int32_t **layers, hs_error_t *err)
{
  hs_grid_opts_t g;
  hs_status_t st;
  int rc = read_grid_opts(opts, c, &g, layers);
  if (rc)
    return rc;
  if ((st = hs_plan_grid(m, c, &g, plan, err)) != HS_OK)
    return hs_cli_fail(err, st);
  hs_strlcpy(plan->strategy, "manual-grid", sizeof plan->strategy);
  if ((rc = hs_cli_precision(opts, &plan->precision)))
    return rc;
  if ((st = hs_plan_validate(plan, m, c, NULL, err)) != HS_OK)
    return hs_cli_fail(err, st);
  return 0;
}

/* --trace, --trace-devices and --trace-detail into *so. 0 or 2. */
static int read_sim_opts(const hs_opt_t *opts, hs_sim_opts_t *so)
{
  hs_sim_opts_init(so);
  const hs_opt_t *ot = hs_cli_opt(opts, "trace");
  so->trace_path = ot ? ot->value : NULL;
  int64_t td;
  int rc = hs_cli_int(opts, "trace-devices", 0, 0, 1 << 30, &td);
  if (rc)
    return rc;
  so->trace_max_devices = (int32_t)td;
  const hs_opt_t *otd = hs_cli_opt(opts, "trace-detail");
  if (otd && hs_trace_detail_parse(otd->value, &so->trace_detail) != HS_OK) {
    fprintf(stderr, "hetsim simulate: --trace-detail: must be stage, device or kernel, got \"%s\"\n",
            otd->value);
    return 2;
  }
  return 0;
}

/* The report as JSON (-o and/or --json) and, without --json, as text.
 * 0, 3 when the plan simulated out of memory, or the exit code of a
 * failure. */
static int print_sim_report(const hs_opt_t *opts, const hs_report_t *rep, const hs_model_t *m,
                            const hs_cluster_t *c, hs_error_t *err)
{
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  bool json = hs_cli_opt(opts, "json") != NULL;
  if (json || oo) {
    cJSON *j = hs_report_to_json_named(rep, m->name, c->name);
    if (!j)
      return hs_cli_fail(err, hs_error_set(err, HS_ENOMEM, "out of memory"));
    hs_status_t st = HS_OK;
    if ((oo && (st = hs_json_write_file(j, oo->value, err)) != HS_OK) ||
        (json && (st = hs_json_write_file(j, "-", err)) != HS_OK)) {
      hs_json_free(j);
      return hs_cli_fail(err, st);
    }
    hs_json_free(j);
  }
  if (!json) {
    printf("model           %s   cluster %s\n", m->name, c->name);
    hs_report_print(rep, stdout);
  }
  /* simulated, but the plan cannot run: a script must not take it as a result */
  return rep->oom ? HS_EXIT_INFEASIBLE : HS_EXIT_OK;
}

int hs_cmd_simulate(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "cluster: catalog name or JSON file"},
      {"plan", true, "plan.json (otherwise the grid shortcut below)"},
      {"tp", true, "tensor-parallel degree (grid)"},
      {"pp", true, "pipeline stages (grid)"},
      {"dp", true, "data-parallel pipelines (grid; default: all remaining devices)"},
      {"microbatch-size", true, "samples per microbatch (grid, default 1)"},
      {"global-batch", true, "samples per iteration (grid, default dp x microbatch x pp x 4)"},
      {"schedule", true, "gpipe|1f1b|interleaved-1f1b|hetero-1f1b (grid, default 1f1b)"},
      {"chunks", true, "model chunks per device for interleaved-1f1b"},
      {"stage-layers", true, "blocks per (virtual) stage, pp x chunks items N or N*R (grid; e.g. 0,1*126,0)"},
      {"recompute", true, "none|selective|full (grid)"},
      HS_CLI_PRACTICE_OPTS,
      HS_CLI_SIM_PRACTICE_OPTS,
      {"seq-len", true, "override the model's sequence length"},
      {"profile", true, "calibrated device profile JSON"},
      {"json", false, "print the report as JSON"},
      {"o", true, "write the JSON report to this file"},
      {"trace", true, "write a Chrome/Perfetto trace JSON"},
      {"trace-devices", true, "device/kernel traces: only devices below this id, and of the links theirs and the cross-site ones"},
      {"trace-detail", true, "stage|device|kernel: what the trace shows (default stage)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim simulate --model M --cluster C\n"
                        "         (--plan plan.json | --tp T --pp P [--dp D] [--microbatch-size B])\n"
                        "         [--global-batch G] [--schedule S] [--chunks V] [--recompute R]\n"
                        "         [--stage-layers N,N*R,...]\n"
                        "         [--kernels megatron-2021|megatron-core-2024|unfused]\n"
                        "         [--attention flash|unfused] [--sequence-parallel] [--zero-stage Z]\n"
                        "         [--precision bf16|fp16|fp8|fp32] [--tp-comm-overlap]\n"
                        "         [--dp-overlap on|off] [--context-parallel C] [--expert-parallel E]\n"
                        "         [--grad-accum fused|add|add_fp32|cast_add_fp32|autograd] [--grad-reduce-dtype fp32|default]\n"
                        "         [--seq-len S] [--profile profile.json]\n"
                        "         [--json] [-o report.json] [--trace trace.json]\n"
                        "         [--trace-detail stage|device|kernel] [--trace-devices N]\n"
                        "exit: 0 ok, 2 bad input, 3 simulated but infeasible (out of memory)");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *om = hs_cli_opt(opts, "model"), *oc = hs_cli_opt(opts, "cluster"),
                 *op = hs_cli_opt(opts, "plan");
  if (!om || !oc) {
    fprintf(stderr, "hetsim simulate: --model and --cluster are required (see --help)\n");
    return 2;
  }
  if (op && hs_cli_opt(opts, "stage-layers")) {
    fprintf(stderr, "hetsim simulate: --stage-layers: builds a grid plan, not with --plan (a plan's stages "
                    "set their own op ranges)\n");
    return HS_EXIT_USAGE;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t plan;
  hs_report_t rep;
  hs_sim_opts_t so;
  int32_t *layers = NULL; /* --stage-layers */
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&plan);
  hs_report_init(&rep);
  if ((rc = load_sim_inputs(opts, om->value, oc->value, &m, &c, &err)) ||
      (rc = op ? plan_from_file(opts, op->value, &m, &c, &plan, &err)
               : plan_from_grid(opts, &m, &c, &plan, &layers, &err)) ||
      (rc = read_sim_opts(opts, &so)))
    goto out;
  if ((st = hs_simulate(&m, &c, &plan, &so, &rep, &err)) != HS_OK)
    rc = hs_cli_fail(&err, st);
  else
    rc = print_sim_report(opts, &rep, &m, &c, &err);
out:
  free(layers);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return rc;
}
