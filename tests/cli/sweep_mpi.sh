#!/usr/bin/env bash
# sweep_mpi.sh - `hetsim sweep` gives the same bytes serially, on threads, to
# stdout, and on 2 MPI ranks (OpenMPI, oversubscribed, as root in CI);
# --resume after a truncated write and after a kill finishes the same file.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?}
spec=$data/sweep/small.json
. "$(dirname "$0")/lib.bash"

"$bin" sweep "$spec" -o "$tmp/serial.csv" --no-timings --quiet 2>"$tmp/err" || die "serial sweep failed: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && die "a plain sweep printed to stderr with --quiet (MPI noise?): $(cat "$tmp/err")"
# 3 clusters x 2 inter-site bandwidths x 3 strategies x 2 price models = 36 rows
rows=$(($(wc -l <"$tmp/serial.csv") - 1))
[ "$rows" -eq 36 ] || die "serial sweep has $rows rows, expected 36"
# points are 0..35 in order
awk -F, 'NR > 1 && $1 != NR - 2 { bad = 1 } END { exit bad }' "$tmp/serial.csv" || die "points not 0..35 in order"

"$bin" sweep "$spec" -o "$tmp/j3.csv" -j 3 --no-timings --quiet || die "-j 3 sweep failed"
cmp -s "$tmp/serial.csv" "$tmp/j3.csv" || die "-j 3 output differs from serial"
"$bin" sweep "$spec" -j 2 --no-timings --quiet >"$tmp/stdout.csv" || die "stdout sweep failed"
cmp -s "$tmp/serial.csv" "$tmp/stdout.csv" || die "stdout output differs from serial"

# with timings the only difference is the search_s column
"$bin" sweep "$spec" -o "$tmp/timed.csv" --quiet || die "timed sweep failed"
col=$(head -1 "$tmp/timed.csv" | tr ',' '\n' | grep -n '^search_s$' | cut -d: -f1)
[ -n "$col" ] || die "no search_s column"

# MPI: 2 ranks, oversubscribed
if command -v mpirun >/dev/null 2>&1; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0 \
    mpirun --oversubscribe -np 2 "$bin" sweep "$spec" -o "$tmp/mpi.csv" --no-timings --quiet \
    >"$tmp/mpi.out" 2>&1 || die "mpirun -np 2 sweep failed: $(tail -20 "$tmp/mpi.out")"
  cmp -s "$tmp/serial.csv" "$tmp/mpi.csv" || die "2-rank MPI output differs from serial"
  ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0 \
    mpirun --oversubscribe -np 2 "$bin" sweep "$spec" -o "$tmp/mpij.csv" -j 2 --no-timings --quiet \
    >"$tmp/mpi.out" 2>&1 || die "mpirun -np 2 -j 2 sweep failed: $(tail -20 "$tmp/mpi.out")"
  cmp -s "$tmp/serial.csv" "$tmp/mpij.csv" || die "2-rank x 2-worker MPI output differs from serial"
  # rows to stdout from 3 ranks, and --resume under MPI
  ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0 \
    mpirun --oversubscribe -np 3 "$bin" sweep "$spec" --no-timings --quiet >"$tmp/mpi3.csv" 2>"$tmp/mpi.out" ||
    die "mpirun -np 3 to stdout failed: $(tail -20 "$tmp/mpi.out")"
  cmp -s "$tmp/serial.csv" "$tmp/mpi3.csv" || die "3-rank stdout output differs from serial"
  head -c 3000 "$tmp/serial.csv" >"$tmp/mpires.csv"
  ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0 \
    mpirun --oversubscribe -np 2 "$bin" sweep "$spec" -o "$tmp/mpires.csv" --resume --no-timings --quiet \
    >"$tmp/mpi.out" 2>&1 || die "mpirun --resume failed: $(tail -20 "$tmp/mpi.out")"
  cmp -s "$tmp/serial.csv" "$tmp/mpires.csv" || die "MPI --resume output differs from serial"
else
  die "mpirun not found: install openmpi-bin (scripts/setup.sh)"
fi

# --resume after a write cut in the middle of a row
head -c 2500 "$tmp/serial.csv" >"$tmp/cut.csv"
"$bin" sweep "$spec" -o "$tmp/cut.csv" --resume --no-timings 2>"$tmp/err" || die "resume failed: $(cat "$tmp/err")"
grep -q 'already in' "$tmp/err" || die "resume did not report the jobs it kept: $(cat "$tmp/err")"
cmp -s "$tmp/serial.csv" "$tmp/cut.csv" || die "resumed output differs from serial"
# resuming a complete file runs nothing and changes nothing
"$bin" sweep "$spec" -o "$tmp/cut.csv" --resume --no-timings --quiet || die "second resume failed"
cmp -s "$tmp/serial.csv" "$tmp/cut.csv" || die "second resume changed the file"

# kill -9 a running sweep once rows appear, then resume
"$bin" sweep "$spec" -o "$tmp/killed.csv" --no-timings --quiet &
pid=$!
for _ in $(seq 1 2000); do
  [ -f "$tmp/killed.csv" ] && [ "$(wc -l <"$tmp/killed.csv")" -ge 4 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
"$bin" sweep "$spec" -o "$tmp/killed.csv" --resume --no-timings --quiet || die "resume after kill failed"
cmp -s "$tmp/serial.csv" "$tmp/killed.csv" || die "output resumed after kill -9 differs from serial"

exit $fail
