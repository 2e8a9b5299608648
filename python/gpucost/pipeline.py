"""Idempotent daily allocation jobs: plain functions an Airflow task (or cron)
calls (docs/pipeline.md).

::

    import gpucost.pipeline as gp
    gp.run_day("2026-03-02", gp.demo_source(), "postgresql://gpucost@db/finops")

(each function has an example that runs, on SQLite or Parquet).

A day's rows are written **idempotently**: re-running a day replaces that
day's rows in one transaction (SQL) or one atomic file rename (Parquet), so
a re-run never duplicates and a failure leaves the previous rows intact.

Sinks:

- a SQLAlchemy URL (``postgresql://...``, ``sqlite:///path.db``) or
  ``Engine``: table ``gpucost_allocation`` (``table=``) with a ``day`` DATE
  column, the group columns (text) and the metrics (double precision);
  created when missing. Writers of the same table are serialised (a table
  lock on PostgreSQL; SQLite locks the database on write).
- a directory: a Parquet dataset partitioned by day,
  ``<dir>/day=YYYY-MM-DD/part-0.parquet`` (Hive style: DuckDB, Spark, pyarrow
  and pandas read it as one table with a ``day`` column).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import gpucost
from gpucost.errors import Error, InvalidInputError, conversion_hint
from gpucost.frames import for_export

__all__ = ["allocate_day", "write_day", "run_day", "read_sink", "demo_source", "DEFAULT_TABLE",
           "DEFAULT_BY"]

DEFAULT_TABLE = "gpucost_allocation"
DEFAULT_BY = ("team", "project")
METRICS = ("cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours",
           "cost_per_effective_gpu_hour")

#: ``load(day_start, day_end)`` returns ``(costs, usage, inventory, workloads)``
#: covering at least the cost lines that start in ``[day_start, day_end)``.
Loader = Callable[[pd.Timestamp, pd.Timestamp], tuple]


def day_bounds(day: Any) -> tuple[pd.Timestamp, pd.Timestamp]:
    """``[midnight, next midnight)`` of a UTC day given as "YYYY-MM-DD", a
    date, a datetime or a Timestamp (the time of day must be midnight)."""
    try:
        ts = pd.Timestamp(day)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"parameter 'day': {day!r} is not a date ({exc})") from None
    if ts is pd.NaT:
        raise InvalidInputError("parameter 'day': missing date")
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    if ts != ts.normalize():
        raise InvalidInputError(f"parameter 'day': {day!r} is not midnight UTC")
    return ts, ts + pd.Timedelta(days=1)


def allocate_day(day: Any, costs: Any, usage: Any, inventory: Any, workloads: Any = None, *,
                 by: Sequence[str] = DEFAULT_BY, **policy: Any) -> pd.DataFrame:
    """The allocation of the cost lines that start on ``day`` (UTC), grouped
    by ``by``, with a leading ``day`` column (a ``datetime.date``).

    A line counts wholly on the day it starts (docs/semantics.md 4), so the
    days of a month add up to the month. ``policy`` goes to
    :func:`gpucost.allocate` (``basis``, ``idle``, ``interval``, ...).

    Examples:
        A line on each of two days; samples across midnight:

        >>> starts = pd.to_datetime(["2026-03-02 23:00", "2026-03-03 00:00"], utc=True)   # one line a day
        >>> costs = pd.DataFrame({"resource_id": "node-1", "start": starts, "end": starts + pd.Timedelta("1h"),
        ...                       "cost": [8.0, 6.0]})
        >>> t = pd.date_range("2026-03-02 23:00", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "node-1", "device": 0,
        ...                       "consumer": ["train", "train", "infer", "infer"], "share": 1.0, "util": 0.5,
        ...                       "mem_used": 0.0, "duration": 1800.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> workloads = pd.DataFrame({"consumer": ["train", "infer"], "team": ["research", "product"]})
        >>> import gpucost.pipeline as gp
        >>> gp.allocate_day("2026-03-02", costs, usage, inventory, workloads, by=["team"])[["day", "team", "cost"]]
                  day      team  cost
        0  2026-03-02  __idle__   0.0
        1  2026-03-02  research   8.0
        >>> gp.allocate_day("2026-03-03", costs, usage, inventory, workloads, by=["team"])[["day", "team", "cost"]]
                  day      team  cost
        0  2026-03-03  __idle__   0.0
        1  2026-03-03   product   6.0
    """
    start, end = day_bounds(day)
    line_start = pd.to_datetime(costs["start"], utc=True)
    mask = (line_start >= start) & (line_start < end)
    day_costs = costs.loc[mask.to_numpy()]
    last_end = pd.to_datetime(day_costs["end"], utc=True).max() if len(day_costs) else end
    stamps = pd.to_datetime(usage["timestamp"], utc=True)
    # Samples can only overlap the day's lines inside [start - longest sample, last line end).
    lookback = pd.Timedelta(seconds=float(usage["duration"].max()) if "duration" in usage and len(usage)
                            else float(policy.get("interval", 60)))
    day_usage = usage.loc[((stamps >= start - lookback) & (stamps < last_end)).to_numpy()]
    by = [b for b in by if b != "period"]
    result = gpucost.allocate(day_costs, day_usage, inventory, workloads, by=by, **policy)
    result.insert(0, "day", start.date())
    return result


def run_day(day: Any, load: Loader, sink: Any, *, by: Sequence[str] = DEFAULT_BY, table: str = DEFAULT_TABLE,
            **policy: Any) -> int:
    """Loads, allocates and writes one day: the task an Airflow DAG runs.
    Returns the number of rows written.

    ``load(day_start, day_end)`` returns ``(costs, usage, inventory,
    workloads)`` covering at least the cost lines that start in the day.

    Examples:
        The demo month (:func:`demo_source`) into a SQLite database:

        >>> import gpucost.pipeline as gp
        >>> gp.run_day("2026-03-02", gp.demo_source(), "sqlite:///finops.db")
        13
        >>> gp.run_day("2026-03-02", gp.demo_source(), "sqlite:///finops.db")   # again: replaced, not added
        13
        >>> day = gp.read_sink("sqlite:///finops.db")
        >>> len(day), day["day"].unique().tolist()
        (13, [datetime.date(2026, 3, 2)])
    """
    start, end = day_bounds(day)
    costs, usage, inventory, workloads = load(start, end)
    result = allocate_day(start, costs, usage, inventory, workloads, by=by, **policy)
    return write_day(result, sink, start, table=table)


def _is_sql(sink: Any) -> bool:
    if isinstance(sink, str):
        return "://" in sink and not sink.startswith("file://")
    return hasattr(sink, "dialect") and hasattr(sink, "connect")  # an SQLAlchemy Engine


def _check_frame(result: pd.DataFrame, day: dt.date) -> pd.DataFrame:
    if not isinstance(result, pd.DataFrame):
        raise InvalidInputError(f"result: expected a DataFrame, got {type(result).__name__}{conversion_hint(result)}")
    if "day" not in result.columns:
        raise InvalidInputError("result: missing required column 'day'")
    other = pd.Index(pd.to_datetime(result["day"]).dt.date).difference([day])
    if len(other):
        raise InvalidInputError(f"result: column 'day': {other[0]} is not the day written ({day})")
    return result


def write_day(result: pd.DataFrame, sink: Any, day: Any, *, table: str = DEFAULT_TABLE) -> int:
    """Replaces ``day``'s rows in ``sink`` by ``result`` (from
    :func:`allocate_day`), atomically. Returns the number of rows written.

    Examples:
        >>> starts = pd.to_datetime(["2026-03-02 23:00", "2026-03-03 00:00"], utc=True)   # one line a day
        >>> costs = pd.DataFrame({"resource_id": "node-1", "start": starts, "end": starts + pd.Timedelta("1h"),
        ...                       "cost": [8.0, 6.0]})
        >>> t = pd.date_range("2026-03-02 23:00", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "node-1", "device": 0,
        ...                       "consumer": ["train", "train", "infer", "infer"], "share": 1.0, "util": 0.5,
        ...                       "mem_used": 0.0, "duration": 1800.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> workloads = pd.DataFrame({"consumer": ["train", "infer"], "team": ["research", "product"]})
        >>> import gpucost.pipeline as gp
        >>> for day in ("2026-03-02", "2026-03-03"):
        ...     result = gp.allocate_day(day, costs, usage, inventory, workloads, by=["team"])
        ...     print(day, gp.write_day(result, "showback", day))   # a Parquet dataset in ./showback
        2026-03-02 2
        2026-03-03 2
        >>> from pathlib import Path
        >>> sorted(p.name for p in Path("showback").iterdir())
        ['day=2026-03-02', 'day=2026-03-03']
        >>> gp.write_day(result, "showback", "2026-03-02")   # the result of another day is refused
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: result: column 'day': 2026-03-03 is not the day written (2026-03-02)
    """
    start, _ = day_bounds(day)
    result = _check_frame(result, start.date())
    if _is_sql(sink):
        return _write_sql(result, sink, start.date(), table)
    return _write_parquet(result, Path(str(sink).removeprefix("file://")), start.date())


# ---- SQL ---------------------------------------------------------------------


def _engine(sink: Any):
    import sqlalchemy as sa
    if isinstance(sink, str):
        try:
            return sa.create_engine(sink)
        except Exception as exc:  # noqa: BLE001 - a bad URL or a missing driver is bad input
            raise InvalidInputError(f"sink {sink!r}: {type(exc).__name__}: {exc}") from None
    return sink


def _sql_table(metadata, table: str, keys: Sequence[str], metrics: Sequence[str]):
    import sqlalchemy as sa
    columns = [sa.Column("day", sa.Date, nullable=False)]
    columns += [sa.Column(k, sa.Text) for k in keys]
    columns += [sa.Column(m, sa.Float(precision=53)) for m in metrics]
    return sa.Table(table, metadata, *columns, sa.Index(f"ix_{table}_day", "day"))


def _write_sql(result: pd.DataFrame, sink: Any, day: dt.date, table: str) -> int:
    import sqlalchemy as sa
    keys = [c for c in result.columns if c != "day" and c not in METRICS]
    metrics = [c for c in result.columns if c in METRICS]
    engine = _engine(sink)
    records = _records(result, keys, metrics)
    try:
        with engine.begin() as conn:  # one transaction: all of it or none of it
            existing = sa.inspect(conn).get_columns(table) if sa.inspect(conn).has_table(table) else None
            target = _sql_table(sa.MetaData(), table, keys, metrics)
            if existing is None:
                target.create(conn)
            else:
                have = [c["name"] for c in existing]
                missing = [c.name for c in target.columns if c.name not in have]
                if missing:
                    raise InvalidInputError(f"table {table}: missing column '{missing[0]}' (the table was "
                                            f"created for other groups: {', '.join(have)}); write to another table")
            if conn.dialect.name == "postgresql":  # serialise writers of this table; readers are not blocked
                conn.execute(sa.text(f'LOCK TABLE "{table}" IN SHARE ROW EXCLUSIVE MODE'))
            conn.execute(sa.delete(target).where(target.c.day == day))
            if records:
                conn.execute(sa.insert(target), records)
    except InvalidInputError:
        raise
    except sa.exc.SQLAlchemyError as exc:
        raise Error(f"table {table}: writing {day} failed, previous rows kept: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc
    finally:
        if isinstance(sink, str):
            engine.dispose()
    return len(records)


def _records(result: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str]) -> list[dict]:
    frame = pd.DataFrame({"day": pd.to_datetime(result["day"]).dt.date})
    for k in keys:
        frame[k] = result[k].astype(object).where(result[k].notna(), None).astype(str)
    for m in metrics:
        values = result[m].astype(np.float64)
        frame[m] = values.astype(object).where(np.isfinite(values), None)
    return frame.to_dict("records")


# ---- Parquet -------------------------------------------------------------------


def _write_parquet(result: pd.DataFrame, root: Path, day: dt.date) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from gpucost.demo import atomic_write
    if root.exists() and not root.is_dir():
        raise InvalidInputError(f"sink {root}: not a directory")
    table = pa.Table.from_pandas(for_export(result.drop(columns=["day"])), preserve_index=False)
    partition = root / f"day={day.isoformat()}"
    atomic_write(partition / "part-0.parquet", lambda f: pq.write_table(table, f))
    return len(result)


# ---- reading back --------------------------------------------------------------


def read_sink(sink: Any, *, table: str = DEFAULT_TABLE, start: Any = None, end: Any = None) -> pd.DataFrame:
    """Every row of a sink (days in ``[start, end)`` when given), sorted by
    day and groups.

    Examples:
        >>> starts = pd.to_datetime(["2026-03-02 23:00", "2026-03-03 00:00"], utc=True)   # one line a day
        >>> costs = pd.DataFrame({"resource_id": "node-1", "start": starts, "end": starts + pd.Timedelta("1h"),
        ...                       "cost": [8.0, 6.0]})
        >>> t = pd.date_range("2026-03-02 23:00", periods=4, freq="30min", tz="UTC")
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "node-1", "device": 0,
        ...                       "consumer": ["train", "train", "infer", "infer"], "share": 1.0, "util": 0.5,
        ...                       "mem_used": 0.0, "duration": 1800.0})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1"], "device": [0], "mem_capacity": [80 * 2**30]})
        >>> workloads = pd.DataFrame({"consumer": ["train", "infer"], "team": ["research", "product"]})
        >>> import gpucost.pipeline as gp
        >>> for day in ("2026-03-02", "2026-03-03"):
        ...     n = gp.write_day(gp.allocate_day(day, costs, usage, inventory, workloads, by=["team"]),
        ...                      "sqlite:///finops.db", day)
        >>> gp.read_sink("sqlite:///finops.db")[["day", "team", "cost", "gpu_hours"]]
                  day      team  cost  gpu_hours
        0  2026-03-02  __idle__   0.0        0.0
        1  2026-03-02  research   8.0        1.0
        2  2026-03-03  __idle__   0.0        0.0
        3  2026-03-03   product   6.0        1.0
        >>> gp.read_sink("sqlite:///finops.db", start="2026-03-03")[["day", "team", "cost"]]
                  day      team  cost
        0  2026-03-03  __idle__   0.0
        1  2026-03-03   product   6.0
    """
    lo = day_bounds(start)[0].date() if start is not None else None
    hi = day_bounds(end)[0].date() if end is not None else None
    if _is_sql(sink):
        import sqlalchemy as sa
        engine = _engine(sink)
        try:
            with engine.connect() as conn:
                if not sa.inspect(conn).has_table(table):
                    raise InvalidInputError(f"table {table}: not found in {engine.url.render_as_string()}")
                target = sa.Table(table, sa.MetaData(), autoload_with=conn)
                query = sa.select(target)
                if lo is not None:
                    query = query.where(target.c.day >= lo)
                if hi is not None:
                    query = query.where(target.c.day < hi)
                frame = pd.read_sql(query, conn)
        finally:
            if isinstance(sink, str):
                engine.dispose()
        frame["day"] = pd.to_datetime(frame["day"]).dt.date
    else:
        import pyarrow as pa
        import pyarrow.dataset as ds
        root = Path(str(sink).removeprefix("file://"))
        if not root.is_dir():
            raise InvalidInputError(f"sink {root}: no such directory")
        dataset = ds.dataset(root, format="parquet", exclude_invalid_files=False,
                             partitioning=ds.partitioning(pa.schema([("day", pa.date32())]), flavor="hive"),
                             ignore_prefixes=[".", "_"])
        frame = dataset.to_table().to_pandas()
        if lo is not None:
            frame = frame[frame["day"] >= lo]
        if hi is not None:
            frame = frame[frame["day"] < hi]
        frame = frame[["day", *[c for c in frame.columns if c != "day"]]]
    keys = [c for c in frame.columns if c not in METRICS]
    return frame.sort_values(keys, kind="stable", ignore_index=True)


def demo_source(seed: int = 0) -> Loader:
    """A loader over the demo month (for trying a DAG without credentials).

    Examples:
        >>> import gpucost.pipeline as gp
        >>> load = gp.demo_source(seed=0)
        >>> costs, usage, inventory, workloads = load(*gp.day_bounds("2026-03-02"))
        >>> costs["start"].min(), costs["start"].max()
        (Timestamp('2026-03-01 00:00:00+0000', tz='UTC'), Timestamp('2026-03-31 23:00:00+0000', tz='UTC'))
        >>> list(workloads.columns)
        ['consumer', 'team', 'project', 'user', 'job', 'attempt']
    """
    def load(start: pd.Timestamp, end: pd.Timestamp) -> tuple:
        from gpucost.demo import demo_fleet
        fleet = demo_fleet(seed)
        return fleet.costs, fleet.usage, fleet.inventory, fleet.workloads
    return load




def config_source(path: str | os.PathLike) -> Loader:
    """A loader over the sources a gpucost TOML config names (bill,
    telemetry, pods, ...; docs/cli.md). The tables are read once per process."""
    cache: list = []

    def load(start: pd.Timestamp, end: pd.Timestamp) -> tuple:
        if not cache:
            from gpucost.config import load_config
            from gpucost.plan import load_tables
            t = load_tables(load_config(path))
            cache.append((t.costs, t.usage, t.inventory, t.workloads))
        return cache[0]
    return load


def check_day(day: Any, load: Loader, sink: Any, *, table: str = DEFAULT_TABLE, expected_rows: int | None = None,
              rel: float = 1e-9) -> float:
    """Checks that ``day``'s rows in ``sink`` add up to the day's bill (the
    cost lines that start on it) with no duplicate group, and returns the
    day's total. Raises :class:`gpucost.Error` otherwise."""
    start, end = day_bounds(day)
    costs = load(start, end)[0]
    line_start = pd.to_datetime(costs["start"], utc=True)
    expected = float(np.sum(np.asarray(costs["cost"], dtype=np.float64)[((line_start >= start)
                                                                        & (line_start < end)).to_numpy()]))
    rows = read_sink(sink, table=table, start=start, end=end)
    keys = [c for c in rows.columns if c not in METRICS]
    duplicated = rows.duplicated(keys)
    if duplicated.any():
        raise Error(f"table {table}: {start.date()}: group {rows.loc[duplicated, keys].iloc[0].tolist()} appears twice")
    if expected_rows is not None and len(rows) != expected_rows:
        raise Error(f"table {table}: {start.date()}: {len(rows)} rows, expected {expected_rows}")
    got = float(rows["cost"].sum()) if len(rows) else 0.0
    if abs(got - expected) > rel * max(1.0, abs(expected)):
        raise Error(f"table {table}: {start.date()}: rows add up to {got:.6f}, the bill to {expected:.6f}")
    return got
