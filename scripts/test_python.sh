#!/usr/bin/env bash
# The Python package (python/, docs/python.md): a virtual environment over
# Debian's Python (its pip refuses system-wide installs, PEP 668; the venv
# sees Debian's pandas, pytest, nbclient), the package installed from this
# tree, pytest against the CLI in $BUILD_DIR, a wheel in a fresh venv, the
# README's install command run literally in a fresh venv (pip bringing the
# declared dependencies) with the README's python example, and the example
# notebook executed headless under the kernel named hetsim that the
# README's kernel command installs. Idempotent: a second run reuses the venv and the build.
#   BUILD_DIR   CMake build with hetsim and libhetsim.so (default build/;
#               made by scripts/setup.sh when missing)
#   HS_VENV     the virtual environment (default .venv/)
#   HS_SANITIZE=1  pytest against the ASan + UBSan libhetsim of build-asan/
# Arguments go to pytest (e.g. -k memory).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
VENV=${HS_VENV:-.venv}
PY=/usr/bin/python3   # Debian's, not a pyenv or conda one earlier in PATH

if [ ! -x "$BUILD_DIR/hetsim" ] || [ ! -f "$BUILD_DIR/libhetsim.so" ]; then
  BUILD_DIR=$BUILD_DIR bash scripts/setup.sh
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$VENV"
# --no-build-isolation: build with Debian's setuptools/wheel (no download);
# HETSIM_CMAKE_BUILD_DIR: reuse the project's build instead of a second one
HETSIM_CMAKE_BUILD_DIR="$BUILD_DIR" "$VENV/bin/pip" install -q --no-build-isolation --no-deps \
  --disable-pip-version-check ./python
export HETSIM_CLI="$PWD/$BUILD_DIR/hetsim"

# pytest exits 5 when it collected no test: the suite went missing, a failure
set +e
if [ "${HS_SANITIZE:-0}" = "1" ]; then
  # the ASan + UBSan libhetsim of build-asan/ loaded into Python (the runtime
  # preloaded); memory errors in C fail the run. Leaks are LeakSanitizer's
  # job in the C tests (Python itself does not free everything at exit), and
  # the RSS test is left out: ASan's quarantine keeps freed memory resident.
  asan_dir=${BUILD_DIR_ASAN:-build-asan}
  [ -f "$asan_dir/libhetsim.so" ] || HS_SANITIZE=1 bash scripts/setup.sh
  LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    HETSIM_LIB="$PWD/$asan_dir/libhetsim.so" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests -k "not memory" "$@"
else
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests "$@"
fi
rc=$?
set -e
if [ $rc -eq 5 ]; then
  echo "test_python: pytest collected no tests in python/tests" >&2
  exit 1
elif [ $rc -ne 0 ]; then
  exit $rc
fi

# What follows uses the ordinary build ($BUILD_DIR) whatever HS_SANITIZE
# says, so the sanitizer run stops here instead of repeating it (CI runs
# this script twice: plain, then HS_SANITIZE=1).
[ "${HS_SANITIZE:-0}" = "1" ] && exit 0

# A wheel built the same way installs into a fresh venv (no system site
# packages, no source tree on its paths) and simulates from its own copy of
# the catalogs: what another machine with the same Debian libraries gets.
wdir=$(mktemp -d)
trap 'rm -rf "$wdir"' EXIT
HETSIM_CMAKE_BUILD_DIR="$BUILD_DIR" "$VENV/bin/pip" wheel -q --no-build-isolation --no-deps \
  --disable-pip-version-check -w "$wdir/dist" ./python
"$PY" -m venv "$wdir/venv"
"$wdir/venv/bin/pip" install -q --no-deps --disable-pip-version-check "$wdir"/dist/hetsim-*.whl
whl=$(ls "$wdir"/dist/hetsim-*.whl)
(cd "$wdir" && env -u HETSIM_DATA -u HETSIM_LIB WHEEL="${whl##*/}" "$wdir/venv/bin/python" - <<'PY')
import os, hetsim
site = os.path.dirname(hetsim.__file__)
assert hetsim.library_path().startswith(site), hetsim.library_path()
assert os.environ["HETSIM_DATA"].startswith(site), os.environ["HETSIM_DATA"]
r = hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", tp=2, pp=2)
print(f"test_python: {os.environ['WHEEL']} in a fresh venv: {r['plan']}: "
      f"{r['iteration_time_s']:.6f} s per iteration")
PY

# The README's install command, literally, in a fresh venv (no system site
# packages): pip brings pandas and numpy (and the notebook extra's
# matplotlib, ipykernel, nbclient) from the package's own dependencies, as it
# does for a user with a pyenv python3 or Debian's. Run with the python3 on
# PATH (a pyenv shim where pyenv is set up) and, when that is another
# interpreter, with Debian's /usr/bin/python3 too. The venv imports hetsim
# and runs compare; then the README's kernel command installs a Jupyter
# kernel named hetsim (into a private JUPYTER_DATA_DIR, not ~/.local) and
# the example notebook runs under it.
readme_line() {  # the README line starting with $1, .venv renamed to $2
  local line
  line=$(grep -m1 -E "^$1" README.md) || { echo "test_python: README.md has no line starting with '$1'" >&2; exit 1; }
  printf '%s\n' "${line//.venv/$2}"
}
install_cmd=$(readme_line 'python3 -m venv ' "$wdir/readme-venv")
kernel_cmd=$(readme_line '\.venv/bin/python -m ipykernel install ' "$wdir/readme-venv")
readme_venv_check() {  # $1: python3 to put first on PATH (its dir), $2: label
  rm -rf "$wdir/readme-venv"
  echo "test_python: README: $install_cmd (python3 = $2)"
  PATH="$1:$PATH" HETSIM_CMAKE_BUILD_DIR="$BUILD_DIR" PIP_DISABLE_PIP_VERSION_CHECK=1 \
    bash -c "$install_cmd" >"$wdir/pip.log" 2>&1 || { cat "$wdir/pip.log" >&2; exit 1; }
  (cd "$wdir" && env -u HETSIM_DATA -u HETSIM_LIB "$wdir/readme-venv/bin/python" - "$2" <<'PY')
import sys, hetsim
df = hetsim.compare("gpt3-1.3b", "dgx-a100-1node", ["data-parallel", "megatron"])
assert list(df["strategy"]) == ["data-parallel", "megatron"], df
assert (df["iteration_s"] > 0).all(), df
print(f"test_python: README venv ({sys.argv[1]}, Python {sys.version.split()[0]}): hetsim.compare "
      f"gives {len(df)} rows, megatron {df['iteration_s'].iloc[1]:.4f} s")
PY
  # the README's ```python example, as shown
  awk '/^```python$/ { on = 1; next } /^```$/ { on = 0 } on' README.md >"$wdir/example.py"
  [ -s "$wdir/example.py" ] || { echo "test_python: README.md has no python example" >&2; exit 1; }
  (cd "$wdir" && env -u HETSIM_DATA -u HETSIM_LIB "$wdir/readme-venv/bin/python" example.py >"$wdir/example.out" 2>&1) \
    || { echo "test_python: the README's python example failed:" >&2; cat "$wdir/example.out" >&2; exit 1; }
  echo "test_python: the README's python example ran ($(wc -l <"$wdir/example.out") lines of output)"
}
py_path=$(command -v python3)
readme_venv_check "$(dirname "$py_path")" "$py_path"
if [ "$(readlink -f "$py_path")" != "$(readlink -f /usr/bin/python3)" ] && [ -x /usr/bin/python3 ]; then
  mkdir -p "$wdir/debian-bin" && ln -sf /usr/bin/python3 "$wdir/debian-bin/python3"
  readme_venv_check "$wdir/debian-bin" /usr/bin/python3
fi

# The example notebook under the kernel named hetsim, installed by the
# README's command (the last venv above: the one the README makes).
kdir=$(mktemp -d)
trap 'rm -rf "$wdir" "$kdir"' EXIT
JUPYTER_DATA_DIR="$kdir" bash -c "$kernel_cmd" >/dev/null 2>&1 \
  || { echo "test_python: the README's kernel command failed: $kernel_cmd" >&2; exit 1; }
[ -f "$kdir/kernels/hetsim/kernel.json" ] || { echo "test_python: no kernel named hetsim in $kdir" >&2; exit 1; }
JUPYTER_DATA_DIR="$kdir" JUPYTER_PATH="$kdir" "$wdir/readme-venv/bin/python" - notebooks-export/examples/python-quickstart.ipynb <<'PY'
import sys
import nbformat
from nbclient import NotebookClient

path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=600, kernel_name="hetsim",
               resources={"metadata": {"path": "."}}).execute()
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
          if o.get("output_type") == "error"]
figures = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {}))
print(f"test_python: {path} under the kernel hetsim: {len(nb.cells)} cells executed, "
      f"{figures} figures, {len(errors)} errors")
sys.exit(1 if errors or figures < 2 else 0)
PY
