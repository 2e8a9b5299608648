"""allocate_stream over usage files told nothing (the trial of time order),
ordered_chunks=True (where the file is in time order) and False, the
variants interleaved round after round so that a noisy machine slows them
alike; the median and best of each, every result checked equal (1e-9) to
the first.

Usage:
    .venv/bin/python benchmarks/bench_order_trial.py COSTS INVENTORY USAGE... [--rounds 5] [--threads 2]

The files of benchmarks/bench_fleet.py's fleet (3,000 GPUs, 6.87 M rows)
are written by ``bench_fleet.py --cases files trial --keep-data --data-dir
DIR`` (usage.csv in time order, usage-series.csv, usage-late.csv); costs
and inventory as CSV with ``start``/``end`` instants.
"""

from __future__ import annotations

import argparse
import statistics
import time

import pandas as pd

import gpucost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("costs")
    parser.add_argument("inventory")
    parser.add_argument("usage", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    costs = pd.read_csv(args.costs, parse_dates=["start", "end"])
    inventory = pd.read_csv(args.inventory)
    in_order = {path: not gpucost.chunks.csv_goes_back_in_time([path], 1 << 26) for path in args.usage}
    variants = [(path, told) for path in args.usage for told in (None, True, False) if told is not True
                or in_order[path]]
    times: dict[tuple, list[float]] = {v: [] for v in variants}
    expected = None
    with gpucost.join.checks(False):
        for _ in range(args.rounds):
            for path, told in variants:
                start = time.perf_counter()
                result = gpucost.allocate_stream(costs, path, inventory, threads=args.threads, ordered_chunks=told)
                times[(path, told)].append(time.perf_counter() - start)
                result = result.sort_values("consumer").reset_index(drop=True)
                if expected is None:
                    expected = result
                else:
                    pd.testing.assert_frame_equal(result, expected, rtol=1e-9)
    for (path, told), seconds in times.items():
        print(f"{path}  ordered_chunks={told!s:5}  median {statistics.median(seconds):.3f} s  best {min(seconds):.3f} s"
              f"  ({', '.join(f'{s:.2f}' for s in seconds)})")


if __name__ == "__main__":
    main()
