/*
 * test_elastic_badinput.c - the elastic trace reader and the --rates parser
 * refuse bad input with one line naming the file, the field path and the
 * value; nothing crashes; the output trace is left empty. Also a valid trace
 * reads back sorted with site-relative node indices resolved.
 */
#include "hs_elastic.h"
#include "hs_test.h"

static hs_cluster_t C;

typedef struct bad {
  const char *json;
  hs_status_t want;
  const char *needles[3];
} bad_t;

static void test_bad_traces(void)
{
  static const bad_t cases[] = {
      {"{\"events\": [", HS_EPARSE, {"malformed JSON"}},
      {"[]", HS_EINVAL, {"object"}},
      {"{}", HS_EINVAL, {"events"}},
      {"{\"events\": {}}", HS_EINVAL, {"events"}},
      {"{\"events\": [3]}", HS_EINVAL, {"events[0]"}},
      {"{\"events\": [{\"kind\": \"preempt\", \"node\": 1}]}", HS_EINVAL, {"events[0].t_s"}},
      {"{\"events\": [{\"t_s\": -5, \"kind\": \"preempt\", \"node\": 1}]}", HS_EINVAL,
       {"events[0].t_s", "-5"}},
      {"{\"events\": [{\"t_s\": \"soon\", \"kind\": \"preempt\", \"node\": 1}]}", HS_EINVAL,
       {"events[0].t_s"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"explode\", \"node\": 1}]}", HS_EINVAL,
       {"events[0].kind", "explode"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"preempt\", \"node\": 4}]}", HS_ELIMIT,
       {"events[0].node", "4"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"preempt\", \"node\": 1.5}]}", HS_EINVAL,
       {"events[0].node", "1.5"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"preempt\"}]}", HS_EINVAL, {"events[0].node"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"preempt\", \"site\": \"mars\", \"node\": 0}]}",
       HS_EINVAL, {"events[0].site", "mars"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"preempt\", \"site\": \"spot\", \"node\": 3}]}",
       HS_ELIMIT, {"events[0].node", "3"}},
      {"{\"events\": [{\"t_s\": 1, \"kind\": \"replace\", \"node\": 2}]}", HS_EINVAL,
       {"node 2 replaced", "up"}},
      {"{\"events\": [{\"t_s\": 5, \"kind\": \"preempt\", \"node\": 2},"
       " {\"t_s\": 1, \"kind\": \"preempt\", \"node\": 2}]}",
       HS_EINVAL, {"node 2 preempted", "t_s=5", "already down"}},
      {"{\"events\": [{\"t_s\": 1e300, \"kind\": \"preempt\", \"node\": 2}]}", HS_ELIMIT,
       {"events[0].t_s"}},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_elastic_trace_t tr;
    hs_elastic_trace_init(&tr);
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_status_t st = hs_elastic_trace_parse(cases[i].json, "trace.json", &C, &tr, &err);
    CHECK_MSG(st == cases[i].want, "case %zu: %s (%s), expected %s", i, hs_status_name(st), err.msg,
              hs_status_name(cases[i].want));
    CHECK_MSG(strncmp(err.msg, "trace.json", 10) == 0, "case %zu: message lacks the file: %s", i,
              err.msg);
    CHECK_MSG(strchr(err.msg, '\n') == NULL, "case %zu: more than one line", i);
    for (int k = 0; k < 3 && cases[i].needles[k]; k++)
      CHECK_MSG(strstr(err.msg, cases[i].needles[k]) != NULL, "case %zu: \"%s\" not in \"%s\"", i,
                cases[i].needles[k], err.msg);
    CHECK(tr.n == 0 && tr.events == NULL);
    hs_elastic_trace_destroy(&tr);
  }
}

static void test_good_trace(void)
{
  const char *json = "{\"description\": \"x\", \"events\": ["
                     "{\"t_s\": 7200, \"kind\": \"replace\", \"site\": \"spot\", \"node\": 1},"
                     "{\"t_s\": 60.5, \"kind\": \"preempt\", \"node\": 2},"
                     "{\"t_s\": 60.5, \"kind\": \"preempt\", \"site\": \"ondemand\", \"node\": 0},"
                     "{\"t_s\": 100, \"kind\": \"replace\", \"node\": 0},"
                     "{\"t_s\": 100, \"kind\": \"preempt\", \"node\": 0, \"colour\": 1}]}";
  hs_elastic_trace_t tr;
  hs_elastic_trace_init(&tr);
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  /* node 0 is preempted twice without replacement in between after sorting
   * (preempt before replace at one instant): refused */
  CHECK(hs_elastic_trace_parse(json, "t.json", &C, &tr, &err) == HS_EINVAL);
  const char *ok = "{\"events\": ["
                   "{\"t_s\": 7200, \"kind\": \"replace\", \"site\": \"spot\", \"node\": 1},"
                   "{\"t_s\": 60.5, \"kind\": \"preempt\", \"node\": 2},"
                   "{\"t_s\": 60.5, \"kind\": \"preempt\", \"site\": \"ondemand\", \"node\": 0},"
                   "{\"t_s\": 100, \"kind\": \"replace\", \"node\": 0},"
                   "{\"t_s\": 90, \"kind\": \"preempt\", \"node\": 3, \"colour\": 1}]}";
  hs_error_init(&err);
  err.warn_fp = NULL;
  CHECK_MSG(hs_elastic_trace_parse(ok, "t.json", &C, &tr, &err) == HS_OK, "%s", err.msg);
  CHECK_EQ_INT(err.n_warnings, 1); /* "colour" */
  CHECK_EQ_INT(tr.n, 5);
  if (tr.n == 5) {
    CHECK(tr.events[0].t_ns == 60500000000LL && tr.events[0].node == 0);
    CHECK(tr.events[1].t_ns == 60500000000LL && tr.events[1].node == 2);
    CHECK(tr.events[2].node == 3 && tr.events[2].kind == HS_ELASTIC_PREEMPT);
    CHECK(tr.events[3].node == 0 && tr.events[3].kind == HS_ELASTIC_REPLACE);
    CHECK(tr.events[4].node == 2 && tr.events[4].kind == HS_ELASTIC_REPLACE);
  }
  hs_elastic_trace_destroy(&tr);
  /* a trace naming a node the run's cluster lacks is refused by the run */
  hs_elastic_trace_t bad = {0};
  hs_elastic_event_t ev = {1, 9, HS_ELASTIC_PREEMPT};
  bad.events = &ev;
  bad.n = 1;
  hs_model_t m;
  hs_model_init(&m);
  CHECK(hs_model_load("gpt3-1.3b", 0, &m, &err) == HS_OK);
  hs_elastic_cfg_t cfg;
  hs_elastic_cfg_init(&cfg);
  hs_elastic_result_t r;
  hs_elastic_result_init(&r);
  hs_error_init(&err);
  CHECK(hs_elastic_run(&m, &C, &cfg, &bad, NULL, &r, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "node 9");
  cfg.hours = -1;
  hs_error_init(&err);
  CHECK(hs_elastic_run(&m, &C, &cfg, &bad, NULL, &r, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "hours");
  cfg.hours = 1;
  cfg.strategy = "no-such";
  hs_error_init(&err);
  hs_elastic_trace_t empty = {0};
  CHECK(hs_elastic_run(&m, &C, &cfg, &empty, NULL, &r, &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "no-such");
  hs_elastic_result_destroy(&r);
  hs_model_destroy(&m);
}

static void test_bad_rates(void)
{
  static const struct {
    const char *spec;
    const char *needle;
  } cases[] = {
      {"spot", "spot"},          {"=3", "=3"},           {"spot=", "spot"},
      {"spot=-1", "-1"},         {"spot=abc", "abc"},    {"mars=1", "mars"},
      {"spot=1,,", "bad item"},  {"spot=nan", "nan"},    {"spot=1e9", "1e9"},
  };
  double rates[4];
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++) {
    hs_error_t err;
    hs_error_init(&err);
    CHECK_MSG(hs_elastic_node_rates(&C, cases[i].spec, rates, &err) == HS_EINVAL, "case %zu", i);
    CHECK_CONTAINS(err.msg, "--rates");
    CHECK_CONTAINS(err.msg, cases[i].needle);
  }
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_elastic_node_rates(&C, NULL, rates, &err) == HS_OK);
  CHECK(rates[0] == 0.0 && rates[1] == 0.5 && rates[2] == 0.5 && rates[3] == 0.5);
  hs_recovery_t r;
  CHECK(hs_recovery_parse("local-first", &r) == HS_OK && r == HS_RECOVERY_LOCAL_FIRST);
  CHECK(hs_recovery_parse("Cloud", &r) == HS_EINVAL);
  CHECK(hs_recovery_parse(NULL, &r) == HS_EINVAL);
}

int main(void)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(&C);
  if (hs_cluster_load(hs_test_data("elastic/spot4x4.json"), &C, &err) != HS_OK) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return 1;
  }
  HS_RUN(test_bad_traces);
  HS_RUN(test_good_trace);
  HS_RUN(test_bad_rates);
  hs_cluster_destroy(&C);
  HS_TEST_END();
}
