/*
 * fuzz_torch_trace.c - PyTorch profiler traces (`hetsim import
 * torch-profiler`): hs_torch_trace_parse, then the import into points and a
 * measured run, whose breakdown must stay inside each step.
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
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_torch_trace_t t;
  if (hs_torch_trace_parse(text, "fuzz-trace.json", &t, &err) == HS_OK) {
    hs_measurements_t ms;
    hs_measurements_init(&ms);
    hs_measured_t m;
    hs_tp_summary_t sum;
    if (hs_torch_profiler_import(&t, &ms, &m, &sum, &err) == HS_OK) {
      if (m.n_iterations != sum.n_steps || m.compute_s < 0 || m.comm_exposed_s < 0 ||
          m.idle_s < 0 || !isfinite(m.compute_s + m.comm_exposed_s + m.idle_s))
        abort();
      for (int32_t i = 0; i < ms.n; i++)
        if (!(ms.p[i].s > 0))
          abort();
      hs_measured_destroy(&m);
    }
    hs_measurements_destroy(&ms);
  }
  hs_torch_trace_destroy(&t);
  free(text);
  return 0;
}
