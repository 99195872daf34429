/*
 * fuzz_model_common.h - what the two model targets do with a model that
 * loaded: every accounting function, the summary JSON, and the documented
 * round trip through the explicit-op JSON (hs_model_to_ops_json must read
 * back to the same number of ops); a broken round trip aborts, which the
 * fuzzer reports as a crash. fuzz_model_run is both targets' whole body,
 * given their loader.
 */
#ifndef HS_FUZZ_MODEL_COMMON_H
#define HS_FUZZ_MODEL_COMMON_H

#include "fuzz_util.h"
#include "hs_models.h"

#include <cjson/cJSON.h>
#include <stdio.h>

static inline void fuzz_model_exercise(const hs_model_t *m)
{
  hs_model_totals_t t;
  hs_model_totals(m, 0, m->n_ops, &t);
  hs_model_layer_totals(m, 0, &t);
  (void)hs_model_layers(m);
  hs_model_flops_t f;
  hs_model_flops(m, 1.0, &f);
  cJSON *j = hs_model_to_json(m);
  char *s = j ? cJSON_PrintUnformatted(j) : NULL;
  free(s);
  cJSON_Delete(j);
  /* Round trip, for models small enough to keep executions fast. */
  if (m->n_ops > 2000)
    return;
  cJSON *ops = hs_model_to_ops_json(m);
  char *txt = ops ? cJSON_PrintUnformatted(ops) : NULL;
  cJSON_Delete(ops);
  if (!txt)
    return;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_model_t back;
  hs_model_init(&back);
  hs_status_t st = hs_model_parse_json(txt, "roundtrip.json", 0, &back, &err);
  if (st == HS_OK && back.n_ops != m->n_ops) {
    fprintf(stderr, "round trip: %zu ops became %zu\n", m->n_ops, back.n_ops);
    abort();
  }
  if (st != HS_OK && st != HS_ENOMEM) {
    fprintf(stderr, "round trip of a loaded model failed: %s\n", err.msg);
    abort();
  }
  hs_model_destroy(&back);
  free(txt);
}

/* A model loader's signature (hs_model_parse_json, hs_model_parse_hf_config). */
typedef hs_status_t (*fuzz_model_parse_fn)(const char *text, const char *file, int64_t seq_len,
                                           hs_model_t *m, hs_error_t *err);

/* One fuzz input through `parse` as `file`, then fuzz_model_exercise on
 * what loaded: the whole body of both model targets. */
static inline int fuzz_model_run(const uint8_t *data, size_t size, fuzz_model_parse_fn parse,
                                 const char *file)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_model_t m;
  hs_model_init(&m);
  if (parse(text, file, 0, &m, &err) == HS_OK)
    fuzz_model_exercise(&m);
  hs_model_destroy(&m);
  free(text);
  return 0;
}

#endif
