/*
 * pool.c - the block pool of pool.h: blocks carry a small header (size
 * class, free-list and all-blocks links) and are never moved or returned to
 * malloc before hs__pool_destroy.
 */
#include "pool.h"

#include "hs_common.h"

#include <stdlib.h>
#include <string.h>

typedef struct blk {
  struct blk *next_all;
  struct blk *next_free;
  size_t cls;
  size_t pad; /* keeps the payload 16-byte aligned */
} blk_t;

#define POOL_MIN_CLS 5

void *hs__pool_alloc(hs__pool_t *p, size_t bytes)
{
  size_t cls = POOL_MIN_CLS;
  while (((size_t)1 << cls) < bytes) {
    cls++;
    if (cls >= HS_ARRAY_LEN(p->free_list))
      return NULL;
  }
  blk_t *b = p->free_list[cls];
  if (b) {
    p->free_list[cls] = b->next_free;
    return b + 1;
  }
  b = malloc(sizeof *b + ((size_t)1 << cls));
  if (!b)
    return NULL;
  b->cls = cls;
  b->next_free = NULL;
  b->next_all = p->all;
  p->all = b;
  return b + 1;
}

size_t hs__pool_block_size(const void *mem)
{
  return mem ? (size_t)1 << ((const blk_t *)mem - 1)->cls : 0;
}

void hs__pool_release(hs__pool_t *p, void *mem)
{
  if (!mem)
    return;
  blk_t *b = (blk_t *)mem - 1;
  b->next_free = p->free_list[b->cls];
  p->free_list[b->cls] = b;
}

void hs__pool_destroy(hs__pool_t *p)
{
  blk_t *b = p->all;
  while (b) {
    blk_t *next = b->next_all;
    free(b);
    b = next;
  }
  memset(p, 0, sizeof *p);
}
