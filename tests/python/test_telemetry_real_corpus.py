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
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 2,
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


# Prometheus answers: partial responses, staleness gaps, NaN.

def test_partial_answer_with_warnings_is_refused_unless_allowed():
    path = REAL / "query_range_partial_warnings_gpu_util.json"
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"partial_warnings_gpu_util\.json: Prometheus answered with warnings.*"
                             r"'No StoreAPIs matched for this query' \(and 1 more\); pass allow_partial=True"):
        gpucost.prometheus.read_query_range(path)
    u = gpucost.prometheus.read_query_range(path, allow_partial=True)
    report = u.attrs["telemetry"]
    assert len(report["warnings"]) == 2 and report["warnings"][0].endswith(": No StoreAPIs matched for this query")
    # GPU 1's series is stale 10:02-10:04: three points absent, a gap, not held.
    assert report["gaps"] == 1 and len(u) == 9
    held = u.groupby("device")["duration"].sum()
    assert held[0] == 360 and held[1] == 180
    assert report["samples_without_memory"] == 9


def test_nan_power_points_are_kept_as_nan_and_nan_util_is_an_error(tmp_path):
    u = gpucost.prometheus.read_query_range(REAL / "query_range_nan_power.json")
    assert u.attrs["telemetry"]["samples_without_util"] == 9  # power only: holder-only telemetry
    g0 = u[u["device"] == 0].reset_index(drop=True)
    assert g0["power_w"].isna().sum() == 1 and g0["power_w"].sum() == pytest.approx(301.5 + 298.25 + 305 + 310.75 + 299)
    bad = (REAL / "query_range_partial_warnings_gpu_util.json").read_text().replace('"warnings"', '"w"')
    (tmp_path / "u.json").write_text(bad.replace('[1772445660,"73"]', '[1772445660,"NaN"]'))
    with pytest.raises(gpucost.InvalidInputError, match=r"u\.json: series DCGM_FI_DEV_GPU_UTIL\{.*\} at "
                                                        r"2026-03-02T10:01:00Z, column 'value': NaN utilisation"):
        gpucost.prometheus.read_query_range(tmp_path / "u.json")


# AMD Instinct: ROCm device-metrics-exporter.

def test_amd_mi300x_spx_scrape_reads_like_dcgm():
    u = gpucost.prometheus.read_dcgm_text(REAL / "amd_dme_mi300x_spx_k8s.prom", timestamp=T0)
    u = u.sort_values("device").reset_index(drop=True)
    assert list(u["device"]) == list(range(8)) and set(u["resource_id"]) == {"mi300x-node-01"}
    assert list(u["consumer"]) == ["ml/llm-pretrain-0"] * 4 + ["serving/chat-7b9c-0", "research/nb-carol", "", ""]
    assert list(u["util"]) == pytest.approx([0.93, 0.94, 0.92, 0.95, 0.41, 0.07, 0, 0])
    assert u.loc[0, "mem_used"] == 150 * 1024 * MIB and u.loc[7, "mem_used"] == 283 * MIB
    assert (u["share"] == 1).all() and (u["mig_profile"] == "").all()
    assert set(u["gpu_model"]) == {"AMD Instinct MI300X OAM"}
    assert u.loc[0, "gpu_uuid"] == "a1ff74a1-0000-1000-80e0-c6d49f5b0d80"
    assert u["power_w"].sum() == pytest.approx(702 + 699 + 705 + 710 + 402 + 188 + 131 + 130)
    assert u.attrs["telemetry"]["skipped_fields"] == {"gpu_junction_temperature": 8, "gpu_package_power": 8,
                                                      "gpu_total_vram": 8}


@pytest.mark.parametrize("basis", ["allocated", "used"])
def test_mi300x_node_allocates_like_an_h100_node(basis):
    amd = gpucost.prometheus.read_dcgm_text(REAL / "amd_dme_mi300x_spx_k8s.prom", timestamp=T0)
    nv = gpucost.prometheus.read_dcgm_text(REAL / "dcgm_3x_h100_node_k8s.prom", timestamp=T0)
    shares = {}
    for name, u, node, mem in (("amd", amd, "mi300x-node-01", 192e9), ("nv", nv, "h100-node-01", 80e9)):
        inventory = pd.DataFrame({"resource_id": [node] * 8, "device": range(8), "mem_capacity": [mem] * 8})
        result = gpucost.allocate(_bill(node, 96.0), u, inventory, basis=basis)
        assert result["cost"].sum() == pytest.approx(96.0)
        shares[name] = result.groupby("consumer")["cost"].sum().sort_index()
    pd.testing.assert_series_equal(shares["amd"], shares["nv"])
    if basis == "allocated":  # 4, 1 and 1 of 8 GPUs held; the 2 free GPUs' cost kept as idle
        assert shares["amd"]["ml/llm-pretrain-0"] == pytest.approx(96.0 * 4 / 8)
        assert shares["amd"]["serving/chat-7b9c-0"] == pytest.approx(96.0 / 8)


def test_amd_cpx_partitions_are_eighths_of_their_physical_gpu():
    u = gpucost.prometheus.read_dcgm_text(REAL / "amd_dme_mi300x_cpx_nps4_k8s.prom", timestamp=T0)
    # 64 logical GPUs (gpu_id 0-63) are 8 physical ones, grouped by serial_number; one holder's (or the free)
    # partitions of a GPU are one sample: GPU 0 4 holders + free, GPU 1 one holder, GPUs 2-7 free.
    assert len(u) == 5 + 1 + 6 and set(u["mig_profile"]) == {"CPX"}
    assert u.attrs["telemetry"]["samples_merged"] == 3 + 7 + 6 * 7
    assert sorted(u["device"].unique()) == list(range(8))
    assert (u.groupby("device")["share"].sum() == 1).all()
    g0 = u[u["device"] == 0].set_index("consumer")
    assert sorted(c for c in g0.index if c) == [f"serving/embed-{p}" for p in range(4)]
    assert list(g0.loc[[f"serving/embed-{p}" for p in range(4)], "util"]) == pytest.approx([0.60, 0.65, 0.70, 0.75])
    assert (g0.loc[[f"serving/embed-{p}" for p in range(4)], "share"] == 0.125).all()
    assert g0.loc["", "share"] == 0.5 and g0.loc["", "mem_used"] == 0
    g1 = u[u["device"] == 1]
    assert list(g1["consumer"]) == ["ml/sweep-cpx-0"] and g1["share"].iloc[0] == 1
    assert g1["mem_used"].iloc[0] == 8 * 20480 * MIB and g1["util"].iloc[0] == pytest.approx(0.88)
    inventory = pd.DataFrame({"resource_id": ["mi300x-node-02"] * 8, "device": range(8), "mem_capacity": [192e9] * 8})
    result = gpucost.allocate(_bill("mi300x-node-02", 64.0), u, inventory).groupby("consumer")["cost"].sum()
    assert result.sum() == pytest.approx(64.0)
    # Held: all of GPU 1 and 4/8 of GPU 0, each of 8 GPUs; the rest kept as idle.
    assert result["ml/sweep-cpx-0"] == pytest.approx(64.0 / 8)
    assert result["serving/embed-0"] == pytest.approx(64.0 / 8 / 8)


def test_amd_partition_mode_outside_the_known_ones_is_an_error(tmp_path):
    text = (REAL / "amd_dme_mi300x_cpx_nps4_k8s.prom").read_text().replace('gpu_compute_partition_type="cpx"',
                                                                           'gpu_compute_partition_type="xpx"', 1)
    (tmp_path / "x.prom").write_text(text)
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"x\.prom.*'gpu_compute_partition_type': 'xpx' is not an AMD compute partition mode"):
        gpucost.prometheus.read_dcgm_text(tmp_path / "x.prom", timestamp=T0)


def test_amd_query_range_holder_changes_to_free():
    u = gpucost.prometheus.read_query_range([REAL / "amd_query_range_gfx_activity.json",
                                             REAL / "amd_query_range_used_vram.json"])
    assert len(u) == 6 and (u["duration"] == 60).all()
    g1 = u[u["device"] == 1].sort_values("timestamp")
    assert list(g1["consumer"]) == ["ml/llm-pretrain-0", "ml/llm-pretrain-0", ""]
    assert list(g1["mem_used"]) == [153600 * MIB, 153600 * MIB, 283 * MIB]


def test_catalog_knows_amd_instinct_instances():
    from gpucost import catalog
    assert catalog.canonical_gpu_model("AMD Instinct MI300X OAM") == "MI300X 192GB"
    assert catalog.canonical_gpu_model("AMD Instinct MI250X") == "MI250X 64GB"  # one GCD
    assert catalog.canonical_gpu_model("AMD Instinct MI325X") == "MI325X 256GB"
    assert catalog.canonical_gpu_model("AMD Instinct MI210") == "MI210 64GB"
    rows = catalog.instance_types().set_index("instance_type")
    nd = rows.loc["Standard_ND96isr_MI300X_v5"]
    assert (nd["provider"], nd["gpu_model"], nd["gpus"], nd["gpu_memory_gib"]) == ("azure", "MI300X 192GB", 8, 192)
    assert rows.loc["amd-mi250x-oam-4", "gpus"] == 8  # four modules, eight GCDs
    onprem = set(rows.loc[rows["provider"] == "onprem", "gpu_model"])
    assert {model for model in onprem if model.startswith("MI")} == {
        "MI300X 192GB", "MI325X 256GB", "MI250X 64GB", "MI210 64GB"}
    # The inventory of an MI300X node from its instance type.
    inv = catalog.inventory(pd.DataFrame({"resource_id": ["mi300x-node-01"],
                                          "instance_type": ["Standard_ND96isr_MI300X_v5"]}))
    assert len(inv) == 8 and inv["mem_capacity"].iloc[0] == pytest.approx(192e9, rel=0.08)


# nvidia-smi dmon / pmon.

def test_pmon_each_pid_holds_its_gpu():
    pid_jobs = pd.DataFrame({"pid": [7001, 7002], "job": ["train-a", "eval-b"]})
    u = gpucost.read_nvidia_smi_mon(REAL / "nvidia_smi_pmon_535_um_dt.log", "i-0pm", "UTC", pid_jobs=pid_jobs)
    assert u.attrs["telemetry"]["spacing_seconds"] == 5 and u.attrs["telemetry"]["samples_without_memory"] == 0
    assert len(u) == 11 and (u["duration"] == 5).all()
    g0 = u[u["device"] == 0]
    # Two processes share GPU 0 for 3 readings (1/2 each), train-a alone in the 4th (after a repeated header).
    assert g0.groupby("consumer")["share"].sum().to_dict() == {"eval-b": 1.5, "train-a": 2.5}
    first = g0[g0["timestamp"] == pd.Timestamp(T0)].set_index("consumer")
    assert first.loc["train-a", "util"] == pytest.approx(0.83)  # the GPU's sm: 71 % + 12 %
    assert first.loc["train-a", "mem_used"] == 30211 * MIB and first.loc["eval-b", "mem_used"] == 8120 * MIB
    g1 = u[u["device"] == 1].set_index("timestamp")["consumer"]
    assert list(g1) == ["", "pid:7310", "pid:7310", ""]  # '-' rows are idle; a C+G process with '-' sm holds
    assert u.attrs["diagnostics"]["unknown_pids"] == 2


def test_dmon_470_without_fb_reads_util_and_counts_missing_memory():
    u = gpucost.read_nvidia_smi_mon(REAL / "nvidia_smi_dmon_470_dt.log", "i-0dm", "UTC")
    assert len(u) == 6 and (u["consumer"] == "").all() and (u["duration"] == 10).all()
    assert list(u.loc[u["device"] == 1, "util"]) == pytest.approx([0.0, 0.14, 0.12])
    assert u.attrs["telemetry"]["samples_without_memory"] == 6
    inventory = pd.DataFrame({"resource_id": ["i-0dm"] * 2, "device": [0, 1], "mem_capacity": [16e9] * 2})
    with pytest.raises(gpucost.InvalidInputError, match="6 samples have no memory field"):
        gpucost.allocate(_bill("i-0dm"), u, inventory, basis="blended")


def test_dmon_with_pmon_beside_it():
    u = gpucost.read_nvidia_smi_mon(REAL / "nvidia_smi_dmon_550_um_dt.log", "i-0dm", "UTC",
                                    pmon=REAL / "nvidia_smi_pmon_535_um_dt.log")
    first = u[(u["timestamp"] == pd.Timestamp(T0)) & (u["device"] == 0)].set_index("consumer")
    assert set(first.index) == {"pid:7001", "pid:7002"}
    assert first.loc["pid:7001", "util"] == pytest.approx(0.83)  # dmon's sm
    assert first.loc["pid:7001", "mem_used"] == 30211 * MIB  # the process's own fb
    assert u.loc[u["device"] == 1, "mem_used"].max() == 1024 * MIB
    with pytest.raises(gpucost.InvalidInputError, match=r"nvidia_smi_dmon_470_dt\.log: not a pmon log"):
        gpucost.read_nvidia_smi_mon(REAL / "nvidia_smi_dmon_550_um_dt.log", "i", "UTC",
                                    pmon=REAL / "nvidia_smi_dmon_470_dt.log")


def test_mon_log_without_date_and_time_is_an_error(tmp_path):
    lines = [x.split(None, 3)[-1] if not x.startswith("#") else "# " + x.split(None, 3)[-1]
             for x in (REAL / "nvidia_smi_dmon_470_dt.log").read_text().splitlines()]
    (tmp_path / "t.log").write_text("\n".join(lines) + "\n")
    with pytest.raises(gpucost.InvalidInputError, match=r"t\.log: line 1, column 'Date': no Date and Time columns"):
        gpucost.read_nvidia_smi_mon(tmp_path / "t.log", "i", "UTC")


def test_cli_reads_dmon_and_pmon_logs_as_nvidia_smi_sources(tmp_path):
    from gpucost.config import load_config
    from gpucost.plan import load_tables
    smi = tmp_path / "smi"
    smi.mkdir()
    (smi / "gpu07.dmon.log").write_text((REAL / "nvidia_smi_dmon_550_um_dt.log").read_text())
    (smi / "gpu07.pmon.log").write_text((REAL / "nvidia_smi_pmon_535_um_dt.log").read_text())
    pd.DataFrame({"resource_id": ["gpu07"], "start": ["2026-03-02T10:00:00Z"], "end": ["2026-03-02T10:00:20Z"],
                  "cost": [2.0]}).to_csv(tmp_path / "costs.csv", index=False)
    pd.DataFrame({"resource_id": ["gpu07"] * 2, "device": [0, 1], "mem_capacity": [48e9] * 2}).to_csv(
        tmp_path / "inventory.csv", index=False)
    config = load_config(None)
    config.sources.update({"nvidia_smi": [str(smi / "gpu07.dmon.log")], "nvidia_smi_apps": [str(smi / "gpu07.pmon.log")],
                           "costs": str(tmp_path / "costs.csv"), "inventory": str(tmp_path / "inventory.csv")})
    tables = load_tables(config)
    result = gpucost.allocate(tables.costs, tables.usage, tables.inventory).set_index("consumer")["cost"]
    assert result.sum() == pytest.approx(2.0)
    # GPU 0: pid 7001 half of 15 s then all of 5 s; of 2 GPUs x 20 s.
    assert result["pid:7001"] == pytest.approx(2.0 * (7.5 + 5) / 40)


# amd-smi metric --json.

def test_amd_smi_metric_list_form_mi250x_gcds():
    u = gpucost.prometheus.read_amd_smi_metric(REAL / "amd_smi_metric_rocm62_mi250x.json", "mi250x-01",
                                               timestamps=T0)
    u = u.sort_values("device").reset_index(drop=True)
    assert list(u["util"]) == pytest.approx([0.96, 0.94, 0.0, 0.0])
    assert list(u["mem_used"]) == [51200 * MIB, 51200 * MIB, 10 * MIB, 10 * MIB]
    assert list(u["power_w"]) == [488, 0, 92, 0]  # one socket power per OAM module, on its first GCD
    assert (u["consumer"] == "").all() and set(u["resource_id"]) == {"mi250x-01"}
    assert (u["duration"] == 60).all()  # one snapshot: the default interval


def test_amd_smi_metric_gpu_data_form_over_two_snapshots():
    path = REAL / "amd_smi_metric_rocm64_gpu_data_mi300x.json"
    nodes = pd.DataFrame({"node": ["mi300x-01"], "resource_id": ["Standard_ND96isr_MI300X_v5-vm3"]})
    u = gpucost.prometheus.read_amd_smi_metric([path, path], "mi300x-01", nodes=nodes,
                                               timestamps=[T0, "2026-03-02T10:05:00Z"])
    assert len(u) == 4 and (u["duration"] == 300).all() and u.attrs["telemetry"]["spacing_seconds"] == 300
    assert set(u["resource_id"]) == {"Standard_ND96isr_MI300X_v5-vm3"}
    assert u.loc[u["device"] == 0, "mem_used"].iloc[0] == 120000 * MIB
    with pytest.raises(gpucost.InvalidInputError, match="2 files but 1 timestamps"):
        gpucost.prometheus.read_amd_smi_metric([path, path], "h", timestamps=T0)


def test_amd_smi_metric_na_or_bad_values(tmp_path):
    import json
    doc = json.loads((REAL / "amd_smi_metric_rocm64_gpu_data_mi300x.json").read_text())
    doc["gpu_data"][1]["usage"] = "N/A"  # a GPU that printed no usage while another did
    (tmp_path / "na.json").write_text(json.dumps(doc))
    with pytest.raises(gpucost.InvalidInputError, match=r"na\.json: series gpu_\w+\{gpu_id=\"1\".*no gpu_gfx_activity for this GPU"):
        gpucost.prometheus.read_amd_smi_metric(tmp_path / "na.json", "h", timestamps=T0)
    doc["gpu_data"][1]["usage"] = {"gfx_activity": {"value": "busy", "unit": "%"}}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"bad\.json: gpu 1, column 'usage\.gfx_activity': 'busy' is not a number"):
        gpucost.prometheus.read_amd_smi_metric(tmp_path / "bad.json", "h", timestamps=T0)


def test_an_amd_name_without_gpu_id_is_another_exporters_metric():
    text = (REAL / "dcgm_3x_h100_node_k8s.prom").read_text()
    other = 'gpu_power_usage{index="0",name="NVIDIA H100 80GB HBM3",uuid="GPU-x"} 512\n'
    u = gpucost.prometheus.parse_dcgm_text([text + other], timestamp=T0)
    assert len(u) == 8 and u.attrs["diagnostics"]["series_ignored"] == 1

