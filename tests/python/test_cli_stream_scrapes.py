"""The CLI streams a directory of dcgm-exporter scrapes with a stated step
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
    days = pd.date_range(START, periods=DAYS, freq="D")
    pd.DataFrame([{"resource_id": h, "start": d, "end": d + pd.Timedelta(days=1), "cost": 48.0 + i}
                  for i, h in enumerate(HOSTS + [OFFLINE]) for d in days]).to_csv(folder / "costs.csv", index=False)
    pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30}
                  for h in HOSTS + [OFFLINE] for g in range(2)]).to_csv(folder / "inventory.csv", index=False)
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
