"""The files a gpucost config names, read into one bill, one usage table and
one workloads table (docs/cli.md). The command uses it through the plan of
sources (:mod:`gpucost.plan`); a pipeline can call these directly.

- Bills in parts: a list, a glob, a directory or an AWS CUR / Data Exports
  manifest (``*-Manifest.json``) is read part by part by one reader and the
  parts concatenated into one bill (:func:`bill_parts`, :func:`read_bill`).
  Format and compression are found from the bytes (gzip, zstd, Parquet), the
  file name only a hint (:func:`sniff`).
- Telemetry of several kinds at once (DCGM through Prometheus answers and
  exporter scrapes, nvidia-smi logs, Slurm accounting) becomes one usage
  table (:func:`concat_usage`): every sample carries its own ``duration``, so
  sources logged at different intervals mix.
- Workload labels from several kubectl snapshots, kube-state-metrics
  ``kube_pod_labels`` / ``kube_pod_info`` answers and Slurm, merged
  (:func:`merge_workloads`), with a namespace -> label fallback
  (:func:`namespace_labels`) and an error for a label key no pod carries
  (:func:`check_label_keys`).
"""

from __future__ import annotations

import difflib
import io
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpucost.billing import BillRows, zstd_reader
from gpucost.errors import InvalidInputError

__all__ = ["bill_parts", "sniff", "read_bill", "join_parts", "concat_usage", "merge_workloads", "namespace_labels",
           "check_label_keys", "scrape_instant", "scrape_files", "host_of", "label_keys_in", "read_pod_labels"]

GZIP, ZSTD, PARQUET = b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"PAR1"
_BILL_SUFFIXES = (".csv", ".gz", ".parquet", ".pq", ".zst", ".json", ".jsonl", ".ndjson")


# ---- bills in parts -----------------------------------------------------------------


def bill_parts(paths: Sequence[Path], where: str = "bill") -> list[Path]:
    """The part files of a bill: each path is a file, a directory (its bill
    files, recursively, sorted; manifests among them win) or a CUR / Data
    Exports manifest (the parts it lists). Duplicates are read once."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            manifests = sorted(p for p in path.rglob("*Manifest.json") if p.is_file())
            if manifests:
                for m in _current_manifests(manifests):
                    out += manifest_parts(m)
            else:
                files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
                               and p.name.lower().endswith(_BILL_SUFFIXES))
                if not files:
                    raise InvalidInputError(f"{path}: no bill files in the directory ({where})")
                out += files
        elif path.name.endswith("Manifest.json"):
            out += manifest_parts(path)
        elif not path.exists():
            raise InvalidInputError(f"{path}: no such file ({where})")
        else:
            out.append(path)
    return list(dict.fromkeys(out))


def _current_manifests(manifests: list[Path]) -> list[Path]:
    """One manifest per billing period: the shallowest. A versioned CUR keeps
    a manifest per delivery (``<period>/<assemblyId>/...-Manifest.json``)
    next to the period's own, which names the latest; reading them all would
    count the month several times. Two at the same depth for one period are
    an error naming them."""
    chosen: dict[str, Path] = {}
    for m in sorted(manifests, key=lambda p: len(p.parts)):
        try:
            doc = json.loads(m.read_bytes())
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"{m}: not a readable manifest ({exc})") from None
        period = doc.get("billingPeriod") if isinstance(doc, dict) else None
        key = json.dumps(period, sort_keys=True) if period else str(m.parent)
        if key not in chosen:
            chosen[key] = m
        elif len(chosen[key].parts) == len(m.parts):
            raise InvalidInputError(f"{m}: a second manifest for the billing period of {chosen[key]}; give one "
                                    "manifest as the bill")
    return sorted(chosen.values())


def manifest_parts(manifest: Path) -> list[Path]:
    """The local files of the parts a manifest lists: ``reportKeys`` (legacy
    CUR: S3 keys) or ``dataFiles`` (Data Exports: ``s3://`` URIs). A part is
    looked up by the longest tail of its key found under the manifest's
    folder or one of its three parents (so both S3 layouts, copied as they
    are, resolve); a part not found is an error naming it."""
    try:
        doc = json.loads(manifest.read_bytes())
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{manifest}: not a readable manifest ({exc})") from None
    keys = doc.get("dataFiles") if isinstance(doc, dict) else None
    if keys is None and isinstance(doc, dict):
        keys = doc.get("reportKeys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise InvalidInputError(f"{manifest}: no 'dataFiles' or 'reportKeys' list of part names")
    if not keys:
        raise InvalidInputError(f"{manifest}: the manifest lists no parts")
    roots = [manifest.parent, *list(manifest.parent.parents)[:3]]
    parts = []
    for key in keys:
        parts.append(_find_part(key, roots, manifest))
    return parts


def _find_part(key: str, roots: list[Path], manifest: Path) -> Path:
    tail = re.sub(r"^s3://[^/]+/", "", key).strip("/").split("/")
    for i in range(len(tail)):
        for root in roots:
            candidate = root.joinpath(*tail[i:])
            if candidate.is_file():
                return candidate
    raise InvalidInputError(f"{manifest}: part {key!r} not found next to the manifest")


def sniff(path: Path) -> tuple[str, str]:
    """(container, header): container is 'parquet', 'gzip', 'zstd' or
    'plain', from the first bytes; header is the column names (Parquet
    schema, or the first text line)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot open ({exc.strerror})") from None
    if head == PARQUET:
        import pyarrow.parquet as pq
        try:
            return "parquet", ",".join(pq.read_schema(path).names)
        except Exception as exc:  # noqa: BLE001 - any pyarrow failure is unreadable input
            raise InvalidInputError(f"{path}: unreadable Parquet ({exc})") from None
    kind = "gzip" if head[:2] == GZIP else "zstd" if head == ZSTD else "plain"
    try:
        with open_text(path, kind) as f:
            first = f.readline(1 << 20)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: line 1: unreadable ({exc})") from None
    return kind, first.lstrip("\ufeff")


def open_text(path: Path, kind: str) -> io.TextIOBase:
    return io.TextIOWrapper(open_binary(path, kind), encoding="utf-8-sig", newline="")


def open_binary(path: Path, kind: str) -> io.BufferedIOBase:
    """The decompressed bytes of a part: gzip and zstd streams (zstd through
    pyarrow's codec), plain files as they are."""
    if kind == "gzip":
        import gzip
        return gzip.open(path, "rb")
    if kind == "zstd":
        return zstd_reader(str(path), str(path))
    return open(path, "rb")


def read_bill(parts: Sequence[Path], reader: Callable[..., pd.DataFrame], **kwargs: Any) -> pd.DataFrame:
    """Every part through `reader` (a gpucost.read_* function), concatenated
    into one bill; the parts' ``attrs`` reports are kept per part under
    ``attrs["parts"]`` and their counts summed. The parts share one record of
    the rows read (``seen=``): a row repeated across parts is dropped once
    and counted, in money."""
    seen = kwargs.pop("seen", None) or BillRows()
    return join_parts([reader(part, seen=seen, **kwargs) for part in parts], [str(p) for p in parts])


def join_parts(frames: Sequence[pd.DataFrame], names: Sequence[str]) -> pd.DataFrame:
    """The frames of a bill's parts (named ``names``) as one bill; the
    parts' ``attrs`` reports kept per part under ``attrs["parts"]`` and
    their counts summed. One part is returned as it is."""
    if len(frames) == 1:
        return frames[0]
    out = concat_frames(frames)
    out.attrs = merge_attrs([f.attrs for f in frames], names)
    return out


def merge_attrs(attrs: Sequence[Mapping], names: Sequence[str]) -> dict:
    """One attrs dict for frames read from several files: counts summed,
    lists and frames concatenated, nested reports merged the same way,
    differing strings joined, and every part's own attrs under ``parts``."""
    merged: dict[str, Any] = {}
    for a in attrs:
        for key, value in a.items():
            merged[key] = _merge_value(merged[key], value) if key in merged else (
                dict(value) if isinstance(value, Mapping) else value)
    if names:
        merged["source"] = ", ".join(names)
        merged["parts"] = {n: dict(a) for n, a in zip(names, attrs)}
    return merged


def _merge_value(old: Any, new: Any) -> Any:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return merge_attrs([old, new], [])
    if isinstance(old, (int, float, np.number)) and isinstance(new, (int, float, np.number)) \
            and not isinstance(old, bool) and not isinstance(new, bool):
        return old + new
    if isinstance(old, list) and isinstance(new, list):
        return old + new
    if isinstance(old, pd.DataFrame) and isinstance(new, pd.DataFrame):
        return pd.concat([old, new], ignore_index=True)
    if isinstance(old, str) and isinstance(new, str):
        return old if new in old.split("; ") else f"{old}; {new}"
    try:
        if bool(old == new):
            return old
    except (TypeError, ValueError):
        pass
    return (*old, new) if isinstance(old, tuple) else (old, new)  # values that neither add nor match: all kept


# ---- frames of several sources --------------------------------------------------------


def concat_frames(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Rows of all frames; a column categorical in every frame that has it
    stays categorical (codes remapped through one dictionary of the
    categories, no per-row hashing), missing columns are null."""
    frames = [f for f in frames if f is not None]
    if len(frames) == 1:
        return frames[0]
    columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    out: dict[str, Any] = {}
    n = [len(f) for f in frames]
    for column in columns:
        parts = [f[column] if column in f.columns else None for f in frames]
        present = [p for p in parts if p is not None]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in present):
            out[column] = _concat_categoricals(parts, n)
        else:
            empty = present[0].iloc[:0]  # a missing part: nulls of the column's own kind (NaN, NaT)
            out[column] = pd.concat([p if p is not None else empty.reindex(range(k))
                                     for p, k in zip(parts, n)], ignore_index=True)
    return pd.DataFrame(out)


def _concat_categoricals(parts: Sequence[pd.Series | None], sizes: Sequence[int]) -> pd.Categorical:
    """One categorical of several (a None part is all missing): each part's
    categories are looked up once in a shared dictionary and its codes
    remapped with an array take."""
    index: dict[Any, int] = {}
    codes = []
    for part, size in zip(parts, sizes):
        if part is None:
            codes.append(np.full(size, -1, dtype=np.int64))
            continue
        cats = part.cat.categories
        remap = np.array([index.setdefault(c, len(index)) for c in cats] + [-1], dtype=np.int64)
        own = part.cat.codes.to_numpy()
        codes.append(remap[np.where(own < 0, len(cats), own)])
    categories = pd.Index(np.asarray(list(index), dtype=object), dtype=object)
    all_codes = np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)
    return pd.Categorical.from_codes(all_codes, categories=categories)


def concat_usage(frames: Sequence[pd.DataFrame], intervals: Sequence[float], names: Sequence[str],
                 files: Sequence[Sequence[str]] | None = None) -> pd.DataFrame:
    """One usage table from several sources; a source's samples without a
    ``duration`` get its own sampling interval, so each stands for its own
    time whatever the others' intervals. ``attrs["diagnostics"]`` keeps each
    source's diagnostics under its name."""
    if len(frames) == 1:
        return frames[0]
    _one_source_per_gpu(frames, names, files or [[] for _ in frames])
    filled = []
    for frame, interval in zip(frames, intervals):
        if "duration" not in frame.columns:
            frame = frame.assign(duration=float(interval))
        elif frame["duration"].isna().any():
            frame = frame.assign(duration=frame["duration"].fillna(float(interval)))
        filled.append(frame)
    out = concat_frames(filled)
    out.attrs["diagnostics"] = {name: dict(f.attrs.get("diagnostics", {})) for name, f in zip(names, frames)}
    for key in dict.fromkeys(k for f in frames for k in f.attrs if k != "diagnostics"):  # e.g. reader reports
        out.attrs[key] = {name: f.attrs[key] for name, f in zip(names, frames) if key in f.attrs}
    return out


def gpus_of(frame: pd.DataFrame) -> pd.DataFrame:
    """The distinct (resource_id, device) pairs of usage samples: a bitmap
    over the categorical codes (no per-sample hashing) when resource_id is
    categorical."""
    if not {"resource_id", "device"} <= set(frame.columns) or not len(frame):
        return pd.DataFrame({"resource_id": pd.Series([], dtype=object), "device": pd.Series([], dtype=np.int64)})
    rid, device = frame["resource_id"], np.asarray(frame["device"], dtype=np.int64)
    if isinstance(rid.dtype, pd.CategoricalDtype) and device.min() >= 0:
        codes = rid.cat.codes.to_numpy()
        ok = codes >= 0
        seen = np.zeros((len(rid.cat.categories), int(device.max()) + 1), dtype=bool)
        seen[codes[ok], device[ok]] = True
        r, d = np.nonzero(seen)
        return pd.DataFrame({"resource_id": np.asarray(rid.cat.categories, dtype=object)[r], "device": d})
    pairs = pd.DataFrame({"resource_id": rid.astype(object).to_numpy(), "device": device}).drop_duplicates()
    return pairs.reset_index(drop=True)


def _one_source_per_gpu(frames: Sequence[pd.DataFrame], names: Sequence[str],
                        files: Sequence[Sequence[str]]) -> None:
    """A GPU in two sources would be counted twice (twice its GPU-hours): an
    error naming the GPU and both sources with their files."""
    def where(i: int) -> str:
        shown = ", ".join(files[i][:2]) + (f", ... ({len(files[i])} files)" if len(files[i]) > 2 else "")
        return f"{names[i]} ({shown})" if shown else names[i]

    owner: dict[tuple, int] = {}
    for i, frame in enumerate(frames):
        pairs = gpus_of(frame)
        for rid, device in zip(pairs["resource_id"], pairs["device"]):
            first = owner.setdefault((rid, int(device)), i)
            if first != i:
                raise InvalidInputError(f"telemetry: GPU {device} of '{rid}' is in two sources, {where(first)} and "
                                        f"{where(i)}; give each GPU one source (its samples would count twice)")


def merge_workloads(frames: Sequence[pd.DataFrame]) -> pd.DataFrame | None:
    """Workloads of several snapshots and sources: one row per consumer;
    each label is the last non-empty value any source gives (later sources
    win), so a pod that ended before the last snapshot keeps its labels."""
    frames = [f for f in frames if f is not None and len(f.columns)]
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    both = concat_frames([f.astype({c: object for c in f.columns}) for f in frames])
    both = both.replace("", None)
    merged = both.groupby("consumer", sort=False, dropna=False).last()  # last non-null per column
    out = merged.reset_index().astype(object).where(lambda f: f.notna(), None)
    out.attrs = label_history(frames)
    return out


def label_history(frames: Sequence[pd.DataFrame]) -> dict:
    """``{"labels": {"start", "end"}}``: the instants the label sources of
    ``frames`` cover together, when every one of them says (a
    ``kube_pod_labels`` history does, a kubectl snapshot does not); else
    ``{}``. The join report names them when labels cover too little."""
    spans = [(f.attrs.get("labels") or {}) for f in frames if f is not None]
    if not spans or not all(s.get("start") is not None and s.get("end") is not None for s in spans):
        return {}
    return {"labels": {"start": min(s["start"] for s in spans), "end": max(s["end"] for s in spans)}}


def namespace_labels(workloads: pd.DataFrame | None, consumers: Sequence[str],
                     namespaces: Mapping[str, Mapping[str, str]], columns: Sequence[str]) -> pd.DataFrame | None:
    """Fills labels a pod lacks from its namespace (``[labels.namespaces]``:
    namespace -> {column: value}), and adds the pods the usage knows but no
    label source does. Consumers are "namespace/pod"; others are left as
    they are."""
    if not namespaces:
        return workloads
    for ns, values in namespaces.items():
        unknown = set(values) - set(columns)
        if unknown:
            raise InvalidInputError(f"[labels.namespaces]: '{ns}': unknown label column '{sorted(unknown)[0]}' "
                                    f"(the columns are {', '.join(columns)})")
    base = workloads if workloads is not None else pd.DataFrame({"consumer": pd.Series([], dtype=object)})
    known = set(base["consumer"].astype(str))
    extra = [c for c in consumers if c not in known and "/" in c and c.split("/", 1)[0] in namespaces]
    history = dict(base.attrs)
    if extra:
        base = pd.concat([base, pd.DataFrame({"consumer": extra})], ignore_index=True)
    base = base.copy()
    base.attrs = history
    ns = base["consumer"].astype(str).str.split("/", n=1).str[0]
    for column in columns:
        mapping = {n: v[column] for n, v in namespaces.items() if column in v}
        if not mapping:
            continue
        if column not in base.columns:
            base[column] = None
        current = base[column].astype(object)
        missing = current.isna() | (current == "")
        base[column] = current.where(~missing, ns.map(mapping)).astype(object)
        base[column] = base[column].where(base[column].notna(), None)
    return base


def check_label_keys(workloads: pd.DataFrame | None, wanted: Mapping[str, str], existing: Callable[[], list[str]],
                     where: str) -> None:
    """A configured label key that no pod carries is a typo until shown
    otherwise: an error listing the keys that exist, nearest first."""
    if workloads is None or not len(workloads):
        return
    for column, key in wanted.items():
        if column in workloads.columns and workloads[column].notna().any():
            continue
        keys = existing()
        near = difflib.get_close_matches(key, keys, n=len(keys), cutoff=0.0)
        shown = ", ".join(near[:12]) + (f", ... ({len(keys)} in all)" if len(keys) > 12 else "")
        raise InvalidInputError(f"{where}: label key '{key}' (column '{column}') is on no pod; the pods' label "
                                f"keys are: {shown or '(none)'}")


def label_keys_in(kubectl: Sequence[Path], ksm: Sequence[Path]) -> list[str]:
    """Every label key on the pods of kubectl snapshots and saved
    kube_pod_labels answers (as kube-state-metrics spells them,
    ``label_<key>``). Read only to explain an error."""
    keys: set[str] = set()
    for path in kubectl:
        doc = json.loads(Path(path).read_bytes())
        for item in doc.get("items", []) if isinstance(doc, dict) else []:
            keys.update(((item.get("metadata") or {}).get("labels") or {}).keys())
    for path in ksm:
        doc = json.loads(Path(path).read_bytes())
        for series in (doc.get("data") or {}).get("result", []):
            keys.update(k for k in (series.get("metric") or {}) if k.startswith("label_"))
    return sorted(keys)


def read_pod_labels(paths: Sequence[str | os.PathLike] | str | os.PathLike,
                    labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Workloads (``consumer`` = "namespace/pod" plus one column per entry of
    ``labels``, column -> pod label key) from saved answers of
    kube-state-metrics' ``kube_pod_labels`` (``/api/v1/query_range`` or
    ``/api/v1/query`` JSON), e.g. ``kube_pod_labels`` over the month at a
    1-hour step: every pod that ran in the range, finished ones included. A
    pod whose labels changed keeps the latest. Parsed in C++."""
    from gpucost import _core
    from gpucost.frames import workloads_frame
    from gpucost.kubernetes import DEFAULT_LABELS
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    keys = [(str(c), str(k)) for c, k in (DEFAULT_LABELS if labels is None else labels).items()]
    bodies = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            bodies.append((f.read(), str(path), "kube_pod_labels"))
    return workloads_frame(_core.kube_pod_labels(bodies, keys))


def pods_from_info(bodies: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """The pods (consumer "namespace/pod") kube-state-metrics'
    ``kube_pod_info`` answers name, without labels: known pods, so the
    namespace fallback and the unlabelled list see them."""
    pods: list[str] = []
    for text, name in bodies:
        try:
            doc = json.loads(text)
            result = doc["data"]["result"]
        except (ValueError, KeyError, TypeError):
            raise InvalidInputError(f"{name}: not a Prometheus query answer (kube_pod_info)") from None
        for series in result:
            m = series.get("metric") or {}
            ns = m.get("exported_namespace") or m.get("namespace")
            pod = m.get("exported_pod") or m.get("pod")
            if not ns or not pod:
                raise InvalidInputError(f"{name}: series {m}: no namespace or pod label")
            pods.append(f"{ns}/{pod}")
    return pd.DataFrame({"consumer": pd.Series(list(dict.fromkeys(pods)), dtype=object)})


def is_kube_pod_info(path: Path) -> bool:
    """A saved answer of kube_pod_info (not kube_pod_labels): its first
    series names the metric."""
    with open(path, "rb") as f:
        head = f.read(4096)
    return b'"kube_pod_info"' in head


# ---- nvidia-smi logs and dcgm-exporter scrapes ---------------------------------------


def host_of(path: Path) -> str:
    """The host a log file belongs to: its name up to the first dot
    (``gpu01.gpu.csv``, ``gpu01.apps.csv`` -> ``gpu01``)."""
    return path.name.split(".", 1)[0]


_NAME_INSTANT = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})[T_ ]?(\d{2})[:-]?(\d{2})[:-]?(\d{2})Z?(?!\d)")
_NAME_EPOCH = re.compile(r"(?<!\d)(1\d{9})(?!\d)")


def scrape_instant(path: Path) -> pd.Timestamp:
    """When a scrape without its own timestamps was taken: an instant in the
    file name (``20260301T100000Z``, ``2026-03-01T10:00:00Z``, UTC, or Unix
    seconds), else the file's modification time."""
    m = _NAME_INSTANT.search(path.name)
    if m:
        y, mo, d, h, mi, s = (int(x) for x in m.groups())
        try:
            return pd.Timestamp(year=y, month=mo, day=d, hour=h, minute=mi, second=s, tz="UTC")
        except ValueError:
            pass
    m = _NAME_EPOCH.search(path.name)
    if m:
        return pd.Timestamp(int(m.group(1)), unit="s", tz="UTC")
    return pd.Timestamp(os.stat(path).st_mtime_ns, unit="ns", tz="UTC")


def scrape_files(paths: Sequence[Path]) -> list[Path]:
    """Scrape files: each path a file or a directory (its ``*.prom``, ``*.txt``
    and ``*.metrics`` files, recursively, sorted)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".prom", ".txt", ".metrics"))
            if not files:
                raise InvalidInputError(f"{path}: no .prom, .txt or .metrics files in the directory (dcgm_text)")
            out += files
        elif not path.exists():
            raise InvalidInputError(f"{path}: no such file (dcgm_text)")
        else:
            out.append(path)
    return out
