#!/usr/bin/env bash
# run_gpu_validation.sh GPU [BUILD_DIR] - the on-hardware validation of
# issue 5, for a machine with one NVIDIA GPU (nvcc, cuBLAS, NCCL, MPI
# installed). GPU is a catalog name (hetsim list gpus), e.g. H100-SXM5-80GB.
#
#   1. builds hetsim with the CUDA backend (-DHS_WITH_CUDA=ON);
#   2. runs the microbenchmarks and fits the device profile
#      (measurements.json, profile.json);
#   3. validates single-GPU plans of three models and several microbatch
#      counts end to end (simulate with the profile, replay, validate), and
#      the two stages of a two-stage GPT-3 1.3B plan, each in isolation;
#   4. writes everything under validate/results/<GPU>/ with errors.md, the
#      table for the README (median per-GEMM error, iteration error).
set -euo pipefail
GPU=${1:?usage: validate/run_gpu_validation.sh GPU-CATALOG-NAME [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build-cuda}
out=$root/validate/results/$GPU
mkdir -p "$out/runs"
cmake -S "$root" -B "$build" -DHS_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target hetsim >/dev/null
H=$build/hetsim
nvidia-smi -L >"$out/device.txt" 2>&1 || true

# a one-node cluster of this GPU (2 devices: the 2-stage plan's stages are
# timed one at a time on the one GPU that is here)
cat >"$out/cluster.json" <<J
{"name": "1node-$GPU", "description": "validation host: one node of $GPU",
 "sites": [{"name": "local", "nodes": [{"count": 1, "gpu": "$GPU", "gpus_per_node": 2}]}]}
J

"$H" calibrate --microbench --backend cuda --cluster "$out/cluster.json" \
  --measurements-out "$out/measurements.json" -o "$out/profile.json" | tee "$out/calibrate.txt"

# plan FILE MODEL MICROBATCH_SIZE MICROBATCHES [CUT]: one device, or two stages cut at op CUT
plan() {
  local n_ops
  n_ops=$("$H" show model "$2" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_ops"])')
  python3 - "$1" "$n_ops" "$3" "$4" "${5:-0}" <<'P'
import json, sys
path, n, b, m, cut = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
st = [{"ops": [0, n], "replicas": [{"devices": [0]}]}] if cut == 0 else \
     [{"ops": [0, cut], "replicas": [{"devices": [0]}]}, {"ops": [cut, n], "replicas": [{"devices": [1]}]}]
json.dump({"strategy": "manual", "schedule": "1f1b", "precision": "bf16",
           "pipelines": [{"microbatch_size": b, "microbatches": m, "stages": st}]}, open(path, "w"))
P
}

echo "| model | plan | predicted s | measured s | iteration error | median GEMM error |" >"$out/errors.md"
echo "| --- | --- | ---: | ---: | ---: | ---: |" >>"$out/errors.md"
run() { # NAME MODEL B M [STAGE CUT]
  local name=$1 model=$2 b=$3 m=$4 stage=${5:-} cut=${6:-0}
  local d="$out/runs/$name"
  mkdir -p "$d"
  plan "$d/plan.json" "$model" "$b" "$m" "$cut"
  "$H" simulate --model "$model" --cluster "$out/cluster.json" --plan "$d/plan.json" \
    --profile "$out/profile.json" -o "$d/report.json" --trace "$d/sim-trace.json" >"$d/simulate.txt"
  local extra=()
  [ -n "$stage" ] && extra=(--stage "$stage")
  "$H" replay --backend cuda --model "$model" --cluster "$out/cluster.json" --plan "$d/plan.json" \
    --profile "$out/profile.json" --iterations 10 --warmup 3 "${extra[@]}" -o "$d/measured.json" >"$d/replay.txt"
  "$H" validate --report "$d/report.json" --measured "$d/measured.json" -o "$d/comparison.json" \
    --trace "$d/both-trace.json" --sim-trace "$d/sim-trace.json" | tee "$d/validate.txt"
  python3 - "$d/comparison.json" "$name" "$model" "$b" "$m" "$stage" >>"$out/errors.md" <<'P'
import json, sys
c = json.load(open(sys.argv[1])); name, model, b, m, stage = sys.argv[2:7]
rows = {r["what"]: r for r in c["rows"]}
if stage:
    f, w = rows["stage 0.%s fwd / mb" % stage], rows["stage 0.%s bwd / mb" % stage]
    pred, meas = f["predicted_s"] + w["predicted_s"], f["measured_s"] + w["measured_s"]
    what = "stage %s alone, fwd+bwd per microbatch" % stage
else:
    pred, meas = rows["iteration"]["predicted_s"], rows["iteration"]["measured_s"]
    what = "1 GPU, %s x %s" % (b, m)
print("| %s | %s | %.4f | %.4f | %+.1f%% | %.1f%% |" % (model.split("/")[-1], what, pred, meas,
      100 * (pred - meas) / meas, 100 * c.get("gemm_median_abs_error", float("nan"))))
P
}
G2=$root/tests/data/models/gpt2/config.json
run gpt2-b8-m4 "$G2" 8 4
run gpt2-b4-m8 "$G2" 4 8
run gpt2-medium-b4-m4 "$root/validate/gpu-models/gpt2-medium.json" 4 4
run tinyllama-b1-m4 "$root/validate/gpu-models/tinyllama-1.1b.json" 1 4
run tinyllama-b2-m8 "$root/validate/gpu-models/tinyllama-1.1b.json" 2 8
n13=$("$H" show model gpt3-1.3b --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_ops"])')
run gpt3-1.3b-pp2-stage0 gpt3-1.3b 2 8 0 $((n13 / 2))
run gpt3-1.3b-pp2-stage1 gpt3-1.3b 2 8 1 $((n13 / 2))
cat "$out/errors.md"
