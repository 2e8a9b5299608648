"""The gpucost configuration file (TOML) and the sources it names
(docs/cli.md). The command reads it; so can a pipeline or a notebook.

```toml
[sources]
bill = "focus.csv.gz"            # FOCUS, CUR (legacy or 2.0), GCP or Azure export
bill_format = "auto"             # focus | cur | gcp | azure | auto (from the header)
telemetry = ["prometheus/*.json"]  # saved query_range answers, or:
prometheus = "http://prometheus:9090"
start = "2026-03-01"
end = "2026-04-01"
step = 60
pods = "pods.json"               # kubectl get pods -A -o json
nodes = "nodes.json"             # kubectl get nodes -o json
# or gpucost's own tables (CSV or Parquet): costs, usage, inventory, workloads

[labels]                         # result column = pod label key
team = "team-id"
project = "project-id"

[policy]
basis = "allocated"              # allocated | used | blended
idle = "keep"                    # keep | share
by = ["team", "project"]

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
from gpucost.errors import InvalidInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Config", "load_config", "Tables", "load_tables", "instance_ids", "SECTIONS"]

#: Allowed keys per section, with their types.
SECTIONS: dict[str, dict[str, type | tuple]] = {
    "sources": {"demo": bool, "bill": str, "bill_format": str, "costs": str, "usage": str, "inventory": str,
                "workloads": str, "telemetry": (str, list), "prometheus": str, "start": str, "end": str,
                "step": (int, float), "pods": str, "nodes": str, "interruptions": str, "rates": str,
                "existing": str, "bearer_token": str},
    "labels": {},  # any key: str
    "policy": {"basis": str, "idle": str, "interval": (int, float), "alpha": (int, float), "by": (str, list)},
    "budgets": {"file": str, "today": str},
    "report": {"title": str, "output": str},
    "metrics": {"listen": str, "textfile": str, "prefix": str},
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
        return out

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
            expected = allowed.get(key, str if section == "labels" else None)
            if expected is None:
                raise InvalidInputError(f"{p}: [{section}]: unknown key '{key}' (one of {', '.join(allowed)})")
            if isinstance(value, bool) and expected is not bool:
                raise InvalidInputError(f"{p}: [{section}]: key '{key}': expected {_type_name(expected)}, got a boolean")
            if not isinstance(value, expected):
                raise InvalidInputError(f"{p}: [{section}]: key '{key}': expected {_type_name(expected)}, "
                                        f"got {type(value).__name__}")
            getattr(config, section)[key] = value
    return config


def _type_name(t) -> str:
    names = {str: "a string", bool: "true or false", int: "a number", float: "a number", list: "a list"}
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
    fmt = config.sources.get("bill_format", "auto")
    readers = {"focus": "read_focus", "cur": "read_cur", "gcp": "read_gcp_billing", "azure": "read_azure_costs"}
    path = config.path(config.sources["bill"])
    if fmt == "auto":
        fmt = _detect_bill(path)
    if fmt not in readers:
        raise InvalidInputError(f"{config.name}: [sources]: bill_format {fmt!r} is not one of auto, "
                                f"{', '.join(readers)}")
    reader = _need(readers[fmt], "the billing issue")
    return reader(path, progress=progress)


def _detect_bill(path: Path) -> str:
    import gzip
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file (bill)")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq
        header = ",".join(pq.read_schema(path).names)
    else:
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rt", encoding="utf-8-sig") as f:
                header = f.readline()
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"{path}: line 1: unreadable ({exc})") from None
    if "ChargePeriodStart" in header or "EffectiveCost" in header:
        return "focus"
    if "lineItem/" in header or "line_item_" in header:
        return "cur"
    if "usage_start_time" in header or "sku.id" in header or "sku" in header and "cost_type" in header:
        return "gcp"
    if "costInBillingCurrency" in header.lower() or "costinbillingcurrency" in header.lower():
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

    Sources, in order of preference: ``demo = true`` (the demo month); a
    bill (through gpucost's billing readers; EC2 instance ARNs become instance
    ids, see :func:`instance_ids`) or gpucost's own ``costs`` table; telemetry from ``prometheus`` (a URL), saved ``telemetry`` JSON
    or gpucost's own ``usage`` table; workloads from ``pods`` or
    ``workloads``; the inventory from ``inventory`` or, when absent, from
    the bill's instance types and the catalog.
    """
    s = config.sources
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
    nodes = None
    if "nodes" in s:
        nodes = _need("kubernetes.read_nodes", "the telemetry issue")(config.path(s["nodes"]))
    step = float(s.get("step", config.policy.get("interval", 60)))
    if "prometheus" in s:
        for key in ("start", "end"):
            if key not in s:
                raise InvalidInputError(f"--prometheus needs --{key}")
        fetch = _need("prometheus.fetch_usage", "the telemetry issue")
        usage = fetch(s["prometheus"], s["start"], s["end"], step=step, nodes=nodes,
                      **({"bearer_token": s["bearer_token"]} if "bearer_token" in s else {}))
    elif "telemetry" in s:
        read = _need("prometheus.read_query_range", "the telemetry issue")
        usage = read([str(p) for p in config.paths(s["telemetry"])], step=step, nodes=nodes)
    elif "usage" in s:
        usage = _read_table(config.path(s["usage"]), "usage")
    else:
        raise InvalidInputError("no telemetry: give --prometheus URL, --telemetry FILES (saved query_range JSON) "
                                "or --usage (a usage samples table)")
    workloads = None
    labels = {**DEFAULT_LABELS, **config.labels}
    if "pods" in s:
        workloads = _need("kubernetes.read_pods", "the telemetry issue")(config.path(s["pods"]), labels=labels)
    elif "workloads" in s:
        workloads = _read_table(config.path(s["workloads"]), "workloads")
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


def _budgets(config: Config) -> pd.DataFrame | None:
    if "file" not in config.budgets:
        return None
    frame = _read_table(config.path(config.budgets["file"]), "budgets")
    for column in ("amount",):
        if column not in frame.columns:
            raise InvalidInputError(f"{config.path(config.budgets['file'])}: missing required column '{column}'")
    return frame
