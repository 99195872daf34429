"""Calls from several Python threads at once (capi/hetsim.h, "Threads").

ctypes releases the GIL during every C call, so threads really run the
library concurrently. Before the locks of clusters/topology.c (igraph keeps
its error handlers and its cleanup stack in process globals), 4 threads
calling simulate() aborted the interpreter in about a third of runs with
igraph's "Corrupt finally stack". The stress runs in a child interpreter so
that such an abort fails this test with its message instead of killing the
whole pytest run.

The truth is the same calls made one at a time on one thread: every
threaded result must equal its serial counterpart bit for bit (the
simulator is deterministic, docs/simulator.md), and the JSON report byte for
byte.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading

THREADS = 8
CALLS = 1000          # simulate() calls per thread
JSON_EVERY = 50       # every 50th call also compares the whole JSON report
CLUSTER_EVERY = 25    # every 25th call also loads a cluster from a dict
COMPARE_THREADS = 4   # compare() (GLPK in hap and autohet) from 4 threads ...
COMPARE_CALLS = 2     # ... twice each

# Two sites (an igraph Dijkstra route between them) of two GPU types, small
# enough that one simulate() is about a millisecond.
CLUSTER = {
    "name": "threads-2site",
    "sites": [
        {"name": "a", "nodes": [{"count": 1, "gpu": "A100-SXM4-40GB", "gpus_per_node": 2}]},
        {"name": "b", "nodes": [{"count": 1, "gpu": "V100-SXM2-16GB", "gpus_per_node": 2}]},
    ],
    "links": [{"between": ["a", "b"], "GBps": 10, "latency_us": 100}],
}
PLANS = [dict(dp=4), dict(pp=2, dp=2), dict(pp=4, global_batch=4), dict(tp=2, dp=2)]
COMPARE_STRATEGIES = ["megatron", "hap", "autohet", "data-parallel"]


def _compare_rows(text: str) -> list[list[str]]:
    """The CSV less its search_s column (wall-clock timing)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    col = rows[0].index("search_s")
    return [r[:col] + r[col + 1:] for r in rows]


def _stress() -> dict:
    """Runs the calls serially, then from THREADS threads at once; returns a
    summary with every mismatch."""
    import hetsim

    model = hetsim.Model("bert-base", seq_len=128)
    cluster = hetsim.Cluster(CLUSTER)

    def one(k: int, with_json: bool):
        r = hetsim.simulate(model, cluster, **PLANS[k])
        try:
            return (r.iteration_time_s, r.tokens_per_s, r.json_text if with_json else None)
        finally:
            r.close()

    serial = [one(k, True) for k in range(len(PLANS))]
    serial_cmp = _compare_rows(hetsim.compare_csv(model, cluster, COMPARE_STRATEGIES,
                                                  global_batch=16))
    serial_cluster = cluster.to_dict()

    mismatches: list[str] = []
    counts = {"simulate": 0, "json": 0, "cluster": 0, "compare": 0}
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS + COMPARE_THREADS)

    def note(kind: str, msg: str | None = None) -> None:
        with lock:
            counts[kind] += 1
            if msg and len(mismatches) < 20:
                mismatches.append(msg)

    def sim_worker(t: int) -> None:
        barrier.wait()
        for i in range(CALLS):
            k = (t + i) % len(PLANS)
            with_json = i % JSON_EVERY == 0
            it, tok, js = one(k, with_json)
            if (it, tok) != serial[k][:2]:
                note("simulate", f"thread {t} call {i} plan {PLANS[k]}: {it!r}, {tok!r} "
                                 f"vs serial {serial[k][:2]!r}")
            else:
                note("simulate")
            if with_json:
                note("json", None if js == serial[k][2] else
                     f"thread {t} call {i} plan {PLANS[k]}: JSON report differs")
            if i % CLUSTER_EVERY == 0:
                with hetsim.Cluster(CLUSTER) as c:
                    d = c.to_dict()
                note("cluster", None if d == serial_cluster else
                     f"thread {t} call {i}: cluster differs")

    def cmp_worker(t: int) -> None:
        barrier.wait()
        for i in range(COMPARE_CALLS):
            rows = _compare_rows(hetsim.compare_csv(model, cluster, COMPARE_STRATEGIES,
                                                    global_batch=16))
            note("compare", None if rows == serial_cmp else
                 f"compare thread {t} call {i}: rows differ: {rows} vs {serial_cmp}")

    errors: list[str] = []

    def guard(fn, t):
        try:
            fn(t)
        except BaseException as e:  # noqa: BLE001 - reported, not swallowed
            errors.append(f"{fn.__name__} {t}: {type(e).__name__}: {e}")
            barrier.abort()

    threads = [threading.Thread(target=guard, args=(sim_worker, t)) for t in range(THREADS)]
    threads += [threading.Thread(target=guard, args=(cmp_worker, t))
                for t in range(COMPARE_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    model.close()
    cluster.close()
    return {"counts": counts, "mismatches": mismatches, "errors": errors}


def test_threads_match_serial(tmp_path):
    out = tmp_path / "summary.json"
    p = subprocess.run([sys.executable, __file__, str(out)], capture_output=True, text=True)
    assert p.returncode == 0, (f"the threaded run exited {p.returncode}"
                               f"{' (signal %d)' % -p.returncode if p.returncode < 0 else ''}:\n"
                               f"{p.stderr[-4000:]}")
    s = json.loads(out.read_text())
    assert s["errors"] == []
    assert s["mismatches"] == []
    assert s["counts"] == {
        "simulate": THREADS * CALLS,
        "json": THREADS * len(range(0, CALLS, JSON_EVERY)),
        "cluster": THREADS * len(range(0, CALLS, CLUSTER_EVERY)),
        "compare": COMPARE_THREADS * COMPARE_CALLS,
    }


if __name__ == "__main__":
    summary = _stress()
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary["counts"]), file=sys.stderr)
    sys.exit(0)
