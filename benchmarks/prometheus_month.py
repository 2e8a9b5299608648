"""A month of saved Prometheus answers as an EKS team saves them (issue 29).

``write_month(directory)`` writes one ``/api/v1/query_range`` answer per day
and metric (``DCGM_FI_DEV_GPU_UTIL`` and ``DCGM_FI_DEV_FB_USED``, step 60 s):
31 days x 2 = 62 files, about 400 MB for the default 32 nodes x 8 GPUs.
What real dcgm-exporter + kube-prometheus-stack answers hold:

- labels as the GPU operator's ServiceMonitor (``honorLabels: true``) gives
  them, sorted as Prometheus returns them: ``DCGM_FI_DRIVER_VERSION``,
  ``Hostname``, ``UUID``, ``container``, ``device``, ``endpoint``, ``gpu``,
  ``instance``, ``job``, ``modelName``, ``namespace``, ``pci_bus_id``,
  ``pod``, ``service`` (and ``GPU_I_ID``, ``GPU_I_PROFILE`` on MIG);
- a free GPU carries the exporter's own pod (``nvidia-dcgm-exporter-xxxxx``);
- pod churn: training pods of 2-30 h, inference pods of 1-5 days, free time
  between; when a pod goes, its series lingers 0-5 steps (Prometheus'
  lookback) beside the next holder's, so the GPU is time-sliced for those
  minutes, and the free series lingers likewise when a pod arrives;
- MIG: ``mig_nodes`` nodes of A100 80 GB, each GPU 7 x 1g.10gb or
  3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb; MIG instances print no GPU_UTIL,
  only memory (dcgm-exporter's behaviour);
- gaps: each node's exporter misses 0-2 stretches of 2-6 steps a day;
- jitter: each day's query started 0-999 ms past midnight (the cron job's own
  delay), so the evaluation instants carry milliseconds and the gaps across
  midnight are not 60 s.

Values are stored as Prometheus prints them: strings of integers for
utilisation (%) and memory (MiB). ``--small`` sizes (2 days, 4 nodes) are
what the tests use.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

STEP = 60
METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")
START_S = 1790812800  # 2026-10-01T00:00:00Z
TEAMS = ("vision", "nlp", "recsys", "research", "platform", "speech")
MIG_LAYOUTS = (tuple(("1g.10gb", 7 + i) for i in range(7)), (("3g.40gb", 1), ("2g.20gb", 5), ("1g.10gb", 9), ("1g.10gb", 10)))


@dataclass
class Month:
    files: list[Path]
    days: int
    nodes: int
    gpus: int
    bytes: int


def _stable(*parts: object) -> int:
    """A hash that is the same in every process (str hashes are salted)."""
    return zlib.crc32("|".join(map(str, parts)).encode())


def _pod_name(rng: np.random.Generator, team: str, kind: str) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    return f"{team}-{kind}-{''.join(rng.choice(list(letters), 5))}"


def _holders(rng: np.random.Generator, steps: int) -> list[tuple[int, int, str, str]]:
    """(begin, end, namespace, pod) runs over [0, steps): pods with free time between."""
    out, t = [], int(rng.integers(0, 180))
    while t < steps:
        team = TEAMS[int(rng.integers(len(TEAMS)))]
        kind = "train" if rng.random() < 0.6 else "serve"
        length = int(rng.integers(120, 1800) if kind == "train" else rng.integers(1440, 7200))
        out.append((t, min(t + length, steps), team, _pod_name(rng, team, kind)))
        t += length + int(rng.integers(10, 360))
    return out


def write_month(directory: str | Path, *, days: int = 31, nodes: int = 32, gpus_per_node: int = 8,
                mig_nodes: int = 4, seed: int = 0) -> Month:
    """Writes the month's answers into ``directory``; returns the files in
    day then metric order."""
    rng = np.random.default_rng(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    steps_per_day = 86400 // STEP
    steps = days * steps_per_day
    offsets_ms = rng.integers(0, 1000, days)
    # Per node: its labels, its exporter pod, its gaps; per GPU (or MIG instance) its holders.
    units = []  # (node, labels without __name__ and pod labels, base holder runs, has_util)
    node_gaps = []
    for n in range(nodes):
        host = f"ip-10-0-{n // 8}-{10 + n}.ec2.internal"
        mig = n < mig_nodes
        model = "NVIDIA A100-SXM4-80GB" if mig else "NVIDIA H100 80GB HBM3"
        exporter = f"nvidia-dcgm-exporter-{''.join(rng.choice(list('bcdfghjklmnpqrstvwxz2456789'), 5))}"
        gaps = np.zeros(steps, dtype=bool)
        for d in range(days):
            for _ in range(int(rng.integers(0, 3))):
                at = d * steps_per_day + int(rng.integers(0, steps_per_day - 6))
                gaps[at:at + int(rng.integers(2, 7))] = True
        node_gaps.append(gaps)
        for g in range(gpus_per_node):
            common = {"DCGM_FI_DRIVER_VERSION": "570.124.06", "Hostname": host,
                      "UUID": f"GPU-{n:04x}{g:04x}-3b4d-4e5f-8a6b-7c8d9e0f1a2b"}
            tail = {"device": f"nvidia{g}", "endpoint": "gpu-metrics", "gpu": str(g),
                    "instance": f"10.0.{n // 8}.{10 + n}:9400", "job": "nvidia-dcgm-exporter", "modelName": model}
            rest = {"pci_bus_id": f"00000000:{0x18 + g:02X}:00.0", "service": "nvidia-dcgm-exporter"}
            instances = [(None, None)] if not mig else MIG_LAYOUTS[int(rng.integers(2))]
            for profile, iid in instances:
                labels = dict(common)
                if profile is not None:
                    labels = {"DCGM_FI_DRIVER_VERSION": common["DCGM_FI_DRIVER_VERSION"], "GPU_I_ID": str(iid),
                              "GPU_I_PROFILE": profile, "Hostname": host, "UUID": common["UUID"]}
                runs = _holders(rng, steps) if rng.random() < 0.85 else []
                units.append((n, labels, tail, rest, exporter, runs, profile is None))
    files, total = [], 0
    for d in range(days):
        lo, hi = d * steps_per_day, (d + 1) * steps_per_day
        base = START_S + d * 86400
        stamps = [f"[{base + (i * STEP)}.{offsets_ms[d]:03d}," for i in range(steps_per_day)]
        for metric in METRICS:
            series_text = []
            for n, labels, tail, rest, exporter, runs, has_util in units:
                if metric == "DCGM_FI_DEV_GPU_UTIL" and not has_util:
                    continue
                present = ~node_gaps[n][lo:hi]
                # The holder at each step, each run lingering 0-5 steps past its end (lookback).
                series_runs = []
                free = np.ones(steps_per_day, dtype=bool)
                for k, (b, e, ns, pod) in enumerate(runs):
                    linger = (_stable(n, pod) % 6) if e < steps else 0
                    b2, e2 = max(b, lo), min(e + linger, hi)
                    if b2 >= e2:
                        continue
                    series_runs.append((b2 - lo, e2 - lo, ns, pod, "trainer" if "train" in pod else "server"))
                    free[max(b, lo) - lo:max(min(e, hi) - lo, 0)] = False
                # The free series, lingering 0-3 steps into each pod's first minutes.
                free_mask = free.copy()
                for b, e, ns, pod, _ in series_runs:
                    if b > 0:
                        free_mask[b:b + (_stable(pod, n) % 4)] = True
                rows = [(free_mask, {"container": "nvidia-dcgm-exporter", "namespace": "gpu-operator",
                                     "pod": exporter}, None)]
                for b, e, ns, pod, container in series_runs:
                    m = np.zeros(steps_per_day, dtype=bool)
                    m[b:e] = True
                    rows.append((m, {"container": container, "namespace": ns, "pod": pod}, pod))
                for mask, pod_labels, pod in rows:
                    idx = np.flatnonzero(mask & present)
                    if not len(idx):
                        continue
                    if metric == "DCGM_FI_DEV_GPU_UTIL":
                        level = 0 if pod is None else 30 + _stable(pod) % 65
                        vals = np.clip(level + rng.integers(-8, 9, len(idx)), 0, 100) if pod else np.zeros(len(idx), int)
                    else:
                        level = 0 if pod is None else 4000 + _stable(pod) % 70000
                        vals = np.maximum(level + rng.integers(-500, 500, len(idx)), 0) if pod else np.zeros(len(idx), int)
                    metric_labels = {**labels, "__name__": metric, **pod_labels, **tail, **rest}
                    metric_labels = dict(sorted(metric_labels.items()))
                    points = ",".join(f'{stamps[i]}"{v}"]' for i, v in zip(idx.tolist(), vals.tolist()))
                    series_text.append(f'{{"metric":{json.dumps(metric_labels, separators=(",", ":"))},'
                                       f'"values":[{points}]}}')
            body = '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(series_text) + "]}}"
            name = "gpu_util" if metric.endswith("UTIL") else "fb_used"
            path = directory / f"dcgm_{name}_{d + 1:02d}.json"
            path.write_text(body)
            total += len(body)
            files.append(path)
    return Month(files, days, nodes, nodes * gpus_per_node, total)
