"""Spot placement: AWS describe-spot-price-history JSON and CSV, time-weighted
prices by zone, volatility, interruptions, what moving a job would have saved."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import gpucost

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "spot")
JSON = os.path.join(DATA, "describe-spot-price-history.json")
CSV = os.path.join(DATA, "spot-prices.csv")
DAY = {"start": "2026-03-01", "end": "2026-03-02"}


def test_json_and_csv_read_the_same():
    from_json = gpucost.read_spot_prices(JSON)
    from_csv = gpucost.read_spot_prices(CSV)
    pd.testing.assert_frame_equal(from_json, from_csv)
    assert list(from_json.columns) == ["instance_type", "zone", "region", "product", "timestamp", "price"]
    assert set(from_json["region"]) == {"us-east-1", "us-west-2"}
    with open(JSON, encoding="utf-8") as handle:
        pages = [json.load(handle)]
    pd.testing.assert_frame_equal(gpucost.read_spot_prices(pages), from_json)


def test_time_weighted_prices_by_zone():
    out = gpucost.spot_placement(JSON, **DAY).set_index(["instance_type", "zone"])
    a = out.loc[("g5.xlarge", "us-east-1a")]
    assert a["mean_price"] == pytest.approx(0.45)  # 0.42 for 12 h, 0.48 for 12 h
    assert a["std"] == pytest.approx(0.03)
    assert a["volatility"] == pytest.approx(0.03 / 0.45)
    assert (a["min_price"], a["max_price"], a["latest_price"], a["changes"]) == (0.42, 0.48, 0.48, 2)
    b = out.loc[("g5.xlarge", "us-east-1b")]  # priced before the window: holds all day
    assert b["mean_price"] == pytest.approx(0.30) and b["changes"] == 0 and b["coverage"] == 1.0
    c = out.loc[("g5.xlarge", "us-east-1c")]
    assert c["mean_price"] == pytest.approx((18 * 0.35 + 6 * 0.25) / 24)
    assert c["std"] == pytest.approx(np.sqrt((18 * 0.025**2 + 6 * 0.075**2) / 24))
    ranks = out.loc["g5.xlarge", "rank"].to_dict()
    assert ranks == {"us-west-2a": 1, "us-east-1b": 2, "us-east-1c": 3, "us-east-1a": 4}
    assert out.loc[("g5.xlarge", "us-east-1a"), "premium_vs_cheapest"] == pytest.approx(0.45 / 0.20 - 1)
    assert out.loc[("p4d.24xlarge", "us-east-1a"), "rank"] == 1


def test_interruptions_join_by_zone():
    events = pd.DataFrame({"instance_type": ["g5.xlarge"] * 3, "zone": ["us-east-1b", "us-east-1b", "us-east-1a"],
                           "timestamp": pd.to_datetime(["2026-03-01 05:00", "2026-03-01 07:00", "2026-02-01 00:00"],
                                                       utc=True)})
    out = gpucost.spot_placement(JSON, interruptions=events, **DAY).set_index(["instance_type", "zone"])
    assert out.loc[("g5.xlarge", "us-east-1b"), "interruptions"] == 2
    assert out.loc[("g5.xlarge", "us-east-1a"), "interruptions"] == 0  # outside the window
    rates = pd.DataFrame({"instance_type": ["g5.xlarge"], "region": ["us-east-1"], "rate": [0.08]})
    out = gpucost.spot_placement(JSON, interruptions=rates, **DAY)
    g5 = out[out["instance_type"] == "g5.xlarge"]
    assert g5.loc[g5["region"] == "us-east-1", "interruption_rate"].eq(0.08).all()
    assert g5.loc[g5["region"] == "us-west-2", "interruption_rate"].isna().all()
    assert out.loc[out["instance_type"] == "p4d.24xlarge", "interruption_rate"].isna().all()


def job(zone: str | None = "us-east-1a", start: str = "2026-03-01 10:00", hours: int = 4) -> pd.DataFrame:
    periods = pd.date_range(start, periods=hours, freq="h", tz="UTC")
    frame = pd.DataFrame({"job": "j1", "instance_type": "g5.xlarge", "region": "us-east-1", "period": periods,
                          "instance_hours": 2.0, "cost": 2 * 1.006})
    return frame.assign(zone=zone) if zone else frame


def test_moving_a_job_within_its_region_and_anywhere():
    near = gpucost.spot_move_savings(JSON, job()).iloc[0]
    assert near["paid"] == pytest.approx(8 * 1.006)
    assert near["cheapest_zone"] == "us-east-1b"
    assert near["cost_at_cheapest"] == pytest.approx(8 * 0.30)
    assert near["saving"] == pytest.approx(8 * (1.006 - 0.30))
    assert near["cost_at_zone"] == pytest.approx(2 * (0.42 + 0.42 + 0.48 + 0.48))
    assert near["zones_compared"] == 3
    anywhere = gpucost.spot_move_savings(JSON, job(), scope="any").iloc[0]
    assert anywhere["cheapest_zone"] == "us-west-2a"
    assert anywhere["saving"] == pytest.approx(8 * (1.006 - 0.20))


def test_hours_priced_by_the_minute():
    history = {"SpotPriceHistory": [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.40",
         "Timestamp": "2026-03-01T00:00:00.000Z", "ProductDescription": "Linux/UNIX"},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.60",
         "Timestamp": "2026-03-01T10:15:00.000Z", "ProductDescription": "Linux/UNIX"}]}
    out = gpucost.spot_move_savings(history, job(zone=None, hours=2)).iloc[0]
    # 10:00-11:00 is a quarter at 0.40 and three quarters at 0.60.
    assert out["cost_at_cheapest"] == pytest.approx(2 * (0.25 * 0.40 + 0.75 * 0.60) + 2 * 0.60)


def test_a_job_no_zone_prices_fully_is_reported_not_dropped():
    out = gpucost.spot_move_savings(JSON, job(start="2026-02-20 00:00")).iloc[0]
    assert out["zones_compared"] == 0 and np.isnan(out["saving"])


def test_bad_input():
    with pytest.raises(gpucost.InvalidInputError, match=r"prices: record 1, column 'SpotPrice': 'abc'"):
        gpucost.read_spot_prices({"SpotPriceHistory": [
            {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.4",
             "Timestamp": "2026-03-01T00:00:00Z"},
            {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "abc",
             "Timestamp": "2026-03-01T01:00:00Z"}]})
    with pytest.raises(gpucost.InvalidInputError, match=r"prices: record 0, column 'Timestamp': missing"):
        gpucost.read_spot_prices([{"AvailabilityZone": "a", "InstanceType": "g", "SpotPrice": "1",
                                   "Timestamp": None}])
    with pytest.raises(gpucost.InvalidInputError, match=r"prices: missing required column 'price'"):
        gpucost.read_spot_prices(pd.DataFrame({"instance_type": ["g"], "zone": ["z"], "timestamp": ["2026-03-01"]}))
    with pytest.raises(gpucost.InvalidInputError, match="several products"):
        gpucost.spot_placement(pd.concat([gpucost.read_spot_prices(CSV),
                                          gpucost.read_spot_prices(CSV).assign(product="Windows")]))
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'end'"):
        gpucost.spot_placement(CSV, start="2026-03-02", end="2026-03-01")


def test_bad_csv_names_the_line(tmp_path):
    path = tmp_path / "prices.csv"
    path.write_text("instance_type,zone,timestamp,price\ng5.xlarge,us-east-1a,2026-03-01T00:00:00Z,0.4\n"
                    "g5.xlarge,us-east-1a,2026-03-01T01:00:00Z,x\n")
    with pytest.raises(gpucost.InvalidInputError, match=r"prices.csv: line 3, column 'price': 'x' is not a price"):
        gpucost.read_spot_prices(str(path))
