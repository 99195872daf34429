"""The training-practice options of cli/opt_practice.c (--kernels,
--attention, --sequence-parallel, --tp-comm-overlap, --zero-stage,
--precision, --grad-reduce-dtype) as simulate(), plan() and compare() keywords: the same bytes
as the CLI with the same flags, on a grid and on a plan file, and bad
values refused naming the option and the value."""
import csv
import io
import json

import pytest

import hetsim

PRACTICE = [
    dict(kernels="megatron-core-2024"),
    dict(attention="flash", zero_stage=1),
    dict(sequence_parallel=True, tp_comm_overlap=True, precision="fp16"),
    dict(kernels="megatron-core-2024", attention="unfused", sequence_parallel=True,
         zero_stage=3, precision="fp32"),
    dict(zero_stage=2, grad_reduce_dtype="fp32"),
]


def flags(opts):
    out = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        out += [flag] if v is True else [flag, str(v)]
    return out


@pytest.mark.parametrize("opts", PRACTICE)
def test_simulate_grid_practice_equals_cli_bytes(cli, opts):
    r = hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", tp=2, pp=2, **opts)
    assert r.json_text == cli("simulate", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-1node",
                              "--tp", "2", "--pp", "2", *flags(opts), "--json").stdout


@pytest.mark.parametrize("opts", PRACTICE)
def test_simulate_plan_file_practice_overrides_equal_cli(cli, tmp_path, opts):
    plan = tmp_path / "plan.json"
    with hetsim.Plan.grid(hetsim.Model("gpt3-1.3b"), hetsim.Cluster("dgx-a100-1node"),
                          tp=2, pp=2) as p:
        p.save(plan)
        base = p.json_text()
        r = hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", p, **opts)
        assert p.json_text() == base                 # the handle is not changed
    assert r.json_text == cli("simulate", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-1node",
                              "--plan", plan, *flags(opts), "--json").stdout
    assert hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", plan, **opts).json_text == r.json_text


def test_plan_and_compare_practice_equal_cli(cli):
    opts = dict(kernels="megatron-core-2024", precision="fp16", zero_stage=1)
    c = json.loads(cli("plan", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-1node",
                       "--strategy", "megatron", *flags(opts), "--json", "--quiet").stdout)
    with hetsim.plan("gpt3-1.3b", "dgx-a100-1node", "megatron", **opts) as p:
        res = p.result()
    for k in c:
        if k != "search_s":
            assert res[k] == c[k], k
    want = cli("compare", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-1node", "--strategies",
               "megatron,data-parallel", *flags(opts), "--format", "csv").stdout
    got = hetsim.compare_csv("gpt3-1.3b", "dgx-a100-1node", "megatron,data-parallel", **opts)
    # search_s is wall-clock: compare every other column
    a, b = list(csv.reader(io.StringIO(want))), list(csv.reader(io.StringIO(got)))
    si = a[0].index("search_s")
    assert len(a) == len(b) == 3
    for x, y in zip(a, b):
        assert x[:si] + x[si + 1:] == y[:si] + y[si + 1:]


@pytest.mark.parametrize("kw,needle", [
    (dict(tp=2, kernels="nope"), 'kernels: unknown preset "nope"'),
    (dict(tp=2, attention="sparse"), 'attention: must be flash or unfused, got "sparse"'),
    (dict(tp=2, precision="int4"), 'precision: must be bf16, fp16, fp8 or fp32, got "int4"'),
    (dict(tp=2, zero_stage=4), "zero_stage"),
    (dict(tp=2, grad_reduce_dtype="bf16"), 'grad_reduce_dtype: must be fp32 or default, got "bf16"'),
    (dict(tp=2, tp_comm_overlap=True), "tp_comm_overlap: needs sequence_parallel"),
    (dict(tp=1, sequence_parallel=True), "sequence_parallel: needs tensor parallelism"),
])
def test_bad_practice_values_name_option_and_value(cli, kw, needle):
    with pytest.raises(hetsim.InputError) as e:
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", **kw)
    assert needle in str(e.value) and e.value.exit_code == 2
    p = cli("simulate", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-1node",
            *flags({k: v for k, v in kw.items()}), check=False)
    assert p.returncode == 2                       # the CLI refuses the same values
    with pytest.raises(hetsim.InputError, match="plan options: precision"):
        hetsim.plan("gpt3-1.3b", "dgx-a100-1node", "megatron", precision="int4")
