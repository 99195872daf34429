#!/usr/bin/env bash
# sweep_badinput.sh - broken specs and options: exit 2 with a message naming
# the file, the field and the value; never a crash.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?}
. "$(dirname "$0")/lib.bash"
expect2() { # expect2 NEEDLE... -- ARGS
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || die "hetsim $* exited $rc, expected 2: $(cat "$tmp/err")"
  for n in "${needles[@]}"; do
    grep -qF -- "$n" "$tmp/err" || die "hetsim $*: message lacks \"$n\": $(cat "$tmp/err")"
  done
}

expect2 malformed.json malformed -- sweep "$data/sweep/malformed.json"
expect2 bad-strategy.json 'strategies[1]' magic -- sweep "$data/sweep/bad-strategy.json"
expect2 no-such-spec.json -- sweep "$tmp/no-such-spec.json"
expect2 '--resume needs -o' -- sweep "$data/sweep/small.json" --resume
expect2 'unknown option' -- sweep "$data/sweep/small.json" --bogus
expect2 '-j' -- sweep "$data/sweep/small.json" -j 0
# a one-letter flag is named as typed: "-j", never "--j"
expect2 'hetsim: -j: must be an integer, got "x"' -- sweep "$data/sweep/small.json" -j x
expect2 'hetsim: -j: must be between 1' -- whatif --model llama3-8b --cluster dgx-a100-1node \
  --budget-usd-per-hour 10 --candidates A100-SXM4-40GB -j 0
expect2 'hetsim: -j: must be an integer, got "2x"' -- compare --scenario hapt -j 2x
# planner options: the spec's precision and memory_headroom, and the flags
sed 's/"time_limit_s": 0/"time_limit_s": 0, "precision": "fp4"/' "$data/sweep/small.json" >"$tmp/prec.json"
expect2 prec.json precision fp4 -- sweep "$tmp/prec.json" --dry-run
sed 's/"time_limit_s": 0/"time_limit_s": 0, "memory_headroom": 1/' "$data/sweep/small.json" >"$tmp/head.json"
expect2 head.json memory_headroom -- sweep "$tmp/head.json" --dry-run
expect2 --memory-headroom '"2"' -- sweep "$data/sweep/small.json" --memory-headroom 2 --dry-run
expect2 --precision fp4 -- sweep "$data/sweep/small.json" --precision fp4 --dry-run
printf 'a,b\n1,2\n' >"$tmp/foreign.csv"
expect2 foreign.csv 'line 1' -- sweep "$data/sweep/small.json" -o "$tmp/foreign.csv" --resume
cmp -s "$tmp/foreign.csv" <(printf 'a,b\n1,2\n') || die "a refused --resume changed the file"
# a spec whose model does not exist still runs: error rows that name it
cat >"$tmp/badmodel.json" <<'J'
{"clusters": ["dgx-a100-1node"], "models": ["no-such-model"], "strategies": ["megatron"]}
J
"$bin" sweep "$tmp/badmodel.json" -o "$tmp/bm.csv" --quiet || die "sweep with a bad model should still exit 0"
grep -q ',error,.*no-such-model' "$tmp/bm.csv" || die "error row does not name the model: $(cat "$tmp/bm.csv")"
# dry run counts
"$bin" sweep "$data/sweep/small.json" --dry-run >"$tmp/out" || die "dry run failed"
grep -q '18 jobs' "$tmp/out" && grep -q '36 rows' "$tmp/out" || die "dry run: $(cat "$tmp/out")"
exit $fail
