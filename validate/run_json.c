/*
 * run_json.c - run.json, a measured training run with what simulating it
 * needs (written by `hetsim import megatron-log`, read by `hetsim validate
 * --run`):
 *
 *   {"source": "hetsim import megatron-log: train.log",
 *    "model": {"name": ..., "transformer": {...}},      a hetsim model file
 *    "plan": {"tp": 1, "pp": 1, "dp": 1, "microbatch_size": 1, "global_batch": 16,
 *             "chunks": 1, "recompute": "none", "distributed_optimizer": false,
 *             "sequence_parallel": false},
 *    "world_size": 1,
 *    "measured": {measured.json},
 *    "tflops_per_gpu": [...]}                             Megatron's, per kept line
 *
 * The model and measured parts go through their own parsers
 * (hs_model_parse_json, hs_measured_parse), so they obey the same rules as
 * standalone files; messages name run.json and the part.
 */
#include "hs_json.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

cJSON *hs_run_to_json(const hs_run_t *r)
{
  /* first: hs_measured_to_json clears the out-of-memory flag itself */
  cJSON *ms = hs_measured_to_json(&r->measured);
  if (!ms)
    return NULL;
  hs_json_oom_clear();
  cJSON *j = cJSON_CreateObject();
  if (!j) {
    cJSON_Delete(ms);
    return NULL;
  }
  const hs_transformer_cfg_t *m = &r->model;
  cJSON_AddStringToObject(j, "source", r->source);
  cJSON *mo = cJSON_AddObjectToObject(j, "model");
  if (mo) {
    cJSON_AddStringToObject(mo, "name", m->name);
    cJSON_AddStringToObject(mo, "source", r->source);
  }
  cJSON *t = mo ? hs_json_add(mo, "transformer", cJSON_CreateObject()) : NULL;
  if (t) {
    cJSON_AddStringToObject(t, "arch", hs_arch_name(m->arch));
    cJSON_AddNumberToObject(t, "layers", (double)m->layers);
    cJSON_AddNumberToObject(t, "hidden", (double)m->hidden);
    cJSON_AddNumberToObject(t, "heads", (double)m->heads);
    cJSON_AddNumberToObject(t, "kv_heads", (double)m->kv_heads);
    if (m->head_dim)
      cJSON_AddNumberToObject(t, "head_dim", (double)m->head_dim);
    cJSON_AddNumberToObject(t, "ffn", (double)m->ffn);
    cJSON_AddNumberToObject(t, "vocab", (double)m->vocab);
    cJSON_AddNumberToObject(t, "seq_len", (double)m->seq_len);
    cJSON_AddNumberToObject(t, "max_positions", (double)m->max_positions);
    if (m->experts > 1) {
      cJSON_AddNumberToObject(t, "experts", (double)m->experts);
      cJSON_AddNumberToObject(t, "topk", (double)m->topk);
    }
    cJSON_AddStringToObject(t, "act", hs_act_name(m->act));
    cJSON_AddStringToObject(t, "norm", hs_norm_name(m->norm));
    cJSON_AddBoolToObject(t, "bias", m->bias);
    cJSON_AddBoolToObject(t, "tied_embeddings", m->tied_embeddings);
    cJSON_AddStringToObject(t, "dtype", hs_dtype_name(m->dtype));
  }
  const hs_run_plan_t *p = &r->plan;
  cJSON *po = cJSON_AddObjectToObject(j, "plan");
  if (po) {
    cJSON_AddNumberToObject(po, "tp", p->tp);
    cJSON_AddNumberToObject(po, "pp", p->pp);
    cJSON_AddNumberToObject(po, "dp", p->dp);
    cJSON_AddNumberToObject(po, "microbatch_size", p->microbatch_size);
    cJSON_AddNumberToObject(po, "global_batch", (double)p->global_batch);
    cJSON_AddNumberToObject(po, "chunks", p->chunks);
    cJSON_AddStringToObject(po, "recompute", hs_recompute_name(p->recompute));
    cJSON_AddBoolToObject(po, "distributed_optimizer", p->distributed_optimizer);
    cJSON_AddBoolToObject(po, "sequence_parallel", p->sequence_parallel);
    if (p->first_stage_layers > 0)
      cJSON_AddNumberToObject(po, "first_stage_layers", p->first_stage_layers);
    if (p->last_stage_layers > 0)
      cJSON_AddNumberToObject(po, "last_stage_layers", p->last_stage_layers);
  }
  cJSON_AddNumberToObject(j, "world_size", r->world_size);
  hs_json_add(j, "measured", ms);
  cJSON *tf = cJSON_AddArrayToObject(j, "tflops_per_gpu");
  for (int32_t i = 0; tf && i < r->n_tflops; i++)
    cJSON_AddItemToArray(tf, cJSON_CreateNumber(r->tflops_per_gpu[i]));
  return hs_json_finish(j);
}

/* Parses the sub-object `key` of j with `parse` after printing it. */
static hs_status_t sub_text(const cJSON *j, const char *file, const char *key, char **out,
                            hs_error_t *err)
{
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!cJSON_IsObject(o))
    return hs_error_set(err, HS_EINVAL, "%s: %s: required object missing", file, key);
  *out = cJSON_PrintUnformatted(o);
  return *out ? HS_OK : hs_error_set(err, HS_ENOMEM, "out of memory");
}

hs_status_t hs_run_parse(const char *text, const char *file, hs_run_t *out, hs_error_t *err)
{
  static const char *const known[] = {"source", "model", "plan", "world_size", "measured",
                                      "tflops_per_gpu", NULL};
  static const char *const kplan[] = {"tp", "pp", "dp", "microbatch_size", "global_batch",
                                      "chunks", "recompute", "distributed_optimizer",
                                      "sequence_parallel", "first_stage_layers",
                                      "last_stage_layers", NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  char *sub = NULL;
  hs_model_t model;
  hs_model_init(&model);
  hs_run_init(out);
  if (!file)
    file = "run.json";
  hs_jreader_t r = {file, err};
  char part[160];
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  HS_CHECK(hs_json_string(&r, j, "", "source", false, "", out->source, sizeof out->source));
  HS_CHECK(sub_text(j, file, "model", &sub, err));
  snprintf(part, sizeof part, "%s (model)", file);
  HS_CHECK(hs_model_parse_json(sub, part, 0, &model, err));
  if (!model.from_generator)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: model: must be a \"transformer\" description", file));
  out->model = model.cfg;
  cJSON_free(sub);
  sub = NULL;
  const cJSON *po = NULL;
  HS_CHECK(hs_json_object(&r, j, "", "plan", true, &po));
  hs_json_warn_unknown(&r, po, "plan", kplan);
  hs_run_plan_t *p = &out->plan;
  int64_t v = 0;
  HS_CHECK(hs_json_int(&r, po, "plan", "tp", true, 1, 1, 1 << 16, &v));
  p->tp = (int32_t)v;
  HS_CHECK(hs_json_int(&r, po, "plan", "pp", true, 1, 1, 1 << 16, &v));
  p->pp = (int32_t)v;
  HS_CHECK(hs_json_int(&r, po, "plan", "dp", true, 1, 1, 1 << 24, &v));
  p->dp = (int32_t)v;
  HS_CHECK(hs_json_int(&r, po, "plan", "microbatch_size", true, 1, 1, 1 << 20, &v));
  p->microbatch_size = (int32_t)v;
  HS_CHECK(hs_json_int(&r, po, "plan", "global_batch", true, 1, 1, INT64_C(1) << 40,
                       &p->global_batch));
  HS_CHECK(hs_json_int(&r, po, "plan", "chunks", false, 1, 1, 1 << 16, &v));
  p->chunks = (int32_t)v;
  char rc[24];
  HS_CHECK(hs_json_string(&r, po, "plan", "recompute", false, "none", rc, sizeof rc));
  if (hs_recompute_parse(rc, &p->recompute) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: plan.recompute: must be none, selective or full, got "
                         "\"%s\"", file, rc));
  HS_CHECK(hs_json_bool(&r, po, "plan", "distributed_optimizer", false, false,
                        &p->distributed_optimizer));
  HS_CHECK(hs_json_bool(&r, po, "plan", "sequence_parallel", false, false, &p->sequence_parallel));
  HS_CHECK(hs_json_int(&r, po, "plan", "first_stage_layers", false, 0, 0, HS_MODEL_MAX_LAYERS, &v));
  p->first_stage_layers = (int32_t)v;
  HS_CHECK(hs_json_int(&r, po, "plan", "last_stage_layers", false, 0, 0, HS_MODEL_MAX_LAYERS, &v));
  p->last_stage_layers = (int32_t)v;
  int64_t tp_pp = 0, world = 0;
  if (!hs_mul_i64(p->tp, p->pp, HS_CLUSTER_MAX_DEVICES, &tp_pp) ||
      !hs_mul_i64(tp_pp, p->dp, HS_CLUSTER_MAX_DEVICES, &world))
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: plan: tp %d x pp %d x dp %d: more than %d GPUs", file,
                         p->tp, p->pp, p->dp, HS_CLUSTER_MAX_DEVICES));
  out->world_size = (int32_t)world;
  /* written by the importer; when present it must agree with the plan */
  HS_CHECK(hs_json_int(&r, j, "", "world_size", false, world, 1, HS_CLUSTER_MAX_DEVICES, &v));
  if (v != world)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: world_size: %lld is not plan tp %d x pp %d x dp %d = "
                         "%lld", file, (long long)v, p->tp, p->pp, p->dp, (long long)world));
  HS_CHECK(sub_text(j, file, "measured", &sub, err));
  snprintf(part, sizeof part, "%s (measured)", file);
  HS_CHECK(hs_measured_parse(sub, part, &out->measured, err));
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "tflops_per_gpu", false, &arr, &n));
  out->tflops_per_gpu = hs_calloc((size_t)n + 1, sizeof *out->tflops_per_gpu);
  if (!out->tflops_per_gpu)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next) {
    if (!cJSON_IsNumber(e) || !isnormal(e->valuedouble) || !(e->valuedouble > 0) ||
        e->valuedouble > 1e9)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: tflops_per_gpu[%d]: must be a positive number",
                           file, out->n_tflops));
    out->tflops_per_gpu[out->n_tflops++] = e->valuedouble;
  }
cleanup:
  cJSON_free(sub);
  hs_model_destroy(&model);
  hs_json_free(j);
  if (st != HS_OK)
    hs_run_destroy(out);
  return st;
}

hs_status_t hs_run_load(const char *path, hs_run_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_run_init(out);
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st == HS_OK)
    st = hs_run_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}
