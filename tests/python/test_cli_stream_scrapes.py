"""The CLI streams a directory of dcgm-exporter scrapes, with a stated step or not
(issue 29, item 1): a UTC day of scrapes at a time, in time order, into an
Allocator told its chunks never go back in time. The result and stderr equal
the in-memory path's, which reads every scrape at once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpucost import cli, plan
from stream_cli import assert_same_showback, record_allocators, run_allocate, run_check

START = pd.Timestamp("2026-03-01", tz="UTC")
DAYS = 3
STEP = 1800
HOSTS = ["node-a", "node-b"]
OFFLINE = "node-c"  # billed, never scraped: its dollars on __unobserved__


def scrape(host: str, at: pd.Timestamp, rng: np.random.Generator) -> str:
    """One scrape of a 2-GPU node: each GPU's holder changes every 6 hours,
    GPU 1 of node-b is free before noon."""
    lines = []
    for gpu in range(2):
        labels = f'gpu="{gpu}",UUID="GPU-{host}-{gpu}",modelName="NVIDIA A100-SXM4-80GB",Hostname="{host}"'
        pod = ["train", "infer", "007"][(at.hour // 6 + gpu) % 3]
        if not (host == "node-b" and gpu == 1 and at.hour < 12):
            labels += f',namespace="ml",pod="{pod}"'
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {int(rng.integers(0, 101))}")
        lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} {int(rng.integers(0, 80000))}")
    return "\n".join(lines) + "\n"


def bill_files(folder, hosts: list) -> None:
    """costs.csv (a day's line per host and day, $48, $49, ... a day) and
    inventory.csv (2 GPUs a host) of ``hosts`` and OFFLINE."""
    hosts = list(hosts) + [OFFLINE]
    days = pd.date_range(START, periods=DAYS, freq="D")
    pd.DataFrame([{"resource_id": h, "start": d, "end": d + pd.Timedelta(days=1), "cost": 48.0 + i}
                  for i, h in enumerate(hosts) for d in days]).to_csv(folder / "costs.csv", index=False)
    pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30}
                  for h in hosts for g in range(2)]).to_csv(folder / "inventory.csv", index=False)


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scrapes")
    rng = np.random.default_rng(29)
    (folder / "scrapes").mkdir()
    for at in pd.date_range(START, periods=DAYS * 86400 // STEP, freq=f"{STEP}s"):
        for host in HOSTS:
            if rng.uniform() < 0.05:  # a missed scrape
                continue
            (folder / "scrapes" / f"{host}-{at:%Y%m%dT%H%M%SZ}.prom").write_text(scrape(host, at, rng))
    bill_files(folder, HOSTS)
    path = folder / "gpucost.toml"
    path.write_text(f'[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\ndcgm_text = "scrapes"\n'
                    f'step = {STEP}\n\n[policy]\nby = ["consumer"]\n')
    return path


def test_a_scrape_directory_with_a_step_streams_a_day_at_a_time(config, capsys, monkeypatch):
    seen = record_allocators(monkeypatch)
    streamed, streamed_err = run_allocate(config, capsys)
    assert seen == {"added": DAYS, "ordered": [True]}  # a UTC day a chunk, in time order
    monkeypatch.setattr(plan, "streams", lambda p: False)  # the in-memory path: every scrape at once
    whole, whole_err = run_allocate(config, capsys)
    assert streamed_err == whole_err and OFFLINE in streamed_err
    assert_same_showback(streamed, whole)
    assert streamed["cost"].sum() == pytest.approx(48.0 * DAYS + 49.0 * DAYS + 50.0 * DAYS, rel=1e-12)


def test_check_streams_the_scrapes_and_says_what_the_whole_read_says(config, capsys, monkeypatch):
    streamed = run_check(config, capsys)
    monkeypatch.setattr(plan, "streams", lambda p: False)
    assert streamed == run_check(config, capsys) and "samples" in streamed


def test_a_wrong_step_is_refused_streamed_or_whole(config, capsys, monkeypatch):
    """Scrapes every 30 minutes with step = 60: each scrape would stand for a
    minute and 97 % of the bill go idle with exit 0. The step is the
    allocation's interval, so every series' spacing is checked against it."""
    wrong = config.with_name("wrong.toml")
    wrong.write_text(config.read_text().replace(f"step = {STEP}", "step = 60"))
    for streamed in (True, False):
        if not streamed:
            monkeypatch.setattr(plan, "streams", lambda p: False)
        code = cli.main(["allocate", "-c", str(wrong)])
        err = capsys.readouterr().err
        assert code == 2 and "but the interval is 60 s (given)" in err and "the series (resource_id 'node-" in err


def assert_streamed_as_whole(config, capsys, monkeypatch) -> None:
    """allocate and check streamed (a UTC day a chunk, in time order) say
    what the whole read says, to 1e-9."""
    seen = record_allocators(monkeypatch)
    streamed, streamed_err = run_allocate(config, capsys)
    assert seen == {"added": DAYS, "ordered": [True]}
    streamed_check = run_check(config, capsys)
    monkeypatch.setattr(plan, "streams", lambda p: False)
    whole, whole_err = run_allocate(config, capsys)
    assert streamed_err == whole_err and OFFLINE in streamed_err
    assert_same_showback(streamed, whole)
    assert streamed_check == run_check(config, capsys) and "samples" in streamed_check


def unstated_folder(folder, spacing: dict, jitter: int = 0) -> None:
    """Scrapes of every host in ``spacing`` (host -> seconds apart, or a
    function of the day giving them) over DAYS days, each scrape up to
    ``jitter`` seconds early or late, 5 % missed; the bill and inventory as
    above; no step stated."""
    rng = np.random.default_rng(2929)
    (folder / "scrapes").mkdir()
    for host, every in spacing.items():
        for day in range(DAYS):
            seconds = every(day) if callable(every) else every
            for at in pd.date_range(START + pd.Timedelta(days=day), periods=86400 // seconds, freq=f"{seconds}s"):
                if rng.uniform() < 0.05:
                    continue
                at += pd.Timedelta(seconds=int(rng.integers(-jitter, jitter + 1))) if jitter else pd.Timedelta(0)
                (folder / "scrapes" / f"{host}-{at:%Y%m%dT%H%M%SZ}.prom").write_text(scrape(host, at, rng))
    bill_files(folder, list(spacing))
    (folder / "gpucost.toml").write_text('[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\n'
                                         'dcgm_text = "scrapes"\n\n[policy]\nby = ["consumer"]\n')


@pytest.fixture(scope="module")
def unstated(tmp_path_factory):
    """Scrapes every half hour, each up to 40 s early or late, no step stated."""
    folder = tmp_path_factory.mktemp("unstated")
    unstated_folder(folder, {host: STEP for host in HOSTS}, jitter=40)
    return folder / "gpucost.toml"


def test_scrapes_without_a_step_stream_at_the_first_days_spacing(unstated, capsys, monkeypatch):
    """Without a step the scrapes stream a UTC day at a time too, each
    standing for the first day's spacing. The whole read takes the same
    interval (it reads the days as the stream does), so jittered scrapes,
    whose spacing differs from day to day (1806, 1798 and 1804 s here, 1805 s
    over the month), give the same numbers."""
    first = plan.read_plan(plan.plan_sources(cli.load_config(unstated)), stream=True).stream
    assert [f.attrs["telemetry"]["spacing_seconds"] for f in first] == [first.interval] * DAYS
    assert_streamed_as_whole(unstated, capsys, monkeypatch)
    whole_tables = plan.read_plan(plan.plan_sources(cli.load_config(unstated)))
    assert whole_tables.interval == first.interval and "duration" not in whole_tables.usage.columns
    assert abs(first.interval - STEP) <= 40  # the first day's spacing, jitter and all


def test_a_scrape_rate_that_changes_later_is_refused_streamed_or_whole(tmp_path, capsys, monkeypatch):
    """Scrapes every 30 minutes on the first day and every 5 minutes later:
    each later scrape would stand for 30 minutes, without a step stated as
    with a wrong one. The day is refused, naming a series of it."""
    unstated_folder(tmp_path, {host: (lambda day: STEP if day == 0 else 300) for host in HOSTS})
    for streamed in (True, False):
        if not streamed:
            monkeypatch.setattr(plan, "streams", lambda p: False)
        code = cli.main(["allocate", "-c", str(tmp_path / "gpucost.toml")])
        err = capsys.readouterr().err
        assert code == 2 and "the scrapes of 2026-03-02 are 300 s apart" in err, err
        assert "the series (resource_id 'node-" in err and "but the interval is 1800 s (the first day's" in err


def test_one_series_spaced_unlike_the_interval_is_refused_streamed_or_whole(tmp_path, capsys, monkeypatch):
    """A host scraped every 90 minutes among hosts scraped every 30: each
    day's spacing is the interval, and the engine refuses the series spaced
    more than 2x from it, streamed or whole."""
    unstated_folder(tmp_path, {"node-a": STEP, "node-b": STEP, "node-d": STEP, "node-e": 3 * STEP})
    for streamed in (True, False):
        if not streamed:
            monkeypatch.setattr(plan, "streams", lambda p: False)
        code = cli.main(["allocate", "-c", str(tmp_path / "gpucost.toml")])
        err = capsys.readouterr().err
        assert code == 2 and "but the interval is 1800 s (given)" in err, err
        assert "the series (resource_id 'node-e'" in err


def jobstats_scrape(host: str, at: pd.Timestamp, rng: np.random.Generator) -> str:
    """One scrape of Princeton jobstats' GPU exporter on a 2-GPU node: each
    GPU's job changes every 6 hours, GPU 1 of node-b is free before noon."""
    lines = []
    for gpu in range(2):
        labels = f'minor_number="{gpu}",name="NVIDIA A100-SXM4-80GB",uuid="GPU-{host}-{gpu}"'
        job = 0 if host == "node-b" and gpu == 1 and at.hour < 12 else 7000 + (at.hour // 6 + gpu) % 3
        lines += [f"nvidia_gpu_duty_cycle{{{labels}}} {int(rng.integers(0, 101))}",
                  f"nvidia_gpu_memory_used_bytes{{{labels}}} {int(rng.integers(0, 80 * 2**30))}",
                  f"nvidia_gpu_jobId{{{labels}}} {job}"]
    return "\n".join(lines) + "\n"


def jobstats_folder(folder, step) -> tuple:
    """jobstats scrapes of every host every 30 minutes over DAYS days (5 %
    missed), the bill and inventory as above, ``step`` stated (None: not);
    the config and the GPU-hours the jobs held (30 minutes a sample)."""
    rng = np.random.default_rng(31)
    (folder / "jobstats").mkdir()
    held = 0.0
    for at in pd.date_range(START, periods=DAYS * 86400 // STEP, freq=f"{STEP}s"):
        for host in HOSTS:
            if rng.uniform() >= 0.05:  # else a missed scrape
                (folder / "jobstats" / f"{host}.{at:%Y%m%dT%H%M%SZ}.prom").write_text(jobstats_scrape(host, at, rng))
                held += (1 if host == "node-b" and at.hour < 12 else 2) * STEP / 3600
    bill_files(folder, HOSTS)
    stated = "" if step is None else f"step = {step}\n"
    config = folder / "gpucost.toml"
    config.write_text(f'[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\n'
                      f'jobstats = "jobstats/*.prom"\n{stated}\n[policy]\nby = ["consumer"]\n')
    return config, held


@pytest.mark.parametrize("step", [None, STEP])
def test_jobstats_scrapes_stream_a_day_at_a_time(tmp_path, capsys, monkeypatch, step):
    """jobstats scrapes (each standing for the step, else the first day's
    spacing, as dcgm-exporter's) stream a UTC day at a time, in time order,
    to the numbers and words of the whole read."""
    config, _ = jobstats_folder(tmp_path, step)
    assert_streamed_as_whole(config, capsys, monkeypatch)


def test_jobstats_scrapes_without_a_step_stand_for_their_spacing(tmp_path, capsys, monkeypatch):
    """jobstats scrapes every 30 minutes, no step stated: each stands for 30
    minutes (it stood for 60 s: 1/30 of the GPU-hours, exit 0), streamed or
    whole, and the interval is the first day's spacing."""
    config, held = jobstats_folder(tmp_path, None)
    tables = plan.read_plan(plan.plan_sources(cli.load_config(config)), stream=True)
    assert [f.attrs["telemetry"]["spacing_seconds"] for f in tables.stream] == [STEP] * DAYS
    whole_tables = plan.read_plan(plan.plan_sources(cli.load_config(config)))
    assert whole_tables.interval == STEP and "duration" not in whole_tables.usage.columns
    for streamed in (True, False):
        if not streamed:
            monkeypatch.setattr(plan, "streams", lambda p: False)
        showback, _ = run_allocate(config, capsys)
        jobs = showback[showback["consumer"].str.fullmatch(r"700[0-2]")]
        assert len(jobs) == 3 and jobs["gpu_hours"].sum() == pytest.approx(held, rel=1e-9)


@pytest.mark.parametrize("streamed", [True, False])
def test_a_wrong_jobstats_step_is_refused_naming_a_series(tmp_path, capsys, monkeypatch, streamed):
    """jobstats scrapes every 30 minutes with step = 60: each scrape stood
    for a minute with exit 0. The step is the allocation's interval, so
    every series' spacing is checked against it, streamed or whole."""
    config, _ = jobstats_folder(tmp_path, 60)
    if not streamed:
        monkeypatch.setattr(plan, "streams", lambda p: False)
    code = cli.main(["allocate", "-c", str(config)])
    err = capsys.readouterr().err
    assert code == 2 and "but the interval is 60 s (given)" in err and "the series (resource_id 'node-" in err, err
