#!/usr/bin/env bash
# bench_compare.sh - the figures of issue #35 item 1 (search that reuses
# work): `compare` CPU seconds, per strategy and for the whole default
# list, and the wall time of the 33-option what-if, old build against new.
#
#   bench/bench_compare.sh OLD_BUILD NEW_BUILD [--whatif] [--whatif-old] [--reps N]
#
# The cluster is bench/data/h100-a100-40gb-48gpu-25gbps.json (2 DGX H100 +
# 4 DGX A100-40GB, two sites, 25 Gb/s = 3.125 GB/s between them); the model
# Llama-3-8B (catalog llama3-8b). CPU seconds are user time (/usr/bin/time
# %U, the forked workers of -j included), old and new run alternately, the
# median of --reps runs (default 3) printed: on a shared machine wall time
# is noise, CPU time much less so.
#
#   --whatif      also the what-if: --budget-usd-per-hour 150 --candidates
#                 H100-SXM5-80GB,A100-SXM4-40GB,H200-SXM-141GB = 33 options x
#                 4 strategies, -j 2, --time-limit 0 (every search finishes,
#                 so the rows do not depend on the machine's load), wall and
#                 CPU seconds (new build only)
#   --whatif-old  the same with the old build too (about 1,000 CPU s)
#
# Prints lines "compare STRATEGY old_cpu_s new_cpu_s" and "compare all ...",
# "whatif BUILD wall_s cpu_s"; checks the rows are the same (search_s
# masked) and says so. Exit 0, or 2 on bad usage.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_BUILD NEW_BUILD [--whatif] [--whatif-old] [--reps N]" >&2
  exit 2
fi
OLD=$(cd "$1" && pwd) NEW=$(cd "$2" && pwd)
shift 2
WHATIF=0 WHATIF_OLD=0 REPS=3
while [ $# -gt 0 ]; do
  case $1 in
    --whatif) WHATIF=1 ;;
    --whatif-old) WHATIF=1 WHATIF_OLD=1 ;;
    --reps) REPS=$2; shift ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/data/h100-a100-40gb-48gpu-25gbps.json
MODEL=llama3-8b
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
. "$HERE/../scripts/lib_mask.sh"

# cpu BIN OUT ARGS...: user CPU seconds of one hetsim run (stdout to OUT)
cpu() {
  local bin=$1 out=$2; shift 2
  /usr/bin/time -f %U -o "$WORK/t" "$bin/hetsim" "$@" >"$out" 2>/dev/null
  cat "$WORK/t" | tail -1
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# compare_fig NAME STRATEGIES: old and new medians, rows checked equal
compare_fig() {
  local name=$1 list=$2 o=() n=()
  for r in $(seq "$REPS"); do
    o+=("$(cpu "$OLD" "$WORK/old.csv" compare --model $MODEL --cluster "$CLUSTER" --strategies "$list" --format csv)")
    n+=("$(cpu "$NEW" "$WORK/new.csv" compare --model $MODEL --cluster "$CLUSTER" --strategies "$list" --format csv)")
  done
  local same=same
  cmp -s <(hs_mask_times <"$WORK/old.csv") <(hs_mask_times <"$WORK/new.csv") || same=DIFFERENT
  printf 'compare %-14s old %6.2f CPU s  new %6.2f CPU s  rows %s\n' "$name" \
    "$(printf '%s\n' "${o[@]}" | median)" "$(printf '%s\n' "${n[@]}" | median)" "$same"
}

ALL=$("$NEW/hetsim" list strategies 2>/dev/null | awk 'NF { print $1 }' | paste -sd, -)
for s in ${ALL//,/ }; do
  compare_fig "$s" "$s"
done
compare_fig all "$ALL"

if [ $WHATIF = 1 ]; then
  args=(whatif --model $MODEL --cluster "$CLUSTER" --budget-usd-per-hour 150
        --candidates H100-SXM5-80GB,A100-SXM4-40GB,H200-SXM-141GB --time-limit 0 -j 2 --format csv --quiet)
  for side in new old; do
    [ $side = old ] && [ $WHATIF_OLD = 0 ] && continue
    bin=$NEW; [ $side = old ] && bin=$OLD
    /usr/bin/time -f '%e %U' -o "$WORK/t" "$bin/hetsim" "${args[@]}" >"$WORK/whatif-$side.csv" 2>/dev/null
    read -r wall user <"$WORK/t"
    printf 'whatif %-3s 33 options x 4 strategies -j 2: %7.1f s wall, %7.1f CPU s\n' $side "$wall" "$user"
  done
  if [ $WHATIF_OLD = 1 ]; then
    same=same
    cmp -s <(hs_mask_times <"$WORK/whatif-old.csv") <(hs_mask_times <"$WORK/whatif-new.csv") || same=DIFFERENT
    echo "whatif rows: $same"
  fi
fi
