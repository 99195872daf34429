/*
 * scenarios.c - the scenario table (hs_scenarios.h). Settings follow
 * /work/shared/reference/planners.md; where a paper's value is not public the
 * choice is ours and says so in `source`.
 */
#include "hs_scenarios.h"

#include <string.h>

const hs_scenario_t hs_scenarios[] = {
    {"hap", "HAP (EuroSys'24): BERT-Base on 2x8 V100 + 6x8 P100, batch 32 per GPU", "hap-bert-base",
     "hap-v100-p100", 0, 32, "data-parallel,whale,megatron,hap,hapt", "hap",
     "ylxdzsw/hap readme.txt and config.py: global batch 32 x world size, 12 layers, seq 128"},
    {"hap-vit", "HAP (EuroSys'24): ViT on 2x8 V100 + 6x8 P100, batch 32 per GPU", "hap-vit",
     "hap-v100-p100", 0, 32, "data-parallel,whale,megatron,hap,hapt", "hap",
     "ylxdzsw/hap config.py (ViT variant); same cluster and batch rule as hap"},
    {"hapt", "HAPT/HARP: GPT-3 2.7B on 4x8 A100 + 4x8 V100 joined by 10 Gb/s", "gpt3-2.7b",
     "hapt-a100-v100-10gbps", 512, 0, "data-parallel,megatron,whale,hapt", "hapt",
     "arXiv 2509.24859 (sub-clusters over a slow link); model and batch are our choice"},
    {"autohet", "AutoHet: Llama-2 13B on 2x8 A100 + 2x8 H800 + 2x8 H20 (three sites)", "llama2-13b",
     "autohet-a100-h800-h20", 384, 0, "megatron,whale,autohet,hapt", "autohet",
     "arXiv 2512.20953: baselines Megatron-LM and Whale; GPU mix per emergentmind; batch ours"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL},
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
