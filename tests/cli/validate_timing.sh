#!/usr/bin/env bash
# ctest label "timing" (left out of the default suite, run alone, and once
# beside a CPU hog in CI): the README's CPU validation example repeated in 5
# rounds of fresh processes (bench/bench_validate_spread.sh).
#
# The machine's speed moves 2x within a second on the 2-core build VM, so a
# round's plain error measures the machine as much as the model: 40 rounds
# beside a hog (2026-11-29) ranged from 0.53x to 1.84x predicted/measured,
# and CI's run on 2026-11-28 had 4 of 5 rounds at -26% to -31%. The speed
# probe (docs/validation.md, "Machine speed") times the same GEMM on every
# device thread during the calibration and around each replayed iteration;
# scaled by it, the same 40 rounds had errors from -12.7% to +16.4% (median
# -2.4%, IQR -4.7% to +1.3%). Idle, the replay's speed followed the probe
# less closely (8 rounds of 5 iterations: -8.5% to +33.5%), so the bench
# replays 20 iterations (8 idle rounds: -7.3% to +15.7%; 6 beside a hog:
# -5.3% to +7.3%), and the replay's probe now runs right after each
# thread's work instead of after the end barrier (8 rounds beside a hog:
# -4.5% to +1.2%; 16 idle rounds: medians +3.9% and -0.4%, single rounds
# -7.3% to +33.8%). The accuracy claim is on the speed-adjusted error: the
# median of the 5 rounds within 20% and every round within 40%; and every
# plain prediction within a factor of 3 either way (uncalibrated the loop
# is 10x off).
set -u
H=${HETSIM_BIN:?}
root=${HETSIM_DATA:?}
. "$(dirname "$0")/lib.bash"
OUT="$tmp/rounds.csv" HETSIM_BIN="$H" bash "$root/bench/bench_validate_spread.sh" 5 || {
  echo "FAIL: the validation loop did not run"; exit 1; }
python3 - "$tmp/rounds.csv" <<'PY'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 5, rows
e = [float(r["iteration_error"]) for r in rows]
a = [float(r["adjusted_error"]) for r in rows]
s = [float(r["speed_ratio"]) for r in rows]
assert all(x > 0 for x in s), f"no speed probe in a round: {s}"
assert all(math.isfinite(x) for x in a), f"adjusted errors {a}"
assert abs(statistics.median(a)) < 0.20, f"median speed-adjusted error {statistics.median(a):+.3f}"
assert all(abs(x) < 0.40 for x in a), f"speed-adjusted errors {a}"
# predicted / measured = 1 + error, within [1/3, 3]
assert all(1 / 3 < 1 + x < 3 for x in e), f"errors {e}"
print("validate timing: 4 passed, 0 failed")
PY
