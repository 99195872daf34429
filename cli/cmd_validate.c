/*
 * cmd_validate.c - `hetsim validate`: predicted (report.json) against
 * measured (measured.json), per task kind, per stage and for the iteration;
 * optionally a trace with both timelines.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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
      {"json", false, "print the comparison as JSON"},
      {"o", true, "write the comparison JSON here"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim validate --report report.json --measured measured.json\n"
                        "         (or: hetsim validate --published [DIR|FILE], the published suite)\n"
                        "         [--json] [-o comparison.json] [--trace both.json [--sim-trace trace.json]]");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *orp = hs_cli_opt(opts, "report"), *ome = hs_cli_opt(opts, "measured");
  if (!ome) {
    fprintf(stderr, "hetsim validate: --measured is required (see --help)\n");
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_measured_t meas;
  hs_report_view_t rep;
  hs_comparison_t cmp;
  char *text = NULL, *trace_text = NULL;
  hs_measured_init(&meas);
  hs_report_view_init(&rep);
  hs_comparison_init(&cmp);
  if ((st = hs_measured_load(ome->value, &meas, &err)) != HS_OK)
    goto fail;
  if (orp) {
    if ((st = hs_file_read(orp->value, HS_JSON_MAX_BYTES, &text, NULL, &err)) != HS_OK)
      goto fail;
    if ((st = hs_report_view_parse(text, hs_basename(orp->value), &rep, &err)) != HS_OK)
      goto fail;
  }
  if ((st = hs_compare(orp ? &rep : NULL, &meas, &cmp, &err)) != HS_OK)
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
    if ((st = hs_compare_trace_write(trace_text, &meas, ot->value, &err)) != HS_OK)
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
    cJSON_AddStringToObject(j, "backend", meas.backend);
    cJSON_AddStringToObject(j, "device", meas.device);
    cJSON_AddStringToObject(j, "model", meas.model);
    cJSON_AddStringToObject(j, "plan", meas.plan_summary);
    if (oo)
      st = hs_json_write_file(j, oo->value, &err);
    if (st == HS_OK && json)
      st = hs_json_write_file(j, "-", &err);
    hs_json_free(j);
    if (st != HS_OK)
      goto fail;
  }
  if (!json) {
    printf("measured        %s on %s (%s: %s), %s\n", meas.model, meas.cluster, meas.backend,
           meas.device, meas.mode);
    if (!orp)
      printf("(no --report: predictions are the per-kernel sums recorded by replay)\n");
    hs_comparison_print(&cmp, stdout);
  }
  rc = 0;
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  free(text);
  free(trace_text);
  hs_comparison_destroy(&cmp);
  hs_report_view_destroy(&rep);
  hs_measured_destroy(&meas);
  return rc;
}
