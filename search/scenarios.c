/*
 * scenarios.c - the scenario table (hs_scenarios.h). Settings follow
 * /work/shared/reference/planners.md; where a paper's value is not public the
 * choice is ours and `ours` says which. Invariant: every precision parses
 * (hs_dtype_parse) and every model and cluster is a catalog name
 * (tests/test_scenarios.c).
 */
#include "hs_scenarios.h"

#include <string.h>

const hs_scenario_t hs_scenarios[] = {
    {"hap", "HAP (EuroSys'24): BERT-Base on 2x8 V100 + 6x8 P100, batch 32 per GPU, fp32", "hap-bert-base",
     "hap-v100-p100", 0, 32, "data-parallel,deepspeed,whale,megatron,hap,hapt", "hap",
     "ylxdzsw/hap readme.txt and config.py: global batch 32 x world size, 12 layers, seq 128; "
     "profiler.py and the training script run fp32; baselines DDP (DP-EV, DP-CP) and DeepSpeed 0.9.4",
     "fp32",
     "GPU variants (V100-SXM2-16GB, P100-PCIe-16GB) and the 1.3 GB/s per-node NIC for ~10.4 Gb/s; "
     "data-parallel is DP-EV/DP-CP's closest strategy here; deepspeed is the ZeRO baseline "
     "(search/deepspeed.c, ZeRO 1-3); whale, megatron and hapt are extra"},
    {"hap-vit", "HAP (EuroSys'24): ViT on 2x8 V100 + 6x8 P100, batch 32 per GPU, fp32", "hap-vit",
     "hap-v100-p100", 0, 32, "data-parallel,deepspeed,whale,megatron,hap,hapt", "hap",
     "ylxdzsw/hap config.py (ViT variant); same cluster, batch rule, precision and baselines as hap",
     "fp32", "as hap; ViT sequence 64 per config.py"},
    {"hapt", "HAPT/HARP: GPT-3 2.7B on 4x8 A100 + 4x8 V100 joined by 10 Gb/s", "gpt3-2.7b",
     "hapt-a100-v100-10gbps", 512, 0, "data-parallel,deepspeed,megatron,whale,hapt", "hapt",
     "arXiv 2509.24859 (sub-clusters over a slow link); baselines per a summary: DDP and DeepSpeed",
     NULL,
     "everything but the shape of the cluster: GPU counts, the 10 Gb/s link, model, batch 512 and "
     "precision (bf16, fp16 on the V100s) are ours, the paper's are not public"},
    {"autohet", "AutoHet: Llama-2 13B on 2x8 A100 + 2x8 H800 + 2x8 H20 (three sites)", "llama2-13b",
     "autohet-a100-h800-h20", 384, 0, "deepspeed,megatron,whale,autohet,hapt", "autohet",
     "arXiv 2512.20953: baselines Megatron-LM and Whale; GPU mix per emergentmind", NULL,
     "node counts, links, model, batch 384 and precision (bf16) are ours"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
};

const hs_scenario_t *hs_scenario_find(const char *name)
{
  for (const hs_scenario_t *s = hs_scenarios; name && s->name; s++)
    if (strcmp(s->name, name) == 0)
      return s;
  return NULL;
}

int64_t hs_scenario_global_batch(const hs_scenario_t *s, int64_t n_devices)
{
  return s->global_batch > 0 ? s->global_batch : s->global_batch_per_device * n_devices;
}
