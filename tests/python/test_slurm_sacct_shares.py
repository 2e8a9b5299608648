"""Slurm (issue 30, items 2, 4 and 5): shard and MPS jobs hold a share of a
GPU; repeated and overlapping sacct exports charge each job once; node
events become the down-time table; the CLI/config apply start/end and the
hosts table's GPUs to sacct as Python does. Every number is hand-computed
in the test."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost.config import load_config
from gpucost.plan import load_tables

HEADER = "JobIDRaw|JobID|User|Account|Partition|Start|End|State|NodeList|AllocTRES\n"
T0 = pd.Timestamp("2026-03-02T10:00:00Z")


def sacct(tmp_path: Path, name: str, *rows: str) -> Path:
    path = tmp_path / name
    path.write_text(HEADER + "".join(r + "\n" for r in rows))
    return path


def one_gpu_hour(resource: str = "dgx01", cost: float = 10.0, devices: int = 1):
    costs = pd.DataFrame({"resource_id": [resource], "start": [T0], "end": [T0 + pd.Timedelta(hours=1)],
                          "cost": [cost]})
    inventory = pd.DataFrame({"resource_id": resource, "device": range(devices), "mem_capacity": 80e9})
    return costs, inventory


def quiet(**kwargs):
    with gpucost.join.checks(False):
        return gpucost.allocate(**kwargs)


# ---- item 2: shared GPUs --------------------------------------------------------------------


def test_a_shard_2_job_on_a_gpu_with_4_shards_is_half_of_it(tmp_path):
    path = sacct(tmp_path, "s.txt",
                 "4242|4242|ana|lab-chen|shared|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|"
                 "cpu=4,gres/shard=2,mem=16G,node=1")
    slurm = gpucost.read_slurm_sacct(path, "UTC", shards_per_gpu={"dgx01": 4})
    assert slurm.usage["share"].tolist() == [0.5]
    assert slurm.diagnostics["shared_jobs"] == 1 and slurm.diagnostics["jobs_without_gpus"] == 0
    costs, inventory = one_gpu_hour(cost=10.0)
    result = quiet(costs=costs, usage=slurm.usage, inventory=inventory, workloads=slurm.workloads,
                   by=["project"]).set_index("project")
    # $10 for the GPU-hour: half held by lab-chen, half idle.
    assert result.loc["lab-chen", "cost"] == pytest.approx(5.0)
    assert result.loc["lab-chen", "gpu_hours"] == pytest.approx(0.5)
    assert result.loc["__idle__", "cost"] == pytest.approx(5.0)


def test_mps_50_is_half_a_gpu_and_mps_per_gpu_scales_it(tmp_path):
    path = sacct(tmp_path, "s.txt",
                 "7|7|bo|lab-ruiz|mps|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|cpu=2,gres/mps=50,node=1")
    assert gpucost.read_slurm_sacct(path, "UTC").usage["share"].tolist() == [0.5]
    # 50 of a GPU configured with 200 MPS units (gres.conf Name=mps Count=200 per GPU): a quarter.
    assert gpucost.read_slurm_sacct(path, "UTC", mps_per_gpu=200).usage["share"].tolist() == [0.25]


def test_shard_jobs_share_one_gpu_and_whole_gpu_jobs_take_another(tmp_path):
    path = sacct(tmp_path, "s.txt",
                 "1|1|a|p|shared|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/shard=4,node=1",
                 "2|2|b|q|shared|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/shard=4,node=1",
                 "3|3|c|r|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=1,node=1")
    slurm = gpucost.read_slurm_sacct(path, "UTC", shards_per_gpu={"shared": 8})
    u = slurm.usage.set_index("consumer")
    assert u.loc["1", "device"] == 0 and u.loc["2", "device"] == 0 and u.loc["3", "device"] == 1
    costs, inventory = one_gpu_hour(cost=20.0, devices=2)
    result = quiet(costs=costs, usage=slurm.usage, inventory=inventory, workloads=slurm.workloads,
                   by=["project"]).set_index("project")
    # $20 for 2 GPU-hours: p and q half a GPU-hour each ($5), r one ($10), nothing idle.
    assert result["cost"].drop("__idle__", errors="ignore").to_dict() == pytest.approx({"p": 5.0, "q": 5.0,
                                                                                        "r": 10.0})


def test_a_shard_job_on_a_node_without_a_count_is_an_error_naming_it(tmp_path):
    path = sacct(tmp_path, "s.txt",
                 "4242|4242|ana|lab-chen|shared|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|"
                 "gres/shard=2,node=1")
    with pytest.raises(gpucost.InvalidInputError, match=r"s.txt: line 2, column 'AllocTRES': job 4242 holds 2 "
                                                        r"shard\(s\) \(gres/shard\) on node dgx01, which has no "
                                                        r"shards-per-GPU count"):
        gpucost.read_slurm_sacct(path, "UTC")
    with pytest.raises(gpucost.InvalidInputError, match=r"parameter 'shards_per_gpu': 'dgx01' = 'four'"):
        gpucost.read_slurm_sacct(path, "UTC", shards_per_gpu={"dgx01": "four"})


def test_jobs_whose_gpus_cannot_be_known_warn_with_their_gpu_hours(tmp_path):
    # AccountingStorageTRES without gres/shard: the shard job's AllocTRES names no GPU at all.
    path = sacct(tmp_path, "s.txt",
                 "900|900|ana|lab-chen|shared|2026-03-02T10:00:00|2026-03-02T13:00:00|COMPLETED|dgx01|"
                 "cpu=4,mem=16G,node=1",
                 "901|901|ana|lab-chen|cpu|2026-03-02T10:00:00|2026-03-02T13:00:00|COMPLETED|cpu01|cpu=4,node=1")
    nodes = pd.DataFrame({"node": ["dgx01", "cpu01"], "resource_id": ["i-dgx01", "i-cpu01"], "gpus": [8, 0]})
    with pytest.warns(gpucost.JoinWarning, match=r"1 job\(s\) ran on GPU nodes with no GPU, shard or MPS count .*"
                                                 r"\(900 on dgx01; 3.0 job-hours, up to 24.0 GPU-hours"):
        slurm = gpucost.read_slurm_sacct(path, "UTC", nodes=nodes)
    unknown = pd.DataFrame(slurm.usage.attrs["slurm"]["jobs_unknown_gpus"])
    assert unknown["job"].tolist() == ["900"] and unknown["gpu_hours_at_most"].tolist() == [24.0]
    assert slurm.diagnostics["jobs_without_gpus"] == 2  # the CPU job on a CPU node is no warning
    # Allocated with the bill, the join report prices them: dgx01 costs $16 an hour ($2 a GPU-hour), so
    # the 3 hours job 900 ran are at most $48 of GPU time counted as idle.
    costs = pd.DataFrame({"resource_id": ["i-dgx01"], "start": [pd.Timestamp("2026-03-02", tz="UTC")],
                          "end": [pd.Timestamp("2026-03-03", tz="UTC")], "cost": [384.0]})
    inventory = pd.DataFrame({"resource_id": "i-dgx01", "device": range(8), "mem_capacity": 80e9})
    with pytest.warns(gpucost.JoinWarning, match=r"1 Slurm job\(s\) ran on GPU nodes .* \(900 on dgx01\): 3.0 "
                                                 r"job-hours, up to 24.0 GPU-hours and up to \$48.00 of their nodes' "
                                                 r"cost"):
        with warnings.catch_warnings():  # the reader's own warning (without dollars), seen above
            warnings.simplefilter("ignore")
            day = gpucost.read_slurm_sacct(path, "UTC", nodes=nodes, start="2026-03-02", end="2026-03-03")
        result = gpucost.allocate(costs, day.usage[day.usage["resource_id"] == "i-dgx01"], inventory)
    assert result["cost"].sum() == pytest.approx(384.0)  # all of it idle: free samples cover the day


# ---- item 4: repeated exports ---------------------------------------------------------------


def test_overlapping_exports_charge_a_job_once(tmp_path):
    # March 1-15 and March 10-31: job 5001 (2 GPUs, 10:00-11:00) is in both; 5002 only in the second.
    first = sacct(tmp_path, "sacct-01-15.txt",
                  "5001|5001|ruiz|lab-ruiz|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=2")
    second = sacct(tmp_path, "sacct-10-31.txt",
                   "5001|5001|ruiz|lab-ruiz|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=2",
                   "5002|5002|chen|lab-chen|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=1")
    with pytest.warns(gpucost.JoinWarning, match=r"1 job row\(s\) read twice .* \(job\(s\) 5001\).*charged once"):
        slurm = gpucost.read_slurm_sacct([first, second], "UTC")
    assert slurm.diagnostics["rows_repeated"] == 1
    costs, inventory = one_gpu_hour(cost=40.0, devices=4)
    result = quiet(costs=costs, usage=slurm.usage, inventory=inventory, workloads=slurm.workloads,
                   by=["project"]).set_index("project")
    # $40 for 4 GPU-hours, $10 each: lab-ruiz 2 GPU-hours once ($20, not $40), lab-chen 1 ($10), 1 idle.
    assert result.loc["lab-ruiz", "cost"] == pytest.approx(20.0)
    assert result.loc["lab-chen", "cost"] == pytest.approx(10.0)
    assert result.loc["__idle__", "cost"] == pytest.approx(10.0)


def test_a_running_row_gives_way_to_the_finished_one(tmp_path):
    early = sacct(tmp_path, "early.txt",
                  "6001|6001|ruiz|lab-ruiz|gpu|2026-03-02T10:00:00|Unknown|RUNNING|dgx01|gres/gpu=1")
    late = sacct(tmp_path, "late.txt",
                 "6001|6001|ruiz|lab-ruiz|gpu|2026-03-02T10:00:00|2026-03-02T10:30:00|COMPLETED|dgx01|gres/gpu=1")
    with pytest.warns(gpucost.JoinWarning, match=r"gave way to its later state"):
        slurm = gpucost.read_slurm_sacct([early, late], "UTC", now="2026-03-02T12:00:00Z")
    assert slurm.usage["duration"].tolist() == [1800.0]  # the finished half hour, not 2 h until `now`
    assert slurm.diagnostics["rows_superseded"] == 1


def test_the_same_export_appended_twice_is_read_once_and_names_the_jobs(tmp_path):
    rows = [f"{i}|{i}|u{i}|lab|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=4"
            for i in (7001, 7002)]
    once = sacct(tmp_path, "once.txt", *rows)
    twice = tmp_path / "twice.txt"
    twice.write_text(once.read_text() * 2)  # `sacct ... >> sacct.txt` run twice: the header too
    with pytest.warns(gpucost.JoinWarning, match=r"2 job row\(s\) read twice \(same JobIDRaw and step\) were "
                                                 r"dropped \(job\(s\) 7001, 7002\)"):
        slurm = gpucost.read_slurm_sacct(twice, "UTC")
    assert slurm.usage["device"].max() == 7  # 8 GPUs of dgx01, never device 8
    costs, inventory = one_gpu_hour(cost=80.0, devices=8)
    result = quiet(costs=costs, usage=slurm.usage, inventory=inventory, workloads=slurm.workloads,
                   by=["user"]).set_index("user")
    assert result.loc["u7001", "cost"] == pytest.approx(40.0) and result.loc["u7002", "cost"] == pytest.approx(40.0)


def test_jobs_beyond_a_nodes_gpus_name_the_jobs_not_a_device(tmp_path):
    # Two different ids on the same 8 GPUs at once: the error names both jobs.
    path = sacct(tmp_path, "s.txt",
                 "8001|8001|a|lab|gpu|2026-03-02T10:00:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=8",
                 "8002|8002|b|lab|gpu|2026-03-02T10:30:00|2026-03-02T11:00:00|COMPLETED|dgx01|gres/gpu=1")
    nodes = pd.DataFrame({"node": ["dgx01"], "resource_id": ["dgx01"], "gpus": [8]})
    with pytest.raises(gpucost.InvalidInputError,
                       match=r"line 3, column 'AllocTRES': job 8002 needs 1 GPU\(s\) of node dgx01 at 2026-03-02 "
                             r"10:30:00 UTC, but node dgx01 has 8 GPUs \(node_gpus\), held then by job\(s\) 8001"):
        gpucost.read_slurm_sacct(path, "UTC", nodes=nodes)


# ---- item 5: node events -> down time -------------------------------------------------------


EVENTS = ("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
          "ohare||2026-02-28T00:00:00|Unknown|||\n"
          "ohare|dgx[01-02]|2026-03-03T08:00:00|2026-03-06T08:00:00|MAINT|PSU swap|root(0)\n"
          "ohare|a100-01|2026-03-07T20:30:00|Unknown|DRAIN|xid 79|slurm(64030)\n")


def test_node_events_become_the_downtime_table(tmp_path):
    path = tmp_path / "events.txt"
    path.write_text(EVENTS)
    hosts = pd.DataFrame({"node": ["dgx01", "dgx02", "a100-01"], "resource_id": ["i-d1", "i-d2", "i-a1"]})
    down = gpucost.read_slurm_events(path, "America/Chicago", nodes=hosts, now="2026-03-09T00:00:00Z")
    assert list(down.columns) == ["resource_id", "start", "end", "reason"]
    assert down["resource_id"].tolist() == ["i-d1", "i-d2", "i-a1"]  # the host list expanded, then mapped
    # 08:00 CST (UTC-6) is 14:00 UTC; the DST change is March 8, after these.
    assert down["start"].tolist()[:2] == [pd.Timestamp("2026-03-03T14:00:00Z")] * 2
    assert down["end"].tolist()[:2] == [pd.Timestamp("2026-03-06T14:00:00Z")] * 2
    # The drain is still on: it ends at `now`.
    assert (down["start"][2], down["end"][2]) == (pd.Timestamp("2026-03-08T02:30:00Z"),
                                                 pd.Timestamp("2026-03-09T00:00:00Z"))
    assert down["reason"].tolist() == ["MAINT: PSU swap", "MAINT: PSU swap", "DRAIN: xid 79"]
    report = down.attrs["downtime"]
    assert (report["events"], report["rows"], report["cluster_events"], report["ongoing"]) == (2, 3, 1, 1)
    # Three days of two nodes and 21.5 h of one: 165.5 node-hours down.
    assert ((down["end"] - down["start"]).dt.total_seconds().sum() / 3600) == pytest.approx(165.5)
    with pytest.raises(gpucost.InvalidInputError, match=r"events.txt: line 4, column 'TimeEnd': the event is still "
                                                        r"going on"):
        gpucost.read_slurm_events(path, "America/Chicago")
    only_maint = gpucost.read_slurm_events(path, "America/Chicago", states=["maint"])
    assert only_maint["resource_id"].tolist() == ["dgx01", "dgx02"]


def test_a_plain_node_start_end_table_in_local_time(tmp_path):
    path = tmp_path / "maintenance.csv"
    path.write_text("node,start,end,reason\n"
                    "gpu[01-02],2026-03-10 08:00,2026-03-10 12:00,firmware\n"
                    "gpu03,2026-03-10T08:00:00+00:00,2026-03-10T09:00:00+00:00,\n")
    down = gpucost.read_slurm_events(path, "Europe/Berlin")
    assert down["resource_id"].tolist() == ["gpu01", "gpu02", "gpu03"]
    # 08:00 in Berlin (UTC+1) is 07:00 UTC; a stated offset wins.
    assert down["start"].tolist() == [pd.Timestamp("2026-03-10T07:00Z")] * 2 + [pd.Timestamp("2026-03-10T08:00Z")]
    assert down["end"].tolist() == [pd.Timestamp("2026-03-10T11:00Z")] * 2 + [pd.Timestamp("2026-03-10T09:00Z")]
    assert down["reason"].tolist() == ["firmware", "firmware", ""]
    bad = tmp_path / "bad.csv"
    bad.write_text("node,start,end\ngpu01,2026-03-10 12:00,2026-03-10 08:00\n")
    with pytest.raises(gpucost.InvalidInputError, match=r"bad.csv: row 0, column 'end'.* is not after start"):
        gpucost.read_slurm_events(bad, "UTC")
    with pytest.raises(gpucost.InvalidInputError, match=r"missing required column 'start'"):
        gpucost.read_slurm_events(pd.DataFrame({"node": ["a"], "end": ["2026-03-10"]}), "UTC")


# ---- item 5: the CLI/config as Python: start/end, GPUs per node, node events, shards ----------


def config_month(tmp_path: Path, *, gpus: bool = True, extra: str = "") -> Path:
    """Two days of one node with 2 GPUs at $2 a GPU-hour ($4 an hour), one job
    of one GPU for 2 hours on day 1, the node down 06:00-12:00 on day 2."""
    hours = pd.date_range("2026-03-01", periods=48, freq="h", tz="UTC")
    pd.DataFrame({"resource_id": "i-dgx01", "start": hours, "end": hours + pd.Timedelta(hours=1), "cost": 4.0}).to_csv(
        tmp_path / "costs.csv", index=False)
    pd.DataFrame({"resource_id": "i-dgx01", "device": [0, 1], "mem_capacity": 80e9}).to_csv(
        tmp_path / "inventory.csv", index=False)
    (tmp_path / "hosts.csv").write_text("host,resource_id" + (",gpus" if gpus else "") + "\n"
                                        "dgx01,i-dgx01" + (",2" if gpus else "") + "\n")
    sacct(tmp_path, "sacct.txt",
          "9001|9001|ana|lab-chen|gpu|2026-03-01T10:00:00|2026-03-01T12:00:00|COMPLETED|dgx01|gres/gpu=1")
    (tmp_path / "events.txt").write_text("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
                                         "c|dgx01|2026-03-02T06:00:00|2026-03-02T12:00:00|MAINT|bios|root(0)\n")
    path = tmp_path / "gpucost.toml"
    path.write_text('[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\nsacct = "sacct.txt"\n'
                    'hosts = "hosts.csv"\ntimezone = "UTC"\nstart = "2026-03-01"\nend = "2026-03-03"\n'
                    'node_events = "events.txt"\n' + extra)
    return path


def test_config_applies_start_end_and_hosts_gpus_to_sacct_as_python_does(tmp_path):
    tables = load_tables(load_config(config_month(tmp_path)))
    python = gpucost.read_slurm_sacct(tmp_path / "sacct.txt", "UTC", start="2026-03-01", end="2026-03-03",
                                      nodes=pd.DataFrame({"node": ["dgx01"], "resource_id": ["i-dgx01"], "gpus": [2]}))
    cols = ["timestamp", "resource_id", "device", "consumer", "share", "duration"]
    assert tables.usage[cols].astype({"resource_id": str, "consumer": str}).equals(
        python.usage[cols].astype({"resource_id": str, "consumer": str}))
    # 96 GPU-hours in the range, every one in a sample: 2 held by 9001, 94 free.
    assert (tables.usage["duration"] * tables.usage["share"]).sum() / 3600 == pytest.approx(96.0)
    result = quiet(costs=tables.costs, usage=tables.usage, inventory=tables.inventory, workloads=tables.workloads,
                   by=["project"]).set_index("project")
    assert "__unobserved__" not in result.index  # free GPU time on days without jobs is idle
    assert result.loc["lab-chen", "cost"] == pytest.approx(4.0)  # 2 GPU-hours at $2
    assert result.loc["__idle__", "cost"] == pytest.approx(48 * 4.0 - 4.0)
    # The node events, read with the hosts table: the down-time table the allocation takes.
    assert tables.downtime[["resource_id", "start", "end", "reason"]].to_dict("records") == [
        {"resource_id": "i-dgx01", "start": pd.Timestamp("2026-03-02T06:00Z"), "end": pd.Timestamp("2026-03-02T12:00Z"),
         "reason": "MAINT: bios"}]


def test_config_start_end_without_gpus_per_node_is_an_error_naming_the_hosts_table(tmp_path):
    with pytest.raises(gpucost.InvalidInputError, match=r"needs each node's GPU count.*add a gpus column to the "
                                                        r"hosts table"):
        load_tables(load_config(config_month(tmp_path, gpus=False)))


def test_config_slurm_section_gives_shards_per_gpu(tmp_path):
    path = config_month(tmp_path, extra='\n[slurm]\nshards_per_gpu = { "dgx[01-02]" = 4 }\n')
    sacct(tmp_path, "sacct.txt",
          "9002|9002|bo|lab-ruiz|shared|2026-03-01T10:00:00|2026-03-01T12:00:00|COMPLETED|dgx01|gres/shard=1")
    tables = load_tables(load_config(path))
    held = tables.usage[tables.usage["consumer"] == "9002"]
    assert held["share"].tolist() == [0.25]
    bad = config_month(tmp_path, extra='\n[slurm]\nshards_per_gpu = { dgx01 = "four" }\n')
    with pytest.raises(gpucost.InvalidInputError, match=r"\[slurm\]: shards_per_gpu: expected a positive whole "
                                                        r"number"):
        load_tables(load_config(bad))
    missing = config_month(tmp_path)
    sacct(tmp_path, "sacct.txt",
          "9002|9002|bo|lab-ruiz|shared|2026-03-01T10:00:00|2026-03-01T12:00:00|COMPLETED|dgx01|gres/shard=1")
    with pytest.raises(gpucost.InvalidInputError, match=r"job 9002 holds 1 shard\(s\).*\[slurm\] shards_per_gpu"):
        load_tables(load_config(missing))


def test_config_ongoing_event_without_end_names_the_key(tmp_path):
    path = config_month(tmp_path)
    (tmp_path / "events.txt").write_text("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
                                         "c|dgx01|2026-03-02T06:00:00|Unknown|DOWN|psu|root(0)\n")
    text = path.read_text().replace('start = "2026-03-01"\nend = "2026-03-03"\n', "")
    path.write_text(text)
    with pytest.raises(gpucost.InvalidInputError, match=r"still going on.*set end in \[sources\]"):
        load_tables(load_config(path))
