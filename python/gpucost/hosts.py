"""Hosts without Kubernetes (docs/telemetry.md): nvidia-smi CSV logs and
Slurm accounting (``sacct --parsable2``). Parsed in C++.

Examples: :func:`read_nvidia_smi`, :func:`read_nvidia_smi_mon`, :func:`read_slurm_sacct`.
"""

from __future__ import annotations

from os import PathLike
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.errors import InvalidInputError
from gpucost.frames import Table, usage_frame, workloads_frame
from gpucost.prometheus import _seconds, telemetry_report, to_ns

__all__ = ["SlurmAccounting", "read_nvidia_smi", "read_nvidia_smi_mon", "read_slurm_sacct"]


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


def _node_gpus(node_gpus: Any, nodes: Any, gpus_per_node: int | None) -> list[tuple[str, int]]:
    """(node, GPU count) pairs: ``node_gpus`` (a mapping or a ``node, gpus``
    table), else a ``gpus`` column of ``nodes``, else ``gpus_per_node`` for
    every node of ``nodes``."""
    if node_gpus is not None:
        if isinstance(node_gpus, dict):
            return [(str(k), int(v)) for k, v in node_gpus.items()]
        t = Table(node_gpus, "node_gpus")
        return list(zip(np.asarray(t.column("node"), dtype=object).astype(str).tolist(),
                        np.asarray(t.column("gpus"), dtype=np.int64).tolist()))
    if nodes is not None:
        t = Table(nodes, "nodes")
        names = np.asarray(t.column("node"), dtype=object).astype(str).tolist()
        if "gpus" in getattr(nodes, "columns", ()):
            return list(zip(names, np.asarray(t.column("gpus"), dtype=np.int64).tolist()))
        if gpus_per_node is not None:
            return [(n, int(gpus_per_node)) for n in names]
    raise InvalidInputError("read_slurm_sacct: start/end need each node's GPU count: give node_gpus "
                            "({node: gpus} or a node, gpus table), a gpus column in nodes, or gpus_per_node "
                            "with nodes")


def read_slurm_sacct(path: str | PathLike, tz: str, *, now: Any = None, util: float = 1.0,
                     gpus_per_node: int | None = None, nodes: Any = None, start: Any = None, end: Any = None,
                     node_gpus: Any = None) -> SlurmAccounting:
    """Jobs from ``sacct --parsable2 -o JobID,User,Account,Submit,Start,End,
    State,NodeList,AllocTRES`` (times in the controller's time zone ``tz``).

    Each job holding ``gres/gpu=N`` gives one sample per node and GPU for
    [Start, End) (``duration`` = the run time), share 1, ``util`` (sacct has
    no utilisation; 1 means allocated = used) and no memory. GPU indices come
    from an ``IDX:`` list in a Gres/AllocGRES column when present; otherwise
    they are assigned in start order, lowest free index first (counted in
    ``diagnostics["gpus_assigned_in_order"]``). Job steps are skipped, jobs
    that never started give workloads only, running jobs are charged until
    ``now``. ``nodes`` (node, resource_id) maps node names to bill ids.

    ``start``/``end`` state the accounting range (the ``sacct -S/-E`` you
    ran): with each node's GPU count (``node_gpus``, a ``gpus`` column in
    ``nodes``, or ``gpus_per_node``) every GPU time no job held in the range
    becomes empty-consumer samples, so it is idle, not unobserved
    (``diagnostics["free_samples"]``). Without them only held GPU time is
    known.

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
    """
    ranged = start is not None or end is not None
    if ranged and (start is None or end is None):
        raise InvalidInputError("read_slurm_sacct: give both start and end (the accounting range)")
    pairs = _node_gpus(node_gpus, nodes, gpus_per_node) if ranged else []
    raw = _core.sacct(_read(path), str(path), str(tz), None if now is None else to_ns(now, "now"), float(util),
                      gpus_per_node, to_ns(start, "start") if ranged else None,
                      to_ns(end, "end") if ranged else None, pairs)
    usage = usage_frame(raw["usage"])
    if nodes is not None:
        t = Table(nodes, "nodes")
        mapping = pd.Series(np.asarray(t.column("resource_id"), dtype=object),
                            index=np.asarray(t.column("node"), dtype=object))
        names = pd.Series(usage["resource_id"].cat.categories, dtype=object)
        renamed = names.map(mapping).fillna(names).to_numpy(dtype=object)
        usage["resource_id"] = pd.Categorical(renamed[usage["resource_id"].cat.codes.to_numpy()])
    workloads = workloads_frame(raw["workloads"])
    # sacct measures nothing: the utilisation of these samples is `util`, an
    # assumption, and every figure built on it must say so (docs/analyses.md).
    workloads["utilization_source"] = "assumed"
    return SlurmAccounting(usage, workloads, dict(raw["diagnostics"]))
