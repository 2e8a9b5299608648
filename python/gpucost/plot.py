"""Charts of allocation results, as matplotlib figures (for notebooks and the
HTML report). Every function takes results of :func:`gpucost.allocate` (or
the usage table) and draws them; none computes a cost.

Typical use::

    by_day = gpucost.allocate(costs, usage, inventory, workloads, by=["team", "period"], freq="D")
    gpucost.plot.spend_over_time(by_day).savefig("spend.svg")

(each function has an example that runs).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gpucost.errors import InvalidInputError, conversion_hint
from gpucost.frames import str_codes, utilisation_measured
from gpucost.spill import UsageChunks

__all__ = ["spend_over_time", "allocated_vs_idle", "cost_per_effective_gpu_hour", "utilisation_distribution",
           "spend_by_group", "team_colors", "RESERVED_LABELS", "display_name"]

#: How the engine's reserved consumer/label values read in a chart or table.
RESERVED_LABELS = {"__down__": "Down (maintenance, drained or failed nodes)", "__idle__": "Idle capacity", "__unattributed__": "Not on a GPU (storage, network, commitments)",
                   "__unlabelled__": "Unlabelled workloads"}
_RESERVED_COLORS = {"__down__": "#6f6f6f", "__idle__": "#c9c9c9", "__unattributed__": "#8c8c8c", "__unlabelled__": "#e4a11b"}
_PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#d62728", "#17becf", "#8c564b", "#e377c2", "#bcbd22",
            "#ff7f0e", "#393b79", "#637939", "#843c39")  # distinct hues; amber is kept for unlabelled
# The groups past a chart's ``top`` are drawn as one series (a month by pod is ~6,500 groups).
# Its key is an object no group value can be; its grey is cooler than the reserved ones, so it never reads as
# idle capacity.
_OTHER, _OTHER_COLOR = object(), "#9aa5b1"
#: How many groups a chart names by default (its ``top``): as many as the palette has distinct hues.
TOP_GROUPS = len(_PALETTE)


def display_name(value: Any) -> str:
    """How a group value reads in a chart or table: the reserved values
    (``__idle__``, ...) in words (:data:`RESERVED_LABELS`), others as they are.

    Examples:
        >>> gpucost.plot.display_name("__idle__"), gpucost.plot.display_name("nlp")
        ('Idle capacity', 'nlp')
    """
    return RESERVED_LABELS.get(str(value), str(value))


def team_colors(values: Sequence[Any]) -> dict[str, str]:
    """A stable color per group value (sorted order), reserved values in grey.

    Examples:
        >>> gpucost.plot.team_colors(["vision", "nlp", "__idle__", "nlp"])
        {'__idle__': '#c9c9c9', 'nlp': '#1f77b4', 'vision': '#2ca02c'}
    """
    colors, i = {}, 0
    for v in sorted({str(x) for x in values}):
        if v in _RESERVED_COLORS:
            colors[v] = _RESERVED_COLORS[v]
        else:
            colors[v] = _PALETTE[i % len(_PALETTE)]
            i += 1
    return colors


def _top_groups(order: Sequence[Any], top: int | None, name: Callable[[Any], str] = str) -> tuple[list, list, list]:
    """The groups of ``order`` (largest first) split into those drawn by name
    (the first ``top`` that are not reserved; every one when ``top`` is None),
    those summed into one Other series, and the reserved ones (``__idle__``,
    ...: always drawn on their own, never in Other). ``name``: a group's
    value, when ``order`` holds something else (row positions)."""
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 0):
        raise InvalidInputError(f"top: expected a whole number >= 0 or None, got {top!r}")
    reserved = [g for g in order if name(g) in _RESERVED_COLORS]
    named = [g for g in order if name(g) not in _RESERVED_COLORS]
    cut = len(named) if top is None else int(top)
    return named[:cut], named[cut:], reserved


def _series_label(group: Any, folded: Sequence[Any]) -> str:
    """A series' legend entry: the group's name, or the Other series' count."""
    if group is _OTHER:
        return f"Other ({len(folded):,} group{'' if len(folded) == 1 else 's'})"
    return display_name(group)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    return bool(ipython and getattr(ipython, "get_ipython", lambda: None)())


_REGISTERED = False


def _register_notebook_display() -> None:
    """Shows our figures as PNG in Jupyter whatever the matplotlib backend."""
    global _REGISTERED
    if _REGISTERED:
        return
    from IPython import get_ipython
    from IPython.core.pylabtools import select_figure_formats
    shell = get_ipython()
    if shell is not None and hasattr(shell, "display_formatter"):
        select_figure_formats(shell, {"png"}, bbox_inches="tight")
    _REGISTERED = True


def _figure(width: float = 8.0, height: float = 3.6):
    from matplotlib.figure import Figure
    if _in_notebook():
        _register_notebook_display()
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)
    return fig, ax


def _money_axis(ax, axis: str = "y") -> None:
    from matplotlib.ticker import FuncFormatter
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: _money_tick(v, target.get_majorticklocs())))


def _money_tick(value: float, ticks) -> str:
    """A money tick with as many decimals as the tick step needs: cents on
    an axis of small amounts ($0.25 $0.50 ...), none on dollars, $k above
    $10,000."""
    ticks = np.asarray(ticks, dtype=np.float64)
    steps = np.diff(np.sort(ticks))
    step = float(steps[steps > 0].min()) if (steps > 0).any() else abs(value)
    if np.abs(ticks).max(initial=abs(value)) >= 10_000 and step >= 1_000:
        return f"${value / 1000:,.0f}k"
    decimals = 0 if step >= 1 or step == 0 else min(4, int(np.ceil(-np.log10(step) - 1e-9)))
    decimals = 2 if decimals == 1 else decimals  # cents, not dimes
    return f"${value:,.{decimals}f}"


def _date_axis(ax) -> None:
    import matplotlib.dates as mdates
    locator = mdates.AutoDateLocator(minticks=4, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.xaxis.get_offset_text().set_fontsize(8)
    ax.tick_params(labelsize=8)


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise InvalidInputError(f"{what}: expected a DataFrame, got {type(frame).__name__}{conversion_hint(frame)}")
    for c in columns:
        if c not in frame.columns:
            raise InvalidInputError(f"{what}: missing required column '{c}'")


def spend_over_time(allocation: pd.DataFrame, by: str = "team", *, colors: Mapping[str, str] | None = None,
                    title: str = "Spend by day", top: int | None = TOP_GROUPS):
    """Stacked daily (or hourly, monthly) spend per group from an allocation
    grouped by ``[by, "period"]``. Returns a matplotlib ``Figure``.

    The ``top`` largest groups (by total; None: every one) are drawn by name,
    the rest summed into one grey "Other (N groups)" series, drawn above them
    and below the reserved ones (idle capacity, ...), which are always their
    own: each bar is the period's whole spend whatever ``top`` is.

    Examples:
        An allocation by team and day, as ``gpucost.allocate(...,
        by=["team", "period"], freq="D")`` gives it:

        >>> days = pd.date_range("2026-03-02", periods=3, freq="D", tz="UTC")
        >>> by_day = pd.DataFrame({"team": np.repeat(["nlp", "vision", "__idle__"], 3), "period": np.tile(days, 3),
        ...                        "cost": [120.0, 130, 110, 40, 45, 50, 30, 20, 25]})
        >>> fig = gpucost.plot.spend_over_time(by_day, by="team")
        >>> ax = fig.axes[0]
        >>> ax.get_title(loc="left"), [text.get_text() for text in ax.get_legend().get_texts()]
        ('Spend by day', ['nlp', 'vision', 'Idle capacity'])
        >>> fig.savefig("spend.svg")

        With more groups than ``top`` (a month by pod is thousands), the
        smaller ones are one series; the days' totals are unchanged:

        >>> ax = gpucost.plot.spend_over_time(by_day, by="team", top=1).axes[0]
        >>> [text.get_text() for text in ax.get_legend().get_texts()]
        ['nlp', 'Other (1 group)', 'Idle capacity']
        >>> [float(bar.get_y() + bar.get_height()) for bar in ax.patches[-3:]]   # the top of each day's stack
        [190.0, 195.0, 185.0]
    """
    _require(allocation, [by, "period", "cost"], "allocation")
    table = allocation.pivot_table(index="period", columns=by, values="cost", aggfunc="sum", fill_value=0.0)
    shown, folded, reserved = _top_groups(table.sum().sort_values(ascending=False).index, top)
    series = [(c, table[c].to_numpy()) for c in shown]
    if folded:  # one series, its days' sums: every dollar of the groups not named is in the stack
        series.append((_OTHER, table[folded].sum(axis=1).to_numpy()))
    series += [(c, table[c].to_numpy()) for c in reserved]
    colors = dict(colors or team_colors([*shown, *reserved]))
    fig, ax = _figure()
    x = table.index.tz_convert(None) if getattr(table.index, "tz", None) is not None else table.index
    width = 0.8 * (pd.Series(x).diff().min() if len(x) > 1 else pd.Timedelta(days=1))
    bottom = np.zeros(len(table))
    # A bar of height 0 draws nothing, but a month by pod has thousands of groups of a few days each
    # (issue 29: 6,520 pods x 31 days, 1.6 GiB of Rectangles): only the first group's bars (the axis'
    # extent, and the first instant's, the bars' width in data units) and other groups' non-zero ones
    # are made; the skipped bars' bottoms stay sticky edges, so the axes' limits are as with every bar.
    skipped, first = [], None
    for c, values in series:
        drawn = np.ones(len(values), dtype=bool) if first is None else (values != 0)
        drawn[0] = True
        bars = ax.bar(x[drawn], values[drawn], bottom=bottom[drawn], width=width,
                      color=_OTHER_COLOR if c is _OTHER else colors[str(c)], label=_series_label(c, folded),
                      linewidth=0)
        first = first if first is not None else bars
        skipped.append(bottom[~drawn])
        bottom += values
    if first is not None and len(first.patches):
        first.patches[0].sticky_edges.y.extend(np.concatenate(skipped).tolist())
    _money_axis(ax)
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    _date_axis(ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    return fig


def allocated_vs_idle(allocation: pd.DataFrame, by: str = "team", *, title: str = "Allocated vs idle, by day"):
    """Daily spend split into allocated to workloads, idle GPU capacity and
    cost with no GPU, from an allocation grouped by ``[by, "period"]``.

    Examples:
        An allocation by team and day, as ``gpucost.allocate(...,
        by=["team", "period"], freq="D")`` gives it:

        >>> days = pd.date_range("2026-03-02", periods=3, freq="D", tz="UTC")
        >>> by_day = pd.DataFrame({"team": np.repeat(["nlp", "vision", "__idle__"], 3), "period": np.tile(days, 3),
        ...                        "cost": [120.0, 130, 110, 40, 45, 50, 30, 20, 25]})
        >>> ax = gpucost.plot.allocated_vs_idle(by_day).axes[0]
        >>> ax.get_title(loc="left"), [text.get_text() for text in ax.get_legend().get_texts()]
        ('Allocated vs idle, by day', ['Allocated to workloads', 'Idle capacity'])
    """
    _require(allocation, [by, "period", "cost"], "allocation")
    kind = allocation[by].map(lambda v: v if v in ("__idle__", "__unattributed__") else "allocated")
    table = allocation.assign(kind=kind).pivot_table(index="period", columns="kind", values="cost", aggfunc="sum",
                                                     fill_value=0.0)
    order = [c for c in ("allocated", "__idle__", "__unattributed__") if c in table.columns]
    names = {"allocated": "Allocated to workloads", **RESERVED_LABELS}
    colors = {"allocated": "#1f5fa8", **_RESERVED_COLORS}
    fig, ax = _figure()
    x = table.index.tz_convert(None) if getattr(table.index, "tz", None) is not None else table.index
    bottom = np.zeros(len(table))
    for c in order:
        ax.bar(x, table[c].to_numpy(), bottom=bottom, width=0.8, color=colors[c], label=names[c])
        bottom += table[c].to_numpy()
    _money_axis(ax)
    _date_axis(ax)
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    return fig


def cost_per_effective_gpu_hour(allocation: pd.DataFrame, by: str = "team", *,
                                colors: Mapping[str, str] | None = None,
                                title: str = "Cost per effective GPU-hour", top: int | None = TOP_GROUPS):
    """Horizontal bars of ``cost_per_effective_gpu_hour`` per group (groups
    with no effective GPU-hours are left out).

    With more groups than ``top`` (None: every one), the ``top`` largest by
    ``cost`` have a bar each and the rest one grey "Other (N groups)" bar at
    the bottom: their cost over their effective GPU-hours (the
    ``effective_gpu_hours`` column, or the hours each row's rate implies);
    reserved groups (unlabelled workloads, ...) keep their own bars.

    Examples:
        >>> by_team = pd.DataFrame({"team": ["__idle__", "nlp", "vision"], "cost": [75.0, 360.0, 135.0],
        ...                         "cost_per_effective_gpu_hour": [np.nan, 2.1, 3.3]})
        >>> ax = gpucost.plot.cost_per_effective_gpu_hour(by_team).axes[0]
        >>> [label.get_text() for label in ax.get_yticklabels()], [float(bar.get_width()) for bar in ax.patches]
        (['nlp', 'vision'], [2.1, 3.3])
        >>> ax = gpucost.plot.cost_per_effective_gpu_hour(by_team, top=1).axes[0]   # vision: $135 over 40.9 h
        >>> [label.get_text() for label in ax.get_yticklabels()], [round(float(b.get_width()), 2) for b in ax.patches]
        (['Other (1 group)', 'nlp'], [3.3, 2.1])
    """
    _require(allocation, [by, "cost_per_effective_gpu_hour"], "allocation")
    data = allocation[np.isfinite(allocation["cost_per_effective_gpu_hour"])]
    data = data[~data[by].isin(["__idle__", "__unattributed__"])].sort_values("cost_per_effective_gpu_hour")
    colors = dict(colors or team_colors(allocation[by]))
    values = data["cost_per_effective_gpu_hour"].to_numpy(dtype=np.float64)
    names = [display_name(v) for v in data[by]]
    bar_colors = [colors.get(str(v), "#1f5fa8") for v in data[by]]
    rows, groups = np.arange(len(data)), data[by].astype(str).to_numpy()
    if "cost" in data.columns:  # the largest spenders are named
        rows = rows[np.argsort(-data["cost"].to_numpy(dtype=np.float64), kind="stable")]
    shown, folded, reserved = _top_groups(rows, top, name=groups.__getitem__)
    if folded:  # one bar at the bottom: the rest's cost over their effective GPU-hours
        if "cost" not in data.columns:
            raise InvalidInputError(f"allocation: more than top={top} groups and no 'cost' column to choose the "
                                    "largest by (top=None draws every group)")
        keep, rest = np.sort(np.array([*shown, *reserved], dtype=np.intp)), np.array(folded, dtype=np.intp)
        cost = data["cost"].to_numpy(dtype=np.float64)[rest]
        with np.errstate(divide="ignore", invalid="ignore"):
            hours = (data["effective_gpu_hours"].to_numpy(dtype=np.float64)[rest] if "effective_gpu_hours" in data
                     else cost / values[rest])
            pooled = np.nansum(cost) / np.nansum(hours) if np.nansum(hours) > 0 else np.nan
        values = np.concatenate([[pooled], values[keep]])
        names = [_series_label(_OTHER, folded), *[names[i] for i in keep]]
        bar_colors = [_OTHER_COLOR, *[bar_colors[i] for i in keep]]
    fig, ax = _figure(8.0, max(2.0, 0.38 * len(values) + 0.9))
    ax.grid(axis="y", visible=False)
    ax.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    y = np.arange(len(values))
    ax.barh(y, values, color=bar_colors, height=0.6)
    ax.set_yticks(y, names, fontsize=9)
    for yi, v in zip(y, values):
        ax.annotate(f"${v:,.2f}", (v, yi), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    _money_axis(ax, "x")
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    ax.margins(x=0.15)
    return fig


def spend_by_group(allocation: pd.DataFrame, by: Sequence[str] = ("team", "project"), *, top: int = 15,
                   colors: Mapping[str, str] | None = None, title: str = "Spend by project"):
    """Horizontal bars of the largest groups' cost, colored by the first key.

    Examples:
        >>> by_project = pd.DataFrame({"team": ["nlp", "nlp", "vision"], "project": ["llm", "asr", "detect"],
        ...                            "cost": [300.0, 60.0, 135.0]})
        >>> ax = gpucost.plot.spend_by_group(by_project, by=["team", "project"], top=2).axes[0]
        >>> [label.get_text() for label in ax.get_yticklabels()]   # the largest at the top
        ['vision / detect', 'nlp / llm']
    """
    by = list(by)
    _require(allocation, [*by, "cost"], "allocation")
    data = allocation.nlargest(top, "cost").iloc[::-1]
    colors = dict(colors or team_colors(allocation[by[0]]))
    fig, ax = _figure(8.0, max(2.0, 0.34 * len(data) + 0.9))
    ax.grid(axis="y", visible=False)
    ax.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    y = np.arange(len(data))
    labels = [" / ".join(display_name(v) for v in dict.fromkeys(row)) for row in data[by].itertuples(index=False)]
    ax.barh(y, data["cost"].to_numpy(), color=[colors.get(str(v), "#1f5fa8") for v in data[by[0]]], height=0.6)
    ax.set_yticks(y, labels, fontsize=8)
    _money_axis(ax, "x")
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    return fig


def utilisation_distribution(usage: pd.DataFrame, workloads: pd.DataFrame | None = None, by: str = "team", *,
                             interval: float = 60, bins: int = 20, colors: Mapping[str, str] | None = None,
                             title: str = "GPU-hours held, by utilisation", top: int | None = TOP_GROUPS):
    """Histogram of GPU-hours held (share x sample duration) by utilisation,
    stacked by a workload label when ``workloads`` is given. Samples with no
    consumer (free GPUs) are left out, and so are samples whose utilisation
    was not measured (a reader's ``util_measured`` False: MIG instances
    without ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``). ``usage`` may be
    :class:`gpucost.UsageChunks` (read a chunk at a time). Past the ``top``
    largest label values (None: every one), the rest are one grey "Other (N
    groups)" series, as in :func:`spend_over_time`.

    Examples:
        >>> usage = pd.DataFrame({"consumer": ["a", "a", "b", ""], "util": [0.95, 0.9, 0.2, 0.0], "share": 1.0,
        ...                       "duration": 3600.0})
        >>> workloads = pd.DataFrame({"consumer": ["a", "b"], "team": ["nlp", "vision"]})
        >>> ax = gpucost.plot.utilisation_distribution(usage, workloads, by="team").axes[0]
        >>> [text.get_text() for text in ax.get_legend().get_texts()], float(sum(bar.get_height() for bar in ax.patches))
        (['nlp', 'vision'], 3.0)
        >>> ax = gpucost.plot.utilisation_distribution(usage, workloads, by="team", top=0).axes[0]
        >>> ax.get_legend() is None, float(sum(bar.get_height() for bar in ax.patches))   # one series: no legend
        (True, 3.0)
        >>> unmeasured = usage.assign(util_measured=[True, False, True, True])   # a's second hour: no util field
        >>> ax = gpucost.plot.utilisation_distribution(unmeasured, workloads, by="team").axes[0]
        >>> float(sum(bar.get_height() for bar in ax.patches))
        2.0
    """
    edges = np.linspace(0.0, 1.0, bins + 1)
    chunks = usage if isinstance(usage, UsageChunks) else [usage]  # chunks on disk: one at a time
    held: dict[str, list] = {}  # group -> [GPU-hours, histogram], summed over the chunks
    for frame in chunks:
        for g, (total, counts) in _held_by_group(frame, workloads, by, interval, edges).items():
            if g in held:
                held[g][0] += total
                held[g][1] += counts
            else:
                held[g] = [total, counts]
    fig, ax = _figure(8.0, 3.2)
    order = sorted(held, key=lambda g: (-held[g][0], g))
    shown, folded, reserved = _top_groups(order, top)
    colors = dict(colors or team_colors([*shown, *reserved]))
    other = np.sum([held[g][1] for g in folded], axis=0) if folded else None  # the rest's histograms, summed
    if folded:  # the named groups, the Other series, the reserved ones
        order = [*shown, _OTHER, *reserved]
    bottom = np.zeros(bins)
    for g in order:
        counts = other if g is _OTHER else held[g][1]
        ax.bar(edges[:-1] * 100, counts, width=100 / bins, align="edge", bottom=bottom,
               color=_OTHER_COLOR if g is _OTHER else colors.get(g, "#1f5fa8"), label=_series_label(g, folded),
               edgecolor="white", linewidth=0.4)
        bottom += counts
    ax.set_xlabel("GPU utilisation (%)", fontsize=9)
    ax.set_ylabel("GPU-hours", fontsize=9)
    ax.set_xlim(0, 100)
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold")
    if len(order) > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
    return fig


def _held_by_group(usage: Any, workloads: pd.DataFrame | None, by: str, interval: float,
                   edges: np.ndarray) -> dict[str, tuple[float, np.ndarray]]:
    """Per group of one usage table: its GPU-hours held and their histogram
    over ``edges`` of utilisation (samples with a consumer only)."""
    _require(usage, ["consumer", "util", "share"], "usage")
    # On the consumers' category codes, never a string per sample (a month is ~17 M samples: issue 29).
    codes, names = str_codes(usage["consumer"])
    held = (names != "")[codes]  # a mask, not indices: a byte per sample
    measured = utilisation_measured(usage)
    if measured is not None:  # util 0 there is "not measured" (a reader's mark), not 0 %
        held &= measured
    weight = pd.Series(usage["share"]).to_numpy(dtype=np.float64)[held]  # share x seconds / 3600, in place
    if "duration" in usage:
        weight *= pd.Series(usage["duration"]).to_numpy(dtype=np.float64)[held]
    else:
        weight *= float(interval)
    weight /= 3600.0
    util = pd.Series(usage["util"]).to_numpy()[held]
    if workloads is not None and by == "consumer":  # each workload its own group
        per_name = names.astype(str)
    elif workloads is not None and by in getattr(workloads, "columns", ()):
        labels = workloads.set_index("consumer")[by]
        per_name = pd.Series(names, dtype=object).map(labels).fillna("__unlabelled__").astype(str).to_numpy()
    else:
        per_name = np.full(len(names), "all", dtype=object)
    kinds, per_name = np.unique(per_name, return_inverse=True)  # each consumer's group, as a code
    group = per_name.astype(np.int64)[codes[held]]
    del codes, held
    # Every group's histogram in one weighted count (np.histogram's bins: [a, b), the last one [a, b]).
    bins = len(edges) - 1
    cell = np.minimum(np.searchsorted(edges, util, side="right") - 1, bins - 1)
    inside = (util >= edges[0]) & (util <= edges[-1])
    counts = np.bincount(group[inside] * bins + cell[inside], weights=weight[inside],
                         minlength=len(kinds) * bins).reshape(len(kinds), bins)
    totals = np.bincount(group, weights=weight, minlength=len(kinds))
    return {str(kinds[g]): (float(totals[g]), counts[g]) for g in np.unique(group)}


def to_svg(fig) -> str:
    """A figure as an inline SVG element (text kept as text, no metadata)."""
    import io
    import matplotlib
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gpucost"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]
