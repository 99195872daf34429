#!/usr/bin/env bash
# breakdown.sh - the time and memory breakdowns in compare (JSON and CSV,
# with identical keys) and in the sweep CSV: the time parts add up to the
# iteration time and the memory parts to the peak memory of each row.
# Units: schema_version in JSON, an explicit "unpriced" (null in JSON)
# where GPUs have no price, GiB for the catalog's binary capacities.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?}
. "$(dirname "$0")/lib.bash"
py=/usr/bin/python3

args=(--model gpt3-1.3b --cluster a100-v100-two-sites --strategies data-parallel,megatron,hapt --global-batch 96)
"$bin" compare "${args[@]}" --format csv >"$tmp/c.csv" 2>"$tmp/err" || die "compare csv: $(cat "$tmp/err")"
"$bin" compare "${args[@]}" --format json >"$tmp/c.json" 2>"$tmp/err" || die "compare json: $(cat "$tmp/err")"
"$bin" sweep "$data/sweep/small.json" -o "$tmp/s.csv" --quiet 2>"$tmp/err" || die "sweep: $(cat "$tmp/err")"
$py - "$tmp/c.csv" "$tmp/c.json" "$tmp/s.csv" <<'PY' || fail=1
import csv, json, sys
ok = True
def bad(m):
    global ok
    ok = False
    print("FAIL:", m, file=sys.stderr)
T = ["time_%s_s" % k for k in ("compute", "recompute", "tp_comm", "pp_comm", "dp_comm", "bubble", "optimizer")]
M = ["mem_%s_bytes" % k for k in ("weights", "gradients", "optimizer", "activations", "workspace")]
rows = list(csv.DictReader(open(sys.argv[1])))
js = json.load(open(sys.argv[2]))["rows"]
hdr = set(rows[0].keys())
for j in js:
    if j["ok"]:
        extra = set(j) - hdr - {"ok", "reason"}
        if extra:
            bad(f"compare JSON keys missing from the CSV: {sorted(extra)}")
for r in rows:
    it = float(r["iteration_s"])
    s = sum(float(r[k]) for k in T)
    if abs(s - it) > 1e-4 * it:   # the CSV prints iteration_s with 6 digits
        bad(f"compare {r['strategy']}: time parts {s} vs iteration {it}")
    m = sum(float(r[k]) for k in M)
    if abs(m - float(r["peak_memory_bytes"])) > 1e-9 * m:
        bad(f"compare {r['strategy']}: memory parts {m} vs peak {r['peak_memory_bytes']}")
for j in js:
    if abs(sum(j[k] for k in T) - j["iteration_s"]) > 1e-9 * j["iteration_s"]:
        bad(f"compare JSON {j['strategy']}: time parts do not add up")
n = 0
for r in csv.DictReader(open(sys.argv[3])):
    if r["status"] != "ok":
        if any(r[k] for k in T + M):
            bad(f"sweep point {r['point']}: breakdown on a failed row")
        continue
    n += 1
    it = float(r["iteration_s"])
    s = sum(float(r[k]) for k in T)
    if abs(s - it) > 1e-5 * it:
        bad(f"sweep point {r['point']}: time parts {s} vs iteration {it}")
    if min(float(r[k]) for k in T + M) < 0:
        bad(f"sweep point {r['point']}: negative part")
if n == 0:
    bad("sweep gave no ok rows")
if json.load(open(sys.argv[2])).get("schema_version") != 1:
    bad("compare JSON lacks schema_version 1")
sys.exit(0 if ok else 1)
PY

# unpriced GPUs (H800 and H20 have no catalog price): an explicit marker,
# never $0 or a partial sum
"$bin" simulate --model gpt3-1.3b --cluster autohet-a100-h800-h20 --tp 8 --pp 2 --global-batch 96 --json \
  >"$tmp/u.json" 2>"$tmp/err" || die "unpriced simulate: $(cat "$tmp/err")"
"$bin" simulate --model gpt3-1.3b --cluster autohet-a100-h800-h20 --tp 8 --pp 2 --global-batch 96 \
  >"$tmp/u.txt" 2>&1 || die "unpriced simulate text"
grep -q '^cost *unpriced: 32 of the plan.s 48 GPUs' "$tmp/u.txt" || die "text report: $(grep cost "$tmp/u.txt")"
"$bin" compare --model gpt3-1.3b --cluster autohet-a100-h800-h20 --strategies megatron --global-batch 96 \
  >"$tmp/u.tab" 2>/dev/null || die "unpriced compare"
grep -q '^megatron .* unpriced ' "$tmp/u.tab" || die "compare table: $(cat "$tmp/u.tab")"
"$bin" compare --model gpt3-1.3b --cluster autohet-a100-h800-h20 --strategies megatron --global-batch 96 \
  --format json >"$tmp/u.cmp.json" 2>/dev/null || die "unpriced compare json"
$py - "$tmp/u.json" "$tmp/u.cmp.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))["rows"][0]
ok = r["schema_version"] == 1 and r["unpriced_gpus"] == 32 and r["cost_usd_per_iteration"] is None
ok &= r["cost_usd_per_million_tokens"] is None and r["usd_per_hour"] is None
ok &= c["usd_per_million_tokens"] is None and c["unpriced_gpus"] > 0
if not ok:
    print("FAIL: unpriced JSON", {k: r[k] for k in ("unpriced_gpus", "cost_usd_per_iteration")}, c, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
# GiB where binary: the catalog's 16 GiB V100 reads 16.0, not 17.2
"$bin" list gpus | grep -q '^V100-SXM2-16GB .* 16\.0 ' || die "list gpus: $("$bin" list gpus | grep V100-SXM2-16GB)"
"$bin" list gpus | head -1 | grep -q 'mem GiB' || die "list gpus header"
exit $fail
