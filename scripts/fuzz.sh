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
status=0
printf '%-12s %8s %10s %9s %7s %7s %7s  %s\n' target seconds execs execs/s cov ft corpus result
for t in "${targets[@]}"; do
  bin=$B/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz: no target $bin" >&2; status=1; continue; }
  work=$B/work/$t
  art=$B/artifacts/$t
  mkdir -p "$work" "$art" "tests/fuzz/regress/$t"
  log=$LOGS/$t.log
  seeds=(tests/fuzz/corpus/$t)
  [ -n "$(ls -A "tests/fuzz/regress/$t" 2>/dev/null)" ] && seeds+=("tests/fuzz/regress/$t")
  dict=()
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="tests/fuzz/dict/$t.dict")
  start=$(date +%s)
  rc=0
  nice -n "${FUZZ_NICE:-0}" "$bin" "$work" "${seeds[@]}" -max_total_time="$SECS" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" \
    >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  eps=$(grep -oE '^stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo "?")
  ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo "?")
  corp=$(echo "$last" | grep -oE 'corp: [0-9]+' | grep -oE '[0-9]+' || echo "?")
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="CRASH (exit $rc, log $log)"
    status=1
    for a in "$art"/*; do
      [ -f "$a" ] || continue
      cp "$a" "tests/fuzz/regress/$t/$(basename "$a")"
      result="$result; saved tests/fuzz/regress/$t/$(basename "$a")"
    done
  fi
  printf '%-12s %8s %10s %9s %7s %7s %7s  %s\n' "$t" "$secs" "$execs" "$eps" "$cov" "$ft" "$corp" "$result"
done
exit $status
