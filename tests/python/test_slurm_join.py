"""Slurm jobs joined to their GPUs' telemetry (issue 30: items 1, 3 and 6).

A synthetic slice of a bare-metal Slurm cluster, hand-computed: two nodes of
2 GPUs each, four hours of hourly bill lines (node-a $8/h, node-b $6/h),
sacct printed in the controller's local time (America/Chicago, UTC-6 in
early March), DCGM answers every 5 minutes: node-a job-mapped (dcgm-exporter's
``hpc_job`` label, the raw job id), node-b without job labels, and node-b's
exporter down for the last hour.

  job     user  account node   GPUs  UTC          telemetry           util
  101     ana   llm     a100-01  1   00:00-02:00  hpc_job on GPU 1    0.8  (sacct's start order says GPU 0)
  100_2   bo    vision  a100-01  1   00:30-03:30  hpc_job=102, GPU 0  0.5  (an array task: the label holds JobIDRaw)
  201     carol nlp     a100-02  2   00:00-01:00  GPUs 0, 1           0.9
  202     ana   llm     a100-02  1   01:00-03:00  GPU 0               0.6
  203     dave  nlp     a100-02  1   02:00-04:00  GPU 1 until 03:00   0.7  (03:00-04:00 no telemetry: assumed)

Allocated basis: node-a $4 per GPU-hour, node-b $3. 101 2 h = $8.00, 100_2 3 h
= $12.00, node-a idle 3 GPU-hours = $12.00; 201 2 GPU-hours = $6.00, 202 2 h =
$6.00, 203 2 h = $6.00, node-b idle 2 GPU-hours = $6.00. By account: llm 8 + 6
= $14.00, vision $12.00, nlp 6 + 6 = $12.00, idle 12 + 6 = $18.00 ($56.00 in
all). Effective GPU-hours (measured): 101 2 x 0.8 = 1.6, 100_2 3 x 0.5 = 1.5,
201 2 x 0.9 = 1.8, 202 2 x 0.6 = 1.2, 203 1 x 0.7 measured + 1 x 1.0 assumed.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli, prometheus, slurm
from gpucost.config import load_config
from gpucost.plan import plan_sources

DAY = pd.Timestamp("2026-03-02", tz="UTC")
STEP = 300
HOSTS = {"a100-01": "node-a", "a100-02": "node-b"}
RATE = {"node-a": 8.0, "node-b": 6.0}
TELEMETRY_END = {"a100-01": 4.0, "a100-02": 3.0}  # node-b's exporter is down from 03:00
MAPPED = {"a100-01"}  # nodes whose dcgm-exporter has the job-mapping directory
# JobID, JobIDRaw, user, account, node, GPUs, start h, end h, the GPUs the job really held, util
JOBS = [
    ("101", "101", "ana", "llm", "a100-01", 1, 0.0, 2.0, [1], 0.8),
    ("100_2", "102", "bo", "vision", "a100-01", 1, 0.5, 3.5, [0], 0.5),
    ("201", "201", "carol", "nlp", "a100-02", 2, 0.0, 1.0, [0, 1], 0.9),
    ("202", "202", "ana", "llm", "a100-02", 1, 1.0, 3.0, [0], 0.6),
    ("203", "203", "dave", "nlp", "a100-02", 1, 2.0, 4.0, [1], 0.7),
]
BY_ACCOUNT = {"llm": 14.00, "vision": 12.00, "nlp": 12.00, "__idle__": 18.00}
BY_USER = {"ana": 14.00, "bo": 12.00, "carol": 6.00, "dave": 6.00, "__idle__": 18.00}
EFFECTIVE = {"101": 1.6, "100_2": 1.5, "201": 1.8, "202": 1.2, "203": 1.7}
SOURCE = {"101": "measured", "100_2": "measured", "201": "measured", "202": "measured", "203": "mixed"}


def _local(hours: float, tz: str) -> str:
    return (DAY + pd.Timedelta(hours=hours)).tz_convert(tz).strftime("%Y-%m-%dT%H:%M:%S")


def write_sacct(path: Path, jobs=JOBS, tz: str = "America/Chicago", gres: bool = False) -> Path:
    """sacct --parsable2 in the controller's local time; `gres`: with an
    AllocGRES column giving Slurm's GPU indices (IDX) as sacct says them."""
    head = "JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Submit|Start|End|State|NodeList|AllocTRES"
    lines = [head + ("|AllocGRES" if gres else "")]
    for job, raw, user, account, node, gpus, start, end, held, _ in jobs:
        cells = [job, raw, f"train-{raw}", user, account, "gpu", "normal", _local(start - 0.1, tz),
                 _local(start, tz), _local(end, tz), "COMPLETED", node, f"billing=8,cpu=8,gres/gpu={gpus},node=1"]
        if gres:
            cells.append(f"gpu:{gpus}(IDX:{','.join(map(str, held))})")
        lines.append("|".join(cells))
        step = [f"{job}.batch", f"{raw}.batch", "batch", "", "", "", "", "", _local(start, tz), _local(end, tz),
                "COMPLETED", node, f"cpu=8,gres/gpu={gpus},node=1"] + (["gpu:1"] if gres else [])
        lines.append("|".join(step))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_dcgm(folder: Path, jobs=JOBS, mapped=MAPPED, extra=()) -> list[Path]:
    """Saved query_range answers of DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED,
    every 5 minutes; on a mapped node each job's GPU carries hpc_job (its raw
    id). `extra`: (node, gpu, start h, end h, hpc_job, util) more series."""
    series: dict[tuple, list] = {}
    for node, end in TELEMETRY_END.items():
        for gpu in (0, 1):
            for i in range(int(end * 3600 / STEP)):
                h = i * STEP / 3600
                holder = next((j for j in jobs if j[4] == node and gpu in j[8] and j[6] <= h < j[7]), None)
                label = holder[1] if holder is not None and node in mapped else None
                util = holder[9] if holder is not None else 0.0
                series.setdefault((node, gpu, label), []).append((h, util, 30000 if holder is not None else 0))
    for node, gpu, start, end, label, util in extra:
        for i in range(int(start * 3600 / STEP), int(end * 3600 / STEP)):
            series.setdefault((node, gpu, label), []).append((i * STEP / 3600, util, 30000))
    files = []
    for metric, pick in (("DCGM_FI_DEV_GPU_UTIL", lambda p: f"{p[1] * 100:g}"), ("DCGM_FI_DEV_FB_USED",
                                                                                 lambda p: str(p[2]))):
        result = []
        for (node, gpu, label), points in series.items():
            m = {"__name__": metric, "gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "device": f"nvidia{gpu}",
                 "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": node, "instance": f"{node}:9400",
                 "job": "dcgm-exporter"}
            if label is not None:
                m["hpc_job"] = label
            values = [[int((DAY + pd.Timedelta(hours=h)).timestamp()), pick(p)] for p in points for h in [p[0]]]
            result.append({"metric": m, "values": values})
        path = folder / f"{metric}.json"
        path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
        files.append(path)
    return files


def write_month(folder: Path, *, tz_given: str | None = "America/Chicago", sacct_tz: str = "America/Chicago",
                gres: bool = False, jobs=JOBS, extra=()) -> Path:
    """The slice's files and a gpucost.toml naming them; returns the config."""
    write_sacct(folder / "sacct.txt", jobs, sacct_tz, gres)
    write_dcgm(folder, jobs, extra=extra)
    pd.DataFrame({"host": list(HOSTS), "resource_id": list(HOSTS.values())}).to_csv(folder / "hosts.csv",
                                                                                    index=False)
    hours = pd.date_range(DAY, periods=4, freq="h")
    costs = pd.DataFrame([{"resource_id": r, "start": h.isoformat(), "end": (h + pd.Timedelta(hours=1)).isoformat(),
                           "cost": RATE[r]} for r in RATE for h in hours])
    costs.to_csv(folder / "costs.csv", index=False)
    pd.DataFrame({"resource_id": [r for r in RATE for _ in (0, 1)], "device": [0, 1] * len(RATE),
                  "mem_capacity": 80 * 2**30}).to_csv(folder / "inventory.csv", index=False)
    tz = f'timezone = "{tz_given}"\n' if tz_given else ""
    config = folder / "gpucost.toml"
    config.write_text('[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\ntelemetry = ["DCGM_FI_*.json"]\n'
                      f'sacct = "sacct.txt"\nhosts = "hosts.csv"\n{tz}\n[policy]\nby = ["project", "user"]\n')
    return config


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_table(capsys, config: Path, by: str) -> tuple[pd.DataFrame, str]:
    code, out, err = run(capsys, "allocate", "-c", config, "--by", by, "--format", "csv", "--decimals", "raw")
    assert code == 0, err
    return pd.read_csv(StringIO(out), keep_default_na=False), err


def python_join(folder: Path, tz: str = "America/Chicago"):
    """The same slice through the Python API, as docs/telemetry.md shows it."""
    nodes = pd.DataFrame({"node": list(HOSTS), "resource_id": list(HOSTS.values())})
    telemetry = prometheus.read_query_range(sorted(folder.glob("DCGM_FI_*.json")), step=STEP, nodes=nodes)
    accounting = gpucost.read_slurm_sacct(folder / "sacct.txt", tz, nodes=nodes)
    costs = pd.read_csv(folder / "costs.csv", parse_dates=["start", "end"])
    inventory = pd.read_csv(folder / "inventory.csv")
    labels = slurm.sacct_job_labels([folder / "sacct.txt"])
    joined = slurm.join_jobs(telemetry, accounting, job_ids=labels, tz=tz, costs=costs, inventory=inventory)
    return joined, costs, inventory


def money(frame: pd.DataFrame, key: str) -> dict:
    sums = frame.groupby(frame[key].astype(str))["cost"].sum()
    return {k: round(float(v), 2) for k, v in sums.items() if round(float(v), 2) != 0}


# ---- the join, from Python and from the command line -------------------------------------


def test_chargeback_per_account_and_user_equals_hand_arithmetic(tmp_path):
    write_month(tmp_path)
    joined, costs, inventory = python_join(tmp_path)
    assert joined.report["problems"] == []
    by_account = gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["project"])
    by_user = gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["user"])
    assert money(by_account, "project") == BY_ACCOUNT
    assert money(by_user, "user") == BY_USER
    assert by_account["cost"].sum() == pytest.approx(56.0)  # money in equals money out
    # Utilisation measured for every job with telemetry (203's last hour assumed busy).
    per_job = gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["consumer"])
    effective = per_job.set_index("consumer")["effective_gpu_hours"]
    for job, hours in EFFECTIVE.items():
        assert effective[job] == pytest.approx(hours), job
    sources = joined.workloads.set_index("consumer")["utilization_source"]
    assert {job: sources[job] for job in SOURCE} == SOURCE


def test_the_report_says_how_each_job_was_placed(tmp_path):
    write_month(tmp_path)
    joined, _, _ = python_join(tmp_path)
    jobs = joined.report["jobs"].set_index("consumer")
    assert jobs.loc["101", "placement"] == "hpc_job label" and jobs.loc["100_2", "placement"] == "hpc_job label"
    assert (jobs.loc[["201", "202", "203"], "placement"] == "start order").all()
    assert jobs.loc["203", "assumed_gpu_hours"] == pytest.approx(1.0)
    assert jobs.loc["203", "measured_gpu_hours"] == pytest.approx(1.0)
    assert jobs["held_gpu_hours"].to_dict() == pytest.approx({"101": 2, "100_2": 3, "201": 2, "202": 2, "203": 2})
    r = joined.report
    assert (r["jobs_total"], r["jobs_by_label"], r["jobs_in_start_order"], r["jobs_mixed"]) == (5, 2, 3, 1)
    assert r["assumed_gpu_hours"] == pytest.approx(1.0) and r["measured_gpu_hours"] == pytest.approx(10.0)
    fit = r["time_fit"]
    assert fit["matched_given"] == fit["matched_best"] and not fit["clear"]
    # Label wins over sacct's start order: 101 on GPU 1 of node-a, not the GPU 0 sacct's order gave it.
    usage = joined.usage
    on = usage[(usage["consumer"].astype(str) == "101").to_numpy()]
    assert set(on["device"]) == {1} and set(on["resource_id"].astype(str)) == {"node-a"}


def test_cli_takes_sacct_and_dcgm_together_and_equals_python(capsys, tmp_path):
    config = write_month(tmp_path)
    account, err = cli_table(capsys, config, "project")
    assert "in two sources" not in err and "warning" not in err
    assert money(account, "project") == BY_ACCOUNT
    user, _ = cli_table(capsys, config, "user")
    assert money(user, "user") == BY_USER
    # The sacct labels the reader does not give (job name, partition, QOS) are workload labels too.
    partition, _ = cli_table(capsys, config, "partition,qos,job_name")
    assert money(partition, "partition") == {"gpu": 38.00, "__idle__": 18.00}
    assert money(partition, "job_name")["train-102"] == 12.00


def test_check_shows_the_slurm_join(capsys, tmp_path):
    config = write_month(tmp_path)
    code, out, err = run(capsys, "check", "-c", config)
    assert code == 0, out + err
    lines = out.splitlines()
    start = lines.index("slurm join")
    block = "\n".join(lines[start:start + 6])
    assert "jobs with telemetry:  5 of 5 (10.0 GPU-hours measured; 2 by hpc_job label, 3 placed in start order)" \
        in block
    assert "assumed busy:         1 jobs (1.0 GPU-hours without telemetry" in block
    assert "unplaced:             0 jobs" in block
    assert "placed in start order" in block
    assert "problems: none" in out


# ---- times that cannot drift ------------------------------------------------------------


def test_naive_sacct_times_without_a_timezone_are_refused_naming_the_key(capsys, tmp_path):
    config = write_month(tmp_path, tz_given=None)
    code, _, err = run(capsys, "allocate", "-c", config)
    assert code == 2
    assert "sacct times carry no UTC offset" in err and "set timezone in [sources] (--timezone)" in err
    plan = plan_sources(load_config(config))
    assert [p.key for p in plan.problems] == ["timezone"]
    # Times that state their offset need no timezone.
    text = (tmp_path / "sacct.txt").read_text().splitlines()
    offsets = [text[0]] + [line.replace(":00|", ":00-06:00|") for line in text[1:]]
    (tmp_path / "sacct.txt").write_text("\n".join(offsets) + "\n")
    assert plan_sources(load_config(config)).problems == ()


def test_a_wrong_timezone_warns_with_the_offset_that_fits_and_the_money(capsys, tmp_path):
    # The cluster prints Chicago time; the config says Berlin (UTC+1): every job 7 hours off.
    config = write_month(tmp_path, tz_given="Europe/Berlin")
    code, out, err = run(capsys, "allocate", "-c", config, "--by", "project", "--format", "csv")
    assert code == 0
    warning = next(line for line in err.splitlines() if "sacct times fit" in line)
    assert "sacct times fit UTC-6 (America/Chicago), not UTC+1 as given (time zone 'Europe/Berlin')" in warning
    # Read as Berlin, node-b's jobs fall before the telemetry: its $18.00 of jobs go idle (and its last hour
    # unobserved); node-a's jobs keep their labels. Half the sum of every consumer's change: $18.00.
    assert "$18.00 (" in warning and "would move between jobs and idle" in warning
    assert 'Fix: set timezone = "America/Chicago" in [sources] (--timezone America/Chicago)' in warning
    # The same from Python, in its own words.
    joined, _, _ = python_join(tmp_path, tz="Europe/Berlin")
    fit = joined.report["time_fit"]
    assert fit["clear"] and fit["best_offset"] == -360 and fit["given_offset"] == 60
    assert fit["cost_moved"] == pytest.approx(18.0)
    assert any('read_slurm_sacct(path, tz="America/Chicago")' in m for _, m, _ in slurm.problems(joined.usage))
    # Read right, there is nothing to say.
    joined, _, _ = python_join(tmp_path, tz="America/Chicago")
    assert not joined.report["time_fit"]["clear"]


# ---- jobs the telemetry shows where sacct does not ------------------------------------------


def test_a_job_on_a_gpu_sacct_did_not_give_it_warns_naming_both(capsys, tmp_path):
    # sacct gives Slurm's own GPU indices (IDX: 101 on GPU 0, 100_2 on GPU 1); DCGM's labels show them the
    # other way round.
    swapped = {"101": [0], "100_2": [1]}
    jobs = [(*j[:8], swapped.get(j[0], j[8]), j[9]) for j in JOBS]
    config = write_month(tmp_path, gres=True, jobs=jobs)
    write_dcgm(tmp_path, JOBS)
    code, _, err = run(capsys, "allocate", "-c", config, "--by", "project", "--format", "csv")
    assert code == 0
    warning = next(line for line in err.splitlines() if "GPUs sacct does not give them" in line)
    assert "job 101 on GPU 1 of 'node-a'" in warning
    assert "sacct gives it 'node-a' GPU 0 2026-03-02 00:00 .. 2026-03-02 02:00 UTC" in warning
    assert "docs/telemetry.md" in warning
    # A job the telemetry names that sacct does not list at all.
    write_month(tmp_path, extra=[("a100-01", 1, 2.0, 3.0, "999", 0.4)])
    joined, _, _ = python_join(tmp_path)
    m = joined.report["mismatches"]
    assert m[["consumer", "resource_id", "device"]].values.tolist() == [["999", "node-a", 1]]
    assert m["gpu_hours"].iloc[0] == pytest.approx(1.0) and not m["in_sacct"].iloc[0]
    assert m["sacct"].iloc[0] == "not in sacct"
    assert joined.report["jobs_not_in_sacct"] == 1
    kinds = [k for k, _, _ in slurm.problems(joined.usage)]
    assert kinds == ["job_gpu_mismatch"]
    with pytest.warns(gpucost.JoinWarning, match="job 999 on GPU 1 of 'node-a'"):
        gpucost.allocate(pd.read_csv(tmp_path / "costs.csv", parse_dates=["start", "end"]), joined.usage,
                         pd.read_csv(tmp_path / "inventory.csv"), joined.workloads)


# ---- the join's rules, one at a time ------------------------------------------------------


def _samples(rows, duration=None) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["timestamp", "resource_id", "device", "consumer", "share", "util",
                                        "mem_used", "duration"])
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    return frame


def test_a_sample_is_cut_at_job_edges_and_time_is_never_counted_twice():
    # One 10-minute reading of GPU 0; job 1 holds it from minute 4 (of a 1-hour job), shards of jobs 2 and 3
    # hold half and a quarter of GPU 1 meanwhile.
    telemetry = _samples([("2026-03-02 10:00", "n1", 0, "", 1.0, 0.6, 8e9, 600.0),
                          ("2026-03-02 10:00", "n1", 1, "", 1.0, 0.9, 12e9, 600.0)])
    jobs = _samples([("2026-03-02 10:04", "n1", 0, "1", 1.0, 1.0, 0.0, 3600.0),
                     ("2026-03-02 10:00", "n1", 1, "2", 0.5, 1.0, 0.0, 600.0),
                     ("2026-03-02 10:00", "n1", 1, "3", 0.25, 1.0, 0.0, 600.0)])
    joined = slurm.join_jobs(telemetry, jobs, check_times=False)
    u = joined.usage.assign(consumer=lambda f: f["consumer"].astype(str)).sort_values(
        ["device", "timestamp", "consumer"]).reset_index(drop=True)
    gpu0 = u[u["device"] == 0]
    assert gpu0[["consumer", "duration", "util"]].values.tolist() == [["", 240.0, 0.6], ["1", 360.0, 0.6],
                                                                     ["1", 3240.0, 1.0]]
    gpu1 = u[u["device"] == 1]
    assert gpu1[["consumer", "share", "mem_used"]].values.tolist() == [["2", 0.5, 8e9], ["3", 0.25, 4e9]]
    jobs_report = joined.report["jobs"].set_index("consumer")
    assert jobs_report.loc["1", "measured_gpu_hours"] == pytest.approx(0.1)
    assert jobs_report.loc["1", "assumed_gpu_hours"] == pytest.approx(0.9)
    assert jobs_report.loc["2", "measured_gpu_hours"] == pytest.approx(0.5 / 6)
    # Every second of GPU 0 counted once: 600 s of reading + the job's 3240 s beyond it.
    assert gpu0["duration"].sum() == pytest.approx(600 + 3240)


def test_free_gpu_time_from_sacct_is_kept_only_where_no_telemetry_is():
    telemetry = _samples([("2026-03-02 10:00", "n1", 0, "", 1.0, 0.0, 0.0, 1800.0)])
    jobs = _samples([("2026-03-02 10:00", "n1", 0, "", 1.0, 0.0, 0.0, 3600.0)])
    joined = slurm.join_jobs(telemetry, jobs, check_times=False)
    assert sorted(joined.usage["duration"].tolist()) == [1800.0, 1800.0]
    assert joined.report["diagnostics"]["free_job_samples_covered"] == 1


def test_processes_are_not_jobs_and_bad_input_names_the_table():
    telemetry = _samples([("2026-03-02 10:00", "n1", 0, "pid:4182", 1.0, 0.7, 1e9, 600.0)])
    jobs = _samples([("2026-03-02 10:00", "n1", 0, "5", 1.0, 1.0, 0.0, 600.0)])
    joined = slurm.join_jobs(telemetry, jobs, check_times=False)
    assert joined.usage["consumer"].astype(str).tolist() == ["5"]  # the process's GPU time is the job's
    assert joined.report["mismatches"].empty
    bad = jobs.assign(duration=-1.0)
    with pytest.raises(gpucost.InvalidInputError, match="jobs: row 0, column 'duration'"):
        slurm.join_jobs(telemetry, bad, check_times=False)


def test_bare_metal_fixes_name_the_hosts_table(capsys, tmp_path):
    # Node-b left out of the hosts table: its DCGM series name a node nothing maps.
    config = write_month(tmp_path)
    (tmp_path / "hosts.csv").write_text("host,resource_id\na100-01,node-a\n")
    code, _, err = run(capsys, "allocate", "-c", config)
    assert code == 2
    assert "node 'a100-02' is not in the hosts table: add a row for it" in err
    assert "--nodes" not in err and "keep-unknown-nodes" not in err
    # A node the bill names but no telemetry or job reaches: the fix names the hosts table and --sacct.
    costs = pd.read_csv(tmp_path / "costs.csv")
    extra = costs[costs["resource_id"] == "node-b"].assign(resource_id="node-c")
    pd.concat([costs, extra]).to_csv(tmp_path / "costs.csv", index=False)
    inventory = pd.read_csv(tmp_path / "inventory.csv")
    pd.concat([inventory, inventory.iloc[:2].assign(resource_id="node-c")]).to_csv(tmp_path / "inventory.csv",
                                                                                 index=False)
    (tmp_path / "hosts.csv").write_text("host,resource_id\na100-01,node-a\na100-02,node-b\n")
    code, _, err = run(capsys, "allocate", "-c", config)
    assert code == 0
    warning = next(line for line in err.splitlines() if "without any telemetry" in line)
    assert "(node-c)" in warning and "hosts table (--hosts FILE" in warning and "--sacct" in warning
    assert "--nodes" not in warning


def test_bare_metal_fixes_from_python_name_the_readers_nodes_table(tmp_path):
    # sacct alone from Python: a billed host no job reached is told about nodes= of the Slurm reader.
    write_month(tmp_path)
    nodes = pd.DataFrame({"node": list(HOSTS), "resource_id": list(HOSTS.values())})
    accounting = gpucost.read_slurm_sacct(tmp_path / "sacct.txt", "America/Chicago", nodes=nodes)
    costs = pd.read_csv(tmp_path / "costs.csv", parse_dates=["start", "end"])
    costs = pd.concat([costs, costs[costs["resource_id"] == "node-b"].assign(resource_id="node-c")])
    inventory = pd.read_csv(tmp_path / "inventory.csv")
    inventory = pd.concat([inventory, inventory.iloc[:2].assign(resource_id="node-c")])
    with pytest.warns(gpucost.JoinWarning) as caught:
        gpucost.allocate(costs, accounting.usage, inventory, accounting.workloads)
    message = next(str(w.message) for w in caught if "(node-c)" in str(w.message))
    assert "read_slurm_sacct" in message and "read_kubernetes" not in message and "kubernetes" not in message


def test_plain_job_ids_need_no_mapping():
    """sacct without array jobs gives an empty raw-id mapping: the telemetry's
    consumers stay as they are (pandas once warned on the empty map)."""
    t0 = pd.Timestamp("2026-03-02 10:00", tz="UTC")
    tel = pd.DataFrame({"timestamp": [t0], "resource_id": "gpu01", "device": 0, "consumer": "", "share": 1.0,
                        "util": 0.9, "mem_used": 0.0, "duration": 1800.0})
    joined = gpucost.slurm.join_jobs(tel, tel.assign(consumer="7", util=1.0), job_ids={})
    assert set(joined.usage["consumer"].astype(str)) == {"7"}
