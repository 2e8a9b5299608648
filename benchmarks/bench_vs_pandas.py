"""gpucost.allocate against straightforward pandas, Polars and DuckDB versions
of the same computation, in one process, on the same simulated fleet.

The computation: basis "allocated", idle "keep", hourly cost lines, 60 s
samples aligned to the lines (so a sample's line is its resource and hour):
held GPU-seconds per (line, consumer), fractions of N_r * 3600, normalised
when a line is over-subscribed, idle cost on "__idle__"; results by consumer
and by team + day. Every implementation must give the same numbers (1e-9
relative) before any time is reported.

Usage:
    .venv/bin/python benchmarks/bench_vs_pandas.py [--gpus 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import platform
import time

import duckdb
import numpy as np
import pandas as pd
import polars as pl

import gpucost
from gpucost.simulate import simulate_fleet

INTERVAL = 60.0


# ---- pandas ----------------------------------------------------------------

def pandas_allocate(costs, usage, inventory, workloads):
    devices = inventory.groupby("resource_id", observed=True).size().rename("n").reset_index()
    lines = costs.merge(devices, on="resource_id")
    held = usage[usage["consumer"] != ""]
    held = held.assign(start=held["timestamp"].dt.floor("h"), held=held["share"] * INTERVAL)
    per = held.groupby(["resource_id", "start", "consumer"], observed=True, sort=False)["held"].sum().reset_index()
    per = per.merge(lines[["resource_id", "start", "cost", "n"]], on=["resource_id", "start"])
    per["phi"] = per["held"] / (per["n"] * 3600.0)
    total = per.groupby(["resource_id", "start"], observed=True)["phi"].transform("sum")
    per["phi"] = np.where(total > 1, per["phi"] / total, per["phi"])
    per["charged"] = per["cost"] * per["phi"]
    taken = per.groupby(["resource_id", "start"], observed=True).agg(phi=("phi", "sum"), held=("held", "sum"))
    idle = lines.merge(taken.reset_index(), on=["resource_id", "start"], how="left").fillna({"phi": 0.0, "held": 0.0})
    idle["charged"] = idle["cost"] * (1 - idle["phi"].clip(upper=1.0))
    idle["gpu_hours"] = (idle["n"] * 3600.0 - idle["held"]).clip(lower=0) / 3600
    idle["consumer"] = "__idle__"
    per["gpu_hours"] = per["held"] / 3600
    cols = ["consumer", "start", "charged", "gpu_hours"]
    rows = pd.concat([per[cols].astype({"consumer": object}), idle[cols]], ignore_index=True)
    by_consumer = rows.groupby("consumer", sort=True)[["charged", "gpu_hours"]].sum()
    teams = workloads.set_index("consumer")["team"]
    rows["team"] = rows["consumer"].map(teams).fillna("__unlabelled__")
    rows.loc[rows["consumer"] == "__idle__", "team"] = "__idle__"
    rows["day"] = rows["start"].dt.floor("D")
    by_team_day = rows.groupby(["team", "day"], sort=True)[["charged", "gpu_hours"]].sum()
    return by_consumer, by_team_day


# ---- Polars ----------------------------------------------------------------

def polars_allocate(costs, usage, inventory, workloads):
    costs_pl, usage_pl = pl.from_pandas(costs), pl.from_pandas(usage)
    inv_pl, wl_pl = pl.from_pandas(inventory), pl.from_pandas(workloads)
    lines = costs_pl.with_columns(pl.col("resource_id").cast(pl.String)).join(
        inv_pl.with_columns(pl.col("resource_id").cast(pl.String)).group_by("resource_id").len("n"),
        on="resource_id")
    per = (usage_pl.lazy()
           .filter(pl.col("consumer").cast(pl.String) != "")
           .with_columns(pl.col("timestamp").dt.truncate("1h").alias("start"),
                         (pl.col("share") * INTERVAL).alias("held"),
                         pl.col("resource_id").cast(pl.String), pl.col("consumer").cast(pl.String))
           .group_by(["resource_id", "start", "consumer"]).agg(pl.col("held").sum())
           .join(lines.lazy().select(["resource_id", "start", "cost", "n"]), on=["resource_id", "start"])
           .with_columns((pl.col("held") / (pl.col("n") * 3600.0)).alias("phi"))
           .with_columns(pl.col("phi").sum().over(["resource_id", "start"]).alias("total"))
           .with_columns(pl.when(pl.col("total") > 1).then(pl.col("phi") / pl.col("total"))
                         .otherwise(pl.col("phi")).alias("phi"))
           .with_columns((pl.col("cost") * pl.col("phi")).alias("charged"),
                         (pl.col("held") / 3600).alias("gpu_hours"))
           .collect())
    taken = per.group_by(["resource_id", "start"]).agg(pl.col("phi").sum(), pl.col("held").sum())
    idle = (lines.join(taken, on=["resource_id", "start"], how="left")
            .with_columns(pl.col("phi").fill_null(0.0), pl.col("held").fill_null(0.0))
            .with_columns((pl.col("cost") * (1 - pl.col("phi").clip(upper_bound=1.0))).alias("charged"),
                          ((pl.col("n") * 3600.0 - pl.col("held")).clip(lower_bound=0) / 3600).alias("gpu_hours"),
                          pl.lit("__idle__").alias("consumer")))
    cols = ["consumer", "start", "charged", "gpu_hours"]
    rows = pl.concat([per.select(cols), idle.select(cols)])
    by_consumer = rows.group_by("consumer").agg(pl.col("charged").sum(), pl.col("gpu_hours").sum()).sort("consumer")
    rows = (rows.join(wl_pl.select(["consumer", "team"]), on="consumer", how="left")
            .with_columns(pl.when(pl.col("consumer") == "__idle__").then(pl.lit("__idle__"))
                          .otherwise(pl.col("team").fill_null("__unlabelled__")).alias("team"),
                          pl.col("start").dt.truncate("1d").alias("day")))
    by_team_day = rows.group_by(["team", "day"]).agg(pl.col("charged").sum(), pl.col("gpu_hours").sum()).sort(
        ["team", "day"])
    return by_consumer, by_team_day


# ---- DuckDB ----------------------------------------------------------------

DUCKDB_SQL = """
WITH devices AS (SELECT resource_id::VARCHAR AS resource_id, count(*) AS n FROM inventory GROUP BY 1),
lines AS (SELECT c.resource_id::VARCHAR AS resource_id, c.start, c.cost, d.n
          FROM costs c JOIN devices d ON c.resource_id::VARCHAR = d.resource_id),
held AS (SELECT resource_id::VARCHAR AS resource_id, date_trunc('hour', timestamp) AS start,
                consumer::VARCHAR AS consumer, sum(share * {interval}) AS held
         FROM usage WHERE consumer::VARCHAR <> '' GROUP BY ALL),
per AS (SELECT h.*, l.cost, l.n, h.held / (l.n * 3600.0) AS phi0 FROM held h JOIN lines l USING (resource_id, start)),
norm AS (SELECT *, sum(phi0) OVER (PARTITION BY resource_id, start) AS total FROM per),
charged AS (SELECT consumer, start, cost * (CASE WHEN total > 1 THEN phi0 / total ELSE phi0 END) AS charged,
                   held / 3600 AS gpu_hours,
                   resource_id, CASE WHEN total > 1 THEN phi0 / total ELSE phi0 END AS phi, held FROM norm),
taken AS (SELECT resource_id, start, sum(phi) AS phi, sum(held) AS held FROM charged GROUP BY ALL),
idle AS (SELECT '__idle__' AS consumer, l.start, l.cost * (1 - least(coalesce(t.phi, 0), 1)) AS charged,
                greatest(l.n * 3600.0 - coalesce(t.held, 0), 0) / 3600 AS gpu_hours
         FROM lines l LEFT JOIN taken t USING (resource_id, start)),
rows AS (SELECT consumer, start, charged, gpu_hours FROM charged UNION ALL SELECT * FROM idle)
SELECT * FROM rows
"""


def duckdb_allocate(costs, usage, inventory, workloads):
    con = duckdb.connect()
    con.execute("PRAGMA threads=2")
    for name, frame in (("costs", costs), ("usage", usage), ("inventory", inventory), ("workloads", workloads)):
        con.register(name, frame)
    con.execute(f"CREATE TEMP TABLE alloc AS {DUCKDB_SQL.format(interval=INTERVAL)}")
    by_consumer = con.execute(
        "SELECT consumer, sum(charged) AS charged, sum(gpu_hours) AS gpu_hours FROM alloc GROUP BY 1 ORDER BY 1").df()
    by_team_day = con.execute("""
        SELECT CASE WHEN a.consumer = '__idle__' THEN '__idle__' ELSE coalesce(w.team, '__unlabelled__') END AS team,
               date_trunc('day', a.start) AS day, sum(charged) AS charged, sum(gpu_hours) AS gpu_hours
        FROM alloc a LEFT JOIN workloads w ON a.consumer = w.consumer GROUP BY 1, 2 ORDER BY 1, 2""").df()
    con.close()
    return by_consumer, by_team_day


# ---- gpucost ---------------------------------------------------------------

def gpucost_allocate(costs, usage, inventory, workloads):
    by_consumer = gpucost.allocate(costs, usage, inventory, interval=INTERVAL)
    by_team_day = gpucost.allocate(costs, usage, inventory, workloads, by=["team", "period"], freq="D",
                                   interval=INTERVAL)
    return by_consumer, by_team_day


# ---- harness ---------------------------------------------------------------

def normalise(by_consumer, by_team_day) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both results as plain frames: (key..., cost, gpu_hours), sorted by key."""
    def frame(obj, keys):
        df = obj.to_pandas() if isinstance(obj, pl.DataFrame) else obj
        df = df.reset_index() if keys[0] not in df.columns else df
        df = df.rename(columns={"charged": "cost", "period": "day"})
        df = df[[*keys, "cost", "gpu_hours"]].copy()
        for k in keys:
            df[k] = df[k].astype(str) if k != "day" else pd.to_datetime(df[k], utc=True)
        return df.sort_values(keys).reset_index(drop=True)
    return frame(by_consumer, ["consumer"]), frame(by_team_day, ["team", "day"])


def check_same(name, got, expected):
    for g, e in zip(got, expected):
        assert len(g) == len(e), f"{name}: {len(g)} rows != {len(e)}"
        for key in e.columns[:-2]:
            assert (g[key].to_numpy() == e[key].to_numpy()).all(), f"{name}: keys differ in {key}"
        for col in ("cost", "gpu_hours"):
            np.testing.assert_allclose(g[col].to_numpy(float), e[col].to_numpy(float), rtol=1e-9, atol=1e-9,
                                       err_msg=f"{name}: {col}")


def peak_rss_during(fn, *args) -> tuple[float, object]:
    """(peak resident memory above the level before the call, in bytes; result)."""
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(field)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = status("VmRSS:")
    result = fn(*args)
    return status("VmHWM:") - before, result


def input_bytes(costs, usage, inventory) -> int:
    total = 0
    for frame in (costs, usage, inventory):
        for col in frame.columns:
            s = frame[col]
            total += s.cat.codes.nbytes if isinstance(s.dtype, pd.CategoricalDtype) else s.array.nbytes
    return total


def bench(gpus: int, repeat: int) -> None:
    t = time.perf_counter()
    fleet = simulate_fleet(gpus=gpus, hours=24, strings="category")
    print(f"\n== {gpus:,} GPUs x 24 h at 60 s: {len(fleet.usage):,} samples, {len(fleet.costs):,} cost lines "
          f"(simulated in {time.perf_counter() - t:.1f} s)")
    tables = (fleet.costs, fleet.usage, fleet.inventory, fleet.workloads)
    impls = {"gpucost": gpucost_allocate, "pandas": pandas_allocate, "polars": polars_allocate,
             "duckdb": duckdb_allocate}
    expected = normalise(*gpucost_allocate(*tables))
    times = {}
    for name, fn in impls.items():
        best = float("inf")
        for _ in range(repeat if name != "pandas" else max(1, repeat // 2)):
            gc.collect()
            t = time.perf_counter()
            result = fn(*tables)
            best = min(best, time.perf_counter() - t)
        check_same(name, normalise(*result), expected)
        times[name] = best
        print(f"{name:>8}: {best:8.3f} s  (both groupings; best of {repeat})  "
              f"{len(fleet.usage) * 2 / best / 1e6:8.1f} M samples/s")
    for name in ("pandas", "polars", "duckdb"):
        print(f"gpucost is {times[name] / times['gpucost']:6.1f}x faster than {name}")
    one = lambda: gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, interval=INTERVAL)  # noqa: E731
    extra, _ = peak_rss_during(one)
    size = input_bytes(fleet.costs, fleet.usage, fleet.inventory)
    print(f"input columns {size / 2**20:,.0f} MiB; peak memory added by gpucost.allocate {extra / 2**20:,.0f} MiB "
          f"({extra / size:.2f}x the input; peak total {(size + extra) / size:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores; "
          f"gpucost {gpucost.__version__}, pandas {pd.__version__}, polars {pl.__version__}, "
          f"duckdb {duckdb.__version__}, numpy {np.__version__}")
    for gpus in args.gpus:
        bench(gpus, args.repeat)


if __name__ == "__main__":
    main()
