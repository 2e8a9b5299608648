"""Property tests: the one-shot, streaming, threaded and distributed (Dask)
paths agree on random inputs (the strategies of test_properties.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucost
from reference import assert_frames_close
from test_properties import POLICIES, scenarios


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios(), POLICIES, st.integers(1, 7), st.integers(0, 2**31))
def test_streaming_equals_one_shot(scenario, policy, chunks, seed):
    costs, usage, inventory, workloads = scenario
    whole = gpucost.allocate(*scenario, **policy)
    shuffled = usage.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    parts = np.array_split(np.arange(len(shuffled)), chunks)
    streamed = gpucost.allocate_stream(costs, (shuffled.iloc[p] for p in parts), inventory, workloads, **policy)
    assert_frames_close(streamed, whole)
    assert streamed.attrs["diagnostics"] == whole.attrs["diagnostics"]
    assert_frames_close(streamed.attrs["join"], whole.attrs["join"])


@SETTINGS
@given(scenarios(), POLICIES, st.sampled_from([1, 2, 0]))
def test_threaded_equals_one_shot(scenario, policy, threads):
    whole = gpucost.allocate(*scenario, **policy)
    before = gpucost.get_num_threads()
    try:
        gpucost.set_num_threads(threads)
        assert_frames_close(gpucost.allocate(*scenario, **policy), whole, rel=1e-12, abs_=1e-12)
    finally:
        gpucost.set_num_threads(before)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), POLICIES, st.integers(1, 4), st.integers(1, 3))
def test_dask_equals_one_shot(scenario, policy, partitions, input_partitions):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import gpucost.dask

    costs, usage, inventory, workloads = scenario
    whole = gpucost.allocate(*scenario, **policy)
    with dask.config.set(scheduler="sync"):
        result = gpucost.dask.allocate(dd.from_pandas(costs, npartitions=1),
                                       dd.from_pandas(usage, npartitions=input_partitions, sort=False),
                                       inventory, workloads, npartitions=partitions, **policy)
    assert_frames_close(result, whole)
    assert result.attrs["diagnostics"] == whole.attrs["diagnostics"]
    assert_frames_close(result.attrs["join"], whole.attrs["join"])
