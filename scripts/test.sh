#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite with ctest. Nothing in it
# depends on how busy the machine is; the live timing checks (ctest label
# "timing": the CPU validation loop's predicted-vs-measured figures) are left
# out and run with HS_TIMING=1 (alone, as CI does beside a CPU hog).
#   HS_SANITIZE=1 bash scripts/test.sh   the same under ASan + UBSan (build-asan/)
#   HS_TIMING=1 bash scripts/test.sh     only the timing label, one test at a time
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
[ "${HS_SANITIZE:-0}" = "1" ] && BUILD_DIR=${BUILD_DIR_ASAN:-build-asan}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "${HS_TIMING:-0}" = "1" ]; then
  ctest --test-dir "$BUILD_DIR" --output-on-failure -L timing
else
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" -LE timing
fi
