"""Property tests: the engine equals the plain reference on random inputs, and
the five invariants of docs/semantics.md section 4 hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucost
from reference import assert_frames_close, reference_allocate


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

T0 = pd.Timestamp("2026-03-01", tz="UTC").value
MIN = 60 * 10**9
HOUR = 60 * MIN
SHARES = [1.0, 0.5, 1 / 3, 1 / 7, 2 / 7, 3 / 7]
CONSUMERS = ["", "a", "b", "c", "d", "e"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(draw, aligned: bool = False, overlapping_lines: bool = True):
    """Random cost lines, usage, inventory and workloads over a few hours.

    Covers MIG shares, time-slicing, free devices, resources without inventory,
    samples crossing line borders, half-hour lines, overlapping lines, credits,
    unobserved lines, currencies, non-primary lines, partial quantities and
    rows read twice. With `aligned`, lines are whole hours and samples
    15-minute blocks inside them, in one currency, all primary, whole periods.
    """
    n_res = draw(st.integers(1, 3))
    devices = {f"r{k}": draw(st.integers(1, 3)) for k in range(n_res)}
    inventory = pd.DataFrame(
        [(r, d, float(draw(st.sampled_from([16, 40, 80]))) * 2**30) for r, n in devices.items() for d in range(n)],
        columns=["resource_id", "device", "mem_capacity"])
    resources = list(devices) + ["ghost"]  # "ghost" has lines and samples but no inventory
    lines = []
    for r in resources:
        for h in range(draw(st.integers(0, 3))):
            if aligned or not overlapping_lines:
                start, length = h * HOUR, HOUR
            else:
                start = draw(st.integers(0, 6)) * 30 * MIN
                length = draw(st.sampled_from([30 * MIN, HOUR, 2 * HOUR]))
            cost = draw(st.floats(-5, 50, allow_nan=False).filter(lambda x: abs(x) > 1e-3))
            lines.append((r, T0 + start, T0 + start + length, cost, abs(cost) * 1.5))
    costs = pd.DataFrame(lines, columns=["resource_id", "start", "end", "cost", "list_cost"])
    for col in ("start", "end"):
        costs[col] = pd.to_datetime(costs[col].astype("int64"), unit="ns", utc=True)
    if not aligned:
        n = len(costs)
        if draw(st.booleans()):
            costs["currency"] = [draw(st.sampled_from(["USD", "EUR"])) for _ in range(n)]
        if draw(st.booleans()):
            costs["primary"] = [draw(st.booleans()) for _ in range(n)]
        if draw(st.booleans()):
            costs["quantity_hours"] = [draw(st.sampled_from([np.nan, 0.25, 0.5, 1.0, 3.0])) for _ in range(n)]
    samples = []
    for _ in range(draw(st.integers(0, 40))):
        r = draw(st.sampled_from(resources))
        d = draw(st.integers(0, devices.get(r, 2) - 1))
        if aligned:
            t = draw(st.integers(0, 11)) * 15 * MIN
            dur = 15 * MIN
        else:
            t = draw(st.integers(0, 4 * 60)) * MIN
            dur = draw(st.sampled_from([MIN, 5 * MIN, 45 * MIN]))
        samples.append((T0 + t, r, d, draw(st.sampled_from(CONSUMERS)), draw(st.sampled_from(SHARES)),
                        draw(st.floats(0, 1)), float(draw(st.integers(0, 20))) * 2**30, dur / 1e9))
    usage = pd.DataFrame(samples, columns=["timestamp", "resource_id", "device", "consumer", "share", "util",
                                           "mem_used", "duration"])
    usage["timestamp"] = pd.to_datetime(usage["timestamp"].astype("int64"), unit="ns", utc=True)
    usage["device"] = usage["device"].astype("int64")
    if not aligned and len(usage) and draw(st.booleans()):  # rows read twice
        copies = draw(st.lists(st.integers(0, len(usage) - 1), max_size=10))
        usage = pd.concat([usage, usage.iloc[copies]], ignore_index=True)
    workloads = pd.DataFrame({"consumer": ["a", "b", "c"], "team": ["x", "y", "x"]})
    return costs, usage, inventory, workloads


POLICIES = st.sampled_from([
    {}, {"basis": "used"}, {"basis": "blended", "alpha": 0.25}, {"idle": "share"},
    {"basis": "used", "idle": "share"}, {"by": ["team", "period"], "freq": "h"},
    {"by": ["resource_id", "consumer", "period"], "freq": "D"}, {"by": ["period"], "freq": "MS"},
])


def run(costs, usage, inventory, workloads, **policy):
    return gpucost.allocate(costs, usage, inventory, workloads, **policy)


@SETTINGS
@given(scenarios(), POLICIES)
def test_engine_equals_reference(scenario, policy):
    assert_frames_close(run(*scenario, **policy), reference_allocate(*scenario, **policy))


@SETTINGS
@given(scenarios(), POLICIES)
def test_conservation(scenario, policy):
    costs = scenario[0]
    result = run(*scenario, **policy)
    if "currency" in costs.columns:  # per currency: two currencies are never added
        for column in ("cost", "list_cost"):
            got = result.groupby("currency")[column].sum()
            want = costs.groupby("currency")[column].sum()
            assert sorted(got.index) == sorted(want.index)
            for currency, amount in want.items():
                assert got[currency] == pytest.approx(amount, rel=1e-9, abs=1e-9)
        return
    assert result["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-9, abs=1e-9)
    assert result["list_cost"].sum() == pytest.approx(costs["list_cost"].sum(), rel=1e-9, abs=1e-9)


@SETTINGS
@given(scenarios(), POLICIES, st.data())
def test_duplicates(scenario, policy, data):
    costs, usage, inventory, workloads = scenario
    base = run(*scenario, **policy)
    if not len(usage):
        return
    copies = data.draw(st.lists(st.integers(0, len(usage) - 1), min_size=1, max_size=20))
    twice = pd.concat([usage, usage.iloc[copies]], ignore_index=True)
    result = run(costs, twice, inventory, workloads, **policy)
    assert_frames_close(result, base)
    assert result.attrs["diagnostics"]["samples_duplicate"] == \
        base.attrs["diagnostics"]["samples_duplicate"] + len(copies)


@SETTINGS
@given(scenarios(), POLICIES, st.sampled_from([0.5, 3.0, -2.0]))
def test_scale(scenario, policy, x):
    costs, usage, inventory, workloads = scenario
    base = run(costs, usage, inventory, workloads, **policy)
    scaled = run(costs.assign(cost=costs["cost"] * x), usage, inventory, workloads, **policy)
    np.testing.assert_allclose(scaled["cost"], base["cost"] * x, rtol=1e-9, atol=1e-9)


@SETTINGS
@given(scenarios(), POLICIES, st.integers(0, 2**31))
def test_order(scenario, policy, seed):
    base = run(*scenario, **policy)
    shuffled = [t.sample(frac=1.0, random_state=seed + k).reset_index(drop=True) for k, t in enumerate(scenario)]
    assert_frames_close(run(*shuffled, **policy), base)


def split_half_hours(costs: pd.DataFrame) -> pd.DataFrame:
    first = costs.assign(end=costs["start"] + pd.Timedelta(minutes=30), cost=costs["cost"] / 2,
                         list_cost=costs["list_cost"] / 2)
    second = costs.assign(start=costs["start"] + pd.Timedelta(minutes=30), cost=costs["cost"] / 2,
                          list_cost=costs["list_cost"] / 2)
    return pd.concat([first, second], ignore_index=True)


def held_beyond_capacity(usage: pd.DataFrame, inventory: pd.DataFrame) -> bool:
    """Whether some resource holds more than its capacity in some half hour
    (aligned samples are 15-minute blocks, so each lies in one half hour)."""
    held = usage[(usage["consumer"] != "") & usage["resource_id"].isin(inventory["resource_id"])]
    half_hour = held["timestamp"].dt.floor("30min")
    per_window = (held["share"] * 15).groupby([held["resource_id"], half_hour]).sum()
    capacity = inventory.groupby("resource_id").size() * 30
    return bool((per_window > capacity.reindex(per_window.index.get_level_values(0)).to_numpy() + 1e-9).any())


@SETTINGS
@given(scenarios(aligned=True), st.sampled_from(["allocated", "used", "blended"]))
def test_splitting(scenario, basis):
    costs, usage, inventory, workloads = scenario
    policy = dict(basis=basis, idle="keep", by=["consumer", "period"], freq="D")
    whole = run(costs, usage, inventory, workloads, **policy)
    split = run(split_half_hours(costs), usage, inventory, workloads, **policy)
    # Linear in time only while nothing is normalised or held beyond capacity.
    oversubscribed = whole.attrs["diagnostics"]["lines_oversubscribed"] + split.attrs["diagnostics"][
        "lines_oversubscribed"]
    # ... and every half line is observed (an unobserved half is not idle).
    if oversubscribed or held_beyond_capacity(usage, inventory) or split.attrs["diagnostics"]["lines_unobserved"]:
        return
    assert_frames_close(split, whole)


@SETTINGS
@given(scenarios(), POLICIES)
def test_distribution(scenario, policy):
    costs, usage, inventory, workloads = scenario
    by = list(policy.get("by", ["consumer"])) + (["currency"] if "currency" in costs.columns else [])
    whole = run(*scenario, **policy)
    parts = []
    for resource in pd.unique(pd.concat([costs["resource_id"], usage["resource_id"]])):
        parts.append(run(costs[costs["resource_id"] == resource], usage[usage["resource_id"] == resource],
                         inventory, workloads, **policy))
    if not parts:
        assert whole.empty
        return
    for part in parts:
        part.attrs = {}
    summed = pd.concat(parts).groupby(by, sort=True, as_index=False)[
        ["cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours"]].sum()
    with np.errstate(all="ignore"):
        summed["cost_per_effective_gpu_hour"] = np.where(summed["effective_gpu_hours"] == 0, np.nan,
                                                         summed["cost"] / summed["effective_gpu_hours"])
    assert_frames_close(summed.reset_index(drop=True), whole.reset_index(drop=True))
