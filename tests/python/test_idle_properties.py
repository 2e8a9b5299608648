"""The C++ idle pass equals a plain per-minute reference of
docs/analyses.md's definition on random fleets (random billing with gaps,
holders, exempt workloads, unobserved devices, time-slicing), and the
shuffled input gives the same spans. Only observed time can be idle; billed
stretches of a window or more that no sample of the resource covers are
"no-telemetry" spans."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucost

T0 = pd.Timestamp("2026-03-02", tz="UTC")
MIN = 60
WINDOW_MIN = 30
THRESHOLD = 0.05
UTILS = [0.0, 0.01, 0.04, 0.3, 0.9]


@st.composite
def fleets(draw):
    resources = {f"r{k}": draw(st.integers(1, 3)) for k in range(draw(st.integers(1, 2)))}
    hours = 3
    costs, usage = [], []
    for r, n in resources.items():
        billed = [h for h in range(hours) if draw(st.booleans()) or h == 0]
        for h in billed:
            costs.append((r, T0 + pd.Timedelta(hours=h), T0 + pd.Timedelta(hours=h + 1), 1.0))
        for d in range(n):
            if draw(st.integers(0, 4)) == 0:
                continue  # an unobserved device
            minute = 0
            while minute < hours * 60:
                length = draw(st.sampled_from([5, 20, 45, 90]))
                consumers = draw(st.sampled_from([[""], ["a"], ["b"], ["a", "c"]]))
                util = draw(st.sampled_from(UTILS))
                for m in range(minute, min(minute + length, hours * 60)):
                    for c in consumers:
                        usage.append((T0 + pd.Timedelta(minutes=m), r, d, c, 1.0 / len(consumers), util))
                minute += length
    costs = pd.DataFrame(costs, columns=["resource_id", "start", "end", "cost"])
    usage = pd.DataFrame(usage, columns=["timestamp", "resource_id", "device", "consumer", "share", "util"])
    usage = usage.astype({"timestamp": "datetime64[ns, UTC]", "resource_id": object, "device": np.int64,
                          "consumer": object, "share": float, "util": float})
    usage["mem_used"] = 0.0
    inventory = pd.DataFrame([(r, d, 40.0 * 2**30) for r, n in resources.items() for d in range(n)],
                             columns=["resource_id", "device", "mem_capacity"])
    exempt = draw(st.sampled_from([[], ["b"]]))
    return usage, costs, inventory, exempt


def true_runs(mask: np.ndarray, at_least: int):
    """(begin, end) of every run of True in `mask` at least `at_least` long."""
    b, n = 0, len(mask)
    while b < n:
        if not mask[b]:
            b += 1
            continue
        e = b
        while e < n and mask[e]:
            e += 1
        if e - b >= at_least:
            yield b, e
        b = e


def reference_spans(usage, costs, inventory, exempt) -> set:
    """Per minute, per device: busy, held, exempt; windows; trims; kinds."""
    out = set()
    w = WINDOW_MIN
    for r, inv in inventory.groupby("resource_id"):
        lines = costs[costs["resource_id"] == r]
        if len(lines) == 0:
            continue
        t0 = lines["start"].min()
        bins = int((lines["end"].max() - t0).total_seconds() // MIN)
        billed = np.zeros(bins, dtype=bool)
        for s, e in zip(lines["start"], lines["end"]):
            billed[int((s - t0).total_seconds() // MIN):int((e - t0).total_seconds() // MIN)] = True
        n = len(inv)
        busy = np.zeros((n, bins))
        observed = np.zeros((n, bins), dtype=bool)
        held = np.zeros((n, bins), dtype=bool)
        ex = np.zeros((n, bins), dtype=bool)
        for row in usage[usage["resource_id"] == r].itertuples():
            b = int((row.timestamp - t0).total_seconds() // MIN)
            if 0 <= b < bins:
                observed[row.device, b] = True
                busy[row.device, b] += row.share * row.util
                if row.consumer:
                    held[row.device, b] = True
                    ex[row.device, b] |= row.consumer in exempt
        busy = np.minimum(busy, 1.0)
        idle = np.zeros((n, bins), dtype=bool)
        for d in range(n):
            for k in range(bins - w + 1):
                if billed[k:k + w].all() and observed[d, k:k + w].all() and \
                        busy[d, k:k + w].sum() * MIN < THRESHOLD * w * MIN:
                    idle[d, k:k + w] = True
            b = 0
            while b < bins:
                if not idle[d, b]:
                    b += 1
                    continue
                e = b
                while e < bins and idle[d, e]:
                    e += 1
                k = b
                while k < e and busy[d, k] >= THRESHOLD:
                    idle[d, k] = False
                    k += 1
                k = e - 1
                while k >= b and idle[d, k] and busy[d, k] >= THRESHOLD:
                    idle[d, k] = False
                    k -= 1
                b = e
        all_unheld = (idle & ~held).all(axis=0)
        terminate = np.zeros(bins, dtype=bool)
        for b, e in true_runs(all_unheld, w):
            terminate[b:e] = True
            out.update((r, d, "terminate", b, e) for d in range(n))
        dark = billed & ~observed.any(axis=0)  # no telemetry from any device
        for b, e in true_runs(dark, w):
            out.update((r, d, "no-telemetry", b, e) for d in range(n))
        for d in range(n):
            kind = np.where(~idle[d], "", np.where(held[d], np.where(ex[d], "exempt", "release"),
                                                   np.where(terminate, "", "right-size")))
            b = 0
            while b < bins:
                e = b + 1
                while e < bins and kind[e] == kind[b]:
                    e += 1
                if kind[b]:
                    out.add((r, d, str(kind[b]), b, e))
                b = e
    return {(r, d, k, T0 + pd.Timedelta(minutes=b), T0 + pd.Timedelta(minutes=e)) for r, d, k, b, e in out}


def engine_spans(usage, costs, inventory, exempt) -> set:
    workloads = pd.DataFrame({"consumer": ["a", "b", "c"], "idle_exempt": ["b" in exempt and c == "b"
                                                                          for c in ("a", "b", "c")]})
    workloads["idle_exempt"] = workloads["idle_exempt"].map({True: "true", False: "false"})
    report = gpucost.find_idle(usage, costs, inventory, workloads, threshold=THRESHOLD, window=f"{WINDOW_MIN}min")
    s = report.spans
    return set(zip(s["resource_id"], s["device"].astype(int), s["kind"], s["start"], s["end"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets())
def test_engine_equals_reference(fleet):
    usage, costs, inventory, exempt = fleet
    assert engine_spans(usage, costs, inventory, exempt) == reference_spans(*fleet)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets(), st.randoms(use_true_random=False))
def test_order_of_rows_changes_nothing(fleet, rnd):
    usage, costs, inventory, exempt = fleet
    shuffled = usage.sample(frac=1.0, random_state=rnd.randint(0, 2**31)).reset_index(drop=True)
    assert engine_spans(shuffled, costs, inventory, exempt) == engine_spans(usage, costs, inventory, exempt)
