/*
 * import_nccl_tests_fit.c - `hetsim import nccl-tests`: from nccl-tests files
 * to the link parameters the simulator uses, and the simulator's busbw
 * against the measured one per message size.
 *
 * Per file: a weighted least-squares line t = a + S b over the out-of-place
 * times of sizes > 0 (hs__fit_line, as calibrate fits its microbenchmarks).
 * The fitted latency is a; the asymptotic bus bandwidth is factor / b.
 *
 * Links: the file's group becomes a one-site cluster of its nodes (m nodes of
 * k GPUs, the GPU catalog entry, default links) and the simulator's own
 * collective model (hs_coll_estimate_s with the size-independent default
 * algorithm, hs_coll_algo_default: ring on one node, NCCL's ring across
 * nodes (node_ring; never the per-size node_tree) for all-reduce, reduce-scatter
 * and all-gather, direct for alltoall and sendrecv) gives its line a(L) + S b(X) as a function of the unknown link:
 * intra_node for single-node files, nic for multi-node ones. a is affine in
 * the latency L (two evaluations solve it) and b is non-increasing in the
 * bandwidth X (bisection in log X), so the link is set so that the model
 * reproduces the fitted line. Where the other links bound the time (b(X)
 * stops falling), the link is not identifiable: it keeps its default and a
 * warning says so. The all-reduce file of each scope sets its links (the
 * first file when there is no all-reduce); every file is then predicted with
 * the final links, so the table shows how well one set of links predicts
 * every collective measured. O(files x rows + files x 200 estimates).
 */
#include "validate_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A size range's line must hold each of its sizes within this (fit_ranges). */
#define HS_NT_RANGE_TOL 0.05

void hs_nt_import_init(hs_nt_import_t *im) { memset(im, 0, sizeof *im); }

void hs_nt_import_destroy(hs_nt_import_t *im)
{
  if (!im)
    return;
  for (int32_t i = 0; i < im->n_files; i++) {
    hs_nccl_tests_destroy(&im->files[i]);
    free(im->fits[i].pred_time_us);
    free(im->fits[i].pred_busbw_GBps);
  }
  free(im->files);
  free(im->fits);
  memset(im, 0, sizeof *im);
}

/* "NVIDIA A100-SXM4-80GB" -> the catalog entry: exact after dropping the
 * vendor word and turning blanks into '-', else the one entry whose name
 * starts with the first word ("NVIDIA H200" -> H200-SXM-141GB). */
static hs_status_t map_gpu(const hs_gpu_catalog_t *cat, const char *dev, const char *file,
                           char *out, size_t n, hs_error_t *err)
{
  char norm[96], first[48];
  const char *p = dev;
  if (strncmp(p, "NVIDIA ", 7) == 0)
    p += 7;
  if (strncmp(p, "Tesla ", 6) == 0)
    p += 6;
  size_t k = 0;
  for (; *p && k + 1 < sizeof norm; p++)
    norm[k++] = *p == ' ' ? '-' : *p;
  norm[k] = '\0';
  for (size_t i = 0; i < cat->n; i++)
    if (strcasecmp(cat->gpus[i].name, norm) == 0) {
      hs_strlcpy(out, cat->gpus[i].name, n);
      return HS_OK;
    }
  size_t f = strcspn(norm, "-");
  if (f == 0 || f >= sizeof first)
    return hs_error_set(err, HS_EINVAL, "%s: device \"%s\" is not a GPU catalog entry; give --gpu "
                        "(hetsim list gpus)", file, dev);
  memcpy(first, norm, f);
  first[f] = '\0';
  int hits = 0;
  char cand[256] = "";
  for (size_t i = 0; i < cat->n; i++) {
    const char *nm = cat->gpus[i].name;
    if (strncasecmp(nm, first, f) == 0 && (nm[f] == '-' || nm[f] == '\0')) {
      if (hits++ == 0)
        hs_strlcpy(out, nm, n);
      size_t l = strlen(cand);
      snprintf(cand + l, sizeof cand - l, "%s%s", l ? ", " : "", nm);
    }
  }
  if (hits == 1)
    return HS_OK;
  return hs_error_set(err, HS_EINVAL, "%s: device \"%s\" matches %s GPU catalog entries%s%s%s; "
                      "give --gpu NAME", file, dev, hits ? "several" : "no",
                      hits ? " (" : "", cand, hits ? ")" : "");
}

/* Nodes and GPUs per node of a file's group. */
static hs_status_t group_shape(const hs_nccl_tests_t *t, int32_t *m, int32_t *k, hs_error_t *err)
{
  if (t->n_nodes > 0 && t->nranks % t->n_nodes == 0) {
    *m = t->n_nodes;
    *k = t->nranks / t->n_nodes;
    return HS_OK;
  }
  if (t->n_nodes > 0)
    return hs_error_set(err, HS_EINVAL, "%s: %d ranks on %d hosts: not the same number on each",
                        t->file, t->nranks, t->n_nodes);
  return hs_error_set(err, HS_EINVAL, "%s: the header does not say how the %d ranks sit on nodes; "
                      "give --gpus-per-node", t->file, t->nranks);
}

/* The links' per-size ranges into c's table, on every node the links set. */
static void install_ranges(const hs_nt_links_t *links, hs_cluster_t *c)
{
  for (int q = 0; q < 2; q++) {
    const hs_link_ranges_t *r = q ? &links->nic_ranges : &links->intra_ranges;
    if (r->n < 1 || !(q ? links->has_nic : links->has_intra) ||
        c->n_link_ranges >= HS_CLUSTER_MAX_NAMED_LINKS)
      continue;
    c->link_ranges[c->n_link_ranges++] = *r;
    for (size_t i = 0; i < c->n_nodes; i++) {
      if (strcmp(c->gpus.gpus[c->nodes[i].gpu].name, links->gpu) != 0)
        continue;
      if (q)
        c->nodes[i].nic_ranges = (int8_t)c->n_link_ranges;
      else
        c->nodes[i].intra_ranges = (int8_t)c->n_link_ranges;
    }
  }
}

/* A one-site cluster of m nodes of k GPUs of `gpu`, with `links` applied. */
static hs_status_t make_cluster(const char *gpu, int32_t m, int32_t k, const hs_nt_links_t *links,
                                hs_cluster_t *c, hs_error_t *err)
{
  char text[512];
  snprintf(text, sizeof text,
           "{\"name\": \"nccl-tests\", \"sites\": [{\"name\": \"s\", \"nodes\": [{\"count\": %d, "
           "\"gpu\": \"%s\", \"gpus_per_node\": %d}]}]}", m, gpu, k);
  hs_status_t st = hs_cluster_parse(text, "nccl-tests group", c, err);
  if (st != HS_OK)
    return st;
  for (size_t i = 0; i < c->n_nodes; i++) {
    if (links->has_intra) {
      c->nodes[i].intra_GBps = links->intra_GBps;
      c->nodes[i].intra_latency_us = links->intra_latency_us;
    }
    if (links->has_nic) {
      c->nodes[i].nic_GBps = links->nic_GBps;
      c->nodes[i].nic_latency_us = links->nic_latency_us;
    }
    c->nodes[i].nic_rails = (int16_t)links->nic_rails; /* <= 1: one NIC (topology.c) */
  }
  install_ranges(links, c);
  return HS_OK;
}

static hs_coll_op_t coll_op(hs_nt_coll_t c)
{
  switch (c) {
  case HS_NT_ALL_REDUCE:
    return HS_COLL_ALLREDUCE;
  case HS_NT_ALL_GATHER:
    return HS_COLL_ALLGATHER;
  case HS_NT_REDUCE_SCATTER:
    return HS_COLL_REDUCE_SCATTER;
  case HS_NT_ALLTOALL:
    return HS_COLL_ALLTOALL;
  default:
    return HS_COLL_P2P;
  }
}

/* The simulator's uncontended time (s) of the file's collective at each of
 * sizes[0..ns) on cluster c. */
static hs_status_t estimate(const hs_cluster_t *c, const hs_nccl_tests_t *t, int32_t k,
                            const double *sizes, int32_t ns, double *out_s, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_topology_t *topo = NULL;
  int32_t *dev = hs_calloc((size_t)t->nranks, sizeof *dev);
  if (!dev)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  HS_CHECK(hs_topology_new(c, &topo, err));
  hs_coll_t coll;
  hs_coll_init(&coll);
  coll.op = coll_op(t->coll);
  coll.devices = dev;
  if (t->coll == HS_NT_SENDRECV) {
    /* each rank sends to the next: across nodes when there are several */
    dev[0] = 0;
    dev[1] = c->n_nodes > 1 ? k : 1;
    coll.n = 2;
  } else {
    for (int32_t i = 0; i < t->nranks; i++)
      dev[i] = i;
    coll.n = t->nranks;
  }
  /* the size-independent default (node_ring across nodes), not the
   * per-size ring-or-tree choice: a link is fitted as the rate NCCL's ring
   * gets out of it (docs/network.md "Calibrated interconnects") */
  coll.algo = hs_coll_algo_default(topo, coll.op, coll.devices, coll.n);
  if (!coll.algo)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  /* NCCL_ALGO forced another one: tree / nvls inside a node, their
   * inter-node forms across (NCCL runs them for all-reduce only, except
   * NVLS's all-gather / reduce-scatter; otherwise it keeps its ring) */
  const char *forced = NULL;
  if (t->algo == HS_NT_ALGO_TREE)
    forced = c->n_nodes > 1 ? "node_tree" : "tree";
  else if (t->algo == HS_NT_ALGO_NVLS)
    forced = c->n_nodes > 1 ? "nvls_tree" : "nvls";
  const hs_coll_algo_t *fa = forced ? hs_coll_algo_find(forced) : NULL;
  if (fa && fa->supports(coll.op))
    coll.algo = fa;
  for (int32_t i = 0; i < ns; i++) {
    coll.bytes = sizes[i];
    out_s[i] = sizes[i] > 0 ? hs_coll_estimate_s(topo, &coll) : 0.0;
    if (sizes[i] > 0 && !(out_s[i] > 0))
      HS_FAIL(hs_error_set(err, HS_EINTERNAL, "%s: the collective model gave no time for %g B",
                           t->file, sizes[i]));
  }
cleanup:
  hs_topology_free(topo);
  free(dev);
  return st;
}

/* The model's line (a s, b s/B) for the file under `links`. */
static hs_status_t model_line(const char *gpu, const hs_nccl_tests_t *t, int32_t m, int32_t k,
                              const hs_nt_links_t *links, const double sz[2], double *a, double *b,
                              hs_error_t *err)
{
  hs_cluster_t c;
  hs_cluster_init(&c);
  double ts[2] = {0, 0};
  hs_status_t st = make_cluster(gpu, m, k, links, &c, err);
  if (st == HS_OK)
    st = estimate(&c, t, k, sz, 2, ts, err);
  hs_cluster_destroy(&c);
  *b = (ts[1] - ts[0]) / (sz[1] - sz[0]);
  *a = ts[0] - *b * sz[0];
  return st;
}

/* Sets the intra (scope 0) or nic (scope 1) link so that the model's line
 * matches the fit of file t. */
static hs_status_t solve_link(const char *gpu, const hs_nccl_tests_t *t, const hs_nt_fit_t *f,
                              int32_t m, int32_t k, int scope, const double sz[2], bool keep_ranges,
                              hs_nt_links_t *links, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_nt_links_t l = *links;
  /* The single line per link solves without the other scope's ranges, so
   * its figures are what they were before ranges existed (the catalog's
   * refit); the ranges are fitted on top, with them (fit_ranges). */
  if (!keep_ranges) {
    memset(&l.intra_ranges, 0, sizeof l.intra_ranges);
    memset(&l.nic_ranges, 0, sizeof l.nic_ranges);
  }
  double *gb = scope ? &l.nic_GBps : &l.intra_GBps, *lat = scope ? &l.nic_latency_us
                                                                 : &l.intra_latency_us;
  const char *what = scope ? "nic" : "intra_node";
  if (scope)
    l.has_nic = true;
  else
    l.has_intra = true;
  double fa = f->latency_us * 1e-6;
  double fb = hs_nt_busbw_factor(t->coll, t->nranks) / (f->busbw_GBps * HS_GB);
  /* latency: a(L) = a0 + c L */
  double a0, a1, b;
  *gb = 100.0;
  *lat = 0.0;
  HS_CHECK(model_line(gpu, t, m, k, &l, sz, &a0, &b, err));
  *lat = 1.0;
  HS_CHECK(model_line(gpu, t, m, k, &l, sz, &a1, &b, err));
  double slope = a1 - a0;
  if (!(slope > 0))
    HS_FAIL(hs_error_set(err, HS_EINTERNAL, "%s: the model's latency does not depend on %s",
                         t->file, what));
  double L = (fa - a0) / slope;
  if (L < 0) {
    hs_error_warn(err, "%s: fitted latency %.3g us is below what the other links give "
                  "(%.3g us): %s latency_us set to 0", t->file, f->latency_us, a0 * 1e6, what);
    L = 0;
  }
  *lat = L;
  /* bandwidth: b(X) non-increasing; bisection on log X */
  double lo = 1e-3, hi = 1e6, blo, bhi, a;
  *gb = hi;
  HS_CHECK(model_line(gpu, t, m, k, &l, sz, &a, &bhi, err));
  *gb = lo;
  HS_CHECK(model_line(gpu, t, m, k, &l, sz, &a, &blo, err));
  if (fb <= bhi * (1 + 1e-9)) {
    hs_error_warn(err, "%s: busbw %.4g GB/s is at or above what the other links allow: %s GBps "
                  "is not identifiable from this file and keeps its default", t->file,
                  f->busbw_GBps, what);
    if (scope)
      l.nic_GBps = links->has_nic ? links->nic_GBps : NAN;
    else
      l.intra_GBps = links->has_intra ? links->intra_GBps : NAN;
    if (isnan(*gb)) {
      /* no earlier value: take the parser's default by not setting the bandwidth */
      hs_cluster_t c;
      hs_cluster_init(&c);
      hs_nt_links_t none = {.nic_rails = links->nic_rails};
      HS_CHECK(make_cluster(gpu, m, k, &none, &c, err));
      *gb = scope ? c.nodes[0].nic_GBps : c.nodes[0].intra_GBps;
      hs_cluster_destroy(&c);
    }
  } else if (fb >= blo) {
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: busbw %.4g GB/s is below %g GB/s of %s: not a "
                         "measurement of this link", t->file, f->busbw_GBps, lo, what));
  } else {
    double x0 = log(lo), x1 = log(hi);
    for (int it = 0; it < 200 && x1 - x0 > 1e-13; it++) {
      double xm = 0.5 * (x0 + x1), bm;
      *gb = exp(xm);
      HS_CHECK(model_line(gpu, t, m, k, &l, sz, &a, &bm, err));
      if (bm > fb)
        x0 = xm; /* too slow: more bandwidth */
      else
        x1 = xm;
    }
    *gb = exp(0.5 * (x0 + x1));
  }
  l.intra_ranges = links->intra_ranges;
  l.nic_ranges = links->nic_ranges;
  *links = l;
cleanup:
  return st;
}

/* Per-size ranges of the link of `scope` from file t: the sizes, in order,
 * split greedily into the longest runs whose weighted least-squares line
 * holds every size within HS_NT_RANGE_TOL (NCCL's protocol and algorithm
 * choice changes the line, so each run is one choice: the breakpoints come
 * from the data); each run's line then sets the link as the whole file's
 * does (solve_link, with the model evaluated at the run's own first and last
 * size). A range starts halfway (geometric mean) between the last size of
 * the run before and its first; the first starts at 0. One run: no ranges
 * (unless the other link has ranges: then the one range, solved with them).
 * O(rows^2 + ranges x 200 estimates). */
static hs_status_t fit_ranges(const char *gpu, const hs_nccl_tests_t *t, int32_t m, int32_t k, int scope,
                              hs_nt_links_t *links, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_link_ranges_t R;
  memset(&R, 0, sizeof R);
  double *x = hs_calloc((size_t)t->n_rows + 1, sizeof *x), *y = hs_calloc((size_t)t->n_rows + 1, sizeof *y);
  hs_error_t quiet; /* the per-range solve's warnings (flat runs) are not the user's */
  hs_error_init(&quiet);
  quiet.warn_fp = NULL;
  if (!x || !y)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t np = 0;
  for (int32_t r = 0; r < t->n_rows; r++)
    if (t->rows[r].size_bytes > 0 && (np == 0 || t->rows[r].size_bytes > x[np - 1])) {
      x[np] = t->rows[r].size_bytes;
      y[np++] = t->rows[r].time_us[0] * 1e-6;
    }
  double fac = hs_nt_busbw_factor(t->coll, t->nranks);
  hs_nt_links_t base = *links;
  memset(scope ? &base.nic_ranges : &base.intra_ranges, 0, sizeof R);
  R.base_latency_us = scope ? links->nic_latency_us : links->intra_latency_us;
  for (int32_t i = 0; i < np && st == HS_OK;) {
    /* the longest run from i whose line holds (a run of 1 or 2 always does) */
    int32_t e = i + 1;
    hs_line_fit_t lf, ok;
    memset(&ok, 0, sizeof ok);
    ok.a = y[i]; /* one size: a flat line through it */
    bool last = R.n == HS_LINK_RANGES_MAX - 1;
    for (int32_t j = i + 2; j <= np; j++) {
      /* a flat run (latency-bound, or the time dips where the protocol
       * changes): the level with the least largest relative error */
      double lo = INFINITY, hi = 0.0;
      for (int32_t q = i; q < j; q++) {
        lo = fmin(lo, y[q]);
        hi = fmax(hi, y[q]);
      }
      bool line = hs__fit_line(x + i, y + i, j - i, "range", &lf, &quiet) == HS_OK && lf.b > 0 &&
                  (lf.max_rel <= HS_NT_RANGE_TOL || last);
      if (!line && ((hi - lo) / (hi + lo) <= HS_NT_RANGE_TOL || last)) {
        memset(&lf, 0, sizeof lf);
        lf.a = 2.0 * lo * hi / (lo + hi);
        line = true;
      }
      if (!line)
        break;
      ok = lf;
      e = j;
    }
    hs_nt_fit_t f;
    memset(&f, 0, sizeof f);
    f.latency_us = ok.a * 1e6;
    /* a flat run (small sizes: latency only) gets a bandwidth far above the
     * link's, so the run's time is its latency */
    f.busbw_GBps = ok.b > 0 ? fac / ok.b / HS_GB : 1e5;
    double sz[2] = {x[i], e - 1 > i ? x[e - 1] : 2 * x[i]};
    hs_nt_links_t l = base;
    hs_error_init(&quiet);
    quiet.warn_fp = NULL;
    st = solve_link(gpu, t, &f, m, k, scope, sz, true, &l, &quiet);
    if (st != HS_OK) {
      hs_error_set(err, st, "%s: sizes %.0f-%.0f B: %s", t->file, x[i], x[e - 1], quiet.msg);
      break;
    }
    R.min_bytes[R.n] = R.n == 0 ? 0.0 : sqrt(x[i - 1] * x[i]);
    R.GBps[R.n] = scope ? l.nic_GBps : l.intra_GBps;
    R.latency_us[R.n] = scope ? l.nic_latency_us : l.intra_latency_us;
    R.n++;
    i = e;
  }
  /* one range is kept where the other link has ranges: the line solved
   * with them, which the single line (solved without) is not */
  bool other = (scope ? links->intra_ranges.n : links->nic_ranges.n) > 0;
  if (st == HS_OK)
    *(scope ? &links->nic_ranges : &links->intra_ranges) = R.n > 1 || other ? R : (hs_link_ranges_t){0};
cleanup:
  free(x);
  free(y);
  return st;
}

static int cmp_dbl(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Every fact the files' headers do not say and no flag gave, in one
 * message ("a.txt: the GPU (...), how the ranks sit on nodes (...); b.txt:
 * ..."), so that one rerun with the flags it names goes through. O(files). */
static hs_status_t missing_facts(const hs_nccl_tests_t *files, int32_t n, const hs_nt_opts_t *o,
                                 const hs_gpu_catalog_t *cat, hs_error_t *err)
{
  char msg[1024] = "", facts[512];
  size_t k = 0;
  int32_t n_bad = 0;
  for (int32_t i = 0; i < n; i++) {
    size_t nf = hs__nt_missing_facts(&files[i], o, false, facts, sizeof facts);
    /* a device name the catalog cannot place is a missing GPU too */
    char name[HS_NAME_MAX];
    hs_error_t e2;
    hs_error_init(&e2);
    if (files[i].gpu_name[0] && !o->gpu_given &&
        map_gpu(cat, files[i].gpu_name, files[i].file, name, sizeof name, &e2) != HS_OK) {
      const char *why = e2.msg;
      size_t fl = strlen(files[i].file);
      if (strncmp(why, files[i].file, fl) == 0 && why[fl] == ':' && why[fl + 1] == ' ')
        why += fl + 2;
      size_t l = strlen(facts);
      snprintf(facts + l, sizeof facts - l, "%sthe GPU (%.400s)", nf ? ", " : "", why);
      nf++;
    }
    if (nf == 0)
      continue;
    if (k < sizeof msg)
      k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s: %s", n_bad ? "; " : "",
                            files[i].file, facts);
    n_bad++;
  }
  if (n_bad == 0)
    return HS_OK;
  return hs_error_set(err, HS_EINVAL, "the header%s of %d file%s do%s not say: %s",
                      n_bad == 1 ? "" : "s", n_bad, n_bad == 1 ? "" : "s", n_bad == 1 ? "es" : "",
                      msg);
}

hs_status_t hs_nt_import(const char *const *paths, int32_t n, const hs_nt_opts_t *o,
                         const char *gpu, hs_nt_import_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_gpu_catalog_t cat;
  double *x = NULL, *t = NULL, *sz = NULL;
  int32_t *shape = NULL;
  hs_gpu_catalog_init(&cat);
  hs_nt_import_init(out);
  if (n < 1)
    return hs_error_set(err, HS_EINVAL, "import nccl-tests: no file given");
  out->files = hs_calloc((size_t)n, sizeof *out->files);
  out->fits = hs_calloc((size_t)n, sizeof *out->fits);
  shape = hs_calloc(2 * (size_t)n, sizeof *shape);
  if (!out->files || !out->fits || !shape)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  hs_nt_opts_t oo = *o;
  oo.gpu_given = gpu != NULL;
  for (int32_t i = 0; i < n; i++) {
    HS_CHECK(hs_nccl_tests_load(paths[i], &oo, &out->files[i], err));
    out->n_files = i + 1;
  }
  HS_CHECK(hs_gpu_catalog_load(NULL, &cat, err));
  HS_CHECK(missing_facts(out->files, n, &oo, &cat, err));
  hs_nt_links_t *L = &out->links;
  L->nic_rails = o->nic_rails > 1 ? o->nic_rails : 1;
  if (gpu) {
    const hs_gpu_t *g = hs_gpu_catalog_find(&cat, gpu);
    if (!g)
      HS_FAIL(hs_error_set(err, HS_ENOTFOUND, "--gpu: unknown GPU \"%s\" (hetsim list gpus)", gpu));
    hs_strlcpy(L->gpu, g->name, sizeof L->gpu);
  }
  for (int32_t i = 0; i < n; i++) {
    const hs_nccl_tests_t *f = &out->files[i];
    if (!gpu) {
      char name[HS_NAME_MAX];
      if (!f->gpu_name[0])
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: no device lines in the header; give --gpu NAME",
                             f->file));
      HS_CHECK(map_gpu(&cat, f->gpu_name, f->file, name, sizeof name, err));
      if (L->gpu[0] && strcmp(L->gpu, name) != 0)
        HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: GPU %s, but %s measured %s: import one GPU type "
                             "at a time", f->file, name, out->files[0].file, L->gpu));
      hs_strlcpy(L->gpu, name, sizeof L->gpu);
    }
    HS_CHECK(group_shape(f, &shape[2 * i], &shape[2 * i + 1], err));
  }
  /* fits */
  int32_t max_rows = 0;
  for (int32_t i = 0; i < n; i++)
    max_rows = HS_MAX(max_rows, out->files[i].n_rows);
  x = hs_calloc((size_t)max_rows, sizeof *x);
  t = hs_calloc((size_t)max_rows, sizeof *t);
  sz = hs_calloc((size_t)max_rows, sizeof *sz);
  if (!x || !t || !sz)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  for (int32_t i = 0; i < n; i++) {
    const hs_nccl_tests_t *f = &out->files[i];
    hs_nt_fit_t *fit = &out->fits[i];
    int32_t np = 0;
    for (int32_t r = 0; r < f->n_rows; r++)
      if (f->rows[r].size_bytes > 0) {
        x[np] = f->rows[r].size_bytes;
        t[np] = f->rows[r].time_us[0] * 1e-6;
        np++;
      }
    char what[160];
    snprintf(what, sizeof what, "%s (%s)", f->file, hs_nt_coll_name(f->coll));
    hs_line_fit_t lf;
    HS_CHECK(hs__fit_line(x, t, np, what, &lf, err));
    if (!(lf.b > 0))
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: time does not grow with size (slope %g s/B): "
                           "no bandwidth to fit", f->file, lf.b));
    fit->latency_us = lf.a * 1e6;
    fit->busbw_GBps = hs_nt_busbw_factor(f->coll, f->nranks) / lf.b / HS_GB;
    fit->r2 = lf.r2;
    fit->median_rel_err = lf.med_rel;
    fit->max_rel_err = lf.max_rel;
    fit->n_points = np;
  }
  /* links: single-node files first (intra), then multi-node (nic) */
  for (int scope = 0; scope < 2; scope++) {
    int32_t pick = -1;
    for (int32_t i = 0; i < n; i++) {
      bool multi = shape[2 * i] > 1;
      if (multi != (scope == 1))
        continue;
      if (pick < 0 || (out->files[i].coll == HS_NT_ALL_REDUCE &&
                       out->files[pick].coll != HS_NT_ALL_REDUCE))
        pick = i;
    }
    if (pick < 0)
      continue;
    static const double whole[2] = {1e6, 1e9};
    HS_CHECK(solve_link(L->gpu, &out->files[pick], &out->fits[pick], shape[2 * pick],
                        shape[2 * pick + 1], scope, whole, false, L, err));
    out->fits[pick].sets = scope ? "nic" : "intra_node";
    HS_CHECK(fit_ranges(L->gpu, &out->files[pick], shape[2 * pick], shape[2 * pick + 1], scope, L, err));
  }
  /* predictions with the final links */
  for (int32_t i = 0; i < n; i++) {
    const hs_nccl_tests_t *f = &out->files[i];
    hs_nt_fit_t *fit = &out->fits[i];
    fit->pred_time_us = hs_calloc((size_t)f->n_rows + 1, sizeof *fit->pred_time_us);
    fit->pred_busbw_GBps = hs_calloc((size_t)f->n_rows + 1, sizeof *fit->pred_busbw_GBps);
    if (!fit->pred_time_us || !fit->pred_busbw_GBps)
      HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    for (int32_t r = 0; r < f->n_rows; r++)
      sz[r] = f->rows[r].size_bytes;
    hs_cluster_t c;
    hs_cluster_init(&c);
    st = make_cluster(L->gpu, shape[2 * i], shape[2 * i + 1], L, &c, err);
    if (st == HS_OK)
      st = estimate(&c, f, shape[2 * i + 1], sz, f->n_rows, t, err);
    hs_cluster_destroy(&c);
    if (st != HS_OK)
      goto cleanup;
    double fac = hs_nt_busbw_factor(f->coll, f->nranks);
    for (int32_t r = 0; r < f->n_rows; r++) {
      fit->pred_time_us[r] = t[r] * 1e6;
      fit->pred_busbw_GBps[r] = t[r] > 0 ? sz[r] / t[r] / HS_GB * fac : 0.0;
    }
  }
cleanup:
  free(x);
  free(t);
  free(sz);
  free(shape);
  hs_gpu_catalog_destroy(&cat);
  if (st != HS_OK)
    hs_nt_import_destroy(out);
  return st;
}

int32_t hs_nt_links_apply(const hs_nt_links_t *links, hs_cluster_t *c)
{
  int32_t n = 0;
  for (size_t i = 0; i < c->n_nodes; i++) {
    if (strcmp(c->gpus.gpus[c->nodes[i].gpu].name, links->gpu) != 0)
      continue;
    if (links->has_intra) {
      c->nodes[i].intra_GBps = links->intra_GBps;
      c->nodes[i].intra_latency_us = links->intra_latency_us;
    }
    if (links->has_nic) {
      c->nodes[i].nic_GBps = links->nic_GBps;
      c->nodes[i].nic_latency_us = links->nic_latency_us;
      c->nodes[i].nic_rails = (int16_t)links->nic_rails; /* >= 1: hs_nt_import sets it */
    }
    n++;
  }
  return n;
}

void hs_nt_import_print(const hs_nt_import_t *im, FILE *out)
{
  const hs_nt_links_t *L = &im->links;
  for (int32_t i = 0; i < im->n_files; i++) {
    const hs_nccl_tests_t *f = &im->files[i];
    const hs_nt_fit_t *fit = &im->fits[i];
    fprintf(out, "%s: %s_perf, %d ranks", f->file, hs_nt_coll_name(f->coll), f->nranks);
    if (f->n_nodes > 0)
      fprintf(out, " on %d node%s", f->n_nodes, f->n_nodes > 1 ? "s" : "");
    fprintf(out, ", %s%s%s", f->gpu_name[0] ? f->gpu_name : "", f->gpu_name[0] ? " = " : "",
            L->gpu);
    if (f->algo != HS_NT_ALGO_DEFAULT)
      fprintf(out, ", NCCL_ALGO %s (fitted as %s)", hs_nt_algo_name(f->algo),
              f->algo == HS_NT_ALGO_TREE ? (f->n_nodes > 1 ? "node_tree" : "tree")
                                         : f->algo == HS_NT_ALGO_NVLS
                                               ? (f->n_nodes > 1 ? "nvls_tree" : "nvls")
                                               : (f->n_nodes > 1 ? "node_ring" : "ring"));
    fprintf(out, "\n");
    fprintf(out, "  fit (out-of-place, %d sizes): latency %.3g us, busbw %.4g GB/s, R2 %.4f, "
            "median |err| %.1f%%, max %.1f%%%s%s\n", fit->n_points, fit->latency_us,
            fit->busbw_GBps, fit->r2, 100 * fit->median_rel_err, 100 * fit->max_rel_err,
            fit->sets ? "; sets " : "", fit->sets ? fit->sets : "");
    fprintf(out, "  %12s %12s %12s %14s %14s %8s\n", "size (B)", "time (us)", "busbw (GB/s)",
            "pred time (us)", "pred busbw", "error");
    double *errs = hs_calloc((size_t)f->n_rows + 1, sizeof *errs);
    int32_t ne = 0;
    for (int32_t r = 0; r < f->n_rows; r++) {
      const hs_nt_row_t *row = &f->rows[r];
      char e[16] = "-";
      if (row->size_bytes > 0 && fit->pred_time_us[r] > 0) {
        double er = (fit->pred_time_us[r] - row->time_us[0]) / row->time_us[0];
        snprintf(e, sizeof e, "%+.1f%%", 100 * er);
        if (errs)
          errs[ne++] = fabs(er);
      }
      fprintf(out, "  %12.0f %12.6g %12.2f %14.6g %14.2f %8s\n", row->size_bytes, row->time_us[0],
              row->busbw_GBps[0], fit->pred_time_us[r], fit->pred_busbw_GBps[r], e);
    }
    if (errs && ne) {
      qsort(errs, (size_t)ne, sizeof *errs, cmp_dbl);
      fprintf(out, "  simulator against measured time: median |error| %.1f%%, max %.1f%%\n",
              100 * ((ne % 2) ? errs[ne / 2] : 0.5 * (errs[ne / 2 - 1] + errs[ne / 2])),
              100 * errs[ne - 1]);
    }
    free(errs);
  }
  fprintf(out, "links of %s:", L->gpu);
  if (L->has_intra)
    fprintf(out, " intra_node %.4g GB/s, %.3g us;", L->intra_GBps, L->intra_latency_us);
  if (L->has_nic)
    fprintf(out, " nic %.4g GB/s, %.3g us;", L->nic_GBps, L->nic_latency_us);
  fprintf(out, " (hetsim simulate --profile uses them)\n");
  for (int q = 0; q < 2; q++) {
    const hs_link_ranges_t *r = q ? &L->nic_ranges : &L->intra_ranges;
    if (r->n < 1)
      continue;
    fprintf(out, "%s per size range (one line each, where NCCL's choice changes):\n",
            q ? "nic" : "intra_node");
    fprintf(out, "  %14s %14s %12s %12s\n", "from (B)", "below (B)", "GBps", "latency_us");
    for (int32_t i = 0; i < r->n; i++) {
      char below[32] = "-";
      if (i + 1 < r->n)
        snprintf(below, sizeof below, "%.0f", r->min_bytes[i + 1]);
      fprintf(out, "  %14.0f %14s %12.4g %12.4g\n", r->min_bytes[i], below, r->GBps[i], r->latency_us[i]);
    }
  }
}
