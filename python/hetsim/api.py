"""hetsim from Python, in-process: a thin, typed layer over libhetsim.so's flat
C API (capi/hetsim.h). Every figure comes from the C library; this module
only converts arguments, owns handles and raises errors.

Ownership: Model, Cluster, Plan and Report each own one C handle. close()
(or leaving a ``with`` block) frees it at once; __del__ frees it otherwise.
Closing twice is harmless; using a closed object raises ValueError.

Threads: ctypes releases the GIL around every C call, so calls from several
threads run in parallel; open Model, Cluster and Plan objects may be shared
between them (capi/hetsim.h, "Threads"; docs/python.md).
"""
from __future__ import annotations

import ctypes
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from . import _lib
from ._lib import ErrorRecord, lib, take_string

if TYPE_CHECKING:  # pandas is imported only by the functions returning frames
    import pandas

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
ModelLike = Union["Model", PathLike, Mapping[str, Any]]
ClusterLike = Union["Cluster", PathLike, Mapping[str, Any]]


class HetsimError(Exception):
    """A failure reported by the C library, with its message (which names the
    file, the field and the value), its status name (``"HS_EINVAL"``) and the
    exit code the hetsim CLI would give (2 bad input, 1 internal)."""

    def __init__(self, message: str, status: int, name: str, exit_code: int):
        super().__init__(message)
        self.message = message
        self.status = status
        self.name = name
        self.exit_code = exit_code


class InputError(HetsimError, ValueError):
    """Bad input: the CLI exits with code 2 for these."""


class InfeasibleError(InputError):
    """No feasible plan (HS_EINFEASIBLE): the strategy found nothing that fits."""


def _raise(err: ErrorRecord) -> None:
    msg = err.message.decode("utf-8", "replace")
    name = err.name.decode("ascii", "replace")
    if name == "HS_EINFEASIBLE":
        cls: type[HetsimError] = InfeasibleError
    elif name == "HS_ENOMEM":
        raise MemoryError(msg)
    elif err.exit_code == 2:
        cls = InputError
    else:
        cls = HetsimError
    raise cls(msg, err.status, name, err.exit_code)


def _call(fn, *args):
    """Calls a C API function whose last argument is the error record."""
    err = ErrorRecord()
    out = fn(*args, ctypes.byref(err))
    if err.status != 0:
        _raise(err)
    return out


def _show(s: str) -> str:
    """repr of a refused string, cut to 80 characters."""
    return repr(s) if len(s) <= 80 else repr(s[:80]) + "..."


def _bad(msg: str) -> "InputError":
    """An InputError raised on the Python side (status HS_EINVAL, exit 2)."""
    return InputError(msg, 1, "HS_EINVAL", 2)


def _enc(s: Optional[str], what: str) -> Optional[bytes]:
    """UTF-8 bytes of a name or text for the C API. A NUL would end the C
    string there (the rest silently dropped), so it is refused, naming the
    argument `what`."""
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError(f"{what}: expected a str, got {type(s).__name__}")
    if "\0" in s:
        raise _bad(f"{what}: {_show(s)} contains a NUL character")
    return s.encode("utf-8")


def _fspath(p: Any, what: str, expected: str = "a str, bytes or os.PathLike path") -> str:
    """A path argument (str, bytes or os.PathLike) as a str, bytes decoded as
    the file system encodes names (os.fsdecode); a NUL is refused, and any
    other type is a TypeError naming the argument."""
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError(f"{what}: expected {expected}, got {type(p).__name__}")
    s = os.fsdecode(os.fspath(p))
    if "\0" in s:
        raise _bad(f"{what}: {_show(s)} contains a NUL character")
    return s


def _path(p: Any, what: str, expected: str = "a str, bytes or os.PathLike path") -> bytes:
    """_fspath as the bytes the C library opens (os.fsencode: a bytes path
    comes back unchanged)."""
    return os.fsencode(_fspath(p, what, expected))


def _check_nul(v: Any, what: str) -> None:
    """Refuses a NUL in any string of a JSON-bound value (keys included):
    cJSON would decode \\u0000 into an end of string."""
    if isinstance(v, str):
        if "\0" in v:
            raise _bad(f"{what}: {_show(v)} contains a NUL character")
    elif isinstance(v, Mapping):
        for k, x in v.items():
            if isinstance(k, str) and "\0" in k:
                raise _bad(f"{what}: key {_show(k)} contains a NUL character")
            _check_nul(x, f"{what}[{k!r}]")
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _check_nul(x, f"{what}[{i}]")


def _opts(**kw: Any) -> bytes:
    """Options object for the C API: None means not given. A string holding
    a NUL is refused naming its option."""
    given = {k: v for k, v in kw.items() if v is not None}
    for k, v in given.items():
        _check_nul(v, k)
    return json.dumps(given).encode("utf-8")


def _json_text(d: Mapping[str, Any], what: str) -> bytes:
    """A dict given for a model, cluster, plan or sweep spec, as JSON text."""
    _check_nul(d, what)
    return json.dumps(d).encode("utf-8")


def _practice(kernels: Optional[str], attention: Optional[str],
              sequence_parallel: Optional[bool], tp_comm_overlap: Optional[bool],
              zero_stage: Optional[int], precision: Optional[str],
              grad_reduce_dtype: Optional[str] = None) -> dict:
    """The training-practice options of cli/opt_practice.c (``--kernels``,
    ``--attention``, ``--sequence-parallel``, ``--tp-comm-overlap``,
    ``--zero-stage``, ``--precision``, ``--grad-reduce-dtype``); None = not
    given."""
    return dict(kernels=kernels, attention=attention, sequence_parallel=sequence_parallel,
                tp_comm_overlap=tp_comm_overlap, zero_stage=zero_stage, precision=precision,
                grad_reduce_dtype=grad_reduce_dtype)


class _Handle:
    _free = None  # the C destructor

    def __init__(self) -> None:
        self._h: Optional[int] = None

    @property
    def handle(self) -> int:
        if not self._h:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._h

    def close(self) -> None:
        """Frees the C object now (idempotent)."""
        h, self._h = self._h, None
        if h:
            type(self)._free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class Model(_Handle):
    """A DNN model: a catalog name (``"gpt3-1.3b"``), a hetsim model JSON path,
    a HuggingFace ``config.json`` path, or a dict in either format.

    ``seq_len`` replaces the model's sequence length (``--seq-len``)."""

    _free = lib.hs_api_model_free

    def __init__(self, source: ModelLike, *, seq_len: Optional[int] = None,
                 name: Optional[str] = None):
        super().__init__()
        if isinstance(source, Model):
            source = source._source
        self._source = source
        self.seq_len = seq_len
        sl = int(seq_len or 0)
        if isinstance(source, Mapping):
            text = _json_text(source, "model")
            file = f"{name or source.get('name') or 'model'}.json"
            self._h = _call(lib.hs_api_model_parse, text, _enc(file, "name"), sl)
        else:
            spec = _path(source, "model", "a catalog name, a path, a dict or a Model")
            self._h = _call(lib.hs_api_model_load, spec, sl)

    @property
    def name(self) -> str:
        return lib.hs_api_model_name(self.handle).decode("utf-8")

    def to_dict(self) -> dict:
        """What ``hetsim show model --json`` prints."""
        return json.loads(take_string(_call(lib.hs_api_model_json, self.handle)))

    def with_seq_len(self, seq_len: Optional[int]) -> "Model":
        """The same model source loaded with another sequence length."""
        return Model(self._source, seq_len=seq_len)

    def __repr__(self) -> str:
        return f"Model({self.name!r})" if self._h else "Model(<closed>)"


class Cluster(_Handle):
    """A cluster: a catalog name, a cluster JSON path, or a dict. ``profile`` is
    a calibrated device profile JSON applied as ``--profile`` does."""

    _free = lib.hs_api_cluster_free

    def __init__(self, source: ClusterLike, *, profile: Optional[PathLike] = None,
                 name: Optional[str] = None):
        super().__init__()
        if isinstance(source, Cluster):
            source, profile = source._source, profile or source._profile
        self._source, self._profile = source, profile
        prof = _path(profile, "profile") if profile is not None else None
        if isinstance(source, Mapping):
            text = _json_text(source, "cluster")
            file = f"{name or source.get('name') or 'cluster'}.json"
            self._h = _call(lib.hs_api_cluster_parse, text, _enc(file, "name"), prof)
        else:
            spec = _path(source, "cluster", "a catalog name, a path, a dict or a Cluster")
            self._h = _call(lib.hs_api_cluster_load, spec, prof)

    @property
    def name(self) -> str:
        return lib.hs_api_cluster_name(self.handle).decode("utf-8")

    @property
    def n_devices(self) -> int:
        return int(lib.hs_api_cluster_n_devices(self.handle))

    def to_dict(self) -> dict:
        """What ``hetsim show cluster --json`` prints."""
        return json.loads(take_string(_call(lib.hs_api_cluster_json, self.handle)))

    def __repr__(self) -> str:
        return f"Cluster({self.name!r})" if self._h else "Cluster(<closed>)"


class Report(_Handle, Mapping):
    """One simulated iteration. Reads like the JSON report of
    ``hetsim simulate --json``: ``report["iteration_time_s"]``,
    ``report["stages"]``; ``json_text`` is that output byte for byte."""

    _free = lib.hs_api_report_free

    def __init__(self, handle: int, trace: Optional[dict] = None):
        super().__init__()
        self._h = handle
        self._dict: Optional[dict] = None
        self._json: Optional[str] = None
        self._trace = trace

    @property
    def json_text(self) -> str:
        """``hetsim simulate --json`` output for the same inputs, with its newline."""
        if self._json is None:
            self._json = take_string(_call(lib.hs_api_report_json, self.handle))
        return self._json

    def to_dict(self) -> dict:
        if self._dict is None:
            self._dict = json.loads(self.json_text)
        return self._dict

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    @property
    def iteration_time_s(self) -> Optional[float]:
        """Seconds per iteration, read from C without building the JSON;
        None for a plan that runs out of memory, as the JSON's null."""
        return None if self.oom else float(lib.hs_api_report_iteration_time_s(self.handle))

    @property
    def tokens_per_s(self) -> Optional[float]:
        """Tokens per second, read from C; None for a plan that runs out of
        memory, as the JSON's null."""
        return None if self.oom else float(lib.hs_api_report_tokens_per_s(self.handle))

    @property
    def oom(self) -> bool:
        return bool(lib.hs_api_report_oom(self.handle))

    def text(self) -> str:
        """The text report ``hetsim simulate`` prints (after its first line)."""
        return take_string(_call(lib.hs_api_report_text, self.handle))

    def breakdown(self) -> "pandas.DataFrame":
        """Per-stage breakdown (the report's ``stages``): one row per stage with
        devices, op range, fwd_s/bwd_s per microbatch, compute_s,
        comm_exposed_s, idle_s and peak_memory_bytes."""
        import pandas as pd

        return pd.DataFrame(self["stages"])

    def trace(self) -> dict:
        """The Chrome/Perfetto trace of this run (``--trace``), as a dict.
        Available when simulate() was called with ``trace=True`` or a path."""
        if self._trace is None:
            raise ValueError("no trace: call simulate(..., trace=True) (or trace='file.json')")
        return self._trace

    def __repr__(self) -> str:
        if not self._h:
            return "Report(<closed>)"
        return f"Report(iteration_time_s={self.iteration_time_s!r})"


class Plan(_Handle):
    """A parallel plan (docs/plan.md): from the grid shortcut, a strategy search
    (plan()), a plan file or a dict. ``to_dict()`` is the plan file."""

    _free = lib.hs_api_plan_free

    def __init__(self, handle: int):
        super().__init__()
        self._h = handle

    @classmethod
    def grid(cls, model: "Model", cluster: "Cluster", *, tp: Optional[int] = None,
             pp: Optional[int] = None, dp: Optional[int] = None,
             microbatch_size: Optional[int] = None, global_batch: Optional[int] = None,
             schedule: Optional[str] = None, chunks: Optional[int] = None,
             recompute: Optional[str] = None, kernels: Optional[str] = None,
             attention: Optional[str] = None, sequence_parallel: Optional[bool] = None,
             tp_comm_overlap: Optional[bool] = None, zero_stage: Optional[int] = None,
             precision: Optional[str] = None, grad_reduce_dtype: Optional[str] = None) -> "Plan":
        """The Megatron-style grid of ``hetsim simulate --tp T --pp P ...``
        (same defaults: dp = every remaining device, global batch =
        dp x microbatch size x pp x 4, schedule 1f1b), with the training
        practice options (``kernels``, ``attention``, ``sequence_parallel``,
        ``tp_comm_overlap``, ``zero_stage``, ``precision``), validated as the
        CLI validates it."""
        opts = _opts(tp=tp, pp=pp, dp=dp, microbatch_size=microbatch_size,
                     global_batch=global_batch, schedule=schedule, chunks=chunks,
                     recompute=recompute,
                     **_practice(kernels, attention, sequence_parallel, tp_comm_overlap,
                                 zero_stage, precision, grad_reduce_dtype))
        return cls(_call(lib.hs_api_plan_grid, model.handle, cluster.handle, opts))

    @classmethod
    def load(cls, source: Union[PathLike, Mapping[str, Any]], model: "Model",
             cluster: "Cluster") -> "Plan":
        """A plan file or dict, validated against model and cluster."""
        if isinstance(source, Mapping):
            return cls(_call(lib.hs_api_plan_parse, _json_text(source, "plan"), b"plan.json",
                             model.handle, cluster.handle))
        return cls(_call(lib.hs_api_plan_load, _path(source, "plan", "a Plan, a path or a dict"), model.handle,
                         cluster.handle))

    @property
    def summary(self) -> str:
        """``"pp4 [tp8 x1 | ...] mb=1x192 1f1b"``."""
        return lib.hs_api_plan_summary(self.handle).decode("utf-8")

    def to_dict(self) -> dict:
        """The plan as ``hetsim plan --json`` embeds it (its "plan"): the
        file's fields without the file's ``schema_version``."""
        d = json.loads(self.json_text())
        d.pop("schema_version", None)
        return d

    def json_text(self) -> str:
        """The plan file as ``hetsim plan -o plan.json`` writes it."""
        return take_string(_call(lib.hs_api_plan_json, self.handle))

    def save(self, path: PathLike) -> None:
        with open(_fspath(path, "path"), "w", encoding="utf-8") as f:
            f.write(self.json_text())

    def result(self) -> dict:
        """For a plan from plan(): what ``hetsim plan --json`` prints (strategy,
        search_s, candidates, predicted_s, optimal, note, summary, plan and
        the simulated report)."""
        return json.loads(take_string(_call(lib.hs_api_plan_result_json, self.handle)))

    def __repr__(self) -> str:
        return f"Plan({self.summary!r})" if self._h else "Plan(<closed>)"


def _as_model(m: ModelLike, seq_len: Optional[int]) -> tuple["Model", bool]:
    """(model, owned): a Model to use, and whether this call made it."""
    if isinstance(m, Model) and (seq_len is None or seq_len == m.seq_len):
        return m, False
    if isinstance(m, Model):
        return m.with_seq_len(seq_len), True
    return Model(m, seq_len=seq_len), True


def _as_cluster(c: ClusterLike, profile: Optional[PathLike]) -> tuple["Cluster", bool]:
    if isinstance(c, Cluster) and profile is None:
        return c, False
    return Cluster(c, profile=profile), True


def simulate(model: ModelLike, cluster: ClusterLike,
             plan: Union["Plan", PathLike, Mapping[str, Any], None] = None, *,
             tp: Optional[int] = None, pp: Optional[int] = None, dp: Optional[int] = None,
             microbatch_size: Optional[int] = None, global_batch: Optional[int] = None,
             schedule: Optional[str] = None, chunks: Optional[int] = None,
             recompute: Optional[str] = None, kernels: Optional[str] = None,
             attention: Optional[str] = None, sequence_parallel: Optional[bool] = None,
             tp_comm_overlap: Optional[bool] = None, zero_stage: Optional[int] = None,
             precision: Optional[str] = None, grad_reduce_dtype: Optional[str] = None,
             seq_len: Optional[int] = None,
             profile: Optional[PathLike] = None,
             trace: Union[bool, PathLike, None] = None,
             trace_devices: Optional[int] = None) -> Report:
    """Simulates one training iteration, as ``hetsim simulate`` does.

    ``plan`` is a Plan, a plan file or a dict; without it the grid options
    (``tp``, ``pp``, ``dp``, ``microbatch_size``, ``global_batch``,
    ``schedule``, ``chunks``, ``recompute``) make the plan, with the CLI's
    defaults. The training-practice options ``kernels`` (a preset:
    ``"megatron-2021"``, ``"megatron-core-2024"``, ...), ``attention``
    (``"flash"``/``"unfused"``), ``sequence_parallel``, ``tp_comm_overlap``,
    ``zero_stage`` (0-3), ``precision`` (``"bf16"``, ``"fp16"``,
    ``"fp8"``, ``"fp32"``) and ``grad_reduce_dtype`` (``"fp32"`` or
    ``"default"``: gradients kept and reduced in fp32) are the CLI's flags: with a plan they override
    the plan's own values for this run. ``seq_len`` and ``profile`` are
    ``--seq-len`` and ``--profile``. ``trace=True`` keeps the Chrome trace in the report
    (Report.trace()); a path writes it there too. Raises InputError with the
    C message for bad input."""
    grid = dict(tp=tp, pp=pp, dp=dp, microbatch_size=microbatch_size,
                global_batch=global_batch, schedule=schedule, chunks=chunks,
                recompute=recompute)
    practice = _practice(kernels, attention, sequence_parallel, tp_comm_overlap, zero_stage,
                         precision, grad_reduce_dtype)
    if plan is not None and any(grid[k] is not None for k in ("tp", "pp", "dp")):
        raise InputError("simulate: give either plan or tp/pp/dp, not both", 1, "HS_EINVAL", 2)
    m, own_m = _as_model(model, seq_len)
    c, own_c = _as_cluster(cluster, profile)
    p, own_p = None, False
    tmp = None
    try:
        if isinstance(plan, Plan):
            p = plan
        elif plan is not None:
            p, own_p = Plan.load(plan, m, c), True
        else:
            p, own_p = Plan.grid(m, c, **grid, **practice), True
            practice = {}  # in the plan already
        trace_path = None
        if trace is True:
            fd, tmp = tempfile.mkstemp(prefix="hetsim-trace-", suffix=".json")
            os.close(fd)
            trace_path = tmp
        elif trace:
            trace_path = _fspath(trace, "trace")
        opts = _opts(trace=trace_path, trace_devices=trace_devices, **practice)
        h = _call(lib.hs_api_simulate, m.handle, c.handle, p.handle, opts)
        tr = None
        if trace_path:
            with open(trace_path, encoding="utf-8") as f:
                tr = json.load(f)
        return Report(h, tr)
    finally:
        if tmp:
            os.unlink(tmp)
        if own_p:
            p.close()
        if own_c:
            c.close()
        if own_m:
            m.close()


def plan(model: ModelLike, cluster: ClusterLike, strategy: str, *,
         global_batch: Optional[int] = None, max_microbatch_size: Optional[int] = None,
         max_devices: Optional[int] = None, time_limit: Optional[float] = None,
         mip_gap: Optional[float] = None, no_recompute: Optional[bool] = None,
         kernels: Optional[str] = None, attention: Optional[str] = None,
         sequence_parallel: Optional[bool] = None, tp_comm_overlap: Optional[bool] = None,
         zero_stage: Optional[int] = None, precision: Optional[str] = None,
         grad_reduce_dtype: Optional[str] = None,
         memory_headroom: Optional[float] = None, search_practice: Optional[bool] = None) -> Plan:
    """Searches a plan with ``strategy`` (``hetsim list strategies``), as
    ``hetsim plan`` does; the plan is already simulated (Plan.result()).
    The training-practice options are simulate()'s, put in every plan the
    strategy scores. ``memory_headroom`` is ``--memory-headroom`` (the
    fraction of each GPU's memory plans leave free, in [0, 1), default 0.1);
    ``search_practice=False`` is ``--no-practice-search``. Raises
    InfeasibleError when the strategy finds no plan."""
    m, own_m = _as_model(model, None)
    c, own_c = _as_cluster(cluster, None)
    try:
        opts = _opts(global_batch=global_batch, max_microbatch_size=max_microbatch_size,
                     max_devices=max_devices, time_limit=time_limit, mip_gap=mip_gap,
                     no_recompute=no_recompute, memory_headroom=memory_headroom,
                     search_practice=search_practice,
                     **_practice(kernels, attention, sequence_parallel, tp_comm_overlap,
                                 zero_stage, precision, grad_reduce_dtype))
        return Plan(_call(lib.hs_api_plan_search, m.handle, c.handle, _enc(strategy, "strategy"),
                          opts))
    finally:
        if own_c:
            c.close()
        if own_m:
            m.close()


def compare_csv(model: Optional[ModelLike] = None, cluster: Optional[ClusterLike] = None,
                strategies: Union[str, Sequence[str], None] = None, *,
                scenario: Optional[str] = None, charge: Optional[str] = None,
                baseline: Optional[str] = None, global_batch: Optional[int] = None, max_microbatch_size: Optional[int] = None,
                max_devices: Optional[int] = None, time_limit: Optional[float] = None,
                mip_gap: Optional[float] = None, no_recompute: Optional[bool] = None,
                kernels: Optional[str] = None, attention: Optional[str] = None,
                sequence_parallel: Optional[bool] = None, tp_comm_overlap: Optional[bool] = None,
                zero_stage: Optional[int] = None, precision: Optional[str] = None,
                grad_reduce_dtype: Optional[str] = None,
                memory_headroom: Optional[float] = None,
                search_practice: Optional[bool] = None) -> str:
    """``hetsim compare --format csv`` output (see compare())."""
    if isinstance(strategies, (list, tuple)):
        strategies = list(strategies)
    m = c = None
    own_m = own_c = False
    try:
        if model is not None:
            m, own_m = _as_model(model, None)
        if cluster is not None:
            c, own_c = _as_cluster(cluster, None)
        opts = _opts(strategies=strategies, scenario=scenario, charge=charge, baseline=baseline,
                     global_batch=global_batch, max_microbatch_size=max_microbatch_size,
                     max_devices=max_devices, time_limit=time_limit, mip_gap=mip_gap,
                     no_recompute=no_recompute, memory_headroom=memory_headroom,
                     search_practice=search_practice,
                     **_practice(kernels, attention, sequence_parallel, tp_comm_overlap,
                                 zero_stage, precision, grad_reduce_dtype))
        return take_string(_call(lib.hs_api_compare_csv, m.handle if m else None,
                                 c.handle if c else None, opts))
    finally:
        if own_c:
            c.close()
        if own_m:
            m.close()


def compare(model: Optional[ModelLike] = None, cluster: Optional[ClusterLike] = None,
            strategies: Union[str, Sequence[str], None] = None, **options: Any) -> "pandas.DataFrame":
    """Every strategy (or those given) planned on one model and cluster, or a
    named ``scenario`` (``hetsim list scenarios``), as ``hetsim compare``.
    Returns a DataFrame with the CSV's columns: strategy, iteration_s,
    tokens_per_s, speedup_vs_<baseline>, mfu, peak_memory_fraction,
    usd_per_million_tokens, search_s, plan, ..., gpus_used,
    tokens_per_s_per_gpu, error_band, reliable_lead (docs/validation.md, "Error
    bands"), where <baseline> is the fastest
    of megatron, deepspeed, whale and data-parallel among the strategies
    (``baseline`` names another, as ``--baseline``). Options: scenario,
    charge ("used" or "cluster"), baseline, global_batch,
    max_microbatch_size, max_devices, time_limit, mip_gap, no_recompute,
    memory_headroom, search_practice (False: ``--no-practice-search``), and
    the training-practice options of simulate() (kernels, attention,
    sequence_parallel, tp_comm_overlap, zero_stage, precision, grad_reduce_dtype)."""
    import pandas as pd

    return pd.read_csv(io.StringIO(compare_csv(model, cluster, strategies, **options)))


def _spec_text(spec: Union[PathLike, Mapping[str, Any]]) -> tuple[str, str]:
    if isinstance(spec, Mapping):
        _check_nul(spec, "spec")
        return json.dumps(spec), f"{spec.get('name') or 'spec'}.json"
    path = _fspath(spec, "spec")
    with open(path, encoding="utf-8") as f:
        return f.read(), os.path.basename(path)


def sweep_csv(spec: Union[PathLike, Mapping[str, Any]], *, no_timings: bool = False,
              workers: int = 1, precision: Optional[str] = None,
              memory_headroom: Optional[float] = None) -> str:
    """``hetsim sweep SPEC`` output (header and rows by point; see sweep())."""
    text, file = _spec_text(spec)
    opts = _opts(no_timings=no_timings or None, workers=workers, precision=precision,
                 memory_headroom=memory_headroom)
    return take_string(_call(lib.hs_api_sweep_csv, _enc(text, "spec"), _enc(file, "spec"), opts))


def sweep(spec: Union[PathLike, Mapping[str, Any]], *, no_timings: bool = False,
          workers: int = 1, precision: Optional[str] = None,
          memory_headroom: Optional[float] = None) -> "pandas.DataFrame":
    """Runs a what-if grid (docs/sweep.md) from a spec file or dict, as
    ``hetsim sweep``; one DataFrame row per CSV row, same columns. Relative
    paths in the spec are relative to the working directory. ``workers`` > 1
    forks worker processes as ``-j`` does; ``precision`` and
    ``memory_headroom`` override the spec's, as ``--precision`` and
    ``--memory-headroom``."""
    import pandas as pd

    return pd.read_csv(io.StringIO(sweep_csv(spec, no_timings=no_timings, workers=workers,
                                             precision=precision,
                                             memory_headroom=memory_headroom)))


def _gpu_price(p: Union[str, Mapping[str, Any], None]) -> Optional[str]:
    """``--gpu-price`` text from a dict {gpu: usd} or {gpu: (usd, spot_usd)}
    (repr keeps every float exact), or the text itself."""
    if p is None or isinstance(p, str):
        return p
    parts = []
    for gpu, v in p.items():
        if isinstance(v, (tuple, list)):
            od, spot = v
            parts.append(f"{gpu}={float(od)!r}:{float(spot)!r}")
        else:
            parts.append(f"{gpu}={float(v)!r}")
    return ",".join(parts)


def whatif_text(model: ModelLike, cluster: Optional[ClusterLike] = None, *,
                budget_usd_per_hour: float, candidates: Union[str, Sequence[str]],
                replace: Optional[bool] = None, price: Optional[str] = None,
                gpu_price: Union[str, Mapping[str, Any], None] = None,
                step: Optional[int] = None, gpus_per_node: Optional[int] = None,
                nic_GBps: Optional[float] = None, link_GBps: Optional[float] = None,
                link_latency_us: Optional[float] = None,
                strategies: Union[str, Sequence[str], None] = None,
                global_batch: Optional[int] = None, global_batch_per_gpu: Optional[int] = None,
                time_limit: Optional[float] = None, max_options: Optional[int] = None,
                workers: Optional[int] = None, top: Optional[int] = None,
                format: str = "csv", memory_headroom: Optional[float] = None,
                kernels: Optional[str] = None, attention: Optional[str] = None,
                sequence_parallel: Optional[bool] = None, tp_comm_overlap: Optional[bool] = None,
                zero_stage: Optional[int] = None, precision: Optional[str] = None,
                grad_reduce_dtype: Optional[str] = None) -> str:
    """``hetsim whatif --format csv|json|table`` output, byte for byte (see
    whatif()). ``workers`` is ``-j``."""
    if replace is None:
        replace = cluster is None
    lists = {k: list(v) if isinstance(v, (list, tuple)) else v
             for k, v in (("candidates", candidates), ("strategies", strategies))}
    m, own_m = _as_model(model, None)
    c, own_c = None, False
    try:
        if cluster is not None and not replace:
            c, own_c = _as_cluster(cluster, None)
        opts = _opts(replace=replace or None, budget_usd_per_hour=budget_usd_per_hour,
                     price=price, gpu_price=_gpu_price(gpu_price), step=step,
                     gpus_per_node=gpus_per_node, nic_GBps=nic_GBps, link_GBps=link_GBps,
                     link_latency_us=link_latency_us, global_batch=global_batch,
                     global_batch_per_gpu=global_batch_per_gpu, time_limit=time_limit,
                     max_options=max_options, workers=workers, top=top, format=format,
                     memory_headroom=memory_headroom,
                     **_practice(kernels, attention, sequence_parallel, tp_comm_overlap,
                                 zero_stage, precision, grad_reduce_dtype), **lists)
        return take_string(_call(lib.hs_api_whatif, m.handle, c.handle if c else None, opts))
    finally:
        if own_c:
            c.close()
        if own_m:
            m.close()


def whatif(model: ModelLike, cluster: Optional[ClusterLike] = None, **options: Any) -> "pandas.DataFrame":
    """Which purchase (or rental) within a budget trains ``model`` fastest,
    as ``hetsim whatif``: every affordable vector of ``candidates`` GPUs
    (multiples of ``step``) added to ``cluster`` (or, with no cluster or
    ``replace=True``, making up the whole cluster), planned with each of
    ``strategies``, ranked by tokens/s with the Pareto front of tokens/s
    against $/M tokens marked. Keyword options are the CLI's flags in
    Python spelling: budget_usd_per_hour and candidates (required),
    replace, price ("on-demand" or "spot"), gpu_price (``"GPU=USD[:SPOT]"``
    or a dict {gpu: usd} / {gpu: (usd, spot_usd)}), step, gpus_per_node,
    nic_GBps, link_GBps, link_latency_us, strategies, global_batch or
    global_batch_per_gpu, time_limit (default 60 s per search), max_options,
    workers (``-j``), top, memory_headroom, and the training-practice
    options of simulate() (kernels, attention, sequence_parallel,
    tp_comm_overlap, zero_stage, precision, grad_reduce_dtype). Returns a DataFrame with exactly the CSV's
    columns (rank, option, n_gpus, added_usd_per_hour, usd_per_hour,
    global_batch, tokens_per_iteration, strategy, tokens_per_s, iteration_s,
    mfu, usd_per_million_tokens, pareto, plan, reason); an option no
    strategy plans has an empty strategy and its reason (the CLI exits 3
    when no option plans). Bad input raises InputError with the CLI's
    message."""
    import pandas as pd

    if "format" in options:
        raise TypeError("whatif() returns a DataFrame; use whatif_text(format=...) for other formats")
    return pd.read_csv(io.StringIO(whatif_text(model, cluster, **options)))


def library_path() -> str:
    """The libhetsim.so this package loaded."""
    return os.environ.get("HETSIM_LIB") or str(_lib._here / "libhetsim.so")
