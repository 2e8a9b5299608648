"""Inference autoscaling estimate, on the article's example: 8 x g5.xlarge at
$1.006/h, weekend traffic 15% of the weekday peak, 35% mean utilisation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from advice_data import T0, Fleet

WEEKS = 4
PEAK = 0.35 * 168 / (120 + 48 * 0.15)  # weekday utilisation giving a 35% weekly mean


def serving() -> pd.DataFrame:
    hours = pd.date_range(T0, periods=WEEKS * 168, freq="h")
    util = np.where(hours.day_of_week >= 5, 0.15 * PEAK, PEAK)
    return pd.DataFrame({"deployment": "api", "period": hours, "replicas": 8.0, "util": util})


def test_the_g5_example_scales_to_three_off_peak():
    table = serving()
    assert table["util"].mean() == pytest.approx(0.35)
    out = gpucost.autoscaling_estimate(table, target=0.6, min_replicas=3, price=1.006).iloc[0]
    # Weekdays: 8 x 0.4623 = 3.70 busy replicas -> 7 at 60%; weekends: 0.55 -> the floor of 3.
    assert out["offpeak_replicas"] == 3 and out["peak_replicas"] == 7
    assert out["saved_replica_hours"] == WEEKS * (120 * 1 + 48 * 5)
    assert out["monthly_saving"] == pytest.approx(360 * 730 / 168 * 1.006)  # $1,573.67
    assert round(out["monthly_saving"], 2) == 1573.67
    assert 1000 < out["monthly_saving"] < 2000  # the article's order of magnitude (~$1,300)
    assert out["monthly_cost_now"] == pytest.approx(8 * 730 * 1.006)
    assert out["util"] == pytest.approx(0.35)
    assert out["short_replica_hours"] == 0
    # Keeping all 8 on weekdays (a 50% target needs 8) saves the weekends only.
    weekends = gpucost.autoscaling_estimate(table, target=0.5, min_replicas=3, price=1.006).iloc[0]
    assert round(weekends["monthly_saving"], 2) == 1049.11
    assert "3 to 8 replicas" in weekends["reason"]


def test_from_an_allocation_of_the_same_fleet():
    f = Fleet()
    hours = range(WEEKS * 168)
    util = np.where(((np.arange(WEEKS * 168) // 24) % 7) >= 5, 0.15 * PEAK, PEAK)
    for k in range(8):
        f.run(f"i-{k}", "g5.xlarge", hours, f"api-{k}", util, price=1.006)
    workloads = pd.DataFrame({"consumer": [f"api-{k}" for k in range(8)], "deployment": "api"})
    hourly = gpucost.allocate(f.costs, f.usage, f.inventory, workloads, by=["deployment", "period"], freq="h",
                              interval=3600)
    out = gpucost.autoscaling_estimate(hourly, target=0.6, min_replicas=3).iloc[0]
    assert out["price"] == pytest.approx(1.006)
    assert round(out["monthly_saving"], 2) == 1573.67


def test_running_hot_is_reported_not_offset():
    table = serving().assign(replicas=2.0, util=0.9)
    out = gpucost.autoscaling_estimate(table, target=0.6, price=1.0).iloc[0]
    assert out["saved_replica_hours"] == 0 and out["monthly_saving"] == 0
    assert out["short_replica_hours"] == WEEKS * 168  # ceil(1.8 / 0.6) = 3 > 2
    assert "ran above target" in out["reason"]


def test_bad_input():
    with pytest.raises(gpucost.InvalidInputError, match="hourly: row 2, column 'util': 1.5 is above 1"):
        gpucost.autoscaling_estimate(serving().assign(util=[0.1, 0.1, 1.5] + [0.1] * (WEEKS * 168 - 3)), price=1)
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'target'"):
        gpucost.autoscaling_estimate(serving(), target=0, price=1)
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'price'"):
        gpucost.autoscaling_estimate(serving())
    with pytest.raises(gpucost.InvalidInputError, match="hourly: missing required column 'period'"):
        gpucost.autoscaling_estimate(serving().drop(columns="period"), price=1)
