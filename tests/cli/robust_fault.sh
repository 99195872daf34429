#!/usr/bin/env bash
# robust_fault.sh - allocation failures end to end, through the hetsim
# executable of a fault-injection build (-DHS_FAULT_INJECT=ON, ideally with
# HS_SANITIZE=ON; docs/robustness.md). HS_FAIL_AT=n fails the n-th counted
# allocation of the process. For show model, show cluster --json and a small
# simulate, the allocations are counted (HS_FAULT_COUNT=1 prints the count at
# exit) and up to 40 failure points spread over them are tried: each run must
# exit 1 with "out of memory" in its one-line message (or 0 with the
# unarmed output when the failure is absorbed), never a signal, a sanitizer
# report or a leak (LeakSanitizer's exit code is 23).
# In ordinary builds HS_FAIL_AT is ignored: the script checks that and passes.
set -u
H=${HETSIM_BIN:?}
. "$(dirname "$0")/lib.bash"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

if HS_FAIL_AT=1 "$H" list gpus >/dev/null 2>&1; then
  echo "robust_fault: not a fault-injection build (HS_FAIL_AT ignored): nothing to do"
  exit 0
fi

check() { # check NAME CMD...
  local name=$1; shift
  HS_FAULT_COUNT=1 "$@" >"$tmp/ref.out" 2>"$tmp/ref.err" || { bad "$name: unarmed run failed: $(head -c 300 "$tmp/ref.err")"; return; }
  local total
  total=$(grep -oE 'hs_fault: [0-9]+ counted allocations' "$tmp/ref.err" | grep -oE '[0-9]+' | head -1)
  [ -n "$total" ] || { bad "$name: no allocation count"; return; }
  local step=$(( total / 40 + 1 )) n rc
  for ((n = 1; n <= total; n += step)); do
    HS_FAIL_AT=$n "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 0 ]; then
      cmp -s "$tmp/out" "$tmp/ref.out" && pass=$((pass + 1)) || bad "$name n=$n: exit 0 with a different output"
    elif [ "$rc" -eq 1 ] && grep -q "out of memory" "$tmp/err" && ! grep -q "Sanitizer" "$tmp/err"; then
      pass=$((pass + 1))
    else
      bad "$name n=$n/$total: exit $rc: $(grep -m3 -E 'ERROR|Sanitizer|hetsim' "$tmp/err")"
    fi
  done
  echo "  $name: $total allocations, failures injected at every ${step}th"
}

check show-model "$H" show model llama2-7b
check show-cluster "$H" show cluster a100-v100-two-sites --json
check simulate "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --dp 2 \
  --microbatch-size 1 --global-batch 8 --json
check simulate-practice "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --dp 2 \
  --microbatch-size 1 --global-batch 8 --kernels megatron-core-2024 --sequence-parallel --zero-stage 3 --tp-comm-overlap --json
check simulate-cp-ep "$H" simulate --model hap-bert-moe --cluster dgx-h100-1node --tp 1 --pp 1 --dp 4 \
  --context-parallel 2 --expert-parallel 2 --zero-stage 1 --microbatch-size 2 --global-batch 8 --json
check simulate-cp-zero3 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 1 --dp 2 \
  --context-parallel 2 --zero-stage 3 --microbatch-size 1 --global-batch 4 --json

echo "robust_fault: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
