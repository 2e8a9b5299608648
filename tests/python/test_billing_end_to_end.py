"""A FOCUS bill with GPU instances + simulated GPU usage -> gpucost.allocate
-> tagged and shared costs: the totals always match the bill."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost

BILL = Path(__file__).resolve().parents[1] / "data" / "billing" / "focus_1_2.csv"
# The bill names instances by ARN; the reader writes the instance id (i-...)
# that nodes and DCGM use, and the simulated telemetry uses it.
T10 = pd.Timestamp("2025-03-01T10:00:00Z")


def bill_total(column: str = "EffectiveCost") -> float:
    raw = pd.read_csv(BILL, dtype=str, keep_default_na=False)
    return float(pd.to_numeric(raw[column].replace({"": "0", "null": "0"})).sum())


def samples(resource: str, devices, consumer: str, start: pd.Timestamp, minutes: int, util: float = 0.9):
    t = start + pd.to_timedelta(np.arange(minutes), unit="min")
    return pd.DataFrame({
        "timestamp": np.repeat(t.to_numpy(), len(devices)),
        "resource_id": resource,
        "device": np.tile(np.asarray(devices, dtype=np.int32), minutes),
        "consumer": consumer,
        "share": 1.0,
        "util": util,
        "mem_used": 20 * 2.0**30,
    })


@pytest.fixture(scope="module")
def setting():
    costs = gpucost.read_focus(BILL)
    inventory = gpucost.inventory(costs)
    usage = pd.concat([
        samples("i-0aaa", range(8), "llm-pretrain", T10, 60),
        samples("i-0bbb", range(4), "serve-a", T10, 60),
        samples("i-0bbb", range(4, 8), "", T10, 60, util=0.0),  # observed free
        samples("i-0ccc", range(8), "sweep-7", T10 + pd.Timedelta("1h"), 30),
        samples("i-0fff", [0], "cv-notebook", T10, 30),
    ], ignore_index=True)
    workloads = pd.DataFrame({"consumer": ["llm-pretrain", "serve-a", "sweep-7", "cv-notebook"],
                              "project": ["p-llm", "p-inference", "p-research", "p-cv"]})
    return costs, inventory, usage, workloads


def test_inventory_from_the_bill(setting):
    _, inventory, _, _ = setting
    devices = inventory.groupby("resource_id").size()
    assert devices["i-0aaa"] == 8 and devices["i-0fff"] == 1
    assert len(devices) == 4  # p4d x3 (on-demand, savings plan, spot) and the g5


def test_allocation_totals_match_the_bill(setting):
    costs, inventory, usage, workloads = setting
    result = gpucost.allocate(costs, usage, inventory, workloads, by="project")
    assert result.cost.sum() == pytest.approx(bill_total(), rel=1e-12)
    by = result.set_index("project").cost
    assert by["p-llm"] == pytest.approx(32.7726)           # the whole on-demand hour
    assert by["p-inference"] == pytest.approx(20.3190 / 2)  # half the covered p4d, at the SP rate
    assert by["p-research"] == pytest.approx(4.9159)        # the spot half hour
    assert by["p-cv"] == pytest.approx(1.006 / 2)
    assert by["__idle__"] == pytest.approx(20.3190 / 2 + 1.006 / 2)
    # Purchase (0), unused commitment, EBS, NAT, tax and credit lines.
    assert by["__unattributed__"] == pytest.approx(0 + 4.681 + 0.0125 + 0.45 + 3.10 - 5.00)
    assert result.attrs["diagnostics"]["lines_total"] == len(costs)
    # The billed amount reconciles too.
    billed = gpucost.read_focus(BILL, amount="billed")
    assert gpucost.allocate(billed, usage, inventory, workloads, by="project").cost.sum() == pytest.approx(
        bill_total("BilledCost"), rel=1e-12)


def test_tagged_and_shared_costs_reconcile(setting):
    costs, inventory, usage, workloads = setting
    result = gpucost.allocate(costs, usage, inventory, workloads, by="project")
    tagged = gpucost.attribute_tagged(result, costs, tag="project-id", inventory=inventory)
    assert tagged.cost.sum() == pytest.approx(bill_total(), rel=1e-12)
    row = tagged.set_index("project")
    assert row.loc["p-llm", "tagged_cost"] == pytest.approx(0.0125)  # the checkpoint volume
    assert row.loc["p-llm", "gpu_cost"] == pytest.approx(32.7726)
    assert row.loc["__unattributed__", "unattributed_cost"] == pytest.approx(4.681 + 0.45 + 3.10 - 5.00)
    assert row.loc["p-llm", "gpu_hours"] == pytest.approx(8.0)

    shared = gpucost.share_costs(tagged, costs, {"service": "Amazon Virtual Private Cloud"}, by="project",
                                 inventory=inventory)
    assert shared.cost.sum() == pytest.approx(bill_total(), rel=1e-12)
    s = shared.set_index("project")
    weights = row["gpu_cost"].drop(["__idle__", "__unattributed__"])
    for project, weight in weights.items():
        assert s.loc[project, "shared_cost"] == pytest.approx(0.45 * weight / weights.sum())
        assert s.loc[project, "own_cost"] == pytest.approx(row.loc[project, "cost"])
    assert s.loc["__unattributed__", "shared_cost"] == pytest.approx(-0.45)
    assert s.loc["__idle__", "shared_cost"] == 0

    even = gpucost.share_costs(tagged, costs, lambda c: c.service == "Amazon Virtual Private Cloud",
                               by="project", split="even", inventory=inventory)
    assert even.set_index("project").loc["p-cv", "shared_cost"] == pytest.approx(0.45 / 4)
    assert even.cost.sum() == pytest.approx(bill_total(), rel=1e-12)


def test_gpu_column_stands_in_for_the_inventory(setting):
    costs, inventory, usage, workloads = setting
    result = gpucost.allocate(costs, usage, inventory, workloads, by="project")
    with_inventory = gpucost.attribute_tagged(result, costs, tag=["project", "project-id"], inventory=inventory)
    with_gpu_flag = gpucost.attribute_tagged(result, costs, tag=["project", "project-id"])
    pd.testing.assert_frame_equal(with_inventory, with_gpu_flag)


def test_mismatched_inputs_are_refused(setting):
    costs, inventory, usage, workloads = setting
    result = gpucost.allocate(costs, usage, inventory, workloads, by="project")
    with pytest.raises(gpucost.InvalidInputError, match="pass the cost lines and inventory the allocation was made"):
        gpucost.attribute_tagged(result, costs.iloc[:-1], inventory=inventory)
    with pytest.raises(gpucost.InvalidInputError, match="a selected shared line is a GPU line"):
        gpucost.share_costs(result, costs, {"resource_id": "i-0aaa"}, by="project", inventory=inventory)
    tagged = gpucost.attribute_tagged(result, costs, inventory=inventory)
    with pytest.raises(gpucost.InvalidInputError, match="cannot be shared again"):
        everything_outside = ~costs.resource_id.astype(str).str.startswith("i-")
        gpucost.share_costs(tagged, costs, everything_outside.to_numpy() & costs.cost.gt(0).to_numpy(),
                            by="project", inventory=inventory)
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'split'"):
        gpucost.share_costs(result, costs, {"service": "Tax"}, by="project", split="fair", inventory=inventory)
