"""gpucost.set_num_threads: the engine's thread count, and results that do
not depend on it (to 1e-12) on inputs large enough to be split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpucost
from gpucost.simulate import simulate_fleet
from reference import assert_frames_close
from test_properties import POLICIES, scenarios


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

# The engine gives each thread at least 2**18 samples: two threads need twice that.
SPLIT_ROWS = 2 * 2**18 + 1000


@pytest.fixture(autouse=True)
def restore_threads():
    before = gpucost.get_num_threads()
    yield
    gpucost.set_num_threads(before)


def test_default_and_round_trip():
    assert gpucost.get_num_threads() == 0
    gpucost.set_num_threads(2)
    assert gpucost.get_num_threads() == 2
    gpucost.set_num_threads(np.int64(1))
    assert gpucost.get_num_threads() == 1


@pytest.mark.parametrize("bad", [-1, 1.5, "2", None, True])
def test_rejects_bad_counts(bad):
    with pytest.raises(gpucost.InvalidInputError, match="threads"):
        gpucost.set_num_threads(bad)
    assert gpucost.get_num_threads() == 0


def allocate_with(threads: int, *tables, **policy) -> pd.DataFrame:
    gpucost.set_num_threads(threads)
    return gpucost.allocate(*tables, **policy)


def repeated(costs: pd.DataFrame, usage: pd.DataFrame, rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scenario repeated every 8 hours until usage has `rows` rows: as
    many samples per line as the scenario has, many lines (sums of few
    terms, as in real telemetry, where rounding cannot reach 1e-12)."""
    copies = -(-rows // len(usage))
    shifts = pd.to_timedelta(np.arange(copies) * 8, unit="h")

    def repeat(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
        out = frame.iloc[np.tile(np.arange(len(frame)), copies)].reset_index(drop=True)
        offset = np.repeat(shifts.to_numpy(), len(frame))
        return out.assign(**{c: out[c] + offset for c in columns}).astype(
            {"resource_id": "category", **({"consumer": "category"} if "consumer" in out else {})})

    return repeat(costs, ("start", "end")), repeat(usage, ("timestamp",))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.filter_too_much])
@given(scenarios(), POLICIES)
def test_thread_count_does_not_change_random_results(scenario, policy):
    costs, usage, inventory, workloads = scenario
    # Fewer rows would need copies beyond the engine's last instant (2200).
    assume(len(usage) >= 4)
    costs, usage = repeated(costs, usage, SPLIT_ROWS)
    one = allocate_with(1, costs, usage, inventory, workloads, **policy)
    two = allocate_with(2, costs, usage, inventory, workloads, **policy)
    assert_frames_close(two, one, rel=1e-12, abs_=1e-12)
    assert two.attrs["diagnostics"] == one.attrs["diagnostics"]


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**16), st.sampled_from([{}, {"basis": "used", "idle": "share"},
                                                {"by": ["team", "period"], "freq": "D"}]))
def test_thread_count_does_not_change_a_fleet(seed, policy):
    fleet = simulate_fleet(gpus=480, hours=24, seed=seed)
    assert len(fleet.usage) > SPLIT_ROWS
    tables = (fleet.costs, fleet.usage, fleet.inventory, fleet.workloads)
    one = allocate_with(1, *tables, **policy)
    assert_frames_close(allocate_with(2, *tables, **policy), one, rel=1e-12, abs_=1e-12)


def test_streaming_allocator_uses_the_setting():
    fleet = simulate_fleet(gpus=320, hours=24, seed=3)
    gpucost.set_num_threads(2)
    streamed = gpucost.Allocator(fleet.costs, fleet.inventory).add_all([fleet.usage]).finish()
    gpucost.set_num_threads(1)
    assert_frames_close(streamed, gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory), rel=1e-12,
                        abs_=1e-12)
