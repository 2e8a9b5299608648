"""Bill and scheduler readers on the shapes real exporters write (issue 15,
billing half): rows, totals to the cent, join ids against each cloud's own
nodes, unknown extra columns ignored, clear errors outside the format.
Fixtures: tests/data/real/ (SOURCES.md, "Bills and schedulers")."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost

REAL = Path(__file__).resolve().parents[1] / "data" / "real"


def _nodes(cloud: str) -> set[str]:
    return set(gpucost.kubernetes.read_nodes(REAL / f"kubectl_get_nodes_{cloud}.json")["resource_id"].astype(str))


def _primary_ids(costs: pd.DataFrame) -> set[str]:
    return set(costs.loc[costs["primary"].to_numpy(), "resource_id"].astype(str))


# ---- FOCUS from the three clouds ------------------------------------------------------------


def test_azure_focus_export_rows_totals_and_join():
    path = REAL / "focus_1_0r2_azure_export.csv"
    effective = gpucost.read_focus(path)
    billed = gpucost.read_focus(path, amount="billed")
    assert len(effective) == len(billed) == 6
    # 2359.68 + 1415.808 + 58.992 + 0 + 88.152 + 0.52 (effective);
    # 2359.68 + 0 + 0 + 1474.80 + 88.152 + 0.52 (billed): the reservation's
    # fee equals its used plus unused amortized parts.
    assert effective["cost"].sum() == pytest.approx(3923.152, abs=0.005)
    assert billed["cost"].sum() == pytest.approx(3923.152, abs=0.005)
    assert effective["list_cost"].sum() == pytest.approx(2359.68 * 2 + 88.152 + 0.52, abs=0.005)
    ids = effective["resource_id"].astype(str)
    # ARM ids lower case whatever the export's casing (ML-Train, ND-H100-02).
    assert (ids == ids.str.lower()).all()
    assert ids[1].endswith("/virtualmachines/nd-h100-02")
    # The scale set's line names its instance through x_SkuDetails.VMName.
    assert ids[4].endswith("/virtualmachinescalesets/aks-gpunp-28447339-vmss/virtualmachines/3")
    assert _nodes("aks") <= _primary_ids(effective)
    assert list(effective["instance_type"].astype(object)[[0, 1, 4]]) == [
        "Standard_ND96isr_H100_v5", "Standard_ND96isr_H100_v5", "Standard_NC24ads_A100_v4"]
    assert list(effective["quantity_hours"][[0, 1, 4]]) == [24.0, 24.0, 24.0]
    assert list(effective["pricing"].astype(object)[:2]) == ["on_demand", "reserved"]
    # A tag whose value is JSON null stays a tag (null), the others as written.
    assert '"aks-managed-poolName":null' in effective["tags"].astype(str)[0]
    assert effective["tags"].astype(str)[1] == '{"team":"inference"}'


def test_aws_focus_data_export_rows_totals_and_join():
    path = REAL / "focus_1_0_aws_data_export.csv"
    effective = gpucost.read_focus(path)
    billed = gpucost.read_focus(path, amount="billed")
    assert len(effective) == 6
    # 55.04 + 3.20 + 0.80 + 0.0137 + 2.10 - 1.00
    assert effective["cost"].sum() == pytest.approx(60.1537, abs=0.005)
    # 55.04 + 0 + 4.00 + 0.0137 + 2.10 - 1.00
    assert billed["cost"].sum() == pytest.approx(60.1537, abs=0.005)
    # ResourceId is the instance's ARN; the reader writes the id the EKS
    # node's providerID, DCGM and the CUR have.
    assert _primary_ids(effective) == _nodes("eks")
    # The instance type comes from x_UsageType ("USW2-BoxUsage:p5.48xlarge").
    assert list(effective["instance_type"].astype(object)[:2]) == ["p5.48xlarge", "g5.12xlarge"]
    assert list(effective["quantity_hours"][:2]) == [1.0, 1.0]  # ConsumedUnit "Hrs"
    assert effective["tags"].astype(str)[0].startswith('{"user:team":"llm-train"')
    # Tax and credit: lines without a resource, kept.
    no_resource = effective["resource_id"].isna().to_numpy()
    assert effective.loc[no_resource, "cost"].sum() == pytest.approx(1.10, abs=0.005)


def test_gcp_focus_bigquery_parquet_rows_totals_and_join():
    path = REAL / "focus_1_0_gcp_bigquery.parquet"
    effective = gpucost.read_focus(path)
    billed = gpucost.read_focus(path, amount="billed")
    assert len(effective) == 5
    assert effective["cost"].sum() == pytest.approx(100.18, abs=0.005)  # the egress credit is in EffectiveCost
    assert billed["cost"].sum() == pytest.approx(100.30, abs=0.005)
    # //compute.googleapis.com/.../instances/<number> + ResourceName -> the GKE node's name.
    assert _primary_ids(effective) == _nodes("gke") - {"projects/ml-prod/zones/us-central1-a/instances/"
                                                        "gke-ml-a100-pool-9e8d7c6b-q2w3"}
    assert list(effective["instance_id"].astype(object)[:1]) == ["4711000000000000001"]
    # Tags as list<struct<key, value>>; the GPU SKU line is the primary one.
    assert effective["tags"].astype(str)[0] == (
        '{"goog-k8s-cluster-name":"ml","goog-k8s-node-pool-name":"h100-pool","team":"llm-train"}')
    assert effective["primary"].tolist() == [True, False, False, True, False]
    assert effective["quantity_hours"][0] == pytest.approx(1.0)  # 28800 GPU-seconds over 8 GPUs
    assert effective["pricing"].astype(object)[3] == "spot"


# ---- CUR 2.0 Parquet and the GCP BigQuery export ---------------------------------------------


def test_cur2_parquet_map_columns():
    path = REAL / "cur2_data_export.parquet"
    effective = gpucost.read_cur(path)
    billed = gpucost.read_cur(path, amount="billed")
    listed = gpucost.read_cur(path, amount="list")
    assert len(effective) == 7
    # 55.04 + 3.20 (SP effective) + 0 (negation) + 0.80 (unused SP fee) + 0.0137 + 2.10 - 1.00
    assert effective["cost"].sum() == pytest.approx(60.1537, abs=0.005)
    # unblended: 55.04 + 5.672 - 5.672 + 4.00 + 0.0137 + 2.10 - 1.00
    assert billed["cost"].sum() == pytest.approx(60.1537, abs=0.005)
    assert listed["cost"].sum() == pytest.approx(55.04 + 5.672 + 0.0137, abs=0.005)
    assert _nodes("eks") == _primary_ids(effective)
    # resource_tags is a MAP<string, string>: its keys as written.
    assert effective["tags"].astype(str)[1] == '{"user_team":"cv"}'
    assert gpucost.read_cur(path, expand_tags=["team"])["tag_team"].astype(object).tolist()[:3] == ["llm-train", "cv",
                                                                                                   "cv"]


def test_gcp_bigquery_json_nested_credits_and_labels():
    path = REAL / "gcp_bigquery_detailed_export.json"
    net = gpucost.read_gcp_billing(path)
    separate = gpucost.read_gcp_billing(path, credits="separate")
    assert len(net) == 5
    assert len(separate) == 8  # three credits of their own
    # (2.93 - 0.59) + (0.38 - 0.08) + 0.36 + 0.44 + (0.12 - 0.12)
    assert net["cost"].sum() == pytest.approx(3.44, abs=0.005)
    assert separate["cost"].sum() == pytest.approx(3.44, abs=0.005)
    assert net["billed_cost"].sum() == pytest.approx(3.44, abs=0.005)
    assert _nodes("gke") - {"projects/ml-prod/zones/us-central1-a/instances/gke-ml-h100-pool-3a4b5c6d-x7yz"} == \
        _primary_ids(net)
    assert net["instance_type"].astype(object).tolist()[:4] == ["a2-highgpu-1g"] * 3 + ["g2-standard-24"]
    # labels (not project.labels or system_labels) are the tags.
    assert net["tags"].astype(str)[3] == '{"team":"cv"}'
    # The egress line leaves resource and zone out (NULLs omitted): no resource.
    assert pd.isna(net["resource_id"][4]) and net["cost"][4] == pytest.approx(0.0, abs=1e-9)


# ---- what is outside the format: errors naming file, line and column ------------------------


def test_focus_bad_amount_names_file_line_column(tmp_path):
    text = (REAL / "focus_1_0_aws_data_export.csv").read_text().splitlines()
    text[3] = text[3].replace(",0.8,", ",0.8 USD,", 1)
    bad = tmp_path / "aws_focus.csv"
    bad.write_text("\n".join(text) + "\n")
    with pytest.raises(gpucost.InvalidInputError, match=r"aws_focus.csv: line 4, column 'EffectiveCost'"):
        gpucost.read_focus(bad)


def test_focus_extra_unknown_columns_are_ignored(tmp_path):
    frame = pd.read_csv(REAL / "focus_1_0_aws_data_export.csv", dtype=str, keep_default_na=False)
    frame["x_SomethingNew"] = "{not json"
    frame.insert(0, "x_AnotherNew", "1e999")
    path = tmp_path / "wider.csv"
    frame.to_csv(path, index=False)
    assert gpucost.read_focus(path)["cost"].sum() == pytest.approx(60.1537, abs=0.005)


# ---- Slurm ---------------------------------------------------------------------------------


def test_sacct_gres_forms_steps_arrays_and_running_jobs():
    path = REAL / "sacct_parsable2_gres_steps_arrays.txt"
    now = pd.Timestamp("2025-03-01T11:00:00Z")
    slurm = gpucost.read_slurm_sacct(path, tz="Europe/Berlin", now=now)
    d = slurm.diagnostics
    assert d["steps_skipped"] == 8  # .batch, .extern, .0 never count twice
    assert d["jobs_without_gpus"] == 4  # CPU job, het component, pending array, cancelled before start
    usage = slurm.usage
    held = usage.assign(hours=usage["duration"] / 3600).groupby("consumer", observed=True)["hours"].sum()
    # 4101: 4 GPUs x 2 h; 4102 (gres/gpu:a100=2 only): 2 x 1 h; array tasks
    # 0.75 h and 1.25 h; 4104 running since 08:00 UTC until `now`: 8 x 3 h
    # over two nodes; het component 4107+0: 1 h; 4106 ran 0 s.
    assert held.to_dict() == {"4101": 8.0, "4102": 2.0, "4103_1": 0.75, "4103_2": 1.25, "4104": 24.0, "4107+0": 1.0}
    # Local times in the controller's zone: 10:00 CET is 09:00 UTC.
    first = usage[usage["consumer"] == "4101"]["timestamp"].min()
    assert first == pd.Timestamp("2025-03-01T09:00:00Z")
    assert set(usage.loc[usage["consumer"] == "4104", "resource_id"].astype(str)) == {"gpu-b01", "gpu-b02"}
    assert "4103_[3-5]" in set(slurm.workloads["consumer"].astype(str))


def test_sacct_running_job_without_now_is_an_error():
    with pytest.raises(gpucost.InvalidInputError, match=r"line 13, column 'End': the job is still running"):
        gpucost.read_slurm_sacct(REAL / "sacct_parsable2_gres_steps_arrays.txt", tz="Europe/Berlin")


def test_sacct_time_format_with_offset_across_dst():
    # SLURM_TIME_FORMAT='%FT%T%z': the offset wins over tz; 01:30+01:00 to
    # 03:30+02:00 on the night clocks go forward is one hour.
    slurm = gpucost.read_slurm_sacct(REAL / "sacct_parsable2_time_format_offset.txt", tz="America/New_York")
    usage = slurm.usage
    by_job = usage.groupby("consumer", observed=True)["duration"].sum().to_dict()
    assert by_job == {"5201": 2 * 3600.0, "5202": 4500.0}
    assert usage["timestamp"].min() == pd.Timestamp("2025-03-30T00:30:00Z")


def test_sacct_epoch_times(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text("JobID|User|Account|Start|End|NodeList|AllocTRES\n"
                    "7|u|a|1740823200|1740826800|n1|gres/gpu=1\n")
    usage = gpucost.read_slurm_sacct(path, tz="UTC").usage
    assert usage["timestamp"].tolist() == [pd.Timestamp("2025-03-01T10:00:00Z")]
    assert usage["duration"].tolist() == [3600.0]


@pytest.mark.parametrize("cell", ["2025-03-01T10:00:00+2500", "2025-03-01T10:00:00+01", "Tue Mar 01 10:00"])
def test_sacct_unreadable_time_names_line_and_column(tmp_path, cell):
    path = tmp_path / "sacct.txt"
    path.write_text(f"JobID|User|Account|Start|End|NodeList|AllocTRES\n7|u|a|{cell}|Unknown|n1|gres/gpu=1\n")
    with pytest.raises(gpucost.InvalidInputError, match=r"sacct.txt: line 2, column 'Start'"):
        gpucost.read_slurm_sacct(path, tz="UTC", now=pd.Timestamp("2025-03-02T00:00:00Z"))


# ---- Kubernetes: who holds how much of a GPU ------------------------------------------------


def _pod_gpus(**kw) -> pd.DataFrame:
    return gpucost.kubernetes.read_pod_gpus(REAL / "kubectl_get_pods_gpu_forms.json", **kw)


def test_pod_gpus_device_plugin_mig_time_slicing_and_dra():
    frame = _pod_gpus(nodes=REAL / "kubectl_get_nodes_gpu_operator.json",
                      claims=REAL / "kubectl_get_resourceclaims.json")
    assert frame.attrs["kubernetes"] == {"pods_without_gpus": 1, "node_labels": True, "claims": True}
    by = {(c, d if isinstance(d, str) else ""): (k, n, s) for c, d, k, n, s in
          zip(frame["consumer"], frame["device"], frame["kind"], frame["count"], frame["share"])}
    # Init containers run before the app: max(8, 1); the sidecar holds none.
    assert by[("ml/train-llm-0", "")] == ("device-plugin", 8.0, 1.0)
    assert by[("ml/notebook-a", "")] == ("mig", 1.0, pytest.approx(1 / 7))
    assert by[("ml/infer-3g", "")] == ("mig", 1.0, pytest.approx(3 / 7))
    assert by[("ml/a30-slice", "")] == ("mig", 1.0, 0.5)  # an A30 has 4 slices of 6 GB
    assert by[("serve/chat-0", "")] == ("time-slicing", 1.0, 0.25)  # gpu.shared, replicas 4
    assert by[("serve/chat-1", "")] == ("time-slicing", 1.0, 0.5)  # plain name, node replicas 2
    assert by[("serve/single-1g", "")] == ("mig", 2.0, pytest.approx(1 / 7))  # single strategy, 1g.5gb
    # DRA: devices through the claim (the template's claim named in status),
    # a claim reserved for two pods is half a GPU each.
    assert by[("dra/sim-0", "gpu.nvidia.com/gpu-dra-0/gpu-0")] == ("dra", 1.0, 1.0)
    assert by[("dra/sim-0", "gpu.nvidia.com/gpu-dra-0/gpu-1")] == ("dra", 1.0, 1.0)
    assert by[("dra/shared-a", "gpu.nvidia.com/gpu-dra-0/gpu-2")] == ("dra", 1.0, 0.5)
    assert by[("dra/shared-b", "gpu.nvidia.com/gpu-dra-0/gpu-2")] == ("dra", 1.0, 0.5)
    # Not derivable: a MIG device through DRA, a claim with no status mapping.
    assert np.isnan(by[("dra/mig-claim", "gpu.nvidia.com/gpu-dra-0/gpu-3-mig-1g10gb-0")][2])
    assert np.isnan(by[("dra/unresolved", "")][2]) and np.isnan(by[("dra/unresolved", "")][1])
    assert frame.loc[frame["consumer"] == "dra/sim-0", "claim"].tolist() == ["sim-0-gpus-x7k2p"] * 2
    # GPU equivalents: 8 + 1/7 + 3/7 + 1/2 + 1/4 + 1/2 + 2/7 + 2 + 1/2 + 1/2 + pending 1
    assert frame["gpus"].sum() == pytest.approx(8 + 6 / 7 + 0.5 + 0.25 + 0.5 + 2 + 1 + 1)
    # Times: startTime, and the finished pod's last finishedAt; pending has none.
    notebook = frame[frame["consumer"] == "ml/notebook-a"].iloc[0]
    assert (notebook["start"], notebook["end"]) == (pd.Timestamp("2025-03-01T10:00:00Z"),
                                                    pd.Timestamp("2025-03-01T10:45:00Z"))
    pending = frame[frame["consumer"] == "ml/pending-0"].iloc[0]
    assert pd.isna(pending["node"]) and pd.isna(pending["start"]) and pd.isna(pending["end"])


def test_pod_gpus_without_node_labels_or_claims_never_guesses():
    frame = _pod_gpus()
    assert frame.attrs["kubernetes"]["node_labels"] is False
    shared = frame[frame["resource"] == "nvidia.com/gpu.shared"]
    assert shared["share"].isna().all()  # replicas unknown
    dra = frame[frame["kind"] == "dra"]
    assert dra["share"].isna().all() and dra["count"].isna().all()
    # MIG profiles carry their own fraction.
    assert frame.loc[frame["consumer"] == "ml/infer-3g", "share"].tolist() == [pytest.approx(3 / 7)]


def test_pod_gpus_fractional_gpu_quantity_is_an_error(tmp_path):
    text = (REAL / "kubectl_get_pods_gpu_forms.json").read_text()
    text = text.replace('"nvidia.com/gpu": "8"', '"nvidia.com/gpu": "500m"')
    path = tmp_path / "pods.json"
    path.write_text(text)
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"pods.json: row 0, column 'spec.containers\[trainer\].resources.limits.nvidia.com/gpu'"):
        gpucost.kubernetes.read_pod_gpus(path)
