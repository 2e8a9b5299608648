"""The engine runs with the GIL released: another Python thread keeps
running while a long allocation is in C++."""

from __future__ import annotations

import threading
import time

import gpucost
from gpucost import _core
from gpucost.allocation import cost_columns, inventory_columns, usage_columns
from gpucost.simulate import simulate_fleet


def test_other_threads_run_during_the_engine_call():
    """A ticker thread wakes every 2 ms; it needs the GIL to record a tick. If
    the engine held the GIL, no tick could land inside the call."""
    fleet = simulate_fleet(gpus=2048, hours=24)
    usage = fleet.usage.sample(frac=1.0, random_state=1)  # shuffled: a slow, long call
    args = (cost_columns(fleet.costs), usage_columns(usage), inventory_columns(fleet.inventory), None)
    policy = dict(basis="allocated", alpha=0.5, idle="keep", interval=60.0, by=["consumer"], freq=None)
    ticks: list[float] = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.002)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.05)
        begin = time.perf_counter()
        _core.allocate(*args, **policy)
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    inside = sorted(t for t in ticks if begin < t < end)
    edges = [begin, *inside, end]
    longest_gap = max(b - a for a, b in zip(edges, edges[1:]))
    assert end - begin > 0.05, "the call was too short to tell"
    assert longest_gap < (end - begin) / 2, (longest_gap, end - begin, len(inside))


def test_two_allocations_in_threads_give_the_serial_result():
    fleet = simulate_fleet(gpus=64, hours=12)
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"])
    results = [None, None]

    def work(k):
        results[k] = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for result in results:
        assert result.equals(expected)
