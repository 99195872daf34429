/*
 * plan.c - the plan type: lifetime, the Megatron-style grid constructor and
 * validation against a model and a cluster.
 *
 * Invariants after hs_plan_validate() succeeds: every pipeline's stages cover
 * the model's ops [0, n_ops) contiguously; every replica's devices exist, are
 * of one GPU type, and no device serves two stages except chunks of one
 * interleaved rank; replica shares of a stage sum to 1; all TP groups that
 * hold one op have the same TP degree.
 */
#include "hs_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const recompute_names[] = {"none", "selective", "full"};

const char *hs_recompute_name(hs_recompute_t r)
{
  return (unsigned)r < HS_ARRAY_LEN(recompute_names) ? recompute_names[r] : "?";
}

hs_status_t hs_recompute_parse(const char *s, hs_recompute_t *out)
{
  for (size_t i = 0; i < HS_ARRAY_LEN(recompute_names); i++)
    if (strcmp(s, recompute_names[i]) == 0) {
      *out = (hs_recompute_t)i;
      return HS_OK;
    }
  return HS_EINVAL;
}

int32_t hs_plan_zero_stage(const hs_plan_t *p)
{
  int32_t z = p->practice.zero_stage;
  return p->optimizer_sharding && z < 1 ? 1 : z;
}

void hs_plan_init(hs_plan_t *p)
{
  memset(p, 0, sizeof(*p));
  hs_strlcpy(p->strategy, "manual", sizeof p->strategy);
  hs_strlcpy(p->schedule, "1f1b", sizeof p->schedule);
  p->chunks = 1;
  p->precision = HS_DTYPE_BF16;
  p->bucket_bytes = 100e6;
  hs_practice_init(&p->practice);
}

static void stage_destroy(hs_plan_stage_t *st)
{
  for (int32_t r = 0; r < st->n_replicas; r++)
    free(st->replicas[r].devices);
  free(st->replicas);
  free(st->order);
  st->order = NULL;
  st->replicas = NULL;
  st->n_replicas = 0;
}

void hs_plan_destroy(hs_plan_t *p)
{
  if (!p)
    return;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &p->pipelines[i];
    for (int32_t s = 0; s < pl->n_stages; s++)
      stage_destroy(&pl->stages[s]);
    free(pl->stages);
  }
  free(p->pipelines);
  free(p->shards);
  free(p->device_ratios);
  p->pipelines = NULL;
  p->n_pipelines = 0;
  p->shards = NULL;
  p->n_shards = 0;
  p->device_ratios = NULL;
  p->n_device_ratios = 0;
}

hs_status_t hs_plan_alloc_pipelines(hs_plan_t *p, int32_t n)
{
  if (n <= 0)
    return HS_EINVAL;
  p->pipelines = hs_calloc((size_t)n, sizeof *p->pipelines);
  if (!p->pipelines)
    return HS_ENOMEM;
  p->n_pipelines = n;
  return HS_OK;
}

hs_status_t hs_plan_alloc_stages(hs_plan_pipeline_t *pl, int32_t n)
{
  if (n <= 0)
    return HS_EINVAL;
  pl->stages = hs_calloc((size_t)n, sizeof *pl->stages);
  if (!pl->stages)
    return HS_ENOMEM;
  pl->n_stages = n;
  for (int32_t i = 0; i < n; i++)
    pl->stages[i].warmup = -1;
  return HS_OK;
}

hs_status_t hs_plan_alloc_replicas(hs_plan_stage_t *st, int32_t n)
{
  if (n <= 0)
    return HS_EINVAL;
  st->replicas = hs_calloc((size_t)n, sizeof *st->replicas);
  if (!st->replicas)
    return HS_ENOMEM;
  st->n_replicas = n;
  for (int32_t i = 0; i < n; i++)
    st->replicas[i].share = 1.0 / n;
  return HS_OK;
}

hs_status_t hs_plan_replica_set_devices(hs_plan_replica_t *r, const int32_t *devices, int32_t n)
{
  if (n <= 0)
    return HS_EINVAL;
  int32_t *d = hs_calloc((size_t)n, sizeof *d);
  if (!d)
    return HS_ENOMEM;
  memcpy(d, devices, (size_t)n * sizeof *d);
  free(r->devices);
  r->devices = d;
  r->n_devices = n;
  return HS_OK;
}

hs_status_t hs_plan_stage_set_order(hs_plan_stage_t *st, const char *order)
{
  char *o = NULL;
  if (order) {
    size_t n = strlen(order);
    if (!(o = hs_calloc(n + 1, 1)))
      return HS_ENOMEM;
    memcpy(o, order, n);
  }
  free(st->order);
  st->order = o;
  return HS_OK;
}

bool hs__order_same(const char *a, const char *b)
{
  return a == b || (a && b && strcmp(a, b) == 0);
}

hs_status_t hs_plan_copy(const hs_plan_t *src, hs_plan_t *dst, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_plan_init(dst);
  *dst = *src;
  dst->pipelines = NULL;
  dst->n_pipelines = 0;
  dst->shards = NULL;
  dst->n_shards = 0;
  dst->device_ratios = NULL;
  dst->n_device_ratios = 0;
  if (src->n_pipelines > 0)
    HS_CHECK(hs_plan_alloc_pipelines(dst, src->n_pipelines));
  for (int32_t i = 0; i < src->n_pipelines; i++) {
    const hs_plan_pipeline_t *sp = &src->pipelines[i];
    hs_plan_pipeline_t *dp = &dst->pipelines[i];
    dp->microbatch_size = sp->microbatch_size;
    dp->n_microbatches = sp->n_microbatches;
    HS_CHECK(hs_plan_alloc_stages(dp, sp->n_stages));
    for (int32_t s = 0; s < sp->n_stages; s++) {
      const hs_plan_stage_t *ss = &sp->stages[s];
      hs_plan_stage_t *ds = &dp->stages[s];
      ds->op_first = ss->op_first;
      ds->op_last = ss->op_last;
      ds->recompute = ss->recompute;
      ds->warmup = ss->warmup;
      if (ss->order)
        HS_CHECK(hs_plan_stage_set_order(ds, ss->order));
      HS_CHECK(hs_plan_alloc_replicas(ds, ss->n_replicas));
      for (int32_t r = 0; r < ss->n_replicas; r++) {
        ds->replicas[r].share = ss->replicas[r].share;
        HS_CHECK(hs_plan_replica_set_devices(&ds->replicas[r], ss->replicas[r].devices,
                                             ss->replicas[r].n_devices));
      }
    }
  }
  if (src->n_shards > 0) {
    dst->shards = hs_calloc((size_t)src->n_shards, sizeof *dst->shards);
    if (!dst->shards)
      HS_FAIL(HS_ENOMEM);
    memcpy(dst->shards, src->shards, (size_t)src->n_shards * sizeof *dst->shards);
    dst->n_shards = src->n_shards;
  }
  if (src->n_device_ratios > 0) {
    dst->device_ratios = hs_calloc((size_t)src->n_device_ratios, sizeof(double));
    if (!dst->device_ratios)
      HS_FAIL(HS_ENOMEM);
    memcpy(dst->device_ratios, src->device_ratios, (size_t)src->n_device_ratios * sizeof(double));
    dst->n_device_ratios = src->n_device_ratios;
  }
cleanup:
  if (st != HS_OK) {
    hs_plan_destroy(dst);
    hs_error_set(err, st, "copying plan: %s", hs_status_message(st));
  }
  return st;
}

int64_t hs_plan_global_batch(const hs_plan_t *p)
{
  int64_t b = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    b += (int64_t)p->pipelines[i].microbatch_size * p->pipelines[i].n_microbatches;
  return b;
}

/* The same count without memory, O(D^2) in the device slots D: used only
 * when the bitmap cannot be allocated, so that the count never fails. */
static int32_t n_devices_quadratic(const hs_plan_t *p)
{
  int32_t n = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++)
      for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas; r++) {
        const hs_plan_replica_t *rp = &p->pipelines[i].stages[s].replicas[r];
        for (int32_t d = 0; d < rp->n_devices; d++) {
          int32_t dev = rp->devices[d];
          bool before = dev < 0;
          for (int32_t i2 = 0; i2 <= i && !before; i2++)
            for (int32_t s2 = 0; s2 < p->pipelines[i2].n_stages && !before; s2++)
              for (int32_t r2 = 0; r2 < p->pipelines[i2].stages[s2].n_replicas && !before; r2++) {
                const hs_plan_replica_t *q = &p->pipelines[i2].stages[s2].replicas[r2];
                if (q == rp) {
                  for (int32_t d2 = 0; d2 < d && !before; d2++)
                    before = q->devices[d2] == dev;
                  goto next; /* slots after this one come later */
                }
                for (int32_t d2 = 0; d2 < q->n_devices && !before; d2++)
                  before = q->devices[d2] == dev;
              }
        next:
          if (!before)
            n++;
        }
      }
  return n;
}

int32_t hs_plan_n_devices(const hs_plan_t *p)
{
  int32_t maxd = -1;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++)
      for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas; r++) {
        const hs_plan_replica_t *rp = &p->pipelines[i].stages[s].replicas[r];
        for (int32_t d = 0; d < rp->n_devices; d++)
          maxd = HS_MAX(maxd, rp->devices[d]);
      }
  if (maxd < 0)
    return 0;
  uint8_t *seen = hs_calloc((size_t)maxd + 1, 1);
  if (!seen)
    return n_devices_quadratic(p);
  int32_t n = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    for (int32_t s = 0; s < p->pipelines[i].n_stages; s++)
      for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas; r++) {
        const hs_plan_replica_t *rp = &p->pipelines[i].stages[s].replicas[r];
        for (int32_t d = 0; d < rp->n_devices; d++)
          if (rp->devices[d] >= 0 && !seen[rp->devices[d]]) {
            seen[rp->devices[d]] = 1;
            n++;
          }
      }
  free(seen);
  return n;
}

void hs_grid_opts_init(hs_grid_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->tp = o->pp = o->dp = 1;
  o->microbatch_size = 1;
  o->chunks = 1;
  o->recompute = HS_RECOMPUTE_NONE;
  hs_practice_init(&o->practice);
}

void hs_grid_opts_defaults(hs_grid_opts_t *o, const hs_cluster_t *c)
{
  int64_t cp = o->practice.context_parallel > 0 ? o->practice.context_parallel : 1;
  if (o->dp <= 0 && o->tp > 0 && o->pp > 0) {
    int64_t rest = (int64_t)c->n_devices / ((int64_t)o->tp * o->pp * cp);
    o->dp = rest > 0 ? (int32_t)HS_MIN(rest, (int64_t)INT32_MAX) : 1;
  }
  if (o->global_batch <= 0)
    o->global_batch = (int64_t)o->dp * o->microbatch_size * o->pp * 4;
}

/* Splits ops into `n` stages: blocks evenly (the first `rem` stages get one
 * more block), ops outside blocks stay with their neighbours (embedding in
 * the first stage, final norm/head/loss in the last). Writes n+1 boundaries. */
static hs_status_t even_split(const hs_model_t *m, int32_t n, int32_t *bounds, hs_error_t *err)
{
  int32_t max_layer = -1;
  for (size_t i = 0; i < m->n_ops; i++)
    max_layer = HS_MAX(max_layer, m->ops[i].layer);
  int32_t n_layers = max_layer + 1;
  if (n_layers <= 0) {
    /* No block structure: split the op sequence evenly. */
    if ((size_t)n > m->n_ops)
      return hs_error_set(err, HS_EINVAL, "pp: %d stages but the model has only %zu ops", n,
                          m->n_ops);
    for (int32_t s = 0; s <= n; s++)
      bounds[s] = (int32_t)((m->n_ops * (size_t)s) / (size_t)n);
    return HS_OK;
  }
  if (n > n_layers)
    return hs_error_set(err, HS_EINVAL, "pp: %d stages but the model has only %d layers", n,
                        n_layers);
  bounds[0] = 0;
  bounds[n] = (int32_t)m->n_ops;
  int32_t base = n_layers / n, rem = n_layers % n, layer_end = 0;
  for (int32_t s = 1; s < n; s++) {
    layer_end += base + (s - 1 < rem ? 1 : 0);
    /* first op of block `layer_end` */
    size_t i = 0;
    while (i < m->n_ops && m->ops[i].layer != layer_end)
      i++;
    bounds[s] = (int32_t)i;
  }
  return HS_OK;
}

hs_status_t hs_plan_grid(const hs_model_t *m, const hs_cluster_t *c, const hs_grid_opts_t *o,
                         hs_plan_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  int32_t *bounds = NULL;
  hs_plan_init(out);
  if (o->tp <= 0 || o->pp <= 0 || o->dp <= 0 || o->microbatch_size <= 0 || o->chunks <= 0)
    return hs_error_set(err, HS_EINVAL,
                        "tp, pp, dp, microbatch size and chunks must be positive, got tp=%d pp=%d "
                        "dp=%d microbatch-size=%d chunks=%d",
                        o->tp, o->pp, o->dp, o->microbatch_size, o->chunks);
  /* Bounded first, so that no product below overflows (API callers may pass
   * anything; the CLI already limits these to 1024). */
  if (o->tp > HS_CLUSTER_MAX_DEVICES || o->pp > HS_CLUSTER_MAX_DEVICES ||
      o->dp > HS_CLUSTER_MAX_DEVICES || o->chunks > HS_CLUSTER_MAX_DEVICES ||
      o->microbatch_size > HS_CLUSTER_MAX_DEVICES)
    return hs_error_set(err, HS_ELIMIT,
                        "tp, pp, dp, microbatch size and chunks must be at most %d, got tp=%d "
                        "pp=%d dp=%d microbatch-size=%d chunks=%d",
                        HS_CLUSTER_MAX_DEVICES, o->tp, o->pp, o->dp, o->microbatch_size, o->chunks);
  int32_t cp = o->practice.context_parallel;
  if (cp <= 0 || cp > HS_CLUSTER_MAX_DEVICES)
    return hs_error_set(err, HS_EINVAL, "context parallelism (--context-parallel): must be 1 to %d, got %d",
                        HS_CLUSTER_MAX_DEVICES, cp);
  int64_t need = (int64_t)o->tp * o->pp * o->dp * cp;
  if (o->first_device < 0 || need + o->first_device > (int64_t)c->n_devices) {
    if (cp > 1)
      return hs_error_set(err, HS_EINVAL,
                          "tp x pp x dp x cp = %d x %d x %d x %d = %lld devices, but cluster %s has %zu",
                          o->tp, o->pp, o->dp, cp, (long long)need, c->name, c->n_devices);
    return hs_error_set(err, HS_EINVAL,
                        "tp x pp x dp = %d x %d x %d = %lld devices, but cluster %s has %zu", o->tp,
                        o->pp, o->dp, (long long)need, c->name, c->n_devices);
  }
  int64_t per = (int64_t)o->dp * o->microbatch_size;
  int64_t gb = o->global_batch > 0 ? o->global_batch : per;
  if (gb % per != 0)
    return hs_error_set(err, HS_EINVAL,
                        "global batch %lld is not a multiple of dp x microbatch size = %lld",
                        (long long)gb, (long long)per);
  const char *sched = o->schedule ? o->schedule : "1f1b";
  const hs_schedule_t *sc = hs_schedule_find(sched);
  if (!sc)
    return hs_error_set(err, HS_EINVAL, "schedule: unknown schedule \"%s\"", sched);
  int32_t v = sc->interleaved ? o->chunks : 1;
  if ((int64_t)o->pp * v > (int64_t)m->n_ops)
    return hs_error_set(err, HS_EINVAL, "pp x chunks = %d x %d stages but the model has only %zu ops",
                        o->pp, v, m->n_ops);
  int32_t n_st = o->pp * v;
  bounds = hs_calloc((size_t)n_st + 1, sizeof *bounds);
  if (!bounds)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  if (o->stage_layers) {
    if (o->n_stage_layers != n_st)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "stage_layers: %d counts, but pp x chunks = %d x %d = %d stages",
                           o->n_stage_layers, o->pp, v, n_st));
    HS_CHECK(hs_layout_bounds(m, o->stage_layers, n_st, bounds, err));
  } else {
    HS_CHECK(even_split(m, n_st, bounds, err));
  }
  hs_strlcpy(out->strategy, "grid", sizeof out->strategy);
  hs_strlcpy(out->schedule, sc->name, sizeof out->schedule);
  out->chunks = v;
  out->async_send = sc->default_async_send;
  out->precision = m->dtype == HS_DTYPE_FP32 ? HS_DTYPE_FP32 : m->dtype;
  out->practice = o->practice;
  HS_CHECK(hs_plan_alloc_pipelines(out, o->dp));
  for (int32_t d = 0; d < o->dp; d++) {
    hs_plan_pipeline_t *pl = &out->pipelines[d];
    pl->microbatch_size = o->microbatch_size;
    int64_t nmb = gb / per;
    if (nmb > INT32_MAX)
      HS_FAIL(hs_error_set(err, HS_ELIMIT, "global batch %lld: too many microbatches", (long long)gb));
    pl->n_microbatches = (int32_t)nmb;
    HS_CHECK(hs_plan_alloc_stages(pl, n_st));
    for (int32_t s = 0; s < n_st; s++) {
      hs_plan_stage_t *stg = &pl->stages[s];
      stg->op_first = bounds[s];
      stg->op_last = bounds[s + 1];
      stg->recompute = o->recompute;
      /* context parallelism: cp replicas, each 1/cp of every microbatch
       * (of its sequence), as Megatron-Core's CP ranks */
      HS_CHECK(hs_plan_alloc_replicas(stg, cp));
      int32_t rank = s % o->pp;
      int32_t devs[1024];
      if (o->tp > (int32_t)HS_ARRAY_LEN(devs))
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "tp %d above the limit of 1024", o->tp));
      for (int32_t q = 0; q < cp; q++) {
        for (int32_t t = 0; t < o->tp; t++)
          devs[t] = o->first_device + (int32_t)((((int64_t)rank * o->dp + d) * cp + q) * o->tp + t);
        HS_CHECK(hs_plan_replica_set_devices(&stg->replicas[q], devs, o->tp));
      }
    }
  }
cleanup:
  free(bounds);
  if (st != HS_OK) {
    if (err && err->status == HS_OK)
      hs_error_set(err, st, "building grid plan: %s", hs_status_message(st));
    hs_plan_destroy(out);
  }
  return st;
}

/* ---- validation ------------------------------------------------------------ */

/* Largest sum over pipelines of microbatches x stages hs_plan_validate
 * accepts: 2^23, about 8 minutes and 2 GB of simulation. */
#define HS_PLAN_MAX_MB_STAGES (INT64_C(1) << 23)
/* Largest number of device places (replica devices summed over stages, so
 * a device holding v interleaved chunks counts v times): 2^18 = 262144,
 * about 40 s and 1.3 GB of simulation extrapolated from 65536 GPUs (8.4 s,
 * 320 MB); a plan over 2^20 GPUs ran past 120 s and 2 GB. */
#define HS_PLAN_MAX_DEVICE_SLOTS (INT64_C(1) << 18)

typedef struct owner {
  int32_t pipeline, stage; /* -1 = unused */
} owner_t;

bool hs_model_tp_ok(const hs_model_t *m, int32_t tp)
{
  if (tp <= 1 || !m->from_generator || m->cfg.heads <= 0)
    return true;
  if (m->cfg.heads % tp != 0)
    return false;
  int64_t kv = m->cfg.kv_heads > 0 ? m->cfg.kv_heads : m->cfg.heads;
  /* KV heads are split, or (fewer KV heads than ranks) replicated evenly */
  return kv % tp == 0 || (kv < tp && tp % kv == 0);
}

/* Context and expert parallelism (practice.context_parallel,
 * practice.expert_parallel): the groups they need must exist and be
 * uniform. O(pipelines x stages x replicas). */
/* An explicit hetero-1f1b stage order: only that schedule, one chunk,
 * 2m letters F/B, m of each, and no prefix with more backwards than
 * forwards (microbatch k's backward after its forward). */
static hs_status_t check_order(const char *o, const char *sched, int32_t v, int32_t m,
                               const char *f, int32_t i, int32_t s, hs_error_t *err)
{
  if (strcmp(sched, "hetero-1f1b") != 0 || v != 1)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].order: only hetero-1f1b with chunks=1 runs "
                        "an explicit order (schedule \"%s\", chunks=%d)",
                        f, i, s, sched, v);
  size_t n = strlen(o);
  int32_t fw = 0, bw = 0;
  for (size_t k = 0; k < n && k <= 2 * (size_t)m; k++) {
    if (o[k] == 'F')
      fw++;
    else if (o[k] == 'B')
      bw++;
    else
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].order: letter %zu is '%c', only F "
                          "(forward) and B (backward)",
                          f, i, s, k, (o[k] > 32 && o[k] < 127) ? o[k] : '?');
    if (bw > fw)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].order: backward %d at letter %zu comes "
                          "before its forward",
                          f, i, s, bw - 1, k);
  }
  if (n != 2 * (size_t)m || fw != m || bw != m)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].order: \"%.40s%s\" has %zu letters, "
                        "need %d Fs and %d Bs (microbatches=%d)",
                        f, i, s, o, n > 40 ? "..." : "", n, m, m, m);
  return HS_OK;
}

/* Forwards stage stg runs before its k-th backward under hetero-1f1b. */
static int32_t fwd_before(const hs_plan_stage_t *stg, int32_t ranks, int32_t s, int32_t m,
                          int32_t k)
{
  if (stg->order) {
    int32_t fw = 0, bw = 0;
    for (const char *c = stg->order; *c; c++) {
      if (*c == 'B' && bw++ == k)
        return fw;
      if (*c == 'F')
        fw++;
    }
    return fw;
  }
  int32_t w = stg->warmup >= 0 ? stg->warmup : ranks - s - 1;
  return w + 1 + k < m ? w + 1 + k : m;
}

static hs_status_t validate_cp_ep(const hs_plan_t *p, const hs_model_t *m, const char *f,
                                  hs_error_t *err)
{
  int32_t C = p->practice.context_parallel, E = p->practice.expert_parallel;
  if (C < 1 || C > HS_CLUSTER_MAX_DEVICES)
    return hs_error_set(err, HS_EINVAL, "%s: context_parallel (--context-parallel): must be 1 to %d, got %d",
                        f, HS_CLUSTER_MAX_DEVICES, (int)C);
  if (E < 1 || E > HS_CLUSTER_MAX_DEVICES)
    return hs_error_set(err, HS_EINVAL, "%s: expert_parallel (--expert-parallel): must be 1 to %d, got %d",
                        f, HS_CLUSTER_MAX_DEVICES, (int)E);
  if ((C > 1 || E > 1) && p->n_shards > 0)
    return hs_error_set(err, HS_EINVAL,
                        "%s: %s: not modelled together with SPMD sharding (sharding[]); drop one", f,
                        C > 1 ? "context_parallel" : "expert_parallel");
  if (C > 1) {
    if (m->seq_len % C != 0)
      return hs_error_set(err, HS_EINVAL,
                          "%s: context_parallel (--context-parallel): %d does not divide the sequence "
                          "length %lld",
                          f, (int)C, (long long)m->seq_len);
    for (int32_t i = 0; i < p->n_pipelines; i++)
      for (int32_t s = 0; s < p->pipelines[i].n_stages; s++) {
        const hs_plan_stage_t *stg = &p->pipelines[i].stages[s];
        if (stg->n_replicas % C != 0)
          return hs_error_set(err, HS_EINVAL,
                              "%s: pipelines[%d].stages[%d].replicas: %d replicas do not form groups "
                              "of context_parallel = %d",
                              f, i, s, stg->n_replicas, (int)C);
        for (int32_t r = 0; r < stg->n_replicas; r++) {
          const hs_plan_replica_t *a = &stg->replicas[r - r % C], *b = &stg->replicas[r];
          if (a->n_devices != b->n_devices || fabs(a->share - b->share) > 1e-9)
            return hs_error_set(err, HS_EINVAL,
                                "%s: pipelines[%d].stages[%d].replicas[%d]: a context-parallel group "
                                "needs equal TP degrees and shares (replicas[%d]: %d devices, share "
                                "%g; here %d, %g)",
                                f, i, s, r, r - r % C, a->n_devices, a->share, b->n_devices, b->share);
        }
      }
  }
  if (E > 1) {
    int32_t experts = 0;
    for (size_t k = 0; k < m->n_ops; k++)
      if (m->ops[k].kind == HS_OP_MOE_EXPERT)
        experts = HS_MAX(experts, m->ops[k].experts);
    if (experts <= 1)
      return hs_error_set(err, HS_EINVAL,
                          "%s: expert_parallel (--expert-parallel): %d, but model %s has no MoE "
                          "experts",
                          f, (int)E, m->name);
    if (experts % E != 0)
      return hs_error_set(err, HS_EINVAL,
                          "%s: expert_parallel (--expert-parallel): %d does not divide the model's %d "
                          "experts",
                          f, (int)E, experts);
    if (p->n_pipelines % E != 0)
      return hs_error_set(err, HS_EINVAL,
                          "%s: expert_parallel (--expert-parallel): %d does not divide the %d "
                          "pipelines (the data-parallel degree the expert groups are cut from)",
                          f, (int)E, p->n_pipelines);
    if (hs_plan_zero_stage(p) >= 3)
      return hs_error_set(err, HS_EINVAL,
                          "%s: expert_parallel (--expert-parallel) %d with zero_stage 3: not "
                          "modelled (use ZeRO 0-2 with expert parallelism)",
                          f, (int)E);
    for (int32_t i = 0; i < p->n_pipelines; i++) {
      const hs_plan_pipeline_t *a = &p->pipelines[i - i % E], *b = &p->pipelines[i];
      bool same = a->n_stages == b->n_stages && a->microbatch_size == b->microbatch_size &&
                  a->n_microbatches == b->n_microbatches;
      for (int32_t s = 0; same && s < a->n_stages; s++) {
        const hs_plan_stage_t *x = &a->stages[s], *y = &b->stages[s];
        same = x->op_first == y->op_first && x->op_last == y->op_last &&
               x->n_replicas == y->n_replicas && x->warmup == y->warmup &&
               hs__order_same(x->order, y->order);
        for (int32_t r = 0; same && r < x->n_replicas; r++)
          same = x->replicas[r].n_devices == y->replicas[r].n_devices &&
                 fabs(x->replicas[r].share - y->replicas[r].share) <= 1e-9;
      }
      if (!same)
        return hs_error_set(err, HS_EINVAL,
                            "%s: pipelines[%d]: an expert-parallel group (pipelines %d-%d) needs "
                            "pipelines of the same stages, replicas, warm-ups and microbatches",
                            f, i, i - i % E, i - i % E + E - 1);
    }
  }
  return HS_OK;
}

/* Samples of a micro-batch that replica r of a stage runs: share x
 * microbatch_size x C (a context-parallel group of C replicas splits its
 * samples' sequences, so the group, not each replica, holds whole samples). */
static double replica_samples(const hs_plan_t *p, const hs_plan_pipeline_t *pl, const hs_plan_replica_t *rp)
{
  return rp->share * pl->microbatch_size * HS_MAX(p->practice.context_parallel, 1);
}

/* Every replica (context-parallel group) runs a whole number of samples,
 * at least one, of each micro-batch: what HAP and Whale run and what a
 * framework can (docs/plan.md, "Uneven shares"). O(replicas). */
static hs_status_t validate_whole_samples(const hs_plan_t *p, const char *f, hs_error_t *err)
{
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    for (int32_t s = 0; s < pl->n_stages; s++)
      for (int32_t r = 0; r < pl->stages[s].n_replicas; r++) {
        const hs_plan_replica_t *rp = &pl->stages[s].replicas[r];
        double x = replica_samples(p, pl, rp);
        if (fabs(x - nearbyint(x)) > 1e-6 * HS_MAX(1.0, x) || nearbyint(x) < 1.0)
          return hs_error_set(err, HS_EINVAL,
                              "%s: pipelines[%d].stages[%d].replicas[%d].share: %.6g of a "
                              "micro-batch of %d samples is %.6g samples per micro-batch; each "
                              "replica needs a whole number, at least 1 (shares k/%d, see "
                              "docs/plan.md \"Uneven shares\")",
                              f, i, s, r, rp->share, pl->microbatch_size, x,
                              pl->microbatch_size * HS_MAX(p->practice.context_parallel, 1));
      }
  }
  return HS_OK;
}

/* Largest-remainder rounding of n_groups targets t[g] (summing to total)
 * with a floor of one: each group gets 1 plus its share of the rest,
 * floor first, then one more to the largest remainders (ties to the lower
 * index). Equals plain largest remainder when every t[g] >= 1. out sums
 * to total; needs total >= n_groups. O(n_groups^2), n_groups is small. */
static void round_largest_remainder(const double *t, int32_t n_groups, int32_t total, int32_t *out)
{
  double rest_t = 0.0;
  for (int32_t g = 0; g < n_groups; g++)
    rest_t += fmax(t[g] - 1.0, 0.0);
  int32_t rest = total - n_groups, given = 0;
  for (int32_t g = 0; g < n_groups; g++) {
    double u = rest_t > 0.0 ? fmax(t[g] - 1.0, 0.0) * rest / rest_t : (double)rest / n_groups;
    out[g] = (int32_t)floor(u + 1e-9);
    given += out[g];
  }
  for (int32_t k = given; k < rest; k++) {
    int32_t best = -1;
    double best_frac = -1.0;
    for (int32_t g = 0; g < n_groups; g++) {
      double u = rest_t > 0.0 ? fmax(t[g] - 1.0, 0.0) * rest / rest_t : (double)rest / n_groups;
      double frac = u - out[g];
      if (frac > best_frac + 1e-12) {
        best = g;
        best_frac = frac;
      }
    }
    out[best]++;
  }
  for (int32_t g = 0; g < n_groups; g++)
    out[g] += 1;
}

#define ROUND_STACK_GROUPS 256

hs_status_t hs_plan_round_shares(hs_plan_t *p, const char *file, hs_error_t *err)
{
  const char *f = file ? file : "plan";
  int32_t C = HS_MAX(p->practice.context_parallel, 1);
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t total = pl->microbatch_size;
    for (int32_t s = 0; s < pl->n_stages; s++) {
      hs_plan_stage_t *stg = &pl->stages[s];
      int32_t n_groups = stg->n_replicas / C;
      if (n_groups < 1 || stg->n_replicas % C != 0)
        continue; /* hs_plan_validate names it */
      if (total < n_groups)
        return hs_error_set(err, HS_EINVAL,
                            "%s: pipelines[%d].stages[%d]: a micro-batch of %d samples cannot give "
                            "each of its %d replicas a whole sample",
                            f, i, s, total, n_groups);
      /* stages of up to ROUND_STACK_GROUPS groups round on the stack: the
       * planners round every candidate they pool and drop one that fails,
       * so an allocation failure here must not be possible where it would
       * silently change the answer (test_robust_fault) */
      double t_stack[ROUND_STACK_GROUPS];
      int32_t k_stack[ROUND_STACK_GROUPS];
      bool heap = n_groups > ROUND_STACK_GROUPS;
      double *t = heap ? hs_calloc((size_t)n_groups, sizeof *t) : t_stack;
      int32_t *k = heap ? hs_calloc((size_t)n_groups, sizeof *k) : k_stack;
      if (!t || !k) {
        if (heap)
          free(t), free(k);
        return hs_error_set(err, HS_ENOMEM, "out of memory");
      }
      if (!heap)
        memset(k_stack, 0, sizeof(int32_t) * (size_t)n_groups);
      double sum = 0.0;
      for (int32_t g = 0; g < n_groups; g++)
        sum += stg->replicas[g * C].share;
      for (int32_t g = 0; g < n_groups; g++)
        t[g] = sum > 0.0 ? stg->replicas[g * C].share / sum * total : (double)total / n_groups;
      round_largest_remainder(t, n_groups, total, k);
      for (int32_t r = 0; r < stg->n_replicas; r++)
        stg->replicas[r].share = (double)k[r / C] / ((double)total * C);
      if (heap)
        free(t), free(k);
    }
  }
  return HS_OK;
}

/* What the validation checks share: the plan, its model and cluster, the
 * file name for messages, and the device owners and TP degrees per op
 * collected over the stages checked so far. */
typedef struct vcheck {
  const hs_plan_t *p;
  const hs_model_t *m;
  const hs_cluster_t *c;
  const char *f;              /* file name in messages */
  const hs_schedule_t *sc;
  hs_error_t *err;
  owner_t *own;               /* [device] first (pipeline, stage) using it */
  int32_t *tp_of_op;          /* [op] TP degree of its holders, 0 = none yet */
} vcheck_t;

/* Practice options and plan-wide shape: pipelines, chunks, bucket size,
 * ZeRO stage, attention kernel, the options that need one another.
 * Reads: p (not its pipelines' stages but for sequence parallelism).
 * Guarantees: HS_EINVAL naming the first bad field, in this order. */
static hs_status_t check_options(const hs_plan_t *p, const hs_schedule_t *sc, const char *f,
                                 hs_error_t *err)
{
  if (p->n_pipelines <= 0)
    return hs_error_set(err, HS_EINVAL, "%s: pipelines: at least one pipeline is needed", f);
  if (p->chunks <= 0 || (!sc->interleaved && p->chunks != 1))
    return hs_error_set(err, HS_EINVAL, "%s: chunks: must be 1 for schedule %s, got %d", f,
                        sc->name, p->chunks);
  if (!(p->bucket_bytes > 0) || !isfinite(p->bucket_bytes))
    return hs_error_set(err, HS_EINVAL, "%s: bucket_bytes: must be positive, got %g", f,
                        p->bucket_bytes);
  if (p->practice.zero_stage < 0 || p->practice.zero_stage > 3)
    return hs_error_set(err, HS_EINVAL, "%s: zero_stage (--zero-stage): must be 0, 1, 2 or 3, got %d",
                        f, (int)p->practice.zero_stage);
  if ((unsigned)p->practice.kernels.attention > HS_ATTENTION_FLASH)
    return hs_error_set(err, HS_EINVAL, "%s: attention: unknown value %d", f,
                        (int)p->practice.kernels.attention);
  if (p->practice.tp_comm_overlap && !p->practice.sequence_parallel)
    return hs_error_set(err, HS_EINVAL,
                        "%s: tp_comm_overlap (--tp-comm-overlap): true needs sequence_parallel "
                        "(--sequence-parallel), as Megatron-Core's userbuffers overlap does",
                        f);
  if (p->practice.grad_reduce_fp32 && p->practice.grad_accum == HS_GRAD_ACCUM_ADD)
    return hs_error_set(err, HS_EINVAL,
                        "%s: grad_reduce_dtype (--grad-reduce-dtype): fp32 with grad_accum add, whose "
                        "accumulator has the gradient dtype; Megatron's fp32 reduce accumulates in its "
                        "fp32 main_grad: use add_fp32",
                        f);
  if (p->practice.sequence_parallel) {
    /* Megatron's sequence parallelism splits the TP group's sequence: it
     * needs a TP group somewhere (stages with TP 1 simply run without it) */
    bool any_tp = false;
    for (int32_t i = 0; i < p->n_pipelines && !any_tp; i++)
      for (int32_t s = 0; s < p->pipelines[i].n_stages && !any_tp; s++)
        for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas && !any_tp; r++)
          any_tp = p->pipelines[i].stages[s].replicas[r].n_devices > 1;
    if (!any_tp)
      return hs_error_set(err, HS_EINVAL,
                          "%s: sequence_parallel (--sequence-parallel): true needs tensor "
                          "parallelism (a TP group of 2 or more devices), every TP group has 1",
                          f);
  }
  return HS_OK;
}

/* Size limits. Simulation work and memory grow with microbatches x stages
 * (about 55 us and 250 bytes each) and with devices: past
 * HS_PLAN_MAX_MB_STAGES or HS_PLAN_MAX_DEVICE_SLOTS a run would take hours
 * and gigabytes, so it is refused up front (docs/robustness.md).
 * Guarantees: HS_ELIMIT naming the first pipeline past either limit. */
static hs_status_t check_limits(const hs_plan_t *p, const char *f, hs_error_t *err)
{
  int64_t mb_stages = 0, slots = 0;
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    if (pl->n_microbatches > 0 && pl->n_stages > 0)
      mb_stages += (int64_t)pl->n_microbatches * pl->n_stages;
    for (int32_t s = 0; s < pl->n_stages; s++)
      for (int32_t r = 0; r < pl->stages[s].n_replicas; r++)
        slots += HS_MAX(pl->stages[s].replicas[r].n_devices, 0);
    if (slots > HS_PLAN_MAX_DEVICE_SLOTS)
      return hs_error_set(err, HS_ELIMIT,
                          "%s: pipelines[%d]: the plan places more than %lld devices (counting "
                          "each interleaved chunk); the simulator supports at most that many",
                          f, i, (long long)HS_PLAN_MAX_DEVICE_SLOTS);
    if (mb_stages > HS_PLAN_MAX_MB_STAGES)
      return hs_error_set(err, HS_ELIMIT,
                          "%s: pipelines[%d].microbatches: the plan has more than %lld "
                          "microbatch-stage pairs (%d microbatches x %d stages here); use fewer, "
                          "larger microbatches",
                          f, i, (long long)HS_PLAN_MAX_MB_STAGES, pl->n_microbatches, pl->n_stages);
  }
  return HS_OK;
}

/* Microbatches and schedule of pipeline i: positive microbatch size and
 * count, stages a multiple of chunks, the schedule's own check.
 * Guarantees: HS_EINVAL naming the first bad field. */
static hs_status_t check_pipeline_shape(const vcheck_t *vc, int32_t i)
{
  const hs_plan_pipeline_t *pl = &vc->p->pipelines[i];
  const char *f = vc->f;
  hs_error_t *err = vc->err;
  if (pl->microbatch_size <= 0)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].microbatch_size: must be a positive integer, got %d", f,
                        i, pl->microbatch_size);
  if (pl->n_microbatches <= 0)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].microbatches: must be a positive integer, got %d", f, i,
                        pl->n_microbatches);
  if (pl->n_stages <= 0)
    return hs_error_set(err, HS_EINVAL, "%s: pipelines[%d].stages: must not be empty", f, i);
  int32_t v = vc->p->chunks;
  if (pl->n_stages % v != 0)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages: %d stages is not a multiple of chunks=%d", f, i,
                        pl->n_stages, v);
  hs_sched_params_t sp = {.p = pl->n_stages / v, .v = v, .m = pl->n_microbatches, .rank = 0,
                          .warmup = -1};
  if (vc->sc->check(&sp, err) != HS_OK) {
    hs_error_prefix(err, f);
    return HS_EINVAL;
  }
  return HS_OK;
}

/* Stage s of pipeline i, its own fields: an op range that continues at
 * *expect_first (advanced to its end), replicas, warm-up (a warning
 * outside hetero-1f1b), explicit order, and an interleaved chunk on the
 * devices of its rank's first chunk. Guarantees: HS_EINVAL naming the
 * first bad field. */
static hs_status_t check_stage_layers(const vcheck_t *vc, int32_t i, int32_t s,
                                      int32_t *expect_first)
{
  const hs_plan_pipeline_t *pl = &vc->p->pipelines[i];
  const hs_plan_stage_t *stg = &pl->stages[s];
  const char *f = vc->f;
  hs_error_t *err = vc->err;
  int32_t v = vc->p->chunks, ranks = pl->n_stages / v;
  if (stg->op_first != *expect_first)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].ops: starts at op %d but the previous "
                        "stage ends at op %d (gap or overlap)",
                        f, i, s, stg->op_first, *expect_first);
  if (stg->op_last <= stg->op_first || (size_t)stg->op_last > vc->m->n_ops)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].ops: range [%d, %d) is empty or beyond "
                        "the model's %zu ops",
                        f, i, s, stg->op_first, stg->op_last, vc->m->n_ops);
  *expect_first = stg->op_last;
  if (stg->n_replicas <= 0)
    return hs_error_set(err, HS_EINVAL, "%s: pipelines[%d].stages[%d].replicas: must not be empty",
                        f, i, s);
  if (stg->warmup >= 0 && strcmp(vc->sc->name, "hetero-1f1b") != 0)
    hs_error_warn(err, "%s: pipelines[%d].stages[%d].warmup: only used by hetero-1f1b", f, i, s);
  if (stg->order) {
    hs_status_t st = check_order(stg->order, vc->sc->name, v, pl->n_microbatches, f, i, s, err);
    if (st != HS_OK)
      return st;
  }
  if (vc->sc->interleaved && s >= ranks) {
    const hs_plan_stage_t *base = &pl->stages[s % ranks];
    bool same = base->n_replicas == stg->n_replicas;
    for (int32_t r = 0; same && r < stg->n_replicas; r++) {
      same = base->replicas[r].n_devices == stg->replicas[r].n_devices;
      for (int32_t d = 0; same && d < stg->replicas[r].n_devices; d++)
        same = base->replicas[r].devices[d] == stg->replicas[r].devices[d];
    }
    if (!same)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].replicas: interleaved chunk must run "
                          "on the same devices as stages[%d]",
                          f, i, s, s % ranks);
  }
  return HS_OK;
}

/* Devices of replica r of stage s of pipeline i: known, one GPU type per
 * TP group (with fp8 GEMMs under fp8), each used by one stage rank only
 * (interleaved chunks reuse their rank's). Records owners in vc->own.
 * Guarantees: HS_EINVAL naming the first bad device. */
static hs_status_t check_replica_devices(const vcheck_t *vc, int32_t i, int32_t s, int32_t r)
{
  const hs_plan_t *p = vc->p;
  const hs_cluster_t *c = vc->c;
  const hs_plan_replica_t *rp = &p->pipelines[i].stages[s].replicas[r];
  const char *f = vc->f;
  hs_error_t *err = vc->err;
  int32_t ranks = p->pipelines[i].n_stages / p->chunks;
  int32_t gpu0 = -1;
  for (int32_t d = 0; d < rp->n_devices; d++) {
    int32_t dev = rp->devices[d];
    if (dev < 0 || (size_t)dev >= c->n_devices)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].replicas[%d].devices[%d]: unknown "
                          "device %d (cluster %s has devices 0..%zu)",
                          f, i, s, r, d, dev, c->name, c->n_devices - 1);
    if (gpu0 < 0) {
      gpu0 = c->devices[dev].gpu;
      if (p->precision == HS_DTYPE_FP8 && !(c->gpus.gpus[gpu0].peak_flops[HS_DTYPE_FP8] > 0.0))
        return hs_error_set(err, HS_EINVAL,
                            "%s: precision (--precision): fp8 needs FP8 GEMMs, but %s "
                            "(device %d, pipelines[%d].stages[%d]) has no fp8 peak in the "
                            "GPU catalog; use bf16 or fp16 there",
                            f, c->gpus.gpus[gpu0].name, dev, i, s);
    } else if (c->devices[dev].gpu != gpu0)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].replicas[%d].devices[%d]: device %d "
                          "is a %s but the TP group is %s (TP groups must be one GPU type)",
                          f, i, s, r, d, dev, c->gpus.gpus[c->devices[dev].gpu].name,
                          c->gpus.gpus[gpu0].name);
    owner_t *o = &vc->own[dev];
    /* Interleaved chunks: stage s runs on the devices of stage s mod ranks. */
    bool same_rank = o->pipeline == i && o->stage >= 0 && (o->stage % ranks) == (s % ranks) &&
                     o->stage != s;
    if (o->pipeline >= 0 && !same_rank)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].replicas[%d].devices[%d]: device %d "
                          "already used by pipelines[%d].stages[%d]",
                          f, i, s, r, d, dev, o->pipeline, o->stage);
    if (o->pipeline < 0) {
      o->pipeline = i;
      o->stage = s;
    }
  }
  return HS_OK;
}

/* Replica r of stage s of pipeline i: share in (0, 1] (added to *sum),
 * devices (check_replica_devices), a TP degree that divides the heads and
 * equals that of every other holder of its ops (recorded in
 * vc->tp_of_op). Guarantees: HS_EINVAL naming the first bad field. */
static hs_status_t check_replica(const vcheck_t *vc, int32_t i, int32_t s, int32_t r, double *sum)
{
  const hs_model_t *m = vc->m;
  const hs_plan_stage_t *stg = &vc->p->pipelines[i].stages[s];
  const hs_plan_replica_t *rp = &stg->replicas[r];
  const char *f = vc->f;
  hs_error_t *err = vc->err;
  if (!(rp->share > 0.0) || rp->share > 1.0)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].replicas[%d].share: must be in (0, 1], "
                        "got %g",
                        f, i, s, r, rp->share);
  *sum += rp->share;
  if (rp->n_devices <= 0)
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].replicas[%d].devices: must not be empty", f,
                        i, s, r);
  hs_status_t st = check_replica_devices(vc, i, s, r);
  if (st != HS_OK)
    return st;
  if (!hs_model_tp_ok(m, rp->n_devices))
    return hs_error_set(err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].replicas[%d].devices: TP degree %d does "
                        "not divide the model's %lld attention heads (%lld KV heads)",
                        f, i, s, r, rp->n_devices, (long long)m->cfg.heads,
                        (long long)m->cfg.kv_heads);
  for (int32_t op = stg->op_first; op < stg->op_last; op++) {
    if (vc->tp_of_op[op] == 0)
      vc->tp_of_op[op] = rp->n_devices;
    else if (vc->tp_of_op[op] != rp->n_devices)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].replicas[%d].devices: TP degree %d, "
                          "but op %d (%s) is held elsewhere with TP degree %d (gradient "
                          "sync needs equal TP degrees)",
                          f, i, s, r, rp->n_devices, op, m->ops[op].name, vc->tp_of_op[op]);
  }
  return HS_OK;
}

/* hetero-1f1b liveness of pipeline i. Rank r runs min(w_r + 1 + k, m)
 * forwards before backward k, and backward k waits for rank r+1's backward
 * k, which itself needs min(w_{r+1} + 1 + k, m) forwards from rank r. So
 * the pipeline progresses iff those forward counts never increase down the
 * pipeline; otherwise rank r waits for a gradient while rank r+1 waits for
 * an activation (sends are asynchronous, so nothing else blocks).
 * Guarantees: HS_EINVAL naming the first stage that would deadlock. */
static hs_status_t check_liveness(const vcheck_t *vc, int32_t i)
{
  const hs_plan_pipeline_t *pl = &vc->p->pipelines[i];
  const char *f = vc->f;
  hs_error_t *err = vc->err;
  int32_t ranks = pl->n_stages / vc->p->chunks;
  /* the same with explicit orders: before every backward k, no stage
   * runs more forwards than the stage before it */
  for (int32_t s = 1; s < pl->n_stages; s++) {
    if (!pl->stages[s].order && !pl->stages[s - 1].order)
      continue;
    for (int32_t k = 0; k < pl->n_microbatches; k++) {
      int32_t a = fwd_before(&pl->stages[s - 1], ranks, s - 1, pl->n_microbatches, k);
      int32_t b = fwd_before(&pl->stages[s], ranks, s, pl->n_microbatches, k);
      if (b > a)
        return hs_error_set(err, HS_EINVAL,
                            "%s: pipelines[%d].stages[%d].order: %d forwards before "
                            "backward %d but the previous stage runs only %d, so the "
                            "pipeline deadlocks",
                            f, i, s, b, k, a);
    }
  }
  int32_t prev = 0;
  for (int32_t s = 0; s < pl->n_stages; s++) {
    if (pl->stages[s].order || (s > 0 && pl->stages[s - 1].order)) {
      prev = fwd_before(&pl->stages[s], ranks, s, pl->n_microbatches, 0);
      continue;
    }
    int32_t w = pl->stages[s].warmup >= 0 ? pl->stages[s].warmup : ranks - s - 1;
    int32_t fwd = w + 1 < pl->n_microbatches ? w + 1 : pl->n_microbatches;
    if (s > 0 && fwd > prev)
      return hs_error_set(err, HS_EINVAL,
                          "%s: pipelines[%d].stages[%d].warmup: %d forwards before the first "
                          "backward but the previous stage runs only %d, so the pipeline "
                          "deadlocks (warm-up depths must not increase down the pipeline)",
                          f, i, s, fwd, prev);
    prev = fwd;
  }
  return HS_OK;
}

/* Pipeline i whole: shape, every stage's layers, replicas and shares
 * (summing to 1), the model's ops covered exactly, hetero-1f1b liveness.
 * Guarantees: the first error in that order. */
static hs_status_t check_pipeline(const vcheck_t *vc, int32_t i)
{
  const hs_plan_pipeline_t *pl = &vc->p->pipelines[i];
  hs_status_t st = check_pipeline_shape(vc, i);
  int32_t expect_first = 0;
  for (int32_t s = 0; st == HS_OK && s < pl->n_stages; s++) {
    if ((st = check_stage_layers(vc, i, s, &expect_first)) != HS_OK)
      break;
    double sum = 0.0;
    for (int32_t r = 0; st == HS_OK && r < pl->stages[s].n_replicas; r++)
      st = check_replica(vc, i, s, r, &sum);
    if (st == HS_OK && fabs(sum - 1.0) > 1e-6)
      st = hs_error_set(vc->err, HS_EINVAL,
                        "%s: pipelines[%d].stages[%d].replicas: shares sum to %.9g, not 1", vc->f,
                        i, s, sum);
  }
  if (st != HS_OK)
    return st;
  if ((size_t)expect_first != vc->m->n_ops)
    return hs_error_set(vc->err, HS_EINVAL,
                        "%s: pipelines[%d].stages: ops end at %d but the model %s has %zu ops",
                        vc->f, i, expect_first, vc->m->name, vc->m->n_ops);
  if (strcmp(vc->sc->name, "hetero-1f1b") == 0 && vc->p->chunks == 1)
    return check_liveness(vc, i);
  return HS_OK;
}

/* HAP's sharding rules: known ops, dimensions the op can be split along. */
static hs_status_t check_shards(const hs_plan_t *p, const hs_model_t *m, const char *f,
                                hs_error_t *err)
{
  for (int32_t k = 0; k < p->n_shards; k++) {
    const hs_plan_shard_t *sh = &p->shards[k];
    if (sh->op < 0 || (size_t)sh->op >= m->n_ops)
      return hs_error_set(err, HS_EINVAL, "%s: sharding[%d].op: unknown op %d", f, k, sh->op);
    if (!(m->ops[sh->op].shardable & sh->dim))
      return hs_error_set(err, HS_EINVAL, "%s: sharding[%d].dim: op %s cannot be sharded that way",
                          f, k, m->ops[sh->op].name);
  }
  return HS_OK;
}

hs_status_t hs_plan_validate(const hs_plan_t *p, const hs_model_t *m, const hs_cluster_t *c,
                             const char *file, hs_error_t *err)
{
  const char *f = file ? file : "plan";
  hs_status_t st = HS_OK;
  vcheck_t vc = {.p = p, .m = m, .c = c, .f = f, .err = err};
  vc.sc = hs_schedule_find(p->schedule);
  if (!vc.sc)
    return hs_error_set(err, HS_EINVAL,
                        "%s: schedule: unknown schedule \"%s\" (gpipe, 1f1b, interleaved-1f1b, "
                        "hetero-1f1b)",
                        f, p->schedule);
  if ((st = check_options(p, vc.sc, f, err)) != HS_OK)
    return st;
  if ((st = check_limits(p, f, err)) != HS_OK)
    return st;
  vc.own = hs_calloc(c->n_devices, sizeof *vc.own);
  vc.tp_of_op = hs_calloc(m->n_ops, sizeof *vc.tp_of_op);
  if (!vc.own || !vc.tp_of_op)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory validating plan"));
  for (size_t d = 0; d < c->n_devices; d++)
    vc.own[d].pipeline = vc.own[d].stage = -1;
  for (int32_t i = 0; i < p->n_pipelines; i++)
    HS_CHECK(check_pipeline(&vc, i));
  HS_CHECK(check_shards(p, m, f, err));
  HS_CHECK(validate_cp_ep(p, m, f, err));
  HS_CHECK(validate_whole_samples(p, f, err));
cleanup:
  free(vc.own);
  free(vc.tp_of_op);
  return st;
}

void hs_plan_summary(const hs_plan_t *p, char *buf, size_t n) { hs_plan_describe(p, NULL, buf, n); }
