"""gpucost.allocate against pandas, Polars and DuckDB on the realistic fleet
(benchmarks/fleet.py, issue 27): every sample order, categorical and ``str``
strings, from Parquet and CSV, a high-cardinality fleet and a thread sweep.

The computation (SEMANTICS 2, basis "allocated", idle "keep", interval
inferred by gpucost): each sample stands for [t, t + 60 s), split where it
straddles an hour boundary (jittered scrapes do); held = share * overlap per
(line, consumer); fractions of C = N_r * line seconds, normalised when a
line's sum is over 1; the rest of the cost on "__idle__" with idle GPU-hours
max(0, C - held). Results by consumer (and by team + day). The peers are given
the interval (60 s); the fleet is built so that the one gpucost infers is
exactly 60 s, and the check asserts it. Every implementation's numbers are
checked equal to gpucost's (1e-9 relative) before any time is reported.
Every tool gets the pandas frames gpucost gets (Polars converts them inside
the clock, as gpucost does); Polars is also timed on a Polars frame made
beforehand, what a Polars user holds; the ratio is to the fastest of all.

Each process runs at one thread count for every library: Polars' pool
(POLARS_MAX_THREADS, set before polars is imported), DuckDB ``SET threads``,
pyarrow's CPU pool, ``gpucost.set_num_threads``. The thread sweep runs each
other count in a child process.

Usage:
    .venv/bin/python benchmarks/bench_fleet.py                # everything, 3,000 GPUs, all cores
    .venv/bin/python benchmarks/bench_fleet.py --quick        # a smoke run: 400 GPUs, once each
    .venv/bin/python benchmarks/bench_fleet.py --cases orders --orders node time --strings str --threads 1
Cases: orders (by consumer, every order x strings), teamday (by team + day),
files (Parquet and CSV in time order: allocate_stream over the path, also
told ordered_chunks True and False, and the file read whole first), trial
(CSV in series order and in time order but for a late hour: allocate_stream's
trial of time order where it fails, against ordered_chunks=False), kinds (gpucost from pandas categoricals,
a pyarrow table of dictionaries, Polars Categorical and String frames),
highcard (a new pod every 5 minutes on each of 1,000 GPUs), sweep (node
order at 1, 2 and all cores).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import INTERVAL_S, ORDERS, STRINGS, Fleet, FleetData, inferred_interval, realistic_fleet  # noqa: E402

INTERVAL = float(INTERVAL_S)
HOUR_NS = 3_600_000_000_000
CASES = ("orders", "teamday", "files", "trial", "kinds", "highcard", "sweep")
BY = ("consumer", "team_day")
# Imported in main() once the thread count is known (Polars sizes its pool at import).
pl = duckdb = gpucost = None


# ---- pandas ----------------------------------------------------------------

def pandas_allocate(costs, usage, inventory, workloads, by):
    keys = ["resource_id", "start", "consumer"]
    held = usage.loc[usage["consumer"] != "", ["timestamp", "resource_id", "consumer", "share"]]
    start = held["timestamp"].dt.floor("h")
    # Seconds of [t, t + interval) past the end of t's hour: they belong to the next line.
    over = ((held["timestamp"] - start).dt.total_seconds() + INTERVAL - 3600.0).clip(lower=0.0)
    first = pd.DataFrame({"resource_id": held["resource_id"], "start": start, "consumer": held["consumer"],
                          "held": held["share"] * (INTERVAL - over)})
    spill = over > 0
    second = pd.DataFrame({"resource_id": held["resource_id"][spill], "start": start[spill] + pd.Timedelta(hours=1),
                           "consumer": held["consumer"][spill], "held": held["share"][spill] * over[spill]})
    parts = [part.groupby(keys, observed=True, sort=False)["held"].sum() for part in (first, second)]
    per = pd.concat(parts).groupby(level=keys, observed=True, sort=False).sum().reset_index()

    devices = inventory.groupby("resource_id", observed=True).size().rename("n").reset_index()
    lines = costs.merge(devices, on="resource_id")
    lines["cap"] = lines["n"] * (lines["end"] - lines["start"]).dt.total_seconds()
    per = per.merge(lines[["resource_id", "start", "cost", "cap"]], on=["resource_id", "start"])
    per["phi"] = per["held"] / per["cap"]
    total = per.groupby(["resource_id", "start"], observed=True)["phi"].transform("sum")
    per["phi"] = np.where(total > 1, per["phi"] / total, per["phi"])
    per["charged"] = per["cost"] * per["phi"]
    per["gpu_hours"] = per["held"] / 3600
    taken = per.groupby(["resource_id", "start"], observed=True).agg(phi=("phi", "sum"), held=("held", "sum"))
    idle = lines.merge(taken.reset_index(), on=["resource_id", "start"], how="left").fillna({"phi": 0.0, "held": 0.0})
    idle["charged"] = idle["cost"] * (1 - idle["phi"].clip(upper=1.0))
    idle["gpu_hours"] = (idle["cap"] - idle["held"]).clip(lower=0) / 3600
    idle["consumer"] = "__idle__"
    cols = ["consumer", "start", "charged", "gpu_hours"]
    rows = pd.concat([per[cols].astype({"consumer": object}), idle[cols]], ignore_index=True)
    if by == "consumer":
        return rows.groupby("consumer", sort=True)[["charged", "gpu_hours"]].sum()
    teams = workloads.set_index("consumer")["team"].astype(object)
    rows["team"] = rows["consumer"].map(teams).fillna("__unlabelled__")
    rows.loc[rows["consumer"] == "__idle__", "team"] = "__idle__"
    rows["day"] = rows["start"].dt.floor("D")
    return rows.groupby(["team", "day"], sort=True)[["charged", "gpu_hours"]].sum()


# ---- Polars ----------------------------------------------------------------

def polars_allocate(costs, usage, inventory, workloads, by):
    """`usage` is a pandas frame or a LazyFrame (a file scan)."""
    lazy = usage if isinstance(usage, pl.LazyFrame) else pl.from_pandas(usage).lazy()
    keys = ["resource_id", "start", "consumer"]
    held = (lazy.filter(pl.col("consumer") != "")
            .with_columns(pl.col("timestamp").dt.cast_time_unit("ns"))  # CSV scans give us, frames ns
            .select("resource_id", "consumer", "share", pl.col("timestamp").dt.truncate("1h").alias("start"),
                    pl.col("timestamp"))
            .with_columns(((pl.col("timestamp") - pl.col("start")).dt.total_nanoseconds() / 1e9
                           + (INTERVAL - 3600.0)).clip(lower_bound=0.0).alias("over")))
    first = held.group_by(keys).agg((pl.col("share") * (INTERVAL - pl.col("over"))).sum().alias("held"))
    second = (held.filter(pl.col("over") > 0)
              .group_by(pl.col("resource_id"), pl.col("start").dt.offset_by("1h"),
                        pl.col("consumer"))
              .agg((pl.col("share") * pl.col("over")).sum().alias("held")))
    # Strings only after aggregating: categoricals from different frames join as text.
    per = (pl.concat([first, second])
           .with_columns(pl.col("resource_id").cast(pl.String), pl.col("consumer").cast(pl.String))
           .group_by(keys).agg(pl.col("held").sum()))
    inv = pl.from_pandas(inventory).lazy().with_columns(pl.col("resource_id").cast(pl.String))
    lines = (pl.from_pandas(costs).lazy().with_columns(pl.col("resource_id").cast(pl.String))
             .join(inv.group_by("resource_id").len("n"), on="resource_id")
             .with_columns((pl.col("n") * (pl.col("end") - pl.col("start")).dt.total_nanoseconds() / 1e9)
                           .alias("cap")))
    line = ["resource_id", "start"]
    per = (per.join(lines.select("resource_id", "start", "cost", "cap"), on=line)
           .with_columns((pl.col("held") / pl.col("cap")).alias("phi"))
           .with_columns(pl.col("phi").sum().over(line).alias("total"))
           .with_columns(pl.when(pl.col("total") > 1).then(pl.col("phi") / pl.col("total"))
                         .otherwise(pl.col("phi")).alias("phi"))
           .with_columns((pl.col("cost") * pl.col("phi")).alias("charged"), (pl.col("held") / 3600).alias("gpu_hours"))
           .collect())
    taken = per.lazy().group_by(line).agg(pl.col("phi").sum(), pl.col("held").sum())
    idle = (lines.join(taken, on=line, how="left")
            .with_columns(pl.col("phi").fill_null(0.0), pl.col("held").fill_null(0.0))
            .select(pl.lit("__idle__").alias("consumer"), "start",
                    (pl.col("cost") * (1 - pl.col("phi").clip(upper_bound=1.0))).alias("charged"),
                    ((pl.col("cap") - pl.col("held")).clip(lower_bound=0) / 3600).alias("gpu_hours")))
    cols = ["consumer", "start", "charged", "gpu_hours"]
    rows = pl.concat([per.lazy().select(cols), idle])
    if by == "consumer":
        return rows.group_by("consumer").agg(pl.col("charged").sum(), pl.col("gpu_hours").sum()).sort(
            "consumer").collect()
    wl = pl.from_pandas(workloads).lazy().select(pl.col("consumer").cast(pl.String), pl.col("team").cast(pl.String))
    return (rows.join(wl, on="consumer", how="left")
            .with_columns(pl.when(pl.col("consumer") == "__idle__").then(pl.lit("__idle__"))
                          .otherwise(pl.col("team").fill_null("__unlabelled__")).alias("team"),
                          pl.col("start").dt.truncate("1d").alias("day"))
            .group_by("team", "day").agg(pl.col("charged").sum(), pl.col("gpu_hours").sum())
            .sort("team", "day").collect())


# ---- DuckDB ----------------------------------------------------------------

DUCKDB_SQL = """
WITH u AS (SELECT resource_id, consumer, share, epoch_ns(timestamp) AS t FROM {usage} WHERE consumer <> ''),
s AS (SELECT resource_id, consumer, share, t // {hour} AS h,
             greatest(t + {interval_ns} - (t // {hour} + 1) * {hour}, 0) / 1e9 AS over FROM u),
parts AS (SELECT resource_id, consumer, h, sum(share * ({interval} - over)) AS held FROM s GROUP BY ALL
          UNION ALL
          SELECT resource_id, consumer, h + 1, sum(share * over) FROM s WHERE over > 0 GROUP BY ALL),
per AS (SELECT resource_id::VARCHAR AS resource_id, consumer::VARCHAR AS consumer, h, sum(held) AS held
        FROM parts GROUP BY ALL),
devices AS (SELECT resource_id::VARCHAR AS resource_id, count(*) AS n FROM inventory GROUP BY 1),
lines AS (SELECT d.resource_id, epoch_ns(c.start) // {hour} AS h, c.start, c.cost,
                 d.n * (epoch_ns(c."end") - epoch_ns(c.start)) / 1e9 AS cap
          FROM costs c JOIN devices d ON c.resource_id::VARCHAR = d.resource_id),
norm AS (SELECT p.*, l.start, l.cost, p.held / l.cap AS phi0,
                sum(p.held / l.cap) OVER (PARTITION BY p.resource_id, p.h) AS total
         FROM per p JOIN lines l USING (resource_id, h)),
charged AS (SELECT *, CASE WHEN total > 1 THEN phi0 / total ELSE phi0 END AS phi FROM norm),
taken AS (SELECT resource_id, h, sum(phi) AS phi, sum(held) AS held FROM charged GROUP BY ALL),
rows AS (SELECT consumer, start, cost * phi AS charged, held / 3600 AS gpu_hours FROM charged
         UNION ALL
         SELECT '__idle__', l.start, l.cost * (1 - least(coalesce(t.phi, 0), 1)),
                greatest(l.cap - coalesce(t.held, 0), 0) / 3600
         FROM lines l LEFT JOIN taken t USING (resource_id, h))
"""
DUCKDB_BY = {
    "consumer": "SELECT consumer, sum(charged) AS charged, sum(gpu_hours) AS gpu_hours FROM rows GROUP BY 1 ORDER BY 1",
    "team_day": """SELECT CASE WHEN r.consumer = '__idle__' THEN '__idle__'
                               ELSE coalesce(w.team::VARCHAR, '__unlabelled__') END AS team,
                          date_trunc('day', r.start) AS day, sum(charged) AS charged, sum(gpu_hours) AS gpu_hours
                   FROM rows r LEFT JOIN workloads w ON r.consumer = w.consumer::VARCHAR
                   GROUP BY 1, 2 ORDER BY 1, 2""",
}


class DuckDB:
    """One connection per process, at the process's thread count, in UTC."""

    def __init__(self, threads: int):
        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {threads}")
        self.con.execute("SET TimeZone = 'UTC'")

    def allocate(self, costs, usage, inventory, workloads, by):
        """`usage` is a pandas frame or a table function over a file
        (``read_parquet('...')``)."""
        tables = {"costs": costs, "inventory": inventory, "workloads": workloads}
        if not isinstance(usage, str):
            tables["usage"] = usage
        for name, frame in tables.items():
            self.con.register(name, frame)
        sql = DUCKDB_SQL.format(usage="usage" if not isinstance(usage, str) else usage, hour=HOUR_NS,
                                interval=INTERVAL, interval_ns=int(INTERVAL * 1e9))
        try:
            return self.con.execute(sql + DUCKDB_BY[by]).df()
        finally:
            for name in tables:
                self.con.unregister(name)


# ---- gpucost ---------------------------------------------------------------

def gpucost_allocate(costs, usage, inventory, workloads, by):
    if by == "consumer":
        return gpucost.allocate(costs, usage, inventory)
    return gpucost.allocate(costs, usage, inventory, workloads, by=["team", "period"], freq="D")


def gpucost_stream(costs, path, inventory, workloads, by):
    if by == "consumer":
        return gpucost.allocate_stream(costs, path, inventory)
    return gpucost.allocate_stream(costs, path, inventory, workloads, by=["team", "period"], freq="D")


def gpucost_stream_ordered(costs, path, inventory, workloads, by, ordered=True):
    """allocate_stream told the file is in time order (the files case writes
    it so), as a user who knows it may: no record of rows across chunks; or
    told not to try (``ordered=False``): the record kept, as before the
    default tried the order."""
    assert by == "consumer"
    return gpucost.allocate_stream(costs, path, inventory, ordered_chunks=ordered)


def gpucost_read(costs, path, inventory, workloads, by):
    """Read the whole file with pyarrow (gpucost's CSV column types), then allocate."""
    from gpucost.chunks import USAGE_CSV_TYPES
    if path.endswith(".parquet"):
        table = pq.read_table(path)
    else:
        table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
            column_types=USAGE_CSV_TYPES, strings_can_be_null=False))
    return gpucost_allocate(costs, table, inventory, workloads, by)


# ---- checking --------------------------------------------------------------

def normalise(result, by) -> pd.DataFrame:
    """(key..., cost, gpu_hours) as a plain frame sorted by the keys."""
    keys = ["consumer"] if by == "consumer" else ["team", "day"]
    df = result.to_pandas() if isinstance(result, pl.DataFrame) else result
    df = df.reset_index() if keys[0] not in df.columns else df
    df = df.rename(columns={"charged": "cost", "period": "day"})[[*keys, "cost", "gpu_hours"]].copy()
    for k in keys:
        df[k] = pd.to_datetime(df[k], utc=True) if k == "day" else df[k].astype(object).astype(str)
    return df.sort_values(keys).reset_index(drop=True)


def check_same(name: str, got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert len(got) == len(expected), f"{name}: {len(got)} rows, gpucost has {len(expected)}"
    for key in expected.columns[:-2]:
        assert (got[key].to_numpy() == expected[key].to_numpy()).all(), f"{name}: keys differ in {key}"
    for col in ("cost", "gpu_hours"):
        np.testing.assert_allclose(got[col].to_numpy(float), expected[col].to_numpy(float), rtol=1e-9, atol=1e-9,
                                   err_msg=f"{name}: {col}")


# ---- harness ---------------------------------------------------------------

def best_time(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def measure(case: str, order: str, strings: str, threads: int, samples: int, by: str,
            impls: dict[str, Callable[[], object]], repeat: int) -> dict:
    """Runs each implementation, best of `repeat` (pandas: half), in rounds:
    each round runs every implementation once, starting one further along
    each time, so a slow spell of a shared machine falls on all of them
    alike, not on whichever ran then. Each one's numbers are checked against
    the first's (gpucost's) before its time is printed or kept."""
    row = {"case": case, "order": order, "strings": strings, "threads": threads, "samples": samples}
    names = list(impls)
    best = dict.fromkeys(names, float("inf"))
    expected = None
    for r in range(repeat):
        if r == 0:
            turn = names  # the first round in the given order: gpucost's numbers are the reference
        else:
            turn = names[r % len(names):] + names[:r % len(names)]
        for name in turn:
            if name == "pandas" and r >= max(1, repeat // 2):
                continue
            seconds, result = best_time(impls[name], 1)
            best[name] = min(best[name], seconds)
            if r > 0:
                continue
            if name.startswith("gpucost"):
                interval = result.attrs["diagnostics"].get("interval")
                assert interval == INTERVAL, f"{case}/{order}: gpucost inferred interval {interval}, peers use {INTERVAL}"
            got = normalise(result, by)
            if expected is None:
                expected = got
            else:
                check_same(f"{case}/{order}/{strings}/{name}", got, expected)
            del result
    for name in names:
        row[name] = best[name]
        print(f"  {case:<24} {order:<8} {strings:<8} {threads}t  {name:<13} {best[name]:8.3f} s  (checked)",
              file=sys.stderr, flush=True)
    return row


def frame_impls(fleet: Fleet, by: str, ddb: DuckDB) -> dict[str, Callable[[], object]]:
    args = (fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by)
    # A Polars user's own frame, converted before the clock starts (from_pandas
    # is a third of "polars" on this fleet).
    native = pl.from_pandas(fleet.usage).lazy()
    return {"gpucost": lambda: gpucost_allocate(*args), "pandas": lambda: pandas_allocate(*args),
            "polars": lambda: polars_allocate(*args), "duckdb": lambda: ddb.allocate(*args),
            "polars_native": lambda: polars_allocate(fleet.costs, native, fleet.inventory, fleet.workloads, by)}


def check_fleet(data: FleetData) -> None:
    interval = inferred_interval(data)
    assert interval == INTERVAL, f"the fleet's series spacings give {interval} s, not {INTERVAL}"
    print(f"fleet: {data.describe()}; inferred interval {interval:g} s", file=sys.stderr, flush=True)


def run_orders(data: FleetData, args, threads: int, ddb: DuckDB, rows: list[dict]) -> None:
    for order in args.orders:
        for strings in args.strings:
            fleet = data.frames(order, strings)
            rows.append(measure("by consumer", order, strings, threads, len(data), "consumer",
                                frame_impls(fleet, "consumer", ddb), args.repeat))
            del fleet
            gc.collect()


def run_teamday(data: FleetData, args, threads: int, ddb: DuckDB, rows: list[dict]) -> None:
    fleet = data.frames(args.orders[0], "category")
    rows.append(measure("by team, day", args.orders[0], "category", threads, len(data), "team_day",
                        frame_impls(fleet, "team_day", ddb), args.repeat))


def run_files(data: FleetData, args, threads: int, ddb: DuckDB, rows: list[dict]) -> None:
    """Time order written as a lake would hold it (plain strings, no pandas
    metadata), to Parquet and CSV; each tool reads the file and allocates."""
    fleet = data.frames("time", "str")
    table = pa.Table.from_pandas(fleet.usage, preserve_index=False).replace_schema_metadata(None)
    with data_files(args, "usage.parquet", "usage.csv") as (parquet, csv):
        pq.write_table(table, parquet)
        pacsv.write_csv(table, csv)
        del table
        c, inv, wl = fleet.costs, fleet.inventory, fleet.workloads
        del fleet  # the frame's memory back before reading the files
        for kind, path in {"parquet": parquet, "csv": csv}.items():
            size = os.path.getsize(path) / 2**20
            impls = {
                "gpucost": lambda: gpucost_stream(c, path, inv, wl, "consumer"),
                "gpucost_read": lambda: gpucost_read(c, path, inv, wl, "consumer"),
                "gpucost_ordered": lambda: gpucost_stream_ordered(c, path, inv, wl, "consumer"),
                "gpucost_unordered": lambda: gpucost_stream_ordered(c, path, inv, wl, "consumer", False),
                "pandas": lambda: pandas_allocate(c, pandas_read(path), inv, wl, "consumer"),
                "polars": lambda: polars_allocate(c, polars_scan(path), inv, wl, "consumer"),
                "duckdb": lambda: ddb.allocate(c, duckdb_scan(path), inv, wl, "consumer"),
            }
            name = f"{kind} ({size:,.0f} MiB)"
            row = measure(name, "time", "file", threads, len(data), "consumer", impls, args.repeat)
            read_row = {**row, "case": f"{name}: read + allocate", "gpucost": row.pop("gpucost_read")}
            ordered_row = {**row, "case": f"{name}: allocate_stream, ordered_chunks=True",
                           "gpucost": row.pop("gpucost_ordered")}
            unordered_row = {**row, "case": f"{name}: allocate_stream, ordered_chunks=False",
                             "gpucost": row.pop("gpucost_unordered")}
            row["case"] = f"{name}: allocate_stream"
            rows.extend([row, ordered_row, unordered_row, read_row])


@contextlib.contextmanager
def data_files(args, *names: str):
    """Paths for the files a case writes, in --data-dir or a temporary
    folder; removed afterwards unless --keep-data."""
    folder = Path(args.data_dir or tempfile.mkdtemp(prefix="gpucost-fleet-"))
    folder.mkdir(parents=True, exist_ok=True)
    paths = [str(folder / name) for name in names]
    try:
        yield paths
    finally:
        if not args.keep_data:
            for path in paths:
                Path(path).unlink(missing_ok=True)
            if not args.data_dir:
                shutil.rmtree(folder, ignore_errors=True)


def run_trial(data: FleetData, args, threads: int, rows: list[dict]) -> None:
    """What allocate_stream's default trial of time order costs where it
    fails: CSV in series order (it goes back at the second block) and in
    time order with the first hour moved to the end (read twice up to
    there, the worst case), told nothing against ordered_chunks=False."""
    fleet = data.frames("time", "str")
    table = pa.Table.from_pandas(fleet.usage, preserve_index=False).replace_schema_metadata(None)
    t = fleet.usage["timestamp"]
    first_hour = (t < t.min() + pd.Timedelta(hours=1)).to_numpy()
    late = np.concatenate([np.flatnonzero(~first_hour), np.flatnonzero(first_hour)])
    series = data.frames("series", "str").usage
    with data_files(args, "usage-series.csv", "usage-late.csv") as (by_series, late_hour):
        pacsv.write_csv(pa.Table.from_pandas(series, preserve_index=False).replace_schema_metadata(None), by_series)
        pacsv.write_csv(table.take(pa.array(late)), late_hour)
        c, inv, wl = fleet.costs, fleet.inventory, fleet.workloads
        del table, series, fleet
        for order, path in {"series": by_series, "late hour": late_hour}.items():
            impls = {"gpucost": lambda: gpucost_stream(c, path, inv, wl, "consumer"),
                     "gpucost_unordered": lambda: gpucost_stream_ordered(c, path, inv, wl, "consumer", False)}
            row = measure("CSV: allocate_stream, trial", order, "file", threads, len(data), "consumer", impls,
                          args.repeat)
            unordered_row = {**row, "case": "CSV: allocate_stream, ordered_chunks=False",
                             "gpucost": row.pop("gpucost_unordered")}
            rows.extend([row, unordered_row])


def pandas_read(path: str) -> pd.DataFrame:
    if path.endswith(".parquet"):
        return pd.read_parquet(path)
    return pd.read_csv(path, engine="pyarrow", dtype={"consumer": "str"}, keep_default_na=False,
                       parse_dates=["timestamp"])


def polars_scan(path: str):
    if path.endswith(".parquet"):
        return pl.scan_parquet(path)
    # An explicit format parses 3x faster than a Datetime schema override.
    return pl.scan_csv(path, schema_overrides={"device": pl.Int32}).with_columns(
        pl.col("timestamp").str.to_datetime("%Y-%m-%d %H:%M:%S%.fZ", time_unit="ns", time_zone="UTC"))


def duckdb_scan(path: str) -> str:
    return f"read_parquet('{path}')" if path.endswith(".parquet") else f"read_csv('{path}')"


def run_kinds(data: FleetData, args, threads: int, rows: list[dict]) -> None:
    """gpucost.allocate from each kind of table a user holds, made before the
    clock starts: pandas categoricals, a pyarrow table (dictionary columns),
    Polars frames with Categorical and with String columns. Results checked
    equal; a row per kind (its kind in the strings column)."""
    fleet = data.frames(args.orders[0], "category")
    costs, usage, inventory = fleet.costs, fleet.usage, fleet.inventory
    polars = pl.from_pandas(usage)
    kinds = {"pandas category": usage, "pyarrow dictionary": pa.Table.from_pandas(usage, preserve_index=False),
             "polars Categorical": polars,
             "polars String": polars.with_columns(pl.col(pl.Categorical).cast(pl.String))}
    impls = {f"gpucost {kind}": (lambda t=t: gpucost.allocate(costs, t, inventory)) for kind, t in kinds.items()}
    row = measure("input kinds", args.orders[0], "—", threads, len(data), "consumer", impls, args.repeat)
    for kind in kinds:
        rows.append({key: row[key] for key in ("order", "threads", "samples")} |
                    {"case": "input kind", "strings": kind, "gpucost": row[f"gpucost {kind}"]})


def run_highcard(args, threads: int, ddb: DuckDB, rows: list[dict]) -> None:
    data = realistic_fleet(args.highcard_gpus, churn_minutes=5)
    check_fleet(data)
    for order in args.orders:
        fleet = data.frames(order, "category")
        label = f"high-card ({len(data.consumers) - 1:,} pods)"
        rows.append(measure(label, order, "category", threads, len(data), "consumer",
                            frame_impls(fleet, "consumer", ddb), args.repeat))


def run_child(args, threads: int) -> list[dict]:
    """The sweep's other thread counts, each in a process of its own."""
    cmd = [sys.executable, __file__, "--child", "--cases", "orders", "--orders", args.orders[0], "--strings",
           "category", "--threads", str(threads), "--gpus", str(args.gpus), "--repeat", str(args.repeat)]
    env = {**os.environ, "POLARS_MAX_THREADS": str(threads)}
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return [json.loads(line[4:]) for line in out.splitlines() if line.startswith("ROW ")]


def all_cores() -> int:
    return len(os.sched_getaffinity(0))


def table(rows: list[dict]) -> str:
    peers = ("pandas", "polars", "duckdb", "polars_native")
    out = ["| case | order | strings | threads | samples | gpucost s | pandas s | polars s | duckdb s "
           "| polars, Polars frame in s | ratio to fastest peer |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        timed = {p: r[p] for p in peers if p in r}
        fastest = min(timed, key=timed.get) if timed else None
        ratio = f"{timed[fastest] / r['gpucost']:.2f}x ({fastest})" if fastest else "—"
        cells = [f"{r[p]:.3f}" if p in r else "—" for p in ("gpucost", *peers)]
        out.append(f"| {r['case']} | {r['order']} | {r['strings']} | {r['threads']} | {r['samples'] / 1e6:.2f} M | "
                   + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(out)


def main() -> None:
    global pl, duckdb, gpucost
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=3000)
    parser.add_argument("--highcard-gpus", type=int, default=1000)
    parser.add_argument("--orders", nargs="+", choices=ORDERS, default=list(ORDERS))
    parser.add_argument("--strings", nargs="+", choices=STRINGS, default=list(STRINGS))
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--threads", type=int, default=0, help="threads for every library (0: all cores)")
    parser.add_argument("--sweep", type=int, nargs="+", default=None,
                        help="thread counts of the sweep (default 1, 2 and all cores)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs (pandas: half)")
    parser.add_argument("--quick", action="store_true", help="400 GPUs (high-card 200), one run each")
    parser.add_argument("--data-dir", help="where the Parquet and CSV files go (default: a temporary folder)")
    parser.add_argument("--keep-data", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.gpus, args.highcard_gpus, args.repeat = 400, 200, 1
    threads = args.threads or all_cores()
    os.environ["POLARS_MAX_THREADS"] = str(threads)
    import duckdb as _duckdb
    import polars as _pl

    import gpucost as _gpucost
    pl, duckdb, gpucost = _pl, _duckdb, _gpucost
    assert pl.thread_pool_size() == threads, "polars was imported before POLARS_MAX_THREADS was set"
    gpucost.set_num_threads(threads)
    pa.set_cpu_count(threads)
    warnings.simplefilter("ignore")  # JoinWarning: the fleet's over-subscribed lines, on every call
    ddb = DuckDB(threads)

    if not args.child:
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
              f"({all_cores()} usable); load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
              f"gpucost {gpucost.__version__} ({Path(gpucost.__file__).parent}), pandas {pd.__version__}, polars {pl.__version__}, "
              f"duckdb {duckdb.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}")
    rows: list[dict] = []
    if {"orders", "teamday", "files", "trial", "kinds", "sweep"} & set(args.cases):
        data = realistic_fleet(args.gpus)
        check_fleet(data)
        if "orders" in args.cases:
            run_orders(data, args, threads, ddb, rows)
        if "teamday" in args.cases:
            run_teamday(data, args, threads, ddb, rows)
        if "files" in args.cases:
            run_files(data, args, threads, ddb, rows)
        if "trial" in args.cases:
            run_trial(data, args, threads, rows)
        if "kinds" in args.cases:
            run_kinds(data, args, threads, rows)
        if "sweep" in args.cases:
            sweep = sorted(set(args.sweep or [1, 2, all_cores()]))
            swept: list[dict] = [r for r in rows if r["case"] == "by consumer" and r["order"] == args.orders[0]
                                 and r["strings"] == "category"]
            if threads in sweep and not swept:
                run_orders(data, argparse.Namespace(**{**vars(args), "orders": args.orders[:1],
                                                       "strings": ["category"]}), threads, ddb, swept)
            del data
            gc.collect()
            for count in sweep:
                if count != threads:
                    swept.extend(run_child(args, count))
            rows.extend(sorted(({**r, "case": "sweep"} for r in swept), key=lambda r: r["threads"]))
    if "highcard" in args.cases:
        run_highcard(args, threads, ddb, rows)
    if args.child:
        for r in rows:
            print("ROW " + json.dumps(r))
        return
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(table(rows))


if __name__ == "__main__":
    main()
