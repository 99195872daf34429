/*
 * svg.c - a standalone SVG timeline of a Chrome trace (docs/export.md, "SVG
 * timeline"). No script, no external resources: any browser or image viewer
 * shows it.
 *
 * Rows. A simulator trace (processes with a "compute" thread) is drawn by
 * pipeline stage: link utilisation counters first (cross-site links, then at
 * most 4 others), then per device process in sort-index order a compute row
 * (forward, backward, recompute, optimizer, idle) and a communication row
 * (TP, PP, DP), each communication class split into the part exposed (the
 * compute row is idle) and the part hidden under compute. By default only
 * representative devices (sort index = 10 mod 10^6, as sim/trace.c writes
 * it: the first device of each stage, identical pipelines folded) are drawn; all_devices draws every one. Any
 * other trace (the elastic timelines, other tools) gets one row per (pid,
 * tid) with X events.
 *
 * Drawing. Each row is divided into one-pixel columns; each class's
 * occupancy of a column (the fraction of the column's time it covers, spans
 * clipped at the column edges) is drawn as a stacked bar, so a row of short
 * collectives reads as the fraction of time they take, not as a solid bar,
 * and the file size is bounded by rows x width x classes, not by the trace.
 * Runs of columns with equal (quantised) heights are one rectangle. The time
 * axis uses one unit (us, ms, s, min or h) chosen by the span, with ticks at
 * 1, 2 or 5 x 10^k of it. Coordinates print with two decimals:
 * deterministic.
 */
#include "hs_export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name, *colour;
} classes[HS_SPAN__COUNT] = {
    [HS_SPAN_FORWARD] = {"forward", "#4c78a8"},     [HS_SPAN_BACKWARD] = {"backward", "#f58518"},
    [HS_SPAN_RECOMPUTE] = {"recompute", "#b279a2"}, [HS_SPAN_COLLECTIVE] = {"TP collective", "#54a24b"},
    [HS_SPAN_P2P] = {"PP send/recv", "#e45756"},     [HS_SPAN_DP] = {"DP all-reduce", "#bcbd22"},
    [HS_SPAN_OPTIMIZER] = {"optimizer", "#72b7b2"}, [HS_SPAN_LINK] = {"link utilisation", "#9d755d"},
    [HS_SPAN_TRAIN] = {"train", "#4c78a8"},         [HS_SPAN_LOST] = {"lost work", "#d62728"},
    [HS_SPAN_FAILURE] = {"failure", "#000000"},     [HS_SPAN_RECOVERY] = {"recovery", "#eeca3b"},
    [HS_SPAN_CHECKPOINT] = {"checkpoint", "#ff9da6"}, [HS_SPAN_REPLAN] = {"re-plan", "#9467bd"},
    [HS_SPAN_UP] = {"node up", "#a6cee3"},          [HS_SPAN_IDLE] = {"idle", "#c7c7c7"},
    [HS_SPAN_OTHER] = {"other", "#8c8c8c"},
};

#define BACKGROUND "#f4f4f4"

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
              {"tp-comm", HS_SPAN_COLLECTIVE},    {"comm", HS_SPAN_COLLECTIVE},
              {"p2p", HS_SPAN_P2P},               {"pp-comm", HS_SPAN_P2P},
              {"dp-comm", HS_SPAN_DP},            {"optimizer", HS_SPAN_OPTIMIZER},
              {"link", HS_SPAN_LINK},             {"train", HS_SPAN_TRAIN},
              {"lost", HS_SPAN_LOST},             {"failure", HS_SPAN_FAILURE},
              {"preemption", HS_SPAN_FAILURE},    {"recovery", HS_SPAN_RECOVERY},
              {"recover", HS_SPAN_RECOVERY},      {"checkpoint", HS_SPAN_CHECKPOINT},
              {"replan", HS_SPAN_REPLAN},         {"node-up", HS_SPAN_UP},
              {"idle", HS_SPAN_IDLE}};
  for (size_t i = 0; i < HS_ARRAY_LEN(cats); i++)
    if (strcmp(s->cat, cats[i].cat) == 0)
      return cats[i].k;
  const char *n = s->name;
  if (process_name && (strcmp(process_name, "links") == 0 || starts(process_name, "links (") ||
                       strcmp(process_name, "cross-site links") == 0))
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
  if ((thread_name && (strcmp(thread_name, "p2p") == 0 || starts(thread_name, "pp "))) ||
      starts(n, "send") || starts(n, "recv") || starts(n, "act") || starts(n, "grad mb"))
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

static bool sort_index_of(const hs_trace_doc_t *d, int64_t pid, int64_t *out)
{
  bool found = false;
  for (size_t i = 0; i < d->n_sorts; i++)
    if (d->sorts[i].pid == pid) {
      *out = d->sorts[i].index;
      found = true;
    }
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

/* ---- geometry and time axis ---------------------------------------------------- */

#define SVG_WIDTH 1400.0
#define LABEL_W 360.0
#define RIGHT_M 20.0
#define TOP 60.0
#define ROW_H 18.0
#define ROW_GAP 4.0
#define GROUP_GAP 8.0
#define NCOLS 1020 /* SVG_WIDTH - LABEL_W - RIGHT_M, one column per pixel */

typedef struct tunit {
  const char *name;
  double us;
} tunit_t;

/* The unit the span reads best in: under 2 of the next unit up. */
static tunit_t unit_for(double span_us)
{
  static const tunit_t units[] = {{"us", 1.0}, {"ms", 1e3}, {"s", 1e6}, {"min", 60e6}, {"h", 3600e6}};
  size_t k = 0;
  while (k + 1 < HS_ARRAY_LEN(units) && span_us >= 2.0 * units[k + 1].us)
    k++;
  return units[k];
}

/* Tick step in the unit: 1, 2 or 5 x 10^k giving at most 10 intervals. */
static double tick_step(double span_units)
{
  double p = pow(10.0, floor(log10(span_units > 0 ? span_units : 1.0)));
  static const double m[] = {0.1, 0.2, 0.5, 1, 2, 5, 10};
  for (size_t i = 0; i < HS_ARRAY_LEN(m); i++)
    if (span_units / (m[i] * p) <= 10.0)
      return m[i] * p;
  return 10 * p;
}

/* ---- rows ------------------------------------------------------------------------ */

/* A slice nests in the previous one when it starts before that one ends;
 * traces print ns with 3 decimals of us, so sums of ts and dur carry
 * rounding: half a nanosecond of slack. */
#define NEST_EPS_US 5e-4

typedef enum { ROW_GENERIC, ROW_COMPUTE, ROW_COMM, ROW_LINK } row_kind_t;

typedef struct row {
  row_kind_t kind;
  int64_t pid, tid;
  int64_t sort;
  size_t counter0;        /* ROW_LINK: first sample in the sorted counters */
  size_t n_counter;
} row_t;

typedef struct canvas {
  double t0, scale;       /* us at column 0; columns per us */
  float *occ;             /* [2 * HS_SPAN__COUNT][NCOLS]: [0..K) exposed/plain, [K..2K) hidden */
} canvas_t;

/* Adds weight w over [a, b) us into class row `k` of the occupancy. */
static void occ_add(canvas_t *cv, int k, double a, double b, double w)
{
  double x0 = (a - cv->t0) * cv->scale, x1 = (b - cv->t0) * cv->scale;
  if (x1 <= x0 || x1 <= 0 || x0 >= NCOLS)
    return;
  x0 = fmax(x0, 0.0);
  x1 = fmin(x1, (double)NCOLS);
  float *o = &cv->occ[(size_t)k * NCOLS];
  int c0 = (int)x0, c1 = (int)ceil(x1);
  for (int c = c0; c < c1 && c < NCOLS; c++) {
    double lo = fmax(x0, c), hi = fmin(x1, c + 1.0);
    if (hi > lo)
      o[c] += (float)((hi - lo) * w);
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
    return x->dur_us > y->dur_us ? -1 : 1; /* parents first */
  return x < y ? -1 : x > y;
}

static int cmp_counter(const void *a, const void *b)
{
  const hs_tcounter_t *x = *(const hs_tcounter_t *const *)a, *y = *(const hs_tcounter_t *const *)b;
  if (x->pid != y->pid)
    return x->pid < y->pid ? -1 : 1;
  int c = strcmp(x->name, y->name);
  if (c)
    return c;
  if (x->ts_us != y->ts_us)
    return x->ts_us < y->ts_us ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int cmp_row(const void *a, const void *b)
{
  const row_t *x = a, *y = b;
  if (x->sort != y->sort)
    return x->sort < y->sort ? -1 : 1;
  if (x->pid != y->pid)
    return x->pid < y->pid ? -1 : 1;
  if (x->kind != y->kind)
    return x->kind < y->kind ? -1 : 1;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  return x->counter0 < y->counter0 ? -1 : x->counter0 > y->counter0;
}

typedef struct ctx {
  const hs_trace_doc_t *d;
  const hs_tspan_t **sp;  /* sorted by pid, tid, ts */
  size_t n;
  const hs_tcounter_t **cn; /* sorted by pid, name, ts */
  double t1;              /* end of the drawing, us */
  bool used[HS_SPAN__COUNT], used_hidden;
} ctx_t;

/* [lo, hi) of the sorted spans of (pid, tid); tid < 0: every tid of pid. */
static void span_range(const ctx_t *x, int64_t pid, int64_t tid, size_t *lo, size_t *hi)
{
  size_t a = 0, b = x->n;
  while (a < b) { /* first >= (pid, tid) */
    size_t m = (a + b) / 2;
    const hs_tspan_t *s = x->sp[m];
    if (s->pid < pid || (s->pid == pid && tid >= 0 && s->tid < tid))
      a = m + 1;
    else
      b = m;
  }
  *lo = a;
  while (a < x->n && x->sp[a]->pid == pid && (tid < 0 || x->sp[a]->tid == tid))
    a++;
  *hi = a;
}

/* Busy intervals (non-idle top-level slices) of the compute track of pid,
 * merged; returns their count in *n (caller frees). */
/* Appends [a, b) to the sorted interval list iv (n pairs), merging overlaps. */
static void busy_add(double *iv, size_t *n, double a, double b)
{
  if (b <= a)
    return;
  if (*n > 0 && iv[2 * *n - 1] >= a)
    iv[2 * *n - 1] = fmax(iv[2 * *n - 1], b);
  else {
    iv[2 * *n] = a;
    iv[2 * *n + 1] = b;
    (*n)++;
  }
}

/* A kernel-detail segment (sim/trace.c hs_trace_segment): a run of kernels
 * between two blocking TP collectives, nested in its phase span. */
static bool is_segment(const hs_tspan_t *s)
{
  return strcmp(s->name, "kernels") == 0 || strcmp(s->name, "recompute") == 0;
}

/* The compute row's busy intervals, sorted and merged. A phase span whose
 * nested spans include kernel segments ("kernels": --trace-detail kernel) is
 * busy only during its segments: between them it waits on a blocking TP
 * collective, which is exposed, not hidden. Any other top-level span but
 * idle is busy over its whole length (device and stage detail, where a
 * nested "recompute" is part of its backward). O(spans of the row). */
static double *busy_of(const ctx_t *x, int64_t pid, size_t *n)
{
  size_t lo, hi;
  span_range(x, pid, 0, &lo, &hi);
  double *iv = hs_calloc(2 * (hi - lo) + 2, sizeof *iv);
  *n = 0;
  if (!iv)
    return NULL;
  for (size_t k = lo; k < hi;) {
    const hs_tspan_t *s = x->sp[k];
    double a = s->ts_us, b = s->ts_us + s->dur_us;
    size_t kids = k + 1; /* spans nested in s: [k + 1, kids) */
    bool segments = false;
    while (kids < hi && x->sp[kids]->ts_us < b - NEST_EPS_US) {
      segments = segments || strcmp(x->sp[kids]->name, "kernels") == 0;
      kids++;
    }
    if (hs_span_classify(s, NULL, "compute") == HS_SPAN_IDLE)
      ; /* idle: not busy */
    else if (!segments)
      busy_add(iv, n, a, b);
    else
      for (size_t c = k + 1; c < kids; c++)
        if (is_segment(x->sp[c]))
          busy_add(iv, n, x->sp[c]->ts_us, x->sp[c]->ts_us + x->sp[c]->dur_us);
    k = kids;
  }
  return iv;
}

static void fill_compute(ctx_t *x, canvas_t *cv, int64_t pid)
{
  size_t lo, hi;
  span_range(x, pid, 0, &lo, &hi);
  const char *pname = label_of(x->d, pid, 0, false);
  double end = -INFINITY;
  hs_span_class_t parent = HS_SPAN_OTHER;
  for (size_t k = lo; k < hi; k++) {
    const hs_tspan_t *s = x->sp[k];
    double a = s->ts_us, b = s->ts_us + s->dur_us;
    hs_span_class_t c = hs_span_classify(s, pname, "compute");
    if (a < end - NEST_EPS_US) { /* nested: only recompute is drawn, taken from its parent */
      if (c == HS_SPAN_RECOMPUTE) {
        occ_add(cv, HS_SPAN_RECOMPUTE, a, b, 1.0);
        occ_add(cv, parent, a, b, -1.0);
        x->used[HS_SPAN_RECOMPUTE] = true;
      }
      continue;
    }
    end = b;
    parent = c;
    occ_add(cv, c, a, b, 1.0);
    x->used[c] = true;
  }
}

static bool fill_comm(ctx_t *x, canvas_t *cv, int64_t pid)
{
  size_t lo, hi, nb = 0;
  double *busy = busy_of(x, pid, &nb);
  if (!busy)
    return false;
  span_range(x, pid, -1, &lo, &hi);
  const char *pname = label_of(x->d, pid, 0, false);
  for (size_t k = lo; k < hi; k++) {
    const hs_tspan_t *s = x->sp[k];
    if (s->tid == 0)
      continue;
    hs_span_class_t c = hs_span_classify(s, pname, label_of(x->d, pid, s->tid, true));
    double a = s->ts_us, b = s->ts_us + s->dur_us;
    x->used[c] = true;
    /* split [a, b) at the busy intervals: hidden inside, exposed outside */
    size_t i = 0, j = nb;
    while (i < j) {
      size_t m = (i + j) / 2;
      if (busy[2 * m + 1] <= a)
        i = m + 1;
      else
        j = m;
    }
    double t = a;
    for (; i < nb && busy[2 * i] < b; i++) {
      double ba = fmax(busy[2 * i], a), bb = fmin(busy[2 * i + 1], b);
      if (ba > t)
        occ_add(cv, c, t, ba, 1.0);
      if (bb > ba) {
        occ_add(cv, HS_SPAN__COUNT + c, ba, bb, 1.0);
        x->used_hidden = true;
      }
      t = fmax(t, bb);
    }
    if (b > t)
      occ_add(cv, c, t, b, 1.0);
  }
  free(busy);
  return true;
}

static void fill_generic(ctx_t *x, canvas_t *cv, int64_t pid, int64_t tid)
{
  size_t lo, hi;
  span_range(x, pid, tid, &lo, &hi);
  const char *pname = label_of(x->d, pid, 0, false), *tname = label_of(x->d, pid, tid, true);
  double end = -INFINITY;
  for (size_t k = lo; k < hi; k++) {
    const hs_tspan_t *s = x->sp[k];
    double a = s->ts_us, b = s->ts_us + s->dur_us;
    if (a < end - NEST_EPS_US) /* nested: the parent already covers it */
      continue;
    end = b;
    hs_span_class_t c = hs_span_classify(s, pname, tname);
    occ_add(cv, c, a, b, 1.0);
    x->used[c] = true;
  }
}

static void fill_link(ctx_t *x, canvas_t *cv, const row_t *r)
{
  for (size_t k = 0; k < r->n_counter; k++) {
    const hs_tcounter_t *c = x->cn[r->counter0 + k];
    double b = k + 1 < r->n_counter ? x->cn[r->counter0 + k + 1]->ts_us : x->t1;
    double v = fmin(fmax(c->value, 0.0), 1.0);
    if (v > 0)
      occ_add(cv, HS_SPAN_LINK, c->ts_us, b, v);
  }
  x->used[HS_SPAN_LINK] = true;
}

/* Draws the occupancy as stacked bars: per column, classes bottom-up in
 * enum order, exposed then hidden; equal neighbouring columns merge. */
static void draw_occ(FILE *f, const canvas_t *cv, double y)
{
  enum { K = HS_SPAN__COUNT };
  double h[2 * K], hn[2 * K];
  for (int c = 0; c < NCOLS;) {
    double tot = 0;
    for (int k = 0; k < 2 * K; k++) {
      h[k] = fmax(cv->occ[(size_t)k * NCOLS + c], 0.0);
      tot += h[k];
    }
    double sc = tot > 1.0 ? 1.0 / tot : 1.0; /* overlapping lanes: scale to the row */
    for (int k = 0; k < 2 * K; k++)
      h[k] = round(h[k] * sc * ROW_H);
    int e = c + 1;
    for (; e < NCOLS; e++) {
      double t2 = 0;
      for (int k = 0; k < 2 * K; k++) {
        hn[k] = fmax(cv->occ[(size_t)k * NCOLS + e], 0.0);
        t2 += hn[k];
      }
      double s2 = t2 > 1.0 ? 1.0 / t2 : 1.0;
      bool same = true;
      for (int k = 0; k < 2 * K && same; k++)
        same = round(hn[k] * s2 * ROW_H) == h[k];
      if (!same)
        break;
    }
    double base = y + ROW_H;
    /* class by class, each hidden part right above its exposed part */
    for (int cls = 0; cls < K; cls++)
      for (int hid = 0; hid < 2; hid++) {
        double hh = h[hid * K + cls];
        if (hh <= 0)
          continue;
        base -= hh;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"%s\"%s/>\n",
                LABEL_W + c, base, e - c, hh, classes[cls].colour,
                hid ? " fill-opacity=\"0.35\"" : "");
      }
    c = e;
  }
}

static void row_label(FILE *f, const ctx_t *x, const row_t *r, double y)
{
  fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">", LABEL_W - 6, y + ROW_H - 5);
  const char *pname = label_of(x->d, r->pid, 0, false);
  switch (r->kind) {
  case ROW_LINK:
    xml_text(f, x->cn[r->counter0]->name);
    fputs(pname && strcmp(pname, "cross-site links") == 0 ? " (cross-site)" : "", f);
    break;
  case ROW_COMPUTE: { /* sim/trace.c's "dev 16 GPU tp4: stage 2 (layers 8-13), ...": the plan part */
    const char *colon = pname ? strstr(pname, ": ") : NULL;
    if (!pname)
      fprintf(f, "pid %lld", (long long)r->pid);
    else
      xml_text(f, colon ? colon + 2 : pname);
    break;
  }
  case ROW_COMM: { /* ... and the device part */
    const char *colon = pname ? strstr(pname, ": ") : NULL;
    if (colon)
      fprintf(f, "%.*s: comm", (int)(colon - pname), pname);
    else
      fputs("communication", f);
    break;
  }
  default: {
    const char *tname = label_of(x->d, r->pid, r->tid, true);
    if (pname)
      xml_text(f, pname);
    else
      fprintf(f, "pid %lld", (long long)r->pid);
    fputs(" / ", f);
    if (tname)
      xml_text(f, tname);
    else
      fprintf(f, "tid %lld", (long long)r->tid);
  }
  }
  fputs("</text>\n", f);
}

hs_status_t hs_trace_svg_render(const hs_trace_doc_t *d, const hs_svg_opts_t *o, FILE *f,
                                size_t *n_rows, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  ctx_t x = {0};
  row_t *rows = NULL;
  size_t nr = 0, hidden_devices = 0;
  canvas_t cv = {0};
  x.d = d;
  x.n = d->n_spans;
  x.sp = hs_calloc(d->n_spans + 1, sizeof *x.sp);
  x.cn = hs_calloc(d->n_counters + 1, sizeof *x.cn);
  rows = hs_calloc(d->n_spans + d->n_counters + 1, sizeof *rows);
  cv.occ = hs_calloc((size_t)2 * HS_SPAN__COUNT * NCOLS, sizeof *cv.occ);
  if (!x.sp || !x.cn || !rows || !cv.occ)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory for %zu spans", d->n_spans));
  for (size_t i = 0; i < d->n_spans; i++)
    x.sp[i] = &d->spans[i];
  qsort(x.sp, d->n_spans, sizeof *x.sp, cmp_span);
  for (size_t i = 0; i < d->n_counters; i++)
    x.cn[i] = &d->counters[i];
  qsort(x.cn, d->n_counters, sizeof *x.cn, cmp_counter);
  double t0 = INFINITY, t1 = -INFINITY;
  for (size_t i = 0; i < d->n_spans; i++) {
    t0 = fmin(t0, d->spans[i].ts_us);
    t1 = fmax(t1, d->spans[i].ts_us + d->spans[i].dur_us);
  }
  if (!d->n_spans)
    t0 = t1 = 0.0;
  x.t1 = t1;
  /* a simulator trace: some process has a thread named "compute" */
  bool sim = false;
  for (size_t i = 0; i < d->n_labels && !sim; i++)
    sim = d->labels[i].thread && strcmp(d->labels[i].name, "compute") == 0;
  if (sim) {
    /* link counters: cross-site first (sort -2), others (-1), at most 4 */
    size_t others = 0;
    for (size_t i = 0; i < d->n_counters;) {
      size_t j = i;
      while (j < d->n_counters && x.cn[j]->pid == x.cn[i]->pid && strcmp(x.cn[j]->name, x.cn[i]->name) == 0)
        j++;
      const char *pn = label_of(d, x.cn[i]->pid, 0, false);
      bool xs = pn && strcmp(pn, "cross-site links") == 0;
      if (xs || others++ < 4)
        rows[nr++] = (row_t){ROW_LINK, x.cn[i]->pid, 0, xs ? -2 : -1, i, j - i};
      i = j;
    }
    for (size_t i = 0; i < d->n_spans;) {
      int64_t pid = x.sp[i]->pid;
      size_t j = i;
      while (j < d->n_spans && x.sp[j]->pid == pid)
        j++;
      int64_t si = 0;
      bool has_si = sort_index_of(d, pid, &si);
      const char *tn = label_of(d, pid, 0, true);
      if (tn && strcmp(tn, "compute") == 0) {
        if (!o->all_devices && has_si && (si - 10) % 1000000 != 0)
          hidden_devices++;
        else {
          rows[nr++] = (row_t){ROW_COMPUTE, pid, 0, has_si ? si : pid, 0, 0};
          rows[nr++] = (row_t){ROW_COMM, pid, 1, has_si ? si : pid, 0, 0};
        }
      }
      i = j;
    }
  } else {
    for (size_t i = 0; i < d->n_spans; i++)
      if (i == 0 || x.sp[i]->pid != x.sp[i - 1]->pid || x.sp[i]->tid != x.sp[i - 1]->tid) {
        int64_t si = 0;
        bool has_si = sort_index_of(d, x.sp[i]->pid, &si);
        rows[nr++] = (row_t){ROW_GENERIC, x.sp[i]->pid, x.sp[i]->tid, has_si ? si : x.sp[i]->pid, 0, 0};
      }
  }
  qsort(rows, nr, sizeof *rows, cmp_row);

  double span_us = t1 > t0 ? t1 - t0 : 1.0;
  double plot_w = NCOLS;
  cv.t0 = t0;
  cv.scale = plot_w / span_us;
  /* heights: a gap before each device group */
  double y = TOP;
  for (size_t r = 0; r < nr; r++)
    y += ROW_H + ROW_GAP + (rows[r].kind == ROW_COMPUTE ? GROUP_GAP : 0.0);
  double plot_bottom = y;
  double legend_y = plot_bottom + 30.0;
  double height = legend_y + 60.0;
  tunit_t u = unit_for(span_us);
  double step = tick_step(span_us / u.us);

  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
          SVG_WIDTH, height, SVG_WIDTH, height);
  fputs("<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n<text x=\"10\" y=\"20\" font-size=\"15\">", f);
  xml_text(f, o->title ? o->title : "trace");
  fprintf(f, " (%.4g %s", span_us / u.us, u.name);
  if (hidden_devices)
    fprintf(f, "; one device per stage, %zu replicas and TP ranks folded", hidden_devices);
  fputs(")</text>\n", f);
  /* time axis */
  fputs("<g class=\"axis\" stroke=\"#bbbbbb\">\n", f);
  for (int k = 0; k <= 1000; k++) {
    double v = k * step;
    if (v * u.us > span_us * (1 + 1e-9))
      break;
    double xx = LABEL_W + v * u.us * cv.scale;
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>"
               "<text x=\"%.2f\" y=\"%.2f\" stroke=\"none\" fill=\"#333333\" text-anchor=\"middle\">%.4g %s</text>\n",
            xx, TOP - 8, xx, plot_bottom, xx, TOP - 12, v, u.name);
  }
  fputs("</g>\n", f);

  y = TOP;
  for (size_t r = 0; r < nr; r++) {
    const row_t *rw = &rows[r];
    if (rw->kind == ROW_COMPUTE)
      y += GROUP_GAP;
    memset(cv.occ, 0, sizeof(float) * 2 * HS_SPAN__COUNT * NCOLS);
    switch (rw->kind) {
    case ROW_COMPUTE: fill_compute(&x, &cv, rw->pid); break;
    case ROW_COMM:
      if (!fill_comm(&x, &cv, rw->pid))
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory drawing the timeline"));
      break;
    case ROW_LINK: fill_link(&x, &cv, rw); break;
    default: fill_generic(&x, &cv, rw->pid, rw->tid);
    }
    static const char *const kinds[] = {"row", "compute", "comm", "link"};
    fprintf(f, "<g class=\"row\" data-kind=\"%s\" data-pid=\"%lld\" data-tid=\"%lld\">\n", kinds[rw->kind],
            (long long)rw->pid, (long long)rw->tid);
    row_label(f, &x, rw, y);
    fprintf(f, "<rect class=\"bg\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
            LABEL_W, y, plot_w, ROW_H, BACKGROUND);
    draw_occ(f, &cv, y);
    fputs("</g>\n", f);
    y += ROW_H + ROW_GAP;
  }
  /* legend: classes present; shades for communication */
  fputs("<g class=\"legend\">\n", f);
  double lx = LABEL_W, ly = legend_y;
  for (int k = 0; k < HS_SPAN__COUNT; k++) {
    if (!x.used[k])
      continue;
    if (lx > SVG_WIDTH - 160) {
      lx = LABEL_W;
      ly += 18;
    }
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#666666\"/>"
               "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            lx, ly, classes[k].colour, lx + 16, ly + 10, classes[k].name);
    lx += 130;
  }
  if (x.used_hidden) {
    ly += 18;
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">communication: full colour = exposed (compute idle), "
               "pale = hidden under compute; bar height = share of the pixel's time</text>\n",
            LABEL_W, ly + 10);
  }
  fputs("</g>\n</svg>\n", f);
  if (n_rows)
    *n_rows = nr;
  if (ferror(f))
    st = hs_error_set(err, HS_EIO, "write error");
cleanup:
  free(x.sp);
  free(x.cn);
  free(rows);
  free(cv.occ);
  return st;
}

hs_status_t hs_trace_svg_write(const hs_trace_doc_t *d, const char *title, FILE *f,
                               size_t *n_rows, hs_error_t *err)
{
  hs_svg_opts_t o = {title, false};
  return hs_trace_svg_render(d, &o, f, n_rows, err);
}
