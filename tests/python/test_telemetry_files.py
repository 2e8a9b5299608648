"""Telemetry readers on fixtures in the exact formats, and bad input."""

from __future__ import annotations

import http.server
import socket
import threading
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost

DATA = Path(__file__).resolve().parents[1] / "data" / "telemetry"
MIB = 1024.0 * 1024.0
MIG = pd.DataFrame({"gpu_model": ["A100-SXM4-40GB", "A100-SXM4-40GB"], "profile": ["3g.20gb", "1g.5gb"],
                    "share": [3 / 7, 1 / 7]})
T = "2026-03-01T10:00:00Z"


def test_exporter_text_legacy_units_mig_and_time_slicing():
    nodes = gpucost.kubernetes.read_nodes(DATA / "nodes.json")
    u = gpucost.prometheus.read_dcgm_text(DATA / "dcgm_legacy.prom", timestamp=T, nodes=nodes, mig_shares=MIG)
    assert u.attrs["diagnostics"]["units"] == "legacy"
    by = u.set_index(["device", "consumer"])
    assert by.loc[(0, "ml/train-a-0"), "util"] == pytest.approx(0.9)
    assert by.loc[(0, "ml/train-a-0"), "mem_used"] == 20480 * MIB
    assert by.loc[(0, "ml/train-a-0"), "power_w"] == 312.5
    assert by.loc[(2, 'research/nb-"quoted"-1'), "share"] == 0.5  # escaped quotes, time-sliced with nb-2
    assert by.loc[(3, "serving/llm-0"), "share"] == pytest.approx(3 / 7)
    assert by.loc[(3, "serving/llm-0"), "util"] == 0.5  # GR_ENGINE_ACTIVE for MIG
    assert by.loc[(1, ""), "share"] == 1.0  # pod="" is a free GPU
    assert set(u.resource_id) == {"i-0abc123def4567890"}
    assert u.attrs["diagnostics"]["series_total"] == 13  # DCGM_FI_DEV_SM_CLOCK is not read


def test_exporter_text_ratio_bytes_with_timestamps():
    u = gpucost.prometheus.read_dcgm_text(DATA / "dcgm_ratio_bytes.prom")
    assert u.attrs["diagnostics"]["units"] == "ratio_bytes"
    assert u.util.tolist() == [0.25] and u.mem_used.tolist() == [2.0**30]
    assert u.mem_free.tolist() == [2.4696061952e10]
    assert u.timestamp[0] == pd.Timestamp(1772359200000, unit="ms", tz="UTC")
    with pytest.raises(gpucost.InvalidInputError, match="'ratio_bytes' convention but 'legacy' was required"):
        gpucost.prometheus.read_dcgm_text(DATA / "dcgm_ratio_bytes.prom", units="legacy")


def test_exported_labels_win():
    u = gpucost.prometheus.read_dcgm_text(DATA / "dcgm_exported_labels.prom", timestamp=T)
    assert u.consumer.tolist() == ["batch/etl-5"]
    assert u.resource_id.tolist() == ["gke-pool-1-abc"]  # `node` before Hostname


def test_saved_query_range_json():
    u = gpucost.prometheus.read_query_range([DATA / "query_range_gpu_util.json", DATA / "query_range_fb_used.json"],
                                            step=60)
    assert len(u) == 6 and (u.duration == 60).all()
    assert sorted(u[u.consumer == "ml/train-a-0"].util.tolist()) == pytest.approx([0.9, 0.95, 1.0])


@pytest.mark.parametrize("text, match", [
    ('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} abc\n', r"line 1, column 'value': DCGM_FI_DEV_GPU_UTIL: 'abc' is not a number"),
    ('# TYPE X gauge\nDCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h} 1\n', r"line 2, column 'labels': unterminated"),
    ('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} NaN\n', r"line 1, column 'value': DCGM_FI_DEV_GPU_UTIL: NaN utilisation"),
    ('DCGM_FI_DEV_GPU_UTIL_RATIO{gpu="0",Hostname="h"} 57\n', r"outside \[0, 1\].*percentage"),
    ('DCGM_FI_DEV_GPU_UTIL{gpu="x",Hostname="h"} 5\n', r"label 'gpu': 'x' is not a GPU index"),
    ('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h",a="\\q"} 5\n', r"invalid escape"),
    # GPU 1 lacks the utilisation field the input has (a memory-only input is holder-only, not an error).
    ('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 5\nDCGM_FI_DEV_FB_USED{gpu="1",Hostname="h"} 5\n',
     r"no DCGM_FI_DEV_GPU_UTIL"),
])
def test_bad_exposition_is_a_clear_error(text, match):
    with pytest.raises(gpucost.InvalidInputError, match=match):
        gpucost.prometheus.parse_dcgm_text([text], timestamp=T)


def test_unknown_node_and_missing_mig_share_are_errors():
    nodes = pd.DataFrame({"node": ["other"], "resource_id": ["i-1"]})
    with pytest.raises(gpucost.InvalidInputError, match="node 'ip-10-0-1-17' is not in the nodes table"):
        gpucost.prometheus.read_dcgm_text(DATA / "dcgm_legacy.prom", timestamp=T, nodes=nodes, mig_shares=MIG)
    # A profile neither the caller's table nor the catalog knows.
    unknown = [(DATA / "dcgm_legacy.prom").read_text().replace('"3g.20gb"', '"5g.33gb"')]
    with pytest.raises(gpucost.InvalidInputError, match="MIG profile '5g.33gb' on 'NVIDIA A100-SXM4-40GB'"):
        gpucost.prometheus.parse_dcgm_text(unknown, timestamp=T)


@pytest.mark.parametrize(("basis", "share"), [("compute", 3 / 7), ("memory", 4 / 8)])
def test_mig_shares_default_to_the_catalog(basis, share):
    """DCGM's modelName ("NVIDIA A100-SXM4-40GB") is matched to the catalog's
    "A100 40GB" profiles without any table from the caller."""
    u = gpucost.prometheus.read_dcgm_text(DATA / "dcgm_legacy.prom", timestamp=T, mig_basis=basis)
    by = u.set_index(["device", "consumer"])
    assert by.loc[(3, "serving/llm-0"), "share"] == pytest.approx(share)
    # The caller's table, spelled another way, still wins over the catalog.
    own = pd.DataFrame({"gpu_model": ["A100 40GB"], "profile": ["3g.20gb"], "share": [0.5]})
    u = gpucost.prometheus.read_dcgm_text(DATA / "dcgm_legacy.prom", timestamp=T, mig_shares=own, mig_basis=basis)
    assert u.set_index(["device", "consumer"]).loc[(3, "serving/llm-0"), "share"] == 0.5


@pytest.mark.parametrize("body, match", [
    ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}', "not valid JSON"),
    ('{"status":"error","errorType":"bad_data","error":"parse error"}', r"status 'error' \(bad_data\): parse error"),
    ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"gpu":"0"},"values":[[1,"x"]]}]}}',
     "series 0, point 0: 'x' is not a number"),
])
def test_bad_json_is_a_clear_error(tmp_path, body, match):
    path = tmp_path / "answer.json"
    path.write_text(body)
    with pytest.raises(gpucost.InvalidInputError, match=match):
        gpucost.prometheus.read_query_range(path, step=60, metric="DCGM_FI_DEV_GPU_UTIL")


def test_kubectl_pods_and_nodes():
    w = gpucost.kubernetes.read_pods(DATA / "pods.json")
    assert list(w.columns) == ["consumer", "project", "team", "user", "job"]
    assert w.set_index("consumer").loc["ml/train-a-0"].tolist() == ["llm", "research", "ana", "train-a"]
    gap = gpucost.kubernetes.unlabelled(w)
    assert gap.consumer.tolist() == ["batch/etl-5", "research/nb-2"] and len(gap) == 2
    assert gap.missing.tolist() == ["project, team", "project"]
    n = gpucost.kubernetes.read_nodes(DATA / "nodes.json").set_index("node")
    assert n.loc["ip-10-0-1-17"].tolist() == ["i-0abc123def4567890", "aws", "us-east-1a", "p4d.24xlarge", ""]
    # As the GCP and Azure bill readers spell them (docs/formats.md, "Join keys").
    assert n.loc["gke-pool-1-abc", "resource_id"] == "projects/ml-prod/zones/us-central1-a/instances/gke-pool-1-abc"
    assert n.loc["aks-gpu-0", "resource_id"] == ("/subscriptions/sub-1/resourcegroups/mc_rg/providers/microsoft.compute/"
                                                 "virtualmachinescalesets/aks-gpu/virtualmachines/0")
    assert n.loc["dgx-01", "resource_id"] == "dgx-01"


def test_nvidia_smi_with_apps_and_time_zone():
    pids = pd.DataFrame({"pid": [41823, 51002], "job": ["train-7", "nb-3"]})
    u = gpucost.read_nvidia_smi(DATA / "nvidia_smi_gpu.csv", resource_id="i-0abc", tz="Europe/Paris",
                                apps=DATA / "nvidia_smi_apps.csv", pid_jobs=pids)
    # 10:00 Paris = 09:00 UTC in March.
    assert u.timestamp.min() == pd.Timestamp("2026-03-01T09:00:00.123Z")
    got = u.set_index([u.timestamp.dt.minute, "device", "consumer"])
    assert got.loc[(0, 0, "train-7"), "util"] == pytest.approx(0.97)
    assert got.loc[(0, 1, ""), "share"] == 1.0  # no process: free
    assert got.loc[(1, 1, "nb-3"), "share"] == 0.5 and got.loc[(1, 1, "pid:51007"), "share"] == 0.5
    assert got.loc[(1, 1, "nb-3"), "mem_used"] == 4000 * MIB
    with pytest.raises(gpucost.InvalidInputError, match="unknown time zone"):
        gpucost.read_nvidia_smi(DATA / "nvidia_smi_gpu.csv", resource_id="i-0abc", tz="Mars/Olympus")


def test_nvidia_smi_bad_values(tmp_path):
    path = tmp_path / "gpu.csv"
    path.write_text("timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB]\n"
                    "2026/03/01 10:00:00.000, 0, GPU-1, NVIDIA L4, [N/A], 5 MiB\n")
    with pytest.raises(gpucost.InvalidInputError, match=r"line 2, column 'utilization.gpu': '\[N/A\]'"):
        gpucost.read_nvidia_smi(path, resource_id="h", tz="UTC")


def test_slurm_sacct():
    s = gpucost.read_slurm_sacct(DATA / "sacct.txt", tz="UTC")
    assert s.diagnostics == {"steps_skipped": 2, "jobs_without_gpus": 1, "jobs_not_started": 1,
                             "gpus_assigned_in_order": 11, "gpus_from_scontrol": 0, "free_samples": 0,
                             "nodes_without_gpu_count": 0,
                             "shared_jobs": 0, "rows_repeated": 0, "rows_superseded": 0, "runs_cut": 0}
    assert s.workloads.set_index("consumer").loc["1002"].tolist() == ["1002", "bo", "vision", "assumed"]
    u = s.usage
    assert len(u[u.consumer == "1001"]) == 8 and set(u[u.consumer == "1001"].resource_id) == {"gpu01", "gpu02"}
    # 1002 (10:30-10:45) holds gpu03 device 0; 1003 starts 10:40 and gets devices 1 and 2.
    assert u[u.consumer == "1002"].device.tolist() == [0]
    assert sorted(u[u.consumer == "1003"].device.tolist()) == [1, 2]
    assert u[u.consumer == "1002"].duration.tolist() == [900.0]
    costs = pd.DataFrame({"resource_id": ["gpu01", "gpu02", "gpu03"],
                          "start": pd.to_datetime(["2026-03-01T10:00Z"] * 3),
                          "end": pd.to_datetime(["2026-03-01T11:00Z"] * 3), "cost": [32.0, 32.0, 8.0]})
    inventory = pd.DataFrame({"resource_id": np.repeat(["gpu01", "gpu02", "gpu03"], 4), "device": [0, 1, 2, 3] * 3,
                              "mem_capacity": 40 * 2.0**30})
    by_project = gpucost.allocate(costs, u, inventory, s.workloads, by=["project"]).set_index("project")
    assert by_project.loc["llm", "cost"] == pytest.approx(64.0)
    assert by_project.loc["vision", "cost"] == pytest.approx(8.0 * (0.25 + 2 * 20 / 60) / 4)


def test_slurm_jobs_without_telemetry_are_assumed_and_kept_out_of_measured_kpis():
    s = gpucost.read_slurm_sacct(DATA / "sacct.txt", tz="UTC")
    assert set(s.workloads["utilization_source"]) == {"assumed"}
    # Job 1001 (project llm) holds 8 GPUs of gpu01-02 for 10:00-11:00 with util 1 assumed; one GPU of
    # gpu04 is measured by DCGM at 25 % for the same hour (project nlp).
    measured = pd.DataFrame({"timestamp": pd.to_datetime(["2026-03-01T10:00Z"]), "resource_id": ["gpu04"],
                             "device": [0], "consumer": ["m1"], "share": [1.0], "util": [0.25], "mem_used": [0.0],
                             "duration": [3600.0]})
    usage = pd.concat([s.usage[s.usage["consumer"] == "1001"], measured], ignore_index=True)
    usage["resource_id"] = usage["resource_id"].astype(str)
    usage["consumer"] = usage["consumer"].astype(str)
    workloads = pd.concat([s.workloads, pd.DataFrame({"consumer": ["m1"], "project": ["nlp"]})], ignore_index=True)
    costs = pd.DataFrame({"resource_id": ["gpu01", "gpu02", "gpu04"],
                          "start": pd.to_datetime(["2026-03-01T10:00Z"] * 3),
                          "end": pd.to_datetime(["2026-03-01T11:00Z"] * 3), "cost": [32.0, 32.0, 8.0]})
    inventory = pd.DataFrame({"resource_id": [*np.repeat(["gpu01", "gpu02"], 4), "gpu04"],
                              "device": [0, 1, 2, 3, 0, 1, 2, 3, 0], "mem_capacity": 40 * 2.0**30})
    k = gpucost.kpis(usage, costs, inventory, workloads, by=["project"], interval=3600).set_index("project")
    llm, nlp = k.loc["llm"], k.loc["nlp"]
    # llm: 8 GPU-hours, all assumed: no measured utilisation, no cost per effective GPU-hour.
    assert (llm["gpu_hours"], llm["assumed_gpu_hours"], llm["measured_gpu_hours"]) == pytest.approx((8.0, 8.0, 0.0))
    assert llm["utilization_source"] == "assumed"
    assert np.isnan(llm["avg_util"]) and np.isnan(llm["cost_per_effective_gpu_hour"])
    assert llm["cost"] == pytest.approx(64.0)  # money is still charged
    # nlp: 1 measured GPU-hour at 25 %: 8 / 0.25 = 32 per effective GPU-hour.
    assert nlp["utilization_source"] == "measured" and nlp["avg_util"] == pytest.approx(0.25)
    assert nlp["cost_per_effective_gpu_hour"] == pytest.approx(32.0)


class _Flaky(http.server.BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self):  # noqa: N802
        type(self).calls += 1
        if type(self).calls <= 2:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"busy")
            return
        body = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_client_retries_transient_failures_then_succeeds():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = gpucost.prometheus.PrometheusClient(f"http://127.0.0.1:{server.server_port}", retries=3,
                                                     backoff=0.01, bearer_token="t0k")
        assert '"status":"success"' in client.query_range("up", 0, 60, 60)
        assert _Flaky.calls == 3
    finally:
        server.shutdown()
        server.server_close()


def test_client_times_out_after_bounded_retries():
    with socket.socket() as listener:  # accepts, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        client = gpucost.prometheus.PrometheusClient(url, timeout=0.2, retries=1, backoff=0.01)
        with pytest.raises(gpucost.Error, match="failed after 2 attempts"):
            client.query_range("up", 0, 60, 60)


def test_a_scrape_directory_without_a_step_gives_each_series_its_own_spacing(tmp_path, capsys):
    """Four scrapes 30 s apart, each a file whose name says its instant and whose lines have none: read together,
    each sample stands for 30 s (not a 60 s default per lone scrape, which held the GPU 210 s in a 120 s line)."""
    from gpucost import cli
    labels = 'gpu="0",UUID="GPU-1",Hostname="n1",modelName="NVIDIA H100",namespace="ml",pod="a"'
    scrapes = tmp_path / "scrapes"
    scrapes.mkdir()
    for i in range(4):
        at = pd.Timestamp("2026-03-01T10:00Z") + pd.Timedelta(seconds=30 * i)
        (scrapes / f"n1-{at:%Y%m%dT%H%M%S}Z.prom").write_text(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 50\n")
    start = pd.Timestamp("2026-03-01T10:00Z")
    pd.DataFrame({"resource_id": ["n1"], "start": [start], "end": [start + pd.Timedelta(seconds=120)],
                  "cost": [1.0]}).to_csv(tmp_path / "costs.csv", index=False)
    pd.DataFrame({"resource_id": ["n1"], "device": [0], "mem_capacity": [8e10]}).to_csv(tmp_path / "inv.csv",
                                                                                       index=False)
    (tmp_path / "g.toml").write_text('[sources]\ncosts = "costs.csv"\ninventory = "inv.csv"\ndcgm_text = "scrapes"\n')
    assert cli.main(["allocate", "-c", str(tmp_path / "g.toml"), "--format", "csv", "--decimals", "raw"]) == 0
    out, err = capsys.readouterr()
    result = pd.read_csv(StringIO(out)).set_index("consumer")
    assert result.loc["ml/a", "gpu_hours"] == pytest.approx(120 / 3600) and err == ""
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'timestamp': 1 instants for 4 files"):
        gpucost.prometheus.read_dcgm_text(sorted(scrapes.iterdir()), timestamp=[start])
