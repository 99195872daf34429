#!/usr/bin/env python3
"""Per-call cost of one small simulation from Python, against the C call
underneath it and against the CLI (a process per call), on the same plan.

  rows: C API grid+simulate (bench_capi), C API simulate alone, Python
  simulate(m, c, tp=, pp=) with the report closed, the same reading
  report["iteration_time_s"] (JSON text built and parsed), and
  `hetsim simulate ... --json` run as a subprocess. Then one purchase
  study (gpt3-1.3b on dgx-a100-1node, 50 USD/h of A100-40GB or V100-16GB,
  megatron): hetsim.whatif_text() against `hetsim whatif --format csv`
  (the same bytes), where the planner runs dominate and the process
  start-up is what the CLI adds.

Prints a Markdown table: microseconds per call and
the ratio to the C grid+simulate call; each figure is the fastest of 5
batches (the least disturbed by other work on a shared machine).

  python bench/bench_python.py [--model M] [--cluster C] [--tp T] [--pp P]
                               [--calls N] [--cli-calls K] [--build DIR]
Run with the venv's Python that has the package (scripts/test_python.sh).
"""
import argparse
import subprocess
import sys
import time
from pathlib import Path

import hetsim

ROOT = Path(__file__).resolve().parents[1]


def per_call_us(fn, calls: int, batches: int = 5) -> float:
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt3-1.3b")
    ap.add_argument("--cluster", default="dgx-a100-1node")
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--pp", type=int, default=2)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--cli-calls", type=int, default=40)
    ap.add_argument("--whatif-calls", type=int, default=3, help="0 leaves the what-if rows out")
    ap.add_argument("--build", default=str(ROOT / "build"))
    a = ap.parse_args()
    build = Path(a.build)

    out = subprocess.run([str(build / "bench" / "bench_capi"), a.model, a.cluster, str(a.tp),
                          str(a.pp), str(a.calls)], capture_output=True, text=True, check=True).stdout
    figs = dict(line.split() for line in out.splitlines()[1:])
    c_grid, c_sim = float(figs["grid+simulate_us"]), float(figs["simulate_us"])

    m, c = hetsim.Model(a.model), hetsim.Cluster(a.cluster)

    def py_sim():
        hetsim.simulate(m, c, tp=a.tp, pp=a.pp).close()

    def py_sim_json():
        with hetsim.simulate(m, c, tp=a.tp, pp=a.pp) as r:
            r["iteration_time_s"]

    py = per_call_us(py_sim, a.calls)
    py_json = per_call_us(py_sim_json, a.calls)
    cmd = [str(build / "hetsim"), "simulate", "--model", a.model, "--cluster", a.cluster,
           "--tp", str(a.tp), "--pp", str(a.pp), "--json"]
    cli = per_call_us(lambda: subprocess.run(cmd, capture_output=True, check=True), a.cli_calls)
    with hetsim.simulate(m, c, tp=a.tp, pp=a.pp) as r:
        plan = r["plan"]
    print(f"{a.model} on {a.cluster}, {plan} (one simulated iteration per call)\n")
    print("| call | us per call | x C grid+simulate |")
    print("| --- | ---: | ---: |")
    for name, us in [("C API: hs_api_plan_grid + hs_api_simulate", c_grid),
                     ("C API: hs_api_simulate (plan reused)", c_sim),
                     ("Python: hetsim.simulate(m, c, tp=, pp=)", py),
                     ("Python: the same + report[\"iteration_time_s\"] (JSON)", py_json),
                     ("CLI: hetsim simulate --json (a process per call)", cli)]:
        print(f"| {name} | {us:,.1f} | {us / c_grid:.2f} |")
    print(f"\nPython overhead over the C call: {py - c_grid:,.1f} us "
          f"({(py - c_grid) / c_grid:.1%}); with the JSON report: {py_json - c_grid:,.1f} us")
    if a.whatif_calls > 0:
        kw = dict(budget_usd_per_hour=50, candidates="A100-SXM4-40GB,V100-SXM2-16GB",
                  strategies="megatron", global_batch=128)
        wcmd = [str(build / "hetsim"), "whatif", "--model", "gpt3-1.3b", "--cluster",
                "dgx-a100-1node", "--budget-usd-per-hour", "50", "--candidates",
                kw["candidates"], "--strategies", "megatron", "--global-batch", "128",
                "--format", "csv", "--quiet"]
        text = hetsim.whatif_text("gpt3-1.3b", c, **kw)
        assert text == subprocess.run(wcmd, capture_output=True, text=True, check=True).stdout
        n = text.count("\n") - 1
        py_w = per_call_us(lambda: hetsim.whatif_text(m, c, **kw), a.whatif_calls, 3)
        cli_w = per_call_us(lambda: subprocess.run(wcmd, capture_output=True, check=True),
                            a.whatif_calls, 3)
        print(f"\nwhatif: gpt3-1.3b on dgx-a100-1node, {n} options x megatron (same CSV bytes)\n")
        print("| call | ms per call |")
        print("| --- | ---: |")
        print(f"| Python: hetsim.whatif_text(m, c, ...) | {py_w / 1e3:,.1f} |")
        print(f"| CLI: hetsim whatif --format csv (a process per call) | {cli_w / 1e3:,.1f} |")
    m.close()
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
