/*
 * fuzz_megatron_log.c - Megatron-LM training logs (`hetsim import
 * megatron-log`): hs_megatron_log_parse, then the run.json writer, whose
 * output is read back by hs_run_parse (which may refuse a model the
 * generator does not accept, but must not crash or leak).
 */
#include "fuzz_util.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_megatron_opts_t o;
  hs_megatron_opts_init(&o);
  o.skip = size > 0 ? data[0] % 3 : 1;
  hs_run_t r;
  if (hs_megatron_log_parse(text, "fuzz-train.log", &o, &r, &err) == HS_OK) {
    if (r.measured.n_iterations < 1 || !(r.measured.iteration_time_s > 0))
      abort();
    cJSON *j = hs_run_to_json(&r);
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (s) {
      hs_run_t back;
      hs_error_t e2;
      hs_error_init(&e2);
      e2.warn_fp = NULL;
      if (hs_run_parse(s, "roundtrip.json", &back, &e2) == HS_OK &&
          back.measured.n_iterations != r.measured.n_iterations)
        abort();
      hs_run_destroy(&back);
      free(s);
    }
  }
  hs_run_destroy(&r);
  free(text);
  return 0;
}
