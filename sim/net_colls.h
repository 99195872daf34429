/*
 * net_colls.h - private to sim/: the collective layer's state of one
 * network (collective.c): its live collectives, their phase builder and
 * block pool. collective.c makes it at the network's first collective and
 * parks it in the network's opaque slot (net_seam.h); the network itself
 * never includes this header (the dependency runs collective -> net).
 */
#ifndef HS_NET_COLLS_H
#define HS_NET_COLLS_H

#include "hs_net.h"

typedef struct hs__colls hs__colls_t;

/* A network's collective state over `paths` (which must outlive it). */
hs_status_t hs__colls_new(const hs_net_paths_t *paths, hs__colls_t **out);
/* Memoise chosen algorithms and built phases (coll_memo.h): only for paths
 * that cannot change while the state lives (a topology's network). Out of
 * memory leaves it without; results are the same either way. */
void hs__colls_enable_memo(hs__colls_t *cs);
/* Drops the memo (the paths are about to change). NULL ok. */
void hs__colls_disable_memo(hs__colls_t *cs);
/* Its entries and hits (0 without one). */
size_t hs__colls_memo_entries(const hs__colls_t *cs);
uint64_t hs__colls_memo_hits(const hs__colls_t *cs);
/* Of those, the hints taken (hs_coll_t.memo_hint matched its key). */
uint64_t hs__colls_memo_hint_hits(const hs__colls_t *cs);
/* Cancels the live collectives' pending events on eng (may be NULL) and
 * frees the state; the collectives are left unfinished. NULL ok. */
void hs__colls_free(hs__colls_t *cs, hs_engine_t *eng);

#endif /* HS_NET_COLLS_H */
