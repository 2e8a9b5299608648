"""Why is utilisation low? Rules over DCGM profiling fields that name the
likely cause and its lever, with the evidence and the dollars at stake
(docs/analyses.md, "Diagnosis")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import allocate
from gpucost.analyses._common import RESERVED
from gpucost.analyses.profile import PROFILING_FIELDS, usage_profile, weighted_mean
from gpucost.errors import InvalidInputError

__all__ = ["diagnose", "DIAGNOSIS_THRESHOLDS", "RULES"]

#: Defaults of the thresholds the rules use (override any with thresholds=).
DIAGNOSIS_THRESHOLDS = {
    "low_util": 0.5,        # effective utilisation below this is "low"
    "idle_util": 0.05,      # below this the workload does nothing
    "sm_idle": 0.3,         # SMs (sm_active, else gr_engine_active, else util) at most this: idle
    "sm_busy": 0.6,         # at least this: busy
    "tensor_idle": 0.05,    # tensor pipe active below this: idle
    "pcie_high": 4e9,       # PCIe bytes/s (tx + rx) at least this: high
    "nvlink_high": 20e9,    # NVLink bytes/s (tx + rx) at least this: high
    "dram_high": 0.5,       # DRAM active at least this: bandwidth-bound
    "mem_full": 0.85,       # memory used / capacity at least this: nearly full
    "mem_pressure_share": 0.5,  # share of held time under memory pressure
    "mem_small": 0.25,      # peak memory below this share of the device: small job
    "big_gpu_gib": 40.0,    # devices with at least this memory are big
}

#: The rules in the order they are tried: name, cause, lever.
RULES = (
    ("idle", "holds GPUs and leaves them idle",
     "release the GPUs (stop the pod or session); see gpucost.find_idle"),
    ("input_pipeline", "the GPU waits for input data: high PCIe traffic with idle SMs",
     "more data-loader workers, prefetching, faster or local storage"),
    ("communication", "multi-GPU communication stalls: high NVLink traffic with idle SMs",
     "NCCL tuning, larger gradient buckets, gradient accumulation, or fewer GPUs"),
    ("memory_bound", "memory nearly full with low activity: the batch size is limited by memory",
     "gradient accumulation, activation checkpointing, mixed precision, or a larger-memory GPU"),
    ("memory_bandwidth", "DRAM bandwidth-bound kernels: DRAM busy while SMs are not",
     "fuse kernels, larger batches, attention kernels that avoid DRAM round trips"),
    ("no_mixed_precision", "busy SMs with an idle tensor pipe: math runs in FP32",
     "enable mixed precision (bf16/fp16 autocast) and TF32"),
    ("small_job_big_gpu", "a small job on a big GPU",
     "bin-pack small jobs (MIG slices, time-slicing) or use smaller instances (L4/A10G class)"),
    ("unexplained", "low utilisation without a dominant stall in the profiling fields",
     "profile a step (Nsight Systems, PyTorch Profiler); export DCGM_FI_PROF_* fields if missing"),
)


def diagnose(usage: Any, costs: Any, inventory: Any, workloads: Any = None, *, by: str | Sequence[str] = "consumer",
             thresholds: Mapping[str, float] | None = None, min_gpu_hours: float = 0.0,
             interval: float = 60) -> pd.DataFrame:
    """Findings on why workloads use their GPUs poorly.

    Reads the DCGM profiling columns of ``usage`` that are present (see
    :data:`gpucost.analyses.profile.PROFILING_FIELDS`; NaN = not reported)
    and, per group of ``by`` (consumer or workload labels), their
    GPU-time-weighted means, plus utilisation (effective / held GPU-hours),
    peak memory share of the device and the share of held time under memory
    pressure. Rules (:data:`RULES`, thresholds :data:`DIAGNOSIS_THRESHOLDS`),
    with "low" meaning idle_util <= util < low_util and "SMs" sm_active, else
    gr_engine_active, else util; an idle group gets the ``idle`` finding only:

    - ``idle``: util < idle_util.
    - ``input_pipeline``: low, SMs <= sm_idle, PCIe >= pcie_high.
    - ``communication``: low, SMs <= sm_idle, NVLink >= nvlink_high.
    - ``memory_bound``: low, and peak memory >= mem_full of the device or
      memory pressure for >= mem_pressure_share of the held time.
    - ``memory_bandwidth``: DRAM active >= dram_high and SMs < sm_busy.
    - ``no_mixed_precision``: SMs >= sm_busy and tensor active < tensor_idle.
    - ``small_job_big_gpu``: low, peak memory < mem_small of a device of at
      least big_gpu_gib; the evidence counts such jobs in the fleet.
    - ``unexplained``: low and no rule above matched.

    Each finding carries its evidence numbers and the dollars at stake: the
    group's allocated cost times (1 - util) (for ``no_mixed_precision``,
    (1 - tensor active): the GPU time whose tensor cores sat idle).

    Returns:
        One row per (group, rule): ``by..., rule, cause, lever, evidence,
        util, gpu_hours, cost, dollars_at_stake`` and the evidence columns
        ``sm_activity, gr_engine_active, sm_active, tensor_active,
        dram_active, pcie_bytes_per_s, nvlink_bytes_per_s, power_w,
        mem_peak_share, mem_pressure_share``, by dollars at stake.

    Examples:
        Two jobs on a g5.12xlarge for an hour, with DCGM profiling fields:
        ``etl`` keeps its GPU 20 % busy while moving 6 GB/s over PCIe,
        ``train`` keeps its SMs busy with the tensor cores idle.

        >>> start = pd.Timestamp("2026-03-02", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": ["i-0aaa"], "instance_type": ["g5.12xlarge"], "start": [start],
        ...                       "end": [start + pd.Timedelta("1h")], "cost": [5.672]})
        >>> t = pd.date_range(start, periods=6, freq="10min")      # a sample every 10 min
        >>> usage = pd.DataFrame({"timestamp": t.repeat(2), "resource_id": "i-0aaa", "device": np.tile([0, 1], 6),
        ...                       "consumer": np.tile(["etl", "train"], 6), "share": 1.0,
        ...                       "util": np.tile([0.2, 0.9], 6), "mem_used": 8 * 2**30, "duration": 600.0,
        ...                       "sm_active": np.tile([0.15, 0.8], 6), "tensor_active": np.tile([0.0, 0.01], 6),
        ...                       "pcie_bytes_per_s": np.tile([6e9, 1e8], 6)})
        >>> inventory = gpucost.inventory(costs)
        >>> findings = gpucost.diagnose(usage, costs, inventory)
        >>> findings[["consumer", "rule", "util", "cost", "dollars_at_stake"]]
          consumer                rule  util   cost  dollars_at_stake
        0    train  no_mixed_precision   0.9  1.418           1.40382
        1      etl      input_pipeline   0.2  1.418           1.13440
        >>> for row in findings.itertuples():
        ...     print(f"{row.consumer}: {row.cause} ({row.evidence})")
        train: busy SMs with an idle tensor pipe: math runs in FP32 (util 90%, SMs active 80%, tensor pipe active 1%)
        etl: the GPU waits for input data: high PCIe traffic with idle SMs (util 20%, SMs active 15%, PCIe 6.0 GB/s)
    """
    by_cols = [by] if isinstance(by, str) else list(by)
    th = dict(DIAGNOSIS_THRESHOLDS)
    for k, v in (thresholds or {}).items():
        if k not in th:
            raise InvalidInputError(f"parameter 'thresholds': unknown threshold {k!r} (known: {', '.join(th)})")
        th[k] = float(v)
    prof = usage_profile(usage, inventory, workloads, interval=interval)
    missing = [c for c in by_cols if c not in prof.columns]
    if missing:
        raise InvalidInputError(f"parameter 'by': unknown column {missing[0]!r} (give workloads with that label)")
    fields = prof.attrs["fields"]
    g = prof.groupby(by_cols, sort=True).agg(gpu_hours=("gpu_hours", "sum"), effective=("effective_gpu_hours", "sum"),
                                             pressure=("mem_pressure_gpu_hours", "sum"))
    prof = prof.assign(_peak_share=prof["mem_peak_gib"] / prof["mem_capacity_gib"])
    g["mem_peak_share"] = prof.groupby(by_cols, sort=True)["_peak_share"].max()
    g["mem_capacity_gib"] = prof.groupby(by_cols, sort=True)["mem_capacity_gib"].max()
    for f in PROFILING_FIELDS:
        g[f] = weighted_mean(prof, by_cols, f) if f in fields else np.nan
    g = g[g["gpu_hours"] > 0]
    g = g[g["gpu_hours"] >= min_gpu_hours]
    with np.errstate(divide="ignore", invalid="ignore"):
        g["util"] = g["effective"] / g["gpu_hours"]
        g["mem_pressure_share"] = g["pressure"] / g["gpu_hours"]
    g["sm_activity"] = g["sm_active"].fillna(g["gr_engine_active"]).fillna(g["util"])
    g = g.reset_index()
    g = g[~np.logical_or.reduce([g[c].isin(RESERVED).to_numpy() for c in by_cols])].reset_index(drop=True)

    alloc = allocate(costs, usage, inventory, workloads, by=by_cols, interval=interval)
    for c in by_cols:
        alloc[c] = alloc[c].astype(str)
    g = g.merge(alloc[[*by_cols, "cost"]], on=by_cols, how="left")
    g["cost"] = g["cost"].fillna(0.0)

    idle = g["util"] < th["idle_util"]
    low = (g["util"] < th["low_util"]) & ~idle  # an idle workload gets the idle finding only
    sm = g["sm_activity"]
    small = low & (g["mem_peak_share"] < th["mem_small"]) & (g["mem_capacity_gib"] >= th["big_gpu_gib"])
    masks = {
        "idle": idle,
        "input_pipeline": low & (sm <= th["sm_idle"]) & (g["pcie_bytes_per_s"] >= th["pcie_high"]),
        "communication": low & (sm <= th["sm_idle"]) & (g["nvlink_bytes_per_s"] >= th["nvlink_high"]),
        "memory_bound": low & ((g["mem_peak_share"] >= th["mem_full"]) |
                               (g["mem_pressure_share"] >= th["mem_pressure_share"])),
        "memory_bandwidth": ~idle & (g["dram_active"] >= th["dram_high"]) & (sm < th["sm_busy"]),
        "no_mixed_precision": ~idle & (sm >= th["sm_busy"]) & (g["tensor_active"] < th["tensor_idle"]),
        "small_job_big_gpu": small,
    }
    matched = np.zeros(len(g), dtype=bool)
    for m in masks.values():
        matched |= m.to_numpy()
    masks["unexplained"] = low & ~matched
    small_count = int(small.sum())
    rows = []
    for name, cause, lever in RULES:
        hit = g[masks[name].to_numpy()]
        if len(hit) == 0:
            continue
        f = hit.assign(rule=name, cause=cause, lever=lever)
        f["evidence"] = _evidence(name, hit, th, small_count)
        factor = (1.0 - hit["tensor_active"]) if name == "no_mixed_precision" else (1.0 - hit["util"])
        f["dollars_at_stake"] = hit["cost"].to_numpy() * np.clip(factor.to_numpy(), 0.0, 1.0)
        rows.append(f)
    columns = [*by_cols, "rule", "cause", "lever", "evidence", "util", "gpu_hours", "cost", "dollars_at_stake",
               "sm_activity", *PROFILING_FIELDS, "mem_peak_share", "mem_pressure_share"]
    columns.remove("mem_copy_util")
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=object if c in (*by_cols, "rule", "cause", "lever", "evidence")
                                          else np.float64) for c in columns})
    out = pd.concat(rows, ignore_index=True)[columns]
    return out.sort_values(["dollars_at_stake", *by_cols], ascending=[False] + [True] * len(by_cols),
                           kind="stable").reset_index(drop=True)


def _pct(x: pd.Series) -> np.ndarray:
    return (x * 100).map(lambda v: "n/a" if pd.isna(v) else f"{v:.0f}%").to_numpy().astype(str)


def _rate(x: pd.Series) -> np.ndarray:
    return (x / 1e9).map(lambda v: "n/a" if pd.isna(v) else f"{v:.1f} GB/s").to_numpy().astype(str)


def _evidence(rule: str, g: pd.DataFrame, th: dict, small_count: int) -> np.ndarray:
    """The numbers behind a finding, in words."""
    util = np.char.add("util ", _pct(g["util"]))
    sm = np.char.add(", SMs active ", _pct(g["sm_activity"]))
    join = np.char.add
    if rule == "idle":
        return join(util, np.char.add(", GPU-hours held ", g["gpu_hours"].map("{:.1f}".format).to_numpy().astype(str)))
    if rule == "input_pipeline":
        return join(join(util, sm), join(", PCIe ", _rate(g["pcie_bytes_per_s"])))
    if rule == "communication":
        return join(join(util, sm), join(", NVLink ", _rate(g["nvlink_bytes_per_s"])))
    if rule == "memory_bound":
        return join(join(util, join(", peak memory ", _pct(g["mem_peak_share"]))),
                    join(", memory pressure ", join(_pct(g["mem_pressure_share"]), " of held time")))
    if rule == "memory_bandwidth":
        return join(join(util, sm), join(", DRAM active ", _pct(g["dram_active"])))
    if rule == "no_mixed_precision":
        return join(join(util, sm), join(", tensor pipe active ", _pct(g["tensor_active"])))
    if rule == "small_job_big_gpu":
        cap = g["mem_capacity_gib"].map("{:.0f} GiB".format).to_numpy().astype(str)
        return join(join(join(util, join(", peak memory ", _pct(g["mem_peak_share"]))), join(" of a ", cap)),
                    f"; {small_count} such job(s) in the fleet")
    has_fields = g[["gr_engine_active", "sm_active", "tensor_active", "dram_active", "pcie_bytes_per_s"]].notna().any(
        axis=1).to_numpy()
    return np.where(has_fields, join(util, sm), join(util, "; no profiling fields reported")).astype(str)
