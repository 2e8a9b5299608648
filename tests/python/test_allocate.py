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


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

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
        "lines_total": 1, "lines_unattributed": 0, "lines_unobserved": 0, "lines_oversubscribed": 0,
        "lines_primary_overlap": 0, "interval": 60.0, "samples_total": 120, "samples_duplicate": 0,
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
    allocator = gpucost.Allocator(fleet.costs, fleet.inventory, fleet.workloads, by=["team", "period"], freq="h",
                                  interval=60)
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


# ---- SEMANTICS 1-5: unobserved lines, currencies, quantities, primary lines,
# rows read twice, intervals, the join table ----

def test_line_without_any_sample_is_unobserved(example):
    costs, usage, inventory = example
    later = costs.assign(start=costs["start"] + pd.Timedelta("1h"), end=costs["end"] + pd.Timedelta("1h"), cost=5.0)
    both = pd.concat([costs, later], ignore_index=True)
    for idle in ("keep", "share"):
        result = gpucost.allocate(both, usage, inventory, idle=idle).set_index("consumer")
        row = result.loc["__unobserved__"]
        assert row["cost"] == pytest.approx(5.0)
        assert row["idle_cost"] == 0.0
        assert row["gpu_hours"] == pytest.approx(2.0)  # C / 3600: 2 GPUs for an hour
        assert row["effective_gpu_hours"] == 0.0 and row["mem_gib_hours"] == 0.0
        assert result["cost"].sum() == pytest.approx(13.0)
        assert result.attrs["diagnostics"]["lines_unobserved"] == 1
    # Free-device samples alone make a line observed: its cost is idle.
    free = usage[usage["consumer"] == ""]
    result = gpucost.allocate(costs, free, inventory)
    assert list(result["consumer"]) == ["__idle__"]


def test_unobserved_rows_in_label_columns(example):
    costs, usage, inventory = example
    workloads = pd.DataFrame({"consumer": ["train-a"], "team": ["ml"]})
    result = gpucost.allocate(costs, usage.iloc[:0], inventory, workloads, by=["team"])
    assert list(result["team"]) == ["__unobserved__"]
    with pytest.raises(gpucost.InvalidInputError, match="reserved"):
        gpucost.allocate(costs, usage.assign(consumer="__unobserved__"), inventory)


def test_two_currencies_are_never_added(example):
    costs, usage, inventory = example
    other = costs.assign(resource_id="i-2")
    bill = pd.concat([costs.assign(cost=10.0, currency="USD"), other.assign(cost=10.0, currency="EUR")],
                     ignore_index=True)
    inv = pd.concat([inventory, inventory.assign(resource_id="i-2")], ignore_index=True)
    use = pd.concat([usage, usage.assign(resource_id="i-2")], ignore_index=True)
    result = gpucost.allocate(bill, use, inv)
    assert list(result.columns[:2]) == ["consumer", "currency"]
    assert list(zip(result["consumer"], result["currency"])) == [
        ("__idle__", "EUR"), ("__idle__", "USD"), ("nb-b", "EUR"), ("nb-b", "USD"), ("train-a", "EUR"),
        ("train-a", "USD")]
    assert result.groupby("currency")["cost"].sum().to_dict() == pytest.approx({"EUR": 10.0, "USD": 10.0})
    by_team = gpucost.allocate(bill, use, inv, by=["resource_id"])
    assert list(by_team.columns[:2]) == ["resource_id", "currency"]
    join = result.attrs["join"]
    assert list(zip(join["resource_id"], join["currency"])) == [("i-1", "USD"), ("i-2", "EUR")]
    # Strings of any kind; a missing currency is refused.
    as_category = gpucost.allocate(bill.astype({"currency": "category"}), use, inv)
    assert_frames_close(as_category, result)
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 1, column 'currency'"):
        gpucost.allocate(bill.assign(currency=["USD", None]), use, inv)


def test_quantity_hours_bound_the_capacity():
    t0 = T0
    costs = pd.DataFrame({"resource_id": ["i-1"], "start": [t0], "end": [t0 + pd.Timedelta("24h")], "cost": [24.0],
                          "quantity_hours": [12.0]})
    inventory = pd.DataFrame({"resource_id": ["i-1"] * 2, "device": [0, 1], "mem_capacity": [40.0 * GIB] * 2})
    usage = pd.DataFrame({"timestamp": pd.date_range(t0, periods=360, freq="min"), "resource_id": "i-1",
                          "device": 0, "consumer": "job", "share": 1.0, "util": 1.0, "mem_used": 0.0})
    result = gpucost.allocate(costs, usage, inventory).set_index("consumer")
    assert result.loc["job", "cost"] == pytest.approx(6.0)  # 6 of C = 2 x 12 GPU-hours
    assert result.loc["__idle__", "gpu_hours"] == pytest.approx(18.0)
    assert result.attrs["join"]["billed_gpu_hours"].iloc[0] == pytest.approx(24.0)
    whole = gpucost.allocate(costs.assign(quantity_hours=np.nan), usage, inventory).set_index("consumer")
    assert whole.loc["job", "cost"] == pytest.approx(3.0)
    for bad in (0.0, -2.0, np.inf):
        with pytest.raises(gpucost.InvalidInputError, match="costs: row 0, column 'quantity_hours'"):
            gpucost.allocate(costs.assign(quantity_hours=bad), usage, inventory)


@pytest.mark.parametrize("primary", [[True, False, False], [1, 0, 0], pd.array([True, False, False], dtype="boolean")])
def test_primary_lines_count_hours_once(example, primary):
    costs, usage, inventory = example
    # One VM-hour billed as GPU, cores and memory lines (GCP): hours count once.
    skus = pd.concat([costs.assign(cost=5.0), costs.assign(cost=2.0), costs.assign(cost=1.0)], ignore_index=True)
    result = gpucost.allocate(skus.assign(primary=primary), usage, inventory).set_index("consumer")
    single = gpucost.allocate(costs.assign(cost=8.0), usage, inventory).set_index("consumer")
    assert_frames_close(result.reset_index(), single.reset_index())
    assert result.attrs["diagnostics"]["lines_primary_overlap"] == 0
    assert result.attrs["join"]["primary_lines"].iloc[0] == 1
    twice = gpucost.allocate(skus.assign(primary=[True, True, False]), usage, inventory)
    assert twice.attrs["diagnostics"]["lines_primary_overlap"] == 2
    assert twice["gpu_hours"].sum() == pytest.approx(2 * single["gpu_hours"].sum())


def test_primary_must_be_boolean(example):
    costs, usage, inventory = example
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 0, column 'primary'"):
        gpucost.allocate(costs.assign(primary=pd.array([None], dtype="boolean")), usage, inventory)
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 0, column 'primary'"):
        gpucost.allocate(costs.assign(primary=2), usage, inventory)


def test_rows_read_twice_are_dropped_and_counted(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    twice = pd.concat([usage, usage.iloc[::3]], ignore_index=True)
    result = gpucost.allocate(costs, twice, inventory)
    assert_frames_close(result, expected, rel=1e-12)
    diag = result.attrs["diagnostics"]
    assert diag["samples_duplicate"] == len(usage.iloc[::3])
    assert diag["samples_total"] == len(twice) == sum(
        diag[k] for k in ("samples_duplicate", "samples_no_consumer", "samples_unknown_resource",
                          "samples_outside_lines", "samples_used"))
    # Shuffled, with a duration column: the same.
    shuffled = twice.assign(duration=60.0).sample(frac=1.0, random_state=5)
    assert_frames_close(gpucost.allocate(costs, shuffled, inventory), expected, rel=1e-12)
    # Same series and instant, another value (two containers of one pod): kept.
    second = usage[usage["consumer"] == "nb-b"].assign(mem_used=GIB)
    both = gpucost.allocate(costs, pd.concat([usage, second], ignore_index=True), inventory)
    assert both.attrs["diagnostics"]["samples_duplicate"] == 0
    assert both.set_index("consumer").loc["nb-b", "gpu_hours"] == pytest.approx(1.0)


def test_rows_read_twice_across_chunks_of_a_stream(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    # Two Prometheus replicas saved as two files, read one after the other.
    result = gpucost.allocate_stream(costs, [usage, usage], inventory)
    assert_frames_close(result, expected, rel=1e-12)
    assert result.attrs["diagnostics"]["samples_duplicate"] == len(usage)
    assert result.attrs["diagnostics"]["samples_total"] == 2 * len(usage)


def _chunks(frame: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    return [frame.iloc[p] for p in np.array_split(np.arange(len(frame)), n)]


@pytest.mark.parametrize("step", [60, 300])
def test_interval_is_inferred_from_the_data(step):
    fleet = simulate_fleet(gpus=8, hours=2, interval=step)
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, interval=step)
    result = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory)
    assert_frames_close(result, expected, rel=1e-12)
    assert result.attrs["diagnostics"]["interval"] == step
    assert gpucost.allocate(fleet.costs, fleet.usage.assign(duration=float(step)),
                            fleet.inventory).attrs["diagnostics"]["interval"] is None


def test_interval_disagreeing_with_the_data_is_refused(example):
    costs, usage, inventory = example
    fast = usage.assign(timestamp=T0 + (usage["timestamp"] - T0) / 12)  # a sample every 5 s
    message = r"usage: row 0, column 'timestamp': the series \(resource_id 'i-1', device 0, consumer 'train-a'\) " \
              r"has a sample every 5 s, but the interval is 60 s \(given\)"
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.allocate(costs, fast, inventory, interval=60)
    with pytest.raises(gpucost.InvalidInputError, match="every 60 s, but the interval is 300 s"):
        gpucost.allocate(costs, usage, inventory, interval=300)
    assert gpucost.allocate(costs, fast, inventory).attrs["diagnostics"]["interval"] == 5.0


def test_stream_infers_the_interval_from_its_first_chunk(example):
    costs, usage, inventory = example
    expected = gpucost.allocate(costs, usage, inventory)
    in_order = usage.sort_values("timestamp", kind="stable")
    result = gpucost.allocate_stream(costs, _chunks(in_order, 4), inventory)
    assert_frames_close(result, expected, rel=1e-12)
    assert result.attrs["diagnostics"]["interval"] == 60.0
    # Shuffled chunks: the first chunk's spacing is not the data's; refused
    # at the end instead of counted wrong. A given interval is exact.
    shuffled = usage.sample(frac=1.0, random_state=2)
    with pytest.raises(gpucost.InvalidInputError, match="inferred from the first chunk"):
        gpucost.allocate_stream(costs, _chunks(shuffled, 6), inventory)
    given = gpucost.allocate_stream(costs, _chunks(shuffled, 6), inventory, interval=60)
    assert_frames_close(given, expected, rel=1e-12)
    with pytest.raises(gpucost.InvalidInputError, match="every 60 s, but the interval is 300 s"):
        gpucost.allocate_stream(costs, _chunks(shuffled, 6), inventory, interval=300)


def test_join_table(example):
    costs, usage, inventory = example
    ghost = usage.iloc[:3].assign(resource_id="i-9")
    late = costs.assign(start=costs["start"] + pd.Timedelta("2h"), end=costs["end"] + pd.Timedelta("2h"))
    bill = pd.concat([costs, late, costs.assign(resource_id="vol-1", cost=1.5)], ignore_index=True)
    result = gpucost.allocate(bill, pd.concat([usage, ghost], ignore_index=True), inventory)
    join = result.attrs["join"]
    assert list(join.columns) == [
        "resource_id", "currency", "in_inventory", "lines", "primary_lines", "lines_primary_overlap",
        "lines_oversubscribed", "cost", "cost_observed",
        "cost_unobserved", "cost_unattributed", "billed_gpu_hours", "samples", "samples_no_consumer",
        "samples_outside_lines", "samples_unknown_resource", "unjoined_gpu_hours", "lines_start", "lines_end",
        "samples_start", "samples_end"]
    assert list(join["resource_id"]) == ["i-1", "i-9", "vol-1"]
    assert list(join["currency"]) == ["", "", ""]
    assert list(join["in_inventory"]) == [True, False, False]
    i1, i9, vol = (join.iloc[k] for k in range(3))
    assert (i1["lines"], i1["cost"], i1["cost_observed"], i1["cost_unobserved"]) == (2, 16.0, 8.0, 8.0)
    assert i1["billed_gpu_hours"] == pytest.approx(4.0)
    assert (i1["samples"], i1["samples_no_consumer"]) == (120, 30)
    assert i1["lines_start"] == T0 and i1["lines_end"] == T0 + pd.Timedelta("3h")
    assert i1["samples_start"] == T0 and i1["samples_end"] == T0 + pd.Timedelta("1h")
    assert (i9["lines"], i9["samples"], i9["samples_unknown_resource"]) == (0, 3, 3)
    assert i9["unjoined_gpu_hours"] == pytest.approx(3 / 60)
    assert pd.isna(i9["lines_start"])
    assert vol["cost_unattributed"] == 1.5 and pd.isna(vol["samples_start"])
    assert str(join["lines_start"].dtype) == "datetime64[ns, UTC]"
