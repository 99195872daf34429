/*
 * link_catalog.c - the interconnect catalog's lookups and what a cluster says
 * about the calibration of its ports (docs/network.md "Calibrated
 * interconnects"). Reading links.json is link_catalog_json.c.
 *
 * Invariant: a node port counts as a named (and possibly calibrated)
 * interconnect only while its GBps and latency are bit-for-bit the ones the
 * cluster recorded for that name; anything that rewrites the numbers (an
 * applied profile, an import) makes the port raw, hence uncalibrated.
 */
#include "clusters_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hs_link_scope_name(hs_link_scope_t s)
{
  return s == HS_LINK_SCOPE_NIC ? "nic" : "intra_node";
}

void hs_link_catalog_init(hs_link_catalog_t *c)
{
  if (c)
    memset(c, 0, sizeof *c);
}

void hs_link_catalog_destroy(hs_link_catalog_t *c)
{
  if (!c)
    return;
  free(c->links);
  memset(c, 0, sizeof *c);
}

const hs_interconnect_t *hs_link_catalog_find(const hs_link_catalog_t *c, const char *name)
{
  for (size_t i = 0; c && name && i < c->n; i++)
    if (strcmp(c->links[i].name, name) == 0)
      return &c->links[i];
  return NULL;
}

const hs_link_ref_t *hs_cluster_node_link(const hs_cluster_t *c, int32_t node, bool nic)
{
  const hs_node_t *nd = &c->nodes[node];
  int32_t k = (nic ? nd->nic_link : nd->intra_link) - 1;
  if (k < 0 || k >= c->n_named_links)
    return NULL;
  const hs_link_ref_t *l = &c->named_links[k];
  double GBps = nic ? nd->nic_GBps : nd->intra_GBps;
  double lat = nic ? nd->nic_latency_us : nd->intra_latency_us;
  return (GBps == l->GBps && lat == l->latency_us) ? l : NULL;
}

/* Appends `item` to buf (with `sep` when not first) unless already there. */
static void add_item(char *buf, size_t n, const char *sep, const char *item)
{
  if (!buf || n == 0)
    return;
  size_t len = strlen(buf);
  /* the same item twice: items are separated by sep, so search for it whole */
  for (const char *p = buf; (p = strstr(p, item)) != NULL; p++) {
    size_t il = strlen(item);
    bool start = p == buf || (p >= buf + strlen(sep) && strncmp(p - strlen(sep), sep, strlen(sep)) == 0);
    bool end = p[il] == '\0' || strncmp(p + il, sep, strlen(sep)) == 0;
    if (start && end)
      return;
  }
  if (len + strlen(sep) + strlen(item) + 1 > n)
    return; /* full: the line is a summary, the first entries are kept */
  snprintf(buf + len, n - len, "%s%s", len ? sep : "", item);
}

int32_t hs_cluster_describe_links(const hs_cluster_t *c, char *buf, size_t n, char *uncal, size_t n_uncal)
{
  int32_t count = 0;
  char local[512];
  if (!uncal || n_uncal == 0) {
    uncal = local;
    n_uncal = sizeof local;
  }
  if (buf && n)
    buf[0] = '\0';
  uncal[0] = '\0';
  bool multi_node_site = false;
  for (size_t s = 0; s < c->n_sites; s++)
    multi_node_site |= c->sites[s].n_nodes > 1;
  for (int pass = 0; pass < 2; pass++) {
    bool nic = pass == 1;
    if (nic && !multi_node_site && c->n_sites < 2)
      break; /* one node: no NIC is crossed */
    for (size_t i = 0; i < c->n_nodes; i++) {
      const hs_node_t *nd = &c->nodes[i];
      if (!nic && nd->n_devices < 2)
        continue;
      const hs_link_ref_t *l = hs_cluster_node_link(c, (int32_t)i, nic);
      char what[HS_NAME_MAX + 32], line[HS_NAME_MAX + 64];
      if (l)
        snprintf(what, sizeof what, "%s %s", nic ? "nic" : "intra_node", l->name);
      else
        snprintf(what, sizeof what, "%s %g GB/s", nic ? "nic" : "intra_node",
                 nic ? nd->nic_GBps : nd->intra_GBps);
      bool cal = l && l->calibrated;
      snprintf(line, sizeof line, "%s %s", what, cal ? "calibrated" : "uncalibrated");
      size_t before = strlen(uncal);
      add_item(buf, n, "; ", line);
      if (!cal) {
        add_item(uncal, n_uncal, ",", what);
        count += strlen(uncal) != before;
      }
    }
  }
  return count;
}

int32_t hs_link_ranges_find(const hs_link_ranges_t *r, double bytes)
{
  int32_t i = 0;
  while (r && i + 1 < r->n && bytes >= r->min_bytes[i + 1])
    i++;
  return i;
}
