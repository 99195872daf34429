/*
 * plan_pack.c - a plan as raw bytes and back (hs_plan_pack, hs_plan_unpack),
 * for results handed between forked worker processes of one binary (the
 * search memo's entries: search/search_memo.c). Not a file format: the
 * bytes hold the structs as this build lays them out; plan_json.c is the
 * format for files.
 *
 * Layout: the hs_plan_t with its pointers cleared; then per pipeline its
 * microbatch size, count and stage count; per stage its op range,
 * recompute, warm-up, order (length, -1 for none, and its characters) and
 * replica count; per replica its share, device count and devices; then the
 * shards and the device ratios (count and elements). An unpacked plan
 * equals the packed one field for field (hs_plan_copy's equality).
 */
#include "hs_sim.h"

#include <stdlib.h>
#include <string.h>

#define PUT(b, x) hs_bytes_put((b), &(x), sizeof(x))

static void pack_stage(const hs_plan_stage_t *st, hs_bytes_t *b)
{
  int32_t order_len = st->order ? (int32_t)strlen(st->order) : -1;
  PUT(b, st->op_first);
  PUT(b, st->op_last);
  PUT(b, st->recompute);
  PUT(b, st->warmup);
  PUT(b, order_len);
  if (order_len > 0)
    hs_bytes_put(b, st->order, (size_t)order_len);
  PUT(b, st->n_replicas);
  for (int32_t r = 0; r < st->n_replicas; r++) {
    const hs_plan_replica_t *rep = &st->replicas[r];
    PUT(b, rep->share);
    PUT(b, rep->n_devices);
    hs_bytes_put(b, rep->devices, (size_t)rep->n_devices * sizeof *rep->devices);
  }
}

void hs_plan_pack(const hs_plan_t *p, hs_bytes_t *b)
{
  hs_plan_t head = *p;
  head.pipelines = NULL;
  head.shards = NULL;
  head.device_ratios = NULL;
  PUT(b, head);
  for (int32_t i = 0; i < p->n_pipelines; i++) {
    const hs_plan_pipeline_t *pl = &p->pipelines[i];
    PUT(b, pl->microbatch_size);
    PUT(b, pl->n_microbatches);
    PUT(b, pl->n_stages);
    for (int32_t s = 0; s < pl->n_stages; s++)
      pack_stage(&pl->stages[s], b);
  }
  hs_bytes_put(b, p->shards, (size_t)p->n_shards * sizeof *p->shards);
  hs_bytes_put(b, p->device_ratios, (size_t)p->n_device_ratios * sizeof *p->device_ratios);
}

/* A count read from r: in [lo, the bytes left / elem] (so a garbled count
 * never asks for more memory than the bytes could describe). */
static bool get_count(hs_bytes_reader_t *r, int32_t lo, size_t elem, int32_t *n)
{
  if (!hs_bytes_get(r, n, sizeof *n) || *n < lo || (*n > 0 && (size_t)*n > (r->len - r->pos) / elem))
    return r->ok = false;
  return true;
}

/* The array of n elements of `elem` bytes at r into a new *dst (NULL when n
 * is 0). HS_EINVAL when r is short, HS_ENOMEM. */
static hs_status_t get_array(hs_bytes_reader_t *r, int32_t n, size_t elem, void **dst)
{
  *dst = NULL;
  if (n == 0)
    return HS_OK;
  if (!(*dst = hs_calloc((size_t)n, elem)))
    return HS_ENOMEM;
  return hs_bytes_get(r, *dst, (size_t)n * elem) ? HS_OK : HS_EINVAL;
}

static hs_status_t unpack_stage(hs_bytes_reader_t *r, hs_plan_stage_t *st)
{
  hs_status_t s = HS_OK;
  int32_t order_len = 0, n_rep = 0;
  hs_bytes_get(r, &st->op_first, sizeof st->op_first);
  hs_bytes_get(r, &st->op_last, sizeof st->op_last);
  hs_bytes_get(r, &st->recompute, sizeof st->recompute);
  hs_bytes_get(r, &st->warmup, sizeof st->warmup);
  if (!get_count(r, -1, 1, &order_len))
    return HS_EINVAL;
  if (order_len >= 0) {
    if (!(st->order = hs_calloc((size_t)order_len + 1, 1)))
      return HS_ENOMEM;
    if (!hs_bytes_get(r, st->order, (size_t)order_len))
      return HS_EINVAL;
  }
  if (!get_count(r, 0, sizeof(double), &n_rep))
    return HS_EINVAL;
  if (n_rep > 0 && (s = hs_plan_alloc_replicas(st, n_rep)) != HS_OK)
    return s;
  for (int32_t k = 0; k < n_rep; k++) {
    hs_plan_replica_t *rep = &st->replicas[k];
    int32_t n_dev = 0;
    hs_bytes_get(r, &rep->share, sizeof rep->share);
    if (!get_count(r, 0, sizeof(int32_t), &n_dev))
      return HS_EINVAL;
    if ((s = get_array(r, n_dev, sizeof(int32_t), (void **)&rep->devices)) != HS_OK)
      return s;
    rep->n_devices = n_dev;
  }
  return r->ok ? HS_OK : HS_EINVAL;
}

static hs_status_t unpack_pipelines(hs_bytes_reader_t *r, hs_plan_t *p, int32_t n_pipelines)
{
  hs_status_t s = HS_OK;
  if (n_pipelines > 0 && (s = hs_plan_alloc_pipelines(p, n_pipelines)) != HS_OK)
    return s;
  for (int32_t i = 0; i < n_pipelines; i++) {
    hs_plan_pipeline_t *pl = &p->pipelines[i];
    int32_t n_stages = 0;
    hs_bytes_get(r, &pl->microbatch_size, sizeof pl->microbatch_size);
    hs_bytes_get(r, &pl->n_microbatches, sizeof pl->n_microbatches);
    if (!get_count(r, 0, sizeof(int32_t), &n_stages))
      return HS_EINVAL;
    if (n_stages > 0 && (s = hs_plan_alloc_stages(pl, n_stages)) != HS_OK)
      return s;
    for (int32_t k = 0; k < n_stages; k++)
      if ((s = unpack_stage(r, &pl->stages[k])) != HS_OK)
        return s;
  }
  return HS_OK;
}

hs_status_t hs_plan_unpack(hs_bytes_reader_t *r, hs_plan_t *p)
{
  hs_plan_t head;
  hs_status_t s = HS_OK;
  hs_plan_init(p);
  if (!hs_bytes_get(r, &head, sizeof head) || head.n_pipelines < 0 || head.n_shards < 0 ||
      head.n_device_ratios < 0 || (size_t)head.n_pipelines > r->len - r->pos)
    return HS_EINVAL;
  *p = head;
  p->n_pipelines = p->n_shards = p->n_device_ratios = 0;
  s = unpack_pipelines(r, p, head.n_pipelines);
  if (s == HS_OK && !(r->len - r->pos >= (size_t)head.n_shards * sizeof *p->shards))
    s = HS_EINVAL;
  if (s == HS_OK && (s = get_array(r, head.n_shards, sizeof *p->shards, (void **)&p->shards)) == HS_OK)
    p->n_shards = head.n_shards;
  if (s == HS_OK && !(r->len - r->pos >= (size_t)head.n_device_ratios * sizeof(double)))
    s = HS_EINVAL;
  if (s == HS_OK && (s = get_array(r, head.n_device_ratios, sizeof(double), (void **)&p->device_ratios)) == HS_OK)
    p->n_device_ratios = head.n_device_ratios;
  if (s == HS_OK && !r->ok)
    s = HS_EINVAL;
  if (s != HS_OK) {
    r->ok = false;
    hs_plan_destroy(p);
    hs_plan_init(p);
  }
  return s;
}
