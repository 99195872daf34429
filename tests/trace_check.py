#!/usr/bin/env python3
"""trace_check.py - checks Chrome/Perfetto trace JSON files against the rules
Perfetto documents for the JSON format, independently of hetsim's writer:

- complete events ("X") on one (pid, tid) track nest: sorted by start (longer
  first on ties), each either starts after the enclosing slice ends or ends
  inside it (no partial overlap; compared in integer nanoseconds);
- every "X" has a non-negative dur and a `cat` (from --cats when given);
- no unmatched "B"/"E" pairs on a track;
- flow events: every id has exactly one "s" and one "f", the "f" not before
  the "s", and each lies inside an "X" slice on its own track (what it binds
  to);
- counters ("C") have numeric args and, per (pid, name), non-decreasing ts.

usage: trace_check.py [--cats a,b,...] [--max-bytes N] TRACE.json...
Exit 0 when every file passes, 1 otherwise (one line per problem, at most 20
per file).
"""
import json
import os
import sys
from collections import defaultdict


def ns(x):
    return int(round(float(x) * 1000.0))


def check(path, cats, max_bytes):
    problems = []
    size = os.path.getsize(path)
    if max_bytes is not None and size > max_bytes:
        problems.append(f"{size} bytes, more than {max_bytes}")
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    tracks = defaultdict(list)
    be = defaultdict(list)
    flows = defaultdict(dict)
    counters = defaultdict(list)
    for i, e in enumerate(events):
        ph = e.get("ph")
        key = (e.get("pid"), e.get("tid"))
        if ph == "X":
            if "cat" not in e or (cats and e["cat"] not in cats):
                problems.append(f"event {i} ({e.get('name')}): cat {e.get('cat')!r}")
            t0, d = ns(e["ts"]), ns(e.get("dur", 0))
            if d < 0:
                problems.append(f"event {i}: negative dur")
            tracks[key].append((t0, t0 + d, i))
        elif ph in ("B", "E"):
            be[key].append(ph)
        elif ph in ("s", "f", "t"):
            fid = (e.get("cat"), e.get("id"))
            if ph in flows[fid]:
                problems.append(f"flow {fid}: two '{ph}' events")
            flows[fid][ph] = (key, ns(e["ts"]))
        elif ph == "C":
            args = e.get("args", {})
            if not args or not all(isinstance(v, (int, float)) for v in args.values()):
                problems.append(f"counter event {i}: args {args!r}")
            counters[(e.get("pid"), e.get("name"))].append(ns(e["ts"]))
    for key, evs in tracks.items():
        evs.sort(key=lambda x: (x[0], -x[1], x[2]))
        stack = []
        for t0, t1, i in evs:
            while stack and stack[-1][1] <= t0 and not (stack[-1][0] == t0 == stack[-1][1] == t1):
                stack.pop()
            if stack and t1 > stack[-1][1]:
                problems.append(f"track {key}: event {i} [{t0}, {t1}] ns partially overlaps "
                                f"event {stack[-1][2]} [{stack[-1][0]}, {stack[-1][1]}] ns")
                continue
            stack.append((t0, t1, i))
    for key, phs in be.items():
        depth = 0
        for p in phs:
            depth += 1 if p == "B" else -1
            if depth < 0:
                break
        if depth != 0:
            problems.append(f"track {key}: unmatched B/E events")
    for fid, ends in flows.items():
        if set(ends) != {"s", "f"}:
            problems.append(f"flow {fid}: has {sorted(ends)}, needs one 's' and one 'f'")
            continue
        if ends["f"][1] < ends["s"][1]:
            problems.append(f"flow {fid}: finishes before it starts")
        for ph, (key, t) in ends.items():
            if not any(t0 <= t <= t1 for t0, t1, _ in tracks.get(key, [])):
                problems.append(f"flow {fid}: '{ph}' at {t} ns binds to no slice on track {key}")
    for key, tss in counters.items():
        if any(b < a for a, b in zip(tss, tss[1:])):
            problems.append(f"counter {key}: ts not in order")
    for p in problems[:20]:
        print(f"{path}: {p}", file=sys.stderr)
    if len(problems) > 20:
        print(f"{path}: ... {len(problems) - 20} more", file=sys.stderr)
    return not problems


def main(argv):
    cats, max_bytes, files = None, None, []
    k = 0
    while k < len(argv):
        if argv[k] == "--cats":
            cats = set(argv[k + 1].split(","))
            k += 2
        elif argv[k] == "--max-bytes":
            max_bytes = int(argv[k + 1])
            k += 2
        else:
            files.append(argv[k])
            k += 1
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for p in files:
        ok &= check(p, cats, max_bytes)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
