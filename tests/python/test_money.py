"""Numbers finance can book (docs/semantics.md): money rounded to the
currency's minor unit by largest remainder, the rounded parts adding up
exactly to the rounded totals, per cost line, per currency and overall."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpucost
from gpucost import money


def _units(values, decimals) -> np.ndarray:
    """Exact integer minor units of already rounded values."""
    return np.rint(np.asarray(values, dtype=np.float64) * 10.0 ** np.asarray(decimals)).astype(np.int64)


def _rounded_units(total: float, decimals: int) -> int:
    """The rounded total as an invoice shows it: half away from zero, float
    noise below a millionth of a minor unit ignored (0.29 * 100 is 29)."""
    scaled = round(total * 10 ** decimals, 6)
    return int(Decimal(repr(scaled)).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_minor_units():
    assert money.minor_unit("JPY") == 0 and money.minor_unit("USD") == 2 and money.minor_unit("BHD") == 3
    assert money.minor_unit("eur ") == 2 and money.minor_unit(None) == 2 and money.minor_unit("") == 2
    with pytest.raises(gpucost.InvalidInputError, match="currency 'XYZ'.*--decimals"):
        money.minor_unit("XYZ")


def test_parse_decimals():
    assert money.parse_decimals(None) is None and money.parse_decimals("auto") is None
    assert money.parse_decimals("raw") == "raw" and money.parse_decimals("3") == 3 and money.parse_decimals(0) == 0
    for bad in ("two", 12, -1, 1.5):
        with pytest.raises(gpucost.InvalidInputError, match="decimals"):
            money.parse_decimals(bad)


def test_round_parts_examples():
    assert money.round_parts([1 / 3] * 3, 2).tolist() == [0.34, 0.33, 0.33]
    # The float noise of the issue: rows of the demo bill.
    parts = money.round_parts([245.99999999999653, 95.99999999999953, 58540.63199999879], 2)
    assert parts.tolist() == [246.0, 96.0, 58540.63]
    assert money.round_parts([100.4, 100.4, 100.2], 0).tolist() == [101.0, 100.0, 100.0]  # JPY: 301; ties: first row
    assert money.round_parts([-0.005, -0.005], 2).sum() == pytest.approx(-0.01)
    nan = money.round_parts([np.nan, 1.006, np.inf], 2)
    assert np.isnan(nan[0]) and nan[1] == 1.01 and np.isinf(nan[2])
    assert money.round_half_away([1.005, -1.005, 2.5, 0.125], [2, 2, 0, 2]).tolist() == [1.01, -1.01, 3.0, 0.13]


def test_decimals_must_agree_within_a_group():
    with pytest.raises(gpucost.InvalidInputError, match="decimals differ"):
        money.round_parts([1.0, 2.0], [0, 2], by=["x", "x"])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_rounded_parts_add_up_per_line_and_overall_per_currency(data):
    """For random bills split over random consumers, the rounded parts add up
    to the rounded line cost for every line, and to the rounded bill for
    every currency; each part is within one minor unit of its exact value."""
    currencies = data.draw(st.lists(st.sampled_from(["USD", "JPY", "BHD", "EUR"]), min_size=1, max_size=3,
                                    unique=True))
    n_lines = data.draw(st.integers(1, 12))
    line_currency = [data.draw(st.sampled_from(currencies)) for _ in range(n_lines)]
    line_cost = data.draw(st.lists(st.floats(-1e4, 1e6, allow_nan=False), min_size=n_lines, max_size=n_lines))
    rows_cost, rows_line, rows_currency = [], [], []
    for i in range(n_lines):
        shares = np.asarray(data.draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8)))
        shares = shares / shares.sum() if shares.sum() > 0 else np.full(len(shares), 1 / len(shares))
        rows_cost += list(line_cost[i] * shares)
        rows_line += [i] * len(shares)
        rows_currency += [line_currency[i]] * len(shares)
    order = np.asarray(data.draw(st.permutations(range(len(rows_cost)))))
    cost = np.asarray(rows_cost)[order]
    line = np.asarray(rows_line)[order]
    cur = np.asarray(rows_currency, dtype=object)[order]
    dec = np.array([money.minor_unit(c) for c in cur])
    rounded = money.round_parts(cost, dec, by=cur, within=line)
    units = _units(rounded, dec)
    assert np.all(np.abs(rounded - cost) <= 10.0 ** -dec * (1 + 1e-6))
    for c in set(cur):
        d = money.minor_unit(c)
        in_c = cur == c
        assert units[in_c].sum() == _rounded_units(float(np.sum(cost[in_c])), d)
        line_units = [units[in_c & (line == i)].sum() for i in np.unique(line[in_c])]
        exact_lines = [float(np.sum(cost[in_c & (line == i)])) for i in np.unique(line[in_c])]
        for got, exact in zip(line_units, exact_lines):  # each line within one unit of its exact total
            assert abs(got - exact * 10 ** d) <= 1 + 1e-6 * max(1.0, abs(exact) * 10 ** d)
    # Without lines: the parts of each currency add up to its rounded total too.
    flat = _units(money.round_parts(cost, dec, by=cur), dec)
    for c in set(cur):
        assert flat[cur == c].sum() == _rounded_units(float(np.sum(cost[cur == c])), money.minor_unit(c))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1e7, allow_nan=False), min_size=1, max_size=50), st.sampled_from([0, 2, 3]))
def test_book_an_allocation_keeps_the_total(costs, decimals):
    frame = pd.DataFrame({"team": [f"t{i}" for i in range(len(costs))], "cost": costs,
                          "gpu_hours": np.asarray(costs) / 7.0})
    booked = money.book(frame, decimals=decimals)
    assert _units(booked["cost"], decimals).sum() == _rounded_units(float(np.sum(costs)), decimals)
    assert _units(booked["gpu_hours"], 3).sum() == _rounded_units(float(np.sum(np.asarray(costs) / 7.0)), 3)
    assert money.book(frame, decimals="raw") is frame


def test_book_per_currency_column_and_kinds():
    frame = pd.DataFrame({"team": ["a", "b", "c", "d"], "currency": ["JPY", "JPY", "USD", "USD"],
                          "cost": [100.4, 100.6, 1 / 3, 2 / 3], "idle_cost": [0.0, 0.0, 0.0, 0.0],
                          "gpu_hours": [1 / 3, 2 / 3, 1.0, 1.0], "effective_gpu_hours": [0.1, 0.2, 0.3, 0.4],
                          "cost_per_effective_gpu_hour": [1 / 7, 1 / 7, 1 / 7, 1 / 7],
                          "utilisation": [1 / 3, 1 / 3, 1 / 3, 1 / 3]})
    booked = money.book(frame)
    assert booked["cost"].tolist() == [100.0, 101.0, 0.33, 0.67]
    assert booked["gpu_hours"].tolist() == [0.333, 0.667, 1.0, 1.0]
    assert booked["cost_per_effective_gpu_hour"].tolist() == [0.14, 0.14, 0.1429, 0.1429]  # money + 2 decimals
    assert booked["utilisation"].tolist() == [0.3333] * 4
    assert frame["cost"].iloc[2] == 1 / 3  # the input is left alone
    with pytest.raises(gpucost.InvalidInputError, match="row 0, column 'currency': currency 'ZZZ'"):
        money.book(frame.assign(currency="ZZZ"))


def test_book_not_additive_rounds_each_value():
    frame = pd.DataFrame({"team": ["a", "b", "c"], "forecast": [1 / 3, 1 / 3, 1 / 3]})
    assert money.book(frame, additive=False)["forecast"].tolist() == [0.33, 0.33, 0.33]
