"""Slurm jobs placed on their GPUs by other mapping sources (issue 30, item 1):
Princeton jobstats' ``nvidia_gpu_jobId``, the CEEMS exporter's GPU -> job
mapping and ``scontrol show job -d``'s GPU indices, beside dcgm-exporter's
``hpc_job`` label (tests/python/test_slurm_join.py).

The month is test_slurm_join's slice (same jobs, sacct in America/Chicago,
same bill): node-a's GPUs read by the jobstats exporter with its prolog
files (``nvidia_gpu_jobId``), node-b's by jobstats without them (jobId 0),
and scontrol giving node-b's jobs their GPU indices. Allocated basis: what
each job held, whoever says where, so the chargeback is test_slurm_join's
hand arithmetic: llm $14.00, vision $12.00, nlp $12.00, idle $18.00.
Effective GPU-hours as there: 101 2 x 0.8 = 1.6, 100_2 3 x 0.5 = 1.5,
201 1.8, 202 1.2, 203 0.7 measured + 1.0 assumed = 1.7.

Fixtures in tests/data/slurm_mapping are hand-written in the tools' shapes
(each file names the version or document it follows).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_slurm_join import (BY_ACCOUNT, BY_USER, DAY, EFFECTIVE, HOSTS, JOBS, STEP, TELEMETRY_END, cli_table,
                             money, run, write_dcgm, write_month)

import gpucost
from gpucost import prometheus, slurm
from gpucost.errors import InvalidInputError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm_mapping"
UUID = {(node, gpu): f"GPU-{node}-{gpu}" for node in HOSTS for gpu in (0, 1)}


# ---- scontrol show job -d --------------------------------------------------------------------


def test_scontrol_records_give_each_job_its_gpus_per_node():
    table = gpucost.read_scontrol_jobs(DATA / "scontrol_show_job_d.txt")
    rows = {(r.job, r.node): (r.devices, r.array_job, r.start) for r in table.itertuples()}
    assert rows == {
        ("4105", "gpu01"): ((0, 1), "4103_2", "2026-03-01T10:00:00"),   # Slurm 23.02, typed gres
        ("4105", "gpu02"): ((2, 3), "4103_2", "2026-03-01T10:00:00"),   # IDX:2,3
        ("4301", "gpu03"): ((1,), None, "2026-03-01T11:00:00"),         # GRES_IDX= (before 20.02), node range
        ("4301", "gpu04"): ((1,), None, "2026-03-01T11:00:00"),
        ("4400", "gpu05"): ((3,), None, "2026-03-01T11:30:00"),         # scontrol -o, a shard job
    }  # job 4200 ran on a CPU node: GRES= is empty, no row
    assert table.set_index(["job", "node"]).loc[("4105", "gpu02"), "line"] == 18


def test_bad_scontrol_input_names_the_file_line_and_field(tmp_path):
    bad = tmp_path / "scontrol.txt"
    bad.write_text("JobId=7 JobName=x\n   StartTime=2026-03-01T10:00:00\n     Nodes=gpu01 CPU_IDs=0-3 Mem=0 "
                   "GRES=gpu:2(IDX:1-0)\n")
    with pytest.raises(InvalidInputError, match=r"scontrol.txt line 3, GRES: .*bad IDX list '1-0'"):
        gpucost.read_scontrol_jobs(bad)
    bad.write_text("JobId=7\n     Nodes=gpu[01-x] CPU_IDs=0-3 Mem=0 GRES=gpu:1(IDX:0)\n")
    with pytest.raises(InvalidInputError, match=r"scontrol.txt line 2, Nodes: 'gpu\[01-x\]'"):
        gpucost.read_scontrol_jobs(bad)
    bad.write_text("     Nodes=gpu01 CPU_IDs=0-3 Mem=0 GRES=gpu:1(IDX:0)\n")
    with pytest.raises(InvalidInputError, match=r"scontrol.txt line 1, Nodes: a node line before any JobId="):
        gpucost.read_scontrol_jobs(bad)


def write_scontrol(path: Path, jobs=JOBS, tz: str = "America/Chicago", wrong: dict | None = None) -> Path:
    """scontrol show job -d records of the slice's jobs (StartTime in local
    time, as sacct); ``wrong``: job -> GPU indices scontrol gives instead."""
    records = []
    for job, raw, user, _, node, gpus, start, end, held, _ in jobs:
        array = f" ArrayJobId={job.split('_')[0]} ArrayTaskId={job.split('_')[1]}" if "_" in job else ""
        idx = ",".join(map(str, (wrong or {}).get(job, held)))
        local = (DAY + pd.Timedelta(hours=start)).tz_convert(tz).strftime("%Y-%m-%dT%H:%M:%S")
        records.append(f"JobId={raw}{array} JobName=train-{raw}\n   UserId={user}(1001) GroupId=lab(100)\n"
                       f"   StartTime={local} EndTime=Unknown Deadline=N/A\n   NodeList={node}\n"
                       f"   JOB_GRES=gpu:{gpus}\n     Nodes={node} CPU_IDs=0-7 Mem=64000 GRES=gpu:{gpus}(IDX:{idx})\n")
    path.write_text("\n".join(records))
    return path


def test_sacct_rows_without_idx_take_scontrols_indices(tmp_path):
    sacct = write_month(tmp_path)  # sacct without AllocGRES: no IDX
    scontrol = write_scontrol(tmp_path / "scontrol.txt", [j for j in JOBS if j[4] == "a100-02"])
    accounting = gpucost.read_slurm_sacct(tmp_path / "sacct.txt", "America/Chicago", scontrol=scontrol)
    assert accounting.diagnostics["gpus_from_scontrol"] == 4  # 201: 2 GPUs, 202 and 203: 1 each
    usage = accounting.usage
    devices = usage.groupby(usage["consumer"].astype(str))["device"].apply(lambda d: sorted(set(d))).to_dict()
    assert devices["203"] == [1] and devices["202"] == [0] and devices["201"] == [0, 1]
    assert usage.attrs["slurm"]["jobs_idx_scontrol"] == ["201", "202", "203"]
    assert sacct.exists()


def test_scontrol_with_another_gpu_count_is_an_error_naming_both_files(tmp_path):
    write_month(tmp_path)
    scontrol = write_scontrol(tmp_path / "scontrol.txt", wrong={"202": [0, 1]})
    with pytest.raises(InvalidInputError, match=r"scontrol.txt line \d+, GRES: job 202 has 2 GPU index\(es\) on "
                                                r"node a100-02 but holds 1 GPU\(s\) there \(.*sacct.txt line \d+"):
        gpucost.read_slurm_sacct(tmp_path / "sacct.txt", "America/Chicago", scontrol=scontrol)


# ---- jobstats: the exporter's shapes ---------------------------------------------------------


def test_jobstats_before_0_2_2_job_from_the_jobid_metric():
    usage = prometheus.read_jobstats(DATA / "jobstats_0.1.prom", timestamp="2026-03-01 10:00", interval=30)
    assert list(usage["consumer"].astype(str)) == ["1234567", ""]   # jobId 0: a free GPU
    assert list(usage["util"]) == [0.85, 0.0]
    assert list(usage["mem_used"]) == [42949672960.0, 524288.0]
    assert list(usage["power_w"]) == pytest.approx([312.045, 61.21])
    assert set(usage["resource_id"].astype(str)) == {"jobstats_0"}  # no node label: the file name up to a dot
    assert usage["gpu_uuid"].astype(str).iloc[0] == "GPU-03aa20a1-2e97-d125-629d-fd4e5734553f"
    assert usage["job_mapping"].astype(object).iloc[0] == "jobstats nvidia_gpu_jobId"
    assert usage.attrs["telemetry"]["source"] == "jobstats exporter"


def test_jobstats_0_2_2_job_from_the_jobid_label_and_ordinal_not_minor_number():
    nodes = pd.DataFrame({"node": ["jobstats_0"], "resource_id": ["node-h"]})
    usage = prometheus.read_jobstats(DATA / "jobstats_0.2.2.prom", timestamp="2026-03-01 10:00", nodes=nodes)
    assert list(usage["device"]) == [0, 1]  # ordinal (nvidia-smi's index, Slurm's IDX), not minor_number 2, 3
    assert list(usage["consumer"].astype(str)) == ["4105", ""]
    assert list(usage["resource_id"].astype(str)) == ["node-h", "node-h"]
    assert list(usage["power_w"]) == [645.0, 72.0]


def test_jobstats_scrapes_read_together_take_each_files_instant_and_their_spacing(tmp_path):
    """A directory of scrapes read in one call, an instant per file: each
    GPU's samples 30 minutes apart, the report's spacing theirs; a lone
    scrape has none (it stands for ``interval``, else 60 s)."""
    files = []
    for i in range(3):
        files.append(tmp_path / f"jobstats_0.{i}.prom")
        files[-1].write_text((DATA / "jobstats_0.1.prom").read_text())
    at = ["2026-03-01 10:00", "2026-03-01 10:30", "2026-03-01 11:00"]
    usage = prometheus.read_jobstats(files, timestamp=at)
    assert len(usage) == 6 and usage.attrs["telemetry"]["spacing_seconds"] == 1800
    assert list(usage["duration"]) == [1800.0] * 6
    assert sorted(set(usage["timestamp"])) == list(pd.to_datetime(at, utc=True))
    lone = prometheus.read_jobstats(files[0], timestamp=at[0])
    assert lone.attrs["telemetry"]["spacing_seconds"] is None and list(lone["duration"]) == [60.0, 60.0]


def test_bad_jobstats_input_names_the_file_line_and_field(tmp_path):
    path = tmp_path / "gpu01.prom"
    path.write_text('nvidia_gpu_duty_cycle{minor_number="0",uuid="GPU-a"} 85\n'
                    'nvidia_gpu_duty_cycle{minor_number="1",uuid="GPU-b"} 140\n')
    with pytest.raises(InvalidInputError, match=r"gpu01.prom line 2, value: 140.0 is not a valid "
                                                r"nvidia_gpu_duty_cycle reading"):
        prometheus.read_jobstats(path, timestamp="2026-03-01")
    path.write_text('nvidia_gpu_duty_cycle{minor_number="x",uuid="GPU-a"} 85\n')
    with pytest.raises(InvalidInputError, match=r"gpu01.prom line 1, label ordinal/minor_number: 'x'"):
        prometheus.read_jobstats(path, timestamp="2026-03-01")
    path.write_text('nvidia_gpu_memory_used_bytes{GPU_I_ID="3",minor_number="0",uuid="MIG-a"} 85\n')
    with pytest.raises(InvalidInputError, match=r"gpu01.prom line 1, label GPU_I_ID: a MIG instance"):
        prometheus.read_jobstats(path, timestamp="2026-03-01")
    with pytest.raises(InvalidInputError, match=r"gpu01.prom: node 'gpu01' is not in the nodes table|"
                                                r"gpu01.prom line 1"):
        path.write_text('nvidia_gpu_duty_cycle{minor_number="0",uuid="GPU-a"} 85\n')
        prometheus.read_jobstats(path, timestamp="2026-03-01",
                                 nodes=pd.DataFrame({"node": ["gpu02"], "resource_id": ["i-2"]}))


# ---- the slice, read by jobstats: saved Prometheus answers ------------------------------------


def write_jobstats(folder: Path, jobs=JOBS, mapped=("a100-01",)) -> list[Path]:
    """query_range answers of the jobstats exporter every 5 minutes (exporter
    0.1 shape: ``nvidia_gpu_jobId`` the raw job id on a node whose prolog
    writes /run/gpustat, 0 elsewhere)."""
    series: dict[tuple, list] = {}
    for node, end in TELEMETRY_END.items():
        for gpu in (0, 1):
            for i in range(int(end * 3600 / STEP)):
                h = i * STEP / 3600
                holder = next((j for j in jobs if j[4] == node and gpu in j[8] and j[6] <= h < j[7]), None)
                series.setdefault((node, gpu), []).append((h, holder))
    metrics = {
        "nvidia_gpu_duty_cycle": lambda node, h: f"{h[9] * 100:g}" if h else "0",
        "nvidia_gpu_memory_used_bytes": lambda node, h: "32212254720" if h else "0",
        "nvidia_gpu_power_usage_milliwatts": lambda node, h: "350000" if h else "60000",
        "nvidia_gpu_jobId": lambda node, h: h[1] if h and node in mapped else "0",
    }
    files = []
    for metric, value in metrics.items():
        result = []
        for (node, gpu), points in series.items():
            labels = {"__name__": metric, "minor_number": str(gpu), "ordinal": str(gpu), "uuid": UUID[(node, gpu)],
                      "name": "NVIDIA A100-SXM4-80GB", "instance": f"{node}:9445", "job": "TigerGPU Nodes",
                      "cluster": "tiger"}
            values = [[int((DAY + pd.Timedelta(hours=h)).timestamp()), value(node, holder)] for h, holder in points]
            result.append({"metric": labels, "values": values})
        path = folder / f"{metric}.json"
        path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
        files.append(path)
    return files


def jobstats_month(folder: Path, scontrol: bool = True, wrong: dict | None = None) -> Path:
    """test_slurm_join's slice with jobstats telemetry instead of DCGM (and scontrol's indices); the config."""
    config = write_month(folder)
    for path in folder.glob("DCGM_FI_*.json"):
        path.unlink()
    write_jobstats(folder)
    if scontrol:
        write_scontrol(folder / "scontrol.txt", wrong=wrong)
    text = config.read_text().replace('telemetry = ["DCGM_FI_*.json"]', 'jobstats = ["nvidia_gpu_*.json"]')
    config.write_text(text.replace("[sources]\n", '[sources]\nscontrol = "scontrol.txt"\n' if scontrol
                                   else "[sources]\n"))
    return config


def python_jobstats(folder: Path, scontrol: bool = True):
    nodes = pd.DataFrame({"node": list(HOSTS), "resource_id": list(HOSTS.values())})
    telemetry = prometheus.read_jobstats(sorted(folder.glob("nvidia_gpu_*.json")), nodes=nodes)
    accounting = gpucost.read_slurm_sacct(folder / "sacct.txt", "America/Chicago", nodes=nodes,
                                          scontrol=folder / "scontrol.txt" if scontrol else None)
    costs = pd.read_csv(folder / "costs.csv", parse_dates=["start", "end"])
    inventory = pd.read_csv(folder / "inventory.csv")
    labels = slurm.sacct_job_labels([folder / "sacct.txt"])
    joined = slurm.join_jobs(telemetry, accounting, job_ids=labels, tz="America/Chicago", costs=costs,
                             inventory=inventory)
    return joined, costs, inventory


def test_jobstats_jobs_are_charged_to_the_cent_and_placed_by_their_source(tmp_path):
    jobstats_month(tmp_path)
    joined, costs, inventory = python_jobstats(tmp_path)
    assert joined.report["problems"] == []
    by_account = gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["project"])
    assert money(by_account, "project") == BY_ACCOUNT
    assert money(gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["user"]), "user") == BY_USER
    effective = gpucost.allocate(costs, joined.usage, inventory, joined.workloads,
                                 by=["consumer"]).set_index("consumer")["effective_gpu_hours"]
    assert {job: round(float(effective[job]), 6) for job in EFFECTIVE} == pytest.approx(EFFECTIVE)
    placement = joined.report["jobs"].set_index("consumer")["placement"].to_dict()
    assert placement == {"101": "jobstats nvidia_gpu_jobId", "100_2": "jobstats nvidia_gpu_jobId",
                         "201": "scontrol IDX", "202": "scontrol IDX", "203": "scontrol IDX"}
    assert joined.report["placements"]["jobstats nvidia_gpu_jobId"] == 2
    assert joined.report["exact_devices"]  # every job's GPUs known: scontrol, not start order
    # The power column rides along to the joined samples, in watts.
    on = joined.usage[(joined.usage["consumer"].astype(str) == "101").to_numpy()]
    assert set(on["power_w"]) == {350.0}


def test_without_scontrol_the_unmapped_node_is_placed_in_start_order(tmp_path):
    jobstats_month(tmp_path, scontrol=False)
    joined, costs, inventory = python_jobstats(tmp_path, scontrol=False)
    placement = joined.report["jobs"].set_index("consumer")["placement"]
    assert set(placement[["201", "202", "203"]]) == {"start order"}
    by_account = gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["project"])
    assert money(by_account, "project") == BY_ACCOUNT


def test_telemetry_on_another_gpu_than_scontrol_gives_is_the_mismatch_warning(tmp_path):
    # scontrol says 101 held GPU 0 of node-a; the jobstats exporter saw it on GPU 1.
    jobstats_month(tmp_path, wrong={"101": [0], "100_2": [1]})
    joined, _, _ = python_jobstats(tmp_path)
    problems = [p for p in joined.report["problems"] if p["kind"] == "job_gpu_mismatch"]
    assert len(problems) == 1
    text = problems[0]["text"]
    assert "job 101 on GPU 1 of 'node-a'" in text and "sacct gives it 'node-a' GPU 0" in text


def test_cli_reads_jobstats_and_scontrol_and_equals_python(capsys, tmp_path):
    config = jobstats_month(tmp_path)
    account, err = cli_table(capsys, config, "project")
    assert "in two sources" not in err and "warning" not in err.lower()
    assert money(account, "project") == BY_ACCOUNT
    user, _ = cli_table(capsys, config, "user")
    assert money(user, "user") == BY_USER
    code, out, err = run(capsys, "check", "-c", config)
    assert code == 0, out + err
    assert ("jobs with telemetry:  5 of 5 (10.0 GPU-hours measured; 2 by jobstats nvidia_gpu_jobId, "
            "3 by scontrol IDX, 0 placed in start order)") in out
    assert "problems: none" in out


def test_cli_scontrol_without_sacct_is_a_problem_naming_the_key(capsys, tmp_path):
    config = jobstats_month(tmp_path)
    config.write_text(config.read_text().replace('sacct = "sacct.txt"\n', ""))
    code, _, err = run(capsys, "allocate", "-c", config)
    assert code == 2 and "scontrol" in err and "sacct in [sources]" in err


# ---- CEEMS: the GPU -> job mapping applied to DCGM ------------------------------------------


def test_ceems_mapping_shape():
    mapping = prometheus.read_ceems_gpu_map(DATA / "ceems_slurm.prom", timestamp="2026-03-01 10:00")
    assert mapping[["node", "device", "job", "share"]].to_dict("records") == [
        {"node": "gpu01", "device": 0, "job": "1009250", "share": 0.25},
        {"node": "gpu01", "device": 0, "job": "1009251", "share": 0.25},
        {"node": "gpu01", "device": 1, "job": "1009249", "share": 1.0}]
    assert mapping["gpu_uuid"].iloc[2] == "GPU-61a65011-6571-a6d2-5ab8-66cbb6f7f9c3"


def test_bad_ceems_input_names_the_file_line_and_field(tmp_path):
    path = tmp_path / "ceems.prom"
    path.write_text('ceems_compute_unit_gpu_index_flag{gpuiid="",gpuuuid="GPU-a",hostname="g",index="0",'
                    'manager="slurm",uuid="7"} 2\n')
    with pytest.raises(InvalidInputError, match=r"ceems.prom line 1, value: 2.0 is not a GPU share"):
        prometheus.read_ceems_gpu_map(path, timestamp="2026-03-01")
    path.write_text('ceems_compute_unit_gpu_index_flag{gpuiid="",gpuuuid="GPU-a",hostname="g",index="zero",'
                    'manager="slurm",uuid="7"} 1\n')
    with pytest.raises(InvalidInputError, match=r"ceems.prom line 1, label index: 'zero' is not a GPU index"):
        prometheus.read_ceems_gpu_map(path, timestamp="2026-03-01")


def write_ceems(folder: Path, jobs=JOBS, nodes=("a100-01",)) -> Path:
    """query_range answer of ceems_compute_unit_gpu_index_flag every 5 minutes for ``nodes``."""
    result: dict[tuple, list] = {}
    for job, raw, _, _, node, _, start, end, held, _ in jobs:
        if node not in nodes:
            continue
        for gpu in held:
            points = [[int((DAY + pd.Timedelta(seconds=i * STEP)).timestamp()), "1"]
                      for i in range(int(np.ceil(start * 3600 / STEP)), int(np.ceil(end * 3600 / STEP)))]
            result[(node, gpu, raw)] = points
    answer = [{"metric": {"__name__": "ceems_compute_unit_gpu_index_flag", "manager": "slurm", "hostname": node,
                          "cgrouphostname": "", "uuid": raw, "index": str(gpu), "hindex": f"{node}/gpu-{gpu}",
                          "gpuuuid": UUID[(node, gpu)], "instance": f"{node}:9010", "job": "ceems"},
               "values": points} for (node, gpu, raw), points in result.items()]
    path = folder / "ceems.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": answer}}))
    return path


def test_ceems_maps_dcgm_samples_to_their_jobs_to_the_cent(tmp_path):
    write_month(tmp_path)
    for path in tmp_path.glob("DCGM_FI_*.json"):
        path.unlink()
    write_dcgm(tmp_path, mapped=set())  # no hpc_job label anywhere
    write_ceems(tmp_path)
    nodes = pd.DataFrame({"node": list(HOSTS), "resource_id": list(HOSTS.values())})
    dcgm = prometheus.read_query_range(sorted(tmp_path.glob("DCGM_FI_*.json")), step=STEP, nodes=nodes)
    telemetry = slurm.apply_gpu_map(dcgm, prometheus.read_ceems_gpu_map(tmp_path / "ceems.json"))
    assert telemetry.attrs["gpu_map"]["matched_by"] == "gpu_uuid"
    accounting = gpucost.read_slurm_sacct(tmp_path / "sacct.txt", "America/Chicago", nodes=nodes)
    costs = pd.read_csv(tmp_path / "costs.csv", parse_dates=["start", "end"])
    inventory = pd.read_csv(tmp_path / "inventory.csv")
    joined = slurm.join_jobs(telemetry, accounting, job_ids=slurm.sacct_job_labels([tmp_path / "sacct.txt"]),
                             tz="America/Chicago", costs=costs, inventory=inventory)
    assert joined.report["problems"] == []
    placement = joined.report["jobs"].set_index("consumer")["placement"].to_dict()
    assert placement["101"] == "CEEMS" and placement["100_2"] == "CEEMS" and placement["201"] == "start order"
    by_account = gpucost.allocate(costs, joined.usage, inventory, joined.workloads, by=["project"])
    assert money(by_account, "project") == BY_ACCOUNT


def test_cli_applies_ceems_to_dcgm(capsys, tmp_path):
    config = write_month(tmp_path)
    for path in tmp_path.glob("DCGM_FI_*.json"):
        path.unlink()
    write_dcgm(tmp_path, mapped=set())
    write_ceems(tmp_path)
    config.write_text(config.read_text().replace("[sources]\n", '[sources]\nceems = "ceems.json"\n'))
    account, _ = cli_table(capsys, config, "project")
    assert money(account, "project") == BY_ACCOUNT
    code, out, _ = run(capsys, "check", "-c", config)
    assert code == 0 and "2 by CEEMS, 3 placed in start order" in out


def test_ceems_shares_split_a_gpu_and_leave_the_rest_free():
    t0 = pd.Timestamp("2026-03-02 10:00", tz="UTC")
    dcgm = pd.DataFrame({"timestamp": [t0], "resource_id": "gpu01", "device": [0], "consumer": [""], "share": 1.0,
                         "util": [0.6], "mem_used": [8e9], "duration": [60.0], "node": "gpu01", "gpu_uuid": "GPU-a"})
    mapping = pd.DataFrame({"timestamp": [t0, t0], "node": "gpu01", "device": 0, "gpu_uuid": "GPU-a",
                            "job": ["7", "8"], "share": [0.25, 0.5], "duration": 60.0})
    out = slurm.apply_gpu_map(dcgm, mapping)
    assert out[["consumer", "share", "mem_used", "util"]].astype({"consumer": str}).to_dict("records") == [
        {"consumer": "7", "share": 0.25, "mem_used": 2e9, "util": 0.6},
        {"consumer": "8", "share": 0.5, "mem_used": 4e9, "util": 0.6},
        {"consumer": "", "share": 0.25, "mem_used": 2e9, "util": 0.6}]
    assert out["share"].sum() == pytest.approx(1.0)  # no GPU time counted twice or lost


def test_sacct_idx_is_named_as_the_placement(tmp_path):
    from test_slurm_join import python_join
    write_month(tmp_path, gres=True)  # AllocGRES gpu:1(IDX:1): Slurm's own indices; node-a's hpc_job labels win
    joined, _, _ = python_join(tmp_path)
    placement = joined.report["jobs"].set_index("consumer")["placement"].to_dict()
    assert placement == {"101": "hpc_job label", "100_2": "hpc_job label", "201": "sacct IDX", "202": "sacct IDX",
                         "203": "sacct IDX"}


def test_jobstats_without_uuid_or_name_labels_reads_empty_strings(tmp_path):
    """A scrape whose GPU series carry no ``uuid`` or ``name`` label (an older or stripped exporter): empty
    strings, not a TypeError from pandas."""
    path = tmp_path / "bare.prom"
    path.write_text('nvidia_gpu_duty_cycle{minor_number="0"} 85\nnvidia_gpu_duty_cycle{minor_number="1"} 40\n')
    usage = prometheus.read_jobstats(path, timestamp="2026-03-01 10:00", interval=30)
    assert list(usage["util"]) == [0.85, 0.40]
    assert list(usage["gpu_uuid"].astype(str)) == ["", ""] and list(usage["gpu_model"].astype(str)) == ["", ""]


def test_ceems_scrapes_each_stand_for_their_spacing_not_a_minute(capsys, tmp_path):
    """A directory of CEEMS scrapes every 5 minutes, taken 2 minutes after
    DCGM's readings (separate scrape targets) and no stated step: each
    scrape holds until the next (their spacing), so every DCGM reading finds
    its job and the chargeback is the hand arithmetic's. Each scrape used to
    be read alone and stand for 60 s: 4 of 5 readings were left free, the
    jobs' dollars moved to idle, exit 0."""
    config = write_month(tmp_path)
    for path in tmp_path.glob("DCGM_FI_*.json"):
        path.unlink()
    write_dcgm(tmp_path, mapped=set())
    answer = json.loads(write_ceems(tmp_path).read_text())
    (tmp_path / "ceems.json").unlink()
    scrapes: dict[int, list[str]] = {}
    for series in answer["data"]["result"]:
        labels = ",".join(f'{k}="{v}"' for k, v in series["metric"].items() if k != "__name__")
        for t, value in series["values"]:
            scrapes.setdefault(int(t) + 120, []).append(f"ceems_compute_unit_gpu_index_flag{{{labels}}} {value}")
    (tmp_path / "ceems").mkdir()
    first = min(scrapes)
    for t in range(first, max(scrapes) + 1, STEP):  # every 5 minutes, empty when no job holds a GPU
        name = pd.Timestamp(t, unit="s", tz="UTC").strftime("%Y%m%dT%H%M%SZ")
        (tmp_path / "ceems" / f"ceems-{name}.prom").write_text("\n".join(scrapes.get(t, [])) + "\n")
    config.write_text(config.read_text().replace("[sources]\n", '[sources]\nceems = "ceems/*.prom"\n'))
    account, _ = cli_table(capsys, config, "project")
    assert money(account, "project") == BY_ACCOUNT
    code, out, _ = run(capsys, "check", "-c", config)
    assert code == 0 and "2 by CEEMS, 3 placed in start order" in out  # as the saved answers give
