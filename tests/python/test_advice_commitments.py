"""Commitment advice: the quantile rule against brute force, amortisation to
the cent, hourly demand conservation, and the advice on hand-built fleets
(steady inference, bursty training, development), sensitivity, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import _core
from advice_data import FOCUS_DIR, Fleet, business_hours, diurnal

WEEK = 168


def rates_g5() -> pd.DataFrame:
    # g5.xlarge: on demand 1.006; 1-year RIs amortising to 0.62; a 3-year
    # all-upfront one at 0.42; a savings plan at 0.70; spot 0.35.
    return pd.DataFrame({
        "instance_type": ["g5.xlarge"] * 6,
        "kind": ["on_demand", "reserved", "reserved", "reserved", "savings_plan", "spot"],
        "term_years": [None, 1, 1, 3, 1, None],
        "upfront": [0.0, 0.0, 2715.60, 11037.60, 0.0, 0.0],
        "hourly": [1.006, 0.62, 0.31, 0.0, 0.70, 0.35],
    })


def inference_fleet(weeks: int = 2) -> Fleet:
    """Two g5.xlarge serving around the clock, two more on weekdays 08-20."""
    f = Fleet()
    always = range(weeks * WEEK)
    f.run("i-a", "g5.xlarge", always, "api-0", diurnal(always, 0.2, 0.7), price=1.006)
    f.run("i-b", "g5.xlarge", always, "api-1", diurnal(always, 0.2, 0.7), price=1.006)
    busy = business_hours(weeks)
    f.run("i-c", "g5.xlarge", busy, "api-2", 0.5, price=1.006, label="serving")
    f.run("i-d", "g5.xlarge", busy, "api-3", 0.5, price=1.006, label="serving")
    return f


def test_quantile_rule_equals_brute_force_on_random_curves():
    rng = np.random.default_rng(6)
    for trial in range(200):
        hours = int(rng.integers(1, 300))
        demand = rng.poisson(3, hours).astype(float) if trial % 2 else rng.uniform(0, 9, hours)
        rx = float(rng.uniform(0.3, 30))
        rc = rx * float(rng.uniform(0.05, 1.2))
        for whole in (0, 1):
            got = _core.solve_commitments(demand, hours, np.zeros(1, np.int32), np.array([rc]), np.array([rx]),
                                          np.array([whole], np.uint8), np.ones(1), np.full(1, np.nan), 168)
            candidates = np.arange(0, np.ceil(demand.max()) + 1) if whole else np.unique(np.append(demand, 0.0))
            costs = rc * candidates * hours + rx * np.maximum(demand[None, :] - candidates[:, None], 0).sum(1)
            expected = candidates[np.argmin(costs)]  # first (smallest) minimiser
            assert got["level"][0] == expected, (trial, whole)
            # Closed form: the (1 - rc/rx) quantile (inverted CDF) of demand.
            if not whole and rc < rx:
                k = int(np.ceil(hours * (1 - rc / rx)))
                assert got["level"][0] == np.sort(demand)[k - 1]


@pytest.mark.parametrize(("upfront", "hourly", "years", "per_hour"), [
    (8760.00, 0.0, 1, 1.00), (4380.00, 0.50, 1, 1.00), (0.0, 1.00, 1, 1.00), (26280.00, 0.0, 3, 1.00),
    (2715.60, 0.31, 1, 0.62), (11037.60, 0.0, 3, 0.42),
])
def test_amortisation_to_the_cent(upfront, hourly, years, per_hour):
    months = gpucost.amortize(upfront, hourly, years, "2026-01-01")
    assert len(months) == 12 * years
    assert months["hours"].sum() == 8760 * years
    assert months["upfront_cents"].sum() == round(upfront * 100)
    assert months["recurring_cents"].sum() == round(hourly * 8760 * years * 100)
    # January has 744 hours: 744 * per_hour to the cent.
    assert months["total_cents"].iat[0] == round(744 * per_hour * 100)
    assert (months["total"] == months["total_cents"] / 100).all()


def test_amortisation_of_the_focus_purchase_scenarios():
    """FOCUS: 8,760.00 one-time for a year (scenario 1), or 4,380.00 one-time
    plus 0.50 recurring (scenario 3): both amortise to 1.00 an hour."""
    import os
    one = os.path.join(FOCUS_DIR, "commitment_discount_purchase_scenario_1.csv")
    three = os.path.join(FOCUS_DIR, "commitment_discount_purchase_scenario_3.csv")
    if not (os.path.exists(one) and os.path.exists(three)):
        pytest.skip("../shared/data/focus-spec-examples not present")
    s1 = pd.read_csv(one)
    s3 = pd.read_csv(three)
    upfront = float(s1.loc[s1["ChargeFrequency"] == "One-Time", "BilledCost"].iat[0])
    assert gpucost.amortize(upfront, 0.0, 1, s1["ChargePeriodStart"].iat[0])["total"].iat[0] == 744.00
    partial_upfront = float(s3.loc[s3["ChargeFrequency"] == "One-Time", "BilledCost"].iat[0])
    recurring = float(s3.loc[s3["ChargeFrequency"] == "Recurring", "BilledCost"].iat[0])
    months = gpucost.amortize(partial_upfront, recurring, 1, s3["ChargePeriodStart"].iat[0])
    assert months["total"].iat[0] == 744.00
    assert months["total_cents"].sum() == 876000


def test_hourly_demand_conserves_hours_and_money():
    f = inference_fleet(1)
    f.run("i-e", "g5.xlarge", range(10, 30), "", 0.0, price=1.006)  # billed, nobody on it
    costs = f.costs
    costs.loc[0, "end"] = costs.loc[0, "start"] + pd.Timedelta(minutes=90)  # a line across an hour boundary
    demand = gpucost.hourly_demand(costs, f.usage, f.inventory, f.workloads, interval=3600)
    hours = (costs["end"] - costs["start"]).dt.total_seconds().sum() / 3600
    assert demand["instance_hours"].sum() == pytest.approx(hours, rel=1e-12)
    assert demand["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-12)
    idle = demand[demand["consumer"] == "__idle__"]
    assert idle.loc[idle["resource_id"] == "i-e", "instance_hours"].sum() == pytest.approx(20)
    assert set(demand["instance_type"]) == {"g5.xlarge"}


def test_steady_inference_gets_a_reservation_of_its_base():
    f = inference_fleet(2)
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, f.workloads, rates=rates_g5(),
                                        interval=3600)
    row = advice.set_index("class").loc["inference"]
    # Demand: 2 instances 64% of the hours, 4 the rest. Every option's
    # (1 - r_c/r_o) quantile is 2: commit to the base, not the peak.
    assert row["level"] == 2
    assert row["purchase"] == "reserved"
    assert row["term_years"] == 3 and row["payment"] == "all_upfront"  # 0.42/h is the cheapest
    assert row["rate"] == pytest.approx(11037.60 / 26280)
    assert row["expected_utilization"] == pytest.approx(1.0)
    mean = (2 * 2 * WEEK + 2 * 120) / (2 * WEEK)
    assert row["mean_demand"] == pytest.approx(mean)
    assert row["monthly_today"] == pytest.approx(mean * 1.006 * 730)
    assert row["monthly_recommended"] == pytest.approx((2 * 0.42 + (mean - 2) * 1.006) * 730)
    assert row["savings_vs_today"] == pytest.approx(2 * (1.006 - 0.42) * 730)
    assert row["break_even_utilization"] == pytest.approx(0.42 / 1.006)
    assert row["risk_worst_week_unused_share"] == 0
    # Demand -20% (1.6 base, 3.2 peak): 2 reserved still beat 1 (worked out in
    # docs/advisor.md); +20% (2.4, 4.8): 3 beat 2.
    assert row["level_if_demand_down"] == 2 and row["level_if_demand_up"] == 3
    assert "reservation" in row["reason"] and "0.42" in row["reason"]


def test_sensitivity_figures_are_the_same_level_under_scaled_demand():
    f = inference_fleet(2)
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, f.workloads, rates=rates_g5(),
                                        interval=3600, sensitivity=0.25)
    row = advice.set_index("class").loc["inference"]
    # Demand x0.75: 1.5 instances at night, 3 in business hours (120 of 168 h
    # a week at the base). With 2 reserved at 0.42: nights leave 0.5 unused.
    base_hours, busy_hours = 2 * WEEK - 2 * 60, 2 * 60
    od = (base_hours * 1.5 + busy_hours * 3.0) / (2 * WEEK) * 1.006
    with_reservation = 2 * 0.42 + busy_hours * (3.0 - 2) / (2 * WEEK) * 1.006
    assert row["savings_if_demand_down"] == pytest.approx((od - with_reservation) * 730)


def test_training_is_never_reserved_and_goes_to_spot():
    f = Fleet()
    # Two p4d.24xlarge training 18 h twice a week (the article's bursts).
    bursts = [w * WEEK + d * 24 + h for w in range(2) for d in (1, 4) for h in range(18)]
    for k in range(2):
        f.run(f"i-t{k}", "p4d.24xlarge", bursts, f"train-{k}", 0.9, gpus=8, price=32.77)
    rates = pd.DataFrame({"instance_type": ["p4d.24xlarge"] * 4, "kind": ["reserved", "reserved", "savings_plan", "spot"],
                          "term_years": [1, 3, 1, None], "upfront": 0.0, "hourly": [20.5, 13.0, 24.0, 11.0]})
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, interval=3600)
    row = advice.set_index("class").loc["training"]
    assert row["purchase"] == "spot" and row["level"] == 0
    assert row["excess_rate"] == pytest.approx(11.0 * 1.10)
    window = (WEEK + 4 * 24 + 17) - 24 + 1  # first burst hour to last
    assert row["hours"] == window
    assert row["mean_demand"] == pytest.approx(2 * 72 / window)
    assert row["monthly_recommended"] == pytest.approx(2 * 72 / window * 12.1 * 730)
    assert row["monthly_today"] == pytest.approx(2 * 72 / window * 32.77 * 730)
    assert "no reserved capacity" in row["reason"]
    detail = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, interval=3600, detail=True)
    assert "reserved" not in set(detail.loc[detail["class"] == "training", "purchase"])


def test_training_without_spot_gets_a_small_flexible_commitment_not_its_peak():
    f = Fleet()
    # One instance trains around the clock; three more join in bursts.
    f.run("i-base", "p4d.24xlarge", range(2 * WEEK), "train-base", 0.9, gpus=8, price=32.77)
    bursts = [w * WEEK + d * 24 + h for w in range(2) for d in (1, 4) for h in range(18)]
    for k in range(3):
        f.run(f"i-b{k}", "p4d.24xlarge", bursts, f"train-burst-{k}", 0.9, gpus=8, price=32.77)
    rates = pd.DataFrame({"instance_type": ["p4d.24xlarge"] * 3, "kind": ["reserved", "savings_plan", "on_demand"],
                          "term_years": [1, 1, None], "hourly": [13.0, 24.0, 32.77]})
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, interval=3600)
    row = advice.set_index("class").loc["training"]
    assert row["purchase"] == "savings_plan"
    assert row["level"] == pytest.approx(1.0) and row["peak_demand"] == pytest.approx(4.0)
    assert row["expected_utilization"] == pytest.approx(1.0)
    assert "not sized to its peaks" in row["reason"]


def test_development_stays_on_demand_and_idle_capacity_is_not_committed():
    f = Fleet()
    sessions = [d * 24 + h for d in range(10) for h in (10, 11, 12)]
    f.run("i-nb", "g5.xlarge", sessions, "nb-alice", 0.1, price=1.006)
    f.run("i-idle", "g5.xlarge", range(WEEK), "", 0.0, price=1.006)
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates_g5(), interval=3600)
    by_class = advice.set_index("class")
    assert by_class.loc["development", "purchase"] == "on_demand"
    assert "idle shutdown" in by_class.loc["development", "reason"]
    assert by_class.loc["idle", "purchase"] == "on_demand"
    assert by_class.loc["idle", "mean_demand"] == pytest.approx(WEEK / 229)  # window: hours 0..228
    assert "Terminate" in by_class.loc["idle", "reason"]


def test_on_demand_rate_comes_from_the_bill_when_rates_have_none():
    f = inference_fleet(1)
    rates = rates_g5()
    rates = rates[rates["kind"] != "on_demand"]
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, f.workloads, rates=rates, interval=3600)
    assert advice["on_demand_rate"].iat[0] == pytest.approx(1.006)


def test_family_grouping_counts_gpus():
    f = Fleet()
    f.run("i-1", "g5.12xlarge", range(WEEK), "api-big", diurnal(range(WEEK), 0.2, 0.6), gpus=4, price=5.672)
    f.run("i-2", "g5.xlarge", range(WEEK), "api-small", diurnal(range(WEEK), 0.2, 0.6), price=1.006)
    rates = pd.DataFrame({"family": ["g5", "g5"], "kind": ["on_demand", "savings_plan"], "term_years": [None, 1],
                          "hourly": [1.3, 0.9]})
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, group_by="family", interval=3600)
    row = advice.set_index("class").loc["inference"]
    assert row["unit"] == "GPU" and row["level"] == pytest.approx(5.0)


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r.assign(kind=["on_demand", "reserved", "lease", "reserved", "savings_plan", "spot"]),
     "rates: row 2, column 'kind': 'lease'"),
    (lambda r: r.assign(hourly=[1.006, -0.62, 0.31, 0.0, 0.70, 0.35]), "rates: row 1, column 'hourly'"),
    (lambda r: r.assign(term_years=[None, 1, None, 3, 1, None]), "rates: row 2, column 'term_years'"),
    (lambda r: r.assign(term_years=[None, 1, 1, 30, 1, None]), "rates: row 3, column 'term_years'"),
    (lambda r: r.drop(columns="kind"), "rates: missing required column 'kind'"),
])
def test_bad_rates_name_row_and_column(change, message):
    f = inference_fleet(1)
    with pytest.raises(gpucost.InvalidInputError, match=message.replace("(", r"\(")):
        gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=change(rates_g5()), interval=3600)


def test_bad_inputs_name_table_row_and_column():
    f = inference_fleet(1)
    with pytest.raises(gpucost.InvalidInputError, match="costs: missing required column 'instance_type'"):
        gpucost.advise_commitments(f.costs.drop(columns="instance_type"), f.usage, f.inventory, rates=rates_g5())
    costs = f.costs
    costs.loc[3, "cost"] = np.nan
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 3, column 'cost'"):
        gpucost.advise_commitments(costs, f.usage, f.inventory, rates=rates_g5())
    costs = f.costs
    costs.loc[5, "instance_type"] = "g5.2xlarge"
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 5, column 'instance_type'"):
        gpucost.hourly_demand(costs, f.usage, f.inventory)
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'by': period"):
        gpucost.hourly_demand(f.costs, f.usage, f.inventory, by=["consumer", "period"])
    usage = f.usage
    usage.loc[7, "util"] = 1.5
    with pytest.raises(gpucost.InvalidInputError, match="usage: row 7, column 'util'"):
        gpucost.advise_commitments(f.costs, usage, f.inventory, rates=rates_g5(), interval=3600)
    with pytest.raises(gpucost.InvalidInputError, match="no on-demand rate for instance_type 'x9.custom'"):
        gpucost.advise_commitments(f.costs.assign(list_cost=0.0, instance_type="x9.custom"), f.usage, f.inventory,
                                   rates=rates_g5().assign(instance_type="x9.custom").iloc[1:], interval=3600)
    with pytest.raises(gpucost.InvalidInputError, match="classes: no row for consumer"):
        gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates_g5(), interval=3600,
                                   classes=pd.DataFrame({"consumer": ["api-0"], "class": ["inference"]}))
    with pytest.raises(gpucost.InvalidInputError, match="workloads: row 0, column 'workload-class': 'gpu'"):
        gpucost.advise_commitments(f.costs, f.usage, f.inventory, interval=3600, rates=rates_g5(),
                                   workloads=pd.DataFrame({"consumer": ["api-2"], "workload-class": ["gpu"]}))


@pytest.mark.parametrize("form", ["arrow", "category", "str"])
def test_hourly_demand_accepts_every_table_form(form):
    import pyarrow as pa
    f = inference_fleet(1)
    costs = f.costs
    expected = gpucost.hourly_demand(costs, f.usage, f.inventory, f.workloads, interval=3600)
    if form == "arrow":
        other = pa.Table.from_pandas(costs, preserve_index=False)
    else:
        other = costs.astype({c: form for c in ("resource_id", "instance_type", "pricing", "charge_category")})
    got = gpucost.hourly_demand(other, f.usage, f.inventory, f.workloads, interval=3600)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


def test_gpu_model_grouping_uses_the_embedded_catalog():
    f = inference_fleet(1)
    rates = pd.DataFrame({"gpu_model": ["A10G 24GB"], "kind": ["reserved"], "term_years": [1], "hourly": [0.62]})
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, f.workloads, rates=rates,
                                        group_by="gpu_model", interval=3600)
    row = advice.set_index("class").loc["inference"]
    assert row["gpu_model"] == "A10G 24GB" and row["unit"] == "GPU"
    assert row["on_demand_rate"] == pytest.approx(1.006)  # the bill's list cost per GPU-hour
    assert row["level"] == 2
    with pytest.raises(gpucost.InvalidInputError, match="catalog: no GPU model for instance type 'x9.custom'"):
        gpucost.advise_commitments(f.costs.assign(instance_type="x9.custom"), f.usage, f.inventory, f.workloads,
                                   rates=rates, group_by="gpu_model", interval=3600)
    # Your own catalog rows name it.
    own = pd.DataFrame({"provider": ["onprem"], "instance_type": ["x9.custom"], "gpu_model": ["A10G 24GB"],
                        "gpus": [1], "gpu_memory_gib": [24]})
    advice = gpucost.advise_commitments(f.costs.assign(instance_type="x9.custom"), f.usage, f.inventory, f.workloads,
                                        rates=rates, group_by="gpu_model", interval=3600, catalog=own)
    assert advice.set_index("class").loc["inference", "level"] == 2
