/*
 * test_export_svg.c - the Chrome trace reader and the SVG Gantt chart: one
 * row per (pid, tid) with X events (counted independently from the input),
 * rows sorted by pid then tid, spans merged only when they touch, colour
 * classes of the simulator's and the elastic timeline's span names, broken
 * traces refused with the event's index.
 */
#include "hs_export.h"
#include "hs_test.h"

static char *render(const char *trace, size_t *rows, hs_status_t *st)
{
  hs_trace_doc_t d;
  hs_error_t err;
  hs_trace_doc_init(&d);
  hs_error_init(&err);
  *st = hs_trace_doc_parse(trace, "t.json", &d, &err);
  if (*st != HS_OK)
    return NULL;
  FILE *f = tmpfile();
  *st = hs_trace_svg_write(&d, "test <&>", f, rows, &err);
  long n = ftell(f);
  rewind(f);
  char *buf = calloc((size_t)n + 1, 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n)
    *st = HS_EIO;
  fclose(f);
  hs_trace_doc_destroy(&d);
  return buf;
}

static size_t count(const char *hay, const char *needle)
{
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

static void test_rows(void)
{
  const char *trace =
      "{\"traceEvents\": [\n"
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"dev 1 (A100)\"}},\n"
      "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"stream 0\"}},\n"
      "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"name\":\"fwd mb0\",\"ts\":0,\"dur\":10},\n"
      "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"name\":\"fwd mb0\",\"ts\":10,\"dur\":10},\n"
      "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"name\":\"bwd mb0\",\"ts\":50,\"dur\":20},\n"
      "{\"ph\":\"X\",\"pid\":0,\"tid\":2,\"name\":\"act mb0\",\"ts\":20,\"dur\":5},\n"
      "{\"ph\":\"X\",\"pid\":0,\"tid\":1,\"name\":\"grad-allreduce\",\"ts\":70,\"dur\":30},\n"
      "{\"ph\":\"X\",\"pid\":7,\"tid\":3,\"name\":\"restore state\",\"cat\":\"recovery\",\"ts\":100,\"dur\":40},\n"
      "{\"ph\":\"C\",\"pid\":9,\"tid\":9,\"name\":\"counter\",\"ts\":0,\"args\":{\"x\":1}},\n"
      "{\"ph\":\"B\",\"pid\":9,\"tid\":8,\"name\":\"begin\",\"ts\":0}\n"
      "]}";
  size_t rows = 0;
  hs_status_t st;
  char *svg = render(trace, &rows, &st);
  CHECK_EQ_INT(st, HS_OK);
  CHECK_EQ_INT(rows, 4); /* (0,1) (0,2) (1,0) (7,3); C and B events are not spans */
  CHECK_EQ_INT(count(svg, "<g class=\"row\""), 4);
  /* sorted by pid then tid */
  const char *a = strstr(svg, "data-pid=\"0\" data-tid=\"1\""), *b = strstr(svg, "data-pid=\"0\" data-tid=\"2\""),
             *c = strstr(svg, "data-pid=\"1\" data-tid=\"0\""), *d = strstr(svg, "data-pid=\"7\" data-tid=\"3\"");
  CHECK(a && b && c && d && a < b && b < c && c < d);
  /* labels from metadata, else pid/tid */
  CHECK(strstr(svg, "dev 1 (A100) / stream 0") != NULL);
  CHECK(strstr(svg, "pid 7 / tid 3") != NULL);
  /* the two touching fwd spans [0, 20) of the 140 us span (1020 px) are
   * one run of 145 full columns and the partly covered column 145 (0.71 of
   * it: 13 of 18 px): two forward rects, plus the legend's */
  CHECK_EQ_INT(count(svg, "fill=\"#4c78a8\""), 3);
  CHECK(strstr(svg, "x=\"360.00\" y=\"60.00\" width=\"145\" height=\"18.00\" fill=\"#4c78a8\"") ||
        strstr(svg, "width=\"145\" height=\"18.00\" fill=\"#4c78a8\""));
  /* colours by class */
  CHECK(strstr(svg, hs_span_class_colour(HS_SPAN_FORWARD)) && strstr(svg, hs_span_class_colour(HS_SPAN_BACKWARD)) &&
        strstr(svg, hs_span_class_colour(HS_SPAN_P2P)) && strstr(svg, hs_span_class_colour(HS_SPAN_COLLECTIVE)) &&
        strstr(svg, hs_span_class_colour(HS_SPAN_RECOVERY)));
  /* the title is escaped */
  CHECK(strstr(svg, "test &lt;&amp;&gt;") != NULL);
  free(svg);
  /* a bare array is a trace too */
  svg = render("[{\"ph\":\"X\",\"pid\":3,\"tid\":0,\"name\":\"x\",\"ts\":1.5,\"dur\":0}]", &rows, &st);
  CHECK_EQ_INT(st, HS_OK);
  CHECK_EQ_INT(rows, 1);
  free(svg);
}

/* Width and height of every rect of colour `fill` (not the legend's 12x12). */
static int rects_of(const char *svg, const char *fill, double *w, double *h, int max)
{
  int n = 0;
  char needle[64];
  snprintf(needle, sizeof needle, "fill=\"%s\"", fill);
  for (const char *p = svg; (p = strstr(p, needle)) && n < max; p += strlen(needle)) {
    const char *r = p;
    while (r > svg && strncmp(r, "<rect", 5) != 0)
      r--;
    double x, y, ww, hh;
    if (sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &x, &y, &ww, &hh) == 4 &&
        !(ww == 12 && hh == 12)) {
      w[n] = ww;
      h[n] = hh;
      n++;
    }
  }
  return n;
}

/* A simulator-style trace: rows by stage, replicas folded, links first,
 * short collectives as partial-height bars, exposed vs hidden shades, a
 * time axis in one unit. */
static void test_stages(void)
{
  /* two stage processes (sort 10, 1000010) and one replica of stage 0 (11);
   * stage 0 computes [0, 500) us; its comm track has 100 collectives of
   * 1 us every 10 us over [0, 1000): half under compute (hidden), half when
   * compute is idle (exposed) */
  char *t = calloc(1, 1 << 16);
  size_t n = 0;
  n += (size_t)sprintf(t + n, "{\"traceEvents\":[\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"dev 0 A100 tp1: stage 0 (layers 0-1)\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,\"args\":{\"sort_index\":10}},\n"
       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"dev 1 A100 tp1: stage 0, replica 1\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"args\":{\"sort_index\":11}},\n"
       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"args\":{\"name\":\"dev 2 A100 tp1: stage 1 (layers 2-3)\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":2,\"args\":{\"sort_index\":1000010}},\n"
       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":2,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":3,\"args\":{\"name\":\"links (all busy)\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4,\"args\":{\"name\":\"cross-site links\"}},\n"
       "{\"ph\":\"C\",\"pid\":3,\"name\":\"nvlink\",\"ts\":0,\"args\":{\"utilisation\":0.5}},\n"
       "{\"ph\":\"C\",\"pid\":4,\"name\":\"east->west\",\"ts\":0,\"args\":{\"utilisation\":1}},\n"
       "{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":0,\"tid\":0,\"name\":\"fwd mb0\",\"ts\":0,\"dur\":500},\n"
       "{\"ph\":\"X\",\"cat\":\"idle\",\"pid\":0,\"tid\":0,\"name\":\"idle\",\"ts\":500,\"dur\":500},\n"
       "{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":1,\"tid\":0,\"name\":\"fwd mb0\",\"ts\":0,\"dur\":500},\n"
       "{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":2,\"tid\":0,\"name\":\"bwd mb0\",\"ts\":0,\"dur\":1000}");
  for (int k = 0; k < 100; k++)
    n += (size_t)sprintf(t + n, ",\n{\"ph\":\"X\",\"cat\":\"tp-comm\",\"pid\":0,\"tid\":1,\"name\":\"allreduce\",\"ts\":%d,\"dur\":1}",
                         10 * k + 2);
  sprintf(t + n, "]}");
  size_t rows = 0;
  hs_status_t st;
  char *svg = render(t, &rows, &st);
  CHECK_EQ_INT(st, HS_OK);
  /* 2 link rows + 2 rows for each of the 2 representative devices */
  CHECK_EQ_INT(rows, 6);
  CHECK(svg && strstr(svg, "data-pid=\"1\"") == NULL); /* replica folded */
  CHECK(svg && strstr(svg, "1 replicas and TP ranks folded") != NULL);
  const char *xs = strstr(svg, "east-&gt;west"), *nv = strstr(svg, "nvlink"), *s0 = strstr(svg, ">stage 0 (layers 0-1)</text>"),
             *s1 = strstr(svg, ">stage 1 (layers 2-3)</text>");
  CHECK(xs && nv && s0 && s1 && xs < nv && nv < s0 && s0 < s1); /* cross-site link first, then stages */
  /* collectives: 1 us in every 10 us is a tenth of each pixel's time (a
   * pixel is ~1 us here, so bars alternate), never the row's full height */
  double w[2048], h[2048];
  int nr = rects_of(svg, hs_span_class_colour(HS_SPAN_COLLECTIVE), w, h, 2048);
  CHECK(nr > 10);
  int full = 0, pale = 0;
  for (int i = 0; i < nr; i++)
    full += h[i] >= 18.0 && w[i] > 20;
  CHECK_EQ_INT(full, 0);
  for (const char *p = svg; (p = strstr(p, "fill=\"#54a24b\" fill-opacity=\"0.35\"")); p++)
    pale++;
  CHECK(pale > 0 && pale < nr); /* hidden under compute in the first half only */
  /* link at 50% and 100% utilisation: bars of half and full height */
  nr = rects_of(svg, hs_span_class_colour(HS_SPAN_LINK), w, h, 2048);
  CHECK_EQ_INT(nr, 2);
  CHECK(nr == 2 && ((h[0] == 18 && h[1] == 9) || (h[0] == 9 && h[1] == 18)));
  /* 1000 us: the axis reads in us with 100 us ticks... */
  CHECK(strstr(svg, ">1000 us</text>") != NULL && strstr(svg, " ms</text>") == NULL);
  free(svg);
  /* ...and every device when asked */
  hs_trace_doc_t d;
  hs_error_t err;
  hs_trace_doc_init(&d);
  hs_error_init(&err);
  CHECK(hs_trace_doc_parse(t, "t.json", &d, &err) == HS_OK);
  FILE *f = tmpfile();
  hs_svg_opts_t o = {"all", true};
  CHECK(hs_trace_svg_render(&d, &o, f, &rows, &err) == HS_OK);
  CHECK_EQ_INT(rows, 8);
  fclose(f);
  hs_trace_doc_destroy(&d);
  free(t);
}

/* Rectangles of colour fill outside the legend (12 x 12 swatches): full
 * colour (exposed) and pale (fill-opacity, hidden). */
static void shades_of(const char *svg, const char *fill, int *full, int *pale)
{
  double w[4096], h[4096];
  *full = *pale = 0;
  int n = rects_of(svg, fill, w, h, 4096);
  char needle[64];
  snprintf(needle, sizeof needle, "fill=\"%s\"", fill);
  int i = 0;
  for (const char *p = svg; (p = strstr(p, needle)) && i < n; p += strlen(needle)) {
    const char *r = p;
    while (r > svg && strncmp(r, "<rect", 5) != 0)
      r--;
    double x, y, ww, hh;
    if (sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &x, &y, &ww, &hh) != 4 ||
        (ww == 12 && hh == 12))
      continue;
    i++;
    if (strncmp(p + strlen(needle), " fill-opacity=", 14) == 0)
      (*pale)++;
    else
      (*full)++;
  }
}

/* Kernel detail (sim/trace.c hs_trace_segment): a phase span [0, 1000) us
 * holds kernel segments of 5 us every 10 us, and a blocking TP all-reduce
 * fills each gap [10k + 5, 10k + 10). By construction no collective runs
 * while a kernel does, so every TP pixel is exposed (full colour, none
 * pale); a second phase whose 100 collectives run beside its segments
 * ([2000 + 10k, 2000 + 10k + 5), tp_comm_overlap-like) is all hidden. */
static void test_kernel_segments(void)
{
  char *t = calloc(1, 1 << 17);
  size_t n = 0;
  n += (size_t)sprintf(t + n, "{\"traceEvents\":[\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"dev 0 A100 tp2: stage 0 (layers 0-1)\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,\"args\":{\"sort_index\":10}},\n"
       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
       "{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":0,\"tid\":0,\"name\":\"fwd mb0\",\"ts\":0,\"dur\":1000}");
  for (int k = 0; k < 100; k++)
    n += (size_t)sprintf(t + n, ",\n{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":0,\"tid\":0,\"name\":\"kernels\",\"ts\":%d,\"dur\":5}"
                         ",\n{\"ph\":\"X\",\"cat\":\"tp-comm\",\"pid\":0,\"tid\":1,\"name\":\"allreduce\",\"ts\":%d,\"dur\":5}",
                         10 * k, 10 * k + 5);
  sprintf(t + n, "]}");
  size_t rows = 0;
  hs_status_t st;
  char *svg = render(t, &rows, &st);
  CHECK_EQ_INT(st, HS_OK);
  const char *green = hs_span_class_colour(HS_SPAN_COLLECTIVE);
  int full = 0, pale = 1;
  if (svg)
    shades_of(svg, green, &full, &pale);
  CHECK(full > 0);
  CHECK_EQ_INT(pale, 0); /* blocking: none hidden */
  free(svg);
  /* the same segments with the collectives beside them: all hidden */
  n = 0;
  n += (size_t)sprintf(t + n, "{\"traceEvents\":[\n"
       "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"dev 0 A100 tp2: stage 0 (layers 0-1)\"}},\n"
       "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,\"args\":{\"sort_index\":10}},\n"
       "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
       "{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":0,\"tid\":0,\"name\":\"fwd mb0\",\"ts\":0,\"dur\":1000}");
  for (int k = 0; k < 100; k++)
    n += (size_t)sprintf(t + n, ",\n{\"ph\":\"X\",\"cat\":\"compute\",\"pid\":0,\"tid\":0,\"name\":\"kernels\",\"ts\":%d,\"dur\":5}"
                         ",\n{\"ph\":\"X\",\"cat\":\"tp-comm\",\"pid\":0,\"tid\":1,\"name\":\"allreduce\",\"ts\":%d,\"dur\":5}",
                         10 * k, 10 * k);
  sprintf(t + n, "]}");
  svg = render(t, &rows, &st);
  CHECK_EQ_INT(st, HS_OK);
  full = 1, pale = 0;
  if (svg)
    shades_of(svg, green, &full, &pale);
  CHECK(pale > 0);
  CHECK_EQ_INT(full, 0); /* beside the kernels: every TP rectangle pale */
  free(svg);
  free(t);
}

/* The axis unit follows the span: a 24-hour timeline reads in hours. */
static void test_axis_hours(void)
{
  size_t rows = 0;
  hs_status_t st;
  char *svg = render("[{\"ph\":\"X\",\"cat\":\"train\",\"pid\":0,\"tid\":0,\"name\":\"train\",\"ts\":0,\"dur\":86400000000},"
                     "{\"ph\":\"X\",\"cat\":\"lost\",\"pid\":0,\"tid\":1,\"name\":\"lost\",\"ts\":0,\"dur\":3600000000}]",
                     &rows, &st);
  CHECK_EQ_INT(st, HS_OK);
  CHECK(svg && strstr(svg, ">20 h</text>") && strstr(svg, ">0 h</text>") && !strstr(svg, " s</text>"));
  /* train and lost work in different colours, both in the legend */
  CHECK(svg && strstr(svg, ">train</text>") && strstr(svg, ">lost work</text>"));
  CHECK(strcmp(hs_span_class_colour(HS_SPAN_TRAIN), hs_span_class_colour(HS_SPAN_LOST)) != 0);
  free(svg);
}

static void test_classes(void)
{
  struct { const char *name, *cat, *proc, *thread; hs_span_class_t k; } cases[] = {
      {"fwd mb3", "", "dev 0", "compute", HS_SPAN_FORWARD},
      {"bwd mb3 c1", "", "dev 0", "compute", HS_SPAN_BACKWARD},
      {"optimizer", "", "dev 0", "compute", HS_SPAN_OPTIMIZER},
      {"allreduce", "", "dev 0", "collectives", HS_SPAN_COLLECTIVE},
      {"grad-allreduce", "", "dev 0", "collectives", HS_SPAN_COLLECTIVE},
      {"grad mb2", "", "dev 0", "p2p", HS_SPAN_P2P},
      {"act mb2", "", "links", "n0.nic.up", HS_SPAN_LINK},
      {"anything", "checkpoint", NULL, NULL, HS_SPAN_CHECKPOINT},
      {"preemption of node 3", "", NULL, NULL, HS_SPAN_FAILURE},
      {"fetch missing shards", "", NULL, NULL, HS_SPAN_RECOVERY},
      {"mystery", "", NULL, NULL, HS_SPAN_OTHER},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_tspan_t s;
    memset(&s, 0, sizeof s);
    hs_strlcpy(s.name, cases[i].name, sizeof s.name);
    hs_strlcpy(s.cat, cases[i].cat, sizeof s.cat);
    hs_span_class_t k = hs_span_classify(&s, cases[i].proc, cases[i].thread);
    CHECK_MSG(k == cases[i].k, "%s: got %s, expected %s", cases[i].name, hs_span_class_name(k),
              hs_span_class_name(cases[i].k));
  }
}

static void bad(const char *trace, const char *needle)
{
  hs_trace_doc_t d;
  hs_error_t err;
  hs_trace_doc_init(&d);
  hs_error_init(&err);
  CHECK_MSG(hs_trace_doc_parse(trace, "bad.json", &d, &err) != HS_OK, "accepted %s", trace);
  CHECK_CONTAINS(err.msg, "bad.json");
  CHECK_CONTAINS(err.msg, needle);
  CHECK(d.n_spans == 0 && d.spans == NULL);
}

static void test_broken(void)
{
  bad("{\"traceEvents\": [", "malformed");
  bad("{\"events\": []}", "traceEvents");
  bad("{\"traceEvents\": 3}", "traceEvents");
  bad("[1]", "traceEvents[0]");
  bad("[{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"a\",\"ts\":0,\"dur\":1},"
      "{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"name\":\"a\",\"ts\":0,\"dur\":-1}]", "traceEvents[1].dur");
  bad("[{\"ph\":\"X\",\"pid\":\"a\",\"tid\":0,\"ts\":0,\"dur\":1}]", "traceEvents[0]");
  bad("[{\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":\"0\",\"dur\":1}]", "traceEvents[0].ts");
  bad("[{\"pid\":0}]", "traceEvents[0].ph");
}

int main(void)
{
  HS_RUN(test_rows);
  HS_RUN(test_stages);
  HS_RUN(test_kernel_segments);
  HS_RUN(test_axis_hours);
  HS_RUN(test_classes);
  HS_RUN(test_broken);
  HS_TEST_END();
}
