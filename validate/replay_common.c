/*
 * replay_common.c - the skeleton of a replay that the CPU backend
 * (replay_cpu.c) and the CUDA backend (cuda/replay_cuda.c, compiled into
 * hetsim-cuda.so with its own copy of hs_validate) share: options, which
 * executors run, the walk over one device's schedule order, task records,
 * the median iteration and the labels of measured.json
 * (replay_internal.h).
 *
 * Knows nothing of threads, CUDA or MPI: the walk calls the backend's steps
 * (hs_replay_backend_t) in the schedule's order, so both backends run the
 * items, their work lists and their sends in the same order. No state.
 */
#include "replay_internal.h"

#include <math.h>
#include <string.h>

void hs_replay_opts_init(hs_replay_opts_t *o)
{
  o->iterations = 5;
  o->warmup = 1;
  o->only_stage = -1;
  o->clock = HS_CLOCK_CPU;
}

hs_status_t hs__replay_opts(const hs_replay_opts_t *o, hs_replay_opts_t *defaults,
                            const hs_replay_opts_t **out, hs_error_t *err)
{
  if (!o) {
    hs_replay_opts_init(defaults);
    o = defaults;
  }
  *out = o;
  if (o->iterations < 1 || o->warmup < 0)
    return hs_error_set(err, HS_EINVAL, "replay: iterations must be >= 1 and warm-up >= 0");
  return HS_OK;
}

bool hs__replay_active(const hs_replay_opts_t *o, const hs_tg_exec_t *x)
{
  return o->only_stage < 0 || (x->pipeline == 0 && x->v == 1 && x->rank == o->only_stage);
}

hs_status_t hs__replay_no_stage(const hs_replay_opts_t *o, hs_error_t *err)
{
  return hs_error_set(err, HS_EINVAL,
                      "replay: --stage %d: pipeline 0 has no such stage (interleaved plans "
                      "cannot be replayed stage by stage)",
                      o->only_stage);
}

hs_meas_task_t hs__replay_task(const char *name, int32_t exec, int32_t device, int32_t stage,
                               int32_t mb, int32_t chunk, double predicted_s, double bytes)
{
  hs_meas_task_t t;
  memset(&t, 0, sizeof t);
  hs_strlcpy(t.name, name, sizeof t.name);
  t.exec = exec;
  t.device = device;
  t.stage = stage;
  t.mb = mb;
  t.chunk = chunk;
  t.predicted_s = predicted_s;
  t.bytes = bytes;
  return t;
}

hs_status_t hs__replay_walk(const hs_replay_backend_t *ops, void *be, const hs_tg_exec_t *x)
{
  hs_status_t st = HS_OK;
  for (int32_t p = 0; p < x->n_items; p++) {
    const hs_sched_item_t *it = &x->order[p];
    const hs_tg_work_t *wk = &x->work[it->chunk * 2 + it->phase];
    HS_CHECK(ops->recv(be, it));
    HS_CHECK(ops->item_begin(be, it));
    for (int32_t i = 0; i < wk->n; i++)
      HS_CHECK(ops->entry(be, it, i, &wk->e[i]));
    HS_CHECK(ops->item_end(be, it));
    HS_CHECK(ops->send(be, it));
  }
  HS_CHECK(ops->finish(be));
cleanup:
  return st;
}

int32_t hs__replay_median(hs_measured_t *out)
{
  out->iteration_time_s = hs_median(out->iteration_s, (size_t)out->n_iterations);
  int32_t med = 0;
  for (int32_t i = 0; i < out->n_iterations; i++)
    if (fabs(out->iteration_s[i] - out->iteration_time_s) <
        fabs(out->iteration_s[med] - out->iteration_time_s))
      med = i;
  return med;
}

hs_status_t hs__replay_label(const hs_taskgraph_t *tg, const hs_replay_opts_t *o,
                             const char *backend, const hs_kernel_sample_t *ks, size_t n_ks,
                             const hs_item_sample_t *is, size_t n_is, hs_measured_t *out,
                             hs_error_t *err)
{
  if (hs__measured_aggregate(tg, ks, n_ks, is, n_is, out) != HS_OK)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  hs_strlcpy(out->backend, backend, sizeof out->backend);
  if (o->only_stage >= 0)
    snprintf(out->mode, sizeof out->mode, "stage %d", o->only_stage);
  else
    hs_strlcpy(out->mode, "plan", sizeof out->mode);
  return HS_OK;
}
