"""Buying versus renting: what an owned GPU-hour costs at the utilisation
measured, beside the rate of renting the same GPU, and the utilisation at
which owning breaks even (docs/advisor.md, "Hardware you own")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import allocate
from gpucost.analyses._common import as_frame
from gpucost.analyses._tables import frame, instants_ns, raise_first
from gpucost.catalog import instance_types
from gpucost.errors import InvalidInputError
from gpucost.model import NOT_WORKLOADS, Basis, Provider, Purchase, Reserved

__all__ = ["buy_vs_rent"]

_NS_PER_H = 3_600_000_000_000
_UNKNOWN = "unknown"
_CLOUDS = (Provider.AWS, Provider.GCP, Provider.AZURE)


def buy_vs_rent(costs: Any, usage: Any, inventory: Any, *, rates: Any = None, basis: str = Basis.ALLOCATED,
                rate_kind: str = Purchase.ON_DEMAND, interval: float | None = None, downtime: Any = None,
                catalog: Any = None) -> pd.DataFrame:
    """Per GPU model: what hardware you own cost per GPU-hour, per GPU-hour
    used at the utilisation measured, and against the rate of renting it.

    The owned lines are the cost lines whose ``pricing`` is
    :attr:`gpucost.Purchase.OWNED` (every component: capex, power, facility,
    support; lines with no GPU resource, such as the cluster's operations,
    are shared over the models by GPU-hours: ``shared_cost``). They are
    prorated by :func:`gpucost.allocate`, so the hours are the allocation's:

    - ``owned_gpu_hours``: the GPU-hours the owned lines bill (primary lines);
    - ``used_gpu_hours``: GPU-hours workloads held (``basis="allocated"``)
      or kept busy (``basis="used"``: held x utilisation);
    - ``utilisation = used / measured GPU-hours`` (billed time no telemetry
      covered, and down time, are left out: nothing measured them);
    - ``owned_cost_per_gpu_hour = owned_cost / owned_gpu_hours`` and
      ``owned_cost_per_used_gpu_hour = owned_cost_per_gpu_hour /
      utilisation``;
    - ``cloud_rate``: renting one GPU for an hour, from the first of
      ``rates``, the bill's own rate-card lines (``pricing``
      :attr:`gpucost.Purchase.RATE_CARD`: their cost over their GPU-hours)
      and the catalog's cheapest on-demand instance with that GPU (its
      hourly price over its GPUs); ``rate_source`` says which (NaN and
      ``"none"`` without one);
    - ``break_even_utilisation = owned_cost_per_gpu_hour / cloud_rate``:
      above it owning costs less than renting the GPU-hours used (above 1,
      owning never pays);
    - ``rent_cost = utilisation x owned_gpu_hours x cloud_rate`` (renting
      what was used) and ``owning_saves = rent_cost - owned_cost``
      (negative: renting would have cost less).

    A resource's GPU model is the lines' ``gpu_model`` column, else its
    ``instance_type``'s in the catalog (``catalog=`` adds your rows), else
    the ``instance_type`` itself (a node class), else ``"unknown"``.

    Args:
        costs, usage, inventory: the tables of :func:`gpucost.allocate`.
        rates: ``gpu_model, hourly`` (dollars per GPU-hour) [, ``kind``:
            rows of ``rate_kind`` are used]; or ``instance_type, kind,
            hourly`` (the purchase options of :func:`gpucost.advise_commitments`,
            dollars per instance-hour: per GPU of the catalog's model).
        basis: ``"allocated"`` (GPU-hours held count as used) or ``"used"``.
        rate_kind: the ``kind`` of rates rows to compare with.
        interval, downtime: as for :func:`gpucost.allocate`.
        catalog: catalog rows of your own (:func:`gpucost.catalog.with_rows`).

    Returns:
        One row per GPU model: ``gpu_model, nodes, gpus, owned_gpu_hours,
        owned_cost, shared_cost, owned_cost_per_gpu_hour, used_gpu_hours,
        utilisation, owned_cost_per_used_gpu_hour, cloud_rate, rate_source,
        break_even_utilisation, rent_cost, owning_saves``.

    Raises:
        gpucost.InvalidInputError: no owned lines, or a rates table without
            its columns (naming the row and column).

    Examples:
        One owned 8-GPU H100 node for a day at $10 an hour; a job holds 4
        GPUs for 12 hours (48 of the 192 GPU-hours billed), the others are
        free. Renting an H100 costs $2.49 an hour:

        >>> hours = pd.date_range("2026-03-02", periods=24, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": "dgx-01", "start": hours, "end": hours + pd.Timedelta("1h"),
        ...                       "cost": 10.0, "pricing": gpucost.Purchase.OWNED, "gpu_model": "H100 80GB"})
        >>> held = (np.arange(8) < 4) & (np.arange(24)[:, None] < 12)         # hour x device
        >>> usage = pd.DataFrame({"timestamp": np.repeat(hours, 8), "resource_id": "dgx-01",
        ...                       "device": np.tile(np.arange(8), 24), "consumer": np.where(held, "train", "").ravel(),
        ...                       "share": 1.0, "util": 0.9 * held.ravel(), "mem_used": 0.0, "duration": 3600.0})
        >>> inventory = pd.DataFrame({"resource_id": "dgx-01", "device": np.arange(8), "mem_capacity": 80 * 2**30})
        >>> rates = pd.DataFrame({"gpu_model": ["H100 80GB"], "hourly": [2.49]})
        >>> view = gpucost.buy_vs_rent(costs, usage, inventory, rates=rates)
        >>> view[["gpu_model", "owned_cost_per_gpu_hour", "utilisation", "owned_cost_per_used_gpu_hour"]]
           gpu_model  owned_cost_per_gpu_hour  utilisation  owned_cost_per_used_gpu_hour
        0  H100 80GB                     1.25         0.25                           5.0
        >>> view[["cloud_rate", "break_even_utilisation", "rent_cost", "owning_saves"]].round(4)
           cloud_rate  break_even_utilisation  rent_cost  owning_saves
        0        2.49                   0.502     119.52       -120.48
    """
    if basis not in (Basis.ALLOCATED, Basis.USED):
        raise InvalidInputError(f"parameter 'basis': {basis!r} is not \"allocated\" or \"used\"")
    lines = as_frame(costs, "costs")
    if "pricing" not in lines.columns:
        raise InvalidInputError("costs: missing required column 'pricing' (buy versus rent compares the lines "
                                f"of hardware you own, pricing {str(Purchase.OWNED)!r})")
    pricing = lines["pricing"].astype(object).to_numpy()
    owned = lines[pricing == Purchase.OWNED].reset_index(drop=True)
    if owned.empty:
        raise InvalidInputError(f"costs: no line has pricing {str(Purchase.OWNED)!r} (hardware you own)")
    policy = {"interval": interval} if downtime is None else {"interval": interval, "downtime": downtime}
    split = allocate(owned, usage, inventory, by=["resource_id", "consumer"], **policy)
    consumer = split["consumer"].astype(str).to_numpy()
    on_gpus = consumer != Reserved.UNATTRIBUTED
    per = split[on_gpus].assign(
        used=np.where(np.isin(consumer[on_gpus], list(NOT_WORKLOADS)), 0.0,
                      split.loc[on_gpus, "gpu_hours" if basis == Basis.ALLOCATED else "effective_gpu_hours"]),
        unmeasured=np.where(np.isin(consumer[on_gpus], [Reserved.UNOBSERVED, Reserved.DOWN]),
                            split.loc[on_gpus, "gpu_hours"], 0.0))
    per = per.groupby("resource_id", sort=True).agg(owned_cost=("cost", "sum"), owned_gpu_hours=("gpu_hours", "sum"),
                                                    used_gpu_hours=("used", "sum"), unmeasured=("unmeasured", "sum"))
    devices = frame(inventory, "inventory", required=("resource_id",))["resource_id"].astype(str).value_counts()
    per["gpus"] = devices.reindex(per.index, fill_value=0).to_numpy()
    per["gpu_model"] = _models(owned, catalog).reindex(per.index, fill_value=_UNKNOWN).to_numpy()
    out = per.groupby("gpu_model", sort=True).agg(
        nodes=("gpus", "size"), gpus=("gpus", "sum"), owned_gpu_hours=("owned_gpu_hours", "sum"),
        owned_cost=("owned_cost", "sum"), used_gpu_hours=("used_gpu_hours", "sum"), unmeasured=("unmeasured", "sum"))
    # Owned money on no GPU (the cluster's operations): shared by GPU-hours, so nothing is lost.
    shared = float(split.loc[~on_gpus, "cost"].sum())
    hours = out["owned_gpu_hours"].to_numpy(dtype=np.float64)
    if shared and hours.sum() <= 0:
        raise InvalidInputError("costs: the owned lines bill no GPU-hours to share the other owned lines over "
                                "(is the inventory of the owned nodes given?)")
    out["shared_cost"] = shared * hours / hours.sum() if shared else 0.0
    out["owned_cost"] += out["shared_cost"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["owned_cost_per_gpu_hour"] = _ratio(out["owned_cost"], out["owned_gpu_hours"])
        out["utilisation"] = _ratio(out["used_gpu_hours"], out["owned_gpu_hours"] - out["unmeasured"])
        out["owned_cost_per_used_gpu_hour"] = _ratio(out["owned_cost_per_gpu_hour"], out["utilisation"])
        rate, source = _rates(out.index, lines, pricing, rates, rate_kind, inventory, catalog)
        out["cloud_rate"] = rate
        out["rate_source"] = source
        out["break_even_utilisation"] = _ratio(out["owned_cost_per_gpu_hour"], out["cloud_rate"])
        out["rent_cost"] = out["utilisation"] * out["owned_gpu_hours"] * out["cloud_rate"]
        out["owning_saves"] = out["rent_cost"] - out["owned_cost"]
    columns = ["nodes", "gpus", "owned_gpu_hours", "owned_cost", "shared_cost", "owned_cost_per_gpu_hour",
               "used_gpu_hours", "utilisation", "owned_cost_per_used_gpu_hour", "cloud_rate", "rate_source",
               "break_even_utilisation", "rent_cost", "owning_saves"]
    return out[columns].reset_index()


def _ratio(a: pd.Series, b: pd.Series) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)


def _models(lines: pd.DataFrame, catalog: Any) -> pd.Series:
    """resource_id -> GPU model of the lines (first non-empty per resource)."""
    rid = lines["resource_id"].astype(str)
    model = pd.Series("", index=lines.index, dtype=object)
    if "instance_type" in lines.columns:
        types = lines["instance_type"].astype(object).where(lines["instance_type"].notna(), "").astype(str)
        known = instance_types(catalog).drop_duplicates("instance_type").set_index("instance_type")["gpu_model"]
        model = types.map(known).where(lambda m: m.notna(), types).astype(object)
    if "gpu_model" in lines.columns:
        given = lines["gpu_model"].astype(object).where(lines["gpu_model"].notna(), "").astype(str)
        model = given.where(given != "", model)
    named = pd.DataFrame({"resource_id": rid, "gpu_model": model.astype(str)})
    named = named[named["gpu_model"] != ""]
    return named.drop_duplicates("resource_id").set_index("resource_id")["gpu_model"]


def _rates(models: pd.Index, lines: pd.DataFrame, pricing: np.ndarray, rates: Any, kind: str, inventory: Any,
           catalog: Any) -> tuple[np.ndarray, np.ndarray]:
    """The rate of renting one GPU-hour of each model, and where it came from."""
    rate = pd.Series(np.nan, index=models)
    source = pd.Series("none", index=models, dtype=object)

    def fill(found: pd.Series, words: pd.Series | str) -> None:
        found = found.reindex(models)
        take = found.notna().to_numpy() & rate.isna().to_numpy()
        rate[take] = found[take]
        source[take] = (words.reindex(models) if isinstance(words, pd.Series) else pd.Series(words, index=models))[take]

    if rates is not None:
        by_type = "gpu_model" not in frame(rates, "rates").columns and "instance_type" in frame(rates, "rates").columns
        key = "instance_type" if by_type else "gpu_model"
        table = frame(rates, "rates", required=(key, "hourly"), optional=("kind",))
        hourly = pd.to_numeric(table["hourly"], errors="coerce").to_numpy(dtype=np.float64)
        raise_first("rates", "hourly", ~np.isfinite(hourly) | (hourly < 0),
                    lambda r: f"{table['hourly'].iloc[r]!r} is not a rate (dollars per GPU-hour, >= 0)")
        if by_type:  # purchase options per instance (gpucost advise's rates): per GPU of the catalog's model
            types = instance_types(catalog).drop_duplicates("instance_type").set_index("instance_type")
            named = table["instance_type"].astype(str)
            raise_first("rates", "instance_type", ~named.isin(types.index).to_numpy(),
                        lambda r: f"unknown instance type {named.iloc[r]!r} (not in the catalog; add your own "
                                  "catalog rows for it, or give rates by gpu_model)")
            found = types.loc[named]
            hourly = hourly / (found["gpus"] * found["gpu_fraction"]).to_numpy(dtype=np.float64)
            table = table.assign(gpu_model=found["gpu_model"].to_numpy())
        chosen = table.assign(hourly=hourly)
        if "kind" in chosen.columns:
            chosen = chosen[chosen["kind"].astype(str).to_numpy() == kind]
        fill(chosen.groupby(chosen["gpu_model"].astype(str))["hourly"].min(), "rates")
    card = lines[pricing == Purchase.RATE_CARD]
    if len(card):
        gpus = frame(inventory, "inventory", required=("resource_id",))["resource_id"].astype(str).value_counts()
        start, end = instants_ns(card, "costs", "start"), instants_ns(card, "costs", "end")
        span = (end - start) / _NS_PER_H
        if "quantity_hours" in card.columns:
            q = pd.to_numeric(card["quantity_hours"], errors="coerce").to_numpy(dtype=np.float64)
            span = np.where(np.isfinite(q), q, span)
        gpu_hours = span * gpus.reindex(card["resource_id"].astype(str), fill_value=0).to_numpy()
        model = _models(card, catalog).reindex(card["resource_id"].astype(str)).to_numpy()
        billed = pd.DataFrame({"gpu_model": model, "cost": card["cost"].to_numpy(dtype=np.float64),
                               "gpu_hours": gpu_hours}).dropna(subset=["gpu_model"])
        billed = billed.groupby("gpu_model").sum()
        billed = billed[billed["gpu_hours"] > 0]
        fill(billed["cost"] / billed["gpu_hours"], "the bill's rate-card lines")
    offers = instance_types(catalog)
    offers = offers[offers["provider"].isin(list(_CLOUDS)).to_numpy() & offers["on_demand_hourly"].notna().to_numpy()]
    if len(offers):
        per_gpu = offers.assign(rate=offers["on_demand_hourly"] / (offers["gpus"] * offers["gpu_fraction"]))
        cheapest = per_gpu.sort_values(["gpu_model", "rate"]).drop_duplicates("gpu_model").set_index("gpu_model")
        words = ("catalog: " + cheapest["instance_type"].astype(str) + " on demand (" + cheapest["provider"].astype(str)
                 + " " + cheapest["price_region"].astype(str) + ", " + cheapest["price_date"].astype(str) + ")")
        fill(cheapest["rate"], words)
    return rate.to_numpy(), source.to_numpy()
