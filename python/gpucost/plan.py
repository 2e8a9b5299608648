"""The plan of a run's sources: everything a config names, resolved and
checked before any data is read (docs/cli.md, "The plan of sources").

:func:`plan_sources` turns a :class:`~gpucost.config.Config` into a
:class:`SourcePlan`: every path, glob, directory and manifest resolved to
files; each bill part's format and each log's kind sniffed from its first
bytes; everything that can be checked without reading data checked (files
exist, options that need each other are there, a stated step is a positive
number of seconds), and every problem found kept, each with its config key
and file, to be reported at once (:class:`PlanError`). Each :class:`Source`
says what it is (``kind``), which key named it, its files and options, and
which tables it feeds (``costs``, ``usage``, ``workloads``, ``inventory``,
``extras``, ``downtime``). ``gpucost check --plan`` prints it.

:func:`read_plan` reads a plan into the allocation's tables
(:class:`~gpucost.config.Tables`); :func:`load_tables` is
``read_plan(plan_sources(config))``. Each source's :meth:`Source.frames`
yields its frames one at a time (a bill part, a log, a scrape instant, an
accounting file), so a streaming reader can consume them; the in-memory path
joins them (:meth:`Source.frame`).

Example (in an empty folder: both problems at once, nothing read):

    >>> config = gpucost.config.load_config(None)
    >>> config.sources.update(costs="costs.csv", usage="usage.csv")
    >>> [str(p) for p in plan_sources(config).problems]
    ['costs.csv: no such file (costs)', 'usage.csv: no such file (usage)']
"""

from __future__ import annotations

import ctypes
import itertools
import math
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import gpucost
from gpucost import sources
from gpucost.billing import BillRows
from gpucost.config import DEFAULT_LABELS, Config, Tables, instance_ids
from gpucost.errors import InvalidInputError
from gpucost.owned import owned_costs
from gpucost.chunks import csv_goes_back_in_time
from gpucost.stream import can_read_again
from gpucost.invoice import GPU_HOUR, INSTANCE_HOUR, INVOICE_COLUMNS
from gpucost.model import Purchase

__all__ = ["TABLES", "Problem", "PlanError", "Source", "SourcePlan", "Reading", "plan_sources", "read_plan",
           "plan_bill", "read_table", "iter_table", "table_columns", "detect_bill", "load_tables", "read_bill",
           "streams", "UsageStream"]

#: The tables a source feeds (extras: budgets, rates, interruptions, commitments already bought;
#: downtime: windows in which a resource could not be used, SEMANTICS section 10).
TABLES = ("costs", "usage", "workloads", "inventory", "extras", "downtime")
BILL_READERS = {"focus": "read_focus", "cur": "read_cur", "gcp": "read_gcp_billing", "azure": "read_azure_costs"}
#: The [sources] keys that give usage samples (one is needed).
USAGE_KEYS = ("prometheus", "telemetry", "dcgm_text", "jobstats", "nvidia_smi", "sacct", "usage")
#: The keys of [sources.invoice] and their types (path: one or several files).
INVOICE_KEYS = {"path": (str, list), "columns": dict, "unit": str, "currency": str, "tz": str, "date_format": str}
_NUMERIC = ("cost", "list_cost", "share", "util", "mem_used", "duration", "device", "mem_capacity", "amount",
            "hourly")


# ---- what a plan holds ------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """A problem found without reading data: the config key at fault, the
    message (naming the file and the key), the file when there is one."""

    key: str
    message: str
    file: str | None = None

    def __str__(self) -> str:
        return self.message


class PlanError(InvalidInputError):
    """Every problem of a plan at once: the message has one line per problem
    (``problems``), and the location fields are the first one's."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        super().__init__("\n".join(p.message for p in self.problems))
        for name, value in InvalidInputError(self.problems[0].message).location().items():
            setattr(self, name, value)


class Reading:
    """One read of a plan: what its sources share, read once (the hosts and
    nodes tables, pid_jobs, Slurm accounting files, the demo month), whether
    readers show a progress bar, the allocation basis (readers skip the
    fields it does not need: None reads every field) and whether saved
    Prometheus answers are read a day at a time (``stream``)."""

    def __init__(self, progress: bool = False, basis: str | None = None, stream: bool = False):
        self.progress = progress
        self.basis = basis
        self.stream = stream
        self._cache: dict[Any, Any] = {}

    def once(self, key: Any, read: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]


@dataclass(frozen=True)
class Source:
    """One source of a plan.

    - ``key``: the config key that names it (``[sources]``; ``budgets`` for
      ``[budgets] file``);
    - ``kind``: what it is: a bill format (``focus``, ``cur``, ``gcp``,
      ``azure``), ``prometheus`` (live), ``query_range`` (saved answers),
      ``dcgm_text``, ``nvidia_smi``, ``sacct``, ``kubectl_pods``,
      ``kubectl_nodes``, ``kube_node_info``, ``kube_pod_labels``,
      ``kube_pod_info``, ``hosts``, ``node_events`` (Slurm node events or
      node, start, end tables: down time), ``table`` (gpucost's own), ``catalog``
      (the inventory from the bill's instance types), ``spot_interruptions``,
      ``demo``;
    - ``feeds``: the tables it feeds, of :data:`TABLES`;
    - ``files``: its files, resolved (globs, directories, manifests);
    - ``options``: what its reader is given (format, step, time zone, ...);
    - ``uses``: the lookup sources read with it (hosts, nodes, pid_jobs).
    """

    key: str
    kind: str
    feeds: tuple[str, ...]
    files: tuple[Path, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    uses: tuple[Source, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", types.MappingProxyType(dict(self.options)))

    def frames(self, reading: Reading | None = None, table: str | None = None) -> Iterator[pd.DataFrame]:
        """Its frames of ``table`` (default: the first it feeds), one at a
        time: a bill part, a kubectl snapshot, an nvidia-smi log, a Slurm
        accounting file, the scrapes of one instant. Saved Prometheus answers
        are one frame (each metric is its own file, so a sample needs them
        all), and so are a live query and gpucost's own tables."""
        table = table or self.feeds[0]
        if table not in self.feeds:
            raise ValueError(f"{self.key}: feeds {', '.join(self.feeds)}, not {table}")
        yield from _READERS[self.kind](self, reading or Reading(), table)

    def frame(self, reading: Reading | None = None, table: str | None = None) -> pd.DataFrame | None:
        """Its frames of ``table`` as one (the in-memory path): a bill's
        parts with their reports under ``attrs["parts"]``, the others'
        rows concatenated."""
        reading = reading or Reading()
        table = table or self.feeds[0]
        frames = list(self.frames(reading, table))
        if self.kind in BILL_READERS:
            return sources.join_parts(frames, [str(p) for p in self.files])
        if self.kind == "sacct":
            if table == "workloads":
                return sources.merge_workloads(frames)
            usage = sources.concat_frames(frames)  # every export read as one (repeated rows dropped once)
            usage.attrs["diagnostics"] = {", ".join(map(str, self.files)): _sacct_result(self, reading).diagnostics}
            return usage
        return sources.concat_frames(frames) if frames else None

    def describe(self, base: Path | None = None) -> str:
        """One line: key, kind, the tables it feeds, its files and options."""
        files = _show_files(self.files, base)
        if "logs" in self.options:  # each log's kind and its apps log
            files = ", ".join(f"{_show_files([Path(p)], base)} ({mon}" + (
                f", apps {_show_files([Path(a)], base)})" if a else ")") for p, mon, a in self.options["logs"])
        shown = {k: v for k, v in self.options.items()
                 if k not in ("labels", "instants", "logs", "format") and v is not None and v is not False}
        if "bearer_token" in shown:
            shown["bearer_token"] = "***"
        text = ", ".join(f"{k} {_show(v)}" for k, v in shown.items())
        if "instants" in self.options:
            text = _join(f"{len(self.options['instants'])} scrape instants", text)
        if self.uses:
            text = _join(text, "with " + ", ".join(u.key for u in self.uses))
        what = _join(files, text)
        return f"{self.key:<15} {self.kind:<17} -> {'+'.join(self.feeds):<16} {what}".rstrip()


@dataclass(frozen=True)
class SourcePlan:
    """Every source of a run, resolved and checked, nothing read: see the
    module's documentation. ``step`` is the stated step (``step`` in
    [sources] or ``interval`` in [policy]; None: each source's own spacing,
    from its data), ``step_key`` where it was stated; ``labels`` result
    column -> pod label key (the defaults and [labels]), ``wanted`` those
    [labels] gave, ``namespaces`` [labels.namespaces]."""

    sources: tuple[Source, ...]
    problems: tuple[Problem, ...] = ()
    step: float | None = None
    step_key: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    wanted: Mapping[str, str] = field(default_factory=dict)
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    name: str = "config"
    base: Path = field(default_factory=lambda: Path("."))

    def __post_init__(self) -> None:  # read-only copies: the config may change after planning
        object.__setattr__(self, "labels", types.MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "wanted", types.MappingProxyType(dict(self.wanted)))
        object.__setattr__(self, "namespaces", types.MappingProxyType(
            {ns: types.MappingProxyType(dict(v)) for ns, v in self.namespaces.items()}))

    def find(self, key: str, kind: str | None = None) -> Source | None:
        """The source named by ``key`` (of ``kind``), or None."""
        return next((s for s in self.sources if s.key == key and kind in (None, s.kind)), None)

    def feeding(self, table: str) -> tuple[Source, ...]:
        """The sources that feed ``table``, in reading order."""
        return tuple(s for s in self.sources if table in s.feeds)

    def check(self) -> None:
        """Raises :class:`PlanError` with every problem, if any."""
        if self.problems:
            raise PlanError(self.problems)

    def lines(self) -> list[str]:
        """What ``gpucost check --plan`` prints."""
        out = [f"plan of {self.name}: {len(self.sources)} sources, nothing read yet",
               f"  {'key':<15} {'kind':<17} -> {'feeds':<16} files, options"]
        out += [f"  {s.describe(self.base)}" for s in self.sources]
        step = "each source's own spacing (from its data)" if self.step is None else \
            f"{_show(self.step)} s ({self.step_key} in [{'sources' if self.step_key == 'step' else 'policy'}])"
        out.append(f"step: {step}")
        if self.problems:
            out.append("problems")
            out += [f"  error: {p.message}" for p in self.problems]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a and b else a or b


def _show_files(files: Sequence[Path], base: Path | None, most: int = 3) -> str:
    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(base)) if base is not None else str(p)
        except ValueError:
            return str(p)

    shown = ", ".join(rel(p) for p in files[:most])
    return shown + (f", ... ({len(files)} files)" if len(files) > most else "")


# ---- planning ----------------------------------------------------------------------------


class _Planner:
    """Collects the sources and the problems of one config."""

    def __init__(self, config: Config):
        self.config = config
        self.s = config.sources
        self.problems: list[Problem] = []

    def problem(self, key: str, message: str, file: Any = None) -> None:
        self.problems.append(Problem(key, message, None if file is None else str(file)))

    def paths(self, key: str, value: Any = None) -> list[Path]:
        """The paths a key names (or ``value``, under that key), globs
        expanded; a glob that matches nothing is a problem."""
        value = self.s[key] if value is None else value
        out: list[Path] = []
        for item in [value] if isinstance(value, str) else value:
            try:
                out += self.config.paths(item, key=key)
            except InvalidInputError as exc:
                self.problem(key, str(exc), item)
        return list(dict.fromkeys(out))

    def expand(self, key: str, resolve: Callable[[list[Path]], list[Path]]) -> list[Path]:
        """The files of each path a key names, through ``resolve`` (a bill's
        parts, a folder's scrapes); each path it refuses is a problem."""
        out: list[Path] = []
        for path in self.paths(key):
            try:
                out += resolve([path])
            except InvalidInputError as exc:
                self.problem(key, str(exc), path)
        return out

    def files(self, key: str, value: Any = None) -> list[Path]:
        """The files a key names (or ``value``, under that key): each must exist."""
        return [path for path in self.paths(key, value) if self.is_file(key, path)]

    def is_file(self, key: str, path: Path) -> bool:
        """Whether ``path`` is a regular file; else a problem saying what it is."""
        if not path.exists():
            self.problem(key, f"{path}: no such file ({key})", path)
        elif not path.is_file():
            self.problem(key, _not_regular(path, key), path)
        else:
            return True
        return False

    def table(self, key: str, feeds: tuple[str, ...], value: str | None = None, kind: str = "table") -> Source:
        """gpucost's own table (CSV or Parquet) a key names."""
        path = self.config.path(self.s[key] if value is None else value)
        if self.is_file(key, path) and _table_format(path) is None:
            self.problem(key, f"{path}: unknown table format (use .csv, .csv.gz or .parquet)", path)
        return Source(key, kind, feeds, (path,))

    def needs_live(self, key: str) -> None:
        """``key = "prometheus"`` asks the live server: it needs the server and the range."""
        if "prometheus" not in self.s or "start" not in self.s or "end" not in self.s:
            self.problem(key, f"{key} = \"prometheus\" needs --prometheus, --start and --end "
                              "(prometheus, start, end in [sources])")

    def live(self) -> dict:
        s = self.s
        return {"url": s.get("prometheus"), "start": s.get("start"), "end": s.get("end"),
                **({"bearer_token": s["bearer_token"]} if "bearer_token" in s else {})}

    def bill(self) -> Source:
        s = self.s
        fmt = s.get("bill_format", "auto")
        if fmt not in BILL_READERS and fmt != "auto":
            self.problem("bill_format", f"{self.config.name}: [sources]: bill_format {fmt!r} is not one of auto, "
                                        f"{', '.join(BILL_READERS)}")
            fmt = None
        dataset = s.get("bill_dataset", "auto")
        if dataset not in ("auto", "actual", "amortized"):
            self.problem("bill_dataset", f"{self.config.name}: [sources]: bill_dataset {dataset!r} is not one of "
                                         "auto, actual, amortized")
        parts = list(dict.fromkeys(self.expand("bill", sources.bill_parts)))
        if fmt == "auto":
            found: dict[Path, str] = {}
            for part in parts:
                try:
                    found[part] = detect_bill(part)
                except InvalidInputError as exc:
                    self.problem("bill", str(exc), part)
            kinds = sorted(set(found.values()))
            if len(kinds) > 1:
                first = {k: next(p for p, v in found.items() if v == k) for k in kinds}
                self.problem("bill", "bill: the parts are of different formats: "
                                     + ", ".join(f"{first[k]} is {k}" for k in kinds))
            fmt = kinds[0] if len(kinds) == 1 else None
        return Source("bill", fmt or "bill", ("costs",), tuple(parts),
                      {"format": fmt, "dataset": dataset, "tz": s.get("bill_tz")})

    def owned(self, hosts: Source | None) -> Source:
        """[owned]: hardware you own as cost lines (:func:`gpucost.owned_costs`),
        read after the telemetry (measured power); its nodes from [owned.nodes]
        or the hosts table's ``class`` column."""
        o = self.config.owned
        where = f"{self.config.name}: [owned]"
        options: dict[str, Any] = {k: o[k] for k in ("pue", "operations_per_month", "freq", "currency", "interval",
                                                                "tariff_tz")
                                   if k in o}
        if "pue" not in o and "pue" in self.config.energy:  # the site's PUE, as [energy] gives it
            options["pue"] = self.config.energy["pue"]
        for key in ("start", "end"):
            value = o.get(key, self.s.get(key))
            if value is None:
                self.problem("owned", f"{where}: no {key}: set {key} in [owned] (or [sources])")
                continue
            try:
                options[key] = gpucost.prometheus.to_ns(value, key)
            except InvalidInputError as exc:
                self.problem("owned", f"{where}: {exc}")
        classes = o.get("classes", {})
        if not classes:
            self.problem("owned", f"{where}: no node classes ([owned.classes.NAME] tables)")
        for name, fields in classes.items():
            if not isinstance(fields, Mapping):
                self.problem("owned", f"{where}: classes: '{name}' must be a table of fields")
        nodes = o.get("nodes", {})
        if not nodes and hosts is None:
            self.problem("owned", f"{where}: no nodes: give [owned.nodes] (node = \"class\") or a hosts table "
                                  "with a class column")
        unknown = sorted({str(c) for c in nodes.values() if str(c) not in classes})
        if unknown:
            self.problem("owned", f"{where}: nodes: no class '{unknown[0]}' (the classes are "
                                  f"{', '.join(classes) or 'none'})")
        files: tuple[Path, ...] = ()
        tariff = o.get("tariff", 0.0)
        if isinstance(tariff, str):
            files = (self.config.path(tariff),)
            if not files[0].exists():
                self.problem("owned", f"{files[0]}: no such file (tariff in [owned])", files[0])
        options.update(classes=classes, nodes=nodes, tariff=tariff)
        return Source("owned", "owned", ("costs",), files, options, (hosts,) if hosts else ())

    def invoice(self, uses: tuple[Source, ...]) -> Source:
        """A GPU cloud's rate-card invoice (:func:`gpucost.read_invoice`):
        ``invoice`` is its path(s), or a table of ``path`` and the reader's
        options (``columns``, ``unit``, ``currency``, ``tz``, ``date_format``)."""
        value = self.s["invoice"]
        options = dict(value) if isinstance(value, dict) else {"path": value}
        where = f"{self.config.name}: [sources.invoice]"
        for key in sorted(set(options) - set(INVOICE_KEYS)):
            self.problem("invoice", f"{where}: unknown key '{key}' (one of {', '.join(INVOICE_KEYS)})")
        for key, types in INVOICE_KEYS.items():
            if key in options and not isinstance(options[key], types):
                expected = "a table of role = \"column\"" if key == "columns" else "a string"
                self.problem("invoice", f"{where}: key '{key}': expected {expected}, got "
                                        f"{type(options[key]).__name__}")
        columns = options.get("columns")
        unknown = sorted(set(columns) - set(INVOICE_COLUMNS)) if isinstance(columns, dict) else []
        if unknown:
            self.problem("invoice", f"{where}: columns: unknown role '{unknown[0]}' (one of "
                                    f"{', '.join(INVOICE_COLUMNS)})")
        if options.get("unit") not in (None, GPU_HOUR, INSTANCE_HOUR):
            self.problem("invoice", f"{where}: unit {options['unit']!r} is not one of {GPU_HOUR}, {INSTANCE_HOUR}")
        path = options.pop("path", None)
        if path is None:
            self.problem("invoice", f"{where}: no path (path = \"invoice.csv\", or a list)")
        files = self.files("invoice", path) if isinstance(path, (str, list)) else []
        return Source("invoice", "invoice", ("costs",), tuple(files), options, uses)

    def sacct_range(self) -> dict:
        """The accounting range sacct's free GPU time is counted over
        (start and end in [sources], as read_slurm_sacct's start/end)."""
        s = self.s
        if "start" not in s or "end" not in s:
            return {}
        if "prometheus" not in s:  # checked there already
            for key in ("start", "end"):
                try:
                    gpucost.prometheus.to_ns(s[key], key)
                except InvalidInputError as exc:
                    self.problem(key, str(exc))
        return {"start": s["start"], "end": s["end"]}

    def slurm(self) -> dict:
        """[slurm]'s shard and MPS units per GPU: a number for every node, or
        a table of node, host list or partition = number."""
        out: dict[str, Any] = {}
        for key in ("shards_per_gpu", "mps_per_gpu"):
            value = self.config.slurm.get(key)
            if value is None:
                continue
            values = list(value.values()) if isinstance(value, dict) else [value]
            if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
                self.problem(key, f"{self.config.name}: [slurm]: {key}: expected a positive whole number, or a table "
                                  "of node, host list or partition = number (e.g. { \"gpu[01-04]\" = 8 })")
                continue
            out[key] = dict(value) if isinstance(value, dict) else value
        return out

    def dcgm(self) -> dict:
        """The options every DCGM reader gets."""
        options: dict[str, Any] = {"keep_unknown_nodes": bool(self.s.get("keep_unknown_nodes", False))}
        names = self.s.get("exporter_names")
        if names is not None:  # the exporter's own pod/container names: its labels on a free GPU are no workload
            options["exporter_names"] = [names] if isinstance(names, str) else list(names)
        return options

    def nvidia_smi(self, given: float | None, hosts: Source | None, pid_jobs: Source | None) -> Source:
        """nvidia-smi logs, one per host (the file name up to its first dot),
        each paired with the compute-apps log of its host; --query-gpu or
        dmon/pmon from the first bytes."""
        logs = self.paths("nvidia_smi")
        apps: dict[str, Path] = {}
        if "nvidia_smi_apps" in self.s:
            for path in self.files("nvidia_smi_apps"):
                host = sources.host_of(path)
                if host in apps:
                    self.problem("nvidia_smi_apps", f"{path}: a second compute-apps log of host '{host}' (first "
                                                    f"{apps[host]})", path)
                else:
                    apps[host] = path
        for host in sorted(set(apps) - {sources.host_of(p) for p in logs}):
            self.problem("nvidia_smi_apps", f"{apps[host]}: compute-apps log of host '{host}' has no GPU log "
                                            "(nvidia_smi) of the same host", apps[host])
        entries = []
        for path in logs:
            if not path.exists():
                self.problem("nvidia_smi", f"{path}: no such file (nvidia_smi)", path)
                continue
            apps_log = apps.get(sources.host_of(path))
            entries.append((str(path), "dmon" if _is_mon_log(path) else "query-gpu",
                            None if apps_log is None else str(apps_log)))
        uses = tuple(u for u in (hosts, pid_jobs) if u is not None)
        return Source("nvidia_smi", "nvidia_smi", ("usage",), tuple(Path(p) for p, _, _ in entries),
                      {"interval": given, "timezone": self.s.get("timezone", "UTC"), "logs": tuple(entries)}, uses)


def plan_sources(config: Config) -> SourcePlan:
    """The plan of the sources ``config`` names (see the module's
    documentation): nothing is read but the first bytes of bill parts and
    logs, manifests and directory listings. Problems are kept in
    ``problems``, not raised: :meth:`SourcePlan.check` raises them all."""
    p = _Planner(config)
    s = config.sources
    out: list[Source] = []
    stated = s.get("step", config.policy.get("interval"))
    step_key = "step" if "step" in s else "interval" if "interval" in config.policy else None
    if stated is not None:
        value = float(stated)
        if not math.isfinite(value) or value <= 0:
            p.problem(step_key, f"parameter '{step_key}': {value} is not a positive number of seconds")
    budgets = None
    if "file" in config.budgets:
        budgets = p.table("budgets", ("extras",), config.budgets["file"], kind="budgets")
        out.append(budgets)
    common = {"name": config.name, "base": config.base}
    if s.get("demo"):
        out.append(Source("demo", "demo", ("costs", "usage", "workloads", "inventory", "extras")))
        if "existing" in s:
            out.append(p.table("existing", ("extras",)))
        return SourcePlan(tuple(out), tuple(p.problems), None if stated is None else float(stated), step_key,
                          **common)

    # costs: a bill or gpucost's own table, and a GPU cloud's invoice beside either or alone
    hosts = p.table("hosts", ("usage",), kind="hosts") if "hosts" in s else None
    if "bill" in s:
        out.append(p.bill())
    elif "costs" in s:
        out.append(p.table("costs", ("costs",)))
    elif "invoice" not in s and not config.owned:
        p.problem("bill", "no bill: give --bill (a FOCUS/CUR/GCP/Azure export), --costs (a cost lines table), "
                          "--invoice (a GPU cloud's invoice), an [owned] section (hardware you own) or --demo")
    if config.owned:
        out.append(p.owned(hosts))
    invoice_at = len(out)  # its source is made last: it reads the hosts table and the inventory

    # usage: lookups first (hosts, then nodes), then every telemetry source
    step = float(stated) if stated is not None else 60.0
    given = None if stated is None else step
    nodes = None
    if s.get("nodes") in ("prometheus", ["prometheus"]):  # kube-state-metrics' kube_node_info over the range
        p.needs_live("nodes")
        nodes = Source("nodes", "kube_node_info", ("usage",), (), p.live(), uses=(hosts,) if hosts else ())
    elif "nodes" in s:
        nodes = Source("nodes", "kubectl_nodes", ("usage",), tuple(p.files("nodes")),
                       uses=(hosts,) if hosts else ())
    out += [x for x in (hosts, nodes) if x is not None]
    lookups = tuple(x for x in (nodes, hosts) if x is not None)
    dcgm = p.dcgm()
    if "prometheus" in s:
        for key in ("start", "end"):
            if key not in s:
                p.problem("prometheus", f"--prometheus needs --{key} ({key} in [sources])")
        url = s["prometheus"]
        if not url.startswith(("http://", "https://")):
            p.problem("prometheus", f"parameter 'url': {url!r} is not an http(s) URL")
        for key in ("start", "end"):
            if key in s:
                try:
                    gpucost.prometheus.to_ns(s[key], key)
                except InvalidInputError as exc:
                    p.problem(key, str(exc))
        out.append(Source("prometheus", "prometheus", ("usage",), (), {**p.live(), "step": step, **dcgm}, lookups))
    if "telemetry" in s:
        out.append(Source("telemetry", "query_range", ("usage",), tuple(p.files("telemetry")),
                          {"step": given, **dcgm}, lookups))
    if "dcgm_text" in s:
        # Each scrape's instant: its own timestamps, else its name, else its mtime. Scrapes of one
        # instant (several hosts) are read in one call.
        scrapes = p.expand("dcgm_text", sources.scrape_files)
        by_instant: dict[pd.Timestamp, list[str]] = {}
        for path in scrapes:
            by_instant.setdefault(sources.scrape_instant(path), []).append(str(path))
        out.append(Source("dcgm_text", "dcgm_text", ("usage",), tuple(scrapes),
                          {"interval": given, **dcgm,
                           "instants": tuple((t, tuple(group)) for t, group in by_instant.items())}, lookups))
    if "jobstats" in s:  # Princeton jobstats' GPU exporter: scrapes or saved answers, the job in nvidia_gpu_jobId
        files = p.files("jobstats")
        by_instant = _by_instant(files)
        out.append(Source("jobstats", "jobstats", ("usage",), tuple(files),
                          {"interval": given, "keep_unknown_nodes": dcgm["keep_unknown_nodes"],
                           "instants": tuple((t, tuple(group)) for t, group in by_instant.items())}, lookups))
    if "ceems" in s:  # the CEEMS exporter's GPU -> job mapping, applied to the DCGM telemetry
        if not any(key in s for key in ("prometheus", "telemetry", "dcgm_text")):
            p.problem("ceems", "ceems (the CEEMS GPU -> job mapping) needs DCGM telemetry of the same GPUs: "
                               "telemetry, dcgm_text or prometheus in [sources]")
        out.append(Source("ceems", "ceems_map", ("usage",), tuple(p.files("ceems")), {"interval": given}))
    if "nvidia_smi" in s:
        pid_jobs = p.table("pid_jobs", ("usage",)) if "pid_jobs" in s else None
        if pid_jobs is not None:
            out.append(pid_jobs)
        out.append(p.nvidia_smi(given, hosts, pid_jobs))
    if "sacct" in s:  # its samples and its jobs' labels, read once
        out.append(Source("sacct", "sacct", ("usage", "workloads"), tuple(p.files("sacct")),
                          {"timezone": s.get("timezone", "UTC"), **p.sacct_range(), **p.slurm(),
                           "scontrol": tuple(p.files("scontrol")) if "scontrol" in s else ()},
                          (hosts,) if hosts else ()))
    elif "scontrol" in s:
        p.problem("scontrol", "scontrol (scontrol show job -d: the jobs' GPU indices) needs the jobs' accounting: "
                              "sacct in [sources] (--sacct)")
    if "node_events" in s:  # Slurm node events or node, start, end tables: down time
        out.append(Source("node_events", "node_events", ("downtime",), tuple(p.files("node_events")),
                          {"timezone": s.get("timezone", "UTC"), "end": s.get("end")}, (hosts,) if hosts else ()))
    sacct = next((x for x in out if x.kind == "sacct"), None)
    if sacct is not None and "timezone" not in s:  # sacct prints the controller's local time
        for path in sacct.files:
            naive = _naive_sacct_time(path)
            if naive:
                p.problem("timezone", f"{path}: sacct times carry no UTC offset (Start {naive!r}): set timezone in "
                                      "[sources] (--timezone) to the Slurm controller's time zone, e.g. timezone = "
                                      "\"America/Chicago\" (or export with SLURM_TIME_FORMAT='%FT%T%z')", path)
                break
    if "usage" in s:
        out.append(p.table("usage", ("usage",)))
    if not any(key in s for key in USAGE_KEYS):
        p.problem("telemetry", "no telemetry: give --prometheus URL, --telemetry FILES (saved Prometheus answers), "
                               "--dcgm-text (exporter scrapes), --jobstats (jobstats GPU exporter), --nvidia-smi "
                               "(logs), --sacct (Slurm accounting) or --usage (a usage samples table)")

    # workloads
    wanted = {k: v for k, v in config.labels.items() if k != "namespaces"}
    labels = {**DEFAULT_LABELS, **wanted}
    if "pods" in s:
        out.append(Source("pods", "kubectl_pods", ("workloads",), tuple(p.files("pods")), {"labels": labels}))
    if s.get("pod_labels") in ("prometheus", ["prometheus"]):
        p.needs_live("pod_labels")
        out.append(Source("pod_labels", "kube_pod_labels_live", ("workloads",), (), {**p.live(), "labels": labels}))
    elif "pod_labels" in s:
        files = p.files("pod_labels")
        info = [f for f in files if sources.is_kube_pod_info(f)]
        ksm = [f for f in files if f not in info]
        if ksm:
            out.append(Source("pod_labels", "kube_pod_labels", ("workloads",), tuple(ksm), {"labels": labels}))
        if info:
            out.append(Source("pod_labels", "kube_pod_info", ("workloads",), tuple(info)))
    if "workloads" in s:
        out.append(p.table("workloads", ("workloads",)))
    namespaces = config.labels.get("namespaces", {})
    for ns, values in namespaces.items():
        unknown = set(values) - set(labels)
        if unknown:
            p.problem("namespaces", f"[labels.namespaces]: '{ns}': unknown label column '{sorted(unknown)[0]}' "
                                    f"(the columns are {', '.join(labels)})")

    # inventory, extras
    inventory = None
    if "inventory" in s:
        inventory = p.table("inventory", ("inventory",))
        out.append(inventory)
    elif "bill" in s or "costs" in s or config.owned or "invoice" in s:
        out.append(Source("inventory", "catalog", ("inventory",), (),
                          {"from": "bill" if "bill" in s else "costs" if "costs" in s else
                           "owned" if config.owned else "invoice"}))
    if "invoice" in s:
        out.insert(invoice_at, p.invoice(tuple(x for x in (hosts, inventory) if x is not None)))
    if "interruptions" in s:
        path = config.path(s["interruptions"])
        if not path.exists():
            p.problem("interruptions", f"{path}: no such file (interruptions)", path)
        out.append(Source("interruptions", "spot_interruptions", ("extras",), (path,)))
    for key in ("rates", "existing"):
        if key in s:
            out.append(p.table(key, ("extras",)))
    return SourcePlan(tuple(out), tuple(p.problems), None if stated is None else float(stated), step_key,
                      labels=labels, wanted=wanted, namespaces=namespaces, **common)


def plan_bill(config: Config) -> Source:
    """The bill's source alone (its parts and format); :class:`PlanError`
    with its problems."""
    planner = _Planner(config)
    bill = planner.bill()
    if planner.problems:
        raise PlanError(planner.problems)
    return bill


def detect_bill(path: Path) -> str:
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
    raise InvalidInputError(f"{path}: line 1: not a FOCUS, CUR, GCP or Azure header; set bill_format (a GPU "
                            "cloud's rate-card invoice: --invoice, invoice in [sources])")


def _naive_sacct_time(path: Path, lines: int = 200) -> str | None:
    """The first Start of a sacct export's first lines that states no UTC
    offset (sacct prints the controller's local time unless SLURM_TIME_FORMAT
    asks for ``%z`` or ``%s``); None when every one read has one (or none was
    read)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        header = [c.strip() for c in f.readline().rstrip("\r\n").split("|")]
        if "Start" not in header:
            return None
        column = header.index("Start")
        for _, line in zip(range(lines), f):
            cells = line.rstrip("\r\n").split("|")
            value = cells[column].strip() if column < len(cells) else ""
            if value in ("", "Unknown", "None", "Start") or value.isdigit():
                continue
            if len(value) > 19 and (value.endswith("Z") or value[19:].lstrip()[:1] in ("+", "-")):
                continue
            return value
    return None


def _is_mon_log(path: Path) -> bool:
    """An ``nvidia-smi dmon``/``pmon`` log starts with a ``#`` header line; a
    ``--query-gpu`` CSV log with its field names."""
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(256).lstrip()
    return head.startswith("#")


def _table_format(path: Path) -> str | None:
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith(".parquet") or suffixes.endswith(".pq"):
        return "parquet"
    return "csv" if ".csv" in suffixes else None


# ---- reading -----------------------------------------------------------------------------


#: How gpucost's own CSV tables are parsed, whole (:func:`read_table`) or a chunk at a time
#: (:func:`iter_table`): only an empty field is missing; ids and consumers are text ("007" stays "007"),
#: so that a chunk reads every value as the whole file does, whatever the other chunks hold.
_CSV_OPTIONS = {"keep_default_na": False, "na_values": [""], "dtype": {"resource_id": str, "consumer": str}}
_CSV_ERRORS = (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError)
#: Rows per chunk of gpucost's own usage table when it streams (:func:`iter_table`).
_TABLE_CHUNK_ROWS = 1 << 20


def read_table(path: Path, name: str) -> pd.DataFrame:
    """gpucost's own tables: CSV (instants parsed as UTC) or Parquet."""
    fmt = _own_format(path, name)
    if fmt == "parquet":
        return pd.read_parquet(path)
    if _parsed_usage(path, name):
        import pyarrow as pa
        batches = list(_usage_batches(path, 1 << 26))
        if batches:
            return pa.Table.from_batches(batches).to_pandas()
    try:
        frame = pd.read_csv(path, **_CSV_OPTIONS)
    except _CSV_ERRORS as exc:
        raise InvalidInputError(f"{path}: {str(exc).strip().splitlines()[0]}") from None
    return _own_columns(frame, path)


def table_order(path: Path, rows: int | None = None) -> bool | None:
    """Whether gpucost's own usage table is Parquet whose row groups never go
    back in time (:func:`gpucost.chunks.parquet_order`, groups of at most 4
    chunks): :func:`iter_table` then gives a row group a chunk, and the
    stream's chunks are ordered. False: its statistics say it goes back in
    time; None: nothing says (CSV, larger groups)."""
    from gpucost.chunks import parquet_order
    return parquet_order(str(path), 4 * (rows or _TABLE_CHUNK_ROWS))


def iter_table(path: Path, name: str, rows: int | None = None) -> Iterator[pd.DataFrame]:
    """gpucost's own table ``rows`` rows at a time (default
    ``_TABLE_CHUNK_ROWS``): Parquet by record batches, CSV by pandas'
    chunked reader with the options and conversions :func:`read_table`
    uses, so the chunks' rows are the whole table's; an error names the
    file's line as the whole read does.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "usage.csv"
    >>> _ = path.write_text("timestamp,resource_id,device,consumer,share,util,mem_used,duration\\n"
    ...                     + "2026-03-01T00:00:00Z,007,0,a,1,0.5,0,60\\n" * 3)
    >>> [len(chunk) for chunk in iter_table(path, "usage", rows=2)]
    [2, 1]
    >>> next(iter_table(path, "usage", rows=2))["resource_id"].tolist()
    ['007', '007']
    """
    fmt = _own_format(path, name)
    rows = rows or _TABLE_CHUNK_ROWS
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        file = pq.ParquetFile(path)
        if table_order(path, rows) is True:  # whole row groups: chunks that never go back in time
            for group in range(file.num_row_groups):
                yield file.read_row_group(group).to_pandas()
            return
        for batch in file.iter_batches(batch_size=rows):
            yield pa.Table.from_batches([batch], schema=file.schema_arrow).to_pandas()
        return
    if _parsed_usage(path, name):
        import pyarrow as pa
        held = None  # the rows of the blocks read that no chunk has taken yet
        for batch in _usage_batches(path, _block_size(rows)):
            held = pa.Table.from_batches([batch]) if held is None else \
                pa.concat_tables([held, pa.Table.from_batches([batch])])
            while held.num_rows >= rows:  # chunks of `rows` rows, as pandas' chunked reader gives them
                yield held.slice(0, rows).to_pandas()
                held = held.slice(rows)
        if held is not None and held.num_rows:
            yield held.to_pandas()
        return
    first = 0
    try:
        with pd.read_csv(path, chunksize=rows, **_CSV_OPTIONS) as reader:
            for frame in reader:
                chunk = _own_columns(frame.reset_index(drop=True), path, first)
                first += len(frame)
                yield chunk
    except _CSV_ERRORS as exc:
        raise InvalidInputError(f"{path}: {str(exc).strip().splitlines()[0]}") from None


def _parsed_usage(path: Path, name: str) -> bool:
    """Whether gpucost's usage CSV parser reads this usage table (C++, on
    every core, strings as categoricals; :func:`gpucost.chunks.parses_as_usage_csv`):
    the same values as pandas' reader, but for the spellings of a missing
    number ("NA", "null": missing, not refused) and a device written "3.0"
    (3). Any other usage CSV is read by pandas, as before."""
    from gpucost.chunks import parses_as_usage_csv
    return name == "usage" and parses_as_usage_csv(str(path))


def _block_size(rows: int | None = None) -> int:
    """Bytes of a usage CSV block that holds about ``rows`` lines (a chunk's)."""
    return max(1 << 16, (rows or _TABLE_CHUNK_ROWS) * 112)


def _usage_batches(path: Path, block_size: int) -> Iterator:
    """Record batches of a usage CSV that :func:`_parsed_usage` accepts,
    blocks of ``block_size`` bytes parsed on the command's threads."""
    from gpucost.allocation import resolve_threads
    from gpucost.chunks import USAGE_CSV_TYPES, _csv_batches
    return _csv_batches(str(path), block_size, dict(USAGE_CSV_TYPES), resolve_threads())


def table_columns(path: Path) -> list[str]:
    """The columns of gpucost's own table, from its header (CSV) or schema
    (Parquet), no row read; none where it cannot be read (the read says why).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "usage.csv"
    >>> _ = path.write_text("timestamp,resource_id,duration\\n2026-03-01T00:00:00Z,n,60\\n")
    >>> table_columns(path)
    ['timestamp', 'resource_id', 'duration']
    """
    try:
        if _table_format(path) == "parquet":
            import pyarrow.parquet as pq
            return list(pq.read_schema(path).names)
        return [str(c) for c in pd.read_csv(path, nrows=0, **_CSV_OPTIONS).columns]
    except (OSError, ValueError):  # the table is read whole, and that read names the problem
        return []


def _not_regular(path: Path, key: str) -> str:
    """Why a pipe or a device is refused: the command reads a file more than
    once (its columns, then its rows), and a pipe's second open would wait
    for a writer that has gone."""
    return (f"{path}: not a regular file (a pipe, a device or a folder; {key}): the command reads its files "
            "more than once; write it to a file first")


def _own_format(path: Path, name: str) -> str:
    if not path.exists():
        raise InvalidInputError(f"{path}: no such file ({name})")
    fmt = _table_format(path)
    if fmt is None:
        raise InvalidInputError(f"{path}: unknown table format (use .csv, .csv.gz or .parquet)")
    return fmt


def _own_columns(frame: pd.DataFrame, path: Path, first: int = 0) -> pd.DataFrame:
    """The columns of a CSV of gpucost's own (rows from data row ``first``):
    instants parsed as UTC, numbers as numbers, a missing consumer empty; a
    value that is neither is an error naming its line."""
    for column in ("start", "end", "timestamp"):
        if column in frame.columns:
            text = frame[column]
            if pd.api.types.is_numeric_dtype(text):  # epochs read as numbers: not instants, said as written
                text = text.astype(str)
            parsed = pd.to_datetime(text, utc=True, errors="coerce", format="ISO8601")
            _refuse(parsed.isna() & frame[column].notna(), frame[column], path, first, "an ISO 8601 instant")
            frame[column] = parsed
    for column in _NUMERIC:
        if column in frame.columns and not pd.api.types.is_numeric_dtype(frame[column]):
            numbers = pd.to_numeric(frame[column], errors="coerce")
            _refuse(numbers.isna() & frame[column].notna(), frame[column], path, first, "a number")
            frame[column] = numbers
    for column in ("consumer",):
        if column in frame.columns:
            frame[column] = frame[column].fillna("")
    return frame


def _refuse(bad: pd.Series, values: pd.Series, path: Path, first: int, what: str) -> None:
    """The first value marked ``bad`` as an error naming its file line (data rows from ``first``)."""
    if bad.any():
        from gpucost.chunks import csv_line_of_row
        row = int(bad.to_numpy().nonzero()[0][0])
        line = csv_line_of_row(str(path), first + row)
        raise InvalidInputError(f"{path}: line {line}, column '{values.name}': {str(values.iloc[row])!r} is "
                                f"not {what}")


def _need(name: str, issue: str) -> Callable:
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


def _client(options: Mapping[str, Any]):
    from gpucost.prometheus import PrometheusClient
    return PrometheusClient(options["url"], **({"bearer_token": options["bearer_token"]}
                                               if "bearer_token" in options else {}))


def _uses(source: Source, kind: str) -> Source | None:
    return next((u for u in source.uses if u.kind == kind), None)


def _hosts_table(hosts: Source | None, reading: Reading) -> pd.DataFrame | None:
    """``hosts``: host (or node) -> resource_id in the bill, optional tz."""
    if hosts is None:
        return None
    return reading.once("hosts", lambda: next(hosts.frames(reading)))


def _nodes_table(nodes: Source | None, hosts: Source | None, reading: Reading) -> pd.DataFrame | None:
    """node -> resource_id for DCGM series: kubectl node dumps (or
    kube_node_info) and the hosts table."""
    def build() -> pd.DataFrame | None:
        frames = list(nodes.frames(reading)) if nodes is not None else []
        table = _hosts_table(hosts, reading)
        if table is not None:
            frames.append(table.rename(columns={"host": "node"})[["node", "resource_id"]])
        if not frames:
            return None
        return pd.concat(frames, ignore_index=True).drop_duplicates("node", keep="last").reset_index(drop=True)
    return reading.once("nodes", build)


def _dcgm_options(source: Source, reading: Reading) -> dict:
    nodes = _nodes_table(_uses(source, "kube_node_info") or _uses(source, "kubectl_nodes"),
                         _uses(source, "hosts"), reading)
    return {"nodes": nodes, "keep_unknown_nodes": source.options["keep_unknown_nodes"],
            **({"exporter_names": source.options["exporter_names"]} if "exporter_names" in source.options else {})}


def _read_bill(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    o = source.options
    reader = _need(BILL_READERS[o["format"]], "the billing issue")
    options: dict = {"progress": reading.progress, "tz": o["tz"]}
    if o["format"] == "azure":
        options["dataset"] = o["dataset"]
    elif o["dataset"] == "actual":
        # Only Azure exports the two datasets as separate files; the others'
        # billed amount is the actual cost.
        options["amount"] = "billed"
    # One record of the rows read for the whole bill: a row repeated across
    # parts, files or manifests is dropped (and counted, in money) where met again.
    options["seen"] = BillRows()
    for part in source.files:
        yield reader(part, **options)


#: The columns of gpucost's own tables that a run cannot do without.
REQUIRED_COLUMNS = {"costs": ("resource_id", "start", "end", "cost")}


def _read_own_table(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """gpucost's own table; a required column missing is an error naming the
    file and the column, before anything reads it (``check`` as ``allocate``)."""
    path = source.files[0]
    if reading.stream and source.key == "usage":  # the samples a chunk of rows at a time (UsageStream)
        yield from iter_table(path, source.key)
        return
    frame = read_table(path, source.key)
    required = REQUIRED_COLUMNS.get(source.key, ())
    missing = next((c for c in required if c not in frame.columns), None)
    if missing is not None:
        hint = " (a GPU cloud's rate-card invoice: --invoice, invoice in [sources])" if source.key == "costs" else ""
        raise InvalidInputError(f"{path}: missing required column '{missing}' ({source.key}: "
                                f"{', '.join(required)}){hint}", table=str(path), column=missing)
    yield frame


def _read_invoice(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """The invoice's files as one frame: node names to the bill's ids through
    the hosts table, each node's GPUs from its gpus column or the inventory."""
    from gpucost.invoice import read_invoice
    hosts = _hosts_table(_uses(source, "hosts"), reading)
    gpus: dict[str, float] = {}
    inventory = next((u for u in source.uses if u.key == "inventory"), None)
    if inventory is not None:
        devices = reading.once(("inventory", inventory.files), lambda: next(inventory.frames(reading)))
        gpus.update(devices.groupby(devices["resource_id"].astype(str)).size().astype(float).to_dict())
    if hosts is not None and "gpus" in hosts.columns:
        gpus.update(zip(hosts["host"], pd.to_numeric(hosts["gpus"], errors="coerce")))
    o = source.options
    yield read_invoice(list(source.files), columns=o.get("columns"), unit=o.get("unit"), currency=o.get("currency"),
                       tz=o.get("tz"), hosts=hosts, gpus=gpus or None, date_format=o.get("date_format"))


def _inventory(plan: SourcePlan, reading: Reading, costs: pd.DataFrame) -> pd.DataFrame:
    """The devices: an inventory table's; for the resources it does not list,
    owned nodes' from their class's catalog row and invoice nodes' from the
    invoice (GPU count, GPU type); with no table, every line's instance type
    in the catalog too. A table of the burst nodes alone leaves the owned
    cluster to its [owned] classes."""
    source = plan.feeding("inventory")[0]
    given = source.frame(reading) if source.kind == "table" else None
    listed = set() if given is None else set(given["resource_id"].astype(str))
    ids = costs["resource_id"].astype(str)
    rest = costs[~ids.isin(listed)] if listed else costs
    pricing = rest["pricing"].astype(str) if "pricing" in rest.columns else pd.Series("", index=rest.index)
    parts = [] if given is None else [given]
    typed = rest if given is None else rest[pricing == str(Purchase.OWNED)]
    if "instance_type" in typed.columns and (given is None or typed["instance_type"].notna().any()):
        parts.append(gpucost.inventory(typed))
    invoiced = rest.iloc[:0]
    if "gpus" in rest.columns:  # an invoice's GPU nodes: a GPU type or count (a filesystem line has neither)
        typed_gpu = rest["gpu_model"].notna() & (rest["gpu_model"].astype(str) != "")
        invoiced = rest[(pricing == str(Purchase.RATE_CARD)) & (rest["gpus"].notna() | typed_gpu)]
    covered = set().union(*(set(p["resource_id"].astype(str)) for p in parts))
    invoiced = invoiced[~invoiced["resource_id"].astype(str).isin(covered)]
    if len(invoiced):
        parts.append(_invoice_devices(invoiced))
    if not parts:
        raise InvalidInputError("no inventory: give --inventory (resource_id, device, mem_capacity), or a bill "
                                "whose lines carry instance types")
    inventory = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    if "embodied_kg_per_gpu_hour" in inventory.columns:  # [owned] classes': 0 for the nodes that have none
        inventory["embodied_kg_per_gpu_hour"] = inventory["embodied_kg_per_gpu_hour"].fillna(0.0)
    return inventory


def _invoice_devices(lines: pd.DataFrame) -> pd.DataFrame:
    """Each invoice node's devices: its GPU count (the invoice's gpus column,
    the hosts table's) and its GPU type's memory, where the catalog knows
    exactly one model by that name."""
    memory = gpucost.catalog.instance_types().groupby("gpu_model")["gpu_memory_gib"].first()
    nodes = lines.drop_duplicates("resource_id")
    rows: list[tuple[str, int, float]] = []
    for resource, gpus, model, name, line in zip(nodes["resource_id"].astype(str), nodes["gpus"], nodes["gpu_model"],
                                                 nodes["invoice"], nodes["invoice_line"]):  # one per node
        where = f"{name}: line {int(line)}"
        if not gpus > 0:
            raise InvalidInputError(f"{where}: node '{resource}' has no GPU count: give its gpus in the hosts table "
                                    "(or a gpus column), or list its devices in an inventory")
        canonical = "" if pd.isna(model) else gpucost.catalog.canonical_gpu_model(str(model))
        known = [m for m in memory.index if canonical and (m == canonical or m.startswith(canonical + " "))]
        if len(known) != 1:
            found = f" (it could be {' or '.join(known)})" if known else ""
            raise InvalidInputError(f"{where}: GPU type {model!r} of node '{resource}' names no one catalog model"
                                    f"{found}: give a GPU type such as 'H100 80GB', or list its devices in an "
                                    "inventory")
        rows += [(resource, device, memory[known[0]] * 2**30) for device in range(int(gpus))]
    return pd.DataFrame(rows, columns=["resource_id", "device", "mem_capacity"])


def _owned_lines(source: Source, reading: Reading, usage: pd.DataFrame, step: float,
                 bills: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """[owned]'s cost lines (:func:`gpucost.owned_costs`), power measured from
    the telemetry's ``power_w`` where it has one, in the bill's one currency
    unless [owned] names one; ``attrs["owned"]`` says what they hold for
    ``check``."""
    o = source.options
    currency = o.get("currency")
    if currency is None:
        named = {str(c) for b in bills if "currency" in b.columns for c in b["currency"].dropna().unique()}
        currency = named.pop() if len(named) == 1 else None
    nodes: Any = dict(o["nodes"])
    hosts = _hosts_table(_uses(source, "hosts"), reading)
    if not nodes and hosts is not None:
        if "class" not in hosts.columns:
            raise InvalidInputError("[owned]: no nodes: the hosts table has no class column (or give [owned.nodes])")
        nodes = hosts.rename(columns={"host": "resource_id"}) if "resource_id" not in hosts.columns else hosts
    tariff = o["tariff"]
    if isinstance(tariff, str):
        tariff = read_table(source.files[0], "tariff")
    measured = usage if len(usage) and "power_w" in usage.columns else None
    lines = owned_costs(o["classes"], nodes, o["start"], o["end"], usage=measured, pue=o.get("pue", 1.0),
                        tariff=tariff, tariff_tz=o.get("tariff_tz"),
                        operations_per_month=o.get("operations_per_month", 0.0),
                        freq=o.get("freq", "h"), currency=currency,
                        interval=o.get("interval", None if measured is None or "duration" in usage.columns else step))
    by_component = lines.groupby("component", observed=True)["cost"].sum()
    power = lines["component"] == "power"
    lines.attrs["owned"] = {
        "lines": len(lines), "nodes": int(lines["resource_id"].nunique()),
        "classes": sorted(map(str, lines["node_class"].dropna().unique())),
        "start": lines["start"].min() if len(lines) else None, "end": lines["end"].max() if len(lines) else None,
        "total": {str(k): float(v) for k, v in by_component.items()},
        "energy_kwh": float(lines.loc[power, "energy_kwh"].sum()),
        "estimated_lines": int(lines.loc[power, "energy_estimated"].sum()), "power_lines": int(power.sum()),
    }
    return lines


def _read_budgets(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    frame = read_table(source.files[0], "budgets")
    for column in ("amount",):
        if column not in frame.columns:
            raise InvalidInputError(f"{source.files[0]}: missing required column '{column}'")
    yield frame


def _read_hosts(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    path = source.files[0]
    frame = read_table(path, "hosts").rename(columns={"node": "host"})
    for column in ("host", "resource_id"):
        if column not in frame.columns:
            raise InvalidInputError(f"{path}: missing required column '{column}' (hosts: host, resource_id[, tz])")
    frame["host"] = frame["host"].astype(str)
    frame["resource_id"] = frame["resource_id"].astype(str)
    yield frame


def _read_kubectl_nodes(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    read = _need("kubernetes.read_nodes", "the telemetry issue")
    for path in source.files:
        yield read(path)[["node", "resource_id"]]


def _fetch_node_info(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    from gpucost import kubernetes
    o = source.options
    yield kubernetes.fetch_nodes(_client(o), o["start"], o["end"])[["node", "resource_id"]]


def _fetch_usage(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    fetch = _need("prometheus.fetch_usage", "the telemetry issue")
    o = source.options
    yield fetch(o["url"], o["start"], o["end"], step=o["step"], **_dcgm_options(source, reading),
                **({"bearer_token": o["bearer_token"]} if "bearer_token" in o else {}))


def _read_answers(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """Saved answers as one frame, or a UTC day per frame when streaming."""
    from gpucost.prometheus import iter_query_range, read_query_range
    files = [str(p) for p in source.files]
    options = {"step": source.options["step"], "basis": reading.basis, **_dcgm_options(source, reading)}
    if reading.stream:
        yield from iter_query_range(files, **options)
    else:
        yield read_query_range(files, **options)


def _read_scrapes(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """A directory of dcgm-exporter scrapes (:func:`_scrape_frames`)."""
    read = _need("prometheus.read_dcgm_text", "the telemetry issue")
    yield from _scrape_frames(source.options["instants"], source.options["interval"], reading.stream, read,
                              _dcgm_options(source, reading))


def _scrape_frames(instants: Sequence[tuple[Any, Sequence[str]]], interval: float | None, stream: bool,
                   read: Callable, options: dict) -> Iterator[pd.DataFrame]:
    """Scrapes (instant, files) read by ``read`` (dcgm-exporter's, jobstats'
    reader) with ``options``: a UTC day per frame when streaming (in time
    order), else one frame (the stated step's scrapes an instant per frame).
    Each scrape stands for the allocation's interval (no ``duration``): the
    stated step, else the first day's spacing (:func:`_scrape_days`)."""
    if interval is None:
        days = _scrape_days(instants, read, options)
        if stream:
            yield from days
            return
        # The days read as the stream reads them, so the whole read's interval is the streamed one.
        from gpucost.prometheus import merge_telemetry
        frames = list(days)
        usage = sources.concat_frames(frames)
        usage.attrs["telemetry"] = merge_telemetry([f.attrs.get("telemetry", {}) for f in frames])
        yield usage
        return
    def scrape(instant, group) -> pd.DataFrame:
        # A stated step: each scrape stands for it. It is the allocation's interval, not a duration per sample,
        # so the engine checks every series' spacing against it (a wrong step is refused, naming a series).
        frame = read(list(group), timestamp=instant, interval=interval, **options)
        return frame.drop(columns="duration") if "duration" in frame.columns else frame

    if stream:  # a UTC day of scrapes a frame, the days in time order
        for day in _utc_days(instants):
            yield sources.concat_frames([scrape(instant, group) for instant, group in day])
        return
    for instant, group in instants:
        yield scrape(instant, group)


def _utc_days(instants: Sequence[tuple[Any, Sequence[str]]]) -> list[list[tuple[Any, Sequence[str]]]]:
    """Scrape instants (instant, files) grouped by UTC day, the days and their instants in time order."""
    ordered = sorted(instants, key=lambda item: item[0])
    return [list(day) for _, day in itertools.groupby(ordered, key=lambda item: pd.Timestamp(item[0]).floor("D"))]


#: How far a later day's scrape spacing may be from the interval (the first day's): the readers' jitter bound.
_SCRAPE_JITTER = 1.25


def _scrape_days(instants: Sequence[tuple[Any, Sequence[str]]], read: Callable,
                 options: dict) -> Iterator[pd.DataFrame]:
    """Scrapes without a stated step, a UTC day per reader call (every
    instant of the day together, so the day's spacing is known), in time
    order. Each scrape stands for the interval, the first day's spacing
    (the first frame takes in the next days until its scrapes have one),
    as saved answers' streams take theirs: ``duration`` is dropped, so the
    engine checks every series against the interval. A later day whose
    spacing is more than 1.25x away from it (the exporter's rate changed:
    its scrapes would stand for the wrong time, within the engine's 2x) is
    an error naming the day and a series of it. Every frame's reader report
    gives the interval as its spacing, so the whole read (these frames
    joined) and the stream allocate at the same interval."""
    days = _utc_days(instants)

    def day_frame(chosen: Sequence[list]) -> pd.DataFrame:
        files = [(instant, path) for day in chosen for instant, group in day for path in group]
        frame = read([p for _, p in files], timestamp=[t for t, _ in files], **options)
        return frame.drop(columns="duration") if "duration" in frame.columns else frame

    taken, first = 1, None  # the first frame: days taken in, doubling, until its scrapes have a spacing
    while days:
        first = day_frame(days[:taken])
        if _reported_spacing(first) is not None or taken >= len(days):
            break
        taken = min(2 * taken, len(days))
    if first is None:
        return
    interval = _reported_spacing(first)
    yield first
    for day in days[taken:]:
        frame = day_frame([day])
        own = _reported_spacing(frame)
        if own is not None and interval is not None:
            if max(own / interval, interval / own) > _SCRAPE_JITTER:
                raise InvalidInputError(_scrape_rate_changed(frame, day[0][0], own, interval))
            frame.attrs["telemetry"]["spacing_seconds"] = interval
        yield frame


def _scrape_rate_changed(frame: pd.DataFrame, day: Any, own: float, interval: float) -> str:
    """The error of a day of scrapes spaced unlike the first day, naming the
    day and its series spaced furthest from the interval."""
    ts = frame["timestamp"].to_numpy(dtype="datetime64[ns]").view("int64")
    keys = ["resource_id", "device", "consumer"]
    samples = frame[keys].astype(str).assign(ts=ts).drop_duplicates().sort_values([*keys, "ts"])
    gaps = samples.groupby(keys, sort=False)["ts"].diff().div(1e9)
    by_series = gaps.groupby([samples[k] for k in keys], sort=False).median().dropna()
    worst = (by_series / interval).map(lambda r: max(r, 1 / r)).idxmax() if len(by_series) else None
    series = "" if worst is None else (f": the series (resource_id '{worst[0]}', device {worst[1]}, consumer "
                                       f"'{worst[2]}') has a sample every {by_series[worst]:g} s")
    return (f"telemetry: the scrapes of {pd.Timestamp(day):%Y-%m-%d} are {own:g} s apart{series}, but the "
            f"interval is {interval:g} s (the first day's spacing): the exporter's rate changed, and each scrape "
            "would stand for the wrong time; give the step each scrape stands for (step in [sources], --step), "
            "or read the days of each rate apart")


def _by_instant(files: Sequence[Path]) -> dict[Any, list[str]]:
    """Exporter files read together: saved Prometheus answers (JSON) in one
    call, scrapes grouped by their instant (their own timestamps, else their
    name, else their mtime: sources.scrape_instant)."""
    out: dict[Any, list[str]] = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            is_json = f.read(256).lstrip().startswith("{")
        out.setdefault(None if is_json else sources.scrape_instant(path), []).append(str(path))
    return out


def _read_jobstats(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """Princeton jobstats' GPU exporter: saved answers in one call (each
    sample its duration, from the answers' own spacing), scrapes as
    dcgm-exporter's are read (:func:`_scrape_frames`): each stands for the
    stated step, else the first day's spacing, checked against the data."""
    from gpucost.prometheus import read_jobstats
    nodes = _nodes_table(_uses(source, "kube_node_info") or _uses(source, "kubectl_nodes"), _uses(source, "hosts"),
                         reading)
    options = {"nodes": nodes, "keep_unknown_nodes": source.options["keep_unknown_nodes"]}
    interval = source.options["interval"]
    answers = [path for instant, group in source.options["instants"] if instant is None for path in group]
    scrapes = [(instant, group) for instant, group in source.options["instants"] if instant is not None]
    if answers:  # never streamed (streams())
        yield read_jobstats(answers, interval=interval, **options)
    for frame in _scrape_frames(scrapes, interval, reading.stream, read_jobstats, options) if scrapes else ():
        if answers:  # beside answers' durations, each scrape's sample stands for the scrapes' interval
            frame = frame.assign(duration=float(interval or _reported_spacing(frame) or 60.0))
        yield frame


def _apply_ceems(plan: SourcePlan, usage: pd.DataFrame) -> pd.DataFrame:
    """The CEEMS exporter's GPU -> job mapping given to the telemetry's free samples (gpucost.slurm.apply_gpu_map)."""
    ceems = plan.find("ceems")
    if ceems is None:
        return usage
    from gpucost.prometheus import read_ceems_gpu_map
    from gpucost.slurm import apply_gpu_map
    # One read of every scrape (each with its instant) and answer: a mapping holds until its GPU's next one,
    # at most the scrapes' spacing; read alone, each scrape would stand for the stated step or a minute.
    instant_of = {path: t for t, group in _by_instant(ceems.files).items() for path in group}
    files = list(instant_of)
    return apply_gpu_map(usage, read_ceems_gpu_map(files, timestamp=[instant_of[f] for f in files],
                                                   interval=ceems.options["interval"]))


def _read_nvidia_smi(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """nvidia-smi logs, one frame per host's log; the hosts table maps hosts
    to bill ids and time zones."""
    read = _need("read_nvidia_smi", "the telemetry issue")
    hosts = _hosts_table(_uses(source, "hosts"), reading)
    jobs_source = next((u for u in source.uses if u.key == "pid_jobs"), None)
    pid_jobs = None if jobs_source is None else reading.once("pid_jobs", lambda: next(jobs_source.frames(reading)))
    ids = dict(zip(hosts["host"], hosts["resource_id"])) if hosts is not None else {}
    zones = dict(zip(hosts["host"], hosts["tz"].astype(str))) if hosts is not None and "tz" in hosts else {}
    for log, kind, apps in source.options["logs"]:
        path = Path(log)
        host = sources.host_of(path)
        jobs = pid_jobs
        if pid_jobs is not None and "host" in pid_jobs.columns:
            jobs = pid_jobs[pid_jobs["host"].astype(str) == host]
        tz = zones.get(host, source.options["timezone"])
        apps_log = None if apps is None else Path(apps)
        if kind == "dmon":  # nvidia-smi dmon/pmon; the host's apps log, if any, a pmon log
            yield _need("read_nvidia_smi_mon", "issue 15")(path, resource_id=ids.get(host, host), tz=tz,
                                                           pmon=apps_log, pid_jobs=jobs,
                                                           interval=source.options["interval"])
        else:
            yield read(path, resource_id=ids.get(host, host), tz=tz, apps=apps_log, pid_jobs=jobs,
                       interval=source.options["interval"])


def _slurm_nodes(source: Source, reading: Reading) -> pd.DataFrame | None:
    """The hosts table as Slurm nodes: node, resource_id and, when given, gpus."""
    hosts = _hosts_table(_uses(source, "hosts"), reading)
    if hosts is None:
        return None
    return hosts.rename(columns={"host": "node"})[["node", "resource_id", *(["gpus"] if "gpus" in hosts else [])]]


def _sacct_result(source: Source, reading: Reading) -> Any:
    """The Slurm accounting files, read as one and once per reading (their
    samples and their jobs' labels): the accounting range (start/end in
    [sources]) and the hosts table's gpus column as Python's
    read_slurm_sacct(start=, end=, nodes=) takes them, [slurm]'s shard and
    MPS counts."""
    def read() -> Any:
        o = source.options
        nodes = _slurm_nodes(source, reading)
        ranged = o.get("start") is not None and o.get("end") is not None
        if ranged and (nodes is None or "gpus" not in nodes):
            raise InvalidInputError(
                "sacct with start and end in [sources] (--start/--end) needs each node's GPU count, so that GPU time "
                "no job held is idle, not unobserved: add a gpus column to the hosts table (host, resource_id, "
                "gpus; hosts in [sources], --hosts FILE)")
        try:
            return _need("read_slurm_sacct", "the telemetry issue")(
                list(source.files), o["timezone"], nodes=nodes, start=o.get("start") if ranged else None,
                end=o.get("end") if ranged else None, shards_per_gpu=o.get("shards_per_gpu"),
                mps_per_gpu=o.get("mps_per_gpu"), scontrol=[str(p) for p in o.get("scontrol", ())] or None)
        except InvalidInputError as exc:
            text = str(exc)
            if "shards_per_gpu for node" in text:  # the fix in the config's words
                raise InvalidInputError(f"{text} ([slurm] shards_per_gpu in the config)") from None
            raise
    return reading.once(("sacct", source.files), read)


def _read_sacct(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    result = _sacct_result(source, reading)
    yield result.usage if table == "usage" else result.workloads


def _read_node_events(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """Slurm node events (sacctmgr show event -P) and node, start, end tables,
    as one down-time table; an ongoing event ends at [sources] end."""
    nodes = _slurm_nodes(source, reading)
    end = source.options.get("end")
    try:
        yield _need("read_slurm_events", "issue 30")(list(source.files), source.options["timezone"],
                                                     nodes=None if nodes is None else nodes[["node", "resource_id"]],
                                                     now=end)
    except InvalidInputError as exc:
        if end is None and "still going on" in str(exc):
            raise InvalidInputError(f"{exc} (set end in [sources], --end: the end of the accounting range)") from None
        raise


def _read_pods(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    read = _need("kubernetes.read_pods", "the telemetry issue")
    for path in source.files:  # several snapshots: merged by read_plan
        yield read(path, labels=dict(source.options["labels"]))


def _read_pod_labels(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    # One call for all files: a pod whose labels changed keeps the latest, whichever file has it.
    yield sources.read_pod_labels(list(source.files), dict(source.options["labels"]))


def _read_pod_info(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    yield sources.pods_from_info([(p.read_text(encoding="utf-8"), str(p)) for p in source.files])


def _fetch_pod_labels(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """kube-state-metrics' kube_pod_labels and kube_pod_info from the live server over [start, end)."""
    from gpucost import _core, kubernetes
    from gpucost.frames import workloads_frame
    o = source.options
    keys = [(str(c), str(k)) for c, k in o["labels"].items()]
    client = _client(o)
    step = 3600.0
    bodies = kubernetes._range_bodies(client, "kube_pod_labels", o["start"], o["end"], step)
    info = kubernetes._range_bodies(client, "kube_pod_info", o["start"], o["end"], step)
    yield workloads_frame(_core.kube_pod_labels(bodies, keys))
    yield sources.pods_from_info([(b, n) for b, n, _ in info])


def _read_demo(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    from gpucost.demo import demo_fleet
    fleet = reading.once("demo", demo_fleet)
    frames = {"costs": fleet.costs, "usage": fleet.usage, "workloads": fleet.workloads,
              "inventory": fleet.inventory, "extras": fleet.rates}
    yield frames[table]


def _read_nothing(source: Source, reading: Reading, table: str) -> Iterator[pd.DataFrame]:
    """Sources read by what uses them: the catalog's inventory (from the cost
    lines, by read_plan), spot interruptions (by the spot analysis)."""
    return iter(())


_READERS: dict[str, Callable[[Source, Reading, str], Iterator[pd.DataFrame]]] = {
    **{fmt: _read_bill for fmt in BILL_READERS}, "table": _read_own_table, "budgets": _read_budgets,
    "hosts": _read_hosts, "kubectl_nodes": _read_kubectl_nodes, "kube_node_info": _fetch_node_info,
    "prometheus": _fetch_usage, "query_range": _read_answers, "dcgm_text": _read_scrapes,
    "nvidia_smi": _read_nvidia_smi, "sacct": _read_sacct, "kubectl_pods": _read_pods,
    "kube_pod_labels": _read_pod_labels, "kube_pod_info": _read_pod_info, "kube_pod_labels_live": _fetch_pod_labels,
    "demo": _read_demo, "catalog": _read_nothing, "spot_interruptions": _read_nothing,
    "jobstats": _read_jobstats, "ceems_map": _read_nothing,
    "node_events": _read_node_events, "invoice": _read_invoice, "owned": _read_nothing,
}


def read_plan(plan: SourcePlan, *, progress: bool = False, basis: str | None = None,
              stream: bool = False) -> Tables:
    """Reads every source of ``plan`` into the allocation's tables (after
    :meth:`SourcePlan.check`: a plan with problems reads nothing).

    The bill's parts as one bill (EC2 instance ARNs become instance ids, see
    :func:`gpucost.config.instance_ids`) or gpucost's own ``costs`` table;
    every telemetry source combined into one usage table, each sample
    standing for its own source's interval; workloads from every label
    source merged (later sources win), with the ``[labels.namespaces]``
    fallback; the inventory from ``inventory`` or the bill's instance types
    and the catalog; ``downtime`` from ``node_events`` (Slurm node events,
    node, start, end tables: :func:`gpucost.read_slurm_events`).
    ``progress``: the bill readers' progress bar. ``stream``: where the
    plan :func:`streams`, the telemetry is not read here: ``Tables.stream``
    (a :class:`UsageStream`) reads it a day at a time, skipping the fields
    ``basis`` (the allocation's) does not need, and ``usage`` is an empty
    table with its report."""
    plan.check()
    streamed = stream and streams(plan)
    # Fields are skipped only where the samples go to the allocation alone (streamed): whole tables serve
    # the analyses and mem_gib_hours too.
    reading = Reading(progress, basis if streamed else None, streamed)
    budgets_source = plan.find("budgets")
    budgets = None if budgets_source is None else budgets_source.frame(reading)
    existing_source = plan.find("existing")
    if plan.find("demo") is not None:
        from gpucost.demo import demo_fleet
        fleet = reading.once("demo", demo_fleet)
        return Tables(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, bill=fleet.bill,
                      budgets=budgets if budgets is not None else fleet.budgets,
                      interruptions=fleet.interruptions, rates=fleet.rates, interval=fleet.interval,
                      existing=None if existing_source is None else existing_source.frame(reading))
    bill = None
    parts = []
    for costs_source in plan.feeding("costs"):  # a bill or gpucost's costs table, and an invoice
        if costs_source.kind == "owned":
            continue  # after the telemetry: its measured power
        frame = costs_source.frame(reading)
        if costs_source.key == "bill":
            bill = frame = instance_ids(frame)
        parts.append(frame)
    # usage: the lookups as the readers need them (hosts, then nodes), then each telemetry source
    hosts = plan.find("hosts")
    _hosts_table(hosts, reading)
    _nodes_table(plan.find("nodes"), hosts, reading)
    telemetry = [s for s in plan.feeding("usage") if s.key in USAGE_KEYS]
    # Slurm accounting beside telemetry says who held the GPUs the telemetry measured: joined below, per GPU
    # and instant (gpucost.slurm), not concatenated.
    jobs = [s for s in telemetry if s.kind == "sacct"]
    if jobs and len(jobs) < len(telemetry):
        telemetry = [s for s in telemetry if s.kind != "sacct"]
    else:
        jobs = []
    if reading.stream:  # the samples are read as the allocator takes them (UsageStream)
        stream = UsageStream(plan, telemetry[0], reading)
        costs = _bill_parts(parts)
        return Tables(costs, stream.usage(), _inventory(plan, reading, costs), _workloads(plan, reading, None),
                      bill=bill, budgets=budgets, interruptions=None if plan.find("interruptions") is None else
                      plan.find("interruptions").files[0], rates=_extra(plan, "rates", reading),
                      interval=plan.step if plan.step is not None else 60.0,
                      existing=None if existing_source is None else existing_source.frame(reading),
                      downtime=_downtime(plan, reading), stream=stream)
    frames = _read_telemetry(plan, telemetry, reading)
    step = plan.step if plan.step is not None else 60.0
    # Without a stated step, scrapes (no duration) stand for their own interval beside other sources.
    usage = sources.concat_usage(frames, [step if plan.step is not None or "duration" in f.columns else
                                          _reported_spacing(f) or step for f in frames], [s.key for s in telemetry],
                                 [[s.options["url"]] if s.kind == "prometheus" else [str(p) for p in s.files]
                                  for s in telemetry])
    usage = _apply_ceems(plan, usage)
    if plan.step is None:
        spacing = _reported_spacing(usage)
        if spacing:
            step = float(spacing)
        elif "duration" not in usage.columns and len(usage):
            # The engine's own inference (docs/semantics.md 1.3), so the analyses use the same interval.
            from gpucost.allocation import infer_interval, series_spacings
            step = infer_interval(series_spacings(usage))

    owned = plan.find("owned")
    if owned is not None:
        parts.append(_owned_lines(owned, reading, usage, step, parts))
    costs = _bill_parts(parts)
    workloads = _workloads(plan, reading, usage)
    inventory = _inventory(plan, reading, costs)
    if jobs:
        usage, workloads = _join_jobs(jobs[0], telemetry, usage, workloads, reading, costs, inventory, step)
    usage.attrs["bare_metal"] = _bare_metal(plan)
    interruptions = plan.find("interruptions")
    # gpucost's own usage table alone, neither joined to jobs nor mapped by CEEMS: its rows, in file order.
    own = len(telemetry) == 1 and telemetry[0].kind == "table" and not jobs and plan.find("ceems") is None
    return Tables(costs, usage, inventory, workloads, bill=bill, budgets=budgets,
                  interruptions=None if interruptions is None else interruptions.files[0],
                  rates=_extra(plan, "rates", reading), interval=step,
                  existing=None if existing_source is None else existing_source.frame(reading),
                  downtime=_downtime(plan, reading), usage_file=str(telemetry[0].files[0]) if own else None)


def _reported_spacing(usage: pd.DataFrame) -> float | None:
    """The spacing in one source's reader report (``attrs["telemetry"]``), if any."""
    report = usage.attrs.get("telemetry")
    spacing = report.get("spacing_seconds") if isinstance(report, dict) else None
    return float(spacing) if spacing else None


def _bill_parts(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The cost lines of every costs source as one table."""
    costs = sources.concat_frames(parts)
    if len(parts) > 1 and "list_cost" in costs.columns:
        # A part without list prices (owned lines, an invoice, gpucost's costs table) lists at its cost.
        costs["list_cost"] = costs["list_cost"].fillna(costs["cost"])
    if len(parts) > 1 and "primary" in costs.columns:
        # A part that does not say (gpucost's costs table) bills time on every line, as alone (SEMANTICS 4).
        costs["primary"] = costs["primary"].astype("boolean").fillna(True).astype(bool)
    if len(parts) > 1:  # each reader's report kept
        costs.attrs = {k: v for part in parts for k, v in part.attrs.items()}
        # Each source's lines in order, with what names its file: to_focus's origin rows per source.
        costs.attrs["sources"] = [(len(part), {k: part.attrs[k] for k in ("source", "billing", "parts")
                                               if k in part.attrs}) for part in parts]
    return costs


def _bare_metal(plan: SourcePlan) -> bool:
    """Bare metal (hosts, Slurm, nvidia-smi and no Kubernetes nodes): the fixes name the hosts table."""
    return plan.find("nodes") is None and any(plan.find(key) is not None for key in ("hosts", "sacct", "nvidia_smi"))


def _extra(plan: SourcePlan, key: str, reading: Reading) -> pd.DataFrame | None:
    source = plan.find(key)
    return None if source is None else source.frame(reading)


def _downtime(plan: SourcePlan, reading: Reading) -> pd.DataFrame | None:
    down = plan.feeding("downtime")
    return sources.concat_frames([d.frame(reading) for d in down]) if down else None


def streams(plan: SourcePlan) -> bool:
    """Whether a plan's telemetry can be read a chunk at a time, each chunk
    allocated as it comes (:class:`UsageStream`), to the same numbers as the
    whole read: one source, either saved Prometheus answers or a directory
    of dcgm-exporter or jobstats scrapes (UTC days; the interval is the stated step,
    else the first day's spacing, for scrapes in the whole read too, each
    scrape standing for it: a later day spaced more than 1.25x away from it
    is an error), nvidia-smi logs (a host's log), or gpucost's own usage
    table (chunks of rows) where the interval does not depend on every
    sample (a stated step or interval, or a ``duration`` column: without
    them the whole read infers it from all series), and
    nothing that needs every sample at once (the demo, [owned]'s measured
    power, a CEEMS map or Slurm accounting joined to the samples,
    [labels.namespaces] over the consumers).

    >>> config = gpucost.config.load_config(None)
    >>> config.sources.update(demo=True)
    >>> streams(plan_sources(config))
    False
    """
    telemetry = [s for s in plan.feeding("usage") if s.key in USAGE_KEYS]
    if (len(telemetry) != 1 or plan.namespaces
            or any(plan.find(key) is not None for key in ("demo", "owned", "ceems"))):
        return False
    source = telemetry[0]
    if source.kind == "query_range":
        return True
    if source.kind == "dcgm_text":  # a directory of scrapes: a UTC day at a time, each scrape standing for the
        return True  # step, else the first day's spacing, in the whole read too (_scrape_days)
    if source.kind == "jobstats":  # scrapes (not saved answers, read in one call): a UTC day of them at a time,
        return None not in dict(source.options["instants"])  # as dcgm_text's (_scrape_frames)
    if source.kind == "nvidia_smi":  # a host's log at a time; each sample has its duration (to its next)
        return True
    if source.kind == "table":  # gpucost's own usage table
        return plan.step is not None or "duration" in table_columns(source.files[0])
    return False


class UsageStream:
    """A plan's telemetry read a chunk at a time (saved answers, scrapes: a
    UTC day; nvidia-smi logs: a host's log; gpucost's own usage table:
    ``_TABLE_CHUNK_ROWS`` rows): iterate it
    once, allocating each frame as it comes. ``interval`` is the stated
    step, else the first chunk's spacing; :meth:`usage` is an empty usage
    table whose ``attrs`` are what the whole table's would be (the chunks'
    reader reports merged), for the join report. ``ordered_chunks``: the
    chunks never go back in time (saved answers' UTC days, in order; a
    Parquet usage table's row groups when their statistics say so), so an
    Allocator fed them may be told so and keep no record of earlier
    chunks' rows; a usage table's rows otherwise come in no promised order,
    but the file can be read again (``can_read_again``, :meth:`read_again`),
    so its order may be put on trial (:func:`gpucost.stream.add_chunks`)."""

    def __init__(self, plan: SourcePlan, source: Source, reading: Reading):
        self.plan, self.source, self.reading = plan, source, reading
        self.interval: float | None = plan.step
        order = table_order(source.files[0]) if source.kind == "table" else None
        self.ordered_chunks = source.kind in ("query_range", "dcgm_text", "jobstats") or order is True
        # Tried in time order when it can be read again and lines sampled from it do not show it going back.
        self.can_read_again = source.kind == "table" and order is None and can_read_again(
            str(source.files[0])) and not csv_goes_back_in_time([str(source.files[0])], _block_size())
        self.chunks = 0
        self._reports: list[dict] = []
        self._usage = pd.DataFrame()
        self._usage.attrs["bare_metal"] = _bare_metal(plan)

    def relocate(self, exc: InvalidInputError) -> InvalidInputError:
        """An Allocator's error about the stream's rows (``usage: row N``,
        counted over the chunks) restated for gpucost's own usage table as
        its file and line; other sources' errors as they are."""
        if self.source.kind != "table":
            return exc
        from gpucost.chunks import relocate_error
        return relocate_error(exc, "usage", str(self.source.files[0]), 0)

    def __iter__(self) -> Iterator[pd.DataFrame]:
        from gpucost.prometheus import merge_telemetry
        frames = self.source.frames(self.reading, "usage")
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                return
            except InvalidInputError as exc:
                raise _hosts_error(self.plan, exc) from None
            report = frame.attrs.get("telemetry")
            if report:  # a reader's report (saved answers); a usage table has none, as read whole
                self._reports.append(report)
                if self.interval is None and report.get("spacing_seconds"):
                    self.interval = float(report["spacing_seconds"])
                self._usage.attrs["telemetry"] = merge_telemetry(self._reports)
            self.chunks += 1
            yield frame

    def read_again(self) -> Iterator[pd.DataFrame]:
        """The chunks of gpucost's own usage table read again, the same
        ones (``can_read_again``): no reader report is merged twice."""
        return self.source.frames(self.reading, "usage")

    def usage(self) -> pd.DataFrame:
        """The empty usage table with the merged reader report (so far)."""
        return self._usage


def _give_back_freed_memory() -> None:
    """Hands the blocks freed since (a chunk's parse and its columns) back
    to the system: glibc keeps them in its arenas, among the copies kept,
    and the process' resident memory would count them (glibc only;
    elsewhere nothing)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _map_large_blocks(size: int = 1 << 20) -> None:
    """From now on this process' blocks of ``size`` bytes or more are
    mapped on their own (glibc's M_MMAP_THRESHOLD, fixed), so that a large
    array freed is given back at once rather than kept in an arena among
    the blocks still held: a command reading chunks one after another
    (report, analyses) then peaks at what it holds, not at that plus what
    each chunk freed (issue 29). glibc only; elsewhere nothing."""
    try:
        ctypes.CDLL(None).mallopt(-3, int(size))  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def _read_telemetry(plan: SourcePlan, telemetry: Sequence[Source], reading: Reading) -> list[pd.DataFrame]:
    """Each telemetry source's samples; a DCGM node missing from the hosts
    table (bare metal: no Kubernetes nodes) is named with the hosts table's fix."""
    try:
        return [s.frame(reading, "usage") for s in telemetry]
    except InvalidInputError as exc:
        raise _hosts_error(plan, exc) from None


def _hosts_error(plan: SourcePlan, exc: InvalidInputError) -> InvalidInputError:
    """A DCGM node missing from the hosts table (bare metal), named with the hosts table's fix; others as they are."""
    text = str(exc)
    if "is not in the nodes table" not in text or plan.find("hosts") is None or plan.find("nodes") is not None:
        return exc
    head = text.split(" (pass keep_unknown_nodes")[0].replace("is not in the nodes table", "is not in the hosts "
                                                              "table")
    return InvalidInputError(f"{head}: add a row for it (host, resource_id: the bill's id of that host) to the "
                             "hosts table (hosts in [sources], --hosts FILE)")


def _join_jobs(source: Source, telemetry: Sequence[Source], usage: pd.DataFrame, workloads: pd.DataFrame | None,
               reading: Reading, costs: pd.DataFrame, inventory: pd.DataFrame,
               step: float) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Slurm accounting joined to the telemetry of the same GPUs
    (:func:`gpucost.slurm.join_jobs`): the jobs the consumers of the
    telemetry's samples, their utilisation measured; the jobs' other sacct
    labels (job name, partition, QOS) added to the workloads."""
    from gpucost import slurm
    jobs = source.frame(reading, "usage")
    labels = slurm.sacct_job_labels(source.files)
    ids = None
    if "raw" in labels.columns:
        differ = (labels["raw"] != labels["consumer"]) & (labels["raw"] != "")
        ids = dict(zip(labels.loc[differ, "raw"], labels.loc[differ, "consumer"]))
    diagnostics = dict(usage.attrs.get("diagnostics", {}) or {})
    if len(telemetry) == 1:  # one source's own diagnostics: keyed by its name, like several sources'
        diagnostics = {telemetry[0].key: diagnostics}
    joined = slurm.join_jobs(usage, jobs, workloads, job_ids=ids, tz=source.options["timezone"], costs=costs,
                             inventory=inventory, interval=step)
    out = joined.usage
    out.attrs["diagnostics"] = {**diagnostics, source.key: dict(jobs.attrs.get("diagnostics", {}))}
    return out, slurm.with_job_labels(joined.workloads, labels)


def _workloads(plan: SourcePlan, reading: Reading, usage: pd.DataFrame) -> pd.DataFrame | None:
    """Every label source merged (later sources win); a configured label key
    no pod carries is an error listing those that exist."""
    kubernetes: list[pd.DataFrame] = []
    for source in plan.feeding("workloads"):
        if source.kind in ("kubectl_pods", "kube_pod_labels", "kube_pod_info", "kube_pod_labels_live"):
            kubernetes += source.frames(reading)
    frames = list(kubernetes)
    if kubernetes and plan.wanted:
        pod_files = [p for s in plan.sources if s.kind == "kubectl_pods" for p in s.files]
        ksm_files = [p for s in plan.sources if s.kind == "kube_pod_labels" for p in s.files]
        sources.check_label_keys(sources.merge_workloads(kubernetes), plan.wanted,
                                 lambda: sources.label_keys_in(pod_files, ksm_files), "[labels] (--label)")
    for source in plan.feeding("workloads"):
        if source.kind in ("sacct", "table"):
            frames.append(source.frame(reading, "workloads"))
    workloads = sources.merge_workloads(frames)
    namespaces = {ns: dict(v) for ns, v in plan.namespaces.items()}
    if namespaces and "consumer" in usage.columns:
        consumers = pd.Series(usage["consumer"]).astype("category").cat.categories.astype(str).tolist()
        workloads = sources.namespace_labels(workloads, consumers, namespaces, list(plan.labels))
    return workloads


def load_tables(config: Config, *, progress: bool = False, basis: str | None = None,
                stream: bool = False) -> Tables:
    """Reads every source the config names into the allocation's tables:
    ``read_plan(plan_sources(config))``, so every problem found before
    reading is reported at once.

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
    catalog. ``basis`` and ``stream`` as for :func:`read_plan`.
    """
    if config.sources.get("demo"):
        config.budgets.setdefault("today", "2026-03-20")  # the demo's budgets, looked at mid-month
    stream = stream and not config.energy.get("estimate_power")  # the estimate reads every sample at once
    tables = read_plan(plan_sources(config), progress=progress, basis=basis, stream=stream)
    if config.energy.get("estimate_power"):  # [energy]: samples without a reading get TDP x a curve, marked
        from gpucost.energy import estimate_power
        attrs = dict(tables.usage.attrs)
        tables.usage = estimate_power(tables.usage, config.energy.get("tdp_w"))
        tables.usage.attrs = attrs
    return tables


def read_bill(config: Config, progress: bool = False) -> pd.DataFrame:
    """The bill alone, as the plan of sources reads it."""
    return plan_bill(config).frame(Reading(progress))
