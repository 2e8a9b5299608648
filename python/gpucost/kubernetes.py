"""Workload labels and node -> instance mapping from Kubernetes
(docs/telemetry.md): ``kubectl get pods/nodes -o json`` dumps, or
kube-state-metrics' ``kube_pod_labels`` / ``kube_node_info`` through
Prometheus. JSON is parsed in C++.

Example:
    >>> workloads = gpucost.kubernetes.read_pods("pods.json")
    >>> nodes = gpucost.kubernetes.read_nodes("nodes.json")
    >>> gpucost.kubernetes.unlabelled(workloads)   # the tagging gap
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.errors import InvalidInputError
from gpucost.frames import Table, nodes_frame, pod_gpus_frame, workloads_frame
from gpucost.prometheus import PrometheusClient, to_ns

__all__ = ["DEFAULT_LABELS", "fetch_nodes", "fetch_workloads", "read_nodes", "read_pod_gpus", "read_pods", "unlabelled"]

#: workloads column -> Kubernetes label key
DEFAULT_LABELS: dict[str, str] = {"project": "project-id", "team": "team-id", "user": "user-id", "job": "job-id"}


def _keys(labels: Mapping[str, str] | None) -> list[tuple[str, str]]:
    labels = DEFAULT_LABELS if labels is None else labels
    return [(str(c), str(k)) for c, k in labels.items()]


def _read(path: str | PathLike) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_pods(path: str | PathLike, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Workloads (``consumer`` = "namespace/pod" plus one column per entry of
    ``labels``, column -> label key) from ``kubectl get pods -A -o json``.
    A pod without a label has None in that column."""
    return workloads_frame(_core.kubectl_pods(_read(path), str(path), _keys(labels)))


def read_nodes(path: str | PathLike) -> pd.DataFrame:
    """Nodes (``node, resource_id, provider, zone, instance_type``) from
    ``kubectl get nodes -o json``: the resource id is the instance id in
    ``spec.providerID`` (``aws:///us-east-1a/i-0abc`` -> ``i-0abc``)."""
    return nodes_frame(_core.kubectl_nodes(_read(path), str(path)))


def read_pod_gpus(path: str | PathLike, nodes: str | PathLike | None = None,
                  claims: str | PathLike | None = None) -> pd.DataFrame:
    """The GPUs each pod holds (docs/telemetry.md, "GPU holdings"), from
    ``kubectl get pods -A -o json``: one row per pod and GPU resource with
    ``consumer`` ("namespace/pod"), ``node``, ``resource``
    (``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``, ``nvidia.com/gpu.shared``,
    ``dra``), ``kind`` (``device-plugin``, ``mig``, ``time-slicing``, ``dra``),
    ``claim`` and ``device`` (DRA), ``count`` (units the pod holds),
    ``share`` (the fraction of one GPU a unit is: 1, ``g/7`` for a MIG slice,
    ``1/R`` for a time-sliced replica, ``1/k`` for a DRA claim shared by k
    pods), ``gpus`` (count x share) and ``start``/``end`` (NaT while running
    or not started).

    ``nodes`` (``kubectl get nodes -o json``) gives the GPU operator's node
    labels that decide shares: ``nvidia.com/gpu.replicas`` (time-slicing) and
    ``nvidia.com/mig.strategy=single`` with the ``nvidia.com/gpu.product``
    profile. ``claims`` (``kubectl get resourceclaims -A -o json``) gives the
    devices of DRA claims. Where the dumps do not say, ``share`` is NaN; it
    is never guessed. ``frame.attrs["kubernetes"]["pods_without_gpus"]``
    counts pods holding none; ``node_labels`` and ``claims`` say whether
    those dumps were given (without node labels a time-sliced or single-
    strategy MIG ``nvidia.com/gpu`` reads as a whole GPU)."""
    nodes_text = _read(nodes) if nodes is not None else ""
    claims_text = _read(claims) if claims is not None else ""
    frame = pod_gpus_frame(_core.kubectl_pod_gpus(_read(path), str(path), nodes_text, str(nodes or ""), claims_text,
                                                  str(claims or "")))
    # Without the node labels, time-slicing under the plain resource name and
    # MIG's single strategy look like whole GPUs: say what was known.
    frame.attrs["kubernetes"].update(node_labels=nodes is not None, claims=claims is not None)
    return frame


def _client(url: Any, **http) -> PrometheusClient:
    return url if isinstance(url, PrometheusClient) else PrometheusClient(url, **http)


def _range_bodies(client: PrometheusClient, metric: str, start: Any, end: Any, step: float) -> list:
    start_ns, end_ns = to_ns(start, "start"), to_ns(end, "end")
    # last_over_time over one step sees every sample, however short-lived the
    # pod or node; instants start+step, ..., end cover the range.
    query = f"last_over_time({metric}[{int(step)}s])"
    bodies = client.query_range_chunks(query, start_ns + int(step * 1e9), end_ns + int(step * 1e9), step)
    return [(b, f"{client.url} {metric} (call {i + 1})", metric) for i, b in enumerate(bodies)]


def fetch_workloads(url: Any, start: Any, end: Any, labels: Mapping[str, str] | None = None, *,
                    step: float = 3600, **http) -> pd.DataFrame:
    """Workloads from kube-state-metrics' ``kube_pod_labels`` in Prometheus
    (label keys are exported as ``label_<key>``, e.g. ``label_team_id``; they
    must be allowed with ``--metric-labels-allowlist``). A pod whose labels
    changed keeps the latest."""
    client = _client(url, **http)
    return workloads_frame(_core.kube_pod_labels(_range_bodies(client, "kube_pod_labels", start, end, step),
                                                 _keys(labels)))


def fetch_nodes(url: Any, start: Any, end: Any, *, step: float = 3600, **http) -> pd.DataFrame:
    """Nodes from kube-state-metrics' ``kube_node_info`` (its ``provider_id``)."""
    client = _client(url, **http)
    return nodes_frame(_core.kube_node_info(_range_bodies(client, "kube_node_info", start, end, step)))


def unlabelled(workloads: Any, required: Sequence[str] = ("project", "team")) -> pd.DataFrame:
    """The pods missing any required label: ``consumer`` and ``missing`` (the
    missing columns, comma-separated), sorted by consumer. Its length is the
    count. Empty strings count as missing."""
    t = Table(workloads, "workloads")
    consumer = np.asarray(t.column("consumer"), dtype=object)
    missing = np.zeros((len(consumer), len(required)), dtype=bool)
    for j, name in enumerate(required):
        if not t.has(name):
            raise InvalidInputError(f"workloads: missing required column '{name}'")
        values = pd.Series(np.asarray(t.column(name), dtype=object))
        missing[:, j] = (values.isna() | (values.astype(str) == "")).to_numpy()
    rows = missing.any(axis=1)
    names = np.asarray(required, dtype=object)
    text = pd.Series([", ".join(names[m]) for m in missing[rows]], dtype=object)
    out = pd.DataFrame({"consumer": consumer[rows], "missing": text.to_numpy()})
    return out.sort_values("consumer", kind="stable").reset_index(drop=True)
