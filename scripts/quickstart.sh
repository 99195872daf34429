#!/usr/bin/env bash
# Quick start: set up, build, and run the main job on the built-in default:
# the default model and heterogeneous cluster, and a Megatron-style plan of
# it simulated.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/hetsim show model gpt3-1.3b
echo
./build/hetsim show cluster a100-v100-two-sites
echo
./build/hetsim simulate --model gpt3-1.3b --cluster a100-v100-two-sites \
  --tp 8 --pp 2 --microbatch-size 2 --global-batch 96
