#!/usr/bin/env bash
# trace.sh - `simulate --trace` writes traces Perfetto draws correctly, at
# every --trace-detail, for every schedule family (1f1b, interleaved,
# hetero-1f1b with async sends across two sites, HAP's SPMD stages) and with
# recomputation: tests/trace_check.py checks nesting per track, categories,
# flow arrows and counters with Python's json module, independently of the
# writer. Also: every device has one forward and one backward slice per
# microbatch and chunk; the link counters, as step functions, average over
# the iteration to the report's utilisation (they integrate to the bytes); a
# 1024-GPU run at stage detail is a few hundred kB with one process per
# stage; and the report's per-stage time breakdown adds up to the iteration
# time, with closed-form checks on a single-GPU plan.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
D=${HETSIM_TEST_DATA:?}
here=$(cd "$(dirname "$0")/.." && pwd)
check="$here/trace_check.py"
cats=compute,recompute,tp-comm,pp-comm,dp-comm,optimizer,idle
. "$(dirname "$0")/lib.bash"
py=/usr/bin/python3

# name|simulate arguments
cases=(
  "grid|--model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --dp 2 --global-batch 16"
  "interleaved|--model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --dp 2 --global-batch 16 --schedule interleaved-1f1b --chunks 2"
  "full|--model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 4 --dp 1 --global-batch 16 --recompute full"
  "selective|--model gpt3-1.3b --cluster dgx-a100-1node --tp 1 --pp 2 --dp 4 --global-batch 16 --recompute selective"
  "hetero|--model gpt3-1.3b --cluster a100-v100-two-sites --plan $D/plans/two-site-hetero.json"
)
"$bin" plan --model hap-bert-base --cluster hap-v100-p100 --strategy hap -o "$tmp/hap.json" >/dev/null 2>&1 \
  || die "hap plan failed"
cases+=("hap|--model hap-bert-base --cluster hap-v100-p100 --plan $tmp/hap.json")

for c in "${cases[@]}"; do
  name=${c%%|*}
  read -r -a args <<<"${c#*|}"
  for d in stage device kernel; do
    "$bin" simulate "${args[@]}" --trace "$tmp/$name-$d.json" --trace-detail "$d" --json \
      >"$tmp/$name-$d.report.json" 2>"$tmp/err" || { die "$name $d: $(cat "$tmp/err")"; continue; }
    $py "$check" --cats "$cats" "$tmp/$name-$d.json" || die "$name $d: trace_check"
  done
  # detail levels describe the same run
  cmp -s "$tmp/$name-stage.report.json" "$tmp/$name-kernel.report.json" || die "$name: report depends on the trace detail"
done

$py - "$tmp" <<'PY' || fail=1
import json, sys, collections
tmp = sys.argv[1]
ok = True
def bad(msg):
    global ok
    ok = False
    print("FAIL:", msg, file=sys.stderr)
def load(n):
    return json.load(open(f"{tmp}/{n}.json"))["traceEvents"]

# flow arrows join sends to receives (pipeline cases); one s and one f per id
for name in ("grid", "hetero", "interleaved"):
    ev = load(f"{name}-device")
    s = sum(e["ph"] == "s" for e in ev); f = sum(e["ph"] == "f" for e in ev)
    sends = sum(e["ph"] == "X" and e["name"].startswith("send ") for e in ev)
    if not (s == f == sends > 0):
        bad(f"{name}: {s} flow starts, {f} ends, {sends} sends")

# every category the run has appears; recompute only where recomputed
for name, want in (("grid", {"compute", "tp-comm", "pp-comm", "dp-comm", "optimizer", "idle"}),
                   ("full", {"recompute"}), ("selective", {"recompute"})):
    got = {e.get("cat") for e in load(f"{name}-kernel") if e["ph"] == "X"}
    if not want <= got:
        bad(f"{name}: categories {sorted(got)} lack {sorted(want - got)}")
if any(e.get("cat") == "recompute" for e in load("grid-kernel")):
    bad("grid: recompute slices without recomputation")

# hetero-1f1b's async sends overlap: they need more than one lane somewhere
ev = load("hetero-device")
lanes = {e["tid"] for e in ev if e["ph"] == "X" and e["cat"] == "pp-comm"}
if len(lanes) < 3:
    bad(f"hetero: pp lanes {sorted(lanes)}")

# the compute track covers [0, T] exactly (items, optimizer, idle tile it)
for name in ("grid", "hetero"):
    ev = load(f"{name}-device")
    rep = json.load(open(f"{tmp}/{name}-device.report.json"))
    T = round(rep["iteration_time_s"] * 1e9)
    top = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "X" and e["tid"] == 0 and e["cat"] != "recompute":
            top[e["pid"]].append((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    for pid, v in top.items():
        v.sort()
        if v[0][0] != 0 or any(a[1] != b[0] for a, b in zip(v, v[1:])) or abs(v[-1][1] - T) > 1:
            bad(f"{name}: compute track of pid {pid} does not tile [0, {T}] ns")
            break

# stage detail: one process per (stage, distinct pipeline); device: every device
ev = load("grid-stage")
procs = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name" and "stage" in e["args"]["name"]]
if len(procs) != 2:
    bad(f"grid stage detail: {len(procs)} stage processes, want 2 (pp=2, dp folded)")
ev = load("grid-device")
devs = {e["pid"] for e in ev if e["ph"] == "X" and e["tid"] == 0}
if devs != set(range(8)):
    bad(f"grid device detail: devices {sorted(devs)}")

# link counters: a step function (each sample holds until the next, the
# last closes the series at T with 0), samples strictly after one another
# and none repeating the previous value; its time average over [0, T] is the
# report's utilisation of the link (bytes / (capacity x T)), i.e. the
# counter integrates to the bytes the link's flows carried
for name in ("grid", "hetero"):
    ev = load(f"{name}-device")
    rep = json.load(open(f"{tmp}/{name}-device.report.json"))
    T = round(rep["iteration_time_s"] * 1e9)
    series = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "C":
            series[e["name"]].append((round(e["ts"] * 1000), e["args"]["utilisation"]))
    for l in rep["links"]:
        s = series.get(l["link"])
        if not s:
            bad(f"{name}: no counter for link {l['link']}")
            continue
        if s[0][0] != 0 or s[-1] != (T, 0) or any(a[0] >= b[0] for a, b in zip(s, s[1:])) \
           or any(a[1] == b[1] for a, b in zip(s[:-2], s[1:-1])):
            bad(f"{name}: link {l['link']} samples {s[:3]}..{s[-2:]} (T {T})")
            break
        mean = sum(u * (b[0] - t0) for (t0, u), b in zip(s, s[1:])) / T
        # samples are written with %.6g: each is within 5e-6 of itself
        # (relative), so their time average is within 5e-6 of the exact one
        if abs(mean - l["utilisation"]) > 5e-6 * max(1e-9, l["utilisation"]) + 1e-12:
            bad(f"{name}: link {l['link']} counter averages {mean}, report says {l['utilisation']}")
            break

# slices per device: every device of a plan with dp replicas of m = B /
# (dp x mbs) microbatches runs one forward and one backward slice per
# microbatch and chunk (case: global batch, dp, mbs 1, chunks), at device and
# kernel detail alike
for name, B, dp, v in (("grid", 16, 2, 1), ("interleaved", 16, 2, 2), ("full", 16, 1, 1)):
    for d in ("device", "kernel"):
        ev = load(f"{name}-{d}")
        rep = json.load(open(f"{tmp}/{name}-{d}.report.json"))
        want = B // dp * v
        per = collections.defaultdict(collections.Counter)
        for e in ev:
            if e["ph"] == "X" and e["tid"] == 0 and e["cat"] == "compute" and e["name"][:6] in ("fwd mb", "bwd mb"):
                per[e["pid"]][e["name"][:3]] += 1
        if set(per) != set(range(rep["n_devices"])) or any(c != {"fwd": want, "bwd": want} for c in per.values()):
            bad(f"{name} {d}: items per device {dict(per)}, want {want} fwd and bwd on each of {rep['n_devices']}")

# time breakdown: a partition of the iteration on every stage; memory
# breakdown: the parts add up to the stage's peak
want = ("compute", "recompute", "tp_comm", "pp_comm", "dp_comm", "bubble", "optimizer")
for name in ("grid", "interleaved", "full", "selective", "hetero", "hap"):
    rep = json.load(open(f"{tmp}/{name}-stage.report.json"))
    T = rep["iteration_time_s"]
    for st in rep["stages"]:
        tb = st["time_breakdown_s"]
        if set(tb) != set(want) or min(tb.values()) < 0:
            bad(f"{name}: breakdown {tb}")
        if abs(sum(tb.values()) - T) > 2e-9 * max(1, len(tb)):
            bad(f"{name} stage {st['stage']}: breakdown sums to {sum(tb.values())}, iteration {T}")
        if (tb["recompute"] > 0) != (name in ("full", "selective")):
            bad(f"{name}: recompute {tb['recompute']}")
        mb = st["memory_breakdown_bytes"]
        if set(mb) != {"weights", "gradients", "optimizer", "activations", "workspace"}:
            bad(f"{name}: memory breakdown keys {sorted(mb)}")
        elif abs(sum(mb.values()) - st["peak_memory_bytes"]) > 1e-9 * st["peak_memory_bytes"]:
            bad(f"{name} stage {st['stage']}: memory parts sum to {sum(mb.values())}, peak {st['peak_memory_bytes']}")
        if (mb["workspace"] > 0) != (name == "full"):
            bad(f"{name}: workspace {mb['workspace']}")
sys.exit(0 if ok else 1)
PY

# one GPU, full recomputation: nothing to communicate or wait for, so the
# iteration is m x (fwd + bwd) + optimizer, the recomputed forward is m x fwd,
# and with no collectives fwd_s is pure compute
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 1 --pp 1 --dp 1 --global-batch 8 \
  --recompute full --json >"$tmp/one.json" 2>"$tmp/err" || die "one-GPU run: $(cat "$tmp/err")"
$py - "$tmp/one.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
s = r["stages"][0]; tb = s["time_breakdown_s"]; m = 8
ok = abs(tb["recompute"] - m * s["fwd_s"]) < 1e-8 * m
ok &= abs(tb["compute"] + tb["recompute"] - m * (s["fwd_s"] + s["bwd_s"])) < 1e-8 * m
ok &= tb["tp_comm"] == tb["pp_comm"] == tb["dp_comm"] == tb["bubble"] == 0
ok &= abs(sum(tb.values()) - r["iteration_time_s"]) < 1e-9
# memory: 2 B weights + 2 B gradients + 12 B fp32 master and Adam moments
# per parameter (Megatron's mixed precision), without ZeRO on one GPU
mb = s["memory_breakdown_bytes"]; P = s["params_per_device"]
ok &= abs(mb["weights"] - 2 * P) < 1e-6 * P and abs(mb["gradients"] - 2 * P) < 1e-6 * P
ok &= abs(mb["optimizer"] - 12 * P) < 1e-6 * P
ok &= s["layers"] == [0, 23] and s["embedding"] and s["head"]
if not ok:
    print("FAIL: one-GPU breakdown", tb, mb, P, s["layers"], s["fwd_s"], s["bwd_s"], r["iteration_time_s"], file=sys.stderr)
sys.exit(0 if ok else 1)
PY

# 1024 GPUs at stage detail: a few hundred kB, every one of the 8 stages
"$bin" simulate --model llama3-70b --cluster dgx-h100-128nodes --tp 8 --pp 8 --dp 16 --global-batch 1024 \
  --recompute full --trace "$tmp/big.json" >/dev/null 2>"$tmp/err" || die "1024-GPU run: $(cat "$tmp/err")"
$py "$check" --cats "$cats" --max-bytes 4000000 "$tmp/big.json" || die "1024-GPU trace_check"
n=$(grep -c '"process_name".*stage [0-7] (' "$tmp/big.json")
[ "$n" -eq 8 ] || die "1024-GPU stage trace has $n stage processes, want 8"

# the report lists the cross-site links first (two-site plan), flagged in JSON
"$bin" simulate --model gpt3-1.3b --cluster a100-v100-two-sites --plan "$D/plans/two-site-hetero.json" \
  >"$tmp/h.txt" 2>&1 || die "two-site text report"
awk '/^busiest links/ { on = 1; next } on && NF { print; exit }' "$tmp/h.txt" | grep -q '(cross-site)' \
  || die "first busiest link is not the cross-site one: $(grep -A3 '^busiest' "$tmp/h.txt")"
grep -q '"cross_site":	true' "$tmp/hetero-stage.report.json" || die "no cross_site link in the JSON report"

# bad input
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 8 --trace "$tmp/x.json" --trace-detail op \
  >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- '--trace-detail.*"op"' "$tmp/err" || die "bad --trace-detail: $(cat "$tmp/err")"

# the checker itself fails on a partial overlap and on a missing cat
printf '{"traceEvents":[{"ph":"X","cat":"compute","pid":0,"tid":0,"ts":0,"dur":10},{"ph":"X","cat":"compute","pid":0,"tid":0,"ts":5,"dur":10}]}' >"$tmp/overlap.json"
$py "$check" "$tmp/overlap.json" 2>/dev/null && die "checker accepted a partial overlap"
printf '{"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":0,"dur":10}]}' >"$tmp/nocat.json"
$py "$check" "$tmp/nocat.json" 2>/dev/null && die "checker accepted an event without cat"
printf '{"traceEvents":[{"ph":"X","cat":"a","pid":0,"tid":0,"ts":0,"dur":10},{"ph":"X","cat":"a","pid":0,"tid":0,"ts":2,"dur":3},{"ph":"s","cat":"a","id":1,"pid":0,"tid":0,"ts":1},{"ph":"f","cat":"a","id":1,"pid":0,"tid":1,"ts":4}]}' >"$tmp/flow.json"
$py "$check" "$tmp/flow.json" 2>/dev/null && die "checker accepted an unbound flow end"
exit $fail
