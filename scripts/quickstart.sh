#!/usr/bin/env bash
# Quick start: set up, build, and run the main job on the built-in default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/hetsim show model gpt3-1.3b
./build/hetsim show cluster a100-v100-two-sites
