#!/usr/bin/env bash
# exit_codes.sh - results a script can trust (issue 12): exit 3 for
# "simulated, but infeasible" (a plan out of memory, no strategy with a plan,
# a what-if with no feasible option) with no throughput, MFU or cost stated
# as achievable; what-if and sweep rows train one global batch and say so;
# progress reaches a log as plain lines with done/total and an ETA.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
root=${HETSIM_DATA:?}
. "$(dirname "$0")/lib.bash"
# expect, printing at most 600 bytes of stderr (some refusals are long)
expect() {
  local code=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -eq "$code" ]; then ok; else bad "exit $rc (want $code): $*"; head -c 600 "$tmp/err"; fi
}
py=/usr/bin/python3

# simulate: llama2-70b on one DGX A100 at tp 8 needs ~227 GB per GPU
expect 3 "$bin" simulate --model llama2-70b --cluster dgx-a100-1node --tp 8 --pp 1
has "$tmp/out" "INFEASIBLE      out of memory on 8 devices"
hasnot "$tmp/out" "tokens/s"
hasnot "$tmp/out" "TFLOP/s"
hasnot "$tmp/out" "per million tokens"
expect 3 "$bin" simulate --model llama2-70b --cluster dgx-a100-1node --tp 8 --pp 1 --json
$py - "$tmp/out" <<'PY' && ok || bad "infeasible report JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["feasible"] is False and r["oom"] is True
assert "out of memory" in r["infeasible_reason"]
for k in ("iteration_time_s", "tokens_per_s", "samples_per_s", "mfu", "tflops_per_gpu",
          "cost_usd_per_iteration", "cost_usd_per_million_tokens"):
    assert r[k] is None, k
assert r["infeasible_simulated_iteration_time_s"] > 0
assert r["global_batch"] == 4 and r["tokens_per_iteration"] == 4 * 4096
PY
# the same model on a plan that fits: exit 0, feasible, numbers
expect 0 "$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --json
$py -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["feasible"] is True and r["tokens_per_s"] > 0' \
  "$tmp/out" && ok || bad "feasible report JSON"

# compare: no strategy finds a plan for a 70B model on one A100
cat >"$tmp/one.json" <<'J'
{"name": "one-a100", "sites": [{"name": "s", "nodes": [{"count": 1, "gpu": "A100-SXM4-40GB",
 "gpus_per_node": 1, "intra_node": {"GBps": 300}}]}]}
J
expect 3 "$bin" compare --model llama2-70b --cluster "$tmp/one.json" --strategies data-parallel,megatron
has "$tmp/err" "no strategy found a feasible plan"
has "$tmp/out" "n/a:"
expect 3 "$bin" compare --model llama2-70b --cluster "$tmp/one.json" --strategies megatron --format json
$py -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["feasible"] is False and not any(x["ok"] for x in r["rows"])' \
  "$tmp/out" && ok || bad "compare json rows"
expect 3 "$bin" plan --model llama2-70b --cluster "$tmp/one.json" --strategy megatron
# but one feasible strategy among failing ones is a result
expect 0 "$bin" compare --model gpt3-1.3b --cluster dgx-a100-1node --strategies data-parallel,megatron \
  --global-batch 12 --format csv

# whatif with no feasible option: a 70B model on one or two T4s
expect 3 "$bin" whatif --model llama2-70b --replace --budget-usd-per-hour 1.1 --candidates T4-16GB \
  --step 1 --strategies megatron --format csv
has "$tmp/err" "no option has a feasible plan"

# whatif: one global batch for every option, stated on every row; progress
# lines in a log (HETSIM_PROGRESS_INTERVAL_S=0: a line per option)
HETSIM_PROGRESS_INTERVAL_S=0 expect 0 "$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node \
  --budget-usd-per-hour 30 --candidates A100-SXM4-40GB,V100-SXM2-16GB --strategies megatron,whale \
  --format csv
has "$tmp/err" "whatif: 1/"
has "$tmp/err" "options done"
hasnot "$tmp/err" $'\r'
$py - "$tmp/out" <<'PY' && ok || bad "whatif global batch"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) > 2
big = max(int(r["n_gpus"]) for r in rows)
for r in rows:   # 8 samples per GPU of the largest option, 2048-token samples
    assert int(r["global_batch"]) == 8 * big, (r["option"], r["global_batch"], big)
    assert int(r["tokens_per_iteration"]) == 8 * big * 2048, r
PY
# asking for a batch that grows with the option
expect 0 "$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 30 \
  --candidates A100-SXM4-40GB --strategies megatron --global-batch-per-gpu 4 --format csv --quiet
$py - "$tmp/out" <<'PY' && ok || bad "whatif per-GPU batch"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    assert int(r["global_batch"]) == 4 * int(r["n_gpus"]), r
PY
hasnot "$tmp/err" "options done"
expect 2 "$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 30 \
  --candidates A100-SXM4-40GB --global-batch 64 --global-batch-per-gpu 4
has "$tmp/err" "not both"

# sweep: the default global batch is one for the whole sweep
cat >"$tmp/spec.json" <<'J'
{"name": "batch", "clusters": [{"A100-SXM4-40GB": [8, 16]}], "models": ["gpt3-1.3b"],
 "strategies": ["megatron"], "price_models": ["on-demand"]}
J
expect 0 "$bin" sweep "$tmp/spec.json" --no-timings --quiet
$py - "$tmp/out" <<'PY' && ok || bad "sweep global batch"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2
for r in rows:
    assert r["global_batch"] == "128", r   # 8 x 16 GPUs, for both points
    assert r["tokens_per_iteration"] == str(128 * 2048), r
PY
sed 's/"price_models"/"global_batch_per_gpu": 2, "price_models"/' "$tmp/spec.json" >"$tmp/spec2.json"
expect 0 "$bin" sweep "$tmp/spec2.json" --no-timings --quiet
$py - "$tmp/out" <<'PY' && ok || bad "sweep per-GPU batch"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    assert int(r["global_batch"]) == 2 * int(r["n_gpus"]), r
PY
sed 's/"models"/"global_batch": [64], "global_batch_per_gpu": 2, "models"/' "$tmp/spec.json" >"$tmp/spec3.json"
expect 2 "$bin" sweep "$tmp/spec3.json"
has "$tmp/err" "global_batch_per_gpu: give it or global_batch, not both"

echo "exit codes: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
