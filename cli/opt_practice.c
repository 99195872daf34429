/*
 * opt_practice.c - the training-practice options shared by simulate, plan
 * and compare: --kernels PRESET, --attention flash|unfused and
 * --sequence-parallel, --zero-stage 0|1|2|3, --precision, --grad-reduce-dtype fp32|default
 * (docs/simulator.md, "Modern training practice"),
 * simulate's --dp-overlap on|off, --overlap-contention on|off, --context-parallel C, --expert-parallel E,
 * --grad-accum MODE,
 * and the planners' --memory-headroom F.
 * Only options given change *pr, so a plan file's own values stay unless a
 * flag overrides them. Bad values: a message naming the flag and the value,
 * exit code 2.
 */
#include "cli.h"
#include "hs_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hs_cli_precision(const hs_opt_t *opts, hs_dtype_t *dt)
{
  const hs_opt_t *o = hs_cli_opt(opts, "precision");
  if (o && hs_dtype_parse(o->value, dt) != HS_OK) {
    fprintf(stderr, "hetsim: --precision: must be bf16, fp16, fp8 or fp32, got \"%s\"\n", o->value);
    return HS_EXIT_USAGE;
  }
  return 0;
}

int hs_cli_memory_headroom(const hs_opt_t *opts, double *headroom)
{
  const hs_opt_t *o = hs_cli_opt(opts, "memory-headroom");
  if (!o)
    return 0;
  char *end = NULL;
  double v = strtod(o->value, &end);
  if (end == o->value || *end != '\0' || !(v >= 0.0 && v < 1.0)) {
    fprintf(stderr, "hetsim: --memory-headroom: must be a fraction in [0, 1), got \"%s\"\n", o->value);
    return HS_EXIT_USAGE;
  }
  *headroom = v;
  return 0;
}

/* A host-time option in microseconds: a finite number in [0, 1e6]. */
static int cli_host_us(const hs_opt_t *opts, const char *name, double *us)
{
  const hs_opt_t *o = hs_cli_opt(opts, name);
  if (!o)
    return 0;
  char *end = NULL;
  double v = strtod(o->value, &end);
  if (end == o->value || *end != '\0' || !(v >= 0.0 && v <= 1e6)) {
    fprintf(stderr, "hetsim: --%s: must be microseconds in [0, 1e6], got \"%s\"\n", name, o->value);
    return HS_EXIT_USAGE;
  }
  *us = v;
  return 0;
}

/* --framework PRESET, then --dispatch-us / --microbatch-overhead-us over it. */
static int cli_framework(const hs_opt_t *opts, hs_framework_t *fw)
{
  const hs_opt_t *o = hs_cli_opt(opts, "framework");
  if (o && hs_framework_preset(o->value, fw) != HS_OK) {
    char list[256];
    fprintf(stderr, "hetsim: --framework: unknown preset \"%s\" (%s)\n", o->value,
            hs_framework_presets_list(list, sizeof list));
    return HS_EXIT_USAGE;
  }
  int rc = cli_host_us(opts, "dispatch-us", &fw->dispatch_us);
  if (!rc)
    rc = cli_host_us(opts, "microbatch-overhead-us", &fw->microbatch_us);
  return rc;
}

int hs_cli_practice(const hs_opt_t *opts, hs_practice_t *pr)
{
  const hs_opt_t *ok = hs_cli_opt(opts, "kernels");
  if (ok && hs_kernels_preset(ok->value, &pr->kernels) != HS_OK) {
    char list[256];
    fprintf(stderr, "hetsim: --kernels: unknown preset \"%s\" (%s)\n", ok->value,
            hs_kernel_presets_list(list, sizeof list));
    return HS_EXIT_USAGE;
  }
  const hs_opt_t *oa = hs_cli_opt(opts, "attention");
  if (oa && hs_attention_parse(oa->value, &pr->kernels.attention) != HS_OK) {
    fprintf(stderr, "hetsim: --attention: must be flash or unfused, got \"%s\"\n", oa->value);
    return HS_EXIT_USAGE;
  }
  if (hs_cli_opt(opts, "sequence-parallel"))
    pr->sequence_parallel = true;
  if (hs_cli_opt(opts, "tp-comm-overlap"))
    pr->tp_comm_overlap = true;
  if (pr->tp_comm_overlap && !pr->sequence_parallel) {
    fprintf(stderr, "hetsim: --tp-comm-overlap: needs --sequence-parallel (Megatron-Core's "
                    "userbuffers overlap works on the sequence-parallel collectives)\n");
    return HS_EXIT_USAGE;
  }
  const hs_opt_t *oz = hs_cli_opt(opts, "zero-stage");
  if (oz) {
    if (strlen(oz->value) != 1 || oz->value[0] < '0' || oz->value[0] > '3') {
      fprintf(stderr, "hetsim: --zero-stage: must be 0, 1, 2 or 3, got \"%s\"\n", oz->value);
      return HS_EXIT_USAGE;
    }
    pr->zero_stage = oz->value[0] - '0';
  }
  const hs_opt_t *orr = hs_cli_opt(opts, "grad-reduce-dtype");
  if (orr && hs_grad_reduce_parse(orr->value, &pr->grad_reduce_fp32) != HS_OK) {
    fprintf(stderr, "hetsim: --grad-reduce-dtype: must be fp32 or default, got \"%s\"\n", orr->value);
    return HS_EXIT_USAGE;
  }
  int frc = cli_framework(opts, &pr->framework);
  if (frc)
    return frc;
  /* a framework preset brings its era's kernel set unless --kernels or
   * --attention says otherwise (docs/simulator.md, "Framework overheads") */
  const char *kp = hs_framework_kernels(pr->framework.id);
  if (hs_cli_opt(opts, "framework") && kp && !ok && !oa)
    hs_kernels_preset(kp, &pr->kernels);
  return 0;
}

/* --NAME on|off into *on when given; anything else is refused naming it. */
static int cli_on_off(const hs_opt_t *opts, const char *name, bool *on)
{
  const hs_opt_t *o = hs_cli_opt(opts, name);
  if (!o)
    return 0;
  if (strcmp(o->value, "on") != 0 && strcmp(o->value, "off") != 0) {
    fprintf(stderr, "hetsim: --%s: must be on or off, got \"%s\"\n", name, o->value);
    return HS_EXIT_USAGE;
  }
  *on = strcmp(o->value, "on") == 0;
  return 0;
}

int hs_cli_sim_practice(const hs_opt_t *opts, hs_practice_t *pr)
{
  int orc = cli_on_off(opts, "dp-overlap", &pr->dp_overlap);
  if (!orc)
    orc = cli_on_off(opts, "overlap-contention", &pr->overlap_contention);
  if (orc)
    return orc;
  int64_t v = 0;
  int rc = hs_cli_int(opts, "context-parallel", pr->context_parallel, 1, 1024, &v);
  if (rc)
    return rc;
  pr->context_parallel = (int32_t)v;
  if ((rc = hs_cli_int(opts, "expert-parallel", pr->expert_parallel, 1, 1024, &v)))
    return rc;
  pr->expert_parallel = (int32_t)v;
  const hs_opt_t *og = hs_cli_opt(opts, "grad-accum");
  if (og && hs_grad_accum_parse(og->value, &pr->grad_accum) != HS_OK) {
    fprintf(stderr, "hetsim: --grad-accum: must be fused, add, add_fp32, cast_add_fp32 or autograd, "
                    "got \"%s\"\n",
            og->value);
    return HS_EXIT_USAGE;
  }
  return 0;
}
