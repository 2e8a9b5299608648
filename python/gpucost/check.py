"""``gpucost check``: what the inputs hold and how they join, before anyone
trusts a table (docs/cli.md).

It reads every source the config names and prints, per source, its rows, time
range, interval and currency; then the join (billed GPU resources with and
without telemetry, telemetry without a bill line, in money); then label
coverage; then one line per problem with the flag or key that fixes it. The
numbers come from one engine pass (an allocation by consumer that is not
printed) and the join report built on it; nothing is re-derived here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import gpucost
from gpucost.currency import currencies
from gpucost.frames import Table, utilisation_measured
from gpucost.join import RESERVED, JoinReport, format_money, join_report

__all__ = ["CheckResult", "check_tables"]

_TOP_UNLABELLED = 3


@dataclass
class CheckResult:
    """The lines ``gpucost check`` prints and its exit code (0 clean, 1 warnings, 2 errors)."""

    lines: list[str] = field(default_factory=list)
    report: JoinReport | None = None

    @property
    def exit_code(self) -> int:
        if self.report is None:
            return 2
        if any(p.error for p in self.report.problems):
            return 2
        return 1 if self.report.problems else 0


def _range(values: Any) -> str:
    times = pd.to_datetime(pd.Series(values), utc=True)
    if len(times) == 0 or times.isna().all():
        return "no instants"
    return f"{times.min():%Y-%m-%d %H:%M} .. {times.max():%Y-%m-%d %H:%M} UTC"


@dataclass
class TelemetrySummary:
    """What check says of the telemetry, gathered a chunk at a time when it
    streams (the month never held): samples, series (distinct resource,
    device, consumer: a small set), the time range, per-sample durations."""
    samples: int = 0
    series: set = field(default_factory=set)
    first: pd.Timestamp | None = None
    last: pd.Timestamp | None = None
    durations: bool = False
    unmeasured: int = 0  # samples without a utilisation field (a reader's util_measured False)
    spacing: float | None = None  # the reader's spacing of the series (saved answers), from the first chunk

    def add(self, usage: pd.DataFrame) -> None:
        if self.spacing is None:
            self.spacing = (usage.attrs.get("telemetry") or {}).get("spacing_seconds")
        self.samples += len(usage)
        self.durations |= "duration" in usage.columns
        measured = utilisation_measured(usage)
        if measured is not None:
            self.unmeasured += int((~measured).sum())
        if not len(usage):
            return
        keys = usage[["resource_id", "device", "consumer"]].drop_duplicates()
        self.series.update(zip(*(keys[c].astype(str) for c in keys.columns)))
        times = pd.to_datetime(usage["timestamp"], utc=True)
        self.first = times.min() if self.first is None else min(self.first, times.min())
        self.last = times.max() if self.last is None else max(self.last, times.max())

    @classmethod
    def of(cls, usage: pd.DataFrame) -> TelemetrySummary:
        summary = cls()
        summary.add(usage)
        return summary


def _source_lines(tables: Any, names: dict, interval: Any, stated: bool,
                  telemetry: TelemetrySummary | None = None) -> list[str]:
    costs = tables.costs
    lines = ["sources"]
    cur = currencies(costs)
    if cur:
        total = " + ".join(format_money(costs.loc[costs["currency"] == c, "cost"].sum(), c) for c in cur)
    else:
        total = format_money(float(np.sum(costs["cost"])))
    lines.append(f"  bill       {names.get('bill', names.get('invoice', 'costs'))}: {len(costs):,} lines, "
                 f"{_range(costs['start']) if len(costs) else 'no lines'}, "
                 f"currency {', '.join(cur) if cur else 'not stated (taken as one)'}, total {total}")
    lines += _invoice_lines(costs.attrs.get("invoice"), names.get("invoice", "invoice"))
    lines += _owned_lines(costs.attrs.get("owned"))
    t = telemetry if telemetry is not None else TelemetrySummary.of(tables.usage)
    spacing = ("per-sample durations" if t.durations else
               f"interval {float(interval):g} s{'' if stated else ' (from the data)'}" if interval is not None
               else "interval inferred by the engine")
    span = f"{t.first:%Y-%m-%d %H:%M} .. {t.last:%Y-%m-%d %H:%M} UTC" if t.samples else "no samples"
    lines.append(f"  telemetry  {names.get('telemetry', 'usage')}: {t.samples:,} samples in {len(t.series):,} "
                 f"series, {span}, {spacing}")
    if t.unmeasured:  # a note: the allocated basis is right; utilisation, idle and effective GPU-hours are not read
        lines.append(f"             {t.unmeasured:,} of them without a utilisation field (MIG instances without "
                     "DCGM_FI_PROF_GR_ENGINE_ACTIVE, or no utilisation metric): util read as 0 in effective "
                     "GPU-hours, left out of idle detection")
    if stated and interval is not None and t.durations and t.spacing and \
            abs(float(t.spacing) - float(interval)) > 0.01 * float(interval):
        # A note, not a problem: each sample counts its own spacing; the step is only checked within 2x.
        lines.append(f"             the step stated is {float(interval):g} s, the series are spaced "
                     f"{float(t.spacing):g} s: each sample counts the gap to its series' next (the data's "
                     "spacing); the step only checks it (within 2x)")
    inv = tables.inventory
    lines.append(f"  inventory  {inv['resource_id'].nunique():,} GPU resources, {len(inv):,} GPUs")
    if tables.workloads is not None:
        labels = [c for c in tables.workloads.columns if c != "consumer"]
        lines.append(f"  workloads  {names.get('workloads', 'workloads')}: {len(tables.workloads):,} workloads, "
                     f"labels {', '.join(labels) if labels else 'none'}")
    return lines


def _invoice_lines(info: dict | None, name: str) -> list[str]:
    """A rate-card invoice (gpucost.read_invoice): its lines, money, period,
    and the node names the hosts table joined to the bill's ids or not."""
    if not info:
        return []
    money = " + ".join(format_money(v, c) for c, v in info["total"].items())
    period = (f"{info['start']:%Y-%m-%d %H:%M} .. {info['end']:%Y-%m-%d %H:%M} UTC" if info["lines"]
              else "no lines")
    if info["names_joined"] is None:
        nodes = f"{len(info['names']):,} node names, kept as written (no hosts table)"
    else:
        missing = info["names_unjoined"]
        nodes = (f"{len(info['names_joined']):,} node names joined through the hosts table, {len(missing):,} not in "
                 f"it{' (' + ', '.join(missing[:3]) + (', ...' if len(missing) > 3 else '') + ')' if missing else ''}")
    return [f"  invoice    {name}: {info['lines']:,} lines ({info['time_lines']:,} billing GPU time), {money}, "
            f"{period}, rate card; {nodes}"]


def _owned_lines(info: dict | None) -> list[str]:
    """[owned]'s cost lines (gpucost.owned_costs): nodes, classes, money by
    component, energy, and how much of the power was estimated."""
    if not info:
        return []
    money = ", ".join(f"{k} {format_money(v)}" for k, v in info["total"].items())
    period = (f"{info['start']:%Y-%m-%d %H:%M} .. {info['end']:%Y-%m-%d %H:%M} UTC" if info["lines"]
              else "no lines")
    estimated = (f"{info['estimated_lines']:,} of {info['power_lines']:,} power lines estimated (no power_w measured)"
                 if info["estimated_lines"] else "power measured")
    return [f"  owned      [owned]: {info['lines']:,} lines for {info['nodes']:,} nodes of "
            f"{', '.join(info['classes']) or 'no class'}, {period}: {money}; {info['energy_kwh']:,.1f} kWh, "
            f"{estimated}"]


def _join_lines(report: JoinReport) -> list[str]:
    j = report.resources
    lines = ["join"]
    if j is None or len(j) == 0:
        return lines + ["  nothing to join"]
    j = j.assign(currency=j["currency"].fillna("").astype(str))
    gpu = j[(j["lines"] > 0) & j["in_inventory"].astype(bool)]
    with_t = gpu[gpu["cost_observed"] != 0]
    without = gpu[gpu["cost_unobserved"] != 0]

    def money(frame: pd.DataFrame, column: str) -> str:
        sums = frame.groupby("currency")[column].sum()
        return " + ".join(format_money(v, c) for c, v in sums.items()) if len(sums) else format_money(0.0)

    lines.append(f"  billed GPU resources with telemetry:    {with_t['resource_id'].nunique():,} "
                 f"({money(with_t, 'cost_observed')})")
    lines.append(f"  billed GPU resources without telemetry: {without['resource_id'].nunique():,} "
                 f"({money(without, 'cost_unobserved')})")
    unbilled = j[(j["samples_unknown_resource"] > 0) & (j["lines"] == 0)]
    lines.append(f"  telemetry without a bill line:          {unbilled['resource_id'].nunique():,} resources "
                 f"({float(j['unjoined_gpu_hours'].sum()):,.1f} GPU-hours held outside the bill)")
    d = report.diagnostics
    lines.append(f"  samples: {d.get('samples_used', 0):,} joined, {d.get('samples_no_consumer', 0):,} of free GPUs, "
                 f"{d.get('samples_duplicate', 0):,} read twice, {d.get('samples_unknown_resource', 0):,} on "
                 f"resources not billed, {d.get('samples_outside_lines', 0):,} outside every line")
    if d.get("lines_down") or d.get("samples_in_downtime"):  # docs/semantics.md, 10
        down = j[j["cost_down"] != 0] if "cost_down" in j.columns else j.iloc[:0]
        lines.append(f"  down time: {d.get('lines_down', 0):,} lines partly or wholly down on "
                     f"{down['resource_id'].nunique():,} resources ({money(down, 'cost_down')} on __down__), "
                     f"{d.get('samples_in_downtime', 0):,} busy samples inside down windows dropped")
    if d.get("interval") is not None:
        lines.append(f"  interval used: {float(d['interval']):g} s")
    return lines


def _sacct_lines(usage: Any) -> list[str]:
    """What the sacct reader dropped or cut (repeated and overlapping exports,
    requeued runs) and the shared jobs it read: the join report's counts of
    issue 30's repeated exports."""
    from gpucost.hosts import _slurm_reports
    reports = _slurm_reports(usage)
    if not reports:
        return []
    total = {k: sum(int(r.get(k, 0)) for r in reports)
             for k in ("rows_repeated", "rows_superseded", "runs_cut", "shared_jobs")}
    unknown = sum(len(r.get("jobs_unknown_gpus", [])) for r in reports)
    return ["sacct", f"  rows read twice and dropped: {total['rows_repeated']:,}; a run's earlier state replaced: "
            f"{total['rows_superseded']:,}; requeued runs cut at the next start: {total['runs_cut']:,}",
            f"  shard/MPS jobs: {total['shared_jobs']:,}; jobs whose GPUs cannot be known: {unknown:,}"]


def _label_lines(per_consumer: pd.DataFrame, workloads: pd.DataFrame | None) -> list[str]:
    if workloads is None:
        return ["labels", "  no workloads table: every workload is __unlabelled__"]
    held = per_consumer[~per_consumer["consumer"].isin(RESERVED)][["consumer", "gpu_hours"]]
    held = held.groupby("consumer", as_index=False)["gpu_hours"].sum()
    # Consumers are text (a workloads CSV of numeric job ids reads as integers).
    merged = held.merge(workloads.assign(consumer=workloads["consumer"].astype(str)), on="consumer", how="left")
    total = float(merged["gpu_hours"].sum())
    lines = ["labels"]
    for label in [c for c in workloads.columns if c != "consumer"]:
        values = merged[label].astype("string")
        missing = values.isna() | (values == "")
        share = 1.0 - float(merged.loc[missing.to_numpy(), "gpu_hours"].sum()) / total if total else float("nan")
        top = merged[missing.to_numpy()].nlargest(_TOP_UNLABELLED, "gpu_hours")
        named = ", ".join(f"{c} ({h:,.1f} h)" for c, h in zip(top["consumer"], top["gpu_hours"]))
        tail = f"; most GPU-hours unlabelled: {named}" if len(top) else ""
        lines.append(f"  {label}: {share:.1%} of held GPU-hours labelled{tail}")
    return lines


def _energy_lines(per_consumer: pd.DataFrame) -> list[str]:
    """docs/semantics.md, 9: the energy measured over billed GPU time, when
    the telemetry has power."""
    if "energy_kwh" not in per_consumer.columns:
        return []
    d = per_consumer.attrs.get("diagnostics", {})
    idle = per_consumer.loc[per_consumer["consumer"] == "__idle__", "energy_kwh"].sum()
    return ["energy",
            f"  {per_consumer['energy_kwh'].sum():,.1f} kWh measured over billed GPU time ({idle:,.1f} kWh on "
            f"__idle__), {d.get('samples_without_power', 0):,} samples without a power reading, "
            f"{d.get('lines_energy_fallback', 0):,} energy-driven lines split by GPU time for want of energy"]


def check_policy(tables: Any, interval: Any = None, energy: dict | None = None) -> dict:
    """The keyword arguments of check's allocation by consumer (in memory or
    streamed): the interval when known, the down windows, ``[energy]``'s."""
    return {**({"interval": interval} if interval is not None else {}),
            "downtime": getattr(tables, "downtime", None), **(energy or {})}


def check_tables(tables: Any, *, names: dict | None = None, interval: Any = None, stated: bool = True,
                 caller: str = "cli", energy: dict | None = None, per_consumer: pd.DataFrame | None = None,
                 telemetry: TelemetrySummary | None = None) -> CheckResult:
    """Everything ``gpucost check`` prints, from tables already read. `stated`:
    whether the interval was given by the user (else it came from the data);
    `energy`: pue and carbon_intensity as for allocate (their problems too);
    `per_consumer` and `telemetry`: the allocation by consumer and the
    telemetry's summary when the samples were streamed (not in ``tables``)."""
    out = CheckResult()
    costs = Table(tables.costs, "costs")
    for column in ("resource_id", "start", "end", "cost"):  # before anything reads them: an error, not a KeyError
        costs.column(column)
    out.lines += _source_lines(tables, names or {}, interval, stated, telemetry)
    if per_consumer is None:
        per_consumer = gpucost.allocate(tables.costs, tables.usage, tables.inventory, by=["consumer"],
                                        **check_policy(tables, interval, energy))
    out.report = join_report(per_consumer, tables.costs, tables.usage, caller=caller,
                             downtime=getattr(tables, "downtime", None))
    out.lines += _join_lines(out.report)
    from gpucost.slurm import report_lines  # the Slurm join: jobs with telemetry, assumed, unplaced
    out.lines += report_lines(tables.usage)
    out.lines += _sacct_lines(tables.usage)
    out.lines += _label_lines(per_consumer, tables.workloads)
    out.lines += _energy_lines(per_consumer)
    out.lines.append("problems" if out.report.problems else "problems: none")
    for p in out.report.problems:
        out.lines.append(f"  {'error' if p.error else 'warning'}: {p.message}")
    for p in out.report.notes:  # worth $0.00: reported, never a warning (the exit code ignores them)
        out.lines.append(f"  note: {p.message}")
    return out
