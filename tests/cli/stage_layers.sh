#!/usr/bin/env bash
# stage_layers.sh - `simulate --stage-layers`: an uneven layout (blocks per
# virtual stage, N or N*R items) reaches the plan as a hand count says, and
# broken lists exit 2 naming the flag or the entry and the value.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
. "$(dirname "$0")/lib.bash"
sim=("$bin" simulate --model llama2-7b --cluster dgx-a100-1node --tp 2 --global-batch 8)

# 32 layers over 4 stages: the embedding alone, 8, 8, then 16 with the head
expect 0 "${sim[@]}" --pp 4 --stage-layers 0,8*2,16
has "$tmp/out" "layers emb|0-7|8-15|16-31+head"
# interleaved, 2 ranks x 2 chunks in virtual-stage order: rank 0 holds
# stages 0 and 2 (blocks 0-6 with the embedding, 16-24), rank 1 stages 1
# and 3 (7-15, 25-31 with the head); the plan line lists every chunk of a
# rank, joined by ","
expect 0 "$bin" simulate --model llama2-7b --cluster dgx-a100-1node --tp 4 --pp 2 --dp 1 --global-batch 4 \
  --schedule interleaved-1f1b --chunks 2 --stage-layers 7,9,9,7
has "$tmp/out" "layers emb+0-6,16-24|7-15,25-31+head"

expect 2 "${sim[@]}" --pp 4 --stage-layers 0,8*2,15
has "$tmp/err" "stage_layers: the counts sum to 31 layers, model llama2-7b has 32"
expect 2 "${sim[@]}" --pp 4 --stage-layers 8,8,16
has "$tmp/err" "stage_layers: 3 counts, but pp x chunks = 4 x 1 = 4 stages"
expect 2 "${sim[@]}" --pp 4 --stage-layers 8,0,8,16
has "$tmp/err" "stage_layers[1]: 0 layers leaves the stage empty"
expect 2 "${sim[@]}" --pp 4 --stage-layers 8,8,8,x
has "$tmp/err" "--stage-layers: item 3: must be N or N*R"
expect 2 "${sim[@]}" --pp 4 --stage-layers 8*0,32
has "$tmp/err" "--stage-layers: item 0"
expect 2 "$bin" simulate --model llama2-7b --cluster dgx-a100-1node --plan /dev/null --stage-layers 1
has "$tmp/err" "--stage-layers: builds a grid plan, not with --plan"

echo "stage_layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
