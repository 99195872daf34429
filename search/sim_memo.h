/*
 * sim_memo.h - the simulated times of the plans a simulator-driven climb
 * has already judged (hapt's local search, the hetero-1f1b warm-up tuner).
 * Such a climb revisits plans: the move back of the last round's move, or
 * a neighbour the candidate pool simulated before the climb began. The
 * simulator is deterministic (same model, cluster and plan, same report),
 * so the memo answers those from the stored time instead of simulating
 * again; a climb counts a memo answer as one simulation, so its budget,
 * and so every plan it returns, is the same as without the memo.
 *
 * Invariants: each entry holds a deep copy of its plan (owned by the memo)
 * and the time its caller stored: the iteration seconds, or INFINITY for a
 * plan that ran out of memory, that the simulator rejected, or that the
 * caller knows cannot beat its climb's incumbent. hs__plan_same is
 * conservative: two plans it calls the same hold equal fields, so they
 * simulate alike; it may call two equivalent plans different (a practice
 * struct compared byte by byte), which only costs a simulation.
 *
 * Expected workload: at most a few hundred entries (a climb's budget is
 * 64 simulations at most), each lookup a linear scan that stops at the
 * first differing field, far cheaper than the simulation it saves.
 */
#ifndef HS_SIM_MEMO_H
#define HS_SIM_MEMO_H

#include "search_internal.h"

typedef struct hs_sim_memo {
  hs_plan_t *plans;   /* owned deep copies, n of cap */
  double *iter_s;     /* per entry: simulated seconds, INFINITY when not runnable */
  int32_t n, cap;
  uint64_t hits;      /* lookups answered from the memo */
} hs_sim_memo_t;

/* A zeroed memo; destroy accepts it and a zeroed struct. */
void hs__sim_memo_init(hs_sim_memo_t *m);
void hs__sim_memo_destroy(hs_sim_memo_t *m);
/* True (and *iter_s) when a plan the same as p (hs__plan_same) is stored;
 * counts a hit. O(entries x plan size). */
bool hs__sim_memo_get(hs_sim_memo_t *m, const hs_plan_t *p, double *iter_s);
/* Stores a deep copy of p with iter_s; HS_ENOMEM when allocating fails
 * (the memo is then unchanged). O(plan size), amortized. */
hs_status_t hs__sim_memo_put(hs_sim_memo_t *m, const hs_plan_t *p, double iter_s);
/* Field-by-field plan equality (pipelines, stages, replicas and their
 * devices and shares, orders, practice byte by byte, shards, device
 * ratios). O(plan size). */
bool hs__plan_same(const hs_plan_t *a, const hs_plan_t *b);
/* hs__plan_same but for the ZeRO stage (practice.zero_stage and
 * optimizer_sharding). O(plan size). */
bool hs__plan_same_but_zero(const hs_plan_t *a, const hs_plan_t *b);

/* Rewrites to no recomputation every stage of p whose selective
 * recomputation recomputes nothing: no op of its range, under p's practice
 * and each replica's TP degree, that hs_practice_recomputes_selective. The
 * simulator's timeline then stays the same (sim/lower.c recomputes only
 * those ops; elsewhere it reads a stage's recomputation only as full, or
 * for memory and the report's breakdown), so p keeps its simulated time
 * unless it runs out of memory. O(ops x replicas). */
void hs__plan_canon_timeline(const hs_model_t *m, hs_plan_t *p);
/* *same = a and b, each canonicalised (hs__plan_canon_timeline, on
 * copies), are hs__plan_same: they simulate to the same time when both fit.
 * HS_ENOMEM when a copy fails. O(plan size + ops x replicas). */
hs_status_t hs__plan_same_timeline(const hs_model_t *m, const hs_plan_t *a, const hs_plan_t *b,
                                   bool *same);

#endif /* HS_SIM_MEMO_H */
