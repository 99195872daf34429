/*
 * trace.h - internal to sim/: records what ran when and writes a Chrome trace
 * JSON that Perfetto draws correctly (docs/simulator.md, "Traces").
 *
 * Invariants of the written file: on every (pid, tid) track the complete
 * ("X") slices nest (none partially overlaps another); overlapping work
 * (pipeline sends and receives, link flows) is spread over lanes, one track
 * each; every slice has a `cat` from hs_trace_cats; a send and its receive
 * are joined by a flow arrow ("s"/"f" with one id); links carry utilisation
 * counters ("C") sampled over the iteration. Same input, same bytes.
 *
 * Cost: hooks of devices and links the trace does not show return at once
 * (opts->trace_max_devices bounds the devices and, with them, the links:
 * trace.c); device slices are written to the file as they are reported and
 * link utilisation is binned as flows complete, so time and memory grow
 * with what is written, not with the flows simulated.
 */
#ifndef HS_TRACE_H
#define HS_TRACE_H

#include "lower.h"

typedef struct hs_trace hs_trace_t;

/* The categories slices carry, NULL-terminated. */
extern const char *const hs_trace_cats[];

/* Borrows model, cluster, plan and lowering (they outlive the trace).
 * Opens opts->trace_path (through a temporary: an unwritable path fails
 * here) and writes the file's head. */
hs_status_t hs_trace_new(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_t *plan,
                         const hs_lowered_t *low, const hs_sim_opts_t *opts, hs_trace_t **out,
                         hs_error_t *err);
/* Removes the temporary when hs_trace_write did not commit it. NULL: no-op. */
void hs_trace_free(hs_trace_t *t);
/* One schedule item (forward or backward of microbatch mb, chunk) of
 * executor `ex`, from its first segment's start to its end; the backward's
 * recomputed forward ran from t0 to rc_end (rc_end <= t0: none). */
void hs_trace_item(hs_trace_t *t, const hs_exec_t *ex, int32_t phase, int32_t mb, int32_t chunk,
                   hs_time_t t0, hs_time_t t1, hs_time_t rc_end);
/* One compute segment (kernel detail only); `recompute` marks a recomputed
 * forward. */
void hs_trace_segment(hs_trace_t *t, const hs_exec_t *ex, bool recompute, hs_time_t t0,
                      hs_time_t t1);
void hs_trace_optimizer(hs_trace_t *t, const hs_exec_t *ex, hs_time_t t0, hs_time_t t1);
/* A blocking TP (or SPMD) collective (kernel detail only). */
void hs_trace_tp(hs_trace_t *t, const hs_exec_t *ex, const char *name, hs_time_t t0, hs_time_t t1,
                 double bytes);
/* A gradient bucket all-reduce on the executor's DP track. */
void hs_trace_dp(hs_trace_t *t, const hs_exec_t *ex, hs_time_t t0, hs_time_t t1, double bytes);
/* A pipeline transfer from device a to b, posted at t0 and arrived at t1:
 * a send slice on a, a receive slice on b and an arrow between them. */
void hs_trace_send(hs_trace_t *t, int32_t dev_a, int32_t dev_b, bool fwd, int32_t mb,
                   hs_time_t t0, hs_time_t t1, double bytes);
/* The transfer on one link (kernel detail: link flow lanes). */
void hs_trace_link_span(hs_trace_t *t, int32_t link, bool fwd, hs_time_t t0, hs_time_t t1,
                        double bytes);
/* Network observer (hs_net_set_observer): bins the bytes of every flow on
 * its recorded links for the utilisation counters. ctx is the trace. */
void hs_trace_flow_done(void *ctx, const hs_flow_t *f);
/* x as printf's "%.6g" writes it, into out (at least 32 bytes); formatted
 * by hand for 1e-4 <= x < 1e6. Shared with tests/test_trace_format.c. */
void hs__trace_fmt_g6(double x, char *out);
/* Finishes the file at the end of the run (idle tails, names, links) and
 * commits it over path; on failure the target is left as it was. */
hs_status_t hs_trace_write(hs_trace_t *t, const hs_topology_t *topo, const hs_link_stats_t *ls,
                           const char *path, hs_error_t *err);

#endif
