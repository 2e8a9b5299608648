"""gpucost.buy_vs_rent on the owned day of owned_month.py, by hand: the
owned cost per GPU-hour, per GPU-hour used, the rate of renting the same GPU
(given, from the bill's rate-card lines, from the catalog) and the break-even
utilisation (issue 31, item 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
import owned_month as om
from gpucost.model import Purchase
from scenarios import concat, lines, series

TOTAL = 2 * 24 * (om.CAPEX + om.POWER) + om.OPERATIONS      # $561.60 of owned lines
GPU_HOURS = 2 * 8 * 24                                       # 384 GPU-hours billed
HELD = 5 * 24 + 8 * 18                                       # dgx-a GPUs 0-4 all day, dgx-b 18 h: 264
BUSY = 4 * 24 * 0.9 + 8 * 18 * 0.8                           # 201.6 effective GPU-hours
H100_RATES = pd.DataFrame({"gpu_model": ["H100 80GB"], "hourly": [2.49]})


def test_by_hand_at_the_gpu_hours_held():
    usage, costs, inventory, _ = om.tables()
    view = gpucost.buy_vs_rent(costs, usage, inventory, rates=H100_RATES)
    assert len(view) == 1
    row = view.iloc[0]
    assert (row["gpu_model"], row["nodes"], row["gpus"]) == ("H100 80GB", 2, 16)
    assert row["owned_gpu_hours"] == pytest.approx(GPU_HOURS)
    assert row["owned_cost"] == pytest.approx(TOTAL, abs=1e-9)                    # money in = money out
    assert row["shared_cost"] == pytest.approx(om.OPERATIONS, abs=1e-9)           # operations: no GPU, shared
    assert row["owned_cost_per_gpu_hour"] == pytest.approx(561.60 / 384, abs=1e-12)  # $1.4625
    assert row["used_gpu_hours"] == pytest.approx(HELD)
    assert row["utilisation"] == pytest.approx(264 / 384)                          # 68.75 %
    assert row["owned_cost_per_used_gpu_hour"] == pytest.approx(561.60 / 264, abs=1e-12)  # $2.1273
    assert (row["cloud_rate"], row["rate_source"]) == (2.49, "rates")
    assert row["break_even_utilisation"] == pytest.approx(1.4625 / 2.49, abs=1e-12)  # 58.7 %
    assert row["rent_cost"] == pytest.approx(264 * 2.49, abs=1e-9)                # $657.36
    assert round(row["owning_saves"], 2) == 95.76                                  # 657.36 - 561.60


def test_by_hand_at_the_gpu_hours_kept_busy():
    usage, costs, inventory, _ = om.tables()
    row = gpucost.buy_vs_rent(costs, usage, inventory, rates=H100_RATES, basis="used").iloc[0]
    assert row["used_gpu_hours"] == pytest.approx(BUSY)
    assert row["utilisation"] == pytest.approx(201.6 / 384)                        # 52.5 %
    assert row["owned_cost_per_used_gpu_hour"] == pytest.approx(561.60 / 201.6, abs=1e-12)  # $2.7857
    assert round(row["owning_saves"], 3) == round(201.6 * 2.49 - 561.60, 3)        # -59.616: renting is cheaper
    assert row["break_even_utilisation"] == pytest.approx(1.4625 / 2.49, abs=1e-12)


def test_the_rate_comes_from_the_bills_rate_card_lines_or_the_catalog():
    usage, costs, inventory, _ = om.tables()
    burst = lines("burst-1", om.DAY, 10, 8 * 2.49, pricing=Purchase.RATE_CARD).assign(gpu_model="H100 80GB")
    burst_inventory = pd.DataFrame({"resource_id": "burst-1", "device": np.arange(8), "mem_capacity": 80.0 * 2**30})
    burst_usage = concat(*[series("burst-1", d, "sweep", om.DAY, f"{om.DAY} 10:00", 0.9, power_w=700.0)
                           for d in range(8)])
    row = gpucost.buy_vs_rent(concat(costs, burst), concat(usage, burst_usage),
                              concat(inventory, burst_inventory)).iloc[0]
    assert row["cloud_rate"] == pytest.approx(2.49, abs=1e-12)
    assert row["rate_source"] == "the bill's rate-card lines"
    assert row["owned_cost"] == pytest.approx(TOTAL, abs=1e-9)                     # the burst lines are not owned
    # A given rate wins over the bill's.
    given = gpucost.buy_vs_rent(concat(costs, burst), concat(usage, burst_usage), concat(inventory, burst_inventory),
                                rates=H100_RATES.assign(hourly=3.0)).iloc[0]
    assert (given["cloud_rate"], given["rate_source"]) == (3.0, "rates")
    # An A100 40GB node: the catalog's p4d.24xlarge, $32.77 an hour for 8 GPUs.
    a100 = gpucost.buy_vs_rent(costs.assign(gpu_model="A100 40GB"), usage, inventory).iloc[0]
    assert a100["cloud_rate"] == pytest.approx(32.77 / 8, abs=1e-12)
    assert a100["rate_source"].startswith("catalog: p4d.24xlarge on demand (aws us-east-1")
    # No rate anywhere: the comparison is left empty, never made up.
    none = gpucost.buy_vs_rent(costs, usage, inventory).iloc[0]
    assert np.isnan(none["cloud_rate"]) and none["rate_source"] == "none" and np.isnan(none["owning_saves"])


def test_groups_by_model_and_node_class():
    usage, costs, inventory, _ = om.tables()
    mixed = costs.assign(gpu_model=np.where(costs["resource_id"] == "dgx-b", "H200 141GB", costs["gpu_model"]))
    view = gpucost.buy_vs_rent(mixed, usage, inventory).set_index("gpu_model")
    assert list(view.index) == ["H100 80GB", "H200 141GB"]
    assert view["owned_cost"].sum() == pytest.approx(TOTAL, abs=1e-9)
    assert view["shared_cost"].tolist() == pytest.approx([12.0, 12.0])             # operations by GPU-hours
    # Without gpu_model, the instance type's model in the catalog (dgx-h100 is in it), else the type (a node
    # class) itself.
    by_type = gpucost.buy_vs_rent(costs.drop(columns="gpu_model"), usage, inventory)
    assert by_type["gpu_model"].tolist() == ["H100 80GB"]
    classes = gpucost.buy_vs_rent(costs.drop(columns="gpu_model").assign(instance_type="lab-node"), usage, inventory)
    assert classes["gpu_model"].tolist() == ["lab-node"]


def test_bad_input():
    usage, costs, inventory, _ = om.tables()
    with pytest.raises(gpucost.InvalidInputError, match="costs: missing required column 'pricing'"):
        gpucost.buy_vs_rent(costs.drop(columns="pricing"), usage, inventory)
    with pytest.raises(gpucost.InvalidInputError, match="costs: no line has pricing 'owned'"):
        gpucost.buy_vs_rent(costs.assign(pricing=Purchase.ON_DEMAND), usage, inventory)
    with pytest.raises(gpucost.InvalidInputError, match="rates: missing required column 'hourly'"):
        gpucost.buy_vs_rent(costs, usage, inventory, rates=H100_RATES.drop(columns="hourly"))
    with pytest.raises(gpucost.InvalidInputError, match=r"rates: row 1, column 'hourly'"):
        gpucost.buy_vs_rent(costs, usage, inventory, rates=pd.DataFrame({"gpu_model": ["a", "b"],
                                                                         "hourly": [1.0, -2.0]}))
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'basis'"):
        gpucost.buy_vs_rent(costs, usage, inventory, basis="blended")
