/*
 * fuzz_profile.c - device profile JSON (written by `hetsim calibrate`):
 * hs_profile_parse applied to a fresh copy of the 8-GPU fixture cluster's
 * catalog entries, then the compute model on every GPU, which must stay
 * finite and non-negative (abort otherwise).
 */
#include "fuzz_fixture.h"
#include "fuzz_util.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  hs_cluster_t c;
  hs_cluster_init(&c);
  if (hs_cluster_parse(FUZZ_CLUSTER_JSON, "fuzz-8gpu.json", &c, &err) != HS_OK)
    goto done; /* only out of memory can get here */
  if (hs_profile_parse(text, "fuzz-profile.json", &c, &err) == HS_OK) {
    hs_model_t m;
    fuzz_fixture_model(&m);
    for (size_t g = 0; g < c.gpus.n; g++)
      for (size_t i = 0; i < m.n_ops; i++)
        for (int ph = 0; ph < 2; ph++) {
          double s = hs_compute_op_s(&c.gpus.gpus[g], HS_DTYPE_BF16, &m.ops[i], 4.0, 2,
                                     (hs_phase_t)ph);
          if (!(s >= 0.0) || !isfinite(s)) {
            fprintf(stderr, "compute time of %s on %s is %g\n", m.ops[i].name,
                    c.gpus.gpus[g].name, s);
            abort();
          }
        }
  }
done:
  hs_cluster_destroy(&c);
  free(text);
  return 0;
}
