/*
 * net_seam.h - private to sim/: what the network (net.c) offers the layer
 * above it, the collectives (collective.c). The network keeps one opaque
 * slot for that layer's state, which the layer fills at its first
 * collective on the network, and calls back through the hooks it was given
 * when its paths change and when it is freed. The network includes nothing
 * of the collective layer, so the dependency runs one way: collective.c ->
 * net.c (collectives are made of the network's flows; the network knows no
 * collectives).
 */
#ifndef HS_NET_SEAM_H
#define HS_NET_SEAM_H

#include "hs_net.h"

/* Hooks of the state in the collective slot; both get that state. */
typedef struct hs__net_slot_ops {
  void (*free)(void *state, hs_engine_t *eng); /* from hs_net_free: cancel on eng, free */
  void (*paths_changed)(void *state);          /* from hs_net_set_path_fn */
} hs__net_slot_ops_t;

/* The network's engine. */
hs_engine_t *hs__net_engine(hs_net_t *net);
/* The collective layer's state; NULL until hs__net_set_colls. */
void *hs__net_colls(hs_net_t *net);
/* Puts state into the empty slot; the network owns it from now on and frees
 * it through ops->free (ops must outlive the network). */
void hs__net_set_colls(hs_net_t *net, void *state, const hs__net_slot_ops_t *ops);
/* Whether the network's paths are a const topology's, fixed for its life
 * (hs_net_new), so results over them may be memoised. */
bool hs__net_paths_fixed(const hs_net_t *net);

#endif /* HS_NET_SEAM_H */
