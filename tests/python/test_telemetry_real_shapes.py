"""Telemetry readers on the shapes real tools write (issue 20 items 2, 4-7;
issue 15): durations from the data, the exporter never a workload, unused
fields never fatal, missing memory, MIG on export variants, duplicates
reported. Fixtures: tests/data/real/ (SOURCES.md says where each shape comes
from)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "h100-two-process"


def _no_overlap(usage: pd.DataFrame, by=("resource_id", "device", "consumer")) -> None:
    for _, g in usage.groupby(list(by), observed=True):
        t = g["timestamp"].dt.tz_convert(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
        end = t + (g["duration"].to_numpy() * 1e9).round().astype(np.int64)
        assert (end[:-1] <= t[1:]).all()


# Durations from the data (item 4).

def test_nvidia_smi_l60_jitter_never_overlaps_and_sums_right():
    u = gpucost.read_nvidia_smi(REAL / "nvidia_smi_l60_jitter.csv", "i-0h100", "UTC")
    report = u.attrs["telemetry"]
    assert report["spacing_seconds"] == pytest.approx(60, abs=1.1)
    assert report["series"] == 2 and report["gaps"] == 0
    _no_overlap(u)
    for _, g in u.groupby("device"):
        t = g["timestamp"]
        span = (t.iloc[-1] - t.iloc[0]).total_seconds()
        # 10 jittered gaps counted whole plus the last reading's spacing.
        assert g["duration"].sum() == pytest.approx(span + report["spacing_seconds"], abs=1e-6)
        assert g["duration"].max() <= 1.25 * report["spacing_seconds"]


def test_nvidia_smi_apps_log_with_its_own_jitter_matches_every_reading():
    # The apps loop drifts across a minute boundary the GPU loop does not (10:09:59.700 vs 10:10:00.300).
    u = gpucost.read_nvidia_smi(REAL / "nvidia_smi_l60_jitter.csv", "i-0h100", "UTC",
                                apps=REAL / "nvidia_smi_l60_jitter_apps.csv", pid_jobs=pd.DataFrame(
                                    {"pid": [7001], "job": ["train-42"]}))
    assert u.attrs["diagnostics"]["app_rows_without_gpu_reading"] == 0
    assert set(u.loc[u["device"] == 0, "consumer"]) == {"train-42"}
    assert set(u.loc[u["device"] == 1, "consumer"]) == {""}
    assert len(u) == 22


def test_nvidia_smi_gap_counts_as_missing_not_held(tmp_path):
    lines = (REAL / "nvidia_smi_l60_jitter.csv").read_text().splitlines()
    del lines[9:13]  # two readings of each GPU (10:04, 10:05) never logged
    (tmp_path / "gap.csv").write_text("\n".join(lines) + "\n")
    u = gpucost.read_nvidia_smi(tmp_path / "gap.csv", "i-0h100", "UTC")
    report = u.attrs["telemetry"]
    assert report["gaps"] == 2
    g = u[u["device"] == 0].reset_index(drop=True)
    before = g[g["timestamp"].dt.minute == 3]
    assert before["duration"].iloc[0] == report["spacing_seconds"]  # not the 3-minute gap
    _no_overlap(u)


def test_nvidia_smi_lms500_refuses_interval_60():
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"nvidia_smi_lms500\.csv: GPU 0: the data's spacing is 0\.[45]\d* s but interval=60 s "
                             r"was given \(more than 2x apart\)"):
        gpucost.read_nvidia_smi(REAL / "nvidia_smi_lms500.csv", "i-0h100", "UTC", interval=60)
    u = gpucost.read_nvidia_smi(REAL / "nvidia_smi_lms500.csv", "i-0h100", "UTC")
    assert u.attrs["telemetry"]["spacing_seconds"] == pytest.approx(0.5, abs=0.01)
    assert u["duration"].sum() == pytest.approx(6.5, abs=0.05)  # 6 s logged + the last reading's 0.5 s


@pytest.mark.skipif(not (SHARED / "query_gpu.csv").exists(), reason="shared h100-two-process data absent")
def test_real_h100_two_process_log_reads_28_seconds_not_3360():
    gpu, apps = SHARED / "query_gpu.csv", SHARED / "compute_apps.csv"
    with pytest.raises(gpucost.InvalidInputError, match=r"spacing is 0\.5 s but interval=60 s"):
        gpucost.read_nvidia_smi(gpu, "i-0h100", "UTC", interval=60)
    u = gpucost.read_nvidia_smi(gpu, "i-0h100", "UTC", apps=apps)
    gpu_seconds = float((u["duration"] * u["share"]).sum())
    assert 27 <= gpu_seconds <= 29  # the log's 28 s (plus one reading), not 3,360
    held = u[u["consumer"] != ""].groupby("consumer", observed=True)["duration"].sum()
    assert set(held.index) == {"pid:479", "pid:498"}
    assert held["pid:479"] > held["pid:498"]  # A ran about 12 s, B about 8 s


def test_range_answer_step_300_read_with_its_own_step():
    files = [REAL / "query_range_step300_gpu_util.json", REAL / "query_range_step300_fb_used.json"]
    u = gpucost.prometheus.read_query_range(files)
    assert u.attrs["telemetry"]["spacing_seconds"] == 300
    assert (u["duration"] == 300).all()
    assert len(u) == 12  # GPU 0: 6 points; GPU 1: 3 held + 3 free
    free = u[(u["device"] == 1) & (u["consumer"] == "")]
    assert len(free) == 3
    gpucost.prometheus.read_query_range(files, step=300)
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"query_range_step300_\w+\.json: series DCGM_FI_DEV_\w+\{.*\}: the data's spacing is "
                             r"300 s but step=60 s was given"):
        gpucost.prometheus.read_query_range(files, step=60)


def test_cli_step_defaults_to_the_answers_spacing(tmp_path):
    from gpucost.config import load_config
    from gpucost.plan import load_tables
    usage_files = [str(REAL / "query_range_step300_gpu_util.json"), str(REAL / "query_range_step300_fb_used.json")]
    costs = pd.DataFrame({"resource_id": ["ip-10-0-3-21"], "start": ["2026-03-02T10:00:00Z"],
                          "end": ["2026-03-02T10:30:00Z"], "cost": [10.0]})
    costs.to_csv(tmp_path / "costs.csv", index=False)
    pd.DataFrame({"resource_id": ["ip-10-0-3-21"] * 2, "device": [0, 1], "mem_capacity": [80e9] * 2}).to_csv(
        tmp_path / "inventory.csv", index=False)
    config = load_config(None)
    config.sources.update({"telemetry": usage_files, "costs": str(tmp_path / "costs.csv"),
                           "inventory": str(tmp_path / "inventory.csv")})
    tables = load_tables(config)
    assert tables.interval == 300
    result = gpucost.allocate(tables.costs, tables.usage, tables.inventory, interval=tables.interval)
    assert result["cost"].sum() == pytest.approx(10.0)
    held = result.set_index("consumer")["cost"]
    # GPU 0 all 30 min, GPU 1 held 15 of 30 min: 3/4 of the line held.
    assert held["ml/train-7f9c4-0"] == pytest.approx(5.0)
    assert held["serving/infer-5d8b6-x2k4p"] == pytest.approx(2.5)


def test_cli_refuses_a_step_far_from_the_answers_spacing(tmp_path, capsys):
    from gpucost import cli
    pd.DataFrame({"resource_id": ["ip-10-0-3-21"], "start": ["2026-03-02T10:00:00Z"],
                  "end": ["2026-03-02T10:30:00Z"], "cost": [10.0]}).to_csv(tmp_path / "costs.csv", index=False)
    pd.DataFrame({"resource_id": ["ip-10-0-3-21"] * 2, "device": [0, 1], "mem_capacity": [80e9] * 2}).to_csv(
        tmp_path / "inventory.csv", index=False)
    files = [str(REAL / "query_range_step300_gpu_util.json"), str(REAL / "query_range_step300_fb_used.json")]
    base = ["allocate", "--costs", str(tmp_path / "costs.csv"), "--inventory", str(tmp_path / "inventory.csv"),
            "--telemetry", *files]
    assert cli.main(base) == 0
    out, _ = capsys.readouterr()
    assert "ml/train-7f9c4-0,5.00," in out  # money in cents (docs/cli.md)
    assert cli.main([*base, "--step", "60"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("gpucost allocate: error: ") and "the data's spacing is 300 s but step=60 s" in err


# The exporter is never a workload (item 6); instant answers (item 6).

@pytest.mark.parametrize("form", ["true", "false"])
def test_kube_prometheus_stack_exporter_labels_are_free(form):
    files = [REAL / f"query_kps_honorlabels_{form}_gpu_util.json", REAL / f"query_kps_honorlabels_{form}_fb_used.json"]
    u = gpucost.prometheus.read_query_range(files)
    report = u.attrs["telemetry"]
    assert report["exporter_series_freed"] == 6  # 3 free GPUs x 2 metrics
    assert report["instants_joined"] == 4  # FB_USED saved 3.7 s after GPU_UTIL
    assert len(u) == 4 and u["timestamp"].nunique() == 1
    by_gpu = u.set_index("device")["consumer"]
    assert by_gpu[0] == "ml/llm-finetune-0"
    assert (by_gpu[[1, 2, 3]] == "").all()
    assert not u["consumer"].astype(str).str.contains("exporter").any()
    assert u.loc[u["device"] == 0, "mem_used"].iloc[0] == 70112 * 2**20


def test_instant_answers_farther_apart_than_the_tolerance_are_not_joined():
    files = [REAL / "query_kps_honorlabels_true_gpu_util.json", REAL / "query_kps_honorlabels_true_fb_used.json"]
    with pytest.raises(gpucost.InvalidInputError, match="no DCGM_FI_DEV_GPU_UTIL for this GPU at this instant"):
        gpucost.prometheus.read_query_range(files, instant_tolerance=1)


def test_google_managed_prometheus_free_gpu_keeps_the_exporters_pod():
    files = [REAL / "query_range_gmp_gpu_util.json", REAL / "query_range_gmp_fb_used.json"]
    u = gpucost.prometheus.read_query_range(files)
    assert u.attrs["telemetry"]["exporter_series_freed"] == 2
    assert set(u.loc[u["device"] == 0, "consumer"]) == {"research/sweep-3-worker-0"}
    assert set(u.loc[u["device"] == 1, "consumer"]) == {""}
    assert (u["duration"] == 60).all()


def test_exporter_names_are_configurable():
    files = [REAL / "query_range_gmp_gpu_util.json", REAL / "query_range_gmp_fb_used.json"]
    # With no exporter names and a job that is not the pod's prefix, the exporter's pod would be a workload:
    # job "dcgm-exporter" still names it, so the free GPU stays free.
    u = gpucost.prometheus.read_query_range(files, exporter_names=[])
    assert set(u.loc[u["device"] == 1, "consumer"]) == {""}


# Unused fields never fatal; missing memory; Hostname as the exporter's pod (item 7, issue 15).

def test_a800_scrape_with_blob_error_fields_and_mig_slices():
    u = gpucost.prometheus.read_dcgm_text(REAL / "dcgm_a800_8gpu_mig_blob_error.prom",
                                          timestamp="2026-03-02T10:00:00Z")
    report = u.attrs["telemetry"]
    assert report["skipped_fields"] == {"DCGM_FI_DEV_SM_CLOCK": 8, "DCGM_FI_DEV_VGPU_PER_PROCESS_UTILIZATION": 1,
                                        "DCGM_FI_DEV_COMPUTE_PIDS": 2}
    assert (u["duration"] == 60).all() and report["spacing_seconds"] is None  # one scrape: no order to read
    mig = u[u["mig_profile"] != ""].set_index(["device", "mig_profile", "consumer"])["share"].sort_index()
    assert len(mig) == 4
    assert mig[(6, "3g.40gb", "serving/infer-a-6b9f7")] == pytest.approx(3 / 7)
    assert mig[(6, "4g.40gb", "")] == pytest.approx(4 / 7)
    assert mig[(7, "3g.40gb", "research/nb-alice")] == pytest.approx(3 / 7)
    whole = u[u["mig_profile"] == ""]
    assert len(whole) == 6 and (whole["share"] == 1).all()
    assert set(whole.loc[whole["device"] >= 4, "consumer"]) == {""}


def test_a_bad_value_in_a_used_field_names_field_line_and_column(tmp_path):
    text = (REAL / "dcgm_a800_8gpu_mig_blob_error.prom").read_text()
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("DCGM_FI_DEV_GPU_UTIL{gpu=\"2\""))
    lines[i] = lines[i].rsplit(" ", 1)[0] + " ERROR - FAILED TO CONVERT TO STRING"
    (tmp_path / "bad.prom").write_text("\n".join(lines) + "\n")
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"bad\.prom: line {i + 1}, column 'value': DCGM_FI_DEV_GPU_UTIL: "
                             r"'ERROR - FAILED TO CONVERT TO STRING' is not a number"):
        gpucost.prometheus.read_dcgm_text(tmp_path / "bad.prom", timestamp="2026-03-02T10:00:00Z")


def test_scrape_without_fb_used_and_hostname_as_the_exporters_pod():
    path = REAL / "dcgm_custom_no_fb_used_hostname_pod.prom"
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"label 'Hostname' is the exporter's pod 'dcgm-exporter-cmhft', not a node"):
        gpucost.prometheus.read_dcgm_text(path, timestamp="2026-03-02T10:00:00Z")
    nodes = pd.DataFrame({"node": ["dcgm-exporter-cmhft"], "resource_id": ["i-0l4node"]})
    u = gpucost.prometheus.read_dcgm_text(path, timestamp="2026-03-02T10:00:00Z", nodes=nodes)
    assert set(u["resource_id"]) == {"i-0l4node"}
    assert u.attrs["telemetry"]["samples_without_memory"] == 2
    assert (u["mem_used"] == 0).all()
    assert list(u.sort_values("device")["consumer"]) == ["search/web-embed-7d9f", ""]
    costs = pd.DataFrame({"resource_id": ["i-0l4node"], "start": [pd.Timestamp("2026-03-02T10:00:00Z")],
                          "end": [pd.Timestamp("2026-03-02T10:01:00Z")], "cost": [1.0]})
    inventory = pd.DataFrame({"resource_id": ["i-0l4node"] * 2, "device": [0, 1], "mem_capacity": [24e9] * 2})
    for basis in ("allocated", "used"):
        result = gpucost.allocate(costs, u, inventory, basis=basis)
        assert result["cost"].sum() == pytest.approx(1.0)
    with pytest.raises(gpucost.InvalidInputError, match="samples_without_memory|no memory field"):
        gpucost.allocate(costs, u, inventory, basis="blended")


def test_a_node_label_wins_over_hostname_as_pod(tmp_path):
    text = (REAL / "dcgm_custom_no_fb_used_hostname_pod.prom").read_text()
    (tmp_path / "n.prom").write_text(text.replace('Hostname="dcgm-exporter-cmhft"',
                                                  'Hostname="dcgm-exporter-cmhft",node="gke-l4-pool-1"'))
    u = gpucost.prometheus.read_dcgm_text(tmp_path / "n.prom", timestamp="2026-03-02T10:00:00Z")
    assert set(u["resource_id"]) == {"gke-l4-pool-1"}


# Duplicates reported (item 5, reader side).

def test_two_prometheus_replicas_are_reported_and_read_once(tmp_path):
    import json
    doc = json.loads((REAL / "query_range_step300_fb_used.json").read_text())
    doc["data"]["result"] = doc["data"]["result"][:1]  # GPU 0's memory, once
    (tmp_path / "fb.json").write_text(json.dumps(doc))
    u = gpucost.prometheus.read_query_range([REAL / "query_range_two_replicas_gpu_util.json", tmp_path / "fb.json"])
    report = u.attrs["telemetry"]
    assert report["replica_labels"] == ["prometheus_replica"]
    assert report["duplicate_series"] == 1 and report["duplicate_points"] == 6
    assert "two Prometheus replicas" in report["duplicate_cause"]
    assert len(u[u["device"] == 0]) == 6  # each instant once


def test_one_exporter_scraped_by_two_jobs_is_reported(tmp_path):
    import json
    doc = json.loads((REAL / "query_range_step300_gpu_util.json").read_text())
    twin = json.loads(json.dumps(doc["data"]["result"][0]))
    twin["metric"]["job"] = "dcgm-exporter-podmonitor"
    doc["data"]["result"].append(twin)
    (tmp_path / "u.json").write_text(json.dumps(doc))
    u = gpucost.prometheus.read_query_range([tmp_path / "u.json", REAL / "query_range_step300_fb_used.json"])
    assert u.attrs["telemetry"]["duplicate_labels"] == ["job"]
    assert "scraped by two jobs" in u.attrs["telemetry"]["duplicate_cause"]


# Free devices are observed, not missing (item 2).

def test_slurm_accounting_range_makes_free_gpus_idle_not_unobserved():
    sacct = Path(__file__).resolve().parents[1] / "data" / "telemetry" / "sacct.txt"
    nodes = pd.DataFrame({"node": ["gpu01", "gpu02", "gpu03"], "resource_id": ["i-01", "i-02", "i-03"],
                          "gpus": [4, 4, 4]})
    s = gpucost.read_slurm_sacct(sacct, "UTC", nodes=nodes, start="2026-03-01T10:00:00Z", end="2026-03-01T11:00:00Z")
    u = s.usage
    assert s.diagnostics["free_samples"] == 5
    # Every GPU-second of the range is in a sample, held or free: 12 GPUs x 1 h.
    assert (u["duration"] * u["share"]).sum() == pytest.approx(12 * 3600)
    free = u[u["consumer"] == ""]
    assert set(free["resource_id"]) == {"i-03"}  # the nodes mapping renamed them too
    assert free.loc[free["device"] == 3, "duration"].sum() == 3600
    costs = pd.DataFrame({"resource_id": ["i-03"], "start": [pd.Timestamp("2026-03-01T10:00:00Z")],
                          "end": [pd.Timestamp("2026-03-01T11:00:00Z")], "cost": [12.0]})
    inventory = pd.DataFrame({"resource_id": ["i-03"] * 4, "device": [0, 1, 2, 3], "mem_capacity": [80e9] * 4})
    with pytest.warns(gpucost.JoinWarning, match=r"telemetry of 2 resource\(s\) that the bill does not name \(i-01, i-02"):
        result = gpucost.allocate(costs, u, inventory).set_index("consumer")  # only i-03 is billed here
    assert result["cost"].sum() == pytest.approx(12.0)
    # 1002 held 15 min of one GPU, 1003 two GPUs for 20 min: 55 of 240 GPU-minutes held.
    assert result.loc["1002", "cost"] == pytest.approx(12 * 15 / 240)
    assert result.loc["1003", "cost"] == pytest.approx(12 * 40 / 240)
    with pytest.raises(gpucost.InvalidInputError, match="each node's GPU count"):
        gpucost.read_slurm_sacct(sacct, "UTC", start="2026-03-01T10:00:00Z", end="2026-03-01T11:00:00Z")
