"""Hosts without Kubernetes (docs/telemetry.md): nvidia-smi CSV logs and
Slurm accounting (``sacct --parsable2``). Parsed in C++.

Example:
    >>> usage = gpucost.read_nvidia_smi("gpu.csv", resource_id="i-0abc", tz="UTC",
    ...                                 apps="apps.csv", pid_jobs=pids)
    >>> slurm = gpucost.read_slurm_sacct("sacct.txt", tz="Europe/Berlin")
    >>> gpucost.allocate(costs, slurm.usage, inventory, slurm.workloads, by=["project"])
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
    (fine for the allocated and used bases)."""
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
