#!/usr/bin/env bash
# callgrind_compare.sh - does a change cost instructions? Runs bench_sim and
# bench_search at small sizes under valgrind's callgrind for two builds and
# prints each bench's instruction total (Ir) for both and the new/old ratio
# (issue 37, "what must hold": bench_sim and bench_search within 3% in
# instructions).
#
#   bash bench/callgrind_compare.sh OLD_BUILD_DIR NEW_BUILD_DIR
#
# Benches (each OLD_BUILD_DIR/bench/<bench> and NEW_BUILD_DIR/bench/<bench>):
#   bench_sim $CG_SIM_GPUS (default 64): one iteration of GPT-3 175B, TP 8 x
#       PP 8, flow-level network (about 0.6e9 instructions, 20-30 s under
#       callgrind); the size runs in a forked child, so children are traced
#       (--trace-children=yes) and the totals of every process summed
#   bench_search $CG_SEARCH_GPUS <strategy>, one run per strategy of
#       $CG_STRATEGIES (default megatron,deepspeed,whale,hap: under a CPU
#       second each natively at 16 GPUs; hapt and autohet take 2-3 CPU s
#       each there, a few CPU minutes under callgrind: add them with
#       CG_STRATEGIES=...,hapt,autohet when a change touches them)
# The old and the new build of one bench run side by side (two processes);
# callgrind counts instructions, not time, so the figures do not depend on
# how busy the machine is, and a deterministic bench gives the same count on
# every run (differences across builds come from the code, the compiler and
# the libraries it links).
#
# Compare builds of one optimisation level: the script prints each build's
# (CMAKE_BUILD_TYPE from its CMakeCache.txt, else the -O of the compiler
# line in bench_sim's debug info) and warns when they differ. -O2 against
# -O3 of the same source moved the counts by 0.6% (bench_sim 64) and 1.5%
# (bench_search 16 megatron) on 2026-12-02 (/work/base-build, RelWithDebInfo
# -O2, against a Release -O3 build of the same commit).
#
# Output: one line per bench, "bench  old_Ir  new_Ir  new/old  flag", the
# flag "SLOWER >3%" or "faster >3%" when new/old is outside [0.97, 1.03].
# Exit status: 0 no bench over +3%, 1 a bench over +3% or a bench failed,
# 2 bad usage or valgrind missing. Callgrind files are kept in
# $CG_KEEP (default: a temporary directory, removed) for callgrind_annotate.
# Needs valgrind (Debian: valgrind); not part of the test suite or CI: a
# bench, run by hand around a refactoring.
set -uo pipefail

usage() { echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
old=$1 new=$2
command -v valgrind >/dev/null 2>&1 ||
  { echo "callgrind_compare.sh: valgrind not found (Debian: apt-get install valgrind)" >&2; exit 2; }
for d in "$old" "$new"; do
  for b in bench_sim bench_search; do
    [ -x "$d/bench/$b" ] ||
      { echo "callgrind_compare.sh: $d/bench/$b: not an executable (cmake --build $d --target $b)" >&2; exit 2; }
  done
done
old=$(cd "$old" && pwd) new=$(cd "$new" && pwd)

# opt_level DIR: the build's optimisation level, "-O3" etc., or "unknown"
opt_level() {
  local t o
  t=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$1/CMakeCache.txt" 2>/dev/null)
  case $t in
    Release) o=-O3 ;; RelWithDebInfo) o=-O2 ;; Debug) o=-O0 ;; MinSizeRel) o=-Os ;;
    *) o=$(readelf --debug-dump=info "$1/bench/bench_sim" 2>/dev/null |
           grep -m1 -o 'DW_AT_producer.* -O[0-9sgz]' | grep -o -- '-O[0-9sgz]$') ;;
  esac
  echo "${o:-unknown}${t:+ ($t)}"
}
sim_gpus=${CG_SIM_GPUS:-64}
search_gpus=${CG_SEARCH_GPUS:-16}
strategies=${CG_STRATEGIES:-megatron,deepspeed,whale,hap}
if [ -n "${CG_KEEP:-}" ]; then
  work=$CG_KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

# measure TAG SIDE BIN ARGS...: runs BIN under callgrind (children traced),
# its outputs in $work/TAG.SIDE.*; prints nothing, returns BIN's status
measure() {
  local tag=$1 side=$2; shift 2
  rm -f "$work/$tag.$side".cg.*
  nice valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$work/$tag.$side.cg.%p" "$@" \
    >"$work/$tag.$side.out" 2>"$work/$tag.$side.err"
}

# total TAG SIDE: the instructions of every process of one run (the sum of
# the "summary:" lines of its callgrind files)
total() {
  cat "$work/$1.$2".cg.* 2>/dev/null | awk '/^summary:/ { s += $2 } END { printf "%.0f\n", s + 0 }'
}

# compare TAG ARGS...: one bench, both builds side by side; prints its line,
# returns 1 when it failed or is over +3%
compare() {
  local tag=$1; shift
  local bin=$1; shift
  measure "$tag" old "$old/bench/$bin" "$@" & local p_old=$!
  measure "$tag" new "$new/bench/$bin" "$@" & local p_new=$!
  local rc_old=0 rc_new=0
  wait $p_old || rc_old=$?
  wait $p_new || rc_new=$?
  if [ $rc_old -ne 0 ] || [ $rc_new -ne 0 ]; then
    printf '%-28s failed (exit old %d, new %d): see %s\n' "$tag" $rc_old $rc_new "$work/$tag.{old,new}.err"
    tail -n 3 "$work/$tag.old.err" "$work/$tag.new.err" >&2
    return 1
  fi
  local a b
  a=$(total "$tag" old) b=$(total "$tag" new)
  awk -v t="$tag" -v a="$a" -v b="$b" 'BEGIN {
    r = (a > 0) ? b / a : 0
    flag = (r > 1.03) ? "SLOWER >3%" : (r < 0.97) ? "faster >3%" : ""
    printf "%-28s %15.0f %15.0f %8.4f  %s\n", t, a, b, r, flag
    exit (r > 1.03) ? 1 : 0 }'
}

echo "callgrind_compare: instructions (Ir), old = $old, new = $new"
o_old=$(opt_level "$old") o_new=$(opt_level "$new")
echo "callgrind_compare: optimisation old $o_old, new $o_new"
[ "${o_old%% *}" = "${o_new%% *}" ] ||
  echo "callgrind_compare: WARNING: the builds differ in optimisation level: the ratios mix it with the change (rebuild one to match)"
printf '%-28s %15s %15s %8s  %s\n' bench old_Ir new_Ir new/old flag
bad=0
compare "bench_sim-$sim_gpus" bench_sim "$sim_gpus" || bad=1
IFS=, read -r -a list <<<"$strategies"
for s in "${list[@]}"; do
  compare "bench_search-$search_gpus-$s" bench_search "$search_gpus" "$s" || bad=1
done
exit $bad
