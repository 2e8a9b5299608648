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

from gpucost.model import Purchase
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

    Examples:
        >>> from gpucost.simulate import simulate_fleet
        >>> fleet = simulate_fleet(gpus=24, hours=6, interval=300)
        >>> len(fleet.costs), len(fleet.usage), len(fleet.inventory)
        (18, 1946, 24)
        >>> by_team = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"])
        >>> by_team[["team", "cost", "gpu_hours"]].round(2)
                     team    cost  gpu_hours
        0        __idle__  283.38      69.18
        1  __unlabelled__   24.58       6.00
        2          recsys  172.04      42.00
        3        research   60.70      14.82
        4          vision   49.16      12.00
        >>> print(round(by_team["cost"].sum(), 2), round(fleet.costs["cost"].sum(), 2))   # money in == money out
        589.86 589.86
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
                held = []
                for p in range(pods):
                    begin = int(rng.integers(0, steps // 2))
                    end = min(steps, begin + int(rng.integers(steps // 6, steps // 2 + 1)))
                    pod = f"jupyter/nb-{k}-{d}-{p}"
                    series.add(k, d, pod, 1.0 / pods, 0.1, 0.05, 0.1 * A100_40GB_BYTES, begin, end)
                    label(pod, team, f"nb{k}-session")
                    held.append((begin, end))
                # DCGM reports every GPU: the time no session holds it is observed free.
                for begin, end in _gaps(held, steps):
                    series.add(k, d, "", 1.0, 0.0, 0.0, 0.0, begin, end)
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


# ---------------------------------------------------------------------------
# The demo fleet: one month modelled on real fleets (docs/demo.md).
# ---------------------------------------------------------------------------

DEMO_START = "2026-03-01"  # a Sunday
DEMO_ACCOUNT = "111122223333"
DEMO_REGION = "us-east-1"
# Hourly rates. p4d.24xlarge and g5.xlarge On-Demand are the catalog's cited
# us-east-1 prices; the others are illustrative (see docs/demo.md).
DEMO_RATES = {
    "p4d.24xlarge": 32.77, "g5.xlarge": 1.006, "g5.12xlarge": 5.672, "p3.8xlarge": 12.24,
}
DEMO_RI_RATE = 20.50          # p4d.24xlarge 1-year No Upfront reserved instance, effective $/h
DEMO_SP_COMMITMENT = 5.50     # Compute Savings Plan commitment, $/h
DEMO_SP_RATE_G5 = 0.6036      # g5.xlarge at the savings-plan rate (40% off On-Demand)
DEMO_SPOT_RATE_P4D = 11.00    # p4d.24xlarge spot price, $/h (illustrative)
DEMO_RI_ARN = f"arn:aws:ec2:{DEMO_REGION}:{DEMO_ACCOUNT}:reserved-instances/ri-0a1b2c3d"
DEMO_SP_ARN = f"arn:aws:savingsplans::{DEMO_ACCOUNT}:savingsplan/sp-7e8f9a0b"
DEMO_BUDGETS = (  # team, monthly amount in dollars (alerts at 80% and 100%)
    ("llm", 18_000.0), ("chat", 22_000.0), ("search", 4_500.0), ("vision", 13_000.0),
    ("research", 2_500.0), ("data-science", 800.0), ("fraud", 300.0), ("ads", 300.0),
)
GIB = 2**30

# Kinds of utilisation signal (columns of _Series.kind).
_CONST, _DIURNAL, _TRAFFIC, _DEVICE = 0, 1, 2, 3


@dataclass
class DemoFleet(Fleet):
    """The demo month: the four allocation tables plus what the files and the
    other analyses need.

    Attributes:
        resources: one row per billed resource: ``resource_id, node,
            instance_type, role, pricing, team`` (the instance's own tag).
        bill: the cost lines with their billing columns (``charge_category,
            pricing, commitment_id, commitment_status, billed_cost,
            effective_cost, list_cost, service, tags, instance_type``), one
            row per FOCUS row; ``costs`` is its allocation view.
        interruptions: spot interruption warnings (``time, resource_id, kind,
            job, attempt``).
        budgets: ``key, value, amount, thresholds`` (monthly, dollars; key
            ``team``).
        rates: purchase options per instance type (``instance_type, kind,
            hourly, term_years``) for the commitment advisor.
        start, end: the month.
        interval: seconds between samples.
    """

    resources: pd.DataFrame = None
    bill: pd.DataFrame = None
    interruptions: pd.DataFrame = None
    budgets: pd.DataFrame = None
    rates: pd.DataFrame = None
    start: pd.Timestamp = None
    end: pd.Timestamp = None
    interval: int = 300


def simulate_demo_month(*, seed: int = 0, start: str = DEMO_START, days: int = 31,
                        interval: int = 300) -> DemoFleet:
    """The demo fleet: a month of a small AWS GPU fleet with the waste real
    fleets have (docs/demo.md). Deterministic: the same arguments give the
    same tables. About 1 s.

    - 4x p4d.24xlarge shared by LLM training (twice-weekly 18-hour bursts on
      6 GPUs each) and chat inference (2 GPUs each), ad-hoc experiments from
      unlabelled pods: about 22% average GPU utilisation.
    - 8x g5.xlarge serving a ranker 24/7 under a Compute Savings Plan sized
      a little too big; weekend traffic drops to 15% of the weekday peak.
    - A p4d.24xlarge under a reserved instance, stopped 3 days for
      maintenance (the reservation unused meanwhile); GPU 0 split into MIG
      slices for four teams, the other 7 GPUs run batch image tagging.
    - A g5.12xlarge of time-sliced notebook pods (working hours only).
    - Spot p4d.24xlarge training jobs interrupted 2-3 times before completing,
      each attempt on a new instance; one interruption in the first hour
      (AWS does not bill it).
    - A p3.8xlarge forgotten over a weekend after a two-hour experiment.
    - Storage and NAT gateway lines with no GPU.
    """
    if interval <= 0 or 3600 % interval:
        raise ValueError("interval must divide an hour")
    if days < 7:
        raise ValueError("days must be at least 7 (the fleet has weekly rhythms)")
    rng = np.random.default_rng(seed)
    per_hour = 3600 // interval
    steps = days * 24 * per_hour
    t0 = pd.Timestamp(start, tz="UTC")
    if t0 != t0.normalize():
        raise ValueError("start must be midnight UTC")

    def step_of(day: int, hour: float) -> int:
        return int(round((day * 24 + hour) * per_hour))

    resources: list[dict] = []
    # Billing episodes: resource index, first step, end step (exclusive), pricing.
    episodes: list[tuple[int, int, int, str]] = []

    def resource(kind: str, role: str, pricing: str, team: str | None) -> int:
        k = len(resources)
        rid = f"i-0{((k + 1) * 0x9E3779B97F4A7C15 + seed * 0x632BE59BD9B4E019) % 16**16:016x}"
        resources.append({"resource_id": rid, "node": f"ip-10-0-{k // 200}-{k % 200 + 10}", "instance_type": kind,
                          "role": role, "pricing": pricing, "team": team})
        return k

    series = _Series()
    series.cols["kind"] = []
    workloads: dict[str, dict] = {}

    def add(k: int, d: int, consumer: str, share: float, util: float, amp: float, mem: float, begin: int,
            end: int, kind: int = _CONST) -> None:
        before = len(series.cols["begin"])
        series.add(k, d, consumer, share, util, amp, mem, begin, end)
        if len(series.cols["begin"]) > before:
            series.cols["kind"].append(kind)

    def label(consumer: str, **labels: str | None) -> None:
        workloads[consumer] = {"consumer": consumer, **labels}

    weekdays = [(t0 + pd.Timedelta(days=day)).day_of_week for day in range(days)]  # Monday = 0

    # 1. Four p4d.24xlarge shared by training bursts, chat inference, ad-hoc experiments.
    for i in range(4):
        k = resource("p4d.24xlarge", "shared-training", Purchase.ON_DEMAND, "llm")
        episodes.append((k, 0, steps, Purchase.ON_DEMAND))
        busy = np.zeros((8, steps), dtype=bool)
        for d in (6, 7):
            pod = f"chat/chat-api-{i}-{d - 6}"
            add(k, d, pod, 1.0, 0.30, 0.12, 22 * GIB, 0, steps, _DIURNAL)
            label(pod, team="chat", project="chat-api", user="svc-chat", job="chat-api")
            busy[d] = True
        for day in range(days):
            if weekdays[day] in (1, 4):  # Tuesday, Friday: 18-hour training burst from 06:00
                b, e = step_of(day, 6), min(steps, step_of(day, 24))
                job = f"llm-pretrain-{day + 1:02d}"
                for d in range(6):
                    pod = f"llm/{job}-worker-{i}"
                    add(k, d, pod, 1.0, 0.85, 0.0, 36 * GIB, b, e)
                    busy[d, b:e] = True
                label(f"llm/{job}-worker-{i}", team="llm", project="llm-pretrain", user="svc-train", job=job)
            elif weekdays[day] in (0, 2, 3):  # ad-hoc experiments, nobody labelled them
                b, e = step_of(day, 10), step_of(day, 16)
                for d in (4, 5):
                    pod = f"default/exp-{day + 1:02d}-{i}"
                    add(k, d, pod, 1.0, 0.35, 0.0, 18 * GIB, b, e)
                    busy[d, b:e] = True
        for d in range(8):
            _free_spans(add, k, d, busy[d])

    # 2. Eight g5.xlarge serving the ranker under the savings plan.
    for i in range(8):
        k = resource("g5.xlarge", "inference", "commitment", "search")
        episodes.append((k, 0, steps, Purchase.SAVINGS_PLAN))
        pod = f"search/ranker-{i}"
        add(k, 0, pod, 1.0, 0.69, 0.0, 14 * GIB, 0, steps, _TRAFFIC)
        if i == 7:
            label(pod, project="ranker", user="svc-ranker")  # the team label was forgotten
        else:
            label(pod, team="search", project="ranker", user="svc-ranker", job="ranker")

    # 3. The reserved p4d.24xlarge: MIG on GPU 0, batch tagging on 1-7, stopped for maintenance.
    k = resource("p4d.24xlarge", "mig", "commitment", "vision")
    stop_b, stop_e = step_of(17, 0), step_of(20, 0)
    for b, e in ((0, stop_b), (stop_e, steps)):
        episodes.append((k, b, e, Purchase.RESERVED))
        for s, (profile, share, mem_gib) in enumerate(MIG_LAYOUT):
            team = ("search", "vision", "fraud", "ads")[s]
            pod = f"{team}/{team}-mig-{profile}-{s}"
            add(k, 0, pod, share, 0.45, 0.15, 0.7 * mem_gib * GIB, b, e, _DIURNAL)
            label(pod, team=team, project=f"{team}-online", user=f"svc-{team}", job=f"{team}-online")
        for d in range(1, 8):
            pod = f"vision/tagger-{d}"
            add(k, d, pod, 1.0, 0.55, 0.0, 30 * GIB, b, e)
            label(pod, team="vision", project="image-tagging", user="svc-vision", job="image-tagging")

    # 4. Time-sliced notebooks on a g5.12xlarge, working hours.
    k = resource("g5.12xlarge", "notebooks", Purchase.ON_DEMAND, "data-science")
    episodes.append((k, 0, steps, Purchase.ON_DEMAND))
    users = ("ana", "bo", "chen", "dev", "eli", "fay", "gus", "hana")
    for d in range(4):
        busy = np.zeros(steps, dtype=bool)
        for day in range(days):
            if weekdays[day] >= 5:
                continue
            b, e = step_of(day, 9), step_of(day, 18)
            pods = 2 + (day + d) % 2
            for p in range(pods):
                user = users[(d * 3 + p + day) % len(users)]
                pod = f"jupyter/nb-{user}-{d}-{p}"
                add(k, d, pod, 1.0 / pods, 0.12, 0.0, 6 * GIB, b, e, _DEVICE)
                if user == "gus":
                    label(pod, user="gus")  # no team, no project
                else:
                    label(pod, team="data-science" if user < "e" else "research", project="notebooks", user=user)
            busy[b:e] = True
        _free_spans(add, k, d, busy)

    # 5. Spot training: attempts interrupted before one completes (hours from day start).
    interruptions = []
    jobs = (("resnet-sweep", 2, [(9.0, 5 + 1 / 3, True), (14.5, 2 / 3, True), (15.5, 9.0, False)]),
            ("bert-finetune", 9, [(8.0, 3 + 1 / 6, True), (11.5, 6.0, True), (17.75, 2.25, True), (20.25, 7.0, False)]),
            ("diffusion-ablation", 23, [(10.0, 4.0, True), (14.5, 10.0, False)]))
    for job, day, attempts in jobs:
        for a, (hour, length, interrupted) in enumerate(attempts, start=1):
            k = resource("p4d.24xlarge", "spot-training", Purchase.SPOT, "research")
            b, e = step_of(day, hour), step_of(day, hour + length)
            episodes.append((k, b, e, "spot-interrupted-first-hour" if interrupted and length < 1 else Purchase.SPOT))
            pod = f"research/{job}-attempt-{a}"
            for d in range(8):
                add(k, d, pod, 1.0, 0.8, 0.0, 34 * GIB, b, e)
            label(pod, team="research", project="model-zoo", user="ana", job=job, attempt=str(a))
            if interrupted:
                interruptions.append({"time": t0 + pd.Timedelta(seconds=e * interval - 120),
                                      "resource_id": resources[k]["resource_id"], "job": job, "attempt": a})

    # 6. A p3.8xlarge forgotten over a weekend: two hours of work, then nobody until Monday.
    friday = next(day for day in range(days) if weekdays[day] == 4 and day >= 10)
    k = resource("p3.8xlarge", "forgotten", Purchase.ON_DEMAND, "research")
    b, w, e = step_of(friday, 16), step_of(friday, 18), step_of(friday + 3, 10)
    episodes.append((k, b, e, Purchase.ON_DEMAND))
    for d in range(4):
        add(k, d, "research/exp-bo-lora", 1.0, 0.6, 0.0, 12 * GIB, b, w)
        add(k, d, "", 1.0, 0.0, 0.0, 0.0, w, e)
    label("research/exp-bo-lora", team="research", project="lora-tests", user="bo", job="exp-bo-lora")

    resource_frame = pd.DataFrame(resources)
    usage = _demo_usage(series, resource_frame, steps, per_hour, interval, t0, rng)
    bill = _demo_bill(resource_frame, episodes, steps, per_hour, interval, t0, days)
    costs = bill[["resource_id", "start", "end", "cost", "list_cost", "pricing", "instance_type"]].reset_index(drop=True)
    from gpucost.catalog import inventory as build_inventory  # the catalog knows each type's GPUs
    inventory = build_inventory(resource_frame[["resource_id", "instance_type"]])
    label_columns = ["consumer", "team", "project", "user", "job", "attempt"]
    workload_frame = pd.DataFrame(list(workloads.values())).reindex(columns=label_columns)
    workload_frame = workload_frame.astype(object).where(workload_frame.notna(), None)
    budgets = pd.DataFrame([{"key": "team", "value": t, "amount": a, "thresholds": "80%,100%"}
                            for t, a in DEMO_BUDGETS])
    rates = pd.DataFrame([
        {"instance_type": "p4d.24xlarge", "kind": Purchase.ON_DEMAND, "hourly": DEMO_RATES["p4d.24xlarge"], "term_years": None},
        {"instance_type": "p4d.24xlarge", "kind": Purchase.RESERVED, "hourly": DEMO_RI_RATE, "term_years": 1},
        {"instance_type": "p4d.24xlarge", "kind": Purchase.SAVINGS_PLAN, "hourly": 22.94, "term_years": 1},
        {"instance_type": "p4d.24xlarge", "kind": Purchase.SPOT, "hourly": DEMO_SPOT_RATE_P4D, "term_years": None},
        {"instance_type": "g5.xlarge", "kind": Purchase.ON_DEMAND, "hourly": DEMO_RATES["g5.xlarge"], "term_years": None},
        {"instance_type": "g5.xlarge", "kind": Purchase.RESERVED, "hourly": 0.62, "term_years": 1},
        {"instance_type": "g5.xlarge", "kind": Purchase.SAVINGS_PLAN, "hourly": DEMO_SP_RATE_G5, "term_years": 1},
        {"instance_type": "g5.12xlarge", "kind": Purchase.ON_DEMAND, "hourly": DEMO_RATES["g5.12xlarge"], "term_years": None},
        {"instance_type": "p3.8xlarge", "kind": Purchase.ON_DEMAND, "hourly": DEMO_RATES["p3.8xlarge"], "term_years": None},
    ])
    events = pd.DataFrame(interruptions)
    events.insert(2, "kind", "interruption")
    return DemoFleet(costs=costs, usage=usage, inventory=inventory, workloads=workload_frame,
                     resources=resource_frame, bill=bill, interruptions=events, budgets=budgets, rates=rates,
                     start=t0, end=t0 + pd.Timedelta(days=days), interval=interval)


def _gaps(spans: list[tuple[int, int]], steps: int) -> list[tuple[int, int]]:
    """The parts of [0, steps) that no span [begin, end) covers."""
    gaps, cursor = [], 0
    for begin, end in sorted(spans):
        if begin > cursor:
            gaps.append((cursor, begin))
        cursor = max(cursor, end)
    if cursor < steps:
        gaps.append((cursor, steps))
    return gaps


def _free_spans(add, k: int, d: int, busy: np.ndarray) -> None:
    """Samples with no consumer wherever device d of resource k is not held."""
    edges = np.flatnonzero(np.diff(np.concatenate(([1], busy.astype(np.int8), [1]))))
    for b, e in zip(edges[::2], edges[1::2]):
        add(k, d, "", 1.0, 0.0, 0.0, 0.0, int(b), int(e))


def _demo_usage(series: _Series, resources: pd.DataFrame, steps: int, per_hour: int, interval: int,
                t0: pd.Timestamp, rng: np.random.Generator) -> pd.DataFrame:
    cols = {key: np.asarray(values) for key, values in series.cols.items()}
    lengths = cols["end"] - cols["begin"]
    total = int(lengths.sum())
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    step = np.repeat(cols["begin"], lengths) + (np.arange(total) - offsets)
    hours = step / per_hour
    hour_of_day = hours % 24
    day_of_week = ((hours // 24).astype(np.int64) + t0.day_of_week) % 7
    kind = np.repeat(cols["kind"], lengths)
    base = np.repeat(cols["util"], lengths)
    amp = np.repeat(cols["amp"], lengths)
    diurnal = np.sin(2 * np.pi * (hour_of_day - 9) / 24)
    util = base + amp * diurnal
    # Traffic: weekday shape between 30% and 100% of the peak, weekends at 15% of it.
    shape = 0.65 + 0.35 * np.sin(2 * np.pi * (hour_of_day - 9) / 24)
    traffic = np.where(day_of_week >= 5, 0.15, shape)
    util = np.where(kind == _TRAFFIC, base * traffic, util)
    util = util + rng.normal(0.0, 0.03, total)
    # Time-sliced pods report the device's utilisation: one signal per (resource, device, step).
    device_key = (np.repeat(cols["instance"], lengths).astype(np.int64) * 64
                  + np.repeat(cols["device"], lengths)) * steps + step
    shared = kind == _DEVICE
    if shared.any():
        keys, inverse = np.unique(device_key[shared], return_inverse=True)
        device_util = np.clip(base[shared][0] + rng.normal(0.0, 0.05, len(keys)), 0.0, 1.0)
        util[shared] = device_util[inverse]
    util = np.round(np.clip(util, 0.0, 1.0), 2)  # DCGM reports whole percents
    util[np.repeat(cols["consumer"] == "", lengths)] = 0.0

    consumer_values, consumer_codes = np.unique(cols["consumer"], return_inverse=True)
    ids = resources["resource_id"].to_numpy(dtype=object)
    mem = np.round(np.repeat(cols["mem"].astype(np.float64), lengths) / 2**20) * 2**20  # whole MiB, as DCGM
    frame = pd.DataFrame({
        "timestamp": pd.DatetimeIndex(t0.as_unit("ns") + pd.to_timedelta(step * interval, unit="s")),
        "resource_id": _strings(np.repeat(cols["instance"], lengths), ids, "category"),
        "device": np.repeat(cols["device"], lengths).astype(np.int32),
        "consumer": _strings(np.repeat(consumer_codes, lengths), consumer_values, "category"),
        "share": np.repeat(cols["share"].astype(np.float64), lengths),
        "util": util,
        "mem_used": mem,
        "duration": np.full(total, float(interval)),
    }, copy=False)
    return frame.sort_values(["timestamp", "resource_id", "device", "consumer"], kind="stable",
                             ignore_index=True)


def _demo_bill(resources: pd.DataFrame, episodes: list, steps: int, per_hour: int, interval: int,
               t0: pd.Timestamp, days: int) -> pd.DataFrame:
    """One row per billed amount, as a FOCUS bill has them (amortized view)."""
    rows: list[dict] = []
    hour_ns = 3600 * 10**9
    step_ns = interval * 10**9
    t0_ns = t0.value

    def line(rid, start_ns, end_ns, **values):
        rows.append({"resource_id": rid, "start": start_ns, "end": end_ns, **values})

    running_g5 = np.zeros(days * 24, dtype=np.int64)
    ri_used = np.zeros(days * 24, dtype=bool)
    for k, b, e, how in episodes:
        res = resources.iloc[k]
        rate = DEMO_RATES[res["instance_type"]]
        tags = {"team-id": res["team"]} if res["team"] else {}
        b_ns, e_ns = t0_ns + b * step_ns, t0_ns + e * step_ns
        first_hour, last_hour = (b_ns - t0_ns) // hour_ns, -(-(e_ns - t0_ns) // hour_ns)
        for h in range(first_hour, last_hour):
            s, t = max(b_ns, t0_ns + h * hour_ns), min(e_ns, t0_ns + (h + 1) * hour_ns)
            hours = (t - s) / hour_ns
            common = dict(instance_type=res["instance_type"], tags=tags, quantity=hours,
                          list_cost=rate * hours, service="Amazon Elastic Compute Cloud",
                          charge_category="Usage", commitment_id=None, commitment_status=None)
            if how == Purchase.ON_DEMAND:
                line(res["resource_id"], s, t, pricing=Purchase.ON_DEMAND, cost=rate * hours, billed_cost=rate * hours,
                     **common)
            elif how == Purchase.SAVINGS_PLAN:
                running_g5[h] += 1
                line(res["resource_id"], s, t, pricing=Purchase.SAVINGS_PLAN, cost=DEMO_SP_RATE_G5 * hours, billed_cost=0.0,
                     **(common | dict(commitment_id=DEMO_SP_ARN, commitment_status="Used")))
            elif how == Purchase.RESERVED:
                ri_used[h] = True
                line(res["resource_id"], s, t, pricing=Purchase.RESERVED, cost=DEMO_RI_RATE * hours, billed_cost=0.0,
                     **(common | dict(commitment_id=DEMO_RI_ARN, commitment_status="Used")))
            else:  # spot; AWS does not bill an instance it interrupts in the first hour
                price = 0.0 if how == "spot-interrupted-first-hour" else DEMO_SPOT_RATE_P4D * hours
                line(res["resource_id"], s, t, pricing=Purchase.SPOT, cost=price, billed_cost=price, **common)
    no_resource = dict(instance_type=None, quantity=1.0, list_cost=0.0)
    for h in range(days * 24):
        s, t = t0_ns + h * hour_ns, t0_ns + (h + 1) * hour_ns
        for arn, fee, used, kind in (
                (DEMO_RI_ARN, DEMO_RI_RATE, DEMO_RI_RATE if ri_used[h] else 0.0, Purchase.RESERVED),
                (DEMO_SP_ARN, DEMO_SP_COMMITMENT, min(DEMO_SP_COMMITMENT, running_g5[h] * DEMO_SP_RATE_G5),
                 Purchase.SAVINGS_PLAN)):
            # The commitment's recurring fee (billed, amortized into the usage) and its unused part.
            line(arn, s, t, cost=0.0, billed_cost=fee, charge_category="Purchase", commitment_id=arn,
                 commitment_status=None, service="Amazon Elastic Compute Cloud" if arn == DEMO_RI_ARN
                 else "Savings Plans for AWS Compute usage", tags={}, pricing=kind, **no_resource)
            if fee - used > 1e-9:
                line(arn, s, t, cost=fee - used, billed_cost=0.0, charge_category="Usage", commitment_id=arn,
                     commitment_status="Unused", service="Amazon Elastic Compute Cloud" if arn == DEMO_RI_ARN
                     else "Savings Plans for AWS Compute usage", tags={}, pricing=kind, **no_resource)
    for day in range(days):
        s, t = t0_ns + day * 24 * hour_ns, t0_ns + (day + 1) * 24 * hour_ns
        line(f"arn:aws:s3:::acme-ml-checkpoints", s, t, cost=38.40, billed_cost=38.40, list_cost=38.40,
             pricing=Purchase.ON_DEMAND, instance_type=None, quantity=1670.0, service="Amazon Simple Storage Service",
             charge_category="Usage", commitment_id=None, commitment_status=None,
             tags={"team-id": "llm", "project-id": "llm-pretrain"})
        line(f"arn:aws:ec2:{DEMO_REGION}:{DEMO_ACCOUNT}:natgateway/nat-0ml", s, t, cost=21.60, billed_cost=21.60,
             list_cost=21.60, pricing=Purchase.ON_DEMAND, instance_type=None, quantity=480.0,
             service="Amazon Virtual Private Cloud", charge_category="Usage", commitment_id=None,
             commitment_status=None, tags={})
    bill = pd.DataFrame(rows)
    bill["start"] = pd.to_datetime(bill["start"], unit="ns", utc=True)
    bill["end"] = pd.to_datetime(bill["end"], unit="ns", utc=True)
    bill["effective_cost"] = bill["cost"]
    return bill.sort_values(["start", "resource_id", "charge_category"], kind="stable", ignore_index=True)
