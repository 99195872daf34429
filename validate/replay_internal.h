/*
 * replay_internal.h - internal to validate/: the skeleton the two replay
 * backends share (replay_common.c), the CPU one (replay_cpu.c, a thread per
 * device) and the CUDA one (cuda/replay_cuda.c, an MPI rank per device).
 *
 * What both do, in this order, and where it lives:
 *   1. resolve and check the options, pick the executors that run
 *      (hs__replay_opts, hs__replay_active, hs__replay_no_stage);
 *   2. size and allocate their buffers (per backend);
 *   3. per iteration, walk each device's schedule order
 *      (hs__replay_walk) through the backend's steps (hs_replay_backend_t):
 *      receive the item's inputs, time the item, run its work list entry by
 *      entry, send its outputs, then synchronise gradients and step the
 *      optimizer;
 *   4. assemble measured.json: per-iteration times -> median iteration
 *      (hs__replay_median), task records of that iteration
 *      (hs__replay_task), kernel and item samples -> per-op and per-stage
 *      aggregates, backend and mode labels (hs__replay_label).
 * The backends differ in how they do 2 and 3 (threads and barriers with CPU
 * kernels, or CUDA streams, cuBLAS and NCCL) and in how records reach the
 * root (shared memory, or MPI_Gatherv).
 */
#ifndef HS_REPLAY_INTERNAL_H
#define HS_REPLAY_INTERNAL_H

#include "validate_internal.h"

/* The options a replay runs with: o, or hs_replay_opts_init's defaults
 * written to *defaults when o is NULL. HS_EINVAL when iterations < 1 or
 * warm-up < 0. O(1). */
hs_status_t hs__replay_opts(const hs_replay_opts_t *o, hs_replay_opts_t *defaults,
                            const hs_replay_opts_t **out, hs_error_t *err);

/* Whether executor x runs under o: every executor, or with --stage K only
 * the non-interleaved executor of stage K in pipeline 0. O(1). */
bool hs__replay_active(const hs_replay_opts_t *o, const hs_tg_exec_t *x);

/* The HS_EINVAL for a --stage K that selects no executor. O(1). */
hs_status_t hs__replay_no_stage(const hs_replay_opts_t *o, hs_error_t *err);

/* One task record of the replay timeline (t0_s, t1_s zero: the backend
 * times it). `name` is "fwd", "bwd", "act", "grad", "allreduce", ...;
 * mb and chunk -1 for per-iteration tasks. O(1). */
hs_meas_task_t hs__replay_task(const char *name, int32_t exec, int32_t device, int32_t stage,
                               int32_t mb, int32_t chunk, double predicted_s, double bytes);

/* The backend's steps of one device's iteration, called by hs__replay_walk
 * with the backend's state `be`. Each returns HS_OK to go on; any other
 * status stops the walk, which returns it. */
typedef struct hs_replay_backend {
  const char *name; /* "cpu", "cuda": measured.json's backend */
  /* wait for (CPU) or receive (CUDA) item it's pipeline inputs */
  hs_status_t (*recv)(void *be, const hs_sched_item_t *it);
  /* start timing item it */
  hs_status_t (*item_begin)(void *be, const hs_sched_item_t *it);
  /* run entry i (kernel or TP collective) of item it's work list */
  hs_status_t (*entry)(void *be, const hs_sched_item_t *it, int32_t i, const hs_tg_entry_t *e);
  /* stop timing item it and record it */
  hs_status_t (*item_end)(void *be, const hs_sched_item_t *it);
  /* send item it's outputs to the next stages */
  hs_status_t (*send)(void *be, const hs_sched_item_t *it);
  /* after the last item: gradient buckets still to reduce, the optimizer */
  hs_status_t (*finish)(void *be);
} hs_replay_backend_t;

/* Walks executor x's schedule order once through ops, in order: per item
 * recv, item_begin, entry for each entry of its work list, item_end, send;
 * then finish. Stops at the first step that does not return HS_OK and
 * returns its status. O(items + entries) calls. */
hs_status_t hs__replay_walk(const hs_replay_backend_t *ops, void *be, const hs_tg_exec_t *x);

/* Index (0-based, among the timed iterations) of the iteration whose time
 * is nearest the median, the first on ties; sets out->iteration_time_s to
 * the median of out->iteration_s[0 .. out->n_iterations). O(n log n). */
int32_t hs__replay_median(hs_measured_t *out);

/* Completes out from the root's samples: per-op and per-stage aggregates
 * (hs__measured_aggregate), the backend's name and the mode ("plan" or
 * "stage K"). HS_ENOMEM with the message on failure. O(samples). */
hs_status_t hs__replay_label(const hs_taskgraph_t *tg, const hs_replay_opts_t *o,
                             const char *backend, const hs_kernel_sample_t *ks, size_t n_ks,
                             const hs_item_sample_t *is, size_t n_is, hs_measured_t *out,
                             hs_error_t *err);

#endif
