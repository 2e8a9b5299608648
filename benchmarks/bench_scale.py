"""Scale benchmarks of issue 8 (numbers in docs/scale.md and docs/performance.md).

  stream   gpucost.allocate_stream over a generated telemetry source of N
           samples (a 10,000-GPU fleet at 15 s, hour by hour): from memory
           (a generator of DataFrames) or from CSV files written first.
           Reports wall time, samples/s and the process's peak RSS.
  threads  the engine on one in-memory table, threads=1 vs 2.
  dask     gpucost.dask.allocate on a LocalCluster of W worker processes
           over Parquet files, and the per-partition throughput.

Usage (each run in its own process, so peak RSS is its own):
    .venv/bin/python benchmarks/bench_scale.py stream --samples 100e6 [--csv DIR] [--threads 2]
    .venv/bin/python benchmarks/bench_scale.py threads --gpus 4000 --hours 12
    .venv/bin/python benchmarks/bench_scale.py dask --gpus 4000 --hours 12 --workers 2 --partitions 8
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

import gpucost
from gpucost.simulate import simulate_fleet

GPUS, INTERVAL = 10_000, 15


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


class HourlyFleet:
    """One simulated hour of the fleet, repeated hour after hour (timestamps
    shifted): a telemetry source of any length at the cost of one hour."""

    def __init__(self, gpus: int, interval: int, seed: int = 0):
        hour = simulate_fleet(gpus=gpus, hours=1, interval=interval, seed=seed)
        # A series seen once in the hour would be seen every 3,600 s hour after hour (a job
        # sampled once an hour), which the stated interval refuses: the simulator's, not a fleet's.
        usage = hour.usage
        sizes = usage.groupby(["resource_id", "device", "consumer"], observed=True)["timestamp"].transform("size")
        self.usage = usage[sizes.to_numpy() > 1].reset_index(drop=True)
        self.inventory, self.workloads = hour.inventory, hour.workloads
        self.line = hour.costs
        self.rows_per_hour = len(hour.usage)

    def hours_for(self, samples: int) -> int:
        return -(-samples // self.rows_per_hour)

    def costs(self, hours: int) -> pd.DataFrame:
        shifts = np.repeat(pd.to_timedelta(np.arange(hours), unit="h").to_numpy(), len(self.line))
        out = self.line.iloc[np.tile(np.arange(len(self.line)), hours)].reset_index(drop=True)
        return out.assign(start=out["start"] + shifts, end=out["end"] + shifts)

    def hour(self, h: int) -> pd.DataFrame:
        return self.usage.assign(timestamp=self.usage["timestamp"] + pd.Timedelta(hours=h))

    def chunks(self, hours: int, samples: int):
        left = samples
        for h in range(hours):
            chunk = self.hour(h)
            if len(chunk) > left:
                chunk = chunk.iloc[:left]
            left -= len(chunk)
            yield chunk


def write_csv_files(fleet: HourlyFleet, hours: int, samples: int, folder: str) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    paths = []
    for h, chunk in enumerate(fleet.chunks(hours, samples)):
        path = os.path.join(folder, f"usage-{h:04d}-{len(chunk)}.csv")
        if not os.path.exists(path):
            table = pa.Table.from_pandas(chunk, preserve_index=False)
            for name in ("resource_id", "consumer"):  # dictionary -> plain text, in Arrow
                i = table.schema.get_field_index(name)
                table = table.set_column(i, name, table.column(name).cast(pa.string()))
            pacsv.write_csv(table, path)
        paths.append(path)
    return paths


def cmd_stream(args) -> None:
    gpucost.set_num_threads(args.threads)
    fleet = HourlyFleet(args.gpus, args.interval)
    samples = int(args.samples)
    hours = fleet.hours_for(samples)
    costs = fleet.costs(hours)
    if args.csv:
        t = time.perf_counter()
        paths = write_csv_files(fleet, hours, samples, args.csv)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"wrote {len(paths)} CSV files, {size / 2**30:.1f} GiB, in {time.perf_counter() - t:.0f} s")
        del fleet.usage
        gc.collect()
        source = os.path.join(args.csv, "usage-*.csv")
    else:
        source = fleet.chunks(hours, samples)
    base = peak_rss_mib()
    t = time.perf_counter()
    result = gpucost.allocate_stream(costs, source, fleet.inventory, fleet.workloads, by=["team", "period"],
                                     freq="D", interval=args.interval, progress=args.progress, total=samples)
    wall = time.perf_counter() - t
    diag = result.attrs["diagnostics"]
    assert diag["samples_total"] == samples and diag["lines_oversubscribed"] == 0, diag
    assert abs(result["cost"].sum() - costs["cost"].sum()) <= 1e-9 * abs(costs["cost"].sum())
    print(f"stream: {samples:,} samples ({'CSV' if args.csv else 'generated frames'}), {len(costs):,} cost lines, "
          f"threads={args.threads}: {wall:.1f} s, {samples / wall / 1e6:.2f} M samples/s, "
          f"peak RSS {peak_rss_mib():.0f} MiB (before streaming {base:.0f} MiB); {machine()}")


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cmd_threads(args) -> None:
    fleet = simulate_fleet(gpus=args.gpus, hours=args.hours, interval=args.interval, seed=1)
    if args.shuffled:  # samples in random order: a lookup per sample, not runs of one series
        fleet.usage = fleet.usage.sample(frac=1.0, random_state=0).reset_index(drop=True)
    n = len(fleet.usage)
    # The engine's own time: columns converted once, then the C++ call.
    from gpucost.allocation import _policy, cost_columns, inventory_columns, usage_columns, workload_columns
    from gpucost import _core

    cols = (cost_columns(fleet.costs), usage_columns(fleet.usage), inventory_columns(fleet.inventory),
            workload_columns(fleet.workloads))
    results = {}
    for threads in (1, 2):
        gpucost.set_num_threads(threads)
        engine = best_of(args.repeat, lambda: _core.allocate(*cols, **_policy("allocated", 0.5, "keep", args.interval,
                                                                             ["team"], None)))
        total = best_of(args.repeat, lambda: gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory,
                                                              fleet.workloads, by=["team"], interval=args.interval))
        results[threads] = (engine, total)
        print(f"threads={threads}: engine {engine * 1e3:.0f} ms ({n / engine / 1e6:.1f} M samples/s), "
              f"gpucost.allocate {total * 1e3:.0f} ms ({n / total / 1e6:.1f} M samples/s)")
    print(f"{n:,} samples{' (shuffled)' if args.shuffled else ''}; speed-up 1 -> 2 threads: engine x{results[1][0] / results[2][0]:.2f}, "
          f"allocate x{results[1][1] / results[2][1]:.2f}; {machine()}")


def cmd_dask(args) -> None:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import gpucost.dask

    fleet = simulate_fleet(gpus=args.gpus, hours=args.hours, interval=args.interval, seed=2)
    n = len(fleet.usage)
    folder = args.parquet
    os.makedirs(folder, exist_ok=True)
    parts = np.array_split(np.arange(n), args.files)
    for k, rows in enumerate(parts):
        pq.write_table(pa.Table.from_pandas(fleet.usage.iloc[rows], preserve_index=False),
                       os.path.join(folder, f"usage-{k:03d}.parquet"))
    policy = dict(by=["team"], interval=args.interval)
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, **policy)

    # One partition's worth on one core, in this process: the unit of the projection.
    gpucost.set_num_threads(1)
    part = fleet.usage.iloc[: n // args.partitions]
    per = best_of(3, lambda: gpucost.allocate(fleet.costs, part, fleet.inventory, fleet.workloads, **policy))
    print(f"one partition ({len(part):,} samples) on one thread: {per:.2f} s, "
          f"{len(part) / per / 1e6:.2f} M samples/s")
    del fleet.usage, part
    gc.collect()

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="6GiB") as cluster, Client(cluster) as client:
        client.run(gpucost.set_num_threads, 1)
        usage = dd.read_parquet(os.path.join(folder, "usage-*.parquet"))
        walls = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = gpucost.dask.allocate(fleet.costs, usage, fleet.inventory, fleet.workloads,
                                           npartitions=args.partitions, **policy)
            walls.append(time.perf_counter() - t)
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    for col in ("cost", "gpu_hours", "effective_gpu_hours"):
        np.testing.assert_allclose(result[col], expected[col], rtol=1e-9, atol=1e-9)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]
    assert expected.attrs["diagnostics"]["lines_oversubscribed"] == 0
    wall = min(walls)
    print(f"dask: {n:,} samples from {args.files} Parquet files, {args.partitions} partitions "
          f"(~{n // args.partitions:,} samples each), {args.workers} worker processes x 1 thread: "
          f"{wall:.1f} s ({n / wall / 1e6:.2f} M samples/s end to end), equal to gpucost.allocate (1e-9); "
          f"peak RSS per worker {', '.join(f'{v:.0f}' for v in peaks.values())} MiB; {machine()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stream")
    s.add_argument("--samples", type=float, default=100e6)
    s.add_argument("--gpus", type=int, default=GPUS)
    s.add_argument("--interval", type=int, default=INTERVAL)
    s.add_argument("--csv", help="write the source as hourly CSV files in this folder first")
    s.add_argument("--threads", type=int, default=0)
    s.add_argument("--progress", action="store_true")
    t = sub.add_parser("threads")
    t.add_argument("--gpus", type=int, default=4000)
    t.add_argument("--hours", type=int, default=12)
    t.add_argument("--interval", type=int, default=60)
    t.add_argument("--repeat", type=int, default=3)
    t.add_argument("--shuffled", action="store_true")
    d = sub.add_parser("dask")
    d.add_argument("--gpus", type=int, default=4000)
    d.add_argument("--hours", type=int, default=12)
    d.add_argument("--interval", type=int, default=60)
    d.add_argument("--workers", type=int, default=2)
    d.add_argument("--partitions", type=int, default=8)
    d.add_argument("--files", type=int, default=8)
    d.add_argument("--repeat", type=int, default=2)
    d.add_argument("--parquet", default="/tmp/gpucost-bench-parquet")
    args = parser.parse_args()
    {"stream": cmd_stream, "threads": cmd_threads, "dask": cmd_dask}[args.cmd](args)


if __name__ == "__main__":
    main()
