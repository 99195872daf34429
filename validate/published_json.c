/*
 * published_json.c - row files of the published validation suite
 * (validate/published/<table>.json) and the suite's JSON output.
 *
 *   {"table": "megatron-sc21-table1", "title": "...", "source": "...", "date": "2021-04",
 *    "metric": "hw_tflops_per_gpu", "max_mape": 0.11, "min_rank_concordance": 0.96,
 *    "model": {hetsim model JSON with "transformer"},      template of every row
 *    "cluster": {cluster JSON},                             template (or the whole cluster)
 *    "placement": [device of rank 0, of rank 1, ...],       optional, every row's
 *    "options": {"recompute": "full", ...},                defaults of every row
 *    "rows": [{"name": "1.7B", "source": "Table 1 row 1",
 *              "model": {"layers": 24, "hidden": 2304, ...},   replaces "transformer" keys
 *              "nodes": 4,                                      sites[0].nodes[0].count
 *              "cluster": {cluster JSON},                       or: this row's whole cluster
 *              "plan": {"tp": 1, "pp": 1, "dp": 32, "microbatch": 16, "global_batch": 512,
 *                       "chunks": 1, "schedule": "1f1b", "placement": [...]},
 *              "options": {...},                                 replaces table options
 *              "measured": 137,                                  or "out_of_memory"
 *              "not_modelled": "why the row is left out"}]}   optional
 *
 * Clusters: a row's "nodes" sets the count of a one-group template; a row
 * without "nodes" runs on the template as written, or on its own "cluster"
 * (both: several node groups, e.g. 3 nodes of 4 V100 and 1 of 4 T4). Ranks
 * are laid out as hs_plan_grid's (pp_rank x dp + dp_rank) x tp + tp_rank,
 * which is DeepSpeed's and Megatron's order, over the cluster's devices in
 * file order (a hostfile's order); "placement" maps rank r to another
 * device instead (a permutation, one entry per GPU).
 *
 * Each row becomes a model JSON text and a cluster JSON text that the
 * ordinary loaders read (hs_model_parse_json, hs_cluster_parse), so a row
 * is checked exactly as a user's files would be. Invariant after a
 * successful parse: every row has tp, pp, dp, microbatch, chunks >= 1,
 * global_batch a multiple of dp x microbatch, measured > 0, and texts.
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 1000

static const char *const metric_names[] = {"hw_tflops_per_gpu", "tflops_per_gpu", "mfu",
                                           "iteration_time_s"};

const char *hs_pub_metric_name(hs_pub_metric_t m)
{
  return (unsigned)m < HS_ARRAY_LEN(metric_names) ? metric_names[m] : "?";
}

/* The defaults every table's and row's "options" start from; here, below
 * published.c, since the row reader fills options and the runner only maps them. */
void hs_pub_options_init(hs_pub_options_t *o)
{
  memset(o, 0, sizeof *o);
  o->recompute = HS_RECOMPUTE_NONE;
  o->dp_overlap = true;
  o->context_parallel = 1;
  o->expert_parallel = 1;
}

void hs_pub_table_init(hs_pub_table_t *t) { memset(t, 0, sizeof *t); }

void hs_pub_table_destroy(hs_pub_table_t *t)
{
  if (!t)
    return;
  for (int32_t i = 0; i < t->n_rows && t->rows; i++) {
    free(t->rows[i].model_json);
    free(t->rows[i].model_over_json);
    free(t->rows[i].cluster_json);
    free(t->rows[i].stage_layers);
    free(t->rows[i].placement);
  }
  free(t->rows);
  memset(t, 0, sizeof *t);
}

static bool date_ok(const char *d)
{
  size_t n = strlen(d);
  if (n != 4 && n != 7 && n != 10)
    return false;
  for (size_t i = 0; i < n; i++)
    if ((i == 4 || i == 7) ? d[i] != '-' : (d[i] < '0' || d[i] > '9'))
      return false;
  return true;
}

/* Options at `path` on top of `o` (table defaults, then the row's). */
static hs_status_t read_options(const hs_jreader_t *r, const cJSON *obj, const char *path,
                                hs_pub_options_t *o)
{
  static const char *const known[] = {"recompute", "kernels", "attention", "sequence_parallel",
                                      "zero_stage", "distributed_optimizer", "precision",
                                      "tp_comm_overlap", "dp_overlap",
                                      "context_parallel", "expert_parallel", "fsdp_param_dtype",
                                      "fsdp_backward_prefetch", "fsdp_shard_grad_op", "grad_accum",
                                      "grad_reduce_dtype", "framework", NULL};
  hs_status_t st = HS_OK;
  char buf[16];
  HS_CHECK(hs_json_expect_object(r, obj, path));
  hs_json_warn_unknown(r, obj, path, known);
  HS_CHECK(hs_json_string(r, obj, path, "recompute", false, hs_recompute_name(o->recompute), buf,
                          sizeof buf));
  if (hs_recompute_parse(buf, &o->recompute) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.recompute: must be none, selective or full, got \"%s\"",
                         r->file, path, buf));
  char kbuf[sizeof o->kernels];
  HS_CHECK(hs_json_string(r, obj, path, "kernels", false, o->kernels, kbuf, sizeof kbuf));
  hs_kernels_t kset;
  if (kbuf[0] && hs_kernels_preset(kbuf, &kset) != HS_OK) {
    char names[128];
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.kernels: must be one of %s, got \"%s\"", r->file,
                         path, hs_kernel_presets_list(names, sizeof names), kbuf));
  }
  hs_strlcpy(o->kernels, kbuf, sizeof o->kernels);
  HS_CHECK(hs_json_string(r, obj, path, "attention", false, o->attention, buf, sizeof buf));
  if (buf[0] && strcmp(buf, "unfused") != 0 && strcmp(buf, "flash") != 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.attention: must be unfused or flash, got \"%s\"",
                         r->file, path, buf));
  hs_strlcpy(o->attention, buf, sizeof o->attention);
  HS_CHECK(hs_json_bool(r, obj, path, "sequence_parallel", false, o->sequence_parallel,
                        &o->sequence_parallel));
  int64_t v = 0;
  HS_CHECK(hs_json_int(r, obj, path, "zero_stage", false, o->zero_stage, 0, 3, &v));
  o->zero_stage = (int32_t)v;
  bool dopt = false;
  HS_CHECK(hs_json_bool(r, obj, path, "distributed_optimizer", false, false, &dopt));
  if (dopt && o->zero_stage == 0)
    o->zero_stage = 1;
  HS_CHECK(hs_json_string(r, obj, path, "precision", false, o->precision, buf, sizeof buf));
  hs_dtype_t dt;
  if (buf[0] && hs_dtype_parse(buf, &dt) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.precision: must be bf16, fp16, fp32 or fp8, got \"%s\"",
                         r->file, path, buf));
  hs_strlcpy(o->precision, buf, sizeof o->precision);
  HS_CHECK(hs_json_bool(r, obj, path, "tp_comm_overlap", false, o->tp_comm_overlap,
                        &o->tp_comm_overlap));
  HS_CHECK(hs_json_bool(r, obj, path, "dp_overlap", false, o->dp_overlap, &o->dp_overlap));
  HS_CHECK(hs_json_int(r, obj, path, "context_parallel", false, o->context_parallel, 1, 1 << 20, &v));
  o->context_parallel = (int32_t)v;
  HS_CHECK(hs_json_int(r, obj, path, "expert_parallel", false, o->expert_parallel, 1, 1 << 20, &v));
  o->expert_parallel = (int32_t)v;
  HS_CHECK(hs_json_string(r, obj, path, "fsdp_param_dtype", false, o->fsdp_param_dtype, buf,
                          sizeof buf));
  if (buf[0] && hs_dtype_parse(buf, &dt) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.fsdp_param_dtype: must be bf16, fp16, fp32 or fp8, got \"%s\"", r->file,
                         path, buf));
  hs_strlcpy(o->fsdp_param_dtype, buf, sizeof o->fsdp_param_dtype);
  HS_CHECK(hs_json_bool(r, obj, path, "fsdp_shard_grad_op", false, o->fsdp_shard_grad_op,
                        &o->fsdp_shard_grad_op));
  HS_CHECK(hs_json_string(r, obj, path, "fsdp_backward_prefetch", false,
                          hs_fsdp_prefetch_name(o->fsdp_backward_post), buf, sizeof buf));
  if (hs_fsdp_prefetch_parse(buf, &o->fsdp_backward_post) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.fsdp_backward_prefetch: must be pre or post, got \"%s\"", r->file, path,
                         buf));
  HS_CHECK(hs_json_string(r, obj, path, "grad_accum", false, hs_grad_accum_name(o->grad_accum), buf,
                          sizeof buf));
  if (hs_grad_accum_parse(buf, &o->grad_accum) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL,
                         "%s: %s.grad_accum: must be fused, add, add_fp32, cast_add_fp32 or autograd, "
                         "got \"%s\"",
                         r->file, path, buf));
  HS_CHECK(hs_json_string(r, obj, path, "grad_reduce_dtype", false,
                          hs_grad_reduce_name(o->grad_reduce_fp32), buf, sizeof buf));
  if (hs_grad_reduce_parse(buf, &o->grad_reduce_fp32) != HS_OK)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.grad_reduce_dtype: must be fp32 or default, got \"%s\"",
                         r->file, path, buf));
  HS_CHECK(hs_framework_from_json(r, obj, path, &o->framework));
cleanup:
  return st;
}

/* cJSON text of `j`, or an out-of-memory error. */
static hs_status_t print_json(const cJSON *j, char **out, hs_error_t *err)
{
  *out = cJSON_PrintUnformatted(j);
  return *out ? HS_OK : hs_error_set(err, HS_ENOMEM, "out of memory");
}

/* The row's model: the template with the row's "transformer" keys and name. */
static hs_status_t row_model(const hs_jreader_t *r, const cJSON *tmpl, const cJSON *row,
                             const char *path, const char *name, char **out, char **over_out)
{
  hs_status_t st = HS_OK;
  cJSON *m = cJSON_Duplicate(tmpl, true);
  if (!m)
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  cJSON *tr = cJSON_GetObjectItemCaseSensitive(m, "transformer");
  if (!cJSON_IsObject(tr))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: model.transformer: must be an object (the template "
                         "every row's \"model\" keys replace)", r->file));
  const cJSON *over = NULL;
  HS_CHECK(hs_json_object(r, row, path, "model", false, &over));
  if (over)
    HS_CHECK(print_json(over, over_out, r->err));
  else if (!(*over_out = strdup("{}")))
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = over ? over->child : NULL; e; e = e->next) {
    cJSON *c = cJSON_Duplicate(e, true);
    if (!c || !(cJSON_GetObjectItemCaseSensitive(tr, e->string)
                    ? cJSON_ReplaceItemInObjectCaseSensitive(tr, e->string, c)
                    : cJSON_AddItemToObject(tr, e->string, c))) {
      cJSON_Delete(c);
      HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "out of memory"));
    }
  }
  cJSON *nm = cJSON_CreateString(name);
  if (!nm || !(cJSON_GetObjectItemCaseSensitive(m, "name")
                   ? cJSON_ReplaceItemInObjectCaseSensitive(m, "name", nm)
                   : cJSON_AddItemToObject(m, "name", nm))) {
    cJSON_Delete(nm);
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "out of memory"));
  }
  HS_CHECK(print_json(m, out, r->err));
cleanup:
  cJSON_Delete(m);
  return st;
}

/* Node groups (sites[*].nodes[*] entries) of a cluster JSON. O(groups). */
static int node_groups(const cJSON *c)
{
  int n = 0;
  const cJSON *sites = cJSON_GetObjectItemCaseSensitive(c, "sites");
  for (const cJSON *s = cJSON_IsArray(sites) ? sites->child : NULL; s; s = s->next) {
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(s, "nodes");
    n += cJSON_IsArray(ns) ? cJSON_GetArraySize(ns) : 0;
  }
  return n;
}

/* The row's cluster: the template with sites[0].nodes[0].count = nodes, or
 * the template as written when nodes is 0. */
static hs_status_t row_cluster(const hs_jreader_t *r, const cJSON *tmpl, const char *path, int64_t nodes,
                               char **out)
{
  hs_status_t st = HS_OK;
  if (nodes == 0)
    return print_json(tmpl, out, r->err);
  int groups = node_groups(tmpl);
  if (groups > 1)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.nodes: %lld, but the cluster has %d node groups "
                        "(which one's count?): leave \"nodes\" out to run on the cluster as written",
                        r->file, path, (long long)nodes, groups);
  cJSON *c = cJSON_Duplicate(tmpl, true);
  if (!c)
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  cJSON *sites = cJSON_GetObjectItemCaseSensitive(c, "sites");
  cJSON *s0 = cJSON_IsArray(sites) ? cJSON_GetArrayItem(sites, 0) : NULL;
  cJSON *ns = s0 ? cJSON_GetObjectItemCaseSensitive(s0, "nodes") : NULL;
  cJSON *n0 = cJSON_IsArray(ns) ? cJSON_GetArrayItem(ns, 0) : NULL;
  if (!cJSON_IsObject(n0))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: cluster.sites[0].nodes[0]: missing (rows set its "
                         "\"count\")", r->file));
  cJSON *cnt = cJSON_CreateNumber((double)nodes);
  if (!cnt || !(cJSON_GetObjectItemCaseSensitive(n0, "count")
                    ? cJSON_ReplaceItemInObjectCaseSensitive(n0, "count", cnt)
                    : cJSON_AddItemToObject(n0, "count", cnt))) {
    cJSON_Delete(cnt);
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "out of memory"));
  }
  HS_CHECK(print_json(c, out, r->err));
cleanup:
  cJSON_Delete(c);
  return st;
}

/* plan.stage_layers: [int >= 0], pp x chunks of them (hs_plan_grid checks
 * the sum and empty stages against the model, naming the entry). */
static hs_status_t read_stage_layers(const hs_jreader_t *r, const cJSON *plan, const char *pp_,
                                     hs_pub_row_t *row)
{
  const cJSON *ja = NULL;
  int n = 0;
  hs_status_t st = hs_json_array(r, plan, pp_, "stage_layers", false, &ja, &n);
  if (st != HS_OK || !ja)
    return st;
  int64_t want = (int64_t)row->pp * (row->chunks > 1 ? row->chunks : 1);
  if ((int64_t)n != want)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.stage_layers: %d counts, pp x chunks = %lld needs "
                        "one per (virtual) stage", r->file, pp_, n, (long long)want);
  row->stage_layers = hs_calloc((size_t)n, sizeof *row->stage_layers);
  if (!row->stage_layers)
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  row->n_stage_layers = n;
  int k = 0;
  for (const cJSON *e = ja->child; e; e = e->next, k++) {
    double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    if (!cJSON_IsNumber(e) || !isfinite(x) || x != floor(x) || x < 0 || x > 1e6)
      return hs_error_set(r->err, HS_EINVAL, "%s: %s.stage_layers[%d]: must be an integer >= 0 (layers), "
                          "got %s", r->file, pp_, k, cJSON_IsNumber(e) ? "a non-integer or negative number"
                                                                       : "a non-number");
    row->stage_layers[k] = (int32_t)x;
  }
  return HS_OK;
}

/* A placement array at `field` of `obj` (path `p`): n_gpus distinct device
 * indices 0..n_gpus-1, rank r's device at [r]. O(n_gpus). */
static hs_status_t read_placement(const hs_jreader_t *r, const cJSON *obj, const char *p, const char *field,
                                  int64_t n_gpus, hs_pub_row_t *row)
{
  const cJSON *ja = NULL;
  int n = 0;
  hs_status_t st = hs_json_array(r, obj, p, field, false, &ja, &n);
  if (st != HS_OK || !ja)
    return st;
  char fp[128];
  hs_json_path(fp, sizeof fp, p, field, 0);
  if ((int64_t)n != n_gpus)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: %d devices, but the plan has tp x pp x dp = %lld ranks "
                        "(one device per rank)", r->file, fp, n, (long long)n_gpus);
  row->placement = hs_calloc((size_t)n, sizeof *row->placement);
  unsigned char *seen = hs_calloc((size_t)n, 1);
  if (!row->placement || !seen) {
    free(seen);
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  }
  row->n_placement = n;
  int k = 0;
  for (const cJSON *e = ja->child; e; e = e->next, k++) {
    double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    if (!cJSON_IsNumber(e) || !isfinite(x) || x != floor(x) || x < 0 || x >= n) {
      char v[32] = "a non-number";
      if (cJSON_IsNumber(e))
        snprintf(v, sizeof v, "%.17g", x);
      st = hs_error_set(r->err, HS_EINVAL, "%s: %s[%d]: must be a device index 0 to %d, got %s", r->file, fp, k,
                        n - 1, v);
      break;
    }
    if (seen[(int)x]) {
      st = hs_error_set(r->err, HS_EINVAL, "%s: %s[%d]: device %d already placed (a placement is a "
                        "permutation of the cluster's devices)", r->file, fp, k, (int)x);
      break;
    }
    seen[(int)x] = 1;
    row->placement[k] = (int32_t)x;
  }
  free(seen);
  return st;
}

static hs_status_t read_row(const hs_jreader_t *r, const cJSON *e, const char *path,
                            const cJSON *model, const cJSON *cluster, const cJSON *top,
                            const hs_pub_options_t *defs, hs_pub_row_t *row)
{
  static const char *const known[] = {"name", "source", "model", "nodes", "cluster", "plan", "options",
                                      "measured", "notes", "not_modelled", NULL};
  static const char *const kplan[] = {"tp", "pp", "dp", "microbatch", "global_batch", "chunks",
                                      "schedule", "stage_layers", "async_send", "placement", NULL};
  hs_status_t st = HS_OK;
  char pp_[96];
  int64_t v = 0;
  HS_CHECK(hs_json_expect_object(r, e, path));
  hs_json_warn_unknown(r, e, path, known);
  HS_CHECK(hs_json_string(r, e, path, "name", true, "", row->name, sizeof row->name));
  HS_CHECK(hs_json_string(r, e, path, "source", true, "", row->source, sizeof row->source));
  {
    /* a run that did not fit: the row checks the out-of-memory prediction */
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "measured");
    if (cJSON_IsString(ms)) {
      if (strcmp(ms->valuestring, "out_of_memory") != 0)
        HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.measured: must be a positive number or "
                             "\"out_of_memory\", got \"%.40s\"", r->file, path, ms->valuestring));
      row->measured_oom = true;
    } else {
      HS_CHECK(hs_json_number(r, e, path, "measured", true, 0, HS_JNUM_POSITIVE, 1e12, &row->measured));
    }
  }
  /* the file's own reason to leave a row out (a measured figure whose
   * convention the source does not state, a plan the simulator cannot
   * express): the row still loads, so its model and cluster are checked */
  HS_CHECK(hs_json_string(r, e, path, "not_modelled", false, "", row->not_modelled, sizeof row->not_modelled));
  if (cJSON_GetObjectItemCaseSensitive(e, "not_modelled") && !row->not_modelled[0])
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.not_modelled: must state the reason, got \"\"", r->file,
                         path));
  int64_t nodes = 0;
  HS_CHECK(hs_json_int(r, e, path, "nodes", false, 0, 1, 1 << 20, &nodes));
  const cJSON *own = NULL;
  HS_CHECK(hs_json_object(r, e, path, "cluster", false, &own));
  if (own && cJSON_GetObjectItemCaseSensitive(e, "nodes"))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.nodes: %lld beside %s.cluster: give the node count of "
                         "the table's cluster or a whole cluster, not both", r->file, path, (long long)nodes,
                         path));
  const cJSON *plan = NULL;
  HS_CHECK(hs_json_object(r, e, path, "plan", true, &plan));
  hs_json_path(pp_, sizeof pp_, path, "plan", 0);
  hs_json_warn_unknown(r, plan, pp_, kplan);
  HS_CHECK(hs_json_int(r, plan, pp_, "tp", true, 1, 1, 1024, &v));
  row->tp = (int32_t)v;
  HS_CHECK(hs_json_int(r, plan, pp_, "pp", true, 1, 1, 1 << 20, &v));
  row->pp = (int32_t)v;
  HS_CHECK(hs_json_int(r, plan, pp_, "dp", true, 1, 1, 1 << 20, &v));
  row->dp = (int32_t)v;
  HS_CHECK(hs_json_int(r, plan, pp_, "microbatch", true, 1, 1, 1 << 20, &v));
  row->microbatch = (int32_t)v;
  HS_CHECK(hs_json_int(r, plan, pp_, "global_batch", true, 1, 1, INT64_C(1) << 40, &row->global_batch));
  HS_CHECK(hs_json_int(r, plan, pp_, "chunks", false, 1, 1, 1024, &v));
  row->chunks = (int32_t)v;
  HS_CHECK(hs_json_string(r, plan, pp_, "schedule", false, row->chunks > 1 ? "interleaved-1f1b" : "1f1b",
                          row->schedule, sizeof row->schedule));
  HS_CHECK(read_stage_layers(r, plan, pp_, row));
  {
    const hs_schedule_t *sc = hs_schedule_find(row->schedule);
    HS_CHECK(hs_json_bool(r, plan, pp_, "async_send", false, sc && sc->default_async_send,
                          &row->async_send));
  }
  if (row->global_batch % ((int64_t)row->dp * row->microbatch) != 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.global_batch: %lld is not a multiple of dp x "
                         "microbatch = %lld", r->file, pp_, (long long)row->global_batch,
                         (long long)row->dp * row->microbatch));
  row->opt = *defs;
  const cJSON *opt = NULL;
  HS_CHECK(hs_json_object(r, e, path, "options", false, &opt));
  if (opt) {
    hs_json_path(pp_, sizeof pp_, path, "options", 0);
    HS_CHECK(read_options(r, opt, pp_, &row->opt));
  }
  {
    /* published.c multiplies these into the GPU count: refuse what
     * overflows or exceeds any cluster instead of wrapping */
    int64_t g = 0;
    if (!hs_mul_i64(row->tp, row->pp, HS_CLUSTER_MAX_DEVICES, &g) ||
        !hs_mul_i64(g, row->dp, HS_CLUSTER_MAX_DEVICES, &g) ||
        !hs_mul_i64(g, HS_MAX(row->opt.context_parallel, 1), HS_CLUSTER_MAX_DEVICES, &g))
      HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: %s.plan: tp %d x pp %d x dp %d x "
                           "options.context_parallel %d: more than %d GPUs", r->file, path, row->tp,
                           row->pp, row->dp, HS_MAX(row->opt.context_parallel, 1),
                           HS_CLUSTER_MAX_DEVICES));
  }
  {
    int64_t g = (int64_t)row->tp * row->pp * row->dp * HS_MAX(row->opt.context_parallel, 1);
    hs_json_path(pp_, sizeof pp_, path, "plan", 0);
    if (cJSON_GetObjectItemCaseSensitive(plan, "placement"))
      HS_CHECK(read_placement(r, plan, pp_, "placement", g, row));
    else
      HS_CHECK(read_placement(r, top, "", "placement", g, row));
  }
  HS_CHECK(row_model(r, model, e, path, row->name, &row->model_json, &row->model_over_json));
  HS_CHECK(row_cluster(r, own ? own : cluster, path, own ? 0 : nodes, &row->cluster_json));
cleanup:
  return st;
}

hs_status_t hs_pub_table_parse(const char *text, const char *file, hs_pub_table_t *out,
                               hs_error_t *err)
{
  static const char *const known[] = {"table", "title", "source", "date", "metric", "max_mape",
                                      "min_rank_concordance", "model", "cluster", "options", "rows", "description",
                                      "placement", "min_oom_predicted", NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_pub_table_init(out);
  if (!file)
    file = "published.json";
  hs_jreader_t r = {file, err};
  hs_strlcpy(out->file, file, sizeof out->file);
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  HS_CHECK(hs_json_string(&r, j, "", "table", true, "", out->name, sizeof out->name));
  HS_CHECK(hs_json_string(&r, j, "", "title", true, "", out->title, sizeof out->title));
  HS_CHECK(hs_json_string(&r, j, "", "source", true, "", out->source, sizeof out->source));
  HS_CHECK(hs_json_string(&r, j, "", "date", true, "", out->date, sizeof out->date));
  if (!date_ok(out->date) && strcmp(out->date, "unknown") != 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: date: must be YYYY, YYYY-MM, YYYY-MM-DD or unknown, got "
                         "\"%s\"", file, out->date));
  char metric[32];
  HS_CHECK(hs_json_string(&r, j, "", "metric", true, "", metric, sizeof metric));
  bool found = false;
  for (unsigned q = 0; q < HS_ARRAY_LEN(metric_names); q++)
    if (strcmp(metric, metric_names[q]) == 0) {
      out->metric = (hs_pub_metric_t)q;
      found = true;
    }
  if (!found)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: metric: must be hw_tflops_per_gpu, tflops_per_gpu, mfu "
                         "or iteration_time_s, got \"%s\"", file, metric));
  /* absent: no bound yet (a table whose rows are all not modelled) */
  if (cJSON_GetObjectItemCaseSensitive(j, "max_mape"))
    HS_CHECK(hs_json_number_in(&r, j, "", "max_mape", true, 0, 1e-6, 10.0, &out->max_mape));
  HS_CHECK(hs_json_number_in(&r, j, "", "min_rank_concordance", false, 1.0, 0.0, 1.0,
                             &out->min_rank_concordance));
  HS_CHECK(hs_json_number_in(&r, j, "", "min_oom_predicted", false, 1.0, 0.0, 1.0, &out->min_oom_predicted));
  const cJSON *model = NULL, *cluster = NULL, *opt = NULL, *rows = NULL;
  HS_CHECK(hs_json_object(&r, j, "", "model", true, &model));
  HS_CHECK(hs_json_object(&r, j, "", "cluster", true, &cluster));
  hs_pub_options_t defs;
  hs_pub_options_init(&defs);
  HS_CHECK(hs_json_object(&r, j, "", "options", false, &opt));
  if (opt)
    HS_CHECK(read_options(&r, opt, "options", &defs));
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "rows", true, &rows, &n));
  if (n < 1 || n > MAX_ROWS)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: rows: %d entries (1 to %d)", file, n, MAX_ROWS));
  out->rows = hs_calloc((size_t)n, sizeof *out->rows);
  if (!out->rows)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = rows->child; e; e = e->next) {
    char p[32];
    hs_json_path(p, sizeof p, "rows", NULL, out->n_rows);
    hs_pub_row_t *row = &out->rows[out->n_rows++];
    HS_CHECK(read_row(&r, e, p, model, cluster, j, &defs, row));
    for (int32_t q = 0; q + 1 < out->n_rows; q++)
      if (strcmp(out->rows[q].name, row->name) == 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.name: \"%s\" already names rows[%d]", file, p,
                             row->name, q));
  }
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_pub_table_destroy(out);
  return st;
}

hs_status_t hs_pub_table_load(const char *path, hs_pub_table_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_pub_table_init(out);
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st == HS_OK)
    st = hs_pub_table_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

cJSON *hs_pub_to_json(const hs_pub_table_t *t, const hs_pub_result_t *res,
                      const hs_pub_summary_t *sum)
{
  hs_json_oom_clear();
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "table", t->name);
  cJSON_AddStringToObject(j, "title", t->title);
  cJSON_AddStringToObject(j, "source", t->source);
  cJSON_AddStringToObject(j, "date", t->date);
  cJSON_AddStringToObject(j, "metric", hs_pub_metric_name(t->metric));
  cJSON_AddNumberToObject(j, "rows_total", sum->n_rows);
  cJSON_AddNumberToObject(j, "rows_simulated", sum->n_simulated);
  cJSON_AddNumberToObject(j, "rows_not_modelled", sum->n_not_modelled);
  cJSON_AddNumberToObject(j, "rows_infeasible", sum->n_infeasible);
  cJSON_AddNumberToObject(j, "mape", sum->mape);
  cJSON_AddNumberToObject(j, "max_abs_err", sum->max_abs_err);
  if (t->max_mape > 0)
    cJSON_AddNumberToObject(j, "max_mape", t->max_mape);
  cJSON_AddNumberToObject(j, "min_rank_concordance", t->min_rank_concordance);
  cJSON_AddNumberToObject(j, "min_oom_predicted", t->min_oom_predicted);
  cJSON_AddNumberToObject(j, "rank_pairs", sum->pairs);
  cJSON_AddNumberToObject(j, "rank_pairs_concordant", sum->concordant);
  cJSON_AddNumberToObject(j, "rank_pairs_resolved", sum->pairs_resolved);
  cJSON_AddNumberToObject(j, "rank_pairs_resolved_concordant", sum->concordant_resolved);
  cJSON_AddBoolToObject(j, "rank_preserved", sum->rank_preserved);
  /* planner view: NaN (undefined) is null, a top pick that did not fit is
   * "out_of_memory" (JSON has no infinity) */
  if (isfinite(sum->spearman))
    cJSON_AddNumberToObject(j, "spearman", sum->spearman);
  else
    cJSON_AddNullToObject(j, "spearman");
  if (isfinite(sum->regret))
    cJSON_AddNumberToObject(j, "top_pick_regret", sum->regret);
  else if (isinf(sum->regret))
    cJSON_AddStringToObject(j, "top_pick_regret", "out_of_memory");
  else
    cJSON_AddNullToObject(j, "top_pick_regret");
  if (sum->top_pick >= 0)
    cJSON_AddStringToObject(j, "top_pick_row", t->rows[sum->top_pick].name);
  if (sum->measured_best >= 0)
    cJSON_AddStringToObject(j, "measured_best_row", t->rows[sum->measured_best].name);
  cJSON_AddNumberToObject(j, "rows_measured_oom", sum->n_measured_oom);
  cJSON_AddNumberToObject(j, "rows_measured_oom_predicted_oom", sum->n_oom_predicted);
  cJSON_AddBoolToObject(j, "targets_met",
                        sum->n_simulated > 0 && sum->mape <= 0.05 && sum->max_abs_err <= 0.12 &&
                            sum->rank_preserved);
  cJSON *arr = cJSON_AddArrayToObject(j, "rows");
  for (int32_t i = 0; arr && i < t->n_rows; i++) {
    const hs_pub_row_t *r = &t->rows[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "source", r->source);
    cJSON_AddNumberToObject(o, "gpus", res[i].n_gpus);
    cJSON_AddNumberToObject(o, "tp", r->tp);
    cJSON_AddNumberToObject(o, "pp", r->pp);
    cJSON_AddNumberToObject(o, "dp", r->dp);
    cJSON_AddNumberToObject(o, "microbatch", r->microbatch);
    cJSON_AddNumberToObject(o, "global_batch", (double)r->global_batch);
    cJSON_AddNumberToObject(o, "chunks", r->chunks);
    if (r->measured_oom)
      cJSON_AddStringToObject(o, "measured", "out_of_memory");
    else
      cJSON_AddNumberToObject(o, "measured", r->measured);
    if (res[i].not_modelled) {
      cJSON_AddStringToObject(o, "not_modelled", res[i].not_modelled);
    } else if (res[i].infeasible) {
      cJSON_AddBoolToObject(o, "infeasible", true);
    } else {
      cJSON_AddNumberToObject(o, "predicted", res[i].predicted);
      if (!r->measured_oom)
        cJSON_AddNumberToObject(o, "error", res[i].err);
    }
    cJSON_AddItemToArray(arr, o);
  }
  return hs_json_finish(j);
}
