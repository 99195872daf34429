#!/usr/bin/env python3
"""deepbench_points.py - transcribes DeepBench's published cuBLAS GEMM results
into clusters/calibration/ (issue #33 item 2).

Usage: scripts/deepbench_points.py /path/to/DeepBench.git   (a clone or the
       bare mirror that the `fetch` tool gives; read with `git show`)

Source: baidu-research/DeepBench@da81ba7820739e2e506dc27f382d15be5479f98f
results/train/DeepBench_NV_{V100,T4,P100}.xlsx, section "Dense Matrix
Multiplication" of the "Results" sheets: M, N, K, A/B transposition, Time
(msec), TERAFLOPS for 160 shapes per sheet. Method (code/nvidia/gemm_bench.cu):
cuBLAS, a warm-up call, then 400 back-to-back calls timed around
cudaDeviceSynchronize; the sheets give ms per call with a resolution of 1 us.
The workbook is read with zipfile + xml (no spreadsheet library).

Which sheet goes to which catalog GPU, and at which dtype (the dtype each
file is fitted at, docs/clusters.md):
    V100 "FP16 ip, Mixed math" -> V100-SXM2-16GB, V100-SXM2-32GB (fp16; the
        Specs sheet says NVIDIA DGX-1, an SXM2 machine)
    T4   "FP16 ip, Mixed math" -> T4-16GB (fp16)
    P100 "FP32"                -> P100-PCIe-16GB (fp32; the Specs sheet names
        an ASUS X99-E WS workstation board, which takes PCIe cards only;
        no gemm_mem_latency_us, see TARGETS)

The simulator times a GEMM as a roofline, launch + max(gemm_mem_latency_us +
bytes / (mem_bw x mem_eff), (flops + gemm_half_flops) / (peak x
gemm_eff_max)) (sim/compute.c), and `hetsim calibrate` fits only the second
term, a line in the FLOPs. So only the shapes on the compute side of the
roofline are GEMM points of the calibration file. The side is fixed by the
shape alone, before any fit: a GEMM is on the compute side when its
arithmetic intensity flops / bytes (bytes = dtype size x (mk + kn + mn), each
operand read or written once) reaches the ridge point, datasheet peak / copy
rate (the file's best copy rate, or the catalog's mem_bw x mem_eff). For the
V100 at fp16 the ridge is 157 FLOP/B, so the N = 16-128 shapes are on the
memory side. (A split by iteration against the fitted line does not settle
once gemm_mem_latency_us enters it: it cycles.) The memory-side shapes give
gemm_mem_latency_us (scripts/calibrate_catalog.py). Every shape, with its
side, goes to clusters/calibration/deepbench/<GPU>.json, which
tests/test_calibration_deepbench.c reads to check the catalog's roofline
against all of them.

After running it, run scripts/calibrate_catalog.py to refit gpus.json.
"""
import json
import os
import re
import subprocess
import sys
import zipfile
import io
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMIT = "da81ba7820739e2e506dc27f382d15be5479f98f"
NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
      "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}
MARK = "DeepBench (scripts/deepbench_points.py, issue #33):"

TARGETS = [
    # (catalog GPU, workbook, sheet prefix, dtype, source id, fit gemm_mem_latency_us)
    ("V100-SXM2-16GB", "DeepBench_NV_V100.xlsx", "Results - FP16", "fp16", "deepbench-v100", True),
    ("V100-SXM2-32GB", "DeepBench_NV_V100.xlsx", "Results - FP16", "fp16", "deepbench-v100", True),
    ("T4-16GB", "DeepBench_NV_T4.xlsx", "Results - FP16", "fp16", "deepbench-t4", True),
    # P100's memory-side shapes (N = 8-16 at fp32) stream at a fraction of
    # the copy rate that no constant describes (the fitted constant would
    # leave their median error at 43%): no gemm_mem_latency_us
    ("P100-PCIe-16GB", "DeepBench_NV_P100.xlsx", "Results FP32", "fp32", "deepbench-p100", False),
]
LAST_COMMIT = {"DeepBench_NV_V100.xlsx": ("30c5115", "2019-10-07"),
               "DeepBench_NV_T4.xlsx": ("30c5115", "2019-10-07"),
               "DeepBench_NV_P100.xlsx": ("f48528c", "2018-05-21")}
DTYPE_BYTES = {"fp16": 2, "fp32": 4}


def read_xlsx(data):
    z = zipfile.ZipFile(io.BytesIO(data))
    strings = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", NS):
            strings.append("".join(t.text or "" for t in si.iter("{%s}t" % NS["m"])))
    wb = ET.fromstring(z.read("xl/workbook.xml"))
    rels = {r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
    sheets = {}
    for s in wb.find("m:sheets", NS):
        target = rels[s.get("{%s}id" % NS["r"])].lstrip("/").replace("xl/", "")
        rows = []
        for row in ET.fromstring(z.read("xl/" + target)).iter("{%s}row" % NS["m"]):
            cells = {}
            for c in row.findall("m:c", NS):
                v = c.find("m:v", NS)
                if v is None:
                    continue
                col = re.match(r"[A-Z]+", c.get("r")).group(0)
                cells[col] = strings[int(v.text)] if c.get("t") == "s" else v.text
            rows.append((int(row.get("r")), cells))
        sheets[s.get("name")] = rows
    return sheets


def gemm_rows(rows):
    """The rows of the "Dense Matrix Multiplication" section, blank rows skipped."""
    out, on = [], False
    for rn, r in rows:
        if r.get("A", "").startswith("Dense Matrix"):
            on = True
            continue
        if not on or not r:
            continue
        if r.get("A"):  # the next section ("Convolution")
            break
        try:
            m, n, k = int(r["C"]), int(r["D"]), int(r["E"])
            ms = float(r["I"])
        except (KeyError, ValueError):
            continue
        out.append({"row": rn, "m": m, "n": n, "k": k, "a_t": r.get("F", "N"), "b_t": r.get("G", "N"),
                    "s": ms * 1e-3})
    return out


def wline(x, t):
    """Weighted least squares t = a + b x, weights 1 / t^2 (as hetsim calibrate)."""
    w = [1.0 / ti ** 2 for ti in t]
    sw = sum(w)
    sx = sum(wi * xi for wi, xi in zip(w, x))
    sy = sum(wi * ti for wi, ti in zip(w, t))
    sxx = sum(wi * xi * xi for wi, xi in zip(w, x))
    sxy = sum(wi * xi * ti for wi, xi, ti in zip(w, x, t))
    b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    return (sy - b * sx) / sw, b


def split(rows, peak, mem_Bps, dtype):
    """The compute-side row indices: flops / bytes >= peak / mem_Bps (the
    ridge point of the roofline at the datasheet peak and the copy rate)."""
    eb = DTYPE_BYTES[dtype]
    comp = set()
    for i, r in enumerate(rows):
        r["flops"] = 2.0 * r["m"] * r["n"] * r["k"]
        r["bytes"] = eb * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
        if r["flops"] * mem_Bps >= peak * r["bytes"]:
            comp.add(i)
    return comp


def mem_rate(cal, gpu):
    """The copy rate the catalog will use: the file's "max" memory points, or
    the catalog's mem_eff when the file does not fit it."""
    if "mem_eff" in cal.get("applies", []) and cal.get("mem_fit") == "max":
        return max(p["bytes"] / p["s"] for p in cal["points"] if p["kind"] == "mem")
    return gpu["mem_bw_GBps"] * 1e9 * gpu["mem_eff"]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    repo = sys.argv[1]
    cat = {g["name"]: g for g in json.load(open(os.path.join(ROOT, "clusters", "gpus.json")))["gpus"]}
    books = {}
    os.makedirs(os.path.join(ROOT, "clusters", "calibration", "deepbench"), exist_ok=True)
    for gpu, book, prefix, dtype, sid, fit_latency in TARGETS:
        if book not in books:
            data = subprocess.run(["git", "--git-dir", repo, "show", f"{COMMIT}:results/train/{book}"],
                                  check=True, capture_output=True).stdout
            books[book] = read_xlsx(data)
        sheet = [k for k in books[book] if k.startswith(prefix)]
        if len(sheet) != 1:
            sys.exit(f"{book}: no single sheet starting with \"{prefix}\"")
        rows = gemm_rows(books[book][sheet[0]])
        path = os.path.join(ROOT, "clusters", "calibration", f"{gpu}.json")
        cal = json.load(open(path))
        comp = split(rows, cal["peak_tflops"][dtype] * 1e12, mem_rate(cal, cat[gpu]), dtype)
        commit, date = LAST_COMMIT[book]
        ref = (f"baidu-research/DeepBench@{COMMIT} results/train/{book}, sheet \"{sheet[0]}\", section "
               f"\"Dense Matrix Multiplication\" (file last changed in {commit}); {len(comp)} of its "
               f"{len(rows)} shapes are points here, all in deepbench/{gpu}.json")
        cal["points"] = [p for p in cal["points"] if p.get("source") != sid]
        cal["sources"] = [s for s in cal["sources"] if s["id"] != sid]
        note = (f"{MARK} {len(comp)} GEMM points (source {sid}) are the compute side of the roofline "
                f"of the {len(rows)} cuBLAS GEMMs of DeepBench's sheet \"{sheet[0]}\" ({dtype}; 400 "
                f"back-to-back calls after a warm-up, timed around cudaDeviceSynchronize, "
                f"code/nvidia/gemm_bench.cu; ms per call at 1 us resolution, so the smallest shapes "
                f"measure the back-to-back floor, launch included): flops / bytes at or above the "
                f"ridge, datasheet peak / copy rate. The other {len(rows) - len(comp)} shapes are not "
                f"GEMM points" + ("; they give gemm_mem_latency_us (scripts/calibrate_catalog.py)"
                                  if fit_latency else "") + f". All {len(rows)}, with their side, are in "
                f"deepbench/{gpu}.json (docs/clusters.md).")
        desc = cal["description"]
        if MARK in desc:
            desc = desc[:desc.index(MARK)].rstrip()
        cal["description"] = desc + " " + note
        cal["retrieved"] = "2026-12-02"
        cal["sources"].append({"id": sid, "ref": ref, "date": date})
        for i in sorted(comp):
            r = rows[i]
            cal["points"].append({"kind": "gemm", "dtype": dtype, "m": r["m"], "n": r["n"], "k": r["k"],
                                  "s": r["s"], "source": sid})
        with open(path, "w") as f:
            json.dump(cal, f, indent=1, ensure_ascii=False)
            f.write("\n")
        table = {
            "gpu": gpu, "dtype": dtype, "source": ref, "date": date, "retrieved": "2026-12-02",
            "fit_gemm_mem_latency": fit_latency,
            "description": "Every GEMM of the DeepBench sheet, as published (M, N, K, A/B transposed, seconds "
                           "per call), with its side of the roofline (scripts/deepbench_points.py). "
                           "\"compute\" rows are GEMM points of ../" + gpu + ".json; \"memory\" rows are not"
                           + (", they give gemm_mem_latency_us (scripts/calibrate_catalog.py). " if fit_latency
                              else ". ")
                           + "tests/test_calibration_deepbench.c checks the catalog against every row.",
            "rows": [{"m": r["m"], "n": r["n"], "k": r["k"], "a_t": r["a_t"], "b_t": r["b_t"], "s": r["s"],
                      "side": "compute" if i in comp else "memory"} for i, r in enumerate(rows)],
        }
        with open(os.path.join(ROOT, "clusters", "calibration", "deepbench", f"{gpu}.json"), "w") as f:
            json.dump(table, f, indent=1)
            f.write("\n")
        print(f"{gpu}: {len(comp)} of {len(rows)} shapes on the compute side ({sheet[0]})")


if __name__ == "__main__":
    main()
