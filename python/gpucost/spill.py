"""Usage samples kept on disk in chunks, read back a chunk at a time.

A month of telemetry is too big to hold for the commands that look at it
more than once (the report allocates it by team, by day, by project, finds
idle spans, draws its utilisation). :class:`UsageChunks` writes each chunk
as it is read (an Arrow IPC file, a UTC day say) and gives it back at each
use: :func:`gpucost.allocate` and :func:`gpucost.find_idle` stream it, and
everything else that takes a usage table reads it whole through the Arrow
interface (issue 29).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["UsageChunks"]

# Buffers of the chunks' filters and conversions from malloc, not Arrow's own pool: freed, they go
# back to the system at once (the CLI maps large blocks: plan._map_large_blocks) rather than be kept.
_POOL = pa.system_memory_pool()

# Telemetry compresses ~10x (a month by pod: 839 MB -> 87 MB), written and read back faster than raw
# bytes go to disk; decompressed chunks own their memory (no file kept mapped by a column's slice).
_LZ4 = pa.ipc.IpcWriteOptions(compression="lz4")



class UsageChunks:
    """Usage samples kept in chunks on disk (Arrow IPC files in a temporary
    folder) and read back one chunk at a time at each use, so that a table
    too big to hold (a month of a fleet) can still be looked at many times.
    (LZ4-compressed: a month of a 256-GPU fleet by pod is about 90 MB).
    :func:`gpucost.allocate` and :func:`gpucost.report` take it where they
    take a usage table and give the same numbers, in the memory of a chunk:
    allocations and idle spans stream the chunks (``ordered``: they never go
    back in time, as a day at a time does); anything else reads the chunks
    whole. ``attrs`` are the usage's
    (the telemetry reader's report). The files are deleted by :meth:`close`
    (or ``with``), when the object is collected, or at the latest when
    Python exits.

    Examples:
        Two days of samples, kept as two chunks and allocated from them:

        >>> t = pd.date_range("2026-03-01 23:00", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "node-1", "device": 0,
        ...                       "consumer": ["train", "train", "infer", "infer"], "share": 1.0, "util": 0.5,
        ...                       "mem_used": 0.0})
        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "start": [t[0]], "end": [t[0] + pd.Timedelta("2h")],
        ...                       "cost": [8.0]})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> with gpucost.UsageChunks.spill([usage.iloc[:2], usage.iloc[2:]]) as chunks:
        ...     print(len(chunks), chunks.chunks)
        ...     print(gpucost.allocate(costs, chunks, inventory, interval=1800)[["consumer", "cost"]])
        4 2
           consumer  cost
        0  __idle__   0.0
        1     infer   4.0
        2     train   4.0
    """

    def __init__(self, paths: Sequence[str], rows: Sequence[int], columns: Sequence[str],
                 per_resource: dict[str, int], *, attrs: dict | None = None, ordered: bool = True,
                 folder: str | None = None, transform: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                 owner: UsageChunks | None = None):
        self._paths, self._rows = list(paths), list(rows)
        self.columns = list(columns)
        self._per_resource = dict(per_resource)
        self.attrs: dict = dict(attrs or {})
        self.ordered = ordered
        # The folder (None: a view of another's files) deleted when collected, closed, or at exit at the latest.
        self._delete = weakref.finalize(self, shutil.rmtree, folder, True) if folder is not None else None
        self._transform = transform
        self._owner = owner  # a view keeps the object whose files it reads

    @classmethod
    def spill(cls, frames: Iterable[Any], *, folder: str | os.PathLike | None = None,
              leave_out: Sequence[str] = (), ordered: bool | None = None) -> UsageChunks:
        """Each frame of ``frames`` (pandas or Arrow usage tables) written to
        a file of its own in a new temporary folder (in ``folder``, else the
        system's: ``TMPDIR``), without the columns of ``leave_out``; one
        frame is held at a time. ``attrs`` are the last frame's.
        ``ordered``: True promises that no frame goes back in time (an
        allocation refuses a row before an earlier frame's newest instant);
        None (the default) finds it from each frame's first and last
        ``timestamp``, so frames in time order are streamed as such though
        nobody said so; False reads them as going back.

        >>> t = pd.date_range("2026-03-01", periods=4, freq="h", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": ["a", "b"] * 2, "device": 0, "consumer": "x",
        ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> with gpucost.UsageChunks.spill([usage.iloc[:2], usage.iloc[2:]]) as hours:
        ...     print(hours.ordered)
        True
        >>> with gpucost.UsageChunks.spill([usage.iloc[2:], usage.iloc[:2]]) as back:
        ...     print(back.ordered)
        False
        """
        where = tempfile.mkdtemp(prefix="gpucost-usage-", dir=None if folder is None else os.fspath(folder))
        paths, rows, columns, per_resource, attrs = [], [], {}, {}, {}
        in_order = _TimeOrder() if ordered is None else None
        try:
            for frame in frames:
                attrs = dict(getattr(frame, "attrs", None) or {}) or attrs
                table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
                table = table.drop_columns([c for c in leave_out if c in table.column_names])
                columns.update(dict.fromkeys(table.column_names))
                _count_resources(table, per_resource)
                if in_order is not None:
                    in_order.add(table)
                path = os.path.join(where, f"{len(paths):06d}.arrow")
                _write(path, table)
                paths.append(path)
                rows.append(table.num_rows)
                del table, frame
        except BaseException:
            shutil.rmtree(where, ignore_errors=True)
            raise
        if in_order is not None:
            ordered = in_order.holds
        return cls(paths, rows, list(columns), per_resource, attrs=attrs, ordered=bool(ordered), folder=where)

    @property
    def chunks(self) -> int:
        """How many chunks there are."""
        return len(self._paths)

    def __len__(self) -> int:
        """The number of samples (before any :meth:`map`)."""
        return sum(self._rows)

    def __iter__(self) -> Iterator[pd.DataFrame]:
        """Each chunk as a pandas DataFrame (categorical strings), in order."""
        for table in self.arrow_chunks():
            frame = table.to_pandas(memory_pool=_POOL)
            yield frame if self._transform is None else self._transform(frame)

    def arrow_chunks(self) -> Iterator[pa.Table]:
        """Each chunk as it was written, an Arrow table (before any :meth:`map`)."""
        for path in self._paths:
            yield _read(path)

    def tables(self) -> Iterator[Any]:
        """Each chunk in the cheapest form a reader of usage takes: the Arrow
        table as written, or, after a :meth:`map`, its pandas frame."""
        return self.arrow_chunks() if self.is_plain() else iter(self)

    def _arrow_tables(self) -> Iterator[pa.Table]:
        """Each chunk as an Arrow table, after any :meth:`map`."""
        if self.is_plain():
            return self.arrow_chunks()
        return (pa.Table.from_pandas(frame, preserve_index=False) for frame in self)

    def is_plain(self) -> bool:
        """Whether the chunks are read as written (no :meth:`map`)."""
        return self._transform is None

    def map(self, transform: Callable[[pd.DataFrame], pd.DataFrame]) -> UsageChunks:
        """The same chunks, each passed through ``transform`` as it is read
        (a filter, say); the files stay this object's."""
        before = self._transform
        chained = transform if before is None else (lambda frame: transform(before(frame)))
        return UsageChunks(self._paths, self._rows, self.columns, self._per_resource, attrs=self.attrs,
                           ordered=self.ordered, folder=None, transform=chained, owner=self._owner or self)

    def by_day(self) -> UsageChunks:
        """The same samples as chunks that never go back in time, for the
        readers that need them (the idle pass): ``self`` when ``ordered``;
        otherwise new chunks, a UTC day of ``timestamp`` each, made holding
        one chunk and then one day at a time (each chunk is cut by day into
        pieces on disk; a day's pieces are joined into its chunk). Close
        them when done (a new object's files are its own).

        >>> t = pd.date_range("2026-03-01 23:00", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": ["a", "b"] * 2, "device": 0,
        ...                       "consumer": "train", "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> hosts = gpucost.UsageChunks.spill([usage[usage.resource_id == "a"], usage[usage.resource_id == "b"]],
        ...                                   ordered=False)
        >>> with hosts.by_day() as days:
        ...     print(days.ordered, [list(day["timestamp"].dt.strftime("%d %H:%M")) for day in days])
        True [['01 23:00', '01 23:30'], ['02 00:00', '02 00:30']]
        """
        if self.ordered:
            return self
        where = tempfile.mkdtemp(prefix="gpucost-days-")
        try:
            pieces: dict[int, list[str]] = {}
            for k, table in enumerate(self._arrow_tables()):
                day = table.column("timestamp").to_numpy().astype("datetime64[D]").astype(np.int64)
                order = np.argsort(day, kind="stable")
                days, starts = np.unique(day[order], return_index=True)
                for d, lo, hi in zip(days, starts, np.append(starts[1:], len(order))):
                    path = os.path.join(where, f"{int(d)}-{k:06d}.arrow")
                    _write(path, table.take(pa.array(order[lo:hi])))
                    pieces.setdefault(int(d), []).append(path)
                del table
            # A day's pieces as one batch (an IPC file holds one dictionary per column).
            frames = (pa.concat_tables([_read(path) for path in pieces[d]], promote_options="permissive",
                                       memory_pool=_POOL).unify_dictionaries(_POOL).combine_chunks(_POOL)
                      for d in sorted(pieces))
            return UsageChunks.spill(frames, ordered=True)
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def samples_per_resource(self) -> dict[str, int]:
        """Samples of each ``resource_id`` (before any :meth:`map`)."""
        return dict(self._per_resource)

    def of_resources(self, resources: Iterable[str]) -> pd.DataFrame:
        """The samples of ``resources`` only, as one table (chunk order)."""
        if not self.is_plain():
            return _concat([frame[_in(frame["resource_id"], resources)] for frame in self])
        return self.arrow_of_resources(resources).to_pandas()

    def arrow_of_resources(self, resources: Iterable[str]) -> pa.Table:
        """:meth:`of_resources` as an Arrow table, filtered before any
        conversion (the chunks as written: no :meth:`map`)."""
        wanted = set(resources)
        parts = [pc.filter(table, _in(table.column("resource_id"), wanted), memory_pool=_POOL)
                 for table in self.arrow_chunks()]
        return pa.concat_tables(parts, promote_options="permissive", memory_pool=_POOL)

    def whole(self) -> pd.DataFrame:
        """Every chunk as one pandas table (the memory of the whole)."""
        usage = _concat(list(self))
        usage.attrs = self.attrs
        return usage

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        # Anything taking a table through the Arrow interface reads the chunks whole.
        tables = list(self._arrow_tables())
        if not tables:
            raise ValueError("usage: no chunks")
        whole = pa.concat_tables(tables, promote_options="permissive")
        return whole.__arrow_c_stream__(requested_schema)

    def close(self) -> None:
        """Deletes the files (this object's, not a :meth:`map` view's)."""
        if self._delete is not None:
            self._delete()
            self._paths = []

    def __enter__(self) -> UsageChunks:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"UsageChunks({len(self):,} samples in {self.chunks} chunks; columns {', '.join(self.columns)})"


def _write(path: str, table: pa.Table) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema, options=_LZ4) as writer:
        writer.write_table(table)


def _read(path: str) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(path), memory_pool=_POOL).read_all()


def _in(column: Any, names: set[str]) -> np.ndarray:
    """Which rows of a string column (pandas or Arrow, dictionary-encoded
    or not) hold one of ``names``: on the dictionary, never a string per row."""
    if isinstance(column, pd.Series):
        column = pa.chunked_array([pa.array(column.array)]) if isinstance(column.dtype, pd.CategoricalDtype) \
            else pa.chunked_array([pa.array(column.astype(object).to_numpy(), type=pa.string(), from_pandas=True)])
    parts = []
    for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]):
        if pa.types.is_dictionary(chunk.type):
            keep = np.asarray([v in names for v in chunk.dictionary.to_pylist()] + [False], dtype=bool)
            codes = chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            parts.append(keep[codes])
        else:
            parts.append(pc.is_in(chunk, value_set=pa.array(sorted(names), type=pa.string())).fill_null(
                False).to_numpy(zero_copy_only=False))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


_NANOS_PER = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


class _TimeOrder:
    """Whether tables added one after another never go back in time: each
    one's first instant at or after the newest of those before it (the
    Allocator's ``ordered_chunks`` promise). Nulls are the Allocator's to
    refuse; a ``timestamp`` that is not an Arrow timestamp proves nothing."""

    def __init__(self) -> None:
        self.holds = True
        self._newest: int | None = None

    def add(self, table: pa.Table) -> None:
        if not self.holds or table.num_rows == 0:
            return
        column = table.column("timestamp") if "timestamp" in table.column_names else None
        if column is None or not pa.types.is_timestamp(column.type):
            self.holds = False
            return
        bounds = pc.min_max(column)
        if bounds["min"].value is None:  # every instant null
            return
        # In nanoseconds as Python integers: no cast to fail on an instant beyond 2262 (the Allocator names it).
        scale = _NANOS_PER[column.type.unit]
        first, last = bounds["min"].value * scale, bounds["max"].value * scale
        if self._newest is not None and first < self._newest:
            self.holds = False
        self._newest = last if self._newest is None else max(self._newest, last)


def _count_resources(table: pa.Table, counts: dict[str, int]) -> None:
    if "resource_id" not in table.column_names:
        return
    for item in table.column("resource_id").value_counts().to_pylist():
        name = "" if item["values"] is None else str(item["values"])
        counts[name] = counts.get(name, 0) + int(item["counts"])


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Frames as one, categorical columns kept categorical (their categories united)."""
    from pandas.api.types import union_categoricals
    if not parts:
        return pd.DataFrame()
    if len(parts) == 1:
        return parts[0].reset_index(drop=True)
    columns = {}
    for name in dict.fromkeys(c for part in parts for c in part.columns):
        arrays = [part[name] for part in parts if name in part.columns]
        if len(arrays) == len(parts) and all(isinstance(a.dtype, pd.CategoricalDtype) for a in arrays):
            columns[name] = union_categoricals([a.array for a in arrays])
        else:
            columns[name] = pd.concat([part[name] if name in part.columns else pd.Series(pd.NA, index=part.index)
                                       for part in parts], ignore_index=True).array
    return pd.DataFrame(columns, copy=False)
