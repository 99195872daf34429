/*
 * fuzz_published.c - row files of the published validation suite
 * (`hetsim validate --published`): hs_pub_table_parse, then the options
 * mapping of every row and the results writer on an empty result set.
 */
#include "fuzz_util.h"
#include "hs_validate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_pub_table_t t;
  hs_pub_table_init(&t);
  if (hs_pub_table_parse(text, "fuzz-published.json", &t, &err) == HS_OK) {
    hs_pub_result_t *res = calloc((size_t)t.n_rows, sizeof *res);
    for (int32_t i = 0; res && i < t.n_rows; i++) {
      hs_pub_setup_t s;
      memset(&s, 0, sizeof s);
      res[i].not_modelled = hs_pub_options_map(&t.rows[i].opt, &s);
      if (!t.rows[i].model_json || !t.rows[i].cluster_json)
        abort(); /* parse promised both texts */
    }
    hs_pub_summary_t sum;
    memset(&sum, 0, sizeof sum);
    cJSON *j = res ? hs_pub_to_json(&t, res, &sum) : NULL;
    cJSON_Delete(j);
    free(res);
  }
  hs_pub_table_destroy(&t);
  free(text);
  return 0;
}
