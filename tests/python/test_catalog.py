"""gpucost.catalog: the embedded instance types and MIG profiles, user rows,
and gpucost.inventory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import catalog

GIB = 2.0**30


def test_instance_types_frame_has_the_issue_figures():
    types = catalog.instance_types()
    assert list(types.columns) == [
        "provider", "instance_type", "gpu_model", "gpus", "gpu_fraction", "gpu_memory_gib", "vcpus",
        "memory_gib", "mig_capable", "on_demand_hourly", "price_region", "price_date", "price_source",
        "gpu_tdp_w", "node_max_power_w", "spec_source",
    ]
    row = types.set_index("instance_type").loc["p4d.24xlarge"]
    assert (row.provider, row.gpu_model, row.gpus, row.gpu_memory_gib) == ("aws", "A100 40GB", 8, 40)
    assert row.on_demand_hourly == pytest.approx(32.77)
    assert row.price_region == "us-east-1"
    indexed = types.set_index("instance_type")
    assert indexed.loc["g5.xlarge", "on_demand_hourly"] == pytest.approx(1.006)
    assert indexed.loc["g2-standard-4", "gpu_model"] == "L4 24GB"
    assert indexed.loc["Standard_NC4as_T4_v3", "on_demand_hourly"] == pytest.approx(0.526)
    assert set(types.provider) == {"aws", "gcp", "azure", "onprem"}  # onprem: AMD nodes (issue 15)
    # A price always comes with its source; unknown prices are NaN, never 0.
    priced = types[types.on_demand_hourly.notna()]
    assert (priced.price_source != "").all() and (priced.price_region != "").all()
    assert (types.on_demand_hourly.dropna() > 0).all()
    assert types.gpus.dtype == np.int64 and types.mig_capable.dtype == bool
    # Owned nodes (issue 31): nameplate power from a datasheet, named in spec_source; no price.
    owned = indexed.loc[["dgx-h100", "hgx-h100-8", "dgx-h200", "dgx-b200", "dgx-a100-80gb", "amd-mi300x-oam-8"]]
    assert owned.gpus.tolist() == [8] * 6 and owned.on_demand_hourly.isna().all()
    assert owned.gpu_tdp_w.tolist() == [700, 700, 700, 1000, 400, 750]
    assert owned.loc["dgx-b200", "gpu_memory_gib"] * 8 == 1440 and owned.loc["dgx-b200", "node_max_power_w"] == 14300
    nameplate = types[(types.gpu_tdp_w > 0) | (types.node_max_power_w > 0)]
    assert (nameplate.spec_source != "").all()


def test_mig_profiles_and_shares():
    profiles = catalog.mig_profiles()
    assert set(profiles.gpu_model) == {"A100 40GB", "A100 80GB", "H100 80GB", "H200 141GB", "A30 24GB",
                                       "A800 40GB", "A800 80GB", "H800 80GB", "H100 94GB", "H800 94GB",
                                       "H100 96GB", "H20 96GB", "GH200 96GB", "GH200 144GB"}
    a30 = profiles[profiles.gpu_model == "A30 24GB"]
    assert set(a30.compute_total) == {4} and set(a30.memory_total) == {4}
    assert catalog.mig_share("A100 80GB", "1g.10gb") == pytest.approx(1 / 7)
    assert catalog.mig_share("A100 80GB", "1g.10gb", basis="memory") == pytest.approx(1 / 8)
    assert catalog.mig_share("NVIDIA A100-SXM4-40GB", "3g.20gb", basis="memory") == pytest.approx(0.5)
    assert catalog.mig_share("NVIDIA A30", "2g.12gb") == pytest.approx(0.5)
    with pytest.raises(gpucost.InvalidInputError, match="unknown MIG profile '9g.1gb'"):
        catalog.mig_share("A100 80GB", "9g.1gb")
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'basis'"):
        catalog.mig_share("A100 80GB", "1g.10gb", basis="sm")
    assert catalog.canonical_gpu_model("NVIDIA H100 80GB HBM3") == "H100 80GB"


@pytest.mark.parametrize("name, canonical, profile, share", [
    ("NVIDIA A800-SXM4-80GB", "A800 80GB", "3g.40gb", 3 / 7),   # A100 80GB profiles
    ("NVIDIA A800-SXM4-40GB", "A800 40GB", "1g.5gb", 1 / 7),
    ("NVIDIA H800", "H800 80GB", "2g.20gb", 2 / 7),             # H100 80GB profiles
    ("NVIDIA H100 NVL", "H100 94GB", "3g.47gb", 3 / 7),
    ("NVIDIA H800 NVL", "H800 94GB", "7g.94gb", 1.0),
    ("NVIDIA H20", "H20 96GB", "4g.48gb", 4 / 7),
    ("NVIDIA GH200 480GB", "GH200 96GB", "1g.24gb", 1 / 7),     # the superchip's memory, a 96 GB GPU
    ("NVIDIA GH200 144G HBM3e", "GH200 144GB", "3g.72gb", 3 / 7),
    ("NVIDIA H200 NVL", "H200 141GB", "1g.18gb", 1 / 7),
])
def test_mig_catalog_hopper_and_export_variants(name, canonical, profile, share):
    assert catalog.canonical_gpu_model(name) == canonical
    assert catalog.mig_share(name, profile) == pytest.approx(share)


def test_user_rows_override_and_extend():
    own = pd.DataFrame({
        "provider": ["aws", "onprem"],
        "instance_type": ["p4d.24xlarge", "dgx-h100"],
        "gpu_model": ["A100 40GB", "NVIDIA H100 80GB HBM3"],
        "gpus": [8, 8],
        "gpu_memory_gib": [40.0, 80.0],
        "on_demand_hourly": [21.5, np.nan],
    })
    types = catalog.instance_types(catalog=own).set_index("instance_type")
    assert types.loc["p4d.24xlarge", "on_demand_hourly"] == pytest.approx(21.5)
    assert types.loc["dgx-h100", "gpu_model"] == "H100 80GB"
    assert np.isnan(types.loc["dgx-h100", "on_demand_hourly"])
    # The embedded catalog is unchanged.
    assert catalog.instance_types().set_index("instance_type").loc["p4d.24xlarge", "on_demand_hourly"] == 32.77
    mig = pd.DataFrame({"gpu_model": ["L40S"], "profile": ["2g.24gb"], "compute_slices": [2],
                        "compute_total": [4], "memory_slices": [2], "memory_total": [4], "memory_gib": [24]})
    both = catalog.with_rows(instance_types=own, mig_profiles=mig)
    assert catalog.mig_share("L40S 48GB", "2g.24gb", catalog=both) == 0.5


def test_bad_user_rows_name_row_and_column():
    bad = pd.DataFrame({"provider": ["x", "x"], "instance_type": ["a", "b"], "gpu_model": ["A10", "A10"],
                        "gpus": [1, -2], "gpu_memory_gib": [24, 24]})
    with pytest.raises(gpucost.InvalidInputError, match=r"row 1, column 'gpus': -2 is negative"):
        catalog.instance_types(catalog=bad)
    with pytest.raises(gpucost.InvalidInputError, match="missing required column 'gpu_memory_gib'"):
        catalog.instance_types(catalog=bad.drop(columns="gpu_memory_gib"))


def test_inventory_from_a_resource_table():
    resources = pd.DataFrame({"resource_id": ["i-1", "i-2", "i-1"],
                              "instance_type": ["p4d.24xlarge", "g5.xlarge", "p4d.24xlarge"]})
    inv = gpucost.inventory(resources)
    assert list(inv.columns) == ["resource_id", "device", "mem_capacity"]
    assert len(inv) == 9
    assert list(inv.device[inv.resource_id == "i-1"]) == list(range(8))
    assert (inv.mem_capacity[inv.resource_id == "i-1"] == 40 * GIB).all()
    assert (inv.mem_capacity[inv.resource_id == "i-2"] == 24 * GIB).all()


def test_inventory_unknown_instance_type_unless_own_rows():
    resources = pd.DataFrame({"resource_id": ["host-1"], "instance_type": ["dgx-a100"]})
    with pytest.raises(gpucost.InvalidInputError, match=r"inventory: row 0, column 'instance_type': unknown instance type 'dgx-a100'"):
        gpucost.inventory(resources)
    own = pd.DataFrame({"provider": ["onprem"], "instance_type": ["dgx-a100"], "gpu_model": ["A100 80GB"],
                        "gpus": [8], "gpu_memory_gib": [80]})
    inv = gpucost.inventory(resources, catalog=own)
    assert len(inv) == 8 and (inv.mem_capacity == 80 * GIB).all()


def test_inventory_rejects_conflicting_types():
    resources = pd.DataFrame({"resource_id": ["i-1", "i-1"], "instance_type": ["g5.xlarge", "g6.xlarge"]})
    with pytest.raises(gpucost.InvalidInputError, match="resource 'i-1' is 'g6.xlarge' here but 'g5.xlarge' on row 0"):
        gpucost.inventory(resources)


def test_inventory_from_cost_lines_skips_non_gpu_lines():
    t0 = pd.Timestamp("2026-03-01", tz="UTC")
    costs = pd.DataFrame({
        "resource_id": ["i-1", "vol-1", None, "i-9", "i-1"],
        "start": [t0] * 5,
        "end": [t0 + pd.Timedelta("1h")] * 5,
        "cost": [32.77, 0.1, 5.0, 0.2, 1.0],
        "instance_type": ["p4d.24xlarge", None, None, "m5.large", None],
        "gpu": [True, False, False, False, True],
    })
    inv = gpucost.inventory(costs)
    assert set(inv.resource_id) == {"i-1"} and len(inv) == 8
