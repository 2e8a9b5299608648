"""gpucost.allocate: prorate cost lines over GPU usage (docs/semantics.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.errors import InvalidInputError, shift_rows
from gpucost.frames import JoinTable, Table, allocation_result, check_output
from gpucost.model import CostDriver
from gpucost.join import check_public_call
from gpucost.spill import UsageChunks


def check_not_allocated(costs: Any) -> None:
    """Refuses cost lines read from a FOCUS export that holds allocated
    charges already (FOCUS 1.3 AllocatedMethodId set; the reader counts them):
    allocating them would split each charge twice. The error names the file,
    the row and the column."""
    report = getattr(costs, "attrs", {}).get("billing", {}) or {}
    count = int(report.get("allocated_charges", 0) or 0)
    if count:
        raise InvalidInputError(f"{report.get('first_allocated_charge', report.get('source', 'costs'))} "
                                f"({count} such row(s)); allocate the export before it was split, not a split one")

__all__ = ["allocate", "Allocator", "available_cores", "get_num_threads", "set_num_threads", "series_spacings",
           "infer_interval"]

# Worker threads the engine may use per call (0 = one per core). Module-level
# so that every path reads it (runners, analyses, the command, Dask workers);
# the threads= keyword overrides it for one call.
_num_threads = 0


def _check_threads(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        what = f"expected an integer >= 0 (0 = one per core), got {n!r}"
        raise InvalidInputError(f"threads: {what}", parameter="threads", reason=what)
    return int(n)


def set_num_threads(n: int) -> None:
    """Sets how many threads the engine uses to add samples: ``0`` (the
    default) means one per core this process may use (:func:`available_cores`),
    ``1`` runs single-threaded. Applies to :func:`allocate`, :class:`Allocator`
    and the runners built on them, in every Python thread of this process,
    unless a call gives ``threads=``. Results do not depend on it beyond
    floating-point rounding (1e-12 relative). Chunks smaller than 262,144
    samples per thread use fewer threads.

    Examples:
        >>> gpucost.set_num_threads(1)   # leave the other cores to Dask workers
        >>> gpucost.get_num_threads()
        1
        >>> gpucost.set_num_threads(0)   # back to one per core
    """
    global _num_threads
    _num_threads = _check_threads(n)


def get_num_threads() -> int:
    """The engine's thread setting (0 = one per core); see :func:`set_num_threads`
    and, for what 0 resolves to, :func:`available_cores`.

    Examples:
        >>> gpucost.get_num_threads()   # the default: one per core
        0
    """
    return _num_threads


def available_cores() -> int:
    """The cores this process may run on: the CPUs of its affinity mask
    (``taskset``, ``numactl``, Slurm and Kubernetes CPU pinning), capped by
    its cgroup CPU limit (:func:`cgroup_cpu_limit`: a container's ``--cpus``,
    a Kubernetes CPU limit), at least 1. ``threads=0`` means this many, so the
    engine never starts more threads than it may run. The engine's own count
    (C++ ``gpucost::AvailableCores()``), so Python and C++ never disagree.

    Examples:
        >>> n = gpucost.available_cores()   # 2 on a 2-core VM, 4 under `taskset -c 0-3`
        >>> n >= 1
        True
    """
    return _core.available_cores()


def cgroup_cpu_limit(root: str = "/sys/fs/cgroup", proc: str = "/proc/self/cgroup") -> int | None:
    """The tightest CPU limit of this process's cgroups (its own and every one
    above it), as whole CPUs rounded up; None when there is none (or no
    cgroup file system). cgroup v2: ``cpu.max`` (``"max 100000"``: none;
    ``"150000 100000"``: 2); v1: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``.
    ``root`` and ``proc`` (the ``/proc/self/cgroup`` to read) are for tests.
    C++ ``gpucost::CgroupCpuLimit()``."""
    return _core.cgroup_cpu_limit(root, proc)


def resolve_threads(threads: int | None = None) -> int:
    """The thread count a call runs with: ``threads`` (validated), or the
    :func:`set_num_threads` setting when None; 0 becomes
    :func:`available_cores`. The engine is always given a count >= 1."""
    n = _num_threads if threads is None else _check_threads(threads)
    return n if n > 0 else available_cores()

RESULT_METRICS = (
    "cost",
    "idle_cost",
    "list_cost",
    "gpu_hours",
    "effective_gpu_hours",
    "mem_gib_hours",
    "cost_per_effective_gpu_hour",
    "energy_kwh",
    "energy_estimated_kwh",
    "facility_energy_kwh",
    "co2e_kg",
    "embodied_co2e_kg",
)


def _in_unit(instants: np.ndarray, unit: str, wanted: str) -> np.ndarray:
    return pd.Series(instants).astype(f"datetime64[{unit}]").astype(f"datetime64[{wanted}]").to_numpy().view("int64")


def cost_columns(costs: Any) -> dict:
    t = Table(costs, "costs")
    check_not_allocated(t.data)
    start, unit = t.instants("start")
    end, end_unit = t.instants("end")
    if end_unit != unit:  # rare: mixed units; bring end to start's unit
        end = _in_unit(end, end_unit, unit)
    return {
        "resource_id": t.strings("resource_id"),
        "start": start,
        "end": end,
        "time_unit": unit,
        "cost": t.floats("cost"),
        "list_cost": t.floats("list_cost") if t.has("list_cost") else None,
        "currency": t.strings("currency") if t.has("currency") else None,
        "primary": t.bools("primary") if t.has("primary") else None,
        "quantity_hours": t.floats("quantity_hours") if t.has("quantity_hours") else None,
        "driver": _driver_codes(t) if t.has("driver") else None,
    }


_DRIVERS = list(CostDriver)


def _driver_codes(t: Table) -> np.ndarray:
    """The ``driver`` column (docs/semantics.md, 9) as the engine's uint8
    CostDriver values; a missing value is ``gpu_time``."""
    codes, values = t.strings("driver")
    lookup = np.zeros(len(values) + 1, dtype=np.uint8)  # the last entry: null (code -1)
    for k, value in enumerate(values):
        if value == "":
            continue
        if value not in _DRIVERS:
            expected = " or ".join(repr(d.value) for d in _DRIVERS)
            raise t._first_bad_row("driver", codes == k, f"{value!r} is not a cost driver (expected {expected})")
        lookup[k] = _DRIVERS.index(CostDriver(value))
    return lookup[codes]


def inventory_columns(inventory: Any) -> dict:
    t = Table(inventory, "inventory")
    return {
        "resource_id": t.strings("resource_id"),
        "device": t.int32s("device"),
        "mem_capacity": t.floats("mem_capacity"),
        "embodied_kg_per_gpu_hour": t.floats("embodied_kg_per_gpu_hour") if t.has("embodied_kg_per_gpu_hour") else None,
    }


# Below this many rows the two string columns are encoded one after the other.
_PARALLEL_ENCODING_ROWS = 1 << 20


def usage_columns(usage: Any, threads: int | None = None) -> dict:
    t = Table(usage, "usage")
    timestamp, unit = t.instants("timestamp")
    resource_id, consumer = _encode_strings(t, ("resource_id", "consumer"), resolve_threads(threads))
    return {
        "timestamp": timestamp,
        "time_unit": unit,
        "resource_id": resource_id,
        "device": t.int32s("device"),
        "consumer": consumer,
        "share": t.floats("share"),
        "util": t.floats("util"),
        "mem_used": t.floats("mem_used"),
        "duration": t.durations("duration", unit) if t.has("duration") else None,
        "power_w": t.floats("power_w") if t.has("power_w") else None,
    }


def _encode_strings(t: Table, columns: Sequence[str], threads: int) -> list:
    """Table.strings of each column; large ones side by side on threads, as
    the string encoder and numpy's casts release the GIL, and with more
    cores than columns each column's rows split between the rest."""
    if threads < 2 or len(t) < _PARALLEL_ENCODING_ROWS:
        return [t.strings(c) for c in columns]
    each = max(1, threads // len(columns))  # the cores beyond one per column split each column's rows
    with ThreadPoolExecutor(max_workers=min(threads, len(columns))) as pool:
        futures = [pool.submit(t.strings, c, each) for c in columns]
        return [f.result() for f in futures]  # the first column's error first


def downtime_columns(downtime: Any) -> dict | None:
    """``resource_id, start, end`` of a downtime table (other columns, such
    as ``reason``, are the caller's)."""
    if downtime is None:
        return None
    t = Table(downtime, "downtime")
    start, unit = t.instants("start")
    end, end_unit = t.instants("end")
    if end_unit != unit:
        end = _in_unit(end, end_unit, unit)
    return {"resource_id": t.strings("resource_id"), "start": start, "end": end, "time_unit": unit}


def carbon_intensity_arg(carbon_intensity: Any) -> float | dict | None:
    """``carbon_intensity=`` as the engine takes it: a number of gCO2e/kWh,
    or a table ``start, end, g_per_kwh`` (docs/semantics.md, 9) as columns."""
    if carbon_intensity is None or isinstance(carbon_intensity, int | float | np.number):
        return None if carbon_intensity is None else float(carbon_intensity)
    t = Table(carbon_intensity, "carbon_intensity")
    start, unit = t.instants("start")
    end, end_unit = t.instants("end")
    if end_unit != unit:
        end = _in_unit(end, end_unit, unit)
    return {"start": start, "end": end, "time_unit": unit, "g_per_kwh": t.floats("g_per_kwh"),
            "region": t.strings("region") if t.has("region") else None}


def _energy(pue: float | None, carbon_intensity: Any) -> dict:
    return {"pue": None if pue is None else float(pue), "carbon_intensity": carbon_intensity_arg(carbon_intensity)}


def _with_regions(columns: dict, costs: Table, energy: dict) -> dict:
    """The cost lines' ``region`` goes to the engine only for a carbon table
    by region (docs/semantics.md, 9), so no other call reads it."""
    table = energy["carbon_intensity"]
    if isinstance(table, dict) and table.get("region") is not None and costs.has("region"):
        columns["region"] = costs.strings("region")
    return columns


class _WithEstimate:
    """The engine's result with ``energy_estimated_kwh`` beside it."""

    def __init__(self, raw: Any, estimated: np.ndarray):
        self._raw = raw
        self.energy_estimated_kwh = estimated

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def _with_estimated_energy(raw: Any, tables: tuple, usage: Table, policy: dict) -> Any:
    """With samples whose power is estimated (``power_estimated``, from
    :func:`gpucost.estimate_power`), the part of each row's energy that is
    estimated: the same allocation with only those samples' draw."""
    power = tables[1]["power_w"]
    if power is None or raw.energy_kwh is None or not usage.has("power_estimated"):
        return raw
    estimated = usage.bools("power_estimated").astype(bool)
    if not estimated.any():
        return _WithEstimate(raw, np.zeros(len(raw.energy_kwh)))
    only = dict(tables[1], power_w=np.where(estimated, power, 0.0))
    part = _core.allocate(tables[0], only, tables[2], tables[3], **policy)
    return _WithEstimate(raw, np.asarray(part.energy_kwh))


def workload_columns(workloads: Any) -> dict | None:
    if workloads is None:
        return None
    t = Table(workloads, "workloads")
    return {
        "consumer": t.strings("consumer"),
        "labels": [(c, t.strings(c)) for c in t.columns if c != "consumer"],
    }


def _policy(basis: str, alpha: float, idle: str, interval: float | None, by: Sequence[str] | str,
            freq: str | None, threads: int | None = None) -> dict:
    by_list = [by] if isinstance(by, str) else [str(b) for b in by]
    return dict(basis=str(basis), alpha=float(alpha), idle=str(idle),
                interval=None if interval is None else float(interval), by=by_list,
                freq=None if freq is None else str(freq), threads=resolve_threads(threads))


def series_spacings(usage: Any) -> np.ndarray:
    """Spacing in seconds of every series (``resource_id, device, consumer``)
    of ``usage`` that has one: the median of the positive differences between
    its consecutive distinct timestamps (docs/semantics.md, 1.3)."""
    return _core.series_spacings(usage_columns(usage))


def infer_interval(spacings: Iterable[float]) -> float:
    """The interval inferred from series spacings: their median (60 s when
    there is none). Distributed runners infer it once over all partitions."""
    return float(_core.infer_interval([float(v) for v in spacings]))


JOIN_SUMMED = ("lines", "primary_lines", "lines_primary_overlap", "lines_oversubscribed", "cost", "cost_observed",
               "cost_unobserved", "cost_unattributed", "billed_gpu_hours", "samples", "samples_no_consumer", "samples_outside_lines",
               "samples_unknown_resource", "unjoined_gpu_hours")
#: Join columns present when a resource was down (docs/semantics.md, 10).
JOIN_DOWN = ("cost_down", "samples_in_downtime")


def combine_joins(joins: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Join tables of partial allocations as one: counts and money summed,
    times min/max, per (resource_id, currency)."""
    frames = [pd.DataFrame(j) for j in joins if j is not None and len(j)]
    if not frames:
        return JoinTable(joins[0].iloc[:0].copy()) if joins and joins[0] is not None else JoinTable()
    both = pd.concat(frames, ignore_index=True)
    down = [c for c in JOIN_DOWN if c in both.columns]
    both[down] = both[down].fillna(0)
    grouped = both.groupby(["resource_id", "currency"], sort=True, as_index=False)
    out = grouped.agg(in_inventory=("in_inventory", "max"),
                      **{c: (c, "sum") for c in (*JOIN_SUMMED, *down)},
                      lines_start=("lines_start", "min"), lines_end=("lines_end", "max"),
                      samples_start=("samples_start", "min"), samples_end=("samples_end", "max"))
    out["in_inventory"] = out["in_inventory"].astype(bool)
    columns = [c for c in frames[0].columns if c not in JOIN_DOWN] + down
    return JoinTable(out[columns].reset_index(drop=True))


def combine_diagnostics(diagnostics: Iterable[dict]) -> dict:
    """Diagnostics of partial allocations as one: counts summed, the
    interval (the same in every partition) kept."""
    out: dict[str, Any] = {}
    for diag in diagnostics:
        for key, value in diag.items():
            if key == "interval":
                if out.get(key) is None:
                    out[key] = value
            else:
                out[key] = out.get(key, 0) + int(value)
    return out
def _memory_for_blended(usage: Any, basis: str) -> None:
    """Telemetry readers give samples whose source had no memory field
    mem_used 0 and count them (``attrs["telemetry"]["samples_without_memory"]``):
    right for the allocated and used bases, a wrong number for blended. Samples
    whose source had no utilisation field (holder-only) have util 0, counted in
    ``samples_without_util``: right for allocated only."""
    if basis == "allocated":
        return
    report = (getattr(usage, "attrs", None) or {}).get("telemetry", {})
    missing = report.get("samples_without_memory", 0)
    if basis == "blended" and missing:
        raise InvalidInputError(
            f"usage: {missing} samples have no memory field (their telemetry had no DCGM_FI_DEV_FB_USED; "
            "attrs['telemetry']['samples_without_memory']): basis 'blended' needs memory; use 'allocated' or "
            "'used', or export the memory field")
    without_util = report.get("samples_without_util", 0)
    if without_util:
        raise InvalidInputError(
            f"usage: {without_util} samples have no utilisation field (their telemetry had no utilisation "
            "metric; attrs['telemetry']['samples_without_util']): "
            f"basis '{basis}' needs utilisation; use 'allocated', or export a utilisation field")


def allocate(
    costs: Any,
    usage: Any,
    inventory: Any,
    workloads: Any = None,
    *,
    basis: str = "allocated",
    alpha: float = 0.5,
    idle: str = "keep",
    interval: float | None = None,
    by: Sequence[str] | str = ("consumer",),
    freq: str | None = None,
    strict: bool = False,
    threads: int | None = None,
    output: str = "pandas",
    downtime: Any = None,
    pue: float | None = None,
    carbon_intensity: Any = None,
) -> Any:
    """Prorate every cost line over the workloads that held or used its GPUs.

    Args:
        costs: cost lines: ``resource_id, start, end, cost`` [, ``list_cost``,
            ``currency``, ``primary``, ``quantity_hours``, ``driver``]. A line
            whose ``driver`` is ``"energy"`` (:class:`gpucost.CostDriver`: a
            power or electricity line) is prorated by each holder's measured
            energy instead of the basis (docs/semantics.md, 9).
        usage: samples: ``timestamp, resource_id, device, consumer, share, util,
            mem_used`` [, ``duration`` in seconds, ``power_w``: the whole
            device's draw in watts, NaN where not measured; with it the
            result has ``energy_kwh``].
        inventory: one row per GPU: ``resource_id, device, mem_capacity`` (bytes).
        workloads: optional ``consumer`` plus label columns (team, project, ...).
            Each table may be a pandas DataFrame, a pyarrow Table, RecordBatch
            or RecordBatchReader, a Polars DataFrame or LazyFrame, a DuckDB
            relation, or anything with the Arrow PyCapsule interface; usage
            may also be :class:`gpucost.UsageChunks` (streamed a chunk at a
            time, as :class:`gpucost.Allocator` would).
        basis: ``"allocated"`` (GPU time held), ``"used"`` (GPU time busy) or
            ``"blended"`` (``alpha`` of GPU time, the rest memory).
        idle: ``"keep"`` leaves idle cost on an ``__idle__`` row; ``"share"``
            spreads it over the line's consumers.
        interval: seconds a sample stands for when usage has no duration;
            ``None`` infers it from the timestamps (the median spacing of the
            series). Every series whose spacing is more than twice or less
            than half the interval is refused.
        by: result groups: ``consumer``, ``resource_id``, ``period``, labels.
        freq: ``"h"``, ``"D"`` or ``"MS"``; required when grouping by period.
        strict: turn every :class:`gpucost.JoinWarning` into an error.
        threads: engine threads for this call; ``None`` (the default): the
            :func:`set_num_threads` setting; ``0``: one per core this process
            may use (:func:`available_cores`). Results do not depend on it
            beyond rounding.
        output: ``"pandas"`` (a DataFrame, the default), ``"arrow"`` (a
            pyarrow Table: strings dictionary-encoded, ``period``
            ``timestamp[ns, UTC]``) or ``"polars"`` (a Polars DataFrame);
            the last two are built from the engine's arrays, not through pandas.
        downtime: optional windows in which a resource could not be used
            (maintenance, a drained or failed node): ``resource_id, start,
            end`` [, ``reason``]. The down part of each line goes to a
            ``__down__`` row, neither a workload's nor idle; busy samples
            inside a window are dropped and counted (docs/semantics.md, 10;
            :func:`gpucost.read_slurm_events` reads Slurm's node events).
        pue: the data centre's power usage effectiveness (>= 1): with
            ``power_w``, adds ``facility_energy_kwh = energy_kwh * pue``.
        carbon_intensity: grid intensity in gCO2e/kWh, a number or a table
            ``start, end, g_per_kwh`` matched to each sample's instant: with
            ``power_w``, adds ``co2e_kg`` (of the facility energy when ``pue``
            is given). Location-based; docs/energy.md.

    Returns:
        One row per group, sorted by ``by``: the ``by`` columns (then
        ``currency`` when costs have one), then ``cost, idle_cost,
        [list_cost], gpu_hours, effective_gpu_hours, mem_gib_hours,
        cost_per_effective_gpu_hour`` [, ``energy_kwh``,
        ``facility_energy_kwh``, ``co2e_kg``]; ``.attrs["diagnostics"]`` holds counts
        and ``.attrs["join"]`` how bill and telemetry joined, per resource
        (:func:`gpucost.result_attrs` gives both for every ``output``).

    Raises:
        gpucost.InvalidInputError: bad input, naming the table, row and column;
            a bad ``threads`` or ``output``.
        gpucost.JoinError: no usage sample joined a billed GPU line (or, with
            ``strict``, any join problem).

    Warns:
        gpucost.JoinWarning: one per join problem that changes the numbers
            (docs/semantics.md, "What gpucost refuses, repairs and warns about").

    Examples:
        One GPU billed $8 for two hours, sampled every 30 minutes: ``train``
        held it for an hour, ``infer`` for half an hour, nobody for the last
        half hour (a sample without consumer):

        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")], "cost": [8.0]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", "train", "infer", None],
        ...                       "share": 1.0, "util": [0.9, 0.8, 0.3, 0.0], "mem_used": 40 * 2**30})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> workloads = pd.DataFrame({"consumer": ["train", "infer"], "team": ["research", "product"]})
        >>> result = gpucost.allocate(costs, usage, inventory, workloads, by="team")
        >>> result[["team", "cost", "idle_cost", "gpu_hours", "effective_gpu_hours"]]
               team  cost  idle_cost  gpu_hours  effective_gpu_hours
        0  __idle__   2.0        2.0        0.5                 0.00
        1   product   2.0        0.0        0.5                 0.15
        2  research   4.0        0.0        1.0                 0.85
        >>> print(result["cost"].sum())   # money in == money out
        8.0
        >>> result.attrs["diagnostics"]["interval"]   # inferred from the timestamps
        1800.0
        >>> gpucost.allocate(costs, usage, inventory, basis="used", idle="share")[["consumer", "cost"]]
          consumer  cost
        0    infer   1.2
        1    train   6.8
        >>> gpucost.allocate(costs, usage, inventory, output="arrow").column_names[:3]
        ['consumer', 'cost', 'idle_cost']

        With the GPU's draw (``power_w``), energy and CO2e per workload; the
        free half hour's 60 W is idle energy:

        >>> usage["power_w"] = [700.0, 650.0, 300.0, 60.0]
        >>> gpucost.allocate(costs, usage, inventory, pue=1.3, carbon_intensity=400)[
        ...     ["consumer", "energy_kwh", "facility_energy_kwh", "co2e_kg"]]
           consumer  energy_kwh  facility_energy_kwh  co2e_kg
        0  __idle__       0.030               0.0390   0.0156
        1     infer       0.150               0.1950   0.0780
        2     train       0.675               0.8775   0.3510
    """
    output = check_output(output)
    policy = _policy(basis, alpha, idle, interval, by, freq, threads)
    _memory_for_blended(usage, basis)
    costs_table = Table(costs, "costs")
    if isinstance(usage, UsageChunks) and "power_estimated" not in usage.columns:
        # Chunks kept on disk are streamed (estimated power needs every sample twice: read whole below).
        allocator = Allocator(costs_table, inventory, workloads, basis=basis, alpha=alpha, idle=idle,
                              interval=interval, by=by, freq=freq, threads=threads, downtime=downtime, pue=pue,
                              carbon_intensity=carbon_intensity, ordered_chunks=usage.ordered)
        result = allocator.add_all(usage.tables()).finish(output=output)
    else:
        usage_table = Table(usage, "usage")
        energy = _energy(pue, carbon_intensity)
        tables = (_with_regions(cost_columns(costs_table), costs_table, energy), usage_columns(usage_table, threads),
                  inventory_columns(inventory), workload_columns(workloads))
        raw = _core.allocate(*tables, **policy, downtime=downtime_columns(downtime), **energy)
        raw = _with_estimated_energy(raw, tables, usage_table,
                                     dict(policy, downtime=downtime_columns(downtime), **energy))
        result = allocation_result(raw, output)
    # pandas costs keep their attrs (the bill reader's report); Arrow ones are read once.
    check_public_call(result, costs_table.data, usage, strict=strict, workloads=workloads, downtime=downtime)
    return result


class Allocator:
    """Streaming allocation: give cost lines and inventory up front, then usage
    in chunks of any size and order; ``finish()`` returns what :func:`allocate`
    would for all the chunks together. Memory grows with cost lines and
    consumers, and by 16 bytes per sample: the record that finds rows read
    twice across chunks (two replicas' files read one after the other).
    ``ordered_chunks=True`` promises that no chunk goes back in time (days in
    order, or a table sorted by time and cut anywhere): a row can then repeat
    an earlier chunk's only at its newest instant, so only the rows there are
    kept and memory is set by the chunk and the result; a sample before an
    earlier chunk's newest instant is an error naming its row. Without a duration column the interval is
    inferred from the first chunk (give ``interval`` when chunks are not in
    time order). Tables and chunks may be anything :func:`allocate` takes;
    ``threads`` is fixed here.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")], "cost": [8.0]})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", "train", "infer", "infer"],
        ...                       "share": 1.0, "util": 0.5, "mem_used": 40 * 2**30})
        >>> alloc = gpucost.Allocator(costs, inventory, interval=1800)
        >>> alloc.add(usage.iloc[2:])   # chunks of any size, in any order
        >>> alloc.add(usage.iloc[:2])
        >>> alloc.finish()[["consumer", "cost", "gpu_hours"]]
           consumer  cost  gpu_hours
        0  __idle__   0.0        0.0
        1     infer   4.0        1.0
        2     train   4.0        1.0

        Chunks promised never to go back in time (the same result, in the
        memory of a chunk); one that does is refused:

        >>> alloc = gpucost.Allocator(costs, inventory, interval=1800, ordered_chunks=True)
        >>> alloc.add(usage.iloc[:2])
        >>> alloc.add(usage.iloc[2:])
        >>> alloc.finish()[["consumer", "cost", "gpu_hours"]]
           consumer  cost  gpu_hours
        0  __idle__   0.0        0.0
        1     infer   4.0        1.0
        2     train   4.0        1.0
        >>> alloc = gpucost.Allocator(costs, inventory, interval=1800, ordered_chunks=True)
        >>> alloc.add(usage.iloc[2:])
        >>> alloc.add(usage.iloc[:2])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: usage: row 2, column 'timestamp': 2026-03-01T00:00:00Z is before 2026-03-01T01:30:00Z, the newest instant of an earlier chunk (this chunk starts at row 2): ...
    """

    def __init__(self, costs: Any, inventory: Any, workloads: Any = None, *, basis: str = "allocated",
                 alpha: float = 0.5, idle: str = "keep", interval: float | None = None,
                 by: Sequence[str] | str = ("consumer",), freq: str | None = None, threads: int | None = None,
                 downtime: Any = None, pue: float | None = None, carbon_intensity: Any = None,
                 ordered_chunks: bool = False):
        policy = _policy(basis, alpha, idle, interval, by, freq, threads)
        energy = _energy(pue, carbon_intensity)
        costs_table = Table(costs, "costs")
        self._core = _core.Allocator(_with_regions(cost_columns(costs_table), costs_table, energy),
                                     inventory_columns(inventory), workload_columns(workloads), **policy,
                                     downtime=downtime_columns(downtime), **energy,
                                     ordered_chunks=bool(ordered_chunks))
        self._rows = 0  # samples added so far
        self._basis = basis
        self._threads = policy["threads"]
        self._failed = False

    def add(self, usage: Any) -> None:
        """Adds one chunk of usage samples. Rows in errors count from the first
        row of the first chunk; after an error the allocator refuses to finish."""
        try:
            _memory_for_blended(usage, self._basis)
            columns = usage_columns(usage, self._threads)
        except InvalidInputError as exc:
            self._failed = True
            raise shift_rows(exc, "usage", self._rows) from None
        self._core.add_samples(columns)
        self._rows += len(columns["timestamp"])

    def went_back_in_time(self) -> bool:
        """Whether :meth:`add` refused a chunk only for going back in time
        (``ordered_chunks=True``): a caller that can read its chunks again
        may start over with an allocator not told so and get the same
        result (:func:`gpucost.allocate_stream` does, for files).

        Examples:
            >>> costs = pd.DataFrame({"resource_id": ["node-1"], "cost": [8.0],
            ...                       "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
            ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")]})
            >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
            >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
            ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
            ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
            >>> alloc = gpucost.Allocator(costs, inventory, interval=1800, ordered_chunks=True)
            >>> alloc.add(usage.iloc[2:])
            >>> try:
            ...     alloc.add(usage.iloc[:2])
            ... except gpucost.InvalidInputError:
            ...     print(alloc.went_back_in_time())
            True
            >>> again = gpucost.Allocator(costs, inventory, interval=1800)  # no promise: the chunks read again
            >>> print(again.add_all([usage.iloc[2:], usage.iloc[:2]]).finish()["cost"].sum())
            8.0
        """
        return self._core.went_back_in_time()

    def add_all(self, chunks: Iterable[Any]) -> Allocator:
        for chunk in chunks:
            self.add(chunk)
        return self

    def finish(self, *, output: str = "pandas") -> Any:
        """The allocation of every chunk added, as ``output`` asks
        (``"pandas"``, ``"arrow"`` or ``"polars"``, as for :func:`allocate`)."""
        output = check_output(output)
        if self._failed:
            raise InvalidInputError("usage: a chunk was rejected; the allocation would be partial")
        return allocation_result(self._core.finish(), output)
