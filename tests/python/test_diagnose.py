"""gpucost.diagnose on synthetic DCGM profiling signals (one workload per
rule), and gpucost.kpis / gpucost.queue_waits with exact numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from scenarios import concat, inventory, lines, series, ts

START, END = "2026-03-02 00:00", "2026-03-02 01:00"
NAN = np.nan

# One workload per device of a 9-GPU host ($9/h: $1 per device-hour), each
# with the signals of one cause. Fields: util, SMs (gr_engine_active),
# tensor pipe, DRAM, PCIe and NVLink bytes/s, memory used (GiB of 80).
SIGNALS = {
    "loader":   dict(util=0.20, gr=0.20, tensor=0.10, dram=0.10, pcie=8e9, nvlink=0.0, mem=30),
    "allreduce": dict(util=0.30, gr=0.20, tensor=0.10, dram=0.10, pcie=1e9, nvlink=60e9, mem=30),
    "bigbatch": dict(util=0.30, gr=0.35, tensor=0.20, dram=0.20, pcie=1e9, nvlink=0.0, mem=76),
    "membw":    dict(util=0.70, gr=0.50, tensor=0.20, dram=0.80, pcie=1e9, nvlink=0.0, mem=30),
    "fp32":     dict(util=0.90, gr=0.90, tensor=0.01, dram=0.30, pcie=1e9, nvlink=0.0, mem=30),
    "tiny":     dict(util=0.10, gr=0.10, tensor=0.05, dram=0.05, pcie=1e8, nvlink=0.0, mem=4),
    "sleeper":  dict(util=0.00, gr=0.00, tensor=0.00, dram=0.00, pcie=0.0, nvlink=0.0, mem=10),
    "healthy":  dict(util=0.85, gr=0.85, tensor=0.60, dram=0.40, pcie=1e9, nvlink=0.0, mem=60),
    "blind":    dict(util=0.25, gr=NAN, tensor=NAN, dram=NAN, pcie=NAN, nvlink=NAN, mem=30),
}


@pytest.fixture()
def fleet():
    usage = concat(*[
        series("i-host", d, name, START, END, s["util"], mem_gib=s["mem"], gr_engine_active=s["gr"],
               tensor_active=s["tensor"], dram_active=s["dram"], pcie_bytes_per_s=s["pcie"],
               nvlink_bytes_per_s=s["nvlink"], power_w=250.0)
        for d, (name, s) in enumerate(SIGNALS.items())])
    costs = lines("i-host", START, 1, 9.0)
    return usage, costs, inventory("i-host", len(SIGNALS), gib=80)


def test_each_rule_on_its_signal(fleet):
    d = gpucost.diagnose(*fleet)
    rules = d.groupby("consumer")["rule"].apply(sorted).to_dict()
    assert rules == {
        "loader": ["input_pipeline"],
        "allreduce": ["communication"],
        "bigbatch": ["memory_bound"],
        "membw": ["memory_bandwidth"],
        "fp32": ["no_mixed_precision"],
        "tiny": ["small_job_big_gpu"],
        "sleeper": ["idle"],
        "blind": ["unexplained"],
    }
    by = d.set_index("consumer")
    # Dollars at stake: the $1 device-hour times the idle part.
    assert by.loc["loader", "dollars_at_stake"] == pytest.approx(0.8)
    assert by.loc["sleeper", "dollars_at_stake"] == pytest.approx(1.0)
    assert by.loc["fp32", "dollars_at_stake"] == pytest.approx(0.99)   # tensor cores idle 99 % of the time
    assert by.loc["loader", "cost"] == pytest.approx(1.0)
    assert by.loc["loader", "pcie_bytes_per_s"] == pytest.approx(8e9)
    assert by.loc["loader", "evidence"] == "util 20%, SMs active 20%, PCIe 8.0 GB/s"
    assert by.loc["bigbatch", "mem_peak_share"] == pytest.approx(76 / 80)
    assert by.loc["tiny", "evidence"].endswith("1 such job(s) in the fleet")
    assert by.loc["blind", "evidence"] == "util 25%; no profiling fields reported"
    assert d["dollars_at_stake"].is_monotonic_decreasing
    assert "healthy" not in set(d["consumer"])


def test_thresholds_and_groups(fleet):
    usage, costs, inv = fleet
    strict = gpucost.diagnose(usage, costs, inv, thresholds={"low_util": 0.95})
    assert "unexplained" in set(strict.loc[strict["consumer"] == "healthy", "rule"])
    workloads = pd.DataFrame({"consumer": list(SIGNALS), "team": ["a"] * 4 + ["b"] * 5})
    by_team = gpucost.diagnose(usage, costs, inv, workloads, by="team")
    assert set(by_team["team"]) <= {"a", "b"}
    assert by_team.groupby("team")["cost"].first().to_dict() == {"a": pytest.approx(4.0), "b": pytest.approx(5.0)}
    with pytest.raises(gpucost.InvalidInputError, match="unknown threshold 'speed'"):
        gpucost.diagnose(usage, costs, inv, thresholds={"speed": 1})


def test_profiling_field_with_inf_is_rejected(fleet):
    usage, costs, inv = fleet
    usage = usage.copy()
    usage.loc[5, "power_w"] = np.inf
    with pytest.raises(gpucost.InvalidInputError, match="usage: row 5, column 'power_w'"):
        gpucost.diagnose(usage, costs, inv)


@pytest.fixture()
def day():
    """Two teams on a 2-GPU instance ($4/h) for one day. vision trains on GPU
    0 from 00:00 to 12:00 at 80 % with 36 of 40 GiB (memory pressure), then
    GPU 0 is free; nlp's notebook holds GPU 1 all day at 2 %."""
    costs = lines("i-k", "2026-03-02 00:00", 24, 4.0)
    usage = concat(series("i-k", 0, "vision/train", "2026-03-02 00:00", "2026-03-02 12:00", 0.8, mem_gib=36),
                   series("i-k", 0, "", "2026-03-02 12:00", "2026-03-03 00:00", 0.0),
                   series("i-k", 1, "nlp/nb", "2026-03-02 00:00", "2026-03-03 00:00", 0.02, mem_gib=4))
    workloads = pd.DataFrame({"consumer": ["vision/train", "nlp/nb"], "team": ["vision", "nlp"]})
    return usage, costs, inventory("i-k", 2), workloads


def test_kpis_per_day_and_team(day):
    usage, costs, inv, workloads = day
    queue = pd.DataFrame({"consumer": ["vision/train", "vision/train", "nlp/nb", "nlp/nb"],
                          "submitted": [ts("2026-03-01 23:50"), ts("2026-03-02 05:00"), ts("2026-03-02 00:00"),
                                        ts("2026-03-02 09:00")],
                          "started": [ts("2026-03-02 00:00"), ts("2026-03-02 05:30"), ts("2026-03-02 00:00"),
                                      pd.NaT]})
    k = gpucost.kpis(usage, costs, inv, workloads, queue=queue).set_index("team")
    assert list(k.index) == ["__idle__", "nlp", "vision"]
    assert (k["period"] == ts("2026-03-02")).all()
    vision, nlp, idle = k.loc["vision"], k.loc["nlp"], k.loc["__idle__"]
    assert vision["gpu_hours"] == pytest.approx(12.0) and vision["effective_gpu_hours"] == pytest.approx(9.6)
    assert vision["cost"] == pytest.approx(24.0)
    assert vision["avg_util"] == pytest.approx(0.8)
    assert vision["avg_util_1h_min"] == pytest.approx(0.8) and vision["avg_util_1h_max"] == pytest.approx(0.8)
    assert vision["cost_per_effective_gpu_hour"] == pytest.approx(24.0 / 9.6)
    assert vision["memory_pressure_hours"] == pytest.approx(12.0)   # 36 GiB >= 85 % of 40
    assert vision["idle_gpu_hours"] == 0.0
    assert nlp["idle_gpu_hours"] == pytest.approx(24.0)              # holds an idle GPU all day
    assert nlp["memory_pressure_hours"] == 0.0
    assert idle["gpu_hours"] == pytest.approx(12.0) and idle["idle_gpu_hours"] == pytest.approx(12.0)
    assert idle["cost"] == pytest.approx(24.0)
    assert k["cost"].sum() == pytest.approx(96.0)
    # Queue: vision started 2 jobs, waiting 10 and 30 minutes.
    assert vision["jobs_started"] == 2
    assert vision["queue_wait_p50_min"] == pytest.approx(20.0)
    assert vision["queue_wait_p90_min"] == pytest.approx(28.0)
    assert vision["queue_wait_max_min"] == pytest.approx(30.0)
    assert nlp["jobs_started"] == 1 and nlp["queue_wait_max_min"] == 0.0
    assert idle["jobs_started"] == 0


def test_queue_waits_bad_rows(day):
    *_, workloads = day
    queue = pd.DataFrame({"consumer": ["nlp/nb"], "submitted": [ts("2026-03-02 10:00")],
                          "started": [ts("2026-03-02 09:00")]})
    with pytest.raises(gpucost.InvalidInputError, match="queue: row 0, column 'started': before 'submitted'"):
        gpucost.queue_waits(queue, workloads)
    waits = gpucost.queue_waits(queue.assign(started=[pd.NaT]), workloads)
    assert len(waits) == 0 and waits.attrs["not_started"] == 1
