/*
 * lower_share.c - the lowering's last pass: executors with the same
 * schedule order, or a template with the same segments, share one copy.
 *
 * Why: the data-parallel replicas of a stage run the same templates in the
 * same order, and the simulator reads an executor's next item and segment
 * at every compute event. With one copy per executor those reads miss the
 * cache once the executors outgrow it (bench_sim at 16,384 GPUs: 2,048
 * executors, 37% of the samples in x_advance and x_after_compute, on the
 * loads of the order item and the segment); shared, the reads of a stage's
 * replicas hit the same lines.
 *
 * Contract: after the pass, executor e's order and templates read exactly
 * as before (shared only when equal: orders byte for byte, segments field
 * by field, so padding never matters), and nothing writes them after the
 * lowering. A shared array is owned by the first executor that has it;
 * hs_exec_t.order_shared and hs_tmpl_t.shared tell hs__lowered_destroy not
 * to free the others. O(executors x (items + segments)), expected: one
 * hash and one comparison per array.
 */
#include "lower_int.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

static uint64_t dbits(double d)
{
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static uint64_t order_hash(const hs_sched_item_t *o, int32_t n)
{
  uint64_t h = (uint64_t)n;
  for (int32_t i = 0; i < n; i++)
    h = mix(h, (uint64_t)(uint32_t)o[i].mb << 32 | (uint64_t)(uint16_t)o[i].chunk << 16 |
                   (uint16_t)o[i].phase);
  return h;
}

static bool order_equal(const hs_sched_item_t *a, const hs_sched_item_t *b, int32_t n)
{
  for (int32_t i = 0; i < n; i++)
    if (a[i].mb != b[i].mb || a[i].chunk != b[i].chunk || a[i].phase != b[i].phase)
      return false;
  return true;
}

static uint64_t tmpl_hash(const hs_tmpl_t *t)
{
  uint64_t h = mix((uint64_t)t->n, (uint64_t)t->compute_ns);
  for (int32_t i = 0; i < t->n; i++) {
    const hs_seg_t *s = &t->segs[i];
    h = mix(h, (uint64_t)s->compute_ns);
    h = mix(h, dbits(s->coll_bytes));
    h = mix(h, (uint64_t)s->coll_op << 32 | (uint32_t)s->group);
    h = mix(h, dbits(s->side_bytes));
    h = mix(h, (uint64_t)(uint32_t)s->side_group << 32 | (uint32_t)s->grad_lo);
  }
  return h;
}

static bool seg_equal(const hs_seg_t *a, const hs_seg_t *b)
{
  return a->compute_ns == b->compute_ns && a->compute_flops == b->compute_flops &&
         a->coll_bytes == b->coll_bytes && a->coll_op == b->coll_op && a->op_lo == b->op_lo &&
         a->op_hi == b->op_hi && a->grad_lo == b->grad_lo && a->ov_ns == b->ov_ns &&
         a->group == b->group && a->side_bytes == b->side_bytes && a->side_op == b->side_op &&
         a->side_group == b->side_group;
}

static bool tmpl_equal(const hs_tmpl_t *a, const hs_tmpl_t *b)
{
  if (a->n != b->n || a->compute_ns != b->compute_ns || a->coll_bytes != b->coll_bytes)
    return false;
  for (int32_t i = 0; i < a->n; i++)
    if (!seg_equal(&a->segs[i], &b->segs[i]))
      return false;
  return true;
}

/* Open-addressing table of first holders: slot = hash & mask, linear
 * probing; an entry is (hash, pointer), pointer NULL = empty. */
typedef struct share_tab {
  uint64_t *hash;
  const void **item;
  size_t mask;
} share_tab_t;

static hs_status_t tab_init(share_tab_t *t, size_t n)
{
  size_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  t->mask = cap - 1;
  t->hash = hs_calloc(cap, sizeof *t->hash);
  t->item = hs_calloc(cap, sizeof *t->item);
  return t->hash && t->item ? HS_OK : HS_ENOMEM;
}

static void tab_free(share_tab_t *t)
{
  free(t->hash);
  free(t->item);
}

/* The first item stored with hash h for which eq(item, key) holds, else
 * key is stored (when the table has room) and NULL returned. */
static const void *tab_find_or_put(share_tab_t *t, uint64_t h, const void *key,
                                   bool (*eq)(const void *a, const void *b))
{
  for (size_t i = (size_t)h & t->mask, k = 0; k <= t->mask; i = (i + 1) & t->mask, k++) {
    if (!t->item[i]) {
      t->hash[i] = h;
      t->item[i] = key;
      return NULL;
    }
    if (t->hash[i] == h && eq(t->item[i], key))
      return t->item[i];
  }
  return NULL;
}

static bool eq_order(const void *a, const void *b)
{
  const hs_exec_t *x = a, *y = b;
  return x->n_items == y->n_items && order_equal(x->order, y->order, x->n_items);
}

static bool eq_tmpl(const void *a, const void *b) { return tmpl_equal(a, b); }

/* t's segments become those of an equal template met before, if any. */
static void share_tmpl(share_tab_t *tab, hs_tmpl_t *t)
{
  if (t->n == 0)
    return;
  const hs_tmpl_t *first = tab_find_or_put(tab, tmpl_hash(t), t, eq_tmpl);
  if (first) {
    free(t->segs);
    t->segs = first->segs;
    t->shared = true;
  }
}

hs_status_t hs__lower_share(lower_ctx_t *cx)
{
  hs_lowered_t *out = cx->out;
  share_tab_t orders = {0}, tmpls = {0};
  hs_status_t st = HS_OK;
  size_t n_t = 0;
  for (int32_t e = 0; e < out->n_execs; e++)
    n_t += 3 * (size_t)out->execs[e].v;
  if (tab_init(&orders, (size_t)out->n_execs) != HS_OK || tab_init(&tmpls, n_t) != HS_OK)
    HS_FAIL(HS_ENOMEM);
  for (int32_t e = 0; e < out->n_execs; e++) {
    hs_exec_t *x = &out->execs[e];
    const hs_exec_t *first = tab_find_or_put(&orders, order_hash(x->order, x->n_items), x, eq_order);
    if (first) {
      free(x->order);
      x->order = first->order;
      x->order_shared = true;
    }
    for (int32_t k = 0; k < 2 * x->v; k++)
      share_tmpl(&tmpls, &x->tmpl[k]);
    for (int32_t k = 0; k < x->v; k++)
      share_tmpl(&tmpls, &x->tmpl_final[k]);
  }
cleanup:
  tab_free(&orders);
  tab_free(&tmpls);
  return st;
}
