/*
 * measurements_json.c - microbenchmark points (measurements.json) and the
 * fitted profile (profile.json, the format sim/profile_json.c reads).
 *
 *   {"gpu": "H100-SXM5-80GB", "backend": "cuda", "device": "...",
 *    "peak_tflops": {"fp32": 67, "bf16": 989, ...}, "mem_bw_GBps": 3350,
 *    "points": [{"kind": "gemm", "dtype": "bf16", "m": 4096, "n": 4096, "k": 4096,
 *                "flops": 1.37e11, "s": 2.1e-4},
 *               {"kind": "mem", "bytes": 1e9, "s": 3.6e-4},
 *               {"kind": "p2p", "bytes": 1e6, "s": 1.1e-5, "ranks": 2}]}
 *
 * A GEMM point without "flops" gets 2·m·n·k. The CPU microbenchmarks add
 * "speed_probe_s": the speed probe's median over the run (HS_PROBE_KERNEL
 * on every thread at once), which the profile's "fit" carries on to the
 * replay (docs/validation.md, "Machine speed").
 *
 * Published points (clusters/calibration/<GPU>.json) say where each point
 * comes from: "sources": [{"id": "xla-sm90", "ref": "repo@commit path or URL",
 * "date": "2025"}] with dates YYYY, YYYY-MM or YYYY-MM-DD, "retrieved":
 * "YYYY-MM-DD", and "source": "<id>" per point, which must name an entry of
 * "sources" (ids unique). "applies": ["gemm_eff_max", "gemm_half_flops",
 * "mem_eff", "launch_us"] names the fitted parameters the GPU catalog takes
 * (default all). "gemm_fit" / "mem_fit": "line" (default: a sweep of sizes)
 * or "max" (the points are best-achievable rates; only the efficiency is
 * determined, so "applies" must be given and must not name gemm_half_flops,
 * or launch_us when "mem_fit" is "max"). "mem_eff_source": "<id>" (with a
 * "line" memory fit) splits the memory points: those of that source are
 * best-achievable rates for mem_eff, the others the line for launch_us; it
 * must name a source that has a memory point. Files the microbenchmarks
 * write carry none of these.
 *
 * Fused-attention points (published FlashAttention benchmarks) have no
 * time: {"kind": "attn", "dir": "fwd" | "bwd", "causal": true, "seq": 2048,
 * "head_dim": 128, "tflops": 298, "source": "fa3"}, the rate as published
 * (FlashAttention's FLOP count); all five fields required.
 */
#include "hs_json.h"
#include "validate_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 1000000

/* YYYY, YYYY-MM or YYYY-MM-DD with a month 01-12 and a day 01-31. */
static bool date_ok(const char *d)
{
  size_t n = strlen(d);
  if (n != 4 && n != 7 && n != 10)
    return false;
  for (size_t i = 0; i < n; i++) {
    bool dash = i == 4 || i == 7;
    if (dash ? d[i] != '-' : (d[i] < '0' || d[i] > '9'))
      return false;
  }
  int mo = n >= 7 ? (d[5] - '0') * 10 + (d[6] - '0') : 1;
  int dy = n == 10 ? (d[8] - '0') * 10 + (d[9] - '0') : 1;
  return mo >= 1 && mo <= 12 && dy >= 1 && dy <= 31;
}

cJSON *hs_measurements_to_json(const hs_measurements_t *m)
{
  hs_json_oom_clear(); /* members cJSON drops when out of memory fail the whole tree */
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  cJSON_AddStringToObject(j, "gpu", m->gpu);
  cJSON_AddStringToObject(j, "backend", m->backend);
  cJSON_AddStringToObject(j, "device", m->device);
  cJSON *pk = cJSON_AddObjectToObject(j, "peak_tflops");
  for (int d = 0; pk && d < HS_DTYPE__COUNT; d++)
    cJSON_AddNumberToObject(pk, hs_dtype_name((hs_dtype_t)d), m->peak_flops[d] / 1e12);
  cJSON_AddNumberToObject(j, "mem_bw_GBps", m->mem_bw_GBps);
  if (m->retrieved[0])
    cJSON_AddStringToObject(j, "retrieved", m->retrieved);
  if (m->speed_probe_s > 0)
    cJSON_AddNumberToObject(j, "speed_probe_s", m->speed_probe_s);
  if (m->gemm_fit_max || m->gemm_fit_shape)
    cJSON_AddStringToObject(j, "gemm_fit", m->gemm_fit_max ? "max" : "shape");
  if (m->mem_fit_max)
    cJSON_AddStringToObject(j, "mem_fit", "max");
  if (m->mem_eff_source > 0 && m->mem_eff_source <= m->n_sources)
    cJSON_AddStringToObject(j, "mem_eff_source", m->sources[m->mem_eff_source - 1].id);
  if (m->gemm_sustained_source > 0 && m->gemm_sustained_source <= m->n_sources)
    cJSON_AddStringToObject(j, "gemm_sustained_source", m->sources[m->gemm_sustained_source - 1].id);
  static const char *const fit_names[] = {"gemm_eff_max", "gemm_half_flops", "mem_eff", "launch_us",
                                          "gemm_out_k", "", "gemm_sustained_eff"};
  cJSON *aa = m->applies ? cJSON_AddArrayToObject(j, "applies") : NULL;
  for (unsigned q = 0; aa && q < HS_ARRAY_LEN(fit_names); q++)
    if (m->applies & (1u << q))
      cJSON_AddItemToArray(aa, cJSON_CreateString(fit_names[q]));
  if (m->n_sources > 0) {
    cJSON *sa = cJSON_AddArrayToObject(j, "sources");
    for (int32_t i = 0; sa && i < m->n_sources; i++) {
      cJSON *o = cJSON_CreateObject();
      if (!o)
        break;
      cJSON_AddStringToObject(o, "id", m->sources[i].id);
      cJSON_AddStringToObject(o, "ref", m->sources[i].ref);
      cJSON_AddStringToObject(o, "date", m->sources[i].date);
      cJSON_AddItemToArray(sa, o);
    }
  }
  cJSON *arr = cJSON_AddArrayToObject(j, "points");
  for (int32_t i = 0; arr && i < m->n; i++) {
    const hs_mb_point_t *p = &m->p[i];
    cJSON *o = cJSON_CreateObject();
    if (!o)
      break;
    cJSON_AddStringToObject(o, "kind", hs_mb_kind_name(p->kind));
    if (p->kind == HS_MB_ATTN) {
      cJSON_AddStringToObject(o, "dir", p->bwd ? "bwd" : "fwd");
      cJSON_AddBoolToObject(o, "causal", p->causal);
      cJSON_AddNumberToObject(o, "seq", (double)p->m);
      cJSON_AddNumberToObject(o, "head_dim", (double)p->k);
      cJSON_AddNumberToObject(o, "tflops", p->tflops);
    } else if (p->kind == HS_MB_GEMM) {
      cJSON_AddStringToObject(o, "dtype", hs_dtype_name(p->dtype));
      cJSON_AddNumberToObject(o, "m", (double)p->m);
      cJSON_AddNumberToObject(o, "n", (double)p->n);
      cJSON_AddNumberToObject(o, "k", (double)p->k);
      cJSON_AddNumberToObject(o, "flops", p->flops);
    } else {
      cJSON_AddNumberToObject(o, "bytes", p->bytes);
      if (p->ranks > 0)
        cJSON_AddNumberToObject(o, "ranks", p->ranks);
    }
    if (p->kind != HS_MB_ATTN)
      cJSON_AddNumberToObject(o, "s", p->s);
    if (p->source > 0 && p->source <= m->n_sources)
      cJSON_AddStringToObject(o, "source", m->sources[p->source - 1].id);
    cJSON_AddItemToArray(arr, o);
  }
  return hs_json_finish(j);
}

/* 1-based index of source `id` in m->sources; 0 when id is "" or unknown. */
static int32_t source_index(const hs_measurements_t *m, const char *id)
{
  for (int32_t q = 0; id[0] && q < m->n_sources; q++)
    if (strcmp(m->sources[q].id, id) == 0)
      return q + 1;
  return 0;
}

/* Optional top-level `key` naming a source id: *index = its 1-based index
 * into out->sources (0 when absent); an unknown id is an error naming the
 * file, the key and the id. The id goes to id[0..n). */
static hs_status_t source_ref(const hs_jreader_t *r, const cJSON *j, const char *key, const hs_measurements_t *out,
                              char *id, size_t n, int32_t *index)
{
  hs_status_t st = hs_json_string(r, j, "", key, false, "", id, n);
  if (st != HS_OK)
    return st;
  *index = source_index(out, id);
  if (id[0] && !*index)
    return hs_error_set(r->err, HS_EINVAL, "%s: %s: \"%s\" is not an id of \"sources\"", r->file, key, id);
  return HS_OK;
}

/* Whether source `src` (named `id` by top-level `key`) has a point of
 * `kind`; an error naming the file, the key and the id when it has none. */
static hs_status_t source_has(const hs_jreader_t *r, const hs_measurements_t *m, const char *key, const char *id,
                              int32_t src, hs_mb_kind_t kind)
{
  for (int32_t i = 0; i < m->n; i++)
    if (m->p[i].kind == kind && m->p[i].source == src)
      return HS_OK;
  return hs_error_set(r->err, HS_EINVAL, "%s: %s: \"%s\" has no \"%s\" point", r->file, key, id,
                      hs_mb_kind_name(kind));
}

/* The keys and fit parameter names of measurements.json (fit_names[q] is
 * the parameter of bit q of hs_fit_t.fitted; "" for a bit no file names). */
static const char *const fit_names[] = {"gemm_eff_max", "gemm_half_flops", "mem_eff", "launch_us",
                                        "gemm_out_k", "", "gemm_sustained_eff"};
static const char *const kpt[] = {"kind", "dtype", "m", "n", "k", "flops", "bytes", "ranks", "s",
                                  "source", "dir", "causal", "seq", "head_dim", "tflops", NULL};
static const char *const ksrc[] = {"id", "ref", "date", NULL};

/* "applies" (the parameters the catalog takes) and the GEMM and memory fit
 * kinds ("line", "max", "shape"), checked against each other: a "max" fit
 * needs "applies" without the size term it leaves undetermined, and
 * gemm_out_k needs a "shape" GEMM fit. */
static hs_status_t parse_fits(const hs_jreader_t *r, const cJSON *j, hs_measurements_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *aarr = NULL;
  int na = 0;
  HS_CHECK(hs_json_array(r, j, "", "applies", false, &aarr, &na));
  int ai = 0;
  for (const cJSON *e = aarr ? aarr->child : NULL; e; e = e->next, ai++) {
    uint32_t bit = 0;
    for (unsigned q = 0; cJSON_IsString(e) && q < HS_ARRAY_LEN(fit_names); q++)
      if (fit_names[q][0] && strcmp(e->valuestring, fit_names[q]) == 0)
        bit = 1u << q;
    if (!bit)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: applies[%d]: must be gemm_eff_max, gemm_half_flops, "
                           "mem_eff, launch_us, gemm_out_k or gemm_sustained_eff", file, ai));
    out->applies |= bit;
  }
  if (aarr && !out->applies)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: applies: empty (leave it out for all parameters)", file));
  for (int q = 0; q < 2; q++) {
    const char *key = q ? "mem_fit" : "gemm_fit";
    char how[16];
    HS_CHECK(hs_json_string(r, j, "", key, false, "line", how, sizeof how));
    bool shape = !q && strcmp(how, "shape") == 0;
    if (strcmp(how, "line") != 0 && strcmp(how, "max") != 0 && !shape)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: must be \"line\"%s or \"max\", got \"%s\"",
                           file, key, q ? "" : ", \"shape\"", how));
    bool max = strcmp(how, "max") == 0;
    if (shape)
      out->gemm_fit_shape = true;
    /* a "max" fit determines the efficiency only: the catalog may not take the
     * size term it leaves undetermined */
    uint32_t undetermined = q ? HS_FIT_LAUNCH_US : HS_FIT_GEMM_HALF_FLOPS;
    if (max && !out->applies)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: \"max\" needs \"applies\" (it determines %s "
                           "only)", file, key, q ? "mem_eff" : "gemm_eff_max"));
    if (max && (out->applies & undetermined))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: applies: %s is not determined by %s \"max\"", file,
                           fit_names[q ? 3 : 1], key));
    if (q)
      out->mem_fit_max = max;
    else
      out->gemm_fit_max = max;
  }
  if ((out->applies & HS_FIT_GEMM_OUT_K) && !out->gemm_fit_shape)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: applies: gemm_out_k needs \"gemm_fit\": \"shape\"",
                         file));
cleanup:
  return st;
}

/* The optional "sources" array: each with a unique non-empty id, a ref and
 * a date (at most HS_MB_SOURCES_MAX). */
static hs_status_t parse_sources(const hs_jreader_t *r, const cJSON *j, hs_measurements_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  const cJSON *sarr = NULL;
  int ns = 0;
  HS_CHECK(hs_json_array(r, j, "", "sources", false, &sarr, &ns));
  if (ns > HS_MB_SOURCES_MAX)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: sources: %d entries (max %d)", file, ns,
                         HS_MB_SOURCES_MAX));
  for (const cJSON *e = sarr ? sarr->child : NULL; e; e = e->next) {
    char p[48];
    hs_mb_source_t *src = &out->sources[out->n_sources];
    hs_json_path(p, sizeof p, "sources", NULL, out->n_sources);
    HS_CHECK(hs_json_expect_object(r, e, p));
    hs_json_warn_unknown(r, e, p, ksrc);
    HS_CHECK(hs_json_string(r, e, p, "id", true, "", src->id, sizeof src->id));
    HS_CHECK(hs_json_string(r, e, p, "ref", true, "", src->ref, sizeof src->ref));
    HS_CHECK(hs_json_string(r, e, p, "date", true, "", src->date, sizeof src->date));
    if (!src->id[0] || !src->ref[0])
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s: id and ref must not be empty", file, p));
    if (!date_ok(src->date))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.date: must be YYYY, YYYY-MM or YYYY-MM-DD, got \"%s\"",
                           file, p, src->date));
    for (int32_t q = 0; q < out->n_sources; q++)
      if (strcmp(out->sources[q].id, src->id) == 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.id: \"%s\" already names sources[%d]", file, p,
                             src->id, q));
    out->n_sources++;
  }
cleanup:
  return st;
}

/* Point k (object e at path p): its kind and, by kind, time and size (GEMM
 * shape and dtype; fused-attention direction, mask, shape and rate; bytes
 * and ranks), and its source, appended to out. */
static hs_status_t parse_point(const hs_jreader_t *r, const cJSON *e, int k, hs_measurements_t *out)
{
  hs_status_t st = HS_OK;
  hs_error_t *err = r->err;
  const char *file = r->file;
  char p[48], kind[16], dt[16];
  hs_json_path(p, sizeof p, "points", NULL, k);
  HS_CHECK(hs_json_expect_object(r, e, p));
  hs_json_warn_unknown(r, e, p, kpt);
  hs_mb_point_t pt;
  memset(&pt, 0, sizeof pt);
  HS_CHECK(hs_json_string(r, e, p, "kind", true, "", kind, sizeof kind));
  bool found = false;
  for (int q = 0; q <= HS_MB_ATTN; q++)
    if (strcmp(kind, hs_mb_kind_name((hs_mb_kind_t)q)) == 0) {
      pt.kind = (hs_mb_kind_t)q;
      found = true;
    }
  if (!found)
    HS_FAIL(hs_error_set(err, HS_EINVAL,
                         "%s: %s.kind: must be gemm, mem, p2p, h2d, allreduce or attn, got \"%s\"",
                         file, p, kind));
  if (pt.kind != HS_MB_ATTN)
    HS_CHECK(hs_json_number(r, e, p, "s", true, 0, HS_JNUM_POSITIVE, 1e6, &pt.s));
  if (pt.kind == HS_MB_ATTN) {
    /* a published fused-attention rate: direction, mask, shape, TFLOP/s */
    char dir[8];
    HS_CHECK(hs_json_string(r, e, p, "dir", true, "", dir, sizeof dir));
    if (strcmp(dir, "fwd") != 0 && strcmp(dir, "bwd") != 0)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.dir: must be fwd or bwd, got \"%s\"", file, p, dir));
    pt.bwd = dir[0] == 'b';
    HS_CHECK(hs_json_bool(r, e, p, "causal", true, false, &pt.causal));
    HS_CHECK(hs_json_int(r, e, p, "seq", true, 1, 1, INT64_C(1) << 24, &pt.m));
    HS_CHECK(hs_json_int(r, e, p, "head_dim", true, 1, 1, 1024, &pt.k));
    HS_CHECK(hs_json_number(r, e, p, "tflops", true, 0, HS_JNUM_POSITIVE, 1e6, &pt.tflops));
  } else if (pt.kind == HS_MB_GEMM) {
    HS_CHECK(hs_json_string(r, e, p, "dtype", false, "fp32", dt, sizeof dt));
    if (hs_dtype_parse(dt, &pt.dtype) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.dtype: unknown dtype \"%s\"", file, p, dt));
    HS_CHECK(hs_json_int(r, e, p, "m", true, 1, 1, INT64_C(1) << 32, &pt.m));
    HS_CHECK(hs_json_int(r, e, p, "n", true, 1, 1, INT64_C(1) << 32, &pt.n));
    HS_CHECK(hs_json_int(r, e, p, "k", true, 1, 1, INT64_C(1) << 32, &pt.k));
    HS_CHECK(hs_json_number(r, e, p, "flops", false, 2.0 * (double)pt.m * (double)pt.n * (double)pt.k,
                            HS_JNUM_POSITIVE, 1e30, &pt.flops));
  } else {
    HS_CHECK(hs_json_number(r, e, p, "bytes", true, 0, HS_JNUM_POSITIVE, 1e18, &pt.bytes));
    int64_t ranks = 0;
    HS_CHECK(hs_json_int(r, e, p, "ranks", false, 0, 0, 1 << 24, &ranks));
    pt.ranks = (int32_t)ranks;
  }
  char sid[sizeof out->sources[0].id];
  HS_CHECK(hs_json_string(r, e, p, "source", false, "", sid, sizeof sid));
  pt.source = source_index(out, sid);
  if (sid[0] && !pt.source)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %s.source: \"%s\" is not an id of \"sources\"", file,
                         p, sid));
  if (hs_measurements_add(out, &pt) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
cleanup:
  return st;
}

hs_status_t hs_measurements_parse(const char *text, const char *file, hs_measurements_t *out,
                                  hs_error_t *err)
{
  static const char *const known[] = {"gpu", "backend", "device", "peak_tflops", "mem_bw_GBps",
                                      "points", "description", "sources", "retrieved", "applies",
                                      "gemm_fit", "mem_fit", "mem_eff_source", "gemm_sustained_source",
                                      "speed_probe_s", NULL};
  hs_status_t st = HS_OK;
  cJSON *j = NULL;
  hs_measurements_init(out);
  if (!file)
    file = "measurements.json";
  hs_jreader_t r = {file, err};
  HS_CHECK(hs_json_parse(text, file, &j, err));
  HS_CHECK(hs_json_expect_object(&r, j, ""));
  hs_json_warn_unknown(&r, j, "", known);
  HS_CHECK(hs_json_string(&r, j, "", "gpu", true, "", out->gpu, sizeof out->gpu));
  HS_CHECK(hs_json_string(&r, j, "", "backend", false, "", out->backend, sizeof out->backend));
  HS_CHECK(hs_json_string(&r, j, "", "device", false, "", out->device, sizeof out->device));
  const cJSON *pk = NULL;
  HS_CHECK(hs_json_object(&r, j, "", "peak_tflops", true, &pk));
  for (int d = 0; d < HS_DTYPE__COUNT; d++) {
    double v = 0;
    HS_CHECK(hs_json_number(&r, pk, "peak_tflops", hs_dtype_name((hs_dtype_t)d), false, 0,
                            HS_JNUM_NONNEG, 1e9, &v));
    out->peak_flops[d] = v * 1e12;
  }
  HS_CHECK(hs_json_number(&r, j, "", "mem_bw_GBps", true, 0, HS_JNUM_POSITIVE, 1e9,
                          &out->mem_bw_GBps));
  HS_CHECK(hs_json_number(&r, j, "", "speed_probe_s", false, 0, HS_JNUM_POSITIVE, 1e3,
                          &out->speed_probe_s));
  HS_CHECK(hs_json_string(&r, j, "", "retrieved", false, "", out->retrieved, sizeof out->retrieved));
  if (out->retrieved[0] && (strlen(out->retrieved) != 10 || !date_ok(out->retrieved)))
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: retrieved: must be a date YYYY-MM-DD, got \"%s\"",
                         file, out->retrieved));
  HS_CHECK(parse_fits(&r, j, out));
  HS_CHECK(parse_sources(&r, j, out));
  char msid[sizeof out->sources[0].id], gsid[sizeof out->sources[0].id];
  HS_CHECK(source_ref(&r, j, "mem_eff_source", out, msid, sizeof msid, &out->mem_eff_source));
  if (out->mem_eff_source && out->mem_fit_max)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: mem_eff_source: needs a \"line\" memory fit, got "
                         "\"mem_fit\": \"max\"", file));
  HS_CHECK(source_ref(&r, j, "gemm_sustained_source", out, gsid, sizeof gsid, &out->gemm_sustained_source));
  if (out->gemm_sustained_source && out->gemm_fit_max)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: gemm_sustained_source: needs a \"line\" or \"shape\" GEMM "
                         "fit beside it, got \"gemm_fit\": \"max\"", file));
  if ((out->applies & HS_FIT_GEMM_SUSTAINED) && !out->gemm_sustained_source)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: applies: gemm_sustained_eff needs \"gemm_sustained_source\"",
                         file));
  const cJSON *arr = NULL;
  int n = 0;
  HS_CHECK(hs_json_array(&r, j, "", "points", true, &arr, &n));
  if (n > MAX_POINTS)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: points: %d entries (max %d)", file, n, MAX_POINTS));
  int k = 0;
  for (const cJSON *e = arr->child; e; e = e->next, k++)
    HS_CHECK(parse_point(&r, e, k, out));
  if (out->mem_eff_source)
    HS_CHECK(source_has(&r, out, "mem_eff_source", msid, out->mem_eff_source, HS_MB_MEM));
  if (out->gemm_sustained_source)
    HS_CHECK(source_has(&r, out, "gemm_sustained_source", gsid, out->gemm_sustained_source, HS_MB_GEMM));
cleanup:
  hs_json_free(j);
  if (st != HS_OK)
    hs_measurements_destroy(out);
  return st;
}

hs_status_t hs_measurements_load(const char *path, hs_measurements_t *out, hs_error_t *err)
{
  char *text = NULL;
  hs_measurements_init(out);
  hs_status_t st = hs_file_read(path, HS_JSON_MAX_BYTES, &text, NULL, err);
  if (st == HS_OK)
    st = hs_measurements_parse(text, hs_basename(path), out, err);
  free(text);
  return st;
}

cJSON *hs_profile_to_json(const hs_measurements_t *ms, const hs_fit_t *f)
{
  cJSON *j = cJSON_CreateObject();
  if (!j)
    return NULL;
  char src[256];
  snprintf(src, sizeof src, "hetsim calibrate (%s backend%s%s)", ms->backend[0] ? ms->backend : "?",
           ms->device[0] ? ": " : "", ms->device);
  cJSON_AddStringToObject(j, "source", src);
  cJSON *arr = cJSON_AddArrayToObject(j, "gpus");
  cJSON *g = cJSON_CreateObject();
  if (!arr || !g) {
    cJSON_Delete(g);
    cJSON_Delete(j);
    return NULL;
  }
  cJSON_AddItemToArray(arr, g);
  cJSON_AddStringToObject(g, "name", ms->gpu);
  /* a "max" fit leaves size terms undetermined: the profile omits them and
   * the catalog's values stay (every profile field is optional) */
  cJSON_AddNumberToObject(g, "gemm_eff_max", f->gemm_eff_max);
  if (f->fitted & HS_FIT_GEMM_HALF_FLOPS)
    cJSON_AddNumberToObject(g, "gemm_half_flops", f->gemm_half_flops);
  if (f->fitted & HS_FIT_MEM_EFF)
    cJSON_AddNumberToObject(g, "mem_eff", f->mem_eff);
  if (f->fitted & HS_FIT_LAUNCH_US)
    cJSON_AddNumberToObject(g, "launch_us", f->launch_us);
  if (f->fitted & HS_FIT_GEMM_OUT_K)
    cJSON_AddNumberToObject(g, "gemm_out_k", f->gemm_out_k);
  if (f->fitted & HS_FIT_GEMM_SUSTAINED)
    cJSON_AddNumberToObject(g, "gemm_sustained_eff", f->gemm_sustained_eff);
  if (f->fitted & HS_FIT_ATTN) {
    cJSON_AddNumberToObject(g, "attn_fwd_eff_max", f->attn_fwd_eff_max);
    cJSON_AddNumberToObject(g, "attn_fwd_half_seq", f->attn_fwd_half_seq);
    cJSON_AddNumberToObject(g, "attn_bwd_eff_max", f->attn_bwd_eff_max);
    cJSON_AddNumberToObject(g, "attn_bwd_half_seq", f->attn_bwd_half_seq);
  }
  cJSON *fit = cJSON_AddObjectToObject(g, "fit");
  if (fit) {
    cJSON_AddStringToObject(fit, "gemm_dtype", hs_dtype_name(f->dtype));
    cJSON_AddNumberToObject(fit, "gemm_points", f->n_gemm);
    cJSON_AddNumberToObject(fit, "gemm_r2", f->gemm_r2);
    cJSON_AddNumberToObject(fit, "gemm_median_rel_err", f->gemm_median_rel_err);
    cJSON_AddNumberToObject(fit, "gemm_max_rel_err", f->gemm_max_rel_err);
    cJSON_AddNumberToObject(fit, "mem_points", f->n_mem);
    cJSON_AddNumberToObject(fit, "mem_r2", f->mem_r2);
    cJSON_AddNumberToObject(fit, "mem_median_rel_err", f->mem_median_rel_err);
    cJSON_AddNumberToObject(fit, "mem_max_rel_err", f->mem_max_rel_err);
    cJSON_AddBoolToObject(fit, "clamped", f->clamped);
    if (f->fitted & HS_FIT_ATTN) {
      cJSON_AddNumberToObject(fit, "attn_fwd_points", f->n_attn_fwd);
      cJSON_AddBoolToObject(fit, "attn_fwd_causal", f->attn_fwd_causal);
      cJSON_AddNumberToObject(fit, "attn_bwd_points", f->n_attn_bwd);
      cJSON_AddBoolToObject(fit, "attn_bwd_causal", f->attn_bwd_causal);
      cJSON_AddNumberToObject(fit, "attn_median_rel_err", f->attn_median_rel_err);
      cJSON_AddNumberToObject(fit, "attn_max_rel_err", f->attn_max_rel_err);
    }
    if (f->n_p2p >= 2) {
      cJSON_AddNumberToObject(fit, "p2p_points", f->n_p2p);
      cJSON_AddNumberToObject(fit, "p2p_latency_us", f->p2p_latency_us);
      cJSON_AddNumberToObject(fit, "p2p_GBps", f->p2p_GBps);
      cJSON_AddNumberToObject(fit, "p2p_r2", f->p2p_r2);
      cJSON_AddNumberToObject(fit, "p2p_median_rel_err", f->p2p_median_rel_err);
    }
    if (ms->speed_probe_s > 0) {
      cJSON_AddStringToObject(fit, "speed_probe", HS_PROBE_KERNEL);
      cJSON_AddNumberToObject(fit, "speed_probe_s", ms->speed_probe_s);
    }
  }
  return j;
}

hs_status_t hs_profile_speed_probe(const char *path, const char *gpu, double *probe_s,
                                   hs_error_t *err)
{
  cJSON *j = NULL;
  *probe_s = 0.0;
  hs_status_t st = hs_json_load_file(path, &j, err);
  if (st != HS_OK)
    return st;
  const char *file = hs_basename(path);
  hs_jreader_t r = {file, err};
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "gpus");
  int k = 0;
  for (const cJSON *e = cJSON_IsArray(arr) ? arr->child : NULL; e; e = e->next, k++) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *fit = cJSON_GetObjectItemCaseSensitive(e, "fit");
    if (!cJSON_IsString(name) || strcmp(name->valuestring, gpu) != 0 || !cJSON_IsObject(fit))
      continue;
    char p[64];
    snprintf(p, sizeof p, "gpus[%d].fit", k);
    st = hs_json_number(&r, fit, p, "speed_probe_s", false, 0, HS_JNUM_POSITIVE, 1e3, probe_s);
    break;
  }
  hs_json_free(j);
  return st;
}
