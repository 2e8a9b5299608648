"""Inference autoscaling: the replicas each hour's load needs, and what
running only those would save (docs/advisor.md §5).

The model, per deployment and hour: the load is the work the running
replicas did, ``replicas * util`` replica-equivalents; at a target
utilisation ``target`` it needs ``max(min_replicas, ceil(load / target))``
replicas. Every replica-hour above that is saved at the replica's hourly
price; hours that needed more than ran are reported (``short_replica_hours``)
but never offset the savings. Scaling is assumed to follow the hour (no
warm-up or lag).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from gpucost.analyses._tables import NANOS_PER_HOUR, finite_floats, instants_ns, strings, table
from gpucost.errors import InvalidInputError

__all__ = ["autoscaling_estimate"]


def autoscaling_estimate(hourly: Any, *, by: str = "deployment", target: float = 0.6, min_replicas: int = 1,
                         price: float | Mapping[str, float] | None = None, gpus_per_replica: float = 1.0,
                         hours_per_month: float = 730.0) -> pd.DataFrame:
    """Replicas needed at a target utilisation, and the money saved per month.

    Args:
        hourly: one row per deployment and hour (``period``), either with
            ``replicas`` (mean replicas running) and ``util`` (their mean GPU
            utilisation, 0..1), or as an allocation by ``[by, "period"]`` with
            ``freq="h"`` (``gpu_hours``, ``effective_gpu_hours``, ``cost``),
            where replicas are ``gpu_hours / gpus_per_replica``. A ``price``
            column (per replica-hour) may come with it.
        by: the deployment column.
        target: the utilisation each replica may reach (0 < target <= 1).
        min_replicas: the fewest replicas ever kept (availability).
        price: per replica-hour: one number, or deployment -> price; default
            the table's ``price`` column, else ``cost`` per replica-hour.
        gpus_per_replica: GPUs of one replica (allocation input only).
        hours_per_month: hours of a month (730).

    Returns:
        One row per deployment: ``hours, replica_hours, mean_replicas, util``
        (mean utilisation), ``peak_load, needed_replica_hours,
        saved_replica_hours, saved_share, short_replica_hours,
        offpeak_replicas`` (fewest needed in any hour), ``peak_replicas``
        (most needed), ``price, monthly_cost_now, monthly_saving`` and
        ``reason``.

    Examples:
        Four replicas of a chat server all day; the load is low at night:

        >>> hours = pd.date_range("2026-03-02", periods=24, freq="h", tz="UTC")
        >>> serving = pd.DataFrame({"deployment": "chat", "period": hours, "replicas": 4.0,
        ...                         "util": np.r_[np.full(8, 0.15), np.full(12, 0.5), np.full(4, 0.2)]})
        >>> estimate = gpucost.autoscaling_estimate(serving, target=0.6, min_replicas=1, price=1.006)
        >>> estimate[["deployment", "mean_replicas", "util", "offpeak_replicas", "peak_replicas", "saved_share",
        ...           "monthly_saving"]].round(2)
          deployment  mean_replicas  util  offpeak_replicas  peak_replicas  saved_share  monthly_saving
        0       chat            4.0  0.33               1.0            4.0         0.33          979.17
        >>> print(estimate.loc[0, "reason"])
        chat: 4.0 replicas at 33% mean utilisation; at 60% target it needs 1 to 4 replicas, saving 32 of 96 replica-hours ($979.17/month of $2,937.52)
    """
    if not 0 < target <= 1:
        raise InvalidInputError(f"parameter 'target': {target} is not in (0, 1]")
    if int(min_replicas) != min_replicas or min_replicas < 0:
        raise InvalidInputError(f"parameter 'min_replicas': {min_replicas} is not a whole number >= 0")
    if not gpus_per_replica > 0:
        raise InvalidInputError(f"parameter 'gpus_per_replica': {gpus_per_replica} is not > 0")
    name = "hourly"
    t = table(hourly, name)
    group = pd.Series(strings(t, name, by), dtype=object)
    if group.isna().any():
        raise InvalidInputError(f"{name}: row {int(np.flatnonzero(group.isna())[0])}, column '{by}': missing value")
    period = instants_ns(t, name, "period") // NANOS_PER_HOUR
    if t.has("replicas"):
        replicas = finite_floats(t, name, "replicas", minimum=0)
        util = finite_floats(t, name, "util", minimum=0)
        over = util > 1
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise InvalidInputError(f"{name}: row {i}, column 'util': {util[i]} is above 1")
        load = replicas * util
        money = None
    else:
        gpu_hours = finite_floats(t, name, "gpu_hours", minimum=0)
        replicas = gpu_hours / gpus_per_replica
        load = finite_floats(t, name, "effective_gpu_hours", minimum=0) / gpus_per_replica
        money = finite_floats(t, name, "cost") if t.has("cost") else None
    data = pd.DataFrame({"group": group, "period": period, "replicas": replicas, "load": load})
    if t.has("price"):
        data["price_x_replicas"] = finite_floats(t, name, "price", minimum=0) * replicas
    elif money is not None:
        data["price_x_replicas"] = money
    data = data[~data["group"].isin(["__idle__", "__unattributed__"])]
    per_hour = data.groupby(["group", "period"], sort=True).sum()
    needed = np.maximum(float(min_replicas), np.ceil(per_hour["load"] / target - 1e-9))
    per_hour["needed"] = needed
    per_hour["saved"] = np.maximum(per_hour["replicas"] - needed, 0.0)
    per_hour["short"] = np.maximum(needed - per_hour["replicas"], 0.0)

    g = per_hour.groupby(level="group")
    out = pd.DataFrame({"hours": g.size().astype(np.float64), "replica_hours": g["replicas"].sum(),
                        "load": g["load"].sum(), "peak_load": g["load"].max(),
                        "needed_replica_hours": g["needed"].sum(), "saved_replica_hours": g["saved"].sum(),
                        "short_replica_hours": g["short"].sum(), "offpeak_replicas": g["needed"].min(),
                        "peak_replicas": g["needed"].max()})
    out["mean_replicas"] = out["replica_hours"] / out["hours"]
    out["util"] = (out["load"] / out["replica_hours"]).where(out["replica_hours"] > 0)
    out["saved_share"] = (out["saved_replica_hours"] / out["replica_hours"]).where(out["replica_hours"] > 0)
    if price is None:
        if "price_x_replicas" not in per_hour:
            raise InvalidInputError("parameter 'price': needed (no price or cost column in the table)")
        out["price"] = g["price_x_replicas"].sum() / out["replica_hours"]
    elif isinstance(price, Mapping):
        out["price"] = out.index.map(lambda k: price.get(k, np.nan)).astype(np.float64)
        if out["price"].isna().any():
            raise InvalidInputError(f"parameter 'price': no price for {by} '{out.index[out['price'].isna()][0]}'")
    else:
        out["price"] = float(price)
    per_month = hours_per_month / out["hours"]
    out["monthly_cost_now"] = out["replica_hours"] * out["price"] * per_month
    out["monthly_saving"] = out["saved_replica_hours"] * out["price"] * per_month
    out.index.name = by
    out = out.reset_index()
    out["reason"] = [
        f"{r[by]}: {r['mean_replicas']:.1f} replicas at {r['util']:.0%} mean utilisation; at {target:.0%} target "
        f"it needs {r['offpeak_replicas']:g} to {r['peak_replicas']:g} replicas, saving "
        f"{r['saved_replica_hours']:,.0f} of {r['replica_hours']:,.0f} replica-hours "
        f"(${r['monthly_saving']:,.2f}/month of ${r['monthly_cost_now']:,.2f})"
        + (f"; {r['short_replica_hours']:,.0f} replica-hours ran above target" if r["short_replica_hours"] else "")
        for r in out.to_dict("records")]
    return out[[by, "hours", "replica_hours", "mean_replicas", "util", "peak_load", "needed_replica_hours",
                "saved_replica_hours", "saved_share", "short_replica_hours", "offpeak_replicas", "peak_replicas",
                "price", "monthly_cost_now", "monthly_saving", "reason"]]
