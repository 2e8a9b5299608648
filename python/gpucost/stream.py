"""gpucost.allocate_stream: allocation over telemetry read in chunks, in
bounded memory, on top of the streaming :class:`gpucost.Allocator`."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa

from gpucost.allocation import Allocator, resolve_threads
from gpucost.chunks import (COST_CSV_TYPES, close_items, csv_goes_back_in_time, expand_paths, is_path_like,
                            iter_chunks, parquet_order, read_ahead, read_table, relocate_error, write_result)
from gpucost.errors import InvalidInputError, shift_rows
from gpucost.frames import OUTPUTS

__all__ = ["allocate_stream"]


def _intensity(carbon_intensity: Any) -> Any:
    """A number as it is; a table or a CSV/Parquet path read whole."""
    if carbon_intensity is None or isinstance(carbon_intensity, int | float):
        return carbon_intensity
    return read_table(carbon_intensity, "carbon_intensity")


def allocate_stream(
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
    chunk_rows: int = 1_000_000,
    block_size: int = 1 << 26,
    progress: bool = False,
    total: int | None = None,
    output: str | os.PathLike | None = None,
    threads: int | None = None,
    downtime: Any = None,
    pue: float | None = None,
    carbon_intensity: Any = None,
    ordered_chunks: bool | None = None,
) -> Any:
    """:func:`gpucost.allocate` over usage read chunk by chunk: memory grows
    with cost lines and consumers, and by 16 bytes per sample (to find rows
    read twice across chunks; in time order, only at the newest instant);
    the samples themselves are never held.
    Without a duration column the interval is inferred from the first chunk
    (give ``interval`` when the chunks are not in time order).

    Args:
        costs, inventory, workloads: as for :func:`gpucost.allocate`; each may
            also be a CSV/Parquet path or glob (read whole: they are small).
        usage: a path, glob or list of CSV files (``.gz``, ``.bz2``, ``.zst``
            compression by name) or Parquet files; a DataFrame or Arrow table;
            an Arrow RecordBatchReader, a DuckDB relation, a Polars DataFrame
            or anything with the Arrow PyCapsule stream interface (read batch
            by batch; a Polars LazyFrame is collected first); or any iterable
            of such tables (a generator reading your source).
        basis, alpha, idle, interval, by, freq: the policy, as for allocate.
        downtime: windows a resource was down, as for allocate (a table or
            a CSV/Parquet path).
        pue, carbon_intensity: with a ``power_w`` column, facility energy and
            CO2e, as for allocate (the intensity a number, a table or a
            CSV/Parquet path).
        chunk_rows: rows per chunk when slicing frames and Parquet files.
        block_size: bytes of CSV read per chunk.
        progress: show a tqdm progress bar of samples (on stderr).
        total: the number of samples, when known, for the progress bar.
        output: ``"pandas"`` (the default), ``"arrow"`` or ``"polars"``: the
            kind of table returned, as for :func:`gpucost.allocate`. Any
            other value is a path (a ``pathlib.Path``, or a string with a
            suffix or a folder: ``out.parquet``, ``/dev/stdout``): the result
            is also written there (``.parquet`` or CSV), all or nothing (see
            :func:`gpucost.chunks.write_result`), and returned as pandas.
        threads: engine threads, as for :func:`gpucost.allocate`.
        ordered_chunks: ``True`` promises the usage never goes back in
            time (files or tables in time order, each sorted by time): the
            record of rows read twice is kept only at the newest instant, so
            memory no longer grows with the samples; a row before an earlier
            chunk's newest instant is an error naming it
            (:class:`gpucost.Allocator`). ``None`` (the default) finds out:
            usage that can be read again (files, a frame or table in memory)
            is first taken as in time order, and at the first chunk that goes
            back in time the chunks before it are read again without the
            promise (the same result). Lines sampled from usage CSV files
            skip that trial where they show the order going back; where
            they miss it, the file is read up to that chunk twice.
            ``False``: no promise, nothing read twice. Parquet files whose
            row groups' ``timestamp`` statistics never go back in time (a
            table sorted by time, as lakes keep them) are read a row group
            at a time and taken as ordered without a trial (row groups of at
            most 4 x ``chunk_rows``; the order inside a group does not
            matter).

    Returns:
        The result :func:`gpucost.allocate` gives for all the samples at once.

    Raises:
        gpucost.InvalidInputError: bad or damaged input, naming the file and
            line (or the table and row, counted over all chunks) and column.
            No result is returned, and ``output`` is not written.
        gpucost.Error: the output could not be written.

    Examples:
        Telemetry in two compressed CSV files, read one chunk at a time:

        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "cost": [8.0],
        ...                       "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")]})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["train", "train", "infer", "infer"],
        ...                       "share": 1.0, "util": 0.5, "mem_used": 0.0})
        >>> usage.iloc[:2].to_csv("usage-00.csv.gz", index=False)
        >>> usage.iloc[2:].to_csv("usage-01.csv.gz", index=False)
        >>> result = gpucost.allocate_stream(costs, "usage-*.csv.gz", inventory, chunk_rows=1)
        >>> result[["consumer", "cost", "gpu_hours"]]
           consumer  cost  gpu_hours
        0  __idle__   0.0        0.0
        1     infer   4.0        1.0
        2     train   4.0        1.0
        >>> print(gpucost.allocate_stream(costs, "usage-*.csv.gz", inventory, output="showback.csv")["cost"].sum())
        8.0
        >>> print(gpucost.allocate_stream(costs, "usage-*.csv.gz", inventory, chunk_rows=1,
        ...                               ordered_chunks=True)["cost"].sum())  # the files in time order
        8.0
        >>> from pathlib import Path
        >>> print(Path("showback.csv").read_text())
        consumer,cost,idle_cost,gpu_hours,effective_gpu_hours,mem_gib_hours,cost_per_effective_gpu_hour
        __idle__,0.0,0.0,0.0,0.0,0.0,
        infer,4.0,0.0,1.0,0.5,0.0,8.0
        train,4.0,0.0,1.0,0.5,0.0,8.0
        <BLANKLINE>
    """
    if chunk_rows <= 0 or block_size <= 0:
        raise InvalidInputError("chunk_rows and block_size must be positive")
    kind, path = _output(output)
    if is_path_like(usage):  # globs expanded once: every read below (a trial's second one too) sees the same files
        usage = expand_paths(usage)
    # Row groups in time order by their statistics: chunks that never go back in time, told or not. Else,
    # told nothing, usage that can be read again is tried in time order (unless statistics or lines sampled
    # from CSV files show it going back).
    statistics = parquet_order(usage, 4 * chunk_rows) if ordered_chunks is not True else None
    by_row_group = statistics is True
    on_trial = ordered_chunks is None and statistics is None and can_read_again(usage) and not (
        is_path_like(usage) and csv_goes_back_in_time(usage, block_size))
    tables = dict(costs=read_table(costs, "costs", COST_CSV_TYPES), inventory=read_table(inventory, "inventory"),
                  workloads=None if workloads is None else read_table(workloads, "workloads"),
                  basis=basis, alpha=alpha, idle=idle, interval=interval, by=by, freq=freq, threads=threads,
                  downtime=None if downtime is None else read_table(downtime, "downtime"),
                  pue=pue, carbon_intensity=_intensity(carbon_intensity))
    allocator = Allocator(**tables, ordered_chunks=bool(ordered_chunks) or by_row_group or on_trial)
    bar = _progress_bar(total) if progress else None
    cores = resolve_threads(threads)

    def read() -> Iterable[Any]:
        chunks = iter_chunks(usage, chunk_rows=chunk_rows, block_size=block_size, threads=cores,
                             row_groups=by_row_group)
        return read_ahead(chunks) if cores > 1 else chunks  # the next chunk read while this one is allocated

    def add(into: Allocator, chunk: Any, rows_before: int) -> None:
        try:
            into.add(chunk.rows)
        except InvalidInputError as exc:
            # The allocator counts rows from the first chunk; the source may count them per file.
            raise relocate_error(shift_rows(exc, "usage", -rows_before), "usage", chunk.source,
                                 chunk.first_row) from None

    try:
        chunks = read() if bar is None else _shown(read(), bar)
        allocator = add_chunks(allocator, chunks, add, read_again=read if on_trial else None,
                               unordered=lambda: Allocator(**tables, ordered_chunks=False))
        result = allocator.finish(output=kind)
    finally:
        if bar is not None:
            bar.close()
    if path is not None:
        write_result(result, path)
    return result


Chunk = TypeVar("Chunk")


def add_chunks(allocator: Allocator, chunks: Iterable[Chunk], add: Callable[[Allocator, Chunk, int], None], *,
               read_again: Callable[[], Iterable[Chunk]] | None = None,
               unordered: Callable[[], Allocator] | None = None) -> Allocator:
    """Each chunk given to ``add(allocator, chunk, rows before it)``;
    returns the allocator fed them all. With ``read_again`` (the chunks
    again, the same ones: files, a table in memory) the allocator was made
    with ``ordered_chunks`` on trial, the source's order unknown: the first
    chunk that goes back in time starts a new allocator, ``unordered()``,
    fed the chunks before it read again, then that chunk and the rest. The
    result is the one an unordered allocator gives; only the memory and time
    of its record of rows read twice differ. ``chunks`` is closed when this
    returns or raises (its files and read ahead let go then, not when the
    garbage collector finds it)."""
    sizes: list[int] = []  # of the chunks added
    rows = 0  # their sum
    iterator = iter(chunks)
    try:
        for chunk in iterator:
            try:
                add(allocator, chunk, rows)
                went_back = False
            except InvalidInputError:
                if read_again is None or unordered is None or not allocator.went_back_in_time():
                    raise
                went_back = True  # started over below, once the error no longer holds the failed allocator
            if went_back:
                allocator = unordered()
                _add_again(allocator, read_again(), sizes, add)
                read_again = None
                add(allocator, chunk, rows)
            sizes.append(len(chunk))
            rows += sizes[-1]
            del chunk  # not held while the next one is read
    finally:
        close_items(iterator)
    return allocator


def _add_again(allocator: Allocator, chunks: Iterable[Chunk], sizes: list[int],
               add: Callable[[Allocator, Chunk, int], None]) -> None:
    """The first ``len(sizes)`` chunks, read again, added; each must be the
    size it was (a file that changed between the reads is an error)."""
    iterator = iter(chunks)
    try:
        rows = 0
        for size in sizes:
            chunk = next(iterator, None)
            if chunk is None or len(chunk) != size:
                raise InvalidInputError(f"usage: changed while it was read (rows {rows} onwards were {size} rows, "
                                        f"read again {0 if chunk is None else len(chunk)}): read it again")
            add(allocator, chunk, rows)
            rows += size
            del chunk
    finally:
        close_items(iterator)


def can_read_again(usage: Any) -> bool:
    """Whether :func:`gpucost.chunks.iter_chunks` can read ``usage`` twice
    with the same chunks: regular files, a pandas frame or Arrow table in
    memory; not a pipe, a reader, a relation or a generator."""
    if isinstance(usage, pd.DataFrame | pa.Table):
        return True
    if not is_path_like(usage):
        return False
    try:
        return all(stat.S_ISREG(os.stat(path).st_mode) for path in expand_paths(usage))
    except (OSError, InvalidInputError):
        return False


def _shown(chunks: Iterable[Any], bar: Any) -> Iterable[Any]:
    """``chunks``, each counted on the progress bar once added; closed with it."""
    try:
        for chunk in chunks:
            yield chunk
            bar.update(len(chunk))
            if chunk.source is not None:
                bar.set_postfix_str(os.path.basename(chunk.source), refresh=False)
            del chunk  # not held while the next one is read
    finally:
        close_items(chunks)


def _output(output: Any) -> tuple[str, str | os.PathLike | None]:
    """(kind of result, path to write or None) from ``output=``. A string is
    a path when it has a suffix or a folder (``out.csv``, ``/dev/stdout``), so
    that a misspelt kind (``"polar"``) is an error, not a file."""
    if output is None:
        return "pandas", None
    if isinstance(output, str) and output in OUTPUTS:
        return output, None
    if isinstance(output, os.PathLike) or (isinstance(output, str) and (
            os.sep in output or (os.altsep or os.sep) in output or os.path.splitext(output)[1])):
        return "pandas", output
    raise InvalidInputError(f"output: expected one of {', '.join(map(repr, OUTPUTS))} or a file path "
                            f"(out.parquet, out.csv; a name without a suffix as a pathlib.Path), got {output!r}")


def _progress_bar(total: int | None):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=" samples", unit_scale=True, desc="gpucost", mininterval=0.5)
