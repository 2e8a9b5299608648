"""Helpers shared by the analyses: durations, instants, periods, labels, and
pricing of device-time spans through :func:`gpucost.allocate` (so every
dollar an analysis reports reconciles with the allocation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.allocation import RESULT_METRICS, allocate
from gpucost.errors import InvalidInputError
from gpucost.frames import Table
from gpucost.model import Reserved

NS_PER_S = 1_000_000_000
NS_PER_H = 3600 * NS_PER_S
RESERVED = (Reserved.IDLE, Reserved.UNATTRIBUTED, Reserved.UNLABELLED, Reserved.DOWN)
UNLABELLED = "__unlabelled__"
_FREQS = ("h", "D", "MS")


def seconds(value: Any, name: str) -> float:
    """A duration parameter in seconds: a number of seconds, a pandas offset
    string ("2h", "30min"), a Timedelta or a timedelta."""
    try:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            out = float(value)
        else:
            out = pd.Timedelta(value).total_seconds()
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"parameter '{name}': {value!r} is not a duration ({exc})") from None
    if not np.isfinite(out) or out < 0:
        raise InvalidInputError(f"parameter '{name}': {value!r} is not a non-negative duration")
    return out


def instants_ns(table: Table, column: str) -> np.ndarray:
    """A column of instants as int64 ns UTC; a missing instant is an error
    naming its row."""
    values, unit = table.instants(column)
    missing = values == np.iinfo(np.int64).min
    if missing.any():
        raise table._first_bad_row(column, missing, "missing instant")
    scale = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": NS_PER_S}[unit]
    return values.astype(np.int64, copy=False) * scale


def optional_instants_ns(table: Table, column: str) -> np.ndarray:
    """Like :func:`instants_ns` but a missing instant stays INT64_MIN."""
    values, unit = table.instants(column)
    missing = values == np.iinfo(np.int64).min
    scale = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": NS_PER_S}[unit]
    out = values.astype(np.int64, copy=True) * scale
    out[missing] = np.iinfo(np.int64).min
    return out


def datetime_ns(values: Any) -> np.ndarray:
    """A datetime column (tz-aware or naive UTC) as int64 ns."""
    return pd.DatetimeIndex(values).as_unit("ns").asi8


def to_datetime(ns: np.ndarray) -> pd.DatetimeIndex:
    """int64 ns UTC (INT64_MIN = NaT) as a UTC DatetimeIndex."""
    return pd.DatetimeIndex(np.asarray(ns, dtype=np.int64).view("datetime64[ns]")).tz_localize("UTC")


def check_freq(freq: str | None, name: str = "freq") -> str | None:
    if freq is not None and freq not in _FREQS:
        raise InvalidInputError(f"parameter '{name}': unknown freq {freq!r} (expected \"h\", \"D\" or \"MS\")")
    return freq


def floor_ns(ns: np.ndarray, freq: str) -> np.ndarray:
    """The start (int64 ns) of the UTC period of `freq` containing each instant."""
    check_freq(freq)
    ns = np.asarray(ns, dtype=np.int64)
    if freq == "h":
        return ns - np.mod(ns, NS_PER_H)
    if freq == "D":
        return ns - np.mod(ns, 24 * NS_PER_H)
    months = ns.view("datetime64[ns]").astype("datetime64[M]")
    return months.astype("datetime64[ns]").view(np.int64)


def strings(table: Table, column: str) -> np.ndarray:
    """A string column as an object array ("" for null)."""
    codes, values = table.strings(column)
    lookup = np.asarray(list(values) + [""], dtype=object)
    return lookup[np.where(codes < 0, len(values), codes)]


def labels_frame(workloads: Any) -> pd.DataFrame:
    """The workloads table as a DataFrame of str: ``consumer`` plus labels
    (null labels as ``__unlabelled__``), one row per consumer. A consumer
    listed twice with different labels is an error, as in allocate."""
    if workloads is None:
        return pd.DataFrame({"consumer": pd.Series([], dtype=object)})
    t = Table(workloads, "workloads")
    columns = {"consumer": strings(t, "consumer")}
    empty = columns["consumer"] == ""
    if empty.any():
        raise t._first_bad_row("consumer", empty, "missing consumer")
    for c in t.columns:
        if c != "consumer":
            codes, values = t.strings(c)
            lookup = np.asarray(list(values) + [UNLABELLED], dtype=object)
            columns[c] = lookup[np.where(codes < 0, len(values), codes)]
    frame = pd.DataFrame(columns)
    label_cols = [c for c in frame.columns if c != "consumer"]
    dup = frame.duplicated("consumer", keep=False)
    if dup.any():
        distinct = frame[dup].drop_duplicates()
        clash = distinct.duplicated("consumer", keep=False)
        if clash.any():
            consumer = distinct.loc[clash, "consumer"].iloc[0]
            rows = np.flatnonzero(frame["consumer"].to_numpy() == consumer)
            raise InvalidInputError(f"workloads: row {rows[1]}, column 'consumer': consumer {consumer!r} has "
                                    f"other labels at row {rows[0]}")
        frame = frame.drop_duplicates("consumer")
    return frame.reset_index(drop=True)[["consumer", *label_cols]]


def attach_labels(frame: pd.DataFrame, labels: pd.DataFrame, consumer: str = "consumer",
                  columns: Sequence[str] | None = None, nobody: str = "") -> pd.DataFrame:
    """`frame` with the label columns of `labels` for its `consumer` column:
    ``nobody`` where the consumer is "", ``__unlabelled__`` where it is not
    in the workloads table."""
    label_cols = [c for c in labels.columns if c != "consumer"] if columns is None else list(columns)
    merged = frame.merge(labels[["consumer", *label_cols]].rename(columns={"consumer": consumer}),
                         on=consumer, how="left")
    for c in label_cols:
        col = merged[c].astype(object)
        col = col.where(col.notna(), UNLABELLED)
        merged[c] = col.where(merged[consumer].to_numpy() != "", nobody)
    return merged


def device_time_usage(resource_id: np.ndarray, device: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray,
                      consumer: np.ndarray) -> pd.DataFrame:
    """Usage samples that hold whole devices over given spans (share 1, util
    0): the input with which :func:`gpucost.allocate` prices device-time."""
    return pd.DataFrame({
        "timestamp": to_datetime(start_ns),
        "resource_id": pd.array(np.asarray(resource_id, dtype=object), dtype="str"),
        "device": np.asarray(device, dtype=np.int32),
        "consumer": pd.array(np.asarray(consumer, dtype=object), dtype="str"),
        "share": np.ones(len(start_ns)),
        "util": np.zeros(len(start_ns)),
        "mem_used": np.zeros(len(start_ns)),
        "duration": pd.to_timedelta(np.asarray(end_ns, dtype=np.int64) - np.asarray(start_ns, dtype=np.int64),
                                    unit="ns"),
    })


def price_device_time(costs: Any, inventory: Any, usage: pd.DataFrame, freq: str | None = None) -> pd.DataFrame:
    """The cost lines' share of the device-time in `usage` (built by
    :func:`device_time_usage`), by consumer (and period with `freq`), through
    gpucost.allocate: a device held over [a, b) gets, from each line of its
    resource, ``cost * overlap / (devices * line length)``."""
    by = ["consumer"] if freq is None else ["consumer", "period"]
    return allocate(costs, usage, inventory, by=by, freq=freq)


def is_allocation_metric(column: str) -> bool:
    return column in RESULT_METRICS


def require_columns(frame: pd.DataFrame, table: str, columns: Sequence[str], hint: str = "") -> None:
    for c in columns:
        if c not in frame.columns:
            raise InvalidInputError(f"{table}: missing required column '{c}'{hint}")


def as_frame(data: Any, name: str) -> pd.DataFrame:
    """A pandas DataFrame of any table gpucost accepts (DataFrame, Arrow, dict)."""
    if isinstance(data, pd.DataFrame):
        return data
    t = Table(data, name)
    raw = t._data
    return raw.to_pandas() if hasattr(raw, "to_pandas") else pd.DataFrame(raw)

