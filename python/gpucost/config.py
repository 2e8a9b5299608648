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
sacct = ["sacct.txt"]            # Slurm accounting (several exports read as one: repeated rows dropped)
scontrol = ["scontrol.txt"]      # scontrol show job -d: GPU indices (IDX) of jobs whose sacct rows have none
jobstats = ["jobstats/*.json"]   # Princeton jobstats GPU exporter (scrapes or saved answers): nvidia_gpu_jobId
ceems = ["ceems/*.prom"]         # CEEMS ceems_compute_unit_gpu_index_flag: GPU -> job, applied to the DCGM telemetry
node_events = ["events.txt"]     # Slurm node events (sacctmgr show event -P) or node, start, end[, reason]
                                 # tables: down time (neither idle nor a workload)
hosts = "hosts.csv"              # host, resource_id[, tz, gpus]: Slurm nodes, nvidia-smi and plain DCGM hosts
                                 # (gpus: each Slurm node's GPU count; with start/end, free GPU time is idle)
timezone = "UTC"                 # sacct times, nvidia-smi logs without a tz in hosts
pods = ["pods.json"]             # kubectl get pods -A -o json snapshots (merged)
pod_labels = "prometheus"        # kube_pod_labels / kube_pod_info: "prometheus" or saved answers
nodes = "nodes.json"             # kubectl get nodes -o json, or "prometheus" (kube_node_info)
# or gpucost's own tables (CSV or Parquet): costs, usage, inventory, workloads
invoice = "burst-invoice.csv"    # a GPU cloud's rate-card invoice (CSV; a list too), beside the bill or alone;
                                 # or [sources.invoice]: path, columns = { role = "column" }, unit, currency, tz

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

[energy]                         # with power in the telemetry (DCGM power, nvidia-smi power.draw)
pue = 1.3                        # facility energy = GPU energy x pue
carbon_intensity = 380           # gCO2e/kWh, or a CSV [region,] start, end, g_per_kwh: co2e_kg per row
estimate_power = false           # samples without a reading: TDP x utilisation curve, energy_estimated_kwh
tdp_w = 700                      # their TDP (or a table gpu_model = watts; default: the catalog's)

[attribution]                    # gpucost.attribute_tagged, then gpucost.share_costs
tag = "project"                  # tag key(s) naming the group of lines outside the GPUs
by = "project"                   # the group column (default: the first of by)
shared = { service = "AmazonVPC" }  # shared lines (or a DataFrame.query string)
split = "weighted"               # weighted (GPU cost) | gpu_hours (held) | used_gpu_hours | even

[budgets]
file = "budgets.csv"             # key, value, amount, thresholds (key = a label column, e.g. team)

[slurm]                          # shared GPUs: a number for every node, or per node, host list or partition
shards_per_gpu = { "gpu[01-04]" = 8, shared = 4 }   # gres/shard units per GPU (gres.conf Count / GPUs)
mps_per_gpu = 100                # gres/mps units per GPU (default 100)

[owned]                          # hardware you own as cost lines (docs/onprem.md); a bill is then optional
start = "2026-03-01"             # the lines' range (default: start and end in [sources])
end = "2026-04-01"
pue = 1.3                        # default: pue in [energy]
tariff = 0.12                    # $/kWh; or 24 rates by hour of day (UTC); or a CSV of start, end, per_kwh
operations_per_month = 18000     # the cluster's fixed costs: lines with no resource (share them: [attribution])
freq = "h"                       # h | D (daily lines, the same totals)

[owned.classes.dgx-h100]         # one table per node class (gpucost.owned.CLASS_FIELDS)
instance_type = "dgx-h100"       # a catalog row: GPUs, GPU TDP, node max power (and the inventory)
price = 320000
in_service = "2026-01-01"
life_years = 4
support_per_year = 20000
facility_per_kw_month = 150

[owned.nodes]                    # node -> class (or a class column in the hosts table)
dgx01 = "dgx-h100"
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
from gpucost.attribution import SPLITS
from gpucost.chunks import files_named
from gpucost.errors import InvalidInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Config", "load_config", "Tables", "instance_ids", "attribute", "SECTIONS"]

#: Allowed keys per section, with their types.
SECTIONS: dict[str, dict[str, type | tuple]] = {
    "sources": {"demo": bool, "bill": (str, list), "bill_format": str, "bill_dataset": str, "bill_tz": str,
                "costs": str, "usage": str,
                "inventory": str, "workloads": str, "telemetry": (str, list), "prometheus": str, "start": str,
                "end": str, "step": (int, float), "pods": (str, list), "nodes": (str, list),
                "pod_labels": (str, list), "dcgm_text": (str, list), "nvidia_smi": (str, list),
                "nvidia_smi_apps": (str, list), "sacct": (str, list), "hosts": str, "pid_jobs": str,
                "timezone": str, "keep_unknown_nodes": bool, "interruptions": str, "rates": str,
                "existing": str, "bearer_token": str, "exporter_names": (str, list), "node_events": (str, list),
                "jobstats": (str, list), "ceems": (str, list), "scontrol": (str, list),
                "invoice": (str, list, dict)},
    "labels": {},  # any key: str; "namespaces": a table of namespace -> {column: value}
    "policy": {"basis": str, "idle": str, "interval": (int, float), "alpha": (int, float), "by": (str, list),
               "strict": bool, "threads": int},
    "budgets": {"file": str, "today": str},
    "report": {"title": str, "output": str},
    "metrics": {"listen": str, "textfile": str, "prefix": str},
    "attribution": {"tag": (str, list), "by": str, "tag_map": dict, "shared": (str, dict), "split": str},
    "slurm": {"shards_per_gpu": (int, dict), "mps_per_gpu": (int, dict)},
    "owned": {"start": str, "end": str, "pue": (int, float), "tariff": (int, float, list, str), "tariff_tz": str,
              "operations_per_month": (int, float), "freq": str, "currency": str, "interval": (int, float),
              "classes": dict, "nodes": dict},
    "energy": {"pue": (int, float), "carbon_intensity": (int, float, str), "estimate_power": bool,
               "tdp_w": (int, float, dict)},
}
DEFAULT_LABELS = {"team": "team-id", "project": "project-id", "user": "user-id", "job": "job-id"}


@dataclass
class Config:
    """The settings of a run: ``sources``, ``labels``, ``policy``,
    ``budgets``, ``report``, ``metrics``, ``attribution``, ``slurm``,
    ``owned``, ``energy`` (plain dicts), and ``base``, the directory relative
    paths start from."""

    sources: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    policy: dict = field(default_factory=dict)
    budgets: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    attribution: dict = field(default_factory=dict)
    slurm: dict = field(default_factory=dict)
    owned: dict = field(default_factory=dict)
    energy: dict = field(default_factory=dict)
    base: Path = field(default_factory=lambda: Path("."))
    name: str = "config"

    def path(self, value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.base / p

    def paths(self, value: str | list, key: str | None = None) -> list[Path]:
        """Paths of a string or list, with globs expanded (sorted); ``key``:
        the [sources] key that names them, for the error."""
        out: list[Path] = []
        for item in [value] if isinstance(value, str) else value:
            pattern = str(self.path(item))
            # A missing plain name is kept: its reader names it.
            matches = files_named(pattern) or ([] if glob.has_magic(pattern) else [pattern])
            if not matches:
                where = f"[sources]: key '{key}'" if key else "[sources]"
                raise InvalidInputError(f"{self.name}: {where}: no file matches {item!r}")
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
            if isinstance(value, list) and (section, key) == ("owned", "tariff"):
                if len(value) != 24 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                    raise InvalidInputError(f"{p}: [owned]: key 'tariff': expected 24 rates ($/kWh) by hour of day")
            elif isinstance(value, list) and not all(isinstance(v, str) for v in value):
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
    downtime: pd.DataFrame | None = None  # resource_id, start, end, reason: down windows (SEMANTICS section 10)
    stream: Any = None  # a plan.UsageStream: the telemetry still to read, a day at a time (usage is then empty)
    # The file whose rows ``usage`` is, in order (gpucost's own usage table read whole and alone): an
    # error about a usage row names that file and line.
    usage_file: str | None = None


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
    if split not in SPLITS:
        raise InvalidInputError(f"[attribution]: split {split!r} is not one of {', '.join(SPLITS)}")
    if a.get("tag"):
        allocation = gpucost.attribute_tagged(allocation, tables.costs, a["tag"], by=group,
                                              inventory=tables.inventory, tag_map=a.get("tag_map"))
    if a.get("shared"):
        allocation = gpucost.share_costs(allocation, tables.costs, a["shared"], by=group, split=split,
                                         inventory=tables.inventory)
    return allocation
