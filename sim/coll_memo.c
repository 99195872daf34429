/*
 * coll_memo.c - the memo of chosen algorithms and built phases (coll_memo.h).
 *
 * Entries live in one array; an open-addressing table of entry indices
 * (linear probing, at most half full) finds them by a hash of the key. A
 * key is (kind, algorithm, op, n, phase, bytes, devices); its device list
 * and a phase's flows and hops are stored in growing arenas, by offset, so
 * that growth never moves what an entry points at. Entries stored for a
 * collective whose list was matched before share that copy (dev_off ==
 * c->memo_devs); the byte count still charges each entry its own list, so
 * the memo fills up exactly as it would with a copy each.
 */
#include "coll_memo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  const hs_coll_algo_t *algo; /* the phase's algorithm; NULL for a choice */
  const hs_coll_algo_t *chosen; /* a choice's answer */
  bool checked;               /* a choice: the key passed coll_validate with it */
  uint64_t hash;
  uint64_t chash;             /* the collective's hs__coll_memo_hash (what a hint restores) */
  double bytes;
  int32_t op, n, phase;       /* phase -1: the algorithm choice */
  bool has;                   /* the phase exists */
  size_t dev_off;             /* n devices in m->devs */
  double latency_ns;
  int32_t n_flows;
  size_t fbytes_off;          /* n_flows per-flow bytes in m->fbytes */
  size_t foff_off;            /* n_flows + 1 hop offsets in m->foff */
  size_t hop_off, n_hops;     /* in m->hops */
  int32_t next;               /* the entry stored after it for the same collective; -1: none */
} entry_t;

struct hs__coll_memo {
  entry_t *e;
  size_t n, cap;
  int32_t *slot;              /* entry index or -1; size mask + 1, a power of 2 */
  size_t mask;
  int32_t *devs;
  size_t n_devs, cap_devs;
  double *fbytes;
  size_t n_fbytes, cap_fbytes;
  int32_t *foff;
  size_t n_foff, cap_foff;
  hs_flow_hop_t *hops;
  size_t n_hops, cap_hops;
  size_t bytes_used;          /* what the arenas and entries hold */
  uint64_t hits;
  uint64_t hint_hits;         /* hints taken (hs__coll_memo_take_hint) */
};

#define ALGO_CHOICE (-1)

hs__coll_memo_t *hs__coll_memo_new(void)
{
  hs__coll_memo_t *m = hs_calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->mask = 255;
  m->slot = hs_calloc(m->mask + 1, sizeof *m->slot);
  if (!m->slot) {
    hs_free(m);
    return NULL;
  }
  memset(m->slot, 0xff, (m->mask + 1) * sizeof *m->slot);
  return m;
}

void hs__coll_memo_free(hs__coll_memo_t *m)
{
  if (!m)
    return;
  hs_free(m->slot);
  hs_free(m->e);
  hs_free(m->devs);
  hs_free(m->fbytes);
  hs_free(m->foff);
  hs_free(m->hops);
  hs_free(m);
}

size_t hs__coll_memo_entries(const hs__coll_memo_t *m) { return m ? m->n : 0; }

uint64_t hs__coll_memo_hits(const hs__coll_memo_t *m) { return m ? m->hits : 0; }

uint64_t hs__coll_memo_hint_hits(const hs__coll_memo_t *m) { return m ? m->hint_hits : 0; }

static uint64_t mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

/* Usable: a memo, a device list, no shares. */
static bool keyable(const hs__coll_memo_t *m, const hs_coll_t *c)
{
  return m && c && c->devices && c->n > 0 && !c->shares;
}

static inline uint64_t pair(const int32_t *d) { return ((uint64_t)(uint32_t)d[0] << 32) | (uint32_t)d[1]; }

/* The devices go in two at a time, on two independent chains: mix's
 * multiply is the latency of a long list (a DP group's). */
uint64_t hs__coll_memo_hash(const hs__coll_memo_t *m, const hs_coll_t *c)
{
  if (!keyable(m, c))
    return 0;
  uint64_t bits = 0;
  memcpy(&bits, &c->bytes, sizeof bits);
  uint64_t h = mix(0x5851F42D4C957F2Dull, ((uint64_t)(uint32_t)c->op << 32) | (uint32_t)c->n);
  uint64_t h2 = mix(0x2545F4914F6CDD1Dull, bits);
  const int32_t *d = c->devices;
  int32_t i = 0;
  for (; i + 4 <= c->n; i += 4) {
    h = mix(h, pair(d + i));
    h2 = mix(h2, pair(d + i + 2));
  }
  for (; i < c->n; i++)
    h = mix(h, (uint32_t)d[i]);
  return mix(h, h2);
}

/* The key's hash: c's own (c->memo_hash), the algorithm and the phase. */
static uint64_t key_hash(const hs_coll_algo_t *algo, const hs_coll_t *c, int32_t phase)
{
  uint64_t h = mix(c->memo_hash, (uint64_t)(uintptr_t)algo);
  h = mix(h, (uint64_t)(uint32_t)phase);
  return h ^ (h >> 31);
}

/* The device lists compare equal when e's copy is the one c matched before
 * (c->memo_devs), else by contents. */
static bool key_eq(const hs__coll_memo_t *m, const entry_t *e, uint64_t h,
                   const hs_coll_algo_t *algo, const hs_coll_t *c, int32_t phase)
{
  return e->hash == h && e->algo == algo && e->op == (int32_t)c->op && e->n == c->n &&
         e->phase == phase && memcmp(&e->bytes, &c->bytes, sizeof e->bytes) == 0 &&
         (e->dev_off == c->memo_devs ||
          memcmp(m->devs + e->dev_off, c->devices, (size_t)c->n * sizeof *c->devices) == 0);
}

/* The entry of the key, or NULL: the one stored after c's last entry when
 * it matches (keys are unique, so a match is the entry), else by the
 * table. A hit records in c where the entry and its device list are. */
static const entry_t *find(const hs__coll_memo_t *m, const hs_coll_algo_t *algo, hs_coll_t *c,
                           int32_t phase, uint64_t h)
{
  int32_t next = c->memo_last == SIZE_MAX ? -1 : m->e[c->memo_last].next;
  if (phase == ALGO_CHOICE && next < 0 && c->memo_hint > 0 && c->memo_hint <= m->n)
    next = (int32_t)(c->memo_hint - 1); /* the hinted choice (hs__coll_memo_take_hint) */
  size_t k = (size_t)next;
  if (next < 0 || !key_eq(m, &m->e[k], h, algo, c, phase))
    for (size_t i = (size_t)h & m->mask;; i = (i + 1) & m->mask) {
      if (m->slot[i] < 0)
        return NULL;
      k = (size_t)m->slot[i];
      if (key_eq(m, &m->e[k], h, algo, c, phase))
        break;
    }
  c->memo_devs = m->e[k].dev_off;
  c->memo_last = k;
  return &m->e[k];
}

/* Doubles the table when it is half full. */
static hs_status_t grow_table(hs__coll_memo_t *m)
{
  if (2 * (m->n + 1) <= m->mask + 1)
    return HS_OK;
  size_t size = 2 * (m->mask + 1);
  int32_t *slot = hs_calloc(size, sizeof *slot);
  if (!slot)
    return HS_ENOMEM;
  memset(slot, 0xff, size * sizeof *slot);
  for (size_t k = 0; k < m->n; k++) {
    size_t i = (size_t)m->e[k].hash & (size - 1);
    while (slot[i] >= 0)
      i = (i + 1) & (size - 1);
    slot[i] = (int32_t)k;
  }
  hs_free(m->slot);
  m->slot = slot;
  m->mask = size - 1;
  return HS_OK;
}

/* A new entry for the key, its devices stored (or c's known copy shared);
 * NULL when full or out of memory (the memo is left as it was). */
static entry_t *add(hs__coll_memo_t *m, const hs_coll_algo_t *algo, const hs_coll_t *c,
                    int32_t phase, uint64_t h, size_t extra_bytes)
{
  size_t need = sizeof(entry_t) + (size_t)c->n * sizeof *c->devices + extra_bytes;
  bool copy = c->memo_devs == SIZE_MAX;
  if (m->n >= (size_t)INT32_MAX - 1 || m->bytes_used + need > HS_COLL_MEMO_MAX_BYTES)
    return NULL;
  if (grow_table(m) != HS_OK ||
      hs_reserve((void **)&m->e, &m->cap, m->n + 1, sizeof *m->e) != HS_OK ||
      (copy && hs_reserve((void **)&m->devs, &m->cap_devs, m->n_devs + (size_t)c->n,
                          sizeof *m->devs) != HS_OK))
    return NULL;
  entry_t *e = &m->e[m->n];
  memset(e, 0, sizeof *e);
  e->algo = algo;
  e->hash = h;
  e->chash = c->memo_hash;
  e->bytes = c->bytes;
  e->op = (int32_t)c->op;
  e->n = c->n;
  e->phase = phase;
  e->next = -1;
  e->dev_off = copy ? m->n_devs : c->memo_devs;
  if (copy)
    memcpy(m->devs + m->n_devs, c->devices, (size_t)c->n * sizeof *c->devices);
  return e;
}

/* Makes e (the last entry, filled in, for c) findable, and the next of c's
 * last entry when that has none; c's last entry is e, and its device list
 * e's, from now on. */
static void commit(hs__coll_memo_t *m, hs_coll_t *c, entry_t *e, size_t extra_bytes)
{
  size_t i = (size_t)e->hash & m->mask;
  while (m->slot[i] >= 0)
    i = (i + 1) & m->mask;
  m->slot[i] = (int32_t)m->n;
  if (e->dev_off == m->n_devs) /* a copy of its own (not c's known one) */
    m->n_devs += (size_t)e->n;
  if (c->memo_last != SIZE_MAX && m->e[c->memo_last].next < 0)
    m->e[c->memo_last].next = (int32_t)m->n;
  c->memo_devs = e->dev_off;
  c->memo_last = m->n;
  m->bytes_used += sizeof *e + (size_t)e->n * sizeof(int32_t) + extra_bytes;
  m->n++;
}

bool hs__coll_memo_take_hint(hs__coll_memo_t *m, hs_coll_t *c)
{
  if (!keyable(m, c) || c->memo_hint == 0 || c->memo_hint > m->n)
    return false;
  const entry_t *e = &m->e[c->memo_hint - 1];
  if (e->phase != ALGO_CHOICE || e->algo || e->op != (int32_t)c->op || e->n != c->n ||
      memcmp(&e->bytes, &c->bytes, sizeof e->bytes) != 0)
    return false;
  /* the same array as the hinted collective's: the same list (the caller's
   * promise), and no cache miss on the memo's copy */
  if (c->memo_hint_devices != c->devices &&
      memcmp(m->devs + e->dev_off, c->devices, (size_t)c->n * sizeof *c->devices) != 0)
    return false;
  c->memo_hash = e->chash;
  c->memo_devs = e->dev_off;
  m->hint_hits++;
  return true;
}

size_t hs__coll_memo_choice(const hs__coll_memo_t *m, const hs_coll_t *c)
{
  if (!keyable(m, c) || c->memo_last == SIZE_MAX || m->e[c->memo_last].phase != ALGO_CHOICE)
    return 0;
  return c->memo_last + 1;
}

bool hs__coll_memo_get_algo(hs__coll_memo_t *m, hs_coll_t *c, const hs_coll_algo_t **out,
                            bool *checked)
{
  if (!keyable(m, c))
    return false;
  const entry_t *e = find(m, NULL, c, ALGO_CHOICE, key_hash(NULL, c, ALGO_CHOICE));
  if (!e)
    return false;
  *out = e->chosen;
  *checked = e->checked;
  m->hits++;
  return true;
}

void hs__coll_memo_put_algo(hs__coll_memo_t *m, hs_coll_t *c, const hs_coll_algo_t *algo)
{
  if (!keyable(m, c) || !algo)
    return;
  uint64_t h = key_hash(NULL, c, ALGO_CHOICE);
  if (find(m, NULL, c, ALGO_CHOICE, h))
    return;
  entry_t *e = add(m, NULL, c, ALGO_CHOICE, h, 0);
  if (!e)
    return;
  e->chosen = algo;
  commit(m, c, e, 0);
}

void hs__coll_memo_set_checked(hs__coll_memo_t *m, hs_coll_t *c)
{
  if (!keyable(m, c))
    return;
  entry_t *e = (entry_t *)find(m, NULL, c, ALGO_CHOICE, key_hash(NULL, c, ALGO_CHOICE));
  if (e)
    e->checked = true;
}

bool hs__coll_memo_get_phase(hs__coll_memo_t *m, const hs_coll_algo_t *algo, hs_coll_t *c,
                             int32_t phase, hs__coll_phase_t *out, bool *has)
{
  if (!keyable(m, c) || !algo || phase < 0)
    return false;
  const entry_t *e = find(m, algo, c, phase, key_hash(algo, c, phase));
  if (!e)
    return false;
  m->hits++;
  *has = e->has;
  if (!e->has)
    return true;
  out->latency_ns = e->latency_ns;
  out->n_flows = e->n_flows;
  out->bytes = m->fbytes + e->fbytes_off;
  out->flow_off = m->foff + e->foff_off;
  out->hops = m->hops + e->hop_off;
  out->n_hops = e->n_hops;
  return true;
}

void hs__coll_memo_put_phase(hs__coll_memo_t *m, const hs_coll_algo_t *algo, hs_coll_t *c,
                             int32_t phase, const hs_coll_builder_t *b, bool has)
{
  if (!keyable(m, c) || !algo || phase < 0 || (has && (b->open || b->n_flows < 0)))
    return;
  uint64_t h = key_hash(algo, c, phase);
  if (find(m, algo, c, phase, h))
    return;
  size_t nf = has ? (size_t)b->n_flows : 0, nh = has ? b->n_hops : 0;
  size_t extra = nf * sizeof(double) + (nf + 1) * sizeof(int32_t) + nh * sizeof(hs_flow_hop_t);
  if (hs_reserve((void **)&m->fbytes, &m->cap_fbytes, m->n_fbytes + nf + 1, sizeof *m->fbytes) != HS_OK ||
      hs_reserve((void **)&m->foff, &m->cap_foff, m->n_foff + nf + 1, sizeof *m->foff) != HS_OK ||
      hs_reserve((void **)&m->hops, &m->cap_hops, m->n_hops + nh + 1, sizeof *m->hops) != HS_OK)
    return;
  entry_t *e = add(m, algo, c, phase, h, extra);
  if (!e)
    return;
  e->has = has;
  if (has) {
    e->latency_ns = b->latency_ns;
    e->n_flows = b->n_flows;
    e->fbytes_off = m->n_fbytes;
    e->foff_off = m->n_foff;
    e->hop_off = m->n_hops;
    e->n_hops = nh;
    if (nf > 0) {
      memcpy(m->fbytes + m->n_fbytes, b->bytes, nf * sizeof *m->fbytes);
      memcpy(m->foff + m->n_foff, b->flow_off, (nf + 1) * sizeof *m->foff);
      m->n_fbytes += nf;
      m->n_foff += nf + 1;
    }
    if (nh > 0)
      memcpy(m->hops + m->n_hops, b->hops, nh * sizeof *m->hops);
    m->n_hops += nh;
  }
  commit(m, c, e, extra);
}
