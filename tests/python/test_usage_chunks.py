"""gpucost.UsageChunks (issue 29): usage kept on disk a day at a time gives
what the same samples in one table give, to every reader of usage: the
allocations, find_idle and idle_policy (streamed), the utilisation
histogram (a chunk at a time), and anything else through the Arrow interface
(read whole)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpucost
from gpucost import prometheus
from gpucost.analyses import idle as idle_module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from prometheus_month import START_S, write_month  # noqa: E402  (the benchmark's generator, small)

DAYS = 3
DAY_NS = 86_400 * 10**9


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three days of answers (4 nodes of 2 GPUs, one in MIG mode) read whole,
    the same samples as one chunk per UTC day, and a bill by node and day
    with one node billed a day longer than it reports."""
    folder = tmp_path_factory.mktemp("chunks")
    answers = write_month(folder / "answers", days=DAYS, nodes=4, gpus_per_node=2, mig_nodes=1)
    usage = prometheus.read_query_range([str(p) for p in answers.files], step=60)
    hosts = sorted(map(str, usage["resource_id"].unique()))
    start = pd.Timestamp(START_S, unit="s", tz="UTC")
    days = pd.date_range(start, periods=DAYS + 1, freq="D")
    costs = pd.DataFrame([{"resource_id": h, "start": d, "end": d + pd.Timedelta(days=1), "cost": 40.0 + i}
                          for i, h in enumerate(hosts) for d in (days if i == 0 else days[:-1])])
    inventory = pd.DataFrame([{"resource_id": h, "device": g, "mem_capacity": 80 * 2**30} for h in hosts
                              for g in range(2)])
    day = (usage["timestamp"].astype("int64").to_numpy() - START_S * 10**9) // DAY_NS
    order = np.argsort(day, kind="stable")
    by_day = [usage.iloc[order[day[order] == d]].reset_index(drop=True) for d in range(DAYS)]
    chunks = gpucost.UsageChunks.spill(by_day)
    chunks.attrs = usage.attrs
    yield usage, chunks, costs, inventory
    chunks.close()


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    # The same samples in day order, not series order: sums may differ in their last bits.
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=False,
                                  rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("policy", [dict(by=["consumer"]), dict(by=["consumer", "period"], freq="D"),
                                    dict(by=["resource_id"], idle="share")])
def test_an_allocation_of_chunks_is_the_allocation_of_the_table(fleet, policy):
    usage, chunks, costs, inventory = fleet
    whole = gpucost.allocate(costs, usage, inventory, interval=60, **policy)
    streamed = gpucost.allocate(costs, chunks, inventory, interval=60, **policy)
    same(streamed, whole)
    assert streamed["cost"].sum() == pytest.approx(costs["cost"].sum(), rel=1e-12)  # money in == money out
    assert streamed.attrs["diagnostics"] == whole.attrs["diagnostics"]


# The fleet's MIG node has no DCGM_FI_PROF_GR_ENGINE_ACTIVE: find_idle says so (the next test checks it).
@pytest.mark.filterwarnings("ignore:.*without a utilisation field:gpucost.errors.JoinWarning")
def test_idle_spans_streamed_a_day_at_a_time_are_the_whole_reads(fleet, monkeypatch):
    usage, chunks, costs, inventory = fleet
    whole = gpucost.find_idle(usage, costs, inventory, interval=60)
    added = []
    real = idle_module._core.IdleStream

    class Counted:
        def __init__(self, *args):
            self._stream = real(*args)

        def add(self, columns, last=False):
            added.append(last)
            self._stream.add(columns, last)

        def finish(self):
            return self._stream.finish()

    monkeypatch.setattr(idle_module._core, "IdleStream", Counted)
    streamed = gpucost.find_idle(chunks, costs, inventory, interval=60)
    assert added == [False] * DAYS  # a day at a time, never the month
    assert len(whole.findings) > 0 and (whole.findings["action"] == "terminate").any()
    assert (whole.spans["kind"] == "release").any() and whole.spans["start"].dt.day.nunique() > 1
    for name in ("findings", "spans", "daily"):
        same(getattr(streamed, name), getattr(whole, name))
    assert streamed.diagnostics == whole.diagnostics
    same(gpucost.idle_policy(chunks, costs, inventory, interval=60),
         gpucost.idle_policy(usage, costs, inventory, interval=60))
    # Chunks that may go back in time (a host's log each, as nvidia-smi's) are cut into days first.
    added.clear()
    hosts = [usage[usage["resource_id"] == h] for h in reversed(inventory["resource_id"].unique())]
    with gpucost.UsageChunks.spill(hosts, ordered=False) as by_host:
        same(gpucost.find_idle(by_host, costs, inventory, interval=60).spans, whole.spans)
    assert added == [False] * DAYS


def test_mig_instances_without_a_utilisation_field_are_never_idle_and_said(fleet):
    """The MIG node's instances print memory only (no GR_ENGINE_ACTIVE): the
    reader marks their samples (``util_measured`` False, util 0), find_idle
    leaves that time out (no release or right-size span on them, no dollars
    wasted: the whole node is "no telemetry") and warns naming the GPUs;
    whole GPUs keep their findings."""
    usage, chunks, costs, inventory = fleet
    mig = usage.loc[usage["mig_profile"].astype(str) != "", "resource_id"].astype(str).unique()
    assert len(mig) == 1 and not usage.loc[usage["resource_id"] == mig[0], "util_measured"].any()
    assert usage.loc[usage["resource_id"] != mig[0], "util_measured"].all()
    for data in (usage, chunks):
        with pytest.warns(gpucost.JoinWarning, match=rf"2 GPUs \({mig[0]} GPU 0, {mig[0]} GPU 1\) have samples "
                                                     "without a utilisation field"):
            report = gpucost.find_idle(data, costs, inventory, interval=60)
        on_mig = report.findings[report.findings["resource_id"] == mig[0]]
        assert set(on_mig["action"]) == {"no telemetry"} and on_mig["dollars_wasted"].sum() == 0
        assert (report.findings.loc[report.findings["resource_id"] != mig[0], "dollars_wasted"] > 0).any()


def test_the_utilisation_histogram_of_chunks_is_the_tables(fleet):
    usage, chunks, _, _ = fleet
    workloads = pd.DataFrame({"consumer": sorted(c for c in map(str, usage["consumer"].unique()) if c)})
    workloads["team"] = workloads["consumer"].str.split("/").str[0]

    def bars(data):
        ax = gpucost.plot.utilisation_distribution(data, workloads, "team").axes[0]
        return [t.get_text() for t in ax.get_legend().get_texts()], [(p.get_x(), p.get_height()) for p in ax.patches]

    (names, whole), (names_chunked, chunked) = bars(usage), bars(chunks)
    assert names == names_chunked and len(names) > 1
    np.testing.assert_allclose(chunked, whole, rtol=1e-12)


def test_a_view_filters_each_chunk_and_resources_are_read_alone(fleet):
    usage, chunks, costs, inventory = fleet
    holders = usage["consumer"].astype(str) != ""
    view = chunks.map(lambda chunk: chunk[chunk["consumer"].astype(str) != ""])
    assert sum(len(chunk) for chunk in view) == int(holders.sum())
    same(gpucost.allocate(costs, view, inventory, interval=60), gpucost.allocate(costs, usage[holders], inventory,
                                                                                   interval=60))
    host = str(usage["resource_id"].iloc[0])
    alone = chunks.of_resources({host})
    assert len(alone) == int((usage["resource_id"] == host).sum()) == chunks.samples_per_resource()[host]
    assert set(alone["resource_id"].astype(str)) == {host}


def test_anything_else_reads_the_chunks_whole_through_arrow(fleet):
    usage, chunks, _, _ = fleet
    table = pa.table(chunks)
    assert table.num_rows == len(usage) == len(chunks)
    assert table.column("util").to_numpy().sum() == pytest.approx(usage["util"].sum(), rel=1e-12)
    whole = chunks.whole()
    assert len(whole) == len(usage) and whole.attrs == chunks.attrs
    assert isinstance(whole["consumer"].dtype, pd.CategoricalDtype)


def test_chunks_that_go_back_in_time_are_refused_and_files_are_deleted(fleet, tmp_path):
    usage, chunks, costs, inventory = fleet
    days = list(chunks)
    assert not gpucost.UsageChunks.spill(days[::-1], folder=tmp_path).ordered  # found going back
    backwards = gpucost.UsageChunks.spill(days[::-1], folder=tmp_path, ordered=True)  # a promise broken
    folder = Path(backwards._paths[0]).parent
    with pytest.raises(gpucost.InvalidInputError, match="newest instant of an earlier chunk"):
        gpucost.allocate(costs, backwards, inventory, interval=60)
    unordered = gpucost.UsageChunks.spill(days[::-1], folder=tmp_path, ordered=False)
    same(gpucost.allocate(costs, unordered, inventory, interval=60),
         gpucost.allocate(costs, usage, inventory, interval=60))
    view = backwards.map(lambda chunk: chunk)
    del backwards
    assert folder.exists() and sum(len(chunk) for chunk in view) == len(usage)  # a view keeps the files
    del view
    assert not folder.exists()
    unordered.close()
    assert os.listdir(tmp_path) == []


def test_the_order_of_chunks_is_found_from_their_instants(fleet, tmp_path):
    """Told nothing, spill finds whether the chunks keep time order (each
    one's first instant at or after the newest before it), so they stream
    as ordered chunks and the idle pass does not cut them into days again."""
    usage, chunks, costs, inventory = fleet
    assert chunks.ordered and chunks.by_day() is chunks  # the fixture's days, found in order
    hours = pd.date_range("2026-03-01", periods=6, freq="h", tz="UTC")
    frame = pd.DataFrame({"timestamp": hours, "resource_id": "a", "device": 0, "consumer": "x", "share": 1.0,
                          "util": 0.5, "mem_used": 0.0})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    in_seconds = table.set_column(0, "timestamp", table.column("timestamp").cast(pa.timestamp("s", "UTC")))
    null_times = table.set_column(0, "timestamp", pa.nulls(6, pa.timestamp("ns", "UTC")))
    far_future = in_seconds.slice(3, 1).set_column(0, "timestamp", pa.array([253402300799], pa.timestamp("s", "UTC")))
    cases = {
        "a tie at the boundary": ([frame.iloc[:3], frame.iloc[2:]], True),
        "units differ, order kept": ([in_seconds.slice(0, 3), table.slice(3)], True),
        "an empty chunk and one of nulls between": ([frame.iloc[:3], frame.iloc[:0], null_times, frame.iloc[3:]],
                                                    True),
        "the second chunk starts before the first ends": ([frame.iloc[::2], frame.iloc[1::2]], False),
        "back after a later chunk": ([frame.iloc[:2], frame.iloc[4:], frame.iloc[2:4]], False),
        "instants as text": ([frame.astype({"timestamp": str})], False),
        "an instant past what nanoseconds hold, last": ([in_seconds.slice(0, 3), far_future], True),
    }
    for name, (frames, ordered) in cases.items():
        with gpucost.UsageChunks.spill(frames, folder=tmp_path) as spilled:
            assert spilled.ordered is ordered, name
    with gpucost.UsageChunks.spill([frame.iloc[3:], frame.iloc[:3]], folder=tmp_path, ordered=False) as told:
        assert told.ordered is False
    assert os.listdir(tmp_path) == []
    # Hosts' chunks overlap in time: found unordered, they give the whole table's allocation.
    hosts = [usage[usage["resource_id"] == h] for h in usage["resource_id"].unique()]
    with gpucost.UsageChunks.spill(hosts, folder=tmp_path) as by_host:
        assert not by_host.ordered
        same(gpucost.allocate(costs, by_host, inventory, interval=60),
             gpucost.allocate(costs, usage, inventory, interval=60))


def test_the_histograms_are_numpys_and_a_workload_may_be_its_own_group():
    """One weighted count for every group: np.histogram's bins ([a, b), the last [a, b]; values outside
    left out), on util values at the edges; by="consumer" with a workloads table groups by workload."""
    rng = np.random.default_rng(3)
    util = np.concatenate([rng.random(500), [0.0, 0.05, 0.5, 0.95, 1.0, 1.2, -0.1, np.nan]])
    usage = pd.DataFrame({"consumer": rng.choice(["a", "b", "c", ""], len(util)), "util": util,
                          "share": rng.random(len(util)), "duration": 60.0})
    workloads = pd.DataFrame({"consumer": ["a", "b", "c"], "team": ["x", "x", "y"]})
    ax = gpucost.plot.utilisation_distribution(usage, workloads, by="consumer", bins=20).axes[0]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["a", "b", "c"]
    heights = np.asarray([p.get_height() for p in ax.patches]).reshape(3, 20)
    held = usage[usage["consumer"] != ""]
    expected, _ = np.histogram(held["util"], bins=np.linspace(0, 1, 21), weights=held["share"] * 60 / 3600)
    np.testing.assert_allclose(heights.sum(axis=0), expected, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:.*without a utilisation field:gpucost.errors.JoinWarning")
def test_a_bad_row_is_named_as_the_usage_counts_it(fleet):
    """A bad value in the second day, after MIG samples the idle pass leaves
    out: the error names its row counted over the days, those samples
    included, as the Allocator names it."""
    usage, chunks, costs, inventory = fleet
    days = list(chunks)
    bad = days[1].copy()
    row = int(np.flatnonzero(bad["util_measured"].to_numpy())[-1])  # a measured sample after unmeasured ones
    bad.loc[row, "share"] = 1.5
    with gpucost.UsageChunks.spill([days[0], bad, *days[2:]]) as broken:
        with pytest.raises(gpucost.InvalidInputError, match=rf"^usage: row {len(days[0]) + row}, column 'share'"):
            gpucost.find_idle(broken, costs, inventory, interval=60)
        with pytest.raises(gpucost.InvalidInputError, match=rf"^usage: row {len(days[0]) + row}, column 'share'"):
            gpucost.allocate(costs, broken, inventory, interval=60)
