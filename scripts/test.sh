#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite with ctest.
#   HS_SANITIZE=1 bash scripts/test.sh   the same under ASan + UBSan (build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
[ "${HS_SANITIZE:-0}" = "1" ] && BUILD_DIR=${BUILD_DIR_ASAN:-build-asan}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
