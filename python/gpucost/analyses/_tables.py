"""Input checks shared by the purchasing analyses, on top of the analyses'
common helpers (_common.py): tables as pandas frames, instants as int64
nanoseconds, strings with None for missing, and errors in gpucost's one
format (``table: row N, column 'c': what``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from gpucost.analyses import _common
from gpucost.analyses._common import to_datetime as to_utc  # noqa: F401  (re-exported)
from gpucost.errors import InvalidInputError
from gpucost.frames import Table, _codes_to_strings
from gpucost.prometheus import to_ns

NANOS_PER_HOUR = _common.NS_PER_H
NANOS_PER_DAY = 24 * NANOS_PER_HOUR


def row_error(table: str, row: int, column: str, what: str) -> InvalidInputError:
    return InvalidInputError(f"{table}: row {row}, column '{column}': {what}")


def raise_first(table: str, column: str, mask: np.ndarray, what) -> None:
    """Raises for the first row where `mask` holds; `what(row)` says why."""
    mask = np.asarray(mask, dtype=bool)
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        raise row_error(table, row, column, what(row))


def table(data: Any, name: str) -> Table:
    if isinstance(data, Table):
        return data
    return Table(data, name)


def frame(data: Any, name: str, required: Iterable[str] = (), optional: Iterable[str] = ()) -> pd.DataFrame:
    """The named columns of `data` (a DataFrame, an Arrow table or a mapping)
    as a pandas frame with a fresh 0..n-1 index, so row numbers in errors are
    the caller's positions."""
    t = table(data, name)
    columns = [c for c in required]
    for c in columns:
        t.column(c)  # raises "name: missing required column 'c'"
    columns += [c for c in optional if t.has(c) and c not in columns]
    out = {}
    for c in columns:
        col = t.column(c)
        out[c] = col.to_pandas() if isinstance(col, pa.ChunkedArray) else col.reset_index(drop=True)
    return pd.DataFrame(out, index=pd.RangeIndex(len(t)))


def instants_ns(data: Any, name: str, column: str) -> np.ndarray:
    """int64 nanoseconds since the epoch (UTC); a missing instant is an error."""
    return _common.instants_ns(table(data, name), column)


def instant_ns(value: Any, parameter: str) -> int:
    """A scalar instant (str, datetime, Timestamp, date, int ns) as UTC
    nanoseconds; naive values are UTC."""
    return to_ns(value, parameter)


def finite_floats(data: Any, name: str, column: str, *, minimum: float | None = None) -> np.ndarray:
    values = table(data, name).floats(column)
    raise_first(name, column, ~np.isfinite(values), lambda r: f"{values[r]} is not a finite number")
    if minimum is not None:
        raise_first(name, column, values < minimum, lambda r: f"{values[r]} is below {minimum:g}")
    return values


def strings(data: Any, name: str, column: str) -> np.ndarray:
    """An object array of str, None where the value is missing."""
    return _codes_to_strings(table(data, name).strings(column), categorical=False)


def split_at_hours(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Spans [start, end) (int64 ns) cut at UTC hour boundaries: for every
    piece, the index of its span, its hour and its own [start, end)."""
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    first_hour = start // NANOS_PER_HOUR * NANOS_PER_HOUR
    count = np.maximum((end - first_hour + NANOS_PER_HOUR - 1) // NANOS_PER_HOUR, 0)
    span = np.repeat(np.arange(start.size), count)
    k = np.arange(span.size) - np.repeat(np.cumsum(count) - count, count)
    hour = first_hour[span] + k * NANOS_PER_HOUR
    return span, hour, np.maximum(start[span], hour), np.minimum(end[span], hour + NANOS_PER_HOUR)
