"""10,000 simulate calls keep the process's memory flat: every C object a call
makes is freed (explicitly by close() and, for objects dropped without it,
by __del__). Measured as resident set size; the bound is on growth, not time."""
import gc
import os

import hetsim

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def test_ten_thousand_simulate_calls_keep_rss_flat():
    m, c = hetsim.Model("bert-base"), hetsim.Cluster("dgx-a100-1node")
    per_call_bytes = None
    for _ in range(500):  # warm-up: allocator pools, lazily built Python objects
        r = hetsim.simulate(m, c, tp=2, pp=2)
        r["iteration_time_s"]
    gc.collect()
    before = rss_bytes()
    first = None
    for i in range(10_000):
        r = hetsim.simulate(m, c, tp=2, pp=2)
        t = r["iteration_time_s"]          # builds the JSON text and dict too
        if i % 2:
            r.close()                      # half closed explicitly, half by __del__
        if first is None:
            first = t
        assert t == first
    gc.collect()
    growth = rss_bytes() - before
    # a report, its plan and JSON text are several KB: leaking any of them
    # 10,000 times would grow RSS by tens of MB
    one = hetsim.simulate(m, c, tp=2, pp=2)
    per_call_bytes = len(one.json_text)
    assert per_call_bytes * 10_000 > 8 * 2**20
    assert growth < 4 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over 10,000 calls"
    m.close()
    c.close()


def test_the_probe_sees_retained_reports():
    """The RSS probe is sensitive enough for the bound above: holding 2,000
    reports (C report, JSON text, dict) grows RSS well past it."""
    m, c = hetsim.Model("bert-base"), hetsim.Cluster("dgx-a100-1node")
    gc.collect()
    before = rss_bytes()
    kept = []
    for _ in range(2000):
        r = hetsim.simulate(m, c, tp=2, pp=2)
        r["iteration_time_s"]
        kept.append(r)
    grown = rss_bytes() - before
    assert grown > 4 * 2**20, f"holding 2,000 reports grew RSS by only {grown / 2**20:.1f} MiB"
    for r in kept:
        r.close()
    m.close()
    c.close()
