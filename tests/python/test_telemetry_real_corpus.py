"""Issue 15 (telemetry): every file of tests/data/real/ added for it is read
into the rows and totals computed by hand here (SOURCES.md says where each
shape comes from). Allocated works from util-only and holder-only telemetry."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import gpucost

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
MIB = 2**20
T0 = "2026-03-02T10:00:00Z"


def _bill(resource, cost=1.0):
    return pd.DataFrame({"resource_id": [resource], "start": [pd.Timestamp(T0)],
                         "end": [pd.Timestamp(T0) + pd.Timedelta(seconds=60)], "cost": [cost]})


def test_dcgm_2x_free_gpu_without_pod_labels_is_free():
    u = gpucost.prometheus.read_dcgm_text(REAL / "dcgm_2x_default_k8s_free_unlabelled.prom", timestamp=T0)
    u = u.sort_values("device").reset_index(drop=True)
    assert list(u["consumer"]) == ["ml/resnet-train-0", ""]
    assert list(u["util"]) == pytest.approx([0.87, 0.0])
    assert list(u["mem_used"]) == [31391 * MIB, 4 * MIB]
    assert set(u["resource_id"]) == {"gpu-node-07"} and (u["share"] == 1).all()
    report = u.attrs["telemetry"]
    # Fields gpucost does not read are counted, never fatal (counters, DCP ratios it has no use for).
    assert report["skipped_fields"] == {
        "DCGM_FI_DEV_SM_CLOCK": 2, "DCGM_FI_DEV_MEM_CLOCK": 2, "DCGM_FI_DEV_GPU_TEMP": 2,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 2, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 2,
        "DCGM_FI_DEV_XID_ERRORS": 2, "DCGM_FI_PROF_DRAM_ACTIVE": 2, "DCGM_FI_PROF_PCIE_TX_BYTES": 2}
    assert report["samples_without_memory"] == 0 and report["samples_without_util"] == 0


def test_dcgm_3x_dcp_only_reads_gr_engine_active_as_util():
    u = gpucost.prometheus.read_dcgm_text(REAL / "dcgm_3x_dcp_only_bare_metal.prom", timestamp=T0)
    u = u.sort_values("device").reset_index(drop=True)
    report = u.attrs["telemetry"]
    assert report["samples_util_from_gr_engine"] == 2 and report["samples_without_memory"] == 2
    assert list(u["util"]) == pytest.approx([0.932104, 0.25])
    assert (u["consumer"] == "").all() and (u["mem_used"] == 0).all()  # bare metal: no pod labels at all
    inventory = pd.DataFrame({"resource_id": ["dgx-a100-04"] * 2, "device": [0, 1], "mem_capacity": [80e9] * 2})
    for basis in ("allocated", "used"):
        assert gpucost.allocate(_bill("dgx-a100-04"), u, inventory, basis=basis)["cost"].sum() == pytest.approx(1.0)
    with pytest.raises(gpucost.InvalidInputError, match="2 samples have no memory field"):
        gpucost.allocate(_bill("dgx-a100-04"), u, inventory, basis="blended")


def test_dcgm_3x_dcp_file_missing_gr_engine_at_one_gpu_is_an_error(tmp_path):
    lines = (REAL / "dcgm_3x_dcp_only_bare_metal.prom").read_text().splitlines()
    lines = [x for x in lines if not (x.startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE{") and 'gpu="1"' in x)]
    (tmp_path / "gap.prom").write_text("\n".join(lines) + "\n")
    with pytest.raises(gpucost.InvalidInputError, match="no DCGM_FI_PROF_GR_ENGINE_ACTIVE for this GPU at this instant"):
        gpucost.prometheus.read_dcgm_text(tmp_path / "gap.prom", timestamp=T0)


def test_dcgm_4x_mig_instances_dcp_and_device_name_labels():
    u = gpucost.prometheus.read_dcgm_text(REAL / "dcgm_4x_dcp_mig_device_name.prom", timestamp=T0)
    by = u.set_index(["device", "mig_profile", "consumer"]).sort_index()
    assert len(u) == 5
    assert by.loc[(1, "", "serving/vllm-0"), "util"] == pytest.approx(0.76)
    assert by.loc[(1, "", "serving/vllm-0"), "mem_used"] == 71688 * MIB
    assert by.loc[(0, "3g.40gb", "ml/finetune-0"), "util"] == pytest.approx(0.948)  # GR_ENGINE_ACTIVE on MIG
    assert by.loc[(0, "3g.40gb", "ml/finetune-0"), "share"] == pytest.approx(3 / 7)
    assert by.loc[(0, "2g.20gb", "research/jupyter-bob"), "share"] == pytest.approx(2 / 7)
    assert by.loc[(0, "1g.10gb", "ml/chat-small-6c7d8-q2w3e"), "share"] == pytest.approx(1 / 7)
    assert by.loc[(0, "1g.10gb", ""), "mem_used"] == 0
    assert u.loc[u["device"] == 0, "share"].sum() == pytest.approx(1.0)  # 1+1+2+3 of 7 slices
    assert u.attrs["telemetry"]["skipped_fields"] == {"DCGM_FI_PROF_DRAM_ACTIVE": 5}
    inventory = pd.DataFrame({"resource_id": ["gpu-h100-2"] * 2, "device": [0, 1], "mem_capacity": [80e9] * 2})
    result = gpucost.allocate(_bill("gpu-h100-2", 14.0), u, inventory).set_index("consumer")["cost"]
    assert result.sum() == pytest.approx(14.0)
    assert result["serving/vllm-0"] == pytest.approx(7.0)  # one of two GPUs
    assert result["ml/finetune-0"] == pytest.approx(3.0)  # 3/7 of the other


def test_holder_only_scrape_allocates_and_refuses_used(tmp_path):
    # A counters file with memory only: who holds which GPU, no utilisation.
    text = (REAL / "dcgm_2x_default_k8s_free_unlabelled.prom").read_text().splitlines()
    keep = [x for x in text if "DCGM_FI_DEV_FB_USED" in x]
    (tmp_path / "holders.prom").write_text("\n".join(keep) + "\n")
    u = gpucost.prometheus.read_dcgm_text(tmp_path / "holders.prom", timestamp=T0)
    assert u.attrs["telemetry"]["samples_without_util"] == 2 and (u["util"] == 0).all()
    inventory = pd.DataFrame({"resource_id": ["gpu-node-07"] * 2, "device": [0, 1], "mem_capacity": [40e9] * 2})
    result = gpucost.allocate(_bill("gpu-node-07", 8.0), u, inventory).set_index("consumer")["cost"]
    assert result.sum() == pytest.approx(8.0) and result["ml/resnet-train-0"] == pytest.approx(4.0)
    for basis in ("used", "blended"):
        with pytest.raises(gpucost.InvalidInputError, match=rf"2 samples have no utilisation field.*basis '{basis}'"):
            gpucost.allocate(_bill("gpu-node-07", 8.0), u, inventory, basis=basis)


def test_nvidia_smi_470_extra_columns_with_not_supported_and_na_are_ignored():
    u = gpucost.read_nvidia_smi(REAL / "nvidia_smi_470_t4_not_supported.csv", "i-0t4", "UTC")
    assert len(u) == 6 and u.attrs["telemetry"]["spacing_seconds"] == pytest.approx(30, abs=0.05)
    g1 = u[u["device"] == 1]
    assert list(g1["util"]) == pytest.approx([0.0, 0.12, 0.14])
    assert list(g1["mem_used"]) == [3 * MIB, 1201 * MIB, 1201 * MIB]
    assert u.loc[u["device"] == 0, "util"].mean() == pytest.approx((0.97 + 0.99 + 0.95) / 3)


def test_nvidia_smi_utilisation_not_supported_is_a_clear_error(tmp_path):
    text = (REAL / "nvidia_smi_470_t4_not_supported.csv").read_text().replace("12 %, 1201 MiB", "[N/A], 1201 MiB")
    (tmp_path / "na.csv").write_text(text)
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"na\.csv: line 5, column 'utilization.gpu': '\[N/A\]': the value was not reported"):
        gpucost.read_nvidia_smi(tmp_path / "na.csv", "i-0t4", "UTC")


def test_nvidia_smi_550_nounits_cells():
    u = gpucost.read_nvidia_smi(REAL / "nvidia_smi_550_nounits.csv", "i-0l40s", "UTC")
    assert len(u) == 4
    assert list(u.loc[u["device"] == 0, "mem_used"]) == [40122 * MIB] * 2
    assert (u.loc[u["device"] == 0, "util"] == 1.0).all() and (u.loc[u["device"] == 1, "util"] == 0).all()
    assert u["duration"].sum() == pytest.approx(4 * 5.0, abs=0.05)
