"""DataFrames and Arrow tables to the engine's columns, and results back.

This is the only module that knows pandas and Arrow. Strings become int32
codes plus a dictionary (categorical codes are reused as they are), instants
become int64 in their own unit (datetime64 of any unit, tz-aware or not, is
read in place), numbers become float64 arrays (float64 columns are not
copied). Results come back as numpy arrays owned by C++ and become the
DataFrame's columns without a copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpucost.errors import InvalidInputError, conversion_hint

__all__ = ["Table", "JoinTable", "allocation_frame", "join_frame", "usage_frame", "workloads_frame",
           "nodes_frame"]

_INT32_MAX = np.iinfo(np.int32).max
_UNITS = {"ns", "us", "ms", "s"}


class Table:
    """Column access over a pandas DataFrame, a pyarrow Table or a mapping of
    column names to arrays, with errors that name the table."""

    def __init__(self, data: Any, name: str):
        self.name = name
        if isinstance(data, pd.DataFrame | pa.Table):
            self._data = data
        elif isinstance(data, pa.RecordBatch):
            self._data = pa.Table.from_batches([data])
        elif isinstance(data, Mapping):
            self._data = pd.DataFrame(dict(data), copy=False)
        else:
            raise TypeError(
                f"{name}: expected a pandas DataFrame or a pyarrow Table, got {type(data).__name__}{conversion_hint(data)}"
            )

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
            raise InvalidInputError(f"{self.name}: missing required column '{column}'")
        return self._data.column(column) if isinstance(self._data, pa.Table) else self._data[column]

    def _error(self, column: str, what: str) -> InvalidInputError:
        return InvalidInputError(f"{self.name}: column '{column}': {what}")

    def _first_bad_row(self, column: str, mask: np.ndarray, what: str) -> InvalidInputError:
        row = int(np.flatnonzero(mask)[0])
        return InvalidInputError(f"{self.name}: row {row}, column '{column}': {what}")

    # ---- strings ---------------------------------------------------------

    def strings(self, column: str) -> tuple[np.ndarray, list[str]]:
        """(int32 codes, values); nulls have code -1."""
        col = self.column(column)
        if isinstance(col, pa.ChunkedArray):
            return _arrow_strings(col)
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = np.asarray(col.cat.codes)
            values = [str(v) for v in col.cat.categories]
        else:
            if isinstance(col.dtype, pd.ArrowDtype | pd.StringDtype):
                return _arrow_strings(_chunked(col))
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
                return col.to_numpy().astype(np.float64, copy=False) if col.null_count == 0 else \
                    pc.fill_null(col.cast(pa.float64()), float("nan")).to_numpy()
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
        arr = col.to_numpy() if isinstance(col, pa.ChunkedArray) else np.asarray(col)
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
        """Seconds (numbers) or timedelta64, as int64 ticks of `unit`."""
        col = self.column(column)
        if isinstance(col, pa.ChunkedArray):
            col = col.to_pandas()
        ticks_per_second = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[unit]
        if pd.api.types.is_timedelta64_dtype(col.dtype):
            ns = np.asarray(col.astype("timedelta64[ns]")).view(np.int64)
            return ns // int(1e9 / ticks_per_second)
        seconds = self.floats(column)
        bad = ~np.isfinite(seconds)
        if bad.any():
            raise self._first_bad_row(column, bad, f"{seconds[bad][0]} is not a duration")
        return np.rint(seconds * ticks_per_second).astype(np.int64)


def _chunked(col: pd.Series) -> pa.ChunkedArray:
    """An Arrow-backed pandas column as Arrow (its buffers, not a copy)."""
    arrow = pa.array(col.array)
    return arrow if isinstance(arrow, pa.ChunkedArray) else pa.chunked_array([arrow])


def _arrow_strings(col: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    col = col.unify_dictionaries() if col.num_chunks > 1 else col
    dictionary = col.chunk(0).dictionary if col.num_chunks else pa.array([], pa.string())
    indices = pa.chunked_array([c.indices for c in col.chunks], type=col.type.index_type) \
        if col.num_chunks else pa.array([], pa.int32())
    indices = pc.fill_null(indices.cast(pa.int32()), -1)
    codes = indices.to_numpy() if isinstance(indices, pa.Array) else indices.combine_chunks().to_numpy()
    return np.asarray(codes, dtype=np.int32), [str(v) for v in dictionary.to_pylist()]


def _arrow_instants(col: pa.ChunkedArray, table: Table, column: str) -> tuple[np.ndarray, str]:
    if pa.types.is_timestamp(col.type):
        unit = col.type.unit
        ints = col.cast(pa.int64())
    elif pa.types.is_integer(col.type):
        unit, ints = "ns", col.cast(pa.int64())
    else:
        raise table._error(column, f"expected a timestamp or int64 nanoseconds, got {col.type}")
    ints = pc.fill_null(ints, np.iinfo(np.int64).min)
    return np.asarray(ints.to_numpy() if isinstance(ints, pa.Array) else ints.combine_chunks().to_numpy(),
                      dtype=np.int64), unit


def allocation_frame(raw: dict) -> pd.DataFrame:
    """The engine's result dict as a DataFrame: key columns, then metrics."""
    columns: dict[str, Any] = {}
    for name, values, dictionary in raw["keys"]:
        if dictionary is None:
            columns[name] = pd.DatetimeIndex(values.view("datetime64[ns]")).tz_localize("UTC")
        else:
            columns[name] = np.asarray(dictionary, dtype=object)[values] if len(dictionary) else \
                np.empty(0, dtype=object)
    metrics = ["cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours",
               "cost_per_effective_gpu_hour"]
    for name in metrics:
        if raw[name] is not None:
            columns[name] = raw[name]
    frame = pd.DataFrame(columns, copy=False)
    for name, _, dictionary in raw["keys"]:
        if dictionary is not None:
            frame[name] = frame[name].astype("str")
    frame.attrs["diagnostics"] = dict(raw["diagnostics"])
    frame.attrs["join"] = join_frame(raw["join"])
    return frame


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


def join_frame(raw: dict) -> pd.DataFrame:
    """The engine's join table (one row per resource and currency) as a
    DataFrame; times ``datetime64[ns, UTC]``, NaT where there is none."""
    columns: dict[str, Any] = {}
    for name, values in raw.items():
        if name in ("resource_id", "currency"):
            columns[name] = np.asarray(values, dtype=object) if len(values) else np.empty(0, dtype=object)
        elif name == "in_inventory":
            columns[name] = np.asarray(values).astype(bool)
        elif name in JOIN_TIMES:
            columns[name] = pd.DatetimeIndex(np.asarray(values).view("datetime64[ns]")).tz_localize("UTC")
        else:
            columns[name] = values
    frame = pd.DataFrame(columns, copy=False)
    for name in ("resource_id", "currency"):
        frame[name] = frame[name].astype("str")
    return JoinTable(frame)


# ---- telemetry results (C++ parsers) -> DataFrames ---------------------------

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
             "gpu_model", "mig_profile", "tensor_active", "mem_copy_util", "power_w", "mem_free"]
    for name in order:
        if name not in raw:
            continue
        value = raw[name]
        if name in _SAMPLE_STRINGS:
            columns[name] = _codes_to_strings(value, categorical=True)
        elif name == "duration":
            columns[name] = value / 1e9
        else:
            columns[name] = value
    frame = pd.DataFrame(columns, copy=False)
    if "diagnostics" in raw:
        frame.attrs["diagnostics"] = dict(raw["diagnostics"])
    return frame


def workloads_frame(raw: dict) -> pd.DataFrame:
    """consumer plus label columns; a missing label is None."""
    columns: dict[str, Any] = {"consumer": _codes_to_strings(raw["consumer"], categorical=False)}
    for name, pair in raw["labels"]:
        columns[name] = _codes_to_strings(pair, categorical=False)
    return pd.DataFrame(columns, copy=False)


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
