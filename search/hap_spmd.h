/*
 * hap_spmd.h - hap's block-level SPMD programs (search/hap_spmd.c): tensor
 * (column/row), sequence, context and expert sharding of transformer blocks
 * with HAP's per-type load ratios, offered to a candidate pool.
 */
#ifndef HS_HAP_SPMD_H
#define HS_HAP_SPMD_H

#include "search_internal.h"

/* Offers every block-level SPMD program over all of c's devices (pp 1:
 * TP x CP x DP x EP, SP, ZeRO stage, recomputation, samples per rank per
 * microbatch up to o->max_microbatch_size), each data-parallel rank's
 * samples proportional to its FLOP/s, to pools[log2 tp] (TP degrees from
 * 2^(n_pools-1) on share the last pool) with its memory-checked
 * estimate. Without o->search_practice only TP and recomputation vary.
 * *scored counts estimates; why[] gets the last skip reason. The plans in
 * the pool are owned by it. Errors: HS_ENOMEM, estimator failures.
 * O(candidates x (devices + ops)), candidates <= 128 x log2(max tp) x
 * max_microbatch_size x 3. */
hs_status_t hs__hap_spmd_offer(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_opts_t *o,
                               hs_dtype_t dt, int64_t gb, hs_cand_pool_t *pools, int32_t n_pools,
                               uint64_t *scored, char *why, size_t why_n, hs_error_t *err);

#endif /* HS_HAP_SPMD_H */
