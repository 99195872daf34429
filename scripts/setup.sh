#!/usr/bin/env bash
# Installs what the build needs (Debian packages, skipped when present),
# configures and builds hetsim in $BUILD_DIR (default build/).
#   HS_SANITIZE=1  build with AddressSanitizer + UBSan in build-asan/
#   HS_FAULT_INJECT=1  also compile allocation-failure injection in
#                  (HS_FAIL_AT=n fails the n-th allocation; inert otherwise:
#                  docs/robustness.md), as CI builds build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(cmake make gcc pkg-config libglpk-dev libigraph-dev libgsl-dev libcjson-dev
      libopenblas-dev libopenmpi-dev openmpi-bin jq universal-ctags
      clang libclang-rt-14-dev
      python3-nbformat python3-nbclient python3-ipykernel python3-matplotlib python3-pandas
      python3-venv python3-pip python3-setuptools python3-wheel python3-pytest)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

SAN=OFF
BUILD_DIR=${BUILD_DIR:-build}
if [ "${HS_SANITIZE:-0}" = "1" ]; then
  SAN=ON
  BUILD_DIR=${BUILD_DIR_ASAN:-build-asan}
fi
FAULT=OFF
[ "${HS_FAULT_INJECT:-0}" = "1" ] && FAULT=ON
cmake -S . -B "$BUILD_DIR" -DHS_SANITIZE=$SAN -DHS_FAULT_INJECT=$FAULT -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
