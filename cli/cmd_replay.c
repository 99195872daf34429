/*
 * cmd_replay.c - `hetsim replay`: executes a plan's task graph for real on
 * the CPU backend (threads) or the CUDA backend (cuBLAS/NCCL, one MPI rank
 * per device) and writes measured.json.
 */
#include "cli.h"
#include "hs_json.h"
#include "hs_validate.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

int hs_cmd_replay(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"backend", true, "cpu (threads, runs anywhere) or cuda (cuBLAS + NCCL under mpirun)"},
      {"model", true, "model: catalog name, hetsim JSON or HF config.json"},
      {"cluster", true, "cluster: catalog name or JSON file"},
      {"plan", true, "plan.json to replay"},
      {"profile", true, "device profile for the per-kernel predictions"},
      {"seq-len", true, "override the model's sequence length"},
      {"iterations", true, "timed iterations (median reported; default 5)"},
      {"warmup", true, "untimed iterations first (default 1)"},
      {"stage", true, "replay only stage K of pipeline 0, in isolation (single-GPU mode)"},
      {"clock", true, "cpu backend: cpu (thread CPU time timeline, default) or wall"},
      {"o", true, "write measured.json here"},
      {"json", false, "print measured.json to stdout"},
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 0, &npos,
                        "usage: hetsim replay --backend cpu|cuda --model M --cluster C --plan P\n"
                        "         [--profile profile.json] [--iterations N] [--warmup W]\n"
                        "         [--stage K] [--clock cpu|wall] [-o measured.json] [--json]\n"
                        "       CUDA: mpirun -np <devices of the plan> hetsim replay --backend cuda ...");
  if (rc)
    return rc < 0 ? 0 : rc;
  const hs_opt_t *ob = hs_cli_opt(opts, "backend"), *om = hs_cli_opt(opts, "model"),
                 *oc = hs_cli_opt(opts, "cluster"), *op = hs_cli_opt(opts, "plan");
  if (!ob || !om || !oc || !op) {
    fprintf(stderr, "hetsim replay: --backend, --model, --cluster and --plan are required (see --help)\n");
    return 2;
  }
  bool cuda = strcmp(ob->value, "cuda") == 0;
  if (!cuda && strcmp(ob->value, "cpu") != 0) {
    fprintf(stderr, "hetsim replay: --backend: must be cpu or cuda, got \"%s\"\n", ob->value);
    return 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = HS_OK;
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t plan;
  hs_measured_t meas;
  hs_taskgraph_t *tg = NULL;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&plan);
  hs_measured_init(&meas);
  hs_replay_opts_t ro;
  hs_replay_opts_init(&ro);
  int64_t v = 0;
  if ((rc = hs_cli_int(opts, "seq-len", 0, 1, 10000000, &v)))
    goto out;
  int64_t seq = v;
  if ((rc = hs_cli_int(opts, "iterations", 5, 1, 100000, &v)))
    goto out;
  ro.iterations = (int32_t)v;
  if ((rc = hs_cli_int(opts, "warmup", 1, 0, 100000, &v)))
    goto out;
  ro.warmup = (int32_t)v;
  if ((rc = hs_cli_int(opts, "stage", -1, 0, 1 << 20, &v)))
    goto out;
  ro.only_stage = (int32_t)v;
  const hs_opt_t *ock = hs_cli_opt(opts, "clock");
  if (ock && strcmp(ock->value, "wall") != 0 && strcmp(ock->value, "cpu") != 0) {
    fprintf(stderr, "hetsim replay: --clock: must be cpu or wall, got \"%s\"\n", ock->value);
    rc = 2;
    goto out;
  }
  ro.clock = ock && strcmp(ock->value, "wall") == 0 ? HS_CLOCK_WALL : HS_CLOCK_CPU;
  if ((st = hs_model_load(om->value, seq, &m, &err)) != HS_OK)
    goto fail;
  if ((st = hs_cluster_load(oc->value, &c, &err)) != HS_OK)
    goto fail;
  const hs_opt_t *oprof = hs_cli_opt(opts, "profile");
  if (oprof && (st = hs_profile_apply_file(oprof->value, &c, &err)) != HS_OK)
    goto fail;
  if ((st = hs_plan_load(op->value, &plan, &err)) != HS_OK)
    goto fail;
  if ((st = hs_plan_validate(&plan, &m, &c, hs_basename(op->value), &err)) != HS_OK)
    goto fail;
  if ((st = hs_taskgraph_new(&m, &c, &plan, &tg, &err)) != HS_OK)
    goto fail;
  bool root = true;
  if (cuda)
    st = hs_replay_cuda(tg, &m, &ro, &meas, &root, &err);
  else
    st = hs_replay_cpu(tg, &m, &ro, &meas, &err);
  if (st != HS_OK)
    goto fail;
  if (!root) {
    rc = 0;
    goto out;
  }
  /* the machine's speed at calibration, for validate's speed-adjusted error */
  if (oprof && meas.speed_probe_s > 0 &&
      (st = hs_profile_speed_probe(oprof->value, hs_cluster_gpu(&c, 0)->name,
                                   &meas.speed_probe_calibration_s, &err)) != HS_OK)
    goto fail;
  hs_strlcpy(meas.model, m.name, sizeof meas.model);
  hs_strlcpy(meas.cluster, c.name, sizeof meas.cluster);
  hs_plan_describe(&plan, &m, meas.plan_summary, sizeof meas.plan_summary);
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  bool json = hs_cli_opt(opts, "json") != NULL;
  if (oo || json) {
    st = hs_cli_emit_json(hs_measured_to_json(&meas), oo ? oo->value : NULL, json, &err);
    if (st != HS_OK)
      goto fail;
  }
  if (!json) {
    printf("replayed        %s on %s (%s backend, %s)\n", m.name, c.name, meas.backend, meas.device);
    printf("plan            %s   mode %s\n", meas.plan_summary, meas.mode);
    printf("iteration       %.6g s (median of %d)\n", meas.iteration_time_s, meas.n_iterations);
    for (int32_t i = 0; i < meas.n_stages; i++)
      printf("stage %d.%-3d     fwd %.6g s  bwd %.6g s per microbatch (kernels predicted %.6g / %.6g)\n",
             meas.stages[i].pipeline, meas.stages[i].stage, meas.stages[i].fwd_s,
             meas.stages[i].bwd_s, meas.stages[i].predicted_fwd_s, meas.stages[i].predicted_bwd_s);
  }
  rc = 0;
  goto out;
fail:
  rc = hs_cli_fail(&err, st);
out:
  hs_taskgraph_free(tg);
  hs_measured_destroy(&meas);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return rc;
}
