#!/usr/bin/env bash
# The CPU validation loop repeated: N rounds of calibrate (microbenchmarks) ->
# simulate -> replay -> validate, each round in fresh processes, on the
# README's example (tiny GPT, two-stage 1F1B pipeline on two CPU-thread
# devices). Prints each round's iteration error and the spread (median,
# interquartile range, min, max): the figure to quote, not one lucky run.
# Each round calibrates again after its replay and predicts the same plan
# from that second profile: `drift` = (after - before) / before says how much
# the machine's speed moved while the round ran (a replay between two
# calibrations that disagree measured the machine's load, not the model).
# `speed` is the speed probe's ratio (replay / calibration, the same GEMM
# timed on every device thread in both) and `adjusted` the iteration error
# with each replayed iteration scaled back to the calibration's speed
# (docs/validation.md, "Machine speed").
# Each replay times 20 iterations (ITERATIONS=...; the README's single
# example keeps replay's default 5): the machine's speed moves within a
# replay, and the median of more iterations follows the probe better (8
# idle rounds, 2026-11-29: speed-adjusted errors -8.5%..+33.5% with 5,
# -7.3%..+15.7% with 20).
#   bash bench/bench_validate_spread.sh [N=5] [BUILD_DIR=build]
# Writes the rounds as CSV to $OUT (default: a temporary file) for callers
# (tests/cli/validate_timing.sh asserts on it).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
H=${HETSIM_BIN:-${2:-build}/hetsim}
D=tests/data/validate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${OUT:-$tmp/rounds.csv}
echo "round,gemm_r2,predicted_s,measured_s,iteration_error,predicted_after_s,drift,speed_ratio,adjusted_error" >"$out"
M=(--model "$D/tiny-gpt.json" --cluster "$D/cpu2.json")
for i in $(seq 1 "$n"); do
  "$H" calibrate --microbench --backend cpu --cluster "$D/cpu2.json" --quick --repeats 5 -o "$tmp/profile.json" >"$tmp/cal.txt"
  "$H" simulate "${M[@]}" --plan "$D/pipeline2.json" --profile "$tmp/profile.json" -o "$tmp/report.json" >/dev/null
  "$H" replay --backend cpu "${M[@]}" --plan "$D/pipeline2.json" --profile "$tmp/profile.json" --iterations "${ITERATIONS:-20}" \
    -o "$tmp/measured.json" >/dev/null
  "$H" validate --report "$tmp/report.json" --measured "$tmp/measured.json" -o "$tmp/cmp.json" >/dev/null
  "$H" calibrate --microbench --backend cpu --cluster "$D/cpu2.json" --quick --repeats 5 -o "$tmp/after.json" >/dev/null
  "$H" simulate "${M[@]}" --plan "$D/pipeline2.json" --profile "$tmp/after.json" -o "$tmp/report_after.json" >/dev/null
  python3 - "$i" "$tmp/cal.txt" "$tmp/report.json" "$tmp/measured.json" "$tmp/cmp.json" "$tmp/report_after.json" >>"$out" <<'PY'
import json, re, sys
r2 = re.search(r"gemm \d+ points R2 ([0-9.]+)", open(sys.argv[2]).read())
rep = json.load(open(sys.argv[3])); meas = json.load(open(sys.argv[4])); cmp = json.load(open(sys.argv[5]))
after = json.load(open(sys.argv[6]))["iteration_time_s"]
before = rep["iteration_time_s"]
print(f"{sys.argv[1]},{r2.group(1) if r2 else ''},{before:.6g},"
      f"{meas['iteration_time_s']:.6g},{cmp['iteration_error']:.4f},{after:.6g},{(after - before) / before:.4f},"
      f"{cmp.get('speed_ratio', 0):.4f},{cmp.get('iteration_error_speed_adjusted', float('nan')):.4f}")
PY
done
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    print(f"round {r['round']}: GEMM fit R2 {r['gemm_r2']}, predicted {r['predicted_s']} s, "
          f"measured {r['measured_s']} s, error {100 * float(r['iteration_error']):+.1f}%, "
          f"drift {100 * float(r['drift']):+.1f}%, speed {float(r['speed_ratio']):.2f}x, "
          f"adjusted {100 * float(r['adjusted_error']):+.1f}%")
for name, key in (("iteration error", "iteration_error"), ("speed-adjusted error", "adjusted_error")):
    e = sorted(100 * float(r[key]) for r in rows)
    q = statistics.quantiles(e, n=4) if len(e) >= 2 else [e[0]] * 3
    print(f"{name} over {len(e)} rounds: median {statistics.median(e):+.1f}%, "
          f"IQR {q[0]:+.1f}% to {q[2]:+.1f}%, min {e[0]:+.1f}%, max {e[-1]:+.1f}%")
PY
