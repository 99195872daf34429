"""whatif() against `hetsim whatif` on the same inputs: the CSV, JSON and
table texts byte for byte, the DataFrame with exactly the CSV's columns and
cells, bad input raising the message the CLI prints, and an infeasible
study (the CLI's exit 3) as rows with reasons."""
import csv
import io
import json

import pytest

import hetsim

CASES = [
    # (CLI flags, Python keywords): catalog names, a base cluster
    (["--model", "gpt3-1.3b", "--cluster", "dgx-a100-1node", "--budget-usd-per-hour", "50",
      "--candidates", "A100-SXM4-40GB,V100-SXM2-16GB", "--strategies", "megatron,whale",
      "--global-batch", "128"],
     dict(model="gpt3-1.3b", cluster="dgx-a100-1node", budget_usd_per_hour=50,
          candidates=["A100-SXM4-40GB", "V100-SXM2-16GB"], strategies="megatron,whale",
          global_batch=128)),
    # replacing, spot prices with an override, a batch per GPU, the top rows, two workers
    (["--model", "gpt3-1.3b", "--replace", "--budget-usd-per-hour", "30", "--candidates",
      "A100-SXM4-40GB,V100-SXM2-32GB", "--strategies", "megatron,data-parallel",
      "--global-batch-per-gpu", "4", "--gpu-price", "V100-SXM2-32GB=1.1:0.5", "--price", "spot",
      "--top", "3", "-j", "2"],
     dict(model="gpt3-1.3b", budget_usd_per_hour=30,
          candidates="A100-SXM4-40GB,V100-SXM2-32GB", strategies=["megatron", "data-parallel"],
          global_batch_per_gpu=4, gpu_price={"V100-SXM2-32GB": (1.1, 0.5)}, price="spot", top=3,
          workers=2)),
]


def run_cli(cli, args, fmt):
    p = cli("whatif", *args, "--format", fmt, "--quiet", check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("args,kw", CASES)
def test_whatif_texts_equal_cli_bytes(cli, args, kw):
    for fmt in ("csv", "json", "table"):
        assert hetsim.whatif_text(**kw, format=fmt) == run_cli(cli, args, fmt), fmt


@pytest.mark.parametrize("args,kw", CASES)
def test_whatif_frame_has_the_csv_columns_and_cells(cli, args, kw):
    text = run_cli(cli, args, "csv")
    rows = list(csv.reader(io.StringIO(text)))
    df = hetsim.whatif(**kw)
    assert list(df.columns) == rows[0]
    assert len(df) == len(rows) - 1
    for i, row in enumerate(rows[1:]):
        for col, cell in zip(rows[0], row):
            v = df[col].iloc[i]
            if cell == "":
                assert v != v or v == "", (col, v)        # NaN for an empty cell
            elif col in ("option", "strategy", "pareto", "plan", "reason"):
                assert v == cell, (col, v, cell)
            else:
                # the number the CLI printed, read back exactly
                assert float(v) == float(cell), (col, v, cell)


def test_whatif_file_inputs_and_handles_equal_cli(cli, repo, data):
    model = repo / "models" / "catalog" / "gpt3-1.3b.json"
    cluster = data / "clusters" / "topo-3sites.json"
    args = ["--model", model, "--cluster", cluster, "--budget-usd-per-hour", "60",
            "--candidates", "A100-SXM4-80GB", "--strategies", "megatron"]
    want = run_cli(cli, args, "csv")
    assert hetsim.whatif_text(model, cluster, budget_usd_per_hour=60,
                              candidates="A100-SXM4-80GB", strategies="megatron") == want
    with hetsim.Model(model) as m, hetsim.Cluster(cluster) as c:
        assert hetsim.whatif_text(m, c, budget_usd_per_hour=60, candidates=["A100-SXM4-80GB"],
                                  strategies=["megatron"]) == want
        assert m.name == "gpt3-1.3b" and c.n_devices > 0       # handles still usable


def test_whatif_infeasible_is_rows_with_reasons(cli):
    args = ["--model", "gpt3-175b", "--replace", "--budget-usd-per-hour", "30",
            "--candidates", "V100-SXM2-16GB", "--strategies", "data-parallel,megatron"]
    p = cli("whatif", *args, "--format", "csv", "--quiet", check=False)
    assert p.returncode == 3, p.stderr          # nothing feasible
    df = hetsim.whatif("gpt3-175b", budget_usd_per_hour=30, candidates="V100-SXM2-16GB",
                       strategies="data-parallel,megatron")
    assert hetsim.whatif_text("gpt3-175b", budget_usd_per_hour=30, candidates="V100-SXM2-16GB",
                              strategies="data-parallel,megatron") == p.stdout
    assert df["strategy"].isna().all() and df["tokens_per_s"].isna().all()
    assert df["reason"].str.contains("does not fit").all()
    j = json.loads(hetsim.whatif_text("gpt3-175b", budget_usd_per_hour=30,
                                      candidates="V100-SXM2-16GB",
                                      strategies="data-parallel,megatron", format="json"))
    assert j["feasible"] is False and "tokens_per_s" not in j["options"][0]


BAD = [
    # (CLI flags after the model and cluster, Python keywords)
    (["--budget-usd-per-hour", "-1", "--candidates", "A100-SXM4-40GB"],
     dict(budget_usd_per_hour=-1, candidates="A100-SXM4-40GB")),
    (["--budget-usd-per-hour", "20", "--candidates", "NOPE-GPU"],
     dict(budget_usd_per_hour=20, candidates="NOPE-GPU")),
    (["--budget-usd-per-hour", "20", "--candidates", "H20-96GB"],
     dict(budget_usd_per_hour=20, candidates="H20-96GB")),
    (["--budget-usd-per-hour", "20", "--candidates", "A100-SXM4-40GB", "--strategies", "nope"],
     dict(budget_usd_per_hour=20, candidates="A100-SXM4-40GB", strategies="nope")),
    (["--budget-usd-per-hour", "0.1", "--candidates", "A100-SXM4-40GB"],
     dict(budget_usd_per_hour=0.1, candidates="A100-SXM4-40GB", replace=True)),
    (["--budget-usd-per-hour", "20", "--candidates", "A100-SXM4-40GB", "--gpu-price", "X=abc"],
     dict(budget_usd_per_hour=20, candidates="A100-SXM4-40GB", gpu_price="X=abc")),
    (["--budget-usd-per-hour", "20", "--candidates", "A100-SXM4-40GB", "--global-batch", "8",
      "--global-batch-per-gpu", "2"],
     dict(budget_usd_per_hour=20, candidates="A100-SXM4-40GB", global_batch=8,
          global_batch_per_gpu=2)),
    (["--budget-usd-per-hour", "20", "--candidates", "A100-SXM4-40GB", "--nic-GBps", "0"],
     dict(budget_usd_per_hour=20, candidates="A100-SXM4-40GB", nic_GBps=0)),
    (["--budget-usd-per-hour", "2000", "--candidates", "A100-SXM4-40GB,V100-SXM2-16GB",
      "--step", "1"],
     dict(budget_usd_per_hour=2000, candidates="A100-SXM4-40GB,V100-SXM2-16GB", step=1)),
]


@pytest.mark.parametrize("args,kw", BAD)
def test_whatif_bad_input_raises_the_cli_message(cli, args, kw):
    replace = kw.get("replace")
    base = ["--replace"] if replace else ["--cluster", "dgx-a100-1node"]
    p = cli("whatif", "--model", "gpt3-1.3b", *base, *args, "--quiet", check=False)
    assert p.returncode == 2, p
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("hetsim whatif: ")
    with pytest.raises(hetsim.InputError) as e:
        hetsim.whatif("gpt3-1.3b", None if replace else "dgx-a100-1node", **kw)
    assert str(e.value) == line[len("hetsim whatif: "):]
    assert e.value.exit_code == 2


def test_whatif_option_errors_name_the_option():
    with pytest.raises(hetsim.InputError, match=r"whatif options: step: .*0"):
        hetsim.whatif("gpt3-1.3b", "dgx-a100-1node", budget_usd_per_hour=20,
                      candidates="A100-SXM4-40GB", step=0)
    with pytest.raises(hetsim.InputError, match=r"whatif options: format: .*xml"):
        hetsim.whatif_text("gpt3-1.3b", "dgx-a100-1node", budget_usd_per_hour=20,
                           candidates="A100-SXM4-40GB", format="xml")
    with pytest.raises(hetsim.InputError, match=r"--cluster: give a base cluster, or --replace"):
        hetsim.whatif("gpt3-1.3b", None, replace=False, budget_usd_per_hour=20,
                      candidates="A100-SXM4-40GB")
    with pytest.raises(TypeError):
        hetsim.whatif("gpt3-1.3b", "dgx-a100-1node", budget_usd_per_hour=20,
                      candidates="A100-SXM4-40GB", format="json")
