/*
 * fuzz_nccl_tests.c - nccl-tests output (`hetsim import nccl-tests`):
 * hs_nccl_tests_parse with the collective and ranks inferred, then told
 * (all_gather, 2 ranks; the first byte picks which), then the per-row
 * conventions the parser promises must hold on what it accepted.
 */
#include "fuzz_util.h"
#include "hs_validate.h"

#include <math.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_nt_opts_t o;
  hs_nt_opts_init(&o);
  if (size > 0 && (data[0] & 1)) {
    o.coll = HS_NT_ALL_GATHER;
    o.nranks = 2;
  }
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_nccl_tests_t t;
  if (hs_nccl_tests_parse(text, "fuzz-nccl.txt", &o, &t, &err) == HS_OK) {
    double f = hs_nt_busbw_factor(t.coll, t.nranks);
    if (t.n_rows < 1 || t.nranks < 2 || !(f >= 0 && f < 2)) {
      fprintf(stderr, "accepted a file with %d rows, %d ranks\n", t.n_rows, t.nranks);
      abort();
    }
    for (int32_t i = 0; i < t.n_rows; i++)
      if (!(t.rows[i].time_us[0] > 0) || !(t.rows[i].time_us[1] > 0) ||
          fabs(t.rows[i].busbw_GBps[0] - t.rows[i].algbw_GBps[0] * f) > 0.005 + 0.005 * f + 1e-9) {
        fprintf(stderr, "row %d breaks the parser's invariants\n", i);
        abort();
      }
  }
  hs_nccl_tests_destroy(&t);
  free(text);
  return 0;
}
