"""gpucost.rightsize: the seed's p4d example ($32.77/h, 8 GPUs, 22 %
utilisation -> $18.62 per useful GPU-hour vs $4.10), 2 of 8 GPUs busy (4x),
a cheaper fit from a catalog, inference moved off training-grade GPUs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost.simulate import P4D_HOURLY
from scenarios import concat, inventory, lines, series

# A small catalog of our own (test prices, not a price list).
CATALOG = pd.DataFrame([
    ("aws", "p4d.24xlarge", "A100 40GB", 8, 40, P4D_HOURLY),
    ("aws", "g5.xlarge", "A10G", 1, 24, 1.006),
    ("gcp", "a2-highgpu-8g", "A100 40GB", 8, 40, 32.0),
    ("gcp", "a2-highgpu-4g", "A100 40GB", 4, 40, 16.0),
    ("gcp", "a2-highgpu-2g", "A100 40GB", 2, 40, 8.0),
    ("gcp", "a2-highgpu-1g", "A100 40GB", 1, 40, 4.0),
    ("gcp", "g2-standard-4", "L4", 1, 24, 0.8),
    ("gcp", "g2-standard-96", "L4", 8, 24, np.nan),   # no known price: never recommended
], columns=["provider", "instance_type", "gpu_model", "gpus", "gpu_memory_gib", "on_demand_hourly"])


def p4d_hour(utils, consumer="ml/train"):
    """One hour of a p4d.24xlarge at $32.77 with one pod on all 8 GPUs."""
    costs = lines("i-p4d", "2026-03-02 10:00", 1, P4D_HOURLY, list_cost=P4D_HOURLY)
    usage = concat(*[series("i-p4d", d, consumer, "2026-03-02 10:00", "2026-03-02 11:00", u, mem_gib=20)
                     for d, u in enumerate(utils)])
    return usage, costs, inventory("i-p4d", 8)


def test_seed_p4d_example_cost_per_useful_gpu_hour():
    usage, costs, inv = p4d_hour([0.22] * 8)
    r = gpucost.rightsize(usage, costs, inv, catalog=CATALOG).iloc[0]
    assert r["cost"] == pytest.approx(32.77)
    assert r["gpu_hours"] == pytest.approx(8.0)
    assert r["effective_gpu_hours"] == pytest.approx(1.76)
    assert r["cost_per_gpu_hour"] == pytest.approx(32.77 / 8, rel=1e-12)              # $4.10
    assert r["cost_per_useful_gpu_hour"] == pytest.approx(32.77 / 8 / 0.22, rel=1e-12)  # $18.62
    assert round(r["cost_per_gpu_hour"], 2) == 4.10 and round(r["cost_per_useful_gpu_hour"], 2) == 18.62
    # The allocation says the same.
    alloc = gpucost.allocate(costs, usage, inv).set_index("consumer")
    assert alloc.loc["ml/train", "cost_per_effective_gpu_hour"] == pytest.approx(r["cost_per_useful_gpu_hour"])


def test_two_of_eight_gpus_busy_costs_four_times_per_useful_gpu():
    usage, costs, inv = p4d_hour([1.0, 1.0] + [0.0] * 6)
    r = gpucost.rightsize(usage, costs, inv, catalog=CATALOG).iloc[0]
    assert r["cost_per_useful_gpu_hour"] == pytest.approx(32.77 / 2)
    assert r["useful_cost_ratio"] == pytest.approx(4.0)
    assert (r["devices"], r["devices_busy"]) == (8, 2)
    assert r["gpus_held"] == pytest.approx(8.0)
    assert r["gpus_busy"] == pytest.approx(2.0)
    assert r["peak_gpus_busy"] == pytest.approx(2.0)
    assert r["peak_mem_gib"] == pytest.approx(20.0)
    # 2 busy GPUs + 20 % headroom = 3 GPUs with 24 GiB each. The bill names
    # no instance type, so any provider and model may fit: 4 x A100 at $16/h.
    assert r["need_gpus"] == 3 and r["need_mem_gib"] == pytest.approx(24.0)
    assert r["instance_type"] == ""
    assert r["recommended_instance_type"] == "a2-highgpu-4g"
    assert r["monthly_saving"] == pytest.approx((32.77 - 16.0) * 730)
    # Known to be a p4d (AWS, A100): this catalog has nothing smaller.
    instances = pd.DataFrame({"resource_id": ["i-p4d"], "instance_type": ["p4d.24xlarge"]})
    known = gpucost.rightsize(usage, costs, inv, catalog=CATALOG, instances=instances).iloc[0]
    assert (known["recommended_instance_type"], known["monthly_saving"], known["reason"]) == \
        ("", 0.0, "no cheaper fit")


def test_cheaper_fit_same_model_for_training():
    usage, costs, inv = p4d_hour([1.0, 1.0] + [0.0] * 6)
    costs = costs.assign(cost=32.0, list_cost=32.0)
    instances = pd.DataFrame({"resource_id": ["i-p4d"], "instance_type": ["a2-highgpu-8g"]})
    r = gpucost.rightsize(usage, costs, inv, catalog=CATALOG, instances=instances).iloc[0]
    assert (r["instance_type"], r["gpu_model"]) == ("a2-highgpu-8g", "A100 40GB")
    assert (r["recommended_instance_type"], r["recommended_gpus"]) == ("a2-highgpu-4g", 4)
    assert r["current_hourly"] == pytest.approx(32.0)
    assert r["recommended_hourly"] == pytest.approx(16.0)
    # $16/h saved over the whole observed hour, scaled to a 730-hour month.
    assert r["monthly_saving"] == pytest.approx(16.0 * 730)
    assert r["reason"] == "cheaper fit"
    # The instance type may also come from the cost lines (billing readers add it).
    from_bill = gpucost.rightsize(usage, costs.assign(instance_type="a2-highgpu-8g"), inv, catalog=CATALOG)
    assert from_bill["recommended_instance_type"].iloc[0] == "a2-highgpu-4g"


def test_inference_moves_off_training_grade_gpus():
    """An inference pod on one A100 of eight (1/8 of $32/h) using 10 GiB at
    30 %: any model may do; the cheapest covering type is an L4."""
    costs = lines("i-a2", "2026-03-02 00:00", 2, 32.0, list_cost=32.0)
    usage = concat(series("i-a2", 0, "web/llm", "2026-03-02 00:00", "2026-03-02 02:00", 0.3, mem_gib=10),
                   series("i-a2", 1, "ml/train", "2026-03-02 00:00", "2026-03-02 02:00", 0.3, mem_gib=10))
    workloads = pd.DataFrame({"consumer": ["web/llm", "ml/train"], "class": ["inference", "training"],
                              "team": ["web", "ml"]})
    instances = pd.DataFrame({"resource_id": ["i-a2"], "instance_type": ["a2-highgpu-8g"]})
    r = gpucost.rightsize(usage, costs, inventory("i-a2", 8), workloads, catalog=CATALOG,
                          instances=instances).set_index("consumer")
    web, train = r.loc["web/llm"], r.loc["ml/train"]
    assert (web["recommended_instance_type"], web["recommended_gpu_model"]) == ("g2-standard-4", "L4")
    assert web["current_hourly"] == pytest.approx(4.0)
    assert web["monthly_saving"] == pytest.approx((4.0 - 0.8) * 730)
    # Training keeps its model: one A100 at $4/h is what it pays already.
    assert train["recommended_instance_type"] == "" and train["monthly_saving"] == 0.0
    assert train["reason"] == "no cheaper fit"
    # By label: the same groups keyed by team.
    by_team = gpucost.rightsize(usage, costs, inventory("i-a2", 8), workloads, by="team", catalog=CATALOG,
                                instances=instances)
    assert set(by_team["team"]) == {"web", "ml"}
    assert by_team["cost"].sum() == pytest.approx(16.0)


def test_default_catalog_is_the_embedded_one():
    """An inference pod on one GPU of a p4d.24xlarge: the embedded catalog's
    cheapest priced AWS type with a 24 GiB GPU."""
    costs = lines("i-p4d", "2026-03-02 00:00", 1, P4D_HOURLY, list_cost=P4D_HOURLY)
    usage = series("i-p4d", 0, "web/llm", "2026-03-02 00:00", "2026-03-02 01:00", 0.3, mem_gib=10)
    workloads = pd.DataFrame({"consumer": ["web/llm"], "class": ["inference"]})
    instances = pd.DataFrame({"resource_id": ["i-p4d"], "instance_type": ["p4d.24xlarge"]})
    embedded = gpucost.catalog.instance_types()
    priced = embedded[(embedded["provider"] == "aws") & embedded["on_demand_hourly"].notna() &
                      (embedded["gpu_memory_gib"] >= 12)].sort_values("on_demand_hourly").iloc[0]
    r = gpucost.rightsize(usage, costs, inventory("i-p4d", 8), workloads, instances=instances).iloc[0]
    assert (r["instance_type"], r["gpu_model"]) == ("p4d.24xlarge", "A100 40GB")
    assert r["recommended_instance_type"] == priced["instance_type"]
    assert r["monthly_saving"] == pytest.approx((P4D_HOURLY / 8 - priced["on_demand_hourly"]) * 730)


def test_bad_catalog_and_parameters():
    usage, costs, inv = p4d_hour([0.5] * 8)
    with pytest.raises(gpucost.InvalidInputError, match="catalog: missing required column 'gpu_memory_gib'"):
        gpucost.rightsize(usage, costs, inv, catalog=CATALOG.drop(columns="gpu_memory_gib"))
    with pytest.raises(gpucost.InvalidInputError, match="catalog: row 2, column 'gpus'"):
        gpucost.rightsize(usage, costs, inv, catalog=CATALOG.assign(gpus=[8, 1, 0, 4, 2, 1, 1, 8]))
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'by'"):
        gpucost.rightsize(usage, costs, inv, by="team", catalog=CATALOG)
