"""plan(), compare() and sweep() against `hetsim plan --json`, `hetsim compare
--format csv` and `hetsim sweep --no-timings` on the same inputs."""
import csv
import io
import json

import pytest

import hetsim

TIMING = {"search_s"}  # wall-clock columns: the only ones allowed to differ


def test_plan_equals_cli(cli, tmp_path):
    out = tmp_path / "plan.json"
    c = json.loads(cli("plan", "--model", "gpt3-1.3b", "--cluster", "a100-v100-two-sites",
                       "--strategy", "whale", "--json").stdout)
    cli("plan", "--model", "gpt3-1.3b", "--cluster", "a100-v100-two-sites", "--strategy", "whale",
        "-o", out, "--quiet")
    with hetsim.plan("gpt3-1.3b", "a100-v100-two-sites", "whale") as p:
        res = p.result()
        assert p.json_text() == out.read_text()          # byte for byte
        assert p.to_dict() == c["plan"]
        assert p.summary == c["summary"]
        for k in c:
            if k not in TIMING:
                assert res[k] == c[k], k
        # the searched plan simulates to the report the search printed
        r = hetsim.simulate("gpt3-1.3b", "a100-v100-two-sites", p)
        assert r.to_dict() | {} == {**c["report"], "model": "gpt3-1.3b",
                                    "cluster": "a100-v100-two-sites"}


def test_plan_options_and_file_inputs(cli, repo, data):
    cl = data / "clusters" / "topo-3sites.json"
    md = repo / "models" / "catalog" / "gpt3-1.3b.json"
    c = json.loads(cli("plan", "--model", md, "--cluster", cl, "--strategy", "megatron",
                       "--global-batch", "96", "--max-microbatch-size", "2", "--json").stdout)
    p = hetsim.plan(md, cl, "megatron", global_batch=96, max_microbatch_size=2)
    assert p.to_dict() == c["plan"]
    assert p.result()["report"] == c["report"]


def test_plan_infeasible_raises_with_cli_message(cli):
    err = cli("plan", "--model", "gpt3-175b", "--cluster", "dgx-a100-1node", "--strategy",
              "data-parallel", check=False)
    assert err.returncode != 0
    with pytest.raises(hetsim.InputError) as e:
        hetsim.plan("gpt3-175b", "dgx-a100-1node", "data-parallel")
    assert err.stderr.strip().endswith("hetsim: " + str(e.value))


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def same_rows(a, b):
    ra, rb = rows(a), rows(b)
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert list(x) == list(y)
        for k in x:
            if k not in TIMING:
                assert x[k] == y[k], (k, x[k], y[k])


def test_compare_equals_cli(cli, repo):
    args = ["--model", "gpt3-1.3b", "--cluster", "a100-v100-two-sites",
            "--strategies", "megatron,whale,data-parallel,exhaustive"]
    c = cli("compare", *args, "--format", "csv").stdout
    py = hetsim.compare_csv("gpt3-1.3b", "a100-v100-two-sites",
                            ["megatron", "whale", "data-parallel", "exhaustive"])
    same_rows(py, c)
    df = hetsim.compare("gpt3-1.3b", "a100-v100-two-sites", "megatron,whale,data-parallel,exhaustive")
    assert list(df.columns) == c.splitlines()[0].split(",")
    assert list(df["strategy"]) == ["megatron", "whale", "data-parallel", "exhaustive"]


def test_compare_scenario_and_charge_equal_cli(cli):
    c = cli("compare", "--scenario", "hapt", "--strategies", "megatron,hapt", "--charge", "cluster",
            "--format", "csv").stdout
    same_rows(hetsim.compare_csv(scenario="hapt", strategies="megatron,hapt", charge="cluster"), c)


def test_compare_file_inputs_equal_cli(cli, data):
    cl = data / "clusters" / "topo-3sites.json"
    hf = data / "models" / "gpt2" / "config.json"
    c = cli("compare", "--model", hf, "--cluster", cl, "--strategies", "megatron,hapt",
            "--global-batch", "64", "--format", "csv").stdout
    same_rows(hetsim.compare_csv(hf, cl, "megatron,hapt", global_batch=64), c)


def test_sweep_equals_cli_bytes(cli, data):
    spec = data / "sweep" / "small.json"
    c = cli("sweep", spec, "--no-timings", "--quiet").stdout
    assert hetsim.sweep_csv(spec, no_timings=True) == c
    d = json.loads(spec.read_text())
    assert hetsim.sweep_csv(d, no_timings=True) == c.replace("small", "small")
    df = hetsim.sweep(spec, no_timings=True)
    assert list(df.columns) == c.splitlines()[0].split(",")
    assert len(df) == len(c.splitlines()) - 1


def test_sweep_with_timings_has_the_same_rows(cli, data):
    spec = data / "sweep" / "small.json"
    c = cli("sweep", spec, "--no-timings", "--quiet").stdout
    same_rows(hetsim.sweep_csv(spec), c)


def test_sweep_default_global_batch_equals_cli(cli, tmp_path):
    """A spec without global_batch takes the sweep's default batch, whatever
    the CLI resolves it to: the in-process sweep must resolve it the same way."""
    spec = {"name": "defaults", "clusters": ["dgx-a100-1node", {"A100-SXM4-40GB": 8,
                                                                "V100-SXM2-16GB": 8}],
            "models": ["gpt3-1.3b"], "strategies": ["megatron"], "price_models": ["on-demand"]}
    path = tmp_path / "defaults.json"
    path.write_text(json.dumps(spec))
    c = cli("sweep", path, "--no-timings", "--quiet").stdout
    assert hetsim.sweep_csv(path, no_timings=True) == c
    assert hetsim.sweep_csv(spec, no_timings=True) == c
