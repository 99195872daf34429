/*
 * layout.c - an uneven pipeline layout: the transformer blocks of each
 * (virtual) pipeline stage given as a list of counts, turned into the op
 * boundaries of the stages (hs_plan_grid's `stage_layers`).
 *
 * Stage k of n is, for interleaved 1F1B with v chunks on p ranks, chunk
 * k / p of rank k % p (Megatron's virtual pipeline order), so counts[k]
 * lists the layers of virtual stage k. Ops outside blocks stay with their
 * neighbours as in the even split: the embedding (ops before block 0) with
 * stage 0, the final norm, head and loss (ops after the last block) with
 * stage n-1. A count may be 0 only where the stage then still holds ops:
 * stage 0 alone with the embedding (Llama 3's "first model chunk on the
 * first stage has only the embedding"), stage n-1 alone with the head and
 * loss. Invariants on success: n+1 boundaries, bounds[0] = 0, bounds[n] =
 * n_ops, strictly increasing (no empty stage). O(n + ops).
 */
#include "hs_sim.h"

hs_status_t hs_layout_bounds(const hs_model_t *m, const int32_t *counts, int32_t n, int32_t *bounds,
                             hs_error_t *err)
{
  int32_t n_layers = 0;
  for (size_t i = 0; i < m->n_ops; i++)
    n_layers = HS_MAX(n_layers, m->ops[i].layer + 1);
  if (n <= 0 || !counts)
    return hs_error_set(err, HS_EINVAL, "stage_layers: needs one count per pipeline stage, got %d", n);
  if (n_layers <= 0)
    return hs_error_set(err, HS_EINVAL, "stage_layers: model %s has no transformer blocks to lay out",
                        m->name);
  int64_t sum = 0;
  for (int32_t k = 0; k < n; k++) {
    if (counts[k] < 0 || counts[k] > n_layers)
      return hs_error_set(err, HS_EINVAL, "stage_layers[%d]: must be 0 to %d layers, got %d", k,
                          n_layers, counts[k]);
    sum += counts[k];
  }
  if (sum != n_layers)
    return hs_error_set(err, HS_EINVAL, "stage_layers: the counts sum to %lld layers, model %s has %d",
                        (long long)sum, m->name, n_layers);
  /* ops of a block are contiguous and blocks in order in the model */
  size_t after_last_block = 0;
  for (size_t i = 0; i < m->n_ops; i++)
    if (m->ops[i].layer >= 0)
      after_last_block = i + 1;
  bounds[0] = 0;
  bounds[n] = (int32_t)m->n_ops;
  int32_t layer_end = 0;
  size_t i = 0;
  for (int32_t k = 1; k < n; k++) {
    layer_end += counts[k - 1];
    /* first op of block `layer_end` (after the last block: the head) */
    if (layer_end >= n_layers) {
      i = after_last_block;
    } else {
      while (i < m->n_ops && m->ops[i].layer != layer_end)
        i++;
    }
    bounds[k] = (int32_t)i;
  }
  for (int32_t k = 0; k < n; k++)
    if (bounds[k + 1] <= bounds[k]) {
      const char *why = k == 0 ? "the model has no ops before its first block (an embedding) for it"
                        : k == n - 1 ? "the model has no ops after its last block (a head) for it"
                                     : "only the first and the last stage may hold no block";
      return hs_error_set(err, HS_EINVAL, "stage_layers[%d]: 0 layers leaves the stage empty: %s", k,
                          why);
    }
  return HS_OK;
}
