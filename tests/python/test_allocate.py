"""gpucost.allocate through Python: the worked example, every bad input, every
accepted column type, labels and periods, streaming."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpucost
from gpucost.simulate import simulate_fleet
from reference import assert_frames_close, reference_allocate

GIB = 2**30
T0 = pd.Timestamp("2026-03-01 10:00", tz="UTC")


@pytest.fixture()
def example():
    """SEMANTICS 7: i-1 with 2 x 40 GiB devices, one line [10:00, 11:00) at 8.00."""
    costs = pd.DataFrame({"resource_id": ["i-1"], "start": [T0], "end": [T0 + pd.Timedelta("1h")], "cost": [8.0]})
    inventory = pd.DataFrame({"resource_id": ["i-1", "i-1"], "device": [0, 1], "mem_capacity": [40.0 * GIB] * 2})
    minutes = pd.date_range(T0, periods=60, freq="min")
    train = pd.DataFrame({"timestamp": minutes, "resource_id": "i-1", "device": 0, "consumer": "train-a",
                          "share": 1.0, "util": 0.9, "mem_used": 20.0 * GIB})
    nb = pd.DataFrame({"timestamp": minutes, "resource_id": "i-1", "device": 1,
                       "consumer": ["nb-b"] * 30 + [""] * 30, "share": 1.0,
                       "util": [0.2] * 30 + [0.0] * 30, "mem_used": [10.0 * GIB] * 30 + [0.0] * 30})
    usage = pd.concat([train, nb], ignore_index=True)
    return costs, usage, inventory


def costs_of(result: pd.DataFrame) -> dict[str, float]:
    return dict(zip(result["consumer"], result["cost"]))


@pytest.mark.parametrize(("basis", "idle", "expected"), [
    ("allocated", "keep", {"train-a": 4.0, "nb-b": 2.0, "__idle__": 2.0}),
    ("used", "keep", {"train-a": 3.6, "nb-b": 0.4, "__idle__": 4.0}),
    ("allocated", "share", {"train-a": 16 / 3, "nb-b": 8 / 3}),
    ("used", "share", {"train-a": 7.2, "nb-b": 0.8}),
    ("blended", "keep", {"train-a": 3.0, "nb-b": 1.25, "__idle__": 3.75}),
])
def test_worked_example(example, basis, idle, expected):
    result = gpucost.allocate(*example, basis=basis, idle=idle)
    assert costs_of(result) == pytest.approx(expected, rel=1e-12)
    assert result["cost"].sum() == pytest.approx(8.0, rel=1e-12)


def test_worked_example_columns_and_diagnostics(example):
    result = gpucost.allocate(*example)
    assert list(result.columns) == ["consumer", "cost", "idle_cost", "gpu_hours", "effective_gpu_hours",
                                    "mem_gib_hours", "cost_per_effective_gpu_hour"]
    assert list(result["consumer"]) == ["__idle__", "nb-b", "train-a"]
    idle = result.iloc[0]
    assert idle["gpu_hours"] == pytest.approx(0.5)
    assert idle["idle_cost"] == pytest.approx(2.0)
    assert np.isnan(idle["cost_per_effective_gpu_hour"])
    nb = result.iloc[1]
    assert nb["effective_gpu_hours"] == pytest.approx(0.1)
    assert nb["mem_gib_hours"] == pytest.approx(5.0)
    assert nb["cost_per_effective_gpu_hour"] == pytest.approx(20.0)
    assert result.attrs["diagnostics"] == {
        "lines_total": 1, "lines_unattributed": 0, "lines_oversubscribed": 0, "samples_total": 120,
        "samples_no_consumer": 30, "samples_unknown_resource": 0, "samples_outside_lines": 0, "samples_used": 90,
    }


def test_matches_reference_on_simulated_fleet():
    fleet = simulate_fleet(gpus=16, hours=3, interval=300, strings="object")
    for kwargs in ({}, {"basis": "used", "idle": "share"}, {"basis": "blended", "alpha": 0.3},
                   {"by": ["team", "period"], "freq": "h"}, {"by": ["resource_id", "consumer"]}):
        result = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, interval=300, **kwargs)
        expected = reference_allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, interval=300,
                                      **kwargs)
        assert_frames_close(result, expected)


# ---- column types: the same numbers whatever the input's dtypes ----

def _with_strings(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    out = frame.copy()
    for col in ("resource_id", "consumer"):
        if col in out.columns:
            out[col] = out[col].astype({"category": "category", "object": object, "str": "str"}[kind])
    return out


@pytest.mark.parametrize("kind", ["category", "object", "str"])
def test_string_dtypes_give_the_same_result(example, kind):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    result = gpucost.allocate(_with_strings(costs, kind), _with_strings(usage, kind), _with_strings(inventory, kind))
    pd.testing.assert_frame_equal(result, expected)


def test_categorical_with_unused_and_reordered_categories(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    usage = usage.copy()
    usage["consumer"] = pd.Categorical(usage["consumer"], categories=["zz-unused", "train-a", "", "nb-b"])
    pd.testing.assert_frame_equal(gpucost.allocate(costs, usage, inventory), expected)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_time_units_timezones_and_int64(example, unit):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    usage2 = usage.assign(timestamp=usage["timestamp"].dt.tz_convert("America/New_York").dt.as_unit(unit))
    costs2 = costs.assign(start=costs["start"].dt.tz_localize(None).dt.as_unit(unit),
                          end=costs["end"].dt.tz_localize(None).dt.as_unit(unit))
    pd.testing.assert_frame_equal(gpucost.allocate(costs2, usage2, inventory), expected)
    usage3 = usage.assign(timestamp=usage["timestamp"].astype("datetime64[ns, UTC]").array.asi8)
    pd.testing.assert_frame_equal(gpucost.allocate(costs, usage3, inventory), expected)


def test_arrow_tables(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    tables = [pa.Table.from_pandas(t, preserve_index=False) for t in (costs, usage, inventory)]
    pd.testing.assert_frame_equal(gpucost.allocate(*tables), expected)
    # Dictionary-encoded Arrow strings in several chunks.
    usage_t = pa.Table.from_pandas(usage, preserve_index=False)
    consumer = usage_t.column("consumer")
    chunks = pa.chunked_array([consumer.slice(0, 50).combine_chunks().dictionary_encode(),
                               consumer.slice(50).combine_chunks().dictionary_encode()])
    usage_t = usage_t.set_column(usage_t.schema.get_field_index("consumer"), "consumer", chunks)
    pd.testing.assert_frame_equal(gpucost.allocate(tables[0], usage_t, tables[2]), expected)


def test_arrow_backed_pandas_columns(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    arrow_usage = usage.convert_dtypes(dtype_backend="pyarrow")
    arrow_costs = costs.convert_dtypes(dtype_backend="pyarrow")
    pd.testing.assert_frame_equal(gpucost.allocate(arrow_costs, arrow_usage, inventory), expected)


def test_duration_column_in_seconds_or_timedelta(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    pd.testing.assert_frame_equal(gpucost.allocate(costs, usage.assign(duration=60.0), inventory, interval=1),
                                  expected)
    pd.testing.assert_frame_equal(
        gpucost.allocate(costs, usage.assign(duration=pd.Timedelta("60s")), inventory, interval=1), expected)


def test_null_consumer_means_no_workload(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    usage = usage.assign(consumer=usage["consumer"].replace("", None))
    pd.testing.assert_frame_equal(gpucost.allocate(costs, usage, inventory), expected)


# ---- grouping ----

def test_labels_periods_and_special_rows(example):
    costs, usage, inventory = example
    costs = pd.concat([costs, pd.DataFrame({"resource_id": ["vol-1", None], "start": [T0, T0],
                                            "end": [T0 + pd.Timedelta(days=1)] * 2, "cost": [1.5, -0.5]})],
                      ignore_index=True)
    workloads = pd.DataFrame({"consumer": ["train-a"], "team": ["ml"], "project": ["llm"]})
    result = gpucost.allocate(costs, usage, inventory, workloads, by=["period", "team", "project"], freq="D")
    assert str(result["period"].dtype) == "datetime64[ns, UTC]"
    assert (result["period"] == pd.Timestamp("2026-03-01", tz="UTC")).all()
    rows = {(t, p): c for t, p, c in zip(result["team"], result["project"], result["cost"])}
    assert rows == pytest.approx({("__idle__", "__idle__"): 2.0, ("__unattributed__", "__unattributed__"): 1.0,
                                  ("__unlabelled__", "__unlabelled__"): 2.0, ("ml", "llm"): 4.0})
    assert result.attrs["diagnostics"]["lines_unattributed"] == 2


def test_by_accepts_a_single_string(example):
    result = gpucost.allocate(*example, by="resource_id")
    assert list(result["resource_id"]) == ["i-1"]
    assert result["cost"].iloc[0] == pytest.approx(8.0)


# ---- bad input: ValueError naming the table, the row and the column ----

def _bad(frame: pd.DataFrame, row: int, column: str, value) -> pd.DataFrame:
    out = frame.copy()
    out.loc[row, column] = value
    return out


@pytest.mark.parametrize(("table", "row", "column", "value", "message"), [
    ("costs", 0, "end", T0, "costs: row 0, column 'end'"),
    ("costs", 0, "cost", np.nan, "costs: row 0, column 'cost'"),
    ("costs", 0, "cost", np.inf, "costs: row 0, column 'cost'"),
    ("usage", 5, "share", 0.0, "usage: row 5, column 'share'"),
    ("usage", 5, "share", 1.2, "usage: row 5, column 'share'"),
    ("usage", 70, "util", np.nan, "usage: row 70, column 'util'"),
    ("usage", 70, "util", 1.5, "usage: row 70, column 'util'"),
    ("usage", 90, "mem_used", -1.0, "usage: row 90, column 'mem_used'"),
    ("usage", 90, "mem_used", np.nan, "usage: row 90, column 'mem_used'"),
    ("usage", 3, "device", 5, "usage: row 3, column 'device'"),
    ("usage", 4, "consumer", "__unattributed__", "usage: row 4, column 'consumer'"),
    ("inventory", 1, "device", 0, "inventory: row 1, column 'device'"),
])
def test_bad_values(example, table, row, column, value, message):
    tables = dict(zip(("costs", "usage", "inventory"), example))
    tables[table] = _bad(tables[table], row, column, value)
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.allocate(tables["costs"], tables["usage"], tables["inventory"])


def test_bad_input_is_a_value_error(example):
    costs, usage, inventory = example
    with pytest.raises(ValueError, match="usage: missing required column 'util'"):
        gpucost.allocate(costs, usage.drop(columns="util"), inventory)
    with pytest.raises(ValueError, match="costs: missing required column 'cost'"):
        gpucost.allocate(costs.drop(columns="cost"), usage, inventory)


def test_non_positive_duration_and_interval(example):
    costs, usage, inventory = example
    with pytest.raises(gpucost.InvalidInputError, match="usage: row 7, column 'duration'"):
        gpucost.allocate(costs, usage.assign(duration=60.0).pipe(_bad, 7, "duration", 0.0), inventory)
    with pytest.raises(gpucost.InvalidInputError, match="'interval'"):
        gpucost.allocate(costs, usage, inventory, interval=0)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"basis": "usage"}, "unknown basis 'usage'"),
    ({"idle": "drop"}, "unknown idle mode 'drop'"),
    ({"by": ["period"], "freq": "W"}, "unknown freq 'W'"),
    ({"by": ["period"]}, "'freq': required"),
    ({"basis": "blended", "alpha": 1.5}, "'alpha'"),
    ({"by": ["team"]}, "unknown column 'team'"),
])
def test_bad_parameters(example, kwargs, message):
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.allocate(*example, **kwargs)


def test_reserved_label_value_and_conflicting_workloads(example):
    workloads = pd.DataFrame({"consumer": ["train-a", "nb-b"], "team": ["ml", "__idle__"]})
    with pytest.raises(gpucost.InvalidInputError, match="workloads: row 1, column 'team'"):
        gpucost.allocate(*example, workloads, by=["team"])
    workloads = pd.DataFrame({"consumer": ["train-a", "train-a"], "team": ["ml", "web"]})
    with pytest.raises(gpucost.InvalidInputError, match="workloads: row 1, column 'team'"):
        gpucost.allocate(*example, workloads, by=["team"])


def test_missing_timestamp_is_named(example):
    costs, usage, inventory = example
    usage = usage.copy()
    usage.loc[11, "timestamp"] = pd.NaT
    with pytest.raises(gpucost.InvalidInputError, match="usage: row 11, column 'timestamp'"):
        gpucost.allocate(costs, usage, inventory)


def test_non_numeric_column_is_named(example):
    costs, usage, inventory = example
    with pytest.raises(gpucost.InvalidInputError, match="usage: column 'util': not numeric"):
        gpucost.allocate(costs, usage.assign(util="busy"), inventory)


# ---- streaming ----

def test_streaming_allocator_equals_allocate():
    fleet = simulate_fleet(gpus=16, hours=6)
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "period"],
                                freq="h")
    shuffled = fleet.usage.sample(frac=1.0, random_state=3)
    allocator = gpucost.Allocator(fleet.costs, fleet.inventory, fleet.workloads, by=["team", "period"], freq="h")
    for chunk in np.array_split(np.arange(len(shuffled)), 13):
        allocator.add(shuffled.iloc[chunk])
    result = allocator.finish()
    assert_frames_close(result, expected, rel=1e-12)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]


def test_streaming_error_is_sticky(example):
    costs, usage, inventory = example
    allocator = gpucost.Allocator(costs, inventory)
    allocator.add(usage)
    with pytest.raises(gpucost.InvalidInputError, match="usage: row 125, column 'share'"):
        allocator.add(_bad(usage, 5, "share", 7.0))
    with pytest.raises(gpucost.InvalidInputError, match="row 125"):
        allocator.finish()


def test_simulated_fleet_conserves_money():
    fleet = simulate_fleet(gpus=64, hours=24)
    for kwargs in ({}, {"idle": "share"}, {"basis": "used"}, {"basis": "blended"}):
        result = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"], **kwargs)
        assert result["cost"].sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-12)
