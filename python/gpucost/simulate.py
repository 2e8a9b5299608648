"""A deterministic simulated GPU fleet, for the demo, tests and benchmarks.

``simulate_fleet(gpus=32, hours=24)`` returns the four tables of
docs/semantics.md (cost lines, usage samples, inventory, workloads) for a
fleet of 8-GPU instances (p4d.24xlarge: 8x A100 40 GB) billed hourly, with
the workloads real fleets have: multi-GPU training jobs (some end early and
leave their GPUs free), inference pods with a daily rhythm, time-sliced
notebook pods, MIG-split GPUs shared by several teams, idle instances, and
a few pods nobody labelled. Everything is vectorised; 10,000 GPUs x 24 h
(about 20 million samples) takes a few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Fleet", "simulate_fleet", "P4D_HOURLY", "A100_40GB_BYTES"]

P4D_HOURLY = 32.77  # p4d.24xlarge on-demand, us-east-1 (March 2026)
A100_40GB_BYTES = 40 * 2**30
GPUS_PER_INSTANCE = 8
TEAMS = ("vision", "nlp", "recsys", "research", "platform")
# Instance roles and how often each occurs.
ROLES = ("training", "inference", "notebooks", "mig", "idle")
ROLE_WEIGHTS = (0.40, 0.20, 0.15, 0.15, 0.10)
# MIG layout of one A100: (profile, share of compute, memory GiB).
MIG_LAYOUT = (("3g.20gb", 3 / 7, 20), ("2g.10gb", 2 / 7, 10), ("1g.5gb", 1 / 7, 5), ("1g.5gb", 1 / 7, 5))


@dataclass
class Fleet:
    """The four input tables of :func:`gpucost.allocate`."""

    costs: pd.DataFrame
    usage: pd.DataFrame
    inventory: pd.DataFrame
    workloads: pd.DataFrame


class _Series:
    """Columns of usage series: one consumer on one device over [begin, end) steps."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {k: [] for k in
                                      ("instance", "device", "consumer", "share", "util", "amp", "mem", "begin", "end")}

    def add(self, instance: int, device: int, consumer: str, share: float, util: float, amp: float,
            mem: float, begin: int, end: int) -> None:
        if end <= begin:
            return
        for key, value in zip(self.cols, (instance, device, consumer, share, util, amp, mem, begin, end)):
            self.cols[key].append(value)


def simulate_fleet(gpus: int = 32, hours: int = 24, *, interval: int = 60, seed: int = 0,
                   start: str = "2026-03-02", price: float = P4D_HOURLY,
                   strings: str = "category") -> Fleet:
    """Simulates ``gpus`` GPUs (a multiple of 8) for ``hours`` hours.

    Args:
        gpus: number of GPUs; instances have 8 each.
        hours: hours simulated; one cost line per instance per hour.
        interval: seconds between samples (each sample stands for it).
        seed: the random seed; the same arguments give the same fleet.
        start: the first hour (UTC).
        price: the hourly cost of an instance.
        strings: dtype of the string columns: ``"category"``, ``"str"`` or ``"object"``.

    Example:
        >>> fleet = simulate_fleet(gpus=32, hours=24)
        >>> gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"])
    """
    if gpus <= 0 or gpus % GPUS_PER_INSTANCE:
        raise ValueError(f"gpus must be a positive multiple of {GPUS_PER_INSTANCE}, got {gpus}")
    if hours <= 0 or interval <= 0 or 3600 % interval:
        raise ValueError("hours must be positive and interval must divide an hour")
    rng = np.random.default_rng(seed)
    instances = gpus // GPUS_PER_INSTANCE
    steps = hours * 3600 // interval
    per_hour = 3600 // interval
    t0 = pd.Timestamp(start, tz="UTC")
    resource_ids = np.array([f"i-{seed:02x}{k:015x}" for k in range(instances)], dtype=object)
    roles = rng.choice(len(ROLES), size=instances, p=ROLE_WEIGHTS)
    roles[: min(instances, len(ROLES))] = np.arange(min(instances, len(ROLES)))  # every role, even when small

    series = _Series()
    workloads: list[tuple[str, str, str, str, str]] = []  # consumer, team, project, user, job

    def label(consumer: str, team: str, job: str, labelled: bool = True) -> None:
        if labelled:
            workloads.append((consumer, team, f"{team}-{job.split('-')[0]}", f"user{len(workloads) % 17}", job))

    for k in range(instances):
        role = ROLES[roles[k]]
        team = TEAMS[rng.integers(len(TEAMS))]
        if role == "training":
            # One pod holds all 8 GPUs; a third of the jobs end early.
            end = steps if rng.random() < 0.67 else int(rng.integers(steps // 4, steps))
            job = f"train{k}"
            pod = f"{team}/{job}-0"
            util = rng.uniform(0.75, 0.95)
            for d in range(GPUS_PER_INSTANCE):
                series.add(k, d, pod, 1.0, util, 0.0, 0.8 * A100_40GB_BYTES, 0, end)
                series.add(k, d, "", 1.0, 0.0, 0.0, 0.0, end, steps)
            label(pod, team, f"{job}-run")
        elif role == "inference":
            for d in range(GPUS_PER_INSTANCE):
                pod = f"serving/llm-{k}-{d}"
                series.add(k, d, pod, 1.0, 0.4, 0.25, 0.6 * A100_40GB_BYTES, 0, steps)
                label(pod, team, f"llm{k}-serve", labelled=d != 7)  # one pod per instance untagged
        elif role == "notebooks":
            for d in range(GPUS_PER_INSTANCE):
                pods = int(rng.integers(2, 4))
                for p in range(pods):
                    begin = int(rng.integers(0, steps // 2))
                    end = min(steps, begin + int(rng.integers(steps // 6, steps // 2 + 1)))
                    pod = f"jupyter/nb-{k}-{d}-{p}"
                    series.add(k, d, pod, 1.0 / pods, 0.1, 0.05, 0.1 * A100_40GB_BYTES, begin, end)
                    label(pod, team, f"nb{k}-session")
        elif role == "mig":
            for d in range(GPUS_PER_INSTANCE):
                for s, (profile, share, mem_gib) in enumerate(MIG_LAYOUT):
                    slice_team = TEAMS[(k + d + s) % len(TEAMS)]
                    pod = f"{slice_team}/mig-{k}-{d}-{s}-{profile}"
                    series.add(k, d, pod, share, 0.5, 0.2, 0.7 * mem_gib * 2**30, 0, steps)
                    label(pod, slice_team, f"mig{k}-infer")
        else:  # idle: billed, observed, nobody holds it
            for d in range(GPUS_PER_INSTANCE):
                series.add(k, d, "", 1.0, 0.0, 0.0, 0.0, 0, steps)

    cols = {key: np.asarray(values) for key, values in series.cols.items()}
    lengths = cols["end"] - cols["begin"]
    total = int(lengths.sum())
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    step = np.repeat(cols["begin"], lengths) + (np.arange(total) - offsets)
    hour_of_day = (step // per_hour) % 24
    diurnal = np.sin(2 * np.pi * (hour_of_day - 9) / 24)
    noise = rng.normal(0.0, 0.03, total)
    util = np.clip(np.repeat(cols["util"], lengths) + np.repeat(cols["amp"], lengths) * diurnal + noise, 0.0, 1.0)
    util[np.repeat(cols["util"] == 0.0, lengths)] = 0.0

    consumer_values, consumer_codes = np.unique(cols["consumer"], return_inverse=True)
    usage = pd.DataFrame({
        "timestamp": pd.DatetimeIndex(t0.as_unit("ns") + pd.to_timedelta(step * interval, unit="s")),
        "resource_id": _strings(np.repeat(cols["instance"], lengths), resource_ids, strings),
        "device": np.repeat(cols["device"], lengths).astype(np.int32),
        "consumer": _strings(np.repeat(consumer_codes, lengths), consumer_values, strings),
        "share": np.repeat(cols["share"].astype(np.float64), lengths),
        "util": util,
        "mem_used": np.repeat(cols["mem"].astype(np.float64), lengths),
    }, copy=False)

    line_instance = np.repeat(np.arange(instances), hours)
    line_hour = np.tile(np.arange(hours), instances)
    line_start = pd.DatetimeIndex(t0.as_unit("ns") + pd.to_timedelta(line_hour, unit="h"))
    costs = pd.DataFrame({
        "resource_id": _strings(line_instance, resource_ids, strings),
        "start": line_start,
        "end": line_start + pd.Timedelta(hours=1),
        "cost": np.full(instances * hours, float(price)),
        "list_cost": np.full(instances * hours, float(price)),
    })
    inventory = pd.DataFrame({
        "resource_id": _strings(np.repeat(np.arange(instances), GPUS_PER_INSTANCE), resource_ids, strings),
        "device": np.tile(np.arange(GPUS_PER_INSTANCE, dtype=np.int32), instances),
        "mem_capacity": np.full(gpus, float(A100_40GB_BYTES)),
    })
    workload_frame = pd.DataFrame(workloads, columns=["consumer", "team", "project", "user", "job"])
    return Fleet(costs=costs, usage=usage, inventory=inventory, workloads=workload_frame)


def _strings(codes: np.ndarray, values: np.ndarray, kind: str):
    """A string column from codes into `values`, without building per-row strings
    for categoricals."""
    if kind == "category":
        return pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype=object))
    column = values[codes]
    return pd.array(column, dtype="str") if kind == "str" else column.astype(object)
