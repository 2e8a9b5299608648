"""gpucost.spot_runs and gpucost.spot_interruptions: a training job
interrupted twice then completed on a third instance, with exact dollars;
EventBridge events; zero-cost first-hour interruptions; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from scenarios import concat, inventory, lines, series, ts

DATA = Path(__file__).resolve().parents[1] / "data" / "spot"
A, B, C = "i-0a1111111111111a1", "i-0b2222222222222b2", "i-0c3333333333333c3"
SPOT, LIST = 10.0, 32.77


@pytest.fixture()
def job():
    """train-llm on spot 8-GPU instances ($10/h, list $32.77/h):
    attempt 1 on A 10:00-10:40, interrupted in its first hour (AWS bills
    nothing: no line); attempt 2 on B 11:00-13:30 ($25), its lines stop while
    the job goes on; attempt 3 on C 14:00-18:00 ($40), completed. Around it:
    an on-demand serving instance ($10) and a storage line ($3)."""
    costs = concat(lines(B, "2026-03-02 11:00", 2.5, SPOT, LIST, "spot"),
                   lines(C, "2026-03-02 14:00", 4, SPOT, LIST, "spot"),
                   lines("i-serve", "2026-03-02 10:00", 2, 5.0, 5.0, "on_demand"),
                   lines("vol-1", "2026-03-02 10:00", 1, 3.0, 3.0, "other"))
    usage = concat(*[series(A, d, "ml/llm-a1", "2026-03-02 10:00", "2026-03-02 10:40", 0.9) for d in range(8)],
                   *[series(B, d, "ml/llm-a2", "2026-03-02 11:00", "2026-03-02 13:30", 0.9) for d in range(8)],
                   *[series(C, d, "ml/llm-a3", "2026-03-02 14:00", "2026-03-02 18:00", 0.9) for d in range(8)],
                   series("i-serve", 0, "web/serve", "2026-03-02 10:00", "2026-03-02 12:00", 0.5))
    inv = concat(inventory(A, 8), inventory(B, 8), inventory(C, 8), inventory("i-serve", 1))
    workloads = pd.DataFrame({
        "consumer": ["ml/llm-a1", "ml/llm-a2", "ml/llm-a3", "web/serve"],
        "job": ["train-llm", "train-llm", "train-llm", None],
        "team": ["nlp", "nlp", "nlp", "web"],
        "state": [None, None, "Completed", None],
        "start": [ts("2026-03-02 10:00"), ts("2026-03-02 11:00"), ts("2026-03-02 14:00"), pd.NaT],
        "end": [ts("2026-03-02 10:40"), ts("2026-03-02 13:30"), ts("2026-03-02 18:00"), pd.NaT],
    })
    # Attempt 1's instance was billed nothing (interrupted in its first hour): said, not hidden.
    with pytest.warns(gpucost.JoinWarning, match=r"telemetry of 1 resource\(s\) that the bill does not name"):
        allocation = gpucost.allocate(costs, usage, inv, workloads.drop(columns=["start", "end"]),
                                      by=["consumer", "resource_id"])
    return allocation, workloads, costs, usage, inv


def test_interrupted_twice_then_completed(job):
    allocation, workloads, costs, usage, inv = job
    events = gpucost.spot_interruptions(DATA / "eventbridge.jsonl")
    # Attempt 1 has no allocation row: its instance comes from its samples.
    runs = gpucost.spot_runs(allocation, workloads, events, costs=costs, usage=usage, inventory=inv)

    a = runs.attempts
    assert a["attempt"].tolist() == ["ml/llm-a1", "ml/llm-a2", "ml/llm-a3"]
    assert a["resources"].tolist() == [A, B, C]
    assert a["outcome"].tolist() == ["interrupted", "interrupted", "completed"]
    assert a["source"].tolist() == ["event", "billing", "state"]
    assert a["cost"].tolist() == pytest.approx([0.0, 25.0, 40.0], rel=1e-12)
    assert a["list_cost"].tolist() == pytest.approx([0.0, 2.5 * LIST, 4 * LIST], rel=1e-12)
    assert a["zero_cost"].tolist() == [True, False, False]
    assert a["hours"].tolist() == pytest.approx([40 / 60, 2.5, 4.0])
    assert a["pricing"].tolist() == ["", "spot", "spot"]

    j = runs.jobs.iloc[0]
    assert (j["job"], j["attempts"], j["interrupted_attempts"], j["failed_attempts"], j["completed"], j["team"]) == \
        ("train-llm", 3, 2, 0, True, "nlp")
    assert j["cost"] == pytest.approx(65.0)
    assert j["interrupted_cost"] == pytest.approx(25.0)
    assert j["wasted_cost"] == pytest.approx(25.0)
    assert j["waste_pct"] == pytest.approx(100 * 25 / 65)
    assert j["list_cost"] == pytest.approx(6.5 * LIST)
    assert j["on_demand_equivalent"] == pytest.approx(4 * LIST)        # the useful run: $131.08
    assert j["spot_savings"] == pytest.approx(4 * LIST - 65.0)         # $66.08
    assert j["cost_per_completed_run"] == pytest.approx(65.0)

    f = runs.fleet
    assert f["gpu_bill"] == pytest.approx(75.0)  # $65 of the job + $10 serving; storage is not GPU
    assert f["failed_attempt_share"] == pytest.approx(25 / 75)
    assert (f["jobs"], f["completed_jobs"], f["attempts"], f["interrupted_attempts"]) == (1, 1, 3, 2)
    assert f["zero_cost_interrupted_attempts"] == 1
    assert f["cost_per_completed_run"] == pytest.approx(65.0)
    assert f["spot_savings"] == pytest.approx(4 * LIST - 65.0)


def test_checkpoints_price_the_work_lost(job):
    allocation, workloads, costs, *_ = job
    checkpoints = pd.DataFrame({"job": "train-llm",
                                "time": [ts("2026-03-02 12:00"), ts("2026-03-02 13:00"), ts("2026-03-02 16:00")]})
    # The instance of attempt 1 named by the workloads (a pod's node).
    workloads = workloads.assign(resource_id=[A, None, None, None])
    runs = gpucost.spot_runs(allocation, workloads, DATA / "eventbridge.jsonl", checkpoints, costs=costs)
    assert runs.attempts["source"].tolist() == ["event", "billing", "state"]
    a = runs.attempts
    # Attempt 1 checkpointed nothing: all 40 minutes lost (at $0). Attempt 2
    # lost 13:00-13:30: a fifth of its $25.
    assert a["lost_hours"].tolist() == pytest.approx([40 / 60, 0.5, 0.0])
    assert a["lost_cost"].tolist() == pytest.approx([0.0, 5.0, 0.0])
    j = runs.jobs.iloc[0]
    assert j["lost_cost"] == pytest.approx(5.0)
    assert j["wasted_cost"] == pytest.approx(5.0)
    assert j["waste_pct"] == pytest.approx(100 * 5 / 65)
    assert j["on_demand_equivalent"] == pytest.approx(6.5 * LIST - 0.5 * LIST)  # $196.62
    assert j["spot_savings"] == pytest.approx(6 * LIST - 65.0)                  # $131.62


def test_without_events_or_billing_a_restart_is_a_failure(job):
    allocation, workloads, *_ = job
    runs = gpucost.spot_runs(allocation, workloads)
    assert runs.attempts["outcome"].tolist() == ["failed", "failed", "completed"]
    assert runs.attempts["source"].tolist() == ["restart", "restart", "state"]
    j = runs.jobs.iloc[0]
    assert (j["interrupted_attempts"], j["failed_attempts"]) == (0, 2)
    assert j["wasted_cost"] == pytest.approx(25.0)


def test_times_from_cost_lines_and_rebalance(job):
    """Without start/end in workloads, an attempt spans its instances' lines;
    a rebalance recommendation before a restart marks an interruption."""
    allocation, workloads, costs, usage, inv = job
    events = pd.DataFrame({"resource_id": [B], "time": [ts("2026-03-02 13:20")], "kind": ["rebalance"]})
    runs = gpucost.spot_runs(allocation, workloads.drop(columns=["start", "end", "state"]), events)
    assert runs.attempts["source"].tolist() == ["restart", "rebalance", "presumed"]
    with_costs = gpucost.spot_runs(allocation, workloads.drop(columns=["start", "end"]), costs=costs)
    assert with_costs.attempts["start"].tolist()[1:] == [ts("2026-03-02 11:00"), ts("2026-03-02 14:00")]
    assert with_costs.attempts["end"].tolist()[1:] == [ts("2026-03-02 13:30"), ts("2026-03-02 18:00")]
    assert with_costs.attempts["start"].isna().tolist() == [True, False, False]
    # From the samples: first sample to the end of the last.
    seen = gpucost.spot_runs(allocation, workloads.drop(columns=["start", "end"]), usage=usage, inventory=inv)
    assert seen.attempts["start"].tolist() == [ts("2026-03-02 10:00"), ts("2026-03-02 11:00"), ts("2026-03-02 14:00")]
    assert seen.attempts["end"].tolist() == [ts("2026-03-02 10:40"), ts("2026-03-02 13:30"), ts("2026-03-02 18:00")]


def test_attempt_column_groups_pods():
    """Two pods of one attempt on two instances count as one attempt."""
    costs = concat(lines("i-1", "2026-03-02 00:00", 2, 4.0), lines("i-2", "2026-03-02 00:00", 2, 4.0),
                   lines("i-3", "2026-03-02 03:00", 1, 4.0))
    usage = concat(series("i-1", 0, "p0", "2026-03-02 00:00", "2026-03-02 02:00", 1.0),
                   series("i-2", 0, "p1", "2026-03-02 00:00", "2026-03-02 02:00", 1.0),
                   series("i-3", 0, "p2", "2026-03-02 03:00", "2026-03-02 04:00", 1.0))
    inv = concat(inventory("i-1", 1), inventory("i-2", 1), inventory("i-3", 1))
    workloads = pd.DataFrame({"consumer": ["p0", "p1", "p2"], "job": "j", "attempt": ["1", "1", "2"],
                              "state": ["preempted", "preempted", "succeeded"]})
    alloc = gpucost.allocate(costs, usage, inv, workloads, by=["consumer", "resource_id"])
    runs = gpucost.spot_runs(alloc, workloads)
    assert runs.attempts[["attempt", "consumers", "resources", "outcome", "cost"]].values.tolist() == \
        [["1", "p0,p1", "i-1,i-2", "interrupted", 16.0], ["2", "p2", "i-3", "completed", 4.0]]
    assert runs.jobs["waste_pct"].iloc[0] == pytest.approx(80.0)
    assert np.isnan(runs.jobs["on_demand_equivalent"].iloc[0])  # no list prices in the bill


def test_spot_interruptions_reads_every_event_form():
    text = (DATA / "eventbridge.jsonl").read_text()
    from_path = gpucost.spot_interruptions(DATA / "eventbridge.jsonl")
    assert from_path[["resource_id", "kind", "action"]].values.tolist() == \
        [[A, "rebalance", ""], [A, "interruption", "terminate"]]
    assert from_path["time"].tolist() == [ts("2026-03-02 10:31:07"), ts("2026-03-02 10:38")]
    assert from_path.attrs["events_ignored"] == 1
    as_dicts = [json.loads(line) for line in text.splitlines()]
    for form in (text, json.dumps(as_dicts), as_dicts, text.splitlines()):
        pd.testing.assert_frame_equal(gpucost.spot_interruptions(form), from_path)


@pytest.mark.parametrize(("events", "message"), [
    (["{not json"], "interruptions: event 0: not JSON"),
    ([{"detail-type": "EC2 Spot Instance Interruption Warning", "time": "2026-03-02T10:00:00Z", "detail": {}}],
     "event 0, field 'detail.instance-id': missing"),
    ([{"detail-type": "EC2 Spot Instance Interruption Warning", "detail": {"instance-id": "i-1"}}],
     "event 0, field 'time': missing"),
])
def test_bad_events(events, message):
    with pytest.raises(gpucost.InvalidInputError, match=message):
        gpucost.spot_interruptions(events)


def test_bad_input(job):
    allocation, workloads, *_ = job
    with pytest.raises(gpucost.InvalidInputError, match="workloads: missing required column 'job'"):
        gpucost.spot_runs(allocation, workloads.drop(columns="job"))
    with pytest.raises(gpucost.InvalidInputError, match="workloads: row 1, column 'state': unknown state 'exploded'"):
        gpucost.spot_runs(allocation, workloads.assign(state=[None, "exploded", "Completed", None]))
    with pytest.raises(gpucost.InvalidInputError, match="allocation: missing required column 'resource_id'"):
        gpucost.spot_runs(allocation.drop(columns="resource_id"), workloads)
    checkpoints = pd.DataFrame({"job": ["train-llm"], "time": [ts("2026-03-02 12:00")]})
    with pytest.raises(gpucost.InvalidInputError, match="checkpoints: job 'train-llm' has an attempt without"):
        gpucost.spot_runs(allocation, workloads.drop(columns=["start", "end"]), checkpoints=checkpoints)
    with pytest.raises(gpucost.InvalidInputError, match="interruptions: row 0, column 'kind'"):
        gpucost.spot_runs(allocation, workloads, pd.DataFrame({"resource_id": [A], "time": [ts("2026-03-02")],
                                                                "kind": ["asteroid"]}))


# Spot runs and interruptions as users have them (issue 23, item 8).

def test_replicas_running_side_by_side_are_not_retries():
    """Two replicas of one service under one job id, 00:00-04:00 and
    01:00-03:00 ($4/h each): neither is a retry of the other; a third pod
    starting at 05:00 after both ended is."""
    costs = concat(lines("i-1", "2026-03-02 00:00", 4, 4.0), lines("i-2", "2026-03-02 01:00", 2, 4.0),
                   lines("i-3", "2026-03-02 05:00", 1, 4.0))
    usage = concat(series("i-1", 0, "r0", "2026-03-02 00:00", "2026-03-02 04:00", 1.0),
                   series("i-2", 0, "r1", "2026-03-02 01:00", "2026-03-02 03:00", 1.0),
                   series("i-3", 0, "r2", "2026-03-02 05:00", "2026-03-02 06:00", 1.0))
    inv = concat(inventory("i-1", 1), inventory("i-2", 1), inventory("i-3", 1))
    workloads = pd.DataFrame({"consumer": ["r0", "r1"], "job": "svc"})
    alloc = gpucost.allocate(costs, usage, inv, workloads, by=["consumer", "resource_id"])
    runs = gpucost.spot_runs(alloc, workloads, usage=usage, inventory=inv)
    assert runs.attempts[["consumers", "outcome", "source"]].values.tolist() == \
        [["r0", "completed", "presumed"], ["r1", "completed", "presumed"]]
    assert runs.jobs["failed_attempts"].iloc[0] == 0 and runs.jobs["wasted_cost"].iloc[0] == 0
    # A pod that starts after both ended is a retry: both replicas before it failed (restart).
    workloads = pd.DataFrame({"consumer": ["r0", "r1", "r2"], "job": "svc"})
    alloc = gpucost.allocate(costs, usage, inv, workloads, by=["consumer", "resource_id"])
    runs = gpucost.spot_runs(alloc, workloads, usage=usage, inventory=inv)
    assert runs.attempts[["consumers", "outcome", "source"]].values.tolist() == \
        [["r0", "failed", "restart"], ["r1", "failed", "restart"], ["r2", "completed", "presumed"]]


def test_spot_interruptions_takes_the_documented_table():
    table = pd.DataFrame({"resource_id": [B, A], "time": [ts("2026-03-02 13:29"), ts("2026-03-02 10:38")],
                          "kind": ["interruption", "rebalance"]})
    out = gpucost.spot_interruptions(table)
    assert out[["resource_id", "kind"]].values.tolist() == [[A, "rebalance"], [B, "interruption"]]
    assert out["time"].tolist() == [ts("2026-03-02 10:38"), ts("2026-03-02 13:29")]
    assert list(out.columns) == ["resource_id", "time", "kind", "action", "region", "account", "id"]
    with pytest.raises(gpucost.InvalidInputError, match="interruptions: row 1, column 'time'"):
        gpucost.spot_interruptions(table.assign(time=[ts("2026-03-02"), pd.NaT]))


def test_gcp_preemptions_and_azure_evictions_are_interruptions():
    gcp = {"protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog",
                            "methodName": "compute.instances.preempted",
                            "resourceName": "projects/ml-prod/zones/us-central1-a/instances/trainer-7"},
           "resource": {"type": "gce_instance", "labels": {"project_id": "ml-prod", "zone": "us-central1-a",
                                                           "instance_id": "4513378271832361234"}},
           "timestamp": "2026-03-02T11:05:00.123Z", "insertId": "abc"}
    arm = "/subscriptions/s-1/resourceGroups/ml/providers/Microsoft.Compute/virtualMachines/trainer-8"
    azure = {"operationName": {"value": "Microsoft.Compute/virtualMachines/evictSpotVM/action"},
             "resourceId": arm, "eventTimestamp": "2026-03-02T12:00:00Z", "subscriptionId": "s-1"}
    scheduled = {"DocumentIncarnation": 3, "Events": [
        {"EventId": "e-1", "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": ["trainer-9"],
         "EventStatus": "Scheduled", "NotBefore": "Mon, 02 Mar 2026 12:30:00 GMT"},
        {"EventId": "e-2", "EventType": "Reboot", "Resources": ["web-1"], "NotBefore": "Mon, 02 Mar 2026 13:00:00 GMT"}]}
    other = {"protoPayload": {"methodName": "v1.compute.instances.insert"}, "timestamp": "2026-03-02T10:00:00Z"}
    out = gpucost.spot_interruptions([gcp, azure, scheduled, other])
    assert out[["resource_id", "kind", "action"]].values.tolist() == [
        ["//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/4513378271832361234",
         "interruption", "terminate"],
        [arm, "interruption", "evict"],
        ["trainer-9", "interruption", "evict"]]
    assert out["time"].tolist() == [ts("2026-03-02 11:05:00.123"), ts("2026-03-02 12:00"), ts("2026-03-02 12:30")]
    assert out.attrs["events_ignored"] == 1
    assert gpucost.spot_interruptions(gcp)["resource_id"].tolist() == [out["resource_id"].iat[0]]  # one event
    bad = {**gcp, "resource": {"labels": {"project_id": "ml-prod", "zone": "us-central1-a"}}}
    with pytest.raises(gpucost.InvalidInputError, match=r"event 0, field 'resource.labels.instance_id': missing"):
        gpucost.spot_interruptions([bad])
