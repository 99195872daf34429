#!/usr/bin/env bash
# bench_startup.sh - what a hetsim process costs before it does anything
# (issue #35): peak resident memory (/usr/bin/time -v) of `hetsim --version`
# and of `simulate` on a 64-GPU plan (llama3-8b, tp8 pp2 dp4 on
# dgx-h100-16nodes), and the libraries hetsim and libhetsim.so map at start
# (ldd). Targets: --version < 10 MB, simulate < 20 MB, no CUDA/cuBLAS/NCCL/MPI.
#
# usage: bench/bench_startup.sh [HETSIM_BIN [OLD_HETSIM_BIN]]
#   HETSIM_BIN default build/hetsim; with OLD_HETSIM_BIN both are measured,
#   alternately, REPEATS times each (default 5), and the medians printed.
# A measurement, not a test: figures depend on the machine's libraries.
set -u
new=${1:-build/hetsim}
old=${2:-}
reps=${REPEATS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
export HETSIM_DATA=${HETSIM_DATA:-$root}
sim=(simulate --model llama3-8b --cluster dgx-h100-16nodes --tp 8 --pp 2 --dp 4 --global-batch 256)

# peak RSS in kB of one run of "$@"
rss_kb() {
  /usr/bin/time -f '%M' -o /tmp/bench_startup.$$ "$@" >/dev/null 2>&1
  cat /tmp/bench_startup.$$
  rm -f /tmp/bench_startup.$$
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

bins=("$new")
[ -n "$old" ] && bins=("$old" "$new")
declare -A ver sm
for ((r = 0; r < reps; r++)); do
  for b in "${bins[@]}"; do # alternate old and new so load drifts hit both
    ver[$b]+="$(rss_kb "$b" --version) "
    sm[$b]+="$(rss_kb "$b" "${sim[@]}") "
  done
done
printf '%-28s %18s %26s %9s\n' binary "--version max RSS" "simulate 64 GPUs max RSS" "libraries"
for b in "${bins[@]}"; do
  v=$(tr ' ' '\n' <<<"${ver[$b]}" | grep . | median)
  s=$(tr ' ' '\n' <<<"${sm[$b]}" | grep . | median)
  n=$(ldd "$b" | wc -l)
  printf '%-28s %15.1f MB %23.1f MB %9d\n' "$b" "$(echo "$v / 1024" | bc -l)" "$(echo "$s / 1024" | bc -l)" "$n"
done
echo
for b in "${bins[@]}"; do
  for f in "$b" "$(dirname "$b")/libhetsim.so"; do
    [ -f "$f" ] || continue
    heavy=$(ldd "$f" | grep -Eo 'lib(cudart|cublas|cublasLt|nccl|mpi|open-rte|open-pal)[^ ]*' | sort -u | tr '\n' ' ')
    echo "ldd $f: $(ldd "$f" | wc -l) libraries; CUDA/NCCL/MPI: ${heavy:-none}"
  done
done
for m in hetsim-cuda.so hetsim-mpi.so; do
  f=$(dirname "$new")/$m
  [ -f "$f" ] && echo "module $f: $(ldd "$f" | grep -Eo 'lib(cudart|cublas|nccl|mpi)[^ ]*' | sort -u | tr '\n' ' ')"
done
