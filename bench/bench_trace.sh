#!/usr/bin/env bash
# bench_trace.sh - what a trace costs next to the simulation it shows (issue
# #35): for plans of 64, 256 and 1,024 GPUs, the time of `simulate` without a
# trace, with --trace-detail device, and with --trace-detail kernel
# --trace-devices 8, and the ratio traced / untraced (target: device <= 3 at
# 1,024 GPUs; kernel with 8 devices a few seconds). With an old binary both
# are measured alternately (old, new, old, new, ...) so that the machine's
# load drifts over both alike; a run past OLD_TIMEOUT_S (default 300) is
# stopped and shown as ">" that limit.
#
# usage: bench/bench_trace.sh [HETSIM_BIN [OLD_HETSIM_BIN]]
#   REPEATS (default 1): runs per (binary, size, mode); the median is shown.
#   SIZES (default "64 256 1024"), MODES (default "device kernel8").
# Times are wall-clock seconds and, in brackets, CPU seconds (user + sys),
# the steadier figure on a shared machine. A measurement, not a test.
set -u
new=${1:-build/hetsim}
old=${2:-}
reps=${REPEATS:-1}
sizes=${SIZES:-64 256 1024}
modes=${MODES:-device kernel8}
limit=${OLD_TIMEOUT_S:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
export HETSIM_DATA=${HETSIM_DATA:-$root}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

plan_args() {
  case $1 in
    64) echo "--model llama3-8b --cluster dgx-h100-16nodes --tp 8 --pp 2 --dp 4 --global-batch 256" ;;
    256) echo "--model llama3-70b --cluster dgx-h100-128nodes --tp 8 --pp 8 --dp 4 --global-batch 256 --recompute full" ;;
    1024) echo "--model llama3-70b --cluster dgx-h100-128nodes --tp 8 --pp 8 --dp 16 --global-batch 1024 --recompute full" ;;
  esac
}
mode_args() {
  case $1 in
    none) echo "" ;;
    device) echo "--trace $tmp/t.json --trace-detail device" ;;
    kernel8) echo "--trace $tmp/t.json --trace-detail kernel --trace-devices 8" ;;
  esac
}
# run BIN ARGS...: prints "wall cpu bytes" (wall "-" when stopped at the limit)
run() {
  local bin=$1; shift
  rm -f "$tmp/t.json"
  if /usr/bin/time -f '%e %U %S' -o "$tmp/time" timeout "$limit" "$bin" simulate "$@" >/dev/null 2>"$tmp/err"; then
    read -r w u s <"$tmp/time"
    echo "$w $(echo "$u + $s" | bc -l) $(stat -c %s "$tmp/t.json" 2>/dev/null || echo 0)"
  else
    echo "- - 0"
  fi
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }

bins=("$new")
[ -n "$old" ] && bins=("$old" "$new")
declare -A W C B
for n in $sizes; do
  for ((r = 0; r < reps; r++)); do
    for mode in none $modes; do
      for b in "${bins[@]}"; do
        # shellcheck disable=SC2046
        read -r w c bytes <<<"$(run "$b" $(plan_args "$n") $(mode_args "$mode"))"
        W[$b,$n,$mode]+="$w "
        C[$b,$n,$mode]+="$c "
        B[$b,$n,$mode]=$bytes
      done
    done
  done
done

fmt() { [ "$1" = - ] && echo ">$limit" || printf '%.2f' "$1"; }
ratio() { { [ "$1" = - ] || [ "$2" = - ]; } && echo "-" || printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
printf '%-24s %5s %-8s %16s %16s %12s %10s %10s\n' binary GPUs trace "traced s (cpu)" "untraced s (cpu)" "trace MB" "ratio" "cpu ratio"
for n in $sizes; do
  for mode in $modes; do
    for b in "${bins[@]}"; do
      tw=$(tr ' ' '\n' <<<"${W[$b,$n,$mode]}" | grep . | sed 's/^-$/1e99/' | median | sed 's/^1e99$/-/')
      tc=$(tr ' ' '\n' <<<"${C[$b,$n,$mode]}" | grep . | sed 's/^-$/1e99/' | median | sed 's/^1e99$/-/')
      uw=$(tr ' ' '\n' <<<"${W[$b,$n,none]}" | grep . | median)
      uc=$(tr ' ' '\n' <<<"${C[$b,$n,none]}" | grep . | median)
      printf '%-24s %5s %-8s %16s %16s %12.1f %10s %10s\n' "$b" "$n" "$mode" \
        "$(fmt "$tw") ($(fmt "$tc"))" "$(fmt "$uw") ($(fmt "$uc"))" \
        "$(echo "${B[$b,$n,$mode]} / 1000000" | bc -l)" "$(ratio "$tw" "$uw")" "$(ratio "$tc" "$uc")"
    done
  done
done
