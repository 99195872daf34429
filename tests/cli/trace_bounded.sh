#!/usr/bin/env bash
# trace_bounded.sh - `--trace-devices N` bounds every track family of a
# device or kernel trace (issue #35): device processes below N, and of the
# links only the cross-site ones and those of the shown devices (their GPU
# links, their nodes' NIC and rail links, their sites' fabric). What is kept
# is exactly what the unbounded trace shows for those devices and links
# (every slice on their tracks, every counter sample), checked against the
# full trace of the same run, not against a stored file; and a 1,024-GPU
# kernel trace bounded to 8 devices stays small and passes trace_check.py.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
D=${HETSIM_TEST_DATA:?}
here=$(cd "$(dirname "$0")/.." && pwd)
check="$here/trace_check.py"
cats=compute,recompute,tp-comm,pp-comm,dp-comm,optimizer,idle
. "$(dirname "$0")/lib.bash"
py=/usr/bin/python3

# name|N|simulate arguments: 4 nodes x 8 GPUs (NIC links between nodes), and
# the two-site plan (cross-site links, hetero-1f1b's overlapping sends)
cases=(
  "nodes|12|--model gpt3-1.3b --cluster dgx-a100-4nodes --tp 4 --pp 4 --dp 2 --global-batch 32"
  "hetero|20|--model gpt3-1.3b --cluster a100-v100-two-sites --plan $D/plans/two-site-hetero.json"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name n rest <<<"$c"
  read -r -a args <<<"$rest"
  for d in device kernel; do
    "$bin" simulate "${args[@]}" --trace "$tmp/$name-$d-all.json" --trace-detail $d >/dev/null 2>"$tmp/err" \
      || { die "$name $d: $(cat "$tmp/err")"; continue; }
    "$bin" simulate "${args[@]}" --trace "$tmp/$name-$d-$n.json" --trace-detail $d --trace-devices "$n" \
      >/dev/null 2>"$tmp/err" || { die "$name $d --trace-devices $n: $(cat "$tmp/err")"; continue; }
    $py "$check" --cats "$cats" "$tmp/$name-$d-$n.json" || die "$name $d bounded: trace_check"
    $py - "$tmp/$name-$d-all.json" "$tmp/$name-$d-$n.json" "$n" "$bin" <<'PY' || die "$name $d: bounded trace is not the full one's subset"
import json, re, subprocess, sys
full, part, n = json.load(open(sys.argv[1]))["traceEvents"], json.load(open(sys.argv[2]))["traceEvents"], int(sys.argv[3])
ok = True
def bad(msg):
    global ok
    ok = False
    print("FAIL:", msg, file=sys.stderr)
def procs(ev):
    return {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
pf, pp = procs(full), procs(part)
# link processes are numbered n_devices and n_devices + 1 in both
ndev = min(p for p, v in pf.items() if not v.startswith("dev "))
devs = {p for p, v in pp.items() if v.startswith("dev ")}
want_devs = {p for p, v in pf.items() if v.startswith("dev ") and p < n}
if devs != want_devs:
    bad(f"device processes {sorted(devs)}, want those of the full trace below {n}: {sorted(want_devs)}")
# no GPU link of a hidden device (labels d<dev>.up / d<dev>.down)
labels = {e["name"] for e in part if e["ph"] == "C"}
for l in labels:
    m = re.match(r"d(\d+)\.(up|down)$", l)
    if m and int(m.group(1)) >= n:
        bad(f"link {l} of a hidden device has a counter")
# subset: every slice and counter sample kept is in the full trace, as is
key = lambda e: (e["ph"], e.get("cat"), e["pid"], e.get("tid"), e["ts"], e.get("dur"), e["name"],
                 json.dumps(e.get("args", {}), sort_keys=True))
fullX = {}
for e in full:
    if e["ph"] in "XC":
        fullX.setdefault(key(e), 0)
        fullX[key(e)] += 1
# link flow lanes may be numbered differently (fewer links before them)
def strip_tid(e):
    e = dict(e)
    if e["pid"] >= ndev:
        e["tid"] = None
    return e
fullS = {}
for e in full:
    if e["ph"] in "XC":
        k = key(strip_tid(e)); fullS[k] = fullS.get(k, 0) + 1
kept = 0
for e in part:
    if e["ph"] not in "XC":
        continue
    k = key(strip_tid(e))
    if fullS.get(k, 0) == 0:
        bad(f"event not in the full trace: {e}")
        break
    fullS[k] -= 1
    kept += 1
# and nothing of the shown devices or kept links is missing
shown_links = labels
want = 0
for e in full:
    if e["ph"] == "X" and e["pid"] in devs:
        want += 1
    elif e["ph"] == "C" and e["name"] in shown_links:
        want += 1
got = sum(1 for e in part if (e["ph"] == "X" and e["pid"] in devs) or e["ph"] == "C")
if got != want:
    bad(f"{got} device slices and counter samples kept, the full trace has {want} for them")
# cross-site links are always kept
xs_full = {e["name"] for e in full if e["ph"] == "C" and pf.get(e["pid"]) == "cross-site links"}
if not xs_full <= labels:
    bad(f"cross-site links {sorted(xs_full - labels)} dropped")
sys.exit(0 if ok else 1)
PY
  done
done

# every link kept belongs to a shown device, its node or site, or is cross-site:
# dgx-a100-4nodes has 8 GPUs a node, so 12 devices are nodes 0 and 1
$py - "$tmp/nodes-device-12.json" <<'PY' || die "nodes: links outside the shown devices' nodes"
import json, re, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
for l in {e["name"] for e in ev if e["ph"] == "C"}:
    m = re.match(r"(d|n)(\d+)\.", l)
    if m and ((m.group(1) == "d" and int(m.group(2)) >= 12) or (m.group(1) == "n" and int(m.group(2)) >= 2)):
        print("FAIL: link", l, file=sys.stderr)
        sys.exit(1)
PY

# 1,024 GPUs at kernel detail, 8 devices: small and valid (it took minutes
# when every link and flow was kept)
"$bin" simulate --model llama3-70b --cluster dgx-h100-128nodes --tp 8 --pp 8 --dp 16 --global-batch 1024 \
  --recompute full --trace "$tmp/big-k8.json" --trace-detail kernel --trace-devices 8 >/dev/null 2>"$tmp/err" \
  || die "1024-GPU kernel trace: $(cat "$tmp/err")"
$py "$check" --cats "$cats" --max-bytes 20000000 "$tmp/big-k8.json" || die "1024-GPU kernel --trace-devices 8: trace_check"
n=$(grep -c '"process_name".*"dev ' "$tmp/big-k8.json")
[ "$n" -eq 8 ] || die "1024-GPU kernel trace has $n device processes, want 8"
grep -q '"name":"links (busy, of the shown devices)"' "$tmp/big-k8.json" || die "links process not labelled as bounded"
exit $fail
