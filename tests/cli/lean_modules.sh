#!/usr/bin/env bash
# lean_modules.sh - hetsim and libhetsim.so link neither CUDA, cuBLAS, NCCL
# nor MPI (issue #35): those live in hetsim-cuda.so and hetsim-mpi.so, loaded
# only by `replay|calibrate --backend cuda` and a sweep under mpirun
# (common/hs_module.h). A missing module is exit 2 with a message naming
# the path looked at and the command that builds it; the CPU replay runs
# without either module.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
D=${HETSIM_TEST_DATA:?}
. "$(dirname "$0")/lib.bash"
dir=$(dirname "$bin")

# the dynamic section names no GPU or MPI library (readelf: what the binary
# asks for itself, not what its dependencies pull in)
for f in "$bin" "$dir/libhetsim.so"; do
  [ -f "$f" ] || continue
  readelf -d "$f" >"$tmp/dyn" 2>&1 || { bad "readelf $f"; continue; }
  if grep -Ei 'NEEDED.*(cuda|cublas|nccl|mpi|open-rte|open-pal)' "$tmp/dyn"; then
    bad "$f needs a CUDA/NCCL/MPI library"
  else
    ok
  fi
  # nor anything it loads at start (ldd resolves the whole tree)
  if ldd "$f" | grep -Ei 'libcuda|libcublas|libnccl|libmpi|libopen-rte|libopen-pal'; then
    bad "$f maps a CUDA/NCCL/MPI library at start"
  else
    ok
  fi
done

# modules export one table each, nothing of hetsim's own
for m in hetsim-cuda.so:hs_cuda_module hetsim-mpi.so:hs_mpi_module; do
  f=$dir/${m%%:*}
  [ -f "$f" ] || continue
  syms=$(nm -D --defined-only "$f" | awk '{ print $3 }' | grep -v '^_' | sort -u | tr '\n' ' ')
  [ "$syms" = "${m#*:} " ] && ok || bad "$f exports: $syms"
done

args=(--model "$D/validate/tiny-gpt.json" --cluster "$D/validate/cpu2.json" --plan "$D/validate/pipeline2.json")
# missing modules: exit 2, the path and how to build it
HETSIM_MODULE_DIR="$tmp/none" expect 2 "$bin" replay --backend cuda "${args[@]}"
has "$tmp/err" "$tmp/none/hetsim-cuda.so"
has "$tmp/err" "hetsim_cuda"
HETSIM_MODULE_DIR="$tmp/none" expect 2 "$bin" calibrate --microbench --backend cuda --cluster "$D/validate/cpu2.json"
has "$tmp/err" "$tmp/none/hetsim-cuda.so"
HETSIM_MODULE_DIR="$tmp/none" OMPI_COMM_WORLD_SIZE=1 expect 2 "$bin" sweep "$D/sweep/small.json" --quiet
has "$tmp/err" "$tmp/none/hetsim-mpi.so"
has "$tmp/err" "hetsim_mpi"
# a file that is not a module: refused with dlopen's reason, never a crash
mkdir -p "$tmp/junk" && printf 'not an ELF file\n' >"$tmp/junk/hetsim-cuda.so"
HETSIM_MODULE_DIR="$tmp/junk" expect 2 "$bin" replay --backend cuda "${args[@]}"
has "$tmp/err" "cannot load the module $tmp/junk/hetsim-cuda.so"
# a module without the table (the MPI module under the CUDA name)
if [ -f "$dir/hetsim-mpi.so" ]; then
  mkdir -p "$tmp/wrong" && cp "$dir/hetsim-mpi.so" "$tmp/wrong/hetsim-cuda.so"
  HETSIM_MODULE_DIR="$tmp/wrong" expect 2 "$bin" replay --backend cuda "${args[@]}"
  has "$tmp/err" "has no symbol hs_cuda_module"
fi

# with the module built, --backend cuda reaches CUDA: on a machine without a
# GPU it says so (exit 2), never that the module is missing
if [ -f "$dir/hetsim-cuda.so" ]; then
  "$bin" replay --backend cuda "${args[@]}" --stage 0 --iterations 1 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 0 ] || grep -q 'no CUDA device visible' "$tmp/err"; then ok; else bad "cuda replay: rc $rc $(cat "$tmp/err")"; fi
  hasnot "$tmp/err" "needs the module"
fi

# the CPU backend needs no module at all
HETSIM_MODULE_DIR="$tmp/none" expect 0 "$bin" replay --backend cpu "${args[@]}" --iterations 1 --warmup 0 \
  -o "$tmp/m.json"
[ -s "$tmp/m.json" ] && ok || bad "cpu replay wrote no measured.json"

echo "lean_modules: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
