"""The planners' options as plan(), compare(), whatif() and sweep() keywords:
memory_headroom (--memory-headroom), precision (--precision),
search_practice=False (--no-practice-search) and compare's baseline
(--baseline) give the bytes the CLI prints with the same flags (search_s,
wall-clock, left out where the output has it), and bad values raise
InputError with the CLI's message. Every case first checks that its flags
change the CLI's output, so an option the library dropped would fail."""
import csv
import io
import json

import pytest

import hetsim

M, C = "gpt3-1.3b", "dgx-a100-1node"
STRATS = "megatron,deepspeed,data-parallel"


def flags(opts):
    out = []
    for k, v in opts.items():
        if k == "search_practice":
            out += [] if v else ["--no-practice-search"]
            continue
        flag = "--" + k.replace("_", "-")
        out += [flag] if v is True else [flag, str(v)]
    return out


def without_search_s(text):
    rows = list(csv.reader(io.StringIO(text)))
    si = rows[0].index("search_s")
    return [r[:si] + r[si + 1:] for r in rows]


PLAN_OPTS = [
    dict(memory_headroom=0.6),
    dict(precision="fp16", search_practice=False),
    dict(memory_headroom=0.3, precision="fp32", search_practice=False),
]


@pytest.mark.parametrize("opts", PLAN_OPTS)
def test_plan_options_equal_cli(cli, opts):
    args = ["plan", "--model", M, "--cluster", C, "--strategy", "megatron", "--json", "--quiet"]
    want = json.loads(cli(*args, *flags(opts)).stdout)
    base = json.loads(cli(*args).stdout)
    assert want["plan"] != base["plan"] or want["report"] != base["report"]  # the flags matter
    with hetsim.plan(M, C, "megatron", **opts) as p:
        got = p.result()
    assert set(got) == set(want)
    for k in want:
        if k != "search_s":
            assert got[k] == want[k], k


@pytest.mark.parametrize("opts", PLAN_OPTS + [dict(baseline="data-parallel"),
                                              dict(baseline="deepspeed", memory_headroom=0.6)])
def test_compare_options_equal_cli(cli, opts):
    args = ["compare", "--model", M, "--cluster", C, "--strategies", STRATS, "--format", "csv"]
    want = cli(*args, *flags(opts)).stdout
    assert without_search_s(want) != without_search_s(cli(*args).stdout)
    got = hetsim.compare_csv(M, C, STRATS, **opts)
    assert without_search_s(got) == without_search_s(want)
    if "baseline" in opts:  # the column is named after the row asked for
        assert f"speedup_vs_{opts['baseline']}" in want.splitlines()[0]
        df = hetsim.compare(M, C, STRATS, **opts)
        assert list(df.columns) == want.splitlines()[0].split(",")


def test_compare_default_baseline_column_equals_cli(cli):
    """No baseline given: the speedup column is named after the fastest
    baseline in the list, in the CLI and in the library alike."""
    args = ["compare", "--model", M, "--cluster", C, "--strategies", "data-parallel,hapt",
            "--format", "csv"]
    want = cli(*args).stdout
    assert "speedup_vs_data-parallel" in want.splitlines()[0]
    assert without_search_s(hetsim.compare_csv(M, C, "data-parallel,hapt")) == without_search_s(want)


def test_compare_scenario_precision_equals_cli(cli):
    """A scenario's own precision applies unless precision is given."""
    for opts in ({}, dict(precision="fp32")):
        want = cli("compare", "--scenario", "hapt", "--strategies", "megatron,whale", "--format",
                   "csv", *flags(opts)).stdout
        got = hetsim.compare_csv(scenario="hapt", strategies="megatron,whale", **opts)
        assert without_search_s(got) == without_search_s(want)


WHATIF = ["whatif", "--model", M, "--cluster", C, "--budget-usd-per-hour", "40", "--candidates",
          "A100-SXM4-40GB,V100-SXM2-16GB", "--strategies", "megatron,data-parallel",
          "--global-batch", "128", "--format", "csv", "--quiet"]


@pytest.mark.parametrize("opts", [dict(memory_headroom=0.6),
                                  dict(precision="fp32", kernels="megatron-2021", memory_headroom=0.2)])
def test_whatif_options_equal_cli_bytes(cli, opts):
    want = cli(*WHATIF, *flags(opts)).stdout
    assert want != cli(*WHATIF).stdout
    got = hetsim.whatif_text(M, C, budget_usd_per_hour=40,
                             candidates="A100-SXM4-40GB,V100-SXM2-16GB",
                             strategies="megatron,data-parallel", global_batch=128, **opts)
    assert got == want


@pytest.mark.parametrize("opts", [dict(memory_headroom=0.6), dict(precision="fp32"),
                                  dict(precision="fp16", memory_headroom=0.3)])
def test_sweep_options_equal_cli_bytes(cli, data, opts):
    spec = data / "sweep" / "small.json"
    want = cli("sweep", spec, "--no-timings", "--quiet", *flags(opts)).stdout
    assert want != cli("sweep", spec, "--no-timings", "--quiet").stdout
    assert hetsim.sweep_csv(spec, no_timings=True, **opts) == want


def cli_message(p):
    """The message of a CLI usage error, without the "hetsim[ cmd]: --flag: " prefix."""
    assert p.returncode == 2, p
    line = p.stderr.strip().splitlines()[-1]
    return line.split(": ", 2)[-1]


@pytest.mark.parametrize("value", [1.0, -0.1, 1.5])
def test_bad_memory_headroom_raises_the_cli_message(cli, data, value):
    msg = cli_message(cli("plan", "--model", M, "--cluster", C, "--strategy", "megatron",
                          "--memory-headroom", str(value), check=False))
    assert msg.startswith("must be a fraction in [0, 1)")
    calls = [
        ("plan options", lambda: hetsim.plan(M, C, "megatron", memory_headroom=value)),
        ("compare options", lambda: hetsim.compare_csv(M, C, STRATS, memory_headroom=value)),
        ("whatif options", lambda: hetsim.whatif_text(M, C, budget_usd_per_hour=40,
                                                      candidates="A100-SXM4-40GB",
                                                      memory_headroom=value)),
        ("sweep options", lambda: hetsim.sweep_csv(data / "sweep" / "small.json",
                                                   memory_headroom=value)),
    ]
    for what, call in calls:
        with pytest.raises(hetsim.InputError) as e:
            call()
        # the CLI quotes its argument text; the number is the same
        assert str(e.value) == f"{what}: memory_headroom: must be a fraction in [0, 1), got {value:g}"
        assert e.value.exit_code == 2


def test_bad_precision_raises_the_cli_message(cli, data):
    msg = cli_message(cli("sweep", data / "sweep" / "small.json", "--precision", "int4",
                          check=False))
    assert msg == 'must be bf16, fp16, fp8 or fp32, got "int4"'
    for what, call in [
        ("compare options", lambda: hetsim.compare_csv(M, C, STRATS, precision="int4")),
        ("whatif options", lambda: hetsim.whatif_text(M, C, budget_usd_per_hour=40,
                                                      candidates="A100-SXM4-40GB",
                                                      precision="int4")),
        ("sweep options", lambda: hetsim.sweep_csv(data / "sweep" / "small.json",
                                                   precision="int4")),
    ]:
        with pytest.raises(hetsim.InputError) as e:
            call()
        assert str(e.value) == f"{what}: precision: {msg}"


def test_bad_baseline_and_search_practice_raise(cli):
    p = cli("compare", "--model", M, "--cluster", C, "--strategies", STRATS, "--baseline", "hapt",
            check=False)
    msg = cli_message(p)
    assert msg == '"hapt" is not among the strategies compared'
    with pytest.raises(hetsim.InputError) as e:
        hetsim.compare_csv(M, C, STRATS, baseline="hapt")
    assert str(e.value) == f"compare options: baseline: {msg}"
    with pytest.raises(hetsim.InputError, match="plan options: search_practice"):
        hetsim.plan(M, C, "megatron", search_practice="no")
