"""Bad input raises InputError (a ValueError) carrying the C library's message,
the one the CLI prints after "hetsim: "; closed handles refuse use."""
import json
import os

import pytest

import hetsim


def cli_message(cli, *args):
    p = cli(*args, check=False)
    assert p.returncode == 2, p
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("hetsim: ")
    return line[len("hetsim: "):]


def test_unknown_model(cli):
    with pytest.raises(hetsim.InputError) as e:
        hetsim.Model("gpt9-1t")
    assert str(e.value) == cli_message(cli, "show", "model", "gpt9-1t")
    assert e.value.exit_code == 2 and e.value.name == "HS_ENOTFOUND"


def test_malformed_cluster_file(cli, data):
    bad = data / "clusters" / "malformed.json"
    with pytest.raises(hetsim.InputError) as e:
        hetsim.Cluster(bad)
    assert str(e.value) == cli_message(cli, "show", "cluster", bad)
    assert "malformed.json" in str(e.value)


def test_unknown_gpu_in_cluster_dict_names_field_and_value():
    d = {"name": "x", "sites": [{"name": "a", "nodes": [{"count": 1, "gpu": "A1OO",
                                                         "gpus_per_node": 8}]}]}
    with pytest.raises(hetsim.InputError) as e:
        hetsim.Cluster(d)
    msg = str(e.value)
    assert "x.json" in msg and "sites[0].nodes[0].gpu" in msg and "A1OO" in msg


def test_bad_plan_file(cli, data):
    plan = data / "plans" / "bad-device.json"
    with pytest.raises(hetsim.InputError) as e:
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", plan)
    assert str(e.value) == cli_message(cli, "simulate", "--model", "gpt3-1.3b", "--cluster",
                                       "dgx-a100-1node", "--plan", plan)


def test_grid_errors_equal_cli(cli):
    with pytest.raises(hetsim.InputError) as e:
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", tp=4, pp=4)
    assert str(e.value) == cli_message(cli, "simulate", "--model", "gpt3-1.3b", "--cluster",
                                       "dgx-a100-1node", "--tp", "4", "--pp", "4")
    with pytest.raises(hetsim.InputError) as e:
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", tp=2, global_batch=7)
    assert str(e.value) == cli_message(cli, "simulate", "--model", "gpt3-1.3b", "--cluster",
                                       "dgx-a100-1node", "--tp", "2", "--global-batch", "7")
    with pytest.raises(hetsim.InputError) as e:
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", schedule="zigzag")
    assert "zigzag" in str(e.value)


@pytest.mark.parametrize("kw,needle", [
    (dict(tp=0), "tp"), (dict(tp=2000), "tp"), (dict(microbatch_size=-1), "microbatch_size"),
    (dict(tp="two"), "tp"), (dict(recompute="some"), "recompute"),
    (dict(chunks=1.5), "chunks"),
])
def test_option_values_name_the_option(kw, needle):
    with pytest.raises(hetsim.InputError) as e:
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", **kw)
    assert needle in str(e.value) and "simulate options" in str(e.value)


def test_unknown_option_and_strategy():
    with pytest.raises(hetsim.InputError, match="unknown strategy \"nope\""):
        hetsim.plan("gpt3-1.3b", "dgx-a100-1node", "nope")
    with pytest.raises(hetsim.InputError, match="unknown strategy \"nope\""):
        hetsim.compare_csv("gpt3-1.3b", "dgx-a100-1node", ["megatron", "nope"])
    with pytest.raises(hetsim.InputError, match="unknown scenario"):
        hetsim.compare_csv(scenario="nope")
    with pytest.raises(hetsim.InputError, match="charge"):
        hetsim.compare_csv("gpt3-1.3b", "dgx-a100-1node", "megatron", charge="all")
    with pytest.raises(TypeError):
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", microbatch=2)  # Python spelling only


def test_bad_sweep_spec(cli, data):
    bad = data / "sweep" / "bad-strategy.json"
    with pytest.raises(hetsim.InputError) as e:
        hetsim.sweep(bad)
    assert str(e.value) == cli_message(cli, "sweep", bad)


def test_bad_model_dict_and_hf_config():
    with pytest.raises(hetsim.InputError) as e:
        hetsim.Model({"name": "m", "layers": "many"})
    assert "m.json" in str(e.value)
    with pytest.raises(hetsim.InputError) as e:
        hetsim.Model({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
                      "n_embd": -768, "n_layer": 12, "n_head": 12}, name="cfg")
    assert "cfg.json" in str(e.value) and "-768" in str(e.value)


def test_plan_and_grid_together_refused():
    with pytest.raises(hetsim.InputError):
        hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", {"pipelines": []}, tp=2)


def test_closed_handles_refuse_use():
    m = hetsim.Model("gpt3-1.3b")
    m.close()
    m.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        m.name
    with hetsim.Cluster("dgx-a100-1node") as c:
        pass
    with pytest.raises(ValueError, match="closed"):
        hetsim.simulate("gpt3-1.3b", c)
    r = hetsim.simulate("gpt3-1.3b", "dgx-a100-1node")
    r.close()
    with pytest.raises(ValueError):
        r.iteration_time_s
    with pytest.raises(hetsim.InputError, match="not made by a strategy search"):
        with hetsim.Model("gpt3-1.3b") as m2, hetsim.Cluster("dgx-a100-1node") as c2:
            hetsim.Plan.grid(m2, c2, tp=8).result()


# ---- names and paths the C side cannot hold (issue #32) --------------------

@pytest.mark.parametrize("call,needle", [
    (lambda: hetsim.Model("gpt3-1.3b\0junk"), "model"),
    (lambda: hetsim.Cluster("dgx-a100-1node\0junk"), "cluster"),
    (lambda: hetsim.Model({"name": "m\0x", "layers": 2}), "model['name']"),
    (lambda: hetsim.Cluster({"name": "x", "sites": [{"name": "a\0b", "nodes": []}]}),
     "cluster['sites'][0]['name']"),
    (lambda: hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", schedule="1f1b\0x"), "schedule"),
    (lambda: hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", kernels="megatron-2021\0"),
     "kernels"),
    (lambda: hetsim.plan("gpt3-1.3b", "dgx-a100-1node", "megatron\0x"), "strategy"),
    (lambda: hetsim.compare_csv("gpt3-1.3b", "dgx-a100-1node", ["megatron\0x"]),
     "strategies[0]"),
    (lambda: hetsim.compare_csv("gpt3-1.3b", "dgx-a100-1node", "megatron\0x"), "strategies"),
    (lambda: hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", trace="/tmp/t\0.json"), "trace"),
    (lambda: hetsim.Model({"name": "m", "layers": 2}, name="n\0"), "name"),
])
def test_nul_in_a_name_is_refused_naming_the_argument(call, needle):
    """ctypes' c_char_p and cJSON's \\u0000 both end the string at a NUL, so
    "gpt3-1.3b\\0junk" used to load gpt3-1.3b silently."""
    with pytest.raises(ValueError) as e:
        call()
    assert isinstance(e.value, hetsim.InputError)
    msg = str(e.value)
    assert msg.startswith(needle + ":") and "NUL" in msg, msg
    assert e.value.name == "HS_EINVAL" and e.value.exit_code == 2


def test_c_api_refuses_an_escaped_nul_in_options():
    """Other bindings reach the C API with JSON option text: \\u0000 there is
    refused by capi_json.c, naming the options; an escaped backslash followed
    by "u0000" is an ordinary string (here an unknown schedule)."""
    from hetsim import _lib
    from hetsim.api import _call

    with hetsim.Model("gpt3-1.3b") as m, hetsim.Cluster("dgx-a100-1node") as c:
        with pytest.raises(hetsim.InputError) as e:
            _call(_lib.lib.hs_api_plan_grid, m.handle, c.handle, b'{"schedule": "1f1b\\u0000x"}')
        assert "\\u0000 (NUL)" in str(e.value) and "options" in str(e.value)
        with pytest.raises(hetsim.InputError) as e:
            _call(_lib.lib.hs_api_plan_grid, m.handle, c.handle,
                  b'{"schedule": "1f1b\\\\u0000x"}')
        assert "NUL" not in str(e.value) and "schedule" in str(e.value)


def test_bytes_and_pathlike_paths_are_accepted(repo, data, tmp_path):
    """A path may be str, bytes or os.PathLike, as open() takes it; bytes are
    passed to C unchanged, even when they are not UTF-8."""
    model = repo / "models" / "catalog" / "gpt3-1.3b.json"
    cluster = data / "clusters" / "topo-3sites.json"
    odd = tmp_path / os.fsdecode(b"\xff-model.json")       # not valid UTF-8
    odd.write_bytes(model.read_bytes())
    want = hetsim.simulate(model, cluster, tp=2, pp=2).json_text
    for m in (bytes(model), os.fsencode(odd), odd):
        for c in (bytes(cluster), cluster):
            assert hetsim.simulate(m, c, tp=2, pp=2).json_text == want
    with hetsim.Model(model) as mm, hetsim.Cluster(cluster) as cc:
        p = hetsim.Plan.grid(mm, cc, tp=2, pp=2)
        p.save(os.fsencode(tmp_path / "plan.json"))
        assert hetsim.simulate(mm, cc, os.fsencode(tmp_path / "plan.json")).json_text == want
        trace = os.fsencode(tmp_path / "trace.json")
        r = hetsim.simulate(mm, cc, p, trace=trace)
        assert r.trace() == json.loads((tmp_path / "trace.json").read_text())
    with hetsim.Cluster(bytes(cluster), profile=None) as c:
        assert c.name == "topo-3sites"


@pytest.mark.parametrize("call,needle", [
    (lambda: hetsim.Model(3), "model: expected a catalog name, a path, a dict or a Model, got int"),
    (lambda: hetsim.Cluster(2.5), "cluster: expected a catalog name, a path, a dict or a Cluster"),
    (lambda: hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", 7), "plan: expected a Plan"),
    (lambda: hetsim.plan("gpt3-1.3b", "dgx-a100-1node", b"megatron"), "strategy: expected a str"),
    (lambda: hetsim.sweep(42), "spec: expected"),
])
def test_wrong_argument_types_name_the_argument(call, needle):
    with pytest.raises(TypeError) as e:
        call()
    assert str(e.value).startswith(needle), str(e.value)
