"""Idle GPUs: where the bill paid for GPUs nobody used, what it cost, and
what to do about it (docs/analyses.md, "Idle GPUs").

:func:`find_idle` returns the idle spans of every billed device, priced with
:func:`gpucost.allocate`; :func:`idle_policy` replays the seed policy (alert
below 5 % for 2 h, terminate 30 minutes later unless activity resumes) and
hands each decision to a callback of yours. gpucost never calls a cloud API.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpucost import _core
from gpucost.allocation import cost_columns, inventory_columns, usage_columns
from gpucost.allocation import allocate
from gpucost.analyses._common import (
    NS_PER_H,
    as_frame,
    attach_labels,
    device_time_usage,
    labels_frame,
    price_device_time,
    seconds,
    to_datetime,
)
from gpucost.analyses._tables import frame, instants_ns, strings
from gpucost.model import CostDriver, Purchase
from gpucost.errors import ROW_ERROR, InvalidInputError, JoinWarning, shift_rows
from gpucost.frames import str_isin, utilisation_measured
from gpucost.prometheus import to_ns
from gpucost.spill import UsageChunks

__all__ = ["IdleReport", "find_idle", "idle_policy", "EXEMPT_VALUES"]

#: Label values that mark a workload exempt (case-insensitive).
EXEMPT_VALUES = ("true", "yes", "1")
_ACTIONS = {"terminate": "terminate", "release": "release", "right-size": "right-size", "exempt": "none",
            "no-telemetry": "no telemetry", "down": "down", "power-down": "power down", "consolidate": "consolidate",
            "lend": "lend"}
# Hardware you own is never terminated: its idle spans get the owner's actions
# (docs/advisor.md, "Hardware you own").
_OWNER_KINDS = {"terminate": "power-down", "right-size": "consolidate", "release": "lend"}
# Kinds reported but never flagged: exempt workloads, billed time no sample covers
# (unobserved is not idle: nothing says the GPUs were free), and time the resource was
# down (maintenance, drained: docs/semantics.md, 10), which nobody could have used.
_NOT_FLAGGED = ("exempt", "no-telemetry", "down")


class IdleReport(NamedTuple):
    """What :func:`find_idle` returns.

    Attributes:
        findings: one row per idle span of one kind on one resource (devices
            with the same span and holders merged): ``resource_id, devices,
            gpus, start, end, hours, gpu_hours, mean_util, observed_share,
            unobserved, consumer, holders``, the workloads' labels, ``action,
            exempt, flagged, dollars_wasted`` [, ``list_dollars_wasted``],
            ``dollars_unobserved, dollars_power_saved``, sorted by dollars
            wasted. Billed time that
            no sample covers is a finding of its own with action ``"no
            telemetry"``: never flagged, its dollars in ``dollars_unobserved``
            (not wasted: nothing measured it).
        spans: the same spans one device at a time: ``span, resource_id,
            device, kind, busy_ns, observed_ns, dollars_wasted``
            [, ``list_dollars_wasted``], ``dollars_unobserved,
            dollars_power_saved, consumer``
            (main holder, "" for nobody), ``holders, start, end``, for your
            own grouping.
        daily: fleet KPIs per UTC day: ``period, idle_gpu_hours, idle_cost,
            exempt_gpu_hours, exempt_cost, unobserved_gpu_hours,
            unobserved_cost, gpu_spend, idle_share``.
        diagnostics: sample and device counts (see docs/analyses.md).

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
        >>> report = gpucost.find_idle(usage, costs, inventory, workloads)
        >>> report.daily[["period", "idle_gpu_hours", "idle_cost", "gpu_spend", "idle_share"]]
                             period  idle_gpu_hours  idle_cost  gpu_spend  idle_share
        0 2026-03-02 00:00:00+00:00             4.0      4.024      6.036    0.666667
        >>> report.spans[["resource_id", "device", "kind", "start", "end", "dollars_wasted"]]
          resource_id  device       kind                     start                       end  dollars_wasted
        0      i-0aaa       0  terminate 2026-03-02 02:00:00+00:00 2026-03-02 06:00:00+00:00           4.024
        >>> report.diagnostics["samples_no_consumer"]
        24
    """

    findings: pd.DataFrame
    spans: pd.DataFrame
    daily: pd.DataFrame
    diagnostics: dict


def _exempt_consumers(labels: pd.DataFrame, exempt_label: str | None, exempt_values: Sequence[str]) -> list[str]:
    if exempt_label is None or exempt_label not in labels.columns:
        return []
    wanted = {str(v).lower() for v in exempt_values}
    mask = labels[exempt_label].astype(str).str.lower().isin(wanted).to_numpy()
    return [str(c) for c in labels.loc[mask, "consumer"]]


def _run(usage, costs, inventory, workloads, threshold, window, resolution, interval, grace, exempt_label,
         exempt_values) -> tuple[dict, pd.DataFrame]:
    """The C++ idle pass. Usage kept in chunks is fed a chunk at a time, in
    time order (:meth:`UsageChunks.by_day` when the chunks may go back in
    time): the pass keeps a few windows of grid per resource, not the
    month. Anything else is one chunk."""
    labels = labels_frame(workloads)
    exempt = _exempt_consumers(labels, exempt_label, exempt_values)
    stream = _core.IdleStream(cost_columns(costs), inventory_columns(inventory), exempt, float(threshold),
                              seconds(window, "window"), seconds(resolution, "resolution"), float(interval),
                              seconds(grace, "grace"))
    unmeasured: set = set()
    if not isinstance(usage, UsageChunks):
        _add_chunk(stream, usage, unmeasured, 0, last=True)
    else:
        days = usage.by_day()
        try:
            seen = 0
            for chunk in days.tables():
                _add_chunk(stream, chunk, unmeasured, seen)
                seen += len(chunk)
        finally:
            if days is not usage:
                days.close()
    if unmeasured:
        warnings.warn(JoinWarning(
            f"{len(unmeasured):,} GPUs ({_first_gpus(unmeasured)}) have samples without a utilisation field "
            "(MIG instances without DCGM_FI_PROF_GR_ENGINE_ACTIVE, or telemetry with no utilisation metric): "
            "that time is left out of idle detection, neither idle nor busy (shown as no telemetry where a whole "
            "resource has none); export DCGM_FI_PROF_GR_ENGINE_ACTIVE to measure it"), stacklevel=3)
    return stream.finish(), labels


def _add_chunk(stream: Any, usage: Any, unmeasured: set, first_row: int, last: bool = False) -> None:
    """One chunk into the idle pass, its samples without a measured
    utilisation left out (:func:`_utilisation_measured`); a bad row is named
    as the usage counts it (from ``first_row``, the rows left out counted)."""
    kept, rows = _utilisation_measured(usage, unmeasured)
    try:
        stream.add(usage_columns(kept), last=last)
    except InvalidInputError as exc:
        match = ROW_ERROR.match(str(exc))
        if not match or match["table"] != "usage":
            raise
        row = int(match["row"])
        raise shift_rows(exc, "usage", first_row + (row if rows is None else int(rows[row])) - row) from None


def _utilisation_measured(usage: Any, unmeasured: set) -> tuple[Any, np.ndarray | None]:
    """The samples whose utilisation was measured (a reader's ``util_measured``
    column, where it has one: util 0 stands for "not measured" there, not
    for idle), and their rows in ``usage`` (None: every row); the GPUs of the
    others are added to ``unmeasured``. A pandas or Arrow table; anything
    else is passed on as it is."""
    if isinstance(usage, pd.DataFrame):
        measured = utilisation_measured(usage)
        if measured is None or measured.all():
            return usage, None
        missing = ~measured
        gone = usage.loc[missing, ["resource_id", "device"]].drop_duplicates()
        unmeasured.update(zip(gone["resource_id"].astype(str), gone["device"].astype(int)))
        return usage[~missing], np.flatnonzero(~missing)
    if not isinstance(usage, pa.Table) or "util_measured" not in usage.column_names:
        return usage, None  # gpucost's readers give pandas (or chunks of Arrow); other tables have no such column
    measured = pc.fill_null(usage.column("util_measured"), True)
    if pc.all(measured).as_py():
        return usage, None
    gone = usage.filter(pc.invert(measured)).select(["resource_id", "device"]).group_by(
        ["resource_id", "device"]).aggregate([])  # the GPUs, not a row per sample
    unmeasured.update(zip(map(str, gone.column(0).to_pylist()), map(int, gone.column(1).to_pylist())))
    return usage.filter(measured), np.flatnonzero(measured.to_numpy(zero_copy_only=False))


def _first_gpus(gpus: set) -> str:
    names = [f"{r} GPU {d}" for r, d in sorted(gpus)[:3]]
    return ", ".join(names) + (", ..." if len(gpus) > 3 else "")


def _device_spans(raw: dict) -> pd.DataFrame:
    """Spans one device per row (terminate spans expanded to every device)."""
    s = raw["spans"]
    names = np.asarray(raw["resource_names"], dtype=object)
    n = len(s["start"])
    per_span = np.where(s["device"] < 0, s["devices"], 1).astype(np.int64)
    span = np.repeat(np.arange(n), per_span)
    offset = np.arange(len(span)) - np.repeat(np.cumsum(per_span) - per_span, per_span)
    device = np.where(s["device"][span] < 0, offset, s["device"][span])
    kinds = np.asarray(raw["kind_names"], dtype=object)
    frac = np.where(s["device"] < 0, 1.0 / np.maximum(s["devices"], 1), 1.0)[span]
    return pd.DataFrame({
        "span": span,
        "resource_id": names[s["resource"][span]],
        "device": device.astype(np.int32),
        "start_ns": s["start"][span],
        "end_ns": s["end"][span],
        "kind": kinds[s["kind"][span]],
        "busy_ns": s["busy_ns"][span] * frac,
        "observed_ns": s["observed_ns"][span] * frac,
    })


def _windows_union(resource: np.ndarray, start: np.ndarray, end: np.ndarray) -> pd.DataFrame:
    """Intervals as their union per resource: ``resource_id, start_ns, end_ns``, sorted."""
    w = pd.DataFrame({"resource_id": resource, "start_ns": start, "end_ns": end}).sort_values(
        ["resource_id", "start_ns", "end_ns"], kind="stable").reset_index(drop=True)
    if len(w) == 0:
        return w
    reach = w.groupby("resource_id", sort=False)["end_ns"].cummax().to_numpy()
    rid = w["resource_id"].to_numpy()
    fresh = np.r_[True, (rid[1:] != rid[:-1]) | (w["start_ns"].to_numpy()[1:] > reach[:-1])]
    group = np.cumsum(fresh)
    out = w.assign(_g=group).groupby("_g", sort=True).agg(resource_id=("resource_id", "first"),
                                                          start_ns=("start_ns", "min"), end_ns=("end_ns", "max"))
    return out.reset_index(drop=True)


def _cut_down_time(costs: Any, downtime: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cost lines with their resources' down windows cut out (the billed
    time idle detection may look at) and the down spans: each resource's
    windows inside its billed time (docs/semantics.md, 10)."""
    lines = frame(costs, "costs", required=("resource_id", "start", "end", "cost"),
                  optional=("list_cost", "currency", "primary", "quantity_hours"))
    ls, le = instants_ns(lines, "costs", "start"), instants_ns(lines, "costs", "end")
    windows = _windows_union(strings(downtime, "downtime", "resource_id").astype(object),
                             instants_ns(downtime, "downtime", "start"), instants_ns(downtime, "downtime", "end"))
    pairs = pd.DataFrame({"row": np.arange(len(lines)), "resource_id": lines["resource_id"].astype(str).to_numpy(),
                          "s": ls, "e": le}).merge(windows, on="resource_id")
    pairs = pairs[(pairs["start_ns"] < pairs["e"]) & (pairs["end_ns"] > pairs["s"])]
    down = _windows_union(pairs["resource_id"].to_numpy(), np.maximum(pairs["start_ns"], pairs["s"]).to_numpy(),
                          np.minimum(pairs["end_ns"], pairs["e"]).to_numpy())
    if len(pairs) == 0:
        return lines, down
    # Only lines that meet a window are cut (maintenance touches few lines).
    pieces = []
    for row, cut in pairs.sort_values(["row", "start_ns"]).groupby("row", sort=True):
        at = int(ls[row])
        for a, b in zip(cut["start_ns"].to_numpy(), cut["end_ns"].to_numpy()):
            if a > at:
                pieces.append((row, at, int(a)))
            at = max(at, int(b))
        if at < le[row]:
            pieces.append((row, at, int(le[row])))
    kept = lines.drop(index=pairs["row"].unique())
    rows, starts, ends = (np.asarray(v, dtype=np.int64) for v in zip(*pieces)) if pieces else (
        np.empty(0, np.int64),) * 3
    up = lines.iloc[rows].assign(start=to_datetime(starts), end=to_datetime(ends))
    return pd.concat([kept, up], ignore_index=True), down


def _down_device_spans(down: pd.DataFrame, raw: dict, first_span: int) -> pd.DataFrame:
    """Down spans one device per row, every device of the resource."""
    devices = pd.Series(np.asarray(raw["resource_devices"], dtype=np.int64),
                        index=np.asarray(raw["resource_names"], dtype=object))
    down = down[down["resource_id"].isin(devices.index)].reset_index(drop=True)
    per = devices.reindex(down["resource_id"]).to_numpy()
    span = np.repeat(np.arange(len(down)), per)
    device = np.arange(len(span)) - np.repeat(np.cumsum(per) - per, per)
    return pd.DataFrame({
        "span": first_span + span,
        "resource_id": down["resource_id"].to_numpy()[span],
        "device": device.astype(np.int32),
        "start_ns": down["start_ns"].to_numpy()[span],
        "end_ns": down["end_ns"].to_numpy()[span],
        "kind": "down",
        "busy_ns": 0.0,
        "observed_ns": 0.0,
    })


def _owned(costs: Any, spans: pd.DataFrame) -> np.ndarray:
    """Per device span: whether it meets a cost line of hardware you own
    (``pricing`` :attr:`gpucost.Purchase.OWNED`). A span that meets both an
    owned and a rented line counts as owned: owned hardware is never
    terminated."""
    lines = frame(costs, "costs", required=("resource_id", "start", "end"), optional=("pricing",))
    if "pricing" not in lines.columns or len(spans) == 0:
        return np.zeros(len(spans), dtype=bool)
    mine = (lines["pricing"].astype(object) == Purchase.OWNED).to_numpy()
    if not mine.any():
        return np.zeros(len(spans), dtype=bool)
    windows = _windows_union(lines["resource_id"].astype(str).to_numpy()[mine],
                             instants_ns(costs, "costs", "start")[mine], instants_ns(costs, "costs", "end")[mine])
    pairs = pd.DataFrame({"row": np.arange(len(spans)), "resource_id": spans["resource_id"].astype(str).to_numpy(),
                          "s": spans["start_ns"].to_numpy(), "e": spans["end_ns"].to_numpy()}).merge(
        windows, on="resource_id")
    meets = pairs["row"].to_numpy()[((pairs["start_ns"] < pairs["e"]) & (pairs["end_ns"] > pairs["s"])).to_numpy()]
    return np.isin(np.arange(len(spans)), meets)


def _power_saved(costs: Any, usage: Any, inventory: Any, spans: pd.DataFrame, interval: float) -> np.ndarray:
    """Per device span of kind ``power-down``: what its resource's
    energy-driven (power) cost lines would not have cost had the node been
    off over the span. With ``power_w`` in the usage, each power line's
    share of the free devices' energy within the span (the line split by
    energy, docs/semantics.md 9); without, the span's device-time share of
    the power lines. 0 for every other span."""
    out = np.zeros(len(spans))
    down = np.flatnonzero((spans["kind"] == "power-down").to_numpy())
    if len(down) == 0:
        return out
    lines = frame(costs, "costs", required=("resource_id", "start", "end", "cost"), optional=("driver",))
    if "driver" not in lines.columns:
        return out
    resources = set(spans["resource_id"].to_numpy()[down].astype(str))
    power = ((lines["driver"].astype(object) == CostDriver.ENERGY)
             & lines["resource_id"].astype(str).isin(resources)).to_numpy()
    if not power.any():
        return out
    power_lines = as_frame(costs, "costs").iloc[np.flatnonzero(power)].reset_index(drop=True)
    keys = np.char.add("span-", down.astype(str)).astype(object)
    u = usage.of_resources(resources) if isinstance(usage, UsageChunks) else as_frame(usage, "usage")
    if "power_w" in u.columns:
        samples = _free_samples_as_spans(u, spans.iloc[down], keys, resources)
        with_duration = "duration" in samples.columns
        priced = allocate(power_lines, samples, inventory, interval=None if with_duration else interval)
    else:
        priced = price_device_time(power_lines, inventory, device_time_usage(
            spans["resource_id"].to_numpy()[down], spans["device"].to_numpy()[down],
            spans["start_ns"].to_numpy()[down], spans["end_ns"].to_numpy()[down], keys))
    mine = priced[priced["consumer"].astype(str).str.startswith("span-")]
    idx = mine["consumer"].astype(str).str.slice(5).astype(np.int64).to_numpy()
    return out + _per_span(idx, mine["cost"], len(spans))


def _free_samples_as_spans(usage: pd.DataFrame, down: pd.DataFrame, keys: np.ndarray, resources: set) -> pd.DataFrame:
    """The samples of the powered-down resources, each free sample (no
    consumer) whose instant falls in a power-down span of its device held by
    that span's key: allocate then gives each span its share of the power
    lines by energy."""
    samples = usage[str_isin(usage["resource_id"], resources)].reset_index(drop=True)
    consumer = samples["consumer"].astype("string").fillna("").to_numpy(dtype=object)
    at = pd.DataFrame({"row": np.arange(len(samples)), "t": instants_ns(samples, "usage", "timestamp"),
                       "resource_id": samples["resource_id"].astype(str).to_numpy(),
                       "device": samples["device"].to_numpy(dtype=np.int64)})
    at = at[consumer == ""].sort_values("t", kind="stable")
    spans = pd.DataFrame({"t": down["start_ns"].to_numpy(), "end": down["end_ns"].to_numpy(), "key": keys,
                          "resource_id": down["resource_id"].astype(str).to_numpy(),
                          "device": down["device"].to_numpy(dtype=np.int64)}).sort_values("t", kind="stable")
    found = pd.merge_asof(at, spans, on="t", by=["resource_id", "device"])
    inside = (found["key"].notna() & (found["t"] < found["end"])).to_numpy()
    consumer[found["row"].to_numpy()[inside]] = found["key"].to_numpy()[inside]
    return samples.assign(consumer=consumer)


def find_idle(usage: Any, costs: Any, inventory: Any, workloads: Any = None, threshold: float = 0.05,
              window: Any = "2h", *, resolution: Any = "1min", interval: float = 60,
              exempt_label: str | None = "idle_exempt", exempt_values: Sequence[str] = EXEMPT_VALUES,
              downtime: Any = None) -> IdleReport:
    """Idle GPU time and what it cost.

    A device is idle wherever a window of ``window`` inside billed time
    averages a busy fraction (sum of ``share * util`` of its consumers) below
    ``threshold``. Time with no sample counts as busy 0 and shows in
    ``observed_share`` (``unobserved`` when no sample at all). Each idle span
    gets an action:

    - ``terminate``: every GPU of the resource idle and nobody holds any, for
      at least ``window``;
    - ``release``: a workload holds the idle GPU;
    - ``right-size``: nobody holds the idle GPU while others on the resource
      are busy or held (the instance is bigger than its work);
    - ``none``: held by an exempt workload (label ``exempt_label`` in
      ``exempt_values``): reported, not flagged.

    Hardware you own (a span meeting a cost line whose ``pricing`` is
    :attr:`gpucost.Purchase.OWNED`) is never terminated; its spans get the
    owner's actions instead (docs/advisor.md, "Hardware you own"):

    - ``power down`` (for ``terminate``): the whole node idle and unheld;
      ``dollars_power_saved`` is what its energy-driven cost lines
      (``driver`` ``"energy"``) would not have cost over the span: with
      ``power_w`` in the usage, their share of the free GPUs' energy within
      the span, as :func:`gpucost.allocate` splits them; without, their
      device-time share of the span;
    - ``consolidate`` (for ``right-size``): the GPU is free while others on
      the node work: move work onto fewer nodes;
    - ``lend`` (for ``release``): a workload holds the idle GPU: lend it to
      another account or team.

    ``dollars_wasted`` is the cost lines' share of the span's device-time,
    computed by :func:`gpucost.allocate` (a device over [a, b) gets
    ``cost * overlap / (devices * line length)`` of each line): for owned
    hardware, its cost per GPU-hour, every component included.
    ``dollars_power_saved`` is 0 on every other span.

    Args:
        usage, costs, inventory, workloads: the tables of gpucost.allocate.
        threshold: busy fraction below which a window is idle.
        window: averaging window and minimum idle length ("2h", seconds, ...).
        resolution: time grid; spans start and end on it (UTC aligned).
        interval: seconds a sample stands for without a duration column.
        exempt_label, exempt_values: which workloads are exempt.
        downtime: windows a resource was down (``resource_id, start, end``,
            as for :func:`gpucost.allocate`): never idle, never flagged; they
            are findings of their own with action ``"down"``, their dollars in
            ``dollars_down``.

    Returns:
        An :class:`IdleReport` (findings, spans, daily, diagnostics).

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
        >>> report = gpucost.find_idle(usage, costs, inventory, workloads)
        >>> report.findings[["resource_id", "start", "end", "hours", "action", "flagged", "dollars_wasted"]]
          resource_id                     start                       end  hours     action  flagged  dollars_wasted
        0      i-0aaa 2026-03-02 02:00:00+00:00 2026-03-02 06:00:00+00:00    4.0  terminate     True           4.024

        The same GPU owned, not rented: $0.906 an hour of capex and $0.10 an
        hour of power (a line split by energy). Idle, it is powered down,
        saving the 4 hours' power:

        >>> owned = pd.concat([costs.assign(cost=0.906, driver=gpucost.CostDriver.GPU_TIME, primary=True),
        ...                    costs.assign(cost=0.10, driver=gpucost.CostDriver.ENERGY, primary=False)],
        ...                   ignore_index=True).assign(pricing=gpucost.Purchase.OWNED)
        >>> report = gpucost.find_idle(usage, owned, inventory, workloads)
        >>> report.findings[["resource_id", "hours", "action", "dollars_wasted", "dollars_power_saved"]]
          resource_id  hours      action  dollars_wasted  dollars_power_saved
        0      i-0aaa    4.0  power down           4.024                  0.4
    """
    idle_costs, down = (costs, None) if downtime is None else _cut_down_time(costs, downtime)
    raw, labels = _run(usage, idle_costs, inventory, workloads, threshold, window, resolution, interval, 0,
                       exempt_label, exempt_values)
    spans = _device_spans(raw)
    if down is not None:
        spans = pd.concat([spans, _down_device_spans(down, raw, len(raw["spans"]["start"]))], ignore_index=True)
    owned = _owned(costs, spans)
    spans["kind"] = np.where(owned, spans["kind"].map(_OWNER_KINDS).fillna(spans["kind"]), spans["kind"])
    key = np.char.add("span-", np.arange(len(spans)).astype(str)).astype(object)
    priced = price_device_time(costs, inventory, device_time_usage(
        spans["resource_id"].to_numpy(), spans["device"].to_numpy(), spans["start_ns"].to_numpy(),
        spans["end_ns"].to_numpy(), key), freq="D")
    has_list = "list_cost" in priced.columns
    # Per device span: its dollars (rows of the span consumers only).
    mine = priced[priced["consumer"].str.startswith("span-")]
    idx = mine["consumer"].str.slice(5).astype(np.int64).to_numpy()
    # Billed time nothing measured is priced too, but as unobserved, never as waste.
    dark = (spans["kind"] == "no-telemetry").to_numpy()
    is_down = (spans["kind"] == "down").to_numpy()
    dollars = _per_span(idx, mine["cost"], len(spans))
    spans["dollars_wasted"] = np.where(dark | is_down, 0.0, dollars)
    if has_list:
        spans["list_dollars_wasted"] = np.where(dark | is_down, 0.0, _per_span(idx, mine["list_cost"], len(spans)))
    spans["dollars_unobserved"] = np.where(dark, dollars, 0.0)
    spans["dollars_power_saved"] = _power_saved(costs, usage, inventory, spans, interval)
    if down is not None:
        spans["dollars_down"] = np.where(is_down, dollars, 0.0)

    holders = _holders(raw)
    main, every = _main_holders(holders)
    spans["consumer"] = _lookup(spans["span"], main)
    spans["holders"] = _lookup(spans["span"], every)
    findings = _findings(spans, labels, has_list)
    daily = _daily(priced, spans, idx, mine)
    diagnostics = dict(raw["diagnostics"])
    out_spans = spans.assign(start=to_datetime(spans["start_ns"].to_numpy()),
                             end=to_datetime(spans["end_ns"].to_numpy()))
    out_spans = out_spans.drop(columns=["start_ns", "end_ns"])
    return IdleReport(findings, out_spans, daily, diagnostics)


def _holders(raw: dict) -> pd.DataFrame:
    h = raw["holders"]
    names = np.asarray(raw["consumer_names"], dtype=object)
    return pd.DataFrame({"span": h["span"], "consumer": names[h["consumer"]] if len(names) else
                         np.empty(0, dtype=object), "held_ns": h["held_ns"]})


def _per_span(span: np.ndarray, values: pd.Series, n: int) -> np.ndarray:
    """Sums of `values` per span index (float64, zeros for none)."""
    return np.bincount(span, weights=values.to_numpy(dtype=np.float64), minlength=n).astype(np.float64)


def _lookup(keys: pd.Series, mapping: pd.Series) -> np.ndarray:
    """mapping[key] for each key, "" where absent."""
    found = keys.map(mapping).astype(object)
    return found.where(found.notna(), "").to_numpy()


def _main_holders(holders: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per span: the main holder (most time held) and all holders joined."""
    if len(holders) == 0:
        return pd.Series([], dtype=object), pd.Series([], dtype=object)
    ordered = holders.sort_values(["span", "held_ns", "consumer"], ascending=[True, False, True])
    main = ordered.drop_duplicates("span").set_index("span")["consumer"]
    every = _join_sorted(holders.sort_values(["span", "consumer"]), "span", "consumer")
    return main, every


def _join_sorted(frame: pd.DataFrame, key: str, value: str) -> pd.Series:
    """The `value` strings of each `key` joined with "," (frame sorted by
    key), without a Python call per group."""
    keys = frame[key].to_numpy()
    values = frame[value].to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    last = np.r_[starts[1:] - 1, len(keys) - 1]
    pieces = values + ","
    pieces[last] = values[last]
    return pd.Series(np.add.reduceat(pieces, starts), index=keys[starts])


def _findings(per: pd.DataFrame, labels: pd.DataFrame, has_list: bool) -> pd.DataFrame:
    """Device spans merged into findings: same resource, kind, start, end and
    holders -> one row listing the devices."""
    label_cols = [c for c in labels.columns if c != "consumer"]
    keys = ["resource_id", "kind", "start_ns", "end_ns", "holders", "consumer"]
    agg = {"gpus": ("device", "size"), "first": ("device", "min"), "last": ("device", "max"),
           "busy_ns": ("busy_ns", "sum"), "observed_ns": ("observed_ns", "sum"),
           "dollars_wasted": ("dollars_wasted", "sum"), "dollars_unobserved": ("dollars_unobserved", "sum"),
           "dollars_power_saved": ("dollars_power_saved", "sum")}
    if has_list:
        agg["list_dollars_wasted"] = ("list_dollars_wasted", "sum")
    if "dollars_down" in per.columns:
        agg["dollars_down"] = ("dollars_down", "sum")
    group_of = per.groupby(keys, sort=False, dropna=False)
    grouped = group_of.agg(**agg).reset_index()
    gpus = grouped["gpus"].to_numpy()
    # Devices as "0-7" / "3"; lists with gaps ("1-3,5") are spelled out one by one.
    first, last = grouped["first"].to_numpy(), grouped["last"].to_numpy()
    devices = np.where(first == last, first.astype(str),
                       np.char.add(np.char.add(first.astype(str), "-"), last.astype(str))).astype(object)
    gaps = np.flatnonzero(last - first + 1 != gpus)
    if len(gaps):
        numbered = per.assign(_g=group_of.ngroup().to_numpy())
        numbered = numbered[numbered["_g"].isin(gaps)]
        lists = numbered.groupby("_g")["device"].agg(list)
        devices[gaps] = [_device_list(lists[g]) for g in gaps]
    length_ns = (grouped["end_ns"] - grouped["start_ns"]).to_numpy()
    device_ns = length_ns.astype(np.float64) * gpus
    out = pd.DataFrame({
        "resource_id": grouped["resource_id"].astype(str),
        "devices": devices.astype(str),
        "gpus": gpus.astype(np.int64),
        "start": to_datetime(grouped["start_ns"].to_numpy()),
        "end": to_datetime(grouped["end_ns"].to_numpy()),
        "hours": length_ns / NS_PER_H,
        "gpu_hours": device_ns / NS_PER_H,
        "mean_util": grouped["busy_ns"].to_numpy() / device_ns,
        "observed_share": np.minimum(grouped["observed_ns"].to_numpy() / device_ns, 1.0),
        "consumer": grouped["consumer"].astype(str),
        "holders": grouped["holders"].astype(str),
    })
    out["unobserved"] = out["observed_share"].to_numpy() == 0
    out = attach_labels(out, labels, columns=label_cols)
    kind = grouped["kind"].to_numpy()
    out["action"] = pd.Series(kind).map(_ACTIONS).astype(str).to_numpy()
    out["exempt"] = kind == "exempt"
    out["flagged"] = ~np.isin(kind, _NOT_FLAGGED)
    out["dollars_wasted"] = grouped["dollars_wasted"].to_numpy()
    if has_list:
        out["list_dollars_wasted"] = grouped["list_dollars_wasted"].to_numpy()
    out["dollars_unobserved"] = grouped["dollars_unobserved"].to_numpy()
    out["dollars_power_saved"] = grouped["dollars_power_saved"].to_numpy()
    if "dollars_down" in grouped.columns:
        out["dollars_down"] = grouped["dollars_down"].to_numpy()
    out = out.sort_values(["dollars_wasted", "resource_id", "start"], ascending=[False, True, True],
                          kind="stable").reset_index(drop=True)
    return out


def _device_list(devices: list) -> str:
    """[0, 1, 2, 3, 5] -> "0-3,5" (one finding's devices)."""
    ds = sorted(int(d) for d in devices)
    runs: list[list[int]] = []
    for d in ds:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _daily(priced: pd.DataFrame, spans: pd.DataFrame, idx: np.ndarray, mine: pd.DataFrame) -> pd.DataFrame:
    """Idle GPU-hours, idle cost and idle share of the GPU spend per UTC day
    (a line counts in the day it starts, as in gpucost.allocate)."""
    kind = spans["kind"].to_numpy()[idx]
    unobserved = kind == "no-telemetry"
    per = pd.DataFrame({
        "period": mine["period"].to_numpy(),
        "flagged": ~np.isin(kind, _NOT_FLAGGED),
        "exempt": kind == "exempt",
        "cost": mine["cost"].to_numpy(),
        "gpu_hours": mine["gpu_hours"].to_numpy(),
        "unobserved": unobserved,
    })
    gpu = priced[priced["consumer"] != "__unattributed__"].groupby("period")["cost"].sum()
    flagged = per[per["flagged"]].groupby("period")[["gpu_hours", "cost"]].sum()
    exempt = per[per["exempt"]].groupby("period")[["gpu_hours", "cost"]].sum()
    unobs = per[per["unobserved"]].groupby("period")[["gpu_hours", "cost"]].sum()
    days = pd.DataFrame(index=gpu.index)
    days["idle_gpu_hours"] = flagged["gpu_hours"].reindex(days.index, fill_value=0.0)
    days["idle_cost"] = flagged["cost"].reindex(days.index, fill_value=0.0)
    days["exempt_gpu_hours"] = exempt["gpu_hours"].reindex(days.index, fill_value=0.0)
    days["exempt_cost"] = exempt["cost"].reindex(days.index, fill_value=0.0)
    days["unobserved_gpu_hours"] = unobs["gpu_hours"].reindex(days.index, fill_value=0.0)
    days["unobserved_cost"] = unobs["cost"].reindex(days.index, fill_value=0.0)
    days["gpu_spend"] = gpu
    with np.errstate(divide="ignore", invalid="ignore"):
        days["idle_share"] = np.where(gpu.to_numpy() != 0, days["idle_cost"].to_numpy() / gpu.to_numpy(), np.nan)
    return days.reset_index()


def idle_policy(usage: Any, costs: Any, inventory: Any, workloads: Any = None, *, threshold: float = 0.05,
                window: Any = "2h", grace: Any = "30min", resolution: Any = "1min", interval: float = 60,
                exempt_label: str | None = "idle_exempt", exempt_values: Sequence[str] = EXEMPT_VALUES,
                since: Any = None, on_decision: Callable[[dict], Any] | None = None) -> pd.DataFrame:
    """The seed idle-termination policy, replayed over the data, as a
    timeline of decisions per GPU instance (resource):

    1. ``alert`` when the instance's GPUs average below ``threshold`` over
       ``window`` (wholly billed, no exempt workload holding a GPU);
    2. ``cancel`` when, during the ``grace`` period, any step of the grid has
       the instance at or above ``threshold`` or an exempt workload appears
       (activity resumed); ``ended`` when billing stops during the grace;
    3. ``terminate`` when the grace period passes without either
       (``power down`` on hardware you own: a cost line ``pricing``
       :attr:`gpucost.Purchase.OWNED`).
       ``until`` is when the idle stretch ended (activity or end of billing)
       and ``dollars_at_stake`` what the instance cost from the decision to
       then: the saving had the recommendation been followed.

    gpucost does not call cloud APIs. Pass ``on_decision`` to wire the
    decisions to your tools: it is called once per decision at or after
    ``since`` (all of them without it), in time order, with the row as a
    dict (``resource_id, time, decision, window_start, window_util, until,
    dollars_at_stake, reason``). Run it every few minutes over recent data
    with ``since`` = the previous run's time to act on new decisions only.
    Exceptions raised by the callback propagate.

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
        >>> def notify(d):
        ...     if d["decision"] == "terminate":
        ...         print(f"terminate {d['resource_id']} at {d['time']:%H:%M}: ${d['dollars_at_stake']:.2f} at stake")
        >>> timeline = gpucost.idle_policy(usage, costs, inventory, workloads, on_decision=notify)
        terminate i-0aaa at 04:24: $1.61 at stake
        >>> timeline[["resource_id", "time", "decision", "window_util", "until", "dollars_at_stake"]]
          resource_id                      time   decision  window_util                     until  dollars_at_stake
        0      i-0aaa 2026-03-02 03:54:00+00:00      alert        0.045                       NaT            0.0000
        1      i-0aaa 2026-03-02 04:24:00+00:00  terminate        0.000 2026-03-02 06:00:00+00:00            1.6096
    """
    raw, _ = _run(usage, costs, inventory, workloads, threshold, window, resolution, interval, grace,
                  exempt_label, exempt_values)
    d = raw["decisions"]
    names = np.asarray(raw["resource_names"], dtype=object)
    decision = np.asarray(raw["decision_names"], dtype=object)[d["decision"]]
    timeline = pd.DataFrame({
        "resource_id": names[d["resource"]] if len(names) else np.empty(0, dtype=object),
        "time": to_datetime(d["time"]),
        "decision": decision,
        "window_start": to_datetime(d["window_start"]),
        "window_util": d["util"],
        "until": to_datetime(d["until"]),
    })
    # Dollars at stake of each terminate: the instance's cost lines' share of
    # all its devices from the decision until the idle stretch ended.
    term = np.flatnonzero((decision == "terminate") & (d["until"] > d["time"]))
    stake = np.zeros(len(timeline))
    if len(term):
        per = np.asarray(raw["resource_devices"], dtype=np.int64)[d["resource"][term]]
        row = np.repeat(term, per)
        dev = np.arange(len(row)) - np.repeat(np.cumsum(per) - per, per)
        key = np.char.add("stake-", row.astype(str)).astype(object)
        priced = price_device_time(costs, inventory, device_time_usage(
            names[d["resource"][row]], dev, d["time"][row], d["until"][row], key))
        mine = priced[priced["consumer"].str.startswith("stake-")]
        stake += _per_span(mine["consumer"].str.slice(6).astype(np.int64).to_numpy(), mine["cost"], len(timeline))
    timeline["dollars_at_stake"] = stake
    timeline["reason"] = _reasons(timeline, threshold, seconds(window, "window"), seconds(grace, "grace"))
    # Hardware you own is powered down, never terminated.
    at = np.asarray(d["time"], dtype=np.int64)
    owned = _owned(costs, pd.DataFrame({"resource_id": timeline["resource_id"], "start_ns": at, "end_ns": at + 1}))
    timeline["decision"] = np.where(owned & (decision == "terminate"), "power down", decision)
    timeline = timeline.sort_values(["time", "resource_id"], kind="stable").reset_index(drop=True)
    if on_decision is not None:
        selected = timeline if since is None else \
            timeline[timeline["time"] >= pd.Timestamp(to_ns(since, "since"), unit="ns", tz="UTC")]
        for record in selected.to_dict("records"):
            on_decision(record)
    return timeline


def _reasons(t: pd.DataFrame, threshold: float, window_s: float, grace_s: float) -> np.ndarray:
    util = (t["window_util"] * 100).map("{:.1f}%".format).to_numpy()
    window = _human(window_s)
    grace = _human(grace_s)
    return np.select(
        [t["decision"] == "alert", t["decision"] == "cancel", t["decision"] == "terminate"],
        [np.char.add(np.char.add("GPUs averaged ", util.astype(str)), f" over {window} (< {threshold:.0%}), "
                     "no exempt workload"),
         np.full(len(t), f"activity resumed during the {grace} grace period"),
         np.full(len(t), f"no activity during the {grace} grace period")],
        default="billing stopped during the grace period").astype(object)


def _human(s: float) -> str:
    if s >= 3600 and s % 3600 == 0:
        return f"{int(s // 3600)} h"
    if s >= 60 and s % 60 == 0:
        return f"{int(s // 60)} min"
    return f"{s:g} s"

