#!/usr/bin/env bash
# elastic.sh - `hetsim elastic` from the outside: exit codes and messages for
# bad input, same seed -> same bytes, the --compare-recovery table, the
# timeline exports (Chrome trace JSON and CSV agree with the result's phase
# times), and a trace-file run whose preempted layers all survive on DP
# replicas (zero cloud bytes).
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?HETSIM_TEST_DATA must point at tests/data}
. "$(dirname "$0")/lib.bash"
cl="$data/elastic/spot4x4.json"
common=(--model gpt3-1.3b --cluster "$cl" --strategy data-parallel --global-batch 48)

"$bin" elastic --help >/dev/null || die "--help failed"
"$bin" elastic --cluster "$cl" >/dev/null 2>&1
[ $? -eq 2 ] || die "missing --model should exit 2"
"$bin" elastic "${common[@]}" --recovery teleport >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || die "bad --recovery should exit 2"
grep -q teleport "$tmp/err" || die "message does not name the recovery: $(cat "$tmp/err")"
"$bin" elastic "${common[@]}" --trace-file "$data/elastic/bad_trace.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || die "bad trace should exit 2"
grep -q 'bad_trace.json: events\[1\].kind.*vanish' "$tmp/err" || die "bad trace message: $(cat "$tmp/err")"
"$bin" elastic "${common[@]}" --trace-file "$tmp/none.json" >/dev/null 2>&1
[ $? -eq 2 ] || die "missing trace file should exit 2"
"$bin" elastic "${common[@]}" --rates mars=1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || die "bad --rates should exit 2"
grep -q mars "$tmp/err" || die "rates message does not name the key"
"$bin" elastic "${common[@]}" --hours 0 >/dev/null 2>&1
[ $? -eq 2 ] || die "--hours 0 should exit 2"
"$bin" elastic "${common[@]}" --strategy nope >/dev/null 2>&1
[ $? -eq 2 ] || die "unknown strategy should exit 2"

# same seed, same bytes (JSON and timelines); another seed differs
for k in 1 2; do
  "$bin" elastic "${common[@]}" --hours 4 --rates spot=2 --seed 5 --json \
    --timeline "$tmp/t$k.json" --timeline-csv "$tmp/t$k.csv" >"$tmp/r$k.json" 2>"$tmp/err" \
    || die "run $k failed: $(cat "$tmp/err")"
done
cmp -s "$tmp/r1.json" "$tmp/r2.json" || die "same seed gave different JSON"
cmp -s "$tmp/t1.json" "$tmp/t2.json" || die "same seed gave different timeline JSON"
cmp -s "$tmp/t1.csv" "$tmp/t2.csv" || die "same seed gave different timeline CSV"
/usr/bin/python3 "$(dirname "$0")/../trace_check.py" "$tmp/t1.json" || die "timeline breaks Perfetto's rules (trace_check)"
"$bin" elastic "${common[@]}" --hours 4 --rates spot=2 --seed 6 --json >"$tmp/r3.json" 2>/dev/null
cmp -s "$tmp/r1.json" "$tmp/r3.json" && die "another seed gave the same JSON"

# timeline CSV tiles the horizon and its phase sums match the result
python3 - "$tmp/r1.json" "$tmp/t1.csv" "$tmp/t1.json" <<'PY' || fail=1
import csv, json, sys
r = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
t = 0.0
sums = {}
for row in rows:
    s, e = float(row["start_s"]), float(row["end_s"])
    assert abs(s - t) < 1e-9, (s, t)
    t = e
    sums[row["phase"]] = sums.get(row["phase"], 0.0) + e - s
assert abs(t - r["hours"] * 3600) < 1e-6, t
for k, v in r["time_s"].items():
    assert abs(sums.get(k, 0.0) - v) < 1e-6, (k, sums.get(k), v)
tr = json.load(open(sys.argv[3]))
xs = [e for e in tr["traceEvents"] if e["ph"] == "X"]
assert any(e["pid"] == 0 for e in xs) and any(e["pid"] == 1 for e in xs)
assert r["n_preemptions"] > 0 and len(r["recoveries"]) > 0
PY

# compare: one row per recovery strategy on the same sequence
"$bin" elastic "${common[@]}" --hours 4 --rates spot=2 --seed 5 --compare-recovery >"$tmp/cmp" 2>"$tmp/err" \
  || die "compare failed: $(cat "$tmp/err")"
for s in cloud local-first restart; do
  grep -q "^$s " "$tmp/cmp" || die "compare lacks a row for $s"
done
grep -q 'local-first recovers .*x faster than cloud' "$tmp/cmp" || die "compare lacks the speed-up line"

# trace file: node 3 preempted at 1000 s; data-parallel keeps every layer on
# the other replicas: zero cloud bytes, 1000 s of work lost
"$bin" elastic "${common[@]}" --hours 2 --trace-file "$data/elastic/dp_survive.json" --json >"$tmp/dp.json" 2>"$tmp/err" \
  || die "trace run failed: $(cat "$tmp/err")"
python3 - "$tmp/dp.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
a = r["recoveries"][0]
assert a["cause"] == "preempt" and a["bytes_cloud"] == 0 and a["bytes_local"] > 0, a
assert abs(a["lost_s"] - 1000) < 1e-9, a
assert r["n_preemptions"] == 1 and r["n_replacements"] == 1
PY
# a cluster with an unpriced GPU (H20): cost unknown, never $0 or a partial sum
sed 's/A100-SXM4-80GB/H20-96GB/' "$cl" >"$tmp/h20.json"
"$bin" elastic --model gpt3-1.3b --cluster "$tmp/h20.json" --strategy data-parallel --global-batch 48 \
  --json >"$tmp/h20.out" 2>"$tmp/err" || die "unpriced elastic: $(cat "$tmp/err")"
python3 - "$tmp/h20.out" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["cost_usd"] is None and r["usd_per_million_tokens"] is None, r
assert r["priced"] is False and r["n_unpriced_devices"] == 16, r
PY
"$bin" elastic --model gpt3-1.3b --cluster "$tmp/h20.json" --strategy data-parallel --global-batch 48 \
  >"$tmp/h20.txt" 2>"$tmp/err" || die "unpriced elastic text: $(cat "$tmp/err")"
grep -q '^cost  *unpriced: 16 GPUs' "$tmp/h20.txt" || die "text: $(grep cost "$tmp/h20.txt")"
exit $fail
