"""The demo month: deterministic, the waste it promises (docs/demo.md), files
in the formats users have (column spellings of FORMATS.md), and read back
through gpucost's readers to the same allocation as in memory."""

from __future__ import annotations

import gzip
import hashlib
import io
import json

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost.demo import CUR2_COLUMNS, FOCUS_COLUMNS, demo_fleet, write_demo_files
from gpucost.simulate import (DEMO_RI_ARN, DEMO_RI_RATE, DEMO_SP_ARN, DEMO_SP_COMMITMENT, DEMO_SP_RATE_G5,
                              simulate_demo_month)


@pytest.fixture(scope="module")
def fleet():
    return demo_fleet()


@pytest.fixture(scope="module")
def files(fleet, tmp_path_factory):
    return write_demo_files(tmp_path_factory.mktemp("demo"), fleet)


@pytest.fixture(scope="module")
def by_resource(fleet):
    result = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["resource_id"])
    return result.merge(fleet.resources, on="resource_id", how="left")


def test_deterministic(fleet, files, tmp_path):
    again = write_demo_files(tmp_path, simulate_demo_month(seed=0))
    for name, path in files.items():
        assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(again[name].read_bytes()).digest(), name
    other = simulate_demo_month(seed=1)
    assert not other.usage["util"].equals(fleet.usage["util"])


def test_money_in_equals_money_out(fleet):
    result = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"])
    assert result["cost"].sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-12)
    d = result.attrs["diagnostics"]
    assert d["samples_unknown_resource"] == 0 and d["samples_outside_lines"] == 0 and d["lines_oversubscribed"] == 0


def test_p4d_fleet_at_22_percent_with_twice_weekly_bursts(fleet, by_resource):
    p4d = by_resource[by_resource["role"] == "shared-training"]
    assert len(p4d) == 4 and set(p4d["instance_type"]) == {"p4d.24xlarge"}
    util = p4d["effective_gpu_hours"].sum() / (4 * 8 * 31 * 24)
    assert 0.20 <= util <= 0.24
    train = fleet.usage[fleet.usage["consumer"].astype(str).str.startswith("llm/")]
    days = train["timestamp"].dt.floor("D").drop_duplicates()
    assert set(days.dt.day_name()) == {"Tuesday", "Friday"}
    per_burst = train.groupby(train["timestamp"].dt.floor("D"))["timestamp"].agg(["min", "max"])
    hours = (per_burst["max"] - per_burst["min"]).dt.total_seconds() / 3600 + fleet.interval / 3600
    assert (hours == 18).all()


def test_g5_inference_weekend_at_15_percent_of_peak(fleet, by_resource):
    g5 = by_resource[by_resource["role"] == "inference"]
    assert len(g5) == 8 and set(g5["instance_type"]) == {"g5.xlarge"}
    assert 0.33 <= g5["effective_gpu_hours"].sum() / (8 * 31 * 24) <= 0.37
    u = fleet.usage[fleet.usage["consumer"].astype(str).str.startswith("search/ranker-")]
    hourly = u.groupby(u["timestamp"].dt.floor("h"))["util"].mean()
    weekend = hourly[hourly.index.day_of_week >= 5].mean()
    weekday_peak = hourly[hourly.index.day_of_week < 5].groupby(hourly[hourly.index.day_of_week < 5].index.hour).mean().max()
    assert weekend / weekday_peak == pytest.approx(0.15, abs=0.03)


def test_spot_jobs_interrupted_two_or_three_times(fleet):
    spot = fleet.workloads[fleet.workloads["attempt"].notna()]
    attempts = spot.groupby("job")["attempt"].count()
    interrupted = fleet.interruptions.groupby("job").size()
    assert set(interrupted) <= {1, 2, 3} and (interrupted >= 2).sum() == 2
    assert (attempts == interrupted + 1).all()  # each job completes on its last attempt
    spot_lines = fleet.costs[fleet.costs["pricing"] == "spot"]
    per_resource = spot_lines.groupby("resource_id", observed=True)["cost"].sum()
    assert (per_resource == 0).sum() == 1  # interrupted in the first hour: AWS does not bill it
    assert len(per_resource) == len(spot)


def test_mig_time_slicing_forgotten_instance_unlabelled(fleet, by_resource):
    u = fleet.usage
    shares = set(np.round(u.loc[u["share"] < 1, "share"].unique(), 6))
    assert {round(3 / 7, 6), round(2 / 7, 6), round(1 / 7, 6)} <= shares  # MIG slices
    assert {0.5, round(1 / 3, 6)} <= shares  # time-sliced notebooks
    mig_teams = fleet.workloads[fleet.workloads["consumer"].str.contains("-mig-")]["team"]
    assert mig_teams.nunique() == 4
    forgotten = by_resource[by_resource["role"] == "forgotten"].iloc[0]
    assert forgotten["cost"] == pytest.approx(66 * 12.24)
    assert forgotten["idle_cost"] == pytest.approx(64 * 12.24)
    labelled = set(fleet.workloads["consumer"])
    held = set(u.loc[u["consumer"].astype(str) != "", "consumer"].astype(str))
    assert any(c.startswith("default/exp-") for c in held - labelled)  # pods without labels at all
    assert fleet.workloads.loc[fleet.workloads["consumer"] == "search/ranker-7", "team"].isna().all()


def test_commitments_partly_unused(fleet):
    b = fleet.bill
    for arn, fee in ((DEMO_RI_ARN, DEMO_RI_RATE), (DEMO_SP_ARN, DEMO_SP_COMMITMENT)):
        purchase = b[(b["commitment_id"] == arn) & (b["charge_category"] == "Purchase")]
        used = b[(b["commitment_id"] == arn) & (b["commitment_status"] == "Used")]
        unused = b[(b["commitment_id"] == arn) & (b["commitment_status"] == "Unused")]
        # FOCUS 1.2: per commitment, EffectiveCost(Used + Unused) = BilledCost(Purchase).
        assert used["effective_cost"].sum() + unused["effective_cost"].sum() == pytest.approx(
            purchase["billed_cost"].sum(), rel=1e-12)
        assert purchase["billed_cost"].sum() == pytest.approx(fee * 31 * 24)
        assert 0 < unused["effective_cost"].sum() < purchase["billed_cost"].sum()
    ri_unused = b[(b["commitment_id"] == DEMO_RI_ARN) & (b["commitment_status"] == "Unused")]
    assert len(ri_unused) == 72  # the 3-day maintenance stop
    sp_unused = b[(b["commitment_id"] == DEMO_SP_ARN) & (b["commitment_status"] == "Unused")]
    assert sp_unused["cost"].iloc[0] == pytest.approx(DEMO_SP_COMMITMENT - 8 * DEMO_SP_RATE_G5)


def _csv(path) -> pd.DataFrame:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return pd.read_csv(f, dtype=str, keep_default_na=False)


def test_focus_file_shape(fleet, files):
    focus = _csv(files["focus"])
    assert list(focus.columns) == FOCUS_COLUMNS
    for c in ("BilledCost", "EffectiveCost", "ListCost", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory",
              "PricingCategory", "CommitmentDiscountStatus", "ResourceId", "ServiceName", "Tags", "BillingCurrency"):
        assert c in focus.columns
    assert focus["ChargePeriodStart"].str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").all()
    assert set(focus["ChargeCategory"]) == {"Usage", "Purchase"}
    assert set(focus["PricingCategory"]) == {"Standard", "Committed", "Dynamic"}
    assert set(focus["CommitmentDiscountStatus"]) == {"", "Used", "Unused"}
    assert pd.to_numeric(focus["EffectiveCost"]).sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-9)
    purchase = focus[focus["ChargeCategory"] == "Purchase"]
    assert (pd.to_numeric(purchase["EffectiveCost"]) == 0).all()
    assert (purchase["ResourceId"] == purchase["CommitmentDiscountId"]).all()
    for tags in focus.loc[focus["Tags"] != "", "Tags"]:
        assert isinstance(json.loads(tags), dict)
    assert focus["ResourceId"].str.startswith("arn:aws:").all()


def test_cur2_file_shape_and_amortized_total(fleet, files):
    cur = _csv(files["cur2"])
    assert list(cur.columns) == CUR2_COLUMNS
    num = lambda c: pd.to_numeric(cur[c].replace("", np.nan)).fillna(0.0)  # noqa: E731
    kind = cur["line_item_line_item_type"]
    assert set(kind) == {"Usage", "DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation",
                         "SavingsPlanRecurringFee", "RIFee"}
    # The amortized cost as AWS defines it (FORMATS.md 2) equals the bill's effective cost.
    amortized = np.select(
        [kind == "SavingsPlanCoveredUsage", kind == "SavingsPlanRecurringFee", kind == "SavingsPlanNegation",
         kind == "DiscountedUsage", kind == "RIFee"],
        [num("savings_plan_savings_plan_effective_cost"),
         num("savings_plan_total_commitment_to_date") - num("savings_plan_used_commitment"), 0.0,
         num("reservation_effective_cost"),
         num("reservation_unused_amortized_upfront_fee_for_billing_period") + num("reservation_unused_recurring_fee")],
        num("line_item_unblended_cost"))
    assert amortized.sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-9)
    assert cur.loc[kind == "Usage", "line_item_usage_type"].str.contains("SpotUsage:p4d.24xlarge").any()
    assert (cur.loc[kind == "SavingsPlanNegation", "line_item_unblended_cost"].astype(float) < 0).all()


def test_telemetry_files_read_back_to_the_same_allocation(fleet, files):
    nodes = gpucost.kubernetes.read_nodes(files["nodes"])
    workloads = gpucost.kubernetes.read_pods(files["pods"])
    usage = gpucost.prometheus.read_query_range(
        [files["DCGM_FI_DEV_GPU_UTIL"], files["DCGM_FI_PROF_GR_ENGINE_ACTIVE"], files["DCGM_FI_DEV_FB_USED"]],
        step=fleet.interval, nodes=nodes)
    assert len(usage) == len(fleet.usage)
    d = usage.attrs["diagnostics"]
    assert d["units"] == "legacy" and d["samples_mig"] > 0 and d["samples_time_sliced"] > 0
    got = gpucost.allocate(fleet.costs, usage, fleet.inventory, workloads, by=["team", "project"])
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "project"])
    pd.testing.assert_frame_equal(got[["team", "project"]], expected[["team", "project"]])
    for column in ("cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours"):
        np.testing.assert_allclose(got[column], expected[column], rtol=1e-9, err_msg=column)


@pytest.mark.parametrize("name,reader", [("focus", "read_focus"), ("cur2", "read_cur")])
def test_bill_files_read_back(fleet, files, name, reader):
    if not hasattr(gpucost, reader):
        pytest.skip(f"gpucost.{reader} is not in this build (billing readers)")
    from gpucost.config import instance_ids
    lines = getattr(gpucost, reader)(files[name])
    assert lines["cost"].sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-9)
    if name == "focus":  # AWS's FOCUS export names instances by ARN; telemetry by instance id
        assert lines["resource_id"].astype(str).str.startswith("arn:aws:ec2:").any()
        lines = instance_ids(lines)
    inventory = gpucost.inventory(lines)
    assert len(inventory) == len(fleet.inventory)
    got = gpucost.allocate(lines, fleet.usage, inventory, fleet.workloads, by=["team"])
    expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"])
    np.testing.assert_allclose(got["cost"], expected["cost"], rtol=1e-9)


def test_demo_config_file_drives_the_command(files, capsys):
    from gpucost import cli
    config = files["config"]
    text = config.read_text()
    assert 'bill = "focus.csv.gz"' in text and "pods.json" in text
    if not hasattr(gpucost, "read_focus"):
        pytest.skip("the config names a FOCUS bill; gpucost.read_focus is not in this build")
    code = cli.main(["allocate", "--config", str(config), "--by", "team", "--format", "csv"])
    out = capsys.readouterr().out
    assert code == 0
    got = pd.read_csv(io.StringIO(out))
    # Cents that add up to the bill to the cent (docs/semantics.md, "Numbers you can book").
    bill = gpucost.money.round_half_away(demo_fleet().costs["cost"].sum(), 2)
    assert round(got["cost"].sum(), 2) == bill


def test_the_onprem_cluster_beside_the_fleet(fleet, capsys):
    """The demo's owned Slurm cluster: its cost model's lines split by account to the cent, its energy the
    measured draw of its GPUs, and the command prints it after the cloud showback."""
    from gpucost import cli
    from gpucost.demo import ONPREM_ENERGY, demo_onprem
    onprem = demo_onprem(fleet.start, fleet.end)
    result = gpucost.allocate(onprem["costs"], onprem["usage"], onprem["inventory"], onprem["workloads"],
                              by="account", pue=ONPREM_ENERGY["pue"], carbon_intensity=ONPREM_ENERGY["carbon_intensity"])
    assert result["cost"].sum() == pytest.approx(onprem["costs"]["cost"].sum(), abs=1e-6)
    usage = onprem["usage"]
    assert result["energy_kwh"].sum() == pytest.approx((usage["power_w"] * usage["duration"]).sum() / 3.6e6)
    assert result["co2e_kg"].sum() == pytest.approx(result["energy_kwh"].sum() * 1.3 * 0.38)
    assert set(result["account"]) == {"__idle__", "lab-chen", "lab-ruiz", "lab-svensson"}
    assert cli.main(["demo", "--no-files", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "On-prem Slurm cluster beside it: 2 owned DGX H100 nodes" in out and "kg CO2e" in out


def test_a_changed_demo_fleet_changes_no_later_call():
    # One test changing a team label once changed another test's expected
    # table (the process' cached fleet itself was handed out).
    first = demo_fleet()
    first.workloads.loc[0, "team"] = "changed"
    first.usage = first.usage.iloc[:1]
    again = demo_fleet()
    assert "changed" not in set(again.workloads["team"]) and len(again.usage) > 1
