#!/usr/bin/env bash
# `hetsim import` through the command line on the real samples of
# tests/data/import: nccl-tests -> profile -> simulate --profile; megatron-log
# -> run.json -> validate --run; torch-profiler -> measured.json and
# measurements.json -> validate / calibrate; and the refusals (exit 2 with
# file and line). Values checked are the ones printed in the sample files.
set -u
H=${HETSIM_BIN:?}
D=${HETSIM_TEST_DATA:?}/import
. "$(dirname "$0")/lib.bash"

expect 0 "$H" import --help;                      has "$tmp/out" "nccl-tests"
for k in nccl-tests megatron-log torch-profiler; do expect 0 "$H" import "$k" --help; has "$tmp/out" "usage"; done
expect 2 "$H" import;                             has "$tmp/err" "usage"
expect 2 "$H" import mpi-log x;                   has "$tmp/err" "unknown kind 'mpi-log'"

# nccl-tests: the measured columns as printed, the predicted beside them
expect 0 "$H" import nccl-tests "$D/nccl_all_gather_2xH200.txt" -o "$tmp/prof.json"
has "$tmp/out" "all_gather_perf, 2 ranks on 2 nodes, NVIDIA H200 = H200-SXM-141GB"
has "$tmp/out" "  8589934592       133370        32.20"
has "$tmp/out" "sets nic"
has "$tmp/prof.json" '"nic":'
python3 - "$tmp/prof.json" <<'P' && ok || bad "profile rows"
import json, sys
p = json.load(open(sys.argv[1]))
rows = p["nccl_tests"][0]["rows"]
assert len(rows) == 24 and rows[0]["busbw_GBps"] == 0.02 and rows[-1]["time_us"] == 133370
assert all(r["predicted_busbw_GBps"] > 0 for r in rows)
P
# the profile drives the simulator: the H200 cluster's NIC is the fitted one
printf '{"name": "h200x2", "sites": [{"name": "s", "nodes": [{"count": 2, "gpu": "H200-SXM-141GB", "gpus_per_node": 8}]}]}\n' >"$tmp/h200.json"
expect 0 "$H" simulate --model gpt3-1.3b --cluster "$tmp/h200.json" --tp 8 --pp 1 --dp 2 --profile "$tmp/prof.json" --json
expect 0 "$H" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt" --gpus-per-node 8
has "$tmp/out" "all_reduce_perf, 32 ranks on 4 nodes"
has "$tmp/out" "   536870912       7035.5       147.85"
# ... or into a cluster file: the A100 nodes get the fitted NIC, read back cleanly
expect 0 "$H" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt" --gpus-per-node 8 \
  --cluster dgx-a100-4nodes --cluster-out "$tmp/c4.json"
expect 0 "$H" show cluster "$tmp/c4.json"
has "$tmp/out" "NIC 160.209 GB/s, 81.438 us"
if [ -s "$tmp/err" ]; then bad "warnings reading the written cluster: $(cat "$tmp/err")"; else ok; fi
expect 2 "$H" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt" --gpus-per-node 8 \
  --cluster dgx-h100-1node --cluster-out "$tmp/c5.json"
has "$tmp/err" "dgx-h100-1node has no node of A100-SXM4-80GB"
expect 2 "$H" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt" --cluster dgx-a100-4nodes
has "$tmp/err" "go together"
expect 2 "$H" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt"
has "$tmp/err" "give --gpus-per-node"
expect 2 "$H" import nccl-tests "$D/nccl_all_reduce_coreweave_a100.txt" --ranks 16
has "$tmp/err" "nccl_all_reduce_coreweave_a100.txt:16:"
head -c 2000 "$D/nccl_all_gather_2xH200.txt" >"$tmp/all_gather_cut.txt"
expect 2 "$H" import nccl-tests "$tmp/all_gather_cut.txt"
has "$tmp/err" "all_gather_cut.txt:"
has "$tmp/err" "expected a row of 13 columns"
expect 2 "$H" import nccl-tests "$tmp/nope.txt";  has "$tmp/err" "nope.txt"
expect 2 "$H" import nccl-tests "$D/nccl_all_gather_2xH200.txt" --coll scatter; has "$tmp/err" "--coll"
# --nic-rails: NICs per node, an integer in [1, 64]; with it the profile's nic says its rails
expect 2 "$H" import nccl-tests "$D/nccl_all_gather_2xH200.txt" --nic-rails 0; has "$tmp/err" "--nic-rails"
expect 2 "$H" import nccl-tests "$D/nccl_all_gather_2xH200.txt" --nic-rails 65; has "$tmp/err" "--nic-rails"
expect 2 "$H" import nccl-tests "$D/nccl_all_gather_2xH200.txt" --nic-rails x; has "$tmp/err" "--nic-rails"
expect 0 "$H" import nccl-tests "$D/nccl_all_gather_2xH200.txt" --nic-rails 8 -o "$tmp/prof8.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["gpus"][0]["nic"]["rails"] == 8' "$tmp/prof8.json" \
  && ok || bad "profile nic rails"

# megatron-log -> run.json -> validate --run
expect 0 "$H" import megatron-log "$D/megatron_gpt2_1gpu.log" -o "$tmp/run.json"
has "$tmp/out" "12 layers, hidden 768, 12 heads, ffn 3072, vocab 50304, seq 512, fp16"
has "$tmp/out" "tp 1, pp 1, dp 1, micro batch 1, global batch 16"
expect 0 "$H" validate --run "$tmp/run.json" --cluster dgx-a100-1node -o "$tmp/cmp.json"
has "$tmp/out" "verdict: "
python3 - "$tmp/run.json" "$tmp/cmp.json" <<'P' && ok || bad "run.json / comparison"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["measured"]["iterations_s"] == [0.8207, 0.8218, 0.8498, 0.9045], r["measured"]["iterations_s"]
c = json.load(open(sys.argv[2]))
assert c["verdict"] in ("ok", "off") and c["iterations"]["n"] == 4
assert abs(c["iterations"]["median_s"] - 0.8358) < 1e-12
P
expect 2 "$H" validate --run "$tmp/run.json";     has "$tmp/err" "--cluster"
expect 2 "$H" import megatron-log "$D/megatron_mixtral_iterations.log"; has "$tmp/err" "no Megatron-LM arguments block"
sed '/num_layers/d' "$D/megatron_gpt2_1gpu.log" >"$tmp/nolayers.log"
expect 2 "$H" import megatron-log "$tmp/nolayers.log"; has "$tmp/err" "nolayers.log:5-42: arguments block: no num_layers"

# torch-profiler -> measured.json (+ measurements for calibrate)
expect 0 "$H" import torch-profiler "$D/torch_cpu_step.json" -o "$tmp/tmeas.json" \
  --measurements-out "$tmp/tms.json" --gpu A100-SXM4-80GB
has "$tmp/out" "CPU trace"
has "$tmp/out" "2 steps"
has "$tmp/out" "  gemm   fp32        64      512      256      223.421"
expect 0 "$H" calibrate "$tmp/tms.json" --dtype fp32 -o "$tmp/tprof.json"
expect 0 "$H" validate --measured "$tmp/tmeas.json"
has "$tmp/out" "step compute"
has "$tmp/out" "verdict: none"
expect 2 "$H" import torch-profiler "$D/torch_cpu_step.json" --measurements-out "$tmp/x.json"; has "$tmp/err" "--gpu"
head -c 5000 "$D/torch_cpu_step.json" >"$tmp/cut.json"
expect 2 "$H" import torch-profiler "$tmp/cut.json"; has "$tmp/err" "cut.json: malformed JSON at line"

# validate: the iteration alone is a run; repeated runs pool
echo '{"iteration_time_s": 31.0}' >"$tmp/m1.json"
expect 0 "$H" validate --measured "$tmp/m1.json"; has "$tmp/out" "verdict: none"
echo '{"iterations_s": [1.0, 1.2, 0.9]}' >"$tmp/a.json"
echo '{"iterations_s": [1.1, 1.05]}' >"$tmp/b.json"
echo '{"iteration_time_s": 1.04}' >"$tmp/r.json"
expect 0 "$H" validate --report "$tmp/r.json" --measured "$tmp/a.json" "$tmp/b.json" --json
python3 - "$tmp/out" <<'P' && ok || bad "spread over runs"
import json, sys
c = json.load(open(sys.argv[1]))
# pooled 0.9 1.0 1.05 1.1 1.2: median 1.05, quartiles 1.0 and 1.1
assert c["runs"] == 2 and c["iterations"]["n"] == 5
assert abs(c["iterations"]["median_s"] - 1.05) < 1e-12
assert abs(c["iterations"]["q1_s"] - 1.0) < 1e-12 and abs(c["iterations"]["q3_s"] - 1.1) < 1e-12
assert c["verdict"] == "ok" and abs(c["iteration_error"] - (1.04 - 1.05) / 1.05) < 1e-12
# run medians 1.0 and 1.075
assert abs(c["run_medians"]["median_s"] - 1.0375) < 1e-12
P
expect 0 "$H" validate --report "$tmp/r.json" --measured "$tmp/m1.json"; has "$tmp/out" "verdict: off iteration error -96.6%"
expect 2 "$H" validate --report "$tmp/r.json" --measured "$tmp/m1.json" --tolerance -1; has "$tmp/err" "--tolerance"

# issue #32: a restarted job's log (two arguments blocks) was read with the
# first plan and both runs' iterations pooled; now refused unless --run picks one
sed 's/^  data_parallel_size \.* 1$/  data_parallel_size .............................. 2/; s/^  world_size \.* 1$/  world_size ...................................... 2/' \
  "$D/megatron_gpt2_1gpu.log" >"$tmp/run2.log"
cat "$D/megatron_gpt2_1gpu.log" "$tmp/run2.log" >"$tmp/restarted.log"
expect 2 "$H" import megatron-log "$tmp/restarted.log"
has "$tmp/err" "restarted.log: 2 runs (a restarted job: arguments blocks at lines 5, 59)"
has "$tmp/err" "--run N (1..2)"
expect 0 "$H" import megatron-log "$tmp/restarted.log" --run 2 -o "$tmp/run2-of-2.json"
expect 0 "$H" import megatron-log "$tmp/run2.log" -o "$tmp/run2-alone.json"
python3 - "$tmp/run2-of-2.json" "$tmp/run2-alone.json" <<'P' && ok || bad "--run 2 reads the second run alone"
import json, sys
r, alone = (json.load(open(f)) for f in sys.argv[1:3])
assert r["plan"]["dp"] == 2 and r["world_size"] == 2, r["plan"]
assert r["measured"]["iterations_s"] == alone["measured"]["iterations_s"], r["measured"]
assert len(r["measured"]["iterations_s"]) == 4, r["measured"]["iterations_s"]
P
expect 0 "$H" import megatron-log "$tmp/restarted.log" --run 1; has "$tmp/out" "plan: tp 1, pp 1, dp 1"
expect 2 "$H" import megatron-log "$tmp/restarted.log" --run 3; has "$tmp/err" "--run 3: the log has 2 runs"
expect 2 "$H" import megatron-log "$D/megatron_gpt2_1gpu.log" --run 0; has "$tmp/err" "--run"
# a key given twice in one block: both lines named
sed 's/^  world_size \(.*\)$/  world_size \1\n  num_layers ...................................... 48/' \
  "$D/megatron_gpt2_1gpu.log" >"$tmp/dupkey.log"
expect 2 "$H" import megatron-log "$tmp/dupkey.log"
has "$tmp/err" "dupkey.log:43: arguments block: num_layers given twice (lines 27 and 43)"
# tp x pp past int32 wrapped to "world_size": 0 with exit 0
sed 's/^  tensor_model_parallel_size \.* 1$/  tensor_model_parallel_size ...................... 65536/; s/^  pipeline_model_parallel_size \.* 1$/  pipeline_model_parallel_size .................... 65536/; /^  world_size/d' \
  "$D/megatron_gpt2_1gpu.log" >"$tmp/huge.log"
expect 2 "$H" import megatron-log "$tmp/huge.log"
has "$tmp/err" "tensor_model_parallel_size 65536 x pipeline_model_parallel_size 65536: more than 1048576 GPUs"
# torch-profiler: a step of 0 us was written as iteration_time_s 0 (exit 0)
printf '{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 5, "dur": 0}]}\n' >"$tmp/zero-step.json"
expect 2 "$H" import torch-profiler "$tmp/zero-step.json" -o "$tmp/zero-m.json"
has "$tmp/err" "zero-step.json: ProfilerStep#3 (ts 5.000 us): duration 0 us"
[ ! -e "$tmp/zero-m.json" ] && ok || bad "zero-m.json written"
# nccl-tests: a row whose size does not parse dropped out of the fit
sed '11s/^        1024 /       1024x /' "$D/nccl_all_gather_2xH200.txt" >"$tmp/all_gather_badsize.txt"
expect 2 "$H" import nccl-tests "$tmp/all_gather_badsize.txt" --coll all_gather
has "$tmp/err" "all_gather_badsize.txt:11: column 1 (size, bytes)"
# a subnormal measured time: refused, no "+inf%"
printf '{"iteration_time_s": 5e-324}\n' >"$tmp/sub.json"
expect 2 "$H" validate --report "$tmp/r.json" --measured "$tmp/sub.json"
has "$tmp/err" "sub.json: iteration_time_s: must be a positive normal number (not subnormal)"

echo "import CLI: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
