"""The gpucost configuration file (TOML) and the sources it names
(docs/cli.md). The command reads it; so can a pipeline or a notebook.

```toml
[sources]
bill = "focus.csv.gz"            # FOCUS, CUR (legacy or 2.0), GCP or Azure export; or a list, globs,
                                 # a directory or a CUR/Data Exports *-Manifest.json (parts read as one bill)
bill_format = "auto"             # focus | cur | gcp | azure | auto (from the columns)
bill_tz = "UTC"                  # zone of the bill's timestamps written without one
bill_dataset = "auto"            # auto | actual | amortized (Azure's two cost exports; auto: from the content)
telemetry = ["prometheus/*.json"]  # saved query_range / query answers, and/or:
prometheus = "http://prometheus:9090"
start = "2026-03-01"
end = "2026-04-01"
step = 60                        # live queries; saved answers default to their own spacing
exporter_names = ["nvidia-dcgm-exporter", "dcgm-exporter"]  # the exporter's own pods are free GPUs
dcgm_text = ["scrapes/"]         # dcgm-exporter scrapes (.prom files or directories)
nvidia_smi = ["smi/*.gpu.csv"]   # nvidia-smi --query-gpu (or dmon/pmon -o DT) logs, host = file name up to the first dot
nvidia_smi_apps = ["smi/*.apps.csv"]
pid_jobs = "pids.csv"            # pid, job[, host]
sacct = ["sacct.txt"]            # Slurm accounting
hosts = "hosts.csv"              # host, resource_id[, tz]: Slurm nodes, nvidia-smi and plain DCGM hosts
timezone = "UTC"                 # sacct times, nvidia-smi logs without a tz in hosts
pods = ["pods.json"]             # kubectl get pods -A -o json snapshots (merged)
pod_labels = "prometheus"        # kube_pod_labels / kube_pod_info: "prometheus" or saved answers
nodes = "nodes.json"             # kubectl get nodes -o json, or "prometheus" (kube_node_info)
# or gpucost's own tables (CSV or Parquet): costs, usage, inventory, workloads

[labels]                         # result column = pod label key
team = "team-id"
project = "project-id"

[labels.namespaces]              # a namespace's labels for its pods that have none
jupyter = { team = "research" }

[policy]
basis = "allocated"              # allocated | used | blended
idle = "keep"                    # keep | share
by = ["team", "project"]
threads = 0                      # engine threads; 0: one per core this process may use

[attribution]                    # gpucost.attribute_tagged, then gpucost.share_costs
tag = "project"                  # tag key(s) naming the group of lines outside the GPUs
by = "project"                   # the group column (default: the first of by)
shared = { service = "AmazonVPC" }  # shared lines (or a DataFrame.query string)
split = "weighted"               # weighted | even

[budgets]
file = "budgets.csv"             # key, value, amount, thresholds (key = a label column, e.g. team)
```

Relative paths are relative to the file. Every key is also a command-line
flag (``--bill``, ``--basis``, ...), and flags win.
"""

from __future__ import annotations

import glob
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import gpucost
from gpucost import sources
from gpucost.errors import InvalidInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Config", "load_config", "Tables", "load_tables", "instance_ids", "attribute", "SECTIONS"]

#: Allowed keys per section, with their types.
SECTIONS: dict[str, dict[str, type | tuple]] = {
    "sources": {"demo": bool, "bill": (str, list), "bill_format": str, "bill_dataset": str, "bill_tz": str,
                "costs": str, "usage": str,
                "inventory": str, "workloads": str, "telemetry": (str, list), "prometheus": str, "start": str,
                "end": str, "step": (int, float), "pods": (str, list), "nodes": (str, list),
                "pod_labels": (str, list), "dcgm_text": (str, list), "nvidia_smi": (str, list),
                "nvidia_smi_apps": (str, list), "sacct": (str, list), "hosts": str, "pid_jobs": str,
                "timezone": str, "keep_unknown_nodes": bool, "interruptions": str, "rates": str,
                "existing": str, "bearer_token": str, "exporter_names": (str, list)},
    "labels": {},  # any key: str; "namespaces": a table of namespace -> {column: value}
    "policy": {"basis": str, "idle": str, "interval": (int, float), "alpha": (int, float), "by": (str, list),
               "strict": bool, "threads": int},
    "budgets": {"file": str, "today": str},
    "report": {"title": str, "output": str},
    "metrics": {"listen": str, "textfile": str, "prefix": str},
    "attribution": {"tag": (str, list), "by": str, "tag_map": dict, "shared": (str, dict), "split": str},
}
DEFAULT_LABELS = {"team": "team-id", "project": "project-id", "user": "user-id", "job": "job-id"}


@dataclass
class Config:
    """The settings of a run: ``sources``, ``labels``, ``policy``,
    ``budgets``, ``report``, ``metrics`` (plain dicts), and ``base``, the
    directory relative paths start from."""

    sources: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    policy: dict = field(default_factory=dict)
    budgets: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    attribution: dict = field(default_factory=dict)
    base: Path = field(default_factory=lambda: Path("."))
    name: str = "config"

    def path(self, value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.base / p

    def paths(self, value: str | list) -> list[Path]:
        """Paths of a string or list, with globs expanded (sorted)."""
        out: list[Path] = []
        for item in [value] if isinstance(value, str) else value:
            pattern = str(self.path(item))
            matches = sorted(glob.glob(pattern)) if any(ch in pattern for ch in "*?[") else [pattern]
            if not matches:
                raise InvalidInputError(f"{self.name}: [sources]: no file matches {item!r}")
            out += [Path(m) for m in matches]
        return list(dict.fromkeys(out))  # a file two patterns match is read once

    def set(self, section: str, key: str, value: Any) -> None:
        """Sets a value from a flag (flags win over the file)."""
        if value is not None:
            getattr(self, section)[key] = value


def load_config(path: str | Path | None) -> Config:
    """Reads a gpucost TOML file; ``None`` gives the defaults. Unknown
    sections or keys, and values of the wrong type, are errors naming the
    file, section and key."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"{p}: no such config file") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{p}: not UTF-8 text ({exc.reason})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{p}: {exc}") from None
    config = Config(base=p.resolve().parent, name=str(p))
    for section, values in raw.items():
        if section not in SECTIONS:
            raise InvalidInputError(f"{p}: unknown section [{section}] (one of {', '.join(SECTIONS)})")
        if not isinstance(values, Mapping):
            raise InvalidInputError(f"{p}: [{section}] must be a table")
        allowed = SECTIONS[section]
        for key, value in values.items():
            expected = allowed.get(key, (dict if key == "namespaces" else str) if section == "labels" else None)
            if expected is None:
                raise InvalidInputError(f"{p}: [{section}]: unknown key '{key}' (one of {', '.join(allowed)})")
            if isinstance(value, bool) and expected is not bool:
                raise InvalidInputError(f"{p}: [{section}]: key '{key}': expected {_type_name(expected)}, got a boolean")
            if not isinstance(value, expected):
                raise InvalidInputError(f"{p}: [{section}]: key '{key}': expected {_type_name(expected)}, "
                                        f"got {type(value).__name__}")
            if isinstance(value, list) and not all(isinstance(v, str) for v in value):
                raise InvalidInputError(f"{p}: [{section}]: key '{key}': expected a list of strings")
            getattr(config, section)[key] = value
    for ns, values in config.labels.get("namespaces", {}).items():
        if not isinstance(values, Mapping) or not all(isinstance(v, str) for v in values.values()):
            raise InvalidInputError(f"{p}: [labels.namespaces]: key '{ns}': expected a table of column = \"value\"")
    return config


def _type_name(t) -> str:
    names = {str: "a string", bool: "true or false", int: "a number", float: "a number", list: "a list",
             dict: "a table"}
    return " or ".join(dict.fromkeys(names[x] for x in (t if isinstance(t, tuple) else (t,))))


# ---- the tables a run needs ---------------------------------------------------


@dataclass
class Tables:
    """The inputs of an allocation, plus what the analyses use."""

    costs: pd.DataFrame
    usage: pd.DataFrame
    inventory: pd.DataFrame
    workloads: pd.DataFrame | None = None
    bill: pd.DataFrame | None = None
    budgets: pd.DataFrame | None = None
    interruptions: Any = None
    rates: pd.DataFrame | None = None
    interval: float = 60
    existing: pd.DataFrame | None = None  # commitments already bought (advise_commitments' existing=)


_NUMERIC = ("cost", "list_cost", "share", "util", "mem_used", "duration", "device", "mem_capacity", "amount",
            "hourly")


def _read_table(path: Path, name: str) -> pd.DataFrame:
    """gpucost's own tables: CSV (instants parsed as UTC) or Parquet."""
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file ({name})")
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith(".parquet") or suffixes.endswith(".pq"):
        return pd.read_parquet(path)
    if ".csv" in suffixes:
        try:
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as exc:
            raise InvalidInputError(f"{path}: {str(exc).strip().splitlines()[0]}") from None
        for column in ("start", "end", "timestamp"):
            if column in frame.columns:
                parsed = pd.to_datetime(frame[column], utc=True, errors="coerce", format="ISO8601")
                bad = parsed.isna() & frame[column].notna()
                if bad.any():
                    row = int(bad.to_numpy().nonzero()[0][0])
                    raise InvalidInputError(f"{path}: line {row + 2}, column '{column}': {frame[column].iloc[row]!r} "
                                            "is not an ISO 8601 instant")
                frame[column] = parsed
        for column in _NUMERIC:
            if column in frame.columns and not pd.api.types.is_numeric_dtype(frame[column]):
                numbers = pd.to_numeric(frame[column], errors="coerce")
                bad = numbers.isna() & frame[column].notna()
                if bad.any():
                    row = int(bad.to_numpy().nonzero()[0][0])
                    raise InvalidInputError(f"{path}: line {row + 2}, column '{column}': {frame[column].iloc[row]!r} "
                                            "is not a number")
                frame[column] = numbers
        for column in ("consumer",):
            if column in frame.columns:
                frame[column] = frame[column].fillna("")
        return frame
    raise InvalidInputError(f"{path}: unknown table format (use .csv, .csv.gz or .parquet)")


def _need(name: str, issue: str):
    function = getattr(gpucost, name, None)
    if function is None:
        module, _, attr = name.rpartition(".")
        if module:
            try:
                function = getattr(__import__(f"gpucost.{module}", fromlist=[attr]), attr)
            except (ImportError, AttributeError):
                function = None
    if function is None:
        raise gpucost.Error(f"this build of gpucost has no gpucost.{name} (built by {issue}); use gpucost's own "
                            "tables (--costs, --usage, --inventory, --workloads) or --demo")
    return function


def _read_bill(config: Config, progress: bool) -> pd.DataFrame:
    """The bill: one file, or the parts of one export (a list, globs, a
    directory or a CUR/Data Exports manifest), read as one bill."""
    fmt = config.sources.get("bill_format", "auto")
    readers = {"focus": "read_focus", "cur": "read_cur", "gcp": "read_gcp_billing", "azure": "read_azure_costs"}
    if fmt not in readers and fmt != "auto":
        raise InvalidInputError(f"{config.name}: [sources]: bill_format {fmt!r} is not one of auto, "
                                f"{', '.join(readers)}")
    parts = sources.bill_parts(config.paths(config.sources["bill"]))
    if fmt == "auto":
        found = {part: _detect_bill(part) for part in parts}
        kinds = sorted(set(found.values()))
        if len(kinds) > 1:
            first = {k: next(p for p, v in found.items() if v == k) for k in kinds}
            raise InvalidInputError("bill: the parts are of different formats: "
                                    + ", ".join(f"{first[k]} is {k}" for k in kinds))
        fmt = kinds[0]
    reader = _need(readers[fmt], "the billing issue")
    dataset = config.sources.get("bill_dataset", "auto")
    if dataset not in ("auto", "actual", "amortized"):
        raise InvalidInputError(f"{config.name}: [sources]: bill_dataset {dataset!r} is not one of auto, actual, "
                                "amortized")
    options: dict = {"progress": progress, "tz": config.sources.get("bill_tz")}
    if fmt == "azure":
        options["dataset"] = dataset
    elif dataset == "actual":
        # Only Azure exports the two datasets as separate files; the others'
        # billed amount is the actual cost.
        options["amount"] = "billed"
    return sources.read_bill(parts, reader, **options)


def _detect_bill(path: Path) -> str:
    """The bill format from the columns, read from the file's bytes: gzip,
    zstd and Parquet are recognised by their magic bytes whatever the name."""
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file (bill)")
    _, header = sources.sniff(path)
    if "ChargePeriodStart" in header or "EffectiveCost" in header:
        return "focus"
    if "lineItem/" in header or "line_item_" in header:
        return "cur"
    if "usage_start_time" in header or "sku.id" in header or "sku" in header and "cost_type" in header:
        return "gcp"
    if "costinbillingcurrency" in header.lower():
        return "azure"
    raise InvalidInputError(f"{path}: line 1: not a FOCUS, CUR, GCP or Azure header; set bill_format")


_EC2_ARN = r"^arn:aws[a-z-]*:ec2:[^:]*:[0-9]*:instance/(i-[0-9a-f]+)$"


def instance_ids(costs: pd.DataFrame) -> pd.DataFrame:
    """Cost lines whose ``resource_id`` is an EC2 instance ARN
    (``arn:aws:ec2:us-east-1:1111:instance/i-0abc``, as AWS's FOCUS export
    writes it) get the instance id (``i-0abc``) that telemetry knows the
    instance by (a Kubernetes node's ``aws:///zone/i-0abc``, the CUR). Other
    ids are left as they are. Returns a copy only when something changed."""
    if "resource_id" not in costs.columns or not len(costs):
        return costs
    ids = costs["resource_id"]
    values = pd.Series(ids.astype(object).to_numpy(), dtype=object)
    if not values.astype(str).str.startswith("arn:aws").any():
        return costs
    extracted = values.astype(str).str.extract(_EC2_ARN, expand=False)
    out = costs.copy()
    out["resource_id"] = extracted.where(extracted.notna(), values).where(values.notna(), None).to_numpy()
    return out


def load_tables(config: Config, *, progress: bool = False) -> Tables:
    """Reads every source the config names into the allocation's tables.

    Sources: ``demo = true`` (the demo month); a bill in one or several
    parts (through gpucost's billing readers; EC2 instance ARNs become
    instance ids, see :func:`instance_ids`) or gpucost's own ``costs`` table;
    telemetry from every source named, combined into one usage table (a live
    ``prometheus``, saved ``telemetry`` answers, ``dcgm_text`` scrapes,
    ``nvidia_smi`` logs, ``sacct`` accounting, gpucost's own ``usage``
    table); workloads from every label source (``pods`` snapshots,
    ``pod_labels`` of kube-state-metrics, ``sacct``, ``workloads``) merged,
    with the ``[labels.namespaces]`` fallback; the inventory from
    ``inventory`` or, when absent, from the bill's instance types and the
    catalog.
    """
    s = config.sources
    config.__dict__.pop("_sacct", None)  # read afresh on every load (export-metrics reloads)
    budgets = _budgets(config)
    if s.get("demo"):
        from gpucost.demo import demo_fleet
        fleet = demo_fleet()
        config.budgets.setdefault("today", "2026-03-20")  # the demo's budgets, looked at mid-month
        return Tables(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, bill=fleet.bill,
                      budgets=budgets if budgets is not None else fleet.budgets,
                      interruptions=fleet.interruptions, rates=fleet.rates, interval=fleet.interval,
                      existing=_read_table(config.path(s["existing"]), "existing") if "existing" in s else None)
    bill = None
    if "bill" in s:
        bill = instance_ids(_read_bill(config, progress))
        costs = bill
    elif "costs" in s:
        costs = _read_table(config.path(s["costs"]), "costs")
    else:
        raise InvalidInputError("no bill: give --bill (a FOCUS/CUR/GCP/Azure export), --costs (a cost lines table) "
                                "or --demo")
    # A stated step; saved answers and logs default to their own spacing (read
    # from their timestamps), and a stated step is checked against it.
    stated = s.get("step", config.policy.get("interval"))
    step = float(stated) if stated is not None else 60.0
    usage = _usage(config, step, stated)
    if stated is None:
        spacing = usage.attrs.get("telemetry", {}).get("spacing_seconds") if isinstance(
            usage.attrs.get("telemetry"), dict) else None
        if spacing:
            step = float(spacing)
        elif "duration" not in usage.columns and len(usage):
            # The engine's own inference (docs/semantics.md 1.3), so the analyses use the same interval.
            from gpucost.allocation import infer_interval, series_spacings
            step = infer_interval(series_spacings(usage))
    workloads = _workloads(config, usage)
    if "inventory" in s:
        inventory = _read_table(config.path(s["inventory"]), "inventory")
    elif "instance_type" in costs.columns:
        inventory = gpucost.inventory(costs)
    else:
        raise InvalidInputError("no inventory: give --inventory (resource_id, device, mem_capacity), or a bill "
                                "whose lines carry instance types")
    interruptions = None
    if "interruptions" in s:
        path = config.path(s["interruptions"])
        if not path.exists():
            raise InvalidInputError(f"{path}: no such file (interruptions)")
        interruptions = path
    rates = _read_table(config.path(s["rates"]), "rates") if "rates" in s else None
    existing = _read_table(config.path(s["existing"]), "existing") if "existing" in s else None
    return Tables(costs, usage, inventory, workloads, bill=bill, budgets=budgets, interruptions=interruptions,
                  rates=rates, interval=step, existing=existing)


def attribute(config: Config, tables: Tables, allocation: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``[attribution]`` on an allocation: tagged lines to the groups their
    tag names (:func:`gpucost.attribute_tagged`), then the shared lines
    spread over the groups (:func:`gpucost.share_costs`). Both work on one
    group column: ``by`` in the section, default the first of ``by``."""
    a = config.attribution
    if not a.get("tag") and not a.get("shared"):
        return allocation
    group = a.get("by") or by[0]
    if group not in by:
        raise InvalidInputError(f"[attribution]: by '{group}' is not one of the allocation's groups "
                                f"({', '.join(by)}); set --attribute-by or by in [attribution]")
    split = a.get("split", "weighted")
    if split not in ("weighted", "even"):
        raise InvalidInputError(f"[attribution]: split {split!r} is not one of weighted, even")
    if a.get("tag"):
        allocation = gpucost.attribute_tagged(allocation, tables.costs, a["tag"], by=group,
                                              inventory=tables.inventory, tag_map=a.get("tag_map"))
    if a.get("shared"):
        allocation = gpucost.share_costs(allocation, tables.costs, a["shared"], by=group, split=split,
                                         inventory=tables.inventory)
    return allocation


def _budgets(config: Config) -> pd.DataFrame | None:
    if "file" not in config.budgets:
        return None
    frame = _read_table(config.path(config.budgets["file"]), "budgets")
    for column in ("amount",):
        if column not in frame.columns:
            raise InvalidInputError(f"{config.path(config.budgets['file'])}: missing required column '{column}'")
    return frame


# ---- telemetry of every kind ------------------------------------------------------------

_USAGE_KEYS = ("prometheus", "telemetry", "dcgm_text", "nvidia_smi", "sacct", "usage")


def _hosts(config: Config) -> pd.DataFrame | None:
    """``hosts``: host (or node) -> resource_id in the bill, optional tz."""
    if "hosts" not in config.sources:
        return None
    path = config.path(config.sources["hosts"])
    frame = _read_table(path, "hosts").rename(columns={"node": "host"})
    for column in ("host", "resource_id"):
        if column not in frame.columns:
            raise InvalidInputError(f"{path}: missing required column '{column}' (hosts: host, resource_id[, tz])")
    frame["host"] = frame["host"].astype(str)
    frame["resource_id"] = frame["resource_id"].astype(str)
    return frame


def _nodes(config: Config, hosts: pd.DataFrame | None) -> pd.DataFrame | None:
    """node -> resource_id for DCGM series: kubectl node dumps and the hosts table."""
    frames = []
    s = config.sources
    if s.get("nodes") in ("prometheus", ["prometheus"]):  # kube-state-metrics' kube_node_info over the range
        if "prometheus" not in s or "start" not in s or "end" not in s:
            raise InvalidInputError("nodes = \"prometheus\" needs --prometheus, --start and --end "
                                    "(prometheus, start, end in [sources])")
        from gpucost import kubernetes
        frames.append(kubernetes.fetch_nodes(prometheus_client(config), s["start"], s["end"])[["node", "resource_id"]])
    elif "nodes" in s:
        read = _need("kubernetes.read_nodes", "the telemetry issue")
        frames += [read(p)[["node", "resource_id"]] for p in config.paths(s["nodes"])]
    if hosts is not None:
        frames.append(hosts.rename(columns={"host": "node"})[["node", "resource_id"]])
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True).drop_duplicates("node", keep="last").reset_index(drop=True)


def _usage(config: Config, step: float, stated: Any = None) -> pd.DataFrame:
    """Every telemetry source the config names, as one usage table. `stated`:
    the step the user gave (None: each source's own spacing, from its data)."""
    s = config.sources
    hosts = _hosts(config)
    nodes = _nodes(config, hosts)
    dcgm: dict[str, Any] = {"nodes": nodes, "keep_unknown_nodes": bool(s.get("keep_unknown_nodes", False))}
    exporter_names = s.get("exporter_names")
    if exporter_names is not None:  # the exporter's own pod/container names: its labels on a free GPU are no workload
        dcgm["exporter_names"] = [exporter_names] if isinstance(exporter_names, str) else list(exporter_names)
    given = None if stated is None else step
    frames: list[pd.DataFrame] = []
    intervals: list[float] = []
    names: list[str] = []
    files: list[list[str]] = []

    def add(frame: pd.DataFrame, interval: float, name: str, paths: list) -> None:
        frames.append(frame)
        intervals.append(interval)
        names.append(name)
        files.append([str(p) for p in paths])

    if "prometheus" in s:
        for key in ("start", "end"):
            if key not in s:
                raise InvalidInputError(f"--prometheus needs --{key} ({key} in [sources])")
        fetch = _need("prometheus.fetch_usage", "the telemetry issue")
        add(fetch(s["prometheus"], s["start"], s["end"], step=step, **dcgm,
                  **({"bearer_token": s["bearer_token"]} if "bearer_token" in s else {})), step, "prometheus",
            [s["prometheus"]])
    if "telemetry" in s:
        read = _need("prometheus.read_query_range", "the telemetry issue")
        paths = config.paths(s["telemetry"])
        add(read([str(p) for p in paths], step=given, **dcgm), step, "telemetry", paths)
    if "dcgm_text" in s:
        read = _need("prometheus.read_dcgm_text", "the telemetry issue")
        # Each scrape's instant: its own timestamps, else its name, else its mtime. Scrapes of one
        # instant (several hosts) are read in one call.
        paths = sources.scrape_files(config.paths(s["dcgm_text"]))
        by_instant: dict[pd.Timestamp, list[str]] = {}
        for p in paths:
            by_instant.setdefault(sources.scrape_instant(p), []).append(str(p))
        scrapes = [read(group, timestamp=instant, interval=given, **dcgm) for instant, group in by_instant.items()]
        add(sources.concat_frames(scrapes), step, "dcgm_text", paths)
    if "nvidia_smi" in s:
        add(_nvidia_smi(config, hosts, given), step, "nvidia_smi", config.paths(s["nvidia_smi"]))
    if "sacct" in s:
        add(_sacct(config, hosts)[0], step, "sacct", config.paths(s["sacct"]))
    if "usage" in s:
        add(_read_table(config.path(s["usage"]), "usage"), step, "usage", [config.path(s["usage"])])
    if not frames:
        raise InvalidInputError("no telemetry: give --prometheus URL, --telemetry FILES (saved Prometheus answers), "
                                "--dcgm-text (exporter scrapes), --nvidia-smi (logs), --sacct (Slurm accounting) "
                                "or --usage (a usage samples table)")
    return sources.concat_usage(frames, intervals, names, files)


def _is_mon_log(path: Path) -> bool:
    """An ``nvidia-smi dmon``/``pmon`` log starts with a ``#`` header line; a
    ``--query-gpu`` CSV log with its field names."""
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(256).lstrip()
    return head.startswith("#")


def _nvidia_smi(config: Config, hosts: pd.DataFrame | None, step: float | None) -> pd.DataFrame:
    """nvidia-smi logs, one per host (the host is the file name up to its
    first dot); the hosts table maps hosts to bill ids and time zones."""
    s = config.sources
    read = _need("read_nvidia_smi", "the telemetry issue")
    logs = config.paths(s["nvidia_smi"])
    apps: dict[str, Path] = {}
    for path in config.paths(s["nvidia_smi_apps"]) if "nvidia_smi_apps" in s else []:
        host = sources.host_of(path)
        if host in apps:
            raise InvalidInputError(f"{path}: a second compute-apps log of host '{host}' (first {apps[host]})")
        apps[host] = path
    pid_jobs = _read_table(config.path(s["pid_jobs"]), "pid_jobs") if "pid_jobs" in s else None
    ids = dict(zip(hosts["host"], hosts["resource_id"])) if hosts is not None else {}
    zones = dict(zip(hosts["host"], hosts["tz"].astype(str))) if hosts is not None and "tz" in hosts else {}
    frames = []
    for path in logs:
        host = sources.host_of(path)
        jobs = pid_jobs
        if pid_jobs is not None and "host" in pid_jobs.columns:
            jobs = pid_jobs[pid_jobs["host"].astype(str) == host]
        tz = zones.get(host, s.get("timezone", "UTC"))
        if _is_mon_log(path):  # nvidia-smi dmon/pmon; the host's apps log, if any, a pmon log
            frames.append(_need("read_nvidia_smi_mon", "issue 15")(
                path, resource_id=ids.get(host, host), tz=tz, pmon=apps.get(host), pid_jobs=jobs, interval=step))
            continue
        frames.append(read(path, resource_id=ids.get(host, host), tz=tz, apps=apps.get(host), pid_jobs=jobs,
                           interval=step))
    unused = set(apps) - {sources.host_of(p) for p in logs}
    if unused:
        raise InvalidInputError(f"{apps[sorted(unused)[0]]}: compute-apps log of host '{sorted(unused)[0]}' has no "
                                "GPU log (nvidia_smi) of the same host")
    return sources.concat_frames(frames)


def _sacct(config: Config, hosts: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Slurm accounting files: (usage, workloads); nodes mapped to bill ids
    through the hosts table. Read once per config."""
    cached = config.__dict__.get("_sacct")
    if cached is not None:
        return cached
    read = _need("read_slurm_sacct", "the telemetry issue")
    nodes = hosts.rename(columns={"host": "node"})[["node", "resource_id"]] if hosts is not None else None
    results = [read(p, config.sources.get("timezone", "UTC"), nodes=nodes)
               for p in config.paths(config.sources["sacct"])]
    usage = sources.concat_frames([r.usage for r in results])
    usage.attrs["diagnostics"] = {str(p): r.diagnostics for p, r in zip(config.paths(config.sources["sacct"]),
                                                                        results)}
    out = (usage, sources.merge_workloads([r.workloads for r in results]))
    config.__dict__["_sacct"] = out
    return out


# ---- workload labels ------------------------------------------------------------------


def _workloads(config: Config, usage: pd.DataFrame) -> pd.DataFrame | None:
    s = config.sources
    wanted = {k: v for k, v in config.labels.items() if k != "namespaces"}
    labels = {**DEFAULT_LABELS, **wanted}
    kubernetes: list[pd.DataFrame] = []
    pod_files: list[Path] = []
    ksm_files: list[Path] = []
    if "pods" in s:
        read = _need("kubernetes.read_pods", "the telemetry issue")
        pod_files = config.paths(s["pods"])
        kubernetes += [read(p, labels=labels) for p in pod_files]  # several snapshots: merged below
    if "pod_labels" in s:
        kubernetes += _pod_labels(config, labels, ksm_files)
    frames = list(kubernetes)
    if kubernetes and wanted:
        sources.check_label_keys(sources.merge_workloads(kubernetes), wanted,
                                 lambda: sources.label_keys_in(pod_files, ksm_files),
                                 "[labels] (--label)")
    if "sacct" in s:
        frames.append(_sacct(config, _hosts(config))[1])
    if "workloads" in s:
        frames.append(_read_table(config.path(s["workloads"]), "workloads"))
    workloads = sources.merge_workloads(frames)
    namespaces = config.labels.get("namespaces", {})
    if namespaces and "consumer" in usage.columns:
        consumers = pd.Series(usage["consumer"]).astype("category").cat.categories.astype(str).tolist()
        workloads = sources.namespace_labels(workloads, consumers, namespaces, list(labels))
    return workloads


def _pod_labels(config: Config, labels: dict, ksm_files: list[Path]) -> list[pd.DataFrame]:
    """kube-state-metrics answers: saved ``kube_pod_labels`` / ``kube_pod_info``
    files, or "prometheus" for the live server over [start, end)."""
    from gpucost import _core
    from gpucost.frames import workloads_frame
    s = config.sources
    keys = [(str(c), str(k)) for c, k in labels.items()]
    if s["pod_labels"] in ("prometheus", ["prometheus"]):
        if "prometheus" not in s or "start" not in s or "end" not in s:
            raise InvalidInputError("pod_labels = \"prometheus\" needs --prometheus, --start and --end "
                                    "(prometheus, start, end in [sources])")
        from gpucost import kubernetes
        client = prometheus_client(config)
        step = 3600.0
        bodies = kubernetes._range_bodies(client, "kube_pod_labels", s["start"], s["end"], step)
        info = kubernetes._range_bodies(client, "kube_pod_info", s["start"], s["end"], step)
        return [workloads_frame(_core.kube_pod_labels(bodies, keys)),
                sources.pods_from_info([(b, n) for b, n, _ in info])]
    paths = config.paths(s["pod_labels"])
    info_files = [p for p in paths if sources.is_kube_pod_info(p)]
    ksm_files += [p for p in paths if p not in info_files]
    out = []
    if ksm_files:
        out.append(sources.read_pod_labels(ksm_files, labels))
    if info_files:
        out.append(sources.pods_from_info([(p.read_text(encoding="utf-8"), str(p)) for p in info_files]))
    return out


def prometheus_client(config: Config):
    from gpucost.prometheus import PrometheusClient
    s = config.sources
    return PrometheusClient(s["prometheus"], **({"bearer_token": s["bearer_token"]} if "bearer_token" in s else {}))
