/*
 * cmd_calibrate.c - `hetsim calibrate`: run microbenchmarks (--microbench) or
 * read stored measurements, fit the device profile, write profile.json.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* `hetsim calibrate`'s options after parsing. */
typedef struct calibrate_args {
  bool micro;                 /* --microbench, else pos[0] is MEASUREMENTS.json */
  const char *measurements;   /* MEASUREMENTS.json */
  bool cuda;                  /* --backend cuda */
  hs_dtype_t dt;              /* GEMM dtype to fit */
} calibrate_args_t;

/* Reads --microbench or the file, --backend and --dtype into *a, in that
 * order. 0, or 2 with the message printed. */
static int read_calibrate_args(const hs_opt_t *opts, const char *const *pos, int npos, calibrate_args_t *a)
{
  memset(a, 0, sizeof *a);
  a->micro = hs_cli_opt(opts, "microbench") != NULL;
  if (a->micro == (npos == 1)) {
    fprintf(stderr, "hetsim calibrate: give either --microbench or MEASUREMENTS.json (see --help)\n");
    return 2;
  }
  a->measurements = npos == 1 ? pos[0] : NULL;
  const hs_opt_t *ob = hs_cli_opt(opts, "backend");
  a->cuda = ob && strcmp(ob->value, "cuda") == 0;
  if (ob && !a->cuda && strcmp(ob->value, "cpu") != 0) {
    fprintf(stderr, "hetsim calibrate: --backend: must be cpu or cuda, got \"%s\"\n", ob->value);
    return 2;
  }
  a->dt = a->cuda ? HS_DTYPE_BF16 : HS_DTYPE_FP32;
  const hs_opt_t *odt = hs_cli_opt(opts, "dtype");
  if (odt && hs_dtype_parse(odt->value, &a->dt) != HS_OK) {
    fprintf(stderr, "hetsim calibrate: --dtype: unknown dtype \"%s\"\n", odt->value);
    return 2;
  }
  return 0;
}

/* The GPU the microbenchmarks calibrate: --cluster's device --device
 * (loaded into *c) or the catalog's --gpu (loaded into *cat). Sets *g.
 * 0 or the exit code. */
static int microbench_gpu(const hs_opt_t *opts, hs_cluster_t *c, hs_gpu_catalog_t *cat, const hs_gpu_t **g,
                          hs_error_t *err)
{
  const hs_opt_t *oc = hs_cli_opt(opts, "cluster"), *og = hs_cli_opt(opts, "gpu");
  hs_status_t st;
  if (!oc == !og) {
    fprintf(stderr, "hetsim calibrate: --microbench needs --cluster C or --gpu NAME (one of them)\n");
    return 2;
  }
  if (oc) {
    int64_t d = 0;
    if ((st = hs_cluster_load(oc->value, c, err)) != HS_OK)
      return hs_cli_fail(err, st);
    int rc = hs_cli_int(opts, "device", 0, 0, (int64_t)c->n_devices - 1, &d);
    if (rc)
      return rc;
    *g = hs_cluster_gpu(c, (int32_t)d);
    return 0;
  }
  if ((st = hs_gpu_catalog_load(NULL, cat, err)) != HS_OK)
    return hs_cli_fail(err, st);
  *g = hs_gpu_catalog_find(cat, og->value);
  if (!*g)
    return hs_cli_fail(err, hs_error_set(err, HS_ENOTFOUND, "--gpu: unknown GPU \"%s\" (hetsim list gpus)",
                                         og->value));
  return 0;
}

/* --repeats, --quick, --threads (default: the cluster's devices, else 2)
 * and --clock into *mo. 0 or 2. */
static int read_microbench_opts(const hs_opt_t *opts, const hs_cluster_t *c, hs_microbench_opts_t *mo)
{
  int rc;
  int64_t v;
  hs_microbench_opts_init(mo);
  if ((rc = hs_cli_int(opts, "repeats", 5, 1, 64, &v)))
    return rc;
  mo->repeats = (int32_t)v;
  mo->quick = hs_cli_opt(opts, "quick") != NULL;
  /* the CPU backend's devices run at once in a replay: time them so */
  if ((rc = hs_cli_int(opts, "threads", hs_cli_opt(opts, "cluster") ? c->n_devices : 2, 1, 1024, &v)))
    return rc;
  mo->threads = (int32_t)v;
  const hs_opt_t *ock = hs_cli_opt(opts, "clock");
  if (ock && strcmp(ock->value, "wall") != 0 && strcmp(ock->value, "cpu") != 0) {
    fprintf(stderr, "hetsim calibrate: --clock: must be cpu or wall, got \"%s\"\n", ock->value);
    return 2;
  }
  mo->clock = ock && strcmp(ock->value, "wall") == 0 ? HS_CLOCK_WALL : HS_CLOCK_CPU;
  return 0;
}

/* --microbench: measures the GPU into *ms on the cpu or cuda backend and
 * writes --measurements-out. *root is false on a non-root rank (it has
 * nothing to fit or print). 0 or the exit code. */
static int run_microbench(const hs_opt_t *opts, bool cuda, hs_cluster_t *c, hs_gpu_catalog_t *cat,
                          hs_measurements_t *ms, bool *root, hs_error_t *err)
{
  const hs_gpu_t *g = NULL;
  hs_microbench_opts_t mo;
  int rc;
  if ((rc = microbench_gpu(opts, c, cat, &g, err)))
    return rc;
  hs_measurements_set_gpu(ms, g);
  if ((rc = read_microbench_opts(opts, c, &mo)))
    return rc;
  hs_status_t st = cuda ? hs_microbench_cuda(&mo, ms, root, err) : hs_microbench_cpu(&mo, ms, err);
  if (st != HS_OK)
    return hs_cli_fail(err, st);
  const hs_opt_t *omo = hs_cli_opt(opts, "measurements-out");
  if (!*root || !omo)
    return 0;
  cJSON *j = hs_json_stamp_version(hs_measurements_to_json(ms), HS_SCHEMA_VERSION);
  if (!j)
    return hs_cli_fail(err, hs_error_set(err, HS_ENOMEM, "out of memory"));
  st = hs_json_write_file(j, omo->value, err);
  hs_json_free(j);
  return st != HS_OK ? hs_cli_fail(err, st) : 0;
}

/* The fitted parameters and the fit's quality, one line per part. */
static void print_fit(FILE *info, const hs_measurements_t *ms, const hs_fit_t *fit)
{
  fprintf(info, "calibrated %s (%s): gemm_eff_max %.4g  gemm_half_flops %.4g  mem_eff %.4g  launch_us %.4g",
          ms->gpu, hs_dtype_name(fit->dtype), fit->gemm_eff_max, fit->gemm_half_flops, fit->mem_eff,
          fit->launch_us);
  if (fit->fitted & HS_FIT_GEMM_OUT_K)
    fprintf(info, "  gemm_out_k %.4g", fit->gemm_out_k);
  if (fit->fitted & HS_FIT_GEMM_SUSTAINED)
    fprintf(info, "  gemm_sustained_eff %.4g (%d sustained points)", fit->gemm_sustained_eff, fit->n_gemm_sustained);
  fprintf(info, "\n");
  fprintf(info, "fit: gemm %d points R2 %.4f median |err| %.1f%% max %.1f%%; mem %d points R2 %.4f "
          "median |err| %.1f%% max %.1f%%\n",
          fit->n_gemm, fit->gemm_r2, 100 * fit->gemm_median_rel_err, 100 * fit->gemm_max_rel_err,
          fit->n_mem, fit->mem_r2, 100 * fit->mem_median_rel_err, 100 * fit->mem_max_rel_err);
  if (fit->fitted & HS_FIT_ATTN)
    fprintf(info, "fused attention: fwd eff_max %.4g half_seq %.4g (%d %s points), bwd eff_max %.4g "
            "half_seq %.4g (%d %s points); rate median |err| %.1f%% max %.1f%%\n",
            fit->attn_fwd_eff_max, fit->attn_fwd_half_seq, fit->n_attn_fwd,
            fit->attn_fwd_causal ? "causal" : "non-causal", fit->attn_bwd_eff_max,
            fit->attn_bwd_half_seq, fit->n_attn_bwd, fit->attn_bwd_causal ? "causal" : "non-causal",
            100 * fit->attn_median_rel_err, 100 * fit->attn_max_rel_err);
  if (fit->n_p2p >= 2)
    fprintf(info, "links (alpha-beta): latency %.3g us, %.4g GB/s, %d points R2 %.4f\n",
            fit->p2p_latency_us, fit->p2p_GBps, fit->n_p2p, fit->p2p_r2);
}

/* Fits the profile to *ms, writes it (-o, default stdout) and prints the
 * fit (to stdout with -o, else stderr). 0 or the exit code. */
static int fit_and_write(const hs_opt_t *opts, hs_dtype_t dt, const hs_measurements_t *ms, hs_error_t *err)
{
  hs_fit_t fit;
  hs_status_t st;
  if ((st = hs_calibrate_fit(ms, dt, &fit, err)) != HS_OK)
    return hs_cli_fail(err, st);
  cJSON *j = hs_json_stamp_version(hs_profile_to_json(ms, &fit), HS_SCHEMA_VERSION);
  if (!j)
    return hs_cli_fail(err, hs_error_set(err, HS_ENOMEM, "out of memory"));
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  st = hs_json_write_file(j, oo ? oo->value : "-", err);
  hs_json_free(j);
  if (st != HS_OK)
    return hs_cli_fail(err, st);
  print_fit(oo ? stdout : stderr, ms, &fit);
  return 0;
}

int hs_cmd_calibrate(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "links") == 0)
    return hs_cmd_calibrate_links(argc - 1, argv + 1);
  hs_opt_t opts[] = {
      {"microbench", false, "run the microbenchmarks instead of reading MEASUREMENTS.json"},
      {"backend", true, "cpu or cuda (with --microbench; default cpu)"},
      {"cluster", true, "the cluster whose GPU type is measured (device --device's GPU)"},
      {"device", true, "device id in --cluster whose GPU entry is calibrated (default 0)"},
      {"gpu", true, "GPU catalog name instead of --cluster"},
      {"dtype", true, "GEMM dtype to fit (default: bf16 on cuda, fp32 on cpu)"},
      {"repeats", true, "timed runs per point (median; default 5)"},
      {"quick", false, "smaller grid (seconds instead of minutes)"},
      {"measurements-out", true, "also write the measured points here"},
      {"clock", true, "cpu backend: cpu (thread CPU time timeline, default) or wall"},
      {"threads", true, "cpu backend: devices timed at once (default: --cluster's devices, else 2)"},
      {"o", true, "write profile.json here (default: stdout)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim calibrate --microbench --backend cpu|cuda (--cluster C [--device D] | --gpu NAME)\n"
                        "         [--quick] [--repeats N] [--threads N] [--measurements-out m.json] [-o profile.json]\n"
                        "       hetsim calibrate MEASUREMENTS.json [--dtype bf16] [-o profile.json]\n"
                        "       hetsim calibrate links   (re-fit clusters/links.json from its nccl-tests files)");
  if (rc)
    return rc < 0 ? 0 : rc;
  calibrate_args_t a;
  if ((rc = read_calibrate_args(opts, pos, npos, &a)))
    return rc;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_measurements_t ms;
  hs_cluster_t c;
  hs_gpu_catalog_t cat;
  hs_measurements_init(&ms);
  hs_cluster_init(&c);
  hs_gpu_catalog_init(&cat);
  bool root = true;
  if (a.micro)
    rc = run_microbench(opts, a.cuda, &c, &cat, &ms, &root, &err);
  else if ((st = hs_measurements_load(a.measurements, &ms, &err)) != HS_OK)
    rc = hs_cli_fail(&err, st);
  if (rc == 0 && root) /* a non-root rank measured for the root: nothing to fit */
    rc = fit_and_write(opts, a.dt, &ms, &err);
  hs_gpu_catalog_destroy(&cat);
  hs_cluster_destroy(&c);
  hs_measurements_destroy(&ms);
  return rc;
}
