"""What to buy: commitment advice per instance type (or family, or GPU model)
and workload class, and the amortisation of reserved terms (docs/advisor.md §2).

For every (group, class) the advisor builds the hourly demand curve with
:func:`gpucost.hourly_demand` (instance-hours, or GPU-hours for families and
GPU models), prices every purchase option the class may use, and lets the
C++ optimiser (``gpucost::SolveCommitments``) find the level that minimises
expected cost: the ``(1 - r_c / r_x)`` quantile of hourly demand, where
``r_c`` is the option's amortised hourly rate and ``r_x`` what the demand
above the commitment costs (on demand, or spot plus an interruption
overhead for interruptible work).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.model import NOT_WORKLOADS, Purchase
from gpucost import _core
from gpucost.catalog import instance_types
from gpucost.analyses._tables import (NANOS_PER_HOUR, frame, instant_ns, instants_ns, raise_first, row_error,
                                      split_at_hours, strings, table, to_utc)
from gpucost.analyses.classes import workload_classes
from gpucost.analyses.demand import _hourly_demand, instance_family
from gpucost.errors import InvalidInputError

__all__ = ["advise_commitments", "amortize", "COMMITMENT_KINDS", "HOURS_PER_MONTH"]

HOURS_PER_MONTH = 730.0
COMMITMENT_KINDS = (Purchase.RESERVED, Purchase.SAVINGS_PLAN, Purchase.COMMITTED_USE)
KINDS = (Purchase.ON_DEMAND, Purchase.SPOT, *COMMITMENT_KINDS)
GROUPINGS = {"instance_type": "instance", "family": "GPU", "gpu_model": "GPU"}
# Which commitment kinds each class may be advised (training: flexible ones
# only, whatever is asked; see `allowed`).
DEFAULT_ALLOWED = {
    "training": COMMITMENT_KINDS,
    "inference": COMMITMENT_KINDS,
    "development": (),
    "idle": (),
    "unattributed": (),
}
_PAYMENTS = {(False, True): "no_upfront", (True, True): "partial_upfront", (True, False): "all_upfront",
             (False, False): "free"}


def amortize(upfront: float, hourly: float, term_years: int = 1, start: Any = "2026-01-01", *,
             units: float = 1.0) -> pd.DataFrame:
    """A reserved term spread over calendar months (UTC), to the cent.

    For commitment terms (reserved instances, savings plans, CUDs) as the
    clouds define them: a year is 365 days (8,760 hours), so a term's months
    are its hours x the hourly amount. Hardware you own is not a term:
    :func:`gpucost.owned_costs` writes its price off over the calendar years
    of its service life, by the hour, leap days included.

    Args:
        upfront: paid once per unit for the whole term (0 for no upfront).
        hourly: paid every hour of the term per unit (0 for all upfront).
        term_years: 1 or 3 (a year is 365 days, 8,760 hours).
        start: when the term starts.
        units: how many units (instances, GPUs) were bought.

    Returns:
        One row per calendar month: ``month, hours, upfront, recurring,
        total`` (currency) and the same in whole cents (``*_cents``). Each part
        is within a cent of exact every month and adds up exactly over the term.

    Examples:
        A one-year partial-upfront reservation: $4,380 upfront and $0.50 an
        hour, $1.00 an hour in all (FOCUS's scenario):

        >>> months = gpucost.amortize(4380.00, 0.50, 1, "2023-01-01")
        >>> months[["month", "hours", "upfront", "recurring", "total"]].head(3)
                              month  hours  upfront  recurring  total
        0 2023-01-01 00:00:00+00:00  744.0    372.0      372.0  744.0
        1 2023-02-01 00:00:00+00:00  672.0    336.0      336.0  672.0
        2 2023-03-01 00:00:00+00:00  744.0    372.0      372.0  744.0
        >>> print(months["total"].sum(), months["total_cents"].sum())   # 8,760 hours at $1.00
        8760.0 876000
    """
    raw = _core.amortize_term(float(upfront), float(hourly), int(term_years), instant_ns(start, "start"),
                              float(units))
    out = pd.DataFrame({"month": to_utc(raw["month"]), "hours": raw["hours"]})
    for part in ("upfront", "recurring", "total"):
        cents = raw[f"{part}_cents"]
        out[part] = cents / 100.0
        out[f"{part}_cents"] = cents
    return out


def _catalog_columns(catalog: Any) -> pd.DataFrame:
    """Instance types by name (gpu_model, gpus, on_demand_hourly) from
    gpucost.catalog: the embedded catalog, with the caller's rows over it."""
    types = instance_types(catalog)
    return types.drop_duplicates("instance_type").set_index("instance_type")


def _classes_map(classes: Any, consumers: pd.Series) -> pd.Series:
    """consumer -> class from a user table, every consumer present."""
    name = "classes"
    consumer = strings(classes, name, "consumer")
    cls = pd.Series(strings(classes, name, "class"), dtype=object)
    bad = ~cls.isin(["training", "inference", "development"]).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error(name, row, "class", f"'{cls.iat[row]}' is not training, inference or development")
    mapping = pd.Series(cls.to_numpy(), index=consumer).groupby(level=0).first()
    missing = ~consumers.isin(mapping.index)
    if missing.any():
        raise InvalidInputError(f"{name}: no row for consumer '{consumers[missing].iat[0]}' "
                                "(every consumer of the usage needs a class)")
    return mapping


def _rates(rates: Any, group_col: str, terms: Sequence[int]) -> pd.DataFrame:
    name = "rates"
    if rates is None:
        raise InvalidInputError("rates: needed: the purchase options per "
                                f"{group_col} (kind, term_years, upfront, hourly); see docs/advisor.md")
    t = table(rates, name)
    r = frame(t, name, [group_col, "kind", "hourly"], ["term_years", "upfront", "payment", "option", "flexible"])
    r[group_col] = strings(t, name, group_col)
    r["kind"] = pd.Series(strings(t, name, "kind"), dtype=object).str.strip().str.lower().to_numpy()
    bad = ~r["kind"].isin(KINDS).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error(name, row, "kind", f"'{r['kind'].iat[row]}' is not one of {', '.join(KINDS)}")
    if r[group_col].isna().any():
        raise row_error(name, int(np.flatnonzero(r[group_col].isna())[0]), group_col, "missing value")
    hourly = t.floats("hourly")
    upfront = t.floats("upfront") if t.has("upfront") else np.zeros(len(r))
    for col, values in (("hourly", hourly), ("upfront", upfront)):
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise row_error(name, row, col, f"{values[row]} is not an amount >= 0")
    r["hourly"], r["upfront"] = hourly, upfront
    commitment = r["kind"].isin(COMMITMENT_KINDS).to_numpy()
    if t.has("term_years"):
        years = t.floats("term_years")
    else:
        years = np.full(len(r), np.nan)
    bad = commitment & ~np.isfinite(years)
    if bad.any():
        raise row_error(name, int(np.flatnonzero(bad)[0]), "term_years", "a commitment needs its term in years")
    bad = commitment & (years != np.round(years))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error(name, row, "term_years", f"{years[row]} is not a whole number of years")
    r["term_years"] = np.where(commitment, years, np.nan)
    # One row per rates row (a dummy 1-year term where the kind has none), so
    # the library's errors name the caller's row.
    term = np.where(commitment, np.clip(np.nan_to_num(years, nan=1.0), -1, 1000), 1.0).astype(np.int32)
    effective = _core.effective_hourly_rates(upfront, hourly, term)
    r["rate"] = np.where(commitment, effective, hourly)
    default_payment = pd.Series([_PAYMENTS[(u > 0, h > 0)] for u, h in zip(upfront, hourly)], dtype=object)
    given_payment = r["payment"].astype(object) if "payment" in r else pd.Series(None, index=r.index, dtype=object)
    r["payment"] = given_payment.fillna(default_payment).where(commitment, None)
    if "flexible" in r:
        r["flexible"] = r["flexible"].fillna(r["kind"] == Purchase.SAVINGS_PLAN).astype(bool)
    else:
        r["flexible"] = r["kind"] == Purchase.SAVINGS_PLAN
    label = r["kind"] + np.where(commitment, " " + pd.Series(years).fillna(0).astype(int).astype(str) + "y " +
                                 r["payment"].astype(str), "")
    r["option"] = r["option"].fillna(label) if "option" in r else label
    r["row"] = np.arange(len(r))
    for kind in (Purchase.ON_DEMAND, Purchase.SPOT):
        dup = (r["kind"] == kind) & r.duplicated([group_col, "kind"])
        if dup.any():
            row = int(np.flatnonzero(dup.to_numpy())[0])
            raise row_error(name, row, "kind", f"a second {kind} rate for {group_col} '{r[group_col].iat[row]}'")
    keep = ~commitment | np.isin(years, [float(y) for y in terms])
    return r[keep]


def advise_commitments(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *, rates: Any = None,
                       classes: Any = None, group_by: str = "instance_type", label: str = "workload-class",
                       interruption_overhead: float = 0.10, interruptible: Sequence[str] = ("training",),
                       allowed: Mapping[str, Sequence[str]] | None = None, terms: Sequence[int] = (1, 3),
                       sensitivity: float = 0.20, catalog: Any = None, interval: float = 60,
                       hours_per_month: float = HOURS_PER_MONTH, detail: bool = False, existing: Any = None,
                       horizon_days: float = 90, demand: Any = None) -> pd.DataFrame:
    """Purchasing advice per instance type (or family, or GPU model) and workload class.

    Args:
        costs, usage, inventory, workloads, interval: as for
            :func:`gpucost.allocate`; ``costs`` also needs ``instance_type``
            (see :func:`gpucost.hourly_demand` for the lines that count as demand).
        rates: the purchase options, one row per option: the ``group_by``
            column, ``kind`` (``on_demand``, ``reserved``, ``savings_plan``,
            ``cud``, ``spot``), ``hourly`` ($ per unit-hour), and for
            commitments ``term_years`` and optionally ``upfront`` ($ per unit
            for the term), ``payment``, ``option`` (a name), ``flexible``
            (default: savings plans are, others are not). A unit is an
            instance (``group_by="instance_type"``) or a GPU (``family``,
            ``gpu_model``). Without an ``on_demand`` row the on-demand rate is
            the bill's own (``list_cost`` per unit-hour), else the catalog's.
        classes: ``consumer, class`` to use instead of
            :func:`gpucost.workload_classes` (which reads ``label``).
        group_by: ``instance_type``, ``family`` or ``gpu_model``.
        interruption_overhead: spot costs ``spot * (1 + overhead)`` for
            interruptible classes (lost work, restarts).
        interruptible: classes that may run on spot.
        allowed: class -> commitment kinds it may be advised (defaults: any
            kind for inference, flexible commitments for training, none for
            development, idle and unattributed capacity). Training is never
            advised a commitment that is not flexible.
        terms: commitment terms considered, in years.
        sensitivity: the demand change of the sensitivity columns (0.2: ±20%).
        catalog: as for :mod:`gpucost.catalog` (None: the embedded catalog;
            a DataFrame: your instance-type rows over it), for GPU models,
            GPUs per instance and on-demand prices.
        hours_per_month: hours of a month in monthly figures (730).
        detail: every option evaluated, not only the advice.
        existing: the commitments already bought, instead of the bill's own
            (lines with a ``commitment_id``): one row per commitment with the
            ``group_by`` column, ``kind`` (``reserved``, ``savings_plan``,
            ``cud``), ``count`` (units, for reservations and CUDs) or
            ``hourly`` ($ an hour, for savings plans) and ``rate`` (the $ per
            unit-hour the savings plan charges), optional ``start``, ``end``.
            Their coverage is subtracted hour by hour before the quantile rule.
        horizon_days: a commitment ending within this many days after the
            window is "expiring": the advice says whether to renew it.
        demand: a precomputed :func:`gpucost.hourly_demand` table (by
            ``consumer``) to advise on instead of ``costs, usage, inventory``
            (pass None for those); the bill's coverage is then unknown, so
            give ``existing=``, and on-demand rates come from ``rates`` or the
            catalog.

    Returns:
        One row per (group, class) with the recommended purchase (``purchase``,
        ``option``, ``term_years``, ``payment``, ``level`` units,
        ``commitment_per_hour``, ``upfront_total``), the expected
        ``monthly_recommended`` against ``monthly_today`` (the bill) and
        ``monthly_on_demand``, ``savings_vs_today``, ``savings_vs_on_demand``,
        ``break_even_utilization``, ``expected_utilization``, ``coverage``,
        the risk (``risk_worst_week_unused_share``,
        ``risk_worst_week_unused_cost``), the same level under demand down and
        up by ``sensitivity`` (``savings_if_demand_down/up``, and the levels
        one would buy then, ``level_if_demand_down/up``) and a ``reason``.
        ``mean_demand``/``peak_demand`` count the idle GPUs of running
        instances (``idle_share`` of it; ``mean_demand_if_rightsized`` without
        them); ``net_mean_demand``/``net_peak_demand`` are what is left to buy
        for after existing commitments (``existing_level``, ``existing_coverage``,
        ``existing_utilization``, ``expiring_level``, ``expiring_on``).
        ``buy`` says what to buy in its unit (whole instances or GPUs, or $ an
        hour for savings plans), ``action`` is ``keep``, ``add ...``,
        ``let expire`` or ``move to spot``; ``recommended`` is true only for a
        change that saves money against ``monthly_if_unchanged`` (today's
        bill carried forward); a change that would lose money is
        ``purchase="keep"`` with its loss in ``savings_if_changed``.

    Examples:
        A g5.xlarge serving a chat model around the clock, on demand; a
        1-year reservation costs $0.634 an hour against $1.006:

        >>> hours = pd.date_range("2026-03-02", periods=48, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": "i-0aaa", "instance_type": "g5.xlarge", "start": hours,
        ...                       "end": hours + pd.Timedelta("1h"), "cost": 1.006, "list_cost": 1.006})
        >>> usage = pd.DataFrame({"timestamp": hours, "resource_id": "i-0aaa", "device": 0, "consumer": "chat",
        ...                       "share": 1.0, "util": 0.4, "mem_used": 0.0, "duration": 3600.0})
        >>> workloads = pd.DataFrame({"consumer": ["chat"], "workload-class": ["inference"]})
        >>> rates = pd.DataFrame({"instance_type": "g5.xlarge", "kind": [gpucost.Purchase.ON_DEMAND, gpucost.Purchase.RESERVED],
        ...                       "hourly": [1.006, 0.634], "term_years": [None, 1]})
        >>> advice = gpucost.advise_commitments(costs, usage, gpucost.inventory(costs), workloads, rates=rates)
        >>> advice[["instance_type", "class", "purchase", "level", "monthly_today", "monthly_recommended"]]
          instance_type      class  purchase  level  monthly_today  monthly_recommended
        0     g5.xlarge  inference  reserved    1.0         734.38               462.82
        >>> import textwrap
        >>> print(textwrap.fill(advice.loc[0, "reason"], 100))
        inference on g5.xlarge: mean 1.00 instances/h, peak 1.00. Buy 1 instance at $0.634/instance-hour
        with a 1-year no-upfront reservation against $1.006 for the rest: it pays off above 63% use and
        would be used 100% of the time, covering 100% of the demand left to buy for. Expected $463/month
        against $734 today (saves $272). Risk: in the worst week 0% of it ($0.00) sits unused; with demand
        -20% it saves $125/month, +20% $272.
    """
    if group_by not in GROUPINGS:
        raise InvalidInputError(f"parameter 'group_by': '{group_by}' is not instance_type, family or gpu_model")
    if not 0 <= sensitivity < 1:
        raise InvalidInputError(f"parameter 'sensitivity': {sensitivity} is not in [0, 1)")
    if not interruption_overhead >= 0:
        raise InvalidInputError(f"parameter 'interruption_overhead': {interruption_overhead} is not >= 0")
    unit = GROUPINGS[group_by]
    option_rates = _rates(rates, group_by, terms)
    allowed_kinds = dict(DEFAULT_ALLOWED)
    for cls, kinds in (allowed or {}).items():
        unknown = set(kinds) - set(COMMITMENT_KINDS)
        if cls not in allowed_kinds or unknown:
            raise InvalidInputError(f"parameter 'allowed': {cls}: {sorted(unknown) or 'unknown class'}")
        allowed_kinds[cls] = tuple(kinds)

    if demand is None:
        hourly, lines = _hourly_demand(costs, usage, inventory, workloads, by=["consumer"], interval=interval)
    else:
        hourly, lines = _given_demand(demand)
    cat = _catalog_columns(catalog)
    # The idle GPUs of an instance its workloads kept running are part of
    # their demand: nobody can terminate half an instance (docs/advisor.md §3.8).
    hourly = _fold_idle(hourly)
    covered_share, covered_money_share = _bill_coverage(lines, hourly)

    # The class of every row.
    consumers = hourly["consumer"]
    workload_rows = ~consumers.isin(NOT_WORKLOADS)
    if classes is None:
        class_table = workload_classes(hourly, workloads, label=label)
        class_map = class_table.set_index("consumer")["class"]
    else:
        class_map = _classes_map(classes, consumers[workload_rows])
    cls = consumers.map(class_map).astype(object)
    cls[consumers == "__idle__"] = "idle"
    cls[consumers == "__unattributed__"] = "unattributed"

    # Units: instances, or GPUs.
    gpus = hourly["gpus"]
    if unit == "GPU" or group_by == "gpu_model":
        from_catalog = hourly["instance_type"].map(cat["gpus"]) if "gpus" in cat else pd.Series(np.nan, hourly.index)
        gpus = gpus.fillna(pd.to_numeric(from_catalog, errors="coerce"))
        if gpus.isna().any():
            i = int(np.flatnonzero(gpus.isna().to_numpy())[0])
            raise InvalidInputError(f"inventory: no GPUs known for resource '{hourly['resource_id'].iat[i]}' "
                                    f"(instance type {hourly['instance_type'].iat[i]}): add it to the inventory "
                                    "or pass catalog= with its gpus")
    group = _group_of(hourly["instance_type"], group_by, cat)
    per_unit = (gpus if unit == "GPU" else 1.0)
    units = hourly["instance_hours"] * per_unit
    folded = hourly["folded_idle"] * per_unit

    # Demand curves on one hourly grid: gross, and what commitments already
    # bought cover (from the bill), with the money of each.
    period = instants_ns(hourly, "hourly", "period")
    if len(period) == 0:
        raise InvalidInputError("costs: no usage line of a GPU instance type (nothing to advise on)")
    first = period.min()
    hours = int((period.max() - first) // NANOS_PER_HOUR + 1)
    keys = pd.MultiIndex.from_arrays([group.to_numpy(object), cls.to_numpy(object)], names=[group_by, "class"])
    curve_of, curve_keys = pd.factorize(keys, sort=True)
    hour_of = (period - first) // NANOS_PER_HOUR

    def grid(values) -> np.ndarray:
        out = np.zeros((len(curve_keys), hours))
        np.add.at(out, (curve_of, hour_of), np.asarray(values, dtype=np.float64))
        return out

    demand = np.maximum(grid(units), 0.0)
    money_grid = grid(hourly["cost"])
    covered = np.clip(grid(units * covered_share), 0.0, demand)
    covered_money = grid(hourly["cost"] * covered_money_share)
    money = money_grid.sum(axis=1)
    idle_units = grid(folded).sum(axis=1)
    # A class with neither instance-hours nor money (the __idle__ rows of a
    # fleet nobody left idle) has nothing to advise on.
    keep = (demand.max(axis=1) > 0) | (money != 0)
    demand, money, curve_keys = demand[keep], money[keep], curve_keys[keep]
    money_grid, covered, covered_money, idle_units = (money_grid[keep], covered[keep], covered_money[keep],
                                                      idle_units[keep])
    groups = pd.Index(curve_keys.get_level_values(0))
    existing_util = pd.Series(np.nan, index=groups)
    expiring_on = pd.Series(pd.NaT, index=groups, dtype="datetime64[ns, UTC]")
    expiring_units = np.zeros_like(demand)
    expiring_money = np.zeros_like(demand)
    existing_level = covered.mean(axis=1)
    spare, spare_rate = pd.Series(dtype=np.float64), pd.Series(dtype=np.float64)
    if existing is not None:
        # The caller's table of what is bought replaces the bill's coverage
        # of the groups it names; the others keep the bill's (a table listing
        # only reservations must not make a savings plan in the bill vanish,
        # or the advice would buy again what is bought).
        bill_covered, bill_money, bill_level = covered, covered_money, existing_level
        window_end = first + hours * NANOS_PER_HOUR
        capacity, expiring_capacity, expiring_on, conv_capacity, spare_rate = _existing_capacity(
            existing, group_by, pd.Index(groups.unique()), first, hours, window_end + int(horizon_days * 24) *
            NANOS_PER_HOUR)
        (covered, covered_money, expiring_units, expiring_money, existing_util,
         level_by_group, spare) = _apply_capacity(demand, money_grid, groups, capacity, expiring_capacity,
                                                  conv_capacity)
        # Convertible units of a type nobody ran in the window are all spare.
        idle_types = conv_capacity.index.difference(pd.Index(groups.unique()))
        if len(idle_types):
            spare = pd.concat([spare, np.floor(conv_capacity.loc[idle_types].min(axis=1) + 1e-9)])
        existing_level = groups.map(level_by_group).to_numpy(np.float64)
        named = np.asarray(groups.isin(pd.Index(strings(table(existing, "existing"), "existing", group_by))))
        covered = np.where(named[:, None], covered, bill_covered)
        covered_money = np.where(named[:, None], covered_money, bill_money)
        existing_level = np.where(named, existing_level, bill_level)
        existing_util = groups.map(existing_util).to_numpy(np.float64)
        expiring_on = groups.map(expiring_on)
    gross = demand
    # What the advice buys for: demand that no commitment kept beyond the
    # horizon covers (expiring ones lapse unless the advice renews them).
    demand = np.maximum(gross - covered + expiring_units, 0.0)
    kept_money = (covered_money - expiring_money).sum(axis=1)
    uncovered_money = money - covered_money.sum(axis=1)

    on_demand = _on_demand_rates(lines, option_rates, cat, group_by, unit, inventory)
    spot = option_rates[option_rates["kind"] == Purchase.SPOT].set_index(group_by)["rate"]
    commitments = option_rates[option_rates["kind"].isin(COMMITMENT_KINDS)]

    # Problems: per curve a baseline (nothing committed) and every allowed
    # option, each optimised at 1 and evaluated at 1 -/+ sensitivity.
    curves = pd.DataFrame({"curve": np.arange(len(curve_keys)),
                           group_by: curve_keys.get_level_values(0), "class": curve_keys.get_level_values(1)})
    missing = ~curves[group_by].isin(on_demand.index)
    if missing.any():
        g = curves[group_by][missing].iat[0]
        raise InvalidInputError(f"rates: no on-demand rate for {group_by} '{g}': add a row with kind 'on_demand' "
                                "(the bill has no list_cost for it and the catalog no price)")
    curves["r_o"] = curves[group_by].map(on_demand).astype(np.float64)
    spot_eff = curves[group_by].map(spot).astype(np.float64) * (1 + interruption_overhead)
    use_spot = curves["class"].isin(list(interruptible)) & (spot_eff < curves["r_o"])
    curves["r_x"] = np.where(use_spot, spot_eff, curves["r_o"])
    curves["excess_on"] = np.where(use_spot, Purchase.SPOT, Purchase.ON_DEMAND)

    options = curves.merge(commitments, on=group_by, how="inner")
    options = options[[k in allowed_kinds.get(c, ()) for k, c in zip(options["kind"], options["class"])]]
    options = options[(options["class"] != "training") | options["flexible"]]
    baseline = curves.assign(option=np.where(use_spot, Purchase.SPOT, Purchase.ON_DEMAND), kind=curves["excess_on"],
                             rate=curves["r_x"], upfront=0.0, term_years=np.nan, payment=None, row=-1)
    candidates = pd.concat([baseline, options], ignore_index=True)
    candidates["is_baseline"] = candidates["row"] < 0

    down, up = 1 - sensitivity, 1 + sensitivity
    nan = np.nan
    plan = [(1.0, "opt"), (down, "fixed"), (up, "fixed"), (down, "opt"), (up, "opt")]
    n = len(candidates)
    curve_idx = np.tile(candidates["curve"].to_numpy(np.int32), len(plan))
    scale = np.repeat([p[0] for p in plan], n)
    commit_rate = np.tile(candidates["rate"].to_numpy(np.float64), len(plan))
    excess_rate = np.tile(candidates["r_x"].to_numpy(np.float64), len(plan))
    # Reservations and CUDs come in whole instances (or GPUs); savings plans
    # are a dollar rate, any level.
    # Spend-based (flexible) CUDs are a dollar rate like savings plans.
    flexible = candidates["flexible"].astype(object).fillna(False).astype(bool).to_numpy()
    whole_kind = (candidates["kind"] == Purchase.RESERVED).to_numpy() | ((candidates["kind"] == Purchase.COMMITTED_USE).to_numpy() & ~flexible)
    whole = np.tile(whole_kind.astype(np.uint8), len(plan))
    level = np.full(len(plan) * n, nan)
    base = candidates["is_baseline"].to_numpy()
    level[np.tile(base, len(plan))] = 0.0
    first_pass = _solve(demand, curve_idx[:n], commit_rate[:n], excess_rate[:n], whole[:n], scale[:n], level[:n])
    level[n:3 * n] = np.tile(first_pass["level"], 2)
    solved = _solve(demand, curve_idx, commit_rate, excess_rate, whole, scale, level)
    at = {p: {k: v[i * n:(i + 1) * n] for k, v in solved.items()} for i, p in enumerate(plan)}
    now, fixed_down, fixed_up, opt_down, opt_up = (at[p] for p in plan)

    per_month = hours_per_month
    candidates["level"] = now["level"]
    candidates["monthly"] = now["hourly_cost"] * per_month
    candidates["utilization"] = now["utilization"]
    candidates["coverage"] = now["coverage"]
    candidates["risk_share"] = now["worst_block_unused_share"]
    candidates["risk_cost"] = now["worst_block_unused_cost"]
    candidates["monthly_down"] = fixed_down["hourly_cost"] * per_month
    candidates["monthly_up"] = fixed_up["hourly_cost"] * per_month
    candidates["level_down"] = opt_down["level"]
    candidates["level_up"] = opt_up["level"]
    base_cost = candidates[base].set_index("curve")
    candidates["baseline_monthly"] = candidates["curve"].map(base_cost["monthly"])
    candidates["baseline_down"] = candidates["curve"].map(base_cost["monthly_down"])
    candidates["baseline_up"] = candidates["curve"].map(base_cost["monthly_up"])
    # The advice: the cheapest option that commits something and beats the
    # baseline; ties go to the shorter term and the smaller upfront payment.
    ranked = candidates.assign(_cost=candidates["monthly"].round(9), _term=candidates["term_years"].fillna(0))
    ranked = ranked[~ranked["is_baseline"] & (ranked["level"] > 0) &
                    (ranked["monthly"] < ranked["baseline_monthly"] * (1 - 1e-12))]
    best = ranked.sort_values(["curve", "_cost", "_term", "upfront"]).drop_duplicates("curve")
    chosen = pd.concat([best, candidates[base & ~candidates["curve"].isin(best["curve"])]])
    chosen = chosen.set_index("curve").sort_index()

    t = float(hours)
    out = pd.DataFrame({group_by: curves[group_by], "class": curves["class"], "unit": unit, "hours": t,
                        "mean_demand": gross.mean(axis=1), "peak_demand": gross.max(axis=1),
                        "net_mean_demand": demand.mean(axis=1), "net_peak_demand": demand.max(axis=1)})
    # Today carried forward: commitments kept, the rest as billed, what
    # expires at the price it would then pay (on demand, or spot).
    kept = kept_money / t * per_month
    unchanged = kept + uncovered_money / t * per_month + expiring_units.mean(axis=1) * curves["r_x"] * per_month
    change = kept + chosen["monthly"].to_numpy(np.float64)
    saving = unchanged - change
    # No recommendation that loses money (docs/advisor.md §3): keep as is.
    # A commitment that saves nothing (usage already billed at its rate) is
    # no change either.
    loses = (saving.to_numpy() < -0.005) | (~chosen["is_baseline"].to_numpy() & (saving.to_numpy() <= 0.005))
    committed = ~chosen["is_baseline"].to_numpy() & ~loses
    out["purchase"] = np.where(loses, "keep", chosen["kind"].to_numpy(object))
    out["option"] = np.where(loses, "keep as is", chosen["option"].to_numpy(object))
    out["term_years"] = np.where(committed, chosen["term_years"].to_numpy(np.float64), np.nan)
    out["payment"] = np.where(committed, chosen["payment"].to_numpy(object), None)
    out["level"] = np.where(committed, chosen["level"].to_numpy(np.float64), 0.0)
    out["rate"] = np.where(committed, chosen["rate"], np.nan)
    out["excess_rate"] = curves["r_x"]
    out["excess_on"] = curves["excess_on"]
    out["on_demand_rate"] = curves["r_o"]
    out["commitment_per_hour"] = np.where(committed, chosen["rate"] * chosen["level"], 0.0)
    out["upfront_total"] = np.where(committed, chosen["upfront"] * chosen["level"], 0.0)
    dollars = committed & ((out["purchase"] == Purchase.SAVINGS_PLAN).to_numpy() | (
        (out["purchase"] == Purchase.COMMITTED_USE).to_numpy() & chosen["flexible"].astype(object).fillna(False).astype(bool).to_numpy()))
    out["sold_in"] = np.where(~committed, "", np.where(~dollars, unit + "s", np.where(
        out["purchase"] == Purchase.COMMITTED_USE, "$ an hour of on-demand spend", "$ an hour")))
    out["buy"] = [_buy(s, lv, ph, lv * ro, unit) if c else "" for s, lv, ph, ro, c in
                  zip(out["sold_in"], out["level"], out["commitment_per_hour"], curves["r_o"], committed)]
    out["monthly_today"] = money / t * per_month
    out["monthly_if_unchanged"] = unchanged.to_numpy(np.float64)
    out["monthly_on_demand"] = out["mean_demand"] * curves["r_o"] * per_month
    out["monthly_recommended"] = np.where(loses, unchanged, change)
    out["savings_vs_today"] = np.where(loses, 0.0, saving)
    out["savings_if_changed"] = saving.to_numpy(np.float64)  # negative where the row says keep
    out["recommended"] = ~loses & (out["savings_vs_today"] > 0.005)
    out["savings_vs_on_demand"] = out["monthly_on_demand"] - out["monthly_recommended"]
    out["savings_pct"] = (out["savings_vs_today"] / out["monthly_today"]).where(out["monthly_today"] > 0)
    out["break_even_utilization"] = np.where(committed, chosen["rate"] / curves["r_x"], np.nan)
    out["expected_utilization"] = np.where(committed, chosen["utilization"], np.nan)
    out["coverage"] = np.where(committed, chosen["coverage"], 0.0)
    out["risk_worst_week_unused_share"] = np.where(committed, chosen["risk_share"], 0.0)
    out["risk_worst_week_unused_cost"] = np.where(committed, chosen["risk_cost"], 0.0)
    out["savings_if_demand_down"] = np.where(
        loses, 0.0, (chosen["baseline_down"] - chosen["monthly_down"]).to_numpy(np.float64))
    out["savings_if_demand_up"] = np.where(loses, 0.0, (chosen["baseline_up"] - chosen["monthly_up"]).to_numpy(np.float64))
    out["level_if_demand_down"] = np.where(committed, chosen["level_down"], 0.0)
    out["level_if_demand_up"] = np.where(committed, chosen["level_up"], 0.0)
    # What is already bought, and what expires within the horizon.
    gross_total = gross.sum(axis=1)
    out["existing_level"] = np.asarray(existing_level, dtype=np.float64)
    out["existing_coverage"] = np.divide(covered.sum(axis=1), gross_total, out=np.zeros(len(out)),
                                         where=gross_total > 0)
    out["existing_utilization"] = np.asarray(existing_util, dtype=np.float64)
    out["expiring_level"] = expiring_units.mean(axis=1)
    out["expiring_on"] = np.asarray(expiring_on)
    out["action"] = [_action(r) for r in out[["purchase", "recommended", "buy", "expiring_level", "level"]]
                     .to_dict("records")]
    # The rightsizing alternative: the idle GPUs of running instances.
    out["idle_share"] = np.divide(idle_units, gross_total, out=np.zeros(len(out)), where=gross_total > 0)
    out["mean_demand_if_rightsized"] = out["mean_demand"] * (1 - out["idle_share"])
    # Nothing worth changing where commitments already cover the demand.
    stays = ~out["recommended"].to_numpy() & (out["existing_coverage"].to_numpy() > 0)
    out.loc[stays, ["purchase", "option"]] = ["keep", "keep as is"]
    out["reason"] = [_reason(row, group_by, interruption_overhead, sensitivity) for row in out.to_dict("records")]
    out = _convert(out, spare, spare_rate, group_by, unit, per_month)
    return _finish(out, detail, candidates, chosen, group_by, sensitivity, per_month, first, hours)


def _finish(out, detail, candidates, chosen, group_by, sensitivity, per_month, first, hours):
    out.attrs = {"sensitivity": sensitivity, "hours_per_month": per_month, "window_start": str(to_utc([first])[0]),
                 "window_hours": hours}
    if not detail:
        return out
    options_out = candidates.rename(columns={"kind": "purchase"})
    options_out["recommended"] = False
    key = options_out["curve"].astype(str) + "|" + options_out["option"].astype(str) + "|" + \
        options_out["rate"].astype(str)
    chosen_key = chosen.index.astype(str) + "|" + chosen["option"].astype(str) + "|" + chosen["rate"].astype(str)
    options_out["recommended"] = key.isin(chosen_key[out["recommended"].to_numpy()])
    options_out["savings_vs_baseline"] = options_out["baseline_monthly"] - options_out["monthly"]
    return options_out[[group_by, "class", "option", "purchase", "term_years", "payment", "rate", "upfront",
                        "excess_on", "r_x", "level", "monthly", "baseline_monthly", "savings_vs_baseline",
                        "utilization", "coverage", "risk_share", "risk_cost", "recommended"]].rename(
        columns={"r_x": "excess_rate", "monthly": "monthly_cost", "baseline_monthly": "monthly_baseline",
                 "risk_share": "risk_worst_week_unused_share", "risk_cost": "risk_worst_week_unused_cost"}
    ).sort_values([group_by, "class", "monthly_cost"], ignore_index=True)


def _given_demand(demand: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A caller's hourly_demand table, checked, and the per-resource stub of
    demand lines the rates need (no money, no coverage: not known)."""
    name = "demand"
    t = table(demand, name)
    d = frame(t, name, ["consumer", "resource_id", "period", "instance_type", "instance_hours", "cost"],
              ["gpus", "region"])
    for column in ("consumer", "resource_id", "instance_type"):
        d[column] = strings(t, name, column)
        raise_first(name, column, pd.isna(d[column]).to_numpy(), lambda r: "missing value")
    for column in ("instance_hours", "cost"):
        values = t.floats(column)
        raise_first(name, column, ~np.isfinite(values), lambda r, v=values: f"{v[r]} is not a number")
        d[column] = values
    raise_first(name, "instance_hours", d["instance_hours"].to_numpy() < 0, lambda r: "is negative")
    d["period"] = to_utc(instants_ns(t, name, "period"))
    d["gpus"] = t.floats("gpus") if t.has("gpus") else np.nan
    per_resource = d.drop_duplicates("resource_id")
    lines = pd.DataFrame({"resource_id": per_resource["resource_id"].to_numpy(object),
                          "instance_type": per_resource["instance_type"].to_numpy(object),
                          "hours": 0.0, "list_cost": np.nan, "cost": 0.0, "covered": 0.0, "covered_cost": 0.0,
                          "start": np.zeros(len(per_resource), np.int64),
                          "end": np.full(len(per_resource), NANOS_PER_HOUR, np.int64)})
    return d, lines


def _fold_idle(hourly: pd.DataFrame) -> pd.DataFrame:
    """The idle part of an instance-hour some workload held goes to the
    workloads that held it, pro rata (``folded_idle`` records how much); an
    instance-hour nobody held stays ``__idle__``. Hours and money are kept."""
    out = hourly.copy()
    consumer = out["consumer"].astype(object).to_numpy()
    idle = consumer == "__idle__"
    held = ~idle & (consumer != "__unattributed__")
    cell = out.groupby(["resource_id", "period"], sort=False, observed=True).ngroup().to_numpy()
    ih = out["instance_hours"].to_numpy(np.float64)
    cost = out["cost"].to_numpy(np.float64)
    held_sum = np.bincount(cell, weights=np.where(held, ih, 0.0))
    idle_sum = np.bincount(cell, weights=np.where(idle, ih, 0.0))
    idle_cost = np.bincount(cell, weights=np.where(idle, cost, 0.0))
    partial = held_sum[cell] > 1e-12
    share = np.divide(ih, held_sum[cell], out=np.zeros_like(ih), where=held & partial)
    folded = idle_sum[cell] * share
    out["instance_hours"] = np.where(idle & partial, 0.0, ih + folded)
    out["cost"] = np.where(idle & partial, 0.0, cost + idle_cost[cell] * share)
    out["folded_idle"] = folded
    return out


def _bill_coverage(lines: pd.DataFrame, hourly: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per hourly row, the share of its instance-hours and of its money that
    a commitment already bought covered (demand_lines' ``covered``)."""
    start = lines["start"].to_numpy(np.int64)
    end = lines["end"].to_numpy(np.int64)
    line, hour, piece_start, piece_end = split_at_hours(start, end)
    fraction = (piece_end - piece_start) / (end - start)[line]
    pieces = pd.DataFrame({
        "resource_id": lines["resource_id"].to_numpy(object)[line], "hour": hour,
        "hours": (piece_end - piece_start) / NANOS_PER_HOUR * 1.0,
        "covered_hours": (piece_end - piece_start) / NANOS_PER_HOUR * lines["covered"].to_numpy(np.float64)[line],
        "money": lines["cost"].to_numpy(np.float64)[line] * fraction,
        "covered_money": lines["covered_cost"].to_numpy(np.float64)[line] * fraction,
    })
    sums = pieces.groupby(["resource_id", "hour"], sort=False).sum()
    hour_share = (sums["covered_hours"] / sums["hours"]).where(sums["hours"] > 0, 0.0)
    money_share = (sums["covered_money"] / sums["money"]).where(sums["money"].abs() > 1e-12, hour_share)
    key = pd.MultiIndex.from_arrays([hourly["resource_id"].astype(object).to_numpy(),
                                     instants_ns(hourly, "hourly", "period")])
    return (hour_share.reindex(key).fillna(0.0).to_numpy(np.float64),
            money_share.reindex(key).fillna(0.0).to_numpy(np.float64))


def _existing_capacity(existing: Any, group_by: str, groups: pd.Index, first: int, hours: int,
                       horizon_end: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Units each group has bought, per hour of the window (all, and those
    ending before ``horizon_end``), and the first expiry per group."""
    name = "existing"
    t = table(existing, name)
    e = frame(t, name, [group_by, "kind"], ["count", "hourly", "rate", "start", "end", "commitment_id",
                                             "convertible"])
    n = len(e)
    e[group_by] = strings(t, name, group_by)
    # Groups with commitments but no demand stay too (their reservations may
    # be converted, docs/advisor.md §3.11).
    groups = groups.union(pd.Index(pd.unique(e[group_by].to_numpy(object))))
    kind = pd.Series(strings(t, name, "kind"), dtype=object).str.strip().str.lower().to_numpy()
    bad = ~np.isin(kind, COMMITMENT_KINDS)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise row_error(name, row, "kind", f"'{kind[row]}' is not one of {', '.join(COMMITMENT_KINDS)}")
    nan = np.full(n, np.nan)
    count = t.floats("count") if t.has("count") else nan
    hourly = t.floats("hourly") if t.has("hourly") else nan
    rate = t.floats("rate") if t.has("rate") else nan
    # Savings plans and spend-based CUDs are bought in $ an hour (a CUD row
    # with `hourly` and no `count`: $ of on-demand spend an hour, `rate` the
    # on-demand $ per unit-hour); reservations and resource-based CUDs in units.
    sp = (kind == Purchase.SAVINGS_PLAN) | ((kind == Purchase.COMMITTED_USE) & ~np.isfinite(count) & np.isfinite(hourly))
    raise_first(name, "count", ~sp & ~(np.isfinite(count) & (count > 0)),
                lambda r: f"a {kind[r]} needs its count of units > 0 (got {count[r]})")
    raise_first(name, "hourly", sp & ~(np.isfinite(hourly) & (hourly > 0)),
                lambda r: f"a {_KIND_WORDS[kind[r]]} needs its commitment in $ an hour > 0 (got {hourly[r]})")
    raise_first(name, "rate", sp & ~(np.isfinite(rate) & (rate > 0)),
                lambda r: f"a {_KIND_WORDS[kind[r]]} in $ an hour needs the $ per unit-hour it charges "
                          f"(got {rate[r]})")
    units = np.where(sp, hourly / np.where(sp, rate, 1.0), count)
    convertible = np.zeros(n, dtype=bool)
    if t.has("convertible"):
        flag = pd.Series(e["convertible"], dtype=object).map(_truth).to_numpy()
        raise_first(name, "convertible", pd.isna(flag), lambda r: f"'{e['convertible'].iat[r]}' is not true or false")
        convertible = flag.astype(bool)
    raise_first(name, "convertible", convertible & (kind != Purchase.RESERVED),
                lambda r: f"only reservations are convertible (a {kind[r]} is not)")
    raise_first(name, "rate", convertible & ~(np.isfinite(rate) & (rate > 0)),
                lambda r: f"a convertible reservation needs its $ per unit-hour (got {rate[r]})")
    lo = instants_ns(t, name, "start") if t.has("start") else np.full(n, np.iinfo(np.int64).min)
    hi = instants_ns(t, name, "end") if t.has("end") else np.full(n, np.iinfo(np.int64).max)
    raise_first(name, "end", hi <= lo, lambda r: "end is not after start")
    hour_start = first + np.arange(hours, dtype=np.int64) * NANOS_PER_HOUR
    active = (hour_start[None, :] >= lo[:, None]) & (hour_start[None, :] < hi[:, None])
    per_row = active * units[:, None]
    expires = hi <= horizon_end
    key = pd.Index(e[group_by].to_numpy(object))
    all_units = pd.DataFrame(per_row).groupby(key).sum().reindex(groups, fill_value=0.0)
    exp_units = pd.DataFrame(per_row * expires[:, None]).groupby(key).sum().reindex(groups, fill_value=0.0)
    ends = pd.Series(to_utc(np.where(expires, hi, np.iinfo(np.int64).max)), index=key)
    ends = ends.where(expires)
    first_end = ends.groupby(level=0).min().reindex(groups) if expires.any() else pd.Series(pd.NaT, index=groups)
    # Convertible units that stay beyond the horizon (expiring ones are let
    # expire or renewed instead), and their $ per unit-hour (unit-weighted).
    conv = convertible & ~expires
    conv_units = pd.DataFrame(per_row * conv[:, None]).groupby(key).sum().reindex(groups, fill_value=0.0)
    weight = pd.DataFrame({"u": np.where(conv, units, 0.0), "v": np.where(conv, units * np.nan_to_num(rate), 0.0)})
    sums = weight.groupby(key).sum().reindex(groups, fill_value=0.0)
    conv_rate = (sums["v"] / sums["u"]).where(sums["u"] > 0)
    return all_units, exp_units, first_end, conv_units, conv_rate


def _truth(v: Any) -> Any:
    """A yes/no cell: True, False, or None when it is neither."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return False
    return {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False, "": False}.get(
        str(v).strip().lower())


def _apply_capacity(demand: np.ndarray, money: np.ndarray, groups: pd.Index, capacity: pd.DataFrame,
                    expiring: pd.DataFrame, convertible: pd.DataFrame):
    """Commitments cover the demand of their group hour by hour, shared over
    its classes pro rata; those that stay cover first. Also the whole
    convertible units of each group that no hour of the window used."""
    codes, uniq = pd.factorize(groups)
    total = np.zeros((len(uniq), demand.shape[1]))
    np.add.at(total, codes, demand)
    cap = capacity.reindex(uniq).to_numpy(np.float64)
    exp = expiring.reindex(uniq).to_numpy(np.float64)
    stay = cap - exp
    used_stay = np.minimum(total, stay)
    used_exp = np.minimum(total - used_stay, exp)
    share_all = np.divide(used_stay + used_exp, total, out=np.zeros_like(total), where=total > 0)
    share_exp = np.divide(used_exp, total, out=np.zeros_like(total), where=total > 0)
    cap_sum = cap.sum(axis=1)
    util = pd.Series(np.divide((used_stay + used_exp).sum(axis=1), cap_sum, out=np.full(len(uniq), np.nan),
                               where=cap_sum > 0), index=uniq)
    level = pd.Series(cap.mean(axis=1), index=uniq)
    unused = cap - used_stay - used_exp
    conv = convertible.reindex(uniq).to_numpy(np.float64)
    spare_units = np.minimum(conv, unused).min(axis=1) if unused.shape[1] else np.zeros(len(uniq))
    spare = pd.Series(np.floor(np.maximum(spare_units, 0.0) + 1e-9), index=uniq)
    return (demand * share_all[codes], money * share_all[codes], demand * share_exp[codes],
            money * share_exp[codes], util, level, spare)


def _buy(sold_in: str, level: float, per_hour: float, on_demand_per_hour: float, unit: str) -> str:
    """What to buy, in the unit it is sold in: savings plans in $ an hour of
    their own rate, spend-based CUDs in $ an hour of on-demand spend."""
    if sold_in == "$ an hour":
        return f"${per_hour:,.2f} an hour"
    if sold_in == "$ an hour of on-demand spend":
        return f"${on_demand_per_hour:,.2f} an hour of on-demand spend"
    count = int(round(level))
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _convert(out: pd.DataFrame, spare: pd.Series, spare_rate: pd.Series, group_by: str, unit: str,
             per_month: float) -> pd.DataFrame:
    """Convertible reservations no hour used, exchanged for reservations
    another type of the same family is advised to add (docs/advisor.md §3.11).

    Exchanging k units at r_g for n units at r_h needs n * r_h >= k * r_g
    (the new reservations worth at least the old), so n = ceil(k * r_g / r_h),
    at most the level added; the k units' cost then buys demand instead of
    nothing: the source row saves k * r_g a month-hour, the target's purchase
    costs what it did. Families are few: the loop is over groups, not rows."""
    out["convert_units"] = 0.0
    out["convert_to"] = ""
    out["converted_into"] = 0.0
    if group_by != "instance_type" or not (spare > 0).any():
        return out
    family = instance_family(out[group_by]).to_numpy(object)
    left = out["level"].to_numpy(np.float64).copy()
    target = (out["recommended"] & (out["purchase"] == Purchase.RESERVED) & (out["level"] > 0)).to_numpy()
    for g in spare[spare > 0].sort_values(ascending=False).index:
        k_left, r_g = float(spare[g]), float(spare_rate[g])
        fam = instance_family(pd.Series([g])).iat[0]
        if not (target & (family == fam)).any():
            continue
        if not (out[group_by].to_numpy(object) == g).any():
            out = _no_demand_row(out, g, group_by, unit)
            out.at[out.index[-1], "existing_level"] = float(spare[g])
            family = np.append(family, fam)
            left = np.append(left, 0.0)
            target = np.append(target, False)
        src = int(np.flatnonzero(out[group_by].to_numpy(object) == g)[0])
        for h in np.flatnonzero(target & (family == fam) & (out[group_by].to_numpy(object) != g)):
            if k_left < 1 or left[h] < 1:
                continue
            r_h = float(out["rate"].iat[h])
            k = min(k_left, np.floor(left[h] * r_h / r_g + 1e-9))
            if k < 1:
                continue
            n = float(np.ceil(k * r_g / r_h - 1e-9))
            left[h] -= n
            k_left -= k
            into = f"{out[group_by].iat[h]}"
            row = out.index[src]
            out.at[row, "convert_units"] += k
            out.at[row, "converted_into"] += n
            out.at[row, "convert_to"] = (out.at[row, "convert_to"] + ", " if out.at[row, "convert_to"] else "") + into
            saving = k * r_g * per_month
            out.at[row, "monthly_if_unchanged"] += saving
            out.at[row, "monthly_today"] += saving
            out.at[row, "savings_vs_today"] += saving
            out.at[row, "savings_if_changed"] = out.at[row, "savings_vs_today"]
            out.at[row, "recommended"] = True
            out.at[row, "purchase"], out.at[row, "option"] = "convert", "convert reservations"
            words = f"{_count(k, unit)} of {g} into {_count(n, unit)} of {into}"
            out.at[row, "action"] = (f"{out.at[row, 'action']}; convert {words}" if out.at[row, "action"].startswith(
                "convert") else f"convert {words}")
            out.at[row, "buy"] = ""
            out.at[row, "reason"] = (f"{g}: {_count(k, unit)} of its convertible reservations "
                                     f"({_rate(r_g)}/{unit}-hour) were unused in every hour of the window while "
                                     f"{into} is advised to add {_count(out['level'].iat[h], unit)}: exchange them "
                                     f"for {_count(n, unit)} of {into} (worth at least as much at "
                                     f"{_rate(r_h)}/{unit}-hour) and buy only the rest new. Saves "
                                     f"{_money(saving)}/month, the cost of reservations that cover nothing today. "
                                     + out.at[row, "reason"])
            out.at[out.index[h], "reason"] += (f" {_count(n, unit)} of these can come from converting {int(k)} "
                                               f"unused convertible {g} reservations (see that row).")
    return out


def _no_demand_row(out: pd.DataFrame, group: str, group_by: str, unit: str) -> pd.DataFrame:
    """A row for a type that has commitments and no demand in the window."""
    row = {c: ("" if out[c].dtype == object else 0.0) for c in out.columns}
    row.update({group_by: group, "class": "none", "unit": unit, "hours": float(out["hours"].max()),
                "purchase": "keep", "option": "keep as is", "payment": None, "term_years": np.nan,
                "rate": np.nan, "break_even_utilization": np.nan, "expected_utilization": np.nan,
                "existing_utilization": 0.0, "expiring_on": pd.NaT, "recommended": False, "action": "keep",
                "reason": f"{group}: no demand in the window."})
    return pd.concat([out, pd.DataFrame([row])], ignore_index=True)


def _count(n: float, unit: str) -> str:
    n = int(round(n))
    return f"{n} {unit}{'' if n == 1 else 's'}"


def _action(row: dict) -> str:
    if row["recommended"] and row["buy"]:
        return f"add {row['buy']}"
    if row["recommended"] and row["purchase"] == Purchase.SPOT:
        return "move to spot"
    if row["expiring_level"] > 0:
        return "let expire"
    return "keep"


def _solve(demand: np.ndarray, curve, commit_rate, excess_rate, whole, scale, level) -> dict:
    return _core.solve_commitments(np.ascontiguousarray(demand).reshape(-1), demand.shape[1],
                                   np.ascontiguousarray(curve, np.int32), np.ascontiguousarray(commit_rate),
                                   np.ascontiguousarray(excess_rate), np.ascontiguousarray(whole, np.uint8),
                                   np.ascontiguousarray(scale), np.ascontiguousarray(level), 168)


def _group_of(instance_type: pd.Series, group_by: str, cat: pd.DataFrame) -> pd.Series:
    if group_by == "instance_type":
        return instance_type.astype(object)
    if group_by == "family":
        return instance_family(instance_type).astype(object)
    model = instance_type.map(cat["gpu_model"]) if "gpu_model" in cat else pd.Series(np.nan, instance_type.index)
    if model.isna().any():
        it = instance_type[model.isna()].iat[0]
        raise InvalidInputError(f"catalog: no GPU model for instance type '{it}' (group_by='gpu_model' "
                                "needs catalog= with instance_type and gpu_model)")
    return model.astype(object)


def _on_demand_rates(lines: pd.DataFrame, rates: pd.DataFrame, cat: pd.DataFrame, group_by: str, unit: str,
                     inventory: Any) -> pd.Series:
    """On-demand $/unit-hour per group: the rates table, else the bill's own
    list_cost per unit-hour, else the catalog's price."""
    from gpucost.analyses.demand import gpus_per_resource  # noqa: PLC0415
    lines = lines.copy()
    lines["group"] = _group_of(lines["instance_type"], group_by, cat).to_numpy(object)
    if unit == "GPU":
        gpus = (lines["resource_id"].map(gpus_per_resource(inventory)).astype(np.float64) if inventory is not None
                else pd.Series(np.nan, index=lines.index))
        if "gpus" in cat:
            gpus = gpus.fillna(pd.to_numeric(lines["instance_type"].map(cat["gpus"]), errors="coerce"))
        lines["units"] = lines["hours"] * gpus
    else:
        lines["units"] = lines["hours"]
    priced = lines[np.isfinite(lines["list_cost"]) & (lines["list_cost"] > 0) & (lines["units"] > 0)]
    sums = priced.groupby("group")[["list_cost", "units"]].sum()
    observed = sums["list_cost"] / sums["units"]
    given = rates[rates["kind"] == Purchase.ON_DEMAND].set_index(group_by)["rate"]
    out = given.combine_first(observed)
    if "on_demand_hourly" in cat:
        price = pd.to_numeric(cat["on_demand_hourly"], errors="coerce")
        if unit == "GPU":
            price = price / pd.to_numeric(cat.get("gpus", np.nan), errors="coerce")
        by_type = lines.drop_duplicates("instance_type").set_index("instance_type")["group"]
        listed = pd.Series(price.reindex(by_type.index).to_numpy(), index=by_type.to_numpy()).dropna()
        out = out.combine_first(listed.groupby(level=0).mean())
    return out.dropna()


_KIND_WORDS = {Purchase.RESERVED: "reservation", Purchase.SAVINGS_PLAN: "savings plan", Purchase.COMMITTED_USE: "committed use discount"}


def _rate(x: float) -> str:
    return "$" + f"{x:,.4f}".rstrip("0").rstrip(".")


def _money(x: float) -> str:
    return f"${x:,.2f}" if abs(x) < 100 else f"${x:,.0f}"


def _reason(row: dict, group_by: str, overhead: float, sensitivity: float) -> str:
    """The advice of one output row in words."""
    text = _reason_core(row, group_by, overhead, sensitivity)
    units = "instances" if row['unit'] == "instance" else "GPUs"
    if row['existing_level'] > 0:
        util = row['existing_utilization']
        text += (f" Already bought: {row['existing_level']:.2f} {units}/h covering {row['existing_coverage']:.0%} of "
                 f"this demand" + (f", used {util:.0%}" if np.isfinite(util) else "") + "; the advice is net of it.")
    if row['expiring_level'] > 0:
        on = pd.Timestamp(row['expiring_on'])
        when = f" on {on:%Y-%m-%d}" if pd.notna(on) else ""
        text += (f" {row['expiring_level']:.2f} {units}/h of it expire{when}: "
                 + ("renew only what the advice adds." if row['recommended'] and row['buy'] else
                    "let them expire: demand does not warrant renewing them."))
    if row['idle_share'] >= 0.25 and row['class'] not in ("idle", "unattributed"):
        text += (f" {row['idle_share']:.0%} of this demand is idle GPUs of instances it keeps running: rightsizing "
                 f"to a type with fewer GPUs (gpucost.rightsize) would bring it to "
                 f"{row['mean_demand_if_rightsized']:.2f} {units}/h; do that before buying more.")
    return text


def _reason_core(row: dict, group_by: str, overhead: float, sensitivity: float) -> str:
    group, cls, unit = row[group_by], row['class'], row['unit']
    units = "instances" if unit == "instance" else "GPUs"
    where = f"{cls} on {group}"
    demand = f"mean {row['mean_demand']:.2f} {units}/h, peak {row['peak_demand']:.2f}"
    if row['hours'] == 0 or row['peak_demand'] <= 0:
        return f"{where}: no demand in the window; nothing to buy."
    if row['purchase'] == "keep" and row['savings_if_changed'] >= -0.005:
        if row['existing_coverage'] > 0:
            return (f"{where}: {demand}. Keep as is: commitments already bought cover {row['existing_coverage']:.0%} "
                    f"of it and no purchase would save on the rest ({_money(row['monthly_if_unchanged'])}/month).")
        return (f"{where}: {demand}. Keep as is: no purchase saves against today's "
                f"{_money(row['monthly_if_unchanged'])}/month (the bill already prices this usage at or below the "
                "options given).")
    if row['purchase'] == "keep":
        return (f"{where}: {demand}. Keep as is: the cheapest change would cost "
                f"{_money(-row['savings_if_changed'])}/month more than today's {_money(row['monthly_if_unchanged'])} "
                + ("(work already on spot is billed without the "
                   f"{overhead:.0%} interruption overhead the advice adds to spot)." if row['excess_on'] == Purchase.SPOT
                   else "(usage already covered by commitments, or billed below the rates given)."))
    if cls == "idle":
        return (f"{where}: whole instances nobody used ({demand}). Terminate idle instances "
                "(see find_idle) rather than commit to them.")
    if cls == "unattributed":
        return (f"{where}: instances billed without GPU telemetry ({demand}). Classify their workloads "
                "before committing; stay on demand meanwhile.")
    if cls == "development":
        return (f"{where}: interactive sessions ({demand}) belong on demand with idle shutdown; "
                f"today {_money(row['monthly_today'])}/month.")
    spot_words = ""
    if row['excess_on'] == Purchase.SPOT:
        spot_words = (f" Interruptible work runs on spot at {_rate(row['excess_rate'])}/{unit}-hour "
                      f"including a {overhead:.0%} interruption overhead (on demand {_rate(row['on_demand_rate'])}).")
    if row['purchase'] in COMMITMENT_KINDS:
        term = f"{row['term_years']:g}-year {str(row['payment']).replace('_', '-')} {_KIND_WORDS[row['purchase']]}"
        peak_words = " (not sized to its peaks: training is bursty)" if cls == "training" else ""
        what = (f"{row['buy']} (about {row['level']:.2f} {units} at {_rate(row['rate'])}/{unit}-hour)"
                if row['buy'].startswith("$") else f"{row['buy']} at {_rate(row['rate'])}/{unit}-hour")
        return (f"{where}: {demand}. Buy {what}{peak_words} with a {term} "
                f"against {_rate(row['excess_rate'])} for the rest: it pays off above "
                f"{row['break_even_utilization']:.0%} use and would be used {row['expected_utilization']:.0%} of the time, "
                f"covering {row['coverage']:.0%} of the demand left to buy for. Expected "
                f"{_money(row['monthly_recommended'])}/month against {_money(row['monthly_if_unchanged'])} today "
                f"(saves {_money(row['savings_vs_today'])}). Risk: in the worst week "
                f"{row['risk_worst_week_unused_share']:.0%} of it ({_money(row['risk_worst_week_unused_cost'])}) sits "
                f"unused; with demand -{sensitivity:.0%} it saves {_money(row['savings_if_demand_down'])}/month, "
                f"+{sensitivity:.0%} {_money(row['savings_if_demand_up'])}.{spot_words}")
    if cls == "training":
        return (f"{where}: bursty training ({demand}): no reserved capacity; no flexible commitment beats "
                f"{'spot' if row['excess_on'] == 'spot' else 'on demand'} here.{spot_words} Expected "
                f"{_money(row['monthly_recommended'])}/month against {_money(row['monthly_if_unchanged'])} today.")
    return (f"{where}: {demand}; no commitment option beats on demand for this curve (too variable, already "
            f"covered, or no rates for it). Expected {_money(row['monthly_recommended'])}/month against "
            f"{_money(row['monthly_if_unchanged'])} today.{spot_words}")
