"""ctypes declarations of libhetsim.so's flat C API (capi/hetsim.h).

The library is loaded once per process, from the package folder (where
`pip install` put it) or from $HETSIM_LIB. Its catalogs are found through
$HETSIM_DATA, which this module points at the package's copy unless the
caller set it already.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

API_VERSION = 1  # HS_API_VERSION this binding was written for

_here = Path(__file__).resolve().parent
_data = _here / "data"
if _data.is_dir():
    os.environ.setdefault("HETSIM_DATA", str(_data))


class ErrorRecord(ctypes.Structure):
    """hs_api_error_t."""

    _fields_ = [
        ("status", ctypes.c_int32),
        ("exit_code", ctypes.c_int32),
        ("name", ctypes.c_char * 32),
        ("message", ctypes.c_char * 1024),
    ]


def _load() -> ctypes.CDLL:
    path = os.environ.get("HETSIM_LIB") or str(_here / "libhetsim.so")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"hetsim: cannot load {path}: {e} (install the package with `pip install ./python`; "
            "its Debian libraries come from scripts/setup.sh)") from None
    return lib


lib = _load()

_p = ctypes.c_void_p
_s = ctypes.c_char_p
_e = ctypes.POINTER(ErrorRecord)
_i64 = ctypes.c_int64
_i32 = ctypes.c_int32


def _sig(name: str, restype, *argtypes) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


# Functions returning malloc'd strings are declared as returning c_void_p so
# that the pointer survives for hs_api_free (c_char_p would copy and lose it).
_sig("hs_api_version", _i32)
_sig("hs_api_free", None, _p)
_sig("hs_api_model_load", _p, _s, _i64, _e)
_sig("hs_api_model_parse", _p, _s, _s, _i64, _e)
_sig("hs_api_model_free", None, _p)
_sig("hs_api_model_name", _s, _p)
_sig("hs_api_model_json", _p, _p, _e)
_sig("hs_api_cluster_load", _p, _s, _s, _e)
_sig("hs_api_cluster_parse", _p, _s, _s, _s, _e)
_sig("hs_api_cluster_free", None, _p)
_sig("hs_api_cluster_name", _s, _p)
_sig("hs_api_cluster_n_devices", _i32, _p)
_sig("hs_api_cluster_json", _p, _p, _e)
_sig("hs_api_plan_grid", _p, _p, _p, _s, _e)
_sig("hs_api_plan_load", _p, _s, _p, _p, _e)
_sig("hs_api_plan_parse", _p, _s, _s, _p, _p, _e)
_sig("hs_api_plan_search", _p, _p, _p, _s, _s, _e)
_sig("hs_api_plan_free", None, _p)
_sig("hs_api_plan_json", _p, _p, _e)
_sig("hs_api_plan_summary", _s, _p)
_sig("hs_api_plan_result_json", _p, _p, _e)
_sig("hs_api_simulate", _p, _p, _p, _p, _s, _e)
_sig("hs_api_report_free", None, _p)
_sig("hs_api_report_json", _p, _p, _e)
_sig("hs_api_report_text", _p, _p, _e)
_sig("hs_api_report_iteration_time_s", ctypes.c_double, _p)
_sig("hs_api_report_tokens_per_s", ctypes.c_double, _p)
_sig("hs_api_report_oom", _i32, _p)
_sig("hs_api_compare_csv", _p, _p, _p, _s, _e)
_sig("hs_api_sweep_csv", _p, _s, _s, _s, _e)
_sig("hs_api_whatif", _p, _p, _p, _s, _e)

if lib.hs_api_version() != API_VERSION:
    raise ImportError(f"hetsim: libhetsim API version {lib.hs_api_version()}, "
                      f"this binding needs {API_VERSION}")


def take_string(ptr: int | None) -> str | None:
    """Copies a string the C API returned and frees it."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        lib.hs_api_free(ptr)
