"""The showback report: one self-contained HTML file (inline SVG charts, no
network) a finance reader can open (docs/report.md).

::

    r = gpucost.report(costs, usage, inventory, workloads, path="showback.html")
    r.data["by_team"]        # the numbers shown, exactly as gpucost computed them

(:func:`report` has an example that runs.)

The report calls the library for every number it shows (allocations from
:func:`gpucost.allocate`; idle findings, spot runs, commitments and budgets
from gpucost's analyses where this build has them) and only formats them. A
section whose analysis is not available, or has no input, is left out and
listed at the end; no number is ever made up.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd
from markupsafe import Markup

import gpucost
from gpucost import plot
from gpucost.currency import convert_currency, currencies
from gpucost.errors import InvalidInputError
from gpucost.frames import Table, str_isin
from gpucost.join import JoinReport, apply_rule, called_from_gpucost, join_report
from gpucost.model import Basis, CostDriver, Purchase, Reserved
from gpucost.money import minor_unit, round_half_away, round_parts
from gpucost.spill import UsageChunks

__all__ = ["report", "Report", "Section", "html_table", "analysis"]


@dataclass
class Section:
    """One section of a :class:`Report`: its ``key`` (``showback``,
    ``idle``, ...), ``title``, ``intro`` and ``body`` (HTML fragments:
    tables, figures, notes).

    Examples:
        >>> from gpucost.report import Section
        >>> section = Section("notes", "Notes", "What this month changed.")
        >>> section.body.append("<p>New A100 nodes from the 15th.</p>")
        >>> section
        Section(key='notes', title='Notes', intro='What this month changed.', body=['<p>New A100 nodes from the 15th.</p>'])
    """

    key: str
    title: str
    intro: str = ""
    body: list[str] = field(default_factory=list)  # HTML fragments: tables, figures, notes


@dataclass
class Report:
    """A rendered report: ``html`` (the whole page), ``data`` (every table
    shown, as the library returned it), ``sections`` and ``omitted`` (section
    -> why it is not in the report).

    Examples:
        >>> hours = pd.date_range("2026-03-02", periods=6, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": "i-0aaa", "instance_type": "g5.xlarge", "start": hours,
        ...                       "end": hours + pd.Timedelta("1h"), "cost": 1.006})
        >>> t = pd.date_range("2026-03-02", periods=36, freq="10min", tz="UTC")   # a sample every 10 min
        >>> busy = np.arange(36) < 12                                              # the first 2 hours
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "i-0aaa", "device": 0,
        ...                       "consumer": np.where(busy, "train", ""), "share": 1.0,
        ...                       "util": np.where(busy, 0.9, 0.0), "mem_used": np.where(busy, 20 * 2**30, 0),
        ...                       "duration": 600.0})
        >>> inventory = gpucost.inventory(costs)
        >>> workloads = pd.DataFrame({"consumer": ["train"], "team": ["research"], "project": ["llm"]})
        >>> report = gpucost.report(costs, usage, inventory, workloads, title="March showback")
        >>> report.title, report.path
        ('March showback', None)
        >>> report.save("march.html").name
        'march.html'
        >>> report.html.startswith("<!DOCTYPE html>")
        True
    """

    title: str
    html: str
    data: dict[str, pd.DataFrame]
    sections: list[Section]
    omitted: dict[str, str]
    path: Path | None = None
    join: JoinReport | None = None  # what joined and what did not (gpucost.join_report)

    def save(self, path: str | Path) -> Path:
        from gpucost.demo import atomic_write
        self.path = atomic_write(path, lambda f: f.write(self.html.encode("utf-8")))
        return self.path

    def _repr_html_(self) -> str:
        return str(_fragment("notebook", self.html))


# ---- templates -------------------------------------------------------------------

@functools.cache
def _templates() -> jinja2.Environment:
    """The report's Jinja2 templates (package data: gpucost/templates), every
    value escaped unless it is Markup: gpucost's own HTML (tables, charts)."""
    return jinja2.Environment(loader=jinja2.PackageLoader("gpucost", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _render(template: str, **values: Any) -> Markup:
    return Markup(_templates().get_template(template).render(**values))


def _fragment(macro: str, *args: Any, **kwargs: Any) -> Markup:
    """One macro of fragments.html (a figure, a list, a note), rendered."""
    return Markup(getattr(_templates().get_template("fragments.html").module, macro)(*args, **kwargs))


# ---- formatting ------------------------------------------------------------------

def _fmt_money(v: float, cents: bool = True, decimals: int = 2) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    d = decimals if cents else 0
    v = float(round_half_away(v, d)) + 0.0  # no "$-0.00"
    return f"${v:,.{d}f}"


def _fmt_hours(v: float) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:,.1f}"


def _fmt_pct(v: float) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{100 * v:.1f}%"


def _fmt_value(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and v == ""):
        return "–"
    if isinstance(v, pd.Timestamp):
        return v.strftime("%Y-%m-%d %H:%M") if (v.hour or v.minute) else v.strftime("%Y-%m-%d")
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:,.2f}"
    return plot.display_name(v)


def html_table(frame: pd.DataFrame, *, money: Sequence[str] = (), hours: Sequence[str] = (),
               pct: Sequence[str] = (), names: dict[str, str] | None = None, total: Sequence[str] = (),
               key: str = "", caption: str = "", max_rows: int | None = None, decimals: int = 2,
               total_label: str = "Total") -> str:
    """An HTML table of ``frame``: numbers right-aligned, each numeric cell
    carrying its exact value in ``data-value`` (what the tests compare), a
    total row over ``total`` columns when given (named ``total_label``). Money shows ``decimals``;
    money columns with a total are rounded by largest remainder
    (:func:`gpucost.money.round_parts`), so the rows shown add up to the
    total shown. Rows with nothing in them (every numeric cell zero or
    missing: an ``__unobserved__`` row of $0.00 and 0 GPU-hours) are left
    out, with a note saying how many; the totals are unchanged.

    Examples:
        >>> from gpucost.report import html_table   # gpucost.report is the report function itself
        >>> table = html_table(pd.DataFrame({"team": ["a", "b", "c"], "cost": [10 / 3] * 3}),
        ...                    money=["cost"], total=["cost"], key="showback")
        >>> import re
        >>> re.findall(r">([^<>]+)</td>", table)   # the cells shown: the rows add up to the total
        ['a', '$3.34', 'b', '$3.33', 'c', '$3.33', 'Total', '$10.00']
        >>> re.findall(r'data-value="([^"]+)"', table)[:2]   # the exact values
        ['3.3333333333333335', '3.3333333333333335']
    """
    names = names or {}
    frame, empty = _without_empty_rows(frame)
    booked = {c: round_parts(frame[c].to_numpy(dtype=np.float64), decimals) for c in money
              if c in total and c in frame.columns and _is_num(frame[c])}
    shown = frame if max_rows is None else frame.head(max_rows)
    head = [{"name": names.get(c, c), "num": _is_num(frame[c])} for c in frame.columns]
    rows = [[_cell(c, v, money, hours, pct, decimals, booked[c][i] if c in booked else None)
             for c, v in zip(frame.columns, values)] for i, values in enumerate(shown.itertuples(index=False))]
    foot = []
    if total and len(frame):
        for i, c in enumerate(frame.columns):
            if c in total:
                foot.append(_cell(c, float(frame[c].sum()), money, hours, pct, decimals,
                                  float(booked[c][np.isfinite(booked[c])].sum()) if c in booked else None))
            else:
                foot.append({"col": None, "value": None, "text": total_label if i == 0 else ""})
    return _render("table.html", key=key, caption=caption, head=head, rows=rows, foot=foot, shown=len(shown),
                   rows_in=len(frame), empty=empty)


def _without_empty_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``frame`` less its rows whose every numeric cell is zero or missing
    (placeholders: they add nothing to a total), and how many there were."""
    numeric = [c for c in frame.columns if _is_num(frame[c])]
    if not numeric or frame.empty:
        return frame, 0
    values = frame[numeric].to_numpy(dtype=np.float64, na_value=np.nan)
    empty = np.all((values == 0) | np.isnan(values), axis=1)
    return (frame[~empty].reset_index(drop=True), int(empty.sum())) if empty.any() else (frame, 0)


def _is_num(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def _cell(column: str, v: Any, money, hours, pct, decimals: int = 2, shown: float | None = None) -> dict:
    """One cell for table.html: its text, and its exact value when numeric."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        f = float(v)
        text = (_fmt_money(f if shown is None else shown, decimals=decimals) if column in money else _fmt_hours(f) if column in hours
                else _fmt_pct(f) if column in pct else f"{f:.1f}%" if column.endswith("_pct") and np.isfinite(f) else (f"{int(v):,}" if isinstance(v, (int, np.integer))
                                                       else _fmt_value(f)))
        return {"col": column, "value": repr(f), "text": text}
    text = _fmt_value(v)
    return {"col": column, "value": None, "text": text, "nowrap": len(text) <= 24}


def _figure(fig, caption: str, key: str) -> Markup:
    return _fragment("figure", Markup(plot.to_svg(fig)), caption, key)


def _p(text: str) -> Markup:
    return _fragment("paragraph", text)


# ---- the report -----------------------------------------------------------------

_ANALYSES = {  # section -> the function of the library it needs (other parts of gpucost build them)
    "invoice": "attribute_tagged",
    "idle": "find_idle",
    Purchase.SPOT: "spot_runs",
    "commitments": "commitment_utilization",
    "advice": "advise_commitments",
    "budgets": "budget_status",
    # Energy and hardware you own (docs/energy.md, docs/advisor.md): each from the allocation, when its
    # inputs are there (a component column, power readings, owned lines).
    "components": "allocate",
    "energy": "allocate",
    "idle_energy": "allocate",
    "buy_vs_rent": "buy_vs_rent",
}


def _analysis(name: str) -> Callable | None:
    return getattr(gpucost, name, None)


def report(costs: Any, usage: Any, inventory: Any, workloads: Any = None, *, path: str | Path | None = None,
           title: str = "GPU showback", by: Sequence[str] = ("team", "project"), basis: str = "allocated",
           idle: str = "keep", interval: float = 60, bill: Any = None, budgets: Any = None,
           interruptions: Any = None, rates: Any = None, today: Any = None, currency: str | None = None,
           analyses: Sequence[str] | None = None, exchange_rates: Any = None, strict: bool = False,
           tag: str | Sequence[str] | None = None, shared: Any = None, share_split: str = "weighted",
           existing: Any = None, downtime: Any = None, pue: float | None = None,
           carbon_intensity: Any = None) -> Report:
    """Builds the showback report and writes it to ``path`` when given.

    Args:
        costs, usage, inventory, workloads: the tables of :func:`gpucost.allocate`.
        by: the label columns of the showback: the first is the team (owner)
            key, the second the project key.
        basis, idle, interval: the allocation policy (stated in the report).
        bill: the bill as a reader returns it (commitment columns), for the
            commitments section.
        budgets: monthly budgets (``team, amount, thresholds``) for the
            budgets section.
        interruptions: spot interruption events (a file or a table) for the
            spot section.
        rates: purchase options (``instance_type, kind, hourly, term_years``)
            for the commitment advice.
        existing: the commitments already bought, for the advice (see
            :func:`gpucost.advise_commitments`; default: the bill's own).
        today: "now" for budgets (default: the end of the data).
        pue, carbon_intensity: with ``power_w`` in the usage, facility
            energy and CO2e in the energy section (as for
            :func:`gpucost.allocate`).
        downtime: windows nodes were down (``resource_id, start, end``, as
            for :func:`gpucost.allocate`): their cost on ``__down__`` in
            every table, never idle.
        currency: the currency of every figure (default: the bill's own, from
            its ``currency`` column; USD when it has none).
        exchange_rates: ``currency, date, rate`` to convert a bill in several
            currencies into ``currency`` first (gpucost.convert_currency);
            without it such a bill is refused, never added up.
        strict: turn every join warning into an error.
        analyses: which optional sections to try (default: all of
            ``invoice, idle, spot, commitments, advice, budgets, components,
            energy, idle_energy, buy_vs_rent``).
        tag, shared, share_split: the invoice section: the tag key(s) whose
            values attribute non-GPU lines (storage, networking of a job) to
            a team (:func:`gpucost.attribute_tagged`), and the lines shared
            over the teams (:func:`gpucost.share_costs` selector, split
            ``weighted`` or ``even``). ``costs`` is then the whole bill, its
            non-GPU lines included.

    Returns:
        A :class:`Report`; ``report.data`` holds every table shown.

    Examples:
        A g5.xlarge billed for 6 hours: ``train`` used its GPU for the
        first 2, then nobody held it.

        >>> hours = pd.date_range("2026-03-02", periods=6, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": "i-0aaa", "instance_type": "g5.xlarge", "start": hours,
        ...                       "end": hours + pd.Timedelta("1h"), "cost": 1.006})
        >>> t = pd.date_range("2026-03-02", periods=36, freq="10min", tz="UTC")   # a sample every 10 min
        >>> busy = np.arange(36) < 12                                              # the first 2 hours
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "i-0aaa", "device": 0,
        ...                       "consumer": np.where(busy, "train", ""), "share": 1.0,
        ...                       "util": np.where(busy, 0.9, 0.0), "mem_used": np.where(busy, 20 * 2**30, 0),
        ...                       "duration": 600.0})
        >>> inventory = gpucost.inventory(costs)
        >>> workloads = pd.DataFrame({"consumer": ["train"], "team": ["research"], "project": ["llm"]})
        >>> report = gpucost.report(costs, usage, inventory, workloads, path="showback.html")
        >>> [section.key for section in report.sections]
        ['highlights', 'showback', 'projects', 'efficiency', 'invoice', 'idle', 'method']
        >>> report.data["by_team"][["team", "cost", "idle_cost", "gpu_hours"]]
               team   cost  idle_cost  gpu_hours
        0  __idle__  4.024      4.024        4.0
        1  research  2.012      0.000        2.0
        >>> sorted(str(key) for key in report.omitted)   # sections without their inputs, and why
        ['advice', 'budgets', 'buy_vs_rent', 'commitments', 'components', 'energy', 'idle_energy', 'spot', 'tagging']
        >>> report.omitted["budgets"]
        'no budgets given'
    """
    by = list(by)
    if not by:
        raise InvalidInputError("parameter 'by': give at least one label column (e.g. team)")
    team = by[0]
    costs, currency = _one_currency(costs, currency, exchange_rates)
    policy = dict(basis=basis, idle=idle, interval=interval)
    if downtime is not None:  # nodes down for maintenance: __down__, never idle (docs/semantics.md, 10)
        policy["downtime"] = downtime
    if pue is not None:  # with power in the usage: facility energy and CO2e (docs/semantics.md, 9)
        policy["pue"] = pue
    if carbon_intensity is not None:
        policy["carbon_intensity"] = carbon_intensity
    data: dict[str, pd.DataFrame] = {}
    sections: list[Section] = []
    omitted: dict[str, str] = {}

    by_team = gpucost.allocate(costs, usage, inventory, workloads, by=[team], **policy)
    by_day = gpucost.allocate(costs, usage, inventory, workloads, by=[team, "period"], freq="D", **policy)
    by_group = gpucost.allocate(costs, usage, inventory, workloads, by=by, **policy) if len(by) > 1 else by_team
    data.update(by_team=by_team, by_team_day=by_day, by_group=by_group)
    join = join_report(by_team, costs, usage, workloads=workloads, downtime=downtime)
    if not called_from_gpucost(1):
        apply_rule(join, strict=strict, stacklevel=3)
    data["join"] = join.resources
    # Every group a color, the largest the palette's distinct hues: the charts name only their top groups,
    # and 6,500 pods sharing 12 hues would give named ones the same color (as before with 12 groups or fewer).
    named = by_team[~by_team[team].astype(str).isin(list(plot.RESERVED_LABELS))]
    colors = {**plot.team_colors(by_team[team]), **plot.team_colors(named.nlargest(plot.TOP_GROUPS, "cost")[team])}

    cost_start = pd.to_datetime(costs["start"], utc=True)
    cost_end = pd.to_datetime(costs["end"], utc=True)
    first, last = cost_start.min(), cost_end.max()
    total = float(np.sum(np.asarray(costs["cost"], dtype=np.float64)))
    # GPU time whose utilisation is assumed (Slurm jobs without telemetry) is
    # shown apart and kept out of every utilisation figure (issue 23, item 4).
    assumed_by_team = _assumed_part(costs, usage, inventory, workloads, [team], policy)
    kpi = _kpis(by_team, team, total, assumed_by_team)
    data["kpis"] = pd.DataFrame([kpi])

    # 1. Showback by team
    s = Section("showback", f"Showback by {team}",
                f"Every dollar of the bill, split by the GPU time each {team}'s workloads held "
                f"({_policy_words(basis, idle)}). Idle capacity and costs with no GPU are shown as their own rows, "
                "not spread silently.")
    table = _measured_only(by_team, [team], assumed_by_team)
    table["share_of_bill"] = table["cost"] / total if total else np.nan
    cols = [team, "cost", "share_of_bill", "gpu_hours", "effective_gpu_hours", "utilisation",
            "cost_per_effective_gpu_hour", "assumed_gpu_hours", "utilization_source"]
    if idle == "share":
        cols.insert(2, "idle_cost")
    table = _without_empty_rows(table[cols].sort_values("cost", ascending=False, key=lambda c: c.where(
        ~table[team].isin(list(plot.RESERVED_LABELS)), -1e18 + c)))[0]
    data["showback_table"] = table
    s.body.append(html_table(table, key="showback", money=["cost", "idle_cost", "cost_per_effective_gpu_hour"],
                             decimals=minor_unit(currency),
                             hours=["gpu_hours", "effective_gpu_hours", "assumed_gpu_hours"],
                             pct=["utilisation", "share_of_bill"],
                             total=["cost", "idle_cost", "gpu_hours", "effective_gpu_hours", "assumed_gpu_hours",
                                    "share_of_bill"],
                             names={team: team.capitalize(), "cost": "Cost", "idle_cost": "of which idle share",
                                    "share_of_bill": "Share of bill", "gpu_hours": "GPU-hours held",
                                    "effective_gpu_hours": "Effective GPU-hours (measured)",
                                    "utilisation": "Utilisation (measured)",
                                    "cost_per_effective_gpu_hour": "$ per effective GPU-hour (measured)",
                                    "assumed_gpu_hours": "GPU-hours assumed busy (no telemetry)",
                                    "utilization_source": "Utilisation from"}))
    charted, spread = _spread_by_day(costs, usage, inventory, workloads, team, policy, by_team, by_day)
    if charted is not by_day:
        data["by_team_day_charted"] = charted
    s.body.append(_figure(plot.spend_over_time(charted, team, colors=colors, title=f"Spend by {team} and day"),
                          f"Daily spend by {team}; idle capacity and non-GPU costs on top.{spread}",
                          "spend_over_time"))
    s.body.append(_figure(plot.allocated_vs_idle(charted, team), f"What each day's bill paid for.{spread}",
                          "allocated_vs_idle"))
    sections.append(s)

    # 2. Projects
    if len(by) > 1:
        s = Section("projects", f"Spend by {' and '.join(by[1:])}",
                    f"The same allocation grouped by {', '.join(by)}.")
        assumed_by_group = _assumed_part(costs, usage, inventory, workloads, by, policy)
        grouped = _measured_only(by_group, by, assumed_by_group)[
            [*by, "cost", "gpu_hours", "effective_gpu_hours", "cost_per_effective_gpu_hour", "assumed_gpu_hours",
             "utilization_source"]]
        grouped = _without_empty_rows(grouped.sort_values("cost", ascending=False, ignore_index=True))[0]
        data["projects_table"] = grouped
        s.body.append(_figure(plot.spend_by_group(grouped, by, colors=colors, title=f"Top {min(15, len(grouped))} "
                                                  f"{by[1]}s by spend"), f"Largest {by[1]}s.", "spend_by_group"))
        s.body.append(html_table(grouped, key="projects", money=["cost", "cost_per_effective_gpu_hour"],
                                 decimals=minor_unit(currency),
                                 hours=["gpu_hours", "effective_gpu_hours", "assumed_gpu_hours"],
                                 total=["cost", "gpu_hours", "effective_gpu_hours", "assumed_gpu_hours"],
                                 names={"cost": "Cost", "gpu_hours": "GPU-hours held",
                                        "effective_gpu_hours": "Effective GPU-hours (measured)",
                                        "cost_per_effective_gpu_hour": "$ per effective GPU-hour (measured)",
                                        "assumed_gpu_hours": "GPU-hours assumed busy (no telemetry)",
                                        "utilization_source": "Utilisation from"}))
        sections.append(s)

    # 3. Efficiency
    s = Section("efficiency", "Cost per effective GPU-hour",
                "What one fully busy GPU-hour cost each team: its cost divided by GPU-hours held times "
                "utilisation. A team holding GPUs it barely uses pays several times the list price per useful "
                "hour." + (f" Measured time only: {kpi['assumed_gpu_hours']:,.1f} GPU-hours of jobs without "
                           "telemetry (assumed busy) are left out of both charts." if kpi["assumed_gpu_hours"] else ""))
    s.body.append(_figure(plot.cost_per_effective_gpu_hour(table, team, colors=colors,
                                                           title="Cost per effective GPU-hour (measured)"),
                          f"Cost per effective GPU-hour by {team}, measured time only.",
                          "cost_per_effective_gpu_hour"))
    s.body.append(_figure(plot.utilisation_distribution(_measured_usage(usage, workloads), workloads, team,
                                                        interval=interval, colors=colors,
                                                        title="GPU-hours held, by measured utilisation"),
                          "GPU-hours held at each measured utilisation level (free GPUs and jobs without "
                          "telemetry excluded).", "utilisation_distribution"))
    sections.append(s)

    # 4. Tagging gaps
    gap = _tagging_gaps(costs, usage, inventory, workloads, by, policy)
    if gap is not None and len(gap):
        data["tagging_gaps"] = gap
        gap_total = float(gap["cost"].sum())
        s = Section("tagging", "Tagging gaps",
                    f"{_fmt_money(gap_total)} ({_fmt_pct(gap_total / total if total else np.nan)} of the bill) was "
                    f"spent by workloads missing a {' or '.join(by)} label. Fixing these labels is the first "
                    "step to a complete showback.")
        s.body.append(html_table(gap, key="tagging", money=["cost"], hours=["gpu_hours"], total=["cost", "gpu_hours"],
                                 decimals=minor_unit(currency),
                                 max_rows=12, names={"consumer": "Workload", "cost": "Cost",
                                                     "gpu_hours": "GPU-hours held"}))
        sections.append(s)
    else:
        omitted["tagging"] = "no workloads table" if gap is None else f"every workload has a {' and '.join(by)} label"

    sections.insert(0, _highlights(kpi, table, team, total, data.get("tagging_gaps"), by, currency))
    if join.problems:  # what did not line up comes first, before any number is read
        sections.insert(0, _join_section(join, key="join"))

    # 5-9. Sections from gpucost's analyses, when this build has them.
    wanted = list(analyses) if analyses is not None else list(_ANALYSES)
    context = dict(costs=costs, usage=usage, inventory=inventory, workloads=workloads, bill=bill, budgets=budgets,
                   interruptions=interruptions, rates=rates, existing=existing, today=today, by=by, policy=policy, by_team=by_team,
                   by_day=by_day, colors=colors, tag=tag, shared=shared, share_split=share_split, total=total)
    for key in wanted:
        if key not in _ANALYSES:
            raise InvalidInputError(f"parameter 'analyses': unknown section {key!r} "
                                    f"(one of {', '.join(_ANALYSES)})")
        function = _analysis(_ANALYSES[key])
        if function is None:
            omitted[key] = f"gpucost.{_ANALYSES[key]} is not in this build"
            continue
        built = _OPTIONAL[key](function, context)
        if isinstance(built, str):
            omitted[key] = built
            continue
        section, frames = built
        data.update(frames)
        sections.append(section)

    # Method and reconciliation
    d = by_team.attrs.get("diagnostics", {})
    s = Section("method", "Method and reconciliation")
    allocated = float(by_team["cost"].sum())
    s.body.append(_p(f"Bill total {_fmt_money(total)}; allocated total {_fmt_money(allocated)} "
                     f"(difference {_fmt_money(round(allocated - total, 2) + 0.0)}): every dollar is accounted for."))
    s.body.append(_p(f"Policy: {_policy_words(basis, idle)}; samples stand for {interval:g} s unless they carry a "
                     "duration. Each cost line is prorated over the GPU time its workloads held in its own period "
                     "(docs/semantics.md)."))
    # Counts only: the interval (seconds, or None with durations) is said above.
    diag = pd.DataFrame([{"what": k.replace("_", " "), "count": int(v)} for k, v in d.items() if k != "interval"])
    if len(diag):
        s.body.append(html_table(diag, key="diagnostics", names={"what": "Diagnostic", "count": "Count"}))
    if not join.problems:
        s.body.extend(_join_section(join, key="join_ok").body)
    if omitted:
        s.body.append(_fragment("omitted", {f"{k}": v for k, v in omitted.items()}))
    sections.append(s)

    page = _page(title, first, last, kpi, sections, currency)
    result = Report(title=title, html=page, data=data, sections=sections, omitted=omitted, join=join)
    if path is not None:
        result.save(path)
    return result


def _spread_by_day(costs, usage, inventory, workloads, team: str, policy: dict, by_team: pd.DataFrame,
                   by_day: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The daily allocation the charts draw, and what their caption says of
    it. A line counts wholly on the day it starts (docs/semantics.md), so a
    month's support, tax, credit or commitment-fee line would make its 1st a
    spike: lines longer than a day are cut at UTC midnights, their money
    spread in proportion to time, each day's part allocated on that day."""
    from gpucost.analyses.budget import cut_at_days  # noqa: PLC0415 (as the budgets section imports it)
    cut, long_lines = cut_at_days(costs)
    if not long_lines.any():
        return by_day, ""
    charted = gpucost.allocate(cut, usage, inventory, workloads, by=[team, "period"], freq="D", **policy)
    dollars = float(np.asarray(costs["cost"], dtype=np.float64)[long_lines].sum())
    words = (f" {int(long_lines.sum()):,} lines longer than a day ({_fmt_money(dollars)}: such as monthly support, "
             "tax, credits, commitment fees) are spread over their days in proportion to time, not put on the day "
             "they start.")
    # A GPU line longer than a day is prorated over each day's holders here, over its whole period in the tables.
    charted_by_team = charted.groupby(team, sort=False)["cost"].sum()
    gap = float(charted_by_team.sub(by_team.set_index(team)["cost"], fill_value=0.0).abs().max())
    if gap >= 0.005:
        words += (f" GPU lines among them are prorated over each day's use, so a {team}'s bars add up to within "
                  f"{_fmt_money(gap)} of its showback row (which prorates each line over its whole period).")
    return charted, words


def _one_currency(costs: Any, currency: str | None, exchange_rates: Any) -> tuple[Any, str]:
    """The bill in one currency (converted with the user's rates when given) and
    that currency; a bill in several currencies without rates is refused."""
    found = currencies(costs)
    if exchange_rates is not None:
        target = currency or (found[0] if len(found) == 1 else "USD")
        return convert_currency(costs, exchange_rates, to=target), target
    if len(found) > 1:
        raise InvalidInputError(f"costs: the bill has amounts in {' and '.join(found)}; gpucost never adds two "
                                "currencies: pass exchange_rates= (currency, date, rate) to convert them into one, "
                                "or report each currency apart")
    if found and currency and currency.upper() != found[0]:
        raise InvalidInputError(f"parameter 'currency': the bill is in {found[0]}, not {currency}")
    return costs, found[0] if found else (currency or "USD")


def _join_section(join: JoinReport, key: str) -> Section:
    """What joined and what did not: the problems, then money per currency."""
    s = Section(key, "What did not line up" if join.problems else "Join",
                "Bill lines and telemetry that did not meet change the numbers below; each item says by how much "
                "and how to fix it (docs/semantics.md)." if join.problems else
                "Every billed GPU line met telemetry and every sample met a bill line.")
    if join.problems:
        s.body.append(_fragment("problems", join.problems))
    summary = join.summary()
    if len(summary):
        s.body.append(html_table(summary, key="join_summary", money=["cost", "cost_observed", "cost_unobserved",
                                                                     "cost_unattributed"],
                                 hours=["billed_gpu_hours", "unjoined_gpu_hours"],
                                 names={"currency": "Currency", "cost": "Billed", "cost_observed": "With telemetry",
                                        "cost_unobserved": "Without telemetry", "cost_unattributed": "Not on a GPU",
                                        "billed_gpu_hours": "Billed GPU-hours",
                                        "unjoined_gpu_hours": "Telemetry GPU-hours not billed"}))
    return s


def _highlights(kpi: dict, table: pd.DataFrame, team: str, total: float, gaps: pd.DataFrame | None,
                by: Sequence[str], currency: str = "USD") -> Section:
    """The few sentences a finance reader reads first, from the numbers below
    (Markup.format escapes what it is given: only the <strong> is ours)."""
    items: list[Any] = []
    if kpi["gpu_spend"]:
        items.append(Markup("<strong>{}</strong> of GPU spend ({}) paid for GPU capacity no workload held.").format(
            _fmt_pct(kpi["idle_share"]), _fmt_money(kpi["idle"], False)))
    teams = table[~table[team].isin(list(plot.RESERVED_LABELS))]
    if len(teams):
        top = teams.iloc[0]
        items.append(Markup("The largest {}, <strong>{}</strong>, cost {} ({} of the bill); {}").format(
            team, str(top[team]), _fmt_money(top["cost"], False), _fmt_pct(top["share_of_bill"]), _busy_words(top)))
        material = teams[(teams["cost"] >= 0.01 * total) & np.isfinite(teams["cost_per_effective_gpu_hour"])]
        if len(material) > 1:
            worst = material.loc[material["cost_per_effective_gpu_hour"].idxmax()]
            best = material.loc[material["cost_per_effective_gpu_hour"].idxmin()]
            items.append(f"Cost per effective GPU-hour ranges from {_fmt_money(best['cost_per_effective_gpu_hour'])} "
                         f"({best[team]}) to {_fmt_money(worst['cost_per_effective_gpu_hour'])} "
                         f"({worst[team]}) among {team}s with at least 1% of the bill.")
    if gaps is not None and len(gaps):
        gap = float(gaps["cost"].sum())
        items.append(f"{_fmt_money(gap, False)} ({_fmt_pct(gap / total if total else np.nan)} of the bill) went to "
                     f"{len(gaps)} workloads missing a {' or '.join(by)} label.")
    if kpi["unattributed"]:
        items.append(f"{_fmt_money(kpi['unattributed'], False)} of the bill is not on a GPU (storage, networking, "
                     "unused commitments).")
    if kpi["assumed_gpu_hours"]:
        items.append(Markup("{} GPU-hours ({}) were held by jobs without telemetry (Slurm accounting): their "
                            "utilisation is <strong>assumed</strong>, not measured, so they are shown apart and left "
                            "out of every utilisation and cost per effective GPU-hour figure.").format(
            f"{kpi['assumed_gpu_hours']:,.1f}", _fmt_money(kpi["assumed_cost"], False)))
    if kpi["unobserved"]:
        items.append(f"{_fmt_money(kpi['unobserved'], False)} of GPU spend had no telemetry: neither used nor idle, "
                     "it is left out of utilisation and idle figures.")
    items.append(f"All amounts in {currency}.")
    s = Section("highlights", "Highlights")
    s.body.append(_fragment("items", items, "highlights"))
    return s


def _policy_words(basis: str, idle: str) -> str:
    b = {"allocated": "by GPU time held", "used": "by GPU time held times utilisation",
         "blended": "by GPU time and memory held"}.get(basis, basis)
    i = {"keep": "idle capacity kept on its own row", "share": "idle capacity shared over each line's users"}.get(
        idle, idle)
    return f"{b}, {i}"


def _busy_words(row: pd.Series) -> str:
    """How busy a team's GPUs were, saying what was measured."""
    if row["utilization_source"] == "assumed":
        return (f"its utilisation was not measured ({row['assumed_gpu_hours']:,.1f} GPU-hours of jobs without "
                "telemetry, assumed busy).")
    words = (f"its GPUs were busy {_fmt_pct(row['utilisation'])} of the measured time they were held, "
             f"{_fmt_money(row['cost_per_effective_gpu_hour'])} per effective GPU-hour")
    if row["utilization_source"] == "mixed":
        words += (f" ({row['assumed_gpu_hours']:,.1f} GPU-hours of jobs without telemetry, assumed busy, "
                  "are left out)")
    return words + "."


def _assumed_part(costs, usage, inventory, workloads, keys: list[str], policy: dict) -> pd.DataFrame | None:
    """The allocation of workloads whose utilisation is assumed
    (``utilization_source="assumed"``, as read_slurm_sacct marks them), summed
    by ``keys``; None when the workloads carry no such label."""
    if workloads is None or "utilization_source" in keys or not Table(workloads, "workloads").has(
            "utilization_source"):
        return None
    split = gpucost.allocate(costs, usage, inventory, workloads, by=[*keys, "utilization_source"], **policy)
    part = split[split["utilization_source"].astype(str).to_numpy() == "assumed"]
    return part.groupby(keys, sort=False, dropna=False)[["gpu_hours", "effective_gpu_hours", "cost"]].sum()


def _measured_only(allocation: pd.DataFrame, keys: list[str], assumed: pd.DataFrame | None) -> pd.DataFrame:
    """The allocation with utilisation figures from measured time only:
    ``effective_gpu_hours``, ``utilisation`` and ``cost_per_effective_gpu_hour``
    leave out the assumed part, which is ``assumed_gpu_hours``;
    ``utilization_source`` says measured, assumed or mixed."""
    out = allocation.copy()
    zero = np.zeros(len(out))
    a_gh, a_eff, a_cost = zero, zero, zero
    if assumed is not None and len(assumed):
        index = pd.MultiIndex.from_frame(out[keys]) if len(keys) > 1 else pd.Index(out[keys[0]])
        part = assumed.reindex(index, fill_value=0.0)
        a_gh, a_eff, a_cost = (part[c].to_numpy(dtype=np.float64) for c in ("gpu_hours", "effective_gpu_hours",
                                                                             "cost"))
    held = out["gpu_hours"].to_numpy(dtype=np.float64) - a_gh
    effective = out["effective_gpu_hours"].to_numpy(dtype=np.float64) - a_eff
    cost = out["cost"].to_numpy(dtype=np.float64) - a_cost
    out["effective_gpu_hours"] = effective
    with np.errstate(divide="ignore", invalid="ignore"):
        out["utilisation"] = np.where(held > 1e-12, effective / np.where(held > 1e-12, held, 1.0), np.nan)
        out["cost_per_effective_gpu_hour"] = np.where(effective > 1e-12, cost / np.where(
            effective > 1e-12, effective, 1.0), np.nan)
    out["assumed_gpu_hours"] = a_gh
    out["utilization_source"] = np.where(a_gh <= 1e-12, "measured", np.where(held <= 1e-12, "assumed", "mixed"))
    return out


def _measured_usage(usage: Any, workloads: Any) -> Any:
    """Usage samples of workloads whose utilisation is measured."""
    if workloads is None or not isinstance(usage, pd.DataFrame | UsageChunks) or "utilization_source" not in getattr(
            workloads, "columns", ()):
        return usage
    assumed = set(workloads.loc[workloads["utilization_source"].astype(str) == "assumed", "consumer"].astype(str))
    if isinstance(usage, UsageChunks):  # each chunk as it is read
        return usage.map(lambda chunk: chunk[~str_isin(chunk["consumer"], assumed)])
    return usage[~str_isin(usage["consumer"], assumed)]


def _kpis(by_team: pd.DataFrame, team: str, total: float, assumed: pd.DataFrame | None = None) -> dict:
    rows = by_team.set_index(team)
    idle = float(rows["cost"].get("__idle__", 0.0))
    unattributed = float(rows["cost"].get("__unattributed__", 0.0))
    unobserved = float(rows["cost"].get("__unobserved__", 0.0))
    gpu_spend = total - unattributed
    measured_spend = gpu_spend - unobserved  # idle and utilisation are measured where telemetry was
    a_gh, a_eff, a_cost = ((float(assumed[c].sum()) for c in ("gpu_hours", "effective_gpu_hours", "cost"))
                           if assumed is not None else (0.0, 0.0, 0.0))
    effective = float(by_team["effective_gpu_hours"].sum()) - a_eff
    measured = ~by_team[team].isin(["__unobserved__", "__unattributed__"])
    capacity = float(by_team.loc[measured, "gpu_hours"].sum()) - a_gh
    return {"assumed_gpu_hours": a_gh, "assumed_cost": a_cost, "total": total, "allocated": total - idle - unattributed - unobserved, "idle": idle,
            "unattributed": unattributed, "unobserved": unobserved,
            "gpu_spend": gpu_spend, "idle_share": idle / measured_spend if measured_spend else np.nan,
            "utilisation": effective / capacity if capacity else np.nan,
            "cost_per_effective_gpu_hour": (gpu_spend - a_cost) / effective if effective else np.nan,
            "effective_gpu_hours": effective, "gpu_hours": capacity}


def _tagging_gaps(costs, usage, inventory, workloads, by, policy) -> pd.DataFrame | None:
    if workloads is None:
        return None
    per = gpucost.allocate(costs, usage, inventory, workloads, by=["consumer", *by], **policy)
    missing = np.zeros(len(per), dtype=bool)
    for label in by:
        missing |= per[label].eq("__unlabelled__").to_numpy()
    gap = per.loc[missing & ~per["consumer"].isin(["__idle__", "__unattributed__"]).to_numpy(),
                  ["consumer", *by, "cost", "gpu_hours"]]
    return gap.sort_values("cost", ascending=False, ignore_index=True)


# ---- optional sections (functions of other parts of gpucost) ------------------------

def _table_of(result: Any, attribute: str) -> Any:
    """The table an analysis returned (a DataFrame, or its ``attribute``)."""
    return result if isinstance(result, pd.DataFrame) else getattr(result, attribute, result)


def _pick(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The columns a reader needs, in that order, when the result has them."""
    if not isinstance(frame, pd.DataFrame):
        return frame
    chosen = [c for c in columns if c in frame.columns]
    return frame[chosen] if chosen else frame


def _section_idle(find_idle, ctx) -> tuple[Section, dict] | str:
    result = find_idle(ctx["usage"], ctx["costs"], ctx["inventory"], ctx["workloads"],
                       interval=ctx["policy"].get("interval", 60), downtime=ctx["policy"].get("downtime"))
    findings = _table_of(result, "findings")
    if isinstance(findings, pd.DataFrame) and "dollars_wasted" in findings.columns:
        findings = findings.sort_values("dollars_wasted", ascending=False, ignore_index=True)
    saved = isinstance(findings, pd.DataFrame) and "dollars_power_saved" in findings.columns and bool(
        findings["dollars_power_saved"].to_numpy().any())  # hardware you own, powered down
    shown = _pick(findings, ["resource_id", "devices", "start", "end", "hours", "consumer", ctx["by"][0], "action",
                             "mean_util", "dollars_wasted", *(["dollars_power_saved"] if saved else [])])
    built = _generic_section("idle", "Idle GPUs", "Spans where billed GPUs stayed below 5% utilisation for at least "
                             "2 hours, with what they cost and what to do (gpucost.find_idle; hardware you own is "
                             "powered down, consolidated or lent, never terminated). The total is over every span "
                             "found.", shown, "idle_findings", full=findings,
                             total=["hours", "gpu_hours", "dollars_wasted", "dollars_power_saved"])
    if isinstance(built, str) or ctx.get("by_team") is None:
        return built
    section, frames = built
    section.intro += (" Its total is not the headline's idle GPU capacity (GPU time no workload held): it adds the "
                      "GPUs workloads held but left idle and leaves out short free stretches")
    if not {"consumer", "dollars_wasted"} <= set(findings.columns):  # who held each span is needed to bridge them
        section.intro += "."
        return built
    section.intro += "; the table below reconciles the two."
    reconciled = _idle_reconciliation(findings, ctx["by_team"], ctx["by"][0], ctx["policy"].get("idle", "keep"))
    section.body.insert(0, html_table(reconciled, key="idle_reconciliation", money=["amount"], total=["amount"],
                                      names={"part": "From the headline to the idle spans", "amount": "Amount"},
                                      total_label="The idle spans below (their Wasted $ total)"))
    return section, {**frames, "idle_reconciliation": reconciled}


def _idle_reconciliation(findings: pd.DataFrame, by_team: pd.DataFrame, team: str, idle: str) -> pd.DataFrame:
    """The headline's idle GPU capacity (the allocation's ``__idle__`` row)
    and the idle spans' total (find_idle), bridged: the rows add up to the
    spans' total. Spans nobody held are free time the headline counts too;
    spans a workload held are in that workload's cost instead."""
    headline = float(by_team.loc[by_team[team].astype(str) == Reserved.IDLE, "cost"].sum())
    wasted = findings["dollars_wasted"].to_numpy(dtype=np.float64)
    held = findings["consumer"].astype(object).fillna("").astype(str).to_numpy() != ""
    unheld = float(wasted[~held].sum())
    rest = unheld - headline
    rest = 0.0 if abs(rest) < 1e-9 * max(1.0, abs(headline)) else rest  # the same money summed two ways
    free = ("Free GPU time that is not in a span nobody held (free for under 2 hours at a time, or within a "
            "span a workload held part of): in the headline, not in the spans")
    if idle == "share":
        free = ("Free GPU time in spans nobody held, less the lines nobody used: with idle='share' the headline is "
                "only those lines, the rest of the free time is in its holders' cost")
    return pd.DataFrame({"part": ["Idle GPU capacity (the headline: billed GPU time no workload held)", free,
                                  "Spans a workload held at under 5% utilisation: in its holders' cost, not in the "
                                  "headline"],
                         "amount": [headline, rest, float(wasted[held].sum())]})


def _section_spot(spot_runs, ctx) -> tuple[Section, dict] | str:
    if ctx["workloads"] is None:
        return "no workloads table: spot runs group attempts by its 'job' label"
    if "job" not in getattr(ctx["workloads"], "columns", ()):
        labels = [str(c) for c in ctx["workloads"].columns if c != "consumer"]
        return ("no 'job' label in the workloads table (spot runs group attempts by it; labels there: "
                f"{', '.join(labels) or 'none'}): map your job label to 'job' ([labels] job = ...)")
    events = ctx["interruptions"]
    reader = getattr(gpucost, "spot_interruptions", None)
    if events is not None and reader is not None and not isinstance(events, pd.DataFrame):
        events = reader(events)
    workloads = ctx["workloads"]
    allocation = gpucost.allocate(ctx["costs"], ctx["usage"], ctx["inventory"], workloads,
                                  by=["consumer", "resource_id"], **ctx["policy"])
    if "pricing" in ctx["costs"].columns:  # the jobs that ran on spot instances, not every multi-pod job
        spot = set(ctx["costs"].loc[np.asarray(ctx["costs"]["pricing"] == Purchase.SPOT), "resource_id"].astype(str))
        if not spot:
            return "no spot lines in the bill"
        on_spot = set(allocation.loc[allocation["resource_id"].isin(spot), "consumer"])
        usage = ctx["usage"]
        held = usage.of_resources(spot) if isinstance(usage, UsageChunks) else usage.loc[
            np.asarray(usage["resource_id"].astype(str).isin(spot))]
        on_spot |= set(held["consumer"].astype(str))
        jobs = set(workloads.loc[workloads["consumer"].isin(on_spot), "job"].dropna())
        workloads = workloads[workloads["job"].isin(jobs)]
        allocation = allocation[allocation["consumer"].isin(set(workloads["consumer"]))]
    try:
        runs = spot_runs(allocation, workloads, events, costs=ctx["costs"], usage=ctx["usage"],
                         inventory=ctx["inventory"])
    except TypeError:  # an analysis without the optional tables
        runs = spot_runs(allocation, workloads, events)
    jobs = _table_of(runs, "jobs")
    if isinstance(jobs, pd.DataFrame) and "attempts" in jobs.columns:
        jobs = jobs[jobs["attempts"] > 0]
    shown = _pick(jobs, ["job", ctx["by"][0], "attempts", "interrupted_attempts", "cost", "wasted_cost", "waste_pct",
                         "spot_savings", "cost_per_completed_run"])
    return _generic_section(Purchase.SPOT, "Spot training runs", "Every attempt of each spot job, interrupted ones "
                            "included: what a completed run really cost (gpucost.spot_runs).", shown, "spot_runs",
                            full=jobs, total=["cost", "wasted_cost", "spot_savings"])


def _section_commitments(commitment_utilization, ctx) -> tuple[Section, dict] | str:
    if ctx["bill"] is None:
        return "no bill with commitment columns given"
    used = commitment_utilization(ctx["bill"], freq="MS")
    shown = _pick(used, ["commitment_id", *(["period"] if used["period"].nunique() > 1 else []), "purchased", "used",
                         "unused", "utilization", "on_demand_equivalent", "savings"])
    return _generic_section("commitments", "Commitments: utilisation", "How much of the reserved instances and "
                            "savings plans bought was used, and what they saved (gpucost.commitment_utilization).",
                            shown, "commitment_utilization", full=used, pct=["utilization"],
                            total=["purchased", "used", "unused", "on_demand_equivalent", "savings"])


def _section_advice(advise_commitments, ctx) -> tuple[Section, dict] | str:
    if ctx["rates"] is None:
        return "no rates table (purchase options) given"
    if "instance_type" not in getattr(ctx["rates"], "columns", ("instance_type",)):
        return "the rates table has no instance_type column (purchase options per instance type)"
    advice = advise_commitments(ctx["costs"], ctx["usage"], ctx["inventory"], ctx["workloads"], rates=ctx["rates"],
                                interval=ctx["policy"].get("interval", 60), existing=ctx.get("existing"))
    advice = _table_of(advice, "advice")
    shown = _pick(advice, ["instance_type", "class", "action", "option", "existing_coverage", "monthly_if_unchanged",
                           "monthly_recommended", "savings_vs_today", "break_even_utilization",
                           "expected_utilization"])
    if isinstance(shown, pd.DataFrame) and "recommended" in advice.columns and "savings_vs_today" in shown.columns:
        # The total saving adds up only the changes recommended (never a loss).
        shown = shown.assign(savings_vs_today=shown["savings_vs_today"].where(
            advice["recommended"].to_numpy(bool), 0.0))
    built = _generic_section("advice", "Commitments: advice", "What to buy for each instance type and workload "
                            "class, net of the commitments already bought, and why: only changes that save money "
                            "against today are recommended, in the unit they are sold in (whole instances, or $ "
                            "an hour for savings plans); training is never advised capacity sized to its peaks "
                            "(gpucost.advise_commitments).", shown, "commitment_advice", full=advice,
                            pct=["break_even_utilization", "expected_utilization", "existing_coverage"],
                            total=["monthly_if_unchanged", "monthly_recommended", "savings_vs_today"])
    if not isinstance(built, str) and isinstance(advice, pd.DataFrame) and "reason" in advice.columns:
        built[0].body.append(_fragment("items", [str(r) for r in advice["reason"]], "reasons"))
    return built


def _section_budgets(budget_status, ctx) -> tuple[Section, dict] | str:
    if ctx["budgets"] is None:
        return "no budgets given"
    today = ctx["today"]
    if today is None:
        today = (pd.to_datetime(ctx["costs"]["start"], utc=True).max()).normalize()
    from gpucost.analyses.budget import spread_over_days  # noqa: PLC0415
    by_day = ctx["by_day"]
    spread = spread_over_days(ctx["costs"])  # a bill coarser than daily: its days, with a warning
    if spread is not ctx["costs"]:
        by_day = gpucost.allocate(spread, ctx["usage"], ctx["inventory"], ctx["workloads"],
                                  by=[ctx["by"][0], "period"], freq="D", **ctx["policy"])
    status = budget_status(by_day, ctx["budgets"], today)
    shown = _pick(status, ["value", "amount", "month_to_date", "mtd_share", "forecast", "forecast_low",
                           "forecast_high", "crossed", "forecast_crossed", "status"])
    return _generic_section("budgets", "Budgets and forecast", f"Month to date on {pd.Timestamp(today):%b %d} and the "
                            "forecast to month end against each budget (gpucost.budget_status).", shown,
                            "budget_status", full=status, pct=["mtd_share"])


_HEADERS = {"resource_id": "Resource", "dollars_wasted": "Wasted $", "list_dollars_wasted": "Wasted $ (list)",
            "mean_util": "Mean utilisation", "consumer": "Held by", "waste_pct": "Waste", "commitment_id": "Commitment",
            "on_demand_equivalent": "On-demand equivalent", "spot_savings": "Spot savings",
            "cost_per_completed_run": "$ per completed run", "interrupted_attempts": "Interrupted",
            "month_to_date": "Month to date", "mtd_share": "Of budget", "value": "Budget for", "forecast_low": "Forecast (low)", "forecast_high": "Forecast (high)",
            "forecast_crossed": "Forecast to cross", "crossed": "Crossed", "utilization": "Utilisation",
            "monthly_today": "Monthly today", "monthly_recommended": "Monthly if bought",
            "savings_vs_today": "Saving / month", "break_even_utilization": "Break-even use",
            "expected_utilization": "Expected use", "instance_type": "Instance type", "option": "Buy",
            "monthly_if_unchanged": "Monthly if unchanged", "action": "Action", "existing_coverage": "Already covered",
            "dollars_power_saved": "Power $ saved"}


def _header(column: str) -> str:
    return _HEADERS.get(column, column.replace("_", " ").capitalize())


def _generic_section(key: str, title: str, intro: str, frame: Any, data_key: str, *, full: Any = None,
                     pct: Sequence[str] = (), total: Sequence[str] = ()) -> tuple[Section, dict] | str:
    if not isinstance(frame, pd.DataFrame):
        return f"{title}: the analysis returned {type(frame).__name__}, not a table"
    if frame.empty:
        return f"{title}: nothing found"
    pct = [*pct, *[c for c in frame.columns if c in ("mean_util", "utilization", "coverage", "observed_share")]]
    money = [c for c in frame.columns if _is_num(frame[c]) and c not in pct and any(
        w in c for w in ("cost", "dollar", "saving", "waste", "amount", "spend", "forecast", "purchased", "used",
                         "equivalent", "month_to_date", "per_completed", "monthly")) and not c.endswith(
                             ("_pct", "_share"))]
    hours = [c for c in frame.columns if _is_num(frame[c]) and c.endswith("hours")]
    s = Section(key, title, intro)
    s.body.append(html_table(frame, key=key, money=money, hours=hours, pct=pct, max_rows=20, total=total,
                             names={c: _header(c) for c in frame.columns}))
    return s, {data_key: full if full is not None else frame}


def analysis(key: str, costs: Any, usage: Any, inventory: Any, workloads: Any = None, *, bill: Any = None,
             budgets: Any = None, interruptions: Any = None, rates: Any = None, today: Any = None,
             by: Sequence[str] = ("team", "project"), existing: Any = None, **policy: Any) -> pd.DataFrame:
    """The full table behind one of the report's analysis sections (``idle``,
    ``spot``, ``commitments``, ``advice``, ``budgets``, ``components``,
    ``energy``, ``idle_energy``, ``buy_vs_rent``), as the ``gpucost``
    command prints it. Raises :class:`gpucost.Error` when this build lacks the
    analysis, :class:`gpucost.InvalidInputError` when an input it needs is
    missing.

    Examples:
        A g5.xlarge billed for 6 hours: ``train`` used its GPU for the
        first 2, then nobody held it.

        >>> hours = pd.date_range("2026-03-02", periods=6, freq="h", tz="UTC")
        >>> costs = pd.DataFrame({"resource_id": "i-0aaa", "instance_type": "g5.xlarge", "start": hours,
        ...                       "end": hours + pd.Timedelta("1h"), "cost": 1.006})
        >>> t = pd.date_range("2026-03-02", periods=36, freq="10min", tz="UTC")   # a sample every 10 min
        >>> busy = np.arange(36) < 12                                              # the first 2 hours
        >>> usage = pd.DataFrame({"timestamp": t, "resource_id": "i-0aaa", "device": 0,
        ...                       "consumer": np.where(busy, "train", ""), "share": 1.0,
        ...                       "util": np.where(busy, 0.9, 0.0), "mem_used": np.where(busy, 20 * 2**30, 0),
        ...                       "duration": 600.0})
        >>> inventory = gpucost.inventory(costs)
        >>> workloads = pd.DataFrame({"consumer": ["train"], "team": ["research"], "project": ["llm"]})
        >>> from gpucost.report import analysis
        >>> idle = analysis("idle", costs, usage, inventory, workloads)
        >>> idle[["resource_id", "start", "hours", "action", "dollars_wasted"]]
          resource_id                     start  hours     action  dollars_wasted
        0      i-0aaa 2026-03-02 02:00:00+00:00    4.0  terminate           4.024
        >>> analysis("budgets", costs, usage, inventory, workloads)
        Traceback (most recent call last):
            ...
        gpucost.errors.InvalidInputError: gpucost.budget_status: no budgets given
    """
    if key not in _ANALYSES:
        raise InvalidInputError(f"unknown analysis {key!r} (one of {', '.join(_ANALYSES)})")
    function = _analysis(_ANALYSES[key])
    if function is None:
        raise gpucost.Error(f"this build of gpucost has no gpucost.{_ANALYSES[key]} (an analysis not merged yet)")
    by = list(by)
    policy = {k: v for k, v in policy.items() if v is not None}
    by_day = gpucost.allocate(costs, usage, inventory, workloads, by=[by[0], "period"], freq="D", **policy) \
        if key == "budgets" else None
    by_team = gpucost.allocate(costs, usage, inventory, workloads, by=[by[0]], **policy) \
        if key in ("invoice", "energy", "idle_energy") else None
    ctx = dict(costs=costs, usage=usage, inventory=inventory, workloads=workloads, bill=bill, budgets=budgets,
               interruptions=interruptions, rates=rates, today=today, by=by, policy=policy, by_day=by_day,
               existing=existing, by_team=by_team)
    built = _OPTIONAL[key](function, ctx)
    if isinstance(built, str):
        raise InvalidInputError(f"gpucost.{_ANALYSES[key]}: {built}")
    _, frames = built
    return next(iter(frames.values()))


_SPECIAL_ROWS = (Reserved.IDLE, Reserved.UNATTRIBUTED, Reserved.UNOBSERVED, Reserved.DOWN)


def invoice_reconciliation(by_team: pd.DataFrame, costs: Any, inventory: Any, team: str, *,
                           tag: str | Sequence[str] | None = None, shared: Any = None,
                           split: str = "weighted") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bill split into what each part of gpucost did with it, and the
    by-team table with tagged and shared costs as columns. The parts add up
    to the bill total: GPU lines allocated to teams, idle GPU capacity,
    tagged lines attributed, shared costs distributed, unattributed, and
    (when the allocation has one) unobserved."""
    final = by_team
    if tag is not None:
        final = gpucost.attribute_tagged(final, costs, tag, by=team, inventory=inventory)
    if shared is not None:
        final = gpucost.share_costs(final, costs, shared, by=team, split=split, inventory=inventory)
    final = final.groupby(team, as_index=False, sort=True).sum(numeric_only=True)
    zero = pd.Series(0.0, index=final.index)
    tagged = final["tagged_cost"] if "tagged_cost" in final else zero
    shared_cost = final["shared_cost"] if "shared_cost" in final else zero
    special = final[team].astype(str).isin(_SPECIAL_ROWS).to_numpy()
    gpu = (final["cost"] - tagged - shared_cost).where(~special, 0.0)
    teams = pd.DataFrame({team: final[team], "gpu_cost": gpu, "tagged_cost": tagged.where(~special, 0.0),
                          "shared_cost": shared_cost.where(~special, 0.0), "cost": final["cost"]})
    teams = teams[~special | (final["cost"] != 0).to_numpy()].reset_index(drop=True)

    def row_cost(name: str) -> float:
        return float(final.loc[final[team].astype(str) == name, "cost"].sum())

    parts = [("GPU lines allocated to teams", float(gpu.sum()), f"by-{team} table: GPU cost"),
             ("Idle GPU capacity", row_cost("__idle__"), "__idle__ row; idle section"),
             ("Tagged lines attributed", float(tagged.where(~special, 0.0).sum()),
              f"by-{team} table: tagged cost ({'tag ' + repr(tag) if tag is not None else 'no tag given'})"),
             ("Shared costs distributed", float(shared_cost.where(~special, 0.0).sum()),
              f"by-{team} table: shared cost ({split})" if shared is not None else "no shared lines given"),
             ("Unattributed", row_cost("__unattributed__"), "__unattributed__ row: lines outside the inventory, "
              "untagged and unshared"),
             ("Unobserved", row_cost("__unobserved__"), "__unobserved__ row: GPU lines without telemetry")]
    if row_cost(Reserved.DOWN) != 0:
        parts.append(("Down", row_cost(Reserved.DOWN), "__down__ row: nodes down for maintenance or drained"))
    top = pd.DataFrame(parts, columns=["part", "amount", "drill_down"])
    return top, teams


def _section_invoice(attribute_tagged, ctx) -> tuple[Section, dict] | str:
    team = ctx["by"][0]
    try:
        top, teams = invoice_reconciliation(ctx["by_team"], ctx["costs"], ctx["inventory"], team, tag=ctx.get("tag"),
                                            shared=ctx.get("shared"), split=ctx.get("share_split", "weighted"))
    except InvalidInputError as exc:
        return f"the bill does not reconcile with the allocation: {exc}"
    bill = ctx.get("total", float(np.sum(np.asarray(ctx["costs"]["cost"], dtype=np.float64))))
    s = Section("invoice", "The invoice, reconciled", f"The bill total {_fmt_money(bill)} split into what was "
                f"done with each dollar; the parts add up to it. Per {team}: GPU lines, tagged lines (storage and "
                "networking of their jobs) and their share of shared costs (gpucost.attribute_tagged, "
                "gpucost.share_costs).")
    s.body.append(html_table(top, key="invoice", money=["amount"], total=["amount"],
                             names={"part": "Part of the bill", "amount": "Amount", "drill_down": "Where to look"}))
    s.body.append(html_table(teams, key="invoice_by_team", money=["gpu_cost", "tagged_cost", "shared_cost", "cost"],
                             total=["gpu_cost", "tagged_cost", "shared_cost", "cost"],
                             names={team: team.capitalize(), "gpu_cost": "GPU lines", "tagged_cost": "Tagged",
                                    "shared_cost": "Shared", "cost": "Total"}))
    return s, {"invoice": top, "invoice_by_team": teams}


def _section_components(allocate, ctx) -> tuple[Section, dict] | str:
    costs, team = ctx["costs"], ctx["by"][0]
    if "component" not in getattr(costs, "columns", ()):
        return ("the cost lines have no 'component' column (capex, power, facility, support, operations: "
                "gpucost.owned_costs writes it)")
    component = costs["component"].astype(object).where(costs["component"].notna(), "").astype(str)
    component = component.where(component != "", "other").to_numpy()
    totals = pd.Series(np.asarray(costs["cost"], dtype=np.float64), index=component).groupby(level=0).sum()
    names = list(totals.sort_values(ascending=False, kind="stable").index)
    # Each component's lines prorated on their own (a handful of calls, one per component).
    parts = [allocate(costs[component == name], ctx["usage"], ctx["inventory"], ctx["workloads"], by=[team],
                      **ctx["policy"]).set_index(team)["cost"].rename(name) for name in names]
    table = pd.concat(parts, axis=1).fillna(0.0)
    table["cost"] = table.sum(axis=1)
    table = table.sort_values("cost", ascending=False, kind="stable").rename_axis(team).reset_index()
    s = Section("components", "Cost by component",
                f"What each {team} paid for, by the cost lines' component (capex, power, facility, support, "
                "operations of hardware you own; 'other' for lines without one). Each component's lines are "
                "prorated on their own: power by the energy drawn, the others by GPU time.")
    s.body.append(html_table(table, key="components", money=[*names, "cost"], total=[*names, "cost"],
                             names={team: team.capitalize(), "cost": "Total", **{n: n.capitalize() for n in names}}))
    return s, {"components": table}


def _power_cost(ctx, team: str) -> pd.Series | None:
    """The energy-driven (power) lines prorated by team, or None without them."""
    costs = ctx["costs"]
    if "driver" not in getattr(costs, "columns", ()):
        return None
    power = (costs["driver"].astype(object) == CostDriver.ENERGY).to_numpy()
    if not power.any():
        return None
    split = gpucost.allocate(costs[power], ctx["usage"], ctx["inventory"], ctx["workloads"], by=[team],
                             **ctx["policy"])
    return split.set_index(team)["cost"]


def _energy_table(ctx) -> pd.DataFrame | str:
    by_team, team = ctx["by_team"], ctx["by"][0]
    if "energy_kwh" not in by_team.columns:
        return "no power readings (the usage has no power_w column)"
    kwh = by_team["energy_kwh"].to_numpy(dtype=np.float64)
    if not np.nansum(kwh):
        return "the power readings add up to no energy"
    out = by_team[[team, *[c for c in ("energy_kwh", "facility_energy_kwh", "co2e_kg") if c in by_team.columns]]]
    out = out.assign(share_of_energy=kwh / np.nansum(kwh), cost=by_team["cost"].to_numpy())
    power = _power_cost(ctx, team)
    if power is not None:
        out["power_cost"] = power.reindex(out[team]).fillna(0.0).to_numpy()
    effective = by_team["effective_gpu_hours"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["kwh_per_effective_gpu_hour"] = np.where(effective > 0, kwh / np.where(effective > 0, effective, 1), np.nan)
    out["cost_per_effective_gpu_hour"] = by_team["cost_per_effective_gpu_hour"].to_numpy()
    return out.sort_values("energy_kwh", ascending=False, kind="stable", ignore_index=True)


_ENERGY_NAMES = {"energy_kwh": "Energy (kWh)", "facility_energy_kwh": "Facility energy (kWh)",
                 "co2e_kg": "CO2e (kg)", "share_of_energy": "Share of energy", "cost": "Cost",
                 "power_cost": "Power $", "kwh_per_effective_gpu_hour": "kWh per effective GPU-hour",
                 "cost_per_effective_gpu_hour": "$ per effective GPU-hour", "idle_cost": "Idle cost"}
_ENERGY_TOTALS = ["energy_kwh", "facility_energy_kwh", "co2e_kg", "share_of_energy", "cost", "power_cost"]


def _section_energy(allocate, ctx) -> tuple[Section, dict] | str:
    table = _energy_table(ctx)
    if isinstance(table, str):
        return table
    team = ctx["by"][0]
    s = Section("energy", f"Energy and CO2e by {team}",
                f"The GPUs' measured energy split over the {team}s that held them (docs/energy.md): idle GPUs' "
                "energy on its own row, facility energy with the PUE, CO2e at the grid's intensity; what one "
                "fully busy GPU-hour cost in kWh and in dollars.")
    s.body.append(html_table(table, key="energy", money=["cost", "power_cost", "cost_per_effective_gpu_hour"],
                             hours=["energy_kwh", "facility_energy_kwh", "co2e_kg"], pct=["share_of_energy"],
                             total=[c for c in _ENERGY_TOTALS if c in table.columns],
                             names={team: team.capitalize(), **_ENERGY_NAMES}))
    return s, {"energy": table}


def _section_idle_energy(allocate, ctx) -> tuple[Section, dict] | str:
    table = _energy_table(ctx)
    if isinstance(table, str):
        return table
    team = ctx["by"][0]
    idle = table[table[team].astype(str) == Reserved.IDLE]
    if idle.empty or not float(idle["energy_kwh"].sum()):
        return ("no idle energy" if ctx["policy"].get("idle", "keep") == "keep" else
                "idle energy is shared over the workloads (idle='share')")
    row = ctx["by_team"].set_index(team).loc[Reserved.IDLE]
    idle = idle.drop(columns=["kwh_per_effective_gpu_hour", "cost_per_effective_gpu_hour", "cost"]).assign(
        idle_cost=float(row["idle_cost"]))
    kwh, share = float(idle["energy_kwh"].iloc[0]), float(idle["share_of_energy"].iloc[0])
    words = (f"GPUs nobody held drew {kwh:,.1f} kWh, {_fmt_pct(share)} of the energy measured"
             + (f", and cost {_fmt_money(float(idle['power_cost'].iloc[0]))} of power" if "power_cost" in idle else "")
             + f" ({_fmt_money(float(row['idle_cost']))} of idle capacity in all).")
    if ctx["policy"].get("idle", "keep") == "share":
        words += (" With idle capacity shared, the idle energy of lines someone used is in their holders' rows: "
                  "this is the lines nobody used.")
    s = Section("idle_energy", "Idle energy", words + " The Idle GPUs section says which nodes to power down.")
    s.body.append(html_table(idle.drop(columns=[team]), key="idle_energy",
                             money=["idle_cost", "power_cost"], hours=["energy_kwh", "facility_energy_kwh", "co2e_kg"],
                             pct=["share_of_energy"], names=_ENERGY_NAMES))
    return s, {"idle_energy": idle.reset_index(drop=True)}


def _section_buy_vs_rent(buy_vs_rent, ctx) -> tuple[Section, dict] | str:
    costs = ctx["costs"]
    if "pricing" not in getattr(costs, "columns", ()) or not (
            costs["pricing"].astype(object) == Purchase.OWNED).to_numpy().any():
        return f"no cost lines of hardware you own (pricing {str(Purchase.OWNED)!r})"
    columns = getattr(ctx["rates"], "columns", ())
    rates = ctx["rates"] if "gpu_model" in columns or "instance_type" in columns else None
    policy = ctx["policy"]
    view = buy_vs_rent(costs, ctx["usage"], ctx["inventory"], rates=rates,
                       basis=Basis.USED if policy.get("basis") == Basis.USED else Basis.ALLOCATED,
                       interval=policy.get("interval"), downtime=policy.get("downtime"))
    s = Section("buy_vs_rent", "Buy versus rent",
                "What a GPU-hour of the hardware you own cost, and per GPU-hour used at the utilisation measured, "
                "beside the rate of renting the same GPU: owning pays above the break-even utilisation "
                "(owned cost per GPU-hour / rental rate; gpucost.buy_vs_rent).")
    s.body.append(html_table(view, key="buy_vs_rent",
                             money=["owned_cost", "shared_cost", "owned_cost_per_gpu_hour",
                                    "owned_cost_per_used_gpu_hour", "cloud_rate", "rent_cost", "owning_saves"],
                             hours=["owned_gpu_hours", "used_gpu_hours"], pct=["utilisation", "break_even_utilisation"],
                             total=["owned_cost", "shared_cost", "owned_gpu_hours", "used_gpu_hours"],
                             names={"gpu_model": "GPU", "nodes": "Nodes", "gpus": "GPUs",
                                    "owned_gpu_hours": "GPU-hours owned", "owned_cost": "Owned cost",
                                    "shared_cost": "of which shared", "owned_cost_per_gpu_hour": "$ per GPU-hour",
                                    "used_gpu_hours": "GPU-hours used", "utilisation": "Utilisation",
                                    "owned_cost_per_used_gpu_hour": "$ per used GPU-hour",
                                    "cloud_rate": "Rent $ per GPU-hour", "rate_source": "Rate from",
                                    "break_even_utilisation": "Break-even utilisation",
                                    "rent_cost": "Renting what was used", "owning_saves": "Owning saves"}))
    return s, {"buy_vs_rent": view}


_OPTIONAL = {"invoice": _section_invoice, "idle": _section_idle, Purchase.SPOT: _section_spot, "commitments": _section_commitments,
             "advice": _section_advice, "budgets": _section_budgets, "components": _section_components,
             "energy": _section_energy, "idle_energy": _section_idle_energy, "buy_vs_rent": _section_buy_vs_rent}


# ---- the page -----------------------------------------------------------------------

def _page(title: str, first: pd.Timestamp, last: pd.Timestamp, kpi: dict, sections: list[Section],
          currency: str) -> str:
    period = f"{first:%b %d, %Y} – {(last - pd.Timedelta(seconds=1)):%b %d, %Y} (UTC)"
    cards = [
        ("Total spend", _fmt_money(kpi["total"], cents=False), f"{currency}, amortized"),
        ("Allocated to workloads", _fmt_money(kpi["allocated"], cents=False),
         _fmt_pct(kpi["allocated"] / kpi["total"] if kpi["total"] else np.nan) + " of the bill"),
        ("Idle GPU capacity", _fmt_money(kpi["idle"], cents=False),
         _fmt_pct(kpi["idle_share"]) + " of measured GPU spend: GPU time no workload held"),
        ("Not on a GPU", _fmt_money(kpi["unattributed"], cents=False), "storage, network, unused commitments"),
        ("GPU utilisation", _fmt_pct(kpi["utilisation"]), "effective / measured GPU-hours"),
        ("Per effective GPU-hour", _fmt_money(kpi["cost_per_effective_gpu_hour"]), "GPU spend / measured effective hours"),
    ]
    if kpi.get("assumed_gpu_hours"):
        cards.insert(5, ("Assumed busy, not measured", f"{kpi['assumed_gpu_hours']:,.0f} GPU-h",
                         _fmt_money(kpi["assumed_cost"], cents=False) + " of jobs without telemetry; not in "
                         "utilisation"))
    if kpi.get("unobserved"):
        cards.insert(4, ("No telemetry", _fmt_money(kpi["unobserved"], cents=False),
                         "billed GPU time nothing measured (not idle)"))
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return str(_render("report.html", title=title, period=period, version=gpucost.__version__, generated=generated,
                       cards=[{"label": label, "value": value, "sub": sub} for label, value, sub in cards],
                       sections=[{"key": f"{s.key}", "title": s.title, "intro": s.intro,
                                  "body": [Markup(part) for part in s.body]} for s in sections]))
