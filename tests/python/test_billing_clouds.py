"""Every cloud's bill joins its own nodes (issue 21): GCP (detailed and
standard export, CSV and JSON lines, the FOCUS view) with GKE nodes, Azure
cost details (amortized and actual) with AKS nodes spelled in another case,
AWS CUR 2.0 and legacy with EKS nodes. Primary lines, quantity_hours,
currency, duplicates and naive local times as the readers fill them.

Fixtures: tests/data/billing/{gke,aks,eks}_* and gcp_focus_view.csv, shaped
like each cloud's export (column names, id spellings, units)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import kubernetes

# The fixtures are slices of real exports: a CUD-covered line whose fee row is
# outside the slice, and nodes whose telemetry a test leaves out on purpose.
# Those warnings are tested where they are the subject (test_commitments_amortized,
# test_join); here the joins are checked through the diagnostics.
pytestmark = [pytest.mark.filterwarnings("ignore:.*committed-use discount whose fee is not in this export"),
              pytest.mark.filterwarnings("ignore::gpucost.JoinWarning")]

DATA = Path(__file__).resolve().parents[1] / "data" / "billing"
T10 = pd.Timestamp("2025-03-01T10:00:00Z")


def raw(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / name, dtype=str, keep_default_na=False, encoding="utf-8-sig")


def gpu_lines(costs: pd.DataFrame) -> pd.DataFrame:
    return costs[costs.gpu & costs.resource_id.notna()]


def money_by_currency(costs: pd.DataFrame) -> dict:
    return costs.groupby("currency", observed=True).cost.sum().to_dict()


def samples(resource_ids, start: pd.Timestamp, minutes: int, consumer: str = "ns/pod") -> pd.DataFrame:
    frames = []
    for i, rid in enumerate(resource_ids):
        t = start + pd.to_timedelta(np.arange(minutes), unit="min")
        frames.append(pd.DataFrame({"timestamp": t, "resource_id": rid, "device": 0, "consumer": f"{consumer}-{i}",
                                    "share": 1.0, "util": 0.5, "mem_used": 2.0**30}))
    return pd.concat(frames, ignore_index=True)


def assert_every_gpu_sample_joins(costs, nodes, start, minutes):
    gpu_nodes = nodes[nodes.resource_id.isin(set(gpu_lines(costs).resource_id.astype(str)))]
    assert len(gpu_nodes) > 0
    usage = samples(gpu_nodes.resource_id.tolist(), start, minutes)
    inventory = gpucost.inventory(costs)
    result = gpucost.allocate(costs, usage, inventory, by="consumer")
    diagnostics = result.attrs["diagnostics"]
    assert diagnostics["samples_unknown_resource"] == 0
    assert diagnostics["samples_used"] == len(usage)
    assert result.cost.sum() == pytest.approx(costs.cost.sum(), rel=1e-12)
    return result


# ---- GCP ---------------------------------------------------------------------------

GKE_NODES = DATA / "gke_nodes.json"


@pytest.mark.parametrize("name", ["gke_detailed.csv", "gke_detailed.jsonl"])
def test_gcp_detailed_export_joins_gke_nodes(name):
    costs = gpucost.read_gcp_billing(DATA / name)
    nodes = kubernetes.read_nodes(GKE_NODES)
    node_ids = set(nodes.resource_id)
    # Every VM line (GPU, core, memory) names its instance as the GKE node does.
    vm_lines = costs[costs.instance_id.notna()]
    assert set(vm_lines.resource_id.astype(str)) <= node_ids
    assert len(gpu_lines(costs)) == 9  # every SKU line of a GPU VM: A100 2 hours x 3, L4 spot 1 hour x 3
    assert set(gpu_lines(costs).resource_id.astype(str)) == {
        "projects/ml-prod/zones/us-central1-a/instances/gke-ml-a100-pool-1f2e3d4c-abcd",
        "projects/ml-prod/zones/us-central1-c/instances/gke-ml-l4-spot-9a8b7c6d-wxyz"}
    # The numeric id is kept, and joins GKE's instance_id annotation.
    by_id = dict(zip(nodes.instance_id, nodes.resource_id))
    for rid, iid in zip(vm_lines.resource_id.astype(str), vm_lines.instance_id.astype(str)):
        assert by_id[iid] == rid
    # A line that named its VM only by the numeric id got the name from the others.
    assert costs.resource_name.isna().sum() >= 1
    assert costs.attrs["billing"]["gcp_export"] == "detailed"
    # Money in = money out.
    frame = raw("gke_detailed.csv")
    credits = sum(c["amount"] for cell in frame.credits for c in json.loads(cell))
    assert costs.cost.sum() == pytest.approx(pd.to_numeric(frame.cost).sum() + credits, rel=1e-12)
    assert costs.attrs["billing"]["currencies"] == ["USD"]


def test_gcp_three_sku_vm_hour_has_one_primary_line():
    costs = gpucost.read_gcp_billing(DATA / "gke_detailed.csv")
    vm = costs[costs.resource_id.astype(str).str.endswith("gke-ml-a100-pool-1f2e3d4c-abcd")]
    for _, hour in vm.groupby("start"):
        assert len(hour) == 3
        primary = hour[hour.primary]
        assert len(primary) == 1
        assert "039F-D0DA-4055" == primary.sku.iloc[0]  # the GPU SKU
        assert primary.quantity_hours.iloc[0] == pytest.approx(1.0)
        assert hour[~hour.primary].quantity_hours.isna().all()
    # The spot L4 ran 30 minutes of its hour: 1800 GPU-seconds on one GPU.
    l4 = costs[costs.primary & costs.resource_id.astype(str).str.endswith("gke-ml-l4-spot-9a8b7c6d-wxyz")]
    assert l4.quantity_hours.tolist() == [pytest.approx(0.5)]
    # A VM without GPU: its core line is primary (28800 core-seconds on 8 cores: 1 h).
    cpu = costs[costs.primary & costs.resource_id.astype(str).str.endswith("gke-ml-cpu-pool-0a0b0c0d-q1w2")]
    assert cpu.sku.astype(str).tolist() == ["CF4E-A0C7-E3BF"]
    assert cpu.quantity_hours.tolist() == [pytest.approx(1.0)]
    # Storage and tax lines bill no instance time.
    assert not costs[costs.service.astype(str) == "Cloud Storage"].primary.any()
    assert not costs[costs.charge_category == "Tax"].primary.any()
    assert costs.attrs["billing"]["hours_beyond_period"] == []


def test_gcp_detailed_end_to_end_every_gpu_sample_joins():
    costs = gpucost.read_gcp_billing(DATA / "gke_detailed.csv")
    result = assert_every_gpu_sample_joins(costs, kubernetes.read_nodes(GKE_NODES), T10, 60)
    assert result[result.consumer == "__unattributed__"].cost.sum() == pytest.approx(
        costs[~costs.gpu].cost.sum(), rel=1e-12)


@pytest.mark.parametrize("name", ["gke_standard.csv", "gke_standard.jsonl"])
def test_gcp_standard_export_says_it_names_no_resources(name):
    costs = gpucost.read_gcp_billing(DATA / name)
    report = costs.attrs["billing"]
    assert report["gcp_export"] == "standard"
    assert costs.resource_id.isna().all() and not costs.primary.any()
    detailed = gpucost.read_gcp_billing(DATA / "gke_detailed.csv")
    assert costs.cost.sum() == pytest.approx(detailed.cost.sum(), rel=1e-12)


def test_gcp_focus_view_finds_gpu_lines_and_machine_types():
    costs = gpucost.read_focus(DATA / "gcp_focus_view.csv")
    detailed = gpucost.read_gcp_billing(DATA / "gke_detailed.csv")
    gpu = gpu_lines(costs)
    assert set(gpu.resource_id.astype(str)) == set(gpu_lines(detailed).resource_id.astype(str))
    assert set(gpu.instance_type.astype(str)) == {"a2-highgpu-1g", "g2-standard-8"}
    assert costs.primary.sum() == detailed.primary.sum()
    merged = costs[costs.primary].set_index(["resource_id", "start"]).quantity_hours.sort_index()
    expected = detailed[detailed.primary].set_index(["resource_id", "start"]).quantity_hours.sort_index()
    assert merged.to_dict() == pytest.approx(expected.to_dict())
    assert costs.cost.sum() == pytest.approx(detailed.cost.sum(), rel=1e-12)
    inventory = gpucost.inventory(costs)
    assert len(inventory) == 2
    assert_every_gpu_sample_joins(costs, kubernetes.read_nodes(GKE_NODES), T10, 60)


# ---- Azure ------------------------------------------------------------------------

AKS_NODES = DATA / "aks_nodes.json"


@pytest.mark.parametrize("name,dataset", [("aks_amortized.csv", "amortized"), ("aks_actual.csv", "actual")])
def test_azure_cost_details_join_aks_nodes_whatever_the_casing(name, dataset):
    costs = gpucost.read_azure_costs(DATA / name, dataset=dataset)
    nodes = kubernetes.read_nodes(AKS_NODES)
    # The bill spells the resource group in upper case and the scale set in
    # capitals; AKS's providerID otherwise: both become one lower-case spelling.
    assert all(rid == rid.lower() for rid in nodes.resource_id)
    assert set(gpu_lines(costs).resource_id.astype(str)) == set(nodes.resource_id)
    assert costs.attrs["billing"]["currencies"] == ["EUR"]
    assert costs.cost.sum() == pytest.approx(pd.to_numeric(raw(name).costInBillingCurrency).sum(), rel=1e-12)
    assert_every_gpu_sample_joins(costs, nodes, pd.Timestamp("2025-03-01T06:00:00Z"), 60)


def test_azure_partial_day_spot_vm_bills_its_quantity():
    costs = gpucost.read_azure_costs(DATA / "aks_amortized.csv")
    vm = costs[costs.primary]
    spot = vm[vm.pricing == "spot"]
    assert spot.quantity_hours.tolist() == [12.0]
    reserved = vm[vm.pricing == "reserved"]
    assert reserved.quantity_hours.tolist() == [24.0, 24.0]
    # The disk line is money, not hours.
    assert not costs[costs.service == "Storage"].primary.any()


# ---- AWS --------------------------------------------------------------------------

EKS_NODES = DATA / "eks_nodes.json"


@pytest.mark.parametrize("name", ["eks_cur2.csv", "eks_cur_legacy.csv"])
def test_cur_joins_eks_nodes_with_primary_lines_and_partial_hours(name):
    costs = gpucost.read_cur(DATA / name)
    nodes = kubernetes.read_nodes(EKS_NODES)
    assert set(gpu_lines(costs).resource_id.astype(str)) == set(nodes.resource_id)
    primary = costs[costs.primary].sort_values(["resource_id", "start"])
    assert primary.resource_id.astype(str).tolist() == ["i-0a1b2c3d4e5f60001"] * 2 + ["i-0a1b2c3d4e5f60002"]
    assert primary.quantity_hours.tolist() == [1.0, 0.25, 1.0]
    # The instance's data transfer line is not its time.
    transfer = costs[(costs.resource_id == "i-0a1b2c3d4e5f60001") & (costs.cost == 0.025)]
    assert len(transfer) == 1 and not transfer.primary.any()
    assert costs.attrs["billing"]["currencies"] == ["USD"]
    assert_every_gpu_sample_joins(costs, nodes, T10, 60)


def test_cur_day_loaded_twice_is_counted_once(tmp_path):
    text = (DATA / "eks_cur2.csv").read_text()
    header, body = text.split("\n", 1)
    twice = tmp_path / "twice.csv"
    twice.write_text(header + "\n" + body + body)
    once = gpucost.read_cur(DATA / "eks_cur2.csv")
    costs = gpucost.read_cur(twice)
    report = costs.attrs["billing"]
    assert report["rows_read"] == 2 * len(once)
    assert report["duplicates_dropped"] == len(once)
    assert len(costs) == len(once)
    assert costs.cost.sum() == pytest.approx(once.cost.sum(), rel=1e-12)
    assert report["hours_beyond_period"] == []


def test_overlapping_cur_parts_report_hours_beyond_the_period(tmp_path):
    frame = raw("eks_cur2.csv")
    other = frame.copy()
    other["identity_line_item_id"] = other.identity_line_item_id + "-part2"  # another part, other ids
    path = tmp_path / "parts.csv"
    pd.concat([frame, other]).to_csv(path, index=False)
    costs = gpucost.read_cur(path)
    report = costs.attrs["billing"]
    assert report["duplicates_dropped"] == 0
    assert report["hours_beyond_period"] == ["i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"]
    # Clipped: never more hours than the period has; still one primary line per period.
    primary = costs[costs.primary]
    assert (primary.quantity_hours <= (primary.end - primary.start).dt.total_seconds() / 3600).all()
    assert not primary.duplicated(["resource_id", "start"]).any()


@pytest.mark.parametrize("reader,name", [(gpucost.read_gcp_billing, "gke_detailed.csv"),
                                         (gpucost.read_gcp_billing, "gke_detailed.jsonl"),
                                         (gpucost.read_azure_costs, "aks_amortized.csv"),
                                         (gpucost.read_focus, "gcp_focus_view.csv")])
def test_rows_identical_in_every_column_are_dropped(tmp_path, reader, name):
    text = (DATA / name).read_text(encoding="utf-8-sig")
    if name.endswith(".jsonl"):
        doubled = text + text
    else:
        header, body = text.split("\n", 1)
        doubled = header + "\n" + body + body.split("\n", 1)[0] + "\n"  # the first row again
    path = tmp_path / name
    path.write_text(doubled)
    once = reader(DATA / name)
    costs = reader(path)
    expected = len(once) if name.endswith(".jsonl") else 1
    assert costs.attrs["billing"]["duplicates_dropped"] == expected
    assert costs.cost.sum() == pytest.approx(once.cost.sum(), rel=1e-12)


def test_arrow_rows_read_twice_are_dropped():
    frame = raw("aks_amortized.csv")
    doubled = pd.concat([frame, frame.iloc[:2]], ignore_index=True)
    costs = gpucost.read_azure_costs(doubled)
    assert costs.attrs["billing"]["duplicates_dropped"] == 2
    assert costs.cost.sum() == pytest.approx(gpucost.read_azure_costs(frame).cost.sum(), rel=1e-12)


# ---- naive local times ----------------------------------------------------------------


def test_naive_times_read_in_the_given_zone(tmp_path):
    text = (DATA / "gke_detailed.csv").read_text().replace(" UTC,", ",")
    path = tmp_path / "naive.csv"
    path.write_text(text)
    utc = gpucost.read_gcp_billing(path)
    assert utc.attrs["billing"]["naive_timestamps"] is True
    local = gpucost.read_gcp_billing(path, tz="America/Los_Angeles")
    # 1 March is winter time in Los Angeles: UTC-8.
    assert ((local.start - utc.start) == pd.Timedelta("8h")).all()
    assert ((local.end - local.start) == (utc.end - utc.start)).all()
    assert local.attrs["billing"]["tz"] == "America/Los_Angeles"
    zoned = gpucost.read_gcp_billing(DATA / "gke_detailed.csv", tz="America/Los_Angeles")
    assert zoned.attrs["billing"]["naive_timestamps"] is False
    assert (zoned.start == utc.start).all()  # " UTC" timestamps are read as written
    with pytest.raises(gpucost.InvalidInputError, match="tz"):
        gpucost.read_gcp_billing(path, tz="Mars/Olympus_Mons")


def test_naive_time_skipped_by_daylight_saving_is_an_error(tmp_path):
    text = (DATA / "gke_detailed.csv").read_text().replace(" UTC,", ",").replace("2025-03-01 10:", "2025-03-09 02:")
    path = tmp_path / "dst.csv"
    path.write_text(text)
    with pytest.raises(gpucost.InvalidInputError, match="daylight-saving"):
        gpucost.read_gcp_billing(path, tz="America/Los_Angeles")


# ---- nodes --------------------------------------------------------------------------


def test_read_nodes_rejects_two_nodes_on_one_instance(tmp_path):
    text = (DATA / "eks_nodes.json").read_text().replace("i-0a1b2c3d4e5f60002", "i-0a1b2c3d4e5f60001")
    path = tmp_path / "nodes.json"
    path.write_text(text)
    with pytest.raises(gpucost.InvalidInputError,
                       match="ip-10-0-1-17.ec2.internal' and 'ip-10-0-2-33.ec2.internal"):
        kubernetes.read_nodes(path)
