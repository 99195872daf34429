/*
 * test_search_memo.c - the search memo (search/search_memo.c, hs_search.h)
 * against its definition: a search answered from the memo gives exactly
 * what the search run afresh, with the memo off, gives.
 *
 * What is checked, each against runs without a memo (the independent
 * truth: the same planners with nothing stored):
 * - random clusters (random_cluster.h: 2-4 node groups, 1-3 sites), every
 *   planner of the table: hs_planner_run with a memo active, run twice and
 *   then on a cluster with one more node group (whose device subsets are
 *   mostly the smaller cluster's, as a what-if's options are), gives the
 *   same status, message, plan (its JSON, byte for byte), candidates, note
 *   and simulated iteration time as without the memo; the memo answered
 *   some searches (hits > 0);
 * - the memo leaves work_share out of the key for every planner but
 *   autohet: those plan alike with any share (whole cluster, no subsets);
 * - a result whose message names its cluster is not given to a cluster of
 *   another name with the same content (exhaustive's refusal names it);
 * - nested scopes: the outer end frees, counts restart at the next begin;
 * - sharing between workers (hs_search_memo_export / import, as forked
 *   what-if workers do): a memo that imported another's entries answers
 *   every one of those searches from them (no miss), with the outcome of a
 *   fresh search; imported entries are not exported again; every prefix of
 *   the exported bytes imports without a crash (HS_EINVAL past the last
 *   whole entry) and a plan's bytes (hs_plan_pack) cut anywhere unpack to
 *   HS_EINVAL, whole to the same plan.
 */
#include "hs_search.h"
#include "hs_test.h"
#include "random_cluster.h"
#include "search_fixture.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One planner run's outcome, without the search time (a clock reading). */
typedef struct outcome {
  hs_status_t st;
  char msg[HS_ERROR_MSG_MAX];
  char *plan_json;
  uint64_t candidates;
  char note[sizeof ((hs_search_stats_t *)0)->note];
  double iter_s;
} outcome_t;

static void run_outcome(const hs_planner_type_t *t, const hs_model_t *m, const hs_cluster_t *c,
                        const hs_plan_opts_t *o, outcome_t *out)
{
  hs_plan_t plan;
  hs_search_stats_t stats;
  hs_report_t rep;
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  memset(out, 0, sizeof *out);
  out->st = hs_planner_run(t, m, c, o, NULL, &plan, &stats, &rep, &err);
  hs_strlcpy(out->msg, out->st == HS_OK ? "" : err.msg, sizeof out->msg);
  if (out->st == HS_OK) {
    cJSON *j = hs_plan_to_json(&plan);
    out->plan_json = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    out->candidates = stats.candidates;
    hs_strlcpy(out->note, stats.note, sizeof out->note);
    out->iter_s = rep.iteration_time_s;
    hs_plan_destroy(&plan);
    hs_report_destroy(&rep);
  }
}

static void check_same(const outcome_t *a, const outcome_t *b, const char *what, const char *name,
                       int i)
{
  CHECK_MSG(a->st == b->st, "case %d %s %s: status %d with the memo, %d without", i, name, what,
            a->st, b->st);
  CHECK_MSG(strcmp(a->msg, b->msg) == 0, "case %d %s %s: message\n  %s\n  %s", i, name, what, a->msg,
            b->msg);
  bool same_plan = (a->plan_json == NULL) == (b->plan_json == NULL) &&
                   (!a->plan_json || strcmp(a->plan_json, b->plan_json) == 0);
  CHECK_MSG(same_plan, "case %d %s %s: plans differ", i, name, what);
  CHECK_MSG(a->candidates == b->candidates, "case %d %s %s: candidates %llu vs %llu", i, name, what,
            (unsigned long long)a->candidates, (unsigned long long)b->candidates);
  CHECK_MSG(strcmp(a->note, b->note) == 0, "case %d %s %s: note \"%s\" vs \"%s\"", i, name, what,
            a->note, b->note);
  CHECK_MSG(memcmp(&a->iter_s, &b->iter_s, sizeof a->iter_s) == 0, "case %d %s %s: %.17g vs %.17g s",
            i, name, what, a->iter_s, b->iter_s);
}

static void outcome_free(outcome_t *o) { free(o->plan_json); }

static void test_memo_hits_equal_fresh_searches(void)
{
  const char *env = getenv("HS_MEMO_CASES");
  int cases = env ? atoi(env) : 3;
  hs_model_t m;
  small_gpt(&m, 4, 256, 256);
  char json[8192];
  uint64_t total_hits = 0;
  for (int i = 0; i < cases; i++) {
    random_seed(3000 + i);
    world_t w;
    random_world(&w);
    hs_cluster_t small, big;
    hs_error_t err;
    hs_error_init(&err);
    hs_cluster_init(&small);
    hs_cluster_init(&big);
    /* the big cluster keeps every site of the small one: its subsets
     * without the last group are the small cluster's subsets */
    for (int g = 0; g + 1 < w.n_groups; g++)
      w.g[w.n_groups - 1].site = w.g[g].site;
    cluster_json(&w, w.n_groups - 1, json, sizeof json);
    CHECK_MSG(hs_cluster_parse(json, "small.json", &small, &err) == HS_OK, "%s", err.msg);
    cluster_json(&w, w.n_groups, json, sizeof json);
    CHECK_MSG(hs_cluster_parse(json, "big.json", &big, &err) == HS_OK, "%s", err.msg);
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = 32;
    for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
      outcome_t fresh_small, fresh_big, memo_small, memo_again, memo_big;
      run_outcome(*t, &m, &small, &o, &fresh_small);
      run_outcome(*t, &m, &big, &o, &fresh_big);
      hs_search_memo_begin();
      run_outcome(*t, &m, &small, &o, &memo_small);
      run_outcome(*t, &m, &small, &o, &memo_again);
      run_outcome(*t, &m, &big, &o, &memo_big);
      uint64_t hits, misses;
      hs_search_memo_counts(&hits, &misses);
      hs_search_memo_end();
      total_hits += hits;
      check_same(&memo_small, &fresh_small, "first run", (*t)->name, i);
      check_same(&memo_again, &fresh_small, "memo answer", (*t)->name, i);
      check_same(&memo_big, &fresh_big, "larger cluster", (*t)->name, i);
      outcome_free(&fresh_small), outcome_free(&fresh_big), outcome_free(&memo_small);
      outcome_free(&memo_again), outcome_free(&memo_big);
    }
    hs_cluster_destroy(&small);
    hs_cluster_destroy(&big);
  }
  fprintf(stderr, "  %d cases: %llu searches answered from the memo\n", cases,
          (unsigned long long)total_hits);
  CHECK(total_hits > 0);
  hs_model_destroy(&m);
}

/* The planners whose key leaves work_share out plan alike with any share. */
static void test_work_share_unread(void)
{
  hs_model_t m;
  small_gpt(&m, 4, 256, 256);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(two_site_cluster(&c, 2, 10.0, 100.0, &err) == HS_OK);
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++) {
    if (strcmp((*t)->name, "autohet") == 0)
      continue; /* its MILP budget is the share (search/autohet.c) */
    hs_plan_opts_t o;
    hs_plan_opts_init(&o);
    o.global_batch = 16;
    o.device_subsets = false;
    outcome_t a, b;
    o.work_share = 0.05;
    run_outcome(*t, &m, &c, &o, &a);
    o.work_share = 1.0;
    run_outcome(*t, &m, &c, &o, &b);
    check_same(&a, &b, "work share 0.05 vs 1", (*t)->name, 0);
    outcome_free(&a), outcome_free(&b);
  }
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* exhaustive refuses a cluster above max_devices naming it: the memo must
 * not answer a cluster of another name with that message. */
static void test_message_names_its_cluster(void)
{
  hs_model_t m;
  small_gpt(&m, 4, 256, 256);
  hs_cluster_t a, b;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(two_site_cluster(&a, 2, 10.0, 100.0, &err) == HS_OK);
  CHECK(two_site_cluster(&b, 2, 10.0, 100.0, &err) == HS_OK);
  hs_strlcpy(b.name, "other-name", sizeof b.name);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 16;
  o.max_devices = 1;
  const hs_planner_type_t *t = hs_planner_find("exhaustive");
  hs_search_memo_begin();
  outcome_t ra, rb;
  run_outcome(t, &m, &a, &o, &ra);
  run_outcome(t, &m, &b, &o, &rb);
  hs_search_memo_end();
  CHECK(ra.st != HS_OK && rb.st != HS_OK);
  CHECK_CONTAINS(ra.msg, a.name);
  CHECK_CONTAINS(rb.msg, "other-name");
  outcome_free(&ra), outcome_free(&rb);
  hs_cluster_destroy(&a);
  hs_cluster_destroy(&b);
  hs_model_destroy(&m);
}

static void test_nested_scopes(void)
{
  hs_model_t m;
  small_gpt(&m, 4, 256, 256);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  CHECK(two_site_cluster(&c, 2, 10.0, 100.0, &err) == HS_OK);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 16;
  const hs_planner_type_t *t = hs_planner_find("megatron");
  outcome_t r;
  uint64_t hits, misses;
  hs_search_memo_begin();
  hs_search_memo_begin();
  run_outcome(t, &m, &c, &o, &r), outcome_free(&r);
  hs_search_memo_end(); /* inner end: the memo stays */
  run_outcome(t, &m, &c, &o, &r), outcome_free(&r);
  hs_search_memo_counts(&hits, &misses);
  /* two node groups: the whole cluster and 2 subsets, searched then answered */
  CHECK_MSG(hits == 3 && misses == 3, "hits %llu misses %llu",
            (unsigned long long)hits, (unsigned long long)misses);
  hs_search_memo_end();
  hs_search_memo_begin(); /* a fresh memo: nothing stored */
  run_outcome(t, &m, &c, &o, &r), outcome_free(&r);
  hs_search_memo_counts(&hits, &misses);
  CHECK_MSG(hits == 0 && misses == 3, "hits %llu misses %llu", (unsigned long long)hits,
            (unsigned long long)misses);
  hs_search_memo_end();
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}


/* Every planner on one random cluster, with a memo: returns the exported
 * entries (the caller frees b->p) and the outcomes in out[planner]. */
static int export_searches(const hs_model_t *m, const hs_cluster_t *c, const hs_plan_opts_t *o,
                           outcome_t *out, hs_bytes_t *b)
{
  int n = 0;
  hs_search_memo_begin();
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++)
    run_outcome(*t, m, c, o, &out[n++]);
  *b = (hs_bytes_t){.ok = true};
  hs_search_memo_export(b);
  hs_bytes_t again = {.ok = true};
  hs_search_memo_export(&again); /* everything went out already */
  CHECK_MSG(again.len == 0, "a second export gave %zu bytes", again.len);
  free(again.p);
  hs_search_memo_end();
  return n;
}

static void test_shared_between_workers(void)
{
  hs_model_t m;
  small_gpt(&m, 4, 256, 256);
  char json[8192];
  random_seed(3100);
  world_t w;
  random_world(&w);
  hs_cluster_t c;
  hs_error_t err;
  hs_error_init(&err);
  hs_cluster_init(&c);
  cluster_json(&w, w.n_groups, json, sizeof json);
  CHECK_MSG(hs_cluster_parse(json, "shared.json", &c, &err) == HS_OK, "%s", err.msg);
  hs_plan_opts_t o;
  hs_plan_opts_init(&o);
  o.global_batch = 32;
  outcome_t first[32], second[32];
  hs_bytes_t b;
  int n = export_searches(&m, &c, &o, first, &b);
  CHECK(b.ok && b.len > 0);
  /* another worker: imports, then searches the same things */
  hs_search_memo_begin();
  CHECK_EQ_INT(hs_search_memo_import(b.p, b.len), HS_OK);
  int k = 0;
  for (const hs_planner_type_t *const *t = hs_planners; *t; t++, k++) {
    run_outcome(*t, &m, &c, &o, &second[k]);
    check_same(&second[k], &first[k], "imported", (*t)->name, 0);
  }
  uint64_t hits, misses;
  hs_search_memo_counts(&hits, &misses);
  CHECK_MSG(misses == 0 && hits > 0, "after import: %llu hits, %llu misses", (unsigned long long)hits,
            (unsigned long long)misses);
  hs_bytes_t re = {.ok = true};
  hs_search_memo_export(&re);
  CHECK_MSG(re.len == 0, "imported entries exported again: %zu bytes", re.len);
  free(re.p);
  hs_search_memo_end();
  /* every cut of the bytes: no crash, garbled past the last whole entry */
  int einval = 0;
  for (size_t cut = 0; cut < b.len; cut += 1 + b.len / 4096) {
    hs_search_memo_begin();
    hs_status_t st = hs_search_memo_import(b.p, cut);
    einval += st == HS_EINVAL;
    CHECK(st == HS_OK || st == HS_EINVAL);
    hs_search_memo_end();
  }
  CHECK(einval > 0);
  for (int i = 0; i < n; i++)
    outcome_free(&first[i]), outcome_free(&second[i]);
  free(b.p);
  hs_cluster_destroy(&c);
  hs_model_destroy(&m);
}

/* hs_plan_pack / unpack on a plan with every optional part: an explicit
 * order, shards and device ratios; every cut is refused. */
static void test_plan_pack(void)
{
  hs_plan_t p, q;
  hs_plan_init(&p);
  CHECK(hs_plan_alloc_pipelines(&p, 2) == HS_OK);
  for (int i = 0; i < 2; i++) {
    p.pipelines[i].microbatch_size = 1 + i;
    p.pipelines[i].n_microbatches = 4;
    CHECK(hs_plan_alloc_stages(&p.pipelines[i], 2) == HS_OK);
    for (int s = 0; s < 2; s++) {
      hs_plan_stage_t *st = &p.pipelines[i].stages[s];
      st->op_first = s * 3, st->op_last = s * 3 + 3;
      CHECK(hs_plan_alloc_replicas(st, 2) == HS_OK);
      int32_t dev[2] = {i * 8 + s * 4, i * 8 + s * 4 + 1};
      for (int r = 0; r < 2; r++) {
        CHECK(hs_plan_replica_set_devices(&st->replicas[r], dev, 1 + r) == HS_OK);
        st->replicas[r].share = r ? 0.25 : 0.75;
      }
    }
  }
  CHECK(hs_plan_stage_set_order(&p.pipelines[0].stages[1], "FFBFBFBB") == HS_OK);
  p.shards = hs_calloc(2, sizeof *p.shards);
  p.n_shards = 2;
  p.shards[1].op = 3;
  p.device_ratios = hs_calloc(3, sizeof(double));
  p.n_device_ratios = 3;
  p.device_ratios[2] = 0.125;
  hs_bytes_t b = {.ok = true};
  hs_plan_pack(&p, &b);
  CHECK(b.ok);
  hs_bytes_reader_t r = {.p = b.p, .len = b.len, .ok = true};
  CHECK_EQ_INT(hs_plan_unpack(&r, &q), HS_OK);
  CHECK(r.pos == b.len);
  cJSON *jp = hs_plan_to_json(&p), *jq = hs_plan_to_json(&q);
  char *sp = cJSON_PrintUnformatted(jp), *sq = cJSON_PrintUnformatted(jq);
  CHECK_MSG(sp && sq && strcmp(sp, sq) == 0, "unpacked plan differs:\n%s\n%s", sp, sq);
  CHECK(q.n_shards == 2 && q.shards[1].op == 3 && q.n_device_ratios == 3 && q.device_ratios[2] == 0.125);
  free(sp), free(sq), cJSON_Delete(jp), cJSON_Delete(jq);
  hs_plan_destroy(&q);
  for (size_t cut = 0; cut < b.len; cut++) {
    hs_bytes_reader_t rc = {.p = b.p, .len = cut, .ok = true};
    CHECK_MSG(hs_plan_unpack(&rc, &q) == HS_EINVAL, "a plan cut at %zu of %zu bytes unpacked", cut, b.len);
    hs_plan_destroy(&q);
  }
  free(b.p);
  hs_plan_destroy(&p);
}

int main(void)
{
  HS_RUN(test_memo_hits_equal_fresh_searches);
  HS_RUN(test_work_share_unread);
  HS_RUN(test_message_names_its_cluster);
  HS_RUN(test_nested_scopes);
  HS_RUN(test_shared_between_workers);
  HS_RUN(test_plan_pack);
  HS_TEST_END();
}
