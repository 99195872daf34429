/*
 * cmd_validate.c - `hetsim validate`: predicted (report.json) against
 * measured (measured.json; several files = repeated runs), per task kind, per
 * stage and for the iteration, with the measured spread and a verdict line;
 * optionally a trace with both timelines.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* --tolerance (default 0.1) into *tol; 0, or the exit code 2 with the
 * message when it is outside (0, 10]. */
static int read_tolerance(const hs_opt_t *opts, double *tol)
{
  int rc = hs_cli_double(opts, "tolerance", 0.1, tol);
  if (rc)
    return rc;
  if (!(*tol > 0) || *tol > 10) {
    fprintf(stderr, "hetsim validate: --tolerance: must be in (0, 10], got %g\n", *tol);
    return 2;
  }
  return 0;
}

/* --max-error PCT into *max_frac (a fraction; -1 when absent); 0, or the
 * exit code 2 with the message when PCT is outside (0, 1000]. Without
 * --tolerance it is also the verdict's tolerance, so that "verdict: off"
 * and exit 4 say the same thing. */
static int read_max_error(const hs_opt_t *opts, double *max_frac)
{
  *max_frac = -1;
  if (!hs_cli_opt(opts, "max-error"))
    return 0;
  double pct = 0;
  int rc = hs_cli_double(opts, "max-error", 0, &pct);
  if (rc)
    return rc;
  if (!(pct > 0) || pct > 1000) {
    fprintf(stderr, "hetsim validate: --max-error: a percentage in (0, 1000], got %g\n", pct);
    return 2;
  }
  *max_frac = pct / 100;
  return 0;
}

/* The gate of --max-error (max_frac < 0: none, exit 0): exit 4 with one
 * line on stderr when the verdict is off, there is no prediction, or
 * |iteration error| exceeds the bound. The verdict line on stdout is
 * already printed; this line says why the exit code is 4. */
static int max_error_gate(const hs_comparison_t *cmp, double max_frac)
{
  if (max_frac < 0)
    return 0;
  if (cmp->verdict == HS_VERDICT_NONE) {
    fprintf(stderr, "hetsim validate: --max-error %g%%: no prediction of the iteration to check\n",
            100 * max_frac);
    return HS_EXIT_VALIDATION_OFF;
  }
  double e = fabs(cmp->iteration_error);
  if (cmp->verdict == HS_VERDICT_OFF || e > max_frac) {
    fprintf(stderr, "hetsim validate: --max-error %g%%: iteration error %+.1f%%, verdict %s "
                    "(tolerance %.0f%%): exit 4\n", 100 * max_frac, 100 * cmp->iteration_error,
            hs_verdict_name(cmp->verdict), 100 * cmp->tolerance);
    return HS_EXIT_VALIDATION_OFF;
  }
  return 0;
}

/* --run run.json --cluster C: simulate the run's model and plan, compare
 * with its measured iterations. */
static int validate_run(const hs_opt_t *opts, const char *run_path, const hs_opt_t *ocl,
                        const char **pos, int npos)
{
  if (!ocl) {
    fprintf(stderr, "hetsim validate: --run needs --cluster C (what the run ran on)\n");
    return 2;
  }
  if (npos || hs_cli_opt(opts, "report") || hs_cli_opt(opts, "measured")) {
    fprintf(stderr, "hetsim validate: --run brings its own measurements; give no --report, "
                    "--measured or files\n");
    return 2;
  }
  double tol = 0.1, max_frac = -1;
  int rc = read_tolerance(opts, &tol);
  if (rc || (rc = read_max_error(opts, &max_frac)))
    return rc;
  if (max_frac >= 0 && !hs_cli_opt(opts, "tolerance"))
    tol = max_frac;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_run_t run;
  hs_cluster_t c;
  hs_model_t m;
  hs_report_t rep;
  hs_report_view_t view;
  hs_comparison_t cmp;
  hs_run_init(&run);
  hs_cluster_init(&c);
  hs_model_init(&m);
  hs_report_init(&rep);
  hs_report_view_init(&view);
  hs_comparison_init(&cmp);
  const hs_opt_t *oprof = hs_cli_opt(opts, "profile");
  if ((st = hs_run_load(run_path, &run, &err)) != HS_OK ||
      (st = hs_cluster_load(ocl->value, &c, &err)) != HS_OK ||
      (oprof && (st = hs_profile_apply_file(oprof->value, &c, &err)) != HS_OK) ||
      (st = hs_run_simulate(&run, &c, &m, &rep, &err)) != HS_OK)
    goto fail;
  if (rep.oom) {
    fprintf(stderr, "hetsim validate: the simulated plan does not fit in memory on %s (OOM); no "
                    "prediction to compare\n", c.name);
    rc = HS_EXIT_INFEASIBLE;
    goto out;
  }
  if (hs_report_view_from_report(&rep, &view) != HS_OK) {
    st = hs_error_set(&err, HS_ENOMEM, "out of memory");
    goto fail;
  }
  const hs_measured_t *rp = &run.measured;
  if ((st = hs_compare_runs(&view, &rp, 1, tol, &cmp, &err)) != HS_OK)
    goto fail;
  hs_spread_t tf = {0};
  if (run.n_tflops && hs_spread_of(run.tflops_per_gpu, (size_t)run.n_tflops, &tf) != HS_OK) {
    st = hs_error_set(&err, HS_ENOMEM, "out of memory");
    goto fail;
  }
  bool json = hs_cli_opt(opts, "json") != NULL;
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  if (oo || json) {
    cJSON *j = hs_comparison_to_json(&cmp);
    if (!j) {
      st = hs_error_set(&err, HS_ENOMEM, "out of memory");
      goto fail;
    }
    cJSON_AddStringToObject(j, "backend", run.measured.backend);
    cJSON_AddStringToObject(j, "model", m.name);
    cJSON_AddStringToObject(j, "cluster", c.name);
    cJSON_AddStringToObject(j, "plan", run.measured.plan_summary);
    cJSON_AddNumberToObject(j, "predicted_tflops_per_gpu", rep.tflops_per_gpu);
    if (tf.n)
      cJSON_AddNumberToObject(j, "measured_tflops_per_gpu", tf.median);
    st = hs_cli_emit_json(j, oo ? oo->value : NULL, json, &err);
    if (st != HS_OK)
      goto fail;
  }
  if (!json) {
    printf("measured        %s (%s), %s\n", run_path, run.measured.backend,
           run.measured.plan_summary);
    printf("simulated       %s on %s: %.4g TFLOP/s per GPU (model FLOPs)", m.name, c.name,
           rep.tflops_per_gpu);
    if (tf.n)
      printf(", measured %.4g (Megatron's count, median of %d lines)", tf.median, tf.n);
    printf("\n");
    hs_comparison_print(&cmp, stdout);
  }
  rc = max_error_gate(&cmp, max_frac);
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  hs_comparison_destroy(&cmp);
  hs_report_view_destroy(&view);
  hs_report_destroy(&rep);
  hs_model_destroy(&m);
  hs_cluster_destroy(&c);
  hs_run_destroy(&run);
  return rc;
}

int hs_cmd_validate(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--published") == 0)
      return hs_cmd_validate_published(argc, argv);
  hs_opt_t opts[] = {
      {"report", true, "simulator report (hetsim simulate -o report.json)"},
      {"measured", true, "replay record (hetsim replay -o measured.json)"},
      {"sim-trace", true, "simulator trace (simulate --trace) to merge into --trace"},
      {"trace", true, "write a Chrome trace with both timelines"},
      {"run", true, "measured run with model and plan (hetsim import megatron-log -o run.json)"},
      {"cluster", true, "with --run: the cluster it ran on (catalog name or file)"},
      {"profile", true, "with --run: calibrated profile for the simulation"},
      {"tolerance", true, "relative iteration error the verdict accepts (default 0.1)"},
      {"max-error", true, "PCT: exit 4 when the verdict is off or |iteration error| > PCT % "
                          "(also the tolerance, unless --tolerance is given)"},
      {"json", false, "print the comparison as JSON"},
      {"o", true, "write the comparison JSON here"},
      {NULL},
  };
#define MAX_RUNS 64
  const char *pos[MAX_RUNS];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, MAX_RUNS - 1, &npos,
                        "usage: hetsim validate --report report.json --measured measured.json [more.json ...]\n"
                        "       hetsim validate --run run.json --cluster C [--profile profile.json]\n"
                        "       hetsim validate --published [DIR|FILE] [--json]   (the published suite)\n"
                        "         [--tolerance 0.1] [--max-error PCT] [--json] [-o comparison.json]\n"
                        "         [--trace both.json [--sim-trace trace.json]]\n"
                        "More measured files are repeated runs of the same plan: the iteration's\n"
                        "median and interquartile range pool all of them. The last line,\n"
                        "\"verdict: ok|off|none iteration error ...\", is for scripts; with\n"
                        "--max-error PCT the exit code is 4 when the verdict is off, there is no\n"
                        "prediction, or the iteration error exceeds PCT percent.");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *orp = hs_cli_opt(opts, "report"), *ome = hs_cli_opt(opts, "measured");
  const hs_opt_t *orun = hs_cli_opt(opts, "run"), *ocl = hs_cli_opt(opts, "cluster");
  if (orun)
    return validate_run(opts, orun->value, ocl, pos, npos);
  if (!ome) {
    fprintf(stderr, "hetsim validate: --measured (or --run) is required (see --help)\n");
    return 2;
  }
  double tol = 0.1, max_frac = -1;
  if ((rc = read_tolerance(opts, &tol)) || (rc = read_max_error(opts, &max_frac)))
    return rc;
  if (max_frac >= 0 && !hs_cli_opt(opts, "tolerance"))
    tol = max_frac;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_measured_t runs[MAX_RUNS];
  const hs_measured_t *rp[MAX_RUNS];
  int32_t n_runs = 0;
  hs_report_view_t rep;
  hs_comparison_t cmp;
  char *text = NULL, *trace_text = NULL;
  for (int i = 0; i < MAX_RUNS; i++)
    hs_measured_init(&runs[i]);
  hs_report_view_init(&rep);
  hs_comparison_init(&cmp);
  for (int i = -1; i < npos; i++) {
    const char *path = i < 0 ? ome->value : pos[i];
    if ((st = hs_measured_load(path, &runs[n_runs], &err)) != HS_OK)
      goto fail;
    rp[n_runs] = &runs[n_runs];
    n_runs++;
  }
  if (orp) {
    if ((st = hs_file_read(orp->value, HS_JSON_MAX_BYTES, &text, NULL, &err)) != HS_OK)
      goto fail;
    if ((st = hs_report_view_parse(text, hs_basename(orp->value), &rep, &err)) != HS_OK)
      goto fail;
  }
  if ((st = hs_compare_runs(orp ? &rep : NULL, rp, n_runs, tol, &cmp, &err)) != HS_OK)
    goto fail;
  const hs_opt_t *ot = hs_cli_opt(opts, "trace"), *ost = hs_cli_opt(opts, "sim-trace");
  if (ost && !ot) {
    fprintf(stderr, "hetsim validate: --sim-trace needs --trace OUT.json\n");
    rc = 2;
    goto out;
  }
  if (ot) {
    if (ost && (st = hs_file_read(ost->value, (size_t)1 << 31, &trace_text, NULL, &err)) != HS_OK)
      goto fail;
    if ((st = hs_compare_trace_write(trace_text, &runs[0], ot->value, &err)) != HS_OK)
      goto fail;
  }
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  bool json = hs_cli_opt(opts, "json") != NULL;
  if (oo || json) {
    cJSON *j = hs_comparison_to_json(&cmp);
    if (!j) {
      st = hs_error_set(&err, HS_ENOMEM, "out of memory");
      goto fail;
    }
    cJSON_AddStringToObject(j, "backend", runs[0].backend);
    cJSON_AddStringToObject(j, "device", runs[0].device);
    cJSON_AddStringToObject(j, "model", runs[0].model);
    cJSON_AddStringToObject(j, "plan", runs[0].plan_summary);
    st = hs_cli_emit_json(j, oo ? oo->value : NULL, json, &err);
    if (st != HS_OK)
      goto fail;
  }
  if (!json) {
    if (runs[0].backend[0]) {
      /* the CPU replay's device already starts with "cpu: " */
      const char *dev = runs[0].device;
      size_t nb = strlen(runs[0].backend);
      if (strncmp(dev, runs[0].backend, nb) == 0 && dev[nb] == ':' && dev[nb + 1] == ' ')
        dev += nb + 2;
      printf("measured        %s on %s (%s: %s), %s\n", runs[0].model, runs[0].cluster,
             runs[0].backend, dev, runs[0].mode);
    } else
      printf("measured        %s (iterations only)\n", ome->value);
    if (!orp)
      printf("(no --report: predictions are the per-kernel sums recorded by replay)\n");
    hs_comparison_print(&cmp, stdout);
  }
  rc = max_error_gate(&cmp, max_frac);
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  free(text);
  free(trace_text);
  hs_comparison_destroy(&cmp);
  hs_report_view_destroy(&rep);
  for (int i = 0; i < MAX_RUNS; i++)
    hs_measured_destroy(&runs[i]);
  return rc;
}
