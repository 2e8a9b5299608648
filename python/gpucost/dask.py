"""gpucost.dask.allocate: the allocation of tables too big for one machine,
on a Dask cluster.

How (docs/scale.md): cost lines and usage samples are shuffled by a hash of
``resource_id`` into the same number of partitions, so partition ``k`` of
both tables holds every line and every sample of the resources it holds.
Each pair of partitions is allocated by the engine (:func:`gpucost.allocate`)
on a worker; the partial results are summed in a tree. The Distribution
invariant (docs/semantics.md, section 4) makes this exact: a resource's
lines are prorated only over its own samples, so per-resource results add
up to the whole. Nothing of the proration is re-implemented here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpucost.allocation import allocate as _allocate
from gpucost.allocation import combine_diagnostics, combine_joins, infer_interval, series_spacings
from gpucost.chunks import COST_CSV_TYPES, USAGE_CSV_TYPES, _csv_batches, expand_paths, is_path_like, read_table
from gpucost.errors import ROW_ERROR, InvalidInputError, conversion_hint
from gpucost.join import check_public_call

__all__ = ["allocate", "allocate_graph", "combine_results", "read_csv"]

BUCKET = "_gpucost_bucket"
SOURCE = "_gpucost_source"
LINE = "_gpucost_line"
SUMMED = ("cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours", "energy_kwh",
          "facility_energy_kwh", "co2e_kg", "embodied_co2e_kg")
FAN_IN = 16  # partial results combined per reduction task


def read_csv(paths: Any, table: str = "usage") -> dd.DataFrame:
    """A dask DataFrame of CSV files (a path, a glob or a list; ``.gz`` etc.
    by name), one partition per file, read with pyarrow. Instants become
    ``datetime64[ns, UTC]`` (naive = UTC, integers = ns), ids categoricals.
    Each row keeps its file and line, so errors can name them.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> t = pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": np.tile(t, 2), "resource_id": np.repeat(["node-1", "node-2"], 4),
        ...                       "device": 0, "consumer": ["train", "train", "infer", "infer"] * 2, "share": 1.0,
        ...                       "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> usage.iloc[:4].to_csv("usage-0.csv", index=False)
        >>> usage.iloc[4:].to_csv("usage-1.csv", index=False)
        >>> frame = gpucost.dask.read_csv("usage-*.csv")
        >>> frame.npartitions, list(frame.columns)[:7]
        (2, ['timestamp', 'resource_id', 'device', 'consumer', 'share', 'util', 'mem_used'])
        >>> frame.compute()[["timestamp", "resource_id", "consumer", "_gpucost_line"]].head(2)
                          timestamp resource_id consumer  _gpucost_line
        0 2026-03-01 00:00:00+00:00      node-1    train              2
        1 2026-03-01 00:30:00+00:00      node-1    train              3
    """
    files = expand_paths(paths)
    types = USAGE_CSV_TYPES if table == "usage" else COST_CSV_TYPES
    meta = _read_file(files[0], table, types, head=True)
    return dd.from_map(_read_file, files, table=table, types=types, meta=meta, enforce_metadata=False,
                       divisions=None, label=f"gpucost-read-{table}")


def _read_file(path: str, table: str, types: dict, head: bool = False) -> pd.DataFrame:
    batches = []
    for batch in _csv_batches(path, 1 << 26, types):
        batches.append(batch)
        if head:
            break
    if not batches:
        raise InvalidInputError(f"{path}: no header line")
    data = pa.Table.from_batches(batches)
    columns = {}
    for name in data.column_names:
        col = data.column(name)
        if name in ("timestamp", "start", "end"):
            if pa.types.is_integer(col.type):  # nanoseconds since the epoch
                col = col.cast(pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
            elif pa.types.is_timestamp(col.type):  # naive = UTC: Arrow stores UTC either way
                col = col.cast(pa.timestamp(col.type.unit, tz=col.type.tz or "UTC")).cast(pa.timestamp("ns", tz="UTC"))
        elif name in ("resource_id", "consumer") and pa.types.is_string(col.type):
            col = pc.dictionary_encode(col)
        columns[name] = col
    frame = pa.table(columns).to_pandas()
    if head:
        frame = frame.iloc[:0]
    frame[SOURCE] = pd.Categorical([path] * len(frame), categories=[path]) if len(frame) else \
        pd.Categorical([], categories=[path])
    frame[LINE] = np.arange(2, len(frame) + 2, dtype=np.int64)  # line 1 is the header
    return frame


def _as_dask(data: Any, table: str, npartitions: int | None) -> dd.DataFrame:
    if isinstance(data, dd.DataFrame):
        return data
    if is_path_like(data):
        return read_csv(data, table)
    if isinstance(data, pa.Table):
        data = data.to_pandas()
    if isinstance(data, pd.DataFrame):
        return dd.from_pandas(data, npartitions=npartitions or 1, sort=False)
    raise TypeError(f"{table}: expected a dask or pandas DataFrame or CSV paths, got {type(data).__name__}{conversion_hint(data)}")


def _small(data: Any, table: str) -> Any:
    """Inventory and workloads: small, given whole to every partition."""
    if data is None:
        return None
    if isinstance(data, dd.DataFrame):
        return data.compute()
    frame = read_table(data, table)
    return frame.to_pandas() if isinstance(frame, pa.Table) else frame


def _with_bucket(df: pd.DataFrame, buckets: int) -> pd.DataFrame:
    """Adds the partition number of every row: a stable hash of the
    resource id as text (the same for object, str and categorical columns,
    in every process). Missing ids share one bucket."""
    ids = df["resource_id"]
    text = ids.astype("object").where(ids.notna(), "\x00null").astype(str).to_numpy(dtype=object)
    hashed = pd.util.hash_array(text, categorize=True)
    return df.assign(**{BUCKET: (hashed % np.uint64(buckets)).astype(np.int64)})


def _shuffled(df: dd.DataFrame, buckets: int, method: str | None) -> dd.DataFrame:
    meta = df._meta.assign(**{BUCKET: np.array([], dtype=np.int64)})
    tagged = df.map_partitions(_with_bucket, buckets, meta=meta)
    return tagged.shuffle(BUCKET, npartitions=buckets, **({"shuffle_method": method} if method else {}))


def _describe(df: pd.DataFrame, row: int, table: str) -> str:
    """Where a row of a shuffled partition came from: its file and line when
    it was read from a file, else what identifies it."""
    if SOURCE in df.columns:
        return f"{df[SOURCE].iloc[row]}: line {int(df[LINE].iloc[row])}"
    keys = ["timestamp", "resource_id", "device", "consumer"] if table == "usage" else ["resource_id", "start", "end"]
    values = ", ".join(f"{k}={df[k].iloc[row]!r}" for k in keys if k in df.columns)
    return f"{table}: the row with {values}"


def _allocate_partition(costs: pd.DataFrame, usage: pd.DataFrame, inventory: Any, workloads: Any,
                        policy: dict) -> tuple[pd.DataFrame, dict]:
    """The engine on one partition; errors restated with the row's origin."""
    try:
        result = _allocate(costs, usage, inventory, workloads, **policy)
    except InvalidInputError as exc:
        match = ROW_ERROR.match(str(exc))
        if match and match["table"] in ("costs", "usage"):
            frame = costs if match["table"] == "costs" else usage
            row = int(match["row"])
            if row < len(frame):
                # A partition's row number means nothing to the user: the
                # message names the row by its values, the fields keep the rest.
                raise InvalidInputError(f"{_describe(frame, row, match['table'])}, {match['rest']}",
                                        **{**exc.location(), "row": None}) from None
        raise
    diagnostics = dict(result.attrs.get("diagnostics", {}))
    join = result.attrs.get("join")
    result.attrs = {}
    return result, diagnostics, join


def _partition_spacings(usage: pd.DataFrame) -> np.ndarray:
    """The series spacings of one shuffled partition (it holds whole series)."""
    return series_spacings(usage) if len(usage) else np.empty(0)


def _interval_of(spacings: Sequence[np.ndarray]) -> float:
    return infer_interval(np.concatenate([np.asarray(s, dtype=float) for s in spacings]) if spacings else [])


def combine_results(parts: Sequence[tuple[pd.DataFrame, dict, pd.DataFrame]],
                    by: Sequence[str]) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """Sums partial results of disjoint sets of resources: metrics by group,
    diagnostics by name, join tables by resource and currency;
    ``cost_per_effective_gpu_hour`` recomputed.

    Examples:
        Two resources allocated apart, then summed:

        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> t = pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": np.tile(t, 2), "resource_id": np.repeat(["node-1", "node-2"], 4),
        ...                       "device": 0, "consumer": ["train", "train", "infer", "infer"] * 2, "share": 1.0,
        ...                       "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> parts = [gpucost.allocate(costs[costs["resource_id"] == node], usage[usage["resource_id"] == node],
        ...                           inventory) for node in ("node-1", "node-2")]
        >>> result, diagnostics, join = gpucost.dask.combine_results(
        ...     [(part, part.attrs["diagnostics"], part.attrs["join"]) for part in parts], by=["consumer"])
        >>> result[["consumer", "cost", "gpu_hours"]]
           consumer  cost  gpu_hours
        0  __idle__   0.0        0.0
        1     infer   7.0        2.0
        2     train   7.0        2.0
        >>> diagnostics["samples_used"], join["resource_id"].tolist()
        (8, ['node-1', 'node-2'])
    """
    by = list(by)
    frames = [frame for frame, _, _ in parts if len(frame)]
    diagnostics = combine_diagnostics(diag for _, diag, _ in parts)
    join = combine_joins([j for _, _, j in parts])
    template = parts[0][0]
    if "currency" in template.columns and "currency" not in by:
        by = by + ["currency"]
    if not frames:
        return template.iloc[:0].copy(), diagnostics, join
    metrics = [c for c in SUMMED if c in template.columns]
    summed = pd.concat(frames, ignore_index=True).groupby(by, sort=True, as_index=False)[metrics].sum()
    with np.errstate(all="ignore"):
        summed["cost_per_effective_gpu_hour"] = np.where(summed["effective_gpu_hours"] == 0, np.nan,
                                                         summed["cost"] / summed["effective_gpu_hours"])
    for name in by:
        if name != "period":
            summed[name] = summed[name].astype("str")
    return summed[list(template.columns)], diagnostics, join


def _finish(part: tuple[pd.DataFrame, dict, pd.DataFrame]) -> pd.DataFrame:
    frame, diagnostics, join = part
    frame = frame.reset_index(drop=True)
    frame.attrs["diagnostics"] = diagnostics
    frame.attrs["join"] = join
    return frame


def allocate_graph(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *,
                   npartitions: int | None = None, shuffle_method: str | None = None,
                   **policy: Any) -> Any:
    """The lazy form of :func:`allocate`: a ``dask.delayed`` object whose
    ``compute()`` (or ``client.compute``) gives the result frame.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> t = pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": np.tile(t, 2), "resource_id": np.repeat(["node-1", "node-2"], 4),
        ...                       "device": 0, "consumer": ["train", "train", "infer", "infer"] * 2, "share": 1.0,
        ...                       "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> graph = gpucost.dask.allocate_graph(costs, usage, inventory, npartitions=2)
        >>> type(graph).__name__
        'Delayed'
        >>> graph.compute()[["consumer", "cost"]]
           consumer  cost
        0  __idle__   0.0
        1     infer   7.0
        2     train   7.0
    """
    by = policy.get("by", ("consumer",))
    by = [by] if isinstance(by, str) else list(by)
    usage_dd = _as_dask(usage, "usage", npartitions)
    costs_dd = _as_dask(costs, "costs", 1)
    buckets = int(npartitions or max(usage_dd.npartitions, costs_dd.npartitions))
    if buckets <= 0:
        raise InvalidInputError(f"npartitions: must be positive, got {buckets}")
    inventory_d = dask.delayed(_small(inventory, "inventory"), pure=True)
    workloads_d = dask.delayed(_small(workloads, "workloads"), pure=True)
    costs_parts = _shuffled(costs_dd, buckets, shuffle_method).to_delayed()
    usage_parts = _shuffled(usage_dd, buckets, shuffle_method).to_delayed()
    if policy.get("interval") is None and "duration" not in usage_dd.columns:
        # One interval for every partition (SEMANTICS 4, Distribution): the
        # median over all series, each whole in its partition.
        spacings = [dask.delayed(_partition_spacings, pure=True)(u) for u in usage_parts]
        policy = dict(policy, interval=dask.delayed(_interval_of, pure=True)(spacings))
    partial = dask.delayed(_allocate_partition, pure=True)
    level = [partial(c, u, inventory_d, workloads_d, policy) for c, u in zip(costs_parts, usage_parts, strict=True)]
    combine = dask.delayed(combine_results, pure=True)
    while len(level) > 1:
        level = [combine(level[i:i + FAN_IN], by) for i in range(0, len(level), FAN_IN)]
    return dask.delayed(_finish, pure=True)(level[0])


def allocate(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *,
             npartitions: int | None = None, shuffle_method: str | None = None, **policy: Any) -> pd.DataFrame:
    """:func:`gpucost.allocate` on a Dask cluster (the current client, or
    Dask's default scheduler without one).

    Args:
        costs, usage: dask or pandas DataFrames, or CSV paths / globs (one
            partition per file; ``.gz`` etc. by name).
        inventory, workloads: pandas (or dask) DataFrames or CSV paths; small,
            sent whole to every partition.
        npartitions: partitions after the shuffle by resource (default: as
            many as the larger input has). Each holds about 1/npartitions of
            the samples; see docs/scale.md for sizing.
        shuffle_method: Dask's shuffle (``"p2p"``, ``"tasks"``; default: Dask's).
        **policy: basis, alpha, idle, interval, by, freq, as for allocate.

    Returns:
        What :func:`gpucost.allocate` returns for the same tables (equal to
        1e-9 relative), with the summed diagnostics in ``attrs``.

    Raises:
        gpucost.InvalidInputError: bad input, naming the file and line when
            read from files, else the table and the row's identifying values.

    Examples:
        Without a client, Dask's default scheduler runs it in this process;
        after ``client = dask.distributed.Client("scheduler:8786")`` the same
        call runs on the cluster, usage typically given as CSV globs
        (``"s3://telemetry/*.csv"``, one partition per file).

        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> t = pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": np.tile(t, 2), "resource_id": np.repeat(["node-1", "node-2"], 4),
        ...                       "device": 0, "consumer": ["train", "train", "infer", "infer"] * 2, "share": 1.0,
        ...                       "util": 0.5, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> result = gpucost.dask.allocate(costs, usage, inventory, npartitions=2)
        >>> result[["consumer", "cost", "gpu_hours"]]
           consumer  cost  gpu_hours
        0  __idle__   0.0        0.0
        1     infer   7.0        2.0
        2     train   7.0        2.0
        >>> result.attrs["diagnostics"]["samples_used"]
        8
        >>> usage.to_csv("usage.csv.gz", index=False)
        >>> gpucost.dask.allocate(costs, "usage*.csv.gz", inventory)["cost"].tolist()
        [0.0, 7.0, 7.0]
    """
    strict = bool(policy.pop("strict", False))
    result = allocate_graph(costs, usage, inventory, workloads, npartitions=npartitions,
                            shuffle_method=shuffle_method, **policy).compute()
    # gpucost.allocate's join rule, once, over the whole result (each partition's allocation is quiet).
    check_public_call(result, costs if isinstance(costs, pd.DataFrame | pa.Table) else None,
                      usage if isinstance(usage, pd.DataFrame) else None, strict=strict, workloads=workloads)
    return result

