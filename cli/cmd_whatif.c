/*
 * cmd_whatif.c - `hetsim whatif`: which purchase (or rental) within a budget
 * trains a model fastest, or cheapest? Parses the flags into an
 * hs_whatif_run_opts_t, loads the model and the base cluster, runs the
 * study (hs_whatif_run, notebooks-export/whatif_run.c: enumeration,
 * planning, ranking, Pareto front) and prints it as a table, CSV or JSON
 * (hs_whatif_write). Exit 3 when no option has a feasible plan.
 */
#include "cli.h"
#include "hs_ranking.h" /* the ranking line */
#include "hs_output.h"
#include "hs_export.h"

#include <stdlib.h>
#include <string.h>

/* "a,b,c" into names[] (at most max, each truncated to len); 2 with a
 * message when there are more. */
static int split_list(const char *flag, const char *s, char *names, size_t len, int32_t max,
                      int32_t *n)
{
  char buf[2048];
  *n = 0;
  hs_strlcpy(buf, s, sizeof buf);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n >= max) {
      fprintf(stderr, "hetsim whatif: --%s: at most %d names\n", flag, max);
      return 2;
    }
    hs_strlcpy(names + (size_t)(*n)++ * len, t, len);
  }
  return 0;
}

int hs_cmd_whatif(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "base cluster the purchases are added to (catalog name or JSON)"},
      {"replace", false, "options replace the base cluster instead of adding to it"},
      {"budget-usd-per-hour", true, "most the purchases may cost, USD per hour"},
      {"candidates", true, "comma-separated GPU types to buy (hetsim list gpus)"},
      {"price", true, "on-demand (default) or spot"},
      {"gpu-price", true, "price overrides GPU=USD[:SPOT],... (USD per GPU-hour)"},
      {"step", true, "GPUs are bought in multiples of this (default 8)"},
      {"gpus-per-node", true, "GPUs per added node (default 8)"},
      {"nic-GBps", true, "NIC bandwidth per added node, GB/s (default 25)"},
      {"link-GBps", true, "bandwidth of the link from the added site to each base site (default 25)"},
      {"link-latency-us", true, "its latency in microseconds (default 10)"},
      {"strategies", true, "planners tried per option (default megatron,whale,hapt,data-parallel)"},
      {"global-batch", true, "samples per iteration, the same for every option (default 8 per GPU "
                             "of the largest option)"},
      {"global-batch-per-gpu", true, "instead: each option trains this many samples per GPU (its "
                                     "batch grows with its size)"},
      {"quiet", false, "no progress output"},
      {"time-limit", true, "search budget per strategy and option, seconds (default 60)"},
      {"max-options", true, "refuse to evaluate more options than this (default 500)"},
      {"j", true, "worker processes (default 1)"},
      {"top", true, "print only the best N options (default all)"},
      {"format", true, "table (default), csv or json"},
      HS_CLI_HEADROOM_OPT,
      HS_CLI_PRACTICE_OPTS,
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim whatif --model M (--cluster BASE | --replace)\n"
                        "         --budget-usd-per-hour X --candidates GPU,GPU,...\n"
                        "         [--price on-demand|spot] [--gpu-price GPU=USD,...] [--step N]\n"
                        "         [--strategies a,b] [--global-batch G | --global-batch-per-gpu N]\n"
                        "         [--precision P] [--memory-headroom F] [--kernels K] [--zero-stage Z] ...\n"
                        "         [-j N] [--format table|csv|json] [--quiet]\n"
                        "exit: 0 ok, 2 bad input, 3 no option has a feasible plan");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *om = hs_cli_opt(opts, "model"), *oc = hs_cli_opt(opts, "cluster"),
                 *ob = hs_cli_opt(opts, "budget-usd-per-hour"), *ocand = hs_cli_opt(opts, "candidates"),
                 *ofmt = hs_cli_opt(opts, "format"), *oprice = hs_cli_opt(opts, "price"),
                 *ogp = hs_cli_opt(opts, "gpu-price"), *ost = hs_cli_opt(opts, "strategies");
  bool replace = hs_cli_opt(opts, "replace") != NULL;
  if (!om || !ob || !ocand || (!oc && !replace)) {
    fprintf(stderr, "hetsim whatif: --model, --budget-usd-per-hour, --candidates and --cluster (or "
                    "--replace) are required (see --help)\n");
    return 2;
  }
  hs_whatif_format_t fmt = HS_WHATIF_TABLE;
  if (ofmt && hs_whatif_format_parse(ofmt->value, &fmt) != HS_OK) {
    fprintf(stderr, "hetsim whatif: --format: must be table, csv or json, got \"%s\"\n", ofmt->value);
    return 2;
  }
  hs_whatif_run_opts_t wo;
  hs_whatif_run_opts_init(&wo);
  wo.enumerate.replace = replace;
  if (oprice && strcmp(oprice->value, "spot") == 0)
    wo.enumerate.price = HS_PRICE_SPOT;
  else if (oprice && strcmp(oprice->value, "on-demand") != 0) {
    fprintf(stderr, "hetsim whatif: --price: must be on-demand or spot, got \"%s\"\n", oprice->value);
    return 2;
  }
  if ((rc = hs_cli_precision(opts, &wo.plan.precision)) ||
      (rc = hs_cli_memory_headroom(opts, &wo.plan.memory_headroom)) ||
      (rc = hs_cli_practice(opts, &wo.plan.practice)))
    return rc;
  int64_t step, max_options, gpn, workers, top;
  if ((rc = hs_cli_double(opts, "budget-usd-per-hour", 0, &wo.enumerate.budget_usd_per_hour)) ||
      (rc = hs_cli_int(opts, "step", 8, 1, 1 << 20, &step)) ||
      (rc = hs_cli_int(opts, "max-options", 500, 1, 1 << 20, &max_options)) ||
      (rc = hs_cli_int(opts, "gpus-per-node", 8, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &gpn)) ||
      (rc = hs_cli_int(opts, "j", 1, 1, 256, &workers)) ||
      (rc = hs_cli_int(opts, "top", 0, 0, INT64_C(1) << 30, &top)) ||
      (rc = hs_cli_int(opts, "global-batch", 0, 1, INT64_C(1) << 40, &wo.plan.global_batch)) ||
      (rc = hs_cli_int(opts, "global-batch-per-gpu", 0, 1, 1 << 20, &wo.global_batch_per_gpu)) ||
      (rc = hs_cli_double(opts, "nic-GBps", 25.0, &wo.nic_GBps)) ||
      (rc = hs_cli_double(opts, "link-GBps", 25.0, &wo.link_GBps)) ||
      (rc = hs_cli_double(opts, "link-latency-us", 10.0, &wo.link_latency_us)) ||
      (rc = hs_cli_double(opts, "time-limit", 60.0, &wo.plan.time_limit_s)))
    return rc;
  wo.enumerate.step = (int32_t)step;
  wo.enumerate.max_options = (int32_t)max_options;
  wo.gpus_per_node = (int32_t)gpn;
  wo.workers = (int32_t)workers;
  if ((rc = split_list("candidates", ocand->value, wo.candidates[0], sizeof wo.candidates[0],
                       HS_SWEEP_MAX_TYPES, &wo.n_candidates)) ||
      (ost && (rc = split_list("strategies", ost->value, wo.strategies[0], sizeof wo.strategies[0],
                               HS_WHATIF_MAX_STRATEGIES, &wo.n_strategies))))
    return rc;
  if (!hs_cli_opt(opts, "quiet"))
    wo.progress = stderr;

  hs_price_override_t *overrides = NULL;
  hs_model_t m;
  hs_cluster_t base;
  hs_whatif_result_t res;
  hs_error_t err;
  hs_status_t st = HS_OK;
  hs_model_init(&m);
  hs_cluster_init(&base);
  hs_whatif_result_init(&res);
  hs_error_init(&err);
  if (ogp && (st = hs_price_overrides_parse(ogp->value, &overrides, &wo.n_prices, &err)) != HS_OK)
    goto fail;
  wo.prices = overrides;
  if ((st = hs_model_load(om->value, 0, &m, &err)) != HS_OK ||
      (oc && (st = hs_cluster_load(oc->value, &base, &err)) != HS_OK)) {
    rc = hs_cli_fail(&err, st);
    goto out;
  }
  if ((st = hs_whatif_run(&m, oc && !replace ? &base : NULL, &wo, &res, &err)) != HS_OK)
    goto fail;
  hs_whatif_rank(&res, wo.plan.practice.framework.id);
  st = hs_whatif_write(&res, fmt, (size_t)top, stdout, &err);
  if (st == HS_EIO && ferror(stdout)) { /* the flush names stdout and the reason */
    hs_error_clear(&err);
    st = HS_OK;
  }
  if (st != HS_OK || (st = hs_output_flush_stdout(&err)) != HS_OK)
    goto fail;
  if (res.n_ok == 0) {
    if (fmt != HS_WHATIF_JSON)
      fprintf(stderr, "hetsim whatif: no option has a feasible plan (exit 3)\n");
    rc = HS_EXIT_INFEASIBLE;
  }
  goto out;
fail:
  fprintf(stderr, "hetsim whatif: %s\n", err.msg[0] ? err.msg : hs_status_message(st));
  rc = hs_status_exit_code(st) ? hs_status_exit_code(st) : 1;
out:
  hs_whatif_result_destroy(&res);
  free(overrides);
  hs_cluster_destroy(&base);
  hs_model_destroy(&m);
  return rc;
}
