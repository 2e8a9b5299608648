"""The join report and the one warning rule (docs/semantics.md, "What gpucost
refuses, repairs and warns about").

Every allocation carries what joined and what did not: the engine's
diagnostics (``result.attrs["diagnostics"]``), its per-resource join table
(``result.attrs["join"]``) and the readers' own reports
(``costs.attrs["billing"]``, ``usage.attrs["telemetry"]``). :func:`join_report`
reads them into a :class:`JoinReport`; :func:`check_join` applies the one rule
that turns its problems into :class:`JoinWarning` warnings (or, under
``strict``, a :class:`JoinError`). Nothing here re-derives a number: it only
reads what the engine and the readers counted.

Examples: :func:`join_report`, :func:`check_join`, :func:`checks`.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from gpucost.errors import InvalidInputError, JoinError, JoinWarning
from gpucost.frames import Table, result_attrs
from gpucost.model import Reserved
from gpucost.money import format_money

__all__ = ["JoinWarning", "JoinError", "Problem", "JoinReport", "join_report", "check_join", "checks", "format_money"]

#: The reserved consumer and label values of docs/semantics.md.
RESERVED = tuple(Reserved)
_SHOWN_IDS = 3  # resource ids named in one message

#: Label coverage: more than this share of the GPU cost (the cost on GPU
#: resources, idle and unobserved included) on ``__unlabelled__`` in a label
#: column of the result is a join warning; so is any dollar there when the
#: label history starts after the bill does.
UNLABELLED_SHARE = 0.05


@dataclass(frozen=True)
class Problem:
    """One problem of the join: ``kind`` (a stable name), ``message`` (one line with
    the money at stake and the fix), ``amount`` and ``currency`` of the money at
    stake (0 and "" where none), whether it is an ``error``, and whether it is
    measured in ``money`` (then an amount that rounds to 0 makes it a note:
    reported, never a warning)."""

    kind: str
    message: str
    amount: float = 0.0
    currency: str = ""
    error: bool = False
    money: bool = False

    @property
    def zero_dollar(self) -> bool:
        """Measured in money and worth nothing (``$0.00``): reported by
        ``gpucost check`` and the report's text, never a warning or a failure."""
        return self.money and not self.error and round(abs(self.amount), 2) == 0


@dataclass
class JoinReport:
    """What joined and what did not (see the module docs).

    Attributes:
        resources: the engine's join table, one row per (resource_id, currency).
        diagnostics: the engine's counts (docs/semantics.md section 5).
        problems: the problems found that change the numbers, errors first:
            what the warning rule warns about.
        notes: problems worth nothing (``$0.00``): reported, never warned about.
        billing: the bill reader's report, when the costs came from a reader.
        telemetry: the telemetry reader's report, when the usage came from one.
        labels: per label column of the result, the share of held GPU-hours
            with a value.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
        ...                       "share": 1.0, "util": 0.9, "mem_used": 40 * 2**30})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> with gpucost.join.checks(False):   # no warning: the report says it
        ...     result = gpucost.allocate(costs, usage, inventory)
        >>> report = gpucost.join_report(result)
        >>> report.ok
        False
        >>> [p.kind for p in report.problems]
        ['unobserved']
        >>> report.summary()
          currency  cost  cost_observed  cost_unobserved  cost_unattributed  billed_gpu_hours  unjoined_gpu_hours
        0           14.0            8.0              6.0                0.0               4.0                 0.0
        >>> report.resources[["resource_id", "lines", "samples", "cost_observed", "cost_unobserved"]]
          resource_id  lines  samples  cost_observed  cost_unobserved
        0      node-1      1        4            8.0              0.0
        1      node-2      1        0            0.0              6.0
    """

    resources: pd.DataFrame
    diagnostics: dict
    problems: list[Problem] = field(default_factory=list)
    billing: dict = field(default_factory=dict)
    telemetry: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    notes: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing changes the numbers."""
        return not self.problems

    def summary(self) -> pd.DataFrame:
        """Per currency: money billed, on lines with telemetry, unobserved and
        unattributed; billed and unjoined GPU-hours."""
        r = self.resources
        if r is None or len(r) == 0:
            return pd.DataFrame(columns=["currency", "cost", "cost_observed", "cost_unobserved", "cost_unattributed",
                                         "billed_gpu_hours", "unjoined_gpu_hours"])
        cols = ["cost", "cost_observed", "cost_unobserved", "cost_unattributed", "billed_gpu_hours",
                "unjoined_gpu_hours"] + (["cost_down"] if "cost_down" in r.columns else [])
        return r.groupby("currency", sort=True)[cols].sum().reset_index()

    def text(self) -> str:
        """The report as lines of text (what ``gpucost check`` prints)."""
        lines = []
        d = self.diagnostics
        lines.append(f"cost lines: {d.get('lines_total', 0):,} ({d.get('lines_unobserved', 0):,} without telemetry, "
                     f"{d.get('lines_unattributed', 0):,} not on a GPU resource)")
        lines.append(f"usage samples: {d.get('samples_total', 0):,} ({d.get('samples_used', 0):,} joined, "
                     f"{d.get('samples_no_consumer', 0):,} of free GPUs, {d.get('samples_duplicate', 0):,} read twice "
                     f"and dropped, {d.get('samples_unknown_resource', 0):,} on resources not billed, "
                     f"{d.get('samples_outside_lines', 0):,} outside every bill line)")
        if d.get("interval") is not None:
            lines.append(f"interval: {float(d['interval']):g} s")
        if d.get("lines_down") or d.get("samples_in_downtime"):
            lines.append(f"down time: {d.get('lines_down', 0):,} lines partly or wholly down (on __down__), "
                         f"{d.get('samples_in_downtime', 0):,} busy samples inside down windows dropped")
        if "samples_without_power" in d:
            lines.append(f"energy: {d.get('samples_without_power', 0):,} samples without a power reading, "
                         f"{d.get('lines_energy_fallback', 0):,} energy-driven lines prorated by GPU time "
                         "for want of energy")
        for _, row in self.summary().iterrows():
            cur = row["currency"]
            lines.append(f"money {cur or '(no currency)'}: billed {format_money(row['cost'], cur)}, "
                         f"with telemetry {format_money(row['cost_observed'], cur)}, "
                         f"without telemetry {format_money(row['cost_unobserved'], cur)}, "
                         f"not on a GPU {format_money(row['cost_unattributed'], cur)}"
                         + (f", down {format_money(row['cost_down'], cur)}" if "cost_down" in row.index else ""))
        for name, share in self.labels.items():
            lines.append(f"label {name}: {share:.1%} of held GPU-hours labelled")
        for p in self.problems:
            lines.append(f"{'error' if p.error else 'warning'}: {p.message}")
        for p in self.notes:
            lines.append(f"note: {p.message}")
        return "\n".join(lines)


# ---- money and ids in messages ---------------------------------------------------------

def _money_by_currency(frame: pd.DataFrame, column: str) -> tuple[str, float, str]:
    """'$1.00 + 2.00 EUR' over the currencies of `frame`, with the largest amount
    and its currency (for the Problem)."""
    sums = frame.groupby("currency", sort=True)[column].sum()
    sums = sums[sums != 0]
    if len(sums) == 0:
        return format_money(0.0, str(frame["currency"].iloc[0]) if len(frame) else ""), 0.0, ""
    text = " + ".join(format_money(v, str(c)) for c, v in sums.items())
    top = sums.abs().idxmax()
    return text, float(sums[top]), str(top)


def _ids(values: Iterable[Any]) -> str:
    ids = sorted({str(v) for v in values})
    shown = ", ".join(ids[:_SHOWN_IDS])
    return shown + (f" and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else "")


def _range(start: pd.Series, end: pd.Series) -> str:
    lo, hi = start.min(), end.max()
    if pd.isna(lo) or pd.isna(hi):
        return "none"
    return f"{pd.Timestamp(lo):%Y-%m-%d %H:%M} .. {pd.Timestamp(hi):%Y-%m-%d %H:%M} UTC"


# ---- the fixes, in the caller's words ---------------------------------------------------

_FIXES = {
    "python": {
        "nodes": "map nodes or hosts to the bill's instance ids (nodes= of the telemetry reader, "
                 "gpucost.kubernetes.read_nodes)",
        "period": "give the bill and the telemetry of the same period (check time zones: tz= of the readers)",
        "ids": "export the bill with resource ids (AWS: 'Include resource IDs' in the CUR/Data Export)",
        "catalog": "add the instance type to the inventory (gpucost.catalog.with_rows) or pass inventory=",
        "telemetry": "give their telemetry, or map their hosts to instance ids (nodes= of the reader)",
        "labels": "give the workloads' labels over the bill's whole period (kube_pod_labels from its first day: "
                  "gpucost.kubernetes.fetch_workloads, gpucost.sources.read_pod_labels), or label the pods",
        "strict": "strict=True",
    },
    "cli": {
        "nodes": "map nodes or hosts to the bill's instance ids (--nodes FILE, or nodes in [sources])",
        "period": "give the bill and the telemetry of the same period (--bill / --telemetry, --start / --end)",
        "ids": "export the bill with resource ids (AWS: 'Include resource IDs' in the CUR/Data Export)",
        "catalog": "give the instance type's GPUs (--inventory FILE, or inventory in [sources])",
        "telemetry": "give their telemetry (--telemetry / --prometheus), or map their hosts to instance ids "
                     "(--nodes)",
        "labels": "give the workloads' labels over the bill's whole period (--pod-labels / pod_labels in [sources]: "
                  "kube_pod_labels answers from its first day), or a namespace's labels in [labels.namespaces]",
        "strict": "--strict",
    },
}

# Bare metal (Slurm, nvidia-smi, DCGM on plain hosts): hosts are mapped by the hosts table, not Kubernetes' nodes.
_HOSTS_FIXES = {
    "python": {
        "nodes": "map each host to the bill's resource id (nodes= of the reader: read_slurm_sacct, read_dcgm_text, "
                 "read_query_range take a node, resource_id table; read_nvidia_smi its resource_id=)",
        "telemetry": "give their telemetry or their Slurm accounting (read_slurm_sacct), or map their hosts to the "
                     "bill's ids (nodes= of the reader)",
        "period": "give the bill and the telemetry of the same period (check time zones: tz= of read_slurm_sacct and "
                  "read_nvidia_smi; start/end of read_slurm_sacct)",
    },
    "cli": {
        "nodes": "map each host to the bill's resource id in the hosts table (--hosts FILE, hosts in [sources]: "
                 "host, resource_id[, tz])",
        "telemetry": "give their telemetry (--dcgm-text / --telemetry / --nvidia-smi) or their Slurm accounting "
                     "(--sacct), and map their hosts in the hosts table (--hosts FILE: host, resource_id)",
        "period": "give the bill and the telemetry of the same period (--bill, --sacct / --dcgm-text; check timezone "
                  "in [sources] (--timezone) for sacct and nvidia-smi times)",
    },
}


# ---- the report --------------------------------------------------------------------------

def _attrs(table: Any, key: str) -> dict:
    attrs = getattr(table, "attrs", None)
    value = attrs.get(key) if isinstance(attrs, dict) else None
    return dict(value) if isinstance(value, dict) else {}


def _bill_columns(costs: Any) -> pd.DataFrame | None:
    """The columns of ``costs`` the no-resource-id check reads, as pandas:
    pandas costs as they are; Arrow or Polars costs (small: bill lines) only
    when they have a ``gpu`` column (gpucost's bill readers add it)."""
    if costs is None or isinstance(costs, pd.DataFrame):
        return costs
    try:
        table = Table(costs, "costs")
    except (TypeError, InvalidInputError):
        return None
    if isinstance(table.data, pd.DataFrame):
        return table.data
    wanted = [c for c in ("gpu", "resource_id", "charge_category", "commitment_status", "currency", "cost")
              if table.has(c)]
    return table.data.select(wanted).to_pandas() if "gpu" in wanted else None


def _result_frame(result: Any) -> pd.DataFrame:
    """The result as pandas: as it is, or (an Arrow or Polars result) its
    string columns, gpu_hours and cost, per result row."""
    if isinstance(result, pd.DataFrame):
        return result
    table = result if isinstance(result, pa.Table) else pa.table(result)
    strings = [f.name for f in table.schema if pa.types.is_dictionary(f.type) or pa.types.is_string(f.type)
               or pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type)]
    columns = {name: table.column(name).cast(pa.string()).to_numpy(zero_copy_only=False) for name in strings}
    for name in ("gpu_hours", "cost"):
        if name in table.column_names:
            columns[name] = table.column(name).to_numpy()
    return pd.DataFrame(columns)


def _label_keys(result: pd.DataFrame) -> list[str]:
    """The label columns of a result (its string columns but the engine's own keys)."""
    skip = {"consumer", "resource_id", "period", "currency"}
    return [c for c in result.columns if c not in skip and (
        result[c].dtype == object or isinstance(result[c].dtype, pd.StringDtype))]


def _label_coverage(result: pd.DataFrame) -> dict:
    """Per label column of the result: held GPU-hours with a value / all held GPU-hours."""
    out = {}
    for name in _label_keys(result):
        if "gpu_hours" not in result.columns:
            continue
        values = result[name].astype(str)
        held = result["gpu_hours"].where(~values.isin([r for r in RESERVED if r != "__unlabelled__"]), 0.0)
        total = float(held.sum())
        if total > 0:
            out[name] = 1.0 - float(held[values == "__unlabelled__"].sum()) / total
    return out


def join_report(result: pd.DataFrame, costs: Any = None, usage: Any = None, *, caller: str = "python",
                workloads: Any = None, downtime: Any = None) -> JoinReport:
    """The join report of an allocation.

    Args:
        result: a frame returned by :func:`gpucost.allocate` (or a runner).
        costs, usage: the tables it was computed from, when they came from
            gpucost's readers (their reports add causes); optional.
        caller: ``"python"`` or ``"cli"``: the words the fixes are given in.
        workloads: the workloads table it was computed with; its
            ``attrs["labels"]`` (``start``, ``end``: the instants a label
            history such as ``kube_pod_labels`` covers) names the dates the
            labels cover in the label-coverage problem; optional.
        downtime: the down windows it was computed with: windows naming a
            resource no bill line names (a node name where the bill has
            instance ids) are a problem, since they change nothing; optional.

    Returns:
        A :class:`JoinReport`; ``report.problems`` lists what changes the numbers.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
        ...                       "share": 1.0, "util": 0.9, "mem_used": 40 * 2**30})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> with gpucost.join.checks(False):   # no warning: the report says it
        ...     result = gpucost.allocate(costs, usage, inventory)
        >>> print(gpucost.join_report(result).text())  # doctest: +NORMALIZE_WHITESPACE
        cost lines: 2 (1 without telemetry, 0 not on a GPU resource)
        usage samples: 4 (4 joined, 0 of free GPUs, 0 read twice and dropped, 0 on resources not billed,
            0 outside every bill line)
        interval: 1800 s
        money (no currency): billed $14.00, with telemetry $8.00, without telemetry $6.00, not on a GPU $0.00
        warning: 1 billed GPU resource(s) have lines without any telemetry (node-2): $6.00 is on __unobserved__,
            neither used nor idle. Fix: give their telemetry, or map their hosts to instance ids (nodes= of the reader)
    """
    attrs = result_attrs(result)
    diagnostics = dict(attrs.get("diagnostics") or {})
    join = attrs.get("join")
    if not isinstance(join, pd.DataFrame):
        raise InvalidInputError("join_report: the result carries no join table (attrs['join']); "
                                "pass a result returned by gpucost.allocate")
    frame = _result_frame(result)
    report = JoinReport(resources=join, diagnostics=diagnostics, billing=_attrs(costs, "billing"),
                        telemetry=_attrs(usage, "telemetry"), labels=_label_coverage(frame))
    fix = _FIXES.get(caller, _FIXES["python"])
    if _bare_metal(usage):  # Slurm and plain hosts: the hosts table, not Kubernetes' nodes
        fix = {**fix, **_HOSTS_FIXES.get(caller, _HOSTS_FIXES["python"])}
    found = _problems(report, costs, fix)
    if not any(p.error for p in found):
        labels = _label_problem(frame, _attrs(workloads, "labels"), join, fix)
        found += [labels] if labels is not None else []
    down = _downtime_problem(downtime, join)
    found += [down] if down is not None else []
    found += _energy_problems(diagnostics, _energy_driven(costs))
    found += [Problem(kind, message, amount) for kind, message, amount in slurm_join_problems(usage, caller)]
    from gpucost.hosts import sacct_problems  # sacct jobs whose GPUs cannot be known, priced with the bill
    found += [Problem(kind, message, amount) for kind, message, amount in sacct_problems(usage, costs, caller)]
    # Problems worth $0.00 are notes: reported, never warned about.
    report.problems = [p for p in found if not p.zero_dollar]
    report.notes = [p for p in found if p.zero_dollar]
    return report


def _bare_metal(usage: Any) -> bool:
    """Whether the usage came from hosts outside Kubernetes: as the plan of
    sources says (``attrs["bare_metal"]``), else from Slurm's readers
    (``attrs["slurm"]``, ``attrs["slurm_join"]``)."""
    attrs = getattr(usage, "attrs", None)
    if not isinstance(attrs, dict):
        return False
    if "bare_metal" in attrs:
        return bool(attrs["bare_metal"])
    return "slurm" in attrs or "slurm_join" in attrs


def _day(instant: Any, end: bool = False) -> str:
    """The UTC date of an instant; of the last instant before it when `end`
    (an exclusive end: a bill to 2025-11-01 00:00 covers 2025-10-31)."""
    t = pd.Timestamp(instant)
    t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    return f"{(t - pd.Timedelta(1, 'ns') if end else t):%Y-%m-%d}"


def _label_problem(frame: pd.DataFrame, history: dict, join: pd.DataFrame, fix: dict) -> Problem | None:
    """Label coverage: more than UNLABELLED_SHARE of the GPU cost on
    ``__unlabelled__`` in a label column of the result, or a label history
    (``workloads.attrs["labels"]``) that starts on a later date than the
    bill's GPU lines. Names the dollars on ``__unlabelled__`` and the dates
    the labels and the bill cover."""
    keys = _label_keys(frame)
    if not keys or "cost" not in frame.columns or not len(frame):
        return None
    gpu = join[(join["lines"].to_numpy() > 0) & join["in_inventory"].to_numpy().astype(bool)]
    bill_start, bill_end = gpu["lines_start"].min(), gpu["lines_end"].max()
    start, end = history.get("start"), history.get("end")
    dated = start is not None and end is not None and not pd.isna(start) and not pd.isna(end)
    late = dated and not pd.isna(bill_start) and _day(start) > _day(bill_start)
    currency = frame["currency"].fillna("").astype(str).to_numpy() if "currency" in frame.columns else ""
    cost = frame["cost"].to_numpy(dtype=float)
    parts, worst = [], None
    for name in keys:
        values = frame[name].astype(str).to_numpy()
        money = pd.DataFrame({"currency": currency, "cost": np.where(values == Reserved.UNLABELLED, cost, 0.0),
                              "gpu": np.where(values != Reserved.UNATTRIBUTED, cost, 0.0)})
        sums = money.groupby("currency", sort=True)[["cost", "gpu"]].sum()
        shares = (sums["cost"] / sums["gpu"].where(sums["gpu"] > 0)).fillna(0.0)
        if not (shares.max() > UNLABELLED_SHARE or late):
            continue
        text, amount, cur = _money_by_currency(money, "cost")
        gpu_text = " + ".join(format_money(v, str(c)) for c, v in sums["gpu"].items())
        parts.append(f"{name}: {text} of {gpu_text} GPU cost ({shares.max():.1%}) on __unlabelled__")
        if worst is None or abs(amount) > abs(worst[0]):
            worst = (amount, cur)
    if worst is None:
        return None
    bill = f"{_day(bill_start)} .. {_day(bill_end, end=True)}" if not pd.isna(bill_start) else "no GPU line"
    dates = (f"Labels cover {_day(start)} .. {_day(end)}, the bill {bill}" if dated else
             f"The bill covers {bill}; the label sources state no dates")
    why = ("the label history starts after the bill" if late else
           f"more than {UNLABELLED_SHARE:.0%} of the GPU cost has no label")
    return Problem("unlabelled", f"labels cover too little ({why}): {'; '.join(parts)}. {dates}. "
                   f"Fix: {fix['labels']}", worst[0], worst[1], money=True)


def _energy_driven(costs: Any) -> bool:
    """Whether some cost line is split by energy (``driver`` "energy")."""
    columns = getattr(costs, "columns", None)
    if columns is None or "driver" not in columns:
        return False
    return bool((pd.Series(np.asarray(costs["driver"], dtype=object)).astype(str) == "energy").any())


def _energy_problems(d: dict, energy_driven: bool) -> list[Problem]:
    """docs/semantics.md, 9: energy-driven lines without energy (their money
    split by GPU time instead), and energy or CO2e the result lacks: money
    only when a line is split by energy, else a note."""
    out = []
    if d.get("lines_energy_fallback"):
        out.append(Problem("energy_fallback", f"{d['lines_energy_fallback']:,} energy-driven cost line(s) (driver "
                           "'energy': power, electricity) had no measured energy on their GPUs and were prorated by "
                           "GPU time instead. Fix: give the telemetry's power (power_w: DCGM_FI_DEV_POWER_USAGE, "
                           "nvidia-smi power.draw)"))
    if d.get("samples_without_power"):
        split = ", and from the split of the energy-driven lines" if energy_driven else ""
        out.append(Problem("samples_without_power", f"{d['samples_without_power']:,} usage samples have no power "
                           f"reading (power_w NaN): their energy is missing from energy_kwh and co2e_kg{split}. "
                           "Fix: scrape the power field on every GPU", money=not energy_driven))
    if d.get("samples_without_intensity"):
        out.append(Problem("samples_without_intensity", f"{d['samples_without_intensity']:,} usage samples fall in "
                           "no window of the carbon intensity table: their energy has no CO2e, so co2e_kg is "
                           "short. Fix: cover the whole period in the table"))
    return out


def _downtime_problem(downtime: Any, join: pd.DataFrame) -> Problem | None:
    """Down windows whose resource no bill line names change nothing (docs/
    semantics.md, 10): most often node names where the bill has instance ids."""
    if downtime is None:
        return None
    codes, values = Table(downtime, "downtime").strings("resource_id")
    if len(codes) == 0:
        return None
    named = np.asarray(values, dtype=object)[np.unique(codes[codes >= 0])]
    billed = set(join.loc[join["lines"].to_numpy() > 0, "resource_id"].astype(str)) if len(join) else set()
    unbilled = sorted(str(v) for v in named if str(v) not in billed)
    if not unbilled:
        return None
    rows = int(np.isin(np.asarray(values, dtype=object)[codes[codes >= 0]], unbilled).sum())
    return Problem("downtime_unbilled", f"{rows:,} down window(s) name {len(unbilled):,} resource(s) no bill line "
                   f"names ({_ids(pd.Series(unbilled))}): they change nothing. Fix: map node names to the bill's "
                   "ids (the hosts table, with which node_events are read; nodes= of gpucost.read_slurm_events)")


def slurm_join_problems(usage: Any, caller: str = "python") -> list[tuple[str, str, float]]:
    """The Slurm join's own problems (jobs on GPUs sacct does not give them,
    sacct times off by a time zone; :func:`gpucost.slurm.join_jobs` states them
    in ``usage.attrs["slurm_join"]``) as (kind, message with its fix, amount),
    in the words of ``caller`` ("python" or "cli"); none for other usage."""
    attrs = getattr(usage, "attrs", None)
    report = attrs.get("slurm_join") if isinstance(attrs, dict) else None
    if not isinstance(report, dict):
        return []
    out = []
    for p in report.get("problems", []):
        fix = p["fix"].get(caller, p["fix"]["python"])
        out.append((p["kind"], f"{p['text']}. Fix: {fix}", float(p.get("amount", 0.0))))
    return out


def _problems(report: JoinReport, costs: Any, fix: dict) -> list[Problem]:
    # Conditions on numpy columns first; frames are cut only for a problem
    # found (pandas filtering costs ~0.2 ms a cut, and most calls find none).
    j = report.resources

    def col(name: str) -> np.ndarray:
        return j[name].to_numpy() if name in j.columns else np.zeros(len(j))

    def rows(mask: np.ndarray) -> pd.DataFrame:
        sub = j[mask]
        currency = sub["currency"].fillna("").astype(str) if "currency" in sub.columns else ""
        return sub.assign(currency=currency)

    d = report.diagnostics
    parts = _attrs(costs, "parts")
    out: list[Problem] = []
    lines = col("lines")
    is_billed = lines > 0
    is_gpu = is_billed & j["in_inventory"].to_numpy().astype(bool)
    has_telemetry = col("samples") > 0
    unknown_resource = col("samples_unknown_resource") > 0
    outside_lines = col("samples_outside_lines") > 0
    samples = int(d.get("samples_total", 0)) - int(d.get("samples_duplicate", 0))
    observed_cost = float(np.abs(col("cost_observed")[is_gpu]).sum())
    observed_lines = int(d.get("lines_total", 0)) - int(d.get("lines_unattributed", 0)) - int(
        d.get("lines_unobserved", 0))

    # Nothing joined: every number would be wrong.
    if is_gpu.any() and observed_lines <= 0 and observed_cost == 0:
        gpu, telemetry = rows(is_gpu), rows(has_telemetry)
        money, amount, cur = _money_by_currency(gpu, "cost")
        if samples <= 0:
            out.append(Problem("no_telemetry", f"no usage sample given: all {money} of {len(gpu)} billed GPU "
                               f"resource(s) is unobserved. Fix: {fix['telemetry']}", amount, cur, error=False,
                               money=True))
        else:
            shared = set(gpu["resource_id"]) & set(telemetry["resource_id"])
            why = (f"the telemetry names {telemetry['resource_id'].nunique()} resource(s) ({_ids(telemetry['resource_id'])}) "
                   f"and the bill {gpu['resource_id'].nunique()} ({_ids(gpu['resource_id'])}): no id in common. "
                   f"Fix: {fix['nodes']}") if not shared else (
                f"bill lines {_range(gpu['lines_start'], gpu['lines_end'])}, telemetry "
                f"{_range(telemetry['samples_start'], telemetry['samples_end'])}: the periods do not meet. "
                f"Fix: {fix['period']}")
            out.append(Problem("no_join", f"no usage sample joined a billed GPU line ({money} billed): {why}",
                               amount, cur, error=True))
        return out

    if (is_gpu & (col("cost_unobserved") != 0)).any():
        unobserved = rows(is_gpu & (col("cost_unobserved") != 0))
        money, amount, cur = _money_by_currency(unobserved, "cost_unobserved")
        out.append(Problem(
            "unobserved", f"{unobserved['resource_id'].nunique()} billed GPU resource(s) have lines without any "
            f"telemetry ({_ids(unobserved['resource_id'])}): {money} is on __unobserved__, neither used nor idle. "
            f"Fix: {fix['telemetry']}", amount, cur, money=True))

    if (unknown_resource & is_billed).any():
        no_inventory = rows(unknown_resource & is_billed)
        money, amount, cur = _money_by_currency(no_inventory, "cost_unattributed")
        out.append(Problem(
            "no_inventory", f"{no_inventory['resource_id'].nunique()} billed resource(s) with GPU telemetry have "
            f"no GPUs in the inventory ({_ids(no_inventory['resource_id'])}): {money} stays __unattributed__. "
            f"Fix: {fix['catalog']}", amount, cur, money=True))
    # Telemetry of a resource no bill line names (unknown to the inventory, or in it with no line).
    if (~is_billed & (unknown_resource | outside_lines)).any():
        unbilled = rows(~is_billed & (unknown_resource | outside_lines))
        uh = float(unbilled["unjoined_gpu_hours"].sum())
        out.append(Problem(
            "telemetry_not_billed", f"telemetry of {unbilled['resource_id'].nunique()} resource(s) that the bill "
            f"does not name ({_ids(unbilled['resource_id'])}; {uh:,.1f} GPU-hours held) joined nothing. "
            f"Fix: {fix['nodes']}, or give the bill that names them (a spot instance interrupted in its first hour "
            "is billed nothing: then this is expected)"))

    if (outside_lines & is_billed).any():
        outside, billed, telemetry = rows(outside_lines & is_billed), rows(is_billed), rows(has_telemetry)
        hours = float(outside["unjoined_gpu_hours"].sum())
        out.append(Problem(
            "outside_lines", f"{int(outside['samples_outside_lines'].sum()):,} samples ({hours:,.1f} GPU-hours held) "
            f"on {outside['resource_id'].nunique()} billed GPU resource(s) fall outside every bill line: bill "
            f"{_range(billed['lines_start'], billed['lines_end'])}, telemetry "
            f"{_range(telemetry['samples_start'], telemetry['samples_end'])}. Fix: {fix['period']}"))

    # Busy while said to be down (docs/semantics.md, 10): the samples were
    # dropped, so the downtime table or the telemetry is wrong somewhere.
    if (col("samples_in_downtime") > 0).any():
        busy = rows(col("samples_in_downtime") > 0)
        out.append(Problem(
            "busy_while_down", f"{int(busy['samples_in_downtime'].sum()):,} samples on {busy['resource_id'].nunique()} "
            f"resource(s) ({_ids(busy['resource_id'])}) show workloads inside their down windows: they were dropped "
            "(no money, hours or energy), as the downtime table says the resource could not be used. Fix: check the "
            "windows (node events are local time: give their timezone) against the telemetry's node names"))

    costs = _bill_columns(costs)
    gpu_column = costs.columns if costs is not None else ()
    if "gpu" in gpu_column and "resource_id" in gpu_column:
        ids = costs["resource_id"].astype("string").fillna("")
        usage_line = np.ones(len(costs), dtype=bool)  # fees, purchases and unused commitments name no resource
        if "charge_category" in gpu_column:
            usage_line &= (costs["charge_category"].astype("string").fillna("") == "Usage").to_numpy()
        if "commitment_status" in gpu_column:
            usage_line &= (costs["commitment_status"].astype("string").fillna("") != "Unused").to_numpy()
        no_id = costs[costs["gpu"].fillna(False).astype(bool).to_numpy() & (ids == "").to_numpy() & usage_line]
        if len(no_id):
            frame = pd.DataFrame({"currency": no_id["currency"].astype(str) if "currency" in no_id.columns else "",
                                  "cost": no_id["cost"].astype(float)})
            money, amount, cur = _money_by_currency(frame, "cost")
            out.append(Problem("no_resource_ids", f"{len(no_id):,} GPU usage lines carry no resource id: {money} "
                               f"stays __unattributed__. Fix: {fix['ids']}", amount, cur, money=True))
    elif is_billed.any() and has_telemetry.any() and (j["resource_id"][is_billed].astype(str) == "").all():
        money, amount, cur = _money_by_currency(rows(is_billed), "cost")
        out.append(Problem("no_resource_ids", f"no bill line carries a resource id: {money} stays __unattributed__. "
                           f"Fix: {fix['ids']}", amount, cur, money=True))

    if (col("lines_oversubscribed") > 0).any():
        over = rows(col("lines_oversubscribed") > 0)
        cause = _oversubscription_cause(report.telemetry)
        out.append(Problem("oversubscribed", f"{int(over['lines_oversubscribed'].sum()):,} bill lines of "
                           f"{over['resource_id'].nunique()} resource(s) ({_ids(over['resource_id'])}) were held beyond "
                           f"their GPUs' capacity and scaled down, so their idle cost is hidden; {cause}"))
    # Overlapping primary lines count hours twice only where hours are counted: on GPU resources.
    if (is_gpu & (col("lines_primary_overlap") > 0)).any():
        overlap = rows(is_gpu & (col("lines_primary_overlap") > 0))
        out.append(Problem("primary_overlap", f"{int(overlap['lines_primary_overlap'].sum()):,} bill lines of "
                           f"{overlap['resource_id'].nunique()} GPU resource(s) ({_ids(overlap['resource_id'])}) bill "
                           "the same time as another line of their resource: GPU-hours counted twice. Cause: a bill "
                           "read twice, export parts that overlap, or several lines per resource-hour without a "
                           "`primary` column saying which one bills the time"))
    dropped = int(report.billing.get("duplicates_dropped", 0) or 0)
    if dropped:
        # The readers tally the dropped rows' amounts per currency, across every part of the bill.
        tally = report.billing.get("duplicate_cost") or {}
        frame = pd.DataFrame({"currency": [str(c) for c in tally], "cost": [float(v) for v in tally.values()]})
        money, amount, cur = _money_by_currency(frame, "cost") if len(frame) else ("an unknown amount", 0.0, "")
        where = _duplicate_parts(parts)
        out.append(Problem("bill_duplicates", f"{dropped:,} bill rows were read twice and dropped (repeated "
                           f"line-item ids or identical rows{where}): {money} would have been counted twice. "
                           "Check that no export part, file or manifest is given twice (a glob over an "
                           "overlapping re-delivery)", amount, cur, money=bool(len(frame))))
    beyond = report.billing.get("hours_beyond_period") or []
    if len(beyond):
        out.append(Problem("hours_beyond_period", f"{len(beyond)} resource(s) are billed more instance-hours than "
                           f"their period has ({_ids(beyond)}): a bill counted twice or lines merged wrongly"))
    return out


def _duplicate_parts(parts: dict) -> str:
    """'; in part-2.csv, part-3.csv': the parts of a bill (``costs.attrs["parts"]``)
    that dropped rows, when the bill was read in parts."""
    names = [str(name) for name, a in parts.items()
             if int(((a or {}).get("billing") or {}).get("duplicates_dropped", 0) or 0)]
    return f"; in {_ids(names)}" if names else ""


def _oversubscription_cause(telemetry: dict) -> str:
    """The cause as the telemetry reader saw it, or the usual suspects."""
    cause = telemetry.get("duplicate_cause")
    if cause:
        return str(cause)
    replicas = telemetry.get("replica_labels")
    if replicas:
        names = replicas if isinstance(replicas, str) else ", ".join(map(str, replicas))
        return (f"the telemetry carries Prometheus replica labels ({names}): the same series from two replicas; "
                "query one replica (or deduplicate in Thanos/Mimir)")
    return ("common causes: the same series scraped twice (two Prometheus replicas, one exporter in two scrape jobs) "
            "or time-sliced workloads each reported with share 1")


# ---- the rule ----------------------------------------------------------------------------

def check_join(result: pd.DataFrame, costs: Any = None, usage: Any = None, *, strict: bool = False,
               caller: str = "python", stacklevel: int = 2, workloads: Any = None,
               downtime: Any = None) -> JoinReport:
    """Applies the warning rule: each problem becomes a :class:`JoinWarning`;
    an error (nothing joined), or any problem under ``strict``, raises
    :class:`JoinError`. Returns the report.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
        ...                       "share": 1.0, "util": 0.9, "mem_used": 40 * 2**30})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> with gpucost.join.checks(False):
        ...     result = gpucost.allocate(costs, usage, inventory)
        >>> gpucost.check_join(result, strict=True)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        gpucost.errors.JoinError: 1 billed GPU resource(s) have lines without any telemetry (node-2): ... [strict=True]
    """
    report = join_report(result, costs, usage, caller=caller, workloads=workloads, downtime=downtime)
    apply_rule(report, strict=strict, caller=caller, stacklevel=stacklevel + 1)
    return report


def apply_rule(report: JoinReport, *, strict: bool = False, caller: str = "python", stacklevel: int = 2) -> None:
    """The one warning rule over a report already built (see :func:`check_join`)."""
    errors = [p for p in report.problems if p.error or strict]
    if errors:
        fix = _FIXES.get(caller, _FIXES["python"])["strict"]
        extra = f" ({len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        suffix = f" [{fix}]" if strict and not errors[0].error else ""
        raise JoinError(f"{errors[0].message}{suffix}{extra}")
    for p in report.problems:
        warnings.warn(p.message, JoinWarning, stacklevel=stacklevel)



_CHECKS = contextvars.ContextVar("gpucost_join_checks", default=True)


@contextlib.contextmanager
def checks(enabled: bool):
    """Turns the rule at gpucost.allocate's entry on or off inside a ``with``
    block (this thread and context only): for property tests and for notebooks
    that explore inputs known not to line up. The join table and diagnostics
    are still on every result; :func:`check_join` still works.

    Examples:
        >>> costs = pd.DataFrame({"resource_id": ["node-1", "node-2"], "cost": [8.0, 6.0],
        ...                       "start": pd.Timestamp("2026-03-01 00:00", tz="UTC"),
        ...                       "end": pd.Timestamp("2026-03-01 02:00", tz="UTC")})
        >>> usage = pd.DataFrame({"timestamp": pd.date_range("2026-03-01", periods=4, freq="30min", tz="UTC"),
        ...                       "resource_id": "node-1", "device": 0, "consumer": "train",
        ...                       "share": 1.0, "util": 0.9, "mem_used": 40 * 2**30})
        >>> inventory = pd.DataFrame({"resource_id": ["node-1", "node-2"], "device": 0, "mem_capacity": 80 * 2**30})
        >>> with gpucost.join.checks(False):   # node-2 has no telemetry: no warning
        ...     partial = gpucost.allocate(costs, usage, inventory)
        >>> partial[["consumer", "cost"]]
                 consumer  cost
        0        __idle__   0.0
        1  __unobserved__   6.0
        2           train   8.0
    """
    token = _CHECKS.set(bool(enabled))
    try:
        yield
    finally:
        _CHECKS.reset(token)


def called_from_gpucost(depth: int) -> bool:
    """Whether the function `depth` frames up was called from gpucost's own code
    (an analysis, the report, the command): those check the join once at their
    own entry, so the allocations they make inside stay quiet."""
    frame = sys._getframe(depth + 1)
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name.startswith("gpucost.") and not name.startswith("gpucost.tests")


def check_public_call(result: pd.DataFrame, costs: Any, usage: Any, *, strict: bool, workloads: Any = None,
                      downtime: Any = None) -> None:
    """The rule at a public entry point (gpucost.allocate and the runners):
    applied when the user called it, skipped for gpucost's own inner calls."""
    if not _CHECKS.get() or called_from_gpucost(2):
        return
    check_join(result, costs, usage, strict=strict, stacklevel=4, workloads=workloads, downtime=downtime)
