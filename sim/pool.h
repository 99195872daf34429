/*
 * pool.h - private to sim/: a block pool of power-of-two size classes, used by
 * the network (per-flow hop positions) and by the collective layer (phase
 * hops and flow arrays), each with its own pool.
 */
#ifndef HS_POOL_H
#define HS_POOL_H

#include <stddef.h>

/* ---- block pool ----------------------------------------------------------
 * Power-of-two size classes with a free list each; blocks are malloc'd once
 * and never move, so pointers into them stay valid (flow hop arrays point
 * into collective blocks). Steady state: alloc and release are O(1) pops and
 * pushes; hs__pool_destroy frees every block. */
typedef struct hs__pool {
  void *free_list[48];
  void *all;
} hs__pool_t;

/* A block of at least `bytes` (16-byte aligned); NULL when out of memory. */
void *hs__pool_alloc(hs__pool_t *p, size_t bytes);
/* Usable size of a block from hs__pool_alloc. */
size_t hs__pool_block_size(const void *mem);
void hs__pool_release(hs__pool_t *p, void *mem); /* NULL ok */
void hs__pool_destroy(hs__pool_t *p);

#endif /* HS_POOL_H */
