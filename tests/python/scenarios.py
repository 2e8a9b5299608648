"""Hand-built tables for the analyses tests: hourly cost lines, per-minute
usage series and inventories, in the shapes of docs/semantics.md."""

from __future__ import annotations

import numpy as np
import pandas as pd

GIB = 2**30


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def lines(resource: str, start: str, hours: float, cost: float, list_cost: float | None = None,
          pricing: str | None = None) -> pd.DataFrame:
    """Hourly cost lines from `start`; a fractional last hour is billed pro
    rata (per-second billing)."""
    begin = ts(start)
    whole = int(np.floor(hours))
    starts = [begin + pd.Timedelta(hours=h) for h in range(whole)]
    ends = [s + pd.Timedelta(hours=1) for s in starts]
    costs = [cost] * whole
    if hours > whole:
        starts.append(begin + pd.Timedelta(hours=whole))
        ends.append(begin + pd.Timedelta(hours=hours))
        costs.append(cost * (hours - whole))
    frame = pd.DataFrame({"resource_id": resource, "start": starts, "end": ends, "cost": costs})
    if list_cost is not None:
        frame["list_cost"] = frame["cost"] / cost * list_cost
    if pricing is not None:
        frame["pricing"] = pricing
    return frame


def series(resource: str, device: int, consumer: str, start: str, end: str, util: float, share: float = 1.0,
           mem_gib: float = 0.0, **fields: float) -> pd.DataFrame:
    """One sample a minute over [start, end)."""
    t = pd.date_range(ts(start), ts(end), freq="min", inclusive="left")
    frame = pd.DataFrame({"timestamp": t, "resource_id": resource, "device": device, "consumer": consumer,
                          "share": share, "util": util, "mem_used": mem_gib * GIB})
    for name, value in fields.items():
        frame[name] = value
    return frame


def inventory(resource: str, devices: int, gib: float = 40.0) -> pd.DataFrame:
    return pd.DataFrame({"resource_id": resource, "device": np.arange(devices), "mem_capacity": gib * GIB})


def concat(*frames: pd.DataFrame) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True)
