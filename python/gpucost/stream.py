"""gpucost.allocate_stream: allocation over telemetry read in chunks, in
bounded memory, on top of the streaming :class:`gpucost.Allocator`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from gpucost.allocation import Allocator, resolve_threads
from gpucost.chunks import (COST_CSV_TYPES, iter_chunks, parquet_in_time_order, read_ahead, read_table,
                            relocate_error, write_result)
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
    ordered_chunks: bool = False,
) -> Any:
    """:func:`gpucost.allocate` over usage read chunk by chunk: memory grows
    with cost lines and consumers, and by 16 bytes per sample (to find rows
    read twice across chunks; with ``ordered_chunks``, only at the newest
    instant); the samples themselves are never held.
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
        ordered_chunks: the usage never goes back in time (files or tables
            in time order, each sorted by time): the record of rows read
            twice is kept only at the newest instant, so memory no longer
            grows with the samples; a row before an earlier chunk's newest
            instant is an error naming it (:class:`gpucost.Allocator`).
            Parquet files whose row groups' ``timestamp`` statistics never
            go back in time (a table sorted by time, as lakes keep them) are
            read a row group at a time and taken as ordered without being
            told (row groups of at most 4 x ``chunk_rows``; the order inside
            a group does not matter).

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
    # Row groups in time order by their statistics: chunks that never go back in time, told or not.
    by_row_group = not ordered_chunks and parquet_in_time_order(usage, 4 * chunk_rows)
    allocator = Allocator(read_table(costs, "costs", COST_CSV_TYPES), read_table(inventory, "inventory"),
                          None if workloads is None else read_table(workloads, "workloads"),
                          basis=basis, alpha=alpha, idle=idle, interval=interval, by=by, freq=freq,
                          threads=threads, downtime=None if downtime is None else read_table(downtime, "downtime"),
                          pue=pue, carbon_intensity=_intensity(carbon_intensity),
                          ordered_chunks=ordered_chunks or by_row_group)
    bar = _progress_bar(total) if progress else None
    seen = 0
    try:
        cores = resolve_threads(threads)
        chunks = iter_chunks(usage, chunk_rows=chunk_rows, block_size=block_size, threads=cores,
                             row_groups=by_row_group)
        if cores > 1:  # the next chunk read while this one is allocated
            chunks = read_ahead(chunks)
        for chunk in chunks:
            try:
                allocator.add(chunk.rows)
            except InvalidInputError as exc:
                # The allocator counts rows from the first chunk; the source
                # may count them per file.
                raise relocate_error(shift_rows(exc, "usage", -seen), "usage", chunk.source,
                                     chunk.first_row) from None
            seen += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
                if chunk.source is not None:
                    bar.set_postfix_str(os.path.basename(chunk.source), refresh=False)
        result = allocator.finish(output=kind)
    finally:
        if bar is not None:
            bar.close()
    if path is not None:
        write_result(result, path)
    return result


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
