"""Budgets and forecasts: month to date, the forecast to month end with its
interval (exact on noiseless series), thresholds, anomalies and their
drivers, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost

DAYS = pd.date_range("2026-01-05", "2026-03-20", freq="D", tz="UTC")  # from a Monday
WEEKDAY = np.array([40.0, 20.0, 0.0, 10.0, 30.0, -45.0, -55.0])  # Monday..Sunday, sums to 0


def daily(noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(len(DAYS))
    nlp = pd.DataFrame({"team": "nlp", "period": DAYS, "cost": np.full(len(DAYS), 1000.0)})
    vision = pd.DataFrame({"team": "vision", "period": DAYS,
                           "cost": 300 + 2.0 * t + WEEKDAY[DAYS.day_of_week] + rng.normal(0, noise, len(DAYS))})
    return pd.concat([nlp, vision], ignore_index=True)


def budgets() -> pd.DataFrame:
    return pd.DataFrame({"key": ["team", "team", "team"], "value": ["nlp", "vision", "*"],
                         "amount": [30_000.0, 15_000.0, 60_000.0],
                         "thresholds": ["50%,80%,100%", [0.8, 1.0], None]})


def test_month_to_date_and_exact_forecasts():
    status = gpucost.budget_status(daily(), budgets(), today="2026-03-15").set_index("value")
    nlp = status.loc["nlp"]
    assert nlp["month_to_date"] == 15_000
    assert nlp["forecast"] == pytest.approx(31_000)
    assert nlp["forecast_high"] - nlp["forecast_low"] == pytest.approx(0, abs=1e-6)
    assert (nlp["days_elapsed"], nlp["days_in_month"]) == (15, 31)
    assert nlp["crossed"] == "50%" and nlp["forecast_crossed"] == "50%, 80%, 100%"
    assert nlp["status"] == "forecast over"
    assert nlp["model"] == "trend+weekday" and nlp["trend_per_day"] == pytest.approx(0, abs=1e-9)
    # vision: 300 + 2 t + weekday, t from 2026-01-05.
    t = (pd.date_range("2026-03-01", "2026-03-31", tz="UTC") - DAYS[0]).days.to_numpy()
    month = 300 + 2.0 * t + WEEKDAY[pd.date_range("2026-03-01", "2026-03-31").day_of_week]
    vision = status.loc["vision"]
    assert vision["month_to_date"] == pytest.approx(month[:15].sum())
    assert vision["forecast"] == pytest.approx(month.sum(), rel=1e-9)
    assert vision["trend_per_day"] == pytest.approx(2.0)
    assert vision["thresholds"] == "80%, 100%"
    assert status.loc["*", "month_to_date"] == pytest.approx(15_000 + month[:15].sum())
    assert status.attrs["rows_after_today_ignored"] == 2 * 5


def test_interval_widens_with_noise_and_flags_risk():
    status = gpucost.budget_status(daily(noise=25, seed=4), budgets().assign(amount=[30_000, 13_550, 60_000]),
                                   today="2026-03-15").set_index("value")
    vision = status.loc["vision"]
    assert vision["forecast_low"] < vision["forecast"] < vision["forecast_high"]
    # ~16 days of sd 25 noise: the 90% interval is roughly +-1.645 * 25 * 4 wide.
    assert 100 < vision["forecast_high"] - vision["forecast"] < 300
    assert vision["status"] in ("at risk", "forecast over")


def test_a_spike_counts_in_the_month_but_not_in_the_forecast():
    data = daily(noise=10, seed=1)
    spike = (data["team"] == "vision") & (data["period"] == "2026-03-10")
    data.loc[spike, "cost"] += 5000
    status = gpucost.budget_status(data, budgets(), today="2026-03-15").set_index("value")
    clean = gpucost.budget_status(daily(noise=10, seed=1), budgets(), today="2026-03-15").set_index("value")
    assert status.loc["vision", "anomaly_days"] == 1
    assert status.loc["vision", "month_to_date"] == pytest.approx(clean.loc["vision", "month_to_date"] + 5000)
    remaining = status.loc["vision", "forecast"] - status.loc["vision", "month_to_date"]
    clean_remaining = clean.loc["vision", "forecast"] - clean.loc["vision", "month_to_date"]
    assert remaining == pytest.approx(clean_remaining, rel=0.02)


def test_anomalies_name_the_groups_that_drove_them():
    data = daily(noise=10, seed=2)
    data.loc[(data["team"] == "vision") & (data["period"] == "2026-03-10"), "cost"] += 3000
    data.loc[(data["team"] == "nlp") & (data["period"] == "2026-03-10"), "cost"] += 1000
    out = gpucost.spend_anomalies(data, by="team")
    assert out["day"].dt.strftime("%Y-%m-%d").tolist() == ["2026-03-10"]
    row = out.iloc[0]
    assert row["top_driver"] == "team=vision"
    assert row["top_driver_excess"] == pytest.approx(3000, abs=60)
    assert row["drivers"].startswith("team=vision +$3,0") and "team=nlp +$1,0" in row["drivers"]
    assert "(75%)" in row["drivers"] and "(25%)" in row["drivers"]
    assert row["excess"] == pytest.approx(4000, abs=80)
    everything = gpucost.spend_anomalies(data, by="team", all_days=True)
    assert len(everything) == len(DAYS) and everything["anomaly"].sum() == 1


def test_a_new_group_on_the_anomalous_day_drives_it_whole():
    data = daily(noise=10, seed=3)
    new = pd.DataFrame({"team": ["audio"], "period": [pd.Timestamp("2026-03-12", tz="UTC")], "cost": [2500.0]})
    out = gpucost.spend_anomalies(pd.concat([data, new], ignore_index=True))
    assert out["top_driver"].tolist() == ["team=audio"]
    assert out["top_driver_excess"].iat[0] == pytest.approx(2500)


def test_forecast_spend_day_by_day():
    fc = gpucost.forecast_spend(daily(), by="team", through="2026-03-31", today="2026-03-15")
    nlp = fc[fc["team"] == "nlp"]
    assert len(nlp) == 16 and np.allclose(nlp["point"], 1000)
    fits = pd.DataFrame(fc.attrs["fits"]).set_index("team")
    assert fits.loc["vision", "trend"] == pytest.approx(2.0)
    assert fits.loc["vision", ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                               "sunday"]].to_numpy(float) == pytest.approx(WEEKDAY)


def test_bad_input_names_row_and_column():
    data = daily()
    with pytest.raises(gpucost.InvalidInputError, match="budgets: row 1, column 'amount'"):
        gpucost.budget_status(data, budgets().assign(amount=[1.0, 0.0, 1.0]), today="2026-03-15")
    with pytest.raises(gpucost.InvalidInputError, match="budgets: row 0, column 'key': 'project'"):
        gpucost.budget_status(data, budgets().assign(key=["project", "team", "team"]), today="2026-03-15")
    with pytest.raises(gpucost.InvalidInputError, match="budgets: row 2, column 'thresholds': 'lots'"):
        gpucost.budget_status(data, budgets().assign(thresholds=["50%", "80%", "lots"]), today="2026-03-15")
    with pytest.raises(gpucost.InvalidInputError, match="allocation_by_day: row 4, column 'cost'"):
        gpucost.budget_status(data.assign(cost=np.where(data.index == 4, np.inf, data["cost"])), budgets(),
                              today="2026-03-15")
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'today'"):
        gpucost.budget_status(data, budgets(), today="not a day")
    with pytest.raises(gpucost.InvalidInputError, match="allocation_by_day: missing required column 'period'"):
        gpucost.spend_anomalies(data.drop(columns="period"))


# Budgets that check something (issue 23, item 5).

def test_a_budget_value_that_matches_nothing_is_an_error_offering_the_case_insensitive_match():
    b = pd.DataFrame({"key": ["team"], "value": ["NLP"], "amount": [30_000.0]})
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"budgets: row 0, column 'value': 'NLP' matches no team .*did you mean 'nlp'\?"
                             r".*there are: 'nlp', 'vision'"):
        gpucost.budget_status(daily(), b, today="2026-03-15")


def test_a_budget_key_that_is_no_column_lists_the_label_columns_nearest_first():
    b = pd.DataFrame({"key": ["teams"], "value": ["nlp"], "amount": [30_000.0]})
    with pytest.raises(gpucost.InvalidInputError, match=r"budgets: row 0, column 'key': 'teams' matches no column"
                                                        r".*there are: 'team'$"):
        gpucost.budget_status(daily(), b, today="2026-03-15")


@pytest.mark.parametrize("today", ["2026-03-21", "2026-04-30", "2025-12-31"])
def test_today_outside_the_data_is_an_error(today):
    # The data runs 2026-01-05 to 2026-03-20: a budget checked after it would count 0 and say "ok".
    with pytest.raises(gpucost.InvalidInputError, match=r"parameter 'today': .* is outside the data, which runs "
                                                        r"from 2026-01-05 to 2026-03-20"):
        gpucost.budget_status(daily(), budgets(), today=today)


def test_a_monthly_bill_is_spread_over_its_days_with_a_warning():
    # A monthly-granularity CUR line: March, $3,100 -> $100 a day, not $3,100 on the 1st.
    costs = pd.DataFrame({"resource_id": ["i-1", "i-2"], "team": ["nlp", "vision"],
                          "start": pd.to_datetime(["2026-03-01 00:00", "2026-03-01 05:00"], utc=True),
                          "end": pd.to_datetime(["2026-04-01 00:00", "2026-03-01 06:00"], utc=True),
                          "cost": [3100.0, 7.0]})
    with pytest.warns(UserWarning, match="1 lines span more than one day"):
        spread = gpucost.spread_over_days(costs)
    assert len(spread) == 32 and spread["cost"].sum() == pytest.approx(3107.0, rel=1e-15)
    per_day = spread.groupby(spread["start"].dt.floor("D"))["cost"].sum()
    assert per_day.iloc[0] == pytest.approx(107.0) and np.allclose(per_day.iloc[1:], 100.0, rtol=1e-12)
    by_day = spread.assign(period=spread["start"].dt.floor("D")).groupby(["team", "period"], as_index=False)["cost"].sum()
    row = gpucost.budget_status(by_day, pd.DataFrame({"key": ["team"], "value": ["nlp"], "amount": [5000.0]}),
                                today="2026-03-15").iloc[0]
    # Month to date 15 * 100 = 1,500; the forecast 100 a day to the 31st: 3,100 (not 3,100 on the 1st
    # and a mean of 3,100 / 15 a day after it).
    assert row["month_to_date"] == pytest.approx(1500.0)
    assert row["forecast"] == pytest.approx(3100.0)
    hourly = costs.iloc[[1]]
    assert gpucost.spread_over_days(hourly) is hourly  # nothing to spread: no copy, no warning


def test_a_week_of_history_forecasts_the_mean_not_its_trend():
    """Six full days and a partial today: a trend fitted on them would bring
    the month's forecast down; with under two weeks the forecast is the mean."""
    days = pd.date_range("2026-03-01", periods=7, freq="D", tz="UTC")
    data = pd.DataFrame({"team": "nlp", "period": days, "cost": [1000.0] * 6 + [400.0]})
    budgets = pd.DataFrame({"key": ["team"], "value": ["nlp"], "amount": [30000.0]})
    row = gpucost.budget_status(data, budgets, today="2026-03-07").iloc[0]
    assert row["model"] == "mean"
    assert row["month_to_date"] == pytest.approx(6400.0)
    assert row["forecast"] == pytest.approx(6400.0 + 24 * 6400.0 / 7)
