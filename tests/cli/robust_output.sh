#!/usr/bin/env bash
# robust_output.sh - an output is whole or the exit code says otherwise
# (issue #32, docs/robustness.md "Outputs"):
#   1. every subcommand that writes, with stdout on /dev/full and under
#      `ulimit -f 0` (stdout to a file), exits non-zero with a message on
#      stderr (not exit 0, not killed by SIGXFSZ);
#   2. file outputs (-o, --trace, --json FILE, --svg, --notebook, ...) refuse a
#      target that is a FIFO, a symbolic link, a read-only file, a directory
#      or a device, and leave it as it was; a planted PATH.tmp is not
#      followed; a write that fails leaves the old file in place.
set -u
H=${HETSIM_BIN:?}
D=${HETSIM_TEST_DATA:?}
S=${HETSIM_DATA:?}
. "$(dirname "$0")/lib.bash"

# ---- inputs ----------------------------------------------------------------
cat >"$tmp/sw.json" <<'E'
{"name": "tiny", "clusters": ["dgx-a100-1node"], "models": ["gpt3-1.3b"], "global_batch": [64],
 "strategies": ["megatron"], "price_models": ["on-demand"], "train_tokens": 1e10}
E
echo '{"iteration_time_s": 31.0}' >"$tmp/m1.json"
"$H" sweep "$tmp/sw.json" --quiet --no-timings -o "$tmp/r.csv" 2>/dev/null || die "sweep setup"
"$H" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 1 --pp 1 --dp 8 --global-batch 16 \
  --trace "$tmp/tr.json" -o "$tmp/rep.json" >/dev/null 2>&1 || die "simulate setup"
SIM=(simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 1 --pp 1 --dp 8 --global-batch 16)
PLAN=(plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy megatron --quiet)
EL=(elastic --model gpt3-1.3b --cluster "$D/elastic/spot4x4.json" --strategy data-parallel
    --global-batch 48 --hours 4 --rates spot=2 --seed 5)
REPLAY=(replay --backend cpu --model "$D/validate/tiny-gpt.json" --cluster "$D/validate/cpu2.json"
        --plan "$D/validate/single.json" --iterations 2)

# Every command that prints to stdout, one per line (word-split: no spaces
# in these paths but $tmp's and the data directories', quoted below).
stdout_cmds=(
  "list models"
  "show model gpt3-1.3b"
  "show cluster dgx-a100-1node --json"
  "${SIM[*]}"
  "${SIM[*]} --json"
  "${PLAN[*]}"
  "${PLAN[*]} --json"
  "compare --model gpt3-1.3b --cluster dgx-a100-1node --strategies megatron"
  "compare --model gpt3-1.3b --cluster dgx-a100-1node --strategies megatron --format json"
  "sweep $tmp/sw.json --quiet --no-timings"
  "whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 12 --candidates A100-SXM4-40GB --strategies megatron --quiet"
  "export $tmp/r.csv --json -"
  "export $tmp/r.csv --tidy -"
  "export $tmp/tr.json --svg -"
  "${EL[*]}"
  "${EL[*]} --json"
  "${EL[*]} --timeline -"
  "calibrate $S/clusters/calibration/H100-SXM5-80GB.json --dtype bf16"
  "import nccl-tests $D/import/nccl_all_gather_2xH200.txt"
  "import megatron-log $D/import/megatron_gpt2_1gpu.log --json"
  "import torch-profiler $D/import/torch_cpu_step.json"
  "validate --measured $tmp/m1.json"
  "validate --report $tmp/rep.json --measured $tmp/m1.json --json"
  "${REPLAY[*]}"
  "${REPLAY[*]} --json"
)

# ---- 1. stdout that cannot be written ------------------------------------------
for c in "${stdout_cmds[@]}"; do
  # shellcheck disable=SC2086
  "$H" $c >"$tmp/ok.out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 0 ] || [ ! -s "$tmp/ok.out" ]; then bad "baseline: $c: exit $rc or no output"; continue; fi
  "$H" $c >/dev/full 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "standard output: write error" "$tmp/err"; then ok
  else bad "> /dev/full: exit $rc: $c: $(head -c 300 "$tmp/err")"; fi
  # past `ulimit -f`: stdout to a file that may not grow, stderr through a
  # pipe (a pipe is not limited); 153 would be death by SIGXFSZ
  ( ulimit -f 0; exec "$H" $c >"$tmp/fsz.out" ) 2>&1 | cat >"$tmp/err"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 153 ] && grep -q "File too large" "$tmp/err"; then ok
  else bad "ulimit -f 0: exit $rc: $c: $(head -c 300 "$tmp/err")"; fi
done

# ---- 2. file targets -----------------------------------------------------------
printf 'victim\n' >"$tmp/victim"
cp "$tmp/victim" "$tmp/victim.orig"
unchanged_victim() { if cmp -s "$tmp/victim" "$tmp/victim.orig"; then ok; else bad "victim changed after: $*"; fi; }

# every option that writes a file, with "%s" where the path goes
file_cmds=(
  "sweep $tmp/sw.json --quiet --no-timings -o %s"
  "${PLAN[*]} -o %s"
  "${SIM[*]} -o %s"
  "${SIM[*]} --trace %s"
  "export $tmp/r.csv --json %s"
  "export $tmp/r.csv --tidy %s"
  "export $tmp/r.csv --notebook %s"
  "export $tmp/tr.json --svg %s"
  "${EL[*]} -o %s"
  "${EL[*]} --timeline %s"
  "${EL[*]} --timeline-csv %s"
  "calibrate $S/clusters/calibration/H100-SXM5-80GB.json --dtype bf16 -o %s"
  "import nccl-tests $D/import/nccl_all_gather_2xH200.txt -o %s"
  "import megatron-log $D/import/megatron_gpt2_1gpu.log -o %s"
  "import torch-profiler $D/import/torch_cpu_step.json -o %s"
  "validate --report $tmp/rep.json --measured $tmp/m1.json -o %s"
  "${REPLAY[*]} -o %s"
)

# refuse CMD TARGET NEEDLE: exits 2 naming the target and why
refuse() {
  local c=${1//%s/$2}
  # shellcheck disable=SC2086
  "$H" $c >/dev/null 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -qF -- "$3" "$tmp/err" && grep -qF -- "$2" "$tmp/err"; then ok
  else bad "exit $rc, want 2 and '$3': $c: $(head -c 300 "$tmp/err")"; fi
}

mkfifo "$tmp/fifo"
# a reader that drains the FIFO, so a binary that writes into it (as the old
# one did) finishes and fails the checks instead of blocking in open(2)
exec 3<>"$tmp/fifo"
cat <&3 >/dev/null &
drain=$!
ln -s victim "$tmp/link"
printf 'read-only\n' >"$tmp/ro"; chmod 0444 "$tmp/ro"
mkdir "$tmp/dir"
for c in "${file_cmds[@]}"; do
  refuse "$c" "$tmp/fifo" "is a FIFO"
  refuse "$c" "$tmp/link" "is a symbolic link"
  refuse "$c" "$tmp/ro" "is read-only"
  refuse "$c" "$tmp/dir" "is a directory"
done
# A device node: the old code, as root, replaced /dev/full with a CSV. Only
# tried once the same command has refused a FIFO (a binary that would
# replace a FIFO could replace the device too), and checked after.
if [ -c /dev/full ]; then
  for c in "sweep $tmp/sw.json --quiet --no-timings -o %s" "${PLAN[*]} -o %s"; do
    "$H" ${c//%s/$tmp/fifo} >/dev/null 2>&1
    if [ "$?" -eq 2 ] && [ -p "$tmp/fifo" ]; then
      refuse "$c" /dev/full "is a character device"
      [ -c /dev/full ] && ok || { bad "/dev/full is no longer a device"; break; }
    else
      bad "skipped /dev/full: the binary does not refuse a FIFO: $c"
    fi
  done
fi

kill "$drain" 2>/dev/null
wait "$drain" 2>/dev/null
exec 3<&-
[ -p "$tmp/fifo" ] && ok || bad "the FIFO was replaced"
[ -L "$tmp/link" ] && ok || bad "the symbolic link was replaced"
unchanged_victim "writes to a symbolic link"
[ "$(cat "$tmp/ro")" = read-only ] && [ "$(stat -c %a "$tmp/ro")" = 444 ] && ok || bad "the read-only file changed"
[ -d "$tmp/dir" ] && [ -z "$(ls -A "$tmp/dir")" ] && ok || bad "the directory changed"
# nothing left behind but what the test made
left=$(cd "$tmp" && ls -A | grep -v -x -e sw.json -e m1.json -e r.csv -e tr.json -e rep.json -e victim \
  -e victim.orig -e fifo -e link -e ro -e dir -e err -e ok.out -e fsz.out -e out -e '' || true)
[ -z "$left" ] && ok || bad "files left behind: $left"

# The old sweep wrote PATH.tmp and renamed it: a symbolic link planted there
# made it write through to the link's target.
ln -s victim "$tmp/planted.csv.tmp"
expect 0 "$H" sweep "$tmp/sw.json" --quiet --no-timings -o "$tmp/planted.csv"
unchanged_victim "sweep -o with a planted .tmp"
[ -L "$tmp/planted.csv.tmp" ] && ok || bad "the planted link was removed or replaced"
cmp -s "$tmp/planted.csv" "$tmp/r.csv" && ok || bad "planted.csv is not the sweep's table"

# A write that fails (ulimit -f) leaves the old file whole, with no
# temporary beside it: here the run.json a truncated import used to leave.
mkdir "$tmp/w"
for c in "import megatron-log $D/import/megatron_gpt2_1gpu.log -o %s" "${SIM[*]} --trace %s" \
         "sweep $tmp/sw.json --quiet --no-timings -o %s" "${EL[*]} --timeline-csv %s"; do
  printf 'old\n' >"$tmp/w/out"
  ( ulimit -f 0; exec "$H" ${c//%s/$tmp/w/out} >/dev/null ) 2>&1 | cat >"$tmp/err"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 153 ] && grep -q "File too large" "$tmp/err"; then ok
  else bad "ulimit -f 0 on a file: exit $rc: $c: $(head -c 300 "$tmp/err")"; fi
  [ "$(cat "$tmp/w/out")" = old ] && [ "$(ls -A "$tmp/w")" = out ] && ok \
    || bad "after a failed write: $(ls -A "$tmp/w"): $c"
done

# A replaced file keeps its mode; "-" still means stdout.
printf 'x\n' >"$tmp/w/out"; chmod 0640 "$tmp/w/out"
expect 0 "$H" "${PLAN[@]}" -o "$tmp/w/out"
[ "$(stat -c %a "$tmp/w/out")" = 640 ] && ok || bad "mode not kept: $(stat -c %a "$tmp/w/out")"
has "$tmp/w/out" '"strategy"'
expect 0 "$H" "${PLAN[@]}" -o -
has "$tmp/out" '"strategy"'

echo "robust_output: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
