/*
 * trace.c - Chrome trace writer. Spans are appended to one array as the run
 * goes (deterministic order) and written at the end; the JSON is printed
 * directly (it is a flat list of small objects, and traces can be large).
 *
 * Layout: pid = device id (named "dev N (GPU)"), tid 0 = compute stream,
 * tid 1 = collectives (TP blocking collectives and gradient buckets), tid 2 =
 * pipeline p2p; pid = n_devices holds one tid per busy link.
 */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

typedef struct span {
  int32_t pid, tid;
  int32_t mb, chunk;
  const char *name;   /* static strings only */
  hs_time_t t0, t1;
  double bytes;
} span_t;

struct hs_trace {
  const hs_cluster_t *c;
  span_t *spans;
  size_t n, cap;
  int32_t max_devices;
  bool links;
  bool oom;
};

hs_status_t hs_trace_new(const hs_cluster_t *c, const hs_sim_opts_t *opts, hs_trace_t **out,
                         hs_error_t *err)
{
  hs_trace_t *t = hs_calloc(1, sizeof *t);
  if (!t)
    return hs_error_set(err, HS_ENOMEM, "out of memory for the trace");
  t->c = c;
  t->max_devices = opts->trace_max_devices > 0 ? opts->trace_max_devices : (int32_t)c->n_devices;
  t->links = opts->trace_links;
  *out = t;
  return HS_OK;
}

void hs_trace_free(hs_trace_t *t)
{
  if (!t)
    return;
  free(t->spans);
  free(t);
}

static void add(hs_trace_t *t, int32_t pid, int32_t tid, const char *name, int32_t mb, int32_t chunk,
                hs_time_t t0, hs_time_t t1, double bytes)
{
  if (t->oom)
    return;
  if (hs_reserve((void **)&t->spans, &t->cap, t->n + 1, sizeof *t->spans) != HS_OK) {
    t->oom = true;
    return;
  }
  t->spans[t->n++] = (span_t){pid, tid, mb, chunk, name, t0, t1, bytes};
}

void hs_trace_compute(hs_trace_t *t, const hs_exec_t *ex, const char *name, int32_t mb,
                      int32_t chunk, hs_time_t t0, hs_time_t t1)
{
  for (int32_t d = 0; d < ex->tp; d++)
    if (ex->devices[d] < t->max_devices)
      add(t, ex->devices[d], 0, name, mb, chunk, t0, t1, 0.0);
}

void hs_trace_comm(hs_trace_t *t, const hs_exec_t *ex, const char *name, int32_t item, hs_time_t t0,
                   hs_time_t t1, double bytes)
{
  for (int32_t d = 0; d < ex->tp; d++)
    if (ex->devices[d] < t->max_devices)
      add(t, ex->devices[d], 1, name, -1, -1, t0, t1, bytes);
}

void hs_trace_send(hs_trace_t *t, int32_t dev_a, int32_t dev_b, const char *what, int32_t mb,
                   hs_time_t t0, hs_time_t t1, double bytes)
{
  if (dev_a < t->max_devices)
    add(t, dev_a, 2, what, mb, -1, t0, t1, bytes);
  if (dev_b < t->max_devices)
    add(t, dev_b, 2, what, mb, -1, t0, t1, bytes);
}

void hs_trace_link_span(hs_trace_t *t, int32_t link, const char *what, hs_time_t t0, hs_time_t t1,
                        double bytes)
{
  if (t->links)
    add(t, (int32_t)t->c->n_devices, link, what, -1, -1, t0, t1, bytes);
}

static void ts(FILE *f, hs_time_t ns) { fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000)); }

hs_status_t hs_trace_write(hs_trace_t *t, const hs_topology_t *topo, const hs_link_stats_t *ls,
                           const char *path, hs_error_t *err)
{
  if (t->oom)
    return hs_error_set(err, HS_ENOMEM, "%s: out of memory recording the trace", path);
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
  if (!f)
    return hs_error_set(err, HS_EIO, "%s: cannot open for writing", path);
  const hs_cluster_t *c = t->c;
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
  bool first = true;
#define SEP() (first ? (first = false, "") : ",\n")
  /* device process and thread names, only for devices that appear */
  uint8_t *seen = hs_calloc(c->n_devices + 1, 1);
  if (!seen) {
    if (f != stdout)
      fclose(f);
    return hs_error_set(err, HS_ENOMEM, "out of memory writing the trace");
  }
  for (size_t k = 0; k < t->n; k++)
    if (t->spans[k].pid < (int32_t)c->n_devices)
      seen[t->spans[k].pid] = 1;
  static const char *const tnames[] = {"compute", "collectives", "p2p"};
  for (size_t d = 0; d < c->n_devices; d++) {
    if (!seen[d])
      continue;
    fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%zu,\"args\":{\"name\":\"dev %zu (%s, node %d)\"}}",
            SEP(), d, d, hs_cluster_gpu(c, (int32_t)d)->name, c->devices[d].node);
    fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%zu,\"args\":{\"sort_index\":%zu}}",
            SEP(), d, d);
    for (int k = 0; k < 3; k++)
      fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
              SEP(), d, k, tnames[k]);
  }
  free(seen);
  const hs_link_t *links = hs_topology_links(topo);
  size_t nl = hs_topology_n_links(topo);
  if (t->links) {
    fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%zu,\"args\":{\"name\":\"links\"}}",
            SEP(), c->n_devices);
    for (size_t l = 0; l < nl; l++) {
      if (ls[l].bytes <= 0)
        continue;
      fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%zu,\"args\":{\"name\":\"%s (%.4g GB/s)\"}}",
              SEP(), c->n_devices, l, links[l].label, links[l].GBps);
      fprintf(f, "%s{\"ph\":\"C\",\"name\":\"%s bytes\",\"pid\":%zu,\"tid\":%zu,\"ts\":0,\"args\":{\"GB\":%.6g}}",
              SEP(), links[l].label, c->n_devices, l, ls[l].bytes / HS_GB);
    }
  }
  for (size_t k = 0; k < t->n; k++) {
    const span_t *s = &t->spans[k];
    fprintf(f, "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"", SEP(), s->pid, s->tid);
    if (s->mb >= 0 && s->chunk > 0)
      fprintf(f, "%s mb%d c%d", s->name, s->mb, s->chunk);
    else if (s->mb >= 0)
      fprintf(f, "%s mb%d", s->name, s->mb);
    else
      fputs(s->name, f);
    fputs("\",\"ts\":", f);
    ts(f, s->t0);
    fputs(",\"dur\":", f);
    ts(f, s->t1 - s->t0);
    if (s->bytes > 0)
      fprintf(f, ",\"args\":{\"bytes\":%.17g}", s->bytes);
    fputc('}', f);
  }
#undef SEP
  fputs("\n]}\n", f);
  int bad = ferror(f);
  if (f != stdout)
    bad |= fclose(f);
  if (bad)
    return hs_error_set(err, HS_EIO, "%s: write error", path);
  return HS_OK;
}
