/*
 * search_memo.c - the memo of whole searches (search_memo.h states what it
 * is for and its invariants; hs_search.h the scope functions).
 *
 * One memo per thread (the searches a thread runs between
 * hs_search_memo_begin and the matching end); entries are kept in
 * insertion order and looked up by a linear scan over their 64-bit hashes,
 * the full key compared on a hash match. Expected workload: a what-if of
 * 33 options x 4 strategies stores a few hundred searches, each lookup
 * microseconds against the milliseconds to seconds of a search.
 */
#include "search_memo.h"

#include <stdlib.h>
#include <string.h>

/* The most searches one memo keeps; later ones are searched, not stored. */
#define HS_SEARCH_MEMO_MAX 4096

typedef struct memo_entry {
  unsigned char *key;
  size_t key_len;
  uint64_t hash;
  hs_status_t status;
  hs_plan_t plan;                 /* the result when status is HS_OK */
  hs_search_stats_t stats;
  char msg[HS_ERROR_MSG_MAX];     /* the message when status is not HS_OK */
  char cluster[HS_NAME_MAX];      /* the cluster's name, when the note or message names it */
  bool shared;                    /* exported, or imported from another worker */
} memo_entry_t;

typedef struct memo {
  int depth;                      /* nested begin calls */
  memo_entry_t *e;
  size_t n, cap;
  uint64_t hits, misses;
} memo_t;

static _Thread_local memo_t g_memo;

static void memo_clear(memo_t *m)
{
  for (size_t i = 0; i < m->n; i++) {
    free(m->e[i].key);
    hs_plan_destroy(&m->e[i].plan);
  }
  free(m->e);
  m->e = NULL;
  m->n = m->cap = 0;
}

void hs_search_memo_begin(void)
{
  if (g_memo.depth++ == 0)
    g_memo.hits = g_memo.misses = 0;
}

void hs_search_memo_end(void)
{
  if (g_memo.depth > 0 && --g_memo.depth == 0)
    memo_clear(&g_memo);
}

void hs_search_memo_counts(uint64_t *hits, uint64_t *misses)
{
  *hits = g_memo.hits;
  *misses = g_memo.misses;
}

bool hs__search_memo_active(void) { return g_memo.depth > 0; }

/* ---- the key ------------------------------------------------------------------ */

static void key_add(hs_search_key_t *k, const void *p, size_t n)
{
  if (!k->ok || n == 0)
    return;
  if (hs_reserve((void **)&k->bytes, &k->cap, k->len + n, 1) != HS_OK) {
    k->ok = false;
    return;
  }
  memcpy(k->bytes + k->len, p, n);
  k->len += n;
}

#define KEY_ADD(k, x) key_add((k), &(x), sizeof(x))

/* Whether a planner reads hs_plan_opts_t.work_share (its default work
 * budget split over device subsets): only autohet's MILPs have one
 * (search/autohet.c); tests/test_search_memo.c checks the others plan
 * alike with any share. */
static bool reads_work_share(const hs_planner_type_t *t) { return strcmp(t->name, "autohet") == 0; }

static void key_model(hs_search_key_t *k, const hs_model_t *m)
{
  key_add(k, m->name, sizeof m->name);
  KEY_ADD(k, m->cfg);
  KEY_ADD(k, m->from_generator);
  KEY_ADD(k, m->dtype);
  KEY_ADD(k, m->seq_len);
  KEY_ADD(k, m->n_ops);
  key_add(k, m->ops, m->n_ops * sizeof *m->ops);
  key_add(k, m->source, sizeof m->source);
}

/* The cluster's content: not its name, description or source (messages
 * naming it are handled by the entry's `cluster`), node groups renumbered
 * by first appearance (only their equality is read: registry.c's
 * node_groups). */
static void key_cluster(hs_search_key_t *k, const hs_cluster_t *c)
{
  KEY_ADD(k, c->gpus.n);
  key_add(k, c->gpus.gpus, c->gpus.n * sizeof *c->gpus.gpus);
  KEY_ADD(k, c->n_sites);
  key_add(k, c->sites, c->n_sites * sizeof *c->sites);
  KEY_ADD(k, c->n_nodes);
  for (size_t n = 0; n < c->n_nodes; n++) {
    hs_node_t nd = c->nodes[n];
    int32_t g = (int32_t)n;
    for (size_t p = 0; p < n; p++)
      if (c->nodes[p].group == c->nodes[n].group) {
        g = (int32_t)p; /* the first node of the group stands for it */
        break;
      }
    nd.group = g;
    KEY_ADD(k, nd);
  }
  KEY_ADD(k, c->n_devices);
  key_add(k, c->devices, c->n_devices * sizeof *c->devices);
  KEY_ADD(k, c->n_xlinks);
  key_add(k, c->xlinks, c->n_xlinks * sizeof *c->xlinks);
  KEY_ADD(k, c->n_named_links);
  key_add(k, c->named_links, (size_t)c->n_named_links * sizeof *c->named_links);
  KEY_ADD(k, c->n_link_ranges);
  key_add(k, c->link_ranges, (size_t)c->n_link_ranges * sizeof *c->link_ranges);
}

#if defined(__x86_64__) && defined(__LP64__)
/* a new option must be added to key_opts (or said to be unread there) */
_Static_assert(sizeof(hs_plan_opts_t) == 104 + sizeof(hs_practice_t) + 8,
               "hs_plan_opts_t changed: update key_opts in search/search_memo.c");
#endif

/* Every option a search reads: all but deadline_s (a clock reading; a
 * search it cut short is never stored), beat_s (kept beside the key,
 * hs_search_key_t) and, for planners that do not read it, work_share. */
static void key_opts(hs_search_key_t *k, const hs_planner_type_t *t, const hs_plan_opts_t *o)
{
  KEY_ADD(k, o->global_batch);
  KEY_ADD(k, o->max_microbatch_size);
  KEY_ADD(k, o->time_limit_s);
  KEY_ADD(k, o->work_limit);
  KEY_ADD(k, o->mip_gap);
  KEY_ADD(k, o->precision);
  KEY_ADD(k, o->allow_recompute);
  KEY_ADD(k, o->practice);
  KEY_ADD(k, o->max_devices);
  KEY_ADD(k, o->device_subsets);
  KEY_ADD(k, o->memory_headroom);
  KEY_ADD(k, o->search_practice);
  double share = reads_work_share(t) ? o->work_share : 0.0;
  KEY_ADD(k, share);
  KEY_ADD(k, o->seed);
  KEY_ADD(k, o->verbose);
}

void hs__search_memo_key(hs_search_key_t *k, const hs_planner_type_t *t, const hs_model_t *m,
                         const hs_cluster_t *c, const hs_plan_opts_t *o)
{
  memset(k, 0, sizeof *k);
  k->ok = true;
  key_add(k, t->name, strlen(t->name) + 1);
  key_model(k, m);
  key_cluster(k, c);
  key_opts(k, t, o);
  k->beat_s = o->beat_s;
  uint64_t h = UINT64_C(14695981039346656037);
  for (size_t i = 0; k->ok && i < k->len; i++)
    h = (h ^ k->bytes[i]) * UINT64_C(1099511628211);
  k->hash = h;
}

void hs__search_memo_key_free(hs_search_key_t *k)
{
  free(k->bytes);
  memset(k, 0, sizeof *k);
}

/* ---- lookup and store --------------------------------------------------------- */

static memo_entry_t *find(const hs_search_key_t *k)
{
  for (size_t i = 0; i < g_memo.n; i++) {
    memo_entry_t *e = &g_memo.e[i];
    if (e->hash == k->hash && e->key_len == k->len && memcmp(e->key, k->bytes, k->len) == 0)
      return e;
  }
  return NULL;
}

/* A new last entry holding a copy of key (len bytes), its plan empty;
 * NULL when the memo is full or out of memory. */
static memo_entry_t *new_entry(const unsigned char *key, size_t len)
{
  if (g_memo.n >= HS_SEARCH_MEMO_MAX ||
      hs_reserve((void **)&g_memo.e, &g_memo.cap, g_memo.n + 1, sizeof *g_memo.e) != HS_OK)
    return NULL;
  memo_entry_t *e = &g_memo.e[g_memo.n];
  memset(e, 0, sizeof *e);
  hs_plan_init(&e->plan);
  if (!(e->key = malloc(len ? len : 1)))
    return NULL;
  memcpy(e->key, key, len);
  e->key_len = len;
  g_memo.n++;
  return e;
}

static void drop_last_entry(void)
{
  memo_entry_t *e = &g_memo.e[--g_memo.n];
  hs_plan_destroy(&e->plan);
  free(e->key);
}

/* Whether a result with statistics st answers a search under beat_s
 * (hs_search_key_t.beat_s). */
static bool covers(const hs_search_stats_t *st, double beat_s)
{
  return !(st->pruned_below_s > 0.0) || (beat_s > 0.0 && beat_s <= st->pruned_below_s);
}

/* Whether a result with statistics a replaces a stored one with b: b left
 * steps out and a left out fewer (none, or under a larger beat_s). */
static bool less_pruned(const hs_search_stats_t *a, const hs_search_stats_t *b)
{
  return b->pruned_below_s > 0.0 && (!(a->pruned_below_s > 0.0) || a->pruned_below_s > b->pruned_below_s);
}

bool hs__search_memo_get(const hs_search_key_t *k, const char *c_name, hs_plan_t *plan,
                         hs_search_stats_t *stats, hs_status_t *st, hs_error_t *err)
{
  if (!hs__search_memo_active() || !k->ok)
    return false;
  memo_entry_t *e = find(k);
  /* a result naming its cluster is another cluster's when the names differ */
  if (!e || (e->cluster[0] && strcmp(e->cluster, c_name) != 0) || !covers(&e->stats, k->beat_s)) {
    g_memo.misses++;
    return false;
  }
  if (e->status == HS_OK) {
    hs_plan_t copy;
    hs_plan_init(&copy);
    if (hs_plan_copy(&e->plan, &copy, NULL) != HS_OK) {
      hs_plan_destroy(&copy);
      return false;
    }
    hs_plan_destroy(plan);
    *plan = copy;
  } else {
    hs_error_set(err, e->status, "%s", e->msg);
  }
  *stats = e->stats;
  *st = e->status;
  g_memo.hits++;
  return true;
}

void hs__search_memo_put(const hs_search_key_t *k, const char *c_name, hs_status_t st,
                         const hs_plan_t *plan, const hs_search_stats_t *stats,
                         const hs_error_t *err)
{
  if (!hs__search_memo_active() || !k->ok)
    return;
  if (st == HS_ENOMEM || st == HS_EINTERNAL)
    return;
  const char *msg = st == HS_OK ? "" : err->msg;
  /* a search the time limit cut short is not the search asked again */
  if (strstr(stats->note, "time limit") || strstr(msg, "time limit") || st == HS_ELIMIT)
    return;
  memo_entry_t *e = find(k);
  if (e && !less_pruned(stats, &e->stats))
    return;
  if (e) {
    /* the stored result left out more: this one replaces it */
    hs_plan_t copy;
    hs_plan_init(&copy);
    if (st == HS_OK && hs_plan_copy(plan, &copy, NULL) != HS_OK) {
      hs_plan_destroy(&copy);
      return;
    }
    hs_plan_destroy(&e->plan);
    e->plan = copy;
    e->cluster[0] = '\0';
    e->shared = false;
  } else {
    e = new_entry(k->bytes, k->len);
    if (!e)
      return;
    if (st == HS_OK && hs_plan_copy(plan, &e->plan, NULL) != HS_OK) {
      drop_last_entry();
      return;
    }
  }
  e->hash = k->hash;
  e->status = st;
  e->stats = *stats;
  hs_strlcpy(e->msg, msg, sizeof e->msg);
  if (c_name[0] && (strstr(e->msg, c_name) || strstr(stats->note, c_name)))
    hs_strlcpy(e->cluster, c_name, sizeof e->cluster);
}

/* ---- sharing between forked workers ------------------------------------------- *
 *
 * An entry as bytes: a tag, the key (length, bytes, hash), the status, the
 * statistics, the message and cluster name, and the plan (hs_plan_pack)
 * when the status is HS_OK. Only processes of this binary read them
 * (notebooks-export/fork_map.c). */

#define ENTRY_TAG UINT32_C(0x4d454d4f) /* "MEMO" */

static void export_entry(const memo_entry_t *e, hs_bytes_t *b)
{
  uint32_t tag = ENTRY_TAG;
  uint64_t key_len = e->key_len;
  int32_t status = (int32_t)e->status;
  hs_bytes_put(b, &tag, sizeof tag);
  hs_bytes_put(b, &key_len, sizeof key_len);
  hs_bytes_put(b, e->key, e->key_len);
  hs_bytes_put(b, &e->hash, sizeof e->hash);
  hs_bytes_put(b, &status, sizeof status);
  hs_bytes_put(b, &e->stats, sizeof e->stats);
  hs_bytes_put(b, e->msg, sizeof e->msg);
  hs_bytes_put(b, e->cluster, sizeof e->cluster);
  if (e->status == HS_OK)
    hs_plan_pack(&e->plan, b);
}

void hs_search_memo_export(hs_bytes_t *b)
{
  for (size_t i = 0; i < g_memo.n && b->ok; i++) {
    memo_entry_t *e = &g_memo.e[i];
    if (e->shared)
      continue;
    export_entry(e, b);
    e->shared = b->ok;
  }
}

/* One entry at r into the memo (unless its key is there with a result that
 * left out no more, or the memo is full: then read and dropped). HS_EINVAL
 * when the bytes are garbled. */
static hs_status_t import_entry(hs_bytes_reader_t *r)
{
  uint32_t tag = 0;
  uint64_t key_len = 0;
  int32_t status = 0;
  memo_entry_t got;
  memset(&got, 0, sizeof got);
  if (!hs_bytes_get(r, &tag, sizeof tag) || tag != ENTRY_TAG || !hs_bytes_get(r, &key_len, sizeof key_len) ||
      key_len > r->len - r->pos)
    return HS_EINVAL;
  hs_search_key_t k = {.bytes = (unsigned char *)r->p + r->pos, .len = key_len, .ok = true};
  r->pos += key_len;
  if (!hs_bytes_get(r, &k.hash, sizeof k.hash) || !hs_bytes_get(r, &status, sizeof status) ||
      !hs_bytes_get(r, &got.stats, sizeof got.stats) || !hs_bytes_get(r, got.msg, sizeof got.msg) ||
      !hs_bytes_get(r, got.cluster, sizeof got.cluster))
    return HS_EINVAL;
  got.msg[sizeof got.msg - 1] = got.cluster[sizeof got.cluster - 1] = '\0';
  got.stats.note[sizeof got.stats.note - 1] = '\0';
  hs_plan_init(&got.plan);
  if (status == HS_OK) {
    hs_status_t s = hs_plan_unpack(r, &got.plan);
    if (s != HS_OK)
      return s;
  }
  memo_entry_t *e = find(&k);
  if (e && less_pruned(&got.stats, &e->stats))
    hs_plan_destroy(&e->plan); /* the imported result left out less: it takes e's place */
  else
    e = e ? NULL : new_entry(k.bytes, k.len);
  if (!e) {
    hs_plan_destroy(&got.plan);
    return HS_OK;
  }
  got.key = e->key;
  got.key_len = e->key_len;
  got.hash = k.hash;
  got.status = (hs_status_t)status;
  got.shared = true;
  *e = got;
  return HS_OK;
}

hs_status_t hs_search_memo_import(const void *data, size_t len)
{
  if (!hs__search_memo_active())
    return HS_OK;
  hs_bytes_reader_t r = {.p = data, .len = len, .ok = true};
  while (r.pos < r.len) {
    hs_status_t s = import_entry(&r);
    if (s != HS_OK)
      return s;
  }
  return HS_OK;
}
