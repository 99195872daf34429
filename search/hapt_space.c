/*
 * hapt_space.c - the inter-operator search space and its scoring rule
 * (hapt_space.h), shared by hapt.c and exhaustive.c.
 *
 * Tables: for the current microbatch size, every (cut pair, subcluster, mesh
 * size) holds its (tp, recompute) options sorted by per-microbatch time, so
 * the searches only read. Memory per option is state + act x inflight +
 * transient against the GPU's capacity.
 */
#include "hapt_space.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int32_t ilog2(int32_t x)
{
  int32_t k = 0;
  while ((1 << (k + 1)) <= x)
    k++;
  return k;
}

#define TP_SLOTS 11 /* tp up to 1024 */
#define PICK_MEMO_MAX_BYTES (64.0 * 1024 * 1024) /* hs__hspace_pick_memo: larger, off */

/* Entries of cut pairs k < k2 only (triangular): pair (k, k2) is number
 * k (2K - k - 1) / 2 + (k2 - k - 1). */
static size_t pair_count(int32_t K) { return (size_t)K * (size_t)(K - 1) / 2; }

/* Bytes of the option table for K cut candidates. */
static size_t table_bytes(const hs_hspace_t *h, int32_t K)
{
  size_t ne = pair_count(K) * (size_t)h->n_sc * (size_t)h->max_sizes;
  return ne * ((size_t)h->opt_stride * sizeof(hs_hopt_t) + 1);
}

/* Cut candidates: every block boundary and one cut after the first forward
 * TP all-reduce of a block (the attention half), all kept in all_cuts. The
 * table's (and the DP's) list is the same unless it has more than max_cuts
 * entries (0 = no limit) or the option table would pass
 * HS_HAPT_MAX_TABLE_BYTES: then block boundaries, every step-th. */
static hs_status_t make_cuts(hs_hspace_t *h, int32_t max_cuts)
{
  const hs_model_t *m = h->m;
  int32_t n = (int32_t)m->n_ops;
  int32_t *bound = hs_calloc((size_t)n + 1, sizeof *bound);
  int32_t *mid = hs_calloc((size_t)n + 1, sizeof *mid);
  h->cuts = hs_calloc((size_t)2 * n + 2, sizeof *h->cuts);
  h->all_cuts = hs_calloc((size_t)2 * n + 2, sizeof *h->all_cuts);
  if (!bound || !mid || !h->cuts || !h->all_cuts) {
    free(bound);
    free(mid);
    return HS_ENOMEM;
  }
  int32_t nb = 0, nm = 0;
  bool seen_ar = false;
  for (int32_t i = 1; i < n; i++) {
    if (m->ops[i].layer != m->ops[i - 1].layer) {
      bound[nb++] = i;
      seen_ar = false;
    } else if (m->ops[i].layer >= 0 && !seen_ar && m->ops[i - 1].tp_allreduce_fwd) {
      mid[nm++] = i;
      seen_ar = true;
    }
  }
  int32_t na = 0;
  h->all_cuts[na++] = 0;
  for (int32_t i = 0, j = 0; i < nb || j < nm;)
    h->all_cuts[na++] = (j >= nm || (i < nb && bound[i] < mid[j])) ? bound[i++] : mid[j++];
  h->all_cuts[na++] = n;
  h->n_all_cuts = na;
  int32_t nc = 0;
  if ((max_cuts <= 0 || na <= max_cuts) && table_bytes(h, na) <= HS_HAPT_MAX_TABLE_BYTES) {
    memcpy(h->cuts, h->all_cuts, sizeof *h->cuts * (size_t)na);
    nc = na;
  } else {
    int32_t step = 1;
    while (step < nb && (((max_cuts > 0 && (nb + step - 1) / step + 2 > max_cuts)) ||
                         table_bytes(h, (nb + step - 1) / step + 2) > HS_HAPT_MAX_TABLE_BYTES))
      step++;
    h->coarse_cuts = step;
    h->cuts[nc++] = 0;
    for (int32_t i = 0; i < nb; i += step)
      h->cuts[nc++] = bound[i];
    h->cuts[nc++] = n;
  }
  h->n_cuts = nc;
  free(bound);
  free(mid);
  return HS_OK;
}

/* Step 1 of hs__hspace_init. Reads h->sc (the subclusters) and c.
 * Guarantees per subcluster a: sc_devs[a] lists its devices in node order,
 * unit_dev[a] x sizes[a][0 .. n_sizes[a]) are the mesh sizes the DP tries
 * (every power of two within a node, then whole nodes; or, past
 * HS_HAPT_FINE_DEVICES, groups of nodes in at most HS_HAPT_MAX_LEVELS levels),
 * and max_sizes is the largest n_sizes. */
static hs_status_t space_levels(hs_hspace_t *h, const hs_cluster_t *c, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t ns = h->n_sc;
  bool fine = c->n_devices <= HS_HAPT_FINE_DEVICES;
  for (int32_t a = 0; a < ns; a++) {
    const hs_subcluster_t *s = &h->sc[a];
    h->sc_devs[a] = hs_calloc((size_t)s->n_devices, sizeof(int32_t));
    h->sizes[a] = hs_calloc((size_t)s->n_devices + 8, sizeof(int32_t));
    if (!h->sc_devs[a] || !h->sizes[a])
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    int32_t k = 0;
    for (int32_t j = 0; j < s->n_nodes; j++) {
      const hs_node_t *nd = &c->nodes[s->nodes[j]];
      for (int32_t d = 0; d < nd->n_devices; d++)
        h->sc_devs[a][k++] = nd->first_device + d;
    }
    if (fine) {
      h->unit_dev[a] = 1;
      h->levels[a] = s->n_devices;
      for (int32_t z = 1; z < s->gpn; z *= 2)
        h->sizes[a][h->n_sizes[a]++] = z;
      for (int32_t j = 1; j <= s->n_nodes; j++)
        h->sizes[a][h->n_sizes[a]++] = j * s->gpn;
    } else {
      int32_t u = 1;
      while (s->n_nodes / u > HS_HAPT_MAX_LEVELS || s->n_nodes % u)
        u++;
      h->unit_dev[a] = u * s->gpn;
      h->levels[a] = s->n_nodes / u;
      for (int32_t j = 1; j <= h->levels[a]; j++)
        h->sizes[a][h->n_sizes[a]++] = j;
    }
    h->max_sizes = HS_MAX(h->max_sizes, h->n_sizes[a]);
  }
  return HS_OK;
cleanup:
  return st;
}

/* Step 2. Reads the estimator's topology and sc_devs. Guarantees lat_s and
 * inv_bw [a * n_sc + b]: the latency (s) and inverse bottleneck bandwidth
 * (s/byte, rails left out) between representative devices of subclusters a
 * and b (two distinct devices of a when a == b); 0 where no path exists. */
static void space_cut_costs(hs_hspace_t *h, const hs_cluster_t *c)
{
  int32_t ns = h->n_sc;
  const hs_topology_t *topo = hs_estimator_topology(h->est);
  for (int32_t a = 0; a < ns; a++)
    for (int32_t b = 0; b < ns; b++) {
      int32_t da = h->sc_devs[a][0], db = h->sc_devs[b][0];
      if (a == b) {
        if (h->sc[a].n_nodes > 1)
          db = c->nodes[h->sc[a].nodes[1]].first_device;
        else if (h->sc[a].n_devices > 1)
          db = h->sc_devs[a][1];
      }
      hs_path_t p;
      double lat = 0.0, inv = 0.0;
      if (da != db && hs_topology_path(topo, da, db, &p) == HS_OK) {
        /* the bottleneck without NIC rails: a stage's ranks send their
         * shares together, each over its own rail (R of them make the
         * node's NIC); one-GPU stages across railed nodes are costed
         * optimistically here, and exactly by the simulator */
        const hs_link_t *L = hs_topology_links(topo);
        double bw = INFINITY;
        for (int32_t i = 0; i < p.n; i++)
          if (L[p.links[i]].kind != HS_LINK_RAIL_UP && L[p.links[i]].kind != HS_LINK_RAIL_DOWN)
            bw = fmin(bw, L[p.links[i]].GBps);
        lat = p.latency_ns * 1e-9;
        inv = (isfinite(bw) && bw > 0) ? 1.0 / (bw * HS_GB) : 0.0;
      }
      h->lat_s[a * ns + b] = lat;
      h->inv_bw[a * ns + b] = inv;
    }
}

/* Step 3. Reads sizes, unit_dev and sc_devs. Guarantees ar[(a, size, tp)]:
 * the all-reduce line (per algorithm the simulator may pick) over the first
 * devices of the replicas of a mesh of that size at that TP degree. */
static hs_status_t space_allreduce_lines(hs_hspace_t *h, const hs_model_t *m, const hs_cluster_t *c,
                                         hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t ns = h->n_sc;
  h->ar = hs_calloc((size_t)ns * h->max_sizes * TP_SLOTS, sizeof *h->ar);
  if (!h->ar)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t *grp = hs_calloc(c->n_devices, sizeof(int32_t));
  if (!grp)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t a = 0; a < ns; a++)
    for (int32_t zi = 0; zi < h->n_sizes[a]; zi++) {
      int32_t devs = h->sizes[a][zi] * h->unit_dev[a];
      for (int32_t tp = 1; tp <= HS_MIN(devs, h->sc[a].gpn); tp *= 2) {
        if (devs % tp || !hs_model_tp_ok(m, tp))
          continue;
        int32_t r = devs / tp;
        for (int32_t q = 0; q < r; q++)
          grp[q] = h->sc_devs[a][q * tp];
        size_t ix = ((size_t)a * h->max_sizes + zi) * TP_SLOTS + ilog2(tp);
        /* per algorithm the simulator may pick (ring or NCCL's tree), so
         * the time at the gradient's size is the one the simulator runs */
        if (hs_estimate_allreduce_line(h->est, grp, r, &h->ar[ix]) != HS_OK) {
          free(grp);
          HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory estimating all-reduce times"));
        }
      }
    }
  free(grp);
  return HS_OK;
cleanup:
  return st;
}

/* Step 4. Reads the global batch and the largest subcluster. Guarantees
 * mbs[0 .. n_mbs): every divisor of the batch up to max_microbatch_size per
 * device of the biggest mesh, past HS_HAPT_MAX_MB of them every k-th (the
 * smallest and the largest kept); n_mbs_valid counts them all. */
static hs_status_t space_microbatches(hs_hspace_t *h, const hs_plan_opts_t *o, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t ns = h->n_sc;
  int32_t maxdev = 0;
  for (int32_t a = 0; a < ns; a++)
    maxdev = HS_MAX(maxdev, h->sc[a].n_devices);
  int64_t cap = (int64_t)HS_MAX(o->max_microbatch_size, 1) * maxdev;
  int32_t nv = 0;
  for (int64_t b = 1; b <= h->gb && b <= cap && b <= INT32_MAX; b++)
    nv += h->gb % b == 0;
  if (nv == 0)
    HS_FAIL(hs_error_set(err, HS_EINFEASIBLE, "global batch %lld has no usable microbatch size",
                         (long long)h->gb));
  h->n_mbs_valid = nv;
  int32_t step = (nv + HS_HAPT_MAX_MB - 1) / HS_HAPT_MAX_MB, iv = 0;
  for (int64_t b = 1; b <= h->gb && b <= cap && b <= INT32_MAX; b++) {
    if (h->gb % b)
      continue;
    if ((iv % step == 0 || iv == nv - 1) && h->n_mbs < HS_HAPT_MAX_MB)
      h->mbs[h->n_mbs++] = (int32_t)b;
    iv++;
  }
  return HS_OK;
cleanup:
  return st;
}

hs_status_t hs__hspace_init(hs_hspace_t *h, const hs_model_t *m, const hs_cluster_t *c,
                            const hs_plan_opts_t *o, int32_t max_cuts, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  memset(h, 0, sizeof *h);
  h->m = m;
  h->c = c;
  h->dt = hs__precision(o, c);
  h->gb = hs__global_batch(o, c);
  h->allow_rc = o->allow_recompute;
  h->cur_mb = -1;
  HS_CHECK(hs_estimator_new(m, c, h->dt, &h->est, err));
  hs_estimator_set_deadline(h->est, o->deadline_s);
  hs_estimator_set_practice(h->est, &o->practice);
  if (hs__subclusters(c, h->dt, &h->sc, &h->n_sc) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t ns = h->n_sc;
  h->unit_dev = hs_calloc((size_t)ns, sizeof(int32_t));
  h->levels = hs_calloc((size_t)ns, sizeof(int32_t));
  h->sizes = hs_calloc((size_t)ns, sizeof(int32_t *));
  h->n_sizes = hs_calloc((size_t)ns, sizeof(int32_t));
  h->sc_devs = hs_calloc((size_t)ns, sizeof(int32_t *));
  h->lat_s = hs_calloc((size_t)ns * ns, sizeof(double));
  h->inv_bw = hs_calloc((size_t)ns * ns, sizeof(double));
  if (!h->unit_dev || !h->levels || !h->sizes || !h->n_sizes || !h->sc_devs || !h->lat_s || !h->inv_bw)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  HS_CHECK(space_levels(h, c, err));
  space_cut_costs(h, c);
  HS_CHECK(space_allreduce_lines(h, m, c, err));
  /* options per table entry: TP degrees up to the biggest node x recompute */
  int32_t max_gpn = 1;
  for (int32_t a = 0; a < ns; a++)
    max_gpn = HS_MAX(max_gpn, h->sc[a].gpn);
  h->opt_stride = (ilog2(max_gpn) + 1) * (o->allow_recompute ? 2 : 1);
  h->opt_stride = HS_MIN(h->opt_stride, HS_HAPT_MAX_OPTS);
  if (make_cuts(h, max_cuts) != HS_OK)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  HS_CHECK(space_microbatches(h, o, err));
  size_t ne = pair_count(h->n_cuts) * ns * h->max_sizes;
  h->opts = hs_calloc(ne * (size_t)h->opt_stride, sizeof *h->opts);
  h->n_opts = hs_calloc(ne, 1);
  h->cut_s = hs_calloc((size_t)h->n_cuts * (size_t)ns * (size_t)ns, sizeof(double));
  if (!h->opts || !h->n_opts || !h->cut_s)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  return HS_OK;
cleanup:
  hs__hspace_destroy(h);
  return st;
}

void hs__hspace_destroy(hs_hspace_t *h)
{
  if (!h)
    return;
  hs_estimator_free(h->est);
  for (int32_t a = 0; a < h->n_sc; a++) {
    if (h->sizes)
      free(h->sizes[a]);
    if (h->sc_devs)
      free(h->sc_devs[a]);
  }
  hs__subclusters_free(h->sc, h->n_sc);
  free(h->unit_dev);
  free(h->levels);
  free(h->sizes);
  free(h->n_sizes);
  free(h->sc_devs);
  free(h->lat_s);
  free(h->inv_bw);
  free(h->ar);
  free(h->cuts);
  free(h->all_cuts);
  free(h->opts);
  free(h->n_opts);
  free(h->cut_s);
  free(h->pick);
  memset(h, 0, sizeof *h);
}

static double cut_cost_s(const hs_hspace_t *h, int32_t a, int32_t b, int32_t k2);

static int cmp_opt(const void *x, const void *y)
{
  const hs_hopt_t *a = x, *b = y;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  if (a->tp != b->tp)
    return a->tp - b->tp;
  return (int)a->rc - (int)b->rc;
}

/* What one table's entries share: the microbatch size and the practice's
 * gradient, state and ZeRO figures (entry_options reads them). */
typedef struct table_ctx {
  int32_t mb, zs;
  double gbytes;
  hs_state_bytes_t sb;
  double limit_s; /* hs__hspace_table's t_limit_s */
} table_ctx_t;

/* Entry (k, k2, a, zi)'s options: every (tp, recomputation) of the mesh
 * with t within x->limit_s, estimated and sorted by t; *n their count.
 * *over marks (bit 2 log2(tp) + rc) the options that passed the limit on
 * a shorter span of the same start cut: they are not estimated again (an
 * option's t grows with the span), and those that pass it here join them,
 * their smallest t kept in *over_s. HS_ENOMEM only. */
static hs_status_t entry_options(hs_hspace_t *h, const table_ctx_t *x, int32_t k, int32_t k2,
                                 int32_t a, int32_t zi, hs_hopt_t *o, int32_t *n_out,
                                 uint32_t *over, double *over_s)
{
  int32_t devs = h->sizes[a][zi] * h->unit_dev[a], n = 0;
  int32_t slots = 0; /* options reached, kept or not: the full table's n */
  bool multi_node = devs > h->sc[a].gpn;
  for (int32_t tp = 1; tp <= HS_MIN(devs, h->sc[a].gpn); tp *= 2) {
    if (devs % tp || !hs_model_tp_ok(h->m, tp))
      continue;
    int32_t r = devs / tp, C = h->cp > 1 ? h->cp : 1;
    /* at least one sample per replica (per context-parallel group
     * of C replicas, each holding 1/C of its sequence); shares may
     * be fractional */
    if (r % C != 0 || r > (int64_t)x->mb * C)
      continue;
    for (int rc = 0; rc < (h->allow_rc ? 2 : 1) && slots < h->opt_stride; rc++, slots++) {
      uint32_t bit = 1u << (2 * ilog2(tp) + rc);
      if (*over & bit)
        continue;
      hs_stage_cost_t sc;
      if (hs_estimate_stage(h->est, h->cuts[k], h->cuts[k2], h->sc_devs[a], tp,
                            (double)x->mb / r, rc ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE,
                            &sc) != HS_OK)
        return HS_ENOMEM;
      h->evaluated++;
      double t = sc.fwd_s + sc.bwd_s;
      if (t > x->limit_s) {
        *over |= bit;
        *over_s = fmin(*over_s, t);
        continue;
      }
      size_t ix = ((size_t)a * h->max_sizes + zi) * TP_SLOTS + ilog2(tp);
      double bytes = sc.params_per_device * x->gbytes * (multi_node && tp > 1 ? tp : 1);
      double ar = r > 1 ? hs_estimate_allreduce_line_s(&h->ar[ix], bytes) : 0.0;
      if ((x->zs >= 1 && r > 1) || x->gbytes != x->sb.grad) {
        /* ZeRO over the stage's r replicas (sim/memory.c's rule):
         * optimizer state, then gradients, then weights split r
         * ways; the optimizer step runs on 1/r of the parameters;
         * gradients at gbytes (4 when kept in fp32) */
        bool z = x->zs >= 1 && r > 1;
        double w = x->sb.weight, g = x->gbytes, op = z ? x->sb.optimizer / r : x->sb.optimizer;
        if (z && x->zs >= 2)
          g /= r;
        if (z && x->zs >= 3)
          w /= r;
        sc.state_bytes *= (w + g + op) / (x->sb.weight + x->sb.grad + x->sb.optimizer);
        if (z)
          sc.optimizer_s /= r;
      }
      o[n] = (hs_hopt_t){.tp = tp, .rc = rc ? HS_RECOMPUTE_FULL : HS_RECOMPUTE_NONE,
                         .t = t, .tf = sc.fwd_s,
                         .f = fmax(0.0, ar - sc.bwd_s) + sc.optimizer_s,
                         .state_bytes = sc.state_bytes, .act_bytes = sc.act_bytes,
                         .transient_bytes = sc.transient_bytes};
      n++;
    }
  }
  /* sorted by cmp_opt, a total order (no two options share tp and rc):
   * insertion sort, since an entry has a handful (qsort's call cost was
   * a seventh of the table's) */
  for (int32_t i = 1; i < n; i++) {
    hs_hopt_t v = o[i];
    int32_t j = i;
    for (; j > 0 && cmp_opt(&o[j - 1], &v) > 0; j--)
      o[j] = o[j - 1];
    o[j] = v;
  }
  *n_out = n;
  return HS_OK;
}

hs_status_t hs__hspace_table(hs_hspace_t *h, int32_t mi, double t_limit_s)
{
  const hs_practice_t *pr = hs_estimator_practice(h->est);
  /* gradients kept and reduced at hs_practice_grad_bytes (grad_reduce_dtype) */
  table_ctx_t x = {.mb = h->mbs[mi], .zs = pr->zero_stage,
                   .gbytes = hs_practice_grad_bytes(pr, h->dt),
                   .sb = hs_precision_state_bytes(h->dt), .limit_s = t_limit_s};
  h->cur_mb = mi;
  h->table_id++;
  if (h->pick)
    memset(h->pick, HS_HSPACE_PICK_UNSET, h->n_pick); /* a new table: new picks */
  for (int32_t k2 = 0; k2 < h->n_cuts; k2++)
    for (int32_t a = 0; a < h->n_sc; a++)
      for (int32_t b = 0; b < h->n_sc; b++)
        h->cut_s[((size_t)k2 * (size_t)h->n_sc + (size_t)a) * (size_t)h->n_sc + (size_t)b] =
            cut_cost_s(h, a, b, k2);
  for (int32_t a = 0; a < h->n_sc; a++)
    for (int32_t zi = 0; zi < h->n_sizes[a]; zi++)
      for (int32_t k = 0; k + 1 < h->n_cuts; k++) {
        uint32_t over = 0; /* options past the limit on a shorter span */
        double over_s = INFINITY;
        for (int32_t k2 = k + 1; k2 < h->n_cuts; k2++) {
          size_t e = hs__hspace_entry(h, k, k2, a, zi);
          hs_hopt_t *o = &h->opts[e * (size_t)h->opt_stride];
          int32_t n;
          if (entry_options(h, &x, k, k2, a, zi, o, &n, &over, &over_s) != HS_OK)
            return HS_ENOMEM;
          if (n == 0 && over) {
            /* every option past the limit: a placeholder no slower than
             * any of them (each one's t grows with the span) */
            o[0] = (hs_hopt_t){.tp = 1, .rc = HS_RECOMPUTE_NONE, .t = over_s};
            n = 1;
          }
          h->n_opts[e] = (uint8_t)n;
        }
      }
  return HS_OK;
}

static double cut_cost_s(const hs_hspace_t *h, int32_t a, int32_t b, int32_t k2)
{
  int32_t op = h->cuts[k2];
  if (op <= 0 || op >= (int32_t)h->m->n_ops)
    return 0.0;
  double bytes = h->m->ops[op - 1].out_bytes * h->mbs[h->cur_mb];
  return h->lat_s[a * h->n_sc + b] + bytes * h->inv_bw[a * h->n_sc + b];
}

int32_t hs__hspace_B_of(const hs_hspace_t *h, int32_t mi) { return (int32_t)(h->gb / h->mbs[mi]); }

int32_t hs__hspace_B(const hs_hspace_t *h) { return hs__hspace_B_of(h, h->cur_mb); }

int32_t hs__hspace_pick(const hs_hspace_t *h, int32_t k, int32_t k2, int32_t a, int32_t zi,
                        int32_t inflight, bool cross, double c_s)
{
  int32_t n;
  const hs_hopt_t *o = hs__hspace_opts(h, k, k2, a, zi, &n);
  double cap = h->c->gpus.gpus[h->sc[a].gpu].mem_bytes;
  int32_t B = hs__hspace_B(h);
  for (int32_t i = 0; i < n; i++) {
    int32_t inf = inflight;
    if (cross && o[i].tf > 0)
      inf += (int32_t)ceil(c_s / o[i].tf);
    if (inf > B)
      inf = B;
    if (o[i].state_bytes + o[i].act_bytes * inf + o[i].transient_bytes <= cap)
      return i;
  }
  return -1;
}

hs_status_t hs__hspace_pick_memo(hs_hspace_t *h, int32_t max_inflight)
{
  free(h->pick);
  h->pick = NULL;
  h->n_pick = 0;
  double n = (double)(max_inflight + 1) * h->n_cuts * h->n_cuts * h->n_sc * h->max_sizes *
             (h->n_sc + 1);
  if (max_inflight < 1 || h->opt_stride >= INT8_MAX || n > PICK_MEMO_MAX_BYTES)
    return HS_OK;
  h->pick = malloc((size_t)n);
  if (!h->pick)
    return HS_ENOMEM;
  h->n_pick = (size_t)n;
  h->pick_inflight = max_inflight;
  memset(h->pick, HS_HSPACE_PICK_UNSET, h->n_pick);
  return HS_OK;
}

int32_t hs__hspace_pick_slow(hs_hspace_t *h, int32_t k, int32_t k2, int32_t a, int32_t zi,
                             int32_t inflight, int32_t b, size_t i)
{
  double c = b >= 0 ? hs__hspace_cut_s(h, a, b, k2) : 0.0;
  int32_t v = hs__hspace_pick(h, k, k2, a, zi, inflight, b >= 0, c);
  if (h->pick && i < h->n_pick)
    h->pick[i] = (int8_t)v;
  return v;
}

void hs__hsol_destroy(hs_hsol_t *s)
{
  if (!s)
    return;
  free(s->st);
  memset(s, 0, sizeof *s);
}

hs_status_t hs__hsol_copy(const hs_hsol_t *src, hs_hsol_t *dst)
{
  *dst = *src;
  dst->st = hs_calloc((size_t)HS_MAX(src->n, 1), sizeof *dst->st);
  if (!dst->st)
    return HS_ENOMEM;
  memcpy(dst->st, src->st, sizeof *dst->st * (size_t)src->n);
  return HS_OK;
}

hs_status_t hs__hspace_plan(hs_hspace_t *h, const hs_hsol_t *sol, const char *strategy,
                            hs_plan_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t *base = NULL, *used = NULL, *order = NULL;
  hs_plan_init(out);
  int32_t S = sol->n;
  base = hs_calloc((size_t)S, sizeof *base);
  used = hs_calloc((size_t)h->n_sc, sizeof *used);
  order = hs_calloc((size_t)S, sizeof *order);
  if (!base || !used || !order)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* devices: per subcluster, biggest meshes first keeps power-of-two meshes
   * aligned inside nodes */
  for (int32_t i = 0; i < S; i++)
    order[i] = i;
  for (int32_t i = 1; i < S; i++)
    for (int32_t j = i; j > 0; j--) {
      const hs_hstage_t *x = &sol->st[order[j]], *y = &sol->st[order[j - 1]];
      if (h->sizes[x->a][x->z] * h->unit_dev[x->a] > h->sizes[y->a][y->z] * h->unit_dev[y->a]) {
        int32_t t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      } else {
        break;
      }
    }
  for (int32_t j = 0; j < S; j++) {
    const hs_hstage_t *x = &sol->st[order[j]];
    base[order[j]] = used[x->a];
    used[x->a] += h->sizes[x->a][x->z] * h->unit_dev[x->a];
  }
  hs_strlcpy(out->strategy, strategy, sizeof out->strategy);
  hs_strlcpy(out->schedule, "hetero-1f1b", sizeof out->schedule);
  out->async_send = true;
  out->precision = h->dt;
  out->practice = *hs_estimator_practice(h->est);
  HS_CHECK(hs_plan_alloc_pipelines(out, 1));
  hs_plan_pipeline_t *pl = &out->pipelines[0];
  pl->microbatch_size = h->mbs[h->cur_mb];
  pl->n_microbatches = hs__hspace_B(h);
  HS_CHECK(hs_plan_alloc_stages(pl, S));
  for (int32_t i = 0; i < S; i++) {
    const hs_hstage_t *x = &sol->st[i];
    int32_t n;
    const hs_hopt_t *o = hs__hspace_opts(h, x->k, x->k2, x->a, x->z, &n);
    const hs_hopt_t *op = &o[x->opt];
    hs_plan_stage_t *stg = &pl->stages[i];
    stg->op_first = h->cuts[x->k];
    stg->op_last = h->cuts[x->k2];
    stg->recompute = op->rc;
    int32_t devs = h->sizes[x->a][x->z] * h->unit_dev[x->a];
    int32_t r = devs / op->tp;
    HS_CHECK(hs_plan_alloc_replicas(stg, r));
    for (int32_t q = 0; q < r; q++) {
      HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[q], &h->sc_devs[x->a][base[i] + q * op->tp],
                                           op->tp));
      stg->replicas[q].share = 1.0 / r;
    }
    int32_t extra = 0;
    if (i + 1 < S && hs__hspace_cross(h, x->a, sol->st[i + 1].a) && op->tf > 0)
      extra = (int32_t)ceil(x->c / op->tf);
    stg->warmup = S - i - 1 + extra;
  }
  /* A stage must run at least one forward more than its successor before
   * its first backward, or the pipeline deadlocks: a deeper warm-up in front
   * of a slow link deepens every earlier stage too. */
  for (int32_t i = S - 2; i >= 0; i--)
    pl->stages[i].warmup = HS_MAX(pl->stages[i].warmup, pl->stages[i + 1].warmup + 1);
cleanup:
  free(base);
  free(used);
  free(order);
  if (st != HS_OK) {
    if (err && err->status == HS_OK)
      hs_error_set(err, st, "building plan: %s", hs_status_message(st));
    hs_plan_destroy(out);
    hs_plan_init(out);
  }
  return st;
}
