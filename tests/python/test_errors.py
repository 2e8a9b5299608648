"""gpucost.InvalidInputError's fields: table (or file), row / line, column,
parameter, reason. Errors from C++ carry them from the builder (RowError,
LineError, TableError, ParameterError attach them to the status); errors
raised in Python give them or read them from the message. Messages are
unchanged (other tests match them)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpucost
from gpucost.errors import InvalidInputError, shift_rows
from gpucost.simulate import simulate_fleet

FOCUS_HEADER = "ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost,ResourceId\n"
FOCUS_GOOD = "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,1,i-1\n"


def fields(e: InvalidInputError) -> tuple:
    return e.table, e.row, e.line, e.column, e.parameter, e.reason


@pytest.fixture(scope="module")
def fleet():
    return simulate_fleet(gpus=8, hours=1)


def test_bad_share_names_table_row_and_column(fleet):
    usage = fleet.usage.copy()
    usage.loc[5, "share"] = 1.5
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate(fleet.costs, usage, fleet.inventory)
    assert str(caught.value) == "usage: row 5, column 'share': 1.5 is outside (0, 1]"
    assert fields(caught.value) == ("usage", 5, None, "share", None, "1.5 is outside (0, 1]")


def test_bad_csv_cell_of_a_bill_names_file_line_and_column(tmp_path):
    path = tmp_path / "bill.csv"
    path.write_text(FOCUS_HEADER + FOCUS_GOOD + "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,1,abc,i-1\n")
    with pytest.raises(InvalidInputError) as caught:
        gpucost.read_focus(str(path))
    assert str(caught.value) == f"{path}: line 3, column 'EffectiveCost': 'abc' is not a number"
    assert fields(caught.value) == (str(path), None, 3, "EffectiveCost", None, "'abc' is not a number")


def test_fields_come_from_cpp_not_from_the_message(tmp_path):
    """A file name with ': ' in it cannot be read back from the message; the
    status carries it as it was given."""
    path = tmp_path / "bill: march.csv"
    path.write_text(FOCUS_HEADER + "2025-03-01T10:00:00Z,2025-03-01T11:00:00Z,x,1,i-1\n")
    with pytest.raises(InvalidInputError) as caught:
        gpucost.read_focus(str(path))
    assert fields(caught.value) == (str(path), None, 2, "BilledCost", None, "'x' is not a number")
    assert InvalidInputError(str(caught.value)).table is None  # the message alone does not say


@pytest.mark.parametrize(("kwargs", "parameter", "reason"), [
    ({"basis": "blended", "alpha": 1.5}, "alpha", "1.5 is outside [0, 1]"),
    ({"interval": -1}, "interval", "-1 is not a positive number of seconds up to ten years"),
])
def test_bad_parameter_names_the_parameter(fleet, kwargs, parameter, reason):
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, **kwargs)
    assert str(caught.value) == f"parameter '{parameter}': {reason}"
    assert fields(caught.value) == (None, None, None, None, parameter, reason)


def test_python_side_errors_have_fields(fleet):
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate(fleet.costs, fleet.usage.drop(columns="util"), fleet.inventory)
    assert fields(caught.value) == ("usage", None, None, "util", None, "missing required column 'util'")
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate(fleet.costs, fleet.usage.assign(util="high"), fleet.inventory)
    assert (caught.value.table, caught.value.row, caught.value.column) == ("usage", None, "util")
    assert str(caught.value) == f"usage: column 'util': {caught.value.reason}"
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, threads=-1)
    assert (caught.value.parameter, caught.value.table) == ("threads", None)
    assert str(caught.value) == f"threads: {caught.value.reason}"
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, output="excel")
    assert caught.value.parameter == "output"


def test_rows_of_a_later_chunk_count_from_the_first(fleet):
    usage = fleet.usage.iloc[:300].copy()
    usage.loc[usage.index[250], "util"] = np.nan
    allocator = gpucost.Allocator(fleet.costs, fleet.inventory)
    allocator.add(usage.iloc[:200])
    with pytest.raises(InvalidInputError) as caught:
        allocator.add(usage.iloc[200:])
    assert str(caught.value).startswith("usage: row 250, column 'util': ")
    assert (caught.value.table, caught.value.row, caught.value.column) == ("usage", 250, "util")


def test_a_bad_row_of_a_usage_file_names_its_line(fleet, tmp_path):
    path = tmp_path / "usage.csv"
    usage = fleet.usage.iloc[:100].copy()
    usage.loc[usage.index[60], "share"] = 1.5
    usage.to_csv(path, index=False)
    with pytest.raises(InvalidInputError) as caught:
        gpucost.allocate_stream(fleet.costs, str(path), fleet.inventory)
    assert str(caught.value) == f"{path}: line 62, column 'share': 1.5 is outside (0, 1]"
    assert fields(caught.value) == (str(path), None, 62, "share", None, "1.5 is outside (0, 1]")


@pytest.mark.parametrize(("message", "expected"), [
    ("usage: row 17, column 'share': 1.5 is outside (0, 1]", ("usage", 17, None, "share", None,
                                                              "1.5 is outside (0, 1]")),
    ("bill.csv: line 12, column 'BilledCost': 'abc' is not a number",
     ("bill.csv", None, 12, "BilledCost", None, "'abc' is not a number")),
    ("a.csv: line 1: not a FOCUS, CUR, GCP or Azure header; set bill_format",
     ("a.csv", None, 1, None, None, "not a FOCUS, CUR, GCP or Azure header; set bill_format")),
    ("usage: column 'share': not numeric", ("usage", None, None, "share", None, "not numeric")),
    ("costs: missing required column 'end'", ("costs", None, None, "end", None, "missing required column 'end'")),
    ("parameter 'alpha': 1.5 is outside [0, 1]", (None, None, None, None, "alpha", "1.5 is outside [0, 1]")),
    ("no bill: give --bill", (None, None, None, None, None, "no bill: give --bill")),
    ("gpucost.find_idle: usage: row 3, column 'x': bad", (None, None, None, None, None,
                                                          "gpucost.find_idle: usage: row 3, column 'x': bad")),
])
def test_fields_read_from_a_message(message, expected):
    assert fields(InvalidInputError(message)) == expected


def test_given_fields_win_and_survive_pickling():
    e = InvalidInputError("usage: the row with device=3, column 'share': bad", table="usage", column="share",
                          reason="bad")
    assert fields(e) == ("usage", None, None, "share", None, "bad")
    back = pickle.loads(pickle.dumps(e))  # Dask and Spark send errors between processes
    assert str(back) == str(e) and fields(back) == fields(e)
    shifted = shift_rows(InvalidInputError("usage: row 3, column 'util': NaN", reason="NaN", table="usage", row=3,
                                           column="util"), "usage", 1000)
    assert str(shifted) == "usage: row 1003, column 'util': NaN" and shifted.row == 1003 and shifted.reason == "NaN"
    assert isinstance(e, ValueError) and isinstance(e, gpucost.Error)
