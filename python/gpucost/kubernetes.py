"""Workload labels and node -> instance mapping from Kubernetes
(docs/telemetry.md): ``kubectl get pods/nodes -o json`` dumps, or
kube-state-metrics' ``kube_pod_labels`` / ``kube_node_info`` through
Prometheus. JSON is parsed in C++.

Typical use::

    workloads = gpucost.kubernetes.read_pods("pods.json")
    nodes = gpucost.kubernetes.read_nodes("nodes.json")
    gpucost.kubernetes.unlabelled(workloads)   # the tagging gap

(each function has an example that runs).
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
    A pod without a label has None in that column.

    Examples:
        >>> import json
        >>> from pathlib import Path
        >>> pods = {"items": [
        ...     {"metadata": {"namespace": "ml", "name": "train-0", "labels": {"team-id": "research", "project-id": "llm"}},
        ...      "spec": {"nodeName": "ip-10-0-1-17",
        ...               "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        ...      "status": {"startTime": "2026-03-01T10:00:00Z"}},
        ...     {"metadata": {"namespace": "web", "name": "infer-0", "labels": {"team-id": "product"}},
        ...      "spec": {"nodeName": "ip-10-0-1-17",
        ...               "containers": [{"name": "s", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]},
        ...      "status": {"startTime": "2026-03-01T10:00:00Z"}}]}
        >>> _ = Path("pods.json").write_text(json.dumps(pods))   # what kubectl get pods -A -o json prints
        >>> gpucost.kubernetes.read_pods("pods.json")
              consumer project      team  user   job
        0   ml/train-0     llm  research  None  None
        1  web/infer-0     NaN   product  None  None
        >>> gpucost.kubernetes.read_pods("pods.json", labels={"team": "team-id"})
              consumer      team
        0   ml/train-0  research
        1  web/infer-0   product
    """
    return workloads_frame(_core.kubectl_pods(_read(path), str(path), _keys(labels)))


def read_nodes(path: str | PathLike) -> pd.DataFrame:
    """Nodes (``node, resource_id, provider, zone, instance_type``) from
    ``kubectl get nodes -o json``: the resource id is the instance id in
    ``spec.providerID`` (``aws:///us-east-1a/i-0abc`` -> ``i-0abc``).

    Examples:
        >>> import json
        >>> from pathlib import Path
        >>> nodes = {"items": [{"metadata": {"name": "ip-10-0-1-17", "labels": {
        ...     "node.kubernetes.io/instance-type": "p4d.24xlarge", "topology.kubernetes.io/zone": "us-east-1a"}},
        ...     "spec": {"providerID": "aws:///us-east-1a/i-0abc"}}]}
        >>> _ = Path("nodes.json").write_text(json.dumps(nodes))   # what kubectl get nodes -o json prints
        >>> gpucost.kubernetes.read_nodes("nodes.json")[["node", "resource_id", "provider", "zone", "instance_type"]]
                   node resource_id provider        zone instance_type
        0  ip-10-0-1-17      i-0abc      aws  us-east-1a  p4d.24xlarge
    """
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
    strategy MIG ``nvidia.com/gpu`` reads as a whole GPU).

    Examples:
        One pod holds two whole GPUs, the other a 1g.10gb MIG slice (1/7 of
        an A100):

        >>> import json
        >>> from pathlib import Path
        >>> pods = {"items": [
        ...     {"metadata": {"namespace": "ml", "name": "train-0", "labels": {"team-id": "research", "project-id": "llm"}},
        ...      "spec": {"nodeName": "ip-10-0-1-17",
        ...               "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        ...      "status": {"startTime": "2026-03-01T10:00:00Z"}},
        ...     {"metadata": {"namespace": "web", "name": "infer-0", "labels": {"team-id": "product"}},
        ...      "spec": {"nodeName": "ip-10-0-1-17",
        ...               "containers": [{"name": "s", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]},
        ...      "status": {"startTime": "2026-03-01T10:00:00Z"}}]}
        >>> _ = Path("pods.json").write_text(json.dumps(pods))   # what kubectl get pods -A -o json prints
        >>> gpus = gpucost.kubernetes.read_pod_gpus("pods.json")
        >>> gpus[["consumer", "node", "resource", "kind", "count", "share", "gpus"]]
              consumer          node                resource           kind  count     share      gpus
        0   ml/train-0  ip-10-0-1-17          nvidia.com/gpu  device-plugin    2.0  1.000000  2.000000
        1  web/infer-0  ip-10-0-1-17  nvidia.com/mig-1g.10gb            mig    1.0  0.142857  0.142857
    """
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
    changed keeps the latest.

    ``url`` is the Prometheus base URL, or a
    :class:`gpucost.prometheus.PrometheusClient`; ``**http`` are its options
    (``headers``, ``bearer_token``, ``timeout``...).

    Examples:
        With a client that replays saved answers instead of calling a live
        Prometheus (``fetch_workloads("http://prometheus:9090", ...)``):

        >>> import json, re
        >>> class Replay(gpucost.prometheus.PrometheusClient):   # answers from memory, not over HTTP
        ...     def __init__(self, answers):
        ...         super().__init__("http://prometheus:9090")
        ...         self.answers = answers
        ...     def query_range(self, query, start_s, end_s, step_s):
        ...         self.requests_made += 1
        ...         name = next((w for w in re.findall(r"\\w+", query) if w in self.answers), None)
        ...         result = self.answers.get(name, [])
        ...         return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
        >>> series = {"metric": {"namespace": "ml", "pod": "train-0", "label_team_id": "research",
        ...                      "label_project_id": "llm"}, "values": [[1772362800, "1"]]}
        >>> client = Replay({"kube_pod_labels": [series]})
        >>> gpucost.kubernetes.fetch_workloads(client, "2026-03-01 10:00", "2026-03-01 11:00")
             consumer project      team  user   job
        0  ml/train-0     llm  research  None  None
    """
    client = _client(url, **http)
    frame = workloads_frame(_core.kube_pod_labels(_range_bodies(client, "kube_pod_labels", start, end, step),
                                                  _keys(labels)))
    covered = frame.attrs.get("labels")
    if covered:  # each point is the last value over the step before it: the history starts a step earlier
        first = covered["start"] - pd.Timedelta(seconds=step)
        covered["start"] = max(first, pd.Timestamp(to_ns(start, "start"), tz="UTC"))
    return frame


def fetch_nodes(url: Any, start: Any, end: Any, *, step: float = 3600, **http) -> pd.DataFrame:
    """Nodes from kube-state-metrics' ``kube_node_info`` (its ``provider_id``).

    Examples:
        As for :func:`fetch_workloads`, with saved answers:

        >>> import json, re
        >>> class Replay(gpucost.prometheus.PrometheusClient):   # answers from memory, not over HTTP
        ...     def __init__(self, answers):
        ...         super().__init__("http://prometheus:9090")
        ...         self.answers = answers
        ...     def query_range(self, query, start_s, end_s, step_s):
        ...         self.requests_made += 1
        ...         name = next((w for w in re.findall(r"\\w+", query) if w in self.answers), None)
        ...         result = self.answers.get(name, [])
        ...         return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
        >>> series = {"metric": {"node": "ip-10-0-1-17", "provider_id": "aws:///us-east-1a/i-0abc"},
        ...           "values": [[1772362800, "1"]]}
        >>> nodes = gpucost.kubernetes.fetch_nodes(Replay({"kube_node_info": [series]}),
        ...                                        "2026-03-01 10:00", "2026-03-01 11:00")
        >>> nodes[["node", "resource_id", "provider", "zone"]]
                   node resource_id provider        zone
        0  ip-10-0-1-17      i-0abc      aws  us-east-1a
    """
    client = _client(url, **http)
    return nodes_frame(_core.kube_node_info(_range_bodies(client, "kube_node_info", start, end, step)))


def unlabelled(workloads: Any, required: Sequence[str] = ("project", "team")) -> pd.DataFrame:
    """The pods missing any required label: ``consumer`` and ``missing`` (the
    missing columns, comma-separated), sorted by consumer. Its length is the
    count. Empty strings count as missing.

    Examples:
        >>> workloads = pd.DataFrame({"consumer": ["ml/train-0", "web/infer-0", "web/infer-1"],
        ...                           "project": ["llm", None, ""], "team": ["research", "product", None]})
        >>> gpucost.kubernetes.unlabelled(workloads)
              consumer        missing
        0  web/infer-0        project
        1  web/infer-1  project, team
        >>> len(gpucost.kubernetes.unlabelled(workloads, required=["team"]))
        1
    """
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
