/*
 * cmd_import.c - `hetsim import KIND FILE...`: turn what a real machine
 * printed into hetsim's files (docs/import.md).
 *
 *   nccl-tests      nccl-tests output -> profile.json (links) + predicted
 *                   against measured busbw per size
 *   megatron-log    Megatron-LM training log -> run.json (model, plan,
 *                   measured iterations) for `hetsim validate --run`
 *   torch-profiler  PyTorch profiler (Kineto) trace -> measurements.json
 *                   for `calibrate` and measured.json for `validate`
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define MAX_FILES 64

/* Writes j (NULL: out of memory) to -o FILE and/or stdout (--json), frees it. */
static hs_status_t write_json(cJSON *j, const hs_opt_t *oo, bool json, hs_error_t *err)
{
  j = hs_json_stamp_version(j, HS_SCHEMA_VERSION);
  hs_status_t st = j ? HS_OK : hs_error_set(err, HS_ENOMEM, "out of memory");
  if (st == HS_OK && oo)
    st = hs_json_write_file(j, oo->value, err);
  if (st == HS_OK && json)
    st = hs_json_write_file(j, "-", err);
  hs_json_free(j);
  return st;
}

static int import_nccl_tests(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"gpu", true, "GPU catalog name (default: from the files' device lines)"},
      {"ranks", true, "ranks of the group when the header does not list them all"},
      {"gpus-per-node", true, "GPUs per node when the header does not say (multi-node runs)"},
      {"nic-rails", true, "NICs per node, one per GPU rail (default 1; DGX: 8): the nic link is "
                          "fitted with NCCL's rail rotation"},
      {"coll", true, "all_reduce|all_gather|reduce_scatter|alltoall|sendrecv (default: the file "
                     "name, else the table)"},
      {"algo", true, "ring|tree|nvls: the algorithm NCCL ran (NCCL_ALGO; default: the file's "
                     "NCCL_ALGO line, else NCCL's default choice)"},
      {"json", false, "print the profile JSON (with the per-size predictions) to stdout"},
      {"o", true, "write profile.json here"},
      {"cluster", true, "a cluster (catalog name or file) to write with the fitted links"},
      {"cluster-out", true, "with --cluster: write that cluster, its nodes of the GPU type relinked"},
      {NULL},
  };
  const char *pos[MAX_FILES];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, MAX_FILES, &npos,
                        "usage: hetsim import nccl-tests OUT.txt [OUT2.txt ...] [-o profile.json]\n"
                        "         [--gpu NAME] [--ranks N] [--gpus-per-node K] [--nic-rails R] [--coll NAME]\n"
                        "         [--algo ring|tree|nvls] [--json]\n"
                        "         [--cluster C --cluster-out cluster.json]\n"
                        "Fits latency and bus bandwidth per file, sets the GPU type's intra_node\n"
                        "(single-node files) and nic (multi-node files) links so that the\n"
                        "simulator's collective model reproduces the fit, and prints predicted\n"
                        "against measured busbw per size (nccl-tests' units: us, GB/s = 1e9 B/s).");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (npos < 1) {
    fprintf(stderr, "hetsim import nccl-tests: give at least one nccl-tests output file\n");
    return 2;
  }
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  int64_t v = 0;
  if ((rc = hs_cli_int(opts, "ranks", 0, 2, 1 << 20, &v)))
    return rc;
  o.nranks = (int32_t)v;
  if ((rc = hs_cli_int(opts, "gpus-per-node", 0, 1, 1 << 16, &v)))
    return rc;
  o.gpus_per_node = (int32_t)v;
  if ((rc = hs_cli_int(opts, "nic-rails", 1, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &v)))
    return rc;
  o.nic_rails = (int32_t)v;
  const hs_opt_t *oc = hs_cli_opt(opts, "coll");
  if (oc) {
    hs_nt_coll_t c;
    if (hs_nt_coll_parse(oc->value, &c) != HS_OK) {
      fprintf(stderr, "hetsim import nccl-tests: --coll: must be all_reduce, all_gather, "
                      "reduce_scatter, alltoall or sendrecv, got \"%s\"\n", oc->value);
      return 2;
    }
    o.coll = (int)c;
  }
  const hs_opt_t *oa = hs_cli_opt(opts, "algo");
  if (oa && hs_nt_algo_parse(oa->value, &o.algo) != HS_OK) {
    fprintf(stderr, "hetsim import nccl-tests: --algo: must be ring, tree or nvls (NCCL_ALGO), "
                    "got \"%s\"\n", oa->value);
    return 2;
  }
  const hs_opt_t *og = hs_cli_opt(opts, "gpu");
  const hs_opt_t *ocl = hs_cli_opt(opts, "cluster"), *oco = hs_cli_opt(opts, "cluster-out");
  if (!ocl != !oco) {
    fprintf(stderr, "hetsim import nccl-tests: --cluster and --cluster-out go together\n");
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_nt_import_t im;
  hs_status_t st = hs_nt_import(pos, npos, &o, og ? og->value : NULL, &im, &err);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  if (ocl) {
    hs_cluster_t c;
    hs_cluster_init(&c);
    st = hs_cluster_load(ocl->value, &c, &err);
    if (st == HS_OK && hs_nt_links_apply(&im.links, &c) == 0)
      st = hs_error_set(&err, HS_EINVAL, "--cluster: %s has no node of %s", c.name, im.links.gpu);
    if (st == HS_OK) {
      /* show cluster --json's summary keys are not cluster-file fields */
      static const char *const summary[] = {"n_devices", "n_nodes", "n_sites", "n_gpu_types",
                                            "peak_tflops_bf16", "mem_bytes", "usd_per_hour",
                                            "n_unpriced_devices", NULL};
      cJSON *j = hs_cluster_to_json(&c);
      for (int k = 0; j && summary[k]; k++)
        cJSON_DeleteItemFromObjectCaseSensitive(j, summary[k]);
      cJSON *sites = j ? cJSON_GetObjectItemCaseSensitive(j, "sites") : NULL;
      for (cJSON *s = sites ? sites->child : NULL; s; s = s->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(s, "gpus");
        cJSON_DeleteItemFromObjectCaseSensitive(s, "n_devices");
      }
      j = hs_json_stamp_version(j, HS_SCHEMA_VERSION);
      st = j ? hs_json_write_file(j, oco->value, &err) : hs_error_set(&err, HS_ENOMEM, "out of memory");
      hs_json_free(j);
    }
    hs_cluster_destroy(&c);
    if (st != HS_OK) {
      hs_nt_import_destroy(&im);
      return hs_cli_fail(&err, st);
    }
  }
  bool json = hs_cli_opt(opts, "json") != NULL;
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  if (oo || json)
    st = write_json(hs_nt_import_to_json(&im), oo, json, &err);
  if (st == HS_OK && !json)
    hs_nt_import_print(&im, stdout);
  hs_nt_import_destroy(&im);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

static int import_megatron_log(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"skip", true, "iteration lines dropped first as warm-up (default 1)"},
      {"run", true, "which run of a restarted log (one arguments block each, 1-based); needed "
                    "when the log holds several"},
      {"model", true, "the run's model (catalog name or file) when the log has no arguments "
                      "block; with one, checked against it"},
      {"seq-length", true, "with --model: the training sequence length (default: the model's)"},
      {"tp", true, "tensor-model-parallel-size (needed without an arguments block)"},
      {"pp", true, "pipeline-model-parallel-size (needed without an arguments block)"},
      {"dp", true, "data-parallel size (needed without an arguments block)"},
      {"micro-batch-size", true, "Megatron's --micro-batch-size (needed without a block)"},
      {"global-batch-size", true, "Megatron's --global-batch-size (needed without a block)"},
      {"json", false, "print run.json to stdout"},
      {"o", true, "write run.json here (model, plan, measured iterations)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim import megatron-log LOG [-o run.json] [--skip N] [--run N] [--json]\n"
                        "         [--model M [--seq-length S] --tp T --pp P --dp D --micro-batch-size B\n"
                        "          --global-batch-size G]   (a log without its arguments block)\n"
                        "Reads the arguments block and the iteration lines of a Megatron-LM\n"
                        "training log; then: hetsim validate --run run.json --cluster C\n"
                        "A restarted job's log holds one arguments block per start: --run N\n"
                        "reads the N-th block and the lines up to the next one.");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (npos != 1) {
    fprintf(stderr, "hetsim import megatron-log: give the log file\n");
    return 2;
  }
  hs_megatron_opts_t o;
  hs_megatron_opts_init(&o);
  int64_t v = 0;
  if ((rc = hs_cli_int(opts, "skip", 1, 0, 1 << 20, &v)))
    return rc;
  o.skip = (int32_t)v;
  if ((rc = hs_cli_int(opts, "run", 0, 1, 1 << 20, &v)))
    return rc;
  o.run = (int32_t)v;
  static const char *const plan_flags[] = {"tp", "pp", "dp", "micro-batch-size", NULL};
  int32_t *plan_vals[] = {&o.tp, &o.pp, &o.dp, &o.microbatch_size};
  for (int i = 0; plan_flags[i]; i++) {
    if ((rc = hs_cli_int(opts, plan_flags[i], 0, 1, 1 << 24, &v)))
      return rc;
    *plan_vals[i] = (int32_t)v;
  }
  if ((rc = hs_cli_int(opts, "global-batch-size", 0, 1, INT64_C(1) << 40, &o.global_batch)) ||
      (rc = hs_cli_int(opts, "seq-length", 0, 1, HS_MODEL_MAX_SEQ_LEN, &v)))
    return rc;
  hs_error_t err;
  hs_error_init(&err);
  hs_run_t run;
  hs_model_t model;
  hs_model_init(&model);
  const hs_opt_t *om = hs_cli_opt(opts, "model");
  hs_status_t st = HS_OK;
  if (v && !om) {
    fprintf(stderr, "hetsim import megatron-log: --seq-length goes with --model\n");
    return 2;
  }
  if (om && (st = hs_model_load(om->value, v, &model, &err)) == HS_OK && !model.from_generator)
    st = hs_error_set(&err, HS_EINVAL, "--model %s: an explicit op list; Megatron runs a "
                      "transformer (give a catalog model or a HuggingFace config.json)", om->value);
  if (st != HS_OK) {
    hs_model_destroy(&model);
    return hs_cli_fail(&err, st);
  }
  hs_strlcpy(model.cfg.name, model.name, sizeof model.cfg.name);
  o.model = om ? &model.cfg : NULL;
  st = hs_megatron_log_load(pos[0], &o, &run, &err);
  hs_model_destroy(&model);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  bool json = hs_cli_opt(opts, "json") != NULL;
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  if (oo || json)
    st = write_json(hs_run_to_json(&run), oo, json, &err);
  if (st == HS_OK && !json) {
    const hs_transformer_cfg_t *m = &run.model;
    const hs_run_plan_t *p = &run.plan;
    hs_spread_t sp;
    hs_spread_of(run.measured.iteration_s, (size_t)run.measured.n_iterations, &sp);
    printf("%s: %lld layers, hidden %lld, %lld heads, ffn %lld, vocab %lld, seq %lld, %s\n",
           pos[0], (long long)m->layers, (long long)m->hidden, (long long)m->heads,
           (long long)m->ffn, (long long)m->vocab, (long long)m->seq_len, hs_dtype_name(m->dtype));
    printf("plan: tp %d, pp %d, dp %d, micro batch %d, global batch %lld, %s, recompute %s%s%s\n",
           p->tp, p->pp, p->dp, p->microbatch_size, (long long)p->global_batch,
           p->chunks > 1 ? "interleaved-1f1b" : "1f1b", hs_recompute_name(p->recompute),
           p->distributed_optimizer ? ", distributed optimizer" : "",
           p->sequence_parallel ? ", sequence parallel" : "");
    printf("iterations: %d logged lines kept (each Megatron's average over its log interval): "
           "median %.4g s, IQR %.4g..%.4g s\n", sp.n, sp.median, sp.q1, sp.q3);
    if (run.n_tflops) {
      hs_spread_t tf;
      hs_spread_of(run.tflops_per_gpu, (size_t)run.n_tflops, &tf);
      printf("throughput per GPU (Megatron's count): median %.4g TFLOP/s\n", tf.median);
    }
    if (!oo)
      printf("(-o run.json writes the run; hetsim validate --run run.json --cluster C compares)\n");
  }
  hs_run_destroy(&run);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

static int import_torch_profiler(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"gpu", true, "GPU catalog entry the points describe (needed by --measurements-out)"},
      {"measurements-out", true, "write the GEMM/memory/collective points here (for calibrate)"},
      {"json", false, "print measured.json to stdout"},
      {"o", true, "write measured.json here (the steps and their breakdown)"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim import torch-profiler TRACE.json [-o measured.json]\n"
                        "         [--measurements-out m.json --gpu NAME] [--json]\n"
                        "Reads a PyTorch profiler (Kineto) Chrome trace recorded with\n"
                        "record_shapes=True and a schedule (ProfilerStep#N).");
  if (rc)
    return rc < 0 ? 0 : rc;
  if (npos != 1) {
    fprintf(stderr, "hetsim import torch-profiler: give the trace file\n");
    return 2;
  }
  const hs_opt_t *og = hs_cli_opt(opts, "gpu"), *omo = hs_cli_opt(opts, "measurements-out");
  if (omo && !og) {
    fprintf(stderr, "hetsim import torch-profiler: --measurements-out needs --gpu NAME (the "
                    "catalog entry whose peaks calibrate fits against)\n");
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_torch_trace_t tr;
  hs_measurements_t ms;
  hs_measured_t meas;
  hs_gpu_catalog_t cat;
  hs_torch_trace_init(&tr);
  hs_measurements_init(&ms);
  hs_measured_init(&meas);
  hs_gpu_catalog_init(&cat);
  if (og) {
    if ((st = hs_gpu_catalog_load(NULL, &cat, &err)) != HS_OK)
      goto done;
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, og->value);
    if (!g) {
      st = hs_error_set(&err, HS_ENOTFOUND, "--gpu: unknown GPU \"%s\" (hetsim list gpus)",
                        og->value);
      goto done;
    }
    hs_measurements_set_gpu(&ms, g);
  }
  hs_tp_summary_t sum;
  if ((st = hs_torch_trace_load(pos[0], &tr, &err)) != HS_OK ||
      (st = hs_torch_profiler_import(&tr, &ms, &meas, &sum, &err)) != HS_OK)
    goto done;
  if (!tr.record_shapes || sum.n_gemm_no_shape)
    hs_error_warn(&err, "%s: recorded without record_shapes=True: %d GEMM ops have no shapes and "
                  "give no points", tr.file, sum.n_gemm_no_shape);
  bool json = hs_cli_opt(opts, "json") != NULL;
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  if (oo || json)
    st = write_json(hs_measured_to_json(&meas), oo, json, &err);
  if (st == HS_OK && omo) {
    cJSON *j = hs_json_stamp_version(hs_measurements_to_json(&ms), HS_SCHEMA_VERSION);
    if (!j)
      st = hs_error_set(&err, HS_ENOMEM, "out of memory");
    else
      st = hs_json_write_file(j, omo->value, &err);
    hs_json_free(j);
  }
  if (st == HS_OK && !json) {
    hs_spread_t sp;
    hs_spread_of(meas.iteration_s, (size_t)meas.n_iterations, &sp);
    printf("%s: %s trace of %s, %d step%s: median %.6g s (IQR %.6g..%.6g s)\n", tr.file,
           sum.gpu ? "GPU" : "CPU", tr.device, sum.n_steps, sum.n_steps == 1 ? "" : "s",
           sp.median, sp.q1, sp.q3);
    printf("per step (medians): compute %.6g s, exposed communication %.6g s, idle %.6g s\n",
           meas.compute_s, meas.comm_exposed_s, meas.idle_s);
    printf("points: %d gemm, %d mem, %d collective (of %d NCCL kernels)\n", sum.n_gemm, sum.n_mem,
           sum.n_comm_points, sum.n_comm_kernels);
    printf("  %-6s %-5s %8s %8s %8s %12s %12s\n", "kind", "dtype", "m", "n", "k", "us",
           "TFLOP/s|GB/s");
    for (int32_t i = 0; i < ms.n; i++) {
      const hs_mb_point_t *p = &ms.p[i];
      if (p->kind == HS_MB_GEMM)
        printf("  %-6s %-5s %8lld %8lld %8lld %12.3f %12.4g\n", "gemm", hs_dtype_name(p->dtype),
               (long long)p->m, (long long)p->n, (long long)p->k, p->s * 1e6, p->flops / p->s / 1e12);
      else
        printf("  %-6s %-5s %8s %8s %8s %12.3f %12.4g  (%.0f B%s)\n", hs_mb_kind_name(p->kind), "-",
               "-", "-", "-", p->s * 1e6, p->bytes / p->s / HS_GB, p->bytes,
               p->ranks ? ", group" : "");
    }
  }
done:
  hs_gpu_catalog_destroy(&cat);
  hs_measured_destroy(&meas);
  hs_measurements_destroy(&ms);
  hs_torch_trace_destroy(&tr);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

typedef struct kind {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} kind_t;

static const kind_t kinds[] = {
    {"nccl-tests", "nccl-tests output -> link profile, predicted vs measured busbw", import_nccl_tests},
    {"megatron-log", "Megatron-LM training log -> run.json (model, plan, iterations)", import_megatron_log},
    {"torch-profiler", "PyTorch profiler trace -> measured.json, calibration points", import_torch_profiler},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: hetsim import KIND FILE... [options]   (hetsim import KIND --help)\n\n"
             "Reads what real runs printed into hetsim's files (docs/import.md).\n\nkinds:\n");
  for (const kind_t *k = kinds; k->name; k++)
    fprintf(f, "  %-15s %s\n", k->name, k->summary);
}

int hs_cmd_import(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  for (const kind_t *k = kinds; k->name; k++)
    if (strcmp(argv[1], k->name) == 0)
      return k->run(argc - 1, argv + 1);
  fprintf(stderr, "hetsim import: unknown kind '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
