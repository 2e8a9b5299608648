"""One result whatever the sample order, the input kind and the thread count
(issue 27), on telemetry shaped like real scrapes: MIG GPUs with free slices
(equal free samples of one device at one instant), time-sliced GPUs, jobs that
start and stop inside a series, a gap, and scrape jitter that makes samples
straddle the hour."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpucost

HOUR = 3_600_000_000_000
MINUTE = 60_000_000_000
T0 = pd.Timestamp("2026-11-02", tz="UTC").value
GIB = 2.0**30


def _fleet(nodes: int, hours: int, seed: int = 3):
    """costs, usage (node-scrape order, with the keys to reorder it), inventory."""
    rng = np.random.default_rng(seed)
    scrapes = hours * 60
    rows = []  # one array per column, built per device
    for n in range(nodes):
        jitter = rng.integers(0, 400, scrapes) * 1_000_000  # per node scrape, ms
        k = np.arange(scrapes)
        t = T0 + k * MINUTE + jitter
        for d in range(8):
            kind = (n * 8 + d) % 4

            def add(mask, consumer, share, util, mem):
                m = int(mask.sum())
                rows.append({"timestamp": t[mask], "node": np.full(m, n), "device": np.full(m, d),
                             "scrape": k[mask], "consumer": np.full(m, consumer, dtype=object),
                             "share": np.full(m, share), "util": np.full(m, util), "mem_used": np.full(m, mem)})

            every = np.ones(scrapes, dtype=bool)
            if n == 1 and d == 2:
                every[70:74] = False  # four minutes missing
            if kind == 0:  # MIG: 3g held, 2g held for half the day, two free 1g slices
                add(every, f"mig-{n}-{d}", 3 / 7, 0.6, 10 * GIB)
                half = every & (k < scrapes // 2)
                add(half, f"mig2-{n}-{d}", 2 / 7, 0.4, 5 * GIB)
                add(every & ~half, "", 2 / 7, 0.0, 0.0)
                add(every, "", 1 / 7, 0.0, 0.0)
                add(every, "", 1 / 7, 0.0, 0.0)
            elif kind == 1:  # time-sliced by two pods
                add(every, f"ts-a-{n}-{d}", 0.5, 0.3, 4 * GIB)
                add(every, f"ts-b-{n}-{d}", 0.5, 0.2, 4 * GIB)
            else:  # jobs starting and stopping at odd minutes, free around them
                start, stop = 13 + 7 * d, scrapes - 29 - 5 * n
                job = every & (k >= start) & (k < stop)
                add(job, f"job-{n}-{d}", 1.0, 0.8, 30 * GIB)
                add(every & ~job, "", 1.0, 0.0, 0.0)
    cols = {c: np.concatenate([r[c] for r in rows]) for c in rows[0]}
    usage = pd.DataFrame({
        "timestamp": pd.to_datetime(cols["timestamp"], utc=True),
        "resource_id": np.array([f"i-{n}" for n in cols["node"]], dtype=object),
        "device": cols["device"].astype(np.int32),
        "consumer": cols["consumer"],
        "share": cols["share"], "util": cols["util"], "mem_used": cols["mem_used"],
    })
    keys = pd.DataFrame({"node": cols["node"], "device": cols["device"], "scrape": cols["scrape"],
                         "timestamp": cols["timestamp"]})
    costs = pd.DataFrame({
        "resource_id": [f"i-{n}" for n in range(nodes) for _ in range(hours)],
        "start": pd.to_datetime([T0 + h * HOUR for _ in range(nodes) for h in range(hours)], utc=True),
        "end": pd.to_datetime([T0 + (h + 1) * HOUR for _ in range(nodes) for h in range(hours)], utc=True),
        "cost": [30.0 + n + 0.5 * h for n in range(nodes) for h in range(hours)],
    })
    inventory = gpucost.inventory(pd.DataFrame({"resource_id": [f"i-{n}" for n in range(nodes)],
                                                "instance_type": "p4de.24xlarge"}))
    return costs, usage, keys, inventory


def _in_order(usage: pd.DataFrame, keys: pd.DataFrame, order: str) -> pd.DataFrame:
    if order == "node":
        idx = np.lexsort((keys["device"], keys["scrape"], keys["node"]))
    elif order == "series":
        idx = np.arange(len(usage))  # built device after device, each in time
    elif order == "time":
        idx = np.lexsort((keys["device"], keys["node"], keys["scrape"]))
    else:
        idx = np.random.default_rng(11).permutation(len(usage))
    return usage.iloc[idx].reset_index(drop=True)


def _as(kind: str, usage: pd.DataFrame):
    if kind == "category":
        return usage.astype({"resource_id": "category", "consumer": "category"})
    if kind == "str":
        return usage.astype({"resource_id": "str", "consumer": "str"})
    if kind == "object":
        return usage
    if kind == "arrow":
        return pa.Table.from_pandas(usage, preserve_index=False)
    pl = pytest.importorskip("polars")
    return pl.from_pandas(usage)


def _frame(result: pd.DataFrame) -> pd.DataFrame:
    return result.reset_index(drop=True)


@pytest.fixture(scope="module")
def fleet():
    return _fleet(nodes=6, hours=4)


def test_every_order_and_input_kind_gives_one_result(fleet):
    costs, usage, keys, inventory = fleet
    reference = gpucost.allocate(costs, _as("category", usage), inventory, by=["consumer", "period"], freq="h")
    diagnostics = reference.attrs["diagnostics"]
    assert diagnostics["samples_duplicate"] > 1000  # the free 1g slices
    assert diagnostics["interval"] != 60.0  # jitter: a median of uneven spacings
    for order in ("node", "series", "time", "shuffled"):
        ordered = _in_order(usage, keys, order)
        for kind in ("category", "str", "object", "arrow", "polars"):
            got = gpucost.allocate(costs, _as(kind, ordered), inventory, by=["consumer", "period"], freq="h")
            pd.testing.assert_frame_equal(_frame(got), _frame(reference), rtol=1e-9, check_dtype=False,
                                          obj=f"{order} order, {kind}")
            assert got.attrs["diagnostics"] == diagnostics, (order, kind)


@pytest.mark.parametrize("basis", ["allocated", "used", "blended"])
@pytest.mark.parametrize("idle", ["keep", "share"])
def test_every_basis_and_idle_mode_in_every_order(fleet, basis, idle):
    costs, usage, keys, inventory = fleet
    results = [gpucost.allocate(costs, _in_order(usage, keys, order), inventory, basis=basis, idle=idle)
               for order in ("node", "time", "shuffled")]
    assert results[0]["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-12)
    for other in results[1:]:
        pd.testing.assert_frame_equal(_frame(other), _frame(results[0]), rtol=1e-9, check_dtype=False)


def test_thread_counts_give_the_same_result_to_the_bit():
    # Big enough for the engine to split rows between two threads (2^18 a thread).
    costs, usage, keys, inventory = _fleet(nodes=48, hours=12, seed=5)
    assert len(usage) > 2 * (1 << 18)
    for order in ("node", "shuffled"):
        ordered = _as("category", _in_order(usage, keys, order))
        one = gpucost.allocate(costs, ordered, inventory, threads=1)
        two = gpucost.allocate(costs, ordered, inventory, threads=2)
        pd.testing.assert_frame_equal(two, one, rtol=0, atol=0, check_exact=True)
