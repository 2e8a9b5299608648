"""gpucost against a real Prometheus (Debian's prometheus 2.42): a TSDB
backfilled with promtool from simulated DCGM series, served on 127.0.0.1,
fetched with gpucost.prometheus; the allocation must equal the one computed
from the same samples in memory. One server per module, stopped at the end
(also on failure)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request

import numpy as np
import pandas as pd
import pytest

import gpucost
import telemetry_sim as sim

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(not (PROMETHEUS and PROMTOOL),
                                reason="Debian's prometheus package is not installed (make test installs it)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def t0() -> int:
    # A whole hour a day ago: inside the TSDB's retention, not in the future.
    now = time.time_ns()
    return (now - 26 * sim.HOUR_NS) // sim.HOUR_NS * sim.HOUR_NS


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory, t0):
    work = tmp_path_factory.mktemp("prometheus")
    (work / "input.om").write_text(sim.openmetrics(t0))
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(work / "input.om"), str(work / "data")],
                   check=True, capture_output=True, timeout=120)
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 60s\n")
    port = _free_port()
    log = open(work / "prometheus.log", "wb")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={work / 'prometheus.yml'}",
                             f"--storage.tsdb.path={work / 'data'}", "--storage.tsdb.retention.time=100y",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(work / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("prometheus did not become ready in 60 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def _fetch(url, t0, **kwargs):
    start = pd.Timestamp(t0, tz="UTC")
    return gpucost.prometheus.fetch_usage(url, start, start + pd.Timedelta(hours=1), step=60,
                                          nodes=sim.NODES[["node", "resource_id"]], mig_shares=sim.MIG_SHARES,
                                          **kwargs)


def _key(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame[["timestamp", "resource_id", "device", "consumer", "share", "util", "mem_used", "duration"]].copy()
    for c in ("resource_id", "consumer"):
        out[c] = out[c].astype(str)
    return out.sort_values(["timestamp", "resource_id", "device", "consumer"]).reset_index(drop=True)


def test_fetched_samples_equal_the_simulation(prometheus_url, t0):
    usage = _fetch(prometheus_url, t0)
    expected = sim.expected_usage(t0)
    got = _key(usage)
    want = _key(expected)
    # The pods that ended mid-hour are not charged for the 5-minute lookback.
    assert not ((got.consumer == "batch/etl-1") & (got.timestamp >= pd.Timestamp(t0 + 20 * sim.MINUTE_NS, tz="UTC"))).any()
    assert not ((got.consumer == "serving/small-0") & (got.timestamp >= pd.Timestamp(t0 + 30 * sim.MINUTE_NS, tz="UTC"))).any()
    pd.testing.assert_frame_equal(got, want, check_dtype=False, rtol=1e-12)
    d = usage.attrs["diagnostics"]
    assert d["units"] == "legacy"
    assert d["samples_mig"] == 150 and d["samples_time_sliced"] == 120


def test_allocation_equals_the_in_memory_one(prometheus_url, t0):
    usage = _fetch(prometheus_url, t0)
    costs, inventory, workloads = sim.costs(t0), sim.inventory(), sim.workloads()
    got = gpucost.allocate(costs, usage, inventory, workloads, by=["team", "consumer"])
    want = gpucost.allocate(costs, sim.expected_usage(t0), inventory, workloads, by=["team", "consumer"])
    pd.testing.assert_frame_equal(got, want, rtol=1e-9)
    assert got["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-12)
    row = got.set_index("consumer").loc["ml/train-0"]
    assert row["cost"] == pytest.approx(32.77 / 2 / 4, rel=1e-12)  # one whole GPU of four
    assert got.set_index("consumer").loc["batch/etl-1", "gpu_hours"] == pytest.approx(20 / 60)


def test_long_ranges_are_split_under_the_points_limit(prometheus_url, t0):
    whole = _fetch(prometheus_url, t0)
    split = _fetch(prometheus_url, t0, max_points=7)  # 60 instants -> 9 calls per metric
    pd.testing.assert_frame_equal(_key(split), _key(whole))
    assert split.attrs["diagnostics"]["requests"] == 9 * len(gpucost.prometheus.dcgm_metric_names())


def test_workloads_and_nodes_from_kube_state_metrics(prometheus_url, t0):
    start = pd.Timestamp(t0, tz="UTC")
    end = start + pd.Timedelta(hours=1)
    workloads = gpucost.kubernetes.fetch_workloads(prometheus_url, start, end, {"project": "project-id",
                                                                                "team": "team-id"})
    pd.testing.assert_frame_equal(workloads.sort_values("consumer").reset_index(drop=True),
                                  sim.workloads().sort_values("consumer").reset_index(drop=True),
                                  check_dtype=False)
    gap = gpucost.kubernetes.unlabelled(workloads)
    assert list(gap.consumer) == ["batch/etl-1", "research/nb-2"]
    assert list(gap.missing) == ["team", "project"]
    nodes = gpucost.kubernetes.fetch_nodes(prometheus_url, start, end)
    assert dict(zip(nodes.node, nodes.resource_id)) == {"node-a": "i-0aaa", "node-b": "i-0bbb"}


def test_from_a_prometheus_url_to_an_allocation_by_team(prometheus_url, t0):
    # The docs/telemetry.md example, end to end.
    start = pd.Timestamp(t0, tz="UTC")
    end = start + pd.Timedelta(hours=1)
    nodes = gpucost.kubernetes.fetch_nodes(prometheus_url, start, end)
    workloads = gpucost.kubernetes.fetch_workloads(prometheus_url, start, end)
    usage = gpucost.prometheus.fetch_usage(prometheus_url, start, end, step=60, nodes=nodes,
                                           mig_shares=sim.MIG_SHARES)
    by_team = gpucost.allocate(sim.costs(t0), usage, sim.inventory(), workloads, by=["team"])
    assert by_team["cost"].sum() == pytest.approx(sim.costs(t0)["cost"].sum(), rel=1e-12)
    assert set(by_team.team) == {"research", "inference", "__unlabelled__", "__idle__"}


def test_a_bad_query_is_a_clear_error(prometheus_url):
    client = gpucost.prometheus.PrometheusClient(prometheus_url, retries=0)
    with pytest.raises(gpucost.InvalidInputError, match="HTTP 400.*bad_data"):
        client.query_range("DCGM_FI_DEV_GPU_UTIL{", 0, 60, 60)


def test_the_command_line_reads_usage_labels_and_nodes_from_prometheus(prometheus_url, t0, tmp_path, capsys):
    # gpucost allocate with everything live: DCGM series, kube_pod_labels and
    # kube_node_info, as docs/cli.md's walk-through configures it.
    from io import StringIO

    from gpucost import cli
    start = pd.Timestamp(t0, tz="UTC")
    end = start + pd.Timedelta(hours=1)
    sim.costs(t0).to_csv(tmp_path / "costs.csv", index=False)
    sim.inventory().to_csv(tmp_path / "inventory.csv", index=False)
    code = cli.main(["allocate", "--costs", str(tmp_path / "costs.csv"), "--inventory", str(tmp_path / "inventory.csv"),
                     "--prometheus", prometheus_url, "--start", start.isoformat(), "--end", end.isoformat(),
                     "--step", "60", "--nodes", "prometheus", "--pod-labels", "prometheus", "--by", "team",
                     "--format", "csv", "--decimals", "raw"])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = pd.read_csv(StringIO(out)).sort_values("team").reset_index(drop=True)
    nodes = gpucost.kubernetes.fetch_nodes(prometheus_url, start, end)
    workloads = gpucost.kubernetes.fetch_workloads(prometheus_url, start, end)
    usage = gpucost.prometheus.fetch_usage(prometheus_url, start, end, step=60, nodes=nodes[["node", "resource_id"]])
    want = gpucost.allocate(sim.costs(t0), usage, sim.inventory(), workloads, by=["team"], interval=60)
    want = want.sort_values("team").reset_index(drop=True)
    assert list(got["team"]) == list(want["team"])
    np.testing.assert_allclose(got["cost"], want["cost"], rtol=1e-9)
    np.testing.assert_allclose(got["gpu_hours"], want["gpu_hours"], rtol=1e-9)
    assert got["cost"].sum() == pytest.approx(sim.costs(t0)["cost"].sum(), rel=1e-12)
