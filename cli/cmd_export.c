/*
 * cmd_export.c - `hetsim export`: a sweep result table to a Jupyter notebook,
 * JSON or a tidy CSV; a Chrome trace to a standalone SVG Gantt chart; a plan
 * to a framework's launch arguments (--to megatron|deepspeed).
 */
/* realpath(3) is XSI */
#define _XOPEN_SOURCE 700

#include "cli.h"
#include "hs_export.h"
#include "hs_json.h"
#include "hs_launch.h"
#include "hs_output.h"

#include <limits.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Columns the notebook reads. */
/* Ends an output whose writer returned st: a write error the stream
 * recorded is left to hs_output_commit, which names the output and the
 * reason; any other failure drops the temporary. */
static hs_status_t finish_output(hs_output_t *o, hs_status_t st, hs_error_t *err)
{
  if (st == HS_EIO && ferror(o->f)) {
    hs_error_clear(err);
    st = HS_OK;
  }
  if (st != HS_OK) {
    hs_output_abort(o);
    return st;
  }
  return hs_output_commit(o, err);
}

static const char *const notebook_cols[] = {
    "cluster", "nic_GBps", "intersite_GBps", "intersite_latency_us", "model", "global_batch_spec",
    "strategy", "price_model", "status", "n_gpus", "tokens_per_s", "usd_per_hour",
    "usd_per_million_tokens", "plan", NULL};

/* How the notebook should name the CSV: its base name when both files sit in
 * one directory (Jupyter runs a notebook in its directory), else an absolute
 * path. */
static void csv_reference(const char *csv, const char *notebook, char *out, size_t n)
{
  char a[PATH_MAX], b[PATH_MAX], nb[PATH_MAX], cdir[PATH_MAX];
  hs_strlcpy(nb, notebook, sizeof nb);
  hs_strlcpy(cdir, csv, sizeof cdir);
  if (realpath(dirname(cdir), a) && realpath(dirname(nb), b) && strcmp(a, b) == 0) {
    hs_strlcpy(out, hs_basename(csv), n);
    return;
  }
  if (realpath(csv, a))
    hs_strlcpy(out, a, n);
  else
    hs_strlcpy(out, csv, n);
}

/* plan.json --to megatron|deepspeed --model M --cluster C [-o FILE]:
 * the framework's launch arguments; exit 3 naming every part of the plan
 * the framework cannot express (nothing is written then). */
static int export_launch(const char *plan_path, const hs_opt_t *opts)
{
  const hs_opt_t *oto = hs_cli_opt(opts, "to"), *om = hs_cli_opt(opts, "model"),
                 *ocl = hs_cli_opt(opts, "cluster"), *oo = hs_cli_opt(opts, "o");
  hs_launch_fw_t fw;
  if (hs_launch_fw_parse(oto->value, &fw) != HS_OK) {
    fprintf(stderr, "hetsim export: --to: megatron or deepspeed, got \"%s\"\n", oto->value);
    return 2;
  }
  if (!om || !ocl) {
    fprintf(stderr, "hetsim export: --to %s needs --model M and --cluster C (the plan's: its "
                    "stages are op ranges of the model, its devices the cluster's)\n", oto->value);
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_plan_t plan;
  hs_model_t m;
  hs_cluster_t c;
  hs_launch_grid_t g;
  hs_plan_init(&plan);
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_status_t st = HS_OK;
  if ((st = hs_model_load(om->value, 0, &m, &err)) != HS_OK ||
      (st = hs_cluster_load(ocl->value, &c, &err)) != HS_OK ||
      (st = hs_plan_load(plan_path, &plan, &err)) != HS_OK ||
      (st = hs_plan_validate(&plan, &m, &c, hs_basename(plan_path), &err)) != HS_OK)
    goto out;
  if (!m.from_generator) {
    st = hs_error_set(&err, HS_EINVAL, "--model %s: an explicit op list; the frameworks build "
                      "transformers (give a catalog model or a HuggingFace config.json)", om->value);
    goto out;
  }
  if ((st = hs_launch_grid(&plan, &m, &c, fw, &g, &err)) != HS_OK)
    goto out;
  hs_output_t o;
  if ((st = hs_output_open(&o, oo ? oo->value : "-", &err)) != HS_OK)
    goto out;
  if (fw == HS_LAUNCH_MEGATRON)
    hs_launch_megatron_write(&g, &m, hs_basename(plan_path), o.f);
  else
    hs_launch_deepspeed_write(&g, o.f);
  st = finish_output(&o, HS_OK, &err);
out:
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  hs_plan_destroy(&plan);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

static int export_svg(const char *in, const char *out, const char *title, bool all_devices)
{
  hs_trace_doc_t d;
  hs_error_t err;
  hs_trace_doc_init(&d);
  hs_error_init(&err);
  hs_status_t st = hs_trace_doc_load(in, &d, &err);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  int rc = 0;
  if (d.n_spans == 0) {
    fprintf(stderr, "hetsim export: %s: no complete (\"X\") events to draw\n", hs_basename(in));
    rc = 2;
    goto out;
  }
  hs_output_t o;
  if ((st = hs_output_open(&o, out, &err)) != HS_OK) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  size_t rows = 0;
  hs_svg_opts_t so = {title ? title : hs_basename(in), all_devices};
  st = finish_output(&o, hs_trace_svg_render(&d, &so, o.f, &rows, &err), &err);
  if (st != HS_OK) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  if (strcmp(out, "-") != 0)
    fprintf(stderr, "wrote %s: %zu rows, %zu spans\n", out, rows, d.n_spans);
out:
  hs_trace_doc_destroy(&d);
  return rc;
}

int hs_cmd_export(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"notebook", true, "write a Jupyter notebook that plots the sweep table"},
      {"baseline", true, "strategy the notebook's speedups are relative to (default megatron)"},
      {"json", true, "write the table as JSON: schema_version, columns and one object per row"},
      {"tidy", true, "write the table in long form: id columns, metric, value"},
      {"svg", true, "input is a Chrome trace: write an SVG timeline"},
      {"title", true, "SVG title (default: the trace's file name)"},
      {"all-devices", false, "SVG: draw every device, not one per pipeline stage"},
      {"to", true, "input is a plan: megatron|deepspeed launch arguments (exit 3 when the "
                   "framework cannot express the plan)"},
      {"model", true, "with --to: the plan's model (catalog name or file)"},
      {"cluster", true, "with --to: the plan's cluster (catalog name or file)"},
      {"o", true, "with --to: write the arguments here (default: standard output)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim export results.csv [--notebook analysis.ipynb] [--json out.json]\n"
                        "         [--tidy tidy.csv] [--baseline STRATEGY]\n"
                        "       hetsim export trace.json --svg timeline.svg [--title T] [--all-devices]\n"
                        "       hetsim export plan.json --to megatron|deepspeed --model M --cluster C [-o FILE]\n"
                        "Formats and colours: docs/export.md.");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (npos != 1) {
    fprintf(stderr, "hetsim export: give one input file (see --help)\n");
    return 2;
  }
  const hs_opt_t *osvg = hs_cli_opt(opts, "svg"), *onb = hs_cli_opt(opts, "notebook"),
                 *ojs = hs_cli_opt(opts, "json"), *otd = hs_cli_opt(opts, "tidy"),
                 *obl = hs_cli_opt(opts, "baseline"), *oti = hs_cli_opt(opts, "title");
  if (hs_cli_opt(opts, "to")) {
    if (osvg || onb || ojs || otd) {
      fprintf(stderr, "hetsim export: --to takes a plan; --svg, --notebook, --json and --tidy "
                      "take other inputs\n");
      return 2;
    }
    return export_launch(pos[0], opts);
  }
  if (osvg) {
    if (onb || ojs || otd) {
      fprintf(stderr, "hetsim export: --svg takes a trace; --notebook, --json and --tidy take a CSV\n");
      return 2;
    }
    return export_svg(pos[0], osvg->value, oti ? oti->value : NULL, hs_cli_opt(opts, "all-devices") != NULL);
  }
  if (!onb && !ojs && !otd) {
    fprintf(stderr, "hetsim export: nothing to do: give --notebook, --json, --tidy or --svg\n");
    return 2;
  }
  hs_table_t t;
  hs_error_t err;
  hs_table_init(&t);
  hs_error_init(&err);
  hs_status_t st = hs_table_load(pos[0], &t, &err);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  if (onb) {
    for (int i = 0; notebook_cols[i]; i++)
      if (hs_table_col(&t, notebook_cols[i]) < 0) {
        fprintf(stderr, "hetsim export: %s: column \"%s\" missing: the notebook reads a `hetsim "
                        "sweep` table (docs/sweep.md)\n", hs_basename(pos[0]), notebook_cols[i]);
        rc = 2;
        goto out;
      }
    char ref[PATH_MAX];
    csv_reference(pos[0], onb->value, ref, sizeof ref);
    if ((st = hs_notebook_write(ref, obl ? obl->value : "megatron", onb->value, &err)) != HS_OK) {
      rc = hs_cli_fail(&err, st);
      goto out;
    }
    fprintf(stderr, "wrote %s (reads %s, %zu rows)\n", onb->value, ref, t.n_rows);
  }
  if (ojs) {
    cJSON *j = hs_table_to_json_doc(&t); /* versioned like every JSON result */
    if (!j) {
      fprintf(stderr, "hetsim export: out of memory building the JSON\n");
      rc = 1;
      goto out;
    }
    st = hs_json_write_file(j, ojs->value, &err);
    hs_json_free(j);
    if (st != HS_OK) {
      rc = hs_cli_fail(&err, st);
      goto out;
    }
  }
  if (otd) {
    hs_output_t o;
    if ((st = hs_output_open(&o, otd->value, &err)) == HS_OK) {
      st = finish_output(&o, hs_table_write_tidy(&t, o.f, &err), &err);
    }
    if (st != HS_OK) {
      rc = hs_cli_fail(&err, st);
      goto out;
    }
  }
out:
  hs_table_destroy(&t);
  return rc;
}
