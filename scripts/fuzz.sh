#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/fuzz_*.c) for a bounded time, one after
# the other, under ASan + UBSan (docs/robustness.md).
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default 60, all
#
# Builds build-fuzz/ with clang (HS_FUZZ=ON, HS_SANITIZE=ON) when needed. Each
# target starts from its seed corpus tests/fuzz/corpus/<t>/ plus the regression
# inputs tests/fuzz/regress/<t>/, with the dictionary tests/fuzz/dict/<t>.dict when
# there is one, and grows a working corpus in
# build-fuzz/work/<t>/ (kept between runs). A crash, leak, sanitizer report
# or timeout (-timeout=10 s per input) is copied into tests/fuzz/regress/<t>/, so
# that it is replayed by ctest (fuzz_replay_<t>) from then on, and the script
# exits 1. Prints one summary line per target: executions, execs/s, coverage
# (cov = edges, ft = features) and corpus size, from libFuzzer's log.
#   FUZZ_BUILD_DIR  build directory (default build-fuzz)
#   FUZZ_NICE       nice level for the fuzzer (default 0)
#   FUZZ_NO_BUILD=1 use the fuzzers already built
#   FUZZ_LOG_DIR    where logs go (default $FUZZ_BUILD_DIR/logs)
#   FUZZ_JOBS       targets fuzzed at a time (default 1; CI: nproc), each for
#                   SECONDS_PER_TARGET; the summary keeps the target order
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
B=${FUZZ_BUILD_DIR:-build-fuzz}
LOGS=${FUZZ_LOG_DIR:-$B/logs}

if ! command -v clang >/dev/null; then
  echo "fuzz: clang not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 2
fi
if [ ! -f "$B/CMakeCache.txt" ]; then
  CC=clang cmake -S . -B "$B" -DHS_FUZZ=ON -DHS_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
[ "${FUZZ_NO_BUILD:-0}" = "1" ] || cmake --build "$B" -j "$(nproc)" --target fuzz_all >/dev/null

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in tests/fuzz/fuzz_*.c; do t=$(basename "$f" .c); targets+=("${t#fuzz_}"); done
fi

export HETSIM_DATA=$PWD
# Leaks count as crashes; UBSan reports abort (HS_SANITIZE builds with
# -fno-sanitize-recover=undefined).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$LOGS"
# One target: fuzz it, save any crash input, and write its summary line to
# $LOGS/$t.summary (a first word "CRASH" in the result marks a failure).
fuzz_one() {
  local t=$1 bin=$B/fuzz/fuzz_$1
  local work=$B/work/$1 art=$B/artifacts/$1 log=$LOGS/$1.log sum=$LOGS/$1.summary
  if [ ! -x "$bin" ]; then
    echo "fuzz: no target $bin" >&2
    printf '%-12s %8s %10s %9s %7s %7s %7s  %s\n' "$t" - - - - - - "CRASH (no target $bin)" >"$sum"
    return
  fi
  mkdir -p "$work" "$art" "tests/fuzz/regress/$t"
  local seeds=(tests/fuzz/corpus/$t)
  [ -n "$(ls -A "tests/fuzz/regress/$t" 2>/dev/null)" ] && seeds+=("tests/fuzz/regress/$t")
  local dict=()
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="tests/fuzz/dict/$t.dict")
  local start rc=0
  start=$(date +%s)
  nice -n "${FUZZ_NICE:-0}" "$bin" "$work" "${seeds[@]}" -max_total_time="$SECS" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" \
    >"$log" 2>&1 || rc=$?
  local secs=$(( $(date +%s) - start ))
  local last execs eps cov ft corp result=ok
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  eps=$(grep -oE '^stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo "?")
  ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo "?")
  corp=$(echo "$last" | grep -oE 'corp: [0-9]+' | grep -oE '[0-9]+' || echo "?")
  if [ "$rc" -ne 0 ]; then
    result="CRASH (exit $rc, log $log)"
    for a in "$art"/*; do
      [ -f "$a" ] || continue
      cp "$a" "tests/fuzz/regress/$t/$(basename "$a")"
      result="$result; saved tests/fuzz/regress/$t/$(basename "$a")"
    done
  fi
  printf '%-12s %8s %10s %9s %7s %7s %7s  %s\n' "$t" "$secs" "$execs" "$eps" "$cov" "$ft" "$corp" "$result" >"$sum"
}

# FUZZ_JOBS targets at a time (each a single-threaded libFuzzer process with
# its own SECS): the same fuzzing per target in 1/FUZZ_JOBS of the wall time.
jobs=${FUZZ_JOBS:-1}
[ "$jobs" -ge 1 ] 2>/dev/null || { echo "fuzz: FUZZ_JOBS must be a positive integer, got '$jobs'" >&2; exit 2; }
for t in "${targets[@]}"; do rm -f "$LOGS/$t.summary"; done
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true
status=0
printf '%-12s %8s %10s %9s %7s %7s %7s  %s\n' target seconds execs execs/s cov ft corpus result
for t in "${targets[@]}"; do
  if [ -f "$LOGS/$t.summary" ]; then
    cat "$LOGS/$t.summary"
    grep -q '  CRASH' "$LOGS/$t.summary" && status=1
  else
    printf '%-12s %8s %10s %9s %7s %7s %7s  %s\n' "$t" - - - - - - "CRASH (no summary: the run died)"
    status=1
  fi
done
exit $status
