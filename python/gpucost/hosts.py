"""Hosts without Kubernetes (docs/telemetry.md): nvidia-smi CSV logs and
Slurm accounting (``sacct --parsable2``) and Slurm node events (``sacctmgr
show event -P``) as down time. Parsed in C++.

Examples: :func:`read_nvidia_smi`, :func:`read_nvidia_smi_mon`, :func:`read_slurm_sacct`,
:func:`read_slurm_events`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.errors import InvalidInputError
from gpucost.frames import Table, usage_frame, workloads_frame
from gpucost.prometheus import _seconds, telemetry_report, to_ns

__all__ = ["SlurmAccounting", "read_nvidia_smi", "read_nvidia_smi_mon", "read_slurm_sacct", "read_slurm_events",
           "read_scontrol_jobs", "sacct_problems", "DOWNTIME_COLUMNS"]


def _read(path: str | PathLike) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_nvidia_smi(path: str | PathLike, resource_id: str, tz: str, *, apps: str | PathLike | None = None,
                    pid_jobs: Any = None, interval: Any = None) -> pd.DataFrame:
    """Usage samples from an ``nvidia-smi --query-gpu=timestamp,index,uuid,name,
    utilization.gpu,memory.used,memory.total --format=csv -l N`` log.

    Args:
        path: the GPU log.
        resource_id: the host's id in the bill (instance id, VM name).
        tz: the host's time zone (nvidia-smi prints local time), e.g. "UTC".
        apps: an ``--query-compute-apps=timestamp,gpu_uuid,pid,used_memory``
            log of the same host; its processes name the consumers. Without
            it every reading has consumer "" (no workload known).
        pid_jobs: ``pid, job`` table naming each process's workload; other
            pids become "pid:<pid>".
        interval: the logging interval in seconds (``-l``/``-lms``) as you
            know it; default: read from the log. Each reading's ``duration``
            is the gap to that GPU's next reading, capped at the log's spacing
            (median gap), so jitter never overlaps two readings and a gap
            counts as missing. A given interval more than 2x away from the
            log's spacing is an error. Apps and GPU readings in the same
            interval are matched.

    ``.attrs["telemetry"]`` is the reader report (series, spacing_seconds, ...).

    Examples:
        Two readings of two GPUs a minute apart; process 4182 (job
        ``train-7``) holds GPU 0, GPU 1 is free:

        >>> from pathlib import Path
        >>> _ = Path("gpu.csv").write_text(
        ...     "timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\\n"
        ...     "2026/03/01 10:00:00.123, 0, GPU-aaaa, NVIDIA A100-SXM4-40GB, 97 %, 38211 MiB, 40960 MiB\\n"
        ...     "2026/03/01 10:00:00.125, 1, GPU-bbbb, NVIDIA A100-SXM4-40GB, 0 %, 0 MiB, 40960 MiB\\n"
        ...     "2026/03/01 10:01:00.120, 0, GPU-aaaa, NVIDIA A100-SXM4-40GB, 95 %, 38211 MiB, 40960 MiB\\n"
        ...     "2026/03/01 10:01:00.122, 1, GPU-bbbb, NVIDIA A100-SXM4-40GB, 0 %, 0 MiB, 40960 MiB\\n")
        >>> _ = Path("apps.csv").write_text(
        ...     "timestamp, gpu_uuid, pid, used_gpu_memory [MiB]\\n"
        ...     "2026/03/01 10:00:00.456, GPU-aaaa, 4182, 38180 MiB\\n"
        ...     "2026/03/01 10:01:00.450, GPU-aaaa, 4182, 38180 MiB\\n")
        >>> usage = gpucost.read_nvidia_smi("gpu.csv", "i-0abc", "Europe/Paris", apps="apps.csv",
        ...                                 pid_jobs=pd.DataFrame({"pid": [4182], "job": ["train-7"]}))
        >>> usage[["timestamp", "resource_id", "device", "consumer", "util", "duration"]]
                              timestamp resource_id  device consumer  util  duration
        0 2026-03-01 09:00:00.123+00:00      i-0abc       0  train-7  0.97    59.997
        1 2026-03-01 09:00:00.125+00:00      i-0abc       1           0.00    59.997
        2 2026-03-01 09:01:00.120+00:00      i-0abc       0  train-7  0.95    59.997
        3 2026-03-01 09:01:00.122+00:00      i-0abc       1           0.00    59.997
    """
    pids: list[int] = []
    jobs: list[str] = []
    if pid_jobs is not None:
        t = Table(pid_jobs, "pid_jobs")
        pids = np.asarray(t.column("pid"), dtype=np.int64).tolist()
        jobs = np.asarray(t.column("job"), dtype=object).astype(str).tolist()
    raw = _core.nvidia_smi(_read(path), str(path), None if apps is None else _read(apps),
                           "" if apps is None else str(apps), str(tz), str(resource_id),
                           None if interval is None else _seconds(interval, "interval"), pids, jobs)
    return telemetry_report(usage_frame(raw), f"nvidia-smi {path}")


def _pid_jobs(pid_jobs: Any) -> tuple[list[int], list[str]]:
    if pid_jobs is None:
        return [], []
    t = Table(pid_jobs, "pid_jobs")
    return (np.asarray(t.column("pid"), dtype=np.int64).tolist(),
            np.asarray(t.column("job"), dtype=object).astype(str).tolist())


def read_nvidia_smi_mon(path: str | PathLike, resource_id: str, tz: str, *, pmon: str | PathLike | None = None,
                        pid_jobs: Any = None, interval: Any = None) -> pd.DataFrame:
    """Usage samples from ``nvidia-smi dmon -o DT`` or ``nvidia-smi pmon -o DT``
    logs (whitespace columns under a ``# Date Time gpu ...`` header, ``-``
    for no value).

    ``path`` is a dmon log (one reading per GPU: ``sm`` % as util, ``fb`` MB
    as memory when logged with ``-s um``) or a pmon log (one row per process:
    each pid holds its GPU, like ``--query-compute-apps`` rows; the GPU's util
    and memory are its processes' summed ``sm`` and ``fb``; a ``-`` row is an
    idle GPU). ``pmon`` is a pmon log beside a dmon ``path``: the readings from
    dmon, the holders from pmon. ``pid_jobs``, ``interval``: as in
    :func:`read_nvidia_smi`. Without an ``fb`` column the samples have
    ``mem_used`` 0, counted in ``attrs["telemetry"]["samples_without_memory"]``
    (fine for the allocated and used bases).

    Examples:
        A pmon log: process 7001 holds GPU 0, GPU 1 has none.

        >>> from pathlib import Path
        >>> _ = Path("pmon.log").write_text(
        ...     "# Date       Time        gpu         pid   type     fb     sm    mem    command\\n"
        ...     "# YYYYMMDD   HH:MM:SS    Idx           #    C/G     MB      %      %    name\\n"
        ...     " 20260302   10:00:00      0       7001     C  30211     71     38    python\\n"
        ...     " 20260302   10:00:00      1          -     -      -      -      -    -\\n"
        ...     " 20260302   10:00:05      0       7001     C  30211     74     40    python\\n"
        ...     " 20260302   10:00:05      1          -     -      -      -      -    -\\n")
        >>> usage = gpucost.read_nvidia_smi_mon("pmon.log", "i-0abc", "UTC")
        >>> usage[["timestamp", "device", "consumer", "util", "mem_used"]]
                          timestamp  device  consumer  util      mem_used
        0 2026-03-02 10:00:00+00:00       0  pid:7001  0.71  3.167853e+10
        1 2026-03-02 10:00:00+00:00       1            0.00  0.000000e+00
        2 2026-03-02 10:00:05+00:00       0  pid:7001  0.74  3.167853e+10
        3 2026-03-02 10:00:05+00:00       1            0.00  0.000000e+00
    """
    pids, jobs = _pid_jobs(pid_jobs)
    raw = _core.nvidia_smi_mon(_read(path), str(path), None if pmon is None else _read(pmon),
                               "" if pmon is None else str(pmon), str(tz), str(resource_id),
                               None if interval is None else _seconds(interval, "interval"), pids, jobs)
    has_memory = bool(raw["diagnostics"].pop("has_memory"))
    frame = telemetry_report(usage_frame(raw), f"nvidia-smi mon {path}")
    frame.attrs["telemetry"]["samples_without_memory"] = 0 if has_memory else len(frame)
    return frame


class SlurmAccounting(NamedTuple):
    usage: pd.DataFrame      # allocated-basis samples, one per job, node and GPU
    workloads: pd.DataFrame  # consumer (JobID), job, user, project (Account)
    diagnostics: dict


def _node_gpus(node_gpus: Any, nodes: Any, gpus_per_node: int | None, required: bool = True) -> list[tuple[str, int]]:
    """(node, GPU count) pairs: ``node_gpus`` (a mapping or a ``node, gpus``
    table), else a ``gpus`` column of ``nodes``, else ``gpus_per_node`` for
    every node of ``nodes``; none (``[]``) when not ``required``."""
    if node_gpus is not None:
        if isinstance(node_gpus, Mapping):
            return [(str(k), int(v)) for k, v in node_gpus.items()]
        t = Table(node_gpus, "node_gpus")
        return list(zip(np.asarray(t.column("node"), dtype=object).astype(str).tolist(),
                        np.asarray(t.column("gpus"), dtype=np.int64).tolist()))
    if nodes is not None:
        t = Table(nodes, "nodes")
        names = np.asarray(t.column("node"), dtype=object).astype(str).tolist()
        if t.has("gpus"):
            gpus = pd.Series(t.column("gpus"))
            if gpus.isna().any():
                raise InvalidInputError(f"nodes: row {int(np.flatnonzero(gpus.isna().to_numpy())[0])}, column 'gpus': "
                                        "no GPU count (give 0 for a node without GPUs)")
            return list(zip(names, gpus.astype(np.int64).tolist()))
        if gpus_per_node is not None:
            return [(n, int(gpus_per_node)) for n in names]
    if not required:
        return []
    raise InvalidInputError("read_slurm_sacct: start/end need each node's GPU count: give node_gpus "
                            "({node: gpus} or a node, gpus table), a gpus column in nodes, or gpus_per_node "
                            "with nodes")


def _per_gpu(value: Any, name: str) -> list[tuple[str, int]]:
    """``shards_per_gpu``/``mps_per_gpu`` as (key, count) pairs: a number for
    every node ("*"), or a mapping of node, host list ("gpu[01-04]") or
    partition to a number."""
    if value is None:
        return []
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [("*", int(value))]
    if isinstance(value, Mapping):
        out = []
        for key, count in value.items():
            if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
                raise InvalidInputError(f"parameter '{name}': '{key}' = {count!r} is not a whole number")
            out.append((str(key), int(count)))
        return out
    raise InvalidInputError(f"parameter '{name}': {value!r} is not a number or a mapping of node, host list or "
                            "partition to a number")


def _paths(path: Any) -> list[str | PathLike]:
    return [path] if isinstance(path, (str, PathLike)) else list(path)


def _rename_nodes(frame: pd.DataFrame, column: str, nodes: Any) -> None:
    """``column`` (node names, categorical) -> the bill's ids through ``nodes``
    (node, resource_id); names not in it stay."""
    if nodes is None:
        return
    t = Table(nodes, "nodes")
    mapping = pd.Series(np.asarray(t.column("resource_id"), dtype=object),
                        index=np.asarray(t.column("node"), dtype=object))
    mapping = mapping[~mapping.index.duplicated(keep="last")]
    names = pd.Series(frame[column].cat.categories, dtype=object)
    renamed = names.map(mapping).fillna(names).to_numpy(dtype=object)
    frame[column] = pd.Categorical(renamed[frame[column].cat.codes.to_numpy()])


def _ids(ids: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(map(str, ids[:most]))
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _node_ids(nodes: Any) -> dict[str, str]:
    """node -> the bill's id, from a ``node, resource_id`` table (the last row of a node wins)."""
    if nodes is None:
        return {}
    t = Table(nodes, "nodes")
    return dict(zip(np.asarray(t.column("node"), dtype=object).astype(str).tolist(),
                    np.asarray(t.column("resource_id"), dtype=object).astype(str).tolist()))


def _sacct_report(raw: dict, sources: list[str], node_gpus: list[tuple[str, int]], ids: dict[str, str]) -> dict:
    """The reader's report (``usage.attrs["slurm"]``) and its warnings: rows
    read twice or replaced by a later state (one warning), jobs whose GPUs
    cannot be known (one warning, with the GPU-hours at stake)."""
    from gpucost.errors import JoinWarning
    d = raw["diagnostics"]
    repeated, superseded = list(raw["repeated_jobs"]), list(raw["superseded_jobs"])
    unknown = pd.DataFrame(raw["jobs_unknown_gpus"], columns=["source", "line", "job", "user", "account",
                                                               "partition", "nodes", "start", "end"])
    count = dict(node_gpus)
    unknown["start"] = pd.to_datetime(unknown["start"].astype(np.int64), utc=True)
    unknown["end"] = pd.to_datetime(unknown["end"].astype(np.int64), utc=True)
    unknown["hours"] = (unknown["end"] - unknown["start"]).dt.total_seconds() / 3600
    unknown["node_gpus"] = [sum(count.get(n, 0) for n in nodes) for nodes in unknown["nodes"]]
    unknown["gpu_hours_at_most"] = unknown["hours"] * unknown["node_gpus"]
    unknown["resource_ids"] = [[ids.get(n, n) for n in nodes] for nodes in unknown["nodes"]]
    where = ", ".join(sources[:2]) + (f" and {len(sources) - 2} more" if len(sources) > 2 else "")
    if d["rows_repeated"] or d["rows_superseded"] or d["runs_cut"]:
        parts = []
        if d["rows_repeated"]:
            parts.append(f"{d['rows_repeated']:,} job row(s) read twice (same JobIDRaw and step) were dropped "
                         f"(job(s) {_ids(repeated)})")
        if d["rows_superseded"] or d["runs_cut"]:
            parts.append(f"{d['rows_superseded'] + d['runs_cut']:,} row(s) of a run seen twice gave way to its "
                         f"later state or to the job's next run after a requeue (job(s) {_ids(superseded)})")
        warnings.warn(f"sacct ({where}): {'; '.join(parts)}: each job is charged once. Check that no export is "
                      "given twice or appended to another", JoinWarning, stacklevel=3)
    if len(unknown):
        jobs = [f"{j} on {','.join(n)}" for j, n in zip(unknown["job"], unknown["nodes"])]
        warnings.warn(f"sacct ({where}): {len(unknown):,} job(s) ran on GPU nodes with no GPU, shard or MPS count "
                      f"in AllocTRES, ReqTRES or a Gres column ({_ids(jobs)}; {unknown['hours'].sum():,.1f} job-hours, "
                      f"up to {unknown['gpu_hours_at_most'].sum():,.1f} GPU-hours of their nodes): what they held "
                      "cannot be known, so their GPU time counts as free (idle). Fix: add gres/gpu, gres/shard and "
                      "gres/mps to AccountingStorageTRES in slurm.conf, or export ReqTRES or AllocGRES with sacct -o",
                      JoinWarning, stacklevel=3)
    return {"sources": sources, "rows_repeated": int(d["rows_repeated"]), "rows_superseded": int(d["rows_superseded"]),
            "runs_cut": int(d["runs_cut"]), "repeated_jobs": repeated, "superseded_jobs": superseded,
            "shared_jobs": int(d["shared_jobs"]),
            # whose GPU indices were read (sacct's own IDX, scontrol's), not placed in start order
            "jobs_idx_sacct": list(raw.get("jobs_idx_sacct", [])),
            "jobs_idx_scontrol": list(raw.get("jobs_idx_given", [])),
            # records, not a frame: pandas compares attrs when it concatenates frames
            "jobs_unknown_gpus": unknown.drop(columns=["node_gpus"]).to_dict("records")}


# ---- scontrol show job -d: each job's GPU indices per node ----------------------------------

#: The fields read from ``scontrol show job -d`` (multi-line or ``-o`` one-line records).
_SCONTROL_FIELD = re.compile(r"(?:^|\s)(JobId|ArrayJobId|ArrayTaskId|StartTime|Nodes|GRES|GRES_IDX)=(\S*)")
#: A GRES item with its indices: gpu(IDX:0,2), gpu:a100:2(IDX:0-1), shard:2(IDX:0), mps:50(IDX:1).
_GRES_IDX = re.compile(r"(gpu|shard|mps)(?::[^,()\s]*)*\(IDX:([^)]*)\)")
SCONTROL_COLUMNS = ("job", "array_job", "node", "devices", "start", "source", "line")


def _index_list(text: str) -> list[int] | None:
    """``0-1,3`` -> [0, 1, 3]; None when it is no index list."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or (hi and int(hi) < int(lo)):
            return None
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def _gres_devices(value: str, where: str) -> list[int] | None:
    """The GPU indices of one node's ``GRES=`` value (gpu items first, else
    the GPU a shard or MPS item names); None when it names no indices."""
    found: dict[str, list[int]] = {}
    for name, idx in _GRES_IDX.findall(value):
        if idx.strip() in ("", "N/A"):
            continue
        indices = _index_list(idx)
        if indices is None:
            raise InvalidInputError(f"{where}, GRES: '{value}': bad IDX list '{idx}' (expected e.g. IDX:0-1,3)")
        found.setdefault(name, []).extend(indices)
    for name in ("gpu", "shard", "mps"):
        if found.get(name):
            return sorted(set(found[name]))
    return None


def read_scontrol_jobs(paths: Any) -> pd.DataFrame:
    """Each job's GPU indices per node from ``scontrol show job -d`` output
    (files; records separated by blank lines, or ``-o`` one line each):
    ``JobId``, ``ArrayJobId``/``ArrayTaskId``, ``StartTime`` and the per-node
    detail lines ``Nodes=gpu[01-02] CPU_IDs=0-15 Mem=64000
    GRES=gpu:a100:2(IDX:0-1)`` (``GRES_IDX=gpu(IDX:0)`` before Slurm 20.02).
    A node line without an IDX list (a job without GPUs) gives no row.

    Returns one row per job and node: ``job`` (JobId, the raw id), ``array_job``
    (``4103_2`` for an array task, else None), ``node``, ``devices`` (a tuple
    of GPU indices), ``start`` (StartTime as printed, the controller's local
    time), ``source`` and ``line`` (of the node line). A job read twice
    (several snapshots) keeps its last record per node and start.
    :func:`read_slurm_sacct` (``scontrol=``) takes these indices for sacct
    rows that have no IDX of their own.

    Examples:
        >>> from pathlib import Path
        >>> _ = Path("scontrol.txt").write_text(
        ...     "JobId=4105 ArrayJobId=4103 ArrayTaskId=2 JobName=sweep\\n"
        ...     "   StartTime=2026-03-01T10:00:00 EndTime=2026-03-01T11:00:00 Deadline=N/A\\n"
        ...     "   NodeList=gpu[01-02]\\n"
        ...     "   JOB_GRES=gpu:a100:4\\n"
        ...     "     Nodes=gpu01 CPU_IDs=0-15 Mem=64000 GRES=gpu:a100:2(IDX:0-1)\\n"
        ...     "     Nodes=gpu02 CPU_IDs=0-15 Mem=64000 GRES=gpu:a100:2(IDX:2,3)\\n"
        ...     "\\n"
        ...     "JobId=4200 JobName=prep\\n"
        ...     "   StartTime=2026-03-01T10:30:00 EndTime=2026-03-01T12:00:00 Deadline=N/A\\n"
        ...     "     Nodes=cpu07 CPU_IDs=0-3 Mem=8000 GRES=\\n")
        >>> gpucost.read_scontrol_jobs("scontrol.txt")[["job", "array_job", "node", "devices", "line"]]
            job array_job   node devices  line
        0  4105    4103_2  gpu01  (0, 1)     5
        1  4105    4103_2  gpu02  (2, 3)     6
    """
    rows: list[tuple] = []
    for path in _paths(paths):
        source = str(path)
        job: dict[str, str] = {}
        node: tuple[str, int] | None = None  # the node line awaiting its GRES

        def finish(value: str | None, line: int) -> None:
            nonlocal node
            if node is None:
                return
            names, at = node
            node = None
            where = f"{source} line {at}"
            devices = None if value is None else _gres_devices(value, where)
            if devices is None:
                return
            if "JobId" not in job:
                raise InvalidInputError(f"{where}, Nodes: a node line before any JobId= (not scontrol show job -d "
                                        "output?)")
            try:
                hosts = _core.expand_host_list(names)
            except InvalidInputError as exc:
                raise InvalidInputError(f"{where}, Nodes: '{names}': {exc}") from None
            array = (f"{job['ArrayJobId']}_{job['ArrayTaskId']}" if job.get("ArrayJobId") and
                     job.get("ArrayTaskId", "").isdigit() else None)
            rows.extend((job["JobId"], array, h, tuple(devices), job.get("StartTime", ""), source, at) for h in hosts)

        with open(path, encoding="utf-8") as f:
            for number, text in enumerate(f, start=1):
                if text.lstrip().startswith("JobId="):
                    finish(None, number)
                    job = {}
                for key, value in _SCONTROL_FIELD.findall(text):
                    if key == "Nodes":
                        finish(None, number)
                        node = (value, number)
                    elif key in ("GRES", "GRES_IDX"):
                        finish(value, number)
                    elif key == "JobId" and not value.split("+")[0].isdigit():
                        raise InvalidInputError(f"{source} line {number}, JobId: '{value}' is not a job id")
                    else:
                        job[key] = value
            finish(None, 0)
    out = pd.DataFrame(rows, columns=list(SCONTROL_COLUMNS))
    out = out.drop_duplicates(["job", "node", "start"], keep="last").reset_index(drop=True)
    out = out.astype({"job": object, "node": object, "line": np.int64})
    out["array_job"] = out["array_job"].astype(object).where(out["array_job"].notna(), None)
    return out


def _job_devices(scontrol: Any) -> list[tuple[str, str, str, str, list[int]]]:
    """(job, node, start, where, indices) for the sacct reader: each row under
    its raw id and, for an array task, its JobID too (``4103_2``)."""
    if scontrol is None:
        return []
    table = scontrol if isinstance(scontrol, pd.DataFrame) else read_scontrol_jobs(scontrol)
    missing = [c for c in ("job", "node", "devices") if c not in table.columns]
    if missing:
        raise InvalidInputError(f"scontrol: missing column '{missing[0]}' (read_scontrol_jobs' table: "
                                f"{', '.join(SCONTROL_COLUMNS)})")
    out = []
    for r in table.itertuples(index=False):  # one row per job and node: a small table
        start = str(getattr(r, "start", "") or "")
        where = f"{getattr(r, 'source', 'scontrol')} line {getattr(r, 'line', '?')}"
        devices = [int(d) for d in r.devices]
        out.append((str(r.job), str(r.node), start, where, devices))
        array = getattr(r, "array_job", None)
        if isinstance(array, str) and array:
            out.append((array, str(r.node), start, where, devices))
    return out


def read_slurm_sacct(path: str | PathLike | Sequence[str | PathLike], tz: str, *, now: Any = None,
                     util: float = 1.0, gpus_per_node: int | None = None, nodes: Any = None, start: Any = None,
                     end: Any = None, node_gpus: Any = None, shards_per_gpu: Any = None,
                     mps_per_gpu: Any = None, scontrol: Any = None) -> SlurmAccounting:
    """Jobs from ``sacct --parsable2 -o JobIDRaw,JobID,User,Account,Partition,
    Submit,Start,End,State,NodeList,AllocTRES`` (times in the controller's
    time zone ``tz``); ``path`` is one export or several, read as one.

    Each job holding ``gres/gpu=N`` gives one sample per node and GPU for
    [Start, End) (``duration`` = the run time), share 1, ``util`` (sacct has
    no utilisation; 1 means allocated = used) and no memory. GPU indices come
    from an ``IDX:`` list in a Gres/AllocGRES column when present; otherwise
    they are assigned in start order, lowest free index first (counted in
    ``diagnostics["gpus_assigned_in_order"]``). Job steps are skipped, jobs
    that never started give workloads only, running jobs are charged until
    ``now``. ``nodes`` (node, resource_id) maps node names to bill ids.

    What a job holds comes from AllocTRES, else ReqTRES, else a Gres,
    AllocGRES, ReqGRES or TresPerNode column. Shared GPUs: a job with
    ``gres/shard=N`` holds N / (the node's shards per GPU) of one GPU per
    node, ``gres/mps=P`` P / (its MPS units per GPU, 100 unless given); both
    are its ``share`` of the GPU, and shard or MPS jobs share a GPU that no
    whole-GPU job holds. ``shards_per_gpu`` and ``mps_per_gpu`` give the
    counts: a number for every node, or a mapping of node, host list
    (``"gpu[01-04]"``) or partition to a number (a node's own wins over its
    partition's, and that over ``"*"``). A shard job on a node without a
    count is an error naming it.

    Several exports, or one appended to another, are read as one: a job row
    is keyed by JobIDRaw (JobID when absent). Rows that say the same are one
    row read twice and dropped; rows of one Start are one run seen at two
    moments and the later state wins (finished over running, then the later
    End, then the row read last); rows of different Starts are the runs of
    a requeued job, each kept, a run still going at the next run's Start
    ended there. One :class:`gpucost.JoinWarning` says what was dropped.

    ``start``/``end`` state the accounting range (the ``sacct -S/-E`` you
    ran): with each node's GPU count (``node_gpus``, a ``gpus`` column in
    ``nodes``, or ``gpus_per_node``) every GPU time no job held in the range
    becomes empty-consumer samples, so it is idle, not unobserved
    (``diagnostics["free_samples"]``). Without them only held GPU time is
    known. GPU counts without a range bound the placement (a job beyond its
    node's GPUs is an error naming the jobs that hold them) and name the
    jobs that ran on a GPU node without any GPU, shard or MPS count: what
    they held cannot be known, and one :class:`gpucost.JoinWarning` gives
    their job-hours and the GPU-hours at stake.

    ``scontrol``: ``scontrol show job -d`` files, or what
    :func:`read_scontrol_jobs` returned: a job row without an IDX list gets
    its GPU indices per node from there (matched by JobIDRaw or JobID, node
    and StartTime), counted in ``diagnostics["gpus_from_scontrol"]``; a job
    scontrol gives a different GPU count on a node is an error naming both
    files and lines.

    ``usage.attrs["slurm"]`` is the reader's report: ``rows_repeated``,
    ``rows_superseded``, ``runs_cut``, ``repeated_jobs``,
    ``superseded_jobs``, ``shared_jobs`` and ``jobs_unknown_gpus`` (one
    record per job: source, line, job, user, account, partition, nodes,
    start, end, hours, gpu_hours_at_most, resource_ids); the join report
    (:func:`gpucost.join_report`) prices those jobs' time with the bill
    (:func:`sacct_problems`).

    The workloads carry ``utilization_source="assumed"``: :func:`gpucost.kpis`
    keeps their GPU time out of measured utilisation (set it to
    ``"measured"`` when you allocate DCGM telemetry with these labels).

    Examples:
        Job 1001 held 2 GPUs of node ``gpu01`` for an hour; its batch step is
        skipped:

        >>> from pathlib import Path
        >>> _ = Path("sacct.txt").write_text(
        ...     "JobID|User|Account|Submit|Start|End|State|NodeList|AllocTRES\\n"
        ...     "1001|ana|llm|2026-03-01T09:55:00|2026-03-01T10:00:00|2026-03-01T11:00:00|COMPLETED|gpu01|"
        ...     "cpu=16,gres/gpu=2,mem=256G,node=1\\n"
        ...     "1001.batch|||2026-03-01T10:00:00|2026-03-01T10:00:00|2026-03-01T11:00:00|COMPLETED|gpu01|"
        ...     "cpu=8,gres/gpu=2,mem=128G,node=1\\n")
        >>> slurm = gpucost.read_slurm_sacct("sacct.txt", "Europe/Berlin",
        ...                                  nodes=pd.DataFrame({"node": ["gpu01"], "resource_id": ["i-0abc"]}))
        >>> slurm.usage[["timestamp", "resource_id", "device", "consumer", "util", "duration"]]
                          timestamp resource_id  device consumer  util  duration
        0 2026-03-01 09:00:00+00:00      i-0abc       0     1001   1.0    3600.0
        1 2026-03-01 09:00:00+00:00      i-0abc       1     1001   1.0    3600.0
        >>> slurm.workloads
          consumer   job user project utilization_source
        0     1001  1001  ana     llm            assumed

        Shared GPUs: ``shard:2`` of a GPU with 4 shards is half of it,
        ``mps:25`` a quarter; both share GPU 0:

        >>> _ = Path("shared.txt").write_text(
        ...     "JobIDRaw|JobID|User|Account|Partition|Start|End|NodeList|AllocTRES\\n"
        ...     "2001|2001|ana|llm|shared|2026-03-01T10:00:00|2026-03-01T11:00:00|gpu01|cpu=4,gres/shard=2,node=1\\n"
        ...     "2002|2002|bo|cv|shared|2026-03-01T10:00:00|2026-03-01T11:00:00|gpu01|cpu=4,gres/mps=25,node=1\\n")
        >>> shared = gpucost.read_slurm_sacct("shared.txt", "UTC", shards_per_gpu={"shared": 4})
        >>> shared.usage[["consumer", "device", "share", "duration"]]
          consumer  device  share  duration
        0     2001       0   0.50    3600.0
        1     2002       0   0.25    3600.0
    """
    ranged = start is not None or end is not None
    if ranged and (start is None or end is None):
        raise InvalidInputError("read_slurm_sacct: give both start and end (the accounting range)")
    pairs = _node_gpus(node_gpus, nodes, gpus_per_node, required=ranged)
    files = _paths(path)
    if not files:
        raise InvalidInputError("read_slurm_sacct: no sacct file given")
    raw = _core.sacct([(_read(p), str(p)) for p in files], str(tz), None if now is None else to_ns(now, "now"),
                      float(util), gpus_per_node, to_ns(start, "start") if ranged else None,
                      to_ns(end, "end") if ranged else None, pairs, _per_gpu(shards_per_gpu, "shards_per_gpu"),
                      _per_gpu(mps_per_gpu, "mps_per_gpu"), _job_devices(scontrol))
    usage = usage_frame(raw["usage"])
    _rename_nodes(usage, "resource_id", nodes)
    workloads = workloads_frame(raw["workloads"])
    # sacct measures nothing: the utilisation of these samples is `util`, an
    # assumption, and every figure built on it must say so (docs/analyses.md).
    workloads["utilization_source"] = "assumed"
    usage.attrs["slurm"] = _sacct_report(raw, [str(p) for p in files], pairs, _node_ids(nodes))
    return SlurmAccounting(usage, workloads, dict(raw["diagnostics"]))


def _slurm_reports(usage: Any) -> list[dict]:
    """The sacct reader reports in ``usage.attrs["slurm"]``: one, or one per
    source when several sources were combined (gpucost.sources.concat_usage)."""
    attrs = getattr(usage, "attrs", None)
    report = attrs.get("slurm") if isinstance(attrs, dict) else None
    if not isinstance(report, dict):
        return []
    if "jobs_unknown_gpus" in report:
        return [report]
    return [r for r in report.values() if isinstance(r, dict) and "jobs_unknown_gpus" in r]


def sacct_problems(usage: Any, costs: Any, caller: str = "python") -> list[tuple[str, str, float]]:
    """The join report's problem about Slurm jobs whose GPUs cannot be known
    (``usage.attrs["slurm"]["jobs_unknown_gpus"]``, see
    :func:`read_slurm_sacct`), priced with the bill: (kind, message with the
    fix in ``caller``'s words, the dollars at stake). The dollars are the
    cost of those jobs' nodes while they ran (what their GPU time is at
    most: the jobs' share of it cannot be known), none without ``costs``.

    Examples:
        Job 900 ran 2 hours on ``dgx01`` (8 GPUs, $16 an hour) and sacct names
        no GPU of it:

        >>> from pathlib import Path
        >>> _ = Path("cpu_only.txt").write_text(
        ...     "JobID|User|Account|Start|End|NodeList|AllocTRES\\n"
        ...     "900|ana|lab|2026-03-01T10:00:00|2026-03-01T12:00:00|dgx01|cpu=8,mem=64G,node=1\\n")
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")   # the reader's own warning, without dollars
        ...     slurm = gpucost.read_slurm_sacct("cpu_only.txt", "UTC", nodes=pd.DataFrame(
        ...         {"node": ["dgx01"], "resource_id": ["i-dgx01"], "gpus": [8]}))
        >>> costs = pd.DataFrame({"resource_id": ["i-dgx01"], "start": [pd.Timestamp("2026-03-01", tz="UTC")],
        ...                       "end": [pd.Timestamp("2026-03-02", tz="UTC")], "cost": [384.0]})
        >>> kind, message, amount = gpucost.hosts.sacct_problems(slurm.usage, costs)[0]
        >>> kind, amount
        ('slurm_jobs_unknown_gpus', 32.0)
        >>> print(message)  # doctest: +ELLIPSIS
        1 Slurm job(s) ran on GPU nodes with no GPU, shard or MPS count in sacct (900 on dgx01): 2.0 job-hours, up to 16.0 GPU-hours and up to $32.00 of their nodes' cost, counted as free GPU time (idle). Fix: ...
    """
    from gpucost.money import format_money
    jobs = [j for r in _slurm_reports(usage) for j in r["jobs_unknown_gpus"]]
    if not jobs or costs is None:
        return []
    frame = pd.DataFrame(jobs).explode("resource_ids").rename(columns={"resource_ids": "resource_id"})
    t = Table(costs, "costs")
    wanted = [c for c in ("resource_id", "start", "end", "cost", "currency") if t.has(c)]
    lines = t.data[wanted] if isinstance(t.data, pd.DataFrame) else t.data.select(wanted).to_pandas()
    lines = lines.assign(resource_id=lines["resource_id"].astype(str))
    if "currency" not in lines.columns:
        lines = lines.assign(currency="")
    both = frame[["resource_id", "start", "end"]].merge(lines, on="resource_id", suffixes=("_job", ""))
    if len(both):
        def ns(column: str) -> np.ndarray:
            values = pd.to_datetime(both[column], utc=True).dt.tz_convert(None)
            return values.to_numpy(dtype="datetime64[ns]").view(np.int64)
        lo, hi = np.maximum(ns("start_job"), ns("start")), np.minimum(ns("end_job"), ns("end"))
        length = ns("end") - ns("start")
        both["at_stake"] = both["cost"].to_numpy(float) * np.clip(hi - lo, 0, None) / np.where(length > 0, length, 1)
    money = both.groupby(both["currency"].fillna("").astype(str))["at_stake"].sum() if len(both) else pd.Series(
        dtype=float)
    money = money[money != 0]
    text = " + ".join(format_money(v, str(c)) for c, v in money.items()) or format_money(0.0)
    amount = float(money[money.abs().idxmax()]) if len(money) else 0.0
    shown = [f"{j['job']} on {','.join(j['nodes'])}" for j in jobs]
    fix = ("add gres/gpu, gres/shard and gres/mps to AccountingStorageTRES in slurm.conf, or export ReqTRES or "
           "AllocGRES with sacct -o" + (" (--sacct)" if caller == "cli" else " (read_slurm_sacct)"))
    hours = sum(float(j["hours"]) for j in jobs)
    gpu_hours = sum(float(j["gpu_hours_at_most"]) for j in jobs)
    return [("slurm_jobs_unknown_gpus",
             f"{len(jobs):,} Slurm job(s) ran on GPU nodes with no GPU, shard or MPS count in sacct ({_ids(shown)}): "
             f"{hours:,.1f} job-hours, up to {gpu_hours:,.1f} GPU-hours and up to {text} of their nodes' cost, "
             f"counted as free GPU time (idle). Fix: {fix}", amount)]


#: The columns of a down-time table (../shared/design/SEMANTICS.md section 10, ``downtime=``).
DOWNTIME_COLUMNS = ("resource_id", "start", "end", "reason")


def _is_sacctmgr(path: str | PathLike) -> bool:
    """Whether a file is ``sacctmgr show event -P`` output (a '|' header naming NodeName)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        first = next((line for line in f if line.strip()), "")
    return "|" in first and "nodename" in first.lower()


def _event_times(values: pd.Series, tz: str, column: str, source: str) -> pd.Series:
    """A table's start or end column as UTC instants: tz-aware values
    converted, naive ones (and text without an offset) read in ``tz``."""
    parsed = values
    if not pd.api.types.is_datetime64_any_dtype(values):
        try:
            parsed = pd.to_datetime(values, format="mixed")
        except (ValueError, TypeError):
            parsed = None
        if parsed is None or parsed.dtype == object:  # offsets mixed, or a bad cell: each on its own
            out = []
            for i, v in enumerate(values):
                try:
                    out.append(_one_time(v, tz))
                except (ValueError, TypeError) as exc:
                    raise InvalidInputError(f"{source}: row {i}, column '{column}': {v!r} is not a time "
                                            f"({exc})") from None
            return pd.Series(out, index=values.index, dtype="datetime64[ns, UTC]")
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        return parsed.dt.tz_convert("UTC")
    try:
        return parsed.dt.tz_localize(tz, ambiguous="raise", nonexistent="raise").dt.tz_convert("UTC")
    except Exception as exc:  # an ambiguous or skipped local time
        raise InvalidInputError(f"{source}: column '{column}': {exc} (a local time the daylight-saving change "
                                f"repeats or skips in {tz}: give it with an offset)") from None


def _one_time(value: Any, tz: str) -> pd.Timestamp:
    t = pd.Timestamp(value)
    if t is pd.NaT:
        raise ValueError("empty")
    return (t.tz_localize(tz) if t.tzinfo is None else t).tz_convert("UTC")


def _read_events_table(path: Path) -> pd.DataFrame:
    """A plain events table file: CSV (times kept as text, read in the
    caller's zone) or Parquet."""
    name = path.name.lower()
    try:
        if name.endswith(".parquet"):
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype={"start": str, "end": str, "node": str, "host": str}, keep_default_na=False,
                           na_values=[""])
    except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: {str(exc).strip().splitlines()[0]}") from None


def _downtime_from_table(frame: Any, source: str, tz: str, now: Any) -> pd.DataFrame:
    """A plain ``node, start, end[, reason]`` table (``host`` for ``node``)
    as events: host lists expanded, times in UTC, an empty end is ``now``."""
    t = Table(frame, source)
    data = t.data if isinstance(t.data, pd.DataFrame) else t.data.to_pandas()
    data = data.rename(columns={"host": "node"})
    for column in ("node", "start", "end"):
        if column not in data.columns:
            raise InvalidInputError(f"{source}: missing required column '{column}' (node, start, end[, reason])")
    data = data.reset_index(drop=True)
    end_text = data["end"].astype("string").str.strip()
    ongoing = data["end"].isna().to_numpy() | end_text.isin(["", "Unknown", "None"]).fillna(False).to_numpy()
    if ongoing.any() and now is None:
        raise InvalidInputError(f"{source}: row {int(np.flatnonzero(ongoing)[0])}, column 'end': the event is "
                                "still going on (no end): pass `now` to end it then")
    start = _event_times(data["start"], tz, "start", source)
    end = pd.Series(pd.Timestamp(to_ns(now, "now"), tz="UTC") if ongoing.any() else pd.NaT, index=data.index,
                    dtype="datetime64[ns, UTC]")
    if (~ongoing).any():
        end[~ongoing] = _event_times(data["end"][~ongoing], tz, "end", source)
    bad = np.flatnonzero((end <= start).to_numpy())
    if len(bad):
        raise InvalidInputError(f"{source}: row {int(bad[0])}, column 'end': {end.iloc[bad[0]]} is not after start "
                                f"{start.iloc[bad[0]]}")
    nodes = data["node"].astype(str).str.strip()
    reason = data["reason"].fillna("").astype(str) if "reason" in data.columns else pd.Series("", index=data.index)
    # Host lists ("gpu[01-03]", "a,b"): one row per node (few distinct values: a loop over them).
    lists = {v: _core.expand_host_list(v) for v in pd.unique(nodes) if "[" in v or "," in v}
    expanded = [lists.get(v, [v]) for v in nodes]
    repeat = np.fromiter((len(x) for x in expanded), dtype=np.int64, count=len(expanded))
    rows = np.repeat(np.arange(len(nodes)), repeat)
    return pd.DataFrame({"node": [n for x in expanded for n in x], "start": start.to_numpy()[rows],
                         "end": end.to_numpy()[rows], "reason": reason.to_numpy(dtype=object)[rows],
                         "state": "", "line": rows.astype(np.int64)})


def read_slurm_events(source: Any, tz: str, *, nodes: Any = None, now: Any = None,
                      states: Sequence[str] | None = None) -> pd.DataFrame:
    """Down time from Slurm node events: the ``downtime=`` table of
    ../shared/design/SEMANTICS.md section 10 (``resource_id, start, end,
    reason``), in which a resource could not be used.

    ``source`` is ``sacctmgr show event -P`` output (``sacctmgr show event
    -P start=2026-03-01 end=2026-04-01``: its default format
    ``Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User``, or any format
    naming NodeName and TimeStart), a plain table (a DataFrame, or a CSV or
    Parquet file) of ``node, start, end[, reason]``, or a list of them.
    NodeName may be a host list (``gpu[01-03]``): one row per node. Times
    without an offset are the controller's local time ``tz`` (as sacct's);
    an ongoing event (TimeEnd ``Unknown``, an empty end) ends at ``now``, and
    without it is an error naming the line. Cluster events (no node) are
    skipped; ``states`` keeps only events in those states (``["down",
    "drain"]``; default: every node event, DOWN, DRAIN, FAIL, MAINT, ... is
    down time: a draining node's jobs still running are samples in down time,
    which the allocation drops and counts). ``nodes`` (node, resource_id)
    maps node names to the bill's ids, as in :func:`read_slurm_sacct`; names
    not in it stay. The reason is the event's Reason, after its State
    (``"MAINT: rack 4 PSU swap"``).

    ``attrs["downtime"]`` is the reader's report: events, rows,
    cluster_events, other_states, ongoing, empty (events ending where they
    start, skipped), nodes_not_mapped (node names ``nodes`` does not list).

    Examples:
        Three nodes in maintenance for three days, one drained until ``now``;
        the cluster event (no node) is skipped. Chicago time is UTC-6:

        >>> from pathlib import Path
        >>> _ = Path("events.txt").write_text(
        ...     "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\\n"
        ...     "ohare||2026-03-01T00:00:00|Unknown|||\\n"
        ...     "ohare|gpu[01-03]|2026-03-02T08:00:00|2026-03-05T08:00:00|MAINT|rack 4 PSU swap|root(0)\\n"
        ...     "ohare|gpu04|2026-03-06T22:00:00|Unknown|DRAIN|xid 79|slurm(64030)\\n")
        >>> down = gpucost.read_slurm_events("events.txt", "America/Chicago", now="2026-03-08",
        ...                                  nodes=pd.DataFrame({"node": ["gpu04"], "resource_id": ["i-04"]}))
        >>> down
          resource_id                     start                       end                  reason
        0       gpu01 2026-03-02 14:00:00+00:00 2026-03-05 14:00:00+00:00  MAINT: rack 4 PSU swap
        1       gpu02 2026-03-02 14:00:00+00:00 2026-03-05 14:00:00+00:00  MAINT: rack 4 PSU swap
        2       gpu03 2026-03-02 14:00:00+00:00 2026-03-05 14:00:00+00:00  MAINT: rack 4 PSU swap
        3        i-04 2026-03-07 04:00:00+00:00 2026-03-08 00:00:00+00:00           DRAIN: xid 79
        >>> down.attrs["downtime"]["cluster_events"], down.attrs["downtime"]["nodes_not_mapped"]
        (1, ['gpu01', 'gpu02', 'gpu03'])

        A plain table works the same:

        >>> plain = pd.DataFrame({"node": ["gpu[05-06]"], "start": ["2026-03-10 00:00"],
        ...                       "end": ["2026-03-10 06:00"], "reason": ["firmware"]})
        >>> gpucost.read_slurm_events(plain, "UTC")
          resource_id                     start                       end    reason
        0       gpu05 2026-03-10 00:00:00+00:00 2026-03-10 06:00:00+00:00  firmware
        1       gpu06 2026-03-10 00:00:00+00:00 2026-03-10 06:00:00+00:00  firmware
    """
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise InvalidInputError("read_slurm_events: no source given")
    now_ns = None if now is None else to_ns(now, "now")
    frames, report = [], {"events": 0, "rows": 0, "cluster_events": 0, "other_states": 0, "ongoing": 0, "empty": 0}
    for item in items:
        if isinstance(item, (str, PathLike)) and _is_sacctmgr(item):
            raw = _core.slurm_events(_read(item), str(item), str(tz), now_ns, [str(s) for s in states or ()])
            for key, value in raw["diagnostics"].items():
                report[key] += int(value)
            frame = pd.DataFrame({"node": raw["node"], "start": pd.to_datetime(raw["start"], utc=True),
                                  "end": pd.to_datetime(raw["end"], utc=True), "reason": raw["reason"],
                                  "state": raw["state"], "line": raw["line"]})
        else:
            name = str(item) if isinstance(item, (str, PathLike)) else "events"
            table = item
            if isinstance(item, (str, PathLike)):
                table = _read_events_table(Path(item))
            frame = _downtime_from_table(table, name, str(tz), now)
            if "state" in getattr(table, "columns", ()) and states:
                keep = pd.Series(table["state"]).astype(str).str.lower().isin([s.lower() for s in states]).to_numpy()
                report["other_states"] += int((~keep).sum())
                frame = frame[keep[frame["line"].to_numpy()]]
        report["events"] += int(frame["line"].nunique())
        frames.append(frame)
    events = pd.concat(frames, ignore_index=True)
    state = events["state"].astype(str)
    reason = events["reason"].astype(str)
    events["reason"] = np.where(state == "", reason, np.where(reason == "", state, state + ": " + reason))
    out = pd.DataFrame({"resource_id": pd.Categorical(events["node"].astype(str)),
                        "start": events["start"].astype("datetime64[ns, UTC]"),
                        "end": events["end"].astype("datetime64[ns, UTC]"),
                        "reason": events["reason"].astype(object)})
    names = set(out["resource_id"].cat.categories)
    _rename_nodes(out, "resource_id", nodes)
    mapped = set() if nodes is None else set(np.asarray(Table(nodes, "nodes").column("node"), dtype=object).astype(str))
    out["resource_id"] = out["resource_id"].astype(str)
    report["rows"] = len(out)
    report["nodes_not_mapped"] = sorted(names - mapped) if nodes is not None else []
    out.attrs["downtime"] = report
    return out
