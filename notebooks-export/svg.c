/*
 * svg.c - a standalone SVG Gantt chart of a Chrome trace: one row per
 * (pid, tid) that has complete events, sorted by pid then tid, spans
 * coloured by class (forward, backward, collective, p2p, ...), idle time as
 * the row background, a time axis and a legend. No script, no external
 * resources: any browser or image viewer shows it.
 *
 * Spans of one row and class that touch or overlap within a quarter of a
 * pixel are drawn as one rectangle (per-op spans of a microbatch become one
 * block), which bounds the file size by the drawing's width rather than the
 * trace's length. Coordinates print with two decimals: deterministic.
 */
#include "hs_export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name, *colour;
} classes[HS_SPAN__COUNT] = {
    [HS_SPAN_FORWARD] = {"forward", "#4c78a8"},    [HS_SPAN_BACKWARD] = {"backward", "#f58518"},
    [HS_SPAN_RECOMPUTE] = {"recompute", "#b279a2"}, [HS_SPAN_COLLECTIVE] = {"collective", "#54a24b"},
    [HS_SPAN_P2P] = {"p2p", "#e45756"},             [HS_SPAN_OPTIMIZER] = {"optimizer", "#72b7b2"},
    [HS_SPAN_LINK] = {"link", "#9d755d"},           [HS_SPAN_FAILURE] = {"failure", "#000000"},
    [HS_SPAN_RECOVERY] = {"recovery", "#eeca3b"},   [HS_SPAN_CHECKPOINT] = {"checkpoint", "#ff9da6"},
    [HS_SPAN_IDLE] = {"idle", "#e8e8e8"},           [HS_SPAN_OTHER] = {"other", "#bab0ac"},
};

const char *hs_span_class_name(hs_span_class_t k)
{
  return (unsigned)k < HS_SPAN__COUNT ? classes[k].name : "other";
}

const char *hs_span_class_colour(hs_span_class_t k)
{
  return (unsigned)k < HS_SPAN__COUNT ? classes[k].colour : classes[HS_SPAN_OTHER].colour;
}

static bool starts(const char *s, const char *prefix)
{
  return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

hs_span_class_t hs_span_classify(const hs_tspan_t *s, const char *process_name,
                                 const char *thread_name)
{
  static const struct {
    const char *cat;
    hs_span_class_t k;
  } cats[] = {{"forward", HS_SPAN_FORWARD},       {"fwd", HS_SPAN_FORWARD},
              {"backward", HS_SPAN_BACKWARD},     {"bwd", HS_SPAN_BACKWARD},
              {"recompute", HS_SPAN_RECOMPUTE},   {"collective", HS_SPAN_COLLECTIVE},
              {"comm", HS_SPAN_COLLECTIVE},       {"p2p", HS_SPAN_P2P},
              {"optimizer", HS_SPAN_OPTIMIZER},   {"link", HS_SPAN_LINK},
              {"failure", HS_SPAN_FAILURE},       {"preemption", HS_SPAN_FAILURE},
              {"recovery", HS_SPAN_RECOVERY},     {"checkpoint", HS_SPAN_CHECKPOINT},
              {"idle", HS_SPAN_IDLE}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cats); i++)
    if (strcmp(s->cat, cats[i].cat) == 0)
      return cats[i].k;
  const char *n = s->name;
  if (process_name && strcmp(process_name, "links") == 0)
    return HS_SPAN_LINK;
  if (starts(n, "fwd") || starts(n, "forward"))
    return HS_SPAN_FORWARD;
  if (starts(n, "bwd") || starts(n, "backward"))
    return HS_SPAN_BACKWARD;
  if (starts(n, "recompute"))
    return HS_SPAN_RECOMPUTE;
  if (starts(n, "optimizer"))
    return HS_SPAN_OPTIMIZER;
  if (has(n, "preempt") || has(n, "fail"))
    return HS_SPAN_FAILURE;
  if (has(n, "checkpoint") || has(n, "ckpt"))
    return HS_SPAN_CHECKPOINT;
  if (has(n, "recover") || has(n, "restore") || has(n, "restart") || has(n, "fetch") ||
      has(n, "reshard"))
    return HS_SPAN_RECOVERY;
  if (starts(n, "idle") || starts(n, "wait"))
    return HS_SPAN_IDLE;
  if ((thread_name && strcmp(thread_name, "p2p") == 0) || starts(n, "send") || starts(n, "recv") ||
      starts(n, "act") || starts(n, "grad mb"))
    return HS_SPAN_P2P;
  if ((thread_name && strcmp(thread_name, "collectives") == 0) || has(n, "reduce") ||
      has(n, "gather") || has(n, "broadcast") || has(n, "alltoall") || has(n, "scatter"))
    return HS_SPAN_COLLECTIVE;
  return HS_SPAN_OTHER;
}

static const char *label_of(const hs_trace_doc_t *d, int64_t pid, int64_t tid, bool thread)
{
  const char *found = NULL;
  for (size_t i = 0; i < d->n_labels; i++) /* last one wins, as in Perfetto */
    if (d->labels[i].thread == thread && d->labels[i].pid == pid && (!thread || d->labels[i].tid == tid))
      found = d->labels[i].name;
  return found;
}

static void xml_text(FILE *f, const char *s)
{
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\t')
        fputc(*s, f);
    }
  }
}

static int cmp_span(const void *a, const void *b)
{
  const hs_tspan_t *x = *(const hs_tspan_t *const *)a, *y = *(const hs_tspan_t *const *)b;
  if (x->pid != y->pid)
    return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  if (x->ts_us != y->ts_us)
    return x->ts_us < y->ts_us ? -1 : 1;
  if (x->dur_us != y->dur_us)
    return x->dur_us < y->dur_us ? -1 : 1;
  return x < y ? -1 : x > y; /* stable: input order */
}

static void fmt_time(double us, char *buf, size_t n)
{
  double a = fabs(us);
  if (a >= 1e6)
    snprintf(buf, n, "%.3g s", us / 1e6);
  else if (a >= 1e3)
    snprintf(buf, n, "%.3g ms", us / 1e3);
  else
    snprintf(buf, n, "%.3g us", us);
}

#define SVG_WIDTH 1400.0
#define LABEL_W 280.0
#define RIGHT_M 20.0
#define TOP 56.0
#define ROW_H 16.0
#define ROW_GAP 3.0

hs_status_t hs_trace_svg_write(const hs_trace_doc_t *d, const char *title, FILE *f,
                               size_t *n_rows, hs_error_t *err)
{
  const hs_tspan_t **sorted = hs_calloc(d->n_spans + 1, sizeof *sorted);
  if (!sorted)
    return hs_error_set(err, HS_ENOMEM, "out of memory for %zu spans", d->n_spans);
  for (size_t i = 0; i < d->n_spans; i++)
    sorted[i] = &d->spans[i];
  qsort(sorted, d->n_spans, sizeof *sorted, cmp_span);
  double t0 = INFINITY, t1 = -INFINITY;
  size_t rows = 0;
  for (size_t i = 0; i < d->n_spans; i++) {
    t0 = fmin(t0, sorted[i]->ts_us);
    t1 = fmax(t1, sorted[i]->ts_us + sorted[i]->dur_us);
    if (i == 0 || sorted[i]->pid != sorted[i - 1]->pid || sorted[i]->tid != sorted[i - 1]->tid)
      rows++;
  }
  if (!d->n_spans)
    t0 = t1 = 0.0;
  double span_us = t1 > t0 ? t1 - t0 : 1.0;
  double plot_w = SVG_WIDTH - LABEL_W - RIGHT_M;
  double scale = plot_w / span_us; /* px per us */
  double legend_y = TOP + (double)rows * (ROW_H + ROW_GAP) + 16.0;
  double height = legend_y + 40.0;
  bool used[HS_SPAN__COUNT] = {false};

  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
          SVG_WIDTH, height, SVG_WIDTH, height);
  fputs("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n<text x=\"10\" y=\"20\" font-size=\"15\">", f);
  xml_text(f, title ? title : "trace");
  char b0[32], b1[32];
  fmt_time(span_us, b0, sizeof b0);
  fprintf(f, " (%zu rows, %zu spans, %s)</text>\n", rows, d->n_spans, b0);
  /* time axis: 10 intervals */
  fputs("<g class=\"axis\" stroke=\"#999999\">\n", f);
  for (int k = 0; k <= 10; k++) {
    double x = LABEL_W + plot_w * k / 10.0;
    fmt_time(span_us * k / 10.0, b1, sizeof b1);
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>"
               "<text x=\"%.2f\" y=\"%.2f\" stroke=\"none\" fill=\"#333333\" text-anchor=\"middle\">%s</text>\n",
            x, TOP - 8, x, TOP + (double)rows * (ROW_H + ROW_GAP), x, TOP - 12, b1);
  }
  fputs("</g>\n", f);

  size_t i = 0, row = 0;
  while (i < d->n_spans) {
    int64_t pid = sorted[i]->pid, tid = sorted[i]->tid;
    const char *pname = label_of(d, pid, 0, false), *tname = label_of(d, pid, tid, true);
    double y = TOP + (double)row * (ROW_H + ROW_GAP);
    fprintf(f, "<g class=\"row\" data-pid=\"%lld\" data-tid=\"%lld\">\n", (long long)pid, (long long)tid);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">", LABEL_W - 6, y + ROW_H - 4);
    if (pname)
      xml_text(f, pname);
    else
      fprintf(f, "pid %lld", (long long)pid);
    fputs(" / ", f);
    if (tname)
      xml_text(f, tname);
    else
      fprintf(f, "tid %lld", (long long)tid);
    fprintf(f, "</text>\n<rect class=\"idle\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
            LABEL_W, y, plot_w, ROW_H, classes[HS_SPAN_IDLE].colour);
    used[HS_SPAN_IDLE] = true;
    size_t j = i;
    while (j < d->n_spans && sorted[j]->pid == pid && sorted[j]->tid == tid) {
      const hs_tspan_t *s = sorted[j];
      hs_span_class_t k = hs_span_classify(s, pname, tname);
      double a = s->ts_us, b = s->ts_us + s->dur_us;
      size_t merged = 1, m = j + 1;
      while (m < d->n_spans && sorted[m]->pid == pid && sorted[m]->tid == tid &&
             sorted[m]->ts_us <= b + 0.25 / scale && hs_span_classify(sorted[m], pname, tname) == k) {
        b = fmax(b, sorted[m]->ts_us + sorted[m]->dur_us);
        merged++;
        m++;
      }
      used[k] = true;
      double x = LABEL_W + (a - t0) * scale, w = fmax((b - a) * scale, 0.5);
      fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>",
              x, y, w, ROW_H, classes[k].colour);
      xml_text(f, s->name);
      if (merged > 1)
        fprintf(f, " (+%zu more)", merged - 1);
      fmt_time(b - a, b0, sizeof b0);
      fprintf(f, ", %s, %s</title></rect>\n", classes[k].name, b0);
      j = m;
    }
    fputs("</g>\n", f);
    i = j;
    row++;
  }
  /* legend */
  fprintf(f, "<g class=\"legend\">\n");
  double x = LABEL_W;
  for (int k = 0; k < HS_SPAN__COUNT; k++) {
    if (!used[k])
      continue;
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#666666\"/>"
               "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            x, legend_y, classes[k].colour, x + 16, legend_y + 10, classes[k].name);
    x += 100;
  }
  fputs("</g>\n</svg>\n", f);
  free(sorted);
  if (n_rows)
    *n_rows = rows;
  if (ferror(f))
    return hs_error_set(err, HS_EIO, "write error");
  return HS_OK;
}
