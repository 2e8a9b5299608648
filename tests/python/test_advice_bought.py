"""What was already bought: commitment utilisation and coverage from the FOCUS
specification's own examples and from CUR-style lines; spot savings as
realised on the bill."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from advice_data import read_focus_example

T = pd.Timestamp("2026-03-01 10:00", tz="UTC")


def focus(name: str) -> pd.DataFrame:
    lines = read_focus_example(name)
    if lines is None:
        pytest.skip("../shared/data/focus-spec-examples not present")
    return lines


@pytest.mark.parametrize(("name", "used", "unused", "utilization"), [
    ("commitment_discount_usage_scenario_1.csv", 1.00, 0.00, 1.0),
    ("commitment_discount_usage_scenario_2.csv", 0.00, 1.00, 0.0),
    ("commitment_discount_usage_scenario_3.csv", 0.75, 0.25, 0.75),
    ("commitment_discount_usage_scenario_4.csv", 1.00, 0.00, 1.0),
    ("zero_percent_utilization_without_commitment_discount_flexibility.csv", 0.00, 1.50, 0.0),
    ("one_hundred_percent_utilization_without_commitment_discount_flexibility.csv", 1.50, 0.00, 1.0),
    ("one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv", 2.00, 0.0, 1.0),
])
def test_utilization_of_the_focus_scenarios(name, used, unused, utilization):
    out = gpucost.commitment_utilization(focus(name), freq="D")
    assert len(out) == 1
    row = out.iloc[0]
    assert row["commitment_id"] == "<my-commitment-discount-id>"
    assert row["used"] == pytest.approx(used)
    assert row["unused"] == pytest.approx(unused)
    assert row["utilization"] == pytest.approx(utilization)


def test_purchases_and_savings_of_the_focus_flexibility_scenario():
    lines = focus("one_hundred_percent_utilization_with_commitment_discount_flexibility_with_1_resource.csv")
    row = gpucost.commitment_utilization(lines, freq=None).iloc[0]
    # Recurring purchase billed 0.50; it covered usage listed at 3.00 whose
    # amortised cost is 0.50; nothing unused.
    assert row["purchased"] == pytest.approx(0.50)
    assert row["used"] == pytest.approx(0.50) and row["utilization"] == 1.0
    assert row["on_demand_equivalent"] == pytest.approx(3.00)
    assert row["savings"] == pytest.approx(2.50)
    coverage = gpucost.commitment_coverage(lines, by="instance_type", freq=None).set_index("instance_type")
    # VM_LARGE: 3.00 of list covered by the commitment, 2.25 on demand (0.75 of an hour at 3.00).
    assert coverage.loc["VM_LARGE", "covered"] == pytest.approx(3.00)
    assert coverage.loc["VM_LARGE", "on_demand"] == pytest.approx(2.25)
    assert coverage.loc["VM_LARGE", "coverage"] == pytest.approx(3.00 / 5.25)


def cur_like_lines() -> pd.DataFrame:
    """Lines as the CUR reader normalises them: an RI covering one instance
    for 3 of 4 hours (its RIFee row carries the unused hour), a savings plan
    fully used, on-demand and spot usage."""
    hours = [T + pd.Timedelta(hours=h) for h in range(4)]
    rows = []
    for h in range(4):
        rows.append(dict(resource_id="i-ri" if h < 3 else None, start=hours[h], pricing="commitment",
                         charge_category="Usage" if h < 3 else "Purchase", instance_type="g5.xlarge",
                         commitment_id="arn:ri-1", commitment_status="Used" if h < 3 else "Unused",
                         cost=0.62, effective_cost=0.62, billed_cost=0.0 if h < 3 else 0.62,
                         list_cost=1.006 if h < 3 else 0.0))
        rows.append(dict(resource_id="i-sp", start=hours[h], pricing="commitment", charge_category="Usage",
                         instance_type="p4d.24xlarge", commitment_id="arn:sp-1", commitment_status="Used",
                         cost=20.319, effective_cost=20.319, billed_cost=32.7726, list_cost=32.7726))
        rows.append(dict(resource_id="i-od", start=hours[h], pricing="on_demand", charge_category="Usage",
                         instance_type="p4d.24xlarge", commitment_id=None, commitment_status=None,
                         cost=32.7726, effective_cost=32.7726, billed_cost=32.7726, list_cost=32.7726))
        rows.append(dict(resource_id="i-spot", start=hours[h], pricing="spot", charge_category="Usage",
                         instance_type="p4d.24xlarge", commitment_id=None, commitment_status=None,
                         cost=9.8318, effective_cost=9.8318, billed_cost=9.8318, list_cost=32.7726))
    frame = pd.DataFrame(rows)
    frame["end"] = frame["start"] + pd.Timedelta(hours=1)
    return frame


def test_cur_style_reservation_and_savings_plan():
    out = gpucost.commitment_utilization(cur_like_lines(), freq=None).set_index("commitment_id")
    assert out.loc["arn:ri-1", "used"] == pytest.approx(3 * 0.62)
    assert out.loc["arn:ri-1", "unused"] == pytest.approx(0.62)
    assert out.loc["arn:ri-1", "utilization"] == pytest.approx(0.75)
    assert out.loc["arn:ri-1", "purchased"] == pytest.approx(0.62)
    assert out.loc["arn:ri-1", "savings"] == pytest.approx(3 * 1.006 - 4 * 0.62)
    assert out.loc["arn:sp-1", "utilization"] == 1.0
    assert out.loc["arn:sp-1", "savings"] == pytest.approx(4 * (32.7726 - 20.319))
    daily = gpucost.commitment_utilization(cur_like_lines(), freq="h")
    assert len(daily) == 8 and daily["utilization"].isin([0.0, 1.0]).all()


def test_cur_style_coverage_per_instance_type():
    cov = gpucost.commitment_coverage(cur_like_lines(), freq="D").set_index("instance_type")
    p4d = cov.loc["p4d.24xlarge"]
    assert p4d["covered"] == pytest.approx(4 * 32.7726)
    assert p4d["spot"] == pytest.approx(4 * 32.7726)
    assert p4d["on_demand"] == pytest.approx(4 * 32.7726)
    assert p4d["coverage"] == pytest.approx(1 / 3)
    assert p4d["spot_share"] == pytest.approx(1 / 3)
    assert p4d["cost"] == pytest.approx(4 * (20.319 + 32.7726 + 9.8318))
    assert cov.loc["g5.xlarge", "coverage"] == pytest.approx(1.0)  # the unused row is not usage


def test_spot_savings_as_realised():
    lines = cur_like_lines()
    out = gpucost.spot_savings(lines).set_index("instance_type")
    assert out.loc["p4d.24xlarge", "spot_cost"] == pytest.approx(4 * 9.8318)
    assert out.loc["p4d.24xlarge", "savings"] == pytest.approx(4 * (32.7726 - 9.8318))
    assert out.loc["p4d.24xlarge", "savings_rate"] == pytest.approx(1 - 9.8318 / 32.7726)
    assert out.loc["p4d.24xlarge", "reference"] == "list_cost"
    # A FOCUS-style spot line whose ListCost is the spot list price shows no
    # discount, unless an on-demand rate is given.
    focus_like = lines.assign(list_cost=np.where(lines["pricing"] == "spot", lines["cost"], lines["list_cost"]))
    plain = gpucost.spot_savings(focus_like).iloc[0]
    assert plain["savings"] == 0 and plain["lines_without_discount"] == 4
    rated = gpucost.spot_savings(focus_like, on_demand_rates=pd.DataFrame(
        {"instance_type": ["p4d.24xlarge"], "hourly": [32.77]})).iloc[0]
    assert rated["savings"] == pytest.approx(4 * (32.77 - 9.8318)) and rated["reference"] == "rates"


def test_bad_input_names_row_and_column():
    lines = cur_like_lines()
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 2, column 'commitment_status': 'Partly'"):
        gpucost.commitment_utilization(lines.assign(commitment_status=lines["commitment_status"].where(
            lines.index != 2, "Partly")))
    broken = lines.copy()
    broken.loc[4, "commitment_id"] = None
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 4, column 'commitment_id'"):
        gpucost.commitment_utilization(broken)
    with pytest.raises(gpucost.InvalidInputError, match="costs: missing required column 'commitment_status'"):
        gpucost.commitment_utilization(lines.drop(columns="commitment_status"))
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'freq'"):
        gpucost.commitment_utilization(lines, freq="W")
    no_list = lines.assign(list_cost=np.nan)
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 3, column 'list_cost'"):
        gpucost.spot_savings(no_list)
