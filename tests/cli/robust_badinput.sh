#!/usr/bin/env bash
# robust_badinput.sh - broken and absurd inputs through the command line
# (docs/robustness.md): every one exits 2 with one message naming the file
# and the field, never 1 (internal), never a signal (crash, sanitizer abort).
# No run has a time limit here (a hang would meet ctest's own timeout); the
# limits that keep absurd inputs fast are checked through their messages.
# Also every near-miss seed of the fuzz corpus goes through the matching
# command.
set -u
H=${HETSIM_BIN:?}
D=${HETSIM_TEST_DATA:?}/robust
FZ=${HETSIM_DATA:?}/tests/fuzz/corpus
. "$(dirname "$0")/lib.bash"
# expect2 NEEDLE... -- CMD...: exit 2, stderr holds every NEEDLE
expect2() {
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 2 ]; then bad "exit $rc (want 2): $*"; head -c 600 "$tmp/err"; return; fi
  for n in "${needles[@]}"; do
    grep -qF -- "$n" "$tmp/err" || { bad "'$n' not in message of $*: $(head -c 400 "$tmp/err")"; return; }
  done
  pass=$((pass + 1))
}
# clean CMD...: exit 0 or 2 (a clean result or a clean error), no crash/hang
clean() {
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then pass=$((pass + 1)); else bad "exit $rc: $* $(head -c 300 "$tmp/err")"; fi
}

# absurd sizes
expect2 billion-gpus.json count 125000000 -- "$H" show cluster "$D/billion-gpus.json"
expect2 slow-link.json "links[0].GBps" 1e-30 -- "$H" show cluster "$D/slow-link.json"
expect2 million-layers.json transformer.layers 1000000 -- "$H" show model "$D/million-layers.json"
expect2 hf-zero-heads.json num_attention_heads -- "$H" show model "$D/hf-zero-heads.json"
expect2 "100 years" -- "$H" simulate --model "$D/forever-model.json" --cluster dgx-a100-1node \
  --tp 1 --pp 2 --microbatch-size 1 --global-batch 4
expect2 plan-batch0.json microbatch_size -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node \
  --plan "$D/plan-batch0.json"
expect2 plan-2p63.json -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --plan "$D/plan-2p63.json"
expect2 microbatches 8388608 -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 8 --pp 1 \
  --microbatch-size 1 --global-batch 1073741824
expect2 --global-batch -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 8 --pp 1 --global-batch 0
expect2 --tp -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 1000000000 --pp 1
expect2 --global-batch -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 8 --pp 1 \
  --global-batch 9223372036854775808

# broken files: empty, truncated, random bytes, a directory, missing
for cmd in "show cluster" "show model"; do
  expect2 empty.json -- "$H" $cmd "$D/empty.json"
  expect2 truncated.json -- "$H" $cmd "$D/truncated.json"
  expect2 garbage.json -- "$H" $cmd "$D/garbage.json"
  expect2 "$D" -- "$H" $cmd "$D/"
  expect2 no-such.json -- "$H" $cmd "$D/no-such.json"
done
# a file past the 64 MiB limit of every loader (sparse: no disk used)
truncate -s 65M "$tmp/big.json"
expect2 big.json "larger than the limit" -- "$H" show model "$tmp/big.json"
expect2 big.json "larger than the limit" -- "$H" show cluster "$tmp/big.json"
# what is not a regular file is refused before any read (issue #32: a FIFO
# blocked forever, and one stalled a whole sweep; /dev/zero was read to
# the limit): a hang here would meet ctest's timeout
expect2 /dev/zero "not a regular file (a character device)" -- "$H" show model /dev/zero
expect2 /dev/zero "not a regular file (a character device)" -- "$H" show cluster /dev/zero
mkfifo "$tmp/fifo.json"
expect2 fifo.json "not a regular file (a FIFO)" -- "$H" show model "$tmp/fifo.json"
expect2 fifo.json "not a regular file (a FIFO)" -- "$H" show cluster "$tmp/fifo.json"
expect2 fifo.json "not a regular file (a FIFO)" -- "$H" import megatron-log "$tmp/fifo.json"
expect2 fifo.json "not a regular file (a FIFO)" -- "$H" import torch-profiler "$tmp/fifo.json"
expect2 fifo.json "not a regular file (a FIFO)" -- "$H" import nccl-tests "$tmp/fifo.json"
expect2 fifo.json "not a regular file (a FIFO)" -- "$H" simulate --model gpt3-1.3b \
  --cluster dgx-a100-1node --plan "$tmp/fifo.json"
# a FIFO named as a sweep's model: an error row, the sweep goes on
printf '{"name": "f", "clusters": ["dgx-a100-1node"], "models": ["%s", "gpt3-1.3b"], "global_batch": [64], "strategies": ["megatron"], "price_models": ["on-demand"], "train_tokens": 1e10, "time_limit_s": 60}\n' "$tmp/fifo.json" >"$tmp/fifo-sweep.json"
expect 0 "$H" sweep "$tmp/fifo-sweep.json"
has "$tmp/out" "not a regular file (a FIFO)"
has "$tmp/out" ",gpt3-1.3b,64,megatron,on-demand,ok,"
# issue #32: a parse error gives the position, never the text there; a
# file named by mistake (/etc/passwd as a model) is not echoed
printf 'SECRET-TOKEN-4711:x:0:0:root\n' >"$tmp/secret.txt"
for cmd in "show model" "show cluster"; do
  expect2 secret.txt "malformed JSON at line 1, column 1 (byte 0)" -- "$H" $cmd "$tmp/secret.txt"
  hasnot "$tmp/err" "SECRET"
done
printf '{"name": "s", "clusters": ["dgx-a100-1node"], "models": ["%s"], "global_batch": [64], "strategies": ["megatron"], "price_models": ["on-demand"], "train_tokens": 1e10, "time_limit_s": 60}\n' "$tmp/secret.txt" >"$tmp/secret-sweep.json"
expect 0 "$H" sweep "$tmp/secret-sweep.json"
has "$tmp/out" "secret.txt: malformed JSON at line 1, column 1 (byte 0)"
hasnot "$tmp/out" "SECRET"
hasnot "$tmp/err" "SECRET"
expect2 /dev/null -- "$H" show model /dev/null
expect2 garbage.json -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --plan "$D/garbage.json"
expect2 empty.json -- "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --plan "$D/empty.json"

# every near-miss seed of the fuzz corpora through the matching command
for f in "$FZ"/cluster/near-*.json; do clean "$H" show cluster "$f"; done
for f in "$FZ"/model_json/near-*.json "$FZ"/hf_config/near-*.json; do clean "$H" show model "$f"; done
for f in "$FZ"/plan/near-*.json; do
  clean "$H" simulate --model gpt3-1.3b --cluster a100-v100-two-sites --plan "$f"
done
# and every crash ever found by the fuzzers (tests/fuzz/regress), where it is a
# file a command reads
for f in "$HETSIM_DATA"/tests/fuzz/regress/cluster/*; do [ -f "$f" ] && clean "$H" show cluster "$f"; done
for f in "$HETSIM_DATA"/tests/fuzz/regress/model_json/* "$HETSIM_DATA"/tests/fuzz/regress/hf_config/*; do
  [ -f "$f" ] && clean "$H" show model "$f"
done

# training-practice flags (docs/simulator.md, "Modern training practice")
SIMG=("$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --pp 2 --global-batch 8)
expect2 --attention fast -- "${SIMG[@]}" --tp 2 --attention fast
expect2 --kernels megatron-2099 megatron-core-2024 -- "${SIMG[@]}" --tp 2 --kernels megatron-2099
expect2 --sequence-parallel "--tp 1" -- "${SIMG[@]}" --tp 1 --sequence-parallel
expect2 --zero-stage '"4"' -- "${SIMG[@]}" --tp 2 --zero-stage 4
expect2 --precision fp4 -- "${SIMG[@]}" --tp 2 --precision fp4
expect2 --tp-comm-overlap --sequence-parallel -- "${SIMG[@]}" --tp 2 --tp-comm-overlap
expect2 "precision (--precision): fp8" A100-SXM4-80GB -- "${SIMG[@]}" --tp 2 --precision fp8
expect2 --dp-overlap '"maybe"' -- "${SIMG[@]}" --tp 2 --dp-overlap maybe
expect2 --grad-accum '"separate"' -- "${SIMG[@]}" --tp 2 --grad-accum separate
expect2 --grad-reduce-dtype '"fp16"' -- "${SIMG[@]}" --tp 2 --grad-reduce-dtype fp16
expect2 grad_reduce_dtype add_fp32 -- "${SIMG[@]}" --tp 2 --grad-reduce-dtype fp32 --grad-accum add
expect2 --grad-reduce-dtype '"FP32"' -- "$H" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy megatron --grad-reduce-dtype FP32
expect2 --context-parallel "does not divide the sequence length 2048" -- "${SIMG[@]}" --tp 1 --context-parallel 3
expect2 --context-parallel "got 0" -- "${SIMG[@]}" --tp 1 --context-parallel 0
expect2 --expert-parallel "has no MoE experts" -- "${SIMG[@]}" --tp 1 --expert-parallel 2
expect2 --expert-parallel "does not divide the model's 8 experts" -- "$H" simulate --model mixtral-8x7b \
  --cluster dgx-h100-4nodes --tp 2 --pp 2 --expert-parallel 3
expect2 --attention sdpa -- "$H" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy megatron --attention sdpa
# framework host overheads (docs/simulator.md, "Framework overheads")
expect2 --framework '"pytorch"' megatron-lm-2021 -- "${SIMG[@]}" --tp 2 --framework pytorch
expect2 --dispatch-us '"-3"' -- "${SIMG[@]}" --tp 2 --framework fsdp-2023 --dispatch-us -3
expect2 --dispatch-us '"nan"' -- "${SIMG[@]}" --tp 2 --dispatch-us nan
expect2 --microbatch-overhead-us '"2e9"' -- "${SIMG[@]}" --tp 2 --microbatch-overhead-us 2e9
expect2 --framework '"Megatron"' -- "$H" compare --model gpt3-1.3b --cluster dgx-a100-1node --strategies megatron --framework Megatron
printf '{"schema_version": 1, "dispatch_us": [0], "microbatch_us": [0]}' >"$tmp/fit.json"
expect2 "fit.json" "train" -- "$H" validate --published --cv --fit "$tmp/fit.json"
printf '{"schema_version": 1, "train": ["nope"], "dispatch_us": [0], "microbatch_us": [0]}' >"$tmp/fit2.json"
expect2 "train: table \"nope\" is not in the suite" -- "$H" validate --published --cv --fit "$tmp/fit2.json"

# planner options (docs/planners.md): headroom a fraction in [0, 1), a
# --baseline that is compared, precision on every planning command
PLANC=(--model gpt3-1.3b --cluster dgx-a100-1node)
expect2 --memory-headroom '"1"' -- "$H" plan "${PLANC[@]}" --strategy megatron --memory-headroom 1
expect2 --memory-headroom '"-0.1"' -- "$H" plan "${PLANC[@]}" --strategy deepspeed --memory-headroom=-0.1
expect2 --memory-headroom '"lots"' -- "$H" compare "${PLANC[@]}" --strategies megatron --memory-headroom lots
expect2 --baseline '"whale"' -- "$H" compare "${PLANC[@]}" --strategies megatron,hapt --baseline whale
expect2 --memory-headroom '"nan"' -- "$H" whatif "${PLANC[@]}" --budget-usd-per-hour 10 --candidates H100-SXM5-80GB --memory-headroom nan
expect2 "precision (--precision): fp8" dgx-a100-1node -- "$H" plan "${PLANC[@]}" --strategy deepspeed --precision fp8
expect2 --precision fp4 -- "$H" whatif "${PLANC[@]}" --budget-usd-per-hour 10 --candidates H100-SXM5-80GB --precision fp4

echo "robust_badinput: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
