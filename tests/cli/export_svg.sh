#!/usr/bin/env bash
# export_svg.sh - `hetsim simulate --trace` then `hetsim export --svg`: the
# SVG parses as XML and has, in order, the link counter rows (cross-site
# first) and a compute and a communication row per pipeline stage (one
# device each, replicas folded), counted independently from the trace with
# Python's json module; --all-devices draws every device; broken traces
# exit 2 naming the event.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
. "$(dirname "$0")/lib.bash"
py=/usr/bin/python3

"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --dp 2 --global-batch 16 \
  --trace "$tmp/trace.json" --trace-detail device >/dev/null || die "simulate --trace failed"
$py "$(dirname "$0")/../trace_check.py" "$tmp/trace.json" || die "trace_check trace.json"
"$bin" export "$tmp/trace.json" --svg "$tmp/timeline.svg" 2>"$tmp/err" || die "export --svg failed: $(cat "$tmp/err")"
"$bin" export "$tmp/trace.json" --svg "$tmp/again.svg" 2>/dev/null
cmp -s "$tmp/timeline.svg" "$tmp/again.svg" || die "SVG bytes differ between two exports"
$py - "$tmp/trace.json" "$tmp/timeline.svg" <<'PY' || fail=1
import json, sys, xml.etree.ElementTree as ET
ev = json.load(open(sys.argv[1]))["traceEvents"]
# expected rows, from the trace: link counters (cross-site ones, at most 4
# others) first, then compute + comm rows per representative device
pname = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
sort = {e["pid"]: e["args"]["sort_index"] for e in ev if e.get("ph") == "M" and e["name"] == "process_sort_index"}
links = sorted({(e["pid"], e["name"]) for e in ev if e.get("ph") == "C"})
xs = [l for l in links if pname.get(l[0]) == "cross-site links"]
others = [l for l in links if l not in xs][:4]
devs = sorted({e["pid"] for e in ev if e.get("ph") == "X" and e.get("tid") == 0}, key=lambda p: (sort[p], p))
reps = [p for p in devs if (sort[p] - 10) % 1000000 == 0]
want = [("link", l[0]) for l in xs + others] + [(k, p) for p in reps for k in ("compute", "comm")]
root = ET.parse(sys.argv[2]).getroot()            # raises when it is not XML
ns = "{http://www.w3.org/2000/svg}"
rows = [g for g in root.iter(ns + "g") if g.get("class") == "row"]
got = [(g.get("data-kind"), int(g.get("data-pid"))) for g in rows]
ok = got == want and len(reps) == 2               # pp=2: one device per stage
# every row has its background and something drawn
for g in rows:
    rects = list(g.iter(ns + "rect"))
    ok &= len(rects) >= 2 and rects[0].get("class") == "bg"
# forward, backward, TP collectives (exposed and hidden shades), DP and PP are drawn
fills = {(r.get("fill"), r.get("fill-opacity")) for r in root.iter(ns + "rect")}
ok &= {("#4c78a8", None), ("#f58518", None), ("#e45756", None)} <= fills
if not ok:
    print(f"FAIL: SVG rows {got} vs {want}; fills {sorted(fills, key=str)}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
# an elastic-style trace with categories renders too
cat >"$tmp/elastic.json" <<'J'
{"traceEvents": [
 {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "node 0 (spot)"}},
 {"ph": "X", "pid": 0, "tid": 0, "name": "train", "cat": "forward", "ts": 0, "dur": 1000},
 {"ph": "X", "pid": 0, "tid": 0, "name": "preempted", "cat": "failure", "ts": 1000, "dur": 10},
 {"ph": "X", "pid": 1, "tid": 0, "name": "fetch state from replica", "cat": "recovery", "ts": 1010, "dur": 300}
]}
J
"$bin" export "$tmp/elastic.json" --svg "$tmp/elastic.svg" 2>/dev/null || die "elastic trace export failed"
[ "$(grep -c '<g class="row"' "$tmp/elastic.svg")" -eq 2 ] || die "elastic SVG should have 2 rows"
# --all-devices draws all 8 devices of the device-detail trace
"$bin" export "$tmp/trace.json" --svg "$tmp/all.svg" --all-devices 2>/dev/null || die "--all-devices failed"
[ "$(grep -c 'data-kind="compute"' "$tmp/all.svg")" -eq 8 ] || die "--all-devices should draw 8 devices"
grep -q '#eeca3b' "$tmp/elastic.svg" || die "recovery colour missing"
# broken traces
printf '{"traceEvents": [{"ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": -5}]}' >"$tmp/bad.json"
"$bin" export "$tmp/bad.json" --svg "$tmp/bad.svg" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'bad.json: traceEvents\[0\].dur' "$tmp/err" || die "negative dur: $(cat "$tmp/err")"
printf '{"traceEvents": []}' >"$tmp/empty.json"
"$bin" export "$tmp/empty.json" --svg "$tmp/e.svg" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'no complete' "$tmp/err" || die "empty trace: $(cat "$tmp/err")"
printf '{"traceEvents": [' >"$tmp/trunc.json"
"$bin" export "$tmp/trunc.json" --svg "$tmp/t.svg" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'trunc.json' "$tmp/err" || die "truncated trace: $(cat "$tmp/err")"
exit $fail
