"""gpucost export-metrics scraped by a real Prometheus (Debian's prometheus,
127.0.0.1 only): what Prometheus stores equals the library's allocation; the
exposition text follows format 0.0.4; the Grafana dashboard queries these
metrics and DCGM's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

import gpucost
from gpucost import metrics
from gpucost.demo import demo_fleet
import services

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fleet():
    return demo_fleet()


def test_exposition_format(fleet):
    alloc = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "project"],
                             idle="share")
    text = metrics.exposition(alloc, ["team", "project"], generated_at=1.0)
    assert text.endswith("\n") and "\r" not in text
    seen_type = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            seen_type.add(line.split()[2])
        elif not line.startswith("#"):
            name = line.split("{")[0].split(" ")[0]
            assert name in seen_type, f"sample before its TYPE: {line}"
    # Label values are escaped.
    odd = alloc.head(1).assign(team='a "quoted"\\team\nx')
    assert 'team="a \\"quoted\\"\\\\team\\nx"' in metrics.exposition(odd, ["team", "project"])
    with pytest.raises(gpucost.InvalidInputError, match="missing required column 'team'"):
        metrics.exposition(alloc.drop(columns=["team"]), ["team", "project"])


def _query(url: str, promql: str) -> list:
    q = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


@pytest.mark.skipif(__import__("shutil").which("prometheus") is None,
                    reason="Debian's prometheus is not installed (make test installs it)")
def test_prometheus_scrapes_export_metrics(fleet, tmp_path):
    port = services.free_port()
    log = tmp_path / "exporter.log"
    with open(log, "wb") as out:
        exporter = subprocess.Popen([sys.executable, "-m", "gpucost.cli", "export-metrics", "--demo",
                                     "--listen", f"127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT)
    try:
        services.wait_http(f"http://127.0.0.1:{port}/metrics", exporter, log, timeout=120)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            assert r.headers["Content-Type"] == metrics.CONTENT_TYPE
        expected = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads,
                                    by=["team", "project"], idle="share")
        with services.prometheus([f"127.0.0.1:{port}"]) as url:
            # Until a whole scrape is visible: a query can see part of the
            # first one while Prometheus appends it (16 of 17 series once, on
            # a loaded machine).
            deadline = time.monotonic() + 120
            while True:
                result = _query(url, "gpucost_cost_dollars")
                if len(result) >= len(expected) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            up = _query(url, 'up{job="gpucost"}')
            assert up and up[0]["value"][1] == "1"
            got = {(r["metric"].get("team", ""), r["metric"].get("project", "")): float(r["value"][1])
                   for r in result}
            missing = set(zip(expected["team"], expected["project"])) - set(got)
            with urllib.request.urlopen(f"{url}/api/v1/targets", timeout=10) as r:
                targets = [{k: t.get(k) for k in ("health", "lastError", "lastScrapeDuration")}
                           for t in json.load(r)["data"]["activeTargets"]]
            assert not missing and len(result) == len(expected), (missing, targets)
            for team, project, cost in zip(expected["team"], expected["project"], expected["cost"]):
                assert got[(team, project)] == pytest.approx(cost, rel=1e-12)
            # Cost by team, as a Grafana panel would ask for it.
            by_team = _query(url, "sum by (team) (gpucost_cost_dollars)")
            sums = expected.groupby("team")["cost"].sum()
            for r in by_team:
                assert float(r["value"][1]) == pytest.approx(sums[r["metric"]["team"]], rel=1e-12)
            idle = _query(url, 'sum(gpucost_idle_cost_dollars)')
            assert float(idle[0]["value"][1]) == pytest.approx(expected["idle_cost"].sum(), rel=1e-12)
            eff = _query(url, 'gpucost_efficiency_ratio{team="llm"}')
            row = expected[expected["team"] == "llm"].iloc[0]
            assert float(eff[0]["value"][1]) == pytest.approx(row["effective_gpu_hours"] / row["gpu_hours"], rel=1e-12)
    finally:
        services.stop(exporter)


def test_grafana_dashboard_queries_gpucost_and_dcgm_metrics():
    dashboard = json.loads((ROOT / "docs" / "grafana" / "gpucost-dashboard.json").read_text())
    assert dashboard["title"] and dashboard["schemaVersion"] >= 36
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    names = set(metrics.METRICS)
    used = {n for n in names if any(f"gpucost_{n}" in e for e in exprs)}
    assert used >= {"cost_dollars", "idle_cost_dollars", "gpu_hours", "effective_gpu_hours", "efficiency_ratio"}
    assert any("DCGM_FI_DEV_GPU_UTIL" in e for e in exprs)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "team"} <= variables
