"""``gpucost report`` and the analyses over saved Prometheus answers (issue
29): the month is read a UTC day at a time into :class:`gpucost.UsageChunks`
on disk (the columns they never read left out), read back a day at a time
by each allocation and by find_idle, and every
table of the report, every analysis' rows and the page itself are those of
the month read whole."""

from __future__ import annotations

import re
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
import pytest

import gpucost
from gpucost import cli, plan, prometheus

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from prometheus_month import START_S, write_month  # noqa: E402  (the benchmark's generator, small)

DAYS = 4
# The budgets' note on the support line (a line longer than a day is spread over its days), said in both paths.
pytestmark = pytest.mark.filterwarnings("ignore:costs. 1 lines span more than one day:UserWarning")
MONTH_START = pd.Timestamp(START_S, unit="s", tz="UTC")


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    """Four days of answers (3 nodes of 2 GPUs, one in MIG mode), a costs
    table billed by the day plus a support line over the whole span (cut at
    midnights in the charts), workloads (team, project; one pod unlabelled)
    and budgets by team."""
    folder = tmp_path_factory.mktemp("report_month")
    answers = write_month(folder / "answers", days=DAYS, nodes=3, gpus_per_node=2, mig_nodes=1)
    usage = prometheus.read_query_range([str(p) for p in answers.files], step=60)
    hosts = sorted(map(str, usage["resource_id"].unique()))
    days = pd.date_range(MONTH_START, periods=DAYS, freq="D")
    lines = [{"resource_id": h, "start": d, "end": d + pd.Timedelta(days=1), "cost": 48.0 + i,
              "primary": True} for i, h in enumerate(hosts) for d in days]
    lines.append({"resource_id": hosts[0], "start": days[0], "end": days[-1] + pd.Timedelta(days=1), "cost": 100.0,
                  "primary": False})  # support: it bills no GPU time of its own
    pd.DataFrame(lines).to_csv(folder / "costs.csv", index=False)
    pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30} for h in hosts
                  for g in range(2)]).to_csv(folder / "inventory.csv", index=False)
    pods = sorted(c for c in map(str, usage["consumer"].unique()) if c)
    workloads = pd.DataFrame({"consumer": pods, "team": [p.split("/")[0] for p in pods],
                              "project": [p.split("/")[1].rsplit("-", 1)[0] for p in pods]})
    workloads.loc[0, "team"] = ""  # a pod without a team: the tagging gaps
    workloads.to_csv(folder / "workloads.csv", index=False)
    teams = sorted(t for t in workloads["team"].unique() if t)
    pd.DataFrame({"key": "team", "value": teams, "amount": 300.0}).to_csv(folder / "budgets.csv", index=False)
    (folder / "gpucost.toml").write_text(
        '[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\ntelemetry = "answers/*.json"\n'
        'workloads = "workloads.csv"\nstep = 60\n\n[policy]\nby = ["team", "project"]\n\n'
        '[budgets]\nfile = "budgets.csv"\n')
    return folder


def whole_read(monkeypatch) -> None:
    """The path before issue 29's report part: the month read whole."""
    monkeypatch.setattr(cli, "_chunked_tables", cli._tables)


REPORT = gpucost.report


def report(month, tmp_path, capsys, monkeypatch) -> tuple[object, pd.DataFrame, str]:
    """The report the CLI builds, the usage it was given, and its page and stderr (the page's clock left out)."""
    made = []

    def keep(costs, usage, *args, **kwargs):
        made.append((REPORT(costs, usage, *args, **kwargs), usage))
        return made[-1][0]

    monkeypatch.setattr(gpucost, "report", keep)
    out = tmp_path / "report.html"
    code = cli.main(["report", "-c", str(month / "gpucost.toml"), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    page = re.sub(r"Made by gpucost \S+ on [^.]*\.", "", out.read_text())
    # Each cell's full-precision value to 12 digits (a sum's last bit may differ: see below); the text shown as is.
    page = re.sub(r'data-value="([-+0-9.e]+)"', lambda m: f'data-value="{float(m[1]):.12g}"', page)
    return made[0][0], made[0][1], page + err


def test_the_report_read_a_day_at_a_time_is_the_report_read_whole(month, tmp_path, capsys, monkeypatch):
    streamed, usage, streamed_page = report(month, tmp_path, capsys, monkeypatch)
    # The month in chunks on disk, a day each, without the columns no section reads.
    assert isinstance(usage, gpucost.UsageChunks) and usage.chunks == DAYS
    assert not set(cli._UNREAD_SAMPLE_COLUMNS) & set(usage.columns)
    whole_read(monkeypatch)
    whole, whole_usage, whole_page = report(month, tmp_path, capsys, monkeypatch)
    assert "gpu_uuid" in whole_usage.columns and len(whole_usage) == len(usage)
    assert {"tagging", "budgets", "idle"} <= {s.key for s in whole.sections}
    assert "by_team_day_charted" in whole.data  # the support line is cut at midnights in the charts
    assert list(streamed.data) == list(whole.data)
    for key, table in whole.data.items():
        # The same samples in another row order (day by day, not series by series): a sum over a team's pods
        # may differ in its last bit, nothing more.
        pd.testing.assert_frame_equal(streamed.data[key], table, check_exact=False, rtol=1e-13, atol=1e-12, obj=key)
    assert streamed.omitted == whole.omitted
    assert streamed_page == whole_page


@pytest.mark.parametrize("command", ["idle", "budget"])
def test_an_analysis_read_a_day_at_a_time_is_the_analysis_read_whole(month, capsys, monkeypatch, command):
    def run() -> tuple[str, str]:
        code = cli.main([command, "-c", str(month / "gpucost.toml"), "--format", "csv", "--decimals", "raw"])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out, err

    streamed = run()
    whole_read(monkeypatch)
    whole = run()
    assert len(pd.read_csv(StringIO(whole[0]))) > 0
    assert streamed == whole
    if command == "idle":  # the MIG nodes print no GR_ENGINE_ACTIVE: left out of idle detection, and said
        assert "gpucost idle: warning: " in streamed[1] and "without a utilisation field" in streamed[1]
        assert streamed[1].count("without a utilisation field") == 1


def test_check_says_how_many_samples_have_no_utilisation(month, capsys):
    code = cli.main(["check", "-c", str(month / "gpucost.toml")])
    out = capsys.readouterr().out
    assert code == 0 and re.search(r"[\d,]+ of them without a utilisation field \(MIG instances", out)


def test_an_unstated_step_streams_with_the_first_days_spacing(month, monkeypatch):
    """Without a step the interval is the first day's spacing, as ``allocate`` streams it."""
    config = gpucost.config.load_config(month / "gpucost.toml")
    del config.sources["step"]
    tables = cli._chunked_tables(config, cli.build_parser().parse_args(["idle"]))
    assert isinstance(tables.usage, gpucost.UsageChunks) and tables.usage.chunks == DAYS
    assert tables.interval == 60.0 and config.policy["interval"] == 60.0


def test_the_daily_chart_makes_no_empty_bar_and_keeps_every_bars_axes():
    """A month by pod is thousands of groups of a few days each: spend_over_time makes no bar of height 0
    past the first group, and its axes' limits are those of every bar made (the stacks' bottoms stay sticky)."""
    rng = np.random.default_rng(7)
    days = pd.date_range("2026-03-01", periods=9, freq="D", tz="UTC")
    rows = [(f"pod-{p}", d, abs(float(rng.normal(30, 30)))) for p in range(40) for d in days if rng.random() < 0.3]
    rows += [("credit", days[3], -50.0)] + [("__idle__", d, 0.0) for d in days]  # idle: 0 on top of every stack
    by_day = pd.DataFrame(rows, columns=["team", "period", "cost"])
    fig = gpucost.plot.spend_over_time(by_day, top=None)  # every group its own series
    ax = fig.axes[0]
    groups = [display for display in (t.get_text() for t in ax.get_legend().get_texts())]
    table = by_day.pivot_table(index="period", columns="team", values="cost", aggfunc="sum", fill_value=0.0)
    table = table[[{"Idle capacity": "__idle__"}.get(g, g) for g in groups]]
    every = Figure().subplots()  # every bar, as before issue 29
    x = table.index.tz_convert(None)
    bottom = np.zeros(len(table))
    for group in table.columns:
        every.bar(x, table[group].to_numpy(), bottom=bottom, width=0.8 * pd.Timedelta(days=1), linewidth=0)
        bottom += table[group].to_numpy()
    assert ax.get_ylim() == every.get_ylim() and ax.get_xlim() == every.get_xlim()
    bars = sorted((p.get_x(), p.get_y(), p.get_height()) for p in ax.patches if p.get_height())
    assert bars == sorted((p.get_x(), p.get_y(), p.get_height()) for p in every.patches if p.get_height())
    assert len(ax.patches) < len(every.patches) / 2


def test_check_notes_a_stated_step_the_answers_do_not_have(month, capsys):
    """step = 45 over answers at 60 s: each sample counts its own gap, so the
    numbers do not change (the step is only checked within 2x), and check
    says so, exit 0: a note, not a problem."""
    config = month / "step45.toml"
    config.write_text((month / "gpucost.toml").read_text().replace("step = 60", "step = 45"))
    assert "step = 45" in config.read_text()
    code = cli.main(["check", "-c", str(config)])
    out = capsys.readouterr().out
    assert code == 0 and "the step stated is 45 s, the series are spaced 60 s" in out
    code = cli.main(["check", "-c", str(month / "gpucost.toml")])
    assert code == 0 and "the step stated" not in capsys.readouterr().out
