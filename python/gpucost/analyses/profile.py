"""Per-workload usage statistics from the samples (the C++ profile pass):
the input of right-sizing, diagnosis and the KPI table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.allocation import inventory_columns, usage_columns
from gpucost.analyses._common import NS_PER_H, attach_labels, check_freq, labels_frame, to_datetime
from gpucost.frames import Table

__all__ = ["PROFILING_FIELDS", "usage_profile", "weighted_mean"]

GIB = float(2**30)

#: Per-sample DCGM profiling columns the analyses read when usage has them:
#: ratios 0..1 (``gr_engine_active`` = DCGM_FI_PROF_GR_ENGINE_ACTIVE,
#: ``sm_active``, ``tensor_active`` = PIPE_TENSOR_ACTIVE, ``dram_active``,
#: ``mem_copy_util``), rates in bytes per second (``pcie_bytes_per_s`` =
#: PCIE_TX_BYTES + PCIE_RX_BYTES, ``nvlink_bytes_per_s`` = NVLINK_TX_BYTES +
#: NVLINK_RX_BYTES) and ``power_w`` (watts). NaN = not reported.
PROFILING_FIELDS = ("gr_engine_active", "sm_active", "tensor_active", "dram_active", "mem_copy_util",
                    "pcie_bytes_per_s", "nvlink_bytes_per_s", "power_w")


def usage_profile(usage: Any, inventory: Any, workloads: Any = None, *, fields: Sequence[str] | None = None,
                  freq: str | None = None, interval: float = 60, mem_pressure: float = 0.85) -> pd.DataFrame:
    """One row per (consumer, resource, device[, period]) of the samples
    that name a consumer: ``first, last`` (instants), ``samples``,
    ``gpu_hours`` (share x time), ``effective_gpu_hours`` (x util),
    ``mem_gib_hours``, ``mem_peak_gib``, ``mem_capacity_gib``,
    ``mem_pressure_gpu_hours`` (GPU-hours with ``mem_used`` at or above
    ``mem_pressure`` of the memory the sample's share of the device has) and,
    for every profiling field present (default: :data:`PROFILING_FIELDS` found
    in usage), its GPU-time-weighted mean ``<field>``, its maximum
    ``<field>_max`` and the GPU-hours it was reported for ``<field>_hours``.
    A sample counts wholly in the period (``freq`` "h", "D" or "MS") where it
    starts. With workloads, their label columns are attached.

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
        >>> profile = gpucost.usage_profile(usage, inventory, freq="D")
        >>> profile[["consumer", "device", "gpu_hours", "effective_gpu_hours", "mem_peak_gib", "sm_active",
        ...          "pcie_bytes_per_s"]]
          consumer  device  gpu_hours  effective_gpu_hours  mem_peak_gib  sm_active  pcie_bytes_per_s
        0      etl       0        1.0                  0.2           8.0       0.15      6.000000e+09
        1    train       1        1.0                  0.9           8.0       0.80      1.000000e+08
    """
    check_freq(freq)
    t = Table(usage, "usage")
    names = [f for f in PROFILING_FIELDS if t.has(f)] if fields is None else list(fields)
    field_arrays = [(name, t.floats(name)) for name in names]
    raw = _core.profile_usage(usage_columns(usage), inventory_columns(inventory), field_arrays, float(interval),
                              freq, float(mem_pressure))
    consumers = np.asarray(raw["consumer_names"], dtype=object)
    resources = np.asarray(raw["resource_names"], dtype=object)
    out = pd.DataFrame({
        "consumer": consumers[raw["consumer"]] if len(consumers) else np.empty(0, dtype=object),
        "resource_id": resources[raw["resource"]] if len(resources) else np.empty(0, dtype=object),
        "device": raw["device"],
    })
    if freq is not None:
        out["period"] = to_datetime(raw["period"])
    out["first"] = to_datetime(raw["first"])
    out["last"] = to_datetime(raw["last"])
    out["samples"] = raw["samples"]
    out["gpu_hours"] = raw["held_ns"] / NS_PER_H
    out["effective_gpu_hours"] = raw["used_ns"] / NS_PER_H
    out["mem_gib_hours"] = raw["mem_byte_ns"] / GIB / NS_PER_H
    out["mem_peak_gib"] = raw["mem_peak"] / GIB
    out["mem_capacity_gib"] = raw["mem_capacity"] / GIB
    out["mem_pressure_gpu_hours"] = raw["mem_pressure_ns"] / NS_PER_H
    for name, total, weight, peak in raw["fields"]:
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(weight > 0, total / np.where(weight > 0, weight, 1.0), np.nan)
        out[f"{name}_max"] = peak
        out[f"{name}_hours"] = weight / NS_PER_H
    sort = ["consumer", "resource_id", "device"] + (["period"] if freq is not None else [])
    out = out.sort_values(sort, kind="stable").reset_index(drop=True)
    if workloads is not None:
        out = attach_labels(out, labels_frame(workloads))
    out.attrs["diagnostics"] = dict(raw["diagnostics"])
    out.attrs["fields"] = [name for name, *_ in raw["fields"]]
    return out


def weighted_mean(frame: pd.DataFrame, by: Sequence[str], field: str) -> pd.Series:
    """The GPU-time-weighted mean of a profile field over groups of rows."""
    w = frame[f"{field}_hours"].to_numpy()
    v = np.nan_to_num(frame[field].to_numpy()) * w
    g = pd.DataFrame({**{k: frame[k] for k in by}, "v": v, "w": w}).groupby(list(by), sort=True)[["v", "w"]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.Series(np.where(g["w"] > 0, g["v"] / g["w"].where(g["w"] > 0, 1.0), np.nan), index=g.index)
