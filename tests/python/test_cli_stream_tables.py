"""The CLI streams gpucost's own usage table (issue 29, item 1): a month of
samples in Parquet or CSV, read a chunk of rows at a time
(plan.iter_table) into an Allocator that takes chunks in any order (the rows
are not promised in time order). The result and stderr equal the in-memory
path's to 1e-9, and the table is never held whole. Without a ``duration``
column and a stated step the whole read infers the interval from every
series: that table is read whole, not streamed."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pandas as pd
import pytest

import gpucost
from gpucost import cli, plan

DAYS = 31
START = pd.Timestamp("2026-03-01", tz="UTC")
HOSTS = ["node-a", "node-b"]
OFFLINE = "node-c"  # billed, no samples: its dollars on __unobserved__, a warning
STEP = 600
CHUNK = 4000  # rows per chunk in these tests (the default is about a million)


def samples(duration: bool) -> pd.DataFrame:
    """Two nodes of two GPUs, a sample every 10 minutes for a month, three
    consumers taking turns and idle instants; rows shuffled (no time order)."""
    rng = np.random.default_rng(29)
    times = pd.date_range(START, periods=DAYS * 86400 // STEP, freq=f"{STEP}s")
    rows = pd.DataFrame([(h, g) for h in HOSTS for g in range(2)], columns=["resource_id", "device"])
    frame = rows.merge(pd.DataFrame({"timestamp": times}), how="cross")
    blocks = frame["timestamp"].dt.floor("6h").rank(method="dense").astype(int) + frame["device"] * 7
    frame["consumer"] = np.array(["train", "infer", "007"])[blocks % 3]  # each GPU's holder for 6 hours
    frame["share"] = 1.0
    frame["util"] = rng.uniform(0, 1, len(frame)).round(3)
    frame["mem_used"] = rng.uniform(0, 80, len(frame)).round(1) * 2**30
    frame = frame[rng.uniform(0, 1, len(frame)) > 0.1]  # some instants idle
    if duration:
        frame["duration"] = float(STEP)
    return frame.sample(frac=1.0, random_state=29)[
        ["timestamp", "resource_id", "device", "consumer", "share", "util", "mem_used"]
        + (["duration"] if duration else [])].reset_index(drop=True)


def write(folder, usage: pd.DataFrame, name: str, step: int | None = None):
    days = pd.date_range(START, periods=DAYS, freq="D")
    costs = pd.DataFrame([{"resource_id": h, "start": d, "end": d + pd.Timedelta(days=1), "cost": 48.0 + i}
                          for i, h in enumerate(HOSTS + [OFFLINE]) for d in days])
    costs.to_csv(folder / "costs.csv", index=False)
    pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30}
                  for h in HOSTS + [OFFLINE] for g in range(2)]).to_csv(folder / "inventory.csv", index=False)
    if name.endswith(".parquet"):
        usage.to_parquet(folder / name, index=False, row_group_size=CHUNK * 2)
    else:
        usage.to_csv(folder / name, index=False)
    config = folder / f"{name}.toml"
    config.write_text(f'[sources]\ncosts = "costs.csv"\ninventory = "inventory.csv"\nusage = "{name}"\n'
                      + (f"step = {step}\n" if step else "") + '\n[policy]\nby = ["consumer"]\n')
    return config


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("stream_tables")
    with_duration, without = samples(True), samples(False)
    return {"parquet": write(out, with_duration, "usage.parquet"),  # a duration column: streams, no step
            "csv": write(out, without, "usage.csv", step=STEP),  # no duration, the step stated: streams
            "bare": write(out, without, "bare.csv"),  # neither: read whole (the interval from every series)
            "dir": out}


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of CHUNK rows, and a record of what the Allocator was given."""
    monkeypatch.setattr(plan, "_TABLE_CHUNK_ROWS", CHUNK)
    seen = {"added": [], "ordered": []}
    add, init = gpucost.Allocator.add, gpucost.Allocator.__init__
    monkeypatch.setattr(gpucost.Allocator, "add", lambda self, chunk: seen["added"].append(len(chunk)) or
                        add(self, chunk))
    monkeypatch.setattr(gpucost.Allocator, "__init__", lambda self, *a, **kw: seen["ordered"].append(
        kw.get("ordered_chunks")) or init(self, *a, **kw))
    return seen


def run(config, capsys, command="allocate") -> tuple[pd.DataFrame | str, str]:
    extra = ["--format", "csv", "--decimals", "raw"] if command == "allocate" else []
    code = cli.main([command, "-c", str(config), *extra])
    out, err = capsys.readouterr()
    if command != "allocate":
        return f"{code}\n{out}", err
    assert code == 0, err
    return pd.read_csv(StringIO(out), keep_default_na=False, na_values=[""], dtype={"consumer": str}), err


def equal(streamed: pd.DataFrame, whole: pd.DataFrame) -> None:
    streamed = streamed.sort_values("consumer").reset_index(drop=True)
    whole = whole.sort_values("consumer").reset_index(drop=True)
    assert list(streamed.columns) == list(whole.columns)
    assert streamed["consumer"].tolist() == whole["consumer"].tolist()
    for column in streamed.columns:
        if column != "consumer":
            np.testing.assert_allclose(streamed[column].astype(float), whole[column].astype(float), rtol=1e-9,
                                       atol=1e-9, err_msg=column)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_the_usage_table_streamed_equals_it_read_whole(folder, kind, capsys, monkeypatch, small_chunks):
    streamed, streamed_err = run(folder[kind], capsys)
    rows = len(plan.read_table(folder["dir"] / f"usage.{kind}", "usage"))
    # A chunk of rows at a time, in no promised order: the Allocator keeps its record of rows read twice (the
    # Parquet table's statistics and lines sampled from the CSV show the rows going back: no trial).
    assert small_chunks["ordered"] == [False]
    assert len(small_chunks["added"]) == -(-rows // CHUNK) and max(small_chunks["added"]) == CHUNK
    allocators = len(small_chunks["ordered"])
    monkeypatch.setattr(plan, "streams", lambda p: False)  # the in-memory path: the table read whole
    whole, whole_err = run(folder[kind], capsys)
    assert len(small_chunks["ordered"]) == allocators  # gpucost.allocate over the whole table, no Allocator
    assert streamed_err == whole_err and OFFLINE in streamed_err
    equal(streamed, whole)
    assert "007" in streamed["consumer"].tolist()  # ids and consumers read as text, whole or in chunks
    costs = pd.read_csv(folder["dir"] / "costs.csv")
    assert streamed["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-12)  # money conserved
    busy = streamed.loc[~streamed["consumer"].str.startswith("__"), "gpu_hours"].sum()
    assert busy == pytest.approx(rows * STEP / 3600, rel=1e-12)  # every sample counted once, across chunks


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_check_streams_the_usage_table_and_says_what_the_whole_read_says(folder, kind, capsys, monkeypatch,
                                                                        small_chunks):
    streamed, _ = run(folder[kind], capsys, "check")
    assert len(small_chunks["added"]) > 1
    monkeypatch.setattr(plan, "streams", lambda p: False)
    whole, _ = run(folder[kind], capsys, "check")
    assert streamed == whole and "samples" in streamed


def test_without_duration_or_step_the_table_is_read_whole(folder, capsys, small_chunks):
    """The whole read infers the interval from every series (the engine's
    inference); a chunk's might differ, so this table does not stream."""
    assert not plan.streams(plan.plan_sources(gpucost.config.load_config(str(folder["bare"]))))
    assert plan.streams(plan.plan_sources(gpucost.config.load_config(str(folder["csv"]))))
    assert plan.streams(plan.plan_sources(gpucost.config.load_config(str(folder["parquet"]))))
    bare, _ = run(folder["bare"], capsys)
    assert small_chunks["ordered"] == []  # gpucost.allocate over the table read whole
    stated, _ = run(folder["csv"], capsys)  # the same samples with the step stated: the inferred step is 600
    equal(bare, stated)


@pytest.mark.parametrize("name", ["usage.parquet", "usage.csv"])
def test_the_chunks_are_the_rows_read_whole(folder, name):
    path = folder["dir"] / name
    chunks = list(plan.iter_table(path, "usage", rows=CHUNK))
    assert len(chunks) > 3 and all(len(c) <= CHUNK for c in chunks)
    whole = plan.read_table(path, "usage")
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole, check_exact=True)


def test_a_bad_value_in_a_later_chunk_names_the_same_line(tmp_path):
    usage = samples(True).head(3 * CHUNK).copy()
    usage["util"] = usage["util"].astype(object)
    usage.loc[2 * CHUNK + 5, "util"] = "high"
    path = tmp_path / "usage.csv"
    usage.to_csv(path, index=False)
    with pytest.raises(gpucost.InvalidInputError) as whole:
        plan.read_table(path, "usage")
    with pytest.raises(gpucost.InvalidInputError) as streamed:
        list(plan.iter_table(path, "usage", rows=CHUNK))
    assert str(streamed.value) == str(whole.value) and f"line {2 * CHUNK + 7}" in str(whole.value)


@pytest.mark.parametrize("name", ["usage.csv", "usage.parquet"])
def test_a_bad_sample_in_a_later_chunk_names_its_file_and_line(tmp_path, capsys, name, small_chunks):
    """The engine refuses a sample of the third chunk; the CLI names the
    usage table's file and the sample's line (CSV, the header line 1) or row
    (Parquet), not the row counted over the stream."""
    usage = samples(True).head(3 * CHUNK).copy()
    usage.loc[2 * CHUNK + 5, "share"] = 1.5
    config = write(tmp_path, usage, name)
    code = cli.main(["allocate", "-c", str(config), "--format", "csv"])
    _, err = capsys.readouterr()
    assert len(small_chunks["added"]) == 3  # streamed: the error comes from the third chunk
    where = f"line {2 * CHUNK + 7}" if name.endswith(".csv") else f"row {2 * CHUNK + 5}"
    assert code == 2 and f"{tmp_path / name}: {where}, column 'share': 1.5 is outside (0, 1]" in err, err


def test_a_parquet_table_in_time_order_streams_its_row_groups_as_ordered_chunks(tmp_path, capsys, monkeypatch,
                                                                                 small_chunks):
    """The same month sorted by time (a lake's table): its row groups'
    statistics say the chunks never go back in time, so the Allocator is
    told so and gets a row group a chunk; the numbers are the whole read's."""
    config = write(tmp_path, samples(True).sort_values("timestamp", kind="stable"), "usage.parquet")
    streamed, streamed_err = run(config, capsys)
    assert small_chunks["ordered"] == [True]
    assert set(small_chunks["added"][:-1]) == {2 * CHUNK}  # row groups, not CHUNK-row batches
    monkeypatch.setattr(plan, "streams", lambda p: False)
    whole, whole_err = run(config, capsys)
    assert streamed_err == whole_err
    equal(streamed, whole)


def test_a_csv_table_in_time_order_is_read_once_as_ordered_chunks(tmp_path, capsys, monkeypatch, small_chunks):
    """The month sorted by time as CSV: nothing says so before reading, so
    the Allocator is told it on trial; no chunk goes back, so the file is
    read once and no record of earlier chunks' rows is kept. Sorted but for
    a day appended at the end, lines sampled from it show it going back: no
    trial; and where the sampled lines miss it, the trial fails at that day
    and the file is read again from the start. The numbers are the whole
    read's every way."""
    by_time = samples(True).sort_values("timestamp", kind="stable")
    config = write(tmp_path, by_time, "usage.csv")
    streamed, streamed_err = run(config, capsys)
    chunks = -(-len(by_time) // CHUNK)
    assert small_chunks["ordered"] == [True] and len(small_chunks["added"]) == chunks
    monkeypatch.setattr(plan, "streams", lambda p: False)
    whole, whole_err = run(config, capsys)
    assert streamed_err == whole_err
    equal(streamed, whole)
    monkeypatch.undo()  # streamed again, counted afresh below
    first_day = by_time["timestamp"] < START + pd.Timedelta(days=1)
    late = pd.concat([by_time[~first_day], by_time[first_day]])  # the first day's rows came in last
    config = write(tmp_path, late, "usage.csv")
    for sampled in (True, False):
        record = {"ordered": []}
        with monkeypatch.context() as patch:
            patch.setattr(plan, "_TABLE_CHUNK_ROWS", CHUNK)
            init = gpucost.Allocator.__init__
            patch.setattr(gpucost.Allocator, "__init__", lambda self, *a, **kw: record["ordered"].append(
                kw.get("ordered_chunks")) or init(self, *a, **kw))
            if not sampled:
                patch.setattr(plan, "csv_goes_back_in_time", lambda paths, block_size: False)
            streamed, _ = run(config, capsys)
        assert record["ordered"] == ([False] if sampled else [True, False])
        equal(streamed, whole)
