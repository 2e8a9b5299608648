"""A realistic GPU fleet for benchmarks (issue 27): the shapes telemetry has.

``realistic_fleet(gpus=3000)`` models a day of 8-GPU instances (p4de/p5-like,
80 GiB per GPU) billed hourly, scraped every 60 s, with what real scrapes hold:

- training instances running jobs that start and stop at odd minutes, the GPUs
  reported free (consumer "") before, between and after them;
- inference instances, one pod per GPU, some rolled out to a new pod mid-hour;
- time-sliced GPUs: 2-4 pods with share 1/k, each with its own hours (some
  instances report share 1 for every pod: over-subscribed lines);
- MIG GPUs (1/8 of the fleet), 7 x 1g or 3g + 2g + 1g + 1g, with free slices:
  a free slice is a sample with consumer "" and share g/7, so free slices of
  one profile are rows equal in every column, which the engine counts as rows
  read twice (SEMANTICS 1.3);
- idle instances, billed and reported free all day; spot instances whose
  hourly price varies;
- jitter: each node scrapes at its own phase (0-999 ms past the minute) and a
  fifth of its scrapes come 1-500 ms late, the same offset for every GPU of the
  node at that scrape. Instants are whole milliseconds (integer ns).

Most consecutive differences of a series are exactly 60 s (both scrapes on
time), and late scrapes shift a difference up or down by the same amounts, so
the median of series spacings, the interval the engine infers, is exactly 60 s:
:func:`inferred_interval` checks it the way SEMANTICS 1.3 defines it. A fully held
line is still held a few hundred ms beyond its capacity now and then (its first
sample's late offset comes in from the hour before, its last one's goes out),
which the engine normalises: about a tenth of the lines are over-subscribed.

The usage rows come in four orders (:data:`ORDERS`): ``node`` (every GPU of a
node at each scrape, nodes in turn: dcgm-exporter scrapes, nvidia-smi logs),
``series`` (one series after another in time order: a Prometheus range query),
``time`` (the whole fleet at each instant: a lake table sorted by time) and
``shuffled``; with string columns as pandas ``category`` or pandas-3 ``str``
(what ``read_parquet``/``read_csv`` give).

``realistic_fleet(gpus=1000, churn_minutes=5)`` is the high-cardinality fleet:
whole GPUs, a new pod every 5 minutes on each (288,000 consumers a day).

Everything per sample is vectorised; the Python loops run over instances,
devices and jobs (about 20,000 segments at 3,000 GPUs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpucost.simulate import Fleet  # the four input tables, usage in one order

__all__ = ["ORDERS", "STRINGS", "INTERVAL_S", "Fleet", "FleetData", "realistic_fleet", "inferred_interval"]

ORDERS = ("node", "series", "time", "shuffled")
STRINGS = ("category", "str")
INTERVAL_S = 60
GPUS_PER_INSTANCE = 8
GPU_MEM = 80 * 2**30
START = "2026-03-02"
# (instance type, on-demand $/h): 8 x A100 80 GB and 8 x H100 80 GB.
INSTANCE_TYPES = (("p4de.24xlarge", 40.97), ("p5.48xlarge", 98.32))
TEAMS = ("vision", "nlp", "recsys", "research", "platform", "speech")
ROLES = ("training", "inference", "timeslice", "mig", "idle")
ROLE_WEIGHTS = (0.40, 0.20, 0.15, 0.125, 0.125)
# MIG layouts of one GPU: compute slices (g of 7) per slice.
MIG_LAYOUTS = ((1, 1, 1, 1, 1, 1, 1), (3, 2, 1, 1))
LATE_FRACTION = 0.2  # scrapes that come late; the rest are on the node's phase


class _Segments:
    """One consumer on one device over steps [begin, end): a run of samples."""

    FIELDS = ("inst", "dev", "slot", "consumer", "share", "util", "mem", "begin", "end")

    def __init__(self) -> None:
        self.cols: dict[str, list] = {k: [] for k in self.FIELDS}
        self.names: dict[str, int] = {"": 0}

    def add(self, inst: int, dev: int, slot: int, consumer: str, share: float, util: float, mem: float,
            begin: int, end: int) -> None:
        if end <= begin:
            return
        code = self.names.setdefault(consumer, len(self.names))
        for key, value in zip(self.FIELDS, (inst, dev, slot, code, share, util, mem, begin, end)):
            self.cols[key].append(value)

    def free(self, inst: int, dev: int, slot: int, share: float, spans: list[tuple[int, int]], steps: int) -> None:
        """Consumer "" wherever no span holds the device (or slice)."""
        cursor = 0
        for begin, end in sorted(spans):
            self.add(inst, dev, slot, "", share, 0.0, 0.0, cursor, begin)
            cursor = max(cursor, end)
        self.add(inst, dev, slot, "", share, 0.0, 0.0, cursor, steps)


class FleetData:
    """The fleet as columns in generation order; :meth:`frames` gives the
    tables with usage in any of :data:`ORDERS` and string kind."""

    def __init__(self, seg: dict[str, np.ndarray], consumers: np.ndarray, resource_ids: np.ndarray,
                 costs: dict[str, np.ndarray], workloads: dict[str, np.ndarray], hours: int, seed: int):
        rng = np.random.default_rng(seed + 1)
        instances = len(resource_ids)
        steps = hours * 3600 // INTERVAL_S
        lengths = seg["end"] - seg["begin"]
        total = int(lengths.sum())
        which = np.repeat(np.arange(len(lengths)), lengths)
        self.step = (seg["begin"][which] + np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths))
        self.inst = seg["inst"][which].astype(np.int32)
        self.dev = seg["dev"][which].astype(np.int32)
        self.slot = seg["slot"][which].astype(np.int8)
        self.consumer = seg["consumer"][which].astype(np.int32)
        self.share = seg["share"][which]
        busy = seg["util"][which]
        self.util = np.where(busy > 0, np.clip(busy + rng.normal(0.0, 0.05, total), 0.0, 1.0), 0.0)
        self.mem_used = seg["mem"][which]
        # Scrape instants: the node's phase, plus a late offset on some scrapes,
        # shared by every GPU of the node at that scrape; whole milliseconds.
        phase = rng.integers(0, 1000, instances)
        late = np.where(rng.random((instances, steps)) < LATE_FRACTION, rng.integers(1, 501, (instances, steps)), 0)
        offset_ms = phase[self.inst] + late[self.inst, self.step]
        t0 = pd.Timestamp(START, tz="UTC").value
        self.timestamp = t0 + self.step * (INTERVAL_S * 10**9) + offset_ms * 10**6
        self.consumers = consumers
        self.resource_ids = resource_ids
        self.costs = costs
        self.workloads = workloads
        self.hours = hours
        self.gpus = instances * GPUS_PER_INSTANCE
        self.seed = seed

    def __len__(self) -> int:
        return len(self.timestamp)

    def order(self, name: str) -> np.ndarray:
        """Row permutation of usage for one of :data:`ORDERS`."""
        if name == "node":  # each scrape, node after node, its GPUs and slices
            return np.lexsort((self.slot, self.dev, self.inst, self.step))
        if name == "series":  # (resource, device, consumer) after another, in time
            return np.lexsort((self.slot, self.step, self.consumer, self.dev, self.inst))
        if name == "time":
            return np.lexsort((self.slot, self.dev, self.inst, self.timestamp))
        if name == "shuffled":
            return np.random.default_rng(self.seed + 2).permutation(len(self))
        raise ValueError(f"order: expected one of {ORDERS}, got {name!r}")

    def frames(self, order: str, strings: str = "category") -> Fleet:
        idx = self.order(order)
        usage = pd.DataFrame({
            "timestamp": pd.DatetimeIndex(self.timestamp[idx].view("datetime64[ns]"), tz="UTC"),
            "resource_id": _strings(self.inst[idx], self.resource_ids, strings),
            "device": self.dev[idx],
            "consumer": _strings(self.consumer[idx], self.consumers, strings),
            "share": self.share[idx],
            "util": self.util[idx],
            "mem_used": self.mem_used[idx],
        }, copy=False)
        costs = self.costs
        start = pd.DatetimeIndex(costs["start"].view("datetime64[ns]"), tz="UTC")
        cost_frame = pd.DataFrame({
            "resource_id": _strings(costs["inst"], self.resource_ids, strings),
            "start": start,
            "end": start + pd.Timedelta(hours=1),
            "cost": costs["cost"],
        })
        instances = len(self.resource_ids)
        inventory = pd.DataFrame({
            "resource_id": _strings(np.repeat(np.arange(instances), GPUS_PER_INSTANCE), self.resource_ids, strings),
            "device": np.tile(np.arange(GPUS_PER_INSTANCE, dtype=np.int32), instances),
            "mem_capacity": np.full(instances * GPUS_PER_INSTANCE, float(GPU_MEM)),
        })
        wl = self.workloads
        labels = {}
        for column in ("team", "project"):
            values, codes = np.unique(wl[column], return_inverse=True)
            labels[column] = _strings(codes, values, strings)
        workloads = pd.DataFrame({"consumer": _strings(wl["consumer"], self.consumers, strings), **labels})
        return Fleet(costs=cost_frame, usage=usage, inventory=inventory, workloads=workloads)

    def describe(self) -> str:
        free = self.consumer == 0
        return (f"{self.gpus:,} GPUs x {self.hours} h at {INTERVAL_S} s: {len(self):,} samples "
                f"({free.mean():.0%} free), {len(self.costs['cost']):,} cost lines, "
                f"{len(self.consumers) - 1:,} consumers")


def _strings(codes: np.ndarray, values: np.ndarray, kind: str):
    """A string column from codes into sorted `values`: a categorical (no
    per-row strings), or pandas-3 ``str`` (Arrow-backed, as read_parquet gives)."""
    if kind == "category":
        return pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype=object))
    if kind == "str":
        return pc.take(pa.array(values, pa.string()), pa.array(codes)).to_pandas()
    raise ValueError(f"strings: expected one of {STRINGS}, got {kind!r}")


def _name(rng: np.random.Generator, prefix: str) -> str:
    """A Kubernetes-like pod name: prefix, replica-set hash, pod suffix."""
    return f"{prefix}-{int(rng.integers(16**9)):09x}-{int(rng.integers(16**5)):05x}"


def realistic_fleet(gpus: int = 3000, hours: int = 24, *, seed: int = 0,
                    churn_minutes: int | None = None) -> FleetData:
    """The fleet described in the module docstring (``churn_minutes``: the
    high-cardinality fleet, a new pod on every GPU every so many minutes)."""
    if gpus <= 0 or gpus % GPUS_PER_INSTANCE:
        raise ValueError(f"gpus must be a positive multiple of {GPUS_PER_INSTANCE}, got {gpus}")
    rng = np.random.default_rng(seed)
    instances = gpus // GPUS_PER_INSTANCE
    steps = hours * 3600 // INTERVAL_S
    # Sorted, so that instance k is category k.
    resource_ids = np.sort(np.array([f"i-{int(v):017x}" for v in rng.integers(2**62, size=instances)], dtype=object))
    kinds = rng.integers(len(INSTANCE_TYPES), size=instances)
    price = np.array([p for _, p in INSTANCE_TYPES])[kinds]
    spot = rng.random(instances) < 0.2
    line_inst = np.repeat(np.arange(instances), hours)
    hourly = np.where(spot[line_inst], price[line_inst] * rng.uniform(0.30, 0.45, instances * hours),
                      price[line_inst])
    t0 = pd.Timestamp(START, tz="UTC").value
    costs = {"inst": line_inst, "start": t0 + np.tile(np.arange(hours), instances) * 3600 * 10**9,
             "cost": np.round(hourly, 4)}
    if churn_minutes is not None:
        seg, names, workloads = _churn_segments(instances, steps, churn_minutes, rng)
    else:
        seg, names, workloads = _role_segments(instances, steps, rng)
    # Sorted categories, as astype("category") and read_parquet give.
    order = np.argsort(names, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    seg["consumer"] = rank[seg["consumer"]]
    workloads["consumer"] = rank[workloads["consumer"]]
    return FleetData(seg, names[order], resource_ids, costs, workloads, hours, seed)


def _role_segments(instances: int, steps: int, rng: np.random.Generator):
    counts = np.floor(np.array(ROLE_WEIGHTS) * instances).astype(int)
    counts[0] += instances - counts.sum()
    roles = rng.permutation(np.repeat(np.arange(len(ROLES)), counts))
    s = _Segments()
    labels: dict[str, tuple[str, str]] = {}

    def label(pod: str, team: str, project: str) -> None:
        if rng.random() >= 0.04:  # a few pods nobody labelled
            labels[pod] = (team, f"{team}-{project}")

    def minutes(lo: int, hi: int) -> int:
        return int(rng.integers(lo, max(lo + 1, hi)))

    for k in range(instances):
        role = ROLES[roles[k]]
        team = TEAMS[rng.integers(len(TEAMS))]
        if role == "training":
            # Jobs on all 8 GPUs, one after another, starting and ending at odd minutes.
            spans, cursor = [], 0 if rng.random() < 0.5 else minutes(5, 180)
            while cursor < steps:
                end = min(steps, cursor + minutes(40, 16 * 60))
                project = f"train{int(rng.integers(40))}"
                spans.append((cursor, end, _name(rng, f"{team}/{project}"), rng.uniform(0.6, 0.97)))
                label(spans[-1][2], team, project)
                cursor = end + minutes(3, 150)
            for d in range(GPUS_PER_INSTANCE):
                for begin, end, pod, util in spans:
                    s.add(k, d, 0, pod, 1.0, util, 0.85 * GPU_MEM, begin, end)
                s.free(k, d, 0, 1.0, [(b, e) for b, e, _, _ in spans], steps)
        elif role == "inference":
            for d in range(GPUS_PER_INSTANCE):
                project = f"serve{int(rng.integers(12))}"
                cut = minutes(1, steps) if rng.random() < 0.3 else steps  # a rollout mid-day
                for begin, end in ((0, cut), (cut, steps)):
                    pod = _name(rng, f"serving/{project}")
                    s.add(k, d, 0, pod, 1.0, rng.uniform(0.2, 0.6), 0.6 * GPU_MEM, begin, end)
                    label(pod, team, project)
        elif role == "timeslice":
            misreported = rng.random() < 0.2  # every pod reports share 1: over-subscribed lines
            for d in range(GPUS_PER_INSTANCE):
                pods = int(rng.integers(2, 5))
                spans = []
                for p in range(pods):
                    begin = minutes(0, steps - 30)
                    end = min(steps, begin + minutes(30, steps // 2))
                    pod = _name(rng, f"jupyter/nb-{team}")
                    s.add(k, d, p, pod, 1.0 if misreported else 1.0 / pods, rng.uniform(0.05, 0.4),
                          GPU_MEM / pods / 2, begin, end)
                    label(pod, team, "notebooks")
                    spans.append((begin, end))
                s.free(k, d, pods, 1.0, spans, steps)
        elif role == "mig":
            for d in range(GPUS_PER_INSTANCE):
                layout = MIG_LAYOUTS[rng.integers(len(MIG_LAYOUTS))]
                for slot, g in enumerate(layout):
                    draw = rng.random()
                    if draw < 0.25:  # free all day
                        spans = []
                    elif draw < 0.7:
                        spans = [(0, steps)]
                    else:
                        begin = minutes(0, steps - 60)
                        spans = [(begin, min(steps, begin + minutes(60, steps)))]
                    for begin, end in spans:
                        pod = _name(rng, f"{team}/mig-infer")
                        s.add(k, d, slot, pod, g / 7, rng.uniform(0.2, 0.8), 0.6 * g / 8 * GPU_MEM, begin, end)
                        label(pod, team, "mig-infer")
                    s.free(k, d, slot, g / 7, spans, steps)
        else:  # idle: billed, reported free all day
            for d in range(GPUS_PER_INSTANCE):
                s.add(k, d, 0, "", 1.0, 0.0, 0.0, 0, steps)
    seg = {k: np.asarray(v) for k, v in s.cols.items()}
    seg["share"] = seg["share"].astype(np.float64)
    names = np.array(list(s.names), dtype=object)
    pods = [p for p in labels if p in s.names]  # a span cut to nothing added no pod
    workloads = {"consumer": np.array([s.names[p] for p in pods], dtype=np.int64),
                 "team": np.array([labels[p][0] for p in pods], dtype=object),
                 "project": np.array([labels[p][1] for p in pods], dtype=object)}
    return seg, names, workloads


def _churn_segments(instances: int, steps: int, churn: int, rng: np.random.Generator):
    """Whole GPUs, a new pod on each every `churn` minutes (batch jobs)."""
    per_gpu = -(-steps // churn)
    gpus = instances * GPUS_PER_INSTANCE
    gpu = np.repeat(np.arange(gpus), per_gpu)
    j = np.tile(np.arange(per_gpu), gpus)
    pods = gpus * per_gpu
    names = np.array([""] + [f"batch/job-{g:05d}-{i:03d}-{h:06x}" for g, i, h in
                             zip(gpu.tolist(), j.tolist(), rng.integers(16**6, size=pods).tolist())], dtype=object)
    seg = {"inst": gpu // GPUS_PER_INSTANCE, "dev": gpu % GPUS_PER_INSTANCE, "slot": np.zeros(pods, np.int8),
           "consumer": np.arange(1, pods + 1), "share": np.ones(pods), "util": rng.uniform(0.3, 0.95, pods),
           "mem": np.full(pods, 0.5 * GPU_MEM), "begin": j * churn, "end": np.minimum(steps, (j + 1) * churn)}
    team = np.array(TEAMS, dtype=object)[rng.integers(len(TEAMS), size=pods)]
    workloads = {"consumer": np.arange(1, pods + 1), "team": team,
                 "project": team + "-batch" + (np.arange(pods) % 7).astype(str).astype(object)}
    return seg, names, workloads


def inferred_interval(fleet: FleetData) -> float:
    """SEMANTICS 1.3 on the fleet's columns: the median over series (resource,
    device, consumer) of the median positive difference between consecutive
    distinct timestamps. For checking the fleet, not timed."""
    series = (fleet.inst.astype(np.int64) * GPUS_PER_INSTANCE + fleet.dev) * len(fleet.consumers) + fleet.consumer
    idx = np.lexsort((fleet.timestamp, series))
    key, t = series[idx], fleet.timestamp[idx]
    gap = np.diff(t)
    keep = (key[1:] == key[:-1]) & (gap > 0)
    spacing = pd.Series(gap[keep] / 1e9).groupby(key[1:][keep]).median()
    return float(spacing.median()) if len(spacing) else 60.0
