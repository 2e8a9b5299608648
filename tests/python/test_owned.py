"""Owned hardware as cost lines (gpucost.owned_costs, the [owned] config
section) and shared costs split by GPU-hours (issue 31, items 1 and 2).

The issue's month, by hand (docs/onprem.md): 4 DGX H100 at $320,000 (in
service 2026-01-01, 4 years = 35,064 hours), 2 A100 nodes at $150,000
(residual $15,000, in service 2024-07-01), PUE 1.3 at $0.12/kWh, $18,000 a
month of operations shared by GPU-hours held; March 2026 = 744 hours.

Per node and month:
  DGX:  capex 6,789.869952 + power 545.5008 + facility 1,530 + support 1,698.630137 = 10,564.000889
  A100: capex 2,864.476386 + power 522.288  + facility 1,000 + support 1,019.178082 =  5,405.942468
Who held what: job a (physics) all GPUs of dgx01 and dgx02, job b (bio) all
of dgx03, job c (chem) GPUs 0-3 of a100-01; dgx04 is free all month,
a100-02 has no telemetry. GPU-hours held: physics 11,904, bio 5,952, chem
2,976 (4 : 2 : 1), so the $18,000 goes 10,285.714286 / 5,142.857143 /
2,571.428571.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucost
from gpucost import cli
from gpucost.model import CostDriver, OwnedComponent, Purchase

MARCH, APRIL = "2026-03-01", "2026-04-01"
HOURS = 744
DGX = {"instance_type": "dgx-h100", "price": 320000, "in_service": "2026-01-01", "life_years": 4,
       "support_per_year": 20000, "facility_per_kw_month": 150, "base_power_w": 1500}
A100 = {"instance_type": "dgx-a100-80gb", "price": 150000, "in_service": "2024-07-01", "life_years": 4,
        "residual": 15000, "support_per_year": 12000, "facility_per_rack_month": 2000, "rack_share": 0.5,
        "fixed_power_w": 4500}
CLASSES = {"dgx-h100": DGX, "a100": A100}
NODES = {"dgx01": "dgx-h100", "dgx02": "dgx-h100", "dgx03": "dgx-h100", "dgx04": "dgx-h100",
         "a100-01": "a100", "a100-02": "a100"}
DGX_MONTH = 6789.869952 + 545.5008 + 1530 + 1698.630137
A100_MONTH = 2864.476386 + 522.288 + 1000 + 1019.178082
TOTAL = 4 * DGX_MONTH + 2 * A100_MONTH + 18000
WORKLOADS = pd.DataFrame({"consumer": ["a", "b", "c"], "team": ["physics", "bio", "chem"],
                          "user": ["ana", "bo", "cy"]})


def usage_month() -> pd.DataFrame:
    """Hourly samples with their duration: the DGX GPUs measured at 400 W
    (held or free), a100-01's GPUs 0-3 held by c without a power reading."""
    hours = pd.date_range(MARCH, periods=HOURS, freq="h", tz="UTC")
    parts = []
    for node, consumer, devices, watts in (("dgx01", "a", 8, 400.0), ("dgx02", "a", 8, 400.0),
                                           ("dgx03", "b", 8, 400.0), ("dgx04", "", 8, 400.0),
                                           ("a100-01", "c", 4, np.nan)):
        parts.append(pd.DataFrame({
            "timestamp": np.repeat(hours, devices), "resource_id": node,
            "device": np.tile(np.arange(devices, dtype=np.int32), HOURS), "consumer": consumer, "share": 1.0,
            "util": 0.6, "mem_used": 0.0, "duration": 3600.0, "power_w": watts}))
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def month():
    usage = usage_month()
    lines = gpucost.owned_costs(CLASSES, NODES, MARCH, APRIL, usage=usage, pue=1.3, tariff=0.12,
                                operations_per_month=18000)
    return lines, usage


def component_total(lines: pd.DataFrame, component: str, node: str | None = None) -> float:
    rows = lines["component"] == component
    if node is not None:
        rows &= lines["resource_id"] == node
    return float(lines.loc[rows, "cost"].sum())


def test_the_issue_month_to_the_cent(month):
    lines, _ = month
    assert len(lines) == 6 * 4 * HOURS + HOURS
    assert component_total(lines, "capex", "dgx01") == pytest.approx(6789.869952, abs=1e-6)
    assert component_total(lines, "capex", "a100-02") == pytest.approx(2864.476386, abs=1e-6)
    assert component_total(lines, "power", "dgx02") == pytest.approx(545.5008, abs=1e-6)
    assert component_total(lines, "power", "a100-01") == pytest.approx(522.288, abs=1e-6)
    assert component_total(lines, "facility", "dgx03") == pytest.approx(1530, abs=1e-6)
    assert component_total(lines, "facility", "a100-01") == pytest.approx(1000, abs=1e-6)
    assert component_total(lines, "support", "dgx04") == pytest.approx(1698.630137, abs=1e-6)
    assert component_total(lines, "support", "a100-02") == pytest.approx(1019.178082, abs=1e-6)
    assert component_total(lines, "operations") == pytest.approx(18000, abs=1e-6)
    assert math.fsum(lines["cost"]) == pytest.approx(TOTAL, abs=1e-5)
    # The shape the bill readers give, purchase owned; capex bills the GPU time; power follows energy.
    assert (lines["pricing"] == Purchase.OWNED).all()
    assert (lines["primary"] == (lines["component"] == OwnedComponent.CAPEX)).all()
    assert ((lines["driver"] == CostDriver.ENERGY) == (lines["component"] == OwnedComponent.POWER)).all()
    assert lines.loc[lines["component"] == "operations", "resource_id"].isna().all()
    power = lines[lines["component"] == "power"]
    assert power.groupby("resource_id", observed=True)["energy_kwh"].sum()["dgx01"] == pytest.approx(3496.8)
    assert not power.loc[power["resource_id"] == "dgx01", "energy_estimated"].any()
    assert power.loc[power["resource_id"] == "a100-01", "energy_estimated"].all()


def test_chargeback_with_operations_shared_by_gpu_hours(month):
    lines, usage = month
    inventory = gpucost.inventory(lines)
    assert inventory.groupby("resource_id").size().to_dict() == {node: 8 for node in NODES}
    # a100-02 has no telemetry (unobserved); a100-01 no power_w (its power lines fall back to GPU time).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gpucost.JoinWarning)
        result = gpucost.allocate(lines, usage, inventory, WORKLOADS, by="team")
    assert any("(a100-02): $5,405.94 is on __unobserved__" in str(w.message) for w in caught)
    assert all(w.category is gpucost.JoinWarning for w in caught)
    shared = gpucost.share_costs(result, lines, {"component": "operations"}, by="team", split="gpu_hours",
                                 inventory=inventory)
    cost = shared.set_index("team")["cost"]
    assert cost["physics"] == pytest.approx(2 * DGX_MONTH + 18000 * 4 / 7, abs=1e-5)
    assert cost["bio"] == pytest.approx(DGX_MONTH + 18000 * 2 / 7, abs=1e-5)
    assert cost["chem"] == pytest.approx(A100_MONTH / 2 + 18000 / 7, abs=1e-5)
    assert cost["__idle__"] == pytest.approx(DGX_MONTH + A100_MONTH / 2, abs=1e-5)  # dgx04 free, a100-01 half
    assert cost["__unobserved__"] == pytest.approx(A100_MONTH, abs=1e-5)            # a100-02: no telemetry
    assert cost["__unattributed__"] == pytest.approx(0, abs=1e-6)
    assert math.fsum(shared["cost"]) == pytest.approx(TOTAL, abs=1e-5)
    # By GPU-hours used: each held GPU was 60 % busy, the same 4 : 2 : 1.
    used = gpucost.share_costs(result, lines, {"component": "operations"}, by="team", split="used_gpu_hours",
                               inventory=inventory).set_index("team")["shared_cost"]
    assert used["physics"] == pytest.approx(18000 * 4 / 7, abs=1e-6)


def test_daily_lines_add_up_to_the_hourly_ones(month):
    lines, usage = month
    daily = gpucost.owned_costs(CLASSES, NODES, MARCH, APRIL, usage=usage, pue=1.3, tariff=0.12,
                                operations_per_month=18000, freq="D")
    assert len(daily) == 6 * 4 * 31 + 31
    by = ["resource_id", "component"]
    hourly = lines.groupby(by, observed=True, dropna=False)["cost"].sum()
    assert np.allclose(daily.groupby(by, observed=True, dropna=False)["cost"].sum().to_numpy(), hourly.to_numpy(),
                       atol=1e-6)


def test_nodes_from_a_table_and_tariffs():
    nodes = pd.DataFrame({"host": ["n1", "n2"], "class": ["c", None]})   # n2: not an owned node
    classes = {"c": {"gpus": 2, "price": 8760, "in_service": "2025-01-01", "life_years": 1, "fixed_power_w": 1000}}
    by_hour = [0.1] * 24
    by_hour[5] = 0.5
    lines = gpucost.owned_costs(classes, nodes, "2025-06-01", "2025-06-02", tariff=by_hour)
    power = lines[lines["component"] == "power"].set_index("start")["cost"]
    assert power[pd.Timestamp("2025-06-01 05:00", tz="UTC")] == pytest.approx(0.5)
    assert power.sum() == pytest.approx(23 * 0.1 + 0.5)
    assert set(lines["resource_id"]) == {"n1"}
    # capex: $8,760 over 2025's 8,760 hours, $1 an hour.
    assert (lines.loc[lines["component"] == "capex", "cost"] == 1.0).all()
    series = pd.DataFrame({"start": ["2025-06-01 00:00"], "end": ["2025-06-02 00:00"], "per_kwh": [0.2]})
    lines = gpucost.owned_costs(classes, {"n1": "c"}, "2025-06-01", "2025-06-02", tariff=series)
    assert lines.loc[lines["component"] == "power", "cost"].sum() == pytest.approx(24 * 0.2)


@pytest.mark.parametrize(("classes", "nodes", "message"), [
    ({"dgx": {**DGX, "price": -1}}, {"n": "dgx"}, "owned: node class 'dgx': field 'price'"),
    ({"dgx": {**DGX, "warranty": 3}}, {"n": "dgx"}, "owned: node class 'dgx': unknown field 'warranty'"),
    ({"dgx": {**DGX, "life_years": "four"}}, {"n": "dgx"}, "field 'life_years': expected a number"),
    ({"dgx": {**DGX, "instance_type": "dgx-h900"}}, {"n": "dgx"}, "field 'instance_type': 'dgx-h900' is not in"),
    ({"dgx": DGX}, {"n": "dgx-h200"}, "owned: node 'n': field 'class': no node class 'dgx-h200'"),
    ({"dgx": {**DGX, "depreciation_schedule": [0.5, 0.6, 0, 0]}}, {"n": "dgx"},
     "field 'depreciation_schedule': the fractions add up to 1.1"),
])
def test_bad_input_names_the_class_or_node_and_the_field(classes, nodes, message):
    with pytest.raises(gpucost.InvalidInputError, match=message.replace("(", r"\(")):
        gpucost.owned_costs(classes, nodes, MARCH, APRIL, tariff=0.12)


def write_month(tmp_path) -> None:
    usage_month().to_csv(tmp_path / "usage.csv", index=False)
    WORKLOADS.to_csv(tmp_path / "workloads.csv", index=False)
    (tmp_path / "gpucost.toml").write_text(f"""
[sources]
usage = "usage.csv"
workloads = "workloads.csv"

[owned]
start = "{MARCH}"
end = "{APRIL}"
pue = 1.3
tariff = 0.12
operations_per_month = 18000

[owned.classes.dgx-h100]
instance_type = "dgx-h100"
price = 320000
in_service = "2026-01-01"
life_years = 4
support_per_year = 20000
facility_per_kw_month = 150
base_power_w = 1500

[owned.classes.a100]
instance_type = "dgx-a100-80gb"
price = 150000
in_service = "2024-07-01"
life_years = 4
residual = 15000
support_per_year = 12000
facility_per_rack_month = 2000
rack_share = 0.5
fixed_power_w = 4500

[owned.nodes]
dgx01 = "dgx-h100"
dgx02 = "dgx-h100"
dgx03 = "dgx-h100"
dgx04 = "dgx-h100"
a100-01 = "a100"
a100-02 = "a100"

[attribution]
by = "team"
shared = {{ component = "operations" }}
split = "gpu_hours"
""")


def test_the_cli_charges_back_the_month_from_one_config(tmp_path, capsys):
    write_month(tmp_path)
    config = str(tmp_path / "gpucost.toml")
    out_file = tmp_path / "out.csv"
    assert cli.main(["allocate", "--config", config, "--by", "team", "--format", "csv", "--output",
                     str(out_file)]) == 0
    capsys.readouterr()
    cost = pd.read_csv(out_file).set_index("team")["cost"]
    assert cost["physics"] == pytest.approx(2 * DGX_MONTH + 18000 * 4 / 7, abs=0.005)
    assert cost["bio"] == pytest.approx(DGX_MONTH + 18000 * 2 / 7, abs=0.005)
    assert cost["chem"] == pytest.approx(A100_MONTH / 2 + 18000 / 7, abs=0.005)
    assert cost.sum() == pytest.approx(TOTAL, abs=0.05)
    # a100-01's GPUs have no power reading: its energy-driven power lines are split by GPU time (a warning).
    assert cli.main(["check", "--config", config]) == 1
    out = capsys.readouterr().out
    assert "744 energy-driven cost line(s)" in out and "2,976 usage samples have no power reading" in out
    assert "owned      [owned]: 18,600 lines for 6 nodes of a100, dgx-h100" in out
    assert "operations $18,000.00" in out


def test_the_config_names_a_bad_owned_key(tmp_path, capsys):
    write_month(tmp_path)
    path = tmp_path / "gpucost.toml"
    path.write_text(path.read_text().replace("tariff = 0.12", "tariff = [0.1, 0.2]"))
    assert cli.main(["allocate", "--config", str(path)]) != 0
    assert "[owned]: key 'tariff': expected 24 rates" in capsys.readouterr().err
    write_month(tmp_path)
    path.write_text(path.read_text().replace("life_years = 4\nsupport_per_year = 20000",
                                             "life_years = 0\nsupport_per_year = 20000"))
    assert cli.main(["allocate", "--config", str(path)]) != 0
    assert "owned: node class 'dgx-h100': field 'life_years'" in capsys.readouterr().err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hours=st.lists(st.floats(0, 1000), min_size=1, max_size=6), used=st.lists(st.floats(0, 1), min_size=6,
       max_size=6), shared=st.floats(-1e5, 1e5), split=st.sampled_from(["gpu_hours", "used_gpu_hours"]))
def test_sharing_by_gpu_hours_conserves_money(hours, used, shared, split):
    groups = [f"g{i}" for i in range(len(hours))]
    allocation = pd.DataFrame({
        "team": groups + ["__idle__", "__unattributed__", "__unobserved__"],
        "cost": [10.0] * len(hours) + [3.0, shared, 2.0],
        "gpu_hours": hours + [5.0, 0.0, 7.0],
        "effective_gpu_hours": [h * u for h, u in zip(hours, used)] + [0.0, 0.0, 0.0]})
    costs = pd.DataFrame({"resource_id": [None], "cost": [shared], "component": ["operations"]})
    inventory = pd.DataFrame({"resource_id": ["x"], "device": [0], "mem_capacity": [1.0]})
    column = "gpu_hours" if split == "gpu_hours" else "effective_gpu_hours"
    if not allocation[column].iloc[:len(hours)].sum() > 0:
        with pytest.raises(gpucost.InvalidInputError, match="no positive"):
            gpucost.share_costs(allocation, costs, {"component": "operations"}, by="team", split=split,
                                inventory=inventory)
        return
    out = gpucost.share_costs(allocation, costs, {"component": "operations"}, by="team", split=split,
                              inventory=inventory)
    assert math.fsum(out["cost"]) == pytest.approx(math.fsum(allocation["cost"]), abs=1e-6)
    # Nobody held the idle and unobserved hours: they get no share.
    reserved = out.set_index("team").loc[["__idle__", "__unobserved__"], "shared_cost"]
    assert (reserved == 0).all()


def test_the_month_in_dollars_kwh_and_co2e_per_user_from_one_config(tmp_path, capsys):
    """The issue's done-when: per user, dollars, kWh and kg CO2e by hand, adding up to the cost model's and the
    meter's totals. The DGX GPUs draw 400 W all month (744 h): a 16 GPUs, b 8, the free dgx04's 8 on __idle__;
    cy's A100 samples carry no power (0 kWh, counted)."""
    write_month(tmp_path)
    config = tmp_path / "gpucost.toml"
    # Operations shared over the users by GPU-hours (4 : 2 : 1 as over the teams).
    text = config.read_text().replace('[attribution]\nby = "team"', '[attribution]\nby = "user"')
    config.write_text(text + '\n[energy]\npue = 1.3\ncarbon_intensity = 400\n')
    out_file = tmp_path / "out.csv"
    assert cli.main(["allocate", "--config", str(config), "--by", "user", "--format", "csv", "--output",
                     str(out_file)]) == 0
    err = capsys.readouterr().err
    assert "2,976 usage samples have no power reading" in err
    rows = pd.read_csv(out_file, keep_default_na=False).set_index("user")
    kwh = {"ana": 16 * HOURS * 0.4, "bo": 8 * HOURS * 0.4, "cy": 0.0, "__idle__": 8 * HOURS * 0.4}
    for user, expected in kwh.items():
        assert rows.loc[user, "energy_kwh"] == pytest.approx(expected, abs=1e-6)
        assert rows.loc[user, "facility_energy_kwh"] == pytest.approx(expected * 1.3, abs=1e-6)
        assert rows.loc[user, "co2e_kg"] == pytest.approx(expected * 1.3 * 0.4, abs=1e-6)
    # The meter's total: every DGX GPU at 400 W for the month; the money: the cost model's total.
    assert rows["energy_kwh"].sum() == pytest.approx(32 * HOURS * 0.4, abs=1e-6)
    assert rows["cost"].sum() == pytest.approx(TOTAL, abs=0.05)
    assert rows.loc["ana", "cost"] == pytest.approx(2 * DGX_MONTH + 18000 * 4 / 7, abs=0.005)


@pytest.mark.parametrize("inventory", ["none", "burst node only"])
def test_the_month_with_a_burst_invoice_read_as_it_comes(tmp_path, inventory):
    """Beside the owned cluster, a burst day on a GPU cloud billed by a rate-card invoice at $2.49 per GPU-hour:
    bio's job b held the 8 GPUs of burst-02 (cw-9c1d) for 24 hours on 10 March at 650 W. The operations are then
    shared over 11,904 / 6,144 / 2,976 GPU-hours. The burst node's devices come from the invoice (8 GPUs in the
    hosts table, H100 SXM); an inventory table of the burst node alone leaves the owned nodes to their classes."""
    write_month(tmp_path)
    usage = pd.read_csv(tmp_path / "usage.csv")
    day = pd.date_range("2026-03-10", periods=24, freq="h", tz="UTC")
    burst = pd.DataFrame({"timestamp": np.repeat(day, 8).strftime("%Y-%m-%dT%H:%M:%SZ"), "resource_id": "cw-9c1d",
                          "device": np.tile(np.arange(8), 24), "consumer": "b", "share": 1.0, "util": 0.9,
                          "mem_used": 0.0, "duration": 3600.0, "power_w": 650.0})
    pd.concat([usage, burst], ignore_index=True).to_csv(tmp_path / "usage.csv", index=False)
    (tmp_path / "invoice.csv").write_text("Instance,GPU Type,Date,Quantity,Unit,Unit Price,Amount,Currency\n"
                                          "burst-02,H100 SXM,2026-03-10,192,GPU-hour,2.49,478.08,USD\n")
    (tmp_path / "hosts.csv").write_text("host,resource_id,gpus\nburst-02,cw-9c1d,8\n")
    sources = '[sources]\ninvoice = "invoice.csv"\nhosts = "hosts.csv"\n'
    if inventory == "burst node only":
        pd.DataFrame({"resource_id": "cw-9c1d", "device": range(8), "mem_capacity": 80 * 2**30}).to_csv(
            tmp_path / "inventory.csv", index=False)
        sources += 'inventory = "inventory.csv"\n'
    config = tmp_path / "gpucost.toml"
    config.write_text(config.read_text().replace("[sources]\n", sources, 1))
    out_file = tmp_path / "out.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(["allocate", "--config", str(config), "--by", "team", "--format", "csv", "--output",
                         str(out_file)]) == 0
    cost = pd.read_csv(out_file, keep_default_na=False).set_index("team")["cost"]
    hours = {"physics": 11904, "bio": 6144, "chem": 2976}
    ops = {team: 18000 * h / sum(hours.values()) for team, h in hours.items()}
    assert cost["bio"] == pytest.approx(DGX_MONTH + 478.08 + ops["bio"], abs=0.01)  # booked to the cent
    assert cost["physics"] == pytest.approx(2 * DGX_MONTH + ops["physics"], abs=0.01)  # booked to the cent
    assert cost["chem"] == pytest.approx(A100_MONTH / 2 + ops["chem"], abs=0.01)  # booked to the cent
    assert cost.sum() == pytest.approx(TOTAL + 478.08, abs=0.05)
    assert cost.get("__unattributed__", 0.0) == 0.0  # every node's devices are known


def test_an_invoice_node_without_a_gpu_count_or_a_known_type_is_named(tmp_path, capsys):
    write_month(tmp_path)
    config = tmp_path / "gpucost.toml"
    config.write_text(config.read_text().replace("[sources]\n", '[sources]\ninvoice = "invoice.csv"\n', 1))
    (tmp_path / "invoice.csv").write_text("Instance,GPU Type,Date,Quantity,Unit,Unit Price,Amount,Currency\n"
                                          "burst-02,H100 SXM,2026-03-10,24,node-hour,19.92,478.08,USD\n")
    assert cli.main(["allocate", "--config", str(config), "--by", "team"]) != 0
    assert "invoice.csv: line 2: node 'burst-02' has no GPU count" in capsys.readouterr().err
    (tmp_path / "invoice.csv").write_text("Instance,GPU Type,GPUs,Date,Quantity,Unit,Unit Price,Amount,Currency\n"
                                          "burst-02,A100,8,2026-03-10,24,node-hour,19.92,478.08,USD\n")
    assert cli.main(["allocate", "--config", str(config), "--by", "team"]) != 0
    assert ("GPU type 'A100' of node 'burst-02' names no one catalog model (it could be A100 40GB or A100 80GB)"
            in capsys.readouterr().err)


def test_embodied_carbon_of_a_class_follows_gpu_hours_held(tmp_path):
    """[owned.classes.*] embodied_kg_per_gpu_hour: each team's GPU-hours on the DGX nodes x 0.05 kg, the DGX
    capacity nobody held on __idle__; the A100 class names none (0). The column adds up to the DGX fleet's
    32 GPUs x 744 h x 0.05 kg."""
    write_month(tmp_path)
    config = tmp_path / "gpucost.toml"
    config.write_text(config.read_text().replace("base_power_w = 1500\n", "base_power_w = 1500\n"
                                                 "embodied_kg_per_gpu_hour = 0.05\n"))
    out_file = tmp_path / "out.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(["allocate", "--config", str(config), "--by", "team", "--format", "csv", "--decimals", "raw",
                         "--output", str(out_file)]) == 0
    kg = pd.read_csv(out_file, keep_default_na=False).set_index("team")["embodied_co2e_kg"]
    assert kg["physics"] == pytest.approx(11904 * 0.05) and kg["bio"] == pytest.approx(5952 * 0.05)
    assert kg["chem"] == 0 and kg["__unobserved__"] == 0  # the A100 nodes
    assert kg.sum() == pytest.approx(32 * HOURS * 0.05)


def test_embodied_carbon_by_hand_and_its_bad_input():
    start = pd.Timestamp(MARCH)
    costs = pd.DataFrame({"resource_id": ["n1", "n2"], "start": [start] * 2,
                          "end": [start + pd.Timedelta(hours=2)] * 2, "cost": [8.0, 4.0]})
    usage = pd.DataFrame({"timestamp": pd.date_range(start, periods=60, freq="1min"), "resource_id": "n1",
                          "device": 0, "consumer": "a", "share": 1.0, "util": 0.5, "mem_used": 0.0})
    inventory = pd.DataFrame({"resource_id": ["n1", "n1", "n2"], "device": [0, 1, 0], "mem_capacity": [80e9] * 3,
                              "embodied_kg_per_gpu_hour": [0.5, 0.5, 0.25]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n2 is unobserved
        keep = gpucost.allocate(costs, usage, inventory).set_index("consumer")["embodied_co2e_kg"]
        share = gpucost.allocate(costs, usage, inventory, idle="share").set_index("consumer")["embodied_co2e_kg"]
        bare = gpucost.allocate(costs, usage, inventory.drop(columns="embodied_kg_per_gpu_hour"))
    # n1: a held 1 of its 4 GPU-hours; n2's 2 GPU-hours are unobserved.
    assert keep.to_dict() == {"__idle__": 1.5, "__unobserved__": 0.5, "a": 0.5}
    assert share.to_dict() == {"__unobserved__": 0.5, "a": 2.0}  # idle capacity's carbon goes with its cost
    assert "embodied_co2e_kg" not in bare.columns
    for values, message in (([0.5, -1.0, 0.25], r"row 1, column 'embodied_kg_per_gpu_hour': -1 is not kg CO2e"),
                            ([0.5, 0.4, 0.25], r"row 1, column 'embodied_kg_per_gpu_hour': 0.4 differs from the "
                                               r"other devices of 'n1': one value per node")):
        with pytest.raises(gpucost.InvalidInputError, match=message):
            gpucost.allocate(costs, usage, inventory.assign(embodied_kg_per_gpu_hour=values))


def test_a_tariff_by_local_hour_of_day_follows_the_zone_and_its_daylight_saving():
    """Peak $0.30/kWh from 17:00 to 21:00 New York time, else $0.10, for a node drawing a flat 1 kW over 7-10 March
    2026 (UTC): EST until 8 March 07:00 UTC, then EDT. The peak hours in UTC: 00-02 on the 7th (the 6th's evening),
    22:00 on the 7th to 02:00, 21:00 on the 8th to 01:00, and 21-24 on the 9th: 13 of the 72 hours."""
    rates = [0.30 if 17 <= h < 21 else 0.10 for h in range(24)]
    classes = {"c": {"price": 8760, "in_service": "2026-01-01", "life_years": 1, "fixed_power_w": 1000}}
    lines = gpucost.owned_costs(classes, {"n1": "c"}, "2026-03-07", "2026-03-10", tariff=rates,
                                tariff_tz="America/New_York")
    power = lines[lines["component"] == "power"].set_index("start")["cost"]
    hours = [pd.Timestamp(f"2026-03-{day:02d}T{hour:02d}:00Z") for day, hour in
             [(7, 0), (7, 1), (7, 22), (7, 23), (8, 0), (8, 1), (8, 21), (8, 22), (8, 23), (9, 0), (9, 21), (9, 22),
              (9, 23)]]
    assert sorted(power[power > 0.2].index) == hours
    assert power.sum() == pytest.approx(13 * 0.30 + 59 * 0.10)
    with pytest.raises(gpucost.InvalidInputError, match="'Asia/Kolkata' is not a whole number of hours|"
                                                        "Asia/Kolkata is not a whole number of hours"):
        gpucost.owned_costs(classes, {"n1": "c"}, "2026-03-07", "2026-03-08", tariff=rates, tariff_tz="Asia/Kolkata")
    with pytest.raises(gpucost.InvalidInputError, match="'Mars/Olympus' is not an IANA time zone"):
        gpucost.owned_costs(classes, {"n1": "c"}, "2026-03-07", "2026-03-08", tariff=rates, tariff_tz="Mars/Olympus")
