/*
 * cluster.c - cluster lifetime, aggregate figures and the text summary of
 * `hetsim show cluster`. Reading and writing files lives elsewhere
 * (cluster_json.c parses, cluster_catalog.c finds files), so this file
 * depends on neither.
 *
 * Representation (hs_clusters.h): sites own contiguous runs of nodes
 * (site.first_node, n_nodes), nodes own contiguous runs of devices
 * (node.first_device, n_devices), in file order; devices index the cluster's
 * own copy of the GPU catalog. The reader (cluster_json.c) establishes these
 * invariants; nothing here changes them.
 */
#include "clusters_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs_cluster_init(hs_cluster_t *c)
{
  if (c)
    memset(c, 0, sizeof(*c));
}

void hs_cluster_destroy(hs_cluster_t *c)
{
  if (!c)
    return;
  hs_gpu_catalog_destroy(&c->gpus);
  free(c->sites);
  free(c->nodes);
  free(c->devices);
  free(c->xlinks);
  memset(c, 0, sizeof(*c));
}

void hs_cluster_totals(const hs_cluster_t *c, hs_dtype_t dtype, hs_cluster_totals_t *out)
{
  memset(out, 0, sizeof(*out));
  if (!c)
    return;
  /* Per node, not per device: a node's devices share GPU and spot flag. */
  for (size_t i = 0; i < c->n_nodes; i++) {
    const hs_node_t *n = &c->nodes[i];
    const hs_gpu_t *g = &c->gpus.gpus[n->gpu];
    double price = n->spot && g->price_spot_usd_h > 0.0 ? g->price_spot_usd_h : g->price_ondemand_usd_h;
    out->peak_flops += n->n_devices * hs_gpu_peak_flops(g, dtype);
    out->mem_bytes += n->n_devices * g->mem_bytes;
    out->usd_per_hour += n->n_devices * price;
    if (price <= 0.0)
      out->n_unpriced_devices += n->n_devices;
  }
  for (size_t k = 0; k < c->gpus.n; k++) {
    for (size_t i = 0; i < c->n_nodes; i++) {
      if (c->nodes[i].gpu == (int32_t)k) {
        out->n_gpu_types++;
        break;
      }
    }
  }
}

void hs__cluster_for_each_group(const hs_cluster_t *c, int32_t site, hs__group_fn fn, void *arg)
{
  const hs_site_t *s = &c->sites[site];
  int32_t end = s->first_node + s->n_nodes;
  for (int32_t i = s->first_node; i < end;) {
    const hs_node_t *a = &c->nodes[i];
    int32_t j = i + 1;
    while (j < end) {
      const hs_node_t *b = &c->nodes[j];
      if (b->gpu != a->gpu || b->n_devices != a->n_devices || b->intra_GBps != a->intra_GBps ||
          b->intra_latency_us != a->intra_latency_us || b->nic_GBps != a->nic_GBps ||
          b->nic_latency_us != a->nic_latency_us || b->spot != a->spot ||
          b->intra_link != a->intra_link || b->nic_link != a->nic_link || b->nic_rails != a->nic_rails)
        break;
      j++;
    }
    fn(c, a, j - i, arg);
    i = j;
  }
}

static void print_group(const hs_cluster_t *c, const hs_node_t *n, int32_t count, void *arg)
{
  FILE *out = arg;
  int32_t i = (int32_t)(n - c->nodes);
  const hs_link_ref_t *li = hs_cluster_node_link(c, i, false), *ln = hs_cluster_node_link(c, i, true);
  char rails[32] = "";
  if (n->nic_rails > 1)
    snprintf(rails, sizeof rails, ", %d rails", n->nic_rails);
  fprintf(out, "    %d x node of %d x %s  (GPU port %g GB/s, %g us%s%s; NIC %g GB/s, %g us%s%s%s)%s\n", count,
          n->n_devices, c->gpus.gpus[n->gpu].name, n->intra_GBps, n->intra_latency_us, li ? " = " : "",
          li ? li->name : "", n->nic_GBps, n->nic_latency_us, rails, ln ? " = " : "", ln ? ln->name : "",
          n->spot ? "  spot" : "");
}

bool hs_cluster_gpu_used(const hs_cluster_t *c, int32_t gpu)
{
  for (size_t i = 0; i < c->n_devices; i++)
    if (c->devices[i].gpu == gpu)
      return true;
  return false;
}

int32_t hs_cluster_n_uncalibrated(const hs_cluster_t *c)
{
  int32_t n = 0;
  for (size_t g = 0; g < c->gpus.n; g++)
    n += !c->gpus.gpus[g].calibrated && hs_cluster_gpu_used(c, (int32_t)g);
  return n;
}

void hs_cluster_print_calibration(const hs_cluster_t *c, const char *indent, FILE *out)
{
  fprintf(out, "%sdevice profiles:", indent);
  const char *sep = " ";
  for (size_t g = 0; g < c->gpus.n; g++) {
    if (!hs_cluster_gpu_used(c, (int32_t)g))
      continue;
    fprintf(out, "%s%s %s", sep, c->gpus.gpus[g].name,
            c->gpus.gpus[g].calibrated ? "calibrated" : "uncalibrated");
    sep = "; ";
  }
  if (hs_cluster_n_uncalibrated(c) > 0)
    fprintf(out, " (uncalibrated = datasheet defaults for gemm_eff_max, gemm_half_flops, mem_eff "
            "and launch_us: no published points in clusters/calibration/)");
  /* GPUs with no published compute slowdown under overlapped communication
   * (overlap_slowdown 0): their overlap is simulated as ideal */
  sep = "; overlap contention uncalibrated (ideal overlap, no overlap_slowdown): ";
  for (size_t g = 0; g < c->gpus.n; g++) {
    if (!hs_cluster_gpu_used(c, (int32_t)g) || c->gpus.gpus[g].overlap_slowdown > 0.0)
      continue;
    fprintf(out, "%s%s", sep, c->gpus.gpus[g].name);
    sep = ", ";
  }
  fputc('\n', out);
  char links[512];
  int32_t nu = hs_cluster_describe_links(c, links, sizeof links, NULL, 0);
  if (links[0])
    fprintf(out, "%sinterconnects: %s%s\n", indent, links,
            nu > 0 ? " (uncalibrated = datasheet or file numbers, no nccl-tests fit in clusters/links.json)"
                   : "");
}

void hs_cluster_print(const hs_cluster_t *c, FILE *out)
{
  hs_cluster_totals_t tot;
  char buf[32];
  hs_cluster_totals(c, HS_DTYPE_BF16, &tot);
  fprintf(out, "cluster %s: %zu GPUs on %zu nodes in %zu site%s\n", c->name, c->n_devices, c->n_nodes,
          c->n_sites, c->n_sites == 1 ? "" : "s");
  if (c->description[0])
    fprintf(out, "  %s\n", c->description);
  for (size_t s = 0; s < c->n_sites; s++) {
    const hs_site_t *site = &c->sites[s];
    fprintf(out, "  site %s: fabric ", site->name);
    if (site->fabric_GBps > 0.0)
      fprintf(out, "%g GB/s", site->fabric_GBps);
    else
      fprintf(out, "non-blocking");
    fprintf(out, ", %g us", site->fabric_latency_us);
    if (site->preemptions_per_hour > 0.0)
      fprintf(out, ", %g preemptions per node-hour", site->preemptions_per_hour);
    fputc('\n', out);
    hs__cluster_for_each_group(c, (int32_t)s, print_group, out);
  }
  for (size_t k = 0; k < c->n_xlinks; k++) {
    const hs_xlink_t *x = &c->xlinks[k];
    fprintf(out, "  link %s <-> %s: %g GB/s per direction, %g us\n", c->sites[x->site_a].name,
            c->sites[x->site_b].name, x->GBps, x->latency_us);
  }
  fprintf(out, "  GPUs: %zu (%d type%s)\n", c->n_devices, tot.n_gpu_types, tot.n_gpu_types == 1 ? "" : "s");
  fprintf(out, "  peak: %.1f TFLOP/s bf16 (dense; fp16 where bf16 is unsupported)\n", tot.peak_flops / 1e12);
  fprintf(out, "  memory: %s (%.0f GiB)\n", hs_fmt_bytes(tot.mem_bytes, buf, sizeof buf),
          tot.mem_bytes / HS_GIB);
  fprintf(out, "  cost: $%.2f/h", tot.usd_per_hour);
  if (tot.n_unpriced_devices > 0)
    fprintf(out, " (%d GPU%s without a known price not counted)", tot.n_unpriced_devices,
            tot.n_unpriced_devices == 1 ? "" : "s");
  fputc('\n', out);
  hs_cluster_print_calibration(c, "  ", out);
  if (c->source[0])
    fprintf(out, "  source: %s\n", c->source);
}
