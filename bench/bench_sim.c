/*
 * bench_sim.c - simulator speed and memory: one training iteration of GPT-3
 * 175B on DGX-H100-style clusters (8 GPUs per node, NVSwitch 450 GB/s per
 * GPU, 400 GB/s NIC per node) with the full flow-level network.
 *
 * Weak scaling: TP 8 x PP 16 x DP (n/128), 192 microbatches of 1 sample per
 * pipeline (the 1024-GPU case: global batch 1536); smaller clusters
 * use PP n/8 with one pipeline. Sizes 64, 256, ... (x4) up to max_gpus, then,
 * when max_gpus >= 100000, the 100,352-GPU row (TP 8 x PP 16 x DP 784,
 * 12,544 nodes: just over 100,000 GPUs with DP a multiple of 16; issue 35). Each size runs in a child process so that its peak RSS is its own.
 * Prints wall time, user CPU seconds of the simulation (getrusage, less
 * sensitive than wall time to a busy machine), events, events/s (per wall
 * second), flows and peak RSS (ru_maxrss of the child: the whole process,
 * model and cluster included).
 *
 *   bench_sim [max_gpus] [--modern]      (default 16384)
 *   bench_sim N --one [--modern]         (only the N-GPU row, no header)
 *
 * --modern turns on every training-practice option (docs/simulator.md,
 * "Modern training practice": the megatron-core-2024 kernel set with
 * FlashAttention, sequence parallelism, ZeRO stage 3, TP communication
 * overlap), to check that they cost no
 * simulator speed.
 */
#include "hs_sim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool modern; /* --modern: every training-practice option on */

/* The "100,000-GPU" row: TP 8 x PP 16 x DP 784 (issue 35). */
#define BIG_GPUS 100352

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double user_cpu_s(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec;
}

static int run_one(int n_gpus)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_model_t m;
  hs_cluster_t c;
  hs_plan_t plan;
  hs_report_t rep;
  hs_model_init(&m);
  hs_cluster_init(&c);
  hs_plan_init(&plan);
  hs_report_init(&rep);
  int rc = 1;
  if (hs_model_load("gpt3-175b", 0, &m, &err) != HS_OK)
    goto out;
  char json[2048];
  snprintf(json, sizeof json,
           "{\"name\": \"dgx-h100-%dgpu\", \"sites\": [{\"name\": \"dc\", \"nodes\": [{\"count\": %d,"
           " \"gpu\": \"H100-SXM5-80GB\", \"gpus_per_node\": 8,"
           " \"intra_node\": {\"GBps\": 450, \"latency_us\": 2},"
           " \"nic\": {\"GBps\": 400, \"latency_us\": 5}}], \"fabric\": {\"latency_us\": 2}}]}",
           n_gpus, n_gpus / 8);
  if (hs_cluster_parse(json, "bench-cluster.json", &c, &err) != HS_OK)
    goto out;
  hs_grid_opts_t g;
  hs_grid_opts_init(&g);
  g.tp = 8;
  g.pp = n_gpus >= 128 ? 16 : n_gpus / 8;
  g.dp = n_gpus / (g.tp * g.pp);
  g.microbatch_size = 1;
  g.global_batch = (int64_t)g.dp * 192;
  if (modern) {
    hs_kernels_preset("megatron-core-2024", &g.practice.kernels);
    g.practice.sequence_parallel = true;
    g.practice.zero_stage = 3;
    g.practice.tp_comm_overlap = true;
  }
  if (hs_plan_grid(&m, &c, &g, &plan, &err) != HS_OK)
    goto out;
  double t0 = now_s(), u0 = user_cpu_s();
  if (hs_simulate(&m, &c, &plan, NULL, &rep, &err) != HS_OK)
    goto out;
  double wall = now_s() - t0, user = user_cpu_s() - u0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%6d  tp%d pp%-2d dp%-3d  %8.3f  %8.3f  %10llu  %10.3g  %9llu  %8.1f  %9.3f\n", n_gpus,
         g.tp, g.pp, g.dp, wall, user, (unsigned long long)rep.events, (double)rep.events / wall,
         (unsigned long long)rep.flows, (double)ru.ru_maxrss / 1024.0, rep.iteration_time_s);
  fflush(stdout);
  rc = 0;
out:
  if (rc)
    fprintf(stderr, "bench_sim: %d GPUs: %s\n", n_gpus, err.msg);
  hs_report_destroy(&rep);
  hs_plan_destroy(&plan);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
  return rc;
}

/* run_one(n) in a child process (its own peak RSS); nonzero when it failed. */
static int run_child(int n)
{
  pid_t pid = fork();
  if (pid == 0)
    _exit(run_one(n));
  int status = 0;
  waitpid(pid, &status, 0);
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
  int max_gpus = argc > 1 ? atoi(argv[1]) : 16384;
  bool one = false;
  for (int k = 2; k < argc; k++) {
    one |= strcmp(argv[k], "--one") == 0;
    modern |= strcmp(argv[k], "--modern") == 0;
  }
  if (one)
    return run_one(max_gpus);
  printf("GPT-3 175B, one iteration, full flow-level network, one core%s\n",
         modern ? ", every training-practice option on" : "");
  printf("%6s  %-16s  %8s  %8s  %10s  %10s  %9s  %8s  %9s\n", "gpus", "plan", "wall s", "user s",
         "events", "events/s", "flows", "RSS MB", "iter s");
  fflush(stdout);
  int bad = 0;
  for (int n = 64; n <= max_gpus; n *= 4)
    bad |= run_child(n);
  if (max_gpus >= 100000)
    bad |= run_child(BIG_GPUS);
  return bad;
}
