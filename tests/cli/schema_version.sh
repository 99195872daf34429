#!/usr/bin/env bash
# schema_version.sh - every JSON result hetsim writes carries schema_version
# (docs/schemas.md) as its first key, with the value docs/schemas.md states
# (read from the page, not from the binary): one run of every JSON-writing
# command and option. Files of other tools' formats are the exceptions the
# page names (Chrome traces, Jupyter notebooks), checked as such.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?HETSIM_TEST_DATA must point at tests/data}
src=${HETSIM_DATA:?HETSIM_DATA must point at the source tree}
. "$(dirname "$0")/lib.bash"
D="$data/import"
want=$(sed -n 's/.*`HS_SCHEMA_VERSION` in `sim\/hs_sim.h`, now \*\*\([0-9]*\)\*\*.*/\1/p' "$src/docs/schemas.md")
[ -n "$want" ] || { echo "FAIL: docs/schemas.md does not state the schema version"; exit 1; }

# run NAME CMD...: CMD exits 0 (stdout kept in $tmp/NAME.stdout)
run() {
  local name=$1; shift
  if "$@" >"$tmp/$name.stdout" 2>"$tmp/err"; then ok; else bad "$name: exit $?: $* $(head -c 300 "$tmp/err")"; fi
}
# stamped FILE...: each file is a JSON object whose first key is schema_version = $want
stamped() {
  for f in "$@"; do
    if python3 - "$f" "$want" <<'P'; then ok; else bad "$f: no schema_version $want first"; fi
import json, sys
j = json.load(open(sys.argv[1]))
assert isinstance(j, dict) and list(j)[0] == "schema_version", list(j)[:3] if isinstance(j, dict) else type(j)
assert j["schema_version"] == int(sys.argv[2]), j["schema_version"]
P
  done
}

sim=(--model gpt3-1.3b --cluster dgx-a100-1node --global-batch 32)
run show_model "$bin" show model gpt3-1.3b --json
run show_cluster "$bin" show cluster dgx-a100-1node --json
run simulate "$bin" simulate "${sim[@]}" --tp 2 --pp 2 --json -o "$tmp/report.json" --trace "$tmp/trace.json"
run plan "$bin" plan "${sim[@]}" --strategy megatron --json -o "$tmp/plan.json"
run compare "$bin" compare "${sim[@]}" --strategies megatron,data-parallel --format json
run whatif "$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 30 \
  --candidates A100-SXM4-40GB --strategies megatron --global-batch 32 --format json --quiet
run elastic "$bin" elastic --model gpt3-1.3b --cluster "$data/elastic/spot4x4.json" --strategy data-parallel \
  --global-batch 48 --hours 1 --seed 1 --json
run sweep "$bin" sweep "$data/sweep/small.json" -o "$tmp/results.csv" --quiet
run export "$bin" export "$tmp/results.csv" --json "$tmp/results.json" --notebook "$tmp/a.ipynb"
run nccl "$bin" import nccl-tests "$D/nccl_all_gather_2xH200.txt" -o "$tmp/prof.json"
run nccl_cluster "$bin" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt" --gpus-per-node 8 \
  --cluster dgx-a100-4nodes --cluster-out "$tmp/cl.json"
run megatron "$bin" import megatron-log "$D/megatron_gpt2_1gpu.log" -o "$tmp/run.json"
run validate_run "$bin" validate --run "$tmp/run.json" --cluster dgx-a100-1node -o "$tmp/cmp.json" --json
run torch "$bin" import torch-profiler "$D/torch_cpu_step.json" -o "$tmp/tmeas.json" \
  --measurements-out "$tmp/tms.json" --gpu A100-SXM4-80GB
run calibrate "$bin" calibrate "$tmp/tms.json" --dtype fp32 -o "$tmp/tprof.json"
echo '{"iteration_time_s": 1.04}' >"$tmp/r.json"
echo '{"iterations_s": [1.0, 1.2, 0.9]}' >"$tmp/m.json"
run validate_report "$bin" validate --report "$tmp/r.json" --measured "$tmp/m.json" --json
run published "$bin" validate --published "$src/validate/published/bloom-176b-tr11.json" --json

stamped "$tmp"/show_model.stdout "$tmp"/show_cluster.stdout "$tmp"/simulate.stdout "$tmp/report.json" \
  "$tmp"/plan.stdout "$tmp/plan.json" "$tmp"/compare.stdout "$tmp"/whatif.stdout "$tmp"/elastic.stdout \
  "$tmp/results.json" "$tmp/prof.json" "$tmp/cl.json" "$tmp/run.json" "$tmp/cmp.json" "$tmp"/validate_run.stdout \
  "$tmp/tmeas.json" "$tmp/tms.json" "$tmp/tprof.json" "$tmp"/validate_report.stdout "$tmp"/published.stdout

# what hetsim writes it reads back without an unknown-field warning
run resim "$bin" simulate "${sim[@]}" --plan "$tmp/plan.json"
hasnot "$tmp/err" "unknown field"
run reshow "$bin" show cluster "$tmp/cl.json"
hasnot "$tmp/err" "unknown field"

# the exceptions: a Chrome trace (traceEvents) and a notebook (nbformat) keep their formats
python3 - "$tmp/trace.json" "$tmp/a.ipynb" <<'P' && ok || bad "trace / notebook format"
import json, sys
t = json.load(open(sys.argv[1])); n = json.load(open(sys.argv[2]))
assert "traceEvents" in t and "nbformat" in n and "schema_version" not in n
P
echo "schema_version: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
