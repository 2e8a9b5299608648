"""Wall time of the analyses end to end from Python (DataFrames in, DataFrames
out) on the simulated fleet: `python benchmarks/bench_analyses.py [GPUS]`.

Prints the best of 3 runs of each call; gpucost.allocate is the reference.
"""

from __future__ import annotations

import sys
import time

import gpucost
from gpucost.simulate import simulate_fleet


def best_of(fn, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(gpus: int = 10_000) -> None:
    f = simulate_fleet(gpus=gpus, hours=24)
    print(f"simulated fleet: {gpus} GPUs x 24 h, {len(f.usage):,} usage samples")
    calls = {
        "allocate (by consumer)": lambda: gpucost.allocate(f.costs, f.usage, f.inventory, f.workloads),
        "find_idle": lambda: gpucost.find_idle(f.usage, f.costs, f.inventory, f.workloads),
        "idle_policy": lambda: gpucost.idle_policy(f.usage, f.costs, f.inventory, f.workloads),
        "usage_profile (freq D)": lambda: gpucost.usage_profile(f.usage, f.inventory, freq="D"),
        "diagnose (by team)": lambda: gpucost.diagnose(f.usage, f.costs, f.inventory, f.workloads, by="team"),
        "kpis (team x day)": lambda: gpucost.kpis(f.usage, f.costs, f.inventory, f.workloads),
    }
    for name, fn in calls.items():
        seconds = best_of(fn)
        print(f"{name:24s} {seconds:6.2f} s  {len(f.usage) / seconds / 1e6:6.1f} M samples/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
