/*
 * sched.c - pipeline schedules as type objects: each one writes, for one
 * pipeline rank, the order in which it runs the forward and backward passes
 * of every microbatch (and chunk). The simulator and the replay harness both
 * execute these orders; dependencies between ranks (activations forward,
 * gradients backward) are implied by the pipeline, not by the schedule.
 *
 *  gpipe             all forwards, then all backwards (reverse order)
 *  1f1b              PipeDream-Flush / Megatron: warm-up p-r-1 forwards, then
 *                    one forward one backward, then cool-down; sends block
 *  interleaved-1f1b  Megatron's virtual pipeline: v chunks per rank, microbatch
 *                    groups of p, warm-up (p-r-1)*2 + (v-1)*p
 *  hetero-1f1b       HAPT-style heterogeneity-aware 1F1B: per-rank warm-up
 *                    depth (stage.warmup: the order of forwards and
 *                    backwards, set by the planner to cover slow links and
 *                    tuned by search/hetero_warmup.c) or an explicit
 *                    per-stage order (stage.order, tuned by
 *                    search/hetero_order.c), and asynchronous (early) sends
 */
#include "hs_sim.h"

#include <string.h>

static hs_status_t check_basic(const hs_sched_params_t *sp, hs_error_t *err)
{
  if (sp->p <= 0 || sp->v <= 0 || sp->m <= 0)
    return hs_error_set(err, HS_EINVAL, "schedule: need positive stages, chunks and microbatches, got "
                        "p=%d v=%d m=%d", sp->p, sp->v, sp->m);
  return HS_OK;
}

static void gpipe_order(const hs_sched_params_t *sp, hs_sched_item_t *out)
{
  int32_t k = 0;
  for (int32_t i = 0; i < sp->m; i++)
    out[k++] = (hs_sched_item_t){.mb = i, .chunk = 0, .phase = HS_PHASE_FWD};
  for (int32_t i = sp->m - 1; i >= 0; i--)
    out[k++] = (hs_sched_item_t){.mb = i, .chunk = 0, .phase = HS_PHASE_BWD};
}

/* 1F1B with `warmup` forwards before the first backward. */
static void one_f_one_b(int32_t m, int32_t warmup, hs_sched_item_t *out)
{
  if (warmup > m)
    warmup = m;
  if (warmup < 0)
    warmup = 0;
  int32_t k = 0, f = 0, b = 0;
  for (; f < warmup; f++)
    out[k++] = (hs_sched_item_t){.mb = f, .phase = HS_PHASE_FWD};
  while (f < m) {
    out[k++] = (hs_sched_item_t){.mb = f++, .phase = HS_PHASE_FWD};
    out[k++] = (hs_sched_item_t){.mb = b++, .phase = HS_PHASE_BWD};
  }
  while (b < m)
    out[k++] = (hs_sched_item_t){.mb = b++, .phase = HS_PHASE_BWD};
}

static void ofob_order(const hs_sched_params_t *sp, hs_sched_item_t *out)
{
  one_f_one_b(sp->m, sp->p - sp->rank - 1, out);
}

static void hetero_order(const hs_sched_params_t *sp, hs_sched_item_t *out)
{
  /* an explicit order (plan validation checks it: 2m letters, every
   * prefix with no more Bs than Fs); a malformed one falls back to the rule */
  if (sp->order && strlen(sp->order) == 2 * (size_t)sp->m) {
    int32_t f = 0, b = 0;
    bool ok = true;
    for (int32_t k = 0; ok && k < 2 * sp->m; k++) {
      if (sp->order[k] == 'F' && f < sp->m)
        out[k] = (hs_sched_item_t){.mb = f++, .phase = HS_PHASE_FWD};
      else if (sp->order[k] == 'B' && b < f)
        out[k] = (hs_sched_item_t){.mb = b++, .phase = HS_PHASE_BWD};
      else
        ok = false;
    }
    if (ok)
      return;
  }
  int32_t w = sp->warmup >= 0 ? sp->warmup : sp->p - sp->rank - 1;
  one_f_one_b(sp->m, w, out);
}

static hs_status_t interleaved_check(const hs_sched_params_t *sp, hs_error_t *err)
{
  hs_status_t st = check_basic(sp, err);
  if (st != HS_OK)
    return st;
  if (sp->v > 1 && sp->m % sp->p != 0)
    return hs_error_set(err, HS_EINVAL,
                        "schedule: interleaved-1f1b needs microbatches (%d) to be a multiple of "
                        "pipeline ranks (%d)",
                        sp->m, sp->p);
  return HS_OK;
}

/* Megatron's forward_backward_pipelining_with_interleaving: the k-th forward
 * (virtual microbatch) of a rank runs chunk (k / p) % v of microbatch
 * (k / (p v)) p + k % p; backwards run chunks in reverse. */
static void interleaved_order(const hs_sched_params_t *sp, hs_sched_item_t *out)
{
  int32_t p = sp->p, v = sp->v, m = sp->m;
  if (v == 1) {
    ofob_order(sp, out);
    return;
  }
  int32_t total = m * v;
  int32_t warmup = (p - sp->rank - 1) * 2 + (v - 1) * p;
  if (warmup > total)
    warmup = total;
  int32_t k = 0, f = 0, b = 0;
#define FWD_ITEM(idx)                                                                   \
  (hs_sched_item_t){.mb = ((idx) / (p * v)) * p + (idx) % p, .chunk = (int16_t)(((idx) / p) % v), \
                    .phase = HS_PHASE_FWD}
#define BWD_ITEM(idx)                                                                   \
  (hs_sched_item_t){.mb = ((idx) / (p * v)) * p + (idx) % p,                            \
                    .chunk = (int16_t)(v - 1 - ((idx) / p) % v), .phase = HS_PHASE_BWD}
  for (; f < warmup; f++)
    out[k++] = FWD_ITEM(f);
  while (f < total) {
    out[k++] = FWD_ITEM(f);
    f++;
    out[k++] = BWD_ITEM(b);
    b++;
  }
  while (b < total) {
    out[k++] = BWD_ITEM(b);
    b++;
  }
#undef FWD_ITEM
#undef BWD_ITEM
}

static const hs_schedule_t sched_gpipe = {
    .name = "gpipe",
    .description = "GPipe: all forwards then all backwards; activations of every microbatch in flight",
    .interleaved = false,
    .default_async_send = false,
    .check = check_basic,
    .order = gpipe_order,
};

static const hs_schedule_t sched_1f1b = {
    .name = "1f1b",
    .description = "1F1B (PipeDream-Flush, Megatron): p-r-1 warm-up forwards, blocking p2p",
    .interleaved = false,
    .default_async_send = false,
    .check = check_basic,
    .order = ofob_order,
};

static const hs_schedule_t sched_interleaved = {
    .name = "interleaved-1f1b",
    .description = "Megatron interleaved 1F1B with v model chunks per rank: bubble / v",
    .interleaved = true,
    .default_async_send = false,
    .check = interleaved_check,
    .order = interleaved_order,
};

static const hs_schedule_t sched_hetero = {
    .name = "hetero-1f1b",
    .description = "heterogeneity-aware 1F1B (HAPT): per-stage warm-up depth, early asynchronous sends",
    .interleaved = false,
    .default_async_send = true,
    .check = check_basic,
    .order = hetero_order,
};

const hs_schedule_t *const hs_schedules[] = {&sched_gpipe, &sched_1f1b, &sched_interleaved,
                                             &sched_hetero, NULL};

const hs_schedule_t *hs_schedule_find(const char *name)
{
  if (!name)
    return NULL;
  for (const hs_schedule_t *const *s = hs_schedules; *s; s++)
    if (strcmp((*s)->name, name) == 0)
      return *s;
  return NULL;
}
