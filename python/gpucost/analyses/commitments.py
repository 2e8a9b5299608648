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

from gpucost import _core
from gpucost.catalog import instance_types
from gpucost.analyses._tables import NANOS_PER_HOUR, frame, instant_ns, instants_ns, row_error, strings, table, to_utc
from gpucost.analyses.classes import workload_classes
from gpucost.analyses.demand import _hourly_demand, instance_family
from gpucost.errors import InvalidInputError

__all__ = ["advise_commitments", "amortize", "COMMITMENT_KINDS", "HOURS_PER_MONTH"]

HOURS_PER_MONTH = 730.0
COMMITMENT_KINDS = ("reserved", "savings_plan", "cud")
KINDS = ("on_demand", "spot", *COMMITMENT_KINDS)
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

    Example:
        >>> gpucost.amortize(4380.00, 0.50, 1, "2023-01-01").loc[0, "total"]   # FOCUS scenario: 1.00/h
        744.0
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
        r["flexible"] = r["flexible"].fillna(r["kind"] == "savings_plan").astype(bool)
    else:
        r["flexible"] = r["kind"] == "savings_plan"
    label = r["kind"] + np.where(commitment, " " + pd.Series(years).fillna(0).astype(int).astype(str) + "y " +
                                 r["payment"].astype(str), "")
    r["option"] = r["option"].fillna(label) if "option" in r else label
    r["row"] = np.arange(len(r))
    for kind in ("on_demand", "spot"):
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
                       hours_per_month: float = HOURS_PER_MONTH, detail: bool = False) -> pd.DataFrame:
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

    Example:
        >>> advice = gpucost.advise_commitments(costs, usage, inventory, workloads, rates=rates)
        >>> advice[["instance_type", "class", "purchase", "level", "savings_vs_today", "reason"]]
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

    hourly, lines = _hourly_demand(costs, usage, inventory, workloads, by=["consumer"], interval=interval)
    cat = _catalog_columns(catalog)

    # The class of every row.
    consumers = hourly["consumer"]
    workload_rows = ~consumers.isin(["__idle__", "__unattributed__"])
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
    units = hourly["instance_hours"] * (gpus if unit == "GPU" else 1.0)

    # Demand curves on one hourly grid.
    period = instants_ns(hourly, "hourly", "period")
    if len(period) == 0:
        raise InvalidInputError("costs: no usage line of a GPU instance type (nothing to advise on)")
    first = period.min()
    hours = int((period.max() - first) // NANOS_PER_HOUR + 1)
    keys = pd.MultiIndex.from_arrays([group.to_numpy(object), cls.to_numpy(object)], names=[group_by, "class"])
    curve_of, curve_keys = pd.factorize(keys, sort=True)
    demand = np.zeros((len(curve_keys), hours))
    np.add.at(demand, (curve_of, (period - first) // NANOS_PER_HOUR), units.to_numpy(np.float64))
    demand = np.maximum(demand, 0.0)
    money = np.bincount(curve_of, weights=hourly["cost"].to_numpy(np.float64), minlength=len(curve_keys))
    # A class with neither instance-hours nor money (the __idle__ rows of a
    # fleet nobody left idle) has nothing to advise on.
    keep = (demand.max(axis=1) > 0) | (money != 0)
    demand, money, curve_keys = demand[keep], money[keep], curve_keys[keep]

    on_demand = _on_demand_rates(lines, option_rates, cat, group_by, unit, inventory)
    spot = option_rates[option_rates["kind"] == "spot"].set_index(group_by)["rate"]
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
    curves["excess_on"] = np.where(use_spot, "spot", "on_demand")

    options = curves.merge(commitments, on=group_by, how="inner")
    options = options[[k in allowed_kinds.get(c, ()) for k, c in zip(options["kind"], options["class"])]]
    options = options[(options["class"] != "training") | options["flexible"]]
    baseline = curves.assign(option=np.where(use_spot, "spot", "on_demand"), kind=curves["excess_on"],
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
    whole = np.tile(candidates["kind"].isin(["reserved", "cud"]).to_numpy(np.uint8), len(plan))
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
                        "mean_demand": demand.mean(axis=1), "peak_demand": demand.max(axis=1)})
    out["purchase"] = chosen["kind"].to_numpy(object)
    out["option"] = chosen["option"].to_numpy(object)
    out["term_years"] = chosen["term_years"].to_numpy(np.float64)
    out["payment"] = chosen["payment"].to_numpy(object)
    out["level"] = chosen["level"].to_numpy(np.float64)
    committed = ~chosen["is_baseline"].to_numpy()
    out["rate"] = np.where(committed, chosen["rate"], np.nan)
    out["excess_rate"] = curves["r_x"]
    out["excess_on"] = curves["excess_on"]
    out["on_demand_rate"] = curves["r_o"]
    out["commitment_per_hour"] = np.where(committed, chosen["rate"] * chosen["level"], 0.0)
    out["upfront_total"] = np.where(committed, chosen["upfront"] * chosen["level"], 0.0)
    out["monthly_today"] = money / t * per_month
    out["monthly_on_demand"] = out["mean_demand"] * curves["r_o"] * per_month
    out["monthly_recommended"] = chosen["monthly"].to_numpy(np.float64)
    out["savings_vs_today"] = out["monthly_today"] - out["monthly_recommended"]
    out["savings_vs_on_demand"] = out["monthly_on_demand"] - out["monthly_recommended"]
    out["savings_pct"] = (out["savings_vs_today"] / out["monthly_today"]).where(out["monthly_today"] > 0)
    out["break_even_utilization"] = np.where(committed, chosen["rate"] / curves["r_x"], np.nan)
    out["expected_utilization"] = np.where(committed, chosen["utilization"], np.nan)
    out["coverage"] = np.where(committed, chosen["coverage"], 0.0)
    out["risk_worst_week_unused_share"] = np.where(committed, chosen["risk_share"], 0.0)
    out["risk_worst_week_unused_cost"] = np.where(committed, chosen["risk_cost"], 0.0)
    out["savings_if_demand_down"] = (chosen["baseline_down"] - chosen["monthly_down"]).to_numpy(np.float64)
    out["savings_if_demand_up"] = (chosen["baseline_up"] - chosen["monthly_up"]).to_numpy(np.float64)
    out["level_if_demand_down"] = np.where(committed, chosen["level_down"], 0.0)
    out["level_if_demand_up"] = np.where(committed, chosen["level_up"], 0.0)
    out["reason"] = [_reason(row, group_by, interruption_overhead, sensitivity) for row in out.to_dict("records")]
    out.attrs = {"sensitivity": sensitivity, "hours_per_month": per_month, "window_start": str(to_utc([first])[0]),
                 "window_hours": hours}
    if not detail:
        return out
    options_out = candidates.rename(columns={"kind": "purchase"})
    options_out["recommended"] = False
    key = options_out["curve"].astype(str) + "|" + options_out["option"].astype(str) + "|" + \
        options_out["rate"].astype(str)
    chosen_key = chosen.index.astype(str) + "|" + chosen["option"].astype(str) + "|" + chosen["rate"].astype(str)
    options_out["recommended"] = key.isin(chosen_key)
    options_out["savings_vs_baseline"] = options_out["baseline_monthly"] - options_out["monthly"]
    return options_out[[group_by, "class", "option", "purchase", "term_years", "payment", "rate", "upfront",
                        "excess_on", "r_x", "level", "monthly", "baseline_monthly", "savings_vs_baseline",
                        "utilization", "coverage", "risk_share", "risk_cost", "recommended"]].rename(
        columns={"r_x": "excess_rate", "monthly": "monthly_cost", "baseline_monthly": "monthly_baseline",
                 "risk_share": "risk_worst_week_unused_share", "risk_cost": "risk_worst_week_unused_cost"}
    ).sort_values([group_by, "class", "monthly_cost"], ignore_index=True)


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
        gpus = lines["resource_id"].map(gpus_per_resource(inventory)).astype(np.float64)
        if "gpus" in cat:
            gpus = gpus.fillna(pd.to_numeric(lines["instance_type"].map(cat["gpus"]), errors="coerce"))
        lines["units"] = lines["hours"] * gpus
    else:
        lines["units"] = lines["hours"]
    priced = lines[np.isfinite(lines["list_cost"]) & (lines["list_cost"] > 0) & (lines["units"] > 0)]
    sums = priced.groupby("group")[["list_cost", "units"]].sum()
    observed = sums["list_cost"] / sums["units"]
    given = rates[rates["kind"] == "on_demand"].set_index(group_by)["rate"]
    out = given.combine_first(observed)
    if "on_demand_hourly" in cat:
        price = pd.to_numeric(cat["on_demand_hourly"], errors="coerce")
        if unit == "GPU":
            price = price / pd.to_numeric(cat.get("gpus", np.nan), errors="coerce")
        by_type = lines.drop_duplicates("instance_type").set_index("instance_type")["group"]
        listed = pd.Series(price.reindex(by_type.index).to_numpy(), index=by_type.to_numpy()).dropna()
        out = out.combine_first(listed.groupby(level=0).mean())
    return out.dropna()


_KIND_WORDS = {"reserved": "reservation", "savings_plan": "savings plan", "cud": "committed use discount"}


def _rate(x: float) -> str:
    return "$" + f"{x:,.4f}".rstrip("0").rstrip(".")


def _money(x: float) -> str:
    return f"${x:,.2f}" if abs(x) < 100 else f"${x:,.0f}"


def _reason(row: dict, group_by: str, overhead: float, sensitivity: float) -> str:
    """The advice of one output row in words."""
    group, cls, unit = row[group_by], row['class'], row['unit']
    units = "instances" if unit == "instance" else "GPUs"
    where = f"{cls} on {group}"
    demand = f"mean {row['mean_demand']:.2f} {units}/h, peak {row['peak_demand']:.2f}"
    if row['hours'] == 0 or row['peak_demand'] <= 0:
        return f"{where}: no demand in the window; nothing to buy."
    if cls == "idle":
        return (f"{where}: capacity nobody used ({demand}). Terminate idle instances "
                "(see find_idle) rather than commit to them.")
    if cls == "unattributed":
        return (f"{where}: instances billed without GPU telemetry ({demand}). Classify their workloads "
                "before committing; stay on demand meanwhile.")
    if cls == "development":
        return (f"{where}: interactive sessions ({demand}) belong on demand with idle shutdown; "
                f"today {_money(row['monthly_today'])}/month.")
    spot_words = ""
    if row['excess_on'] == "spot":
        spot_words = (f" Interruptible work runs on spot at {_rate(row['excess_rate'])}/{unit}-hour "
                      f"including a {overhead:.0%} interruption overhead (on demand {_rate(row['on_demand_rate'])}).")
    if row['purchase'] in COMMITMENT_KINDS:
        term = f"{row['term_years']:g}-year {str(row['payment']).replace('_', '-')} {_KIND_WORDS[row['purchase']]}"
        peak_words = " (not sized to its peaks: training is bursty)" if cls == "training" else ""
        count = f"{row['level']:g} {units[:-1] if row['level'] == 1 else units}"
        per_hour = f" ({_money(row['commitment_per_hour'])} an hour)" if row['purchase'] == "savings_plan" else ""
        return (f"{where}: {demand}. Commit to {count}{peak_words} with a {term}{per_hour} at "
                f"{_rate(row['rate'])}/{unit}-hour against {_rate(row['excess_rate'])} for the rest: it pays off above "
                f"{row['break_even_utilization']:.0%} use and would be used {row['expected_utilization']:.0%} of the time, "
                f"covering {row['coverage']:.0%} of demand. Expected {_money(row['monthly_recommended'])}/month against "
                f"{_money(row['monthly_today'])} today (saves {_money(row['savings_vs_today'])}). Risk: in the worst week "
                f"{row['risk_worst_week_unused_share']:.0%} of it ({_money(row['risk_worst_week_unused_cost'])}) sits "
                f"unused; with demand -{sensitivity:.0%} it saves {_money(row['savings_if_demand_down'])}/month, "
                f"+{sensitivity:.0%} {_money(row['savings_if_demand_up'])}.{spot_words}")
    if cls == "training":
        return (f"{where}: bursty training ({demand}): no reserved capacity; no flexible commitment beats "
                f"{'spot' if row['excess_on'] == 'spot' else 'on demand'} here.{spot_words} Expected "
                f"{_money(row['monthly_recommended'])}/month against {_money(row['monthly_today'])} today.")
    return (f"{where}: {demand}; no commitment option beats on demand for this curve (too variable, or no rates "
            f"for it). Expected {_money(row['monthly_recommended'])}/month against {_money(row['monthly_today'])} today."
            f"{spot_words}")
