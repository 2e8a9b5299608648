"""What was already bought: commitment utilisation, coverage, realised spot
savings (docs/advisor.md §3).

All three read cost lines as the billing readers produce them (FOCUS, CUR,
GCP, Azure normalised to one vocabulary): ``commitment_id``,
``commitment_status`` (``Used``/``Unused``), ``charge_category``
(``Purchase`` rows are what was paid for commitments), ``effective_cost``
(amortised), ``billed_cost`` (invoiced), ``list_cost`` (on-demand
equivalent) and ``pricing`` (a :class:`gpucost.Purchase`: ``on_demand``,
``spot``, the commitments ``reserved``, ``savings_plan``, ``cud`` and
``commitment``, ``other``). Where ``effective_cost`` or ``billed_cost`` is absent or missing
on a row, ``cost`` stands in for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.analyses._common import check_freq, floor_ns
from gpucost.model import COMMITMENTS, ChargeCategory, Purchase
from gpucost.analyses._tables import (
    NANOS_PER_HOUR,
    finite_floats,
    frame,
    instants_ns,
    raise_first,
    row_error,
    strings,
    table,
    to_utc,
)

__all__ = ["commitment_utilization", "commitment_coverage", "spot_savings"]

_NAME = "costs"
# Coverage columns named after the purchases they sum.
_SPOT, _ON_DEMAND = Purchase.SPOT.value, Purchase.ON_DEMAND.value


def _period(start_ns: np.ndarray, freq: str | None) -> pd.Series:
    """The period (UTC) of each line's start, or NaT when `freq` is None."""
    if freq is None:
        return pd.Series(pd.NaT, index=range(len(start_ns)), dtype="datetime64[ns, UTC]")
    return pd.Series(to_utc(floor_ns(start_ns, check_freq(freq))))


def _amount(costs: Any, column: str, fallback: np.ndarray) -> np.ndarray:
    """A money column, `cost` where it is absent or missing; never NaN."""
    t = table(costs, _NAME)
    if not t.has(column):
        return fallback
    values = t.floats(column)
    raise_first(_NAME, column, np.isinf(values), lambda r: f"{values[r]} is not finite")
    return np.where(np.isnan(values), fallback, values)


def _optional_strings(costs: Any, column: str) -> np.ndarray:
    t = table(costs, _NAME)
    return strings(t, _NAME, column) if t.has(column) else np.full(len(t), None, dtype=object)


def commitment_utilization(costs: Any, *, freq: str | None = "D") -> pd.DataFrame:
    """Utilisation of every commitment (reservation, savings plan, CUD) per period.

    For each ``commitment_id`` and period (the line's start floored to
    ``freq``: ``"h"``, ``"D"``, ``"MS"``, or None for the whole table):
    ``purchased`` (billed cost of its ``Purchase`` rows; for a commitment
    without any, as in an amortized export, ``used + unused``: what was
    bought for the period), ``used`` (amortised
    cost of the usage it covered, status ``Used``), ``unused`` (amortised cost
    nobody used, status ``Unused``: FOCUS unused rows, CUR RI/SP fee rows),
    ``utilization = used / (used + unused)``, ``on_demand_equivalent`` (list
    cost of the covered usage) and ``savings`` (``on_demand_equivalent -
    used - unused``: what the commitment saved against paying on demand for
    the same usage, its waste included).

    Examples:
        One hour of a bill (as the readers give it): a savings plan covers
        one p4d instance and half of it goes unused, a second p4d runs on
        demand, a g5 on spot.

        >>> P, hour = gpucost.Purchase, pd.Timestamp("2026-03-02 10:00", tz="UTC")
        >>> bill = pd.DataFrame({
        ...     "resource_id": ["i-0aaa", "i-0bbb", "i-0ccc", ""], "charge_category": "Usage",
        ...     "instance_type": ["p4d.24xlarge", "p4d.24xlarge", "g5.xlarge", "p4d.24xlarge"],
        ...     "start": hour, "end": hour + pd.Timedelta("1h"),
        ...     "cost": [20.0, 32.77, 0.40, 20.0], "list_cost": [32.77, 32.77, 1.006, 0.0],
        ...     "pricing": [P.SAVINGS_PLAN, P.ON_DEMAND, P.SPOT, P.SAVINGS_PLAN],
        ...     "commitment_id": ["sp-1", None, None, "sp-1"], "commitment_status": ["Used", None, None, "Unused"]})
        >>> gpucost.commitment_utilization(bill, freq="D")[["commitment_id", "purchased", "used", "unused",
        ...                                                   "utilization", "on_demand_equivalent", "savings"]]
          commitment_id  purchased  used  unused  utilization  on_demand_equivalent  savings
        0          sp-1       40.0  20.0    20.0          0.5                 32.77    -7.23
    """
    t = table(costs, _NAME)
    start = instants_ns(t, _NAME, "start")
    cost = finite_floats(t, _NAME, "cost")
    commitment = strings(t, _NAME, "commitment_id")
    status = strings(t, _NAME, "commitment_status")
    known = pd.Series(status, dtype=object).isin(["Used", "Unused"]).to_numpy() | pd.isna(status)
    raise_first(_NAME, "commitment_status", ~known, lambda r: f"'{status[r]}' is not Used or Unused")
    raise_first(_NAME, "commitment_id", pd.notna(status) & pd.isna(commitment),
                lambda r: f"a {status[r]} commitment row without the commitment's id")
    category = _optional_strings(costs, "charge_category")
    effective = _amount(costs, "effective_cost", cost)
    billed = _amount(costs, "billed_cost", cost)
    listed = t.floats("list_cost") if t.has("list_cost") else np.full(len(t), np.nan)
    rows = pd.notna(commitment)
    used = rows & (status == "Used")
    data = pd.DataFrame({
        "commitment_id": commitment[rows],
        "period": _period(start, freq).to_numpy()[rows],
        "purchased": np.where(category == "Purchase", billed, 0.0)[rows],
        "used": np.where(used, effective, 0.0)[rows],
        "unused": np.where(status == "Unused", effective, 0.0)[rows],
        "on_demand_equivalent": np.where(used, listed, 0.0)[rows],
        "used_lines": used[rows].astype(np.int64),
        "unused_lines": (status == "Unused")[rows].astype(np.int64),
    })
    out = data.groupby(["commitment_id", "period"], sort=True, dropna=False, as_index=False).sum(min_count=0)
    total = out["used"] + out["unused"]
    # An amortized export (Azure's amortized dataset, a FOCUS EffectiveCost
    # view of a slice) has no purchase rows for a commitment: what was bought
    # for the period is then what was amortized into it, used or not.
    bought = pd.Series(np.where(category == "Purchase", 1, 0)[rows]).groupby(commitment[rows]).sum()
    amortized_only = out["commitment_id"].map(bought).fillna(0).to_numpy() == 0
    out["purchased"] = np.where(amortized_only, total, out["purchased"])
    out["utilization"] = (out["used"] / total).where(total != 0)
    out["savings"] = out["on_demand_equivalent"] - out["used"] - out["unused"]
    if not t.has("list_cost"):
        out["on_demand_equivalent"] = np.nan
        out["savings"] = np.nan
    if freq is None:
        out = out.drop(columns="period")
    return out[[c for c in ("commitment_id", "period", "purchased", "used", "unused", "utilization",
                            "on_demand_equivalent", "savings", "used_lines", "unused_lines") if c in out]]


def commitment_coverage(costs: Any, *, by: Sequence[str] | str = ("instance_type",),
                        freq: str | None = "D") -> pd.DataFrame:
    """How much of the usage commitments covered, per group and period.

    Usage lines (``charge_category`` ``Usage`` when present, unused commitment
    rows excluded) weighed by their on-demand equivalent (``list_cost``):
    ``covered`` (status ``Used`` or pricing ``commitment``), ``spot``,
    ``on_demand``, ``other``; ``coverage = covered / on_demand_equivalent``
    and the spot and on-demand shares; ``cost`` is what was actually paid
    (``cost``). Lines without a value in a ``by`` column are grouped under
    ``(none)``.

    Examples:
        One hour of a bill (as the readers give it): a savings plan covers
        one p4d instance and half of it goes unused, a second p4d runs on
        demand, a g5 on spot.

        >>> P, hour = gpucost.Purchase, pd.Timestamp("2026-03-02 10:00", tz="UTC")
        >>> bill = pd.DataFrame({
        ...     "resource_id": ["i-0aaa", "i-0bbb", "i-0ccc", ""], "charge_category": "Usage",
        ...     "instance_type": ["p4d.24xlarge", "p4d.24xlarge", "g5.xlarge", "p4d.24xlarge"],
        ...     "start": hour, "end": hour + pd.Timedelta("1h"),
        ...     "cost": [20.0, 32.77, 0.40, 20.0], "list_cost": [32.77, 32.77, 1.006, 0.0],
        ...     "pricing": [P.SAVINGS_PLAN, P.ON_DEMAND, P.SPOT, P.SAVINGS_PLAN],
        ...     "commitment_id": ["sp-1", None, None, "sp-1"], "commitment_status": ["Used", None, None, "Unused"]})
        >>> gpucost.commitment_coverage(bill, by="instance_type", freq=None)[
        ...     ["instance_type", "on_demand_equivalent", "covered", P.SPOT, P.ON_DEMAND, "coverage", "cost"]]
          instance_type  on_demand_equivalent  covered   spot  on_demand  coverage   cost
        0     g5.xlarge                 1.006     0.00  1.006       0.00       0.0   0.40
        1  p4d.24xlarge                65.540    32.77  0.000      32.77       0.5  52.77
    """
    t = table(costs, _NAME)
    by_list = [by] if isinstance(by, str) else list(by)
    start = instants_ns(t, _NAME, "start")
    cost = finite_floats(t, _NAME, "cost")
    listed = finite_floats(t, _NAME, "list_cost")
    status = _optional_strings(costs, "commitment_status")
    pricing = _optional_strings(costs, "pricing")
    category = _optional_strings(costs, "charge_category")
    usage = (pd.isna(category) | (category == ChargeCategory.USAGE)) & (status != "Unused")
    covered = (status == "Used") | np.isin(pricing, list(COMMITMENTS))
    groups = {c: pd.Series(strings(t, _NAME, c), dtype=object).fillna("(none)").to_numpy()[usage] for c in by_list}
    data = pd.DataFrame({
        **groups,
        "period": _period(start, freq).to_numpy()[usage],
        "on_demand_equivalent": listed[usage],
        "covered": np.where(covered, listed, 0.0)[usage],
        _SPOT: np.where(~covered & (pricing == Purchase.SPOT), listed, 0.0)[usage],
        _ON_DEMAND: np.where(~covered & (pricing == Purchase.ON_DEMAND), listed, 0.0)[usage],
        "cost": cost[usage],
    })
    data["other"] = data["on_demand_equivalent"] - data["covered"] - data[_SPOT] - data[_ON_DEMAND]
    keys = [*by_list, "period"] if freq is not None else by_list
    out = data.drop(columns=[] if freq is not None else ["period"]).groupby(
        keys, sort=True, dropna=False, as_index=False).sum()
    total = out["on_demand_equivalent"]
    for part in ("covered", _SPOT, _ON_DEMAND):
        out[f"{part}_share"] = (out[part] / total).where(total != 0)
    out = out.rename(columns={"covered_share": "coverage"})
    return out[[*keys, "on_demand_equivalent", "covered", _SPOT, _ON_DEMAND, "other", "coverage", "spot_share",
                "on_demand_share", "cost"]]


def spot_savings(costs: Any, *, by: Sequence[str] | str = ("instance_type",),
                 on_demand_rates: Any = None) -> pd.DataFrame:
    """Spot savings as realised on the bill, not as advertised.

    For the lines with ``pricing`` ``spot``: what was paid (``cost``) against
    the on-demand equivalent of the same usage, which is the line's hours
    times the ``hourly`` rate of its ``instance_type`` in ``on_demand_rates``
    (a table ``instance_type, hourly``) when given there, else its
    ``list_cost`` (CUR: ``pricing/publicOnDemandCost``; GCP ``cost_at_list``;
    Azure pay-as-you-go cost; FOCUS providers may put the spot list price
    there, which shows as no discount). Per group: ``spot_cost,
    on_demand_equivalent, savings, savings_rate, lines,
    lines_without_discount`` (lines whose reference is not above what was
    paid) and ``reference`` (``rates``, ``list_cost`` or ``mixed``).

    Examples:
        One hour of a bill (as the readers give it): a savings plan covers
        one p4d instance and half of it goes unused, a second p4d runs on
        demand, a g5 on spot.

        >>> P, hour = gpucost.Purchase, pd.Timestamp("2026-03-02 10:00", tz="UTC")
        >>> bill = pd.DataFrame({
        ...     "resource_id": ["i-0aaa", "i-0bbb", "i-0ccc", ""], "charge_category": "Usage",
        ...     "instance_type": ["p4d.24xlarge", "p4d.24xlarge", "g5.xlarge", "p4d.24xlarge"],
        ...     "start": hour, "end": hour + pd.Timedelta("1h"),
        ...     "cost": [20.0, 32.77, 0.40, 20.0], "list_cost": [32.77, 32.77, 1.006, 0.0],
        ...     "pricing": [P.SAVINGS_PLAN, P.ON_DEMAND, P.SPOT, P.SAVINGS_PLAN],
        ...     "commitment_id": ["sp-1", None, None, "sp-1"], "commitment_status": ["Used", None, None, "Unused"]})
        >>> gpucost.spot_savings(bill, by="instance_type")[["instance_type", "spot_cost", "on_demand_equivalent",
        ...                                                  "savings", "savings_rate", "reference"]]
          instance_type  spot_cost  on_demand_equivalent  savings  savings_rate  reference
        0     g5.xlarge        0.4                 1.006    0.606      0.602386  list_cost
    """
    t = table(costs, _NAME)
    by_list = [by] if isinstance(by, str) else list(by)
    start = instants_ns(t, _NAME, "start")
    end = instants_ns(t, _NAME, "end")
    cost = finite_floats(t, _NAME, "cost")
    pricing = strings(t, _NAME, "pricing")
    category = _optional_strings(costs, "charge_category")
    spot = (pricing == Purchase.SPOT) & (pd.isna(category) | (category == ChargeCategory.USAGE))
    listed = t.floats("list_cost") if t.has("list_cost") else np.full(len(t), np.nan)
    reference = listed.copy()
    source = np.full(len(t), "list_cost", dtype=object)
    if on_demand_rates is not None:
        rates = frame(on_demand_rates, "on_demand_rates", ["instance_type", "hourly"])
        hourly = finite_floats(rates, "on_demand_rates", "hourly", minimum=0)
        rate = pd.Series(hourly, index=rates["instance_type"].astype(str)).groupby(level=0).first()
        itype = pd.Series(strings(t, _NAME, "instance_type"), dtype=object)
        per_hour = itype.map(rate).to_numpy(np.float64)
        has_rate = np.isfinite(per_hour)
        reference = np.where(has_rate, per_hour * (end - start) / NANOS_PER_HOUR, reference)
        source = np.where(has_rate, "rates", source)
    bad = spot & ~np.isfinite(reference)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error(_NAME, row, "list_cost", "a spot line without an on-demand equivalent "
                        "(no list_cost, and no on_demand_rates row for its instance type)")
    data = pd.DataFrame({
        **{c: pd.Series(strings(t, _NAME, c), dtype=object).fillna("(none)").to_numpy()[spot] for c in by_list},
        "spot_cost": cost[spot],
        "on_demand_equivalent": reference[spot],
        "lines": np.ones(int(spot.sum()), dtype=np.int64),
        "lines_without_discount": (reference <= cost)[spot].astype(np.int64),
        "from_rates": (source == "rates")[spot].astype(np.int64),
    })
    out = data.groupby(by_list, sort=True, dropna=False, as_index=False).sum()
    out["savings"] = out["on_demand_equivalent"] - out["spot_cost"]
    out["savings_rate"] = (out["savings"] / out["on_demand_equivalent"]).where(out["on_demand_equivalent"] > 0)
    out["reference"] = np.select([out["from_rates"] == out["lines"], out["from_rates"] == 0],
                                 ["rates", "list_cost"], "mixed")
    return out[[*by_list, "spot_cost", "on_demand_equivalent", "savings", "savings_rate", "lines",
                "lines_without_discount", "reference"]]
