/*
 * hs_clusters.h - the hardware description: GPU catalog (datasheet figures,
 * compute-model efficiency parameters, prices), clusters of sites, node groups
 * and links, and the network topology (an igraph graph) with path queries.
 *
 * Units: bandwidths in GB/s per direction (1 GB = 1e9 bytes), latencies in
 * microseconds in files and nanoseconds in hs_link_t, memory in bytes,
 * throughput in FLOP/s, prices in USD per GPU-hour.
 *
 * Topology model. Each GPU has a full-duplex port to its node's switch
 * (NVSwitch / PCIe switch: `intra_node`). Each node has a full-duplex NIC to
 * its site's fabric (`nic`, aggregate per node). A site fabric with a finite
 * `GBps` is one shared bisection resource crossed by every inter-node flow
 * inside the site; without `GBps` it is non-blocking. Sites are joined by
 * `links` (full duplex). Every direction of every port is one hs_link_t, the
 * unit of bandwidth sharing in the simulator.
 *
 * Latency split (each latency charged half on each side of what it joins):
 * GPU_UP = GPU_DOWN = intra_latency_us / 2; NIC_UP = NIC_DOWN =
 * (nic_latency_us + the site's fabric_latency_us) / 2; FABRIC = 0; XSITE = the
 * link's latency. So a path inside a node costs intra_latency_us, between two
 * nodes of one group intra + nic + fabric, and across sites half of each
 * end's (intra + nic + fabric) plus the route's link latencies.
 * docs/clusters.md has the file format, defaults, limits and sources.
 *
 * Ownership: hs_gpu_catalog_t and hs_cluster_t are caller-allocated
 * (_init/_destroy, destroy accepts NULL and zeroed structs; a failed load
 * leaves them empty); hs_topology_t is library-allocated (_new/_free) and
 * copies what it needs, so the cluster may be destroyed first.
 */
#ifndef HS_CLUSTERS_H
#define HS_CLUSTERS_H

#include "hs_common.h"

#define HS_NAME_MAX 64

/* Limits every loader enforces before allocating (docs/clusters.md). */
#define HS_CLUSTER_MAX_DEVICES 1048576   /* GPUs in one cluster */
#define HS_CLUSTER_MAX_GPUS_PER_NODE 64
#define HS_CLUSTER_MAX_SITES 1024
#define HS_CLUSTER_MAX_LINKS 65536      /* inter-site links */
#define HS_GPU_CATALOG_MAX 4096         /* GPU entries in one catalog */
#define HS_BW_MIN_GBPS 1e-6             /* every bandwidth lies in [min, max] GB/s */
#define HS_BW_MAX_GBPS 1e6
#define HS_LATENCY_MAX_US 1e7           /* every latency lies in [0, max] us */
#define HS_EFF_MIN 1e-3                 /* gemm_eff_max and mem_eff lie in [min, 1]: below
                                         * 0.1% of peak the entry is wrong, and a subnormal
                                         * efficiency would make kernel times infinite */

/* One GPU model. Datasheet figures are dense (no sparsity). The efficiency
 * parameters are defaults documented as such until a calibrated profile
 * replaces them (validate/, hetsim calibrate). */
typedef struct hs_gpu {
  char name[HS_NAME_MAX];
  char vendor[16];
  double mem_bytes;            /* HBM capacity, bytes */
  double mem_bw_GBps;          /* HBM bandwidth */
  double peak_flops[HS_DTYPE__COUNT]; /* dense peak by dtype; 0 = unsupported (falls back) */
  double nvlink_GBps;          /* per direction; 0 = none */
  double pcie_GBps;            /* per direction, x16 */
  double tdp_w;
  /* Compute model: achieved GEMM rate = peak * gemm_eff_max * f / (f + gemm_half_flops)
   * where f is the FLOPs of one kernel; memory-bound ops move bytes at
   * mem_bw * mem_eff; every kernel pays launch_us. */
  double gemm_eff_max;
  double gemm_half_flops;
  double mem_eff;
  double launch_us;
  /* Per-output-element cost of a GEMM in steps of its reduction (tile
   * prologue and epilogue): t = (f + gemm_half_flops + 2 gemm_out_k out) /
   * (peak gemm_eff_max); 0 = FLOP-only model (sim/compute.c). */
  double gemm_out_k;
  /* Fixed cost of a GEMM on the memory side of the roofline beyond the
   * launch, in us: t_mem = gemm_mem_latency_us + bytes / (mem_bw mem_eff),
   * fitted on DeepBench's skinny cuBLAS GEMMs (issue #33); 0 = none
   * (sim/compute.c). */
  double gemm_mem_latency_us;
  /* fp8 GEMM curve (issue #13): gemm_eff_max_fp8 > 0 replaces gemm_eff_max
   * and gemm_half_flops (by gemm_half_flops_fp8) for fp8 GEMMs on a GPU
   * with an fp8 peak; 0 = fp8 GEMMs use the curve above (sim/compute.c). */
  double gemm_eff_max_fp8, gemm_half_flops_fp8;
  /* Sustained GEMM ceiling (issue #13): the fraction of the bf16/fp16 peak
   * a GEMM holds at the power limit once the clock has settled (a published
   * maximum-sustainable-matmul figure); a bf16/fp16 GEMM of f FLOPs takes at
   * least f / (peak * gemm_sustained_eff). 0 = no ceiling (sim/compute.c). */
  double gemm_sustained_eff;
  /* Fused (FlashAttention-style) causal attention kernel rate, fitted on
   * published kernel benchmarks (clusters/calibration/<GPU>.json "attn"
   * points): rate(s) = bf16 peak * eff_max * s / (s + half_seq) at
   * sequence length s, forward and backward apart. eff_max 0 = uncalibrated:
   * the attention core is timed as a GEMM (sim/compute.c). */
  double attn_fwd_eff_max, attn_fwd_half_seq;
  double attn_bwd_eff_max, attn_bwd_half_seq;
  bool calibrated;             /* profile came from measurements */
  /* Prices, USD per GPU-hour; 0 = unknown. */
  double price_ondemand_usd_h;
  double price_spot_usd_h;
  char price_source[160];
  /* NVLink (or XGMI) only joins pairs of cards through a bridge (PCIe
   * products): the default intra-node bandwidth is then PCIe, not NVLink. */
  bool nvlink_bridge_only;
  /* Compute slowdown while a collective runs beside it on the GPU: compute
   * runs at 1/(1 + overlap_slowdown) of its speed (sim/contention.h), in
   * [0, 1); 0 = no published figure, ideal overlap (docs/clusters.md). */
  double overlap_slowdown;
} hs_gpu_t;

typedef struct hs_gpu_catalog {
  hs_gpu_t *gpus;   /* owned */
  size_t n;
} hs_gpu_catalog_t;

void hs_gpu_catalog_init(hs_gpu_catalog_t *c);
void hs_gpu_catalog_destroy(hs_gpu_catalog_t *c);
/* Loads clusters/gpus.json under hs_data_dir() (path NULL) or `path`. */
hs_status_t hs_gpu_catalog_load(const char *path, hs_gpu_catalog_t *out, hs_error_t *err);
/* Parses a JSON array of GPU entries (or an object whose "gpus" is that
 * array, the form of gpus.json) into `cat`, which must be initialised; entries
 * whose name exists replace it field by field (used for inline overrides in
 * cluster files), new names are appended. On failure `cat` may hold the
 * entries read before the bad one; the caller destroys it. O(n * m). */
hs_status_t hs_gpu_catalog_parse(const char *text, const char *file, hs_gpu_catalog_t *cat,
                                 hs_error_t *err);
/* Exact name match; NULL when absent. O(n). */
const hs_gpu_t *hs_gpu_catalog_find(const hs_gpu_catalog_t *c, const char *name);
/* Peak FLOP/s of `g` for `dt`, falling back fp8 -> bf16 -> fp16 -> fp32 when a
 * dtype is unsupported (V100 has no bf16: its fp16 rate is used). */
double hs_gpu_peak_flops(const hs_gpu_t *g, hs_dtype_t dt);
/* Default GPU <-> node-switch bandwidth (GB/s per direction) of a node of
 * these GPUs when the cluster file gives no intra_node.GBps: NVLink when it
 * reaches every GPU of the node (nvlink_GBps > 0 and not bridge-only), else
 * PCIe. O(1). */
double hs_gpu_intra_default_GBps(const hs_gpu_t *g);

typedef struct hs_device {
  int32_t gpu;         /* index into cluster->gpus */
  int32_t node;
  int32_t site;
  int32_t local_rank;  /* index within the node */
} hs_device_t;

typedef struct hs_node {
  int32_t site;
  int32_t gpu;
  int32_t first_device;
  int32_t n_devices;
  double intra_GBps;      /* GPU <-> node switch, per GPU, per direction */
  double intra_latency_us;/* GPU to GPU inside the node */
  double nic_GBps;        /* node <-> site fabric, per node, per direction */
  double nic_latency_us;  /* node to node inside the site (both NIC hops) */
  bool spot;
  int16_t intra_link;     /* 1 + index into the cluster's named_links when the file
                             named a catalog interconnect; 0: raw numbers */
  int16_t nic_link;
  int16_t nic_rails;      /* NICs of the node's NIC port, one per GPU rail (>= 1; the port's
                             nic_GBps is their sum): NCCL's rings across nodes leave each
                             node through a different rail per channel (coll_node_ring.c) */
  int32_t group;          /* the cluster file's `nodes` entry it comes from (all sites, in file
                             order): the unit a user adds, buys or leaves idle */
  int8_t pcie_path;       /* HS_PCIE_*: GPU-GPU path of a PCIe node (intra_node "pcie"); 0 none */
  int8_t intra_ranges, nic_ranges; /* 1 + index into the cluster's link_ranges (a profile's
                             per-size "ranges"); 0: none */
} hs_node_t;

/* NCCL's path types between two GPUs of a PCIe node (NVIDIA/nccl
 * src/include/graph.h, 2.30.7): PIX one PCIe switch, PXB several switches
 * without the host bridge (both peer-to-peer), PHB through the CPU's host
 * bridge (no P2P: NCCL stages through host memory, SHM), SYS across CPU
 * sockets (QPI/UPI, also staged). docs/network.md "PCIe nodes". */
enum { HS_PCIE_NONE = 0, HS_PCIE_PIX = 4, HS_PCIE_PXB = 5, HS_PCIE_PHB = 8, HS_PCIE_SYS = 9 };

/* Per-size link figures fitted by `hetsim import nccl-tests` (one line per
 * range of message sizes where NCCL's protocol changes): range i covers
 * collective sizes [min_bytes[i], min_bytes[i+1]) (the last: up), with
 * GBps and latency_us in the cluster-file units of the port it replaces. */
#define HS_LINK_RANGES_MAX 12
typedef struct hs_link_ranges {
  int32_t n;
  double min_bytes[HS_LINK_RANGES_MAX];
  double GBps[HS_LINK_RANGES_MAX];
  double latency_us[HS_LINK_RANGES_MAX];
  double base_latency_us; /* the port's own latency_us (what a range's latency replaces) */
} hs_link_ranges_t;
/* The range of `bytes` (0 when below the first). O(n). */
int32_t hs_link_ranges_find(const hs_link_ranges_t *r, double bytes);
struct hs_jreader;
struct cJSON;
/* Reads the "ranges" array `arr` at `path` ([{"min_bytes", "max_bytes",
 * "GBps", "latency_us"}, ...], as `hetsim import nccl-tests` writes it)
 * into out (base_latency_us as given). Refused, naming the file, the field
 * and the value: none or more than HS_LINK_RANGES_MAX ranges, a
 * first range not starting at 0, a negative or non-increasing min_bytes, a
 * max_bytes that leaves a gap or overlaps the next range (it must equal the
 * next min_bytes), a max_bytes on the last range (it covers every larger
 * size), GBps not positive, latency_us negative. O(n). */
hs_status_t hs_link_ranges_read(const struct hs_jreader *r, const struct cJSON *arr, const char *path,
                                double base_latency_us, hs_link_ranges_t *out);

typedef struct hs_site {
  char name[HS_NAME_MAX];
  double fabric_GBps;       /* 0 = non-blocking */
  double fabric_latency_us;
  double preemptions_per_hour; /* per node, spot sites; 0 = on-demand */
  int32_t first_node;
  int32_t n_nodes;
} hs_site_t;

typedef struct hs_xlink {
  int32_t site_a, site_b;
  double GBps;            /* per direction */
  double latency_us;
} hs_xlink_t;

/* An interconnect of clusters/links.json that a cluster file names
 * ("intra_node": {"interconnect": "NVLink3-NVSwitch"}), as the cluster keeps
 * it: a node uses it while its numbers are still these (a profile that
 * replaces them makes the port raw again). */
#define HS_CLUSTER_MAX_NAMED_LINKS 16
typedef struct hs_link_ref {
  char name[HS_NAME_MAX];
  double GBps, latency_us;
  bool calibrated;
  bool nvls;            /* the interconnect's "nvls" (NVLink SHARP in the switch) */
  double nvls_GBps, nvls_latency_us; /* the interconnect's, 0 = not given */
} hs_link_ref_t;

typedef struct hs_cluster {
  char name[HS_NAME_MAX];
  hs_gpu_catalog_t gpus;  /* catalog used (with inline overrides); devices index it */
  hs_site_t *sites;  size_t n_sites;
  hs_node_t *nodes;  size_t n_nodes;
  hs_device_t *devices; size_t n_devices;
  hs_xlink_t *xlinks; size_t n_xlinks;
  char description[512]; /* from the file; "" when absent */
  char source[512];
  hs_link_ref_t named_links[HS_CLUSTER_MAX_NAMED_LINKS];
  int32_t n_named_links;
  hs_link_ranges_t link_ranges[HS_CLUSTER_MAX_NAMED_LINKS]; /* hs_node_t.intra/nic_ranges */
  int32_t n_link_ranges;
} hs_cluster_t;

void hs_cluster_init(hs_cluster_t *c);
void hs_cluster_destroy(hs_cluster_t *c);
/* `spec`: a path when it contains '/' or ends in ".json", else a catalog name
 * (hs_data_dir()/clusters/catalog/<name>.json). `out` must be initialised;
 * what it held is destroyed, and it is left empty on failure. Messages name
 * the file by its base name. O(file size + devices). */
hs_status_t hs_cluster_load(const char *spec, hs_cluster_t *out, hs_error_t *err);
/* Parses cluster-file text; `file` names it in messages. Loads the GPU
 * catalog from hs_data_dir() and applies the file's inline "gpus". Checks
 * every limit before allocating anything sized by the file. */
hs_status_t hs_cluster_parse(const char *text, const char *file, hs_cluster_t *out,
                             hs_error_t *err);
/* Catalog names (file names without .json), sorted by strcmp; the caller
 * frees them with hs_cluster_catalog_free. */
hs_status_t hs_cluster_catalog_list(char ***names, size_t *n, hs_error_t *err);
void hs_cluster_catalog_free(char **names, size_t n);
static inline const hs_gpu_t *hs_cluster_gpu(const hs_cluster_t *c, int32_t device)
{
  return &c->gpus.gpus[c->devices[device].gpu];
}

/* Aggregate figures for `show cluster` and cost. */
typedef struct hs_cluster_totals {
  double peak_flops;            /* sum over devices at `dtype` */
  double mem_bytes;
  double usd_per_hour;          /* on-demand, or spot for spot nodes when priced */
  int32_t n_gpu_types;
  int32_t n_unpriced_devices;   /* devices whose applicable price is unknown (0) */
} hs_cluster_totals_t;
/* Sums over nodes at `dtype` with the hs_gpu_peak_flops fallback; a spot node
 * is priced at the spot rate when known, else on-demand; unknown prices (0)
 * add nothing and are counted in n_unpriced_devices. O(nodes + gpus * nodes). */
void hs_cluster_totals(const hs_cluster_t *c, hs_dtype_t dtype, hs_cluster_totals_t *out);
/* Text summary for `hetsim show cluster`: sites, node groups (consecutive
 * identical nodes coalesced), links, GPUs, peak bf16 TFLOP/s, memory, $/h. */
void hs_cluster_print(const hs_cluster_t *c, FILE *out);
/* Whether any device of `c` is of catalog entry `gpu`. O(devices). */
bool hs_cluster_gpu_used(const hs_cluster_t *c, int32_t gpu);
/* GPU types of `c` whose profile is not calibrated (catalog defaults, no
 * published points and no applied profile). O(types x devices). */
int32_t hs_cluster_n_uncalibrated(const hs_cluster_t *c);
/* One line: "<indent>device profiles: H100-SXM5-80GB calibrated;
 * A100-SXM4-80GB uncalibrated (...)", for show cluster, simulate, compare. */
void hs_cluster_print_calibration(const hs_cluster_t *c, const char *indent, FILE *out);
/* The interconnects of the used ports, one entry per distinct port kind and
 * name: "intra_node NVLink3-NVSwitch calibrated; nic 25 GB/s uncalibrated"
 * into `buf`; `uncal` (may be NULL) gets the uncalibrated ones comma-separated
 * ("nic 25 GB/s", "intra_node NVLink4-NVSwitch"). Returns how many are
 * uncalibrated. A port is calibrated only when it names a calibrated catalog
 * interconnect and still has its numbers. O(nodes). */
int32_t hs_cluster_describe_links(const hs_cluster_t *c, char *buf, size_t n, char *uncal, size_t n_uncal);
/* Whether node `node`'s intra-node (nic = false) or NIC port is a named
 * interconnect still at its catalog numbers; its hs_link_ref_t or NULL. */
const hs_link_ref_t *hs_cluster_node_link(const hs_cluster_t *c, int32_t node, bool nic);

/* ---- interconnect catalog (clusters/links.json, docs/network.md) ---------- */

#define HS_LINK_CATALOG_MAX 256
#define HS_LINK_FIT_FILES_MAX 8
typedef enum { HS_LINK_SCOPE_INTRA_NODE, HS_LINK_SCOPE_NIC } hs_link_scope_t;
const char *hs_link_scope_name(hs_link_scope_t s); /* "intra_node", "nic" */

/* One interconnect: what the simulator uses (GBps per direction, per GPU for
 * intra_node and per node for nic; latency_us as the cluster-file field), the
 * datasheet figure, and for a calibrated one the nccl-tests files (paths
 * relative to clusters/calibration/) and the GPU catalog name the fit uses. */
typedef struct hs_interconnect {
  char name[HS_NAME_MAX];
  hs_link_scope_t scope;
  double GBps, latency_us;
  double nominal_GBps;
  bool calibrated;                  /* has fit files: GBps/latency_us are their fit */
  bool nvls;                        /* intra_node only: the switch reduces (NVLink SHARP) */
  double nvls_GBps, nvls_latency_us;/* nvls only, 0 = not given: what NCCL's NVLS all-reduce
                                       achieves per GPU port and its fixed cost (coll_nvls.c),
                                       fitted on nvls_fit_file (docs/network.md "NVLS") */
  char nvls_fit_file[128];          /* "" = none; relative to clusters/calibration/ */
  int32_t rails;                    /* nic only: NICs the per-node GBps is the sum of, one per
                                       GPU rail (>= 1, default 1); coll_node_ring.c */
  double nvls_fit_min_bytes;        /* the fit uses the rows of at least this size */
  char system[256];
  char source[1024];
  char date[128];
  char fit_gpu[HS_NAME_MAX];
  char fit_files[HS_LINK_FIT_FILES_MAX][128];
  int32_t n_fit_files;
} hs_interconnect_t;

typedef struct hs_link_catalog {
  hs_interconnect_t *links;         /* owned */
  size_t n;
} hs_link_catalog_t;
void hs_link_catalog_init(hs_link_catalog_t *c);
void hs_link_catalog_destroy(hs_link_catalog_t *c);
/* Reads clusters/links.json (path NULL: under hs_data_dir()). Errors name the
 * file, the field path and the value: unknown scope, a calibrated entry
 * without source or date, bandwidths outside [HS_BW_MIN_GBPS, HS_BW_MAX_GBPS],
 * duplicate names, fit file names with "..". O(file size). */
hs_status_t hs_link_catalog_load(const char *path, hs_link_catalog_t *out, hs_error_t *err);
hs_status_t hs_link_catalog_parse(const char *text, const char *file, hs_link_catalog_t *out,
                                  hs_error_t *err);
const hs_interconnect_t *hs_link_catalog_find(const hs_link_catalog_t *c, const char *name);
/* `show cluster --json`: name, description, source, n_devices, n_nodes,
 * n_sites, n_gpu_types, peak_tflops_bf16, mem_bytes, usd_per_hour,
 * n_unpriced_devices, sites[] {name, fabric, nodes[] (cluster-file groups),
 * gpus[] (names), n_devices}, links[] {between, GBps, latency_us}, spot{}.
 * Its sites/links/spot read back as a cluster file. Caller frees with
 * cJSON_Delete (hs_json_free); NULL when out of memory. */
struct cJSON *hs_cluster_to_json(const hs_cluster_t *c);

/* Reads the fused-attention fields of a GPU entry or profile entry `e` at
 * `path` into g (attn_fwd_eff_max, attn_fwd_half_seq, attn_bwd_eff_max,
 * attn_bwd_half_seq): absent keeps g's values; each eff_max in
 * [HS_EFF_MIN, 1], each half_seq in [0, 1e7], and the four come together
 * (one alone is an error naming the file, the field and the value). */
struct hs_jreader;
hs_status_t hs_gpu_attn_read(const struct hs_jreader *r, const struct cJSON *e, const char *path,
                             hs_gpu_t *g);
/* True when g's fused attention rate is calibrated (attn_*_eff_max > 0). */
bool hs_gpu_attn_calibrated(const hs_gpu_t *g);

/* ---- topology ----------------------------------------------------------- */

typedef enum {
  HS_LINK_GPU_UP,    /* GPU -> node switch */
  HS_LINK_GPU_DOWN,  /* node switch -> GPU */
  HS_LINK_NIC_UP,    /* node -> site fabric */
  HS_LINK_NIC_DOWN,  /* site fabric -> node */
  HS_LINK_FABRIC,    /* site bisection (only when finite) */
  HS_LINK_XSITE,     /* one direction of an inter-site link */
  HS_LINK_RAIL_UP,   /* GPU -> its NIC rail (railed nodes: nic_rails > 1) */
  HS_LINK_RAIL_DOWN  /* NIC rail -> GPU */
} hs_link_kind_t;

const char *hs_link_kind_name(hs_link_kind_t k);

typedef struct hs_link {
  hs_link_kind_t kind;
  int32_t owner;        /* device, node, site or xlink index by kind */
  int32_t dir;          /* XSITE: 0 = a->b, 1 = b->a */
  double GBps;
  double latency_ns;    /* added once per traversal */
  bool nvls;            /* GPU port of an NVLink SHARP switch (catalog "nvls"): NCCL's
                           NVLS / NVLS-Tree algorithms are eligible over it */
  double nvls_GBps;     /* nvls: per-direction rate NCCL's NVLS reaches here; 0 = GBps */
  double nvls_latency_ns; /* nvls: NVLS all-reduce fixed cost; 0 = the path's latency */
  int32_t rails;        /* NIC_UP / NIC_DOWN: the node's nic_rails; RAIL_*: the node's rail
                           links per direction, R = min(nic_rails, GPUs of the node); 0 on
                           other links */
  char label[48];       /* "n3.nic.up", "east->west" for traces */
  const hs_link_ranges_t *ranges; /* per-size figures (the cluster's, which must outlive the
                                     links); NULL: GBps and latency_ns at every size */
  int8_t pcie_path;     /* GPU_UP / GPU_DOWN of a PCIe node: HS_PCIE_*; 0 otherwise */
} hs_link_t;

#define HS_PATH_MAX 64

typedef struct hs_path {
  int32_t links[HS_PATH_MAX];
  int32_t n;
  double bottleneck_GBps; /* min over links; +inf for a device to itself */
  double latency_ns;      /* sum over links */
} hs_path_t;

typedef struct hs_topology hs_topology_t; /* opaque; owns the igraph graph */

/* Builds the links and the igraph graph (vertices: GPUs, node switches, site
 * fabrics; edges: ports and inter-site links, weighted by latency) and the
 * site-to-site routes (igraph Dijkstra on latency). O(V + E + S^2 log S).
 * Unreachable sites are an error naming them. Caller frees with
 * hs_topology_free (NULL ok). */
hs_status_t hs_topology_new(const hs_cluster_t *c, hs_topology_t **out, hs_error_t *err);
void hs_topology_free(hs_topology_t *t);
size_t hs_topology_n_links(const hs_topology_t *t);
const hs_link_t *hs_topology_links(const hs_topology_t *t);
/* The node (cluster node index, the owner of its HS_LINK_NIC_UP link) of a
 * device; -1 for a device out of range. O(1). */
int32_t hs_topology_device_node(const hs_topology_t *t, int32_t device);
/* Path between two GPUs from the structure: GPU port, the sender's NIC rail
 * (railed nodes), NIC, fabric, site route, and back down the same way.
 * O(path length). This is what the simulator uses. */
hs_status_t hs_topology_path(const hs_topology_t *t, int32_t dev_a, int32_t dev_b, hs_path_t *out);
/* The same path found by igraph shortest path on the full graph; used by
 * tests to check hs_topology_path and by `show cluster --path`. O(E log V). */
hs_status_t hs_topology_path_graph(const hs_topology_t *t, int32_t dev_a, int32_t dev_b,
                                   hs_path_t *out);

/* Link ids, O(1). The layout is fixed, so the simulator may also compute ids:
 *   GPU_UP(d)   = 2d            GPU_DOWN(d) = 2d + 1           d < n_devices
 *   NIC_UP(n)   = 2D + 2n       NIC_DOWN(n) = 2D + 2n + 1      D = n_devices
 *   FABRIC(s)   = 2D + 2N + k   k-th site with a finite fabric, N = n_nodes
 *   XSITE(x, dir) = 2D + 2N + F + 2x + dir   F = number of FABRIC links
 *   RAIL_UP(n, r) = Q_n + 2r    RAIL_DOWN(n, r) = Q_n + 2r + 1  r < R_n
 * where Q_n = 2D + 2N + F + 2X + 2 (R_0 + ... + R_{n-1}) over railed nodes
 * (R_n = min(nic_rails, GPUs of node n) when that is > 1, else 0: such a
 * node has no rail links). Device d of node n, local rank j of g GPUs, uses
 * rail j R_n / g; each rail carries nic_GBps / R_n.
 * hs_topology_link_fabric returns -1 for a non-blocking fabric and
 * hs_topology_link_rail_up/down -1 for a device whose node has no rails.
 * Arguments out of range return -1. */
int32_t hs_topology_link_gpu_up(const hs_topology_t *t, int32_t device);
int32_t hs_topology_link_gpu_down(const hs_topology_t *t, int32_t device);
int32_t hs_topology_link_nic_up(const hs_topology_t *t, int32_t node);
int32_t hs_topology_link_nic_down(const hs_topology_t *t, int32_t node);
int32_t hs_topology_link_fabric(const hs_topology_t *t, int32_t site);
int32_t hs_topology_link_xsite(const hs_topology_t *t, int32_t xlink, int32_t dir);
int32_t hs_topology_link_rail_up(const hs_topology_t *t, int32_t device);
int32_t hs_topology_link_rail_down(const hs_topology_t *t, int32_t device);
/* Number of inter-site links on the route from site a to site b (0 when
 * a == b); -1 for bad arguments. O(hops). */
int32_t hs_topology_route_hops(const hs_topology_t *t, int32_t site_a, int32_t site_b);

#endif /* HS_CLUSTERS_H */
