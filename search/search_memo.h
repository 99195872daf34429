/*
 * search_memo.h - the memo of whole searches (search/search_memo.c): the
 * result of one planner run on one (sub-)cluster, kept so that the same
 * search asked again in one process (a what-if's options, a sweep's points
 * and a comparison share most of their device subsets) is answered from
 * the memo instead of searched again. hs_planner_run's device-subset search
 * (registry.c) is its one user; hs_search_memo_begin/end (hs_search.h)
 * scope it.
 *
 * Invariants: the key holds everything a search reads, byte for byte: the
 * planner's name, the model (every field and op), the cluster's content
 * (GPU table, sites, nodes with their node groups renumbered by first
 * appearance, devices, links; not its name, description or source) and
 * every planner option except the deadline (a clock reading) and, for
 * planners that do not read it, work_share; a lookup compares the whole
 * key, so a hit is an equal search, never a hash collision. Only searches
 * the time limit did not cut short are stored, and a result whose note or
 * message names its cluster is answered only for a cluster of that name:
 * a hit gives exactly the plan, statistics, status and message the search
 * gave.
 */
#ifndef HS_SEARCH_MEMO_H
#define HS_SEARCH_MEMO_H

#include "hs_search.h"

/* One search's key, built by hs__search_memo_key: the caller frees bytes. */
typedef struct hs_search_key {
  unsigned char *bytes;
  size_t len, cap;
  uint64_t hash;          /* FNV-1a of bytes: a quick reject, never the whole test */
  bool ok;                /* false when building it ran out of memory: no lookup, no store */
  double beat_s;          /* not part of the key: the options' beat_s. An entry stored with
                             stats.pruned_below_s = b > 0 answers a lookup only when
                             0 < beat_s <= b (its plan is then the full search's, or no faster
                             than b, so no use either way); a less pruned result replaces it */
} hs_search_key_t;

/* True while a memo is active on this thread (hs_search_memo_begin). O(1). */
bool hs__search_memo_active(void);
/* The key of planner t on model m, cluster c, options o. O(model + cluster). */
void hs__search_memo_key(hs_search_key_t *k, const hs_planner_type_t *t, const hs_model_t *m,
                         const hs_cluster_t *c, const hs_plan_opts_t *o);
void hs__search_memo_key_free(hs_search_key_t *k);
/* True when a search equal to key k on a cluster named c_name is stored:
 * then *plan (a deep copy; the caller destroys it), *stats, *st (the
 * search's status) and, when it failed, err (status and message) are
 * filled. False (nothing written) when absent, or when copying the plan
 * ran out of memory. O(entries with the same hash x key size + plan). */
bool hs__search_memo_get(const hs_search_key_t *k, const char *c_name, hs_plan_t *plan,
                         hs_search_stats_t *stats, hs_status_t *st, hs_error_t *err);
/* Stores a search's outcome (st, plan when HS_OK, stats, err's message)
 * under k, when it may be reused: not cut by the time limit, not out of
 * memory or internal. Out of memory here only skips the store. O(plan). */
void hs__search_memo_put(const hs_search_key_t *k, const char *c_name, hs_status_t st,
                         const hs_plan_t *plan, const hs_search_stats_t *stats,
                         const hs_error_t *err);

#endif /* HS_SEARCH_MEMO_H */
