#!/usr/bin/env bash
# breakdown.sh - the time and memory breakdowns in compare (JSON and CSV,
# with identical keys) and in the sweep CSV: the time parts add up to the
# iteration time and the memory parts to the peak memory of each row.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*" >&2; fail=1; }
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
sys.exit(0 if ok else 1)
PY
exit $fail
