#!/usr/bin/env bash
# ctest label "timing" (left out of the default suite, run alone, and once
# beside a CPU hog in CI): the README's CPU validation example repeated in 5
# rounds of fresh processes (bench/bench_validate_spread.sh). Single rounds
# beside a CPU hog swing with the machine's speed between the calibration
# and the replay: 40 rounds on the 2-core build VM (2026-11-28) had a median
# of -1.4% and an IQR of -10% to +8%, but single rounds from -36% to +70%
# (predicted/measured 0.64 to 1.70), and CI's own run had one at +72.7%
# (1.73x), past the 67% this test used to allow per round. So the median
# round carries the accuracy claim (within 25%: 3 of 5 rounds past 25% on
# one side, about 1 in 800 at the measured spread), and each round only has
# to be within a factor of 3 either way (uncalibrated the loop is 10x off).
set -u
H=${HETSIM_BIN:?}
root=${HETSIM_DATA:?}
. "$(dirname "$0")/lib.bash"
OUT="$tmp/rounds.csv" HETSIM_BIN="$H" bash "$root/bench/bench_validate_spread.sh" 5 || {
  echo "FAIL: the validation loop did not run"; exit 1; }
python3 - "$tmp/rounds.csv" <<'PY'
import csv, statistics, sys
e = [float(r["iteration_error"]) for r in csv.DictReader(open(sys.argv[1]))]
assert len(e) == 5, e
assert abs(statistics.median(e)) < 0.25, f"median error {statistics.median(e):+.3f}"
# predicted / measured = 1 + error, within [1/3, 3]
assert all(1 / 3 < 1 + x < 3 for x in e), f"errors {e}"
print("validate timing: 2 passed, 0 failed")
PY
