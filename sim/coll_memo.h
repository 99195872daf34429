/*
 * coll_memo.h - private to the collective layer (collective.c): a memo of
 * what a collective's start computes from the network's paths alone, for a
 * network whose paths cannot change while it lives (a topology's; see
 * hs__colls_enable_memo).
 *
 * The same collective recurs many times in one simulation: a TP group's
 * all-reduce or reduce-scatter of the same bytes in every layer of every
 * microbatch, a DP group's bucket every iteration. Its default algorithm
 * (choose_algo: path queries, and closed-form estimates of the candidates
 * across nodes) and each phase's coupled flows (build_phase: one path query
 * per hop, then the merge and sort of hs__builder_close) are pure functions
 * of (algorithm, op, devices, bytes, phase) and the paths; the memo keeps
 * them keyed on exactly that, so a repeat costs a comparison of the device
 * list and a copy (the list's hash is taken once per start,
 * hs__coll_memo_hash). A collective's entries share one copy of its device
 * list: once a lookup or store has matched c's list against a copy, c
 * keeps that copy's place (c->memo_devs), and the lookups of its later
 * phases compare places instead of lists (a DP group's list is up to
 * thousands of devices, its ring thousands of phases). An entry also links
 * to the one stored next for the same collective (its next phase), and a
 * lookup tries that link from the entry c met last (c->memo_last) before
 * probing the table at a random place: one cache miss instead of two. Results are the same bit for bit as without it: a
 * hit returns what the miss computed.
 *
 * Collectives with shares (padded all-gather, grouped broadcast) are not
 * memoised. The memo stops growing at HS_COLL_MEMO_MAX_BYTES (a simulation
 * then builds what it has not seen, as without a memo); running out of
 * memory while storing only leaves the entry out. Lookups O(n) for n
 * devices (a comparison); no allocation or copy on a hit.
 */
#ifndef HS_COLL_MEMO_H
#define HS_COLL_MEMO_H

#include "coll_impl.h"

#define HS_COLL_MEMO_MAX_BYTES ((size_t)64 << 20)

typedef struct hs__coll_memo hs__coll_memo_t;

/* NULL when out of memory (the caller then runs without a memo). */
hs__coll_memo_t *hs__coll_memo_new(void);
void hs__coll_memo_free(hs__coll_memo_t *m); /* NULL ok */

/* The hash of c's (op, n, bytes, devices) the lookups below key on (0
 * when m cannot keep c: no memo, no device list, or shares); the caller
 * stores it in c->memo_hash, and SIZE_MAX in c->memo_devs and c->memo_last,
 * before them
 * (hs_coll_start does) and keeps those fields unchanged while they run.
 * O(n). */
uint64_t hs__coll_memo_hash(const hs__coll_memo_t *m, const hs_coll_t *c);

/* c->memo_hint names an algorithm choice stored for c's very key (op, n,
 * bytes, devices)? Then c takes that entry's hash (c->memo_hash) and device
 * copy (c->memo_devs) without hashing its list, and the choice's lookup
 * tries that entry before the table: a TP group's next all-reduce costs a
 * comparison instead of a hash and two cache misses. False (c untouched)
 * otherwise; the caller then hashes as usual. The device lists are compared
 * unless c->memo_hint_devices is c->devices (hs_coll_t's promise). Call instead of
 * hs__coll_memo_hash, with c->memo_devs and c->memo_last SIZE_MAX. O(n). */
bool hs__coll_memo_take_hint(hs__coll_memo_t *m, hs_coll_t *c);
/* After c's algorithm was found or stored (hs__coll_memo_get_algo or
 * _put_algo, as the last memo call for c): that choice's entry plus 1, for
 * a later collective's memo_hint; 0 when the memo keeps none. O(1). */
size_t hs__coll_memo_choice(const hs__coll_memo_t *m, const hs_coll_t *c);

/* The algorithm choose_algo gave for c (c->algo NULL, no shares): true and
 * *out on a hit, *checked whether c with that algorithm passed the
 * collective's validation before (hs__coll_memo_set_checked): validation
 * is a pure function of the key and the algorithm, so a checked hit needs
 * none (issue 35: it cost 3.6% of bench_sim's instructions, O(n^2) in the
 * devices up to 32). */
bool hs__coll_memo_get_algo(hs__coll_memo_t *m, hs_coll_t *c,
                            const hs_coll_algo_t **out, bool *checked);
void hs__coll_memo_put_algo(hs__coll_memo_t *m, hs_coll_t *c, const hs_coll_algo_t *algo);
/* Records that c (with the algorithm stored for it) passed validation; no
 * effect when c has no stored algorithm. */
void hs__coll_memo_set_checked(hs__coll_memo_t *m, hs_coll_t *c);

/* A built phase, read in place: its latency, n_flows flows of bytes[i]
 * each over hops[flow_off[i] .. flow_off[i + 1]) (n_hops in all). */
typedef struct hs__coll_phase {
  double latency_ns;
  int32_t n_flows;
  const double *bytes;
  const int32_t *flow_off;
  const hs_flow_hop_t *hops;
  size_t n_hops;
} hs__coll_phase_t;

/* Phase `phase` of c under `algo`: on a hit, true, *has whether the phase
 * exists and, when it does, *out pointing at its closed description in
 * the memo, valid until the next put. False on a miss. No copy. */
bool hs__coll_memo_get_phase(hs__coll_memo_t *m, const hs_coll_algo_t *algo,
                             hs_coll_t *c, int32_t phase, hs__coll_phase_t *out,
                             bool *has);
/* Stores what build_phase + hs__builder_close gave (b closed; has false:
 * no such phase). */
void hs__coll_memo_put_phase(hs__coll_memo_t *m, const hs_coll_algo_t *algo, hs_coll_t *c,
                             int32_t phase, const hs_coll_builder_t *b, bool has);

/* Entries stored and lookups answered (tests and benchmarks). */
size_t hs__coll_memo_entries(const hs__coll_memo_t *m);
uint64_t hs__coll_memo_hits(const hs__coll_memo_t *m);
uint64_t hs__coll_memo_hint_hits(const hs__coll_memo_t *m); /* hints taken (take_hint true) */

#endif /* HS_COLL_MEMO_H */
