/*
 * contention.h - internal to sim/: compute slowed by communication running
 * beside it on the same device (NCCL kernels hold SMs, one CTA per channel,
 * and HBM bandwidth while a GEMM runs; docs/simulator.md, "Overlap
 * contention").
 *
 * Model: while at least one collective that involves an executor's devices
 * is in flight, its compute runs at 1/(1+k) of full speed, k the GPU's
 * catalog figure `overlap_slowdown` (clusters/gpus.json). A compute segment
 * of c full-speed ns beside a collective of g ns that starts with it thus
 * ends after c + k min(c, g / (1+k)): when the collective outlasts it,
 * c (1+k); otherwise the collective's g ns do g/(1+k) of the work and the
 * rest runs at full speed. Several collectives at once slow it no more
 * than one (the published kernel-level figures are for one collective).
 *
 * Invariants: with k = 0 nothing changes (hs__contention returns the full-
 * speed figures unchanged, so a simulation is bit-identical to one without
 * it); a compute segment's remaining work is tracked in full-speed ns as a
 * double and every wall-clock duration handed back is rounded once
 * (llround), so same input, same output.
 */
#ifndef HS_CONTENTION_H
#define HS_CONTENTION_H

#include "hs_common.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum {
  HS_CONT_COMPUTE_START, /* a compute segment of `work_ns` full-speed ns starts now */
  HS_CONT_COMPUTE_END,   /* the running compute segment ended */
  HS_CONT_COMM_START,    /* a collective involving the device started */
  HS_CONT_COMM_END       /* ... ended */
} hs_cont_event_t;

/* Per executor (one TP group, one GPU type). Zero-initialise, then set k. */
typedef struct hs_contention {
  double k;              /* overlap_slowdown of the executor's GPU, in [0, 1) */
  int32_t live;          /* collectives in flight on the executor's devices */
  bool running;          /* a compute segment is running */
  hs_time_t t_mark;      /* when the running segment's rate last changed */
  double left_ns;        /* its full-speed work left at t_mark */
} hs_contention_t;

/* The one entry point. COMPUTE_START returns the wall-clock ns to schedule
 * the segment's end after (work_ns, stretched by 1+k while live > 0).
 * COMM_START / COMM_END return the wall-clock ns from `now` to the running
 * segment's new end when its rate changed (the caller reschedules its end
 * event), or -1 when nothing running changed. COMPUTE_END returns 0.
 * work_ns is read only by COMPUTE_START. */
hs_time_t hs__contention(hs_contention_t *c, hs_cont_event_t ev, hs_time_t now, hs_time_t work_ns);

#endif
