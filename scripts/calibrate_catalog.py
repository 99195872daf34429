#!/usr/bin/env python3
"""calibrate_catalog.py - refits every clusters/calibration/<GPU>.json with
`hetsim calibrate` and writes the fitted parameters into clusters/gpus.json.

Usage: scripts/calibrate_catalog.py [path/to/hetsim]   (default build/hetsim)

Each calibration file holds published kernel-level points (GEMM, memory,
fused attention "attn") with their sources; the attention fields
(attn_fwd_eff_max, attn_fwd_half_seq, attn_bwd_eff_max, attn_bwd_half_seq)
are taken whenever the file has "attn" points, gemm_eff_max_fp8 and
gemm_half_flops_fp8 whenever it has 2 or more "dtype": "fp8" GEMM points
(a second `hetsim calibrate --dtype fp8`); its "applies" list names the parameters the catalog
takes (default all four) and must include gemm_eff_max: the GEMM rate is
what sets the speed ratio between GPU types, so a file without it marks
nothing calibrated. "gemm_fit"/"mem_fit": "max" says the points are
best-achievable rates (e.g. a maximum-achievable-matmul figure) rather than
a sweep of sizes. The entry gets "calibrated": true and a
"calibration_source" naming the file, its sources and the retrieval date.
GPUs without a file keep "calibrated": false.
clusters/calibration/deepbench/<GPU>.json (scripts/deepbench_points.py: every
GEMM of DeepBench's sheet with its side of the roofline) with
"fit_gemm_mem_latency": true gives gemm_mem_latency_us, fitted after the GEMM
line: the weighted (1 / t^2) least-squares constant h of t = launch_us + h +
bytes / (mem_bw x mem_eff) over its memory-side rows, in closed form,
sum w (t - launch - bytes / rate) / sum w, 0 when negative
(tests/test_calibration_deepbench.c recomputes it). tests/test_calibration_catalog.c
refits the same files and fails when the catalog differs from the fit, so
run this after changing a calibration file. Never feed it end-to-end
training throughput (docs/validation.md)."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARAMS = ["gemm_eff_max", "gemm_half_flops", "mem_eff", "launch_us"]
ATTN = ["attn_fwd_eff_max", "attn_fwd_half_seq", "attn_bwd_eff_max", "attn_bwd_half_seq"]


def mem_latency_us(table, gpu):
    """gemm_mem_latency_us from a DeepBench table (module docstring)."""
    eb = {"fp16": 2, "fp32": 4}[table["dtype"]]
    rate = gpu["mem_bw_GBps"] * 1e9 * gpu["mem_eff"]
    launch = gpu["launch_us"] * 1e-6
    num = den = 0.0
    for r in table["rows"]:
        if r["side"] != "memory":
            continue
        w = 1.0 / r["s"] ** 2
        num += w * (r["s"] - launch - eb * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"]) / rate)
        den += w
    return max(num / den, 0.0) * 1e6 if den > 0 else 0.0


def main():
    hetsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "hetsim")
    cat_path = os.path.join(ROOT, "clusters", "gpus.json")
    cal_dir = os.path.join(ROOT, "clusters", "calibration")
    with open(cat_path) as f:
        cat = json.load(f)
    by_name = {g["name"]: g for g in cat["gpus"]}
    for fn in sorted(os.listdir(cal_dir)):
        if not fn.endswith(".json"):
            continue
        path = os.path.join(cal_dir, fn)
        with open(path) as f:
            meas = json.load(f)
        gpu = by_name.get(meas["gpu"])
        if gpu is None:
            sys.exit(f"{fn}: gpu \"{meas['gpu']}\" is not in clusters/gpus.json")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "profile.json")
            subprocess.run([hetsim, "calibrate", path, "--dtype", "bf16", "-o", out], check=True)
            with open(out) as f:
                prof = json.load(f)["gpus"][0]
        applies = meas.get("applies", PARAMS)
        if "gemm_eff_max" not in applies:
            sys.exit(f"{fn}: applies must include gemm_eff_max (got {applies})")
        for p in applies:
            gpu[p] = prof[p]
        # fused attention rate ("attn" points): taken whenever the file has them
        attn = [p for p in ATTN if p in prof]
        for p in attn:
            gpu[p] = prof[p]
        # fp8 GEMM curve ("dtype": "fp8" GEMM points): a second fit at fp8,
        # which sees only those points; the bf16 fit above never sees them
        fp8 = []
        if sum(1 for q in meas["points"] if q["kind"] == "gemm" and q.get("dtype") == "fp8") >= 2:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "profile.json")
                subprocess.run([hetsim, "calibrate", path, "--dtype", "fp8", "-o", out], check=True)
                with open(out) as f:
                    prof8 = json.load(f)["gpus"][0]
            for p in ("gemm_eff_max", "gemm_half_flops"):
                gpu[p + "_fp8"] = prof8[p]
                fp8.append(p + "_fp8")
        # memory-side GEMM constant from the DeepBench table, after mem_eff
        lat = []
        db = os.path.join(cal_dir, "deepbench", fn)
        if os.path.exists(db):
            with open(db) as f:
                table = json.load(f)
            if table.get("fit_gemm_mem_latency"):
                gpu["gemm_mem_latency_us"] = mem_latency_us(table, gpu)
                lat = ["gemm_mem_latency_us"]
        if not lat:
            gpu.pop("gemm_mem_latency_us", None)
        refs = "; ".join(f"{s['ref']} ({s['date']})" for s in meas.get("sources", []))
        kept = [p for p in PARAMS if p not in applies]
        gpu["calibrated"] = True
        how = "; ".join(f"{k} \"max\" (best-achievable rate over peak)"
                        for k in ("gemm_fit", "mem_fit") if meas.get(k) == "max")
        if meas.get("gemm_fit") == "shape":
            how = "; ".join(x for x in ("gemm_fit \"shape\" (kernel-shape model, sim/compute.c)", how) if x)
        gpu["calibration_source"] = (
            f"clusters/calibration/{fn} (retrieved {meas.get('retrieved', '?')}): "
            f"{', '.join(applies + attn + fp8)} fitted by hetsim calibrate"
            + (f" ({how})" if how else "")
            + (f", gemm_mem_latency_us by scripts/calibrate_catalog.py on the memory-side rows of "
               f"clusters/calibration/deepbench/{fn}" if lat else "") + f" on {refs}"
            + (f"; {', '.join(kept)} kept at the default (see the file's description)" if kept else ""))
        print(f"{meas['gpu']}: " + ", ".join(f"{p} {prof[p]:.4g}" for p in applies + attn)
              + "".join(f", {p} {gpu[p]:.4g}" for p in fp8 + lat))
    with open(cat_path, "w") as f:
        json.dump(cat, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
