"""Where owners see energy and owned hardware (issue 31, item 6): the
report's sections (cost by component, energy and CO2e by team, idle energy,
$ and kWh per effective GPU-hour, buy versus rent) on the owned day of
owned_month.py by hand, each left out without its inputs; the energy gauges
of export-metrics; the buy-vs-rent command."""

from __future__ import annotations

import pandas as pd
import pytest

import gpucost
import owned_month as om
from gpucost import cli, metrics
from test_report import parse

RATES = pd.DataFrame({"gpu_model": ["H100 80GB"], "hourly": [2.49]})
# Energy by hand (kWh): dgx-a: train 4 GPUs x 24 h x 0.7 kW, notebook 1 x 24 x 0.06, free 3 x 24 x 0.06;
# dgx-b: train-b 8 x 18 x 0.7, free 8 x 6 x 0.06.
RESEARCH_KWH = 4 * 24 * 0.7 + 8 * 18 * 0.7          # 168.0
LAB_KWH = 24 * 0.06                                  # 1.44
IDLE_KWH = 3 * 24 * 0.06 + 8 * 6 * 0.06              # 7.20
# Power lines ($1.20 per node-hour) split by energy: dgx-a draws 3.04 kW an hour (2.8 train, 0.06 notebook,
# 0.18 free); dgx-b's free energy is 5 whole hours and 60/760 of two half-busy hours.
IDLE_POWER = 0.18 / 3.04 * 1.2 * 24 + 5 * 1.2 + 2 * 1.2 * 60 / 760     # 7.894737
LAB_POWER = 0.06 / 3.04 * 1.2 * 24                                   # 0.568421


@pytest.fixture(scope="module")
def owned_report():
    usage, costs, inventory, workloads = om.tables()
    return gpucost.report(costs, usage, inventory, workloads, pue=1.3, carbon_intensity=400, rates=RATES)


def test_the_sections_are_there_with_the_numbers_by_hand(owned_report):
    r = owned_report
    keys = [s.key for s in r.sections]
    assert {"components", "energy", "idle_energy", "buy_vs_rent"} <= set(keys)
    tables = parse(r.html).tables

    components = pd.DataFrame(tables["components"]).assign(team=r.data["components"]["team"])
    by_team = components.set_index("team")
    assert by_team.loc["research", "capex"] == pytest.approx(300.0)             # 240 GPU-hours x $1.25
    assert by_team.loc["__idle__", "capex"] == pytest.approx(150.0)             # 120 idle GPU-hours
    assert by_team.loc["lab", "capex"] == pytest.approx(30.0)
    assert by_team.loc["__idle__", "power"] == pytest.approx(IDLE_POWER, abs=1e-9)
    assert by_team.loc["lab", "power"] == pytest.approx(LAB_POWER, abs=1e-9)
    assert by_team.loc["__unattributed__", "operations"] == pytest.approx(om.OPERATIONS)
    assert components["cost"].sum() == pytest.approx(om.costs()["cost"].sum(), abs=1e-9)   # money in = money out

    energy = r.data["energy"].set_index("team")
    assert energy.loc["research", "energy_kwh"] == pytest.approx(RESEARCH_KWH)
    assert energy.loc["lab", "energy_kwh"] == pytest.approx(LAB_KWH)
    assert energy.loc["__idle__", "energy_kwh"] == pytest.approx(IDLE_KWH)
    assert energy["energy_kwh"].sum() == pytest.approx(176.64)                  # the meter's total
    assert energy.loc["research", "facility_energy_kwh"] == pytest.approx(168.0 * 1.3)
    assert energy.loc["research", "co2e_kg"] == pytest.approx(168.0 * 1.3 * 0.4)   # 87.36 kg at 400 g/kWh
    assert energy.loc["research", "kwh_per_effective_gpu_hour"] == pytest.approx(168.0 / 201.6)
    research_cost = 300.0 + (1.2 * 48 - IDLE_POWER - LAB_POWER)
    assert energy.loc["research", "cost_per_effective_gpu_hour"] == pytest.approx(research_cost / 201.6)
    assert energy.loc["__idle__", "power_cost"] == pytest.approx(IDLE_POWER, abs=1e-9)
    cells = pd.DataFrame(tables["energy"])
    assert cells["energy_kwh"].tolist() == pytest.approx(r.data["energy"]["energy_kwh"].tolist())

    idle = pd.DataFrame(tables["idle_energy"]).iloc[0]
    assert idle["energy_kwh"] == pytest.approx(IDLE_KWH)
    assert idle["share_of_energy"] == pytest.approx(7.2 / 176.64)
    assert idle["power_cost"] == pytest.approx(IDLE_POWER, abs=1e-9)
    assert "GPUs nobody held drew 7.2 kWh, 4.1% of the energy measured, and cost $7.89 of power" in r.html

    view = pd.DataFrame(tables["buy_vs_rent"]).iloc[0]
    assert view["owned_cost_per_gpu_hour"] == pytest.approx(561.60 / 384)
    assert view["utilisation"] == pytest.approx(264 / 384)
    assert view["break_even_utilisation"] == pytest.approx(561.60 / 384 / 2.49)
    assert view["owning_saves"] == pytest.approx(264 * 2.49 - 561.60)            # $95.76

    idle_cells = pd.DataFrame(tables["idle"])
    assert idle_cells["dollars_power_saved"].sum() == pytest.approx(5 * 1.2 + 2 * 1.2 * 60 / 760)
    assert "power down" in r.html and ">terminate<" not in r.html


def test_without_energy_or_owned_lines_the_sections_are_left_out():
    usage, costs, inventory, workloads = om.tables(power=False)
    rented = costs.drop(columns=["component", "driver", "pricing"])
    r = gpucost.report(rented, usage, inventory, workloads)
    keys = {s.key for s in r.sections}
    assert not keys & {"components", "energy", "idle_energy", "buy_vs_rent"}
    assert "no 'component' column" in r.omitted["components"]
    assert r.omitted["energy"] == r.omitted["idle_energy"] == "no power readings (the usage has no power_w column)"
    assert "no cost lines of hardware you own" in r.omitted["buy_vs_rent"]
    assert 'id="energy"' not in r.html and 'data-key="buy_vs_rent"' not in r.html
    # A section left out of analyses= is not tried (and not listed as omitted).
    only = gpucost.report(rented, usage, inventory, workloads, analyses=["idle"])
    assert not {"components", "energy", "idle_energy", "buy_vs_rent"} & set(only.omitted)


def test_idle_energy_shared_is_said_so():
    usage, costs, inventory, workloads = om.tables()
    r = gpucost.report(costs, usage, inventory, workloads, idle="share", analyses=["energy", "idle_energy"])
    assert {"energy", "idle_energy"} <= {s.key for s in r.sections}
    # Shared, the idle row keeps only the lines nobody held: dgx-b's 5 free hours, 8 GPUs at 60 W.
    assert r.data["idle_energy"]["energy_kwh"].iloc[0] == pytest.approx(5 * 8 * 0.06)
    assert "this is the lines nobody used" in r.html


def test_energy_gauges():
    usage, costs, inventory, workloads = om.tables()
    allocation = gpucost.allocate(costs, usage, inventory, workloads, by=["team", "project"], pue=1.3,
                                  carbon_intensity=400)
    text = metrics.exposition(allocation, generated_at=0)
    assert "# TYPE gpucost_energy_kilowatt_hours gauge" in text
    assert 'gpucost_energy_kilowatt_hours{team="lab",project="eval"} 1.44' in text
    assert 'gpucost_energy_kilowatt_hours{team="__idle__",project="__idle__"} 7.2' in text
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert float(lines['gpucost_facility_energy_kilowatt_hours{team="research",project="llm"}']) == pytest.approx(218.4)
    assert float(lines['gpucost_co2e_kilograms{team="research",project="llm"}']) == pytest.approx(87.36)
    plain = metrics.exposition(gpucost.allocate(costs.drop(columns="driver"), usage.drop(columns="power_w"), inventory, workloads,
                                                by=["team", "project"]), generated_at=0)
    assert "energy" not in plain and "co2e" not in plain


@pytest.fixture()
def files(tmp_path):
    usage, costs, inventory, workloads = om.tables()
    paths = {}
    for name, table in (("costs", costs), ("usage", usage), ("inventory", inventory), ("workloads", workloads),
                        ("rates", RATES)):
        paths[name] = tmp_path / f"{name}.csv"
        table.to_csv(paths[name], index=False)
    return [arg for name in ("costs", "usage", "inventory", "workloads") for arg in (f"--{name}", str(paths[name]))], \
        paths


def test_the_commands(files, capsys):
    sources, paths = files
    assert cli.main(["buy-vs-rent", *sources, "--rates", str(paths["rates"]), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    view = pd.read_csv(pd.io.common.StringIO(out))
    assert view["gpu_model"].tolist() == ["H100 80GB"]
    assert view["break_even_utilisation"].iloc[0] == pytest.approx(561.60 / 384 / 2.49, abs=1e-4)
    assert cli.main(["export-metrics", *sources, "--pue", "1.3", "--carbon-intensity", "400", "--stdout"]) == 0
    text = capsys.readouterr().out
    assert 'gpucost_co2e_kilograms{team="lab",project="eval",window="2026-03-02/2026-03-02"}' in text
    kwh = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
           if line.startswith("gpucost_energy_kilowatt_hours{")]
    assert sum(kwh) == pytest.approx(176.64)   # idle shared by default there: the meter's total all the same
