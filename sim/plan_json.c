/*
 * plan_json.c - plan.json reader and writer (format in docs/plan.md).
 *
 * The reader checks JSON types and ranges and names the field in every
 * message; consistency with a model and a cluster is hs_plan_validate's job.
 */
#include "hs_json.h"
#include "hs_sim.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PIPELINES 1048576
#define MAX_STAGES 1048576
#define MAX_REPLICAS 1048576
#define MAX_TP 1024

static const char *const shard_dim_names[] = {"batch", "out", "in", "heads", "experts", "vocab"};

static hs_status_t parse_replica(const hs_jreader_t *r, const cJSON *jr, const char *path,
                                 hs_plan_replica_t *rep)
{
  static const char *const known[] = {"devices", "share", "gpu", NULL};
  hs_status_t st = hs_json_expect_object(r, jr, path);
  if (st != HS_OK)
    return st;
  hs_json_warn_unknown(r, jr, path, known);
  const cJSON *jd = NULL;
  int nd = 0;
  if ((st = hs_json_array(r, jr, path, "devices", true, &jd, &nd)) != HS_OK)
    return st;
  if (nd <= 0)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.devices: must not be empty", r->file, path);
  if (nd > MAX_TP)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s.devices: %d devices, above the TP limit of %d",
                        r->file, path, nd, MAX_TP);
  rep->devices = hs_calloc((size_t)nd, sizeof(int32_t));
  if (!rep->devices)
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  rep->n_devices = nd;
  int k = 0;
  char p2[256];
  hs_json_path(p2, sizeof p2, path, "devices", -1);
  for (const cJSON *e = jd->child; e; e = e->next, k++) {
    double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    if (!cJSON_IsNumber(e) || !isfinite(x) || x != floor(x) || x < 0 || x > 1e9)
      return hs_error_set(r->err, HS_EINVAL,
                          "%s: %s[%d]: must be a non-negative integer device id, got %s", r->file,
                          p2, k, cJSON_IsNumber(e) ? "a non-integer or out-of-range number" : "a non-number");
    rep->devices[k] = (int32_t)x;
  }
  return hs_json_number(r, jr, path, "share", false, -1.0, HS_JNUM_POSITIVE, 1.0 + 1e-9, &rep->share);
}

static hs_status_t parse_stage(const hs_jreader_t *r, const cJSON *js, const char *path,
                               hs_plan_stage_t *stg)
{
  static const char *const known[] = {"ops", "recompute", "replicas", "warmup", "order", "devices",
                                      "layers", NULL};
  hs_status_t st = hs_json_expect_object(r, js, path);
  if (st != HS_OK)
    return st;
  hs_json_warn_unknown(r, js, path, known);
  const cJSON *jo = NULL;
  int no = 0;
  if ((st = hs_json_array(r, js, path, "ops", true, &jo, &no)) != HS_OK)
    return st;
  if (no != 2 || !cJSON_IsNumber(jo->child) || !cJSON_IsNumber(jo->child->next))
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.ops: must be [first, last) as two integers", r->file,
                        path);
  double a = jo->child->valuedouble, b = jo->child->next->valuedouble;
  if (!isfinite(a) || !isfinite(b) || a != floor(a) || b != floor(b) || a < 0 || b > 1e8 || b <= a)
    return hs_error_set(r->err, HS_EINVAL,
                        "%s: %s.ops: must be [first, last) with 0 <= first < last, got [%g, %g]",
                        r->file, path, a, b);
  stg->op_first = (int32_t)a;
  stg->op_last = (int32_t)b;
  char rc[32];
  if ((st = hs_json_string(r, js, path, "recompute", false, "none", rc, sizeof rc)) != HS_OK)
    return st;
  if (hs_recompute_parse(rc, &stg->recompute) != HS_OK)
    return hs_error_set(r->err, HS_EINVAL,
                        "%s: %s.recompute: must be none, selective or full, got \"%s\"", r->file, path,
                        rc);
  int64_t w;
  if ((st = hs_json_int(r, js, path, "warmup", false, -1, -1, 1000000, &w)) != HS_OK)
    return st;
  stg->warmup = (int32_t)w;
  /* explicit hetero-1f1b order: its letters and length are checked by
   * hs_plan_validate, which knows the microbatch count and schedule */
  const cJSON *jord = cJSON_GetObjectItemCaseSensitive(js, "order");
  if (jord && !cJSON_IsString(jord))
    return hs_error_set(r->err, HS_EINVAL,
                        "%s: %s.order: must be a string of F (forward) and B (backward) letters",
                        r->file, path);
  if (jord && strlen(jord->valuestring) > 2000000)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s.order: longer than 2000000 letters", r->file,
                        path);
  if (jord && hs_plan_stage_set_order(stg, jord->valuestring) != HS_OK)
    return hs_error_set(r->err, HS_ENOMEM, "out of memory");
  const cJSON *jr = NULL;
  int nr = 0;
  if ((st = hs_json_array(r, js, path, "replicas", true, &jr, &nr)) != HS_OK)
    return st;
  if (nr <= 0)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.replicas: must not be empty", r->file, path);
  if (nr > MAX_REPLICAS)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s.replicas: too many (%d)", r->file, path, nr);
  if ((st = hs_plan_alloc_replicas(stg, nr)) != HS_OK)
    return hs_error_set(r->err, st, "out of memory");
  int k = 0;
  bool any_share = false, all_share = true;
  for (const cJSON *e = jr->child; e; e = e->next, k++) {
    char p2[256], p3[256];
    hs_json_path(p2, sizeof p2, path, "replicas", -1);
    hs_json_path(p3, sizeof p3, p2, NULL, k);
    if ((st = parse_replica(r, e, p3, &stg->replicas[k])) != HS_OK)
      return st;
    if (stg->replicas[k].share < 0)
      all_share = false;
    else
      any_share = true;
  }
  if (any_share && !all_share)
    return hs_error_set(r->err, HS_EINVAL,
                        "%s: %s.replicas: give a share for every replica or for none", r->file, path);
  if (!any_share)
    for (int i = 0; i < nr; i++)
      stg->replicas[i].share = 1.0 / nr;
  return HS_OK;
}

static hs_status_t parse_pipeline(const hs_jreader_t *r, const cJSON *jp, const char *path,
                                  hs_plan_pipeline_t *pl)
{
  static const char *const known[] = {"microbatch_size", "microbatches", "stages", NULL};
  hs_status_t st = hs_json_expect_object(r, jp, path);
  if (st != HS_OK)
    return st;
  hs_json_warn_unknown(r, jp, path, known);
  int64_t v;
  if ((st = hs_json_int(r, jp, path, "microbatch_size", true, 1, 1, 1 << 20, &v)) != HS_OK)
    return st;
  pl->microbatch_size = (int32_t)v;
  if ((st = hs_json_int(r, jp, path, "microbatches", true, 1, 1, 1 << 24, &v)) != HS_OK)
    return st;
  pl->n_microbatches = (int32_t)v;
  const cJSON *js = NULL;
  int ns = 0;
  if ((st = hs_json_array(r, jp, path, "stages", true, &js, &ns)) != HS_OK)
    return st;
  if (ns <= 0)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.stages: must not be empty", r->file, path);
  if (ns > MAX_STAGES)
    return hs_error_set(r->err, HS_ELIMIT, "%s: %s.stages: too many (%d)", r->file, path, ns);
  if ((st = hs_plan_alloc_stages(pl, ns)) != HS_OK)
    return hs_error_set(r->err, st, "out of memory");
  int k = 0;
  for (const cJSON *e = js->child; e; e = e->next, k++) {
    char p2[256], p3[256];
    hs_json_path(p2, sizeof p2, path, "stages", -1);
    hs_json_path(p3, sizeof p3, p2, NULL, k);
    if ((st = parse_stage(r, e, p3, &pl->stages[k])) != HS_OK)
      return st;
  }
  return HS_OK;
}

hs_status_t hs_framework_from_json(const hs_jreader_t *r, const cJSON *j, const char *path,
                                   hs_framework_t *fw)
{
  static const char *const known[] = {"preset", "dispatch_us", "microbatch_us", "cuda_graphs",
                                      "optimizer_passes", NULL};
  char key[256], name[64], list[256];
  hs_status_t st = HS_OK;
  const cJSON *jf = cJSON_GetObjectItemCaseSensitive(j, "framework");
  hs_json_path(key, sizeof key, path, "framework", -1);
  if (!jf)
    return HS_OK;
  if (cJSON_IsString(jf)) {
    if (hs_framework_preset(jf->valuestring, fw) != HS_OK)
      return hs_error_set(r->err, HS_EINVAL, "%s: %s: unknown preset \"%.64s\" (%s)", r->file, key,
                          jf->valuestring, hs_framework_presets_list(list, sizeof list));
    return HS_OK;
  }
  HS_CHECK(hs_json_expect_object(r, jf, key));
  hs_json_warn_unknown(r, jf, key, known);
  HS_CHECK(hs_json_string(r, jf, key, "preset", true, "", name, sizeof name));
  if (hs_framework_preset(name, fw) != HS_OK)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s.preset: unknown preset \"%s\" (%s)", r->file, key,
                        name, hs_framework_presets_list(list, sizeof list));
  HS_CHECK(hs_json_number(r, jf, key, "dispatch_us", false, fw->dispatch_us, HS_JNUM_NONNEG, 1e6,
                          &fw->dispatch_us));
  HS_CHECK(hs_json_number(r, jf, key, "microbatch_us", false, fw->microbatch_us, HS_JNUM_NONNEG,
                          1e6, &fw->microbatch_us));
  HS_CHECK(hs_json_bool(r, jf, key, "cuda_graphs", false, fw->cuda_graphs, &fw->cuda_graphs));
  HS_CHECK(hs_json_bool(r, jf, key, "optimizer_passes", false, fw->optimizer_passes,
                        &fw->optimizer_passes));
cleanup:
  return st;
}

cJSON *hs_framework_to_json(const hs_framework_t *fw)
{
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  cJSON_AddStringToObject(o, "preset", hs_framework_name(fw->id));
  cJSON_AddNumberToObject(o, "dispatch_us", fw->dispatch_us);
  cJSON_AddNumberToObject(o, "microbatch_us", fw->microbatch_us);
  cJSON_AddBoolToObject(o, "cuda_graphs", fw->cuda_graphs);
  cJSON_AddBoolToObject(o, "optimizer_passes", fw->optimizer_passes);
  return o;
}

/* "kernels": a preset name or {"preset", "attention", "fused_act",
 * "fused_norm", "fused_cross_entropy"} (fields override the preset);
 * "attention" at the top level overrides both; "sequence_parallel". */
static hs_status_t parse_practice(const hs_jreader_t *r, const cJSON *j, const char *file,
                                  hs_practice_t *pr, hs_error_t *err)
{
  static const char *const kknown[] = {"preset", "attention", "fused_act", "fused_norm",
                                       "fused_cross_entropy", NULL};
  hs_status_t st = HS_OK;
  char name[64];
  const cJSON *jk = cJSON_GetObjectItemCaseSensitive(j, "kernels");
  if (jk && cJSON_IsString(jk)) {
    if (hs_kernels_preset(jk->valuestring, &pr->kernels) != HS_OK)
      return hs_error_set(err, HS_EINVAL,
                          "%s: kernels: unknown preset \"%.64s\" (megatron-2021, "
                          "megatron-core-2024, unfused)",
                          file, jk->valuestring);
  } else if (jk) {
    HS_CHECK(hs_json_expect_object(r, jk, "kernels"));
    hs_json_warn_unknown(r, jk, "kernels", kknown);
    HS_CHECK(hs_json_string(r, jk, "kernels", "preset", false, HS_KERNELS_DEFAULT, name, sizeof name));
    if (hs_kernels_preset(name, &pr->kernels) != HS_OK)
      return hs_error_set(err, HS_EINVAL,
                          "%s: kernels.preset: unknown preset \"%s\" (megatron-2021, "
                          "megatron-core-2024, unfused)",
                          file, name);
    HS_CHECK(hs_json_string(r, jk, "kernels", "attention", false,
                            hs_attention_name(pr->kernels.attention), name, sizeof name));
    if (hs_attention_parse(name, &pr->kernels.attention) != HS_OK)
      return hs_error_set(err, HS_EINVAL,
                          "%s: kernels.attention: must be flash or unfused, got \"%s\"", file, name);
    HS_CHECK(hs_json_bool(r, jk, "kernels", "fused_act", false, pr->kernels.fused_act,
                          &pr->kernels.fused_act));
    HS_CHECK(hs_json_bool(r, jk, "kernels", "fused_norm", false, pr->kernels.fused_norm,
                          &pr->kernels.fused_norm));
    HS_CHECK(hs_json_bool(r, jk, "kernels", "fused_cross_entropy", false,
                          pr->kernels.fused_cross_entropy, &pr->kernels.fused_cross_entropy));
  }
  HS_CHECK(hs_json_string(r, j, "", "attention", false, hs_attention_name(pr->kernels.attention),
                          name, sizeof name));
  if (hs_attention_parse(name, &pr->kernels.attention) != HS_OK)
    return hs_error_set(err, HS_EINVAL, "%s: attention: must be flash or unfused, got \"%s\"",
                        file, name);
  HS_CHECK(hs_json_bool(r, j, "", "sequence_parallel", false, false, &pr->sequence_parallel));
  int64_t z;
  HS_CHECK(hs_json_int(r, j, "", "zero_stage", false, 0, 0, 3, &z));
  pr->zero_stage = (int32_t)z;
  HS_CHECK(hs_json_bool(r, j, "", "tp_comm_overlap", false, false, &pr->tp_comm_overlap));
  HS_CHECK(hs_json_bool(r, j, "", "dp_overlap", false, true, &pr->dp_overlap));
  HS_CHECK(hs_json_bool(r, j, "", "overlap_contention", false, true, &pr->overlap_contention));
  HS_CHECK(hs_json_int(r, j, "", "context_parallel", false, 1, 1, HS_CLUSTER_MAX_DEVICES, &z));
  pr->context_parallel = (int32_t)z;
  HS_CHECK(hs_json_int(r, j, "", "expert_parallel", false, 1, 1, HS_CLUSTER_MAX_DEVICES, &z));
  pr->expert_parallel = (int32_t)z;
  if (cJSON_GetObjectItemCaseSensitive(j, "fsdp_param_dtype")) {
    HS_CHECK(hs_json_string(r, j, "", "fsdp_param_dtype", false, "", name, sizeof name));
    pr->fsdp_param_dtype_set = true;
    if (hs_dtype_parse(name, &pr->fsdp_param_dtype) != HS_OK)
      return hs_error_set(err, HS_EINVAL,
                          "%s: fsdp_param_dtype: must be fp32, fp16, bf16 or fp8, got \"%s\"", file,
                          name);
  }
  HS_CHECK(hs_json_bool(r, j, "", "fsdp_shard_grad_op", false, false, &pr->fsdp_shard_grad_op));
  HS_CHECK(hs_json_string(r, j, "", "fsdp_backward_prefetch", false, "pre", name, sizeof name));
  if (hs_fsdp_prefetch_parse(name, &pr->fsdp_backward_post) != HS_OK)
    return hs_error_set(err, HS_EINVAL, "%s: fsdp_backward_prefetch: must be pre or post, got \"%s\"",
                        file, name);
  HS_CHECK(hs_json_string(r, j, "", "grad_accum", false, "fused", name, sizeof name));
  if (hs_grad_accum_parse(name, &pr->grad_accum) != HS_OK)
    return hs_error_set(err, HS_EINVAL,
                        "%s: grad_accum: must be fused, add, add_fp32, cast_add_fp32 or autograd, "
                        "got \"%s\"",
                        file, name);
  HS_CHECK(hs_json_string(r, j, "", "grad_reduce_dtype", false, "default", name, sizeof name));
  if (hs_grad_reduce_parse(name, &pr->grad_reduce_fp32) != HS_OK)
    return hs_error_set(err, HS_EINVAL, "%s: grad_reduce_dtype: must be fp32 or default, got \"%s\"",
                        file, name);
  HS_CHECK(hs_framework_from_json(r, j, "", &pr->framework));
cleanup:
  return st;
}

hs_status_t hs_plan_parse(const char *text, const char *file, hs_plan_t *out, hs_error_t *err)
{
  static const char *const known[] = {"strategy", "schedule", "chunks", "async_send", "precision",
                                      "optimizer_sharding", "bucket_bytes", "pipelines", "sharding",
                                      "global_batch", "model", "cluster", "device_ratios",
                                      "description", "attention", "kernels",
                                      "sequence_parallel", "zero_stage", "tp_comm_overlap",
                                      "dp_overlap", "overlap_contention", "context_parallel", "expert_parallel",
                                      "fsdp_param_dtype", "fsdp_backward_prefetch",
                                      "fsdp_shard_grad_op", "grad_accum", "grad_reduce_dtype",
                                      "framework", NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_jreader_t r = {file, err};
  hs_plan_init(out);
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  HS_CHECK(hs_json_string(&r, j, "", "strategy", false, "manual", out->strategy, sizeof out->strategy));
  HS_CHECK(hs_json_string(&r, j, "", "schedule", false, "1f1b", out->schedule, sizeof out->schedule));
  const hs_schedule_t *sc = hs_schedule_find(out->schedule);
  if (!sc)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: schedule: unknown schedule \"%s\" (gpipe, 1f1b, interleaved-1f1b, "
                         "hetero-1f1b)",
                         file, out->schedule));
  int64_t v;
  HS_CHECK(hs_json_int(&r, j, "", "chunks", false, 1, 1, 1024, &v));
  out->chunks = (int32_t)v;
  HS_CHECK(hs_json_bool(&r, j, "", "async_send", false, sc->default_async_send, &out->async_send));
  char prec[32];
  HS_CHECK(hs_json_string(&r, j, "", "precision", false, "bf16", prec, sizeof prec));
  if (hs_dtype_parse(prec, &out->precision) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: precision: must be fp32, fp16, bf16 or fp8, got \"%s\"",
                         file, prec));
  HS_CHECK(hs_json_bool(&r, j, "", "optimizer_sharding", false, false, &out->optimizer_sharding));
  HS_CHECK(parse_practice(&r, j, file, &out->practice, err));
  HS_CHECK(hs_json_number(&r, j, "", "bucket_bytes", false, 100e6, HS_JNUM_POSITIVE, 1e15,
                          &out->bucket_bytes));
  const cJSON *jp = NULL;
  int np = 0;
  HS_CHECK(hs_json_array(&r, j, "", "pipelines", true, &jp, &np));
  if (np <= 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: pipelines: must not be empty", file));
  if (np > MAX_PIPELINES)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: pipelines: too many (%d)", file, np));
  if (hs_plan_alloc_pipelines(out, np) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int k = 0;
  for (const cJSON *e = jp->child; e; e = e->next, k++) {
    char p[64];
    hs_json_path(p, sizeof p, "pipelines", NULL, k);
    HS_CHECK(parse_pipeline(&r, e, p, &out->pipelines[k]));
  }
  int64_t gb;
  HS_CHECK(hs_json_int(&r, j, "", "global_batch", false, 0, 0, INT64_C(1) << 40, &gb));
  if (gb > 0 && gb != hs_plan_global_batch(out))
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: global_batch: %lld, but the pipelines hold %lld samples "
                         "(microbatch_size x microbatches summed)",
                         file, (long long)gb, (long long)hs_plan_global_batch(out)));
  const cJSON *jsh = NULL;
  int nsh = 0;
  HS_CHECK(hs_json_array(&r, j, "", "sharding", false, &jsh, &nsh));
  if (nsh > 0) {
    out->shards = hs_calloc((size_t)nsh, sizeof *out->shards);
    if (!out->shards)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    out->n_shards = nsh;
    k = 0;
    for (const cJSON *e = jsh->child; e; e = e->next, k++) {
      char p[64], dim[32], coll[32];
      static const char *const kn[] = {"op", "dim", "collective", NULL};
      hs_json_path(p, sizeof p, "sharding", NULL, k);
      HS_CHECK(hs_json_expect_object(&r, e, p));
      hs_json_warn_unknown(&r, e, p, kn);
      int64_t op;
      HS_CHECK(hs_json_int(&r, e, p, "op", true, 0, 0, 100000000, &op));
      out->shards[k].op = (int32_t)op;
      HS_CHECK(hs_json_string(&r, e, p, "dim", true, "", dim, sizeof dim));
      uint32_t bit = 0;
      for (size_t d = 0; d < HS_ARRAY_LEN(shard_dim_names); d++)
        if (strcmp(dim, shard_dim_names[d]) == 0)
          bit = 1u << d;
      if (!bit)
        HS_FAIL(hs_error_set(err, HS_EINVAL,
                             "%s: %s.dim: must be batch, out, in, heads, experts or vocab, got \"%s\"",
                             file, p, dim));
      out->shards[k].dim = bit;
      /* the collective that converts the op's input layout; "none" */
      HS_CHECK(hs_json_string(&r, e, p, "collective", false, "none", coll, sizeof coll));
      int found = strcmp(coll, "none") == 0 ? HS_COLL__COUNT : -1;
      for (int c = 0; c < HS_COLL__COUNT; c++)
        if (strcmp(coll, hs_coll_op_name((hs_coll_op_t)c)) == 0 && c != HS_COLL_P2P)
          found = c;
      if (found < 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL,
                             "%s: %s.collective: must be none or a collective (allreduce, "
                             "reducescatter, allgather, broadcast, alltoall, padded_allgather, "
                             "grouped_broadcast), got \"%s\"",
                             file, p, coll));
      out->shards[k].collective = (hs_coll_op_t)found;
    }
  }
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_plan_destroy(out);
  return st;
}

hs_status_t hs_plan_load(const char *path, hs_plan_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_plan_init(out);
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st != HS_OK)
    return st;
  st = hs_plan_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

cJSON *hs_plan_to_json(const hs_plan_t *p)
{
  hs_json_oom_clear();
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "strategy", p->strategy);
  cJSON_AddStringToObject(j, "schedule", p->schedule);
  cJSON_AddNumberToObject(j, "chunks", p->chunks);
  cJSON_AddBoolToObject(j, "async_send", p->async_send);
  cJSON_AddStringToObject(j, "precision", hs_dtype_name(p->precision));
  cJSON_AddBoolToObject(j, "optimizer_sharding", p->optimizer_sharding);
  cJSON_AddNumberToObject(j, "bucket_bytes", p->bucket_bytes);
  cJSON_AddStringToObject(j, "attention", hs_attention_name(p->practice.kernels.attention));
  cJSON *jk = cJSON_AddObjectToObject(j, "kernels");
  if (jk) {
    const char *pn = hs_kernels_preset_name(&p->practice.kernels);
    if (pn)
      cJSON_AddStringToObject(jk, "preset", pn);
    cJSON_AddStringToObject(jk, "attention", hs_attention_name(p->practice.kernels.attention));
    cJSON_AddBoolToObject(jk, "fused_act", p->practice.kernels.fused_act);
    cJSON_AddBoolToObject(jk, "fused_norm", p->practice.kernels.fused_norm);
    cJSON_AddBoolToObject(jk, "fused_cross_entropy", p->practice.kernels.fused_cross_entropy);
  }
  cJSON_AddBoolToObject(j, "sequence_parallel", p->practice.sequence_parallel);
  cJSON_AddNumberToObject(j, "zero_stage", hs_plan_zero_stage(p));
  cJSON_AddBoolToObject(j, "tp_comm_overlap", p->practice.tp_comm_overlap);
  cJSON_AddBoolToObject(j, "dp_overlap", p->practice.dp_overlap);
  if (!p->practice.overlap_contention) /* written when off: plans without it read as on */
    cJSON_AddBoolToObject(j, "overlap_contention", false);
  cJSON_AddNumberToObject(j, "context_parallel", p->practice.context_parallel);
  cJSON_AddNumberToObject(j, "expert_parallel", p->practice.expert_parallel);
  if (p->practice.fsdp_param_dtype_set)
    cJSON_AddStringToObject(j, "fsdp_param_dtype", hs_dtype_name(p->practice.fsdp_param_dtype));
  if (p->practice.fsdp_shard_grad_op)
    cJSON_AddBoolToObject(j, "fsdp_shard_grad_op", true);
  if (p->practice.fsdp_backward_post)
    cJSON_AddStringToObject(j, "fsdp_backward_prefetch", "post");
  if (p->practice.grad_accum != HS_GRAD_ACCUM_FUSED)
    cJSON_AddStringToObject(j, "grad_accum", hs_grad_accum_name(p->practice.grad_accum));
  if (p->practice.grad_reduce_fp32)
    cJSON_AddStringToObject(j, "grad_reduce_dtype", "fp32");
  if (hs_framework_active(&p->practice.framework)) /* written when on: plans without it read as none */
    cJSON_AddItemToObject(j, "framework", hs_framework_to_json(&p->practice.framework));
  cJSON_AddNumberToObject(j, "global_batch", (double)hs_plan_global_batch(p));
  cJSON *jp = cJSON_AddArrayToObject(j, "pipelines");
  for (int32_t i = 0; jp && i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(jp, o);
    cJSON_AddNumberToObject(o, "microbatch_size", pl->microbatch_size);
    cJSON_AddNumberToObject(o, "microbatches", pl->n_microbatches);
    cJSON *js = cJSON_AddArrayToObject(o, "stages");
    for (int32_t s = 0; js && s < pl->n_stages; s++) {
      const hs_plan_stage_t *stg = &pl->stages[s];
      cJSON *so = cJSON_CreateObject();
      cJSON_AddItemToArray(js, so);
      int ops[2] = {stg->op_first, stg->op_last};
      hs_json_add(so, "ops", cJSON_CreateIntArray(ops, 2));
      cJSON_AddStringToObject(so, "recompute", hs_recompute_name(stg->recompute));
      if (stg->warmup >= 0)
        cJSON_AddNumberToObject(so, "warmup", stg->warmup);
      if (stg->order)
        cJSON_AddStringToObject(so, "order", stg->order);
      cJSON *jr = cJSON_AddArrayToObject(so, "replicas");
      for (int32_t r = 0; jr && r < stg->n_replicas; r++) {
        cJSON *ro = cJSON_CreateObject();
        cJSON_AddItemToArray(jr, ro);
        hs_json_add(ro, "devices",
                    cJSON_CreateIntArray(stg->replicas[r].devices, stg->replicas[r].n_devices));
        cJSON_AddNumberToObject(ro, "share", stg->replicas[r].share);
      }
    }
  }
  if (p->n_shards > 0) {
    cJSON *jsh = cJSON_AddArrayToObject(j, "sharding");
    for (int32_t k = 0; jsh && k < p->n_shards; k++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToArray(jsh, o);
      cJSON_AddNumberToObject(o, "op", p->shards[k].op);
      const char *dim = "batch";
      for (size_t d = 0; d < HS_ARRAY_LEN(shard_dim_names); d++)
        if (p->shards[k].dim == (1u << d))
          dim = shard_dim_names[d];
      cJSON_AddStringToObject(o, "dim", dim);
      cJSON_AddStringToObject(o, "collective", p->shards[k].collective < HS_COLL__COUNT
                                                   ? hs_coll_op_name(p->shards[k].collective)
                                                   : "none");
    }
  }
  return hs_json_finish(j);
}
