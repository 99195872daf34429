#!/usr/bin/env python3
"""Writes a large PyTorch profiler (Kineto) trace for measuring `hetsim import
torch-profiler`: the first ProfilerStep of tests/data/import/torch_cpu_step.json
(a real CPU trace) and its events, repeated STEPS times one after another.

  python3 bench/make_torch_trace_big.py STEPS OUT.json [EVENTS_PER_STEP]
  /usr/bin/time -v hetsim import torch-profiler OUT.json >/dev/null

All of a step's 300-odd events by default (1300 steps: about 80 MB); the first
EVENTS_PER_STEP of them when given (32000 steps of 8 events: many steps).
"""
import json
import os
import sys

steps = int(sys.argv[1])
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "import",
                   "torch_cpu_step.json")
t = json.load(open(src))
evs = t["traceEvents"]
st = sorted((e for e in evs if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])[0]
lo, hi = st["ts"], st["ts"] + st["dur"]
body = [e for e in evs if e is not st and e.get("ph") == "X" and lo <= e["ts"] < hi]
if len(sys.argv) > 3:
    body = body[:int(sys.argv[3])]
period = st["dur"] * 1.05
with open(sys.argv[2], "w") as f:
    head = {k: v for k, v in t.items() if k != "traceEvents"}
    f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
    first = True
    for i in range(steps):
        off = i * period
        for e in [st] + body:
            e2 = dict(e)
            e2["ts"] = round(e["ts"] + off, 3)
            if e is st:
                e2["name"] = "ProfilerStep#%d" % (i + 1)
            if "args" in e2 and "External id" in e2["args"]:
                e2["args"] = dict(e2["args"], **{"External id": e2["args"]["External id"] + i * 100000})
            f.write(("" if first else ",\n") + json.dumps(e2))
            first = False
    f.write("\n]}\n")
