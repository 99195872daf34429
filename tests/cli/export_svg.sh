#!/usr/bin/env bash
# export_svg.sh - `hetsim simulate --trace` then `hetsim export --svg`: the
# SVG parses as XML and has one row per (pid, tid) stream with complete
# events, counted independently from the trace with Python's json module;
# broken traces exit 2 naming the event.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*" >&2; fail=1; }
py=/usr/bin/python3

"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --dp 2 --global-batch 16 \
  --trace "$tmp/trace.json" >/dev/null || die "simulate --trace failed"
$py "$(dirname "$0")/../trace_check.py" "$tmp/trace.json" || die "trace_check trace.json"
"$bin" export "$tmp/trace.json" --svg "$tmp/timeline.svg" 2>"$tmp/err" || die "export --svg failed: $(cat "$tmp/err")"
"$bin" export "$tmp/trace.json" --svg "$tmp/again.svg" 2>/dev/null
cmp -s "$tmp/timeline.svg" "$tmp/again.svg" || die "SVG bytes differ between two exports"
$py - "$tmp/trace.json" "$tmp/timeline.svg" <<'PY' || fail=1
import json, sys, xml.etree.ElementTree as ET
ev = json.load(open(sys.argv[1]))["traceEvents"]
streams = sorted({(e["pid"], e.get("tid", 0)) for e in ev if e.get("ph") == "X"})
root = ET.parse(sys.argv[2]).getroot()            # raises when it is not XML
ns = "{http://www.w3.org/2000/svg}"
rows = [g for g in root.iter(ns + "g") if g.get("class") == "row"]
got = [(int(g.get("data-pid")), int(g.get("data-tid"))) for g in rows]
ok = got == streams
# every row has its idle background and at least one span
for g in rows:
    rects = list(g.iter(ns + "rect"))
    ok &= len(rects) >= 2 and rects[0].get("class") == "idle"
# the simulator's forward, backward and communication spans are all drawn
colours = {r.get("fill") for r in root.iter(ns + "rect")}
ok &= {"#4c78a8", "#f58518", "#54a24b", "#e45756"} <= colours
if not ok:
    print(f"FAIL: {len(got)} SVG rows vs {len(streams)} streams in the trace; colours {sorted(colours)}", file=sys.stderr)
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
