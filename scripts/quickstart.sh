#!/usr/bin/env bash
# Quick start: set up, build, and run the main job on the built-in default:
# compare every planner strategy on the default heterogeneous scenario
# (GPT-3 2.7B on 4x8 A100 + 4x8 V100 in two sites joined by 10 Gb/s).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/hetsim show cluster hapt-a100-v100-10gbps
echo
./build/hetsim compare --scenario hapt
