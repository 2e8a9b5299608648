"""Unit economics: what a sample, an epoch or a million tokens cost
(docs/analyses.md, "Unit economics").

:func:`unit_costs` joins a units table to an allocation; :func:`vllm_tokens`
turns vLLM's Prometheus token counters into such a units table (counter
resets handled); :func:`token_costs` gives the cost per million input and
output tokens per model and team.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.analyses._common import (
    RESERVED,
    UNLABELLED,
    as_frame,
    attach_labels,
    check_freq,
    datetime_ns,
    floor_ns,
    instants_ns,
    is_allocation_metric,
    labels_frame,
    strings,
    to_datetime,
)
from gpucost.errors import InvalidInputError
from gpucost.frames import Table

__all__ = ["unit_costs", "vllm_tokens", "token_costs", "VLLM_COUNTERS"]

#: vLLM's Prometheus token counters and the unit each counts (with or
#: without the ``_total`` suffix Prometheus clients add to counters).
VLLM_COUNTERS = {
    "vllm:prompt_tokens_total": "input_tokens",
    "vllm:prompt_tokens": "input_tokens",
    "vllm:generation_tokens_total": "output_tokens",
    "vllm:generation_tokens": "output_tokens",
}


def _keys(alloc: pd.DataFrame) -> list[str]:
    return [c for c in alloc.columns if not is_allocation_metric(c)]


def _period_of(t: Table, freq: str | None, table: str) -> np.ndarray:
    if freq is None:
        raise InvalidInputError(f"parameter 'freq': required when grouping {table} by period (the allocation's freq)")
    column = "period" if t.has("period") else "timestamp"
    return floor_ns(instants_ns(t, column), freq)


def unit_costs(allocation: pd.DataFrame, units: Any, workloads: Any = None, *, by: Sequence[str] | None = None,
               freq: str | None = None) -> pd.DataFrame:
    """Cost per unit of work: the allocation's cost of each group over the
    units it produced.

    Args:
        allocation: a result of :func:`gpucost.allocate`.
        units: ``units`` (a non-negative number), ``unit`` (its name:
            "samples", "epochs", "input_tokens", ...) and the group columns:
            ``consumer``, label columns (or ``consumer`` plus ``workloads`` to
            look the labels up), and ``timestamp`` or ``period`` when the
            allocation is by period.
        workloads: consumer -> labels, to label units rows by consumer.
        by: the groups; default the allocation's key columns except
            ``resource_id``.
        freq: the allocation's period freq ("h", "D", "MS") when by has
            ``period``; units are counted in the period of their timestamp.

    Returns:
        One row per group and unit: ``by..., unit, units, cost,
        cost_per_unit``. Each unit is set against the group's whole cost
        (a group's cost per input token and per output token are two views of
        the same money, not shares of it). ``attrs`` holds
        ``cost_without_units`` (cost of groups with no units rows) and
        ``units_without_cost`` (units rows whose group has no cost row; their
        cost is 0).

    Examples:
        An allocation by project (from :func:`gpucost.allocate`) and the
        epochs each project trained:

        >>> allocation = pd.DataFrame({"project": ["__idle__", "llm", "vision"], "cost": [10.0, 120.0, 30.0]})
        >>> units = pd.DataFrame({"project": ["llm", "vision", "vision"], "unit": "epochs", "units": [4.0, 2.0, 1.0]})
        >>> per_epoch = gpucost.unit_costs(allocation, units)
        >>> per_epoch
          project    unit  units   cost  cost_per_unit
        0     llm  epochs    4.0  120.0           30.0
        1  vision  epochs    3.0   30.0           10.0
        >>> per_epoch.attrs["cost_without_units"]   # __idle__ made no epoch
        10.0
    """
    alloc = as_frame(allocation, "allocation")
    keys = _keys(alloc)
    by = [k for k in keys if k != "resource_id"] if by is None else list(by)
    missing = [c for c in by if c not in keys]
    if missing:
        raise InvalidInputError(f"parameter 'by': {missing[0]!r} is not a key column of the allocation {keys}")
    check_freq(freq)
    t = Table(units, "units")
    amount = t.floats("units")
    bad = ~np.isfinite(amount) | (amount < 0)
    if bad.any():
        raise t._first_bad_row("units", bad, f"{amount[bad][0]} is not a non-negative number")
    name = strings(t, "unit")
    if (name == "").any():
        raise t._first_bad_row("unit", name == "", "missing unit name")
    u = pd.DataFrame({"unit": name, "units": amount})
    labels = labels_frame(workloads) if workloads is not None else None
    for c in by:
        if c == "period":
            u["period"] = to_datetime(_period_of(t, freq, "units"))
        elif t.has(c):
            u[c] = strings(t, c)
        elif labels is not None and t.has("consumer") and c in labels.columns:
            u["consumer_"] = strings(t, "consumer")
            u = attach_labels(u, labels, consumer="consumer_", columns=[c], nobody=UNLABELLED).drop(
                columns=["consumer_"])
        else:
            raise InvalidInputError(f"units: missing required column '{c}' (or 'consumer' with workloads)")
    per_unit = u.groupby([*by, "unit"], sort=True)["units"].sum().reset_index()
    groups = alloc[by].copy()
    for c in by:
        if c != "period":
            groups[c] = groups[c].astype(str)
    groups["cost"] = alloc["cost"].to_numpy()
    cost = groups.groupby(by, sort=True)["cost"].sum().reset_index()
    out = per_unit.merge(cost, on=by, how="left", indicator=True)
    units_without_cost = int((out["_merge"] == "left_only").sum())
    out = out.drop(columns="_merge")
    out["cost"] = out["cost"].fillna(0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["cost_per_unit"] = np.where(out["units"] > 0, out["cost"] / out["units"], np.nan)
    covered = cost.merge(per_unit[by].drop_duplicates(), on=by, how="left", indicator=True)
    out.attrs["cost_without_units"] = float(covered.loc[covered["_merge"] == "left_only", "cost"].sum())
    out.attrs["units_without_cost"] = units_without_cost
    return out


def _consumer_column(t: Table, consumer: str | Sequence[str] | None) -> np.ndarray:
    if consumer is None:
        consumer = "consumer" if t.has("consumer") else ("namespace", "pod")
    if isinstance(consumer, str):
        return strings(t, consumer)
    parts = [strings(t, c) for c in consumer]
    out = parts[0].astype(str)
    for p in parts[1:]:
        out = np.char.add(np.char.add(out.astype(str), "/"), p.astype(str))
    return out.astype(object)


def vllm_tokens(counters: Any, *, consumer: str | Sequence[str] | None = None, model: str = "model_name",
                metric: str | None = None) -> pd.DataFrame:
    """Token counts from vLLM's Prometheus counters, as a units table.

    Args:
        counters: one row per counter sample: ``timestamp``, ``value``, the
            metric name (column ``metric`` or ``__name__``) and labels. Rows of
            other metrics are counted in ``attrs["rows_ignored"]``. Parsing
            Prometheus responses is the telemetry readers' job; this takes
            their table.
        consumer: the column naming the workload, or columns joined with "/"
            (default ``consumer`` when present, else ``namespace``/``pod``, the
            consumer spelling of the DCGM readers).
        model: the model label (vLLM's ``model_name``).

    Returns:
        ``consumer, model, timestamp, units, unit`` (``input_tokens`` from
        ``vllm:prompt_tokens_total``, ``output_tokens`` from
        ``vllm:generation_tokens_total``): the increase of each series (metric
        and every label) from one sample to the next. A drop means the counter
        was reset (the server restarted) and counts as an increase of the new
        value, as Prometheus' ``increase()`` does; a series' first sample is
        its baseline. Zero increases are left out.

    Examples:
        Three scrapes of one vLLM pod's counters; the generation counter
        restarted from 0 between the last two:

        >>> ts = pd.to_datetime(["2026-03-02 10:00", "2026-03-02 11:00", "2026-03-02 12:00"], utc=True)
        >>> counters = pd.DataFrame({
        ...     "timestamp": np.tile(ts, 2), "namespace": "serve", "pod": "llama-0", "model_name": "llama-3-8b",
        ...     "metric": np.repeat(["vllm:prompt_tokens_total", "vllm:generation_tokens_total"], 3),
        ...     "value": [0.0, 4.0e6, 9.0e6, 0.0, 1.0e6, 500.0]})
        >>> gpucost.vllm_tokens(counters)
                consumer       model                 timestamp      units           unit
        0  serve/llama-0  llama-3-8b 2026-03-02 11:00:00+00:00  4000000.0   input_tokens
        1  serve/llama-0  llama-3-8b 2026-03-02 12:00:00+00:00  5000000.0   input_tokens
        2  serve/llama-0  llama-3-8b 2026-03-02 11:00:00+00:00  1000000.0  output_tokens
        3  serve/llama-0  llama-3-8b 2026-03-02 12:00:00+00:00      500.0  output_tokens
    """
    t = Table(counters, "counters")
    metric = metric or ("metric" if t.has("metric") else "__name__")
    names = strings(t, metric)
    unit = pd.Series(names).map(VLLM_COUNTERS).to_numpy()
    keep = pd.notna(unit)
    value = t.floats("value")
    bad = keep & (~np.isfinite(value) | (value < 0))
    if bad.any():
        raise t._first_bad_row("value", bad, f"{value[bad][0]} is not a counter value")
    ts = instants_ns(t, "timestamp")
    who = _consumer_column(t, consumer)
    mdl = strings(t, model) if t.has(model) else np.full(len(t), "", dtype=object)
    series_cols = [c for c in t.columns if c not in ("timestamp", "value")]
    series = pd.DataFrame({c: strings(t, c) for c in series_cols})
    frame = pd.DataFrame({"_series": series.groupby(series_cols, sort=False, dropna=False).ngroup().to_numpy()
                          if series_cols else 0,
                          "timestamp": ts, "value": value, "consumer": who, "model": mdl, "unit": unit})
    frame = frame[keep].sort_values(["_series", "timestamp"], kind="stable")
    diff = frame.groupby("_series")["value"].diff().to_numpy()
    v = frame["value"].to_numpy()
    increase = np.where(np.isnan(diff), 0.0, np.where(diff < 0, v, diff))
    out = pd.DataFrame({"consumer": frame["consumer"].to_numpy(), "model": frame["model"].to_numpy(),
                        "timestamp": to_datetime(frame["timestamp"].to_numpy()), "units": increase,
                        "unit": frame["unit"].to_numpy()})
    resets = int((diff < 0).sum())
    out = out[out["units"] > 0].reset_index(drop=True)
    out.attrs["rows_ignored"] = int((~keep).sum())
    out.attrs["counter_resets"] = resets
    out.attrs["series"] = int(frame["_series"].nunique())
    out.attrs["consumers_models"] = frame[["consumer", "model"]].drop_duplicates().reset_index(drop=True)
    return out


def token_costs(allocation: pd.DataFrame, counters: Any, workloads: Any = None, *,
                by: Sequence[str] = ("model", "team"), freq: str | None = None,
                consumer: str | Sequence[str] | None = None, model: str = "model_name") -> pd.DataFrame:
    """Cost per million input and output tokens per model and team (or any
    ``by`` of ``model``, ``consumer``, ``period`` and workload labels).

    Every serving pod's allocated cost (idle serving time included) goes to
    the model(s) it served, split by its tokens when it served several
    (evenly when it served none in the range); tokens come from
    :func:`vllm_tokens`. ``allocation`` must be by ``consumer`` (and
    ``period`` with ``freq``, tokens then counted in the period of their
    sample).

    Returns:
        ``by..., input_tokens, output_tokens, cost,
        cost_per_million_input_tokens, cost_per_million_output_tokens``;
        ``attrs["cost_without_tokens"]``: cost of consumers with no vLLM
        counters (not in the table).

    Examples:
        The serving pod's allocated cost over the tokens of
        :func:`vllm_tokens`'s example:

        >>> ts = pd.to_datetime(["2026-03-02 10:00", "2026-03-02 11:00", "2026-03-02 12:00"], utc=True)
        >>> counters = pd.DataFrame({
        ...     "timestamp": np.tile(ts, 2), "namespace": "serve", "pod": "llama-0", "model_name": "llama-3-8b",
        ...     "metric": np.repeat(["vllm:prompt_tokens_total", "vllm:generation_tokens_total"], 3),
        ...     "value": [0.0, 4.0e6, 9.0e6, 0.0, 1.0e6, 500.0]})
        >>> allocation = pd.DataFrame({"consumer": ["__idle__", "serve/llama-0"], "cost": [5.0, 25.0]})
        >>> workloads = pd.DataFrame({"consumer": ["serve/llama-0"], "team": ["chat"]})
        >>> gpucost.token_costs(allocation, counters, workloads)[["model", "team", "input_tokens", "output_tokens",
        ...                                                        "cost_per_million_output_tokens"]]
                model  team  input_tokens  output_tokens  cost_per_million_output_tokens
        0  llama-3-8b  chat     9000000.0      1000500.0                       24.987506
    """
    alloc = as_frame(allocation, "allocation")
    if "consumer" not in alloc.columns:
        raise InvalidInputError("allocation: missing required column 'consumer' (allocate by consumer)")
    by = list(by)
    time_keys = ["period"] if "period" in alloc.columns else []
    if time_keys:
        check_freq(freq)
        if freq is None:
            raise InvalidInputError("parameter 'freq': required when the allocation is by period")
    tokens = vllm_tokens(counters, consumer=consumer, model=model)
    pairs = tokens.attrs["consumers_models"]
    # Each consumer's weight per model: its share of the consumer's tokens.
    total = tokens.groupby(["consumer", "model"])["units"].sum()
    w = pairs.join(total.rename("tokens"), on=["consumer", "model"]).fillna({"tokens": 0.0})
    per_consumer = w.groupby("consumer")["tokens"].transform("sum")
    count = w.groupby("consumer")["model"].transform("size")
    w["weight"] = np.where(per_consumer > 0, w["tokens"] / per_consumer.where(per_consumer > 0, 1.0), 1.0 / count)
    a = alloc[["consumer", *time_keys, "cost"]].copy()
    a["consumer"] = a["consumer"].astype(str)
    a = a[~a["consumer"].isin(RESERVED)]
    served = a["consumer"].isin(w["consumer"])
    cost_without_tokens = float(a.loc[~served, "cost"].sum())
    cost = a[served].merge(w[["consumer", "model", "weight"]], on="consumer")
    cost["cost"] = cost["cost"] * cost["weight"]
    tok = tokens.copy()
    if time_keys:
        tok["period"] = to_datetime(floor_ns(datetime_ns(tok["timestamp"]), freq))
    labels = labels_frame(workloads)
    label_cols = [c for c in by if c not in ("model", "consumer", "period")]
    for c in label_cols:
        if c not in labels.columns:
            raise InvalidInputError(f"parameter 'by': {c!r} is not a label column of the workloads table")
    cost = attach_labels(cost, labels, columns=label_cols, nobody=UNLABELLED)
    tok = attach_labels(tok, labels, columns=label_cols, nobody=UNLABELLED)
    keys = list(dict.fromkeys([*by, *time_keys]))
    units = tok.pivot_table(index=keys, columns="unit", values="units", aggfunc="sum", fill_value=0.0)
    for u in ("input_tokens", "output_tokens"):
        if u not in units.columns:
            units[u] = 0.0
    money = cost.groupby(keys)["cost"].sum()
    out = units[["input_tokens", "output_tokens"]].join(money, how="outer").fillna(0.0).reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["cost_per_million_input_tokens"] = np.where(out["input_tokens"] > 0,
                                                        out["cost"] / out["input_tokens"] * 1e6, np.nan)
        out["cost_per_million_output_tokens"] = np.where(out["output_tokens"] > 0,
                                                         out["cost"] / out["output_tokens"] * 1e6, np.nan)
    out.columns.name = None
    out.attrs["cost_without_tokens"] = cost_without_tokens
    return out.sort_values(keys, kind="stable").reset_index(drop=True)
