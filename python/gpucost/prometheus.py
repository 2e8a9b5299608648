"""DCGM exporter telemetry through Prometheus: live queries, saved answers
and scraped exposition text -> usage samples (docs/telemetry.md).

The HTTP client is here (urllib, no extra dependency); every body is parsed
in C++ (``gpucost._core``), which also maps DCGM series to samples.

Typical use::

    nodes = gpucost.kubernetes.read_nodes("nodes.json")
    usage = gpucost.prometheus.fetch_usage("http://prometheus:9090", "2026-03-01", "2026-03-02",
                                           step=60, nodes=nodes)

(each function has an example that runs).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from gpucost import _core
from gpucost.errors import Error, InvalidInputError
from gpucost.frames import Table, usage_frame
from gpucost.model import Basis

__all__ = [
    "DEFAULT_EXPORTER_NAMES",
    "DEFAULT_NODE_LABELS",
    "MAX_POINTS",
    "PrometheusClient",
    "dcgm_metric_names",
    "fetch_usage",
    "read_amd_smi_metric",
    "read_ceems_gpu_map",
    "read_dcgm_text",
    "read_jobstats",
    "iter_query_range",
    "read_query_range",
]

#: Prometheus refuses a query_range whose series would have more points.
MAX_POINTS = 11_000
DEFAULT_NODE_LABELS = ("node", "kubernetes_node", "Hostname", "hostname")
#: The exporter's own container/pod names: series carrying them as workload
#: labels are free GPUs (docs/telemetry.md, "The exporter is never a workload").
DEFAULT_EXPORTER_NAMES = ("nvidia-dcgm-exporter", "dcgm-exporter")
#: Labels that only tell Prometheus replicas apart.
REPLICA_LABELS = ("prometheus_replica", "replica", "__replica__")


def dcgm_metric_names() -> list[str]:
    """Every DCGM metric name gpucost reads (both unit conventions).

    Examples:
        >>> names = gpucost.prometheus.dcgm_metric_names()
        >>> names[:2]
        ['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_GPU_UTIL_RATIO']
        >>> "DCGM_FI_DEV_FB_USED_BYTES" in names
        True
    """
    return list(_core.dcgm_metric_names())


def to_ns(value: Any, name: str) -> int:
    """An instant (str, datetime, pandas Timestamp, or int ns) as int ns UTC;
    naive values are UTC."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"parameter '{name}': {value!r} is not an instant ({exc})") from None
    if ts is pd.NaT:
        raise InvalidInputError(f"parameter '{name}': missing instant")
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value)


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, pd.Timedelta):
        value = value.total_seconds()
    elif isinstance(value, str):
        value = pd.Timedelta(value).total_seconds()
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise InvalidInputError(f"parameter '{name}': {value} is not a positive number of seconds")
    return value


class PrometheusClient:
    """A small Prometheus HTTP API client: POSTed queries, a timeout on every
    request, bounded retries with exponential backoff on transient failures
    (connection errors, timeouts, HTTP 429 and 5xx), optional headers (a
    bearer token). Bodies are returned unparsed; gpucost parses them in C++.

    Only the URL you give is contacted.

    Examples:
        Nothing is contacted until a query is made:

        >>> client = gpucost.prometheus.PrometheusClient("https://prometheus.example.com/", bearer_token="s3cr3t",
        ...                                              timeout=10, retries=2)
        >>> client.url, client.headers["Authorization"], client.timeout
        ('https://prometheus.example.com', 'Bearer s3cr3t', 10.0)
        >>> gpucost.prometheus.PrometheusClient("prometheus:9090")
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: parameter 'url': 'prometheus:9090' is not an http(s) URL
    """

    def __init__(self, url: str, *, headers: Mapping[str, str] | None = None, bearer_token: str | None = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.5):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"parameter 'url': {url!r} is not an http(s) URL")
        if retries < 0:
            raise InvalidInputError("parameter 'retries': must be >= 0")
        self.url = url.rstrip("/")
        self.headers = {"Accept": "application/json", **dict(headers or {})}
        if bearer_token:
            self.headers["Authorization"] = f"Bearer {bearer_token}"
        self.timeout = _seconds(timeout, "timeout")
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.requests_made = 0

    def _post(self, path: str, form: Mapping[str, str]) -> str:
        data = urllib.parse.urlencode(form).encode()
        last_error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(f"{self.url}{path}", data=data, method="POST", headers={
                **self.headers, "Content-Type": "application/x-www-form-urlencoded"})
            self.requests_made += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.read().decode("utf-8")
            except urllib.error.HTTPError as exc:
                body = exc.read().decode("utf-8", "replace")
                message = _error_message(body) or exc.reason
                if exc.code == 429 or exc.code >= 500:
                    last_error = f"HTTP {exc.code}: {message}"
                    continue
                raise InvalidInputError(f"Prometheus at {self.url} rejected {form.get('query', path)!r}: "
                                        f"HTTP {exc.code}: {message}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError,
                    http.client.HTTPException) as exc:  # IncompleteRead: the server went away mid-response
                reason = getattr(exc, "reason", exc)
                last_error = f"{type(reason).__name__}: {reason}"
                continue
        raise Error(f"Prometheus at {self.url}: {form.get('query', path)!r} failed after {self.retries + 1} "
                    f"attempts (timeout {self.timeout:g} s): {last_error}")

    def query_range(self, query: str, start_s: float, end_s: float, step_s: float) -> str:
        """The raw JSON body of one /api/v1/query_range call."""
        return self._post("/api/v1/query_range", {
            "query": query, "start": _fmt(start_s), "end": _fmt(end_s), "step": _fmt(step_s),
            "timeout": f"{self.timeout:g}s"})

    def query_range_chunks(self, query: str, start_ns: int, end_ns: int, step_s: float,
                           max_points: int = MAX_POINTS) -> list[str]:
        """query_range over [start, end) in as many calls as needed so that no
        series has more than `max_points` points; evaluation instants are
        start, start + step, ... (< end), each in exactly one call."""
        step_ns = int(round(step_s * 1e9))
        if step_ns <= 0:
            raise InvalidInputError("parameter 'step': must be positive")
        if end_ns <= start_ns:
            raise InvalidInputError("parameter 'end': must be after 'start'")
        total = (end_ns - start_ns + step_ns - 1) // step_ns  # instants in [start, end)
        per_call = max(1, min(int(max_points), MAX_POINTS))
        bodies = []
        for first in range(0, total, per_call):
            last = min(first + per_call, total) - 1
            s = start_ns + first * step_ns
            e = start_ns + last * step_ns
            bodies.append(self.query_range(query, s / 1e9, e / 1e9, step_s))
        return bodies


def _fmt(seconds: float) -> str:
    return f"{seconds:.3f}"


def _error_message(body: str) -> str:
    try:
        doc = json.loads(body)
        return f"{doc.get('errorType', '')}: {doc.get('error', '')}".strip(": ")
    except (ValueError, AttributeError):
        return body.strip()[:200]


def _nodes_option(nodes: Any) -> tuple | None:
    if nodes is None:
        return None
    t = Table(nodes, "nodes")
    return (t.strings("node"), t.strings("resource_id"))


def _mig_shares(mig_shares: Any) -> list | None:
    """(gpu_model, profile, share) rows given by the caller; None lets the
    library use the catalog's MIG profiles."""
    if mig_shares is None:
        return None
    t = Table(mig_shares, "mig_shares")
    return list(zip(t.column("gpu_model").astype(str), t.column("profile").astype(str), t.floats("share").tolist()))


def _options(*, nodes, node_labels, keep_unknown_nodes, units, mig_shares, mig_basis, interval, start_ns=None,
             end_ns=None, exporter_names=DEFAULT_EXPORTER_NAMES, instant_tolerance=30.0,
             interval_name="interval") -> dict:
    return {
        "interval_name": interval_name,
        "exporter_names": [str(n) for n in exporter_names],
        "instant_tolerance": float(instant_tolerance),
        "nodes": _nodes_option(nodes),
        "node_labels": list(node_labels),
        "keep_unknown_nodes": bool(keep_unknown_nodes),
        "units": str(units),
        "mig_shares": _mig_shares(mig_shares),
        "mig_basis": str(mig_basis),
        "interval": None if interval is None else float(interval),
        "start_ns": start_ns,
        "end_ns": end_ns,
    }


def telemetry_report(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Attaches the reader report ``frame.attrs["telemetry"]`` (docs/telemetry.md)
    built from the parser's diagnostics; returns the frame."""
    d = frame.attrs.get("diagnostics", {})
    duplicate_labels = list(d.get("duplicate_labels", []))
    replica = [name for name in duplicate_labels if name in REPLICA_LABELS]
    jobs = [name for name in duplicate_labels if name in ("job", "instance")]
    cause = None
    if replica:
        cause = f"two Prometheus replicas (label {', '.join(replica)})"
    elif jobs:
        cause = f"one exporter scraped by two jobs (labels {', '.join(jobs)})"
    elif duplicate_labels:
        cause = f"one GPU series seen twice (labels {', '.join(duplicate_labels)} differ)"
    elif d.get("duplicate_series", 0):
        cause = "the same series read twice (two files or answers holding it at the same instants)"
    frame.attrs["telemetry"] = {
        "source": source,
        "series": int(d.get("series", 0)),
        "samples": len(frame),
        "spacing_seconds": float(d.get("spacing_seconds", 0.0)) or None,
        "gaps": int(d.get("gaps", 0)),
        "skipped_fields": dict(d.get("skipped_fields", {})),
        "exporter_series_freed": int(d.get("exporter_series_freed", 0)),
        "node_labels_exporter_pod": int(d.get("node_labels_exporter_pod", 0)),
        "samples_without_memory": int(d.get("samples_without_memory", 0)),
        "samples_without_util": int(d.get("samples_without_util", 0)),
        "samples_util_from_gr_engine": int(d.get("samples_util_from_gr_engine", 0)),
        "samples_merged": int(d.get("samples_merged", 0)),
        "samples_power_from_energy": int(d.get("samples_power_from_energy", 0)),
        "energy_counter_resets": int(d.get("energy_counter_resets", 0)),
        "instants_joined": int(d.get("instants_joined", 0)),
        "replica_labels": replica,
        "duplicate_labels": duplicate_labels,
        "duplicate_series": int(d.get("duplicate_series", 0)),
        "duplicate_points": int(d.get("duplicate_points", 0)),
        "duplicate_cause": cause,
    }
    return frame


#: Reader-report counts that add up over chunks.
_REPORT_COUNTS = ("samples", "gaps", "exporter_series_freed", "node_labels_exporter_pod", "samples_without_memory",
                  "samples_without_util", "samples_util_from_gr_engine", "samples_merged", "instants_joined",
                  "duplicate_series", "duplicate_points")


def merge_telemetry(reports: Sequence[Mapping[str, Any]]) -> dict:
    """One reader report (``attrs["telemetry"]``) of the chunks a streaming
    reader gave: counts added (a look-ahead's samples are counted in both
    chunks it was read with: the counts are an upper bound, ``samples``
    exact); ``series`` the most of any chunk (a series spans chunks);
    ``spacing_seconds`` the lower median of the chunks'; labels, causes and
    warnings once each."""
    reports = [r for r in reports if r]
    if not reports:
        return {}
    out = dict(reports[0])
    for key in _REPORT_COUNTS:
        out[key] = sum(int(r.get(key, 0)) for r in reports)
    out["series"] = max(int(r.get("series", 0)) for r in reports)
    spacings = sorted(r["spacing_seconds"] for r in reports if r.get("spacing_seconds"))
    out["spacing_seconds"] = spacings[(len(spacings) - 1) // 2] if spacings else None
    skipped: dict[str, int] = {}
    for r in reports:
        for name, count in r.get("skipped_fields", {}).items():
            skipped[name] = skipped.get(name, 0) + int(count)
    out["skipped_fields"] = skipped
    for key in ("replica_labels", "duplicate_labels", "warnings"):
        out[key] = list(dict.fromkeys(x for r in reports for x in r.get(key, [])))
    out["duplicate_cause"] = next((r["duplicate_cause"] for r in reports if r.get("duplicate_cause")), None)
    return out


def fresh_query(metric: str, matchers: str, max_age_s: float) -> str:
    """`metric` where its newest sample is younger than `max_age_s`: drops the
    points Prometheus' 5-minute lookback would repeat after a series ended."""
    selector = f"{metric}{{{matchers}}}" if matchers else metric
    return f"{selector} and ((time() - timestamp({selector})) < {max_age_s:g})"


def fetch_usage(url: str, start: Any, end: Any, step: Any = 60, *, nodes: Any = None,
                scrape_interval: Any = None, matchers: str = "", node_labels: Sequence[str] = DEFAULT_NODE_LABELS,
                keep_unknown_nodes: bool = False, units: str = "auto", mig_shares: Any = None,
                mig_basis: str = "compute", exporter_names: Sequence[str] = DEFAULT_EXPORTER_NAMES,
                headers: Mapping[str, str] | None = None,
                bearer_token: str | None = None, timeout: float = 30.0, retries: int = 3,
                backoff: float = 0.5, max_points: int = MAX_POINTS,
                client: PrometheusClient | None = None, allow_partial: bool = False) -> pd.DataFrame:
    """Usage samples of [start, end) from the DCGM exporter's series in a live
    Prometheus, one sample per step, GPU and pod.

    Args:
        url: the Prometheus base URL (``http://host:9090``).
        start, end: the range (str, datetime, Timestamp or int ns; naive is UTC).
        step: seconds between samples; each sample stands for one step.
        nodes: node -> resource id table (``node, resource_id``), e.g. from
            :func:`gpucost.kubernetes.read_nodes`; without it the node name is
            the resource id.
        scrape_interval: how often Prometheus scraped the exporter (seconds).
            A point is charged only while the newest sample behind it is
            younger than ``max(step, scrape_interval)``, so a pod is never
            charged for the 5-minute lookback after it ended. Default 60.
        matchers: extra label matchers for every query, e.g. ``'cluster="prod"'``.
        units: ``"auto"`` (each metric name's own unit), ``"legacy"`` (exporter
            <= 4.8) or ``"ratio_bytes"`` (>= 4.9) to insist on one convention.
        mig_shares: ``gpu_model, profile, share`` table for MIG instances;
            default: the catalog's MIG profiles (``mig_basis`` "compute" or
            "memory").
        headers, bearer_token, timeout, retries, backoff: HTTP behaviour.

    Returns:
        The usage samples (SEMANTICS 1.3 plus ``node, gpu_uuid, gpu_model,
        mig_profile, tensor_active, mem_copy_util, power_w, mem_free``);
        ``.attrs["diagnostics"]`` has the unit convention seen and counts.

    Examples:
        ``client=`` replaces the HTTP client; here one that replays saved
        answers (one utilisation series of one pod), so the example runs
        without a Prometheus. Against a live one, leave it out.

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
        >>> util = {"metric": {"gpu": "0", "UUID": "GPU-aaaa", "modelName": "NVIDIA A100-SXM4-40GB",
        ...                    "Hostname": "ip-10-0-1-17", "namespace": "ml", "pod": "train-0"},
        ...         "values": [[1772359200, "90"], [1772359260, "80"]]}
        >>> nodes = pd.DataFrame({"node": ["ip-10-0-1-17"], "resource_id": ["i-0abc"]})
        >>> usage = gpucost.prometheus.fetch_usage("http://prometheus:9090", "2026-03-01 10:00", "2026-03-01 10:02",
        ...                                        step=60, nodes=nodes, client=Replay({"DCGM_FI_DEV_GPU_UTIL": [util]}))
        >>> usage[["timestamp", "resource_id", "device", "consumer", "util", "gpu_model"]]
                          timestamp resource_id  device    consumer  util              gpu_model
        0 2026-03-01 10:00:00+00:00      i-0abc       0  ml/train-0   0.9  NVIDIA A100-SXM4-40GB
        1 2026-03-01 10:01:00+00:00      i-0abc       0  ml/train-0   0.8  NVIDIA A100-SXM4-40GB
        >>> usage.attrs["diagnostics"]["requests"]   # one query per DCGM metric name
        20
    """
    start_ns, end_ns = to_ns(start, "start"), to_ns(end, "end")
    step_s = _seconds(step, "step")
    max_age = max(step_s, _seconds(scrape_interval, "scrape_interval") if scrape_interval is not None else 60.0)
    client = client or PrometheusClient(url, headers=headers, bearer_token=bearer_token, timeout=timeout,
                                        retries=retries, backoff=backoff)
    options = _options(nodes=nodes, node_labels=node_labels, keep_unknown_nodes=keep_unknown_nodes, units=units,
                       mig_shares=mig_shares, mig_basis=mig_basis, interval=step_s, start_ns=start_ns,
                       end_ns=end_ns, exporter_names=exporter_names, interval_name="step")
    inputs = []
    for metric in dcgm_metric_names():
        query = fresh_query(metric, matchers, max_age)
        for i, body in enumerate(client.query_range_chunks(query, start_ns, end_ns, step_s, max_points)):
            inputs.append((body, f"{client.url} {metric} (call {i + 1})", metric))
    warnings = [w for body, name, _ in inputs for w in _warnings(body, name, allow_partial)]
    raw = _core.dcgm_usage(inputs, True, None, options)
    frame = usage_frame(raw)
    frame.attrs["diagnostics"]["requests"] = client.requests_made
    frame = telemetry_report(frame, f"prometheus {client.url}")
    frame.attrs["telemetry"]["warnings"] = warnings
    return frame


def _read(path: str | PathLike) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _warnings(body: str, name: str, allow_partial: bool) -> list[str]:
    """The ``warnings`` of a successful answer: Thanos and Prometheus send
    them with a partial answer (a store or replica was unreachable), so some
    series or points may be missing and idle would absorb their cost. An error
    unless ``allow_partial``; then reported. Only a body that names
    ``"warnings"`` is parsed again here."""
    if '"warnings"' not in body:
        return []
    try:
        found = json.loads(body).get("warnings") or []
    except (ValueError, AttributeError):
        return []  # not an answer: the reader names the problem
    found = [str(w) for w in found] if isinstance(found, list) else [str(found)]
    if found and not allow_partial:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InvalidInputError(
            f"{name}: Prometheus answered with warnings, a partial answer whose series or points may be missing: "
            f"'{found[0]}'{more}; pass allow_partial=True to read it anyway (attrs['telemetry']['warnings'])")
    return [f"{name}: {w}" for w in found]


def _paths(paths: Any) -> list:
    return [paths] if isinstance(paths, (str, PathLike)) else list(paths)


def read_query_range(paths: Any, step: Any = None, *, metric: str | None = None, nodes: Any = None,
                     node_labels: Sequence[str] = DEFAULT_NODE_LABELS, keep_unknown_nodes: bool = False,
                     units: str = "auto", mig_shares: Any = None, mig_basis: str = "compute",
                     exporter_names: Sequence[str] = DEFAULT_EXPORTER_NAMES,
                     instant_tolerance: Any = 30, allow_partial: bool = False, basis: str | None = None,
                     threads: int | None = None) -> pd.DataFrame:
    """Usage samples from saved ``/api/v1/query_range`` (matrix) or
    ``/api/v1/query`` (instant vector) answers (JSON files), one file per DCGM
    metric (its name is read from ``__name__``, or given as ``metric``).

    Each sample's ``duration`` is the gap to its series' next point, capped at
    the series' spacing (the median gap), so a gap counts as missing. ``step``
    (seconds), when given, is checked against that spacing: more than 2x
    apart is an error naming the file and series. Instant answers saved a few
    seconds apart are read at one instant when within ``instant_tolerance``
    seconds of each other. An answer with ``warnings`` (a partial answer) is
    an error unless ``allow_partial``; ``.attrs["telemetry"]`` is the reader
    report (its ``warnings`` list the partial answers' warnings).

    The files are read and parsed in C++, ``threads`` at a time (default:
    one per core), into columns; the result is in file order whatever the
    thread count. A given ``step`` is checked against the first file before
    the others are read. ``basis`` (``"allocated"`` or ``"used"``) says the
    memory series are not needed: their points are skipped unparsed (counted
    in ``attrs["telemetry"]["skipped_fields"]``, ``mem_used`` 0) except a MIG
    instance's, which may be its only holder record (dcgm-exporter prints no
    ``GPU_UTIL`` for MIG instances); ``"blended"`` or None reads everything.

    Examples:
        A saved answer of ``DCGM_FI_DEV_GPU_UTIL`` over three minutes: GPU 0
        held by pod ``ml/train-0``, GPU 1 free (no pod).

        >>> import json
        >>> from pathlib import Path
        >>> gpu = {"UUID": "GPU-aaaa", "modelName": "NVIDIA A100-SXM4-40GB", "Hostname": "ip-10-0-1-17"}
        >>> answer = {"status": "success", "data": {"resultType": "matrix", "result": [
        ...     {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", **gpu, "namespace": "ml", "pod": "train-0"},
        ...      "values": [[1772359200, "90"], [1772359260, "95"], [1772359320, "100"]]},
        ...     {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "1", **gpu, "UUID": "GPU-bbbb"},
        ...      "values": [[1772359200, "0"], [1772359260, "0"], [1772359320, "0"]]}]}}
        >>> _ = Path("gpu_util.json").write_text(json.dumps(answer))
        >>> usage = gpucost.prometheus.read_query_range("gpu_util.json", step=60)
        >>> usage[["timestamp", "resource_id", "device", "consumer", "util", "duration"]]
                          timestamp   resource_id  device    consumer  util  duration
        0 2026-03-01 10:00:00+00:00  ip-10-0-1-17       0  ml/train-0  0.90      60.0
        1 2026-03-01 10:01:00+00:00  ip-10-0-1-17       0  ml/train-0  0.95      60.0
        2 2026-03-01 10:02:00+00:00  ip-10-0-1-17       0  ml/train-0  1.00      60.0
        3 2026-03-01 10:00:00+00:00  ip-10-0-1-17       1              0.00      60.0
        4 2026-03-01 10:01:00+00:00  ip-10-0-1-17       1              0.00      60.0
        5 2026-03-01 10:02:00+00:00  ip-10-0-1-17       1              0.00      60.0
        >>> usage.attrs["telemetry"]["spacing_seconds"]
        60.0

        For the allocated basis a memory answer is not parsed:

        >>> memory = {"status": "success", "data": {"resultType": "matrix", "result": [
        ...     {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0", **gpu, "namespace": "ml", "pod": "train-0"},
        ...      "values": [[1772359200, "38211"], [1772359260, "38211"], [1772359320, "38211"]]}]}}
        >>> _ = Path("fb_used.json").write_text(json.dumps(memory))
        >>> held = gpucost.prometheus.read_query_range(["gpu_util.json", "fb_used.json"], step=60, basis="allocated")
        >>> held.attrs["telemetry"]["skipped_fields"], float(held["mem_used"].sum())
        ({'DCGM_FI_DEV_FB_USED': 1}, 0.0)
    """
    files = [str(p) for p in _paths(paths)]
    for path in files:  # a missing file or a directory: the error open() gives, before any reading
        if not os.path.isfile(path):
            open(path, encoding="utf-8").close()
    options = _options(nodes=nodes, node_labels=node_labels, keep_unknown_nodes=keep_unknown_nodes, units=units,
                       mig_shares=mig_shares, mig_basis=mig_basis, interval=None if step is None else
                       _seconds(step, "step"), exporter_names=exporter_names,
                       instant_tolerance=_tolerance(instant_tolerance), interval_name="step")
    read = {"metric_name": metric or "", "step": options["interval"], "allow_partial": bool(allow_partial),
            "threads": _threads(threads), **_fields_read(basis)}
    return _answers_usage(files, options, read)


def _answers_usage(files: list[str], options: dict, read: dict, parsed: list | None = None) -> pd.DataFrame:
    """The samples of saved answers, with the reader report; ``parsed``: the
    files' answers already parsed (``_core.QueryRangeAnswer``, in order)."""
    raw = _core.dcgm_usage_files(files, options, read) if parsed is None else _core.dcgm_usage_answers(parsed, options)
    if read.get("metrics") and raw["diagnostics"]["samples_without_util"] == raw["diagnostics"]["samples"]:
        # No utilisation field at all: the memory series were the holder record (holder-only telemetry).
        raw = _core.dcgm_usage_files(files, options, {**read, "metrics": []})
    frame = telemetry_report(usage_frame(raw), "prometheus answers")
    frame.attrs["telemetry"]["warnings"] = list(raw["warnings"])
    return frame


#: Nanoseconds per day: the chunk of :func:`iter_query_range`.
_DAY_NS = 86_400 * 10**9


def iter_query_range(paths: Any, step: Any = None, *, chunk: Any = "1D", lookahead: Any = None,
                     metric: str | None = None, nodes: Any = None,
                     node_labels: Sequence[str] = DEFAULT_NODE_LABELS, keep_unknown_nodes: bool = False,
                     units: str = "auto", mig_shares: Any = None, mig_basis: str = "compute",
                     exporter_names: Sequence[str] = DEFAULT_EXPORTER_NAMES, instant_tolerance: Any = 30,
                     allow_partial: bool = False, basis: str | None = None,
                     threads: int | None = None) -> Iterable[pd.DataFrame]:
    """:func:`read_query_range` one time chunk at a time (a UTC day by
    default), in time order, so that a month of answers costs the memory of
    a day's samples (feed them to :class:`gpucost.Allocator` or
    :func:`gpucost.allocate_stream`). Each frame holds the samples of one
    chunk with their reader report (``attrs["telemetry"]``: counts of that
    chunk; ``merge_telemetry`` adds them up).

    Each file is parsed once: the first in full first (a given ``step`` is
    checked on it before the others are read), the others walked for their
    time ranges only (each point's time, its value skipped); a chunk then
    parses the files that reach into it not yet parsed, and keeps each until
    no later chunk reaches it (so the memory of about two chunks' points).
    Durations are those of the whole read: each chunk also reads
    ``lookahead`` (default 5 x ``step``, else 1 hour) past its end, so the
    last sample of each series sees its next one; a series whose spacing
    exceeds ``lookahead`` / 1.25 is an error asking for a longer one. Each
    series' spacing is the median of its gaps within the chunk (the whole
    read's median where a series keeps one spacing, as exporters do).

    Other arguments are :func:`read_query_range`'s; ``chunk`` is a pandas
    offset string or seconds.

    Examples:
        Two days of one GPU's utilisation in one answer, read a day at a time:

        >>> import json
        >>> from pathlib import Path
        >>> labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-aaaa",
        ...           "modelName": "NVIDIA A100-SXM4-40GB", "Hostname": "ip-10-0-1-17", "namespace": "ml",
        ...           "pod": "train-0"}
        >>> start = 1772323200  # 2026-03-01T00:00:00Z
        >>> values = [[start + 3600 * i, "50"] for i in range(48)]
        >>> answer = {"status": "success", "data": {"resultType": "matrix", "result": [
        ...     {"metric": labels, "values": values}]}}
        >>> _ = Path("two_days.json").write_text(json.dumps(answer))
        >>> days = list(gpucost.prometheus.iter_query_range("two_days.json", step=3600))
        >>> [(str(d["timestamp"].min().date()), len(d), float(d["duration"].sum())) for d in days]
        [('2026-03-01', 24, 86400.0), ('2026-03-02', 24, 86400.0)]
    """
    files = [str(p) for p in _paths(paths)]
    for path in files:
        if not os.path.isfile(path):
            open(path, encoding="utf-8").close()
    step_s = None if step is None else _seconds(step, "step")
    width = _chunk_ns(chunk)
    ahead = int(round((_seconds(lookahead, "lookahead") if lookahead is not None else
                       5 * step_s if step_s is not None else 3600.0) * 1e9))
    options = _options(nodes=nodes, node_labels=node_labels, keep_unknown_nodes=keep_unknown_nodes, units=units,
                       mig_shares=mig_shares, mig_basis=mig_basis, interval=step_s,
                       exporter_names=exporter_names, instant_tolerance=_tolerance(instant_tolerance),
                       interval_name="step")
    read = {"metric_name": metric or "", "step": step_s, "allow_partial": bool(allow_partial),
            "threads": _threads(threads), **_fields_read(basis)}
    parsed = dict(zip(files[:1], _core.query_range_each(files[:1], read)))
    spans = _time_spans(files, read, parsed)
    if not spans:
        yield _answers_usage(files, options, read)  # no points at all: the reader's own report of nothing
        return
    first = min(lo for lo, _ in spans.values()) // width * width
    last = max(hi for _, hi in spans.values())
    for lo in range(first, last + 1, width):
        hi = lo + width
        for f in [f for f in parsed if f not in spans or spans[f][1] < lo]:
            del parsed[f]  # no later chunk reaches it
        reach = [f for f in files if f in spans and spans[f][0] < hi + ahead and spans[f][1] >= lo]
        if not any(spans[f][0] < hi and spans[f][1] >= lo for f in reach):
            continue  # no point in [lo, hi)
        todo = [f for f in dict.fromkeys(reach) if f not in parsed]
        parsed.update(zip(todo, _core.query_range_each(todo, read)))
        frame = _answers_usage(reach, {**options, "start_ns": lo, "end_ns": hi + ahead}, read,
                               [parsed[f] for f in reach])
        yield _chunk_of(frame, lo, hi, ahead)


def _chunk_ns(chunk: Any) -> int:
    """A chunk's width in nanoseconds (a pandas offset string or seconds): a
    whole number of seconds that divides a day or is whole days, so that
    chunks start at midnight UTC."""
    try:
        seconds = pd.Timedelta(chunk).total_seconds() if isinstance(chunk, str) else _seconds(chunk, "chunk")
    except ValueError:
        raise InvalidInputError(f"parameter 'chunk': {chunk!r} is not a duration (\"1D\", \"6h\", seconds)") from None
    width = int(round(seconds * 1e9))
    if width <= 0 or (_DAY_NS % width and width % _DAY_NS):
        raise InvalidInputError(f"parameter 'chunk': {chunk!r}: expected a part of a day (\"6h\") or whole days")
    return width


def _time_spans(files: list[str], read: dict, parsed: dict) -> dict[str, tuple[int, int]]:
    """Each file's first and last instant (files without points left out):
    from its points where ``parsed`` holds them, else from a walk that reads
    only each point's time."""
    rest = [f for f in dict.fromkeys(files) if f not in parsed]
    found = dict(zip(rest, _core.query_range_spans(rest, read)))
    found.update({f: None if a.first_ns is None else (a.first_ns, a.last_ns) for f, a in parsed.items()})
    return {f: span for f, span in found.items() if span is not None}


def _chunk_of(frame: pd.DataFrame, lo: int, hi: int, ahead: int) -> pd.DataFrame:
    """The samples in [lo, hi) of a read that went ``ahead`` past ``hi`` (for
    the durations of each series' last sample); the report recounted."""
    ts = frame["timestamp"].to_numpy(dtype="datetime64[ns]").view("int64")
    keep = ts < hi
    if len(frame):
        long = frame["duration"].to_numpy()[keep]
        if len(long) and float(long.max()) * 1e9 > ahead / 1.25 + 1:
            raise InvalidInputError(
                f"telemetry: a series' spacing is {float(long.max()):g} s, more than the chunked reader's look-ahead "
                f"allows ({ahead / 1.25e9:g} s): give the step (step=, --step) or a longer lookahead")
    attrs = frame.attrs
    out = frame[keep].reset_index(drop=True) if not keep.all() else frame
    out.attrs = attrs
    out.attrs["telemetry"] = {**attrs["telemetry"], "samples": len(out)}
    return out


#: Memory fields (both unit conventions, and AMD's): what the allocated and used bases never read.
_MEMORY_METRICS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED_BYTES", "DCGM_FI_DEV_FB_FREE",
                  "DCGM_FI_DEV_FB_FREE_BYTES", "gpu_used_vram", "gpu_free_vram")


def _fields_read(basis: str | None) -> dict:
    """The reader's series filter for ``basis``: every DCGM field but memory
    for the bases that do not read it (a MIG instance's memory kept: it may
    be its only series); nothing filtered otherwise."""
    if basis is None:
        return {}
    chosen = Basis(str(basis)) if str(basis) in {b.value for b in Basis} else None
    if chosen is None:
        raise InvalidInputError(f"parameter 'basis': {basis!r} is not one of "
                                f"{', '.join(b.value for b in Basis)}")
    if chosen == Basis.BLENDED:
        return {}
    return {"metrics": [m for m in dcgm_metric_names() if m not in _MEMORY_METRICS], "keep_label": "GPU_I_ID"}


def _threads(threads: int | None) -> int:
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise InvalidInputError(f"parameter 'threads': {threads!r} is not a positive number of threads")
    return int(threads)


def _tolerance(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    return _seconds(value, "instant_tolerance")


def read_dcgm_text(paths: Any, *, timestamp: Any = None, interval: Any = None, nodes: Any = None,
                   node_labels: Sequence[str] = DEFAULT_NODE_LABELS, keep_unknown_nodes: bool = False,
                   units: str = "auto", mig_shares: Any = None, mig_basis: str = "compute",
                   exporter_names: Sequence[str] = DEFAULT_EXPORTER_NAMES) -> pd.DataFrame:
    """Usage samples from files of the exporter's exposition text (what
    ``curl http://node:9400/metrics`` prints). Lines without a timestamp get
    ``timestamp`` (the scrape time): one for every file, or a sequence of
    one per file (a directory of scrapes, each at its own instant, read
    together so that each series' spacing is known). Scrapes of several instants give each
    sample the gap to its series' next one (capped at the spacing); a single
    scrape has no order, so each sample stands for ``interval`` seconds
    (default 60). A given ``interval`` is checked against the data's spacing
    when there is one. Fields gpucost does not read are skipped whatever their
    values and counted in ``.attrs["telemetry"]["skipped_fields"]``.

    Examples:
        One scrape of one node's exporter (``curl http://node:9400/metrics``):

        >>> from pathlib import Path
        >>> labels = 'gpu="0",UUID="GPU-aaaa",modelName="NVIDIA A100-SXM4-40GB",Hostname="ip-10-0-1-17"'
        >>> _ = Path("scrape.prom").write_text(
        ...     f'DCGM_FI_DEV_GPU_UTIL{{{labels},namespace="ml",pod="train-0"}} 90\\n'
        ...     f'DCGM_FI_DEV_FB_USED{{{labels},namespace="ml",pod="train-0"}} 38211\\n'
        ...     f'DCGM_FI_DEV_SM_CLOCK{{{labels}}} 1410\\n')
        >>> usage = gpucost.prometheus.read_dcgm_text("scrape.prom", timestamp="2026-03-01 10:00", interval=60)
        >>> usage[["timestamp", "resource_id", "consumer", "util", "mem_used", "duration"]]
                          timestamp   resource_id    consumer  util      mem_used  duration
        0 2026-03-01 10:00:00+00:00  ip-10-0-1-17  ml/train-0   0.9  4.006714e+10      60.0
        >>> usage.attrs["telemetry"]["skipped_fields"]
        {'DCGM_FI_DEV_SM_CLOCK': 1}
    """
    inputs = [(_read(p), str(p), "") for p in _paths(paths)]
    default_ts = _scrape_instants(timestamp, len(inputs))
    options = _options(nodes=nodes, node_labels=node_labels, keep_unknown_nodes=keep_unknown_nodes, units=units,
                       mig_shares=mig_shares, mig_basis=mig_basis,
                       interval=None if interval is None else _seconds(interval, "interval"),
                       exporter_names=exporter_names)
    return telemetry_report(usage_frame(_core.dcgm_usage(inputs, False, default_ts, options)), "dcgm-exporter text")


def _scrape_instants(timestamp: Any, files: int) -> int | list[int] | None:
    """``timestamp`` of :func:`read_dcgm_text` and :func:`read_jobstats`: None, one instant, or one per file
    (None for a file whose points carry their own, a saved answer's)."""
    if timestamp is None:
        return None
    if isinstance(timestamp, (list, tuple, np.ndarray, pd.Index, pd.Series)):
        if len(timestamp) != files:
            raise InvalidInputError(f"parameter 'timestamp': {len(timestamp)} instants for {files} files")
        return [None if t is None else to_ns(t, "timestamp") for t in timestamp]  # one per file
    return to_ns(timestamp, "timestamp")


def read_amd_smi_metric(paths: Any, host: str, *, timestamps: Any, interval: Any = None,
                        nodes: Any = None, keep_unknown_nodes: bool = False) -> pd.DataFrame:
    """Usage samples from ``amd-smi metric --json`` snapshots of one host
    (files, one snapshot each; a list of GPUs or ``{"gpu_data": [...]}``).

    amd-smi prints no time: ``timestamps`` gives each file's instant (one per
    path, or one for a single path). ``usage.gfx_activity`` (%) is the
    utilisation, ``mem_usage.used_vram`` (MB) the memory,
    ``power.socket_power`` (W) the power; ``"N/A"`` is no value; other fields
    are ignored. amd-smi metric names no workload: every sample is a free GPU
    (consumer ""), i.e. idle time unless workloads are joined otherwise. The
    host is the node (``nodes`` maps it to a bill id). Durations as in
    :func:`read_dcgm_text`.

    Examples:
        Two snapshots of one MI300X, a minute apart:

        >>> import json
        >>> from pathlib import Path
        >>> for name, busy in [("t0.json", 72), ("t1.json", 40)]:
        ...     _ = Path(name).write_text(json.dumps({"gpu_data": [{"gpu": 0,
        ...         "usage": {"gfx_activity": {"value": busy, "unit": "%"}},
        ...         "mem_usage": {"used_vram": {"value": 120000, "unit": "MB"}},
        ...         "power": {"socket_power": {"value": 640, "unit": "W"}}}]}))
        >>> usage = gpucost.prometheus.read_amd_smi_metric(["t0.json", "t1.json"], "mi300x-01",
        ...                                                timestamps=["2026-03-01 10:00", "2026-03-01 10:01"])
        >>> usage[["timestamp", "resource_id", "device", "consumer", "util", "power_w", "duration"]]
                          timestamp resource_id  device consumer  util  power_w  duration
        0 2026-03-01 10:00:00+00:00   mi300x-01       0           0.72    640.0      60.0
        1 2026-03-01 10:01:00+00:00   mi300x-01       0           0.40    640.0      60.0
    """
    files = _paths(paths)
    stamps = [timestamps] if not isinstance(timestamps, (list, tuple, pd.Series, np.ndarray, pd.Index)) else \
        list(timestamps)
    if len(stamps) != len(files):
        raise InvalidInputError(f"read_amd_smi_metric: {len(files)} files but {len(stamps)} timestamps")
    inputs = [(_read(p), str(p), to_ns(t, "timestamps"), str(host)) for p, t in zip(files, stamps)]
    options = _options(nodes=nodes, node_labels=("hostname",), keep_unknown_nodes=keep_unknown_nodes, units="auto",
                       mig_shares=None, mig_basis="compute",
                       interval=None if interval is None else _seconds(interval, "interval"),
                       exporter_names=DEFAULT_EXPORTER_NAMES)
    return telemetry_report(usage_frame(_core.amd_smi_usage(inputs, options)), f"amd-smi metric {host}")


def parse_dcgm_text(texts: Iterable[str], *, timestamp: Any = None, interval: Any = None, **kwargs) -> pd.DataFrame:
    """Like :func:`read_dcgm_text` over strings instead of files."""
    default_ts = to_ns(timestamp, "timestamp") if timestamp is not None else None
    inputs = [(t, f"text {i + 1}", "") for i, t in enumerate(texts)]
    kwargs.setdefault("node_labels", DEFAULT_NODE_LABELS)
    options = _options(nodes=kwargs.get("nodes"), node_labels=kwargs["node_labels"],
                       keep_unknown_nodes=kwargs.get("keep_unknown_nodes", False), units=kwargs.get("units", "auto"),
                       mig_shares=kwargs.get("mig_shares"), mig_basis=kwargs.get("mig_basis", "compute"),
                       interval=None if interval is None else _seconds(interval, "interval"),
                       exporter_names=kwargs.get("exporter_names", DEFAULT_EXPORTER_NAMES))
    return telemetry_report(usage_frame(_core.dcgm_usage(inputs, False, default_ts, options)), "dcgm-exporter text")


# ---- other exporters that say which job holds a GPU (docs/telemetry.md) ------------------------

#: What Princeton jobstats' GPU exporter (github.com/plazonic/nvidia_gpu_prometheus_exporter) prints and
#: gpucost reads: utilisation (%), memory (bytes), power (mW) and the job holding the GPU.
JOBSTATS_METRICS = ("nvidia_gpu_duty_cycle", "nvidia_gpu_memory_used_bytes", "nvidia_gpu_memory_total_bytes",
                    "nvidia_gpu_power_usage_milliwatts", "nvidia_gpu_jobId")
#: CEEMS exporter's GPU -> compute unit mapping (github.com/mahendrapaipuri/ceems, pkg/collector/slurm.go).
CEEMS_GPU_MAP = "ceems_compute_unit_gpu_index_flag"
#: How the mapping sources name themselves in the join report (``job_mapping`` column, placement).
JOBSTATS_SOURCE = "jobstats nvidia_gpu_jobId"
CEEMS_SOURCE = "CEEMS"


def _series_points(paths: Any, timestamp: Any, metrics: Sequence[str]) -> pd.DataFrame:
    """Points of the ``metrics`` series in exposition text files or saved
    query answers (JSON, told by the first character): metric, source,
    line (0 for JSON), ts (ns), value, and every label as a column ("" where
    a series lacks it). ``timestamp``: the instant of lines without one, for
    every file or one per file (:func:`_scrape_instants`)."""
    files = [str(p) for p in _paths(paths)]
    bodies = {f: _read(f) for f in files}
    stamps = _scrape_instants(timestamp, len(files))
    stamp_of = dict(zip(files, stamps if isinstance(stamps, list) else [stamps] * len(files)))
    parts = []
    for is_json, default_ts in [(is_json, ts) for is_json in (False, True) for ts in dict.fromkeys(stamp_of.values())]:
        inputs = [(bodies[f], f, "") for f in files
                  if bodies[f].lstrip().startswith("{") == is_json and stamp_of[f] == default_ts]
        if not inputs:
            continue
        raw = _core.prom_series(inputs, is_json, default_ts, list(metrics))
        series = pd.DataFrame([labels for _, _, labels in raw["series"]], dtype=object)
        series["metric"] = [name for name, _, _ in raw["series"]]
        series["source"] = np.asarray(raw["sources"], dtype=object)[[src for _, src, _ in raw["series"]]] \
            if len(raw["series"]) else np.array([], dtype=object)
        sid = np.asarray(raw["series_id"])
        points = series.iloc[sid].reset_index(drop=True)
        points["ts"] = np.asarray(raw["timestamp_ns"], dtype=np.int64)
        points["value"] = np.asarray(raw["value"], dtype=np.float64)
        points["line"] = np.asarray(raw["line"], dtype=np.int64)
        parts.append(points[points["metric"].isin(metrics).to_numpy()])
    if not parts:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in ("metric", "source")}).assign(
            ts=np.array([], dtype=np.int64), value=np.array([], dtype=np.float64), line=np.array([], dtype=np.int64))
    out = pd.concat(parts, ignore_index=True)
    labels = [c for c in out.columns if c not in ("metric", "source", "ts", "value", "line")]
    out[labels] = out[labels].fillna("").astype(str)
    return out


def _where(points: pd.DataFrame, mask: np.ndarray) -> str:
    """The first flagged point as ``file line N`` (text) or ``file series metric{...}`` (JSON)."""
    i = int(np.flatnonzero(mask)[0])
    row = points.iloc[i]
    return f"{row['source']} line {row['line']}" if row["line"] else f"{row['source']} series {row['metric']}"


def _node_of(points: pd.DataFrame, labels: Sequence[str]) -> np.ndarray:
    """Each point's node: the first non-empty of ``labels``, else Prometheus'
    ``instance`` without its port, else (a scrape file) the file's name up to
    its first dot."""
    node = np.full(len(points), "", dtype=object)
    for label in list(labels) + ["instance"]:
        if label not in points.columns:
            continue
        values = points[label].to_numpy(dtype=object)
        if label == "instance":
            values = points[label].str.replace(r":\d+$", "", regex=True).to_numpy(dtype=object)
        node = np.where(node == "", values, node)
    if (node == "").any():
        from pathlib import Path
        names = points["source"].map(lambda f: Path(f).name.split(".", 1)[0])
        node = np.where(node == "", names.to_numpy(dtype=object), node)
    return node


def _resource_ids(node: np.ndarray, nodes: Any, keep_unknown_nodes: bool, points: pd.DataFrame) -> np.ndarray:
    if nodes is None:
        return node
    t = Table(nodes, "nodes")
    lookup = pd.Series(np.asarray(t.column("resource_id"), dtype=object).astype(str),
                       index=np.asarray(t.column("node"), dtype=object).astype(str))
    lookup = lookup[~lookup.index.duplicated(keep="last")]
    found = pd.Series(node).map(lookup).to_numpy(dtype=object)
    unknown = pd.isna(found)
    if unknown.any() and not keep_unknown_nodes:
        raise InvalidInputError(f"{_where(points, unknown)}: node '{node[unknown][0]}' is not in the nodes table "
                                "(pass keep_unknown_nodes to use the node name as the resource id)")
    return np.where(unknown, node, found)


def _device_of(points: pd.DataFrame, labels: Sequence[str]) -> np.ndarray:
    """The GPU index from the first of ``labels`` a point has; a non-integer is an error naming it."""
    text = np.full(len(points), "", dtype=object)
    for label in labels:
        if label in points.columns:
            text = np.where(text == "", points[label].to_numpy(dtype=object), text)
    number = pd.to_numeric(pd.Series(text), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(number) | (number < 0) | (number != np.floor(number))
    if bad.any():
        raise InvalidInputError(f"{_where(points, bad)}, label {'/'.join(labels)}: '{text[bad][0]}' is not a GPU "
                                "index")
    return number.astype(np.int64)


def _durations(key: np.ndarray, ts: np.ndarray, interval: float | None) -> tuple[np.ndarray, float]:
    """Each reading's gap to its GPU's next one, capped at the spacing (the
    median gap): a gap counts as missing, as for DCGM (io/usage.h)."""
    order = np.lexsort((ts, key))
    k, t = key[order], ts[order]
    same_next = np.append(k[1:] == k[:-1], False)
    gap = np.append(np.diff(t), 0).astype(np.float64) / 1e9
    gaps = gap[same_next & (gap > 0)]
    spacing = float(np.median(gaps)) if len(gaps) else float(interval if interval is not None else 60.0)
    out = np.empty(len(ts), dtype=np.float64)
    out[order] = np.where(same_next & (gap > 0), np.minimum(gap, spacing), spacing)
    return out, spacing


def _no_mig(points: pd.DataFrame, label: str, what: str) -> None:
    if label in points.columns:
        mig = (points[label].to_numpy(dtype=object) != "")
        if mig.any():
            raise InvalidInputError(f"{_where(points, mig)}, label {label}: a MIG instance "
                                    f"({label}=\"{points[label].to_numpy(dtype=object)[mig][0]}\"): {what} is read for "
                                    "whole GPUs only; read MIG nodes' telemetry with dcgm-exporter")


def read_jobstats(paths: Any, *, timestamp: Any = None, interval: Any = None, nodes: Any = None,
                  node_labels: Sequence[str] = DEFAULT_NODE_LABELS, keep_unknown_nodes: bool = False) -> pd.DataFrame:
    """Usage samples from Princeton jobstats' GPU exporter
    (``nvidia_gpu_prometheus_exporter``): scrapes (``curl node:9445/metrics``)
    or saved Prometheus answers, one file per metric or many.

    Per GPU and instant: ``util`` from ``nvidia_gpu_duty_cycle`` (percent),
    ``mem_used`` from ``nvidia_gpu_memory_used_bytes``, ``power_w`` from
    ``nvidia_gpu_power_usage_milliwatts`` (/1000), ``mem_free`` from
    ``nvidia_gpu_memory_total_bytes``; the consumer is the Slurm job holding
    the GPU: the exporter's ``jobid`` label (exporter 0.2.2 and later put it
    on every metric), else the value of ``nvidia_gpu_jobId`` at the same
    instant and GPU (0 or absent: a free GPU, consumer ""). The job id is
    ``SLURM_JOB_ID`` (sacct's JobIDRaw: :func:`gpucost.slurm.join_jobs`'
    ``job_ids`` renames array tasks). The GPU index is the ``ordinal`` label
    (the nvidia-smi index, as Slurm's IDX), else ``minor_number`` (older
    exporters); the node the first of ``node_labels``, else ``instance``
    without its port, else a scrape file's name up to its first dot.
    ``job_mapping`` names the source ("jobstats nvidia_gpu_jobId") for the
    join report. MIG instances (``GPU_I_ID``) are an error: whole GPUs only.
    Durations as for :func:`read_dcgm_text`; ``timestamp`` is the instant of
    scrape lines without one (one for every file, or one per file: a
    directory of scrapes read together, so that each GPU's spacing is
    known), ``interval`` the seconds a lone scrape stands for. The report's
    ``spacing_seconds`` is the scrapes' own (None for lone scrapes).

    Examples:
        One scrape of a node with two GPUs, job 1234567 on GPU 0 (the
        exporter before 0.2.2: no ``jobid`` label, ``nvidia_gpu_jobId`` 0 on
        a free GPU):

        >>> from pathlib import Path
        >>> gpu = lambda i: f'minor_number="{i}",name="NVIDIA A100-SXM4-80GB",uuid="GPU-{i}aaa"'
        >>> _ = Path("della-l01g1.prom").write_text(
        ...     f"nvidia_gpu_duty_cycle{{{gpu(0)}}} 85\\n"
        ...     f"nvidia_gpu_duty_cycle{{{gpu(1)}}} 0\\n"
        ...     f"nvidia_gpu_memory_used_bytes{{{gpu(0)}}} 4.2e+10\\n"
        ...     f"nvidia_gpu_memory_used_bytes{{{gpu(1)}}} 0\\n"
        ...     f"nvidia_gpu_power_usage_milliwatts{{{gpu(0)}}} 312000\\n"
        ...     f"nvidia_gpu_jobId{{{gpu(0)}}} 1234567\\n"
        ...     f"nvidia_gpu_jobId{{{gpu(1)}}} 0\\n")
        >>> usage = gpucost.prometheus.read_jobstats("della-l01g1.prom", timestamp="2026-03-01 10:00", interval=30)
        >>> usage[["resource_id", "device", "consumer", "util", "mem_used", "power_w", "duration"]]
           resource_id  device consumer  util      mem_used  power_w  duration
        0  della-l01g1       0  1234567  0.85  4.200000e+10    312.0      30.0
        1  della-l01g1       1           0.00  0.000000e+00      NaN      30.0
    """
    points = _series_points(paths, timestamp, JOBSTATS_METRICS)
    _no_mig(points, "GPU_I_ID", "jobstats telemetry")
    if not len(points):
        raise InvalidInputError(f"{', '.join(str(p) for p in _paths(paths))}: no jobstats GPU metric "
                                f"({', '.join(JOBSTATS_METRICS)})")
    node = _node_of(points, node_labels)
    device = _device_of(points, ["ordinal", "minor_number"])
    metric = points["metric"].to_numpy(dtype=object)
    value = points["value"].to_numpy(dtype=np.float64)
    util_row = metric == "nvidia_gpu_duty_cycle"
    bad = ~np.isfinite(value) | (value < 0) | (util_row & (value > 100))
    if bad.any():
        raise InvalidInputError(f"{_where(points, bad)}, value: {float(value[bad][0])!r} is not a valid "
                                f"{metric[bad][0]} reading")
    key = pd.DataFrame({"node": node, "device": device, "ts": points["ts"].to_numpy()})
    dup = pd.concat([key, pd.Series(metric, name="metric")], axis=1).duplicated(keep=False).to_numpy()
    if dup.any():
        raise InvalidInputError(f"{_where(points, dup)}: GPU {device[dup][0]} of '{node[dup][0]}' has two "
                                f"{metric[dup][0]} readings at one instant (two Prometheus replicas, or a file "
                                "given twice?)")
    # One sample per GPU and instant: each metric's value, and the job from the label or nvidia_gpu_jobId.
    codes = pd.factorize(pd.MultiIndex.from_frame(key))[0]
    first = pd.Series(np.arange(len(points))).groupby(codes).first().to_numpy()
    n = len(first)

    def column(name: str, scale: float) -> np.ndarray:
        out = np.full(n, np.nan)
        rows = metric == name
        out[codes[rows]] = value[rows] * scale
        return out

    job_label = points["jobid"].to_numpy(dtype=object) if "jobid" in points.columns else np.full(len(points), "")
    job = np.full(n, "", dtype=object)
    jid = metric == "nvidia_gpu_jobId"
    job[codes[jid]] = np.where(value[jid] > 0, pd.Series(value[jid]).map(lambda v: f"{v:.0f}").to_numpy(dtype=object),
                               "")
    labelled = job_label != ""
    job[codes[labelled]] = job_label[labelled]
    samples = key.iloc[first].reset_index(drop=True)
    util, mem = column("nvidia_gpu_duty_cycle", 0.01), column("nvidia_gpu_memory_used_bytes", 1.0)
    total = column("nvidia_gpu_memory_total_bytes", 1.0)
    step = None if interval is None else _seconds(interval, "interval")
    duration, spacing = _durations(codes_by_gpu(samples), samples["ts"].to_numpy(), step)
    frame = pd.DataFrame({
        "timestamp": pd.to_datetime(samples["ts"].to_numpy(), utc=True),
        "resource_id": pd.Categorical(_resource_ids(samples["node"].to_numpy(dtype=object), nodes,
                                                    keep_unknown_nodes, points.iloc[first].reset_index(drop=True))),
        "device": samples["device"].to_numpy(dtype=np.int64),
        "consumer": pd.Categorical(job),
        "share": 1.0,
        "util": np.nan_to_num(util),
        "mem_used": np.nan_to_num(mem),
        "duration": duration,
        "node": pd.Categorical(samples["node"].to_numpy(dtype=object)),
        "gpu_uuid": pd.Categorical(points["uuid"].to_numpy(dtype=object)[first] if "uuid" in points
                                   else np.full(n, "", dtype=object)),
        "gpu_model": pd.Categorical(points["name"].to_numpy(dtype=object)[first] if "name" in points
                                    else np.full(n, "", dtype=object)),
        "power_w": column("nvidia_gpu_power_usage_milliwatts", 1e-3),
        "mem_free": total - np.nan_to_num(mem),
        "job_mapping": pd.Categorical(np.where(job != "", JOBSTATS_SOURCE, None)),
    })
    frame = frame.sort_values(["resource_id", "device", "timestamp"], kind="stable").reset_index(drop=True)
    series = int(len(pd.unique(codes_by_gpu(samples))))  # a sample per GPU and instant: a GPU has a gap if n > series
    frame.attrs["diagnostics"] = {"series": series, "spacing_seconds": spacing if n > series else 0.0,
                                  "samples": int(n), "samples_without_util": int(np.isnan(util).sum()),
                                  "samples_without_memory": int(np.isnan(mem).sum()),
                                  "samples_with_job": int((job != "").sum())}
    return telemetry_report(frame, "jobstats exporter")


def codes_by_gpu(samples: pd.DataFrame) -> np.ndarray:
    """One code per (node, GPU) of a readings table."""
    return pd.factorize(pd.MultiIndex.from_frame(samples[["node", "device"]]))[0]


def read_ceems_gpu_map(paths: Any, *, timestamp: Any = None, interval: Any = None,
                       node_labels: Sequence[str] = ("hostname",) + tuple(DEFAULT_NODE_LABELS)) -> pd.DataFrame:
    """The GPU -> Slurm job mapping the CEEMS exporter publishes,
    ``ceems_compute_unit_gpu_index_flag{manager="slurm",uuid="<job id>",
    index="<GPU index>",gpuuuid="GPU-...",gpuiid="",hostname=...} <share>``
    (scrapes of ``ceems_exporter`` or saved Prometheus answers): one row per
    instant, GPU and job with ``timestamp``, ``node`` (``hostname``, else the
    other node labels, else ``instance`` without its port, else a scrape
    file's name up to its first dot), ``device`` (``index``), ``gpu_uuid``
    (``gpuuuid``), ``job`` (``uuid``: the Slurm job id), ``share`` (the value:
    1, or the job's shards over the GPU's) and ``duration`` (the gap to that
    GPU's next mapping, capped at the spacing). Series of other managers
    (``k8s``, ``libvirt``) are left out and counted
    (``attrs["other_managers"]``); MIG instances (``gpuiid``) are an error.
    :func:`gpucost.slurm.apply_gpu_map` gives DCGM samples their jobs.

    Examples:
        >>> from pathlib import Path
        >>> flag = ('ceems_compute_unit_gpu_index_flag{{cgrouphostname="",gpuiid="",gpuuuid="GPU-{u}",'
        ...         'hindex="gpu01/gpu-{i}",hostname="gpu01",index="{i}",manager="slurm",uuid="{job}"}} {v}')
        >>> _ = Path("ceems.prom").write_text("\\n".join([flag.format(u="0aaa", i=0, job=1009248, v=1),
        ...                                                flag.format(u="1bbb", i=1, job=1009249, v=0.5),
        ...                                                flag.format(u="1bbb", i=1, job=1009250, v=0.5)]) + "\\n")
        >>> gpucost.prometheus.read_ceems_gpu_map("ceems.prom", timestamp="2026-03-01 10:00", interval=60)
                          timestamp   node  device  gpu_uuid      job  share  duration
        0 2026-03-01 10:00:00+00:00  gpu01       0  GPU-0aaa  1009248    1.0      60.0
        1 2026-03-01 10:00:00+00:00  gpu01       1  GPU-1bbb  1009249    0.5      60.0
        2 2026-03-01 10:00:00+00:00  gpu01       1  GPU-1bbb  1009250    0.5      60.0
    """
    points = _series_points(paths, timestamp, [CEEMS_GPU_MAP])
    if not len(points):
        raise InvalidInputError(f"{', '.join(str(p) for p in _paths(paths))}: no {CEEMS_GPU_MAP} series (the CEEMS "
                                "exporter's GPU -> job mapping; is its Slurm collector on, --collector.slurm?)")
    manager = points["manager"].to_numpy(dtype=object) if "manager" in points else np.full(len(points), "slurm")
    other = manager != "slurm"
    points = points[~other].reset_index(drop=True)
    _no_mig(points, "gpuiid", "the CEEMS GPU mapping")
    value = points["value"].to_numpy(dtype=np.float64)
    job = points["uuid"].to_numpy(dtype=object) if "uuid" in points else np.full(len(points), "", dtype=object)
    bad = ~np.isfinite(value) | (value < 0) | (value > 1 + 1e-9)
    if bad.any():
        raise InvalidInputError(f"{_where(points, bad)}, value: {float(value[bad][0])!r} is not a GPU share (0 .. 1)")
    if (job == "").any():
        raise InvalidInputError(f"{_where(points, job == '')}, label uuid: empty (the Slurm job id)")
    keep = value > 0  # "a value > 0 indicates the job using current GPU"
    points, value, job = points[keep].reset_index(drop=True), value[keep], job[keep]
    node = _node_of(points, node_labels)
    device = _device_of(points, ["index"])
    readings = pd.DataFrame({"node": node, "device": device, "ts": points["ts"].to_numpy()})
    instants = readings.drop_duplicates()
    step = None if interval is None else _seconds(interval, "interval")
    duration, spacing = _durations(codes_by_gpu(instants), instants["ts"].to_numpy(), step)
    instants = instants.assign(duration=duration)
    out = readings.assign(gpu_uuid=points["gpuuuid"].to_numpy(dtype=object) if "gpuuuid" in points else "",
                          job=job, share=value).merge(instants, on=["node", "device", "ts"], how="left")
    out.insert(0, "timestamp", pd.to_datetime(out.pop("ts").to_numpy(), utc=True))
    out = out[["timestamp", "node", "device", "gpu_uuid", "job", "share", "duration"]]
    out = out.sort_values(["timestamp", "node", "device", "job"], kind="stable").reset_index(drop=True)
    out.attrs["other_managers"] = int(other.sum())
    out.attrs["spacing_seconds"] = spacing
    return out
