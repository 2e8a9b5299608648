"""Right-sizing and the cost per useful GPU-hour (docs/analyses.md,
"Right-sizing"): GPUs held vs busy, peak memory, and the cheapest instance
type of the catalog that covers the observed peak with headroom."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import allocate
from gpucost.analyses._common import NS_PER_H, RESERVED, instants_ns, strings
from gpucost.analyses.profile import usage_profile
from gpucost.errors import InvalidInputError
from gpucost.frames import Table

__all__ = ["rightsize", "load_catalog", "CATALOG_COLUMNS"]

#: Columns a catalog table must have (``gpu_fraction``, the share of a GPU an
#: instance has, defaults to 1).
CATALOG_COLUMNS = ("provider", "instance_type", "gpu_model", "gpus", "gpu_memory_gib", "on_demand_hourly")


def load_catalog(catalog: Any = None) -> pd.DataFrame:
    """The instance catalog as a DataFrame: ``catalog`` when given (any
    table with :data:`CATALOG_COLUMNS`; it replaces the embedded catalog), else
    gpucost's embedded catalog (``gpucost.catalog.instance_types()``; to add
    your own prices to it, pass ``gpucost.catalog.instance_types(your_rows)``)."""
    if catalog is None:
        from gpucost import catalog as embedded  # noqa: PLC0415 - gpucost.catalog imports the analyses' peers

        catalog = embedded.instance_types()
    t = Table(catalog, "catalog")
    out = pd.DataFrame({
        "provider": strings(t, "provider"),
        "instance_type": strings(t, "instance_type"),
        "gpu_model": strings(t, "gpu_model"),
        "gpus": t.floats("gpus"),
        "gpu_fraction": t.floats("gpu_fraction") if t.has("gpu_fraction") else 1.0,
        "gpu_memory_gib": t.floats("gpu_memory_gib"),
        "on_demand_hourly": t.floats("on_demand_hourly"),
    })
    bad = ~(out["gpus"].to_numpy() > 0)
    if bad.any():
        raise t._first_bad_row("gpus", bad, f"{out['gpus'][bad].iloc[0]} is not a positive number of GPUs")
    bad = ~(out["gpu_memory_gib"].to_numpy() > 0)
    if bad.any():
        raise t._first_bad_row("gpu_memory_gib", bad, "not a positive size")
    price = out["on_demand_hourly"].to_numpy()
    bad = price < 0
    if bad.any():
        raise t._first_bad_row("on_demand_hourly", bad, f"{price[bad][0]} is negative")
    return out


def _instance_types(costs: Any, instances: Any) -> pd.DataFrame | None:
    """resource_id -> instance_type, from `instances` or the cost lines'
    ``instance_type`` column (billing readers add it)."""
    source, name = (instances, "instances") if instances is not None else (costs, "costs")
    t = Table(source, name)
    if not t.has("instance_type"):
        if instances is not None:
            raise InvalidInputError("instances: missing required column 'instance_type'")
        return None
    frame = pd.DataFrame({"resource_id": strings(t, "resource_id"), "instance_type": strings(t, "instance_type")})
    frame = frame[(frame["resource_id"] != "") & (frame["instance_type"] != "")].drop_duplicates()
    return frame.drop_duplicates("resource_id", keep="last")


def rightsize(usage: Any, costs: Any, inventory: Any, workloads: Any = None, *, by: str | Sequence[str] = "consumer",
              catalog: Any = None, instances: Any = None, headroom: float = 0.2, interval: float = 60,
              class_label: str = "class", move_classes: Sequence[str] = ("inference",),
              hours_per_month: float = 730.0) -> pd.DataFrame:
    """GPUs held vs busy, cost per useful GPU-hour and a cheaper fit, per
    workload (``by="consumer"``) or label group (``by="team"``, ...).

    Figures per group: ``gpu_hours`` held and ``effective_gpu_hours`` busy
    and ``cost`` (from :func:`gpucost.allocate`, so they reconcile with it),
    ``cost_per_gpu_hour``, ``cost_per_useful_gpu_hour`` (cost / effective
    GPU-hours) and their ratio ``useful_cost_ratio`` (4 when 2 of 8 GPUs work),
    ``active_hours`` (time the group held GPUs), ``gpus_held`` and ``gpus_busy``
    (average while active), ``peak_gpus_busy`` (highest hourly average),
    ``devices`` and ``devices_busy`` (devices whose busy share while held is
    at least 5 %), ``peak_mem_gib`` (highest memory used on one device),
    the current ``instance_type`` (from ``instances`` = ``resource_id,
    instance_type`` or the cost lines' ``instance_type`` column) and its
    ``gpu_model``.

    The fit: ``need_gpus`` = ceil(peak_gpus_busy x (1 + headroom)), at least
    1, and ``need_mem_gib`` = peak_mem_gib x (1 + headroom) per device; the
    cheapest catalog type (ties: fewer GPUs, less memory) with a known
    ``on_demand_hourly`` that covers both, from the same provider, and of
    the same GPU model unless the group's ``class_label`` is in
    ``move_classes`` (inference on training-grade GPUs may move to L4/A10G
    class). Its hourly price is scaled by the group's own discount (cost /
    list_cost when the bill has list prices) before the comparison with
    ``current_hourly`` (cost / active hours). ``monthly_saving`` scales the
    saving over the active hours to ``hours_per_month`` hours of billing
    (the bill's own span counts as the observed period). No cheaper fit: an
    empty ``recommended_instance_type`` and a 0 saving, with the ``reason``.

    ``catalog``: a table with :data:`CATALOG_COLUMNS` (it replaces the
    embedded catalog); default the embedded catalog
    (``gpucost.catalog.instance_types()``, which has on-demand prices only
    where a source is known; types without a price are never recommended).

    Examples:
        ``infer`` holds the four A10Gs of a g5.12xlarge but keeps one of them
        half busy: one A10G (a g5.xlarge) would do.

        >>> start = pd.Timestamp("2026-03-02", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": ["i-0aaa"], "instance_type": ["g5.12xlarge"], "start": [start],
        ...                       "end": [start + pd.Timedelta("1h")], "cost": [5.672]})
        >>> t = pd.date_range(start, periods=6, freq="10min")
        >>> usage = pd.DataFrame({"timestamp": t.repeat(4), "resource_id": "i-0aaa", "device": np.tile([0, 1, 2, 3], 6),
        ...                       "consumer": "infer", "share": 1.0, "util": np.tile([0.5, 0.0, 0.0, 0.0], 6),
        ...                       "mem_used": 8 * 2**30, "duration": 600.0})
        >>> fit = gpucost.rightsize(usage, costs, gpucost.inventory(costs))
        >>> fit[["consumer", "gpus_held", "gpus_busy", "useful_cost_ratio", "recommended_instance_type"]]
          consumer  gpus_held  gpus_busy  useful_cost_ratio recommended_instance_type
        0    infer        4.0        0.5                8.0                 g5.xlarge
        >>> fit[["current_hourly", "recommended_hourly", "monthly_saving", "reason"]]
           current_hourly  recommended_hourly  monthly_saving       reason
        0           5.672               1.006         3406.18  cheaper fit
    """
    by_cols = [by] if isinstance(by, str) else list(by)
    if not by_cols or "resource_id" in by_cols or "period" in by_cols:
        raise InvalidInputError("parameter 'by': expected consumer and/or label columns of the workloads table")
    if not (headroom >= 0):
        raise InvalidInputError(f"parameter 'headroom': {headroom} is negative")
    cat = load_catalog(catalog)
    alloc = allocate(costs, usage, inventory, workloads, by=by_cols, interval=interval)
    reserved = np.zeros(len(alloc), dtype=bool)
    for c in by_cols:
        reserved |= alloc[c].isin(RESERVED).to_numpy()
    alloc = alloc[~reserved].reset_index(drop=True)
    has_list = "list_cost" in alloc.columns

    prof = usage_profile(usage, inventory, workloads, fields=[], freq="h", interval=interval)
    if not set(by_cols) <= set(prof.columns):
        missing = sorted(set(by_cols) - set(prof.columns))
        raise InvalidInputError(f"parameter 'by': unknown column {missing[0]!r} (give workloads with that label)")
    prof = prof[~np.logical_or.reduce([prof[c].isin(RESERVED).to_numpy() for c in by_cols])]
    hourly = prof.groupby([*by_cols, "period"]).agg(first=("first", "min"), last=("last", "max"),
                                                    held=("gpu_hours", "sum"), used=("effective_gpu_hours", "sum"))
    active = (hourly["last"] - hourly["first"]).dt.total_seconds().to_numpy() / 3600.0
    hourly["active"] = np.minimum(active, 1.0 + 1e-12) if len(hourly) else active
    hourly["busy_gpus"] = hourly["used"] / hourly["active"].where(hourly["active"] > 0)
    per_device = prof.groupby([*by_cols, "resource_id", "device"]).agg(
        held=("gpu_hours", "sum"), used=("effective_gpu_hours", "sum"))
    per_device["busy"] = per_device["used"] >= 0.05 * per_device["held"]
    groups = hourly.groupby(level=list(range(len(by_cols)))).agg(
        active_hours=("active", "sum"), held_h=("held", "sum"), used_h=("used", "sum"),
        peak_gpus_busy=("busy_gpus", "max"))
    devices = per_device.groupby(level=list(range(len(by_cols)))).agg(devices=("held", "size"),
                                                                      devices_busy=("busy", "sum"))
    mem = prof.groupby(by_cols).agg(peak_mem_gib=("mem_peak_gib", "max"), mem_capacity_gib=("mem_capacity_gib", "max"))
    stats = groups.join(devices).join(mem).reset_index()
    if len(by_cols) == 1:
        stats = stats.rename(columns={"index": by_cols[0]})

    out = alloc[[*by_cols, "cost", *(["list_cost"] if has_list else []), "gpu_hours", "effective_gpu_hours"]]
    out = out.merge(stats, on=by_cols, how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["gpus_held"] = out["held_h"] / out["active_hours"]
        out["gpus_busy"] = out["used_h"] / out["active_hours"]
        out["cost_per_gpu_hour"] = np.where(out["gpu_hours"] > 0, out["cost"] / out["gpu_hours"], np.nan)
        out["cost_per_useful_gpu_hour"] = np.where(out["effective_gpu_hours"] > 0,
                                                   out["cost"] / out["effective_gpu_hours"], np.nan)
        out["useful_cost_ratio"] = out["cost_per_useful_gpu_hour"] / out["cost_per_gpu_hour"]
    out = out.drop(columns=["held_h", "used_h"])

    # The current instance type: the one of the resource the group held most.
    types = _instance_types(costs, instances)
    held_by_resource = prof.groupby([*by_cols, "resource_id"])["gpu_hours"].sum().reset_index()
    main = held_by_resource.sort_values([*by_cols, "gpu_hours", "resource_id"], ascending=[True] * len(by_cols) +
                                        [False, True]).drop_duplicates(by_cols)
    if types is not None:
        main = main.merge(types, on="resource_id", how="left")
    else:
        main["instance_type"] = ""
    main = main.merge(cat[["instance_type", "provider", "gpu_model"]].drop_duplicates("instance_type"),
                      on="instance_type", how="left")
    out = out.merge(main[[*by_cols, "instance_type", "provider", "gpu_model"]], on=by_cols, how="left")
    for c in ("instance_type", "provider", "gpu_model"):
        out[c] = out[c].fillna("").astype(object)

    # Classes that may change GPU model.
    if workloads is not None and class_label in Table(workloads, "workloads").columns and by_cols == ["consumer"]:
        wt = Table(workloads, "workloads")
        cls = pd.DataFrame({"consumer": strings(wt, "consumer"), "_class": strings(wt, class_label)})
        out = out.merge(cls.drop_duplicates("consumer"), on="consumer", how="left")
    elif class_label in by_cols:
        out["_class"] = out[class_label]
    else:
        out["_class"] = ""
    out["_class"] = out["_class"].fillna("").astype(str)
    may_move = out["_class"].isin([str(c) for c in move_classes]).to_numpy()

    out["need_gpus"] = np.maximum(1, np.ceil(out["peak_gpus_busy"].fillna(0).to_numpy() * (1 + headroom) - 1e-9))
    out["need_mem_gib"] = out["peak_mem_gib"].fillna(0).to_numpy() * (1 + headroom)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["current_hourly"] = out["cost"] / out["active_hours"]
        discount = (np.where(out["list_cost"] > 0, out["cost"] / out["list_cost"], 1.0) if has_list
                    else np.ones(len(out)))
    out = _fit(out, cat, may_move, discount)
    window_hours = _bill_hours(costs)
    scale = hours_per_month / window_hours if window_hours > 0 else np.nan
    saving_hourly = out["current_hourly"] - out["recommended_hourly"]
    good = (out["recommended_instance_type"] != "") & (saving_hourly > 0)
    out["monthly_saving"] = np.where(good, saving_hourly * out["active_hours"] * scale, 0.0)
    out["reason"] = np.select(
        [good, out["recommended_instance_type"] == "", ~good],
        ["cheaper fit", "no catalog type covers the need", "no cheaper fit"], default="")
    out.loc[~good, ["recommended_instance_type", "recommended_gpu_model"]] = ""
    out.loc[~good, ["recommended_gpus", "recommended_hourly"]] = np.nan
    columns = [*by_cols, "instance_type", "gpu_model", "cost", *(["list_cost"] if has_list else []), "gpu_hours",
               "effective_gpu_hours", "cost_per_gpu_hour", "cost_per_useful_gpu_hour", "useful_cost_ratio",
               "active_hours", "gpus_held", "gpus_busy", "peak_gpus_busy", "devices", "devices_busy", "peak_mem_gib",
               "mem_capacity_gib", "need_gpus", "need_mem_gib", "current_hourly", "recommended_instance_type",
               "recommended_gpu_model", "recommended_gpus", "recommended_hourly", "monthly_saving", "reason"]
    return out[columns].sort_values("monthly_saving", ascending=False, kind="stable").reset_index(drop=True)


def _fit(out: pd.DataFrame, cat: pd.DataFrame, may_move: np.ndarray, discount: np.ndarray) -> pd.DataFrame:
    """The cheapest covering catalog type per row of `out` (cross join)."""
    priced = cat[cat["on_demand_hourly"].notna()].reset_index(drop=True)
    left = pd.DataFrame({"row": np.arange(len(out)), "need_gpus": out["need_gpus"].to_numpy(),
                         "need_mem": out["need_mem_gib"].to_numpy(), "provider": out["provider"].to_numpy(),
                         "gpu_model": out["gpu_model"].to_numpy(), "move": may_move})
    pairs = left.merge(priced.rename(columns={"provider": "c_provider", "gpu_model": "c_model"}), how="cross")
    capacity = pairs["gpus"] * pairs["gpu_fraction"]
    ok = (capacity >= pairs["need_gpus"]) & (pairs["gpu_memory_gib"] >= pairs["need_mem"])
    ok &= (pairs["provider"] == "") | (pairs["provider"] == pairs["c_provider"])
    ok &= pairs["move"] | (pairs["gpu_model"] == "") | (pairs["gpu_model"] == pairs["c_model"])
    best = pairs[ok].sort_values(["row", "on_demand_hourly", "gpus", "gpu_memory_gib", "instance_type"],
                                 kind="stable").drop_duplicates("row").set_index("row")
    rows = np.arange(len(out))
    out["recommended_instance_type"] = best["instance_type"].reindex(rows).fillna("").to_numpy()
    out["recommended_gpu_model"] = best["c_model"].reindex(rows).fillna("").to_numpy()
    out["recommended_gpus"] = (best["gpus"] * best["gpu_fraction"]).reindex(rows).to_numpy()
    out["recommended_hourly"] = best["on_demand_hourly"].reindex(rows).to_numpy() * discount
    return out


def _bill_hours(costs: Any) -> float:
    t = Table(costs, "costs")
    if len(t) == 0:
        return 0.0
    start = instants_ns(t, "start")
    end = instants_ns(t, "end")
    return float(end.max() - start.min()) / NS_PER_H

