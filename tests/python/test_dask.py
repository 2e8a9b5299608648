"""gpucost.dask.allocate on a LocalCluster of 2 worker processes: equal to
gpucost.allocate (1e-9), from DataFrames and from CSV files, bad rows named
by file and line, and exact even when a worker is killed mid-run."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

import gpucost  # noqa: E402
import gpucost.dask  # noqa: E402
from gpucost.simulate import simulate_fleet  # noqa: E402
from reference import assert_frames_close  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

POLICIES = [{}, {"basis": "used", "idle": "share"}, {"basis": "blended", "alpha": 0.3, "by": ["resource_id"]},
            {"by": ["team", "period"], "freq": "h"}]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       memory_limit="3GiB")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def fleet():
    fleet = simulate_fleet(gpus=48, hours=6, seed=11)
    # Lines and samples no engine partition may lose: a resource with no
    # inventory, and a line without a resource.
    costs = fleet.costs.astype({"resource_id": object})
    extra = costs.iloc[:2].assign(resource_id=["ghost", None])
    fleet.costs = pd.concat([costs, extra], ignore_index=True)
    return fleet


def expected_for(fleet, policy):
    return gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, **policy)


def check(result, expected):
    assert_frames_close(result, expected, rel=1e-9, abs_=1e-9)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]
    assert_frames_close(result.attrs["join"], expected.attrs["join"])


@pytest.mark.parametrize("policy", POLICIES)
def test_equals_single_machine(client, fleet, policy):
    usage = dd.from_pandas(fleet.usage.sample(frac=1.0, random_state=1), npartitions=5, sort=False)
    costs = dd.from_pandas(fleet.costs, npartitions=2, sort=False)
    result = gpucost.dask.allocate(costs, usage, fleet.inventory, fleet.workloads, npartitions=4, **policy)
    check(result, expected_for(fleet, policy))


def test_pandas_inputs_and_one_partition(client, fleet):
    result = gpucost.dask.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, npartitions=1)
    check(result, expected_for(fleet, {}))


def write_usage_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.assign(timestamp=frame["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")).to_csv(path, index=False)


def test_csv_files(client, fleet, tmp_path):
    for k, rows in enumerate(np.array_split(np.arange(len(fleet.usage)), 3)):
        write_usage_csv(fleet.usage.iloc[rows], tmp_path / f"usage-{k}.csv")
    fleet.costs.to_csv(tmp_path / "costs.csv", index=False)
    result = gpucost.dask.allocate(str(tmp_path / "costs.csv"), str(tmp_path / "usage-*.csv"), fleet.inventory,
                                   fleet.workloads, by=["team", "period"], freq="D")
    check(result, expected_for(fleet, {"by": ["team", "period"], "freq": "D"}))


def test_bad_row_names_file_and_line(client, fleet, tmp_path):
    for k, rows in enumerate(np.array_split(np.arange(len(fleet.usage)), 2)):
        write_usage_csv(fleet.usage.iloc[rows], tmp_path / f"usage-{k}.csv")
    bad = pd.read_csv(tmp_path / "usage-1.csv")
    bad.loc[99, "mem_used"] = -1.0
    bad.to_csv(tmp_path / "usage-1.csv", index=False)
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"^{tmp_path / 'usage-1.csv'}: line 101, column 'mem_used': -1 is not"):
        gpucost.dask.allocate(fleet.costs, str(tmp_path / "usage-*.csv"), fleet.inventory, npartitions=3)


def test_bad_row_of_a_dataframe_is_named_by_its_values(client, fleet):
    usage = fleet.usage.copy()
    usage.loc[usage.index[1234], "share"] = 2.0
    with pytest.raises(gpucost.InvalidInputError, match=r"^usage: the row with timestamp=.*column 'share': 2"):
        gpucost.dask.allocate(fleet.costs, dd.from_pandas(usage, npartitions=3), fleet.inventory)


def slow_load(part: pd.DataFrame, markers: str) -> pd.DataFrame:
    """A slow reader: each partition takes half a second and leaves a mark
    naming the worker process that read it."""
    time.sleep(0.5)
    Path(markers, f"{os.getpid()}-{time.monotonic_ns()}").touch()
    return part


def test_worker_killed_mid_run(client, fleet, tmp_path):
    expected = expected_for(fleet, {"by": ["team"]})
    parts = [fleet.usage.iloc[rows] for rows in np.array_split(np.arange(len(fleet.usage)), 10)]
    usage = dd.from_map(slow_load, parts, markers=str(tmp_path), meta=fleet.usage.iloc[:0], enforce_metadata=False)
    before = set(client.run(os.getpid).values())
    future = client.compute(gpucost.dask.allocate_graph(fleet.costs, usage, fleet.inventory, fleet.workloads,
                                                        npartitions=4, by=["team"]))
    deadline = time.monotonic() + 60
    while not os.listdir(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    marks = os.listdir(tmp_path)
    assert marks, "no partition was read"
    victim = int(marks[0].split("-")[0])
    assert victim in before
    os.kill(victim, signal.SIGKILL)
    assert not future.done()  # killed mid-run, with partitions still to read
    result = future.result(timeout=300)
    check(result, expected)
    # The nanny starts a new worker; a loaded machine took over 120 s to import
    # its modules (make test runs two builds beside this suite).
    client.wait_for_workers(2, timeout=600)
    assert victim not in set(client.run(os.getpid).values())
