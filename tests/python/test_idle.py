"""gpucost.find_idle and gpucost.idle_policy: exact dollars on hand-built
scenarios (a forgotten weekend instance, a pod holding an idle GPU, an
unobserved device, an exempt job), conservation of each device's billed
dollars, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost.simulate import P4D_HOURLY, simulate_fleet
from scenarios import concat, inventory, lines, series, ts


@pytest.fixture()
def weekend():
    """A p4d.24xlarge (8 GPUs, $32.77/h) billed from Friday 18:00 to Monday
    08:00; its training job ends Friday 20:00 and nobody notices."""
    costs = lines("i-weekend", "2026-03-06 18:00", 62, P4D_HOURLY, list_cost=P4D_HOURLY)
    usage = concat(*[series("i-weekend", d, "train-7", "2026-03-06 18:00", "2026-03-06 20:00", 0.9, mem_gib=30)
                     for d in range(8)],
                   *[series("i-weekend", d, "", "2026-03-06 20:00", "2026-03-09 08:00", 0.0) for d in range(8)])
    workloads = pd.DataFrame({"consumer": ["train-7"], "team": ["vision"]})
    return usage, costs, inventory("i-weekend", 8), workloads


def test_forgotten_weekend_instance(weekend):
    report = gpucost.find_idle(*weekend)
    f = report.findings
    assert len(f) == 1
    row = f.iloc[0]
    assert row["resource_id"] == "i-weekend"
    assert row["devices"] == "0-7" and row["gpus"] == 8
    assert row["start"] == ts("2026-03-06 20:00") and row["end"] == ts("2026-03-09 08:00")
    assert row["hours"] == pytest.approx(60.0)
    assert row["gpu_hours"] == pytest.approx(480.0)
    assert row["action"] == "terminate" and row["flagged"] and not row["exempt"]
    assert row["consumer"] == "" and row["team"] == ""
    assert row["mean_util"] == 0.0 and row["observed_share"] == 1.0 and not row["unobserved"]
    assert row["dollars_wasted"] == pytest.approx(60 * 32.77, rel=1e-12)  # $1,966.20
    assert row["list_dollars_wasted"] == pytest.approx(60 * 32.77, rel=1e-12)

    daily = report.daily.set_index("period")
    assert list(daily.index) == [ts("2026-03-06"), ts("2026-03-07"), ts("2026-03-08"), ts("2026-03-09")]
    assert daily["idle_gpu_hours"].tolist() == pytest.approx([32.0, 192.0, 192.0, 64.0])
    assert daily["idle_cost"].tolist() == pytest.approx([4 * 32.77, 24 * 32.77, 24 * 32.77, 8 * 32.77])
    assert daily["gpu_spend"].tolist() == pytest.approx([6 * 32.77, 24 * 32.77, 24 * 32.77, 8 * 32.77])
    assert daily["idle_share"].tolist() == pytest.approx([4 / 6, 1.0, 1.0, 1.0])
    assert daily["idle_cost"].sum() == pytest.approx(row["dollars_wasted"], rel=1e-12)


def test_weekend_policy_timeline_and_callback(weekend):
    seen = []
    timeline = gpucost.idle_policy(*weekend, on_decision=seen.append)
    assert timeline["decision"].tolist() == ["alert", "terminate"]
    alert, terminate = timeline.iloc[0], timeline.iloc[1]
    # The first 2 h window below 5 %: 19:54-21:54 holds 6 busy minutes (4.5 %).
    assert alert["time"] == ts("2026-03-06 21:54")
    assert alert["window_start"] == ts("2026-03-06 19:54")
    assert alert["window_util"] == pytest.approx(6 * 0.9 / 120)
    assert terminate["time"] == ts("2026-03-06 22:24")
    assert terminate["until"] == ts("2026-03-09 08:00")
    # Following the recommendation saves Friday 22:24 to Monday 08:00: 57.6 h.
    assert terminate["dollars_at_stake"] == pytest.approx(57.6 * 32.77, rel=1e-12)  # $1,887.55
    assert [d["decision"] for d in seen] == ["alert", "terminate"]
    assert seen[1]["resource_id"] == "i-weekend" and seen[1]["dollars_at_stake"] == pytest.approx(1887.552)
    # Incremental runs: only decisions at or after `since` reach the callback.
    later = []
    gpucost.idle_policy(*weekend, since="2026-03-06 22:00", on_decision=later.append)
    assert [d["decision"] for d in later] == ["terminate"]


def test_callback_errors_propagate(weekend):
    def broken(_):
        raise RuntimeError("pager down")

    with pytest.raises(RuntimeError, match="pager down"):
        gpucost.idle_policy(*weekend, on_decision=broken)


@pytest.fixture()
def pod_holding_idle_gpu():
    """A 2-GPU instance at $8/h for 6 h: `train` works on GPU 0, `stuck`
    holds GPU 1 and does nothing."""
    costs = lines("i-pod", "2026-03-02 10:00", 6, 8.0)
    usage = concat(series("i-pod", 0, "ml/train", "2026-03-02 10:00", "2026-03-02 16:00", 0.8, mem_gib=30),
                   series("i-pod", 1, "ml/stuck", "2026-03-02 10:00", "2026-03-02 16:00", 0.0, mem_gib=2))
    workloads = pd.DataFrame({"consumer": ["ml/train", "ml/stuck"], "team": ["nlp", "research"],
                              "idle_exempt": ["false", "false"]})
    return usage, costs, inventory("i-pod", 2), workloads


def test_pod_holding_an_idle_gpu(pod_holding_idle_gpu):
    usage, costs, inv, workloads = pod_holding_idle_gpu
    f = gpucost.find_idle(usage, costs, inv, workloads).findings
    assert len(f) == 1
    row = f.iloc[0]
    assert (row["devices"], row["action"], row["consumer"], row["holders"], row["team"]) == \
        ("1", "release", "ml/stuck", "ml/stuck", "research")
    assert row["hours"] == pytest.approx(6.0)
    assert row["dollars_wasted"] == pytest.approx(6 * 8.0 / 2, rel=1e-12)  # $24.00
    # Reconciles with the allocation: under the allocated basis the pod is
    # charged exactly the dollars it wasted.
    alloc = gpucost.allocate(costs, usage, inv, workloads)
    assert alloc.set_index("consumer").loc["ml/stuck", "cost"] == pytest.approx(row["dollars_wasted"], rel=1e-12)
    # The instance averages 40 %: the policy stays quiet.
    assert len(gpucost.idle_policy(usage, costs, inv, workloads)) == 0


def test_exempt_workload_is_reported_not_flagged(pod_holding_idle_gpu):
    usage, costs, inv, workloads = pod_holding_idle_gpu
    workloads = workloads.assign(idle_exempt=["false", "True"])
    report = gpucost.find_idle(usage, costs, inv, workloads)
    row = report.findings.iloc[0]
    assert (row["action"], row["exempt"], row["flagged"]) == ("none", True, False)
    assert row["dollars_wasted"] == pytest.approx(24.0)
    assert report.daily["idle_cost"].sum() == 0.0
    assert report.daily["exempt_cost"].sum() == pytest.approx(24.0)
    # A label of your own.
    custom = workloads.rename(columns={"idle_exempt": "waiting"}).assign(waiting=["", "data"])
    f = gpucost.find_idle(usage, costs, inv, custom, exempt_label="waiting", exempt_values=["data"]).findings
    assert f["action"].tolist() == ["none"]


def test_unobserved_device_is_not_idle():
    """GPU 1 of a 2-GPU instance never reports: nothing says it was free, so it
    is no idle finding (and no right-size advice); the instance has telemetry,
    so there is no "no telemetry" span either."""
    costs = lines("i-u", "2026-03-02 00:00", 4, 6.0)
    usage = series("i-u", 0, "job", "2026-03-02 00:00", "2026-03-02 04:00", 0.7)
    report = gpucost.find_idle(usage, costs, inventory("i-u", 2))
    assert len(report.findings) == 0
    assert report.diagnostics["devices_unobserved"] == 1
    assert report.daily["idle_cost"].sum() == 0.0


def test_free_device_reported_free_is_right_size():
    """The same GPU 1 reported free (an empty-consumer sample, as DCGM and
    nvidia-smi report every GPU): idle, and the instance is bigger than its work."""
    costs = lines("i-u", "2026-03-02 00:00", 4, 6.0)
    usage = concat(series("i-u", 0, "job", "2026-03-02 00:00", "2026-03-02 04:00", 0.7),
                   series("i-u", 1, "", "2026-03-02 00:00", "2026-03-02 04:00", 0.0))
    report = gpucost.find_idle(usage, costs, inventory("i-u", 2))
    row = report.findings.iloc[0]
    assert (row["devices"], row["action"], row["unobserved"], row["observed_share"]) == ("1", "right-size", False, 1.0)
    assert row["dollars_wasted"] == pytest.approx(12.0)


def test_instance_without_telemetry_says_no_telemetry():
    """A billed instance with no sample at all: one "no telemetry" finding,
    never flagged, its dollars unobserved, not wasted; never "terminate"."""
    costs = concat(lines("i-u", "2026-03-02 00:00", 4, 6.0), lines("i-d", "2026-03-02 00:00", 4, 3.0))
    usage = series("i-u", 0, "job", "2026-03-02 00:00", "2026-03-02 04:00", 0.7)
    report = gpucost.find_idle(usage, costs, concat(inventory("i-u", 1), inventory("i-d", 1)))
    dark = report.findings[report.findings["resource_id"] == "i-d"]
    assert dark["action"].tolist() == ["no telemetry"]
    assert not dark["flagged"].any() and dark["unobserved"].all()
    assert dark["dollars_wasted"].sum() == 0.0 and dark["dollars_unobserved"].sum() == pytest.approx(12.0)
    assert report.daily["unobserved_gpu_hours"].sum() == pytest.approx(4.0)
    assert report.daily["unobserved_cost"].sum() == pytest.approx(12.0)
    assert report.daily["idle_cost"].sum() == 0.0
    timeline = gpucost.idle_policy(usage, costs, concat(inventory("i-u", 1), inventory("i-d", 1)))
    assert (timeline["resource_id"] != "i-d").all()


def test_devices_with_the_same_span_merge_into_one_finding():
    costs = lines("i-m", "2026-03-02 00:00", 4, 8.0)
    usage = concat(series("i-m", 0, "busy", "2026-03-02 00:00", "2026-03-02 04:00", 0.9),
                   *[series("i-m", d, "", "2026-03-02 00:00", "2026-03-02 04:00", 0.0) for d in (1, 2, 3, 5)],
                   series("i-m", 4, "", "2026-03-02 00:00", "2026-03-02 04:00", 0.5))
    f = gpucost.find_idle(usage, costs, inventory("i-m", 6)).findings
    assert f[["devices", "gpus", "action"]].values.tolist() == [["1-3,5", 4, "right-size"]]
    assert f["dollars_wasted"].iloc[0] == pytest.approx(4 * 4 * 8.0 / 6)


def _complement(spans: pd.DataFrame, costs: pd.DataFrame, inv: pd.DataFrame) -> pd.DataFrame:
    """Per device, the billed time outside its idle spans (test helper)."""
    rows = []
    billed = costs.groupby("resource_id").agg(lo=("start", "min"), hi=("end", "max"))
    for (r, d), group in inv.groupby(["resource_id", "device"]):
        lo, hi = billed.loc[r, "lo"], billed.loc[r, "hi"]
        cursor = lo
        mine = spans[(spans["resource_id"] == r) & (spans["device"] == d)].sort_values("start")
        for s, e in zip(mine["start"], mine["end"]):
            if s > cursor:
                rows.append((r, d, cursor, s))
            cursor = max(cursor, e)
        if cursor < hi:
            rows.append((r, d, cursor, hi))
    return pd.DataFrame(rows, columns=["resource_id", "device", "start", "end"])


def test_conservation_wasted_plus_used_is_billed():
    """For every device: its idle spans' dollars plus the rest of its billed
    time's dollars equal the device's share of the bill."""
    fleet = simulate_fleet(gpus=40, hours=24, seed=3)
    report = gpucost.find_idle(fleet.usage, fleet.costs, fleet.inventory, fleet.workloads)
    spans = report.spans
    rest = _complement(spans, fleet.costs, fleet.inventory)
    usage = pd.DataFrame({
        "timestamp": rest["start"], "resource_id": rest["resource_id"].astype(str), "device": rest["device"],
        "consumer": "used", "share": 1.0, "util": 0.0, "mem_used": 0.0, "duration": rest["end"] - rest["start"]})
    # The complement leaves out every span, "no telemetry" ones too: their lines are unobserved here, by design.
    with pytest.warns(gpucost.JoinWarning, match="without any telemetry"):
        used = gpucost.allocate(fleet.costs, usage, fleet.inventory, by=["consumer"])
    used_dollars = used.set_index("consumer").loc["used", "cost"]
    priced = spans["dollars_wasted"] + spans["dollars_unobserved"]  # idle, or billed with no telemetry
    assert priced.sum() + used_dollars == pytest.approx(fleet.costs["cost"].sum(), rel=1e-12)
    # Per device: wasted + unobserved + used = billed / devices.
    per_dev = spans.assign(priced=priced).groupby(["resource_id", "device"])["priced"].sum()
    usage["consumer"] = usage["resource_id"] + "#" + usage["device"].astype(str)
    with pytest.warns(gpucost.JoinWarning, match="without any telemetry"):
        by_dev = gpucost.allocate(fleet.costs, usage, fleet.inventory).set_index("consumer")["cost"]
    billed = fleet.costs.groupby(fleet.costs["resource_id"].astype(str))["cost"].sum() / 8
    for (r, d), wasted in per_dev.items():
        assert wasted + by_dev.get(f"{r}#{d}", 0.0) == pytest.approx(billed[r], rel=1e-12)
    # Findings and daily KPIs carry the same money as the spans.
    assert report.findings["dollars_wasted"].sum() == pytest.approx(spans["dollars_wasted"].sum(), rel=1e-12)
    daily = report.daily
    assert (daily["idle_cost"] + daily["exempt_cost"]).sum() == pytest.approx(spans["dollars_wasted"].sum())
    assert daily["unobserved_cost"].sum() == pytest.approx(spans["dollars_unobserved"].sum())
    assert report.findings["dollars_unobserved"].sum() == pytest.approx(spans["dollars_unobserved"].sum())
    assert daily["gpu_spend"].sum() == pytest.approx(fleet.costs["cost"].sum(), rel=1e-12)


def test_simulated_fleet_finds_its_idle_instance():
    fleet = simulate_fleet(gpus=40, hours=24)
    f = gpucost.find_idle(fleet.usage, fleet.costs, fleet.inventory, fleet.workloads).findings
    whole_day = f[(f["action"] == "terminate") & (f["hours"] == 24)]
    assert len(whole_day) == 1 and whole_day["gpus"].iloc[0] == 8
    assert whole_day["dollars_wasted"].iloc[0] == pytest.approx(24 * P4D_HOURLY)
    assert (f["dollars_wasted"] > 0).all()
    assert f["dollars_wasted"].is_monotonic_decreasing


def test_other_sources_and_units_give_the_same_spans(pod_holding_idle_gpu):
    usage, costs, inv, workloads = pod_holding_idle_gpu
    expected = gpucost.find_idle(usage, costs, inv, workloads).findings
    import pyarrow as pa
    tables = [pa.Table.from_pandas(t, preserve_index=False) for t in (usage, costs, inv, workloads)]
    pd.testing.assert_frame_equal(gpucost.find_idle(*tables).findings, expected)
    usage_s = usage.assign(timestamp=usage["timestamp"].dt.as_unit("s"), consumer=usage["consumer"].astype("category"))
    pd.testing.assert_frame_equal(gpucost.find_idle(usage_s, costs, inv, workloads).findings, expected)


@pytest.mark.parametrize(("change", "message"), [
    (lambda u, c: (u.assign(share=np.where(np.arange(len(u)) == 7, 1.5, u["share"])), c),
     "usage: row 7, column 'share': 1.5 is outside"),
    (lambda u, c: (u.drop(columns="util"), c), "usage: missing required column 'util'"),
    (lambda u, c: (u, c.assign(end=c["start"])), "costs: row 0, column 'end'"),
    (lambda u, c: (u.assign(consumer=np.where(np.arange(len(u)) == 3, "__idle__", u["consumer"])), c),
     "usage: row 3, column 'consumer': '__idle__' is a reserved name"),
])
def test_bad_input_names_table_row_and_column(pod_holding_idle_gpu, change, message):
    usage, costs, inv, workloads = pod_holding_idle_gpu
    usage, costs = change(usage, costs)
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.find_idle(usage, costs, inv, workloads)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"window": "90s"}, "parameter 'window'"),
    ({"window": "soon"}, "parameter 'window'"),
    ({"threshold": 1.5}, "parameter 'threshold'"),
    ({"resolution": "7min"}, "parameter 'window'"),
])
def test_bad_parameters(pod_holding_idle_gpu, kwargs, message):
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.find_idle(*pod_holding_idle_gpu, **kwargs)


def test_busy_instance_has_no_findings_and_its_spend_in_daily():
    costs = lines("i-b", "2026-03-02 00:00", 3, 4.0)
    usage = series("i-b", 0, "job", "2026-03-02 00:00", "2026-03-02 03:00", 0.9)
    report = gpucost.find_idle(usage, costs, inventory("i-b", 1))
    assert len(report.findings) == 0 and len(report.spans) == 0
    assert report.daily[["idle_cost", "gpu_spend", "idle_share"]].values.tolist() == [[0.0, 12.0, 0.0]]
    assert len(gpucost.idle_policy(usage, costs, inventory("i-b", 1))) == 0
