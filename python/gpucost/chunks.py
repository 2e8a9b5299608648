"""Chunked sources of usage samples, and results written all or nothing.

The streaming and distributed runners read telemetry too big for memory as
a sequence of chunks. :func:`iter_chunks` turns what a user has (CSV or
Parquet files, globs of them, a DataFrame, an Arrow table or reader, an
iterable of frames) into ``(source, first_row, chunk)`` triples, so an error
in any chunk can name the file and its line. :func:`write_result` writes a
result so that a reader never sees a partial file presented as complete.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from gpucost import _core
from gpucost.errors import ROW_ERROR, Error, InvalidInputError, conversion_hint
from gpucost.frames import as_table, exports_arrow, for_export, is_polars_frame, is_polars_lazy

__all__ = ["Chunk", "expand_paths", "iter_chunks", "parses_as_usage_csv", "relocate_error", "write_result",
           "USAGE_CSV_TYPES"]

# Column types of usage CSV files (SEMANTICS 1.3). Timestamps are inferred
# (ISO 8601 with or without an offset, naive = UTC) unless given here.
USAGE_CSV_TYPES = {
    "resource_id": pa.string(),
    "device": pa.int32(),
    "consumer": pa.string(),
    "share": pa.float64(),
    "util": pa.float64(),
    "mem_used": pa.float64(),
    "duration": pa.float64(),
}
COST_CSV_TYPES = {"resource_id": pa.string(), "cost": pa.float64(), "list_cost": pa.float64(),
                  "pricing": pa.string()}
_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".csv.lz4", ".tsv")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_DAMAGE_WORDS = ("crc", "data check", "truncated", "unexpected end", "zlib", "gzip", "decompress")


@dataclass
class Chunk:
    """One chunk of a source: ``rows`` starts at 0-based data row ``first_row``
    of ``source`` (a file path, or None for in-memory tables)."""

    source: str | None
    first_row: int
    rows: Any  # pandas DataFrame, pyarrow Table or RecordBatch

    def __len__(self) -> int:
        return self.rows.num_rows if isinstance(self.rows, pa.Table | pa.RecordBatch) else len(self.rows)


def is_path_like(data: Any) -> bool:
    if isinstance(data, str | os.PathLike):
        return True
    return isinstance(data, list | tuple) and bool(data) and all(isinstance(p, str | os.PathLike) for p in data)


def expand_paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[str]:
    """Files named by a path, a glob or a list of them, sorted within each glob.
    A name that matches nothing is an error (a glob must match something)."""
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    files: list[str] = []
    for item in items:
        name = os.fspath(item)
        matched = files_named(name)
        if not matched:
            raise InvalidInputError(f"{name}: no file matches" if glob.has_magic(name) else f"{name}: no such file")
        files.extend(matched)
    return files


def files_named(name: str) -> list[str]:
    """The file ``name`` names: itself where it exists, even with glob
    characters in it (``usage[eu].csv``), else the files it matches as a
    glob, sorted; empty when there is none."""
    if os.path.exists(name):
        return [name]
    return sorted(glob.glob(name)) if glob.has_magic(name) else []


def relocate_error(exc: BaseException, table: str, source: str | None, first_row: int) -> InvalidInputError:
    """An error raised for one chunk, restated for its place in the source.

    ``usage: row 3, column 'share': ...`` about a chunk that starts at data
    row 1000 of ``a.csv`` becomes ``a.csv: line 1005, column 'share': ...``
    (line 1 is the header); for in-memory sources, ``usage: row 1003, ...``.
    """
    message = str(exc)
    # The fields move with the message (column, reason as they were).
    fields = exc.location() if isinstance(exc, InvalidInputError) else {}
    match = ROW_ERROR.match(message)
    if match and match["table"] == table:
        row = first_row + int(match["row"])
        if source is None:
            return InvalidInputError(f"{table}: row {row}, {match['rest']}", **{**fields, "row": row})
        if _is_parquet(source):
            return InvalidInputError(f"{source}: row {row}, {match['rest']}",
                                     **{**fields, "table": source, "row": row})
        line = csv_line_of_row(source, row)
        return InvalidInputError(f"{source}: line {line}, {match['rest']}",
                                 **{**fields, "table": source, "row": None, "line": line})
    if source is not None:
        prefix = f"{table}: "
        rest = message[len(prefix):] if message.startswith(prefix) else message
        if fields.get("table") == table:
            fields["table"] = source
        return InvalidInputError(f"{source}: {rest}", **fields)
    return exc if isinstance(exc, InvalidInputError) else InvalidInputError(message)


def csv_line_of_row(path: str, row: int) -> int:
    """The line (counted from 1, the header's) of data row ``row`` (counted
    from 0) of the CSV file at ``path``, compressed or not: readers skip blank
    lines, so row + 2 is the line only in a file without them. The file is
    read again, once, on the way to an error message.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "usage.csv"
    >>> _ = path.write_text("timestamp,share\\n\\n2026-03-01T00:00:00Z,1\\n\\n2026-03-01T00:01:00Z,2\\n")
    >>> csv_line_of_row(str(path), 1)
    5
    """
    line = filled = 0  # lines read; those not blank (the header, then the data rows)
    tail = b""
    with pa.input_stream(path) as stream:  # decompresses by the file's suffix, as the readers do
        while True:
            block = stream.read(1 << 20)
            lines = (tail + block).split(b"\n")
            tail = lines.pop() if block else b""
            for text in lines:
                line += 1
                filled += bool(text.rstrip(b"\r"))
                if filled == row + 2:
                    return line
            if not block:
                return row + 2  # the file is shorter than it was when read: the line as it was counted


def _is_parquet(path: str) -> bool:
    return path.lower().endswith(_PARQUET_SUFFIXES)


#: CSV suffixes read through a decompressing stream (one block after another).
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zst", ".zstd", ".lz4", ".br")


def _csv_batches(path: str, block_size: int, column_types: dict, threads: int = 1) -> Iterator[pa.RecordBatch]:
    """Record batches of a CSV file (compression from the file name: .gz,
    .bz2, .zst, .lz4). Damaged files end in an InvalidInputError naming the
    file and the line. An uncompressed file is cut into blocks at line ends,
    parsed side by side on ``threads``: a usage file of only usage columns by
    gpucost's own parser (:func:`_core.parse_usage_csv`), any other by Arrow's
    (its streaming reader parses one block at a time)."""
    if not path.lower().endswith(_COMPRESSED_SUFFIXES):
        file = _open_regular(path)
        if file is not None:
            try:
                layout = _block_layout(path, file, block_size, column_types)
            except BaseException:
                file.close()
                raise
            if layout is not None and (threads > 1 or layout.usage):
                del file  # _block_batches closes it, or its last parse in flight lets it go
                yield from _block_batches(path, layout, block_size, column_types, threads)
                return
            file.close()
    line = 1
    try:
        stream = pa.input_stream(path, compression="detect")
    except (OSError, pa.ArrowException) as exc:
        raise InvalidInputError(f"{path}: cannot open: {exc}") from None
    with stream:
        try:
            header = pacsv.open_csv(stream, read_options=pacsv.ReadOptions(block_size=block_size),
                                    convert_options=_csv_convert_options(column_types))
            for batch in header:
                line += batch.num_rows
                yield batch
        except (pa.ArrowInvalid, pa.ArrowException, OSError, EOFError) as exc:
            raise _csv_failure(path, exc, line, block_size, column_types) from None


def _csv_convert_options(column_types: dict) -> pacsv.ConvertOptions:
    """How usage CSV values convert: the given column types; empty strings stay strings, not nulls."""
    return pacsv.ConvertOptions(column_types=column_types, strings_can_be_null=False,
                                quoted_strings_can_be_null=False)


def _csv_failure(path: str, exc: BaseException, line: int, block_size: int, column_types: dict) -> InvalidInputError:
    """A CSV read's failure as an error naming the file and the line: the bad
    value's own line when Arrow names a value, else the line where the block starts."""
    located = _locate_bad_value(path, str(exc), block_size, column_types)
    return InvalidInputError(located or f"{path}: after line {line}: {_arrow_message(exc)}")


#: The Arrow types of the columns gpucost's usage CSV parser reads (its
#: string columns come as dictionaries).
_USAGE_CSV_ARROW = {"timestamp": pa.timestamp("ns", tz="UTC"), "device": pa.int32(), "share": pa.float64(),
                    "util": pa.float64(), "mem_used": pa.float64(), "duration": pa.float64()}


class _RegularFile:
    """An uncompressed regular file read by offset (``os.pread``, the GIL
    released), so blocks are read side by side. A file cut short while it is
    read (log rotation by truncation, a copy still being written) is an error
    naming it; a mapping of it would end the process (SIGBUS)."""

    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path, self.fd, self.size = path, fd, size

    def read(self, begin: int, end: int) -> bytes:
        data = os.pread(self.fd, end - begin, begin)
        if len(data) != end - begin:
            self._cut_short(begin + len(data))
        return data

    def parse_usage(self, begin: int, end: int, names: list[str], first_line: int) -> tuple:
        """Bytes [begin, end), whole lines, parsed by gpucost's usage parser
        as C++ reads them a piece at a time (each parsed while in cache):
        (rows, lines, columns) as ``_core.parse_usage_csv`` gives them."""
        rows, lines, columns, cut_short_at = _core.parse_usage_csv_range(self.fd, begin, end, names, self.path,
                                                                         first_line)
        if cut_short_at >= 0:
            self._cut_short(cut_short_at)
        return rows, lines, columns

    def _cut_short(self, size: int) -> None:
        raise InvalidInputError(f"{self.path}: the file was cut short while it was read: {self.size} bytes "
                                f"when opened, {size} now")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> _RegularFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def _open_regular(path: str) -> _RegularFile | None:
    """The file opened for reading by offset; None for an empty file (the
    streaming reader says so) or one that is not a regular file (a pipe,
    /dev/stdin: read once, as a stream, and not opened here)."""
    if not hasattr(os, "pread"):  # Windows: the streaming reader
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot open: {exc}") from None
    size = os.fstat(fd).st_size
    if size == 0:
        os.close(fd)
        return None
    return _RegularFile(path, fd, size)


@dataclass
class _BlockLayout:
    file: _RegularFile
    header: bytes  # the header line, with its line end
    names: list[str]
    usage: bool  # gpucost's usage parser reads it


def _block_layout(path: str, file: _RegularFile, block_size: int, column_types: dict) -> _BlockLayout | None:
    """The header of a CSV file read in blocks and which parser reads it: gpucost's
    when the columns are usage columns with the usage types, each named once,
    and the first data line parses (else Arrow's, which reads other timestamp
    shapes, such as integers, and names its own errors). None for a
    file without a data line (the streaming reader's error or its table of
    no rows, not a silent empty one)."""
    first = file.read(0, min(file.size, 1 << 16))
    header = first[:first.find(b"\n") + 1] or first
    if not header.endswith(b"\n") or len(header) == file.size:
        return None
    try:
        names = pacsv.read_csv(pa.BufferReader(header)).column_names
    except pa.ArrowException as exc:
        raise _csv_failure(path, exc, 1, block_size, column_types) from None
    usage = (column_types == USAGE_CSV_TYPES and "timestamp" in names and len(set(names)) == len(names)
             and all(name == "timestamp" or name in USAGE_CSV_TYPES for name in names))
    if usage:  # the first data line tells (a bad value further on is the parser's to name)
        probe = first[len(header):first.find(b"\n", len(header)) + 1 or len(first)]
        try:
            _core.parse_usage_csv(probe, names, path, 2)
        except InvalidInputError:
            usage = False
    return _BlockLayout(file, header, names, usage)


def parses_as_usage_csv(path: str) -> bool:
    """Whether gpucost's usage CSV parser reads the file at ``path``: an
    uncompressed CSV of usage columns only, each named once, whose first
    data line parses (the CLI reads any other with pandas, as before).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "usage.csv"
    >>> _ = path.write_text("timestamp,resource_id,device,consumer,share\\n2026-03-01T00:00:00Z,n,0,a,1\\n")
    >>> parses_as_usage_csv(str(path))
    True
    >>> _ = path.write_text("timestamp,resource_id,device,consumer,share\\n1772323200,n,0,a,1\\n")
    >>> parses_as_usage_csv(str(path))   # epoch seconds: not an ISO 8601 instant
    False
    """
    layout = _usage_layout(path, 1 << 26)
    if layout is None:
        return False
    layout.file.close()
    return True


def _usage_layout(path: str, block_size: int) -> _BlockLayout | None:
    """The block layout of a file gpucost's usage parser reads
    (:func:`parses_as_usage_csv`), its file open; None for any other."""
    if path.lower().endswith(_COMPRESSED_SUFFIXES):
        return None
    try:
        file = _open_regular(path)
    except InvalidInputError:
        return None
    if file is None:
        return None
    try:
        layout = _block_layout(path, file, block_size, USAGE_CSV_TYPES)
    except (OSError, pa.ArrowException, InvalidInputError):
        layout = None
    if layout is None or not layout.usage:
        file.close()
        return None
    return layout


def _block_batches(path: str, layout: _BlockLayout, block_size: int, column_types: dict,
                   threads: int) -> Iterator[pa.RecordBatch]:
    """Batches of a CSV file read in blocks of about ``block_size`` bytes cut
    at line ends (as Arrow's own parallel reader cuts them: no newline inside
    a value), each read and parsed with the header's names on a pool of
    ``threads``, the batches in file order; at most ``threads`` + 1 blocks
    pending (gpucost's usage parser reads each a 1 MiB piece at a time, the
    rows copies; Arrow's reader, a block's bytes): the process' memory does
    not grow with the file. The file is closed at the end, or, when the
    batches are left unfinished with parses in flight, by the last of them
    letting it go (its ``__del__``)."""
    file, names = layout.file, layout.names
    if layout.usage:
        def parse(begin: int, end: int) -> tuple:
            return file.parse_usage(begin, end, names, 1)  # lines counted from the block's first
    else:
        read = pacsv.ReadOptions(use_threads=False, block_size=max(block_size, 1 << 20), column_names=names)
        convert = _csv_convert_options(column_types)

        def parse(begin: int, end: int) -> pa.Table:
            # Arrow's table may hold slices of the buffer: this buffer is Arrow's alone.
            return pacsv.read_csv(pa.BufferReader(file.read(begin, end)), read_options=read, convert_options=convert)

    line = 2  # the first block's first line
    ranges = _block_ranges(file, len(layout.header), block_size)
    begin = len(layout.header)
    pending: list = []  # the blocks' parses, in file order
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gpucost-csv")
    try:
        try:
            while True:
                if (block := next(ranges, None)) is not None:
                    pending.append(pool.submit(parse, *block))
                    begin = block[1]
                if pending and (len(pending) > threads or begin >= file.size):
                    if layout.usage:
                        try:
                            rows, lines, columns = pending.pop(0).result()
                        except InvalidInputError as exc:
                            raise _from_line(exc, path, line) from None
                        line += lines
                        if rows:
                            yield _usage_batch(names, rows, columns)
                    else:
                        for batch in pending.pop(0).result().to_batches():
                            line += batch.num_rows
                            yield batch
                if begin >= file.size and not pending:
                    return
        except (pa.ArrowInvalid, pa.ArrowException, OSError, EOFError) as exc:
            raise _csv_failure(path, exc, line, block_size, column_types) from None
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=False)  # never waits (read_ahead says why)
        if all(future.done() for future in pending):
            file.close()
        del file, parse, layout  # else the parses in flight hold the last references to the file


def _block_ranges(file: _RegularFile, begin: int, block_size: int) -> Iterator[tuple[int, int]]:
    """The byte ranges [begin, end) of a CSV file's blocks from ``begin``:
    about ``block_size`` bytes each, each to the end of its last line."""
    size = file.size
    while begin < size:
        end = min(size, begin + block_size)
        while end < size:  # to the end of its line
            window = file.read(end, min(size, end + (1 << 16)))
            newline = window.find(b"\n")
            if newline >= 0:
                end += newline + 1
                break
            end += len(window)
        yield begin, end
        begin = end


def csv_goes_back_in_time(paths: Sequence[str], block_size: int, step: int | None = None) -> bool:
    """Whether lines sampled from usage CSV files prove that the blocks
    :func:`iter_chunks` reads (``block_size`` bytes, file after file) go
    back in time: a line of a block before the newest line sampled in the
    blocks before it. The first whole line after every ``step`` bytes is
    read (by default 64 a block, at most one a MiB: 736 lines of a 771 MB
    file, parsed in one call), so a file in time order but for its last
    hour, or a replica's file after the other, is found before a chunk is
    allocated. False when nothing is proven: every sample
    in order, a compressed file, one the usage parser does not read, or a
    sampled line that does not parse (the reader names it)."""
    step = step or max(1 << 12, min(1 << 20, block_size // 64))
    newest = None  # the newest instant sampled in the blocks before
    for path in paths:
        layout = _usage_layout(path, block_size)
        if layout is None:
            return False
        lines, block_of_line = [], []
        with layout.file as file:
            for block, (begin, end) in enumerate(_block_ranges(file, len(layout.header), block_size)):
                for at in range(begin, end, step):
                    line = _line_from(file, at, end)
                    if line:
                        lines.append(line)
                        block_of_line.append(block)
        try:
            rows, _, columns = _core.parse_usage_csv(b"".join(lines), layout.names, path, 1)
        except InvalidInputError:
            return False
        validity, values, _, _ = columns[layout.names.index("timestamp")]
        if validity is not None or rows != len(lines):  # a missing instant: the reader names it
            return False
        instants = np.frombuffer(values, dtype=np.int64)
        for block in np.unique(block_of_line):
            sampled = instants[np.asarray(block_of_line) == block]
            if newest is not None and sampled.min() < newest:
                return True
            newest = sampled.max() if newest is None else max(newest, sampled.max())
    return False


def _line_from(file: _RegularFile, at: int, end: int) -> bytes:
    """The first whole line of ``file`` that starts at or after byte ``at``
    and ends by ``end`` (with its line end); b"" when there is none, or it
    is empty."""
    window = 1 << 12
    while True:
        text = file.read(at - 1 if at > 0 else 0, min(end, at + window))
        start = 0 if at == 0 else text.find(b"\n") + 1  # text[0] is the byte before `at`
        stop = text.find(b"\n", start) if start > 0 or at == 0 else -1
        if stop >= 0:
            return text[start:stop + 1] if stop > start else b""
        if at + window >= end:
            return b""
        window *= 16  # a line longer than the window: read more


def _from_line(exc: InvalidInputError, path: str, first_line: int) -> InvalidInputError:
    """An error about a block's line (counted from 1) restated for the file's line."""
    match = re.match(rf"{re.escape(path)}: line (\d+)", str(exc))
    if not match:
        return exc
    line = first_line + int(match[1]) - 1
    return InvalidInputError(f"{path}: line {line}{str(exc)[match.end():]}", **{**exc.location(), "line": line})


def _usage_batch(names: list[str], rows: int, columns: list) -> pa.RecordBatch:
    """A record batch over the buffers :func:`_core.parse_usage_csv` returns (not copied)."""
    arrays = []
    for name, (validity, values, offsets, text) in zip(names, columns, strict=True):
        valid = None if validity is None else pa.py_buffer(validity)
        if offsets is not None:
            dictionary = pa.Array.from_buffers(pa.string(), len(offsets) - 1,
                                               [None, pa.py_buffer(offsets), pa.py_buffer(text)])
            codes = pa.Array.from_buffers(pa.int32(), rows, [valid, pa.py_buffer(values)], null_count=-1)
            arrays.append(pa.DictionaryArray.from_arrays(codes, dictionary, safe=False))
        else:
            arrays.append(pa.Array.from_buffers(_USAGE_CSV_ARROW[name], rows, [valid, pa.py_buffer(values)],
                                                null_count=-1))
    return pa.RecordBatch.from_arrays(arrays, names=names)


_CONVERSION_ERROR = re.compile(r"In CSV column #(?P<index>\d+): (?:Row #\d+: )?CSV conversion error to "
                               r"(?P<type>[^:]+): invalid value '(?P<value>.*)'$", re.DOTALL)


def _locate_bad_value(path: str, message: str, block_size: int, column_types: dict) -> str | None:
    """Arrow names the column and the value it could not convert, not the
    line: read the file again with that column as text to find the line."""
    match = _CONVERSION_ERROR.search(message)
    if not match:
        return None
    index, value = int(match["index"]), match["value"]
    try:
        with pa.input_stream(path, compression="detect") as stream:
            reader = pacsv.open_csv(stream, read_options=pacsv.ReadOptions(block_size=block_size),
                                    convert_options=pacsv.ConvertOptions(column_types={
                                        **column_types, **{name: pa.string() for name in column_types}},
                                        strings_can_be_null=False))
            names = reader.schema.names
            if index >= len(names):
                return None
            # Other columns may fail too: read them all as text.
            first = 2
            for batch in reader:
                found = pc.index(batch.column(index).cast(pa.string()), value).as_py()
                if found >= 0:
                    return (f"{path}: line {first + found}, column '{names[index]}': '{value}' is not "
                            f"{match['type']}")
                first += batch.num_rows
    except (pa.ArrowException, OSError):
        return None
    return None


def _arrow_message(exc: BaseException) -> str:
    text = str(exc).strip()
    if any(word in text.lower() for word in _DAMAGE_WORDS):
        return f"{text} (the file is damaged or incomplete)"
    return text


#: Usage string columns read from Parquet as dictionary arrays: the file's
#: dictionary pages become the engine's codes, with no string per row to
#: build and hash again.
_PARQUET_DICTIONARY_COLUMNS = ("resource_id", "consumer")


def _parquet_batches(path: str, batch_rows: int, row_groups: bool = False) -> Iterator[pa.RecordBatch | pa.Table]:
    """``batch_rows`` rows at a time, or with ``row_groups`` one whole row
    group at a time (a table)."""
    try:
        schema = pq.read_schema(path)
        strings = [name for name in _PARQUET_DICTIONARY_COLUMNS if name in schema.names and
                   (pa.types.is_string(schema.field(name).type) or pa.types.is_large_string(schema.field(name).type))]
        file = pq.ParquetFile(path, read_dictionary=strings)
        if row_groups:
            for group in range(file.num_row_groups):
                yield file.read_row_group(group)
        else:
            yield from file.iter_batches(batch_size=batch_rows)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInputError(f"{path}: cannot read Parquet: {exc}") from None


def parquet_in_time_order(data: Any, max_group_rows: int) -> bool:
    """Whether ``data`` names Parquet files whose row groups, file after file,
    never go back in time by their ``timestamp`` statistics (no row group
    starts before the one before it ends; equal instants allowed), each of
    at most ``max_group_rows`` rows: read a row group at a time, they are
    chunks in time order (``Allocator(ordered_chunks=True)``), whatever the
    order inside a group. False when any statistic is missing or anything
    cannot be read (the caller reads the files as it would have).

    >>> import tempfile
    >>> t = pd.date_range("2026-03-01", periods=4, freq="min", tz="UTC")
    >>> path = os.path.join(tempfile.mkdtemp(), "usage.parquet")
    >>> pq.write_table(pa.table({"timestamp": t, "util": [0.5] * 4}), path, row_group_size=2)
    >>> parquet_in_time_order(path, 1_000_000)
    True
    >>> pq.write_table(pa.table({"timestamp": t[::-1], "util": [0.5] * 4}), path, row_group_size=2)
    >>> parquet_in_time_order(path, 1_000_000)
    False
    """
    return parquet_order(data, max_group_rows) is True


def parquet_order(data: Any, max_group_rows: int) -> bool | None:
    """What the ``timestamp`` statistics of Parquet files' row groups say:
    True, they never go back in time and each group has at most
    ``max_group_rows`` rows (:func:`parquet_in_time_order`); False, a group
    starts before one before it ends (the rows go back in time); None, they
    cannot tell (not Parquet, a statistic missing, larger groups in order,
    anything unreadable)."""
    if not is_path_like(data):
        return None
    try:
        paths = expand_paths(data)
        if not paths or not all(_is_parquet(path) for path in paths):
            return None
        newest, small = None, True
        for path in paths:
            meta = pq.read_metadata(path)
            names = [meta.schema.column(i).path for i in range(meta.num_columns)]
            if "timestamp" not in names:
                return None
            column = names.index("timestamp")
            for group in range(meta.num_row_groups):
                rows = meta.row_group(group)
                stats = rows.column(column).statistics
                if stats is None or not stats.has_min_max:
                    return None
                if newest is not None and stats.min < newest:
                    return False
                small = small and rows.num_rows <= max_group_rows
                newest = max(newest, stats.max) if newest is not None else stats.max
        return True if small else None
    except (pa.ArrowException, OSError, TypeError, InvalidInputError):
        return None


def _file_chunks(path: str, chunk_rows: int, block_size: int, column_types: dict,
                 threads: int = 1, row_groups: bool = False) -> Iterator[Chunk]:
    first = 0
    batches = _parquet_batches(path, chunk_rows, row_groups) if _is_parquet(path) else \
        _csv_batches(path, block_size, column_types, threads)
    for batch in batches:
        yield Chunk(path, first, batch)
        first += batch.num_rows


def iter_chunks(data: Any, *, chunk_rows: int = 1_000_000, block_size: int = 1 << 26,
                column_types: dict | None = None, threads: int = 1, row_groups: bool = False) -> Iterator[Chunk]:
    """Chunks of ``data``: a path, a glob or a list of CSV (optionally
    compressed) or Parquet files; a pandas DataFrame, Arrow table or Polars
    DataFrame (sliced into ``chunk_rows`` rows; a Polars LazyFrame is
    collected first); an Arrow RecordBatchReader or any table with the Arrow
    PyCapsule stream interface (a DuckDB relation: read batch by batch,
    joined into chunks of about ``chunk_rows``); or an iterable of
    DataFrames, Arrow tables, record batches or such tables. CSV files are
    read ``block_size`` bytes at a time with the usage column types, an
    uncompressed one on up to ``threads`` threads; Parquet files with
    ``row_groups`` a whole row group at a time (:func:`parquet_in_time_order`).
    """
    types = dict(USAGE_CSV_TYPES if column_types is None else column_types)
    if is_polars_lazy(data) or is_polars_frame(data):  # collected, read as allocate reads it, then sliced
        data = as_table(data, "usage")
    if is_path_like(data):
        for path in expand_paths(data):
            yield from _file_chunks(path, chunk_rows, block_size, types, threads, row_groups)
        return
    if isinstance(data, pd.DataFrame | pa.Table):
        total = len(data) if isinstance(data, pd.DataFrame) else data.num_rows
        for first in range(0, total, chunk_rows):
            part = data.iloc[first:first + chunk_rows] if isinstance(data, pd.DataFrame) else \
                data.slice(first, chunk_rows)
            yield Chunk(None, first, part)
        return
    if isinstance(data, pa.RecordBatch):
        yield Chunk(None, 0, data)
        return
    if exports_arrow(data):  # a reader, a DuckDB relation: batches as the source gives them
        try:
            reader = data if isinstance(data, pa.RecordBatchReader) else \
                pa.RecordBatchReader.from_stream(data) if hasattr(data, "__arrow_c_stream__") else None
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise InvalidInputError(f"usage: cannot read it through the Arrow interface: {exc}") from None
        if reader is None:  # only __arrow_c_array__: one batch
            yield Chunk(None, 0, as_table(data, "usage"))
            return
        yield from _coalesced(reader, chunk_rows)
        return
    if not isinstance(data, Iterable) or isinstance(data, str | bytes):
        raise TypeError(f"usage: expected files, a DataFrame, an Arrow table, reader or stream, or an iterable of "
                        f"them, got {type(data).__name__}{conversion_hint(data)}")
    first = 0
    for part in data:
        if isinstance(part, pd.DataFrame | pa.Table | pa.RecordBatch):
            chunk = Chunk(None, first, part)
        elif isinstance(part, dict):
            chunk = Chunk(None, first, pd.DataFrame(part, copy=False))
        elif exports_arrow(part):
            chunk = Chunk(None, first, as_table(part, "usage"))
        else:
            raise TypeError(f"usage: chunk starting at row {first}: expected a DataFrame or an Arrow table, "
                            f"got {type(part).__name__}{conversion_hint(part)}")
        yield chunk
        first += len(chunk)


_END = object()


def read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """``items``, each read on a second thread while the caller works on
    the one before: Arrow's CSV and Parquet readers and gpucost's parsers
    release the GIL, so reading the next chunk overlaps the engine's work on
    this one. One item is read ahead (two held at a time); an error reading
    an item is raised when that item is reached.

    Closing it never waits: the items are closed once the read in flight
    ends, on the thread that reads. A generator left unfinished is closed by
    the garbage collector on whichever thread triggered a collection, which
    can be inside ``threading``'s own bookkeeping with its lock held (a
    thread starting): joining a thread there, as leaving a
    ``ThreadPoolExecutor`` block does, waits for that lock forever."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpucost-read-ahead")
    pending = pool.submit(next, items, _END)
    try:
        while (item := pending.result()) is not _END:
            pending = pool.submit(next, items, _END)
            yield item
            del item  # the caller's chunk is not kept while the next one is read
    finally:
        pending.cancel()
        pending.add_done_callback(lambda _: close_items(items))  # now if the read is over, else by its thread
        pool.shutdown(wait=False)


def close_items(items: Any) -> None:
    """Closes an iterator that can be closed (a generator): what it holds
    (files, a read ahead) is let go now, not when it is collected."""
    close = getattr(items, "close", None)
    if close is not None:
        close()


def _coalesced(reader: pa.RecordBatchReader, chunk_rows: int) -> Iterator[Chunk]:
    """The reader's batches joined into chunks of about ``chunk_rows`` rows
    (DuckDB gives 131,072-row batches; the engine splits a chunk over threads
    only from 262,144 samples per thread). The batches are not copied here."""
    first, pending, rows = 0, [], 0
    for batch in reader:
        pending.append(batch)
        rows += batch.num_rows
        if rows >= chunk_rows:
            yield Chunk(None, first, pa.Table.from_batches(pending, schema=reader.schema))
            first, pending, rows = first + rows, [], 0
    if pending:
        yield Chunk(None, first, pa.Table.from_batches(pending, schema=reader.schema))


def read_table(data: Any, table: str, column_types: dict | None = None) -> Any:
    """A small table (cost lines, inventory, workloads) given as a frame or as
    CSV/Parquet file(s): files are read whole and concatenated."""
    if not is_path_like(data):
        return data
    parts = []
    for path in expand_paths(data):
        if _is_parquet(path):
            try:
                parts.append(pq.read_table(path))
            except (pa.ArrowException, OSError) as exc:
                raise InvalidInputError(f"{path}: cannot read Parquet: {exc}") from None
        else:
            parts.extend(chunk.rows for chunk in _file_chunks(path, 1 << 30, 1 << 26, column_types or {}))
    if not parts:
        raise InvalidInputError(f"{table}: no rows in {data}")
    return pa.Table.from_batches(parts) if isinstance(parts[0], pa.RecordBatch) else pa.concat_tables(parts)


def write_result(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Writes ``frame`` to ``path`` (``.parquet`` or CSV) all or nothing.

    A regular file is written beside the target, flushed to disk and renamed
    over it, so the target is either the old file or the whole result. A
    device or pipe is written in place. Any failure (a full disk, a missing
    folder, no permission) raises :class:`gpucost.Error` naming the path and
    leaves no partial file behind.
    """
    target = os.fspath(path)
    parquet = _is_parquet(target)
    special = os.path.exists(target) and not os.path.isfile(target)
    tmp = None
    try:
        if special:
            with open(target, "wb") as out:
                _write(frame, out, parquet)
            return
        folder = os.path.dirname(os.path.abspath(target))
        fd, tmp = tempfile.mkstemp(prefix=f".{Path(target).name}.", suffix=".partial", dir=folder)
        with os.fdopen(fd, "wb") as out:
            _write(frame, out, parquet)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
        tmp = None
    except (OSError, pa.ArrowException) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise Error(f"{target}: cannot write the result: {reason}; no result was written") from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _write(frame: pd.DataFrame, out: Any, parquet: bool) -> None:
    if parquet:
        pq.write_table(pa.Table.from_pandas(for_export(frame), preserve_index=False), out)
    else:
        frame.to_csv(out, index=False)
