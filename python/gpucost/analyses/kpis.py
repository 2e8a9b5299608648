"""The KPI table per period (day) and team (docs/analyses.md, "KPIs")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import allocate
from gpucost.analyses._common import (
    NS_PER_S,
    UNLABELLED,
    attach_labels,
    check_freq,
    datetime_ns,
    device_time_usage,
    floor_ns,
    labels_frame,
    optional_instants_ns,
    price_device_time,
    strings,
    to_datetime,
)
from gpucost.analyses.idle import EXEMPT_VALUES, find_idle
from gpucost.analyses.profile import usage_profile
from gpucost.errors import InvalidInputError
from gpucost.frames import Table

__all__ = ["kpis", "queue_waits"]

_SOURCE = "utilization_source"

_MIN = np.iinfo(np.int64).min


def queue_waits(queue: Any, workloads: Any = None, *, by: Sequence[str] = ("team",), freq: str = "D") -> pd.DataFrame:
    """Queue waiting time per period (of the start) and group: ``jobs_started,
    queue_wait_p50_min, queue_wait_p90_min, queue_wait_max_min``.

    ``queue``: one row per job or pod with ``submitted`` and ``started``
    instants (Slurm Submit/Start, Kubernetes creationTimestamp/startTime) and
    either the ``by`` columns or a ``consumer`` to look them up in
    ``workloads``. Rows not started yet (no ``started``) are left out and
    counted in ``attrs["not_started"]``; a start before the submission is an
    error naming the row.

    Examples:
        >>> queue = pd.DataFrame({
        ...     "consumer": ["j1", "j2", "j3", "j4"], "team": ["nlp", "nlp", "vision", "vision"],
        ...     "submitted": pd.to_datetime(["2026-03-02 09:00", "2026-03-02 09:30", "2026-03-02 10:00",
        ...                                  "2026-03-02 11:00"], utc=True),
        ...     "started": pd.to_datetime(["2026-03-02 09:05", "2026-03-02 10:30", "2026-03-02 10:02", None], utc=True)})
        >>> waits = gpucost.queue_waits(queue, by=["team"])
        >>> waits
                             period    team  jobs_started  queue_wait_p50_min  queue_wait_p90_min  queue_wait_max_min
        0 2026-03-02 00:00:00+00:00     nlp             2                32.5                54.5                60.0
        1 2026-03-02 00:00:00+00:00  vision             1                 2.0                 2.0                 2.0
        >>> waits.attrs["not_started"]
        1
    """
    check_freq(freq)
    by = list(by)
    t = Table(queue, "queue")
    submitted = optional_instants_ns(t, "submitted")
    started = optional_instants_ns(t, "started")
    if (submitted == _MIN).any():
        raise t._first_bad_row("submitted", submitted == _MIN, "missing instant")
    begun = started != _MIN
    bad = begun & (started < submitted)
    if bad.any():
        raise t._first_bad_row("started", bad, "before 'submitted'")
    q = pd.DataFrame({"wait_min": (started - submitted) / (60 * NS_PER_S),
                      "period": to_datetime(np.where(begun, floor_ns(np.where(begun, started, 0), freq), _MIN))})
    labels = labels_frame(workloads)
    for c in [c for c in by if c != "period"]:
        if t.has(c):
            q[c] = strings(t, c)
        elif t.has("consumer") and c in labels.columns:
            q["consumer_"] = strings(t, "consumer")
            q = attach_labels(q, labels, consumer="consumer_", columns=[c], nobody=UNLABELLED).drop(
                columns=["consumer_"])
        elif t.has("consumer") and c == "consumer":
            q[c] = strings(t, "consumer")
        else:
            raise InvalidInputError(f"queue: missing required column '{c}' (or 'consumer' with workloads)")
    q = q[begun]
    keys = ["period", *[c for c in by if c != "period"]]
    out = q.groupby(keys, sort=True)["wait_min"].agg(
        jobs_started="size", queue_wait_p50_min="median",
        queue_wait_p90_min=lambda s: float(np.quantile(s, 0.9)), queue_wait_max_min="max").reset_index()
    out.attrs["not_started"] = int((~begun).sum())
    return out


def kpis(usage: Any, costs: Any, inventory: Any, workloads: Any = None, *, by: Sequence[str] = ("team",),
         freq: str = "D", threshold: float = 0.05, window: Any = "2h", resolution: Any = "1min",
         interval: float = 60, mem_pressure: float = 0.85, queue: Any = None,
         exempt_label: str | None = "idle_exempt", exempt_values: Sequence[str] = EXEMPT_VALUES) -> pd.DataFrame:
    """One row per period (``freq``, default UTC day) and group of ``by``
    (consumer and/or workload labels; ``__idle__`` for GPU time nobody held):

    - ``gpu_hours``, ``effective_gpu_hours``, ``cost``,
      ``cost_per_effective_gpu_hour``: from :func:`gpucost.allocate` by
      ``[*by, "period"]`` (a line counts in the period where it starts);
    - ``avg_util``: effective / held GPU-hours over the period (the 24 h
      average for daily rows), and ``avg_util_1h_min`` / ``avg_util_1h_max``:
      the lowest and highest hourly average in it;
    - ``idle_gpu_hours``: GPU-hours of :func:`find_idle` spans (not exempt)
      the group held, or nobody held (``__idle__``), in the period;
    - ``memory_pressure_hours``: GPU-hours with memory use at or above
      ``mem_pressure`` (85 %) of the memory of the group's share of a device
      (:func:`gpucost.usage_profile`; a sample counts where it starts);
    - with ``queue`` (see :func:`queue_waits`, or workloads carrying
      ``submitted`` and ``started``): ``jobs_started, queue_wait_p50_min,
      queue_wait_p90_min, queue_wait_max_min`` for jobs started in the period.

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
        >>> daily = gpucost.kpis(usage, costs, inventory, workloads, by=["team"])
        >>> daily[["period", "team", "gpu_hours", "avg_util", "idle_gpu_hours", "cost", "cost_per_effective_gpu_hour"]]
                             period      team  gpu_hours  avg_util  idle_gpu_hours   cost  cost_per_effective_gpu_hour
        0 2026-03-02 00:00:00+00:00  __idle__        4.0       0.0             4.0  4.024                          NaN
        1 2026-03-02 00:00:00+00:00  research        2.0       0.9             0.0  2.012                     1.117778
    """
    check_freq(freq)
    by = [b for b in by if b != "period"]
    keys = ["period", *by]
    # GPU time whose utilisation is assumed (workloads with
    # utilization_source "assumed": Slurm jobs without telemetry) is counted
    # apart and kept out of avg_util and cost per effective GPU-hour.
    has_source = workloads is not None and _SOURCE not in by and Table(workloads, "workloads").has(_SOURCE)
    source = _SOURCE if has_source else None
    split = [source] if source else []
    daily = allocate(costs, usage, inventory, workloads, by=[*by, "period", *split], freq=freq, interval=interval)
    daily, assumed = _measured_and_assumed(daily, keys, source)
    out = daily[[*keys, "gpu_hours", "effective_gpu_hours", "cost"]].copy()
    out["assumed_gpu_hours"] = assumed["gpu_hours"].to_numpy()
    out["measured_gpu_hours"] = out["gpu_hours"] - out["assumed_gpu_hours"]
    m_eff = out["effective_gpu_hours"] - assumed["effective_gpu_hours"].to_numpy()
    m_cost = out["cost"] - assumed["cost"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["cost_per_effective_gpu_hour"] = np.where(m_eff > 0, m_cost / m_eff, np.nan)
        out["avg_util"] = np.where(out["measured_gpu_hours"] > 1e-12, m_eff / out["measured_gpu_hours"], np.nan)
    out["utilization_source"] = np.where(out["assumed_gpu_hours"] <= 1e-12, "measured",
                                         np.where(out["measured_gpu_hours"] <= 1e-12, "assumed", "mixed"))
    hourly = allocate(costs, usage, inventory, workloads, by=[*by, "period", *split], freq="h", interval=interval)
    if source:
        hourly = hourly[hourly[source].astype(str) != "assumed"]
        hourly = hourly.groupby(keys, sort=True, dropna=False)[["gpu_hours", "effective_gpu_hours"]].sum().reset_index()
    hourly = hourly[hourly["gpu_hours"] > 0]
    hourly = hourly.assign(util=hourly["effective_gpu_hours"] / hourly["gpu_hours"],
                           period=to_datetime(floor_ns(datetime_ns(hourly["period"]), freq)))
    util = hourly.groupby(keys, sort=True)["util"].agg(avg_util_1h_min="min", avg_util_1h_max="max")
    out = out.join(util, on=keys)

    report = find_idle(usage, costs, inventory, workloads, threshold, window, resolution=resolution,
                       interval=interval, exempt_label=exempt_label, exempt_values=exempt_values)
    spans = report.spans[report.spans["kind"] != "exempt"].reset_index(drop=True)
    key = np.char.add("span-", np.arange(len(spans)).astype(str)).astype(object)
    usage_idle = device_time_usage(spans["resource_id"].to_numpy(), spans["device"].to_numpy(),
                                   datetime_ns(spans["start"]), datetime_ns(spans["end"]), key)
    priced = price_device_time(costs, inventory, usage_idle, freq=freq)
    mine = priced[priced["consumer"].str.startswith("span-")]
    idx = mine["consumer"].str.slice(5).astype(np.int64).to_numpy()
    idle = pd.DataFrame({"period": mine["period"].to_numpy(), "holder": spans["consumer"].to_numpy()[idx],
                         "idle_gpu_hours": mine["gpu_hours"].to_numpy()})
    idle = _group_by_holder(idle, "holder", by, labels_frame(workloads))
    out = _merge(out, idle.groupby(keys, sort=True)["idle_gpu_hours"].sum(), keys)

    prof = usage_profile(usage, inventory, workloads, fields=[], freq=freq, interval=interval,
                         mem_pressure=mem_pressure)
    if by == ["consumer"] or set(by) <= set(prof.columns):
        pressure = prof.groupby(keys, sort=True)["mem_pressure_gpu_hours"].sum().rename("memory_pressure_hours")
        out = _merge(out, pressure, keys)
    else:
        missing = sorted(set(by) - set(prof.columns))
        raise InvalidInputError(f"parameter 'by': unknown column {missing[0]!r} (give workloads with that label)")

    if queue is None and workloads is not None:
        wt = Table(workloads, "workloads")
        if wt.has("submitted") and wt.has("started"):
            queue = workloads
    if queue is not None:
        waits = queue_waits(queue, workloads, by=by, freq=freq)
        out = out.merge(waits, on=keys, how="outer")
        for c in ("gpu_hours", "effective_gpu_hours", "cost", "idle_gpu_hours", "memory_pressure_hours",
                  "measured_gpu_hours", "assumed_gpu_hours"):
            out[c] = out[c].fillna(0.0)
        out["utilization_source"] = out["utilization_source"].fillna("measured")
        out["jobs_started"] = out["jobs_started"].fillna(0).astype(np.int64)
    columns = [*keys, "gpu_hours", "effective_gpu_hours", "avg_util", "avg_util_1h_min", "avg_util_1h_max",
               "idle_gpu_hours", "cost", "cost_per_effective_gpu_hour", "memory_pressure_hours",
               "measured_gpu_hours", "assumed_gpu_hours", "utilization_source"]
    if queue is not None:
        columns += ["jobs_started", "queue_wait_p50_min", "queue_wait_p90_min", "queue_wait_max_min"]
    return out[columns].sort_values(keys, kind="stable").reset_index(drop=True)


def _measured_and_assumed(daily: pd.DataFrame, keys: list[str], source: str | None
                          ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The allocation summed over ``keys``, and the part of it whose
    utilisation is assumed, aligned row for row."""
    metrics = ["gpu_hours", "effective_gpu_hours", "cost"]
    if source is None:
        return daily, pd.DataFrame(0.0, index=daily.index, columns=metrics)
    total = daily.groupby(keys, sort=True, dropna=False)[metrics].sum()
    is_assumed = daily[source].astype(str).to_numpy() == "assumed"
    assumed = daily[is_assumed].groupby(keys, sort=True, dropna=False)[metrics].sum()
    return total.reset_index(), assumed.reindex(total.index, fill_value=0.0).reset_index(drop=True)


def _group_by_holder(frame: pd.DataFrame, holder: str, by: list[str], labels: pd.DataFrame) -> pd.DataFrame:
    """Label columns for rows keyed by a holding consumer ("" = nobody ->
    ``__idle__``, as gpucost.allocate labels idle time)."""
    label_cols = [c for c in by if c != "consumer"]
    missing = [c for c in label_cols if c not in labels.columns]
    if missing:
        raise InvalidInputError(f"parameter 'by': unknown column {missing[0]!r} (give workloads with that label)")
    out = attach_labels(frame, labels, consumer=holder, columns=label_cols, nobody="__idle__")
    if "consumer" in by:
        out["consumer"] = np.where(out[holder].to_numpy() == "", "__idle__", out[holder].to_numpy())
    return out


def _merge(out: pd.DataFrame, series: pd.Series, keys: list[str]) -> pd.DataFrame:
    """Adds a column by keys; groups only in `series` become rows too."""
    merged = out.merge(series.reset_index(), on=keys, how="outer")
    merged[series.name] = merged[series.name].fillna(0.0)
    for c in ("gpu_hours", "effective_gpu_hours", "cost"):
        merged[c] = merged[c].fillna(0.0)
    return merged
