"""Issue 30's "Done when", end to end: one small Slurm cluster period with
everything together, through the config (CLI and Python alike), every dollar
by hand.

Two days, 2026-03-01 00:00 .. 2026-03-03 00:00 UTC (sacct prints the
controller's local time, America/Chicago, UTC-6 before the DST change of
March 8). Two nodes of 2 GPUs, hourly bill lines:

  node     resource  $/hour  $/GPU-hour  lines  money   DCGM (every 5 minutes, day 1 00:00-06:00 UTC)
  dgx01    i-dgx01   4.00    2.00        48     192.00  job-mapped (dcgm-exporter's hpc_job label)
  a100-01  i-a100    2.00    1.00        48      96.00  without job labels (jobs placed from sacct)
                                                288.00

  job     account  user   node     gres            UTC                     telemetry             share  util
  1000_1  llm      ana    dgx01    gpu=1           Mar 1 02:00-04:00 (2h)  hpc_job=1001, GPU 0   1      0.5 measured
  1002    vision   bo     a100-01  gpu=1           Mar 1 02:00-05:00 (3h)  unlabelled, GPU 0     1      0.8 measured
  1003    nlp      carol  dgx01    shard=2 (of 4)  Mar 1 10:00-12:00 (2h)  none: assumed busy    0.5    1.0 assumed
  1004    nlp      ana    a100-01  mps=50 (/100)   Mar 2 14:00-16:00 (2h)  none: assumed busy    0.5    1.0 assumed

a100-01 down for maintenance Mar 2 06:00-12:00 UTC (00:00-06:00 Chicago, sacctmgr's node event).

1000_1 is an array task (JobIDRaw 1001): the exporter's hpc_job label holds
the raw id, the chargeback names the JobID. Two overlapping sacct exports:
the first has 1000_1 and 1002, the second 1002, 1003 and 1004; 1002 is read
once (a warning says so) and charged once.

By hand (allocated basis):
  1000_1    2 GPU-h x $2.00                = $4.00    effective 2 x 0.5 = 1.0 GPU-h (measured)
  1002      3 GPU-h x $1.00                = $3.00    effective 3 x 0.8 = 2.4 GPU-h (measured)
  1003      0.5 x 2 h = 1 GPU-h x $2.00    = $2.00    effective 1.0 (assumed busy)
  1004      0.5 x 2 h = 1 GPU-h x $1.00    = $1.00    effective 1.0 (assumed busy)
  __down__  6 h x $2.00 (a100-01's lines)  = $12.00   (12 GPU-h, never idle)
  __idle__  288 - 4 - 3 - 2 - 1 - 12       = $266.00
    (dgx01: 96 - 2 - 1 = 93 GPU-h x $2 = $186; a100-01: 96 - 3 - 1 - 12 = 80 GPU-h x $1 = $80; 186 + 80 = 266)
  per account: llm 4.00, vision 3.00, nlp 2 + 1 = 3.00, __down__ 12.00, __idle__ 266.00  (288.00)
  per user:    ana 4 + 1 = 5.00, bo 3.00, carol 2.00, __down__ 12.00, __idle__ 266.00   (288.00)
"""

from __future__ import annotations

import re

import json
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest

import gpucost
from gpucost import cli
from gpucost.config import load_config
from gpucost.plan import load_tables

T0 = pd.Timestamp("2026-03-01", tz="UTC")
STEP = 300
TZ = "America/Chicago"
NODES = {"dgx01": ("i-dgx01", 4.0, "NVIDIA H100 80GB HBM3"), "a100-01": ("i-a100", 2.0, "NVIDIA A100-SXM4-80GB")}
MAPPED = {"dgx01"}
TELEMETRY_HOURS = 6.0  # DCGM answers for day 1 00:00-06:00 UTC on both nodes
# JobID -> JobIDRaw, account, user, node, AllocTRES gres, start h, end h (from T0, UTC), GPU held, DCGM util
JOBS = {
    "1000_1": ("1001", "llm", "ana", "dgx01", "gres/gpu=1", 2.0, 4.0, 0, 0.5),
    "1002": ("1002", "vision", "bo", "a100-01", "gres/gpu=1", 2.0, 5.0, 0, 0.8),
    "1003": ("1003", "nlp", "carol", "dgx01", "gres/shard=2", 10.0, 12.0, 0, None),
    "1004": ("1004", "nlp", "ana", "a100-01", "gres/mps=50", 38.0, 40.0, 0, None),
}
EXPORTS = {"sacct-a.txt": ["1000_1", "1002"], "sacct-b.txt": ["1002", "1003", "1004"]}
DOWN = (30.0, 36.0)  # a100-01, Mar 2 06:00-12:00 UTC

BY_ACCOUNT = {"llm": 4.00, "vision": 3.00, "nlp": 3.00, "__down__": 12.00, "__idle__": 266.00}
BY_USER = {"ana": 5.00, "bo": 3.00, "carol": 2.00, "__down__": 12.00, "__idle__": 266.00}
TOTAL = 288.00
EFFECTIVE = {"1000_1": 1.0, "1002": 2.4, "1003": 1.0, "1004": 1.0}
SOURCE = {"1000_1": "measured", "1002": "measured", "1003": "assumed", "1004": "assumed"}


def _local(hours: float) -> str:
    """sacct's local time (no offset): Chicago, UTC-6."""
    return (T0 + pd.Timedelta(hours=hours)).tz_convert(TZ).strftime("%Y-%m-%dT%H:%M:%S")


def _write_sacct(path: Path, jobs: list[str]) -> None:
    lines = ["JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Submit|Start|End|State|NodeList|AllocTRES"]
    for job in jobs:
        raw, account, user, node, gres, start, end, _, _ = JOBS[job]
        lines.append("|".join([job, raw, f"train-{raw}", user, account, "gpu", "normal", _local(start - 0.5),
                               _local(start), _local(end), "COMPLETED", node, f"billing=8,cpu=8,{gres},node=1"]))
        lines.append("|".join([f"{job}.batch", f"{raw}.batch", "batch", "", "", "", "", "", _local(start),
                               _local(end), "COMPLETED", node, f"cpu=8,{gres},node=1"]))
    path.write_text("\n".join(lines) + "\n")


def _write_dcgm(folder: Path) -> None:
    """Saved query_range answers of DCGM_FI_DEV_GPU_UTIL and _FB_USED for
    both GPUs of both nodes, day 1 00:00-06:00 UTC; on dgx01 the job's GPU
    carries hpc_job (the raw job id), on a100-01 no job label at all."""
    series: dict[tuple, list] = {}
    for node in NODES:
        for gpu in (0, 1):
            for i in range(int(TELEMETRY_HOURS * 3600 / STEP)):
                h = i * STEP / 3600
                holder = next((v for v in JOBS.values() if v[3] == node and v[7] == gpu and v[5] <= h < v[6]),
                              None)
                label = holder[0] if holder is not None and node in MAPPED else None
                util = holder[8] if holder is not None else 0.0
                series.setdefault((node, gpu, label), []).append((h, util, 30000 if holder is not None else 0))
    for metric, pick in (("DCGM_FI_DEV_GPU_UTIL", lambda p: f"{p[1] * 100:g}"),
                         ("DCGM_FI_DEV_FB_USED", lambda p: str(p[2]))):
        result = []
        for (node, gpu, label), points in series.items():
            m = {"__name__": metric, "gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "device": f"nvidia{gpu}",
                 "modelName": NODES[node][2], "Hostname": node, "instance": f"{node}:9400", "job": "dcgm-exporter"}
            if label is not None:
                m["hpc_job"] = label
            values = [[int((T0 + pd.Timedelta(hours=p[0])).timestamp()), pick(p)] for p in points]
            result.append({"metric": m, "values": values})
        (folder / f"{metric}.json").write_text(
            json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))


def write_period(folder: Path) -> Path:
    """The period's files and the gpucost.toml naming them; returns the config."""
    for name, jobs in EXPORTS.items():
        _write_sacct(folder / name, jobs)
    _write_dcgm(folder)
    (folder / "hosts.csv").write_text("host,resource_id,gpus\n" + "".join(f"{n},{r},2\n" for n, (r, _, _) in
                                                                          NODES.items()))
    hours = pd.date_range(T0, periods=48, freq="h")
    pd.DataFrame([{"resource_id": r, "start": h.isoformat(), "end": (h + pd.Timedelta(hours=1)).isoformat(),
                   "cost": rate} for r, rate, _ in NODES.values() for h in hours]).to_csv(folder / "costs.csv",
                                                                                         index=False)
    pd.DataFrame({"resource_id": [r for r, _, _ in NODES.values() for _ in (0, 1)], "device": [0, 1] * 2,
                  "mem_capacity": 80 * 2**30}).to_csv(folder / "inventory.csv", index=False)
    (folder / "events.txt").write_text(
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        f"ohare|a100-01|{_local(DOWN[0])}|{_local(DOWN[1])}|MAINT|firmware|root(0)\n")
    config = folder / "gpucost.toml"
    config.write_text('[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\ntelemetry = ["DCGM_FI_*.json"]\n'
                      f'sacct = {json.dumps(list(EXPORTS))}\nhosts = "hosts.csv"\nnode_events = "events.txt"\n'
                      f'timezone = "{TZ}"\nstart = "2026-03-01T00:00:00Z"\nend = "2026-03-03T00:00:00Z"\n\n'
                      '[slurm]\nshards_per_gpu = { dgx01 = 4 }\n')
    return config


REPEATED = (r"1 job row\(s\) read twice \(same JobIDRaw and step\) were dropped \(job\(s\) 1002\): each job is "
            r"charged once")


def run(capsys, *argv) -> tuple[int, str, str]:
    """The command; the overlapping exports' one warning (the sacct reader's,
    while the config is read) asserted as the command's one warning line on
    stderr, not ignored."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    warned = [line for line in err.splitlines() if ": warning: " in line]
    assert len(warned) == 1 and re.search(REPEATED, warned[0]), err
    assert warned[0].startswith(f"gpucost {argv[0]}: warning: sacct"), err
    return code, out, err


def money(frame: pd.DataFrame, key: str) -> dict:
    sums = frame.groupby(frame[key].astype(str))["cost"].sum()
    return {k: round(float(v), 2) for k, v in sums.items() if round(float(v), 2) != 0}


def test_the_files_say_what_the_docstring_says(tmp_path):
    # The local times are Chicago's: 1000_1 starts 02:00 UTC = 20:00 the day before; the window 00:00-06:00.
    write_period(tmp_path)
    a = (tmp_path / "sacct-a.txt").read_text().splitlines()
    assert a[1].split("|")[8:10] == ["2026-02-28T20:00:00", "2026-02-28T22:00:00"]
    assert "a100-01|2026-03-02T00:00:00|2026-03-02T06:00:00|MAINT" in (tmp_path / "events.txt").read_text()
    b = (tmp_path / "sacct-b.txt").read_text().splitlines()
    assert a[3:5] == b[1:3]  # 1002 (and its step) in both exports


def test_cli_chargeback_per_account_and_user_equals_hand_arithmetic(capsys, tmp_path):
    config = write_period(tmp_path)
    frames = {}
    for by, key in (("project", "project"), ("user", "user")):
        code, out, err = run(capsys, "allocate", "--config", config, "--by", by, "--format", "csv",
                             "--decimals", "raw")
        assert code == 0, err
        rest = [line for line in err.splitlines() if ": warning: sacct" not in line]  # the reader's: in run()
        assert not any("in two sources" in line or "warning" in line for line in rest), err
        frames[key] = pd.read_csv(StringIO(out), keep_default_na=False)
    assert money(frames["project"], "project") == BY_ACCOUNT
    assert money(frames["user"], "user") == BY_USER
    for frame in frames.values():  # money in equals money out
        assert frame["cost"].sum() == pytest.approx(TOTAL, abs=1e-9)
    down = frames["project"].set_index("project").loc["__down__"]
    assert down["gpu_hours"] == pytest.approx(12.0) and down["idle_cost"] == 0


def _python_tables(tmp_path: Path):
    config = write_period(tmp_path)
    with pytest.warns(gpucost.JoinWarning, match=REPEATED):
        return load_tables(load_config(config))


def test_python_equals_the_hand_arithmetic_and_measures_every_job_with_telemetry(tmp_path):
    tables = _python_tables(tmp_path)
    assert tables.downtime[["resource_id", "start", "end"]].to_dict("records") == [
        {"resource_id": "i-a100", "start": T0 + pd.Timedelta(hours=DOWN[0]), "end": T0 + pd.Timedelta(hours=DOWN[1])}]

    def allocate(by):
        return gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads, by=by,
                                downtime=tables.downtime, interval=tables.interval)

    by_account = allocate(["project"])
    assert money(by_account, "project") == BY_ACCOUNT
    assert money(allocate(["user"]), "user") == BY_USER
    assert by_account["cost"].sum() == pytest.approx(TOTAL, abs=1e-9)
    per_job = allocate(["consumer"]).set_index("consumer")
    assert {j: round(float(per_job.loc[j, "cost"]), 2) for j in JOBS} == {"1000_1": 4.0, "1002": 3.0, "1003": 2.0,
                                                                          "1004": 1.0}
    assert {j: float(per_job.loc[j, "effective_gpu_hours"]) for j in JOBS} == pytest.approx(EFFECTIVE)
    sources = tables.workloads.set_index("consumer")["utilization_source"]
    assert {j: sources[j] for j in JOBS} == SOURCE
    # The join report: the label placed 1000_1 (hpc_job=1001, its raw id), sacct's start order 1002; 1003 and
    # 1004 assumed busy.
    report = tables.usage.attrs["slurm_join"]
    jobs = report["jobs"].set_index("consumer")
    assert jobs.loc["1000_1", "placement"] == "hpc_job label" and jobs.loc["1002", "placement"] == "start order"
    assert jobs.loc[list(JOBS), "measured_gpu_hours"].to_dict() == pytest.approx(
        {"1000_1": 2.0, "1002": 3.0, "1003": 0.0, "1004": 0.0})
    assert jobs.loc[list(JOBS), "assumed_gpu_hours"].to_dict() == pytest.approx(
        {"1000_1": 0.0, "1002": 0.0, "1003": 1.0, "1004": 1.0})
    assert (report["jobs_total"], report["jobs_measured"], report["jobs_assumed"], report["jobs_not_in_sacct"]) == (
        4, 2, 2, 0)
    assert report["problems"] == [] and not report["time_fit"]["clear"]
    # The overlapping exports: 1002's job row read once; the shard and the MPS job are shares.
    [sacct] = tables.usage.attrs["diagnostics"]["sacct"].values()  # one reading of both exports
    assert (sacct["rows_repeated"], sacct["shared_jobs"], sacct["jobs_without_gpus"]) == (1, 2, 0)
    # find_idle: the 6 down hours are "down", never flagged, never "terminate".
    findings = gpucost.find_idle(tables.usage, tables.costs, tables.inventory, tables.workloads,
                                 downtime=tables.downtime).findings
    down = findings[findings["action"] == "down"]
    assert down["dollars_down"].sum() == pytest.approx(12.0) and not down["flagged"].any()


def test_cli_and_python_agree_row_for_row(capsys, tmp_path):
    config = write_period(tmp_path)
    code, out, err = run(capsys, "allocate", "--config", config, "--by", "project,user", "--format", "csv",
                         "--decimals", "raw")
    assert code == 0, err
    cli_rows = pd.read_csv(StringIO(out), keep_default_na=False)
    with pytest.warns(gpucost.JoinWarning, match=REPEATED):
        tables = load_tables(load_config(config))
    python = gpucost.allocate(tables.costs, tables.usage, tables.inventory, tables.workloads,
                              by=["project", "user"], downtime=tables.downtime, interval=tables.interval)
    got = {(str(p), str(u)): round(float(c), 2) for p, u, c in cli_rows[["project", "user", "cost"]].values}
    want = {(str(p), str(u)): round(float(c), 2) for p, u, c in python[["project", "user", "cost"]].values}
    assert got == want
    assert {k: v for k, v in got.items() if v} == {("llm", "ana"): 4.0, ("vision", "bo"): 3.0,
                                                   ("nlp", "carol"): 2.0, ("nlp", "ana"): 1.0,
                                                   ("__down__", "__down__"): 12.0, ("__idle__", "__idle__"): 266.0}


def test_check_shows_the_slurm_join_and_the_down_time(capsys, tmp_path):
    config = write_period(tmp_path)
    code, out, err = run(capsys, "check", "--config", config)
    assert code == 0, out + err
    lines = out.splitlines()
    start = lines.index("slurm join")
    block = "\n".join(lines[start:start + 6])
    assert "jobs with telemetry:  2 of 4 (5.0 GPU-hours measured; 1 by hpc_job label, 1 placed in start order)" \
        in block
    assert "assumed busy:         2 jobs (2.0 GPU-hours without telemetry" in block
    assert "unplaced:             0 jobs" in block
    # The overlapping exports' repeated rows (1002 and its step) counted; two shared jobs.
    assert "  rows read twice and dropped: 1; a run's earlier state replaced: 0" in out
    assert "  shard/MPS jobs: 2; jobs whose GPUs cannot be known: 0" in out
    # a100-01's 6 hourly lines wholly down: $12.00 on __down__, no busy sample inside.
    assert "down time: 6 lines partly or wholly down on 1 resources ($12.00 on __down__), 0 busy" in out
