"""Hourly demand: the GPU instances kept running, hour by hour, and who held them.

The purchasing analyses (commitments, spot moves, autoscaling) need demand
curves, not totals: how many instances of a type ran in each hour, split by
workload class, job or team. ``hourly_demand`` builds them with the
proration engine itself: every usage cost line of a GPU instance is cut into
hour pieces whose ``cost`` is the instance-hours of the piece (its
``list_cost`` carries the piece's money), and :func:`gpucost.allocate`
prorates those instance-hours over the workloads that held the GPUs, exactly
as it prorates dollars. What nobody held stays on ``__idle__``; instances
without telemetry on ``__unattributed__``. Money in equals money out, and
instance-hours in equal instance-hours out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import allocate
from gpucost.errors import InvalidInputError
from gpucost.analyses._tables import (
    NANOS_PER_HOUR,
    finite_floats,
    frame,
    instants_ns,
    raise_first,
    row_error,
    split_at_hours,
    strings,
    table,
    to_utc,
)

__all__ = ["hourly_demand", "demand_lines", "instance_family"]


def instance_family(instance_type: Any) -> Any:
    """The family of an instance type: ``g5.xlarge`` -> ``g5`` (AWS),
    ``a2-highgpu-1g`` -> ``a2-highgpu`` (GCP), other names unchanged. Works on
    a string or a pandas Series of strings."""
    if isinstance(instance_type, pd.Series):
        s = instance_type.astype(str)
        dotted = s.str.contains(".", regex=False)
        dashed = ~dotted & s.str.contains("-", regex=False)
        out = s.copy()
        out[dotted] = s[dotted].str.split(".", n=1).str[0]
        out[dashed] = s[dashed].str.rsplit("-", n=1).str[0]
        return out
    text = str(instance_type)
    if "." in text:
        return text.split(".", 1)[0]
    if "-" in text:
        return text.rsplit("-", 1)[0]
    return text


def demand_lines(costs: Any) -> pd.DataFrame:
    """The cost lines that stand for a GPU instance running, one per
    ``(resource_id, start, end)``: lines with a resource and an instance type,
    of charge category ``Usage`` (when the column is there), not unused
    commitment (``commitment_status`` ``Unused``), for a GPU (``gpu``, when the
    column is there). Lines of one resource and period (an instance line and a
    GPU SKU line, a covered line and its negation) are merged: their money
    adds up, their hours count once.

    Columns: ``resource_id, instance_type, region, pricing, start, end`` (int64
    ns), ``hours, cost, list_cost``, ``row`` (the first source row), and what
    an existing commitment covered (lines with a ``commitment_id``):
    ``covered`` (the share of the line's hours, by list cost where the lines
    have one) and ``covered_cost`` (their money)."""
    name = "costs"
    t = table(costs, name)
    n = len(t)
    start = instants_ns(t, name, "start")
    end = instants_ns(t, name, "end")
    raise_first(name, "end", end <= start, lambda r: "end is not after start")
    cost = finite_floats(t, name, "cost")
    list_cost = finite_floats(t, name, "list_cost") if t.has("list_cost") else np.full(n, np.nan)
    resource = strings(t, name, "resource_id")
    if not t.has("instance_type"):
        t.column("instance_type")  # the missing-column error
    itype = strings(t, name, "instance_type")
    keep = pd.notna(resource) & (pd.Series(itype, dtype=object).fillna("") != "").to_numpy()
    if t.has("charge_category"):
        keep &= strings(t, name, "charge_category") == "Usage"
    if t.has("commitment_status"):
        keep &= strings(t, name, "commitment_status") != "Unused"
    if t.has("gpu"):
        keep &= frame(t, name, ["gpu"])["gpu"].fillna(False).astype(bool).to_numpy()
    region = strings(t, name, "region") if t.has("region") else np.full(n, None, dtype=object)
    pricing = strings(t, name, "pricing") if t.has("pricing") else np.full(n, None, dtype=object)

    # Covered by a commitment already bought (a CUR reservation or savings
    # plan ARN, FOCUS CommitmentDiscountId): used, not the Unused rows above.
    if t.has("commitment_id"):
        commitment = strings(t, name, "commitment_id")
        covered = pd.notna(commitment) & (pd.Series(commitment, dtype=object).fillna("") != "").to_numpy()
    else:
        covered = np.zeros(n, dtype=bool)

    rows = np.flatnonzero(keep)
    lines = pd.DataFrame({
        "row": rows, "resource_id": resource[rows], "instance_type": itype[rows], "region": region[rows],
        "pricing": pricing[rows], "start": start[rows], "end": end[rows], "cost": cost[rows],
        "list_cost": list_cost[rows], "covered_list": np.where(covered[rows], list_cost[rows], 0.0),
        "covered_cost": np.where(covered[rows], cost[rows], 0.0), "covered_any": covered[rows].astype(np.float64),
    })
    first_type = lines.groupby("resource_id", sort=False)["instance_type"].transform("first")
    conflict = (lines["instance_type"] != first_type).to_numpy()
    if conflict.any():
        i = int(np.flatnonzero(conflict)[0])
        raise row_error(name, int(lines["row"].iat[i]), "instance_type",
                        f"resource {lines['resource_id'].iat[i]} also has instance type {first_type.iat[i]}; "
                        "hourly demand needs one instance type per resource")
    merged = lines.groupby(["resource_id", "start", "end"], sort=False, as_index=False).agg(
        row=("row", "first"), instance_type=("instance_type", "first"), region=("region", "first"),
        pricing=("pricing", "first"), cost=("cost", "sum"), list_cost=("list_cost", "sum"),
        covered_list=("covered_list", "sum"), covered_cost=("covered_cost", "sum"), covered_any=("covered_any", "max"))
    merged["hours"] = (merged["end"] - merged["start"]) / NANOS_PER_HOUR
    # A line split into a covered and an on-demand part (a savings plan that
    # ran out within the hour) is covered in the ratio of their list costs.
    listed = np.isfinite(merged["list_cost"]) & (merged["list_cost"] > 0)
    by_list = (merged["covered_list"] / merged["list_cost"].where(listed, 1.0)).clip(0.0, 1.0)
    merged["covered"] = np.where(listed, by_list.fillna(merged["covered_any"]), merged["covered_any"])
    return merged.drop(columns=["covered_list", "covered_any"])


def _hour_pieces(lines: pd.DataFrame) -> pd.DataFrame:
    """Each line cut at hour boundaries: ``cost`` = instance-hours of the
    piece, ``list_cost`` = its share of the line's money."""
    start = lines["start"].to_numpy(np.int64)
    end = lines["end"].to_numpy(np.int64)
    line, _, piece_start, piece_end = split_at_hours(start, end)
    fraction = (piece_end - piece_start) / (end - start)[line]
    return pd.DataFrame({
        "resource_id": pd.Categorical(lines["resource_id"].to_numpy(object)[line]),
        "start": to_utc(piece_start),
        "end": to_utc(piece_end),
        "cost": (piece_end - piece_start) / NANOS_PER_HOUR,
        "list_cost": lines["cost"].to_numpy(np.float64)[line] * fraction,
    })


def gpus_per_resource(inventory: Any) -> pd.Series:
    """GPUs of each resource in the inventory (its row count)."""
    ids = strings(inventory, "inventory", "resource_id")
    return pd.Series(ids).value_counts().astype(np.int64)


def hourly_demand(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *,
                  by: Sequence[str] | str = ("consumer",), interval: float = 60) -> pd.DataFrame:
    """Instance-hours of every GPU instance, hour by hour, split over the
    workloads that held its GPUs.

    Args:
        costs: cost lines (docs/semantics.md 1.1) with ``instance_type``;
            optional ``charge_category``, ``commitment_status``, ``gpu``,
            ``region``, ``pricing`` select and describe the demand lines (see
            :func:`demand_lines`).
        usage, inventory, workloads, interval: as for :func:`gpucost.allocate`.
        by: ``consumer`` and/or label columns of ``workloads``.

    Returns:
        One row per ``(by..., resource_id, period)`` hour: ``instance_type,
        region, instance_hours`` (the group's share of the instance running
        that hour), ``idle_instance_hours`` (the part of it nobody held, on
        ``__idle__`` rows), ``cost`` (the money of those instance-hours, from
        the lines' ``cost``), ``gpu_hours, effective_gpu_hours`` and ``gpus``
        (GPUs of the instance in the inventory; NaN for ``__unattributed__``).

    Examples:
        A g5.xlarge billed for 6 hours: ``train`` used its GPU for the
        first 2, then nobody held it.

        >>> hours = pd.date_range("2026-03-02", periods=6, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": "i-0aaa", "instance_type": "g5.xlarge", "start": hours,
        ...                       "end": hours + pd.Timedelta("1h"), "cost": 1.006})
        >>> t = pd.date_range("2026-03-02", periods=36, freq="10min", tz="UTC")   # a sample every 10 min
        >>> busy = np.arange(36) < 12                                              # the first 2 hours
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "i-0aaa", "device": 0,
        ...                       "consumer": np.where(busy, "train", ""), "share": 1.0,
        ...                       "util": np.where(busy, 0.9, 0.0), "mem_used": np.where(busy, 20 * 2**30, 0),
        ...                       "duration": 600.0})
        >>> inventory = gpucost.inventory(costs)
        >>> workloads = pd.DataFrame({"consumer": ["train"], "team": ["research"]})
        >>> demand = gpucost.hourly_demand(costs, usage, inventory, workloads, by=["team"])
        >>> demand[demand["instance_hours"] > 0][["team", "period", "instance_type", "instance_hours", "cost"]]
               team                    period instance_type  instance_hours   cost
        2  __idle__ 2026-03-02 02:00:00+00:00     g5.xlarge             1.0  1.006
        3  __idle__ 2026-03-02 03:00:00+00:00     g5.xlarge             1.0  1.006
        4  __idle__ 2026-03-02 04:00:00+00:00     g5.xlarge             1.0  1.006
        5  __idle__ 2026-03-02 05:00:00+00:00     g5.xlarge             1.0  1.006
        6  research 2026-03-02 00:00:00+00:00     g5.xlarge             1.0  1.006
        7  research 2026-03-02 01:00:00+00:00     g5.xlarge             1.0  1.006
    """
    return _hourly_demand(costs, usage, inventory, workloads, by=by, interval=interval)[0]


def _hourly_demand(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *,
                   by: Sequence[str] | str = ("consumer",), interval: float = 60) -> tuple[pd.DataFrame, pd.DataFrame]:
    """hourly_demand and the demand lines it was built from."""
    by_list = [by] if isinstance(by, str) else list(by)
    reserved = {"resource_id", "period"} & set(by_list)
    if reserved:
        raise InvalidInputError(f"parameter 'by': {sorted(reserved)[0]} is always in the result; "
                                "give consumer and/or label columns")
    lines = demand_lines(costs)
    pieces = _hour_pieces(lines)
    result = allocate(pieces, usage, inventory, workloads, by=[*by_list, "resource_id", "period"], freq="h",
                      interval=interval)
    attrs = dict(result.attrs)
    per_resource = lines.drop_duplicates("resource_id").set_index("resource_id")
    out = result[[*by_list, "resource_id", "period"]].copy()
    out["instance_type"] = out["resource_id"].map(per_resource["instance_type"]).astype(object)
    out["region"] = out["resource_id"].map(per_resource["region"]).astype(object)
    out["instance_hours"] = result["cost"].to_numpy()
    out["idle_instance_hours"] = result["idle_cost"].to_numpy()
    out["cost"] = result["list_cost"].to_numpy()
    out["gpu_hours"] = result["gpu_hours"].to_numpy()
    out["effective_gpu_hours"] = result["effective_gpu_hours"].to_numpy()
    out["gpus"] = out["resource_id"].map(gpus_per_resource(inventory)).astype(np.float64)
    out.attrs = attrs
    return out, lines
