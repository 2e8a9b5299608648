"""Advice a buyer can act on (issue 23): demand in the unit that is sold
(whole instances, idle GPUs of a running instance included, with the
rightsizing alternative), net of what is already bought (from the bill or a
table), and never a recommendation that loses money. Every expected number is
worked out in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from advice_data import T0, Fleet

WEEK = 168


def half_used_g5_12xlarge() -> Fleet:
    """One g5.12xlarge (4 GPUs) for two weeks; an inference service holds
    GPUs 0 and 1, GPUs 2 and 3 sit idle."""
    f = Fleet()
    f.run("i-g5-12", "g5.12xlarge", range(2 * WEEK), "api", 0.6, gpus=4, price=5.672)
    usage = f.usage
    idle = usage["device"] >= 2
    usage.loc[idle, "consumer"] = ""
    usage.loc[idle, "util"] = 0.0
    f.samples = [usage]
    return f


RATES_G5_12 = pd.DataFrame({
    "instance_type": ["g5.12xlarge"] * 3, "kind": ["on_demand", "reserved", "savings_plan"],
    "term_years": [None, 1, 1], "hourly": [5.672, 3.50, 4.20]})
CLASSES = pd.DataFrame({"consumer": ["api"], "class": ["inference"]})


def test_a_half_used_instance_is_bought_whole_with_the_rightsizing_alternative():
    f = half_used_g5_12xlarge()
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=RATES_G5_12, classes=CLASSES,
                                        interval=3600)
    # The idle half is part of the instance the service keeps running: no
    # "idle" row advising to terminate half an instance.
    assert list(advice["class"]) == ["inference"]
    row = advice.iloc[0]
    # Demand: 1 instance every hour. A reservation at 3.50 beats the savings
    # plan at 4.20: buy 1 whole instance; 5.672 * 730 = 4,140.56 today,
    # 3.50 * 730 = 2,555.00 reserved, saving 1,585.56 a month.
    assert row["mean_demand"] == pytest.approx(1.0)
    assert row["purchase"] == "reserved" and row["level"] == 1
    assert row["buy"] == "1 instance" and row["action"] == "add 1 instance"
    assert row["monthly_today"] == pytest.approx(4140.56)
    assert row["monthly_recommended"] == pytest.approx(2555.00)
    assert row["savings_vs_today"] == pytest.approx(1585.56)
    assert bool(row["recommended"])
    # The alternative: half of it is idle GPUs; a 2-GPU type would halve it.
    assert row["idle_share"] == pytest.approx(0.5)
    assert row["mean_demand_if_rightsized"] == pytest.approx(0.5)
    assert "rightsiz" in row["reason"] and "50%" in row["reason"]


def test_savings_plans_are_advised_in_dollars_an_hour():
    f = half_used_g5_12xlarge()
    rates = RATES_G5_12[RATES_G5_12["kind"] != "reserved"]
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, classes=CLASSES,
                                     interval=3600).iloc[0]
    # 1 instance at 4.20 an hour: a $4.20/h commitment, (5.672 - 4.20) * 730 = 1,074.56 saved.
    assert row["purchase"] == "savings_plan"
    assert row["buy"] == "$4.20 an hour"
    assert row["savings_vs_today"] == pytest.approx(1074.56)
    assert "$4.20 an hour" in row["reason"]


def covered_fleet() -> Fleet:
    """A p5.48xlarge under a savings plan and a g5.2xlarge under a reserved
    instance, as the bill shows them: amortised cost, list cost at on demand,
    the commitment's id on each line."""
    f = Fleet()
    f.run("i-p5", "p5.48xlarge", range(WEEK), "trainer", 0.4, gpus=8, price=60.0, list_price=98.32)
    f.run("i-g5", "g5.2xlarge", range(WEEK), "api", 0.5, price=0.75, list_price=1.212)
    return f


def covered_costs(f: Fleet) -> pd.DataFrame:
    costs = f.costs
    costs["commitment_id"] = np.where(costs["resource_id"] == "i-p5", "arn:sp-1", "arn:ri-1")
    costs["commitment_status"] = "Used"
    return costs


RATES_COVERED = pd.DataFrame({
    "instance_type": ["p5.48xlarge", "p5.48xlarge", "g5.2xlarge", "g5.2xlarge"],
    "kind": ["on_demand", "savings_plan", "on_demand", "reserved"],
    "term_years": [None, 1, None, 1], "hourly": [98.32, 70.0, 1.212, 0.80]})
CLASSES_COVERED = pd.DataFrame({"consumer": ["trainer", "api"], "class": ["inference", "inference"]})


def test_a_fleet_fully_covered_is_kept_never_a_negative_saving():
    f = covered_fleet()
    advice = gpucost.advise_commitments(covered_costs(f), f.usage, f.inventory, rates=RATES_COVERED,
                                        classes=CLASSES_COVERED, interval=3600)
    advice = advice.set_index("instance_type")
    # Both instances are covered every hour: nothing left to buy for. Today
    # (and unchanged): 60 * 730 = 43,800 and 0.75 * 730 = 547.50 a month.
    for it, today in (("p5.48xlarge", 43800.0), ("g5.2xlarge", 547.50)):
        row = advice.loc[it]
        assert row["purchase"] == "keep" and row["action"] == "keep"
        assert row["existing_coverage"] == pytest.approx(1.0) and row["existing_level"] == pytest.approx(1.0)
        assert row["net_mean_demand"] == pytest.approx(0.0)
        assert row["monthly_today"] == pytest.approx(today)
        assert row["monthly_recommended"] == pytest.approx(today)
        assert row["savings_vs_today"] == 0 and not row["recommended"]
    assert (advice["savings_vs_today"] >= 0).all()


def test_usage_billed_below_every_option_says_keep_as_is_with_the_loss():
    # The g5.2xlarge billed at 0.60/h (a negotiated rate, no commitment id):
    # on demand 1.212 and a reservation at 0.80 both cost more.
    f = Fleet()
    f.run("i-g5", "g5.2xlarge", range(WEEK), "api", 0.5, price=0.60, list_price=1.212)
    rates = RATES_COVERED[RATES_COVERED["instance_type"] == "g5.2xlarge"]
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, classes=CLASSES_COVERED.iloc[1:],
                                     interval=3600).iloc[0]
    # Today 0.60 * 730 = 438; the best change, 1 reserved at 0.80, 584: -146.
    assert row["purchase"] == "keep" and row["option"] == "keep as is" and row["level"] == 0
    assert row["savings_vs_today"] == 0 and not row["recommended"]
    assert row["savings_if_changed"] == pytest.approx(-146.0)
    assert row["monthly_recommended"] == pytest.approx(438.0)
    assert "Keep as is" in row["reason"] and "$146" in row["reason"]


def test_half_covered_by_the_bill_buys_only_the_rest():
    # Two g5.2xlarge all week; one of them under a reservation (bill: 0.75/h).
    f = Fleet()
    f.run("i-a", "g5.2xlarge", range(WEEK), "api", 0.5, price=0.75, list_price=1.212)
    f.run("i-b", "g5.2xlarge", range(WEEK), "api", 0.5, price=1.212, list_price=1.212)
    costs = f.costs
    costs["commitment_id"] = np.where(costs["resource_id"] == "i-a", "arn:ri-1", None)
    rates = RATES_COVERED[RATES_COVERED["instance_type"] == "g5.2xlarge"]
    row = gpucost.advise_commitments(costs, f.usage, f.inventory, rates=rates, classes=CLASSES_COVERED.iloc[1:],
                                     interval=3600).iloc[0]
    # Net demand 1: add 1 reservation at 0.80. Kept 0.75 * 730 = 547.50;
    # unchanged 547.50 + 1.212 * 730 = 1,432.26; recommended 547.50 + 584 =
    # 1,131.50; saving (1.212 - 0.80) * 730 = 300.76.
    assert row["mean_demand"] == pytest.approx(2.0) and row["net_mean_demand"] == pytest.approx(1.0)
    assert row["existing_coverage"] == pytest.approx(0.5)
    assert row["action"] == "add 1 instance"
    assert row["monthly_if_unchanged"] == pytest.approx(1432.26)
    assert row["monthly_recommended"] == pytest.approx(1131.50)
    assert row["savings_vs_today"] == pytest.approx(300.76)


def steady(n: int, weeks: int = 2, every: int = 1) -> Fleet:
    """`n` g5.xlarge serving; the last one only every `every`-th hour."""
    f = Fleet()
    for k in range(n):
        hours = range(0, weeks * WEEK, every if k == n - 1 else 1)
        f.run(f"i-{k}", "g5.xlarge", hours, f"api-{k}", 0.5, price=1.006)
    return f


RATES_G5 = pd.DataFrame({"instance_type": ["g5.xlarge"] * 2, "kind": ["on_demand", "reserved"],
                         "term_years": [None, 1], "hourly": [1.006, 0.62]})


def classes_of(f: Fleet) -> pd.DataFrame:
    consumers = sorted(f.usage["consumer"].unique())
    return pd.DataFrame({"consumer": consumers, "class": "inference"})


def test_a_table_of_existing_commitments_is_subtracted_hour_by_hour():
    f = steady(2)
    existing = pd.DataFrame({"instance_type": ["g5.xlarge"], "kind": ["reserved"], "count": [1], "rate": [0.62],
                             "end": [T0 + pd.Timedelta(days=800)]})
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=RATES_G5, classes=classes_of(f),
                                     existing=existing, interval=3600).iloc[0]
    # 2 instances, 1 reserved beyond the horizon: buy 1 more; saving (1.006 - 0.62) * 730 = 281.78.
    assert row["existing_level"] == pytest.approx(1.0) and row["existing_utilization"] == pytest.approx(1.0)
    assert row["existing_coverage"] == pytest.approx(0.5) and row["expiring_level"] == 0
    assert row["action"] == "add 1 instance"
    assert row["savings_vs_today"] == pytest.approx(281.78)


def test_an_expiring_reservation_is_renewed_only_if_demand_warrants():
    ends = T0 + pd.Timedelta(days=2 * 7 + 30)  # 30 days after the window: within the 90-day horizon
    existing = pd.DataFrame({"instance_type": ["g5.xlarge"], "kind": ["reserved"], "count": [2], "rate": [0.62],
                             "end": [ends]})
    f = steady(2)
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=RATES_G5, classes=classes_of(f),
                                     existing=existing, interval=3600).iloc[0]
    # Steady demand of 2: renew both. Unchanged, they lapse to on demand:
    # 2 * 1.006 * 730 = 1,468.76; renewed 2 * 0.62 * 730 = 905.20; saves 563.56.
    assert row["expiring_level"] == pytest.approx(2.0) and row["expiring_on"] == ends
    assert row["action"] == "add 2 instances"
    assert row["monthly_if_unchanged"] == pytest.approx(1468.76)
    assert row["savings_vs_today"] == pytest.approx(563.56)
    # One instance busy 20% of the hours: below the 0.62/1.006 = 62% break-even,
    # so the reservation is let expire and nothing is bought.
    f = steady(1, every=5)  # hours 0, 5, ..., 335
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=RATES_G5, classes=classes_of(f),
                                     existing=existing.assign(count=1), interval=3600).iloc[0]
    assert row["action"] == "let expire" and row["level"] == 0 and not row["recommended"]
    assert "let them expire" in row["reason"]


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "spot"}, "existing: row 0, column 'kind'"),
    ({"count": 0}, "existing: row 0, column 'count'"),
    ({"kind": "savings_plan", "count": np.nan}, "existing: row 0, column 'hourly'"),
])
def test_bad_existing_rows_name_row_and_column(change, message):
    f = steady(1)
    existing = pd.DataFrame({"instance_type": ["g5.xlarge"], "kind": ["reserved"], "count": [1.0]}).assign(**change)
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=RATES_G5, classes=classes_of(f),
                                   existing=existing, interval=3600)


def test_advise_command_takes_the_existing_commitments(capsys, tmp_path):
    from gpucost import cli
    # The demo's 8 g5.xlarge serving around the clock, 8 of them already reserved.
    existing = pd.DataFrame({"instance_type": ["g5.xlarge"], "kind": ["reserved"], "count": [8], "rate": [0.62]})
    existing.to_csv(tmp_path / "existing.csv", index=False)
    code = cli.main(["advise", "--demo", "--format", "csv", "--existing", str(tmp_path / "existing.csv")])
    out, err = capsys.readouterr()
    assert code == 0, err
    import io
    advice = pd.read_csv(io.StringIO(out)).set_index(["instance_type", "class"])
    row = advice.loc[("g5.xlarge", "inference")]
    assert row["existing_level"] == pytest.approx(8.0) and row["existing_coverage"] == pytest.approx(1.0)
    assert row["action"] == "keep" and row["savings_vs_today"] == 0


def test_a_precomputed_hourly_demand_table_gives_the_same_advice():
    f = half_used_g5_12xlarge()
    direct = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=RATES_G5_12, classes=CLASSES,
                                        interval=3600)
    hourly = gpucost.hourly_demand(f.costs, f.usage, f.inventory, interval=3600)
    given = gpucost.advise_commitments(None, None, None, rates=RATES_G5_12, classes=CLASSES, demand=hourly)
    pd.testing.assert_frame_equal(given, direct)
    with pytest.raises(gpucost.InvalidInputError, match="demand: row 0, column 'instance_hours'"):
        gpucost.advise_commitments(None, None, None, rates=RATES_G5_12, classes=CLASSES,
                                   demand=hourly.assign(instance_hours=-1.0))


def test_cuds_are_advised_in_the_unit_each_is_sold_in():
    f = half_used_g5_12xlarge()
    on_demand = RATES_G5_12[RATES_G5_12["kind"] == "on_demand"]
    # A spend-based (flexible) CUD at 4.00 per instance-hour of 5.672 on
    # demand: 1 instance is $5.67 an hour of on-demand spend, charged 4.00;
    # saves (5.672 - 4.00) * 730 = 1,220.56 a month.
    spend = pd.concat([on_demand, pd.DataFrame({"instance_type": ["g5.12xlarge"], "kind": ["cud"], "term_years": [1],
                                                "hourly": [4.00], "flexible": [True]})], ignore_index=True)
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=spend, classes=CLASSES,
                                     interval=3600).iloc[0]
    assert row["purchase"] == "cud" and row["sold_in"] == "$ an hour of on-demand spend"
    assert row["buy"] == "$5.67 an hour of on-demand spend"
    assert row["commitment_per_hour"] == pytest.approx(4.00)
    assert row["savings_vs_today"] == pytest.approx(1220.56)
    # A resource-based CUD (not flexible) is bought in whole units.
    resource = spend.assign(flexible=False)
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=resource, classes=CLASSES,
                                     interval=3600).iloc[0]
    assert row["sold_in"] == "instances" and row["buy"] == "1 instance"
    # A spend-based CUD already held ($5.672 of on-demand spend an hour at
    # 5.672 per instance-hour: 1 instance) covers the whole demand: keep.
    held = pd.DataFrame({"instance_type": ["g5.12xlarge"], "kind": ["cud"], "hourly": [5.672], "rate": [5.672]})
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=spend, classes=CLASSES, existing=held,
                                     interval=3600).iloc[0]
    assert row["existing_level"] == pytest.approx(1.0) and row["action"] == "keep"
    assert row["savings_vs_today"] == 0


def test_unused_convertible_reservations_are_converted_to_the_type_demand_moved_to():
    """3 convertible g5.xlarge reservations (0.62) with 1 g5.xlarge left
    serving: 2 are unused every hour. Demand moved to 2 g5.2xlarge (1.212 on
    demand, reserved 0.80): the advice there is add 2 (saving (1.212 - 0.80)
    * 2 * 730 = 601.52). Exchanging k = 2 g5.xlarge (worth 2 * 0.62 = 1.24 an
    hour) needs n = ceil(1.24 / 0.80) = 2 g5.2xlarge; the 2 * 0.62 * 730 =
    905.20 a month they cost for nothing today buys demand instead."""
    f = Fleet()
    f.run("i-x", "g5.xlarge", range(2 * WEEK), "api-x", 0.5, price=1.006)
    for k in range(2):
        f.run(f"i-2x-{k}", "g5.2xlarge", range(2 * WEEK), f"api-2x-{k}", 0.5, price=1.212)
    rates = pd.DataFrame({"instance_type": ["g5.xlarge", "g5.xlarge", "g5.2xlarge", "g5.2xlarge"],
                          "kind": ["on_demand", "reserved", "on_demand", "reserved"],
                          "term_years": [None, 1, None, 1], "hourly": [1.006, 0.62, 1.212, 0.80]})
    existing = pd.DataFrame({"instance_type": ["g5.xlarge"], "kind": ["reserved"], "count": [3], "rate": [0.62],
                             "convertible": [True]})
    advice = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, classes=classes_of(f),
                                        existing=existing, interval=3600).set_index("instance_type")
    small, large = advice.loc["g5.xlarge"], advice.loc["g5.2xlarge"]
    assert small["purchase"] == "convert" and small["convert_to"] == "g5.2xlarge"
    assert (small["convert_units"], small["converted_into"]) == (2, 2)
    assert small["action"] == "convert 2 instances of g5.xlarge into 2 instances of g5.2xlarge"
    assert small["savings_vs_today"] == pytest.approx(905.20) and bool(small["recommended"])
    assert small["monthly_if_unchanged"] - small["monthly_recommended"] == pytest.approx(905.20)
    assert large["action"] == "add 2 instances" and large["savings_vs_today"] == pytest.approx(601.52)
    assert "2 instances of these can come from converting 2 unused convertible g5.xlarge" in large["reason"]
    # Standard (not convertible) reservations are not converted.
    plain = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, classes=classes_of(f),
                                       existing=existing.drop(columns="convertible"),
                                       interval=3600).set_index("instance_type")
    assert plain.loc["g5.xlarge", "purchase"] == "keep" and plain.loc["g5.xlarge", "savings_vs_today"] == 0
    # Demand that left g5.xlarge entirely: all 3 are spare; 3 * 0.62 = 1.86
    # an hour is worth ceil(1.86 / 0.80) = 3 g5.2xlarge, more than the 2
    # advised, so only floor(2 * 0.80 / 0.62) = 2 are converted (905.20).
    moved = Fleet()
    for k in range(2):
        moved.run(f"i-2x-{k}", "g5.2xlarge", range(2 * WEEK), f"api-2x-{k}", 0.5, price=1.212)
    advice = gpucost.advise_commitments(moved.costs, moved.usage, moved.inventory, rates=rates,
                                        classes=classes_of(moved), existing=existing,
                                        interval=3600).set_index("instance_type")
    small = advice.loc["g5.xlarge"]
    assert small["class"] == "none" and small["mean_demand"] == 0
    assert (small["convert_units"], small["converted_into"]) == (2, 2)
    assert small["savings_vs_today"] == pytest.approx(905.20)
    assert (advice["savings_vs_today"] >= 0).all()
    # Only reservations are convertible.
    with pytest.raises(gpucost.InvalidInputError, match="existing: row 0, column 'convertible'"):
        gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates, classes=classes_of(f),
                                   existing=existing.assign(kind="cud"), interval=3600)


def test_a_table_of_reservations_leaves_the_bills_savings_plan_in_place():
    """`existing=` names only the g5.2xlarge reservation (ending 30 days
    after the window); the p5's savings plan stays as the bill shows it, so
    nothing is bought again for the p5 (a reserved p5 at 57 < 60 would
    otherwise look like a saving). The reservation is renewed at 0.80 against
    1.212 once it lapses: (1.212 - 0.80) * 730 = 300.76."""
    f = covered_fleet()
    rates = pd.concat([RATES_COVERED, pd.DataFrame({"instance_type": ["p5.48xlarge"], "kind": ["reserved"],
                                                    "term_years": [1], "hourly": [57.0]})], ignore_index=True)
    existing = pd.DataFrame({"instance_type": ["g5.2xlarge"], "kind": ["reserved"], "count": [1], "rate": [0.75],
                             "end": [T0 + pd.Timedelta(days=7 + 30)]})
    advice = gpucost.advise_commitments(covered_costs(f), f.usage, f.inventory, rates=rates,
                                        classes=CLASSES_COVERED, existing=existing,
                                        interval=3600).set_index("instance_type")
    p5, g5 = advice.loc["p5.48xlarge"], advice.loc["g5.2xlarge"]
    assert p5["action"] == "keep" and p5["existing_coverage"] == pytest.approx(1.0)
    assert p5["savings_vs_today"] == 0 and p5["monthly_recommended"] == pytest.approx(43800.0)
    assert g5["expiring_level"] == pytest.approx(1.0) and g5["action"] == "add 1 instance"
    assert g5["savings_vs_today"] == pytest.approx(300.76)


def test_report_command_takes_rates_and_existing(tmp_path):
    from gpucost import cli
    existing = pd.DataFrame({"instance_type": ["g5.xlarge"], "kind": ["reserved"], "count": [8], "rate": [0.62]})
    existing.to_csv(tmp_path / "existing.csv", index=False)
    out = tmp_path / "r.html"
    assert cli.main(["report", "--demo", "--no-progress", "--existing", str(tmp_path / "existing.csv"),
                     "-o", str(out)]) == 0
    assert "Already bought: 8.00 instances/h covering 100% of this demand" in out.read_text()


def test_training_already_on_spot_is_kept_not_moved_at_a_loss():
    """A p4d trains on spot (11.00 an hour, list 32.77) all week. The advice
    prices spot with the 10 % interruption overhead (12.10), so "move to
    spot" would cost (12.10 - 11.00) * 730 = 803.00 a month more than the
    bill: the row says keep, with that loss in savings_if_changed."""
    f = Fleet()
    f.run("i-p4d", "p4d.24xlarge", range(WEEK), "train", 0.9, gpus=8, price=11.0, list_price=32.77, pricing="spot")
    rates = pd.DataFrame({"instance_type": ["p4d.24xlarge"] * 3, "kind": ["on_demand", "savings_plan", "spot"],
                          "term_years": [None, 1, None], "hourly": [32.77, 24.0, 11.0]})
    row = gpucost.advise_commitments(f.costs, f.usage, f.inventory, rates=rates,
                                     classes=pd.DataFrame({"consumer": ["train"], "class": ["training"]}),
                                     interval=3600).iloc[0]
    assert row["action"] == "keep" and row["savings_vs_today"] == 0 and not row["recommended"]
    assert row["monthly_if_unchanged"] == pytest.approx(8030.0)
    assert row["savings_if_changed"] == pytest.approx(-803.0)
    assert "already on spot is billed without the 10% interruption overhead" in row["reason"]


def test_the_reports_advice_totals_only_recommended_changes():
    """The issue's fleet in one report: a p5 under a savings plan (keep, 0),
    a g5.12xlarge half used (add 1 instance, 1,585.56) and a p4d training on
    spot (keep: a move would lose 803.00). The table's savings add up to
    1,585.56 and none is negative."""
    pytest.importorskip("matplotlib")
    f = Fleet()
    f.run("i-p5", "p5.48xlarge", range(WEEK), "serve", 0.4, gpus=8, price=60.0, list_price=98.32)
    f.run("i-g5-12", "g5.12xlarge", range(WEEK), "api", 0.6, gpus=4, price=5.672)
    f.run("i-p4d", "p4d.24xlarge", range(WEEK), "train", 0.9, gpus=8, price=11.0, list_price=32.77, pricing="spot")
    usage = f.usage
    idle = (usage["resource_id"] == "i-g5-12") & (usage["device"] >= 2)
    usage.loc[idle, "consumer"] = ""
    usage.loc[idle, "util"] = 0.0
    f.samples = [usage]
    costs = f.costs
    costs["commitment_id"] = np.where(costs["resource_id"] == "i-p5", "arn:sp-1", None)
    rates = pd.concat([RATES_G5_12, pd.DataFrame({
        "instance_type": ["p5.48xlarge", "p5.48xlarge", "p4d.24xlarge", "p4d.24xlarge", "p4d.24xlarge"],
        "kind": ["on_demand", "savings_plan", "on_demand", "savings_plan", "spot"],
        "term_years": [None, 1, None, 1, None], "hourly": [98.32, 70.0, 32.77, 24.0, 11.0]})], ignore_index=True)
    workloads = pd.DataFrame({"consumer": ["serve", "api", "train"], "team": ["a", "b", "c"],
                              "workload-class": ["serving", "serving", "training"]})
    r = gpucost.report(costs, f.usage, f.inventory, workloads, by=["team"], rates=rates, analyses=["advice"],
                       interval=3600)
    advice = r.data["commitment_advice"].set_index("instance_type")
    assert advice.loc["g5.12xlarge", "savings_vs_today"] == pytest.approx(1585.56)
    assert advice.loc["p5.48xlarge", "action"] == "keep" and advice.loc["p4d.24xlarge", "action"] == "keep"
    assert advice.loc["p4d.24xlarge", "savings_if_changed"] == pytest.approx(-803.0)
    from test_report import parse
    shown = pd.DataFrame(parse(r.html).tables["advice"])
    assert (shown["savings_vs_today"] >= 0).all()
    assert shown["savings_vs_today"].sum() == pytest.approx(1585.56)
