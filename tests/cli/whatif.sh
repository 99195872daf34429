#!/usr/bin/env bash
# whatif.sh - `hetsim whatif`: the options are exactly the affordable count
# vectors (brute force from the catalog prices), ranked by tokens/s, within
# budget, with the Pareto flags recomputed from the printed numbers; an
# unpriced candidate is refused unless --gpu-price gives a price.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
root=${HETSIM_DATA:?}
. "$(dirname "$0")/lib.bash"
py=/usr/bin/python3

"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 50 \
  --candidates A100-SXM4-40GB,V100-SXM2-16GB --strategies megatron,whale --global-batch 128 \
  --format csv -j 2 >"$tmp/w.csv" 2>"$tmp/err" || die "whatif failed: $(cat "$tmp/err")"
$py - "$tmp/w.csv" "$root/clusters/gpus.json" <<'PY' || fail=1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
gpus = {g["name"]: g for g in json.load(open(sys.argv[2]))["gpus"]}
pa, pv = gpus["A100-SXM4-40GB"]["price_ondemand_usd_h"], gpus["V100-SXM2-16GB"]["price_ondemand_usd_h"]
budget = 50.0
expect = set()
for a in range(0, 200, 8):
    for v in range(0, 200, 8):
        if a * pa + v * pv <= budget * (1 + 1e-12):
            expect.add((a, v))
def counts(label):
    a = v = 0
    for part in label.replace("(base only)", "").split():
        n = int(part.lstrip("+").split()[0]) if part.lstrip("+").isdigit() else None
    toks = label.replace("(base only)", "").split()
    for i in range(0, len(toks), 2):
        n, g = int(toks[i].lstrip("+")), toks[i + 1]
        if g == "A100-SXM4-40GB": a = n
        elif g == "V100-SXM2-16GB": v = n
    return a, v
got = {counts(r["option"]) for r in rows}
ok = True
def bad(msg):
    global ok
    print("FAIL:", msg, file=sys.stderr); ok = False
if got != expect: bad(f"options {sorted(got)} != brute force {sorted(expect)}")
base_usd = 8 * gpus["A100-SXM4-80GB"]["price_ondemand_usd_h"]  # dgx-a100-1node
for r in rows:
    a, v = counts(r["option"])
    if abs(float(r["added_usd_per_hour"]) - (a * pa + v * pv)) > 1e-3: bad(f"added cost of {r['option']}")
    if float(r["added_usd_per_hour"]) > budget + 1e-9: bad(f"{r['option']} over budget")
    if r["strategy"] and abs(float(r["usd_per_hour"]) - (base_usd + a * pa + v * pv)) > 1e-3:
        bad(f"total cost of {r['option']}: {r['usd_per_hour']}")
    if int(r["n_gpus"]) != 8 + a + v: bad(f"GPU count of {r['option']}")
okr = [r for r in rows if r["strategy"]]
tps = [float(r["tokens_per_s"]) for r in okr]
if tps != sorted(tps, reverse=True): bad("not ranked by tokens/s")
if [int(r["rank"]) for r in rows] != list(range(1, len(rows) + 1)): bad("ranks")
for r in okr:
    t, c = float(r["tokens_per_s"]), float(r["usd_per_million_tokens"])
    # $/Mtok from the printed iteration time: usd/h * iter_s / 3600 / tokens * 1e6, tokens = 128 x 2048
    want = float(r["usd_per_hour"]) * float(r["iteration_s"]) / 3600 / (128 * 2048) * 1e6
    if abs(c - want) > 1e-4 * want: bad(f"$/Mtok of {r['option']}: {c} vs {want}")
    dom = any(float(o["tokens_per_s"]) >= t and float(o["usd_per_million_tokens"]) <= c and
              (float(o["tokens_per_s"]) > t or float(o["usd_per_million_tokens"]) < c) for o in okr if o is not r)
    if (r["pareto"] == "yes") == dom: bad(f"Pareto flag of {r['option']}")
sys.exit(0 if ok else 1)
PY

# the same what-if in one process: the rows -j 2 gave (each worker
# answers repeated device-subset searches from its own search memo)
. "$(dirname "$0")/../../scripts/lib_mask.sh"
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 50 \
  --candidates A100-SXM4-40GB,V100-SXM2-16GB --strategies megatron,whale --global-batch 128 \
  --format csv -j 1 >"$tmp/w1.csv" 2>"$tmp/err" || die "whatif -j 1 failed: $(cat "$tmp/err")"
cmp -s <(hs_mask_times <"$tmp/w.csv") <(hs_mask_times <"$tmp/w1.csv") ||
  die "whatif -j 1 rows differ from -j 2: $(diff "$tmp/w.csv" "$tmp/w1.csv" | head -5)"

# the table form names the prices' sources and marks the front
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 25 \
  --candidates A100-SXM4-40GB --strategies megatron --global-batch 128 >"$tmp/t.txt" 2>/dev/null ||
  die "table whatif failed"
grep -q 'A100-SXM4-40GB .*USD/GPU-h' "$tmp/t.txt" || die "table lacks the price line: $(cat "$tmp/t.txt")"
grep -q '(base only)' "$tmp/t.txt" || die "table lacks the buy-nothing option"
grep -q 'Pareto' "$tmp/t.txt" || die "table lacks the Pareto legend"
grep -q 'uncalibrated' "$tmp/t.txt" && die "a calibrated candidate (A100-SXM4-40GB) marked uncalibrated"

# a candidate whose profile is the datasheet default is marked, in the
# table and in JSON, and a calibrated one is not (the catalog says which)
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 12 \
  --candidates L40S-48GB,A100-SXM4-40GB --strategies megatron --global-batch 128 >"$tmp/u.txt" 2>/dev/null ||
  die "whatif with an uncalibrated candidate failed"
grep -q '^  L40S-48GB .*USD/GPU-h.*uncalibrated$' "$tmp/u.txt" || die "L40S not marked uncalibrated: $(head -4 "$tmp/u.txt")"
grep -q '^  A100-SXM4-40GB .*uncalibrated' "$tmp/u.txt" && die "A100 marked uncalibrated"
grep -q '^note: uncalibrated candidates' "$tmp/u.txt" || die "no note on uncalibrated candidates"
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 12 \
  --candidates L40S-48GB,A100-SXM4-40GB --strategies megatron --global-batch 128 --format json \
  >"$tmp/u.json" 2>/dev/null || die "json whatif failed"
python3 - "$tmp/u.json" "$HETSIM_DATA/clusters/gpus.json" <<'PY' || die "JSON calibrated flags do not match the catalog"
import json, sys
r = json.load(open(sys.argv[1]))
cat = json.load(open(sys.argv[2]))
cat = {g["name"]: g for g in (cat["gpus"] if isinstance(cat, dict) else cat)}
flags = {p["gpu"]: p["calibrated"] for p in r["prices"]}
assert flags == {"L40S-48GB": False, "A100-SXM4-40GB": True}, flags
for name, f in flags.items():
    assert f == bool(cat[name].get("calibrated")), (name, f)
PY
# the ranking verdict (issue 34): the lead recomputed from the two best
# options' tokens/s, the verdict from the lead and the band, and the CSV's
# reliable_lead on the best row only
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 12 \
  --candidates L40S-48GB,A100-SXM4-40GB --strategies megatron --global-batch 128 --format csv \
  >"$tmp/u.csv" 2>/dev/null || die "csv whatif failed"
python3 - "$tmp/u.json" "$tmp/u.csv" <<'PY' || die "whatif ranking verdict inconsistent"
import csv, json, sys
r = json.load(open(sys.argv[1]))
ok = [o for o in r["options"] if o["ok"]]
assert len(ok) >= 2, ok
rk = r["ranking"]
assert (rk["winner"], rk["next"]) == (ok[0]["option"], ok[1]["option"]), rk
lead = ok[0]["tokens_per_s"] / ok[1]["tokens_per_s"] - 1.0
assert abs(rk["margin"] - lead) <= 1e-6 * max(1.0, lead), (rk["margin"], lead)
band = rk["error_band"]
assert band is not None and 0.0 < band < 10.0, rk
assert rk["reliable_difference"] == (rk["margin"] > band), rk
assert ("not a reliable difference" in rk["note"]) == (not rk["reliable_difference"]), rk
rows = list(csv.DictReader(open(sys.argv[2])))
want = "yes" if rk["reliable_difference"] else "no"
assert [x["reliable_lead"] for x in rows] == [want] + [""] * (len(rows) - 1), rows
PY
grep -q '^ranking: .* (in tokens/s)$' "$tmp/u.txt" || die "no ranking line under the table"

# H20 has no catalog price: refused, naming it and the way out
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 20 \
  --candidates H20-96GB >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || die "unpriced candidate should exit 2"
grep -q 'H20-96GB' "$tmp/err" && grep -q -- '--gpu-price' "$tmp/err" || die "message: $(cat "$tmp/err")"
"$bin" whatif --model gpt3-1.3b --replace --budget-usd-per-hour 7 --candidates L4-24GB \
  --gpu-price L4-24GB=0.8 --step 8 --strategies megatron --global-batch 64 --format csv >"$tmp/l4.csv" 2>"$tmp/err" ||
  die "whatif with --gpu-price failed: $(cat "$tmp/err")"
grep -q '^1,8 L4-24GB,8,6.4,6.4,' "$tmp/l4.csv" || die "replace + price override: $(cat "$tmp/l4.csv")"
# unpriced base (8 H20, no catalog price) + T4 purchases: USD/h and $/Mtok of
# every option are unknown ("unpriced" in text, empty in CSV, null with
# priced false in JSON) and no option is on the Pareto front (before: the
# H20s counted $0 and "+8 T4" was on the front at $0.0102/Mtok)
echo '{"name": "h20x8", "sites": [{"name": "a", "nodes": [{"count": 1, "gpu": "H20-96GB", "gpus_per_node": 8}]}]}' \
  >"$tmp/h20.json"
h20=(--model gpt3-1.3b --cluster "$tmp/h20.json" --budget-usd-per-hour 5 --candidates T4-16GB
     --strategies megatron --global-batch 128)
"$bin" whatif "${h20[@]}" >"$tmp/h20.txt" 2>"$tmp/err" || die "unpriced base: $(cat "$tmp/err")"
grep -q '+8 T4-16GB .* unpriced .* unpriced ' "$tmp/h20.txt" || die "text: $(cat "$tmp/h20.txt")"
grep -q '0\.0102' "$tmp/h20.txt" && die "a partial-sum cost printed: $(cat "$tmp/h20.txt")"
"$bin" whatif "${h20[@]}" --format json >"$tmp/h20.json.out" 2>"$tmp/err" || die "json: $(cat "$tmp/err")"
$py - "$tmp/h20.json.out" <<'PY' || fail=1
import json, sys
opts = json.load(open(sys.argv[1]))["options"]
assert len(opts) >= 2, opts
for o in opts:
    assert o["usd_per_hour"] is None and o["priced"] is False and o["unpriced_gpus"] == 8, o
    assert o["usd_per_million_tokens"] is None and o["pareto"] is False, o
PY
"$bin" whatif "${h20[@]}" --format csv >"$tmp/h20.csv" 2>"$tmp/err" || die "csv: $(cat "$tmp/err")"
$py - "$tmp/h20.csv" <<'PY' || fail=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) >= 2, rows
for r in rows:
    assert r["usd_per_hour"] == "" and r["usd_per_million_tokens"] == "" and r["pareto"] == "no", r
PY
# bad input
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour 20 --candidates A1OO >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'A1OO' "$tmp/err" || die "unknown GPU: $(cat "$tmp/err")"
"$bin" whatif --model gpt3-1.3b --cluster dgx-a100-1node --budget-usd-per-hour -3 --candidates A100-SXM4-40GB >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || die "negative budget should exit 2"
"$bin" whatif --model gpt3-1.3b --budget-usd-per-hour 20 --candidates A100-SXM4-40GB >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || die "no --cluster and no --replace should exit 2"
exit $fail
