"""gpucost.allocate_stream over chunked sources, and the faults it must
survive: bad rows named by file and line, truncated and corrupt files, a
full disk. Never a partial result, never a partial output file."""

from __future__ import annotations

import errno
import gzip
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import gpucost
import gpucost.chunks
import gpucost.stream
from gpucost.simulate import simulate_fleet
from reference import assert_frames_close


@pytest.fixture(scope="module", autouse=True)
def _engine_numbers_only():
    """These tests check the engine's numbers on any input (unobserved lines,
    unknown resources, random joins); the join rule is tested in test_join.py."""
    with gpucost.join.checks(False):
        yield

POLICY = dict(by=["team", "period"], freq="D", basis="used", idle="share")


@pytest.fixture(scope="module")
def fleet():
    return simulate_fleet(gpus=24, hours=6, seed=7)


@pytest.fixture(scope="module")
def expected(fleet):
    return gpucost.allocate(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, **POLICY)


def write_csv(frame: pd.DataFrame, path) -> None:
    """Usage as a telemetry exporter writes it: ISO instants, plain strings."""
    out = frame.assign(timestamp=frame["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       resource_id=frame["resource_id"].astype(str), consumer=frame["consumer"].astype(str))
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", newline="") as f:
            out.to_csv(f, index=False)
    else:
        out.to_csv(path, index=False)


def split_files(fleet, tmp_path, parts=3, suffix=".csv"):
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(fleet.usage)), parts)):
        path = tmp_path / f"usage-{k}{suffix if k else '.csv.gz'}"
        write_csv(fleet.usage.iloc[part], path)
        paths.append(path)
    return paths


def test_dataframe_chunks_equal_one_shot(fleet, expected):
    chunks = (fleet.usage.iloc[i:i + 5000] for i in range(0, len(fleet.usage), 5000))
    result = gpucost.allocate_stream(fleet.costs, chunks, fleet.inventory, fleet.workloads, **POLICY)
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]
    assert_frames_close(result.attrs["join"], expected.attrs["join"])


def test_sliced_frame_and_arrow_reader_equal_one_shot(fleet, expected):
    result = gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, chunk_rows=7777,
                                     **POLICY)
    assert_frames_close(result, expected)
    table = pa.Table.from_pandas(fleet.usage, preserve_index=False)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=10_000))
    assert_frames_close(gpucost.allocate_stream(fleet.costs, reader, fleet.inventory, fleet.workloads, **POLICY),
                        expected)


def test_csv_files_and_glob_equal_one_shot(fleet, expected, tmp_path):
    split_files(fleet, tmp_path)
    result = gpucost.allocate_stream(fleet.costs, str(tmp_path / "usage-*"), fleet.inventory, fleet.workloads,
                                     block_size=1 << 16, **POLICY)
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]
    assert_frames_close(result.attrs["join"], expected.attrs["join"])


def test_a_name_with_glob_characters_is_its_file_and_a_glob_is_expanded_once(fleet, expected, tmp_path,
                                                                              monkeypatch):
    """``usage[eu].csv`` is that file, not ``usageu.csv`` (which it matches
    as a glob); and the files a glob matched when the call began are the
    ones read, by the trial's second read too, though a new one appears."""
    by_time = fleet.usage.sort_values("timestamp", kind="stable").reset_index(drop=True)
    write_csv(by_time, tmp_path / "usage[eu].csv")
    write_csv(by_time.iloc[:10], tmp_path / "usageu.csv")  # a decoy the glob reading would pick
    assert gpucost.chunks.expand_paths(tmp_path / "usage[eu].csv") == [str(tmp_path / "usage[eu].csv")]
    result = gpucost.allocate_stream(fleet.costs, tmp_path / "usage[eu].csv", fleet.inventory, fleet.workloads,
                                     **POLICY)
    assert_frames_close(result, expected)
    late = tmp_path / "usage[eu]-late.csv"

    def a_file_appears(paths, block_size):
        write_csv(by_time.iloc[:10], late)
        return False

    monkeypatch.setattr(gpucost.stream, "csv_goes_back_in_time", a_file_appears)
    result = gpucost.allocate_stream(fleet.costs, str(tmp_path / "usage[[]eu]*.csv"), fleet.inventory,
                                     fleet.workloads, **POLICY)
    assert late.exists()
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]


def test_parquet_and_csv_tables(fleet, expected, tmp_path):
    pq.write_table(pa.Table.from_pandas(fleet.usage, preserve_index=False), tmp_path / "usage.parquet",
                   row_group_size=10_000)
    fleet.costs.to_csv(tmp_path / "costs.csv", index=False)
    fleet.inventory.to_csv(tmp_path / "inventory.csv", index=False)
    result = gpucost.allocate_stream(tmp_path / "costs.csv", [tmp_path / "usage.parquet"],
                                     tmp_path / "inventory.csv", fleet.workloads, chunk_rows=9000, **POLICY)
    assert_frames_close(result, expected)


def test_progress_bar(fleet, capsys):
    gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, progress=True, total=len(fleet.usage),
                            chunk_rows=10_000)
    err = capsys.readouterr().err
    assert "samples" in err and "gpucost" in err


def test_bad_row_names_file_and_line(fleet, tmp_path):
    paths = split_files(fleet, tmp_path)
    bad = pd.read_csv(paths[2])
    bad.loc[41, "share"] = 1.5
    bad.to_csv(paths[2], index=False)
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"^{paths[2]}: line 43, column 'share': 1.5 is outside \(0, 1\]$"):
        gpucost.allocate_stream(fleet.costs, sorted(map(str, paths)), fleet.inventory, block_size=1 << 14)


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_bad_row_after_blank_lines_names_its_line(fleet, tmp_path, suffix):
    # Readers skip blank lines; the line named is the file's, counted with them.
    path = tmp_path / f"usage{suffix}"
    write_csv(fleet.usage.iloc[:100], tmp_path / "plain.csv")
    lines = (tmp_path / "plain.csv").read_text().splitlines(keepends=True)
    cells = lines[61].split(",")
    cells[list(fleet.usage.columns).index("share")] = "1.5"
    lines[61] = ",".join(cells)
    text = "".join(lines[:10] + ["\n", "\r\n"] + lines[10:50] + ["\n"] + lines[50:])
    with (gzip.open if suffix.endswith(".gz") else open)(path, "wt") as out:
        out.write(text)
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"^{path}: line 65, column 'share': 1.5 is outside \(0, 1\]$") as caught:
        gpucost.allocate_stream(fleet.costs, path, fleet.inventory)
    assert caught.value.line == 65
    assert text.splitlines()[64].split(",")[list(fleet.usage.columns).index("share")] == "1.5"


def test_bad_value_type_names_file_and_line(fleet, tmp_path):
    path = tmp_path / "usage.csv"
    write_csv(fleet.usage.iloc[:100], path)
    bad = pd.read_csv(path)
    bad["device"] = bad["device"].astype(object)
    bad.loc[60, "device"] = "gpu0"
    bad.to_csv(path, index=False)
    with pytest.raises(gpucost.InvalidInputError, match=rf"^{path}: line 62, column 'device': 'gpu0' is not an integer$"):
        gpucost.allocate_stream(fleet.costs, path, fleet.inventory)


def test_bad_row_in_later_chunk_counts_rows_over_all_chunks(fleet):
    usage = fleet.usage.iloc[:3000].copy()
    usage.loc[usage.index[2500], "util"] = np.nan
    chunks = [usage.iloc[:1000], usage.iloc[1000:2000], usage.iloc[2000:]]
    with pytest.raises(gpucost.InvalidInputError, match=r"^usage: row 2500, column 'util'"):
        gpucost.allocate_stream(fleet.costs, chunks, fleet.inventory)
    # A conversion error (not numeric) too.
    usage = usage.iloc[:2000].copy()
    usage["device"] = usage["device"].astype(float)
    usage.loc[usage.index[1500], "device"] = 0.5
    with pytest.raises(gpucost.InvalidInputError, match=r"^usage: row 1500, column 'device'"):
        gpucost.allocate_stream(fleet.costs, [usage.iloc[:1000], usage.iloc[1000:]], fleet.inventory)


def test_allocator_refuses_to_finish_after_a_rejected_chunk(fleet):
    allocator = gpucost.Allocator(fleet.costs, fleet.inventory)
    allocator.add(fleet.usage.iloc[:100])
    with pytest.raises(gpucost.InvalidInputError):
        allocator.add(fleet.usage.iloc[100:200].assign(device="x"))
    with pytest.raises(gpucost.InvalidInputError, match="partial"):
        allocator.finish()


def hours_in_order(usage: pd.DataFrame) -> list[pd.DataFrame]:
    """The samples an hour at a time, in time order (no instant in two chunks)."""
    hours = usage["timestamp"].dt.floor("h")
    return [usage[hours == h] for h in sorted(hours.unique())]


def test_ordered_chunks_give_the_result_of_chunks_in_any_order(fleet, expected):
    allocator = gpucost.Allocator(fleet.costs, fleet.inventory, fleet.workloads, ordered_chunks=True, **POLICY)
    result = allocator.add_all(hours_in_order(fleet.usage)).finish()
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]


def test_ordered_chunks_refuse_a_chunk_back_in_time(fleet):
    hours = hours_in_order(fleet.usage)
    allocator = gpucost.Allocator(fleet.costs, fleet.inventory, fleet.workloads, ordered_chunks=True, **POLICY)
    allocator.add_all(hours[:3])
    rows = sum(len(h) for h in hours[:3])
    refused = rf"^usage: row {rows}, column 'timestamp': .* is before .*this chunk starts at row {rows}\)"
    with pytest.raises(gpucost.InvalidInputError, match=refused):
        allocator.add(hours[1])  # read again: without the promise, dropped as copies
    with pytest.raises(gpucost.InvalidInputError, match=refused):
        allocator.finish()


def test_allocate_stream_ordered_over_files_sorted_by_time(fleet, expected, tmp_path):
    """Files in time order, sliced where the rows fall (instants split between
    chunks): the same result; the files in the wrong order are refused at the
    first row of the one that goes back."""
    usage = fleet.usage.sort_values("timestamp", kind="stable").reset_index(drop=True)
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(usage)), 3)):
        paths.append(tmp_path / f"sorted-{k}.csv")
        write_csv(usage.iloc[part], paths[-1])
    result = gpucost.allocate_stream(fleet.costs, paths, fleet.inventory, fleet.workloads, chunk_rows=777,
                                     ordered_chunks=True, **POLICY)
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]
    with pytest.raises(gpucost.InvalidInputError, match=rf"^{paths[0]}: line 2, column 'timestamp': .* is before"):
        gpucost.allocate_stream(fleet.costs, [paths[1], paths[0]], fleet.inventory, ordered_chunks=True)


def record_trials(monkeypatch) -> dict:
    """Each Allocator's ordered_chunks, and how often allocate_stream read the usage."""
    seen = {"ordered": [], "reads": 0}
    init, iter_chunks = gpucost.Allocator.__init__, gpucost.stream.iter_chunks
    monkeypatch.setattr(gpucost.Allocator, "__init__",
                        lambda self, *a, **kw: seen["ordered"].append(kw.get("ordered_chunks")) or init(self, *a, **kw))

    def counted(*a, **kw):
        seen["reads"] += 1
        return iter_chunks(*a, **kw)

    monkeypatch.setattr(gpucost.stream, "iter_chunks", counted)
    return seen


@pytest.mark.parametrize("threads", [1, 2])
def test_usage_read_again_is_tried_in_time_order_first(fleet, expected, tmp_path, monkeypatch, threads):
    """Told nothing, files it can read again are taken as in time order (no
    record of earlier chunks' rows) while they are; at the first chunk that
    goes back in time the chunks before it are read again without the
    promise. Lines sampled from the files skip the trial where they show
    the order going back (a replica's file after the other). The numbers
    are the same every way, rows read twice across the files included."""
    seen = record_trials(monkeypatch)
    by_time = fleet.usage.sort_values("timestamp", kind="stable").reset_index(drop=True)
    write_csv(by_time, tmp_path / "sorted.csv")
    write_csv(by_time.iloc[:3000], tmp_path / "replica.csv")  # the first hours again, from a second scraper
    run = dict(chunk_rows=777, block_size=1 << 14, threads=threads, **POLICY)
    result = gpucost.allocate_stream(fleet.costs, tmp_path / "sorted.csv", fleet.inventory, fleet.workloads, **run)
    assert seen == {"ordered": [True], "reads": 1}  # in time order throughout: read once, no record kept
    assert_frames_close(result, expected)
    assert result.attrs["diagnostics"] == expected.attrs["diagnostics"]

    paths = [tmp_path / "sorted.csv", tmp_path / "replica.csv"]
    both = pd.concat([by_time, by_time.iloc[:3000]], ignore_index=True)
    whole = gpucost.allocate(fleet.costs, both, fleet.inventory, fleet.workloads, **POLICY)
    assert gpucost.chunks.csv_goes_back_in_time([str(p) for p in paths], run["block_size"])
    for sampled in (True, False):  # the replica found by the sampled lines, or (say they missed it) on trial
        if not sampled:
            monkeypatch.setattr(gpucost.stream, "csv_goes_back_in_time", lambda paths, block_size: False)
        seen.update(ordered=[], reads=0)
        result = gpucost.allocate_stream(fleet.costs, paths, fleet.inventory, fleet.workloads, **run)
        # Not tried, read once; or tried, and sorted.csv read again once the replica went back.
        assert seen == ({"ordered": [False], "reads": 1} if sampled else {"ordered": [True, False], "reads": 2})
        assert_frames_close(result, whole)
        assert_frames_close(result, expected)  # the copies dropped
        assert result.attrs["diagnostics"] == whole.attrs["diagnostics"]
        assert result.attrs["diagnostics"]["samples_duplicate"] == 3000

    seen.update(ordered=[], reads=0)  # a frame in memory: sliced again
    result = gpucost.allocate_stream(fleet.costs, both.iloc[::-1], fleet.inventory, fleet.workloads, **run)
    assert seen == {"ordered": [True, False], "reads": 2}
    assert_frames_close(result, whole)


def test_lines_sampled_from_csv_files_show_them_going_back(fleet, tmp_path):
    """A line every `step` bytes, compared across blocks: a file in time order
    is not shown going back (so it is tried), one sorted but for a late hour
    at its end is, and so is a file after one with later instants. Lines
    within a block may come in any order (a chunk's own order is free)."""
    by_time = fleet.usage.sort_values("timestamp", kind="stable").reset_index(drop=True)
    hours = by_time["timestamp"].dt.floor("h")
    write_csv(by_time, tmp_path / "sorted.csv")
    late = pd.concat([by_time[hours != hours.min()], by_time[hours == hours.min()]])
    write_csv(late, tmp_path / "late.csv")
    within = by_time.iloc[np.concatenate([np.arange(i, min(i + 50, len(by_time)))[::-1]
                                          for i in range(0, len(by_time), 50)])]  # backwards inside 50-row runs
    write_csv(within, tmp_path / "within.csv")
    block = 50 * 100  # bytes: a line is about 100, so a block holds about a run
    goes_back = gpucost.chunks.csv_goes_back_in_time
    assert not goes_back([str(tmp_path / "sorted.csv")], block, step=512)
    assert goes_back([str(tmp_path / "late.csv")], block, step=512)
    assert goes_back([str(tmp_path / "sorted.csv")] * 2, block, step=512)
    assert not goes_back([str(tmp_path / "within.csv")], 1 << 20, step=512)  # one block: its order is free
    split_files(fleet, tmp_path)  # a compressed file proves nothing
    assert not goes_back([str(tmp_path / "usage-0.csv.gz"), str(tmp_path / "usage-1.csv")], block)


def test_usage_read_once_or_told_is_not_tried(fleet, expected, tmp_path, monkeypatch):
    """A generator (or a reader, a relation) cannot be read again, and
    ordered_chunks=False asks for no trial: no promise, read once. True is
    a promise: a chunk going back is an error, naming its line."""
    seen = record_trials(monkeypatch)
    backwards = fleet.usage.sort_values("timestamp", ascending=False, kind="stable").reset_index(drop=True)
    chunks = (backwards.iloc[i:i + 5000] for i in range(0, len(backwards), 5000))
    result = gpucost.allocate_stream(fleet.costs, chunks, fleet.inventory, fleet.workloads, **POLICY)
    assert seen == {"ordered": [False], "reads": 1}
    assert_frames_close(result, expected)
    seen.update(ordered=[], reads=0)
    write_csv(backwards, tmp_path / "backwards.csv")
    result = gpucost.allocate_stream(fleet.costs, tmp_path / "backwards.csv", fleet.inventory, fleet.workloads,
                                     chunk_rows=777, block_size=1 << 14, ordered_chunks=False, **POLICY)
    assert seen == {"ordered": [False], "reads": 1}
    assert_frames_close(result, expected)
    with pytest.raises(gpucost.InvalidInputError, match=rf"^{tmp_path / 'backwards.csv'}: line \d+, column "
                                                         r"'timestamp': .* is before"):
        gpucost.allocate_stream(fleet.costs, tmp_path / "backwards.csv", fleet.inventory, fleet.workloads,
                                block_size=1 << 14, ordered_chunks=True, **POLICY)
    assert not gpucost.stream.can_read_again(iter([backwards]))
    os.mkfifo(tmp_path / "pipe.csv")
    assert not gpucost.stream.can_read_again(tmp_path / "pipe.csv")  # read once, like stdin
    opened: list = []  # nor opened to be read in blocks (with no writer, opening it would wait for one)
    opener = threading.Thread(target=lambda: opened.append(gpucost.chunks._open_regular(str(tmp_path / "pipe.csv"))),
                              daemon=True)
    opener.start()
    opener.join(30)
    assert opened == [None]
    assert gpucost.stream.can_read_again([tmp_path / "backwards.csv"])


def test_a_bad_sample_after_the_usage_went_back_names_its_line(fleet, tmp_path, monkeypatch):
    """Read again without the promise, a bad sample further on is named by
    its file and line as it would be read once."""
    monkeypatch.setattr(gpucost.stream, "csv_goes_back_in_time", lambda paths, block_size: False)  # on trial
    seen = record_trials(monkeypatch)
    backwards = fleet.usage.sort_values("timestamp", ascending=False, kind="stable").reset_index(drop=True)
    backwards.loc[len(backwards) - 10, "util"] = 1.5
    write_csv(backwards, tmp_path / "bad.csv")
    message = rf"^{tmp_path / 'bad.csv'}: line {len(backwards) - 8}, column 'util': 1.5 is outside \[0, 1\]"
    for ordered in (None, False):
        with pytest.raises(gpucost.InvalidInputError, match=message):
            gpucost.allocate_stream(fleet.costs, tmp_path / "bad.csv", fleet.inventory, fleet.workloads,
                                    block_size=1 << 14, ordered_chunks=ordered, **POLICY)
    assert seen["ordered"] == [True, False, False]  # tried and read again; then not tried


def test_usage_that_changed_between_reads_is_an_error(fleet):
    """Read again, the chunks before the one that went back must be what they
    were: a source that changed meanwhile is refused, never half counted."""
    hours = hours_in_order(fleet.usage)

    def add(allocator, chunk, rows_before):
        allocator.add(chunk)

    def make(ordered):
        return lambda: gpucost.Allocator(fleet.costs, fleet.inventory, fleet.workloads, ordered_chunks=ordered,
                                         **POLICY)

    with pytest.raises(gpucost.InvalidInputError, match=r"^usage: changed while it was read \(rows 0 onwards were"):
        gpucost.stream.add_chunks(make(True)(), [hours[1], hours[0]], add, read_again=lambda: [hours[2]],
                                  unordered=make(False))
    fed = gpucost.stream.add_chunks(make(True)(), [hours[1], hours[0]], add, read_again=lambda: [hours[1]],
                                    unordered=make(False))
    assert not fed.went_back_in_time()


def test_truncated_csv(fleet, tmp_path):
    path = tmp_path / "usage.csv"
    write_csv(fleet.usage.iloc[:2000], path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 37])  # cut in the middle of the last line
    out = tmp_path / "result.csv"
    with pytest.raises(gpucost.InvalidInputError, match=rf"^{path}: line 2001: expected 7 fields, found 5$"):
        gpucost.allocate_stream(fleet.costs, path, fleet.inventory, output=out)
    assert not out.exists()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_file_cut_short_while_it_is_read_is_an_error(fleet, tmp_path, threads):
    # Log rotation by truncation (copytruncate) while gpucost reads: an error
    # naming the file, where a mapped file would have ended the process (SIGBUS).
    path = tmp_path / "usage.csv"
    write_csv(fleet.usage, path)
    size = path.stat().st_size
    chunks = gpucost.chunks.iter_chunks(str(path), block_size=1 << 14, threads=threads)
    next(chunks)
    os.truncate(path, size // 2)
    with pytest.raises(gpucost.InvalidInputError,
                       match=rf"^{path}: the file was cut short while it was read: {size} bytes when opened, "
                             rf"{size // 2} now$"):
        for _ in chunks:
            pass


def test_truncated_gzip(fleet, tmp_path):
    path = tmp_path / "usage.csv.gz"
    write_csv(fleet.usage.iloc[:20000], path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(gpucost.InvalidInputError, match=rf"^{path}: .*damaged or incomplete"):
        gpucost.allocate_stream(fleet.costs, path, fleet.inventory)


def test_gzip_with_a_bad_crc(fleet, tmp_path):
    path = tmp_path / "usage.csv.gz"
    write_csv(fleet.usage.iloc[:2000], path)
    data = bytearray(path.read_bytes())
    data[-8] ^= 0xFF  # the CRC-32 of the trailer
    path.write_bytes(bytes(data))
    out = tmp_path / "result.parquet"
    with pytest.raises(gpucost.InvalidInputError, match=rf"^{path}: .*damaged or incomplete"):
        gpucost.allocate_stream(fleet.costs, path, fleet.inventory, output=out)
    assert not out.exists()


def test_missing_files(fleet, tmp_path):
    with pytest.raises(gpucost.InvalidInputError, match="no file matches"):
        gpucost.allocate_stream(fleet.costs, str(tmp_path / "nothing-*.csv"), fleet.inventory)
    with pytest.raises(gpucost.InvalidInputError, match="no such file"):
        gpucost.allocate_stream(fleet.costs, tmp_path / "absent.csv", fleet.inventory)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_disk_full_on_output(fleet):
    with pytest.raises(gpucost.Error, match=r"^/dev/full: cannot write the result: No space left on device"):
        gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, output="/dev/full")


def test_failed_write_keeps_the_old_file_and_leaves_no_partial(fleet, tmp_path, monkeypatch):
    out = tmp_path / "result.csv"
    out.write_text("previous complete result\n")

    def full_disk(frame, stream, parquet):
        stream.write(b"cost,consumer\n1.0,")  # half a result, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(gpucost.chunks, "_write", full_disk)
    with pytest.raises(gpucost.Error, match="No space left on device; no result was written"):
        gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, output=out)
    assert out.read_text() == "previous complete result\n"
    assert os.listdir(tmp_path) == ["result.csv"]


def test_output_is_written_whole(fleet, expected, tmp_path):
    out = tmp_path / "result.parquet"
    result = gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, fleet.workloads, output=out,
                                     **POLICY)
    assert_frames_close(pq.read_table(out).to_pandas(), result)
    with pytest.raises(gpucost.Error, match="cannot write the result"):
        gpucost.allocate_stream(fleet.costs, fleet.usage, fleet.inventory, output=tmp_path / "no" / "dir.csv")


def test_read_ahead_keeps_order_errors_and_closes_the_source():
    """Chunks read one ahead on a thread come in order; a failure reading an
    item is raised when that item is reached, after the ones before it; a
    caller that stops early closes the source."""
    from gpucost.chunks import read_ahead
    read = []

    def source(fail_at=None):
        try:
            for k in range(5):
                if k == fail_at:
                    raise gpucost.InvalidInputError(f"chunk {k} is damaged")
                read.append(k)
                yield k
        finally:
            read.append("closed")

    assert list(read_ahead(source())) == [0, 1, 2, 3, 4]
    got = []
    with pytest.raises(gpucost.InvalidInputError, match="chunk 3 is damaged"):
        for item in read_ahead(source(fail_at=3)):
            got.append(item)
    assert got == [0, 1, 2]
    read.clear()
    for item in read_ahead(source()):
        if item == 1:
            break
    assert read[-1] == "closed" and 3 not in read  # at most one item read past the last one used


def test_parquet_strings_as_dictionaries_equal_plain_strings(fleet, expected, tmp_path):
    """Usage Parquet files are read with their string columns as dictionaries
    (row group by row group), which must give the one-shot result."""
    path = tmp_path / "usage.parquet"
    table = pa.Table.from_pandas(fleet.usage, preserve_index=False)
    table = table.set_column(table.schema.get_field_index("consumer"), "consumer",
                             table["consumer"].cast(pa.large_string()))
    pq.write_table(table, path, row_group_size=len(fleet.usage) // 5 + 1)
    batches = list(gpucost.chunks.iter_chunks(str(path), chunk_rows=len(fleet.usage) // 3))
    assert all(pa.types.is_dictionary(b.rows.schema.field("consumer").type) for b in batches)
    result = gpucost.allocate_stream(fleet.costs, str(path), fleet.inventory, fleet.workloads,
                                     chunk_rows=len(fleet.usage) // 3, threads=2, **POLICY)
    assert_frames_close(result, expected)


def test_csv_blocks_parsed_side_by_side_equal_arrows_reader(fleet, tmp_path):
    """An uncompressed CSV cut at line ends into blocks parsed on threads
    (slices of the mapped file, by gpucost's usage parser): the same rows,
    in file order, as Arrow's reader, on one thread or three, with or without
    a last newline, with Windows line ends or a byte-order mark; a header
    alone gives no rows; a bad value in a late block is named by its line."""
    from gpucost.chunks import USAGE_CSV_TYPES, _csv_convert_options, iter_chunks
    path = tmp_path / "usage.csv"
    write_csv(fleet.usage.iloc[:5000], path)
    text = path.read_bytes()
    for data in (text, text.rstrip(b"\n"), text.replace(b"\n", b"\r\n"), b"\xef\xbb\xbf" + text):
        path.write_bytes(data)
        arrow = pacsv.read_csv(path, convert_options=_csv_convert_options(USAGE_CSV_TYPES))
        for threads in (1, 3):
            side = [c for c in iter_chunks(str(path), block_size=1 << 14, threads=threads)]
            assert len(side) > 3 and [c.first_row for c in side] == list(np.cumsum([0] + [len(c) for c in side[:-1]]))
            assert pa.types.is_dictionary(side[0].rows.schema.field("consumer").type)  # gpucost's parser read it
            both = pa.concat_tables(pa.Table.from_batches([c.rows]) for c in side).combine_chunks()
            assert both.num_rows == 5000 and both.cast(arrow.schema).equals(arrow)
    lines = text.split(b"\n")
    fields = lines[4001].split(b",")  # file line 4002
    fields[2] = b"zero"  # its device
    lines[4001] = b",".join(fields)
    path.write_bytes(b"\n".join(lines))
    for threads in (1, 3):
        with pytest.raises(gpucost.InvalidInputError, match=r"usage.csv: line 4002, column 'device': 'zero'"):
            list(iter_chunks(str(path), block_size=1 << 14, threads=threads))
    path.write_bytes(text.split(b"\n", 1)[0] + b"\n")
    assert list(iter_chunks(str(path), threads=3)) == []
    path.write_bytes(b"")  # an empty file is an error on every path, never a table of no rows
    for threads in (1, 3):
        with pytest.raises(gpucost.InvalidInputError, match="Empty CSV file"):
            list(iter_chunks(str(path), threads=threads))


def test_parquet_row_groups_in_time_order_stream_as_ordered_chunks(fleet, expected, tmp_path, monkeypatch):
    """A table sorted by time in row groups (a lake's): its statistics say no
    row group goes back in time, so it is read a row group at a time as
    ordered chunks, untold; shuffled inside each group it still is, and a
    file whose groups go back in time is read as before. Same numbers each time."""
    seen = []
    init = gpucost.Allocator.__init__
    monkeypatch.setattr(gpucost.Allocator, "__init__",
                        lambda self, *a, **kw: seen.append(kw.get("ordered_chunks")) or init(self, *a, **kw))
    by_time = fleet.usage.sort_values("timestamp", kind="stable").reset_index(drop=True)
    rng = np.random.default_rng(3)
    inside = np.concatenate([i + rng.permutation(min(1_000, len(by_time) - i))
                             for i in range(0, len(by_time), 1_000)])  # shuffled within each group of 1,000
    groups = [np.arange(i, min(i + 1_000, len(by_time))) for i in range(0, len(by_time), 1_000)]
    backwards = np.concatenate(groups[::-1])
    for name, frame, ordered in [("sorted", by_time, True), ("inside", by_time.iloc[inside], True),
                                 ("groups backwards", by_time.iloc[backwards], False)]:
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=1_000)
        assert gpucost.chunks.parquet_in_time_order(path, 4_000) is ordered, name
        seen.clear()
        result = gpucost.allocate_stream(fleet.costs, path, fleet.inventory, fleet.workloads, chunk_rows=1_000,
                                         **POLICY)
        assert seen == [ordered], name
        assert_frames_close(result, expected)
    assert len(by_time) > 5_000  # several groups
    # Groups bigger than 4 chunks are read in chunks, as before.
    assert not gpucost.chunks.parquet_in_time_order(tmp_path / "sorted.parquet", 999)


def _open_fds(path) -> int:
    """How many of this process' file descriptors are open on ``path``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == str(path)
        except OSError:  # the listing's own
            pass
    return count


def _wait_closed(path, seconds: float = 60) -> bool:
    """Whether ``path`` is closed within ``seconds`` (a parse in flight ends first)."""
    deadline = time.monotonic() + seconds
    while _open_fds(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not _open_fds(path)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="/proc/self/fd is Linux's")
def test_an_error_closes_the_file_being_read(fleet, tmp_path):
    """allocate_stream lets its file go when a chunk fails, not when the
    garbage collector finds the reader: the error's traceback still holds
    the frames that held it."""
    path = tmp_path / "usage.csv"
    usage = fleet.usage.iloc[:5000].copy()
    usage.loc[usage.index[3500], "util"] = 2.5
    write_csv(usage, path)
    for threads in (1, 2):
        with pytest.raises(gpucost.InvalidInputError, match=rf"^{path}: line 3502, column 'util'") as caught:
            gpucost.allocate_stream(fleet.costs, path, fleet.inventory, threads=threads, chunk_rows=1000,
                                    block_size=1 << 14)
        assert _wait_closed(path), f"threads={threads}: the file was left open"
        del caught


# Run in a child process: before the fix it hung for good, holding a lock every thread start needs.
_CLOSED_INSIDE_THREAD_START = r"""
import os, sys, threading, time
sys.path.insert(0, sys.argv[2])
from gpucost.chunks import iter_chunks, read_ahead
from test_stream import _wait_closed
path = sys.argv[1]
for ahead in (False, True):
    chunks = iter_chunks(path, chunk_rows=500, block_size=1 << 12, threads=2)
    chunks = read_ahead(chunks) if ahead else chunks
    next(chunks)
    # The garbage collector closes an unfinished generator on whichever thread triggered a collection, and
    # that can be a thread starting, inside threading's bookkeeping with this lock held.
    with threading._shutdown_locks_lock:
        chunks.close()
    del chunks
    assert _wait_closed(path), f"read ahead {ahead}: the file was left open"
print("closed")
"""


@pytest.mark.skipif(not hasattr(threading, "_shutdown_locks_lock") or not os.path.isdir("/proc/self/fd"),
                    reason="Python 3.13 starts threads without this lock; /proc/self/fd is Linux's")
def test_an_unfinished_read_closes_without_waiting_for_a_thread(fleet, tmp_path):
    path = tmp_path / "usage.csv"
    write_csv(fleet.usage.iloc[:5000], path)
    done = subprocess.run([sys.executable, "-c", _CLOSED_INSIDE_THREAD_START, str(path), os.path.dirname(__file__)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "closed", done.stderr
