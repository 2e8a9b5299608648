"""Inputs reach C++ without copies where dtypes match; results become the
DataFrame without copies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpucost import _core
from gpucost.allocation import cost_columns, inventory_columns, usage_columns, workload_columns
from gpucost.frames import allocation_frame
from gpucost.simulate import simulate_fleet


def test_matching_input_columns_are_not_copied():
    fleet = simulate_fleet(gpus=8, hours=2)
    usage = usage_columns(fleet.usage)
    for name in ("share", "util", "mem_used"):
        column = fleet.usage[name].to_numpy()
        assert np.shares_memory(usage[name], column), name
        # The binding reads the very buffer (no forcecast copy for float64).
        assert _core._float64_address(usage[name]) == column.ctypes.data
    assert np.shares_memory(usage["device"], fleet.usage["device"].to_numpy())  # int32 stays int32
    assert _core._int32_address(usage["device"]) == usage["device"].ctypes.data
    # datetime64[ns, UTC] is read as its int64 buffer.
    assert np.shares_memory(usage["timestamp"], fleet.usage["timestamp"].array.asi8)
    assert _core._int64_address(usage["timestamp"]) == usage["timestamp"].ctypes.data
    costs = cost_columns(fleet.costs)
    assert np.shares_memory(costs["cost"], fleet.costs["cost"].to_numpy())


def test_microsecond_timestamps_are_not_converted():
    fleet = simulate_fleet(gpus=8, hours=1)
    usage = fleet.usage.assign(timestamp=fleet.usage["timestamp"].dt.as_unit("us"))
    columns = usage_columns(usage)
    assert columns["time_unit"] == "us"
    assert np.shares_memory(columns["timestamp"], usage["timestamp"].array.asi8)


def test_result_columns_are_the_engines_arrays():
    fleet = simulate_fleet(gpus=8, hours=2)
    raw = _core.allocate(cost_columns(fleet.costs), usage_columns(fleet.usage),
                         {"resource_id": (np.zeros(8, np.int32), [fleet.inventory["resource_id"].iloc[0]]),
                          "device": np.arange(8, dtype=np.int32), "mem_capacity": np.full(8, 40.0 * 2**30)},
                         None, basis="allocated", alpha=0.5, idle="keep", interval=60.0, by=["consumer"], freq=None)
    arrays = {k: getattr(raw, k) for k in ("cost", "gpu_hours", "effective_gpu_hours")}
    frame = allocation_frame(raw)
    for name, array in arrays.items():
        assert np.shares_memory(frame[name].to_numpy(), array), name
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(arrays["cost"])


def test_result_crosses_as_one_typed_object():
    """_core.allocate returns an AllocationResult: typed properties whose arrays
    are views of the engine's vectors (every access the same memory), alive
    as long as any view is, whatever happens to the result object."""
    import gc
    fleet = simulate_fleet(gpus=8, hours=2)

    def run(costs):
        return _core.allocate(cost_columns(costs), usage_columns(fleet.usage), inventory_columns(fleet.inventory),
                              workload_columns(fleet.workloads), basis="allocated", alpha=0.5, idle="keep",
                              interval=None, by=["team", "period"], freq="D")

    raw = run(fleet.costs)
    assert run(fleet.costs.drop(columns="list_cost")).list_cost is None
    assert isinstance(raw, _core.AllocationResult)
    team, period = raw.keys
    assert (team.name, team.is_period, period.name, period.is_period) == ("team", False, "period", True)
    assert team.codes.dtype == np.int32 and team.period is None and team.dictionary == sorted(team.dictionary)
    assert period.period.dtype == np.int64 and period.codes is None and period.dictionary is None
    assert raw.cost.dtype == raw.list_cost.dtype == np.float64 and len(raw.cost) == len(team.codes)
    assert np.shares_memory(raw.cost, raw.cost)
    assert isinstance(raw.diagnostics, _core.Diagnostics) and raw.diagnostics.samples_total == len(fleet.usage)
    assert isinstance(raw.diagnostics.interval_seconds, float)
    join = raw.join
    assert isinstance(join, _core.JoinTable) and len(join.resource_id) == len(join.lines) > 0
    assert join.in_inventory.dtype == np.uint8
    with pytest.raises(AttributeError):
        raw.cost = np.zeros(1)  # read-only properties
    expected, lines_total, n_teams = raw.cost.copy(), raw.diagnostics.lines_total, len(team.dictionary)
    cost, codes, lines = raw.cost, team.codes, join.lines
    del raw, team, period, join
    gc.collect()
    np.testing.assert_array_equal(cost, expected)  # the views outlive the result object
    assert codes.max() == n_teams - 1 and lines.sum() == lines_total
