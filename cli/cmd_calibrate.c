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
  bool micro = hs_cli_opt(opts, "microbench") != NULL;
  if (micro == (npos == 1)) {
    fprintf(stderr, "hetsim calibrate: give either --microbench or MEASUREMENTS.json (see --help)\n");
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_measurements_t ms;
  hs_cluster_t c;
  hs_gpu_catalog_t cat;
  hs_measurements_init(&ms);
  hs_cluster_init(&c);
  hs_gpu_catalog_init(&cat);
  const hs_opt_t *ob = hs_cli_opt(opts, "backend");
  bool cuda = ob && strcmp(ob->value, "cuda") == 0;
  if (ob && !cuda && strcmp(ob->value, "cpu") != 0) {
    fprintf(stderr, "hetsim calibrate: --backend: must be cpu or cuda, got \"%s\"\n", ob->value);
    rc = 2;
    goto out;
  }
  hs_dtype_t dt = cuda ? HS_DTYPE_BF16 : HS_DTYPE_FP32;
  const hs_opt_t *odt = hs_cli_opt(opts, "dtype");
  if (odt && hs_dtype_parse(odt->value, &dt) != HS_OK) {
    fprintf(stderr, "hetsim calibrate: --dtype: unknown dtype \"%s\"\n", odt->value);
    rc = 2;
    goto out;
  }
  if (micro) {
    const hs_opt_t *oc = hs_cli_opt(opts, "cluster"), *og = hs_cli_opt(opts, "gpu");
    const hs_gpu_t *g = NULL;
    if (!oc == !og) {
      fprintf(stderr, "hetsim calibrate: --microbench needs --cluster C or --gpu NAME (one of them)\n");
      rc = 2;
      goto out;
    }
    if (oc) {
      int64_t d = 0;
      if ((st = hs_cluster_load(oc->value, &c, &err)) != HS_OK)
        goto fail;
      if ((rc = hs_cli_int(opts, "device", 0, 0, (int64_t)c.n_devices - 1, &d)))
        goto out;
      g = hs_cluster_gpu(&c, (int32_t)d);
    } else {
      if ((st = hs_gpu_catalog_load(NULL, &cat, &err)) != HS_OK)
        goto fail;
      g = hs_gpu_catalog_find(&cat, og->value);
      if (!g) {
        st = hs_error_set(&err, HS_ENOTFOUND, "--gpu: unknown GPU \"%s\" (hetsim list gpus)", og->value);
        goto fail;
      }
    }
    hs_measurements_set_gpu(&ms, g);
    hs_microbench_opts_t mo;
    hs_microbench_opts_init(&mo);
    int64_t v;
    if ((rc = hs_cli_int(opts, "repeats", 5, 1, 64, &v)))
      goto out;
    mo.repeats = (int32_t)v;
    mo.quick = hs_cli_opt(opts, "quick") != NULL;
    /* the CPU backend's devices run at once in a replay: time them so */
    if ((rc = hs_cli_int(opts, "threads", oc ? c.n_devices : 2, 1, 1024, &v)))
      goto out;
    mo.threads = (int32_t)v;
    const hs_opt_t *ock = hs_cli_opt(opts, "clock");
    if (ock && strcmp(ock->value, "wall") != 0 && strcmp(ock->value, "cpu") != 0) {
      fprintf(stderr, "hetsim calibrate: --clock: must be cpu or wall, got \"%s\"\n", ock->value);
      rc = 2;
      goto out;
    }
    mo.clock = ock && strcmp(ock->value, "wall") == 0 ? HS_CLOCK_WALL : HS_CLOCK_CPU;
    bool root = true;
    if (cuda)
      st = hs_microbench_cuda(&mo, &ms, &root, &err);
    else
      st = hs_microbench_cpu(&mo, &ms, &err);
    if (st != HS_OK)
      goto fail;
    if (!root) {
      rc = 0;
      goto out;
    }
    const hs_opt_t *omo = hs_cli_opt(opts, "measurements-out");
    if (omo) {
      cJSON *j = hs_json_stamp_version(hs_measurements_to_json(&ms), HS_SCHEMA_VERSION);
      if (!j) {
        st = hs_error_set(&err, HS_ENOMEM, "out of memory");
        goto fail;
      }
      st = hs_json_write_file(j, omo->value, &err);
      hs_json_free(j);
      if (st != HS_OK)
        goto fail;
    }
  } else if ((st = hs_measurements_load(pos[0], &ms, &err)) != HS_OK) {
    goto fail;
  }
  hs_fit_t fit;
  if ((st = hs_calibrate_fit(&ms, dt, &fit, &err)) != HS_OK)
    goto fail;
  cJSON *j = hs_json_stamp_version(hs_profile_to_json(&ms, &fit), HS_SCHEMA_VERSION);
  if (!j) {
    st = hs_error_set(&err, HS_ENOMEM, "out of memory");
    goto fail;
  }
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  st = hs_json_write_file(j, oo ? oo->value : "-", &err);
  hs_json_free(j);
  if (st != HS_OK)
    goto fail;
  FILE *info = oo ? stdout : stderr;
  fprintf(info, "calibrated %s (%s): gemm_eff_max %.4g  gemm_half_flops %.4g  mem_eff %.4g  launch_us %.4g",
          ms.gpu, hs_dtype_name(fit.dtype), fit.gemm_eff_max, fit.gemm_half_flops, fit.mem_eff,
          fit.launch_us);
  if (fit.fitted & HS_FIT_GEMM_OUT_K)
    fprintf(info, "  gemm_out_k %.4g", fit.gemm_out_k);
  if (fit.fitted & HS_FIT_GEMM_SUSTAINED)
    fprintf(info, "  gemm_sustained_eff %.4g (%d sustained points)", fit.gemm_sustained_eff, fit.n_gemm_sustained);
  fprintf(info, "\n");
  fprintf(info, "fit: gemm %d points R2 %.4f median |err| %.1f%% max %.1f%%; mem %d points R2 %.4f "
          "median |err| %.1f%% max %.1f%%\n",
          fit.n_gemm, fit.gemm_r2, 100 * fit.gemm_median_rel_err, 100 * fit.gemm_max_rel_err,
          fit.n_mem, fit.mem_r2, 100 * fit.mem_median_rel_err, 100 * fit.mem_max_rel_err);
  if (fit.fitted & HS_FIT_ATTN)
    fprintf(info, "fused attention: fwd eff_max %.4g half_seq %.4g (%d %s points), bwd eff_max %.4g "
            "half_seq %.4g (%d %s points); rate median |err| %.1f%% max %.1f%%\n",
            fit.attn_fwd_eff_max, fit.attn_fwd_half_seq, fit.n_attn_fwd,
            fit.attn_fwd_causal ? "causal" : "non-causal", fit.attn_bwd_eff_max,
            fit.attn_bwd_half_seq, fit.n_attn_bwd, fit.attn_bwd_causal ? "causal" : "non-causal",
            100 * fit.attn_median_rel_err, 100 * fit.attn_max_rel_err);
  if (fit.n_p2p >= 2)
    fprintf(info, "links (alpha-beta): latency %.3g us, %.4g GB/s, %d points R2 %.4f\n",
            fit.p2p_latency_us, fit.p2p_GBps, fit.n_p2p, fit.p2p_r2);
  rc = 0;
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  hs_gpu_catalog_destroy(&cat);
  hs_cluster_destroy(&c);
  hs_measurements_destroy(&ms);
  return rc;
}
