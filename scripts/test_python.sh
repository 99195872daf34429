#!/usr/bin/env bash
# The Python package (python/, docs/python.md): a virtual environment over
# Debian's Python (its pip refuses system-wide installs, PEP 668; the venv
# sees Debian's pandas, pytest, nbclient), the package installed from this
# tree, pytest against the CLI in $BUILD_DIR, and the example notebook
# executed headless. Idempotent: a second run reuses the venv and the build.
#   BUILD_DIR   CMake build with hetsim and libhetsim.so (default build/;
#               made by scripts/setup.sh when missing)
#   HS_VENV     the virtual environment (default .venv/)
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
"$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests
rc=$?
set -e
if [ $rc -eq 5 ]; then
  echo "test_python: pytest collected no tests in python/tests" >&2
  exit 1
elif [ $rc -ne 0 ]; then
  exit $rc
fi

# The example notebook, on a kernel running the venv's Python (the Debian
# kernelspec names /usr/bin/python3, which does not see the package).
kdir=$(mktemp -d)
trap 'rm -rf "$kdir"' EXIT
mkdir -p "$kdir/kernels/hetsim-venv"
cat >"$kdir/kernels/hetsim-venv/kernel.json" <<JSON
{"argv": ["$PWD/$VENV/bin/python", "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
 "display_name": "hetsim venv", "language": "python"}
JSON
JUPYTER_PATH="$kdir" "$VENV/bin/python" - notebooks-export/examples/python-quickstart.ipynb <<'PY'
import sys
import nbformat
from nbclient import NotebookClient

path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=600, kernel_name="hetsim-venv",
               resources={"metadata": {"path": "."}}).execute()
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
          if o.get("output_type") == "error"]
figures = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {}))
print(f"test_python: {path}: {len(nb.cells)} cells executed, {figures} figures, {len(errors)} errors")
sys.exit(1 if errors or figures < 2 else 0)
PY
