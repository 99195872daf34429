/*
 * subset_bound.c - a lower bound of the iteration time of any plan on a set
 * of devices, in the simulator's own cost model (hs__subset_time_lb_s), so
 * that the device-subset search (registry.c) skips the subsets whose every
 * plan is slower than a plan it already has.
 *
 * Why it holds (sim/compute.c): a GEMM kernel of f FLOPs takes at least
 * f / (peak(dtype) x gemm_eff_max) (and, bf16/fp16 where the catalog has a
 * sustained rate, f / (peak x gemm_sustained_eff)), fused attention at
 * least (f / 2) / (bf16 peak x attn_eff_max) (the published causal rates
 * count half the op's FLOPs) and unfused attention its GEMMs' time on all
 * of f; tensor parallelism and
 * data-parallel shares divide an op's FLOPs between devices without
 * shrinking their sum (replicated ops repeat them), recomputation only adds
 * some; an executor runs its compute segments one after another
 * (sim/simulate.c), so every device is busy at least its FLOPs over its
 * rate and the iteration lasts at least the busiest device:
 *     T >= max_d F_d / r_d >= sum_d F_d / sum_d r_d = F / R.
 * Only weight GEMMs and attention count in F (MoE experts and
 * communication only make T longer). The bytes of norms and element-wise
 * ops (bounded_bytes) count as a second resource: a device busy with f of
 * those FLOPs and m of those bytes takes at least f / r_d + m / b_d, and
 * T is at least the smallest time in which some split of both fits (a
 * linear programme over the split, solved by bisection). tests/
 * test_search_subset_bound.c checks the bound against the simulated time of
 * every planner's plans on random clusters.
 */
#include "search_internal.h"

#include <math.h>
#include <stdlib.h>

/* FLOPs per sample that every plan computes at no more than r_d (above). */
static double bounded_flops(const hs_model_t *m)
{
  double f = 0.0;
  for (size_t i = 0; i < m->n_ops; i++) {
    const hs_op_t *op = &m->ops[i];
    if (op->kind == HS_OP_GEMM)
      f += op->fwd_flops + op->bwd_flops;
    else if (op->kind == HS_OP_ATTENTION)
      f += 0.5 * (op->fwd_flops + op->bwd_flops);
  }
  return f;
}

/* The fastest a GEMM of dtype dt runs on g: its peak times the GEMM curve's
 * ceiling (eff(f) = gemm_eff_max x f / (f + extra) never exceeds
 * gemm_eff_max; fp8 on its own ceiling where the catalog has one), and not
 * above the sustained rate for bf16/fp16 (compute.c's kernel_s). */
static double gemm_rate(const hs_gpu_t *g, hs_dtype_t dt)
{
  double peak = hs_gpu_peak_flops(g, dt);
  bool fp8 = dt == HS_DTYPE_FP8 && g->gemm_eff_max_fp8 > 0 && g->peak_flops[HS_DTYPE_FP8] > 0;
  double emax = fp8 ? g->gemm_eff_max_fp8 : g->gemm_eff_max > 0 ? g->gemm_eff_max : 1.0;
  double r = peak * emax;
  if ((dt == HS_DTYPE_BF16 || dt == HS_DTYPE_FP16) && g->gemm_sustained_eff > 0)
    r = fmin(r, peak * g->gemm_sustained_eff);
  return r;
}

/* The fastest g computes a FLOP of the bound (above): a weight GEMM in the
 * plan's precision or bf16, or half an attention FLOP: fused at the
 * measured bf16 rate (compute.c's fused_attention_s counts half the op's
 * FLOPs), unfused as GEMMs of all of them in bf16 (fp8 runs attention in
 * bf16). */
static double device_rate(const hs_gpu_t *g, hs_dtype_t precision)
{
  double attn_eff = fmax(g->attn_fwd_eff_max, g->attn_bwd_eff_max);
  double r_attn = fmax(hs_gpu_peak_flops(g, HS_DTYPE_BF16) * attn_eff, 0.5 * gemm_rate(g, HS_DTYPE_BF16));
  return fmax(fmax(gemm_rate(g, precision), gemm_rate(g, HS_DTYPE_BF16)), r_attn);
}

/* Bytes per sample every plan moves through memory-bound kernels: norms
 * and element-wise ops, forward and backward. sim/compute.c times such a
 * kernel at launch + max(flops / rate, bytes / (mem_bw x mem_eff)) or
 * more, and runs it on the executor's one compute stream; tensor, sequence
 * and context parallelism split an op's bytes without shrinking their sum
 * (ops outside the sequence-parallel region are replicated), and the
 * model's bytes are the fused kernels' (hs_practice_op doubles them when
 * unfused). Embedding, loss and MoE ops are left out. */
static double bounded_bytes(const hs_model_t *m)
{
  double b = 0.0;
  for (size_t i = 0; i < m->n_ops; i++) {
    const hs_op_t *op = &m->ops[i];
    if (op->kind == HS_OP_NORM || op->kind == HS_OP_ELEMENTWISE)
      b += op->fwd_mem_bytes + op->bwd_mem_bytes;
  }
  return b;
}

/* A device kind of the subset: n devices at r FLOP/s (device_rate) and b
 * bytes/s of memory-bound traffic. */
typedef struct rate_pair {
  double n, r, b;
} rate_pair_t;

/* Whether the devices can finish F FLOPs and M bytes within T, each device
 * busy f / r + m / b: the FLOPs go first to the devices with the most FLOPs
 * per byte of bandwidth they give up (r / b, ps sorted by it, descending),
 * which leaves the most bandwidth for the bytes. O(kinds). */
static bool fits(const rate_pair_t *ps, size_t n, double F, double M, double T)
{
  double bytes = 0.0;
  for (size_t i = 0; i < n; i++) {
    double cap_f = ps[i].n * ps[i].r * T, f = fmin(F, cap_f);
    F -= f;
    bytes += ps[i].n * ps[i].b * (f > 0.0 ? T - f / (ps[i].n * ps[i].r) : T);
  }
  return F <= 0.0 && bytes >= M;
}

static int by_flops_per_byte(const void *x, const void *y)
{
  const rate_pair_t *a = x, *b = y;
  double ka = a->r / a->b, kb = b->r / b->b;
  return ka > kb ? -1 : ka < kb ? 1 : 0;
}

double hs__subset_time_lb_s(const hs_model_t *m, const hs_cluster_t *c, const bool *alive,
                            int64_t global_batch, hs_dtype_t precision)
{
  /* one entry per GPU type of the alive nodes */
  rate_pair_t ps[64];
  size_t n = 0;
  double rate = 0.0; /* FLOP/s of the alive devices, each at its fastest */
  bool mem = true;   /* every kind has a FLOP rate and a finite memory time */
  for (size_t k = 0; k < c->n_nodes; k++) {
    if (alive && !alive[k])
      continue;
    const hs_gpu_t *g = &c->gpus.gpus[c->nodes[k].gpu];
    double r = device_rate(g, precision), nd = (double)c->nodes[k].n_devices;
    if (!(nd > 0.0))
      continue;
    double b = g->mem_bw_GBps * HS_GB * (g->mem_eff > 0 ? g->mem_eff : 1.0);
    rate += nd * r;
    mem = mem && r > 0.0 && b > 0.0 && isfinite(b);
    size_t j = 0;
    while (j < n && (ps[j].r != r || ps[j].b != b))
      j++;
    if (j == n && n == sizeof ps / sizeof *ps)
      mem = false; /* more kinds than kept: the FLOPs alone */
    else if (j == n)
      ps[n++] = (rate_pair_t){nd, r, b};
    else
      ps[j].n += nd;
  }
  if (!(rate > 0.0))
    return 0.0;
  double F = bounded_flops(m) * (double)global_batch;
  double M = bounded_bytes(m) * (double)global_batch;
  double lo = F / rate; /* the FLOPs alone: a bound that leaves no time for the bytes */
  if (mem && M > 0.0 && n > 0) {
    /* the smallest T within which some split of the work fits (a linear
     * programme over the split), by bisection: lo never fits, hi does */
    qsort(ps, n, sizeof *ps, by_flops_per_byte);
    double bw = 0.0;
    for (size_t i = 0; i < n; i++)
      bw += ps[i].n * ps[i].b;
    double hi = lo + M / bw; /* the FLOPs first, then the bytes on every device */
    if (fits(ps, n, F, M, lo))
      hi = lo;
    for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
      double mid = 0.5 * (lo + hi);
      if (fits(ps, n, F, M, mid))
        hi = mid;
      else
        lo = mid;
    }
  }
  /* a margin for the simulator's whole-nanosecond segments and the
   * bisection's rounding */
  return 0.999 * lo;
}
