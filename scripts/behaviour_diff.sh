#!/usr/bin/env bash
# behaviour_diff.sh - does a refactoring change what hetsim prints?
#
#   scripts/behaviour_diff.sh OLD_BUILD_DIR NEW_BUILD_DIR [--quick]
#
# Runs one fixed set of commands with both builds' `hetsim` (and bench_search
# when both build dirs have it) and compares their outputs byte for byte:
#
#   - `simulate --json` of grid plans covering every schedule, recompute,
#     ZeRO stage, SP, CP, EP, interleaving, tied embeddings and both kernel
#     presets, on homogeneous and heterogeneous catalog clusters;
#   - `plan --json` with every strategy on two model/cluster pairs,
#     and `simulate --plan` of each plan it wrote;
#   - `compare --format csv` of every named scenario (the published scenarios);
#   - `validate --published` (the published suite, text);
#   - bench_search's plans at 16 and 64 GPUs (not --quick).
#
# Search times are the one thing allowed to differ: columns and fields named
# "search" or "cpu" are masked before comparing. Exit 0 when every output is
# identical, 1 when one differs (the differing command and a diff are
# printed), 2 on bad usage. Used by the #37 refactorings ("behaviour
# identical bit for bit"); the commit that moves code names this script.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR [--quick]" >&2
  exit 2
fi
OLD=$1 NEW=$2 QUICK=${3:-}
for d in "$OLD" "$NEW"; do
  if [ ! -x "$d/hetsim" ]; then
    echo "$0: $d/hetsim: not an executable (give a build directory)" >&2
    exit 2
  fi
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/old" "$WORK/new"
n_cmd=0 n_diff=0

# mask: search and CPU times are wall-clock measurements, not behaviour
# (JSON fields "search_s"/"cpu_s", CSV columns named so, "search 1.23 s" in
# text): scripts/lib_mask.sh's hs_mask_times
# shellcheck source=scripts/lib_mask.sh
. "$(dirname "$0")/lib_mask.sh"
mask() { hs_mask_times; }

# run NAME ARGS...: one hetsim command with both builds, outputs compared
run() {
  local name=$1; shift
  n_cmd=$((n_cmd + 1))
  for side in old new; do
    local bin=$OLD; [ $side = new ] && bin=$NEW
    (cd "$WORK/$side" && "$bin/hetsim" "$@" >"$name.out" 2>"$name.err"; echo "rc=$?" >>"$name.out")
    mask <"$WORK/$side/$name.out" >"$WORK/$side/$name.masked"
  done
  if ! cmp -s "$WORK/old/$name.masked" "$WORK/new/$name.masked" ||
     ! cmp -s "$WORK/old/$name.err" "$WORK/new/$name.err"; then
    n_diff=$((n_diff + 1))
    echo "DIFFERS: hetsim $*"
    diff "$WORK/old/$name.masked" "$WORK/new/$name.masked" | head -20
    diff "$WORK/old/$name.err" "$WORK/new/$name.err" | head -10
  fi
}

# files written by a command (plans) must match too
same_file() {
  local f=$1
  n_cmd=$((n_cmd + 1))
  [ ! -e "$WORK/old/$f" ] && [ ! -e "$WORK/new/$f" ] && return 0
  if ! cmp -s <(mask <"$WORK/old/$f" 2>&1) <(mask <"$WORK/new/$f" 2>&1); then
    n_diff=$((n_diff + 1))
    echo "DIFFERS: file $f"
    diff <(mask <"$WORK/old/$f" 2>&1) <(mask <"$WORK/new/$f" 2>&1) | head -20
  fi
}

OLD=$(cd "$OLD" && pwd) NEW=$(cd "$NEW" && pwd)

# --- simulate --json: the lowering, engine, network and report -------------
i=0
while read -r model cluster args; do
  [ -z "$model" ] && continue
  case $model in \#*) continue ;; esac
  i=$((i + 1))
  # shellcheck disable=SC2086
  run "sim$i" simulate --model "$model" --cluster "$cluster" $args --json
done <<'EOF'
gpt3-1.3b dgx-a100-1node --tp 1 --pp 1
gpt3-1.3b dgx-a100-1node --tp 2 --pp 2 --microbatch-size 2 --global-batch 32
gpt3-2.7b dgx-a100-4nodes --tp 2 --pp 4 --schedule gpipe --global-batch 64
gpt3-2.7b dgx-a100-4nodes --tp 4 --pp 4 --schedule interleaved-1f1b --chunks 2 --global-batch 64
gpt3-6.7b dgx-h100-4nodes --tp 4 --pp 2 --recompute selective --sequence-parallel --global-batch 64
gpt3-6.7b dgx-h100-4nodes --tp 2 --pp 2 --recompute full --zero-stage 1 --global-batch 64
gpt3-6.7b dgx-h100-4nodes --tp 1 --pp 1 --zero-stage 3 --global-batch 64
gpt3-6.7b dgx-h100-4nodes --tp 1 --pp 2 --zero-stage 2 --kernels megatron-2021 --global-batch 64
llama3-8b dgx-h100-4nodes --tp 2 --pp 1 --context-parallel 2 --sequence-parallel --zero-stage 1 --seq-len 8192 --global-batch 32
llama3-8b dgx-h100-4nodes --tp 2 --pp 2 --tp-comm-overlap --sequence-parallel --global-batch 64
mixtral-8x7b dgx-h100-4nodes --tp 2 --pp 4 --expert-parallel 4 --global-batch 64
mixtral-8x7b dgx-h100-4nodes --tp 1 --pp 4 --expert-parallel 8 --zero-stage 1 --global-batch 64
gpt3-2.7b hapt-a100-v100-10gbps --tp 2 --pp 4 --schedule hetero-1f1b --global-batch 128
gpt3-2.7b hapt-a100-v100-10gbps --tp 4 --pp 2 --global-batch 128 --precision fp16
llama2-13b autohet-a100-h800-h20 --tp 4 --pp 3 --global-batch 64
llama2-7b mixed-a100-v100-t4 --tp 2 --pp 2 --global-batch 32 --stage-layers 20,12
bert-large hap-v100-p100 --tp 1 --pp 1 --precision fp32 --global-batch 256
gpt3-13b a100-v100-two-sites --tp 8 --pp 2 --schedule interleaved-1f1b --chunks 4 --global-batch 64 --dp-overlap off
llama3-70b dgx-h100-16nodes --tp 8 --pp 4 --schedule interleaved-1f1b --chunks 5 --sequence-parallel --global-batch 256
gpt3-175b dgx-h100-16nodes --tp 8 --pp 16 --global-batch 64 --grad-accum add_fp32 --grad-reduce-dtype fp32
EOF
run sim_trace simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 \
  --global-batch 16 --trace trace.json --trace-detail kernel --json
same_file trace.json

# --- plan with every strategy, then simulate the plan it wrote -------------
for s in data-parallel megatron deepspeed whale hapt autohet hap; do
  run "plan_hapt_$s" plan --model gpt3-2.7b --cluster hapt-a100-v100-10gbps \
    --strategy "$s" --global-batch 128 --json -o "plan-hapt-$s.json"
  same_file "plan-hapt-$s.json"
  if [ -s "$WORK/old/plan-hapt-$s.json" ]; then
    run "resim_hapt_$s" simulate --model gpt3-2.7b --cluster hapt-a100-v100-10gbps \
      --plan "plan-hapt-$s.json" --json
  fi
  run "plan_mix_$s" plan --model llama2-7b --cluster mixed-a100-v100-t4 \
    --strategy "$s" --global-batch 64 --json -o "plan-mix-$s.json"
  same_file "plan-mix-$s.json"
done
run plan_exhaustive plan --model gpt3-1.3b --cluster dgx-a100-1node \
  --strategy exhaustive --global-batch 32 --json -o plan-ex.json

# --- scenarios and the published suite -------------------------------------
for sc in $("$NEW/hetsim" list scenarios | awk '/^[a-z]/ {print $1}'); do
  run "scenario_$sc" compare --scenario "$sc" --format csv
done
run published validate --published

# --- bench_search plans -----------------------------------------------------
if [ "$QUICK" != "--quick" ] && [ -x "$OLD/bench/bench_search" ] && [ -x "$NEW/bench/bench_search" ]; then
  for side in old new; do
    bin=$OLD; [ $side = new ] && bin=$NEW
    "$bin/bench/bench_search" 64 | awk '{ $3 = "T"; $4 = "T"; print }' >"$WORK/$side/bench_search.out" 2>&1
  done
  n_cmd=$((n_cmd + 1))
  if ! cmp -s "$WORK/old/bench_search.out" "$WORK/new/bench_search.out"; then
    n_diff=$((n_diff + 1))
    echo "DIFFERS: bench_search 64"
    diff "$WORK/old/bench_search.out" "$WORK/new/bench_search.out" | head -20
  fi
fi

echo "behaviour_diff: $n_cmd outputs compared, $n_diff differ"
[ $n_diff -eq 0 ]
