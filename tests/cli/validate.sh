#!/usr/bin/env bash
# The validation loop through the command line, on the CPU backend:
# calibrate --microbench -> simulate --profile -> replay -> validate, the
# stored-measurements refit, the side-by-side trace, and the refusals
# (bad backends, broken files, CUDA launches the harness cannot run). No
# timing is asserted here (validate_timing.sh does that, label "timing").
set -u
H=${HETSIM_BIN:?}
D=${HETSIM_TEST_DATA:?}/validate
. "$(dirname "$0")/lib.bash"
M=(--model "$D/tiny-gpt.json" --cluster "$D/cpu2.json")

for c in replay calibrate validate; do expect 0 "$H" "$c" --help; has "$tmp/out" "usage"; done

# measure and fit
expect 0 "$H" calibrate --microbench --backend cpu --cluster "$D/cpu2.json" --quick --repeats 3 \
  --measurements-out "$tmp/ms.json" -o "$tmp/prof.json"
has "$tmp/out" "calibrated CPU-THREAD"
has "$tmp/prof.json" '"gemm_eff_max"'
has "$tmp/ms.json" '"kind":	"gemm"'
# refit from the stored points gives the same profile (same points, same fit)
expect 0 "$H" calibrate "$tmp/ms.json" -o "$tmp/prof2.json"
python3 - "$tmp/prof.json" "$tmp/prof2.json" <<'P' && ok || bad "refit differs"
import json, sys
a, b = (json.load(open(p))["gpus"][0] for p in sys.argv[1:3])
for k in ("gemm_eff_max", "gemm_half_flops", "mem_eff", "launch_us"):
    assert abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(a[k])), (k, a[k], b[k])
P

# predict, replay, compare
expect 0 "$H" simulate "${M[@]}" --plan "$D/pipeline2.json" --profile "$tmp/prof.json" \
  -o "$tmp/report.json" --trace "$tmp/sim-trace.json"
expect 0 "$H" replay --backend cpu "${M[@]}" --plan "$D/pipeline2.json" --profile "$tmp/prof.json" \
  --iterations 7 -o "$tmp/measured.json"
has "$tmp/out" "stage 0.1"
expect 0 "$H" validate --report "$tmp/report.json" --measured "$tmp/measured.json" \
  -o "$tmp/cmp.json" --trace "$tmp/both.json" --sim-trace "$tmp/sim-trace.json"
has "$tmp/out" "iteration"
has "$tmp/out" "kernels gemm"
has "$tmp/out" "stage 0.1 bwd / mb"
# the speed probe: in the profile, around each of the 7 replayed iterations,
# and the comparison's speed-adjusted error
has "$tmp/out" "machine speed: the probe (sgemm 128x128x128 fp32)"
python3 - "$tmp/prof.json" "$tmp/measured.json" "$tmp/cmp.json" <<'P' && ok || bad "speed probe"
import json, math, sys
prof, meas, cmp = (json.load(open(p)) for p in sys.argv[1:4])
cal = prof["gpus"][0]["fit"]["speed_probe_s"]
sp = meas["speed_probe"]
assert cal > 0 and sp["calibration_s"] == cal and sp["replay_s"] > 0, (cal, sp)
assert len(sp["iterations_s"]) == len(meas["iterations_s"]) == 7, sp
# the adjusted error, recomputed from the record: the median of the
# iterations scaled by calibration / probe around each
adj = sorted(t * cal / p for t, p in zip(meas["iterations_s"], sp["iterations_s"]))[3]
want = (json.load(open(sys.argv[1].replace("prof.json", "report.json")))["iteration_time_s"] - adj) / adj
assert math.isclose(cmp["iteration_error_speed_adjusted"], want, rel_tol=1e-9, abs_tol=1e-12), (cmp, want)
P
expect 2 "$H" calibrate --microbench --backend cpu --cluster "$D/cpu2.json" --threads 0
has "$tmp/err" "--threads"
python3 - "$tmp/cmp.json" "$tmp/both.json" <<'P' && ok || bad "comparison or trace"
import json, sys
c = json.load(open(sys.argv[1]))
# how close predicted and measured land is a timing question: asserted by
# validate_timing.sh (ctest label "timing") with a tolerance from the spread
err = c["iteration_error"]
assert err == err and abs(err) < 1e6, "iteration error %r" % err
rows = {r["what"]: r for r in c["rows"]}
assert "stage 0.0 fwd / mb" in rows and "kernels gemm" in rows
t = json.load(open(sys.argv[2]))["traceEvents"]
names = {e.get("args", {}).get("name") for e in t if e.get("ph") == "M"}
assert any(n and n.startswith("measured dev 1") for n in names), names
assert any(n and n.startswith("dev 1") for n in names), names
meas = [e for e in t if e.get("ph") == "X" and e["pid"] >= 1000000]
assert sum(1 for e in meas if e["name"] == "fwd mb3") == 2
# same task identities in both timelines: (device, "fwd mbK"/"bwd mbK")
def items(evs, off):
    return {(e["pid"] - off, e["name"]) for e in evs if e["name"].split()[0] in ("fwd", "bwd")}
sim = [e for e in t if e.get("ph") == "X" and e["pid"] < 1000000 and e.get("tid") == 0]
assert items(sim, 0) == items(meas, 1000000), (items(sim, 0) ^ items(meas, 1000000))
assert len(items(sim, 0)) == 16
P
# one stage in isolation
expect 0 "$H" replay --backend cpu "${M[@]}" --plan "$D/pipeline2.json" --stage 1 --json
has "$tmp/out" '"mode":	"stage 1"'

# refusals
expect 2 "$H" replay --backend tpu "${M[@]}" --plan "$D/pipeline2.json"; has "$tmp/err" "must be cpu or cuda"
expect 2 "$H" replay --backend cpu "${M[@]}";                               has "$tmp/err" "--plan"
expect 2 "$H" replay --backend cpu "${M[@]}" --plan "$D/pipeline2.json" --stage 9; has "$tmp/err" "no such stage"
expect 2 "$H" replay --backend cpu "${M[@]}" --plan "$D/pipeline2.json" --clock sundial; has "$tmp/err" "--clock"
expect 2 "$H" replay --backend cuda "${M[@]}" --plan "$D/pipeline2.json"
if grep -q "built without CUDA/NCCL" "$tmp/err"; then ok
elif grep -q "plan needs 2 ranks" "$tmp/err" && grep -q "mpirun gave 1" "$tmp/err"; then ok
else bad "cuda refusal: $(cat "$tmp/err")"; fi
expect 2 "$H" calibrate;                                                    has "$tmp/err" "--microbench or MEASUREMENTS.json"
expect 2 "$H" calibrate --microbench --backend cpu;                         has "$tmp/err" "--cluster C or --gpu NAME"
expect 2 "$H" calibrate --microbench --gpu NOPE-GPU;                        has "$tmp/err" "NOPE-GPU"
echo '{"gpu": "X", "peak_tflops": {"fp32": 1}, "mem_bw_GBps": 10, "points": [{"kind": "gemm", "m": 4, "n": 4, "k": -4, "s": 1}]}' >"$tmp/badm.json"
expect 2 "$H" calibrate "$tmp/badm.json";                                   has "$tmp/err" "badm.json: points[0].k"
echo '{"backend": "cpu", "iteration_time_s": "soon"}' >"$tmp/badmeas.json"
expect 2 "$H" validate --measured "$tmp/badmeas.json";                      has "$tmp/err" "badmeas.json: iteration_time_s"
expect 2 "$H" validate --report "$tmp/badmeas.json" --measured "$tmp/measured.json"; has "$tmp/err" "badmeas.json"
expect 2 "$H" validate --report "$tmp/report.json";                        has "$tmp/err" "--measured"
expect 2 "$H" validate --measured "$tmp/nope.json";                        has "$tmp/err" "nope.json"

echo "validate CLI: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
