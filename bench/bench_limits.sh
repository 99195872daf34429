#!/usr/bin/env bash
# bench_limits.sh - how well `hetsim plan --time-limit` holds on large
# instances: per strategy, the limit set, the wall time measured, their
# ratio (elapsed / limit; the target is <= 1.1), the exit code and the last
# line of the answer; then the refusal of a global batch of 2^31 on 8 GPUs
# (HS_SEARCH_MAX_MICROBATCHES) with its time and peak memory.
#
# usage: bench/bench_limits.sh [HETSIM_BIN] [LIMIT_S]
#   HETSIM_BIN  default build/hetsim;  LIMIT_S  default 10
# Instances: gpt3-1.3b on dgx-h100-2048nodes (16,384 GPUs) for every
# strategy (exhaustive with --max-devices raised so that it searches), and
# megatron on 8,192 DGX H100 nodes (65,536 GPUs, written to a temporary
# directory from the 2048-node catalog entry). A wall-clock benchmark, not a
# test: the numbers depend on the machine and its load. A run still going at
# 6x its limit is killed (exit 137, ratio 6).
set -u
bin=${1:-build/hetsim}
limit=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/"count": 2048/"count": 8192/; s/dgx-h100-2048nodes/dgx-h100-8192nodes/' \
  "$root/clusters/catalog/dgx-h100-2048nodes.json" >"$tmp/dgx-h100-8192nodes.json"

now() { date +%s.%N; }
# run LABEL LIMIT ARGS...: one plan, one row
run() {
  local label=$1 lim=$2; shift 2
  local t0 t1 rc
  t0=$(now)
  # a run past 6x its limit is killed (exit 137) so that the bench ends
  timeout -s KILL "$(awk -v l="$lim" 'BEGIN { print 6 * l }')" \
    /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" plan --quiet "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  t1=$(now)
  local last
  last=$( (grep -h 'search \|time limit\|iteration ' "$tmp/out" "$tmp/err"; tail -n 1 "$tmp/err") |
          tail -n 1 | cut -c1-110)
  awk -v l="$label" -v lim="$lim" -v t0="$t0" -v t1="$t1" -v rc="$rc" -v rss="$(tail -n 1 "$tmp/rss")" -v last="$last" \
    'BEGIN { e = t1 - t0; r = lim > 0 ? e / lim : 0;
             printf "%-34s %7s %9.2f %7.2f %4d %8.0f  %s\n", l, lim, e, r, rc, rss / 1024, last }'
}

printf "%-34s %7s %9s %7s %4s %8s  %s\n" "instance" "limit_s" "elapsed_s" "ratio" "exit" "rss_MB" "answer"
for s in data-parallel megatron deepspeed whale hapt autohet hap exhaustive; do
  run "$s 16384 GPUs" "$limit" --model gpt3-1.3b --cluster dgx-h100-2048nodes --strategy "$s" \
    --time-limit "$limit" --max-devices 16384
done
run "megatron 65536 GPUs" "$limit" --model gpt3-1.3b --cluster "$tmp/dgx-h100-8192nodes.json" \
  --strategy megatron --time-limit "$limit"
for s in hapt megatron hap; do
  run "$s gb 2^31 on 8 GPUs" 20 --model gpt3-1.3b --cluster dgx-a100-1node --strategy "$s" \
    --global-batch 2147483648 --time-limit 20
done
