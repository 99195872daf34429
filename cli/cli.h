/*
 * cli.h - the hetsim executable: subcommand table and a small option parser.
 * No business logic lives in cli/: commands parse options, call the library
 * and print. Exit codes (README "Exit codes", docs/cli.md):
 *   0  a result that holds;
 *   1  internal failure;
 *   2  bad usage or bad input (the message names the file, the field, the value);
 *   3  simulated, but infeasible: out of memory, no strategy found a plan, no
 *      what-if option is feasible. Infeasible results print no throughput,
 *      MFU or cost, and their JSON says "feasible": false.
 */
#ifndef HS_CLI_H
#define HS_CLI_H

#include "hs_common.h"
#include "hs_sim.h" /* HS_KERNELS_DEFAULT in the --kernels help */

enum {
  HS_EXIT_OK = 0,
  HS_EXIT_INTERNAL = 1,
  HS_EXIT_USAGE = 2,
  HS_EXIT_INFEASIBLE = 3,
  HS_EXIT_VALIDATION_OFF = 4, /* validate --max-error: verdict off or error over the bound */
};

typedef struct hs_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} hs_cmd_t;

/* Options of one command: --name value, --name=value, or a flag. */
typedef struct hs_opt {
  const char *name;   /* without dashes; single letter = -x */
  bool takes_value;
  const char *help;
  const char *value;  /* parsed */
  bool set;
} hs_opt_t;

/* Parses argv[1..] into opts (NULL-name terminated) and positional args.
 * Prints the error and returns 2 on unknown options; returns -1 when --help
 * was given (usage printed), 0 otherwise. */
int hs_cli_parse(int argc, char **argv, hs_opt_t *opts, const char **pos, int max_pos, int *n_pos,
                 const char *usage);
const hs_opt_t *hs_cli_opt(const hs_opt_t *opts, const char *name);
/* Integer / number option parsing with messages naming the option; 2 on error. */
int hs_cli_int(const hs_opt_t *opts, const char *name, int64_t def, int64_t lo, int64_t hi,
               int64_t *out);
int hs_cli_double(const hs_opt_t *opts, const char *name, double def, double *out);
/* " (did you mean "hapt"?)" for a mistyped strategy name, or "" (cli/did_you_mean.c). */
void hs_cli_strategy_hint(const char *name, char *buf, size_t n);
/* Training-practice options (cli/opt_practice.c): the entries to put in a
 * command's option table, and the parser that applies the given ones to
 * *pr (0, or 2 with a message naming the flag and value). */
#define HS_CLI_PRACTICE_OPTS                                                              \
  {"kernels", true, "kernel set preset: megatron-2021, megatron-core-2024, unfused (default " HS_KERNELS_DEFAULT ")"}, \
      {"attention", true, "flash|unfused (overrides the preset's attention)"},           \
      {"sequence-parallel", false, "Megatron sequence parallelism over each TP group"}, \
      {"zero-stage", true, "0|1|2|3: ZeRO / distributed optimizer / FSDP over each DP group"}, \
      {"precision", true, "bf16|fp16|fp8|fp32: GEMM precision (fp8 needs a GPU with fp8 peak)"}, \
      {"tp-comm-overlap", false, "TP collectives overlapped with GEMMs (Megatron-Core userbuffers; needs --sequence-parallel)"}, \
      {"grad-reduce-dtype", true, "fp32|default: gradients kept and reduced over DP in fp32 (Megatron --accumulate-allreduce-grads-in-fp32, FSDP reduce_dtype; docs/plan.md)"}, \
      {"framework", true, "host-overhead preset: none (default), megatron-lm-2021, megatron-core-2024, megatron-core-2024-graphs, nemo-2024, deepspeed-2022, fsdp-2023 (docs/simulator.md, Framework overheads)"}, \
      {"dispatch-us", true, "host time per kernel issued, us (overrides the framework preset's)"}, \
      {"microbatch-overhead-us", true, "host time per microbatch per stage and phase, us (overrides the preset's)"}
/* --memory-headroom F (cli/opt_practice.c): the fraction of every GPU's
 * memory no plan may use (hs_plan_opts_t.memory_headroom). */
#define HS_CLI_HEADROOM_OPT \
  {"memory-headroom", true, "fraction of each GPU's memory plans leave free (default 0.1: fragmentation and " \
                            "framework workspace are not modelled)"}
/* 0 and *headroom set when given (left alone when not), else 2. */
int hs_cli_memory_headroom(const hs_opt_t *opts, double *headroom);
struct hs_practice;
int hs_cli_practice(const hs_opt_t *opts, struct hs_practice *pr);
/* simulate's own practice options (cli/opt_practice.c): --dp-overlap,
 * --context-parallel, --expert-parallel, --grad-accum. */
#define HS_CLI_SIM_PRACTICE_OPTS                                                          \
  {"dp-overlap", true, "on|off: gradient buckets overlapped with the last backward (default on; off = Megatron-LM 2021 local DDP)"}, \
      {"overlap-contention", true, "on|off: compute beside a collective slowed by the GPU's overlap_slowdown (default on; off = ideal overlap)"}, \
      {"context-parallel", true, "C: ring attention, each stage's sequence split over C ranks (grid: C x tp devices per stage)"}, \
      {"expert-parallel", true, "E: MoE experts split over groups of E data-parallel pipelines (E divides dp and the experts)"}, \
      {"grad-accum", true, "fused|add|add_fp32|cast_add_fp32|autograd: per-microbatch gradient accumulation pass (default fused: none; docs/plan.md)"}
int hs_cli_sim_practice(const hs_opt_t *opts, struct hs_practice *pr);
/* --precision: 0 and *dt set when given (left alone when not), else 2. */
int hs_cli_precision(const hs_opt_t *opts, hs_dtype_t *dt);
/* Writes j to path (NULL: no file) and, with to_stdout, to stdout; frees j.
 * A NULL j is the out-of-memory of whoever built it. */
struct cJSON;
hs_status_t hs_cli_emit_json(struct cJSON *j, const char *path, bool to_stdout, hs_error_t *err);
/* Prints "hetsim: <msg>" and returns the exit code for st. */
int hs_cli_fail(const hs_error_t *err, hs_status_t st);

int hs_cmd_list(int argc, char **argv);
int hs_cmd_show(int argc, char **argv);
int hs_cmd_simulate(int argc, char **argv);
int hs_cmd_plan(int argc, char **argv);
int hs_cmd_compare(int argc, char **argv);
int hs_cmd_elastic(int argc, char **argv);
int hs_cmd_replay(int argc, char **argv);
int hs_cmd_calibrate(int argc, char **argv);
int hs_cmd_calibrate_links(int argc, char **argv); /* hetsim calibrate links */
int hs_cmd_validate(int argc, char **argv);
int hs_cmd_validate_published(int argc, char **argv); /* validate --published */
/* validate --published --cv (cli/cmd_validate_cv.c): the fitted framework
 * overheads with leave-one-table-out errors; exit 0, 1 (presets differ
 * from the fit) or 2. */
int hs_cli_validate_cv(const char *path, const char *fit_path, int32_t jobs, bool json,
                       const char *out_path);
int hs_cmd_sweep(int argc, char **argv);
int hs_cmd_whatif(int argc, char **argv);
int hs_cmd_export(int argc, char **argv);
int hs_cmd_import(int argc, char **argv);

#endif
