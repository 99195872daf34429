/*
 * autohet_model.c - the cost model of autohet's MILP (docs/autohet.md):
 * per-group stage costs from the estimator, one configuration's
 * coefficients (ccoef_t, read by the MILP and the greedy point alike), and
 * the plan of an integer point (blocks per stage, microbatches per
 * pipeline), with hetero-1f1b's warm-ups when its sends are async.
 *
 * Invariants: the coefficients are a pure function of (configuration,
 * group costs, options), so the greedy point's objective equals the MILP's
 * at the same point; the estimator's practice is the planner's base
 * practice on return of every function here.
 */
#include "autohet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- cost coefficients ---- */

/* hs_estimate_stage, with an empty op range costing nothing. */
static hs_status_t range_cost(autohet_t *a, int32_t first, int32_t last, const int32_t *devs,
                              int32_t t, int32_t b, hs_recompute_t rc, hs_stage_cost_t *out,
                              hs_error_t *err)
{
  memset(out, 0, sizeof *out);
  if (first >= last)
    return HS_OK;
  hs_status_t st = hs_estimate_stage(a->est, first, last, devs, t, b, rc, out);
  if (st != HS_OK)
    return hs_error_set(err, st, "autohet: estimating ops [%d, %d) on device %d: %s", first, last,
                        devs[0], hs_status_message(st));
  return HS_OK;
}

hs_status_t hs__autohet_group_cost(autohet_t *a, const group_t *g, int32_t b, hs_recompute_t rc,
                              gcost_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t devs[8], t = g->t;
  for (int32_t k = 0; k < t; k++)
    devs[k] = g->first_device + k;
  hs_stage_cost_t sb, sp, sq;
  int32_t nops = (int32_t)a->m->n_ops;
  HS_CHECK(range_cost(a, a->block_first[0], a->block_first[a->L], devs, t, b, rc, &sb, err));
  HS_CHECK(range_cost(a, 0, a->block_first[0], devs, t, b, rc, &sp, err));
  HS_CHECK(range_cost(a, a->block_first[a->L], nops, devs, t, b, rc, &sq, err));
  memset(out, 0, sizeof *out);
  out->f_s = (sb.fwd_s + sb.bwd_s) / a->L;
  out->pre_s = sp.fwd_s + sp.bwd_s;
  out->post_s = sq.fwd_s + sq.bwd_s;
  out->state_l = sb.state_bytes / a->L;
  out->act_l = sb.act_bytes / a->L;
  out->state_pre = sp.state_bytes;
  out->act_pre = sp.act_bytes;
  out->state_post = sq.state_bytes;
  out->act_post = sq.act_bytes;
  out->opt_l = sb.optimizer_s / a->L;
  out->opt_pre = sp.optimizer_s;
  out->trans = sb.transient_bytes;
  out->cap = hs_cluster_gpu(a->c, g->first_device)->mem_bytes * MEM_SAFETY;
cleanup:
  return st;
}

/* FNV-1a over the memo key's fields. */
static size_t p2p_hash(const autohet_p2p_t *k)
{
  uint64_t bits;
  memcpy(&bits, &k->bytes, sizeof bits);
  uint64_t v[4] = {(uint64_t)(uint32_t)k->src, (uint64_t)(uint32_t)k->dst,
                   (uint64_t)(uint32_t)k->nsub, bits};
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < 4; i++)
    for (int b = 0; b < 64; b += 8)
      h = (h ^ ((v[i] >> b) & 0xff)) * 1099511628211ull;
  return (size_t)h;
}

/* hs_estimate_p2p_s, memoised in a->p2p (open addressing on the exact
 * arguments): the estimate is a pure function of them, so the value is
 * the one a call returns. config_coefs asks for the same neighbour sends
 * in every configuration of a class (at 1,024 GPUs about 2 million calls,
 * each a topology path search). A failed growth only skips the memo. */
static double p2p_s(autohet_t *a, int32_t src, int32_t dst, double bytes, int32_t nsub)
{
  autohet_p2p_memo_t *mm = &a->p2p;
  if (2 * (mm->n + 1) > mm->cap) { /* grow to keep the load under a half */
    size_t cap = mm->cap ? 2 * mm->cap : 1024;
    autohet_p2p_t *e = hs_calloc(cap, sizeof *e);
    if (!e)
      return hs_estimate_p2p_s(a->est, src, dst, bytes, nsub);
    for (size_t i = 0; i < mm->cap; i++) {
      if (!mm->e[i].used)
        continue;
      size_t h = p2p_hash(&mm->e[i]) & (cap - 1);
      while (e[h].used)
        h = (h + 1) & (cap - 1);
      e[h] = mm->e[i];
    }
    free(mm->e);
    mm->e = e;
    mm->cap = cap;
  }
  autohet_p2p_t k = {.src = src, .dst = dst, .nsub = nsub, .bytes = bytes, .used = true};
  size_t h = p2p_hash(&k) & (mm->cap - 1);
  for (; mm->e[h].used; h = (h + 1) & (mm->cap - 1)) {
    const autohet_p2p_t *q = &mm->e[h];
    if (q->src == src && q->dst == dst && q->nsub == nsub && q->bytes == bytes)
      return q->s;
  }
  k.s = hs_estimate_p2p_s(a->est, src, dst, bytes, nsub);
  mm->e[h] = k;
  mm->n++;
  return k.s;
}

/* FNV-1a over an all-reduce memo key: the device list and the bytes. */
static uint64_t ar_hash(const int32_t *devs, int32_t nd, double bytes)
{
  uint64_t h = 1469598103934665603ull, bits;
  memcpy(&bits, &bytes, sizeof bits);
  for (int32_t i = 0; i <= nd; i++) {
    uint64_t v = i < nd ? (uint64_t)(uint32_t)devs[i] : bits;
    for (int b = 0; b < 64; b += 8)
      h = (h ^ ((v >> b) & 0xff)) * 1099511628211ull;
  }
  return h;
}

/* Grows the all-reduce memo to hold one more key of nd devices (load
 * under a half). False when out of memory: the caller skips the memo. */
static bool ar_reserve(autohet_ar_memo_t *mm, int32_t nd)
{
  if (mm->n_devs + (size_t)nd > mm->cap_devs) {
    size_t cap = HS_MAX(2 * mm->cap_devs, mm->n_devs + (size_t)nd + 1024);
    int32_t *d = hs_reallocarray(mm->devs, cap, sizeof *d);
    if (!d)
      return false;
    mm->devs = d;
    mm->cap_devs = cap;
  }
  if (2 * (mm->n + 1) <= mm->cap)
    return true;
  size_t cap = mm->cap ? 2 * mm->cap : 256;
  autohet_ar_t *e = hs_calloc(cap, sizeof *e);
  if (!e)
    return false;
  for (size_t i = 0; i < mm->cap; i++) {
    if (!mm->e[i].used)
      continue;
    size_t h = (size_t)mm->e[i].h & (cap - 1);
    while (e[h].used)
      h = (h + 1) & (cap - 1);
    e[h] = mm->e[i];
  }
  free(mm->e);
  mm->e = e;
  mm->cap = cap;
  return true;
}

/* hs_estimate_allreduce over devs[0..nd), memoised in a->ar on the exact
 * arguments (a pure function of them; configurations that differ only in
 * microbatch size, recomputation, ZeRO class or schedule sync the same
 * first-stage groups). A zero value (the estimator past its deadline) is
 * not kept. HS_ENOMEM only from the estimate. */
static hs_status_t allreduce_s(autohet_t *a, const int32_t *devs, int32_t nd, double bytes,
                               double *out)
{
  autohet_ar_memo_t *mm = &a->ar;
  uint64_t hk = ar_hash(devs, nd, bytes);
  bool memo = ar_reserve(mm, nd);
  size_t h = (size_t)hk & (mm->cap - 1);
  for (; memo && mm->e[h].used; h = (h + 1) & (mm->cap - 1)) {
    const autohet_ar_t *q = &mm->e[h];
    if (q->h == hk && q->nd == nd && q->bytes == bytes &&
        memcmp(mm->devs + q->off, devs, sizeof *devs * (size_t)nd) == 0) {
      *out = q->s;
      return HS_OK;
    }
  }
  hs_status_t st = hs_estimate_allreduce(a->est, devs, nd, bytes, out);
  if (st != HS_OK || !memo || !(*out > 0.0))
    return st;
  memcpy(mm->devs + mm->n_devs, devs, sizeof *devs * (size_t)nd);
  mm->e[h] = (autohet_ar_t){.h = hk, .bytes = bytes, .s = *out, .nd = nd, .used = true,
                            .off = mm->n_devs};
  mm->n_devs += (size_t)nd;
  mm->n++;
  return HS_OK;
}

/* Activation bytes crossing a cut between blocks, per microbatch. */
static double cut_bytes(const autohet_t *a, int32_t b)
{
  int32_t op = a->block_first[1 < a->L ? 1 : a->L] - 1;
  return a->m->ops[op].out_bytes * b;
}

hs_status_t hs__autohet_config_coefs(autohet_t *a, const config_t *cf, const gcost_t *gc, ccoef_t *cc,
                                hs_error_t *err)
{
  const group_t *groups = a->groups[cf->pat];
  int32_t ng = a->n_groups[cf->pat], G = cf->G, L = a->L;
  const int32_t *pstart = a->assign + cf->assign_off, *order = pstart + G + 1;
  memset(cc, 0, sizeof *cc);
  cc->f = hs_calloc(4 * (size_t)ng + 5 * (size_t)G, sizeof *cc->f);
  if (!cc->f)
    return hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  cc->cst = cc->f + ng;
  cc->mcoef = cc->cst + ng;
  cc->mcap = cc->mcoef + ng;
  cc->fixed = cc->mcap + ng;
  cc->ysync = cc->fixed + G;
  cc->U = cc->ysync + G;
  cc->tlo = cc->U + G;
  cc->link = cc->tlo + G;
  double cb = cut_bytes(a, cf->b);
  /* the gradient all-reduce runs over the first stages of all pipelines:
   * one estimate per distinct gradient size (one per TP degree) */
  int32_t devs[64], nd = 0;
  for (int32_t h = 0; h < G && nd < 64; h++)
    devs[nd++] = groups[order[pstart[h]]].first_device;
  bool leaves_node = false;
  for (int32_t h = 1; h < nd; h++)
    leaves_node |= a->c->devices[devs[h]].node != a->c->devices[devs[0]].node;
  double memo_bytes[4], memo_s[4];
  int32_t n_memo = 0;
  /* ZeRO over the G holders of every op (one stage per pipeline): state
   * per parameter as the simulator counts it (weights, gradients,
   * optimizer at the plan's precision), the stored 16 B/param scaled to it;
   * the optimizer step split G ways; ZeRO-3 adds the parameter all-gathers
   * to the gradient sync (1.5x at equal weight and gradient bytes, as
   * hs_estimate_plan) */
  hs_state_bytes_t sbp = hs_precision_state_bytes(a->o.precision);
  /* gradients kept and reduced at 4 bytes under grad_reduce_dtype fp32 */
  double gb = hs_practice_grad_bytes(&a->o.practice, a->o.precision);
  double zdiv = G > 1 ? (double)G : 1.0;
  double zf = ((cf->z >= 3 ? sbp.weight / zdiv : sbp.weight) +
               (cf->z >= 2 ? gb / zdiv : gb) +
               (cf->z >= 1 ? sbp.optimizer / zdiv : sbp.optimizer)) /
              HS_ADAM_STATE_BYTES_PER_PARAM;
  double optf = cf->z >= 1 ? 1.0 / zdiv : 1.0;
  double syncf = cf->z >= 3 ? 0.5 + sbp.weight / gb : 1.0;
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    double U = 0.0, cuts = 0.0, c_in = 0.0, inv_f = 0.0, cst_f = 0.0, link = 0.0;
    /* async sends: hetero-1f1b's warm-up (hs__autohet_set_warmups' rule) keeps
     * ceil(c / t_fwd) more microbatches in flight in front of a cross-site
     * send; t_fwd is taken at the stage's perfectly balanced share of the
     * blocks (a third of f per block), made non-increasing along the
     * pipeline. warm[] holds the in-flight counts of the stages. */
    double inv_all = 0.0, warm[64];
    for (int32_t s = 0; s < S; s++)
      inv_all += gc[order[pstart[g] + s]].f_s > 0 ? 1.0 / gc[order[pstart[g] + s]].f_s : 0.0;
    for (int32_t s = S; s-- > 0;) {
      int32_t p = pstart[g] + s, gi = order[p];
      double w = (double)(S - s);
      if (cf->async && s + 1 < S &&
          a->c->devices[groups[gi].first_device].site !=
              a->c->devices[groups[order[p + 1]].first_device].site) {
        double c = p2p_s(a, groups[gi].first_device,
                                     groups[order[p + 1]].first_device, cb,
                                     HS_MIN(groups[gi].t, groups[order[p + 1]].t));
        double tf = inv_all > 0 ? (double)L / inv_all / 3.0 : 0.0;
        if (tf > 0)
          w += ceil(c / tf);
      }
      if (s + 1 < S && s + 1 < 64)
        w = fmax(w, warm[s + 1] + 1.0);
      if (s < 64)
        warm[s] = w;
    }
    for (int32_t s = 0; s < S; s++) {
      int32_t p = pstart[g] + s, gi = order[p];
      const gcost_t *q = &gc[gi];
      double c_out = 0.0;
      if (s + 1 < S)
        c_out = p2p_s(a, groups[gi].first_device,
                                  groups[order[p + 1]].first_device, cb,
                                  HS_MIN(groups[gi].t, groups[order[p + 1]].t));
      cuts += c_out;
      link = fmax(link, c_out);
      /* blocking 1F1B: a stage's step includes its send and receive; async
       * (hetero-1f1b): they overlap compute, and the link is a resource of
       * its own (tmax >= link) */
      double cst = (s == 0 ? q->pre_s : 0.0) + (s == S - 1 ? q->post_s : 0.0) +
                   (cf->async ? 0.0 : c_in + c_out);
      cc->f[p] = q->f_s;
      cc->cst[p] = cst;
      U = fmax(U, q->f_s * (L - S + 1) + cst);
      if (q->f_s > 0) {
        inv_f += 1.0 / q->f_s;
        cst_f += cst / q->f_s;
      }
      /* memory: in flight S - s microbatches (1F1B), more under async
       * sends in front of a slow link (warm[]) */
      double k_in = cf->async && s < 64 ? warm[s] : (double)(S - s);
      cc->mcoef[p] = q->state_l * zf + q->act_l * k_in;
      cc->mcap[p] = q->cap - ((s == 0 ? q->state_pre * zf + q->act_pre * k_in : 0.0) +
                              (s == S - 1 ? q->state_post * zf + q->act_post * k_in : 0.0) + q->trans);
      c_in = c_out;
    }
    /* exposed gradient sync + optimizer of the first stage, per block */
    int32_t g0 = order[pstart[g]];
    double y_l = 0.0;
    if (G > 1) {
      /* 2 bytes per parameter, scaled by an fp32 reduce's 4 / 2 */
      double grad_bytes = gc[g0].state_l / HS_ADAM_STATE_BYTES_PER_PARAM * 2.0 * (gb / sbp.grad);
      int32_t k = 0;
      while (k < n_memo && memo_bytes[k] != grad_bytes)
        k++;
      if (k == n_memo) {
        if (allreduce_s(a, devs, nd, grad_bytes * 16.0, &y_l) != HS_OK) {
          hs_free(cc->f);
          memset(cc, 0, sizeof *cc);
          return hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating a gradient sync");
        }
        y_l /= 16.0;
        if (n_memo < 4) {
          memo_bytes[n_memo] = grad_bytes;
          memo_s[n_memo++] = y_l;
        }
      } else {
        y_l = memo_s[k];
      }
      if (leaves_node)
        y_l *= groups[g0].t;
      y_l *= syncf;
    }
    double fixed = 2.0 * cuts + gc[g0].opt_pre * optf;
    for (int32_t s = 0; s < S; s++) {
      int32_t gi = order[pstart[g] + s];
      fixed += (s == 0 ? gc[gi].pre_s : 0.0) + (s == S - 1 ? gc[gi].post_s : 0.0);
    }
    cc->fixed[g] = fixed;
    cc->ysync[g] = y_l + gc[g0].opt_l * optf;
    cc->link[g] = cf->async ? link : 0.0;
    cc->U[g] = fmax(U, cc->link[g]);
    cc->tlo[g] = fmax(inv_f > 0 ? (L + cst_f) / inv_f : 0.0, cc->link[g]);
  }
  return HS_OK;
}


/* The plan of configuration cf with lss[p] blocks on stage position p and
 * mgs[g] microbatches on pipeline g (integer values). */
hs_status_t hs__autohet_build_plan(autohet_t *a, const config_t *cf, const double *lss,
                              const double *mgs, hs_plan_t *plan, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  const group_t *groups = a->groups[cf->pat];
  int32_t G = cf->G, L = a->L;
  const int32_t *pstart = a->assign + cf->assign_off, *order = pstart + G + 1;
  hs_strlcpy(plan->strategy, "autohet", sizeof plan->strategy);
  hs_strlcpy(plan->schedule, "1f1b", sizeof plan->schedule);
  plan->precision = a->o.precision;
  HS_CHECK(hs_plan_alloc_pipelines(plan, G));
  for (int32_t g = 0; g < G; g++) {
    int32_t S = pstart[g + 1] - pstart[g];
    hs_plan_pipeline_t *pl = &plan->pipelines[g];
    pl->microbatch_size = cf->b;
    pl->n_microbatches = (int32_t)llround(mgs[g]);
    HS_CHECK(hs_plan_alloc_stages(pl, S));
    int32_t cum = 0;
    for (int32_t s = 0; s < S; s++) {
      int32_t gi = order[pstart[g] + s];
      int32_t ls = (int32_t)llround(lss[pstart[g] + s]);
      hs_plan_stage_t *stg = &pl->stages[s];
      stg->op_first = s == 0 ? 0 : a->block_first[cum];
      cum += ls;
      stg->op_last = s == S - 1 ? (int32_t)a->m->n_ops : a->block_first[cum];
      stg->recompute = cf->rc;
      HS_CHECK(hs_plan_alloc_replicas(stg, 1));
      int32_t devs[8];
      for (int32_t k = 0; k < groups[gi].t; k++)
        devs[k] = groups[gi].first_device + k;
      HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[0], devs, groups[gi].t));
      stg->replicas[0].share = 1.0;
    }
    if (cum != L)
      HS_FAIL(hs_error_set(err, HS_EINTERNAL, "autohet: MILP blocks %d != %d", cum, L));
  }
  hs_practice_t pr = a->base_pr;
  pr.zero_stage = cf->z;
  hs_plan_set_practice(plan, &pr); /* no sequence parallelism without TP */
  if (cf->async) {
    hs_strlcpy(plan->schedule, "hetero-1f1b", sizeof plan->schedule);
    plan->async_send = true;
    if (hs__autohet_set_warmups(a, plan) != HS_OK)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "autohet: out of memory estimating warm-ups"));
  }
cleanup:
  if (st == HS_ENOMEM)
    hs_error_set(err, HS_ENOMEM, "autohet: out of memory");
  return st;
}

/* hetero-1f1b warm-up depths of plan p (hapt's rule, search/hapt_space.c):
 * stage r of a pipeline of S runs S - r - 1 forwards before its first
 * backward, plus ceil(c / t_fwd) when its outgoing activation crosses
 * sites (forwards keep the slow link busy while the send is in flight),
 * then made non-increasing along the pipeline (a shallower warm-up than
 * the successor's deadlocks). O(stages) estimates. */
hs_status_t hs__autohet_set_warmups(autohet_t *a, hs_plan_t *p)
{
  hs_estimator_set_practice(a->est, &p->practice);
  hs_status_t st = HS_OK;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t S = pl->n_stages;
    for (int32_t s = 0; s < S; s++) {
      hs_plan_stage_t *stg = &pl->stages[s];
      const hs_plan_replica_t *r = &stg->replicas[0];
      int32_t extra = 0;
      if (s + 1 < S) {
        const hs_plan_replica_t *nx = &pl->stages[s + 1].replicas[0];
        int32_t d0 = r->devices[0], d1 = nx->devices[0];
        if (a->c->devices[d0].site != a->c->devices[d1].site) {
          hs_stage_cost_t sc;
          st = hs_estimate_stage(a->est, stg->op_first, stg->op_last, r->devices, r->n_devices,
                                 pl->microbatch_size, stg->recompute, &sc);
          if (st != HS_OK)
            break;
          double c = hs_estimate_p2p_s(a->est, d0, d1,
                                       a->m->ops[stg->op_last - 1].out_bytes * pl->microbatch_size,
                                       HS_MIN(r->n_devices, nx->n_devices));
          if (sc.fwd_s > 0)
            extra = (int32_t)ceil(c / sc.fwd_s);
        }
      }
      stg->warmup = S - s - 1 + extra;
    }
    for (int32_t s = S - 2; s >= 0; s--)
      pl->stages[s].warmup = HS_MAX(pl->stages[s].warmup, pl->stages[s + 1].warmup + 1);
    if (st != HS_OK)
      break;
  }
  hs_estimator_set_practice(a->est, &a->base_pr);
  return st;
}


void hs__autohet_ccoef_free(ccoef_t *cc)
{
  free(cc->f);
  memset(cc, 0, sizeof *cc);
}
