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
from gpucost.frames import Table, usage_frame, workloads_frame
from gpucost.prometheus import _seconds, to_ns

__all__ = ["SlurmAccounting", "read_nvidia_smi", "read_slurm_sacct"]


def _read(path: str | PathLike) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_nvidia_smi(path: str | PathLike, resource_id: str, tz: str, *, apps: str | PathLike | None = None,
                    pid_jobs: Any = None, interval: Any = 60) -> pd.DataFrame:
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
        interval: the logging interval in seconds (``-l``); apps and GPU
            readings in the same interval are matched.
    """
    pids: list[int] = []
    jobs: list[str] = []
    if pid_jobs is not None:
        t = Table(pid_jobs, "pid_jobs")
        pids = np.asarray(t.column("pid"), dtype=np.int64).tolist()
        jobs = np.asarray(t.column("job"), dtype=object).astype(str).tolist()
    raw = _core.nvidia_smi(_read(path), str(path), None if apps is None else _read(apps),
                           "" if apps is None else str(apps), str(tz), str(resource_id),
                           _seconds(interval, "interval"), pids, jobs)
    return usage_frame(raw)


class SlurmAccounting(NamedTuple):
    usage: pd.DataFrame      # allocated-basis samples, one per job, node and GPU
    workloads: pd.DataFrame  # consumer (JobID), job, user, project (Account)
    diagnostics: dict


def read_slurm_sacct(path: str | PathLike, tz: str, *, now: Any = None, util: float = 1.0,
                     gpus_per_node: int | None = None, nodes: Any = None) -> SlurmAccounting:
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
    The workloads carry ``utilization_source="assumed"``: :func:`gpucost.kpis`
    keeps their GPU time out of measured utilisation (set it to
    ``"measured"`` when you allocate DCGM telemetry with these labels).
    """
    raw = _core.sacct(_read(path), str(path), str(tz), None if now is None else to_ns(now, "now"), float(util),
                      gpus_per_node)
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
