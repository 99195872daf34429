#!/usr/bin/env bash
# plan_compare.sh - `hetsim plan`, `hetsim compare` and `hetsim list
# strategies|scenarios` from the outside: exit codes, messages, CSV shape,
# and a plan written by `plan -o` that `simulate --plan` accepts.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
. "$(dirname "$0")/lib.bash"

# unknown strategy: exit 2, message names it
"$bin" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy no-such-planner >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || die "plan with a bad strategy exited $rc, expected 2"
grep -q 'no-such-planner' "$tmp/err" || die "message does not name the strategy: $(cat "$tmp/err")"
"$bin" compare --model gpt3-1.3b --cluster dgx-a100-1node --strategies megatron,bogus >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || die "compare with a bad strategy exited $rc, expected 2"
grep -q 'bogus' "$tmp/err" || die "compare message does not name the strategy"

# missing required options: 2
"$bin" plan --model gpt3-1.3b >/dev/null 2>&1
[ $? -eq 2 ] || die "plan without --cluster should exit 2"

# --mip-gap outside [0, 1): exit 2 naming the option and value
"$bin" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy autohet --mip-gap 1.5 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || die "plan --mip-gap 1.5 exited $rc, expected 2"
grep -q -- '--mip-gap: must be in \[0, 1), got 1.5' "$tmp/err" || die "mip-gap message: $(cat "$tmp/err")"

# progress: plain lines with the fraction done when stderr is not a
# terminal (HETSIM_PROGRESS_INTERVAL_S=0.2: one every 0.2 s), never
# carriage-return redraws; autohet stops on its work budget, not seconds
HETSIM_PROGRESS_INTERVAL_S=0.2 "$bin" plan --model gpt3-1.3b --cluster autohet-a100-h800-h20 \
  --strategy autohet -o "$tmp/ah.json" >/dev/null 2>"$tmp/err" || die "autohet plan failed: $(cat "$tmp/err")"
if grep -q $'\r' "$tmp/err"; then die "progress redrawn with CR on a non-terminal"; fi
grep -q '^autohet search: .*done, .* s elapsed' "$tmp/err" || die "no plain progress line: $(head -c 300 "$tmp/err")"

# compare --format csv: a header and one row per strategy
"$bin" compare --model gpt3-1.3b --cluster dgx-a100-1node --strategies data-parallel,megatron,whale,hapt \
  --global-batch 64 --format csv >"$tmp/cmp.csv" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || die "compare csv exited $rc: $(cat "$tmp/err")"
head -1 "$tmp/cmp.csv" | grep -q '^strategy,iteration_s,tokens_per_s' || die "csv header: $(head -1 "$tmp/cmp.csv")"
rows=$(($(wc -l <"$tmp/cmp.csv") - 1))
[ "$rows" -eq 4 ] || die "csv has $rows rows, expected 4"
for s in data-parallel megatron whale hapt; do
  grep -q "^$s," "$tmp/cmp.csv" || die "csv lacks a row for $s"
done
# a strategy that does not apply still gets a row saying why
"$bin" compare --model gpt3-13b --cluster dgx-a100-4nodes --strategies megatron,exhaustive \
  --global-batch 64 --format csv >"$tmp/cmp2.csv" 2>/dev/null || die "compare with exhaustive on 32 GPUs failed"
grep -q '^exhaustive,.*n/a' "$tmp/cmp2.csv" || die "exhaustive row should say n/a: $(cat "$tmp/cmp2.csv")"

# plan -o writes a plan that simulate --plan accepts
"$bin" plan --model gpt3-1.3b --cluster hapt-a100-v100-10gbps --strategy hapt --global-batch 128 \
  -o "$tmp/plan.json" --quiet >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || die "plan -o exited $rc: $(cat "$tmp/err")"
grep -q 'iteration' "$tmp/out" || die "plan output lacks the iteration time"
"$bin" simulate --model gpt3-1.3b --cluster hapt-a100-v100-10gbps --plan "$tmp/plan.json" >"$tmp/sim" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || die "simulate --plan on the written plan exited $rc: $(cat "$tmp/err")"

# --json is JSON with the report
"$bin" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy megatron --global-batch 64 --json >"$tmp/p.json" 2>/dev/null \
  || die "plan --json failed"
grep -q '"iteration_time_s"' "$tmp/p.json" || die "plan --json lacks the report"

# lists
"$bin" list strategies >"$tmp/ls" || die "list strategies failed"
for s in data-parallel megatron whale hapt exhaustive; do
  grep -q "^$s " "$tmp/ls" || die "list strategies lacks $s"
done
"$bin" list scenarios >"$tmp/lsc" || die "list scenarios failed"
for s in hap hapt autohet; do
  grep -q "^$s " "$tmp/lsc" || die "list scenarios lacks $s"
done
"$bin" compare --scenario no-such >/dev/null 2>&1
[ $? -eq 2 ] || die "unknown scenario should exit 2"

# --charge cluster: $/Mtok = the whole cluster's $/h (from show cluster) x
# iteration s / 3600 / tokens per iteration x 1e6, for every strategy; a plan
# that leaves GPUs idle (both train on the A100s only) costs more
"$bin" compare --scenario hapt --strategies megatron,hapt --format json >"$tmp/used.json" 2>"$tmp/err" ||
  die "compare: $(cat "$tmp/err")"
"$bin" compare --scenario hapt --strategies megatron,hapt --format json --charge cluster \
  >"$tmp/cl.json" 2>"$tmp/err" || die "compare --charge cluster: $(cat "$tmp/err")"
"$bin" show cluster hapt-a100-v100-10gbps --json >"$tmp/cluster.json" || die "show cluster"
python3 - "$tmp/used.json" "$tmp/cl.json" "$tmp/cluster.json" <<'P' || die "--charge cluster"
import json, sys
used, cl, c = (json.load(open(f)) for f in sys.argv[1:4])
assert cl["charge"] == "cluster" and used["charge"] == "used"
u = {r["strategy"]: r for r in used["rows"]}
for r in cl["rows"]:
    tokens = 512 * 2048  # the scenario's global batch x GPT-3's sequence
    want = c["usd_per_hour"] * r["iteration_s"] / 3600 / tokens * 1e6
    assert abs(r["usd_per_million_tokens"] - want) <= 1e-9 * want, (r, want)
for r in cl["rows"]:
    assert r["usd_per_million_tokens"] >= u[r["strategy"]]["usd_per_million_tokens"] * (1 - 1e-9)
assert {r["strategy"]: r for r in cl["rows"]}["hapt"]["usd_per_million_tokens"] > \
       1.5 * u["hapt"]["usd_per_million_tokens"]
P
"$bin" compare --scenario hapt --charge some >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || die "--charge some should exit 2"
grep -q -- '--charge: must be used or cluster, got "some"' "$tmp/err" || die "charge message: $(cat "$tmp/err")"

# training-practice options go into the plan: a plan with TP keeps sequence
# parallelism, a data-parallel one (no TP group) runs without it; the
# written plan carries the options and simulates to the same iteration
"$bin" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy data-parallel --quiet \
  --kernels megatron-core-2024 --sequence-parallel --tp-comm-overlap --zero-stage 1 \
  -o "$tmp/dp.json" >"$tmp/out" 2>"$tmp/err" || die "plan data-parallel with SP: $(cat "$tmp/err")"
grep -q '"sequence_parallel":[[:space:]]*false' "$tmp/dp.json" || die "data-parallel plan kept sequence_parallel"
grep -q '"zero_stage":[[:space:]]*1' "$tmp/dp.json" || die "plan lost zero_stage"
"$bin" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy megatron --quiet \
  --kernels megatron-core-2024 --sequence-parallel --global-batch 64 -o "$tmp/mg.json" >"$tmp/out" 2>"$tmp/err" \
  || die "plan megatron with SP: $(cat "$tmp/err")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --plan "$tmp/mg.json" >"$tmp/sim" 2>"$tmp/err" \
  || die "simulate the written plan: $(cat "$tmp/err")"
a=$(grep -oE '^iteration +[0-9.]+' "$tmp/out" | grep -oE '[0-9.]+$')
b=$(grep -oE '^iteration +[0-9.]+' "$tmp/sim" | grep -oE '[0-9.]+$')
[ -n "$a" ] && [ "$a" = "$b" ] || die "plan said $a s, its file simulates to $b s"
grep -q '"attention":[[:space:]]*"flash"' "$tmp/mg.json" || die "plan lost the kernel set"

# speedups against the best baseline (docs/planners.md): the JSON names it,
# each row's key is speedup_vs_<it>, equal to its time over the row's;
# --baseline picks another row
"$bin" compare --scenario hapt --strategies whale,megatron,hapt --format json >"$tmp/base.json" 2>"$tmp/err" ||
  die "compare: $(cat "$tmp/err")"
"$bin" compare --scenario hapt --strategies whale,megatron,hapt --format json --baseline hapt \
  >"$tmp/base2.json" 2>"$tmp/err" || die "compare --baseline: $(cat "$tmp/err")"
python3 - "$tmp/base.json" "$tmp/base2.json" <<'P' || die "speedup against the best baseline"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
t = {r["strategy"]: r["iteration_s"] for r in a["rows"]}
best = min(("whale", "megatron"), key=lambda s: (t[s], ["whale", "megatron"].index(s)))
assert a["baseline"] == best, (a["baseline"], t)
for r in a["rows"]:
    assert abs(r["speedup_vs_" + best] - t[best] / r["iteration_s"]) < 1e-12, r
assert b["baseline"] == "hapt"
for r in b["rows"]:
    assert abs(r["speedup_vs_hapt"] - t["hapt"] / r["iteration_s"]) < 1e-12, r
P
"$bin" compare --scenario hapt --strategies hapt --format csv >"$tmp/nob.csv" 2>"$tmp/err" || die "compare hapt alone"
head -1 "$tmp/nob.csv" | grep -q '^strategy,iteration_s,tokens_per_s,speedup_vs_baseline,' ||
  die "no baseline in the list: $(head -1 "$tmp/nob.csv")"

# compare -j: the strategies on worker processes give the rows one process
# gives (search_s masked: a clock reading); a two-site cluster, so every
# strategy searches its device subsets (through the search memo)
. "$(dirname "$0")/../../scripts/lib_mask.sh"
for j in 1 3; do
  "$bin" compare --scenario hap --strategies data-parallel,deepspeed,whale,megatron,hap --format csv -j $j \
    2>"$tmp/err" | hs_mask_times >"$tmp/cmp_j$j.csv" || die "compare -j $j: $(cat "$tmp/err")"
done
cmp -s "$tmp/cmp_j1.csv" "$tmp/cmp_j3.csv" ||
  die "compare -j 3 rows differ from -j 1: $(diff "$tmp/cmp_j1.csv" "$tmp/cmp_j3.csv" | head -5)"
[ "$(wc -l <"$tmp/cmp_j1.csv")" -eq 6 ] || die "compare -j 1: $(wc -l <"$tmp/cmp_j1.csv") lines, want 6"
"$bin" compare --scenario hap -j 0 >/dev/null 2>"$tmp/err" && die "compare -j 0 accepted"
grep -q -- '-j' "$tmp/err" || die "compare -j 0: the message does not name -j: $(cat "$tmp/err")"

exit $fail
