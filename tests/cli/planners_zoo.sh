#!/usr/bin/env bash
# planners_zoo.sh - legal plans only: every strategy on real HuggingFace
# configs (tests/data/models: Qwen2 with 28 heads and 4 KV heads, Mistral
# and Mixtral with 8 KV heads, GPT-2, GPT-NeoX, OPT, Pythia, BERT) on one
# DGX A100 node either returns a plan that the simulator accepts and that
# fits in memory (exit 0 again from `simulate --plan`), or says plainly that
# none exists (exit 3); never a plan the simulator rejects.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?}/models
. "$(dirname "$0")/lib.bash"
for m in qwen2-7b mistral-7b mixtral-8x7b gpt2 gpt-neox-20b opt-1.3b pythia-160m bert-base-uncased; do
  for s in megatron whale hapt autohet hap; do
    "$bin" plan --model "$data/$m/config.json" --cluster dgx-a100-1node --strategy "$s" \
      --global-batch 64 -o "$tmp/p.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 0 ]; then
      if "$bin" simulate --model "$data/$m/config.json" --cluster dgx-a100-1node --plan "$tmp/p.json" \
           >/dev/null 2>"$tmp/err2"; then pass=$((pass + 1))
      else fail=$((fail + 1)); echo "FAIL: $m/$s: plan does not simulate cleanly: $(head -c 300 "$tmp/err2")"; fi
    elif [ $rc -eq 3 ] && ! grep -q "rejects" "$tmp/err"; then
      pass=$((pass + 1)); echo "  $m/$s: no plan ($(head -c 160 "$tmp/err"))"
    else
      fail=$((fail + 1)); echo "FAIL: $m/$s: exit $rc: $(head -c 300 "$tmp/err")"
    fi
  done
done
echo "planners zoo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
