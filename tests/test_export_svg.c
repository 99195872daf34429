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
      "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"compute\"}},\n"
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
  CHECK(strstr(svg, "dev 1 (A100) / compute") != NULL);
  CHECK(strstr(svg, "pid 7 / tid 3") != NULL);
  /* the two touching fwd spans merge; 6 X events draw 5 span rects */
  CHECK_EQ_INT(count(svg, "<title>"), 5);
  CHECK(strstr(svg, "fwd mb0 (+1 more)") != NULL);
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
  HS_RUN(test_classes);
  HS_RUN(test_broken);
  HS_TEST_END();
}
