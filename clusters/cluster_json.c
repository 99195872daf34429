/*
 * cluster_json.c - reads cluster files (DESIGN.md "Cluster file") into an
 * hs_cluster_t and writes the `show cluster --json` object.
 *
 * Reading is two passes. The first walks the JSON and checks every field,
 * keeping one small record per node group; device totals are summed in
 * int64 after each count is range-checked, so a file asking for a billion
 * GPUs fails with HS_ELIMIT naming the field before anything is sized by it.
 * The second pass allocates the site, node, device and link arrays exactly
 * once and fills them. Every error is one line naming file, field path and
 * value; unknown fields are warnings.
 *
 * Defaults (docs/clusters.md): intra_node.GBps = the GPU's NVLink per
 * direction when it reaches every GPU of the node, else its PCIe;
 * intra_node.latency_us 1; nic 25 GB/s, 5 us; fabric non-blocking, 2 us;
 * name = file name without ".json"; a node group is spot when its site is
 * listed under "spot" unless the group says "spot": false.
 */
#include "clusters_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_INTRA_LATENCY_US 1.0
#define DEFAULT_NIC_GBPS 25.0
#define DEFAULT_NIC_LATENCY_US 5.0
#define DEFAULT_FABRIC_LATENCY_US 2.0
#define MAX_PREEMPTIONS_PER_HOUR 3600.0

typedef struct group {
  int32_t site, gpu, gpus_per_node;
  int64_t count;
  double intra_GBps, intra_latency_us, nic_GBps, nic_latency_us;
  int16_t intra_link, nic_link; /* 1 + index into named_links; 0: raw */
  int16_t nic_rails;
  int8_t pcie_path; /* HS_PCIE_*: intra_node.pcie; 0 none */
  int spot; /* -1: not said, follow the site */
} group_t;

/* The interconnect catalog, read the first time a port names one, and the
 * cluster whose named_links collect the names used. */
typedef struct link_ctx {
  hs_link_catalog_t cat;
  bool loaded;
  hs_cluster_t *c;
} link_ctx_t;

/* "uncalibrated_gpus" is what `show cluster --json` reports; read back, it
 * is ignored (the catalog decides) */
static const char *const top_known[] = {"name", "description", "source", "sites", "links",
                                        "spot", "gpus", "uncalibrated_gpus", NULL};
static const char *const site_known[] = {"name", "nodes", "fabric", NULL};
static const char *const group_known[] = {"count", "gpu", "gpus_per_node", "intra_node", "nic",
                                          "spot", NULL};
static const char *const port_known[] = {"GBps", "latency_us", "rails", "pcie", NULL};
static const char *const pcie_known[] = {"p2p", "switch", "numa_sockets", NULL};
static const char *const named_port_known[] = {"interconnect", NULL};
static const char *const link_known[] = {"between", "GBps", "latency_us", NULL};

static hs_status_t read_bw(const hs_jreader_t *r, const cJSON *o, const char *path, const char *key,
                           bool required, double def, double *out)
{
  hs_status_t st = hs_json_number(r, o, path, key, required, def, HS_JNUM_POSITIVE, HS_BW_MAX_GBPS, out);
  if (st == HS_OK && *out < HS_BW_MIN_GBPS)
    st = hs_error_set(r->err, HS_ELIMIT, "%s: %s%s%s: must be at least %g GB/s, got %.17g", r->file,
                      path, *path ? "." : "", key, HS_BW_MIN_GBPS, *out);
  return st;
}

static hs_status_t read_latency(const hs_jreader_t *r, const cJSON *o, const char *path,
                                const char *key, bool required, double def, double *out)
{
  return hs_json_number(r, o, path, key, required, def, HS_JNUM_NONNEG, HS_LATENCY_MAX_US, out);
}

/* `p` at `ppath` names an interconnect of clusters/links.json: its numbers,
 * and the 1-based index of its entry in the cluster's named_links. */
static hs_status_t read_named_port(const hs_jreader_t *r, const cJSON *p, const char *ppath,
                                   hs_link_scope_t scope, link_ctx_t *lc, double *GBps,
                                   double *latency_us, int16_t *link, int16_t *rails)
{
  hs_status_t st = HS_OK;
  char name[HS_NAME_MAX];
  hs_json_warn_unknown(r, p, ppath, named_port_known);
  HS_CHECK(hs_json_string(r, p, ppath, "interconnect", true, NULL, name, sizeof name));
  if (cJSON_GetObjectItemCaseSensitive(p, "GBps") || cJSON_GetObjectItemCaseSensitive(p, "latency_us"))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: give \"interconnect\" or GBps/latency_us, not both",
                         r->file, ppath));
  if (!lc->loaded) {
    HS_CHECK(hs_link_catalog_load(NULL, &lc->cat, r->err));
    lc->loaded = true;
  }
  const hs_interconnect_t *l = hs_link_catalog_find(&lc->cat, name);
  if (!l) {
    char known[512] = "";
    for (size_t i = 0; i < lc->cat.n; i++)
      if (lc->cat.links[i].scope == scope && strlen(known) + strlen(lc->cat.links[i].name) + 3 < sizeof known)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", known[0] ? ", " : "",
                 lc->cat.links[i].name);
    HS_FAIL(hs_error_set(r->err, HS_ENOTFOUND, "%s: %s.interconnect: unknown interconnect \"%s\" "
                         "(clusters/links.json has: %s)", r->file, ppath, name, known));
  }
  if (l->scope != scope)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.interconnect: interconnect \"%s\" has scope %s, not %s",
                         r->file, ppath, name, hs_link_scope_name(l->scope), hs_link_scope_name(scope)));
  *GBps = l->GBps;
  *latency_us = l->latency_us;
  *rails = (int16_t)l->rails;
  hs_cluster_t *c = lc->c;
  int32_t k = 0;
  while (k < c->n_named_links && strcmp(c->named_links[k].name, name) != 0)
    k++;
  if (k == c->n_named_links) {
    if (k == HS_CLUSTER_MAX_NAMED_LINKS)
      HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: %s.interconnect: at most %d different interconnects "
                           "in one cluster, got \"%s\" as one more", r->file, ppath,
                           HS_CLUSTER_MAX_NAMED_LINKS, name));
    hs_link_ref_t *ref = &c->named_links[k];
    hs_strlcpy(ref->name, l->name, sizeof ref->name);
    ref->GBps = l->GBps;
    ref->latency_us = l->latency_us;
    ref->calibrated = l->calibrated;
    ref->nvls = l->nvls;
    ref->nvls_GBps = l->nvls_GBps;
    ref->nvls_latency_us = l->nvls_latency_us;
    c->n_named_links = k + 1;
  }
  *link = (int16_t)(k + 1);
cleanup:
  return st;
}

/* Optional {GBps, latency_us[, rails]} or {interconnect} object `key` of
 * `o`; rails (NICs per node) only on the nic port, whose caller passes
 * `rails` (NULL for intra_node). */
static hs_status_t read_port(const hs_jreader_t *r, const cJSON *o, const char *path, const char *key,
                             double def_GBps, double def_latency_us, link_ctx_t *lc, double *GBps,
                             double *latency_us, int16_t *link, int16_t *rails)
{
  hs_status_t st = HS_OK;
  const cJSON *p = NULL;
  char ppath[256];
  bool nic = strcmp(key, "nic") == 0;
  int16_t one = 1;
  if (!rails)
    rails = &one;
  *GBps = def_GBps;
  *latency_us = def_latency_us;
  *link = 0;
  *rails = 1;
  HS_CHECK(hs_json_object(r, o, path, key, false, &p));
  if (!p)
    return HS_OK;
  hs_json_path(ppath, sizeof ppath, path, key, 0);
  if (cJSON_GetObjectItemCaseSensitive(p, "interconnect"))
    return read_named_port(r, p, ppath, nic ? HS_LINK_SCOPE_NIC : HS_LINK_SCOPE_INTRA_NODE, lc, GBps,
                           latency_us, link, rails);
  hs_json_warn_unknown(r, p, ppath, port_known);
  HS_CHECK(read_bw(r, p, ppath, "GBps", false, def_GBps, GBps));
  HS_CHECK(read_latency(r, p, ppath, "latency_us", false, def_latency_us, latency_us));
  int64_t k = 1;
  HS_CHECK(hs_json_int(r, p, ppath, "rails", false, 1, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &k));
  if (k > 1 && !nic)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.rails: only on the nic port (NICs per node), got %lld",
                         r->file, ppath, (long long)k));
  *rails = (int16_t)k;
cleanup:
  return st;
}

/* A PCIe node's GPU-GPU path (intra_node "pcie": {"p2p", "switch",
 * "numa_sockets"}), as NCCL classifies it (docs/network.md "PCIe nodes"):
 * two sockets -> SYS (the ring crosses QPI/UPI; NCCL's default P2P level,
 * PXB, stages it through host memory); P2P off, or GPUs on the CPU's root
 * ports ("switch": "none") -> PHB (host memory, SHM); else the switch
 * (PIX: one, PXB: several). Per class, the default per-GPU bandwidth is a
 * fraction of the GPU's pcie_GBps (16 GB/s for Gen3 x16) and the default
 * latency_us the extra per ring step on top of NCCL's PCI hardware latency,
 * both from measured Gen3 all-reduce busbw at >= 128 MB
 * (docs/fidelity-sources.md sections 2.2 and 3.1):
 *   PIX 12.2/16: 2x 1080 Ti / Titan X Pascal on one PLX switch, DeepBench
 *       (baidu-research/DeepBench@da81ba78, results/train, 2018-05) 12.21-12.24 GB/s;
 *   PXB 8.7/16: 8 of them across two PLX switches, one root, DeepBench 8.71-8.80;
 *   PHB 4.0/16: 2x RTX 2080 Ti, P2P not supported, nccl-tests 4.00
 *       (Anthony-Hoo/Anthony-Hoo.github.io@37e805e8, 2025-08-14;
 *       tests/data/import/nccl_all_reduce_2x2080ti_pcie_p2p_off.txt); latency
 *       1.6 us per step: its 8 B-4 KiB median 11.79 us minus NCCL's ring LL
 *       latency for 2 ranks, 6.6 + 2 x 1.0 us, over 2 steps;
 *   SYS 5.9/16: dual-socket P100 / M40 boxes, DeepBench 5.76-6.17 (no
 *       small-message data: the PHB latency is assumed). */
static const struct { const char *name; int8_t path; double frac, latency_us; } pcie_class[] = {
    {"PIX", HS_PCIE_PIX, 12.2 / 16.0, 0.0},
    {"PXB", HS_PCIE_PXB, 8.7 / 16.0, 0.0},
    {"PHB", HS_PCIE_PHB, 4.0 / 16.0, 1.6},
    {"SYS", HS_PCIE_SYS, 5.9 / 16.0, 1.6},
};

static hs_status_t read_pcie(const hs_jreader_t *r, const cJSON *g, const char *path, const hs_gpu_t *gp,
                             group_t *out)
{
  hs_status_t st = HS_OK;
  const cJSON *port = cJSON_GetObjectItemCaseSensitive(g, "intra_node"), *p = NULL;
  char ppath[256], sw[16] = "PIX";
  if (!cJSON_IsObject(port))
    return HS_OK;
  hs_json_path(ppath, sizeof ppath, path, "intra_node", 0);
  HS_CHECK(hs_json_object(r, port, ppath, "pcie", false, &p));
  if (!p)
    return HS_OK;
  if (out->intra_link)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: give \"interconnect\" or \"pcie\", not both",
                         r->file, ppath));
  char ipath[256];
  hs_json_path(ipath, sizeof ipath, ppath, "pcie", 0);
  memcpy(ppath, ipath, sizeof ppath);
  hs_json_warn_unknown(r, p, ppath, pcie_known);
  bool p2p = true;
  int64_t sockets = 1;
  HS_CHECK(hs_json_bool(r, p, ppath, "p2p", false, true, &p2p));
  HS_CHECK(hs_json_string(r, p, ppath, "switch", false, "PIX", sw, sizeof sw));
  HS_CHECK(hs_json_int(r, p, ppath, "numa_sockets", false, 1, 1, 2, &sockets));
  if (strcmp(sw, "PIX") && strcmp(sw, "PXB") && strcmp(sw, "none"))
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.switch: \"%s\", need \"PIX\" (one PCIe switch), "
                         "\"PXB\" (several) or \"none\" (CPU root ports)", r->file, ppath, sw));
  const char *cls = sockets > 1 ? "SYS" : (!p2p || !strcmp(sw, "none")) ? "PHB" : sw;
  size_t k = 0;
  while (strcmp(pcie_class[k].name, cls) != 0)
    k++;
  out->pcie_path = pcie_class[k].path;
  if (!cJSON_GetObjectItemCaseSensitive(port, "GBps"))
    out->intra_GBps = gp->pcie_GBps * pcie_class[k].frac;
  if (!cJSON_GetObjectItemCaseSensitive(port, "latency_us"))
    out->intra_latency_us = pcie_class[k].latency_us;
cleanup:
  return st;
}

static int32_t site_index(const hs_site_t *sites, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(sites[i].name, name) == 0)
      return (int32_t)i;
  return -1;
}

static hs_status_t read_group(const hs_jreader_t *r, const cJSON *g, const char *path,
                              const hs_gpu_catalog_t *cat, int32_t site, int64_t *total, link_ctx_t *lc,
                              group_t *out)
{
  hs_status_t st = HS_OK;
  int64_t gpn = 0;
  char gpu[HS_NAME_MAX + 32];
  memset(out, 0, sizeof(*out));
  out->site = site;
  HS_CHECK(hs_json_expect_object(r, g, path));
  hs_json_warn_unknown(r, g, path, group_known);
  HS_CHECK(hs_json_int(r, g, path, "count", true, 0, 1, HS_CLUSTER_MAX_DEVICES, &out->count));
  HS_CHECK(hs_json_int(r, g, path, "gpus_per_node", true, 0, 1, HS_CLUSTER_MAX_GPUS_PER_NODE, &gpn));
  out->gpus_per_node = (int32_t)gpn;
  /* count <= 2^20 and gpn <= 64: the product and the running total fit. */
  *total += out->count * gpn;
  if (*total > HS_CLUSTER_MAX_DEVICES)
    HS_FAIL(hs_error_set(r->err, HS_ELIMIT,
                         "%s: %s.count: the cluster would have %lld GPUs, above the limit of %d, got %lld",
                         r->file, path, (long long)*total, HS_CLUSTER_MAX_DEVICES, (long long)out->count));
  HS_CHECK(hs_json_string(r, g, path, "gpu", true, NULL, gpu, sizeof gpu));
  const hs_gpu_t *gp = hs_gpu_catalog_find(cat, gpu);
  if (!gp) {
    char hint[256];
    hs__gpu_suggest(cat, gpu, hint, sizeof hint);
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.gpu: unknown GPU \"%s\"%s", r->file, path, gpu, hint));
  }
  out->gpu = (int32_t)(gp - cat->gpus);
  HS_CHECK(read_port(r, g, path, "intra_node", hs_gpu_intra_default_GBps(gp), DEFAULT_INTRA_LATENCY_US,
                     lc, &out->intra_GBps, &out->intra_latency_us, &out->intra_link, NULL));
  HS_CHECK(read_pcie(r, g, path, gp, out));
  HS_CHECK(read_port(r, g, path, "nic", DEFAULT_NIC_GBPS, DEFAULT_NIC_LATENCY_US, lc, &out->nic_GBps,
                     &out->nic_latency_us, &out->nic_link, &out->nic_rails));
  out->spot = -1;
  if (cJSON_GetObjectItemCaseSensitive(g, "spot")) {
    bool b = false;
    HS_CHECK(hs_json_bool(r, g, path, "spot", false, false, &b));
    out->spot = b;
  }
cleanup:
  return st;
}

static hs_status_t read_site(const hs_jreader_t *r, const cJSON *s, const char *path,
                             const hs_gpu_catalog_t *cat, hs_site_t *sites, int32_t i, int64_t *total,
                             link_ctx_t *lc, group_t **groups, size_t *n_groups, size_t *cap_groups)
{
  hs_status_t st = HS_OK;
  const cJSON *nodes = NULL, *fab = NULL;
  char npath[256], gpath[256], fpath[256];
  int n = 0;
  hs_site_t *site = &sites[i];
  HS_CHECK(hs_json_expect_object(r, s, path));
  hs_json_warn_unknown(r, s, path, site_known);
  HS_CHECK(hs_json_string(r, s, path, "name", true, NULL, site->name, sizeof site->name));
  if (!site->name[0])
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.name: must not be empty", r->file, path));
  int32_t dup = site_index(sites, (size_t)i, site->name);
  if (dup >= 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.name: duplicate site name \"%s\" (also sites[%d])",
                         r->file, path, site->name, dup));
  HS_CHECK(hs_json_object(r, s, path, "fabric", false, &fab));
  site->fabric_GBps = 0.0;
  site->fabric_latency_us = DEFAULT_FABRIC_LATENCY_US;
  if (fab) {
    hs_json_path(fpath, sizeof fpath, path, "fabric", 0);
    hs_json_warn_unknown(r, fab, fpath, port_known);
    if (cJSON_GetObjectItemCaseSensitive(fab, "GBps"))
      HS_CHECK(read_bw(r, fab, fpath, "GBps", true, 0.0, &site->fabric_GBps));
    HS_CHECK(read_latency(r, fab, fpath, "latency_us", false, DEFAULT_FABRIC_LATENCY_US,
                          &site->fabric_latency_us));
  }
  HS_CHECK(hs_json_array(r, s, path, "nodes", true, &nodes, &n));
  if (n == 0)
    HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s.nodes: must list at least one node group, got []",
                         r->file, path));
  int j = 0;
  for (const cJSON *g = nodes->child; g; g = g->next, j++) {
    void *data = *groups;
    if (hs_reserve(&data, cap_groups, *n_groups + 1, sizeof(group_t)) != HS_OK)
      HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file));
    *groups = data;
    hs_json_path(npath, sizeof npath, path, "nodes", 0);
    hs_json_path(gpath, sizeof gpath, npath, NULL, j);
    HS_CHECK(read_group(r, g, gpath, cat, i, total, lc, &(*groups)[*n_groups]));
    (*n_groups)++;
  }
cleanup:
  return st;
}

static hs_status_t read_links(const hs_jreader_t *r, const cJSON *root, hs_cluster_t *c)
{
  hs_status_t st = HS_OK;
  const cJSON *arr = NULL;
  int n = 0;
  char lpath[64], bpath[96];
  unsigned char *seen = NULL; /* seen[a * S + b], a < b: a link joins a and b */
  size_t S = c->n_sites;
  HS_CHECK(hs_json_array(r, root, "", "links", false, &arr, &n));
  if (!arr || n == 0)
    return HS_OK;
  if (n > HS_CLUSTER_MAX_LINKS)
    HS_FAIL(hs_error_set(r->err, HS_ELIMIT, "%s: links: at most %d links, got %d", r->file,
                         HS_CLUSTER_MAX_LINKS, n));
  c->xlinks = hs_calloc((size_t)n, sizeof(hs_xlink_t));
  seen = hs_calloc(S * S, 1);
  if (!c->xlinks || !seen)
    HS_FAIL(hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file));
  int k = 0;
  for (const cJSON *l = arr->child; l; l = l->next, k++) {
    const cJSON *btw = NULL;
    int nb = 0;
    int32_t ends[2] = {-1, -1};
    hs_xlink_t *x = &c->xlinks[k];
    hs_json_path(lpath, sizeof lpath, "links", NULL, k);
    HS_CHECK(hs_json_expect_object(r, l, lpath));
    hs_json_warn_unknown(r, l, lpath, link_known);
    HS_CHECK(hs_json_array(r, l, lpath, "between", true, &btw, &nb));
    hs_json_path(bpath, sizeof bpath, lpath, "between", 0);
    if (nb != 2)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: must name exactly two sites, got %d", r->file,
                           bpath, nb));
    for (int e = 0; e < 2; e++) {
      const cJSON *v = cJSON_GetArrayItem(btw, e);
      if (!cJSON_IsString(v))
        HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s[%d]: must be a site name (a string)", r->file,
                             bpath, e));
      ends[e] = site_index(c->sites, S, v->valuestring);
      if (ends[e] < 0)
        HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s[%d]: unknown site \"%.64s\"", r->file, bpath, e,
                             v->valuestring));
    }
    if (ends[0] == ends[1])
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: a link from site \"%s\" to itself", r->file,
                           bpath, c->sites[ends[0]].name));
    size_t lo = (size_t)HS_MIN(ends[0], ends[1]), hi = (size_t)HS_MAX(ends[0], ends[1]);
    if (seen[lo * S + hi])
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: a second link between \"%s\" and \"%s\"", r->file,
                           bpath, c->sites[ends[0]].name, c->sites[ends[1]].name));
    seen[lo * S + hi] = 1;
    x->site_a = ends[0];
    x->site_b = ends[1];
    HS_CHECK(read_bw(r, l, lpath, "GBps", true, 0.0, &x->GBps));
    HS_CHECK(read_latency(r, l, lpath, "latency_us", true, 0.0, &x->latency_us));
    c->n_xlinks = (size_t)k + 1;
  }
cleanup:
  free(seen);
  return st;
}

static hs_status_t read_spot(const hs_jreader_t *r, const cJSON *root, hs_cluster_t *c, bool *listed)
{
  hs_status_t st = HS_OK;
  const cJSON *spot = NULL;
  char spath[128];
  static const char *const known[] = {"preemptions_per_hour", NULL};
  HS_CHECK(hs_json_object(r, root, "", "spot", false, &spot));
  if (!spot)
    return HS_OK;
  for (const cJSON *m = spot->child; m; m = m->next) {
    snprintf(spath, sizeof spath, "spot.%.64s", m->string);
    int32_t s = site_index(c->sites, c->n_sites, m->string);
    if (s < 0)
      HS_FAIL(hs_error_set(r->err, HS_EINVAL, "%s: %s: unknown site \"%.64s\"", r->file, spath, m->string));
    HS_CHECK(hs_json_expect_object(r, m, spath));
    hs_json_warn_unknown(r, m, spath, known);
    HS_CHECK(hs_json_number(r, m, spath, "preemptions_per_hour", true, 0.0, HS_JNUM_NONNEG,
                            MAX_PREEMPTIONS_PER_HOUR, &c->sites[s].preemptions_per_hour));
    listed[s] = true;
  }
cleanup:
  return st;
}

static int32_t uf_find(int32_t *parent, int32_t x)
{
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/* Every site must reach site 0 through links. O(S + L). */
static hs_status_t check_connected(const hs_jreader_t *r, const hs_cluster_t *c)
{
  if (c->n_sites <= 1)
    return HS_OK;
  int32_t *parent = hs_calloc(c->n_sites, sizeof(int32_t));
  if (!parent)
    return hs_error_set(r->err, HS_ENOMEM, "%s: out of memory", r->file);
  for (size_t i = 0; i < c->n_sites; i++)
    parent[i] = (int32_t)i;
  for (size_t k = 0; k < c->n_xlinks; k++)
    parent[uf_find(parent, c->xlinks[k].site_a)] = uf_find(parent, c->xlinks[k].site_b);
  hs_status_t st = HS_OK;
  int32_t root0 = uf_find(parent, 0);
  for (size_t i = 1; i < c->n_sites; i++) {
    if (uf_find(parent, (int32_t)i) != root0) {
      st = hs_error_set(r->err, HS_EINVAL,
                        "%s: links: site \"%s\" (sites[%zu]) is unreachable from site \"%s\": add a link",
                        r->file, c->sites[i].name, i, c->sites[0].name);
      break;
    }
  }
  free(parent);
  return st;
}

/* Second pass: sizes are known and within limits. */
static hs_status_t build(const hs_jreader_t *r, hs_cluster_t *c, const group_t *groups, size_t n_groups,
                         int64_t total, const bool *listed)
{
  size_t n_nodes = 0;
  for (size_t g = 0; g < n_groups; g++)
    n_nodes += (size_t)groups[g].count;
  c->nodes = hs_calloc(n_nodes, sizeof(hs_node_t));
  c->devices = hs_calloc((size_t)total, sizeof(hs_device_t));
  if (!c->nodes || !c->devices)
    return hs_error_set(r->err, HS_ENOMEM, "%s: out of memory for %lld devices", r->file, (long long)total);
  int32_t node = 0, dev = 0;
  for (size_t g = 0; g < n_groups; g++) {
    const group_t *gr = &groups[g];
    hs_site_t *s = &c->sites[gr->site];
    if (s->n_nodes == 0)
      s->first_node = node;
    for (int64_t k = 0; k < gr->count; k++, node++) {
      hs_node_t *nd = &c->nodes[node];
      nd->site = gr->site;
      nd->gpu = gr->gpu;
      nd->first_device = dev;
      nd->n_devices = gr->gpus_per_node;
      nd->intra_GBps = gr->intra_GBps;
      nd->intra_latency_us = gr->intra_latency_us;
      nd->nic_GBps = gr->nic_GBps;
      nd->nic_latency_us = gr->nic_latency_us;
      nd->intra_link = gr->intra_link;
      nd->nic_link = gr->nic_link;
      nd->nic_rails = gr->nic_rails;
      nd->pcie_path = gr->pcie_path;
      nd->spot = gr->spot >= 0 ? gr->spot != 0 : listed[gr->site];
      nd->group = (int32_t)g;
      s->n_nodes++;
      for (int32_t l = 0; l < gr->gpus_per_node; l++, dev++) {
        c->devices[dev].gpu = gr->gpu;
        c->devices[dev].node = node;
        c->devices[dev].site = gr->site;
        c->devices[dev].local_rank = l;
      }
    }
  }
  c->n_nodes = n_nodes;
  c->n_devices = (size_t)total;
  return HS_OK;
}

static void default_name(const char *file, char *out, size_t n)
{
  hs_strlcpy(out, hs_basename(file), n);
  size_t len = strlen(out);
  if (len > 5 && strcmp(out + len - 5, ".json") == 0)
    out[len - 5] = '\0';
}

static hs_status_t parse_cluster(const cJSON *root, const char *file, hs_cluster_t *c, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  hs_jreader_t rd = {file, err};
  const hs_jreader_t *r = &rd;
  const cJSON *sites = NULL, *gpus = NULL;
  group_t *groups = NULL;
  size_t n_groups = 0, cap_groups = 0;
  bool *listed = NULL;
  int64_t total = 0;
  int ns = 0;
  char name[HS_NAME_MAX], spath[64];
  link_ctx_t lc = {.c = c};
  hs_link_catalog_init(&lc.cat);

  HS_CHECK(hs_json_expect_object(r, root, ""));
  hs_json_warn_unknown(r, root, "", top_known);
  default_name(file, name, sizeof name);
  HS_CHECK(hs_json_string(r, root, "", "name", false, name, c->name, sizeof c->name));
  HS_CHECK(hs_json_string(r, root, "", "description", false, "", c->description, sizeof c->description));
  HS_CHECK(hs_json_string(r, root, "", "source", false, "", c->source, sizeof c->source));

  HS_CHECK(hs_gpu_catalog_load(NULL, &c->gpus, err));
  HS_CHECK(hs_json_array(r, root, "", "gpus", false, &gpus, NULL));
  if (gpus)
    HS_CHECK(hs__gpu_catalog_read(r, gpus, "gpus", &c->gpus));

  HS_CHECK(hs_json_array(r, root, "", "sites", true, &sites, &ns));
  if (ns == 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: sites: must list at least one site, got []", file));
  if (ns > HS_CLUSTER_MAX_SITES)
    HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s: sites: at most %d sites, got %d", file, HS_CLUSTER_MAX_SITES, ns));
  c->sites = hs_calloc((size_t)ns, sizeof(hs_site_t));
  listed = hs_calloc((size_t)ns, sizeof(bool));
  if (!c->sites || !listed)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "%s: out of memory", file));
  int i = 0;
  for (const cJSON *s = sites->child; s; s = s->next, i++) {
    hs_json_path(spath, sizeof spath, "sites", NULL, i);
    HS_CHECK(read_site(r, s, spath, &c->gpus, c->sites, i, &total, &lc, &groups, &n_groups, &cap_groups));
    c->n_sites = (size_t)i + 1;
  }
  HS_CHECK(read_links(r, root, c));
  HS_CHECK(read_spot(r, root, c, listed));
  HS_CHECK(check_connected(r, c));
  HS_CHECK(build(r, c, groups, n_groups, total, listed));
cleanup:
  free(groups);
  free(listed);
  hs_link_catalog_destroy(&lc.cat);
  return st;
}

hs_status_t hs_cluster_parse(const char *text, const char *file, hs_cluster_t *out, hs_error_t *err)
{
  cJSON *root = NULL;
  hs_status_t st = HS_OK;
  if (!file)
    file = "(cluster)";
  hs_cluster_destroy(out);
  HS_CHECK(hs_json_parse(text, file, &root, err));
  HS_CHECK(parse_cluster(root, file, out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs_cluster_destroy(out);
  return st;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct json_ctx {
  cJSON *nodes;
  bool ok;
} json_ctx_t;

/* rails > 1 only for a nic port (written so that it reads back). */
static cJSON *port_json(double GBps, double latency_us, int32_t rails)
{
  cJSON *p = cJSON_CreateObject();
  if (p && (!cJSON_AddNumberToObject(p, "GBps", GBps) ||
            !cJSON_AddNumberToObject(p, "latency_us", latency_us) ||
            (rails > 1 && !cJSON_AddNumberToObject(p, "rails", rails)))) {
    cJSON_Delete(p);
    return NULL;
  }
  return p;
}

static void group_json(const hs_cluster_t *c, const hs_node_t *n, int32_t count, void *arg)
{
  json_ctx_t *ctx = arg;
  cJSON *g = cJSON_CreateObject();
  cJSON *intra = port_json(n->intra_GBps, n->intra_latency_us, 1);
  if (intra && n->pcie_path) {
    /* the class reads back; GBps and latency_us are written as they are */
    cJSON *p = cJSON_AddObjectToObject(intra, "pcie");
    bool w = p && cJSON_AddBoolToObject(p, "p2p", n->pcie_path <= HS_PCIE_PXB) &&
             cJSON_AddStringToObject(p, "switch", n->pcie_path == HS_PCIE_PXB ? "PXB" : "PIX") &&
             cJSON_AddNumberToObject(p, "numa_sockets", n->pcie_path == HS_PCIE_SYS ? 2 : 1);
    if (!w) {
      cJSON_Delete(intra);
      intra = NULL;
    }
  }
  cJSON *nic = port_json(n->nic_GBps, n->nic_latency_us, n->nic_rails);
  bool ok = g && intra && nic && cJSON_AddNumberToObject(g, "count", count) &&
            cJSON_AddStringToObject(g, "gpu", c->gpus.gpus[n->gpu].name) &&
            cJSON_AddNumberToObject(g, "gpus_per_node", n->n_devices);
  if (ok) {
    ok = hs_json_add(g, "intra_node", intra) != NULL;
    ok = hs_json_add(g, "nic", nic) != NULL && ok;
    intra = nic = NULL;
    ok = ok && cJSON_AddBoolToObject(g, "spot", n->spot) != NULL;
  }
  cJSON_Delete(intra);
  cJSON_Delete(nic);
  if (ok)
    cJSON_AddItemToArray(ctx->nodes, g);
  else
    cJSON_Delete(g);
  ctx->ok &= ok;
}

static bool site_json(const hs_cluster_t *c, int32_t s, cJSON *arr)
{
  const hs_site_t *site = &c->sites[s];
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return false;
  cJSON_AddItemToArray(arr, o);
  cJSON *fab = cJSON_CreateObject();
  if (!fab || !cJSON_AddStringToObject(o, "name", site->name)) {
    cJSON_Delete(fab);
    return false;
  }
  if (!(fab = hs_json_add(o, "fabric", fab)))
    return false;
  if (site->fabric_GBps > 0.0 && !cJSON_AddNumberToObject(fab, "GBps", site->fabric_GBps))
    return false;
  if (!cJSON_AddNumberToObject(fab, "latency_us", site->fabric_latency_us))
    return false;
  json_ctx_t ctx = {cJSON_AddArrayToObject(o, "nodes"), true};
  if (!ctx.nodes)
    return false;
  hs__cluster_for_each_group(c, s, group_json, &ctx);
  /* Distinct GPU names of the site, in first-seen order. */
  cJSON *names = cJSON_AddArrayToObject(o, "gpus");
  if (!names || !ctx.ok)
    return false;
  int32_t n_dev = 0;
  for (int32_t k = 0; k < site->n_nodes; k++) {
    const hs_node_t *n = &c->nodes[site->first_node + k];
    n_dev += n->n_devices;
    bool seen = false;
    for (int32_t q = 0; q < k && !seen; q++)
      seen = c->nodes[site->first_node + q].gpu == n->gpu;
    if (!seen) {
      cJSON *str = cJSON_CreateString(c->gpus.gpus[n->gpu].name);
      if (!str)
        return false;
      cJSON_AddItemToArray(names, str);
    }
  }
  return cJSON_AddNumberToObject(o, "n_devices", n_dev) != NULL;
}

/* Appends a string to an array; false when out of memory. */
static bool add_array_string(cJSON *arr, const char *s)
{
  cJSON *v = cJSON_CreateString(s);
  if (v && cJSON_AddItemToArray(arr, v))
    return true;
  cJSON_Delete(v);
  return false;
}

cJSON *hs_cluster_to_json(const hs_cluster_t *c)
{
  hs_json_oom_clear();
  if (!c)
    return NULL;
  hs_cluster_totals_t tot;
  hs_cluster_totals(c, HS_DTYPE_BF16, &tot);
  cJSON *j = cJSON_CreateObject();
  bool ok = j && cJSON_AddStringToObject(j, "name", c->name) &&
            cJSON_AddStringToObject(j, "description", c->description) &&
            cJSON_AddStringToObject(j, "source", c->source) &&
            cJSON_AddNumberToObject(j, "n_devices", (double)c->n_devices) &&
            cJSON_AddNumberToObject(j, "n_nodes", (double)c->n_nodes) &&
            cJSON_AddNumberToObject(j, "n_sites", (double)c->n_sites) &&
            cJSON_AddNumberToObject(j, "n_gpu_types", tot.n_gpu_types) &&
            cJSON_AddNumberToObject(j, "peak_tflops_bf16", tot.peak_flops / 1e12) &&
            cJSON_AddNumberToObject(j, "mem_bytes", tot.mem_bytes) &&
            cJSON_AddNumberToObject(j, "usd_per_hour", tot.usd_per_hour) &&
            cJSON_AddNumberToObject(j, "n_unpriced_devices", tot.n_unpriced_devices);
  cJSON *sites = ok ? cJSON_AddArrayToObject(j, "sites") : NULL;
  ok = ok && sites;
  for (size_t s = 0; ok && s < c->n_sites; s++)
    ok = site_json(c, (int32_t)s, sites);
  cJSON *links = ok ? cJSON_AddArrayToObject(j, "links") : NULL;
  ok = ok && links;
  for (size_t k = 0; ok && k < c->n_xlinks; k++) {
    const hs_xlink_t *x = &c->xlinks[k];
    const char *ends[2] = {c->sites[x->site_a].name, c->sites[x->site_b].name};
    cJSON *l = cJSON_CreateObject();
    cJSON *btw = cJSON_CreateStringArray(ends, 2);
    ok = l && btw;
    if (ok) {
      ok = hs_json_add(l, "between", btw) != NULL;
      btw = NULL;
      ok = ok && cJSON_AddNumberToObject(l, "GBps", x->GBps) && cJSON_AddNumberToObject(l, "latency_us", x->latency_us);
    }
    cJSON_Delete(btw);
    if (l)
      cJSON_AddItemToArray(links, l);
  }
  cJSON *unc = ok ? cJSON_AddArrayToObject(j, "uncalibrated_gpus") : NULL;
  ok = ok && unc;
  for (size_t g = 0; ok && g < c->gpus.n; g++)
    if (!c->gpus.gpus[g].calibrated && hs_cluster_gpu_used(c, (int32_t)g))
      ok = add_array_string(unc, c->gpus.gpus[g].name);
  cJSON *spot = ok ? cJSON_AddObjectToObject(j, "spot") : NULL;
  ok = ok && spot;
  for (size_t s = 0; ok && s < c->n_sites; s++) {
    if (c->sites[s].preemptions_per_hour <= 0.0)
      continue;
    cJSON *o = cJSON_AddObjectToObject(spot, c->sites[s].name);
    ok = o && cJSON_AddNumberToObject(o, "preemptions_per_hour", c->sites[s].preemptions_per_hour);
  }
  if (!ok) {
    cJSON_Delete(j);
    return NULL;
  }
  return hs_json_finish(j);
}
