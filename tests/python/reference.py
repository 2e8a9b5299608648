"""A deliberately plain implementation of docs/semantics.md, line by line and
sample by sample, used as the oracle in tests. Slow; small inputs only."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd

RESERVED = ("__idle__", "__unattributed__", "__unobserved__", "__unlabelled__")
PSEUDO = ("__idle__", "__unattributed__", "__unobserved__")
METRICS = ["cost", "idle_cost", "list_cost", "gpu_hours", "effective_gpu_hours", "mem_gib_hours"]


def _ns(values) -> np.ndarray:
    s = pd.Series(values)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return s.dt.tz_localize(None).astype("datetime64[ns]").to_numpy().view("int64") \
            if getattr(s.dt, "tz", None) is not None else s.astype("datetime64[ns]").to_numpy().view("int64")
    return s.to_numpy(dtype=np.int64)


def _period(start_ns: int, freq: str) -> int:
    t = pd.Timestamp(start_ns, unit="ns", tz="UTC")
    if freq == "h":
        return t.floor("h").value
    if freq == "D":
        return t.floor("D").value
    return pd.Timestamp(year=t.year, month=t.month, day=1, tz="UTC").value


def _median(values: list[float]) -> float:
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def reference_interval(usage) -> float:
    """SEMANTICS 1.3: the median of the series' spacings (60 s when none has one)."""
    spacings = []
    ts = _ns(usage["timestamp"])
    keys = zip(usage["resource_id"].astype(str), usage["device"], usage["consumer"].astype(object).fillna(""))
    series: dict[tuple, list[int]] = defaultdict(list)
    for key, t in zip(keys, ts):
        series[key].append(int(t))
    for times in series.values():
        distinct = sorted(set(times))
        diffs = [b - a for a, b in zip(distinct, distinct[1:])]
        if diffs:
            spacings.append(_median(diffs) / 1e9)
    return _median(spacings) if spacings else 60.0


def reference_allocate(costs, usage, inventory, workloads=None, *, basis="allocated", alpha=0.5, idle="keep",
                       interval=None, by=("consumer",), freq=None) -> pd.DataFrame:
    by = [by] if isinstance(by, str) else list(by)
    usage = usage.drop_duplicates(ignore_index=True)  # rows read twice (SEMANTICS 1.3)
    if interval is None and "duration" not in usage.columns:
        interval = reference_interval(usage)
    currencies = costs["currency"].astype(str).to_numpy() if "currency" in costs.columns else None
    if currencies is not None and "currency" not in by:
        by = by + ["currency"]
    primary = costs["primary"].astype(bool).to_numpy() if "primary" in costs.columns else np.ones(len(costs), bool)
    quantity = costs["quantity_hours"].to_numpy(float) if "quantity_hours" in costs.columns \
        else np.full(len(costs), np.nan)
    devices: dict[str, int] = defaultdict(int)
    mem_cap: dict[str, float] = defaultdict(float)
    for r, m in zip(inventory["resource_id"].astype(str), inventory["mem_capacity"]):
        devices[r] += 1
        mem_cap[r] += float(m)
    labels: dict[str, dict[str, str]] = {}
    label_cols: list[str] = []
    if workloads is not None:
        label_cols = [c for c in workloads.columns if c != "consumer"]
        for _, row in workloads.iterrows():
            labels[str(row["consumer"])] = {c: str(row[c]) for c in label_cols}

    ts = _ns(usage["timestamp"])
    dur = (np.rint(usage["duration"].to_numpy(dtype=float) * 1e9).astype(np.int64)
           if "duration" in usage.columns else np.full(len(usage), int(round(interval * 1e9))))
    u_res = usage["resource_id"].astype(str).to_numpy()
    u_con = usage["consumer"].astype(object).where(usage["consumer"].notna(), "").astype(str).to_numpy()
    share = usage["share"].to_numpy(float)
    util = usage["util"].to_numpy(float)
    mem = usage["mem_used"].to_numpy(float)

    starts, ends = _ns(costs["start"]), _ns(costs["end"])
    c_res = costs["resource_id"].astype(object).where(costs["resource_id"].notna(), "").astype(str).to_numpy()
    amounts = costs["cost"].to_numpy(float)
    lists = costs["list_cost"].to_numpy(float) if "list_cost" in costs.columns else np.zeros(len(costs))

    def key_of(consumer: str, line: int) -> tuple:
        out = []
        for b in by:
            if b == "consumer":
                out.append(consumer)
            elif b == "currency":
                out.append(currencies[line])
            elif b == "resource_id":
                out.append(c_res[line])
            elif b == "period":
                out.append(_period(int(starts[line]), freq))
            elif consumer in PSEUDO:
                out.append(consumer)
            else:
                out.append(labels.get(consumer, {}).get(b, "__unlabelled__"))
        return tuple(out)

    rows: dict[tuple, dict[str, float]] = defaultdict(lambda: dict.fromkeys(METRICS, 0.0))
    for i in range(len(costs)):
        r, s, e, c, lc = c_res[i], int(starts[i]), int(ends[i]), amounts[i], lists[i]
        if devices.get(r, 0) == 0:
            g = rows[key_of("__unattributed__", i)]
            g["cost"] += c
            g["list_cost"] += lc
            continue
        billed = (e - s) if np.isnan(quantity[i]) else min(e - s, quantity[i] * 3.6e12)
        cap = devices[r] * billed
        mcap = mem_cap[r] * billed
        hours = 1.0 if primary[i] else 0.0
        on_r = np.flatnonzero(u_res == r)
        if not any(min(int(ts[j]) + int(dur[j]), e) > max(int(ts[j]), s) for j in on_r):
            g = rows[key_of("__unobserved__", i)]  # no sample: neither used nor idle
            g["cost"] += c
            g["list_cost"] += lc
            g["gpu_hours"] += hours * cap / 3.6e12
            continue
        held, used, memk = defaultdict(float), defaultdict(float), defaultdict(float)
        for j in on_r[u_con[on_r] != ""]:
            o = min(int(ts[j]) + int(dur[j]), e) - max(int(ts[j]), s)
            if o > 0:
                k = u_con[j]
                held[k] += share[j] * o
                used[k] += share[j] * util[j] * o
                memk[k] += mem[j] * o
        phi = {}
        for k in held:
            if basis == "allocated":
                phi[k] = held[k] / cap
            elif basis == "used":
                phi[k] = used[k] / cap
            else:
                phi[k] = alpha * held[k] / cap + (1 - alpha) * memk[k] / mcap
        total = sum(phi.values())
        if total > 1:
            phi = {k: v / total for k, v in phi.items()}
        idle_cost = 0.0 if total >= 1 else c * (1 - total)
        idle_list = 0.0 if total >= 1 else lc * (1 - total)
        share_idle = idle == "share" and total > 0
        for k in held:
            g = rows[key_of(k, i)]
            g["cost"] += c * phi[k]
            g["list_cost"] += lc * phi[k]
            if share_idle:
                part = phi[k] / min(total, 1.0)
                g["cost"] += idle_cost * part
                g["list_cost"] += idle_list * part
                g["idle_cost"] += idle_cost * part
            g["gpu_hours"] += hours * held[k] / 3.6e12
            g["effective_gpu_hours"] += hours * used[k] / 3.6e12
            g["mem_gib_hours"] += hours * memk[k] / 2**30 / 3.6e12
        if not share_idle:
            g = rows[key_of("__idle__", i)]
            g["cost"] += idle_cost
            g["idle_cost"] += idle_cost
            g["list_cost"] += idle_list
            g["gpu_hours"] += hours * max(0.0, cap - sum(held.values())) / 3.6e12

    records = [dict(zip(by, key)) | values for key, values in rows.items()]
    frame = pd.DataFrame(records, columns=by + METRICS)
    if "list_cost" not in costs.columns:
        frame = frame.drop(columns="list_cost")
    eff = frame["effective_gpu_hours"].to_numpy()
    with np.errstate(all="ignore"):
        frame["cost_per_effective_gpu_hour"] = np.where(eff == 0, math.nan, frame["cost"].to_numpy() / eff)
    if "period" in by:
        frame["period"] = pd.to_datetime(frame["period"].astype("int64"), unit="ns", utc=True)
    return frame.sort_values(by, kind="stable").reset_index(drop=True)


def assert_frames_close(actual: pd.DataFrame, expected: pd.DataFrame, rel: float = 1e-9, abs_: float = 1e-9) -> None:
    """Same rows, same keys, numbers equal to `rel` relative or `abs_` absolute."""
    assert list(actual.columns) == list(expected.columns), (list(actual.columns), list(expected.columns))
    assert len(actual) == len(expected), f"{len(actual)} rows != {len(expected)}\n{actual}\n{expected}"
    for col in expected.columns:
        a, e = actual[col], expected[col]
        if pd.api.types.is_float_dtype(e.dtype):
            av, ev = a.to_numpy(float), e.to_numpy(float)
            both_nan = np.isnan(av) & np.isnan(ev)
            close = np.isclose(av, ev, rtol=rel, atol=abs_) | both_nan
            assert close.all(), f"column {col}: {av[~close]} != {ev[~close]}"
        else:
            assert list(a.astype(str)) == list(e.astype(str)), f"column {col}: {list(a)} != {list(e)}"
