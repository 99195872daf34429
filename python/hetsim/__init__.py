"""hetsim: plan and predict distributed DNN training on heterogeneous GPU
clusters, in-process from Python.

    import hetsim
    r = hetsim.simulate("gpt3-1.3b", "dgx-a100-1node", tp=2, pp=2, dp=2,
                        microbatch_size=4, global_batch=256)
    r["iteration_time_s"]            # as in `hetsim simulate --json`
    p = hetsim.plan("gpt3-2.7b", "hapt-a100-v100-10gbps", "hapt")
    df = hetsim.compare(scenario="hapt")   # pandas DataFrame, the CSV's columns
    w = hetsim.whatif("gpt3-1.3b", "dgx-a100-1node", budget_usd_per_hour=50,
                      candidates=["A100-SXM4-40GB", "V100-SXM2-16GB"])

A thin ctypes binding over libhetsim.so (capi/hetsim.h): no second
implementation; the numbers are the CLI's (docs/python.md).
"""
from .api import (Cluster, HetsimError, InfeasibleError, InputError, Model, Plan, Report,
                  compare, compare_csv, library_path, plan, simulate, sweep, sweep_csv, whatif,
                  whatif_text)

__all__ = ["Cluster", "HetsimError", "InfeasibleError", "InputError", "Model", "Plan", "Report",
           "compare", "compare_csv", "library_path", "plan", "simulate", "sweep", "sweep_csv",
           "whatif", "whatif_text"]
__version__ = "0.1.0"
