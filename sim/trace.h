/*
 * trace.h - internal to sim/: records what ran when and writes a Chrome trace
 * JSON (opens in Perfetto or chrome://tracing): one process per device with a
 * compute, a collective and a p2p track, and one track per busy link.
 */
#ifndef HS_TRACE_H
#define HS_TRACE_H

#include "lower.h"

typedef struct hs_trace hs_trace_t;

hs_status_t hs_trace_new(const hs_cluster_t *c, const hs_sim_opts_t *opts, hs_trace_t **out,
                         hs_error_t *err);
void hs_trace_free(hs_trace_t *t);
/* Compute span on every device of the executor (mb/chunk -1 = none). */
void hs_trace_compute(hs_trace_t *t, const hs_exec_t *ex, const char *name, int32_t mb,
                      int32_t chunk, hs_time_t t0, hs_time_t t1);
/* Collective span on the executor's devices' collective track. */
void hs_trace_comm(hs_trace_t *t, const hs_exec_t *ex, const char *name, int32_t item,
                   hs_time_t t0, hs_time_t t1, double bytes);
/* Pipeline transfer from device a to b; shown on both p2p tracks. */
void hs_trace_send(hs_trace_t *t, int32_t dev_a, int32_t dev_b, const char *what, int32_t mb,
                   hs_time_t t0, hs_time_t t1, double bytes);
/* Also records the transfer on each link of `hops` (link tracks). */
void hs_trace_link_span(hs_trace_t *t, int32_t link, const char *what, hs_time_t t0, hs_time_t t1,
                        double bytes);
hs_status_t hs_trace_write(hs_trace_t *t, const hs_topology_t *topo, const hs_link_stats_t *ls,
                           const char *path, hs_error_t *err);

#endif
