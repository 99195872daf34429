/*
 * grad_accum.c - the per-microbatch gradient accumulation pass of
 * frameworks whose weight-gradient GEMMs do not accumulate in place
 * (plan option "grad_accum", docs/plan.md).
 *
 * Without Megatron's gradient_accumulation_fusion (wgrad GEMM writing into
 * the fp32 main_grad buffer), each microbatch's backward produces the
 * weight gradients as fresh tensors in the gradient dtype, and a separate
 * elementwise pass adds them into the buffer the optimizer and the data-
 * parallel sync read. The pass is memory-bound: per parameter it reads the
 * new gradient and reads and writes the accumulator,
 *     add           g + 2g  (main_grad.add_(grad), accumulator in the gradient dtype)
 *     add_fp32      g + 2*4 (the same into an fp32 accumulator)
 *     cast_add_fp32 g + 4   (lp.grad.to(fp32): read g, write an fp32 temporary)
 *                   + 3*4   (hp.add_(temporary): read both, write hp)
 *     autograd      3g, for every microbatch but the first (AccumulateGrad
 *                   steals the first gradient), spread evenly over the m
 *                   microbatches: 3g (m - 1) / m per microbatch
 * with g = hs_precision_grad_bytes(precision). It is timed as one memory-
 * bound kernel (hs_compute_kernel_s: launch + bytes / (mem_bw * mem_eff))
 * and appended to every backward template of the stage (the steady one and
 * the last microbatch's bucket-cut one), on the compute stream, as a
 * compute-only segment after the stage's last op.
 *
 * Invariants: FUSED (the default) adds nothing, so every plan without the
 * option lowers to the templates it had before; all functions are pure
 * and O(1) except the append, which reallocates the template's segments
 * once.
 */
#include "lower.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FP32_BYTES 4.0

static const char *const names[HS_GRAD_ACCUM__COUNT] = {"fused", "add", "add_fp32",
                                                        "cast_add_fp32", "autograd"};

const char *hs_grad_accum_name(hs_grad_accum_t a)
{
  return (unsigned)a < HS_GRAD_ACCUM__COUNT ? names[a] : "?";
}

hs_status_t hs_grad_accum_parse(const char *s, hs_grad_accum_t *out)
{
  for (int i = 0; s && i < HS_GRAD_ACCUM__COUNT; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (hs_grad_accum_t)i;
      return HS_OK;
    }
  return HS_EINVAL;
}

double hs_grad_accum_bytes_per_param(hs_grad_accum_t a, hs_dtype_t precision,
                                     int32_t microbatches)
{
  double g = hs_precision_grad_bytes(precision);
  switch (a) {
  case HS_GRAD_ACCUM_ADD:
    return 3.0 * g;
  case HS_GRAD_ACCUM_ADD_FP32:
    return g + 2.0 * FP32_BYTES;
  case HS_GRAD_ACCUM_CAST_ADD_FP32:
    return g + FP32_BYTES + 3.0 * FP32_BYTES;
  case HS_GRAD_ACCUM_AUTOGRAD:
    return microbatches > 1 ? 3.0 * g * (double)(microbatches - 1) / (double)microbatches : 0.0;
  case HS_GRAD_ACCUM_FUSED:
  case HS_GRAD_ACCUM__COUNT:
    break;
  }
  return 0.0;
}

hs_status_t hs__grad_accum_append(hs_tmpl_t *t, const hs_gpu_t *gpu, hs_grad_accum_t a,
                                  hs_dtype_t precision, int32_t microbatches, double params,
                                  int32_t op_lo, int32_t op_hi)
{
  double bytes = params * hs_grad_accum_bytes_per_param(a, precision, microbatches);
  if (!(bytes > 0.0))
    return HS_OK;
  hs_seg_t *segs = hs_reallocarray(t->segs, (size_t)t->n + 1, sizeof *segs);
  if (!segs)
    return HS_ENOMEM;
  t->segs = segs;
  hs_seg_t *s = &segs[t->n++];
  memset(s, 0, sizeof *s);
  s->compute_ns = hs_time_from_s(hs_compute_kernel_s(gpu, HS_DTYPE_FP32, false, 0.0, bytes));
  s->coll_op = HS_COLL_ALLREDUCE;
  s->op_lo = op_lo;
  s->op_hi = op_hi;
  s->grad_lo = INT32_MAX; /* produces no gradient: buckets do not wait for it */
  s->group = -1;
  s->side_group = -1;
  t->compute_ns += s->compute_ns;
  return HS_OK;
}
