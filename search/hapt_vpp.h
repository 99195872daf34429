/*
 * hapt_vpp.h - interleaved variants of hapt's finalists (hetsim's
 * extension of HAPT, docs/planners.md "hapt"): HAPT's stages are
 * contiguous op ranges, one per mesh, run by hetero-1F1B, so Megatron's
 * interleaved schedule (virtual pipeline stages) is outside its DP. This
 * pass takes the plans hapt simulated (the pool's finalists, the climb's
 * plan) and re-cuts each into v model chunks per rank, the ranks' device
 * groups unchanged: virtual stage k = j S + s runs on the devices of stage
 * s, and the chunks of rank s hold whole blocks. Every variant is ranked
 * by the whole-plan estimate (memory included; one that does not fit or
 * is estimated no faster than its source is dropped), the best few are
 * simulated, and hapt keeps the fastest only
 * when it simulates faster than the plan it would return otherwise, so no
 * plan gets worse.
 *
 * The layouts of a source of S >= 2 ranks (each pipeline alike):
 *   - "own": rank s keeps about the blocks its stage holds: each cut goes
 *     to the nearest block boundary that is a multiple of v (ties down; a
 *     cut inside a block sits at its fractional position), when every
 *     rank then holds at least v blocks (a source cut at whole multiples
 *     of v keeps its cuts);
 *   - "even": L / S blocks per rank when S v divides L (Megatron's rule),
 *     when it differs from "own".
 * The embedding stays with virtual stage 0, the head and loss with the
 * last. Each with blocking and with asynchronous sends (the simulator runs
 * both; Megatron-LM's --overlap-p2p-communication is the second). Legal
 * only where the schedule runs it: the microbatches a multiple of S.
 *
 * Invariant: the variants' plans validate (hs_plan_validate) before they
 * are estimated; the pool never holds a source itself (v >= 2).
 */
#ifndef HS_HAPT_VPP_H
#define HS_HAPT_VPP_H

#include "search_internal.h"

#define HS_HAPT_VPP_MAX_V 8 /* chunks per rank tried: 2 .. HS_HAPT_VPP_MAX_V */

typedef struct hs_hapt_vpp {
  const hs_model_t *m;
  const hs_cluster_t *c;
  int32_t L;                 /* transformer blocks; 0: the model has none in order (no pass) */
  int32_t *block_first;      /* owned, L + 1 entries: first op of each block, then the op after */
  hs_dtype_t precision;
  hs_estimator_t *est;       /* owned, made by the first source re-cut: the variants'
                                estimator (its practice follows each plan) */
  hs_cand_pool_t pool;       /* variants by estimate, the best hs__sim_budget simulated */
  bool offered;              /* the first step offered the sources' variants */
  uint64_t estimated;        /* variants estimated */
} hs_hapt_vpp_t;

/* Sets v up for m on c (o's precision and deadline); v->L is 0 when the
 * model's blocks are not contiguous and in order (the pass then offers
 * nothing). HS_ENOMEM. O(ops). */
hs_status_t hs__hapt_vpp_init(hs_hapt_vpp_t *v, const hs_model_t *m, const hs_cluster_t *c,
                              const hs_plan_opts_t *o, hs_error_t *err);
/* Zeroed and NULL ok. */
void hs__hapt_vpp_destroy(hs_hapt_vpp_t *v);

/* src re-cut into vc >= 2 chunks per rank under layout `even` (false:
 * "own"), with async sends or not, into *out (the source's practice,
 * precision, strategy and replicas; interleaved-1f1b, warm-ups and
 * explicit orders dropped); *ok false (out empty) when src is not a plan
 * the pass re-cuts (1f1b or hetero-1f1b, one chunk, no shards or device
 * ratios, every pipeline of S >= 2 stages with microbatches a multiple
 * of S), the layout does not apply to a pipeline, or `even` gives the
 * "own" layout (offered once). Memory is not checked. HS_ENOMEM.
 * O(devices + S vc + S log L). */
hs_status_t hs__hapt_vpp_interleave(const hs_hapt_vpp_t *v, const hs_plan_t *src, int32_t vc,
                                    bool even, bool async, hs_plan_t *out, bool *ok,
                                    hs_error_t *err);

/* One step of the pass: the first call estimates every interleaved
 * variant of the n_src plans src[] (not kept: they may be freed after it)
 * into v->pool; each later call simulates one of the pool's finalists.
 * *done when all are simulated (or the deadline leaves no room); then
 * v->pool.best >= 0 names the fastest that fits, at v->pool.best_sim_s.
 * O(n_src x HS_HAPT_VPP_MAX_V x 4 estimates) for the first call, one
 * simulation for the others. */
hs_status_t hs__hapt_vpp_step(hs_hapt_vpp_t *v, const hs_plan_t *const *src, int32_t n_src,
                              bool *done, hs_error_t *err);

#endif /* HS_HAPT_VPP_H */
