"""The showback report: its numbers are the library's, it is self-contained,
it renders in a real browser (headless Chromium) with every chart drawn, and
the plot helpers return matplotlib figures."""

from __future__ import annotations

import html.parser
import json
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost.demo import demo_fleet
from gpucost.report import html_table
import services

matplotlib = pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def fleet():
    return demo_fleet()


@pytest.fixture(scope="module")
def built(fleet, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    r = gpucost.report(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, path=path,
                       title="GPU showback — demo", interval=fleet.interval, bill=fleet.bill, budgets=fleet.budgets,
                       interruptions=fleet.interruptions)
    return r, path


class Cells(html.parser.HTMLParser):
    """data-value cells of each table, by table key: {key: [{column: value}]}."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[dict]] = {}
        self.kpis: dict[str, str] = {}
        self._key = None
        self._row = None
        self._kpi = None
        self._in_value = False
        self._in_tbody = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "data-key" in a:
            self._key = a["data-key"]
            self.tables[self._key] = []
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._key and self._in_tbody:
            self._row = {}
            self.tables[self._key].append(self._row)
        elif tag == "td" and self._row is not None and "data-value" in a:
            self._row[a["data-col"]] = float(a["data-value"])
        elif tag == "div" and "data-kpi" in a:
            self._kpi = a["data-kpi"]
        elif tag == "div" and a.get("class") == "value" and self._kpi:
            self._in_value = True

    def handle_endtag(self, tag):
        if tag == "table":
            self._key = None
        elif tag == "tbody":
            self._in_tbody = False
            self._row = None
        elif tag == "div" and self._in_value:
            self._in_value = False
            self._kpi = None

    def handle_data(self, data):
        if self._in_value and self._kpi:
            self.kpis[self._kpi] = data


def parse(text: str) -> Cells:
    p = Cells()
    p.feed(text)
    return p


def test_numbers_are_the_librarys(fleet, built):
    r, path = built
    by_team = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"],
                               interval=fleet.interval)
    pd.testing.assert_frame_equal(r.data["by_team"], by_team)
    cells = parse(path.read_text())
    shown = pd.DataFrame(cells.tables["showback"])
    expected = by_team.set_index("team").loc[r.data["showback_table"]["team"]]
    np.testing.assert_allclose(shown["cost"], expected["cost"], rtol=1e-15)
    np.testing.assert_allclose(shown["gpu_hours"], expected["gpu_hours"], rtol=1e-15)
    np.testing.assert_allclose(shown["cost_per_effective_gpu_hour"], expected["cost_per_effective_gpu_hour"],
                               rtol=1e-15)
    # The total row and the headline equal the bill.
    bill = float(fleet.costs["cost"].sum())
    assert shown["cost"].sum() == pytest.approx(bill, rel=1e-12)
    assert cells.kpis["Total spend"] == f"${bill:,.0f}"
    idle = float(by_team.set_index("team").at["__idle__", "cost"])
    assert cells.kpis["Idle GPU capacity"] == f"${idle:,.0f}"
    # Projects and tagging gaps come from allocations too.
    by_project = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "project"],
                                  interval=fleet.interval)
    projects = pd.DataFrame(cells.tables["projects"])
    assert sorted(projects["cost"]) == pytest.approx(sorted(by_project["cost"]), rel=1e-15)
    gaps = r.data["tagging_gaps"]
    assert gaps["cost"].sum() == pytest.approx(
        float(by_project.loc[(by_project["team"] == "__unlabelled__") | (by_project["project"] == "__unlabelled__"),
                             "cost"].sum()), rel=1e-12)
    assert "search/ranker-7" in set(gaps["consumer"])  # the inference pod whose team label was forgotten


def test_self_contained(built):
    _, path = built
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text and "<link" not in text and "<img" not in text
    # The only URLs are SVG namespaces, never something to fetch.
    urls = set(re.findall(r"""(?:src|href)=["']([^"'#][^"']*)""", text))
    assert urls <= {"http://www.w3.org/1999/xlink"}, urls
    assert "url(http" not in text


def test_sections_only_from_real_results(fleet, built, monkeypatch):
    r, _ = built
    keys = [s.key for s in r.sections]
    assert keys[:5] == ["highlights", "showback", "projects", "efficiency", "tagging"] and keys[-1] == "method"
    assert "<strong>48.6%</strong> of GPU spend ($58,541) paid for GPU capacity no workload held" in r.html
    for key, function in (("idle", "find_idle"), ("spot", "spot_runs"), ("budgets", "budget_status")):
        if not hasattr(gpucost, function):
            assert key in r.omitted and f'id="{key}"' not in r.html
    # A section appears with exactly what the analysis returned.
    findings = pd.DataFrame({"resource_id": ["i-1"], "hours": [64.0], "action": ["terminate"],
                             "dollars_wasted": [783.36]})
    monkeypatch.setattr(gpucost, "find_idle", lambda *a, **k: findings, raising=False)
    r2 = gpucost.report(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, interval=fleet.interval,
                        analyses=["idle"])
    assert 'id="idle"' in r2.html
    cells = parse(r2.html).tables["idle"]
    assert cells == [{"hours": 64.0, "dollars_wasted": 783.36}]
    assert r2.data["idle_findings"].equals(findings)
    assert "$783.36" in r2.html
    monkeypatch.setattr(gpucost, "find_idle", lambda *a, **k: findings.iloc[:0], raising=False)
    r3 = gpucost.report(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, interval=fleet.interval,
                        analyses=["idle"])
    assert 'id="idle"' not in r3.html and "nothing found" in r3.omitted["idle"]


def test_bad_input(fleet):
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'analyses'"):
        gpucost.report(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, analyses=["nope"])
    with pytest.raises(gpucost.InvalidInputError, match="costs: row 0, column 'cost'"):
        bad = fleet.costs.copy()
        bad.loc[0, "cost"] = np.nan
        gpucost.report(bad, fleet.usage, fleet.inventory, fleet.workloads)


def test_repr_html_for_notebooks(built):
    r, _ = built
    frag = r._repr_html_()
    assert frag.startswith("<iframe srcdoc=") and "&lt;svg" in frag


def test_plot_helpers_return_figures(fleet):
    from matplotlib.figure import Figure
    by_day = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "period"],
                              freq="D", interval=fleet.interval)
    by_team = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "project"],
                               interval=fleet.interval)
    figures = [gpucost.plot.spend_over_time(by_day), gpucost.plot.allocated_vs_idle(by_day),
               gpucost.plot.cost_per_effective_gpu_hour(by_team), gpucost.plot.spend_by_group(by_team),
               gpucost.plot.utilisation_distribution(fleet.usage, fleet.workloads, interval=fleet.interval)]
    for fig in figures:
        assert isinstance(fig, Figure)
        ax = fig.axes[0]
        assert ax.get_title(loc="left")
        assert len(ax.patches) + len(ax.collections) > 3
    # The stacked daily chart's bars add up to each day's bill.
    bars = figures[1].axes[0].patches
    heights = np.array([b.get_height() for b in bars]).reshape(-1, 31).sum(axis=0)
    daily = fleet.costs.groupby(fleet.costs["start"].dt.floor("D"))["cost"].sum().to_numpy()
    np.testing.assert_allclose(heights, daily, rtol=1e-9)
    with pytest.raises(gpucost.InvalidInputError, match="missing required column 'period'"):
        gpucost.plot.spend_over_time(by_team)


def many_groups(pods: int = 300, seed: int = 3) -> pd.DataFrame:
    """A month by pod: many groups of a few days each, a credit, and idle and no-GPU costs every day."""
    rng = np.random.default_rng(seed)
    days = pd.date_range("2026-03-01", periods=31, freq="D", tz="UTC")
    rows = [(f"pod-{p:04d}", d, float(rng.gamma(2.0, 10.0 + p))) for p in range(pods) for d in days
            if rng.random() < 0.2]
    rows += [("credit", days[4], -500.0)]
    rows += [(g, d, float(rng.uniform(50, 90))) for g in ("__idle__", "__unattributed__") for d in days]
    return pd.DataFrame(rows, columns=["consumer", "period", "cost"])


def stacked_by_x(ax) -> pd.Series:
    return pd.Series([p.get_height() for p in ax.patches], index=[p.get_x() for p in ax.patches]).groupby(level=0).sum()


def test_many_groups_are_the_top_and_one_other_series_and_every_dollar_is_drawn():
    """A month by pod (~6,500 groups): the legend names the `top` largest pods, then one Other series, then the
    reserved groups as before; each day's stack is still the day's whole spend."""
    by_day = many_groups()
    totals = by_day.groupby("consumer")["cost"].sum()
    named = totals.drop(["__idle__", "__unattributed__"]).sort_values(ascending=False)
    reserved = totals[["__idle__", "__unattributed__"]].sort_values(ascending=False).index
    for top in (12, 5, 0):
        ax = gpucost.plot.spend_over_time(by_day, by="consumer", top=top).axes[0]
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend == [*named.index[:top], f"Other ({len(named) - top:,} groups)",
                          *map(gpucost.plot.display_name, reserved)]
        daily = by_day.groupby("period")["cost"].sum()
        np.testing.assert_allclose(stacked_by_x(ax).to_numpy(), daily.to_numpy(), rtol=1e-12)
        other = ax.get_legend().legend_handles[top]
        assert matplotlib.colors.to_hex(other.get_facecolor()) == "#9aa5b1"  # grey, not a reserved one's
    idle = ax.get_legend().legend_handles[-2]
    assert matplotlib.colors.to_hex(idle.get_facecolor()) == "#c9c9c9"  # reserved colours as they were
    with pytest.raises(gpucost.InvalidInputError, match="top: expected a whole number"):
        gpucost.plot.spend_over_time(by_day, by="consumer", top=-1)


def test_up_to_top_groups_draw_as_before():
    """With no more groups than `top`, the chart is the one every group makes (top=None), to the byte."""
    from gpucost.plot import to_svg
    by_day = many_groups(pods=12)
    assert by_day["consumer"].nunique() == 15  # 12 pods, a credit, two reserved: 13 named
    for top in (13, 40):
        assert to_svg(gpucost.plot.spend_over_time(by_day, by="consumer", top=top)) == to_svg(
            gpucost.plot.spend_over_time(by_day, by="consumer", top=None))
    assert "Other (" not in to_svg(gpucost.plot.spend_over_time(by_day, by="consumer", top=13))
    assert "Other (1 group)" in to_svg(gpucost.plot.spend_over_time(by_day, by="consumer", top=12))


def test_utilisation_distribution_folds_the_labels_past_top():
    rng = np.random.default_rng(5)
    consumers = np.array([f"pod-{i}" for i in range(200)] + [""])
    usage = pd.DataFrame({"consumer": rng.choice(consumers, 20_000), "util": rng.random(20_000), "share": 1.0,
                          "duration": 3600.0})  # a GPU-hour each: the stacks are whole numbers, exact
    workloads = pd.DataFrame({"consumer": consumers[:180], "team": [f"team-{i % 30:02d}" for i in range(180)]})
    held = usage[usage["consumer"] != ""]
    expected, _ = np.histogram(held["util"], bins=np.linspace(0, 1, 21), weights=np.ones(len(held)))
    ax = gpucost.plot.utilisation_distribution(usage, workloads, by="team", top=4).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(legend) == 6 and legend[4:] == ["Other (26 groups)", "Unlabelled workloads"]
    np.testing.assert_array_equal(stacked_by_x(ax).to_numpy(), expected)
    few = workloads.assign(team=workloads["team"].str[:6] + (workloads.index % 3).astype(str))  # 3 teams
    from gpucost.plot import to_svg
    assert to_svg(gpucost.plot.utilisation_distribution(usage, few, by="team")) == to_svg(
        gpucost.plot.utilisation_distribution(usage, few, by="team", top=None))


def test_cost_per_effective_gpu_hour_names_the_largest_spenders_and_pools_the_rest():
    rng = np.random.default_rng(11)
    hours = rng.uniform(1, 100, 400)
    table = pd.DataFrame({"consumer": [f"pod-{i:03d}" for i in range(400)], "cost": hours * rng.uniform(1, 9, 400),
                          "effective_gpu_hours": hours})
    table = pd.concat([table, pd.DataFrame({"consumer": ["__idle__", "__unlabelled__"], "cost": [900.0, 30.0],
                                            "effective_gpu_hours": [0.0, 10.0]})], ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["cost_per_effective_gpu_hour"] = np.where(table["effective_gpu_hours"] > 0,
                                                        table["cost"] / table["effective_gpu_hours"], np.nan)
    ax = gpucost.plot.cost_per_effective_gpu_hour(table, "consumer", top=12).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    pods = table.iloc[:400]
    largest = pods.nlargest(12, "cost")
    assert labels[0] == "Other (388 groups)"
    assert set(labels[1:]) == {*largest["consumer"], "Unlabelled workloads"}
    rest = pods[~pods["consumer"].isin(largest["consumer"])]
    widths = [bar.get_width() for bar in ax.patches]
    assert widths[0] == pytest.approx(rest["cost"].sum() / rest["effective_gpu_hours"].sum(), rel=1e-12)
    assert widths[1:] == sorted(widths[1:])  # the named by rate, as before
    without_hours = gpucost.plot.cost_per_effective_gpu_hour(table.drop(columns="effective_gpu_hours"), "consumer")
    assert without_hours.axes[0].patches[0].get_width() == pytest.approx(widths[0], rel=1e-12)
    few = table.iloc[[0, 1, 2, 400, 401]]
    from gpucost.plot import to_svg
    assert to_svg(gpucost.plot.cost_per_effective_gpu_hour(few, "consumer")) == to_svg(
        gpucost.plot.cost_per_effective_gpu_hour(few, "consumer", top=None))
    with pytest.raises(gpucost.InvalidInputError, match="no 'cost' column"):
        gpucost.plot.cost_per_effective_gpu_hour(table.drop(columns="cost"), "consumer")


CHECK = """<script>
(function () {
  var out = {errors: window.__errors, charts: []};
  document.querySelectorAll('figure.chart').forEach(function (f) {
    var svg = f.querySelector('svg'), box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    var drawn = svg ? Array.prototype.filter.call(svg.querySelectorAll('path'), function (p) {
      var b = p.getBBox(); return (p.getAttribute('d') || '').length > 10 && (b.width > 0 || b.height > 0);
    }).length : 0;
    out.charts.push({key: f.dataset.chart, width: box.width, height: box.height, drawn: drawn,
                     texts: svg ? svg.querySelectorAll('text').length : 0});
  });
  out.sections = document.querySelectorAll('section').length;
  out.cards = Array.prototype.map.call(document.querySelectorAll('section'), function (s) {
    return {id: s.id, scroll: s.scrollWidth, client: s.clientWidth};
  });
  out.tables = Array.prototype.map.call(document.querySelectorAll('table.data'), function (t) {
    var box = t.closest('.scroll'), card = t.closest('section');
    return {key: t.dataset.key, width: t.getBoundingClientRect().width, box: box ? box.clientWidth : -1,
            overflow: box ? getComputedStyle(box).overflowX : '', card: card.clientWidth};
  });
  out.width = document.documentElement.scrollWidth;
  var pre = document.createElement('pre'); pre.id = 'gpucost-check';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
})();
</script>"""


@pytest.mark.skipif(services.chromium() is None, reason="Debian's chromium is not installed (make test installs it)")
def test_renders_in_chromium(built, tmp_path):
    r, path = built
    page = r.html.replace("<head>", "<head><script>window.__errors=[];window.addEventListener('error',function(e)"
                          "{window.__errors.push(String(e.message||(e.target&&e.target.outerHTML)))},true);</script>", 1)
    result = in_chromium(page, CHECK, tmp_path, width=1280, screenshot_of=path)
    assert result["errors"] == []
    expected = {"spend_over_time", "allocated_vs_idle", "spend_by_group", "cost_per_effective_gpu_hour",
                "utilisation_distribution"}
    assert {c["key"] for c in result["charts"]} == expected
    for chart in result["charts"]:
        assert chart["width"] > 300 and chart["height"] > 100, chart
        assert chart["drawn"] >= 5 and chart["texts"] >= 5, chart
    assert result["sections"] == len(r.sections)
    assert result["width"] <= 1280  # nothing wider than the window


def in_chromium(page: str, script: str, tmp_path, *, width: int, screenshot_of=None) -> dict:
    """What ``script`` measured of ``page`` in headless Chromium (the JSON it
    leaves in <pre id="gpucost-check">), at ``width`` px; then a screenshot
    of ``screenshot_of`` (default: the page), which must show something."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", script + "</body>"))
    common = [services.chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--disable-extensions", "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}",
              f"--window-size={width},1000"]
    proc = subprocess.run([*common, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r'<pre id="gpucost-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, proc.stdout[-2000:]
    shot = tmp_path / "report.png"
    proc = subprocess.run([*common, "--hide-scrollbars", f"--screenshot={shot}", (screenshot_of or probe).as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.stat().st_size > 20_000, proc.stderr[-2000:]
    return json.loads(html.unescape(match.group(1)))


def test_idle_and_spot_sections_are_the_analyses_results(fleet, built):
    r, path = built
    if not hasattr(gpucost, "find_idle"):
        pytest.skip("gpucost.find_idle is not in this build")
    findings = gpucost.find_idle(fleet.usage, fleet.costs, fleet.inventory, fleet.workloads).findings
    findings = findings.sort_values("dollars_wasted", ascending=False, ignore_index=True)
    cells = pd.DataFrame(parse(path.read_text()).tables["idle"])
    np.testing.assert_allclose(cells["dollars_wasted"], findings["dollars_wasted"].head(20), rtol=1e-15)
    np.testing.assert_allclose(cells["hours"], findings["hours"].head(20), rtol=1e-15)
    # The forgotten weekend instance is among them: every GPU idle, nobody holding one.
    forgotten = fleet.resources.loc[fleet.resources["role"] == "forgotten", "resource_id"].iloc[0]
    row = findings[findings["resource_id"] == forgotten].iloc[0]
    assert row["action"] == "terminate" and row["hours"] >= 60
    runs = pd.DataFrame(parse(path.read_text()).tables["spot"])
    jobs = r.data["spot_runs"].set_index("job")
    assert set(jobs.index) == {"resnet-sweep", "bert-finetune", "diffusion-ablation"}
    assert list(jobs.loc[["resnet-sweep", "bert-finetune", "diffusion-ablation"], "interrupted_attempts"]) == [2, 3, 1]
    assert runs["cost"].sum() == pytest.approx(jobs["cost"].sum(), rel=1e-12)
    # A spot job's cost is what the allocation charged its pods.
    alloc = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["job"])
    assert jobs.at["bert-finetune", "cost"] == pytest.approx(
        float(alloc.loc[alloc["job"] == "bert-finetune", "cost"].iloc[0]), rel=1e-12)


def test_commitment_and_budget_sections_are_the_analyses_results(fleet, tmp_path):
    if not hasattr(gpucost, "budget_status"):
        pytest.skip("the purchasing analyses are not in this build")
    r = gpucost.report(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, bill=fleet.bill,
                       budgets=fleet.budgets, rates=fleet.rates, today="2026-03-20", interval=fleet.interval,
                       analyses=["commitments", "advice", "budgets"])
    assert not r.omitted, r.omitted
    tables = parse(r.html).tables
    used = gpucost.commitment_utilization(fleet.bill, freq="MS")
    pd.testing.assert_frame_equal(r.data["commitment_utilization"], used)
    cells = pd.DataFrame(tables["commitments"])
    np.testing.assert_allclose(cells["utilization"], used["utilization"], rtol=1e-15)
    # The reserved instance idle during the 3-day stop (672 of 744 hours used); the savings plan sized too big.
    assert {round(u, 6) for u in used["utilization"]} == {round(672 / 744, 6), round(4.8288 / 5.5, 6)}
    by_day = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team", "period"],
                              freq="D", interval=fleet.interval)
    status = gpucost.budget_status(by_day, fleet.budgets, "2026-03-20")
    pd.testing.assert_frame_equal(r.data["budget_status"], status)
    np.testing.assert_allclose(pd.DataFrame(tables["budgets"])["forecast"], status["forecast"], rtol=1e-15)
    assert "forecast over" in set(status["status"]) or "over" in set(status["status"])
    advice = gpucost.advise_commitments(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads,
                                        rates=fleet.rates, interval=fleet.interval)
    pd.testing.assert_frame_equal(r.data["commitment_advice"], advice)
    training = advice[(advice["instance_type"] == "p4d.24xlarge") & (advice["class"] == "training")]
    assert set(training["purchase"]) <= {"spot", "on_demand", "savings_plan"}  # never a reservation for bursts


def test_money_ticks_show_cents_where_the_amounts_are_small():
    from gpucost.plot import _money_tick
    # A cost-per-effective-GPU-hour axis read "$0 $0 $0 $1 $1 $1"; now the step decides the decimals.
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]
    assert [_money_tick(v, ticks) for v in ticks] == ["$0.00", "$0.25", "$0.50", "$0.75", "$1.00", "$1.25"]
    assert [_money_tick(v, [0, 0.2, 0.4]) for v in (0.2, 0.4)] == ["$0.20", "$0.40"]  # cents, not dimes
    assert [_money_tick(v, [0, 500, 1000]) for v in (500, 1000)] == ["$500", "$1,000"]
    assert [_money_tick(v, [0, 20_000, 40_000]) for v in (20_000, 40_000)] == ["$20k", "$40k"]


def test_the_report_reconciles_to_the_invoice_with_tagged_and_shared_costs(fleet):
    """The demo month plus its non-GPU lines: a volume tagged team=llm
    ($123.45), a shared VPC ($678.90) and an untagged bucket ($10.01)."""
    start, end = fleet.costs["start"].min(), fleet.costs["end"].max()
    extra = pd.DataFrame({"resource_id": ["vol-llm", "vpc-shared", "s3-misc"], "start": start, "end": end,
                          "cost": [123.45, 678.90, 10.01], "list_cost": [123.45, 678.90, 10.01],
                          "tags": ['{"team": "llm"}', None, None]})
    costs = pd.concat([fleet.costs.assign(tags=None), extra], ignore_index=True)
    r = gpucost.report(costs, fleet.usage, fleet.inventory, fleet.workloads, interval=fleet.interval,
                       analyses=["invoice"], tag="team", shared={"resource_id": "vpc-shared"})
    assert "invoice" not in r.omitted, r.omitted
    top = r.data["invoice"].set_index("part")["amount"]
    bill = costs["cost"].sum()
    assert round(top.sum(), 2) == round(bill, 2)  # the invoice, to the cent
    assert top.sum() == pytest.approx(bill, rel=1e-12)
    assert top["Tagged lines attributed"] == pytest.approx(123.45)
    assert top["Shared costs distributed"] == pytest.approx(678.90)
    # Unattributed: the demo's GPU lines outside the inventory, plus the untagged bucket.
    before = gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, by=["team"],
                              interval=fleet.interval).set_index("team")["cost"]
    assert top["Unattributed"] == pytest.approx(before["__unattributed__"] + 10.01)
    assert top["Idle GPU capacity"] == pytest.approx(before["__idle__"])
    teams = r.data["invoice_by_team"].set_index("team")
    assert teams.loc["llm", "tagged_cost"] == pytest.approx(123.45)
    assert teams.loc["llm", "gpu_cost"] == pytest.approx(before["llm"])
    assert teams["shared_cost"].sum() == pytest.approx(678.90)
    assert teams["cost"].sum() == pytest.approx(bill, rel=1e-12)
    # The page shows both tables, each with a total row equal to the bill.
    cells = parse(r.html).tables
    assert pd.DataFrame(cells["invoice"])["amount"].sum() == pytest.approx(bill, rel=1e-12)


def test_assumed_utilisation_is_shown_apart_and_out_of_the_headline():
    """Issue 23, item 4. A Slurm job without telemetry (team nlp) holds the 4
    GPUs of gpu01 (32.00) for an hour, assumed 100 % busy; DCGM measures a pod
    of nlp at 50 % on gpu05 (4.00) and one of vision at 25 % on gpu04 (8.00).
    Measured: nlp 0.5 effective of 1 GPU-hour (50 %, 4.00 / 0.5 = 8.00 per
    effective GPU-hour), vision 25 % (32.00); the fleet 0.75 / 2 = 37.5 % (with
    the assumed hours it would read 4.75 / 6 = 79.2 %), (44 - 32) / 0.75 =
    16.00 per effective GPU-hour. The 4 assumed GPU-hours (32.00) are shown
    apart and labelled."""
    hour = pd.Timestamp("2026-03-01T10:00Z")
    usage = pd.DataFrame({"timestamp": [hour] * 6, "resource_id": ["gpu01"] * 4 + ["gpu05", "gpu04"],
                          "device": [0, 1, 2, 3, 0, 0], "consumer": ["1001"] * 4 + ["m2", "m1"], "share": 1.0,
                          "util": [1.0] * 4 + [0.5, 0.25], "mem_used": 0.0, "duration": 3600.0})
    workloads = pd.DataFrame({"consumer": ["1001", "m2", "m1"], "team": ["nlp", "nlp", "vision"],
                              "utilization_source": ["assumed", "measured", "measured"]})
    costs = pd.DataFrame({"resource_id": ["gpu01", "gpu05", "gpu04"], "start": [hour] * 3,
                          "end": [hour + pd.Timedelta(hours=1)] * 3, "cost": [32.0, 4.0, 8.0]})
    inventory = pd.DataFrame({"resource_id": ["gpu01"] * 4 + ["gpu05", "gpu04"], "device": [0, 1, 2, 3, 0, 0],
                              "mem_capacity": 40 * 2.0**30})
    r = gpucost.report(costs, usage, inventory, workloads, by=["team"], analyses=[], interval=3600)
    table = r.data["showback_table"].set_index("team")
    nlp, vision = table.loc["nlp"], table.loc["vision"]
    assert (nlp["cost"], nlp["gpu_hours"], nlp["assumed_gpu_hours"]) == pytest.approx((36.0, 5.0, 4.0))
    assert (nlp["effective_gpu_hours"], nlp["utilisation"]) == pytest.approx((0.5, 0.5))
    assert nlp["cost_per_effective_gpu_hour"] == pytest.approx(8.0)
    assert nlp["utilization_source"] == "mixed"
    assert (vision["utilisation"], vision["cost_per_effective_gpu_hour"]) == pytest.approx((0.25, 32.0))
    assert vision["utilization_source"] == "measured" and vision["assumed_gpu_hours"] == 0.0
    kpi = r.data["kpis"].iloc[0]
    assert kpi["utilisation"] == pytest.approx(0.375)
    assert kpi["cost_per_effective_gpu_hour"] == pytest.approx(16.0)
    assert (kpi["assumed_gpu_hours"], kpi["assumed_cost"]) == pytest.approx((4.0, 32.0))
    cells = parse(r.html)
    assert cells.kpis["GPU utilisation"] == "37.5%"
    assert cells.kpis["Assumed busy, not measured"] == "4 GPU-h"
    assert "79.2%" not in r.html
    text = re.sub(r"<[^>]+>", "", r.html)
    assert "busy 50.0% of the measured time they were held, $8.00 per effective GPU-hour (4.0 GPU-hours of jobs " \
           "without telemetry, assumed busy, are left out)" in text
    assert "4.0 GPU-hours ($32) were held by jobs without telemetry (Slurm accounting): their utilisation is assumed" \
        in text
    shown = pd.DataFrame(parse(r.html).tables["showback"]).set_index(table.index)
    assert shown.loc["nlp", "utilisation"] == pytest.approx(0.5)
    assert shown.loc["nlp", "assumed_gpu_hours"] == pytest.approx(4.0)
    # A team only on Slurm without telemetry has no measured utilisation at all.
    only = gpucost.report(costs.iloc[:1], usage.iloc[:4], inventory.iloc[:4], workloads.iloc[:1], by=["team"],
                          analyses=[], interval=3600)
    row = only.data["showback_table"].set_index("team").loc["nlp"]
    assert row["utilization_source"] == "assumed" and np.isnan(row["utilisation"])
    assert "its utilisation was not measured (4.0 GPU-hours of jobs without telemetry, assumed busy)" in only.html
    assert np.isnan(only.data["kpis"].iloc[0]["utilisation"])


def test_report_command_takes_today_as_budget_does(tmp_path):
    """Issue 23, item 9: `gpucost report --today` sets the budgets' day; a
    day outside the data is refused as `gpucost budget` refuses it."""
    from gpucost import cli
    out = tmp_path / "r.html"
    assert cli.main(["report", "--demo", "--no-progress", "--today", "2026-03-10", "-o", str(out)]) == 0
    assert "Month to date on Mar 10" in out.read_text()
    assert cli.main(["report", "--demo", "--no-progress", "--today", "2026-05-01", "-o", str(out)]) == 2


def test_a_spot_section_without_a_job_label_says_which_label_it_looked_for(fleet):
    r = gpucost.report(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads.drop(columns="job"),
                       interval=fleet.interval, analyses=["spot"])
    assert "no 'job' label in the workloads table" in r.omitted["spot"]
    assert "labels there: team" in r.omitted["spot"]


# ---- a month at fleet scale (issue 29, item 4): 256 GPUs, ~600 pods, 24 projects, monthly fee lines ----

PROJECTS = [f"{team}/{name}" for team, name in zip(
    ["vision", "nlp", "recsys", "research", "platform"] * 5,
    ["detector-retraining-nightly", "llm-pretraining-7b", "ranking-features-v2", "diffusion-ablations",
     "inference-gateway", "segmentation-eval", "instruction-tuning", "embeddings-refresh", "rl-from-feedback",
     "batch-scoring", "ocr-distillation", "speech-to-text-large", "two-tower-retrieval", "world-models",
     "notebook-pool", "video-tracking", "multilingual-eval", "session-based-recs", "scaling-laws",
     "gpu-burn-in", "satellite-imagery", "code-assistant", "ads-ctr-calibration", "protein-folding"])]


def month_fleet():
    """October at EKS-fleet scale from the simulator: 256 GPUs (32 p4d) billed hourly for 31 days,
    hourly samples, 24 projects, pods renamed mid-month as deployments roll (about 600), and the
    month's support, tax, credit and RI-fee lines (each spanning the whole month) plus a $0.00 tax line."""
    from gpucost.simulate import simulate_fleet
    fleet = simulate_fleet(gpus=256, hours=24 * 31, interval=3600, start="2026-10-01", strings="object")
    usage, workloads = fleet.usage, fleet.workloads
    # Two pods in three are replaced on the 16th: a new name, the same labels.
    codes = pd.factorize(usage["consumer"])[0]
    rolled = (codes % 3 != 0) & (usage["consumer"] != "").to_numpy() & (
        usage["timestamp"] >= pd.Timestamp("2026-10-16", tz="UTC")).to_numpy()
    usage = usage.assign(consumer=np.where(rolled, usage["consumer"] + "-r2", usage["consumer"]))
    workloads = pd.concat([workloads, workloads.assign(consumer=workloads["consumer"] + "-r2")], ignore_index=True)
    workloads = workloads[workloads["consumer"].isin(set(usage["consumer"]))]
    project = PROJECTS * (len(workloads) // len(PROJECTS) + 1)
    order = pd.factorize(workloads["project"])[0]
    workloads = workloads.assign(project=[project[i % len(PROJECTS)] for i in order])
    workloads = workloads.assign(team=workloads["project"].str.split("/").str[0]).reset_index(drop=True)
    month = pd.Timestamp("2026-10-01", tz="UTC"), pd.Timestamp("2026-11-01", tz="UTC")
    fees = pd.DataFrame({"resource_id": ["", "", "", "arn:aws:ec2:us-east-1:123456789012:reserved-instances/ri-1", ""],
                         "start": month[0], "end": month[1],
                         "cost": [15_000.0, 52_118.40, -12_000.0, 20_000.0, 0.0]})  # support, tax, credit, RI fee
    costs = pd.concat([fleet.costs, fees.assign(list_cost=fees["cost"])], ignore_index=True)
    return costs, usage, fleet.inventory, workloads


@pytest.fixture(scope="module")
def month_report():
    costs, usage, inventory, workloads = month_fleet()
    return gpucost.report(costs, usage, inventory, workloads, interval=3600, title="October"), costs, workloads


def test_the_month_fixture_is_fleet_scale(month_report):
    r, costs, workloads = month_report
    assert r.data["kpis"].at[0, "gpu_hours"] == pytest.approx(256 * 24 * 31)
    assert 550 <= workloads["consumer"].nunique() <= 700
    assert len(r.data["projects_table"]) >= 24 and workloads["project"].nunique() == 24


def test_month_tables_have_no_empty_rows_and_add_up(month_report):
    r, costs, _ = month_report
    for key, rows in parse(r.html).tables.items():
        for row in rows:
            assert not row or any(v != 0 and np.isfinite(v) for v in row.values()), (key, row)
    shown = pd.DataFrame(parse(r.html).tables["showback"])
    assert shown["cost"].sum() == pytest.approx(float(costs["cost"].sum()), rel=1e-12)  # money in = money out


def test_an_empty_row_is_left_out_with_a_note():
    frame = pd.DataFrame({"team": ["a", "__unobserved__", "b"], "cost": [5.0, 0.0, 2.5],
                          "gpu_hours": [1.0, 0.0, np.nan]})
    table = html_table(frame, money=["cost"], hours=["gpu_hours"], total=["cost"])
    assert "__unobserved__" not in table and "$7.50" in table
    assert "1 row with nothing in it (every amount and quantity zero) not shown." in table


def test_month_idle_figures_are_reconciled(month_report):
    r, _, _ = month_report
    by_team = r.data["by_team"].set_index("team")
    bridge = r.data["idle_reconciliation"]
    # The bridge starts at the headline and its rows add up to the idle section's total.
    assert bridge.at[0, "amount"] == by_team.at["__idle__", "cost"]
    assert bridge["amount"].sum() == pytest.approx(r.data["idle_findings"]["dollars_wasted"].sum(), rel=1e-12)
    assert bridge.at[0, "amount"] != pytest.approx(bridge["amount"].sum(), rel=1e-3)  # they differ at this scale
    assert "the table below reconciles the two" in r.html
    assert parse(r.html).kpis["Idle GPU capacity"] == f"${by_team.at['__idle__', 'cost']:,.0f}"


def test_month_fee_lines_are_spread_in_the_daily_charts(month_report):
    r, costs, _ = month_report
    daily = r.data["by_team_day_charted"].groupby("period")["cost"].sum()
    assert len(daily) == 31 and daily.sum() == pytest.approx(float(costs["cost"].sum()), rel=1e-12)
    assert daily.max() / daily.median() < 1.05  # no spike on the 1st: the fleet bills the same every day
    first = r.data["by_team_day"].groupby("period")["cost"].sum()
    assert first.iloc[0] / first.median() > 2  # as the allocation counts them (a line on its first day)
    assert "5 lines longer than a day ($75,118.40" in r.html and "spread over their days" in r.html




def test_a_month_by_pod_names_the_largest_pods_each_in_its_own_color():
    """About 600 pods (by = ["consumer"], as the CLI's month by pod): the daily chart names the 12 largest, in
    12 distinct hues (not the palette's 12 hues cycled over 600 names), then Other, then the reserved rows."""
    costs, usage, inventory, _ = month_fleet()  # no workloads table: the CLI's grouping is then the consumer
    r = gpucost.report(costs, usage, inventory, None, interval=3600, by=["consumer"], analyses=[])
    svg = r.html[r.html.index('data-chart="spend_over_time"'):]
    legend = svg[svg.index('id="legend_1"'):svg.index("</svg>")]
    labels = re.findall(r"<text[^>]*>([^<]+)</text>", legend)
    fills = re.findall(r"fill: (#[0-9a-f]{6})", legend)
    pods = r.data["by_team"]
    pods = pods[~pods["consumer"].isin(list(gpucost.plot.RESERVED_LABELS))]
    assert len(pods) > 500 and set(labels[:12]) == set(pods.nlargest(12, "cost")["consumer"])
    assert labels[12] == f"Other ({len(pods) - 12} groups)"
    assert labels[13:] == ["Idle capacity", "Not on a GPU (storage, network, commitments)"]
    assert len(set(fills[:12])) == 12 and fills[12:] == ["#9aa5b1", "#c9c9c9", "#8c8c8c"]


@pytest.mark.skipif(services.chromium() is None, reason="Debian's chromium is not installed (make test installs it)")
def test_month_tables_fit_their_cards_in_chromium_at_1400_px(month_report, tmp_path):
    r, _, _ = month_report
    fit = in_chromium(r.html, CHECK, tmp_path, width=1400)
    assert fit["width"] <= 1400
    assert {t["key"] for t in fit["tables"]} >= {"showback", "projects", "idle", "idle_reconciliation", "invoice"}
    for card in fit["cards"]:
        assert card["scroll"] <= card["client"], card  # nothing sticks out of a card
    for table in fit["tables"]:
        assert table["overflow"] == "auto" and table["box"] <= table["card"], table  # in a scroll box the card holds
        assert table["width"] <= table["box"] + 0.5, table  # and at 1,400 px it needs no scrolling: it fits
