"""DataFrames and Arrow tables to the engine's columns, and results back.

This is the only module that knows pandas and Arrow. Tables come as pandas
DataFrames or as anything that speaks Arrow (pyarrow, Polars, DuckDB, any
object with the Arrow PyCapsule interface), read as pyarrow Tables. Strings
become int32 codes plus a dictionary (categorical codes and Arrow dictionary
indices are reused as they are; other strings are encoded by Arrow), instants
become int64 in their own unit (datetime64 or Arrow timestamps of any unit,
tz-aware or not, are read in place), numbers become float64 arrays (float64
columns are not copied). Results come back as one typed object,
``_core.AllocationResult``, whose numpy arrays are views of the engine's own
vectors, and become the columns of a pandas DataFrame, a pyarrow Table or a
Polars DataFrame without a copy (``output=``).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpucost import _core
from gpucost.errors import Error, InvalidInputError, conversion_hint

__all__ = ["Table", "JoinTable", "OUTPUTS", "allocation_frame", "allocation_arrow", "allocation_polars",
           "allocation_result", "result_attrs", "join_frame", "usage_frame", "workloads_frame",
           "nodes_frame"]

_INT32_MAX = np.iinfo(np.int32).max
_UNITS = {"ns", "us", "ms", "s"}
_NS_PER = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


class Table:
    """Column access over a table, with errors that name the table.

    Accepted: a pandas DataFrame, a pyarrow Table, RecordBatch or
    RecordBatchReader, a mapping of column names to arrays, and anything that
    exports the Arrow PyCapsule interface (``__arrow_c_stream__`` or
    ``__arrow_c_array__``): Polars DataFrames (LazyFrames are collected),
    DuckDB relations, ... Those are read as a pyarrow Table through the
    interface: numbers, timestamps and dictionaries without a copy, never
    through pandas. Another ``Table`` is taken as it is.
    """

    def __init__(self, data: Any, name: str):
        self.name = name
        self._data = data._data if isinstance(data, Table) else as_table(data, name)

    @property
    def data(self) -> pd.DataFrame | pa.Table:
        """The table as read: a pandas DataFrame or a pyarrow Table."""
        return self._data

    @property
    def columns(self) -> list[str]:
        if isinstance(self._data, pa.Table):
            return list(self._data.column_names)
        return [str(c) for c in self._data.columns]

    def __len__(self) -> int:
        return self._data.num_rows if isinstance(self._data, pa.Table) else len(self._data)

    def has(self, column: str) -> bool:
        return column in self.columns

    def column(self, column: str):
        if not self.has(column):
            raise InvalidInputError(f"{self.name}: missing required column '{column}'", table=self.name,
                                    column=column, reason=f"missing required column '{column}'")
        return self._data.column(column) if isinstance(self._data, pa.Table) else self._data[column]

    def _error(self, column: str, what: str) -> InvalidInputError:
        return InvalidInputError(f"{self.name}: column '{column}': {what}", table=self.name, column=column,
                                 reason=what)

    def _first_bad_row(self, column: str, mask: np.ndarray, what: str) -> InvalidInputError:
        row = int(np.flatnonzero(mask)[0])
        return InvalidInputError(f"{self.name}: row {row}, column '{column}': {what}", table=self.name, row=row,
                                 column=column, reason=what)

    # ---- strings ---------------------------------------------------------

    def strings(self, column: str, threads: int = 1) -> tuple[np.ndarray, list[str]]:
        """(int32 codes, values); nulls have code -1. Arrow strings are
        encoded on up to ``threads`` threads."""
        col = self.column(column)
        if isinstance(col, pa.ChunkedArray):
            return _arrow_strings(col, threads)
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = np.asarray(col.cat.codes)
            values = _category_values(col.cat.categories)
        else:
            if isinstance(col.dtype, pd.ArrowDtype | pd.StringDtype):
                return _arrow_strings(_chunked(col), threads)
            if col.dtype == object:
                # Python strings: Arrow encodes them 1.2 to 2 times as fast as
                # pd.factorize (docs/decisions.md, issue 27); anything else factorizes.
                try:
                    return _arrow_strings(pa.chunked_array([pa.array(col, type=pa.string(), from_pandas=True)]))
                except (pa.ArrowException, TypeError, ValueError):
                    pass
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            values = [str(v) for v in uniques]
        return codes.astype(np.int32, copy=False), values

    # ---- instants ----------------------------------------------------------

    def instants(self, column: str) -> tuple[np.ndarray, str]:
        """(int64 ticks since the epoch, UTC; unit). NaT/null is INT64_MIN,
        which the engine rejects with the row."""
        col = self.column(column)
        if isinstance(col, pa.ChunkedArray):
            return _arrow_instants(col, self, column)
        dtype = col.dtype
        if isinstance(dtype, pd.ArrowDtype):
            return _arrow_instants(_chunked(col), self, column)
        if isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "M"):
            unit = dtype.unit if isinstance(dtype, pd.DatetimeTZDtype) else np.datetime_data(dtype)[0]
            if unit not in _UNITS:  # days, minutes, ...: the one case that converts
                col = col.dt.as_unit("ns")
                unit = "ns"
            return np.asarray(col.array.asi8), unit
        if pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_extension_array_dtype(dtype):
            return np.asarray(col, dtype=np.int64), "ns"
        raise self._error(
            column, f"expected datetime64 or int64 nanoseconds, got {dtype} (convert with pandas.to_datetime)"
        )

    # ---- numbers -------------------------------------------------------------

    def floats(self, column: str) -> np.ndarray:
        col = self.column(column)
        try:
            if isinstance(col, pa.ChunkedArray):
                if col.type != pa.float64():
                    col = col.cast(pa.float64())
                if col.null_count:
                    col = pc.fill_null(col, float("nan"))
                return _numpy(col)
            if pd.api.types.is_extension_array_dtype(col.dtype):
                return col.to_numpy(dtype=np.float64, na_value=np.nan)
            return np.asarray(col, dtype=np.float64)
        except (TypeError, ValueError, pa.ArrowInvalid) as exc:
            raise self._error(column, f"not numeric ({exc})") from None

    def bools(self, column: str) -> np.ndarray:
        """uint8 0/1 from bool, pandas boolean (nullable) or 0/1 number
        columns; a missing value or any other number is an error naming the row."""
        col = self.column(column)
        if isinstance(col, pa.ChunkedArray):
            col = col.to_pandas()
        missing = np.asarray(pd.isna(col), dtype=bool)
        if missing.any():
            raise self._first_bad_row(column, missing, "missing value (expected true or false)")
        if pd.api.types.is_bool_dtype(col.dtype):
            return np.asarray(col, dtype=bool).view(np.uint8)
        try:
            arr = np.asarray(col, dtype=np.float64)
        except (TypeError, ValueError):
            raise self._error(column, f"expected booleans or 0/1, got {col.dtype}") from None
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise self._first_bad_row(column, bad, f"{arr[bad][0]} is not a boolean (expected true, false, 0 or 1)")
        return arr.astype(np.uint8)

    def int32s(self, column: str) -> np.ndarray:
        col = self.column(column)
        arr = _numpy(col) if isinstance(col, pa.ChunkedArray) else np.asarray(col)
        if arr.dtype == np.int32:
            return arr
        if arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f":
                bad = ~np.isfinite(arr) | (arr != np.round(arr))
                if bad.any():
                    raise self._first_bad_row(column, bad, f"{arr[bad][0]} is not a whole number")
            else:
                raise self._error(column, f"expected integers, got {arr.dtype}")
        if arr.size and (arr.min() < -_INT32_MAX or arr.max() > _INT32_MAX):
            raise self._first_bad_row(column, (arr < -_INT32_MAX) | (arr > _INT32_MAX), "out of range")
        return arr.astype(np.int32)

    def durations(self, column: str, unit: str) -> np.ndarray:
        """Seconds (numbers) or durations (timedelta64, Arrow duration), as
        int64 ticks of `unit`."""
        col = self.column(column)
        if isinstance(col, pa.ChunkedArray) and pa.types.is_duration(col.type):
            if col.null_count:
                raise self._first_bad_row(column, _numpy(col.is_null()), "missing value (expected a duration)")
            return _numpy(col.cast(pa.int64())) * _NS_PER[col.type.unit] // _NS_PER[unit]
        if not isinstance(col, pa.ChunkedArray) and pd.api.types.is_timedelta64_dtype(col.dtype):
            ns = np.asarray(col.astype("timedelta64[ns]")).view(np.int64)
            return ns // _NS_PER[unit]
        seconds = self.floats(column)
        bad = ~np.isfinite(seconds)
        if bad.any():
            raise self._first_bad_row(column, bad, f"{seconds[bad][0]} is not a duration")
        return np.rint(seconds * (1e9 / _NS_PER[unit])).astype(np.int64)


def _is_polars(data: Any, name: str) -> bool:
    kind = type(data)
    return kind.__name__ == name and (kind.__module__ or "").split(".")[0] == "polars"


def is_polars_lazy(data: Any) -> bool:
    return _is_polars(data, "LazyFrame")


def is_polars_frame(data: Any) -> bool:
    return _is_polars(data, "DataFrame")


def exports_arrow(data: Any) -> bool:
    """Whether ``data`` is a table this module reads through Arrow: a pyarrow
    table, batch or reader, a Polars LazyFrame, or an object with the Arrow
    PyCapsule interface (pandas DataFrames have it too but are read as pandas)."""
    return (isinstance(data, pa.Table | pa.RecordBatch | pa.RecordBatchReader) or is_polars_lazy(data)
            or (not isinstance(data, pd.DataFrame)
                and (hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"))))


def as_table(data: Any, name: str) -> pd.DataFrame | pa.Table:
    """``data`` as a pandas DataFrame (pandas frames and mappings, unchanged)
    or a pyarrow Table (everything that speaks Arrow), or a TypeError naming
    the table. Streams (readers, DuckDB relations) are read whole, once."""
    if isinstance(data, pd.DataFrame | pa.Table):
        return data
    if isinstance(data, Mapping):
        return pd.DataFrame(dict(data), copy=False)
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if is_polars_lazy(data):
        data = data.collect()
    try:
        if is_polars_frame(data):
            return _polars_table(data)
        if hasattr(data, "__arrow_c_stream__"):
            return pa.table(data)
        if hasattr(data, "__arrow_c_array__"):
            return pa.Table.from_batches([pa.record_batch(data)])
    except (pa.ArrowException, TypeError, ValueError) as exc:
        what = f"cannot read it through the Arrow interface: {exc}"
        raise InvalidInputError(f"{name}: {what}", table=name, reason=what) from None
    raise TypeError(f"{name}: expected a pandas DataFrame, a pyarrow Table, or a table with the Arrow PyCapsule "
                    f"interface (Polars, DuckDB, ...), got {type(data).__name__}{conversion_hint(data)}")


def _polars_table(frame: Any) -> pa.Table:
    """A Polars DataFrame as a pyarrow Table through the Arrow interface, but
    for its Categorical columns: their codes index the process's shared
    categories, and Polars' export re-encodes them (37 ms a column of 6.87 M
    rows); here the codes are made dense in C++ (``_core.compact_codes``) and
    the column is a dictionary array of the categories it uses."""
    import polars as pl
    categorical = [name for name, dtype in frame.schema.items()
                   if isinstance(dtype, pl.Categorical) and frame[name].null_count() == 0]
    if not categorical:
        return pa.table(frame)

    def dictionary_array(name: str) -> pa.DictionaryArray | None:
        series = frame[name]
        categories = series.dtype.categories.to_series()
        codes, used = _core.compact_codes(series.to_physical().to_numpy(), len(categories))
        values = categories.gather(pl.Series(used, dtype=pl.UInt32)).to_arrow()
        if values.null_count:  # a category reserved, not yet named
            return None
        # Codes index `used` by construction: not checked again.
        return pa.DictionaryArray.from_arrays(pa.array(codes), values.cast(pa.string()), safe=False)

    if len(categorical) > 1 and frame.height >= 1 << 20:  # the compactions release the GIL
        with ThreadPoolExecutor(max_workers=len(categorical)) as pool:
            arrays = dict(zip(categorical, pool.map(dictionary_array, categorical)))
    else:
        arrays = {name: dictionary_array(name) for name in categorical}
    if any(array is None for array in arrays.values()):
        return pa.table(frame)  # as Polars exports it
    rest = pa.table(frame.drop(categorical))
    columns = [arrays[name] if name in arrays else rest.column(name) for name in frame.columns]
    return pa.Table.from_arrays(columns, names=frame.columns)


def _chunked(col: pd.Series) -> pa.ChunkedArray:
    """An Arrow-backed pandas column as Arrow (its buffers, not a copy)."""
    arrow = pa.array(col.array)
    return arrow if isinstance(arrow, pa.ChunkedArray) else pa.chunked_array([arrow])


def _numpy(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """One Arrow column as one numpy array: a single chunk without nulls is
    its buffer (no copy); several chunks are joined (one copy)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col.to_numpy(zero_copy_only=False)


def _arrow_strings(col: pa.ChunkedArray, threads: int = 1) -> tuple[np.ndarray, list[str]]:
    """(int32 codes, values) of a string or dictionary column. Dictionary
    indices are the codes (uint32 ones, as Polars categoricals have, viewed
    as int32 without a copy); plain, large and view strings are encoded from
    their buffers by ``_core.encode_strings`` on up to ``threads`` threads,
    other columns by Arrow (both in C++, without the GIL). Nulls get -1."""
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_string_view(col.type):
        return _core.encode_strings([_string_buffers(c) for c in col.chunks], threads)
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    if col.num_chunks == 0:
        return np.empty(0, dtype=np.int32), []
    dictionary = col.chunk(0).dictionary
    if col.num_chunks > 1 and not all(c.dictionary.equals(dictionary) for c in col.chunks[1:]):
        col = col.unify_dictionaries()  # (dictionary_encode and Polars give every chunk the same one)
        dictionary = col.chunk(0).dictionary
    if dictionary.null_count or len(pc.unique(dictionary)) != len(dictionary):
        # Arrow allows null and repeated dictionary values; the engine's values are distinct strings.
        return _arrow_strings(col.cast(col.type.value_type))
    indices = col.chunk(0).indices if col.num_chunks == 1 else \
        pa.chunked_array([c.indices for c in col.chunks], type=col.type.index_type).combine_chunks()
    if indices.type == pa.uint32() and len(dictionary) <= _INT32_MAX:
        indices = indices.view(pa.int32())  # every index is below the dictionary's length
    elif indices.type != pa.int32():
        indices = indices.cast(pa.int32())
    if indices.null_count:
        indices = pc.fill_null(indices, -1)
    return indices.to_numpy(zero_copy_only=False), [str(v) for v in dictionary.to_pylist()]


def _category_values(categories: pd.Index) -> list[str]:
    """Categories as str: taken as they are when they are strings (a
    list at C speed: 288,000 ``str`` categories in 25 ms, not 146), else
    each one's ``str()``."""
    if isinstance(categories.dtype, pd.StringDtype) or categories.inferred_type == "string":
        return categories.tolist()
    return [str(v) for v in categories]


def _string_buffers(chunk: pa.Array) -> tuple:
    """A string array's buffers as ``_core.encode_strings`` reads them
    (numpy views, no copy): offsets and data (or, for string views, the
    views and their data buffers), validity (None without nulls), the
    array's offset and length."""
    validity, offsets, *data = chunk.buffers()
    validity = np.frombuffer(validity, dtype=np.uint8) if validity is not None and chunk.null_count else None
    if pa.types.is_string_view(chunk.type):  # 16-byte views, then the buffers they point into
        views = np.frombuffer(offsets, dtype=np.uint8) if offsets is not None else np.empty(0, dtype=np.uint8)
        return views, [np.frombuffer(b, dtype=np.uint8) for b in data if b is not None], validity, chunk.offset, \
            len(chunk)
    dtype = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    return (np.frombuffer(offsets, dtype=dtype) if offsets is not None else np.zeros(1, dtype=dtype),
            np.frombuffer(data[0], dtype=np.uint8) if data[0] is not None else np.empty(0, dtype=np.uint8),
            validity, chunk.offset, len(chunk))


def _arrow_instants(col: pa.ChunkedArray, table: Table, column: str) -> tuple[np.ndarray, str]:
    if pa.types.is_timestamp(col.type):
        unit = col.type.unit
    elif pa.types.is_integer(col.type):
        unit = "ns"
    else:
        raise table._error(column, f"expected a timestamp or int64 nanoseconds, got {col.type}")
    ints = col.cast(pa.int64())  # a timestamp's own buffer
    if ints.null_count:
        ints = pc.fill_null(ints, np.iinfo(np.int64).min)
    return _numpy(ints), unit


_METRICS = ("cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours",
            "cost_per_effective_gpu_hour", "energy_kwh", "energy_estimated_kwh", "facility_energy_kwh", "co2e_kg",
            "embodied_co2e_kg")


def _key_values(key: _core.KeyColumn) -> tuple[str, np.ndarray, pa.LargeStringArray | None]:
    """A result key column as (name, values, dictionary): codes and their
    dictionary (Arrow strings over the engine's buffers, no Python string
    per value), or period instants (int64 ns UTC) or cost-line rows (int64)
    and None."""
    if key.is_period:
        return key.name, key.period, None
    if key.is_cost_line:
        return key.name, key.cost_line, None
    offsets, data = key.dictionary_buffers
    dictionary = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
    return key.name, key.codes, dictionary


#: The engine's counts, in the order of ``attrs["diagnostics"]``.
DIAGNOSTICS = ("lines_total", "lines_unattributed", "lines_unobserved", "lines_oversubscribed",
               "lines_primary_overlap", "interval", "samples_total", "samples_duplicate", "samples_no_consumer",
               "samples_unknown_resource", "samples_outside_lines", "samples_used")


#: Counts of down time (docs/semantics.md, 10), present when a downtime table changed something.
DOWNTIME_DIAGNOSTICS = ("lines_down", "samples_in_downtime")

#: Counts of energy (docs/semantics.md, 9), present when usage had ``power_w`` or a line is driven by energy.
ENERGY_DIAGNOSTICS = ("samples_without_power", "lines_energy_fallback", "samples_without_intensity")


def diagnostics_dict(diagnostics: _core.Diagnostics, energy: bool = False) -> dict:
    """The engine's counts (``_core.Diagnostics``) as ``attrs["diagnostics"]``
    holds them: ``interval`` is the seconds a sample stood for, or None; the
    down-time counts only when a resource was down; the energy counts when
    the result has energy (``energy``) or an energy-driven line fell back."""
    out = {name: getattr(diagnostics, "interval_seconds" if name == "interval" else name) for name in DIAGNOSTICS}
    if diagnostics.lines_down or diagnostics.samples_in_downtime:
        out.update({name: getattr(diagnostics, name) for name in DOWNTIME_DIAGNOSTICS})
    if energy or diagnostics.lines_energy_fallback:
        out.update({name: getattr(diagnostics, name) for name in ENERGY_DIAGNOSTICS})
    return out


def allocation_frame(raw: _core.AllocationResult) -> pd.DataFrame:
    """The engine's result (``_core.AllocationResult``) as a DataFrame: key
    columns, then metrics."""
    keys = [_key_values(key) for key in raw.keys]
    columns: dict[str, Any] = {}
    for name, values, dictionary in keys:
        if name == "cost_line":
            columns[name] = values
        elif dictionary is None:
            columns[name] = pd.DatetimeIndex(values.view("datetime64[ns]")).tz_localize("UTC")
        else:  # pandas "str" from the dictionary taken by code in Arrow, no Python string per row
            columns[name] = pd.array(pc.take(dictionary, pa.array(values)), dtype="str")
    for name in _METRICS:
        values = getattr(raw, name, None)  # energy_estimated_kwh: only beside estimated power
        if values is not None:
            columns[name] = values
    frame = pd.DataFrame(columns, copy=False)
    frame.attrs["diagnostics"] = diagnostics_dict(raw.diagnostics, raw.energy_kwh is not None)
    frame.attrs["join"] = join_frame(raw.join)
    return frame


#: What ``output=`` may name: the kind of table results come as.
OUTPUTS = ("pandas", "arrow", "polars")
#: Schema metadata keys of an Arrow result (``output="arrow"``).
ARROW_DIAGNOSTICS = b"gpucost.diagnostics"
ARROW_JOIN = b"gpucost.join"


def check_output(output: Any) -> str:
    """``output`` if it names a result kind, else an InvalidInputError naming it."""
    if not isinstance(output, str) or output not in OUTPUTS:
        what = f"expected one of {', '.join(map(repr, OUTPUTS))}, got {output!r}"
        raise InvalidInputError(f"output: {what}", parameter="output", reason=what)
    return output


def allocation_result(raw: _core.AllocationResult, output: str = "pandas") -> Any:
    """The engine's result as ``output`` asks: a pandas DataFrame
    (:func:`allocation_frame`), a pyarrow Table (:func:`allocation_arrow`) or
    a Polars DataFrame (:func:`allocation_polars`)."""
    if output == "arrow":
        return allocation_arrow(raw)
    if output == "polars":
        return allocation_polars(raw)
    return allocation_frame(raw)


def _result_columns(raw: _core.AllocationResult, dictionaries: bool) -> dict[str, pa.Array]:
    """Key columns, then metrics, as Arrow arrays over the engine's numpy
    arrays (numbers and instants without a copy). Strings are dictionary
    arrays over the engine's codes, or plain strings (one per result row)."""
    columns: dict[str, pa.Array] = {}
    for name, values, dictionary in map(_key_values, raw.keys):
        if name == "cost_line":
            columns[name] = pa.array(np.asarray(values, dtype=np.int64))
        elif dictionary is None:
            columns[name] = pa.array(np.asarray(values, dtype=np.int64)).view(pa.timestamp("ns", tz="UTC"))
        else:
            strings = dictionary.cast(pa.string())
            codes = pa.array(np.asarray(values, dtype=np.int32))
            columns[name] = pa.DictionaryArray.from_arrays(codes, strings) if dictionaries else strings.take(codes)
    for name in _METRICS:
        values = getattr(raw, name, None)  # energy_estimated_kwh: only beside estimated power
        if values is not None:
            columns[name] = pa.array(values)
    return columns


def allocation_arrow(raw: _core.AllocationResult) -> pa.Table:
    """The engine's result as a pyarrow Table, not through pandas: strings
    ``dictionary<int32, string>``, ``period`` ``timestamp[ns, UTC]``, numbers
    the engine's own arrays. The schema metadata holds the diagnostics
    (``gpucost.diagnostics``, JSON) and the join table (``gpucost.join``, an
    Arrow IPC stream); :func:`result_attrs` reads them back."""
    columns = _result_columns(raw, dictionaries=True)
    join = pa.Table.from_pandas(join_frame(raw.join), preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, join.schema) as writer:
        writer.write_table(join)
    metadata = {ARROW_DIAGNOSTICS: json.dumps(diagnostics_dict(raw.diagnostics, raw.energy_kwh is not None)).encode(),
                ARROW_JOIN: sink.getvalue().to_pybytes()}
    return pa.Table.from_arrays(list(columns.values()), names=list(columns), metadata=metadata)


# Polars DataFrames carry no metadata: their attrs live here while they live.
_POLARS_ATTRS: dict[int, dict] = {}


def allocation_polars(raw: _core.AllocationResult) -> Any:
    """The engine's result as a Polars DataFrame, built from the engine's
    arrays through Arrow (numbers without a copy), not through pandas:
    strings ``pl.String`` (as the pandas result has ``str``), ``period``
    ``Datetime("ns", "UTC")``. :func:`result_attrs` gives its diagnostics
    and join table."""
    try:
        import polars as pl
    except ImportError:
        raise Error("output='polars' needs Polars: pip install polars") from None
    columns = _result_columns(raw, dictionaries=False)
    frame = pl.from_arrow(pa.Table.from_arrays(list(columns.values()), names=list(columns)))
    key = id(frame)
    _POLARS_ATTRS[key] = {"diagnostics": diagnostics_dict(raw.diagnostics, raw.energy_kwh is not None), "join": join_frame(raw.join)}
    weakref.finalize(frame, _POLARS_ATTRS.pop, key, None)
    return frame


def result_attrs(result: Any) -> dict:
    """What an allocation result carries besides its rows, whatever its kind:
    ``{"diagnostics": dict, "join": DataFrame}`` (the engine's counts, and
    the join table, one row per resource and currency). For a pandas result
    this is ``result.attrs``; for an Arrow result, read from its schema
    metadata (kept by Parquet files); for a Polars result, kept beside it
    (a frame derived from it has none). ``{}`` when the result has none.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1"], "cost": [8.0],
        ...                       "start": [pd.Timestamp("2026-03-01 00:00", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-01 02:00", tz="UTC")]})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": ["a", "a", "b", None],
        ...                       "share": 1.0, "util": 0.9, "mem_used": 0.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> table = gpucost.allocate(costs, usage, inventory, output="arrow")
        >>> attrs = gpucost.result_attrs(table)
        >>> attrs["diagnostics"]["samples_used"], attrs["diagnostics"]["samples_no_consumer"]
        (3, 1)
        >>> attrs["join"][["resource_id", "lines", "samples", "cost_observed"]]
          resource_id  lines  samples  cost_observed
        0      node-1      1        4            8.0
    """
    if isinstance(result, pd.DataFrame):
        return result.attrs
    if isinstance(result, pa.Table):
        metadata = result.schema.metadata or {}
        out: dict = {}
        if ARROW_DIAGNOSTICS in metadata:
            out["diagnostics"] = json.loads(metadata[ARROW_DIAGNOSTICS])
        if ARROW_JOIN in metadata:
            out["join"] = JoinTable(pa.ipc.open_stream(metadata[ARROW_JOIN]).read_all().to_pandas())
        return out
    return _POLARS_ATTRS.get(id(result), {})


JOIN_TIMES = ("lines_start", "lines_end", "samples_start", "samples_end")


class JoinTable(pd.DataFrame):
    """``result.attrs["join"]``: a DataFrame that pandas can carry in attrs.

    pandas deep-copies attrs on every operation and compares them when it
    concatenates frames; a plain DataFrame there makes ``pd.concat`` of two
    results fail ("truth value of a DataFrame is ambiguous"). This one is
    shared instead of copied, and compares with another join table as a whole
    (``equals``). Anything derived from it is a plain DataFrame.
    """

    @property
    def _constructor(self):
        return pd.DataFrame

    def __deepcopy__(self, memo=None):
        return self

    def __eq__(self, other):
        if isinstance(other, JoinTable):
            return self.equals(other)
        return super().__eq__(other)

    def __ne__(self, other):
        if isinstance(other, JoinTable):
            return not self.equals(other)
        return super().__ne__(other)

    __hash__ = None


def for_export(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (not copied) with only the attrs a file can hold: Parquet
    keeps attrs as JSON, and the join table is a DataFrame."""
    if "join" not in frame.attrs:
        return frame
    out = frame.copy(deep=False)
    out.attrs = {k: v for k, v in frame.attrs.items() if k != "join"}
    return out


#: The join table's columns, in its order.
JOIN_COLUMNS = ("resource_id", "currency", "in_inventory", "lines", "primary_lines", "lines_primary_overlap",
                "lines_oversubscribed", "cost", "cost_observed", "cost_unobserved", "cost_unattributed",
                "billed_gpu_hours", "samples", "samples_no_consumer", "samples_outside_lines",
                "samples_unknown_resource", "unjoined_gpu_hours", *JOIN_TIMES)


def join_frame(join: _core.JoinTable) -> pd.DataFrame:
    """The engine's join table (``_core.JoinTable``, one row per resource and
    currency) as a DataFrame; times ``datetime64[ns, UTC]``, NaT where there
    is none."""
    columns: dict[str, Any] = {}
    for name in JOIN_COLUMNS:
        values = getattr(join, name)
        if name in ("resource_id", "currency"):
            columns[name] = np.asarray(values, dtype=object) if len(values) else np.empty(0, dtype=object)
        elif name == "in_inventory":
            columns[name] = np.asarray(values).astype(bool)
        elif name in JOIN_TIMES:
            columns[name] = pd.DatetimeIndex(np.asarray(values).view("datetime64[ns]")).tz_localize("UTC")
        else:
            columns[name] = values
    # Down time (docs/semantics.md, 10): its money and dropped samples, when a resource was down.
    if np.any(np.asarray(join.cost_down) != 0) or np.any(np.asarray(join.samples_in_downtime) != 0):
        columns["cost_down"] = join.cost_down
        columns["samples_in_downtime"] = join.samples_in_downtime
    frame = pd.DataFrame(columns, copy=False)
    for name in ("resource_id", "currency"):
        frame[name] = frame[name].astype("str")
    return JoinTable(frame)


# ---- telemetry results (C++ parsers) -> DataFrames ---------------------------

def str_codes(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """A string column as ``codes`` (one per row) and ``names`` (object
    array) with ``names[codes]`` equal to ``column.astype(str)``, missing
    values as astype(str) makes them, without a string per row where the
    column is categorical (the readers' samples: issue 29); ``-1`` is the
    last name."""
    column = pd.Series(column, copy=False)
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype(str).astype("category")
    every = pd.Categorical.from_codes(np.arange(len(column.cat.categories) + 1) - 1, dtype=column.dtype)
    names = np.roll(pd.Series(every).astype(str).to_numpy(dtype=object), -1)  # each code's astype(str); -1 last
    return column.cat.codes.to_numpy(), names


def utilisation_measured(usage: pd.DataFrame) -> np.ndarray | None:
    """Which samples' utilisation was measured, from a reader's
    ``util_measured`` column (False where the input had no utilisation field:
    util 0 there means "not measured"); None when every sample's was (no
    such column)."""
    if "util_measured" not in usage.columns:
        return None
    return pd.Series(usage["util_measured"]).fillna(True).to_numpy(dtype=bool)


def str_isin(column: Any, values: Any) -> np.ndarray:
    """``column.astype(str).isin(values)`` as a boolean array, on the
    categories (:func:`str_codes`)."""
    codes, names = str_codes(column)
    return pd.Series(names, dtype=object).isin(values).to_numpy()[codes]


def _codes_to_strings(pair: tuple[np.ndarray, list[str]], categorical: bool) -> Any:
    """A (codes, values) column from C++: categorical (samples) or object
    strings with None for missing (small tables)."""
    codes, values = pair
    if categorical:
        return pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype=object))
    lookup = np.asarray(list(values) + [None], dtype=object)
    return lookup[np.where(codes < 0, len(values), codes)]


_SAMPLE_STRINGS = ("resource_id", "consumer", "node", "gpu_uuid", "gpu_model", "mig_profile")


def usage_frame(raw: dict) -> pd.DataFrame:
    """Usage samples from a telemetry parser: the SEMANTICS 1.3 columns
    (``duration`` in seconds), then any extra columns the source has."""
    columns: dict[str, Any] = {
        "timestamp": pd.DatetimeIndex(raw["timestamp"].view("datetime64[ns]")).tz_localize("UTC"),
    }
    order = ["resource_id", "device", "consumer", "share", "util", "mem_used", "duration", "node", "gpu_uuid",
             "gpu_model", "mig_profile", "tensor_active", "mem_copy_util", "power_w", "mem_free", "util_measured"]
    for name in order:
        if name not in raw:
            continue
        value = raw[name]
        if name in _SAMPLE_STRINGS:
            columns[name] = _codes_to_strings(value, categorical=True)
        elif name == "duration":
            columns[name] = value / 1e9
        elif name == "power_w" and np.isnan(value).all():
            continue  # the source logged no power: no column, so no energy columns (docs/semantics.md, 9)
        elif name == "util_measured":  # only where some utilisation was not: False there (util read as 0)
            columns[name] = value.astype(bool)
        else:
            columns[name] = value
    frame = pd.DataFrame(columns, copy=False)
    if "diagnostics" in raw:
        frame.attrs["diagnostics"] = dict(raw["diagnostics"])
    return frame


def workloads_frame(raw: dict) -> pd.DataFrame:
    """consumer plus label columns; a missing label is None. A label history
    (kube_pod_labels) says the instants it covers in ``attrs["labels"]``
    (``start``, ``end``: its first and last points, UTC)."""
    columns: dict[str, Any] = {"consumer": _codes_to_strings(raw["consumer"], categorical=False)}
    for name, pair in raw["labels"]:
        columns[name] = _codes_to_strings(pair, categorical=False)
    frame = pd.DataFrame(columns, copy=False)
    if "first_ns" in raw:
        frame.attrs["labels"] = {"start": pd.Timestamp(int(raw["first_ns"]), tz="UTC"),
                                 "end": pd.Timestamp(int(raw["last_ns"]), tz="UTC")}
    return frame


def pod_gpus_frame(raw: dict) -> pd.DataFrame:
    """consumer, node, resource, kind, claim, device, count, share, gpus
    (count x share), start, end (UTC; NaT when not known)."""
    columns: dict[str, Any] = {name: _codes_to_strings(raw[name], categorical=False)
                               for name in ("consumer", "node", "resource", "kind", "claim", "device")}
    columns["count"] = raw["count"]
    columns["share"] = raw["share"]
    columns["gpus"] = raw["count"] * raw["share"]
    for name in ("start", "end"):
        ns = raw[name].astype(np.int64)
        times = ns.view("datetime64[ns]").copy()
        times[ns == np.iinfo(np.int64).min] = np.datetime64("NaT")
        columns[name] = pd.DatetimeIndex(times).tz_localize("UTC")
    frame = pd.DataFrame(columns, copy=False)
    frame.attrs["kubernetes"] = {"pods_without_gpus": int(raw["pods_without_gpus"])}
    return frame


def nodes_frame(raw: dict) -> pd.DataFrame:
    """node, resource_id, provider, zone, instance_type, instance_id."""
    return pd.DataFrame({name: _codes_to_strings(raw[name], categorical=False)
                         for name in ("node", "resource_id", "provider", "zone", "instance_type", "instance_id")},
                        copy=False)
