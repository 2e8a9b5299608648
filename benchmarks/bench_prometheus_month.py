"""A month of saved Prometheus answers read by gpucost, DuckDB and Polars
(issue 29, item 2).

    python benchmarks/bench_prometheus_month.py [--small] [--threads 2] [--dir DIR]

Writes the month once (``prometheus_month.write_month``: 62 daily
query_range answers of GPU_UTIL and FB_USED at 60 s, 32 nodes x 8 GPUs, 4 of
them MIG nodes; ``--small``: 2 days, 4 nodes) and reuses it. Each contender
runs in its own process (peak RSS is that process' ``ru_maxrss``) at the same
thread count, and produces GPU-seconds and busy GPU-seconds per (resource,
device, pod); every table is checked equal to gpucost's (1e-9 relative)
before the times are printed.

- ``reader``: gpucost's JSON parse alone (files -> point columns), the MB/s
  of the format; ``reader 1 thread`` too, for MB/s per core.
- ``gpucost``: ``read_query_range(basis="allocated")`` (whole GPUs' memory
  series skipped unparsed) then a pandas group-by; ``gpucost all fields``
  reads memory too.
- ``duckdb``: one SQL statement over ``read_json`` (the series' labels and
  ``values`` typed, unnested, the same rules: exporter pods are free GPUs,
  a free reading where a pod holds the GPU dropped, k pods share a GPU, MIG
  shares g/7, each reading held until the next one when that is at most
  1.25x its series' lower-median spacing, else for the spacing).
- ``polars``: the same in Polars' lazy API over ``read_json``.
- ``cli``: ``gpucost allocate -c gpucost.toml`` over the month (a costs
  table billing every node by the day, the inventory, ``step = 60``, by
  consumer): the telemetry streamed a day at a time; its GPU-hours per pod
  are checked against gpucost's sums. ``--months 3`` writes and runs the
  month three times over (93 days) for the peak-RSS comparison.
- ``cli_report``, ``cli_idle``: ``gpucost report`` (the HTML page) and the
  analysis ``gpucost idle`` over the same config, timed the same way (no
  table checked; the config has no workloads, so the report's sections are
  those the bill and telemetry alone give).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

KEYS = ["resource_id", "device", "consumer"]
UTIL = "DCGM_FI_DEV_GPU_UTIL"
EXPORTER_POD = "nvidia-dcgm-exporter-"


def gpucost_reader(files: list[str], threads: int):
    from gpucost import _core
    out = _core.query_range_files(files, {"threads": threads})
    return None, len(out["value"])


def gpucost_sums(files: list[str], threads: int, basis: str | None):
    import gpucost
    usage = gpucost.prometheus.read_query_range(files, step=60, basis=basis, threads=threads)
    gpu_s = usage["share"].to_numpy() * usage["duration"].to_numpy()
    table = usage[KEYS].assign(gpu_s=gpu_s, busy_s=gpu_s * usage["util"].to_numpy()).groupby(
        KEYS, observed=True).sum().reset_index()
    table["resource_id"] = table["resource_id"].astype(str)
    table["consumer"] = table["consumer"].astype(str)
    return table, len(usage)


def cli_allocate(files: list[str], threads: int):
    """``gpucost allocate`` over the month's config (written beside the files)."""
    import contextlib
    import io
    import pandas as pd
    from gpucost import cli
    config = Path(files[0]).parent / "gpucost.toml"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "showback.csv"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(["allocate", "-c", str(config), "--format", "csv", "--decimals", "raw", "--threads",
                             str(threads), "--output", str(out)])
        if code:
            raise SystemExit(err.getvalue())
        table = pd.read_csv(out, keep_default_na=False, na_values=[""])
    return table[["consumer", "gpu_hours", "cost"]], len(table)


def python_stream(files: list[str], threads: int):
    """What the CLI does, from Python: the days of ``iter_query_range`` fed to
    ``allocate_stream`` in time order, over the config's costs and inventory."""
    import pandas as pd
    import gpucost
    folder = Path(files[0]).parent
    days = gpucost.prometheus.iter_query_range(files, step=60, basis="allocated", threads=threads)
    table = gpucost.allocate_stream(pd.read_csv(folder / "costs.csv", parse_dates=["start", "end"]), days,
                                    pd.read_csv(folder / "inventory.csv"), interval=60, threads=threads,
                                    ordered_chunks=True)
    table = table.assign(consumer=table["consumer"].astype(str))[["consumer", "gpu_hours", "cost"]]
    table.attrs = {}  # the join report is not what is compared
    return table, len(table)


def cli_command(command: str, files: list[str], threads: int):
    """``gpucost report`` or an analysis (``gpucost idle``) over the month's config; the report's data
    tables are written beside its HTML (``--xlsx`` is not asked: the workbook is not what is measured)."""
    import contextlib
    import io
    from gpucost import cli
    config = Path(files[0]).parent / "gpucost.toml"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / ("showback.html" if command == "report" else f"{command}.csv")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main([command, "-c", str(config), "--threads", str(threads), "--output", str(out)]
                            + ([] if command == "report" else ["--format", "csv", "--decimals", "raw"]))
        if code:
            raise SystemExit(err.getvalue())
        rows = len(out.read_bytes())
    return None, rows


def write_cli_config(directory: Path, files: list[str]) -> None:
    """Costs (each node $98.32 a day, billed by the day over the files' days and one more, so that no
    sample is cut by the bill's end), inventory and config."""
    import pandas as pd
    from prometheus_month import START_S
    days = len(files) // 2
    import gpucost
    hosts = sorted(map(str, gpucost.prometheus.read_query_range(files[:2], step=60)["resource_id"].unique()))
    start = pd.Timestamp(START_S, unit="s", tz="UTC")
    costs = pd.DataFrame([{"resource_id": h, "start": start + pd.Timedelta(days=d),
                           "end": start + pd.Timedelta(days=d + 1), "cost": 98.32} for h in hosts for d in range(days + 1)])
    costs.to_csv(directory / "costs.csv", index=False)
    pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30} for h in hosts
                  for g in range(8)]).to_csv(directory / "inventory.csv", index=False)
    (directory / "gpucost.toml").write_text(
        '[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\ntelemetry = "dcgm_*.json"\nstep = 60\n\n'
        '[policy]\nby = ["consumer"]\n')


DUCKDB_SQL = r"""
WITH series AS (
  SELECT unnest(data.result) AS s
  FROM read_json($files, format = 'unstructured', maximum_object_size = 2000000000,
                 columns = {data: 'STRUCT(result STRUCT(metric STRUCT("__name__" VARCHAR, Hostname VARCHAR,
                            gpu VARCHAR, GPU_I_ID VARCHAR, GPU_I_PROFILE VARCHAR, namespace VARCHAR, pod VARCHAR),
                            "values" VARCHAR[][])[])'})
), points AS (
  SELECT s.metric AS m, unnest(s."values") AS p FROM series
), readings AS (           -- one GPU (or MIG instance) and holder at one instant: its fields joined
  SELECT m.Hostname AS resource_id, m.gpu::INTEGER AS device, coalesce(m.GPU_I_ID, '') AS inst,
         any_value(m.GPU_I_PROFILE) AS profile,
         CASE WHEN m.pod LIKE 'nvidia-dcgm-exporter-%' THEN '' ELSE m.namespace || '/' || m.pod END AS consumer,
         round(p[1]::DOUBLE * 1000)::BIGINT AS ts,
         max(p[2]::DOUBLE) FILTER (WHERE m.__name__ = 'DCGM_FI_DEV_GPU_UTIL') / 100 AS util
  FROM points GROUP BY ALL
), held AS (               -- pods on the GPU at that instant; a free reading beside a pod is dropped
  SELECT *, count(*) FILTER (WHERE consumer <> '') OVER (PARTITION BY resource_id, device, inst, ts) AS pods
  FROM readings
), samples AS (
  SELECT *, (CASE WHEN inst = '' THEN 1.0 ELSE regexp_extract(profile, '^(\d+)g', 1)::DOUBLE / 7 END)
            / greatest(pods, 1) AS share,
         lead(ts) OVER (PARTITION BY resource_id, device, inst, consumer ORDER BY ts) - ts AS gap
  FROM held WHERE consumer <> '' OR pods = 0
), own AS (                -- each series' spacing: the lower median of its gaps (two or more), else the fleet's
  SELECT resource_id, device, inst, consumer, count(gap) AS gaps, quantile_disc(gap, 0.5) AS spacing
  FROM samples GROUP BY ALL
), fleet AS (SELECT quantile_disc(gap, 0.5) AS spacing FROM samples)
SELECT resource_id, device, consumer,          -- a gap up to 1.25x the spacing counts whole, a longer one is missing
       sum(share * held / 1000) AS gpu_s, sum(coalesce(util, 0) * share * held / 1000) AS busy_s
FROM (SELECT s.*, CASE WHEN s.gap <= 1.25 * sp THEN s.gap ELSE sp END AS held
      FROM (SELECT s.*, CASE WHEN o.gaps >= 2 THEN o.spacing ELSE f.spacing END AS sp
            FROM samples s JOIN own o USING (resource_id, device, inst, consumer), fleet f) s)
GROUP BY ALL
"""


def duckdb_sums(files: list[str], threads: int):
    import duckdb
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    table = con.execute(DUCKDB_SQL, {"files": files}).df()
    return table, None


def polars_sums(files: list[str], threads: int):
    import polars as pl
    labels = {k: pl.String for k in ("__name__", "Hostname", "gpu", "GPU_I_ID", "GPU_I_PROFILE", "namespace", "pod")}
    schema = {"data": pl.Struct({"result": pl.List(pl.Struct({"metric": pl.Struct(labels),
                                                                 "values": pl.List(pl.List(pl.String))}))})}
    frames = [pl.read_json(f, schema=schema).lazy() for f in files]
    points = (pl.concat(frames)
              .select(pl.col("data").struct.field("result").explode().alias("s"))
              .select(pl.col("s").struct.field("metric").struct.unnest(), pl.col("s").struct.field("values"))
              .explode("values"))
    readings = (points.select(
        pl.col("Hostname").alias("resource_id"), pl.col("gpu").cast(pl.Int32).alias("device"),
        pl.col("GPU_I_ID").fill_null("").alias("inst"), pl.col("GPU_I_PROFILE").alias("profile"),
        pl.when(pl.col("pod").str.starts_with(EXPORTER_POD)).then(pl.lit(""))
        .otherwise(pl.col("namespace") + "/" + pl.col("pod")).alias("consumer"),
        (pl.col("values").list.get(0).cast(pl.Float64) * 1000).round().cast(pl.Int64).alias("ts"),
        pl.when(pl.col("__name__") == UTIL).then(pl.col("values").list.get(1).cast(pl.Float64) / 100).alias("util"))
        .group_by("resource_id", "device", "inst", "consumer", "ts")
        .agg(pl.col("profile").first(), pl.col("util").max()))
    gpu = ["resource_id", "device", "inst", "ts"]
    series = ["resource_id", "device", "inst", "consumer"]
    samples = (readings.with_columns((pl.col("consumer") != "").sum().over(gpu).alias("pods"))
               .filter((pl.col("consumer") != "") | (pl.col("pods") == 0))
               .with_columns(
                   (pl.when(pl.col("inst") == "").then(1.0)
                    .otherwise(pl.col("profile").str.extract(r"^(\d+)g", 1).cast(pl.Float64) / 7)
                    / pl.max_horizontal(pl.col("pods"), 1)).alias("share"))
               .sort("ts")
               .with_columns((pl.col("ts").shift(-1).over(series) - pl.col("ts")).alias("gap")))
    fleet = samples.select(pl.col("gap").quantile(0.5, interpolation="lower").alias("fleet"))
    own = samples.group_by(series).agg(pl.col("gap").count().alias("gaps"),
                                       pl.col("gap").quantile(0.5, interpolation="lower").alias("own"))
    held = (samples.join(own, on=series).join(fleet, how="cross")
            .with_columns(pl.when(pl.col("gaps") >= 2).then(pl.col("own")).otherwise(pl.col("fleet")).alias("sp"))
            .with_columns((pl.col("share") * pl.when(pl.col("gap") <= 1.25 * pl.col("sp")).then(pl.col("gap"))
                           .otherwise(pl.col("sp")) / 1000).alias("gpu_s")))
    table = (held.group_by("resource_id", "device", "consumer")
             .agg(pl.col("gpu_s").sum(), (pl.col("gpu_s") * pl.col("util").fill_null(0)).sum().alias("busy_s"))
             .collect())
    return table.to_pandas(), None


RUNS = {
    "reader": lambda f, t: gpucost_reader(f, t),
    "reader 1 thread": lambda f, t: gpucost_reader(f, 1),
    "gpucost": lambda f, t: gpucost_sums(f, t, "allocated"),
    "gpucost all fields": lambda f, t: gpucost_sums(f, t, None),
    "duckdb": duckdb_sums,
    "polars": polars_sums,
    "cli": cli_allocate,
    "python_stream": python_stream,
    "cli_report": lambda f, t: cli_command("report", f, t),
    "cli_idle": lambda f, t: cli_command("idle", f, t),
}


def child(name: str, files: list[str], threads: int, out: str) -> None:
    if name.startswith("polars"):
        os.environ["POLARS_MAX_THREADS"] = str(threads)
    # Imports are not timed.
    __import__("polars" if name == "polars" else "duckdb" if name == "duckdb" else "gpucost")
    start, cpu = time.perf_counter(), time.process_time()
    table, rows = RUNS[name](files, threads)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if table is not None:
        table.to_parquet(out)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "rss_mib": rss, "rows": rows}))


def month_files(directory: Path, small: bool, months: int = 1) -> tuple[list[str], int]:
    from prometheus_month import write_month
    done = directory / "DONE"
    if not done.exists():
        size = dict(days=2, nodes=4, mig_nodes=1) if small else {}
        if months > 1:
            size["days"] = size.get("days", 31) * months
        month = write_month(directory, **size)
        done.write_text(json.dumps([str(p) for p in month.files]))
    files = json.loads(done.read_text())
    if not (directory / "gpucost.toml").exists():
        write_cli_config(directory, files)
    return files, sum(os.path.getsize(f) for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="2 days, 4 nodes (a quick run)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--dir", type=Path, default=None, help="where the month is written (kept for reuse)")
    parser.add_argument("--only", nargs="*", default=list(RUNS), help="contenders to run")
    parser.add_argument("--months", type=int, default=1, help="months of answers (3: the peak-RSS comparison)")
    parser.add_argument("--child", nargs=3, metavar=("NAME", "FILES", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, files, out = args.child
        child(name, json.loads(Path(files).read_text()), args.threads, out)
        return
    directory = args.dir or Path(tempfile.gettempdir()) / ("gpucost-prometheus-month" + ("-small" if args.small else "")
                                                          + (f"-x{args.months}" if args.months > 1 else ""))
    files, size = month_files(directory, args.small, args.months)
    print(f"{len(files)} files, {size / 1e6:.0f} MB in {directory}; {args.threads} threads; "
          f"load average {os.getloadavg()[0]:.1f}")
    import numpy as np
    import pandas as pd
    results, tables = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "files.json"
        listing.write_text(json.dumps(files))
        for name in args.only:
            out = Path(tmp) / f"{name.replace(' ', '_')}.parquet"
            python = [sys.executable] + (["-S"] if sys.flags.no_site else [])  # as this process was started
            proc = subprocess.run([*python, __file__, "--threads", str(args.threads), "--child", name,
                                   str(listing), str(out)], capture_output=True, text=True)
            if proc.returncode:
                print(f"{name}: failed\n{proc.stderr[-2000:]}")
                continue
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
            if out.exists():
                table = pd.read_parquet(out)
                tables[name] = table.sort_values(KEYS if "resource_id" in table else "consumer").reset_index(drop=True)
    reference = tables.get("gpucost")
    cli_table = tables.get("cli")
    if reference is not None and "cli" in tables:  # the CLI's GPU-hours per pod are gpucost's sums
        cli_hours = tables.pop("cli").set_index("consumer")["gpu_hours"]
        cli_hours = cli_hours[~cli_hours.index.str.startswith("__")]  # pods; idle also counts billed time unsampled
        expected = (reference.groupby("consumer")["gpu_s"].sum() / 3600).reindex(cli_hours.index, fill_value=0.0)
        if not np.allclose(cli_hours, expected, rtol=1e-9, atol=1e-9):
            print(pd.DataFrame({"cli": cli_hours, "sums": expected}).assign(d=lambda f: f.cli - f.sums)
                  .sort_values("d").to_string())
            raise AssertionError("cli: GPU-hours differ from gpucost's sums")
        print(f"cli: {len(cli_hours)} consumers' GPU-hours checked against gpucost's sums")
    if "python_stream" in tables and cli_table is not None:  # from Python the CLI's showback, to the cent
        streamed = tables.pop("python_stream").set_index("consumer")
        same = cli_table.set_index("consumer").reindex(streamed.index)
        if not np.allclose(streamed[["gpu_hours", "cost"]], same[["gpu_hours", "cost"]], rtol=1e-9, atol=1e-9):
            raise AssertionError("python_stream: the showback differs from the CLI's")
        print(f"python_stream: {len(streamed)} consumers' GPU-hours and dollars checked against the CLI's")
    tables.pop("cli", None)
    tables.pop("python_stream", None)
    for name, table in tables.items():
        if reference is None or name == "gpucost":
            continue
        table = table[KEYS + ["gpu_s", "busy_s"]].astype({"device": "int64"})
        ref = reference[KEYS + ["gpu_s", "busy_s"]].astype({"device": "int64"})
        pd.testing.assert_frame_equal(table[KEYS], ref[KEYS], check_dtype=False)
        # gpucost reads the free slices of one MIG GPU at an instant as one sample, timed by the first
        # slice's series: where slices' next readings differ across midnight (the query's jitter) that
        # moves milliseconds between rows. Such rows are named; more than 0.1 GPU-second is a failure.
        worst = 0.0
        for column in ("gpu_s", "busy_s"):
            off = ~np.isclose(table[column], ref[column], rtol=1e-9, atol=0)
            worst = max(worst, float(np.abs(table[column] - ref[column]).max()))
            assert worst <= 0.1, f"{name}: {column} differs by up to {worst} s"
            if off.any():
                print(f"{name}: {column} equal to 1e-9 in {len(off) - off.sum()} of {len(off)} rows; the rest within "
                      f"{worst:.3f} s: {ref[KEYS][off].head(3).to_dict('records')}")
        print(f"{name}: {len(table)} (resource, device, pod) sums checked against gpucost's")
    # MB per CPU-second is the per-core rate, whatever else the machine runs.
    print(f"\n| contender | wall | CPU | MB/s (wall) | MB per CPU-second | peak RSS |\n|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['wall']:.2f} s | {r['cpu']:.2f} s | {size / 1e6 / r['wall']:.0f} | "
              f"{size / 1e6 / r['cpu']:.0f} | {r['rss_mib']:.0f} MiB |")


if __name__ == "__main__":
    main()
