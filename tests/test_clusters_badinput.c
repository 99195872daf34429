/*
 * test_clusters_badinput.c - every loader rejects bad input with one line
 * that names the file, the field path and the value, and never aborts or
 * leaks (the suite runs under ASan/UBSan). Unknown fields are warnings.
 */
#include "hs_clusters.h"
#include "hs_test.h"

/* A valid two-site file; cases substitute one part of it. */
#define SITE_EAST                                                                        \
  "{\"name\": \"east\", \"nodes\": [{\"count\": 2, \"gpu\": \"A100-SXM4-80GB\", \"gpus_per_node\": 8}]}"
#define LINK_OK "{\"between\": [\"east\", \"west\"], \"GBps\": 1.25, \"latency_us\": 5000}"

static char *fmt_west(const char *group)
{
  static char buf[4096];
  snprintf(buf, sizeof buf, "{\"sites\": [" SITE_EAST ", {\"name\": \"west\", \"nodes\": [%s]}], \"links\": [" LINK_OK "]}",
           group);
  return buf;
}

typedef struct bad_case {
  const char *json;
  hs_status_t status;
  const char *msg; /* expected substring; every message starts with "cluster.json: " */
} bad_case_t;

static void expect_fail(const char *json, hs_status_t want, const char *msg)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_status_t st = hs_cluster_parse(json, "cluster.json", &c, &err);
  CHECK_MSG(st == want, "got %s (%s), expected %s for %.120s", hs_status_name(st), err.msg,
            hs_status_name(want), json);
  CHECK_CONTAINS(err.msg, msg);
  CHECK_MSG(strncmp(err.msg, "cluster.json: ", 14) == 0, "message does not name the file: %s", err.msg);
  CHECK_MSG(strchr(err.msg, '\n') == NULL, "message is not one line: %s", err.msg);
  CHECK_EQ_INT(c.n_devices, 0); /* a failed load leaves an empty cluster */
  CHECK(c.sites == NULL && c.gpus.gpus == NULL);
  hs_cluster_destroy(&c);
}

static void test_issue_examples(void)
{
  expect_fail(fmt_west("{\"count\": 1, \"gpu\": \"V100-SXM2-32GB\", \"gpus_per_node\": -4}"), HS_EINVAL,
              "cluster.json: sites[1].nodes[0].gpus_per_node: must be a positive integer, got -4");
  expect_fail(fmt_west("{\"count\": 1, \"gpu\": \"A1OO\", \"gpus_per_node\": 8}"), HS_EINVAL,
              "cluster.json: sites[1].nodes[0].gpu: unknown GPU \"A1OO\"");
  expect_fail(fmt_west("{\"count\": 1, \"gpu\": \"A1OO\", \"gpus_per_node\": 8}"), HS_EINVAL,
              "did you mean \"A100-SXM4-40GB\"");
  expect_fail(fmt_west("{\"count\": 1, \"gpu\": \"H100-SXM5-80G\", \"gpus_per_node\": 8}"), HS_EINVAL,
              "(did you mean \"H100-SXM5-80GB\"?)");
}

static void test_malformed(void)
{
  expect_fail("{\"sites\": [\n  {\"name\": \"x\" \"nodes\": []}\n]}", HS_EPARSE,
              "cluster.json: malformed JSON at line 2, column 16");
  expect_fail("{\"sites\": [", HS_EPARSE, "unexpected end of input");
  expect_fail("", HS_EPARSE, "malformed JSON");
  expect_fail("[1, 2]", HS_EINVAL, "cluster.json: (top level): must be an object");
}

static void test_types_and_missing(void)
{
  static const bad_case_t cases[] = {
      {"{\"name\": \"x\"}", HS_EINVAL, "cluster.json: sites: required field missing"},
      {"{\"sites\": {}}", HS_EINVAL, "cluster.json: sites: must be an array, got an object"},
      {"{\"sites\": []}", HS_EINVAL, "cluster.json: sites: must list at least one site, got []"},
      {"{\"sites\": [7]}", HS_EINVAL, "cluster.json: sites[0]: must be an object, got a number"},
      {"{\"sites\": [{\"nodes\": []}]}", HS_EINVAL, "cluster.json: sites[0].name: required field missing"},
      {"{\"sites\": [{\"name\": \"\", \"nodes\": []}]}", HS_EINVAL, "sites[0].name: must not be empty"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": []}]}", HS_EINVAL,
       "sites[0].nodes: must list at least one node group, got []"},
      {"{\"sites\": [{\"name\": \"a\"}]}", HS_EINVAL, "sites[0].nodes: required field missing"},
      {"{\"name\": 5, \"sites\": [" SITE_EAST "]}", HS_EINVAL, "cluster.json: name: must be a string, got 5"},
      {"{\"name\": \"0123456789012345678901234567890123456789012345678901234567890123456789\", \"sites\": [" SITE_EAST "]}",
       HS_ELIMIT, "cluster.json: name: string longer than 63 characters"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}]}]}", HS_EINVAL,
       "sites[0].nodes[0].count: required field missing"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": \"two\", \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}]}]}",
       HS_EINVAL, "sites[0].nodes[0].count: must be a positive integer, got \"two\""},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 2.5, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}]}]}",
       HS_EINVAL, "sites[0].nodes[0].count: must be a positive integer, got 2.5"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 0, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}]}]}",
       HS_EINVAL, "sites[0].nodes[0].count: must be a positive integer, got 0"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpus_per_node\": 1}]}]}", HS_EINVAL,
       "sites[0].nodes[0].gpu: required field missing"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": 100, \"gpus_per_node\": 1}]}]}",
       HS_EINVAL, "sites[0].nodes[0].gpu: must be a string, got 100"},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, "
       "\"spot\": \"yes\"}]}]}",
       HS_EINVAL, "sites[0].nodes[0].spot: must be true or false, got \"yes\""},
      {"{\"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, "
       "\"nic\": 25}]}]}",
       HS_EINVAL, "sites[0].nodes[0].nic: must be an object, got 25"},
      {"{\"sites\": [" SITE_EAST "], \"links\": {}}", HS_EINVAL, "cluster.json: links: must be an array"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++)
    expect_fail(cases[i].json, cases[i].status, cases[i].msg);
}

#define ONE_SITE_GROUP(group) "{\"sites\": [{\"name\": \"a\", \"nodes\": [" group "]}]}"

static void test_numbers_and_limits(void)
{
  static const bad_case_t cases[] = {
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, \"nic\": {\"GBps\": 0}}"),
       HS_EINVAL, "cluster.json: sites[0].nodes[0].nic.GBps: must be a positive number, got 0"},
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, \"intra_node\": {\"GBps\": -3}}"),
       HS_EINVAL, "sites[0].nodes[0].intra_node.GBps: must be a positive number, got -3"},
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, \"nic\": {\"GBps\": 1e-9}}"),
       HS_ELIMIT, "sites[0].nodes[0].nic.GBps: must be at least 1e-06 GB/s, got 1.0000000000000001e-09"},
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, \"nic\": {\"GBps\": 2e6}}"),
       HS_ELIMIT, "sites[0].nodes[0].nic.GBps: must be at most 1e+06, got 2000000"},
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, \"nic\": {\"latency_us\": -1}}"),
       HS_EINVAL, "sites[0].nodes[0].nic.latency_us: must be a non-negative number, got -1"},
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1, \"intra_node\": {\"latency_us\": 2e7}}"),
       HS_ELIMIT, "sites[0].nodes[0].intra_node.latency_us: must be at most 1e+07, got 20000000"},
      {ONE_SITE_GROUP("{\"count\": 1000000000, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}"), HS_ELIMIT,
       "cluster.json: sites[0].nodes[0].count: must be at most 1048576, got 1000000000"},
      {ONE_SITE_GROUP("{\"count\": 1e300, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}"), HS_ELIMIT,
       "sites[0].nodes[0].count: must be at most 1048576"},
      {ONE_SITE_GROUP("{\"count\": 200000, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 8}"), HS_ELIMIT,
       "cluster.json: sites[0].nodes[0].count: the cluster would have 1600000 GPUs, above the limit of 1048576"},
      {ONE_SITE_GROUP("{\"count\": 1000000, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1},"
                      "{\"count\": 100000, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}"),
       HS_ELIMIT, "sites[0].nodes[1].count: the cluster would have 1100000 GPUs"},
      {ONE_SITE_GROUP("{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 65}"), HS_ELIMIT,
       "sites[0].nodes[0].gpus_per_node: must be at most 64, got 65"},
      {"{\"sites\": [{\"name\": \"a\", \"fabric\": {\"GBps\": 0}, \"nodes\": [{\"count\": 1, \"gpu\": \"T4-16GB\", "
       "\"gpus_per_node\": 1}]}]}",
       HS_EINVAL, "sites[0].fabric.GBps: must be a positive number, got 0"},
      {"{\"sites\": [{\"name\": \"a\", \"fabric\": {\"latency_us\": \"fast\"}, \"nodes\": [{\"count\": 1, "
       "\"gpu\": \"T4-16GB\", \"gpus_per_node\": 1}]}]}",
       HS_EINVAL, "sites[0].fabric.latency_us: must be a non-negative number, got \"fast\""},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++)
    expect_fail(cases[i].json, cases[i].status, cases[i].msg);
}

static void test_too_many_sites(void)
{
  /* 1025 sites: rejected before any site is read. */
  size_t n = 1025 * 64 + 64;
  char *json = malloc(n);
  size_t used = (size_t)snprintf(json, n, "{\"sites\": [");
  for (int i = 0; i < 1025; i++)
    used += (size_t)snprintf(json + used, n - used, "%s{\"name\": \"s%d\"}", i ? "," : "", i);
  snprintf(json + used, n - used, "]}");
  expect_fail(json, HS_ELIMIT, "cluster.json: sites: at most 1024 sites, got 1025");
  free(json);
}

#define TWO_SITES(links) \
  "{\"sites\": [" SITE_EAST ", {\"name\": \"west\", \"nodes\": [{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 2}]}], " links "}"
#define THREE_SITES(links)                                                                                    \
  "{\"sites\": [" SITE_EAST ", {\"name\": \"west\", \"nodes\": [{\"count\": 1, \"gpu\": \"T4-16GB\", \"gpus_per_node\": 2}]}," \
  "{\"name\": \"north\", \"nodes\": [{\"count\": 1, \"gpu\": \"L4-24GB\", \"gpus_per_node\": 1}]}], " links "}"

static void test_sites_and_links(void)
{
  static const bad_case_t cases[] = {
      {"{\"sites\": [" SITE_EAST ", " SITE_EAST "]}", HS_EINVAL,
       "cluster.json: sites[1].name: duplicate site name \"east\" (also sites[0])"},
      {TWO_SITES("\"links\": []"), HS_EINVAL,
       "cluster.json: links: site \"west\" (sites[1]) is unreachable from site \"east\""},
      {TWO_SITES("\"spot\": {}"), HS_EINVAL, "site \"west\" (sites[1]) is unreachable"},
      {THREE_SITES("\"links\": [" LINK_OK "]"), HS_EINVAL, "site \"north\" (sites[2]) is unreachable"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"north\"], \"GBps\": 1, \"latency_us\": 1}]"), HS_EINVAL,
       "cluster.json: links[0].between[1]: unknown site \"north\""},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"east\"], \"GBps\": 1, \"latency_us\": 1}]"), HS_EINVAL,
       "cluster.json: links[0].between: a link from site \"east\" to itself"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\"], \"GBps\": 1, \"latency_us\": 1}]"), HS_EINVAL,
       "links[0].between: must name exactly two sites, got 1"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", 3], \"GBps\": 1, \"latency_us\": 1}]"), HS_EINVAL,
       "links[0].between[1]: must be a site name (a string)"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"west\"], \"latency_us\": 1}]"), HS_EINVAL,
       "links[0].GBps: required field missing"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": 1}]"), HS_EINVAL,
       "links[0].latency_us: required field missing"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": -1, \"latency_us\": 1}]"), HS_EINVAL,
       "cluster.json: links[0].GBps: must be a positive number, got -1"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": 0, \"latency_us\": 1}]"), HS_EINVAL,
       "links[0].GBps: must be a positive number, got 0"},
      {TWO_SITES("\"links\": [{\"between\": [\"east\", \"west\"], \"GBps\": 1, \"latency_us\": 1e8}]"), HS_ELIMIT,
       "links[0].latency_us: must be at most 1e+07, got 100000000"},
      {TWO_SITES("\"links\": [" LINK_OK ", {\"between\": [\"west\", \"east\"], \"GBps\": 1, \"latency_us\": 1}]"),
       HS_EINVAL, "links[1].between: a second link between \"west\" and \"east\""},
      {TWO_SITES("\"links\": [" LINK_OK "], \"spot\": {\"north\": {\"preemptions_per_hour\": 1}}"), HS_EINVAL,
       "cluster.json: spot.north: unknown site \"north\""},
      {TWO_SITES("\"links\": [" LINK_OK "], \"spot\": {\"west\": {\"preemptions_per_hour\": -1}}"), HS_EINVAL,
       "spot.west.preemptions_per_hour: must be a non-negative number, got -1"},
      {TWO_SITES("\"links\": [" LINK_OK "], \"spot\": {\"west\": {}}"), HS_EINVAL,
       "spot.west.preemptions_per_hour: required field missing"},
      {TWO_SITES("\"links\": [" LINK_OK "], \"spot\": {\"west\": 0.1}"), HS_EINVAL,
       "spot.west: must be an object, got a number"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++)
    expect_fail(cases[i].json, cases[i].status, cases[i].msg);
}

static void test_inline_gpus(void)
{
  static const bad_case_t cases[] = {
      {"{\"gpus\": [{\"name\": \"X1\", \"memory_GiB\": -1, \"mem_bw_GBps\": 100, \"peak_tflops\": {\"fp32\": 1}}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].memory_GiB: must be a positive number, got -1"},
      {"{\"gpus\": [{\"name\": \"X1\", \"memory_GiB\": 16, \"mem_bw_GBps\": 100}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].peak_tflops: required field missing"},
      {"{\"gpus\": [{\"name\": \"X1\", \"memory_GiB\": 16, \"mem_bw_GBps\": 100, \"peak_tflops\": {\"fp32\": 0}}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].peak_tflops: needs a positive rate"},
      {"{\"gpus\": [{\"memory_GiB\": 16}], \"sites\": [" SITE_EAST "]}", HS_EINVAL,
       "gpus[0].name: required field missing"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 1.5}], \"sites\": [" SITE_EAST "]}",
       HS_ELIMIT, "gpus[0].gemm_eff_max: must be at most 1, got 1.5"},
      /* calibrated figures name the points they were fitted on */
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"calibrated\": true}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].calibrated: true needs a \"calibration_source\""},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"calibrated\": true, \"calibration_source\": 3}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].calibration_source: must be a string"},
      /* Subnormal efficiencies and rates used to give infinite kernel times
       * (found by fuzz_profile); they are errors now. */
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"gemm_eff_max\": 5e-324}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].gemm_eff_max: must be between 0.001 and 1, got 4.9406564584124654e-324"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"mem_eff\": 0}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].mem_eff: must be between 0.001 and 1, got 0"},
      {"{\"gpus\": [{\"name\": \"X1\", \"memory_GiB\": 16, \"mem_bw_GBps\": 100, \"peak_tflops\": {\"fp32\": 1e-300}}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].peak_tflops.fp32: must be 0 (unsupported) or at least 1e-06, got 1e-300"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"pcie_gen\": 9}], \"sites\": [" SITE_EAST "]}", HS_ELIMIT,
       "gpus[0].pcie_gen: must be at most 7, got 9"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"price_spot_usd_h\": -2}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[0].price_spot_usd_h: must be a non-negative number, got -2"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"tdp_w\": 1}, {\"name\": \"A100-SXM4-80GB\", \"tdp_w\": 2}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "gpus[1].name: duplicate GPU \"A100-SXM4-80GB\" (also gpus[0])"},
      {"{\"gpus\": {\"name\": \"A100-SXM4-80GB\"}, \"sites\": [" SITE_EAST "]}", HS_EINVAL,
       "cluster.json: gpus: must be an array"},
      /* overlap_slowdown lies in [0, 1) and a nonzero one names its source */
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"overlap_slowdown\": 1, \"overlap_slowdown_source\": \"s\"}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].overlap_slowdown: must be in [0, 1), got 1"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"overlap_slowdown\": -0.5, \"overlap_slowdown_source\": \"s\"}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].overlap_slowdown: must be in [0, 1), got -0.5"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"overlap_slowdown\": 2.5}], \"sites\": [" SITE_EAST "]}",
       HS_ELIMIT, "cluster.json: gpus[0].overlap_slowdown: must be at most 1, got 2.5"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"overlap_slowdown\": \"high\"}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].overlap_slowdown"},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"overlap_slowdown\": 0.25}], \"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].overlap_slowdown: 0.25 needs an \"overlap_slowdown_source\""},
      {"{\"gpus\": [{\"name\": \"A100-SXM4-80GB\", \"overlap_slowdown\": 0.25, \"overlap_slowdown_source\": 7}], "
       "\"sites\": [" SITE_EAST "]}",
       HS_EINVAL, "cluster.json: gpus[0].overlap_slowdown_source: must be a string"},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(cases); i++)
    expect_fail(cases[i].json, cases[i].status, cases[i].msg);
}

/* Unknown fields are warnings with the field's path, and loading succeeds. */
static void test_unknown_fields_warn(void)
{
  const char *json = "{\"colour\": 1, \"sites\": [{\"name\": \"a\", \"nodes\": [{\"count\": 1, \"gpu\": "
                     "\"T4-16GB\", \"gpus_per_node\": 1, \"nic\": {\"GBps\": 10, \"mtu\": 9000}, \"rack\": 3}]}]}";
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  err.warn_fp = tmpfile();
  CHECK_EQ_INT(hs_cluster_parse(json, "cluster.json", &c, &err), HS_OK);
  CHECK_EQ_INT(err.n_warnings, 3);
  char text[1024] = "";
  rewind(err.warn_fp);
  size_t n = fread(text, 1, sizeof text - 1, err.warn_fp);
  text[n] = '\0';
  fclose(err.warn_fp);
  CHECK_CONTAINS(text, "cluster.json: colour: unknown field (ignored)");
  CHECK_CONTAINS(text, "cluster.json: sites[0].nodes[0].rack: unknown field (ignored)");
  CHECK_CONTAINS(text, "cluster.json: sites[0].nodes[0].nic.mtu: unknown field (ignored)");
  CHECK_EQ_INT(c.n_devices, 1);
  hs_cluster_destroy(&c);
}

static void test_load_errors(void)
{
  hs_cluster_t c;
  hs_error_t err;
  hs_cluster_init(&c);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_cluster_load("no-such-cluster", &c, &err), HS_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "cluster \"no-such-cluster\": not in the catalog");
  hs_error_init(&err);
  CHECK_EQ_INT(hs_cluster_load("/nonexistent/dir/c.json", &c, &err), HS_ENOTFOUND);
  CHECK_CONTAINS(err.msg, "/nonexistent/dir/c.json: cannot open");
  hs_error_init(&err);
  CHECK_EQ_INT(hs_cluster_load(hs_test_data("clusters/malformed.json"), &c, &err), HS_EPARSE);
  CHECK_CONTAINS(err.msg, "malformed.json: malformed JSON at line 4, column 18");
  hs_error_init(&err);
  CHECK_EQ_INT(hs_cluster_load("", &c, &err), HS_EINVAL);
  CHECK_EQ_INT(c.n_devices, 0);
  hs_cluster_destroy(&c);
  hs_cluster_destroy(NULL);
}

static void test_gpu_catalog_errors(void)
{
  hs_gpu_catalog_t cat;
  hs_error_t err;
  hs_gpu_catalog_init(&cat);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_gpu_catalog_parse("{\"gpus\": 3}", "gpus.json", &cat, &err), HS_EINVAL);
  CHECK_CONTAINS(err.msg, "gpus.json: gpus: must be an array, got 3");
  hs_gpu_catalog_destroy(&cat);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_gpu_catalog_parse("[{\"name\": \"G\", \"memory_GiB\": 8, \"mem_bw_GBps\": 0, "
                                    "\"peak_tflops\": {\"fp32\": 1}}]",
                                    "gpus.json", &cat, &err),
               HS_EINVAL);
  CHECK_CONTAINS(err.msg, "gpus.json: [0].mem_bw_GBps: must be a positive number, got 0");
  hs_gpu_catalog_destroy(&cat);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_gpu_catalog_parse("[{\"name\": \"G\", \"memory_GiB\": 8, \"mem_bw_GBps\": 10, "
                                    "\"peak_tflops\": {\"fp32\": 1, \"int4\": 9}}]",
                                    "gpus.json", &cat, &err),
               HS_OK);
  CHECK_EQ_INT(err.n_warnings, 1); /* peak_tflops.int4 */
  CHECK_EQ_INT(cat.n, 1);
  hs_gpu_catalog_destroy(&cat);
  hs_gpu_catalog_destroy(NULL);
  hs_error_init(&err);
  CHECK_EQ_INT(hs_gpu_catalog_load("/nonexistent/gpus.json", &cat, &err), HS_ENOTFOUND);
  hs_gpu_catalog_destroy(&cat);
}

int main(void)
{
  HS_RUN(test_issue_examples);
  HS_RUN(test_malformed);
  HS_RUN(test_types_and_missing);
  HS_RUN(test_numbers_and_limits);
  HS_RUN(test_too_many_sites);
  HS_RUN(test_sites_and_links);
  HS_RUN(test_inline_gpus);
  HS_RUN(test_unknown_fields_warn);
  HS_RUN(test_load_errors);
  HS_RUN(test_gpu_catalog_errors);
  HS_TEST_END();
}
