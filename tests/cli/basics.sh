#!/usr/bin/env bash
# CLI contract: --help everywhere, list/show/simulate work on the catalogs,
# exit codes 0/2, bad input names file, field and value.
set -u
H=${HETSIM_BIN:?}
D=${HETSIM_TEST_DATA:?}
. "$(dirname "$0")/lib.bash"

expect 0 "$H" --help;                          has "$tmp/out" "simulate"
for c in list show simulate; do expect 0 "$H" "$c" --help; has "$tmp/out" "usage"; done
expect 2 "$H";                                  has "$tmp/err" "usage"
expect 2 "$H" frobnicate;                       has "$tmp/err" "unknown command 'frobnicate'"
expect 0 "$H" list models;                      has "$tmp/out" "llama2-7b"
expect 0 "$H" list clusters;                    has "$tmp/out" "a100-v100-two-sites"
expect 0 "$H" list gpus;                        has "$tmp/out" "H100-SXM5-80GB"
expect 0 "$H" list schedules;                   has "$tmp/out" "hetero-1f1b"
expect 2 "$H" list nothing;                     has "$tmp/err" "unknown list 'nothing'"
expect 0 "$H" show model gpt3-175b
expect 0 "$H" show model llama2-7b --json;      has "$tmp/out" '"params"'
expect 0 "$H" show cluster a100-v100-two-sites; has "$tmp/out" "V100"
expect 0 "$H" show cluster hap-v100-p100 --json; has "$tmp/out" '"n_devices"'
expect 2 "$H" show model no-such-model;         has "$tmp/err" "no-such-model"
expect 2 "$H" show widget x
expect 2 "$H" show model llama2-7b --bogus;     has "$tmp/err" "unknown option '--bogus'"

# bad input files: one line naming file, field and value
cat >"$tmp/bad-cluster.json" <<'J'
{"name": "x", "sites": [{"name": "a", "nodes": [{"count": 1, "gpu": "A100-SXM4-80GB", "gpus_per_node": -4}]}]}
J
expect 2 "$H" show cluster "$tmp/bad-cluster.json"
has "$tmp/err" "bad-cluster.json: sites[0].nodes[0].gpus_per_node: must be a positive integer, got -4"
printf '{"name": "x", "sites": [' >"$tmp/trunc.json"
expect 2 "$H" show cluster "$tmp/trunc.json";   has "$tmp/err" "line 1"

# simulate: grid shortcut, JSON report keys, trace, plan round trip
expect 0 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --global-batch 32 \
  --json -o "$tmp/report.json" --trace "$tmp/trace.json"
for k in iteration_time_s samples_per_s tokens_per_s tflops_per_gpu mfu bubble_fraction \
         max_peak_memory_bytes oom oom_devices cost_usd_per_iteration stages links fwd_s bwd_s \
         compute_s comm_exposed_s idle_s peak_memory_bytes; do
  has "$tmp/report.json" "\"$k\""
done
has "$tmp/trace.json" '"traceEvents"'
has "$tmp/trace.json" '"compute"'
# Perfetto's rules (nesting per track, categories, flows): tests/trace_check.py
if /usr/bin/python3 "$(dirname "$0")/../trace_check.py" "$tmp/trace.json"; then ok; else bad "trace_check trace.json"; fi
expect 2 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 3 --pp 2
has "$tmp/err" "TP degree 3 does not divide the model's 16 attention heads"
expect 2 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 4 --pp 4
has "$tmp/err" "16 devices, but cluster"
expect 2 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --schedule 3f3b
has "$tmp/err" "3f3b"
expect 2 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp x
has "$tmp/err" "--tp: must be an integer"
expect 2 "$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --plan "$D/plans/bad-device.json"
has "$tmp/err" "bad-device.json: pipelines[0].stages[1].replicas[0].devices[0]: unknown device 99"
expect 0 "$H" simulate --model gpt3-1.3b --cluster a100-v100-two-sites --plan "$D/plans/two-site-hetero.json"
has "$tmp/out" "hetero-1f1b"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
