"""A small simulated GPU fleet for the telemetry tests: the same samples as
DCGM exporter series (OpenMetrics, for promtool backfill) and as the usage
table gpucost should derive from them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

MIB = 1024.0 * 1024.0
GIB = 1024.0 * MIB
MINUTE_NS = 60 * 10**9
HOUR_NS = 60 * MINUTE_NS

NODES = pd.DataFrame({"node": ["node-a", "node-b"],
                      "provider_id": ["aws:///us-east-1a/i-0aaa", "aws:///us-east-1b/i-0bbb"],
                      "resource_id": ["i-0aaa", "i-0bbb"]})
MODEL_A, MODEL_B = "NVIDIA A100-SXM4-40GB", "NVIDIA A10G"
MIG_SHARES = pd.DataFrame({"gpu_model": ["A100-SXM4-40GB", "A100-SXM4-40GB"], "profile": ["3g.20gb", "1g.5gb"],
                           "share": [3 / 7, 1 / 7]})
POD_LABELS = {  # namespace/pod -> (project, team); None = label missing
    "ml/train-0": ("llm", "research"),
    "research/nb-1": ("vision", "research"),
    "research/nb-2": (None, "research"),
    "serving/llm-0": ("chat", "inference"),
    "serving/small-0": ("chat", "inference"),
    "batch/etl-1": ("etl", None),
}


@dataclass
class Series:
    node: str
    gpu: int
    model: str
    pod: str  # "namespace/pod" or ""
    start_min: int
    end_min: int  # exclusive
    util: float  # 0-1 (GPU_UTIL/100 for whole GPUs, GR_ENGINE_ACTIVE for MIG)
    fb_mib: float
    profile: str = ""
    instance: str = ""
    share: float = 1.0  # what gpucost should derive


def fleet() -> list[Series]:
    """Whole GPUs, an idle GPU, two time-sliced pods, MIG slices (one pod
    ending mid-hour, one free slice), and a pod ending mid-hour followed by
    the GPU reported free."""
    return [
        Series("node-a", 0, MODEL_A, "ml/train-0", 0, 60, 0.90, 20480),
        Series("node-a", 1, MODEL_A, "", 0, 60, 0.0, 0),
        Series("node-a", 2, MODEL_A, "research/nb-1", 0, 60, 0.60, 4096, share=0.5),
        Series("node-a", 2, MODEL_A, "research/nb-2", 0, 60, 0.60, 2048, share=0.5),
        Series("node-a", 3, MODEL_A, "serving/llm-0", 0, 60, 0.50, 10240, "3g.20gb", "1", share=3 / 7),
        Series("node-a", 3, MODEL_A, "serving/small-0", 0, 30, 0.25, 2048, "1g.5gb", "2", share=1 / 7),
        Series("node-a", 3, MODEL_A, "", 0, 60, 0.0, 0, "1g.5gb", "9", share=1 / 7),
        Series("node-b", 0, MODEL_B, "batch/etl-1", 0, 20, 0.75, 8192),
        Series("node-b", 0, MODEL_B, "", 20, 60, 0.0, 0),
    ]


def _labels(s: Series) -> str:
    ns, _, pod = s.pod.partition("/")
    parts = [f'gpu="{s.gpu}"', f'UUID="GPU-{s.node}-{s.gpu}"', f'device="nvidia{s.gpu}"', f'modelName="{s.model}"']
    if s.profile:
        parts += [f'GPU_I_PROFILE="{s.profile}"', f'GPU_I_ID="{s.instance}"']
    parts += [f'Hostname="{s.node}"', f'container="{"c" if pod else ""}"', f'namespace="{ns}"', f'pod="{pod}"']
    return ",".join(parts)


def openmetrics(t0_ns: int) -> str:
    """The fleet as OpenMetrics (exporter <= 4.8 names and units), plus
    kube-state-metrics' kube_pod_labels and kube_node_info."""
    families: dict[str, list[str]] = {"DCGM_FI_DEV_GPU_UTIL": [], "DCGM_FI_PROF_GR_ENGINE_ACTIVE": [],
                                      "DCGM_FI_DEV_FB_USED": []}
    for s in fleet():
        util_metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE" if s.profile else "DCGM_FI_DEV_GPU_UTIL"
        util_value = s.util if s.profile else s.util * 100
        for m in range(s.start_min, s.end_min):
            ts = (t0_ns + m * MINUTE_NS) / 1e9
            families[util_metric].append(f"{util_metric}{{{_labels(s)}}} {util_value:g} {ts:.3f}")
        for m in range(s.start_min, s.end_min):
            ts = (t0_ns + m * MINUTE_NS) / 1e9
            families["DCGM_FI_DEV_FB_USED"].append(f"DCGM_FI_DEV_FB_USED{{{_labels(s)}}} {s.fb_mib:g} {ts:.3f}")
    kube_pod, kube_node = [], []
    for consumer, (project, team) in POD_LABELS.items():
        ns, _, pod = consumer.partition("/")
        extra = "".join(f',{k}="{v}"' for k, v in (("label_project_id", project), ("label_team_id", team)) if v)
        for m in range(0, 60, 5):
            kube_pod.append(f'kube_pod_labels{{namespace="{ns}",pod="{pod}"{extra}}} 1 {(t0_ns + m * MINUTE_NS) / 1e9:.3f}')
    for _, row in NODES.iterrows():
        for m in range(0, 60, 5):
            kube_node.append(f'kube_node_info{{node="{row.node}",provider_id="{row.provider_id}",'
                             f'kernel_version="6.1.0"}} 1 {(t0_ns + m * MINUTE_NS) / 1e9:.3f}')
    families["kube_pod_labels"] = kube_pod
    families["kube_node_info"] = kube_node
    out = []
    for name, lines in families.items():
        out.append(f"# TYPE {name} gauge")
        out.extend(lines)
    out.append("# EOF")
    return "\n".join(out) + "\n"


def expected_usage(t0_ns: int) -> pd.DataFrame:
    """The samples gpucost should derive from the series (in memory, by hand)."""
    rows = []
    resource = dict(zip(NODES.node, NODES.resource_id))
    for s in fleet():
        for m in range(s.start_min, s.end_min):
            rows.append((t0_ns + m * MINUTE_NS, resource[s.node], s.gpu, s.pod, s.share, s.util, s.fb_mib * MIB))
    frame = pd.DataFrame(rows, columns=["timestamp", "resource_id", "device", "consumer", "share", "util",
                                        "mem_used"])
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    frame["duration"] = 60.0
    return frame


def costs(t0_ns: int) -> pd.DataFrame:
    start = pd.Timestamp(t0_ns, tz="UTC")
    return pd.DataFrame({"resource_id": ["i-0aaa", "i-0bbb"], "start": [start, start],
                         "end": [start + pd.Timedelta(hours=1)] * 2, "cost": [32.77 / 2, 1.006]})


def inventory() -> pd.DataFrame:
    return pd.DataFrame({"resource_id": ["i-0aaa"] * 4 + ["i-0bbb"], "device": [0, 1, 2, 3, 0],
                         "mem_capacity": [40 * GIB] * 4 + [24 * GIB]})


def workloads() -> pd.DataFrame:
    return pd.DataFrame({"consumer": list(POD_LABELS),
                         "project": [p for p, _ in POD_LABELS.values()],
                         "team": [t for _, t in POD_LABELS.values()]})
