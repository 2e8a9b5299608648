"""The CLI streams a month of saved Prometheus answers (issue 29, item 1):
one TOML config, the month of the benchmark's generator at test size (31
days, 2 nodes of 2 GPUs, one of them in MIG mode), allocated a UTC day at a
time. The result equals the in-memory path's to 1e-9 with the same
warnings, and the month is never held: the reader is called per day with
that day's files (and the next day's, for the look-ahead)."""

from __future__ import annotations

import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli, plan, prometheus

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from prometheus_month import START_S, write_month  # noqa: E402  (the benchmark's generator, small)

DAYS = 31
MONTH_START = pd.Timestamp(START_S, unit="s", tz="UTC")
OFFLINE = "ip-10-9-9-99.ec2.internal"  # billed, no telemetry: $ on __unobserved__, a warning


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    """The answers, a costs table (each node $24 a GPU-day, billed by the
    day; one node without telemetry), the inventory and the config."""
    folder = tmp_path_factory.mktemp("stream_month")
    answers = write_month(folder / "answers", days=DAYS, nodes=2, gpus_per_node=2, mig_nodes=1)
    hosts = [f"ip-10-0-0-{10 + n}.ec2.internal" for n in range(2)] + [OFFLINE]
    days = pd.date_range(MONTH_START, periods=DAYS, freq="D")
    costs = pd.DataFrame([{"resource_id": h, "start": d, "end": d + pd.Timedelta(days=1), "cost": 48.0 + i}
                          for i, h in enumerate(hosts) for d in days])
    costs.to_csv(folder / "costs.csv", index=False)
    inventory = pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30}
                              for h in hosts for g in range(2)])
    inventory.to_csv(folder / "inventory.csv", index=False)
    (folder / "gpucost.toml").write_text(
        '[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\ntelemetry = "answers/*.json"\nstep = 60\n\n'
        '[policy]\nby = ["consumer"]\n')
    return {"folder": folder, "files": [str(p) for p in answers.files], "costs": costs, "inventory": inventory}


def run(month, capsys, *extra) -> tuple[pd.DataFrame, str]:
    code = cli.main(["allocate", "-c", str(month["folder"] / "gpucost.toml"), "--format", "csv", "--decimals", "raw",
                     *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return pd.read_csv(StringIO(out), keep_default_na=False, na_values=[""]), err


def equal(streamed: pd.DataFrame, whole: pd.DataFrame, skip=()) -> None:
    streamed = streamed.sort_values("consumer").reset_index(drop=True)
    whole = whole.sort_values("consumer").reset_index(drop=True)
    assert list(streamed.columns) == list(whole.columns)
    assert streamed["consumer"].astype(str).tolist() == whole["consumer"].astype(str).tolist()
    for column in streamed.columns:
        if column != "consumer" and column not in skip:
            np.testing.assert_allclose(streamed[column].astype(float), whole[column].astype(float), rtol=1e-9,
                                       atol=1e-9, err_msg=column)


def test_the_month_streamed_equals_the_month_in_memory(month, capsys, monkeypatch):
    streamed, streamed_err = run(month, capsys)
    monkeypatch.setattr(plan, "streams", lambda p: False)  # the in-memory path: the month read whole
    whole, whole_err = run(month, capsys)
    # The same warnings, once each: the join report is built once, from the merged reader report.
    assert streamed_err == whole_err
    assert streamed_err.count("__unobserved__") == 1 and "$1,550.00" in streamed_err  # 31 days x $50
    equal(streamed, whole, skip=("mem_gib_hours",))
    assert streamed["cost"].sum() == pytest.approx(month["costs"]["cost"].sum(), rel=1e-12)  # money conserved
    # The allocated basis reads no memory series: the column is empty, not zero.
    assert streamed["mem_gib_hours"].isna().all() and whole["mem_gib_hours"].sum() > 0


def test_the_month_streamed_equals_python_read_whole(month, capsys):
    streamed, _ = run(month, capsys)
    usage = gpucost.prometheus.read_query_range(month["files"], step=60)
    with gpucost.join.checks(False):
        whole = gpucost.allocate(month["costs"], usage, month["inventory"], interval=60)
    equal(streamed, whole[list(streamed.columns)], skip=("mem_gib_hours",))


def test_the_cli_never_holds_the_month(month, capsys, monkeypatch):
    """Structure, not timing: the reader is called once per day with that
    day's two files and the next day's two, the allocator fed per day."""
    calls, added = [], []
    read = prometheus._answers_usage
    monkeypatch.setattr(prometheus, "_answers_usage", lambda files, *a: calls.append(list(files)) or read(files, *a))
    add = gpucost.Allocator.add
    monkeypatch.setattr(gpucost.Allocator, "add", lambda self, chunk: added.append(len(chunk)) or add(self, chunk))
    promised = []
    init = gpucost.Allocator.__init__
    monkeypatch.setattr(gpucost.Allocator, "__init__",
                        lambda self, *a, **kw: promised.append(kw.get("ordered_chunks")) or init(self, *a, **kw))
    run(month, capsys)
    assert promised == [True]  # the days in time order: no record of earlier days' rows is kept
    assert len(calls) == DAYS and len(added) == DAYS
    assert max(len(files) for files in calls) <= 4 and all(len(files) >= 2 for files in calls)
    days = [sorted({Path(f).stem.rsplit("_", 1)[1] for f in files}) for files in calls]
    assert days[0] == ["01", "02"] and days[-1] == [f"{DAYS}"]
    assert max(added) < sum(added) / DAYS * 1.5  # a day's samples per chunk, not the month's


def test_days_read_apart_are_the_samples_read_whole(month):
    whole = gpucost.prometheus.read_query_range(month["files"], step=60, basis="allocated")
    parts = list(gpucost.prometheus.iter_query_range(month["files"], step=60, basis="allocated"))
    assert len(parts) == DAYS
    days = [set(p["timestamp"].dt.floor("D")) for p in parts]
    assert all(len(d) == 1 for d in days)
    key = ["timestamp", "resource_id", "device", "consumer"]
    streamed = pd.concat(parts, ignore_index=True).astype({"resource_id": str, "consumer": str})
    streamed = streamed.sort_values(key).reset_index(drop=True)
    expected = whole.astype({"resource_id": str, "consumer": str}).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(streamed[key + ["share", "util", "duration", "mem_used"]],
                                  expected[key + ["share", "util", "duration", "mem_used"]], check_exact=True)
    report = prometheus.merge_telemetry([p.attrs["telemetry"] for p in parts])
    assert report["samples"] == len(whole) and report["spacing_seconds"] == 60.0


def test_a_wrong_step_is_refused_on_the_first_file(month):
    with pytest.raises(gpucost.InvalidInputError, match="step=300"):
        next(iter(gpucost.prometheus.iter_query_range(month["files"], step=300)))


def test_a_spacing_beyond_the_look_ahead_is_an_error_not_a_shorter_duration(month):
    with pytest.raises(gpucost.InvalidInputError, match="look-ahead"):
        list(gpucost.prometheus.iter_query_range(month["files"], lookahead=30))


def test_check_streams_and_says_what_the_whole_month_says(month, capsys, monkeypatch):
    """`gpucost check` allocates the month a day at a time too: every line it prints (samples, series, range,
    the join report) equals the in-memory check's, and the reader never holds more than a day's files."""
    config = str(month["folder"] / "gpucost.toml")
    calls = []
    real = prometheus.iter_query_range

    def counting(*args, **kwargs):
        for frame in real(*args, **kwargs):
            calls.append(len(frame))
            yield frame
    monkeypatch.setattr(prometheus, "iter_query_range", counting)
    streamed_code = cli.main(["check", "-c", config])
    streamed = capsys.readouterr().out
    assert len(calls) == DAYS
    monkeypatch.setattr(plan, "streams", lambda _plan: False)
    whole_code = cli.main(["check", "-c", config])
    whole = capsys.readouterr().out
    assert streamed == whole and streamed_code == whole_code
    assert "samples in" in streamed and OFFLINE in streamed


def test_focus_output_reads_the_month_whole_and_keeps_every_dollar(month, tmp_path, capsys):
    """--format focus splits each cost line by the month's samples: it reads them whole (not the stream's empty
    table), and its allocated charges add up to the bill."""
    out = tmp_path / "split.csv"
    code = cli.main(["allocate", "-c", str(month["folder"] / "gpucost.toml"), "--format", "focus", "--output",
                     str(out)])
    assert code == 0, capsys.readouterr().err
    written = pd.read_csv(out)
    assert written["BilledCost"].sum() == pytest.approx(month["costs"]["cost"].sum(), abs=1e-6)
    assert written["AllocatedMethodId"].notna().any()  # lines with telemetry were split
