"""Idle hardware you own gets the owner's actions, never terminate
(issue 31, item 5): power down with the power dollars saved to the cent,
consolidate, lend; rented resources beside it are unchanged."""

from __future__ import annotations

import pandas as pd
import pytest

import gpucost
import owned_month as om
from gpucost.model import Purchase
from scenarios import ts

# A GPU-hour of a node: (capex 10.00 + power 1.20) / 8 GPUs.
PER_GPU_HOUR = (om.CAPEX + om.POWER) / 8


def _by_action(findings: pd.DataFrame) -> pd.DataFrame:
    assert findings["action"].is_unique, findings
    return findings.set_index("action")


def test_owned_nodes_get_owner_actions_and_the_power_saved_to_the_cent():
    report = gpucost.find_idle(*om.tables(with_cloud=True))
    f = _by_action(report.findings)
    assert set(f.index) == {"power down", "consolidate", "lend", "terminate"}
    assert "terminate" not in set(f.loc[f["resource_id"] != "i-cloud"].index)

    down = f.loc["power down"]
    assert (down["resource_id"], down["devices"], down["gpus"]) == ("dgx-b", "0-7", 8)
    assert (down["start"], down["end"]) == (ts("2026-03-02 12:30"), ts("2026-03-02 18:30"))
    assert down["flagged"] and down["consumer"] == ""
    assert down["dollars_wasted"] == pytest.approx(48 * PER_GPU_HOUR, abs=1e-9)  # $67.20
    # Power lines split by energy: 13:00-18:00 all idle (5 x 1.20); 12:00-13:00 and 18:00-19:00 each
    # half busy (8 GPUs at 700 W) and half free (8 at 60 W): the free part is 60/760 of the line.
    saved = 5 * om.POWER + 2 * om.POWER * 60 / 760
    assert down["dollars_power_saved"] == pytest.approx(saved, abs=1e-9)
    assert round(down["dollars_power_saved"], 2) == 6.19

    consolidate = f.loc["consolidate"]
    assert (consolidate["resource_id"], consolidate["devices"], consolidate["hours"]) == ("dgx-a", "5-7", 24.0)
    assert consolidate["dollars_wasted"] == pytest.approx(3 * 24 * PER_GPU_HOUR, abs=1e-9)  # $100.80
    assert consolidate["dollars_power_saved"] == 0.0

    lend = f.loc["lend"]
    assert (lend["resource_id"], lend["devices"], lend["consumer"], lend["team"]) == ("dgx-a", "4", "notebook", "lab")
    assert lend["dollars_wasted"] == pytest.approx(24 * PER_GPU_HOUR, abs=1e-9)  # $33.60
    assert lend["dollars_power_saved"] == 0.0

    # The rented g5.xlarge beside them: terminate, as before, no power saved.
    cloud = f.loc["terminate"]
    assert cloud["resource_id"] == "i-cloud" and cloud["dollars_wasted"] == pytest.approx(4 * 1.006)
    assert cloud["dollars_power_saved"] == 0.0

    spans = report.spans
    assert set(spans.loc[spans["resource_id"] == "dgx-b", "kind"]) == {"power-down"}
    assert spans["dollars_power_saved"].sum() == pytest.approx(saved, abs=1e-9)


def test_without_power_readings_the_power_lines_device_time_share_is_saved():
    report = gpucost.find_idle(*om.tables(power=False))
    down = _by_action(report.findings).loc["power down"]
    assert down["dollars_power_saved"] == pytest.approx(6 * om.POWER, abs=1e-9)  # $7.20
    assert down["dollars_wasted"] == pytest.approx(48 * PER_GPU_HOUR, abs=1e-9)


def test_without_power_lines_nothing_is_saved_but_the_node_is_still_powered_down():
    usage, costs, inventory, workloads = om.tables()
    capex_only = costs[costs["component"] != "power"].drop(columns="driver")
    down = _by_action(gpucost.find_idle(usage, capex_only, inventory, workloads).findings).loc["power down"]
    assert down["dollars_power_saved"] == 0.0
    assert down["dollars_wasted"] == pytest.approx(48 * om.CAPEX / 8, abs=1e-9)


def test_rented_resources_are_unchanged():
    usage, costs, inventory, workloads = om.tables()
    rented = costs.assign(pricing=Purchase.ON_DEMAND)
    f = gpucost.find_idle(usage, rented, inventory, workloads).findings
    assert set(f["action"]) == {"terminate", "right-size", "release"}
    assert (f["dollars_power_saved"] == 0).all()
    without_pricing = gpucost.find_idle(usage, costs.drop(columns="pricing"), inventory, workloads).findings
    pd.testing.assert_frame_equal(without_pricing, f)


def test_the_policy_powers_owned_nodes_down():
    timeline = gpucost.idle_policy(*om.tables(with_cloud=True))
    final = timeline[timeline["decision"] != "alert"].set_index("resource_id")["decision"]
    assert final.to_dict() == {"i-cloud": "terminate", "dgx-b": "power down"}
